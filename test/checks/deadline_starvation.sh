#!/usr/bin/env bash
# One tenant cannot starve another's deadlines.  Tenant "hog" has 1,000
# interrupts past their deadline and holds all their runs locked in one
# open transaction; tenant acme's approval must still be rejected by the
# timeout worker soon after its deadline (the worker passes locked runs
# over), while the hog transaction is still open.  Once it ends, the
# worker settles the 1,000 runs, each in a transaction of its own (so it
# never holds many runs locked at once): 1,000 distinct xmins.
# Needs the cluster test/run starts (preloaded, the worker in "postgres").
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
db=postgres
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d $db -c "SET openwop.tenant = '${T:-acme}'" -c "$1" | tail -n 1; }
hog_pid=""
cleanup() {
	[ -n "$hog_pid" ] && kill "$hog_pid" 2>/dev/null || true
	psql -X -q -d $db -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'openwop_hog'" >/dev/null 2>&1 || true
	psql -X -q -d $db -c "DROP EXTENSION IF EXISTS openwop_interrupt" >/dev/null 2>&1 || true
}
trap cleanup EXIT

wait_for 20 "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'openwop timeout worker'" 1
psql -X -q -v ON_ERROR_STOP=1 -d $db -c "DROP EXTENSION IF EXISTS openwop_interrupt" -c "CREATE EXTENSION openwop_interrupt"

# 1,000 hog runs, each waiting on an external event (deadline far away for now)
psql -X -q -v ON_ERROR_STOP=1 -d $db >/dev/null <<'SQL'
SET openwop.tenant = 'hog';
DO $$
DECLARE run text;
BEGIN
  FOR i IN 1..1000 LOOP
    run := format('hog/starve-run-%s', lpad(i::text, 8, '0'));
    PERFORM openwop.create_run('starve', jsonb_build_object('runId', run));
    PERFORM openwop.start_node(run, 'wait');
    PERFORM openwop.interrupt(run, 'wait', '{"kind": "external-event", "timeoutMs": 3600000,
                                            "data": {"eventType": "paid", "correlation": {}}}');
  END LOOP;
END $$;
SQL

# the hog holds all its runs locked in one open transaction ...
PGAPPNAME=openwop_hog psql -X -q -d $db -c "BEGIN" \
	-c "SELECT count(*) FROM (SELECT 1 FROM openwop.runs WHERE tenant = 'hog' FOR UPDATE) locked" \
	-c "SELECT pg_sleep(300)" -c "COMMIT" >/dev/null 2>&1 &
hog_pid=$!
wait_for 20 "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'openwop_hog' AND query LIKE '%pg_sleep%'" 1
# ... while their deadlines pass: 1,000 due interrupts ahead of anyone else's
q "UPDATE openwop.interrupts SET expires_at = now() - interval '1 minute' WHERE tenant = 'hog'" >/dev/null

# acme's approval, due in 1.5 s
start=$SECONDS
psql -X -q -v ON_ERROR_STOP=1 -d $db >/dev/null <<'SQL'
SET openwop.tenant = 'acme';
SELECT openwop.create_run('starve', '{"runId": "acme/starve-gate-00000001"}');
SELECT openwop.start_node('acme/starve-gate-00000001', 'gate');
SELECT openwop.interrupt('acme/starve-gate-00000001', 'gate', '{"kind": "approval", "timeoutMs": 1500,
  "data": {"artifactId": "a", "artifactType": "doc", "title": "T", "actions": ["accept", "reject"]}}');
SQL
wait_for 30 "SELECT openwop.run_snapshot('acme/starve-gate-00000001') ->> 'status'" failed
echo "acme's deadline was applied $((SECONDS - start)) s after it was raised, past 1,000 locked due runs"
[ "$(q "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'openwop_hog' AND query LIKE '%pg_sleep%'")" = 1 ] \
	|| { echo "the hog transaction ended before acme's deadline was applied: the check proved nothing" >&2; exit 1; }
[ "$(T=hog q "SELECT count(*) FROM openwop.runs WHERE tenant = 'hog' AND status = 'waiting-external'")" = 1000 ]

# the hog lets go: the worker settles its 1,000 runs, one transaction each
psql -X -q -d $db -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'openwop_hog'" >/dev/null
wait $hog_pid 2>/dev/null || true
hog_pid=""
wait_for 120 "SELECT count(*) FROM openwop.runs WHERE tenant = 'hog' AND status = 'cancelled'" 1000
[ "$(q "SELECT count(DISTINCT xmin::text) FROM openwop.runs WHERE tenant = 'hog'")" = 1000 ]
echo "the 1,000 hog runs were cancelled, each in a transaction of its own"
