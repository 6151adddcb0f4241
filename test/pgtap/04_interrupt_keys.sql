-- Re-entry keys (the OpenWOP interrupt page, "Re-entry and resume values"),
-- each rule its own test, and FlowDrop INT-1, INT-2, INT-3 on the raise /
-- resolve path.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir callers.psql

CREATE FUNCTION pg_temp.approval(title text DEFAULT 'Ship it?') RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('kind', 'approval', 'data', jsonb_build_object(
    'artifactId', 'art-1', 'artifactType', 'release', 'title', title, 'actions', '["accept", "reject"]'::jsonb))
$$;
CREATE FUNCTION pg_temp.event_count(run text) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM openwop.events(run, -1, 10000)
$$;

DO $$ BEGIN PERFORM openwop.create_run('keys', '{"runId": "acme/keys-run-00000001"}'); END $$;
DO $$ BEGIN PERFORM openwop.start_node('acme/keys-run-00000001', 'before'); END $$;
DO $$ BEGIN PERFORM openwop.complete_node('acme/keys-run-00000001', 'before', '{"prepared": true}'); END $$;
DO $$ BEGIN PERFORM openwop.start_node('acme/keys-run-00000001', 'gate'); END $$;
CREATE TEMP TABLE first_raise AS
  SELECT openwop.interrupt('acme/keys-run-00000001', 'gate', pg_temp.approval()) AS env;

-- INT-1: the envelope
SELECT is((SELECT env->>'status' FROM first_raise), 'interrupted', 'INT-1: status is interrupted');
SELECT is((SELECT env->'results' FROM first_raise), '{"before": {"prepared": true}}',
          'INT-1: results hold exactly the completed prefix');
SELECT is((SELECT env->'metadata'->'interrupt'->>'nodeId' FROM first_raise), 'gate', 'INT-1: metadata.interrupt.nodeId');
SELECT is((SELECT env->'metadata'->'interrupt'->>'status' FROM first_raise), 'pending', 'INT-1: metadata.interrupt.status is pending');
SELECT is((SELECT env->>'runId' FROM first_raise), 'acme/keys-run-00000001', 'INT-1: the run id');
SELECT matches((SELECT env->'metadata'->'interrupt'->>'id' FROM first_raise),
               '^acme/[A-Za-z0-9._-]{16,128}$', 'the interrupt id is tenant-bound and has no "~"');
-- INT-2: the reported interrupt is the persisted one
SELECT is((SELECT env->'metadata'->'interrupt'->>'id' FROM first_raise),
          (SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/keys-run-00000001'),
          'INT-2: the id reported is the stored row''s');
SELECT is((SELECT status || '/' || interrupt_id FROM openwop.node_executions
            WHERE run_id = 'acme/keys-run-00000001' AND node_id = 'gate'),
          'interrupted/' || (SELECT env->'metadata'->'interrupt'->>'id' FROM first_raise),
          'INT-1: the job is interrupted and carries the interrupt id');
SELECT is(openwop.run_snapshot('acme/keys-run-00000001') ->> 'status', 'waiting-approval', 'the run waits for approval');
SELECT is(openwop.run_snapshot('acme/keys-run-00000001') ->> 'currentNodeId', 'gate', 'currentNodeId names the node');

-- events: interrupt.requested carries the payload verbatim plus the key; node.suspended
SELECT is((SELECT e->'payload' FROM openwop.events('acme/keys-run-00000001') e WHERE e->>'type' = 'interrupt.requested'),
          pg_temp.approval() || jsonb_build_object('key', (SELECT env->>'key' FROM first_raise)),
          'interrupt.requested is the InterruptPayload verbatim with the derived key');
SELECT is((SELECT e->'payload' FROM openwop.events('acme/keys-run-00000001') e WHERE e->>'type' = 'node.suspended'),
          jsonb_build_object('nodeId', 'gate', 'interruptId', (SELECT env->'metadata'->'interrupt'->>'id' FROM first_raise),
                             'kind', 'approval', 'key', (SELECT env->>'key' FROM first_raise)),
          'node.suspended {nodeId, interruptId, kind, key}');

-- key rules
SELECT is(openwop.interrupt('acme/keys-run-00000001', 'gate', pg_temp.approval()),
          (SELECT env FROM first_raise),
          'key: a call while the key is pending returns the pending envelope again');
SELECT is(pg_temp.event_count('acme/keys-run-00000001'), 6::bigint, 'key: ... and appends nothing');
SELECT is(openwop.interrupt('acme/keys-run-00000001', 'gate', pg_temp.approval('A changed title')) ->> 'key',
          (SELECT env->>'key' FROM first_raise),
          'key: the same execution re-derives the same key');

SELECT lives_ok($$ SELECT openwop.resolve_interrupt('acme/keys-run-00000001', 'gate', '{"action": "accept"}') $$,
                'resolve the gate');
-- INT-3
SELECT is((SELECT status FROM openwop.node_executions WHERE run_id = 'acme/keys-run-00000001' AND node_id = 'gate'),
          'pending', 'INT-3: the resolved job returns to pending');
SELECT is(openwop.run_snapshot('acme/keys-run-00000001') ->> 'status', 'running', 'INT-3: the waiting run is resumed');

CREATE TEMP TABLE replay AS
  SELECT openwop.interrupt('acme/keys-run-00000001', 'gate', pg_temp.approval()) AS env;
SELECT is((SELECT env->>'status' FROM replay), 'resolved', 'key: a replay returns the recorded resolution');
SELECT is((SELECT env->'resumeValue'->>'action' FROM replay), 'accept', 'key: ... with the recorded resume value');
SELECT is((SELECT env->>'decision' FROM replay), 'granted', 'key: ... and decision');
SELECT is(pg_temp.event_count('acme/keys-run-00000001'), 8::bigint,
          'key: a replay appends nothing (no second interrupt.requested)');

-- two interrupts in one execution: distinct keys
CREATE TEMP TABLE second AS
  SELECT openwop.interrupt('acme/keys-run-00000001', 'gate', pg_temp.approval('second question'), 1) AS env;
SELECT isnt((SELECT env->>'key' FROM second), (SELECT env->>'key' FROM first_raise),
            'key: two interrupts in one execution (ordinal 0 and 1) get distinct keys');
SELECT lives_ok($$ SELECT openwop.resolve_interrupt('acme/keys-run-00000001', 'gate', '{"action": "accept"}') $$,
                'resolve the second one');

-- a later visit
DO $$ BEGIN PERFORM openwop.complete_node('acme/keys-run-00000001', 'gate'); END $$;
SELECT is(openwop.start_node('acme/keys-run-00000001', 'gate') ->> 'visit', '1', 'the node is visited again');
CREATE TEMP TABLE later AS
  SELECT openwop.interrupt('acme/keys-run-00000001', 'gate', pg_temp.approval()) AS env;
SELECT is((SELECT env->>'status' FROM later), 'interrupted',
          'key: a later visit never gets an earlier visit''s resume value');
SELECT isnt((SELECT env->>'key' FROM later), (SELECT env->>'key' FROM first_raise), 'key: a later visit derives a new key');
SELECT is((SELECT count(*) FROM openwop.events('acme/keys-run-00000001', -1, 10000) e WHERE e->>'type' = 'interrupt.requested'),
          3::bigint, 'key: a later visit raises a new interrupt.requested');

-- at most once per run: a constraint, not just code
SELECT throws_ok($$
  INSERT INTO openwop.interrupts (tenant, interrupt_id, run_id, root_run_id, node_id, visit, ordinal, key, kind, payload, requested_sequence)
  SELECT tenant, 'acme/duplicate-key-000001', run_id, root_run_id, node_id, visit, ordinal + 7, key, kind, payload, requested_sequence
    FROM openwop.interrupts WHERE run_id = 'acme/keys-run-00000001' AND visit = 0 AND ordinal = 0
$$, '23505', NULL, 'key: a key is requested at most once per run (UNIQUE constraint)');

-- INT-3: a run that is not waiting is left alone by a resolve
DO $$ BEGIN PERFORM openwop.create_run('keys', '{"runId": "acme/keys-run-00000002"}'); END $$;
DO $$ BEGIN PERFORM openwop.start_node('acme/keys-run-00000002', 'ask'); END $$;
DO $$ BEGIN PERFORM openwop.interrupt('acme/keys-run-00000002', 'ask', '{"kind": "custom", "data": {"customKind": "poke"}}'); END $$;
UPDATE openwop.runs SET status = 'paused' WHERE run_id = 'acme/keys-run-00000002';
DO $$ BEGIN PERFORM openwop.resolve_interrupt('acme/keys-run-00000002', 'ask', '{"ok": true}'); END $$;
SELECT is(openwop.run_snapshot('acme/keys-run-00000002') ->> 'status', 'paused',
          'INT-3: resolving does not resume a run that is not waiting');

-- a replay after the host closed the execution (a rejected gate) still derives, never re-decides
DO $$ BEGIN PERFORM openwop.create_run('keys', '{"runId": "acme/keys-run-00000003"}');
  PERFORM openwop.start_node('acme/keys-run-00000003', 'gate');
  PERFORM openwop.interrupt('acme/keys-run-00000003', 'gate', pg_temp.approval());
  PERFORM openwop.resolve_interrupt('acme/keys-run-00000003', 'gate', '{"action": "reject"}'); END $$;
SELECT is(openwop.run_snapshot('acme/keys-run-00000003') ->> 'status', 'failed', 'a rejected gate with no routing edge fails the run');
SELECT is(openwop.interrupt('acme/keys-run-00000003', 'gate', pg_temp.approval()) - 'interruptId' - 'resolvedBy' #- '{resumeValue,decidedAt}',
          format('{"status": "resolved", "action": "reject", "decision": "rejected", "resumeValue": {"action": "reject", "decidedBy": "%s"}}',
                 session_user)::jsonb,
          'key: replaying the rejected gate returns the recorded rejection, even after the run failed');
SELECT is(openwop.interrupt('acme/keys-run-00000003', 'gate', pg_temp.approval()) -> 'resolvedBy',
          (SELECT resolved_by FROM openwop.interrupts WHERE run_id = 'acme/keys-run-00000003'),
          'key: the replay envelope carries resolvedBy, the Subject that decided');
SELECT is((SELECT count(*) FROM openwop.events('acme/keys-run-00000003') e WHERE e->>'type' = 'interrupt.requested'),
          1::bigint, 'key: ... and raises no second interrupt.requested');
SELECT throws_ok($$ SELECT openwop.interrupt('acme/keys-run-00000003', 'gate', '{"kind": "custom", "data": {"customKind": "x"}}') $$,
                 'PT409', NULL, 'a replay that raises another kind under the same key is refused');

SELECT * FROM finish();
ROLLBACK;
