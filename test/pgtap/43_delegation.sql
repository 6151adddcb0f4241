-- Delegation of approval (README, "Approval policies (for DBAs)"): between
-- its start and end, unless revoked, a delegate votes on the gates its
-- delegator is eligible for, once, as the delegator, recorded on behalf of;
-- never cascading, never on the delegate's own request; if the delegator
-- votes too, one vote counts; tokens minted for a delegate stop resolving
-- when the delegation ends or is revoked.  Every bad input refused with
-- nothing stored.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir refusal.psql
\ir callers.psql

\ir policy_admin.psql
CREATE ROLE tap_del_dba LOGIN;
GRANT openwop_policy_admin TO tap_del_dba;
CREATE FUNCTION pg_temp.jwt(who text, tenant text DEFAULT 'acme') RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('sub', who, 'tenant', tenant, 'scope', 'approvals:respond')
$$;
-- a statement as JWT subject who, run once: its answer, or its refusal
CREATE FUNCTION pg_temp.as_(who text, sql text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE st text; msg text; det text;
BEGIN
  RETURN pg_temp.as_request(pg_temp.jwt(who), sql);
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL;
  RETURN jsonb_build_object('sqlstate', st, 'code', split_part(msg, ':', 1), 'details', CASE WHEN det LIKE '{%' THEN det::jsonb END);
END $$;
CREATE FUNCTION pg_temp.delegate(who text, delegate text, starts interval DEFAULT '-1 hour', ends interval DEFAULT '1 day')
    RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_request(pg_temp.jwt(who),
           format('SELECT openwop.delegate_approvals(%L, now() + %L::interval, now() + %L::interval)', delegate, starts, ends))
$$;
CREATE FUNCTION pg_temp.gate(run text, data jsonb, requester text DEFAULT NULL, wf text DEFAULT 'deleg') RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM openwop.create_run(wf, jsonb_build_object('runId', run), requester);
  PERFORM openwop.start_node(run, 'gate');
  PERFORM openwop.interrupt(run, 'gate', jsonb_build_object('kind', 'approval', 'data',
           jsonb_build_object('artifactId', 'a', 'artifactType', 'doc', 'title', 'T',
                              'actions', '["accept", "reject", "ask"]'::jsonb) || data));
END $$;
CREATE FUNCTION pg_temp.vote(run text, who text, action text DEFAULT 'accept') RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_request(pg_temp.jwt(who),
           format('SELECT openwop.resolve_interrupt(%L, %L, %L)', run, 'gate', jsonb_build_object('action', action)))
$$;
CREATE FUNCTION pg_temp.refused_vote(run text, who text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.refusal(format('SELECT pg_temp.vote(%L, %L)', run, who))
$$;
CREATE FUNCTION pg_temp.resolved(run text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT e -> 'payload' FROM openwop.events(run, -1, 10000) e WHERE e ->> 'type' = 'interrupt.resolved'
$$;
DO $$ BEGIN
  PERFORM openwop.add_group_member('finance', 'fay');
  PERFORM openwop.add_group_member('finance', 'finn');
  PERFORM openwop.add_signing_key('k-delegation', 'example-secret-do-not-use'::bytea);
END $$;

/* ------------------------------------------------------------------
 * Setting and revoking
 * ------------------------------------------------------------------ */

SELECT is(pg_temp.delegate('fay', 'dave') - 'delegationId' - 'startsAt' - 'endsAt',
          '{"delegator": "fay", "delegate": "dave", "tenant": "acme"}',
          'delegate_approvals: the caller delegates its own eligibility: {delegationId, delegator, delegate, startsAt, endsAt}');
SELECT is(pg_temp.delegate('fay', 'dave') ->> 'delegationId' LIKE 'acme/%', true, '... the id is tenant-bound');
SELECT is(pg_temp.as_('fay', $$ SELECT openwop.delegate_approvals('fay', now(), now() + interval '1 day') $$) -> 'details' ->> 'field',
          'delegate', 'delegation_bad_input: delegating to oneself');
SELECT is(pg_temp.as_('fay', $$ SELECT openwop.delegate_approvals('urn:openwop-interrupt:jwt/fay', now(), now() + interval '1 day') $$) -> 'details' ->> 'field',
          'delegate', '... to oneself, issuer-qualified');
SELECT is(pg_temp.as_('fay', $$ SELECT openwop.delegate_approvals('dave', now(), now()) $$) -> 'details' ->> 'field',
          'endsAt', 'delegation_bad_input: ends_at <= starts_at');
SELECT is(pg_temp.as_('fay', $$ SELECT openwop.delegate_approvals('dave', now() - interval '2 days', now() - interval '1 day') $$) -> 'details' ->> 'field',
          'endsAt', '... a window already over');
SELECT is(pg_temp.as_('fay', $$ SELECT openwop.delegate_approvals('dave', NULL, now()) $$) -> 'details' ->> 'field',
          'startsAt', '... a missing start');
SELECT is(pg_temp.as_('fay', $$ SELECT openwop.delegate_approvals('two words', now(), now() + interval '1 day') $$) -> 'details' ->> 'field',
          'delegate', '... a delegate that is not a subject');
SELECT is(pg_temp.as_('fay', $$ SELECT openwop.delegate_approvals('dave', now(), now() + interval '1 day', 'globex') $$) ->> 'code',
          'id_tenant_mismatch', 'delegation_bad_input: a tenant the caller is not bound to');
SELECT is(pg_temp.refusal($$ SELECT pg_temp.as_request('{"sub": "fay", "tenant": "acme"}', $q$ SELECT openwop.delegate_approvals('dave', now(), now() + interval '1 day') $q$) $$) ->> 'code',
          'forbidden', 'delegate_approvals needs approvals:respond');
SELECT is((SELECT count(*) FROM openwop.approval_delegations), 2::bigint, 'nothing refused was stored');
SELECT is(pg_temp.as_login('tap_del_dba', 'acme', $$ SELECT openwop.set_delegation('finn', 'dave', now(), now() + interval '1 hour') - 'delegationId' - 'startsAt' - 'endsAt' $$),
          '{"delegator": "finn", "delegate": "dave", "tenant": "acme"}', 'set_delegation: a policy admin delegates for someone else');
SELECT is(pg_temp.refusal($$ SELECT openwop.set_delegation('finn', 'dave', now(), now() + interval '1 hour') $$) ->> 'code',
          'forbidden', '... nobody else (a superuser needs the role too)');
SELECT is(pg_temp.as_login('tap_del_dba', 'acme', $$ SELECT openwop.set_delegation('finn', 'dave', now(), now() + interval '1 hour', 'globex') $$) ->> 'code',
          'id_tenant_mismatch', '... in its own tenant');
DO $$ BEGIN DELETE FROM openwop.approval_delegations; END $$;

/* ------------------------------------------------------------------
 * Voting on behalf of
 * ------------------------------------------------------------------ */

DO $$ BEGIN PERFORM pg_temp.gate('acme/del-quorum-0000001', '{"approverGroupRefs": ["finance"], "requiredApprovals": 2}'); END $$;
SELECT is(pg_temp.refused_vote('acme/del-quorum-0000001', 'dave') ->> 'code', 'forbidden', 'control: dave is no approver of the gate');
CREATE TEMP TABLE d1 AS SELECT pg_temp.delegate('fay', 'dave') ->> 'delegationId' AS id;
SELECT is(pg_temp.vote('acme/del-quorum-0000001', 'dave') -> 'tally' ->> 'voters', '1',
          'delegation_vote_counts: while fay is away, dave votes on the gate fay may decide');
SELECT is((SELECT jsonb_build_array(voter, eligibility ->> 'onBehalfOf', eligibility ->> 'delegationId' = (SELECT id FROM d1),
                                    eligibility ->> 'principal', voter_subject ->> 'subjectId')
             FROM openwop.votes v JOIN openwop.interrupts i USING (tenant, interrupt_id) WHERE i.run_id = 'acme/del-quorum-0000001'),
          '["fay", "fay", true, "dave", "dave"]',
          'delegation_recorded_on_behalf: the vote counts as fay''s, recorded with both: dave on behalf of fay');
SELECT is(pg_temp.vote('acme/del-quorum-0000001', 'fay') -> 'tally' ->> 'voters', '1',
          'delegation_one_vote: fay votes too: one vote counts (a re-vote of fay''s)');
SELECT is(pg_temp.vote('acme/del-quorum-0000001', 'dave') -> 'tally' ->> 'accepts', '1', '... and dave again: still one');
SELECT is(pg_temp.vote('acme/del-quorum-0000001', 'finn') ->> 'decision', 'granted', 'finn''s is the second: granted');
SELECT is(pg_temp.resolved('acme/del-quorum-0000001') -> 'openwop-eligibility' ->> 'principal', 'finn', '... by finn');

-- a one-vote gate: the on-behalf record is on interrupt.resolved
DO $$ BEGIN PERFORM pg_temp.gate('acme/del-onevote-000001', '{"approversList": ["fay"]}'); END $$;
SELECT is(pg_temp.vote('acme/del-onevote-000001', 'dave') ->> 'decision', 'granted', 'a delegate decides a one-vote gate');
SELECT is((pg_temp.resolved('acme/del-onevote-000001') -> 'openwop-eligibility') - 'subject' - 'delegationId',
          '{"principal": "dave", "onBehalfOf": "fay", "matched": ["approversList"], "groups": [], "roles": [], "override": false}',
          'delegation_recorded_on_resolved: interrupt.resolved records dave on behalf of fay');
SELECT is(pg_temp.resolved('acme/del-onevote-000001') -> 'resolvedBy' ->> 'subjectId', 'dave', '... resolvedBy is who decided');

-- never cascading
DO $$ BEGIN PERFORM pg_temp.gate('acme/del-cascade-000001', '{"approversList": ["fay"]}');
            PERFORM pg_temp.delegate('dave', 'erin'); END $$;
SELECT is(pg_temp.refused_vote('acme/del-cascade-000001', 'erin') ->> 'code', 'forbidden',
          'delegation_never_cascades: dave''s delegate gets nothing of fay''s delegation to dave');

-- never on the delegate's own request
DO $$ BEGIN PERFORM pg_temp.gate('acme/del-ownreq-000001', '{"approversList": ["fay"]}', 'dave'); END $$;
SELECT is(pg_temp.as_login('tap_del_dba', 'acme', $$ SELECT openwop.set_approval_policy('deleg', '{"appliesTo": {"workflowId": "deleg-sod", "nodeId": "*"}}') ->> 'version' $$),
          '1', 'a policy that excludes the requester');
DO $$ BEGIN PERFORM pg_temp.gate('acme/del-ownreq-000002', '{"approversList": ["fay"]}', 'dave', 'deleg-sod'); END $$;
SELECT is(pg_temp.refused_vote('acme/del-ownreq-000002', 'dave') -> 'details' ->> 'reason', 'requester',
          'delegation_not_own_request: dave may not vote for fay on the gate of a run dave requested');

-- the review's attacks (helper-16)
CREATE ROLE tap_del_eng LOGIN;
GRANT USAGE ON SCHEMA openwop TO tap_del_eng;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop TO tap_del_eng;
GRANT openwop_approver TO tap_del_eng;
DO $$ BEGIN PERFORM openwop.add_group_member('finance', 'tap_del_eng'); END $$;
SELECT is(pg_temp.as_login('tap_del_eng', 'acme', $$ SELECT jsonb_build_array(
            openwop.create_run('deleg-sod', '{"runId": "acme/del-owner-00000001"}') ->> 'status',
            openwop.start_node('acme/del-owner-00000001', 'gate') ->> 'status',
            openwop.interrupt('acme/del-owner-00000001', 'gate', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc",
              "title": "T", "actions": ["accept"], "approverGroupRefs": ["finance"]}}') ->> 'status',
            openwop.delegate_approvals('puppet', now() - interval '1 hour', now() + interval '1 day') ->> 'delegator') $$),
          '["running", "running", "interrupted", "tap_del_eng"]', 'a login starts a run, raises its gate and delegates to puppet');
SELECT is(pg_temp.refused_vote('acme/del-owner-00000001', 'puppet') ->> 'code', 'forbidden',
          'delegation_excluded_owner: the run''s owner cannot vote on its gate through a delegate');
DO $$ BEGIN PERFORM pg_temp.gate('acme/del-requester-0001', '{"approverGroupRefs": ["finance"]}', 'https://idp.example/finn', 'deleg-sod');
            PERFORM pg_temp.delegate('finn', 'grace'); END $$;
SELECT is(pg_temp.refused_vote('acme/del-requester-0001', 'grace') ->> 'code', 'forbidden',
          'delegation_excluded_requester: nor its requester, named with an issuer, through a delegate');
SELECT is(pg_temp.as_request(pg_temp.jwt('grace'), $$ SELECT count(*) FROM openwop.pending_interrupts WHERE run_id = 'acme/del-requester-0001' $$),
          '0', '... nor does the delegate find that gate in its inbox');

-- one person, one vote: a delegate that revokes and votes for another delegator, or votes as itself and for a delegator
DO $$ BEGIN PERFORM pg_temp.gate('acme/del-twice-00000001', '{"approverGroupRefs": ["finance"], "requiredApprovals": 2}');
            PERFORM pg_temp.delegate('fay', 'kim'); PERFORM pg_temp.delegate('finn', 'kim'); END $$;
SELECT is(pg_temp.vote('acme/del-twice-00000001', 'kim') -> 'tally' ->> 'voters', '1', 'kim votes, as fay (the first delegator by name)');
SELECT is(pg_temp.as_('kim', format('SELECT openwop.revoke_delegation(%L)',
            (SELECT delegation_id FROM openwop.approval_delegations WHERE delegator = 'fay' AND delegate = 'kim'))) ->> 'changed', 'true',
          'kim gives fay''s delegation up');
SELECT is(pg_temp.refused_vote('acme/del-twice-00000001', 'kim') - 'message',
          '{"sqlstate": "PT403", "code": "forbidden", "details": {"principal": "kim", "votedAs": "fay"}}',
          'delegation_one_person_one_vote: kim cannot vote again as finn: one person, one vote');
CREATE ROLE tap_del_gate_role;
CREATE ROLE lee LOGIN;
GRANT tap_del_gate_role, openwop_approver TO lee;
GRANT USAGE ON SCHEMA openwop TO lee;
GRANT EXECUTE ON FUNCTION openwop.resolve_interrupt(text, text, jsonb, text) TO lee;
DO $$ BEGIN PERFORM pg_temp.gate('acme/del-twopaths-000001', '{"approverRoleRefs": ["tap_del_gate_role"], "approversList": ["fay"], "requiredApprovals": 2}');
            PERFORM pg_temp.delegate('fay', 'lee'); END $$;
SELECT is(pg_temp.as_login('lee', 'acme', $$ SELECT openwop.resolve_interrupt('acme/del-twopaths-000001', 'gate', '{"action": "accept"}') -> 'tally' -> 'voters' $$),
          '1', 'lee votes as itself (its login holds the role ref)');
SELECT is(pg_temp.refused_vote('acme/del-twopaths-000001', 'lee') -> 'details',
          '{"principal": "lee", "votedAs": "lee"}', '... and cannot vote again for fay as a JWT subject');

-- a re-vote goes to the delegator voted for, whoever delegated since
DO $$ BEGIN PERFORM pg_temp.gate('acme/del-revote-0000001', '{"approversList": ["fay", "aaa"], "requiredApprovals": 2}');
            PERFORM pg_temp.delegate('fay', 'nia'); PERFORM pg_temp.vote('acme/del-revote-0000001', 'nia');
            PERFORM pg_temp.delegate('aaa', 'nia'); END $$;
SELECT is(pg_temp.vote('acme/del-revote-0000001', 'nia', 'reject') ->> 'decision', 'rejected',
          'delegation_revote_same_delegator: nia''s re-vote is fay''s again, though aaa (first by name) delegated to her since');
SELECT is((SELECT jsonb_agg(jsonb_build_array(voter, revision) ORDER BY voter, revision) FROM openwop.votes v JOIN openwop.interrupts i USING (tenant, interrupt_id)
            WHERE i.run_id = 'acme/del-revote-0000001'),
          '[["fay", 1], ["fay", 2]]', '... two revisions of fay''s vote, none of aaa''s');

-- an override principal's power is not delegated; a delegate's answers are its own
DO $$ BEGIN PERFORM openwop.add_group_member('openwop-override', 'oscar');
            PERFORM pg_temp.gate('acme/del-override-00001', '{"approversList": ["oscar"], "requiredApprovals": 3, "overrideBypassesQuorum": true}');
            PERFORM pg_temp.delegate('oscar', 'otto'); END $$;
SELECT is(pg_temp.vote('acme/del-override-00001', 'otto') ->> 'status', 'pending',
          'delegation_not_override: oscar''s delegate votes, but does not release the gate alone');
SET LOCAL openwop.max_votes_per_voter = 2;
DO $$ BEGIN PERFORM pg_temp.gate('acme/del-answers-000001', '{"approversList": ["fay"], "requiredApprovals": 2}');
            PERFORM pg_temp.vote('acme/del-answers-000001', 'dave', 'ask');
            PERFORM pg_temp.vote('acme/del-answers-000001', 'dave', 'ask'); END $$;
SELECT is(pg_temp.vote('acme/del-answers-000001', 'fay') ->> 'counted', 'true',
          'delegation_answers_per_person: the delegate''s answers do not use up the delegator''s');
RESET openwop.max_votes_per_voter;

-- the window and the refs
SELECT is(jsonb_build_array(
            pg_temp.as_('fay', $$ SELECT openwop.delegate_approvals('token-holder', now(), now() + interval '1 day') $$) -> 'details' ->> 'field',
            pg_temp.as_('fay', $$ SELECT openwop.delegate_approvals('dave', '-infinity', 'infinity') $$) -> 'details' ->> 'field',
            pg_temp.as_('fay', $$ SELECT openwop.delegate_approvals('dave', now(), now() + interval '367 days') $$) -> 'details' ->> 'field',
            pg_temp.as_('fay', $$ SELECT openwop.delegate_approvals('https://idp.example/fay', now(), now() + interval '1 day') $$) -> 'details' ->> 'field'),
          '["delegate", "startsAt", "endsAt", "delegate"]',
          'delegation_bad_input: the reserved token-holder, an infinite time, more than 366 days, oneself under another issuer');

-- the window, and revocation
DO $$ BEGIN PERFORM pg_temp.gate('acme/del-window-000001', '{"approversList": ["finn"]}');
            PERFORM pg_temp.delegate('finn', 'gus', '1 hour', '2 hours'); END $$;
SELECT is(pg_temp.refused_vote('acme/del-window-000001', 'gus') ->> 'code', 'forbidden',
          'delegation_window: a delegation that has not started gives nothing');
CREATE TEMP TABLE d2 AS SELECT pg_temp.delegate('finn', 'hal') ->> 'delegationId' AS id;
SELECT is(pg_temp.as_('hal', format('SELECT openwop.revoke_delegation(%L)', (SELECT id FROM d2))) ->> 'changed', 'true',
          'revoke_delegation: its delegate may give it up');
SELECT is(pg_temp.as_('hal', format('SELECT openwop.revoke_delegation(%L)', (SELECT id FROM d2))) ->> 'changed', 'false',
          '... revoking it again changes nothing');
SELECT is(pg_temp.refused_vote('acme/del-window-000001', 'hal') ->> 'code', 'forbidden', 'delegation_revoked: a revoked delegation gives nothing');
CREATE TEMP TABLE d3 AS SELECT pg_temp.delegate('finn', 'ivy') ->> 'delegationId' AS id;
SELECT is(pg_temp.as_('mallory', format('SELECT openwop.revoke_delegation(%L)', (SELECT id FROM d3))) ->> 'code', 'forbidden',
          'revoke_delegation: nobody else revokes it');
SELECT is(pg_temp.as_('finn', $$ SELECT openwop.revoke_delegation('acme/AAAAAAAAAAAAAAAAAAAAAA') $$) ->> 'code', 'not_found', '... an unknown one is 404');

-- tokens minted for a delegate stop resolving when the delegation is revoked
CREATE TEMP TABLE tok AS
  SELECT openwop.mint_interrupt_token((SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/del-window-000001'), 'resolve', NULL, 'ivy') AS t;
SELECT is(pg_temp.as_('finn', format('SELECT openwop.revoke_delegation(%L)', (SELECT id FROM d3))) ->> 'changed', 'true',
          'the delegator revokes it');
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt_by_token((SELECT t FROM tok), '{"action": "accept"}') $$) ->> 'code', 'forbidden',
          'delegation_token_stops: a token minted for the delegate no longer resolves');
SELECT is(pg_temp.refusal(format($$ SELECT openwop.mint_interrupt_token(%L, 'resolve', NULL, 'ivy') $$,
                                 (SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/del-window-000001'))) ->> 'code', 'forbidden',
          '... nor is a new one minted');

-- ... and when the delegation ends: a window of a second, a token minted inside it, used after it
CREATE TEMP TABLE tok_ends AS
  SELECT pg_temp.as_('finn', $$ SELECT openwop.delegate_approvals('lou', clock_timestamp() - interval '1 hour', clock_timestamp() + interval '1 second') $$) AS d,
         NULL::text AS t;
UPDATE tok_ends SET t = openwop.mint_interrupt_token((SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/del-window-000001'), 'resolve', NULL, 'lou');
SELECT is((SELECT t IS NOT NULL FROM tok_ends), true, 'inside its window a token is minted for the delegate');
SELECT pg_sleep(1.2);
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt_by_token((SELECT t FROM tok_ends), '{"action": "accept"}') $$) ->> 'code', 'forbidden',
          'delegation_token_stops_when_it_ends: a token minted for the delegate no longer resolves once the delegation has ended');

-- the inbox, and the view
DO $$ BEGIN PERFORM pg_temp.delegate('finn', 'jo'); END $$;
SELECT is(pg_temp.as_request(pg_temp.jwt('jo'), $$ SELECT coalesce(jsonb_agg(run_id ORDER BY run_id), '[]') FROM openwop.pending_interrupts
                                                   WHERE run_id IN ('acme/del-window-000001', 'acme/del-onevote-000001', 'acme/del-cascade-000001') $$),
          '["acme/del-window-000001"]', 'delegation_inbox: a delegate finds its delegator''s gates in its inbox (finn''s, not fay''s)');
GRANT USAGE ON SCHEMA openwop TO tap_del_dba;
SELECT is(pg_temp.as_login('tap_del_dba', 'acme', $$ SELECT jsonb_agg(DISTINCT delegator ORDER BY delegator) FROM openwop.delegations $$),
          '["aaa", "dave", "fay", "finn", "oscar", "tap_del_eng"]', 'delegations view: a policy admin sees every delegation of its tenant');
SELECT is(pg_temp.as_request(pg_temp.jwt('jo'), $$ SELECT jsonb_agg(jsonb_build_array(delegator, delegate, active)) FROM openwop.delegations $$),
          '[["finn", "jo", true]]', '... anyone else its own');

SELECT * FROM finish();
ROLLBACK;
