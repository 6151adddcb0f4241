#!/usr/bin/env bash
# A hot standby, streaming from a throwaway primary of its own (unix sockets
# in a private directory, so no port is shared with anything):
# - the readers answer there: events(), run_snapshot(), inspect_interrupt(),
#   verify_interrupt_token(), the inbox, the FlowDrop entry (and
#   openwop_api."flowdropInterrupts", the inbox's entries), the monitoring
#   views, and mint_interrupt_token() for a lifetime its key signed before
#   (a longer one must be recorded on the key: refused like a write);
# - every function that changes the store is refused with 25006 and a hint
#   that names the primary, before it reads anything;
# - no openwop worker runs there;
# - promoted, it starts the launcher, serves the database within seconds,
#   applies once a deadline that passed while it was a standby (and no
#   worker served the primary's database), and takes writes.
# Needs root (the clusters run as postgres) and PostgreSQL 15's binaries.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
throwaway_begin
work=$THROWAWAY
trap throwaway_end EXIT
opts="-k $work -c listen_addresses='' -c shared_preload_libraries=openwop_interrupt -c fsync=off"
opts="$opts -c openwop.key_encryption_key_file=$(new_kek_file "$work")"
pq() { psql -X -A -t -q -v ON_ERROR_STOP=1 -h "$work" -p 5801 -U postgres -d postgres -c "SET openwop.tenant = 'acme'" "$@" | tail -n 1; }
sq() { psql -X -A -t -q -v ON_ERROR_STOP=1 -h "$work" -p 5802 -U postgres -d postgres -c "SET openwop.tenant = 'acme'" "$@" | tail -n 1; }

# the primary; no worker serves its database, so the deadline below passes unapplied
as_pg "$PGBIN/initdb -D $work/p -A trust --encoding=UTF8 --locale=C.UTF-8" >/dev/null
as_pg "$PGBIN/pg_ctl -D $work/p -l $work/p.log -o \"-p 5801 $opts -c openwop.databases=ow_no_such_database\" -w start" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -h "$work" -p 5801 -U postgres -d postgres >/dev/null <<'SQL'
CREATE EXTENSION openwop_interrupt;
SELECT openwop.add_signing_key('standby-key');
CREATE ROLE openwop_approver;
GRANT openwop_approver TO postgres;
SET openwop.tenant = 'acme';
SELECT openwop.create_run('standby', '{"runId": "acme/standby-run-000001"}');
SELECT openwop.start_node('acme/standby-run-000001', 'gate');
SELECT openwop.interrupt('acme/standby-run-000001', 'gate', '{"kind": "approval",
  "data": {"artifactId": "a", "artifactType": "doc", "title": "T", "actions": ["accept", "reject"]}}');
SELECT openwop.create_run('standby', '{"runId": "acme/standby-run-000002"}');
SELECT openwop.start_node('acme/standby-run-000002', 'gate');
SELECT openwop.interrupt('acme/standby-run-000002', 'gate', '{"kind": "approval", "timeoutMs": 2000,
  "data": {"artifactId": "b", "artifactType": "doc", "title": "T", "actions": ["accept"], "onTimeout": "reject"}}');
SQL
token=$(pq -c "SELECT openwop.mint_interrupt_token(interrupt_id) FROM openwop.interrupts WHERE run_id = 'acme/standby-run-000001'")
gate=$(pq -c "SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/standby-run-000001'")

# the standby
as_pg "$PGBIN/pg_basebackup -h $work -p 5801 -U postgres -D $work/s -R -X stream" >/dev/null
as_pg "$PGBIN/pg_ctl -D $work/s -l $work/s.log -o \"-p 5802 $opts\" -w start" >/dev/null
until_true 30 "the standby replays the gates" sq -c "SELECT count(*) = 2 FROM openwop.interrupts"
[ "$(sq -c "SELECT pg_is_in_recovery()")" = t ]

# the readers
[ "$(sq -c "SELECT count(*) FROM openwop.events('acme/standby-run-000001')")" = 4 ]
[ "$(sq -c "SELECT openwop.run_snapshot('acme/standby-run-000001') ->> 'status'")" = waiting-approval ]
[ "$(sq -c "SELECT openwop.inspect_interrupt('$token') ->> 'kind'")" = approval ]
[ "$(sq -c "SELECT openwop.verify_interrupt_token('$token') ->> 'intent'")" = resolve ]
[ "$(sq -c "SELECT openwop.verify_interrupt_token(openwop.mint_interrupt_token('$gate', 'inspect', interval '10 minutes')) ->> 'intent'")" = inspect ]
[ "$(sq -c "SELECT count(*) FROM openwop.pending_interrupts WHERE interrupt_id = '$gate'")" = 1 ]
[ "$(sq -c "SELECT openwop.flowdrop_interrupt('$gate')::jsonb ->> 'status'")" = pending ]
[ "$(sq -c "SELECT openwop_api.\"flowdropInterrupts\"(NULL, 5)::jsonb -> 0 ->> 'id' = openwop.flowdrop_interrupt('$gate')::jsonb ->> 'id'")" = t ]
[ "$(sq -c "SELECT sum(pending) FROM openwop.pending_summary")" = 2 ]
echo "on the standby: events, run_snapshot, inspect and verify (and mint), the inbox, the FlowDrop entry (and its pages over HTTP) and pending_summary answer"

# the writers: 25006, and a hint to use the primary
refused() {   # refused SQL: run on the standby, must fail with 25006 and name the primary
	local out
	if out=$(psql -X -A -t -q -v ON_ERROR_STOP=1 -v VERBOSITY=verbose -h "$work" -p 5802 -U postgres -d postgres \
		-c "SET openwop.tenant = 'acme'" -c "$1" 2>&1); then
		echo "the standby ran: $1" >&2; return 1
	fi
	grep -q '^ERROR:  25006: .* cannot run on a standby' <<<"$out" && grep -q '^HINT:  Call .* on the primary' <<<"$out" ||
		{ echo "not the standby refusal for: $1" >&2; echo "$out" >&2; return 1; }
}
n=0
while IFS= read -r call; do
	[ -n "$call" ] || continue
	refused "SELECT $call"
	n=$((n + 1))
done <<SQL
openwop.create_run('standby', '{"runId": "acme/standby-run-000003"}')
openwop.fork_run('acme/standby-run-000001', '{"mode": "replay"}')
openwop.start_node('acme/standby-run-000001', 'other')
openwop.complete_node('acme/standby-run-000001', 'gate')
openwop.fail_node('acme/standby-run-000001', 'gate', '{"code": "x", "message": "y"}')
openwop.complete_run('acme/standby-run-000001')
openwop.fail_run('acme/standby-run-000001', '{"code": "x", "message": "y"}')
openwop.cancel_run('acme/standby-run-000001')
openwop.interrupt('acme/standby-run-000001', 'gate', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc", "title": "T", "actions": ["accept", "reject"]}}')
openwop.resolve_interrupt('acme/standby-run-000001', 'gate', '{"action": "accept"}')
openwop.resolve_interrupt_by_token('$token', '{"action": "accept"}')
openwop_api."resolveInterruptByToken"('{"token": "$token", "resumeValue": {"action": "accept"}}')
openwop_api."resolveInterruptByRun"('{"runId": "acme/standby-run-000001", "nodeId": "gate", "resumeValue": {"action": "accept"}}')
openwop.record_agent_decision('acme/standby-run-000001', 'gate', 'agent', 0.9)
openwop.connector_auth_expired('acme/standby-run-000001', 'gate', 'synthetic', '{"ref": "c"}')
openwop.add_group_member('g', 'alice')
openwop.remove_group_member('g', 'alice')
openwop.add_signing_key('standby-key-2')
openwop.retire_signing_key('standby-key')
openwop.sweep()
openwop.mint_interrupt_token('$gate', 'resolve', interval '2 hours')
SQL
[ "$(sq -c "SELECT count(*) FROM openwop.events('acme/standby-run-000001')")" = 4 ]
echo "on the standby: the $n writing calls (a mint that must record a longer lifetime among them) refused with 25006 and a hint naming the primary"

# no worker on the standby
sleep 1
[ "$(sq -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type IN ('openwop launcher', 'openwop worker')")" = 0 ]
[ "$(sq -c "SELECT count(*) FROM openwop.workers WHERE pid IS NOT NULL")" = 0 ]
[ "$(sq -c "SELECT serving || ' ' || reason FROM openwop.workers")" = "false a standby: the workers start when it is promoted" ]
echo "no openwop worker runs on the standby, and openwop.workers says why"

# promoted: the launcher, a worker within seconds, the deadline applied once, writes
until_true 10 "the deadline passes while a standby" sq -c "SELECT bool_and(expires_at < now()) FROM openwop.interrupts WHERE run_id = 'acme/standby-run-000002'"
as_pg "$PGBIN/pg_ctl -D $work/p -m fast stop" >/dev/null
as_pg "$PGBIN/pg_ctl -D $work/s -w promote" >/dev/null
until_true 30 "the promoted server serves its database" sq -c "SELECT count(*) = 1 FROM openwop.workers WHERE database = current_database() AND serving"
until_true 30 "the deadline passed during the standby's time is applied" sq -c "SELECT openwop.run_snapshot('acme/standby-run-000002') ->> 'status' = 'failed'"
[ "$(sq -c "SELECT count(*) FROM openwop.events('acme/standby-run-000002') e WHERE e ->> 'type' = 'interrupt.resolved'")" = 1 ]
[ "$(sq -c "SELECT openwop.resolve_interrupt('acme/standby-run-000001', 'gate', '{\"action\": \"accept\"}') ->> 'decision'")" = granted ]
echo "promoted: the worker serves, the passed deadline was applied once, a resolve is granted"
if grep -E 'openwop.*(ERROR|FATAL|WARNING)|(ERROR|FATAL|WARNING).*openwop' "$work/s.log" | grep -v 'cannot run on a standby' | grep -v 'STATEMENT' >&2; then
	echo "the standby logged openwop errors (above)" >&2
	exit 1
fi
echo "standby checks passed"
