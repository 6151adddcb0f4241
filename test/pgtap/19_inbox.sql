-- The inbox, openwop.pending_interrupts (docs/inbox.md): the pending
-- interrupts the caller may decide now, in its tenant only, by the rules a
-- resolve applies (the "Approval" and "Approver enforcement" sections of
-- the OpenWOP interrupt spec).  Each eligibility rule against the resolve
-- it mirrors; every caller (JWT subject, SQL login, superuser login, no
-- scope, another tenant); the attacks: a leaky function in the WHERE
-- clause, objects shadowing the view's through search_path, a SECURITY
-- DEFINER or materialized-view wrapper; and the plan of a page.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir refusal.psql
\ir callers.psql

\ir inbox.psql
CREATE FUNCTION pg_temp.approval(data jsonb DEFAULT '{}', extra jsonb DEFAULT '{}') RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('kind', 'approval', 'data', jsonb_build_object('artifactId', 'exp-1', 'artifactType', 'expense',
           'title', 'Approve 412.50', 'actions', '["accept", "reject", "ask"]'::jsonb) || data) || extra
$$;
-- the run ids of the inbox, sorted, as the caller of the statement sees it
CREATE FUNCTION pg_temp.inbox_sql() RETURNS text LANGUAGE sql AS $$
  SELECT 'SELECT coalesce(jsonb_agg(run_id ORDER BY run_id), ''[]'') FROM openwop.pending_interrupts'
$$;
CREATE FUNCTION pg_temp.jwt(sub text, tenant text DEFAULT 'acme', extra jsonb DEFAULT '{}') RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('sub', sub, 'tenant', tenant, 'scope', 'approvals:respond') || extra
$$;
CREATE FUNCTION pg_temp.seen_by(claims jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_request(claims, pg_temp.inbox_sql())
$$;
CREATE FUNCTION pg_temp.seen_by_login(login text, bound text DEFAULT 'acme') RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_login(login, bound, pg_temp.inbox_sql())
$$;
CREATE FUNCTION pg_temp.vote(run text, sub text, value jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_request(pg_temp.jwt(sub, split_part(run, '/', 1)),
                            format('SELECT openwop.resolve_interrupt(%L, %L, %L)', run, 'gate', value))
$$;
-- a resolve as a JWT subject: the refusal's code, or the response's status
CREATE FUNCTION pg_temp.try_vote(run text, sub text, value jsonb) RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(pg_temp.refusal(format('SELECT pg_temp.vote(%L, %L, %L)', run, sub, value)) ->> 'code', 'answered')
$$;
-- the inbox row of run as sub sees it, or NULL
CREATE FUNCTION pg_temp.row_of(run text, sub text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_request(pg_temp.jwt(sub, split_part(run, '/', 1)),
           format('SELECT to_jsonb(p) FROM openwop.pending_interrupts p WHERE run_id = %L', run))
$$;

-- the approvers: JWT subjects (alice, bob, dave, cfo, carol of https://idp.example), and SQL logins
DO $$ BEGIN
  PERFORM openwop.add_group_member('finance', 'dave', 'acme');
  PERFORM openwop.add_group_member('openwop-override', 'cfo', 'acme');
END $$;
CREATE ROLE tap_inbox_treasury;
CREATE ROLE tap_inbox_erin LOGIN;          -- holds the role ref tap_inbox_treasury
CREATE ROLE tap_inbox_frank LOGIN;         -- an approver, never bound to acme
CREATE ROLE tap_inbox_clerk LOGIN;         -- granted the inbox, without approvals:respond
CREATE ROLE tap_inbox_stranger LOGIN;      -- granted nothing
CREATE ROLE tap_inbox_root LOGIN SUPERUSER; -- a superuser that is no approver
GRANT tap_inbox_treasury TO tap_inbox_erin;
GRANT openwop_approver TO tap_inbox_erin, tap_inbox_frank;
-- what docs/inbox.md tells the DBA to grant
GRANT USAGE ON SCHEMA openwop TO tap_inbox_erin, tap_inbox_frank, tap_inbox_clerk, tap_inbox_stranger;
GRANT SELECT ON openwop.pending_interrupts TO tap_inbox_erin, tap_inbox_frank, tap_inbox_clerk;
GRANT EXECUTE ON FUNCTION openwop.inbox_tenant(), openwop.inbox_voter(), openwop.inbox_waiting(text),
                          openwop.may_decide(text, text, text, jsonb, jsonb)
   TO tap_inbox_erin, tap_inbox_frank, tap_inbox_clerk;

-- the gates of tenant acme, one per rule, and one of tenant evil
SELECT pg_temp.raise('acme/inbox-open-00000001', pg_temp.approval());
SELECT pg_temp.raise('acme/inbox-list-00000001', pg_temp.approval('{"approversList": ["alice"]}'));
SELECT pg_temp.raise('acme/inbox-pinned-0000001', pg_temp.approval('{"approversList": ["https://idp.example/carol"]}'));
SELECT pg_temp.raise('acme/inbox-group-0000001', pg_temp.approval('{"approverGroupRefs": ["finance"]}'));
SELECT pg_temp.raise('acme/inbox-role-00000001', pg_temp.approval('{"approverRoleRefs": ["tap_inbox_treasury"]}'));
SELECT pg_temp.raise('acme/inbox-override-00001', pg_temp.approval('{"approversList": ["alice"], "requiredApprovals": 2,
                                                                      "overrideBypassesQuorum": true}'));
SELECT pg_temp.raise('acme/inbox-self-00000001', pg_temp.approval(jsonb_build_object('approversList', jsonb_build_array(session_user))));
SELECT pg_temp.raise('acme/inbox-clarify-000001', '{"kind": "clarification", "data": {"questions": [{"id": "q1", "question": "Which budget?"}]}}');
SELECT pg_temp.raise('acme/inbox-overdue-000001', pg_temp.approval('{}', '{"timeoutMs": 1}'));
SELECT pg_temp.raise('evil/inbox-evil-00000001', pg_temp.approval());
SELECT pg_sleep(0.01);   -- acme/inbox-overdue-000001 is past its deadline, and still pending: no sweep ran

/* ------------------------------------------------------------------
 * Who sees what: the rules of a resolve
 * ------------------------------------------------------------------ */

SELECT is(pg_temp.seen_by(pg_temp.jwt('bob')), '["acme/inbox-clarify-000001", "acme/inbox-open-00000001"]',
          'open_gate_for_every_holder_of_the_scope: a gate naming no approvers, and every other kind, is in every approver''s inbox');
SELECT is(pg_temp.try_vote('acme/inbox-list-00000001', 'bob', '{"action": "ask"}'), 'forbidden',
          '... and a gate it does not list is not: a resolve refuses bob there too');
SELECT is(pg_temp.seen_by(pg_temp.jwt('alice')),
          '["acme/inbox-clarify-000001", "acme/inbox-list-00000001", "acme/inbox-open-00000001", "acme/inbox-override-00001"]',
          'approvers_list: a gate whose approversList names the subject is in its inbox');
SELECT is(pg_temp.seen_by(pg_temp.jwt('carol', 'acme', '{"iss": "https://idp.example"}')),
          '["acme/inbox-clarify-000001", "acme/inbox-open-00000001", "acme/inbox-pinned-0000001"]',
          'approvers_list_pinned_issuer: "<issuer>/<subjectId>" names the subject of that issuer');
SELECT is(pg_temp.seen_by(pg_temp.jwt('carol', 'acme', '{"iss": "https://other.example"}')),
          '["acme/inbox-clarify-000001", "acme/inbox-open-00000001"]',
          '... and not the same subjectId of another issuer');
SELECT is(pg_temp.seen_by(pg_temp.jwt('dave')),
          '["acme/inbox-clarify-000001", "acme/inbox-group-0000001", "acme/inbox-open-00000001"]',
          'approver_group_refs: a member of an approverGroupRefs group (openwop.group_members) sees the gate');
SELECT is(pg_temp.seen_by_login('tap_inbox_erin'),
          '["acme/inbox-clarify-000001", "acme/inbox-open-00000001", "acme/inbox-role-00000001"]',
          'approver_role_refs: a SQL login holding an approverRoleRefs role sees the gate');
SELECT is(pg_temp.seen_by(pg_temp.jwt('tap_inbox_erin')), '["acme/inbox-clarify-000001", "acme/inbox-open-00000001"]',
          '... and a JWT subject spelled like that login holds no role');
SELECT is(pg_temp.seen_by(pg_temp.jwt('cfo')), '["acme/inbox-clarify-000001", "acme/inbox-open-00000001"]',
          'override_group_makes_no_one_eligible: an override principal sees the open gates, not a gate that does not name it');
SELECT is(pg_temp.try_vote('acme/inbox-override-00001', 'cfo', '{"action": "accept"}'), 'forbidden',
          '... as a resolve refuses it there');
SELECT is(pg_temp.seen_by(pg_temp.jwt('bob')) ? 'acme/inbox-overdue-000001', false,
          'overdue_not_shown: an interrupt past its deadline is not in the inbox, even before a sweep expires it');
SELECT is((SELECT status FROM openwop.interrupts WHERE run_id = 'acme/inbox-overdue-000001'), 'pending',
          '... though it is still pending');
SELECT is(pg_temp.vote('acme/inbox-overdue-000001', 'bob', '{"action": "accept"}') ->> 'status', 'expired',
          '... because no answer can decide it any more: a resolve expires it');

/* ------------------------------------------------------------------
 * Callers: tenants, scope, logins, superusers
 * ------------------------------------------------------------------ */

SELECT is(pg_temp.seen_by(pg_temp.jwt('alice', 'evil')), '["evil/inbox-evil-00000001"]',
          'other_tenant_never_shown: an approver of tenant evil sees evil''s gates only');
SELECT is(pg_temp.seen_by(pg_temp.jwt('alice')) ? 'evil/inbox-evil-00000001', false,
          '... and acme''s approvers never see evil''s, open as it is');
SELECT is(pg_temp.seen_by('{"sub": "alice", "tenant": "acme"}'), '[]',
          'no_scope_sees_nothing: a JWT without approvals:respond sees an empty inbox');
SELECT is(pg_temp.seen_by('{"tenant": "acme", "scope": "approvals:respond"}'), '[]',
          'anonymous_sees_nothing: an anonymous request holds no scope, whatever its claims say');
SELECT is(pg_temp.seen_by_login('tap_inbox_clerk'), '[]',
          'no_scope_sees_nothing: a login granted the inbox but not openwop.approver_role sees an empty inbox');
SELECT is(pg_temp.as_login('tap_inbox_clerk', 'acme', 'SELECT to_jsonb(ARRAY[openwop.inbox_tenant(), openwop.inbox_voter()])'),
          '[null, null]', '... its tenant and voter are NULL, so the view reads no row at all');
SELECT is(pg_temp.seen_by_login('tap_inbox_frank', NULL) ->> 'code', 'id_tenant_mismatch',
          'unbound_login_stays_in_the_default_tenant: an approver login not bound to acme that names acme is refused');
SET LOCAL openwop.tenant = '';
SELECT is(pg_temp.seen_by_login('tap_inbox_frank', NULL), '[]', '... and naming none, it sees none of acme''s gates');
SET LOCAL openwop.tenant = 'acme';
SELECT is(pg_temp.seen_by_login('tap_inbox_frank', 'acme'), '["acme/inbox-clarify-000001", "acme/inbox-open-00000001"]',
          '... and bound to acme, acme''s open gates');
SET LOCAL openwop.tenant = 'evil';
SELECT is(pg_temp.seen_by_login('tap_inbox_frank', 'acme') ->> 'code', 'id_tenant_mismatch',
          'bound_login_cannot_choose_another_tenant: a login bound to acme that names evil (openwop.tenant) is refused, as every call is');
SET LOCAL openwop.tenant = 'acme';
SELECT is(pg_temp.seen_by_login('tap_inbox_root'), '[]',
          'superuser_is_a_login_like_any_other: a superuser login that is no approver sees nothing, though it may read the tables');
SELECT is((SELECT coalesce(jsonb_agg(run_id ORDER BY run_id), '[]') FROM openwop.pending_interrupts),
          '["acme/inbox-clarify-000001", "acme/inbox-open-00000001", "acme/inbox-self-00000001"]',
          '... and a superuser approver login (the test login) sees only what its own principal may decide');
SELECT is(pg_temp.as_login('tap_inbox_stranger', 'acme', pg_temp.inbox_sql()) ->> 'sqlstate', '42501',
          'view_needs_a_grant: a login the DBA granted nothing may not read the inbox');
SELECT is_empty($$ SELECT 1 FROM information_schema.role_table_grants
                    WHERE table_schema = 'openwop' AND table_name = 'pending_interrupts' AND grantee = 'PUBLIC' $$,
                'PUBLIC has no privilege on the view');

/* ------------------------------------------------------------------
 * What a row holds
 * ------------------------------------------------------------------ */

SELECT is(pg_temp.row_of('acme/inbox-list-00000001', 'alice') - 'interrupt_id' - 'requested_at',
          '{"run_id": "acme/inbox-list-00000001", "node_id": "gate", "kind": "approval", "title": "Approve 412.50",
            "request": {"artifactId": "exp-1", "artifactType": "expense", "title": "Approve 412.50", "actions": ["accept", "reject", "ask"]},
            "resume_schema": null, "expires_at": null, "required_approvals": 1, "accepts": 0, "rejects": 0, "voters": 0,
            "my_vote": null, "my_vote_at": null, "policy": null,
            "due_at": null, "overdue": false}',
          'a gate''s row: ids, kind, the request without approversList, no deadline (NULL), requiredApprovals 1, an empty tally, no vote');
SELECT is((pg_temp.row_of('acme/inbox-list-00000001', 'alice') ->> 'interrupt_id'),
          (SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/inbox-list-00000001'), '... and its interrupt id');
SELECT is((pg_temp.row_of('acme/inbox-list-00000001', 'alice') ->> 'requested_at')::timestamptz,
          (SELECT created_at FROM openwop.interrupts WHERE run_id = 'acme/inbox-list-00000001'), '... requested when it was raised');
SELECT is(pg_temp.row_of('acme/inbox-group-0000001', 'dave') -> 'request' ?| '{approversList,approverGroupRefs,approverRoleRefs,audience}', false,
          'the request never says who else may decide');
SELECT is(pg_temp.row_of('acme/inbox-clarify-000001', 'bob')
            - '{interrupt_id,requested_at,run_id,node_id}'::text[],
          '{"kind": "clarification", "title": null, "request": {"questions": [{"id": "q1", "question": "Which budget?"}]},
            "resume_schema": null, "expires_at": null, "required_approvals": null, "accepts": null, "rejects": null, "voters": null,
            "my_vote": null, "my_vote_at": null, "policy": null,
            "due_at": null, "overdue": false}',
          'a clarification''s row: its questions, and no approval columns');
SELECT pg_temp.raise('acme/inbox-deadline-00001', pg_temp.approval('{}', '{"timeoutMs": 3600000,
  "resumeSchema": {"type": "object", "required": ["action"]}}'));
SELECT is((pg_temp.row_of('acme/inbox-deadline-00001', 'bob') ->> 'expires_at')::timestamptz,
          (SELECT expires_at FROM openwop.interrupts WHERE run_id = 'acme/inbox-deadline-00001'),
          'a deadline is expires_at');
SELECT is(jsonb_build_array((pg_temp.row_of('acme/inbox-deadline-00001', 'bob') ->> 'due_at')::timestamptz
                              = (SELECT expires_at FROM openwop.interrupts WHERE run_id = 'acme/inbox-deadline-00001'),
                            pg_temp.row_of('acme/inbox-deadline-00001', 'bob') -> 'overdue'),
          '[true, false]', 'inbox_due_at: with no due date of its policy, a gate falls due at its deadline; not overdue before it');
SELECT is(pg_temp.row_of('acme/inbox-deadline-00001', 'bob') -> 'resume_schema', '{"type": "object", "required": ["action"]}',
          '... and a resumeSchema is resume_schema');

/* ------------------------------------------------------------------
 * Votes: the tally, the caller's own vote, what is left to answer
 * ------------------------------------------------------------------ */

SELECT pg_temp.raise('vote/inbox-quorum-0000001', pg_temp.approval('{"requiredApprovals": 2, "rejectionPolicy": "majority",
                                                                    "approversList": ["alice", "bob", "carol"]}'));
CREATE TEMP TABLE alice_vote AS SELECT pg_temp.vote('vote/inbox-quorum-0000001', 'alice', '{"action": "accept"}') AS r;
SELECT is(pg_temp.row_of('vote/inbox-quorum-0000001', 'alice') ->> 'my_vote', 'accept',
          'voter_who_voted_still_sees_the_gate: a counted voter may still change its vote, and sees its own, latest vote');
SELECT ok((pg_temp.row_of('vote/inbox-quorum-0000001', 'alice') ->> 'my_vote_at')::timestamptz
            = (SELECT cast_at FROM openwop.votes WHERE voter = 'alice' AND interrupt_id =
                 (SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'vote/inbox-quorum-0000001')),
          '... with when it voted');
SELECT is(jsonb_build_object('accepts', r ->> 'accepts', 'rejects', r ->> 'rejects', 'requiredApprovals', r ->> 'required_approvals',
                             'voters', r ->> 'voters'),
          jsonb_build_object('accepts', t ->> 'accepts', 'rejects', t ->> 'rejects', 'requiredApprovals', t ->> 'requiredApprovals',
                             'voters', t ->> 'voters'),
          'the tally is the one the resolve reported: accepts, rejects, required_approvals, voters')
  FROM (SELECT pg_temp.row_of('vote/inbox-quorum-0000001', 'bob') AS r, (SELECT r -> 'tally' FROM alice_vote) AS t) x;
SELECT is(pg_temp.row_of('vote/inbox-quorum-0000001', 'bob') ->> 'my_vote', NULL, '... and bob has no vote of his own');
DO $$ BEGIN PERFORM pg_temp.vote('vote/inbox-quorum-0000001', 'alice', '{"action": "reject"}'); END $$;
SELECT is(pg_temp.row_of('vote/inbox-quorum-0000001', 'carol') - '{interrupt_id,run_id,node_id,kind,title,request,resume_schema,requested_at,expires_at,my_vote,my_vote_at,policy,due_at,overdue}'::text[],
          '{"required_approvals": 2, "accepts": 0, "rejects": 1, "voters": 1}',
          'a re-vote replaces the voter''s earlier vote in the tally');
DO $$ BEGIN PERFORM pg_temp.vote('vote/inbox-quorum-0000001', 'alice', '{"action": "ask", "feedback": "which budget?"}'); END $$;
SELECT is(pg_temp.row_of('vote/inbox-quorum-0000001', 'alice') ->> 'my_vote', 'ask',
          'my_vote is the latest answer, an ask included');
SELECT is(pg_temp.row_of('vote/inbox-quorum-0000001', 'carol') ->> 'voters', '1', '... which the tally does not count');

-- used-up answers: openwop.max_votes_per_voter (2 here)
SET LOCAL openwop.max_votes_per_voter = 2;
SELECT pg_temp.raise('vote/inbox-used-00000001', pg_temp.approval('{"requiredApprovals": 2}'));
SELECT pg_temp.raise('vote/inbox-onevote-000001', pg_temp.approval('{"actions": ["accept", "ask"]}'));
SELECT pg_temp.raise('vote/inbox-askonly-000001', pg_temp.approval('{"actions": ["ask"]}'));
DO $$ BEGIN
  PERFORM pg_temp.vote(r, 'alice', '{"action": "ask"}'), pg_temp.vote(r, 'alice', '{"action": "ask"}')
     FROM unnest(ARRAY['vote/inbox-used-00000001', 'vote/inbox-onevote-000001', 'vote/inbox-askonly-000001']) r;
END $$;
SELECT is(pg_temp.row_of('vote/inbox-used-00000001', 'alice'), NULL,
          'used_up_answers_not_shown: a voter that gave a quorum gate openwop.max_votes_per_voter answers may act no more');
SELECT is(pg_temp.try_vote('vote/inbox-used-00000001', 'alice', '{"action": "accept"}'), 'validation_error',
          '... as a resolve refuses its next answer');
SELECT is(pg_temp.row_of('vote/inbox-used-00000001', 'bob') ->> 'my_vote', NULL, '... while the gate stays in bob''s inbox');
SELECT is(pg_temp.row_of('vote/inbox-askonly-000001', 'alice'), NULL,
          '... nor a one-vote gate whose every answer counts (ask only)');
SELECT is(pg_temp.row_of('vote/inbox-onevote-000001', 'alice') ->> 'my_vote', 'ask',
          'used_up_asks_still_decide_a_one_vote_gate: the gate stays, since its accept is not an answer the limit counts');
SELECT is(pg_temp.vote('vote/inbox-onevote-000001', 'alice', '{"action": "accept"}') ->> 'decision', 'granted',
          '... as a resolve lets alice accept it');
RESET openwop.max_votes_per_voter;

/* ------------------------------------------------------------------
 * A decided gate leaves every inbox; so does an ended run's
 * ------------------------------------------------------------------ */

SELECT is(pg_temp.row_of('vote/inbox-onevote-000001', 'bob'), NULL, 'decided_gate_disappears: a granted gate is in no inbox');
DO $$ BEGIN PERFORM pg_temp.vote('vote/inbox-quorum-0000001', 'bob', '{"action": "accept"}'),
                    pg_temp.vote('vote/inbox-quorum-0000001', 'carol', '{"action": "accept"}'); END $$;
SELECT is(pg_temp.row_of('vote/inbox-quorum-0000001', 'bob'), NULL, '... nor a quorum gate, once granted, for its voters');
DO $$ BEGIN PERFORM pg_temp.vote('acme/inbox-open-00000001', 'bob', '{"action": "reject"}'); END $$;
SELECT is(pg_temp.seen_by(pg_temp.jwt('alice')) ? 'acme/inbox-open-00000001', false, '... nor a rejected one');
DO $$ BEGIN PERFORM openwop.cancel_run('acme/inbox-clarify-000001'); END $$;
SELECT is(pg_temp.seen_by(pg_temp.jwt('bob')) ? 'acme/inbox-clarify-000001', false,
          'cancelled_run_disappears: an interrupt its run''s end cancelled is in no inbox');

/* ------------------------------------------------------------------
 * The caller is decided per statement
 * ------------------------------------------------------------------ */

SELECT is(jsonb_build_array(pg_temp.seen_by(pg_temp.jwt('dave')) ? 'acme/inbox-group-0000001',
                            pg_temp.seen_by(pg_temp.jwt('bob')) ? 'acme/inbox-group-0000001'),
          '[true, false]', 'caller_per_statement: two callers in one transaction each see their own inbox');
DO $$ BEGIN PERFORM openwop.remove_group_member('finance', 'dave', 'acme'); END $$;
SELECT is(pg_temp.seen_by(pg_temp.jwt('dave')) ? 'acme/inbox-group-0000001', false,
          'groups_per_statement: the next statement reads the caller''s groups again (a removed member no longer sees the gate)');
DO $$ BEGIN PERFORM openwop.add_group_member('finance', 'dave', 'acme'); END $$;

/* ------------------------------------------------------------------
 * Attacks
 * ------------------------------------------------------------------ */

-- mallory: an approver login of acme who may decide the open gates only, with a schema of her own
CREATE ROLE tap_inbox_mallory LOGIN;
GRANT openwop_approver TO tap_inbox_mallory;
GRANT USAGE ON SCHEMA openwop TO tap_inbox_mallory;
GRANT SELECT ON openwop.pending_interrupts TO tap_inbox_mallory;
GRANT EXECUTE ON FUNCTION openwop.inbox_tenant(), openwop.inbox_voter(), openwop.inbox_waiting(text),
                          openwop.may_decide(text, text, text, jsonb, jsonb) TO tap_inbox_mallory;
CREATE SCHEMA tap_inbox_mallory AUTHORIZATION tap_inbox_mallory;
SELECT pg_temp.raise('acme/inbox-mallory-000001', pg_temp.approval());
SELECT is(pg_temp.seen_by_login('tap_inbox_mallory'),
          '["acme/inbox-deadline-00001", "acme/inbox-mallory-000001"]', 'mallory''s inbox: the open gates of acme');

SET LOCAL SESSION AUTHORIZATION tap_inbox_mallory;
CREATE TABLE tap_inbox_mallory.seen (via text, run_id text, interrupt_id text, request jsonb);
-- cheaper than anything: the planner would call it first, on every row it reads, if it could
CREATE FUNCTION tap_inbox_mallory.leak(via text, run text, id text, req jsonb) RETURNS boolean
    LANGUAGE plpgsql COST 0.0000001 AS $f$
BEGIN
  RAISE NOTICE 'leak (%): % % %', via, run, id, req;
  INSERT INTO tap_inbox_mallory.seen VALUES (via, run, id, req);
  RETURN true;
END $f$;
-- ... or raises on the row she wants to know about
CREATE FUNCTION tap_inbox_mallory.probe(run text) RETURNS boolean LANGUAGE plpgsql COST 0.0000001 AS $f$
BEGIN
  IF run = 'acme/inbox-list-00000001' THEN RAISE EXCEPTION 'alice''s gate exists'; END IF;
  RETURN true;
END $f$;
CREATE TABLE tap_inbox_mallory.out (r jsonb);
RESET SESSION AUTHORIZATION;
SET LOCAL client_min_messages = warning;   -- the leak's NOTICEs: the table records what it saw
CREATE FUNCTION pg_temp.as_mallory(sql text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_login('tap_inbox_mallory', 'acme', sql)
$$;
CREATE TEMP TABLE attack (via text, sql text);
INSERT INTO attack VALUES
  ('where', $$ SELECT to_jsonb(count(*)) FROM openwop.pending_interrupts p
                WHERE tap_inbox_mallory.leak('where', p.run_id, p.interrupt_id, p.request) $$),
  ('and', $$ SELECT to_jsonb(count(*)) FROM openwop.pending_interrupts p
              WHERE p.kind = 'approval' AND tap_inbox_mallory.leak('and', p.run_id, p.interrupt_id, p.request) $$),
  ('or', $$ SELECT to_jsonb(count(*)) FROM openwop.pending_interrupts p
             WHERE tap_inbox_mallory.leak('or', p.run_id, p.interrupt_id, p.request) OR p.kind = 'nothing' $$),
  ('page', $$ SELECT to_jsonb(count(*)) FROM (SELECT * FROM openwop.pending_interrupts ORDER BY requested_at LIMIT 50) p
               WHERE tap_inbox_mallory.leak('page', p.run_id, p.interrupt_id, p.request) $$),
  ('join', $$ SELECT to_jsonb(count(*)) FROM openwop.pending_interrupts p
               JOIN (VALUES (1)) v(x) ON tap_inbox_mallory.leak('join', p.run_id, p.interrupt_id, p.request) $$),
  ('exists', $$ SELECT to_jsonb(count(*)) FROM openwop.pending_interrupts p
                 WHERE EXISTS (SELECT 1 WHERE tap_inbox_mallory.leak('exists', p.run_id, p.interrupt_id, p.request)) $$),
  ('order', $$ SELECT to_jsonb(array_agg(p.run_id ORDER BY tap_inbox_mallory.leak('order', p.run_id, p.interrupt_id, p.request)))
                FROM openwop.pending_interrupts p $$),
  ('cte', $$ WITH p AS (SELECT * FROM openwop.pending_interrupts)
              SELECT to_jsonb(count(*)) FROM p WHERE tap_inbox_mallory.leak('cte', p.run_id, p.interrupt_id, p.request) $$);
CREATE TEMP TABLE attacked AS SELECT via, pg_temp.as_mallory(sql) AS r FROM attack;
RESET client_min_messages;
SELECT is((SELECT array_agg(DISTINCT via ORDER BY via) FROM tap_inbox_mallory.seen),
          '{and,cte,exists,join,or,order,page,where}', 'control: the leaky function ran in every query');
SELECT is((SELECT count(*) FROM attacked WHERE r ? 'code'), 0::bigint, '... and no query was refused');
SELECT is((SELECT array_agg(DISTINCT run_id ORDER BY run_id) FROM tap_inbox_mallory.seen),
          '{acme/inbox-deadline-00001,acme/inbox-mallory-000001}',
          'leaky_function_sees_only_visible_rows: a COST 0.0000001 function in WHERE, AND, OR, a join, EXISTS, ORDER BY or a CTE sees only the rows mallory may see');
SELECT is(pg_temp.as_mallory($$ SELECT to_jsonb(count(*)) FROM openwop.pending_interrupts p WHERE tap_inbox_mallory.probe(p.run_id) $$),
          '2', 'error_probe_sees_only_visible_rows: a function that raises on the row she looks for never meets it');

-- search_path: her schema first, with a = that matches everything, a clock that never passes a
-- deadline, an inbox_tenant naming evil, a may_decide that says yes and jsonb operators of her own
SET LOCAL SESSION AUTHORIZATION tap_inbox_mallory;
CREATE TABLE tap_inbox_mallory.called (what text);
CREATE FUNCTION tap_inbox_mallory.eq(a text, b text) RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN INSERT INTO tap_inbox_mallory.called VALUES ('='); RETURN true; END $f$;
CREATE OPERATOR tap_inbox_mallory.= (LEFTARG = text, RIGHTARG = text, FUNCTION = tap_inbox_mallory.eq);
CREATE FUNCTION tap_inbox_mallory.jget(a jsonb, b text) RETURNS jsonb LANGUAGE plpgsql AS $f$
BEGIN INSERT INTO tap_inbox_mallory.called VALUES ('->'); RETURN '{"approversList": []}'; END $f$;
CREATE OPERATOR tap_inbox_mallory.-> (LEFTARG = jsonb, RIGHTARG = text, FUNCTION = tap_inbox_mallory.jget);
CREATE FUNCTION tap_inbox_mallory.clock_timestamp() RETURNS timestamptz LANGUAGE plpgsql AS $f$
BEGIN INSERT INTO tap_inbox_mallory.called VALUES ('clock_timestamp'); RETURN '-infinity'; END $f$;
CREATE FUNCTION tap_inbox_mallory.inbox_tenant() RETURNS text LANGUAGE plpgsql AS $f$
BEGIN INSERT INTO tap_inbox_mallory.called VALUES ('inbox_tenant'); RETURN 'evil'; END $f$;
CREATE FUNCTION tap_inbox_mallory.may_decide(text, text, text, jsonb, jsonb) RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN INSERT INTO tap_inbox_mallory.called VALUES ('may_decide'); RETURN true; END $f$;
CREATE FUNCTION tap_inbox_mallory.int4(jsonb) RETURNS integer LANGUAGE plpgsql AS $f$
BEGIN INSERT INTO tap_inbox_mallory.called VALUES ('int4'); RETURN 99; END $f$;
RESET SESSION AUTHORIZATION;
CREATE FUNCTION pg_temp.as_mallory_on_her_path(sql text) RETURNS jsonb LANGUAGE plpgsql
    SET search_path = tap_inbox_mallory, pg_catalog AS $$
DECLARE r jsonb;
BEGIN
  PERFORM pg_catalog.set_config('openwop.bound_tenant', 'acme', true);
  PERFORM pg_catalog.set_config('session_authorization', 'tap_inbox_mallory', true);
  EXECUTE sql INTO r;
  EXECUTE 'RESET SESSION AUTHORIZATION';
  PERFORM pg_catalog.set_config('openwop.bound_tenant', '', true);
  RETURN r;
END $$;
SELECT is(pg_temp.as_mallory_on_her_path($$ SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_array(run_id, required_approvals)
                                                                        ORDER BY run_id)
                                            FROM openwop.pending_interrupts $$),
          '[["acme/inbox-deadline-00001", 1], ["acme/inbox-mallory-000001", 1]]',
          'search_path_cannot_shadow_the_view: with her own =, ->, int4, clock_timestamp, inbox_tenant and may_decide first in search_path, mallory sees her inbox, no more');
SELECT is((SELECT count(*) FROM tap_inbox_mallory.called), 0::bigint, '... and none of her objects was ever called');
SELECT is(pg_temp.as_mallory_on_her_path($$ SELECT pg_catalog.to_jsonb(inbox_tenant()) $$), '"evil"',
          'control: unqualified, her inbox_tenant is what her search_path finds');

-- code that runs as someone else reads no inbox: a SECURITY DEFINER function, a materialized view
CREATE FUNCTION pg_temp.definer_inbox() RETURNS bigint LANGUAGE sql SECURITY DEFINER AS $$
  SELECT count(*) FROM openwop.pending_interrupts
$$;
SELECT is(pg_temp.as_mallory('SELECT to_jsonb(pg_temp.definer_inbox())') ->> 'code', 'forbidden',
          'inbox_refused_in_security_definer: a SECURITY DEFINER function (here the superuser''s) cannot read its caller''s inbox, nor give its own');
SELECT is(pg_temp.refusal('CREATE MATERIALIZED VIEW public.tap_inbox_captured AS SELECT * FROM openwop.pending_interrupts') ->> 'code', 'forbidden',
          'inbox_refused_in_materialized_view: a materialized view cannot capture an inbox for whoever reads it');

/* ------------------------------------------------------------------
 * may_decide, called directly, with anything
 * ------------------------------------------------------------------ */

SELECT is(openwop.may_decide(NULL, 'x', 'approval', '{}', NULL), NULL, 'may_decide is strict');
SELECT is(openwop.may_decide('acme', 'x', 'clarification', 'null', NULL), true, 'may_decide: a kind without approvers is for every holder of the scope');
SELECT is(openwop.may_decide('evil', 'x', 'clarification', 'null', NULL), false, '... of the tenant, and no other');
SELECT is(jsonb_agg(openwop.may_decide('acme', 'acme/none', 'approval', p::jsonb, NULL) ORDER BY p),
          '[false, false, true, true, true, false]',
          'may_decide reads any payload without a raw error: a scalar, no data, data not an object, odd members')
  FROM unnest(ARRAY['"s"', '{}', '{"data": [1]}',
                    '{"data": {"requiredApprovals": 1e300, "actions": "x", "approversList": 5}}',
                    '{"data": {"requiredApprovals": "two", "actions": [1, null]}}',
                    '{"data": {"requiredApprovals": -7}}']) p;

/* ------------------------------------------------------------------
 * The plan of a page: the tenant's pending interrupts, in order, through
 * the index, and no further than the page
 * ------------------------------------------------------------------ */

-- 120 gates in tenant bulk, their requests a second apart; 40 more in tenant other
DO $$ BEGIN
  FOR n IN 1 .. 120 LOOP PERFORM pg_temp.raise(format('bulk/inbox-bulk-%s', lpad(n::text, 8, '0')), pg_temp.approval()); END LOOP;
  FOR n IN 1 .. 40 LOOP PERFORM pg_temp.raise(format('other/inbox-other-%s', lpad(n::text, 8, '0')), pg_temp.approval()); END LOOP;
END $$;
UPDATE openwop.interrupts SET created_at = created_at - make_interval(secs => 1000 - split_part(run_id, '-', 3)::int)
 WHERE tenant = 'bulk';
CREATE FUNCTION pg_temp.page_plan(sql text, analyzed boolean DEFAULT false) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE plan jsonb;
BEGIN
  PERFORM set_config('openwop.tenant', 'bulk', true);
  EXECUTE format('EXPLAIN (FORMAT JSON, COSTS OFF%s) %s', CASE WHEN analyzed THEN ', ANALYZE, TIMING OFF' END, sql) INTO plan;
  PERFORM set_config('openwop.tenant', 'acme', true);
  RETURN plan -> 0 -> 'Plan';
END $$;
\set page 'SELECT * FROM openwop.pending_interrupts ORDER BY requested_at LIMIT 50'
SELECT is(jsonb_path_query_first(pg_temp.page_plan(:'page'),
                                 'strict $.** ? (@."Relation Name" == "open_interrupts") ."Index Name"'),
          '"interrupts_inbox"', 'page_uses_the_inbox_index: the page reads openwop.open_interrupts through interrupts_inbox');
SELECT is(jsonb_path_exists(pg_temp.page_plan(:'page'), 'strict $.** ? (@."Relation Name" == "interrupts")'),
          false, '... and nothing else: the open row carries the request, openwop.interrupts is not read');
SELECT is(jsonb_path_exists(pg_temp.page_plan(:'page'), 'strict $.** ? (@."Node Type" == "Seq Scan" && (@."Relation Name" == "interrupts" || @."Relation Name" == "open_interrupts"))'),
          false, 'page_never_scans_interrupts: no sequential scan of openwop.interrupts or openwop.open_interrupts');
SELECT is(jsonb_path_exists(pg_temp.page_plan(:'page'), 'strict $.** ? (@."Node Type" == "Sort") .** ? (@."Relation Name" == "interrupts" || @."Relation Name" == "open_interrupts")'),
          false, 'page_never_sorts_the_inbox: the index gives the order, nothing sorts the interrupts');
SELECT ok(jsonb_path_query_first(pg_temp.page_plan(:'page'), 'strict $.** ? (@."Index Name" == "interrupts_inbox") ."Index Cond"') #>> '{}'
            ~ '^\(tenant = \(?openwop\.inbox_tenant\(\)\)?(::text)?\)$', 'page_reads_one_tenant: the caller''s tenant is the index key');
SELECT is(jsonb_path_query_first(pg_temp.page_plan(:'page', true), 'strict $.** ? (@."Index Name" == "interrupts_inbox") ."Actual Rows"'),
          '50', 'page_stops_at_its_end: of the 120 pending interrupts of the tenant, the scan reads the 50 it returns');
SELECT is(jsonb_path_query_array(pg_temp.page_plan(:'page', true), 'strict $.** ? (@."Node Type" == "Aggregate" || @."Node Type" == "Limit") ."Actual Loops"'),
          '[1, 50, 50]', 'tally_and_own_vote_for_returned_rows_only: the tally and the own-vote lookups run once per returned row');
SELECT is(jsonb_path_query_first(pg_temp.page_plan(
            'WITH pgrst_source AS (SELECT "openwop"."pending_interrupts".* FROM "openwop"."pending_interrupts" ORDER BY "requested_at" ASC LIMIT 50 OFFSET 0)
             SELECT coalesce(json_agg(_postgrest_t), ''[]'') AS body FROM (SELECT * FROM pgrst_source) _postgrest_t', true),
            'strict $.** ? (@."Index Name" == "interrupts_inbox") ."Actual Rows"'),
          '50', 'postgrest_page_stops_at_its_end: the page as PostgREST v12 reads a view (a CTE with ORDER BY and LIMIT) reads the same 50');
SELECT is(pg_temp.as_request(pg_temp.jwt('bob', 'bulk'),
            'SELECT jsonb_agg(run_id) FROM (SELECT run_id FROM openwop.pending_interrupts ORDER BY requested_at LIMIT 3) p'),
          '["bulk/inbox-bulk-00000001", "bulk/inbox-bulk-00000002", "bulk/inbox-bulk-00000003"]',
          'the inbox order is requested_at, oldest first');
SELECT is(pg_temp.as_request(pg_temp.jwt('bob', 'bulk'),
            $$ SELECT jsonb_agg(run_id) FROM (SELECT run_id FROM openwop.pending_interrupts
                                               WHERE requested_at > (SELECT created_at FROM openwop.interrupts WHERE run_id = 'bulk/inbox-bulk-00000050')
                                               ORDER BY requested_at LIMIT 2) p $$),
          '["bulk/inbox-bulk-00000051", "bulk/inbox-bulk-00000052"]',
          '... and a keyset page (requested_at after the last one seen) goes on from there');
SELECT is(jsonb_path_query_first(pg_temp.page_plan(
            $$ SELECT * FROM openwop.pending_interrupts
                WHERE (requested_at, interrupt_id) > (SELECT created_at, interrupt_id FROM openwop.interrupts
                                                       WHERE run_id = 'bulk/inbox-bulk-00000050')
                ORDER BY requested_at, interrupt_id LIMIT 50 $$, true),
            'strict $.** ? (@."Index Name" == "interrupts_inbox") ."Actual Rows"'),
          '50', 'keyset_page_reads_only_its_rows: after the 50th gate, the next page of 50 reads 50 (the index starts at the key)');

SELECT * FROM finish();
ROLLBACK;
