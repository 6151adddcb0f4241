/*
 * openwop_interrupt 0.10.0 -> 0.11.0: secrets no reader can take, no crash
 * from a grantable function, workers no tenant can starve.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION openwop_interrupt UPDATE TO '0.11.0'" to load this file. \quit

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

/*
 * Whether the hot paths read and write each table directly or with SQL
 * statements, and why: a DBA's change to a table turns its direct path off
 * (the server log says so too).
 */
CREATE FUNCTION openwop.direct_path(OUT table_name text, OUT direct boolean, OUT reason text)
    RETURNS SETOF record AS 'MODULE_PATHNAME', 'ow_direct_path'
    LANGUAGE C STABLE;
COMMENT ON VIEW openwop.stats IS
  'Cumulative counters per database since the server started or openwop.stats_reset(): interrupts resolved by an answer, answers recorded without deciding (voted), deadlines applied (expired), reminders and escalations fired, notifications written to the outbox, dropped by its cap and given up after their last attempt, each counted when its transaction commits; and refusals by error code, counted when raised. Empty without the library in shared_preload_libraries.';
COMMENT ON COLUMN openwop.stats.event IS 'resolved, voted, expired, reminded, escalated, notified, notifications_dropped, notifications_dead or refused.';
COMMENT ON FUNCTION openwop.direct_path() IS
  'For each table the hot paths write (runs, events, interrupts, node_executions, group_members, open_interrupts): direct, whether they read and write it through the relation cache, or with SQL statements because a DBA changed it; reason, what the change is (a trigger, a rule, row security, a generated column, a column default or column the install script did not make, a retyped or dropped column, an index). See docs/operations.md.';
REVOKE ALL ON FUNCTION openwop.direct_path() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION openwop.direct_path() TO pg_monitor;

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

-- == 0.11.0: approval policies the DBA owns (begin) ==
/* ------------------------------------------------------------------------
 * Approval policies: rules a DBA keeps as data, per tenant, that only
 * strengthen the gates they match (README, "Approval policies (for
 * DBAs)").  Each change is a row of an append-only log: a new version of
 * a policy, or its retirement.  A gate pins the versions that match it
 * when it is raised (openwop.open_interrupts.policy): a later change never
 * reaches an open gate.  Set by the holders of openwop_policy_admin.
 * ---------------------------------------------------------------------- */
DO $do$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles
                    WHERE rolname OPERATOR(pg_catalog.=) 'openwop_policy_admin') THEN
        CREATE ROLE openwop_policy_admin NOLOGIN;
    END IF;
END
$do$;
COMMENT ON ROLE openwop_policy_admin IS
  'Sets and retires approval policies (openwop.set_approval_policy); created by openwop_interrupt. Grant it to the logins of the DBAs who own approval rules; superusers need the grant too.';

CREATE TABLE openwop.approval_policy_log (
    tenant      text COLLATE "C" NOT NULL,
    name        text COLLATE "C" NOT NULL,
    version     integer     NOT NULL,
    change      text COLLATE "C" NOT NULL,
    policy      jsonb,
    changed_by  text COLLATE "C" NOT NULL,
    changed_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant, name, version, change),
    CONSTRAINT approval_policy_log_change_known CHECK (change IN ('set', 'retire')),
    CONSTRAINT approval_policy_log_document CHECK ((change = 'set') = (policy IS NOT NULL)),
    CONSTRAINT approval_policy_log_version_positive CHECK (version > 0)
);
COMMENT ON TABLE openwop.approval_policy_log IS
  'Every change to an approval policy, append-only: a new version (change set, with the whole document) or the retirement of the latest version (change retire). Read it through openwop.approval_policies.';
COMMENT ON COLUMN openwop.approval_policy_log.tenant IS 'The tenant whose gates the policy governs.';
COMMENT ON COLUMN openwop.approval_policy_log.name IS 'The policy''s name, unique in its tenant.';
COMMENT ON COLUMN openwop.approval_policy_log.version IS 'The version set (1, 2, ...), or the version retired.';
COMMENT ON COLUMN openwop.approval_policy_log.change IS 'set: a new version; retire: the version stops applying to new gates.';
COMMENT ON COLUMN openwop.approval_policy_log.policy IS 'The policy document of a set (NULL for a retire).';
COMMENT ON COLUMN openwop.approval_policy_log.changed_by IS 'The login that made the change.';
COMMENT ON COLUMN openwop.approval_policy_log.changed_at IS 'When (the transaction''s start).';
SELECT pg_catalog.pg_extension_config_dump('openwop.approval_policy_log', '');
REVOKE ALL ON openwop.approval_policy_log FROM PUBLIC;

CREATE FUNCTION openwop.approval_policy_log_append_only() RETURNS trigger
    AS 'MODULE_PATHNAME', 'ow_approval_policy_log_append_only'
    LANGUAGE C;
COMMENT ON FUNCTION openwop.approval_policy_log_append_only() IS
  'Trigger of openwop.approval_policy_log: refuses UPDATE, DELETE and TRUNCATE, for every role.';
REVOKE ALL ON FUNCTION openwop.approval_policy_log_append_only() FROM PUBLIC;
CREATE TRIGGER approval_policy_log_append_only_row
    BEFORE UPDATE OR DELETE ON openwop.approval_policy_log
    FOR EACH ROW EXECUTE FUNCTION openwop.approval_policy_log_append_only();
CREATE TRIGGER approval_policy_log_append_only_truncate
    BEFORE TRUNCATE ON openwop.approval_policy_log
    FOR EACH STATEMENT EXECUTE FUNCTION openwop.approval_policy_log_append_only();
ALTER TABLE openwop.approval_policy_log ENABLE ALWAYS TRIGGER approval_policy_log_append_only_row;
ALTER TABLE openwop.approval_policy_log ENABLE ALWAYS TRIGGER approval_policy_log_append_only_truncate;
COMMENT ON TRIGGER approval_policy_log_append_only_row ON openwop.approval_policy_log IS
  'The policy log is append-only: no row is changed or removed, whatever session_replication_role says.';
COMMENT ON TRIGGER approval_policy_log_append_only_truncate ON openwop.approval_policy_log IS
  'The policy log is append-only: it is never truncated.';

/* The person on whose behalf the engine started a run (create_run's requested_by). */
ALTER TABLE openwop.runs ADD COLUMN requested_by text COLLATE "C";
COMMENT ON COLUMN openwop.runs.requested_by IS
  'The subject on whose behalf the engine started the run (create_run''s requested_by): a subjectId, or "<issuer>/<subjectId>"; NULL when not named. An approval policy with excludeRequester keeps them, and the run''s owner, from voting on its gates.';

CREATE FUNCTION openwop.set_approval_policy(name text, policy jsonb, tenant text DEFAULT NULL)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_set_approval_policy'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.set_approval_policy(text, jsonb, text) IS
  'Sets a new version of the approval policy name in tenant (the caller''s when NULL): {appliesTo: {workflowId, nodeId}, requiredApprovals, rejectionPolicy, groups: [{ref, required}], excludeRequester, maxTimeoutMs, dueAfterMs, calendar (a business calendar set in the tenant: the gate''s deadline and due date in its working time), overrideBypassesQuorum, description}. Gates raised from the commit on pin it; open gates keep what they pinned. Holders of openwop_policy_admin only. Returns {name, version, tenant}.';
CREATE FUNCTION openwop.retire_approval_policy(name text, tenant text DEFAULT NULL)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_retire_approval_policy'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.retire_approval_policy(text, text) IS
  'Retires the approval policy name in tenant (the caller''s when NULL): gates raised from the commit on no longer pin it; open gates keep what they pinned. Holders of openwop_policy_admin only. Returns {name, version, tenant, retired}.';
CREATE FUNCTION openwop.policy_admin_tenant()
    RETURNS text AS 'MODULE_PATHNAME', 'ow_policy_admin_tenant'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION openwop.policy_admin_tenant() IS
  'The tenant whose approval policies the caller administers: its own, "*" for a login that acts in every tenant, NULL for a caller that does not hold openwop_policy_admin. Used by openwop.approval_policies.';
REVOKE ALL ON FUNCTION openwop.set_approval_policy(text, jsonb, text),
    openwop.retire_approval_policy(text, text), openwop.policy_admin_tenant() FROM PUBLIC;

CREATE VIEW openwop.approval_policies WITH (security_barrier) AS
SELECT s.name,
       s.tenant,
       s.version,
       s.policy,
       s.changed_by AS set_by,
       s.changed_at AS set_at,
       r.changed_at AS retired_at,
       r.changed_by AS retired_by,
       (r.version IS NULL AND NOT EXISTS (
            SELECT FROM openwop.approval_policy_log n
             WHERE n.tenant OPERATOR(pg_catalog.=) s.tenant
               AND n.name OPERATOR(pg_catalog.=) s.name
               AND n.version OPERATOR(pg_catalog.>) s.version)) AS active
  FROM openwop.approval_policy_log s
  LEFT JOIN openwop.approval_policy_log r
         ON r.tenant OPERATOR(pg_catalog.=) s.tenant
        AND r.name OPERATOR(pg_catalog.=) s.name
        AND r.version OPERATOR(pg_catalog.=) s.version
        AND r.change OPERATOR(pg_catalog.=) 'retire'
 WHERE s.change OPERATOR(pg_catalog.=) 'set'
   AND (openwop.policy_admin_tenant() OPERATOR(pg_catalog.=) '*'
        OR s.tenant OPERATOR(pg_catalog.=) openwop.policy_admin_tenant());
COMMENT ON VIEW openwop.approval_policies IS
  'Every version of every approval policy of the tenants the caller administers (openwop_policy_admin): the document, who set it and when, when it was retired; active is true for the one version of a policy that new gates pin.';
COMMENT ON COLUMN openwop.approval_policies.name IS 'The policy''s name.';
COMMENT ON COLUMN openwop.approval_policies.tenant IS 'The tenant whose gates it governs.';
COMMENT ON COLUMN openwop.approval_policies.version IS 'The version (1, 2, ...).';
COMMENT ON COLUMN openwop.approval_policies.policy IS 'The policy document of this version.';
COMMENT ON COLUMN openwop.approval_policies.set_by IS 'The login that set this version.';
COMMENT ON COLUMN openwop.approval_policies.set_at IS 'When.';
COMMENT ON COLUMN openwop.approval_policies.retired_at IS 'When this version was retired (NULL: not retired; a version a later one replaced is not active either).';
COMMENT ON COLUMN openwop.approval_policies.retired_by IS 'The login that retired it.';
COMMENT ON COLUMN openwop.approval_policies.active IS 'New gates that match pin this version: it is the latest and not retired.';
REVOKE ALL ON openwop.approval_policies FROM PUBLIC;

GRANT USAGE ON SCHEMA openwop TO openwop_policy_admin;
GRANT EXECUTE ON FUNCTION openwop.set_approval_policy(text, jsonb, text),
    openwop.retire_approval_policy(text, text), openwop.policy_admin_tenant() TO openwop_policy_admin;
GRANT SELECT ON openwop.approval_policies TO openwop_policy_admin;

/*
 * What a gate pinned when it was raised (NULL when no policy matched): kept
 * with the interrupt, and on its open row for the resolve.
 */
ALTER TABLE openwop.interrupts ADD COLUMN policy jsonb;
COMMENT ON COLUMN openwop.interrupts.policy IS
  'The approval policies the gate pinned when it was raised, and the rule they make with its request (see openwop.open_interrupts.policy); NULL when none matched, and for every other kind.';
ALTER TABLE openwop.open_interrupts ADD COLUMN policy jsonb;
COMMENT ON COLUMN openwop.open_interrupts.policy IS
  'The approval policies the gate pinned when it was raised, and the rule they make with its request: {name, version, policies?, requiredApprovals, rejectionPolicy, groups, excludeRequester, overrideBypassesQuorum, timeoutMs?}; NULL when none matched (and for every other kind).';

/* The inbox shows the pinned policy, and decides with it. */
CREATE FUNCTION openwop.may_decide(tenant text, interrupt_id text, kind text, payload jsonb, policy jsonb)
    RETURNS boolean AS 'MODULE_PATHNAME', 'ow_may_decide'
    LANGUAGE C STABLE COST 10;
COMMENT ON FUNCTION openwop.may_decide(text, text, text, jsonb, jsonb) IS
  'May the caller resolve this pending interrupt now, by the rules resolve_interrupt applies: approvals:respond in the interrupt''s tenant; for an approval gate, eligibility (approversList, approverGroupRefs, approverRoleRefs and the groups of the policy it pinned; a gate naming none, under no policy with groups, is open to every holder of the scope), not its requester when the policy excludes them, and an answer left under openwop.max_votes_per_voter. The caller and its groups are read once per statement. Used by openwop.pending_interrupts.';
REVOKE ALL ON FUNCTION openwop.may_decide(text, text, text, jsonb, jsonb) FROM PUBLIC;

CREATE OR REPLACE VIEW openwop.pending_interrupts WITH (security_barrier) AS
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
            THEN COALESCE(pg_catalog.int4(o.policy OPERATOR(pg_catalog.->) 'requiredApprovals'::pg_catalog.text),
                          pg_catalog.int4((o.payload OPERATOR(pg_catalog.#>) '{data,requiredApprovals}'::pg_catalog.text[])), 1)
       END AS required_approvals,
       t.accepts,
       t.rejects,
       t.voters,
       m.action AS my_vote,
       m.cast_at AS my_vote_at,
       CASE WHEN o.policy IS NOT NULL
            THEN pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
                     'name', o.policy OPERATOR(pg_catalog.->) 'name'::pg_catalog.text,
                     'version', o.policy OPERATOR(pg_catalog.->) 'version'::pg_catalog.text,
                     'policies', o.policy OPERATOR(pg_catalog.->) 'policies'::pg_catalog.text))
       END AS policy,
       d.due_at,
       COALESCE(d.due_at OPERATOR(pg_catalog.<=) pg_catalog.clock_timestamp(), false) AS overdue
  FROM openwop.open_interrupts o
  CROSS JOIN LATERAL (
        -- the due date a policy set (dueAfterMs), else the deadline
        SELECT COALESCE(CAST(o.policy OPERATOR(pg_catalog.->>) 'dueAt'::pg_catalog.text AS pg_catalog.timestamptz),
                        o.expires_at) AS due_at) d
  LEFT JOIN LATERAL (
        -- the tally a resolve counts: each voter's latest answer, asks left out
        SELECT pg_catalog.int4(pg_catalog.count(*) FILTER (WHERE l.action OPERATOR(pg_catalog.=) ANY
                   ('{accept,edit-accept}'::pg_catalog.text[]))) AS accepts,
               pg_catalog.int4(pg_catalog.count(*) FILTER (WHERE l.action OPERATOR(pg_catalog.=)
                   'reject'::pg_catalog.text)) AS rejects,
               pg_catalog.int4(pg_catalog.count(*) FILTER (WHERE l.action OPERATOR(pg_catalog.<>) ALL
                   ('{withdraw,void}'::pg_catalog.text[]))) AS voters
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
   AND openwop.may_decide(o.tenant, o.interrupt_id, o.kind, o.payload, o.policy)
 ORDER BY o.created_at, o.interrupt_id;
COMMENT ON COLUMN openwop.pending_interrupts.required_approvals IS 'Accepts an approval gate needs: its rule with the policies it pinned (the larger of data.requiredApprovals, 1 when absent, and theirs); NULL for other kinds.';
COMMENT ON COLUMN openwop.pending_interrupts.voters IS 'Voters counted on the approval gate (latest answer other than ask, and neither withdrawn nor voided by a change of the artifact); NULL for other kinds.';
COMMENT ON COLUMN openwop.pending_interrupts.my_vote IS 'The caller''s own latest answer to the gate (accept, reject, refine, edit-accept, ask, withdraw, or void when a change of the artifact voided it), NULL if none is recorded.';
COMMENT ON COLUMN openwop.pending_interrupts.due_at IS 'When the interrupt falls due (openwop.due_at): the due date its approval policy set (dueAfterMs), else its deadline; in working time when the policy names a business calendar; NULL when it has neither.';
COMMENT ON COLUMN openwop.pending_interrupts.overdue IS 'due_at has passed (a gate past its deadline is decided by the timeout and leaves the inbox; one past a policy''s due date stays, overdue).';
COMMENT ON COLUMN openwop.pending_interrupts.policy IS 'The approval policy the gate pinned when it was raised, {name, version} (and policies, every one, when several matched); NULL when none did.';

/*
 * create_run takes the requester.  A DBA's grants on the functions whose
 * signature changes pass to the new ones; then the old ones go.
 */
CREATE FUNCTION openwop.create_run(workflow_id text, options jsonb DEFAULT '{}', requested_by text DEFAULT NULL)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_create_run'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.create_run(text, jsonb, text) IS
  'Creates a run of workflow_id in the caller''s tenant and appends run.started. options: tenant, runId, configurable, inputs, metadata, definition {nodes, edges}; callbackUrl is refused (callback delivery is not advertised). requested_by: the subject on whose behalf the engine starts the run (kept with it; an approval policy may keep them from voting on its gates). Returns {runId, status, workflowId, sequence}.';
REVOKE ALL ON FUNCTION openwop.create_run(text, jsonb, text) FROM PUBLIC;
/*
 * carry_grants(old, new): the EXECUTE grants a DBA gave on old, given on
 * new by the same grantors (an owner's grant with its grant option first,
 * then the grants the holders of that option made, each as its grantor),
 * so that revoking a grantor's option still takes its grants away.  It
 * lives for this script only (dropped at its end).
 */
CREATE FUNCTION openwop.carry_grants(old pg_catalog.regprocedure, new pg_catalog.regprocedure)
    RETURNS void LANGUAGE plpgsql
AS $carry$
DECLARE
    g record;
    given integer := -1;
BEGIN
    -- a round gives what the grants of the rounds before allow; until one gives nothing
    WHILE given IS DISTINCT FROM (SELECT pg_catalog.count(*) FROM pg_catalog.pg_proc q, pg_catalog.aclexplode(q.proacl) b
                                  WHERE q.oid OPERATOR(pg_catalog.=) new) LOOP
        given := (SELECT pg_catalog.count(*) FROM pg_catalog.pg_proc q, pg_catalog.aclexplode(q.proacl) b
                   WHERE q.oid OPERATOR(pg_catalog.=) new);
        FOR g IN
            SELECT a.grantor, a.grantee, a.is_grantable,
                   CASE WHEN a.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                        ELSE a.grantee::pg_catalog.regrole::pg_catalog.text END AS grantee_name
              FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
             WHERE p.oid OPERATOR(pg_catalog.=) old
               AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
               AND a.grantee OPERATOR(pg_catalog.<>) p.proowner
               -- not given yet, by a grantor who may give it now
               AND NOT EXISTS (SELECT FROM pg_catalog.pg_proc q, pg_catalog.aclexplode(q.proacl) b
                                WHERE q.oid OPERATOR(pg_catalog.=) new
                                  AND b.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
                                  AND b.grantor OPERATOR(pg_catalog.=) a.grantor
                                  AND b.grantee OPERATOR(pg_catalog.=) a.grantee)
               AND (a.grantor OPERATOR(pg_catalog.=) p.proowner
                    OR pg_catalog.has_function_privilege(a.grantor, new, 'EXECUTE WITH GRANT OPTION'))
        LOOP
            IF g.grantor OPERATOR(pg_catalog.<>) (SELECT proowner FROM pg_catalog.pg_proc WHERE oid OPERATOR(pg_catalog.=) new) THEN
                EXECUTE pg_catalog.format('SET ROLE %s', g.grantor::pg_catalog.regrole);
            END IF;
            EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s%s', new, g.grantee_name,
                                      CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
            RESET ROLE;
        END LOOP;
    END LOOP;
END
$carry$;

SELECT openwop.carry_grants('openwop.may_decide(text, text, text, jsonb)', 'openwop.may_decide(text, text, text, jsonb, jsonb)');
SELECT openwop.carry_grants('openwop.create_run(text, jsonb)', 'openwop.create_run(text, jsonb, text)');
DROP FUNCTION openwop.may_decide(text, text, text, jsonb);
DROP FUNCTION openwop.create_run(text, jsonb);

/* The router's shards take the requester, and answer the inbox's question with the pin. */
DROP FUNCTION openwop_forward.create_run(jsonb, text, jsonb);
CREATE FUNCTION openwop_forward.create_run(caller jsonb, workflow_id text, options jsonb DEFAULT '{}',
                                           requested_by text DEFAULT NULL)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.create_run(workflow_id, options, requested_by);
END
$$;
COMMENT ON FUNCTION openwop_forward.create_run(jsonb, text, jsonb, text) IS
  'openwop.create_run for the forwarded caller (its tenant is the run''s).';
REVOKE ALL ON FUNCTION openwop_forward.create_run(jsonb, text, jsonb, text) FROM PUBLIC;
DROP FUNCTION openwop_forward.may_decide(jsonb, text, text, text, jsonb);
CREATE FUNCTION openwop_forward.may_decide(caller jsonb, tenant text, interrupt_id text, kind text,
                                           payload jsonb, policy jsonb)
    RETURNS boolean LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN (SELECT openwop.may_decide(tenant, interrupt_id, kind, payload, policy));
END
$$;
COMMENT ON FUNCTION openwop_forward.may_decide(jsonb, text, text, text, jsonb, jsonb) IS
  'openwop.may_decide for the forwarded caller: may it resolve this pending interrupt now? Approver role refs match the shard''s own logins only, never a forwarded caller.';
REVOKE ALL ON FUNCTION openwop_forward.may_decide(jsonb, text, text, text, jsonb, jsonb) FROM PUBLIC;
/* ------------------------------------------------------------------------
 * Delegation: while an approver is away, a delegate votes on the gates the
 * approver may decide, once, as the approver, recorded "on behalf of";
 * never cascading, never on the delegate's own request.
 * ---------------------------------------------------------------------- */
CREATE TABLE openwop.approval_delegations (
    tenant         text COLLATE "C" NOT NULL,
    delegation_id  text COLLATE "C" NOT NULL,
    delegator      text COLLATE "C" NOT NULL,
    delegate       text COLLATE "C" NOT NULL,
    starts_at      timestamptz NOT NULL,
    ends_at        timestamptz NOT NULL,
    set_by         text COLLATE "C" NOT NULL,
    set_at         timestamptz NOT NULL,
    revoked_at     timestamptz,
    revoked_by     text COLLATE "C",
    PRIMARY KEY (tenant, delegation_id),
    CONSTRAINT approval_delegations_window CHECK (ends_at > starts_at),
    CONSTRAINT approval_delegations_not_to_oneself CHECK (delegator <> delegate),
    CONSTRAINT approval_delegations_revoked CHECK ((revoked_at IS NULL) = (revoked_by IS NULL))
);
CREATE INDEX approval_delegations_of_delegate ON openwop.approval_delegations (tenant, delegate, ends_at);
COMMENT ON TABLE openwop.approval_delegations IS
  'Delegations of approval: between starts_at and ends_at, unless revoked, delegate may vote on the gates delegator is eligible for, as delegator (one vote, recorded on behalf of). Read it through openwop.delegations.';
COMMENT ON INDEX openwop.approval_delegations_of_delegate IS
  'The delegations a voter holds, looked up when it is not eligible itself.';
COMMENT ON COLUMN openwop.approval_delegations.tenant IS 'The tenant of both people.';
COMMENT ON COLUMN openwop.approval_delegations.delegation_id IS 'Tenant-bound id, "<tenant>/<opaque>".';
COMMENT ON COLUMN openwop.approval_delegations.delegator IS 'Whose eligibility is delegated: a subjectId, or "<issuer>/<subjectId>".';
COMMENT ON COLUMN openwop.approval_delegations.delegate IS 'Who may use it: a subjectId, or "<issuer>/<subjectId>".';
COMMENT ON COLUMN openwop.approval_delegations.starts_at IS 'From when.';
COMMENT ON COLUMN openwop.approval_delegations.ends_at IS 'Until when (exclusive).';
COMMENT ON COLUMN openwop.approval_delegations.set_by IS 'Who set it: the delegator, or the policy admin who set it for them.';
COMMENT ON COLUMN openwop.approval_delegations.set_at IS 'When.';
COMMENT ON COLUMN openwop.approval_delegations.revoked_at IS 'When it was revoked; NULL while it is not.';
COMMENT ON COLUMN openwop.approval_delegations.revoked_by IS 'Who revoked it.';
SELECT pg_catalog.pg_extension_config_dump('openwop.approval_delegations', '');
REVOKE ALL ON openwop.approval_delegations FROM PUBLIC;

CREATE FUNCTION openwop.delegate_approvals(delegate text, starts_at timestamptz, ends_at timestamptz,
                                           tenant text DEFAULT NULL)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_delegate_approvals'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.delegate_approvals(text, timestamptz, timestamptz, text) IS
  'The caller (an approver: approvals:respond) delegates its own eligibility to delegate between starts_at and ends_at, in its tenant. Returns {delegationId, delegator, delegate, startsAt, endsAt, tenant}.';
CREATE FUNCTION openwop.set_delegation(delegator text, delegate text, starts_at timestamptz, ends_at timestamptz,
                                       tenant text DEFAULT NULL)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_set_delegation'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.set_delegation(text, text, timestamptz, timestamptz, text) IS
  'A policy admin (openwop_policy_admin) delegates delegator''s eligibility to delegate between starts_at and ends_at, in tenant (its own when NULL). Returns what delegate_approvals returns.';
CREATE FUNCTION openwop.revoke_delegation(delegation_id text)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_revoke_delegation'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.revoke_delegation(text) IS
  'Revokes a delegation from the commit on: its delegate votes no more, and tokens minted for it stop resolving. Its delegator, its delegate, or a policy admin of its tenant. Returns {delegationId, revoked, changed}.';
CREATE FUNCTION openwop.delegation_viewer()
    RETURNS text[] AS 'MODULE_PATHNAME', 'ow_delegation_viewer'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION openwop.delegation_viewer() IS
  'Whose delegations the caller sees, {tenant, subjectId, admin or self, issuer-qualified subject}: every one of its tenant ("*": of every tenant) for a policy admin, else its own, as delegator or delegate. Used by openwop.delegations.';
REVOKE ALL ON FUNCTION openwop.delegate_approvals(text, timestamptz, timestamptz, text),
    openwop.set_delegation(text, text, timestamptz, timestamptz, text),
    openwop.revoke_delegation(text), openwop.delegation_viewer() FROM PUBLIC;

CREATE VIEW openwop.delegations WITH (security_barrier) AS
SELECT d.delegation_id,
       d.tenant,
       d.delegator,
       d.delegate,
       d.starts_at,
       d.ends_at,
       d.set_by,
       d.set_at,
       d.revoked_at,
       d.revoked_by,
       (d.revoked_at IS NULL AND d.starts_at OPERATOR(pg_catalog.<=) pg_catalog.now()
        AND d.ends_at OPERATOR(pg_catalog.>) pg_catalog.now()) AS active
  FROM openwop.approval_delegations d, openwop.delegation_viewer() v
 WHERE (v[1] OPERATOR(pg_catalog.=) '*' OR d.tenant OPERATOR(pg_catalog.=) v[1])
   AND (v[3] OPERATOR(pg_catalog.=) 'admin'
        OR d.delegator OPERATOR(pg_catalog.=) ANY (ARRAY[v[2], v[4]])
        OR d.delegate OPERATOR(pg_catalog.=) ANY (ARRAY[v[2], v[4]]));
COMMENT ON VIEW openwop.delegations IS
  'Delegations of approval the caller may see: a policy admin every one of its tenant, anyone else its own, as delegator or delegate. active: in its window and not revoked.';
COMMENT ON COLUMN openwop.delegations.delegation_id IS 'For revoke_delegation().';
COMMENT ON COLUMN openwop.delegations.tenant IS 'The tenant.';
COMMENT ON COLUMN openwop.delegations.delegator IS 'Whose eligibility is delegated.';
COMMENT ON COLUMN openwop.delegations.delegate IS 'Who may use it.';
COMMENT ON COLUMN openwop.delegations.starts_at IS 'From when.';
COMMENT ON COLUMN openwop.delegations.ends_at IS 'Until when (exclusive).';
COMMENT ON COLUMN openwop.delegations.set_by IS 'Who set it.';
COMMENT ON COLUMN openwop.delegations.set_at IS 'When.';
COMMENT ON COLUMN openwop.delegations.revoked_at IS 'When it was revoked, or NULL.';
COMMENT ON COLUMN openwop.delegations.revoked_by IS 'Who revoked it, or NULL.';
COMMENT ON COLUMN openwop.delegations.active IS 'The delegate may vote now: in its window and not revoked.';
REVOKE ALL ON openwop.delegations FROM PUBLIC;
GRANT EXECUTE ON FUNCTION openwop.set_delegation(text, text, timestamptz, timestamptz, text),
    openwop.revoke_delegation(text), openwop.delegation_viewer() TO openwop_policy_admin;
GRANT SELECT ON openwop.delegations TO openwop_policy_admin;
-- == approval policies the DBA owns (end) ==

-- == 0.11.0: the approver takes a vote back (begin) ==
/* ------------------------------------------------------------------------
 * A voter withdraws its counted vote on a pending gate: a new revision,
 * action withdraw, that the tally does not count.
 * ---------------------------------------------------------------------- */
COMMENT ON COLUMN openwop.votes.action IS 'accept, reject, refine, edit-accept, ask, withdraw (the voter took its counted vote back), or void (artifact_changed voided it: the artifact it approved changed).';
CREATE FUNCTION openwop.withdraw_vote(run_id text, node_id text)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_withdraw_vote'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.withdraw_vote(text, text) IS
  'The caller takes back its counted vote (its own, or the one it cast for a delegator) on the pending approval gate of node_id: a new revision, action withdraw, under the run lock; answered {status: pending, action: withdraw, counted: false, tally}. 404 without a counted vote, 409 on a decided gate; needs approvals:respond.';
REVOKE ALL ON FUNCTION openwop.withdraw_vote(text, text) FROM PUBLIC;

CREATE FUNCTION openwop_forward.withdraw_vote(caller jsonb, run_id text, node_id text)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.withdraw_vote(run_id, node_id);
END
$$;
COMMENT ON FUNCTION openwop_forward.withdraw_vote(jsonb, text, text) IS
  'openwop.withdraw_vote for the forwarded caller.';
REVOKE ALL ON FUNCTION openwop_forward.withdraw_vote(jsonb, text, text) FROM PUBLIC;
-- == the approver takes a vote back (end) ==

-- == 0.11.0: each run's events chained by hash, receipts, verify_run (begin) ==
/* ----------------------------------------------------------------------
 * Every event carries the SHA-256 of its canonical form, which names the
 * hash of the run's event before it (src/store/chain.c, README "Receipts
 * and the hash chain"); the run row keeps its latest event's, which the
 * next append chains on.  verify_run() recomputes a run's chain; a
 * resolution's answer carries a receipt with its event's hash.
 * ---------------------------------------------------------------------- */
CREATE FUNCTION openwop.event_hash(prev bytea, sequence bigint, type text, node_id text,
                                   payload jsonb, created_at timestamptz, schema_version integer,
                                   causation_id text)
    RETURNS bytea AS 'MODULE_PATHNAME', 'ow_event_hash_sql'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION openwop.event_hash(bytea, bigint, text, text, jsonb, timestamptz, integer, text) IS
  'SHA-256 of an event''s canonical form, jsonb_build_array(encode(prev, ''hex''), sequence, type, node_id, microseconds of created_at since 1970-01-01 UTC, schema_version, causation_id, payload)::text in the database''s encoding; prev is the hash of the run''s event before it, null for event 0.';
CREATE AGGREGATE openwop.event_chain(bigint, text, text, jsonb, timestamptz, integer, text) (
    SFUNC = openwop.event_hash,
    STYPE = bytea
);
COMMENT ON AGGREGATE openwop.event_chain(bigint, text, text, jsonb, timestamptz, integer, text) IS
  'The hash chain over a run''s events (sequence, type, node_id, payload, created_at, schema_version, causation_id), used as a window in sequence order: each row gets its event''s hash.';

ALTER TABLE openwop.events ADD COLUMN hash bytea;
ALTER TABLE openwop.runs ADD COLUMN event_hash bytea;
COMMENT ON COLUMN openwop.events.hash IS
  'SHA-256 of the event''s canonical form, chained to the run''s event before it (openwop.event_hash); openwop.verify_run() recomputes the chain.';
COMMENT ON COLUMN openwop.runs.event_hash IS
  'The hash of the run''s latest event: the next event chains on it.';

-- the events recorded before 0.11.0 are chained once, in sequence order
ALTER TABLE openwop.events DISABLE TRIGGER events_append_only_row;
UPDATE openwop.events e
   SET hash = c.hash
  FROM (SELECT tenant, run_id, sequence,
               openwop.event_chain(sequence, type, node_id, payload, created_at, schema_version, causation_id)
                 OVER (PARTITION BY tenant, run_id ORDER BY sequence ROWS UNBOUNDED PRECEDING) AS hash
          FROM openwop.events) c
 WHERE e.tenant = c.tenant AND e.run_id = c.run_id AND e.sequence = c.sequence;
ALTER TABLE openwop.events ENABLE ALWAYS TRIGGER events_append_only_row;
ALTER TABLE openwop.events ALTER COLUMN hash SET NOT NULL;
UPDATE openwop.runs r
   SET event_hash = e.hash
  FROM openwop.events e
 WHERE e.tenant = r.tenant AND e.run_id = r.run_id AND e.sequence = r.next_sequence - 1;

CREATE FUNCTION openwop.verify_run(run_id text)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_verify_run'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION openwop.verify_run(text) IS
  'Recomputes the run''s hash chain: {valid, brokenAt, events, head}. brokenAt is the sequence of the first event missing, moved or not matching its hash (null when valid); head is the last event''s hash, to compare with a receipt. A run of the caller''s tenant.';
REVOKE ALL ON FUNCTION openwop.verify_run(text) FROM PUBLIC;
-- the chain's own: the fork's copy and verify_run() run them as the owner
REVOKE ALL ON FUNCTION openwop.event_hash(bytea, bigint, text, text, jsonb, timestamptz, integer, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION openwop.event_chain(bigint, text, text, jsonb, timestamptz, integer, text) FROM PUBLIC;

CREATE FUNCTION openwop_forward.verify_run(caller jsonb, run_id text)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.verify_run(run_id);
END
$$;
COMMENT ON FUNCTION openwop_forward.verify_run(jsonb, text) IS
  'openwop.verify_run for the forwarded caller.';
REVOKE ALL ON FUNCTION openwop_forward.verify_run(jsonb, text) FROM PUBLIC;
-- == each run's events chained by hash, receipts, verify_run (end) ==

-- == 0.11.0: one answer to many interrupts (begin) ==
/* ----------------------------------------------------------------------
 * resolve_interrupts: each interrupt resolved in a subtransaction of its
 * own, exactly as resolve_interrupt resolves it, and itemised with the
 * HTTP status and body the single call answers (src/api/bulk.c).
 * ---------------------------------------------------------------------- */
CREATE FUNCTION openwop.resolve_interrupts(interrupt_ids text[], resume_value jsonb,
                                           idempotency_key text DEFAULT NULL)
    RETURNS TABLE (interrupt_id text, status integer, result jsonb)
    AS 'MODULE_PATHNAME', 'ow_resolve_interrupts'
    LANGUAGE C VOLATILE ROWS 50;
COMMENT ON FUNCTION openwop.resolve_interrupts(text[], jsonb, text) IS
  'Answers each interrupt of interrupt_ids with resume_value, each in a subtransaction of its own, exactly as resolve_interrupt would (eligibility, policies, quorum, the record): one row per id, in the order given, with the HTTP status (200, 400, 403, 404, 409, 422) and body the single call answers; a refused item undoes no other. At most openwop.bulk_resolve_max ids (400 validation_error beyond). Under idempotency_key a repeated call replays every item''s answer. Needs approvals:respond.';
REVOKE ALL ON FUNCTION openwop.resolve_interrupts(text[], jsonb, text) FROM PUBLIC;

CREATE FUNCTION openwop_forward.resolve_interrupts(caller jsonb, interrupt_ids text[], resume_value jsonb,
                                                   idempotency_key text DEFAULT NULL)
    RETURNS TABLE (interrupt_id text, status integer, result jsonb)
    LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = '' ROWS 50
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN QUERY SELECT r.interrupt_id, r.status, r.result
                   FROM openwop.resolve_interrupts(interrupt_ids, resume_value, idempotency_key) r;
END
$$;
COMMENT ON FUNCTION openwop_forward.resolve_interrupts(jsonb, text[], jsonb, text) IS
  'openwop.resolve_interrupts for the forwarded caller.';
REVOKE ALL ON FUNCTION openwop_forward.resolve_interrupts(jsonb, text[], jsonb, text) FROM PUBLIC;
-- == one answer to many interrupts (end) ==

-- == 0.11.0: withdrawing and deciding many over PostgREST (begin) ==
CREATE FUNCTION openwop_api."withdrawVote"(json)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_api_withdraw_vote'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop_api."withdrawVote"(json) IS
E'withdrawVote: take back the caller''s counted vote on a pending approval gate\n'
 'POST a JSON body {"runId": "<tenant>/<id>", "nodeId": "<node>"} and nothing else. The caller needs the approvals:respond scope and must still be eligible on the gate. '
 '200: {status: "pending", action: "withdraw", counted: false, tally, runId, nodeId, interruptId}. '
 'Refusals, as {error, message, details}: 400 validation_error; 401 identity_unresolvable; 403 forbidden, id_tenant_mismatch; 404 not_found (no counted vote to withdraw); 409 interrupt_already_resolved. '
 'It calls openwop.withdraw_vote.';

CREATE FUNCTION openwop_api."resolveInterrupts"(json)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_api_resolve_interrupts'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop_api."resolveInterrupts"(json) IS
E'resolveInterrupts: give one answer to many interrupts\n'
 'POST a JSON body {"interruptIds": ["<tenant>/<id>", ...], "resumeValue": <the answer>} and nothing else; an optional Idempotency-Key header replays every item of a retry. '
 'Each interrupt is answered as resolveInterruptByRun would answer it, in a transaction of its own within the request: a refused item undoes no other. '
 '200: {items: [{interruptId, status, result}]} in the order given, status and result being the HTTP status and body of the single call. '
 'Refusals, as {error, message, details}, of the whole request: 400 validation_error (more than openwop.bulk_resolve_max ids), idempotency_key_invalid; 401 identity_unresolvable; 403 forbidden (no approvals:respond); 409 idempotency_key_mismatch, idempotency_in_flight. '
 'It calls openwop.resolve_interrupts.';

REVOKE ALL ON FUNCTION
    openwop_api."withdrawVote"(json),
    openwop_api."resolveInterrupts"(json)
FROM PUBLIC;
-- == withdrawing and deciding many over PostgREST (end) ==

-- == 0.11.0: approvals bound to what was approved (begin) ==
/* ----------------------------------------------------------------------
 * The engine tells the gate which version of the artifact it shows
 * (artifact_changed: a digest it computes); each counted vote records the
 * digest current when it was cast, and a new digest voids every counted
 * vote bound to another (a revision, action void, that the tally does not
 * count; the change, with the votes it voided, in artifact_changes).  A
 * voter may say which digest it looked at (openwop.artifact_digest, or
 * If-Match over HTTP): another one is 412 precondition_failed.
 * ---------------------------------------------------------------------- */
ALTER TABLE openwop.open_interrupts ADD COLUMN artifact_digest text COLLATE "C";
COMMENT ON COLUMN openwop.open_interrupts.artifact_digest IS
  'The digest of the artifact the gate shows now, as the engine last told it (artifact_changed); NULL until it does.';
ALTER TABLE openwop.votes ADD COLUMN artifact_digest text COLLATE "C";
COMMENT ON COLUMN openwop.votes.artifact_digest IS
  'The digest of the artifact current when the vote was cast (NULL: none was told); on a void, the digest that voided it.';

CREATE TABLE openwop.artifact_changes (
    tenant          text COLLATE "C" NOT NULL,
    interrupt_id    text COLLATE "C" NOT NULL,
    change          integer     NOT NULL,
    run_id          text COLLATE "C" NOT NULL,
    node_id         text COLLATE "C" NOT NULL,
    digest          text COLLATE "C" NOT NULL,
    previous_digest text COLLATE "C",
    reason          text,
    changed_by      jsonb       NOT NULL,
    changed_at      timestamptz NOT NULL DEFAULT pg_catalog.now(),
    voided          jsonb       NOT NULL,
    PRIMARY KEY (tenant, interrupt_id, change)
);
COMMENT ON TABLE openwop.artifact_changes IS
  'Each change of the artifact of a pending approval gate the engine told (artifact_changed), and the votes it voided: append-only (a trigger refuses UPDATE, DELETE and TRUNCATE).';
COMMENT ON COLUMN openwop.artifact_changes.tenant IS 'Tenant of the run.';
COMMENT ON COLUMN openwop.artifact_changes.interrupt_id IS 'The approval gate whose artifact changed.';
COMMENT ON COLUMN openwop.artifact_changes.change IS '1 for the gate''s first digest, +1 for each change.';
COMMENT ON COLUMN openwop.artifact_changes.run_id IS 'The gate''s run.';
COMMENT ON COLUMN openwop.artifact_changes.node_id IS 'The gate''s node.';
COMMENT ON COLUMN openwop.artifact_changes.changed_at IS 'When the engine told it.';
COMMENT ON COLUMN openwop.artifact_changes.digest IS 'The new digest.';
COMMENT ON COLUMN openwop.artifact_changes.previous_digest IS 'The digest it replaced, NULL for the first.';
COMMENT ON COLUMN openwop.artifact_changes.reason IS 'Why, as the engine said it.';
COMMENT ON COLUMN openwop.artifact_changes.changed_by IS 'The Subject of the caller of artifact_changed.';
COMMENT ON COLUMN openwop.artifact_changes.voided IS 'The counted votes it voided: [{voter, digest, action}], digest being the one each was cast under.';
SELECT pg_catalog.pg_extension_config_dump('openwop.artifact_changes', '');
REVOKE ALL ON openwop.artifact_changes FROM PUBLIC;

CREATE FUNCTION openwop.artifact_changes_append_only()
    RETURNS trigger AS 'MODULE_PATHNAME', 'ow_artifact_changes_append_only'
    LANGUAGE C;
COMMENT ON FUNCTION openwop.artifact_changes_append_only() IS
  'Trigger function of openwop.artifact_changes: refuses UPDATE, DELETE and TRUNCATE for every role.';
REVOKE ALL ON FUNCTION openwop.artifact_changes_append_only() FROM PUBLIC;
CREATE TRIGGER artifact_changes_append_only_row
    BEFORE UPDATE OR DELETE ON openwop.artifact_changes
    FOR EACH ROW EXECUTE FUNCTION openwop.artifact_changes_append_only();
CREATE TRIGGER artifact_changes_append_only_truncate
    BEFORE TRUNCATE ON openwop.artifact_changes
    FOR EACH STATEMENT EXECUTE FUNCTION openwop.artifact_changes_append_only();
ALTER TABLE openwop.artifact_changes ENABLE ALWAYS TRIGGER artifact_changes_append_only_row;
ALTER TABLE openwop.artifact_changes ENABLE ALWAYS TRIGGER artifact_changes_append_only_truncate;
COMMENT ON TRIGGER artifact_changes_append_only_row ON openwop.artifact_changes IS
  'The record of artifact changes is append-only, for every role.';
COMMENT ON TRIGGER artifact_changes_append_only_truncate ON openwop.artifact_changes IS
  'The record of artifact changes is append-only, for every role.';

CREATE FUNCTION openwop.artifact_changed(run_id text, node_id text, artifact_digest text, reason text DEFAULT NULL)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_artifact_changed'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.artifact_changed(text, text, text, text) IS
  'The engine tells the pending approval gate of node_id which version of its artifact it shows (a digest it computes, e.g. sha256 of the artifact): a new digest voids every counted vote bound to another, so the gate needs its quorum again; the same digest again changes nothing. Answers {changed, digest, previousDigest, voided: [{voter, digest, action}], runId, nodeId, interruptId}. 404 for no interrupt, 409 for a decided gate or another kind.';
REVOKE ALL ON FUNCTION openwop.artifact_changed(text, text, text, text) FROM PUBLIC;

CREATE FUNCTION openwop_forward.artifact_changed(caller jsonb, run_id text, node_id text, artifact_digest text,
                                                 reason text DEFAULT NULL)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.artifact_changed(run_id, node_id, artifact_digest, reason);
END
$$;
COMMENT ON FUNCTION openwop_forward.artifact_changed(jsonb, text, text, text, text) IS
  'openwop.artifact_changed for the forwarded caller.';
REVOKE ALL ON FUNCTION openwop_forward.artifact_changed(jsonb, text, text, text, text) FROM PUBLIC;
-- == approvals bound to what was approved (end) ==

-- == business calendars and due dates (begin) ==
/* ------------------------------------------------------------------------
 * Business calendars the DBA owns: versioned documents (a time zone,
 * working hours for each day of the week, holidays) in an append-only
 * log.  An approval policy that names one (calendar) makes the gates it
 * pins measure their deadline, and the due date it sets (dueAfterMs), in
 * working time on the version current when the gate is raised.
 * ---------------------------------------------------------------------- */
CREATE TABLE openwop.calendar_log (
    tenant      text COLLATE "C" NOT NULL,
    name        text COLLATE "C" NOT NULL,
    version     integer     NOT NULL,
    calendar    jsonb       NOT NULL,
    changed_by  text COLLATE "C" NOT NULL,
    changed_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant, name, version),
    CONSTRAINT calendar_log_version_positive CHECK (version > 0)
);
COMMENT ON TABLE openwop.calendar_log IS
  'Every version of every business calendar, append-only. Read it through openwop.calendars.';
COMMENT ON COLUMN openwop.calendar_log.tenant IS 'The tenant whose policies may name the calendar.';
COMMENT ON COLUMN openwop.calendar_log.name IS 'The calendar''s name, unique in its tenant.';
COMMENT ON COLUMN openwop.calendar_log.version IS 'The version (1, 2, ...); gates pin the latest when they are raised.';
COMMENT ON COLUMN openwop.calendar_log.calendar IS 'The calendar document: {timezone, week: {mon: [["09:00", "17:00"]], ...}, holidays: ["YYYY-MM-DD", ...], description}.';
COMMENT ON COLUMN openwop.calendar_log.changed_by IS 'The login that set the version.';
COMMENT ON COLUMN openwop.calendar_log.changed_at IS 'When (the transaction''s start).';
SELECT pg_catalog.pg_extension_config_dump('openwop.calendar_log', '');
REVOKE ALL ON openwop.calendar_log FROM PUBLIC;

CREATE FUNCTION openwop.calendar_log_append_only() RETURNS trigger
    AS 'MODULE_PATHNAME', 'ow_calendar_log_append_only'
    LANGUAGE C;
COMMENT ON FUNCTION openwop.calendar_log_append_only() IS
  'Trigger of openwop.calendar_log: refuses UPDATE, DELETE and TRUNCATE, for every role.';
REVOKE ALL ON FUNCTION openwop.calendar_log_append_only() FROM PUBLIC;
CREATE TRIGGER calendar_log_append_only_row
    BEFORE UPDATE OR DELETE ON openwop.calendar_log
    FOR EACH ROW EXECUTE FUNCTION openwop.calendar_log_append_only();
CREATE TRIGGER calendar_log_append_only_truncate
    BEFORE TRUNCATE ON openwop.calendar_log
    FOR EACH STATEMENT EXECUTE FUNCTION openwop.calendar_log_append_only();
ALTER TABLE openwop.calendar_log ENABLE ALWAYS TRIGGER calendar_log_append_only_row;
ALTER TABLE openwop.calendar_log ENABLE ALWAYS TRIGGER calendar_log_append_only_truncate;
COMMENT ON TRIGGER calendar_log_append_only_row ON openwop.calendar_log IS
  'The calendar log is append-only: no version is changed or removed, whatever session_replication_role says.';
COMMENT ON TRIGGER calendar_log_append_only_truncate ON openwop.calendar_log IS
  'The calendar log is append-only: it is never truncated.';

CREATE FUNCTION openwop.set_calendar(name text, calendar jsonb, tenant text DEFAULT NULL)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_set_calendar'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.set_calendar(text, jsonb, text) IS
  'Sets a new version of the business calendar name in tenant (the caller''s when NULL): {timezone (an IANA name), week: {mon, tue, wed, thu, fri, sat, sun: [["HH:MM", "HH:MM"], ...] local working hours}, holidays: ["YYYY-MM-DD", ...], description}. Gates raised from the commit on under a policy naming it pin it; open gates keep their deadlines. Holders of openwop_policy_admin only. Returns {name, version, tenant}.';
CREATE FUNCTION openwop.calendar_due(name text, "from" timestamptz, after_ms bigint, tenant text DEFAULT NULL)
    RETURNS timestamptz AS 'MODULE_PATHNAME', 'ow_calendar_due'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION openwop.calendar_due(text, timestamptz, bigint, text) IS
  'When after_ms milliseconds of the business calendar''s working time, counted from "from", have passed: the deadline of a gate raised then with that timeout under a policy naming the calendar (its latest version). NULL when that is more than 100 years away (such a gate never falls due). 404 for a calendar never set. Holders of openwop_policy_admin only.';
REVOKE ALL ON FUNCTION openwop.set_calendar(text, jsonb, text),
    openwop.calendar_due(text, timestamptz, bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION openwop.set_calendar(text, jsonb, text),
    openwop.calendar_due(text, timestamptz, bigint, text) TO openwop_policy_admin;

CREATE VIEW openwop.calendars WITH (security_barrier) AS
SELECT c.name,
       c.tenant,
       c.version,
       c.calendar,
       c.changed_by AS set_by,
       c.changed_at AS set_at,
       NOT EXISTS (SELECT FROM openwop.calendar_log n
                    WHERE n.tenant OPERATOR(pg_catalog.=) c.tenant
                      AND n.name OPERATOR(pg_catalog.=) c.name
                      AND n.version OPERATOR(pg_catalog.>) c.version) AS active
  FROM openwop.calendar_log c
 WHERE openwop.policy_admin_tenant() OPERATOR(pg_catalog.=) '*'
    OR c.tenant OPERATOR(pg_catalog.=) openwop.policy_admin_tenant();
COMMENT ON VIEW openwop.calendars IS
  'Every version of every business calendar of the tenants the caller administers (openwop_policy_admin); active is true for the latest, the one gates raised now pin.';
COMMENT ON COLUMN openwop.calendars.name IS 'The calendar''s name.';
COMMENT ON COLUMN openwop.calendars.tenant IS 'The tenant whose policies may name it.';
COMMENT ON COLUMN openwop.calendars.version IS 'The version (1, 2, ...).';
COMMENT ON COLUMN openwop.calendars.calendar IS 'The calendar document of this version.';
COMMENT ON COLUMN openwop.calendars.set_by IS 'The login that set this version.';
COMMENT ON COLUMN openwop.calendars.set_at IS 'When.';
COMMENT ON COLUMN openwop.calendars.active IS 'Gates raised now under a policy naming the calendar pin this version: it is the latest.';
REVOKE ALL ON openwop.calendars FROM PUBLIC;
GRANT SELECT ON openwop.calendars TO openwop_policy_admin;

CREATE FUNCTION openwop.due_at(interrupt_id text)
    RETURNS timestamptz AS 'MODULE_PATHNAME', 'ow_due_at'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION openwop.due_at(text) IS
  'When the interrupt falls due: the due date its approval policy set (dueAfterMs), else its deadline (timeoutMs, or the policy''s maxTimeoutMs), each in working time when the policy names a business calendar; NULL when it has neither. Readable by holders of approvals:respond and roles that may read event logs. 404 for an interrupt not in the caller''s tenant.';
REVOKE ALL ON FUNCTION openwop.due_at(text) FROM PUBLIC;

CREATE FUNCTION openwop_forward.due_at(caller jsonb, interrupt_id text)
    RETURNS timestamptz LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.due_at(interrupt_id);
END
$$;
COMMENT ON FUNCTION openwop_forward.due_at(jsonb, text) IS
  'openwop.due_at for the forwarded caller.';
REVOKE ALL ON FUNCTION openwop_forward.due_at(jsonb, text) FROM PUBLIC;
-- == business calendars and due dates (end) ==

-- == 0.11.0: reminders, escalation and the notification outbox (begin) ==
/* ------------------------------------------------------------------------
 * A policy's reminder ladder and escalations are planned when a gate pins
 * it: one row per step, its instant computed on the pinned calendar (or
 * the wall clock).  The database worker fires each step once, when it is
 * due, under the run's lock: it sets fired_at and writes the step's
 * notifications in the same transaction.  A step of a gate that closed
 * before it fell due is removed then, unfired.
 * ---------------------------------------------------------------------- */
CREATE TABLE openwop.gate_steps (
    tenant       text COLLATE "C" NOT NULL,
    interrupt_id text COLLATE "C" NOT NULL,
    step         integer     NOT NULL,
    kind         text        NOT NULL,
    run_id       text COLLATE "C" NOT NULL,
    due_at       timestamptz NOT NULL,
    group_ref    text COLLATE "C",
    fired_at     timestamptz,
    notified     integer,
    PRIMARY KEY (tenant, interrupt_id, step),
    CONSTRAINT gate_steps_kind_known CHECK (kind IN ('reminder', 'escalation')),
    CONSTRAINT gate_steps_escalation_group CHECK ((kind = 'escalation') = (group_ref IS NOT NULL)),
    CONSTRAINT gate_steps_step_positive CHECK (step > 0)
);
-- the worker's fair rounds: tenants with due steps, then each tenant's oldest
CREATE INDEX gate_steps_due ON openwop.gate_steps (tenant, due_at, interrupt_id, step)
    WHERE fired_at IS NULL;
COMMENT ON TABLE openwop.gate_steps IS
  'The reminders and escalations of the approval gates: planned when a gate pins a policy with reminders or escalation, fired once each by the database worker when due (fired_at), or removed unfired when the gate closed first.';
COMMENT ON COLUMN openwop.gate_steps.tenant IS 'The gate''s tenant.';
COMMENT ON COLUMN openwop.gate_steps.interrupt_id IS 'The gate.';
COMMENT ON COLUMN openwop.gate_steps.step IS 'The step''s place among the gate''s steps, in the order they fall due (1, 2, ...).';
COMMENT ON COLUMN openwop.gate_steps.kind IS 'reminder: the eligible approvers who have not voted are reminded; escalation: the members of group_ref become eligible voters.';
COMMENT ON COLUMN openwop.gate_steps.run_id IS 'The gate''s run.';
COMMENT ON COLUMN openwop.gate_steps.due_at IS 'When the step falls due: afterMs after the raise, in working time when the gate pinned a business calendar.';
COMMENT ON COLUMN openwop.gate_steps.group_ref IS 'An escalation''s group; NULL for a reminder.';
COMMENT ON COLUMN openwop.gate_steps.fired_at IS 'When the worker fired the step; NULL while it waits.';
COMMENT ON COLUMN openwop.gate_steps.notified IS 'How many notifications the step wrote (0 with the outbox off).';
SELECT pg_catalog.pg_extension_config_dump('openwop.gate_steps', '');
REVOKE ALL ON openwop.gate_steps FROM PUBLIC;

/* ------------------------------------------------------------------------
 * The notification outbox: a row for each person who should hear of an
 * approval gate's event, written in the transaction of the event while
 * openwop.notification_outbox is on.  Senders claim rows with a lease
 * (claim_notifications, SKIP LOCKED) and acknowledge them
 * (ack_notifications), which removes them; a row whose lease ends
 * unacknowledged is claimed again, until openwop.notification_max_attempts,
 * then it is dead: moved to dead_notifications, which the database worker
 * empties after openwop.notification_retention.  The worker also keeps
 * each tenant's undelivered rows under openwop.notification_cap (the
 * oldest kept, the rest dropped and counted in notification_drops).
 * ---------------------------------------------------------------------- */
DO $do$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles
                    WHERE rolname OPERATOR(pg_catalog.=) 'openwop_notification_sender') THEN
        CREATE ROLE openwop_notification_sender NOLOGIN;
    END IF;
END
$do$;
COMMENT ON ROLE openwop_notification_sender IS
  'Claims and acknowledges the notification outbox (claim_notifications, ack_notifications): grant it to the login of a sender program, bound to a tenant or acting in every tenant.';

CREATE SEQUENCE openwop.notification_ids;
CREATE TABLE openwop.notifications (
    id           bigint      NOT NULL DEFAULT pg_catalog.nextval('openwop.notification_ids'::pg_catalog.regclass),
    tenant       text COLLATE "C" NOT NULL,
    kind         text        NOT NULL,
    recipient    text COLLATE "C" NOT NULL,
    run_id       text COLLATE "C" NOT NULL,
    interrupt_id text COLLATE "C" NOT NULL,
    detail       jsonb       NOT NULL,
    created_at   timestamptz NOT NULL,
    attempts     integer     NOT NULL DEFAULT 0,
    lease_until  timestamptz,
    -- the one index a write maintains: claims, the cap and acknowledgements walk it
    PRIMARY KEY (tenant, id)
);
ALTER SEQUENCE openwop.notification_ids OWNED BY openwop.notifications.id;
COMMENT ON SEQUENCE openwop.notification_ids IS 'The ids of openwop.notifications.';
COMMENT ON TABLE openwop.notifications IS
  'The notification outbox: one row per recipient of an approval gate''s event (raised, reminder, escalation, decided, expired, withdrawn, voided), written in the event''s transaction while openwop.notification_outbox is on. Claimed by senders with claim_notifications(); a row acknowledged with ack_notifications() is removed (the outbox is a queue: what happened is in the event log and gate_steps), a dead one moved to openwop.dead_notifications. Written by the extension only (no CHECK constraint: a resolve would compile it at each write, measured at a twentieth of its CPU).';
COMMENT ON COLUMN openwop.notifications.id IS 'The row''s id, stable: a sender deduplicates on it (delivery is at least once).';
COMMENT ON COLUMN openwop.notifications.tenant IS 'The gate''s tenant.';
COMMENT ON COLUMN openwop.notifications.kind IS 'raised, reminder, escalation, decided, expired, withdrawn or voided.';
COMMENT ON COLUMN openwop.notifications.recipient IS 'Who should hear: a subject id, "<issuer>/<subjectId>", "role:<name>" (an approverRoleRefs entry), or "*" (a gate open to every holder of approvals:respond).';
COMMENT ON COLUMN openwop.notifications.run_id IS 'The gate''s run.';
COMMENT ON COLUMN openwop.notifications.interrupt_id IS 'The gate (tenant-bound id).';
COMMENT ON COLUMN openwop.notifications.detail IS 'What the message says beyond the kind: title, nodeId, the step, due date, decision, links a sender may mint.';
COMMENT ON COLUMN openwop.notifications.created_at IS 'When the event happened (its transaction''s start).';
COMMENT ON COLUMN openwop.notifications.attempts IS 'How many times the row was claimed.';
COMMENT ON COLUMN openwop.notifications.lease_until IS 'The last claim''s lease: until then no other claim takes the row.';
SELECT pg_catalog.pg_extension_config_dump('openwop.notifications', '');
SELECT pg_catalog.pg_extension_config_dump('openwop.notification_ids', '');

CREATE TABLE openwop.dead_notifications (
    id           bigint      NOT NULL,
    tenant       text COLLATE "C" NOT NULL,
    kind         text        NOT NULL,
    recipient    text COLLATE "C" NOT NULL,
    run_id       text COLLATE "C" NOT NULL,
    interrupt_id text COLLATE "C" NOT NULL,
    detail       jsonb       NOT NULL,
    created_at   timestamptz NOT NULL,
    attempts     integer     NOT NULL,
    dead_at      timestamptz NOT NULL,
    PRIMARY KEY (tenant, id)
);
CREATE INDEX dead_notifications_dead_at ON openwop.dead_notifications (dead_at);
COMMENT ON TABLE openwop.dead_notifications IS
  'The dead letters of the outbox: notifications given up after openwop.notification_max_attempts claims without an acknowledgement, moved here by the claim that would have taken them once more, and removed openwop.notification_retention later. openwop.stats counts them (notifications_dead).';
COMMENT ON COLUMN openwop.dead_notifications.id IS 'The notification''s id.';
COMMENT ON COLUMN openwop.dead_notifications.tenant IS 'The gate''s tenant.';
COMMENT ON COLUMN openwop.dead_notifications.kind IS 'As in openwop.notifications.';
COMMENT ON COLUMN openwop.dead_notifications.recipient IS 'Who should have heard.';
COMMENT ON COLUMN openwop.dead_notifications.run_id IS 'The gate''s run.';
COMMENT ON COLUMN openwop.dead_notifications.interrupt_id IS 'The gate.';
COMMENT ON COLUMN openwop.dead_notifications.detail IS 'As in openwop.notifications.';
COMMENT ON COLUMN openwop.dead_notifications.created_at IS 'When the event happened.';
COMMENT ON COLUMN openwop.dead_notifications.attempts IS 'How many times it was claimed.';
COMMENT ON COLUMN openwop.dead_notifications.dead_at IS 'When it was given up.';
SELECT pg_catalog.pg_extension_config_dump('openwop.dead_notifications', '');
REVOKE ALL ON openwop.dead_notifications FROM PUBLIC;
REVOKE ALL ON openwop.notifications, openwop.notification_ids FROM PUBLIC;

CREATE TABLE openwop.notification_drops (
    tenant          text COLLATE "C" PRIMARY KEY,
    dropped         bigint      NOT NULL,
    last_dropped_at timestamptz NOT NULL
);
COMMENT ON TABLE openwop.notification_drops IS
  'Per tenant, the notifications dropped because its outbox held openwop.notification_cap undelivered rows (the oldest are kept).';
COMMENT ON COLUMN openwop.notification_drops.tenant IS 'The tenant.';
COMMENT ON COLUMN openwop.notification_drops.dropped IS 'How many of its notifications were dropped.';
COMMENT ON COLUMN openwop.notification_drops.last_dropped_at IS 'When the last were.';
SELECT pg_catalog.pg_extension_config_dump('openwop.notification_drops', '');
REVOKE ALL ON openwop.notification_drops FROM PUBLIC;
GRANT SELECT ON openwop.notification_drops TO pg_monitor;

CREATE FUNCTION openwop.claim_notifications(max integer, lease interval)
    RETURNS SETOF jsonb AS 'MODULE_PATHNAME', 'ow_claim_notifications'
    LANGUAGE C VOLATILE ROWS 100;
COMMENT ON FUNCTION openwop.claim_notifications(integer, interval) IS
  'Claims up to max notifications of the caller''s tenant (for a login acting in every tenant, every tenant''s, shared out between them), oldest first, for lease: rows another claim holds, or leases, are skipped (SKIP LOCKED), so two senders never hold the same row at once. Each is {id, tenant, kind, recipient, runId, interruptId, createdAt, attempt, leaseUntil, detail}; the id is stable. A row not acknowledged before its lease ends is claimed again; one claimed openwop.notification_max_attempts times is dead instead (moved to openwop.dead_notifications). Holders of openwop_notification_sender.';
CREATE FUNCTION openwop.ack_notifications(ids text[])
    RETURNS integer AS 'MODULE_PATHNAME', 'ow_ack_notifications'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.ack_notifications(text[]) IS
  'Acknowledges the delivery of the notifications ids (of the caller''s tenant): they are removed, never claimed again. Returns how many were acknowledged now (one acknowledged before, unknown, or dead, counts 0). Holders of openwop_notification_sender.';
REVOKE ALL ON FUNCTION openwop.claim_notifications(integer, interval),
    openwop.ack_notifications(text[]) FROM PUBLIC;
GRANT USAGE ON SCHEMA openwop TO openwop_notification_sender;
GRANT EXECUTE ON FUNCTION openwop.claim_notifications(integer, interval),
    openwop.ack_notifications(text[]) TO openwop_notification_sender;

COMMENT ON FUNCTION openwop.set_approval_policy(text, jsonb, text) IS
  'Sets a new version of the approval policy name in tenant (the caller''s when NULL): {appliesTo: {workflowId, nodeId}, requiredApprovals, rejectionPolicy, groups: [{ref, required}], excludeRequester, maxTimeoutMs, dueAfterMs, calendar (a business calendar set in the tenant: the gate''s deadline, due date, reminders and escalation in its working time), reminders: [{afterMs}], escalation: {afterMs, groupRef}, overrideBypassesQuorum, description}. Gates raised from the commit on pin it; open gates keep what they pinned. Holders of openwop_policy_admin only. Returns {name, version, tenant}.';
COMMENT ON FUNCTION openwop.direct_path() IS
  'For each table the hot paths write (runs, events, interrupts, node_executions, group_members, open_interrupts, notifications): direct, whether they read and write it through the relation cache, or with SQL statements because a DBA changed it; reason, what the change is (a trigger, a rule, row security, a generated column, a column default or column the install script did not make, a retyped or dropped column, an index). See docs/operations.md.';
-- == reminders, escalation and the notification outbox (end) ==

-- == 0.11.0: the HTTP layer in front of the SQL (begin) ==
/* ----------------------------------------------------------------------
 * docs/postgrest.md.  A POST operation takes its body as json, not jsonb:
 * PostgREST casts the raw body to the parameter's type, and a body jsonb
 * cannot hold (\u0000, a lone surrogate) would fail that cast and be
 * answered with PostgREST's own 400 body; as json it reaches the
 * function, which refuses it with the spec's envelope.  The grants a DBA
 * gave the jsonb functions are carried over.
 * ---------------------------------------------------------------------- */
CREATE FUNCTION openwop_api."resolveInterruptByRun"(json)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_api_resolve_by_run'
    LANGUAGE C VOLATILE;
CREATE FUNCTION openwop_api."resolveInterruptByToken"(json)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_api_resolve_by_token'
    LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION openwop_api."resolveInterruptByRun"(json),
    openwop_api."resolveInterruptByToken"(json) FROM PUBLIC;
SELECT openwop.carry_grants('openwop_api."resolveInterruptByRun"(jsonb)', 'openwop_api."resolveInterruptByRun"(json)');
SELECT openwop.carry_grants('openwop_api."resolveInterruptByToken"(jsonb)', 'openwop_api."resolveInterruptByToken"(json)');
DROP FUNCTION openwop_api."resolveInterruptByRun"(jsonb);
DROP FUNCTION openwop_api."resolveInterruptByToken"(jsonb);
COMMENT ON FUNCTION openwop_api."resolveInterruptByRun"(json) IS
E'resolveInterruptByRun: answer the pending interrupt of a node of a run\n'
 'POST a JSON body {"runId": "<tenant>/<id>", "nodeId": "<node>", "resumeValue": <the answer>} and nothing else; an optional Idempotency-Key header makes a retry safe, an optional If-Match header names the artifact the approver saw. '
 'The caller needs the approvals:respond scope (the JWT scope claim) and, on an approval gate, must be eligible; the host records who decided and when. '
 '200: {status, runId, nodeId, interruptId, kind, decision?, action?, resolvedBy, runStatus, sequence}, or {status: "pending", tally} for a vote that decides nothing yet; a replayed response carries the header OpenWOP-Idempotent-Replay: true. '
 'Refusals, as {error, message, details}: 400 validation_error, idempotency_key_invalid; 401 identity_unresolvable; 403 forbidden, id_tenant_mismatch; 404 not_found; 409 interrupt_already_resolved, idempotency_key_mismatch, idempotency_in_flight; 412 precondition_failed. '
 'It calls openwop.resolve_interrupt.';
COMMENT ON FUNCTION openwop_api."resolveInterruptByToken"(json) IS
E'resolveInterruptByToken: answer the interrupt a signed token names\n'
 'POST a JSON body {"token": "ow2.hs256.<kid>.<payload>.<mac>", "resumeValue": <the answer>} and nothing else; an optional Idempotency-Key header makes a retry safe. The token is the credential, no JWT is needed; a token minted for a principal answers as that principal. '
 '200: as resolveInterruptByRun; a replayed response carries the header OpenWOP-Idempotent-Replay: true. '
 'Refusals, as {error, message, details}: 400 validation_error, idempotency_key_invalid; 401 interrupt_token_invalid; 403 forbidden (an inspect token, an ineligible principal); 404 not_found; 409 interrupt_already_resolved, idempotency_key_mismatch, idempotency_in_flight; 410 interrupt_expired; 412 precondition_failed. '
 'It calls openwop.resolve_interrupt_by_token.';

/*
 * The inbox over HTTP shows what the SQL inbox shows (the policy a gate
 * pinned, when it falls due), and is paged by (requested_at,
 * interrupt_id), the order of its index: a page never skips interrupts
 * raised at one instant.  Its own ORDER BY is what lets a page read that
 * index in order and stop: without it PostgreSQL planned this
 * security-barrier view over the other for all its rows and sorted the
 * caller's whole inbox for each page (131 ms at 10,000 gates, 0.9 ms
 * with it).
 */
CREATE OR REPLACE VIEW openwop_api.pending_interrupts WITH (security_barrier) AS
SELECT interrupt_id, run_id, node_id, kind, title, request, resume_schema, requested_at,
       expires_at, required_approvals, accepts, rejects, voters, my_vote, my_vote_at,
       policy, due_at, overdue
  FROM openwop.pending_interrupts
 ORDER BY requested_at, interrupt_id;
COMMENT ON VIEW openwop_api.pending_interrupts IS
E'The inbox: pending interrupts the caller may decide now\n'
 'The interrupts of the caller''s tenant that the caller may answer (approval gates it is eligible for, and the other kinds for holders of approvals:respond), with what an approver needs to decide: the request without its eligibility lists, the deadline and due date, the policy, the tally and the caller''s own latest vote. '
 'Read it in pages, in the order of its index: ?order=requested_at,interrupt_id&limit=50, then add &requested_at=gte.<last requested_at>&or=(requested_at.gt.<last requested_at>,interrupt_id.gt.<last interrupt_id>), percent-encoded (a + in a timestamp is %2B). It is the view openwop.pending_interrupts.';

CREATE FUNCTION openwop_api."flowdropInterrupts"(after text DEFAULT NULL, max integer DEFAULT 50)
    RETURNS json AS 'MODULE_PATHNAME', 'ow_api_flowdrop_interrupts'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION openwop_api."flowdropInterrupts"(text, integer) IS
E'flowdropInterrupts: the caller''s inbox as FlowDrop interrupt entries\n'
 'GET with the query parameters max (1 to 1000, default 50) and after (the id of the last entry of the previous page; none for the first). '
 'The pending interrupts the caller may decide, in the inbox''s order, each published as FlowDrop''s INT-22 entry: 24 camelCase keys in order, every one present, id the interrupt''s UUID. '
 '200: a JSON array of entries, [] when nothing is left. '
 'Refusals, as {error, message, details}: 400 validation_error; 401 identity_unresolvable; 403 forbidden (no approvals:respond), id_tenant_mismatch; 404 not_found (after names no interrupt of the tenant). '
 'It reads openwop_api.pending_interrupts as the caller (its grants are the inbox''s) and builds each entry as openwop.flowdrop_interrupts does.';
REVOKE ALL ON FUNCTION openwop_api."flowdropInterrupts"(text, integer) FROM PUBLIC;

/*
 * connector.auth-expired, recorded by the host's OAuth code before the
 * node suspends on a credential interrupt (reason "expired") or, without
 * credential interrupts, before it fails with connector_auth_expired.
 */
CREATE FUNCTION openwop.connector_auth_expired(run_id text, node_id text, provider text,
                                               credential_ref jsonb, reason text DEFAULT NULL)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_connector_auth_expired'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.connector_auth_expired(text, text, text, jsonb, text) IS
  'Appends connector.auth-expired {provider, credentialRef: {ref, scope?}, reason?} for the node''s open execution: a terminal refresh failure of its credential, announced before the node suspends on a credential interrupt with reason expired (or, without openwop.credential_interrupts, fails with connector_auth_expired). Returns {runId, nodeId, sequence, runStatus}.';
REVOKE ALL ON FUNCTION openwop.connector_auth_expired(text, text, text, jsonb, text) FROM PUBLIC;

CREATE FUNCTION openwop_forward.connector_auth_expired(caller jsonb, run_id text, node_id text, provider text,
                                                       credential_ref jsonb, reason text DEFAULT NULL)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.connector_auth_expired(run_id, node_id, provider, credential_ref, reason);
END
$$;
COMMENT ON FUNCTION openwop_forward.connector_auth_expired(jsonb, text, text, text, jsonb, text) IS
  'openwop.connector_auth_expired for the forwarded caller.';
REVOKE ALL ON FUNCTION openwop_forward.connector_auth_expired(jsonb, text, text, text, jsonb, text) FROM PUBLIC;
/*
 * GET /: a hand-written OpenAPI 3.0 document of this schema, served by
 * PostgREST with db-root-spec = "openapi" (PostgREST's own document
 * advertises a GET for every function and a body member named "" for
 * each single-json function).  test/checks/postgrest_http.sh compares
 * its operations with the functions and views of the schema.
 */
CREATE FUNCTION openwop_api.openapi()
    RETURNS json LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $openapi$
SELECT $doc$
{
 "openapi": "3.0.3",
 "info": {
  "title": "OpenWOP interrupt: resolve surfaces",
  "version": "0.11.0",
  "description": "The resolve operations of the OpenWOP interrupt spec and the host's own, served by PostgREST from schema openwop_api (docs/postgrest.md). Every refusal is the spec's envelope {error, message, details} with the spec's status; errors PostgREST answers itself (an invalid JWT, an unknown route, a body that is not JSON) have PostgREST's body {code, message, details, hint}."
 },
 "paths": {
  "/pending_interrupts": {
   "get": {
    "operationId": "pendingInterrupts",
    "tags": ["inbox"],
    "summary": "The inbox: pending interrupts the caller may decide now",
    "description": "The interrupts of the caller's tenant the caller may answer, oldest first. Read it in pages in the order of its index: order=requested_at,interrupt_id&limit=50, then add requested_at=gte.<last requested_at>&or=(requested_at.gt.<last requested_at>,interrupt_id.gt.<last interrupt_id>), percent-encoded (a + in a timestamp is %2B). A caller without approvals:respond gets []. Needs a JWT.",
    "parameters": [{"$ref": "#/components/parameters/order"}, {"$ref": "#/components/parameters/limit"}, {"$ref": "#/components/parameters/offset"}, {"$ref": "#/components/parameters/select"}, {"name": "requested_at", "in": "query", "required": false, "schema": {"type": "string"}, "description": "a filter, e.g. gte.2026-12-01T09:15:33.264%2B00:00"}, {"name": "interrupt_id", "in": "query", "required": false, "schema": {"type": "string"}, "description": "a filter, e.g. eq.acme/la54VOqPR6qEKZ4JTWbTug"}, {"name": "or", "in": "query", "required": false, "schema": {"type": "string"}, "description": "the tie-breaker of a page: (requested_at.gt.<t>,interrupt_id.gt.<id>)"}],
    "responses": {"200": {"description": "a JSON array of inbox rows ([] when nothing waits for the caller)", "content": {"application/json": {"schema": {"type": "array", "items": {"$ref": "#/components/schemas/InboxRow"}}}}}, "401": {"description": "no JWT (PostgREST's own answer: the anonymous role may not read the inbox)"}},
    "security": [{"jwt": []}]
   }
  },
  "/rpc/resolveInterruptByRun": {
   "post": {
    "operationId": "resolveInterruptByRun",
    "tags": ["resolve"],
    "summary": "Answer the pending interrupt of a node of a run",
    "description": "The OpenWOP operation resolveInterruptByRun (its path parameters in the body). Needs a JWT with the approvals:respond scope and, on an approval gate, an eligible subject. Refusals (the error envelope): 400 validation_error, idempotency_key_invalid; 401 identity_unresolvable; 403 forbidden, id_tenant_mismatch; 404 not_found; 409 interrupt_already_resolved, idempotency_key_mismatch, idempotency_in_flight; 412 precondition_failed.",
    "parameters": [{"$ref": "#/components/parameters/Idempotency-Key"}, {"$ref": "#/components/parameters/If-Match"}],
    "requestBody": {"required": true, "description": "a JSON object of exactly these members (any other is 400 validation_error naming it)", "content": {"application/json": {"schema": {"type": "object", "additionalProperties": false, "required": ["runId", "nodeId", "resumeValue"], "properties": {"runId": {"type": "string", "description": "<tenant>/<id>"}, "nodeId": {"type": "string"}, "resumeValue": {"description": "the resume value, as the interrupt's kind takes it (an approval: {action, feedback?, ...})"}}}}}},
    "responses": {"200": {"$ref": "#/components/responses/Resolution"}, "400": {"$ref": "#/components/responses/Refused"}, "401": {"$ref": "#/components/responses/Refused"}, "403": {"$ref": "#/components/responses/Refused"}, "404": {"$ref": "#/components/responses/Refused"}, "409": {"$ref": "#/components/responses/Refused"}, "412": {"$ref": "#/components/responses/Refused"}},
    "security": [{"jwt": []}]
   }
  },
  "/rpc/resolveInterruptByToken": {
   "post": {
    "operationId": "resolveInterruptByToken",
    "tags": ["token"],
    "summary": "Answer the interrupt a signed token names",
    "description": "The OpenWOP operation resolveInterruptByToken (the token in the body). The token is the credential: no JWT. Refusals (the error envelope): 400 validation_error, idempotency_key_invalid; 401 interrupt_token_invalid; 403 forbidden; 404 not_found; 409 interrupt_already_resolved, idempotency_key_mismatch, idempotency_in_flight; 410 interrupt_expired; 412 precondition_failed.",
    "parameters": [{"$ref": "#/components/parameters/Idempotency-Key"}, {"$ref": "#/components/parameters/If-Match"}],
    "requestBody": {"required": true, "description": "a JSON object of exactly these members (any other is 400 validation_error naming it)", "content": {"application/json": {"schema": {"type": "object", "additionalProperties": false, "required": ["token", "resumeValue"], "properties": {"token": {"type": "string", "description": "ow2.hs256.<kid>.<payload>.<mac>"}, "resumeValue": {"description": "the resume value, as the interrupt's kind takes it (an approval: {action, feedback?, ...})"}}}}}},
    "responses": {"200": {"$ref": "#/components/responses/Resolution"}, "400": {"$ref": "#/components/responses/Refused"}, "401": {"$ref": "#/components/responses/Refused"}, "403": {"$ref": "#/components/responses/Refused"}, "404": {"$ref": "#/components/responses/Refused"}, "409": {"$ref": "#/components/responses/Refused"}, "410": {"$ref": "#/components/responses/Refused"}, "412": {"$ref": "#/components/responses/Refused"}},
    "security": [{}]
   }
  },
  "/rpc/inspectInterruptByToken": {
   "get": {
    "operationId": "inspectInterruptByToken",
    "tags": ["token"],
    "summary": "Read the interrupt a signed token names",
    "description": "The OpenWOP operation inspectInterruptByToken (the token in the query string). The token is the credential: no JWT. Read only. Refusals (the error envelope): 401 interrupt_token_invalid; 404 not_found; 409 interrupt_already_resolved; 410 interrupt_expired.",
    "parameters": [{"name": "token", "in": "query", "required": false, "schema": {"type": "string"}, "description": "ow2.hs256.<kid>.<payload>.<mac> (without it: 401 interrupt_token_invalid)"}],
    "responses": {"200": {"$ref": "#/components/responses/InterruptPayload"}, "401": {"$ref": "#/components/responses/Refused"}, "404": {"$ref": "#/components/responses/Refused"}, "409": {"$ref": "#/components/responses/Refused"}, "410": {"$ref": "#/components/responses/Refused"}},
    "security": [{}]
   },
   "post": {
    "operationId": "inspectInterruptByTokenPost",
    "tags": ["token"],
    "summary": "Read the interrupt a signed token names (the token in a body)",
    "description": "The same as the GET, for a client that keeps the token out of URLs. Read only.",
    "requestBody": {"required": false, "description": "a JSON object of the function's parameters (PostgREST answers any other member 404 PGRST202)", "content": {"application/json": {"schema": {"type": "object", "additionalProperties": false, "required": [], "properties": {"token": {"type": "string"}}}}}},
    "responses": {"200": {"$ref": "#/components/responses/InterruptPayload"}, "401": {"$ref": "#/components/responses/Refused"}, "404": {"$ref": "#/components/responses/Refused"}, "409": {"$ref": "#/components/responses/Refused"}, "410": {"$ref": "#/components/responses/Refused"}},
    "security": [{}]
   }
  },
  "/rpc/withdrawVote": {
   "post": {
    "operationId": "withdrawVote",
    "tags": ["resolve"],
    "summary": "Take back the caller's counted vote on a pending approval gate",
    "description": "A host operation. Needs a JWT with approvals:respond. Takes no Idempotency-Key: withdrawing again is 404. Refusals (the error envelope): 400 validation_error; 401 identity_unresolvable; 403 forbidden, id_tenant_mismatch; 404 not_found; 409 interrupt_already_resolved.",
    "requestBody": {"required": true, "description": "a JSON object of exactly these members (any other is 400 validation_error naming it)", "content": {"application/json": {"schema": {"type": "object", "additionalProperties": false, "required": ["runId", "nodeId"], "properties": {"runId": {"type": "string"}, "nodeId": {"type": "string"}}}}}},
    "responses": {"200": {"description": "{status: \"pending\", action: \"withdraw\", counted: false, tally, runId, nodeId, interruptId}", "content": {"application/json": {"schema": {"type": "object"}}}}, "400": {"$ref": "#/components/responses/Refused"}, "401": {"$ref": "#/components/responses/Refused"}, "403": {"$ref": "#/components/responses/Refused"}, "404": {"$ref": "#/components/responses/Refused"}, "409": {"$ref": "#/components/responses/Refused"}},
    "security": [{"jwt": []}]
   }
  },
  "/rpc/resolveInterrupts": {
   "post": {
    "operationId": "resolveInterrupts",
    "tags": ["resolve"],
    "summary": "Give one answer to many interrupts",
    "description": "A host operation. Each interrupt is answered as resolveInterruptByRun would answer it, in a transaction of its own within the request. Needs a JWT with approvals:respond. Refusals (the error envelope): 400 validation_error, idempotency_key_invalid; 401 identity_unresolvable; 403 forbidden; 409 idempotency_key_mismatch, idempotency_in_flight.",
    "parameters": [{"$ref": "#/components/parameters/Idempotency-Key"}, {"$ref": "#/components/parameters/If-Match"}],
    "requestBody": {"required": true, "description": "a JSON object of exactly these members (any other is 400 validation_error naming it)", "content": {"application/json": {"schema": {"type": "object", "additionalProperties": false, "required": ["interruptIds", "resumeValue"], "properties": {"interruptIds": {"type": "array", "items": {"type": "string"}, "description": "tenant-bound ids or the interrupts' UUIDs"}, "resumeValue": {"description": "the resume value, as the interrupt's kind takes it (an approval: {action, feedback?, ...})"}}}}}},
    "responses": {"200": {"description": "{items: [{interruptId, status, result}]}, in the order given", "headers": {"OpenWOP-Idempotent-Replay": {"$ref": "#/components/headers/Replay"}}, "content": {"application/json": {"schema": {"type": "object"}}}}, "400": {"$ref": "#/components/responses/Refused"}, "401": {"$ref": "#/components/responses/Refused"}, "403": {"$ref": "#/components/responses/Refused"}, "409": {"$ref": "#/components/responses/Refused"}},
    "security": [{"jwt": []}]
   }
  },
  "/rpc/flowdropInterrupts": {
   "get": {
    "operationId": "flowdropInterrupts",
    "tags": ["flowdrop"],
    "summary": "The caller's inbox as FlowDrop interrupt entries",
    "description": "The pending interrupts the caller may decide, in the inbox's order, each FlowDrop's INT-22 entry (24 keys, in order, every one present; id the interrupt's UUID). Needs a JWT with approvals:respond. Read only. Refusals (the error envelope): 400 validation_error; 401 identity_unresolvable; 403 forbidden, id_tenant_mismatch; 404 not_found.",
    "parameters": [{"name": "after", "in": "query", "required": false, "schema": {"type": "string"}, "description": "the id of the last entry of the previous page (its UUID); none for the first page"}, {"name": "max", "in": "query", "required": false, "schema": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 50}}],
    "responses": {"200": {"$ref": "#/components/responses/FlowDropPage"}, "400": {"$ref": "#/components/responses/Refused"}, "401": {"$ref": "#/components/responses/Refused"}, "403": {"$ref": "#/components/responses/Refused"}, "404": {"$ref": "#/components/responses/Refused"}},
    "security": [{"jwt": []}]
   },
   "post": {
    "operationId": "flowdropInterruptsPost",
    "tags": ["flowdrop"],
    "summary": "The same page, its parameters in a body",
    "description": "As the GET. Read only.",
    "requestBody": {"required": false, "description": "a JSON object of the function's parameters (PostgREST answers any other member 404 PGRST202)", "content": {"application/json": {"schema": {"type": "object", "additionalProperties": false, "required": [], "properties": {"after": {"type": "string"}, "max": {"type": "integer", "minimum": 1, "maximum": 1000}}}}}},
    "responses": {"200": {"$ref": "#/components/responses/FlowDropPage"}, "400": {"$ref": "#/components/responses/Refused"}, "401": {"$ref": "#/components/responses/Refused"}, "403": {"$ref": "#/components/responses/Refused"}, "404": {"$ref": "#/components/responses/Refused"}},
    "security": [{"jwt": []}]
   }
  },
  "/": {
   "get": {
    "operationId": "root",
    "tags": ["meta"],
    "summary": "This document (db-root-spec)",
    "responses": {"200": {"$ref": "#/components/responses/Document"}},
    "security": [{}]
   },
   "post": {
    "operationId": "rootPost",
    "tags": ["meta"],
    "summary": "This document (db-root-spec is a function: POST / calls it too)",
    "requestBody": {"required": false, "description": "a JSON object of the function's parameters (PostgREST answers any other member 404 PGRST202)", "content": {"application/json": {"schema": {"type": "object", "additionalProperties": false, "required": [], "properties": {}}}}},
    "responses": {"200": {"$ref": "#/components/responses/Document"}},
    "security": [{}]
   }
  },
  "/rpc/openapi": {
   "get": {
    "operationId": "openapi",
    "tags": ["meta"],
    "summary": "This document",
    "responses": {"200": {"$ref": "#/components/responses/Document"}},
    "security": [{}]
   },
   "post": {
    "operationId": "openapiPost",
    "tags": ["meta"],
    "summary": "This document",
    "requestBody": {"required": false, "description": "a JSON object of the function's parameters (PostgREST answers any other member 404 PGRST202)", "content": {"application/json": {"schema": {"type": "object", "additionalProperties": false, "required": [], "properties": {}}}}},
    "responses": {"200": {"$ref": "#/components/responses/Document"}},
    "security": [{}]
   }
  }
 },
 "components": {
  "securitySchemes": {
   "jwt": {
    "type": "http",
    "scheme": "bearer",
    "bearerFormat": "JWT"
   }
  },
  "parameters": {
   "Idempotency-Key": {
    "name": "Idempotency-Key",
    "in": "header",
    "required": false,
    "schema": {"type": "string", "pattern": "^[A-Za-z0-9._~-]{22,128}$"},
    "description": "makes a retry safe: the same request under the same key is answered with the stored answer"
   },
   "If-Match": {
    "name": "If-Match",
    "in": "header",
    "required": false,
    "schema": {"type": "string"},
    "description": "the artifact version the approver looked at (\"sha256:...\"); another is 412 precondition_failed"
   },
   "order": {
    "name": "order",
    "in": "query",
    "required": false,
    "schema": {"type": "string"},
    "description": "requested_at,interrupt_id (the order the inbox index serves)"
   },
   "limit": {
    "name": "limit",
    "in": "query",
    "required": false,
    "schema": {"type": "integer", "minimum": 0}
   },
   "offset": {
    "name": "offset",
    "in": "query",
    "required": false,
    "schema": {"type": "integer", "minimum": 0}
   },
   "select": {
    "name": "select",
    "in": "query",
    "required": false,
    "schema": {"type": "string"}
   }
  },
  "headers": {
   "Replay": {
    "description": "true on an answer replayed under its Idempotency-Key",
    "schema": {"type": "string", "enum": ["true"]}
   }
  },
  "schemas": {
   "Envelope": {
    "type": "object",
    "additionalProperties": false,
    "required": ["error", "message", "details"],
    "properties": {"error": {"type": "string", "enum": ["validation_error", "idempotency_key_invalid", "identity_unresolvable", "interrupt_token_invalid", "forbidden", "id_tenant_mismatch", "not_found", "interrupt_already_resolved", "idempotency_key_mismatch", "idempotency_in_flight", "interrupt_expired", "precondition_failed"]}, "message": {"type": "string"}, "details": {"type": "object"}}
   },
   "Resolution": {
    "type": "object",
    "required": ["status"],
    "properties": {"status": {"type": "string", "enum": ["resolved", "pending", "expired"]}, "runId": {"type": "string"}, "nodeId": {"type": "string"}, "interruptId": {"type": "string"}, "kind": {"type": "string"}, "decision": {"type": "string"}, "action": {"type": "string"}, "resolvedBy": {"type": "object"}, "runStatus": {"type": "string"}, "sequence": {"type": "integer"}, "receipt": {"type": "object"}, "tally": {"type": "object"}, "counted": {"type": "boolean"}}
   },
   "InboxRow": {
    "type": "object",
    "required": ["interrupt_id", "run_id", "node_id", "kind", "title", "request", "resume_schema", "requested_at", "expires_at", "required_approvals", "accepts", "rejects", "voters", "my_vote", "my_vote_at", "policy", "due_at", "overdue"],
    "properties": {"interrupt_id": {"type": "string"}, "run_id": {"type": "string"}, "node_id": {"type": "string"}, "kind": {"type": "string"}, "title": {"type": "string", "nullable": true}, "request": {"type": "object", "nullable": true}, "resume_schema": {"type": "object", "nullable": true}, "requested_at": {"type": "string", "format": "date-time"}, "expires_at": {"type": "string", "format": "date-time", "nullable": true}, "required_approvals": {"type": "integer", "nullable": true}, "accepts": {"type": "integer", "nullable": true}, "rejects": {"type": "integer", "nullable": true}, "voters": {"type": "integer", "nullable": true}, "my_vote": {"type": "string", "nullable": true}, "my_vote_at": {"type": "string", "format": "date-time", "nullable": true}, "policy": {"type": "object", "nullable": true}, "due_at": {"type": "string", "format": "date-time", "nullable": true}, "overdue": {"type": "boolean"}}
   },
   "FlowDropEntry": {
    "type": "object",
    "additionalProperties": false,
    "required": ["id", "type", "status", "message", "nodeId", "workflowId", "pipelineId", "sessionId", "schema", "options", "context", "defaultValue", "responseData", "createdAt", "expiresAt", "scheduledAt", "resolvedAt", "resolvedBy", "direction", "jobId", "targetPipelineId", "initiatorUid", "reason", "linkedInterruptId"],
    "properties": {"id": {"type": "string", "format": "uuid"}, "type": {"type": "string"}, "status": {"type": "string", "enum": ["pending", "resolved", "cancelled", "expired"]}, "message": {"type": "string", "nullable": true}, "nodeId": {"type": "string"}, "workflowId": {"type": "string"}, "pipelineId": {"type": "string"}, "sessionId": {"type": "string", "nullable": true}, "schema": {"type": "object", "nullable": true}, "options": {"type": "array", "nullable": true}, "context": {"type": "object"}, "defaultValue": {"nullable": true}, "responseData": {"type": "object", "nullable": true}, "createdAt": {"type": "string", "format": "date-time"}, "expiresAt": {"type": "string", "format": "date-time", "nullable": true}, "scheduledAt": {"type": "string", "format": "date-time", "nullable": true}, "resolvedAt": {"type": "string", "format": "date-time", "nullable": true}, "resolvedBy": {"type": "object", "nullable": true}, "direction": {"type": "string", "enum": ["outward", "inward"]}, "jobId": {"type": "string"}, "targetPipelineId": {"type": "string", "nullable": true}, "initiatorUid": {"type": "string", "nullable": true}, "reason": {"type": "string", "nullable": true}, "linkedInterruptId": {"type": "string", "nullable": true}}
   }
  },
  "responses": {
   "InterruptPayload": {
    "description": "the InterruptPayload {kind, key, data, resumeSchema?, timeoutMs?}",
    "content": {"application/json": {"schema": {"type": "object"}}}
   },
   "FlowDropPage": {
    "description": "a JSON array of FlowDrop INT-22 entries ([] when nothing is left)",
    "content": {"application/json": {"schema": {"type": "array", "items": {"$ref": "#/components/schemas/FlowDropEntry"}}}}
   },
   "Document": {
    "description": "this document",
    "content": {"application/json": {"schema": {"type": "object"}}}
   },
   "Resolution": {
    "description": "the answer: {status, runId, nodeId, interruptId, kind, decision?, action?, resolvedBy, runStatus, sequence, receipt?}, or {status: \"pending\", counted, tally} for a vote that decides nothing yet, or {status: \"expired\"} for an answer after the deadline; a replayed answer carries OpenWOP-Idempotent-Replay: true",
    "headers": {"OpenWOP-Idempotent-Replay": {"$ref": "#/components/headers/Replay"}},
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Resolution"}}}
   },
   "Refused": {
    "description": "refused: the error envelope {error, message, details} of the OpenWOP spec, with the code's status (the operation's description lists its codes)",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Envelope"}}}
   }
  }
 }
}
$doc$::pg_catalog.json
$openapi$;
COMMENT ON FUNCTION openwop_api.openapi() IS
E'openapi: the OpenAPI document of this API\n'
 'GET / (with db-root-spec = "openapi") or GET /rpc/openapi: an OpenAPI 3.0 document of the operations of schema openwop_api, their parameters, bodies, answers and refusals.';
REVOKE ALL ON FUNCTION openwop_api.openapi() FROM PUBLIC;
-- == the HTTP layer in front of the SQL (end) ==

-- == 0.11.0: the grants this update carried over (begin) ==
/*
 * The grants carried from the functions whose signature changed (above)
 * are the DBA's, not the extension's: pg_init_privs keeps each new
 * function's privileges as its REVOKE left them (the owner's alone), or
 * pg_dump would leave those grants out of a dump as the extension's own.
 */
UPDATE pg_catalog.pg_init_privs i
   SET initprivs = ARRAY[pg_catalog.makeaclitem(p.proowner, p.proowner, 'EXECUTE', false)]
  FROM pg_catalog.pg_proc p
 WHERE i.objoid OPERATOR(pg_catalog.=) p.oid
   AND i.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
   AND i.objsubid OPERATOR(pg_catalog.=) 0
   AND p.oid OPERATOR(pg_catalog.=) ANY (ARRAY['openwop.may_decide(text, text, text, jsonb, jsonb)'::pg_catalog.regprocedure,
                                              'openwop.create_run(text, jsonb, text)'::pg_catalog.regprocedure,
                                              'openwop_api."resolveInterruptByRun"(json)'::pg_catalog.regprocedure,
                                              'openwop_api."resolveInterruptByToken"(json)'::pg_catalog.regprocedure]::pg_catalog.oid[]);
DROP FUNCTION openwop.carry_grants(pg_catalog.regprocedure, pg_catalog.regprocedure);
-- == the grants this update carried over (end) ==
