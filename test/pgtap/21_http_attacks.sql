-- Attacks on the HTTP-facing surfaces that landed with 0.5.0: schema
-- openwop_api (src/api/postgrest.c) and openwop.flowdrop_interrupt(s)
-- (src/api/flowdrop.c).  Each block is one attack; a pass means the attack
-- failed.  Concurrency (timeouts, serialization failures, deadlocks, one
-- key twice) is test/specs/api_rethrow.spec.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir callers.psql

\ir api.psql
CREATE FUNCTION pg_temp.gate(run text, data jsonb DEFAULT '{}') RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  PERFORM openwop.create_run('atk', jsonb_build_object('runId', run));
  PERFORM openwop.start_node(run, 'gate');
  RETURN openwop.interrupt(run, 'gate', jsonb_build_object('kind', 'approval', 'data',
           jsonb_build_object('artifactId', 'a', 'artifactType', 'doc', 'title', 'T',
                              'actions', '["accept", "reject"]'::jsonb) || data)) #>> '{metadata,interrupt,id}';
END $$;
CREATE FUNCTION pg_temp.body(run text, value jsonb DEFAULT '{"action": "accept"}') RETURNS text LANGUAGE sql AS $$
  SELECT format('SELECT openwop_api."resolveInterruptByRun"(%L)',
                jsonb_build_object('runId', run, 'nodeId', 'gate', 'resumeValue', value)::text)
$$;
CREATE TEMP TABLE gates AS
  SELECT n, pg_temp.gate(format('acme/atk-http-%s', lpad(n::text, 11, '0'))) AS interrupt_id FROM generate_series(1, 12) n;
SET LOCAL openwop.tenant = 'globex';
CREATE TEMP TABLE globex_gate AS SELECT pg_temp.gate('globex/atk-http-00000000001') AS interrupt_id;
SET LOCAL openwop.tenant = 'acme';
DO $$ BEGIN PERFORM openwop.add_signing_key('atk-http'); END $$;

/* ------------------------------------------------------------------
 * Bodies: non-objects, NULLs, duplicate keys, nesting, unicode
 * ------------------------------------------------------------------ */

SELECT is(pg_temp.api(format('SELECT openwop_api."resolveInterruptByRun"(%L)', b)) #>> '{body,error}', 'validation_error',
          format('a non-object body %s is 400 validation_error', b))
  FROM unnest(ARRAY['[]', '[{"runId": "acme/atk-http-00000000001"}]', '1', 'true', 'null', '"{}"']) b;
SELECT is(pg_temp.api('SELECT openwop_api."resolveInterruptByRun"(''{"runId": null, "nodeId": "gate", "resumeValue": {}}'')') #>> '{body,error}',
          'validation_error', 'runId JSON null is refused (not a string)');
SELECT is(pg_temp.api('SELECT openwop_api."resolveInterruptByRun"(''{"runId": ["acme/atk-http-00000000001"], "nodeId": "gate", "resumeValue": {}}'')') #>> '{body,details,field}',
          'runId', 'runId as an array is refused with details.field runId');
SELECT is(pg_temp.api('SELECT openwop_api."resolveInterruptByRun"(''{"nodeId": "gate", "resumeValue": {"action": "accept"}}'')') #>> '{body,error}',
          'validation_error', 'a body without runId is refused, nothing resolved');
-- duplicate keys: jsonb keeps the last, and a first "runId" of another tenant cannot smuggle anything past the check
SELECT is(pg_temp.api('SELECT openwop_api."resolveInterruptByRun"(''{"runId": "acme/atk-http-00000000001", "nodeId": "gate", "resumeValue": {"action": "accept"}, "runId": "globex/atk-http-00000000001"}'')') #>> '{body,error}',
          'id_tenant_mismatch', 'duplicate runId: the one jsonb keeps (the last) is the one checked, another tenant''s is 403');
SELECT is((SELECT status FROM openwop.interrupts i JOIN globex_gate g USING (interrupt_id)), 'pending',
          '... and the other tenant''s interrupt is untouched');
-- unicode tricks in ids: look-alikes, a zero-width character, NUL-like escapes, %2F and ~2F
SELECT is(pg_temp.api(format('SELECT openwop_api."resolveInterruptByRun"(%L)',
            jsonb_build_object('runId', r, 'nodeId', 'gate', 'resumeValue', '{"action": "accept"}'::jsonb)::text)) ->> 'status' IN ('400', '403', '404'),
          true, format('runId %s is refused, not resolved', r))
  FROM unnest(ARRAY[E'acme\u2215atk-http-00000000002', E'acme/atk-http-0000000000\u200b2', E'\u0430cme/atk-http-00000000002',
                    'globex%2Fatk-http-00000000001', 'globex~2Fatk-http-00000000001', 'acme/../globex/atk-http-00000000001',
                    E'acme/atk-http-00000000002\n', 'ACME/atk-http-00000000002', ' acme/atk-http-00000000002']) r;
SELECT is((SELECT count(*)::int FROM openwop.interrupts WHERE run_id = 'acme/atk-http-00000000002' AND status = 'pending'), 1,
          'no id trick resolved acme/atk-http-00000000002');
-- the body is json (0.11.0): a \u0000 reaches the function, which refuses it as the caller's mistake it is
SELECT is(pg_temp.api($$ SELECT openwop_api."resolveInterruptByRun"('{"runId": "acme/atk-http-00000000002\u0000x", "nodeId": "gate", "resumeValue": {}}') $$)
            - '{headers}'::text[] #- '{body,message}',
          '{"status": 400, "body": {"error": "validation_error", "details": {"field": "body"}}}',
          'a \u0000 in a body string is the envelope''s 400 validation_error (details.field body), not a cast error');
-- a deeply nested resumeValue: refused or answered, never a crash; a stack overflow is an error, not an envelope
SELECT lives_ok(format('SELECT pg_temp.api(%L)', pg_temp.body('acme/atk-http-00000000003', (repeat('{"a": ', 5000) || '1' || repeat('}', 5000))::jsonb)),
                'a resumeValue nested 5000 deep is answered without crashing the backend');
SELECT is((SELECT status FROM openwop.interrupts WHERE run_id = 'acme/atk-http-00000000003'), 'pending',
          '... and it resolves nothing (approval answers are closed objects)');
SELECT is(pg_temp.api(pg_temp.body('acme/atk-http-00000000003', jsonb_build_object('action', 'accept', 'comment', repeat('x', 20 * 1024 * 1024))))
            #>> '{body,error}', 'validation_error', 'a 20 MB comment is refused as too large (400), not stored');
SELECT is((SELECT status FROM openwop.interrupts WHERE run_id = 'acme/atk-http-00000000003'), 'pending', '... and resolves nothing');

/* ------------------------------------------------------------------
 * Idempotency-Key header tricks
 * ------------------------------------------------------------------ */

SELECT is(pg_temp.api(pg_temp.body('acme/atk-http-00000000004'), h) #>> '{body,error}', 'idempotency_key_invalid',
          format('header %s is refused as outside the key grammar', left(h::text, 60)))
  FROM unnest(ARRAY['{"idempotency-key": ["atk-http-key-00000000000000001"]}', '{"idempotency-key": {"k": "v"}}',
                    '{"idempotency-key": null}', '{"idempotency-key": true}', '{"idempotency-key": ""}',
                    '{"idempotency-key": "atk-http-key-0000000000001,atk-http-key-0000000000002"}',
                    '{"idempotency-key": "atk http key 00000000000000001"}',
                    '{"idempotency-key": "atk-http-key-0000000000000\u00e91"}']::jsonb[]
                || jsonb_build_object('idempotency-key', repeat('k', 129))
                || jsonb_build_object('idempotency-key', repeat('k', 1024 * 1024))) h;
SELECT is((SELECT status FROM openwop.interrupts WHERE run_id = 'acme/atk-http-00000000004'), 'pending',
          'no malformed key resolved anything');
-- PostgREST lower-cases header names; another case is not the header (no key, processed once, unkeyed)
SELECT is(pg_temp.api(pg_temp.body('acme/atk-http-00000000004'), '{"Idempotency-Key": "atk-http-key-00000000000000004"}') #>> '{body,status}',
          'resolved', 'a header named in another case is not PostgREST''s and not read');
SELECT is((SELECT count(*)::int FROM openwop.idempotency_keys WHERE key = 'atk-http-key-00000000000000004'), 0, '... so no key is recorded');
-- a key another tenant used: records are per tenant, nothing is replayed across
SET LOCAL openwop.tenant = 'globex';
SELECT is(pg_temp.api(format('SELECT openwop_api."resolveInterruptByRun"(%L)', jsonb_build_object('runId', interrupt_id, 'nodeId', 'gate')::text), '{}') #>> '{body,error}',
          'validation_error', 'control: globex answers need a resumeValue') FROM globex_gate;
SELECT is(pg_temp.api(pg_temp.body('globex/atk-http-00000000001'), '{"idempotency-key": "atk-http-key-shared-000000001"}') #>> '{body,status}',
          'resolved', 'globex resolves with a key');
SET LOCAL openwop.tenant = 'acme';
SELECT is(r #>> '{body,runId}', 'acme/atk-http-00000000005', 'acme presenting globex''s key gets its own answer, not globex''s stored one')
  FROM pg_temp.api(pg_temp.body('acme/atk-http-00000000005'), '{"idempotency-key": "atk-http-key-shared-000000001"}') r;
SELECT is(current_setting('response.headers', true), '', '... and no replay header is left behind');
-- another subject of the same tenant presenting my key: 409 mismatch, never my stored response
SELECT is(pg_temp.as_request('{"sub": "eve", "tenant": "acme", "scope": "approvals:respond"}',
            format('SELECT pg_temp.api(%L, %L)', pg_temp.body('acme/atk-http-00000000005'), '{"idempotency-key": "atk-http-key-shared-000000001"}')) #>> '{body,error}',
          'idempotency_key_mismatch', 'a JWT subject presenting another subject''s key is 409 idempotency_key_mismatch, not a replay');

/* ------------------------------------------------------------------
 * Forged response.status / response.headers before the call
 * ------------------------------------------------------------------ */

SET LOCAL response.headers = '{"not": "an array"}';
SET LOCAL request.headers = '{"idempotency-key": "atk-http-key-shared-000000001"}';
SELECT is(openwop_api."resolveInterruptByRun"(json_build_object('runId', 'acme/atk-http-00000000005', 'nodeId', 'gate', 'resumeValue', '{"action": "accept"}'::json)) ->> 'runId',
          'acme/atk-http-00000000005', 'a replay with a forged non-array response.headers still answers');
SELECT is(current_setting('response.headers')::jsonb, '[{"OpenWOP-Idempotent-Replay": "true"}]',
          '... and the forged non-array value is replaced, so PostgREST reads a valid header list');
SET LOCAL response.headers = '';
SET LOCAL request.headers = '';
SET LOCAL response.status = '599';
SELECT is(pg_temp.api(pg_temp.body('acme/atk-http-00000000006', '{"action": "nope"}')) ->> 'status', '400',
          'a refusal overrides a forged response.status');

/* ------------------------------------------------------------------
 * Callers: anonymous, another tenant's approver, a login that is not the
 * authenticator setting claims and headers itself
 * ------------------------------------------------------------------ */

SELECT is(pg_temp.as_request('{"role": "web_anon"}', format('SELECT pg_temp.api(%L)', pg_temp.body('acme/atk-http-00000000007'))) ->> 'status'
            IN ('401', '403'), true, 'an anonymous PostgREST caller (no sub, no scope) cannot resolve by run');
SELECT is(pg_temp.as_request('{"role": "web_anon", "scope": "approvals:respond", "tenant": "acme"}',
            format('SELECT pg_temp.api(%L)', pg_temp.body('acme/atk-http-00000000007'))) #>> '{body,status}' IS DISTINCT FROM 'resolved',
          true, 'an anonymous caller cannot resolve by run even with a scope claim');
SELECT is(pg_temp.as_request('{"sub": "gus", "tenant": "globex", "scope": "approvals:respond"}',
            format('SELECT pg_temp.api(%L)', pg_temp.body('acme/atk-http-00000000007'))) #>> '{body,error}',
          'id_tenant_mismatch', 'an approver of another tenant is 403 id_tenant_mismatch');
SELECT is((SELECT status FROM openwop.interrupts WHERE run_id = 'acme/atk-http-00000000007'), 'pending', '... nothing resolved');

CREATE ROLE atk_http_plain LOGIN;
GRANT USAGE ON SCHEMA openwop_api TO atk_http_plain;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop_api TO atk_http_plain;
CREATE FUNCTION pg_temp.forged(sql text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE r jsonb;
BEGIN
  PERFORM set_config('request.jwt.claims', '{"sub": "ceo", "tenant": "acme", "scope": "approvals:respond"}', true);
  PERFORM set_config('request.headers', '{"idempotency-key": "atk-http-key-0000000000plain1"}', true);
  EXECUTE sql INTO r;
  PERFORM set_config('request.jwt.claims', '', true), set_config('request.headers', '', true),
          set_config('response.status', '', true);
  RETURN r;
END $$;
SELECT is(pg_temp.as_login('atk_http_plain', 'acme', format('SELECT pg_temp.forged(%L)', pg_temp.body('acme/atk-http-00000000007'))) ->> 'error',
          'forbidden', 'a login that is not the authenticator setting request.jwt.claims itself is itself, no approver: 403');
SELECT is((SELECT status FROM openwop.interrupts WHERE run_id = 'acme/atk-http-00000000007'), 'pending', '... nothing resolved');

/* ------------------------------------------------------------------
 * search_path: a role with CREATE in its own schema shadows pg_catalog
 * ------------------------------------------------------------------ */

CREATE ROLE atk_http_shadow LOGIN;
GRANT openwop_approver TO atk_http_shadow;
GRANT USAGE ON SCHEMA openwop_api TO atk_http_shadow;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop_api TO atk_http_shadow;
GRANT USAGE ON SCHEMA openwop TO atk_http_shadow;
GRANT EXECUTE ON FUNCTION openwop.flowdrop_interrupt(text), openwop.flowdrop_interrupts(text[]) TO atk_http_shadow;
CREATE SCHEMA atk_shadow AUTHORIZATION atk_http_shadow;
SET LOCAL ROLE atk_http_shadow;
CREATE FUNCTION atk_shadow.hit() RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'shadow hit'; END $$;
CREATE FUNCTION atk_shadow.b2(anyelement, anyelement) RETURNS boolean LANGUAGE sql AS 'SELECT atk_shadow.hit()';
CREATE FUNCTION atk_shadow.t2(text, text) RETURNS boolean LANGUAGE sql AS 'SELECT atk_shadow.hit()';
CREATE FUNCTION atk_shadow.j2(jsonb, text) RETURNS jsonb LANGUAGE sql AS 'SELECT NULL::jsonb WHERE atk_shadow.hit()';
CREATE FUNCTION atk_shadow.jt(jsonb, text) RETURNS text LANGUAGE sql AS 'SELECT NULL::text WHERE atk_shadow.hit()';
CREATE FUNCTION atk_shadow.jj(jsonb, jsonb) RETURNS jsonb LANGUAGE sql AS 'SELECT NULL::jsonb WHERE atk_shadow.hit()';
CREATE FUNCTION atk_shadow.jb(jsonb, jsonb) RETURNS boolean LANGUAGE sql AS 'SELECT atk_shadow.hit()';
DO $$
DECLARE op text;
BEGIN
  FOREACH op IN ARRAY ARRAY['=', '<>', '<', '>', '<=', '>='] LOOP
    EXECUTE format('CREATE OPERATOR atk_shadow.%s (FUNCTION = atk_shadow.t2, LEFTARG = text, RIGHTARG = text)', op);
    EXECUTE format('CREATE OPERATOR atk_shadow.%s (FUNCTION = atk_shadow.b2, LEFTARG = anyelement, RIGHTARG = anyelement)', op);
  END LOOP;
  EXECUTE 'CREATE OPERATOR atk_shadow.-> (FUNCTION = atk_shadow.j2, LEFTARG = jsonb, RIGHTARG = text)';
  EXECUTE 'CREATE OPERATOR atk_shadow.->> (FUNCTION = atk_shadow.jt, LEFTARG = jsonb, RIGHTARG = text)';
  EXECUTE 'CREATE OPERATOR atk_shadow.|| (FUNCTION = atk_shadow.jj, LEFTARG = jsonb, RIGHTARG = jsonb)';
  EXECUTE 'CREATE OPERATOR atk_shadow.@> (FUNCTION = atk_shadow.jb, LEFTARG = jsonb, RIGHTARG = jsonb)';
END $$;
CREATE FUNCTION atk_shadow.now() RETURNS timestamptz LANGUAGE sql AS 'SELECT NULL::timestamptz WHERE atk_shadow.hit()';
CREATE FUNCTION atk_shadow.set_config(text, text, boolean) RETURNS text LANGUAGE sql AS 'SELECT NULL::text WHERE atk_shadow.hit()';
CREATE FUNCTION atk_shadow.current_setting(text, boolean) RETURNS text LANGUAGE sql AS 'SELECT NULL::text WHERE atk_shadow.hit()';
CREATE FUNCTION atk_shadow.current_setting(text) RETURNS text LANGUAGE sql AS 'SELECT NULL::text WHERE atk_shadow.hit()';
CREATE FUNCTION atk_shadow.pg_notify(text, text) RETURNS void LANGUAGE sql AS 'SELECT WHERE atk_shadow.hit()';
CREATE FUNCTION atk_shadow.unnest(text[]) RETURNS SETOF text LANGUAGE sql AS 'SELECT NULL::text WHERE atk_shadow.hit()';
CREATE FUNCTION atk_shadow.jsonb_build_object(VARIADIC text[]) RETURNS jsonb LANGUAGE plpgsql AS $$ BEGIN PERFORM atk_shadow.hit(); RETURN NULL; END $$;
CREATE FUNCTION atk_shadow.to_jsonb(anyelement) RETURNS jsonb LANGUAGE sql AS 'SELECT NULL::jsonb WHERE atk_shadow.hit()';
CREATE FUNCTION atk_shadow.count(anyelement) RETURNS bigint LANGUAGE sql AS 'SELECT NULL::bigint WHERE atk_shadow.hit()';
CREATE TABLE atk_shadow.interrupts (x int);
CREATE TABLE atk_shadow.runs (x int);
CREATE TABLE atk_shadow.idempotency_keys (x int);
CREATE TABLE atk_shadow.events (x int);
CREATE TABLE atk_shadow.signing_keys (x int);
CREATE TEMP TABLE shadow_results (label text, answer jsonb, headers text, status text, entry json);
RESET ROLE;
GRANT ALL ON shadow_results TO atk_http_shadow;
GRANT SELECT ON gates TO atk_http_shadow;
SET LOCAL ROLE atk_http_shadow;
-- under the hostile path only qualified names and no operator: results are checked after RESET
SET LOCAL search_path = atk_shadow, pg_catalog, openwop;
SET LOCAL request.headers = '{"idempotency-key": "atk-http-key-00000000shadow08"}';
INSERT INTO pg_temp.shadow_results (label, answer, headers, status)
  SELECT 'first', openwop_api."resolveInterruptByRun"('{"runId": "acme/atk-http-00000000008", "nodeId": "gate", "resumeValue": {"action": "accept"}}'::pg_catalog.json),
         pg_catalog.current_setting('response.headers', true), pg_catalog.current_setting('response.status', true);
INSERT INTO pg_temp.shadow_results (label, answer, headers, status)
  SELECT 'replay', openwop_api."resolveInterruptByRun"('{"runId": "acme/atk-http-00000000008", "nodeId": "gate", "resumeValue": {"action": "accept"}}'::pg_catalog.json),
         pg_catalog.current_setting('response.headers', true), pg_catalog.current_setting('response.status', true);
SET LOCAL request.headers = '';
SET LOCAL response.headers = '';
INSERT INTO pg_temp.shadow_results (label, answer, headers, status)
  SELECT 'refused', openwop_api."resolveInterruptByRun"('{"runId": "acme/atk-http-00000000008", "nodeId": "gate", "resumeValue": {"action": "accept"}}'::pg_catalog.json),
         pg_catalog.current_setting('response.headers', true), pg_catalog.current_setting('response.status', true);
SET LOCAL response.status = '';
INSERT INTO pg_temp.shadow_results (label, answer, headers, status)
  SELECT 'inspect', openwop_api."inspectInterruptByToken"('ow2.hs256.atk-http.e30.0000000000000000000000000000000000000000000000000000000000000000'),
         pg_catalog.current_setting('response.headers', true), pg_catalog.current_setting('response.status', true);
SET LOCAL response.status = '';
SET LOCAL response.headers = '';
INSERT INTO pg_temp.shadow_results (label, entry)
  SELECT 'one', openwop.flowdrop_interrupt(interrupt_id) FROM pg_temp.gates LIMIT 1;
INSERT INTO pg_temp.shadow_results (label, entry)
  SELECT 'list', openwop.flowdrop_interrupts(ARRAY(SELECT interrupt_id FROM pg_temp.gates));
RESET search_path;
RESET ROLE;
SELECT is((SELECT answer ->> 'status' FROM shadow_results WHERE label = 'first'), 'resolved',
          'resolveInterruptByRun with a hostile search_path ahead of pg_catalog: resolved, no shadow object ran');
SELECT is((SELECT headers::jsonb FROM shadow_results WHERE label = 'replay'), '[{"OpenWOP-Idempotent-Replay": "true"}]',
          '... and replayed under the same key with the replay header');
SELECT is((SELECT answer ->> 'error' || ' ' || status FROM shadow_results WHERE label = 'refused'), 'interrupt_already_resolved 409',
          '... and a refusal is answered as the envelope and status');
SELECT is((SELECT answer ->> 'error' || ' ' || status FROM shadow_results WHERE label = 'inspect'), 'interrupt_token_invalid 401',
          'inspectInterruptByToken with a hostile search_path');
SELECT is((SELECT json_typeof(entry) FROM shadow_results WHERE label = 'one'), 'object', 'flowdrop_interrupt with a hostile search_path');
SELECT is((SELECT json_array_length(entry) FROM shadow_results WHERE label = 'list'), 12, 'flowdrop_interrupts with a hostile search_path');
SELECT is((SELECT count(*)::int FROM atk_shadow.interrupts) + (SELECT count(*)::int FROM atk_shadow.idempotency_keys)
            + (SELECT count(*)::int FROM atk_shadow.events) + (SELECT count(*)::int FROM atk_shadow.runs), 0,
          'nothing was written to the shadow tables');

/* ------------------------------------------------------------------
 * FlowDrop: who may read, tenants, the list form's filtering, valid JSON
 * ------------------------------------------------------------------ */

CREATE ROLE atk_http_reader LOGIN;
GRANT USAGE ON SCHEMA openwop TO atk_http_reader;
GRANT EXECUTE ON FUNCTION openwop.flowdrop_interrupt(text), openwop.flowdrop_interrupts(text[]) TO atk_http_reader;
SELECT is(pg_temp.as_login('atk_http_reader', 'acme', format('SELECT to_jsonb(openwop.flowdrop_interrupt(%L))', interrupt_id)) ->> 'code',
          'forbidden', 'EXECUTE on flowdrop_interrupt alone reads nothing: 403') FROM gates WHERE n = 1;
SELECT is(pg_temp.as_login('atk_http_reader', 'acme', format('SELECT to_jsonb(openwop.flowdrop_interrupts(%L))', ARRAY['acme/nope', 'globex/nope'])) ->> 'code',
          'forbidden', 'EXECUTE on flowdrop_interrupts alone reads nothing, before any id is looked at');
SELECT is(pg_temp.as_login('atk_http_reader', 'acme', format('SELECT to_jsonb(openwop.flowdrop_interrupt(%L))', interrupt_id)) ->> 'code',
          'forbidden', 'another tenant''s id is refused before it is looked at (403 either way)') FROM globex_gate;
SELECT is(pg_temp.as_request('{"sub": "gus", "tenant": "globex", "scope": "approvals:respond"}',
            format('SELECT to_jsonb(openwop.flowdrop_interrupts(%L))', ARRAY(SELECT interrupt_id FROM gates ORDER BY n))),
          '[]', 'a globex approver listing acme''s ids gets []');
SELECT is(json_array_length(openwop.flowdrop_interrupts(ARRAY['globex/atk-http-00000000001', interrupt_id, 'globex/' || split_part(interrupt_id, '/', 2),
                                                              'acme/' || split_part(g.gid, '/', 2)])), 1,
          'the list form drops other tenants'' ids and acme-prefixed copies of them')
  FROM gates, (SELECT interrupt_id AS gid FROM globex_gate) g WHERE n = 1;
SELECT is(json_array_length(openwop.flowdrop_interrupts(array_fill(interrupt_id, ARRAY[1000]))), 1000,
          'a list of one id repeated 1000 times answers 1000 entries (bounded by the size check)') FROM gates WHERE n = 1;
SELECT throws_ok($$ SELECT openwop.flowdrop_interrupts(array_fill('acme/x'::text, ARRAY[1001])) $$, 'PT400', NULL, '1001 ids is 400');
SELECT throws_ok($$ SELECT openwop.flowdrop_interrupts(ARRAY['acme/x', NULL]) $$, 'PT400', NULL, 'a NULL id is 400');
SELECT throws_ok($$ SELECT openwop.flowdrop_interrupts(ARRAY[['acme/x'], ['acme/y']]) $$, 'PT400', NULL, 'a 2-D array is 400');
SELECT throws_ok($$ SELECT openwop.flowdrop_interrupts(NULL) $$, 'PT400', NULL, 'a NULL list is 400');
SELECT is(openwop.flowdrop_interrupts('{}')::text, '[]', 'an empty list is []');

-- odd characters everywhere an entry copies a string: node ids, titles, actions, control characters
DO $$ BEGIN
  PERFORM openwop.create_run('atk', jsonb_build_object('runId', 'acme/atk-http-odd-0000001'));
  PERFORM openwop.start_node('acme/atk-http-odd-0000001', 'n.~:-_');
  PERFORM openwop.interrupt('acme/atk-http-odd-0000001', 'n.~:-_', jsonb_build_object('kind', 'approval', 'data',
           jsonb_build_object('artifactId', E'a\u0001', 'artifactType', E'</script>"', 'title', E'T"\\\n\r\b\f\u0007\u001f\u2028\u2029\ud83d\ude00',
                              'actions', jsonb_build_array('accept', 'reject'))));
END $$;
SELECT is(openwop.flowdrop_interrupt(interrupt_id)::jsonb ->> 'message', E'T"\\\n\r\b\f\u0007\u001f\u2028\u2029\ud83d\ude00',
          'a title of quotes, backslashes and control characters survives as valid JSON')
  FROM openwop.interrupts WHERE run_id = 'acme/atk-http-odd-0000001';
SELECT is(openwop.flowdrop_interrupt(interrupt_id)::jsonb ->> 'nodeId', 'n.~:-_', 'a node id of every punctuation the grammar allows')
  FROM openwop.interrupts WHERE run_id = 'acme/atk-http-odd-0000001';
SELECT is(openwop.flowdrop_interrupt(interrupt_id)::jsonb ->> 'jobId', 'acme/atk-http-odd-0000001#n.~:-_#0', '... and the jobId built from it')
  FROM openwop.interrupts WHERE run_id = 'acme/atk-http-odd-0000001';
SELECT is(openwop.flowdrop_interrupts(ARRAY[interrupt_id, interrupt_id])::jsonb #>> '{1,context,artifactId}', E'a\u0001',
          'the list form is valid JSON too') FROM openwop.interrupts WHERE run_id = 'acme/atk-http-odd-0000001';
SELECT ok(openwop.flowdrop_interrupt(interrupt_id)::text !~ '[\x01-\x1f]', 'no raw control character in the json text')
  FROM openwop.interrupts WHERE run_id = 'acme/atk-http-odd-0000001';

-- request.headers is guarded like request.jwt.claims: code running as someone
-- else cannot choose the Idempotency-Key of the session's next HTTP resolve
CREATE ROLE atk_hdr_definer;
CREATE FUNCTION public.atk_set_headers() RETURNS void LANGUAGE sql SECURITY DEFINER
  AS $$ SELECT set_config('request.headers', '{"idempotency-key": "atk-http-key-000000definer1"}', false) $$;
ALTER FUNCTION public.atk_set_headers() OWNER TO atk_hdr_definer;
SELECT throws_ok('SELECT public.atk_set_headers()', '42501', NULL,
                 'request_headers_guarded: a SECURITY DEFINER function cannot set request.headers');
CREATE FUNCTION public.atk_reset_headers() RETURNS void LANGUAGE plpgsql SECURITY DEFINER
  AS $$ BEGIN RESET request.headers; END $$;
ALTER FUNCTION public.atk_reset_headers() OWNER TO atk_hdr_definer;
SET LOCAL request.headers = '{"idempotency-key": "atk-http-key-0000000reset01"}';
SELECT public.atk_reset_headers();
SET LOCAL request.headers = '{"idempotency-key": "atk-http-key-0000000reset01"}';
SELECT is(current_setting('request.headers'), '{"idempotency-key": "atk-http-key-0000000reset01"}',
          '... the session itself may set it (a reset by the definer is forgotten once the session sets it again)');
SET LOCAL request.headers = '';

SELECT * FROM finish();
ROLLBACK;
