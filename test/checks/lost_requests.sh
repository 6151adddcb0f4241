#!/usr/bin/env bash
# No database with the extension stays unserved.  CREATE EXTENSION in a
# prepared transaction tells the launcher nothing (a prepared transaction
# runs no commit callback), so the database it probed before stays "absent"
# to it: that is the lost request.  A session that looks at openwop.workers
# there sees the database with a reason and asks the launcher again; a
# transaction that raises a deadline there asks too; either way the
# database is served within seconds, and the launcher logs it.  Needs the
# cluster test/run starts (preloaded, max_prepared_transactions > 0).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
dbs="ow_lost_view ow_lost_deadline"
log=$(server_log_file)
[ -r "$log" ] || { echo "cannot read the server log [$log]" >&2; exit 1; }
cleanup() {
	for d in $dbs; do
		psql -X -q -d $d -c "ROLLBACK PREPARED 'ow_lost_$d'" >/dev/null 2>&1 || true
		dropdb --if-exists "$d" >/dev/null 2>&1 || true
	done
	psql -X -q -d postgres -c "ALTER SYSTEM RESET log_min_messages" -c "SELECT pg_reload_conf()" >/dev/null 2>&1 || true
}
trap cleanup EXIT
cleanup
[ "$(psql -X -A -t -q -d postgres -c "SHOW max_prepared_transactions")" -gt 0 ] ||
	{ echo "this check needs max_prepared_transactions > 0 (test/run sets it)" >&2; exit 1; }
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "ALTER SYSTEM SET log_min_messages = debug1" -c "SELECT pg_reload_conf()" >/dev/null
log_from=$(($(wc -l <"$log") + 1))
log_count() { tail -n "+$log_from" "$log" | grep -c -F "$1" || true; }
pass() { echo "ok - $1"; }

# Each database is probed (no extension yet), then gets the extension in a
# prepared transaction, committed from another session.
lose_request() {
	local d=$1 oid deadline
	createdb "$d"
	oid=$(psql -X -A -t -q -d postgres -c "SELECT oid FROM pg_database WHERE datname = '$d'")
	deadline=$((SECONDS + 30))
	until [ "$(log_count "starting background worker process \"openwop worker for database $oid\"")" -ge 1 ]; do
		[ $SECONDS -lt $deadline ] || { echo "$d was not probed" >&2; exit 1; }
		sleep 0.2
	done
	sleep 1   # the probe has found no extension and left
	psql -X -q -v ON_ERROR_STOP=1 -d "$d" -c "BEGIN" -c "CREATE EXTENSION openwop_interrupt" \
		-c "PREPARE TRANSACTION 'ow_lost_$d'"
	psql -X -q -v ON_ERROR_STOP=1 -d "$d" -c "COMMIT PREPARED 'ow_lost_$d'"
}
lose_request ow_lost_view
lose_request ow_lost_deadline
# a launcher pass later, still nobody serves them: the request was lost
sleep 11
for d in $dbs; do
	[ "$(psql -X -A -t -q -d postgres -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'openwop worker' AND datname = '$d'")" = 0 ] ||
		{ echo "$d is served without being asked: this check no longer loses the request" >&2; exit 1; }
done
echo "the extension was created in two databases in prepared transactions; neither is served a launcher pass later"

# 1. someone looks: the database is listed with a reason, and served
D=ow_lost_view
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d "$D" -c "$1" | tail -n 1; }
row=$(q "SELECT serving, reason FROM openwop.workers WHERE database = 'ow_lost_view'")
case "$row" in
	"f|not served yet"*) ;;
	*) echo "openwop.workers in the unserved database: [$row]" >&2; exit 1 ;;
esac
pass "unserved_database_listed_with_reason: openwop.workers lists the database, serving false, with a reason"
wait_served ow_lost_view 10 >/dev/null
pass "lost_request_retried_when_looked_at: served within 10 s of being looked at"
deadline=$((SECONDS + 15))   # logged at the launcher's next look at its worker
until [ "$(log_count "openwop serves database \"ow_lost_view\", which a session found unserved")" = 1 ]; do
	[ $SECONDS -lt $deadline ] || { echo "the launcher did not log the database it had not been told of" >&2; exit 1; }
	sleep 0.5
done
pass "unserved_database_logged: the launcher logs the database it had not been told of"

# 2. a deadline is raised there: the committing transaction asks the launcher
D=ow_lost_deadline
psql -X -q -v ON_ERROR_STOP=1 -d $D >/dev/null <<'SQL'
SET openwop.tenant = 'acme';
SELECT openwop.create_run('lost', '{"runId": "acme/lost-request-0001"}');
SELECT openwop.start_node('acme/lost-request-0001', 'ask');
SELECT openwop.interrupt('acme/lost-request-0001', 'ask',
  '{"kind": "external-event", "timeoutMs": 2000, "data": {"eventType": "paid", "correlation": {}}}');
SQL
wait_served ow_lost_deadline 10 >/dev/null
pass "lost_request_retried_on_deadline: a deadline raised in the unserved database gets it served within 10 s"
# and the worker applies the deadline
wait_for 20 "SELECT status FROM openwop.interrupts WHERE run_id = 'acme/lost-request-0001'" expired
pass "lost_request_deadline_applied: its worker applies the deadline"
echo "lost request checks passed"
