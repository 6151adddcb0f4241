/*
 * openwop_router 0.1.0 -> 0.2.0: over shards of openwop_interrupt 0.11.0.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION openwop_router UPDATE TO '0.2.0'" to load this file. \quit

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
