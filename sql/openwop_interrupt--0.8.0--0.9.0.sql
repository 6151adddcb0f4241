/*
 * openwop_interrupt 0.8.0 -> 0.9.0: forwarding.  A shard behind a router
 * (openwop_router, PL/Proxy) believes the caller a router forwards:
 * schema openwop_forward, one function per routed API function, each
 * calling openwop.F for the caller it is given (openwop.forwarded_caller,
 * believed only from a member of openwop.forwarding_role), and
 * current_caller()'s comment naming forwardedBy.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION openwop_interrupt UPDATE TO '0.9.0'" to load this file. \quit

-- == 0.9.0: forwarding (begin) ==
/* ------------------------------------------------------------------------
 * openwop_forward: the API as a router (openwop_router, PL/Proxy) calls
 * it on a shard (docs/scale-out.md).  One function per routed function
 * openwop.F: openwop_forward.F(caller, <F's own parameters>) sets
 * openwop.forwarded_caller to caller for the call of openwop.F it makes
 * and returns what that returns.  caller is the router's caller, as the
 * router's openwop_router.caller() decided it; it counts only in a
 * session of a member of openwop.forwarding_role (the router's login), and
 * a forwarded tenant must be one that login's own openwop.bound_tenant
 * allows.  Any other session is refused as it sets it (42501).
 *
 * SECURITY INVOKER: the call is the router login's, with its EXECUTE on
 * openwop.F.  The SET clause restores openwop.forwarded_caller when the
 * function returns (or fails), so the set_config(..., true) of its body
 * never outlives it: the next statement of the session is the router's
 * login again.  A NULL caller is refused by the call, never taken as none.
 * PL/pgSQL, whose plans last the session (a SQL function is planned anew
 * by each statement that calls it, every remote call of the router):
 * RETURN QUERY reads every row while the caller is set, and the inbox's
 * functions, which keep their caller for the executor state they run in,
 * are called in a query of their own (a simple expression's state would
 * last the transaction, and keep its first caller).
 *
 * Not here, and called by the router as its own login: administration
 * that only the extension owner may do (add_signing_key,
 * retire_signing_key, add_group_member, remove_group_member, sweep,
 * stats_reset) and the monitoring views (workers, stats); inbox_waiting(),
 * which decides nothing about a caller; openwop_api, which PostgREST
 * serves on a shard itself.
 *
 * Privileges: none until the DBA grants them (docs/scale-out.md): USAGE on
 * the schema and EXECUTE on these functions, and on the openwop functions
 * they call, to the router's login.
 * ------------------------------------------------------------------------ */

CREATE SCHEMA openwop_forward;
COMMENT ON SCHEMA openwop_forward IS
  'The openwop API as a router calls it: openwop_forward.F(caller, ...) is openwop.F called for the caller the router forwards (openwop.forwarded_caller), believed only from a member of openwop.forwarding_role.';

-- runs and nodes
CREATE FUNCTION openwop_forward.create_run(caller jsonb, workflow_id text, options jsonb DEFAULT '{}')
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.create_run(workflow_id, options);
END
$$;
COMMENT ON FUNCTION openwop_forward.create_run(jsonb, text, jsonb) IS
  'openwop.create_run for the forwarded caller (its tenant is the run''s).';

CREATE FUNCTION openwop_forward.start_node(caller jsonb, run_id text, node_id text, type_id text DEFAULT NULL)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.start_node(run_id, node_id, type_id);
END
$$;
COMMENT ON FUNCTION openwop_forward.start_node(jsonb, text, text, text) IS
  'openwop.start_node for the forwarded caller.';

CREATE FUNCTION openwop_forward.complete_node(caller jsonb, run_id text, node_id text, outputs jsonb DEFAULT '{}')
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.complete_node(run_id, node_id, outputs);
END
$$;
COMMENT ON FUNCTION openwop_forward.complete_node(jsonb, text, text, jsonb) IS
  'openwop.complete_node for the forwarded caller.';

CREATE FUNCTION openwop_forward.fail_node(caller jsonb, run_id text, node_id text, error jsonb)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.fail_node(run_id, node_id, error);
END
$$;
COMMENT ON FUNCTION openwop_forward.fail_node(jsonb, text, text, jsonb) IS
  'openwop.fail_node for the forwarded caller.';

CREATE FUNCTION openwop_forward.complete_run(caller jsonb, run_id text, outputs jsonb DEFAULT '{}')
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.complete_run(run_id, outputs);
END
$$;
COMMENT ON FUNCTION openwop_forward.complete_run(jsonb, text, jsonb) IS
  'openwop.complete_run for the forwarded caller.';

CREATE FUNCTION openwop_forward.fail_run(caller jsonb, run_id text, error jsonb, failed_node_id text DEFAULT NULL)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.fail_run(run_id, error, failed_node_id);
END
$$;
COMMENT ON FUNCTION openwop_forward.fail_run(jsonb, text, jsonb, text) IS
  'openwop.fail_run for the forwarded caller.';

CREATE FUNCTION openwop_forward.cancel_run(caller jsonb, run_id text, reason text DEFAULT NULL)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.cancel_run(run_id, reason);
END
$$;
COMMENT ON FUNCTION openwop_forward.cancel_run(jsonb, text, text) IS
  'openwop.cancel_run for the forwarded caller (cancelledBy is the forwarded subject).';

CREATE FUNCTION openwop_forward.run_snapshot(caller jsonb, run_id text)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.run_snapshot(run_id);
END
$$;
COMMENT ON FUNCTION openwop_forward.run_snapshot(jsonb, text) IS
  'openwop.run_snapshot for the forwarded caller.';

CREATE FUNCTION openwop_forward.events(caller jsonb, run_id text, after_sequence bigint DEFAULT -1, max integer DEFAULT 1000)
    RETURNS SETOF jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = '' ROWS 100
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN QUERY SELECT e FROM openwop.events(run_id, after_sequence, max) e;
END
$$;
COMMENT ON FUNCTION openwop_forward.events(jsonb, text, bigint, integer) IS
  'openwop.events for the forwarded caller: the run''s event envelopes after after_sequence, in order, at most max.';

CREATE FUNCTION openwop_forward.fork_run(caller jsonb, run_id text, options jsonb)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.fork_run(run_id, options);
END
$$;
COMMENT ON FUNCTION openwop_forward.fork_run(jsonb, text, jsonb) IS
  'openwop.fork_run for the forwarded caller: the fork is in the source''s tenant, so on the source''s shard.';

-- interrupts and answers
CREATE FUNCTION openwop_forward.interrupt(caller jsonb, run_id text, node_id text, request jsonb, ordinal integer DEFAULT 0)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.interrupt(run_id, node_id, request, ordinal);
END
$$;
COMMENT ON FUNCTION openwop_forward.interrupt(jsonb, text, text, jsonb, integer) IS
  'openwop.interrupt for the forwarded caller.';

CREATE FUNCTION openwop_forward.resolve_interrupt(caller jsonb, run_id text, node_id text, resume_value jsonb, idempotency_key text DEFAULT NULL)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.resolve_interrupt(run_id, node_id, resume_value, idempotency_key);
END
$$;
COMMENT ON FUNCTION openwop_forward.resolve_interrupt(jsonb, text, text, jsonb, text) IS
  'openwop.resolve_interrupt for the forwarded caller, who needs approvals:respond among its forwarded scopes; the answer is recorded as the forwarded subject''s. In its own transaction on the shard: an Idempotency-Key makes a retry after a lost reply safe.';

CREATE FUNCTION openwop_forward.record_agent_decision(caller jsonb, run_id text, node_id text, agent_id text,
                                                      confidence float8, decision jsonb DEFAULT NULL)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.record_agent_decision(run_id, node_id, agent_id, confidence, decision);
END
$$;
COMMENT ON FUNCTION openwop_forward.record_agent_decision(jsonb, text, text, text, float8, jsonb) IS
  'openwop.record_agent_decision for the forwarded caller.';

CREATE FUNCTION openwop_forward.confirm_credential(caller jsonb, run_id text, node_id text, idempotency_key text DEFAULT NULL)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.confirm_credential(run_id, node_id, idempotency_key);
END
$$;
COMMENT ON FUNCTION openwop_forward.confirm_credential(jsonb, text, text, text) IS
  'openwop.confirm_credential for the forwarded caller. Its privilege is EXECUTE, here the router login''s: the router''s own grant of its confirm_credential decides who may call it.';

CREATE FUNCTION openwop_forward.json_schema_errors(caller jsonb, schema jsonb, value jsonb)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.json_schema_errors(schema, value);
END
$$;
COMMENT ON FUNCTION openwop_forward.json_schema_errors(jsonb, jsonb, jsonb) IS
  'openwop.json_schema_errors (it reads no caller: any shard answers it).';

CREATE FUNCTION openwop_forward.capabilities(caller jsonb)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.capabilities();
END
$$;
COMMENT ON FUNCTION openwop_forward.capabilities(jsonb) IS
  'openwop.capabilities (it reads no caller: any shard answers it, when every shard runs the same schema).';

CREATE FUNCTION openwop_forward.current_caller(caller jsonb)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.current_caller();
END
$$;
COMMENT ON FUNCTION openwop_forward.current_caller(jsonb) IS
  'openwop.current_caller as the shard sees the forwarded caller: its subject, tenant and scopes, source openwop.forwarded_caller, and forwardedBy, the router''s login.';

-- tokens
CREATE FUNCTION openwop_forward.mint_interrupt_token(caller jsonb, interrupt_id text, intent text DEFAULT 'resolve',
                                                     ttl interval DEFAULT NULL, principal text DEFAULT NULL)
    RETURNS text LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.mint_interrupt_token(interrupt_id, intent, ttl, principal);
END
$$;
COMMENT ON FUNCTION openwop_forward.mint_interrupt_token(jsonb, text, text, interval, text) IS
  'openwop.mint_interrupt_token for the forwarded caller, signed with the shard''s key. Minting a resolve token needs the privileges of openwop.token_issuer_role, here the router login''s: the router''s own grant of its mint_interrupt_token decides who may mint.';

CREATE FUNCTION openwop_forward.inspect_interrupt(caller jsonb, token text)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.inspect_interrupt(token);
END
$$;
COMMENT ON FUNCTION openwop_forward.inspect_interrupt(jsonb, text) IS
  'openwop.inspect_interrupt: the token is the credential, verified here, on the shard of its interrupt''s tenant.';

CREATE FUNCTION openwop_forward.verify_interrupt_token(caller jsonb, token text)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.verify_interrupt_token(token);
END
$$;
COMMENT ON FUNCTION openwop_forward.verify_interrupt_token(jsonb, text) IS
  'openwop.verify_interrupt_token, on the shard whose keys signed the token.';

CREATE FUNCTION openwop_forward.resolve_interrupt_by_token(caller jsonb, token text, resume_value jsonb, idempotency_key text DEFAULT NULL)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.resolve_interrupt_by_token(token, resume_value, idempotency_key);
END
$$;
COMMENT ON FUNCTION openwop_forward.resolve_interrupt_by_token(jsonb, text, jsonb, text) IS
  'openwop.resolve_interrupt_by_token: the token is the credential (and its principal the voter), verified here; in its own transaction on the shard, so an Idempotency-Key makes a retry safe.';

-- the inbox and FlowDrop
CREATE FUNCTION openwop_forward.pending_interrupts(caller jsonb)
    RETURNS SETOF openwop.pending_interrupts LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN QUERY SELECT * FROM openwop.pending_interrupts;
END
$$;
COMMENT ON FUNCTION openwop_forward.pending_interrupts(jsonb) IS
  'The rows of the inbox openwop.pending_interrupts for the forwarded caller (the interrupts of its tenant it may decide now), oldest request first.';

CREATE FUNCTION openwop_forward.inbox_tenant(caller jsonb)
    RETURNS text LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN (SELECT openwop.inbox_tenant());
END
$$;
COMMENT ON FUNCTION openwop_forward.inbox_tenant(jsonb) IS
  'openwop.inbox_tenant for the forwarded caller: its tenant, or NULL without approvals:respond.';

CREATE FUNCTION openwop_forward.inbox_voter(caller jsonb)
    RETURNS text LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN (SELECT openwop.inbox_voter());
END
$$;
COMMENT ON FUNCTION openwop_forward.inbox_voter(jsonb) IS
  'openwop.inbox_voter for the forwarded caller: the subjectId its votes are recorded under, or NULL without approvals:respond.';

CREATE FUNCTION openwop_forward.may_decide(caller jsonb, tenant text, interrupt_id text, kind text, payload jsonb)
    RETURNS boolean LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN (SELECT openwop.may_decide(tenant, interrupt_id, kind, payload));
END
$$;
COMMENT ON FUNCTION openwop_forward.may_decide(jsonb, text, text, text, jsonb) IS
  'openwop.may_decide for the forwarded caller: may it resolve this pending interrupt now? Approver role refs match the shard''s own logins only, never a forwarded caller.';

CREATE FUNCTION openwop_forward.flowdrop_interrupt(caller jsonb, interrupt_id text)
    RETURNS json LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.flowdrop_interrupt(interrupt_id);
END
$$;
COMMENT ON FUNCTION openwop_forward.flowdrop_interrupt(jsonb, text) IS
  'openwop.flowdrop_interrupt for the forwarded caller: the FlowDrop INT-22 entry, its 24 keys in order.';

CREATE FUNCTION openwop_forward.flowdrop_interrupts(caller jsonb, interrupt_ids text[])
    RETURNS json LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET openwop.forwarded_caller = ''
AS $$
BEGIN
    PERFORM pg_catalog.set_config('openwop.forwarded_caller', COALESCE(caller::pg_catalog.text, 'null'), true);
    RETURN openwop.flowdrop_interrupts(interrupt_ids);
END
$$;
COMMENT ON FUNCTION openwop_forward.flowdrop_interrupts(jsonb, text[]) IS
  'openwop.flowdrop_interrupts for the forwarded caller: the entries of the ids of its tenant (on this shard), in the order given.';

COMMENT ON FUNCTION openwop.current_caller() IS
  'Who this session is to openwop: {subject {issuer, subjectId, tenant, lane, kind}, tenant, source (request.jwt.claims, session_user, or openwop.forwarded_caller for a caller a router forwards), scopes, and forwardedBy (the forwarding login) for a forwarded caller}. Refused where no caller can be trusted (security-restricted operations, SECURITY DEFINER code in a request session, a forwarded caller set by a session that may not forward).';

/* Nothing here is callable until the DBA grants it to the router's login (docs/scale-out.md). */
REVOKE ALL ON FUNCTION
    openwop_forward.create_run(jsonb, text, jsonb),
    openwop_forward.start_node(jsonb, text, text, text),
    openwop_forward.complete_node(jsonb, text, text, jsonb),
    openwop_forward.fail_node(jsonb, text, text, jsonb),
    openwop_forward.complete_run(jsonb, text, jsonb),
    openwop_forward.fail_run(jsonb, text, jsonb, text),
    openwop_forward.cancel_run(jsonb, text, text),
    openwop_forward.run_snapshot(jsonb, text),
    openwop_forward.events(jsonb, text, bigint, integer),
    openwop_forward.fork_run(jsonb, text, jsonb),
    openwop_forward.interrupt(jsonb, text, text, jsonb, integer),
    openwop_forward.resolve_interrupt(jsonb, text, text, jsonb, text),
    openwop_forward.record_agent_decision(jsonb, text, text, text, float8, jsonb),
    openwop_forward.confirm_credential(jsonb, text, text, text),
    openwop_forward.json_schema_errors(jsonb, jsonb, jsonb),
    openwop_forward.capabilities(jsonb),
    openwop_forward.current_caller(jsonb),
    openwop_forward.mint_interrupt_token(jsonb, text, text, interval, text),
    openwop_forward.inspect_interrupt(jsonb, text),
    openwop_forward.verify_interrupt_token(jsonb, text),
    openwop_forward.resolve_interrupt_by_token(jsonb, text, jsonb, text),
    openwop_forward.pending_interrupts(jsonb),
    openwop_forward.inbox_tenant(jsonb),
    openwop_forward.inbox_voter(jsonb),
    openwop_forward.may_decide(jsonb, text, text, text, jsonb),
    openwop_forward.flowdrop_interrupt(jsonb, text),
    openwop_forward.flowdrop_interrupts(jsonb, text[])
FROM PUBLIC;
-- == forwarding (end) ==
