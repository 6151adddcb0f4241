-- A scripted workflow run: an expense report is fetched, checked, then the
-- run completes; a second run is cancelled by an operator.  Everything the
-- engine did is read back from the append-only event log.
\pset footer off
\pset null '·'
SET openwop.tenant = 'acme';

\echo
\echo '== 1. The engine creates a run of workflow "expense-report"'
SELECT openwop.create_run('expense-report',
         '{"runId": "acme/demo-expense-0001",
           "inputs": {"employee": "jo", "amount": 412.50},
           "definition": {"nodes": [{"id": "fetch", "typeId": "core.http.get"},
                                    {"id": "check", "typeId": "core.policy.check"},
                                    {"id": "book",  "typeId": "core.ledger.post"}],
                          "edges": [{"from": "fetch", "to": "check"},
                                    {"from": "check", "to": "book"}]}}') AS created;

\echo '== 2. It executes the nodes one by one'
SELECT openwop.start_node('acme/demo-expense-0001', 'fetch') ->> 'visit' AS fetch_visit;
SELECT openwop.complete_node('acme/demo-expense-0001', 'fetch', '{"receipt": "r-77"}') ->> 'status' AS fetch;
SELECT openwop.start_node('acme/demo-expense-0001', 'check') ->> 'visit' AS check_visit;
\echo '   (the engine crashes and restarts: start_node again recovers the same execution)'
SELECT openwop.start_node('acme/demo-expense-0001', 'check') ->> 'recovered' AS recovered;
SELECT openwop.complete_node('acme/demo-expense-0001', 'check', '{"withinPolicy": true}') ->> 'status' AS "check";
SELECT openwop.start_node('acme/demo-expense-0001', 'book') ->> 'visit' AS book_visit;
SELECT openwop.complete_node('acme/demo-expense-0001', 'book', '{"entry": 9001}') ->> 'status' AS book;
SELECT openwop.complete_run('acme/demo-expense-0001', '{"booked": 9001}') ->> 'status' AS run;

\echo '== 3. A completed run refuses every further change'
\set VERBOSITY default
\set ON_ERROR_STOP 0
SELECT openwop.cancel_run('acme/demo-expense-0001');
\set ON_ERROR_STOP 1

\echo
\echo '== 4. A second run, cancelled by an operator while a node is running'
SELECT openwop.create_run('expense-report', '{"runId": "acme/demo-expense-0002"}') ->> 'status' AS created;
SELECT openwop.start_node('acme/demo-expense-0002', 'fetch') ->> 'status' AS fetch;
SELECT openwop.cancel_run('acme/demo-expense-0002', 'duplicate submission') ->> 'status' AS run;

\echo
\echo '== The event log of both runs (openwop.events)'
SELECT e ->> 'runId' AS run,
       (e ->> 'sequence')::int AS seq,
       e ->> 'type' AS type,
       e ->> 'nodeId' AS node,
       (e -> 'payload') - 'nodeId' - 'durationMs' AS payload
  FROM (VALUES ('acme/demo-expense-0001'), ('acme/demo-expense-0002')) AS r(id),
       openwop.events(r.id) AS e
 ORDER BY 1, 2;

\echo '== Snapshots (openwop.run_snapshot)'
SELECT s ->> 'runId' AS run, s ->> 'status' AS status, s -> 'error' AS error, s -> 'owner' AS owner
  FROM (VALUES ('acme/demo-expense-0001'), ('acme/demo-expense-0002')) AS r(id),
       openwop.run_snapshot(r.id) AS s;
