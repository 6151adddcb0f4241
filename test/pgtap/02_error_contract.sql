-- The error contract (README.md, "Errors"): SQLSTATE PTxxx carrying the
-- HTTP status, the OpenWOP code first in the message, details as JSON in
-- the DETAIL, and a refused request leaves no trace.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';

\ir refusal.psql

SELECT lives_ok($$ SELECT openwop.create_run('contract', '{"runId": "acme/contract-run-00001"}') $$,
                'create a run');

SELECT is(pg_temp.refusal($$ SELECT openwop.create_run('bad id') $$),
          '{"sqlstate": "PT400", "code": "validation_error", "details": {"field": "workflowId"}}',
          'validation_error is PT400 with details.field');
SELECT is(pg_temp.refusal($$ SELECT openwop.create_run('contract', '{"callbackUrl": "https://example.org"}') $$),
          '{"sqlstate": "PT400", "code": "validation_error", "details": {"field": "callbackUrl"}}',
          'callbackUrl is refused with details.field "callbackUrl"');
SELECT is(pg_temp.refusal($$ SELECT openwop.run_snapshot('globex/contract-run-00001') $$),
          '{"sqlstate": "PT403", "code": "id_tenant_mismatch", "details": {"runId": "globex/contract-run-00001", "tenant": "acme"}}',
          'id_tenant_mismatch is PT403');
SELECT is(pg_temp.refusal($$ SELECT openwop.run_snapshot('acme/contract-run-99999') $$),
          '{"sqlstate": "PT404", "code": "not_found", "details": {"runId": "acme/contract-run-99999"}}',
          'unknown run is not_found, PT404');
SELECT is(pg_temp.refusal($$ SELECT openwop.complete_node('acme/contract-run-00001', 'nope') $$),
          '{"sqlstate": "PT404", "code": "not_found", "details": {"runId": "acme/contract-run-00001", "nodeId": "nope"}}',
          'unknown node is not_found, PT404');
SELECT is(pg_temp.refusal($$ SELECT openwop.create_run('contract', '{"runId": "acme/contract-run-00001"}') $$),
          '{"sqlstate": "PT409", "code": "run_state_conflict", "details": {"runId": "acme/contract-run-00001", "runStatus": "running"}}',
          'a duplicate run id is run_state_conflict with details.runStatus');

SELECT lives_ok($$ SELECT openwop.complete_run('acme/contract-run-00001') $$, 'complete the run');
SELECT is(pg_temp.refusal($$ SELECT openwop.cancel_run('acme/contract-run-00001') $$),
          '{"sqlstate": "PT409", "code": "run_terminal", "details": {"runId": "acme/contract-run-00001", "runStatus": "completed"}}',
          'cancel of a terminal run is run_terminal, PT409');
SELECT throws_ok($$ SELECT openwop.start_node('acme/contract-run-00001', 'n') $$, 'PT409',
                 'run_terminal: run "acme/contract-run-00001" is completed',
                 'start_node on a terminal run is refused');
SELECT throws_ok($$ SELECT openwop.complete_run('acme/contract-run-00001') $$, 'PT409',
                 'run_terminal: run "acme/contract-run-00001" is completed',
                 'complete_run twice is refused');
SELECT throws_ok($$ SELECT openwop.fail_run('acme/contract-run-00001', '{"code": "x", "message": "y"}') $$, 'PT409',
                 'run_terminal: run "acme/contract-run-00001" is completed',
                 'fail_run on a terminal run is refused');

-- every DETAIL parses as a JSON object, for every refusal above
SELECT is_empty($$
  SELECT 1 FROM (VALUES (pg_temp.refusal($q$ SELECT openwop.create_run('') $q$)),
                        (pg_temp.refusal($q$ SELECT openwop.events('acme/contract-run-00001', -1, 0) $q$)),
                        (pg_temp.refusal($q$ SELECT openwop.fail_node('acme/contract-run-00001', 'n', '{}') $q$))) v(r)
   WHERE jsonb_typeof(r->'details') <> 'object' OR r->>'sqlstate' NOT LIKE 'PT4%'
$$, 'details is always a JSON object and the SQLSTATE always PT4xx');

-- a refused request leaves no trace
SELECT is((SELECT count(*) FROM openwop.runs WHERE workflow_id = 'contract'), 1::bigint,
          'refused create_run calls inserted no run');
SELECT results_eq($$ SELECT e->>'type' FROM openwop.events('acme/contract-run-00001') AS e $$,
                  ARRAY['run.started', 'run.completed'],
                  'refused calls appended no event; the terminal event is last');
SELECT is(pg_temp.refusal($$ SELECT openwop.create_run('contract', '{"runId": "acme/contract-run-00002", "definition": {"nodes": [{"id": "a"}], "edges": [{"from": "a", "to": "zz"}]}}') $$)->>'code',
          'validation_error', 'a bad definition is refused');
SELECT is((SELECT count(*) FROM openwop.runs WHERE run_id = 'acme/contract-run-00002'), 0::bigint,
          'and the run was not created');

-- no error escapes as a plain SQLSTATE that PostgREST would turn into HTTP 500
SELECT is(pg_temp.refusal($$ SELECT openwop.start_node(NULL, 'n') $$)->>'sqlstate', 'PT400',
          'a NULL run id is a PT400, not an internal error');

SELECT * FROM finish();
ROLLBACK;
