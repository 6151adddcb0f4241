-- A shard database as docs/scale-out.md ("In every shard database") sets it
-- up: the extension, and the grants the router's login (openwop_router)
-- needs to serve the routed API.  Used by test/router_lib.sh and
-- test/checks/router_credentials.sh.
CREATE EXTENSION openwop_interrupt;
GRANT USAGE ON SCHEMA openwop, openwop_forward TO openwop_router;
-- the forwarding functions, and the openwop functions they call
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop_forward TO openwop_router;
DO $$
DECLARE f regprocedure;
BEGIN
  FOR f IN SELECT p.oid FROM pg_proc p
            WHERE p.pronamespace = 'openwop'::regnamespace
              AND p.proname IN (SELECT proname FROM pg_proc WHERE pronamespace = 'openwop_forward'::regnamespace)
  LOOP
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO openwop_router', f);
  END LOOP;
END $$;
GRANT EXECUTE ON FUNCTION openwop.inbox_waiting(text) TO openwop_router;
GRANT SELECT ON openwop.pending_interrupts TO openwop_router;
-- administration through the router runs as the shard login a router role
-- reaches it as: the router's login may call it, to be refused as on a
-- shard (403)
GRANT EXECUTE ON FUNCTION openwop.add_signing_key(text, bytea), openwop.retire_signing_key(text),
    openwop.retire_signing_key(text, boolean),
    openwop.export_signing_key(text), openwop.import_signing_key(text, bytea),
    openwop.add_group_member(text, text, text), openwop.remove_group_member(text, text, text),
    openwop.stats_reset(boolean) TO openwop_router;
