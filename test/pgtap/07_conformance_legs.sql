-- The legs of the OpenWOP conformance scenarios
-- v2-approval-reject-disposition and v2-interrupt-resolve-terminal,
-- translated to SQL one by one, each named after its requirement id.
-- Fixtures are the suite's:
-- conformance-approval is a single gate node "gate" with actions
-- accept|reject; the quorum fixture has requiredApprovals 3, majority.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir refusal.psql
\ir callers.psql

CREATE FUNCTION pg_temp.fixture(run text, data jsonb DEFAULT '{}', def jsonb DEFAULT NULL, extra jsonb DEFAULT '{}',
                                node text DEFAULT 'gate') RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM openwop.create_run('conformance-approval', jsonb_build_object('runId', run)
            || CASE WHEN def IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('definition', def) END);
  PERFORM openwop.start_node(run, node);
  PERFORM openwop.interrupt(run, node, jsonb_build_object('kind', 'approval', 'data',
            jsonb_build_object('artifactId', 'conformance', 'artifactType', 'fixture', 'title', 'Approve?',
                               'actions', '["accept", "reject"]'::jsonb) || data) || extra);
END $$;
CREATE FUNCTION pg_temp.payload(run text, type text, node text DEFAULT NULL) RETURNS jsonb LANGUAGE sql AS $$
  SELECT e->'payload' FROM openwop.events(run, -1, 10000) e
   WHERE e->>'type' = type AND (node IS NULL OR e->>'nodeId' = node)
   ORDER BY (e->>'sequence')::int DESC LIMIT 1
$$;
CREATE FUNCTION pg_temp.count_of(run text, type text, node text DEFAULT NULL) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM openwop.events(run, -1, 10000) e WHERE e->>'type' = type AND (node IS NULL OR e->>'nodeId' = node)
$$;

-- v2-approval-reject-disposition: conformance-approval, reject
DO $$ BEGIN PERFORM pg_temp.fixture('acme/conf-reject-0000001');
  PERFORM openwop.resolve_interrupt('acme/conf-reject-0000001', 'gate', '{"action": "reject"}'); END $$;
SELECT is(openwop.run_snapshot('acme/conf-reject-0000001') ->> 'status', 'failed',
          'openwop.requirement.0223.reject-fails-run: the run ends failed');
SELECT is(openwop.run_snapshot('acme/conf-reject-0000001') -> 'error' ->> 'code', 'approval_rejected',
          'openwop.requirement.0223.reject-fails-run: snapshot error.code is approval_rejected');
SELECT is(pg_temp.payload('acme/conf-reject-0000001', 'run.failed') -> 'error' ->> 'code', 'approval_rejected',
          'openwop.requirement.0223.reject-fails-run: run.failed error.code is approval_rejected');
SELECT is(pg_temp.payload('acme/conf-reject-0000001', 'interrupt.resolved') ->> 'action', 'reject',
          'openwop.requirement.0223.reject-recorded: interrupt.resolved action is reject');
SELECT is(pg_temp.payload('acme/conf-reject-0000001', 'interrupt.resolved') ->> 'decision', 'rejected',
          'openwop.requirement.0223.reject-recorded: interrupt.resolved decision is rejected');
SELECT is(pg_temp.payload('acme/conf-reject-0000001', 'node.failed', 'gate') -> 'error' ->> 'code', 'approval_rejected',
          'openwop.requirement.0223.reject-fails-node: node.failed error.code is approval_rejected');
SELECT is(pg_temp.payload('acme/conf-reject-0000001', 'node.failed', 'gate') -> 'error' -> 'retryable', 'false',
          'openwop.requirement.0223.reject-fails-node: node.failed retryable is false');
SELECT is(pg_temp.payload('acme/conf-reject-0000001', 'run.failed') ->> 'failedNodeId', 'gate',
          'openwop.requirement.0223.reject-fails-node: run.failed failedNodeId is gate');

-- quorum-reject-fails-run: conformance-interrupt-quorum (3, majority), two distinct voters
DO $$ BEGIN PERFORM pg_temp.fixture('acme/conf-quorum-0000001', '{"requiredApprovals": 3, "rejectionPolicy": "majority"}'); END $$;
SELECT is(pg_temp.as_request('{"sub": "approver-1", "tenant": "acme", "scope": "approvals:respond"}',
            $q$ SELECT openwop.resolve_interrupt('acme/conf-quorum-0000001', 'gate', '{"action": "reject"}') $q$) ->> 'status', 'pending',
          'openwop.requirement.0223.quorum-reject-fails-run: the first reject is accepted (2xx) and decides nothing');
SELECT is(openwop.run_snapshot('acme/conf-quorum-0000001') ->> 'status', 'waiting-approval',
          'openwop.requirement.0223.quorum-reject-fails-run: the run is still waiting-approval');
SELECT is(pg_temp.count_of('acme/conf-quorum-0000001', 'interrupt.resolved'), 0::bigint,
          'openwop.requirement.0223.quorum-reject-fails-run: no interrupt.resolved after the first vote');
SELECT is(pg_temp.as_request('{"sub": "approver-2", "tenant": "acme", "scope": "approvals:respond"}',
            $q$ SELECT openwop.resolve_interrupt('acme/conf-quorum-0000001', 'gate', '{"action": "reject"}') $q$) ->> 'runStatus', 'failed',
          'openwop.requirement.0223.quorum-reject-fails-run: the second reject fails the run');
SELECT is(openwop.run_snapshot('acme/conf-quorum-0000001') -> 'error' ->> 'code', 'approval_rejected',
          'openwop.requirement.0223.quorum-reject-fails-run: with approval_rejected');

-- reject-routed: gate -any_failed-> on-reject, gate -all_success-> on-accept
DO $$ BEGIN PERFORM pg_temp.fixture('acme/conf-routed-0000001', '{}',
  '{"nodes": [{"id": "gate"}, {"id": "on-reject"}, {"id": "on-accept"}],
    "edges": [{"from": "gate", "to": "on-reject", "triggerRule": "any_failed"},
              {"from": "gate", "to": "on-accept", "triggerRule": "all_success"}]}');
  PERFORM openwop.resolve_interrupt('acme/conf-routed-0000001', 'gate', '{"action": "reject"}');
  -- the engine runs whatever fires
  PERFORM openwop.start_node('acme/conf-routed-0000001', 'on-reject');
  PERFORM openwop.complete_node('acme/conf-routed-0000001', 'on-reject');
  BEGIN
    PERFORM openwop.start_node('acme/conf-routed-0000001', 'on-accept');
  EXCEPTION WHEN SQLSTATE 'PT409' THEN NULL;   -- does not fire
  END;
  PERFORM openwop.complete_run('acme/conf-routed-0000001'); END $$;
SELECT is(pg_temp.payload('acme/conf-routed-0000001', 'node.failed', 'gate') -> 'error',
          '{"code": "approval_rejected", "message": "the approval was rejected", "retryable": false}',
          'openwop.requirement.0223.reject-routed: gate node.failed {approval_rejected, retryable: false}');
SELECT is(pg_temp.count_of('acme/conf-routed-0000001', 'node.completed', 'on-reject'), 1::bigint,
          'openwop.requirement.0223.reject-routed: on-reject reaches node.completed');
SELECT is(pg_temp.count_of('acme/conf-routed-0000001', 'node.started', 'on-accept')
          + pg_temp.count_of('acme/conf-routed-0000001', 'node.completed', 'on-accept'), 0::bigint,
          'openwop.requirement.0223.reject-routed: on-accept has no node.started or node.completed');
SELECT is(openwop.run_snapshot('acme/conf-routed-0000001') ->> 'status', 'completed',
          'openwop.requirement.0223.reject-routed: the run completes');

-- timeout-rejects (timeoutMs 1500, no onTimeout) and timeout-never-grants (onTimeout approve)
DO $$ BEGIN PERFORM pg_temp.fixture('acme/conf-timeout-000001', '{}', NULL, '{"timeoutMs": 1500}');
  PERFORM pg_temp.fixture('acme/conf-timeout-000002', '{"onTimeout": "approve"}', NULL, '{"timeoutMs": 1500}'); END $$;
UPDATE openwop.interrupts SET expires_at = now() - interval '1 millisecond'
 WHERE run_id IN ('acme/conf-timeout-000001', 'acme/conf-timeout-000002');
SELECT is(openwop.sweep(), 2, 'the deadlines pass and the sweeper applies them');
SELECT is(pg_temp.payload('acme/conf-timeout-000001', 'interrupt.resolved') - 'interruptId' - 'nodeId' - 'kind',
          '{"action": "timeout", "decision": "rejected", "reason": "timeout",
            "resolvedBy": {"issuer": "urn:openwop-interrupt:host", "subjectId": "deadline", "tenant": "acme", "lane": "workload", "kind": "workload"}}',
          'openwop.requirement.0223.timeout-rejects: interrupt.resolved {action timeout, decision rejected, reason timeout}, resolvedBy the host''s subject');
SELECT is(pg_temp.payload('acme/conf-timeout-000001', 'node.failed', 'gate') -> 'error' ->> 'code', 'approval_rejected',
          'openwop.requirement.0223.timeout-rejects: gate node.failed approval_rejected');
SELECT is(pg_temp.payload('acme/conf-timeout-000001', 'run.failed') - 'durationMs',
          '{"error": {"code": "approval_rejected", "message": "the approval timed out", "retryable": false}, "failedNodeId": "gate"}',
          'openwop.requirement.0223.timeout-rejects: run.failed {approval_rejected, failedNodeId gate}, status failed');
SELECT is(pg_temp.payload('acme/conf-timeout-000002', 'interrupt.resolved') ->> 'decision', 'rejected',
          'openwop.requirement.0223.timeout-never-grants: onTimeout approve still records decision rejected');
SELECT is(openwop.run_snapshot('acme/conf-timeout-000002') ->> 'status', 'failed',
          'openwop.requirement.0223.timeout-never-grants: the run fails, never completes');

-- reject-loopback-reasks: start -any_success-> gate -any_failed-> revise -any_success-> gate
DO $$ BEGIN
  PERFORM openwop.create_run('conformance-approval-reject-loopback', '{"runId": "acme/conf-loopback-00001",
    "definition": {"nodes": [{"id": "start"}, {"id": "gate"}, {"id": "revise"}],
                   "edges": [{"from": "start", "to": "gate", "triggerRule": "any_success"},
                             {"from": "gate", "to": "revise", "triggerRule": "any_failed"},
                             {"from": "revise", "to": "gate", "triggerRule": "any_success"}]}}');
  PERFORM openwop.start_node('acme/conf-loopback-00001', 'start');
  PERFORM openwop.complete_node('acme/conf-loopback-00001', 'start');
  PERFORM openwop.start_node('acme/conf-loopback-00001', 'gate');
  PERFORM openwop.interrupt('acme/conf-loopback-00001', 'gate', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "d", "title": "T", "actions": ["accept", "reject"]}}');
  PERFORM openwop.resolve_interrupt('acme/conf-loopback-00001', 'gate', '{"action": "reject"}');
  PERFORM openwop.start_node('acme/conf-loopback-00001', 'revise');
  PERFORM openwop.complete_node('acme/conf-loopback-00001', 'revise');
  PERFORM openwop.start_node('acme/conf-loopback-00001', 'gate');
  PERFORM openwop.interrupt('acme/conf-loopback-00001', 'gate', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "d", "title": "T", "actions": ["accept", "reject"]}}');
END $$;
SELECT is(pg_temp.count_of('acme/conf-loopback-00001', 'interrupt.requested', 'gate'), 2::bigint,
          'openwop.requirement.0223.reject-loopback-reasks: a second interrupt.requested for the gate');
SELECT is((SELECT count(DISTINCT e->'payload'->>'key') FROM openwop.events('acme/conf-loopback-00001') e
            WHERE e->>'type' = 'interrupt.requested'), 2::bigint,
          'openwop.requirement.0223.reject-loopback-reasks: the second key differs from the first');
SELECT is(openwop.run_snapshot('acme/conf-loopback-00001') ->> 'status', 'waiting-approval',
          'openwop.requirement.0223.reject-loopback-reasks: the run is waiting-approval again');
SELECT is(pg_temp.count_of('acme/conf-loopback-00001', 'interrupt.resolved'), 1::bigint,
          'openwop.requirement.0223.reject-loopback-reasks: exactly one interrupt.resolved in the log');

-- v2-interrupt-resolve-terminal
DO $$ BEGIN PERFORM pg_temp.fixture('acme/conf-terminal-00001');
  PERFORM openwop.cancel_run('acme/conf-terminal-00001'); END $$;
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/conf-terminal-00001', 'gate', '{"action": "accept"}') $$)
            - 'details',
          '{"sqlstate": "PT409", "code": "interrupt_already_resolved"}',
          'openwop.requirement.0213.resolve-after-cancel: 409 interrupt_already_resolved, never interrupt_cancelled');
DO $$ BEGIN PERFORM pg_temp.fixture('acme/conf-terminal-00002');
  PERFORM openwop.resolve_interrupt('acme/conf-terminal-00002', 'gate', '{"action": "accept"}');
  PERFORM openwop.complete_node('acme/conf-terminal-00002', 'gate');
  PERFORM openwop.complete_run('acme/conf-terminal-00002'); END $$;
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/conf-terminal-00002', 'gate', '{"action": "accept"}') $$)
            - 'details',
          '{"sqlstate": "PT409", "code": "interrupt_already_resolved"}',
          'openwop.requirement.0213.resolve-after-complete: 409 interrupt_already_resolved');
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/openwopconformanceunknown1764403200', 'gate', '{"action": "accept"}') $$)
            - 'details',
          '{"sqlstate": "PT404", "code": "not_found"}',
          'openwop.requirement.0213.resolve-unknown-run: 404 not_found');

SELECT * FROM finish();
ROLLBACK;
