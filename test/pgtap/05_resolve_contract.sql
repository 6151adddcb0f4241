-- Payload validation of the nine kinds, the resolve error contract, and
-- Idempotency-Key handling.  Every refusal leaves the log unchanged.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';

\ir refusal.psql
\ir callers.psql
-- raise request on a fresh node of run acme/resolve-run-0000001; returns the refusal's details.field
CREATE FUNCTION pg_temp.bad_request(node text, request text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r jsonb;
BEGIN
  PERFORM openwop.start_node('acme/resolve-run-0000001', node);
  r := pg_temp.refusal(format('SELECT openwop.interrupt(%L, %L, %L)', 'acme/resolve-run-0000001', node, request));
  RETURN r->>'code' || ' ' || coalesce(r->'details'->>'field', '');
END $$;
CREATE FUNCTION pg_temp.approval(extra jsonb DEFAULT '{}') RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('kind', 'approval', 'data', jsonb_build_object(
    'artifactId', 'a', 'artifactType', 'doc', 'title', 'T', 'actions', '["accept", "reject", "refine", "edit-accept"]'::jsonb) || extra)
$$;

DO $$ BEGIN PERFORM openwop.create_run('resolve', '{"runId": "acme/resolve-run-0000001"}'); END $$;

-- payload validation: closed schemas of all nine kinds
SELECT is(pg_temp.bad_request('v1', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "d", "title": "t"}}'),
          'validation_error data.actions', 'approval: actions is required');
SELECT is(pg_temp.bad_request('v2', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "d", "title": "t", "actions": ["accept", "approve"]}}'),
          'validation_error data.actions', 'approval: actions outside the five are refused');
SELECT is(pg_temp.bad_request('v3', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "d", "title": "t", "actions": ["accept"], "message": "hi"}}'),
          'validation_error data.message', 'approval: a bare message is refused');
SELECT is(pg_temp.bad_request('v4', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "d", "title": "t", "actions": ["accept"], "audience": {"teams": []}}}'),
          'validation_error data.audience.teams', 'approval: unknown members are refused at any level');
SELECT is(pg_temp.bad_request('v5', '{"kind": "approval", "data": {"artifactId": "", "artifactType": "d", "title": "t", "actions": ["accept"]}}'),
          'validation_error data.artifactId', 'approval: artifactId must not be empty');
SELECT is(pg_temp.bad_request('v6', '{"kind": "clarification", "data": {"questions": []}}'),
          'validation_error data.questions', 'clarification: at least one question');
SELECT is(pg_temp.bad_request('v7', '{"kind": "clarification", "data": {"questions": [{"id": "q1", "question": "?", "schema": {"format": "email"}}]}}'),
          'validation_error data.questions[0].schema', 'clarification: a question schema outside the subset is refused');
SELECT is(pg_temp.bad_request('v8', '{"kind": "external-event", "data": {"eventType": "paid"}}'),
          'validation_error data.correlation', 'external-event: correlation is required');
SELECT is(pg_temp.bad_request('v9', '{"kind": "custom", "data": {"customKind": ""}}'),
          'validation_error data.customKind', 'custom: customKind must not be empty');
SELECT is(pg_temp.bad_request('v10', '{"kind": "low-confidence", "data": {"agentId": "a", "threshold": 1.5, "observed": 0.2}}'),
          'validation_error data.threshold', 'low-confidence: threshold is in [0, 1]');
SELECT is(pg_temp.bad_request('v11', '{"kind": "credential", "data": {"provider": "gh", "scopes": ["repo"], "reason": "missing", "connectUrl": "http://x"}}'),
          'validation_error data.connectUrl', 'credential: connectUrl must be https');
SELECT is(pg_temp.bad_request('v12', '{"kind": "credential", "data": {"provider": "gh", "scopes": ["repo"], "reason": "missing", "connectUrl": "https://x"}, "resumeSchema": {"type": "object"}}'),
          'validation_error request.resumeSchema', 'credential: any resumeSchema but the pinned one is refused');
SELECT is(pg_temp.bad_request('v13', '{"kind": "conversation.exchange", "data": {"conversationId": "c1"}}'),
          'validation_error data.prompt', 'conversation.exchange: prompt is required');
SELECT is(pg_temp.bad_request('v14', '{"kind": "conversation.start", "data": {"conversationId": "c1", "turnIndex": 0}}'),
          'validation_error data.turnIndex', 'conversation.start: turnIndex is an exchange''s member, refused on a start (the conversation kinds: 31_conversations.sql)');
SELECT is(pg_temp.bad_request('v15', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "d", "title": "t", "actions": ["accept"]}, "timeoutMs": -1}'),
          'validation_error request.timeoutMs', 'a negative timeoutMs is refused');
SELECT is(pg_temp.bad_request('v16', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "d", "title": "t", "actions": ["accept"]}, "key": "mine"}'),
          'validation_error request.key', 'the key is derived by the host, never supplied');
SELECT is(pg_temp.bad_request('v17', '{"kind": "poll", "data": {}}'),
          'validation_error request.kind', 'an unknown kind is refused');
SELECT is(pg_temp.bad_request('v18', '{"kind": "custom", "data": {"customKind": "x"}, "resumeSchema": {"type": "object", "if": {}}}'),
          'validation_error request.resumeSchema', 'a resumeSchema keyword outside the subset is refused, never ignored');
SELECT is(pg_temp.bad_request('v20', '{"kind": "credential", "data": {"provider": "gh", "scopes": ["repo"], "reason": "missing", "connectUrl": "https://x", "credentialRef": {"anything": 1}}}'),
          'validation_error data.credentialRef.anything', 'credential: credentialRef is closed {ref, scope}');
SELECT is(pg_temp.bad_request('v21', '{"kind": "credential", "data": {"provider": "gh", "scopes": ["repo"], "reason": "missing", "connectUrl": "https://x/connect?t=ow2.hs256.k1.abc.def"}}'),
          'validation_error data.connectUrl', 'credential: connectUrl never carries an interrupt token');
SELECT is(pg_temp.bad_request('v22', '{"kind": "clarification", "data": {"questions": [{"id": "q1", "question": "?", "schema": true}]}}'),
          'validation_error data.questions[0].schema', 'clarification: a question schema must be an object');
SELECT is(pg_temp.bad_request('v19', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "d", "title": "t", "actions": ["accept"], "requiredApprovals": 0}}'),
          'validation_error data.requiredApprovals', 'requiredApprovals is at least 1');
SELECT is((SELECT count(*) FROM openwop.events('acme/resolve-run-0000001', -1, 10000) e
            WHERE e->>'type' IN ('interrupt.requested', 'node.suspended')), 0::bigint,
          'refused requests appended nothing');

-- credential: the pinned resumeSchema is filled in when omitted
DO $$ BEGIN PERFORM openwop.start_node('acme/resolve-run-0000001', 'cred');
  PERFORM openwop.interrupt('acme/resolve-run-0000001', 'cred', '{"kind": "credential", "data": {"provider": "gh", "scopes": ["repo"], "reason": "expired", "connectUrl": "https://example.org/connect"}}'); END $$;
SELECT is((SELECT payload->'resumeSchema' FROM openwop.interrupts WHERE run_id = 'acme/resolve-run-0000001' AND node_id = 'cred'),
          '{"type": "object", "required": ["outcome"], "properties": {"outcome": {"enum": ["authorized", "declined"]}}, "additionalProperties": false}',
          'credential: the pinned resumeSchema is recorded when the caller omits it');
SELECT is(openwop.run_snapshot('acme/resolve-run-0000001') ->> 'status', 'waiting-input', 'credential: the run waits for input');

-- statuses per kind
DO $$ BEGIN PERFORM openwop.create_run('resolve', '{"runId": "acme/resolve-run-0000002"}');
  PERFORM openwop.start_node('acme/resolve-run-0000002', 'ext');
  PERFORM openwop.interrupt('acme/resolve-run-0000002', 'ext', '{"kind": "external-event", "data": {"eventType": "invoice.paid", "correlation": {"invoice": 7}}}'); END $$;
SELECT is(openwop.run_snapshot('acme/resolve-run-0000002') ->> 'status', 'waiting-external', 'external-event: waiting-external');
DO $$ BEGIN PERFORM openwop.create_run('resolve', '{"runId": "acme/resolve-run-0000003"}');
  PERFORM openwop.start_node('acme/resolve-run-0000003', 'q');
  PERFORM openwop.interrupt('acme/resolve-run-0000003', 'q', '{"kind": "clarification", "data": {"questions": [{"id": "colour", "question": "Which colour?", "schema": {"enum": ["red", "blue"]}}]}}'); END $$;
SELECT is(openwop.run_snapshot('acme/resolve-run-0000003') ->> 'status', 'waiting-input', 'clarification: waiting-input');

-- resolve: errors in order
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/resolve-run-9999999', 'q', '{}') $$)->>'code',
          'not_found', 'unknown run: not_found (checked first)');
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/resolve-run-0000003', 'nope', '{}') $$)->>'sqlstate',
          'PT404', 'unknown node: PT404');
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('globex/resolve-run-0000003', 'q', '{}') $$)->>'code',
          'id_tenant_mismatch', 'foreign tenant: id_tenant_mismatch');
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/resolve-run-0000003', 'q', NULL) $$)->>'code',
          'validation_error', 'a missing resume value: validation_error');
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/resolve-run-0000003', 'q', '{"answers": {"colour": "green"}}') $$),
          '{"code": "validation_error", "details": {"field": "resumeValue.colour", "errors": [{"path": "", "keyword": "enum", "message": "value is not one of the enumerated values"}]}, "sqlstate": "PT400"}',
          'clarification: an answer failing its question schema is refused with each path and keyword');
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/resolve-run-0000003', 'q', '{"answers": {}, "colour": "purple"}') $$)->'details'->>'field',
          'resumeValue.colour', 'clarification: answers in two shapes at once are refused');
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/resolve-run-0000003', 'q', '{"size": "XL"}') $$)->'details'->>'field',
          'resumeValue.size', 'clarification: an answer to no question is refused');
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/resolve-run-0000003', 'q', '{"answers": [{"id": "colour", "answer": "green"}]}') $$)->'details'->>'field',
          'resumeValue.colour', 'clarification: the [{id, answer}] shape is checked too');
SELECT is(openwop.resolve_interrupt('acme/resolve-run-0000003', 'q', '{"answers": {"colour": "blue"}}') ->> 'status',
          'resolved', 'clarification: a valid answer resolves');
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/resolve-run-0000003', 'q', '{"answers": {"colour": "red"}}') $$)->>'code',
          'interrupt_already_resolved', 'a second resolve: interrupt_already_resolved');

-- resumeSchema
DO $$ BEGIN PERFORM openwop.start_node('acme/resolve-run-0000002', 'form');
  PERFORM openwop.interrupt('acme/resolve-run-0000002', 'form', '{"kind": "custom", "data": {"customKind": "form"}, "resumeSchema": {"type": "object", "required": ["amount"], "properties": {"amount": {"type": "integer", "minimum": 1}}}}'); END $$;
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/resolve-run-0000002', 'form', '{"amount": 0, "x": 1}') $$)->'details',
          '{"field": "resumeValue", "errors": [{"path": "/amount", "keyword": "minimum", "message": "0 is less than 1"}]}',
          'resumeSchema: a failing value is validation_error listing path and keyword');
SELECT is(openwop.run_snapshot('acme/resolve-run-0000002') ->> 'status', 'waiting-approval', 'a refused resolve changes nothing: the run still waits');
SELECT is(openwop.resolve_interrupt('acme/resolve-run-0000002', 'form', '{"amount": 5}') ->> 'status', 'resolved',
          'resumeSchema: a valid value resolves');

-- approvals: actions and the fields they need
DO $$ BEGIN PERFORM openwop.create_run('resolve', '{"runId": "acme/resolve-run-0000004"}');
  PERFORM openwop.start_node('acme/resolve-run-0000004', 'gate');
  PERFORM openwop.interrupt('acme/resolve-run-0000004', 'gate', pg_temp.approval('{"approversList": ["postgres", "alice"]}')); END $$;
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/resolve-run-0000004', 'gate', '{"action": "ask"}') $$)->'details'->>'field',
          'resumeValue.action', 'an action not in actions is refused');
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/resolve-run-0000004', 'gate', '{"action": "timeout"}') $$)->>'code',
          'validation_error', 'action timeout is never accepted from a caller');
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/resolve-run-0000004', 'gate', '{"action": "refine"}') $$)->'details'->>'field',
          'resumeValue.refineFeedback', 'refine needs refineFeedback');
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/resolve-run-0000004', 'gate', '{"action": "edit-accept"}') $$)->'details'->>'field',
          'resumeValue.editedArtifactData', 'edit-accept needs editedArtifactData');
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/resolve-run-0000004', 'gate', '{"action": "accept", "colour": 1}') $$)->'details'->>'field',
          'resumeValue.colour', 'the approval resume value is closed');
SELECT is(pg_temp.refusal($$ SELECT pg_temp.as_request('{"sub": "mallory", "tenant": "acme", "scope": "approvals:respond"}',
            $q$ SELECT openwop.resolve_interrupt('acme/resolve-run-0000004', 'gate', '{"action": "accept"}') $q$) $$),
          '{"code": "forbidden", "details": {"principal": "mallory"}, "sqlstate": "PT403"}',
          'approversList binds: a principal not listed is forbidden');
SELECT is(openwop.run_snapshot('acme/resolve-run-0000004') ->> 'status', 'waiting-approval', 'and the run stays waiting');
SELECT is(pg_temp.as_request('{"sub": "alice", "tenant": "acme", "scope": "openid approvals:respond"}',
            $q$ SELECT openwop.resolve_interrupt('acme/resolve-run-0000004', 'gate', '{"action": "accept"}') $q$) ->> 'decision',
          'granted', 'a listed principal with the scope claim grants the gate (decision granted)');
SELECT is((SELECT e->'payload'->'resolvedBy' FROM openwop.events('acme/resolve-run-0000004') e WHERE e->>'type' = 'interrupt.resolved'),
          '{"issuer": "urn:openwop-interrupt:jwt", "subjectId": "alice", "tenant": "acme", "lane": "oauth2", "kind": "user"}',
          'interrupt.resolved carries resolvedBy as a Subject object');
SELECT ok((SELECT (e->'payload'->'resumeValue'->>'decidedAt')::timestamptz IS NOT NULL
             FROM openwop.events('acme/resolve-run-0000004') e WHERE e->>'type' = 'interrupt.resolved'),
          'a missing decidedAt is stamped');

-- the scope: without approvals:respond, 403
CREATE ROLE openwop_tap_noscope;
GRANT USAGE ON SCHEMA openwop TO openwop_tap_noscope;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop TO openwop_tap_noscope;
CREATE TEMP TABLE scope_outcome (r jsonb);
GRANT ALL ON scope_outcome TO openwop_tap_noscope;
SET LOCAL ROLE openwop_tap_noscope;
INSERT INTO scope_outcome SELECT pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/resolve-run-0000002', 'no-such-node', '{}') $$);
RESET ROLE;
SET LOCAL openwop.bound_tenant = 'acme';
SET LOCAL SESSION AUTHORIZATION openwop_tap_noscope;
INSERT INTO scope_outcome SELECT pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/resolve-run-0000002', 'ext', '{}') $$);
RESET SESSION AUTHORIZATION;
RESET openwop.bound_tenant;
SELECT is((SELECT array_agg(r->>'code') FROM scope_outcome), '{not_found,forbidden}',
          'SET ROLE to a role without approvals:respond does not take the login''s scope away ...');
SELECT is((SELECT r FROM scope_outcome WHERE r->>'code' = 'forbidden'), '{"code": "forbidden", "details": {"requiredScope": "approvals:respond"}, "sqlstate": "PT403"}',
          '... and a login without approvals:respond is forbidden');

-- a cancelled run: 409, not 404 and not interrupt_cancelled
DO $$ BEGIN PERFORM openwop.cancel_run('acme/resolve-run-0000002'); END $$;
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/resolve-run-0000002', 'ext', '{}') $$)->>'code',
          'interrupt_already_resolved', 'a resolve after cancel_run is interrupt_already_resolved');
SELECT is((SELECT status FROM openwop.interrupts WHERE run_id = 'acme/resolve-run-0000002' AND node_id = 'ext'),
          'cancelled', 'cancel_run invalidated the pending interrupt');

-- credential outcomes
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/resolve-run-0000001', 'cred', '{"outcome": "authorized"}') $$)->'details'->>'field',
          'resumeValue', 'credential: authorized is refused while no credential resolves');
SELECT is(openwop.resolve_interrupt('acme/resolve-run-0000001', 'cred', '{"outcome": "declined"}') ->> 'runStatus', 'failed',
          'credential: declined fails the node and, with no routing edge, the run');
SELECT is((SELECT e->'payload'->'error'->>'code' FROM openwop.events('acme/resolve-run-0000001', -1, 10000) e WHERE e->>'type' = 'node.failed'),
          'connector_auth_declined', 'credential: the node fails with connector_auth_declined');

-- idempotency
DO $$ BEGIN PERFORM openwop.create_run('resolve', '{"runId": "acme/resolve-run-0000005"}');
  PERFORM openwop.start_node('acme/resolve-run-0000005', 'gate');
  PERFORM openwop.interrupt('acme/resolve-run-0000005', 'gate', pg_temp.approval()); END $$;
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/resolve-run-0000005', 'gate', '{"action": "accept"}', 'short') $$)->>'code',
          'idempotency_key_invalid', 'a key outside the grammar is idempotency_key_invalid');
CREATE TEMP TABLE first_answer AS
  SELECT openwop.resolve_interrupt('acme/resolve-run-0000005', 'gate', '{"action": "accept"}', '6f1c0b1e-8a0b-4c8e-9d2a-1b2c3d4e5f60') AS r;
SELECT is(openwop.resolve_interrupt('acme/resolve-run-0000005', 'gate', '{"action": "accept"}', '6f1c0b1e-8a0b-4c8e-9d2a-1b2c3d4e5f60'),
          (SELECT r FROM first_answer) || '{"idempotentReplay": true}',
          'the same key and body returns the stored response, marked as a replay');
SELECT is((SELECT count(*) FROM openwop.events('acme/resolve-run-0000005') e WHERE e->>'type' = 'interrupt.resolved'),
          1::bigint, 'a replay appends nothing');
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/resolve-run-0000005', 'gate', '{"action": "reject"}', '6f1c0b1e-8a0b-4c8e-9d2a-1b2c3d4e5f60') $$)->>'code',
          'idempotency_key_mismatch', 'the same key with another body is idempotency_key_mismatch');
SELECT ok((SELECT expires_at >= created_at + interval '24 hours' FROM openwop.idempotency_keys
            WHERE key = '6f1c0b1e-8a0b-4c8e-9d2a-1b2c3d4e5f60'), 'records are kept at least 24 hours');
UPDATE openwop.idempotency_keys SET expires_at = now() - interval '1 second'
 WHERE key = '6f1c0b1e-8a0b-4c8e-9d2a-1b2c3d4e5f60';
SELECT is(openwop.sweep(), 1, 'sweep removes records past their retention');

-- ask does not exit the suspend; with an idempotency key it replays like any answer
DO $$ BEGIN PERFORM openwop.create_run('resolve', '{"runId": "acme/resolve-run-0000006"}');
  PERFORM openwop.start_node('acme/resolve-run-0000006', 'gate');
  PERFORM openwop.interrupt('acme/resolve-run-0000006', 'gate', jsonb_build_object('kind', 'approval', 'data',
    '{"artifactId": "a", "artifactType": "doc", "title": "T", "actions": ["accept", "ask"]}'::jsonb)); END $$;
SELECT is(openwop.resolve_interrupt('acme/resolve-run-0000006', 'gate', '{"action": "ask"}', 'ask-key-00000000000000000001') ->> 'status',
          'pending', 'ask does not exit the suspend');
SELECT is(openwop.resolve_interrupt('acme/resolve-run-0000006', 'gate', '{"action": "ask"}', 'ask-key-00000000000000000001') ->> 'idempotentReplay',
          'true', 'an ask repeated with its idempotency key is a replay, not in flight');

-- two pending interrupts: resolving one leaves the run waiting on the other, which names currentNodeId
DO $$ BEGIN PERFORM openwop.create_run('resolve', '{"runId": "acme/resolve-run-0000007"}');
  PERFORM openwop.start_node('acme/resolve-run-0000007', 'a');
  PERFORM openwop.interrupt('acme/resolve-run-0000007', 'a', '{"kind": "external-event", "data": {"eventType": "e", "correlation": {}}}');
  PERFORM openwop.start_node('acme/resolve-run-0000007', 'b');
  PERFORM openwop.interrupt('acme/resolve-run-0000007', 'b', '{"kind": "custom", "data": {"customKind": "c"}}');
  PERFORM openwop.resolve_interrupt('acme/resolve-run-0000007', 'b', '{}'); END $$;
SELECT is(openwop.run_snapshot('acme/resolve-run-0000007') #>> '{status}' || ' ' || (openwop.run_snapshot('acme/resolve-run-0000007') ->> 'currentNodeId'),
          'waiting-external a', 'the run keeps waiting on the remaining interrupt, and currentNodeId names its node');

SELECT * FROM finish();
ROLLBACK;
