-- One expiry policy (src/domain/deadlines.c), every order of arrival that one
-- transaction can show: sweep() first, a late answer first, and what each
-- leaves for the other.  FlowDrop INT-18 (an expired outward interrupt
-- ends the run it held open, announced once) and INT-23 (the late answer
-- itself announces nothing).  The worker's orders are in
-- test/checks/timeout_worker.sh, the races in test/specs/late_answer_race.spec.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir refusal.psql
\ir callers.psql
\ir events.psql

-- a run whose node "wait" waits on an external event, and whose node "side" runs
CREATE FUNCTION pg_temp.waiting(run text, kind text DEFAULT 'external-event') RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM openwop.create_run('expiry', jsonb_build_object('runId', run));
  PERFORM openwop.start_node(run, 'side');
  PERFORM openwop.start_node(run, 'wait');
  PERFORM openwop.interrupt(run, 'wait', CASE kind
    WHEN 'external-event' THEN '{"kind": "external-event", "data": {"eventType": "paid", "correlation": {"order": 7}}, "timeoutMs": 60000}'::jsonb
    WHEN 'clarification' THEN '{"kind": "clarification", "data": {"questions": [{"id": "q1", "question": "Why?"}]}, "timeoutMs": 60000}'::jsonb
    ELSE '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc", "title": "T", "actions": ["accept", "reject"]}, "timeoutMs": 60000}'::jsonb
  END);
  -- the deadline has passed; nothing has applied it yet
  UPDATE openwop.interrupts SET expires_at = now() - interval '1 second' WHERE run_id = run;
END $$;
CREATE FUNCTION pg_temp.answer(run text, value jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT openwop.resolve_interrupt(run, 'wait', value) - 'interruptId'
$$;

-- late answer first: expired silently, the run left as it is (INT-23) ...
SELECT pg_temp.waiting('acme/expiry-late-first-01');
SELECT is(pg_temp.answer('acme/expiry-late-first-01', '{"paid": true}'),
          '{"status": "expired", "runId": "acme/expiry-late-first-01", "nodeId": "wait", "kind": "external-event",
            "runStatus": "waiting-external"}',
          'late_answer_expires_silently: an answer after the deadline is answered expired, returned not raised');
SELECT is(pg_temp.types('acme/expiry-late-first-01'), 'run.started,node.started,node.started,interrupt.requested,node.suspended',
          'late_answer_announces_nothing: the late answer appends no event (INT-23)');
SELECT is((SELECT status || '/' || coalesce(resolved_sequence::text, 'due') FROM openwop.interrupts
            WHERE run_id = 'acme/expiry-late-first-01'), 'expired/due',
          'the interrupt is expired, its announcement still due');
SELECT is(openwop.interrupt('acme/expiry-late-first-01', 'wait',
            '{"kind": "external-event", "data": {"eventType": "paid", "correlation": {"order": 7}}, "timeoutMs": 60000}') - 'interruptId',
          '{"status": "expired", "runId": "acme/expiry-late-first-01", "kind": "external-event"}',
          'late_expired_replay_is_not_run_terminal: a replay of the key on the live run says expired');
SELECT is(pg_temp.refusal($$ SELECT pg_temp.answer('acme/expiry-late-first-01', '{"paid": true}') $$) ->> 'code',
          'interrupt_already_resolved', 'a second answer finds nothing pending');
-- ... then the sweep ends the run it held open, once (INT-18)
SELECT is(openwop.sweep(), 1, 'late_expired_run_is_ended_by_sweep: sweep() takes the interrupt a late answer expired');
SELECT is(pg_temp.types('acme/expiry-late-first-01'),
          'run.started,node.started,node.started,interrupt.requested,node.suspended,node.cancelled,node.cancelled,run.cancelled',
          '... its open jobs are cancelled and the run is cancelled');
SELECT is((SELECT e->'payload'->>'reason' FROM openwop.events('acme/expiry-late-first-01') e WHERE e->>'type' = 'run.cancelled'),
          'interrupt-expired', '... with reason interrupt-expired');
SELECT is((SELECT resolved_sequence FROM openwop.interrupts WHERE run_id = 'acme/expiry-late-first-01'),
          (SELECT max((e->>'sequence')::bigint) FROM openwop.events('acme/expiry-late-first-01') e),
          'the interrupt records the terminal event that announced its expiry');
SELECT is(openwop.sweep(), 0, 'a second sweep finds nothing: announced once');
SELECT is(pg_temp.refusal($$ SELECT openwop.complete_node('acme/expiry-late-first-01', 'wait') $$) ->> 'code',
          'run_terminal', 'complete_node then meets the ended run, not a node stuck interrupted');
SELECT is(pg_temp.refusal($$ SELECT openwop.interrupt('acme/expiry-late-first-01', 'wait',
            '{"kind": "external-event", "data": {"eventType": "paid", "correlation": {"order": 7}}, "timeoutMs": 60000}') $$) ->> 'code',
          'run_terminal', 'a replay of the key after the run ended is run_terminal');

-- sweep() first: expires and ends the run at once; a late answer then finds it ended
SELECT pg_temp.waiting('acme/expiry-sweep-first-1');
SELECT is(openwop.sweep(), 1, 'sweep_first_expires_and_ends_the_run');
SELECT is(openwop.run_snapshot('acme/expiry-sweep-first-1') ->> 'status', 'cancelled', '... the run is cancelled');
SELECT is(pg_temp.refusal($$ SELECT pg_temp.answer('acme/expiry-sweep-first-1', '{"paid": true}') $$),
          '{"sqlstate": "PT409", "code": "interrupt_already_resolved",
            "details": {"runId": "acme/expiry-sweep-first-1", "nodeId": "wait", "runStatus": "cancelled"}}',
          'an answer after the sweep is interrupt_already_resolved: the run has ended');
SELECT is((SELECT count(*) FROM openwop.events('acme/expiry-sweep-first-1') e WHERE e->>'type' = 'run.cancelled'), 1::bigint,
          '... and appends nothing: one terminal event');

-- a late answer on a clarification: the same policy for every outward kind
SELECT pg_temp.waiting('acme/expiry-late-clarify1', 'clarification');
SELECT is(pg_temp.answer('acme/expiry-late-clarify1', '{"q1": "because"}') ->> 'status', 'expired',
          'a late clarification answer is expired too');
SELECT is(openwop.sweep(), 1, '... and the sweep ends its run');
SELECT is(openwop.run_snapshot('acme/expiry-late-clarify1') ->> 'status', 'cancelled', '... cancelled');

-- an approval: both paths reject it by timeout in the same transaction (fail closed)
SELECT pg_temp.waiting('acme/expiry-late-approve1', 'approval');
SELECT is(pg_temp.answer('acme/expiry-late-approve1', '{"action": "accept"}'),
          '{"status": "expired", "runId": "acme/expiry-late-approve1", "nodeId": "wait", "kind": "approval",
            "decision": "rejected", "action": "timeout", "reason": "timeout", "runStatus": "failed"}',
          'late_approval_rejects_by_timeout: a late accept never grants');
SELECT is(openwop.sweep(), 0, '... and leaves the sweep nothing');

-- the run ended another way after a late answer: that ending was the announcement
SELECT pg_temp.waiting('acme/expiry-late-cancel01');
SELECT is(pg_temp.answer('acme/expiry-late-cancel01', '{"paid": true}') ->> 'status', 'expired', 'a late answer expires it');
SELECT is(openwop.cancel_run('acme/expiry-late-cancel01', 'operator') ->> 'status', 'cancelled', 'the engine cancels the run itself');
SELECT is(openwop.sweep(), 1, 'late_expired_on_ended_run_is_settled_silently: the sweep takes it ...');
SELECT is((SELECT count(*) FROM openwop.events('acme/expiry-late-cancel01') e WHERE e->>'type' LIKE 'run.%'), 2::bigint,
          '... appends nothing: the run keeps its outcome (INT-18: never announced twice)');
SELECT is((SELECT e->'payload'->>'reason' FROM openwop.events('acme/expiry-late-cancel01') e WHERE e->>'type' = 'run.cancelled'),
          'operator', '... whose reason is the engine''s');
SELECT is(openwop.sweep(), 0, '... and never again');

-- INT-23: no deadline is never due, on either path
DO $$ BEGIN
  PERFORM openwop.create_run('expiry', '{"runId": "acme/expiry-no-deadline-1"}');
  PERFORM openwop.start_node('acme/expiry-no-deadline-1', 'wait');
  PERFORM openwop.interrupt('acme/expiry-no-deadline-1', 'wait', '{"kind": "external-event", "data": {"eventType": "paid", "correlation": {}}, "timeoutMs": 0}');
END $$;
SELECT is(openwop.sweep(), 0, 'no_deadline_is_never_swept');
SELECT is(pg_temp.answer('acme/expiry-no-deadline-1', '{"paid": true}') ->> 'status', 'resolved', '... and stays answerable');

SELECT * FROM finish();
ROLLBACK;
