/*
 * openwop_interrupt 0.6.0 -> 0.7.0: operations.  The workers serve every
 * database in which the extension is created (the library's launcher, no
 * schema change); openwop.workers shows them, and openwop.pending_summary
 * and openwop.stats what they and the callers did, to pg_monitor.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION openwop_interrupt UPDATE TO '0.7.0'" to load this file. \quit

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
