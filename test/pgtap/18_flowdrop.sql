-- FlowDrop INT-22 (an interrupt is published as 24 keys, every one always
-- present) and INT-23 (no expiry is a sentinel, published as null):
-- openwop.flowdrop_interrupt(id) and its list form
-- openwop.flowdrop_interrupts(ids), for every kind and every status, who
-- may read an entry, and every refusal.  docs/flowdrop.md is the mapping
-- these tests hold the code to.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir refusal.psql
\ir callers.psql

-- the 24 keys, in the order of INT-22
CREATE TEMP TABLE int22 (keys text[]);
INSERT INTO int22 VALUES ('{id,type,status,message,nodeId,workflowId,pipelineId,sessionId,schema,options,context,defaultValue,responseData,createdAt,expiresAt,scheduledAt,resolvedAt,resolvedBy,direction,jobId,targetPipelineId,initiatorUid,reason,linkedInterruptId}');

-- the keys of a json object, in the order its text has them
CREATE FUNCTION pg_temp.keys(j json) RETURNS text[] LANGUAGE sql AS $$
  SELECT array_agg(k ORDER BY n) FROM json_object_keys(j) WITH ORDINALITY AS t (k, n)
$$;
-- a run with node "work" started, and the interrupt raised by request on it
CREATE FUNCTION pg_temp.raise(run text, request jsonb, node text DEFAULT 'work') RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  PERFORM openwop.create_run('wf-' || split_part(run, '/', 2), jsonb_build_object('runId', run));
  PERFORM openwop.start_node(run, node);
  RETURN openwop.interrupt(run, node, request) #>> '{metadata,interrupt,id}';
END $$;
CREATE FUNCTION pg_temp.entry(iid text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT openwop.flowdrop_interrupt(iid)::jsonb
$$;
CREATE FUNCTION pg_temp.iso(v jsonb) RETURNS boolean LANGUAGE sql AS $$
  SELECT jsonb_typeof(v) = 'string' AND v #>> '{}' ~ '^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$'
$$;
-- the keys of an entry that are null, in order
CREATE FUNCTION pg_temp.nulls(j json) RETURNS text[] LANGUAGE sql AS $$
  SELECT array_agg(key ORDER BY n) FROM json_each(j) WITH ORDINALITY AS t (key, value, n)
   WHERE json_typeof(value) = 'null'
$$;

CREATE TEMP TABLE iid (name text PRIMARY KEY, id text);
INSERT INTO iid VALUES
  ('approval', pg_temp.raise('acme/fd-approval-0000001', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc",
     "title": "Ship \"v2\"?\n(é)", "description": "the release", "actions": ["accept", "reject", "refine"]}, "timeoutMs": 60000}', 'gate')),
  ('clarification', pg_temp.raise('acme/fd-clarify-00000001', '{"kind": "clarification", "data": {"questions": [
     {"id": "q1", "question": "Which region?", "schema": {"type": "string"}}, {"id": "q2", "question": "Why?"}]}}')),
  ('external-event', pg_temp.raise('acme/fd-external-0000001', '{"kind": "external-event", "data": {"eventType": "paid",
     "correlation": {"order": 7}}, "timeoutMs": 0}')),
  ('custom', pg_temp.raise('acme/fd-custom-000000001', '{"kind": "custom", "data": {"customKind": "x.review", "payload": [1, 2]},
     "resumeSchema": {"type": "object", "required": ["ok"]}}')),
  ('credential', pg_temp.raise('acme/fd-credential-00001', '{"kind": "credential", "data": {"provider": "gh", "scopes": ["repo"],
     "reason": "expired", "connectUrl": "https://example.org/connect"}}'));
DO $$ BEGIN
  PERFORM openwop.create_run('wf-lowconf', '{"runId": "acme/fd-lowconf-00000001"}');
  PERFORM openwop.start_node('acme/fd-lowconf-00000001', 'agent');
  PERFORM openwop.record_agent_decision('acme/fd-lowconf-00000001', 'agent', 'triage', 0.2, '{"route": "b"}');
END $$;
INSERT INTO iid SELECT 'low-confidence', interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/fd-lowconf-00000001';
-- the conversation kinds: a start, and a turn and a close of conversations already opened
INSERT INTO iid VALUES ('conversation.start', pg_temp.raise('acme/fd-conv-start-000001', '{"kind": "conversation.start",
     "data": {"conversationId": "fd-c1", "title": "Support", "initialPrompt": "How can we help?"}}'));
DO $$ DECLARE k text; BEGIN
  FOREACH k IN ARRAY ARRAY['exchange', 'close'] LOOP
    PERFORM pg_temp.raise('acme/fd-conv-' || k || '-0000001', jsonb_build_object('kind', 'conversation.start',
              'data', jsonb_build_object('conversationId', 'fd-' || k)));
    PERFORM openwop.resolve_interrupt('acme/fd-conv-' || k || '-0000001', 'work', 'null');
    INSERT INTO iid VALUES ('conversation.' || k, openwop.interrupt('acme/fd-conv-' || k || '-0000001', 'work',
              jsonb_build_object('kind', 'conversation.' || k, 'data', jsonb_build_object('conversationId', 'fd-' || k)
                || CASE k WHEN 'exchange' THEN '{"prompt": "Which order?"}'::jsonb ELSE '{"reason": "goal-reached"}' END), 1)
              #>> '{metadata,interrupt,id}');
  END LOOP;
END $$;

/* ------------------------------------------------------------------
 * INT-22: 24 keys, in order, every one present
 * ------------------------------------------------------------------ */

SELECT is(pg_typeof(openwop.flowdrop_interrupt(id))::text, 'json', 'INT-22 the entry is json, whose text keeps the key order (jsonb would sort it)')
  FROM iid WHERE name = 'approval';
SELECT is(pg_temp.keys(openwop.flowdrop_interrupt(id)), (SELECT keys FROM int22),
          format('INT-22 requirement 1: a pending %s interrupt has the 24 keys, in the rule''s order', name))
  FROM iid ORDER BY name;
SELECT is((SELECT count(*) FROM json_object_keys(openwop.flowdrop_interrupt(id))), 24::bigint,
          format('INT-22 requirement 5: no key of the %s entry is omitted or repeated', name))
  FROM iid ORDER BY name;
SELECT is(pg_temp.entry(id) ->> 'type', name, format('INT-22 requirement 3: type is the kind, %s', name))
  FROM iid ORDER BY name;

-- a pending approval, key by key
SELECT is(pg_temp.entry(id) - 'id' - 'createdAt' - 'expiresAt',
          '{"type": "approval", "status": "pending", "message": "Ship \"v2\"?\n(é)", "nodeId": "gate",
            "workflowId": "wf-fd-approval-0000001", "pipelineId": "acme/fd-approval-0000001", "sessionId": null,
            "schema": null, "options": ["accept", "reject", "refine"],
            "context": {"artifactId": "a", "artifactType": "doc", "title": "Ship \"v2\"?\n(é)", "description": "the release",
                        "actions": ["accept", "reject", "refine"]},
            "defaultValue": null, "responseData": null, "scheduledAt": null, "resolvedAt": null, "resolvedBy": null,
            "direction": "outward", "jobId": "acme/fd-approval-0000001#gate#0", "targetPipelineId": null,
            "initiatorUid": "postgres", "reason": null, "linkedInterruptId": null}'::jsonb
            || jsonb_build_object('initiatorUid', session_user::text),
          'INT-22 a pending approval: message is its title, options its actions, context its data, jobId its node execution')
  FROM iid WHERE name = 'approval';
SELECT is(pg_temp.entry(id) ->> 'id', pg_temp.uuid_of(id),
          'id is the interrupt''s UUID (0.11.0): the 16 bytes of its tenant-bound id''s opaque segment, in lower case') FROM iid WHERE name = 'approval';
SELECT ok(pg_temp.entry(id) ->> 'id' ~ '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$',
          format('... a version-4 UUID, of a %s interrupt too', name)) FROM iid ORDER BY name;
SELECT is(pg_temp.nulls(openwop.flowdrop_interrupt(id)),
          '{sessionId,schema,defaultValue,responseData,scheduledAt,resolvedAt,resolvedBy,targetPipelineId,reason,linkedInterruptId}',
          'INT-22 requirement 5: unset members are present and null, in order')
  FROM iid WHERE name = 'approval';
SELECT ok(pg_temp.iso(pg_temp.entry(id) -> 'createdAt') AND pg_temp.iso(pg_temp.entry(id) -> 'expiresAt'),
          'INT-22 requirement 4: createdAt and expiresAt are ISO-8601 strings (UTC, milliseconds), never numbers')
  FROM iid WHERE name = 'approval';
SELECT is(((pg_temp.entry(i.interrupt_id) ->> 'createdAt')::timestamptz, (pg_temp.entry(i.interrupt_id) ->> 'expiresAt')::timestamptz),
          (date_trunc('milliseconds', i.created_at), date_trunc('milliseconds', i.expires_at)),
          '... and they are the interrupt''s raising time and deadline')
  FROM openwop.interrupts i JOIN iid ON iid.id = i.interrupt_id WHERE iid.name = 'approval';
SELECT is((pg_temp.entry(id) ->> 'expiresAt')::timestamptz - (pg_temp.entry(id) ->> 'createdAt')::timestamptz, interval '60 seconds',
          '... timeoutMs after it was raised') FROM iid WHERE name = 'approval';

-- the other kinds: what each request holds goes where
SELECT is(pg_temp.entry(id) -> 'message', '"Which region?"', 'message of a clarification: its first question')
  FROM iid WHERE name = 'clarification';
SELECT is(pg_temp.entry(id) -> 'context' -> 'questions' -> 1 ->> 'question', 'Why?', '... every question is in context')
  FROM iid WHERE name = 'clarification';
SELECT is(jsonb_build_object('message', e -> 'message', 'options', e -> 'options', 'schema', e -> 'schema'),
          '{"message": null, "options": null, "schema": null}',
          format('the %s interrupt carries no text for a person, no options and no resumeSchema: all null', name))
  FROM iid, pg_temp.entry(id) e WHERE name IN ('external-event', 'low-confidence') ORDER BY name;
SELECT is(pg_temp.entry(id) -> 'context', '{"eventType": "paid", "correlation": {"order": 7}}', 'context of an external event: its data')
  FROM iid WHERE name = 'external-event';
SELECT is(pg_temp.entry(id) -> 'schema', '{"type": "object", "required": ["ok"]}', 'schema is the resumeSchema (custom)')
  FROM iid WHERE name = 'custom';
SELECT is(pg_temp.entry(id) -> 'message', 'null', '... and a custom interrupt has no message') FROM iid WHERE name = 'custom';
SELECT is(pg_temp.entry(id) -> 'schema' -> 'properties' -> 'outcome' -> 'enum', '["authorized", "declined"]',
          'schema of a credential: the resumeSchema the host pins') FROM iid WHERE name = 'credential';
SELECT is(pg_temp.entry(id) -> 'message', 'null', 'message of a credential: null (its reason is a code, kept in context)')
  FROM iid WHERE name = 'credential';
SELECT is(pg_temp.entry(id) -> 'context' ->> 'agentId', 'triage', 'context of a low-confidence interrupt: the agent''s decision data')
  FROM iid WHERE name = 'low-confidence';
SELECT is(pg_temp.entry(id) -> 'jobId', '"acme/fd-lowconf-00000001#agent#0"', '... raised by the agent''s node execution')
  FROM iid WHERE name = 'low-confidence';
SELECT is(jsonb_object_agg(name, pg_temp.entry(id) -> 'message'),
          '{"conversation.start": "How can we help?", "conversation.exchange": "Which order?", "conversation.close": null}',
          'message of the conversation kinds: a start''s initialPrompt, a turn''s prompt, none for a close (its reason is a code)')
  FROM iid WHERE name LIKE 'conversation.%';
SELECT is((SELECT array_agg(DISTINCT pg_temp.entry(id) ->> 'direction') FROM iid), '{outward}',
          'direction: every interrupt of this host asks someone outside the run (outward)');

/* ------------------------------------------------------------------
 * INT-23: the no-expiry sentinel is published as null
 * ------------------------------------------------------------------ */

SELECT is(json_typeof(openwop.flowdrop_interrupt(id) -> 'expiresAt'), 'null',
          'INT-23 timeoutMs 0 is no expiry: expiresAt is null, never 0') FROM iid WHERE name = 'external-event';
SELECT is(json_typeof(openwop.flowdrop_interrupt(id) -> 'expiresAt'), 'null',
          'INT-23 an absent timeoutMs is no expiry: expiresAt is null') FROM iid WHERE name = 'clarification';
SELECT is(openwop.sweep(), 0, 'INT-23 ... and neither is ever swept');
SELECT is(pg_temp.entry(id) ->> 'status', 'pending', '... so the entry stays pending') FROM iid WHERE name = 'external-event';

/* ------------------------------------------------------------------
 * Every status: resolved, resolved by the host's timeout, expired,
 * cancelled by the run's end
 * ------------------------------------------------------------------ */

SELECT is(openwop.resolve_interrupt('acme/fd-approval-0000001', 'gate', '{"action": "accept", "feedback": "fine"}') ->> 'decision',
          'granted', 'the approval is granted');
CREATE TEMP TABLE resolved AS SELECT pg_temp.entry(id) AS e, openwop.flowdrop_interrupt(id) AS j FROM iid WHERE name = 'approval';
SELECT is(pg_temp.keys(j), (SELECT keys FROM int22), 'INT-22 a resolved entry has the 24 keys in order') FROM resolved;
SELECT is(e ->> 'status', 'resolved', 'status: resolved') FROM resolved;
SELECT is((e -> 'responseData') - 'decidedAt', jsonb_build_object('action', 'accept', 'feedback', 'fine', 'decidedBy', session_user::text),
          'responseData: the resume value recorded, as the host stamped it') FROM resolved;
SELECT is(e -> 'resolvedBy', jsonb_build_object('issuer', 'urn:openwop-interrupt:session', 'subjectId', session_user::text,
            'tenant', 'acme', 'lane', 'session', 'kind', 'user'),
          'resolvedBy: the Subject who resolved it') FROM resolved;
SELECT ok(pg_temp.iso(e -> 'resolvedAt'), 'INT-22 requirement 4: resolvedAt is an ISO-8601 string') FROM resolved;
SELECT is((e ->> 'resolvedAt')::timestamptz, date_trunc('milliseconds', i.resolved_at), '... the time it was resolved')
  FROM resolved, openwop.interrupts i WHERE i.interrupt_id = (SELECT id FROM iid WHERE name = 'approval');
SELECT is(pg_temp.nulls(j), '{sessionId,schema,defaultValue,scheduledAt,targetPipelineId,reason,linkedInterruptId}',
          '... and what is still unset stays null') FROM resolved;

-- a rejection by majority: reason is what the resolution recorded
SELECT pg_temp.raise('acme/fd-quorum-000000001', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc",
  "title": "Q", "actions": ["accept", "reject"], "rejectionPolicy": "majority"}}', 'gate') IS NOT NULL AS raised;
SELECT is(openwop.resolve_interrupt('acme/fd-quorum-000000001', 'gate', '{"action": "reject"}') ->> 'reason', 'quorum-reject',
          'a majority gate is rejected');
SELECT is(pg_temp.entry(interrupt_id) -> 'reason', '"quorum-reject"', 'reason: the recorded reason (quorum-reject)')
  FROM openwop.interrupts WHERE run_id = 'acme/fd-quorum-000000001';

-- an approval past its deadline is rejected by the host's timeout
SELECT pg_temp.raise('acme/fd-timeout-00000001', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc",
  "title": "T", "actions": ["accept", "reject"]}, "timeoutMs": 60000}', 'gate') IS NOT NULL AS raised;
UPDATE openwop.interrupts SET expires_at = now() - interval '1 second' WHERE run_id = 'acme/fd-timeout-00000001';
SELECT is(openwop.sweep(), 1, 'the sweep applies the deadline');
CREATE TEMP TABLE timedout AS SELECT openwop.flowdrop_interrupt(interrupt_id) AS j FROM openwop.interrupts WHERE run_id = 'acme/fd-timeout-00000001';
SELECT is(pg_temp.keys(j), (SELECT keys FROM int22), 'INT-22 a timed-out entry has the 24 keys in order') FROM timedout;
SELECT is(jsonb_build_object('status', j -> 'status', 'reason', j -> 'reason', 'responseData', j -> 'responseData', 'resolvedBy', j -> 'resolvedBy'),
          '{"status": "resolved", "reason": "timeout", "responseData": null,
            "resolvedBy": {"issuer": "urn:openwop-interrupt:host", "subjectId": "deadline", "tenant": "acme", "lane": "workload", "kind": "workload"}}',
          'a timeout: resolved by the host''s deadline, reason timeout, no response') FROM timedout;
SELECT ok(pg_temp.iso((j -> 'resolvedAt')::jsonb) AND pg_temp.iso((j -> 'expiresAt')::jsonb), '... resolvedAt and expiresAt are ISO-8601 strings')
  FROM timedout;

-- any other kind expires, by the sweep or by a late answer
SELECT pg_temp.raise('acme/fd-expired-00000001', '{"kind": "external-event", "data": {"eventType": "e", "correlation": {}}, "timeoutMs": 60000}') IS NOT NULL AS raised;
SELECT pg_temp.raise('acme/fd-late-0000000001', '{"kind": "clarification", "data": {"questions": [{"id": "q", "question": "?"}]}, "timeoutMs": 60000}') IS NOT NULL AS raised;
UPDATE openwop.interrupts SET expires_at = now() - interval '1 second' WHERE run_id IN ('acme/fd-expired-00000001', 'acme/fd-late-0000000001');
SELECT is(openwop.resolve_interrupt('acme/fd-late-0000000001', 'work', '{"q": "late"}') ->> 'status', 'expired', 'a late answer expires one');
SELECT is(openwop.sweep(), 2, 'the sweep expires the other and ends both runs');
SELECT is(pg_temp.keys(openwop.flowdrop_interrupt(interrupt_id)), (SELECT keys FROM int22),
          format('INT-22 an expired entry has the 24 keys in order (%s)', run_id))
  FROM openwop.interrupts WHERE run_id IN ('acme/fd-expired-00000001', 'acme/fd-late-0000000001') ORDER BY run_id;
SELECT is(jsonb_build_object('status', e -> 'status', 'reason', e -> 'reason', 'responseData', e -> 'responseData', 'resolvedBy', e -> 'resolvedBy'),
          '{"status": "expired", "reason": "expired", "responseData": null, "resolvedBy": null}',
          format('an expired interrupt: status expired, reason expired, nobody resolved it (%s)', run_id))
  FROM openwop.interrupts, pg_temp.entry(interrupt_id) e
 WHERE run_id IN ('acme/fd-expired-00000001', 'acme/fd-late-0000000001') ORDER BY run_id;
SELECT ok(pg_temp.iso(e -> 'resolvedAt'), format('... resolvedAt is when it stopped waiting, ISO-8601 (%s)', run_id))
  FROM openwop.interrupts, pg_temp.entry(interrupt_id) e
 WHERE run_id IN ('acme/fd-expired-00000001', 'acme/fd-late-0000000001') ORDER BY run_id;

-- the run's end cancels what it held: reason names the ending
SELECT pg_temp.raise('acme/fd-cancel-000000001', '{"kind": "custom", "data": {"customKind": "k"}}') IS NOT NULL AS raised;
SELECT pg_temp.raise('acme/fd-complete-0000001', '{"kind": "custom", "data": {"customKind": "k"}}') IS NOT NULL AS raised;
SELECT pg_temp.raise('acme/fd-fail-00000000001', '{"kind": "custom", "data": {"customKind": "k"}}') IS NOT NULL AS raised;
DO $$ BEGIN
  PERFORM openwop.cancel_run('acme/fd-cancel-000000001', 'operator');
  PERFORM openwop.complete_run('acme/fd-complete-0000001');
  PERFORM openwop.fail_run('acme/fd-fail-00000000001', '{"code": "x", "message": "y"}');
END $$;
SELECT is(pg_temp.keys(openwop.flowdrop_interrupt(interrupt_id)), (SELECT keys FROM int22),
          format('INT-22 a cancelled entry has the 24 keys in order (%s)', run_id))
  FROM openwop.interrupts WHERE run_id IN ('acme/fd-cancel-000000001', 'acme/fd-complete-0000001', 'acme/fd-fail-00000000001') ORDER BY run_id;
SELECT is((SELECT jsonb_object_agg(run_id, jsonb_build_object('status', e -> 'status', 'reason', e -> 'reason', 'resolvedBy', e -> 'resolvedBy'))
             FROM openwop.interrupts, pg_temp.entry(interrupt_id) e
            WHERE run_id IN ('acme/fd-cancel-000000001', 'acme/fd-complete-0000001', 'acme/fd-fail-00000000001')),
          '{"acme/fd-cancel-000000001": {"status": "cancelled", "reason": "run-cancelled", "resolvedBy": null},
            "acme/fd-complete-0000001": {"status": "cancelled", "reason": "run-completed", "resolvedBy": null},
            "acme/fd-fail-00000000001": {"status": "cancelled", "reason": "run-failed", "resolvedBy": null}}',
          'a run that ended cancels its pending interrupt: status cancelled, reason the ending (as node.cancelled says)');
SELECT ok(pg_temp.iso(pg_temp.entry(interrupt_id) -> 'resolvedAt'), '... resolvedAt is when it was cancelled, ISO-8601')
  FROM openwop.interrupts WHERE run_id = 'acme/fd-cancel-000000001';

-- the other kinds resolved: the answer is responseData
SELECT is(openwop.resolve_interrupt('acme/fd-clarify-00000001', 'work', '{"q1": "eu", "q2": "law"}') ->> 'status', 'resolved', 'a clarification is answered');
SELECT is(pg_temp.entry(id) -> 'responseData', '{"q1": "eu", "q2": "law"}', 'responseData of a clarification: the answers')
  FROM iid WHERE name = 'clarification';
SELECT is(openwop.resolve_interrupt('acme/fd-credential-00001', 'work', '{"outcome": "declined"}') ->> 'status', 'resolved', 'a credential is declined');
SELECT is(pg_temp.entry(id) -> 'responseData', '{"outcome": "declined"}', 'responseData of a credential: the outcome')
  FROM iid WHERE name = 'credential';
SELECT is(pg_temp.keys(openwop.flowdrop_interrupt(id)), (SELECT keys FROM int22),
          format('INT-22 every key of a resolved %s entry, in order', name))
  FROM iid WHERE name IN ('clarification', 'credential') ORDER BY name;

-- a later visit of the same node is another job
DO $$ BEGIN
  PERFORM openwop.complete_node('acme/fd-clarify-00000001', 'work');
  PERFORM openwop.start_node('acme/fd-clarify-00000001', 'work');
  PERFORM openwop.interrupt('acme/fd-clarify-00000001', 'work', '{"kind": "clarification", "data": {"questions": [{"id": "q", "question": "Again?"}]}}');
END $$;
SELECT is(array_agg(pg_temp.entry(interrupt_id) ->> 'jobId' ORDER BY visit),
          '{acme/fd-clarify-00000001#work#0,acme/fd-clarify-00000001#work#1}',
          'jobId: one per node execution, stable across reads, distinct for the next visit')
  FROM openwop.interrupts WHERE run_id = 'acme/fd-clarify-00000001';

-- initiatorUid: the run's owner; null when no one is named
SELECT is(pg_temp.entry(id) ->> 'initiatorUid', session_user::text, 'initiatorUid: the subjectId of the login that created the run')
  FROM iid WHERE name = 'custom';
SELECT is(pg_temp.as_request('{"sub": "erin", "tenant": "acme"}', $$
            SELECT openwop.create_run('wf', '{"runId": "acme/fd-jwt-run-00000001"}') $$) ->> 'status', 'running', 'a JWT caller creates a run');
SELECT is(pg_temp.as_request('{"role": "web_anon", "tenant": "acme"}', $$
            SELECT openwop.create_run('wf', '{"runId": "acme/fd-anon-run-0000001"}') $$) ->> 'status', 'running', 'an anonymous request creates a run');
DO $$ BEGIN
  PERFORM openwop.start_node('acme/fd-jwt-run-00000001', 'work');
  PERFORM openwop.interrupt('acme/fd-jwt-run-00000001', 'work', '{"kind": "custom", "data": {"customKind": "k"}}');
  PERFORM openwop.start_node('acme/fd-anon-run-0000001', 'work');
  PERFORM openwop.interrupt('acme/fd-anon-run-0000001', 'work', '{"kind": "custom", "data": {"customKind": "k"}}');
END $$;
SELECT is(pg_temp.entry(interrupt_id) -> 'initiatorUid', '"erin"', '... initiatorUid is the JWT subject''s subjectId')
  FROM openwop.interrupts WHERE run_id = 'acme/fd-jwt-run-00000001';
SELECT is(pg_temp.entry(interrupt_id) -> 'initiatorUid', 'null', '... and null for a run an anonymous caller created')
  FROM openwop.interrupts WHERE run_id = 'acme/fd-anon-run-0000001';

/* ------------------------------------------------------------------
 * Tenant-checked like every read, with the error contract
 * ------------------------------------------------------------------ */

SET LOCAL openwop.tenant = 'other';
CREATE TEMP TABLE other_iid AS SELECT pg_temp.raise('other/fd-other-run-00001', '{"kind": "custom", "data": {"customKind": "k"}}') AS id;
SET LOCAL openwop.tenant = 'acme';
SELECT is(pg_temp.refusal(format('SELECT openwop.flowdrop_interrupt(%L)', id)),
          jsonb_build_object('sqlstate', 'PT403', 'code', 'id_tenant_mismatch', 'details', jsonb_build_object('interruptId', id, 'tenant', 'acme')),
          'another tenant''s interrupt is 403 id_tenant_mismatch') FROM other_iid;
SELECT is(pg_temp.refusal($$ SELECT openwop.flowdrop_interrupt('other/no-such-interrupt-01') $$),
          '{"sqlstate": "PT403", "code": "id_tenant_mismatch", "details": {"interruptId": "other/no-such-interrupt-01", "tenant": "acme"}}',
          '... decided from the string alone: an id of that tenant that names nothing gets the same answer');
SELECT is(pg_temp.refusal($$ SELECT openwop.flowdrop_interrupt('acme/no-such-interrupt-01') $$),
          '{"sqlstate": "PT404", "code": "not_found", "details": {"interruptId": "acme/no-such-interrupt-01"}}',
          'an unknown interrupt of the tenant is 404 not_found');
SELECT is(pg_temp.refusal($$ SELECT openwop.flowdrop_interrupt(NULL) $$),
          '{"sqlstate": "PT400", "code": "validation_error", "details": {"field": "interruptId"}}', 'a NULL id is a validation_error');
SELECT is(pg_temp.refusal($$ SELECT openwop.flowdrop_interrupt('not-an-id') $$) - 'details',
          '{"sqlstate": "PT400", "code": "validation_error"}', 'a malformed id is a validation_error');
SELECT is(pg_temp.refusal($$ SELECT openwop.flowdrop_interrupt('acme/short') $$) -> 'details' ->> 'field', 'interruptId',
          '... naming the field interruptId');
SELECT is((pg_temp.refusal(format('SELECT openwop.flowdrop_interrupt(%L)', repeat('x', 2 * 1024 * 1024))) -> 'details') - 'size',
          '{"field": "interruptId", "limit": 1048576, "setting": "openwop.max_payload_size"}',
          'an id larger than openwop.max_payload_size is refused before it is read');
SELECT is(pg_temp.entry(replace(id, '/', '~2F')) ->> 'id', pg_temp.uuid_of(id), 'the id projected on one URL path segment (~2F) reads the same entry')
  FROM iid WHERE name = 'custom';
CREATE ROLE fd_other LOGIN;
GRANT openwop_approver TO fd_other;
GRANT USAGE ON SCHEMA openwop TO fd_other;
GRANT EXECUTE ON FUNCTION openwop.flowdrop_interrupt(text), openwop.flowdrop_interrupts(text[]) TO fd_other;
SET LOCAL openwop.tenant = '';
SELECT is(pg_temp.as_login('fd_other', 'other', format('SELECT openwop.flowdrop_interrupt(%L)::jsonb', id)) - 'message',
          jsonb_build_object('sqlstate', 'PT403', 'code', 'id_tenant_mismatch', 'details', jsonb_build_object('interruptId', id, 'tenant', 'other')),
          'an approver bound to another tenant cannot read acme''s entry') FROM iid WHERE name = 'approval';
SELECT is(pg_temp.as_login('fd_other', 'other', format('SELECT openwop.flowdrop_interrupt(%L)::jsonb', id)) ->> 'type', 'custom',
          'control: it reads its own tenant''s') FROM other_iid;
SELECT is(pg_temp.as_login('fd_other', 'other', format('SELECT openwop.flowdrop_interrupts(ARRAY[%L, %L])::jsonb', i.id, o.id)) -> 0 ->> 'id', pg_temp.uuid_of(o.id),
          '... and its list form leaves acme''s entry out') FROM iid i, other_iid o WHERE i.name = 'approval';
SET LOCAL openwop.tenant = 'acme';

/* ------------------------------------------------------------------
 * Who may read an entry: approvers and the engine, no one else
 * ------------------------------------------------------------------ */

CREATE ROLE fd_reader LOGIN;        -- EXECUTE on the entry, nothing else
CREATE ROLE fd_engine LOGIN;        -- the engine: it reads the event log
CREATE ROLE fd_alice LOGIN;         -- an approver
GRANT USAGE ON SCHEMA openwop TO fd_reader, fd_engine, fd_alice;
GRANT EXECUTE ON FUNCTION openwop.flowdrop_interrupt(text), openwop.flowdrop_interrupts(text[]) TO fd_reader, fd_engine, fd_alice;
GRANT EXECUTE ON FUNCTION openwop.events(text, bigint, integer) TO fd_engine;
GRANT openwop_approver TO fd_alice;
SELECT is(pg_temp.as_login('fd_reader', 'acme', format('SELECT openwop.flowdrop_interrupt(%L)::jsonb', id)) - 'message',
          '{"sqlstate": "PT403", "code": "forbidden", "details": {"requiredScope": "approvals:respond"}}',
          'entry_needs_scope_or_event_log: a login with EXECUTE on the entry alone is refused 403 forbidden')
  FROM iid WHERE name = 'approval';
SELECT is(pg_temp.as_login('fd_reader', 'acme', $$ SELECT openwop.flowdrop_interrupt('acme/no-such-interrupt-01')::jsonb $$) ->> 'code', 'forbidden',
          '... before any id is looked at: an unknown id gets the same answer');
SELECT is(pg_temp.as_login('fd_reader', 'acme', $$ SELECT openwop.flowdrop_interrupts('{}')::jsonb $$) ->> 'code', 'forbidden',
          '... and so does its list form, even asking for nothing');
SELECT is(pg_temp.as_login('fd_reader', 'acme', format('SELECT openwop.flowdrop_interrupt(%L)::jsonb', id)) ->> 'code', 'forbidden',
          '... and another tenant''s id too: forbidden comes before the id is read') FROM other_iid;
CREATE ROLE fd_super LOGIN SUPERUSER;
SELECT is(pg_temp.as_login('fd_super', 'acme', format('SELECT openwop.flowdrop_interrupt(%L)::jsonb', id)) ->> 'id', pg_temp.uuid_of(id),
          'superuser_reads_entry_as_it_reads_the_log: a superuser that is no approver reads it, as it may read events()')
  FROM iid WHERE name = 'approval';
SELECT is(pg_temp.as_login('fd_engine', 'acme', format('SELECT openwop.flowdrop_interrupt(%L)::jsonb', id)) ->> 'id', pg_temp.uuid_of(id),
          'engine_reads_entry: a role that may read the event log (EXECUTE on openwop.events) reads the entry')
  FROM iid WHERE name = 'approval';
SELECT is(pg_temp.as_login('fd_alice', 'acme', format('SELECT openwop.flowdrop_interrupt(%L)::jsonb', id)) ->> 'id', pg_temp.uuid_of(id),
          'approver_reads_entry: a login holding approvals:respond reads the entry')
  FROM iid WHERE name = 'approval';
GRANT fd_reader TO fd_alice;
SELECT is(pg_temp.as_login('fd_alice', 'acme', format('SELECT openwop.flowdrop_interrupt(%L)::jsonb', id), 'fd_reader') ->> 'id', pg_temp.uuid_of(id),
          '... the scope is its login''s, whatever role it SET')
  FROM iid WHERE name = 'approval';
REVOKE fd_reader FROM fd_alice;
GRANT fd_engine TO fd_reader;
SELECT is(pg_temp.as_login('fd_reader', 'acme', format('SELECT openwop.flowdrop_interrupt(%L)::jsonb', id), 'fd_engine') ->> 'id', pg_temp.uuid_of(id),
          '... and EXECUTE on events is the current role''s, like every EXECUTE: a login SET to the engine''s role reads')
  FROM iid WHERE name = 'approval';
REVOKE fd_engine FROM fd_reader;
-- a role with CREATE in a schema of its own cannot stand in for openwop.events
CREATE SCHEMA fd_evil AUTHORIZATION fd_reader;
CREATE FUNCTION fd_evil.events(text, bigint, integer) RETURNS SETOF jsonb LANGUAGE sql AS 'SELECT NULL::jsonb';
ALTER FUNCTION fd_evil.events(text, bigint, integer) OWNER TO fd_reader;
SELECT current_setting('search_path') AS saved_path \gset
SELECT is(pg_temp.as_login('fd_reader', 'acme', format('SELECT openwop.flowdrop_interrupt(%L)::jsonb
                                                           FROM set_config(''search_path'', ''fd_evil, pg_catalog'', true)', id)) ->> 'code',
          'forbidden', 'a function events() of the caller''s own schema, first on its search_path, grants nothing')
  FROM iid WHERE name = 'approval';
SELECT set_config('search_path', :'saved_path', true) IS NOT NULL AS restored;
-- SECURITY DEFINER code of a privileged owner cannot lend its privilege
CREATE FUNCTION fd_evil.peek(iid text) RETURNS jsonb LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog
  AS 'SELECT openwop.flowdrop_interrupt(iid)::jsonb';
ALTER FUNCTION fd_evil.peek(text) OWNER TO fd_engine;
GRANT USAGE ON SCHEMA fd_evil TO fd_engine;
SELECT is(pg_temp.as_login('fd_reader', 'acme', format('SELECT fd_evil.peek(%L)', id)) ->> 'code', 'forbidden',
          'entry_refused_in_security_definer: a SECURITY DEFINER function owned by the engine reads nothing for its caller')
  FROM iid WHERE name = 'approval';
-- request sessions: the scope claim, or the role PostgREST set
CREATE ROLE fd_authenticator LOGIN;
CREATE ROLE fd_web;
GRANT openwop_tap_authenticator, fd_web TO fd_authenticator;
GRANT USAGE ON SCHEMA openwop TO fd_web;
GRANT EXECUTE ON FUNCTION openwop.flowdrop_interrupt(text), openwop.flowdrop_interrupts(text[]) TO fd_web;
SET LOCAL openwop.jwt_session_role = 'openwop_tap_authenticator';
SET LOCAL request.jwt.claims = '{"role": "fd_web", "tenant": "acme"}';
SELECT is(pg_temp.as_login('fd_authenticator', '*', format('SELECT openwop.flowdrop_interrupt(%L)::jsonb', id), 'fd_web') - 'message',
          '{"sqlstate": "PT403", "code": "forbidden", "details": {"requiredScope": "approvals:respond"}}',
          'anonymous_request_cannot_read_entry: a PostgREST request without a JWT is refused, though its role may EXECUTE')
  FROM iid WHERE name = 'approval';
SET LOCAL request.jwt.claims = '{"role": "fd_web", "tenant": "acme", "sub": "mallory", "scope": "openid"}';
SELECT is(pg_temp.as_login('fd_authenticator', '*', format('SELECT openwop.flowdrop_interrupt(%L)::jsonb', id), 'fd_web') ->> 'code', 'forbidden',
          'jwt_without_scope_cannot_read_entry: nor a JWT subject without approvals:respond (a token holder who read the id from its token)')
  FROM iid WHERE name = 'approval';
SET LOCAL request.jwt.claims = '{"role": "fd_web", "tenant": "acme", "sub": "bob", "scope": "openid approvals:respond"}';
SELECT is(pg_temp.as_login('fd_authenticator', '*', format('SELECT openwop.flowdrop_interrupt(%L)::jsonb', id), 'fd_web') ->> 'id', pg_temp.uuid_of(id),
          'jwt_approver_reads_entry: a JWT subject with approvals:respond reads it')
  FROM iid WHERE name = 'approval';
SET LOCAL request.jwt.claims = '{"role": "fd_web", "tenant": "other", "sub": "bob", "scope": "approvals:respond"}';
SELECT is(pg_temp.as_login('fd_authenticator', '*', format('SELECT openwop.flowdrop_interrupt(%L)::jsonb', id), 'fd_web') ->> 'code', 'id_tenant_mismatch',
          '... but not another tenant''s: the claim''s tenant is the one checked')
  FROM iid WHERE name = 'approval';
RESET request.jwt.claims;
RESET openwop.jwt_session_role;
SELECT ok(NOT has_function_privilege('public', 'openwop.flowdrop_interrupt(text)', 'EXECUTE')
          AND NOT has_function_privilege('public', 'openwop.flowdrop_interrupts(text[])', 'EXECUTE'),
          'PUBLIC may execute neither function until the DBA grants it');

/* ------------------------------------------------------------------
 * The list form (INT-22 requirement 6)
 * ------------------------------------------------------------------ */

CREATE TEMP TABLE ids AS SELECT array_agg(id ORDER BY name) AS a FROM iid;
SELECT is(json_typeof(openwop.flowdrop_interrupts(a)), 'array', 'INT-22 requirement 6: the list form answers a JSON array') FROM ids;
SELECT is((SELECT array_agg(e ->> 'id' ORDER BY n) FROM jsonb_array_elements(openwop.flowdrop_interrupts(a)::jsonb) WITH ORDINALITY x (e, n)),
          (SELECT array_agg(pg_temp.uuid_of(x) ORDER BY k) FROM unnest(a) WITH ORDINALITY u (x, k)),
          'the entries come in the order of the ids given') FROM ids;
SELECT is((SELECT array_agg(e ->> 'id' ORDER BY n) FROM jsonb_array_elements(openwop.flowdrop_interrupts(
             (SELECT array_agg(x ORDER BY k DESC) FROM unnest(a) WITH ORDINALITY u (x, k)))::jsonb) WITH ORDINALITY x (e, n)),
          (SELECT array_agg(pg_temp.uuid_of(x) ORDER BY k DESC) FROM unnest(a) WITH ORDINALITY u (x, k)),
          '... reversed ids, reversed entries') FROM ids;
SELECT is((SELECT array_agg(DISTINCT array_to_string(pg_temp.keys(e), ',')) FROM json_array_elements(openwop.flowdrop_interrupts(a)) e),
          ARRAY[array_to_string((SELECT keys FROM int22), ',')], 'INT-22 every entry of the list has the 24 keys in order') FROM ids;
SELECT is(openwop.flowdrop_interrupts(ARRAY[i.id, o.id, 'acme/no-such-interrupt-01', i.id])::jsonb,
          jsonb_build_array(pg_temp.entry(i.id), pg_temp.entry(i.id)),
          'INT-22 requirement 6: another tenant''s and unknown ids are left out, the rest kept (a repeated id twice)')
  FROM iid i, other_iid o WHERE i.name = 'approval';
SELECT is(openwop.flowdrop_interrupts(ARRAY[o.id, 'acme/no-such-interrupt-01'])::text, '[]',
          'INT-22 requirement 6: filtered down to nothing, the answer is still an array, []') FROM other_iid o;
SELECT is(openwop.flowdrop_interrupts('{}')::text, '[]', 'an empty list of ids answers []');
SELECT is(openwop.flowdrop_interrupts(ARRAY[o.id])::text, '[]', '... and so does a list of another tenant''s ids only') FROM other_iid o;
SELECT is(pg_temp.refusal($$ SELECT openwop.flowdrop_interrupts(NULL) $$),
          '{"sqlstate": "PT400", "code": "validation_error", "details": {"field": "interruptIds"}}', 'a NULL list is a validation_error');
SELECT is(pg_temp.refusal($$ SELECT openwop.flowdrop_interrupts(array_fill('acme/no-such-interrupt-01'::text, ARRAY[1001])) $$),
          '{"sqlstate": "PT400", "code": "validation_error", "details": {"field": "interruptIds"}}', 'more than 1000 ids are a validation_error');
SELECT is(openwop.flowdrop_interrupts(array_fill('acme/no-such-interrupt-01'::text, ARRAY[1000]))::text, '[]', '... 1000 are not');
SELECT is(pg_temp.refusal($$ SELECT openwop.flowdrop_interrupts(ARRAY[['acme/no-such-interrupt-01']]) $$) -> 'details',
          '{"field": "interruptIds"}', 'a two-dimensional array is a validation_error');
SELECT is(pg_temp.refusal($$ SELECT openwop.flowdrop_interrupts(ARRAY['acme/no-such-interrupt-01', NULL]) $$),
          '{"sqlstate": "PT400", "code": "validation_error", "details": {"field": "interruptIds[1]"}}', 'a NULL id in the list is a validation_error naming it');
SELECT is(pg_temp.refusal($$ SELECT openwop.flowdrop_interrupts(ARRAY['acme/short']) $$) ->> 'code', 'validation_error',
          'a malformed id in the list is a validation_error');
SELECT is(pg_temp.refusal($$ SELECT openwop.flowdrop_interrupts(ARRAY['other/short']) $$) ->> 'code', 'validation_error',
          '... of another tenant too: malformed is not left out');
SELECT is(pg_temp.refusal($$ SELECT openwop.flowdrop_interrupts(ARRAY['acme~2Fno-such-interrupt-01']) $$) -> 'details' ->> 'field', 'interruptIds[0]',
          'the list takes ids as "<tenant>/<opaque>": the ~2F projection is for one URL path segment');
SELECT is(pg_temp.refusal(format('SELECT openwop.flowdrop_interrupts(ARRAY[%L])', repeat('x', 2 * 1024 * 1024))) -> 'details' ->> 'setting',
          'openwop.max_payload_size', 'a list larger than openwop.max_payload_size is refused before it is read');
-- an answer larger than an envelope may carry is refused, measured before anything is read
CREATE TEMP TABLE big AS SELECT pg_temp.raise('acme/fd-big-run-00000' || g, jsonb_build_object('kind', 'custom',
    'data', jsonb_build_object('customKind', 'k', 'payload', repeat('p', 100000)))) AS id FROM generate_series(1, 2) g;
SET LOCAL openwop.max_payload_size = 1024;       -- an envelope then carries at most 128 kB
SELECT is((pg_temp.refusal(format('SELECT openwop.flowdrop_interrupts(%L)', (SELECT array_agg(id) FROM big))) -> 'details') - 'size',
          '{"field": "interruptIds", "limit": 131072}', 'a list whose entries hold more than an envelope may carry is a validation_error');
SELECT is(json_array_length(openwop.flowdrop_interrupts(((SELECT array_agg(id) FROM big))[1:1])), 1, '... one of them alone is answered');
RESET openwop.max_payload_size;

/* ------------------------------------------------------------------
 * One indexed read; the list in one statement
 * ------------------------------------------------------------------ */

-- scans of the interrupts and runs tables so far in this transaction: {seq, index, seq, index}
CREATE FUNCTION pg_temp.scans() RETURNS bigint[] LANGUAGE sql AS $$
  SELECT array_agg(c ORDER BY relname, k) FROM pg_stat_xact_all_tables,
         unnest(ARRAY[coalesce(seq_scan, 0), coalesce(idx_scan, 0)]) WITH ORDINALITY AS u (c, k)
   WHERE relid IN ('openwop.interrupts'::regclass, 'openwop.runs'::regclass)
$$;
CREATE FUNCTION pg_temp.scans_since(before bigint[]) RETURNS bigint[] LANGUAGE sql AS $$
  SELECT array_agg(a - b ORDER BY k) FROM unnest(pg_temp.scans(), before) WITH ORDINALITY AS u (a, b, k)
$$;
-- tables of some size (another tenant's work), where reading the whole table would show
INSERT INTO openwop.runs (tenant, run_id, workflow_id, status, owner, event_prefix)
SELECT 'bulk', 'bulk/fd-bulk-run-' || lpad(g::text, 8, '0'), 'wf', 'waiting-approval', '{}', 'p' FROM generate_series(1, 5000) g;
INSERT INTO openwop.interrupts (tenant, interrupt_id, run_id, root_run_id, node_id, visit, ordinal, key, kind, payload, requested_sequence)
SELECT 'bulk', 'bulk/fd-bulk-int-' || lpad(g::text, 8, '0'), 'bulk/fd-bulk-run-' || lpad(g::text, 8, '0'),
       'bulk/fd-bulk-run-' || lpad(g::text, 8, '0'), 'work', 0, 0, 'k' || g, 'custom', '{}', 1 FROM generate_series(1, 5000) g;
DISCARD PLANS;
CREATE TEMP TABLE before (scans bigint[]);
INSERT INTO before SELECT pg_temp.scans();
SELECT ok(openwop.flowdrop_interrupt(id) IS NOT NULL, 'an entry is read') FROM iid WHERE name = 'approval';
SELECT is(pg_temp.scans_since(scans), '{0,1,0,1}',
          'the single entry is one indexed read: one probe of the interrupt''s key and one of its run''s, no table scanned') FROM before;
UPDATE before SET scans = pg_temp.scans();
SELECT is(json_array_length(openwop.flowdrop_interrupts(a)), 9, 'nine entries (one per kind) are read') FROM ids;
SELECT is(pg_temp.scans_since(scans), '{0,9,0,9}',
          '... by one statement: one probe of each key per id, no table scanned') FROM before;

/* ------------------------------------------------------------------
 * Hostile arguments refuse only with the error contract
 * ------------------------------------------------------------------ */

CREATE TEMP TABLE hostile (sql text);
INSERT INTO hostile SELECT format('SELECT openwop.flowdrop_interrupt(%s)', v) FROM unnest(ARRAY['NULL', '''''', '''/''', '''acme/''',
  '''/xxxxxxxxxxxxxxxxxxxxx''', '''acme/%%''', '''acme~2''', '''acme~2F''', '''acme%2Fxxxxxxxxxxxxxxxxxx''', '''acme//xxxxxxxxxxxxxxxxxx''',
  '''a b/xxxxxxxxxxxxxxxxxx''', quote_literal(repeat('a', 300) || '/xxxxxxxxxxxxxxxxxx'), quote_literal('acme/' || repeat('x', 129)),
  quote_literal(E'acme/xxxxxxxxxxxxxxxx\u00e9')]) v;
INSERT INTO hostile SELECT format('SELECT openwop.flowdrop_interrupts(%s)', v) FROM unnest(ARRAY['NULL', '''{}''', '''{NULL}''',
  '''{""}''', '''{/}''', '''{"acme/"}''', '''{"/xxxxxxxxxxxxxxxxxxxx"}''', 'ARRAY[''acme/x'', NULL]', '''[5:5]={"acme/no-such-interrupt-01"}''',
  'ARRAY[[''a''],[''b'']]', quote_literal('{' || repeat('"acme/no-such-interrupt-01",', 1000) || '"x"}')]) v;
SELECT is((SELECT array_agg(DISTINCT r ->> 'sqlstate') FROM hostile, pg_temp.refusal(sql) r WHERE r IS NOT NULL AND r ->> 'sqlstate' !~ '^PT4'),
          NULL, 'error contract: every hostile argument is refused with a PT4xx SQLSTATE of the contract, nothing else');
SELECT is((SELECT count(*) FROM hostile, pg_temp.refusal(sql) r WHERE r IS NOT NULL AND r -> 'details' IS NULL), 0::bigint,
          '... each with a JSON details object');

SELECT * FROM finish();
ROLLBACK;
