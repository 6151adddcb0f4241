-- Scripted workflow runs: an expense report is fetched, a manager approves
-- it through an approval interrupt, the engine replays the gate after a
-- crash and gets the recorded decision back, and the run completes; a
-- second run is cancelled while it waits.  Then approval gates as a DBA
-- runs them: a 2-of-3 gate approved by named principals (a listed one, a
-- group member, a role holder), a vetoed gate failing its run, and a gate
-- rejected by the timeout worker.  Everything is read back from the
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
\echo '== 6. Approval gates run by a DBA: who may approve is set up with plain SQL'
CREATE ROLE openwop_approver NOLOGIN;      -- holds approvals:respond for SQL sessions
GRANT USAGE ON SCHEMA openwop TO openwop_approver;
GRANT EXECUTE ON FUNCTION openwop.resolve_interrupt(text, text, jsonb, text) TO openwop_approver;
CREATE ROLE treasury NOLOGIN;              -- a role ref: GRANT gives approval rights on gates naming it
CREATE ROLE erin NOLOGIN;
GRANT openwop_approver, treasury TO erin;
SELECT openwop.add_group_member('finance', 'dave@example.org') AS finance_member;      -- a group ref
SELECT openwop.add_group_member('openwop-override', 'cfo@example.org') AS override;    -- an override principal
SELECT openwop.capabilities() -> 'interrupt' AS interrupt_facet;

\echo '   (a 2-of-3 gate: approvers are alice, anyone in group finance, or anyone holding role treasury)'
SELECT openwop.create_run('purchase-order', '{"runId": "acme/demo-po-000000001"}') ->> 'status' AS created;
SELECT openwop.start_node('acme/demo-po-000000001', 'sign-off') ->> 'status' AS started;
SELECT openwop.interrupt('acme/demo-po-000000001', 'sign-off',
         '{"kind": "approval", "data": {"artifactId": "po-77", "artifactType": "purchase-order",
           "title": "Buy 3 servers", "actions": ["accept", "reject"], "requiredApprovals": 2,
           "approversList": ["alice@example.org"], "approverGroupRefs": ["finance"],
           "approverRoleRefs": ["treasury"]}}') ->> 'status' AS raised;
SET request.jwt.claims = '{"sub": "mallory@example.org", "scope": "approvals:respond"}';
\set ON_ERROR_STOP 0
SELECT openwop.resolve_interrupt('acme/demo-po-000000001', 'sign-off', '{"action": "accept"}');
\set ON_ERROR_STOP 1
SET request.jwt.claims = '{"sub": "dave@example.org", "scope": "approvals:respond"}';
SELECT r ->> 'status' AS status, r -> 'tally' AS tally
  FROM openwop.resolve_interrupt('acme/demo-po-000000001', 'sign-off', '{"action": "accept"}') r;
RESET request.jwt.claims;
SET ROLE erin;   -- a SQL session: the principal is current_user
SELECT r ->> 'status' AS status, r ->> 'decision' AS decision, r ->> 'runStatus' AS run
  FROM openwop.resolve_interrupt('acme/demo-po-000000001', 'sign-off', '{"action": "accept"}') r;
RESET ROLE;
SELECT v.voter, v.action, v.eligibility -> 'matched' AS matched
  FROM openwop.votes v JOIN openwop.interrupts i USING (tenant, interrupt_id)
 WHERE i.run_id = 'acme/demo-po-000000001' ORDER BY v.cast_at;

\echo '   (a vetoed gate: single-veto, one reject fails the run in the same transaction)'
SELECT openwop.create_run('purchase-order', '{"runId": "acme/demo-po-000000002"}') ->> 'status' AS created;
SELECT openwop.start_node('acme/demo-po-000000002', 'sign-off') ->> 'status' AS started;
SELECT openwop.interrupt('acme/demo-po-000000002', 'sign-off',
         '{"kind": "approval", "data": {"artifactId": "po-78", "artifactType": "purchase-order",
           "title": "Buy a yacht", "actions": ["accept", "reject"], "requiredApprovals": 3}}') ->> 'status' AS raised;
SET request.jwt.claims = '{"sub": "alice@example.org", "scope": "approvals:respond"}';
SELECT r ->> 'decision' AS decision, r ->> 'runStatus' AS run
  FROM openwop.resolve_interrupt('acme/demo-po-000000002', 'sign-off', '{"action": "reject", "feedback": "no"}') r;
RESET request.jwt.claims;
SELECT openwop.run_snapshot('acme/demo-po-000000002') -> 'error' AS run_error;

\echo '   (a timed-out gate: nobody answers within 1 s; the timeout worker rejects it, onTimeout "approve" notwithstanding)'
SELECT openwop.create_run('purchase-order', '{"runId": "acme/demo-po-000000003"}') ->> 'status' AS created;
SELECT openwop.start_node('acme/demo-po-000000003', 'sign-off') ->> 'status' AS started;
SELECT openwop.interrupt('acme/demo-po-000000003', 'sign-off',
         '{"kind": "approval", "timeoutMs": 1000, "data": {"artifactId": "po-79", "artifactType": "purchase-order",
           "title": "Renew the lease", "actions": ["accept", "reject"], "onTimeout": "approve"}}') ->> 'status' AS raised;
SELECT pg_sleep(2.5);
SELECT openwop.run_snapshot('acme/demo-po-000000003') ->> 'status' AS status_after_the_deadline;

\echo
\echo '== The approval runs, from the log'
SELECT e ->> 'runId' AS run,
       (e ->> 'sequence')::int AS seq,
       e ->> 'type' AS type,
       (e -> 'payload') - 'nodeId' - 'interruptId' - 'key' - 'durationMs' - 'openwop-eligibility' - 'data'
         #- '{resumeValue,decidedAt}' AS payload
  FROM (VALUES ('acme/demo-po-000000001'), ('acme/demo-po-000000002'), ('acme/demo-po-000000003')) AS r(id),
       openwop.events(r.id) AS e
 WHERE e ->> 'type' NOT IN ('run.started', 'node.started')
 ORDER BY 1, 2;

\echo
\echo '== The expense runs, from the log (openwop.events)'
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
