-- Identity across the router hop (docs/scale-out.md, docs/security.md).
-- A shard believes the caller a router forwards (openwop.forwarded_caller,
-- set by the openwop_forward functions) from the logins of
-- openwop.forwarding_role only, member by member, within the forwarding
-- login's own bound tenant; every other session setting it is refused,
-- and so is code that is not the session's own.  Each test is named after
-- the rule it holds.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir refusal.psql
\ir callers.psql

-- the router's login (a member of the forwarding role, bound to "*" as a DBA binds it),
-- a router login bound to one tenant, one bound to none, and a login that may not forward
CREATE ROLE tap_fwd_forwarders;
CREATE ROLE tap_fwd_router LOGIN;
CREATE ROLE tap_fwd_acme_router LOGIN;
CREATE ROLE tap_fwd_unbound_router LOGIN;
CREATE ROLE tap_fwd_outsider LOGIN;
GRANT tap_fwd_forwarders TO tap_fwd_router, tap_fwd_acme_router, tap_fwd_unbound_router;
-- the outsider is even an approver and a PostgREST authenticator: neither makes it a forwarder
GRANT openwop_approver, openwop_tap_authenticator TO tap_fwd_outsider;
GRANT USAGE ON SCHEMA openwop, openwop_forward TO tap_fwd_router, tap_fwd_acme_router, tap_fwd_unbound_router, tap_fwd_outsider;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop, openwop_forward
   TO tap_fwd_router, tap_fwd_acme_router, tap_fwd_unbound_router, tap_fwd_outsider;
GRANT SELECT ON openwop.pending_interrupts TO tap_fwd_router, tap_fwd_outsider;
SET LOCAL openwop.forwarding_role = 'tap_fwd_forwarders';

-- a forwarded caller as the router writes it: a JWT subject of the router's identity provider
CREATE FUNCTION pg_temp.fwd(sub text, tenant text DEFAULT 'acme', approver boolean DEFAULT true) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('issuer', 'https://idp.example.org', 'subjectId', sub, 'tenant', tenant,
                            'lane', 'oauth2', 'kind', 'user',
                            'scopes', CASE WHEN approver THEN '["approvals:respond"]'::jsonb ELSE '[]'::jsonb END)
$$;
-- its Subject, as the shard records it
CREATE FUNCTION pg_temp.subject(sub text, tenant text DEFAULT 'acme') RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.fwd(sub, tenant) - 'scopes'
$$;
-- pg_temp.as_forwarder(login, bound, sql): one statement returning jsonb in a session of login,
-- bound by the DBA to bound (as pg_temp.as_login); a refusal comes back as {sqlstate, code,
-- details, message}.  Whatever the statement did, the forwarded caller is cleared afterwards.
CREATE FUNCTION pg_temp.as_forwarder(login text, bound text, sql text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE r jsonb;
BEGIN
  r := pg_temp.as_login(login, bound, sql);
  PERFORM set_config('openwop.forwarded_caller', '', true);
  RETURN r;
END $$;
-- the router's call of openwop_forward.F(caller, args...), as a statement for as_forwarder
CREATE FUNCTION pg_temp.call(f text, caller jsonb, args text DEFAULT '') RETURNS text LANGUAGE sql AS $$
  SELECT format('SELECT to_jsonb(openwop_forward.%I(%L::jsonb%s))', f, caller, CASE WHEN args = '' THEN '' ELSE ', ' || args END)
$$;
-- the same as the router's login, bound to "*"
CREATE FUNCTION pg_temp.routed(f text, caller jsonb, args text DEFAULT '') RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_forwarder('tap_fwd_router', '*', pg_temp.call(f, caller, args))
$$;
-- a refusal's sqlstate and code, or "ok"
CREATE FUNCTION pg_temp.outcome(r jsonb) RETURNS text LANGUAGE sql AS $$
  SELECT CASE WHEN r ? 'sqlstate' AND r ? 'message' THEN (r ->> 'sqlstate') || ' ' || (r ->> 'code') ELSE 'ok' END
$$;
-- in a forwarder's session: set the forwarded caller, then run sql (returning jsonb), in that order
CREATE FUNCTION pg_temp.set_then(caller text, sql text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE r jsonb;
BEGIN
  PERFORM set_config('openwop.forwarded_caller', caller, true);
  EXECUTE sql INTO r;
  RETURN r;
END $$;
-- a refusal's sqlstate and message, or NULL
CREATE FUNCTION pg_temp.refusal_text(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE st text; msg text;
BEGIN
  EXECUTE sql;
  RETURN NULL;
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
  RETURN st || ' ' || msg;
END $$;
CREATE FUNCTION pg_temp.gate_of(run text) RETURNS openwop.interrupts LANGUAGE sql AS $$
  SELECT * FROM openwop.interrupts WHERE run_id = run AND node_id = 'gate' ORDER BY requested_sequence DESC LIMIT 1
$$;

/* ------------------------------------------------------------------
 * The wrappers
 * ------------------------------------------------------------------ */

-- every API function a caller uses has its wrapper, with the same parameters after caller
SELECT is((SELECT array_agg(p.proname::text ORDER BY p.proname)
             FROM pg_proc p
            WHERE p.pronamespace = 'openwop'::regnamespace
              AND p.proname NOT IN ('add_signing_key', 'retire_signing_key', 'add_group_member', 'remove_group_member',
                                    'sweep', 'stats_reset', 'stats_counts', 'worker_status', 'direct_path', 'inbox_waiting',
                                    'events_append_only', 'interrupts_keep_open',
                                    'export_signing_key', 'import_signing_key',
                                    'serve_database', 'listen', 'unlisten',   -- the database's own, the session's own
                                    -- policies and delegations are each database's own: set on the tenant's shard
                                    'set_approval_policy', 'retire_approval_policy', 'policy_admin_tenant',
                                    'approval_policy_log_append_only', 'delegate_approvals', 'set_delegation',
                                    'revoke_delegation', 'delegation_viewer',
                                    -- so are business calendars
                                    'set_calendar', 'calendar_due', 'calendar_log_append_only',
                                    -- and the notification outbox: a sender drains each shard's
                                    'claim_notifications', 'ack_notifications',
                                    -- the hash chain's own, run as the owner by fork_run and verify_run
                                    'event_hash', 'event_chain', 'artifact_changes_append_only')
              AND NOT EXISTS (SELECT FROM pg_proc w
                               WHERE w.pronamespace = 'openwop_forward'::regnamespace AND w.proname = p.proname
                                 AND pg_get_function_arguments(w.oid) = 'caller jsonb' || CASE WHEN p.pronargs > 0 THEN ', ' ELSE '' END
                                                                        || pg_get_function_arguments(p.oid)
                                 AND pg_get_function_result(w.oid) = pg_get_function_result(p.oid))),
          NULL, 'every_routed_function_has_its_wrapper: openwop_forward.F(caller, <F''s parameters, names and defaults>) returns what F returns');
SELECT is((SELECT pg_get_function_result(oid) FROM pg_proc WHERE oid = 'openwop_forward.pending_interrupts(jsonb)'::regprocedure),
          'SETOF openwop.pending_interrupts', 'the inbox has its wrapper: the rows of the view openwop.pending_interrupts');
SELECT is((SELECT count(*) FROM pg_proc p
            WHERE p.pronamespace = 'openwop_forward'::regnamespace
              AND NOT (NOT p.prosecdef AND p.proconfig = '{openwop.forwarded_caller=}'
                       AND pg_get_function_identity_arguments(p.oid) LIKE 'caller jsonb%')),
          0::bigint, 'wrappers_are_security_invoker_and_restore_the_setting: each is SECURITY INVOKER with SET openwop.forwarded_caller = ''''');
SELECT is((SELECT count(*) FROM pg_proc p
            WHERE p.pronamespace = 'openwop_forward'::regnamespace
              AND (p.proacl IS NULL OR EXISTS (SELECT FROM aclexplode(p.proacl) a WHERE a.grantee = 0))),
          0::bigint, 'wrappers_not_executable_by_public: EXECUTE on openwop_forward.* is revoked from PUBLIC');
SELECT is((SELECT nspacl IS NULL OR NOT EXISTS (SELECT FROM aclexplode(nspacl) a WHERE a.grantee = 0)
             FROM pg_namespace WHERE nspname = 'openwop_forward'),
          true, '... nor the schema usable by PUBLIC');
SELECT is((SELECT count(*) FROM pg_proc p
            WHERE p.pronamespace = 'openwop_forward'::regnamespace AND obj_description(p.oid, 'pg_proc') IS NULL),
          0::bigint, 'every wrapper has its comment');
SELECT is((SELECT array_agg(w.proname::text ORDER BY w.proname)
             FROM pg_proc w
            WHERE w.pronamespace = 'openwop_forward'::regnamespace AND w.proname <> 'pending_interrupts'
              AND NOT EXISTS (SELECT FROM pg_proc p WHERE p.pronamespace = 'openwop'::regnamespace AND p.proname = w.proname)),
          NULL, '... and every wrapper is of an API function');

/* ------------------------------------------------------------------
 * A forwarded caller is the caller
 * ------------------------------------------------------------------ */

SELECT is(pg_temp.routed('current_caller', pg_temp.fwd('alice')),
          jsonb_build_object('subject', pg_temp.subject('alice'), 'tenant', 'acme', 'source', 'openwop.forwarded_caller',
                             'scopes', '["approvals:respond"]'::jsonb, 'forwardedBy', 'tap_fwd_router'),
          'forwarded_caller_is_the_caller: current_caller() is the forwarded subject, tenant and scopes, with forwardedBy the router''s login');
SELECT is(pg_temp.routed('current_caller', pg_temp.fwd('viewer', 'acme', false)) -> 'scopes', '[]',
          'forwarded_scopes_are_the_routers: a caller the router gave no scope holds none on the shard');

-- the demo's shape through the wrappers: an engine raises a 2-of-2 gate, alice and bob answer it
SELECT is(pg_temp.outcome(pg_temp.routed('create_run', pg_temp.fwd('engine', 'acme', false), $$'fwd', '{"runId": "acme/fwd-run-000000001"}'$$)), 'ok',
          'a forwarded caller creates a run');
SELECT is(pg_temp.outcome(pg_temp.routed('start_node', pg_temp.fwd('engine', 'acme', false), $$'acme/fwd-run-000000001', 'gate'$$)), 'ok', '... starts a node');
SELECT is(pg_temp.routed('interrupt', pg_temp.fwd('engine', 'acme', false),
            $$'acme/fwd-run-000000001', 'gate', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc", "title": "T",
              "actions": ["accept", "reject"], "requiredApprovals": 2}}'$$) ->> 'status', 'interrupted', '... and suspends it on a gate');
SELECT is(pg_temp.routed('run_snapshot', pg_temp.fwd('engine', 'acme', false), $$'acme/fwd-run-000000001'$$) #> '{owner,subject}',
          pg_temp.subject('engine'), 'forwarded_subject_owns_the_run: the run''s owner is the forwarded subject, not the router''s login');
SELECT is((SELECT count(*) FROM jsonb_array_elements(pg_temp.as_forwarder('tap_fwd_router', '*',
            format('SELECT jsonb_agg(to_jsonb(p)) FROM openwop_forward.pending_interrupts(%L) p', pg_temp.fwd('alice'))))),
          1::bigint, 'the inbox through the wrapper: alice sees the gate');
SELECT is(pg_temp.routed('may_decide', pg_temp.fwd('alice'),
            format('%L, %L, %L, %L, NULL', 'acme', (pg_temp.gate_of('acme/fwd-run-000000001')).interrupt_id, 'approval',
                   (pg_temp.gate_of('acme/fwd-run-000000001')).payload)), 'true', '... may_decide says so');
SELECT is(pg_temp.routed('inbox_voter', pg_temp.fwd('alice')), '"alice"', '... under her own subjectId');
SELECT is(pg_temp.routed('inbox_voter', pg_temp.fwd('bob')), '"bob"',
          'inbox_caller_per_call: the next call of the transaction, for another caller, is that caller''s (the inbox keeps no caller across calls)');
SELECT is(pg_temp.as_forwarder('tap_fwd_router', '*', format('SELECT jsonb_build_array(openwop_forward.inbox_voter(%L), openwop_forward.inbox_voter(%L))',
                                                            pg_temp.fwd('alice'), pg_temp.fwd('bob'))),
          '["alice", "bob"]', '... nor across calls in one statement');
SELECT is(pg_temp.as_forwarder('tap_fwd_router', '*', format('SELECT jsonb_build_array(openwop_forward.may_decide(%L, %L, %L, %L, %L, NULL), openwop_forward.may_decide(%L, %L, %L, %L, %L, NULL))',
            pg_temp.fwd('alice'), 'acme', (pg_temp.gate_of('acme/fwd-run-000000001')).interrupt_id, 'approval', (pg_temp.gate_of('acme/fwd-run-000000001')).payload,
            pg_temp.fwd('alice', 'acme', false), 'acme', (pg_temp.gate_of('acme/fwd-run-000000001')).interrupt_id, 'approval', (pg_temp.gate_of('acme/fwd-run-000000001')).payload)),
          '[true, false]', '... may_decide neither');
SELECT is(pg_temp.routed('inbox_tenant', pg_temp.fwd('viewer', 'acme', false)), NULL, '... and a caller without the scope has no inbox');
SELECT is(pg_temp.routed('resolve_interrupt', pg_temp.fwd('alice'),
            $$'acme/fwd-run-000000001', 'gate', '{"action": "accept"}', 'fwd-key-alice-000000000001'$$) ->> 'status', 'pending',
          'alice votes through the wrapper');
SELECT is((SELECT voter_subject FROM openwop.votes WHERE interrupt_id = (pg_temp.gate_of('acme/fwd-run-000000001')).interrupt_id),
          pg_temp.subject('alice'), 'forwarded_subject_is_the_voter: the vote is recorded as alice''s Subject');
SELECT is(pg_temp.routed('resolve_interrupt', pg_temp.fwd('alice'),
            $$'acme/fwd-run-000000001', 'gate', '{"action": "accept"}', 'fwd-key-alice-000000000001'$$) ->> 'idempotentReplay', 'true',
          'retry_through_router_replays: the router retrying her call with the same Idempotency-Key gets the stored response');
SELECT is((SELECT count(*) FROM openwop.votes WHERE interrupt_id = (pg_temp.gate_of('acme/fwd-run-000000001')).interrupt_id),
          1::bigint, '... and no second vote');
SELECT is(pg_temp.routed('resolve_interrupt', pg_temp.fwd('bob'),
            $$'acme/fwd-run-000000001', 'gate', '{"action": "accept"}', 'fwd-key-alice-000000000001'$$) ->> 'code', 'idempotency_key_mismatch',
          '... which belongs to her: bob with her key is refused');
SELECT is(pg_temp.routed('resolve_interrupt', pg_temp.fwd('bob'), $$'acme/fwd-run-000000001', 'gate', '{"action": "accept"}'$$) ->> 'decision',
          'granted', 'bob''s vote decides the gate');
SELECT is((SELECT e -> 'payload' -> 'resolvedBy' FROM openwop.events('acme/fwd-run-000000001') e WHERE e ->> 'type' = 'interrupt.resolved'),
          pg_temp.subject('bob'), 'forwarded_subject_on_events: interrupt.resolved records bob''s Subject as resolvedBy');
SELECT is((SELECT count(*) FROM openwop.events('acme/fwd-run-000000001') e WHERE e::text LIKE '%tap_fwd_router%'),
          0::bigint, '... and the router''s login appears nowhere in the log');
SELECT is(pg_temp.routed('resolve_interrupt', pg_temp.fwd('viewer', 'acme', false), $$'acme/fwd-run-000000001', 'gate', '{"action": "accept"}'$$)
            ->> 'code', 'forbidden', 'a forwarded caller without approvals:respond cannot resolve');
SELECT is(jsonb_array_length(pg_temp.as_forwarder('tap_fwd_router', '*',
            format('SELECT jsonb_agg(e) FROM openwop_forward.events(%L, %L, 0, 2) e', pg_temp.fwd('engine'), 'acme/fwd-run-000000001'))),
          2, 'events through the wrapper: its parameters and defaults as openwop.events');

/* ------------------------------------------------------------------
 * The setting never outlives the call
 * ------------------------------------------------------------------ */

SELECT is(pg_temp.as_forwarder('tap_fwd_router', '*',
            format($$ SELECT jsonb_build_array(openwop_forward.current_caller(%L) #>> '{subject,subjectId}',
                                               openwop.current_caller() #>> '{subject,subjectId}',
                                               current_setting('openwop.forwarded_caller')) $$, pg_temp.fwd('alice'))),
          '["alice", "tap_fwd_router", ""]',
          'wrapper_undoes_setting: right after a wrapper returns, in the same statement and transaction, the caller is the router''s login again');
SELECT is(pg_temp.as_forwarder('tap_fwd_router', '*',
            format($$ SELECT jsonb_build_array(
                       (SELECT count(*) FROM openwop_forward.pending_interrupts(%L)),
                       (SELECT count(*) FROM openwop_forward.events(%L, 'acme/fwd-run-000000001')) > 0,
                       current_setting('openwop.forwarded_caller')) $$, pg_temp.fwd('alice'), pg_temp.fwd('engine'))),
          '[0, true, ""]', '... and after the wrappers that return rows');
CREATE FUNCTION pg_temp.caller_after_failed_wrapper() RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
  BEGIN
    PERFORM openwop_forward.run_snapshot(pg_temp.fwd('alice'), 'acme/fwd-no-such-run-00001');
  EXCEPTION WHEN OTHERS THEN
    NULL;
  END;
  RETURN jsonb_build_array(openwop.current_caller() #>> '{subject,subjectId}', current_setting('openwop.forwarded_caller'));
END $$;
SELECT is(pg_temp.as_forwarder('tap_fwd_router', '*', 'SELECT pg_temp.caller_after_failed_wrapper()'),
          '["tap_fwd_router", ""]', 'wrapper_undoes_setting_on_error: a wrapper that fails leaves no forwarded caller behind');
SELECT is(pg_temp.routed('run_snapshot', NULL, $$'acme/fwd-run-000000001'$$) -> 'details' ->> 'field', 'openwop.forwarded_caller',
          'null_caller_refused: a wrapper given no caller is refused, never run as the router''s login');
SELECT is(pg_temp.routed('run_snapshot', '""', $$'acme/fwd-run-000000001'$$) -> 'details' ->> 'field', 'openwop.forwarded_caller',
          '... nor an empty one');

/* ------------------------------------------------------------------
 * Only a forwarder forwards
 * ------------------------------------------------------------------ */

SELECT is(pg_temp.as_forwarder('tap_fwd_outsider', '*', format($$ SELECT to_jsonb(set_config('openwop.forwarded_caller', %L, true)) $$, pg_temp.fwd('cfo')))
            ->> 'sqlstate', '42501',
          'direct_caller_cannot_pose_as_forwarded: a login outside openwop.forwarding_role cannot set openwop.forwarded_caller (42501)');
SELECT is(pg_temp.as_forwarder('tap_fwd_outsider', '*', pg_temp.call('current_caller', pg_temp.fwd('cfo'))) ->> 'sqlstate', '42501',
          '... nor through a wrapper it was granted');
SELECT is(pg_temp.as_forwarder('tap_fwd_outsider', '*', pg_temp.call('resolve_interrupt', pg_temp.fwd('cfo'),
            $$'acme/fwd-run-000000001', 'gate', '{"action": "accept"}'$$)) ->> 'sqlstate', '42501', '... to resolve as someone else');
SELECT is(pg_temp.refusal(format($$ SET LOCAL openwop.forwarded_caller = %L $$, pg_temp.fwd('cfo'))) ->> 'sqlstate', '42501',
          'superuser_is_not_a_forwarder: superuser status does not make a session a forwarder');
SELECT is(pg_temp.as_forwarder('tap_fwd_outsider', '*', $$ SELECT to_jsonb(set_config('openwop.forwarded_caller', '', true)) $$), '""',
          '(clearing it is always allowed)');
SET LOCAL openwop.forwarding_role = '';
SELECT is(pg_temp.routed('current_caller', pg_temp.fwd('alice')) ->> 'sqlstate', '42501',
          'no_forwarding_role_no_forwarder: with openwop.forwarding_role empty, not even the router''s login forwards');
SET LOCAL openwop.forwarding_role = 'tap_fwd_no_such_role';
SELECT is(pg_temp.routed('current_caller', pg_temp.fwd('alice')) ->> 'sqlstate', '42501', '... nor when it names no role');
SET LOCAL openwop.forwarding_role = 'tap_fwd_forwarders';
-- set while the session was a forwarder, read when it no longer is: refused, never ignored
GRANT tap_fwd_forwarders TO CURRENT_USER;
SELECT set_config('openwop.forwarded_caller', pg_temp.fwd('alice')::text, true);
SELECT is(openwop.current_caller() ->> 'forwardedBy', current_user::text, '(a member, the test login forwards)');
REVOKE tap_fwd_forwarders FROM CURRENT_USER;
SELECT is(pg_temp.refusal('SELECT openwop.current_caller()'),
          '{"sqlstate": "PT403", "code": "forbidden", "details": {"setting": "openwop.forwarded_caller"}}',
          'forwarded_caller_never_ignored: a session that may no longer forward is refused with its forwarded caller set, not taken as itself');
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/fwd-run-000000001', 'gate', '{"action": "accept"}') $$) ->> 'code', 'forbidden',
          '... in every API function');
SET LOCAL openwop.forwarded_caller = '';
SELECT is(openwop.current_caller() #>> '{subject,subjectId}', current_user::text, '(cleared, the session is its login again)');

/* ------------------------------------------------------------------
 * The tenant is the forwarded one, within the forwarder's binding
 * ------------------------------------------------------------------ */

SELECT is(pg_temp.as_forwarder('tap_fwd_acme_router', 'acme', pg_temp.call('current_caller', pg_temp.fwd('alice'))) ->> 'tenant', 'acme',
          'a router login bound to acme forwards callers of acme');
SELECT is(pg_temp.as_forwarder('tap_fwd_acme_router', 'acme', pg_temp.call('current_caller', pg_temp.fwd('alice', 'globex'))) - 'message',
          '{"sqlstate": "PT403", "code": "id_tenant_mismatch", "details": {"tenant": "globex", "callerTenant": "acme"}}',
          'forwarder_cannot_leave_its_bound_tenant: a router login bound to acme cannot forward a caller of globex');
SELECT is(pg_temp.as_forwarder('tap_fwd_unbound_router', NULL, pg_temp.call('current_caller', pg_temp.fwd('alice', 'default'))) ->> 'tenant', 'default',
          'an unbound router login forwards callers of openwop.default_tenant');
SELECT is(pg_temp.as_forwarder('tap_fwd_unbound_router', NULL, pg_temp.call('current_caller', pg_temp.fwd('alice'))) ->> 'code', 'id_tenant_mismatch',
          'unbound_forwarder_forwards_default_tenant_only: ... and no other');
-- the forwarder's own session settings do not move the forwarded caller
SET LOCAL openwop.tenant = 'globex';
SELECT is(pg_temp.routed('current_caller', pg_temp.fwd('alice')) ->> 'tenant', 'acme',
          'forwarded_tenant_not_overridden_by_openwop_tenant: openwop.tenant set in the router''s session does not change the forwarded tenant');
SELECT is(pg_temp.routed('run_snapshot', pg_temp.fwd('alice', 'globex'), $$'acme/fwd-run-000000001'$$) ->> 'code', 'id_tenant_mismatch',
          'forwarded_caller_cannot_change_its_tenant: a caller of globex cannot read a run of acme, whatever the router''s session says');
SET LOCAL openwop.tenant = 'acme';
GRANT openwop_tap_authenticator TO tap_fwd_router;
SET LOCAL openwop.jwt_session_role = 'openwop_tap_authenticator';
SET LOCAL request.jwt.claims = '{"sub": "cfo@example.org", "tenant": "globex", "scope": "approvals:respond"}';
SELECT is(pg_temp.as_forwarder('tap_fwd_router', '*', 'SELECT openwop.current_caller()') #>> '{subject,subjectId}', 'cfo@example.org',
          '(the router''s login is also a request session here: its own calls are its claims'')');
SELECT is(pg_temp.routed('current_caller', pg_temp.fwd('alice', 'acme', false)) - 'forwardedBy',
          jsonb_build_object('subject', pg_temp.subject('alice'), 'tenant', 'acme', 'source', 'openwop.forwarded_caller', 'scopes', '[]'::jsonb),
          'claims_do_not_override_forwarded_caller: neither the claims'' subject, tenant nor scope replaces the forwarded caller''s');
RESET request.jwt.claims;
RESET openwop.jwt_session_role;
REVOKE openwop_tap_authenticator FROM tap_fwd_router;
-- a forwarded caller speaks for one subject in one tenant, never for all of them
SELECT is(pg_temp.as_forwarder('tap_fwd_router', '*', format('SELECT pg_temp.set_then(%L, %L)', pg_temp.fwd('alice'), 'SELECT to_jsonb(openwop.sweep())'))
            ->> 'code', 'id_tenant_mismatch', 'forwarded_caller_never_every_tenant: sweep() refuses a forwarded caller, though the router''s login is bound to *');

/* ------------------------------------------------------------------
 * What a forwarded caller may be: member by member
 * ------------------------------------------------------------------ */

CREATE FUNCTION pg_temp.forwarded_refusal(caller text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_forwarder('tap_fwd_router', '*', format('SELECT pg_temp.set_then(%L, %L)', caller, 'SELECT openwop.current_caller()')) - 'message'
$$;
SELECT is(pg_temp.forwarded_refusal('not json'),
          '{"sqlstate": "PT400", "code": "validation_error", "details": {"field": "openwop.forwarded_caller"}}',
          'malformed_forwarded_caller_refused: text that is not JSON');
SELECT is(pg_temp.forwarded_refusal('["alice"]') -> 'details' ->> 'field', 'openwop.forwarded_caller', '... an array');
SELECT is(pg_temp.forwarded_refusal('{"issuer": "https://idp.example.org", "subjectId": "al\u0000ice"}') -> 'details' ->> 'field',
          'openwop.forwarded_caller', '... a string holding \u0000, refused as a refusal, not a jsonb error');
SELECT is(pg_temp.forwarded_refusal((pg_temp.fwd('alice') || jsonb_build_object('padding', repeat('x', 17000)))::text)
            -> 'details' ->> 'field', 'openwop.forwarded_caller',
          'oversized_forwarded_caller_refused: longer than 16384 bytes, refused before it is parsed');
SELECT is(pg_temp.forwarded_refusal((pg_temp.fwd('alice') || '{"roles": ["finance"]}')::text),
          '{"sqlstate": "PT400", "code": "validation_error", "details": {"field": "openwop.forwarded_caller.roles"}}',
          'unknown_member_refused: a forwarded caller is a closed object');
SELECT is(pg_temp.forwarded_refusal((pg_temp.fwd('alice') - 'tenant')::text) -> 'details' ->> 'field', 'openwop.forwarded_caller.tenant',
          'missing_member_refused: every member is required (no default tenant for a forwarded caller)');
SELECT is(pg_temp.forwarded_refusal((pg_temp.fwd('alice') - 'scopes')::text) -> 'details' ->> 'field', 'openwop.forwarded_caller.scopes',
          '... scopes too');
SELECT is(pg_temp.forwarded_refusal((pg_temp.fwd('alice') || '{"subjectId": 7}')::text) -> 'details' ->> 'field', 'openwop.forwarded_caller.subjectId',
          'mistyped_member_refused: a subjectId that is not a string');
SELECT is(pg_temp.forwarded_refusal((pg_temp.fwd('alice') || '{"scopes": "approvals:respond"}')::text) -> 'details' ->> 'field',
          'openwop.forwarded_caller.scopes', '... scopes that are not an array');
SELECT is(pg_temp.forwarded_refusal(pg_temp.fwd('al/ice')::text) -> 'details' ->> 'field', 'openwop.forwarded_caller.subjectId',
          'subject_grammar_holds: a subjectId with "/"');
SELECT is(pg_temp.forwarded_refusal(pg_temp.fwd(repeat('a', 257))::text) -> 'details' ->> 'field', 'openwop.forwarded_caller.subjectId',
          '... longer than 256 characters');
SELECT is(pg_temp.forwarded_refusal((pg_temp.fwd('alice') || '{"issuer": "https://idp example"}')::text) -> 'details' ->> 'field',
          'openwop.forwarded_caller.issuer', '... an issuer with white space');
SELECT is(pg_temp.forwarded_refusal(pg_temp.fwd('alice', 'ac me')::text),
          '{"sqlstate": "PT400", "code": "validation_error", "details": {"field": "tenant"}}',
          'tenant_grammar_holds: a tenant outside the tenant grammar');
SELECT is(pg_temp.forwarded_refusal((pg_temp.fwd('alice') || '{"lane": "mtls"}')::text) -> 'details' ->> 'field', 'openwop.forwarded_caller.lane',
          'lane_is_one_a_caller_has: session, oauth2 or anonymous only');
SELECT is(pg_temp.forwarded_refusal((pg_temp.fwd('alice') || '{"kind": "workload"}')::text) -> 'details' ->> 'field', 'openwop.forwarded_caller.kind',
          'kind_is_one_a_caller_has: user or anonymous only');
SELECT is(pg_temp.forwarded_refusal((pg_temp.fwd('alice') || '{"kind": "anonymous"}')::text) -> 'details' ->> 'field', 'openwop.forwarded_caller.kind',
          '... and anonymous only with the lane anonymous');
SELECT is(pg_temp.forwarded_refusal((pg_temp.fwd('alice') || '{"scopes": ["approvals:respond", "admin"]}')::text) -> 'details' ->> 'field',
          'openwop.forwarded_caller.scopes', 'unknown_scope_refused: only the scopes this host knows');
SELECT is(pg_temp.forwarded_refusal((pg_temp.fwd('alice') || '{"scopes": ["approvals:respond", "approvals:respond"]}')::text) -> 'details' ->> 'field',
          'openwop.forwarded_caller.scopes', '... each once');
SELECT is(pg_temp.forwarded_refusal((pg_temp.fwd('alice') || '{"issuer": "urn:openwop-interrupt:host"}')::text) -> 'details' ->> 'field',
          'openwop.forwarded_caller.issuer', 'host_subjects_not_forwarded: a JWT subject cannot claim an issuer of this host''s own subjects');
SELECT is(pg_temp.forwarded_refusal((pg_temp.fwd('alice') || '{"issuer": "URN:OpenWOP:legacy"}')::text) -> 'details' ->> 'field',
          'openwop.forwarded_caller.issuer', '... nor OpenWOP''s, in any case');
SELECT is(pg_temp.forwarded_refusal((pg_temp.fwd('alice') || '{"lane": "session"}')::text) -> 'details' ->> 'field',
          'openwop.forwarded_caller.issuer', 'session_subject_is_a_login: lane session goes with the issuer urn:openwop-interrupt:session only');
SELECT is(pg_temp.forwarded_refusal('{"issuer": "urn:openwop-interrupt:anon-surface", "subjectId": "cfo", "tenant": "acme",
                                      "lane": "anonymous", "kind": "anonymous", "scopes": []}') -> 'details' ->> 'field',
          'openwop.forwarded_caller.lane', 'anonymous_is_anonymous: the anonymous lane is the subject "anonymous" only');
SELECT is(pg_temp.forwarded_refusal('{"issuer": "urn:openwop-interrupt:anon-surface", "subjectId": "anonymous", "tenant": "acme",
                                      "lane": "anonymous", "kind": "anonymous", "scopes": ["approvals:respond"]}') -> 'details' ->> 'field',
          'openwop.forwarded_caller.scopes', 'anonymous_holds_no_scope: an anonymous caller forwarded with a scope is refused');
SELECT is(pg_temp.forwarded_refusal(pg_temp.fwd('token-holder')::text),
          '{"sqlstate": "PT403", "code": "forbidden", "details": {"subjectId": "token-holder"}}',
          'token_holder_reserved: no forwarded caller may be the holder of bare tokens');
SELECT is(pg_temp.routed('current_caller', '{"issuer": "urn:openwop-interrupt:anon-surface", "subjectId": "anonymous", "tenant": "acme",
                                             "lane": "anonymous", "kind": "anonymous", "scopes": []}') #>> '{subject,lane}',
          'anonymous', 'an anonymous request is forwarded as one');
SELECT is(pg_temp.routed('current_caller', '{"issuer": "urn:openwop-interrupt:session", "subjectId": "carol", "tenant": "acme",
                                             "lane": "session", "kind": "user", "scopes": []}') #>> '{subject,subjectId}',
          'carol', 'a router''s SQL login is forwarded as its session subject');
SELECT is(pg_temp.routed('current_caller', pg_temp.fwd('alice') || '{"issuer": "urn:openwop-interrupt:jwt"}') #>> '{subject,issuer}',
          'urn:openwop-interrupt:jwt', 'a JWT subject without iss is forwarded under the host''s JWT issuer');
-- a router's login is not a login of the shard: approverRoleRefs never match a forwarded caller
CREATE ROLE tap_fwd_treasury;
CREATE ROLE tap_fwd_carol LOGIN;
GRANT tap_fwd_treasury TO tap_fwd_carol;
SELECT openwop.create_run('fwd', '{"runId": "acme/fwd-roles-00000001"}');
SELECT openwop.start_node('acme/fwd-roles-00000001', 'gate');
SELECT openwop.interrupt('acme/fwd-roles-00000001', 'gate', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc",
          "title": "T", "actions": ["accept"], "approverRoleRefs": ["tap_fwd_treasury"]}}');
SELECT is(pg_temp.routed('resolve_interrupt', '{"issuer": "urn:openwop-interrupt:session", "subjectId": "tap_fwd_carol", "tenant": "acme",
                                                "lane": "session", "kind": "user", "scopes": ["approvals:respond"]}',
                         $$'acme/fwd-roles-00000001', 'gate', '{"action": "accept"}'$$) ->> 'code', 'forbidden',
          'role_refs_match_shard_logins_only: a forwarded session subject named like a shard login does not hold that login''s roles');

/* ------------------------------------------------------------------
 * Only the session's own code sets it
 * ------------------------------------------------------------------ */

-- mallory owns code that the forwarder's session may come to run
CREATE ROLE tap_fwd_mallory LOGIN;
CREATE SCHEMA fwd_mallory AUTHORIZATION tap_fwd_mallory;
GRANT USAGE ON SCHEMA fwd_mallory TO tap_fwd_router;
SET LOCAL ROLE tap_fwd_mallory;
CREATE TABLE fwd_mallory.docs (i int);
CREATE FUNCTION fwd_mallory.pose(i int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $f$
BEGIN
  PERFORM set_config('openwop.forwarded_caller', '{"issuer": "https://idp.example.org", "subjectId": "cfo", "tenant": "acme", "lane": "oauth2", "kind": "user", "scopes": ["approvals:respond"]}', true);
  RETURN i;
END $f$;
CREATE FUNCTION fwd_mallory.definer() RETURNS int LANGUAGE sql SECURITY DEFINER AS $f$ SELECT fwd_mallory.pose(1) $f$;
CREATE FUNCTION fwd_mallory.clear() RETURNS int LANGUAGE plpgsql SECURITY DEFINER AS $f$
BEGIN
  RESET openwop.forwarded_caller;
  RETURN 1;
END $f$;
CREATE FUNCTION fwd_mallory.pose_trigger() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  PERFORM fwd_mallory.pose(NEW.i);
  RETURN NEW;
END $f$;
CREATE TRIGGER docs_pose AFTER INSERT ON fwd_mallory.docs FOR EACH ROW EXECUTE FUNCTION fwd_mallory.pose_trigger();
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA fwd_mallory TO tap_fwd_router;
RESET ROLE;
SELECT alike(pg_temp.as_forwarder('tap_fwd_router', '*', 'SELECT to_jsonb(fwd_mallory.definer())') ->> 'message',
            '%cannot be set inside a SECURITY DEFINER function%',
            'forwarded_caller_not_set_in_security_definer: a SECURITY DEFINER function cannot set it, even in the router''s session');
SELECT is(pg_temp.as_forwarder('tap_fwd_router', '*', 'SELECT to_jsonb(fwd_mallory.pose(1))'), '1',
          '(control: the same code run as the router''s own sets it)');
-- the test login becomes a forwarder, so that only the foreign code is what refuses below
GRANT tap_fwd_forwarders TO CURRENT_USER;
SELECT alike(pg_temp.refusal_text('INSERT INTO fwd_mallory.docs VALUES (1)'),
            '42501 %cannot be set inside a SECURITY DEFINER function, a security-restricted operation, a trigger%',
            'forwarded_caller_not_set_in_trigger: a trigger cannot set it');
DROP TRIGGER docs_pose ON fwd_mallory.docs;
INSERT INTO fwd_mallory.docs VALUES (1);
SELECT alike(pg_temp.refusal_text('CREATE INDEX docs_pose_idx ON fwd_mallory.docs (fwd_mallory.pose(i))'),
            '42501 %cannot be set inside a SECURITY DEFINER function, a security-restricted operation%',
            'forwarded_caller_not_set_in_index_expression: an index expression (a security-restricted operation) cannot set it');
SELECT is(pg_temp.refusal_text('SELECT fwd_mallory.pose(1)'), NULL, '(control: the test login, now a forwarder, sets it with the same code run as itself)');
SET LOCAL openwop.forwarded_caller = '';
REVOKE tap_fwd_forwarders FROM CURRENT_USER;
SELECT is(pg_temp.as_forwarder('tap_fwd_router', '*',
              format('SELECT pg_temp.set_then(%L, %L)', pg_temp.fwd('alice'),
                   'SELECT CASE WHEN fwd_mallory.clear() = 1 THEN openwop.current_caller() END')) - 'message',
          '{"sqlstate": "PT403", "code": "forbidden", "details": {"context": "a call whose forwarded caller was changed by a SECURITY DEFINER function or a security-restricted operation"}}',
          'forwarded_caller_reset_in_security_definer_names_no_caller: after a SECURITY DEFINER function reset it, the router''s session names no caller, not even itself');
SELECT is(pg_temp.refusal(format('ALTER ROLE tap_fwd_router SET openwop.forwarded_caller = %L', pg_temp.fwd('cfo'))) ->> 'sqlstate', '42501',
          'forwarded_caller_has_no_role_default: no DBA default gives a login a forwarded caller');
SELECT is(pg_temp.refusal(format('ALTER DATABASE %I SET openwop.forwarded_caller = %L', current_database(), pg_temp.fwd('cfo'))) ->> 'sqlstate', '42501',
          '... nor a database default');
SELECT is(pg_temp.refusal(format($$ CREATE FUNCTION fwd_mallory.as_cfo() RETURNS int LANGUAGE sql SET openwop.forwarded_caller = %L AS 'SELECT 1' $$,
                                 pg_temp.fwd('cfo'))) ->> 'sqlstate', '42501',
          'forwarded_caller_not_from_function_set_clause: a function cannot carry one in its SET clause');
SELECT is(pg_temp.as_forwarder('tap_fwd_router', '*', $$ SELECT to_jsonb(set_config('openwop.forwarding_role', 'tap_fwd_router', true)) $$) ->> 'sqlstate',
          '42501', 'forwarding_role_is_superuser_only: the router''s login cannot name the forwarding role itself');

/* ------------------------------------------------------------------
 * ow_router_caller: the router's caller()
 * ------------------------------------------------------------------ */

CREATE FUNCTION pg_temp.router_caller() RETURNS jsonb AS '$libdir/openwop_interrupt', 'ow_router_caller' LANGUAGE C;
SELECT is(pg_temp.router_caller() - 'privileges',
          jsonb_build_object('issuer', 'urn:openwop-interrupt:session', 'subjectId', current_user, 'tenant', 'acme',
                             'lane', 'session', 'kind', 'user', 'scopes', '["approvals:respond"]'::jsonb),
          'router_caller_is_the_session_caller: a SQL login''s subject, its tenant and its scope, in the forwarded form');
SELECT is(pg_temp.as_request('{"sub": "cfo@example.org", "iss": "https://idp.example.org", "tenant": "acme", "scope": "openid approvals:respond"}',
                             'SELECT pg_temp.router_caller()') - 'privileges',
          pg_temp.fwd('cfo@example.org'), '... a request session''s JWT subject, tenant and scope claim');
SELECT is(pg_temp.router_caller() -> 'privileges', '["readEventLogs"]',
          'router_caller_privileges: what this database''s grants give the role (EXECUTE on openwop.events(); no openwop.token_issuer_role here)');
SELECT is(pg_temp.as_request('{"tenant": "acme"}', 'SELECT pg_temp.router_caller()') -> 'privileges', NULL,
          '... none for an anonymous request');
SELECT is(pg_temp.as_request('{"tenant": "acme"}', 'SELECT pg_temp.router_caller()') #>> '{lane}', 'anonymous',
          '... an anonymous request''s');
SELECT is(pg_temp.routed('current_caller', pg_temp.as_request('{"sub": "cfo@example.org", "iss": "https://idp.example.org", "tenant": "acme"}',
                                                              'SELECT pg_temp.router_caller()')) -> 'subject',
          pg_temp.subject('cfo@example.org'), 'router_caller_round_trip: what it returns, a shard takes as the same caller');
SELECT is(pg_temp.routed('current_caller', pg_temp.router_caller()) - 'forwardedBy' - 'source',
          openwop.current_caller() - 'source', '... a SQL login''s too');
SET LOCAL ROLE tap_fwd_mallory;
CREATE FUNCTION fwd_mallory.router_caller_definer() RETURNS jsonb LANGUAGE sql SECURITY DEFINER AS $f$ SELECT pg_temp.router_caller() $f$;
RESET ROLE;
GRANT USAGE ON SCHEMA openwop TO tap_fwd_mallory;
GRANT EXECUTE ON FUNCTION openwop.current_caller() TO tap_fwd_mallory;
SET LOCAL ROLE tap_fwd_mallory;
CREATE FUNCTION fwd_mallory.current_caller_definer() RETURNS jsonb LANGUAGE sql SECURITY DEFINER AS $f$ SELECT openwop.current_caller() $f$;
RESET ROLE;
SELECT is(pg_temp.refusal('SELECT fwd_mallory.router_caller_definer()'),
          '{"sqlstate": "PT403", "code": "forbidden", "details": {"context": "a SECURITY DEFINER function"}}',
          'router_caller_refuses_where_current_caller_does: in a SECURITY DEFINER function it is refused ...');
SELECT is(pg_temp.refusal('SELECT fwd_mallory.router_caller_definer()'), pg_temp.refusal('SELECT fwd_mallory.current_caller_definer()'),
          '... as current_caller() is');
SELECT is(pg_temp.as_login('tap_fwd_acme_router', 'acme', $$ SELECT pg_temp.router_caller() FROM (SELECT set_config('openwop.tenant', 'globex', true)) s $$) - 'message',
          '{"sqlstate": "PT403", "code": "id_tenant_mismatch", "details": {"tenant": "globex", "callerTenant": "acme"}}',
          '... and for a bound login naming another tenant');
SET LOCAL openwop.tenant = 'acme';
-- in a database without the openwop schema (a router database): here, the schema out of the way for a moment
ALTER SCHEMA openwop RENAME TO openwop_tap_elsewhere;
SELECT is(pg_temp.router_caller() ->> 'subjectId', current_user::text,
          'router_caller_without_the_schema: it reads no table, so a router database needs only the library');
ALTER SCHEMA openwop_tap_elsewhere RENAME TO openwop;

SELECT * FROM finish();
ROLLBACK;
