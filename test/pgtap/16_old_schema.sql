-- A database still on schema 0.3.0 (its AFTER INSERT trigger on
-- openwop.events bound to ow_escalate_low_confidence) with the new library,
-- before ALTER EXTENSION UPDATE: record_agent_decision escalates by itself
-- and the old trigger does nothing, so a decision escalates exactly once;
-- after the update the trigger is gone and it still does.
BEGIN;
SELECT * FROM no_plan();
DROP EXTENSION openwop_interrupt;
CREATE EXTENSION openwop_interrupt VERSION '0.3.0';
SET LOCAL openwop.tenant = 'acme';
\ir refusal.psql
\ir events.psql

SELECT is((SELECT count(*) FROM pg_trigger WHERE tgname = 'events_escalate_low_confidence'), 1::bigint,
          'schema 0.3.0 still binds the escalation trigger');
DO $$ BEGIN PERFORM openwop.create_run('old-schema', '{"runId": "acme/old-schema-run-0001"}');
  PERFORM openwop.start_node('acme/old-schema-run-0001', 'agent'); END $$;
SELECT is(openwop.record_agent_decision('acme/old-schema-run-0001', 'agent', 'planner', 0.1) ->> 'escalated', 'true',
          'old_schema_escalates_once: a decision below the threshold escalates on schema 0.3.0');
SELECT is((SELECT count(*) FROM openwop.interrupts WHERE run_id = 'acme/old-schema-run-0001'), 1::bigint,
          '... with one interrupt, not one from the API and one from the trigger');
SELECT is(pg_temp.types('acme/old-schema-run-0001'), 'run.started,node.started,agent.decided,interrupt.requested,node.suspended',
          '... and one interrupt.requested, one node.suspended');
SELECT is((SELECT next_sequence FROM openwop.runs WHERE run_id = 'acme/old-schema-run-0001'), 5::bigint,
          '... counted in the run row');
DO $$ BEGIN PERFORM openwop.create_run('old-schema', '{"runId": "acme/old-schema-run-0002"}');
  PERFORM openwop.start_node('acme/old-schema-run-0002', 'agent'); END $$;
SELECT is(openwop.record_agent_decision('acme/old-schema-run-0002', 'agent', 'planner', 0.9) ->> 'escalated', 'false',
          'a decision above the threshold does not escalate on schema 0.3.0');
SELECT is(pg_temp.types('acme/old-schema-run-0002'), 'run.started,node.started,agent.decided',
          '... and the old trigger appends nothing');

ALTER EXTENSION openwop_interrupt UPDATE TO '0.4.0';
SELECT is((SELECT count(*) FROM pg_trigger WHERE tgname = 'events_escalate_low_confidence'), 0::bigint,
          'the update to 0.4.0 drops the escalation trigger');
SELECT is(to_regprocedure('openwop.escalate_low_confidence()'), NULL, '... and its function');
DO $$ BEGIN PERFORM openwop.create_run('old-schema', '{"runId": "acme/old-schema-run-0003"}');
  PERFORM openwop.start_node('acme/old-schema-run-0003', 'agent'); END $$;
SELECT is(openwop.record_agent_decision('acme/old-schema-run-0003', 'agent', 'planner', 0.1) ->> 'escalated', 'true',
          'updated_schema_escalates_once: after the update a decision below the threshold still escalates');
SELECT is(pg_temp.types('acme/old-schema-run-0003'), 'run.started,node.started,agent.decided,interrupt.requested,node.suspended',
          '... once');

SELECT * FROM finish();
ROLLBACK;
