-- Every refusal: SQLSTATE PTxxx, the OpenWOP code first in the message,
-- details as JSON in DETAIL, and nothing applied.
\set VERBOSITY default
\set SHOW_CONTEXT never
SET openwop.tenant = 'acme';

SELECT openwop.create_run('errors', '{"runId": "acme/errors-run-000001"}') ->> 'status';

-- validation_error (PT400)
\set VERBOSITY sqlstate
SELECT openwop.create_run(NULL);
\set VERBOSITY default
SELECT openwop.create_run('bad workflow id');
SELECT openwop.create_run('errors', '"not an object"');
SELECT openwop.create_run('errors', '{"colour": "blue"}');
SELECT openwop.create_run('errors', '{"callbackUrl": "https://example.org/hook"}');
SELECT openwop.create_run('errors', '{"runId": "acme/short"}');
SELECT openwop.create_run('errors', '{"runId": 42}');
SELECT openwop.create_run('errors', '{"configurable": {"run": {"escalationThreshold": 0.5}}}');
SELECT openwop.create_run('errors', '{"configurable": {"version": 1, "run": {"escalationThreshold": 1.5}}}');
SELECT openwop.create_run('errors', '{"configurable": {"version": 1, "run": {"escalationThreshold": "high"}}}');
SELECT openwop.create_run('errors', '{"metadata": []}');
SELECT openwop.create_run('errors', '{"definition": {"nodes": [{"id": "a"}, {"id": "a"}]}}');
SELECT openwop.create_run('errors', '{"definition": {"nodes": [{"id": "a"}], "edges": [{"from": "a", "to": "b"}]}}');
SELECT openwop.create_run('errors', '{"definition": {"nodes": [{"id": "a"}, {"id": "b"}], "edges": [{"from": "a", "to": "b", "triggerRule": "always"}]}}');
SELECT openwop.create_run('errors', '{"definition": {"nodes": [{"id": "a", "label": "A"}]}}');
SELECT openwop.create_run('errors', '{"definition": {"nodes": [{"id": "a", "typeId": "Not.A.Type"}]}}');
SELECT openwop.start_node('acme/errors-run-000001', 'bad node');
SELECT openwop.start_node('acme/errors-run-000001', 'n', 'NoDots');
SELECT openwop.start_node('not-a-run-id', 'n');
SELECT openwop.fail_node('acme/errors-run-000001', 'n', '{"code": "x"}');
SELECT openwop.fail_node('acme/errors-run-000001', 'n', '{"code": "x", "message": "m", "extra": 1}');
SELECT openwop.fail_node('acme/errors-run-000001', 'n', '{"code": "", "message": "m"}');
SELECT openwop.fail_node('acme/errors-run-000001', 'n', '{"code": "x", "message": "m", "retryable": "no"}');
SELECT openwop.complete_node('acme/errors-run-000001', 'n', '[1, 2]');
SELECT openwop.events('acme/errors-run-000001', -2);
SELECT openwop.events('acme/errors-run-000001', -1, 0);
SELECT openwop.events('acme/errors-run-000001', -1, 10001);
-- vendor keys are carried on errors
SELECT openwop.start_node('acme/errors-run-000001', 'v') ->> 'status';
SELECT openwop.fail_node('acme/errors-run-000001', 'v', '{"code": "x", "message": "m", "x-trace": "abc"}') ->> 'status';

-- id_tenant_mismatch (PT403): decided from the id, before any lookup
SELECT openwop.run_snapshot('globex/errors-run-000001');
SELECT openwop.cancel_run('globex/errors-run-000001');
SELECT openwop.create_run('errors', '{"tenant": "globex"}');
SELECT openwop.create_run('errors', '{"runId": "globex/errors-run-000009"}');

-- not_found (PT404)
SELECT openwop.run_snapshot('acme/errors-run-999999');
SELECT openwop.events('acme/errors-run-999999');
SELECT openwop.start_node('acme/errors-run-999999', 'n');
SELECT openwop.complete_node('acme/errors-run-000001', 'never-started');

-- run_state_conflict (PT409): duplicate run id; ending a node with no open execution
SELECT openwop.create_run('errors', '{"runId": "acme/errors-run-000001"}');
SELECT openwop.complete_node('acme/errors-run-000001', 'v');

-- run_terminal (PT409): every change to a terminal run is refused
SELECT openwop.cancel_run('acme/errors-run-000001') ->> 'status';
SELECT openwop.cancel_run('acme/errors-run-000001');
SELECT openwop.complete_run('acme/errors-run-000001');
SELECT openwop.fail_run('acme/errors-run-000001', '{"code": "x", "message": "m"}');
SELECT openwop.start_node('acme/errors-run-000001', 'n');
SELECT openwop.complete_node('acme/errors-run-000001', 'v');
SELECT openwop.fail_node('acme/errors-run-000001', 'v', '{"code": "x", "message": "m"}');

-- nothing above left a trace: one run, and its log ends with the one terminal event
SELECT count(*) AS runs FROM openwop.runs WHERE workflow_id = 'errors';
SELECT e->>'sequence' AS seq, e->>'type' AS type
  FROM openwop.events('acme/errors-run-000001') AS e;
