#!/usr/bin/env bash
# The timeout pass of the database worker (shared_preload_libraries): it rejects an approval at
# its deadline without anyone calling sweep(), wakes for a deadline raised
# while it sleeps, and after a restart applies a deadline that passed while
# the server was down; for an external event it ends the run, whether it
# finds the deadline first or a late answer expired the interrupt before
# it (FlowDrop INT-18, INT-23); the rows it changes are counted in
# pg_stat_user_tables.  Needs the cluster test/run starts.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
db=postgres
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d $db -c "SET openwop.tenant = 'acme'" -c "$1" | tail -n 1; }


trap 'psql -X -q -d $db -c "DROP EXTENSION IF EXISTS openwop_interrupt" >/dev/null 2>&1 || true' EXIT

psql -X -q -v ON_ERROR_STOP=1 -d $db -c "DROP EXTENSION IF EXISTS openwop_interrupt" -c "CREATE EXTENSION openwop_interrupt"
wait_served $db >/dev/null

raise() {   # raise RUN TIMEOUT_MS
	psql -X -q -v ON_ERROR_STOP=1 -d $db >/dev/null <<SQL
SET openwop.tenant = 'acme';
SELECT openwop.create_run('worker', '{"runId": "$1"}');
SELECT openwop.start_node('$1', 'gate');
SELECT openwop.interrupt('$1', 'gate', '{"kind": "approval", "timeoutMs": $2,
  "data": {"artifactId": "a", "artifactType": "doc", "title": "T", "actions": ["accept", "reject"], "onTimeout": "approve"}}');
SQL
}

# 1. a deadline reached while the server runs; the worker was asleep and is woken at commit
start=$(date +%s.%N)
raise acme/worker-run-00000001 1000
wait_for 20 "SELECT openwop.run_snapshot('acme/worker-run-00000001') ->> 'status'" failed
end=$(date +%s.%N)
echo "rejected by the worker $(awk "BEGIN { printf \"%.2f\", $end - $start }") s after a 1 s deadline was raised"
[ "$(q "SELECT e->'payload'->>'action' || '/' || (e->'payload'->>'decision') FROM openwop.events('acme/worker-run-00000001') e WHERE e->>'type' = 'interrupt.resolved'")" = "timeout/rejected" ]
[ "$(q "SELECT count(*) FROM openwop.events('acme/worker-run-00000001') e WHERE e->>'type' = 'run.failed'")" = 1 ]

# 2. a deadline that passes while the server is down is applied after the restart
raise acme/worker-run-00000002 1500
pg_ctlcluster "$PGVERSION" regress stop
sleep 2.5
pg_ctlcluster "$PGVERSION" regress start
wait_for 30 "SELECT openwop.run_snapshot('acme/worker-run-00000002') ->> 'status'" failed
echo "a deadline that passed while the server was down was applied after the restart"

# 3. an absent deadline never expires
psql -X -q -v ON_ERROR_STOP=1 -d $db >/dev/null <<'SQL'
SET openwop.tenant = 'acme';
SELECT openwop.create_run('worker', '{"runId": "acme/worker-run-00000003"}');
SELECT openwop.start_node('acme/worker-run-00000003', 'gate');
SELECT openwop.interrupt('acme/worker-run-00000003', 'gate', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc", "title": "T", "actions": ["accept"]}}');
SQL
sleep 1
[ "$(q "SELECT openwop.run_snapshot('acme/worker-run-00000003') ->> 'status'")" = waiting-approval ]

wait_event() {   # wait_event RUN TIMEOUT_MS
	psql -X -q -v ON_ERROR_STOP=1 -d $db >/dev/null <<SQL
SET openwop.tenant = 'acme';
SELECT openwop.create_run('worker', '{"runId": "$1"}');
SELECT openwop.start_node('$1', 'wait');
SELECT openwop.interrupt('$1', 'wait', '{"kind": "external-event", "timeoutMs": $2, "data": {"eventType": "paid", "correlation": {}}}');
SQL
}
cancelled_once() {   # the run ended by its expiry, announced once
	[ "$(q "SELECT string_agg(e->>'type' || coalesce(':' || (e->'payload'->>'reason'), ''), ',' ORDER BY (e->>'sequence')::int)
	          FROM openwop.events('$1') e WHERE e->>'type' LIKE 'run.%' OR e->>'type' = 'node.cancelled'")" \
	  = "run.started,node.cancelled:run-cancelled,run.cancelled:interrupt-expired" ]
}

# 4. worker first: an external event past its deadline ends its run; a later answer finds it ended
wait_event acme/worker-run-00000004 1000
wait_for 20 "SELECT openwop.run_snapshot('acme/worker-run-00000004') ->> 'status'" cancelled
cancelled_once acme/worker-run-00000004
[ "$(psql -X -A -t -q -d $db -c "SET openwop.tenant = 'acme'" -c "SELECT openwop.resolve_interrupt('acme/worker-run-00000004', 'wait', '{}')" 2>&1 | grep -o interrupt_already_resolved)" = interrupt_already_resolved ]
echo "worker first: the run was cancelled, a later answer is interrupt_already_resolved"

# 5. late answer first: expired silently, then the worker ends the run it left open
wait_event acme/worker-run-00000005 600000
# (one transaction, so the worker cannot see the deadline pass before the answer does)
[ "$(q "UPDATE openwop.interrupts SET expires_at = now() - interval '1 second' WHERE run_id = 'acme/worker-run-00000005';
       SELECT openwop.resolve_interrupt('acme/worker-run-00000005', 'wait', '{}') ->> 'status'")" = expired ]
wait_for 20 "SELECT openwop.run_snapshot('acme/worker-run-00000005') ->> 'status'" cancelled
cancelled_once acme/worker-run-00000005
echo "late answer first: expired silently, then the worker ended the run, announced once"

# 6. worker_publishes_statistics: the rows the worker changes count in
# pg_stat_user_tables (autovacuum reads them): nobody but the worker
# deletes an open-interrupt row here
dels() { q "SELECT n_tup_del FROM pg_stat_user_tables WHERE relid = 'openwop.open_interrupts'::regclass"; }
before=$(dels)
raise acme/worker-run-00000006 300
wait_for 20 "SELECT openwop.run_snapshot('acme/worker-run-00000006') ->> 'status'" failed
wait_for 15 "SELECT n_tup_del > $before FROM pg_stat_user_tables WHERE relid = 'openwop.open_interrupts'::regclass" t
echo "worker_publishes_statistics: the open row the worker deleted is counted ($before, then $(dels))"

# 7. worker_waits_for_update: on a schema of another version (the library
# updated, ALTER EXTENSION ... UPDATE not yet run; made here by changing the
# recorded version, and an ALTER TABLE that makes every backend look again)
# the worker applies no deadline and says so in the log once; once the
# schema is the library's again it applies the deadline
log=$(server_log_file)
lines=$(wc -l <"$log")
raise acme/worker-run-00000007 1000
psql -X -q -v ON_ERROR_STOP=1 -d $db -c "ALTER SYSTEM SET openwop.sweeper_interval = 1" -c "SELECT pg_reload_conf()" \
	-c "UPDATE pg_extension SET extversion = '0.10.0' WHERE extname = 'openwop_interrupt'" \
	-c "ALTER TABLE openwop.runs SET (fillfactor = 80)" >/dev/null
sleep 3
set_back() { psql -X -q -v ON_ERROR_STOP=1 -d $db -c "UPDATE pg_extension SET extversion = '$1' WHERE extname = 'openwop_interrupt'" \
	-c "ALTER TABLE openwop.runs SET (fillfactor = 80)" >/dev/null; }
newest=$(sed -n "s/^default_version = '\(.*\)'/\1/p" openwop_interrupt.control)
[ "$(psql -X -A -t -q -d $db -c "SELECT status FROM openwop.runs WHERE run_id = 'acme/worker-run-00000007'")" = waiting-approval ] ||
	{ set_back "$newest"; echo "the worker applied a deadline on a schema of another version" >&2; exit 1; }
said=$(tail -n +"$((lines + 1))" "$log" | grep -c "has schema version 0.10.0 of openwop_interrupt, the library version $newest: no deadline is applied until ALTER EXTENSION openwop_interrupt UPDATE" || true)
set_back "$newest"
psql -X -q -d $db -c "ALTER SYSTEM RESET openwop.sweeper_interval" -c "SELECT pg_reload_conf()" >/dev/null
[ "$said" = 1 ] || { echo "the worker said it waits $said times, not once" >&2; exit 1; }
wait_for 20 "SELECT openwop.run_snapshot('acme/worker-run-00000007') ->> 'status'" failed
echo "worker_waits_for_update: no deadline applied on schema 0.10.0 (logged once); applied once the schema is the library's"
echo "timeout worker checks passed"
