-- The conversation kinds (the "Payload" kind table of the OpenWOP
-- interrupt spec: conversation.start, .exchange, .close; gated on
-- conversationPrimitive): a conversation id unique in its tenant, turns
-- with a strictly monotonic turnIndex, outcomeSchema, nothing after close,
-- the conversation.opened, .exchanged and .closed events with their closed
-- payloads, the run status while waiting, replay, and every refusal.
-- Each test is named after the rule it holds (docs/decisions.md says
-- which readings were chosen).
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir refusal.psql
\ir callers.psql
\ir events.psql

-- a new run with node "talk" started
CREATE FUNCTION pg_temp.run(run text, node text DEFAULT 'talk') RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('openwop.tenant', split_part(run, '/', 1), true);
  PERFORM openwop.create_run('chat', jsonb_build_object('runId', run));
  PERFORM openwop.start_node(run, node);
  PERFORM set_config('openwop.tenant', 'acme', true);
END $$;
-- interrupt() of a conversation kind (in the run's tenant)
CREATE FUNCTION pg_temp.conv(run text, kind text, data jsonb, ordinal int DEFAULT 0, node text DEFAULT 'talk',
                             extra jsonb DEFAULT '{}') RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE r jsonb;
BEGIN
  PERFORM set_config('openwop.tenant', split_part(run, '/', 1), true);
  r := openwop.interrupt(run, node, jsonb_build_object('kind', 'conversation.' || kind, 'data', data) || extra, ordinal);
  PERFORM set_config('openwop.tenant', 'acme', true);
  RETURN r;
END $$;
-- the refusal of that call: "code field-or-conversationId"
CREATE FUNCTION pg_temp.refused(run text, kind text, data jsonb, ordinal int DEFAULT 0, node text DEFAULT 'talk')
    RETURNS text LANGUAGE sql AS $$
  SELECT r ->> 'code' || ' ' || coalesce(r -> 'details' ->> 'field', r -> 'details' ->> 'conversationId', '')
    FROM pg_temp.refusal(format('SELECT pg_temp.conv(%L, %L, %L, %s, %L)', run, kind, data, ordinal, node)) r
$$;
CREATE FUNCTION pg_temp.answer(run text, value jsonb, node text DEFAULT 'talk') RETURNS jsonb LANGUAGE sql AS $$
  SELECT openwop.resolve_interrupt(run, node, value)
$$;
-- the latest event of a type, as events() returns it
CREATE FUNCTION pg_temp.event(run text, type text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT e FROM openwop.events(run, -1, 10000) e WHERE e->>'type' = type ORDER BY (e->>'sequence')::int DESC LIMIT 1
$$;
-- the latest event of a type: its type, and the type and node of the event its causationId names
CREATE FUNCTION pg_temp.caused_by(run text, type text) RETURNS text LANGUAGE sql AS $$
  SELECT c->>'type' || ' of ' || (c->>'nodeId') FROM openwop.events(run, -1, 10000) c
   WHERE c->>'eventId' = pg_temp.event(run, type) ->> 'causationId'
$$;
CREATE FUNCTION pg_temp.status(run text) RETURNS text LANGUAGE sql AS $$
  SELECT openwop.run_snapshot(run) ->> 'status'
$$;
CREATE FUNCTION pg_temp.conversation(id text, tenant text DEFAULT 'acme') RETURNS jsonb LANGUAGE sql AS $$
  SELECT to_jsonb(c) - 'tenant' - 'conversation_id' - 'opened_at' - 'closed_at'
    FROM openwop.conversations c WHERE c.tenant = $2 AND c.conversation_id = $1
$$;

/* ------------------------------------------------------------------
 * The capability
 * ------------------------------------------------------------------ */

SELECT is(openwop.capabilities() -> 'conversationPrimitive', '{}',
          'conversationPrimitive_advertised: capabilities() names the family, whose presence is the claim ({}, no facets)');
SELECT is(openwop.capabilities() -> 'interrupt',
          '{"tokenAlgs": ["hs256"], "refKinds": ["principal", "group", "role"], "callbackDelivery": false}',
          '... beside the interrupt facet, unchanged');

/* ------------------------------------------------------------------
 * conversation.start: a tenant-unique conversation, conversation.opened
 * ------------------------------------------------------------------ */

DO $$ BEGIN PERFORM pg_temp.run('acme/conv-run-00000000001'); END $$;
SELECT is(pg_temp.conv('acme/conv-run-00000000001', 'start', '{"conversationId": "support-1", "title": "Support",
                                                                "initialPrompt": "How can we help?"}') ->> 'status',
          'interrupted', 'conversation.start suspends the node');
SELECT is(pg_temp.status('acme/conv-run-00000000001'), 'waiting-input',
          'conversation_waiting_input: the run waits in waiting-input on a conversation.start (DESIGN.md; the digest''s AMBIGUOUS status)');
SELECT is(pg_temp.types('acme/conv-run-00000000001'),
          'run.started,node.started,interrupt.requested,node.suspended,conversation.opened',
          'conversation_opened: interrupt.requested, node.suspended, then conversation.opened');
SELECT is(pg_temp.event('acme/conv-run-00000000001', 'conversation.opened') -> 'payload', '{"conversationId": "support-1"}',
          'conversation_opened_payload: {conversationId} (the closed conversationOpened def)');
SELECT is(pg_temp.caused_by('acme/conv-run-00000000001', 'conversation.opened'), 'node.suspended of talk',
          '... caused by the accompanying node.suspended (its causationId)');
SELECT is(pg_temp.event('acme/conv-run-00000000001', 'conversation.opened') ->> 'nodeId', 'talk', '... on the node''s envelope');
SELECT is(pg_temp.event('acme/conv-run-00000000001', 'interrupt.requested') -> 'payload' -> 'data',
          '{"conversationId": "support-1", "title": "Support", "initialPrompt": "How can we help?"}',
          'interrupt.requested carries the start''s data verbatim');
SELECT is(pg_temp.conversation('support-1'),
          jsonb_build_object('run_id', 'acme/conv-run-00000000001', 'state', 'open', 'last_turn_index', NULL, 'turn_count', 0,
                             'pending_interrupt_id', (SELECT interrupt_id FROM openwop.interrupts
                                                        WHERE run_id = 'acme/conv-run-00000000001')),
          'the conversation is stored: its run, open, no turn yet, waiting on the start');

-- the id is the tenant's
DO $$ BEGIN PERFORM pg_temp.run('acme/conv-run-00000000002'); END $$;
SELECT is(pg_temp.refused('acme/conv-run-00000000002', 'start', '{"conversationId": "support-1"}'),
          'run_state_conflict support-1',
          'conversation_id_tenant_unique: another run of the tenant cannot open a live conversation id (409 run_state_conflict)');
SELECT is(pg_temp.types('acme/conv-run-00000000002'), 'run.started,node.started', '... and the refusal appends nothing');
SELECT is(openwop.run_snapshot('acme/conv-run-00000000002') ->> 'status', 'running', '... nor suspends the node');
DO $$ BEGIN PERFORM pg_temp.run('other/conv-run-0000000001'); END $$;
SELECT is(pg_temp.conv('other/conv-run-0000000001', 'start', '{"conversationId": "support-1"}') ->> 'status', 'interrupted',
          'conversation_id_per_tenant: another tenant opens its own conversation of the same id');
SELECT is((SELECT count(*) FROM openwop.conversations WHERE conversation_id = 'support-1'), 2::bigint,
          '... two rows, one per tenant (the tenant is in the key)');

-- a start answers nothing
SELECT is(pg_temp.refusal($$ SELECT pg_temp.answer('acme/conv-run-00000000001', '{"text": "hi"}') $$),
          '{"sqlstate": "PT400", "code": "validation_error", "details": {"field": "resumeValue"}}',
          'conversation_start_resume_void: a start''s resume value is void, anything but null or {} is 400 validation_error');
SELECT is(pg_temp.refusal($$ SELECT pg_temp.answer('acme/conv-run-00000000001', '"hi"') $$) ->> 'code', 'validation_error',
          '... a string too');
SELECT is(pg_temp.status('acme/conv-run-00000000001'), 'waiting-input', '... and the run keeps waiting');
SELECT is(pg_temp.answer('acme/conv-run-00000000001', 'null') ->> 'status', 'resolved', '... JSON null resolves it');
SELECT is(pg_temp.status('acme/conv-run-00000000001'), 'running', '... and the run resumes');
SELECT is(pg_temp.types('acme/conv-run-00000000001'),
          'run.started,node.started,interrupt.requested,node.suspended,conversation.opened,interrupt.resolved,node.resumed',
          '... with interrupt.resolved and node.resumed, and no conversation event');
SELECT is(pg_temp.conversation('support-1') -> 'pending_interrupt_id', 'null', '... the conversation waits on nothing');

/* ------------------------------------------------------------------
 * conversation.exchange: one turn, strictly monotonic turnIndex
 * ------------------------------------------------------------------ */

SELECT is(pg_temp.refused('acme/conv-run-00000000001', 'exchange', '{"conversationId": "never-opened", "prompt": "?"}', 1),
          'not_found never-opened',
          'conversation_unknown_refused: a turn of a conversation never opened is 404 not_found');
SELECT is(pg_temp.refused('acme/conv-run-00000000002', 'exchange', '{"conversationId": "support-1", "prompt": "?"}'),
          'not_found support-1',
          'conversation_of_another_run_refused: a turn of a conversation another run opened is 404 not_found');
SELECT is(pg_temp.refused('acme/conv-run-00000000001', 'exchange', '{"conversationId": "support-1", "prompt": "?", "turnIndex": 2147483648}', 1),
          'validation_error data.turnIndex', 'turnIndex is at most 2147483647 (400)');
SELECT is(pg_temp.refused('acme/conv-run-00000000001', 'exchange', '{"conversationId": "support-1", "prompt": "?", "turnIndex": -1}', 1),
          'validation_error data.turnIndex', 'turnIndex is an integer of at least 0 (400)');
SELECT is(pg_temp.refused('acme/conv-run-00000000001', 'exchange', '{"conversationId": "support-1", "prompt": "?",
                                                                      "outcomeSchema": {"format": "email"}}', 1),
          'validation_error data.outcomeSchema', 'an outcomeSchema outside the JSON Schema subset is refused when raised (400)');
SELECT is(pg_temp.types('acme/conv-run-00000000001'),
          'run.started,node.started,interrupt.requested,node.suspended,conversation.opened,interrupt.resolved,node.resumed',
          '... and none of the refusals appended anything');

SELECT is(pg_temp.conv('acme/conv-run-00000000001', 'exchange', '{"conversationId": "support-1", "prompt": "Which order?",
            "outcomeSchema": {"type": "object", "required": ["orderId"], "properties": {"orderId": {"type": "integer"}}}}', 1) ->> 'status',
          'interrupted', 'conversation.exchange suspends the node for one turn');
SELECT is(pg_temp.status('acme/conv-run-00000000001'), 'waiting-input',
          'conversation_waiting_input: the run waits in waiting-input on a conversation.exchange');
SELECT is(pg_temp.event('acme/conv-run-00000000001', 'interrupt.requested') -> 'payload' -> 'data' -> 'turnIndex', '0',
          'turn_index_derived: a turn without turnIndex gets the next one (0 for the first), recorded in the request''s data');
SELECT is(pg_temp.conversation('support-1') -> 'last_turn_index', '0', '... and taken by the conversation');

-- one step at a time
DO $$ BEGIN PERFORM openwop.start_node('acme/conv-run-00000000001', 'side'); END $$;
SELECT is(pg_temp.refused('acme/conv-run-00000000001', 'exchange', '{"conversationId": "support-1", "prompt": "?"}', 0, 'side'),
          'run_state_conflict support-1',
          'conversation_one_step_at_a_time: no second turn while one is pending (409), so turns complete in turnIndex order');
SELECT is(pg_temp.refused('acme/conv-run-00000000001', 'close', '{"conversationId": "support-1"}', 0, 'side'),
          'run_state_conflict support-1',
          'conversation_no_close_while_turn_pending: no close while a turn is pending (409), so no turn completes after it');

-- the outcome
CREATE TEMP TABLE bad_outcome AS
  SELECT pg_temp.refusal($$ SELECT pg_temp.answer('acme/conv-run-00000000001', '{"orderId": "seven"}') $$) AS r;
SELECT is((SELECT r - 'details' FROM bad_outcome), '{"sqlstate": "PT400", "code": "validation_error"}',
          'outcome_schema_validated: a turn''s answer that fails its outcomeSchema is 400 validation_error');
SELECT is((SELECT r -> 'details' ->> 'field' FROM bad_outcome), 'resumeValue', '... details.field is resumeValue');
SELECT is((SELECT (r -> 'details' -> 'errors' -> 0) - 'message' FROM bad_outcome), '{"path": "/orderId", "keyword": "type"}',
          '... details.errors as for a resumeSchema: [{path, keyword, message}]');
SELECT is(pg_temp.status('acme/conv-run-00000000001'), 'waiting-input', '... the run keeps waiting');
SELECT is(pg_temp.answer('acme/conv-run-00000000001', '{"orderId": 7}') ->> 'status', 'resolved', 'an outcome that matches resolves the turn');
SELECT is(pg_temp.types('acme/conv-run-00000000001'),
          'run.started,node.started,interrupt.requested,node.suspended,conversation.opened,interrupt.resolved,node.resumed,'
          'interrupt.requested,node.suspended,node.started,interrupt.resolved,node.resumed,conversation.exchanged',
          'conversation_exchanged: interrupt.resolved, node.resumed, then conversation.exchanged');
SELECT is(pg_temp.event('acme/conv-run-00000000001', 'conversation.exchanged') -> 'payload',
          '{"conversationId": "support-1", "turnIndex": 0, "outcome": {"orderId": 7}}',
          'conversation_exchanged_payload: {conversationId, turnIndex, outcome} (outcome is the validated answer)');
SELECT is(pg_temp.caused_by('acme/conv-run-00000000001', 'conversation.exchanged'), 'interrupt.resolved of talk',
          '... caused by the turn''s interrupt.resolved');
SELECT is(pg_temp.event('acme/conv-run-00000000001', 'interrupt.resolved') -> 'payload' -> 'resumeValue', '{"orderId": 7}',
          '... which records the answer as resumeValue, as for any kind');
SELECT is(pg_temp.conversation('support-1') - 'run_id',
          '{"state": "open", "last_turn_index": 0, "turn_count": 1, "pending_interrupt_id": null}',
          '... one turn completed, the conversation free for the next');

-- explicit indexes: forward only
SELECT is(pg_temp.refused('acme/conv-run-00000000001', 'exchange', '{"conversationId": "support-1", "prompt": "?", "turnIndex": 0}', 2),
          'run_state_conflict support-1', 'turn_index_strictly_monotonic: the same turnIndex again is refused (409)');
SELECT is(pg_temp.refusal($$ SELECT pg_temp.conv('acme/conv-run-00000000001', 'exchange',
                              '{"conversationId": "support-1", "prompt": "?", "turnIndex": 0}', 2) $$) -> 'details',
          '{"runId": "acme/conv-run-00000000001", "runStatus": "running", "conversationId": "support-1", "turnIndex": 0, "lastTurnIndex": 0}',
          '... details name the turn asked for and the latest');
SELECT is(pg_temp.conv('acme/conv-run-00000000001', 'exchange', '{"conversationId": "support-1", "prompt": "Anything else?", "turnIndex": 5}', 2) ->> 'status',
          'interrupted', 'turn_index_forward: a greater turnIndex is taken as given (gaps allowed)');
SELECT is(pg_temp.answer('acme/conv-run-00000000001', '"no"') ->> 'status', 'resolved', '... a turn without outcomeSchema takes any answer');
SELECT is(pg_temp.event('acme/conv-run-00000000001', 'conversation.exchanged') -> 'payload',
          '{"conversationId": "support-1", "turnIndex": 5, "outcome": "no"}', '... and records it as its outcome');
SELECT is(pg_temp.refused('acme/conv-run-00000000001', 'exchange', '{"conversationId": "support-1", "prompt": "?", "turnIndex": 3}', 3),
          'run_state_conflict support-1', 'turn_index_backwards_refused: a smaller turnIndex is refused (409)');
SELECT is(pg_temp.conv('acme/conv-run-00000000001', 'exchange', '{"conversationId": "support-1", "prompt": "Sure?"}', 3)
            #>> '{metadata,interrupt,status}', 'pending', 'turn_index_derived: after 5 the next derived turn ...');
SELECT is(pg_temp.event('acme/conv-run-00000000001', 'interrupt.requested') -> 'payload' -> 'data' -> 'turnIndex', '6', '... is 6');
SELECT is(pg_temp.conv('acme/conv-run-00000000001', 'exchange', '{"conversationId": "support-1", "prompt": "Sure?"}', 3)
            #>> '{metadata,interrupt,status}', 'pending', 'a pending turn asked again returns its envelope ...');
SELECT is(pg_temp.conversation('support-1') -> 'last_turn_index', '6', '... and takes no second turn');
SELECT is(pg_temp.answer('acme/conv-run-00000000001', '{"sure": true}', 'talk') -> 'status', '"resolved"', 'turn 6 answered');

-- the last index
DO $$ BEGIN PERFORM pg_temp.run('acme/conv-run-00000000003'); END $$;
DO $$ BEGIN PERFORM pg_temp.conv('acme/conv-run-00000000003', 'start', '{"conversationId": "long-1"}'); END $$;
DO $$ BEGIN PERFORM pg_temp.answer('acme/conv-run-00000000003', '{}'); END $$;
DO $$ BEGIN PERFORM pg_temp.conv('acme/conv-run-00000000003', 'exchange', '{"conversationId": "long-1", "prompt": "?", "turnIndex": 2147483647}', 1); END $$;
DO $$ BEGIN PERFORM pg_temp.answer('acme/conv-run-00000000003', '1'); END $$;
SELECT is(pg_temp.refused('acme/conv-run-00000000003', 'exchange', '{"conversationId": "long-1", "prompt": "?"}', 2),
          'run_state_conflict long-1', 'after turn 2147483647 no turnIndex is left to derive (409)');

/* ------------------------------------------------------------------
 * conversation.close: conversation.closed, nothing after
 * ------------------------------------------------------------------ */

SELECT is(pg_temp.refused('acme/conv-run-00000000001', 'close', '{"conversationId": "never-opened"}', 4),
          'not_found never-opened', 'conversation_unknown_refused: closing a conversation never opened is 404 not_found');
SELECT is(pg_temp.conv('acme/conv-run-00000000001', 'close', '{"conversationId": "support-1", "reason": "goal-reached"}', 4) ->> 'status',
          'interrupted', 'conversation.close suspends the node');
SELECT is(pg_temp.status('acme/conv-run-00000000001'), 'waiting-input',
          'conversation_waiting_input: the run waits in waiting-input on a conversation.close');
SELECT is(pg_temp.event('acme/conv-run-00000000001', 'conversation.closed') -> 'payload',
          '{"conversationId": "support-1", "reason": "goal-reached", "turnCount": 3}',
          'conversation_closed_payload: {conversationId, reason?, turnCount} (turnCount: the conversation.exchanged events)');
SELECT is(pg_temp.caused_by('acme/conv-run-00000000001', 'conversation.closed'), 'node.suspended of talk',
          '... caused by the close''s node.suspended, which it follows');
SELECT is((SELECT count(*) FROM openwop.events('acme/conv-run-00000000001') e WHERE e->>'type' = 'conversation.exchanged'), 3::bigint,
          '... three turns, three conversation.exchanged');
SELECT is(pg_temp.conversation('support-1') ->> 'state', 'closed', '... and the conversation is closed');
SELECT is(pg_temp.refusal($$ SELECT pg_temp.answer('acme/conv-run-00000000001', '[]') $$) ->> 'code', 'validation_error',
          'conversation_close_resume_void: a close takes null or {} only');
SELECT is(pg_temp.answer('acme/conv-run-00000000001', '{}') ->> 'status', 'resolved', '... {} resolves it');
SELECT is(pg_temp.status('acme/conv-run-00000000001'), 'running', '... and the run resumes');
SELECT is(pg_temp.refused('acme/conv-run-00000000001', 'exchange', '{"conversationId": "support-1", "prompt": "?"}', 5),
          'run_state_conflict support-1',
          'conversation_nothing_after_close: no turn is exchanged on a closed conversation in the run (409 run_state_conflict)');
SELECT is(pg_temp.refusal($$ SELECT pg_temp.conv('acme/conv-run-00000000001', 'exchange',
                              '{"conversationId": "support-1", "prompt": "?"}', 5) $$) ->> 'code', 'run_state_conflict', '... as a code');
SELECT is(pg_temp.refused('acme/conv-run-00000000001', 'close', '{"conversationId": "support-1"}', 5),
          'run_state_conflict support-1', '... nor is it closed twice');
SELECT is(pg_temp.refused('acme/conv-run-00000000001', 'start', '{"conversationId": "support-1"}', 5),
          'run_state_conflict support-1', 'conversation_id_never_reused: a closed conversation''s id is not opened again (409)');
SELECT is(pg_temp.refused('acme/conv-run-00000000002', 'start', '{"conversationId": "support-1"}'),
          'run_state_conflict support-1', '... by any run of the tenant');

/* ------------------------------------------------------------------
 * Replay: every turn re-derives its key and its recorded answer
 * ------------------------------------------------------------------ */

CREATE TEMP TABLE before_replay AS
  SELECT (SELECT count(*) FROM openwop.events('acme/conv-run-00000000001')) AS events,
         pg_temp.conversation('support-1') AS conversation;
SELECT is(pg_temp.conv('acme/conv-run-00000000001', 'start', '{"conversationId": "support-1"}', 0) - 'interruptId' - 'resolvedBy',
          '{"status": "resolved", "resumeValue": null}',
          'conversation_replay_derives: the start replays its recorded answer (same execution, same key)');
SELECT is(pg_temp.conv('acme/conv-run-00000000001', 'exchange', '{"conversationId": "support-1", "prompt": "Which order?"}', 1) -> 'resumeValue',
          '{"orderId": 7}', '... the first turn replays its outcome');
SELECT is(pg_temp.conv('acme/conv-run-00000000001', 'exchange', '{"conversationId": "support-1", "prompt": "Anything else?", "turnIndex": 5}', 2) -> 'resumeValue',
          '"no"', '... the second turn its own');
SELECT is(pg_temp.conv('acme/conv-run-00000000001', 'exchange', '{"conversationId": "support-1", "prompt": "Sure?"}', 3) -> 'resumeValue',
          '{"sure": true}', '... and the third');
SELECT is(pg_temp.conv('acme/conv-run-00000000001', 'close', '{"conversationId": "support-1"}', 4) ->> 'status', 'resolved',
          '... the close too, though the conversation is closed now: replay derives, never re-checks');
SELECT is((SELECT count(*) FROM openwop.events('acme/conv-run-00000000001')), (SELECT events FROM before_replay),
          '... appending nothing');
SELECT is(pg_temp.conversation('support-1'), (SELECT conversation FROM before_replay), '... and changing no conversation');
SELECT is(pg_temp.refusal($$ SELECT pg_temp.conv('acme/conv-run-00000000001', 'close', '{"conversationId": "support-1"}', 1) $$) ->> 'code',
          'run_state_conflict', 'a replay that raises another kind under a turn''s key is refused, as for any kind');

-- a later visit of the node is a new invocation: a new key, a new turn
DO $$ BEGIN PERFORM pg_temp.run('acme/conv-run-00000000004'); END $$;
DO $$ BEGIN PERFORM pg_temp.conv('acme/conv-run-00000000004', 'start', '{"conversationId": "loop-1"}'); END $$;
DO $$ BEGIN PERFORM pg_temp.answer('acme/conv-run-00000000004', 'null'); END $$;
DO $$ BEGIN PERFORM pg_temp.conv('acme/conv-run-00000000004', 'exchange', '{"conversationId": "loop-1", "prompt": "Again?"}', 1); END $$;
DO $$ BEGIN PERFORM pg_temp.answer('acme/conv-run-00000000004', '"yes"'); END $$;
DO $$ BEGIN PERFORM openwop.complete_node('acme/conv-run-00000000004', 'talk'); END $$;
DO $$ BEGIN PERFORM openwop.start_node('acme/conv-run-00000000004', 'talk'); END $$;
SELECT is(pg_temp.conv('acme/conv-run-00000000004', 'exchange', '{"conversationId": "loop-1", "prompt": "Again?"}', 1) ->> 'status',
          'interrupted', 'conversation_turn_per_visit: the same call in the node''s next visit is a new turn, not a replay');
SELECT is(pg_temp.event('acme/conv-run-00000000004', 'interrupt.requested') -> 'payload' -> 'data' -> 'turnIndex', '1', '... turn 1');
SELECT isnt(pg_temp.event('acme/conv-run-00000000004', 'interrupt.requested') -> 'payload' ->> 'key',
            (SELECT payload ->> 'key' FROM openwop.interrupts WHERE run_id = 'acme/conv-run-00000000004' AND visit = 0 AND ordinal = 1),
            '... under a new key');

/* ------------------------------------------------------------------
 * The other ways an interrupt ends, and the token surface
 * ------------------------------------------------------------------ */

-- a start that never gets its answer: the conversation stays the run's, nothing is raised on it
DO $$ BEGIN PERFORM pg_temp.run('acme/conv-run-00000000005'); END $$;
DO $$ BEGIN PERFORM pg_temp.conv('acme/conv-run-00000000005', 'start', '{"conversationId": "cancelled-1"}'); END $$;
DO $$ BEGIN PERFORM openwop.start_node('acme/conv-run-00000000005', 'side'); END $$;
SELECT is(pg_temp.refused('acme/conv-run-00000000005', 'exchange', '{"conversationId": "cancelled-1", "prompt": "?"}', 0, 'side'),
          'run_state_conflict cancelled-1', 'conversation_one_step_at_a_time: no turn while the start is pending');
SELECT is(openwop.cancel_run('acme/conv-run-00000000005') ->> 'status', 'cancelled', 'a run waiting on a conversation is cancelled');
SELECT is(pg_temp.refusal($$ SELECT pg_temp.conv('acme/conv-run-00000000005', 'exchange', '{"conversationId": "cancelled-1", "prompt": "?"}', 0, 'side') $$) ->> 'code',
          'run_terminal', '... and then accepts no turn (409 run_terminal)');
SELECT is(pg_temp.refused('acme/conv-run-00000000002', 'start', '{"conversationId": "cancelled-1"}'),
          'run_state_conflict cancelled-1', '... its conversation id stays taken');

-- a turn past its deadline expires like any non-approval kind (FlowDrop INT-18)
DO $$ BEGIN PERFORM pg_temp.run('acme/conv-run-00000000006'); END $$;
DO $$ BEGIN PERFORM pg_temp.conv('acme/conv-run-00000000006', 'start', '{"conversationId": "late-1"}'); END $$;
DO $$ BEGIN PERFORM pg_temp.answer('acme/conv-run-00000000006', 'null'); END $$;
DO $$ BEGIN PERFORM pg_temp.conv('acme/conv-run-00000000006', 'exchange', '{"conversationId": "late-1", "prompt": "?"}', 1, 'talk', '{"timeoutMs": 600000}'); END $$;
UPDATE openwop.interrupts SET expires_at = now() - interval '1 second' WHERE run_id = 'acme/conv-run-00000000006' AND status = 'pending';
SELECT is(pg_temp.answer('acme/conv-run-00000000006', '"late"') ->> 'status', 'expired',
          'conversation_turn_deadline: a late answer to a turn is answered {status: expired} (INT-23)');
SELECT is(pg_temp.types('acme/conv-run-00000000006'),
          'run.started,node.started,interrupt.requested,node.suspended,conversation.opened,interrupt.resolved,node.resumed,'
          'interrupt.requested,node.suspended',
          '... appending no conversation.exchanged');
SELECT cmp_ok(openwop.sweep(10), '>=', 1, '... and the sweep ends the run');
SELECT is(pg_temp.status('acme/conv-run-00000000006'), 'cancelled', '... cancelled (reason interrupt-expired)');

-- the token surface takes the same path
CREATE EXTENSION IF NOT EXISTS pgcrypto;
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'openwop_token_issuer') THEN CREATE ROLE openwop_token_issuer; END IF;
  EXECUTE format('GRANT openwop_token_issuer TO %I', current_user);
  PERFORM openwop.add_signing_key('k-conv', 'conversation-secret-0123456789'::bytea);
END $$;
DO $$ BEGIN PERFORM pg_temp.run('acme/conv-run-00000000007'); END $$;
DO $$ BEGIN PERFORM pg_temp.conv('acme/conv-run-00000000007', 'start', '{"conversationId": "token-1"}'); END $$;
DO $$ BEGIN PERFORM pg_temp.answer('acme/conv-run-00000000007', 'null'); END $$;
DO $$ BEGIN PERFORM pg_temp.conv('acme/conv-run-00000000007', 'exchange', '{"conversationId": "token-1", "prompt": "Rating?",
                                                              "outcomeSchema": {"type": "integer", "minimum": 1, "maximum": 5}}', 1); END $$;
CREATE TEMP TABLE turn_token AS
  SELECT openwop.mint_interrupt_token(interrupt_id) AS token FROM openwop.interrupts
   WHERE run_id = 'acme/conv-run-00000000007' AND status = 'pending';
SELECT is(openwop.inspect_interrupt((SELECT token FROM turn_token)) -> 'data' -> 'turnIndex', '0',
          'inspect_interrupt shows the turn with its derived turnIndex');
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt_by_token((SELECT token FROM turn_token), '9') $$) - 'details',
          '{"sqlstate": "PT400", "code": "validation_error"}', 'outcome_schema_validated: by token too');
SELECT is(openwop.resolve_interrupt_by_token((SELECT token FROM turn_token), '4') ->> 'status', 'resolved',
          '... a matching outcome resolves the turn by token');
SELECT is(pg_temp.event('acme/conv-run-00000000007', 'conversation.exchanged') -> 'payload',
          '{"conversationId": "token-1", "turnIndex": 0, "outcome": 4}', '... and completes it');

/* ------------------------------------------------------------------
 * The inbox and the FlowDrop entry
 * ------------------------------------------------------------------ */

DO $$ BEGIN PERFORM pg_temp.conv('acme/conv-run-00000000007', 'exchange', '{"conversationId": "token-1", "prompt": "Why?"}', 2); END $$;
SELECT is((SELECT to_jsonb(p) - 'interrupt_id' - 'requested_at' FROM openwop.pending_interrupts p WHERE run_id = 'acme/conv-run-00000000007'),
          '{"run_id": "acme/conv-run-00000000007", "node_id": "talk", "kind": "conversation.exchange", "title": null,
            "request": {"conversationId": "token-1", "prompt": "Why?", "turnIndex": 1}, "resume_schema": null, "expires_at": null,
            "required_approvals": null, "accepts": null, "rejects": null, "voters": null, "my_vote": null, "my_vote_at": null, "policy": null,
            "due_at": null, "overdue": false}',
          'conversation_in_inbox: a pending turn is in the inbox of every holder of the scope, with its request');
DO $$ BEGIN PERFORM pg_temp.run('acme/conv-run-00000000008'); END $$;
DO $$ BEGIN PERFORM pg_temp.conv('acme/conv-run-00000000008', 'start', '{"conversationId": "inbox-1", "title": "Refund"}'); END $$;
SELECT is((SELECT kind || ' ' || title FROM openwop.pending_interrupts WHERE run_id = 'acme/conv-run-00000000008'),
          'conversation.start Refund', '... a start with its title');

SELECT is(openwop.flowdrop_interrupt(interrupt_id)::jsonb -> 'message', '"Why?"',
          'FlowDrop message of a turn: its prompt')
  FROM openwop.interrupts WHERE run_id = 'acme/conv-run-00000000007' AND status = 'pending';
SELECT is(openwop.flowdrop_interrupt(interrupt_id)::jsonb ->> 'type', 'conversation.exchange', '... type: the kind')
  FROM openwop.interrupts WHERE run_id = 'acme/conv-run-00000000007' AND status = 'pending';
SELECT is(openwop.flowdrop_interrupt(interrupt_id)::jsonb -> 'message', '"Refund"',
          'FlowDrop message of a start without initialPrompt: its title')
  FROM openwop.interrupts WHERE run_id = 'acme/conv-run-00000000008';
SELECT is(openwop.flowdrop_interrupt(interrupt_id)::jsonb -> 'message', '"How can we help?"',
          'FlowDrop message of a start: its initialPrompt')
  FROM openwop.interrupts WHERE run_id = 'acme/conv-run-00000000001' AND kind = 'conversation.start';
SELECT is(openwop.flowdrop_interrupt(interrupt_id)::jsonb -> 'message', 'null',
          'FlowDrop message of a close: null (its reason is a code, kept in context)')
  FROM openwop.interrupts WHERE run_id = 'acme/conv-run-00000000001' AND kind = 'conversation.close';
SELECT is(openwop.flowdrop_interrupt(interrupt_id)::jsonb -> 'responseData', '{"orderId": 7}',
          'FlowDrop responseData of a turn: its outcome')
  FROM openwop.interrupts WHERE run_id = 'acme/conv-run-00000000001' AND ordinal = 1;

/* ------------------------------------------------------------------
 * The store
 * ------------------------------------------------------------------ */

SELECT col_is_pk('openwop', 'conversations', ARRAY['tenant', 'conversation_id'],
                 'conversations key: (tenant, conversation id)');
SELECT throws_ok($$ UPDATE openwop.conversations SET state = 'reopened' WHERE conversation_id = 'support-1' $$,
                 '23514', NULL, 'a conversation''s state is open or closed (a CHECK constraint)');
SELECT throws_ok($$ UPDATE openwop.conversations SET closed_at = NULL WHERE conversation_id = 'support-1' AND tenant = 'acme' $$,
                 '23514', NULL, '... and closed exactly when it has a closing time');

SELECT * FROM finish();
ROLLBACK;
