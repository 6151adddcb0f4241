#!/usr/bin/env bash
# Promotion loses nothing acknowledged.  A throwaway primary with a
# synchronous streaming standby (synchronous_standby_names, as a DBA sets
# it; unix sockets in a private directory).  Four clients resolve, vote
# and cancel, each keeping a log of what it was told succeeded; the
# primary's postmaster is killed (kill -9) under that load and the standby
# promoted.  On the new primary:
# - every acknowledged resolve, vote and cancel is there exactly once;
# - every run's sequence is gapless, with at most one terminal event, last;
# - a request in flight at the kill, retried with its idempotency key, is
#   answered once: with the stored response marked as a replay, or
#   processed now -- never twice, never a mismatch;
# - the workers follow: the new primary's worker serves within seconds, a
#   deadline that passed during the failover is applied once, and a
#   listener on the new primary is notified of a new commit.
# Needs root (the clusters run as postgres) and PostgreSQL 15's binaries.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
throwaway_begin
work=$THROWAWAY
clients=""
cleanup() {
	[ -n "$clients" ] && kill $clients 2>/dev/null || true
	wait 2>/dev/null || true
	throwaway_end
}
trap cleanup EXIT
opts="-k $work -c listen_addresses='' -c shared_preload_libraries=openwop_interrupt -c max_connections=50"
# psql on a port, as a login (default postgres), in tenant acme
on() { local port=$1 user=$2; shift 2; psql -X -A -t -q -v ON_ERROR_STOP=1 -h "$work" -p "$port" -U "$user" -d postgres -c "SET openwop.tenant = 'acme'" "$@"; }
pq() { on 5811 postgres "$@" | tail -n 1; }
sq() { on 5812 postgres "$@" | tail -n 1; }

# the primary and its fixtures: per client 40 one-vote gates (resolves) and
# 40 runs to cancel; 40 two-of-three gates the voters answer
as_pg "$PGBIN/initdb -D $work/p -A trust --encoding=UTF8 --locale=C.UTF-8" >/dev/null
# no worker serves the primary's database (openwop.databases on its command line
# only), so the deadline below passes unapplied until the standby is promoted
as_pg "$PGBIN/pg_ctl -D $work/p -l $work/p.log -o \"-p 5811 $opts -c openwop.databases=ow_no_such_database\" -w start" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -h "$work" -p 5811 -U postgres -d postgres >/dev/null <<'SQL'
CREATE EXTENSION openwop_interrupt;
CREATE ROLE openwop_approver;
GRANT openwop_approver TO postgres;
DO $$ BEGIN
  FOR v IN 1..3 LOOP
    EXECUTE format('CREATE ROLE voter%s LOGIN IN ROLE openwop_approver', v);
    EXECUTE format('ALTER ROLE voter%s SET openwop.bound_tenant = %L', v, 'acme');
  END LOOP;
END $$;
GRANT USAGE ON SCHEMA openwop TO openwop_approver;
GRANT EXECUTE ON FUNCTION openwop.resolve_interrupt(text, text, jsonb, text) TO openwop_approver;
SET openwop.tenant = 'acme';
DO $$
DECLARE run text;
BEGIN
  FOR c IN 1..4 LOOP
    FOR i IN 1..40 LOOP
      run := format('acme/failover-r%s-%s', c, lpad(i::text, 6, '0'));
      PERFORM openwop.create_run('failover', jsonb_build_object('runId', run));
      PERFORM openwop.start_node(run, 'gate');
      PERFORM openwop.interrupt(run, 'gate', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc", "title": "T", "actions": ["accept", "reject"]}}');
      run := format('acme/failover-c%s-%s', c, lpad(i::text, 6, '0'));
      PERFORM openwop.create_run('failover', jsonb_build_object('runId', run));
      PERFORM openwop.start_node(run, 'work');
    END LOOP;
  END LOOP;
  FOR i IN 1..40 LOOP
    run := format('acme/failover-q-%s', lpad(i::text, 8, '0'));
    PERFORM openwop.create_run('failover', jsonb_build_object('runId', run));
    PERFORM openwop.start_node(run, 'gate');
    PERFORM openwop.interrupt(run, 'gate', '{"kind": "approval", "data": {"artifactId": "q", "artifactType": "doc", "title": "T", "actions": ["accept", "reject"], "requiredApprovals": 3}}');
  END LOOP;
END $$;
SQL

# the synchronous standby
as_pg "$PGBIN/pg_basebackup -h $work -p 5811 -U postgres -D $work/s -R -X stream" >/dev/null
echo "primary_conninfo = 'host=$work port=5811 user=postgres application_name=failover_standby'" >>"$work/s/postgresql.auto.conf"
as_pg "$PGBIN/pg_ctl -D $work/s -l $work/s.log -o \"-p 5812 $opts\" -w start" >/dev/null
pq -c "ALTER SYSTEM SET synchronous_standby_names = 'failover_standby'" >/dev/null
pq -c "SELECT pg_reload_conf()" >/dev/null
until_true 30 "the standby is synchronous" pq -c "SELECT count(*) = 1 FROM pg_stat_replication WHERE sync_state = 'sync'"
# a deadline that passes during the failover
pq -c "SELECT openwop.create_run('failover', '{\"runId\": \"acme/failover-deadline-01\"}'), openwop.start_node('acme/failover-deadline-01', 'gate'),
              openwop.interrupt('acme/failover-deadline-01', 'gate', '{\"kind\": \"approval\", \"timeoutMs\": 4000, \"data\": {\"artifactId\": \"d\", \"artifactType\": \"doc\", \"title\": \"T\", \"actions\": [\"accept\"], \"onTimeout\": \"reject\"}}')" >/dev/null
echo "a primary with a synchronous standby, 360 runs and a deadline 4 s away"

# the clients: each logs "attempt ..." before a call and "ok ..." when told it succeeded
client() {   # client N
	local n=$1 i run voter
	for i in $(seq -f '%06g' 1 40); do
		run=acme/failover-r$n-$i
		echo "attempt resolve $run" >>"$work/client$n.log"
		on 5811 postgres -c "SELECT openwop.resolve_interrupt('$run', 'gate', '{\"action\": \"accept\"}', 'failover-key-r$n-$i-000000')" >/dev/null 2>&1 &&
			echo "ok resolve $run" >>"$work/client$n.log"
		run=acme/failover-c$n-$i
		echo "attempt cancel $run" >>"$work/client$n.log"
		on 5811 postgres -c "SELECT openwop.cancel_run('$run', 'failover test')" >/dev/null 2>&1 &&
			echo "ok cancel $run" >>"$work/client$n.log"
		if [ "$n" -le 3 ]; then
			run=acme/failover-q-$(printf '%08d' $((10#$i)))
			echo "attempt vote voter$n $run" >>"$work/client$n.log"
			on 5811 "voter$n" -c "SELECT openwop.resolve_interrupt('$run', 'gate', '{\"action\": \"accept\"}')" >/dev/null 2>&1 &&
				echo "ok vote voter$n $run" >>"$work/client$n.log"
		fi
	done
}
for n in 1 2 3 4; do client $n & clients+=" $!"; done
# kill -9 the primary's postmaster once the clients are well under way
until_true 60 "the clients are under way" bash -c "[ \$(cat $work/client*.log 2>/dev/null | grep -c '^ok') -ge 60 ] && echo t"
# (its backends and walsender exit when they find the postmaster gone, acknowledging nothing more)
kill -9 "$(head -n 1 "$work/p/postmaster.pid")"
wait $clients 2>/dev/null || true
clients=""
acked=$(cat "$work"/client*.log | grep -c '^ok')
echo "the primary was killed (kill -9) under load after $acked acknowledged answers"

until_true 30 "the deadline passes, unapplied, while the standby still follows" \
	sq -c "SELECT bool_and(status = 'pending' AND expires_at < now()) FROM openwop.interrupts WHERE run_id = 'acme/failover-deadline-01'"
as_pg "$PGBIN/pg_ctl -D $work/s -w promote" >/dev/null
until_true 30 "the standby is promoted" sq -c "SELECT NOT pg_is_in_recovery()"

# every acknowledged answer is there exactly once
bad=0
while read -r _ what a b; do
	case $what in
	resolve) n=$(sq -c "SELECT count(*) FROM openwop.events('$a') e WHERE e ->> 'type' = 'interrupt.resolved'") ;;
	cancel) n=$(sq -c "SELECT count(*) FROM openwop.events('$a') e WHERE e ->> 'type' = 'run.cancelled'") ;;
	vote) n=$(sq -c "SELECT count(*) FROM openwop.votes v JOIN openwop.interrupts i USING (tenant, interrupt_id)
	                  WHERE i.run_id = '$b' AND v.voter_subject ->> 'subjectId' = '$a'") ;;
	esac
	[ "$n" = 1 ] || { echo "acknowledged $what $a $b is there $n times" >&2; bad=$((bad + 1)); }
done < <(cat "$work"/client*.log | grep '^ok')
[ "$bad" = 0 ]
echo "all $acked acknowledged resolves, votes and cancels are on the promoted standby, each once"

# every run: gapless, at most one terminal event, and it is the last
[ "$(sq -c "SELECT count(*) FROM openwop.runs r
             WHERE r.next_sequence <> (SELECT count(*) FROM openwop.events e WHERE e.tenant = r.tenant AND e.run_id = r.run_id)
                OR r.next_sequence - 1 <> (SELECT max(sequence) FROM openwop.events e WHERE e.tenant = r.tenant AND e.run_id = r.run_id)")" = 0 ]
[ "$(sq -c "SELECT count(*) FROM openwop.runs r
             WHERE (SELECT count(*) FROM openwop.events e WHERE e.tenant = r.tenant AND e.run_id = r.run_id
                      AND e.type IN ('run.completed', 'run.failed', 'run.cancelled')) > 1
                OR EXISTS (SELECT FROM openwop.events e WHERE e.tenant = r.tenant AND e.run_id = r.run_id
                             AND e.type IN ('run.completed', 'run.failed', 'run.cancelled') AND e.sequence <> r.next_sequence - 1)")" = 0 ]
# what was not acknowledged is wholly there or wholly absent: a gate's row and its events agree, and a run's status and its log
[ "$(sq -c "SELECT count(*) FROM openwop.interrupts i
             WHERE (i.status = 'resolved') <> EXISTS (SELECT FROM openwop.events e WHERE e.tenant = i.tenant AND e.run_id = i.run_id
                                                        AND e.type = 'interrupt.resolved' AND e.payload ->> 'interruptId' = i.interrupt_id)")" = 0 ]
[ "$(sq -c "SELECT count(*) FROM openwop.runs r
             WHERE (r.status = 'cancelled') <> EXISTS (SELECT FROM openwop.events e WHERE e.tenant = r.tenant AND e.run_id = r.run_id
                                                         AND e.type = 'run.cancelled')")" = 0 ]
[ "$(sq -c "SELECT count(*) FROM openwop.interrupts i
             WHERE (i.status = 'pending') <> EXISTS (SELECT FROM openwop.open_interrupts o WHERE o.tenant = i.tenant
                                                       AND o.interrupt_id = i.interrupt_id AND o.status = 'pending')")" = 0 ]
echo "every run's sequence is gapless, with at most one terminal event, the last; each gate's row, its open row and run's status agree with the log"

# the resolves in flight at the kill, retried with their key: answered once
# resend RUN: its resolve again, with the key its client used, on the new
# primary; prints the answer, which must be a resolve, and leaves the run
# resolved once
resend() {
	local out
	out=$(sq -c "SELECT openwop.resolve_interrupt('$1', 'gate', '{\"action\": \"accept\"}', 'failover-key-${1#acme/failover-}-000000')" 2>&1) ||
		{ echo "the resend of $1 failed: $out" >&2; return 1; }
	grep -q '"status": "resolved"' <<<"$out" || { echo "the resend of $1 answered: $out" >&2; return 1; }
	[ "$(sq -c "SELECT count(*) FROM openwop.events('$1') e WHERE e ->> 'type' = 'interrupt.resolved'")" = 1 ] ||
		{ echo "$1 is not resolved once after its resend" >&2; return 1; }
	echo "$out"
}
retried=0 replayed=0
while read -r _ _ run; do
	grep -q "^ok resolve $run$" "$work"/client*.log && continue
	out=$(resend "$run")
	retried=$((retried + 1))
	grep -q '"idempotentReplay": true' <<<"$out" && replayed=$((replayed + 1))
done < <(cat "$work"/client*.log | grep '^attempt resolve')
echo "$retried resolves without an answer, retried on the new primary with their keys: each resolved once ($replayed answered with the stored response, marked as a replay; the rest processed now)"
# an acknowledged resolve sent again with its key (its answer lost on the way back): the stored response, a replay
n=0
while read -r _ _ run; do
	out=$(resend "$run")
	grep -q '"idempotentReplay": true' <<<"$out" || { echo "the resend of acknowledged $run was not a replay: $out" >&2; exit 1; }
	n=$((n + 1))
done < <(cat "$work"/client*.log | grep '^ok resolve')
[ "$n" -ge 1 ]
echo "$n acknowledged resolves sent again with their keys on the new primary: each answered with its stored response, marked as a replay"

# the workers follow the primary
until_true 30 "the promoted server's worker serves" sq -c "SELECT count(*) = 1 FROM openwop.workers WHERE database = current_database() AND serving"
until_true 30 "the deadline that passed during the failover is applied" sq -c "SELECT openwop.run_snapshot('acme/failover-deadline-01') ->> 'status' = 'failed'"
[ "$(sq -c "SELECT count(*) FROM openwop.events('acme/failover-deadline-01') e WHERE e ->> 'type' = 'interrupt.resolved'")" = 1 ]
relayed=$(sq -c "SELECT relayed FROM openwop.workers WHERE database = current_database()")
printf 'SET openwop.tenant = '\''acme'\'';\nSELECT openwop.listen();\nSELECT pg_sleep(10);\nSELECT 1;\n' | psql -X -q -A -t -h "$work" -p 5812 -U postgres -d postgres >"$work/listen.txt" 2>&1 &
listener=$!
until_true 30 "the listener listens" sq -c "SELECT count(*) = 1 FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(10);'"
sq -c "SELECT openwop.create_run('failover', '{\"runId\": \"acme/failover-after-0001\"}')" >/dev/null
until_true 30 "the worker relays the notification" sq -c "SELECT relayed > $relayed FROM openwop.workers WHERE database = current_database()"
wait $listener
grep -q 'Asynchronous notification "openwop_events_[0-9a-f]*" with payload "{"runId": "acme/failover-after-0001"' "$work/listen.txt" ||
	{ echo "no notification on the new primary:" >&2; cat "$work/listen.txt" >&2; exit 1; }
echo "the new primary's worker serves: the passed deadline applied once, a listener notified of a new commit by its relay"
if grep -E 'openwop.*(ERROR|FATAL|WARNING)|(ERROR|FATAL|WARNING).*openwop' "$work/s.log" | grep -v 'STATEMENT' >&2; then
	echo "the promoted standby logged openwop errors (above)" >&2
	exit 1
fi
echo "failover checks passed"
