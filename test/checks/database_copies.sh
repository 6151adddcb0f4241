#!/usr/bin/env bash
# A role with CREATEDB that owns a database with the extension copies it
# (CREATE DATABASE ... TEMPLATE) again and again: no copy gets a worker,
# each is logged once and says why in openwop.workers, the DBA's own new
# database is served at once, and a copy is served when a superuser (not
# the copy's owner) runs openwop.serve_database() in it.  Needs the cluster
# test/run starts (preloaded, default settings: max_worker_processes 8).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
role=ow_copy_owner
src=ow_copy_src
copies=$(seq -f 'ow_copy_%g' 1 8)   # more copies than max_worker_processes
dba=ow_copy_dba
log=$(server_log_file)
[ -r "$log" ] || { echo "cannot read the server log [$log]" >&2; exit 1; }
cleanup() {
	for d in $src $copies $dba ow_copy_oid; do dropdb --if-exists "$d" >/dev/null 2>&1 || true; done
	psql -X -q -d postgres -c "DROP ROLE IF EXISTS $role" >/dev/null 2>&1 || true
}
trap cleanup EXIT
cleanup
log_from=$(($(wc -l <"$log") + 1))   # only what this check logs
log_count() { tail -n "+$log_from" "$log" | grep -c -F "$1" || true; }
pass() { echo "ok - $1"; }
D=$src
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d "$D" -c "$1" | tail -n 1; }
workers_running() {  # openwop worker processes of the server
	psql -X -A -t -q -d postgres -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'openwop worker'"
}

psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE ROLE $role LOGIN CREATEDB PASSWORD '${PGPASSWORD:-unused}'"
createdb -O $role $src
psql -X -q -v ON_ERROR_STOP=1 -d $src -c "CREATE EXTENSION openwop_interrupt"
wait_served $src 15 >/dev/null
before=$(workers_running)

# the owner copies its database, more times than there are background workers
for d in $copies; do
	psql -X -q -v ON_ERROR_STOP=1 -d postgres -U $role -c "CREATE DATABASE $d TEMPLATE $src"
done
# the DBA's own database, created after the copies, is served at once
createdb $dba
psql -X -q -v ON_ERROR_STOP=1 -d $dba -c "CREATE EXTENSION openwop_interrupt"
wait_served $dba 10 >/dev/null
pass "dba_database_served_despite_copies: the DBA's database is served within 10 s of 8 copies"

# every copy is probed, found a copy, and logged once
deadline=$((SECONDS + 60))
for d in $copies; do
	until [ "$(log_count "openwop does not serve database \"$d\": it is a copy of another database")" -ge 1 ]; do
		[ $SECONDS -lt $deadline ] || { echo "copy $d was not probed and logged within 60 s" >&2; exit 1; }
		sleep 0.5
	done
done
sleep 2
wait_served $src 15 >/dev/null   # back after the last copy paused it
for d in $copies; do
	[ "$(log_count "openwop does not serve database \"$d\": it is a copy")" = 1 ] ||
		{ echo "copy $d was logged $(log_count "database \"$d\": it is a copy") times" >&2; exit 1; }
done
pass "copy_logged_once: each copy is logged once"
[ "$(q "SELECT count(*) FROM openwop.workers WHERE database LIKE 'ow_copy_%' AND database <> '$dba' AND database <> '$src'")" = 0 ]
now=$(workers_running)
[ "$now" = $((before + 1)) ] || { echo "$now openwop workers run, $before before the copies and the DBA's database" >&2; exit 1; }
pass "copy_gets_no_worker: 8 copies, no worker; one more worker (the DBA's database)"

# a copy says why it has none
D=ow_copy_3
[ "$(q "SELECT serving FROM openwop.workers WHERE database = 'ow_copy_3'")" = f ]
case "$(q "SELECT reason FROM openwop.workers WHERE database = 'ow_copy_3'")" in
	"a copy of another database"*) ;;
	*) echo "the copy's reason: $(q "SELECT reason FROM openwop.workers WHERE database = 'ow_copy_3'")" >&2; exit 1 ;;
esac
pass "copy_reason_in_workers_view: openwop.workers in a copy says it is a copy"

# its owner cannot have it served, even with EXECUTE granted
psql -X -q -v ON_ERROR_STOP=1 -d ow_copy_3 -c "GRANT USAGE ON SCHEMA openwop TO $role" \
	-c "GRANT EXECUTE ON FUNCTION openwop.serve_database() TO $role"
err=$(psql -X -A -t -q -d ow_copy_3 -U $role -v VERBOSITY=sqlstate -c "SELECT openwop.serve_database()" 2>&1 || true)
[ "$(echo "$err" | grep -o 'PT403')" = PT403 ] || { echo "the copy's owner ran serve_database(): $err" >&2; exit 1; }
sleep 2
[ "$(q "SELECT count(*) FROM openwop.workers WHERE database = 'ow_copy_3' AND serving")" = 0 ]
pass "copy_owner_cannot_serve_copy: serve_database() by the copy's owner is 403, no worker"

# nor give a copy the oid of the database it copied, dropped meanwhile (the copy's row names that oid)
src_oid=$(psql -X -A -t -q -d postgres -c "SELECT oid FROM pg_database WHERE datname = '$src'")
err=$(psql -X -q -d postgres -U $role -c "CREATE DATABASE ow_copy_oid TEMPLATE ow_copy_5 OID = $((src_oid + 100000))" 2>&1 || true)
grep -q 'only a superuser may choose the oid of a new database' <<<"$err" || { echo "the owner chose a database oid: $err" >&2; exit 1; }
[ "$(psql -X -A -t -q -d postgres -c "SELECT count(*) FROM pg_database WHERE datname = 'ow_copy_oid'")" = 0 ]
pass "copy_cannot_take_an_oid: CREATE DATABASE ... OID by a role with CREATEDB is refused"

# a superuser says so: served within seconds
[ "$(q "SELECT openwop.serve_database() ->> 'changed'")" = true ]
wait_served ow_copy_3 10 >/dev/null
[ "$(q "SELECT openwop.serve_database() ->> 'changed'")" = false ]
pass "copy_served_when_dba_says_so: serve_database() by a superuser serves the copy within 10 s"

# a copy of a served copy is a copy again
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'ow_copy_4'" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "DROP DATABASE ow_copy_4"
psql -X -q -v ON_ERROR_STOP=1 -d postgres -U $role -c "CREATE DATABASE ow_copy_4 TEMPLATE ow_copy_3"
wait_served ow_copy_3 15 >/dev/null   # the copy's source is served again after the copy
D=ow_copy_4
wait_for 30 "SELECT reason LIKE 'a copy of another database%' FROM openwop.workers WHERE database = 'ow_copy_4'" t
pass "copy_of_served_copy_is_a_copy: a copy of a database served by serve_database() is not served"
echo "database copy checks passed"
