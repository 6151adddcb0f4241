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
