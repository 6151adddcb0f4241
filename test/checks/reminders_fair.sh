#!/usr/bin/env bash
# reminder_not_delayed_by_another_tenant and
# timeout_not_delayed_by_another_tenant: tenant "aahog" (first in tenant
# order) has 10,000 overdue approval gates, half with their reminder due,
# half with their deadline passed, raised while no worker served the
# database; once the worker serves it again and is busy with them, tenant
# acme's one gate has its reminder fall due, and another its deadline: the
# worker fires the one and applies the other within one
# openwop.sweeper_interval (set here to 2 s; the hog's backlog keeps the
# worker busy for longer than that), with most of the hog's steps and
# deadlines still waiting, for the worker shares each pass out between
# tenants.  Then the hog's 10,000 are settled too: every deadline applied,
# every reminder fired.  Prints the measured delays.  Needs the cluster
# test/run starts.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
db=openwop_fair
HOG=10000
INTERVAL=2
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d $db -c "SET openwop.tenant = '${T:-acme}'" -c "$1" | tail -n 1; }
settings() { psql -X -q -v ON_ERROR_STOP=1 -d postgres "$@" -c "SELECT pg_reload_conf()" >/dev/null; }
cleanup() {
	settings -c "ALTER SYSTEM RESET openwop.databases" -c "ALTER SYSTEM RESET openwop.notification_outbox" \
		-c "ALTER SYSTEM RESET openwop.sweeper_interval" 2>/dev/null || true
	psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
}
trap cleanup EXIT

psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null 2>&1
psql -X -q -v ON_ERROR_STOP=1 -d $db -c "CREATE EXTENSION openwop_interrupt" >/dev/null
settings -c "ALTER SYSTEM SET openwop.notification_outbox = on" -c "ALTER SYSTEM SET openwop.sweeper_interval = $INTERVAL"
wait_for 10 "SELECT current_setting('openwop.sweeper_interval') || ' ' || current_setting('openwop.notification_outbox')" "${INTERVAL}s on"
wait_served $db 30 >/dev/null

# the policies: half the hog's gates remind 1 ms after the raise, half
# expire then; acme's reminds 300 ms after, and its other gate expires
# 300 ms after
policy() {   # policy TENANT NAME DOCUMENT
	psql -X -q -v ON_ERROR_STOP=1 -d $db -c "BEGIN" -c "GRANT openwop_policy_admin TO CURRENT_USER" -c "SET LOCAL openwop.tenant = '$1'" \
		-c "SELECT openwop.set_approval_policy('$2', '$3')" -c "REVOKE openwop_policy_admin FROM CURRENT_USER" -c "COMMIT" >/dev/null
}
policy aahog nag '{"appliesTo": {"workflowId": "fair", "nodeId": "gate"}, "reminders": [{"afterMs": 1}]}'
policy aahog expire '{"appliesTo": {"workflowId": "fair-timeout", "nodeId": "gate"}, "maxTimeoutMs": 1}'
policy acme nag '{"appliesTo": {"workflowId": "fair", "nodeId": "gate"}, "reminders": [{"afterMs": 300}]}'
policy acme expire '{"appliesTo": {"workflowId": "fair-timeout", "nodeId": "gate"}, "maxTimeoutMs": 300}'

# no worker serves the database while the hog's gates are raised, 2,000 a transaction
settings -c "ALTER SYSTEM SET openwop.databases = 'postgres'"
wait_for 30 "SELECT count(*) FROM openwop.workers WHERE database = '$db' AND serving" 0
start=$SECONDS
for b in $(seq 0 $((HOG / 2000 - 1))); do
	psql -X -q -v ON_ERROR_STOP=1 -d $db >/dev/null <<SQL
SET openwop.tenant = 'aahog';
DO \$\$
DECLARE run text;
BEGIN
  FOR i IN $((b * 2000 + 1))..$((b * 2000 + 2000)) LOOP
    run := format('aahog/fair-run-%s', lpad(i::text, 8, '0'));
    PERFORM openwop.create_run(CASE WHEN i % 2 = 0 THEN 'fair' ELSE 'fair-timeout' END, jsonb_build_object('runId', run));
    PERFORM openwop.start_node(run, 'gate');
    PERFORM openwop.interrupt(run, 'gate', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc",
      "title": "T", "actions": ["accept", "reject"], "approversList": ["hal"]}}');
  END LOOP;
END \$\$;
SQL
done
sleep 0.1
T=aahog wait_for 10 "SELECT (SELECT count(*) FROM openwop.gate_steps WHERE tenant = 'aahog' AND due_at < now() AND fired_at IS NULL)
                           + (SELECT count(*) FROM openwop.interrupts WHERE tenant = 'aahog' AND expires_at < now() AND status = 'pending')" $HOG
echo "$HOG overdue gates of tenant aahog raised in $((SECONDS - start)) s, half with their reminder due, half with their deadline passed"

# the worker serves the database again and starts on the hog's backlog ...
settings -c "ALTER SYSTEM RESET openwop.databases"
wait_for 30 "SELECT count(*) > 0 FROM openwop.gate_steps WHERE tenant = 'aahog' AND fired_at IS NOT NULL" t
# ... when acme raises its gate, whose reminder falls due a moment later
psql -X -q -v ON_ERROR_STOP=1 -d $db >/dev/null <<'SQL'
SET openwop.tenant = 'acme';
SELECT openwop.create_run('fair', '{"runId": "acme/fair-run-00000001"}');
SELECT openwop.start_node('acme/fair-run-00000001', 'gate');
SELECT openwop.interrupt('acme/fair-run-00000001', 'gate', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc",
  "title": "T", "actions": ["accept", "reject"], "approversList": ["amy"]}}');
SELECT openwop.create_run('fair-timeout', '{"runId": "acme/fair-run-00000002"}');
SELECT openwop.start_node('acme/fair-run-00000002', 'gate');
SELECT openwop.interrupt('acme/fair-run-00000002', 'gate', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc",
  "title": "T", "actions": ["accept", "reject"], "approversList": ["amy"]}}');
SQL
wait_for 60 "SELECT count(*) FROM openwop.gate_steps WHERE tenant = 'acme' AND fired_at IS NOT NULL" 1
delay=$(q "SELECT round(extract(epoch FROM fired_at - due_at)::numeric, 3) FROM openwop.gate_steps WHERE tenant = 'acme'")
# how much of the hog's work was done when acme's reminder fell due and when
# it fired: read from the rows, not now (the worker goes on meanwhile)
hog_done() {   # hog_done due_at|fired_at: "reminders fired/deadlines applied" by then
	q "SELECT (SELECT count(*) FROM openwop.gate_steps h WHERE h.tenant = 'aahog' AND h.fired_at < a.$1) || '/' ||
	          (SELECT count(*) FROM openwop.interrupts h WHERE h.tenant = 'aahog' AND h.resolved_at < a.$1)
	     FROM openwop.gate_steps a WHERE a.tenant = 'acme'"
}
at_due=$(hog_done due_at)
at_fired=$(hog_done fired_at)
done_steps=${at_fired%/*}
done_gates=${at_fired#*/}
echo "acme's reminder fired ${delay} s after it fell due (openwop.sweeper_interval = $INTERVAL s);"
echo "  of the hog's $((HOG / 2)) reminders and $((HOG / 2)) deadlines, ${at_due%/*} and ${at_due#*/} were done when it fell due,"
echo "  $done_steps and $done_gates when it fired"
[ "$(awk "BEGIN { print ($delay >= 0 && $delay <= $INTERVAL) }")" = 1 ] ||
	{ echo "acme's reminder waited $delay s, more than one worker interval ($INTERVAL s)" >&2; exit 1; }
[ "$done_steps" -lt $((HOG / 4)) ] && [ "$done_gates" -lt $((HOG / 4)) ] ||
	{ echo "acme's reminder waited for most of another tenant's backlog" >&2; exit 1; }
wait_for 60 "SELECT count(*) FROM openwop.interrupts WHERE run_id = 'acme/fair-run-00000002' AND status = 'resolved'" 1
late=$(q "SELECT round(extract(epoch FROM resolved_at - expires_at)::numeric, 3) FROM openwop.interrupts WHERE run_id = 'acme/fair-run-00000002'")
echo "acme's other gate was decided by its timeout ${late} s after its deadline"
[ "$(awk "BEGIN { print ($late >= 0 && $late <= $INTERVAL) }")" = 1 ] ||
	{ echo "acme's deadline waited $late s, more than one worker interval ($INTERVAL s)" >&2; exit 1; }
[ "$(q "SELECT string_agg(kind || ':' || recipient, ',' ORDER BY id) FROM openwop.notifications WHERE run_id = 'acme/fair-run-00000001'")" = "raised:amy,reminder:amy" ]

# the hog's backlog is settled too: every deadline applied, every reminder fired
T=aahog wait_for 90 "SELECT count(*) FROM openwop.open_interrupts WHERE tenant = 'aahog' AND expires_at IS NOT NULL" 0
T=aahog wait_for 30 "SELECT count(*) FROM openwop.gate_steps WHERE tenant = 'aahog' AND fired_at IS NULL" 0
[ "$(T=aahog q "SELECT count(*) FILTER (WHERE status = 'failed') FROM openwop.runs WHERE tenant = 'aahog'")" = $((HOG / 2)) ] ||
	{ echo "not every run of the hog with a deadline failed at it" >&2; exit 1; }
[ "$(T=aahog q "SELECT count(*) FROM openwop.gate_steps WHERE tenant = 'aahog'")" = $((HOG / 2)) ] ||
	{ echo "not every reminder of the hog fired" >&2; exit 1; }
[ "$(T=aahog q "SELECT count(*) FROM openwop.notifications WHERE tenant = 'aahog' AND kind = 'reminder'")" = $((HOG / 2)) ]
[ "$(T=aahog q "SELECT count(*) FROM openwop.notifications WHERE tenant = 'aahog' AND kind = 'expired'")" = $((HOG / 2)) ]
echo "then the hog's $HOG gates were settled: $((HOG / 2)) deadlines applied, $((HOG / 2)) reminders fired ($((SECONDS - start)) s in all)"
