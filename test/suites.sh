#!/usr/bin/env bash
# Runs inside the throwaway cluster made by test/run (PG* variables set by
# pg_virtualenv).  Every suite runs even when an earlier one fails; the
# totals go to test/results/summary as "passed failed".
set -uo pipefail
cd "$(dirname "$0")/.."
R=test/results
passed=0
failed=0

ok() { passed=$((passed + 1)); echo "ok - $1"; }
not_ok() { failed=$((failed + 1)); echo "not ok - $1"; }

echo "== build"
if grep -qi 'warning:' $R/build.log; then
	grep -i 'warning:' $R/build.log
	not_ok "build prints no warning"
else
	ok "build prints no warning"
fi

echo "== pg_regress and isolation suites"
make -k -s PG_CONFIG="$PG_CONFIG" installcheck >$R/installcheck.log 2>&1
make_status=$?
cat $R/installcheck.log
p=$(grep -cE '\.\.\. ok' $R/installcheck.log)
f=$(grep -cE '\.\.\. FAILED' $R/installcheck.log)
passed=$((passed + p))
failed=$((failed + f))
if [ "$make_status" -ne 0 ] && [ "$f" -eq 0 ]; then
	not_ok "installcheck exited with status $make_status"
fi
for d in $R/regression.diffs $R/isolation/regression.diffs; do
	[ -s "$d" ] && { echo "---- $d"; cat "$d"; }
done

echo "== pgTAP"
dropdb --if-exists openwop_tap >/dev/null 2>&1
createdb openwop_tap
psql -X -q -d openwop_tap -c 'CREATE EXTENSION pgtap' -c 'CREATE EXTENSION openwop_interrupt'
pg_prove --verbose -d openwop_tap test/pgtap/*.sql >$R/pgtap.log 2>&1
prove_status=$?
cat $R/pgtap.log
p=$(grep -cE '^ok [0-9]' $R/pgtap.log)
f=$(grep -cE '^not ok [0-9]' $R/pgtap.log)
passed=$((passed + p))
failed=$((failed + f))
if [ "$prove_status" -ne 0 ] && [ "$f" -eq 0 ]; then
	not_ok "pg_prove exited with status $prove_status"
fi

echo "== scripted checks"
for t in test/checks/*.sh; do
	[ -e "$t" ] || continue
	name=$(basename "$t" .sh)
	if bash "$t" >$R/check-$name.log 2>&1; then
		ok "check $name"
	else
		cat $R/check-$name.log
		not_ok "check $name"
	fi
done

echo "$passed $failed" >$R/summary
[ "$failed" -eq 0 ]
