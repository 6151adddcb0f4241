-- The PostgREST surface, schema openwop_api (docs/postgrest.md): what it
-- holds and who may reach it, and that each refusal it answers is the
-- refusal of the openwop function it calls, read from that one ereport
-- (envelope {error, message, details} and response.status).  The HTTP
-- requests themselves, replayed as PostgREST v12 sends them, are
-- test/checks/postgrest_replay.sh.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir callers.psql
\ir api.psql

/* ------------------------------------------------------------------
 * What the schema holds
 * ------------------------------------------------------------------ */

SELECT is((SELECT count(*)::int FROM pg_depend
            WHERE classid = 'pg_namespace'::regclass AND objid = 'openwop_api'::regnamespace
              AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'openwop_interrupt') AND deptype = 'e'),
          1, 'the schema openwop_api belongs to the extension');
SELECT is(ARRAY(SELECT p.oid::regprocedure::text || ' ' || pg_get_function_result(p.oid) || ' ' || p.provolatile::text
                  FROM pg_proc p WHERE p.pronamespace = 'openwop_api'::regnamespace ORDER BY 1),
          ARRAY['openwop_api."flowdropInterrupts"(text,integer) json s',
                'openwop_api."inspectInterruptByToken"(text) jsonb s',
                'openwop_api."resolveInterruptByRun"(json) jsonb v',
                'openwop_api."resolveInterruptByToken"(json) jsonb v',
                'openwop_api."resolveInterrupts"(json) jsonb v',
                'openwop_api."withdrawVote"(json) jsonb v',
                'openwop_api.openapi() json i'],
          'one function per operation, named after it (PostgREST routes /rpc/<name>); inspect and flowdropInterrupts are STABLE, so PostgREST runs them READ ONLY');
SELECT is(ARRAY(SELECT p.proname || ' ' || coalesce(array_to_string(p.proargnames, ','), '(unnamed)') || ' ' || p.pronargdefaults
                  FROM pg_proc p WHERE p.pronamespace = 'openwop_api'::regnamespace ORDER BY 1),
          ARRAY['flowdropInterrupts after,max 2', 'inspectInterruptByToken token 1', 'openapi (unnamed) 0',
                'resolveInterruptByRun (unnamed) 0', 'resolveInterruptByToken (unnamed) 0', 'resolveInterrupts (unnamed) 0',
                'withdrawVote (unnamed) 0'],
          'a POST takes one unnamed json parameter (PostgREST passes it the whole body, as written: a body jsonb cannot hold reaches the function); inspect takes ?token=, flowdropInterrupts ?after=&max=, each defaulting');
SELECT is((SELECT count(*)::int FROM pg_proc p WHERE p.pronamespace = 'openwop_api'::regnamespace
             AND (p.prosecdef OR p.proconfig IS NOT NULL OR p.proisstrict)),
          0, 'no SECURITY DEFINER, no SET clause, not STRICT (a null body is refused, not answered with null)');
SELECT is((SELECT count(*)::int FROM pg_class c WHERE c.relnamespace = 'openwop_api'::regnamespace AND c.relkind <> 'v'),
          0, 'no table reachable through openwop_api: no table, sequence or materialized view in it');

-- what PostgREST's OpenAPI document shows: the comment's first line is the
-- summary, the rest the description (src/PostgREST/Response/OpenAPI.hs, makeProcPathItem)
SELECT is(ARRAY(SELECT split_part(obj_description(p.oid, 'pg_proc'), E'\n', 1)
                  FROM pg_proc p WHERE p.pronamespace = 'openwop_api'::regnamespace ORDER BY p.proname),
          ARRAY['flowdropInterrupts: the caller''s inbox as FlowDrop interrupt entries',
                'inspectInterruptByToken: read the interrupt a signed token names',
                'openapi: the OpenAPI document of this API',
                'resolveInterruptByRun: answer the pending interrupt of a node of a run',
                'resolveInterruptByToken: answer the interrupt a signed token names',
                'resolveInterrupts: give one answer to many interrupts',
                'withdrawVote: take back the caller''s counted vote on a pending approval gate'],
          'each operation''s OpenAPI summary is its operationId and what it does');
SELECT is((SELECT count(*)::int FROM pg_proc p WHERE p.pronamespace = 'openwop_api'::regnamespace
             AND length(substr(obj_description(p.oid, 'pg_proc'), strpos(obj_description(p.oid, 'pg_proc'), E'\n') + 1)) > 200
             AND obj_description(p.oid, 'pg_proc') LIKE '%Refusals, as {error, message, details}%'),
          6, 'each operation''s OpenAPI description says its body, its answer and its refusals');
SELECT is(split_part(obj_description('openwop_api'::regnamespace, 'pg_namespace'), E'\n', 1),
          'OpenWOP interrupt: resolve surfaces', 'the schema comment gives the OpenAPI document its title');

/* ------------------------------------------------------------------
 * Who may reach it
 * ------------------------------------------------------------------ */

SELECT ok(NOT has_schema_privilege('public', 'openwop_api', 'USAGE'),
          'PUBLIC has no USAGE on openwop_api: a DBA grants it to the web roles');
SELECT ok(NOT has_schema_privilege('public', 'openwop_api', 'CREATE'),
          'no role but the owner creates in openwop_api: nobody can add a table to the surface or stand in for an operation');
SELECT is((SELECT count(*)::int FROM pg_proc p WHERE p.pronamespace = 'openwop_api'::regnamespace
             AND has_function_privilege('public', p.oid, 'EXECUTE')),
          0, 'PUBLIC may EXECUTE none of the operations: a DBA grants them to the web roles with USAGE');
SELECT ok(NOT has_table_privilege('public', 'openwop_api.pending_interrupts', 'SELECT'),
          'PUBLIC may not read the inbox view of openwop_api either');
CREATE ROLE tap_pgrst_stranger;
CREATE ROLE tap_pgrst_web;
GRANT USAGE ON SCHEMA openwop_api TO tap_pgrst_web;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop_api TO tap_pgrst_web;
SET LOCAL ROLE tap_pgrst_stranger;
SELECT throws_ok($$ SELECT openwop_api."inspectInterruptByToken"('x') $$, '42501', NULL,
                 'a role without USAGE on openwop_api cannot call it');
RESET ROLE;
SET LOCAL ROLE tap_pgrst_web;
SELECT is(openwop_api."inspectInterruptByToken"('x') ->> 'error', 'interrupt_token_invalid',
          'a web role with USAGE and EXECUTE on openwop_api reaches the operations (and not openwop''s functions)');
SELECT throws_ok($$ SELECT openwop.inspect_interrupt('x') $$, '42501', NULL,
                 'the web role has no privilege on schema openwop itself');
RESET ROLE;
SET LOCAL response.status = '';
SET LOCAL response.headers = '';

/* ------------------------------------------------------------------
 * One source of truth: the envelope is the refusal of the openwop
 * function, read from its ereport
 * ------------------------------------------------------------------ */

-- what a client of the openwop function sees of its refusal, as the HTTP
-- surface must answer it: {status, body: {error, message, details}}
CREATE FUNCTION pg_temp.direct(sql text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE st text; msg text; det text;
BEGIN
  EXECUTE sql;
  RETURN NULL;
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL;
  RETURN jsonb_build_object('status', substr(st, 3)::int,
                            'body', jsonb_build_object('error', split_part(msg, ': ', 1),
                                                       'message', substr(msg, strpos(msg, ': ') + 2),
                                                       'details', det::jsonb));
END $$;
CREATE FUNCTION pg_temp.body(run text, node text, value jsonb) RETURNS text LANGUAGE sql AS $$
  SELECT quote_literal(jsonb_build_object('runId', run, 'nodeId', node, 'resumeValue', value)::text)
$$;
CREATE FUNCTION pg_temp.gate(run text, data jsonb DEFAULT '{}') RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  PERFORM openwop.create_run('pgrst', jsonb_build_object('runId', run));
  PERFORM openwop.start_node(run, 'gate');
  RETURN openwop.interrupt(run, 'gate', jsonb_build_object('kind', 'approval', 'data',
           jsonb_build_object('artifactId', 'a', 'artifactType', 'doc', 'title', 'T',
                              'actions', '["accept", "reject"]'::jsonb) || data)) #>> '{metadata,interrupt,id}';
END $$;
-- same refusal: the openwop_api answer without its headers, and the refusal of the direct call
CREATE FUNCTION pg_temp.same(api_sql text, direct_sql text, headers jsonb DEFAULT '{}') RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('api', pg_temp.api(api_sql, headers) - 'headers', 'direct', pg_temp.direct(direct_sql))
$$;

DO $$ BEGIN
  PERFORM pg_temp.gate('acme/pgrst-tap-00000000001');
  PERFORM pg_temp.gate('acme/pgrst-tap-00000000002', '{"approversList": ["cfo@example.org"]}');
  PERFORM openwop.add_signing_key('tap-pgrst');
END $$;
CREATE TEMP TABLE inspect_token AS
  SELECT openwop.mint_interrupt_token((SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/pgrst-tap-00000000001'), 'inspect') AS t;

CREATE TEMP TABLE cases (code text, api text, direct text, headers jsonb);
INSERT INTO cases VALUES
  ('validation_error',
   format('SELECT openwop_api."resolveInterruptByRun"(%s)', pg_temp.body('acme/pgrst-tap-00000000001', 'gate', '{"action": "approve"}')),
   $$SELECT openwop.resolve_interrupt('acme/pgrst-tap-00000000001', 'gate', '{"action": "approve"}')$$, '{}'),
  ('idempotency_key_invalid',
   format('SELECT openwop_api."resolveInterruptByRun"(%s)', pg_temp.body('acme/pgrst-tap-00000000001', 'gate', '{"action": "accept"}')),
   $$SELECT openwop.resolve_interrupt('acme/pgrst-tap-00000000001', 'gate', '{"action": "accept"}', 'short')$$,
   '{"idempotency-key": "short"}'),
  ('forbidden',
   format('SELECT openwop_api."resolveInterruptByRun"(%s)', pg_temp.body('acme/pgrst-tap-00000000002', 'gate', '{"action": "accept"}')),
   $$SELECT openwop.resolve_interrupt('acme/pgrst-tap-00000000002', 'gate', '{"action": "accept"}')$$, '{}'),
  ('id_tenant_mismatch',
   format('SELECT openwop_api."resolveInterruptByRun"(%s)', pg_temp.body('globex/pgrst-tap-0000000001', 'gate', '{}')),
   $$SELECT openwop.resolve_interrupt('globex/pgrst-tap-0000000001', 'gate', '{}')$$, '{}'),
  ('not_found',
   format('SELECT openwop_api."resolveInterruptByRun"(%s)', pg_temp.body('acme/pgrst-tap-99999999999', 'gate', '{}')),
   $$SELECT openwop.resolve_interrupt('acme/pgrst-tap-99999999999', 'gate', '{}')$$, '{}'),
  ('interrupt_token_invalid',
   $$SELECT openwop_api."inspectInterruptByToken"('ow2.hs256.nokid.e30.0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef')$$,
   $$SELECT openwop.inspect_interrupt('ow2.hs256.nokid.e30.0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef')$$, '{}'),
  ('forbidden',
   $$SELECT openwop_api."resolveInterruptByToken"(json_build_object('token', (SELECT t FROM inspect_token), 'resumeValue', '{"action": "accept"}'::json))$$,
   $$SELECT openwop.resolve_interrupt_by_token((SELECT t FROM inspect_token), '{"action": "accept"}')$$, '{}');
SELECT is(pg_temp.api(api, headers) - 'headers', pg_temp.direct(direct),
          format('%s: the envelope and status are the openwop function''s refusal (%s)', code, left(api, 60)))
  FROM cases;

-- interrupt_already_resolved and idempotency_key_mismatch after a first answer
SELECT is(pg_temp.api(format('SELECT openwop_api."resolveInterruptByRun"(%s)', pg_temp.body('acme/pgrst-tap-00000000001', 'gate', '{"action": "accept"}')),
                      '{"idempotency-key": "tap-pgrst-key-000000000001"}') #>> '{body,status}',
          'resolved', 'a resolve through openwop_api with an Idempotency-Key header');
SELECT is(pg_temp.api(format('SELECT openwop_api."resolveInterruptByRun"(%s)', pg_temp.body('acme/pgrst-tap-00000000001', 'gate', '{"action": "accept"}'))) - 'headers',
          pg_temp.direct($$SELECT openwop.resolve_interrupt('acme/pgrst-tap-00000000001', 'gate', '{"action": "accept"}')$$),
          'interrupt_already_resolved: the envelope and status are the openwop function''s refusal');
SELECT is(pg_temp.api(format('SELECT openwop_api."resolveInterruptByRun"(%s)', pg_temp.body('acme/pgrst-tap-00000000001', 'gate', '{"action": "reject"}')),
                      '{"idempotency-key": "tap-pgrst-key-000000000001"}') - 'headers',
          pg_temp.direct($$SELECT openwop.resolve_interrupt('acme/pgrst-tap-00000000001', 'gate', '{"action": "reject"}', 'tap-pgrst-key-000000000001')$$),
          'idempotency_key_mismatch: the envelope and status are the openwop function''s refusal');

-- identity_unresolvable, in a request session (the claims of PostgREST's authenticator)
SELECT is(pg_temp.as_request('{"sub": "two words", "tenant": "acme", "scope": "approvals:respond"}',
            format('SELECT pg_temp.api(%L)', format('SELECT openwop_api."resolveInterruptByRun"(%s)', pg_temp.body('acme/pgrst-tap-00000000002', 'gate', '{}')))),
          pg_temp.as_request('{"sub": "two words", "tenant": "acme", "scope": "approvals:respond"}',
            format('SELECT pg_temp.direct(%L)', $$SELECT openwop.resolve_interrupt('acme/pgrst-tap-00000000002', 'gate', '{}')$$))
            || '{"headers": [{"WWW-Authenticate": "Bearer"}]}',
          'identity_unresolvable: 401, with WWW-Authenticate as PostgREST''s own 401 answers have it');

-- interrupt_expired: a token past its expiresAt
DO $$ BEGIN PERFORM pg_temp.gate('acme/pgrst-tap-00000000003'); END $$;
CREATE TEMP TABLE short AS
  SELECT openwop.mint_interrupt_token((SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/pgrst-tap-00000000003'),
                                      'resolve', interval '1 millisecond') AS token;
DO $$ BEGIN PERFORM pg_sleep(0.01); END $$;
SELECT is(pg_temp.api(format('SELECT openwop_api."inspectInterruptByToken"(%L)', token)) - 'headers',
          pg_temp.direct(format('SELECT openwop.inspect_interrupt(%L)', token)),
          'interrupt_expired: the envelope and status are the openwop function''s refusal') FROM short;

/* ------------------------------------------------------------------
 * The request as PostgREST passes it
 * ------------------------------------------------------------------ */

SELECT is(pg_temp.api('SELECT openwop_api."resolveInterruptByRun"(NULL)') #> '{body,details}', '{"field": "body"}',
          'a missing body is 400 validation_error, details.field body');
SELECT is(pg_temp.api($$SELECT openwop_api."resolveInterruptByRun"('"x"')$$) -> 'status', '400',
          'a body that is a JSON string is 400');
SELECT is(pg_temp.api($$SELECT openwop_api."resolveInterruptByToken"('{"token": "t", "resumeValue": {}, "nodeId": "gate"}')$$) -> 'body',
          '{"error": "validation_error", "message": "the request body has unknown member \"nodeId\"; it takes {token, resumeValue}", "details": {"field": "nodeId"}}',
          'the token body is closed: {token, resumeValue}');
SELECT is(pg_temp.api($$SELECT openwop_api."resolveInterruptByToken"('{"resumeValue": {}}')$$) #>> '{body,error}', 'interrupt_token_invalid',
          'a token body without token is refused as the entry point refuses no token: 401');
SELECT is(pg_temp.api(format('SELECT openwop_api."resolveInterruptByRun"(%s)', pg_temp.body('acme/pgrst-tap-00000000002', 'gate', '{}')),
                      '{"idempotency-key": 12345678901234567890123}') #>> '{body,error}', 'idempotency_key_invalid',
          'an Idempotency-Key header that is not a string is outside the grammar');
SELECT is(pg_temp.api($$SELECT openwop_api."inspectInterruptByToken"('x')$$, '{"idempotency-key": "!"}') #>> '{body,error}',
          'interrupt_token_invalid', 'a GET does not honor an Idempotency-Key: inspect ignores the header');
SELECT is(pg_temp.api(format('SELECT openwop_api."resolveInterruptByRun"(%s)', pg_temp.body('acme/pgrst-tap-00000000002', 'gate', '{}')))
            #> '{body,details}', '{"principal": "postgres"}',
          'without request.headers (a plain SQL caller) there is no Idempotency-Key');
SET LOCAL request.headers = '["not", "an", "object"]';
SELECT is(pg_temp.direct(format('SELECT openwop_api."resolveInterruptByRun"(%s)', pg_temp.body('acme/pgrst-tap-00000000002', 'gate', '{}'))),
          NULL, 'a request.headers that is not an object is answered, not raised');
SELECT is(openwop_api."resolveInterruptByRun"(json_build_object('runId', 'acme/pgrst-tap-00000000002', 'nodeId', 'gate', 'resumeValue', '{}'::json)),
          '{"error": "validation_error", "message": "request.headers is not a JSON object", "details": {"field": "request.headers"}}',
          '... as 400 validation_error, details.field request.headers');
SET LOCAL request.headers = '';
SET LOCAL response.status = '';

-- an error that is no refusal is re-thrown as it was: here jsonb's own, for a header it cannot hold
SET LOCAL request.headers = '{"idempotency-key": "\u0000"}';
SELECT throws_ok(format('SELECT openwop_api."resolveInterruptByRun"(%s)', pg_temp.body('acme/pgrst-tap-00000000002', 'gate', '{}')),
                 '22P05', 'unsupported Unicode escape sequence',
                 'an error that is no refusal (22P05) is re-thrown untouched, for PostgREST to answer as usual');
SELECT is(current_setting('response.status', true), '', '... and sets no response.status');
SET LOCAL request.headers = '';

/* ------------------------------------------------------------------
 * Replays and what a refusal leaves
 * ------------------------------------------------------------------ */

DO $$ BEGIN PERFORM pg_temp.gate('acme/pgrst-tap-00000000004'); END $$;
CREATE TEMP TABLE answers AS
  SELECT pg_temp.api(format('SELECT openwop_api."resolveInterruptByRun"(%s)', pg_temp.body('acme/pgrst-tap-00000000004', 'gate', '{"action": "accept"}')),
                     '{"idempotency-key": "tap-pgrst-key-000000000004"}') AS first;
SET LOCAL response.headers = '[{"X-Request-Id": "42"}]';
SET LOCAL request.headers = '{"idempotency-key": "tap-pgrst-key-000000000004"}';
ALTER TABLE answers ADD COLUMN again jsonb;
UPDATE answers SET again = openwop_api."resolveInterruptByRun"(json_build_object('runId', 'acme/pgrst-tap-00000000004', 'nodeId', 'gate',
                                                                                 'resumeValue', '{"action": "accept"}'::json));
SELECT is(current_setting('response.headers', true)::jsonb, '[{"X-Request-Id": "42"}, {"OpenWOP-Idempotent-Replay": "true"}]',
          'OpenWOP-Idempotent-Replay: true is added to response.headers, keeping what was set before (a db-pre-request function)');
SELECT is(again, first -> 'body', 'the replayed body is the stored response as first answered (no idempotentReplay member)') FROM answers;
SELECT is(first -> 'headers', '[]', 'the first answer carries no replay header, and no status but 200') FROM answers;
SELECT is(first -> 'status', '200', '... 200') FROM answers;
SET LOCAL request.headers = '';
SET LOCAL response.headers = '';

-- a refusal after the key was claimed: rolled back with its subtransaction, the transaction goes on
DO $$ BEGIN PERFORM pg_temp.gate('acme/pgrst-tap-00000000005', '{"approversList": ["cfo@example.org"]}'); END $$;
CREATE TEMP TABLE before AS SELECT (SELECT count(*) FROM openwop.events) AS events;
SELECT is(pg_temp.api(format('SELECT openwop_api."resolveInterruptByRun"(%s)', pg_temp.body('acme/pgrst-tap-00000000005', 'gate', '{"action": "accept"}')),
                      '{"idempotency-key": "tap-pgrst-key-000000000005"}') #>> '{body,error}',
          'forbidden', 'an ineligible answer with an Idempotency-Key is refused');
SELECT is((SELECT count(*)::int FROM openwop.idempotency_keys WHERE key = 'tap-pgrst-key-000000000005'), 0,
          'nothing half-applied: the key claimed before the refusal is not recorded');
SELECT is((SELECT count(*) FROM openwop.events), events, 'nothing half-applied: no event') FROM before;
SELECT is((SELECT status FROM openwop.interrupts WHERE run_id = 'acme/pgrst-tap-00000000005'), 'pending',
          'the gate keeps waiting, and the transaction goes on (PostgREST commits it, empty)');

-- api_refused_in_security_definer: code run as its owner names no caller, through openwop_api too
CREATE FUNCTION pg_temp.definer() RETURNS jsonb LANGUAGE sql SECURITY DEFINER AS $$
  SELECT openwop_api."resolveInterruptByRun"('{"runId": "acme/pgrst-tap-00000000005", "nodeId": "gate", "resumeValue": {"action": "accept"}}')
$$;
SELECT is(pg_temp.api('SELECT pg_temp.definer()') - 'headers',
          '{"status": 403, "body": {"error": "forbidden", "message": "openwop cannot tell who is calling inside a SECURITY DEFINER function", "details": {"context": "a SECURITY DEFINER function"}}}',
          'api_refused_in_security_definer: a SECURITY DEFINER function calling openwop_api is answered 403 forbidden');


/* ------------------------------------------------------------------
 * withdrawVote, resolveInterrupts, If-Match (issue 35)
 * ------------------------------------------------------------------ */
DO $$ BEGIN
  PERFORM pg_temp.gate('acme/pgrst-tap-00000000010', '{"requiredApprovals": 2}');
  PERFORM openwop.resolve_interrupt('acme/pgrst-tap-00000000010', 'gate', '{"action": "accept"}');
END $$;
SELECT is(pg_temp.api($q$ SELECT openwop_api."withdrawVote"('{"runId": "acme/pgrst-tap-00000000010", "nodeId": "gate"}') $q$) #> '{body,tally}',
          '{"voters": 0, "accepts": 0, "rejects": 0, "requiredApprovals": 2}', 'withdraw_vote_over_http: POST /rpc/withdrawVote takes the counted vote back');
SELECT is(pg_temp.same($q$ SELECT openwop_api."withdrawVote"('{"runId": "acme/pgrst-tap-00000000010", "nodeId": "gate"}') $q$,
                       $q$ SELECT openwop.withdraw_vote('acme/pgrst-tap-00000000010', 'gate') $q$) -> 'api' -> 'status',
          '404', '... and again is 404 not_found, the refusal of withdraw_vote');
SELECT is(pg_temp.api($q$ SELECT openwop_api."withdrawVote"('{"runId": "acme/pgrst-tap-00000000010", "nodeId": "gate", "extra": 1}') $q$) #>> '{body,details,field}',
          'extra', '... an unknown body member is 400');

SELECT pg_temp.gate('acme/pgrst-tap-00000000011') AS b1 \gset
SELECT pg_temp.gate('acme/pgrst-tap-00000000012', '{"approversList": ["cfo@example.org"]}') AS b2 \gset
SELECT is(pg_temp.api(format($q$ SELECT openwop_api."resolveInterrupts"(%L) $q$,
                             jsonb_build_object('interruptIds', jsonb_build_array(:'b1', :'b2'), 'resumeValue', '{"action": "accept"}'::jsonb)),
                      '{"idempotency-key": "tap-pgrst-bulk-00000000001"}')
            #> '{body,items}' @> jsonb_build_array(jsonb_build_object('interruptId', :'b1', 'status', 200), jsonb_build_object('interruptId', :'b2', 'status', 403)),
          true, 'resolve_interrupts_over_http: POST /rpc/resolveInterrupts answers {items: [{interruptId, status, result}]}');
SELECT is(pg_temp.api(format($q$ SELECT openwop_api."resolveInterrupts"(%L) $q$,
                             jsonb_build_object('interruptIds', jsonb_build_array(:'b1', :'b2'), 'resumeValue', '{"action": "accept"}'::jsonb)),
                      '{"idempotency-key": "tap-pgrst-bulk-00000000001"}') -> 'headers',
          '[{"OpenWOP-Idempotent-Replay": "true"}]', '... a retry under the same Idempotency-Key is the replay, marked by its header');
SELECT is(pg_temp.api($q$ SELECT openwop_api."resolveInterrupts"('{"interruptIds": "acme/x", "resumeValue": {"action": "accept"}}') $q$) #>> '{body,details,field}',
          'interruptIds', '... interruptIds that is not an array is 400');
SELECT is(pg_temp.api($q$ SELECT openwop_api."resolveInterrupts"('{"interruptIds": [1], "resumeValue": {"action": "accept"}}') $q$) -> 'status',
          '400', '... nor an array of ids');

-- If-Match: the artifact the voter looked at
DO $$ BEGIN
  PERFORM pg_temp.gate('acme/pgrst-tap-00000000013');
  PERFORM openwop.artifact_changed('acme/pgrst-tap-00000000013', 'gate', 'sha256:v2', 'edited');
END $$;
SELECT is(pg_temp.api(format('SELECT openwop_api."resolveInterruptByRun"(%s)', pg_temp.body('acme/pgrst-tap-00000000013', 'gate', '{"action": "accept"}')),
                      '{"if-match": "\"sha256:v1\""}') - 'headers' #- '{body,message}',
          jsonb_build_object('status', 412, 'body', jsonb_build_object('error', 'precondition_failed', 'details',
            jsonb_build_object('interruptId', (SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/pgrst-tap-00000000013'),
                               'artifactDigest', 'sha256:v2', 'seen', '"sha256:v1"'))),
          'if_match_stale_412: If-Match naming another version of the artifact is 412 precondition_failed');
SELECT is(current_setting('openwop.artifact_digest'), '', '... and the refused request leaves no digest set behind it');
SELECT set_config('openwop.artifact_digest', '', true);
SELECT is((pg_temp.api(format($q$ SELECT openwop_api."resolveInterrupts"(%L) $q$,
                             jsonb_build_object('interruptIds', jsonb_build_array((SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/pgrst-tap-00000000013')),
                                                'resumeValue', '{"action": "accept"}'::jsonb)),
                      '{"if-match": "\"sha256:v1\""}') #> '{body,items,0}') - 'result' - 'interruptId',
          '{"status": 412}', 'if_match_bulk: If-Match holds for each item of resolveInterrupts (the review''s attack: it was ignored)');
SELECT set_config('openwop.artifact_digest', '', true);
SELECT is(pg_temp.api(format('SELECT openwop_api."resolveInterruptByRun"(%s)', pg_temp.body('acme/pgrst-tap-00000000013', 'gate', '{"action": "accept"}')),
                      '{"if-match": "W/\"sha256:v2\""}') #>> '{body,receipt,artifactDigest}',
          'sha256:v2', 'if_match_current: If-Match naming the artifact the gate shows resolves it, and the receipt names it');
SELECT set_config('openwop.artifact_digest', '', true);

SELECT * FROM finish();
ROLLBACK;
