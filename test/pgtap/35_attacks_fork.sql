-- Attacks on fork_run(): a hostile engine, another tenant's caller, a
-- role with CREATE in a schema of its own, a token holder.  Each section
-- names what it tries; docs/security.md says what held and why.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir refusal.psql
\ir callers.psql

CREATE FUNCTION pg_temp.gate(data jsonb DEFAULT '{}', extra jsonb DEFAULT '{}') RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('kind', 'approval', 'data',
           jsonb_build_object('artifactId', 'attack', 'artifactType', 'fixture', 'title', 'Approve?',
                              'actions', '["accept", "reject"]'::jsonb) || data) || extra
$$;
CREATE FUNCTION pg_temp.types(run text) RETURNS text LANGUAGE sql AS $$
  SELECT string_agg(e ->> 'type', ',' ORDER BY (e ->> 'sequence')::int) FROM openwop.events(run, -1, 10000) e
$$;
CREATE FUNCTION pg_temp.fork(run text, options jsonb) RETURNS text LANGUAGE sql AS $$
  SELECT openwop.fork_run(run, options) ->> 'runId'
$$;
CREATE TEMP TABLE f (name text PRIMARY KEY, run text);
GRANT ALL ON f TO PUBLIC;

-- ==== operator shadowing: the fold's statements run as the extension's owner ====
-- A role with CREATE in a schema of its own puts an "=" (and every other
-- binary operator on the types the statements use) ahead of pg_catalog on
-- its search_path; each records the role it ran as.  fork_run() folds the
-- prefix in statements run as the owner: none of them may reach these.
CREATE ROLE fork_mallory;
GRANT USAGE ON SCHEMA openwop TO fork_mallory;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop TO fork_mallory;
CREATE SCHEMA fork_mallory AUTHORIZATION fork_mallory;
DO $$
DECLARE r record;
BEGIN
  FOR r IN SELECT c.oid::regclass AS rel FROM pg_class c
            WHERE c.relnamespace = pg_my_temp_schema() AND c.relkind IN ('r', 'S') LOOP
    EXECUTE format('GRANT ALL ON %s TO fork_mallory', r.rel);
  END LOOP;
END $$;
DO $$ BEGIN
  PERFORM openwop.create_run('wf', '{"runId": "acme/attack-shadow-000001"}');
  PERFORM openwop.start_node('acme/attack-shadow-000001', 'prep');
  PERFORM openwop.complete_node('acme/attack-shadow-000001', 'prep', '{"n": 1}');
  PERFORM openwop.start_node('acme/attack-shadow-000001', 'gate');
  PERFORM openwop.interrupt('acme/attack-shadow-000001', 'gate', pg_temp.gate());
  PERFORM openwop.resolve_interrupt('acme/attack-shadow-000001', 'gate', '{"action": "reject"}');
END $$;
SET LOCAL ROLE fork_mallory;
CREATE TABLE fork_mallory.seen (op text, who name);
DO $$
DECLARE r record; n int := 0;
BEGIN
  FOR r IN SELECT o.oprname, o.oprleft::regtype AS l, o.oprright::regtype AS rt, o.oprresult::regtype AS res
             FROM pg_catalog.pg_operator o
            WHERE o.oprnamespace OPERATOR(pg_catalog.=) 'pg_catalog'::regnamespace
              AND o.oprkind OPERATOR(pg_catalog.=) 'b'
              AND o.oprleft OPERATOR(pg_catalog.=) ANY ('{text,int8,int4,int2,jsonb,timestamptz,bool,text[],name,numeric,interval}'::regtype[])
              AND o.oprright OPERATOR(pg_catalog.=) ANY ('{text,int8,int4,int2,jsonb,timestamptz,bool,text[],name,numeric,interval}'::regtype[])
  LOOP
    n := n OPERATOR(pg_catalog.+) 1;
    EXECUTE pg_catalog.format(
      'CREATE FUNCTION fork_mallory.op_%s(a %s, b %s) RETURNS %s LANGUAGE plpgsql AS $f$
       BEGIN
         IF current_user OPERATOR(pg_catalog.<>) %L::name THEN
           INSERT INTO fork_mallory.seen VALUES (%L, current_user);
         END IF;
         RETURN a OPERATOR(pg_catalog.%s) b;
       END $f$', n, r.l, r.rt, r.res, 'fork_mallory', r.oprname || '(' || r.l || ',' || r.rt || ')', r.oprname);
    EXECUTE pg_catalog.format('CREATE OPERATOR fork_mallory.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = fork_mallory.op_%s)',
                              r.oprname, r.l, r.rt, n);
  END LOOP;
END $$;
SET LOCAL search_path = fork_mallory, pg_catalog;
DO $$
DECLARE src text := 'acme/attack-shadow-000001'; r text; b text;
BEGIN
  -- a replay from the start (derivation), at the gate's resolution, a branch, a fork of a fork
  r := openwop.fork_run(src, '{"mode": "replay"}') ->> 'runId';
  PERFORM openwop.start_node(r, 'prep');
  PERFORM openwop.complete_node(r, 'prep', '{"n": 1}');
  PERFORM openwop.start_node(r, 'gate');
  PERFORM openwop.interrupt(r, 'gate', pg_temp.gate());
  PERFORM openwop.fork_run(src, '{"mode": "replay", "fromSeq": 6}');
  b := openwop.fork_run(src, '{"mode": "branch", "fromSeq": 6, "runOptionsOverlay": {"metadata": {"a": 1}}}') ->> 'runId';
  PERFORM openwop.interrupt(b, 'gate', pg_temp.gate());
  PERFORM openwop.fork_run(b, '{"mode": "replay", "fromSeq": 3}');
  PERFORM openwop.fork_run(b, '{"mode": "branch", "fromSeq": 3}');
  PERFORM openwop.cancel_run(b);
  INSERT INTO pg_temp.f VALUES ('shadow-done', 'yes');
END $$;
RESET search_path;
RESET ROLE;
SELECT is((SELECT run FROM f WHERE name = 'shadow-done'), 'yes', 'the forks under the hostile search_path were made');
SELECT is((SELECT string_agg(DISTINCT op || ' as ' || who, ', ') FROM fork_mallory.seen), NULL,
          'fork_search_path: no statement fork_run() runs as the owner reaches an operator of the caller''s search_path (the fold''s CASE named "=" bare)');

-- ==== a replay of a branch: the branch's recorded rejection is derived, never re-decided ====
DO $$ BEGIN
  PERFORM openwop.create_run('wf', '{"runId": "acme/attack-branch-src-01"}');
  PERFORM openwop.start_node('acme/attack-branch-src-01', 'gate');
  PERFORM openwop.interrupt('acme/attack-branch-src-01', 'gate', pg_temp.gate());
  PERFORM openwop.start_node('acme/attack-branch-src-01', 'side');                    -- sequence 4
  INSERT INTO f VALUES ('branch', pg_temp.fork('acme/attack-branch-src-01', '{"mode": "branch", "fromSeq": 4}'));
  PERFORM openwop.resolve_interrupt((SELECT run FROM f WHERE name = 'branch'), 'gate', '{"action": "reject"}');
END $$;
SELECT is(openwop.run_snapshot((SELECT run FROM f WHERE name = 'branch')) ->> 'status', 'failed',
          'the branch rejects the gate it inherited pending, and fails');
DO $$ BEGIN
  INSERT INTO f VALUES ('branch-replay0', pg_temp.fork((SELECT run FROM f WHERE name = 'branch'), '{"mode": "replay"}'));
  PERFORM openwop.start_node((SELECT run FROM f WHERE name = 'branch-replay0'), 'gate');
  INSERT INTO f VALUES ('branch-replay2', pg_temp.fork((SELECT run FROM f WHERE name = 'branch'), '{"mode": "replay", "fromSeq": 2}'));
END $$;
SELECT is(openwop.interrupt((SELECT run FROM f WHERE name = 'branch-replay0'), 'gate', pg_temp.gate()) ->> 'decision', 'rejected',
          'replay_of_branch: a replay of the branch from 0 derives the rejection the branch recorded (it asked anew before)');
SELECT is(openwop.run_snapshot((SELECT run FROM f WHERE name = 'branch-replay0')) ->> 'status', 'failed', '... and fails as the branch did');
SELECT is(openwop.interrupt((SELECT run FROM f WHERE name = 'branch-replay2'), 'gate', pg_temp.gate()) ->> 'decision', 'rejected',
          'replay_of_branch: so does a replay at the gate''s interrupt.requested');
SELECT is(pg_temp.refusal(format($$ SELECT openwop.resolve_interrupt(%L, 'gate', '{"action": "accept"}') $$,
                                 (SELECT run FROM f WHERE name = 'branch-replay2'))) ->> 'code', 'interrupt_already_resolved',
          '... and an accept of it is 409: the replay never re-decides');
DO $$ BEGIN
  INSERT INTO f VALUES ('branch-replay-replay', pg_temp.fork((SELECT run FROM f WHERE name = 'branch-replay0'), '{"mode": "replay", "fromSeq": 1}'));
  PERFORM openwop.start_node((SELECT run FROM f WHERE name = 'branch-replay-replay'), 'gate');
END $$;
SELECT is(openwop.interrupt((SELECT run FROM f WHERE name = 'branch-replay-replay'), 'gate', pg_temp.gate()) ->> 'decision', 'rejected',
          'replay_of_branch: a replay of that replay too (the chain ends at the branch)');
-- the source's own history below the branch point, replayed through the branch
DO $$ BEGIN
  PERFORM openwop.create_run('wf', '{"runId": "acme/attack-branch-src-02"}');
  PERFORM openwop.start_node('acme/attack-branch-src-02', 'gate');
  PERFORM openwop.interrupt('acme/attack-branch-src-02', 'gate', pg_temp.gate());
  PERFORM openwop.resolve_interrupt('acme/attack-branch-src-02', 'gate', '{"action": "reject"}');
  PERFORM openwop.create_run('wf', '{"runId": "acme/attack-branch-src-03"}');
END $$;
DO $$ BEGIN
  -- a routed run: the gate's rejection does not end it, so the branch can be made after it
  PERFORM openwop.create_run('wf', '{"runId": "acme/attack-branch-src-04", "definition": {"nodes": [{"id": "gate"}, {"id": "after"}],
                                     "edges": [{"from": "gate", "to": "after", "triggerRule": "all_complete"}]}}');
  PERFORM openwop.start_node('acme/attack-branch-src-04', 'gate');
  PERFORM openwop.interrupt('acme/attack-branch-src-04', 'gate', pg_temp.gate());
  PERFORM openwop.resolve_interrupt('acme/attack-branch-src-04', 'gate', '{"action": "reject"}');
  PERFORM openwop.start_node('acme/attack-branch-src-04', 'after');
  INSERT INTO f VALUES ('branch-late', pg_temp.fork('acme/attack-branch-src-04',
    jsonb_build_object('mode', 'branch', 'fromSeq', (SELECT max((e ->> 'sequence')::int) FROM openwop.events('acme/attack-branch-src-04') e))));
  INSERT INTO f VALUES ('branch-late-replay', pg_temp.fork((SELECT run FROM f WHERE name = 'branch-late'), '{"mode": "replay", "fromSeq": 1}'));
  PERFORM openwop.start_node((SELECT run FROM f WHERE name = 'branch-late-replay'), 'gate');
END $$;
SELECT is(openwop.interrupt((SELECT run FROM f WHERE name = 'branch-late-replay'), 'gate', pg_temp.gate()) ->> 'decision', 'rejected',
          'replay_of_branch: a rejection the branch holds from its source''s history is derived too');

-- ==== fork points inside a change ====
DO $$ BEGIN
  PERFORM openwop.create_run('wf', '{"runId": "acme/attack-lowconf-00001"}');
  PERFORM openwop.start_node('acme/attack-lowconf-00001', 'agent');
  PERFORM openwop.record_agent_decision('acme/attack-lowconf-00001', 'agent', 'planner', 0.2, '{"plan": "A"}');
  PERFORM openwop.resolve_interrupt('acme/attack-lowconf-00001', 'agent', '{"plan": "B"}');
  INSERT INTO f VALUES ('lowconf', pg_temp.fork('acme/attack-lowconf-00001', '{"mode": "replay", "fromSeq": 1}'));
  PERFORM openwop.start_node((SELECT run FROM f WHERE name = 'lowconf'), 'agent');
  PERFORM openwop.record_agent_decision((SELECT run FROM f WHERE name = 'lowconf'), 'agent', 'planner', 0.2, '{"plan": "A"}');
END $$;
SELECT is(pg_temp.types((SELECT run FROM f WHERE name = 'lowconf')),
          'run.started,node.started,agent.decided,interrupt.resolved,node.resumed', 'a replay derives the escalation');
SELECT is(pg_temp.refusal(format($$ SELECT openwop.fork_run(%L, '{"mode": "branch", "fromSeq": 3}') $$,
                                 (SELECT run FROM f WHERE name = 'lowconf'))) ->> 'code', 'fork_point_invalid',
          'fork_point_inside_change: the derived escalation (interrupt.resolved right after its agent.decided) is part of the decision''s change: 422 (a branch there kept the low-confidence decision unescalated)');
-- conversations: conversation.opened, .exchanged, .closed continue a change
DO $$ BEGIN
  PERFORM openwop.create_run('wf', '{"runId": "acme/attack-conv-0000001"}');
  PERFORM openwop.start_node('acme/attack-conv-0000001', 'ask');
  PERFORM openwop.interrupt('acme/attack-conv-0000001', 'ask',
    '{"kind": "conversation.start", "data": {"conversationId": "attack-fork-conv", "title": "T"}}');   -- 2, 3, 4 opened
  PERFORM openwop.resolve_interrupt('acme/attack-conv-0000001', 'ask', 'null');                      -- 5, 6
  PERFORM openwop.interrupt('acme/attack-conv-0000001', 'ask',
    '{"kind": "conversation.exchange", "data": {"conversationId": "attack-fork-conv", "prompt": "p?"}}', 1);   -- 7, 8
  PERFORM openwop.start_node('acme/attack-conv-0000001', 'side');                                    -- 9
END $$;
SELECT is(pg_temp.types('acme/attack-conv-0000001'),
          'run.started,node.started,interrupt.requested,node.suspended,conversation.opened,interrupt.resolved,node.resumed,interrupt.requested,node.suspended,node.started',
          'a run holding a conversation, its turn pending');
SELECT is(pg_temp.refusal($$ SELECT openwop.fork_run('acme/attack-conv-0000001', '{"mode": "branch", "fromSeq": 4}') $$) ->> 'code',
          'fork_point_invalid', 'fork_point_inside_change: conversation.opened continues its start''s change: 422');
SELECT is(pg_temp.refusal($$ SELECT openwop.fork_run('acme/attack-conv-0000001', '{"mode": "branch", "fromSeq": 9}') $$),
          '{"sqlstate": "PT422", "code": "fork_point_invalid", "details": {"sourceRunId": "acme/attack-conv-0000001", "fromSeq": 9, "lastSequence": 9}}',
          'fork_conversation_pending: a branch would hold the turn pending, on a conversation that is not its own, so no one could resolve it (an internal error before): 422');
SELECT is(pg_temp.refusal($$ SELECT openwop.fork_run('acme/attack-conv-0000001', '{"mode": "replay", "fromSeq": 9}') $$) ->> 'code',
          'fork_point_invalid', '... so would a replay, the source not having answered it');
SELECT is((SELECT count(*) FROM openwop.runs WHERE fork_of = 'acme/attack-conv-0000001'), 0::bigint, '... and nothing was made');
SELECT is((SELECT run_id || ' ' || (pending_interrupt_id IS NOT NULL)::text FROM openwop.conversations WHERE conversation_id = 'attack-fork-conv'),
          'acme/attack-conv-0000001 true', '... the conversation is still the source''s, waiting on its turn');
SELECT is(openwop.resolve_interrupt('acme/attack-conv-0000001', 'ask', '{"said": "yes"}') ->> 'status', 'resolved',
          'the source answers its turn');
SELECT is(pg_temp.refusal($$ SELECT openwop.fork_run('acme/attack-conv-0000001', '{"mode": "branch", "fromSeq": 12}') $$) ->> 'code',
          'fork_point_invalid', 'fork_point_inside_change: conversation.exchanged continues its turn''s resolution: 422');
SELECT is(openwop.fork_run('acme/attack-conv-0000001', '{"mode": "replay", "fromSeq": 9}') ->> 'status', 'running',
          'a replay at that point, made after the source answered, derives the turn: nothing is left pending');
DO $$ BEGIN
  INSERT INTO f VALUES ('conv-branch', pg_temp.fork('acme/attack-conv-0000001', '{"mode": "branch", "fromSeq": 7}'));
END $$;
SELECT is(pg_temp.refusal(format($$ SELECT openwop.interrupt(%L, 'ask', '{"kind": "conversation.exchange", "data": {"conversationId": "attack-fork-conv", "prompt": "again?"}}', 1) $$,
                                 (SELECT run FROM f WHERE name = 'conv-branch'))) ->> 'code', 'not_found',
          'a branch takes no turn of its source''s conversation: 404, as for any run that did not open it');
SELECT is(pg_temp.refusal(format($$ SELECT openwop.interrupt(%L, 'ask', '{"kind": "conversation.start", "data": {"conversationId": "attack-fork-conv", "title": "T"}}', 1) $$,
                                 (SELECT run FROM f WHERE name = 'conv-branch'))) ->> 'code', 'run_state_conflict',
          '... nor opens the id again: 409');
SELECT is((SELECT run_id || ' ' || turn_count::text FROM openwop.conversations WHERE conversation_id = 'attack-fork-conv'),
          'acme/attack-conv-0000001 1', '... and the source''s conversation is as its own turns left it');

-- ==== quorum: votes are not carried, the fork counts afresh ====
DO $$ BEGIN
  PERFORM openwop.create_run('wf', '{"runId": "acme/attack-quorum-000001"}');
  PERFORM openwop.start_node('acme/attack-quorum-000001', 'gate');
  PERFORM openwop.interrupt('acme/attack-quorum-000001', 'gate',
    pg_temp.gate('{"requiredApprovals": 2, "approversList": ["alice", "bob", "carol"]}'));
  PERFORM openwop.start_node('acme/attack-quorum-000001', 'side');   -- 4
END $$;
SELECT is(pg_temp.as_request('{"sub": "alice", "tenant": "acme", "scope": "approvals:respond"}',
            $q$ SELECT openwop.resolve_interrupt('acme/attack-quorum-000001', 'gate', '{"action": "accept"}') $q$) ->> 'status',
          'pending', 'alice''s accept on the 2-of-3 source gate decides nothing');
DO $$ BEGIN
  INSERT INTO f VALUES ('quorum', pg_temp.fork('acme/attack-quorum-000001', '{"mode": "branch", "fromSeq": 4}'));
END $$;
SELECT is(pg_temp.as_request('{"sub": "bob", "tenant": "acme", "scope": "approvals:respond"}',
            format($q$ SELECT openwop.resolve_interrupt(%L, 'gate', '{"action": "accept"}') $q$, (SELECT run FROM f WHERE name = 'quorum'))) ->> 'status',
          'pending', 'fork_quorum_afresh: in the fork one more accept (bob''s) does not decide the 2-of-3 gate: alice''s source vote is not carried');
SELECT is(pg_temp.as_request('{"sub": "bob", "tenant": "acme", "scope": "approvals:respond"}',
            format($q$ SELECT openwop.resolve_interrupt(%L, 'gate', '{"action": "accept"}') $q$, (SELECT run FROM f WHERE name = 'quorum'))) ->> 'status',
          'pending', '... nor does bob voting again');
SELECT is((SELECT r ->> 'code' FROM (SELECT pg_temp.as_request('{"sub": "mallory", "tenant": "acme", "scope": "approvals:respond"}',
            format($q$ SELECT pg_temp.refusal(format('SELECT openwop.resolve_interrupt(%%L, ''gate'', ''{"action": "accept"}'')', %L)) $q$,
                   (SELECT run FROM f WHERE name = 'quorum'))) r) x), 'forbidden',
          '... nor can anyone off its approvers list');
SELECT is(pg_temp.as_request('{"sub": "carol", "tenant": "acme", "scope": "approvals:respond"}',
            format($q$ SELECT openwop.resolve_interrupt(%L, 'gate', '{"action": "accept"}') $q$, (SELECT run FROM f WHERE name = 'quorum'))) ->> 'decision',
          'granted', '... two eligible accepts of its own grant it');
SELECT is((SELECT status FROM openwop.interrupts WHERE run_id = 'acme/attack-quorum-000001' AND node_id = 'gate'), 'pending',
          '... and the source''s gate still counts alice''s vote alone');

-- ==== tokens: an interrupt id names one interrupt of one run ====
DO $$ BEGIN
  PERFORM openwop.add_signing_key('k-attack-fork', 'attack-fork-secret-0123456789'::bytea);
  PERFORM openwop.create_run('wf', '{"runId": "acme/attack-token-000001"}');
  PERFORM openwop.start_node('acme/attack-token-000001', 'gate');
  PERFORM openwop.interrupt('acme/attack-token-000001', 'gate', pg_temp.gate());
  PERFORM openwop.start_node('acme/attack-token-000001', 'side');   -- 4
END $$;
CREATE TEMP TABLE tok AS
  SELECT openwop.mint_interrupt_token((SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/attack-token-000001')) AS source_token;
DO $$ BEGIN
  INSERT INTO f VALUES ('token', pg_temp.fork('acme/attack-token-000001', '{"mode": "branch", "fromSeq": 4}'));
END $$;
ALTER TABLE tok ADD COLUMN fork_token text;
UPDATE tok SET fork_token = openwop.mint_interrupt_token((SELECT interrupt_id FROM openwop.interrupts WHERE run_id = (SELECT run FROM f WHERE name = 'token')));
SELECT is(openwop.resolve_interrupt_by_token((SELECT source_token FROM tok), '{"action": "accept"}') ->> 'runId',
          'acme/attack-token-000001', 'fork_token_source: a token minted for the source''s gate before the fork answers the source ...');
SELECT is((SELECT status FROM openwop.interrupts WHERE run_id = (SELECT run FROM f WHERE name = 'token')), 'pending',
          '... and leaves the fork''s gate pending');
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt_by_token((SELECT source_token FROM tok), '{"action": "reject"}') $$) ->> 'code',
          'interrupt_already_resolved', '... used again it is spent: it never reaches the fork');
SELECT is(openwop.resolve_interrupt_by_token((SELECT fork_token FROM tok), '{"action": "reject"}') ->> 'runId',
          (SELECT run FROM f WHERE name = 'token'), 'fork_token_fork: the fork''s token answers the fork alone');
SELECT is(openwop.run_snapshot('acme/attack-token-000001') ->> 'status', 'running', '... the source, granted, goes on');

-- ==== idempotency: a key used on the source does not answer for the fork ====
DO $$ BEGIN
  PERFORM openwop.create_run('wf', '{"runId": "acme/attack-idem-0000001"}');
  PERFORM openwop.start_node('acme/attack-idem-0000001', 'gate');
  PERFORM openwop.interrupt('acme/attack-idem-0000001', 'gate', pg_temp.gate());
  PERFORM openwop.start_node('acme/attack-idem-0000001', 'side');   -- 4
  INSERT INTO f VALUES ('idem', pg_temp.fork('acme/attack-idem-0000001', '{"mode": "branch", "fromSeq": 4}'));
  PERFORM openwop.resolve_interrupt('acme/attack-idem-0000001', 'gate', '{"action": "accept"}', 'attack-fork-idem-key-000001');
END $$;
SELECT is(pg_temp.refusal(format($$ SELECT openwop.resolve_interrupt(%L, 'gate', '{"action": "accept"}', 'attack-fork-idem-key-000001') $$,
                                 (SELECT run FROM f WHERE name = 'idem'))) ->> 'code', 'idempotency_key_mismatch',
          'fork_idempotency: the source''s Idempotency-Key on the fork is 409 idempotency_key_mismatch, never the source''s response');
SELECT is((SELECT status FROM openwop.interrupts WHERE run_id = (SELECT run FROM f WHERE name = 'idem')), 'pending',
          '... and decides nothing in the fork');

-- ==== fromSeq spellings ====
SELECT is(pg_temp.refusal(format('SELECT openwop.fork_run(%L, %L)', 'acme/attack-idem-0000001', o)) ->> 'code', code,
          format('fork_from_seq: %s is %s', o, code))
  FROM (VALUES ('{"mode": "replay", "fromSeq": null}', 'validation_error'),
               ('{"mode": "branch", "fromSeq": -9223372036854775808}', 'validation_error'),
               ('{"mode": "branch", "fromSeq": 9223372036854775807}', 'fork_point_invalid'),
               ('{"mode": "branch", "fromSeq": 9223372036854775808}', 'fork_point_invalid'),
               ('{"mode": "branch", "fromSeq": 1e30}', 'fork_point_invalid'),
               ('{"mode": "branch", "fromSeq": 1e400}', 'validation_error'),
               ('{"mode": "branch", "fromSeq": true}', 'validation_error'),
               ('{"mode": "branch", "fromSeq": [1]}', 'validation_error'),
               ('{"mode": "REPLAY"}', 'validation_error'),
               ('{"mode": "replay", "mode": "branch"}', 'validation_error')) v(o, code);
SELECT is((openwop.fork_run('acme/attack-idem-0000001', '{"mode": "branch", "fromSeq": 4.0}') ->> 'fromSeq'), '4',
          'fork_from_seq: 4.0 is the integer 4');

-- ==== code of another's: a SECURITY DEFINER function forks as nobody ====
CREATE FUNCTION pg_temp.definer_fork(r text) RETURNS jsonb LANGUAGE sql SECURITY DEFINER
  AS $$ SELECT openwop.fork_run(r, '{"mode": "replay"}') $$;
SELECT is(pg_temp.refusal($$ SELECT pg_temp.definer_fork('acme/attack-idem-0000001') $$) ->> 'code', 'forbidden',
          'fork_security_definer: fork_run() inside a SECURITY DEFINER function is 403 (its owner''s code names no caller)');

-- ==== resource burn: the overlay is bounded as every engine payload ====
SELECT is(pg_temp.refusal(format('SELECT openwop.fork_run(%L, %L)', 'acme/attack-idem-0000001',
            jsonb_build_object('mode', 'branch', 'fromSeq', 4, 'runOptionsOverlay',
                               jsonb_build_object('metadata', jsonb_build_object('x', repeat('a', 2000000)))))) -> 'details' ->> 'setting',
          'openwop.max_payload_size', 'fork_overlay_bounded: a 2 MB overlay is refused by openwop.max_payload_size before anything is read');

-- ==== another tenant: no oracle ====
SET LOCAL openwop.tenant = 'initech';
SELECT is(pg_temp.refusal($$ SELECT openwop.fork_run('acme/attack-idem-0000001', '{"mode": "replay"}') $$),
          pg_temp.refusal($$ SELECT openwop.fork_run('acme/attack-never-existed-01', '{"mode": "replay"}') $$) -
            'details' || jsonb_build_object('details', pg_temp.refusal($$ SELECT openwop.fork_run('acme/attack-idem-0000001', '{"mode": "replay"}') $$) -> 'details'),
          'fork_no_oracle: another tenant''s run and a run that never existed are refused alike (403 from the id)');
SELECT is(pg_temp.refusal($$ SELECT openwop.fork_run('acme/attack-idem-0000001', '{"mode": "replay", "fromSeq": 99}') $$) ->> 'code',
          'id_tenant_mismatch', '... whatever fromSeq, so the length of its log is not learnt either');
SELECT is(pg_temp.refusal($$ SELECT openwop.fork_run('acme/attack-idem-0000001', '{"mode": "bogus"}') $$) ->> 'code',
          'validation_error', '... (options are checked before the run is looked up: nothing is learnt)');
SET LOCAL openwop.tenant = 'acme';

SELECT * FROM finish();
ROLLBACK;
