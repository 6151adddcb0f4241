/*
 * openwop_interrupt 0.7.0 -> 0.8.0: every kind and every replay.  Each
 * part is in one block of its own.
 *
 * conversations: the table openwop.conversations behind the conversation.*
 * interrupt kinds (conversationPrimitive), and the inbox's comments naming
 * those kinds.
 * credentials: confirm_credential(), the host's OAuth callback confirming a
 * credential interrupt.
 * forks: openwop.forks and fork_run() (forkRun, replay and branch).
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION openwop_interrupt UPDATE TO '0.8.0'" to load this file. \quit

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
