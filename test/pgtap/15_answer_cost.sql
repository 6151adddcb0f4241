-- The cost of checking one answer, as the second hostile review attacked
-- it: clarification answers looked up in time that does not grow with the
-- questions, each question answered once, regular-expression time bounded
-- (not only steps), multipleOf weighed, the nesting limit failing closed
-- under not and oneOf, every PCRE2 failure a contract error, error lists
-- that quote bounded input, and a deadline that passes while an answer is
-- checked.  The statement timeout is only a guard, so a regression fails
-- instead of hanging; nothing asserts a time.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
SET LOCAL statement_timeout = '20s';
\ir refusal.psql
\ir callers.psql

CREATE FUNCTION pg_temp.raise(run text, node text, req jsonb) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT FROM openwop.runs WHERE run_id = run) THEN
    PERFORM openwop.create_run('cost', jsonb_build_object('runId', run));
  END IF;
  PERFORM openwop.start_node(run, node);
  RETURN openwop.interrupt(run, node, req) #>> '{metadata,interrupt,id}';
END $$;

-- clarification_answers_by_lookup: 20,000 questions, 3,500 answers
SELECT ok(pg_temp.raise('acme/cost-clarify-000001', 'ask', jsonb_build_object('kind', 'clarification', 'data',
            jsonb_build_object('questions', (SELECT jsonb_agg(jsonb_build_object('id', 'q' || i, 'question', '?'))
                                               FROM generate_series(1, 20000) i)))) IS NOT NULL, 'a clarification of 20,000 questions');
SELECT is(openwop.resolve_interrupt('acme/cost-clarify-000001', 'ask',
            (SELECT jsonb_object_agg('q' || i, NULL::int) FROM generate_series(16501, 20000) i)) ->> 'status', 'resolved',
          'clarification_answers_by_lookup: 3,500 answers are looked up, not scanned for');

-- clarification_question_answered_once
SELECT ok(pg_temp.raise('acme/cost-clarify-000002', 'ask', jsonb_build_object('kind', 'clarification', 'data',
            jsonb_build_object('questions', jsonb_build_array(jsonb_build_object('id', 'q', 'question', '?',
              'schema', jsonb_build_object('enum', (SELECT jsonb_agg(i) FROM generate_series(1, 60000) i))))))) IS NOT NULL,
          'a question whose schema is a 60,000-entry enum');
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/cost-clarify-000002', 'ask',
            jsonb_build_object('answers', (SELECT jsonb_agg(jsonb_build_object('id', 'q', 'answer', 5)) FROM generate_series(1, 1450)))) $$),
          '{"sqlstate": "PT400", "code": "validation_error", "details": {"field": "resumeValue.q"}}',
          'clarification_question_answered_once: the same question answered twice is refused, not validated 1,450 times');

-- pattern_time_is_bounded: one match step may scan the whole string
SELECT is(openwop.json_schema_errors('{"type": "string", "pattern": "^(?:(?=.*+$)a)*$"}', to_jsonb(repeat('a', 65000))) #>> '{0,keyword}',
          'pattern', 'pattern_time_is_bounded: a lookahead that rescans a 65,000-character string is refused on the regex budget');
SELECT is(openwop.json_schema_errors('{"type": "string", "pattern": "^[a-z]+$"}', to_jsonb(repeat('a', 65000))), '[]',
          '... while an anchored pattern still validates a long string');
SELECT is(openwop.json_schema_errors('{"type": "string", "pattern": "needle"}', to_jsonb(repeat('a', 4000) || 'needle')), '[]',
          '... and an unanchored one a few kilobytes long');

-- multiple_of_is_weighed
SELECT is(pg_temp.refusal(format('SELECT openwop.json_schema_errors(%L, %L)',
            jsonb_build_object('items', jsonb_build_object('allOf',
              (SELECT jsonb_agg(jsonb_build_object('multipleOf', ('0.' || repeat('7', 99))::numeric)) FROM generate_series(1, 998)))),
            '[1]')) ->> 'code',
          'validation_error', 'multiple_of_is_weighed: 998 multipleOf under allOf are too heavy to raise');

-- depth_limit_fails_closed: a forbidden value nested past the limit under not or oneOf
SELECT is(openwop.json_schema_errors('{"not": {"$ref": "#/$defs/nested"}, "$defs": {"nested":
            {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"$ref": "#/$defs/nested"}}]}}}',
            (repeat('[', 21) || '1' || repeat(']', 21))::jsonb) #>> '{0,keyword}',
          '$ref', 'depth_limit_fails_closed: under not, a value nested past the limit is refused, not accepted');
SELECT isnt(openwop.json_schema_errors('{"oneOf": [{"$ref": "#/$defs/nested"}, {"type": "array"}], "$defs": {"nested":
            {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"$ref": "#/$defs/nested"}}]}}}',
            (repeat('[', 30) || '1' || repeat(']', 30))::jsonb), '[]',
          '... and under oneOf');

-- pcre2_failures_are_contract_errors
SELECT ok(pg_temp.raise('acme/cost-recursion-0001', 'ev', '{"kind": "custom", "data": {"customKind": "k"},
            "resumeSchema": {"type": "string", "pattern": "(a|(?R))"}}') IS NOT NULL, 'a pattern that recurses');
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/cost-recursion-0001', 'ev', '"b"') $$) ->> 'sqlstate',
          'PT400', 'pcre2_failures_are_contract_errors: recursion at the same position is a 400, not XX000');

-- schema_errors_quote_bounded_input
SELECT ok(length(openwop.json_schema_errors('{"additionalProperties": {"additionalProperties": false}}',
            jsonb_build_object(repeat('K', 32000), (SELECT jsonb_object_agg('a' || i, 0) FROM generate_series(1, 100) i)))::text) < 200000,
          'schema_errors_quote_bounded_input: 100 errors under a 32,000-byte key quote at most 512 bytes of it each');
SELECT ok(length((pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/cost-recursion-0001', 'ev', to_jsonb(repeat('x', 60000))) $$)) ::text) < 4000,
          '... and so does a refused answer''s message and details');

-- deadline_rechecked_after_validation: the deadline passes while the answer is checked
SELECT ok(pg_temp.raise('acme/cost-slowcheck-0001', 'gate', jsonb_build_object('kind', 'approval', 'timeoutMs', 3600000,
            'data', '{"artifactId": "a", "artifactType": "doc", "title": "T", "actions": ["accept", "reject", "edit-accept"]}'::jsonb,
            'resumeSchema', jsonb_build_object('properties', jsonb_build_object('editedArtifactData', jsonb_build_object('items',
              jsonb_build_object('allOf', (SELECT jsonb_agg('{"minimum": 0}'::jsonb) FROM generate_series(1, 990)))))))) IS NOT NULL,
          'an approval whose answer takes a while to check');
UPDATE openwop.interrupts SET expires_at = clock_timestamp() + interval '200 milliseconds' WHERE run_id = 'acme/cost-slowcheck-0001';
SELECT is(openwop.resolve_interrupt('acme/cost-slowcheck-0001', 'gate',
            jsonb_build_object('action', 'edit-accept', 'editedArtifactData', (SELECT jsonb_agg(i) FROM generate_series(1, 4500) i))) ->> 'status',
          'expired', 'deadline_rechecked_after_validation: an edit-accept whose check outlasts the deadline is answered expired');
SELECT is((SELECT decision || '/' || action FROM openwop.interrupts WHERE run_id = 'acme/cost-slowcheck-0001'), 'rejected/timeout',
          '... and the gate is rejected by timeout, never granted');

SELECT * FROM finish();
ROLLBACK;
