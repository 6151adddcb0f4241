-- Caller model and privileges: an application role drives runs through the
-- functions but cannot touch the tables; PostgREST's per-request settings
-- name the principal and tenant in a request session; the statements
-- inside cannot be hijacked through search_path.  (The attacks on identity
-- are in 09_identity.sql.)
BEGIN;
SELECT * FROM no_plan();

CREATE ROLE openwop_tap_app;
CREATE ROLE openwop_tap_stranger;
GRANT USAGE ON SCHEMA openwop TO openwop_tap_app, openwop_tap_stranger;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop TO openwop_tap_app;
GRANT CREATE ON SCHEMA public TO openwop_tap_app;
CREATE TEMP TABLE hijack_outcome (outcome text);
CREATE TEMP TABLE claims_outcome (label text, r jsonb);
CREATE ROLE openwop_tap_authenticator NOINHERIT;
GRANT openwop_tap_app TO openwop_tap_authenticator;
-- pgTAP keeps its counters in temp tables: let the test roles write them
DO $$
DECLARE r record;
BEGIN
  FOR r IN SELECT c.oid::regclass AS rel FROM pg_class c
            WHERE c.relnamespace = pg_my_temp_schema() AND c.relkind IN ('r', 'S') LOOP
    EXECUTE format('GRANT ALL ON %s TO openwop_tap_app, openwop_tap_stranger', r.rel);
  END LOOP;
END $$;

SET LOCAL ROLE openwop_tap_app;
SET LOCAL openwop.tenant = 'acme';
SELECT is(openwop.create_run('priv', '{"runId": "acme/priv-run-0000001"}') ->> 'status', 'running',
          'an application role with EXECUTE creates a run');
SELECT is(openwop.run_snapshot('acme/priv-run-0000001') #>> '{owner,subject,subjectId}', session_user::text,
          'the principal of a SQL session is its login, whatever role it has SET');
SELECT throws_ok($$ SELECT * FROM openwop.runs $$, '42501', NULL, 'it cannot read the runs table');
SELECT throws_ok($$ SELECT * FROM openwop.events $$, '42501', NULL, 'it cannot read the event log directly');
SELECT throws_ok($$ SELECT * FROM openwop.conversations $$, '42501', NULL, 'it cannot read the conversations');
SELECT throws_ok($$ INSERT INTO openwop.conversations (tenant, conversation_id, run_id)
                    VALUES ('acme', 'hijacked', 'acme/priv-run-0000001') $$, '42501', NULL,
                 'it cannot take a conversation id behind the API');
SELECT throws_ok($$ INSERT INTO openwop.events (tenant, run_id, sequence, type, payload)
                    VALUES ('acme', 'acme/priv-run-0000001', 99, 'run.completed', '{}') $$,
                 '42501', NULL, 'it cannot forge an event');
SELECT throws_ok($$ UPDATE openwop.runs SET status = 'completed' $$, '42501', NULL,
                 'it cannot change a run behind the API');
SELECT throws_ok($$ SELECT secret FROM openwop.signing_keys $$, '42501', NULL,
                 'it cannot read a signing secret');
SELECT throws_ok($$ SHOW openwop.key_encryption_key_file $$, '42501', NULL,
                 'it cannot read where the key-encryption key is');

-- a malicious "=" earlier on search_path does not change what the API reads
-- (pgTAP itself would be fooled by it, so the outcome is recorded first)
CREATE FUNCTION public.always_true(text, text) RETURNS boolean LANGUAGE sql AS 'SELECT true';
CREATE OPERATOR public.= (LEFTARG = text, RIGHTARG = text, FUNCTION = public.always_true);
SET LOCAL search_path = public, pg_catalog;
DO $$
BEGIN
  PERFORM openwop.run_snapshot('acme/priv-run-9999999');
  INSERT INTO pg_temp.hijack_outcome VALUES ('answered');
EXCEPTION WHEN OTHERS THEN
  INSERT INTO pg_temp.hijack_outcome VALUES (SQLSTATE);
END $$;
RESET search_path;
RESET ROLE;
SELECT is((SELECT outcome FROM pg_temp.hijack_outcome), 'PT404',
          'the API''s statements use pg_catalog operators whatever search_path says');

-- a role without EXECUTE is refused by PostgreSQL itself
SET LOCAL ROLE openwop_tap_stranger;
SELECT throws_ok($$ SELECT openwop.create_run('priv') $$, '42501', NULL,
                 'a role without EXECUTE cannot call the API');
RESET ROLE;

-- PostgREST: the authenticator's session, SET ROLE plus request.jwt.claims per request
SET LOCAL openwop.jwt_session_role = 'openwop_tap_authenticator';
SET LOCAL openwop.bound_tenant = '*';   -- the authenticator serves many tenants
SET LOCAL SESSION AUTHORIZATION openwop_tap_authenticator;
SET LOCAL ROLE openwop_tap_app;
SET LOCAL request.jwt.claims = '{"role": "openwop_tap_app", "sub": "alice@example.org", "tenant": "initech"}';
SELECT is(openwop.create_run('priv', '{"runId": "initech/priv-run-0000001"}') ->> 'runId',
          'initech/priv-run-0000001', 'the tenant comes from the JWT claim');
SELECT is(openwop.run_snapshot('initech/priv-run-0000001') -> 'owner',
          '{"tenant": "initech", "subject": {"issuer": "urn:openwop-interrupt:jwt", "subjectId": "alice@example.org",
                                             "tenant": "initech", "lane": "oauth2", "kind": "user"}}',
          'the principal is the sub claim, a Subject');
SELECT throws_ok($$ SELECT openwop.run_snapshot('acme/priv-run-0000001') $$, 'PT403', NULL,
                 'the claim''s tenant cannot reach another tenant''s run');
RESET ROLE;
RESET SESSION AUTHORIZATION;
RESET openwop.bound_tenant;
RESET request.jwt.claims;
RESET openwop.jwt_session_role;

-- request.jwt.claims count only from a trusted session user
SET LOCAL openwop.jwt_session_role = 'openwop_tap_authenticator';
SET LOCAL openwop.bound_tenant = '*';   -- the authenticator serves many tenants
SET LOCAL SESSION AUTHORIZATION openwop_tap_authenticator;
SET LOCAL ROLE openwop_tap_app;
SET LOCAL request.jwt.claims = '{"sub": "alice@example.org", "tenant": "initech"}';
INSERT INTO claims_outcome SELECT 'authenticator', openwop.create_run('priv', '{"runId": "initech/priv-run-0000002"}');
RESET ROLE;
RESET SESSION AUTHORIZATION;
RESET openwop.bound_tenant;
SET LOCAL openwop.bound_tenant = 'acme';
SET LOCAL SESSION AUTHORIZATION openwop_tap_app;
SET LOCAL openwop.tenant = 'acme';
SET LOCAL request.jwt.claims = '{"sub": "alice@example.org", "tenant": "initech", "scope": "approvals:respond"}';
INSERT INTO claims_outcome SELECT 'forged', openwop.create_run('priv', '{"runId": "acme/priv-run-0000003"}');
RESET SESSION AUTHORIZATION;
RESET openwop.bound_tenant;
RESET request.jwt.claims;
SELECT is((SELECT openwop.run_snapshot('initech/priv-run-0000002') #> '{owner,subject,subjectId}' FROM (SELECT set_config('openwop.tenant', 'initech', true)) t),
          '"alice@example.org"',
          'claims set in a session of openwop.jwt_session_role name the principal and tenant');
SELECT is((SELECT openwop.run_snapshot('acme/priv-run-0000003') #> '{owner,subject}' FROM (SELECT set_config('openwop.tenant', 'acme', true)) t),
          '{"issuer": "urn:openwop-interrupt:session", "subjectId": "openwop_tap_app", "tenant": "acme", "lane": "session", "kind": "user"}',
          'claims a plain login sets for itself are ignored: it stays its login');

-- superusers cannot rewrite history either
SELECT throws_ok($$ DELETE FROM openwop.events $$, '42501',
                 'the openwop event log is append-only', 'the owner cannot delete events');

-- group administration is for the extension owner only, whatever EXECUTE says
SET LOCAL ROLE openwop_tap_app;
DO $$
BEGIN
  PERFORM openwop.add_group_member('openwop-override', 'openwop_tap_app');
  INSERT INTO pg_temp.hijack_outcome VALUES ('group:added');
EXCEPTION WHEN OTHERS THEN
  INSERT INTO pg_temp.hijack_outcome VALUES ('group:' || SQLSTATE);
END $$;
RESET ROLE;
SELECT is((SELECT outcome FROM pg_temp.hijack_outcome WHERE outcome LIKE 'group:%'), 'group:PT403',
          'an application role cannot make itself an override principal');
SELECT * FROM finish();
ROLLBACK;
