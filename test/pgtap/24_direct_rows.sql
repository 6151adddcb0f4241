-- Direct row access (src/store/rowstore.c): the resolve's rows are read and
-- written without statements while the tables are plain, and through the
-- SQL statements as soon as a DBA adds a trigger, a rule, row security or
-- a column with a default; constraints hold on both paths, and the rows
-- each path writes are the same.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir callers.psql

\ir gates.psql
-- what a resolve left behind, without ids and clocks
CREATE FUNCTION pg_temp.written(run text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object(
    'events', (SELECT jsonb_agg(jsonb_build_array(sequence, type, node_id, payload - '{interruptId,key}'::text[] #- '{resumeValue,decidedAt}',
                                                  schema_version, causation_id, created_at IS NOT NULL) ORDER BY sequence)
                 FROM openwop.events WHERE run_id = run),
    'interrupt', (SELECT jsonb_build_array(status, decision, action, reason, resolved_sequence,
                                           resume_value - 'decidedAt', resolved_by, resolved_at IS NOT NULL)
                    FROM openwop.interrupts WHERE run_id = run),
    'execution', (SELECT jsonb_agg(status) FROM openwop.node_executions WHERE run_id = run),
    'run', (SELECT jsonb_build_array(status, current_node_id, next_sequence, ended_at IS NULL)
              FROM openwop.runs WHERE run_id = run))
$$;
CREATE TABLE pg_temp.fired (what text);
CREATE FUNCTION public.tap_direct_log() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO pg_temp.fired VALUES (TG_TABLE_NAME || ' ' || TG_OP || ' ' || TG_LEVEL);
  RETURN CASE WHEN TG_LEVEL = 'ROW' THEN NEW END;
END $$;

-- the plain tables: the direct path
SELECT pg_temp.gate('acme/direct-plain-000001');
CREATE TEMP TABLE counts AS
  SELECT relname, n_tup_upd, n_tup_hot_upd, n_tup_del FROM pg_stat_xact_user_tables
   WHERE schemaname = 'openwop' AND relname IN ('interrupts', 'open_interrupts');
SELECT is(openwop.resolve_interrupt('acme/direct-plain-000001', 'gate', '{"action": "accept"}') ->> 'runStatus',
          'running', 'direct_rows: a resolve on the plain tables resumes the run');
SELECT is((SELECT (x.n_tup_upd - c.n_tup_upd) || '/' || (x.n_tup_hot_upd - c.n_tup_hot_upd)
             FROM pg_stat_xact_user_tables x JOIN counts c USING (relname)
            WHERE x.schemaname = 'openwop' AND relname = 'interrupts'), '1/1',
          'claim_is_hot: the claim is one update of the interrupt row, a HOT one');
SELECT is((SELECT x.n_tup_del - c.n_tup_del FROM pg_stat_xact_user_tables x JOIN counts c USING (relname)
            WHERE x.schemaname = 'openwop' AND relname = 'open_interrupts'), 1::bigint,
          '... and the delete of its row in openwop.open_interrupts');
SELECT is((SELECT count(*)::int FROM pg_index x JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = ANY (x.indkey)
            WHERE x.indrelid = 'openwop.interrupts'::regclass
              AND (a.attname IN ('status', 'resolved_sequence', 'resume_value', 'decision', 'action', 'reason',
                                 'resolved_by', 'resolved_at')
                   OR x.indpred IS NOT NULL OR x.indexprs IS NOT NULL)), 0,
          'claim_is_hot: no index of openwop.interrupts names a column the claim changes, in its key or a predicate');
SELECT is(pg_temp.written('acme/direct-plain-000001') -> 'events' -> 4,
          jsonb_build_array(4, 'interrupt.resolved', 'gate',
            (SELECT payload - '{interruptId,key}'::text[] #- '{resumeValue,decidedAt}' FROM openwop.events
              WHERE run_id = 'acme/direct-plain-000001' AND sequence = 4), 1, NULL, true),
          '... interrupt.resolved at the next sequence, with the column defaults (schema_version 1, created_at)');
SELECT is(pg_temp.written('acme/direct-plain-000001') -> 'interrupt' ->> 0, 'resolved', '... the interrupt is claimed');
SELECT is(pg_temp.written('acme/direct-plain-000001') -> 'execution', '["pending"]', '... the execution is pending again (INT-3)');
SELECT is(pg_temp.written('acme/direct-plain-000001') -> 'run', '["running", "gate", 6, true]', '... the run row is written back');

-- a row and a statement trigger on each table the resolve writes: every one fires
CREATE TRIGGER tap_events_row BEFORE INSERT ON openwop.events FOR EACH ROW EXECUTE FUNCTION public.tap_direct_log();
CREATE TRIGGER tap_events_stmt AFTER INSERT ON openwop.events FOR EACH STATEMENT EXECUTE FUNCTION public.tap_direct_log();
CREATE TRIGGER tap_interrupts_row AFTER UPDATE ON openwop.interrupts FOR EACH ROW EXECUTE FUNCTION public.tap_direct_log();
CREATE TRIGGER tap_executions_row BEFORE UPDATE ON openwop.node_executions FOR EACH ROW EXECUTE FUNCTION public.tap_direct_log();
CREATE TRIGGER tap_runs_stmt AFTER UPDATE ON openwop.runs FOR EACH STATEMENT EXECUTE FUNCTION public.tap_direct_log();
SELECT pg_temp.gate('acme/direct-trigger-00001');
DELETE FROM pg_temp.fired;
SELECT is(openwop.resolve_interrupt('acme/direct-trigger-00001', 'gate', '{"action": "accept"}') ->> 'runStatus',
          'running', 'direct_rows_fallback: with triggers a DBA added, the resolve still resumes the run');
SELECT bag_eq('SELECT what FROM pg_temp.fired',
              $$VALUES ('events INSERT ROW'), ('events INSERT ROW'), ('events INSERT STATEMENT'),
                       ('events INSERT STATEMENT'), ('interrupts UPDATE ROW'), ('node_executions UPDATE ROW'), ('runs UPDATE STATEMENT')$$,
              '... through the SQL statements, one per row: every row and statement trigger fired');
SELECT is(pg_temp.written('acme/direct-trigger-00001'), pg_temp.written('acme/direct-plain-000001'),
          '... and the rows written are those the direct path writes');
DROP TRIGGER tap_events_row ON openwop.events;
DROP TRIGGER tap_events_stmt ON openwop.events;
DROP TRIGGER tap_interrupts_row ON openwop.interrupts;
DROP TRIGGER tap_executions_row ON openwop.node_executions;
DROP TRIGGER tap_runs_stmt ON openwop.runs;

-- a rule
CREATE RULE tap_claims AS ON UPDATE TO openwop.interrupts
    DO ALSO INSERT INTO pg_temp.fired VALUES ('rule ' || NEW.status);
SELECT pg_temp.gate('acme/direct-rule-0000001');
DELETE FROM pg_temp.fired;
SELECT is(openwop.resolve_interrupt('acme/direct-rule-0000001', 'gate', '{"action": "accept"}') ->> 'decision',
          'granted', 'direct_rows_fallback: with a rule on interrupts the claim runs as SQL');
SELECT is((SELECT array_agg(what) FROM pg_temp.fired), '{"rule resolved"}', '... and the rule fired');
DROP RULE tap_claims ON openwop.interrupts;

-- row-level security enabled (the owner is exempt, but the statement decides that)
ALTER TABLE openwop.runs ENABLE ROW LEVEL SECURITY;
ALTER TABLE openwop.interrupts ENABLE ROW LEVEL SECURITY;
SELECT pg_temp.gate('acme/direct-rls-00000001');
SELECT is(openwop.resolve_interrupt('acme/direct-rls-00000001', 'gate', '{"action": "accept"}') ->> 'runStatus',
          'running', 'direct_rows_fallback: with row-level security enabled the resolve runs as SQL');
SELECT is(pg_temp.written('acme/direct-rls-00000001'), pg_temp.written('acme/direct-plain-000001'),
          '... writing the same rows');
ALTER TABLE openwop.runs DISABLE ROW LEVEL SECURITY;
ALTER TABLE openwop.interrupts DISABLE ROW LEVEL SECURITY;

-- a column with a default on the event log: the direct insert would skip the default
ALTER TABLE openwop.events ADD COLUMN tap_note text DEFAULT 'from-the-default';
SELECT pg_temp.gate('acme/direct-column-00001');
SELECT is(openwop.resolve_interrupt('acme/direct-column-00001', 'gate', '{"action": "accept"}') ->> 'decision',
          'granted', 'direct_rows_fallback: with a column a DBA added to the event log the resolve still works');
SELECT is((SELECT array_agg(DISTINCT tap_note) FROM openwop.events
            WHERE run_id = 'acme/direct-column-00001' AND sequence >= 4),
          '{from-the-default}', '... and the appended events carry the column''s default');
ALTER TABLE openwop.events DROP COLUMN tap_note;

-- a CHECK constraint holds on the direct path, and nothing is half-applied
ALTER TABLE openwop.interrupts ADD CONSTRAINT tap_no_rejection CHECK (decision IS DISTINCT FROM 'rejected') NOT VALID;
SELECT pg_temp.gate('acme/direct-check-000001');
SELECT throws_ok($$SELECT openwop.resolve_interrupt('acme/direct-check-000001', 'gate', '{"action": "reject"}')$$,
                 '23514', NULL, 'direct_rows: a CHECK constraint a DBA added refuses the claim');
ALTER TABLE openwop.interrupts DROP CONSTRAINT tap_no_rejection;
SELECT is(pg_temp.written('acme/direct-check-000001') -> 'run', '["waiting-approval", "gate", 4, true]',
          '... and the refused resolve left the run as it was');
SELECT is((SELECT count(*)::int FROM openwop.events WHERE run_id = 'acme/direct-check-000001'), 4,
          '... with no event appended');

-- a unique constraint the direct path checks: the event log's one terminal event per run
SELECT pg_temp.gate('acme/direct-unique-00001');
SELECT is(openwop.cancel_run('acme/direct-unique-00001') ->> 'status', 'cancelled', 'direct_rows: a run ends');
SELECT throws_ok($$INSERT INTO openwop.events (tenant, run_id, sequence, type, payload, hash)
                   VALUES ('acme', 'acme/direct-unique-00001', 99, 'run.failed', '{}', sha256('forged'))$$,
                 '23505', NULL, '... and its terminal event is the one the partial unique index allows');

-- the relation cache is forgotten when the tables are made again
SAVEPOINT again;
DROP EXTENSION openwop_interrupt CASCADE;
CREATE EXTENSION openwop_interrupt;
SELECT pg_temp.gate('acme/direct-again-000001');
SELECT is(openwop.resolve_interrupt('acme/direct-again-000001', 'gate', '{"action": "accept"}') ->> 'runStatus',
          'running', 'direct_rows: after DROP and CREATE EXTENSION in the same session the resolve finds the new tables');
ROLLBACK TO SAVEPOINT again;
SELECT pg_temp.gate('acme/direct-back-0000001');
SELECT is(openwop.resolve_interrupt('acme/direct-back-0000001', 'gate', '{"action": "accept"}') ->> 'runStatus',
          'running', '... and after rolling that back, the original tables again');

SELECT * FROM finish();
ROLLBACK;
