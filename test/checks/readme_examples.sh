#!/usr/bin/env bash
# Every ```sql block of README.md runs, in the order shown, against a fresh
# database, and so does every ```sh block that names its login, so the
# examples cannot drift from the code.
#
# The conventions the README states ("Reading the examples"):
#   - the blocks run in one psql session, so a psql variable one block sets
#     with \gset is there for the next ones;
#   - a block whose first line is "-- as: NAME" runs as the login NAME
#     (the check switches with \c - NAME); every other block runs as the
#     superuser of the check (PGUSER);
#   - a line "-- result: TEXT" right after a statement is what that
#     statement prints with psql -At (rows on lines of their own, columns
#     separated by |); "…" in TEXT stands for any text.  The check compares
#     them.
#   - a ```sh block whose first line is "# as: NAME" runs too, in its place
#     among the sql blocks: by bash (set -euo pipefail) from the checkout's
#     root, with PGUSER=NAME and PGDATABASE the examples' database (the
#     other PG* variables as the check has them; TMPDIR is the check's own
#     directory, removed afterwards).  A line "# result: TEXT" right after
#     a command is compared as "-- result:" is.  Each line is one command
#     (a line ending in \, |, && or || goes on to the next).  A ```sh block
#     without that first line (installing, configuring a server) never runs.
# Blocks that are not runnable SQL (a configuration excerpt, an error
# transcript) are ``` or ```text blocks, never ```sql.
#
# The roles the README creates are cluster-wide: the check drops them
# before and after (an earlier check may have made openwop_approver), sets
# the password of pg_virtualenv's cluster on every login it creates, and
# resets the settings the README changes with ALTER SYSTEM.  Needs the
# cluster test/run starts (preloaded, default settings).  On a failure it
# prints which block failed, its README line and the error.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
readme="$(dirname "$0")/../../README.md"
db=ow_readme
out=$(mktemp -d)

# the roles the README's blocks create, in the order they appear
roles=$(awk '/^```sql[[:space:]]*$/ { f = 1; next } /^```/ { f = 0 }
	f && match($0, /CREATE ROLE [a-z_][a-z0-9_]*/) { print substr($0, RSTART + 12, RLENGTH - 12) }' "$readme")
[ -n "$roles" ] || { echo "README.md creates no role: the extraction found nothing" >&2; exit 1; }

drop_roles() {
	local r d
	for r in $roles; do
		[ "$(psql -X -A -t -q -d postgres -c "SELECT count(*) FROM pg_roles WHERE rolname = '$r'")" = 1 ] || continue
		# privileges granted to it in any database go first
		for d in $(psql -X -A -t -q -d postgres -c "SELECT datname FROM pg_database WHERE datallowconn"); do
			psql -X -q -d "$d" -c "DROP OWNED BY \"$r\"" >/dev/null 2>&1 || true
		done
		psql -X -q -d postgres -c "DROP ROLE \"$r\"" >/dev/null
	done
}
cleanup() {
	dropdb --if-exists "$db" >/dev/null 2>&1 || true
	drop_roles || true
	psql -X -q -d postgres -c "ALTER SYSTEM RESET openwop.jwt_session_role" -c "ALTER SYSTEM RESET openwop.forwarding_role" \
		-c "ALTER SYSTEM RESET openwop.notification_outbox" -c "SELECT pg_reload_conf()" >/dev/null 2>&1 || true
	# the checks after this one find the test login an approver, as before
	make_login_approver postgres || true
	rm -rf "$out"
}
trap cleanup EXIT
dropdb --if-exists "$db" >/dev/null 2>&1 || true
drop_roles
createdb "$db"

# README.md -> one psql script: a marker before each block and \c to the
# block's login, a marker after each statement (a line ending in ";", or
# \gset), one for each -- result: line; the expected results go to
# results.tsv (number, README line, text).  A ```sh block that runs becomes
# a script of its own, sh_N.sh, with the same markers (echo), which the
# psql script runs with \! in its place: psql flushes what it printed
# first, and the script prints to the same output.  When it fails, psql
# prints @@shell-failed and stops.  The scripts find the check's paths in
# the environment (OW_README_*), as \! and `` run them with sh.
export OW_README_ROOT OW_README_OUT=$out OW_README_DB=$db
OW_README_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
awk -v su="${PGUSER:-$(id -un)}" -v pw_set="${PGPASSWORD:+1}" -v results="$out/results.tsv" -v blocks="$out/blocks.tsv" \
	-v out="$out" '
	function sq(s) { gsub(/'\''/, "'\'''\''", s); return s }
	# a ```sh block runs when its first line is "# as: NAME"
	!inblock && !insh && /^```sh[[:space:]]*$/ { insh = 1; shfirst = 1; shrun = 0; start = NR; next }
	insh && /^```/ { if (shrun) close(shfile); insh = 0; next }
	insh && shfirst {
		shfirst = 0
		if ($0 !~ /^# as: [A-Za-z_][A-Za-z0-9_]*[[:space:]]*$/) next
		shrun = 1
		n++
		shfile = sprintf("%s/sh_%d.sh", out, n)
		printf "%d\t%d\t%s\n", n, start, $3 >> blocks
		printf "set -euo pipefail\ncd \"$OW_README_ROOT\"\n" > shfile
		printf "export PGUSER=%s PGDATABASE=\"$OW_README_DB\" TMPDIR=\"$OW_README_OUT\"\n", $3 > shfile
		printf "\\echo @@block %d\n", n
		printf "\\! bash \"$OW_README_OUT/sh_%d.sh\" && echo on >\"$OW_README_OUT/sh_ok\" || echo off >\"$OW_README_OUT/sh_ok\"\n", n
		printf "\\set sh_ok `cat \"$OW_README_OUT/sh_ok\"`\n\\if :sh_ok\n\\else\n\\echo @@shell-failed\n\\q\n\\endif\n"
		next
	}
	insh && !shrun { next }
	insh {
		if ($0 ~ /^[[:space:]]*# result: /) {
			m++
			text = $0; sub(/^[[:space:]]*# result: /, "", text)
			printf "%d\t%d\t%s\n", m, NR, text >> results
			printf "echo \"@@result %d\"\n", m > shfile
		}
		print > shfile
		# the end of a command: what it printed ends here
		if ($0 !~ /^[[:space:]]*(#.*)?$/ && $0 !~ /(\\|\||&&)[[:space:]]*$/) print "echo @@s" > shfile
		next
	}
	/^```sql[[:space:]]*$/ { inblock = 1; n++; first = 1; start = NR; next }
	inblock && /^```/ {
		inblock = 0
		# a login the block created gets the password of the test cluster
		if (pw_set)
			for (r in created) { printf "ALTER ROLE \"%s\" PASSWORD :'\''pw'\'';\n", r; delete created[r] }
		next
	}
	!inblock { next }
	first {
		first = 0
		who = su
		if ($0 ~ /^-- as: [A-Za-z_][A-Za-z0-9_]*[[:space:]]*$/) { who = $3 }
		printf "%d\t%d\t%s\n", n, start, who >> blocks
		printf "\\echo @@block %d\n\\c - %s\n", n, who
	}
	match($0, /CREATE ROLE [a-z_][a-z0-9_]* LOGIN/) { split(substr($0, RSTART, RLENGTH), w, " "); created[w[3]] = 1 }
	/^[[:space:]]*-- result: / {
		m++
		text = $0; sub(/^[[:space:]]*-- result: /, "", text)
		printf "%d\t%d\t%s\n", m, NR, text >> results
		printf "\\echo @@result %d\n", m
	}
	{ print }
	# the end of a statement: what it printed ends here
	/;[[:space:]]*(--.*)?$/ || /\\gset/ { print "\\echo @@s" }
	END {
		if (inblock) { print "an unterminated ```sql block" > "/dev/stderr"; exit 1 }
		if (insh) { print "an unterminated ```sh block" > "/dev/stderr"; exit 1 }
	}
' "$readme" >"$out/readme.sql"
: >>"$out/results.tsv"
nblocks=$(wc -l <"$out/blocks.tsv")
nsh=$(find "$out" -maxdepth 1 -name 'sh_*.sh' | wc -l)
[ "$nblocks" -ge 10 ] || { echo "only $nblocks blocks extracted from README.md" >&2; exit 1; }

# "…" in an expected result stands for any text
matches() {    # matches GOT EXPECTED
	local rest=$1 exp=$2 seg first=1
	while [[ $exp == *…* ]]; do
		seg=${exp%%…*}
		exp=${exp#*…}
		if [ $first = 1 ]; then
			[[ $rest == "$seg"* ]] || return 1
			rest=${rest#"$seg"}
			first=0
		else
			[[ $rest == *"$seg"* ]] || return 1
			rest=${rest#*"$seg"}
		fi
	done
	if [ $first = 1 ]; then [[ $rest == "$exp" ]]; else [[ $rest == *"$exp" ]]; fi
}
# compare the -- result: lines whose statements ran; 1 when one differs
compare_results() {
	local m line expected got bad=0
	while IFS=$'\t' read -r m line expected; do
		grep -qx "@@result $m" "$out/out.txt" || continue
		# what was printed between the marker before this one and this one
		got=$(awk -v m="@@result $m" '
			$0 == m { print last; exit }
			$0 == "@@s" { last = buf; buf = ""; next }
			/^@@(block|result) / { buf = ""; last = ""; next }
			{ buf = (buf == "" ? $0 : buf "\n" $0) }' "$out/out.txt")
		if ! matches "$got" "$expected"; then
			echo "README.md line $line: expected [$expected]" >&2
			echo "  got [$got]" >&2
			bad=1
		fi
	done <"$out/results.tsv"
	return $bad
}

status=0
psql -X -q -A -t -v ON_ERROR_STOP=1 -v pw="${PGPASSWORD:-unused}" -d "$db" \
	-f "$out/readme.sql" >"$out/out.txt" 2>"$out/err.txt" || status=$?
! grep -q '^@@shell-failed$' "$out/out.txt" || status=1
if [ "$status" -ne 0 ]; then
	# a result that differed before the failure is often its cause
	compare_results || true
	last=$(sed -n 's/^@@block \([0-9]*\)$/\1/p' "$out/out.txt" | tail -n 1)
	IFS=$'\t' read -r b line who < <(awk -F'\t' -v b="${last:-0}" '$1 == b' "$out/blocks.tsv")
	echo "README.md block $b (line $line, as $who) failed:" >&2
	grep -v '^psql:.*NOTICE:' "$out/err.txt" | tail -n 5 >&2
	echo "---- the block" >&2
	awk -v s="$line" 'NR > s { if (/^```/) exit; print }' "$readme" >&2
	exit 1
fi
echo "$nblocks blocks of README.md ran in order ($((nblocks - nsh)) sql, $nsh sh)"
compare_results || exit 1
echo "$(wc -l <"$out/results.tsv") -- result: lines match what their statements print"

# "its worker serves this database within seconds" (Getting started)
if [ "$(psql -X -A -t -q -d postgres -c "SHOW shared_preload_libraries")" = openwop_interrupt ]; then
	wait_served "$db" 15 >/dev/null
	echo "a worker serves the README's database"
fi
echo "readme examples check passed"
