-- The error contract, swept: every API function called with every mix of
-- hostile, malformed, edge and valid arguments (several thousand calls,
-- against runs in every state) refuses only with the contract's SQLSTATEs
-- (PT400 … PT422).  A raw constraint violation (23xxx), an internal error
-- (XX000), a stack overflow (54001) or any other SQLSTATE escaping would
-- reach a PostgREST client as a 500 and is a bug: the test lists each one.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir callers.psql

-- runs in several states for the calls to meet
DO $$ BEGIN
  PERFORM openwop.create_run('sweep', '{"runId": "acme/sweep-run-00000001"}');
  PERFORM openwop.start_node('acme/sweep-run-00000001', 'work');
  PERFORM openwop.start_node('acme/sweep-run-00000001', 'gate');
  PERFORM openwop.interrupt('acme/sweep-run-00000001', 'gate', '{"kind": "approval", "data": {"artifactId": "a",
    "artifactType": "d", "title": "t", "actions": ["accept", "reject", "ask", "refine", "edit-accept"], "requiredApprovals": 2}}');
  PERFORM openwop.start_node('acme/sweep-run-00000001', 'c');
  PERFORM openwop.interrupt('acme/sweep-run-00000001', 'c', '{"kind": "clarification", "data": {"questions": [{"id": "q1", "question": "?", "schema": {"type": "string"}}]}}', 1);
  PERFORM openwop.create_run('sweep', '{"runId": "acme/sweep-run-00000002"}');
  PERFORM openwop.start_node('acme/sweep-run-00000002', 'gate');
  PERFORM openwop.cancel_run('acme/sweep-run-00000002');
  PERFORM openwop.add_signing_key('k-sweep', 'sweep-secret-do-not-use'::bytea);
END $$;
CREATE TEMP TABLE tok AS SELECT openwop.mint_interrupt_token(interrupt_id) AS token,
                                openwop.mint_interrupt_token(interrupt_id, 'inspect') AS inspect
  FROM openwop.interrupts WHERE run_id = 'acme/sweep-run-00000001' AND node_id = 'gate';

-- candidate arguments, as SQL literals
CREATE TEMP TABLE arg (kind text, lit text);
INSERT INTO arg SELECT 'run', quote_nullable(v) || '::text' FROM unnest(ARRAY[NULL, '', 'acme/sweep-run-00000001',
  'acme/sweep-run-00000002', 'acme/sweep-run-missing01', 'other/sweep-run-00000001', 'acme~2Fsweep-run-00000001',
  'no-tenant', repeat('a', 300)]) v;
INSERT INTO arg SELECT 'node', quote_nullable(v) || '::text' FROM unnest(ARRAY[NULL, '', 'gate', 'c', 'work', 'never',
  'a b', repeat('n', 200)]) v;
INSERT INTO arg SELECT 'json', quote_nullable(v) || '::jsonb' FROM unnest(ARRAY[NULL, 'null', '0', '"s"', '[]', '{}',
  '{"action": "accept"}', '{"action": "reject"}', '{"action": "ask"}', '{"action": "refine", "refineFeedback": {"scope": "whole", "itemIds": [1]}}',
  '{"action": "edit-accept", "editedArtifactData": {}}', '{"action": "accept", "decidedBy": "mallory"}', '{"q1": "x"}', '{"q1": 5}',
  '{"answers": [{"id": "q1", "answer": "x"}]}', '{"outcome": "declined"}',
  '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "d", "title": "t", "actions": ["accept"]}, "timeoutMs": 1}',
  '{"kind": "custom", "data": {"customKind": "k"}, "resumeSchema": {"type": "object", "required": ["x"]}}',
  '{"kind": "low-confidence", "data": {"agentId": "a", "threshold": 0.5, "observed": 0.1}}',
  '{"kind": "conversation.start", "data": {"conversationId": "c1"}}',
  '{"kind": "clarification", "data": {"questions": [{"id": "q", "question": "?", "schema": {"pattern": "("}}]}}',
  '{"code": "x", "message": "y", "retryable": false}', '{"runId": "acme/sweep-run-00000001"}', '{"runId": "acme/sweep-new-00000001"}',
  '{"configurable": {"run": {"escalationThreshold": 2}}}', '{"definition": {"nodes": [{"id": "a"}], "edges": [{"from": "a", "to": "b"}]}}',
  repeat('[', 500) || repeat(']', 500)]) v;
INSERT INTO arg SELECT 'fork', quote_nullable(v) || '::jsonb' FROM unnest(ARRAY[NULL, '{}', '[]', '"replay"',
  '{"mode": "replay"}', '{"mode": "branch"}', '{"mode": "branch", "fromSeq": 3}', '{"mode": "replay", "fromSeq": 4}',
  '{"mode": "replay", "fromSeq": 5}', '{"mode": "replay", "fromSeq": -1}', '{"mode": "replay", "fromSeq": 1.5}',
  '{"mode": "replay", "fromSeq": 99999999999999999999}', '{"mode": "fork"}', '{"mode": "replay", "extra": 1}',
  '{"mode": "replay", "runOptionsOverlay": {"metadata": {}}}', '{"mode": "branch", "fromSeq": 1, "runOptionsOverlay": {"configurable": {"version": 2}}}',
  '{"mode": "branch", "fromSeq": 1, "runOptionsOverlay": {"tags": []}}', '{"mode": "branch", "fromSeq": 2, "runOptionsOverlay": {"metadata": 1}}']) v;
INSERT INTO arg SELECT 'int', quote_nullable(v) || '::integer' FROM unnest(ARRAY[NULL, -1, 0, 1, 2147483647]) v;
INSERT INTO arg SELECT 'float', quote_nullable(v) || '::float8' FROM unnest(ARRAY[NULL, 'NaN', '-Infinity', '-1', '0.1', '0.9']) v;
INSERT INTO arg SELECT 'key', quote_nullable(v) || '::text' FROM unnest(ARRAY[NULL, '', 'short', repeat('k', 22), repeat('k', 200),
  'bad key with spaces 12345']) v;
INSERT INTO arg SELECT 'text', quote_nullable(v) || '::text' FROM unnest(ARRAY[NULL, '', 'why', 'token-holder', 'a/b', repeat('t', 300)]) v;
INSERT INTO arg SELECT 'intent', quote_nullable(v) || '::text' FROM unnest(ARRAY[NULL, 'resolve', 'inspect', 'bogus']) v;
INSERT INTO arg SELECT 'ttl', quote_nullable(v) || '::interval' FROM unnest(ARRAY[NULL, '-1 second', '0', '1 millisecond', '1000 years']) v;
INSERT INTO arg SELECT 'token', quote_nullable(v) || '::text' FROM unnest(ARRAY[NULL, '', 'ow2.hs256.k-sweep.x.y', 'ow1.legacy',
  (SELECT token FROM tok), (SELECT inspect FROM tok), (SELECT token FROM tok) || 'x']) v;
INSERT INTO arg SELECT 'iid', quote_nullable(v) || '::text' FROM unnest(ARRAY[NULL, '', 'acme/int-missing-0000000001', 'other/int-00000000000000001',
  (SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/sweep-run-00000001' AND node_id = 'gate')]) v;
-- an interrupt by its UUID (0.11.0): the gate's, upper case, another tenant's shape, look-alikes
INSERT INTO arg SELECT 'iid', quote_nullable(v) || '::text' FROM unnest(ARRAY[
  (SELECT encode(decode(translate(split_part(interrupt_id, '/', 2), '-_', '+/') || '==', 'base64'), 'hex')::uuid::text
     FROM openwop.interrupts WHERE run_id = 'acme/sweep-run-00000001' AND node_id = 'gate'),
  '5E0DA9D1-71C4-4A4B-8F3A-6C1F5E2B9D00', '{5e0da9d1-71c4-4a4b-8f3a-6c1f5e2b9d00}', '5e0da9d1-71c4-4a4b-8f3a-6c1f5e2b9dzz']) v;
-- a credential reference (connector_auth_expired)
INSERT INTO arg SELECT 'cref', quote_nullable(v) || '::jsonb' FROM unnest(ARRAY[NULL, 'null', '"c"', '[]', '{}', '{"ref": ""}',
  '{"ref": "c"}', '{"ref": "c", "scope": "repo"}', '{"ref": "c", "x": 1}', '{"ref": ["c"]}']) v;
INSERT INTO arg SELECT 'bigint', quote_nullable(v) || '::bigint' FROM unnest(ARRAY[NULL, -5, 0, 1000000000000]) v;
INSERT INTO arg SELECT 'bytea', quote_nullable(v) || '::bytea' FROM unnest(ARRAY[NULL, '', 'sixteen-bytes-ok!']) v;
INSERT INTO arg SELECT 'iids', quote_nullable(v) || '::text[]' FROM unnest(ARRAY[NULL, '{}', '{NULL}', '{""}',
  '{acme/int-missing-0000000001,other/int-00000000000000001}', '{{a,b},{c,d}}', '{acme~2Fint-missing-0000000001}',
  '{5E0DA9D1-71C4-4A4B-8F3A-6C1F5E2B9D00,5e0da9d1-71c4-4a4b-8f3a-6c1f5e2b9dzz}']) v;

-- every call: function name and the kinds of its arguments
CREATE TEMP TABLE fn (name text, kinds text[]);
INSERT INTO fn VALUES
  ('create_run', '{text,json}'), ('start_node', '{run,node,text}'), ('complete_node', '{run,node,json}'),
  ('fail_node', '{run,node,json}'), ('complete_run', '{run,json}'), ('fail_run', '{run,json,node}'),
  ('cancel_run', '{run,text}'), ('run_snapshot', '{run}'), ('events', '{run,bigint,int}'),
  ('interrupt', '{run,node,json,int}'), ('resolve_interrupt', '{run,node,json,key}'),
  ('record_agent_decision', '{run,node,node,float,json}'), ('add_group_member', '{text,text,text}'),
  ('remove_group_member', '{text,text,text}'), ('mint_interrupt_token', '{iid,intent,ttl,text}'),
  ('inspect_interrupt', '{token}'), ('resolve_interrupt_by_token', '{token,json,key}'), ('verify_interrupt_token', '{token}'),
  ('add_signing_key', '{text,bytea}'), ('retire_signing_key', '{text}'), ('json_schema_errors', '{json,json}'),
  ('sweep', '{int}'), ('capabilities', '{}'), ('current_caller', '{}'),
  ('flowdrop_interrupt', '{iid}'), ('flowdrop_interrupts', '{iids}'), ('fork_run', '{run,fork}'),
  ('connector_auth_expired', '{run,node,text,cref,text}'), ('due_at', '{iid}');

-- the calls: the cross product of each function's candidate arguments
CREATE FUNCTION pg_temp.calls(f fn) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE partial text[] := ARRAY[''];
BEGIN
  FOR i IN 1 .. coalesce(array_length(f.kinds, 1), 0) LOOP
    SELECT array_agg(p || CASE WHEN i > 1 THEN ', ' ELSE '' END || a.lit) INTO partial
      FROM unnest(partial) p, arg a WHERE a.kind = f.kinds[i];
  END LOOP;
  RETURN QUERY SELECT format('SELECT openwop.%I(%s)', f.name, p) FROM unnest(partial) p;
END $$;

CREATE TEMP TABLE escaped (call text, sqlstate text, message text);
DO $$
DECLARE c text; st text; msg text; n int := 0;
BEGIN
  -- a fixed shuffle, so calls meet the states other calls leave (an interrupt at ordinal 1 alone, …)
  FOR c IN SELECT s.sql FROM (SELECT pg_temp.calls(fn) AS sql FROM fn) s ORDER BY md5(s.sql) LOOP
    n := n + 1;
    BEGIN
      EXECUTE c;
      -- a call that ends a run is undone, so the runs stay open for the calls after it
      IF c ~ '^SELECT openwop\.(complete_run|fail_run|cancel_run)\(' THEN
        RAISE SQLSTATE 'OWUND';
      END IF;
    EXCEPTION WHEN OTHERS THEN
      GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
      IF st NOT IN ('PT400', 'PT401', 'PT403', 'PT404', 'PT409', 'PT410', 'PT422', 'OWUND') THEN
        INSERT INTO escaped VALUES (left(c, 300), st, msg);
      END IF;
    END;
  END LOOP;
  RAISE NOTICE '% calls swept', n;
END $$;

SELECT ok((SELECT count(*) FROM (SELECT pg_temp.calls(fn) FROM fn) c) > 10000, 'the sweep makes more than 10,000 calls');
SELECT is((SELECT count(*) FROM escaped), 0::bigint,
          'no_raw_error_escapes_the_contract: every refusal of every call is a PTxxx contract error');
SELECT diag(sqlstate || ' ' || message || E'\n    ' || call) FROM escaped ORDER BY sqlstate, call LIMIT 40;

SELECT * FROM finish();
ROLLBACK;
