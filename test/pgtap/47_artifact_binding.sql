-- Approvals bound to what was approved (README, "Approvals bound to the
-- artifact"): the engine tells a pending gate which version of its artifact
-- it shows; each counted vote records the digest current when it was cast;
-- a new digest voids every counted vote bound to another (the gate needs its
-- quorum again), the same digest changes nothing; a voter who says which
-- digest it looked at is refused 412 on any other; the decision records the
-- digest and every vote voided under the vendor hatch.
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
  PERFORM openwop.create_run('artifact', jsonb_build_object('runId', run));
  PERFORM openwop.start_node(run, 'gate');
  PERFORM openwop.interrupt(run, 'gate', CASE WHEN kind = 'approval'
    THEN jsonb_build_object('kind', 'approval', 'data', jsonb_build_object('artifactId', 'a', 'artifactType', 'doc', 'title', 'T',
           'actions', '["accept", "reject", "ask"]'::jsonb) || data)
    ELSE '{"kind": "clarification", "data": {"questions": [{"id": "q1", "question": "Which budget?"}]}}'::jsonb END);
END $$;
-- a vote as who, having looked at digest seen (NULL: says nothing of it)
CREATE FUNCTION pg_temp.vote(run text, who text, seen text DEFAULT NULL, action text DEFAULT 'accept') RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE r jsonb;
BEGIN
  PERFORM set_config('openwop.artifact_digest', coalesce(seen, ''), true);
  r := pg_temp.as_request(pg_temp.jwt(who), format('SELECT openwop.resolve_interrupt(%L, %L, %L)', run, 'gate', jsonb_build_object('action', action)));
  PERFORM set_config('openwop.artifact_digest', '', true);
  RETURN r;
END $$;
CREATE FUNCTION pg_temp.refused_vote(run text, who text, seen text DEFAULT NULL) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE r jsonb;
BEGIN
  r := pg_temp.refusal(format('SELECT pg_temp.vote(%L, %L, %L)', run, who, seen));
  PERFORM set_config('openwop.artifact_digest', '', true);
  RETURN r;
END $$;
CREATE FUNCTION pg_temp.changed(run text, digest text, reason text DEFAULT 'edited') RETURNS jsonb LANGUAGE sql AS $$
  SELECT openwop.artifact_changed(run, 'gate', digest, reason) - 'interruptId'
$$;
CREATE FUNCTION pg_temp.votes(run text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_agg(jsonb_build_array(v.voter, v.revision, v.action, v.artifact_digest) ORDER BY v.voter, v.revision)
    FROM openwop.votes v JOIN openwop.interrupts i USING (tenant, interrupt_id) WHERE i.run_id = run
$$;

DO $$ BEGIN PERFORM pg_temp.gate('acme/art-quorum-00000001', '{"approversList": ["ann", "bea", "cid"], "requiredApprovals": 2}'); END $$;
SELECT is(pg_temp.changed('acme/art-quorum-00000001', 'sha256:v1', 'first shown'),
          '{"runId": "acme/art-quorum-00000001", "digest": "sha256:v1", "nodeId": "gate", "voided": [], "changed": true, "previousDigest": null}',
          'artifact_changed_first: the engine tells the gate its first digest');
SELECT is(pg_temp.changed('acme/art-quorum-00000001', 'sha256:v1') ->> 'changed', 'false', 'artifact_changed_same_digest: the same digest again changes nothing');
SELECT is((SELECT count(*) FROM openwop.artifact_changes WHERE run_id = 'acme/art-quorum-00000001'), 1::bigint, '... and records nothing');
SELECT is(pg_temp.vote('acme/art-quorum-00000001', 'ann') -> 'tally' ->> 'accepts', '1', 'a vote on v1');
SELECT is(pg_temp.votes('acme/art-quorum-00000001'), '[["ann", 1, "accept", "sha256:v1"]]', 'vote_records_digest: the vote records the digest current when it was cast');
SELECT is(pg_temp.changed('acme/art-quorum-00000001', 'sha256:v2', 'fixed a typo') - 'runId' - 'nodeId',
          '{"digest": "sha256:v2", "voided": [{"voter": "ann", "digest": "sha256:v1", "action": "accept"}], "changed": true, "previousDigest": "sha256:v1"}',
          'artifact_changed_voids: a new digest voids every counted vote bound to another');
SELECT is(pg_temp.votes('acme/art-quorum-00000001'), '[["ann", 1, "accept", "sha256:v1"], ["ann", 2, "void", "sha256:v2"]]',
          'void_is_a_revision: the void is a new revision of the voter''s, and both stay');
SELECT is((SELECT v.resume_value - 'decidedAt' FROM openwop.votes v JOIN openwop.interrupts i USING (tenant, interrupt_id)
            WHERE i.run_id = 'acme/art-quorum-00000001' AND v.action = 'void'),
          '{"action": "void", "digest": "sha256:v2", "reason": "fixed a typo", "voided": "accept", "votedDigest": "sha256:v1"}',
          'void_records_why: the void names the digest, the one voted on, and the reason');
SELECT is(pg_temp.as_request(pg_temp.jwt('ann'), $q$ SELECT jsonb_build_object('voters', voters, 'accepts', accepts, 'my_vote', my_vote) FROM openwop.pending_interrupts WHERE run_id = 'acme/art-quorum-00000001' $q$),
          '{"voters": 0, "accepts": 0, "my_vote": "void"}', 'void_not_counted: the inbox counts the voided vote no more, and shows ann it was voided');
SELECT is(pg_temp.vote('acme/art-quorum-00000001', 'bea') ->> 'status', 'pending', 'quorum_again: after the change, one accept does not decide a 2-of-3 gate');
SELECT is(pg_temp.as_request(pg_temp.jwt('ann'), $q$ SELECT pg_temp.refusal($r$ SELECT openwop.withdraw_vote('acme/art-quorum-00000001', 'gate') $r$) $q$) ->> 'code',
          'not_found', 'withdraw_voided: a voided vote is not one to withdraw (404)');

-- "approved what I saw"
SELECT is(pg_temp.refused_vote('acme/art-quorum-00000001', 'cid', 'sha256:v1') - 'details',
          '{"sqlstate": "PT412", "code": "precondition_failed"}', 'stale_digest_412: a voter who looked at v1 is refused once the gate shows v2');
SELECT is(pg_temp.refused_vote('acme/art-quorum-00000001', 'cid', 'sha256:v1') -> 'details',
          jsonb_build_object('interruptId', (SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/art-quorum-00000001'),
                             'artifactDigest', 'sha256:v2', 'seen', 'sha256:v1'),
          '... naming both digests');
SELECT is(pg_temp.votes('acme/art-quorum-00000001') -> -1 ->> 0, 'bea', '... and records nothing');
SELECT is(pg_temp.refused_vote('acme/art-quorum-00000001', 'cid', 'W/"sha256:v0", "sha256:v1"') ->> 'code', 'precondition_failed',
          'if_match_list: an If-Match list none of whose tags is the gate''s is 412');
SELECT is(pg_temp.vote('acme/art-quorum-00000001', 'cid', '"sha256:v0", W/"sha256:v2"') #>> '{receipt,artifactDigest}', 'sha256:v2',
          'if_match_any: one tag of the list naming the gate''s digest holds; the receipt names the digest');

-- the decision's record
SELECT is((SELECT payload -> 'openwop-artifact' FROM openwop.events WHERE run_id = 'acme/art-quorum-00000001' AND type = 'interrupt.resolved') #- '{voided,0,reason}',
          '{"digest": "sha256:v2", "voided": [{"voter": "ann", "action": "accept", "change": 2, "digest": "sha256:v1"}], "changes": 2}',
          'decision_records_voids: interrupt.resolved records the digest and every vote voided, under the vendor hatch');
SELECT is((SELECT payload #>> '{openwop-artifact,voided,0,reason}' FROM openwop.events WHERE run_id = 'acme/art-quorum-00000001' AND type = 'interrupt.resolved'),
          'fixed a typo', '... with why');
SELECT is((SELECT payload -> 'openwop-artifact' FROM openwop.events WHERE run_id = 'acme/art-quorum-00000001' AND type = 'interrupt.requested'),
          NULL, 'nothing in the closed payloads: interrupt.requested carries the request verbatim');

-- a vote cast before the first digest is bound to none: the first digest voids it
DO $$ BEGIN PERFORM pg_temp.gate('acme/art-late-000000001', '{"approversList": ["ann", "bea"], "requiredApprovals": 2}'); END $$;
SELECT is(pg_temp.vote('acme/art-late-000000001', 'ann') ->> 'status', 'pending', 'a vote before any digest');
SELECT is(pg_temp.changed('acme/art-late-000000001', 'sha256:first') -> 'voided', '[{"voter": "ann", "digest": null, "action": "accept"}]',
          'first_digest_voids_unbound: the first digest voids a vote cast before the engine told one');
SELECT is(pg_temp.refused_vote('acme/art-late-000000001', 'bea', 'sha256:none') ->> 'code', 'precondition_failed', '... and a stale digest is 412');

-- a gate the engine never told: a voter who names a digest is refused (it cannot be checked); "*" holds
DO $$ BEGIN PERFORM pg_temp.gate('acme/art-untold-00000001', '{}'); END $$;
SELECT is(pg_temp.refused_vote('acme/art-untold-00000001', 'ann', 'sha256:x') -> 'details' ->> 'artifactDigest', NULL,
          'untold_gate_412: a digest named on a gate never told one is 412');
SELECT is(pg_temp.vote('acme/art-untold-00000001', 'ann', '*') ->> 'decision', 'granted', 'if_match_star: "*" holds whatever the gate shows');

-- a void gives the voter its answers back (the review's attack: a cap of 1 locked the voter out)
SET LOCAL openwop.max_votes_per_voter = 1;
DO $$ BEGIN PERFORM pg_temp.gate('acme/art-cap-0000000001', '{"approversList": ["ann", "bea"], "requiredApprovals": 2}');
            PERFORM pg_temp.vote('acme/art-cap-0000000001', 'ann');
            PERFORM pg_temp.changed('acme/art-cap-0000000001', 'sha256:c2'); END $$;
SELECT is(pg_temp.vote('acme/art-cap-0000000001', 'ann') -> 'tally' ->> 'accepts', '1',
          'void_not_capped: under a cap of 1, a voter whose vote was voided votes again: neither the void nor the voided vote counts');
SELECT is(pg_temp.refused_vote('acme/art-cap-0000000001', 'ann') ->> 'code', 'validation_error', '... the answers since the void do');
DO $$ BEGIN PERFORM pg_temp.changed('acme/art-cap-0000000001', 'sha256:c3'); END $$;
SELECT is(pg_temp.as_request(pg_temp.jwt('ann'), $q$ SELECT to_jsonb(openwop.may_decide('acme', interrupt_id, kind, payload, policy)) FROM openwop.open_interrupts WHERE run_id = 'acme/art-cap-0000000001' $q$),
          'true', '... and the inbox offers the gate again after the next change');
RESET openwop.max_votes_per_voter;

-- a delegate's vote is voided as the delegator's, and stays the delegate's to cast again
DO $$ BEGIN PERFORM pg_temp.gate('acme/art-delegate-000001', '{"approversList": ["fay", "gil"], "requiredApprovals": 2}');
            PERFORM pg_temp.as_request(pg_temp.jwt('fay'), $q$ SELECT openwop.delegate_approvals('dave', now() - interval '1 hour', now() + interval '1 day') $q$);
            PERFORM pg_temp.vote('acme/art-delegate-000001', 'dave'); END $$;
SELECT is(pg_temp.changed('acme/art-delegate-000001', 'sha256:d2') -> 'voided' -> 0 ->> 'voter', 'fay', 'void_delegated: the vote dave cast for fay is voided');
SELECT is(pg_temp.vote('acme/art-delegate-000001', 'dave') -> 'tally' ->> 'accepts', '1', '... and dave casts it again');

-- refusals
SELECT is(pg_temp.refusal($q$ SELECT openwop.artifact_changed('acme/art-quorum-00000001', 'gate', 'sha256:v3') $q$) ->> 'code', 'interrupt_already_resolved',
          'artifact_changed_decided: a decided gate is 409');
DO $$ BEGIN PERFORM pg_temp.gate('acme/art-clarify-0000001', '{}', 'clarification'); END $$;
SELECT is(pg_temp.refusal($q$ SELECT openwop.artifact_changed('acme/art-clarify-0000001', 'gate', 'sha256:x') $q$) ->> 'code', 'run_state_conflict',
          'artifact_changed_other_kind: a node waiting on another kind is 409 run_state_conflict');
SELECT is(pg_temp.refusal($q$ SELECT openwop.artifact_changed('acme/art-quorum-00000001', 'nosuchnode', 'sha256:x') $q$) ->> 'code', 'not_found',
          'artifact_changed_unknown_node: 404');
SELECT is(pg_temp.refusal($q$ SELECT openwop.artifact_changed('acme/art-none-0000000001', 'gate', 'sha256:x') $q$) ->> 'code', 'not_found',
          'artifact_changed_unknown_run: 404');
SELECT is(pg_temp.refusal($q$ SELECT openwop.artifact_changed('zeta/art-none-0000000001', 'gate', 'sha256:x') $q$) ->> 'code', 'id_tenant_mismatch',
          'artifact_changed_other_tenant: 403');
SELECT is(pg_temp.refusal($q$ SELECT openwop.artifact_changed('acme/art-cap-0000000001', 'gate', NULL) $q$) -> 'details' ->> 'field', 'artifactDigest',
          'artifact_changed_null_digest: 400');
SELECT is(pg_temp.refusal($q$ SELECT openwop.artifact_changed('acme/art-cap-0000000001', 'gate', 'has space') $q$) -> 'details' ->> 'field', 'artifactDigest',
          'artifact_changed_bad_digest: a digest outside its grammar is 400');
SELECT is(pg_temp.refusal(format($q$ SELECT openwop.artifact_changed('acme/art-cap-0000000001', 'gate', %L) $q$, repeat('a', 257))) -> 'details' ->> 'field', 'artifactDigest',
          'artifact_changed_long_digest: a digest over 256 characters is 400');
SELECT is(pg_temp.refusal(format($q$ SELECT openwop.artifact_changed('acme/art-cap-0000000001', 'gate', 'sha256:c4', %L) $q$, repeat('r', 4097))) -> 'details' ->> 'field', 'reason',
          'artifact_changed_long_reason: a reason over 4096 bytes is 400');
SELECT is(pg_temp.refusal($q$ SELECT openwop.artifact_changed(NULL, 'gate', 'sha256:x') $q$) -> 'details' ->> 'field', 'runId', 'artifact_changed_null_run: 400');
SELECT is(pg_temp.refusal($q$ SELECT openwop.artifact_changed('acme/art-cap-0000000001', NULL, 'sha256:x') $q$) -> 'details' ->> 'field', 'nodeId', 'artifact_changed_null_node: 400');
SELECT is(has_function_privilege('public', 'openwop.artifact_changed(text, text, text, text)', 'EXECUTE'), false,
          'artifact_changed_not_public: the engine''s call, granted by the DBA');
SELECT is(pg_temp.refusal($q$ UPDATE openwop.artifact_changes SET reason = 'rewritten' $q$) ->> 'sqlstate', '42501',
          'artifact_changes_append_only: the record of changes refuses UPDATE, even for the owner');
SELECT is(pg_temp.refusal($q$ DELETE FROM openwop.artifact_changes $q$) ->> 'sqlstate', '42501', '... and DELETE');
SELECT is(pg_temp.refusal($q$ TRUNCATE openwop.artifact_changes $q$) ->> 'sqlstate', '42501', '... and TRUNCATE');

SELECT * FROM finish();
ROLLBACK;
