-- fork_run() (forkRun, OpenWOP replay.md): the copied prefix, the state
-- folded from it, a replay fork deriving what its source recorded (the
-- conformance legs of openwop.requirement.0223.replay-derives-rejection),
-- a branch asking anew, the refusals, and who may fork what.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir refusal.psql
\ir callers.psql

-- conformance-approval: one gate "gate", accept|reject (+ data, + extra request members)
CREATE FUNCTION pg_temp.fixture(run text, data jsonb DEFAULT '{}', extra jsonb DEFAULT '{}') RETURNS void
    LANGUAGE plpgsql AS $$
BEGIN
  PERFORM openwop.create_run('conformance-approval', jsonb_build_object('runId', run));
  PERFORM openwop.start_node(run, 'gate');
  PERFORM openwop.interrupt(run, 'gate', pg_temp.gate(data, extra));
END $$;
CREATE FUNCTION pg_temp.gate(data jsonb DEFAULT '{}', extra jsonb DEFAULT '{}') RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('kind', 'approval', 'data',
           jsonb_build_object('artifactId', 'conformance', 'artifactType', 'fixture', 'title', 'Approve?',
                              'actions', '["accept", "reject"]'::jsonb) || data) || extra
$$;
CREATE FUNCTION pg_temp.ev(run text) RETURNS SETOF jsonb LANGUAGE sql AS $$
  SELECT e FROM openwop.events(run, -1, 10000) e
$$;
CREATE FUNCTION pg_temp.seq_of(run text, type text, node text DEFAULT 'gate') RETURNS bigint LANGUAGE sql AS $$
  SELECT min((e ->> 'sequence')::bigint) FROM pg_temp.ev(run) e WHERE e ->> 'type' = type AND e ->> 'nodeId' = node
$$;
CREATE FUNCTION pg_temp.payload(run text, type text, node text DEFAULT NULL) RETURNS jsonb LANGUAGE sql AS $$
  SELECT e -> 'payload' FROM pg_temp.ev(run) e
   WHERE e ->> 'type' = type AND (node IS NULL OR e ->> 'nodeId' = node)
   ORDER BY (e ->> 'sequence')::int DESC LIMIT 1
$$;
CREATE FUNCTION pg_temp.types(run text, after bigint DEFAULT -1) RETURNS text LANGUAGE sql AS $$
  SELECT string_agg(e ->> 'type', ',' ORDER BY (e ->> 'sequence')::int) FROM pg_temp.ev(run) e
   WHERE (e ->> 'sequence')::bigint > after
$$;
CREATE FUNCTION pg_temp.fork(run text, options jsonb) RETURNS text LANGUAGE sql AS $$
  SELECT openwop.fork_run(run, options) ->> 'runId'
$$;
-- an event as a replay must reproduce it: everything but the run's own ids
CREATE FUNCTION pg_temp.bare(e jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT e - 'eventId' - 'runId' || jsonb_build_object('payload', (e -> 'payload') - 'interruptId')
$$;
CREATE TEMP TABLE f (name text PRIMARY KEY, run text);

-- ==== leg A: a decided reject on conformance-approval, forked at the gate's interrupt.resolved ====
DO $$ BEGIN
  PERFORM pg_temp.fixture('acme/fork-leg-a-0000001');
  PERFORM openwop.resolve_interrupt('acme/fork-leg-a-0000001', 'gate', '{"action": "reject"}');
  INSERT INTO f VALUES ('a', pg_temp.fork('acme/fork-leg-a-0000001',
    jsonb_build_object('mode', 'replay', 'fromSeq', pg_temp.seq_of('acme/fork-leg-a-0000001', 'interrupt.resolved'))));
END $$;
SELECT is((SELECT count(*) FROM pg_temp.ev((SELECT run FROM f WHERE name = 'a')) e
            WHERE e ->> 'type' IN ('interrupt.requested', 'approval.requested') AND e ->> 'nodeId' = 'gate'
              AND (e ->> 'sequence')::bigint >= pg_temp.seq_of('acme/fork-leg-a-0000001', 'interrupt.resolved')),
          0::bigint,
          'openwop.requirement.0223.replay-derives-rejection (A): no interrupt.requested for gate at or after fromSeq');
SELECT is(pg_temp.payload((SELECT run FROM f WHERE name = 'a'), 'interrupt.resolved') - 'interruptId',
          pg_temp.payload('acme/fork-leg-a-0000001', 'interrupt.resolved') - 'interruptId',
          'openwop.requirement.0223.replay-derives-rejection (A): the fork''s interrupt.resolved is the source''s (decision, action, reason, resolvedBy, resumeValue)');
SELECT is(pg_temp.payload((SELECT run FROM f WHERE name = 'a'), 'interrupt.resolved') ->> 'decision', 'rejected',
          'openwop.requirement.0223.replay-derives-rejection (A): ... decision rejected, action reject');
SELECT is(openwop.run_snapshot((SELECT run FROM f WHERE name = 'a')) ->> 'status', 'failed',
          'openwop.requirement.0223.replay-derives-rejection (A): the fork ends failed');
SELECT is(pg_temp.payload((SELECT run FROM f WHERE name = 'a'), 'run.failed') - 'durationMs',
          '{"error": {"code": "approval_rejected", "message": "the approval was rejected", "retryable": false}, "failedNodeId": "gate"}',
          'openwop.requirement.0223.replay-derives-rejection (A): run.failed {approval_rejected, failedNodeId gate}');
SELECT is(pg_temp.payload((SELECT run FROM f WHERE name = 'a'), 'node.failed', 'gate') -> 'error' -> 'retryable', 'false',
          'openwop.requirement.0223.replay-derives-rejection (A): node.failed retryable is false');
SELECT is(pg_temp.refusal(format($$ SELECT openwop.resolve_interrupt(%L, 'gate', '{"action": "accept"}') $$,
                                 (SELECT run FROM f WHERE name = 'a'))) ->> 'code', 'interrupt_already_resolved',
          'openwop.requirement.0223.replay-derives-rejection (A): resolving the fork is 409 interrupt_already_resolved');
SELECT is(pg_temp.types((SELECT run FROM f WHERE name = 'a')), pg_temp.types('acme/fork-leg-a-0000001'),
          'the replay fork''s log has the source''s events in the source''s order');
SELECT is((SELECT array_agg(pg_temp.bare(e) ORDER BY (e ->> 'sequence')::int) FROM pg_temp.ev((SELECT run FROM f WHERE name = 'a')) e
            WHERE (e ->> 'sequence')::int < 4),
          (SELECT array_agg(pg_temp.bare(e) ORDER BY (e ->> 'sequence')::int) FROM pg_temp.ev('acme/fork-leg-a-0000001') e
            WHERE (e ->> 'sequence')::int < 4),
          'fork_prefix_copied: below fromSeq the fork''s events are the source''s (payload, sequence, timestamp), but for the run''s own ids');
SELECT isnt(pg_temp.payload((SELECT run FROM f WHERE name = 'a'), 'node.suspended') ->> 'interruptId',
            pg_temp.payload('acme/fork-leg-a-0000001', 'node.suspended') ->> 'interruptId',
            'fork_interrupt_ids: the fork''s interrupts have ids of their own ...');
SELECT is(pg_temp.payload((SELECT run FROM f WHERE name = 'a'), 'node.suspended') ->> 'interruptId',
          pg_temp.payload((SELECT run FROM f WHERE name = 'a'), 'interrupt.resolved') ->> 'interruptId',
          '... and its log names them consistently');
SELECT is((SELECT run_id FROM openwop.interrupts WHERE interrupt_id =
            pg_temp.payload((SELECT run FROM f WHERE name = 'a'), 'node.suspended') ->> 'interruptId'),
          (SELECT run FROM f WHERE name = 'a'), '... each one the fork''s');

-- ==== leg B: a timeout on an approval with onTimeout "approve" ====
DO $$ BEGIN PERFORM pg_temp.fixture('acme/fork-leg-b-0000001', '{"onTimeout": "approve"}', '{"timeoutMs": 1500}'); END $$;
UPDATE openwop.interrupts SET expires_at = now() - interval '1 millisecond' WHERE run_id = 'acme/fork-leg-b-0000001';
SELECT is(openwop.sweep(), 1, 'the deadline passes and the sweep applies it');
DO $$ BEGIN
  INSERT INTO f VALUES ('b', pg_temp.fork('acme/fork-leg-b-0000001',
    jsonb_build_object('mode', 'replay', 'fromSeq', pg_temp.seq_of('acme/fork-leg-b-0000001', 'interrupt.resolved'))));
END $$;
SELECT is((SELECT count(*) FROM pg_temp.ev((SELECT run FROM f WHERE name = 'b')) e
            WHERE e ->> 'type' = 'interrupt.requested'
              AND (e ->> 'sequence')::bigint >= pg_temp.seq_of('acme/fork-leg-b-0000001', 'interrupt.resolved')),
          0::bigint,
          'openwop.requirement.0223.replay-derives-rejection (B): no interrupt.requested for gate at or after fromSeq');
SELECT is(pg_temp.payload((SELECT run FROM f WHERE name = 'b'), 'interrupt.resolved') - 'interruptId' - 'nodeId' - 'kind',
          '{"action": "timeout", "decision": "rejected", "reason": "timeout",
            "resolvedBy": {"issuer": "urn:openwop-interrupt:host", "subjectId": "deadline", "tenant": "acme", "lane": "workload", "kind": "workload"}}',
          'openwop.requirement.0223.replay-derives-rejection (B): action timeout, decision rejected, reason timeout');
SELECT is(pg_temp.payload((SELECT run FROM f WHERE name = 'b'), 'interrupt.resolved') -> 'resolvedBy',
          pg_temp.payload('acme/fork-leg-b-0000001', 'interrupt.resolved') -> 'resolvedBy',
          'openwop.requirement.0223.replay-derives-rejection (B): resolvedBy is the source''s');
SELECT is(pg_temp.payload((SELECT run FROM f WHERE name = 'b'), 'run.failed') - 'durationMs',
          '{"error": {"code": "approval_rejected", "message": "the approval timed out", "retryable": false}, "failedNodeId": "gate"}',
          'openwop.requirement.0223.replay-derives-rejection (B): the fork fails approval_rejected naming gate');
SELECT is(pg_temp.payload((SELECT run FROM f WHERE name = 'b'), 'node.failed', 'gate') -> 'error' -> 'retryable', 'false',
          'openwop.requirement.0223.replay-derives-rejection (B): node.failed retryable is false');
SELECT is(pg_temp.refusal(format($$ SELECT openwop.resolve_interrupt(%L, 'gate', '{"action": "accept"}') $$,
                                 (SELECT run FROM f WHERE name = 'b'))) ->> 'code', 'interrupt_already_resolved',
          'openwop.requirement.0223.replay-derives-rejection (B): resolving the fork is 409 interrupt_already_resolved');

-- ==== a replay from the start: the engine re-executes, interrupt() derives ====
DO $$ BEGIN
  PERFORM openwop.create_run('wf', '{"runId": "acme/fork-restart-000001", "metadata": {"m": 1}}');
  PERFORM openwop.start_node('acme/fork-restart-000001', 'gate');
  PERFORM openwop.interrupt('acme/fork-restart-000001', 'gate', pg_temp.gate('{"approversList": ["alice"]}'));
END $$;
SELECT is(pg_temp.as_request('{"sub": "alice", "tenant": "acme", "scope": "approvals:respond"}',
            $q$ SELECT openwop.resolve_interrupt('acme/fork-restart-000001', 'gate', '{"action": "accept"}') $q$) ->> 'decision',
          'granted', 'the source''s gate is granted by alice, an eligible approver');
SELECT is(openwop.fork_run('acme/fork-restart-000001', '{"mode": "replay"}') - 'runId',
          '{"mode": "replay", "status": "running", "fromSeq": 0, "sequence": 0, "workflowId": "wf",
            "sourceRunId": "acme/fork-restart-000001"}',
          'fork_run_result: {runId, sourceRunId, mode, fromSeq (0 by default for a replay), status, workflowId, sequence}');
INSERT INTO f SELECT 'restart', run_id FROM openwop.forks WHERE source_run_id = 'acme/fork-restart-000001';
SELECT is(pg_temp.types((SELECT run FROM f WHERE name = 'restart')), 'run.started',
          'fromSeq 0: the fork begins with the source''s run.started, re-executed');
SELECT is(pg_temp.payload((SELECT run FROM f WHERE name = 'restart'), 'run.started'),
          pg_temp.payload('acme/fork-restart-000001', 'run.started'),
          '... the same payload: owner copied verbatim (runs.md "Fork"), metadata');
SELECT is(openwop.run_snapshot((SELECT run FROM f WHERE name = 'restart')) -> 'owner',
          openwop.run_snapshot('acme/fork-restart-000001') -> 'owner', 'the fork''s owner is the source''s');
SELECT is(openwop.start_node((SELECT run FROM f WHERE name = 'restart'), 'gate') ->> 'visit', '0',
          'the engine re-executes the gate''s node');
SELECT is(openwop.interrupt((SELECT run FROM f WHERE name = 'restart'), 'gate', pg_temp.gate('{"approversList": ["alice"]}'))
            - 'interruptId',
          jsonb_build_object('status', 'resolved', 'decision', 'granted', 'action', 'accept',
            'resumeValue', pg_temp.payload('acme/fork-restart-000001', 'interrupt.resolved') -> 'resumeValue',
            'resolvedBy', pg_temp.payload('acme/fork-restart-000001', 'interrupt.resolved') -> 'resolvedBy'),
          'replay_interrupt_derives: interrupt() in the replay fork returns the source''s recorded resolution');
SELECT is(pg_temp.types((SELECT run FROM f WHERE name = 'restart')),
          'run.started,node.started,interrupt.resolved,node.resumed',
          '... recorded as interrupt.resolved and node.resumed, with no interrupt.requested');
SELECT is(pg_temp.payload((SELECT run FROM f WHERE name = 'restart'), 'interrupt.resolved') -> 'openwop-eligibility',
          pg_temp.payload('acme/fork-restart-000001', 'interrupt.resolved') -> 'openwop-eligibility',
          'replay_eligibility_fixed: the eligibility decision recorded in the source is the fork''s, unchanged');
SELECT is(pg_temp.refusal(format($$ SELECT openwop.resolve_interrupt(%L, 'gate', '{"action": "reject"}') $$,
                                 (SELECT run FROM f WHERE name = 'restart'))) ->> 'code', 'interrupt_already_resolved',
          'replay_never_redecides: a resolve of the derived gate is 409');
SELECT is(pg_temp.refusal(format($$ SELECT openwop.mint_interrupt_token(%L) $$,
            pg_temp.payload((SELECT run FROM f WHERE name = 'restart'), 'interrupt.resolved') ->> 'interruptId')) ->> 'code',
          'interrupt_already_resolved', '... and no token can be minted for it');
SELECT is(openwop.interrupt((SELECT run FROM f WHERE name = 'restart'), 'gate', pg_temp.gate()) ->> 'status', 'resolved',
          'interrupt() again returns the recorded resolution ...');
SELECT is(pg_temp.types((SELECT run FROM f WHERE name = 'restart')), 'run.started,node.started,interrupt.resolved,node.resumed',
          '... appending nothing');
SELECT is(pg_temp.refusal(format($$ SELECT openwop.interrupt(%L, 'gate', '{"kind": "clarification", "data": {"questions": [{"id": "q", "question": "?"}]}}') $$,
                                 (SELECT run FROM f WHERE name = 'restart'))) ->> 'code', 'run_state_conflict',
          'a replay raising another kind under the key is refused (409 run_state_conflict)');
SELECT is(openwop.complete_node((SELECT run FROM f WHERE name = 'restart'), 'gate') ->> 'status', 'completed',
          'the engine goes on: the gate completes');
-- the same, after the approver left: the recorded decision is fixed history, no membership is looked up
DO $$ BEGIN
  PERFORM openwop.add_group_member('fork-approvers', 'carol');
  PERFORM openwop.create_run('wf', '{"runId": "acme/fork-group-00000001"}');
  PERFORM openwop.start_node('acme/fork-group-00000001', 'gate');
  PERFORM openwop.interrupt('acme/fork-group-00000001', 'gate', pg_temp.gate('{"approverGroupRefs": ["fork-approvers"]}'));
END $$;
SELECT is(pg_temp.as_request('{"sub": "carol", "tenant": "acme", "scope": "approvals:respond"}',
            $q$ SELECT openwop.resolve_interrupt('acme/fork-group-00000001', 'gate', '{"action": "reject"}') $q$) ->> 'decision',
          'rejected', 'carol, a member of the gate''s group, rejects it');
DO $$ BEGIN
  PERFORM openwop.remove_group_member('fork-approvers', 'carol');
  INSERT INTO f VALUES ('group', pg_temp.fork('acme/fork-group-00000001',
    jsonb_build_object('mode', 'replay', 'fromSeq', pg_temp.seq_of('acme/fork-group-00000001', 'interrupt.resolved'))));
END $$;
SELECT is(pg_temp.payload((SELECT run FROM f WHERE name = 'group'), 'interrupt.resolved') - 'interruptId',
          pg_temp.payload('acme/fork-group-00000001', 'interrupt.resolved') - 'interruptId',
          'replay_eligibility_fixed: after carol left the group, the fork still derives her recorded rejection');
SELECT is(openwop.run_snapshot((SELECT run FROM f WHERE name = 'group')) -> 'error' ->> 'code', 'approval_rejected',
          '... and fails as the source did');

-- ==== a low-confidence escalation, replayed: derived, not escalated again ====
DO $$ BEGIN
  PERFORM openwop.create_run('wf', '{"runId": "acme/fork-lowconf-0000001"}');
  PERFORM openwop.start_node('acme/fork-lowconf-0000001', 'agent');
  PERFORM openwop.record_agent_decision('acme/fork-lowconf-0000001', 'agent', 'planner', 0.2, '{"plan": "A"}');
  PERFORM openwop.resolve_interrupt('acme/fork-lowconf-0000001', 'agent', '{"plan": "B"}');
  INSERT INTO f VALUES ('lowconf', pg_temp.fork('acme/fork-lowconf-0000001', '{"mode": "replay", "fromSeq": 1}'));
  PERFORM openwop.start_node((SELECT run FROM f WHERE name = 'lowconf'), 'agent');
END $$;
SELECT is(pg_temp.refusal($$ SELECT openwop.fork_run('acme/fork-lowconf-0000001', '{"mode": "replay", "fromSeq": 3}') $$) ->> 'code',
          'fork_point_invalid', 'fork_point_inside_change: the escalation of an agent.decided is part of its change: 422');
SELECT is(openwop.record_agent_decision((SELECT run FROM f WHERE name = 'lowconf'), 'agent', 'planner', 0.2, '{"plan": "A"}')
            - 'interruptId' - 'runId',
          '{"nodeId": "agent", "sequence": 2, "escalated": true, "runStatus": "running"}',
          'replay_escalation_derives: the replayed low-confidence decision escalates to the recorded resolution');
SELECT is(pg_temp.types((SELECT run FROM f WHERE name = 'lowconf')),
          'run.started,node.started,agent.decided,interrupt.resolved,node.resumed',
          '... with no interrupt.requested');
SELECT is(pg_temp.payload((SELECT run FROM f WHERE name = 'lowconf'), 'interrupt.resolved') -> 'resumeValue', '{"plan": "B"}',
          '... the operator''s recorded answer');

-- ==== a replay from before a gate the source has not resolved: the fork asks itself ====
DO $$ BEGIN
  PERFORM pg_temp.fixture('acme/fork-unresolved-00001');
  INSERT INTO f VALUES ('unresolved', pg_temp.fork('acme/fork-unresolved-00001', '{"mode": "replay"}'));
  PERFORM openwop.start_node((SELECT run FROM f WHERE name = 'unresolved'), 'gate');
END $$;
SELECT is(openwop.interrupt((SELECT run FROM f WHERE name = 'unresolved'), 'gate', pg_temp.gate()) ->> 'key',
          pg_temp.payload('acme/fork-unresolved-00001', 'interrupt.requested') ->> 'key',
          'replay_pending_own: with nothing recorded, the replay fork raises the gate itself, under the source''s key');
SELECT is(openwop.run_snapshot((SELECT run FROM f WHERE name = 'unresolved')) ->> 'status', 'waiting-approval', '... and waits on it');

-- ==== a replay of a replay: the chain's root recorded it ====
DO $$ BEGIN
  INSERT INTO f VALUES ('chain1', pg_temp.fork('acme/fork-leg-a-0000001', '{"mode": "replay", "fromSeq": 2}'));
  INSERT INTO f VALUES ('chain2', pg_temp.fork((SELECT run FROM f WHERE name = 'chain1'), '{"mode": "replay", "fromSeq": 1}'));
  PERFORM openwop.start_node((SELECT run FROM f WHERE name = 'chain2'), 'gate');
END $$;
SELECT is(openwop.run_snapshot((SELECT run FROM f WHERE name = 'chain1')) ->> 'status', 'running',
          'a replay fork at the gate''s node.started waits for the engine');
SELECT is(openwop.interrupt((SELECT run FROM f WHERE name = 'chain2'), 'gate', pg_temp.gate()) ->> 'decision', 'rejected',
          'replay_chain: a replay of a replay derives what the chain''s root recorded');
SELECT is(openwop.run_snapshot((SELECT run FROM f WHERE name = 'chain2')) ->> 'status', 'failed', '... and fails as it did');
SELECT is((SELECT key_root FROM openwop.forks WHERE run_id = (SELECT run FROM f WHERE name = 'chain2')),
          'acme/fork-leg-a-0000001', '... its keys rooted at the chain''s root');

-- ==== what a fork's prefix leaves pending, that its source has not resolved ====
DO $$ BEGIN
  PERFORM openwop.create_run('wf', '{"runId": "acme/fork-pending-000001"}');
  PERFORM openwop.start_node('acme/fork-pending-000001', 'prep');
  PERFORM openwop.complete_node('acme/fork-pending-000001', 'prep', '{"n": 1}');
  PERFORM openwop.start_node('acme/fork-pending-000001', 'gate');
  PERFORM openwop.interrupt('acme/fork-pending-000001', 'gate', pg_temp.gate('{"approversList": ["alice"]}', '{"timeoutMs": 3600000}'));
  PERFORM openwop.start_node('acme/fork-pending-000001', 'ask');
  PERFORM openwop.interrupt('acme/fork-pending-000001', 'ask', '{"kind": "clarification", "data": {"questions": [{"id": "q", "question": "?"}]}}');
  PERFORM openwop.start_node('acme/fork-pending-000001', 'tail');   -- sequence 9, the fork point
  INSERT INTO f VALUES ('pending', pg_temp.fork('acme/fork-pending-000001', '{"mode": "replay", "fromSeq": 9}'));
END $$;
SELECT is(openwop.run_snapshot((SELECT run FROM f WHERE name = 'pending')) - 'runId',
          openwop.run_snapshot('acme/fork-pending-000001') - 'runId',
          'fork_state_folded: the fork''s snapshot is the source''s (status waiting on the latest interrupt, currentNodeId)');
SELECT is((SELECT array_agg(ROW(node_id, visit, type_id, status, attempt, outputs, error, ended_sequence)::text ORDER BY node_id)
             FROM openwop.node_executions WHERE run_id = (SELECT run FROM f WHERE name = 'pending')),
          (SELECT array_agg(ROW(node_id, visit, type_id, status, attempt, outputs, error, ended_sequence)::text ORDER BY node_id)
             FROM openwop.node_executions WHERE run_id = 'acme/fork-pending-000001' AND node_id <> 'tail'),
          'fork_state_folded: the node executions are the source''s below the fork point');
SELECT is((SELECT array_agg(ROW(node_id, visit, ordinal, key, kind, payload, status, expires_at, requested_sequence)::text ORDER BY node_id)
             FROM openwop.interrupts WHERE run_id = (SELECT run FROM f WHERE name = 'pending')),
          (SELECT array_agg(ROW(node_id, visit, ordinal, key, kind, payload, status, expires_at, requested_sequence)::text ORDER BY node_id)
             FROM openwop.interrupts WHERE run_id = 'acme/fork-pending-000001'),
          'fork_pending_copied: the pending interrupts are the source''s: same keys, requests and deadlines (a fork never extends one)');
SELECT is((SELECT count(*) FROM openwop.open_interrupts WHERE run_id = (SELECT run FROM f WHERE name = 'pending')), 2::bigint,
          '... both open in the fork');
SELECT is(openwop.interrupt((SELECT run FROM f WHERE name = 'pending'), 'gate', pg_temp.gate('{"approversList": ["alice"]}', '{"timeoutMs": 3600000}')) ->> 'status',
          'interrupted', 'interrupt() in the fork returns the pending envelope of the copied gate');
SELECT is((SELECT r ->> 'code' FROM (SELECT pg_temp.as_login(session_user, 'acme', format($q$ SELECT openwop.resolve_interrupt(%L, 'gate', '{"action": "accept"}') $q$,
            (SELECT run FROM f WHERE name = 'pending'))) r) x), 'forbidden',
          'fork_eligibility_kept: the copied gate keeps its approvers: the test login, not on approversList, is refused 403');
SELECT is(pg_temp.as_request('{"sub": "alice", "tenant": "acme", "scope": "approvals:respond"}',
            format($q$ SELECT openwop.resolve_interrupt(%L, 'gate', '{"action": "accept"}') $q$, (SELECT run FROM f WHERE name = 'pending'))) ->> 'decision',
          'granted', 'replay_pending_own: a gate the source has not resolved is the fork''s to resolve, by an eligible approver');
SELECT is((SELECT status FROM openwop.interrupts WHERE run_id = 'acme/fork-pending-000001' AND node_id = 'gate'), 'pending',
          '... the source''s gate is untouched');
SELECT is(pg_temp.as_request('{"sub": "alice", "tenant": "acme", "scope": "approvals:respond"}',
            $q$ SELECT openwop.resolve_interrupt('acme/fork-pending-000001', 'gate', '{"action": "reject"}') $q$) ->> 'decision',
          'rejected', '... and the source may still decide otherwise');
SELECT is(openwop.run_snapshot((SELECT run FROM f WHERE name = 'pending')) ->> 'status', 'waiting-input',
          '... which the fork, already decided, does not follow');
-- a later fork of the source, at the same point, derives the source's rejection
DO $$ BEGIN INSERT INTO f VALUES ('pending2', pg_temp.fork('acme/fork-pending-000001', '{"mode": "replay", "fromSeq": 9}')); END $$;
SELECT is(openwop.run_snapshot((SELECT run FROM f WHERE name = 'pending2')) ->> 'status', 'failed',
          'replay_derives_pending: an interrupt the prefix leaves pending, resolved in the source, is derived when the fork is made');
SELECT is((SELECT status FROM openwop.interrupts WHERE run_id = (SELECT run FROM f WHERE name = 'pending2') AND node_id = 'ask'),
          'cancelled', '... the run it fails cancels the fork''s other pending interrupt');

-- ==== a branch: keys on itself, asks anew ====
DO $$ BEGIN
  INSERT INTO f VALUES ('branch', pg_temp.fork('acme/fork-leg-a-0000001',
    jsonb_build_object('mode', 'branch', 'fromSeq', pg_temp.seq_of('acme/fork-leg-a-0000001', 'interrupt.resolved'),
                       'runOptionsOverlay', '{"metadata": {"why": "what if accepted"}}'::jsonb)));
END $$;
SELECT is(openwop.run_snapshot((SELECT run FROM f WHERE name = 'branch')) ->> 'status', 'waiting-approval',
          'branch_asks_anew: a branch at the gate''s interrupt.resolved waits on the gate');
SELECT is(openwop.run_snapshot((SELECT run FROM f WHERE name = 'branch')) -> 'metadata', '{"why": "what if accepted"}',
          'branch_overlay: the overlay''s metadata replaces the source''s');
SELECT is((SELECT key_root FROM openwop.forks WHERE run_id = (SELECT run FROM f WHERE name = 'branch')),
          (SELECT run FROM f WHERE name = 'branch'), 'branch_keys_on_itself: its key root is itself');
SELECT is(openwop.interrupt((SELECT run FROM f WHERE name = 'branch'), 'gate', pg_temp.gate()) ->> 'status', 'interrupted',
          '... interrupt() of the inherited invocation returns its pending envelope');
SELECT is(openwop.resolve_interrupt((SELECT run FROM f WHERE name = 'branch'), 'gate', '{"action": "accept"}') ->> 'decision',
          'granted', '... and an approver decides it anew');
SELECT is(openwop.complete_node((SELECT run FROM f WHERE name = 'branch'), 'gate') ->> 'status', 'completed', '... and the branch goes on');
SELECT is(openwop.start_node((SELECT run FROM f WHERE name = 'branch'), 'gate') ->> 'visit', '1', 'a later visit of the gate ...');
SELECT isnt(openwop.interrupt((SELECT run FROM f WHERE name = 'branch'), 'gate', pg_temp.gate()) ->> 'key',
            pg_temp.payload('acme/fork-leg-a-0000001', 'interrupt.requested') ->> 'key',
            '... derives a key of the branch''s own');
DO $$ BEGIN
  INSERT INTO f VALUES ('branch-cfg', pg_temp.fork('acme/fork-leg-a-0000001',
    '{"mode": "branch", "fromSeq": 1, "runOptionsOverlay": {"configurable": {"version": 1, "run": {"escalationThreshold": 0.2}}}}'));
END $$;
SELECT is(openwop.run_snapshot((SELECT run FROM f WHERE name = 'branch-cfg')) -> 'configurable',
          '{"version": 1, "run": {"escalationThreshold": 0.2}}', 'branch_overlay: the overlay''s configurable replaces the source''s');

-- ==== refusals ====
SELECT is(pg_temp.refusal($$ SELECT openwop.fork_run('acme/fork-leg-a-0000001', '{"mode": "replay", "fromSeq": 7}') $$),
          '{"sqlstate": "PT422", "code": "fork_point_invalid", "details": {"sourceRunId": "acme/fork-leg-a-0000001", "fromSeq": 7, "lastSequence": 6}}',
          'fork_point_invalid: a sequence past the log is 422');
SELECT is(pg_temp.refusal($$ SELECT openwop.fork_run('acme/fork-leg-a-0000001', '{"mode": "branch", "fromSeq": 1000000000000}') $$) ->> 'code',
          'fork_point_invalid', '... so is a far one');
SELECT is(pg_temp.refusal(format($$ SELECT openwop.fork_run('acme/fork-leg-a-0000001', '{"mode": "replay", "fromSeq": %s}') $$, s)) ->> 'code',
          'fork_point_invalid', format('fork_point_inside_change: sequence %s (%s) continues a change: 422', s, t))
  FROM (VALUES (3, 'node.suspended after its interrupt.requested'), (5, 'node.failed of the rejection'),
               (6, 'run.failed of the rejection')) v(s, t);
DO $$ BEGIN PERFORM pg_temp.fixture('acme/fork-accepted-0000001');
  PERFORM openwop.resolve_interrupt('acme/fork-accepted-0000001', 'gate', '{"action": "accept"}');
  PERFORM openwop.complete_node('acme/fork-accepted-0000001', 'gate');
  PERFORM openwop.cancel_run('acme/fork-accepted-0000001'); END $$;
SELECT is(pg_temp.refusal($$ SELECT openwop.fork_run('acme/fork-accepted-0000001', '{"mode": "replay", "fromSeq": 5}') $$) ->> 'code',
          'fork_point_invalid', 'fork_point_inside_change: node.resumed after its interrupt.resolved: 422');
SELECT is(openwop.fork_run('acme/fork-accepted-0000001', '{"mode": "replay", "fromSeq": 7}') ->> 'status', 'running',
          'fork_before_terminal: a fork at an ended run''s terminal event (the last; no compensation tail here) is live');
SELECT is(pg_temp.refusal(format('SELECT openwop.fork_run(%L, %L)', 'acme/fork-leg-a-0000001', o)) -> 'details' ->> 'field',
          field, format('fork_options_refused: %s is 400 validation_error naming %s', o, field))
  FROM (VALUES ('{}', 'mode'), ('[]', 'options'), ('{"mode": "fork"}', 'mode'),
               ('{"mode": "branch"}', 'fromSeq'), ('{"mode": "replay", "fromSeq": -1}', 'fromSeq'),
               ('{"mode": "replay", "fromSeq": 1.5}', 'fromSeq'), ('{"mode": "replay", "fromSeq": "1"}', 'fromSeq'),
               ('{"mode": "replay", "from": 1}', 'from'),
               ('{"mode": "replay", "runOptionsOverlay": {"metadata": {}}}', 'runOptionsOverlay'),
               ('{"mode": "branch", "fromSeq": 1, "runOptionsOverlay": {"tags": ["x"]}}', 'runOptionsOverlay.tags'),
               ('{"mode": "branch", "fromSeq": 1, "runOptionsOverlay": {"metadata": 1}}', 'runOptionsOverlay.metadata'),
               ('{"mode": "branch", "fromSeq": 1, "runOptionsOverlay": {"configurable": {"version": 2}}}', 'configurable.version'),
               ('{"mode": "branch", "fromSeq": 1, "runOptionsOverlay": 5}', 'runOptionsOverlay')) v(o, field);
SELECT is(pg_temp.refusal($$ SELECT openwop.fork_run(NULL, '{"mode": "replay"}') $$) ->> 'sqlstate', 'PT400', 'a null run id is 400');
SELECT is(pg_temp.refusal($$ SELECT openwop.fork_run('acme/fork-leg-a-0000001', NULL) $$) ->> 'sqlstate', 'PT400', 'null options are 400');
SELECT is(pg_temp.refusal($$ SELECT openwop.fork_run('acme/fork-missing-00000001', '{"mode": "replay"}') $$),
          '{"sqlstate": "PT404", "code": "not_found", "details": {"runId": "acme/fork-missing-00000001"}}',
          'fork_not_found: an unknown source is 404 not_found');
SELECT is(openwop.fork_run('acme/fork-restart-000001', '{"mode": "replay", "runOptionsOverlay": {}}') ->> 'mode', 'replay',
          'an empty overlay is no overlay: a replay accepts it');
SELECT is((SELECT count(*) FROM openwop.runs WHERE fork_of = 'acme/fork-leg-a-0000001'), 4::bigint,
          'the refused forks left nothing behind');

-- ==== who may fork ====
SET LOCAL openwop.tenant = 'initech';
SELECT is(pg_temp.refusal($$ SELECT openwop.fork_run('acme/fork-leg-a-0000001', '{"mode": "replay"}') $$) ->> 'code',
          'id_tenant_mismatch', 'fork_other_tenant: a caller of another tenant is refused 403 id_tenant_mismatch, as every run-scoped call');
SELECT is(pg_temp.refusal(format($$ SELECT openwop.events(%L) $$, (SELECT run FROM f WHERE name = 'a'))) ->> 'code',
          'id_tenant_mismatch', '... and cannot read a fork of another tenant''s run');
SELECT is(pg_temp.refusal($$ SELECT openwop.fork_run('initech/fork-leg-a-0000001', '{"mode": "replay"}') $$) ->> 'code',
          'not_found', '... nor learn of it under its own tenant: 404');
SELECT is(pg_temp.refusal($$ SELECT openwop.fork_run('acme~2Ffork-leg-a-0000001', '{"mode": "replay"}') $$) ->> 'code',
          'id_tenant_mismatch', '... nor in the id''s wire form');
SET LOCAL openwop.tenant = 'acme';
SELECT is(pg_temp.as_login(session_user, 'initech', $$ SELECT openwop.fork_run('acme/fork-leg-a-0000001', '{"mode": "replay"}') $$) ->> 'code',
          'id_tenant_mismatch', 'fork_other_tenant: a login the DBA bound to another tenant is refused 403');
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'fork_web_anon') THEN CREATE ROLE fork_web_anon NOLOGIN; END IF;
END $$;
SELECT is(pg_temp.as_login(session_user, 'acme', $$ SELECT openwop.fork_run('acme/fork-leg-a-0000001', '{"mode": "replay"}') $$,
                           'fork_web_anon') ->> 'sqlstate',
          '42501', 'fork_anonymous: a role without EXECUTE (PostgREST''s anonymous role, as for create_run) cannot fork');
SELECT is(pg_temp.as_request('{"role": "web_anon", "tenant": "acme"}',
            $$ SELECT openwop.fork_run('acme/fork-leg-a-0000001', '{"mode": "replay", "fromSeq": 2}') $$) ->> 'status', 'running',
          'fork_anonymous: an anonymous request that may execute it forks in its tenant, as it may create a run');
SELECT is(pg_temp.refusal($$ SELECT pg_temp.as_request('{"sub": "eve", "tenant": "initech"}',
            'SELECT openwop.fork_run(''acme/fork-leg-a-0000001'', ''{"mode": "replay"}'')') $$) ->> 'code',
          'id_tenant_mismatch', 'fork_other_tenant: a JWT caller of another tenant is refused 403');

SELECT * FROM finish();
ROLLBACK;
