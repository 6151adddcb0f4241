-- Approval gates (the OpenWOP interrupt page, "Approval", "Rejection" and
-- "Approver enforcement"): actions, votes and quorum, veto and majority,
-- eligibility by list, group and role, overrides, fail-closed rejection
-- and trigger rules, timeouts, low-confidence escalation.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir refusal.psql
\ir callers.psql
\ir events.psql

CREATE FUNCTION pg_temp.gate(run text, data jsonb, node text DEFAULT 'gate', def jsonb DEFAULT NULL,
                             extra jsonb DEFAULT '{}') RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM openwop.create_run('approvals', jsonb_build_object('runId', run)
            || CASE WHEN def IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('definition', def) END);
  PERFORM openwop.start_node(run, node);
  PERFORM openwop.interrupt(run, node, jsonb_build_object('kind', 'approval', 'data',
            jsonb_build_object('artifactId', 'a', 'artifactType', 'doc', 'title', 'T') || data) || extra);
END $$;
-- resolve as principal who (a request session's JWT sub, with the scope)
CREATE FUNCTION pg_temp.vote(run text, who text, value jsonb, node text DEFAULT 'gate') RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_request(jsonb_build_object('sub', who, 'tenant', current_setting('openwop.tenant'), 'scope', 'approvals:respond'),
                            format('SELECT openwop.resolve_interrupt(%L, %L, %L)', run, node, value))
$$;
CREATE FUNCTION pg_temp.resolved(run text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT e->'payload' FROM openwop.events(run, -1, 10000) e WHERE e->>'type' = 'interrupt.resolved'
$$;

-- quorum: 2 of 3 named principals
DO $$ BEGIN PERFORM pg_temp.gate('acme/ap-quorum-0000001', '{"actions": ["accept", "reject", "ask"], "requiredApprovals": 2,
                                                "approversList": ["alice", "bob", "carol"]}'); END $$;
SELECT is(pg_temp.vote('acme/ap-quorum-0000001', 'alice', '{"action": "accept"}') - 'interruptId',
          '{"runId": "acme/ap-quorum-0000001", "nodeId": "gate", "status": "pending", "action": "accept", "counted": true,
            "tally": {"accepts": 1, "rejects": 0, "requiredApprovals": 2, "voters": 1}}',
          'a vote that decides nothing says it was counted, with the tally');
SELECT is(pg_temp.types('acme/ap-quorum-0000001'), 'run.started,node.started,interrupt.requested,node.suspended',
          'a vote that decides nothing appends no interrupt.resolved');
SELECT is(openwop.run_snapshot('acme/ap-quorum-0000001') ->> 'status', 'waiting-approval', '... and the run keeps waiting');
SELECT is(pg_temp.vote('acme/ap-quorum-0000001', 'alice', '{"action": "ask", "feedback": "which budget?"}') ->> 'counted',
          'false', 'ask is recorded, not counted, and does not exit the suspend');
SELECT is(pg_temp.vote('acme/ap-quorum-0000001', 'alice', '{"action": "accept"}') -> 'tally' ->> 'accepts', '1',
          'one vote per voter: a re-vote replaces the earlier one');
SELECT is((SELECT array_agg(v.action ORDER BY v.revision) FROM openwop.votes v JOIN openwop.interrupts i USING (tenant, interrupt_id)
            WHERE i.run_id = 'acme/ap-quorum-0000001' AND voter = 'alice'),
          ARRAY['accept', 'ask', 'accept'], '... and every vote stays auditable');
-- a one-vote gate: the deciding answer is recorded once, in interrupt.resolved
DO $$ BEGIN PERFORM pg_temp.gate('acme/ap-onevote-000001', '{"actions": ["accept", "reject", "ask"], "approversList": ["alice"]}'); END $$;
DO $$ BEGIN PERFORM pg_temp.vote('acme/ap-onevote-000001', 'alice', '{"action": "ask", "feedback": "which budget?"}');
            PERFORM pg_temp.vote('acme/ap-onevote-000001', 'alice', '{"action": "accept"}'); END $$;
SELECT is((SELECT array_agg(v.action ORDER BY v.revision) FROM openwop.votes v JOIN openwop.interrupts i USING (tenant, interrupt_id)
            WHERE i.run_id = 'acme/ap-onevote-000001'),
          ARRAY['ask'], 'a one-vote gate keeps its asks as votes; the deciding answer is not also a vote row');
SELECT is(pg_temp.resolved('acme/ap-onevote-000001') - 'resumeValue' - 'interruptId',
          '{"nodeId": "gate", "kind": "approval", "decision": "granted", "action": "accept",
            "resolvedBy": {"issuer": "urn:openwop-interrupt:jwt", "subjectId": "alice", "tenant": "acme", "lane": "oauth2", "kind": "user"},
            "openwop-eligibility": {"principal": "alice", "matched": ["approversList"], "groups": [], "roles": [], "override": false,
              "subject": {"issuer": "urn:openwop-interrupt:jwt", "subjectId": "alice", "tenant": "acme", "lane": "oauth2", "kind": "user"}}}',
          '... it is recorded once, in interrupt.resolved, with the eligibility decision');
SELECT is(pg_temp.refusal($$ SELECT pg_temp.vote('acme/ap-quorum-0000001', 'mallory', '{"action": "accept"}') $$)->>'code',
          'forbidden', 'approversList binds: an unlisted principal is forbidden');
SELECT is(openwop.run_snapshot('acme/ap-quorum-0000001') ->> 'status', 'waiting-approval', '... and the run stays waiting');
SELECT is(pg_temp.vote('acme/ap-quorum-0000001', 'bob', '{"action": "accept"}') ->> 'decision', 'granted',
          'accepts reaching requiredApprovals grant the gate');
SELECT is(pg_temp.resolved('acme/ap-quorum-0000001') - 'interruptId' #- '{resumeValue,decidedAt}',
          '{"nodeId": "gate", "kind": "approval", "action": "accept", "decision": "granted",
            "resolvedBy": {"issuer": "urn:openwop-interrupt:jwt", "subjectId": "bob", "tenant": "acme", "lane": "oauth2", "kind": "user"},
            "resumeValue": {"action": "accept", "decidedBy": "bob"},
            "openwop-eligibility": {"principal": "bob", "matched": ["approversList"], "groups": [], "roles": [], "override": false,
              "subject": {"issuer": "urn:openwop-interrupt:jwt", "subjectId": "bob", "tenant": "acme", "lane": "oauth2", "kind": "user"}}}',
          'interrupt.resolved records action, decision, the resolver and the eligibility decided at vote time');

-- single-veto (the default): one eligible reject rejects, even with accepts in
DO $$ BEGIN PERFORM pg_temp.gate('acme/ap-veto-000000001', '{"actions": ["accept", "reject"], "requiredApprovals": 3}'); END $$;
DO $$ BEGIN PERFORM pg_temp.vote('acme/ap-veto-000000001', 'alice', '{"action": "accept"}'); END $$;
SELECT is(pg_temp.vote('acme/ap-veto-000000001', 'bob', '{"action": "reject", "feedback": "no"}') ->> 'decision', 'rejected',
          'single-veto: one eligible reject rejects the gate');
SELECT is(pg_temp.types('acme/ap-veto-000000001'),
          'run.started,node.started,interrupt.requested,node.suspended,interrupt.resolved,node.failed,run.failed',
          'rejection is fail-closed in the same transaction: node.failed then run.failed');
SELECT is((SELECT e->'payload'->'error' FROM openwop.events('acme/ap-veto-000000001') e WHERE e->>'type' = 'node.failed'),
          '{"code": "approval_rejected", "message": "the approval was rejected", "retryable": false}',
          'node.failed {approval_rejected, retryable: false}');
SELECT is((SELECT e->'payload'->>'failedNodeId' FROM openwop.events('acme/ap-veto-000000001') e WHERE e->>'type' = 'run.failed'),
          'gate', 'run.failed names the gate in failedNodeId');
SELECT is(openwop.run_snapshot('acme/ap-veto-000000001') -> 'error' ->> 'code', 'approval_rejected', 'the snapshot error is approval_rejected');

-- majority: rejects above half of requiredApprovals
DO $$ BEGIN PERFORM pg_temp.gate('acme/ap-majority-000001', '{"actions": ["accept", "reject"], "requiredApprovals": 3, "rejectionPolicy": "majority"}'); END $$;
SELECT is(pg_temp.vote('acme/ap-majority-000001', 'alice', '{"action": "reject"}') ->> 'status', 'pending',
          'majority: one reject of three decides nothing');
SELECT is(pg_temp.vote('acme/ap-majority-000001', 'bob', '{"action": "reject"}') ->> 'decision', 'rejected',
          'majority: the second reject (2 > 3/2) rejects');
SELECT is(pg_temp.resolved('acme/ap-majority-000001') ->> 'reason', 'quorum-reject', 'a quorum rejection records reason quorum-reject');
DO $$ BEGIN PERFORM pg_temp.gate('acme/ap-majority-000002', '{"actions": ["accept", "reject"], "requiredApprovals": 2, "rejectionPolicy": "majority"}'); END $$;
DO $$ BEGIN PERFORM pg_temp.vote('acme/ap-majority-000002', 'alice', '{"action": "reject"}'); END $$;
SELECT is(pg_temp.vote('acme/ap-majority-000002', 'bob', '{"action": "accept"}') ->> 'status', 'pending',
          'majority of 2: one reject is not more than half, the gate stays open');
SELECT is(pg_temp.vote('acme/ap-majority-000002', 'carol', '{"action": "accept"}') ->> 'decision', 'granted',
          '... and two accepts grant it');

-- groups (DBA-managed) and roles (PostgreSQL membership)
SELECT ok(openwop.add_group_member('finance', 'dave'), 'add_group_member adds a member');
SELECT ok(NOT openwop.add_group_member('finance', 'dave'), '... and reports an existing one');
CREATE ROLE openwop_tap_approvers;
CREATE ROLE openwop_tap_erin;
GRANT openwop_tap_approvers TO openwop_tap_erin;
DO $$ BEGIN PERFORM pg_temp.gate('acme/ap-refs-000000001', '{"actions": ["accept", "reject"], "requiredApprovals": 2,
                                               "approverGroupRefs": ["finance"], "approverRoleRefs": ["openwop_tap_approvers"],
                                               "audience": {"subjects": ["mallory"]}}'); END $$;
SELECT is(pg_temp.refusal($$ SELECT pg_temp.vote('acme/ap-refs-000000001', 'mallory', '{"action": "accept"}') $$)->>'code',
          'forbidden', 'audience never grants');
SELECT is(pg_temp.vote('acme/ap-refs-000000001', 'dave', '{"action": "accept"}') ->> 'counted', 'true',
          'a member of an approverGroupRefs group may vote');
SELECT is(pg_temp.refusal($$ SELECT pg_temp.vote('acme/ap-refs-000000001', 'openwop_tap_erin', '{"action": "accept"}') $$)->>'code',
          'forbidden', 'a JWT subject spelled like a role name does not hold the role');
-- a SQL session of a login holding the ref role (the login is the principal)
GRANT USAGE ON SCHEMA openwop TO openwop_tap_erin;
GRANT EXECUTE ON FUNCTION openwop.resolve_interrupt(text, text, jsonb, text) TO openwop_tap_erin;
GRANT openwop_approver TO openwop_tap_erin;
CREATE TEMP TABLE erin_vote (r jsonb);
GRANT ALL ON erin_vote TO openwop_tap_erin;
SET LOCAL openwop.bound_tenant = 'acme';
SET LOCAL SESSION AUTHORIZATION openwop_tap_erin;
INSERT INTO erin_vote SELECT openwop.resolve_interrupt('acme/ap-refs-000000001', 'gate', '{"action": "accept"}');
RESET SESSION AUTHORIZATION;
RESET openwop.bound_tenant;
SELECT is((SELECT r ->> 'decision' FROM erin_vote), 'granted',
          'a login holding an approverRoleRefs role may vote (GRANT grants approval rights)');
SELECT is((SELECT v.eligibility FROM openwop.votes v JOIN openwop.interrupts i USING (tenant, interrupt_id)
            WHERE i.run_id = 'acme/ap-refs-000000001' AND voter = 'dave'),
          '{"principal": "dave", "matched": ["group:finance"], "groups": ["finance"], "roles": [], "override": false,
            "subject": {"issuer": "urn:openwop-interrupt:jwt", "subjectId": "dave", "tenant": "acme", "lane": "oauth2", "kind": "user"}}',
          'the membership resolved at decision time is recorded with the vote');
SELECT ok(openwop.remove_group_member('finance', 'dave'), 'remove_group_member removes a member');
SELECT is((SELECT v.eligibility->'matched' FROM openwop.votes v JOIN openwop.interrupts i USING (tenant, interrupt_id)
            WHERE i.run_id = 'acme/ap-refs-000000001' AND voter = 'dave'),
          '["group:finance"]', 'a later membership change does not rewrite the recorded decision');
SELECT is(openwop.interrupt('acme/ap-refs-000000001', 'gate', '{"kind": "approval", "data": {}}') ->> 'decision', 'granted',
          'a replay returns the recorded decision; membership is not re-resolved');
SELECT is(openwop.capabilities() -> 'interrupt' -> 'refKinds', '["principal", "group", "role"]',
          'capabilities() advertises refKinds principal, group and role');

-- override principals
DO $$ BEGIN PERFORM openwop.add_group_member('openwop-override', 'cfo'); END $$;
DO $$ BEGIN PERFORM pg_temp.gate('acme/ap-override-00001', '{"actions": ["accept", "reject"], "requiredApprovals": 3, "overrideBypassesQuorum": true}'); END $$;
SELECT is(pg_temp.vote('acme/ap-override-00001', 'cfo', '{"action": "accept"}') ->> 'decision', 'overridden',
          'with overrideBypassesQuorum an override principal releases the gate alone (decision overridden)');
DO $$ BEGIN PERFORM pg_temp.gate('acme/ap-override-00002', '{"actions": ["accept", "reject"], "requiredApprovals": 2}'); END $$;
SELECT is(pg_temp.vote('acme/ap-override-00002', 'cfo', '{"action": "accept"}') -> 'tally' ->> 'accepts', '1',
          'without overrideBypassesQuorum an override vote counts once');
SELECT is(pg_temp.vote('acme/ap-override-00002', 'alice', '{"action": "accept"}') ->> 'decision', 'granted',
          '... and the quorum still decides');

-- routing: a rejected gate is a failed source
DO $$ BEGIN PERFORM pg_temp.gate('acme/ap-routed-0000001', '{"actions": ["accept", "reject"]}', 'gate',
  '{"nodes": [{"id": "gate"}, {"id": "on-accept"}, {"id": "on-reject"}, {"id": "after"}],
    "edges": [{"from": "gate", "to": "on-accept", "triggerRule": "all_success"},
              {"from": "gate", "to": "on-reject", "triggerRule": "any_failed"},
              {"from": "gate", "to": "after", "triggerRule": "none_failed"}]}'); END $$;
SELECT is(openwop.resolve_interrupt('acme/ap-routed-0000001', 'gate', '{"action": "reject"}') ->> 'runStatus', 'running',
          'with an any_failed edge out of the gate the run continues');
SELECT is(pg_temp.refusal($$ SELECT openwop.start_node('acme/ap-routed-0000001', 'on-accept') $$)->'details'->>'triggerRule',
          'all_success', 'a failed source does not satisfy all_success: start_node refuses');
SELECT is(pg_temp.refusal($$ SELECT openwop.start_node('acme/ap-routed-0000001', 'after') $$)->>'code',
          'run_state_conflict', 'nor none_failed');
SELECT is(openwop.start_node('acme/ap-routed-0000001', 'on-reject') ->> 'status', 'running', 'any_failed admits it');

-- timeouts (openwop.sweep(), which the worker also runs)
DO $$ BEGIN PERFORM pg_temp.gate('acme/ap-timeout-000001', '{"actions": ["accept", "reject"], "onTimeout": "approve"}', 'gate', NULL, '{"timeoutMs": 1}'); END $$;
DO $$ BEGIN PERFORM pg_temp.gate('acme/ap-timeout-000002', '{"actions": ["accept", "reject"]}', 'gate', NULL, '{"timeoutMs": 0}'); END $$;
DO $$ BEGIN PERFORM pg_temp.gate('acme/ap-timeout-000003', '{"actions": ["accept", "reject"]}'); END $$;
DO $$ BEGIN PERFORM openwop.create_run('approvals', '{"runId": "acme/ap-timeout-000004"}');
  PERFORM openwop.start_node('acme/ap-timeout-000004', 'ask');
  PERFORM openwop.start_node('acme/ap-timeout-000004', 'side');
  PERFORM openwop.interrupt('acme/ap-timeout-000004', 'ask', '{"kind": "external-event", "data": {"eventType": "paid", "correlation": {}}, "timeoutMs": 1}'); END $$;
-- deadlines are relative to the raising transaction's start: move them into the past
UPDATE openwop.interrupts SET expires_at = now() - interval '1 second' WHERE expires_at IS NOT NULL;
SELECT is(openwop.sweep(), 2, 'sweep applies the two due deadlines');
SELECT is(pg_temp.resolved('acme/ap-timeout-000001') - 'interruptId',
          '{"nodeId": "gate", "kind": "approval", "action": "timeout", "decision": "rejected", "reason": "timeout",
            "resolvedBy": {"issuer": "urn:openwop-interrupt:host", "subjectId": "deadline", "tenant": "acme", "lane": "workload", "kind": "workload"}}',
          'an approval past its deadline is rejected: {action timeout, decision rejected, reason timeout}, resolved by the host''s subject');
SELECT is(openwop.run_snapshot('acme/ap-timeout-000001') -> 'error' ->> 'code', 'approval_rejected',
          'a timeout never grants, whatever onTimeout says: the run fails approval_rejected');
SELECT is(pg_temp.types('acme/ap-timeout-000004'),
          'run.started,node.started,node.started,interrupt.requested,node.suspended,node.cancelled,node.cancelled,run.cancelled',
          'INT-18: another kind past its deadline expires and its run is cancelled, announced once');
SELECT is((SELECT status FROM openwop.interrupts WHERE run_id = 'acme/ap-timeout-000004'), 'expired', 'the interrupt is expired');
SELECT is(openwop.sweep(), 0, 'a second sweep finds nothing: the outcome is never announced twice');
SELECT is(openwop.run_snapshot('acme/ap-timeout-000002') ->> 'status', 'waiting-approval', 'INT-23: timeoutMs 0 never expires');
SELECT is(openwop.run_snapshot('acme/ap-timeout-000003') ->> 'status', 'waiting-approval', 'INT-23: no timeoutMs never expires');
-- a late answer (past the deadline, before any sweep)
DO $$ BEGIN PERFORM pg_temp.gate('acme/ap-timeout-000005', '{"actions": ["accept", "reject"]}', 'gate', NULL, '{"timeoutMs": 60000}'); END $$;
UPDATE openwop.interrupts SET expires_at = now() - interval '1 second' WHERE run_id = 'acme/ap-timeout-000005';
SELECT is(openwop.resolve_interrupt('acme/ap-timeout-000005', 'gate', '{"action": "accept"}') ->> 'status', 'expired',
          'a late accept is answered expired, returned not raised');
SELECT is(pg_temp.resolved('acme/ap-timeout-000005') ->> 'action', 'timeout', '... and the gate is rejected by timeout, never granted');

-- low-confidence escalation (the interrupt page, "Payload": kind low-confidence)
DO $$ BEGIN PERFORM openwop.create_run('approvals', '{"runId": "acme/ap-lowconf-000001", "configurable": {"version": 1, "run": {"escalationThreshold": 0.5}}}');
  PERFORM openwop.start_node('acme/ap-lowconf-000001', 'agent'); END $$;
SELECT is(openwop.record_agent_decision('acme/ap-lowconf-000001', 'agent', 'planner', 0.5, '{"plan": "a"}') ->> 'escalated',
          'false', 'confidence equal to the threshold does not escalate');
SELECT is(openwop.record_agent_decision('acme/ap-lowconf-000001', 'agent', 'planner', 'NaN', '{"plan": "b"}') ->> 'escalated',
          'false', 'a NaN confidence never escalates');
SELECT is(openwop.record_agent_decision('acme/ap-lowconf-000001', 'agent', 'planner', NULL) ->> 'escalated',
          'false', 'a missing confidence never escalates');
SELECT is(openwop.record_agent_decision('acme/ap-lowconf-000001', 'agent', 'planner', 0.49, '{"plan": "c"}') ->> 'escalated',
          'true', 'confidence below the run''s threshold escalates');
SELECT is((SELECT (e->'payload') - 'interruptId' - 'key' FROM openwop.events('acme/ap-lowconf-000001') e WHERE e->>'type' = 'node.suspended'),
          '{"nodeId": "agent", "kind": "low-confidence", "reason": "low-confidence"}',
          'agent.decided below the threshold is followed by node.suspended {reason: low-confidence}');
SELECT is((SELECT e->'payload'->'data' FROM openwop.events('acme/ap-lowconf-000001') e WHERE e->>'type' = 'interrupt.requested'),
          '{"agentId": "planner", "threshold": 0.5, "observed": 0.49, "decision": {"plan": "c"}}',
          'the low-confidence interrupt carries agentId, threshold and observed');
SELECT is(openwop.run_snapshot('acme/ap-lowconf-000001') ->> 'status', 'waiting-approval', 'the run waits for approval');
DO $$ BEGIN PERFORM openwop.create_run('approvals', '{"runId": "acme/ap-lowconf-000002"}');
  PERFORM openwop.start_node('acme/ap-lowconf-000002', 'agent'); END $$;
SELECT is(openwop.record_agent_decision('acme/ap-lowconf-000002', 'agent', 'planner', 0.69) ->> 'escalated',
          'true', 'without a run threshold the default 0.7 applies');
SELECT is(pg_temp.refusal($$ SELECT openwop.record_agent_decision('acme/ap-lowconf-000002', 'agent', 'planner', 1.5) $$)->'details'->>'field',
          'confidence', 'a confidence outside [0, 1] is refused');

-- an ask never withdraws an earlier vote
DO $$ BEGIN PERFORM pg_temp.gate('acme/ap-askkeep-000001', '{"actions": ["accept", "reject", "ask"], "requiredApprovals": 3, "rejectionPolicy": "majority"}');
  PERFORM pg_temp.vote('acme/ap-askkeep-000001', 'alice', '{"action": "reject"}');
  PERFORM pg_temp.vote('acme/ap-askkeep-000001', 'alice', '{"action": "ask"}'); END $$;
SELECT is(pg_temp.vote('acme/ap-askkeep-000001', 'bob', '{"action": "reject"}') ->> 'decision', 'rejected',
          'an ask after a reject leaves the reject counted');

-- refine sends the work back: the execution cannot complete until the gate is raised again and granted
DO $$ BEGIN PERFORM pg_temp.gate('acme/ap-refine-0000001', '{"actions": ["accept", "reject", "refine"], "requiredApprovals": 3, "rejectionPolicy": "majority"}');
  PERFORM pg_temp.vote('acme/ap-refine-0000001', 'alice', '{"action": "refine", "refineFeedback": {"scope": "whole", "text": "more detail"}}'); END $$;
SELECT is(pg_temp.resolved('acme/ap-refine-0000001') ->> 'decision', NULL, 'refine exits the suspend without granting');
SELECT is(pg_temp.refusal($$ SELECT openwop.complete_node('acme/ap-refine-0000001', 'gate') $$)->>'code',
          'run_state_conflict', 'a node whose gate was sent back with refine cannot complete');
DO $$ BEGIN PERFORM openwop.interrupt('acme/ap-refine-0000001', 'gate', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc", "title": "T v2", "actions": ["accept"]}}', 1);
  PERFORM pg_temp.vote('acme/ap-refine-0000001', 'alice', '{"action": "accept"}'); END $$;
SELECT is(openwop.complete_node('acme/ap-refine-0000001', 'gate') ->> 'status', 'completed',
          '... until the gate, raised again, is granted');

-- every incoming edge from a failed source must admit failure, whatever the first edge says
DO $$ BEGIN PERFORM openwop.create_run('approvals', '{"runId": "acme/ap-edges-00000001",
    "definition": {"nodes": [{"id": "prep"}, {"id": "gate"}, {"id": "ship"}, {"id": "notify"}],
                   "edges": [{"from": "prep", "to": "ship", "triggerRule": "all_complete"},
                             {"from": "gate", "to": "ship", "triggerRule": "all_success"},
                             {"from": "gate", "to": "notify", "triggerRule": "any_failed"}]}}');
  PERFORM openwop.start_node('acme/ap-edges-00000001', 'prep');
  PERFORM openwop.complete_node('acme/ap-edges-00000001', 'prep');
  PERFORM openwop.start_node('acme/ap-edges-00000001', 'gate');
  PERFORM openwop.interrupt('acme/ap-edges-00000001', 'gate', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc", "title": "T", "actions": ["accept", "reject"]}}');
  PERFORM openwop.resolve_interrupt('acme/ap-edges-00000001', 'gate', '{"action": "reject"}'); END $$;
SELECT is(pg_temp.refusal($$ SELECT openwop.start_node('acme/ap-edges-00000001', 'ship') $$)->>'code',
          'run_state_conflict', 'a failed source over an all_success edge blocks the node even if its first edge is all_complete');
SELECT is(pg_temp.refusal($$ SELECT openwop.start_node('acme/ap-edges-00000001', 'gate') $$)->>'code',
          'run_state_conflict', 'a node failed with retryable false is not retried');

-- a deadline too far away to represent never expires (and never stalls the worker)
DO $$ BEGIN PERFORM pg_temp.gate('acme/ap-farfuture-0001', '{"actions": ["accept"]}', 'gate', NULL, '{"timeoutMs": 9000000000000000}'); END $$;
SELECT is((SELECT expires_at FROM openwop.interrupts WHERE run_id = 'acme/ap-farfuture-0001'), NULL, 'timeoutMs beyond year 100000 is stored as no deadline');

-- only record_agent_decision escalates: a row inserted directly is history, not a decision
INSERT INTO openwop.events (tenant, run_id, sequence, type, node_id, payload, hash)
SELECT 'acme', 'acme/ap-lowconf-000002', next_sequence, 'agent.decided', 'agent', '{"agentId": "planner", "confidence": 0.1, "decision": null}', sha256('forged')
  FROM openwop.runs WHERE run_id = 'acme/ap-lowconf-000002';
SELECT is((SELECT count(*) FROM openwop.interrupts WHERE run_id = 'acme/ap-lowconf-000002'), 1::bigint,
          'a row inserted directly (restore, replication) never escalates');
DO $$ BEGIN PERFORM openwop.create_run('approvals', '{"runId": "acme/ap-lowconf-000003"}');
  PERFORM openwop.start_node('acme/ap-lowconf-000003', 'agent'); END $$;
SELECT is(openwop.record_agent_decision('acme/ap-lowconf-000003', 'agent', 'planner', 0.69999999999999984) ->> 'escalated',
          'true', 'a confidence a hair below the threshold escalates (no rounding to 15 digits)');
DO $$ BEGIN PERFORM openwop.create_run('approvals', '{"runId": "acme/ap-lowconf-000004"}');
  PERFORM openwop.start_node('acme/ap-lowconf-000004', 'agent'); END $$;
INSERT INTO openwop.events (tenant, run_id, sequence, type, node_id, payload, hash)
SELECT 'acme', 'acme/ap-lowconf-000004', next_sequence, 'agent.decided', 'agent', '{"agentId": "planner", "confidence": 0.1, "decision": null}', sha256('forged')
  FROM openwop.runs WHERE run_id = 'acme/ap-lowconf-000004';
SELECT is((SELECT count(*) FROM openwop.interrupts WHERE run_id = 'acme/ap-lowconf-000004'), 0::bigint,
          'a_direct_insert_never_escalates: a superuser''s INSERT of agent.decided below the threshold raises nothing on the open node');
SELECT is(openwop.run_snapshot('acme/ap-lowconf-000004') ->> 'status', 'running', '... and the run keeps running');

-- one decision below the threshold escalates exactly once
DO $$ BEGIN PERFORM openwop.create_run('approvals', '{"runId": "acme/ap-lowconf-000005"}');
  PERFORM openwop.start_node('acme/ap-lowconf-000005', 'agent'); END $$;
CREATE TEMP TABLE lowconf_once AS
SELECT openwop.record_agent_decision('acme/ap-lowconf-000005', 'agent', 'planner', 0.1, '{"plan": "d"}') AS r;
SELECT is((SELECT count(*) FROM openwop.interrupts WHERE run_id = 'acme/ap-lowconf-000005'), 1::bigint,
          'escalation_happens_once_per_decision: one low-confidence interrupt');
SELECT is(pg_temp.types('acme/ap-lowconf-000005'), 'run.started,node.started,agent.decided,interrupt.requested,node.suspended',
          '... agent.decided, then one interrupt.requested and one node.suspended');
SELECT is((SELECT r ->> 'interruptId' FROM lowconf_once), (SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/ap-lowconf-000005'),
          '... whose id the call returns');
SELECT is((SELECT (r ->> 'sequence')::bigint FROM lowconf_once),
          (SELECT (e ->> 'sequence')::bigint FROM openwop.events('acme/ap-lowconf-000005') e WHERE e ->> 'type' = 'agent.decided'),
          '... with the sequence of agent.decided');
SELECT is((SELECT r - 'interruptId' - 'sequence' FROM lowconf_once),
          '{"runId": "acme/ap-lowconf-000005", "nodeId": "agent", "escalated": true, "runStatus": "waiting-approval"}',
          '... and the run''s status after the escalation');
SELECT is((SELECT ROW(next_sequence, status, current_node_id)::text FROM openwop.runs WHERE run_id = 'acme/ap-lowconf-000005'),
          '(5,waiting-approval,agent)', 'the run row counts every event the decision appended');
SELECT is(pg_temp.refusal($$ SELECT openwop.record_agent_decision('acme/ap-lowconf-000005', 'agent', 'planner', 0.1) $$) ->> 'code',
          'run_state_conflict', 'a second decision on the suspended node is refused, not escalated again');

-- the other sides of the threshold
DO $$ BEGIN PERFORM openwop.create_run('approvals', '{"runId": "acme/ap-lowconf-000006", "configurable": {"version": 1, "run": {"escalationThreshold": 0.5}}}');
  PERFORM openwop.start_node('acme/ap-lowconf-000006', 'agent');
  PERFORM openwop.create_run('approvals', '{"runId": "acme/ap-lowconf-000007"}');
  PERFORM openwop.start_node('acme/ap-lowconf-000007', 'agent'); END $$;
SELECT is(openwop.record_agent_decision('acme/ap-lowconf-000006', 'agent', 'planner', 0.9) ->> 'escalated',
          'false', 'confidence above the threshold does not escalate');
SELECT is(openwop.record_agent_decision('acme/ap-lowconf-000006', 'agent', 'planner', 'Infinity') ->> 'escalated',
          'false', 'an infinite confidence never escalates');
SELECT is(openwop.record_agent_decision('acme/ap-lowconf-000006', 'agent', 'planner', '-Infinity') ->> 'escalated',
          'false', '... nor a negative infinite one');
SELECT is((SELECT count(*) FROM openwop.events('acme/ap-lowconf-000006') e WHERE e ->> 'type' = 'agent.decided' AND NOT e -> 'payload' ? 'confidence'),
          2::bigint, '... both recorded without a confidence');
SET LOCAL openwop.escalation_threshold = 0.3;
SELECT is(openwop.record_agent_decision('acme/ap-lowconf-000007', 'agent', 'planner', 0.4) ->> 'escalated',
          'false', 'without a run threshold openwop.escalation_threshold applies');
SELECT is(openwop.record_agent_decision('acme/ap-lowconf-000006', 'agent', 'planner', 0.4) ->> 'escalated',
          'true', 'the run''s threshold takes precedence over openwop.escalation_threshold');
RESET openwop.escalation_threshold;

SELECT * FROM finish();
ROLLBACK;
