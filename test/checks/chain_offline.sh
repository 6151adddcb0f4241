#!/usr/bin/env bash
# The hash chain checked without the extension (tools/verify-run): a run
# exported with psql verifies with sha256sum alone, in a UTF-8 database and
# in a LATIN1 one (the canonical form is in the database's encoding); a
# change to any field of any event of the export, a line removed or moved,
# is reported at that event; a receipt's event hash is found, another is
# not.  Needs the cluster test/run starts.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
tool="$(dirname "$0")/../../tools/verify-run"
work=$(mktemp -d)
trap 'rm -rf "$work"; dropdb --if-exists openwop_chain_utf8 >/dev/null 2>&1; dropdb --if-exists openwop_chain_latin1 >/dev/null 2>&1' EXIT

run=acme/chain-offline-0000000001
fill() {    # DB: one run through a gate, text with every kind of character in it; prints the receipt's "SEQ HASH"
	psql -X -q -v ON_ERROR_STOP=1 -d "$1" >/dev/null <<SQL
CREATE EXTENSION openwop_interrupt;
SET openwop.tenant = 'acme';
SELECT openwop.create_run('chain', jsonb_build_object('runId', '$run',
  'metadata', jsonb_build_object('note', E'tab\there\nnewline \\\\ backslash "quote" caf\u00e9', 'n', 1.50, 'big', 123456789012345678901234567890)));
SELECT openwop.start_node('$run', 'gate');
SELECT openwop.interrupt('$run', 'gate', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc", "title": "Caf\u00e9 \\\\n", "actions": ["accept"]}}');
SQL
	psql -X -A -t -q -v ON_ERROR_STOP=1 -d "$1" -c "SET openwop.tenant = 'acme'" \
		-c "SELECT r #>> '{receipt,event,sequence}' || ' ' || (r #>> '{receipt,event,hash}') FROM openwop.resolve_interrupt('$run', 'gate', '{\"action\": \"accept\"}') r" | tail -n 1
}

for enc in UTF8 LATIN1; do
	db=openwop_chain_$(tr 'A-Z' 'a-z' <<<"$enc")
	dropdb --if-exists $db >/dev/null 2>&1
	createdb -E $enc -T template0 --locale=C $db
	make_login_approver $db
	receipt=$(fill $db)
	"$tool" export $run -d $db >"$work/$enc.chain"
	out=$("$tool" check "$work/$enc.chain")
	[[ $out == "valid: 6 events, head "* ]] || { echo "$enc: $out" >&2; exit 1; }
	# the head is the run's, as verify_run has it
	head=$(psql -X -A -t -q -d $db -c "SET openwop.tenant = 'acme'" -c "SELECT openwop.verify_run('$run') ->> 'head'" | tail -n 1)
	[ "$out" = "valid: 6 events, head $head" ]
	# chain_offline_receipt: the receipt's event is in the log, another hash is not
	"$tool" check "$work/$enc.chain" $receipt >/dev/null
	if "$tool" check "$work/$enc.chain" ${receipt%% *} 0000000000000000000000000000000000000000000000000000000000000000 >/dev/null; then
		echo "$enc: a receipt's hash that is not in the log was accepted" >&2; exit 1
	fi
	echo "ok - chain_offline_$enc: exported with psql, verified with sha256sum alone; the receipt's event found"
done

# chain_offline_tamper: a change to any field of any line is reported at that event
f=$work/UTF8.chain
expect_broken() {    # WHAT FILE AT
	local out
	if out=$("$tool" check "$2"); then echo "$1 was not reported: $out" >&2; exit 1; fi
	[[ $out == "broken at $3:"* ]] || { echo "$1: $out, not broken at $3" >&2; exit 1; }
}
sed '3s/"interrupt.requested"/"interrupt.resolved"/' "$f" >"$work/t1"; expect_broken "a changed type" "$work/t1" 2
sed '2s/"gate"/"gates"/' "$f" >"$work/t2"; expect_broken "a changed node id" "$work/t2" 1
sed '1s/1\.50/1.5/' "$f" >"$work/t3"; expect_broken "a changed payload number" "$work/t3" 0
perl -pe 's/^(\S+ \[3, "[^"]*", "[^"]*", )(\d+)/$1.($2 + 1)/e if $. == 4' "$f" >"$work/t4"; expect_broken "a changed timestamp" "$work/t4" 3
sed '5s/, 1, null, {/, 2, null, {/' "$f" >"$work/t5"; expect_broken "a changed schema version" "$work/t5" 4
perl -pe 's/^(.)/$1 eq "0" ? "1" : "0"/e if $. == 6' "$f" >"$work/t6"; expect_broken "a changed hash" "$work/t6" 5
sed '4d' "$f" >"$work/t7"; expect_broken "a line removed" "$work/t7" 3
awk 'NR == 2 { held = $0; next } NR == 3 { print; print held; next } { print }' "$f" >"$work/t8"; expect_broken "two lines swapped" "$work/t8" 1
echo "ok - chain_offline_tamper: a changed type, node id, payload, timestamp, schema version or hash, a line removed or moved, each reported at its event"
