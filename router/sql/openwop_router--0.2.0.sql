/*
 * openwop_router 0.2.0 — install script (0.1.0 updates with
 * openwop_router--0.1.0--0.2.0.sql to the same catalog).
 *
 * A router database runs this extension instead of openwop_interrupt: schema
 * openwop holds the same functions, with the same signatures, as
 * openwop_interrupt 0.9.0's API, and each one sends its call to one shard
 * database (or to every one) that runs openwop_interrupt, with PL/Proxy.
 * docs/scale-out.md is the DBA's page: the cluster, the shard map, what each
 * function routes on, identity, transactions, adding shards.
 *
 * The pieces of one call, openwop.F(args):
 *
 *	- openwop.F, a SECURITY INVOKER PL/pgSQL function, calls
 *	  openwop_router.F(openwop_router.caller(), args): caller() is this
 *	  session's identity as openwop_interrupt decides it (a login, or
 *	  PostgREST's verified claims), in the form a shard takes as
 *	  openwop.forwarded_caller;
 *	- openwop_router.F is a PL/Proxy function: RUN ON a local function that
 *	  checks its caller argument is this session's own caller (42501
 *	  otherwise: whoever may call openwop.F may call openwop_router.F too,
 *	  with any first argument) and returns the hash of the tenant the call
 *	  belongs to; TARGET openwop_forward.F on the shard, as the router's
 *	  login;
 *	- on the shard, openwop_forward.F(caller, args) sets the forwarded
 *	  caller for itself alone and calls openwop.F, which sees the router's
 *	  caller, not the router's login.
 *
 * PL/Proxy re-raises a shard's error with the shard's SQLSTATE but its
 * message prefixed ("openwop_router.F(n): [db] REMOTE ERROR: ") and
 * "Remote detail: " before its detail; openwop.F catches the error and
 * raises it again as the shard raised it (openwop_router.reraise), so a
 * caller reads the code, the message and the JSON details unchanged.
 *
 * Every routed call runs in a transaction of its own on the shard (PL/Proxy
 * sends its queries in autocommit): see docs/scale-out.md, "Transactions".
 */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION openwop_router" to load this file. \quit

COMMENT ON SCHEMA openwop IS
  'OpenWOP interrupt API of a router database: each function runs on the shard database of its tenant (openwop_router, PL/Proxy cluster openwop)';

CREATE SCHEMA openwop_router;
COMMENT ON SCHEMA openwop_router IS
  'The routing behind schema openwop: the caller, the routing functions and one PL/Proxy function per routed function, run on the shards of PL/Proxy cluster openwop (SERVER openwop)';

/* ------------------------------------------------------------------------
 * The caller, and where a call goes
 * ------------------------------------------------------------------------ */

/*
 * openwop_interrupt's library decides who is calling here as it does on a
 * shard: the library must be in shared_preload_libraries of the router's
 * server (openwop_interrupt's schema is not installed in this database).
 */
CREATE FUNCTION openwop_router.caller()
    RETURNS jsonb AS '$libdir/openwop_interrupt', 'ow_router_caller'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION openwop_router.caller() IS
  'This session''s caller as openwop_interrupt decides it ({issuer, subjectId, tenant, lane, kind, scopes}): a request session''s JWT subject, else the session''s login; its tenant and approvals:respond. The form a shard takes as openwop.forwarded_caller. Refused where openwop.current_caller() is.';

/*
 * The tenant of caller, once caller is checked to be this session's own.
 * The operators are pg_catalog's, named: a caller's search_path could
 * otherwise put an "=" of its own in front of pg_catalog and pass any
 * identity.
 */
CREATE FUNCTION openwop_router.checked_tenant(caller jsonb)
    RETURNS text LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF caller IS NULL OR NOT (caller OPERATOR(pg_catalog.=) openwop_router.caller()) THEN
        RAISE EXCEPTION USING ERRCODE = '42501',
            MESSAGE = 'forbidden: the caller given to a router function is not this session''s caller',
            DETAIL = 'The first argument of the functions of schema openwop_router must be openwop_router.caller(); a shard believes it.',
            HINT = 'Call the functions of schema openwop.';
    END IF;
    RETURN caller OPERATOR(pg_catalog.->>) 'tenant';
END
$$;
COMMENT ON FUNCTION openwop_router.checked_tenant(jsonb) IS
  'The tenant of caller, after refusing (42501) a caller that is not openwop_router.caller(): every routing function asks it first, so no other identity reaches a shard.';

CREATE FUNCTION openwop_router.route(caller jsonb, tenant text DEFAULT NULL)
    RETURNS integer LANGUAGE plpgsql STABLE AS $$
DECLARE
    own text := openwop_router.checked_tenant(caller);
BEGIN
    RETURN pg_catalog.hashtext(COALESCE(tenant, own));
END
$$;
COMMENT ON FUNCTION openwop_router.route(jsonb, text) IS
  'PL/Proxy RUN ON: the hash of tenant, or of the caller''s tenant when tenant is NULL (hashtext; the partition is the hash masked by the number of partitions). Refuses a caller that is not openwop_router.caller() (42501).';

/*
 * The tenant of a token's interrupt, read from the token without checking
 * it (the shard checks it): ow2.hs256.<kid>.<payload>.<mac>, the payload
 * unpadded base64url of JSON whose "i" is the interrupt id, "<tenant>/...".
 * A kid may hold dots, so the payload is the segment before the last.
 * NULL for anything else.  It only chooses where a token goes; a token
 * routed wrongly is one the shard refuses.  A token longer than a shard
 * takes (4096 bytes, OW_TOKEN_MAX_LEN) is not read at all: the router does
 * no more work on an unverified token than the shard that refuses it, and
 * the shard's refusal (401 interrupt_token_invalid) is the answer, not an
 * error of the decoding here (54001 for claims nested deep).
 */
CREATE FUNCTION openwop_router.token_tenant(token text)
    RETURNS text LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    SET search_path = pg_catalog AS $$
DECLARE
    payload text;
    id text;
BEGIN
    IF token IS NULL OR octet_length(token) > 4096 OR token NOT LIKE 'ow2.%' THEN
        RETURN NULL;
    END IF;
    payload := substring(token FROM '\.([A-Za-z0-9_-]+)\.[^.]*$');
    IF payload IS NULL THEN
        RETURN NULL;
    END IF;
    BEGIN
        id := convert_from(decode(translate(payload, '-_', '+/') || repeat('=', (4 - length(payload) % 4) % 4),
                                  'base64'), 'UTF8')::jsonb ->> 'i';
    EXCEPTION WHEN data_exception THEN
        RETURN NULL;
    END;
    IF id IS NULL OR strpos(id, '/') = 0 THEN
        RETURN NULL;
    END IF;
    RETURN split_part(id, '/', 1);
END
$$;
COMMENT ON FUNCTION openwop_router.token_tenant(text) IS
  'The tenant of the interrupt id a token names (its payload''s "i"), unverified; NULL when the token is not readable so, or longer than a shard takes (4096 bytes).';

CREATE FUNCTION openwop_router.route_token(caller jsonb, token text)
    RETURNS integer LANGUAGE plpgsql STABLE AS $$
DECLARE
    own text := openwop_router.checked_tenant(caller);
BEGIN
    RETURN pg_catalog.hashtext(COALESCE(openwop_router.token_tenant(token), own));
END
$$;
COMMENT ON FUNCTION openwop_router.route_token(jsonb, text) IS
  'PL/Proxy RUN ON for token calls: the hash of the tenant of the token''s interrupt id; of the caller''s tenant for a token that names none (every shard refuses it alike). Refuses a caller that is not openwop_router.caller() (42501).';

/* How many partitions (p0, p1, ...) SERVER openwop lists. */
CREATE FUNCTION openwop_router.partitions()
    RETURNS integer LANGUAGE sql STABLE AS $$
    SELECT pg_catalog.int4(pg_catalog.count(*))
      FROM pg_catalog.pg_foreign_server s, pg_catalog.unnest(s.srvoptions) o
     WHERE s.srvname OPERATOR(pg_catalog.=) 'openwop'
       AND o OPERATOR(pg_catalog.~) '^p[0-9]+='
$$;
COMMENT ON FUNCTION openwop_router.partitions() IS
  'The number of partitions of PL/Proxy cluster openwop: the options p0, p1, ... of SERVER openwop.';

/*
 * A shard's error as the shard raised it: PL/Proxy's prefixes taken off the
 * message, detail and hint of an error it re-raised.  A shard PL/Proxy
 * could not reach, or lost the connection to, is 08006 (PL/Proxy says
 * XX000, an internal error: PostgREST would answer 500) with the JSON
 * details of the error contract, {"database": <the shard database>}.
 * PL/Proxy's own message goes to the router's server log only: libpq's
 * words name the shard's host and port or socket, its login and what its
 * pg_hba.conf refused, none of which is the caller's to read (whatever
 * its client_min_messages: the LOG is raised under this function's own).
 * (openwop_router.F itself raises PL/Proxy's error as it is: a role that
 * may call openwop.F may call it directly and read it; PostgREST exposes
 * schema openwop only.)  Any other error (the router's own) is raised as
 * it was.
 */
/*
 * A function that changes a shard refuses to run in a read-only
 * transaction of the router, as the shard refuses it in one of its own:
 * the shard's call runs in a transaction of its own, which the router's
 * READ ONLY does not reach.
 */
CREATE FUNCTION openwop_router.require_writable(function_name text)
    RETURNS void LANGUAGE plpgsql STABLE
    SET search_path = pg_catalog AS $$
BEGIN
    IF current_setting('transaction_read_only') = 'on' THEN
        RAISE EXCEPTION USING ERRCODE = '25006',
            MESSAGE = format('cannot execute %s in a read-only transaction', function_name);
    END IF;
END
$$;
COMMENT ON FUNCTION openwop_router.require_writable(text) IS
  'Refuses (25006, the shard''s message) a call of function_name, which changes a shard, in a read-only transaction of the router.';

CREATE FUNCTION openwop_router.reraise(e_state text, e_message text, e_detail text, e_hint text)
    RETURNS void LANGUAGE plpgsql
    SET search_path = pg_catalog SET client_min_messages = warning AS $$
BEGIN
    IF e_message ~ '^PL/Proxy function openwop_router\.[a-z_]+\([0-9]+\): (\[[^]]*\] PQ[A-Za-z]+: |connect timeout to: |query timeout)' THEN
        RAISE LOG 'openwop_router: %', e_message;
        e_state := '08006';
        e_detail := jsonb_build_object('database', substring(e_message FROM '\): \[([^]]*)\]'))::text;
        e_message := 'shard_unavailable: a shard database cannot be reached'
                     || COALESCE(' (' || substring(e_message FROM '\): \[([^]]*)\]') || ')', '');
        e_hint := 'The call may have been applied there if the connection broke after it was sent: retry it with the same Idempotency-Key, or read the state back.';
    ELSIF e_message ~ '^openwop_router\.[a-z_]+\([0-9]+\): \[[^]]*\] REMOTE ERROR: ' THEN
        e_message := regexp_replace(e_message, '^openwop_router\.[a-z_]+\([0-9]+\): \[[^]]*\] REMOTE ERROR: ', '');
        e_detail := regexp_replace(e_detail, '^Remote detail: ', '');
        e_hint := regexp_replace(e_hint, '^Remote hint: ', '');
    END IF;
    IF e_detail = '' AND e_hint = '' THEN
        RAISE EXCEPTION USING ERRCODE = e_state, MESSAGE = e_message;
    ELSIF e_hint = '' THEN
        RAISE EXCEPTION USING ERRCODE = e_state, MESSAGE = e_message, DETAIL = e_detail;
    ELSIF e_detail = '' THEN
        RAISE EXCEPTION USING ERRCODE = e_state, MESSAGE = e_message, HINT = e_hint;
    ELSE
        RAISE EXCEPTION USING ERRCODE = e_state, MESSAGE = e_message, DETAIL = e_detail, HINT = e_hint;
    END IF;
END
$$;
COMMENT ON FUNCTION openwop_router.reraise(text, text, text, text) IS
  'Raises an error again with PL/Proxy''s "openwop_router.F(n): [db] REMOTE ERROR: ", "Remote detail: " and "Remote hint: " taken off: the SQLSTATE, message, detail and hint a shard raised; a shard that cannot be reached as 08006 shard_unavailable, details {"database": ...}, PL/Proxy''s message in the server log.';

/* ------------------------------------------------------------------------
 * The functions routed by tenant.  Each is a pair: openwop_router.F, the
 * PL/Proxy call of openwop_forward.F on the shard, and openwop.F, the API
 * function, which passes it the caller.
 *
 * A run or interrupt id names its tenant, and a shard refuses every id of
 * a tenant other than its caller's (403 id_tenant_mismatch, decided from
 * the id alone, before anything is read, on any shard alike): so the
 * tenant of every id a call can succeed with is the caller's, and these
 * route on the caller's tenant, which the id of a call that succeeds
 * always names (and a malformed id, or one in its wire form, cannot
 * misroute).  create_run routes on the caller's tenant too: options.tenant
 * and the tenant of options.runId must be the caller's.
 * ------------------------------------------------------------------------ */

CREATE FUNCTION openwop_router.create_run(caller jsonb, workflow_id text, options jsonb)
    RETURNS jsonb LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON openwop_router.route(caller);
    TARGET openwop_forward.create_run;
$$;
COMMENT ON FUNCTION openwop_router.create_run(jsonb, text, jsonb) IS
  'openwop_forward.create_run on the shard of the caller''s tenant; caller must be openwop_router.caller().';

CREATE FUNCTION openwop.create_run(workflow_id text, options jsonb DEFAULT '{}')
    RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    PERFORM openwop_router.require_writable('create_run()');
    RETURN openwop_router.create_run(openwop_router.caller(), workflow_id, options);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.create_run(text, jsonb) IS
  'Router: openwop.create_run on the shard of the caller''s tenant (openwop_router.create_run), as the caller.';

CREATE FUNCTION openwop_router.start_node(caller jsonb, run_id text, node_id text, type_id text)
    RETURNS jsonb LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON openwop_router.route(caller);
    TARGET openwop_forward.start_node;
$$;
COMMENT ON FUNCTION openwop_router.start_node(jsonb, text, text, text) IS
  'openwop_forward.start_node on the shard of the caller''s tenant; caller must be openwop_router.caller().';

CREATE FUNCTION openwop.start_node(run_id text, node_id text, type_id text DEFAULT NULL)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    PERFORM openwop_router.require_writable('start_node()');
    RETURN openwop_router.start_node(openwop_router.caller(), run_id, node_id, type_id);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.start_node(text, text, text) IS
  'Router: openwop.start_node on the shard of the caller''s tenant (openwop_router.start_node), as the caller.';

CREATE FUNCTION openwop_router.complete_node(caller jsonb, run_id text, node_id text, outputs jsonb)
    RETURNS jsonb LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON openwop_router.route(caller);
    TARGET openwop_forward.complete_node;
$$;
COMMENT ON FUNCTION openwop_router.complete_node(jsonb, text, text, jsonb) IS
  'openwop_forward.complete_node on the shard of the caller''s tenant; caller must be openwop_router.caller().';

CREATE FUNCTION openwop.complete_node(run_id text, node_id text, outputs jsonb DEFAULT '{}')
    RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    PERFORM openwop_router.require_writable('complete_node()');
    RETURN openwop_router.complete_node(openwop_router.caller(), run_id, node_id, outputs);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.complete_node(text, text, jsonb) IS
  'Router: openwop.complete_node on the shard of the caller''s tenant (openwop_router.complete_node), as the caller.';

CREATE FUNCTION openwop_router.fail_node(caller jsonb, run_id text, node_id text, error jsonb)
    RETURNS jsonb LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON openwop_router.route(caller);
    TARGET openwop_forward.fail_node;
$$;
COMMENT ON FUNCTION openwop_router.fail_node(jsonb, text, text, jsonb) IS
  'openwop_forward.fail_node on the shard of the caller''s tenant; caller must be openwop_router.caller().';

CREATE FUNCTION openwop.fail_node(run_id text, node_id text, error jsonb)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    PERFORM openwop_router.require_writable('fail_node()');
    RETURN openwop_router.fail_node(openwop_router.caller(), run_id, node_id, error);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.fail_node(text, text, jsonb) IS
  'Router: openwop.fail_node on the shard of the caller''s tenant (openwop_router.fail_node), as the caller.';

CREATE FUNCTION openwop_router.complete_run(caller jsonb, run_id text, outputs jsonb)
    RETURNS jsonb LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON openwop_router.route(caller);
    TARGET openwop_forward.complete_run;
$$;
COMMENT ON FUNCTION openwop_router.complete_run(jsonb, text, jsonb) IS
  'openwop_forward.complete_run on the shard of the caller''s tenant; caller must be openwop_router.caller().';

CREATE FUNCTION openwop.complete_run(run_id text, outputs jsonb DEFAULT '{}')
    RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    PERFORM openwop_router.require_writable('complete_run()');
    RETURN openwop_router.complete_run(openwop_router.caller(), run_id, outputs);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.complete_run(text, jsonb) IS
  'Router: openwop.complete_run on the shard of the caller''s tenant (openwop_router.complete_run), as the caller.';

CREATE FUNCTION openwop_router.fail_run(caller jsonb, run_id text, error jsonb, failed_node_id text)
    RETURNS jsonb LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON openwop_router.route(caller);
    TARGET openwop_forward.fail_run;
$$;
COMMENT ON FUNCTION openwop_router.fail_run(jsonb, text, jsonb, text) IS
  'openwop_forward.fail_run on the shard of the caller''s tenant; caller must be openwop_router.caller().';

CREATE FUNCTION openwop.fail_run(run_id text, error jsonb, failed_node_id text DEFAULT NULL)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    PERFORM openwop_router.require_writable('fail_run()');
    RETURN openwop_router.fail_run(openwop_router.caller(), run_id, error, failed_node_id);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.fail_run(text, jsonb, text) IS
  'Router: openwop.fail_run on the shard of the caller''s tenant (openwop_router.fail_run), as the caller.';

CREATE FUNCTION openwop_router.cancel_run(caller jsonb, run_id text, reason text)
    RETURNS jsonb LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON openwop_router.route(caller);
    TARGET openwop_forward.cancel_run;
$$;
COMMENT ON FUNCTION openwop_router.cancel_run(jsonb, text, text) IS
  'openwop_forward.cancel_run on the shard of the caller''s tenant; caller must be openwop_router.caller().';

CREATE FUNCTION openwop.cancel_run(run_id text, reason text DEFAULT NULL)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    PERFORM openwop_router.require_writable('cancel_run()');
    RETURN openwop_router.cancel_run(openwop_router.caller(), run_id, reason);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.cancel_run(text, text) IS
  'Router: openwop.cancel_run on the shard of the caller''s tenant (openwop_router.cancel_run), as the caller.';

CREATE FUNCTION openwop_router.run_snapshot(caller jsonb, run_id text)
    RETURNS jsonb LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON openwop_router.route(caller);
    TARGET openwop_forward.run_snapshot;
$$;
COMMENT ON FUNCTION openwop_router.run_snapshot(jsonb, text) IS
  'openwop_forward.run_snapshot on the shard of the caller''s tenant; caller must be openwop_router.caller().';

CREATE FUNCTION openwop.run_snapshot(run_id text)
    RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    RETURN openwop_router.run_snapshot(openwop_router.caller(), run_id);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.run_snapshot(text) IS
  'Router: openwop.run_snapshot on the shard of the caller''s tenant (openwop_router.run_snapshot), as the caller.';

CREATE FUNCTION openwop_router.events(caller jsonb, run_id text, after_sequence bigint, max integer)
    RETURNS SETOF jsonb LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON openwop_router.route(caller);
    TARGET openwop_forward.events;
$$;
COMMENT ON FUNCTION openwop_router.events(jsonb, text, bigint, integer) IS
  'openwop_forward.events on the shard of the caller''s tenant; caller must be openwop_router.caller().';

CREATE FUNCTION openwop.events(run_id text, after_sequence bigint DEFAULT -1, max integer DEFAULT 1000)
    RETURNS SETOF jsonb LANGUAGE plpgsql STABLE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    RETURN QUERY SELECT * FROM openwop_router.events(openwop_router.caller(), run_id, after_sequence, max);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.events(text, bigint, integer) IS
  'Router: openwop.events on the shard of the caller''s tenant (openwop_router.events), as the caller.';

CREATE FUNCTION openwop_router.fork_run(caller jsonb, run_id text, options jsonb)
    RETURNS jsonb LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON openwop_router.route(caller);
    TARGET openwop_forward.fork_run;
$$;
COMMENT ON FUNCTION openwop_router.fork_run(jsonb, text, jsonb) IS
  'openwop_forward.fork_run on the shard of the caller''s tenant; caller must be openwop_router.caller().';

CREATE FUNCTION openwop.fork_run(run_id text, options jsonb)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    PERFORM openwop_router.require_writable('fork_run()');
    RETURN openwop_router.fork_run(openwop_router.caller(), run_id, options);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.fork_run(text, jsonb) IS
  'Router: openwop.fork_run on the shard of the caller''s tenant (openwop_router.fork_run), as the caller.';

CREATE FUNCTION openwop_router.json_schema_errors(caller jsonb, schema jsonb, value jsonb)
    RETURNS jsonb LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON openwop_router.route(caller);
    TARGET openwop_forward.json_schema_errors;
$$;
COMMENT ON FUNCTION openwop_router.json_schema_errors(jsonb, jsonb, jsonb) IS
  'openwop_forward.json_schema_errors on the shard of the caller''s tenant; caller must be openwop_router.caller().';

CREATE FUNCTION openwop.json_schema_errors(schema jsonb, value jsonb)
    RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    RETURN openwop_router.json_schema_errors(openwop_router.caller(), schema, value);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.json_schema_errors(jsonb, jsonb) IS
  'Router: openwop.json_schema_errors on the shard of the caller''s tenant (openwop_router.json_schema_errors), as the caller.';

CREATE FUNCTION openwop_router.interrupt(caller jsonb, run_id text, node_id text, request jsonb, ordinal integer)
    RETURNS jsonb LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON openwop_router.route(caller);
    TARGET openwop_forward.interrupt;
$$;
COMMENT ON FUNCTION openwop_router.interrupt(jsonb, text, text, jsonb, integer) IS
  'openwop_forward.interrupt on the shard of the caller''s tenant; caller must be openwop_router.caller().';

CREATE FUNCTION openwop.interrupt(run_id text, node_id text, request jsonb, ordinal integer DEFAULT 0)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    PERFORM openwop_router.require_writable('interrupt()');
    RETURN openwop_router.interrupt(openwop_router.caller(), run_id, node_id, request, ordinal);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.interrupt(text, text, jsonb, integer) IS
  'Router: openwop.interrupt on the shard of the caller''s tenant (openwop_router.interrupt), as the caller.';

CREATE FUNCTION openwop_router.resolve_interrupt(caller jsonb, run_id text, node_id text, resume_value jsonb, idempotency_key text)
    RETURNS jsonb LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON openwop_router.route(caller);
    TARGET openwop_forward.resolve_interrupt;
$$;
COMMENT ON FUNCTION openwop_router.resolve_interrupt(jsonb, text, text, jsonb, text) IS
  'openwop_forward.resolve_interrupt on the shard of the caller''s tenant; caller must be openwop_router.caller().';

CREATE FUNCTION openwop.resolve_interrupt(run_id text, node_id text, resume_value jsonb, idempotency_key text DEFAULT NULL)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    PERFORM openwop_router.require_writable('resolve_interrupt()');
    RETURN openwop_router.resolve_interrupt(openwop_router.caller(), run_id, node_id, resume_value, idempotency_key);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.resolve_interrupt(text, text, jsonb, text) IS
  'Router: openwop.resolve_interrupt on the shard of the caller''s tenant (openwop_router.resolve_interrupt), as the caller.';

CREATE FUNCTION openwop_router.confirm_credential(caller jsonb, run_id text, node_id text, idempotency_key text)
    RETURNS jsonb LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON openwop_router.route(caller);
    TARGET openwop_forward.confirm_credential;
$$;
COMMENT ON FUNCTION openwop_router.confirm_credential(jsonb, text, text, text) IS
  'openwop_forward.confirm_credential on the shard of the caller''s tenant; caller must be openwop_router.caller().';

CREATE FUNCTION openwop.confirm_credential(run_id text, node_id text, idempotency_key text DEFAULT NULL)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    PERFORM openwop_router.require_writable('confirm_credential()');
    RETURN openwop_router.confirm_credential(openwop_router.caller(), run_id, node_id, idempotency_key);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.confirm_credential(text, text, text) IS
  'Router: openwop.confirm_credential on the shard of the caller''s tenant (openwop_router.confirm_credential), as the caller.';

CREATE FUNCTION openwop_router.record_agent_decision(caller jsonb, run_id text, node_id text, agent_id text, confidence double precision, decision jsonb)
    RETURNS jsonb LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON openwop_router.route(caller);
    TARGET openwop_forward.record_agent_decision;
$$;
COMMENT ON FUNCTION openwop_router.record_agent_decision(jsonb, text, text, text, double precision, jsonb) IS
  'openwop_forward.record_agent_decision on the shard of the caller''s tenant; caller must be openwop_router.caller().';

CREATE FUNCTION openwop.record_agent_decision(run_id text, node_id text, agent_id text, confidence double precision, decision jsonb DEFAULT NULL)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    PERFORM openwop_router.require_writable('record_agent_decision()');
    RETURN openwop_router.record_agent_decision(openwop_router.caller(), run_id, node_id, agent_id, confidence, decision);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.record_agent_decision(text, text, text, double precision, jsonb) IS
  'Router: openwop.record_agent_decision on the shard of the caller''s tenant (openwop_router.record_agent_decision), as the caller.';

CREATE FUNCTION openwop_router.capabilities(caller jsonb)
    RETURNS jsonb LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON openwop_router.route(caller);
    TARGET openwop_forward.capabilities;
$$;
COMMENT ON FUNCTION openwop_router.capabilities(jsonb) IS
  'openwop_forward.capabilities on the shard of the caller''s tenant; caller must be openwop_router.caller().';

CREATE FUNCTION openwop.capabilities()
    RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    RETURN openwop_router.capabilities(openwop_router.caller());
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.capabilities() IS
  'Router: openwop.capabilities on the shard of the caller''s tenant (openwop_router.capabilities), as the caller.';

CREATE FUNCTION openwop_router.current_caller(caller jsonb)
    RETURNS jsonb LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON openwop_router.route(caller);
    TARGET openwop_forward.current_caller;
$$;
COMMENT ON FUNCTION openwop_router.current_caller(jsonb) IS
  'openwop_forward.current_caller on the shard of the caller''s tenant; caller must be openwop_router.caller().';

CREATE FUNCTION openwop.current_caller()
    RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    RETURN openwop_router.current_caller(openwop_router.caller());
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.current_caller() IS
  'Router: openwop.current_caller on the shard of the caller''s tenant (openwop_router.current_caller), as the caller.';

CREATE FUNCTION openwop_router.mint_interrupt_token(caller jsonb, interrupt_id text, intent text, ttl interval, principal text)
    RETURNS text LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON openwop_router.route(caller);
    TARGET openwop_forward.mint_interrupt_token;
$$;
COMMENT ON FUNCTION openwop_router.mint_interrupt_token(jsonb, text, text, interval, text) IS
  'openwop_forward.mint_interrupt_token on the shard of the caller''s tenant; caller must be openwop_router.caller().';

CREATE FUNCTION openwop.mint_interrupt_token(interrupt_id text, intent text DEFAULT 'resolve', ttl interval DEFAULT NULL, principal text DEFAULT NULL)
    RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    PERFORM openwop_router.require_writable('mint_interrupt_token()');
    RETURN openwop_router.mint_interrupt_token(openwop_router.caller(), interrupt_id, intent, ttl, principal);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.mint_interrupt_token(text, text, interval, text) IS
  'Router: openwop.mint_interrupt_token on the shard of the caller''s tenant (openwop_router.mint_interrupt_token), as the caller.';

CREATE FUNCTION openwop_router.inspect_interrupt(caller jsonb, token text)
    RETURNS jsonb LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON openwop_router.route_token(caller, token);
    TARGET openwop_forward.inspect_interrupt;
$$;
COMMENT ON FUNCTION openwop_router.inspect_interrupt(jsonb, text) IS
  'openwop_forward.inspect_interrupt on the shard of the tenant of the token''s interrupt id; caller must be openwop_router.caller().';

CREATE FUNCTION openwop.inspect_interrupt(token text)
    RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    RETURN openwop_router.inspect_interrupt(openwop_router.caller(), token);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.inspect_interrupt(text) IS
  'Router: openwop.inspect_interrupt on the shard of the tenant of the token''s interrupt id (openwop_router.inspect_interrupt), as the caller.';

CREATE FUNCTION openwop_router.verify_interrupt_token(caller jsonb, token text)
    RETURNS jsonb LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON openwop_router.route_token(caller, token);
    TARGET openwop_forward.verify_interrupt_token;
$$;
COMMENT ON FUNCTION openwop_router.verify_interrupt_token(jsonb, text) IS
  'openwop_forward.verify_interrupt_token on the shard of the tenant of the token''s interrupt id; caller must be openwop_router.caller().';

CREATE FUNCTION openwop.verify_interrupt_token(token text)
    RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    RETURN openwop_router.verify_interrupt_token(openwop_router.caller(), token);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.verify_interrupt_token(text) IS
  'Router: openwop.verify_interrupt_token on the shard of the tenant of the token''s interrupt id (openwop_router.verify_interrupt_token), as the caller.';

CREATE FUNCTION openwop_router.resolve_interrupt_by_token(caller jsonb, token text, resume_value jsonb, idempotency_key text)
    RETURNS jsonb LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON openwop_router.route_token(caller, token);
    TARGET openwop_forward.resolve_interrupt_by_token;
$$;
COMMENT ON FUNCTION openwop_router.resolve_interrupt_by_token(jsonb, text, jsonb, text) IS
  'openwop_forward.resolve_interrupt_by_token on the shard of the tenant of the token''s interrupt id; caller must be openwop_router.caller().';

CREATE FUNCTION openwop.resolve_interrupt_by_token(token text, resume_value jsonb, idempotency_key text DEFAULT NULL)
    RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    PERFORM openwop_router.require_writable('resolve_interrupt_by_token()');
    RETURN openwop_router.resolve_interrupt_by_token(openwop_router.caller(), token, resume_value, idempotency_key);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.resolve_interrupt_by_token(text, jsonb, text) IS
  'Router: openwop.resolve_interrupt_by_token on the shard of the tenant of the token''s interrupt id (openwop_router.resolve_interrupt_by_token), as the caller.';

CREATE FUNCTION openwop_router.inbox_tenant(caller jsonb)
    RETURNS text LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON openwop_router.route(caller);
    TARGET openwop_forward.inbox_tenant;
$$;
COMMENT ON FUNCTION openwop_router.inbox_tenant(jsonb) IS
  'openwop_forward.inbox_tenant on the shard of the caller''s tenant; caller must be openwop_router.caller().';

CREATE FUNCTION openwop.inbox_tenant()
    RETURNS text LANGUAGE plpgsql STABLE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    RETURN openwop_router.inbox_tenant(openwop_router.caller());
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.inbox_tenant() IS
  'Router: openwop.inbox_tenant on the shard of the caller''s tenant (openwop_router.inbox_tenant), as the caller.';

CREATE FUNCTION openwop_router.inbox_voter(caller jsonb)
    RETURNS text LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON openwop_router.route(caller);
    TARGET openwop_forward.inbox_voter;
$$;
COMMENT ON FUNCTION openwop_router.inbox_voter(jsonb) IS
  'openwop_forward.inbox_voter on the shard of the caller''s tenant; caller must be openwop_router.caller().';

CREATE FUNCTION openwop.inbox_voter()
    RETURNS text LANGUAGE plpgsql STABLE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    RETURN openwop_router.inbox_voter(openwop_router.caller());
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.inbox_voter() IS
  'Router: openwop.inbox_voter on the shard of the caller''s tenant (openwop_router.inbox_voter), as the caller.';

CREATE FUNCTION openwop_router.may_decide(caller jsonb, tenant text, interrupt_id text, kind text, payload jsonb)
    RETURNS boolean LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON openwop_router.route(caller, tenant);
    TARGET openwop_forward.may_decide;
$$;
COMMENT ON FUNCTION openwop_router.may_decide(jsonb, text, text, text, jsonb) IS
  'openwop_forward.may_decide on the shard of tenant; caller must be openwop_router.caller().';

CREATE FUNCTION openwop.may_decide(tenant text, interrupt_id text, kind text, payload jsonb)
    RETURNS boolean LANGUAGE plpgsql STABLE STRICT AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    RETURN openwop_router.may_decide(openwop_router.caller(), tenant, interrupt_id, kind, payload);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.may_decide(text, text, text, jsonb) IS
  'Router: openwop.may_decide on the shard of tenant (openwop_router.may_decide), as the caller.';

CREATE FUNCTION openwop_router.flowdrop_interrupt(caller jsonb, interrupt_id text)
    RETURNS json LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON openwop_router.route(caller);
    TARGET openwop_forward.flowdrop_interrupt;
$$;
COMMENT ON FUNCTION openwop_router.flowdrop_interrupt(jsonb, text) IS
  'openwop_forward.flowdrop_interrupt on the shard of the caller''s tenant; caller must be openwop_router.caller().';

CREATE FUNCTION openwop.flowdrop_interrupt(interrupt_id text)
    RETURNS json LANGUAGE plpgsql STABLE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    RETURN openwop_router.flowdrop_interrupt(openwop_router.caller(), interrupt_id);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.flowdrop_interrupt(text) IS
  'Router: openwop.flowdrop_interrupt on the shard of the caller''s tenant (openwop_router.flowdrop_interrupt), as the caller.';

CREATE FUNCTION openwop_router.flowdrop_interrupts(caller jsonb, interrupt_ids text[])
    RETURNS json LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON openwop_router.route(caller);
    TARGET openwop_forward.flowdrop_interrupts;
$$;
COMMENT ON FUNCTION openwop_router.flowdrop_interrupts(jsonb, text[]) IS
  'openwop_forward.flowdrop_interrupts on the shard of the caller''s tenant; caller must be openwop_router.caller().';

CREATE FUNCTION openwop.flowdrop_interrupts(interrupt_ids text[])
    RETURNS json LANGUAGE plpgsql STABLE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    RETURN openwop_router.flowdrop_interrupts(openwop_router.caller(), interrupt_ids);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.flowdrop_interrupts(text[]) IS
  'Router: openwop.flowdrop_interrupts on the shard of the caller''s tenant (openwop_router.flowdrop_interrupts), as the caller.';

/*
 * The inbox: the pending interrupts the caller may decide now, from the
 * shard of the caller's tenant.  A shard's openwop.pending_interrupts shows
 * a caller its own tenant's interrupts only, and they are all on that
 * tenant's shard: asking every shard would only add a query per shard to
 * each read, fail every tenant's inbox while any shard is down, and show
 * the stale copy of a tenant's rows that a move or a doubling leaves on its
 * old shard until it is deleted (docs/scale-out.md).  No LIMIT reaches the
 * shard: a page read here reads the caller's whole inbox there.
 */
CREATE FUNCTION openwop_router.pending_interrupts(caller jsonb,
    OUT interrupt_id text, OUT run_id text, OUT node_id text, OUT kind text, OUT title text,
    OUT request jsonb, OUT resume_schema jsonb, OUT requested_at timestamptz, OUT expires_at timestamptz,
    OUT required_approvals integer, OUT accepts integer, OUT rejects integer, OUT voters integer,
    OUT my_vote text, OUT my_vote_at timestamptz)
    RETURNS SETOF record LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON openwop_router.route(caller);
    TARGET openwop_forward.pending_interrupts;
$$;
COMMENT ON FUNCTION openwop_router.pending_interrupts(jsonb) IS
  'openwop_forward.pending_interrupts on the shard of the caller''s tenant: the rows of openwop.pending_interrupts there for the caller; caller must be openwop_router.caller().';

CREATE FUNCTION openwop_router.inbox(
    OUT interrupt_id text, OUT run_id text, OUT node_id text, OUT kind text, OUT title text,
    OUT request jsonb, OUT resume_schema jsonb, OUT requested_at timestamptz, OUT expires_at timestamptz,
    OUT required_approvals integer, OUT accepts integer, OUT rejects integer, OUT voters integer,
    OUT my_vote text, OUT my_vote_at timestamptz)
    RETURNS SETOF record LANGUAGE plpgsql STABLE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    RETURN QUERY SELECT * FROM openwop_router.pending_interrupts(openwop_router.caller());
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop_router.inbox() IS
  'The rows of view openwop.pending_interrupts, from the shard of the caller''s tenant, for this session''s caller.';

CREATE VIEW openwop.pending_interrupts WITH (security_barrier) AS
SELECT interrupt_id, run_id, node_id, kind, title, request, resume_schema, requested_at, expires_at,
       required_approvals, accepts, rejects, voters, my_vote, my_vote_at
  FROM openwop_router.inbox()
 ORDER BY requested_at, interrupt_id;
COMMENT ON VIEW openwop.pending_interrupts IS
  'Router: the inbox, as openwop.pending_interrupts on the shard of the caller''s tenant shows it to the caller, oldest request first. A page reads the caller''s whole inbox on its shard: no LIMIT reaches the shard.';

/* ------------------------------------------------------------------------
 * Calls that every shard answers: administration (the same keys must be on
 * every shard, each shard its tenants' deadlines) and the reads that span
 * tenants (monitoring).  PL/Proxy sends them to every partition at once,
 * each in a transaction of its own there: when one
 * shard refuses or cannot be reached, its error is raised here, and what
 * the other shards did stays done (docs/scale-out.md, "When a shard
 * fails").
 * ------------------------------------------------------------------------ */

/*
 * Administration goes to the shards without a forwarded caller: it is the
 * extension owner's there (add_signing_key, retire_signing_key,
 * add_group_member, remove_group_member, stats_reset) or a login's bound to
 * "*" (sweep), and runs as the shard login the calling role is mapped to
 * (its own USER MAPPING for SERVER openwop, docs/scale-out.md), never as a
 * forwarded caller.  EXECUTE on these is the DBA's to grant.
 */

/* 32 bytes from pg_strong_random (through two version-4 UUIDs: 244 random bits, hashed). */
CREATE FUNCTION openwop_router.new_secret()
    RETURNS bytea LANGUAGE sql VOLATILE AS $$
    SELECT pg_catalog.sha256(pg_catalog.uuid_send(pg_catalog.gen_random_uuid()) OPERATOR(pg_catalog.||)
                             pg_catalog.uuid_send(pg_catalog.gen_random_uuid()))
$$;
COMMENT ON FUNCTION openwop_router.new_secret() IS
  'A new signing secret of 32 bytes (SHA-256 of two random UUIDs: 244 bits from pg_strong_random), made once here for every shard.';

CREATE FUNCTION openwop_router.add_signing_key(kid text, secret bytea)
    RETURNS SETOF text LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON ALL;
    SELECT openwop.add_signing_key(kid, secret);
$$;
COMMENT ON FUNCTION openwop_router.add_signing_key(text, bytea) IS
  'openwop.add_signing_key on every shard, as the shard login the calling role is mapped to.';

CREATE FUNCTION openwop.add_signing_key(kid text, secret bytea DEFAULT NULL)
    RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    added text[];
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    PERFORM openwop_router.require_writable('add_signing_key()');
    added := ARRAY(SELECT openwop_router.add_signing_key(kid, COALESCE(secret, openwop_router.new_secret())));
    RETURN added[1];
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.add_signing_key(text, bytea) IS
  'Router: openwop.add_signing_key on every shard with one secret (made here when secret is NULL), so every shard signs and verifies alike. Not atomic across shards: see docs/scale-out.md.';

CREATE FUNCTION openwop_router.retire_signing_key(kid text)
    RETURNS SETOF void LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON ALL;
    SELECT openwop.retire_signing_key(kid);
$$;
COMMENT ON FUNCTION openwop_router.retire_signing_key(text) IS
  'openwop.retire_signing_key on every shard, as the shard login the calling role is mapped to.';

CREATE FUNCTION openwop.retire_signing_key(kid text)
    RETURNS void LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    PERFORM openwop_router.require_writable('retire_signing_key()');
    PERFORM openwop_router.retire_signing_key(kid);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.retire_signing_key(text) IS
  'Router: openwop.retire_signing_key on every shard. Not atomic across shards: see docs/scale-out.md.';

/* Group members live with their tenant: the shard of tenant, which is the caller's when NULL. */
CREATE FUNCTION openwop_router.add_group_member(group_ref text, principal text, tenant text)
    RETURNS boolean LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON pg_catalog.hashtext(tenant);
    SELECT openwop.add_group_member(group_ref, principal, tenant);
$$;
COMMENT ON FUNCTION openwop_router.add_group_member(text, text, text) IS
  'openwop.add_group_member on the shard of tenant, as the shard login the calling role is mapped to.';

CREATE FUNCTION openwop.add_group_member(group_ref text, principal text, tenant text DEFAULT NULL)
    RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    PERFORM openwop_router.require_writable('add_group_member()');
    RETURN openwop_router.add_group_member(group_ref, principal,
                                           COALESCE(tenant, openwop_router.caller() OPERATOR(pg_catalog.->>) 'tenant'));
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.add_group_member(text, text, text) IS
  'Router: openwop.add_group_member on the shard of tenant (default: the caller''s tenant, as decided here).';

CREATE FUNCTION openwop_router.remove_group_member(group_ref text, principal text, tenant text)
    RETURNS boolean LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON pg_catalog.hashtext(tenant);
    SELECT openwop.remove_group_member(group_ref, principal, tenant);
$$;
COMMENT ON FUNCTION openwop_router.remove_group_member(text, text, text) IS
  'openwop.remove_group_member on the shard of tenant, as the shard login the calling role is mapped to.';

CREATE FUNCTION openwop.remove_group_member(group_ref text, principal text, tenant text DEFAULT NULL)
    RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    PERFORM openwop_router.require_writable('remove_group_member()');
    RETURN openwop_router.remove_group_member(group_ref, principal,
                                              COALESCE(tenant, openwop_router.caller() OPERATOR(pg_catalog.->>) 'tenant'));
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.remove_group_member(text, text, text) IS
  'Router: openwop.remove_group_member on the shard of tenant (default: the caller''s tenant, as decided here).';

CREATE FUNCTION openwop_router.sweep(max integer)
    RETURNS SETOF integer LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON ALL;
    SELECT openwop.sweep(max);
$$;
COMMENT ON FUNCTION openwop_router.sweep(integer) IS
  'openwop.sweep on every shard, as the shard login the calling role is mapped to.';

CREATE FUNCTION openwop.sweep(max integer DEFAULT 1000)
    RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    changed integer;
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    PERFORM openwop_router.require_writable('sweep()');
    SELECT pg_catalog.int4(pg_catalog.sum(n)) INTO changed FROM openwop_router.sweep(max) n;
    RETURN changed;
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.sweep(integer) IS
  'Router: openwop.sweep on every shard (at most max of each on each), the sum of what they changed. Each shard''s workers apply its deadlines anyway.';

CREATE FUNCTION openwop_router.stats_reset(all_databases boolean)
    RETURNS SETOF void LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON ALL;
    SELECT openwop.stats_reset(all_databases);
$$;
COMMENT ON FUNCTION openwop_router.stats_reset(boolean) IS
  'openwop.stats_reset on every shard, as the shard login the calling role is mapped to.';

CREATE FUNCTION openwop.stats_reset(all_databases boolean DEFAULT false)
    RETURNS void LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    PERFORM openwop_router.stats_reset(all_databases);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.stats_reset(boolean) IS
  'Router: openwop.stats_reset on every shard database (with all_databases, every database of every shard''s server).';


/*
 * Monitoring, from every shard, as the shard login the calling role is
 * mapped to (pg_monitor there reads them): pending interrupts by tenant and
 * kind (each tenant is on one shard), and each shard database's own worker
 * and counters (a shard's server reports every database it holds; only the
 * shard's own row is taken, so shards that share a server are not counted
 * twice).
 */
CREATE FUNCTION openwop_router.pending_summary_all(
    OUT tenant text, OUT kind text, OUT pending bigint, OUT oldest_requested_at timestamptz,
    OUT oldest_age interval, OUT next_deadline timestamptz, OUT due_within_5_minutes bigint,
    OUT due_within_1_hour bigint, OUT overdue bigint)
    RETURNS SETOF record LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON ALL;
    SELECT * FROM openwop.pending_summary;
$$;
COMMENT ON FUNCTION openwop_router.pending_summary_all() IS
  'openwop.pending_summary of every shard.';

CREATE FUNCTION openwop_router.workers_all(
    OUT role text, OUT database text, OUT pid integer, OUT started timestamptz,
    OUT last_timeout_pass timestamptz, OUT last_relay timestamptz, OUT relay_lag interval,
    OUT relayed bigint, OUT settled bigint, OUT timeout_passes bigint, OUT errors bigint,
    OUT last_error text, OUT last_error_at timestamptz, OUT serving boolean)
    RETURNS SETOF record LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON ALL;
    SELECT * FROM openwop.workers WHERE database OPERATOR(pg_catalog.=) pg_catalog.current_database();
$$;
COMMENT ON FUNCTION openwop_router.workers_all() IS
  'The database worker of each shard database (openwop.workers there, its own row).';

CREATE FUNCTION openwop_router.stats_all(
    OUT database text, OUT event text, OUT code text, OUT count bigint, OUT since timestamptz)
    RETURNS SETOF record LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON ALL;
    SELECT * FROM openwop.stats WHERE database OPERATOR(pg_catalog.=) pg_catalog.current_database();
$$;
COMMENT ON FUNCTION openwop_router.stats_all() IS
  'The counters of each shard database (openwop.stats there, its own rows).';

/*
 * The three read through PL/Proxy, its errors as every routed call's: a
 * shard that cannot be reached is 08006 shard_unavailable, not PL/Proxy's
 * message naming the shard's server (openwop_router.reraise).
 */
CREATE FUNCTION openwop_router.pending_summary(
    OUT tenant text, OUT kind text, OUT pending bigint, OUT oldest_requested_at timestamptz,
    OUT oldest_age interval, OUT next_deadline timestamptz, OUT due_within_5_minutes bigint,
    OUT due_within_1_hour bigint, OUT overdue bigint)
    RETURNS SETOF record LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    RETURN QUERY SELECT * FROM openwop_router.pending_summary_all();
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop_router.pending_summary() IS
  'The rows of openwop_router.pending_summary_all(), with a shard''s failure raised as every routed call''s (08006 shard_unavailable).';

CREATE FUNCTION openwop_router.workers(
    OUT role text, OUT database text, OUT pid integer, OUT started timestamptz,
    OUT last_timeout_pass timestamptz, OUT last_relay timestamptz, OUT relay_lag interval,
    OUT relayed bigint, OUT settled bigint, OUT timeout_passes bigint, OUT errors bigint,
    OUT last_error text, OUT last_error_at timestamptz, OUT serving boolean)
    RETURNS SETOF record LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    RETURN QUERY SELECT * FROM openwop_router.workers_all();
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop_router.workers() IS
  'The rows of openwop_router.workers_all(), with a shard''s failure raised as every routed call''s (08006 shard_unavailable).';

CREATE FUNCTION openwop_router.stats(
    OUT database text, OUT event text, OUT code text, OUT count bigint, OUT since timestamptz)
    RETURNS SETOF record LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    RETURN QUERY SELECT * FROM openwop_router.stats_all();
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop_router.stats() IS
  'The rows of openwop_router.stats_all(), with a shard''s failure raised as every routed call''s (08006 shard_unavailable).';

CREATE VIEW openwop.pending_summary AS
SELECT tenant, kind, pending, oldest_requested_at, oldest_age, next_deadline,
       due_within_5_minutes, due_within_1_hour, overdue
  FROM openwop_router.pending_summary();
COMMENT ON VIEW openwop.pending_summary IS
  'Router: openwop.pending_summary of every shard, one row per tenant and kind (a tenant lives on one shard).';

CREATE VIEW openwop.workers AS
SELECT role, database, pid, started, last_timeout_pass, last_relay, relay_lag, relayed, settled,
       timeout_passes, errors, last_error, last_error_at, serving
  FROM openwop_router.workers();
COMMENT ON VIEW openwop.workers IS
  'Router: the database worker serving each shard database (database names the shard database; the launchers are on the shards'' servers).';

CREATE VIEW openwop.stats AS
SELECT database, event, code, count, since
  FROM openwop_router.stats();
COMMENT ON VIEW openwop.stats IS
  'Router: the cumulative counters of each shard database (database names it).';

/* ------------------------------------------------------------------------
 * Privileges.  As on a shard, no role may call anything until the DBA
 * grants it; a role calls openwop.F with EXECUTE on openwop.F and on its
 * twin openwop_router.F (openwop.F is SECURITY INVOKER), USAGE on both
 * schemas and on FOREIGN SERVER openwop, and a user mapping
 * (docs/scale-out.md, "Grants").  The routing functions themselves are
 * anyone's: they route, or refuse.
 * ------------------------------------------------------------------------ */

REVOKE ALL ON FUNCTION
    openwop_router.create_run(jsonb, text, jsonb),
    openwop.create_run(text, jsonb),
    openwop_router.start_node(jsonb, text, text, text),
    openwop.start_node(text, text, text),
    openwop_router.complete_node(jsonb, text, text, jsonb),
    openwop.complete_node(text, text, jsonb),
    openwop_router.fail_node(jsonb, text, text, jsonb),
    openwop.fail_node(text, text, jsonb),
    openwop_router.complete_run(jsonb, text, jsonb),
    openwop.complete_run(text, jsonb),
    openwop_router.fail_run(jsonb, text, jsonb, text),
    openwop.fail_run(text, jsonb, text),
    openwop_router.cancel_run(jsonb, text, text),
    openwop.cancel_run(text, text),
    openwop_router.run_snapshot(jsonb, text),
    openwop.run_snapshot(text),
    openwop_router.events(jsonb, text, bigint, integer),
    openwop.events(text, bigint, integer),
    openwop_router.fork_run(jsonb, text, jsonb),
    openwop.fork_run(text, jsonb),
    openwop_router.json_schema_errors(jsonb, jsonb, jsonb),
    openwop.json_schema_errors(jsonb, jsonb),
    openwop_router.interrupt(jsonb, text, text, jsonb, integer),
    openwop.interrupt(text, text, jsonb, integer),
    openwop_router.resolve_interrupt(jsonb, text, text, jsonb, text),
    openwop.resolve_interrupt(text, text, jsonb, text),
    openwop_router.confirm_credential(jsonb, text, text, text),
    openwop.confirm_credential(text, text, text),
    openwop_router.record_agent_decision(jsonb, text, text, text, double precision, jsonb),
    openwop.record_agent_decision(text, text, text, double precision, jsonb),
    openwop_router.capabilities(jsonb),
    openwop.capabilities(),
    openwop_router.current_caller(jsonb),
    openwop.current_caller(),
    openwop_router.mint_interrupt_token(jsonb, text, text, interval, text),
    openwop.mint_interrupt_token(text, text, interval, text),
    openwop_router.inspect_interrupt(jsonb, text),
    openwop.inspect_interrupt(text),
    openwop_router.verify_interrupt_token(jsonb, text),
    openwop.verify_interrupt_token(text),
    openwop_router.resolve_interrupt_by_token(jsonb, text, jsonb, text),
    openwop.resolve_interrupt_by_token(text, jsonb, text),
    openwop_router.inbox_tenant(jsonb),
    openwop.inbox_tenant(),
    openwop_router.inbox_voter(jsonb),
    openwop.inbox_voter(),
    openwop_router.may_decide(jsonb, text, text, text, jsonb),
    openwop.may_decide(text, text, text, jsonb),
    openwop_router.flowdrop_interrupt(jsonb, text),
    openwop.flowdrop_interrupt(text),
    openwop_router.flowdrop_interrupts(jsonb, text[]),
    openwop.flowdrop_interrupts(text[]),
    openwop_router.add_signing_key(text, bytea),
    openwop.add_signing_key(text, bytea),
    openwop_router.retire_signing_key(text),
    openwop.retire_signing_key(text),
    openwop_router.add_group_member(text, text, text),
    openwop.add_group_member(text, text, text),
    openwop_router.remove_group_member(text, text, text),
    openwop.remove_group_member(text, text, text),
    openwop_router.sweep(integer),
    openwop.sweep(integer),
    openwop_router.stats_reset(boolean),
    openwop.stats_reset(boolean),
    openwop_router.pending_interrupts(jsonb),
    openwop_router.inbox(),
    openwop_router.pending_summary(),
    openwop_router.workers(),
    openwop_router.stats(),
    openwop_router.pending_summary_all(),
    openwop_router.workers_all(),
    openwop_router.stats_all()
FROM PUBLIC;
REVOKE ALL ON openwop.pending_interrupts, openwop.pending_summary, openwop.workers, openwop.stats FROM PUBLIC;

/* Monitoring, as on a shard: pg_monitor reads the three views (with a user mapping and USAGE on SERVER openwop). */
GRANT USAGE ON SCHEMA openwop, openwop_router TO pg_monitor;
GRANT EXECUTE ON FUNCTION openwop_router.pending_summary(), openwop_router.workers(), openwop_router.stats(),
                          openwop_router.pending_summary_all(), openwop_router.workers_all(), openwop_router.stats_all() TO pg_monitor;
GRANT SELECT ON openwop.pending_summary, openwop.workers, openwop.stats TO pg_monitor;

/* ----------
 * 0.2.0.  The part below is kept in step with the same part of
 * openwop_router--0.1.0--0.2.0.sql.
 * ----------
 */

-- == 0.2.0: over shards of openwop_interrupt 0.11.0 (begin) ==
/* ------------------------------------------------------------------------
 * The shards' openwop.workers says why a shard database has no worker
 * (reason); a signing key is revoked on every shard at once
 * (retire_signing_key(kid, immediately)).  Shards run openwop_interrupt
 * 0.11.0 or later.
 * ---------------------------------------------------------------------- */
DROP VIEW openwop.workers;
DROP FUNCTION openwop_router.workers();
DROP FUNCTION openwop_router.workers_all();

CREATE FUNCTION openwop_router.workers_all(
    OUT role text, OUT database text, OUT pid integer, OUT started timestamptz,
    OUT last_timeout_pass timestamptz, OUT last_relay timestamptz, OUT relay_lag interval,
    OUT relayed bigint, OUT settled bigint, OUT timeout_passes bigint, OUT errors bigint,
    OUT last_error text, OUT last_error_at timestamptz, OUT serving boolean, OUT reason text)
    RETURNS SETOF record LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON ALL;
    SELECT role, database, pid, started, last_timeout_pass, last_relay, relay_lag, relayed, settled,
           timeout_passes, errors, last_error, last_error_at, serving, reason
      FROM openwop.workers WHERE database OPERATOR(pg_catalog.=) pg_catalog.current_database();
$$;
COMMENT ON FUNCTION openwop_router.workers_all() IS
  'The database worker of each shard database (openwop.workers there, its own row), or the row that says why none serves it.';

CREATE FUNCTION openwop_router.workers(
    OUT role text, OUT database text, OUT pid integer, OUT started timestamptz,
    OUT last_timeout_pass timestamptz, OUT last_relay timestamptz, OUT relay_lag interval,
    OUT relayed bigint, OUT settled bigint, OUT timeout_passes bigint, OUT errors bigint,
    OUT last_error text, OUT last_error_at timestamptz, OUT serving boolean, OUT reason text)
    RETURNS SETOF record LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    RETURN QUERY SELECT * FROM openwop_router.workers_all();
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop_router.workers() IS
  'The rows of openwop_router.workers_all(), with a shard''s failure raised as every routed call''s (08006 shard_unavailable).';

CREATE VIEW openwop.workers AS
SELECT role, database, pid, started, last_timeout_pass, last_relay, relay_lag, relayed, settled,
       timeout_passes, errors, last_error, last_error_at, serving, reason
  FROM openwop_router.workers();
COMMENT ON VIEW openwop.workers IS
  'Router: the database worker serving each shard database (database names the shard database; the launchers are on the shards'' servers), or, for a shard database none serves, a row that says why (reason).';

REVOKE ALL ON FUNCTION openwop_router.workers(), openwop_router.workers_all() FROM PUBLIC;
REVOKE ALL ON openwop.workers FROM PUBLIC;
GRANT EXECUTE ON FUNCTION openwop_router.workers(), openwop_router.workers_all() TO pg_monitor;
GRANT SELECT ON openwop.workers TO pg_monitor;

CREATE FUNCTION openwop_router.retire_signing_key(kid text, immediately boolean)
    RETURNS SETOF void LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON ALL;
    SELECT openwop.retire_signing_key(kid, immediately);
$$;
COMMENT ON FUNCTION openwop_router.retire_signing_key(text, boolean) IS
  'openwop.retire_signing_key(kid, immediately) on every shard, as the shard login the calling role is mapped to.';

CREATE FUNCTION openwop.retire_signing_key(kid text, immediately boolean)
    RETURNS void LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    PERFORM openwop_router.require_writable('retire_signing_key()');
    PERFORM openwop_router.retire_signing_key(kid, immediately);
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.retire_signing_key(text, boolean) IS
  'Router: openwop.retire_signing_key(kid, immediately) on every shard: immediately revokes the key there (no token it signed verifies, its secret erased). Not atomic across shards: see docs/scale-out.md.';
REVOKE ALL ON FUNCTION openwop_router.retire_signing_key(text, boolean), openwop.retire_signing_key(text, boolean) FROM PUBLIC;
/*
 * A key made by the router: made and sealed on the first shard, and the
 * others take its ciphertext (import_signing_key; the shards share the
 * key-encryption passphrase), so the secret never sits in the router's
 * memory nor travels, nor reaches a shard's log, in clear.  A secret the
 * caller gives travels to every shard as before.
 */
CREATE FUNCTION openwop_router.add_signing_key_first(kid text)
    RETURNS SETOF text LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON 0;
    SELECT openwop.add_signing_key(kid);
$$;
COMMENT ON FUNCTION openwop_router.add_signing_key_first(text) IS
  'openwop.add_signing_key(kid) on the first shard (a secret made there), as the shard login the calling role reaches it as.';

CREATE FUNCTION openwop_router.export_signing_key(kid text)
    RETURNS SETOF bytea LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON 0;
    SELECT openwop.export_signing_key(kid);
$$;
COMMENT ON FUNCTION openwop_router.export_signing_key(text) IS
  'openwop.export_signing_key on the first shard: the key''s secret, sealed under the shards'' passphrase.';

CREATE FUNCTION openwop_router.import_signing_key(kid text, sealed bytea)
    RETURNS SETOF text LANGUAGE plproxy VOLATILE AS $$
    CLUSTER 'openwop';
    RUN ON ALL;
    SELECT openwop.import_signing_key(kid, sealed);
$$;
COMMENT ON FUNCTION openwop_router.import_signing_key(text, bytea) IS
  'openwop.import_signing_key on every shard (the first has it already: no error).';

CREATE OR REPLACE FUNCTION openwop.add_signing_key(kid text, secret bytea DEFAULT NULL)
    RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    sealed bytea;
    e_state text; e_message text; e_detail text; e_hint text;
BEGIN
    PERFORM openwop_router.require_writable('add_signing_key()');
    IF secret IS NULL THEN
        PERFORM openwop_router.add_signing_key_first(kid);
        sealed := (SELECT s FROM openwop_router.export_signing_key(kid) s LIMIT 1);
        PERFORM openwop_router.import_signing_key(kid, sealed);
    ELSE
        PERFORM openwop_router.add_signing_key(kid, secret);
    END IF;
    RETURN kid;
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS e_state = RETURNED_SQLSTATE, e_message = MESSAGE_TEXT,
                            e_detail = PG_EXCEPTION_DETAIL, e_hint = PG_EXCEPTION_HINT;
    PERFORM openwop_router.reraise(e_state, e_message, e_detail, e_hint);
END
$$;
COMMENT ON FUNCTION openwop.add_signing_key(text, bytea) IS
  'Router: one signing key on every shard. Without a secret, made and sealed on the first shard and imported sealed by the others (the shards share the key-encryption passphrase): the secret never travels in clear. A given secret travels to every shard. Not atomic across shards: see docs/scale-out.md.';
REVOKE ALL ON FUNCTION openwop_router.add_signing_key_first(text), openwop_router.export_signing_key(text),
    openwop_router.import_signing_key(text, bytea) FROM PUBLIC;
-- == over shards of openwop_interrupt 0.11.0 (end) ==
