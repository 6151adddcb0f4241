-- A scripted workflow run: an expense report is fetched, a manager approves
-- it through an approval interrupt, the engine replays the gate after a
-- crash and gets the recorded decision back, and the run completes.  A
-- second run is cancelled while it waits.  Everything is read back from the
-- append-only event log.
\pset footer off
\pset null '·'
SET openwop.tenant = 'acme';

\echo
\echo '== 1. The engine creates a run of workflow "expense-report"'
SELECT openwop.create_run('expense-report',
         '{"runId": "acme/demo-expense-0001",
           "inputs": {"employee": "jo", "amount": 412.50},
           "definition": {"nodes": [{"id": "fetch", "typeId": "core.http.get"},
                                    {"id": "approve", "typeId": "core.approval"},
                                    {"id": "book",  "typeId": "core.ledger.post"}],
                          "edges": [{"from": "fetch", "to": "approve"},
                                    {"from": "approve", "to": "book"}]}}') AS created;

\echo '== 2. It runs "fetch", then reaches the approval gate and raises an interrupt'
SELECT openwop.start_node('acme/demo-expense-0001', 'fetch') ->> 'visit' AS fetch_visit;
SELECT openwop.complete_node('acme/demo-expense-0001', 'fetch', '{"receipt": "r-77"}') ->> 'status' AS fetch;
SELECT openwop.start_node('acme/demo-expense-0001', 'approve') ->> 'visit' AS approve_visit;
SELECT jsonb_pretty(openwop.interrupt('acme/demo-expense-0001', 'approve',
         '{"kind": "approval",
           "data": {"artifactId": "expense-412", "artifactType": "expense", "title": "Approve 412.50 for jo",
                    "actions": ["accept", "reject"], "approversList": ["postgres", "manager@example.org"]}}')
       #- '{metadata,interrupt,id}') AS "pending (FlowDrop INT-1 envelope, id elided)";
SELECT openwop.run_snapshot('acme/demo-expense-0001') ->> 'status' AS run_status;

\echo '== 3. The manager approves (run-scoped resolve, with an Idempotency-Key)'
SELECT openwop.resolve_interrupt('acme/demo-expense-0001', 'approve', '{"action": "accept", "feedback": "ok"}',
                                 'demo-7d0c2d0e-5a55-4c6e-a5d3') - 'interruptId' AS resolved;
\echo '   (the client retries the same request: the stored answer comes back, marked as a replay)'
SELECT openwop.resolve_interrupt('acme/demo-expense-0001', 'approve', '{"action": "accept", "feedback": "ok"}',
                                 'demo-7d0c2d0e-5a55-4c6e-a5d3') ->> 'idempotentReplay' AS replayed;
\echo '   (a second approver is too late: one winner only)'
\set VERBOSITY default
\set ON_ERROR_STOP 0
SELECT openwop.resolve_interrupt('acme/demo-expense-0001', 'approve', '{"action": "reject"}');
\set ON_ERROR_STOP 1

\echo '== 4. The engine crashed; on recovery it replays the gate and gets the recorded decision'
SELECT openwop.start_node('acme/demo-expense-0001', 'approve') ->> 'recovered' AS recovered;
SELECT openwop.interrupt('acme/demo-expense-0001', 'approve',
         '{"kind": "approval", "data": {"artifactId": "expense-412", "artifactType": "expense",
           "title": "Approve 412.50 for jo", "actions": ["accept", "reject"]}}')
       - 'interruptId' #- '{resumeValue,decidedAt}' AS replay;
SELECT openwop.complete_node('acme/demo-expense-0001', 'approve', '{"approved": true}') ->> 'status' AS approve;
SELECT openwop.start_node('acme/demo-expense-0001', 'book') ->> 'visit' AS book_visit;
SELECT openwop.complete_node('acme/demo-expense-0001', 'book', '{"entry": 9001}') ->> 'status' AS book;
SELECT openwop.complete_run('acme/demo-expense-0001', '{"booked": 9001}') ->> 'status' AS run;

\echo
\echo '== 5. A second run waits for a clarification and is cancelled by an operator'
SELECT openwop.create_run('expense-report', '{"runId": "acme/demo-expense-0002"}') ->> 'status' AS created;
SELECT openwop.start_node('acme/demo-expense-0002', 'fetch') ->> 'status' AS fetch;
SELECT openwop.interrupt('acme/demo-expense-0002', 'fetch',
         '{"kind": "clarification", "data": {"questions": [{"id": "cc", "question": "Which cost centre?",
                                                            "schema": {"type": "string", "pattern": "^CC-[0-9]{4}$"}}]}}')
       ->> 'status' AS fetch;
\echo '   (a malformed answer is refused against the question schema)'
\set ON_ERROR_STOP 0
SELECT openwop.resolve_interrupt('acme/demo-expense-0002', 'fetch', '{"cc": "marketing"}');
\set ON_ERROR_STOP 1
SELECT openwop.cancel_run('acme/demo-expense-0002', 'duplicate submission') ->> 'status' AS run;
\set ON_ERROR_STOP 0
SELECT openwop.resolve_interrupt('acme/demo-expense-0002', 'fetch', '{"cc": "CC-0042"}');
\set ON_ERROR_STOP 1

\echo
\echo '== The event log of both runs (openwop.events)'
SELECT e ->> 'runId' AS run,
       (e ->> 'sequence')::int AS seq,
       e ->> 'type' AS type,
       e ->> 'nodeId' AS node,
       (e -> 'payload') - 'nodeId' - 'durationMs' - 'interruptId' - 'key' #- '{resumeValue,decidedAt}' AS payload
  FROM (VALUES ('acme/demo-expense-0001'), ('acme/demo-expense-0002')) AS r(id),
       openwop.events(r.id) AS e
 ORDER BY 1, 2;

\echo '== Snapshots (openwop.run_snapshot)'
SELECT s ->> 'runId' AS run, s ->> 'status' AS status, s -> 'owner' AS owner
  FROM (VALUES ('acme/demo-expense-0001'), ('acme/demo-expense-0002')) AS r(id),
       openwop.run_snapshot(r.id) AS s;
