-- Direct row access beyond the resolve (src/store/rowstore.c): create_run writes
-- its run row once and takes a taken run id as ON CONFLICT DO NOTHING does
-- (speculative insertion); the end of a run with nothing left open runs no
-- cancelling statement; interrupt() finds a key and reads the completed
-- prefix from the indexes.  Each gives what its SQL statements give when a
-- DBA's trigger or row security sends it back to them.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir callers.psql
\ir gates.psql

-- a run's rows and events without ids and clocks
CREATE FUNCTION pg_temp.shape(run text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object(
    'run', (SELECT jsonb_build_array(workflow_id, status, current_node_id, owner, configurable, definition,
                                     inputs, metadata, outputs, error, next_sequence, fork_of,
                                     created_at = updated_at, ended_at IS NULL, length(event_prefix))
              FROM openwop.runs WHERE run_id = run),
    'events', (SELECT jsonb_agg(jsonb_build_array(sequence, type, node_id,
                                                  payload - '{interruptId,key,durationMs}'::text[] #- '{resumeValue,decidedAt}',
                                                  schema_version, causation_id) ORDER BY sequence)
                 FROM openwop.events WHERE run_id = run),
    'executions', (SELECT jsonb_agg(jsonb_build_array(node_id, visit, status) ORDER BY node_id, visit)
                     FROM openwop.node_executions WHERE run_id = run),
    'interrupts', (SELECT jsonb_agg(status ORDER BY node_id) FROM openwop.interrupts WHERE run_id = run),
    'open', (SELECT count(*) FROM openwop.open_interrupts WHERE run_id = run))
$$;
CREATE FUNCTION pg_temp.refusal(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE detail text;
BEGIN
  EXECUTE sql;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
  RETURN SQLSTATE || ' ' || SQLERRM || ' ' || jsonb_build_object('runStatus', NULLIF(detail, '')::jsonb -> 'runStatus')::text;
END $$;
CREATE FUNCTION public.tap_calls_noop() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RETURN NEW;
END $$;
CREATE FUNCTION pg_temp.full_run(run text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM openwop.create_run('calls', jsonb_build_object('runId', run, 'inputs', '{"n": 1}'::jsonb,
                                                         'metadata', '{"m": true}'::jsonb, 'configurable',
                                                         '{"version": 1}'::jsonb));
  PERFORM openwop.start_node(run, 'gate');
  PERFORM openwop.interrupt(run, 'gate', '{"kind": "approval", "data": {"artifactId": "a",
    "artifactType": "doc", "title": "T", "actions": ["accept", "reject"]}}');
  PERFORM openwop.resolve_interrupt(run, 'gate', '{"action": "accept"}');
  PERFORM openwop.complete_node(run, 'gate', '{"approved": true}');
  PERFORM openwop.complete_run(run, '{"done": 1}');
END $$;

-- ---------------------------------------------------------------- create_run
SELECT is(openwop.create_run('calls', '{"runId": "acme/calls-direct-0000001"}') ->> 'sequence', '0',
          'direct_create_run: run.started is sequence 0');
SELECT is((SELECT next_sequence FROM openwop.runs WHERE run_id = 'acme/calls-direct-0000001'), 1::bigint,
          '... and the run row, written once, holds the next sequence');
SELECT is((SELECT n_tup_upd FROM pg_stat_xact_user_tables WHERE relid = 'openwop.runs'::regclass), 0::bigint,
          '... with no update of it');
SELECT is((SELECT configurable FROM openwop.runs WHERE run_id = 'acme/calls-direct-0000001'), '{}'::jsonb,
          '... configurable defaults to {} as the column does');
SELECT is(pg_temp.refusal($$SELECT openwop.create_run('calls', '{"runId": "acme/calls-direct-0000001"}')$$),
          'PT409 run_state_conflict: run "acme/calls-direct-0000001" already exists {"runStatus": "running"}',
          'direct_create_run: a taken run id is 409 with the run''s status, not a unique violation');
SELECT is((SELECT count(*)::int FROM openwop.events WHERE run_id = 'acme/calls-direct-0000001'), 1,
          '... and appends nothing');

-- the whole run, direct, then through the statements (a trigger on runs and events, row security on the open interrupts)
SELECT pg_temp.full_run('acme/calls-direct-0000002');
CREATE TRIGGER tap_runs_insert BEFORE INSERT ON openwop.runs FOR EACH ROW EXECUTE FUNCTION public.tap_calls_noop();
CREATE TRIGGER tap_events_insert BEFORE INSERT ON openwop.events FOR EACH ROW EXECUTE FUNCTION public.tap_calls_noop();
ALTER TABLE openwop.open_interrupts ENABLE ROW LEVEL SECURITY;
SELECT pg_temp.full_run('acme/calls-sql-000000002');
SELECT is(pg_temp.shape('acme/calls-sql-000000002'), pg_temp.shape('acme/calls-direct-0000002'),
          'direct_create_run_fallback: through the statements a whole run leaves the same rows and events');
SELECT is(pg_temp.refusal($$SELECT openwop.create_run('calls', '{"runId": "acme/calls-sql-000000002"}')$$),
          'PT409 run_state_conflict: run "acme/calls-sql-000000002" already exists {"runStatus": "completed"}',
          '... and a taken run id is the same 409');
DROP TRIGGER tap_runs_insert ON openwop.runs;
DROP TRIGGER tap_events_insert ON openwop.events;

-- a default a DBA changed or added: every insert of the hot paths names every column, so it
-- changes nothing they write, and the direct path stays on
ALTER TABLE openwop.events ALTER COLUMN schema_version SET DEFAULT 7;
SELECT pg_temp.full_run('acme/calls-default-00001');
SELECT is((SELECT array_agg(DISTINCT schema_version) FROM openwop.events WHERE run_id = 'acme/calls-default-00001'), '{1}',
          'direct_rows_default_changed: with a changed column default every event of a whole run is written as the library writes it');
ALTER TABLE openwop.events ALTER COLUMN schema_version SET DEFAULT 1;
ALTER TABLE openwop.runs ALTER COLUMN fork_of SET DEFAULT 'dba-default';
SELECT is(openwop.create_run('calls', '{"runId": "acme/calls-default-00002"}') ->> 'status', 'running',
          'direct_rows_default_changed: a default added to a runs column the run leaves null');
SELECT is((SELECT fork_of FROM openwop.runs WHERE run_id = 'acme/calls-default-00002'), NULL,
          '... is not applied: the insert names the column');
SELECT is((SELECT reason FROM openwop.direct_path() WHERE table_name = 'runs'), NULL,
          '... and the direct path stays on');
ALTER TABLE openwop.runs ALTER COLUMN fork_of DROP DEFAULT;
CREATE TEMP TABLE runs_updated AS SELECT n_tup_upd FROM pg_stat_xact_user_tables WHERE relid = 'openwop.runs'::regclass;
SELECT is(openwop.create_run('calls', '{"runId": "acme/calls-default-00003"}') ->> 'status', 'running',
          '... and with the defaults as installed again');
SELECT is((SELECT fork_of IS NULL FROM openwop.runs WHERE run_id = 'acme/calls-default-00003')
          AND (SELECT x.n_tup_upd = r.n_tup_upd FROM pg_stat_xact_user_tables x, runs_updated r WHERE x.relid = 'openwop.runs'::regclass),
          true, '... the row is written directly again (once, no update of it)');

-- ---------------------------------------------------------------- the end of a run with something open
-- an open execution and a pending interrupt: the probe sees them and the statements cancel them
CREATE FUNCTION pg_temp.open_run(run text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_temp.gate(run);
  PERFORM openwop.start_node(run, 'work');
END $$;
SELECT pg_temp.open_run('acme/calls-open-sql-00001');
SELECT is(openwop.complete_run('acme/calls-open-sql-00001') ->> 'status', 'completed',
          'direct_end_run_fallback: with row security on the open interrupts a run ends through the statements');
ALTER TABLE openwop.open_interrupts DISABLE ROW LEVEL SECURITY;
SELECT pg_temp.open_run('acme/calls-open-direct-01');
SELECT is(openwop.complete_run('acme/calls-open-direct-01') ->> 'status', 'completed',
          'direct_end_run: a run with an open execution and a pending interrupt ends');
SELECT is(pg_temp.shape('acme/calls-open-direct-01') -> 'events' -> 5, '[5, "node.cancelled", "gate", {"nodeId": "gate", "reason": "run-completed"}, 1, null]',
          '... its open executions cancelled, in node id order');
SELECT is(pg_temp.shape('acme/calls-open-direct-01') -> 'events' -> 6, '[6, "node.cancelled", "work", {"nodeId": "work", "reason": "run-completed"}, 1, null]',
          '... both of them');
SELECT is(pg_temp.shape('acme/calls-open-direct-01') -> 'interrupts', '["cancelled"]', '... its pending interrupt cancelled');
SELECT is((pg_temp.shape('acme/calls-open-direct-01') ->> 'open')::int, 0, '... and no longer open');
SELECT is(pg_temp.shape('acme/calls-open-direct-01'), pg_temp.shape('acme/calls-open-sql-00001'),
          '... the same rows and events as through the statements');
-- only completed executions and a resolved interrupt: nothing to cancel
SELECT is(pg_temp.shape('acme/calls-direct-0000002') -> 'events' -> -1 ->> 1, 'run.completed',
          'direct_end_run: a run with nothing open ends with run.completed right after node.completed');
SELECT is(pg_temp.shape('acme/calls-direct-0000002') -> 'events' -> -2 ->> 1, 'node.completed', '... nothing cancelled');

-- ---------------------------------------------------------------- interrupt(): the key and the completed prefix
CREATE FUNCTION pg_temp.prefix_run(run text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE first jsonb;
BEGIN
  PERFORM openwop.create_run('calls', jsonb_build_object('runId', run));
  PERFORM openwop.start_node(run, 'a');
  PERFORM openwop.complete_node(run, 'a', '{"v": 1}');
  PERFORM openwop.start_node(run, 'a');
  PERFORM openwop.complete_node(run, 'a', '{"v": 2}');
  PERFORM openwop.start_node(run, 'b');
  PERFORM openwop.complete_node(run, 'b', '{"w": true}');
  PERFORM openwop.start_node(run, 'x');
  PERFORM openwop.fail_node(run, 'x', '{"code": "e", "message": "m"}');
  PERFORM openwop.start_node(run, 'gate');
  first := openwop.interrupt(run, 'gate', '{"kind": "clarification", "data": {"questions": [{"id": "why", "question": "Why?"}]}}');
  -- a parallel branch completes after the request: not part of its prefix
  PERFORM openwop.start_node(run, 'c');
  PERFORM openwop.complete_node(run, 'c', '{"late": true}');
  RETURN jsonb_build_object('first', first - 'metadata' - 'key',
                            'again', openwop.interrupt(run, 'gate', '{"kind": "clarification", "data": {"questions": [{"id": "why", "question": "Why?"}]}}') - 'metadata' - 'key');
END $$;
CREATE TEMP TABLE prefixes AS SELECT pg_temp.prefix_run('acme/calls-prefix-direct1') AS direct;
SELECT is((SELECT direct -> 'first' -> 'results' FROM prefixes), '{"a": {"v": 2}, "b": {"w": true}}',
          'direct_interrupt_prefix: the results are the latest outputs of each node completed before the request');
SELECT is((SELECT direct -> 'again' FROM prefixes), (SELECT direct -> 'first' FROM prefixes),
          '... and the same key again returns the same envelope, without the node completed after the request');
ALTER TABLE openwop.events ENABLE ROW LEVEL SECURITY;
ALTER TABLE openwop.interrupts ENABLE ROW LEVEL SECURITY;
UPDATE prefixes SET direct = direct || jsonb_build_object('sql', pg_temp.prefix_run('acme/calls-prefix-sql-001'));
ALTER TABLE openwop.events DISABLE ROW LEVEL SECURITY;
ALTER TABLE openwop.interrupts DISABLE ROW LEVEL SECURITY;
SELECT is((SELECT direct -> 'sql' -> 'first' FROM prefixes) - 'runId', (SELECT direct -> 'first' FROM prefixes) - 'runId',
          'direct_interrupt_prefix_fallback: through the statements the envelope is the same');
SELECT is((SELECT direct -> 'sql' -> 'again' FROM prefixes) - 'runId', (SELECT direct -> 'again' FROM prefixes) - 'runId',
          '... and so is the replayed one');
-- a resolved key replays its recorded resolution, on both paths
SELECT is(openwop.resolve_interrupt('acme/calls-prefix-direct1', 'gate', '{"answers": {"why": "because"}}') ->> 'runStatus', 'running',
          'direct_interrupt_key: the clarification is answered');
SELECT is(openwop.interrupt('acme/calls-prefix-direct1', 'gate', '{"kind": "clarification", "data": {"questions": [{"id": "why", "question": "Why?"}]}}')
            - 'interruptId' - 'resolvedBy',
          '{"status": "resolved", "resumeValue": {"answers": {"why": "because"}}}',
          '... and the same key again replays the recorded answer');
ALTER TABLE openwop.interrupts ENABLE ROW LEVEL SECURITY;
SELECT is(openwop.interrupt('acme/calls-prefix-direct1', 'gate', '{"kind": "clarification", "data": {"questions": [{"id": "why", "question": "Why?"}]}}')
            - 'interruptId' - 'resolvedBy',
          '{"status": "resolved", "resumeValue": {"answers": {"why": "because"}}}',
          'direct_interrupt_key_fallback: through the statement the replay is the same');
SELECT is(pg_temp.refusal($$SELECT openwop.interrupt('acme/calls-prefix-direct1', 'gate', '{"kind": "approval", "data": {"artifactId": "a",
    "artifactType": "doc", "title": "T", "actions": ["accept"]}}')$$),
          'PT409 run_state_conflict: key "' || (SELECT key FROM openwop.interrupts WHERE run_id = 'acme/calls-prefix-direct1')
            || '" was requested as a clarification interrupt, not approval {"runStatus": null}',
          '... and another kind under the same key is refused');
ALTER TABLE openwop.interrupts DISABLE ROW LEVEL SECURITY;
SELECT is(pg_temp.refusal($$SELECT openwop.interrupt('acme/calls-prefix-direct1', 'gate', '{"kind": "approval", "data": {"artifactId": "a",
    "artifactType": "doc", "title": "T", "actions": ["accept"]}}')$$),
          'PT409 run_state_conflict: key "' || (SELECT key FROM openwop.interrupts WHERE run_id = 'acme/calls-prefix-direct1')
            || '" was requested as a clarification interrupt, not approval {"runStatus": null}',
          'direct_interrupt_key: another kind under the same key is refused the same way');

-- the size bound of the completed prefix, on both paths (openwop.max_payload_size 1kB: 128 kB)
SET LOCAL openwop.max_payload_size = '1kB';
DO $$ BEGIN
  PERFORM openwop.create_run('calls', '{"runId": "acme/calls-prefix-bound01"}');
  FOR i IN 1..150 LOOP
    PERFORM openwop.start_node('acme/calls-prefix-bound01', 'n' || i);
    PERFORM openwop.complete_node('acme/calls-prefix-bound01', 'n' || i, jsonb_build_object('blob', repeat('x', 900)));
  END LOOP;
  PERFORM openwop.start_node('acme/calls-prefix-bound01', 'gate');
END $$;
SELECT is(split_part(pg_temp.refusal($$SELECT openwop.interrupt('acme/calls-prefix-bound01', 'gate', '{"kind": "custom", "data": {"customKind": "k"}}')$$), ':', 1),
          'PT409 run_state_conflict', 'direct_interrupt_prefix: a completed prefix over the envelope bound is a 409');
ALTER TABLE openwop.events ENABLE ROW LEVEL SECURITY;
SELECT is(split_part(pg_temp.refusal($$SELECT openwop.interrupt('acme/calls-prefix-bound01', 'gate', '{"kind": "custom", "data": {"customKind": "k"}}')$$), ':', 1),
          'PT409 run_state_conflict', 'direct_interrupt_prefix_fallback: ... and so it is through the statement');
ALTER TABLE openwop.events DISABLE ROW LEVEL SECURITY;

SELECT * FROM finish();
ROLLBACK;
