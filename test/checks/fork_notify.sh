#!/usr/bin/env bash
# A fork is announced once on its tenant's channel, with fromSequence at its fork
# point: the range names what the fork appended itself (a replay fork's
# derived resolution and its consequences), never the history it copied,
# and is empty when the fork appended nothing (the engine still learns of
# it).  OpenWOP replay.md, "Fan-out".  Needs the cluster test/run starts
# (preloaded: the database's worker relays).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
db=openwop_fork_notify
out=$(mktemp -d)
trap 'dropdb --if-exists $db >/dev/null 2>&1 || true; rm -rf "$out"' EXIT
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d $db -c "SET openwop.tenant = 'acme'" -c "$1" | tail -n 1; }
payloads() { sed -n 's/^Asynchronous notification "openwop_events_[0-9a-f]*" with payload "\(.*\)" received from server process with PID [0-9]*\.$/\1/p' "$1"; }

dropdb --if-exists $db
createdb $db
make_login_approver $db
psql -X -q -v ON_ERROR_STOP=1 -d $db -c "CREATE EXTENSION openwop_interrupt"
wait_served $db >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -d $db >/dev/null <<'SQL'
SET openwop.tenant = 'acme';
SELECT openwop.create_run('notify', '{"runId": "acme/fork-notify-source01"}');
SELECT openwop.start_node('acme/fork-notify-source01', 'gate');
SELECT openwop.interrupt('acme/fork-notify-source01', 'gate', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "d", "title": "T", "actions": ["accept", "reject"]}}');
SELECT openwop.resolve_interrupt('acme/fork-notify-source01', 'gate', '{"action": "reject"}');
SQL

printf 'SET openwop.tenant = '\''acme'\'';\nSELECT openwop.listen();\nSELECT pg_sleep(3);\nSELECT 1;\n' | psql -X -q -A -t -d $db >"$out/listen.txt" 2>&1 &
sleep 0.5
derived=$(q "SELECT openwop.fork_run('acme/fork-notify-source01', '{\"mode\": \"replay\", \"fromSeq\": 4}') ->> 'runId'")
copied=$(q "SELECT openwop.fork_run('acme/fork-notify-source01', '{\"mode\": \"replay\", \"fromSeq\": 2}') ->> 'runId'")
branch=$(q "SELECT openwop.fork_run('acme/fork-notify-source01', '{\"mode\": \"branch\", \"fromSeq\": 4}') ->> 'runId'")
wait
got=$(payloads "$out/listen.txt")
want="{\"runId\": \"$derived\", \"fromSequence\": 4, \"sequence\": 6}
{\"runId\": \"$copied\", \"fromSequence\": 2, \"sequence\": 1}
{\"runId\": \"$branch\", \"fromSequence\": 4, \"sequence\": 3}"
if [ "$got" != "$want" ]; then
	echo "fork notifications: want" >&2; echo "$want" >&2; echo "got" >&2; cat "$out/listen.txt" >&2
	exit 1
fi
echo "each fork was announced once, from its fork point: the derived events, never the copied history"
