-- Conformance gaps closed after a review against the specifications:
-- refineFeedback member types (the OpenWOP interrupt page, "Approval"),
-- the closed and versioned configurable of createRun
-- (schemas/v2/configurable.schema.json), the FlowDrop INT-1 completed
-- prefix of a pending envelope returned again, 404 before 409 on an ended
-- run (the interrupt page, "Errors"), a 409 repeated under its idempotency
-- key (OpenWOP idempotency.md), and what capabilities() returns.  Each
-- test is named after what it guards.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir refusal.psql
\ir callers.psql
\ir events.psql

-- {sqlstate, code, field} of a refusal: what these tests compare
CREATE FUNCTION pg_temp.refused(sql text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT r - 'details' || jsonb_build_object('field', r -> 'details' -> 'field')
    FROM pg_temp.refusal(sql) r
$$;
CREATE FUNCTION pg_temp.bad(field text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('sqlstate', 'PT400', 'code', 'validation_error', 'field', field)
$$;
CREATE FUNCTION pg_temp.gate(run text, actions jsonb DEFAULT '["accept", "reject", "refine"]') RETURNS jsonb
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM openwop.create_run('gaps', jsonb_build_object('runId', run));
  PERFORM openwop.start_node(run, 'gate');
  RETURN openwop.interrupt(run, 'gate', jsonb_build_object('kind', 'approval', 'data',
           jsonb_build_object('artifactId', 'a', 'artifactType', 'doc', 'title', 'T', 'actions', actions)));
END $$;
-- create_run with configurable c: the refusal, or NULL when the run was created
CREATE FUNCTION pg_temp.cfg(c jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.refused(format('SELECT openwop.create_run(%L, %L)', 'gaps',
                                jsonb_build_object('configurable', c)))
$$;

-- 1. refineFeedback members are typed as interrupt.resolved records them
DO $$ BEGIN PERFORM pg_temp.gate('acme/gaps-refine-000001'); END $$;
CREATE FUNCTION pg_temp.refine(feedback jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.refused(format('SELECT openwop.resolve_interrupt(%L, %L, %L)', 'acme/gaps-refine-000001', 'gate',
                                jsonb_build_object('action', 'refine', 'refineFeedback',
                                                   jsonb_build_object('scope', 'items') || feedback)))
$$;
SELECT is(pg_temp.refine('{"itemIds": [1]}'), pg_temp.bad('resumeValue.refineFeedback.itemIds'),
          'refineFeedback.itemIds must hold strings: [1] is validation_error naming the member');
SELECT is(pg_temp.refine('{"itemIds": "a"}'), pg_temp.bad('resumeValue.refineFeedback.itemIds'),
          'refineFeedback.itemIds must be an array: "a" is validation_error naming the member');
SELECT is(pg_temp.refine('{"itemIds": ["a", null]}'), pg_temp.bad('resumeValue.refineFeedback.itemIds'),
          'refineFeedback.itemIds must hold only strings: a null item is refused');
SELECT is(pg_temp.refine('{"tags": [1]}'), pg_temp.bad('resumeValue.refineFeedback.tags'),
          'refineFeedback.tags must hold strings: [1] is validation_error naming the member');
SELECT is(pg_temp.refine('{"tags": {"a": "b"}}'), pg_temp.bad('resumeValue.refineFeedback.tags'),
          'refineFeedback.tags must be an array: an object is refused');
SELECT is(pg_temp.refine('{"text": 5}'), pg_temp.bad('resumeValue.refineFeedback.text'),
          'refineFeedback.text must be a string: 5 is validation_error naming the member');
SELECT is(pg_temp.refine('{"sectionPath": 5}'), pg_temp.bad('resumeValue.refineFeedback.sectionPath'),
          'refineFeedback.sectionPath must be a string: 5 is validation_error naming the member');
SELECT is(pg_temp.types('acme/gaps-refine-000001'), 'run.started,node.started,interrupt.requested,node.suspended',
          'a refineFeedback refused for its types appends nothing');
SELECT is(openwop.resolve_interrupt('acme/gaps-refine-000001', 'gate',
            '{"action": "refine", "refineFeedback": {"scope": "items", "sectionPath": "$.lines", "itemIds": ["l1", "l2"],
                                                     "tags": ["too-high"], "text": "split line 2"}}') ->> 'action',
          'refine', 'a refineFeedback with every member well typed is accepted');
SELECT is((SELECT e->'payload'->'refineFeedback' FROM openwop.events('acme/gaps-refine-000001') e
            WHERE e->>'type' = 'interrupt.resolved'),
          '{"scope": "items", "sectionPath": "$.lines", "itemIds": ["l1", "l2"], "tags": ["too-high"], "text": "split line 2"}',
          '... and recorded on interrupt.resolved as given');

-- 2. configurable is closed and versioned (version 1)
SELECT is(pg_temp.cfg('{"run": {"escalationThreshold": 0.5}}'), pg_temp.bad('configurable.version'),
          'configurable without version is refused: configurable.version');
SELECT is(pg_temp.cfg('{"version": 2}'), pg_temp.bad('configurable.version'),
          'configurable.version 2 is refused: only version 1 is read');
SELECT is(pg_temp.cfg('{"version": "1"}'), pg_temp.bad('configurable.version'),
          'configurable.version must be the number 1, not the string "1"');
SELECT is(pg_temp.cfg('{"version": null}'), pg_temp.bad('configurable.version'),
          'configurable.version null is refused');
SELECT is(pg_temp.cfg('[1]'), pg_temp.bad('configurable'), 'configurable must be an object');
SELECT is(pg_temp.cfg('{"version": 1, "fooBar": 1}'), pg_temp.bad('configurable.fooBar'),
          'configurable is closed: an unknown top-level member is refused by name');
SELECT is(pg_temp.cfg('{"version": 1, "run": {"fooBar": 1}}'), pg_temp.bad('configurable.run.fooBar'),
          'configurable.run is closed: configurable.run.fooBar is refused');
SELECT is(pg_temp.cfg('{"version": 1, "ai": {"fooBar": 1}}'), pg_temp.bad('configurable.ai.fooBar'),
          'configurable.ai is closed');
SELECT is(pg_temp.cfg('{"version": 1, "distillation": {"fooBar": 1}}'), pg_temp.bad('configurable.distillation.fooBar'),
          'configurable.distillation is closed');
SELECT is(pg_temp.cfg('{"version": 1, "budget": {"fooBar": 1}}'), pg_temp.bad('configurable.budget.fooBar'),
          'configurable.budget (BudgetPolicy) is closed');
SELECT is(pg_temp.cfg('{"version": 1, "run": []}'), pg_temp.bad('configurable.run'), 'configurable.run must be an object');
SELECT is(pg_temp.cfg('{"version": 1, "run": {"recursionLimit": 0}}'), pg_temp.bad('configurable.run.recursionLimit'),
          'configurable.run.recursionLimit is an integer of at least 1: 0 is refused');
SELECT is(pg_temp.cfg('{"version": 1, "run": {"runTimeoutMs": 1.5}}'), pg_temp.bad('configurable.run.runTimeoutMs'),
          'configurable.run.runTimeoutMs is an integer: 1.5 is refused');
SELECT is(pg_temp.cfg('{"version": 1, "run": {"maxLoopIterations": "3"}}'), pg_temp.bad('configurable.run.maxLoopIterations'),
          'configurable.run.maxLoopIterations is an integer: "3" is refused');
SELECT is(pg_temp.cfg('{"version": 1, "run": {"escalationThreshold": 1.5}}'), pg_temp.bad('configurable.run.escalationThreshold'),
          'configurable.run.escalationThreshold is a number in [0, 1]: 1.5 is refused');
SELECT is(pg_temp.cfg('{"version": 1, "run": {"escalationThreshold": -0.1}}'), pg_temp.bad('configurable.run.escalationThreshold'),
          'configurable.run.escalationThreshold below 0 is refused');
SELECT is(pg_temp.cfg('{"version": 1, "run": {"escalationThreshold": 0.7}}'), NULL,
          'configurable.run.escalationThreshold 0.7 is accepted: a number, not the integer the upstream file says');
SELECT is(pg_temp.cfg('{"version": 1, "ai": {"provider": 1}}'), pg_temp.bad('configurable.ai.provider'),
          'configurable.ai.provider is a string');
SELECT is(pg_temp.cfg('{"version": 1, "ai": {"temperature": 2.5}}'), pg_temp.bad('configurable.ai.temperature'),
          'configurable.ai.temperature is a number in [0, 2]: 2.5 is refused');
SELECT is(pg_temp.cfg('{"version": 1, "ai": {"maxTokens": 0}}'), pg_temp.bad('configurable.ai.maxTokens'),
          'configurable.ai.maxTokens is an integer of at least 1');
SELECT is(pg_temp.cfg('{"version": 1, "ai": {"promptOverrides": {"system": 1}}}'), pg_temp.bad('configurable.ai.promptOverrides.system'),
          'configurable.ai.promptOverrides is an object of strings: the offending prompt is named');
SELECT is(pg_temp.cfg('{"version": 1, "ai": {"mockProvider": "yes"}}'), pg_temp.bad('configurable.ai.mockProvider'),
          'configurable.ai.mockProvider is an object');
SELECT is(pg_temp.cfg('{"version": 1, "ai": {"reasoningVerbosity": "loud"}}'), pg_temp.bad('configurable.ai.reasoningVerbosity'),
          'configurable.ai.reasoningVerbosity is one of none, summary, full');
SELECT is(pg_temp.cfg('{"version": 1, "ai": {"maxRefusals": -1}}'), pg_temp.bad('configurable.ai.maxRefusals'),
          'configurable.ai.maxRefusals is an integer of at least 0');
SELECT is(pg_temp.cfg('{"version": 1, "distillation": {"tokenBudget": 0}}'), pg_temp.bad('configurable.distillation.tokenBudget'),
          'configurable.distillation.tokenBudget is an integer of at least 1');
SELECT is(pg_temp.cfg('{"version": 1, "budget": {"maxCostUsd": -1}}'), pg_temp.bad('configurable.budget.maxCostUsd'),
          'configurable.budget.maxCostUsd is a number of at least 0');
SELECT is(pg_temp.cfg('{"version": 1, "budget": {"maxToolCalls": 0}}'), pg_temp.bad('configurable.budget.maxToolCalls'),
          'configurable.budget.maxToolCalls is an integer of at least 1');
SELECT is(pg_temp.cfg('{"version": 1, "budget": {"maxRetries": -1}}'), pg_temp.bad('configurable.budget.maxRetries'),
          'configurable.budget.maxRetries is an integer of at least 0');
SELECT is(pg_temp.cfg('{"version": 1, "budget": {"modelAllow": ["m", "m"]}}'), pg_temp.bad('configurable.budget.modelAllow'),
          'configurable.budget.modelAllow holds unique strings: a duplicate is refused');
SELECT is(pg_temp.cfg('{"version": 1, "budget": {"modelDeny": ["m", 1]}}'), pg_temp.bad('configurable.budget.modelDeny[1]'),
          'configurable.budget.modelDeny holds strings: the offending item is named by index');
SELECT is(pg_temp.cfg('{"version": 1, "budget": {"thresholdPercent": 101}}'), pg_temp.bad('configurable.budget.thresholdPercent'),
          'configurable.budget.thresholdPercent is a number in [0, 100]');
SELECT is(pg_temp.cfg('{"version": 1, "budget": {"onExhaustion": "retry"}}'), pg_temp.bad('configurable.budget.onExhaustion'),
          'configurable.budget.onExhaustion is fail or interrupt');
SELECT is(pg_temp.cfg('{"version": 1, "extensions": {"Acme": {}}}'), pg_temp.bad('configurable.extensions.Acme'),
          'configurable.extensions keys are organisation names: an upper-case key is refused');
SELECT is(pg_temp.cfg('{"version": 1, "extensions": {"acme--labs": {}}}'), pg_temp.bad('configurable.extensions.acme--labs'),
          'configurable.extensions keys: a doubled hyphen is refused');
SELECT is(pg_temp.cfg('{"version": 1, "extensions": {"acme-": {}}}'), pg_temp.bad('configurable.extensions.acme-'),
          'configurable.extensions keys: a trailing hyphen is refused');
SELECT is(pg_temp.cfg('{"version": 1, "extensions": {"1acme": {}}}'), pg_temp.bad('configurable.extensions.1acme'),
          'configurable.extensions keys: a leading digit is refused');
SELECT is(pg_temp.cfg('{"version": 1, "extensions": {"acme": 1}}'), pg_temp.bad('configurable.extensions.acme'),
          'configurable.extensions values are objects');
SELECT is(pg_temp.cfg('{"version": 1, "extensions": []}'), pg_temp.bad('configurable.extensions'),
          'configurable.extensions is an object');
SELECT is((SELECT count(*) FROM openwop.runs WHERE workflow_id = 'gaps' AND configurable <> '{}'), 1::bigint,
          'a refused configurable creates no run (only the accepted 0.7 one exists)');
SELECT is((pg_temp.refusal($$ SELECT openwop.create_run('gaps', '{"configurable": {"version": 1, "run": {"fooBar": 1}}}') $$)
            -> 'details' -> 'errors' -> 0 ->> 'keyword'),
          'additionalProperties', 'details.errors lists the schema failures with their keyword');
DO $$ BEGIN PERFORM openwop.create_run('gaps',
            '{"runId": "acme/gaps-config-000001", "configurable": {"version": 1, "run": {"recursionLimit": 5, "runTimeoutMs": 60000, "maxLoopIterations": 3,
                                                     "escalationThreshold": 0},
              "ai": {"provider": "p", "model": "m", "temperature": 0.2, "maxTokens": 100, "credentialRef": "c",
                     "promptOverrides": {"system": "s"}, "mockProvider": {"anything": [1]}, "reasoningVerbosity": "summary",
                     "maxRefusals": 0},
              "distillation": {"tokenBudget": 10},
              "budget": {"maxTokens": 1, "maxCostUsd": 0, "maxToolCalls": 1, "maxRetries": 0, "modelAllow": ["a", "b"],
                         "modelDeny": [], "thresholdPercent": 100, "onExhaustion": "interrupt"},
              "extensions": {"acme-labs2": {"open": {"nested": true}}, "x": {}}}}'); END $$;
SELECT is(openwop.run_snapshot('acme/gaps-config-000001') -> 'configurable',
          '{"version": 1, "run": {"recursionLimit": 5, "runTimeoutMs": 60000, "maxLoopIterations": 3, "escalationThreshold": 0},
            "ai": {"provider": "p", "model": "m", "temperature": 0.2, "maxTokens": 100, "credentialRef": "c",
                   "promptOverrides": {"system": "s"}, "mockProvider": {"anything": [1]}, "reasoningVerbosity": "summary",
                   "maxRefusals": 0},
            "distillation": {"tokenBudget": 10},
            "budget": {"maxTokens": 1, "maxCostUsd": 0, "maxToolCalls": 1, "maxRetries": 0, "modelAllow": ["a", "b"],
                       "modelDeny": [], "thresholdPercent": 100, "onExhaustion": "interrupt"},
            "extensions": {"acme-labs2": {"open": {"nested": true}}, "x": {}}}',
          'a configurable using every member at its bounds is accepted and returned on the snapshot as given');
-- a versioned configurable still drives low-confidence escalation
DO $$ BEGIN PERFORM openwop.create_run('gaps', '{"runId": "acme/gaps-lowconf-00001", "configurable": {"version": 1, "run": {"escalationThreshold": 0.9}}}');
            PERFORM openwop.start_node('acme/gaps-lowconf-00001', 'agent'); END $$;
SELECT is(openwop.record_agent_decision('acme/gaps-lowconf-00001', 'agent', 'a1', 0.8) ->> 'escalated', 'true',
          'configurable.run.escalationThreshold of a version 1 configurable is the run''s threshold');

-- 3. FlowDrop INT-1: a pending envelope returned again carries the prefix as it was when raised
DO $$ BEGIN
  PERFORM openwop.create_run('gaps', '{"runId": "acme/gaps-prefix-000001"}');
  PERFORM openwop.start_node('acme/gaps-prefix-000001', 'before');
  PERFORM openwop.complete_node('acme/gaps-prefix-000001', 'before', '{"n": 0}');
  PERFORM openwop.start_node('acme/gaps-prefix-000001', 'before');
  PERFORM openwop.complete_node('acme/gaps-prefix-000001', 'before', '{"n": 1}');
  PERFORM openwop.start_node('acme/gaps-prefix-000001', 'again');
  PERFORM openwop.complete_node('acme/gaps-prefix-000001', 'again', '{"visit": 0}');
  PERFORM openwop.start_node('acme/gaps-prefix-000001', 'again');          -- visit 1, still open
  PERFORM openwop.start_node('acme/gaps-prefix-000001', 'parallel');       -- a parallel branch, still open
  PERFORM openwop.start_node('acme/gaps-prefix-000001', 'a');
END $$;
CREATE TEMP TABLE prefix_raise AS
  SELECT openwop.interrupt('acme/gaps-prefix-000001', 'a', '{"kind": "custom", "data": {"customKind": "confirm"}}') AS env;
SELECT is((SELECT env->'results' FROM prefix_raise), '{"before": {"n": 1}, "again": {"visit": 0}}',
          'INT-1 first raise: results hold every node completed before it, each with its latest outputs');
DO $$ BEGIN
  PERFORM openwop.complete_node('acme/gaps-prefix-000001', 'parallel', '{"late": true}');
  PERFORM openwop.complete_node('acme/gaps-prefix-000001', 'again', '{"visit": 1}');
END $$;
CREATE TEMP TABLE prefix_again AS
  SELECT (SELECT count(*) FROM openwop.events('acme/gaps-prefix-000001', -1, 10000)) AS events_before,
         openwop.interrupt('acme/gaps-prefix-000001', 'a', '{"kind": "custom", "data": {"customKind": "confirm"}}') AS env;
SELECT ok(NOT (SELECT env->'results' ? 'parallel' FROM prefix_again),
          'INT-1 pending again: a node completed after the raise (a parallel branch) is not in results');
SELECT is((SELECT env->'results'->'before' FROM prefix_again), '{"n": 1}',
          'INT-1 pending again: a node completed before the raise is present with its outputs');
SELECT is((SELECT env->'results'->'again' FROM prefix_again), '{"visit": 0}',
          'INT-1 pending again: a node completed again after the raise shows its outputs as of the raise');
SELECT is((SELECT env FROM prefix_again), (SELECT env FROM prefix_raise),
          'INT-1 pending again: the envelope is the first raise''s, member for member');
SELECT is((SELECT count(*) FROM openwop.events('acme/gaps-prefix-000001', -1, 10000)),
          (SELECT events_before FROM prefix_again), '... and the repeated call appended nothing');

-- 4. a resolve naming a node that never raised an interrupt: 404, even on an ended run
DO $$ BEGIN PERFORM pg_temp.gate('acme/gaps-order-0000001');
            PERFORM openwop.start_node('acme/gaps-order-0000001', 'plain');
            PERFORM openwop.cancel_run('acme/gaps-order-0000001'); END $$;
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/gaps-order-0000001', 'plain', '{"action": "accept"}') $$),
          '{"sqlstate": "PT404", "code": "not_found", "details": {"runId": "acme/gaps-order-0000001", "nodeId": "plain"}}',
          'resolve order: a node that never raised an interrupt on a cancelled run is 404 not_found, before any terminal check');
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/gaps-order-0000001', 'never-started', '{"action": "accept"}') $$)
            ->> 'code',
          'not_found', 'resolve order: a node the ended run never started is 404 not_found');
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/gaps-order-0000001', 'gate', '{"action": "accept"}') $$),
          '{"sqlstate": "PT409", "code": "interrupt_already_resolved",
            "details": {"runId": "acme/gaps-order-0000001", "nodeId": "gate", "runStatus": "cancelled"}}',
          'resolve order: the node that did raise an interrupt on the cancelled run stays 409 interrupt_already_resolved');
DO $$ BEGIN PERFORM pg_temp.gate('acme/gaps-order-0000002');
            PERFORM openwop.resolve_interrupt('acme/gaps-order-0000002', 'gate', '{"action": "accept"}');
            PERFORM openwop.complete_node('acme/gaps-order-0000002', 'gate');
            PERFORM openwop.complete_run('acme/gaps-order-0000002'); END $$;
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/gaps-order-0000002', 'other', '{"action": "accept"}') $$)
            - 'details',
          '{"sqlstate": "PT404", "code": "not_found"}',
          'resolve order: a node that never raised an interrupt on a completed run is 404 not_found');
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/gaps-order-0000002', 'gate', '{"action": "accept"}') $$)
            - 'details',
          '{"sqlstate": "PT409", "code": "interrupt_already_resolved"}',
          'resolve order: the resolved node of the completed run stays 409 interrupt_already_resolved');

-- 5. a 409 under an idempotency key is reproduced, never stored
DO $$ BEGIN PERFORM pg_temp.gate('acme/gaps-idem-00000001');
  PERFORM openwop.resolve_interrupt('acme/gaps-idem-00000001', 'gate', '{"action": "accept"}', 'gaps-first-key-0000000001'); END $$;
CREATE TEMP TABLE idem_409 AS
  SELECT n, pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/gaps-idem-00000001', 'gate', '{"action": "reject"}',
                                                                 'gaps-second-key-000000001') $$) AS r
    FROM generate_series(1, 2) n;
SELECT is((SELECT r - 'details' FROM idem_409 WHERE n = 1), '{"sqlstate": "PT409", "code": "interrupt_already_resolved"}',
          'idempotency of a 409: the first request under a new key is 409 interrupt_already_resolved');
SELECT is((SELECT r FROM idem_409 WHERE n = 2), (SELECT r FROM idem_409 WHERE n = 1),
          'idempotency of a 409: a retry with the same key and body gets the same 409, reproduced');
SELECT is((SELECT count(*) FROM openwop.idempotency_keys WHERE key = 'gaps-second-key-000000001'), 0::bigint,
          'idempotency of a 409: no record is left under its key');
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/gaps-idem-00000001', 'gate', '{"action": "accept"}',
                                                                 'gaps-second-key-000000001') $$) - 'details',
          '{"sqlstate": "PT409", "code": "interrupt_already_resolved"}',
          'idempotency of a 409: the unused key with another body is processed on its own, not a mismatch');
SELECT is(openwop.resolve_interrupt('acme/gaps-idem-00000001', 'gate', '{"action": "accept"}', 'gaps-first-key-0000000001')
            ->> 'idempotentReplay',
          'true', 'idempotency of a 409: the earlier success under another key still replays');
SELECT is(pg_temp.types('acme/gaps-idem-00000001'),
          'run.started,node.started,interrupt.requested,node.suspended,interrupt.resolved,node.resumed',
          'idempotency of a 409: the refused retries appended nothing');

-- 6. capabilities() as the README documents it
SELECT is(openwop.capabilities(),
          '{"interrupt": {"tokenAlgs": ["hs256"], "refKinds": ["principal", "group", "role"], "callbackDelivery": false},
            "replay": {"modes": ["replay", "branch"]},
            "conversationPrimitive": {}, "oauth": {"credentialInterrupt": true}}',
          'capabilities() returns the interrupt facet under "interrupt", the replay modes under "replay", the conversationPrimitive family and oauth.credentialInterrupt, as the README documents');

SELECT * FROM finish();
ROLLBACK;
