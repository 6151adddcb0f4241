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

-- schema 0.5.0 (the open interrupts still in openwop.interrupts) with the new
-- library: raise, resolve, cancel, deadlines and the inbox work on it, through
-- the statements' older forms; the update carries the open interrupts over
ALTER EXTENSION openwop_interrupt UPDATE TO '0.5.0';
\ir callers.psql
CREATE FUNCTION pg_temp.gate(run text, extra jsonb DEFAULT '{}') RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM openwop.create_run('old-schema', jsonb_build_object('runId', run));
  PERFORM openwop.start_node(run, 'gate');
  PERFORM openwop.interrupt(run, 'gate', '{"kind": "approval", "data": {"artifactId": "a",
    "artifactType": "doc", "title": "T", "actions": ["accept", "reject"]}}'::jsonb || extra);
END $$;
SELECT is(to_regclass('openwop.open_interrupts'), NULL, 'schema 0.5.0 has no openwop.open_interrupts');
SELECT pg_temp.gate('acme/old-schema-gate-0001');
SELECT is(openwop.resolve_interrupt('acme/old-schema-gate-0001', 'gate', '{"action": "accept"}') ->> 'runStatus', 'running',
          'old_schema_resolves: on schema 0.5.0 a gate is raised and resolved');
SELECT throws_ok($$SELECT openwop.resolve_interrupt('acme/old-schema-gate-0001', 'gate', '{"action": "reject"}')$$,
                 'PT409', NULL, '... once: a second resolve is interrupt_already_resolved');
SELECT pg_temp.gate('acme/old-schema-gate-0002');
SELECT is(openwop.cancel_run('acme/old-schema-gate-0002') ->> 'status', 'cancelled', 'old_schema_cancels: a run waiting on a gate is cancelled');
SELECT is((SELECT status FROM openwop.interrupts WHERE run_id = 'acme/old-schema-gate-0002'), 'cancelled', '... and its gate with it');
SELECT pg_temp.gate('acme/old-schema-gate-0003', '{"timeoutMs": 600000}');
UPDATE openwop.interrupts SET expires_at = now() - interval '1 second' WHERE run_id = 'acme/old-schema-gate-0003';
SELECT is(openwop.sweep(10), 1, 'old_schema_sweeps: a passed deadline is applied on schema 0.5.0');
SELECT is(openwop.run_snapshot('acme/old-schema-gate-0003') ->> 'status', 'failed', '... the approval rejected by timeout');
SELECT pg_temp.gate('acme/old-schema-gate-0004');
SELECT pg_temp.gate('acme/old-schema-gate-0005', '{"timeoutMs": 600000}');
SELECT is((SELECT count(*)::int FROM openwop.pending_interrupts WHERE run_id LIKE 'acme/old-schema-gate-%'), 2,
          '... and the inbox lists the pending gates');

ALTER EXTENSION openwop_interrupt UPDATE TO '0.6.0';
SELECT is((SELECT array_agg(run_id || ' ' || status || ' ' || (expires_at IS NOT NULL) ORDER BY run_id) FROM openwop.open_interrupts),
          '{"acme/old-schema-gate-0004 pending false","acme/old-schema-gate-0005 pending true","acme/old-schema-run-0001 pending false","acme/old-schema-run-0003 pending false"}',
          'updated_schema_keeps_open_interrupts: the update to 0.6.0 carries the pending interrupts (the gates, the escalations) over to openwop.open_interrupts');
SELECT is((SELECT count(*)::int FROM openwop.pending_interrupts WHERE run_id LIKE 'acme/old-schema-gate-%'), 2,
          '... the inbox still lists them');
SELECT is(openwop.resolve_interrupt('acme/old-schema-gate-0004', 'gate', '{"action": "accept"}') ->> 'runStatus', 'running',
          '... a gate raised before the update is resolved after it');
SELECT is((SELECT count(*)::int FROM openwop.open_interrupts WHERE run_id = 'acme/old-schema-gate-0004'), 0,
          '... and is no longer open');
UPDATE openwop.interrupts SET expires_at = now() - interval '1 second' WHERE run_id = 'acme/old-schema-gate-0005';
SELECT is(openwop.sweep(10), 1, '... and a deadline of one raised before the update is applied after it');

-- schema 0.7.0 (no openwop.conversations) with the new library: no
-- conversations there, and none advertised; the update to 0.8.0 brings them
ALTER EXTENSION openwop_interrupt UPDATE TO '0.7.0';
DO $$ BEGIN PERFORM openwop.create_run('old-schema', '{"runId": "acme/old-schema-conv-0001"}');
  PERFORM openwop.start_node('acme/old-schema-conv-0001', 'talk'); END $$;
SELECT is(pg_temp.refusal($$ SELECT openwop.interrupt('acme/old-schema-conv-0001', 'talk',
                                 '{"kind": "conversation.start", "data": {"conversationId": "c1"}}') $$),
          '{"sqlstate": "PT422", "code": "capability_required", "details": {"requiredCapability": "conversationPrimitive"}}',
          'old_schema_refuses_conversations: on schema 0.7.0 a conversation kind is 422 capability_required');
SELECT is(pg_temp.types('acme/old-schema-conv-0001'), 'run.started,node.started', '... appending nothing');
SELECT is(openwop.capabilities() ? 'conversationPrimitive', false, '... and capabilities() does not advertise conversationPrimitive there');
-- nor oauth.credentialInterrupt: schema 0.7.0 has no confirm_credential(), so no credential could ever be confirmed
SELECT is(openwop.capabilities() ? 'oauth', false,
          'old_schema_no_oauth: on schema 0.7.0 capabilities() does not advertise oauth.credentialInterrupt (nothing there can confirm a credential)');
DO $$ BEGIN PERFORM openwop.start_node('acme/old-schema-conv-0001', 'cred'); END $$;
SELECT is(pg_temp.refusal($$ SELECT openwop.interrupt('acme/old-schema-conv-0001', 'cred',
                                 '{"kind": "credential", "data": {"provider": "gh", "scopes": ["repo"], "reason": "missing",
                                   "connectUrl": "https://host.example/connect/1"}}') $$),
          '{"sqlstate": "PT422", "code": "capability_required", "details": {"requiredCapability": "oauth.credentialInterrupt"}}',
          '... and a credential request is 422 capability_required there, not a node suspended for ever');
-- nor replay: schema 0.7.0 has no fork_run()
SELECT is(openwop.capabilities() ? 'replay', false,
          'old_schema_no_replay: on schema 0.7.0 capabilities() does not advertise replay.modes (there is no fork_run())');
ALTER EXTENSION openwop_interrupt UPDATE TO '0.8.0';
SELECT is(openwop.capabilities() -> 'conversationPrimitive', '{}', 'updated_schema_has_conversations: after the update to 0.8.0 it is advertised');
SELECT is(openwop.capabilities() -> 'replay', '{"modes": ["replay", "branch"]}', '... and so are the replay modes');
SELECT is(openwop.capabilities() -> 'oauth', '{"credentialInterrupt": true}', '... and so is oauth.credentialInterrupt');
SELECT is(openwop.interrupt('acme/old-schema-conv-0001', 'cred', '{"kind": "credential", "data": {"provider": "gh", "scopes": ["repo"],
            "reason": "missing", "connectUrl": "https://host.example/connect/1"}}') ->> 'status',
          'interrupted', '... and the same credential request suspends its node');
SELECT is(openwop.interrupt('acme/old-schema-conv-0001', 'talk', '{"kind": "conversation.start", "data": {"conversationId": "c1"}}') ->> 'status',
          'interrupted', '... and the same conversation.start opens its conversation');

SELECT * FROM finish();
ROLLBACK;
