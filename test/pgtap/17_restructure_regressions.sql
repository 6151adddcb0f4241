-- Properties the restructuring (30fc80c..) was not to change, pinned where
-- no other file did: statements carrying a secret keep generic plans; the
-- token surface and the administration functions decide (or skip) the
-- caller exactly as before, and check the token or the admin before any
-- argument; every read and write is keyed by the caller's tenant, ids
-- refused from the string alone; the row-count checks that turn into
-- refusals; each OpenWOP code's SQLSTATE; large values built after the
-- call bracket ends; and a 0.3.0 schema with this library escalating only
-- through the API, once.

-- The plans of a session of its own (secret_plans.psql), taken before this
-- file's transaction begins, newlines folded so that no printed byte list
-- is cut by the 80-column wrapping of debug_print_plan.
\set secret_plans `f=test/pgtap/secret_plans.psql; [ -f "$f" ] || f=secret_plans.psql; psql -X -q -h :'HOST' -p :'PORT' -U :'USER' -d :'DBNAME' -f "$f" 2>&1 | tr -s ' \n\t' '   '`

BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir refusal.psql
\ir callers.psql
\ir events.psql
CREATE EXTENSION IF NOT EXISTS pgcrypto;
-- the jsonb a statement returns, or what a client sees of its refusal (so a regression reads "not ok", not an abort)
CREATE FUNCTION pg_temp.attempt(sql text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE r jsonb;
BEGIN
  EXECUTE sql INTO r;
  RETURN r;
EXCEPTION WHEN OTHERS THEN
  RETURN pg_temp.refusal(sql);
END $$;

/* ------------------------------------------------------------------
 * Statements that carry a secret use generic plans (spi.c, OwQuery.secret)
 * ------------------------------------------------------------------ */

-- how debug_print_plan prints the first 12 bytes of a text constant
CREATE FUNCTION pg_temp.bytes12(s text) RETURNS text LANGUAGE sql AS $$
  SELECT string_agg(get_byte(convert_to(s, 'UTF8'), i)::text, ' ' ORDER BY i) FROM generate_series(0, least(11, octet_length(convert_to(s, 'UTF8')) - 1)) i
$$;
CREATE TEMP TABLE plans AS SELECT :'secret_plans'::text AS log;
SELECT ok((SELECT log LIKE '%LOG: plan:%' AND log NOT LIKE '%ERROR:%' FROM plans),
          'the session of secret_plans.psql ran every call, with debug_print_plan on');
SELECT ok((SELECT position(pg_temp.bytes12('acme/secret-plans-run-0001') IN log) > 0 FROM plans),
          '... and its custom plans print the run id they were given (the method sees a folded parameter)');
SELECT ok((SELECT position(pg_temp.bytes12('plans.key') IN log) > 0 FROM plans),
          '... while the top-level calls hold only the name of the setting that carries a secret');
SELECT is((SELECT position(pg_temp.bytes12('plansRunIdemKey-000000001') IN log) FROM plans), 0,
          'idempotency_statements_keep_generic_plans: no plan of a run-scoped resolve (claim, complete, replay, mismatch, expired record) holds its Idempotency-Key');
SELECT is((SELECT position(pg_temp.bytes12('plansTokIdemKey-000000001') IN log) FROM plans), 0,
          '... nor any plan of a token resolve and its replay');
SELECT is((SELECT position(pg_temp.bytes12('plans-signing-secret-0123456789') IN log) FROM plans), 0,
          'signing_key_insert_keeps_a_generic_plan: no plan of add_signing_key holds the secret');
DROP TABLE plans;

/* ------------------------------------------------------------------
 * Fixtures: a signing key with a known secret, gates in acme and in other
 * ------------------------------------------------------------------ */

SELECT is(openwop.add_signing_key('k-rv17', 'restructure-secret-0123456789'::bytea), 'k-rv17', 'a signing key with a known secret');
CREATE FUNCTION pg_temp.pgcrypto_token(claims text) RETURNS text LANGUAGE sql AS $$
  SELECT 'ow2.hs256.k-rv17.' || p || '.' || encode(hmac('hs256.k-rv17.' || p, 'restructure-secret-0123456789', 'sha256'), 'hex')
    FROM (SELECT rtrim(translate(encode(convert_to(claims, 'UTF8'), 'base64'), E'+/\n', '-_'), '=') AS p) x
$$;
CREATE FUNCTION pg_temp.claims(i text, r text, n text) RETURNS text LANGUAGE sql AS $$
  SELECT json_build_object('i', i, 'r', r, 'n', n, 'e',
           to_char((clock_timestamp() + interval '1 hour') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
           't', 'resolve')::text
$$;
CREATE FUNCTION pg_temp.gate(run text, data jsonb DEFAULT '{}') RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  PERFORM openwop.create_run('restructure', jsonb_build_object('runId', run));
  PERFORM openwop.start_node(run, 'gate');
  RETURN openwop.interrupt(run, 'gate', jsonb_build_object('kind', 'approval', 'data',
           jsonb_build_object('artifactId', 'a', 'artifactType', 'doc', 'title', 'T',
                              'actions', '["accept", "reject", "ask"]'::jsonb) || data)) #>> '{metadata,interrupt,id}';
END $$;
CREATE TEMP TABLE g (name text PRIMARY KEY, run text, iid text);
INSERT INTO g SELECT 'acme1', 'acme/rv17-gate-run-00001', pg_temp.gate('acme/rv17-gate-run-00001');
INSERT INTO g SELECT 'acme2', 'acme/rv17-gate-run-00002', pg_temp.gate('acme/rv17-gate-run-00002');
INSERT INTO g SELECT 'acme3', 'acme/rv17-gate-run-00003', pg_temp.gate('acme/rv17-gate-run-00003', '{"requiredApprovals": 2}');
SET LOCAL openwop.tenant = 'other';
INSERT INTO g SELECT 'other1', 'other/rv17-gate-run-00001', pg_temp.gate('other/rv17-gate-run-00001');
DO $$ BEGIN PERFORM openwop.create_run('other-shared', '{"runId": "other/rv17-shared-run-0001"}'); END $$;
SET LOCAL openwop.tenant = 'acme';
DO $$ BEGIN PERFORM openwop.create_run('acme-shared', '{"runId": "acme/rv17-shared-run-0001"}'); END $$;
CREATE TEMP TABLE t AS
SELECT (SELECT openwop.mint_interrupt_token(iid) FROM g WHERE name = 'acme1') AS acme1,
       (SELECT openwop.mint_interrupt_token(iid) FROM g WHERE name = 'acme2') AS acme2,
       (SELECT openwop.mint_interrupt_token(iid, 'inspect') FROM g WHERE name = 'acme1') AS acme1_inspect;
SET LOCAL openwop.tenant = 'other';
ALTER TABLE t ADD COLUMN other1 text;
UPDATE t SET other1 = (SELECT openwop.mint_interrupt_token(iid) FROM g WHERE name = 'other1');
SET LOCAL openwop.tenant = 'acme';

-- logins: mallory is an engine bound to tenant other, with EXECUTE on everything
CREATE ROLE rv17_mallory LOGIN;
GRANT USAGE ON SCHEMA openwop TO rv17_mallory;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop TO rv17_mallory;
CREATE FUNCTION pg_temp.status(gname text) RETURNS text LANGUAGE sql AS $$
  SELECT i.status FROM openwop.interrupts i JOIN g ON g.iid = i.interrupt_id WHERE g.name = gname
$$;

/* ------------------------------------------------------------------
 * The token surface: the token is the caller, checked before anything
 * (tokens.c: ow_call_enter without ow_caller, as before)
 * ------------------------------------------------------------------ */

SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt_by_token('ow2.hs256.k-rv17.e30.00', NULL) $$) ->> 'code',
          'interrupt_token_invalid', 'resolve_interrupt_by_token checks the token before its other arguments (a bad token and no value: 401)');
SELECT is(pg_temp.refusal(format('SELECT openwop.resolve_interrupt_by_token(%L, NULL)', (SELECT acme1 FROM t))),
          '{"sqlstate": "PT400", "code": "validation_error", "details": {"field": "resumeValue"}}',
          '... and a valid token without a value is 400 resumeValue');
SELECT is(pg_temp.refusal(format('SELECT openwop.resolve_interrupt_by_token(%L, %L, %L)', (SELECT acme1 FROM t), '{"action": "accept"}', 'short')) ->> 'code',
          'idempotency_key_invalid', '... then the key grammar');

-- a request session whose claims name no subject: every caller-deciding function refuses it ...
SELECT is(pg_temp.refusal($$ SELECT pg_temp.as_request('{"sub": "has space"}', 'SELECT openwop.current_caller()') $$) ->> 'code',
          'identity_unresolvable', 'a request session with an unusable sub names no caller');
SELECT is(pg_temp.refusal(format('SELECT pg_temp.as_request(%L, %L)', '{"sub": "has space"}',
            format('SELECT openwop.run_snapshot(%L)', 'acme/rv17-gate-run-00001'))) ->> 'code',
          'identity_unresolvable', '... and run_snapshot refuses it');
-- ... while the token surface, whose caller is the token, serves it
SELECT is(pg_temp.attempt(format('SELECT pg_temp.as_request(%L, %L)', '{"sub": "has space"}', format('SELECT openwop.verify_interrupt_token(%L)', (SELECT acme1 FROM t)))) ->> 'interruptId',
          (SELECT iid FROM g WHERE name = 'acme1'),
          'token_surface_needs_no_caller: verify_interrupt_token works in a session whose claims name no subject');
SELECT is(pg_temp.attempt(format('SELECT pg_temp.as_request(%L, %L)', '{"sub": "has space"}', format('SELECT openwop.inspect_interrupt(%L)', (SELECT acme1_inspect FROM t)))) ->> 'kind',
          'approval', '... so does inspect_interrupt');
SELECT is(pg_temp.attempt(format('SELECT pg_temp.as_request(%L, %L)', '{"sub": "has space"}',
            format('SELECT openwop.resolve_interrupt_by_token(%L, %L)', (SELECT acme1 FROM t), '{"action": "accept"}'))) -> 'resolvedBy',
          '{"kind": "anonymous", "lane": "anonymous", "issuer": "urn:openwop-interrupt:anon-surface", "tenant": "acme", "subjectId": "token-holder"}',
          '... and resolve_interrupt_by_token, recording the token holder in the interrupt''s tenant');

-- a login bound to another tenant: the token decides the tenant, the binding plays no part
SELECT is(pg_temp.as_login('rv17_mallory', 'other', format('SELECT openwop.verify_interrupt_token(%L)', (SELECT acme2 FROM t))) ->> 'runId',
          'acme/rv17-gate-run-00002', 'a login bound to tenant other verifies a token of acme');
SELECT is(pg_temp.as_login('rv17_mallory', 'other', format('SELECT openwop.resolve_interrupt_by_token(%L, %L)', (SELECT acme2 FROM t), '{"action": "reject"}'))
            #>> '{resolvedBy,tenant}',
          'acme', '... and resolves it as the token holder of acme, never in its own tenant');
SELECT is(pg_temp.as_login('rv17_mallory', 'other', format('SELECT openwop.run_snapshot(%L)', 'acme/rv17-gate-run-00002')) ->> 'code',
          'id_tenant_mismatch', '... while reading that run by id stays refused to it');

/* ------------------------------------------------------------------
 * Tokens across tenants
 * ------------------------------------------------------------------ */

SELECT is(pg_temp.refusal(format('SELECT openwop.inspect_interrupt(%L)',
            pg_temp.pgcrypto_token(pg_temp.claims((SELECT iid FROM g WHERE name = 'other1'), 'acme/rv17-gate-run-00003', 'gate')))) ->> 'code',
          'not_found', 'a signed token naming other''s interrupt with an acme run reads nothing (404)');
SELECT is(pg_temp.refusal(format('SELECT openwop.resolve_interrupt_by_token(%L, %L)',
            pg_temp.pgcrypto_token(pg_temp.claims((SELECT iid FROM g WHERE name = 'acme3'), 'other/rv17-gate-run-00001', 'gate')), '{"action": "accept"}')) ->> 'code',
          'not_found', 'a signed token naming an acme interrupt with other''s run resolves nothing (404)');
SELECT is(pg_temp.refusal(format('SELECT openwop.resolve_interrupt_by_token(%L, %L)',
            pg_temp.pgcrypto_token(pg_temp.claims('other/' || split_part((SELECT iid FROM g WHERE name = 'acme3'), '/', 2),
                                                 'acme/rv17-gate-run-00003', 'gate')), '{"action": "accept"}')) ->> 'code',
          'not_found', 'a signed token naming an acme interrupt''s opaque id under tenant other resolves nothing (404)');
SELECT is(pg_temp.status('acme3') || ',' || pg_temp.status('other1'), 'pending,pending', '... and both gates are still pending');
SELECT is(pg_temp.refusal($$ SELECT openwop.mint_interrupt_token('other/rv17-no-such-interrupt-01') $$) ->> 'code',
          'id_tenant_mismatch', 'minting for another tenant''s interrupt id is refused from the string alone, existing or not (403, not 404)');
SELECT is(pg_temp.refusal($$ SELECT openwop.mint_interrupt_token('acme/rv17-no-such-interrupt-01') $$) ->> 'code',
          'not_found', '... an unknown id of the caller''s tenant is 404');

-- the idempotency record of a token resolve belongs to the token's tenant
CREATE TEMP TABLE other_resolve AS
SELECT pg_temp.as_login('rv17_mallory', 'other', format('SELECT openwop.resolve_interrupt_by_token(%L, %L, %L)',
         (SELECT other1 FROM t), '{"action": "ask"}', 'rv17-shared-idempotency-key-01')) AS r;
SELECT is((SELECT split_part(r ->> 'interruptId', '/', 1) FROM other_resolve) || ',' || (SELECT tenant FROM openwop.idempotency_keys WHERE key = 'rv17-shared-idempotency-key-01'),
          'other,other', 'a token of tenant other answers other''s gate and keys its record in tenant other, whoever calls');
SELECT is(openwop.resolve_interrupt('acme/rv17-gate-run-00003', 'gate', '{"action": "ask"}', 'rv17-shared-idempotency-key-01') ? 'idempotentReplay',
          false, '... so the same key in acme is a new request, not a replay of other''s response');
SELECT is(pg_temp.as_login('rv17_mallory', 'other', format('SELECT openwop.resolve_interrupt_by_token(%L, %L, %L)',
            (SELECT other1 FROM t), '{"action": "ask"}', 'rv17-shared-idempotency-key-01')) - 'idempotentReplay',
          (SELECT r FROM other_resolve), '... while the token replays its own response');

/* ------------------------------------------------------------------
 * Administration: the admin check first, the caller only when needed
 * ------------------------------------------------------------------ */

SELECT is(pg_temp.as_login('rv17_mallory', 'other', 'SELECT to_jsonb(openwop.add_signing_key(NULL, NULL))') ->> 'code',
          'forbidden', 'add_signing_key refuses a non-admin before looking at its arguments (403, not 400)');
SELECT is(pg_temp.as_login('rv17_mallory', 'other', 'SELECT to_jsonb(openwop.retire_signing_key(NULL))') ->> 'code',
          'forbidden', '... retire_signing_key too');
SELECT is(pg_temp.as_login('rv17_mallory', 'other', $$ SELECT to_jsonb(openwop.add_group_member(NULL, NULL, 'not a tenant')) $$) ->> 'code',
          'forbidden', '... add_group_member too');
SELECT is(pg_temp.as_login('rv17_mallory', 'other', $$ SELECT to_jsonb(openwop.remove_group_member(NULL, NULL, 'not a tenant')) $$) ->> 'code',
          'forbidden', '... remove_group_member too');
SELECT is(pg_temp.refusal($$ SELECT openwop.add_group_member(NULL, NULL, 'not a tenant') $$) -> 'details',
          '{"field": "tenant"}', 'for the admin, the tenant argument is checked first');
SELECT is(pg_temp.attempt($q$ SELECT pg_temp.as_request('{"sub": "has space"}', $$ SELECT to_jsonb(openwop.add_group_member('rv17-admins', 'erin', 'acme')) $$) $q$),
          'true', 'group_admin_with_tenant_needs_no_caller: with a tenant named, an admin needs no resolvable caller');
SELECT is(pg_temp.refusal($q$ SELECT pg_temp.as_request('{"sub": "has space"}', $$ SELECT to_jsonb(openwop.add_group_member('rv17-admins', 'frank')) $$) $q$) ->> 'code',
          'identity_unresolvable', '... without one, the caller''s tenant is needed, and decided first');
SELECT is((SELECT count(*) FROM openwop.group_members WHERE group_ref = 'rv17-admins'), 1::bigint, '... which added nobody');

/* ------------------------------------------------------------------
 * Row counts that are refusals (ow_exec returns the rows processed)
 * ------------------------------------------------------------------ */

SELECT is(pg_temp.refusal($$ SELECT openwop.add_signing_key('k-rv17', 'another-secret-0123456789'::bytea) $$) -> 'details',
          '{"field": "kid"}', 'a kid added twice is refused (the insert added no row)');
SELECT is(pg_temp.refusal($$ SELECT openwop.retire_signing_key('k-rv17-unknown') $$) ->> 'code',
          'not_found', 'retiring an unknown kid is 404 (the update changed no row)');
SELECT is(openwop.add_signing_key('k-rv17-retire'), 'k-rv17-retire', 'a key to retire');
SELECT lives_ok($$ SELECT openwop.retire_signing_key('k-rv17-retire') $$, '... retired once');
SELECT is(pg_temp.refusal($$ SELECT openwop.retire_signing_key('k-rv17-retire') $$) ->> 'code',
          'not_found', '... and a second retirement finds no active key');
SELECT is(openwop.add_group_member('rv17-group', 'alice', 'acme')::text || openwop.add_group_member('rv17-group', 'alice', 'acme')::text
          || openwop.remove_group_member('rv17-group', 'alice', 'acme')::text || openwop.remove_group_member('rv17-group', 'alice', 'acme')::text,
          'truefalsetruefalse', 'group membership reports whether a row changed: added, already there, removed, not there');
SET LOCAL openwop.max_votes_per_voter = 2;
DO $$ BEGIN PERFORM pg_temp.gate('acme/rv17-votes-run-00001', '{"requiredApprovals": 2}'); END $$;
DO $$ BEGIN
  PERFORM openwop.resolve_interrupt('acme/rv17-votes-run-00001', 'gate', '{"action": "ask"}');
  PERFORM openwop.resolve_interrupt('acme/rv17-votes-run-00001', 'gate', '{"action": "ask"}');
END $$;
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/rv17-votes-run-00001', 'gate', '{"action": "accept"}') $$) #>> '{details,limit}',
          '2', 'an answer past openwop.max_votes_per_voter is refused (the vote insert added no row)');
RESET openwop.max_votes_per_voter;

/* ------------------------------------------------------------------
 * Tenancy: every read and write keyed by the caller's tenant
 * ------------------------------------------------------------------ */

SELECT is(openwop.run_snapshot('acme/rv17-shared-run-0001') ->> 'workflowId', 'acme-shared',
          'the same opaque id in two tenants: acme reads its own run');
SELECT is(pg_temp.refusal($$ SELECT openwop.run_snapshot('other/rv17-shared-run-0001') $$) ->> 'code', 'id_tenant_mismatch',
          '... never other''s');
SELECT is(pg_temp.refusal($$ SELECT openwop.run_snapshot('other~2Frv17-shared-run-0001') $$) ->> 'code', 'id_tenant_mismatch',
          '... nor through the wire form of its id');
SELECT is(pg_temp.refusal($$ SELECT openwop.run_snapshot('other/rv17-missing-run-000001') $$) ->> 'code', 'id_tenant_mismatch',
          '... and an id of other that does not exist is refused the same way (no existence oracle)');
SELECT is(pg_temp.refusal($$ SELECT count(*) FROM openwop.events('other/rv17-shared-run-0001') $$) ->> 'code', 'id_tenant_mismatch',
          'events() refuses other''s run');
SELECT is(pg_temp.refusal($$ SELECT openwop.start_node('other/rv17-shared-run-0001', 'n') $$) ->> 'code', 'id_tenant_mismatch',
          'start_node refuses other''s run');
SELECT is(pg_temp.refusal($$ SELECT openwop.record_agent_decision('other/rv17-shared-run-0001', 'n', 'a', 0.1) $$) ->> 'code', 'id_tenant_mismatch',
          'record_agent_decision refuses other''s run');
SELECT is(pg_temp.refusal($$ SELECT openwop.interrupt('other/rv17-shared-run-0001', 'n', '{}') $$) ->> 'code', 'id_tenant_mismatch',
          'interrupt refuses other''s run');
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('other/rv17-gate-run-00001', 'gate', '{"action": "accept"}') $$) ->> 'code', 'id_tenant_mismatch',
          'resolve_interrupt refuses other''s run');
SELECT is((SELECT count(*) FROM openwop.events WHERE run_id = 'other/rv17-shared-run-0001'), 1::bigint, '... and other''s run kept its one event');
SELECT is(pg_temp.status('other1'), 'pending', '... and other''s gate is still pending');

-- group membership is per tenant
DO $$ BEGIN PERFORM pg_temp.gate('acme/rv17-group-run-00001', '{"approverGroupRefs": ["rv17-reviewers"]}'); END $$;
SELECT ok(openwop.add_group_member('rv17-reviewers', 'alice', 'other'), 'alice joins group rv17-reviewers of tenant other');
SELECT is(pg_temp.refusal($q$ SELECT pg_temp.as_request('{"sub": "alice", "tenant": "acme", "scope": "approvals:respond"}',
            $$ SELECT openwop.resolve_interrupt('acme/rv17-group-run-00001', 'gate', '{"action": "accept"}') $$) $q$) ->> 'code',
          'forbidden', 'a member of a group in tenant other is not a member of that group in acme');
SELECT ok(openwop.add_group_member('rv17-reviewers', 'alice', 'acme'), '... and then the group of the same name in acme');
SELECT is(pg_temp.as_request('{"sub": "alice", "tenant": "acme", "scope": "approvals:respond"}',
            $$ SELECT openwop.resolve_interrupt('acme/rv17-group-run-00001', 'gate', '{"action": "accept"}') $$) ->> 'status',
          'resolved', '... once a member in acme, she decides the gate');

/* ------------------------------------------------------------------
 * The SQLSTATE of each OpenWOP code: PT followed by its HTTP status (errors.c)
 * ------------------------------------------------------------------ */

DO $$ BEGIN
  PERFORM openwop.create_run('restructure', '{"runId": "acme/rv17-ended-run-00001"}');
  PERFORM openwop.cancel_run('acme/rv17-ended-run-00001');
  PERFORM openwop.resolve_interrupt('acme/rv17-gate-run-00003', 'gate', '{"action": "accept"}', 'rv17-mismatch-key-00000001');
END $$;
CREATE TEMP TABLE inspect3 AS SELECT openwop.mint_interrupt_token((SELECT iid FROM g WHERE name = 'acme3'), 'inspect') AS token;
CREATE TEMP TABLE codes (code text, sqlstate text, sql text);
INSERT INTO codes VALUES
  ('validation_error', 'PT400', $$ SELECT openwop.create_run('not a workflow id') $$),
  ('idempotency_key_invalid', 'PT400', $$ SELECT openwop.resolve_interrupt('acme/rv17-gate-run-00003', 'gate', '{"action": "accept"}', 'short') $$),
  ('identity_unresolvable', 'PT401', $$ SELECT pg_temp.as_request('{"sub": "has space"}', 'SELECT openwop.current_caller()') $$),
  ('interrupt_token_invalid', 'PT401', $$ SELECT openwop.inspect_interrupt('not-a-token') $$),
  ('forbidden', 'PT403', $$ SELECT openwop.resolve_interrupt_by_token((SELECT token FROM inspect3), '{"action": "accept"}') $$),
  ('id_tenant_mismatch', 'PT403', $$ SELECT openwop.run_snapshot('other/rv17-shared-run-0001') $$),
  ('not_found', 'PT404', $$ SELECT openwop.run_snapshot('acme/rv17-missing-run-000001') $$),
  ('idempotency_key_mismatch', 'PT409', $$ SELECT openwop.resolve_interrupt('acme/rv17-gate-run-00003', 'gate', '{"action": "reject"}', 'rv17-mismatch-key-00000001') $$),
  ('interrupt_already_resolved', 'PT409', $$ SELECT openwop.resolve_interrupt('acme/rv17-gate-run-00001', 'gate', '{"action": "accept"}') $$),
  ('run_state_conflict', 'PT409', $$ SELECT openwop.create_run('restructure', '{"runId": "acme/rv17-shared-run-0001"}') $$),
  ('run_terminal', 'PT409', $$ SELECT openwop.start_node('acme/rv17-ended-run-00001', 'n') $$),
  ('capability_required', 'PT422', $$ DO $x$ BEGIN UPDATE openwop.signing_keys SET state = 'retired', retired_at = now(), verify_until = now() WHERE state = 'active';
                                         PERFORM openwop.mint_interrupt_token((SELECT iid FROM g WHERE name = 'acme3'), 'inspect'); END $x$ $$);
SELECT is(pg_temp.refusal(sql) - 'details', jsonb_build_object('sqlstate', sqlstate, 'code', code),
          format('%s is SQLSTATE %s', code, sqlstate)) FROM codes ORDER BY sqlstate, code;
-- interrupt_expired: a token that outlived its lifetime
CREATE TEMP TABLE short_token AS SELECT openwop.mint_interrupt_token((SELECT iid FROM g WHERE name = 'acme3'), 'inspect', '1 millisecond') AS token;
DO $$ BEGIN PERFORM pg_sleep(0.05); END $$;
SELECT is(pg_temp.refusal(format('SELECT openwop.inspect_interrupt(%L)', (SELECT token FROM short_token))) - 'details',
          '{"sqlstate": "PT410", "code": "interrupt_expired"}', 'interrupt_expired is SQLSTATE PT410');

/* ------------------------------------------------------------------
 * Large values read from the table and returned after the call bracket
 * ------------------------------------------------------------------ */

CREATE TEMP TABLE big AS SELECT jsonb_build_object('blob', string_agg(md5(i::text), '' ORDER BY i)) AS v FROM generate_series(1, 9000) i;
SELECT ok((SELECT length(v::text) > 280000 FROM big), 'a value of some 290 kB (stored out of line)');
DO $$ BEGIN
  PERFORM openwop.create_run('restructure', jsonb_build_object('runId', 'acme/rv17-big-run-000001', 'metadata', (SELECT v FROM big)));
  PERFORM openwop.start_node('acme/rv17-big-run-000001', 'work');
  PERFORM openwop.complete_node('acme/rv17-big-run-000001', 'work', (SELECT v FROM big));
  PERFORM openwop.start_node('acme/rv17-big-run-000001', 'gate');
  PERFORM openwop.interrupt('acme/rv17-big-run-000001', 'gate', jsonb_build_object('kind', 'custom', 'data',
            jsonb_build_object('customKind', 'k', 'payload', (SELECT v FROM big))));
END $$;
SELECT is(openwop.run_snapshot('acme/rv17-big-run-000001') -> 'metadata', (SELECT v FROM big),
          'run_snapshot returns a large metadata intact (read after the bracket ends, before SPI is released)');
SELECT is((SELECT e #> '{payload,outputs}' FROM openwop.events('acme/rv17-big-run-000001') e WHERE e ->> 'type' = 'node.completed'),
          (SELECT v FROM big), 'events() returns large outputs intact');
SELECT is(openwop.inspect_interrupt(openwop.mint_interrupt_token(
            (SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/rv17-big-run-000001'), 'inspect')) #> '{data,payload}',
          (SELECT v FROM big), 'inspect_interrupt returns a large payload intact');
SELECT is(openwop.interrupt('acme/rv17-big-run-000001', 'gate', jsonb_build_object('kind', 'custom', 'data',
            jsonb_build_object('customKind', 'k', 'payload', (SELECT v FROM big)))) #> '{results,work}',
          (SELECT v FROM big), 'a replayed interrupt() returns the completed prefix intact');

/* ------------------------------------------------------------------
 * record_agent_decision refuses what it refused
 * ------------------------------------------------------------------ */

DO $$ BEGIN
  PERFORM openwop.create_run('restructure', '{"runId": "acme/rv17-agent-run-00001"}');
  PERFORM openwop.start_node('acme/rv17-agent-run-00001', 'agent');
END $$;
SELECT is(pg_temp.refusal($$ SELECT openwop.record_agent_decision('acme/rv17-agent-run-00001', 'agent', 'a', 1.5) $$) -> 'details',
          '{"field": "confidence"}', 'a confidence outside [0, 1] is 400');
SELECT is(pg_temp.refusal($$ SELECT openwop.record_agent_decision('acme/rv17-agent-run-00001', 'bad node', 'a', 0.1) $$) -> 'details',
          '{"field": "nodeId"}', 'a bad node id is 400');
SELECT is(pg_temp.refusal($$ SELECT openwop.record_agent_decision('acme/rv17-agent-run-00001', 'never', 'a', 0.1) $$) ->> 'code',
          'not_found', 'a node never started is 404');
SELECT is(openwop.record_agent_decision('acme/rv17-agent-run-00001', 'agent', 'a', 0.1) ->> 'escalated', 'true', 'a low confidence escalates');
SELECT is(pg_temp.refusal($$ SELECT openwop.record_agent_decision('acme/rv17-agent-run-00001', 'agent', 'a', 0.9) $$) ->> 'code',
          'run_state_conflict', '... after which any decision on the suspended node is 409');
SELECT is(pg_temp.refusal($$ SELECT openwop.record_agent_decision('acme/rv17-ended-run-00001', 'agent', 'a', 0.1) $$) ->> 'code',
          'run_terminal', 'a decision on an ended run is 409 run_terminal');

/* ------------------------------------------------------------------
 * Schema 0.3.0 with this library: its escalation trigger does nothing,
 * and the API waits for the update (everything above is dropped with the
 * extension; all rolled back)
 * ------------------------------------------------------------------ */

DROP EXTENSION openwop_interrupt;
CREATE EXTENSION openwop_interrupt VERSION '0.3.0';
SELECT is((SELECT tgenabled FROM pg_trigger WHERE tgname = 'events_escalate_low_confidence'), 'A',
          'schema 0.3.0 binds the escalation trigger, enabled ALWAYS');
INSERT INTO openwop.runs (tenant, run_id, workflow_id, status, owner, event_prefix, next_sequence)
VALUES ('acme', 'acme/rv17-old-schema-run-01', 'old-schema', 'running', '{"subjectId": "alice"}', 'rv17oldschema01', 0);
SELECT is(pg_temp.refusal($$ INSERT INTO openwop.events (tenant, run_id, sequence, type, node_id, payload)
  VALUES ('acme', 'acme/rv17-old-schema-run-01', 0, 'agent.decided', 'agent', '{"agentId": "planner", "confidence": 0.1, "decision": null}') $$), NULL,
          'on schema 0.3.0 a superuser may INSERT an agent.decided row (history) ...');
SELECT is((SELECT count(*) FROM openwop.interrupts WHERE run_id = 'acme/rv17-old-schema-run-01'), 0::bigint,
          'old_schema_direct_insert_never_escalates: ... and the row below the threshold raises nothing (the old trigger does nothing)');
SET LOCAL session_replication_role = replica;
SELECT is(pg_temp.refusal($$ INSERT INTO openwop.events (tenant, run_id, sequence, type, node_id, payload)
  VALUES ('acme', 'acme/rv17-old-schema-run-01', 1, 'agent.decided', 'agent', '{"agentId": "planner", "confidence": 0.1, "decision": null}') $$), NULL,
          'and one more as a replica');
RESET session_replication_role;
SELECT is((SELECT count(*) FROM openwop.interrupts WHERE run_id = 'acme/rv17-old-schema-run-01'), 0::bigint,
          '... nor as a replica would (the trigger fires ALWAYS and does nothing)');
SELECT is(pg_temp.refusal($$ SELECT openwop.record_agent_decision('acme/rv17-old-schema-run-01', 'agent', 'planner', 0.1) $$) ->> 'sqlstate',
          '55000', '... and record_agent_decision waits for ALTER EXTENSION ... UPDATE (pgtap/16_old_schema.sql)');

SELECT * FROM finish();
ROLLBACK;
