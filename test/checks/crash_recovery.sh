#!/usr/bin/env bash
# Faults: an acknowledged resolve survives kill -9 of a server process (the
# postmaster then kills every process and recovers from the WAL); a
# resolve that was in flight (not committed) leaves no trace; after crash
# recovery the run's sequence is still gapless, the in-flight interrupt can
# be resolved exactly once, and the notify relay and timeout worker are back.
# Needs the cluster test/run starts.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
db=openwop_crash
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d $db -c "SET openwop.tenant = 'acme'" -c "$1" | tail -n 1; }
trap 'psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true' EXIT

psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null 2>&1
make_login_approver $db
psql -X -q -v ON_ERROR_STOP=1 -d $db >/dev/null <<'SQL'
CREATE EXTENSION openwop_interrupt;
SET openwop.tenant = 'acme';
DO $$
BEGIN
  FOR i IN 1 .. 20 LOOP
    PERFORM openwop.create_run('crash', jsonb_build_object('runId', 'acme/crash-run-' || lpad(i::text, 8, '0')));
    PERFORM openwop.start_node('acme/crash-run-' || lpad(i::text, 8, '0'), 'gate');
    PERFORM openwop.interrupt('acme/crash-run-' || lpad(i::text, 8, '0'), 'gate',
      '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc", "title": "T", "actions": ["accept", "reject"]}}');
  END LOOP;
END $$;
SQL

# 1. ten resolves, each acknowledged (autocommit) before the crash
for i in $(seq 1 10); do
	[ "$(q "SELECT openwop.resolve_interrupt('acme/crash-run-$(printf %08d $i)', 'gate', '{\"action\": \"accept\"}') ->> 'decision'")" = granted ]
done

# 2. one resolve in flight: done but not committed when the server dies
fifo=$(mktemp -u); mkfifo "$fifo"
psql -X -q -d $db <"$fifo" >/dev/null 2>&1 &
inflight=$!
exec 3>"$fifo"
printf "SET openwop.tenant = 'acme';\nBEGIN;\nSELECT openwop.resolve_interrupt('acme/crash-run-00000011', 'gate', '{\"action\": \"accept\"}');\n" >&3
deadline=$((SECONDS + 20))
until [ "$(psql -X -A -t -d postgres -c "SELECT count(*) FROM pg_stat_activity WHERE datname = '$db' AND state = 'idle in transaction'")" = 1 ]; do
	[ $SECONDS -lt $deadline ] || { echo "the in-flight resolve never reached its open transaction" >&2; exit 1; }
	sleep 0.1
done

# 3. kill -9 the backend of the open transaction: the postmaster then kills
#    every server process and restarts with crash recovery from the WAL
victim=$(psql -X -A -t -d postgres -c "SELECT pid FROM pg_stat_activity WHERE datname = '$db' AND state = 'idle in transaction'")
# every server process is replaced by the crash restart: watch the checkpointer
before=$(psql -X -A -t -d postgres -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'")
kill -9 "$victim"
exec 3>&-
wait $inflight 2>/dev/null || true
rm -f "$fifo"
deadline=$((SECONDS + 60))
until [ "$(psql -X -A -t -d postgres -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'checkpointer' AND pid <> $before" 2>/dev/null)" = 1 ]; do
	[ $SECONDS -lt $deadline ] || { echo "the server did not come back after the crash" >&2; exit 1; }
	sleep 0.2
done
echo "a server process killed with -9; the server recovered from its WAL"

# 4. every acknowledged resolve is there, the in-flight one is not
[ "$(q "SELECT count(*) FROM openwop.interrupts WHERE status = 'resolved'")" = 10 ]
[ "$(q "SELECT count(*) FROM openwop.events WHERE type = 'interrupt.resolved'")" = 10 ]
[ "$(q "SELECT openwop.run_snapshot('acme/crash-run-00000011') ->> 'status'")" = waiting-approval ]
[ "$(q "SELECT count(*) FROM openwop.events WHERE run_id = 'acme/crash-run-00000011'")" = 4 ]
# sequences are gapless from 0 and every run row agrees with its log
[ "$(q "SELECT count(*) FROM openwop.runs r
         WHERE r.next_sequence <> (SELECT count(*) FROM openwop.events e WHERE e.tenant = r.tenant AND e.run_id = r.run_id)
            OR r.next_sequence - 1 <> (SELECT max(sequence) FROM openwop.events e WHERE e.tenant = r.tenant AND e.run_id = r.run_id)")" = 0 ]
echo "10 acknowledged resolves survived; the in-flight one left no trace; sequences gapless"

# 5. the interrupt that was in flight resolves once, now
[ "$(q "SELECT openwop.resolve_interrupt('acme/crash-run-00000011', 'gate', '{\"action\": \"accept\"}') ->> 'decision'")" = granted ]
[ "$(psql -X -A -t -q -d $db -c "SET openwop.tenant = 'acme'" -c "SELECT openwop.resolve_interrupt('acme/crash-run-00000011', 'gate', '{\"action\": \"accept\"}')" 2>&1 | grep -c interrupt_already_resolved)" = 1 ]

# 6. the background workers are back: the launcher, and the worker of this database
deadline=$((SECONDS + 30))
until [ "$(psql -X -A -t -d postgres -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'openwop launcher'")" = 1 ]; do
	[ $SECONDS -lt $deadline ] || { echo "the launcher did not come back" >&2; exit 1; }
	sleep 0.2
done
wait_served $db 30 >/dev/null
echo "crash recovery checks passed"
