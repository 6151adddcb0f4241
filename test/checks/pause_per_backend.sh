#!/usr/bin/env bash
# A role with CREATEDB that keeps many of its own databases paused (ALTER
# DATABASE ... RENAME TO in a transaction it leaves open) does not leave
# another's DDL without a pause: the DBA's RENAME of a served database
# still asks its worker to leave, and works.  Needs the cluster test/run
# starts (preloaded, default settings).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
role=ow_pause_hog
own=$(seq -f 'ow_pause_own_%g' 1 20)
out=$(mktemp -d)
cleanup() {
	psql -X -q -d postgres -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '$role'" >/dev/null 2>&1 || true
	wait 2>/dev/null || true
	for d in ow_pause_served ow_pause_served2 $own; do dropdb --if-exists "$d" >/dev/null 2>&1 || true; done
	psql -X -q -d postgres -c "DROP ROLE IF EXISTS $role" >/dev/null 2>&1 || true
	rm -rf "$out"
}
trap cleanup EXIT
cleanup
out=$(mktemp -d)

createdb ow_pause_served
psql -X -q -v ON_ERROR_STOP=1 -d ow_pause_served -c "CREATE EXTENSION openwop_interrupt"
pid=$(wait_served ow_pause_served 15)
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE ROLE $role LOGIN CREATEDB PASSWORD '${PGPASSWORD:-unused}'"
for d in $own; do psql -X -q -v ON_ERROR_STOP=1 -d postgres -U $role -c "CREATE DATABASE $d"; done

# the role renames its 20 databases in one transaction and leaves it open
hold_renamed $role "$out/hog" $own
echo "a role keeps 20 of its databases paused in an open transaction"

# the DBA's RENAME still pauses the served database: its worker leaves
if ! psql -X -q -d postgres -c "ALTER DATABASE ow_pause_served RENAME TO ow_pause_served2" 2>"$out/err"; then
	echo "the DBA's RENAME failed while another role held pauses:" >&2; cat "$out/err" >&2; exit 1
fi
wait_served ow_pause_served2 15 >/dev/null
echo "the DBA's RENAME of a served database (worker pid $pid) worked, and the database is served again"
echo "pause checks passed"
