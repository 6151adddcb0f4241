-- The cost of a schema: no keyword, however crafted, makes one validation
-- exceed its documented bound, and a schema accepted when its interrupt is
-- raised never refuses a valid answer for cost (except the regex budget).
-- The statement timeout is only a guard, so a regression fails instead of
-- hanging; nothing here asserts a time.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
SET LOCAL statement_timeout = '60s';

\ir refusal.psql
\ir callers.psql

-- pg_temp.keywords(schema, value): each error as "keyword path"; pg_temp.valid: no error
CREATE FUNCTION pg_temp.keywords(schema jsonb, value jsonb) RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(string_agg(e->>'keyword' || ' ' || (e->>'path'), ', ' ORDER BY o), '')
    FROM jsonb_array_elements(openwop.json_schema_errors(schema, value)) WITH ORDINALITY AS t(e, o)
$$;
CREATE FUNCTION pg_temp.valid(schema jsonb, value jsonb) RETURNS boolean LANGUAGE sql AS $$
  SELECT openwop.json_schema_errors(schema, value) = '[]'
$$;
-- raise request on a fresh node; pg_temp.raise: a custom interrupt carrying resumeSchema
CREATE FUNCTION pg_temp.raise_request(node text, request jsonb) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
  PERFORM openwop.start_node('acme/cost-run-00000001', node);
  RETURN openwop.interrupt('acme/cost-run-00000001', node, request);
END $$;
CREATE FUNCTION pg_temp.raise(node text, schema jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.raise_request(node, jsonb_build_object('kind', 'custom', 'data', '{"customKind": "form"}'::jsonb,
                                                        'resumeSchema', schema))
$$;

DO $$ BEGIN PERFORM openwop.create_run('cost', '{"runId": "acme/cost-run-00000001"}'); END $$;

CREATE TEMP TABLE s (name text PRIMARY KEY, schema jsonb);
INSERT INTO s VALUES
  ('backtracking', '{"pattern": "^(a*)(a*)(a*)(a*)(a*)(a*)\\1\\2\\3\\4\\5\\6$"}'),
  -- 60,000 entries, the member tested last in the array
  ('enum60000', jsonb_build_object('enum', (SELECT jsonb_agg('v' || i ORDER BY i) FROM generate_series(1, 60000) i))),
  -- d0 .. d29: anyOf of two refs to the next, so 2^30 paths
  ('fanout', jsonb_build_object('$ref', '#/$defs/d0', '$defs',
     (SELECT jsonb_object_agg('d' || i, CASE WHEN i = 30 THEN '{"type": "integer"}'::jsonb
        ELSE jsonb_build_object('anyOf', jsonb_build_array(jsonb_build_object('$ref', '#/$defs/d' || (i + 1)),
                                                           jsonb_build_object('$ref', '#/$defs/d' || (i + 1)))) END)
        FROM generate_series(0, 30) i))),
  ('tree', '{"$ref": "#/$defs/node", "$defs": {"node": {"type": "object", "required": ["name"],
             "properties": {"name": {"type": "string", "minLength": 1},
                            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
             "additionalProperties": false}}}'),
  -- a JSON value tree: the array branch and the object branch both recurse
  ('json', '{"$ref": "#/$defs/v", "$defs": {"v": {"anyOf": [
             {"type": ["null", "boolean", "number", "string"]},
             {"type": "array", "items": {"$ref": "#/$defs/v"}},
             {"type": "object", "additionalProperties": {"$ref": "#/$defs/v"}}]}}}'),
  -- weight 994: 124 branches of a seven-name type test under items
  ('heavy', jsonb_build_object('items', jsonb_build_object('allOf',
     (SELECT jsonb_agg('{"type": ["null", "boolean", "object", "array", "string", "integer", "number"]}'::jsonb)
        FROM generate_series(1, 124))))),
  ('heavier', jsonb_build_object('items', jsonb_build_object('allOf',
     (SELECT jsonb_agg('{"type": ["null", "boolean", "object", "array", "string", "integer", "number"]}'::jsonb)
        FROM generate_series(1, 125))))),
  ('patterns', jsonb_build_object('allOf', (SELECT jsonb_agg(jsonb_build_object('pattern', 'x' || i)) FROM generate_series(1, 100) i))),
  ('required', jsonb_build_object('required', (SELECT jsonb_agg('p' || i) FROM generate_series(1, 1000) i)));

-- pattern_backtracking_is_bounded
SELECT is(openwop.json_schema_errors((SELECT schema FROM s WHERE name = 'backtracking'), to_jsonb(repeat('a', 61))),
          '[{"path": "", "keyword": "pattern", "message": "pattern \"^(a*)(a*)(a*)(a*)(a*)(a*)\\1\\2\\3\\4\\5\\6$\" needs more than the 1000000 match steps one validation may take"}]',
          'pattern_backtracking_is_bounded: catastrophic backtracking is cut off and the value refused with the pattern keyword');
SELECT is(pg_temp.keywords((SELECT schema FROM s WHERE name = 'backtracking'), to_jsonb(repeat('a', 12))), '',
          'pattern_backtracking_is_bounded: the same pattern still matches what it matches cheaply');
SELECT lives_ok($$ SELECT pg_temp.raise('evil', (SELECT schema FROM s WHERE name = 'backtracking')) $$,
          'pattern_backtracking_is_bounded: a gate may carry the pattern (it compiles)');
SELECT is(pg_temp.refusal(format('SELECT openwop.resolve_interrupt(%L, %L, %L)', 'acme/cost-run-00000001', 'evil', to_jsonb(repeat('a', 61))))
            #>> '{details,errors,0,keyword}',
          'pattern', 'pattern_backtracking_is_bounded: resolving with the hostile value is refused, quickly, naming the pattern');
SELECT is(pg_temp.refusal(format('SELECT openwop.resolve_interrupt(%L, %L, %L)', 'acme/cost-run-00000001', 'evil', to_jsonb(repeat('a', 61))))
            ->>'sqlstate',
          'PT400', 'pattern_backtracking_is_bounded: as 400 validation_error');
SELECT is(openwop.resolve_interrupt('acme/cost-run-00000001', 'evil', to_jsonb(repeat('a', 12))) ->> 'status', 'resolved',
          'pattern_backtracking_is_bounded: the gate still resolves with a valid answer');

-- pattern_budget_is_per_validation: 15 a's take about 75,000 match steps
SELECT is(pg_temp.keywords((SELECT schema FROM s WHERE name = 'backtracking'), to_jsonb(repeat('a', 15))),
          'pattern ', 'pattern_budget_is_per_validation: one costly string is judged (it does not match)');
SELECT is(openwop.json_schema_errors(jsonb_build_object('items', (SELECT schema FROM s WHERE name = 'backtracking')),
                                     (SELECT jsonb_agg(repeat('a', 15)) FROM generate_series(1, 20))) #>> '{0,message}',
          'pattern "^(a*)(a*)(a*)(a*)(a*)(a*)\1\2\3\4\5\6$" needs more than the 1000000 match steps one validation may take',
          'pattern_budget_is_per_validation: twenty of them share one budget and the value is refused');
SELECT is(jsonb_array_length(openwop.json_schema_errors(jsonb_build_object('items', (SELECT schema FROM s WHERE name = 'backtracking')),
                                     (SELECT jsonb_agg(repeat('a', 15)) FROM generate_series(1, 20)))), 1,
          'pattern_budget_is_per_validation: with one error, not a partial list');
SELECT is(pg_temp.keywords('{"items": {"pattern": "^[a-z]+$"}}', (SELECT jsonb_agg(repeat('x', 50)) FROM generate_series(1, 15000))), '',
          'pattern_budget_is_per_validation: cheap matches never touch the budget, however many');

-- enum_60000_accepts_valid_answer
SELECT is(openwop.json_schema_errors((SELECT schema FROM s WHERE name = 'enum60000'), '"v60000"'), '[]',
          'enum_60000_accepts_valid_answer: the last member validates');
SELECT is(pg_temp.keywords((SELECT schema FROM s WHERE name = 'enum60000'), '"v60001"'), 'enum ',
          'enum_60000_accepts_valid_answer: a non-member gets the enum error');
SELECT is(pg_temp.keywords(jsonb_build_object('items', (SELECT schema FROM s WHERE name = 'enum60000')),
                           (SELECT jsonb_agg('v' || i) FROM generate_series(1, 60000, 7) i) || '["v0"]'),
          'enum /8572', 'enum_60000_accepts_valid_answer: many answers against it, only the stranger refused');
SELECT lives_ok($$ SELECT pg_temp.raise('big', (SELECT schema FROM s WHERE name = 'enum60000')) $$,
          'enum_60000_accepts_valid_answer: accepted when the interrupt is raised');
SELECT is(pg_temp.refusal(format('SELECT openwop.resolve_interrupt(%L, %L, %L)', 'acme/cost-run-00000001', 'big', '"nope"'))
            #>> '{details,errors,0,keyword}', 'enum',
          'enum_60000_accepts_valid_answer: resolving with a non-member is refused by enum');
SELECT is(openwop.resolve_interrupt('acme/cost-run-00000001', 'big', '"v60000"') ->> 'status', 'resolved',
          'enum_60000_accepts_valid_answer: resolving with the last member succeeds');

-- enum_search_is_json_equality: a long (sorted, searched) enum and a short
-- (scanned) one agree with jsonb equality on every candidate
CREATE TEMP TABLE entries (v jsonb);
INSERT INTO entries VALUES ('1'), ('2.50'), ('-0'), ('"x"'), ('"X"'), ('""'), ('null'), ('true'), ('false'),
  ('{"a": 1, "b": [1, 2]}'), ('[1, [2]]'), ('[]'), ('{}'), ('{"nested": {"k": [null, {"z": "é"}]}}'), ('1e2');
CREATE TEMP TABLE candidates (v jsonb);
INSERT INTO candidates SELECT v FROM entries;
INSERT INTO candidates VALUES ('1.0'), ('1.000'), ('2.5'), ('0'), ('0.0'), ('100'), ('100.0'), ('"1"'), ('"x "'), ('"é"'),
  ('{"b": [1.0, 2], "a": 1}'), ('{"a": 1}'), ('{"b": [2, 1], "a": 1}'), ('[1, [2.0]]'), ('[[2], 1]'), ('[1, 2]'), ('[null]'),
  ('{"nested": {"k": [null, {"z": "é"}]}}'), ('{"nested": {"k": [null, {"z": "e"}]}}'), ('[[]]'), ('[{}]'), ('0.1'), ('"null"'), ('"true"');
SELECT is((SELECT count(*) FROM candidates c
            WHERE pg_temp.valid(jsonb_build_object('enum', (SELECT jsonb_agg(v) FROM entries)), c.v)
                  IS DISTINCT FROM EXISTS (SELECT FROM entries e WHERE e.v = c.v)),
          0::bigint, 'enum_search_is_json_equality: the sorted search of 15 entries agrees with jsonb = on 39 candidates');
SELECT is((SELECT count(*) FROM candidates c
            WHERE EXISTS (SELECT FROM entries e WHERE pg_temp.valid(jsonb_build_object('enum', jsonb_build_array(e.v)), c.v))
                  IS DISTINCT FROM EXISTS (SELECT FROM entries e WHERE e.v = c.v)),
          0::bigint, 'enum_search_is_json_equality: the short scanned enum agrees too');
SELECT is((SELECT count(*) FROM candidates c
            WHERE EXISTS (SELECT FROM entries e WHERE pg_temp.valid(jsonb_build_object('const', e.v), c.v))
                  IS DISTINCT FROM EXISTS (SELECT FROM entries e WHERE e.v = c.v)),
          0::bigint, 'enum_search_is_json_equality: and const');
SELECT ok(pg_temp.valid(jsonb_build_object('enum', (SELECT jsonb_agg(v) FROM entries)), '{"b": [1.0, 2.0], "a": 1.0}')
          AND pg_temp.valid(jsonb_build_object('enum', (SELECT jsonb_agg(v) FROM entries)), '100')
          AND NOT pg_temp.valid(jsonb_build_object('enum', (SELECT jsonb_agg(v) FROM entries)), '"1"'),
          'enum_search_is_json_equality: numbers by value, object keys in any order, a string is not a number');

-- schema_weight_refused_at_raise
SELECT is(pg_temp.refusal($$ SELECT pg_temp.raise('fan', (SELECT schema FROM s WHERE name = 'fanout')) $$),
          '{"code": "validation_error", "details": {"field": "request.resumeSchema"}, "sqlstate": "PT400"}',
          'schema_weight_refused_at_raise: a $ref/anyOf fan-out is refused by interrupt() when raised');
SELECT throws_like($$ SELECT pg_temp.raise('fan2', (SELECT schema FROM s WHERE name = 'fanout')) $$,
          '%the schema is too expensive to check: its weight is % at most 1000 is allowed%',
          'schema_weight_refused_at_raise: saying it is too expensive, with its weight');
SELECT throws_ok($$ SELECT openwop.json_schema_errors((SELECT schema FROM s WHERE name = 'fanout'), '1') $$, 'PT400', NULL,
          'schema_weight_refused_at_raise: json_schema_errors refuses it too');
SELECT throws_ok($$ SELECT pg_temp.raise('q', jsonb_build_object('items', (SELECT schema FROM s WHERE name = 'fanout'))) $$, 'PT400', NULL,
          'schema_weight_refused_at_raise: wherever it hides in the schema');
SELECT throws_like($$ SELECT pg_temp.raise_request('cq', jsonb_build_object('kind', 'clarification', 'data',
            jsonb_build_object('questions', jsonb_build_array(jsonb_build_object('id', 'q1', 'question', '?',
              'schema', (SELECT schema FROM s WHERE name = 'fanout')))))) $$,
          '%data.questions[0].schema cannot be enforced: the schema is too expensive%',
          'schema_weight_refused_at_raise: a clarification question schema is weighed too');
SELECT is((SELECT count(*) FROM openwop.interrupts WHERE run_id = 'acme/cost-run-00000001' AND node_id IN ('fan', 'fan2', 'q', 'cq')),
          0::bigint, 'schema_weight_refused_at_raise: nothing was raised');
SELECT is(openwop.json_schema_errors((SELECT schema FROM s WHERE name = 'heavy'), '[]'), '[]',
          'schema_weight_refused_at_raise: weight 994 is accepted');
SELECT throws_like($$ SELECT openwop.json_schema_errors((SELECT schema FROM s WHERE name = 'heavier'), '[]') $$,
          '%its weight is 1002, at most 1000%', 'schema_weight_refused_at_raise: weight 1002 is not');
SELECT throws_like($$ SELECT openwop.json_schema_errors((SELECT schema FROM s WHERE name = 'patterns'), '""') $$,
          '%too expensive%', 'schema_weight_refused_at_raise: a pattern weighs more than a plain keyword (100 of them)');
SELECT throws_like($$ SELECT openwop.json_schema_errors((SELECT schema FROM s WHERE name = 'required'), '{}') $$,
          '%too expensive%', 'schema_weight_refused_at_raise: so does each required name (1000 of them)');
SELECT throws_like($$ SELECT openwop.json_schema_errors('{"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}', '1') $$,
          '%too expensive%', 'schema_weight_refused_at_raise: a self-recursive fan-out is refused as well');

-- accepted_schema_never_hits_the_step_budget
SELECT is(openwop.json_schema_errors((SELECT schema FROM s WHERE name = 'heavy'), (SELECT jsonb_agg(i) FROM generate_series(1, 1000) i)), '[]',
          'accepted_schema_never_hits_the_step_budget: 1,000 values against weight 994 validate');
SELECT is(openwop.json_schema_errors('{"uniqueItems": true, "items": {"enum": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}}',
                                     (SELECT jsonb_agg(i % 11) FROM generate_series(0, 10) i)), '[]',
          'accepted_schema_never_hits_the_step_budget: uniqueItems with a long enum');
SELECT is(pg_temp.keywords('{"uniqueItems": true}', (SELECT jsonb_agg(i) FROM generate_series(1, 60000) i)), '',
          'accepted_schema_never_hits_the_step_budget: uniqueItems over 60,000 items');

-- recursive_tree_schema_still_validates
SELECT is(openwop.json_schema_errors((SELECT schema FROM s WHERE name = 'tree'),
            '{"name": "a", "children": [{"name": "b"}, {"name": "c", "children": [{"name": "d", "children": [{"name": "e"}]}]}]}'), '[]',
          'recursive_tree_schema_still_validates: a tree four levels deep is accepted and valid');
SELECT is(pg_temp.keywords((SELECT schema FROM s WHERE name = 'tree'),
            '{"name": "a", "children": [{"name": "b"}, {"name": "c", "children": [{"name": "", "extra": 1}]}]}'),
          'minLength /children/1/children/0/name, additionalProperties /children/1/children/0/extra',
          'recursive_tree_schema_still_validates: errors deep in the tree carry their path');
SELECT is(pg_temp.keywords((SELECT schema FROM s WHERE name = 'json'), '{"a": [1, {"b": [null, "x", {"c": true}]}]}'), '',
          'recursive_tree_schema_still_validates: a schema recursing through arrays and objects is accepted');

-- pattern_dialect_is_ecma: PCRE2 set close to ECMA-262
SELECT is(pg_temp.keywords('{"pattern": "^\\d$"}', '"٣"'), 'pattern ', 'pattern_dialect_is_ecma: \d is ASCII only');
SELECT is(pg_temp.keywords('{"pattern": "^\\d+$"}', '"2026"'), '', 'pattern_dialect_is_ecma: \d matches ASCII digits');
SELECT is(pg_temp.keywords('{"pattern": "^a$"}', '"a\n"'), 'pattern ', 'pattern_dialect_is_ecma: $ matches only at the end');
SELECT is(pg_temp.keywords('{"pattern": "^\\u0041\\u{1F600}$"}', '"A😀"'), '', 'pattern_dialect_is_ecma: \uhhhh and \u{h...} escapes');
SELECT is(pg_temp.keywords('{"pattern": "^.$"}', '"😀"'), '', 'pattern_dialect_is_ecma: . is one code point');
SELECT is(pg_temp.keywords('{"pattern": "^.$"}', '"\n"'), 'pattern ', 'pattern_dialect_is_ecma: . does not match a line feed');
SELECT is(pg_temp.keywords('{"pattern": "^[^]$"}', '"\n"'), '', 'pattern_dialect_is_ecma: [^] matches anything');
SELECT is(pg_temp.keywords('{"pattern": "b"}', '"abc"') || '|' || pg_temp.keywords('{"pattern": "^b"}', '"abc"'), '|pattern ',
          'pattern_dialect_is_ecma: the search is unanchored unless the pattern anchors it');
SELECT is(pg_temp.keywords('{"pattern": "^(a)?\\1b$"}', '"b"'), '', 'pattern_dialect_is_ecma: an unset backreference matches empty');

-- invalid_pattern_refused_at_raise: PCRE2's message and offset
SELECT throws_like($$ SELECT pg_temp.raise('bad', '{"pattern": "ab(c"}') $$,
          '%request.resumeSchema cannot be enforced: pattern "ab(c" is not a valid regular expression: missing closing parenthesis (at offset 4) at "/"%',
          'invalid_pattern_refused_at_raise: with PCRE2''s message and offset');
-- (PCRE2's words for it differ by release: "is not fixed length" before 10.43, "is not limited" since)
SELECT throws_like($$ SELECT pg_temp.raise('bad2', '{"properties": {"p": {"pattern": "(?<=a+)b"}}}') $$,
          '%is not a valid regular expression: %lookbehind assertion is not % at "/properties/p"%',
          'invalid_pattern_refused_at_raise: where PCRE2 differs from ECMA (a variable lookbehind), said at raise');
SELECT throws_like($$ SELECT pg_temp.raise('bad3', '{"pattern": "(*UCP)\\d"}') $$,
          '%start-of-pattern settings such as (*UCP) are not supported%',
          'invalid_pattern_refused_at_raise: PCRE2''s start-of-pattern settings are refused');
SELECT is(pg_temp.refusal($$ SELECT pg_temp.raise('bad4', jsonb_build_object('pattern', repeat('a', 4097))) $$) ->> 'code',
          'validation_error', 'invalid_pattern_refused_at_raise: a pattern longer than 4096 bytes');

-- unique_items_results_unchanged: the pair all-pairs comparison would name
SELECT is(openwop.json_schema_errors('{"uniqueItems": true}', '["ok", "x", "ok", "y"]') #>> '{0,message}', 'items 0 and 2 are equal',
          'unique_items_results_unchanged: the first equal pair');
SELECT is(openwop.json_schema_errors('{"uniqueItems": true}', '[3, 5, 5, 3.0]') #>> '{0,message}', 'items 0 and 3 are equal',
          'unique_items_results_unchanged: smallest first index wins over an earlier adjacent pair');
SELECT is(openwop.json_schema_errors('{"uniqueItems": true}', '[{"a": 1, "b": 2}, [1], {"b": 2, "a": 1.0}]') #>> '{0,message}', 'items 0 and 2 are equal',
          'unique_items_results_unchanged: objects equal whatever their key order');
SELECT is(openwop.json_schema_errors('{"uniqueItems": true}', '[[1, 2], [2, 1], 1, true, 0, false, null, "1", {}]'), '[]',
          'unique_items_results_unchanged: values of different types or order are distinct');

-- the size of what is reported and of what is validated
SELECT is(jsonb_array_length(openwop.json_schema_errors('{"items": {"type": "string"}}',
            (SELECT jsonb_agg(i) FROM generate_series(1, 500) i))), 100,
          'schema_errors_are_capped: details.errors lists at most the first 100 failures');
SELECT is(pg_temp.refusal($$ SELECT openwop.json_schema_errors('{}', jsonb_build_object('x', repeat('x', 1100000))) $$) -> 'details' ->> 'field',
          'value', 'json_schema_errors_value_size: a value over openwop.max_payload_size is refused');
SELECT is(pg_temp.refusal($$ SELECT openwop.json_schema_errors(jsonb_build_object('description', repeat('x', 1100000)), '1') $$) -> 'details' ->> 'field',
          'schema', '... and a schema over it too');

SELECT * FROM finish();
ROLLBACK;
