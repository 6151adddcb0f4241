#!/usr/bin/env bash
# The workers serve every database in which the extension is created, with
# no configuration: three databases at once, each with its deadlines
# applied and its notifications relayed by its own worker; DROP EXTENSION
# stops a worker and CREATE EXTENSION brings it back within seconds; DROP
# DATABASE, ALTER DATABASE ... RENAME TO and CREATE DATABASE ... TEMPLATE
# work as for any database, and a role that may not run them leaves the
# worker alone; openwop.databases restricts the workers, and a database it
# names that does not exist is logged once; no free background worker slot
# is logged once per database and retried with back-off.  Needs the
# cluster test/run starts (preloaded, default settings).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
dbs="ow_every_a ow_every_b ow_every_c"
# as many more databases as there are background worker slots: some must wait
many=$(seq -f 'ow_every_many_%g' 1 "$(psql -X -A -t -q -d postgres -c "SHOW max_worker_processes")")
log=$(server_log_file)
[ -r "$log" ] || { echo "cannot read the server log [$log]" >&2; exit 1; }
out=$(mktemp -d)
cleanup() {
	psql -X -q -d postgres -c "ALTER SYSTEM RESET openwop.databases" -c "SELECT pg_reload_conf()" >/dev/null 2>&1 || true
	for d in $dbs ow_every_b2 ow_every_copy $many; do dropdb --if-exists "$d" >/dev/null 2>&1 || true; done
	psql -X -q -d postgres -c "DROP ROLE IF EXISTS ow_every_intruder" >/dev/null 2>&1 || true
	rm -rf "$out"
}
trap cleanup EXIT
cleanup
out=$(mktemp -d)
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d "$D" -c "SET openwop.tenant = 'acme'" -c "$1" | tail -n 1; }
log_from=$(($(wc -l <"$log") + 1))   # only what this check logs
log_count() { tail -n "+$log_from" "$log" | grep -c -F "$1" || true; }

for d in $dbs; do
	createdb "$d"
	psql -X -q -v ON_ERROR_STOP=1 -d "$d" -c "CREATE EXTENSION openwop_interrupt"
done
declare -A pid
for d in $dbs; do pid[$d]=$(wait_served "$d" 15); done
[ "$(psql -X -A -t -q -d ow_every_a -c "SELECT count(DISTINCT pid) FROM openwop.workers WHERE database LIKE 'ow_every_%' AND serving")" = 3 ]
echo "three databases, three workers, serving within seconds of CREATE EXTENSION: ${pid[*]}"

# deadlines applied and notifications relayed in each, by its own worker
for d in $dbs; do
	D=$d
	printf 'SET openwop.tenant = '\''acme'\'';\nSELECT openwop.listen();\nSELECT pg_sleep(1.5);\nSELECT 1;\n' | psql -X -q -A -t -d "$d" >"$out/$d.txt" 2>&1 &
done
sleep 0.4
for d in $dbs; do
	D=$d
	psql -X -q -v ON_ERROR_STOP=1 -d "$d" >/dev/null <<SQL
SET openwop.tenant = 'acme';
SELECT openwop.create_run('every', '{"runId": "acme/every-run-0000001"}');
SELECT openwop.start_node('acme/every-run-0000001', 'gate');
SELECT openwop.interrupt('acme/every-run-0000001', 'gate', '{"kind": "approval", "timeoutMs": 500,
  "data": {"artifactId": "a", "artifactType": "doc", "title": "T", "actions": ["accept"], "onTimeout": "reject"}}');
SQL
done
wait
for d in $dbs; do
	D=$d
	wait_for 15 "SELECT openwop.run_snapshot('acme/every-run-0000001') ->> 'status'" failed
	senders=$(sed -n 's/^Asynchronous notification "openwop_events_[0-9a-f]*" with payload ".*" received from server process with PID \([0-9]*\)\.$/\1/p' "$out/$d.txt" | sort -u)
	[ "$senders" = "${pid[$d]}" ] || { echo "$d: notifications from [$senders], not its worker ${pid[$d]}" >&2; cat "$out/$d.txt" >&2; exit 1; }
done
echo "each database: its deadline applied without sweep(), its notifications sent by its own worker"

# DROP EXTENSION stops the worker; CREATE EXTENSION brings it back
psql -X -q -v ON_ERROR_STOP=1 -d ow_every_c -c "DROP EXTENSION openwop_interrupt"
D=ow_every_a
wait_for 10 "SELECT count(*) FROM openwop.workers WHERE database = 'ow_every_c'" 0
psql -X -q -v ON_ERROR_STOP=1 -d ow_every_c -c "CREATE EXTENSION openwop_interrupt"
t0=$SECONDS
pid[ow_every_c]=$(wait_served ow_every_c 5)
echo "DROP EXTENSION stopped the worker; CREATE EXTENSION brought one back within $((SECONDS - t0 + 1)) s"

# a role that may not rename the database leaves its worker alone
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE ROLE ow_every_intruder LOGIN CREATEDB PASSWORD '${PGPASSWORD:-unused}'"
if psql -X -q -d ow_every_a -U ow_every_intruder -c "ALTER DATABASE ow_every_a RENAME TO ow_every_x" 2>"$out/err"; then
	echo "a non-owner renamed a database" >&2; exit 1
fi
grep -q 'must be owner' "$out/err"
if psql -X -q -d postgres -U ow_every_intruder -c "DROP DATABASE ow_every_a" 2>"$out/err"; then
	echo "a non-owner dropped a database" >&2; exit 1
fi
[ "$(psql -X -A -t -q -d ow_every_a -c "SELECT pid FROM openwop.workers WHERE database = 'ow_every_a'")" = "${pid[ow_every_a]}" ]
echo "refused RENAME and DROP by a non-owner: the worker (pid ${pid[ow_every_a]}) stayed"

# RENAME, TEMPLATE, DROP work as for any database
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "ALTER DATABASE ow_every_b RENAME TO ow_every_b2"
wait_served ow_every_b2 15 >/dev/null
D=ow_every_b2
[ "$(q "SELECT openwop.run_snapshot('acme/every-run-0000001') ->> 'status'")" = failed ]
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE ow_every_copy TEMPLATE ow_every_a"
# a copy is served once the DBA says so (test/checks/database_copies.sh)
psql -X -q -v ON_ERROR_STOP=1 -d ow_every_copy -c "SELECT openwop.serve_database()" >/dev/null
wait_served ow_every_copy 15 >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "DROP DATABASE ow_every_copy" -c "DROP DATABASE ow_every_b2"
D=ow_every_a
wait_for 10 "SELECT count(*) FROM openwop.workers WHERE database IN ('ow_every_copy', 'ow_every_b2')" 0
wait_served ow_every_a 5 >/dev/null
echo "RENAME TO, CREATE DATABASE ... TEMPLATE and DROP DATABASE of served databases worked; the renamed one was served, and the copy once serve_database() ran there"

# openwop.databases restricts; a name that does not exist is logged once
before=$(log_count 'database "ow_every_missing" named in openwop.databases does not exist')
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "ALTER SYSTEM SET openwop.databases = 'ow_every_a, ow_every_missing'" -c "SELECT pg_reload_conf()" >/dev/null
wait_for 20 "SELECT count(*) FROM openwop.workers WHERE database = 'ow_every_c'" 0
sleep 11   # the launcher looks at pg_database every 10 s
[ "$(q "SELECT count(*) FROM openwop.workers WHERE database = 'ow_every_a' AND serving")" = 1 ]
n=$(( $(log_count 'database "ow_every_missing" named in openwop.databases does not exist') - before ))
[ "$n" = 1 ] || { echo "the missing database was logged $n times" >&2; exit 1; }
echo "openwop.databases: only the named database served; the missing one logged once"
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "ALTER SYSTEM RESET openwop.databases" -c "SELECT pg_reload_conf()" >/dev/null
wait_served ow_every_c 20 >/dev/null

# more databases than background worker slots: logged once each, retried with back-off
slots=$(psql -X -A -t -q -d postgres -c "SHOW max_worker_processes")
for d in $many; do
	createdb "$d"
	psql -X -q -v ON_ERROR_STOP=1 -d "$d" -c "CREATE EXTENSION openwop_interrupt"
done
sleep 8   # back-off retries after 1, 2 and 4 s
D=ow_every_a
served=$(q "SELECT count(*) FROM openwop.workers WHERE role = 'database worker'")
[ "$served" -le "$((slots - 1))" ]
unserved=$(q "SELECT count(*) FROM pg_database d WHERE datname LIKE 'ow_every_many_%'
               AND NOT EXISTS (SELECT FROM openwop.workers w WHERE w.database = d.datname)")
[ "$unserved" -ge 1 ] || { echo "all $(echo $many | wc -w) more databases were served with max_worker_processes = $slots" >&2; exit 1; }
for d in $many; do
	n=$(log_count "openwop cannot serve database \"$d\": no background worker slot is free")
	[ "$n" -le 1 ] || { echo "$d was logged $n times" >&2; exit 1; }
done
[ "$(log_count 'no background worker slot is free')" -ge "$unserved" ]
echo "$served database workers with max_worker_processes = $slots; $unserved databases waiting, each logged once"
for d in $many; do dropdb "$d"; done
wait_served ow_every_c 20 >/dev/null
echo "every-database checks passed"
