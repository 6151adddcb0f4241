-- Bounded work: a caller cannot make openwop store or process more than
-- the documented limits (openwop.max_payload_size, openwop.max_answer_size,
-- openwop.max_votes_per_voter), each refused with validation_error before
-- anything is written; and the low-confidence escalation takes the next
-- free ordinal instead of colliding with the engine's interrupts.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir refusal.psql
\ir callers.psql
\ir events.psql

-- the message of a refusal
CREATE FUNCTION pg_temp.refusal_message(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE msg text;
BEGIN
  EXECUTE sql;
  RETURN NULL;
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT;
  RETURN msg;
END $$;
-- a JSON object of about n bytes
CREATE FUNCTION pg_temp.blob(n int) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('blob', repeat('x', n))
$$;

-- the defaults, as documented
SELECT is(current_setting('openwop.max_payload_size'), '1MB', 'openwop.max_payload_size defaults to 1MB');
SELECT is(current_setting('openwop.max_answer_size'), '64kB', 'openwop.max_answer_size defaults to 64kB');
SELECT is(current_setting('openwop.max_votes_per_voter'), '16', 'openwop.max_votes_per_voter defaults to 16');

SET LOCAL openwop.max_payload_size = '4kB';
SET LOCAL openwop.max_answer_size = '2kB';
SET LOCAL openwop.max_votes_per_voter = 3;

DO $$ BEGIN
  PERFORM openwop.create_run('bounded', '{"runId": "acme/bounded-run-000001"}');
  PERFORM openwop.start_node('acme/bounded-run-000001', 'work');
  PERFORM openwop.start_node('acme/bounded-run-000001', 'gate');
  PERFORM openwop.interrupt('acme/bounded-run-000001', 'gate', '{"kind": "approval",
    "data": {"artifactId": "a", "artifactType": "doc", "title": "T", "actions": ["accept", "reject", "ask"], "requiredApprovals": 2}}');
END $$;

-- payloads an engine stores
SELECT is(pg_temp.refusal($$ SELECT openwop.complete_node('acme/bounded-run-000001', 'work', pg_temp.blob(5000)) $$),
          '{"sqlstate": "PT400", "code": "validation_error",
            "details": {"field": "outputs", "size": 5016, "limit": 4096, "setting": "openwop.max_payload_size"}}',
          'payload_size_limit_outputs: node outputs over openwop.max_payload_size are refused, with the size and the limit');
SELECT ok(openwop.complete_node('acme/bounded-run-000001', 'work', pg_temp.blob(3000)) ->> 'status' = 'completed',
          '... and a payload under the limit is stored');
SELECT is(pg_temp.refusal(format('SELECT openwop.create_run(%L, %L)', 'bounded', jsonb_build_object('metadata', pg_temp.blob(5000)))) -> 'details' ->> 'field',
          'options', 'payload_size_limit_options: create_run options');
SELECT is(pg_temp.refusal($$ SELECT openwop.fail_node('acme/bounded-run-000001', 'gate',
            jsonb_build_object('code', 'x', 'message', repeat('m', 5000))) $$) -> 'details' ->> 'field',
          'error', 'payload_size_limit_error: fail_node error');
SELECT is(pg_temp.refusal($$ SELECT openwop.interrupt('acme/bounded-run-000001', 'gate',
            jsonb_build_object('kind', 'custom', 'data', jsonb_build_object('customKind', 'k', 'payload', pg_temp.blob(5000))), 1) $$)
          -> 'details' ->> 'field', 'request', 'payload_size_limit_request: interrupt requests');
SELECT is(pg_temp.refusal($$ SELECT openwop.record_agent_decision('acme/bounded-run-000001', 'gate', 'planner', 0.9, pg_temp.blob(5000)) $$)
          -> 'details' ->> 'field', 'decision', 'payload_size_limit_decision: agent decisions');
SELECT is(pg_temp.refusal($$ SELECT openwop.cancel_run('acme/bounded-run-000001', repeat('r', 5000)) $$) -> 'details' ->> 'field',
          'reason', 'payload_size_limit_reason: cancel reasons');

-- answers: the run-scoped surface
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/bounded-run-000001', 'gate',
            jsonb_build_object('action', 'ask', 'feedback', repeat('f', 3000))) $$),
          '{"sqlstate": "PT400", "code": "validation_error",
            "details": {"field": "resumeValue", "size": 3037, "limit": 2048, "setting": "openwop.max_answer_size"}}',
          'answer_size_limit: a resume value over openwop.max_answer_size is refused');
SELECT is(pg_temp.types('acme/bounded-run-000001'),
          'run.started,node.started,node.started,interrupt.requested,node.suspended,node.completed',
          '... and every refusal above appended nothing');
SELECT is((SELECT count(*) FROM openwop.votes WHERE interrupt_id LIKE 'acme/%'), 0::bigint, '... nor stored a vote');

-- answers: the token surface (the anonymous holder of a link)
SELECT lives_ok($$ SELECT openwop.add_signing_key('k-bounded', 'bounded-secret-do-not-use'::bytea) $$, 'a signing key');
CREATE TEMP TABLE tok AS SELECT openwop.mint_interrupt_token(interrupt_id) AS token
  FROM openwop.interrupts WHERE run_id = 'acme/bounded-run-000001';
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt_by_token((SELECT token FROM tok),
            jsonb_build_object('action', 'ask', 'feedback', repeat('f', 3000))) $$) -> 'details' ->> 'field',
          'resumeValue', 'answer_size_limit_token: the token surface has the same limit');
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt_by_token('ow2.hs256.k-bounded.x.y',
            jsonb_build_object('action', 'ask', 'feedback', repeat('f', 3000))) $$) ->> 'code',
          'interrupt_token_invalid', '... checked after the token, which comes first');

-- votes: at most openwop.max_votes_per_voter answers per voter and gate
SELECT is(openwop.resolve_interrupt_by_token((SELECT token FROM tok), '{"action": "ask", "feedback": "1?"}') ->> 'status',
          'pending', 'an ask is recorded');
SELECT is(openwop.resolve_interrupt_by_token((SELECT token FROM tok), '{"action": "ask", "feedback": "2?"}') ->> 'status',
          'pending', 'a second ask');
SELECT is(openwop.resolve_interrupt_by_token((SELECT token FROM tok), '{"action": "accept"}') ->> 'status',
          'pending', 'a vote: the third answer of this voter');
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt_by_token((SELECT token FROM tok), '{"action": "ask", "feedback": "4?"}') $$),
          jsonb_build_object('sqlstate', 'PT400', 'code', 'validation_error', 'details',
            jsonb_build_object('field', 'resumeValue', 'interruptId', (SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/bounded-run-000001'),
                               'limit', 3, 'setting', 'openwop.max_votes_per_voter')),
          'votes_per_voter_cap: a fourth answer of the same voter is refused');
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt_by_token((SELECT token FROM tok), '{"action": "reject"}') $$) ->> 'code',
          'validation_error', '... a re-vote too');
SELECT is((SELECT count(*) FROM openwop.votes WHERE voter = 'token-holder'), 3::bigint, '... three rows stored, no more');
SELECT is(openwop.resolve_interrupt('acme/bounded-run-000001', 'gate', '{"action": "accept"}') ->> 'status', 'resolved',
          '... and another voter still decides the gate');

-- only a superuser sets the limits
CREATE ROLE openwop_tap_limits LOGIN;
SET LOCAL ROLE openwop_tap_limits;
SELECT throws_ok($$ SET openwop.max_answer_size = '1GB' $$, '42501', NULL, 'a non-superuser cannot raise openwop.max_answer_size');
SELECT throws_ok($$ SET openwop.max_payload_size = '1GB' $$, '42501', NULL, '... nor openwop.max_payload_size');
SELECT throws_ok($$ SET openwop.max_votes_per_voter = 10000 $$, '42501', NULL, '... nor openwop.max_votes_per_voter');
RESET ROLE;

-- escalation takes the next free ordinal
DO $$ BEGIN
  PERFORM openwop.create_run('bounded', '{"runId": "acme/bounded-escalate-01"}');
  PERFORM openwop.start_node('acme/bounded-escalate-01', 'agent');
  PERFORM openwop.interrupt('acme/bounded-escalate-01', 'agent', '{"kind": "custom", "data": {"customKind": "check"}}', 1);
  PERFORM openwop.resolve_interrupt('acme/bounded-escalate-01', 'agent', '{"ok": true}');
END $$;
SELECT is(openwop.record_agent_decision('acme/bounded-escalate-01', 'agent', 'planner', 0.1) ->> 'escalated', 'true',
          'escalation_takes_next_free_ordinal: a low-confidence decision after an interrupt at ordinal 1 escalates');
SELECT is((SELECT string_agg(kind || ':' || ordinal, ',' ORDER BY ordinal) FROM openwop.interrupts WHERE run_id = 'acme/bounded-escalate-01'),
          'custom:1,low-confidence:2', '... on ordinal 2, not a raw unique violation');

DO $$ BEGIN
  PERFORM openwop.create_run('bounded', '{"runId": "acme/bounded-escalate-02"}');
  PERFORM openwop.start_node('acme/bounded-escalate-02', 'agent');
  PERFORM openwop.interrupt('acme/bounded-escalate-02', 'agent', '{"kind": "custom", "data": {"customKind": "check"}}', 2147483647);
  PERFORM openwop.resolve_interrupt('acme/bounded-escalate-02', 'agent', '{"ok": true}');
END $$;
SELECT is(openwop.record_agent_decision('acme/bounded-escalate-02', 'agent', 'planner', 0.1) ->> 'escalated', 'true',
          'escalation_past_the_largest_ordinal: after an interrupt at ordinal 2147483647 the escalation still raises');
SELECT is((SELECT string_agg(kind || ':' || ordinal, ',' ORDER BY ordinal) FROM openwop.interrupts WHERE run_id = 'acme/bounded-escalate-02'),
          'low-confidence:0,custom:2147483647', '... on the lowest free ordinal, not an integer overflow');

-- numbers and nesting: a 16-byte number must not print as 131,072 characters (hostile review)
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/bounded-run-000001', 'gate', '{"action": "ask", "n": 1e131071}') $$),
          '{"sqlstate": "PT400", "code": "validation_error", "details": {"field": "resumeValue"}}',
          'json_number_magnitude_bound: an answer holding 1e131071 is refused before it is read');
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/bounded-run-000001', 'gate', '{"action": "ask", "n": 1e-101}') $$) ->> 'code',
          'validation_error', 'json_number_scale_bound: ... and one with more than 100 decimal places');
SELECT is(openwop.json_schema_errors('{"type": "object"}', '{"n": 9.9e99, "m": 1e-100, "d": [[[[[[[[[[1]]]]]]]]]]}'), '[]',
          '... numbers up to the bounds pass the check');
SELECT is(pg_temp.refusal($$ SELECT openwop.json_schema_errors('{"type": "object"}', '{"n": 1e100}') $$) -> 'details' ->> 'field',
          'value', '... and 1e100 does not');
SELECT is(pg_temp.refusal($$ SELECT openwop.create_run('bounded', '{"configurable": {"version": 1, "run": {"escalationThreshold": 1e-400}}}') $$) -> 'details' ->> 'field',
          'options', 'threshold_underflow_refused: a configurable threshold of 1e-400 is refused when the run is created');
SELECT is(pg_temp.refusal(format('SELECT openwop.complete_node(%L, %L, %L::jsonb)', 'acme/bounded-run-000001', 'gate',
            '{"a": ' || repeat('[', 1001) || repeat(']', 1001) || '}')) ->> 'code',
          'validation_error', 'json_depth_bound: outputs nested deeper than 1000 levels are refused, not a stack overflow');
SELECT is(pg_temp.refusal(format('SELECT openwop.interrupt(%L, %L, %L::jsonb, 5)', 'acme/bounded-run-000001', 'gate',
            '{"kind": "custom", "data": {"customKind": "k", "payload": ' || repeat('[', 2000) || repeat(']', 2000) || '}}')) ->> 'code',
          'validation_error', '... and so are interrupt requests');
-- a threshold stored before the bound (0.2.0) reads as 0 instead of an underflow
DO $$ BEGIN
  PERFORM openwop.create_run('bounded', '{"runId": "acme/bounded-threshold-01"}');
  PERFORM openwop.start_node('acme/bounded-threshold-01', 'agent');
END $$;
UPDATE openwop.runs SET configurable = '{"version": 1, "run": {"escalationThreshold": 1e-400}}' WHERE run_id = 'acme/bounded-threshold-01';
SELECT is(openwop.record_agent_decision('acme/bounded-threshold-01', 'agent', 'planner', 0.5) ->> 'escalated', 'false',
          'stored_threshold_underflow_reads_as_zero: no raw 22003 from a stored tiny threshold');

-- refusals quote at most 512 bytes of an input, however large
SELECT is(pg_temp.refusal($$ SELECT openwop.run_snapshot(repeat(chr(1), 20000000)) $$) ->> 'code', 'validation_error',
          'echo_is_bounded: a 20 MB run id of control characters is a plain 400');
SELECT ok(length(pg_temp.refusal($$ SELECT openwop.run_snapshot(repeat('x', 100000)) $$) ->> 'details') < 1200,
          '... whose details quote a clipped input');
SELECT ok((SELECT length(m) < 700 FROM (SELECT pg_temp.refusal_message($$ SELECT openwop.start_node('acme/bounded-run-000001', repeat('n', 100000)) $$) m) x),
          '... and so does its message');

-- the completed prefix an envelope carries is bounded (128 payloads)
DO $$ BEGIN
  PERFORM openwop.create_run('bounded', '{"runId": "acme/bounded-prefix-00001"}');
  FOR i IN 1..130 LOOP
    PERFORM openwop.start_node('acme/bounded-prefix-00001', 'n' || i);
    PERFORM openwop.complete_node('acme/bounded-prefix-00001', 'n' || i, pg_temp.blob(4000));
  END LOOP;
  PERFORM openwop.start_node('acme/bounded-prefix-00001', 'gate');
END $$;
SELECT is(pg_temp.refusal($$ SELECT openwop.interrupt('acme/bounded-prefix-00001', 'gate', '{"kind": "custom", "data": {"customKind": "k"}}') $$) ->> 'code',
          'run_state_conflict', 'envelope_size_bound: a completed prefix over 128 payloads is a 409, not a raw 54000');
SELECT is(pg_temp.refusal($$ SELECT openwop.record_agent_decision('acme/bounded-prefix-00001', 'gate', 'planner', 0.1) $$) ->> 'code',
          'run_state_conflict', '... for an escalation too');

-- sweep() acts in every tenant: never for a request session, whatever its login's binding
SELECT is((SELECT r ->> 'code' FROM (SELECT pg_temp.refusal($$ SELECT pg_temp.as_request('{"sub": "mallory", "tenant": "acme"}', 'SELECT to_jsonb(openwop.sweep(1))') $$) r) x),
          'id_tenant_mismatch', 'sweep_refuses_request_sessions: a request session may not sweep every tenant, even as a superuser''s authenticator');

SELECT * FROM finish();
ROLLBACK;
