#!/usr/bin/env bash
# reminder_fires_once_across_restart_and_kill: the database worker fires each
# step of a gate's reminder ladder (and its escalation) exactly once, though
# it is stopped while steps are due.  With the outbox on, 400 gates pin a
# policy of an escalation at 1 s and reminders at 5, 12 and 15 s; then
#  a. while the first reminder is being fired, the worker is terminated
#     (pg_terminate_backend: the launcher starts another), three of the gates'
#     runs held locked by another session so that steps are surely still due;
#  b. while the second is being fired, the worker is killed with SIGKILL (the
#     postmaster then kills every server process and recovers from the WAL),
#     three runs again held locked.
# Once every step has fired: each step row has fired_at, and its
# notifications were written in the transaction that set it (same xmin), as
# many as it says (notified); each (gate, step, recipient) has exactly one
# row and no recipient is missing.  openwop.stats counts the reminders,
# escalations and notifications exactly while the server lives (a), and
# from the crash restart on, which starts shared memory and so the counters
# again (b).  Needs the cluster test/run starts.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
db=openwop_reminders
N=400
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d $db -c "SET openwop.tenant = 'acme'" -c "$1" | tail -n 1; }
qp() { psql -X -A -t -q -d postgres -c "$1" 2>/dev/null || true; }
blocker=""
cleanup() {
	[ -n "$blocker" ] && kill "$blocker" 2>/dev/null || true
	psql -X -q -d postgres -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'openwop_blocker'" \
		-c "ALTER SYSTEM RESET openwop.notification_outbox" -c "ALTER SYSTEM RESET openwop.sweeper_interval" \
		-c "SELECT pg_reload_conf()" >/dev/null 2>&1 || true
	psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
}
trap cleanup EXIT

psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null 2>&1
# the outbox on; the longest sleep the default, so every step is fired at
# the worker's own wake-up for it, not by a pass that happened to come
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "ALTER SYSTEM SET openwop.notification_outbox = on" \
	-c "ALTER SYSTEM SET openwop.sweeper_interval = 60" -c "SELECT pg_reload_conf()" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -d $db -c "CREATE EXTENSION openwop_interrupt" -c "SELECT openwop.stats_reset()" >/dev/null
wait_for 10 "SELECT current_setting('openwop.sweeper_interval') || ' ' || current_setting('openwop.notification_outbox')" "1min on"
wait_served $db 30 >/dev/null

# the ladder: the group execs (erin, and ann, who is an approver anyway) at 1 s, reminders at 5, 12 and 15 s
psql -X -q -v ON_ERROR_STOP=1 -d $db -c "BEGIN" -c "GRANT openwop_policy_admin TO CURRENT_USER" -c "SET LOCAL openwop.tenant = 'acme'" \
	-c "SELECT openwop.add_group_member('execs', 'erin'), openwop.add_group_member('execs', 'ann')" \
	-c "SELECT openwop.set_approval_policy('ladder', '{\"appliesTo\": {\"workflowId\": \"remind\", \"nodeId\": \"gate\"},
	      \"reminders\": [{\"afterMs\": 5000}, {\"afterMs\": 12000}, {\"afterMs\": 15000}],
	      \"escalation\": {\"afterMs\": 1000, \"groupRef\": \"execs\"}}')" \
	-c "REVOKE openwop_policy_admin FROM CURRENT_USER" -c "COMMIT" >/dev/null

# N gates in one transaction: their steps fall due together (rita requested the runs and hears nothing)
psql -X -q -v ON_ERROR_STOP=1 -d $db >/dev/null <<SQL
SET openwop.tenant = 'acme';
DO \$\$
DECLARE run text;
BEGIN
  FOR i IN 1..$N LOOP
    run := format('acme/remind-run-%s', lpad(i::text, 8, '0'));
    PERFORM openwop.create_run('remind', jsonb_build_object('runId', run), 'rita');
    PERFORM openwop.start_node(run, 'gate');
    PERFORM openwop.interrupt(run, 'gate', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc",
      "title": "T", "actions": ["accept", "reject"], "approversList": ["ann", "ben"]}}');
  END LOOP;
END \$\$;
SQL
[ "$(q "SELECT count(*) || '/' || count(DISTINCT interrupt_id) || '/' || string_agg(DISTINCT kind || step, ',') FROM openwop.gate_steps")" \
	= "$((4 * N))/$N/escalation1,reminder2,reminder3,reminder4" ] || { echo "the gates did not plan the ladder" >&2; exit 1; }

fired() { q "SELECT count(*) FROM openwop.gate_steps WHERE step = $1 AND fired_at IS NOT NULL"; }
worker_pid() { psql -X -A -t -q -d $db -c "SELECT pid FROM openwop.workers WHERE database = '$db' AND serving" 2>/dev/null || true; }
# seconds until step $1 falls due (negative once it has)
until_due() { q "SELECT extract(epoch FROM min(due_at) - clock_timestamp()) FROM openwop.gate_steps WHERE step = $1"; }

# hold the runs of three gates locked in another session, in the background
block() {
	PGAPPNAME=openwop_blocker psql -X -q -d $db -c "BEGIN" \
		-c "SELECT count(*) FROM (SELECT 1 FROM openwop.runs WHERE run_id IN ('acme/remind-run-00000007', 'acme/remind-run-00000200', 'acme/remind-run-00000399') FOR UPDATE) l" \
		-c "SELECT pg_sleep(300)" -c "COMMIT" >/dev/null 2>&1 &
	blocker=$!
	wait_for 20 "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'openwop_blocker' AND query LIKE '%pg_sleep%'" 1
	[ "$(q "SELECT count(*) FROM openwop.runs r WHERE r.tenant = 'acme' AND NOT EXISTS (SELECT FROM openwop.runs l WHERE l.tenant = r.tenant AND l.run_id = r.run_id FOR UPDATE SKIP LOCKED)")" = 3 ] ||
		{ echo "the blocker does not hold three runs" >&2; return 1; }
}
# wait until the worker has begun to fire step $1, at most until it has fired all it can
catch_firing() {
	local deadline=$((SECONDS + 30)) n
	while :; do
		n=$(fired "$1")
		[ "$n" -gt 0 ] && { echo "$n"; return 0; }
		[ $SECONDS -lt $deadline ] || { echo "step $1 was not fired within 30 s of falling due" >&2; return 1; }
		sleep 0.01
	done
}

# the escalation, fired as the worker wakes for it
wait_for 30 "SELECT count(*) FROM openwop.gate_steps WHERE step = 1 AND fired_at IS NOT NULL" $N

# a. the first reminder: terminate the worker while it fires
block
[ "$(awk "BEGIN { print ($(until_due 2) > 0.3) }")" = 1 ] || { echo "too slow: the first reminder fell due before the runs were held" >&2; exit 1; }
old=$(worker_pid)
[ -n "$old" ] || { echo "no worker serves $db" >&2; exit 1; }
catch_firing 2 >/dev/null
stopped_at=$(q "SELECT clock_timestamp() FROM pg_terminate_backend($old)")
deadline=$((SECONDS + 30))
until [ "$(qp "SELECT count(*) FROM pg_stat_activity WHERE pid = $old")" = 0 ]; do
	[ $SECONDS -lt $deadline ] || { echo "the terminated worker did not exit" >&2; exit 1; }
	sleep 0.1
done
wait_served $db 30 >/dev/null
echo "a. the worker (pid $old) terminated with $(q "SELECT count(*) FROM openwop.gate_steps WHERE step = 2 AND fired_at < '$stopped_at'") of $N first reminders fired (3 of the runs held locked)"
new=$(worker_pid)
[ -n "$new" ] && [ "$new" != "$old" ] || { echo "no new worker after the termination ($old, then $new)" >&2; exit 1; }
[ "$(fired 2)" -le $((N - 3)) ] || { echo "a step of a locked run was fired" >&2; exit 1; }
qp "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'openwop_blocker'" >/dev/null
wait "$blocker" 2>/dev/null || true
blocker=""
wait_for 30 "SELECT count(*) FROM openwop.gate_steps WHERE step = 2 AND fired_at IS NOT NULL" $N
echo "   the new worker (pid $new) fired the rest: $N of $N"

# the counters are in shared memory, which a terminated worker leaves as it is: exact
counts() { q "SELECT string_agg(event || '=' || count, ',' ORDER BY event) FROM openwop.stats
               WHERE database = current_database() AND event IN ('reminded', 'escalated', 'notified')"; }
since() { q "SELECT max(since) FROM openwop.stats WHERE database = current_database()"; }
expected=$(q "SELECT 'escalated=' || (SELECT count(*) FROM openwop.gate_steps WHERE kind = 'escalation' AND fired_at IS NOT NULL)
              || ',notified=' || (SELECT count(*) FROM openwop.notifications)
              || ',reminded=' || (SELECT count(*) FROM openwop.gate_steps WHERE kind = 'reminder' AND fired_at IS NOT NULL)")
got=$(counts)
[ "$got" = "$expected" ] || { echo "after the termination openwop.stats says $got, the tables $expected" >&2; exit 1; }
echo "   openwop.stats: $got, as the tables say"

# b. the second reminder: kill -9 the worker while it fires; the server restarts every process
block
[ "$(awk "BEGIN { print ($(until_due 3) > 0.3) }")" = 1 ] || { echo "too slow: the second reminder fell due before the runs were held" >&2; exit 1; }
victim=$(worker_pid)
[ -n "$victim" ] || { echo "no worker serves $db" >&2; exit 1; }
checkpointer=$(qp "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'")
killed_at=$(q "SELECT clock_timestamp()")
catch_firing 3 >/dev/null
kill -9 "$victim"
wait "$blocker" 2>/dev/null || true
blocker=""
deadline=$((SECONDS + 60))
until [ "$(qp "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'checkpointer' AND pid <> $checkpointer")" = 1 ]; do
	[ $SECONDS -lt $deadline ] || { echo "the server did not come back after the crash" >&2; exit 1; }
	sleep 0.2
done
restarted_at=$(qp "SELECT backend_start FROM pg_stat_activity WHERE backend_type = 'checkpointer'")
wait_served $db 30 >/dev/null
echo "b. the worker (pid $victim) killed with SIGKILL with $(q "SELECT count(*) FROM openwop.gate_steps WHERE step = 3 AND fired_at < '$restarted_at'") of $N second reminders fired (3 of the runs held locked)"
echo "   the server restarted at $restarted_at; a worker serves $db again (pid $(worker_pid))"
for s in 3 4; do
	wait_for 60 "SELECT count(*) FROM openwop.gate_steps WHERE step = $s AND fired_at IS NOT NULL" $N
done
echo "   the second and third reminders fired for all $N gates"

# every step fired once: fired_at set, its notifications written in its own
# transaction and as many as it says; each (gate, step, recipient) once
[ "$(q "SELECT count(*) FROM openwop.gate_steps WHERE fired_at IS NULL OR fired_at < due_at")" = 0 ] ||
	{ echo "a step is unfired, or fired before it fell due" >&2; exit 1; }
bad=$(q "SELECT count(*) FROM openwop.gate_steps s
          WHERE s.notified IS DISTINCT FROM (SELECT count(*) FROM openwop.notifications n
                                              WHERE n.tenant = s.tenant AND n.run_id = s.run_id
                                                AND n.kind = s.kind AND (n.detail ->> 'step')::int = s.step)
             OR EXISTS (SELECT FROM openwop.notifications n
                         WHERE n.tenant = s.tenant AND n.run_id = s.run_id AND (n.detail ->> 'step')::int = s.step
                           AND n.xmin::text <> s.xmin::text)")
[ "$bad" = 0 ] || { echo "$bad steps' notifications are not those of the transaction that fired them" >&2; exit 1; }
dups=$(q "SELECT count(*) FROM (SELECT 1 FROM openwop.notifications
                                 GROUP BY run_id, kind, detail ->> 'step', recipient HAVING count(*) > 1) d")
[ "$dups" = 0 ] || { echo "$dups (gate, step, recipient) have more than one notification" >&2; exit 1; }
# whom each step told: the escalation its group, a reminder the approvers and the group (whose instant passed)
shapes=$(q "SELECT string_agg(shape || ' x' || n, '; ' ORDER BY shape) FROM (
              SELECT shape, count(*) AS n FROM (
                SELECT n.run_id, n.kind || coalesce(n.detail ->> 'step', '') || ':' || string_agg(n.recipient, ',' ORDER BY n.recipient) AS shape
                  FROM openwop.notifications n GROUP BY n.run_id, n.kind, n.detail ->> 'step') g
               GROUP BY shape) s")
want="escalation1:ann,erin x$N; raised:ann,ben x$N; reminder2:ann,ben,erin x$N; reminder3:ann,ben,erin x$N; reminder4:ann,ben,erin x$N"
[ "$shapes" = "$want" ] || { echo "the notifications per gate and step are [$shapes], not [$want]" >&2; exit 1; }
echo "every step fired once: $((4 * N)) steps, $(q "SELECT count(*) FROM openwop.notifications") notifications, each (gate, step, recipient) once"

# the counters after the crash: the restart made shared memory anew, so they
# count from then on (since says when), exactly again; were they kept, they
# would count everything
since=$(since)
got=$(counts)
if [ "$(q "SELECT '$since'::timestamptz > '$killed_at'::timestamptz")" = t ]; then
	expected=$(q "SELECT 'escalated=' || (SELECT count(*) FROM openwop.gate_steps WHERE kind = 'escalation' AND fired_at > '$restarted_at')
	              || ',notified=' || (SELECT count(*) FROM openwop.notifications WHERE created_at > '$restarted_at')
	              || ',reminded=' || (SELECT count(*) FROM openwop.gate_steps WHERE kind = 'reminder' AND fired_at > '$restarted_at')")
	what="counted anew from $since, after the crash"
else
	expected=$(q "SELECT 'escalated=' || (SELECT count(*) FROM openwop.gate_steps WHERE kind = 'escalation')
	              || ',notified=' || (SELECT count(*) FROM openwop.notifications)
	              || ',reminded=' || (SELECT count(*) FROM openwop.gate_steps WHERE kind = 'reminder')")
	what="kept across the crash"
fi
[ "$got" = "$expected" ] || { echo "after the crash openwop.stats says $got ($what), the tables $expected" >&2; exit 1; }
echo "openwop.stats after the crash: $got ($what), as the tables say"
echo "reminder worker checks passed"
