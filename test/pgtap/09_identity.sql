-- Identity the referee can trust (docs/security.md).  Each test is named
-- after the attack it guards against: claims count only in a request
-- session, never in a security-restricted operation, a SECURITY DEFINER
-- function of a request session or merely a superuser's session; one login
-- is one voter; the host fills decidedBy and decidedAt; a bound login
-- cannot leave its tenant; a JWT caller's scope is its scope claim; an
-- idempotency key belongs to its subject; every recorded actor is a Subject.
-- (Autovacuum, VACUUM FULL: test/checks/identity_maintenance.sh; the
-- key-encryption key: test/checks/key_encryption.sh.)
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir refusal.psql
\ir callers.psql

-- a gate in a tenant, raised by the superuser test login (which may choose its tenant)
CREATE FUNCTION pg_temp.gate(run text, data jsonb DEFAULT '{}') RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('openwop.tenant', split_part(run, '/', 1), true);
  PERFORM openwop.create_run('identity', jsonb_build_object('runId', run));
  PERFORM openwop.start_node(run, 'gate');
  PERFORM openwop.interrupt(run, 'gate', jsonb_build_object('kind', 'approval', 'data',
            jsonb_build_object('artifactId', 'a', 'artifactType', 'doc', 'title', 'T',
                               'actions', '["accept", "reject"]'::jsonb) || data));
  PERFORM set_config('openwop.tenant', 'acme', true);
END $$;
-- what the store holds, read directly by the superuser (no tenant in the way)
CREATE FUNCTION pg_temp.gate_of(run text) RETURNS openwop.interrupts LANGUAGE sql AS $$
  SELECT * FROM openwop.interrupts WHERE run_id = run AND node_id = 'gate' ORDER BY requested_sequence DESC LIMIT 1
$$;
CREATE FUNCTION pg_temp.log_size() RETURNS bigint LANGUAGE sql AS $$ SELECT count(*) FROM openwop.events $$;
-- a resolve statement, for as_request and as_login
CREATE FUNCTION pg_temp.resolve_sql(run text, value jsonb, key text DEFAULT NULL) RETURNS text LANGUAGE sql AS $$
  SELECT format('SELECT openwop.resolve_interrupt(%L, %L, %L, %L)', run, 'gate', value, key)
$$;
-- is s a Subject per the OpenWOP schema: closed, required members, lanes and kinds, anonymous both or neither
CREATE FUNCTION pg_temp.is_subject(s jsonb) RETURNS boolean LANGUAGE sql AS $$
  SELECT s IS NOT NULL
     AND (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(s) k) = '{issuer,kind,lane,subjectId,tenant}'
     AND s->>'issuer' ~ '^\S+$' AND length(s->>'issuer') <= 1024
     AND s->>'subjectId' ~ '^[^\s/]+$' AND length(s->>'subjectId') <= 256
     AND s->>'tenant' ~ '^(anon:)?[A-Za-z0-9._~-]{1,128}$'
     AND s->>'lane' IN ('api-key', 'oauth2', 'oidc', 'mtls', 'saml', 'scim', 'ldap', 'workload', 'session', 'anonymous')
     AND s->>'kind' IN ('user', 'agent', 'anonymous', 'workload')
     AND (s->>'kind' = 'anonymous') = (s->>'lane' = 'anonymous')
$$;

/* ------------------------------------------------------------------
 * Claims count only in a request session
 * ------------------------------------------------------------------ */

SET LOCAL request.jwt.claims = '{"sub": "cfo@example.org", "tenant": "acme", "scope": "approvals:respond"}';
SELECT is(openwop.current_caller() #>> '{subject,subjectId}', session_user::text,
          'claims_ignored_in_superuser_session: a superuser''s session is its login, whatever request.jwt.claims says');
RESET request.jwt.claims;

-- mallory, an approver of tenant evil with a schema of her own, writes code that poses as the CFO of acme
CREATE ROLE tap_mallory LOGIN;
GRANT openwop_approver TO tap_mallory;
GRANT USAGE ON SCHEMA openwop TO tap_mallory;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop TO tap_mallory;
CREATE SCHEMA mallory AUTHORIZATION tap_mallory;
SET LOCAL ROLE tap_mallory;
CREATE TABLE mallory.target (run text);
CREATE TABLE mallory.outcome (via text, step text, outcome text);
CREATE TABLE mallory.docs (i int);
INSERT INTO mallory.docs VALUES (1);
-- she tries both: to set the claims, and (whatever became of that) to resolve
CREATE FUNCTION mallory.try_grant() RETURNS void LANGUAGE plpgsql AS $f$
DECLARE run text;
BEGIN
  SELECT t.run INTO run FROM mallory.target t;
  BEGIN
    PERFORM set_config('request.jwt.claims', '{"sub": "cfo@example.org", "tenant": "acme", "scope": "approvals:respond"}', true);
    INSERT INTO mallory.outcome VALUES (current_setting('mallory.via', true), 'claims', 'set');
  EXCEPTION WHEN OTHERS THEN
    INSERT INTO mallory.outcome VALUES (current_setting('mallory.via', true), 'claims', SQLSTATE);
  END;
  BEGIN
    PERFORM openwop.resolve_interrupt(run, 'gate', '{"action": "accept"}');
    INSERT INTO mallory.outcome VALUES (current_setting('mallory.via', true), 'resolve', 'granted');
  EXCEPTION WHEN OTHERS THEN
    INSERT INTO mallory.outcome VALUES (current_setting('mallory.via', true), 'resolve', SQLSTATE);
  END;
END $f$;
-- "IMMUTABLE", so that an index may use it
CREATE FUNCTION mallory.grant_cfo(i int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $f$
BEGIN
  PERFORM mallory.try_grant();
  RETURN i;
END $f$;
CREATE FUNCTION mallory.grant_cfo_trigger() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  PERFORM mallory.grant_cfo(NEW.i);
  RETURN NEW;
END $f$;
-- its argument read from a table: a constant one would be folded once into
-- a plan PostgreSQL 18 keeps for the SQL function, and the second call run nothing
CREATE FUNCTION mallory.definer() RETURNS int LANGUAGE sql SECURITY DEFINER AS $f$ SELECT mallory.grant_cfo(i) FROM mallory.docs $f$;
CREATE MATERIALIZED VIEW mallory.mv AS SELECT mallory.grant_cfo(i) AS i FROM mallory.docs WITH NO DATA;
RESET ROLE;
SELECT pg_temp.gate('acme/id-control-0000001', '{"approversList": ["cfo@example.org"]}');
SELECT pg_temp.gate('acme/id-cfo-00000000001', '{"approversList": ["cfo@example.org"]}');

-- the session becomes a request session (its login belongs to openwop.jwt_session_role), as PostgREST's is
SET LOCAL openwop.jwt_session_role = 'openwop_tap_authenticator';
INSERT INTO mallory.target VALUES ('acme/id-control-0000001');
SET LOCAL mallory.via = 'a direct call';
DO $$ BEGIN PERFORM mallory.grant_cfo(1); END $$;
SELECT is((pg_temp.gate_of('acme/id-control-0000001')).resolved_by ->> 'subjectId', 'cfo@example.org',
          'control: called directly in a request session, the claims it sets would count (so the refusals below are real)');

UPDATE mallory.target SET run = 'acme/id-cfo-00000000001';
SET LOCAL mallory.via = 'CREATE INDEX';
CREATE INDEX docs_by_grant ON mallory.docs (mallory.grant_cfo(i));
SET LOCAL mallory.via = 'ANALYZE';
ANALYZE mallory.docs;
SET LOCAL mallory.via = 'REINDEX';
REINDEX TABLE mallory.docs;
SET LOCAL mallory.via = 'REFRESH MATERIALIZED VIEW';
REFRESH MATERIALIZED VIEW mallory.mv;
SET LOCAL mallory.via = 'SECURITY DEFINER';
DO $$ BEGIN PERFORM mallory.definer(); END $$;
-- in each: the claims cannot be set (42501), and no caller is named (PT403)
SELECT is((SELECT array_agg(DISTINCT step || ' ' || outcome ORDER BY step || ' ' || outcome) FROM mallory.outcome WHERE via = 'CREATE INDEX'),
          '{"claims 42501","resolve PT403"}', 'claims_refused_in_create_index: an index expression cannot speak for anyone');
SELECT is((SELECT array_agg(DISTINCT step || ' ' || outcome ORDER BY step || ' ' || outcome) FROM mallory.outcome WHERE via = 'ANALYZE'),
          '{"claims 42501","resolve PT403"}', 'claims_refused_in_analyze: nor when ANALYZE evaluates it');
SELECT is((SELECT array_agg(DISTINCT step || ' ' || outcome ORDER BY step || ' ' || outcome) FROM mallory.outcome WHERE via = 'REINDEX'),
          '{"claims 42501","resolve PT403"}', 'claims_refused_in_reindex: nor when REINDEX does');
SELECT is((SELECT array_agg(DISTINCT step || ' ' || outcome ORDER BY step || ' ' || outcome) FROM mallory.outcome WHERE via = 'REFRESH MATERIALIZED VIEW'),
          '{"claims 42501","resolve PT403"}', 'claims_refused_in_refresh_materialized_view: nor a materialized view''s query');
SELECT is((SELECT array_agg(DISTINCT step || ' ' || outcome ORDER BY step || ' ' || outcome) FROM mallory.outcome WHERE via = 'SECURITY DEFINER'),
          '{"claims 42501","resolve PT403"}', 'claims_refused_in_security_definer: nor a SECURITY DEFINER function called in a request session');
RESET openwop.jwt_session_role;
-- a trigger of hers fires in the superuser's (non-request) session: it cannot set claims, and the login is the caller
DROP INDEX mallory.docs_by_grant;
CREATE TRIGGER docs_grant AFTER INSERT ON mallory.docs FOR EACH ROW EXECUTE FUNCTION mallory.grant_cfo_trigger();
SET LOCAL mallory.via = 'a trigger';
INSERT INTO mallory.docs VALUES (2);
SELECT is((SELECT array_agg(DISTINCT step || ' ' || outcome ORDER BY step || ' ' || outcome) FROM mallory.outcome WHERE via = 'a trigger'),
          '{"claims 42501","resolve PT403"}',
          'claims_refused_in_trigger: a trigger cannot set the claims; in the superuser''s session its call is the superuser''s login, which the CFO-only gate refuses');
SELECT is((pg_temp.gate_of('acme/id-cfo-00000000001')).status, 'pending',
          '... and the CFO-only gate is still pending after all of it');
-- a CHECK constraint of hers, validated in the superuser's session: the same as the trigger
SET LOCAL mallory.via = 'a constraint';
ALTER TABLE mallory.docs ADD CONSTRAINT docs_grant CHECK (mallory.grant_cfo(i) > 0);
SELECT is((SELECT array_agg(DISTINCT step || ' ' || outcome ORDER BY step || ' ' || outcome) FROM mallory.outcome WHERE via = 'a constraint'),
          '{"claims set","resolve PT403"}',
          'claims_ignored_in_constraint_of_superuser_session: a constraint expression the superuser validates does not speak for the CFO either');
-- a SECURITY DEFINER function of hers cannot rewrite the claims of the request that calls it
SET LOCAL ROLE tap_mallory;
CREATE FUNCTION mallory.become_cfo() RETURNS int LANGUAGE plpgsql SECURITY DEFINER AS $f$
BEGIN
  PERFORM set_config('request.jwt.claims', '{"sub": "cfo@example.org", "tenant": "acme", "scope": "approvals:respond"}', true);
  RETURN 1;
END $f$;
RESET ROLE;
SELECT is(pg_temp.refusal($$ SELECT pg_temp.as_request('{"sub": "clerk", "tenant": "acme", "scope": "approvals:respond"}',
                                                        'SELECT to_jsonb(mallory.become_cfo())') $$) ->> 'sqlstate', '42501',
          'claims_cannot_be_set_in_security_definer: a SECURITY DEFINER function cannot set request.jwt.claims for the request after it');
CREATE FUNCTION pg_temp.tried_to_become_cfo() RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN
  PERFORM mallory.become_cfo();
  RETURN true;
EXCEPTION WHEN OTHERS THEN
  RETURN true;
END $f$;
SELECT is(pg_temp.as_request('{"sub": "clerk", "tenant": "acme", "scope": "approvals:respond"}',
            $q$ SELECT CASE WHEN pg_temp.tried_to_become_cfo() THEN openwop.current_caller() #> '{subject,subjectId}' END $q$),
          '"clerk"', '... so the request after it is still the clerk''s');
-- ... nor clear them with RESET (which skips the setting's check): the request then names no caller
SET LOCAL ROLE tap_mallory;
CREATE FUNCTION mallory.clear_claims() RETURNS int LANGUAGE plpgsql SECURITY DEFINER AS $f$
BEGIN
  RESET request.jwt.claims;
  RETURN 1;
END $f$;
RESET ROLE;
SELECT is(pg_temp.refusal($$ SELECT pg_temp.as_request('{"sub": "clerk", "tenant": "acme", "scope": "approvals:respond"}',
            'SELECT CASE WHEN mallory.clear_claims() = 1 THEN openwop.current_caller() END') $$),
          '{"sqlstate": "PT403", "code": "forbidden", "details": {"context": "a request whose claims were changed by a SECURITY DEFINER function or a security-restricted operation"}}',
          'claims_reset_in_security_definer_names_no_caller: after a SECURITY DEFINER function reset the claims, no caller is named');
-- claims come only from the session's own SET or set_config: no defaults, no function SET clause
SELECT is(pg_temp.refusal(format('ALTER DATABASE %I SET request.jwt.claims = %L', current_database(), '{"sub": "cfo@example.org"}')) ->> 'sqlstate', '42501',
          'claims_have_no_database_default: a database owner cannot give every session claims');
SELECT is(pg_temp.refusal($$ CREATE FUNCTION mallory.as_cfo() RETURNS int LANGUAGE sql SET request.jwt.claims = '{"sub": "cfo@example.org"}' AS 'SELECT 1' $$) ->> 'sqlstate', '42501',
          'claims_not_from_function_set_clause: a function cannot carry claims in its SET clause');
-- a SQL session calling the API from a SECURITY DEFINER function: the code is its owner's, not the caller's
SET LOCAL mallory.via = 'SECURITY DEFINER in a SQL session';
SELECT is(pg_temp.refusal($$ SELECT mallory.definer() $$) ->> 'code', NULL,
          '(her SECURITY DEFINER function itself runs)');
SELECT is((SELECT array_agg(DISTINCT step || ' ' || outcome ORDER BY step || ' ' || outcome) FROM mallory.outcome WHERE via = 'SECURITY DEFINER in a SQL session'),
          '{"claims 42501","resolve PT403"}', 'api_refused_in_security_definer: a SECURITY DEFINER function names no caller in a plain SQL session either');

/* ------------------------------------------------------------------
 * One person, one vote
 * ------------------------------------------------------------------ */

CREATE ROLE tap_treasury;
CREATE ROLE tap_treasury_ops;
CREATE ROLE tap_treasury_audit;
CREATE ROLE tap_erin LOGIN;
CREATE ROLE tap_frank LOGIN;
GRANT openwop_approver, tap_treasury, tap_treasury_ops, tap_treasury_audit TO tap_erin;
GRANT openwop_approver, tap_treasury_ops TO tap_frank;
GRANT USAGE ON SCHEMA openwop TO tap_erin, tap_frank, tap_treasury, tap_treasury_ops, tap_treasury_audit;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop TO tap_erin, tap_frank, tap_treasury, tap_treasury_ops, tap_treasury_audit;
SELECT pg_temp.gate('acme/id-onelogin-000001', '{"requiredApprovals": 3, "approverRoleRefs": ["tap_treasury", "tap_treasury_ops", "tap_treasury_audit"]}');
CREATE TEMP TABLE erin_votes AS
  SELECT r, pg_temp.as_login('tap_erin', 'acme', pg_temp.resolve_sql('acme/id-onelogin-000001', '{"action": "accept"}'), r) AS answer
    FROM unnest(ARRAY['tap_treasury', 'tap_treasury_ops', 'tap_treasury_audit']) r;
SELECT is((SELECT array_agg(answer -> 'tally' ->> 'voters' ORDER BY r) FROM erin_votes), '{1,1,1}',
          'one_login_one_vote: a login holding k role refs votes k times under k SET ROLEs and is still one voter');
SELECT is((SELECT answer -> 'tally' ->> 'accepts' FROM erin_votes WHERE r = 'tap_treasury_audit'), '1',
          '... one counted accept on a quorum-3 gate');
SELECT is((pg_temp.gate_of('acme/id-onelogin-000001')).status, 'pending', '... and the gate keeps waiting');
SELECT is((SELECT array_agg(DISTINCT voter) FROM openwop.votes WHERE interrupt_id = (pg_temp.gate_of('acme/id-onelogin-000001')).interrupt_id),
          '{tap_erin}', '... every revision recorded under the login');
SELECT is(pg_temp.as_login('tap_erin', 'acme', $$ SELECT openwop.current_caller() -> 'subject' $$, 'tap_treasury'),
          '{"issuer": "urn:openwop-interrupt:session", "subjectId": "tap_erin", "tenant": "acme", "lane": "session", "kind": "user"}',
          'set_session_authorization_names_the_login: SET SESSION AUTHORIZATION then SET ROLE: the subject is the session''s login');
SELECT is(pg_temp.as_login('tap_frank', 'acme', pg_temp.resolve_sql('acme/id-onelogin-000001', '{"action": "accept"}'), 'tap_treasury_ops') -> 'tally' ->> 'voters',
          '2', 'another login is another voter');
SELECT pg_temp.gate('acme/id-roleref-0000001', '{"approverRoleRefs": ["tap_treasury"]}');
SELECT is(pg_temp.as_login('tap_frank', 'acme', pg_temp.resolve_sql('acme/id-roleref-0000001', '{"action": "accept"}')) ->> 'code',
          'forbidden', 'role_refs_use_login_membership: a login that is not a member of the ref role is refused');
-- JWT callers: a subjectId names one person in a tenant, whichever trusted issuer vouches for it
SELECT pg_temp.gate('acme/id-twoiss-0000001', '{"requiredApprovals": 2}');
SELECT is(pg_temp.as_request('{"iss": "https://idp-a.example", "sub": "alice", "tenant": "acme", "scope": "approvals:respond"}',
            pg_temp.resolve_sql('acme/id-twoiss-0000001', '{"action": "accept"}')) -> 'tally' ->> 'voters', '1', 'alice votes through one issuer');
SELECT is(pg_temp.as_request('{"iss": "https://idp-b.example", "sub": "alice", "tenant": "acme", "scope": "approvals:respond"}',
            pg_temp.resolve_sql('acme/id-twoiss-0000001', '{"action": "accept"}')) -> 'tally' ->> 'voters', '1',
          'one_subject_id_one_vote: the same subjectId through another issuer revises that vote, it does not add one');
SELECT pg_temp.gate('acme/id-pinned-0000001', '{"approversList": ["https://idp-a.example/alice"]}');
SELECT is(pg_temp.refusal(format('SELECT pg_temp.as_request(%L, %L)',
            '{"iss": "https://idp-b.example", "sub": "alice", "tenant": "acme", "scope": "approvals:respond"}',
            pg_temp.resolve_sql('acme/id-pinned-0000001', '{"action": "accept"}'))) ->> 'code', 'forbidden',
          'issuer_qualified_ref_pins_issuer: "<issuer>/<subjectId>" refuses the same subjectId from another issuer');
SELECT is(pg_temp.as_request('{"iss": "https://idp-a.example", "sub": "alice", "tenant": "acme", "scope": "approvals:respond"}',
            pg_temp.resolve_sql('acme/id-pinned-0000001', '{"action": "accept"}')) ->> 'decision', 'granted',
          '... and accepts it from the pinned issuer');
SELECT pg_temp.gate('acme/id-pinned-0000002', '{"approversList": ["urn:openwop-interrupt:session/tap_erin"], "requiredApprovals": 2}');
SELECT is(pg_temp.refusal(format('SELECT pg_temp.as_request(%L, %L)',
            '{"iss": "urn:openwop-interrupt", "sub": "session:tap_erin", "tenant": "acme", "scope": "approvals:respond"}',
            pg_temp.resolve_sql('acme/id-pinned-0000002', '{"action": "accept"}'))) ->> 'code', 'identity_unresolvable',
          'jwt_cannot_claim_host_issuer_prefix: not even urn:openwop-interrupt without a colon');
SELECT is(pg_temp.refusal(format('SELECT pg_temp.as_request(%L, %L)',
            '{"iss": "URN:OpenWOP-Interrupt:session", "sub": "tap_erin", "tenant": "acme", "scope": "approvals:respond"}',
            pg_temp.resolve_sql('acme/id-pinned-0000002', '{"action": "accept"}'))) ->> 'code', 'identity_unresolvable',
          '... nor in another case (URNs compare case-insensitively)');
SELECT is(pg_temp.refusal(format('SELECT pg_temp.as_request(%L, %L)',
            '{"iss": "https://idp-a.example", "sub": "urn:openwop-interrupt:session:tap_erin", "tenant": "acme", "scope": "approvals:respond"}',
            pg_temp.resolve_sql('acme/id-pinned-0000002', '{"action": "accept"}'))) ->> 'code', 'forbidden',
          'qualified_ref_never_matches_bare_sub: a sub spelled like a pinned ref does not satisfy it');
SELECT is(pg_temp.as_login('tap_erin', 'acme', pg_temp.resolve_sql('acme/id-pinned-0000002', '{"action": "accept"}')) -> 'tally' ->> 'voters', '1',
          '... while the pinned login does');

/* ------------------------------------------------------------------
 * The host records who decided, and when
 * ------------------------------------------------------------------ */

SELECT pg_temp.gate('acme/id-forged-0000001', '{"approversList": ["bob", "cfo@example.org"]}');
SELECT is(pg_temp.refusal(format('SELECT pg_temp.as_request(%L, %L)', '{"sub": "bob", "tenant": "acme", "scope": "approvals:respond"}',
            pg_temp.resolve_sql('acme/id-forged-0000001', '{"action": "accept", "decidedBy": "cfo@example.org"}'))),
          '{"sqlstate": "PT400", "code": "validation_error", "details": {"field": "resumeValue.decidedBy"}}',
          'forged_decided_by_refused: bob cannot record his approval as the CFO''s');
SELECT is((pg_temp.gate_of('acme/id-forged-0000001')).status, 'pending', '... and nothing was recorded');
CREATE TEMP TABLE bob_answer AS
  SELECT pg_temp.as_request('{"sub": "bob", "tenant": "acme", "scope": "approvals:respond"}',
           pg_temp.resolve_sql('acme/id-forged-0000001', '{"action": "accept", "decidedBy": "bob", "decidedAt": "1999-01-01T00:00:00Z"}')) AS r;
SELECT is((pg_temp.gate_of('acme/id-forged-0000001')).resume_value ->> 'decidedBy', 'bob',
          'decided_by_filled_by_host: a caller may repeat its own decidedBy');
SELECT ok(((pg_temp.gate_of('acme/id-forged-0000001')).resume_value ->> 'decidedAt')::timestamptz
             BETWEEN date_trunc('milliseconds', now()) AND clock_timestamp(),
          'decided_at_is_host_clock: the host''s clock (when it decided) replaces the caller''s decidedAt');
SELECT is((SELECT r -> 'resolvedBy' FROM bob_answer),
          '{"issuer": "urn:openwop-interrupt:jwt", "subjectId": "bob", "tenant": "acme", "lane": "oauth2", "kind": "user"}',
          'resolve_response_carries_resolved_by: the answer names the Subject that decided');
SELECT pg_temp.gate('acme/id-qualified-000001');
SELECT is(pg_temp.as_login('tap_erin', 'acme', pg_temp.resolve_sql('acme/id-qualified-000001',
            '{"action": "accept", "decidedBy": "urn:openwop-interrupt:session/tap_erin"}')) ->> 'decision', 'granted',
          'decided_by_qualified_form: "<issuer>/<subjectId>" names the caller too');

/* ------------------------------------------------------------------
 * Tenants bound by the DBA
 * ------------------------------------------------------------------ */

CREATE ROLE tap_evil_engine LOGIN;
GRANT openwop_approver TO tap_evil_engine;
GRANT USAGE ON SCHEMA openwop TO tap_evil_engine;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop TO tap_evil_engine;
CREATE ROLE openwop_token_issuer;
GRANT openwop_token_issuer TO tap_evil_engine;
DO $$ BEGIN PERFORM openwop.add_signing_key('k-identity', 'identity-secret-0123456789'::bytea); END $$;
SELECT pg_temp.gate('acme/id-tenant-0000001');
SELECT pg_temp.gate('evil/id-tenant-0000001');
DO $$ BEGIN PERFORM openwop.start_node('acme/id-tenant-0000001', 'work'); END $$;
CREATE TEMP TABLE before AS SELECT pg_temp.log_size() AS events;
SET LOCAL openwop.tenant = '';
CREATE TEMP TABLE aimed (what text, sql text);
INSERT INTO aimed VALUES
  ('create_run by id', $$ SELECT openwop.create_run('x', '{"runId": "acme/id-evil-run-00001"}') $$),
  ('create_run by options.tenant', $$ SELECT openwop.create_run('x', '{"tenant": "acme"}') $$),
  ('start_node', $$ SELECT openwop.start_node('acme/id-tenant-0000001', 'other') $$),
  ('complete_node', $$ SELECT openwop.complete_node('acme/id-tenant-0000001', 'work') $$),
  ('fail_node', $$ SELECT openwop.fail_node('acme/id-tenant-0000001', 'work', '{"code": "x", "message": "y"}') $$),
  ('complete_run', $$ SELECT openwop.complete_run('acme/id-tenant-0000001') $$),
  ('fail_run', $$ SELECT openwop.fail_run('acme/id-tenant-0000001', '{"code": "x", "message": "y"}') $$),
  ('cancel_run', $$ SELECT openwop.cancel_run('acme/id-tenant-0000001') $$),
  ('run_snapshot', $$ SELECT openwop.run_snapshot('acme/id-tenant-0000001') $$),
  ('events', $$ SELECT jsonb_agg(e) FROM openwop.events('acme/id-tenant-0000001') e $$),
  ('interrupt', $$ SELECT openwop.interrupt('acme/id-tenant-0000001', 'work', '{"kind": "custom", "data": {"customKind": "x"}}') $$),
  ('record_agent_decision', $$ SELECT openwop.record_agent_decision('acme/id-tenant-0000001', 'work', 'agent', 0.1) $$),
  ('resolve_interrupt', $$ SELECT openwop.resolve_interrupt('acme/id-tenant-0000001', 'gate', '{"action": "accept"}') $$),
  ('mint_interrupt_token', format('SELECT to_jsonb(openwop.mint_interrupt_token(%L))', (pg_temp.gate_of('acme/id-tenant-0000001')).interrupt_id));
SELECT is((SELECT array_agg(DISTINCT pg_temp.as_login('tap_evil_engine', 'evil', sql) ->> 'code') FROM aimed), '{id_tenant_mismatch}',
          'bound_login_cannot_act_in_another_tenant: every API function aimed at acme by a login bound to evil is 403 id_tenant_mismatch');
SET LOCAL openwop.tenant = 'acme';
SELECT is((SELECT array_agg(DISTINCT pg_temp.as_login('tap_evil_engine', 'evil', sql) ->> 'code') FROM aimed), '{id_tenant_mismatch}',
          'bound_login_cannot_choose_another_tenant: ... and so is each of them with openwop.tenant set to acme');
SET LOCAL openwop.tenant = '';
SELECT is(pg_temp.log_size(), (SELECT events FROM before), '... and nothing was appended to any log');
SELECT is((SELECT status FROM openwop.runs WHERE run_id = 'acme/id-tenant-0000001'), 'waiting-approval', '... and acme''s run is as it was');
SELECT is(pg_temp.as_login('tap_evil_engine', 'evil', pg_temp.resolve_sql('evil/id-tenant-0000001', '{"action": "accept"}')) ->> 'decision', 'granted',
          'control: in its own tenant the same login decides');
SELECT is(pg_temp.as_login('tap_evil_engine', 'evil', $$ SELECT to_jsonb(set_config('openwop.bound_tenant', 'acme', false)) $$) ->> 'sqlstate',
          '42501', 'binding_cannot_be_changed_by_its_login: set_config is refused');
SELECT is(pg_temp.as_login('tap_evil_engine', 'evil', $$ SELECT to_jsonb(set_config('openwop.bound_tenant', '*', true)) $$) ->> 'sqlstate',
          '42501', '... so is binding itself to every tenant');
SELECT is(pg_temp.as_login('tap_evil_engine', NULL, $$ SELECT openwop.current_caller() -> 'tenant' $$), '"default"',
          'unbound_login_stays_in_default_tenant: a login the DBA did not bind acts in openwop.default_tenant ...');
SET LOCAL openwop.tenant = 'acme';
SELECT is(pg_temp.as_login('tap_evil_engine', NULL, $$ SELECT openwop.run_snapshot('acme/id-tenant-0000001') $$) ->> 'code', 'id_tenant_mismatch',
          '... and openwop.tenant does not move it');
SELECT is(pg_temp.as_login('tap_evil_engine', '*', $$ SELECT openwop.run_snapshot('acme/id-tenant-0000001') -> 'status' $$), '"waiting-approval"',
          'multi_tenant_login_chooses: a login bound to "*" chooses its tenant with openwop.tenant');
SET LOCAL openwop.tenant = '';
SELECT is(pg_temp.as_login('tap_evil_engine', 'evil', $$ SELECT to_jsonb(openwop.sweep()) $$) ->> 'code', 'id_tenant_mismatch',
          'bound_login_cannot_sweep_every_tenant: sweep() applies every tenant''s deadlines, so a login bound to one tenant cannot run it');
SELECT is(pg_temp.as_login('tap_evil_engine', NULL, $$ SELECT to_jsonb(openwop.sweep()) $$) ->> 'code', 'id_tenant_mismatch',
          '... nor can an unbound one');
SELECT is(pg_temp.as_login('tap_evil_engine', '*', $$ SELECT to_jsonb(openwop.sweep()) $$) ->> 'code', NULL,
          '... a login bound to "*" (the scheduler) can');
SELECT is(pg_temp.as_login('tap_evil_engine', 'evil', $$ SELECT to_jsonb(openwop.add_group_member('finance', 'mallory', 'acme')) $$) ->> 'code', 'forbidden',
          'bound_login_cannot_administer_groups: group membership, in any tenant, is the extension owner''s');
SELECT is(pg_temp.as_login('tap_evil_engine', 'evil', $$ SELECT to_jsonb(openwop.remove_group_member('finance', 'dave', 'acme')) $$) ->> 'code', 'forbidden',
          '... removing a member too');
-- tokens: a token is its own credential, for the tenant of its interrupt
SET LOCAL openwop.tenant = 'acme';
CREATE TEMP TABLE acme_token AS SELECT openwop.mint_interrupt_token((pg_temp.gate_of('acme/id-tenant-0000001')).interrupt_id, 'inspect') AS token;
SET LOCAL openwop.tenant = '';
GRANT SELECT ON acme_token TO tap_evil_engine;
SELECT is(pg_temp.as_login('tap_evil_engine', 'evil', $$ SELECT openwop.inspect_interrupt((SELECT token FROM acme_token)) -> 'kind' $$) #>> '{}',
          'approval', 'a token is its own credential: whoever holds it acts on its interrupt, whatever the holder''s binding');
-- request sessions: an authenticator bound to one tenant serves only it
CREATE ROLE tap_authenticator LOGIN;
GRANT openwop_tap_authenticator TO tap_authenticator;
GRANT USAGE ON SCHEMA openwop TO tap_authenticator;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop TO tap_authenticator;
SET LOCAL openwop.jwt_session_role = 'openwop_tap_authenticator';
SET LOCAL request.jwt.claims = '{"sub": "alice", "tenant": "evil"}';
SELECT is(pg_temp.as_login('tap_authenticator', 'acme', $$ SELECT openwop.current_caller() $$) ->> 'code', 'id_tenant_mismatch',
          'bound_authenticator_refuses_other_tenant_claim: a request session bound to acme refuses a JWT naming evil');
SET LOCAL request.jwt.claims = '{"sub": "alice"}';
SELECT is(pg_temp.as_login('tap_authenticator', 'acme', $$ SELECT openwop.current_caller() -> 'tenant' $$), '"acme"',
          '... and puts a JWT that names no tenant in its own');
SET LOCAL request.jwt.claims = '{"sub": "alice", "tenant": "acme"}';
SELECT is(pg_temp.as_login('tap_authenticator', NULL, $$ SELECT openwop.current_caller() $$) ->> 'code', 'id_tenant_mismatch',
          'unbound_authenticator_stays_in_default_tenant: an unbound authenticator cannot let a claim choose a tenant');
SELECT is(pg_temp.as_login('tap_authenticator', '*', $$ SELECT openwop.current_caller() -> 'tenant' $$), '"acme"',
          '... an authenticator bound to "*" lets the claim choose');
RESET request.jwt.claims;
RESET openwop.jwt_session_role;
SET LOCAL openwop.tenant = 'acme';

/* ------------------------------------------------------------------
 * A JWT caller's scope is its scope claim
 * ------------------------------------------------------------------ */

SELECT pg_temp.gate('acme/id-scope-00000001');
SELECT is(pg_temp.refusal(format('SELECT pg_temp.as_request(%L, %L)', '{"sub": "bob", "tenant": "acme", "scope": "openid profile"}',
            pg_temp.resolve_sql('acme/id-scope-00000001', '{"action": "accept"}'))),
          '{"sqlstate": "PT403", "code": "forbidden", "details": {"requiredScope": "approvals:respond"}}',
          'jwt_scope_only_from_claim: a JWT without approvals:respond is refused though the login behind it holds the approver role');
SELECT is(pg_temp.refusal(format('SELECT pg_temp.as_request(%L, %L)', '{"role": "web_anon", "tenant": "acme", "scope": "approvals:respond"}',
            pg_temp.resolve_sql('acme/id-scope-00000001', '{"action": "accept"}'))) ->> 'code', 'forbidden',
          'anonymous_request_has_no_scope: a request with no subject never holds approvals:respond');
SELECT is((pg_temp.gate_of('acme/id-scope-00000001')).status, 'pending', '... and the gate is untouched');

/* ------------------------------------------------------------------
 * An idempotency key belongs to its subject
 * ------------------------------------------------------------------ */

SELECT pg_temp.gate('acme/id-idem-000000001', '{"requiredApprovals": 2}');
SELECT is(pg_temp.as_request('{"sub": "alice", "tenant": "acme", "scope": "approvals:respond"}',
            pg_temp.resolve_sql('acme/id-idem-000000001', '{"action": "accept"}', 'id-idem-key-0000000000000001')) ->> 'counted',
          'true', 'alice votes with an idempotency key');
SELECT is(pg_temp.refusal(format('SELECT pg_temp.as_request(%L, %L)', '{"sub": "bob", "tenant": "acme", "scope": "approvals:respond"}',
            pg_temp.resolve_sql('acme/id-idem-000000001', '{"action": "accept"}', 'id-idem-key-0000000000000001'))),
          '{"sqlstate": "PT409", "code": "idempotency_key_mismatch", "details": {}}',
          'idempotency_key_belongs_to_subject: bob presenting alice''s key gets idempotency_key_mismatch, never her response');
SELECT is((SELECT count(*) FROM openwop.votes WHERE interrupt_id = (pg_temp.gate_of('acme/id-idem-000000001')).interrupt_id), 1::bigint,
          '... and no vote of his was recorded');
SELECT is(pg_temp.as_request('{"sub": "alice", "tenant": "acme", "scope": "approvals:respond"}',
            pg_temp.resolve_sql('acme/id-idem-000000001', '{"action": "accept"}', 'id-idem-key-0000000000000001')) ->> 'idempotentReplay',
          'true', '... while alice''s retry with it is a replay');
SELECT is(pg_temp.as_request('{"sub": "bob", "tenant": "acme", "scope": "approvals:respond"}',
            pg_temp.resolve_sql('acme/id-idem-000000001', '{"action": "accept"}', 'id-idem-key-0000000000000002')) ->> 'decision',
          'granted', '... and bob votes with a key of his own');

/* ------------------------------------------------------------------
 * Every recorded actor is a Subject
 * ------------------------------------------------------------------ */

SELECT ok(pg_temp.is_subject(openwop.run_snapshot('acme/id-tenant-0000001') #> '{owner,subject}'),
          'subject_of_sql_login: the owner of a run created by a login is a Subject (lane session)');
SELECT ok((SELECT bool_and(pg_temp.is_subject(resolved_by)) FROM openwop.interrupts WHERE resolved_by IS NOT NULL),
          'subject_of_every_resolver: every resolved_by is a Subject');
SELECT ok((SELECT bool_and(pg_temp.is_subject(voter_subject) AND pg_temp.is_subject(eligibility -> 'subject')
                           AND voter = voter_subject ->> 'subjectId') FROM openwop.votes),
          'subject_of_every_voter: every vote''s voter is a Subject whose subjectId is the voter');
SELECT ok((SELECT bool_and(pg_temp.is_subject(e -> 'payload' -> 'resolvedBy'))
             FROM openwop.interrupts i, openwop.events(i.run_id, -1, 10000) e
            WHERE i.tenant = 'acme' AND e ->> 'type' = 'interrupt.resolved'),
          'resolved_by_event_is_subject: every interrupt.resolved of tenant acme carries a Subject');
SELECT is((pg_temp.gate_of('acme/id-pinned-0000001')).resolved_by ->> 'issuer', 'https://idp-a.example',
          'subject_of_jwt_uses_iss: a JWT subject''s issuer is its iss claim');
SELECT is((pg_temp.gate_of('acme/id-forged-0000001')).resolved_by ->> 'issuer', 'urn:openwop-interrupt:jwt',
          '... and a JWT without iss is under urn:openwop-interrupt:jwt');
SELECT is(pg_temp.refusal($$ SELECT pg_temp.as_request('{"iss": "urn:openwop-interrupt:session", "sub": "tap_erin", "tenant": "acme"}',
                                                        'SELECT openwop.current_caller()') $$),
          '{"sqlstate": "PT401", "code": "identity_unresolvable", "details": {"claim": "iss"}}',
          'jwt_cannot_claim_host_issuer: a JWT cannot pose as a login (or a token) under this host''s own issuers');
SELECT is(pg_temp.refusal($$ SELECT pg_temp.as_request('{"sub": "users/42", "tenant": "acme"}', 'SELECT openwop.current_caller()') $$),
          '{"sqlstate": "PT401", "code": "identity_unresolvable", "details": {"claim": "sub"}}',
          'jwt_sub_must_be_subject_id: a sub outside the subjectId grammar resolves to no subject');
SELECT is(pg_temp.refusal($$ SELECT pg_temp.as_request('{"sub": 42, "tenant": "acme"}', 'SELECT openwop.current_caller()') $$) ->> 'code',
          'identity_unresolvable', '... nor does a sub that is not a string');
CREATE ROLE "tap space";
GRANT USAGE ON SCHEMA openwop TO "tap space";
GRANT EXECUTE ON FUNCTION openwop.current_caller() TO "tap space";
SELECT is(pg_temp.as_login('tap space', 'acme', $$ SELECT openwop.current_caller() $$) ->> 'code', 'identity_unresolvable',
          'login_must_be_subject_id: a login whose name is not a subjectId resolves to no subject');
SELECT is(pg_temp.as_request('{"role": "web_anon", "tenant": "acme"}', 'SELECT openwop.current_caller() -> ''subject'''),
          '{"issuer": "urn:openwop-interrupt:anon-surface", "subjectId": "anonymous", "tenant": "acme", "lane": "anonymous", "kind": "anonymous"}',
          'subject_of_anonymous_request: a request without sub is the anonymous Subject');

-- tokens: a principal's token, a bare token, and the host's deadline
SELECT pg_temp.gate('acme/id-tokens-0000001', '{"requiredApprovals": 2}');
CREATE TEMP TABLE tokens AS
  SELECT openwop.mint_interrupt_token(interrupt_id, 'resolve', NULL, 'dave') AS dave,
         openwop.mint_interrupt_token(interrupt_id) AS bare
    FROM openwop.interrupts WHERE run_id = 'acme/id-tokens-0000001';
SELECT is((SELECT openwop.resolve_interrupt_by_token(dave, '{"action": "accept"}') -> 'tally' ->> 'voters' FROM tokens), '1', 'dave votes by his token');
SELECT is((SELECT openwop.resolve_interrupt_by_token(bare, '{"action": "accept"}') -> 'resolvedBy' FROM tokens),
          '{"issuer": "urn:openwop-interrupt:anon-surface", "subjectId": "token-holder", "tenant": "acme", "lane": "anonymous", "kind": "anonymous"}',
          'subject_of_bare_token: a token that names no principal decides as the anonymous token holder');
SELECT is((SELECT voter_subject FROM openwop.votes WHERE voter = 'dave'),
          '{"issuer": "urn:openwop-interrupt:interrupt-token", "subjectId": "dave", "tenant": "acme", "lane": "api-key", "kind": "user"}',
          'subject_of_principal_token: a token minted for a principal votes as that principal, through a key this host issued');
SELECT is(pg_temp.refusal($$ SELECT openwop.mint_interrupt_token((pg_temp.gate_of('acme/id-tenant-0000001')).interrupt_id, 'resolve', NULL, 'dave smith') $$)
            -> 'details' ->> 'field', 'principal', 'a token principal must be a subjectId');
SELECT is(pg_temp.refusal($$ SELECT openwop.mint_interrupt_token((pg_temp.gate_of('acme/id-tenant-0000001')).interrupt_id, 'inspect', NULL, 'cfo@example.org') $$)
            -> 'details' ->> 'field', 'principal',
          'inspect_token_names_no_principal: an inspect token, which needs no issuer, cannot carry a principal a front end might trust');
SELECT is(pg_temp.refusal($$ SELECT openwop.add_group_member('finance', 'dave smith') $$) -> 'details' ->> 'field', 'principal',
          'a group member must be a subjectId or "<issuer>/<subjectId>"');

SELECT * FROM finish();
ROLLBACK;
