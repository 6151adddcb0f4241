-- Who is calling: the tenant from a JWT claim, from openwop.tenant or the
-- default; the principal from the "sub" claim or current_user; projected ids.
\set VERBOSITY default
\set SHOW_CONTEXT never

-- no setting: the default tenant
RESET openwop.tenant;
SELECT openwop.create_run('tenancy', '{"runId": "default/tenancy-run-00001"}') ->> 'runId';
SHOW openwop.default_tenant;
SELECT openwop.run_snapshot('default/tenancy-run-00001') #>> '{owner,tenant}' AS owner_tenant;

-- the setting
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

-- PostgREST: the verified claims name the tenant and the principal
SET openwop.tenant = 'acme';
SET request.jwt.claims = '{"sub": "user-42", "tenant": "globex", "role": "web"}';
SELECT openwop.create_run('tenancy', '{"runId": "globex/tenancy-run-000001"}') ->> 'runId';
SELECT openwop.run_snapshot('globex/tenancy-run-000001') -> 'owner' AS owner;
SELECT openwop.run_snapshot('acme/tenancy-run-000001');
SELECT openwop.cancel_run('globex/tenancy-run-000001') ->> 'status';
SELECT e -> 'payload' ->> 'cancelledBy' AS cancelled_by
  FROM openwop.events('globex/tenancy-run-000001') AS e
 WHERE e ->> 'type' = 'run.cancelled';
-- claims without a tenant fall back to the setting
SET request.jwt.claims = '{"sub": "user-42"}';
SELECT openwop.run_snapshot('acme/tenancy-run-000001') ->> 'runId';
RESET request.jwt.claims;
RESET openwop.tenant;

-- the settings are reserved: a typo is an error, not a silent placeholder
SET openwop.tennant = 'acme';
