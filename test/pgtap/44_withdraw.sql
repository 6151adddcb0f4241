-- Withdrawing a vote (README, "Withdrawing a vote"): the caller's counted
-- vote on a pending gate, as itself or for a delegator, taken back with a
-- new revision the tally does not count; a decided gate is 409; nothing to
-- withdraw is 404; the gate then needs its quorum again.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir refusal.psql
\ir callers.psql

CREATE FUNCTION pg_temp.jwt(who text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('sub', who, 'tenant', 'acme', 'scope', 'approvals:respond')
$$;
CREATE FUNCTION pg_temp.gate(run text, data jsonb, kind text DEFAULT 'approval') RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM openwop.create_run('withdraw', jsonb_build_object('runId', run));
  PERFORM openwop.start_node(run, 'gate');
  PERFORM openwop.interrupt(run, 'gate', CASE WHEN kind = 'approval'
    THEN jsonb_build_object('kind', 'approval', 'data', jsonb_build_object('artifactId', 'a', 'artifactType', 'doc', 'title', 'T',
           'actions', '["accept", "reject", "ask"]'::jsonb) || data)
    ELSE '{"kind": "clarification", "data": {"questions": [{"id": "q1", "question": "Which budget?"}]}}'::jsonb END);
END $$;
CREATE FUNCTION pg_temp.vote(run text, who text, action text DEFAULT 'accept') RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_request(pg_temp.jwt(who), format('SELECT openwop.resolve_interrupt(%L, %L, %L)', run, 'gate', jsonb_build_object('action', action)))
$$;
CREATE FUNCTION pg_temp.withdraw(run text, who text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_request(pg_temp.jwt(who), format('SELECT openwop.withdraw_vote(%L, %L)', run, 'gate'))
$$;
CREATE FUNCTION pg_temp.refused_withdraw(run text, who text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.refusal(format('SELECT pg_temp.withdraw(%L, %L)', run, who))
$$;
CREATE FUNCTION pg_temp.types(run text) RETURNS text LANGUAGE sql AS $$
  SELECT string_agg(e ->> 'type', ',' ORDER BY (e ->> 'sequence')::int) FROM openwop.events(run) e
$$;

DO $$ BEGIN PERFORM pg_temp.gate('acme/wd-quorum-00000001', '{"approversList": ["ann", "bea", "cid"], "requiredApprovals": 2}'); END $$;
DO $$ BEGIN PERFORM pg_temp.vote('acme/wd-quorum-00000001', 'ann'); END $$;
SELECT is(pg_temp.withdraw('acme/wd-quorum-00000001', 'ann') - 'interruptId',
          '{"runId": "acme/wd-quorum-00000001", "nodeId": "gate", "status": "pending", "action": "withdraw", "counted": false,
            "tally": {"voters": 0, "accepts": 0, "rejects": 0, "requiredApprovals": 2}}',
          'withdraw_vote: the counted vote is taken back, answered like a vote that decides nothing');
SELECT is((SELECT jsonb_agg(jsonb_build_array(v.voter, v.revision, v.action) ORDER BY v.revision) FROM openwop.votes v JOIN openwop.interrupts i USING (tenant, interrupt_id)
            WHERE i.run_id = 'acme/wd-quorum-00000001'),
          '[["ann", 1, "accept"], ["ann", 2, "withdraw"]]', 'withdraw_vote_is_a_revision: both stay in openwop.votes');
SELECT is(pg_temp.types('acme/wd-quorum-00000001'), 'run.started,node.started,interrupt.requested,node.suspended',
          '... and nothing is appended to the log');
SELECT is(pg_temp.refused_withdraw('acme/wd-quorum-00000001', 'ann') -> 'details' ->> 'principal', 'ann',
          'withdraw_vote_nothing_counted: withdrawing again is 404');
SELECT is(pg_temp.refused_withdraw('acme/wd-quorum-00000001', 'bea') ->> 'code', 'not_found', '... as is withdrawing without a vote');
DO $$ BEGIN PERFORM pg_temp.vote('acme/wd-quorum-00000001', 'bea', 'ask'); END $$;
SELECT is(pg_temp.refused_withdraw('acme/wd-quorum-00000001', 'bea') ->> 'code', 'not_found', '... or with an ask only');
SELECT is(pg_temp.vote('acme/wd-quorum-00000001', 'bea') ->> 'status', 'pending',
          'withdraw_vote_quorum_again: after the withdrawal, one accept does not decide a 2-of-3 gate');
SELECT is(pg_temp.vote('acme/wd-quorum-00000001', 'ann') ->> 'decision', 'granted', '... ann votes again: granted');
SELECT is(pg_temp.refused_withdraw('acme/wd-quorum-00000001', 'bea') ->> 'code', 'interrupt_already_resolved',
          'withdraw_vote_decided_gate: a decided gate is 409 interrupt_already_resolved');

-- a reject withdrawn on a majority gate; the inbox's tally
DO $$ BEGIN PERFORM pg_temp.gate('acme/wd-majority-000001', '{"approversList": ["ann", "bea", "cid"], "requiredApprovals": 3, "rejectionPolicy": "majority"}');
            PERFORM pg_temp.vote('acme/wd-majority-000001', 'ann', 'reject'); END $$;
SELECT is(pg_temp.withdraw('acme/wd-majority-000001', 'ann') -> 'tally', '{"voters": 0, "accepts": 0, "rejects": 0, "requiredApprovals": 3}',
          'a reject is withdrawn too');
SELECT is(pg_temp.as_request(pg_temp.jwt('bea'), $$ SELECT jsonb_build_object('voters', voters, 'rejects', rejects) FROM openwop.pending_interrupts WHERE run_id = 'acme/wd-majority-000001' $$),
          '{"voters": 0, "rejects": 0}', 'withdraw_vote_inbox: the inbox''s tally leaves the withdrawn vote out');
SELECT is(pg_temp.as_request(pg_temp.jwt('ann'), $$ SELECT to_jsonb(my_vote) FROM openwop.pending_interrupts WHERE run_id = 'acme/wd-majority-000001' $$),
          '"withdraw"', '... and shows ann her own latest answer');

-- a delegate withdraws the vote it cast for its delegator, not the delegator's own
DO $$ BEGIN PERFORM pg_temp.gate('acme/wd-delegate-000001', '{"approversList": ["fay"], "requiredApprovals": 2}');
            PERFORM pg_temp.as_request(pg_temp.jwt('fay'), $q$ SELECT openwop.delegate_approvals('dave', now() - interval '1 hour', now() + interval '1 day') $q$);
            PERFORM pg_temp.vote('acme/wd-delegate-000001', 'dave'); END $$;
SELECT is((pg_temp.withdraw('acme/wd-delegate-000001', 'dave') -> 'tally' ->> 'voters'), '0',
          'withdraw_vote_delegate: dave withdraws the vote he cast for fay');
DO $$ BEGIN PERFORM pg_temp.vote('acme/wd-delegate-000001', 'fay'); END $$;
SELECT is(pg_temp.refused_withdraw('acme/wd-delegate-000001', 'dave') ->> 'code', 'not_found',
          '... but not fay''s own vote, cast since');

-- the review's attacks (helper-18): who may not vote may not withdraw; a withdrawal is never capped
DO $$ BEGIN PERFORM pg_temp.gate('acme/wd-issuer-00000001', '{"approversList": ["https://idp.example.org/bea", "cid", "dan"], "requiredApprovals": 3, "rejectionPolicy": "majority"}');
            PERFORM pg_temp.as_request('{"iss": "https://idp.example.org", "sub": "bea", "tenant": "acme", "scope": "approvals:respond"}',
                      $q$ SELECT openwop.resolve_interrupt('acme/wd-issuer-00000001', 'gate', '{"action": "reject"}') $q$); END $$;
SELECT is(pg_temp.refusal($$ SELECT pg_temp.as_request('{"iss": "https://other.example.org", "sub": "bea", "tenant": "acme", "scope": "approvals:respond"}',
                               $q$ SELECT openwop.withdraw_vote('acme/wd-issuer-00000001', 'gate') $q$) $$) ->> 'code',
          'forbidden', 'withdraw_vote_needs_eligibility: a bea of another issuer, refused as a voter, cannot withdraw bea''s vote');
SELECT is(pg_temp.as_request('{"iss": "https://idp.example.org", "sub": "bea", "tenant": "acme", "scope": "approvals:respond"}',
            $$ SELECT openwop.withdraw_vote('acme/wd-issuer-00000001', 'gate') -> 'tally' -> 'rejects' $$),
          '0', '... bea herself can');
SET LOCAL openwop.max_votes_per_voter = 2;
DO $$ BEGIN PERFORM pg_temp.gate('acme/wd-cap-00000000001', '{"approversList": ["ann", "bea"], "requiredApprovals": 2}');
            PERFORM pg_temp.vote('acme/wd-cap-00000000001', 'ann'); PERFORM pg_temp.vote('acme/wd-cap-00000000001', 'ann'); END $$;
SELECT is(pg_temp.withdraw('acme/wd-cap-00000000001', 'ann') -> 'tally' ->> 'accepts', '0',
          'withdraw_vote_not_capped: a voter who used up its answers still takes its vote back');
SELECT is(pg_temp.refusal($$ SELECT pg_temp.vote('acme/wd-cap-00000000001', 'ann') $$) ->> 'code', 'validation_error',
          '... and votes no more');
RESET openwop.max_votes_per_voter;
DO $$ BEGIN PERFORM pg_temp.gate('acme/wd-revoked-0000001', '{"approversList": ["finn"], "requiredApprovals": 2}');
            PERFORM pg_temp.as_request(pg_temp.jwt('finn'), $q$ SELECT openwop.delegate_approvals('gus', now() - interval '1 hour', now() + interval '1 day') $q$);
            PERFORM pg_temp.vote('acme/wd-revoked-0000001', 'gus');
            PERFORM pg_temp.as_request(pg_temp.jwt('finn'), $q$ SELECT openwop.revoke_delegation((SELECT delegation_id FROM openwop.approval_delegations WHERE delegate = 'gus')) $q$); END $$;
SELECT is(pg_temp.refused_withdraw('acme/wd-revoked-0000001', 'gus') ->> 'code', 'forbidden',
          'withdraw_vote_delegation_ended: a delegate whose delegation ended takes nothing back (as a token minted for it resolves nothing)');

-- other kinds, bad input, no scope
DO $$ BEGIN PERFORM pg_temp.gate('acme/wd-clarify-0000001', '{}', 'clarification'); END $$;
SELECT is(pg_temp.refused_withdraw('acme/wd-clarify-0000001', 'ann') ->> 'code', 'run_state_conflict',
          'withdraw_vote_approval_only: a clarification has no votes (409)');
SELECT is(pg_temp.refused_withdraw('acme/wd-nowhere-0000001', 'ann') ->> 'code', 'not_found', 'an unknown run is 404');
SELECT is(pg_temp.refusal($$ SELECT openwop.withdraw_vote(NULL, 'gate') $$) -> 'details' ->> 'field', 'runId', 'a null run is 400');
SELECT is(pg_temp.refusal($$ SELECT openwop.withdraw_vote('acme/wd-quorum-00000001', NULL) $$) -> 'details' ->> 'field', 'nodeId', 'a null node is 400');
SELECT is(pg_temp.refusal($$ SELECT pg_temp.as_request('{"sub": "ann", "tenant": "acme"}', $q$ SELECT openwop.withdraw_vote('acme/wd-majority-000001', 'gate') $q$) $$) ->> 'code',
          'forbidden', 'withdraw_vote needs approvals:respond');

SELECT * FROM finish();
ROLLBACK;
