#!/usr/bin/env bash
# A session that keeps a database locked (ALTER DATABASE ... RENAME TO in a
# transaction left open, or prepared) cannot hold a worker slot and a
# background worker: the launcher starts no worker in a locked database
# (and stops one that has not connected within 30 s); once the lock is gone
# every database is served again.  Needs the cluster test/run starts
# (preloaded, default settings).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
role=ow_lock_hog
own=$(seq -f 'ow_lock_own_%g' 1 18)   # more than any backend's pauses
log=$(server_log_file)
[ -r "$log" ] || { echo "cannot read the server log [$log]" >&2; exit 1; }
out=$(mktemp -d)
cleanup() {
	psql -X -q -d postgres -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '$role'" >/dev/null 2>&1 || true
	wait 2>/dev/null || true
	for d in ow_lock_served $own; do dropdb --if-exists "$d" >/dev/null 2>&1 || true; done
	psql -X -q -d postgres -c "DROP ROLE IF EXISTS $role" >/dev/null 2>&1 || true
	rm -rf "$out"
}
trap cleanup EXIT
cleanup
out=$(mktemp -d)
log_from=$(($(wc -l <"$log") + 1))   # only what this check logs
log_count() { tail -n "+$log_from" "$log" | grep -c -F "$1" || true; }

createdb ow_lock_served
psql -X -q -v ON_ERROR_STOP=1 -d ow_lock_served -c "CREATE EXTENSION openwop_interrupt"
wait_served ow_lock_served 15 >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE ROLE $role LOGIN CREATEDB PASSWORD '${PGPASSWORD:-unused}'"
for d in $own; do psql -X -q -v ON_ERROR_STOP=1 -d postgres -U $role -c "CREATE DATABASE $d"; done

# the role renames them all in one transaction and leaves it open: each
# stays locked, and those beyond the backend's pauses are not paused
hold_renamed $role "$out/hog" $own
# a restarted launcher looks at every database again, the locked ones too
D=ow_lock_served
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d "$D" -c "$1" | tail -n 1; }
old=$(q "SELECT pid FROM openwop.workers WHERE role = 'launcher'")
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "SELECT pg_terminate_backend($old)" >/dev/null
wait_for 30 "SELECT count(*) FROM openwop.workers WHERE role = 'launcher' AND pid <> $old AND last_timeout_pass IS NOT NULL" 1
# no worker is left waiting on a locked database, holding a slot and a
# background worker (one started as the lock was taken is stopped in 30 s)
wait_for 60 "SELECT count(*) FROM openwop.workers WHERE database LIKE 'ow_lock_own_%'" 0
wait_served ow_lock_served 30 >/dev/null
for d in $own; do
	n=$(log_count "openwop cannot serve database \"$d\"")
	[ "$n" -le 1 ] || { echo "$d was logged $n times" >&2; exit 1; }
done
echo "no worker waits on the locked databases; the served database is served"

psql -X -q -d postgres -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '$role'" >/dev/null
wait
wait_served ow_lock_served 60 >/dev/null
echo "locked-database checks passed"
