#!/usr/bin/env bash
# The benchmark proper: runs inside the throwaway cluster bench/run starts
# (pg_virtualenv: PGHOST, PGPORT, PGUSER set), in database postgres, where
# the notify relay runs.  Every figure is measured next to its baseline in
# this same run.  Usage: bench.sh quick|full OUTDIR
set -euo pipefail
mode=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
db=postgres
export PGDATABASE=$db
mkdir -p "$out"
rm -f "$out"/*.csv "$out"/lat.* 2>/dev/null || true

if [ "$mode" = quick ]; then
	SCALE=10 DUR=4 REPS=1
	T1=2500 T8=600 T32=150          # transactions per client, resolve figures
	C1=300 C8=100                   # cycles per client
	M=300                           # interrupts raced over by 32 clients
	TOKENS=5000 LAT=2000 SMALL=10000 LARGE=200000 STORE=500
else
	SCALE=50 DUR=20 REPS=3
	T1=12000 T8=3000 T32=750
	C1=1500 C8=500
	M=1500
	TOKENS=20000 LAT=10000 SMALL=10000 LARGE=1000000 STORE=2000
fi

sql() { psql -X -q -A -t -v ON_ERROR_STOP=1 "$@"; }
say() { printf '%s  %s\n' "$(date +%T)" "$*" >&2; }
tps() { sed -n 's/^tps = \([0-9.]*\) .*/\1/p' | tail -n 1; }
# median of the numbers on stdin
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
record() {   # figure clients value unit baseline baseline_value target_kind target
	local ratio=NULL met=NULL
	if [ "$6" != NULL ] && [ "$6" != 0 ]; then
		ratio=$(awk -v a="$3" -v b="$6" 'BEGIN { printf "%.3f", a / b }')
	fi
	case "$7" in
	min) met=$(awk -v r="$ratio" -v t="$8" 'BEGIN { print (r >= t) ? "yes" : "no" }') ;;
	max) met=$(awk -v r="$ratio" -v t="$8" 'BEGIN { print (r <= t) ? "yes" : "no" }') ;;
	esac
	local target=NULL
	case "$7" in
	min) target="'>= $8'" ;;
	max) target="'<= $8'" ;;
	text) target="'$8'" ;;
	esac
	[ "$met" != NULL ] && met="'$met'"
	sql -c "INSERT INTO bench.results VALUES ('$1', $2, $3, '$4', $( [ "$5" = NULL ] && echo NULL || echo "'$5'"), $6, $ratio, $target, $met)"
}
settle() { sql -c "ANALYZE" -c "CHECKPOINT"; }
fresh() {    # the extension with empty tables
	sql -c "DROP EXTENSION IF EXISTS openwop_interrupt CASCADE" -c "CREATE EXTENSION openwop_interrupt" 2>/dev/null
	sql -c "SELECT openwop.add_signing_key('bench-key')" >/dev/null
}

say "setup: pgbench tables (scale $SCALE), the extension, the PL/pgSQL alternative"
pgbench -q -i -s "$SCALE" >/dev/null 2>&1
sql -c "DROP SCHEMA IF EXISTS bench CASCADE" -c "DROP SCHEMA IF EXISTS plbench CASCADE" 2>/dev/null
sql -f "$here/sql/setup.sql" -f "$here/sql/plpgsql_resolve.sql" -f "$here/sql/plpgsql_token.sql" -f "$here/sql/history.sql"
fresh
tag=0
next_tag() { tag=$((tag + 1)); }

# ---------------------------------------------------------------- throughput
declare -A NB CX PL
for c in 1 8 32; do
	case $c in 1) t=$T1 ;; 8) t=$T8 ;; 32) t=$T32 ;; esac
	for rep in $(seq 1 $REPS); do
		say "throughput, $c clients, round $rep: pgbench -N"
		settle
		NB[$c]+="$(pgbench -N -c $c -j 2 -T $DUR 2>/dev/null | tps) "
		next_tag; sql -c "CALL bench.make_gates($tag, $c, $t)"; settle
		say "throughput, $c clients, round $rep: resolve (C), $((c * t)) interrupts"
		CX[$c]+="$(pgbench -n -f "$here/scripts/resolve.pgb" -D impl=openwop -D tag=$tag -D n=0 -c $c -j 2 -t $t 2>/dev/null | tps) "
		next_tag; sql -c "CALL plbench.make_gates($tag, $c, $t)"; settle
		say "throughput, $c clients, round $rep: resolve (PL/pgSQL), $((c * t)) interrupts"
		PL[$c]+="$(pgbench -n -f "$here/scripts/resolve.pgb" -D impl=plbench -D tag=$tag -D n=0 -c $c -j 2 -t $t 2>/dev/null | tps) "
	done
	nb=$(echo ${NB[$c]} | tr ' ' '\n' | median)
	cx=$(echo ${CX[$c]} | tr ' ' '\n' | median)
	pl=$(echo ${PL[$c]} | tr ' ' '\n' | median)
	case $c in
	1) record "resolve/s" $c "$cx" tps "pgbench -N" "$nb" min 1.3 ;;
	8) record "resolve/s" $c "$cx" tps "pgbench -N" "$nb" min 0.9 ;;
	*) record "resolve/s" $c "$cx" tps "pgbench -N" "$nb" none - ;;
	esac
	record "resolve/s vs PL/pgSQL" $c "$cx" tps "PL/pgSQL resolve" "$pl" text "wide margin"
	record "PL/pgSQL resolve/s" $c "$pl" tps "pgbench -N" "$nb" none -
done

# ---------------------------------------------------------------- whole cycle
for c in 1 8; do
	case $c in 1) t=$C1 ;; 8) t=$C8 ;; esac
	next_tag; settle
	say "whole cycle, $c clients: create_run, start_node, interrupt, resolve, complete_node, complete_run"
	cyc=$(pgbench -n -f "$here/scripts/cycle.pgb" -D tag=$tag -D n=0 -c $c -j 2 -t $t 2>/dev/null | tps)
	nb=$(echo ${NB[$c]} | tr ' ' '\n' | median)
	record "whole runs/s (6 commits each)" $c "$cyc" "runs/s" "pgbench -N" "$nb" none -
done

# ---------------------------------------------------------------- contention
next_tag; sql -c "CALL bench.make_gates($tag, 1, $M)"; settle
say "contention: 32 clients race over the same $M interrupts"
start=$(date +%s.%N)
pgbench -n -f "$here/scripts/contention.pgb" -D tag=$tag -D n=0 -c 32 -j 2 -t $M >/dev/null 2>&1
end=$(date +%s.%N)
attempts=$(awk -v m=$M -v s=$start -v e=$end 'BEGIN { printf "%.1f", 32 * m / (e - s) }')
winners=$(sql -c "SELECT count(*) FROM openwop.interrupts WHERE run_id LIKE 'default/benchmark-run-$tag-0-%' AND status = 'resolved'")
resolved_events=$(sql -c "SELECT count(*) FROM openwop.events WHERE run_id LIKE 'default/benchmark-run-$tag-0-%' AND type = 'interrupt.resolved'")
record "contended attempts/s" 32 "$attempts" "attempts/s" NULL NULL none -
record "winners (interrupt.resolved events)" 32 "$resolved_events" events "interrupts raced" "$M" text "= 1.000"
sql -c "UPDATE bench.results SET met = CASE WHEN $resolved_events = $M AND $winners = $M THEN 'yes' ELSE 'no' END
         WHERE figure = 'winners (interrupt.resolved events)'"

# ---------------------------------------------------------------- tokens
say "tokens: $TOKENS verifications in C and in PL/pgSQL with pgcrypto"
next_tag; sql -c "CALL bench.make_gates($tag, 1, 100)"
sql <<SQL
CREATE TABLE bench.tokens AS
SELECT openwop.mint_interrupt_token(i.interrupt_id, 'resolve', make_interval(secs => 3600 + g % 997)) AS token
  FROM generate_series(1, $TOKENS) g
  JOIN openwop.interrupts i ON i.run_id = bench.run_id($tag, 0, 1 + g % 100);
SQL
[ "$(sql -c "SELECT count(*) FROM bench.tokens t WHERE openwop.verify_interrupt_token(t.token) = plbench.verify_interrupt_token(t.token)")" = "$TOKENS" ] ||
	{ echo "the C and PL/pgSQL token checks disagree" >&2; exit 1; }
rate() {   # verifications per second of function $1, best of three
	for i in 1 2 3; do
		sql -c "DO \$\$ DECLARE t0 timestamptz := clock_timestamp(); n bigint; BEGIN
		          SELECT count($1(token)) INTO n FROM bench.tokens;
		          RAISE NOTICE '%', round(n / extract(epoch FROM clock_timestamp() - t0)); END \$\$" 2>&1 |
			sed -n 's/^NOTICE:  //p'
	done | sort -g | tail -n 1
}
cv=$(rate openwop.verify_interrupt_token)
pv=$(rate plbench.verify_interrupt_token)
record "token verifications/s" 1 "$cv" "per s" "PL/pgSQL + pgcrypto" "$pv" min 10

# ---------------------------------------------------------------- latency at scale
latency() {   # latency TAG: p50 and p99 in ms of $LAT resolves at 1 client
	sql -c "CALL bench.make_gates($1, 1, $LAT)"; settle
	rm -f "$out"/lat.*
	(cd "$out" && pgbench -n -f "$here/scripts/resolve.pgb" -D impl=openwop -D tag=$1 -D n=0 -c 1 -t $LAT -l --log-prefix=lat >/dev/null 2>&1)
	cat "$out"/lat.* | awk '{ print $3 }' | sort -n |
		awk '{ v[NR] = $1 } END { printf "%.3f %.3f\n", v[int(NR * 0.50 + 0.5)] / 1000, v[int(NR * 0.99 + 0.5)] / 1000 }'
	rm -f "$out"/lat.*
}
fresh
sql -c "CALL bench.grow_history($SMALL)"
small_events=$(sql -c "SELECT count(*) FROM openwop.events")
say "latency: $LAT resolves with $small_events events in the log"
next_tag
read -r p50s p99s <<<"$(latency $tag)"
sql -c "CALL bench.grow_history($LARGE)"
large_events=$(sql -c "SELECT count(*) FROM openwop.events")
say "latency: $LAT resolves with $large_events events in the log"
next_tag
read -r p50l p99l <<<"$(latency $tag)"
record "resolve p50 latency, $large_events events" 1 "$p50l" ms "p50 with $small_events events" "$p50s" max 1.25
record "resolve p99 latency, $large_events events" 1 "$p99l" ms "p99 with $small_events events" "$p99s" none -

# ---------------------------------------------------------------- storage
fresh
sql -c "CHECKPOINT"
before=$(sql -c "SELECT sum(bytes) FROM bench.openwop_bytes()")
say "storage: $STORE approval gates (2-of-3, two votes, run completed)"
sql -c "CALL bench.make_approvals($STORE)"
sql -c "VACUUM openwop.runs, openwop.node_executions, openwop.interrupts, openwop.events, openwop.votes"
after=$(sql -c "SELECT sum(bytes) FROM bench.openwop_bytes()")
per=$(( (after - before) / STORE ))
record "bytes per approval gate (events, votes, indexes)" 1 "$per" bytes NULL NULL none -
sql -F, -c "SELECT tbl, round(bytes::numeric / $STORE) FROM bench.openwop_bytes() WHERE bytes > 0 ORDER BY 2 DESC" \
	>"$out/storage.csv"

# ---------------------------------------------------------------- report
sql -c "\\copy (SELECT figure, clients, value, unit, baseline, baseline_value, ratio, target, met FROM bench.results) TO '$out/results.csv' CSV HEADER"
{
	echo "## machine"
	echo "cpu: $(lscpu | sed -n 's/^Model name: *//p') ($(nproc) cores)"
	echo "memory: $(free -g | awk '/^Mem:/ { print $2 }') GiB"
	echo "kernel: $(uname -r)"
	echo "postgres: $(sql -c 'SHOW server_version')"
	echo "settings: fsync=$(sql -c 'SHOW fsync'), synchronous_commit=$(sql -c 'SHOW synchronous_commit'), shared_buffers=$(sql -c 'SHOW shared_buffers'), wal_level=$(sql -c 'SHOW wal_level')"
	echo "mode: $mode (pgbench -N for $DUR s per client count, median of $REPS)"
	echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
} >"$out/machine.txt"
cat "$out/machine.txt"
echo
psql -X -q -P pager=off -c "SELECT figure, clients, round(value, 2) AS value, unit, baseline,
                                   round(baseline_value, 2) AS baseline_value, ratio, target, met
                              FROM bench.results"
