#!/usr/bin/env bash
# The monitoring views (openwop.workers, openwop.pending_summary,
# openwop.stats): what they count, who may read them (pg_monitor, no one
# else), stats_reset(), and every query of docs/postgres_exporter.yaml run
# as a pg_monitor login.  Needs the cluster test/run starts (preloaded).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
db=openwop_monitoring
trap 'dropdb --if-exists $db >/dev/null 2>&1 || true;
      psql -X -q -d postgres -c "DROP ROLE IF EXISTS ow_watcher" -c "DROP ROLE IF EXISTS ow_stranger" >/dev/null 2>&1 || true' EXIT
dropdb --if-exists $db
createdb $db
psql -X -q -v ON_ERROR_STOP=1 -d $db -c "CREATE EXTENSION openwop_interrupt"
make_login_approver $db
psql -X -q -v ON_ERROR_STOP=1 -v pw="${PGPASSWORD:-unused}" -d postgres >/dev/null <<'SQL'
DROP ROLE IF EXISTS ow_watcher;
DROP ROLE IF EXISTS ow_stranger;
CREATE ROLE ow_watcher LOGIN IN ROLE pg_monitor PASSWORD :'pw';
CREATE ROLE ow_stranger LOGIN PASSWORD :'pw';
SQL
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d $db -c "SET openwop.tenant = 'acme'" -c "$1" | tail -n 1; }
as() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d $db -U "$1" -c "$2" | tail -n 1; }
stat() { q "SELECT count FROM openwop.stats WHERE database = current_database() AND event = '$1' AND code IS NOT DISTINCT FROM $2"; }

wait_served $db >/dev/null
q "SELECT openwop.stats_reset()" >/dev/null
[ "$(q "SELECT count(*) FROM openwop.stats WHERE database = current_database()")" = 24 ]
[ "$(q "SELECT sum(count) FROM openwop.stats WHERE database = current_database()")" = 0 ]
echo "stats: 24 counters for this database (resolved, voted, expired, reminded, escalated, notified, notifications_dropped, notifications_dead, 16 refusal codes), zero after a reset"

# three gates: one resolved, one voted on (2 of 2), one left to its deadline; one refusal
psql -X -q -v ON_ERROR_STOP=1 -d $db >/dev/null <<'SQL'
SET openwop.tenant = 'acme';
SELECT openwop.create_run('mon', '{"runId": "acme/mon-run-00000001"}');
SELECT openwop.start_node('acme/mon-run-00000001', 'a');
SELECT openwop.start_node('acme/mon-run-00000001', 'b');
SELECT openwop.start_node('acme/mon-run-00000001', 'c');
SELECT openwop.interrupt('acme/mon-run-00000001', 'a', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc", "title": "T", "actions": ["accept"]}}');
SELECT openwop.interrupt('acme/mon-run-00000001', 'b', '{"kind": "approval", "data": {"artifactId": "b", "artifactType": "doc", "title": "T", "actions": ["accept"], "requiredApprovals": 2}}');
SELECT openwop.interrupt('acme/mon-run-00000001', 'c', '{"kind": "clarification", "timeoutMs": 3600000, "data": {"questions": [{"id": "q", "question": "?"}]}}');
SQL
[ "$(q "SELECT pending || '/' || due_within_1_hour || '/' || due_within_5_minutes || '/' || overdue FROM openwop.pending_summary WHERE tenant = 'acme' AND kind = 'approval'")" = "2/0/0/0" ]
[ "$(q "SELECT pending || '/' || due_within_1_hour || '/' || overdue || '/' || (next_deadline > now() + interval '59 minutes') FROM openwop.pending_summary WHERE tenant = 'acme' AND kind = 'clarification'")" = "1/1/0/true" ]
echo "pending_summary: two approvals and a clarification due within the hour"

q "SELECT openwop.resolve_interrupt('acme/mon-run-00000001', 'a', '{\"action\": \"accept\"}')" >/dev/null
q "SELECT openwop.resolve_interrupt('acme/mon-run-00000001', 'b', '{\"action\": \"accept\"}')" >/dev/null
# rolled back: neither counted
q "BEGIN; SELECT openwop.resolve_interrupt('acme/mon-run-00000001', 'b', '{\"action\": \"accept\"}'); ROLLBACK" >/dev/null 2>&1 || true
psql -X -q -v ON_ERROR_STOP=1 -d $db >/dev/null <<'SQL'
SET openwop.tenant = 'acme';
BEGIN;
SAVEPOINT s;
SELECT openwop.resolve_interrupt('acme/mon-run-00000001', 'b', '{"action": "accept"}');
ROLLBACK TO SAVEPOINT s;
COMMIT;
SQL
# a refusal: counted when raised, its transaction rolled back
psql -X -q -d $db -c "SET openwop.tenant = 'acme'" -c "SELECT openwop.run_snapshot('acme/mon-run-99999999')" >/dev/null 2>&1 || true
# the deadline, applied by the worker
q "UPDATE openwop.open_interrupts SET expires_at = now() - interval '1 second' WHERE run_id = 'acme/mon-run-00000001' AND node_id = 'c';
   UPDATE openwop.interrupts SET expires_at = now() - interval '1 second' WHERE run_id = 'acme/mon-run-00000001' AND node_id = 'c'" >/dev/null
[ "$(q "SELECT overdue FROM openwop.pending_summary WHERE tenant = 'acme' AND kind = 'clarification'")" = 1 ]
q "SELECT openwop.sweep()" >/dev/null
[ "$(stat resolved NULL)/$(stat voted NULL)/$(stat expired NULL)/$(stat refused "'not_found'")" = "1/1/1/1" ] ||
	{ q "SELECT string_agg(event || coalesce(':' || code, '') || '=' || count, ', ') FROM openwop.stats WHERE database = current_database() AND count > 0" >&2; exit 1; }
# the expired clarification cancelled the run, and with it the gate still pending
[ "$(q "SELECT count(*) FROM openwop.pending_summary WHERE tenant = 'acme'")" = 0 ]
echo "stats: one resolved, one vote, one deadline, one not_found; the rolled-back and the savepoint's not counted"

# the workers view
[ "$(q "SELECT count(*) FROM openwop.workers WHERE role = 'launcher' AND pid IS NOT NULL")" = 1 ]
[ "$(q "SELECT (relayed > 0) || '/' || (last_relay IS NOT NULL) || '/' || (timeout_passes > 0) || '/' || serving FROM openwop.workers WHERE database = current_database()")" = "true/true/true/true" ]
echo "workers: the launcher, and this database's worker serving, relaying and passing"

# who may read: pg_monitor, not anyone else; reset: superusers only
for v in workers pending_summary stats; do
	as ow_watcher "SELECT count(*) >= 0 FROM openwop.$v" >/dev/null
	if as ow_stranger "SELECT count(*) FROM openwop.$v" 2>/dev/null; then echo "ow_stranger read openwop.$v" >&2; exit 1; fi
done
if as ow_watcher "SELECT openwop.stats_reset()" 2>/dev/null; then echo "pg_monitor reset the counters" >&2; exit 1; fi
if as ow_watcher "SELECT * FROM openwop.runs LIMIT 1" 2>/dev/null; then echo "pg_monitor read openwop.runs" >&2; exit 1; fi
[ "$(stat resolved NULL)" = 1 ]
echo "pg_monitor reads the three views and nothing else; it cannot reset; others read none"

# every query of the postgres_exporter file, as a pg_monitor login (a gate pending, so each has rows)
psql -X -q -v ON_ERROR_STOP=1 -d $db >/dev/null <<'SQL'
SET openwop.tenant = 'acme';
SELECT openwop.create_run('mon', '{"runId": "acme/mon-run-00000002"}');
SELECT openwop.start_node('acme/mon-run-00000002', 'a');
SELECT openwop.interrupt('acme/mon-run-00000002', 'a', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc", "title": "T", "actions": ["accept"]}}');
SQL
n=0
while IFS= read -r line; do
	sql=$(printf '%s' "$line" | sed -n 's/^  query: "\(.*\)"$/\1/p')
	[ -n "$sql" ] || continue
	rows=$(as ow_watcher "SELECT count(*) FROM ($sql) x")
	[ "$rows" -ge 1 ] || { echo "exporter query returned no row: $sql" >&2; exit 1; }
	n=$((n + 1))
done <docs/postgres_exporter.yaml
[ "$n" = 3 ]
echo "the 3 queries of docs/postgres_exporter.yaml run as a pg_monitor login"

# a role granted stats_reset (a router's login is, on every shard) resets this database's counters, never every database's
psql -X -q -v ON_ERROR_STOP=1 -d $db -c "GRANT USAGE ON SCHEMA openwop TO ow_stranger" \
	-c "GRANT EXECUTE ON FUNCTION openwop.stats_reset(boolean) TO ow_stranger" >/dev/null
err=$(psql -X -q -d $db -U ow_stranger -v VERBOSITY=sqlstate -c "SELECT openwop.stats_reset(true)" 2>&1 || true)
[ "$(grep -o PT403 <<<"$err")" = PT403 ] || { echo "a granted role reset every database's counters: $err" >&2; exit 1; }
as ow_stranger "SELECT openwop.stats_reset()" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -d $db -c "REVOKE ALL ON FUNCTION openwop.stats_reset(boolean) FROM ow_stranger" \
	-c "REVOKE USAGE ON SCHEMA openwop FROM ow_stranger" >/dev/null
echo "stats_reset_every_database_superuser_only: a granted role resets this database's counters, every database's is 403"

q "SELECT openwop.stats_reset(true)" >/dev/null
[ "$(q "SELECT count(*) FROM openwop.stats WHERE count > 0")" = 0 ]
echo "monitoring checks passed"
