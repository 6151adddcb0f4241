-- The HTTP layer in front of the SQL (0.11.0): the POST operations of
-- openwop_api take their body as json, so a body jsonb cannot hold (a
-- \u0000, a lone surrogate) reaches the function and is refused with the
-- spec's envelope, not PostgREST's cast error; an interrupt id's opaque
-- segment is the 16 bytes of a version-4 UUID, which the FlowDrop entry
-- publishes as its id and every function taking an interrupt id accepts,
-- in the caller's tenant; openwop_api."flowdropInterrupts"(after, max)
-- pages the caller's inbox as FlowDrop entries by the last entry seen,
-- never skipping or repeating interrupts raised at one instant; the HTTP
-- inbox shows policy, due_at and overdue; and
-- openwop.connector_auth_expired() records connector.auth-expired, the
-- OAuth facet's announcement before a credential interrupt (or, without
-- the facet, before the node fails).  Each test is named after the rule
-- it holds.
--
-- The file is one transaction, so every interrupt it raises has the same
-- requested_at (now()): the paging tests get their ties for free, and
-- where an older instant is needed the superuser moves a row back and
-- says so.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
SET LOCAL timezone = 'UTC';
\ir refusal.psql
\ir callers.psql
\ir api.psql
\ir events.psql
\ir policy_admin.psql

-- an approval gate on node gate of a new run, raised by this login in the
-- run's tenant (then acting in acme again); returns the interrupt id
CREATE FUNCTION pg_temp.gate(run text, data jsonb DEFAULT '{}', extra jsonb DEFAULT '{}', wf text DEFAULT 'h51')
    RETURNS text LANGUAGE plpgsql AS $$
DECLARE iid text;
BEGIN
  PERFORM set_config('openwop.tenant', split_part(run, '/', 1), true);
  PERFORM openwop.create_run(wf, jsonb_build_object('runId', run));
  PERFORM openwop.start_node(run, 'gate');
  iid := openwop.interrupt(run, 'gate', jsonb_build_object('kind', 'approval', 'data',
           jsonb_build_object('artifactId', 'a', 'artifactType', 'doc', 'title', 'T',
                              'actions', '["accept", "reject"]'::jsonb) || data) || extra) #>> '{metadata,interrupt,id}';
  PERFORM set_config('openwop.tenant', 'acme', true);
  RETURN iid;
END $$;
-- every event of every run
CREATE FUNCTION pg_temp.all_events() RETURNS bigint LANGUAGE sql AS $$ SELECT count(*) FROM openwop.events $$;
-- the keys of a json object, in the order of its text
CREATE FUNCTION pg_temp.keys(j json) RETURNS text[] LANGUAGE sql AS $$
  SELECT array_agg(k ORDER BY n) FROM json_object_keys(j) WITH ORDINALITY AS t (k, n)
$$;
-- an envelope without its message (what the tests compare)
CREATE FUNCTION pg_temp.bare(r jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT CASE jsonb_typeof(r -> 'body') WHEN 'object' THEN (r - 'headers') #- '{body,message}' ELSE r - 'headers' END
$$;
-- what a call of openwop_api."flowdropInterrupts" (sql) answers, read as
-- the json it must be; an answer that is not (or an error) comes back as
-- {"unreadable": <SQLSTATE and message>}, for the test to fail on
CREATE FUNCTION pg_temp.fdq(sql text) RETURNS json LANGUAGE plpgsql AS $$
DECLARE r json;
BEGIN
  EXECUTE sql INTO r;
  RETURN r::text::json;
EXCEPTION WHEN OTHERS THEN
  RETURN json_build_object('unreadable', SQLSTATE || ' ' || SQLERRM);
END $$;
CREATE FUNCTION pg_temp.fd(after text, max integer) RETURNS json LANGUAGE sql AS $$
  SELECT pg_temp.fdq(format('SELECT openwop_api."flowdropInterrupts"(%L, (%s)::integer)', after, coalesce(max::text, 'NULL')))
$$;
-- its entries (what is not an array: itself) and how many (NULL for what is not an array)
CREATE FUNCTION pg_temp.elems(j json) RETURNS SETOF json LANGUAGE sql AS $$
  SELECT e FROM json_array_elements(CASE json_typeof(j) WHEN 'array' THEN j ELSE json_build_array(j) END) e
$$;
CREATE FUNCTION pg_temp.len(j json) RETURNS integer LANGUAGE sql AS $$
  SELECT CASE json_typeof(j) WHEN 'array' THEN json_array_length(j) END
$$;
-- a page as PostgREST reads it: {status, headers, body} (or {"unreadable": ...})
CREATE FUNCTION pg_temp.page(after text, max integer DEFAULT NULL) RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
  RETURN pg_temp.api(format('SELECT openwop_api."flowdropInterrupts"(%L, (%s)::integer)', after, coalesce(max::text, 'NULL')));
EXCEPTION WHEN OTHERS THEN
  RETURN jsonb_build_object('unreadable', SQLSTATE || ' ' || SQLERRM);
END $$;
-- the ids a client collects following the pages of max entries from the
-- first (or from after) to the empty page, in tenant (this login's inbox)
CREATE FUNCTION pg_temp.walk(tenant text, max integer, after text DEFAULT NULL) RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE seen text[] := '{}'; page jsonb; n int := 0; saved text := current_setting('openwop.tenant');
BEGIN
  PERFORM set_config('openwop.tenant', tenant, true);
  LOOP
    page := pg_temp.fd(after, max)::jsonb;
    IF jsonb_typeof(page) <> 'array' OR jsonb_array_length(page) > max THEN
      seen := seen || format('page %s is not a page of at most %s entries: %s', n + 1, max, left(page::text, 200));
      EXIT;
    END IF;
    EXIT WHEN jsonb_array_length(page) = 0;
    seen := seen || ARRAY(SELECT e ->> 'id' FROM jsonb_array_elements(page) WITH ORDINALITY x (e, k) ORDER BY k);
    after := page -> -1 ->> 'id';
    n := n + 1;
    IF n > 10000 THEN RAISE EXCEPTION 'the pages never end'; END IF;
  END LOOP;
  PERFORM set_config('openwop.tenant', saved, true);
  RETURN seen;
END $$;
-- the UUIDs of tenant's inbox for this login, in the inbox's order
CREATE FUNCTION pg_temp.inbox(tenant text) RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE r text[]; saved text := current_setting('openwop.tenant');
BEGIN
  PERFORM set_config('openwop.tenant', tenant, true);
  SELECT coalesce(array_agg(pg_temp.uuid_of(interrupt_id) ORDER BY requested_at, interrupt_id), '{}') INTO r
    FROM openwop.pending_interrupts;
  PERFORM set_config('openwop.tenant', saved, true);
  RETURN r;
END $$;

CREATE ROLE tap_h51_dba LOGIN;
CREATE ROLE tap_h51_reader LOGIN;        -- EXECUTE on the operation, nothing else
CREATE ROLE tap_h51_engine LOGIN;        -- may read event logs, holds no scope
CREATE ROLE tap_h51_callback LOGIN;      -- the host's OAuth callback
CREATE ROLE tap_h51_authenticator LOGIN NOINHERIT;
CREATE ROLE tap_h51_web;                 -- the role the approvers' JWTs name
GRANT openwop_policy_admin TO tap_h51_dba;
GRANT USAGE ON SCHEMA openwop_api TO tap_h51_reader, tap_h51_engine;
GRANT EXECUTE ON FUNCTION openwop_api."flowdropInterrupts"(text, integer) TO tap_h51_reader, tap_h51_engine;
GRANT USAGE ON SCHEMA openwop TO tap_h51_engine, tap_h51_callback;
GRANT EXECUTE ON FUNCTION openwop.events(text, bigint, integer), openwop.flowdrop_interrupts(text[]) TO tap_h51_engine;
GRANT SELECT ON openwop_api.pending_interrupts TO tap_h51_engine;
GRANT EXECUTE ON FUNCTION openwop.inbox_waiting(text), openwop.inbox_tenant(), openwop.inbox_voter(),
                          openwop.may_decide(text, text, text, jsonb, jsonb) TO tap_h51_engine;
GRANT EXECUTE ON FUNCTION openwop.confirm_credential(text, text, text) TO tap_h51_callback;
-- the web role with the grants docs/postgrest.md gives web_approver, and EXECUTE on every operation
GRANT tap_h51_web, openwop_tap_authenticator TO tap_h51_authenticator;
GRANT USAGE ON SCHEMA openwop_api TO tap_h51_web;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop_api TO tap_h51_web;
GRANT SELECT ON openwop_api.pending_interrupts TO tap_h51_web;
GRANT EXECUTE ON FUNCTION openwop.inbox_waiting(text), openwop.inbox_tenant(), openwop.inbox_voter(),
                          openwop.may_decide(text, text, text, jsonb, jsonb) TO tap_h51_web;
DO $$ BEGIN PERFORM openwop.add_signing_key('tap-h51-key'); END $$;

/* ------------------------------------------------------------------
 * Bodies jsonb cannot hold: the envelope's 400, nothing recorded
 * ------------------------------------------------------------------ */

CREATE TEMP TABLE body_gates AS SELECT
  pg_temp.gate('acme/h51-body-000000000001') AS by_run,
  pg_temp.gate('acme/h51-body-000000000002') AS by_token,
  pg_temp.gate('acme/h51-body-000000000003', '{"requiredApprovals": 2}') AS withdraw,
  pg_temp.gate('acme/h51-body-000000000004') AS bulk;
CREATE TEMP TABLE body_token AS SELECT openwop.mint_interrupt_token(by_token) AS t FROM body_gates;
SELECT is(openwop.resolve_interrupt('acme/h51-body-000000000003', 'gate', '{"action": "accept"}') ->> 'status', 'pending',
          'control: the withdraw gate holds one counted vote of this login');

-- each operation's body, with BAD where the string goes: a string that is
-- fine everywhere else (a comment, a node id)
CREATE TEMP TABLE body_ops (op text, template text);
INSERT INTO body_ops VALUES
  ('resolveInterruptByRun', '{"runId": "acme/h51-body-000000000001", "nodeId": "gate", "resumeValue": {"action": "accept", "feedback": "BAD"}}'),
  ('resolveInterruptByToken', format('{"token": "%s", "resumeValue": {"action": "accept", "feedback": "BAD"}}', (SELECT t FROM body_token))),
  ('withdrawVote', '{"runId": "acme/h51-body-000000000003", "nodeId": "gateBAD"}'),
  ('resolveInterrupts', format('{"interruptIds": ["%s"], "resumeValue": {"action": "accept", "feedback": "BAD"}}', (SELECT bulk FROM body_gates)));
-- the strings: escapes that are JSON, that json keeps as written and jsonb refuses
CREATE TEMP TABLE bad_strings (rule text, label text, s text);
INSERT INTO bad_strings VALUES
  ('body_with_nul_is_validation_error', 'a \u0000 in a string', 'x\u0000y'),
  ('body_with_nul_is_validation_error', 'a lone \u0000', '\u0000'),
  ('body_with_lone_surrogate_is_validation_error', 'a lone high surrogate \ud800', '\ud800'),
  ('body_with_lone_surrogate_is_validation_error', 'a lone low surrogate \udc00', 'x\udc00'),
  ('body_with_lone_surrogate_is_validation_error', 'a high surrogate before no low one \ud83dA', '\ud83dA');
CREATE TEMP TABLE before_bodies AS SELECT pg_temp.all_events() AS n;
CREATE TEMP TABLE body_answers AS
  SELECT b.rule, b.label, o.op, replace(o.template, 'BAD', b.s) AS body,
         pg_temp.api(format('SELECT openwop_api.%I(%L)', o.op, replace(o.template, 'BAD', b.s)),
                     '{"idempotency-key": "h51-body-key-00000000000000001"}') AS r
    FROM bad_strings b, body_ops o;
SELECT is(pg_temp.bare(r), '{"status": 400, "body": {"error": "validation_error", "details": {"field": "body"}}}',
          format('%s: %s (%s) is the envelope''s 400 validation_error, details.field body', rule, op, label))
  FROM body_answers ORDER BY rule, op, label;
SELECT is((SELECT count(*)::int FROM body_answers
            WHERE r -> 'headers' = '[]' AND r #>> '{body,message}' LIKE 'the request body is JSON that PostgreSQL cannot store: %'
              AND (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(r -> 'body') k) = '{details,error,message}'),
          (SELECT count(*)::int FROM body_answers),
          '... each with a message saying why, the envelope''s three members only and no header');
SELECT is(pg_temp.all_events() - n, 0::bigint, 'bad_body_records_nothing: no event was appended by any of them') FROM before_bodies;
SELECT is((SELECT array_agg(status ORDER BY run_id) FROM openwop.interrupts WHERE run_id LIKE 'acme/h51-body-%'),
          '{pending,pending,pending,pending}', '... every gate is still pending');
SELECT is((SELECT accepts FROM openwop.pending_interrupts WHERE run_id = 'acme/h51-body-000000000003'), 1,
          '... and the vote withdrawVote was sent is still counted');
SELECT is((SELECT count(*)::int FROM openwop.idempotency_keys WHERE key = 'h51-body-key-00000000000000001'), 0,
          'bad_body_records_no_key: the Idempotency-Key of a refused body is not recorded');
-- as a PostgREST client would send it: the same bodies through a request session
SELECT is(pg_temp.bare(pg_temp.as_request('{"sub": "bob", "tenant": "acme", "scope": "approvals:respond"}',
            format('SELECT pg_temp.api(%L)', format('SELECT openwop_api."resolveInterruptByRun"(%L)', body)))),
          '{"status": 400, "body": {"error": "validation_error", "details": {"field": "body"}}}',
          'body_with_nul_is_validation_error: for a JWT subject too')
  FROM body_answers WHERE op = 'resolveInterruptByRun' AND label = 'a \u0000 in a string';
-- the same strings spelt as their characters would be refused by the operation for what they say, not by the body
SELECT is(pg_temp.api($$SELECT openwop_api."resolveInterruptByRun"('{"runId": "acme/h51-body-000000000001", "nodeId": "gate", "resumeValue": {"action": "accept", "\u0000": 1}}')$$)
            #> '{body,details}', '{"field": "body"}', 'body_with_nul_is_validation_error: in a member name too');

-- a body of escapes jsonb can hold is read as their characters
SELECT is(pg_temp.api(format('SELECT openwop_api."resolveInterruptByRun"(%L)',
            '{"runId": "acme/h51-body-000000000001", "nodeId": "g\u0061te", "resumeValue": {"action": "accept", "feedback": "caf\u00e9 \ud83d\ude00 \u2028"}}'),
            '{"idempotency-key": "h51-body-key-00000000000000001"}') #>> '{body,status}',
          'resolved', 'escaped_non_ascii_resolves: resolveInterruptByRun with \u00e9, a surrogate pair and \u2028 (and a node id spelt g\u0061te) resolves');
SELECT is((SELECT payload #>> '{resumeValue,feedback}' FROM openwop.events WHERE run_id = 'acme/h51-body-000000000001' AND type = 'interrupt.resolved'),
          E'caf\u00e9 \U0001F600 \u2028', '... and records the characters the escapes stand for');
SELECT is(pg_temp.api(format('SELECT openwop_api."resolveInterruptByRun"(%L)',
            '{"runId": "acme/h51-body-000000000001", "nodeId": "gate", "resumeValue": {"action": "accept", "feedback": "café 😀 \u2028"}}'),
            '{"idempotency-key": "h51-body-key-00000000000000001"}') -> 'headers',
          '[{"OpenWOP-Idempotent-Replay": "true"}]',
          '... the same body written with the characters themselves is the same request: a replay under its key');
SELECT is(pg_temp.api(format('SELECT openwop_api."resolveInterruptByToken"(%L)',
            format('{"token": "%s", "resumeValue": {"action": "accept", "feedback": "\u00e9\ud83d\ude00"}}', t))) #>> '{body,status}',
          'resolved', 'escaped_non_ascii_resolves: resolveInterruptByToken') FROM body_token;
SELECT is(pg_temp.api(format('SELECT openwop_api."withdrawVote"(%L)', '{"runId": "acme/h51-body-00000000000\u0033", "nodeId": "gate"}'))
            #>> '{body,action}', 'withdraw', 'escaped_non_ascii_resolves: withdrawVote of a run id with an escaped digit');
SELECT is(pg_temp.api(format('SELECT openwop_api."resolveInterrupts"(%L)',
            format('{"interruptIds": ["%s"], "resumeValue": {"action": "accept", "feedback": "\u00e9\ud83d\ude00"}}', bulk))) #>> '{body,items,0,status}',
          '200', 'escaped_non_ascii_resolves: resolveInterrupts') FROM body_gates;
SELECT is((SELECT count(*)::int FROM openwop.events WHERE run_id LIKE 'acme/h51-body-%' AND type = 'interrupt.resolved'
             AND payload #>> '{resumeValue,feedback}' IN (E'caf\u00e9 \U0001F600 \u2028', E'\u00e9\U0001F600')),
          3, '... each recorded with its characters');
-- json keeps what jsonb would normalise; the operation reads it as jsonb would
SELECT is(pg_temp.api($$SELECT openwop_api."resolveInterrupts"('{"interruptIds": ["acme/h51-no-such-gate-0000001"], "resumeValue": {"action": "accept"}, "interruptIds": []}')$$)
            -> 'body', '{"items": []}', 'a duplicate member: the last one counts, as jsonb keeps it');

/* ------------------------------------------------------------------
 * The interrupt's UUID
 * ------------------------------------------------------------------ */

CREATE TEMP TABLE uuid_gates AS
  SELECT n, pg_temp.gate(format('acme/h51-uuid-%s', lpad(n::text, 12, '0')), '{}', '{"timeoutMs": 3600000}') AS iid
    FROM generate_series(1, 40) n;
SELECT is((SELECT count(*)::int FROM uuid_gates
            WHERE openwop.flowdrop_interrupt(iid) ->> 'id' ~ '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$'),
          40, 'interrupt_id_is_uuid_v4_bytes: the entry id of each of 40 fresh interrupts is a version-4 UUID (version 4, variant 10), in lower case');
SELECT is((SELECT count(*)::int FROM uuid_gates WHERE openwop.flowdrop_interrupt(iid) ->> 'id' = pg_temp.uuid_of(iid)
             AND split_part(iid, '/', 2) ~ '^[A-Za-z0-9_-]{22}$'),
          40, '... and it is the 16 bytes the id''s 22-character opaque segment holds, read as base64url');
SELECT is((SELECT count(DISTINCT openwop.flowdrop_interrupt(iid) ->> 'id')::int FROM uuid_gates), 40, '... each its own');
CREATE TEMP TABLE u AS SELECT iid, pg_temp.uuid_of(iid) AS uuid FROM uuid_gates WHERE n = 1;

SELECT is(ARRAY[openwop.flowdrop_interrupt(iid) ->> 'id', openwop.flowdrop_interrupt(iid) ->> 'id',
                openwop.flowdrop_interrupts(ARRAY[iid, iid]) -> 0 ->> 'id', openwop.flowdrop_interrupts(ARRAY[iid, iid]) -> 1 ->> 'id',
                openwop.flowdrop_interrupt(uuid) ->> 'id'],
          array_fill(uuid, ARRAY[5]), 'uuid_stable_across_reads: read again, in the list form and by itself, the id is the same UUID')
  FROM u;

-- wherever an interrupt id is taken, its UUID names it
SELECT is(openwop.flowdrop_interrupt(uuid)::text, openwop.flowdrop_interrupt(iid)::text,
          'uuid_accepted_wherever_an_interrupt_id_is: flowdrop_interrupt') FROM u;
SELECT is(openwop.flowdrop_interrupts(ARRAY[uuid, iid, uuid])::text, openwop.flowdrop_interrupts(ARRAY[iid, iid, iid])::text,
          'uuid_accepted_wherever_an_interrupt_id_is: flowdrop_interrupts, mixed with the tenant-bound form') FROM u;
SELECT is(openwop.due_at(uuid), openwop.due_at(iid), 'uuid_accepted_wherever_an_interrupt_id_is: due_at') FROM u;
SELECT ok(openwop.due_at(uuid) IS NOT NULL, '... (a gate with a deadline: not null)') FROM u;
CREATE TEMP TABLE u_token AS SELECT openwop.mint_interrupt_token(uuid, 'inspect') AS inspect, openwop.mint_interrupt_token(uuid) AS resolve FROM u;
SELECT is(openwop.verify_interrupt_token(inspect) ->> 'interruptId', iid,
          'uuid_accepted_wherever_an_interrupt_id_is: mint_interrupt_token, the token naming the interrupt by its id') FROM u, u_token;
SELECT is(openwop.inspect_interrupt(inspect), openwop.inspect_interrupt(openwop.mint_interrupt_token(iid, 'inspect')),
          '... which inspect_interrupt reads as the interrupt''s') FROM u, u_token;
SELECT is(openwop.verify_interrupt_token(resolve) ->> 'interruptId', iid, '... and a resolve token too') FROM u, u_token;
SELECT is(pg_temp.api(format('SELECT openwop_api."flowdropInterrupts"(%L, 3)', uuid)) -> 'body',
          pg_temp.api(format('SELECT openwop_api."flowdropInterrupts"(%L, 3)', iid)) -> 'body',
          'uuid_accepted_wherever_an_interrupt_id_is: flowdropInterrupts'' after') FROM u;
SELECT is((SELECT jsonb_agg(jsonb_build_array(r.interrupt_id, r.status, r.result ->> 'interruptId', r.result ->> 'status'))
             FROM u, openwop.resolve_interrupts(ARRAY[u.uuid], '{"action": "accept"}') r),
          (SELECT jsonb_build_array(jsonb_build_array(uuid, 200, iid, 'resolved')) FROM u),
          'uuid_accepted_wherever_an_interrupt_id_is: resolve_interrupts, the item named as given and answered for the interrupt');
SELECT is((SELECT jsonb_build_array(r.status, r.result ->> 'interruptId')
             FROM uuid_gates g, openwop.resolve_interrupts(ARRAY[replace(g.iid, '/', '~2F')], '{"action": "accept"}') r WHERE g.n = 4),
          (SELECT jsonb_build_array(200, iid) FROM uuid_gates WHERE n = 4),
          'control: resolve_interrupts takes an id''s ~2F projection too');
CREATE TEMP TABLE u2 AS SELECT iid, pg_temp.uuid_of(iid) AS uuid FROM uuid_gates WHERE n = 2;
SELECT is((pg_temp.api(format('SELECT openwop_api."resolveInterrupts"(%L)',
            json_build_object('interruptIds', json_build_array(uuid), 'resumeValue', json_build_object('action', 'accept')))) #> '{body,items,0}')
            - 'result',
          jsonb_build_object('interruptId', uuid, 'status', 200), 'uuid_accepted_wherever_an_interrupt_id_is: openwop_api."resolveInterrupts"')
  FROM u2;
SELECT is((SELECT status FROM openwop.interrupts WHERE interrupt_id = u2.iid), 'resolved', '... which resolved it') FROM u2;
SELECT is(openwop.flowdrop_interrupt(iid) ->> 'id', uuid, 'uuid_stable_across_reads: once resolved, the entry keeps its UUID') FROM u;
SELECT is(openwop.flowdrop_interrupt(uuid) ->> 'status', 'resolved', '... and is read by it') FROM u;

-- upper case is the same UUID
CREATE TEMP TABLE u3 AS SELECT iid, pg_temp.uuid_of(iid) AS uuid FROM uuid_gates WHERE n = 3;
SELECT is(openwop.flowdrop_interrupt(upper(uuid))::text, openwop.flowdrop_interrupt(iid)::text,
          'uuid_upper_case_accepted: flowdrop_interrupt of the UUID in upper case') FROM u3;
SELECT is(openwop.flowdrop_interrupt(upper(uuid)) ->> 'id', uuid, '... which publishes it in lower case') FROM u3;
SELECT is(openwop.flowdrop_interrupts(ARRAY[upper(uuid), initcap(uuid)])::text, openwop.flowdrop_interrupts(ARRAY[iid, iid])::text,
          'uuid_upper_case_accepted: flowdrop_interrupts, upper and mixed case') FROM u3;
SELECT is(openwop.due_at(upper(uuid)), openwop.due_at(iid), 'uuid_upper_case_accepted: due_at') FROM u3;
SELECT is(openwop.verify_interrupt_token(openwop.mint_interrupt_token(upper(uuid), 'inspect')) ->> 'interruptId', iid,
          'uuid_upper_case_accepted: mint_interrupt_token') FROM u3;
SELECT is(pg_temp.api(format('SELECT openwop_api."flowdropInterrupts"(%L, 3)', upper(uuid))) -> 'body',
          pg_temp.api(format('SELECT openwop_api."flowdropInterrupts"(%L, 3)', iid)) -> 'body',
          'uuid_upper_case_accepted: flowdropInterrupts'' after') FROM u3;
SELECT is((SELECT r.result ->> 'interruptId' FROM openwop.resolve_interrupts(ARRAY[upper(uuid)], '{"action": "accept"}') r), iid,
          'uuid_upper_case_accepted: resolve_interrupts') FROM u3;

-- another tenant's UUID names nothing here: not found, never forbidden, never its entry
CREATE TEMP TABLE g AS SELECT iid, pg_temp.uuid_of(iid) AS uuid FROM (SELECT pg_temp.gate('globex/h51-uuid-00000000001', '{}', '{"timeoutMs": 3600000}') AS iid) x;
SELECT is(pg_temp.refusal(format('SELECT openwop.flowdrop_interrupt(%L)', uuid)) - 'details',
          '{"sqlstate": "PT404", "code": "not_found"}', 'uuid_of_another_tenant_is_not_found: flowdrop_interrupt is 404 not_found, not 403') FROM g;
SELECT is(pg_temp.refusal(format('SELECT openwop.flowdrop_interrupt(%L)', upper(uuid))) ->> 'code', 'not_found', '... in upper case too') FROM g;
SELECT is(openwop.flowdrop_interrupts(ARRAY[uuid, upper(uuid)])::text, '[]',
          'uuid_of_another_tenant_is_not_found: flowdrop_interrupts leaves it out') FROM g;
SELECT is(pg_temp.refusal(format('SELECT openwop.due_at(%L)', uuid)) - 'details', '{"sqlstate": "PT404", "code": "not_found"}',
          'uuid_of_another_tenant_is_not_found: due_at') FROM g;
SELECT is(pg_temp.refusal(format('SELECT openwop.mint_interrupt_token(%L, %L)', uuid, 'inspect')) - 'details', '{"sqlstate": "PT404", "code": "not_found"}',
          'uuid_of_another_tenant_is_not_found: mint_interrupt_token mints nothing') FROM g;
SELECT is((SELECT jsonb_build_array(r.status, r.result ->> 'error') FROM openwop.resolve_interrupts(ARRAY[uuid], '{"action": "accept"}') r),
          '[404, "not_found"]', 'uuid_of_another_tenant_is_not_found: resolve_interrupts, item 404') FROM g;
SELECT is(pg_temp.api(format('SELECT openwop_api."resolveInterrupts"(%L)',
            json_build_object('interruptIds', json_build_array(uuid), 'resumeValue', json_build_object('action', 'accept')))) #> '{body,items,0}'
            #- '{result,message}' #- '{result,details}',
          jsonb_build_object('interruptId', uuid, 'status', 404, 'result', jsonb_build_object('error', 'not_found')),
          'uuid_of_another_tenant_is_not_found: openwop_api."resolveInterrupts", item 404') FROM g;
SELECT is(pg_temp.bare(pg_temp.page(uuid, 5)) - 'body' || jsonb_build_object('error', pg_temp.page(uuid, 5) #>> '{body,error}'),
          '{"status": 404, "error": "not_found"}', 'uuid_of_another_tenant_is_not_found: flowdropInterrupts'' after is 404') FROM g;
SELECT is((SELECT status FROM openwop.interrupts WHERE interrupt_id = g.iid), 'pending', '... and globex''s interrupt is untouched') FROM g;
SELECT is(pg_temp.refusal(format('SELECT openwop.flowdrop_interrupt(%L)', iid)) ->> 'code', 'id_tenant_mismatch',
          'control: its tenant-bound id is still 403 id_tenant_mismatch, decided from the string') FROM g;
SET LOCAL openwop.tenant = 'globex';
SELECT is(openwop.flowdrop_interrupt(uuid) ->> 'id', uuid, 'control: in globex the UUID reads globex''s entry') FROM g;
SET LOCAL openwop.tenant = 'acme';
SELECT is(pg_temp.as_request('{"sub": "bob", "tenant": "acme", "scope": "approvals:respond"}',
            format('SELECT pg_temp.refusal(%L)', format('SELECT openwop.flowdrop_interrupt(%L)', uuid))) ->> 'code',
          'not_found', 'uuid_of_another_tenant_is_not_found: for a JWT subject of acme too') FROM g;

-- what looks like a UUID but is not one (PostgreSQL's uuid type would take some of them) is refused
CREATE TEMP TABLE not_uuids AS SELECT s FROM u, unnest(ARRAY[
  '00000000-0000-4000-8000-00000000000g', '{' || uuid || '}', replace(uuid, '-', ''), 'urn:uuid:' || uuid,
  uuid || ' ', ' ' || uuid, '0000000-00000-4000-8000-000000000000', replace(uuid, '-', '_'),
  replace(uuid, '-', E'\u2011'), left(uuid, 35), uuid || '0', overlay(uuid placing E'\u0430' from 1 for 1)]) s;
SELECT is(pg_temp.refusal(format('SELECT openwop.flowdrop_interrupt(%L)', s)) #>> '{details,field}' || ' ' || (pg_temp.refusal(format('SELECT openwop.flowdrop_interrupt(%L)', s)) ->> 'code'),
          'interruptId validation_error', format('malformed_uuid_refused: flowdrop_interrupt(%s)', s)) FROM not_uuids;
SELECT is(pg_temp.refusal(format('SELECT openwop.flowdrop_interrupts(ARRAY[%L])', s)) #>> '{details,field}' || ' ' || (pg_temp.refusal(format('SELECT openwop.flowdrop_interrupts(ARRAY[%L])', s)) ->> 'code'),
          'interruptIds[0] validation_error', format('malformed_uuid_refused: flowdrop_interrupts(ARRAY[%s]), not left out', s)) FROM not_uuids;
SELECT is(pg_temp.refusal(format('SELECT openwop.due_at(%L)', s)) ->> 'code', 'validation_error', format('malformed_uuid_refused: due_at(%s)', s)) FROM not_uuids;
SELECT is(pg_temp.refusal(format('SELECT openwop.mint_interrupt_token(%L, %L)', s, 'inspect')) ->> 'code', 'validation_error',
          format('malformed_uuid_refused: mint_interrupt_token(%s)', s)) FROM not_uuids;
SELECT is((SELECT r.status FROM openwop.resolve_interrupts(ARRAY[s], '{"action": "accept"}') r), 400,
          format('malformed_uuid_refused: resolve_interrupts item %s is 400', s)) FROM not_uuids;
SELECT is(pg_temp.bare(pg_temp.page(s, 5)), '{"status": 400, "body": {"error": "validation_error", "details": {"field": "after"}}}'::jsonb
            || jsonb_build_object('body', jsonb_build_object('error', 'validation_error', 'details', jsonb_build_object('field', 'after', 'after', s))),
          format('malformed_uuid_refused: flowdropInterrupts(after => %s) is 400, details.field after', s)) FROM not_uuids;

/* ------------------------------------------------------------------
 * flowdropInterrupts: the inbox as FlowDrop entries, a page at a time
 * ------------------------------------------------------------------ */

-- 51 gates raised in this one transaction: one requested_at for all
DO $$ BEGIN
  FOR n IN 1 .. 51 LOOP PERFORM pg_temp.gate(format('pager/h51-page-%s', lpad(n::text, 12, '0'))); END LOOP;
END $$;
SET LOCAL openwop.tenant = 'pager';
SELECT is((SELECT count(*)::int FROM openwop.pending_interrupts), 51, 'control: the 51 gates are in this login''s inbox');
SELECT is((SELECT count(DISTINCT requested_at)::int FROM openwop.pending_interrupts), 1, 'control: raised at one instant');
SELECT is((SELECT array_agg(m ORDER BY m) FROM generate_series(1, 60) m WHERE pg_temp.len(pg_temp.fd(NULL, m)) IS DISTINCT FROM least(m, 51)),
          NULL, 'flowdrop_page_outlives_its_call: a page of each size from 1 to 60 is JSON, with as many entries as asked (or all 51); the sizes that are not');
SELECT is(json_typeof(pg_temp.fdq('SELECT openwop_api."flowdropInterrupts"()')), 'array', 'flowdrop_page_is_an_array: a page is a JSON array');
SELECT is(pg_temp.len(pg_temp.fdq('SELECT openwop_api."flowdropInterrupts"()')), 50, 'flowdrop_page_max_defaults_to_50: without max, 50 entries');
SELECT is(pg_temp.len(pg_temp.fd(NULL, NULL)), 50, '... and with max null');
SELECT is((SELECT array_agg(DISTINCT array_to_string(pg_temp.keys(e), ',')) FROM pg_temp.elems(pg_temp.fd(NULL, 1000)) e),
          ARRAY['id,type,status,message,nodeId,workflowId,pipelineId,sessionId,schema,options,context,defaultValue,responseData,createdAt,expiresAt,scheduledAt,resolvedAt,resolvedBy,direction,jobId,targetPipelineId,initiatorUid,reason,linkedInterruptId'],
          'flowdrop_page_entries_are_int22: every entry has the 24 keys of INT-22, in order');
SELECT is(pg_temp.fd(NULL, 1000)::text,
          openwop.flowdrop_interrupts(ARRAY(SELECT interrupt_id FROM openwop.pending_interrupts ORDER BY requested_at, interrupt_id))::text,
          'flowdrop_page_is_flowdrop_interrupts: the page is, as text, openwop.flowdrop_interrupts of the inbox''s ids in its order');
SELECT is(pg_temp.fd(NULL, 7)::text,
          openwop.flowdrop_interrupts(ARRAY(SELECT interrupt_id FROM openwop.pending_interrupts ORDER BY requested_at, interrupt_id LIMIT 7))::text,
          '... and a page of 7 is its first 7');
SELECT is(pg_temp.api('SELECT openwop_api."flowdropInterrupts"(NULL, 3)') - 'body', '{"status": 200, "headers": []}',
          'flowdrop_page_answers_200: no status and no header set');
SELECT is(pg_temp.walk('pager', 2), pg_temp.inbox('pager'),
          'flowdrop_page_tie_safe: pages of 2 over 51 gates raised at one instant see each once, in the inbox''s order');
SELECT is(pg_temp.walk('pager', 1), pg_temp.inbox('pager'), '... pages of 1 too');
SELECT is(pg_temp.walk('pager', 50), pg_temp.inbox('pager'), '... and of 50 (two pages)');
SELECT is(pg_temp.walk('pager', 1000), pg_temp.inbox('pager'), '... and of 1000 (one page)');
SELECT is(cardinality(pg_temp.walk('pager', 2)), 51, '... all 51 of them');
SELECT is(pg_temp.fd((pg_temp.inbox('pager'))[51], 5)::text, '[]',
          'flowdrop_page_end_is_empty: after the last entry, []');
SELECT is(pg_temp.page((pg_temp.inbox('pager'))[51], 5) - 'body', '{"status": 200, "headers": []}', '... answered 200');
-- after, in each of its forms
CREATE TEMP TABLE tenth AS SELECT (pg_temp.inbox('pager'))[10] AS uuid,
  (SELECT interrupt_id FROM openwop.pending_interrupts ORDER BY requested_at, interrupt_id OFFSET 9 LIMIT 1) AS iid;
SELECT is(uuid, pg_temp.uuid_of(iid), 'control: the tenth inbox row and its UUID') FROM tenth;
SELECT is(pg_temp.fd(iid, 5)::text, pg_temp.fd(uuid, 5)::text,
          'flowdrop_page_after_either_id: after the tenant-bound id or the UUID, the same page') FROM tenth;
SELECT is(pg_temp.fd(replace(iid, '/', '~2F'), 5)::text, pg_temp.fd(uuid, 5)::text,
          '... or its ~2F projection (one URL path segment)') FROM tenth;
SELECT is(ARRAY(SELECT e ->> 'id' FROM pg_temp.elems(pg_temp.fd(uuid, 5)) e),
          (pg_temp.inbox('pager'))[11:15], '... the 11th to the 15th') FROM tenth;
-- the interrupt after names may have left the inbox since
SELECT is(openwop.resolve_interrupt(run_id, 'gate', '{"action": "accept"}') ->> 'status', 'resolved', 'the tenth gate is decided')
  FROM tenth, openwop.interrupts i WHERE i.interrupt_id = tenth.iid;
CREATE TEMP TABLE before_resolve AS SELECT pg_temp.inbox('pager') AS a;
SELECT is(ARRAY(SELECT e ->> 'id' FROM pg_temp.elems(pg_temp.fd(uuid, 5)) e), a[10:14],
          'flowdrop_page_after_resolved: after an interrupt decided since, the page goes on from where it was') FROM tenth, before_resolve;
SELECT is(openwop.resolve_interrupt((SELECT run_id FROM openwop.interrupts WHERE pg_temp.uuid_of(interrupt_id) = a[10]), 'gate',
                                    '{"action": "reject"}') ->> 'status', 'resolved', 'the next one is decided too')
  FROM before_resolve;
SELECT is(ARRAY(SELECT e ->> 'id' FROM pg_temp.elems(pg_temp.fd(uuid, 5)) e), a[11:15],
          '... and the page after the first leaves it out, skipping nothing') FROM tenth, before_resolve;
SELECT is(pg_temp.walk('pager', 3), pg_temp.inbox('pager'), '... the walk sees the 49 left, each once');
SELECT is(cardinality(pg_temp.walk('pager', 3)), 49, '... 49');
SET LOCAL openwop.tenant = 'acme';

-- a fork's gates carry their source's instant (fork_run copies the timestamps)
DO $$ BEGIN
  PERFORM pg_temp.gate('forked/h51-fork-src-0000001');
  PERFORM set_config('openwop.tenant', 'forked', true);
  PERFORM openwop.start_node('forked/h51-fork-src-0000001', 'side');
  PERFORM set_config('openwop.tenant', 'acme', true);
END $$;
-- the superuser moves the source's gate an hour back, as if raised then
UPDATE openwop.interrupts SET created_at = created_at - interval '1 hour' WHERE run_id = 'forked/h51-fork-src-0000001';
SET LOCAL openwop.tenant = 'forked';
SELECT is(openwop.fork_run('forked/h51-fork-src-0000001', '{"mode": "branch", "fromSeq": 4}') ->> 'status', 'waiting-approval',
          'a branch of the run, its gate pending');
SELECT is(openwop.fork_run('forked/h51-fork-src-0000001', '{"mode": "replay", "fromSeq": 4}') ->> 'status', 'waiting-approval',
          'a replay of it, its gate pending (the source has not decided it)');
SELECT is(openwop.fork_run('forked/h51-fork-src-0000001', '{"mode": "replay", "fromSeq": 4}') ->> 'status', 'waiting-approval',
          'and another replay');
SET LOCAL openwop.tenant = 'acme';
DO $$ BEGIN
  FOR n IN 1 .. 3 LOOP PERFORM pg_temp.gate(format('forked/h51-fork-new-%s', lpad(n::text, 8, '0'))); END LOOP;
END $$;
SET LOCAL openwop.tenant = 'forked';
SELECT is((SELECT count(DISTINCT created_at)::int || ' ' || count(*) FROM openwop.interrupts
            WHERE created_at < now() AND status = 'pending'), '1 4',
          'control: the source''s gate and its three forks'' share the instant an hour back');
SELECT is(pg_temp.walk('forked', 2), pg_temp.inbox('forked'),
          'flowdrop_page_over_forks: pages of 2 over the forks'' gates (their source''s instant) and three new ones see each once, in order');
SELECT is(pg_temp.walk('forked', 1), pg_temp.inbox('forked'), '... pages of 1 too');
SELECT is(cardinality(pg_temp.walk('forked', 2)), 7, '... all 7');
SELECT is((SELECT count(*)::int FROM pg_temp.elems(pg_temp.fd(NULL, 4)) e
            WHERE (e ->> 'createdAt')::timestamptz < now()), 4, '... the four of the hour back first');
SELECT is((SELECT count(DISTINCT e ->> 'pipelineId')::int FROM pg_temp.elems(pg_temp.fd(NULL, 4)) e), 4,
          '... each of its own run');
SET LOCAL openwop.tenant = 'acme';

-- refusals, as envelopes with response.status
SET LOCAL openwop.tenant = 'pager';
SELECT is(pg_temp.bare(pg_temp.page(NULL, m)),
          '{"status": 400, "body": {"error": "validation_error", "details": {"field": "max", "limit": 1000}}}',
          format('flowdrop_page_max_bounded: max %s is 400 validation_error, details.field max', m))
  FROM unnest(ARRAY[0, 1001, -1, 2147483647, -2147483648]) m;
SELECT is(pg_temp.page(NULL, m) ->> 'status', '200', format('... max %s is not', m)) FROM unnest(ARRAY[1, 1000]) m;
SELECT is(pg_temp.bare(pg_temp.page('pager/h51-no-such-gate-000001', 5)),
          '{"status": 404, "body": {"error": "not_found", "details": {"interruptId": "pager/h51-no-such-gate-000001"}}}',
          'flowdrop_page_after_unknown: after naming no interrupt of the tenant is 404 not_found');
SELECT is(pg_temp.bare(pg_temp.page('00000000-0000-4000-8000-000000000000', 5)) #>> '{body,error}', 'not_found',
          '... a UUID naming none too');
SELECT is(pg_temp.bare(pg_temp.page(iid, 5)) - 'body' || jsonb_build_object('error', pg_temp.page(iid, 5) #>> '{body,error}'),
          '{"status": 403, "error": "id_tenant_mismatch"}', '... another tenant''s id is 403 id_tenant_mismatch, as every id of it') FROM u;
SELECT is(pg_temp.bare(pg_temp.page('', 5)) #>> '{body,details,field}', 'after', 'after '''' is 400, details.field after');
SELECT is((pg_temp.bare(pg_temp.page(repeat('x', 2 * 1024 * 1024), 5)) #> '{body,details}') - 'size',
          '{"field": "after", "limit": 1048576, "setting": "openwop.max_payload_size"}',
          'an after larger than openwop.max_payload_size is refused before it is read');
SET LOCAL openwop.tenant = 'acme';
-- a request session as PostgREST makes it: the authenticator's login, SET ROLE to the JWT's role
CREATE FUNCTION pg_temp.as_web(claims jsonb, sql text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE r jsonb;
BEGIN
  PERFORM set_config('openwop.jwt_session_role', 'openwop_tap_authenticator', true);
  PERFORM set_config('request.jwt.claims', (claims || '{"role": "tap_h51_web"}')::text, true);
  r := pg_temp.as_login('tap_h51_authenticator', '*', sql, 'tap_h51_web');
  PERFORM set_config('request.jwt.claims', '', true);
  PERFORM set_config('openwop.jwt_session_role', '', true);
  RETURN r;
END $$;
SELECT is(pg_temp.bare(pg_temp.as_web('{"sub": "mallory", "tenant": "pager", "scope": "openid"}', 'SELECT pg_temp.page(NULL, 5)')),
          '{"status": 403, "body": {"error": "forbidden", "details": {"requiredScope": "approvals:respond"}}}',
          'flowdrop_page_needs_scope: a JWT subject without approvals:respond gets the 403 forbidden envelope');
SELECT is(pg_temp.bare(pg_temp.as_web('{"tenant": "pager"}', 'SELECT pg_temp.page(NULL, 5)')),
          '{"status": 403, "body": {"error": "forbidden", "details": {"requiredScope": "approvals:respond"}}}',
          '... and so does an anonymous request');
SELECT is(pg_temp.as_web('{"sub": "mallory", "tenant": "pager", "scope": "openid"}',
            $$ SELECT pg_temp.page('pager/h51-no-such-gate-000001', 5) $$) #>> '{body,error}', 'forbidden',
          '... before after is looked at');
SET LOCAL openwop.tenant = 'pager';
SELECT is(pg_temp.as_login('tap_h51_reader', 'pager', 'SELECT pg_temp.fdq(''SELECT openwop_api."flowdropInterrupts"()'')::jsonb') - 'message',
          '{"error": "forbidden", "details": {"requiredScope": "approvals:respond"}}',
          'flowdrop_page_needs_scope: a login with EXECUTE on the operation alone gets the envelope, not an error');
SELECT is(pg_temp.as_login('tap_h51_engine', 'pager', 'SELECT pg_temp.fdq(''SELECT openwop_api."flowdropInterrupts"()'')::jsonb'), '[]',
          'flowdrop_page_is_the_inbox: a login that may read event logs but holds no approvals:respond reads entries, and its inbox is empty');
SET LOCAL openwop.tenant = 'acme';
SELECT is(pg_temp.as_request('{"sub": "bob", "tenant": "pager", "scope": "approvals:respond"}',
            'SELECT to_jsonb(pg_temp.walk(''pager'', 2))'),
          to_jsonb(pg_temp.inbox('pager')), 'flowdrop_page_is_the_inbox: a JWT approver of the tenant reads its inbox');
SELECT is(pg_temp.as_request('{"sub": "bob", "tenant": "globex", "scope": "approvals:respond"}',
            'SELECT to_jsonb(pg_temp.walk(''globex'', 2))'),
          (SELECT jsonb_build_array(uuid) FROM g), '... one of another tenant reads its own tenant''s, nothing of pager''s');
-- eligibility: a gate of alice's is in alice's pages, not in bob's
CREATE TEMP TABLE alice_gate AS SELECT pg_temp.uuid_of(pg_temp.gate('pager/h51-page-alice-00001', '{"approversList": ["alice"]}')) AS uuid;
SELECT is(pg_temp.as_request('{"sub": "bob", "tenant": "pager", "scope": "approvals:respond"}',
            'SELECT to_jsonb(pg_temp.walk(''pager'', 2))') ? uuid, false, 'flowdrop_page_is_the_inbox: bob''s pages leave out a gate for alice only')
  FROM alice_gate;
SELECT is(pg_temp.as_request('{"sub": "alice", "tenant": "pager", "scope": "approvals:respond"}',
            'SELECT to_jsonb(pg_temp.walk(''pager'', 2))') ? uuid, true, '... alice''s show it') FROM alice_gate;
-- a web role granted what docs/postgrest.md grants web_approver, and the operation
SELECT is(pg_temp.as_web('{"sub": "bob", "tenant": "pager", "scope": "approvals:respond"}',
            'SELECT count(*)::int::text::jsonb FROM openwop_api.pending_interrupts'),
          '49', 'control: the web role reads the inbox view (GET /pending_interrupts)');
SELECT is(pg_temp.as_web('{"sub": "bob", "tenant": "pager", "scope": "approvals:respond"}',
            'SELECT CASE json_typeof(j) WHEN ''array'' THEN to_jsonb(json_array_length(j)) ELSE j::jsonb END FROM pg_temp.fd(NULL, 5) j'),
          '5', 'flowdrop_page_needs_no_openwop_grant: the web role with the inbox''s grants and EXECUTE on the operation reads its page (GET /rpc/flowdropInterrupts)');
SELECT ok(NOT has_function_privilege('public', 'openwop_api."flowdropInterrupts"(text, integer)', 'EXECUTE'),
          'flowdrop_page_granted_to_nobody: PUBLIC may not execute it until the DBA grants it');

-- the page reads the inbox index in order and stops: the statement the operation runs, as its caller
DO $$ BEGIN
  FOR n IN 1 .. 120 LOOP PERFORM pg_temp.gate(format('bulk51/h51-bulk-%s', lpad(n::text, 12, '0'))); END LOOP;
END $$;
UPDATE openwop.interrupts SET created_at = created_at - make_interval(secs => 1000 - split_part(run_id, '-', 3)::int)
 WHERE tenant = 'bulk51';
CREATE FUNCTION pg_temp.page_plan(sql text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE plan jsonb;
BEGIN
  PERFORM set_config('openwop.tenant', 'bulk51', true);
  EXECUTE format('EXPLAIN (FORMAT JSON, COSTS OFF, ANALYZE, TIMING OFF) %s', sql) INTO plan;
  PERFORM set_config('openwop.tenant', 'acme', true);
  RETURN plan -> 0 -> 'Plan';
END $$;
SELECT format($q$SELECT openwop.flowdrop_interrupts(ARRAY(SELECT p.interrupt_id FROM openwop_api.pending_interrupts p
                  WHERE (p.requested_at, p.interrupt_id) OPERATOR(pg_catalog.>) (%L::timestamptz, %L::text)
                  ORDER BY p.requested_at, p.interrupt_id LIMIT 20))$q$, created_at, interrupt_id) AS page
  FROM openwop.interrupts WHERE run_id = 'bulk51/h51-bulk-000000000050' \gset
SELECT is(jsonb_path_query_first(pg_temp.page_plan(:'page'), 'strict $.** ? (@."Relation Name" == "open_interrupts") ."Index Name"'),
          '"interrupts_inbox"', 'flowdrop_page_reads_the_inbox_index: the page after the 50th of 120 reads open_interrupts through interrupts_inbox');
SELECT is(jsonb_path_exists(pg_temp.page_plan(:'page'), 'strict $.** ? (@."Node Type" == "Sort")'), false,
          '... and sorts nothing');
SELECT is(jsonb_path_query_first(pg_temp.page_plan(:'page'), 'strict $.** ? (@."Index Name" == "interrupts_inbox") ."Actual Rows"'),
          '20', '... and stops at the page''s 20 rows');

/* ------------------------------------------------------------------
 * The HTTP inbox's columns
 * ------------------------------------------------------------------ */

SELECT is(ARRAY(SELECT attname || ' ' || format_type(atttypid, atttypmod) FROM pg_attribute
                 WHERE attrelid = 'openwop_api.pending_interrupts'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum),
          ARRAY['interrupt_id text', 'run_id text', 'node_id text', 'kind text', 'title text', 'request jsonb', 'resume_schema jsonb',
                'requested_at timestamp with time zone', 'expires_at timestamp with time zone', 'required_approvals integer',
                'accepts integer', 'rejects integer', 'voters integer', 'my_vote text', 'my_vote_at timestamp with time zone',
                'policy jsonb', 'due_at timestamp with time zone', 'overdue boolean'],
          'inbox_http_columns: openwop_api.pending_interrupts ends with policy, due_at and overdue');
SELECT is(pg_temp.as_login('tap_h51_dba', 'acme', $$ SELECT openwop.set_approval_policy('h51-due',
            '{"appliesTo": {"workflowId": "h51-due", "nodeId": "*"}, "dueAfterMs": 1}') ->> 'version' $$), '1',
          'a policy making gates of workflow h51-due fall due at once');
SELECT pg_temp.gate('acme/h51-due-000000000001', '{}', '{"timeoutMs": 3600000}', 'h51-due') IS NOT NULL AS raised;
SELECT pg_temp.gate('acme/h51-due-000000000002', '{}', '{"timeoutMs": 3600000}') IS NOT NULL AS raised;
SELECT is(pg_temp.as_request('{"sub": "bob", "tenant": "acme", "scope": "approvals:respond"}',
            $$ SELECT jsonb_agg(jsonb_build_object('run', run_id, 'policy', policy, 'due', due_at = expires_at, 'overdue', overdue) ORDER BY run_id)
                 FROM openwop_api.pending_interrupts WHERE run_id LIKE 'acme/h51-due-%' $$),
          '[{"run": "acme/h51-due-000000000001", "policy": {"name": "h51-due", "version": 1}, "due": false, "overdue": true},
            {"run": "acme/h51-due-000000000002", "policy": null, "due": true, "overdue": false}]',
          'inbox_http_columns: the pinned policy, the due date (the policy''s, else the deadline) and whether it passed');
SELECT is(pg_temp.as_request('{"sub": "bob", "tenant": "acme", "scope": "approvals:respond"}',
            'SELECT jsonb_agg(to_jsonb(p) ORDER BY interrupt_id) FROM openwop_api.pending_interrupts p'),
          pg_temp.as_request('{"sub": "bob", "tenant": "acme", "scope": "approvals:respond"}',
            'SELECT jsonb_agg(to_jsonb(p) ORDER BY interrupt_id) FROM openwop.pending_interrupts p'),
          '... the rows of openwop.pending_interrupts, column for column');

/* ------------------------------------------------------------------
 * connector_auth_expired
 * ------------------------------------------------------------------ */

CREATE FUNCTION pg_temp.started(run text, node text DEFAULT 'fetch') RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM openwop.create_run('h51-oauth', jsonb_build_object('runId', run));
  PERFORM openwop.start_node(run, node);
END $$;
-- the credential request an engine raises after the refresh failed
CREATE FUNCTION pg_temp.credential(ref jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('kind', 'credential', 'data', jsonb_build_object('provider', 'synthetic', 'scopes', '["repo"]'::jsonb,
           'reason', 'expired', 'connectUrl', 'https://host.example/oauth/connect/synthetic', 'credentialRef', ref))
$$;
SELECT pg_temp.started('acme/h51-cae-000000000001');
SELECT is(openwop.connector_auth_expired('acme/h51-cae-000000000001', 'fetch', 'synthetic', '{"ref": "cred-1", "scope": "repo"}', 'invalid_grant'),
          '{"runId": "acme/h51-cae-000000000001", "nodeId": "fetch", "sequence": 2, "runStatus": "running"}',
          'connector_auth_expired_appended: it answers {runId, nodeId, sequence, runStatus}');
SELECT is((SELECT jsonb_build_object('type', type, 'node', node_id, 'payload', payload) FROM openwop.events
            WHERE run_id = 'acme/h51-cae-000000000001' AND sequence = 2),
          '{"type": "connector.auth-expired", "node": "fetch", "payload": {"provider": "synthetic", "credentialRef": {"ref": "cred-1", "scope": "repo"}, "reason": "invalid_grant"}}',
          'connector_auth_expired_payload: connector.auth-expired {provider, credentialRef, reason} on the node, exactly');
SELECT is(openwop.connector_auth_expired('acme/h51-cae-000000000001', 'fetch', 'synthetic', '{"ref": "cred-1"}') ->> 'sequence', '3',
          'connector_auth_expired_appended: again, without scope or reason');
SELECT is((SELECT e -> 'payload' FROM openwop.events('acme/h51-cae-000000000001') e WHERE (e ->> 'sequence')::int = 3),
          '{"provider": "synthetic", "credentialRef": {"ref": "cred-1"}}',
          'connector_auth_expired_payload: no reason, no scope: the members are left out, not null');
SELECT is((SELECT e ->> 'nodeId' FROM openwop.events('acme/h51-cae-000000000001') e WHERE (e ->> 'sequence')::int = 3), 'fetch',
          '... and the envelope names the node');
SELECT is(openwop.run_snapshot('acme/h51-cae-000000000001') ->> 'status', 'running', 'connector_auth_expired_changes_no_state: the run still runs');
SELECT is((SELECT status FROM openwop.node_executions WHERE run_id = 'acme/h51-cae-000000000001' AND node_id = 'fetch'), 'running',
          '... and so does the node');
SELECT is((openwop.verify_run('acme/h51-cae-000000000001') ->> 'valid'), 'true', '... and the hash chain holds the event');

-- the bounds: 256 characters
SELECT is(pg_temp.refusal(format('SELECT openwop.connector_auth_expired(%L, %L, %L, %L, %L)', 'acme/h51-cae-000000000001', 'fetch',
            repeat('p', 256), '{"ref": "c"}', repeat('r', 256))), NULL, 'control: a provider and a reason of 256 characters are recorded');
SELECT is(pg_temp.refusal(format('SELECT openwop.connector_auth_expired(%L, %L, %L, %L, %L)', 'acme/h51-cae-000000000001', 'fetch',
            repeat(E'\u00e9', 200), '{"ref": "c"}', repeat(E'\u00e9', 200))), NULL,
          'connector_auth_expired_counts_characters: a provider and a reason of 200 characters (400 bytes in UTF-8) are recorded');
-- every refusal, nothing appended
CREATE TEMP TABLE cae_before AS SELECT pg_temp.all_events() AS n;
SELECT is((SELECT jsonb_build_object('sqlstate', r ->> 'sqlstate', 'code', r ->> 'code', 'field', r #>> '{details,field}')
             FROM pg_temp.refusal(format('SELECT openwop.connector_auth_expired(%s)', args)) r),
          jsonb_build_object('sqlstate', 'PT400', 'code', 'validation_error', 'field', field),
          format('connector_auth_expired_validation: %s is refused naming %s', label, field))
  FROM (VALUES
    ('a null run id', $$NULL, 'fetch', 'synthetic', '{"ref": "c"}'$$, 'runId'),
    ('a null node id', $$'acme/h51-cae-000000000001', NULL, 'synthetic', '{"ref": "c"}'$$, 'nodeId'),
    ('a null provider', $$'acme/h51-cae-000000000001', 'fetch', NULL, '{"ref": "c"}'$$, 'provider'),
    ('a null credential_ref', $$'acme/h51-cae-000000000001', 'fetch', 'synthetic', NULL$$, 'credentialRef'),
    ('a node id outside the grammar', $$'acme/h51-cae-000000000001', 'a b', 'synthetic', '{"ref": "c"}'$$, 'nodeId'),
    ('an empty node id', $$'acme/h51-cae-000000000001', '', 'synthetic', '{"ref": "c"}'$$, 'nodeId'),
    ('an empty provider', $$'acme/h51-cae-000000000001', 'fetch', '', '{"ref": "c"}'$$, 'provider'),
    ('a provider of 257 characters', format('%L, %L, %L, %L', 'acme/h51-cae-000000000001', 'fetch', repeat('p', 257), '{"ref": "c"}'), 'provider'),
    ('an empty reason', $$'acme/h51-cae-000000000001', 'fetch', 'synthetic', '{"ref": "c"}', ''$$, 'reason'),
    ('a reason of 257 characters', format('%L, %L, %L, %L, %L', 'acme/h51-cae-000000000001', 'fetch', 'synthetic', '{"ref": "c"}', repeat('r', 257)), 'reason'),
    ('a credentialRef that is a string', $$'acme/h51-cae-000000000001', 'fetch', 'synthetic', '"cred-1"'$$, 'credentialRef'),
    ('a credentialRef that is an array', $$'acme/h51-cae-000000000001', 'fetch', 'synthetic', '[{"ref": "c"}]'$$, 'credentialRef'),
    ('a credentialRef JSON null', $$'acme/h51-cae-000000000001', 'fetch', 'synthetic', 'null'$$, 'credentialRef'),
    ('a credentialRef without ref', $$'acme/h51-cae-000000000001', 'fetch', 'synthetic', '{"scope": "repo"}'$$, 'credentialRef.ref'),
    ('an empty ref', $$'acme/h51-cae-000000000001', 'fetch', 'synthetic', '{"ref": ""}'$$, 'credentialRef.ref'),
    ('a ref that is no string', $$'acme/h51-cae-000000000001', 'fetch', 'synthetic', '{"ref": 1}'$$, 'credentialRef.ref'),
    ('a scope that is no string', $$'acme/h51-cae-000000000001', 'fetch', 'synthetic', '{"ref": "c", "scope": ["repo"]}'$$, 'credentialRef.scope'),
    ('an unknown member of credentialRef', $$'acme/h51-cae-000000000001', 'fetch', 'synthetic', '{"ref": "c", "token": "secret"}'$$, 'credentialRef.token'),
    ('a run id without a tenant', $$'h51-cae-000000000001', 'fetch', 'synthetic', '{"ref": "c"}'$$, 'runId')
  ) AS t (label, args, field);
SELECT is(pg_temp.refusal($$ SELECT openwop.connector_auth_expired('acme/h51-cae-missing0000001', 'fetch', 'synthetic', '{"ref": "c"}') $$),
          '{"sqlstate": "PT404", "code": "not_found", "details": {"runId": "acme/h51-cae-missing0000001"}}',
          'connector_auth_expired_not_found: an unknown run is 404');
SELECT is(pg_temp.refusal($$ SELECT openwop.connector_auth_expired('acme/h51-cae-000000000001', 'never', 'synthetic', '{"ref": "c"}') $$),
          '{"sqlstate": "PT404", "code": "not_found", "details": {"runId": "acme/h51-cae-000000000001", "nodeId": "never"}}',
          'connector_auth_expired_not_found: a node never started is 404');
SELECT is(pg_temp.all_events() - n, 0::bigint, 'connector_auth_expired_refusals_append_nothing: none of these calls appended anything')
  FROM cae_before;
SET LOCAL openwop.tenant = 'globex';
SELECT pg_temp.started('globex/h51-cae-00000000001');
SET LOCAL openwop.tenant = 'acme';
SELECT is(pg_temp.refusal($$ SELECT openwop.connector_auth_expired('globex/h51-cae-00000000001', 'fetch', 'synthetic', '{"ref": "c"}') $$),
          '{"sqlstate": "PT403", "code": "id_tenant_mismatch", "details": {"runId": "globex/h51-cae-00000000001", "tenant": "acme"}}',
          'connector_auth_expired_tenant_checked: another tenant''s run is 403 id_tenant_mismatch');
SELECT is((SELECT count(*)::int FROM openwop.events WHERE run_id = 'globex/h51-cae-00000000001'), 2, '... and nothing is appended to it');
SELECT is(pg_temp.as_request('{"sub": "bob", "tenant": "globex", "scope": "approvals:respond"}',
            $$ SELECT pg_temp.refusal('SELECT openwop.connector_auth_expired(''acme/h51-cae-000000000001'', ''fetch'', ''synthetic'', ''{"ref": "c"}'')') $$) ->> 'code',
          'id_tenant_mismatch', '... nor to acme''s by a JWT subject of globex');
-- the node must be running: not interrupted, not ended
SELECT pg_temp.started('acme/h51-cae-000000000002');
SELECT openwop.interrupt('acme/h51-cae-000000000002', 'fetch', pg_temp.credential('{"ref": "cred-2"}')) ->> 'status' AS suspended;
SELECT is(pg_temp.refusal($$ SELECT openwop.connector_auth_expired('acme/h51-cae-000000000002', 'fetch', 'synthetic', '{"ref": "cred-2"}') $$) - 'details',
          '{"sqlstate": "PT409", "code": "run_state_conflict"}', 'connector_auth_expired_open_execution: a node suspended on its interrupt is 409');
SELECT openwop.start_node('acme/h51-cae-000000000002', 'done') ->> 'status' AS started;
SELECT openwop.complete_node('acme/h51-cae-000000000002', 'done') ->> 'status' AS completed;
SELECT is(pg_temp.refusal($$ SELECT openwop.connector_auth_expired('acme/h51-cae-000000000002', 'done', 'synthetic', '{"ref": "c"}') $$) #>> '{details,nodeStatus}',
          'completed', '... and so is a completed node');
SELECT openwop.cancel_run('acme/h51-cae-000000000002') ->> 'status' AS cancelled;
SELECT is(pg_temp.refusal($$ SELECT openwop.connector_auth_expired('acme/h51-cae-000000000002', 'fetch', 'synthetic', '{"ref": "c"}') $$),
          '{"sqlstate": "PT409", "code": "run_terminal", "details": {"runId": "acme/h51-cae-000000000002", "runStatus": "cancelled"}}',
          'connector_auth_expired_run_terminal: a run that ended is 409 run_terminal');
SELECT ok(NOT has_function_privilege('public', 'openwop.connector_auth_expired(text, text, text, jsonb, text)', 'EXECUTE'),
          'connector_auth_expired_granted_to_nobody: PUBLIC may not execute it (the host''s OAuth code is granted it)');
SELECT is(pg_temp.as_login('tap_h51_reader', 'acme',
            $$ SELECT openwop.connector_auth_expired('acme/h51-cae-000000000001', 'fetch', 'synthetic', '{"ref": "c"}') $$) ->> 'sqlstate',
          '42501', '... a login without the grant is refused');

-- the credential leg, end to end: the refresh fails, the node suspends on a credential interrupt, the callback confirms
SELECT pg_temp.started('acme/h51-cred-leg-0000001');
SELECT is(openwop.connector_auth_expired('acme/h51-cred-leg-0000001', 'fetch', 'synthetic', '{"ref": "vault://synthetic/acme-1"}', 'refresh token revoked') ->> 'sequence',
          '2', 'credential_leg_expired_end_to_end: the terminal refresh failure is announced');
SELECT is(openwop.interrupt('acme/h51-cred-leg-0000001', 'fetch', pg_temp.credential('{"ref": "vault://synthetic/acme-1"}')) ->> 'status',
          'interrupted', '... then the node suspends on a credential interrupt, reason expired');
SELECT is(pg_temp.types('acme/h51-cred-leg-0000001'), 'run.started,node.started,connector.auth-expired,interrupt.requested,node.suspended',
          'credential_leg_expired_end_to_end: connector.auth-expired comes before interrupt.requested');
SELECT is((SELECT payload #> '{data,credentialRef}' FROM openwop.events WHERE run_id = 'acme/h51-cred-leg-0000001' AND type = 'interrupt.requested'),
          (SELECT payload -> 'credentialRef' FROM openwop.events WHERE run_id = 'acme/h51-cred-leg-0000001' AND type = 'connector.auth-expired'),
          '... both naming the same credential');
SELECT is((SELECT payload #>> '{data,reason}' FROM openwop.events WHERE run_id = 'acme/h51-cred-leg-0000001' AND type = 'interrupt.requested'),
          'expired', '... the interrupt''s reason expired');
SELECT is(openwop.run_snapshot('acme/h51-cred-leg-0000001') ->> 'status', 'waiting-input', '... and the run waits for input');
SELECT is(openwop.flowdrop_interrupt(interrupt_id) ->> 'type' || ' ' || (openwop.flowdrop_interrupt(interrupt_id) ->> 'id' = pg_temp.uuid_of(interrupt_id))::text,
          'credential true', '... published to FlowDrop as a credential entry under its UUID')
  FROM openwop.interrupts WHERE run_id = 'acme/h51-cred-leg-0000001';
SELECT is(pg_temp.as_login('tap_h51_callback', 'acme', $$ SELECT openwop.confirm_credential('acme/h51-cred-leg-0000001', 'fetch') $$)
            - 'interruptId' - 'sequence' - 'receipt' - 'resolvedBy',
          '{"status": "resolved", "runId": "acme/h51-cred-leg-0000001", "nodeId": "fetch", "kind": "credential", "runStatus": "running"}',
          'credential_leg_expired_end_to_end: the OAuth callback confirms the new grant');
SELECT is((SELECT payload -> 'resumeValue' FROM openwop.events WHERE run_id = 'acme/h51-cred-leg-0000001' AND type = 'interrupt.resolved'),
          '{"outcome": "authorized"}', '... recorded as {outcome: authorized}');
SELECT is(openwop.complete_node('acme/h51-cred-leg-0000001', 'fetch', '{"fetched": true}') ->> 'status', 'completed', '... the node runs on and completes');
SELECT is(openwop.complete_run('acme/h51-cred-leg-0000001') ->> 'status', 'completed', '... and so does the run');
SELECT is(pg_temp.types('acme/h51-cred-leg-0000001'),
          'run.started,node.started,connector.auth-expired,interrupt.requested,node.suspended,interrupt.resolved,node.resumed,node.completed,run.completed',
          'credential_leg_expired_end_to_end: the whole log, in order');
SELECT is((openwop.verify_run('acme/h51-cred-leg-0000001') ->> 'valid'), 'true', '... and its chain verifies');

-- without the facet: announced, then the node fails with connector_auth_expired
SET LOCAL openwop.credential_interrupts = off;
SELECT is(openwop.capabilities() ? 'oauth', false, 'control: with openwop.credential_interrupts off, no oauth facet is advertised');
SELECT pg_temp.started('acme/h51-cred-leg-0000002');
SELECT is(openwop.connector_auth_expired('acme/h51-cred-leg-0000002', 'fetch', 'synthetic', '{"ref": "vault://synthetic/acme-2"}') ->> 'runStatus',
          'running', 'credential_leg_without_facet: the failure is announced all the same');
SELECT is(pg_temp.refusal(format('SELECT openwop.interrupt(%L, %L, %L)', 'acme/h51-cred-leg-0000002', 'fetch',
            pg_temp.credential('{"ref": "vault://synthetic/acme-2"}'))) ->> 'code',
          'capability_required', '... a credential interrupt is refused (422)');
SELECT is(openwop.fail_node('acme/h51-cred-leg-0000002', 'fetch',
            '{"code": "connector_auth_expired", "message": "the synthetic credential expired and could not be refreshed", "retryable": false}') ->> 'status',
          'failed', '... so the engine fails the node with connector_auth_expired');
SELECT is(pg_temp.types('acme/h51-cred-leg-0000002'), 'run.started,node.started,connector.auth-expired,node.failed',
          'credential_leg_without_facet: connector.auth-expired then node.failed, and no interrupt.requested');
SELECT is((SELECT payload #>> '{error,code}' FROM openwop.events WHERE run_id = 'acme/h51-cred-leg-0000002' AND type = 'node.failed'),
          'connector_auth_expired', '... with the code the spec names');
RESET openwop.credential_interrupts;

-- a fork past the announcement copies it
SELECT pg_temp.started('acme/h51-cae-fork-0000001');
SELECT openwop.connector_auth_expired('acme/h51-cae-fork-0000001', 'fetch', 'synthetic', '{"ref": "cred-f"}', 'expired') ->> 'sequence' AS announced;
SELECT openwop.interrupt('acme/h51-cae-fork-0000001', 'fetch', pg_temp.credential('{"ref": "cred-f"}')) ->> 'status' AS suspended;
SELECT openwop.start_node('acme/h51-cae-fork-0000001', 'side') ->> 'status' AS side_started;
CREATE TEMP TABLE cae_forks AS
  SELECT m, openwop.fork_run('acme/h51-cae-fork-0000001', jsonb_build_object('mode', m, 'fromSeq', s)) AS f
    FROM (VALUES ('branch', 3), ('replay', 3), ('branch', 5)) v (m, s);
SELECT is((SELECT count(*)::int FROM cae_forks WHERE f ? 'runId'), 3, 'connector_auth_expired_forked: branches and a replay past it are made');
SELECT is((SELECT jsonb_build_object('type', type, 'node', node_id, 'payload', payload) FROM openwop.events
            WHERE run_id = f ->> 'runId' AND sequence = 2),
          '{"type": "connector.auth-expired", "node": "fetch", "payload": {"provider": "synthetic", "credentialRef": {"ref": "cred-f"}, "reason": "expired"}}',
          format('connector_auth_expired_forked: the %s copies the event as it is', m))
  FROM cae_forks;
SELECT is((openwop.verify_run(f ->> 'runId') ->> 'valid'), 'true', format('... and the %s''s chain verifies', m)) FROM cae_forks;
SELECT is(openwop.connector_auth_expired(f ->> 'runId', 'fetch', 'synthetic', '{"ref": "cred-f"}') ->> 'runId', f ->> 'runId',
          'connector_auth_expired_forked: the branch at the announcement records one of its own for its running node')
  FROM cae_forks WHERE m = 'branch' AND (f ->> 'fromSeq')::int = 3;

SELECT * FROM finish();
ROLLBACK;
