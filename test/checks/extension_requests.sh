#!/usr/bin/env bash
# Only a CREATE EXTENSION that created the extension makes the launcher
# look at its database again: a role that may not create it, trying in
# savepoints it rolls back and committing each time, starts no worker
# (each attempt would otherwise start a probe, a process and a connection,
# at the caller's pace).  Counts the postmaster's "starting background
# worker process" lines, logged at DEBUG1 for the duration of the check.
# Needs the cluster test/run starts (preloaded, default settings).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
role=ow_requests_role
db=ow_requests_db
log=$(server_log_file)
[ -r "$log" ] || { echo "cannot read the server log [$log]" >&2; exit 1; }
cleanup() {
	psql -X -q -d postgres -c "ALTER SYSTEM RESET log_min_messages" -c "SELECT pg_reload_conf()" >/dev/null 2>&1 || true
	dropdb --if-exists $db >/dev/null 2>&1 || true
	dropdb --if-exists ${db}_view >/dev/null 2>&1 || true
	psql -X -q -d postgres -c "DROP ROLE IF EXISTS $role" >/dev/null 2>&1 || true
}
trap cleanup EXIT
cleanup
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE ROLE $role LOGIN PASSWORD '${PGPASSWORD:-unused}'" -c "ALTER SYSTEM SET log_min_messages = debug1" -c "SELECT pg_reload_conf()" >/dev/null
createdb ${db}_view   # where openwop.workers is read
psql -X -q -v ON_ERROR_STOP=1 -d ${db}_view -c "CREATE EXTENSION openwop_interrupt"
log_from=$(($(wc -l <"$log") + 1))
createdb -O $role $db
oid=$(psql -X -A -t -q -d postgres -c "SELECT oid FROM pg_database WHERE datname = '$db'")
starts() { tail -n "+$log_from" "$log" | grep -c -F "starting background worker process \"openwop worker for database $oid\"" || true; }
# the launcher probes the new database once (it has no extension)
deadline=$((SECONDS + 30))
until [ "$(starts)" -ge 1 ]; do
	[ $SECONDS -lt $deadline ] || { echo "the new database was not probed" >&2; exit 1; }
	sleep 0.5
done
D=${db}_view
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d "$D" -c "$1" | tail -n 1; }
wait_for 30 "SELECT count(*) FROM openwop.workers WHERE database = '$db'" 0
probed=$(starts)

# 200 commits, each after a CREATE EXTENSION refused in a savepoint
psql -X -q -v ON_ERROR_STOP=1 -d $db -U $role -c "DO \$\$ BEGIN
  FOR i IN 1..200 LOOP
    BEGIN CREATE EXTENSION openwop_interrupt; EXCEPTION WHEN insufficient_privilege THEN NULL; END;
    COMMIT;
  END LOOP; END \$\$"
[ "$(psql -X -A -t -q -d $db -c "SELECT count(*) FROM pg_extension WHERE extname = 'openwop_interrupt'")" = 0 ]
sleep 2   # what the launcher would do, it does within milliseconds of a commit
n=$(( $(starts) - probed ))
[ "$n" = 0 ] || { echo "200 refused CREATE EXTENSION started $n workers in $db" >&2; exit 1; }
echo "200 refused CREATE EXTENSION in savepoints started no worker"

# CREATE EXTENSION that creates it is still seen at once
psql -X -q -v ON_ERROR_STOP=1 -d $db -c "CREATE EXTENSION openwop_interrupt"
wait_served $db 5 >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -d $db -c "DROP EXTENSION openwop_interrupt"
wait_for 10 "SELECT count(*) FROM openwop.workers WHERE database = '$db'" 0
echo "CREATE EXTENSION served the database at once, DROP EXTENSION stopped its worker"
echo "extension-request checks passed"
