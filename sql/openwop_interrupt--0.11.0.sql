/*
 * openwop_interrupt 0.11.0 — install script (0.1.0 updates with
 * openwop_interrupt--0.1.0--0.2.0.sql, openwop_interrupt--0.2.0--0.3.0.sql,
 * openwop_interrupt--0.3.0--0.4.0.sql, openwop_interrupt--0.4.0--0.5.0.sql,
 * openwop_interrupt--0.5.0--0.6.0.sql, openwop_interrupt--0.6.0--0.7.0.sql,
 * openwop_interrupt--0.7.0--0.8.0.sql, openwop_interrupt--0.8.0--0.9.0.sql,
 * openwop_interrupt--0.9.0--0.10.0.sql and openwop_interrupt--0.10.0--0.11.0.sql
 * to the same catalog).
 *
 * Declarative parts only: tables, constraints, the append-only trigger binding,
 * function bindings, grants and comments.  Everything that decides anything
 * (locking, sequencing, validation, tenancy) is C in src/.
 */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION openwop_interrupt" to load this file. \quit

COMMENT ON SCHEMA openwop IS
  'OpenWOP interrupt subsystem: runs, node executions, the append-only event log and the functions that drive them';

/* ------------------------------------------------------------------------
 * Tables.  Application roles get nothing on them: all access goes through
 * the functions below, which run their statements as the extension owner.
 * Every per-tenant table carries the tenant and every key includes it.
 *
 * The hot tables (runs, node_executions, events, interrupts, votes) carry
 * keys, unique and partial unique indexes, but no CHECK constraints: their
 * only writer is the C code, which validates every value first, and
 * PostgreSQL re-plans each CHECK expression on every INSERT and UPDATE
 * statement — measured at 36% of a resolve (bench/, docs/benchmarks.md).
 * The invariants that concurrency could break are unique indexes.
 *
 * Text columns hold identifiers and vocabulary: COLLATE "C" compares them
 * bytewise, so keys sort the same under every database locale and index
 * lookups skip the locale library.
 * ------------------------------------------------------------------------ */

CREATE TABLE openwop.runs (
    tenant          text COLLATE "C" NOT NULL,
    run_id          text COLLATE "C" NOT NULL,
    workflow_id     text COLLATE "C" NOT NULL,
    status          text COLLATE "C" NOT NULL,
    current_node_id text COLLATE "C",
    owner           jsonb       NOT NULL,
    configurable    jsonb       NOT NULL DEFAULT '{}',
    definition      jsonb,
    inputs          jsonb,
    metadata        jsonb,
    outputs         jsonb,
    error           jsonb,
    next_sequence   bigint      NOT NULL DEFAULT 0,
    event_prefix    text COLLATE "C" NOT NULL,
    fork_of         text COLLATE "C",
    created_at      timestamptz NOT NULL DEFAULT pg_catalog.now(),
    updated_at      timestamptz NOT NULL DEFAULT pg_catalog.now(),
    ended_at        timestamptz,
    PRIMARY KEY (tenant, run_id)
) WITH (fillfactor = 80);

COMMENT ON TABLE openwop.runs IS
  'One row per run. The row is the lock that serialises every change to the run and holds the next event sequence.';
COMMENT ON COLUMN openwop.runs.tenant IS 'Tenant that owns the run; the first segment of run_id.';
COMMENT ON COLUMN openwop.runs.run_id IS 'Tenant-bound run id, "<tenant>/<opaque>".';
COMMENT ON COLUMN openwop.runs.workflow_id IS 'Workflow the run executes (author grammar).';
COMMENT ON COLUMN openwop.runs.status IS 'RunSnapshot.status vocabulary of OpenWOP v2.';
COMMENT ON COLUMN openwop.runs.current_node_id IS 'Node the run is executing or suspended on (RunSnapshot.currentNodeId).';
COMMENT ON COLUMN openwop.runs.owner IS 'Subject that created the run {issuer, subjectId, tenant, lane, kind}: RunSnapshot.owner.subject.';
COMMENT ON COLUMN openwop.runs.configurable IS 'Run options (configurable), e.g. {"run": {"escalationThreshold": 0.7}}.';
COMMENT ON COLUMN openwop.runs.definition IS 'Optional workflow definition {nodes, edges} registered at create_run.';
COMMENT ON COLUMN openwop.runs.inputs IS 'Caller-supplied workflow inputs, carried on run.started.';
COMMENT ON COLUMN openwop.runs.metadata IS 'Caller metadata, returned on the snapshot.';
COMMENT ON COLUMN openwop.runs.outputs IS 'Outputs recorded by complete_run.';
COMMENT ON COLUMN openwop.runs.error IS 'Error recorded by a failed run (code, message, details).';
COMMENT ON COLUMN openwop.runs.next_sequence IS 'Sequence the next event of this run receives; events are gapless from 0.';
COMMENT ON COLUMN openwop.runs.event_prefix IS 'Random per-run prefix of event ids: eventId = event_prefix || ''.'' || sequence.';
COMMENT ON COLUMN openwop.runs.fork_of IS 'Source run of a replay fork (root of the re-entry key chain); NULL for an original run.';
COMMENT ON COLUMN openwop.runs.created_at IS 'When the run was created.';
COMMENT ON COLUMN openwop.runs.updated_at IS 'When the run last changed.';
COMMENT ON COLUMN openwop.runs.ended_at IS 'When the run reached its terminal status; NULL while it is live.';

CREATE TABLE openwop.node_executions (
    tenant      text COLLATE "C" NOT NULL,
    run_id      text COLLATE "C" NOT NULL,
    node_id     text COLLATE "C" NOT NULL,
    visit       integer     NOT NULL,
    type_id     text COLLATE "C" NOT NULL,
    status      text COLLATE "C" NOT NULL,
    attempt     integer     NOT NULL DEFAULT 0,
    outputs     jsonb,
    error       jsonb,
    interrupt_id text COLLATE "C",
    ended_sequence bigint,
    started_at  timestamptz NOT NULL DEFAULT pg_catalog.now(),
    ended_at    timestamptz,
    PRIMARY KEY (tenant, run_id, node_id, visit)
) WITH (fillfactor = 80);

COMMENT ON TABLE openwop.node_executions IS
  'One row per execution of a node in a run (a FlowDrop job). A new execution of the same node gets the next visit index.';
COMMENT ON COLUMN openwop.node_executions.tenant IS 'Tenant of the run.';
COMMENT ON COLUMN openwop.node_executions.run_id IS 'Run the execution belongs to.';
COMMENT ON COLUMN openwop.node_executions.node_id IS 'Node executed.';
COMMENT ON COLUMN openwop.node_executions.visit IS 'Visit index: how many executions of this node in this run ended before this one began.';
COMMENT ON COLUMN openwop.node_executions.type_id IS 'Node type id carried on node.started.';
COMMENT ON COLUMN openwop.node_executions.status IS 'Job status: running, interrupted, pending, completed, failed, skipped or cancelled.';
COMMENT ON COLUMN openwop.node_executions.attempt IS 'Zero-based attempt counter carried on node.started.';
COMMENT ON COLUMN openwop.node_executions.outputs IS 'Outputs of a completed execution.';
COMMENT ON COLUMN openwop.node_executions.error IS 'Error of a failed execution.';
COMMENT ON COLUMN openwop.node_executions.interrupt_id IS 'Interrupt the execution last raised (FlowDrop: the job carries the interrupt id).';
COMMENT ON COLUMN openwop.node_executions.ended_sequence IS 'Sequence of the node.completed or node.failed event that ended it.';
COMMENT ON COLUMN openwop.node_executions.started_at IS 'When the execution began.';
COMMENT ON COLUMN openwop.node_executions.ended_at IS 'When the execution ended; NULL while it is open.';

CREATE TABLE openwop.events (
    tenant         text COLLATE "C" NOT NULL,
    run_id         text COLLATE "C" NOT NULL,
    sequence       bigint      NOT NULL,
    type           text COLLATE "C" NOT NULL,
    node_id        text COLLATE "C",
    payload        jsonb       NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    schema_version integer     NOT NULL DEFAULT 1,
    causation_id   text COLLATE "C",
    PRIMARY KEY (tenant, run_id, sequence)
);

-- exactly one terminal event per run: a constraint, not only code
CREATE UNIQUE INDEX events_one_terminal_per_run ON openwop.events (tenant, run_id)
    WHERE type = ANY ('{run.completed,run.failed,run.cancelled}'::text[]);
COMMENT ON INDEX openwop.events_one_terminal_per_run IS
  'At most one run.completed, run.failed or run.cancelled per run.';

COMMENT ON TABLE openwop.events IS
  'The run event log: append-only (a trigger refuses UPDATE, DELETE and TRUNCATE), gapless per-run sequence from 0.';
COMMENT ON COLUMN openwop.events.tenant IS 'Tenant of the run.';
COMMENT ON COLUMN openwop.events.run_id IS 'Run the event belongs to.';
COMMENT ON COLUMN openwop.events.sequence IS 'Per-run ordering field: 0 for the first event, then +1 with no gap.';
COMMENT ON COLUMN openwop.events.type IS 'Registered OpenWOP v2 event type, e.g. node.started.';
COMMENT ON COLUMN openwop.events.node_id IS 'Node the event concerns (envelope nodeId), if any.';
COMMENT ON COLUMN openwop.events.payload IS 'Event payload (closed per-type schema of run-event-payloads).';
COMMENT ON COLUMN openwop.events.created_at IS 'Envelope timestamp: when the event was appended (the clock, not the transaction''s start, so a decision taken after a wait for the run lock is dated after that wait).';
COMMENT ON COLUMN openwop.events.schema_version IS 'Envelope schemaVersion.';
COMMENT ON COLUMN openwop.events.causation_id IS 'Envelope causationId: the eventId that caused this event, if any.';

CREATE TABLE openwop.interrupts (
    tenant            text COLLATE "C" NOT NULL,
    interrupt_id      text COLLATE "C" NOT NULL,
    run_id            text COLLATE "C" NOT NULL,
    root_run_id       text COLLATE "C" NOT NULL,
    node_id           text COLLATE "C" NOT NULL,
    visit             integer     NOT NULL,
    ordinal           integer     NOT NULL,
    key               text COLLATE "C" NOT NULL,
    kind              text COLLATE "C" NOT NULL,
    payload           jsonb       NOT NULL,
    status            text COLLATE "C" NOT NULL DEFAULT 'pending',
    expires_at        timestamptz,
    requested_sequence bigint     NOT NULL,
    resolved_sequence bigint,
    resume_value      jsonb,
    decision          text COLLATE "C",
    action            text COLLATE "C",
    reason            text COLLATE "C",
    resolved_by       jsonb,
    created_at        timestamptz NOT NULL DEFAULT pg_catalog.now(),
    resolved_at       timestamptz,
    PRIMARY KEY (tenant, interrupt_id),
    -- a re-entry key is requested at most once for the lifetime of a run (and its replay chain)
    CONSTRAINT interrupts_key_once_per_run UNIQUE (tenant, root_run_id, key)
) WITH (fillfactor = 60);  -- room on the page for the resolved version: the claim is a HOT update

COMMENT ON TABLE openwop.interrupts IS
  'Suspension records: one row per interrupt raised, keyed by its tenant-bound id, with the deterministic re-entry key unique per run.';
COMMENT ON COLUMN openwop.interrupts.tenant IS 'Tenant of the run.';
COMMENT ON COLUMN openwop.interrupts.interrupt_id IS 'Tenant-bound interrupt id, "<tenant>/<opaque>".';
COMMENT ON COLUMN openwop.interrupts.run_id IS 'Run that raised the interrupt.';
COMMENT ON COLUMN openwop.interrupts.root_run_id IS 'Root of the run''s replay chain; keys are unique under it.';
COMMENT ON COLUMN openwop.interrupts.node_id IS 'Node that raised the interrupt.';
COMMENT ON COLUMN openwop.interrupts.visit IS 'Visit index of the node execution that raised it.';
COMMENT ON COLUMN openwop.interrupts.ordinal IS 'Which interrupt call within that execution (0 for the first).';
COMMENT ON COLUMN openwop.interrupts.key IS 'Deterministic re-entry key derived from root run, node, visit and ordinal.';
COMMENT ON COLUMN openwop.interrupts.kind IS 'InterruptPayload kind.';
COMMENT ON COLUMN openwop.interrupts.payload IS 'The InterruptPayload exactly as carried on interrupt.requested.';
COMMENT ON COLUMN openwop.interrupts.status IS 'pending, resolved, cancelled (run ended) or expired.';
COMMENT ON COLUMN openwop.interrupts.expires_at IS 'Deadline from timeoutMs; NULL when absent or 0 (never expires).';
COMMENT ON COLUMN openwop.interrupts.requested_sequence IS 'Sequence of its interrupt.requested event.';
COMMENT ON COLUMN openwop.interrupts.resolved_sequence IS 'Sequence of its interrupt.resolved event; for an expired interrupt, of the run''s terminal event that announced the expiry (NULL while that is due: a late answer expired it, FlowDrop INT-23).';
COMMENT ON COLUMN openwop.interrupts.resume_value IS 'The resume value it was resolved with.';
COMMENT ON COLUMN openwop.interrupts.decision IS 'Approval decision: granted, rejected or overridden.';
COMMENT ON COLUMN openwop.interrupts.action IS 'Approval action applied.';
COMMENT ON COLUMN openwop.interrupts.reason IS 'Why it was resolved without a human (e.g. timeout), if so.';
COMMENT ON COLUMN openwop.interrupts.resolved_by IS 'Subject that resolved it {issuer, subjectId, tenant, lane, kind}; the host''s subject for a timeout.';
COMMENT ON COLUMN openwop.interrupts.created_at IS 'When it was raised.';
COMMENT ON COLUMN openwop.interrupts.resolved_at IS 'When it stopped being pending.';

CREATE TABLE openwop.idempotency_keys (
    tenant         text COLLATE "C" NOT NULL,
    endpoint       text COLLATE "C" NOT NULL,
    key            text COLLATE "C" NOT NULL,
    request_digest text COLLATE "C" NOT NULL,
    response       jsonb,
    created_at     timestamptz NOT NULL DEFAULT pg_catalog.now(),
    expires_at     timestamptz NOT NULL,
    principal      jsonb,
    PRIMARY KEY (tenant, endpoint, key)
);
COMMENT ON TABLE openwop.idempotency_keys IS
  'Idempotency-Key records of resolve requests: the first request''s digest and final response, kept at least 24 hours.';
COMMENT ON COLUMN openwop.idempotency_keys.tenant IS 'Authenticated tenant of the request.';
COMMENT ON COLUMN openwop.idempotency_keys.endpoint IS 'Canonical operation, e.g. resolveInterruptByRun.';
COMMENT ON COLUMN openwop.idempotency_keys.key IS 'The caller''s Idempotency-Key.';
COMMENT ON COLUMN openwop.idempotency_keys.request_digest IS 'SHA-256 of the canonical request; another body under the same key is idempotency_key_mismatch.';
COMMENT ON COLUMN openwop.idempotency_keys.response IS 'Final response returned to a same-key replay.';
COMMENT ON COLUMN openwop.idempotency_keys.created_at IS 'When the key was first used.';
COMMENT ON COLUMN openwop.idempotency_keys.expires_at IS 'When the record may be removed (openwop.idempotency_retention after creation).';
COMMENT ON COLUMN openwop.idempotency_keys.principal IS 'Subject that made the request; the key replays only for it (another subject gets idempotency_key_mismatch). NULL for records made before 0.2.0, which replay for nobody.';

-- == open interrupts: openwop.open_interrupts (begin) ==
/*
 * The interrupts still open: pending ones, and ones a late answer expired
 * whose run is still to be ended (FlowDrop INT-18).  The lookups that ask
 * "which interrupts are pending" (a run's, a node's, a tenant's by deadline
 * or in inbox order) read this table, not openwop.interrupts, so no index
 * of openwop.interrupts names a column a resolve changes: the claim is a
 * HOT update of the interrupt row and the delete of its row here.  It
 * carries the request too, so the inbox and the resolve read one row.  The
 * C code writes both tables in the same transaction, under the run lock.
 */
CREATE TABLE openwop.open_interrupts (
    tenant             text COLLATE "C" NOT NULL,
    interrupt_id       text COLLATE "C" NOT NULL,
    run_id             text COLLATE "C" NOT NULL,
    node_id            text COLLATE "C" NOT NULL,
    visit              integer     NOT NULL,
    kind               text COLLATE "C" NOT NULL,
    payload            jsonb       NOT NULL,
    status             text COLLATE "C" NOT NULL,
    requested_sequence bigint      NOT NULL,
    created_at         timestamptz NOT NULL,
    expires_at         timestamptz,
    PRIMARY KEY (tenant, interrupt_id)
);
COMMENT ON TABLE openwop.open_interrupts IS
  'The interrupts still open: one row per pending interrupt, and per interrupt a late answer expired whose run is still to be ended; the row goes when the interrupt is resolved, cancelled or its expiry announced. A copy of the open interrupts'' keys, so that no index of openwop.interrupts stops the resolve''s update from being HOT.';
COMMENT ON COLUMN openwop.open_interrupts.tenant IS 'Tenant of the run.';
COMMENT ON COLUMN openwop.open_interrupts.interrupt_id IS 'The interrupt (openwop.interrupts).';
COMMENT ON COLUMN openwop.open_interrupts.run_id IS 'Run that raised it.';
COMMENT ON COLUMN openwop.open_interrupts.node_id IS 'Node that raised it.';
COMMENT ON COLUMN openwop.open_interrupts.visit IS 'Visit index of the node execution that raised it.';
COMMENT ON COLUMN openwop.open_interrupts.kind IS 'InterruptPayload kind.';
COMMENT ON COLUMN openwop.open_interrupts.payload IS 'The InterruptPayload as requested (what the inbox shows and eligibility reads).';
COMMENT ON COLUMN openwop.open_interrupts.status IS 'pending, or expired (a late answer expired it; its run is still to be ended).';
COMMENT ON COLUMN openwop.open_interrupts.requested_sequence IS 'Sequence of its interrupt.requested event: the latest raised holds the run.';
COMMENT ON COLUMN openwop.open_interrupts.created_at IS 'When it was raised; the inbox order.';
COMMENT ON COLUMN openwop.open_interrupts.expires_at IS 'Its deadline; NULL when it never expires.';

-- at most one pending interrupt per (run, node); also the resolve path's lookup
CREATE UNIQUE INDEX interrupts_one_pending_per_node ON openwop.open_interrupts (tenant, run_id, node_id)
    WHERE status = 'pending';
COMMENT ON INDEX openwop.interrupts_one_pending_per_node IS
  'At most one pending interrupt per run and node; serves the run-scoped resolve lookup.';

-- the deadline sweep's work list: open interrupts with a deadline (absent or
-- 0: never, INT-23): pending ones, and expired ones whose run is still to be ended (INT-18)
CREATE INDEX interrupts_due ON openwop.open_interrupts (tenant, expires_at, interrupt_id)
    WHERE expires_at IS NOT NULL;
COMMENT ON INDEX openwop.interrupts_due IS
  'Deadline work per tenant, oldest first, for openwop.sweep() and the timeout worker (which share it out between tenants): pending interrupts with a deadline, and interrupts a late answer expired whose run is still to be ended.';

SELECT pg_catalog.pg_extension_config_dump('openwop.open_interrupts', '');
REVOKE ALL ON openwop.open_interrupts FROM PUBLIC;

/* a DBA's own change to an interrupt row reaches its open row (src/open_interrupts.c) */
CREATE FUNCTION openwop.interrupts_keep_open() RETURNS trigger
    AS 'MODULE_PATHNAME', 'ow_interrupts_keep_open'
    LANGUAGE C;
COMMENT ON FUNCTION openwop.interrupts_keep_open() IS
  'Trigger function: carries a change made by hand to an interrupt (its tenant, id, run, node, visit, kind, request, status, sequences, request time or deadline), or its removal, over to openwop.open_interrupts: the open row follows it, or goes when the interrupt is no longer open.';
CREATE TRIGGER interrupts_keep_open
    AFTER UPDATE OF tenant, interrupt_id, run_id, node_id, visit, kind, payload, status, requested_sequence,
    resolved_sequence, created_at, expires_at OR DELETE
    ON openwop.interrupts
    FOR EACH ROW EXECUTE FUNCTION openwop.interrupts_keep_open();
COMMENT ON TRIGGER interrupts_keep_open ON openwop.interrupts IS
  'Keeps openwop.open_interrupts in step with changes made to openwop.interrupts by hand (the extension''s own statements keep both in step themselves; its direct writes name no column and never fire it).';
REVOKE ALL ON FUNCTION openwop.interrupts_keep_open() FROM PUBLIC;
-- == open interrupts (end) ==

CREATE TABLE openwop.votes (
    tenant        text COLLATE "C" NOT NULL,
    interrupt_id  text COLLATE "C" NOT NULL,
    voter         text COLLATE "C" NOT NULL,
    revision      integer     NOT NULL,
    action        text COLLATE "C" NOT NULL,
    resume_value  jsonb       NOT NULL,
    eligibility   jsonb       NOT NULL,
    cast_at       timestamptz NOT NULL DEFAULT pg_catalog.now(),
    voter_subject jsonb       NOT NULL,
    PRIMARY KEY (tenant, interrupt_id, voter, revision)
);
COMMENT ON TABLE openwop.votes IS
  'The answers an approval gate has to count or keep, one row per (voter, revision): votes toward a quorum, re-votes (the latest counts, every revision stays) and asks. The answer that decides a one-vote gate is recorded once, in its interrupt.resolved event, with the eligibility decision.';
COMMENT ON COLUMN openwop.votes.tenant IS 'Tenant of the run.';
COMMENT ON COLUMN openwop.votes.interrupt_id IS 'The approval interrupt voted on.';
COMMENT ON COLUMN openwop.votes.voter IS 'Principal that voted: the subjectId of voter_subject. One person, one vote: the latest revision per voter counts.';
COMMENT ON COLUMN openwop.votes.revision IS '1 for the voter''s first vote, +1 for each re-vote; the highest counts.';
COMMENT ON COLUMN openwop.votes.action IS 'accept, reject, refine, edit-accept or ask.';
COMMENT ON COLUMN openwop.votes.resume_value IS 'The resume value of the vote, with decidedBy and decidedAt filled by the host.';
COMMENT ON COLUMN openwop.votes.eligibility IS 'The eligibility decision made at vote time: which refs matched and the resolved memberships; never re-resolved.';
COMMENT ON COLUMN openwop.votes.cast_at IS 'When the vote was cast.';
COMMENT ON COLUMN openwop.votes.voter_subject IS 'Subject that voted {issuer, subjectId, tenant, lane, kind}.';

CREATE TABLE openwop.group_members (
    tenant     text COLLATE "C" NOT NULL,
    group_ref  text COLLATE "C" NOT NULL,
    principal  text COLLATE "C" NOT NULL,
    added_at   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    -- principal before group: a resolve reads all of a principal's groups
    PRIMARY KEY (tenant, principal, group_ref)
);
COMMENT ON TABLE openwop.group_members IS
  'DBA-managed membership of the group refs named in approverGroupRefs (and of the override group), per tenant.';
COMMENT ON COLUMN openwop.group_members.tenant IS 'Tenant the membership applies in.';
COMMENT ON COLUMN openwop.group_members.group_ref IS 'Opaque group ref, as written in approverGroupRefs.';
COMMENT ON COLUMN openwop.group_members.principal IS 'Member: a subjectId (a JWT sub, a login name, a token principal) under any trusted issuer, or "<issuer>/<subjectId>" for one issuer.';
COMMENT ON COLUMN openwop.group_members.added_at IS 'When the membership was added.';

CREATE TABLE openwop.signing_keys (
    kid          text COLLATE "C" PRIMARY KEY,
    alg          text COLLATE "C" NOT NULL DEFAULT 'hs256',
    secret       bytea       NOT NULL,
    encrypted    boolean     NOT NULL DEFAULT false,
    state        text COLLATE "C" NOT NULL DEFAULT 'active',
    created_at   timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    retired_at   timestamptz,
    verify_until timestamptz,
    longest_ttl  integer     NOT NULL DEFAULT 0,
    CONSTRAINT signing_keys_kid_grammar CHECK (kid ~ '^[A-Za-z0-9._~-]{1,128}$'),
    CONSTRAINT signing_keys_alg_known CHECK (alg = 'hs256'),
    CONSTRAINT signing_keys_state_known CHECK (state IN ('active', 'retired')),
    CONSTRAINT signing_keys_retired CHECK ((state = 'retired') = (retired_at IS NOT NULL))
);
COMMENT ON TABLE openwop.signing_keys IS
  'The keyring of interrupt tokens (host-wide). Secrets are readable by the extension owner only, and are not dumped by pg_dump: after a restore, add new keys; outstanding tokens stop verifying (401).';
COMMENT ON COLUMN openwop.signing_keys.kid IS 'Key id carried in every token it signs.';
COMMENT ON COLUMN openwop.signing_keys.alg IS 'Token algorithm: hs256.';
COMMENT ON COLUMN openwop.signing_keys.secret IS 'HMAC secret; pgcrypto-encrypted when encrypted is true.';
COMMENT ON COLUMN openwop.signing_keys.encrypted IS 'Whether secret is encrypted under openwop.key_encryption_key.';
COMMENT ON COLUMN openwop.signing_keys.state IS 'active (mints and verifies) or retired (verifies until verify_until).';
COMMENT ON COLUMN openwop.signing_keys.created_at IS 'When the key was added; the newest active key mints.';
COMMENT ON COLUMN openwop.signing_keys.retired_at IS 'When the key was retired.';
COMMENT ON COLUMN openwop.signing_keys.verify_until IS 'A retired key verifies until then: retirement + the longer of openwop.token_max_ttl and longest_ttl.';
COMMENT ON COLUMN openwop.signing_keys.longest_ttl IS 'Longest lifetime, in seconds, of a token this key signed (raised by mint only when exceeded).';

/* Dump the rows of every table that holds user data (pg_dump skips extension tables otherwise). */
SELECT pg_catalog.pg_extension_config_dump('openwop.runs', '');
SELECT pg_catalog.pg_extension_config_dump('openwop.node_executions', '');
SELECT pg_catalog.pg_extension_config_dump('openwop.events', '');
SELECT pg_catalog.pg_extension_config_dump('openwop.interrupts', '');
SELECT pg_catalog.pg_extension_config_dump('openwop.idempotency_keys', '');
SELECT pg_catalog.pg_extension_config_dump('openwop.votes', '');
SELECT pg_catalog.pg_extension_config_dump('openwop.group_members', '');

REVOKE ALL ON openwop.runs, openwop.node_executions, openwop.events,
    openwop.interrupts, openwop.idempotency_keys, openwop.votes, openwop.group_members,
    openwop.signing_keys FROM PUBLIC;

/* ------------------------------------------------------------------------
 * Append-only event log, enforced in C for every role.  ENABLE ALWAYS keeps
 * the triggers firing under session_replication_role = replica too.
 * ------------------------------------------------------------------------ */

CREATE FUNCTION openwop.events_append_only() RETURNS trigger
    AS 'MODULE_PATHNAME', 'ow_events_append_only'
    LANGUAGE C;
COMMENT ON FUNCTION openwop.events_append_only() IS
  'Trigger function: refuses UPDATE, DELETE and TRUNCATE on openwop.events.';

CREATE TRIGGER events_append_only_row
    BEFORE UPDATE OR DELETE ON openwop.events
    FOR EACH ROW EXECUTE FUNCTION openwop.events_append_only();
CREATE TRIGGER events_append_only_truncate
    BEFORE TRUNCATE ON openwop.events
    FOR EACH STATEMENT EXECUTE FUNCTION openwop.events_append_only();
ALTER TABLE openwop.events ENABLE ALWAYS TRIGGER events_append_only_row;
ALTER TABLE openwop.events ENABLE ALWAYS TRIGGER events_append_only_truncate;

COMMENT ON TRIGGER events_append_only_row ON openwop.events IS
  'Refuses UPDATE and DELETE of an event.';
COMMENT ON TRIGGER events_append_only_truncate ON openwop.events IS
  'Refuses TRUNCATE of the event log.';

/* ------------------------------------------------------------------------
 * Engine-side API: the run lifecycle.  These are SECURITY INVOKER C
 * functions: the caller's role is the principal, and the functions switch
 * to the extension owner only around their own table access.
 * ------------------------------------------------------------------------ */

CREATE FUNCTION openwop.create_run(workflow_id text, options jsonb DEFAULT '{}')
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_create_run'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.create_run(text, jsonb) IS
  'Creates a run of workflow_id in the caller''s tenant and appends run.started. options: tenant, runId, configurable, inputs, metadata, definition {nodes, edges}; callbackUrl is refused (callback delivery is not advertised). Returns {runId, status, workflowId, sequence}.';

CREATE FUNCTION openwop.start_node(run_id text, node_id text, type_id text DEFAULT NULL)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_start_node'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.start_node(text, text, text) IS
  'Begins an execution of node_id (node.started) and returns its visit index; while the node''s latest execution is still open, returns that execution unchanged (recovery) and appends nothing.';

CREATE FUNCTION openwop.complete_node(run_id text, node_id text, outputs jsonb DEFAULT '{}')
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_complete_node'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.complete_node(text, text, jsonb) IS
  'Completes the open execution of node_id with outputs (node.completed); the next execution of the node gets the next visit index.';

CREATE FUNCTION openwop.fail_node(run_id text, node_id text, error jsonb)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_fail_node'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.fail_node(text, text, jsonb) IS
  'Fails the open execution of node_id (node.failed); error is {code, message, details?, retryable?}.';

CREATE FUNCTION openwop.complete_run(run_id text, outputs jsonb DEFAULT '{}')
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_complete_run'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.complete_run(text, jsonb) IS
  'Terminal transition to completed (run.completed); open node executions are cancelled first. A terminal run refuses it with run_terminal (PT409).';

CREATE FUNCTION openwop.fail_run(run_id text, error jsonb, failed_node_id text DEFAULT NULL)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_fail_run'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.fail_run(text, jsonb, text) IS
  'Terminal transition to failed (run.failed {error, failedNodeId?}); open node executions are cancelled first. A terminal run refuses it with run_terminal (PT409).';

CREATE FUNCTION openwop.cancel_run(run_id text, reason text DEFAULT NULL)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_cancel_run'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.cancel_run(text, text) IS
  'Terminal transition to cancelled (node.cancelled for open executions, then run.cancelled). A terminal run refuses it with run_terminal (PT409).';

CREATE FUNCTION openwop.run_snapshot(run_id text)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_run_snapshot'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION openwop.run_snapshot(text) IS
  'The OpenWOP RunSnapshot of a run in the caller''s tenant: runId, workflowId, status, owner, eventLogSchemaVersion, currentNodeId, error, configurable, metadata.';

CREATE FUNCTION openwop.events(run_id text, after_sequence bigint DEFAULT -1, max integer DEFAULT 1000)
    RETURNS SETOF jsonb AS 'MODULE_PATHNAME', 'ow_events'
    LANGUAGE C STABLE ROWS 100;
COMMENT ON FUNCTION openwop.events(text, bigint, integer) IS
  'Event envelopes of a run with sequence > after_sequence, in order, at most max (1..10000): eventId, runId, type, payload, timestamp, sequence, schemaVersion, nodeId?, causationId?.';


/* ------------------------------------------------------------------------
 * JSON Schema subset (resumeSchema, outcomeSchema, question schemas)
 * ------------------------------------------------------------------------ */

CREATE FUNCTION openwop.json_schema_errors(schema jsonb, value jsonb)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_json_schema_errors'
    LANGUAGE C IMMUTABLE;
COMMENT ON FUNCTION openwop.json_schema_errors(jsonb, jsonb) IS
  'Errors of value against schema as [{path, keyword, message}] ([] when valid), using the JSON Schema subset interrupts accept; a schema outside the subset is refused with validation_error.';

/* ------------------------------------------------------------------------
 * Interrupts: raise (engine side) and run-scoped resolve (resolver side)
 * ------------------------------------------------------------------------ */

CREATE FUNCTION openwop.interrupt(run_id text, node_id text, request jsonb, ordinal integer DEFAULT 0)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_interrupt'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.interrupt(text, text, jsonb, integer) IS
  'ctx.interrupt(): validates request {kind, data, resumeSchema?, timeoutMs?}, derives the re-entry key from (root run, node, visit, ordinal) and either suspends the node (interrupt.requested, node.suspended; returns the FlowDrop INT-1 envelope) or, for a key already requested, returns the pending envelope or the recorded resolution without appending anything.';

CREATE FUNCTION openwop.resolve_interrupt(run_id text, node_id text, resume_value jsonb, idempotency_key text DEFAULT NULL)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_resolve_interrupt'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.resolve_interrupt(text, text, jsonb, text) IS
  'resolveInterruptByRun: resolves the pending interrupt of node_id with resume_value as the caller (a request session''s JWT subject, else the session''s login), who needs approvals:respond (the JWT scope claim, or membership of openwop.approver_role); exactly one of concurrent resolves wins, the others get interrupt_already_resolved (PT409). The host fills decidedBy and decidedAt. Honors an Idempotency-Key, which belongs to the subject that used it.';

CREATE FUNCTION openwop.sweep(max integer DEFAULT 1000)
    RETURNS integer AS 'MODULE_PATHNAME', 'ow_sweep'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.sweep(integer) IS
  'Applies due deadlines and retention once (the timeout worker runs the same policy; pg_cron users may call it): approvals past timeoutMs are rejected (action timeout), other interrupts expire and cancel their run, and runs held by interrupts a late answer expired are cancelled; runs other transactions hold are skipped, not waited for. At most max of each, each deadline in a subtransaction, in the caller''s transaction (which holds those runs locked until it ends); then removes idempotency records past retention. Returns how many it changed. It acts in every tenant: only a superuser or a login bound to * (openwop.bound_tenant) may call it.';

/* ------------------------------------------------------------------------
 * Approvals: low-confidence escalation, administration, capabilities
 * ------------------------------------------------------------------------ */

CREATE FUNCTION openwop.record_agent_decision(run_id text, node_id text, agent_id text,
                                              confidence float8, decision jsonb DEFAULT NULL)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_record_agent_decision'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.record_agent_decision(text, text, text, float8, jsonb) IS
  'Appends agent.decided {agentId, decision, confidence} and, when confidence is below the run''s threshold (configurable.run.escalationThreshold, else openwop.escalation_threshold), suspends the node on a low-confidence interrupt in the same call.';

CREATE FUNCTION openwop.add_group_member(group_ref text, principal text, tenant text DEFAULT NULL)
    RETURNS boolean AS 'MODULE_PATHNAME', 'ow_add_group_member'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.add_group_member(text, text, text) IS
  'Adds principal (a subjectId, or "<issuer>/<subjectId>" to pin one issuer) to group_ref in tenant (default: the caller''s tenant) for approverGroupRefs; the group named by openwop.override_group holds the override principals. Only the extension owner or a superuser may call it. Returns false if it was already a member.';

CREATE FUNCTION openwop.remove_group_member(group_ref text, principal text, tenant text DEFAULT NULL)
    RETURNS boolean AS 'MODULE_PATHNAME', 'ow_remove_group_member'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.remove_group_member(text, text, text) IS
  'Removes principal from group_ref in tenant (default: the caller''s tenant). Votes already cast keep the membership recorded at the time. Only the extension owner or a superuser may call it. Returns false if it was not a member.';

CREATE FUNCTION openwop.capabilities()
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_capabilities'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION openwop.capabilities() IS
  'The interrupt facet this host advertises: refKinds, callbackDelivery, tokenAlgs.';

CREATE FUNCTION openwop.current_caller()
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_current_caller'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION openwop.current_caller() IS
  'Who this session is to openwop: {subject {issuer, subjectId, tenant, lane, kind}, tenant, source (request.jwt.claims or session_user), scopes}. Refused where no caller can be trusted (security-restricted operations, SECURITY DEFINER code in a request session).';

/* ------------------------------------------------------------------------
 * Signed interrupt tokens
 * ------------------------------------------------------------------------ */

CREATE FUNCTION openwop.add_signing_key(kid text, secret bytea DEFAULT NULL)
    RETURNS text AS 'MODULE_PATHNAME', 'ow_add_signing_key'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.add_signing_key(text, bytea) IS
  'Adds an active signing key (the newest active key mints); without a secret, 32 bytes from pg_strong_random. Owner or superuser only.';

CREATE FUNCTION openwop.retire_signing_key(kid text)
    RETURNS void AS 'MODULE_PATHNAME', 'ow_retire_signing_key'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.retire_signing_key(text) IS
  'Retires a signing key: it stops minting now and keeps verifying for openwop.token_max_ttl, until every token it signed has expired. Owner or superuser only.';

CREATE FUNCTION openwop.mint_interrupt_token(interrupt_id text, intent text DEFAULT 'resolve',
                                             ttl interval DEFAULT NULL, principal text DEFAULT NULL)
    RETURNS text AS 'MODULE_PATHNAME', 'ow_mint_interrupt_token'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.mint_interrupt_token(text, text, interval, text) IS
  'A signed token ow2.hs256.<kid>.<payload>.<mac> for a pending interrupt of the caller''s tenant; lifetime ttl (default openwop.token_ttl, 30 min), capped at openwop.token_max_ttl and the interrupt''s deadline. A resolve token for a gate that restricts its approvers needs a named eligible principal (a subject id), which it carries and votes as; an inspect token names none. Minting a resolve token needs the privileges of openwop.token_issuer_role.';

CREATE FUNCTION openwop.inspect_interrupt(token text)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_inspect_interrupt'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION openwop.inspect_interrupt(text) IS
  'inspectInterruptByToken: the InterruptPayload of the token''s interrupt. 401 interrupt_token_invalid, 404 not_found, 409 interrupt_already_resolved, 410 interrupt_expired.';

CREATE FUNCTION openwop.verify_interrupt_token(token text)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_verify_interrupt_token'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION openwop.verify_interrupt_token(text) IS
  'Checks a token''s grammar, algorithm, key and signature and returns its claims {interruptId, runId, nodeId, expiresAt, intent, principal?, expired} without reading the interrupt. 401 interrupt_token_invalid for anything else.';

CREATE FUNCTION openwop.resolve_interrupt_by_token(token text, resume_value jsonb, idempotency_key text DEFAULT NULL)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_resolve_interrupt_by_token'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.resolve_interrupt_by_token(text, jsonb, text) IS
  'resolveInterruptByToken: resolves the token''s interrupt through the same path as resolve_interrupt (single winner, eligibility, votes, idempotency). 401, 404, 409, 410, and 403 for an inspect-intent token.';

/* No role but the owner may call anything until the DBA grants it (see README, "Roles and grants"). */
REVOKE ALL ON FUNCTION
    openwop.events_append_only(),
    openwop.create_run(text, jsonb),
    openwop.start_node(text, text, text),
    openwop.complete_node(text, text, jsonb),
    openwop.fail_node(text, text, jsonb),
    openwop.complete_run(text, jsonb),
    openwop.fail_run(text, jsonb, text),
    openwop.cancel_run(text, text),
    openwop.run_snapshot(text),
    openwop.events(text, bigint, integer),
    openwop.json_schema_errors(jsonb, jsonb),
    openwop.interrupt(text, text, jsonb, integer),
    openwop.resolve_interrupt(text, text, jsonb, text),
    openwop.sweep(integer),
    openwop.record_agent_decision(text, text, text, float8, jsonb),
    openwop.add_group_member(text, text, text),
    openwop.remove_group_member(text, text, text),
    openwop.capabilities(),
    openwop.add_signing_key(text, bytea),
    openwop.retire_signing_key(text),
    openwop.mint_interrupt_token(text, text, interval, text),
    openwop.inspect_interrupt(text),
    openwop.verify_interrupt_token(text),
    openwop.resolve_interrupt_by_token(text, jsonb, text),
    openwop.current_caller()
FROM PUBLIC;

/* ----------
 * 0.5.0: the approver's side.  Each part below is kept in step with the
 * same part of openwop_interrupt--0.4.0--0.5.0.sql, except that since 0.6.0
 * the inbox reads openwop.open_interrupts (openwop_interrupt--0.5.0--0.6.0.sql).
 * ----------
 */

-- == retention: the idempotency purge (begin) ==
/*
 * The retention purge (sweep() and the timeout worker, every pass) finds
 * expired Idempotency-Key records through this index, not by reading the
 * whole table.
 */
CREATE INDEX idempotency_keys_expiry ON openwop.idempotency_keys (expires_at);
-- == retention (end) ==

-- == inbox: openwop.pending_interrupts (begin) ==

/* ------------------------------------------------------------------------
 * The inbox: the pending interrupts the caller may decide now, in its
 * tenant (docs/inbox.md).  A plain view over openwop.open_interrupts; C decides
 * the caller once per statement and each row's eligibility (src/inbox.c,
 * src/approvals.c).
 * ------------------------------------------------------------------------ */

CREATE FUNCTION openwop.inbox_waiting(status text)
    RETURNS boolean AS 'MODULE_PATHNAME', 'ow_inbox_waiting'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 1000000;
COMMENT ON FUNCTION openwop.inbox_waiting(text) IS
  'status = ''pending'': the predicate of index interrupts_inbox and a qual of view openwop.pending_interrupts. Its declared cost is not what it costs: PostgreSQL plans a security-barrier view for all its rows when the outer query sorts, and would then read and sort a tenant''s whole inbox for one page; an index scan on interrupts_inbox never evaluates its own predicate and every other plan would, so the cost makes the planner walk that index, in order, and stop at the page''s end.';

CREATE INDEX interrupts_inbox ON openwop.open_interrupts (tenant, created_at, interrupt_id)
    WHERE openwop.inbox_waiting(status);
COMMENT ON INDEX openwop.interrupts_inbox IS
  'The inbox order: a tenant''s pending interrupts, oldest request first; openwop.pending_interrupts reads a page through it.';

CREATE FUNCTION openwop.inbox_tenant()
    RETURNS text AS 'MODULE_PATHNAME', 'ow_inbox_tenant'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION openwop.inbox_tenant() IS
  'The tenant whose inbox the caller sees: its own (a request session''s JWT subject, else the session''s login, decided once per statement), or NULL for a caller without approvals:respond. Used by openwop.pending_interrupts.';

CREATE FUNCTION openwop.inbox_voter()
    RETURNS text AS 'MODULE_PATHNAME', 'ow_inbox_voter'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION openwop.inbox_voter() IS
  'The subjectId the caller''s votes are recorded under (openwop.votes.voter), or NULL for a caller without approvals:respond. Used by openwop.pending_interrupts.';

CREATE FUNCTION openwop.may_decide(tenant text, interrupt_id text, kind text, payload jsonb)
    RETURNS boolean AS 'MODULE_PATHNAME', 'ow_may_decide'
    LANGUAGE C STABLE STRICT COST 10;
COMMENT ON FUNCTION openwop.may_decide(text, text, text, jsonb) IS
  'May the caller resolve this pending interrupt now, by the rules resolve_interrupt applies: approvals:respond in the interrupt''s tenant; for an approval gate, eligibility (approversList, approverGroupRefs, approverRoleRefs; a gate naming none is open to every holder of the scope) and an answer left under openwop.max_votes_per_voter. The caller and its groups are read once per statement. Used by openwop.pending_interrupts.';

CREATE VIEW openwop.pending_interrupts WITH (security_barrier) AS
SELECT o.interrupt_id,
       o.run_id,
       o.node_id,
       o.kind,
       o.payload OPERATOR(pg_catalog.#>>) '{data,title}'::pg_catalog.text[] AS title,
       (o.payload OPERATOR(pg_catalog.->) 'data'::pg_catalog.text) OPERATOR(pg_catalog.-)
           '{approversList,approverGroupRefs,approverRoleRefs,audience}'::pg_catalog.text[] AS request,
       o.payload OPERATOR(pg_catalog.->) 'resumeSchema'::pg_catalog.text AS resume_schema,
       o.created_at AS requested_at,
       o.expires_at,
       CASE WHEN o.kind OPERATOR(pg_catalog.=) 'approval'::pg_catalog.text
            THEN COALESCE(pg_catalog.int4((o.payload OPERATOR(pg_catalog.#>) '{data,requiredApprovals}'::pg_catalog.text[])), 1)
       END AS required_approvals,
       t.accepts,
       t.rejects,
       t.voters,
       m.action AS my_vote,
       m.cast_at AS my_vote_at
  FROM openwop.open_interrupts o
  LEFT JOIN LATERAL (
        -- the tally a resolve counts: each voter's latest answer, asks left out
        SELECT pg_catalog.int4(pg_catalog.count(*) FILTER (WHERE l.action OPERATOR(pg_catalog.=) ANY
                   ('{accept,edit-accept}'::pg_catalog.text[]))) AS accepts,
               pg_catalog.int4(pg_catalog.count(*) FILTER (WHERE l.action OPERATOR(pg_catalog.=)
                   'reject'::pg_catalog.text)) AS rejects,
               pg_catalog.int4(pg_catalog.count(*)) AS voters
          FROM (SELECT DISTINCT ON (v.voter) v.action
                  FROM openwop.votes v
                 WHERE v.tenant OPERATOR(pg_catalog.=) o.tenant
                   AND v.interrupt_id OPERATOR(pg_catalog.=) o.interrupt_id
                   AND v.action OPERATOR(pg_catalog.<>) 'ask'::pg_catalog.text
                 ORDER BY v.voter, v.revision DESC) l) t
         ON o.kind OPERATOR(pg_catalog.=) 'approval'::pg_catalog.text
  LEFT JOIN LATERAL (
        -- the caller's own latest answer
        SELECT v.action, v.cast_at
          FROM openwop.votes v
         WHERE v.tenant OPERATOR(pg_catalog.=) o.tenant
           AND v.interrupt_id OPERATOR(pg_catalog.=) o.interrupt_id
           AND v.voter OPERATOR(pg_catalog.=) openwop.inbox_voter()
         ORDER BY v.revision DESC
         LIMIT 1) m ON true
 WHERE o.tenant OPERATOR(pg_catalog.=) openwop.inbox_tenant()
   AND openwop.inbox_waiting(o.status)
   AND (o.expires_at IS NULL OR o.expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp())
   AND openwop.may_decide(o.tenant, o.interrupt_id, o.kind, o.payload)
 ORDER BY o.created_at, o.interrupt_id;

COMMENT ON VIEW openwop.pending_interrupts IS
  'The inbox: the pending interrupts the caller (a request session''s JWT subject, else the session''s login) may decide now, in its tenant only, by the rules resolve_interrupt applies; nothing without approvals:respond; none past its deadline. Oldest request first: ORDER BY requested_at LIMIT n reads one page through index interrupts_inbox. A security barrier: a function in the query''s WHERE sees only these rows.';
COMMENT ON COLUMN openwop.pending_interrupts.interrupt_id IS 'Tenant-bound interrupt id (for mint_interrupt_token).';
COMMENT ON COLUMN openwop.pending_interrupts.run_id IS 'Run that raised it (resolve_interrupt''s run_id).';
COMMENT ON COLUMN openwop.pending_interrupts.node_id IS 'Node that raised it (resolve_interrupt''s node_id).';
COMMENT ON COLUMN openwop.pending_interrupts.kind IS 'InterruptPayload kind: approval, clarification, external-event, custom, low-confidence or credential.';
COMMENT ON COLUMN openwop.pending_interrupts.title IS 'data.title of an approval (NULL for a kind without one).';
COMMENT ON COLUMN openwop.pending_interrupts.request IS 'The interrupt''s data as requested (title, artifactId, artifactType, actions, description, questions, ...), without the members that say who else may decide (approversList, approverGroupRefs, approverRoleRefs, audience).';
COMMENT ON COLUMN openwop.pending_interrupts.resume_schema IS 'The JSON Schema a resume value must match, if the interrupt has one.';
COMMENT ON COLUMN openwop.pending_interrupts.requested_at IS 'When it was raised; the inbox order.';
COMMENT ON COLUMN openwop.pending_interrupts.expires_at IS 'Its deadline; NULL when it never expires.';
COMMENT ON COLUMN openwop.pending_interrupts.required_approvals IS 'Accepts an approval gate needs (data.requiredApprovals, 1 when absent); NULL for other kinds.';
COMMENT ON COLUMN openwop.pending_interrupts.accepts IS 'Voters whose latest answer to the approval gate is accept or edit-accept; NULL for other kinds.';
COMMENT ON COLUMN openwop.pending_interrupts.rejects IS 'Voters whose latest answer to the approval gate is reject; NULL for other kinds.';
COMMENT ON COLUMN openwop.pending_interrupts.voters IS 'Voters counted on the approval gate (latest answer other than ask); NULL for other kinds.';
COMMENT ON COLUMN openwop.pending_interrupts.my_vote IS 'The caller''s own latest answer to the gate (accept, reject, refine, edit-accept or ask), NULL if none is recorded.';
COMMENT ON COLUMN openwop.pending_interrupts.my_vote_at IS 'When the caller gave that answer; NULL with my_vote.';

/* The DBA grants the inbox to approver roles (docs/inbox.md, "Grants"). */
REVOKE ALL ON openwop.pending_interrupts FROM PUBLIC;
REVOKE ALL ON FUNCTION
    openwop.inbox_waiting(text),
    openwop.inbox_tenant(),
    openwop.inbox_voter(),
    openwop.may_decide(text, text, text, jsonb)
FROM PUBLIC;

-- == inbox (end) ==

-- == flowdrop: openwop.flowdrop_interrupt (begin) ==
/* ------------------------------------------------------------------------
 * FlowDrop INT-22: an interrupt published as 24 keys, in the rule's order,
 * every one present.  json, not jsonb: the key order is normative.  Reads
 * need the approvals:respond scope or EXECUTE on openwop.events()
 * (docs/flowdrop.md).
 * ------------------------------------------------------------------------ */

CREATE FUNCTION openwop.flowdrop_interrupt(interrupt_id text)
    RETURNS json AS 'MODULE_PATHNAME', 'ow_flowdrop_interrupt'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION openwop.flowdrop_interrupt(text) IS
  'FlowDrop INT-22 entry of an interrupt of the caller''s tenant: id, type, status, message, nodeId, workflowId, pipelineId, sessionId, schema, options, context, defaultValue, responseData, createdAt, expiresAt, scheduledAt, resolvedAt, resolvedBy, direction, jobId, targetPipelineId, initiatorUid, reason, linkedInterruptId, in that order, null when unset; timestamps ISO-8601 UTC; no deadline is expiresAt null (INT-23). Needs approvals:respond or EXECUTE on openwop.events(); another tenant''s id is id_tenant_mismatch (PT403), an unknown one not_found (PT404).';

CREATE FUNCTION openwop.flowdrop_interrupts(interrupt_ids text[])
    RETURNS json AS 'MODULE_PATHNAME', 'ow_flowdrop_interrupts'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION openwop.flowdrop_interrupts(text[]) IS
  'The list form of flowdrop_interrupt: a JSON array of the INT-22 entries of interrupt_ids (at most 1000 ids "<tenant>/<opaque>"), in the order given, read by one statement; ids of another tenant or of no interrupt are left out, and the answer is an array even when none is left. Needs approvals:respond or EXECUTE on openwop.events().';

REVOKE ALL ON FUNCTION
    openwop.flowdrop_interrupt(text),
    openwop.flowdrop_interrupts(text[])
FROM PUBLIC;
-- == flowdrop (end) ==

-- == openwop_api: the PostgREST schema (begin) ==

/* ------------------------------------------------------------------------
 * openwop_api: the resolve surfaces over PostgREST (docs/postgrest.md).
 * PostgREST serves this schema alone (db-schemas = openwop_api): one
 * function per operation of the OpenWOP interrupt spec, named after it,
 * so the routes are POST /rpc/resolveInterruptByRun,
 * GET /rpc/inspectInterruptByToken?token=... and
 * POST /rpc/resolveInterruptByToken.  No table is reachable through it.
 *
 * Privileges: no role may use anything here until the DBA grants it to
 * PostgREST's web roles (db-anon-role and the roles JWTs name): USAGE on
 * the schema, EXECUTE on the operations it serves, SELECT on the inbox.
 * The functions call the openwop entry points directly (EXECUTE on those
 * is not needed), which decide who is calling and what it may do as they
 * do for every caller.
 *
 * A POST function takes the body whole (its one unnamed jsonb parameter:
 * PostgREST passes a JSON body so), reads the Idempotency-Key header from
 * request.headers, and answers a refusal with the spec's envelope
 * {error, message, details} and response.status.
 * ------------------------------------------------------------------------ */

CREATE SCHEMA openwop_api;
COMMENT ON SCHEMA openwop_api IS
E'OpenWOP interrupt: resolve surfaces\n'
 'The resolve operations of the OpenWOP interrupt spec ("Resolve surfaces"): answer the pending interrupt of a run''s node with the approvals:respond scope, or inspect and answer one interrupt with a signed token. '
 'Refusals answer the spec''s HTTP status with the body {error, message, details}.';

CREATE FUNCTION openwop_api."resolveInterruptByRun"(jsonb)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_api_resolve_by_run'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop_api."resolveInterruptByRun"(jsonb) IS
E'resolveInterruptByRun: answer the pending interrupt of a node of a run\n'
 'POST a JSON body {"runId": "<tenant>/<id>", "nodeId": "<node>", "resumeValue": <the answer>} and nothing else; an optional Idempotency-Key header makes a retry safe. '
 'The caller needs the approvals:respond scope (the JWT scope claim) and, on an approval gate, must be eligible; the host records who decided and when. '
 '200: {status, runId, nodeId, interruptId, kind, decision?, action?, resolvedBy, runStatus, sequence}, or {status: "pending", tally} for a vote that decides nothing yet; a replayed response carries the header OpenWOP-Idempotent-Replay: true. '
 'Refusals, as {error, message, details}: 400 validation_error, idempotency_key_invalid; 401 identity_unresolvable; 403 forbidden, id_tenant_mismatch; 404 not_found; 409 interrupt_already_resolved, idempotency_key_mismatch, idempotency_in_flight. '
 'It calls openwop.resolve_interrupt.';

CREATE FUNCTION openwop_api."inspectInterruptByToken"(token text DEFAULT NULL)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_api_inspect_by_token'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION openwop_api."inspectInterruptByToken"(text) IS
E'inspectInterruptByToken: read the interrupt a signed token names\n'
 'GET with the query parameter token=ow2.hs256.<kid>.<payload>.<mac>; the token is the credential, no JWT is needed. '
 '200: the InterruptPayload {kind, key, data, resumeSchema?, timeoutMs?}. '
 'Refusals, as {error, message, details}: 401 interrupt_token_invalid; 404 not_found; 409 interrupt_already_resolved; 410 interrupt_expired. '
 'It calls openwop.inspect_interrupt.';

CREATE FUNCTION openwop_api."resolveInterruptByToken"(jsonb)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_api_resolve_by_token'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop_api."resolveInterruptByToken"(jsonb) IS
E'resolveInterruptByToken: answer the interrupt a signed token names\n'
 'POST a JSON body {"token": "ow2.hs256.<kid>.<payload>.<mac>", "resumeValue": <the answer>} and nothing else; an optional Idempotency-Key header makes a retry safe. The token is the credential, no JWT is needed; a token minted for a principal answers as that principal. '
 '200: as resolveInterruptByRun; a replayed response carries the header OpenWOP-Idempotent-Replay: true. '
 'Refusals, as {error, message, details}: 400 validation_error, idempotency_key_invalid; 401 interrupt_token_invalid; 403 forbidden (an inspect token, an ineligible principal); 404 not_found; 409 interrupt_already_resolved, idempotency_key_mismatch, idempotency_in_flight; 410 interrupt_expired. '
 'It calls openwop.resolve_interrupt_by_token.';

/*
 * The inbox over HTTP: GET /pending_interrupts?order=requested_at&limit=50
 * (ascending requested_at is the order its index serves; docs/inbox.md).
 * A security-barrier view over openwop.pending_interrupts: the rows the
 * caller may decide, in its tenant, nothing else.
 */
CREATE VIEW openwop_api.pending_interrupts WITH (security_barrier) AS
SELECT interrupt_id, run_id, node_id, kind, title, request, resume_schema, requested_at,
       expires_at, required_approvals, accepts, rejects, voters, my_vote, my_vote_at
  FROM openwop.pending_interrupts;
COMMENT ON VIEW openwop_api.pending_interrupts IS
E'The inbox: pending interrupts the caller may decide now\n'
 'The interrupts of the caller''s tenant that the caller may answer (approval gates it is eligible for, and the other kinds for holders of approvals:respond), with what an approver needs to decide: the request without its eligibility lists, the deadline, the tally and the caller''s own latest vote. '
 'Read it in pages: ?order=requested_at&limit=50, then &requested_at=gt.<last>. It is the view openwop.pending_interrupts.';

/* Nothing here is callable until the DBA grants it (docs/postgrest.md, "Roles and grants"). */
REVOKE ALL ON openwop_api.pending_interrupts FROM PUBLIC;
REVOKE ALL ON FUNCTION
    openwop_api."resolveInterruptByRun"(jsonb),
    openwop_api."inspectInterruptByToken"(text),
    openwop_api."resolveInterruptByToken"(jsonb)
FROM PUBLIC;

-- == openwop_api (end) ==

/* ----------
 * 0.7.0: operations.  Each part below is kept in step with the same part
 * of openwop_interrupt--0.6.0--0.7.0.sql.
 * ----------
 */

-- == workers: openwop.workers (begin) ==
/*
 * The launcher and each database worker (the notify relay and deadlines of
 * a database in which the extension is created), from shared memory: for a
 * DBA and for monitoring, readable by pg_monitor.  Empty when the library
 * is not in shared_preload_libraries.
 */
CREATE FUNCTION openwop.worker_status(
    OUT role text, OUT database text, OUT pid integer, OUT started timestamptz,
    OUT last_timeout_pass timestamptz, OUT last_relay timestamptz, OUT relay_lag interval,
    OUT relayed bigint, OUT settled bigint, OUT timeout_passes bigint, OUT errors bigint,
    OUT last_error text, OUT last_error_at timestamptz, OUT serving boolean)
    RETURNS SETOF record AS 'MODULE_PATHNAME', 'ow_worker_status'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.worker_status() IS
  'The launcher and the database workers of the whole server, as openwop.workers shows them.';
REVOKE ALL ON FUNCTION openwop.worker_status() FROM PUBLIC;

CREATE VIEW openwop.workers AS
    SELECT * FROM openwop.worker_status();
COMMENT ON VIEW openwop.workers IS
  'The launcher and one row per database worker of the server (every database: the same rows in each): role, database, pid, when it started, its last timeout pass and relay batch, how long the oldest notification waiting for it has waited (relay_lag), the notifications relayed and interrupts settled or records removed since it started, its errors and the last one. serving is false while a worker is starting or probing a database without the extension.';
COMMENT ON COLUMN openwop.workers.role IS 'launcher, or database worker.';
COMMENT ON COLUMN openwop.workers.database IS 'The database a worker serves; NULL for the launcher.';
COMMENT ON COLUMN openwop.workers.pid IS 'Its process; NULL while it is starting.';
COMMENT ON COLUMN openwop.workers.started IS 'When it started serving.';
COMMENT ON COLUMN openwop.workers.last_timeout_pass IS 'When it last applied deadlines and retention (the launcher: its last look at pg_database).';
COMMENT ON COLUMN openwop.workers.last_relay IS 'When it last relayed notifications.';
COMMENT ON COLUMN openwop.workers.relay_lag IS 'How long the oldest notification waiting to be relayed has waited (0 when none waits).';
COMMENT ON COLUMN openwop.workers.relayed IS 'Notifications relayed since it started.';
COMMENT ON COLUMN openwop.workers.settled IS 'Interrupts settled by deadline and idempotency records removed since it started.';
COMMENT ON COLUMN openwop.workers.timeout_passes IS 'Timeout passes since it started.';
COMMENT ON COLUMN openwop.workers.errors IS 'Errors since it started (each logged).';
COMMENT ON COLUMN openwop.workers.last_error IS 'The last error''s message.';
COMMENT ON COLUMN openwop.workers.last_error_at IS 'When the last error happened.';
COMMENT ON COLUMN openwop.workers.serving IS 'It found the extension in its database and serves it (false while it starts, or probes a database without the extension).';

GRANT USAGE ON SCHEMA openwop TO pg_monitor;
GRANT EXECUTE ON FUNCTION openwop.worker_status() TO pg_monitor;
GRANT SELECT ON openwop.workers TO pg_monitor;
-- == workers: openwop.workers (end) ==

-- == monitoring: openwop.pending_summary, openwop.stats (begin) ==
/*
 * What a DBA watches, readable by pg_monitor: the open interrupts by
 * tenant and kind (how many, the oldest, deadlines coming due and passed),
 * and the cumulative counters since a reset (docs/operations.md has a
 * postgres_exporter query file).
 */
CREATE VIEW openwop.pending_summary AS
    SELECT tenant, kind,
           count(*) AS pending,
           min(created_at) AS oldest_requested_at,
           now() - min(created_at) AS oldest_age,
           min(expires_at) AS next_deadline,
           count(*) FILTER (WHERE expires_at <= now() + interval '5 minutes') AS due_within_5_minutes,
           count(*) FILTER (WHERE expires_at <= now() + interval '1 hour') AS due_within_1_hour,
           count(*) FILTER (WHERE expires_at <= now()) AS overdue
      FROM openwop.open_interrupts
     WHERE status OPERATOR(pg_catalog.=) 'pending'
     GROUP BY tenant, kind;
COMMENT ON VIEW openwop.pending_summary IS
  'Pending interrupts by tenant and kind, every tenant: how many, the oldest, the next deadline and how many are due within 5 minutes and 1 hour; overdue counts those whose deadline has passed and that no worker or sweep() has applied yet (a few for a moment is normal; a growing number means no worker serves the database or it cannot keep up).';
COMMENT ON COLUMN openwop.pending_summary.tenant IS 'Tenant of the runs.';
COMMENT ON COLUMN openwop.pending_summary.kind IS 'InterruptPayload kind.';
COMMENT ON COLUMN openwop.pending_summary.pending IS 'Pending interrupts.';
COMMENT ON COLUMN openwop.pending_summary.oldest_requested_at IS 'When the oldest was raised.';
COMMENT ON COLUMN openwop.pending_summary.oldest_age IS 'How long the oldest has waited.';
COMMENT ON COLUMN openwop.pending_summary.next_deadline IS 'The nearest deadline; NULL when none has one.';
COMMENT ON COLUMN openwop.pending_summary.due_within_5_minutes IS 'Deadlines within the next 5 minutes (passed ones included).';
COMMENT ON COLUMN openwop.pending_summary.due_within_1_hour IS 'Deadlines within the next hour (passed ones included).';
COMMENT ON COLUMN openwop.pending_summary.overdue IS 'Deadlines passed and not yet applied.';

CREATE FUNCTION openwop.stats_counts(
    OUT database text, OUT event text, OUT code text, OUT count bigint, OUT since timestamptz)
    RETURNS SETOF record AS 'MODULE_PATHNAME', 'ow_stats'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.stats_counts() IS
  'The cumulative counters of every database, as openwop.stats shows them.';
REVOKE ALL ON FUNCTION openwop.stats_counts() FROM PUBLIC;

CREATE VIEW openwop.stats AS
    SELECT * FROM openwop.stats_counts();
COMMENT ON VIEW openwop.stats IS
  'Cumulative counters per database since the server started or openwop.stats_reset(): interrupts resolved by an answer, answers recorded without deciding (voted), deadlines applied (expired), each counted when its transaction commits; and refusals by error code, counted when raised. Empty without the library in shared_preload_libraries.';
COMMENT ON COLUMN openwop.stats.database IS 'The database counted.';
COMMENT ON COLUMN openwop.stats.event IS 'resolved, voted, expired or refused.';
COMMENT ON COLUMN openwop.stats.code IS 'The error code of a refusal (validation_error, not_found, ...); NULL for the other events.';
COMMENT ON COLUMN openwop.stats.count IS 'How many since "since".';
COMMENT ON COLUMN openwop.stats.since IS 'When counting started: the first count in this database since the server started, or the last reset.';

CREATE FUNCTION openwop.stats_reset(all_databases boolean DEFAULT false)
    RETURNS void AS 'MODULE_PATHNAME', 'ow_stats_reset_all'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.stats_reset(boolean) IS
  'Starts the counters of openwop.stats again: this database''s, or with all_databases every database''s. Superusers only, unless a DBA grants EXECUTE.';
REVOKE ALL ON FUNCTION openwop.stats_reset(boolean) FROM PUBLIC;

GRANT SELECT ON openwop.pending_summary TO pg_monitor;
GRANT EXECUTE ON FUNCTION openwop.stats_counts() TO pg_monitor;
GRANT SELECT ON openwop.stats TO pg_monitor;
-- == monitoring: openwop.pending_summary, openwop.stats (end) ==

/* ----------
 * 0.8.0.  Each part below is kept in step with the same part of
 * openwop_interrupt--0.7.0--0.8.0.sql.
 * ----------
 */

-- == 0.8.0: conversations (begin) ==
/*
 * The conversations of the conversation.* interrupt kinds (the
 * conversationPrimitive capability): one row per conversation id in a
 * tenant, never reused (no two conversations of a tenant share an id), owned
 * by the run whose conversation.start opened it.  Written only under the
 * run's lock, by interrupt() (open, each turn, close) and by the resolve of
 * one of its interrupts; a conversation takes one step at a time, the
 * interrupt it waits on is pending_interrupt_id (src/conversations.c).
 */
CREATE TABLE openwop.conversations (
    tenant               text COLLATE "C" NOT NULL,
    conversation_id      text COLLATE "C" NOT NULL,
    run_id               text COLLATE "C" NOT NULL,
    state                text COLLATE "C" NOT NULL DEFAULT 'open',
    last_turn_index      integer,
    turn_count           integer     NOT NULL DEFAULT 0,
    pending_interrupt_id text COLLATE "C",
    opened_at            timestamptz NOT NULL DEFAULT pg_catalog.now(),
    closed_at            timestamptz,
    PRIMARY KEY (tenant, conversation_id),
    CONSTRAINT conversations_state_known CHECK (state IN ('open', 'closed')),
    CONSTRAINT conversations_closed CHECK ((state = 'closed') = (closed_at IS NOT NULL))
);
COMMENT ON TABLE openwop.conversations IS
  'The conversations of conversation.start, .exchange and .close interrupts: the conversation id unique in its tenant (for ever: a closed id is not opened again), the run that opened it, its state and its turns.';
COMMENT ON COLUMN openwop.conversations.tenant IS 'Tenant of the run.';
COMMENT ON COLUMN openwop.conversations.conversation_id IS 'data.conversationId of the conversation.start that opened it (1 to 256 characters).';
COMMENT ON COLUMN openwop.conversations.run_id IS 'Run that opened it; only that run exchanges on it or closes it.';
COMMENT ON COLUMN openwop.conversations.state IS 'open, or closed (a conversation.close was raised on it: no turn follows).';
COMMENT ON COLUMN openwop.conversations.last_turn_index IS 'turnIndex of its latest turn (conversation.exchange); NULL before the first. The next turn''s index must be greater.';
COMMENT ON COLUMN openwop.conversations.turn_count IS 'Turns completed: conversation.exchanged events appended.';
COMMENT ON COLUMN openwop.conversations.pending_interrupt_id IS 'The conversation interrupt (start, exchange or close) still pending on it, if any: nothing else is raised on it until that one is resolved.';
COMMENT ON COLUMN openwop.conversations.opened_at IS 'When it was opened.';
COMMENT ON COLUMN openwop.conversations.closed_at IS 'When it was closed; NULL while open.';

SELECT pg_catalog.pg_extension_config_dump('openwop.conversations', '');
REVOKE ALL ON openwop.conversations FROM PUBLIC;

-- the inbox and its columns name the conversation kinds too
COMMENT ON COLUMN openwop.pending_interrupts.kind IS 'InterruptPayload kind: approval, clarification, external-event, custom, low-confidence, credential, conversation.start, conversation.exchange or conversation.close.';
COMMENT ON COLUMN openwop.pending_interrupts.title IS 'data.title of an approval or a conversation.start (NULL for a kind without one).';
-- == conversations (end) ==

-- == credentials: confirm_credential (begin) ==
/*
 * The host's OAuth callback, once its token request succeeded, resolves a
 * credential interrupt as the host: a caller's own "authorized" is always
 * refused.  Whoever may call it can hand a run a credential, so EXECUTE is
 * granted to nobody; a DBA grants it to the callback's login alone.
 */
CREATE FUNCTION openwop.confirm_credential(run_id text, node_id text, idempotency_key text DEFAULT NULL)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_confirm_credential'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.confirm_credential(text, text, text) IS
  'The host''s OAuth callback confirms that a credential now resolves for the credential interrupt of node_id: it is resolved with {outcome: "authorized"} as the host (resolvedBy: the host subject "credential") and the node resumes. Grant EXECUTE only to the callback''s login. Honors an Idempotency-Key.';
REVOKE ALL ON FUNCTION openwop.confirm_credential(text, text, text) FROM PUBLIC;

-- == credentials: confirm_credential (end) ==

-- == forks: openwop.fork_run (begin) ==
/*
 * forkRun (OpenWOP replay.md): a fork is a new run in its source's tenant
 * whose log begins with the source's events below the fork point.  How it
 * was forked is kept beside the run: a replay fork's keys derive from its
 * chain's root, so a replayed interrupt re-derives its source's key and
 * derives the recorded resolution; a branch keys on itself.
 */
CREATE TABLE openwop.forks (
    tenant        text COLLATE "C" NOT NULL,
    run_id        text COLLATE "C" NOT NULL,
    source_run_id text COLLATE "C" NOT NULL,
    mode          text COLLATE "C" NOT NULL,
    from_sequence bigint      NOT NULL,
    key_root      text COLLATE "C" NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (tenant, run_id),
    CONSTRAINT forks_mode_known CHECK (mode IN ('replay', 'branch')),
    CONSTRAINT forks_from_sequence CHECK (from_sequence >= 0)
);
COMMENT ON TABLE openwop.forks IS
  'One row per run fork_run made: its source, mode and fork point, and the run its re-entry keys derive from.';
COMMENT ON COLUMN openwop.forks.tenant IS 'Tenant of the fork and of its source.';
COMMENT ON COLUMN openwop.forks.run_id IS 'The fork (openwop.runs).';
COMMENT ON COLUMN openwop.forks.source_run_id IS 'The run it was forked from (runs.fork_of).';
COMMENT ON COLUMN openwop.forks.mode IS 'replay (re-executes the source, deriving what it recorded) or branch (an independent run from the fork point).';
COMMENT ON COLUMN openwop.forks.from_sequence IS 'fromSeq: the source''s events below it are the fork''s fixed history, copied at the same sequences.';
COMMENT ON COLUMN openwop.forks.key_root IS 'The run its re-entry keys derive from: the source''s key root for a replay fork, the fork itself for a branch.';
COMMENT ON COLUMN openwop.forks.created_at IS 'When the fork was made.';
SELECT pg_catalog.pg_extension_config_dump('openwop.forks', '');
REVOKE ALL ON openwop.forks FROM PUBLIC;

COMMENT ON COLUMN openwop.runs.fork_of IS 'Source run of a fork (openwop.forks says how it was forked); NULL for a run create_run made.';
COMMENT ON COLUMN openwop.interrupts.root_run_id IS 'The run the key is unique under: the run itself (a replay fork derives its keys from its chain''s root, and records each under its own id).';
COMMENT ON COLUMN openwop.interrupts.requested_sequence IS 'Sequence of its interrupt.requested event; for an interrupt a replay fork derived from its chain without requesting it, of its interrupt.resolved.';

CREATE FUNCTION openwop.fork_run(run_id text, options jsonb)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_fork_run'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.fork_run(text, jsonb) IS
  'forkRun: a new run in the source''s tenant whose log is the source''s events below options.fromSeq (interrupt ids re-minted), with the state they leave. options {mode: replay|branch, fromSeq?, runOptionsOverlay?}: fromSeq required for a branch, 0 for a replay; runOptionsOverlay {configurable?, metadata?} for a branch only. A replay fork roots its keys at its source, so interrupt() derives the recorded resolution and never asks again; what the source recorded for an interrupt the prefix leaves pending is derived at once. 400 validation_error, 403 id_tenant_mismatch, 404 not_found, 422 fork_point_invalid (a sequence not in the log, or inside one change). Returns {runId, sourceRunId, mode, fromSeq, status, workflowId, sequence}.';
REVOKE ALL ON FUNCTION openwop.fork_run(text, jsonb) FROM PUBLIC;
-- == forks (end) ==

-- == 0.8.0: capabilities (begin) ==
COMMENT ON FUNCTION openwop.capabilities() IS
  'The families this host advertises: interrupt {refKinds, callbackDelivery, tokenAlgs}; replay {modes: replay, branch}; conversationPrimitive ({}: a family without facets, claimed by its presence) on a schema that has openwop.conversations; oauth {credentialInterrupt} while openwop.credential_interrupts is on.';
-- == capabilities (end) ==

/* ----------
 * 0.9.0.  The part below is kept in step with the same part of
 * openwop_interrupt--0.8.0--0.9.0.sql.
 * ----------
 */

-- == 0.9.0: forwarding (begin) ==
/* ------------------------------------------------------------------------
 * openwop_forward: the API as a router (openwop_router, PL/Proxy) calls
 * it on a shard (docs/scale-out.md).  One function per routed function
 * openwop.F: openwop_forward.F(caller, <F's own parameters>) sets
 * openwop.forwarded_caller to caller for the call of openwop.F it makes
 * and returns what that returns.  caller is the router's caller, as the
 * router's openwop_router.caller() decided it; it counts only in a
 * session of a member of openwop.forwarding_role (the router's login), and
 * a forwarded tenant must be one that login's own openwop.bound_tenant
 * allows.  Any other session is refused as it sets it (42501).
 *
 * SECURITY INVOKER: the call is the router login's, with its EXECUTE on
 * openwop.F.  The SET clause restores openwop.forwarded_caller when the
 * function returns (or fails), so the set_config(..., true) of its body
 * never outlives it: the next statement of the session is the router's
 * login again.  A NULL caller is refused by the call, never taken as none.
 * PL/pgSQL, whose plans last the session (a SQL function is planned anew
 * by each statement that calls it, every remote call of the router):
 * RETURN QUERY reads every row while the caller is set, and the inbox's
 * functions, which keep their caller for the executor state they run in,
 * are called in a query of their own (a simple expression's state would
 * last the transaction, and keep its first caller).
 *
 * Not here, and called by the router as its own login: administration
 * that only the extension owner may do (add_signing_key,
 * retire_signing_key, add_group_member, remove_group_member, sweep,
 * stats_reset) and the monitoring views (workers, stats); inbox_waiting(),
 * which decides nothing about a caller; openwop_api, which PostgREST
 * serves on a shard itself.
 *
 * Privileges: none until the DBA grants them (docs/scale-out.md): USAGE on
 * the schema and EXECUTE on these functions, and on the openwop functions
 * they call, to the router's login.
 * ------------------------------------------------------------------------ */

CREATE SCHEMA openwop_forward;
COMMENT ON SCHEMA openwop_forward IS
  'The openwop API as a router calls it: openwop_forward.F(caller, ...) is openwop.F called for the caller the router forwards (openwop.forwarded_caller), believed only from a member of openwop.forwarding_role.';

-- runs and nodes
CREATE FUNCTION openwop_forward.create_run(caller jsonb, workflow_id text, options jsonb DEFAULT '{}')
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.create_run(workflow_id, options);
END
$$;
COMMENT ON FUNCTION openwop_forward.create_run(jsonb, text, jsonb) IS
  'openwop.create_run for the forwarded caller (its tenant is the run''s).';

CREATE FUNCTION openwop_forward.start_node(caller jsonb, run_id text, node_id text, type_id text DEFAULT NULL)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.start_node(run_id, node_id, type_id);
END
$$;
COMMENT ON FUNCTION openwop_forward.start_node(jsonb, text, text, text) IS
  'openwop.start_node for the forwarded caller.';

CREATE FUNCTION openwop_forward.complete_node(caller jsonb, run_id text, node_id text, outputs jsonb DEFAULT '{}')
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.complete_node(run_id, node_id, outputs);
END
$$;
COMMENT ON FUNCTION openwop_forward.complete_node(jsonb, text, text, jsonb) IS
  'openwop.complete_node for the forwarded caller.';

CREATE FUNCTION openwop_forward.fail_node(caller jsonb, run_id text, node_id text, error jsonb)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.fail_node(run_id, node_id, error);
END
$$;
COMMENT ON FUNCTION openwop_forward.fail_node(jsonb, text, text, jsonb) IS
  'openwop.fail_node for the forwarded caller.';

CREATE FUNCTION openwop_forward.complete_run(caller jsonb, run_id text, outputs jsonb DEFAULT '{}')
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.complete_run(run_id, outputs);
END
$$;
COMMENT ON FUNCTION openwop_forward.complete_run(jsonb, text, jsonb) IS
  'openwop.complete_run for the forwarded caller.';

CREATE FUNCTION openwop_forward.fail_run(caller jsonb, run_id text, error jsonb, failed_node_id text DEFAULT NULL)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.fail_run(run_id, error, failed_node_id);
END
$$;
COMMENT ON FUNCTION openwop_forward.fail_run(jsonb, text, jsonb, text) IS
  'openwop.fail_run for the forwarded caller.';

CREATE FUNCTION openwop_forward.cancel_run(caller jsonb, run_id text, reason text DEFAULT NULL)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.cancel_run(run_id, reason);
END
$$;
COMMENT ON FUNCTION openwop_forward.cancel_run(jsonb, text, text) IS
  'openwop.cancel_run for the forwarded caller (cancelledBy is the forwarded subject).';

CREATE FUNCTION openwop_forward.run_snapshot(caller jsonb, run_id text)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.run_snapshot(run_id);
END
$$;
COMMENT ON FUNCTION openwop_forward.run_snapshot(jsonb, text) IS
  'openwop.run_snapshot for the forwarded caller.';

CREATE FUNCTION openwop_forward.events(caller jsonb, run_id text, after_sequence bigint DEFAULT -1, max integer DEFAULT 1000)
    RETURNS SETOF jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = '' ROWS 100
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN QUERY SELECT e FROM openwop.events(run_id, after_sequence, max) e;
END
$$;
COMMENT ON FUNCTION openwop_forward.events(jsonb, text, bigint, integer) IS
  'openwop.events for the forwarded caller: the run''s event envelopes after after_sequence, in order, at most max.';

CREATE FUNCTION openwop_forward.fork_run(caller jsonb, run_id text, options jsonb)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.fork_run(run_id, options);
END
$$;
COMMENT ON FUNCTION openwop_forward.fork_run(jsonb, text, jsonb) IS
  'openwop.fork_run for the forwarded caller: the fork is in the source''s tenant, so on the source''s shard.';

-- interrupts and answers
CREATE FUNCTION openwop_forward.interrupt(caller jsonb, run_id text, node_id text, request jsonb, ordinal integer DEFAULT 0)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.interrupt(run_id, node_id, request, ordinal);
END
$$;
COMMENT ON FUNCTION openwop_forward.interrupt(jsonb, text, text, jsonb, integer) IS
  'openwop.interrupt for the forwarded caller.';

CREATE FUNCTION openwop_forward.resolve_interrupt(caller jsonb, run_id text, node_id text, resume_value jsonb, idempotency_key text DEFAULT NULL)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.resolve_interrupt(run_id, node_id, resume_value, idempotency_key);
END
$$;
COMMENT ON FUNCTION openwop_forward.resolve_interrupt(jsonb, text, text, jsonb, text) IS
  'openwop.resolve_interrupt for the forwarded caller, who needs approvals:respond among its forwarded scopes; the answer is recorded as the forwarded subject''s. In its own transaction on the shard: an Idempotency-Key makes a retry after a lost reply safe.';

CREATE FUNCTION openwop_forward.record_agent_decision(caller jsonb, run_id text, node_id text, agent_id text,
                                                      confidence float8, decision jsonb DEFAULT NULL)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.record_agent_decision(run_id, node_id, agent_id, confidence, decision);
END
$$;
COMMENT ON FUNCTION openwop_forward.record_agent_decision(jsonb, text, text, text, float8, jsonb) IS
  'openwop.record_agent_decision for the forwarded caller.';

CREATE FUNCTION openwop_forward.confirm_credential(caller jsonb, run_id text, node_id text, idempotency_key text DEFAULT NULL)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.confirm_credential(run_id, node_id, idempotency_key);
END
$$;
COMMENT ON FUNCTION openwop_forward.confirm_credential(jsonb, text, text, text) IS
  'openwop.confirm_credential for the forwarded caller. Its privilege is EXECUTE, here the router login''s: the router''s own grant of its confirm_credential decides who may call it.';

CREATE FUNCTION openwop_forward.json_schema_errors(caller jsonb, schema jsonb, value jsonb)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.json_schema_errors(schema, value);
END
$$;
COMMENT ON FUNCTION openwop_forward.json_schema_errors(jsonb, jsonb, jsonb) IS
  'openwop.json_schema_errors (it reads no caller: any shard answers it).';

CREATE FUNCTION openwop_forward.capabilities(caller jsonb)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.capabilities();
END
$$;
COMMENT ON FUNCTION openwop_forward.capabilities(jsonb) IS
  'openwop.capabilities (it reads no caller: any shard answers it, when every shard runs the same schema).';

CREATE FUNCTION openwop_forward.current_caller(caller jsonb)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.current_caller();
END
$$;
COMMENT ON FUNCTION openwop_forward.current_caller(jsonb) IS
  'openwop.current_caller as the shard sees the forwarded caller: its subject, tenant and scopes, source openwop.forwarded_caller, and forwardedBy, the router''s login.';

-- tokens
CREATE FUNCTION openwop_forward.mint_interrupt_token(caller jsonb, interrupt_id text, intent text DEFAULT 'resolve',
                                                     ttl interval DEFAULT NULL, principal text DEFAULT NULL)
    RETURNS text LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.mint_interrupt_token(interrupt_id, intent, ttl, principal);
END
$$;
COMMENT ON FUNCTION openwop_forward.mint_interrupt_token(jsonb, text, text, interval, text) IS
  'openwop.mint_interrupt_token for the forwarded caller, signed with the shard''s key. Minting a resolve token needs the privileges of openwop.token_issuer_role, here the router login''s: the router''s own grant of its mint_interrupt_token decides who may mint.';

CREATE FUNCTION openwop_forward.inspect_interrupt(caller jsonb, token text)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.inspect_interrupt(token);
END
$$;
COMMENT ON FUNCTION openwop_forward.inspect_interrupt(jsonb, text) IS
  'openwop.inspect_interrupt: the token is the credential, verified here, on the shard of its interrupt''s tenant.';

CREATE FUNCTION openwop_forward.verify_interrupt_token(caller jsonb, token text)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.verify_interrupt_token(token);
END
$$;
COMMENT ON FUNCTION openwop_forward.verify_interrupt_token(jsonb, text) IS
  'openwop.verify_interrupt_token, on the shard whose keys signed the token.';

CREATE FUNCTION openwop_forward.resolve_interrupt_by_token(caller jsonb, token text, resume_value jsonb, idempotency_key text DEFAULT NULL)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.resolve_interrupt_by_token(token, resume_value, idempotency_key);
END
$$;
COMMENT ON FUNCTION openwop_forward.resolve_interrupt_by_token(jsonb, text, jsonb, text) IS
  'openwop.resolve_interrupt_by_token: the token is the credential (and its principal the voter), verified here; in its own transaction on the shard, so an Idempotency-Key makes a retry safe.';

-- the inbox and FlowDrop
CREATE FUNCTION openwop_forward.pending_interrupts(caller jsonb)
    RETURNS SETOF openwop.pending_interrupts LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN QUERY SELECT * FROM openwop.pending_interrupts;
END
$$;
COMMENT ON FUNCTION openwop_forward.pending_interrupts(jsonb) IS
  'The rows of the inbox openwop.pending_interrupts for the forwarded caller (the interrupts of its tenant it may decide now), oldest request first.';

CREATE FUNCTION openwop_forward.inbox_tenant(caller jsonb)
    RETURNS text LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN (SELECT openwop.inbox_tenant());
END
$$;
COMMENT ON FUNCTION openwop_forward.inbox_tenant(jsonb) IS
  'openwop.inbox_tenant for the forwarded caller: its tenant, or NULL without approvals:respond.';

CREATE FUNCTION openwop_forward.inbox_voter(caller jsonb)
    RETURNS text LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN (SELECT openwop.inbox_voter());
END
$$;
COMMENT ON FUNCTION openwop_forward.inbox_voter(jsonb) IS
  'openwop.inbox_voter for the forwarded caller: the subjectId its votes are recorded under, or NULL without approvals:respond.';

CREATE FUNCTION openwop_forward.may_decide(caller jsonb, tenant text, interrupt_id text, kind text, payload jsonb)
    RETURNS boolean LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN (SELECT openwop.may_decide(tenant, interrupt_id, kind, payload));
END
$$;
COMMENT ON FUNCTION openwop_forward.may_decide(jsonb, text, text, text, jsonb) IS
  'openwop.may_decide for the forwarded caller: may it resolve this pending interrupt now? Approver role refs match the shard''s own logins only, never a forwarded caller.';

CREATE FUNCTION openwop_forward.flowdrop_interrupt(caller jsonb, interrupt_id text)
    RETURNS json LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.flowdrop_interrupt(interrupt_id);
END
$$;
COMMENT ON FUNCTION openwop_forward.flowdrop_interrupt(jsonb, text) IS
  'openwop.flowdrop_interrupt for the forwarded caller: the FlowDrop INT-22 entry, its 24 keys in order.';

CREATE FUNCTION openwop_forward.flowdrop_interrupts(caller jsonb, interrupt_ids text[])
    RETURNS json LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.flowdrop_interrupts(interrupt_ids);
END
$$;
COMMENT ON FUNCTION openwop_forward.flowdrop_interrupts(jsonb, text[]) IS
  'openwop.flowdrop_interrupts for the forwarded caller: the entries of the ids of its tenant (on this shard), in the order given.';

COMMENT ON FUNCTION openwop.current_caller() IS
  'Who this session is to openwop: {subject {issuer, subjectId, tenant, lane, kind}, tenant, source (request.jwt.claims, session_user, or openwop.forwarded_caller for a caller a router forwards), scopes, and forwardedBy (the forwarding login) for a forwarded caller}. Refused where no caller can be trusted (security-restricted operations, SECURITY DEFINER code in a request session, a forwarded caller set by a session that may not forward).';

/* Nothing here is callable until the DBA grants it to the router's login (docs/scale-out.md). */
REVOKE ALL ON FUNCTION
    openwop_forward.create_run(jsonb, text, jsonb),
    openwop_forward.start_node(jsonb, text, text, text),
    openwop_forward.complete_node(jsonb, text, text, jsonb),
    openwop_forward.fail_node(jsonb, text, text, jsonb),
    openwop_forward.complete_run(jsonb, text, jsonb),
    openwop_forward.fail_run(jsonb, text, jsonb, text),
    openwop_forward.cancel_run(jsonb, text, text),
    openwop_forward.run_snapshot(jsonb, text),
    openwop_forward.events(jsonb, text, bigint, integer),
    openwop_forward.fork_run(jsonb, text, jsonb),
    openwop_forward.interrupt(jsonb, text, text, jsonb, integer),
    openwop_forward.resolve_interrupt(jsonb, text, text, jsonb, text),
    openwop_forward.record_agent_decision(jsonb, text, text, text, float8, jsonb),
    openwop_forward.confirm_credential(jsonb, text, text, text),
    openwop_forward.json_schema_errors(jsonb, jsonb, jsonb),
    openwop_forward.capabilities(jsonb),
    openwop_forward.current_caller(jsonb),
    openwop_forward.mint_interrupt_token(jsonb, text, text, interval, text),
    openwop_forward.inspect_interrupt(jsonb, text),
    openwop_forward.verify_interrupt_token(jsonb, text),
    openwop_forward.resolve_interrupt_by_token(jsonb, text, jsonb, text),
    openwop_forward.pending_interrupts(jsonb),
    openwop_forward.inbox_tenant(jsonb),
    openwop_forward.inbox_voter(jsonb),
    openwop_forward.may_decide(jsonb, text, text, text, jsonb),
    openwop_forward.flowdrop_interrupt(jsonb, text),
    openwop_forward.flowdrop_interrupts(jsonb, text[])
FROM PUBLIC;
-- == forwarding (end) ==

/* ----------
 * 0.10.0.  The part below is kept in step with the same part of
 * openwop_interrupt--0.9.0--0.10.0.sql.
 * ----------
 */

-- == 0.10.0: where a pending interrupt's rows are (begin) ==
/* ------------------------------------------------------------------------
 * The open row names the row versions the raise wrote: the interrupt's
 * row and the suspended node execution's.  A resolve, under the run lock,
 * reads them there instead of probing two indexes (about a tenth of its
 * CPU).  A hint only: a version that is no longer the one the resolve sees
 * (updated since, or moved by VACUUM FULL, CLUSTER or a restore), or
 * whose keys are not the interrupt's, is looked up by its index as
 * before; NULL (a raise through SQL statements, rows from before 0.10.0)
 * means the same.
 * ---------------------------------------------------------------------- */
ALTER TABLE openwop.open_interrupts
  ADD COLUMN interrupt_tid tid,
  ADD COLUMN execution_tid tid;
COMMENT ON COLUMN openwop.open_interrupts.interrupt_tid IS 'Where the raise wrote the interrupt''s row in openwop.interrupts (a hint for the resolve; NULL when unknown).';
COMMENT ON COLUMN openwop.open_interrupts.execution_tid IS 'Where the raise wrote the suspended node execution''s row in openwop.node_executions (a hint for the resolve; NULL when unknown).';
-- == where a pending interrupt's rows are (end) ==

/* ----------
 * 0.11.0.  The parts below are kept in step with the same parts of
 * openwop_interrupt--0.10.0--0.11.0.sql.
 * ----------
 */

-- == 0.11.0: copies of a database are served when the DBA says so (begin) ==
/* ------------------------------------------------------------------------
 * The database the extension serves.  CREATE DATABASE ... TEMPLATE, which
 * a role with CREATEDB may run on a database it owns, copies this row with
 * everything else: the copy's oid is not the one recorded, so its launcher
 * probe finds a copy and starts no worker there until a superuser or the
 * extension's owner runs openwop.serve_database() in it.  Not dumped: a
 * restore creates the extension anew, which records the new database.
 * ---------------------------------------------------------------------- */
CREATE TABLE openwop.served_database (
    database_oid oid NOT NULL,
    served_by    name NOT NULL DEFAULT pg_catalog.session_user(),
    served_at    timestamptz NOT NULL DEFAULT pg_catalog.now(),
    one_row      boolean NOT NULL DEFAULT true PRIMARY KEY,
    CONSTRAINT served_database_one_row CHECK (one_row)
);
COMMENT ON TABLE openwop.served_database IS
  'The database the workers serve this extension in: the one it was created in, or the one a DBA named with serve_database(). A copy of the database (CREATE DATABASE ... TEMPLATE) carries the row of its original, and is not served until serve_database() runs in it. Not dumped.';
COMMENT ON COLUMN openwop.served_database.database_oid IS 'Oid of the database to serve.';
COMMENT ON COLUMN openwop.served_database.served_by IS 'The login that created the extension or ran serve_database().';
COMMENT ON COLUMN openwop.served_database.served_at IS 'When.';
COMMENT ON COLUMN openwop.served_database.one_row IS 'Always true: the table has one row.';
INSERT INTO openwop.served_database (database_oid)
    SELECT oid FROM pg_catalog.pg_database WHERE datname OPERATOR(pg_catalog.=) pg_catalog.current_database();
REVOKE ALL ON openwop.served_database FROM PUBLIC;

CREATE FUNCTION openwop.serve_database()
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_serve_database'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.serve_database() IS
  'Have the workers serve this database: the DBA''s word for a copy of another database (CREATE DATABASE ... TEMPLATE), which is not served until then. Superusers and the extension''s owner only. Returns {changed, database}.';
REVOKE ALL ON FUNCTION openwop.serve_database() FROM PUBLIC;

/* The workers view says why a database with the extension has no worker. */
DROP VIEW openwop.workers;
DROP FUNCTION openwop.worker_status();
CREATE FUNCTION openwop.worker_status(
    OUT role text, OUT database text, OUT pid integer, OUT started timestamptz,
    OUT last_timeout_pass timestamptz, OUT last_relay timestamptz, OUT relay_lag interval,
    OUT relayed bigint, OUT settled bigint, OUT timeout_passes bigint, OUT errors bigint,
    OUT last_error text, OUT last_error_at timestamptz, OUT serving boolean, OUT reason text)
    RETURNS SETOF record AS 'MODULE_PATHNAME', 'ow_worker_status'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.worker_status() IS
  'The launcher and the database workers of the whole server, as openwop.workers shows them, and, when none serves this database, why.';
REVOKE ALL ON FUNCTION openwop.worker_status() FROM PUBLIC;

CREATE VIEW openwop.workers AS
    SELECT * FROM openwop.worker_status();
COMMENT ON VIEW openwop.workers IS
  'The launcher and one row per database worker of the server (the same rows in every database): role, database, pid, when it started, its last timeout pass and relay batch, how long the oldest notification waiting for it has waited (relay_lag), the notifications relayed and interrupts settled or records removed since it started, its errors and the last one. serving is false while a worker is starting or probing a database without the extension. When no worker serves this database, a row for it with serving false says why (reason), and asks the launcher to look at it again.';
COMMENT ON COLUMN openwop.workers.role IS 'launcher, or database worker.';
COMMENT ON COLUMN openwop.workers.database IS 'The database a worker serves; NULL for the launcher.';
COMMENT ON COLUMN openwop.workers.pid IS 'Its process; NULL while it is starting, and on the row of a database no worker serves.';
COMMENT ON COLUMN openwop.workers.started IS 'When it started serving.';
COMMENT ON COLUMN openwop.workers.last_timeout_pass IS 'When it last applied deadlines and retention (the launcher: its last look at pg_database).';
COMMENT ON COLUMN openwop.workers.last_relay IS 'When it last relayed notifications.';
COMMENT ON COLUMN openwop.workers.relay_lag IS 'How long the oldest notification waiting to be relayed has waited (0 when none waits).';
COMMENT ON COLUMN openwop.workers.relayed IS 'Notifications relayed since it started.';
COMMENT ON COLUMN openwop.workers.settled IS 'Interrupts settled by deadline and idempotency records removed since it started.';
COMMENT ON COLUMN openwop.workers.timeout_passes IS 'Timeout passes since it started.';
COMMENT ON COLUMN openwop.workers.errors IS 'Errors since it started (each logged).';
COMMENT ON COLUMN openwop.workers.last_error IS 'The last error''s message.';
COMMENT ON COLUMN openwop.workers.last_error_at IS 'When the last error happened; on the row of a database no worker serves, since when the launcher has said why.';
COMMENT ON COLUMN openwop.workers.serving IS 'It found the extension in its database and serves it (false while it starts, or probes a database without the extension, and on the row of a database no worker serves).';
COMMENT ON COLUMN openwop.workers.reason IS 'Why no worker serves this database (NULL on every other row): a copy not yet served, not in openwop.databases, no slot or background worker free, its worker failing, the library not preloaded.';

GRANT EXECUTE ON FUNCTION openwop.worker_status() TO pg_monitor;
GRANT SELECT ON openwop.workers TO pg_monitor;

/* Every database's counters are a superuser's to reset, whatever the grants. */
COMMENT ON FUNCTION openwop.stats_reset(boolean) IS
  'Starts the counters of openwop.stats again: this database''s (superusers, unless a DBA grants EXECUTE), or with all_databases every database''s (superusers only, whatever the grants: 403).';
-- == copies of a database are served when the DBA says so (end) ==

-- == 0.11.0: signing secrets sealed, keys revoked at once (begin) ==
/* ------------------------------------------------------------------------
 * No signing secret is stored in clear: a role that reads every table
 * (pg_read_all_data, with BYPASSRLS for a backup login) reads this one
 * too.  Each secret is encrypted under the key-encryption passphrase
 * (openwop.key_encryption_key_command or _file), which no table and no
 * setting holds.  Secrets 0.10.0 stored in clear are encrypted here (the
 * update fails, changing nothing, when no passphrase is configured), or
 * erased when their key no longer verifies.  A key can be revoked:
 * retired at once, its secret erased, no token it signed verifying from
 * the revocation's commit on.
 * ---------------------------------------------------------------------- */
ALTER TABLE openwop.signing_keys ALTER COLUMN secret DROP NOT NULL;
CREATE FUNCTION openwop.seal_signing_keys() RETURNS integer
    AS 'MODULE_PATHNAME', 'ow_seal_signing_keys' LANGUAGE C VOLATILE;
SELECT openwop.seal_signing_keys();
DROP FUNCTION openwop.seal_signing_keys();
ALTER TABLE openwop.signing_keys
  ALTER COLUMN encrypted SET DEFAULT true,
  DROP CONSTRAINT signing_keys_state_known,
  DROP CONSTRAINT signing_keys_retired,
  ADD CONSTRAINT signing_keys_state_known CHECK (state IN ('active', 'retired', 'revoked')),
  ADD CONSTRAINT signing_keys_retired CHECK ((state <> 'active') = (retired_at IS NOT NULL)),
  ADD CONSTRAINT signing_keys_sealed CHECK (encrypted OR secret IS NULL),
  ADD CONSTRAINT signing_keys_revoked_erased CHECK (state <> 'revoked' OR secret IS NULL);
COMMENT ON TABLE openwop.signing_keys IS
  'The keyring of interrupt tokens (host-wide). Every secret is stored encrypted under the key-encryption passphrase (openwop.key_encryption_key_command or openwop.key_encryption_key_file), never in clear: a role that reads every table reads ciphertext. Not dumped by pg_dump: after a restore, add new keys; outstanding tokens stop verifying (401).';
COMMENT ON COLUMN openwop.signing_keys.secret IS 'HMAC secret, pgcrypto-encrypted under the key-encryption passphrase; NULL once erased (a revoked key, or one that no longer verified when 0.11.0 sealed the keyring).';
COMMENT ON COLUMN openwop.signing_keys.encrypted IS 'Whether secret is encrypted: always, since 0.11.0 (false only on a key whose secret is erased before it was sealed).';
COMMENT ON COLUMN openwop.signing_keys.state IS 'active (mints and verifies), retired (verifies until verify_until) or revoked (verifies nothing; its secret erased).';
COMMENT ON COLUMN openwop.signing_keys.retired_at IS 'When the key was retired or revoked.';

CREATE FUNCTION openwop.retire_signing_key(kid text, immediately boolean)
    RETURNS void AS 'MODULE_PATHNAME', 'ow_retire_signing_key'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.retire_signing_key(text, boolean) IS
  'Retires a signing key; immediately true revokes it: active or retired, it stops minting and verifying from this commit on and its secret is erased (a leaked key or token). immediately false is retire_signing_key(kid). Owner or superuser only.';
REVOKE ALL ON FUNCTION openwop.retire_signing_key(text, boolean) FROM PUBLIC;

CREATE FUNCTION openwop.export_signing_key(kid text)
    RETURNS bytea AS 'MODULE_PATHNAME', 'ow_export_signing_key'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.export_signing_key(text) IS
  'The active key''s secret as stored, encrypted under this server''s key-encryption passphrase, for import_signing_key() on a server with the same passphrase (a router''s shards): the secret never travels in clear. Owner or superuser only.';
CREATE FUNCTION openwop.import_signing_key(kid text, sealed bytea)
    RETURNS text AS 'MODULE_PATHNAME', 'ow_import_signing_key'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.import_signing_key(text, bytea) IS
  'Adds an active key whose secret is sealed as export_signing_key() gave it; refused unless it decrypts under this server''s passphrase. The same kid and sealed secret again is no error. Owner or superuser only.';
REVOKE ALL ON FUNCTION openwop.export_signing_key(text), openwop.import_signing_key(text, bytea) FROM PUBLIC;

/*
 * Statistics of the secret column would show secrets (0.10.0 kept them in
 * clear): the table's, its indexes' (an expression a DBA indexed) and those
 * of statistics objects on it go, and none is gathered on the column again.
 */
ALTER TABLE openwop.signing_keys ALTER COLUMN secret SET STATISTICS 0;
DELETE FROM pg_catalog.pg_statistic
 WHERE starelid OPERATOR(pg_catalog.=) 'openwop.signing_keys'::pg_catalog.regclass
    OR starelid IN (SELECT indexrelid FROM pg_catalog.pg_index
                     WHERE indrelid OPERATOR(pg_catalog.=) 'openwop.signing_keys'::pg_catalog.regclass);
DELETE FROM pg_catalog.pg_statistic_ext_data
 WHERE stxoid IN (SELECT oid FROM pg_catalog.pg_statistic_ext
                   WHERE stxrelid OPERATOR(pg_catalog.=) 'openwop.signing_keys'::pg_catalog.regclass);
-- == signing secrets sealed, keys revoked at once (end) ==

-- == 0.11.0: notifications per tenant (begin) ==
/* ------------------------------------------------------------------------
 * Each notification goes to the channel of its run's tenant, whose name
 * (a keyed hash of the tenant, made anew at each server start) only these
 * functions tell, and only to a caller of that tenant: LISTEN needs no
 * privilege, so a channel named after the tenant would tell every login
 * every tenant's run ids.  openwop.shared_channel = on also sends them on
 * openwop_events, as before.
 * ---------------------------------------------------------------------- */
CREATE FUNCTION openwop.listen()
    RETURNS text AS 'MODULE_PATHNAME', 'ow_listen'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION openwop.listen() IS
  'This session listens to the notifications of the caller''s tenant ({runId, fromSequence, sequence}, one per committed transaction and run), as LISTEN does, from the commit on; returns the channel they arrive on (openwop_events_ and 32 hex digits, new at each server start). For a SQL login''s own session: refused through PostgREST or a router.';
CREATE FUNCTION openwop.unlisten()
    RETURNS text AS 'MODULE_PATHNAME', 'ow_unlisten'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION openwop.unlisten() IS
  'This session stops listening to its tenant''s notifications (UNLISTEN of the channel listen() named); returns the channel.';
REVOKE ALL ON FUNCTION openwop.listen(), openwop.unlisten() FROM PUBLIC;
-- == notifications per tenant (end) ==
