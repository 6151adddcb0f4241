-- Attacks on what 0.8.0 added: the conversation kinds (openwop.conversations)
-- and the credential interrupts (confirm_credential(), the setting
-- openwop.credential_interrupts).  Each block is one attack, by the caller
-- it names; a pass means the attack failed.  The races are isolation specs:
-- specs/attack_conversation_step_race (two nodes of a run stepping one
-- conversation at once) and specs/attack_replay_after_lock (a replay waiting
-- for a resolve).  docs/security.md says what held and why.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir refusal.psql
\ir callers.psql
\ir api.psql

-- a run of its tenant with node "talk" started
CREATE FUNCTION pg_temp.run(run text, node text DEFAULT 'talk') RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('openwop.tenant', split_part(run, '/', 1), true);
  IF NOT EXISTS (SELECT FROM openwop.runs r WHERE r.run_id = run) THEN
    PERFORM openwop.create_run('atk', jsonb_build_object('runId', run));
  END IF;
  PERFORM openwop.start_node(run, node);
  PERFORM set_config('openwop.tenant', 'acme', true);
END $$;
-- interrupt() of a conversation kind, in the run's tenant
CREATE FUNCTION pg_temp.conv(run text, kind text, data jsonb, ordinal int DEFAULT 0, node text DEFAULT 'talk')
    RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE r jsonb;
BEGIN
  PERFORM set_config('openwop.tenant', split_part(run, '/', 1), true);
  r := openwop.interrupt(run, node, jsonb_build_object('kind', 'conversation.' || kind, 'data', data), ordinal);
  PERFORM set_config('openwop.tenant', 'acme', true);
  RETURN r;
END $$;
-- the refusal of that call, {sqlstate, code, details}
CREATE FUNCTION pg_temp.conv_refused(run text, kind text, data jsonb, ordinal int DEFAULT 0, node text DEFAULT 'talk')
    RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE r jsonb;
BEGIN
  r := pg_temp.refusal(format('SELECT pg_temp.conv(%L, %L, %L, %s, %L)', run, kind, data, ordinal, node));
  PERFORM set_config('openwop.tenant', 'acme', true);
  RETURN r;
END $$;
CREATE FUNCTION pg_temp.answer(run text, value jsonb, node text DEFAULT 'talk') RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE r jsonb;
BEGIN
  PERFORM set_config('openwop.tenant', split_part(run, '/', 1), true);
  r := openwop.resolve_interrupt(run, node, value);
  PERFORM set_config('openwop.tenant', 'acme', true);
  RETURN r;
END $$;
CREATE FUNCTION pg_temp.conversation(id text, tenant text DEFAULT 'acme') RETURNS jsonb LANGUAGE sql AS $$
  SELECT to_jsonb(c) - 'opened_at' - 'closed_at' FROM openwop.conversations c WHERE c.tenant = $2 AND c.conversation_id = $1
$$;
CREATE FUNCTION pg_temp.credential() RETURNS jsonb LANGUAGE sql AS $$
  SELECT '{"kind": "credential", "data": {"provider": "gh", "scopes": ["repo"], "reason": "missing",
           "connectUrl": "https://host.example/connect/1"}}'::jsonb
$$;
CREATE FUNCTION pg_temp.cred_run(run text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM openwop.create_run('cred', jsonb_build_object('runId', run));
  PERFORM openwop.start_node(run, 'cred');
  PERFORM openwop.interrupt(run, 'cred', pg_temp.credential());
END $$;

CREATE ROLE openwop_tap_atk_cb LOGIN;        -- the OAuth callback's login, granted confirm_credential
CREATE ROLE openwop_tap_atk_by LOGIN;        -- a bystander with CREATE in a schema of its own
CREATE ROLE openwop_tap_atk_engine LOGIN;    -- an engine login bound to acme
CREATE SCHEMA openwop_tap_atk AUTHORIZATION openwop_tap_atk_by;
GRANT USAGE ON SCHEMA openwop TO openwop_tap_atk_cb, openwop_tap_atk_by, openwop_tap_atk_engine;
GRANT USAGE, CREATE ON SCHEMA openwop_tap_atk TO openwop_tap_atk_cb;
GRANT EXECUTE ON FUNCTION openwop.confirm_credential(text, text, text) TO openwop_tap_atk_cb;
GRANT EXECUTE ON FUNCTION openwop.create_run(text, jsonb, text), openwop.start_node(text, text, text),
                          openwop.interrupt(text, text, jsonb, integer) TO openwop_tap_atk_engine;

/* ------------------------------------------------------------------
 * A role with CREATE in its own schema puts an operator and functions
 * ahead of pg_catalog (search_path = its schema, pg_catalog) and drives
 * every new statement: conversation start, turn, close, their answers,
 * confirm_credential.  Every statement the extension runs names pg_catalog
 * operators and schema-qualified tables, so none of them is ever called
 * (each raises if it is).
 * ------------------------------------------------------------------ */

SET LOCAL ROLE openwop_tap_atk_by;
CREATE FUNCTION openwop_tap_atk.texteq(text, text) RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'shadow text = called'; END $$;
CREATE OPERATOR openwop_tap_atk.= (LEFTARG = text, RIGHTARG = text, FUNCTION = openwop_tap_atk.texteq);
CREATE FUNCTION openwop_tap_atk.int4pl(int, int) RETURNS int LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'shadow int + called'; END $$;
CREATE OPERATOR openwop_tap_atk.+ (LEFTARG = int, RIGHTARG = int, FUNCTION = openwop_tap_atk.int4pl);
CREATE FUNCTION openwop_tap_atk.int4eq(int, int) RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'shadow int = called'; END $$;
CREATE OPERATOR openwop_tap_atk.= (LEFTARG = int, RIGHTARG = int, FUNCTION = openwop_tap_atk.int4eq);
CREATE FUNCTION openwop_tap_atk.now() RETURNS timestamptz LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'shadow now() called'; END $$;
CREATE FUNCTION openwop_tap_atk.clock_timestamp() RETURNS timestamptz LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'shadow clock_timestamp() called'; END $$;
RESET ROLE;
-- the calls run with the shadows first; what they answered is checked after (pgTAP itself would call them)
CREATE TEMP TABLE shadowed (n serial, step text, r jsonb);
DO $$ BEGIN PERFORM pg_temp.run('acme/atk8-shadow-000000001'); PERFORM pg_temp.cred_run('acme/atk8-shadow-cred-00001'); END $$;
SET LOCAL search_path = openwop_tap_atk, pg_catalog, public;
INSERT INTO shadowed (step, r) SELECT 'start', openwop.interrupt('acme/atk8-shadow-000000001', 'talk', '{"kind": "conversation.start", "data": {"conversationId": "shadowed"}}');
INSERT INTO shadowed (step, r) SELECT 'start answered', openwop.resolve_interrupt('acme/atk8-shadow-000000001', 'talk', 'null');
INSERT INTO shadowed (step, r) SELECT 'turn', openwop.interrupt('acme/atk8-shadow-000000001', 'talk',
  '{"kind": "conversation.exchange", "data": {"conversationId": "shadowed", "prompt": "n?", "outcomeSchema": {"type": "integer"}}}', 1);
INSERT INTO shadowed (step, r) SELECT 'turn answered', openwop.resolve_interrupt('acme/atk8-shadow-000000001', 'talk', '7');
INSERT INTO shadowed (step, r) SELECT 'close', openwop.interrupt('acme/atk8-shadow-000000001', 'talk', '{"kind": "conversation.close", "data": {"conversationId": "shadowed"}}', 2);
INSERT INTO shadowed (step, r) SELECT 'close answered', openwop.resolve_interrupt('acme/atk8-shadow-000000001', 'talk', '{}');
INSERT INTO shadowed (step, r) SELECT 'confirmed', openwop.confirm_credential('acme/atk8-shadow-cred-00001', 'cred', 'atk8-shadow-key-00000000001');
INSERT INTO shadowed (step, r) SELECT 'confirmed again', openwop.confirm_credential('acme/atk8-shadow-cred-00001', 'cred', 'atk8-shadow-key-00000000001');
RESET search_path;
SELECT is((SELECT string_agg(step || ' ' || coalesce(r ->> 'status', '?') || coalesce(' replay ' || (r ->> 'idempotentReplay'), ''), ', ' ORDER BY n) FROM shadowed),
          'start interrupted, start answered resolved, turn interrupted, turn answered resolved, close interrupted, close answered resolved, confirmed resolved, confirmed again resolved replay true',
          'shadowed operators (search_path = its schema, pg_catalog): every conversation step, answer and confirmation ran, no shadow called');
SELECT is(pg_temp.conversation('shadowed') - 'run_id' - 'tenant',
          '{"state": "closed", "turn_count": 1, "conversation_id": "shadowed", "last_turn_index": 0, "pending_interrupt_id": null}',
          '... and the conversation row is what the steps wrote');

/* ------------------------------------------------------------------
 * Another tenant's conversation ids: an engine of acme probes for ids
 * globex opened.  Ids are unique per tenant, so the probe learns nothing:
 * a turn or close naming globex's id is the very refusal a never-opened id
 * gets, and acme can open the same id for itself.  An engine bound to acme
 * cannot raise anything in a globex run, so it cannot squat or exhaust
 * globex's ids either.
 * ------------------------------------------------------------------ */

DO $$ BEGIN
  PERFORM pg_temp.run('globex/atk8-conv-00000000001');
  PERFORM pg_temp.conv('globex/atk8-conv-00000000001', 'start', '{"conversationId": "globex-secret"}');
  PERFORM pg_temp.answer('globex/atk8-conv-00000000001', 'null');
  PERFORM pg_temp.conv('globex/atk8-conv-00000000001', 'exchange', '{"conversationId": "globex-secret", "prompt": "?", "turnIndex": 41}', 1);
  PERFORM pg_temp.run('acme/atk8-conv-000000000001');
END $$;
SELECT is(pg_temp.conv_refused('acme/atk8-conv-000000000001', k, '{"conversationId": "globex-secret", "prompt": "?"}'::jsonb - CASE k WHEN 'close' THEN 'prompt' ELSE '' END)
            #- '{details,conversationId}',
          pg_temp.conv_refused('acme/atk8-conv-000000000001', k, '{"conversationId": "never-opened", "prompt": "?"}'::jsonb - CASE k WHEN 'close' THEN 'prompt' ELSE '' END)
            #- '{details,conversationId}',
          format('tenant oracle: a conversation.%s naming another tenant''s id is refused exactly as one naming an id never opened (404, nothing about it)', k))
  FROM unnest(ARRAY['exchange', 'close']) k;
SELECT is(pg_temp.conv_refused('acme/atk8-conv-000000000001', 'exchange', '{"conversationId": "globex-secret", "prompt": "?"}') ->> 'code',
          'not_found', '... which is 404 not_found');
SELECT is(pg_temp.conv('acme/atk8-conv-000000000001', 'start', '{"conversationId": "globex-secret"}') ->> 'status', 'interrupted',
          '... and acme opens the same id for itself: it is not taken in acme');
SELECT is(pg_temp.conversation('globex-secret', 'globex') ->> 'last_turn_index', '41', '... globex''s conversation is untouched');
SELECT is(pg_temp.as_login('openwop_tap_atk_engine', 'acme',
            $$SELECT openwop.create_run('atk', '{"runId": "globex/atk8-squat-0000000001"}')$$) ->> 'code',
          'id_tenant_mismatch', 'squat: an engine bound to acme cannot create a run in globex, so it opens no globex id');
SELECT is(pg_temp.as_login('openwop_tap_atk_engine', 'acme',
            $$SELECT openwop.interrupt('globex/atk8-conv-00000000001', 'talk', '{"kind": "conversation.close", "data": {"conversationId": "globex-secret"}}', 2)$$) ->> 'code',
          'id_tenant_mismatch', '... nor steps a globex conversation through a globex run');

/* ------------------------------------------------------------------
 * Another run's conversation, in the same tenant: an engine steps it from
 * its own run.  Whatever the conversation's state (open, waiting on a turn,
 * closed), the refusal is the 404 of a conversation never opened: it says
 * nothing of the other run's state or turns, and changes nothing.
 * ------------------------------------------------------------------ */

DO $$ BEGIN
  PERFORM pg_temp.run('acme/atk8-owner-00000000001');
  PERFORM pg_temp.conv('acme/atk8-owner-00000000001', 'start', '{"conversationId": "owned-open"}');
  PERFORM pg_temp.answer('acme/atk8-owner-00000000001', 'null');
  PERFORM pg_temp.conv('acme/atk8-owner-00000000001', 'exchange', '{"conversationId": "owned-open", "prompt": "?", "turnIndex": 3}', 1);
  PERFORM pg_temp.run('acme/atk8-owner-00000000001', 'other');
  PERFORM pg_temp.conv('acme/atk8-owner-00000000001', 'start', '{"conversationId": "owned-closed"}', 0, 'other');
  PERFORM pg_temp.answer('acme/atk8-owner-00000000001', 'null', 'other');
  PERFORM pg_temp.conv('acme/atk8-owner-00000000001', 'close', '{"conversationId": "owned-closed"}', 1, 'other');
END $$;
CREATE TEMP TABLE owned_before AS SELECT jsonb_agg(pg_temp.conversation(id) ORDER BY id) AS rows FROM unnest(ARRAY['owned-open', 'owned-closed']) id;
DO $$ BEGIN PERFORM pg_temp.run('acme/atk8-conv-000000000001', 'probe'); END $$;
SELECT is(pg_temp.conv_refused('acme/atk8-conv-000000000001', k, jsonb_build_object('conversationId', id) || CASE k WHEN 'exchange' THEN '{"prompt": "?", "turnIndex": 4}'::jsonb ELSE '{}'::jsonb END, 0, 'probe'),
          jsonb_build_object('sqlstate', 'PT404', 'code', 'not_found',
                             'details', jsonb_build_object('runId', 'acme/atk8-conv-000000000001', 'conversationId', id)),
          format('another run''s conversation (%s): a conversation.%s from this run is 404 naming only this run and the id', id, k))
  FROM unnest(ARRAY['owned-open', 'owned-closed']) id, unnest(ARRAY['exchange', 'close']) k;
SELECT is((SELECT jsonb_agg(pg_temp.conversation(id) ORDER BY id) FROM unnest(ARRAY['owned-open', 'owned-closed']) id),
          (SELECT rows FROM owned_before), '... and neither conversation changed');

/* ------------------------------------------------------------------
 * turnIndex: backwards, equal, fractional, textual, huge, at the end of
 * the range.  A value outside 0 ... 2147483647 or not an integer is 400;
 * one that does not go forward is 409; the range's end is never passed.
 * ------------------------------------------------------------------ */

DO $$ BEGIN
  PERFORM pg_temp.run('acme/atk8-turns-00000000001');
  PERFORM pg_temp.conv('acme/atk8-turns-00000000001', 'start', '{"conversationId": "turns"}');
  PERFORM pg_temp.answer('acme/atk8-turns-00000000001', 'null');
  PERFORM pg_temp.conv('acme/atk8-turns-00000000001', 'exchange', '{"conversationId": "turns", "prompt": "?", "turnIndex": 9}', 1);
  PERFORM pg_temp.answer('acme/atk8-turns-00000000001', '1');
END $$;
SELECT is(pg_temp.conv_refused('acme/atk8-turns-00000000001', 'exchange', jsonb_build_object('conversationId', 'turns', 'prompt', '?', 'turnIndex', t), 2)
            #>> '{details,field}',
          'data.turnIndex', format('turnIndex %s is 400 data.turnIndex', t))
  FROM unnest(ARRAY['9.5', '"10"', 'true', 'null', '[10]', '{"n": 10}', '-1', '-0.5', '2147483648', '9223372036854775808',
                    '1e90', '10.000000000000000000000000000001']::jsonb[]) t;
SELECT is(pg_temp.conv_refused('acme/atk8-turns-00000000001', 'exchange', jsonb_build_object('conversationId', 'turns', 'prompt', '?', 'turnIndex', t), 2)
            #>> '{details,field}',
          'request', format('turnIndex %s: a number that large or that fine is refused before it is read (400 request)', t))
  FROM unnest(ARRAY['1e400', '-1e400', '1e-400']::jsonb[]) t;
SELECT is(pg_temp.conv_refused('acme/atk8-turns-00000000001', 'exchange', jsonb_build_object('conversationId', 'turns', 'prompt', '?', 'turnIndex', t), 2)
            - 'details',
          '{"sqlstate": "PT409", "code": "run_state_conflict"}', format('turnIndex %s, not after turn 9, is 409', t))
  FROM unnest(ARRAY['0', '8', '9', '9.0']::jsonb[]) t;
SELECT is(pg_temp.conv('acme/atk8-turns-00000000001', 'exchange', '{"conversationId": "turns", "prompt": "?", "turnIndex": 2147483647}', 2) ->> 'status',
          'interrupted', 'turnIndex 2147483647, the last, is taken');
SELECT is(pg_temp.answer('acme/atk8-turns-00000000001', '2') ->> 'status', 'resolved', '... and answered');
SELECT is(pg_temp.conv_refused('acme/atk8-turns-00000000001', 'exchange', '{"conversationId": "turns", "prompt": "?"}', 3) - 'details',
          '{"sqlstate": "PT409", "code": "run_state_conflict"}', 'after the last index a derived one is 409: it never wraps to a negative or smaller index');
SELECT is(pg_temp.conv_refused('acme/atk8-turns-00000000001', 'exchange', '{"conversationId": "turns", "prompt": "?", "turnIndex": 2147483647}', 3) - 'details',
          '{"sqlstate": "PT409", "code": "run_state_conflict"}', '... and so is the last index again');
SELECT is(pg_temp.conversation('turns') -> 'last_turn_index', '2147483647', '... the conversation stays at its last index');

/* ------------------------------------------------------------------
 * Resource burn through a conversation request (the engine) and through
 * an answer (any token holder): deep or cyclic outcomeSchema, an oversized
 * prompt, an overlong conversationId, a catastrophic pattern.  Each is
 * refused with a 400 before it costs more than its bound.
 * ------------------------------------------------------------------ */

DO $$ BEGIN
  PERFORM pg_temp.run('acme/atk8-burn-000000000001');
  PERFORM pg_temp.conv('acme/atk8-burn-000000000001', 'start', jsonb_build_object('conversationId', repeat(U&'\+01F600', 256)));
  PERFORM pg_temp.answer('acme/atk8-burn-000000000001', 'null');
END $$;
SELECT is(pg_temp.conversation(repeat(U&'\+01F600', 256)) ->> 'state', 'open',
          'a conversationId of 256 four-byte characters (the most) is opened: its key fits the index');
SELECT is(pg_temp.conv_refused('acme/atk8-burn-000000000001', 'exchange', jsonb_build_object('conversationId', repeat(U&'\+01F600', 257), 'prompt', '?'), 1)
            #>> '{details,field}', 'data.conversationId', '... one of 257 is 400');
SELECT is(pg_temp.conv_refused('acme/atk8-burn-000000000001', 'exchange', jsonb_build_object('conversationId', repeat(U&'\+01F600', 256), 'prompt', '?',
            'outcomeSchema', (repeat('{"not": ', 3000) || '{}' || repeat('}', 3000))::jsonb), 1) ->> 'code',
          'validation_error', 'an outcomeSchema nested 3000 deep is 400, no stack overflow');
SELECT is(pg_temp.conv_refused('acme/atk8-burn-000000000001', 'exchange', jsonb_build_object('conversationId', repeat(U&'\+01F600', 256), 'prompt', '?',
            'outcomeSchema', '{"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/b"}, {"$ref": "#/$defs/b"}]},
                                         "b": {"anyOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}'::jsonb), 1)
            #>> '{details,field}',
          'data.outcomeSchema', 'a cyclic, fanning-out outcomeSchema is 400 data.outcomeSchema when raised');
SELECT is(pg_temp.conv_refused('acme/atk8-burn-000000000001', 'exchange', jsonb_build_object('conversationId', repeat(U&'\+01F600', 256), 'prompt', repeat('p', 2 * 1024 * 1024)), 1)
            #>> '{details,setting}',
          'openwop.max_payload_size', 'a 2 MB prompt is 400 against openwop.max_payload_size');
SELECT is(pg_temp.conv('acme/atk8-burn-000000000001', 'exchange', jsonb_build_object('conversationId', repeat(U&'\+01F600', 256), 'prompt', '?',
            'outcomeSchema', '{"type": "array", "items": {"type": "string", "pattern": "^(a+)+$"}}'::jsonb), 1) ->> 'status',
          'interrupted', 'a turn whose outcomeSchema has a catastrophic pattern is raised (the pattern is bounded when applied)');
DO $$ BEGIN PERFORM openwop.add_signing_key('atk8', 'example-secret-do-not-use'::bytea); END $$;
CREATE TEMP TABLE burn_token AS
  SELECT openwop.mint_interrupt_token(interrupt_id) AS token FROM openwop.open_interrupts WHERE run_id = 'acme/atk8-burn-000000000001';
SELECT is(pg_temp.refusal(format('SELECT openwop.resolve_interrupt_by_token(%L, %L)', (SELECT token FROM burn_token),
            (SELECT jsonb_agg(repeat('a', 30) || 'b') FROM generate_series(1, 1000)))) #>> '{details,errors,0,keyword}',
          'pattern', 'a token holder''s thousand backtracking strings are refused once the match budget is spent (400), the turn still waits');

/* ------------------------------------------------------------------
 * A token holder through PostgREST (web_anon: no JWT, the token is the
 * credential) answers a turn: outcomeSchema binds that surface as it binds
 * resolve_interrupt, and a refused answer completes no turn.
 * ------------------------------------------------------------------ */

DO $$ BEGIN
  PERFORM pg_temp.run('acme/atk8-anon-000000000001');
  PERFORM pg_temp.conv('acme/atk8-anon-000000000001', 'start', '{"conversationId": "anon-turn"}');
  PERFORM pg_temp.answer('acme/atk8-anon-000000000001', 'null');
  PERFORM pg_temp.conv('acme/atk8-anon-000000000001', 'exchange', '{"conversationId": "anon-turn", "prompt": "Which order?",
      "outcomeSchema": {"type": "object", "required": ["orderId"], "additionalProperties": false, "properties": {"orderId": {"type": "integer"}}}}', 1);
END $$;
CREATE TEMP TABLE anon_token AS
  SELECT openwop.mint_interrupt_token(interrupt_id) AS token FROM openwop.open_interrupts WHERE run_id = 'acme/atk8-anon-000000000001';
SELECT is(pg_temp.api(format('SELECT openwop_api."resolveInterruptByToken"(%L)',
            jsonb_build_object('token', (SELECT token FROM anon_token), 'resumeValue', v)::text)) #>> '{body,error}',
          'validation_error', format('web_anon: an answer %s outside the turn''s outcomeSchema is 400 through resolveInterruptByToken', v))
  FROM unnest(ARRAY['{"orderId": "7"}', '{"orderId": 7, "admin": true}', '{}', '7', 'null', '[{"orderId": 7}]']::jsonb[]) v;
SELECT is(pg_pt.count, 0::bigint, '... and no refused answer completed a turn')
  FROM (SELECT count(*) FROM openwop.events WHERE run_id = 'acme/atk8-anon-000000000001' AND type = 'conversation.exchanged') pg_pt;
SELECT is(pg_temp.api(format('SELECT openwop_api."resolveInterruptByToken"(%L)',
            jsonb_build_object('token', (SELECT token FROM anon_token), 'resumeValue', '{"orderId": 7}'::jsonb)::text)) #>> '{body,status}',
          'resolved', '... one that matches resolves the turn');
SELECT is((SELECT payload -> 'outcome' FROM openwop.events WHERE run_id = 'acme/atk8-anon-000000000001' AND type = 'conversation.exchanged'),
          '{"orderId": 7}', '... its outcome is the answer that matched');

/* ------------------------------------------------------------------
 * A JWT approver of another tenant looks for acme's conversation
 * interrupts: not in its inbox, FlowDrop refuses the id (403) or leaves it
 * out of a list, and the run-scoped resolve is 403.
 * ------------------------------------------------------------------ */

CREATE TEMP TABLE acme_turn AS
  SELECT interrupt_id FROM openwop.open_interrupts WHERE run_id = 'acme/atk8-owner-00000000001' AND node_id = 'talk';
SELECT is(pg_temp.as_request('{"sub": "mallory", "tenant": "globex", "scope": "approvals:respond"}',
            $$SELECT to_jsonb(count(*)) FROM openwop.pending_interrupts WHERE run_id LIKE 'acme/%'$$),
          '0', 'JWT of globex: no acme conversation interrupt in its inbox');
SELECT is(pg_temp.as_request('{"sub": "mallory", "tenant": "globex", "scope": "approvals:respond"}',
            format('SELECT pg_temp.refusal(%L)', format('SELECT openwop.flowdrop_interrupt(%L)', (SELECT interrupt_id FROM acme_turn)))) ->> 'code',
          'id_tenant_mismatch', '... FlowDrop refuses the id (403)');
SELECT is(pg_temp.as_request('{"sub": "mallory", "tenant": "globex", "scope": "approvals:respond"}',
            format($$SELECT openwop.flowdrop_interrupts(ARRAY[%L])::jsonb$$, (SELECT interrupt_id FROM acme_turn))),
          '[]', '... and leaves it out of a list');
SELECT is(pg_temp.as_request('{"sub": "mallory", "tenant": "globex", "scope": "approvals:respond"}',
            $$SELECT pg_temp.refusal($q$SELECT openwop.resolve_interrupt('acme/atk8-owner-00000000001', 'talk', '1')$q$)$$) ->> 'code',
          'id_tenant_mismatch', '... and cannot answer the turn');

/* ------------------------------------------------------------------
 * The new table: no role but the owner reaches openwop.conversations,
 * nothing serves it over HTTP, and pg_dump keeps its rows.
 * ------------------------------------------------------------------ */

SELECT is((SELECT count(*)::int FROM aclexplode((SELECT relacl FROM pg_class WHERE oid = 'openwop.conversations'::regclass))
            WHERE grantee <> (SELECT relowner FROM pg_class WHERE oid = 'openwop.conversations'::regclass)),
          0, 'openwop.conversations: no privilege is granted to any role but its owner');
SELECT ok(NOT has_table_privilege(r, 'openwop.conversations', p), format('%s has no %s on openwop.conversations', r, p))
  FROM unnest(ARRAY['public', 'pg_monitor', 'openwop_approver', 'openwop_tap_atk_cb', 'openwop_tap_atk_engine']) r,
       unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'REFERENCES', 'TRIGGER']) p;
SELECT is((SELECT count(*)::int FROM pg_depend d JOIN pg_rewrite w ON d.classid = 'pg_rewrite'::regclass AND d.objid = w.oid
            WHERE d.refobjid = 'openwop.conversations'::regclass),
          0, 'no view reads openwop.conversations (none in openwop_api serves it)');
SELECT ok((SELECT 'openwop.conversations'::regclass = ANY (extconfig) FROM pg_extension WHERE extname = 'openwop_interrupt'),
          'openwop.conversations is a configuration table: pg_dump keeps its rows');

/* ------------------------------------------------------------------
 * confirm_credential, reached another way than by its grant.
 * ------------------------------------------------------------------ */

SELECT pg_temp.cred_run('acme/atk8-cred-000000000001');
-- the callback's login wraps it in a SECURITY DEFINER function and lends that to a bystander
SET LOCAL ROLE openwop_tap_atk_cb;
CREATE FUNCTION openwop_tap_atk.lend(r text, n text) RETURNS jsonb LANGUAGE sql SECURITY DEFINER AS $$ SELECT openwop.confirm_credential(r, n) $$;
GRANT EXECUTE ON FUNCTION openwop_tap_atk.lend(text, text) TO openwop_tap_atk_by;
RESET ROLE;
SELECT is(pg_temp.as_login('openwop_tap_atk_by', 'acme', $$SELECT openwop_tap_atk.lend('acme/atk8-cred-000000000001', 'cred')$$)
            - 'message',
          '{"sqlstate": "PT403", "code": "forbidden", "details": {"context": "a SECURITY DEFINER function"}}',
          'a SECURITY DEFINER wrapper of confirm_credential lends nothing: no caller is trusted inside one (403)');
SELECT is(pg_temp.as_login('openwop_tap_atk_cb', 'acme', $$SELECT openwop_tap_atk.lend('acme/atk8-cred-000000000001', 'cred')$$) ->> 'code',
          'forbidden', '... not even to the callback''s own login');
SELECT is((SELECT status FROM openwop.interrupts WHERE run_id = 'acme/atk8-cred-000000000001'), 'pending', '... the credential still waits');
-- bind the C entry point to a function of one's own
SELECT is(pg_temp.as_login('openwop_tap_atk_by', 'acme',
            $$SELECT pg_temp.refusal($q$CREATE FUNCTION openwop_tap_atk.mine(text, text, text) RETURNS jsonb
                                         AS '$libdir/openwop_interrupt', 'ow_confirm_credential' LANGUAGE c$q$)$$) ->> 'sqlstate',
          '42501', 'a role with CREATE cannot bind ow_confirm_credential to a function of its own (C is untrusted)');
SELECT is(ARRAY(SELECT p.oid::regprocedure::text FROM pg_proc p WHERE p.prosrc = 'ow_confirm_credential' ORDER BY 1),
          ARRAY['openwop.confirm_credential(text,text,text)'], 'one SQL function reaches ow_confirm_credential: confirm_credential itself');
SELECT is(ARRAY(SELECT a.grantee::regrole::text FROM pg_proc p, aclexplode(p.proacl) a
                 WHERE p.oid = 'openwop.confirm_credential(text,text,text)'::regprocedure AND a.grantee <> p.proowner ORDER BY 1),
          ARRAY['openwop_tap_atk_cb'], '... and EXECUTE on it is held by the login the DBA granted it to, no other');
SELECT is(pg_temp.as_request('{"sub": "alice", "tenant": "acme", "scope": "approvals:respond", "role": "web_approver"}',
            $$SELECT to_jsonb(has_function_privilege('openwop_approver', 'openwop.confirm_credential(text,text,text)', 'EXECUTE'))$$),
          'false', 'approvals:respond gives no right to confirm (the approver role holds no EXECUTE)');

/* ------------------------------------------------------------------
 * "authorized" in every other shape, and the Idempotency-Key of one
 * surface replayed on the other: each is refused or acts anew, never a
 * confirmation or another caller's stored response.
 * ------------------------------------------------------------------ */

SELECT pg_temp.cred_run('acme/atk8-cred-000000000002');
SELECT is(pg_temp.refusal(format('SELECT openwop.resolve_interrupt(%L, %L, %L)', 'acme/atk8-cred-000000000002', 'cred', v)) ->> 'code',
          'validation_error', format('a caller''s %s is 400', v))
  FROM unnest(ARRAY['{"outcome": "authorized", "scope": "repo"}', '"authorized"', '{"outcome": ["authorized"]}', '{"outcome": "Authorized"}',
                    '{"outcome": "authorized "}', '{"outcome": {"authorized": true}}', '{}', '[]', 'null']::jsonb[]) v;
SELECT is(pg_temp.api(format('SELECT openwop_api."resolveInterruptByRun"(%L)',
            jsonb_build_object('runId', 'acme/atk8-cred-000000000002', 'nodeId', 'cred', 'resumeValue', '{"outcome": "authorized"}'::jsonb)::text)) #>> '{body,error}',
          'validation_error', '... and through resolveInterruptByRun');
SELECT is((SELECT status FROM openwop.interrupts WHERE run_id = 'acme/atk8-cred-000000000002'), 'pending', '... the credential still waits');
-- a key used to decline, then given to confirm_credential: a new request there, refused because the interrupt is resolved
SELECT is(openwop.resolve_interrupt('acme/atk8-cred-000000000002', 'cred', '{"outcome": "declined"}', 'atk8-shared-key-00000000001') ->> 'status',
          'resolved', 'a decline with an Idempotency-Key');
SELECT is(pg_temp.as_login('openwop_tap_atk_cb', 'acme',
            $$SELECT openwop.confirm_credential('acme/atk8-cred-000000000002', 'cred', 'atk8-shared-key-00000000001')$$) ->> 'code',
          'interrupt_already_resolved', '... the same key on confirm_credential replays nothing of it: 409');
-- and the other way round, by one caller on both surfaces
SELECT pg_temp.cred_run('acme/atk8-cred-000000000003');
SELECT is(openwop.confirm_credential('acme/atk8-cred-000000000003', 'cred', 'atk8-shared-key-00000000002') ->> 'status', 'resolved',
          'a confirmation with an Idempotency-Key');
SELECT is(pg_temp.refusal($$SELECT openwop.resolve_interrupt('acme/atk8-cred-000000000003', 'cred', '{"outcome": "declined"}', 'atk8-shared-key-00000000002')$$) ->> 'code',
          'interrupt_already_resolved', '... the same key on resolve_interrupt is no replay of the confirmation: 409');
SELECT is((SELECT array_agg(payload -> 'resumeValue' ->> 'outcome' ORDER BY run_id) FROM openwop.events
            WHERE run_id IN ('acme/atk8-cred-000000000002', 'acme/atk8-cred-000000000003') AND type = 'interrupt.resolved'),
          ARRAY['declined', 'authorized'], '... each credential was resolved once, as its first surface said');
-- confirm_credential on a conversation interrupt: 409, naming the kind
SELECT is(pg_temp.as_login('openwop_tap_atk_cb', 'acme',
            $$SELECT openwop.confirm_credential('acme/atk8-anon-000000000001', 'talk')$$) ->> 'code',
          'interrupt_already_resolved', 'confirm_credential on a node whose turn was answered is 409');
SELECT is(pg_temp.as_login('openwop_tap_atk_cb', 'acme',
            $$SELECT openwop.confirm_credential('acme/atk8-owner-00000000001', 'talk')$$) #>> '{details,kind}',
          'conversation.exchange', 'confirm_credential on a pending conversation turn is 409 naming its kind, the turn untouched');

/* ------------------------------------------------------------------
 * openwop.credential_interrupts, set by a login that is not a superuser,
 * every way PostgreSQL offers.
 * ------------------------------------------------------------------ */

SELECT is(pg_temp.as_login('openwop_tap_atk_by', 'acme', format('SELECT pg_temp.refusal(%L)', s)) ->> 'sqlstate',
          '42501', format('a non-superuser cannot: %s', s))
  FROM unnest(ARRAY['SET openwop.credential_interrupts = off',
                    'SET LOCAL openwop.credential_interrupts = on',
                    'SELECT set_config(''openwop.credential_interrupts'', ''off'', false)',
                    'ALTER ROLE openwop_tap_atk_by SET openwop.credential_interrupts = off',
                    'CREATE FUNCTION openwop_tap_atk.flip() RETURNS int LANGUAGE sql SET openwop.credential_interrupts = off AS ''SELECT 1''']) s;
-- not even as the owner of the database
DO $$ BEGIN EXECUTE format('ALTER DATABASE %I OWNER TO openwop_tap_atk_by', current_database()); END $$;
SELECT is(pg_temp.as_login('openwop_tap_atk_by', 'acme',
            format('SELECT pg_temp.refusal(%L)', format('ALTER DATABASE %I SET openwop.credential_interrupts = off', current_database())))
            ->> 'sqlstate',
          '42501', 'a non-superuser cannot set it for its own database (ALTER DATABASE ... SET)');

/* ------------------------------------------------------------------
 * Read-only: a step or an answer in a read-only transaction is refused
 * before anything is read or written.
 * ------------------------------------------------------------------ */

DO $$ BEGIN
  PERFORM pg_temp.run('acme/atk8-ro-00000000000001');
  PERFORM pg_temp.conv('acme/atk8-ro-00000000000001', 'start', '{"conversationId": "read-only"}');
END $$;
CREATE TEMP TABLE ro_before AS SELECT pg_temp.conversation('read-only') AS row;
SAVEPOINT read_only;
SET LOCAL transaction_read_only = on;
SELECT is(pg_temp.refusal($$SELECT pg_temp.answer('acme/atk8-ro-00000000000001', 'null')$$) ->> 'sqlstate', '25006',
          'read-only: the answer to a conversation.start is refused');
SELECT is(pg_temp.conv_refused('acme/atk8-ro-00000000000001', 'exchange', '{"conversationId": "read-only", "prompt": "?"}', 1) ->> 'sqlstate', '25006',
          'read-only: a turn is refused');
ROLLBACK TO read_only;
SELECT is(pg_temp.conversation('read-only'), (SELECT row FROM ro_before), '... and the conversation is unchanged');

SELECT * FROM finish();
ROLLBACK;
