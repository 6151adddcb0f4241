#!/usr/bin/env bash
# Notifications through the relay (shared_preload_libraries: each served
# database's worker): a committed change is announced once per transaction
# and run, by the worker of its database, never by the committing session;
# a rollback or a rolled-back savepoint announces nothing of its own; in a
# database the workers do not serve (openwop.databases) the session
# notifies itself; a relay that is killed comes back and keeps relaying.
# Needs the cluster test/run starts (preloaded).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
db=postgres
other=openwop_notify_other
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d "${2:-$db}" -c "$1" | tail -n 1; }
out=$(mktemp -d)
trap 'psql -X -q -d $db -c "DROP EXTENSION IF EXISTS openwop_interrupt" >/dev/null 2>&1 || true;
      psql -X -q -d $db -c "ALTER SYSTEM RESET openwop.databases" -c "SELECT pg_reload_conf()" >/dev/null 2>&1 || true;
      psql -X -q -d $db -c "DROP DATABASE IF EXISTS $other" >/dev/null 2>&1 || true; rm -rf "$out"' EXIT

# listen DB SECONDS FILE: a session that listens, then prints what it received
listen() {
	printf 'SET openwop.tenant = '\''acme'\'';\nSELECT openwop.listen();\nSELECT pg_sleep(%s);\nSELECT 1;\n' "$2" |
		psql -X -q -A -t -d "$1" > "$3" 2>&1 &
}
payloads() { sed -n 's/^Asynchronous notification "openwop_events_[0-9a-f]*" with payload "\(.*\)" received from server process with PID \([0-9]*\)\.$/\2 \1/p' "$1"; }

psql -X -q -v ON_ERROR_STOP=1 -d $db -c "DROP EXTENSION IF EXISTS openwop_interrupt" -c "CREATE EXTENSION openwop_interrupt"
relay=$(wait_served $db)

listen $db 2 "$out/relay.txt"
sleep 0.5
psql -X -q -v ON_ERROR_STOP=1 -d $db >/dev/null <<'SQL'
SET openwop.tenant = 'acme';
-- one transaction, one run, two events: one notification 0..1
BEGIN;
SELECT openwop.create_run('relay', '{"runId": "acme/relay-run-000000001"}');
SELECT openwop.start_node('acme/relay-run-000000001', 'a');
COMMIT;
-- rolled back: nothing
BEGIN;
SELECT openwop.create_run('relay', '{"runId": "acme/relay-run-000000002"}');
ROLLBACK;
-- two runs in one transaction, one savepoint rolled back: one notification per run, its own range only
BEGIN;
SELECT openwop.create_run('relay', '{"runId": "acme/relay-run-000000003"}');
SAVEPOINT s;
SELECT openwop.start_node('acme/relay-run-000000003', 'a');
ROLLBACK TO SAVEPOINT s;
SELECT openwop.start_node('acme/relay-run-000000001', 'b');
COMMIT;
SQL
wait
got=$(payloads "$out/relay.txt")
want="$relay {\"runId\": \"acme/relay-run-000000001\", \"fromSequence\": 0, \"sequence\": 1}
$relay {\"runId\": \"acme/relay-run-000000003\", \"fromSequence\": 0, \"sequence\": 0}
$relay {\"runId\": \"acme/relay-run-000000001\", \"fromSequence\": 2, \"sequence\": 2}"
if [ "$got" != "$want" ]; then
	echo "relay notifications: want" >&2; echo "$want" >&2; echo "got" >&2; cat "$out/relay.txt" >&2
	exit 1
fi
echo "committed changes were announced once per transaction and run, by the relay (pid $relay)"

# a database the workers do not serve: the committing session notifies itself
psql -X -q -d $db -c "CREATE DATABASE $other" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -d $db -c "ALTER SYSTEM SET openwop.databases = '$db'" -c "SELECT pg_reload_conf()" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -d $other -c "CREATE EXTENSION openwop_interrupt" >/dev/null
sleep 1
[ "$(q "SELECT count(*) FROM openwop.workers WHERE database = '$other'")" = 0 ]
listen $other 1.5 "$out/other.txt"
sleep 0.5
writer=$(psql -X -A -t -q -v ON_ERROR_STOP=1 -d $other -c "SET openwop.tenant = 'acme'" \
	-c "SELECT pg_backend_pid() FROM (SELECT openwop.create_run('relay', '{\"runId\": \"acme/relay-run-000000004\"}')) x" | tail -n 1)
wait
got=$(payloads "$out/other.txt")
want="$writer {\"runId\": \"acme/relay-run-000000004\", \"fromSequence\": 0, \"sequence\": 0}"
if [ "$got" != "$want" ]; then
	echo "notifications in another database: want [$want], got:" >&2; cat "$out/other.txt" >&2
	exit 1
fi
echo "in a database the workers do not serve the committing session notified itself"
psql -X -q -v ON_ERROR_STOP=1 -d $db -c "ALTER SYSTEM RESET openwop.databases" -c "SELECT pg_reload_conf()" >/dev/null
wait_served $other >/dev/null

# the relay is killed: it comes back and relays again
q "SELECT pg_terminate_backend($relay)" >/dev/null
sleep 0.3
relay2=$(wait_served $db)
[ "$relay2" != "$relay" ]
listen $db 1.5 "$out/again.txt"
sleep 0.5
psql -X -q -v ON_ERROR_STOP=1 -d $db -c "SET openwop.tenant = 'acme'" \
	-c "SELECT openwop.start_node('acme/relay-run-000000001', 'c')" >/dev/null
wait
got=$(payloads "$out/again.txt")
want="$relay2 {\"runId\": \"acme/relay-run-000000001\", \"fromSequence\": 3, \"sequence\": 3}"
if [ "$got" != "$want" ]; then
	echo "after a relay restart: want [$want], got:" >&2; cat "$out/again.txt" >&2
	exit 1
fi
echo "a restarted relay relays again"

# a stalled relay: what it holds waits for it, and after a second the
# committing sessions notify themselves rather than queue behind it
listen $db 4 "$out/stall.txt"
sleep 0.5
kill -STOP "$relay2"
trap 'kill -CONT '"$relay2"' 2>/dev/null || true; psql -X -q -d $db -c "DROP EXTENSION IF EXISTS openwop_interrupt" >/dev/null 2>&1 || true;
      psql -X -q -d $db -c "DROP DATABASE IF EXISTS $other" >/dev/null 2>&1 || true; rm -rf "$out"' EXIT
psql -X -q -v ON_ERROR_STOP=1 -d $db -c "SET openwop.tenant = 'acme'" \
	-c "SELECT openwop.start_node('acme/relay-run-000000001', 'd')" >/dev/null
sleep 1.5
writer=$(psql -X -A -t -q -v ON_ERROR_STOP=1 -d $db -c "SET openwop.tenant = 'acme'" \
	-c "SELECT pg_backend_pid() FROM (SELECT openwop.start_node('acme/relay-run-000000001', 'e')) x" | tail -n 1)
kill -CONT "$relay2"
wait
got=$(payloads "$out/stall.txt" | sort)
want=$(printf '%s\n%s\n' "$relay2 {\"runId\": \"acme/relay-run-000000001\", \"fromSequence\": 4, \"sequence\": 4}" \
	"$writer {\"runId\": \"acme/relay-run-000000001\", \"fromSequence\": 5, \"sequence\": 5}" | sort)
if [ "$got" != "$want" ]; then
	echo "with a stalled relay: want" >&2; echo "$want" >&2; echo "got" >&2; cat "$out/stall.txt" >&2
	exit 1
fi
echo "a stalled relay delivers what it holds when it resumes; meanwhile sessions notify themselves"
echo "notify relay checks passed"
