-- Plans do not depend on statistics: right after a fresh install whose
-- empty store was analysed (VACUUM ANALYZE, or autovacuum, before any
-- data), every statement the API runs is still an index probe, never a
-- sequential scan of a table that will hold millions of rows.  The
-- backend keeps its plans for its whole life, so a plan made from "the
-- table is empty" would stay.  Asserted by access path (the scans this
-- transaction counted), never by a timing.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir callers.psql

-- the store is empty here (every pgTAP file rolls back): analyse it so
ANALYZE openwop.runs, openwop.node_executions, openwop.interrupts, openwop.events,
        openwop.votes, openwop.idempotency_keys, openwop.group_members, openwop.open_interrupts;

-- a run through the whole API surface that touches the store
DO $$ BEGIN
  PERFORM openwop.create_run('plans', '{"runId": "acme/plans-run-0000000001"}');
  PERFORM openwop.start_node('acme/plans-run-0000000001', 'work');
  PERFORM openwop.complete_node('acme/plans-run-0000000001', 'work', '{"x": 1}');
  PERFORM openwop.start_node('acme/plans-run-0000000001', 'gate');
  PERFORM openwop.interrupt('acme/plans-run-0000000001', 'gate', '{"kind": "approval", "data": {"artifactId": "a",
    "artifactType": "doc", "title": "T", "actions": ["accept", "reject"], "requiredApprovals": 2}, "timeoutMs": 600000}');
  PERFORM openwop.resolve_interrupt('acme/plans-run-0000000001', 'gate', '{"action": "accept"}', 'plans-key-0000000000000001');
  PERFORM openwop.resolve_interrupt('acme/plans-run-0000000001', 'gate', '{"action": "accept"}', 'plans-key-0000000000000001');
  PERFORM openwop.run_snapshot('acme/plans-run-0000000001');
  PERFORM count(*) FROM openwop.events('acme/plans-run-0000000001');
  PERFORM openwop.sweep(10);
  PERFORM openwop.cancel_run('acme/plans-run-0000000001');
END $$;

SELECT is((SELECT coalesce(sum(seq_scan), 0)::int FROM pg_stat_xact_user_tables
            WHERE schemaname = 'openwop'
              AND relname IN ('runs', 'node_executions', 'interrupts', 'events', 'votes', 'idempotency_keys',
                              'open_interrupts')),
          0, 'plans_without_statistics: on an empty, analysed store no API statement scans a store table sequentially');
SELECT cmp_ok((SELECT coalesce(sum(idx_scan), 0)::int FROM pg_stat_xact_user_tables
                WHERE schemaname = 'openwop' AND relname IN ('runs', 'interrupts', 'events')),
              '>', 0, '... they probe indexes (the scans were counted)');

-- a statement plans with sequential scans and JIT off (a statement with no
-- index path, signing_keys by state, would otherwise cost 1e10 and be compiled
-- on every execution), for the statement only: the session's settings are back after it
SET LOCAL enable_seqscan = on;
SET LOCAL jit = on;
DO $$ BEGIN PERFORM openwop.create_run('plans', '{"runId": "acme/plans-run-0000000002"}'); END $$;
SELECT is(current_setting('enable_seqscan') || '/' || current_setting('jit'), 'on/on',
          'plans_without_statistics: the settings a statement plans under are the statement''s alone');
-- a statement of the extension that fails (row security sends create_run to its statements; a
-- constraint refuses the event), the error caught by the caller: the settings are back too
ALTER TABLE openwop.runs ENABLE ROW LEVEL SECURITY;
ALTER TABLE openwop.events ENABLE ROW LEVEL SECURITY;
ALTER TABLE openwop.events ADD CONSTRAINT tap_no_events CHECK (false) NOT VALID;
CREATE TEMP TABLE caught AS SELECT ''::text AS state;
DO $$ BEGIN
  PERFORM openwop.create_run('plans', '{"runId": "acme/plans-run-0000000003"}');
EXCEPTION WHEN check_violation THEN
  UPDATE caught SET state = SQLSTATE || ' ' || current_setting('enable_seqscan') || '/' || current_setting('jit');
END $$;
SELECT is((SELECT state FROM caught), '23514 on/on',
          '... and when the statement fails, the caller''s handler already sees its own settings');
SELECT is(current_setting('enable_seqscan') || '/' || current_setting('jit'), 'on/on', '... and so does the session after it');
ALTER TABLE openwop.events DROP CONSTRAINT tap_no_events;
ALTER TABLE openwop.runs DISABLE ROW LEVEL SECURITY;
ALTER TABLE openwop.events DISABLE ROW LEVEL SECURITY;

SELECT * FROM finish();
ROLLBACK;
