-- Scripted workflow runs: an expense report is fetched, a manager approves
-- it through an approval interrupt, the engine replays the gate after a
-- crash and gets the recorded decision back, and the run completes; a
-- second run is cancelled while it waits.  Then approval gates as a DBA
-- runs them: a 2-of-3 gate approved by named principals (a listed one, a
-- group member, a role holder), a vetoed gate failing its run, and a gate
-- rejected by the timeout worker; a conversation of three turns; and a
-- replay fork of the vetoed gate that derives its rejection, with a branch.
-- Everything is read back from the
-- append-only event log.  This session is the DBA's (a superuser, who
-- chooses its tenant); approvers answer as PostgREST requests (the
-- authenticator's login, verified JWT claims) or as their own SQL logins.
\pset footer off
\pset null '·'
SET openwop.tenant = 'acme';

\echo
\echo '== 0. Who is who: approvers hold a role; PostgREST''s authenticator is designated; logins are bound to tenants'
CREATE ROLE openwop_approver NOLOGIN;      -- holds approvals:respond for SQL logins
GRANT USAGE ON SCHEMA openwop TO openwop_approver;
GRANT EXECUTE ON FUNCTION openwop.resolve_interrupt(text, text, jsonb, text), openwop.current_caller() TO openwop_approver;
CREATE ROLE web_user NOLOGIN;              -- the role PostgREST switches to for a JWT
GRANT openwop_approver TO web_user;
CREATE ROLE authenticator LOGIN NOINHERIT; -- PostgREST's login
GRANT web_user TO authenticator;
ALTER ROLE authenticator SET openwop.bound_tenant = '*';   -- it serves many tenants: the JWT's tenant claim chooses
SET openwop.jwt_session_role = 'authenticator';   -- a DBA puts this in postgresql.conf
-- what each PostgREST request does first (this session plays the authenticator's login,
-- with the binding its ALTER ROLE setting gives it at login)
\set as_authenticator 'SET LOCAL openwop.bound_tenant = ''*''; SET LOCAL SESSION AUTHORIZATION authenticator; SET LOCAL ROLE web_user;'
SELECT openwop.current_caller() AS "the DBA's own session";
\echo '   (one PostgREST request: a transaction of the authenticator''s, SET ROLE, the verified JWT claims)'
BEGIN;
:as_authenticator
SET LOCAL request.jwt.claims = '{"sub": "manager@example.org", "iss": "https://idp.example.org", "tenant": "acme", "scope": "approvals:respond"}';
SELECT openwop.current_caller() AS "a request of the manager";
COMMIT;

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
                    "actions": ["accept", "reject"], "approversList": ["manager@example.org"]}}')
       #- '{metadata,interrupt,id}') AS "pending (FlowDrop INT-1 envelope, id elided)";
SELECT openwop.run_snapshot('acme/demo-expense-0001') ->> 'status' AS run_status;

\echo '== 3. The manager approves through PostgREST (run-scoped resolve, with an Idempotency-Key)'
BEGIN;
:as_authenticator
SET LOCAL request.jwt.claims = '{"sub": "manager@example.org", "iss": "https://idp.example.org", "tenant": "acme", "scope": "approvals:respond"}';
SELECT jsonb_pretty(openwop.resolve_interrupt('acme/demo-expense-0001', 'approve', '{"action": "accept", "feedback": "ok"}',
                                 'demo-7d0c2d0e-5a55-4c6e-a5d3') - 'interruptId') AS resolved;
\echo '   (the client retries the same request: the stored answer comes back, marked as a replay)'
SELECT openwop.resolve_interrupt('acme/demo-expense-0001', 'approve', '{"action": "accept", "feedback": "ok"}',
                                 'demo-7d0c2d0e-5a55-4c6e-a5d3') ->> 'idempotentReplay' AS replayed;
COMMIT;
\echo '   (a second approver is too late: one winner only)'
\set VERBOSITY default
\set ON_ERROR_STOP 0
\echo '   [expected: the ERROR below is the refusal this step shows]'
BEGIN;
:as_authenticator
SET LOCAL request.jwt.claims = '{"sub": "deputy@example.org", "tenant": "acme", "scope": "approvals:respond"}';
SELECT openwop.resolve_interrupt('acme/demo-expense-0001', 'approve', '{"action": "reject"}');
ROLLBACK;
\set ON_ERROR_STOP 1

\echo '== 4. The engine crashed; on recovery it replays the gate and gets the recorded decision'
SELECT openwop.start_node('acme/demo-expense-0001', 'approve') ->> 'recovered' AS recovered;
SELECT openwop.interrupt('acme/demo-expense-0001', 'approve',
         '{"kind": "approval", "data": {"artifactId": "expense-412", "artifactType": "expense",
           "title": "Approve 412.50 for jo", "actions": ["accept", "reject"]}}')
       - 'interruptId' #- '{resumeValue,decidedAt}' AS "replay (the recorded answer, who decided it)";
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
\echo '   (jo answers through PostgREST: a malformed answer is refused against the question schema)'
\set ON_ERROR_STOP 0
\echo '   [expected: the ERROR below is the refusal this step shows]'
BEGIN;
:as_authenticator
SET LOCAL request.jwt.claims = '{"sub": "jo@example.org", "tenant": "acme", "scope": "approvals:respond"}';
SELECT openwop.resolve_interrupt('acme/demo-expense-0002', 'fetch', '{"cc": "marketing"}');
ROLLBACK;
\set ON_ERROR_STOP 1
SELECT openwop.cancel_run('acme/demo-expense-0002', 'duplicate submission') ->> 'status' AS run;
\echo '   (after the cancel, a correct answer finds nothing pending)'
\set ON_ERROR_STOP 0
\echo '   [expected: the ERROR below is the refusal this step shows]'
BEGIN;
:as_authenticator
SET LOCAL request.jwt.claims = '{"sub": "jo@example.org", "tenant": "acme", "scope": "approvals:respond"}';
SELECT openwop.resolve_interrupt('acme/demo-expense-0002', 'fetch', '{"cc": "CC-0042"}');
ROLLBACK;
\set ON_ERROR_STOP 1

\echo
\echo '== 6. Approval gates run by a DBA: who may approve is set up with plain SQL'
CREATE ROLE treasury NOLOGIN;              -- a role ref: GRANT gives approval rights on gates naming it
CREATE ROLE treasury_ops NOLOGIN;
GRANT USAGE ON SCHEMA openwop TO treasury, treasury_ops;
GRANT EXECUTE ON FUNCTION openwop.resolve_interrupt(text, text, jsonb, text), openwop.current_caller() TO treasury, treasury_ops;
CREATE ROLE erin LOGIN;
GRANT openwop_approver, treasury, treasury_ops TO erin;
ALTER ROLE erin SET openwop.bound_tenant = 'acme';    -- erin acts in tenant acme only, and cannot change that
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
\echo '   (mallory is not eligible: 403, the run keeps waiting)'
\set ON_ERROR_STOP 0
\echo '   [expected: the ERROR below is the refusal this step shows]'
BEGIN;
:as_authenticator
SET LOCAL request.jwt.claims = '{"sub": "mallory@example.org", "tenant": "acme", "scope": "approvals:respond"}';
SELECT openwop.resolve_interrupt('acme/demo-po-000000001', 'sign-off', '{"action": "accept"}');
ROLLBACK;
\set ON_ERROR_STOP 1
\echo '   (dave, of group finance, approves through PostgREST: counted, not yet decided)'
BEGIN;
:as_authenticator
SET LOCAL request.jwt.claims = '{"sub": "dave@example.org", "tenant": "acme", "scope": "approvals:respond"}';
SELECT r ->> 'status' AS status, r -> 'tally' AS tally
  FROM openwop.resolve_interrupt('acme/demo-po-000000001', 'sign-off', '{"action": "accept"}') r;
COMMIT;
\echo '   (erin, a SQL login holding role treasury, approves; SET ROLE does not make her a second voter)'
SET openwop.bound_tenant = 'acme';   -- what her ALTER ROLE setting gives her login (a superuser may SET it here)
SET SESSION AUTHORIZATION erin;
SET ROLE treasury_ops;
SELECT openwop.current_caller() #>> '{subject,subjectId}' AS "voter, whatever role is SET";
SET ROLE treasury;
SELECT r ->> 'status' AS status, r ->> 'decision' AS decision, r ->> 'runStatus' AS run
  FROM openwop.resolve_interrupt('acme/demo-po-000000001', 'sign-off', '{"action": "accept"}') r;
RESET ROLE;
RESET SESSION AUTHORIZATION;
RESET openwop.bound_tenant;
SELECT v.voter, v.voter_subject ->> 'issuer' AS issuer, v.action, v.eligibility -> 'matched' AS matched
  FROM openwop.votes v JOIN openwop.interrupts i USING (tenant, interrupt_id)
 WHERE i.run_id = 'acme/demo-po-000000001' ORDER BY v.cast_at;

\echo '   (a vetoed gate: single-veto, one reject fails the run in the same transaction)'
SELECT openwop.create_run('purchase-order', '{"runId": "acme/demo-po-000000002"}') ->> 'status' AS created;
SELECT openwop.start_node('acme/demo-po-000000002', 'sign-off') ->> 'status' AS started;
SELECT openwop.interrupt('acme/demo-po-000000002', 'sign-off',
         '{"kind": "approval", "data": {"artifactId": "po-78", "artifactType": "purchase-order",
           "title": "Buy a yacht", "actions": ["accept", "reject"], "requiredApprovals": 3}}') ->> 'status' AS raised;
BEGIN;
:as_authenticator
SET LOCAL request.jwt.claims = '{"sub": "alice@example.org", "tenant": "acme", "scope": "approvals:respond"}';
SELECT r ->> 'decision' AS decision, r ->> 'runStatus' AS run
  FROM openwop.resolve_interrupt('acme/demo-po-000000002', 'sign-off', '{"action": "reject", "feedback": "no"}') r;
COMMIT;
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
\echo '== 7. A conversation of three turns: the engine asks jo about the expense, jo answers through PostgREST'
SELECT openwop.capabilities() -> 'conversationPrimitive' AS "conversationPrimitive (presence is the claim)";
SELECT openwop.create_run('expense-chat', '{"runId": "acme/demo-chat-00000001"}') ->> 'status' AS created;
SELECT openwop.start_node('acme/demo-chat-00000001', 'ask') ->> 'status' AS started;
-- the node's interrupts, in order: ordinal 0 opens, 1 to 3 are the turns, 4 closes
SELECT openwop.interrupt('acme/demo-chat-00000001', 'ask',
         '{"kind": "conversation.start", "data": {"conversationId": "demo-expense-412", "title": "Expense 412.50",
           "initialPrompt": "A few questions about your expense"}}') ->> 'status' AS opened;
BEGIN;
:as_authenticator
SET LOCAL request.jwt.claims = '{"sub": "jo@example.org", "tenant": "acme", "scope": "approvals:respond"}';
SELECT openwop.resolve_interrupt('acme/demo-chat-00000001', 'ask', 'null') ->> 'status' AS "jo joins (a start takes no answer)";
COMMIT;
SELECT openwop.interrupt('acme/demo-chat-00000001', 'ask',
         '{"kind": "conversation.exchange", "data": {"conversationId": "demo-expense-412", "prompt": "Which project?",
           "outcomeSchema": {"type": "object", "required": ["project"], "properties": {"project": {"type": "string"}}}}}', 1)
       -> 'metadata' -> 'interrupt' ->> 'status' AS turn_0;
\echo '   (an answer that does not match the turn''s outcomeSchema is refused; the turn waits)'
\set ON_ERROR_STOP 0
\echo '   [expected: the ERROR below is the refusal this step shows]'
BEGIN;
:as_authenticator
SET LOCAL request.jwt.claims = '{"sub": "jo@example.org", "tenant": "acme", "scope": "approvals:respond"}';
SELECT openwop.resolve_interrupt('acme/demo-chat-00000001', 'ask', '{"project": 7}');
ROLLBACK;
\set ON_ERROR_STOP 1
BEGIN;
:as_authenticator
SET LOCAL request.jwt.claims = '{"sub": "jo@example.org", "tenant": "acme", "scope": "approvals:respond"}';
SELECT openwop.resolve_interrupt('acme/demo-chat-00000001', 'ask', '{"project": "apollo"}') ->> 'status' AS turn_0_answered;
COMMIT;
SELECT openwop.interrupt('acme/demo-chat-00000001', 'ask',
         '{"kind": "conversation.exchange", "data": {"conversationId": "demo-expense-412", "prompt": "Was a client there?"}}', 2)
       -> 'metadata' -> 'interrupt' ->> 'status' AS turn_1;
BEGIN;
:as_authenticator
SET LOCAL request.jwt.claims = '{"sub": "jo@example.org", "tenant": "acme", "scope": "approvals:respond"}';
SELECT openwop.resolve_interrupt('acme/demo-chat-00000001', 'ask', '"yes, Initech"') ->> 'status' AS turn_1_answered;
COMMIT;
SELECT openwop.interrupt('acme/demo-chat-00000001', 'ask',
         '{"kind": "conversation.exchange", "data": {"conversationId": "demo-expense-412", "prompt": "Anything else?"}}', 3)
       -> 'metadata' -> 'interrupt' ->> 'status' AS turn_2;
BEGIN;
:as_authenticator
SET LOCAL request.jwt.claims = '{"sub": "jo@example.org", "tenant": "acme", "scope": "approvals:respond"}';
SELECT openwop.resolve_interrupt('acme/demo-chat-00000001', 'ask', '"no"') ->> 'status' AS turn_2_answered;
COMMIT;
SELECT openwop.interrupt('acme/demo-chat-00000001', 'ask',
         '{"kind": "conversation.close", "data": {"conversationId": "demo-expense-412", "reason": "goal-reached"}}', 4)
       ->> 'status' AS closing;
SELECT openwop.run_snapshot('acme/demo-chat-00000001') ->> 'status' AS "run status while it waits";
BEGIN;
:as_authenticator
SET LOCAL request.jwt.claims = '{"sub": "jo@example.org", "tenant": "acme", "scope": "approvals:respond"}';
SELECT openwop.resolve_interrupt('acme/demo-chat-00000001', 'ask', '{}') ->> 'status' AS closed;
COMMIT;
\echo '   (nothing is exchanged on a closed conversation)'
\set ON_ERROR_STOP 0
\echo '   [expected: the ERROR below is the refusal this step shows]'
SELECT openwop.interrupt('acme/demo-chat-00000001', 'ask',
         '{"kind": "conversation.exchange", "data": {"conversationId": "demo-expense-412", "prompt": "One more?"}}', 5);
\set ON_ERROR_STOP 1
SELECT openwop.complete_node('acme/demo-chat-00000001', 'ask', '{"project": "apollo"}') ->> 'status' AS ask;
SELECT openwop.complete_run('acme/demo-chat-00000001') ->> 'status' AS run;
SELECT (e ->> 'sequence')::int AS seq, e ->> 'type' AS type, e -> 'payload' AS payload
  FROM openwop.events('acme/demo-chat-00000001') AS e
 WHERE e ->> 'type' LIKE 'conversation.%' ORDER BY 1;

\echo
\echo '== 8. Replay: a fork of the vetoed purchase order derives its rejection, never decides again; a branch asks again'
SELECT openwop.capabilities() -> 'replay' AS replay_family;
SELECT e ->> 'sequence' AS resolved_seq FROM openwop.events('acme/demo-po-000000002') e
 WHERE e ->> 'type' = 'interrupt.resolved' \gset
SELECT f ->> 'runId' AS replay_fork FROM openwop.fork_run('acme/demo-po-000000002',
         jsonb_build_object('mode', 'replay', 'fromSeq', :resolved_seq)) f \gset
\echo '   (the replay fork: the events from the fork point were derived from the recorded decision)'
SELECT (e ->> 'sequence')::int AS seq, e ->> 'type' AS type,
       e #>> '{payload,decision}' AS decision, e #>> '{payload,resolvedBy,subjectId}' AS resolved_by,
       e #>> '{payload,error,code}' AS error
  FROM openwop.events(:'replay_fork') e WHERE (e ->> 'sequence')::int >= :resolved_seq ORDER BY 1;
SELECT s ->> 'status' AS fork_status, s #>> '{error,code}' AS fork_error
  FROM openwop.run_snapshot(:'replay_fork') s;
\echo '   (answering the replay fork is refused: the decision is history)'
\set ON_ERROR_STOP 0
\echo '   [expected: the ERROR below is the refusal this step shows]'
BEGIN;
:as_authenticator
SET LOCAL request.jwt.claims = '{"sub": "alice@example.org", "tenant": "acme", "scope": "approvals:respond"}';
SELECT openwop.resolve_interrupt(:'replay_fork', 'sign-off', '{"action": "accept"}');
ROLLBACK;
\set ON_ERROR_STOP 1
\echo '   (a branch from the same point is a new run that asks again)'
SELECT f ->> 'runId' AS branch FROM openwop.fork_run('acme/demo-po-000000002',
         jsonb_build_object('mode', 'branch', 'fromSeq', :resolved_seq)) f \gset
SELECT openwop.run_snapshot(:'branch') ->> 'status' AS branch_status,
       (SELECT count(*) FROM openwop.interrupts i WHERE i.run_id = :'branch' AND i.status = 'pending') AS pending_in_branch;

\echo
\echo '== The approval runs, from the log'
SELECT e ->> 'runId' AS run,
       (e ->> 'sequence')::int AS seq,
       e ->> 'type' AS type,
       (e -> 'payload') - 'nodeId' - 'interruptId' - 'key' - 'durationMs' - 'openwop-eligibility' - 'data' - 'owner'
         #- '{resumeValue,decidedAt}' #- '{resolvedBy,tenant}' #- '{resolvedBy,lane}' #- '{resolvedBy,kind}' AS payload
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
       (e -> 'payload') - 'nodeId' - 'durationMs' - 'interruptId' - 'key' - 'owner' - 'openwop-eligibility'
         #- '{resumeValue,decidedAt}' #- '{resolvedBy,tenant}' #- '{resolvedBy,lane}' #- '{resolvedBy,kind}' AS payload
  FROM (VALUES ('acme/demo-expense-0001'), ('acme/demo-expense-0002')) AS r(id),
       openwop.events(r.id) AS e
 ORDER BY 1, 2;

\echo '== Snapshots (openwop.run_snapshot)'
SELECT s ->> 'runId' AS run, s ->> 'status' AS status, s #> '{owner,subject,subjectId}' AS owner
  FROM (VALUES ('acme/demo-expense-0001'), ('acme/demo-expense-0002')) AS r(id),
       openwop.run_snapshot(r.id) AS s;

\echo
\echo '== The demo is over: every step did what it says (each ERROR above was marked expected).'
