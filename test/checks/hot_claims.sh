#!/usr/bin/env bash
# The claim is a HOT update when the resolve reads its rows by their hints
# (0.10.0): a fetch by tid prunes no page, so the hint read prunes it first,
# as an index scan does.  Without that, a page of interrupts raised one by
# one (fillfactor 60: about six rows, room for four resolved versions)
# gave no room to one claim in five, which then wrote both unique indexes
# of interrupts anew.  Each call in a transaction of its own, as a host
# makes them (a transaction's own dead versions are never pruned, so one
# session in one transaction would prove nothing).
# Needs the cluster test/run starts (preloaded, default settings).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
D=ow_hot_claims
cleanup() { dropdb --if-exists $D >/dev/null 2>&1 || true; }
trap cleanup EXIT
cleanup
createdb $D
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d $D "$@"; }
q -c "CREATE EXTENSION openwop_interrupt" \
  -c "DO \$\$ BEGIN
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'openwop_approver') THEN CREATE ROLE openwop_approver; END IF;
        EXECUTE format('GRANT openwop_approver TO %I', current_user);
      END \$\$" \
  -c "DO \$\$ DECLARE t regclass; BEGIN
        -- an autovacuum or autoanalyze pinning a page, or holding the
        -- horizon, would rightly keep a claim from pruning: none runs here
        FOR t IN SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                  WHERE n.nspname = 'openwop' AND c.relkind = 'r' LOOP
          EXECUTE format('ALTER TABLE %s SET (autovacuum_enabled = off, toast.autovacuum_enabled = off)', t);
        END LOOP; END \$\$"
q <<'SQL'
SET openwop.tenant = 'acme';
CREATE TABLE claims (run text, upd bigint, hot bigint, ex_upd bigint, ex_hot bigint);
-- 30 gates, each call committed on its own
CREATE PROCEDURE raise_gates() LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
  FOR n IN 1 .. 30 LOOP
    r := 'acme/hot-claims-run-' || lpad(n::text, 3, '0');
    PERFORM openwop.create_run('hot-claims', jsonb_build_object('runId', r));
    COMMIT;
    PERFORM openwop.start_node(r, 'gate');
    COMMIT;
    PERFORM openwop.interrupt(r, 'gate', '{"kind": "approval", "data": {"artifactId": "a",
      "artifactType": "doc", "title": "T", "actions": ["accept", "reject"]}}');
    COMMIT;
  END LOOP;
END $$;
-- each resolve in a transaction of its own, with what it updated, HOT or not
-- (the counters read before and after it: within one CALL they add up)
CREATE FUNCTION counters() RETURNS bigint[] LANGUAGE sql AS $$
  SELECT ARRAY[i.n_tup_upd, i.n_tup_hot_upd, x.n_tup_upd, x.n_tup_hot_upd]
    FROM pg_stat_xact_user_tables i, pg_stat_xact_user_tables x
   WHERE i.relid = 'openwop.interrupts'::regclass AND x.relid = 'openwop.node_executions'::regclass
$$;
CREATE PROCEDURE resolve_gates() LANGUAGE plpgsql AS $$
DECLARE r text; b bigint[]; a bigint[];
BEGIN
  FOR n IN 1 .. 30 LOOP
    r := 'acme/hot-claims-run-' || lpad(n::text, 3, '0');
    b := counters();
    PERFORM openwop.resolve_interrupt(r, 'gate', '{"action": "accept"}');
    a := counters();
    INSERT INTO claims VALUES (r, a[1] - b[1], a[2] - b[2], a[3] - b[3], a[4] - b[4]);
    COMMIT;
  END LOOP;
END $$;
CALL raise_gates();
SQL
hinted=$(q -c "SELECT count(*) FROM openwop.open_interrupts WHERE interrupt_tid IS NOT NULL AND execution_tid IS NOT NULL")
[ "$hinted" = 30 ] || { echo "expected 30 open interrupts with row hints, found $hinted" >&2; exit 1; }
# the test means something only if the interrupts share pages that fill up
pages=$(q -c "SELECT count(DISTINCT (ctid::text::point)[0]) FROM openwop.interrupts")
[ "$pages" -le 8 ] || { echo "the 30 interrupts are spread over $pages pages; expected about six to a page" >&2; exit 1; }
q -c "SET openwop.tenant = 'acme'" -c "CALL resolve_gates()"
read -r n upd hot ex_upd ex_hot <<<"$(q -F' ' -c "SELECT count(*), sum(upd), sum(hot), sum(ex_upd), sum(ex_hot) FROM claims")"
echo "hot_claims_resolved: $n resolves, each in its own transaction"
[ "$n" = 30 ] || exit 1
why() {   # what could have held a prune back
	q -c "SELECT relname, last_autovacuum, last_autoanalyze FROM pg_stat_user_tables WHERE schemaname = 'openwop'" \
	  -c "SELECT pid, backend_type, backend_xmin FROM pg_stat_activity WHERE backend_xmin IS NOT NULL" >&2
}
echo "hot_claims_interrupts: $hot of $upd interrupt claims were HOT updates"
[ "$upd" = 30 ] && [ "$hot" = 30 ] || { echo "a claim of an interrupt was not a HOT update" >&2; why; exit 1; }
echo "hot_claims_executions: $ex_hot of $ex_upd execution updates were HOT updates"
[ "$ex_upd" -ge 30 ] && [ "$ex_hot" = "$ex_upd" ] || { echo "an update of a node execution was not a HOT update" >&2; why; exit 1; }
echo "hot-claim checks passed"
