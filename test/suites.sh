#!/usr/bin/env bash
# Runs inside the throwaway cluster made by test/run (PG* variables set by
# pg_virtualenv).  Every suite runs even when an earlier one fails; each
# keeps its whole output in a log under test/results and prints one line
# (its failures, if any); the totals go to test/results/summary as "passed
# failed", and each failed suite or check, with its log, to
# test/results/failures, which test/run prints last.
set -uo pipefail
cd "$(dirname "$0")/.."
R=test/results
passed=0
failed=0
: >$R/failures

# phase (test/lib.sh): "== [m:ss] name", the clock starting with the suites
. test/lib.sh
ok() { passed=$((passed + 1)); echo "ok - $1"; }
not_ok() { failed=$((failed + 1)); echo "not ok - $1"; echo "$1" >>$R/failures; }

# tally LOG PASS-REGEX FAIL-REGEX STATUS NAME: count the log's passes and
# failures; print the failing lines and where the log is
tally() {
	local log=$1 p f
	p=$(grep -cE "$2" "$log")
	f=$(grep -cE "$3" "$log")
	passed=$((passed + p))
	failed=$((failed + f))
	if [ "$f" -gt 0 ]; then
		grep -E "$3" "$log" | head -n 20
		echo "$5: $f failed, $p passed (log: $log)" | tee -a $R/failures
	elif [ "$4" -ne 0 ]; then
		tail -n 20 "$log"
		not_ok "$5 exited with status $4 (log: $log)"
	else
		echo "ok - $5: $p passed (log: $log)"
	fi
}

phase "build"
if grep -qi 'warning:' $R/build.log; then
	grep -i 'warning:' $R/build.log
	not_ok "build prints no warning"
else
	ok "build prints no warning"
fi

# A test's line in pg_regress's report: "test x ... ok" (15), "ok 1 - x" (16 on, TAP)
regress_ok='\.\.\. ok|^ok [0-9]+ '
regress_failed='\.\.\. FAILED|^not ok [0-9]+ '

phase "pg_regress and isolation suites"
make -s PG_CONFIG="$PG_CONFIG" installcheck-regress >$R/regress.log 2>&1
tally $R/regress.log "$regress_ok" "$regress_failed" $? "pg_regress"
# the specs decide when deadlines are applied (each calls sweep() from a
# step): no worker may apply them meanwhile, so while they run the workers
# serve database postgres only (test/checks/every_database.sh tests them).
# notify.spec listens on the shared channel: a tenant's channel has a new
# name at each server start, which expected output cannot hold
# (test/checks/tenant_channels.sh tests those)
psql -X -q -d postgres -c "ALTER SYSTEM SET openwop.databases = 'postgres'" \
	-c "ALTER SYSTEM SET openwop.shared_channel = on" -c "SELECT pg_reload_conf()" >/dev/null
sleep 1
make -s PG_CONFIG="$PG_CONFIG" installcheck-isolation >$R/isolation.log 2>&1
status=$?
psql -X -q -d postgres -c "ALTER SYSTEM RESET openwop.databases" -c "ALTER SYSTEM RESET openwop.shared_channel" \
	-c "SELECT pg_reload_conf()" >/dev/null
tally $R/isolation.log "$regress_ok" "$regress_failed" $status "pg_isolation_regress"
for d in $R/regression.diffs $R/isolation/regression.diffs; do
	[ -s "$d" ] && echo "differences: $d" | tee -a $R/failures
done

phase "C unit checks of the token module (standalone, libpgcommon)"
unit=$(test/fuzz/build.sh unit 2>$R/unit-build.log | tail -n 1)
"$unit" >$R/unit.log 2>&1
tally $R/unit.log '^ok [0-9]' '^not ok [0-9]' $? "token_unit"

phase "pgTAP"
dropdb --if-exists openwop_tap >/dev/null 2>&1
createdb openwop_tap
psql -X -q -d openwop_tap -c 'CREATE EXTENSION pgtap' -c 'CREATE EXTENSION openwop_interrupt'
pg_prove --verbose -d openwop_tap test/pgtap/*.sql >$R/pgtap.log 2>&1
tally $R/pgtap.log '^ok [0-9]' '^not ok [0-9]' $? "pg_prove"
# each database with the extension has a worker: the checks below count them
for d in openwop_tap contrib_regression isolation_regression; do dropdb --if-exists "$d" >/dev/null 2>&1; done

phase "scripted checks"
for t in test/checks/*.sh; do
	[ -e "$t" ] || continue
	name=$(basename "$t" .sh)
	if bash "$t" >$R/check-$name.log 2>&1; then
		ok "check $name"
	else
		tail -n 30 $R/check-$name.log
		not_ok "check $name (log: $R/check-$name.log)"
	fi
done

phase "done"
echo "$passed $failed" >$R/summary
[ "$failed" -eq 0 ]
