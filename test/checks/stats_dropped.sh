#!/usr/bin/env bash
# The counters of a dropped database do not keep their entry: after 65
# databases have counted and been dropped, a new database is counted.
# Needs the cluster test/run starts (preloaded, default settings).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
tpl=ow_stats_tpl
cleanup() {
	for i in $(seq 1 65); do dropdb --if-exists "ow_stats_gone_$i" >/dev/null 2>&1 || true; done
	dropdb --if-exists ow_stats_fresh >/dev/null 2>&1 || true
	psql -X -q -d postgres -c "ALTER DATABASE $tpl IS_TEMPLATE false" >/dev/null 2>&1 || true
	dropdb --if-exists $tpl >/dev/null 2>&1 || true
}
trap cleanup EXIT
cleanup
# a template with the extension (no worker serves a template)
createdb $tpl
psql -X -q -v ON_ERROR_STOP=1 -d $tpl -c "CREATE EXTENSION openwop_interrupt"
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "ALTER DATABASE $tpl IS_TEMPLATE true"
refuse() { psql -X -q -d "$1" -c "SET openwop.tenant = 'acme'" -c "SELECT openwop.run_snapshot('not-a-run-id')" >/dev/null 2>&1 || true; }
for i in $(seq 1 65); do
	createdb -T $tpl "ow_stats_gone_$i"
	refuse "ow_stats_gone_$i"
	dropdb "ow_stats_gone_$i"
done
echo "65 databases counted a refusal and were dropped"
createdb -T $tpl ow_stats_fresh
D=ow_stats_fresh
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d "$D" -c "$1" | tail -n 1; }
deadline=$((SECONDS + 40))
until refuse ow_stats_fresh; [ "$(q "SELECT coalesce(sum(count), 0) FROM openwop.stats WHERE database = 'ow_stats_fresh' AND code = 'validation_error'")" -ge 1 ]; do
	[ $SECONDS -lt $deadline ] || { echo "a new database is not counted after 65 dropped ones" >&2; exit 1; }
	sleep 1
done
echo "a new database is counted after 65 dropped ones"
echo "stats-entry checks passed"
