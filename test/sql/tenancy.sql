-- Who is calling and in which tenant (docs/security.md): a login acts as
-- itself in the tenant a DBA bound it to (openwop.bound_tenant); "*" lets
-- openwop.tenant choose; an unbound login stays in the default tenant; a
-- request session (openwop.jwt_session_role) speaks through its claims.
\set VERBOSITY default
\set SHOW_CONTEXT never

CREATE ROLE tenancy_engine LOGIN;
GRANT USAGE ON SCHEMA openwop TO tenancy_engine;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop TO tenancy_engine;
CREATE ROLE tenancy_authenticator;
GRANT tenancy_authenticator TO tenancy_engine;

-- a superuser with no setting: the default tenant
RESET openwop.tenant;
SELECT openwop.create_run('tenancy', '{"runId": "default/tenancy-run-00001"}') ->> 'runId';
SHOW openwop.default_tenant;
SELECT openwop.run_snapshot('default/tenancy-run-00001') #>> '{owner,tenant}' AS owner_tenant;

-- a superuser chooses with openwop.tenant
SET openwop.tenant = 'acme';
SELECT openwop.create_run('tenancy', '{"runId": "acme/tenancy-run-000001", "tenant": "acme"}') ->> 'runId';
SELECT openwop.run_snapshot('default/tenancy-run-00001');

-- ids projected onto one path segment: "~2F" or "%2F" for "/"
SELECT openwop.run_snapshot('acme~2Ftenancy-run-000001') ->> 'runId';
SELECT openwop.run_snapshot('acme%2ftenancy-run-000001') ->> 'runId';

-- an invalid tenant setting is refused before anything happens
SET openwop.tenant = 'not a tenant';
SELECT openwop.run_snapshot('acme/tenancy-run-000001');
SET openwop.tenant = 'anon:visitor-7';
SELECT openwop.create_run('tenancy', '{"runId": "anon:visitor-7/tenancy-run-000001"}') ->> 'runId';

-- a login bound to one tenant acts there, and nowhere else
SET openwop.bound_tenant = 'acme';
SET openwop.tenant = 'acme';
SET SESSION AUTHORIZATION tenancy_engine;
SELECT openwop.current_caller() - 'subject';
SELECT openwop.create_run('tenancy', '{"runId": "acme/tenancy-run-000002"}') ->> 'runId';
SELECT openwop.run_snapshot('acme/tenancy-run-000002') #>> '{owner,subject}' AS owner;
SELECT openwop.run_snapshot('default/tenancy-run-00001');
SET openwop.tenant = 'globex';
SELECT openwop.run_snapshot('acme/tenancy-run-000002');
RESET openwop.tenant;
-- ... and cannot unbind itself
SET openwop.bound_tenant = '*';
RESET openwop.bound_tenant;
RESET ALL;
SHOW openwop.bound_tenant;
RESET SESSION AUTHORIZATION;

-- an unbound login stays in the default tenant: openwop.tenant does not move it
RESET openwop.bound_tenant;
SET SESSION AUTHORIZATION tenancy_engine;
SELECT openwop.current_caller() ->> 'tenant' AS tenant;
SET openwop.tenant = 'acme';
SELECT openwop.run_snapshot('acme/tenancy-run-000001');
RESET SESSION AUTHORIZATION;

-- a login bound to "*" serves many tenants: openwop.tenant chooses
SET openwop.bound_tenant = '*';
SET SESSION AUTHORIZATION tenancy_engine;
SET openwop.tenant = 'globex';
SELECT openwop.create_run('tenancy', '{"runId": "globex/tenancy-run-000001"}') ->> 'runId';
RESET SESSION AUTHORIZATION;
SET openwop.bound_tenant = 'not a tenant';

-- a request session: claims count only where the login belongs to openwop.jwt_session_role;
-- an authenticator bound to "*" lets the claim choose the tenant
SET openwop.bound_tenant = '*';
SET openwop.jwt_session_role = 'tenancy_authenticator';
SET SESSION AUTHORIZATION tenancy_engine;
SET request.jwt.claims = '{"sub": "user-42", "tenant": "initech", "role": "web"}';
SELECT openwop.current_caller();
SELECT openwop.create_run('tenancy', '{"runId": "initech/tenancy-run-000001"}') ->> 'runId';
SELECT openwop.run_snapshot('initech/tenancy-run-000001') -> 'owner' AS owner;
SELECT openwop.run_snapshot('acme/tenancy-run-000001');
SELECT openwop.cancel_run('initech/tenancy-run-000001') ->> 'status';
SELECT e -> 'payload' ->> 'cancelledBy' AS cancelled_by
  FROM openwop.events('initech/tenancy-run-000001') AS e
 WHERE e ->> 'type' = 'run.cancelled';
-- no sub: an anonymous caller, in the default tenant when the claims name none
SET request.jwt.claims = '{"role": "web_anon"}';
SELECT openwop.current_caller();
RESET request.jwt.claims;
RESET SESSION AUTHORIZATION;
-- an unbound authenticator stays in the default tenant: a claim naming another is refused
RESET openwop.bound_tenant;
SET SESSION AUTHORIZATION tenancy_engine;
SET request.jwt.claims = '{"sub": "user-42", "tenant": "initech"}';
SELECT openwop.current_caller();
RESET request.jwt.claims;
RESET SESSION AUTHORIZATION;
-- the superuser is not a request session: the same claims are ignored
SET request.jwt.claims = '{"sub": "user-42", "tenant": "initech"}';
SELECT openwop.current_caller() #>> '{subject,subjectId}' AS subject_id;
RESET request.jwt.claims;
RESET openwop.jwt_session_role;
RESET openwop.tenant;

-- the settings are reserved: a typo is an error, not a silent placeholder
SET openwop.tennant = 'acme';

DROP OWNED BY tenancy_engine;
DROP ROLE tenancy_engine;
DROP ROLE tenancy_authenticator;
