-- Attacks on the router's hop, shard side (issue 17 review).  On a single
-- server two privileges are grants the caller's own role must hold: minting
-- a resolve token (openwop.token_issuer_role) and reading FlowDrop entries
-- without approvals:respond (EXECUTE on openwop.events()).  Through a router
-- the session is the router's login, which holds both to serve whoever may
-- have them, so a forwarded caller must not inherit them from it: the
-- router has to say so for that caller, as it says approvals:respond.
-- test/checks/router_attacks.sh plays the same attacks through a router.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir refusal.psql
\ir callers.psql

-- the router's login: a forwarder bound to "*", a token issuer (docs/scale-out.md
-- grants it openwop_token_issuer for minting through the router), EXECUTE on everything
CREATE ROLE tap_r37_forwarders;
CREATE ROLE tap_r37_issuers;
CREATE ROLE tap_r37_router LOGIN IN ROLE tap_r37_forwarders, tap_r37_issuers;
GRANT USAGE ON SCHEMA openwop, openwop_forward TO tap_r37_router;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop, openwop_forward TO tap_r37_router;
SET LOCAL openwop.forwarding_role = 'tap_r37_forwarders';
SET LOCAL openwop.token_issuer_role = 'tap_r37_issuers';

-- a forwarded JWT subject of acme, with or without approvals:respond
CREATE FUNCTION pg_temp.fwd(sub text, approver boolean) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('issuer', 'https://idp.example.org', 'subjectId', sub, 'tenant', 'acme',
                            'lane', 'oauth2', 'kind', 'user',
                            'scopes', CASE WHEN approver THEN '["approvals:respond"]'::jsonb ELSE '[]'::jsonb END)
$$;
-- openwop_forward.f(caller, args) as the router's login calls it: its result as jsonb, or the refusal
CREATE FUNCTION pg_temp.routed(f text, caller jsonb, args text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE r jsonb;
BEGIN
  r := pg_temp.as_login('tap_r37_router', '*',
                        format('SELECT to_jsonb(openwop_forward.%I(%L::jsonb, %s))', f, caller, args));
  PERFORM set_config('openwop.forwarded_caller', '', true);
  RETURN r;
END $$;
CREATE FUNCTION pg_temp.code(r jsonb) RETURNS text LANGUAGE sql AS $$
  SELECT CASE WHEN jsonb_typeof(r) = 'object' AND r ? 'sqlstate' THEN (r ->> 'sqlstate') || ' ' || (r ->> 'code') ELSE 'ok' END
$$;

-- a pending gate only alice may decide
SELECT openwop.add_signing_key('tap-r37-key') IS NOT NULL AS key_added \gset
SELECT openwop.create_run('r37', '{"runId": "acme/r37-only-alice-00001"}') ->> 'status' AS created \gset
SELECT openwop.start_node('acme/r37-only-alice-00001', 'gate') ->> 'status' AS started \gset
SELECT openwop.interrupt('acme/r37-only-alice-00001', 'gate', '{"kind": "approval", "data": {"artifactId": "a",
         "artifactType": "doc", "title": "T", "actions": ["accept", "reject"], "approversList": ["alice"]}}')
       #>> '{metadata,interrupt,id}' AS gate \gset
-- its FlowDrop id (INT-22): the UUID its opaque segment's 16 bytes are
SELECT encode(decode(translate(split_part(:'gate', '/', 2), '-_', '+/') || '==', 'base64'), 'hex')::uuid::text AS gate_uuid \gset

/* ------------------------------------------------------------------
 * Minting: the router's login is an issuer, its callers are not
 * ------------------------------------------------------------------ */

SELECT is(pg_temp.code(pg_temp.routed('mint_interrupt_token', pg_temp.fwd('linker', false),
            format('%L, %L, NULL, %L', :'gate', 'resolve', 'alice'))),
          'PT403 forbidden',
          'forwarded_caller_is_no_token_issuer: a forwarded caller the router made no issuer mints no resolve token, though the router''s login is one');
SELECT is(pg_temp.code(pg_temp.routed('mint_interrupt_token', pg_temp.fwd('mallory', true),
            format('%L, %L, NULL, %L', :'gate', 'resolve', 'alice'))),
          'PT403 forbidden',
          '... nor does an approver (approvals:respond is no right to issue credentials for others)');
SELECT is(pg_temp.code(pg_temp.routed('mint_interrupt_token', pg_temp.fwd('linker', false),
            format('%L, %L', :'gate', 'inspect'))),
          'ok', 'forwarded_caller_mints_inspect_tokens: an inspect token needs EXECUTE only, as on a single server');

/* ------------------------------------------------------------------
 * FlowDrop entries: the router's login may read event logs, its callers may not
 * ------------------------------------------------------------------ */

SELECT is(pg_temp.code(pg_temp.routed('flowdrop_interrupt', pg_temp.fwd('viewer', false), quote_literal(:'gate'))),
          'PT403 forbidden',
          'forwarded_caller_reads_no_event_log_by_the_routers_grant: a forwarded caller without approvals:respond reads no FlowDrop entry, though the router''s login may execute events()');
SELECT is(pg_temp.code(pg_temp.routed('flowdrop_interrupts', pg_temp.fwd('viewer', false), quote_literal(ARRAY[:'gate']))),
          'PT403 forbidden', '... nor a list of them');
SELECT is(pg_temp.routed('flowdrop_interrupt', pg_temp.fwd('alice', true), quote_literal(:'gate')) ->> 'id',
          :'gate_uuid', 'forwarded_approver_reads_flowdrop_entries: with approvals:respond it does, as on a single server');

/* ------------------------------------------------------------------
 * What the router forwards: privileges it decided for its own caller
 * ------------------------------------------------------------------ */

SELECT is(pg_temp.code(pg_temp.routed('mint_interrupt_token',
            pg_temp.fwd('linker', false) || '{"privileges": ["mintResolveTokens"]}',
            format('%L, %L, NULL, %L', :'gate', 'resolve', 'alice'))),
          'ok', 'forwarded_issuer_mints_resolve_tokens: a caller the router made an issuer mints, the router''s login being one here');
SELECT is(pg_temp.routed('flowdrop_interrupt', pg_temp.fwd('viewer', false) || '{"privileges": ["readEventLogs"]}',
            quote_literal(:'gate')) ->> 'id',
          :'gate_uuid', 'forwarded_reader_reads_flowdrop_entries: a caller the router lets read event logs reads entries');
SELECT is(pg_temp.code(pg_temp.routed('run_snapshot', pg_temp.fwd('viewer', false) || '{"privileges": ["superuser"]}', quote_literal('acme/r37-only-alice-00001'))),
          'PT400 validation_error', 'forwarded_privileges_closed: a privilege this host does not know is refused');
SELECT is(pg_temp.code(pg_temp.routed('run_snapshot',
            '{"issuer": "urn:openwop-interrupt:anon-surface", "subjectId": "anonymous", "tenant": "acme", "lane": "anonymous",
              "kind": "anonymous", "scopes": [], "privileges": ["readEventLogs"]}', quote_literal('acme/r37-only-alice-00001'))),
          'PT400 validation_error', 'forwarded_anonymous_has_no_privileges: an anonymous caller is forwarded with none');

SELECT * FROM finish();
ROLLBACK;
