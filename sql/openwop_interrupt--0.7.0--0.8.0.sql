/*
 * openwop_interrupt 0.7.0 -> 0.8.0: every kind and every replay (issue 16).
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION openwop_interrupt UPDATE TO '0.8.0'" to load this file. \quit

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
