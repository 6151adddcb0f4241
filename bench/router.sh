#!/usr/bin/env bash
# The router's figures (docs/scale-out.md): resolves per second through the
# router (openwop_router, PL/Proxy) with 1, 2 and 4 shards, next to the same
# resolves sent to one shard's server directly, in the same run and on the
# same machine; the latency the router adds to a call (p50 at 1 client);
# and the CPU per resolve of the router's server and of the shards'.
#
# Every shard is a PostgreSQL cluster of its own, as durable as bench/run's
# (fsync, synchronous_commit, its own WAL), and so is the router; all of them
# run here, on this machine's cores: the figures say what a hop costs, not
# how far more machines would scale (docs/scale-out.md says what they can
# and cannot show).  A round measures the direct server and the router over
# 1, 2 and 4 shards in turn, the order reversed every other round; figures
# are medians of the rounds.  Run as root by bench/run after bench.sh
# (packages installed, the extensions built and installed):
#   bench/router.sh quick|full OUTDIR
# appends its rows to OUTDIR/results.csv and OUTDIR/rounds.csv.
set -euo pipefail
mode=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../test/lib.sh"
# quick: one round at 1 client, no 2-shard configuration, a few hundred resolves each
if [ "$mode" = quick ]; then
	REPS=1 T1=200 T8=50 CLIENTS="1" SHARDS="1 4"
else
	REPS=3 T1=3000 T8=1000 CLIENTS="1 8" SHARDS="1 2 4"
fi
# ports of the router's cluster and the four shards' (sockets in a private directory)
PORT0=${ROUTER_BENCH_PORT:-5531}
throwaway_begin
work=$THROWAWAY
trap throwaway_end EXIT
mkdir -p "$out"
[ -s "$out/results.csv" ] || echo "figure,clients,value,unit,baseline,baseline_value,ratio,target,met,wal_per_txn,baseline_wal_per_txn,fpi_per_txn,baseline_fpi_per_txn" >"$out/results.csv"
[ -s "$out/rounds.csv" ] || echo "measurement,tps,wal_bytes_per_txn,fpi_per_txn,machine_cpu_us_per_txn,steal_us_per_txn,steal_pct,throttled" >"$out/rounds.csv"
say() { printf '%s  %s\n' "$(date +%T)" "$*" >&2; }
q() { local port=$1 db=$2; shift 2; psql -X -q -A -t -v ON_ERROR_STOP=1 -h "$work" -p "$port" -U postgres -d "$db" "$@"; }
rport=$PORT0
sport=($((PORT0 + 1)) $((PORT0 + 2)) $((PORT0 + 3)) $((PORT0 + 4)))

# ---- the clusters: one initdb, copied
say "router: five durable clusters (the router's and four shards'), each with its own WAL"
as_pg "$PGBIN/initdb -D $work/template -A trust --encoding=UTF8 --locale=C.UTF-8" >/dev/null
opts="-k $work -c listen_addresses='' -c shared_preload_libraries=openwop_interrupt -c fsync=on -c synchronous_commit=on"
opts="$opts -c shared_buffers=512MB -c max_wal_size=8GB -c checkpoint_timeout=30min -c max_connections=100"
opts="$opts -c openwop.forwarding_role=openwop_forwarder"
opts="$opts -c openwop.key_encryption_key_file=$(new_kek_file "$work")"
for c in r s0 s1 s2 s3; do
	as_pg "cp -a $work/template $work/$c"
done
as_pg "$PGBIN/pg_ctl -D $work/r -l $work/r.log -o \"-p $rport $opts\" -w start" >/dev/null
for i in 0 1 2 3; do
	as_pg "$PGBIN/pg_ctl -D $work/s$i -l $work/s$i.log -o \"-p ${sport[$i]} $opts\" -w start" >/dev/null
done
roles="CREATE ROLE openwop_forwarder NOLOGIN;
CREATE ROLE openwop_router LOGIN IN ROLE openwop_forwarder;
ALTER ROLE openwop_router SET openwop.bound_tenant = '*';
CREATE ROLE openwop_approver NOLOGIN;
CREATE ROLE bencher LOGIN IN ROLE openwop_approver;
ALTER ROLE bencher SET openwop.bound_tenant = '*';"
for i in 0 1 2 3; do
	q "${sport[$i]}" postgres >/dev/null <<SQL
$roles
CREATE EXTENSION openwop_interrupt;
GRANT USAGE ON SCHEMA openwop, openwop_forward TO openwop_router, bencher;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop, openwop_forward TO openwop_router, bencher;
CREATE SCHEMA bench;
-- per client, "per" runs of the client's tenant suspended on an approval gate, through the API
CREATE PROCEDURE bench.make_gates(tag int, tenant text, client int, per int) LANGUAGE plpgsql AS \$\$
DECLARE r text;
BEGIN
  PERFORM set_config('openwop.tenant', tenant, false);
  FOR n IN 1 .. per LOOP
    r := format('%s/benchmark-run-%s-%s-%s', tenant, tag, client, n);
    PERFORM openwop.create_run('bench', jsonb_build_object('runId', r));
    PERFORM openwop.start_node(r, 'gate');
    PERFORM openwop.interrupt(r, 'gate', '{"kind": "approval", "data": {"artifactId": "expense-412", "artifactType": "expense",
                                           "title": "Approve 412.50 for jo", "actions": ["accept", "reject"]}}');
  END LOOP;
END \$\$;
SQL
done
# the router: one database per shard count, each its own PL/Proxy cluster openwop
q $rport postgres -c "$roles" >/dev/null
for n in $SHARDS; do
	parts=""
	for i in $(seq 0 $((n - 1))); do parts="$parts, p$i 'host=$work port=${sport[$i]} dbname=postgres'"; done
	q $rport postgres -c "CREATE DATABASE router$n" >/dev/null
	q $rport "router$n" >/dev/null <<SQL
CREATE EXTENSION plproxy;
CREATE EXTENSION openwop_router;
CREATE SERVER openwop FOREIGN DATA WRAPPER plproxy OPTIONS (connection_lifetime '1800'$parts);
CREATE USER MAPPING FOR PUBLIC SERVER openwop OPTIONS (user 'openwop_router');
GRANT USAGE ON FOREIGN SERVER openwop TO bencher;
GRANT USAGE ON SCHEMA openwop, openwop_router TO bencher;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop, openwop_router TO bencher;
SQL
done
# eight tenants <prefix>0 .. <prefix>7 whose hashes put tenant k on partition
# k mod 4 of four (so k mod 2 of two): client c answers in tenant c mod 8
prefix=$(q $rport postgres -c "SELECT 'rb' || p || '-' FROM generate_series(1, 5000000) p
          WHERE (SELECT bool_and(hashtext('rb' || p || '-' || k) & 3 = k % 4) FROM generate_series(0, 7) k) LIMIT 1")
[ -n "$prefix" ] || { echo "no tenant prefix spreads over four partitions" >&2; exit 1; }

# ---- measuring
# CPU ticks of a cluster's processes so far: the postmaster's, its children
# reaped (their backends, once exited) and those still running
cluster_ticks() {
	local pm t=0 p
	pm=$(head -n 1 "$work/$1/postmaster.pid")
	for p in $pm $(ps -o pid= --ppid "$pm"); do
		t=$((t + $(awk -v pm="$pm" '{ print $14 + $15 + (($1 == pm) ? $16 + $17 : 0) }' "/proc/$p/stat" 2>/dev/null || echo 0)))
	done
	echo $t
}
. "$here/lib.sh"    # machine_ticks, steady_tps
settle() {
	local i
	for i in 0 1 2 3; do q "${sport[$i]}" postgres -c "ANALYZE openwop.runs, openwop.interrupts, openwop.open_interrupts, openwop.events" -c CHECKPOINT; done
	q $rport postgres -c CHECKPOINT
}
tag=0
# gates TAG CLIENTS PER SHARDS: each client's gates on the shard of its tenant
gates() {
	local c k s pids=""
	for s in 0 1 2 3; do
		{
			for c in $(seq 0 $(($2 - 1))); do
				k=$((c % 8))
				if [ $((k % $4)) = "$s" ]; then echo "CALL bench.make_gates($1, '$prefix$k', $c, $3);"; fi
			done
		} >"$work/gates-$s.sql"
		if [ -s "$work/gates-$s.sql" ]; then
			q "${sport[$s]}" postgres -f "$work/gates-$s.sql" &
			pids="$pids $!"
		fi
	done
	for p in $pids; do wait "$p"; done
}
# measure WHAT CLIENTS PER SHARDS PORT DB: one measurement; sets TPS, P50 (ms),
# CPU_R and CPU_S (µs per resolve on the router's server and on the shards'
# together; for the direct server, CPU_S is its own)
measure() {
	local what=$1 c=$2 per=$3 shards=$4 port=$5 db=$6 dir log r0 r1 s0 s1 i busy0 steal0 all0 busy1 steal1 all1 n
	tag=$((tag + 1))
	gates $tag "$c" "$per" "$shards"
	settle
	dir=$(mktemp -d)
	log=$dir/pgbench.log
	r0=$(cluster_ticks r) s0=0
	for i in 0 1 2 3; do s0=$((s0 + $(cluster_ticks s$i))); done
	read -r busy0 steal0 all0 <<<"$(machine_ticks)"
	if ! (cd "$dir" && pgbench -n -l --log-prefix=tx -h "$work" -p "$port" -U bencher -d "$db" \
		-f "$here/scripts/router_resolve.pgb" -D prefix="$prefix" -D tag=$tag -D n=0 -c "$c" -j 2 -t "$per") >"$log" 2>&1 ||
		grep -q -e 'aborted' -e '^number of failed transactions: [1-9]' "$log"; then
		cat "$log" >&2
		echo "pgbench failed: $what" >&2
		exit 1
	fi
	sleep 0.5  # the backends exit and are reaped: their CPU is the postmaster's
	read -r busy1 steal1 all1 <<<"$(machine_ticks)"
	r1=$(cluster_ticks r) s1=0
	for i in 0 1 2 3; do s1=$((s1 + $(cluster_ticks s$i))); done
	n=$((c * per))
	TPS=$(steady_tps "$dir")
	P50=$(cat "$dir"/tx.* | awk '{ print $3 }' | sort -n | awk '{ v[NR] = $1 } END { printf "%.3f", v[int((NR + 1) / 2)] / 1000 }')
	hz=$(getconf CLK_TCK)
	CPU_R=$(awk -v t=$((r1 - r0)) -v hz="$hz" -v n=$n 'BEGIN { printf "%.0f", t * 1e6 / hz / n }')
	CPU_S=$(awk -v t=$((s1 - s0)) -v hz="$hz" -v n=$n 'BEGIN { printf "%.0f", t * 1e6 / hz / n }')
	awk -v what="$what" -v tps="$TPS" -v n=$n -v hz="$hz" -v b=$((busy1 - busy0)) -v st=$((steal1 - steal0)) -v all=$((all1 - all0)) 'BEGIN {
		printf "\"%s\",%s,,,%.0f,%.0f,%.1f,%s\n", what, tps, b * 1e6 / hz / n, st * 1e6 / hz / n,
		       (all > 0) ? st * 100 / all : 0, (all > 0 && st * 10 > all) ? "yes" : "no" }' >>"$out/rounds.csv"
	rm -rf "$dir"
}
median() { sort -g | awk 'NF { v[++n] = $1 } END { if (n) print v[int((n + 1) / 2)]; else print "NULL" }'; }
# row FIGURE CLIENTS VALUE UNIT BASELINE BASELINE_VALUE: a row of results.csv, as bench.sh's record writes it
row() {
	local ratio=""
	if [ "$3" != NULL ] && [ "$6" != NULL ] && [ "$6" != 0 ]; then ratio=$(awk -v a="$3" -v b="$6" 'BEGIN { printf "%.3f", a / b }'); fi
	local base=""
	[ "$5" = NULL ] || base="\"$5\""
	printf '"%s",%s,%s,%s,%s,%s,%s,,,,,,\n' "$1" "$2" "${3/NULL/}" "$4" "$base" "${6/NULL/}" "$ratio" >>"$out/results.csv"
}

declare -A V
configs="direct $SHARDS"
for rep in $(seq 1 $REPS); do
	order=$configs
	[ $((rep % 2)) = 0 ] && order=$(echo "$configs" | tr ' ' '\n' | tac | tr '\n' ' ')
	for c in $CLIENTS; do
		per=$T1
		[ "$c" = 1 ] || per=$T8
		for cfg in $order; do
			if [ "$cfg" = direct ]; then
				say "router, round $rep, $c clients: directly to one shard's server, $((c * per)) resolves"
				measure "router section: resolve directly, $c clients" "$c" "$per" 1 "${sport[0]}" postgres
			else
				say "router, round $rep, $c clients: through the router, $cfg shard(s), $((c * per)) resolves"
				measure "router section: resolve through the router, $cfg shards, $c clients" "$c" "$per" "$cfg" $rport "router$cfg"
			fi
			V[tps.$cfg.$c]+="$TPS"$'\n' V[p50.$cfg.$c]+="$P50"$'\n'
			V[cpur.$cfg.$c]+="$CPU_R"$'\n' V[cpus.$cfg.$c]+="$CPU_S"$'\n'
		done
	done
done
m() { printf '%s' "${V[$1]}" | median; }
for c in $CLIENTS; do
	for n in $SHARDS; do
		row "resolve/s through the router, $n shard(s)" "$c" "$(m tps.$n.$c)" tps "resolve/s directly (one server)" "$(m tps.direct.$c)"
	done
	row "resolve/s through the router, 4 shards / 1 shard" "$c" "$(m tps.4.$c)" tps "through the router, 1 shard" "$(m tps.1.$c)"
done
for n in 1 4; do
	row "resolve p50 latency through the router, $n shard(s)" 1 "$(m p50.$n.1)" ms "p50 directly (one server)" "$(m p50.direct.1)"
	row "router's added latency per resolve (p50 via router - p50 direct), $n shard(s)" 1 \
		"$(awk -v a="$(m p50.$n.1)" -v b="$(m p50.direct.1)" 'BEGIN { printf "%.3f", a - b }')" ms NULL NULL
done
for c in $CLIENTS; do
	for n in 1 4; do
		row "CPU per resolve through the router, $n shard(s): the router's server" "$c" "$(m cpur.$n.$c)" "µs CPU" \
			"CPU per resolve directly: the server" "$(m cpus.direct.$c)"
		row "CPU per resolve through the router, $n shard(s): the shards' servers" "$c" "$(m cpus.$n.$c)" "µs CPU" \
			"CPU per resolve directly: the server" "$(m cpus.direct.$c)"
	done
done
say "router: done (tenant prefix $prefix)"
