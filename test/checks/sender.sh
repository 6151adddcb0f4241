#!/usr/bin/env bash
# sender_delivers_each_row_once_and_retries: tools/openwop-sender drains the
# notification outbox (README, "Reminders, escalation and notifications").
# With the outbox on, approval gates write rows; the sender, run --once as a
# login bound to tenant acme, writes one file per acme row, named by its id,
# and acknowledges them; a second run delivers nothing.  A recipient who is
# one person gets an inspect and a resolve link, whose tokens verify and name
# that principal (an escalation's member too); "*", a role and an
# issuer-qualified id get none, and neither does a gate decided before the
# message went out.  A failing delivery is retried inside the lease and left
# unacknowledged: the row comes back once the lease ends, and after
# openwop.notification_max_attempts claims it is dead and counted as
# notifications_dead.  Two senders at once never deliver a row twice.  It
# runs with nothing on PATH but bash, sh, psql and coreutils; sendmail gets
# an RFC 5322 message with no header a title can add; the webhook example
# posts valid JSON.  Last, two rules of the outbox and the step planner
# this check once found broken (see the end).  Needs the
# cluster test/run starts (preloaded, with a key-encryption passphrase).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)
sender=$root/tools/openwop-sender
db=ow_sender
out=$(mktemp -d)
roles="ow_sender_acme ow_sender_all ow_sender_plain ow_sender_dba"
made_issuer=0
cleanup() {
	psql -X -q -d postgres -c "ALTER SYSTEM RESET openwop.notification_outbox" \
		-c "ALTER SYSTEM RESET openwop.notification_max_attempts" -c "SELECT pg_reload_conf()" >/dev/null 2>&1 || true
	dropdb --if-exists $db >/dev/null 2>&1 || true
	for r in $roles; do psql -X -q -d postgres -c "DROP ROLE IF EXISTS $r" >/dev/null 2>&1 || true; done
	[ "$made_issuer" = 0 ] || psql -X -q -d postgres -c "DROP ROLE IF EXISTS openwop_token_issuer" >/dev/null 2>&1 || true
	rm -rf "$out"
}
trap cleanup EXIT
dropdb --if-exists $db >/dev/null 2>&1 || true
for r in $roles; do psql -X -q -d postgres -c "DROP ROLE IF EXISTS $r" >/dev/null 2>&1 || true; done

q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d $db -c "SET openwop.tenant = '${T:-acme}'" -c "$1" | tail -n 1; }
fail() { echo "$*" >&2; exit 1; }
# send LOGIN OPTIONS...: the sender as LOGIN, links to a placeholder page
send() { PGUSER=$1 PGDATABASE=$db OPENWOP_LINK_BASE=https://approvals.example.org/ow "$sender" "${@:2}"; }
# a header of a message file: header FILE NAME
header() { sed -n "s/^$2: //p" "$1"; }
raise() {    # raise RUN TITLE DATA-MEMBERS [WORKFLOW]: DATA-MEMBERS are JSON members of the gate's data
	local tenant=${1%%/*}
	T=$tenant q "SELECT openwop.create_run('${4:-wf}', jsonb_build_object('runId', '$1'), 'rita') ->> 'status'" >/dev/null
	T=$tenant q "SELECT openwop.start_node('$1', 'gate') ->> 'status'" >/dev/null
	T=$tenant q "SELECT openwop.interrupt('$1', 'gate', jsonb_build_object('kind', 'approval', 'data',
	  jsonb_build_object('artifactId', 'a', 'artifactType', 'doc', 'title', \$t\$$2\$t\$, 'actions', jsonb_build_array('accept', 'reject'))
	  || '{$3}'::jsonb)) ->> 'status'" >/dev/null
}

createdb $db
make_login_approver $db
[ "$(psql -X -A -t -q -d $db -c "SELECT count(*) FROM pg_roles WHERE rolname = 'openwop_token_issuer'")" = 1 ] || made_issuer=1
psql -X -q -v ON_ERROR_STOP=1 -v pw="${PGPASSWORD:-unused}" -v made="$made_issuer" -d $db >/dev/null <<'SQL'
CREATE EXTENSION openwop_interrupt;
\if :made
CREATE ROLE openwop_token_issuer NOLOGIN;
\endif
GRANT USAGE ON SCHEMA openwop TO openwop_token_issuer;
GRANT EXECUTE ON FUNCTION openwop.mint_interrupt_token(text, text, interval, text) TO openwop_token_issuer;
SELECT openwop.add_signing_key('k1');
CREATE ROLE ow_sender_acme LOGIN PASSWORD :'pw';
GRANT openwop_notification_sender, openwop_token_issuer TO ow_sender_acme;
ALTER ROLE ow_sender_acme SET openwop.bound_tenant = 'acme';
CREATE ROLE ow_sender_all LOGIN PASSWORD :'pw';
GRANT openwop_notification_sender TO ow_sender_all;
-- inspect tokens only: EXECUTE without the issuer role
GRANT EXECUTE ON FUNCTION openwop.mint_interrupt_token(text, text, interval, text) TO ow_sender_all;
ALTER ROLE ow_sender_all SET openwop.bound_tenant = '*';
CREATE ROLE ow_sender_plain LOGIN PASSWORD :'pw';
ALTER ROLE ow_sender_plain SET openwop.bound_tenant = 'acme';
CREATE ROLE ow_sender_dba LOGIN PASSWORD :'pw';
GRANT openwop_policy_admin TO ow_sender_dba;
SELECT openwop.add_group_member('finance', 'carol', 'acme'), openwop.add_group_member('finance', 'dave', 'acme'),
       openwop.add_group_member('execs', 'erin', 'acme');
-- a wall-clock ladder for workflow "ladder": a reminder, then an escalation to execs
SET openwop.bound_tenant = 'acme';
SET SESSION AUTHORIZATION ow_sender_dba;
SELECT openwop.set_approval_policy('ladder', '{"appliesTo": {"workflowId": "ladder", "nodeId": "*"},
  "reminders": [{"afterMs": 300}], "escalation": {"afterMs": 600, "groupRef": "execs"}}');
RESET SESSION AUTHORIZATION;
RESET openwop.bound_tenant;
ALTER SYSTEM SET openwop.notification_outbox = on;
SELECT pg_reload_conf();
SQL
sleep 0.5    # the reload reaches the sessions to come

# the sender's own refusals: bad options, a login that may not claim
for bad in "--batch 0" "--lease 99999" "--deliver files:" "--deliver sendmail --sendmail /bin/true" "--link-base not-a-url" "--frobnicate"; do
	# shellcheck disable=SC2086
	if err=$(send ow_sender_acme --once $bad 2>&1); then fail "the sender took $bad"; fi
	[ -n "$err" ] || fail "the sender refused $bad without a word"
done
set +e
err=$(send ow_sender_plain --once --deliver "files:$out/none" 2>&1)
status=$?
set -e
[ $status = 2 ] && [[ $err == *"GRANT openwop_notification_sender"* ]] ||
	fail "a login without the sender role: status $status, [$err]"
err=$(send ow_sender_acme --once --deliver "files:$out/none" --token-ttl 'soon' 2>&1) && fail "the sender took --token-ttl soon"
echo "sender_refuses: bad options and a login without openwop_notification_sender exit 2 with a message"

# gates: one naming people, a group, a role and an issuer-qualified id; one
# naming no one; one of tenant globex
raise acme/sender-gate-people-01 'Pay invoice 7' '"approversList": ["alice", "https://idp.example.org/zed"], "approverGroupRefs": ["finance"], "approverRoleRefs": ["treasury"]'
raise acme/sender-gate-open-0001 'Open to all' ''
raise globex/sender-gate-globex-1 'Globex gate' '"approversList": ["gina"]'
[ "$(q "SELECT string_agg(recipient, ' ' ORDER BY id) FROM openwop.notifications WHERE tenant = 'acme'")" = \
	"alice carol dave https://idp.example.org/zed role:treasury *" ] ||
	fail "the outbox holds: $(q "SELECT string_agg(recipient, ' ' ORDER BY id) FROM openwop.notifications")"

# sender_delivers_each_row_once: one file per acme row, named by its id,
# for its recipient; acknowledged rows leave the outbox
psql -X -A -t -q -v ON_ERROR_STOP=1 -d $db -F ' ' \
	-c "SELECT id, recipient FROM openwop.notifications WHERE tenant = 'acme' ORDER BY id" >"$out/rows"
send ow_sender_acme --once --deliver "files:$out/a"
want=$(cut -d ' ' -f 1 "$out/rows" | sed 's/$/.eml/' | tr '\n' ' ' | sed 's/ $//')
got=$(cd "$out/a" && ls | sort -n | tr '\n' ' ' | sed 's/ $//')
[ "$got" = "$want" ] || fail "files [$got], rows [$want]"
while read -r id who; do
	[ "$(header "$out/a/$id.eml" X-OpenWOP-Notification)" = "$id" ] || fail "$id.eml names another notification"
	[ "$(header "$out/a/$id.eml" X-OpenWOP-Recipient)" = "$who" ] || fail "$id.eml is not for $who"
done <"$out/rows"
[ "$(q "SELECT count(*) FROM openwop.notifications WHERE tenant = 'acme'")" = 0 ] ||
	fail "acme rows left in the outbox: $(q "SELECT string_agg(id || ':' || attempts, ' ') FROM openwop.notifications")"
[ "$(T=globex q "SELECT attempts || ' ' || (lease_until IS NULL) FROM openwop.notifications WHERE tenant = 'globex'")" = "0 true" ] ||
	fail "a sender bound to acme touched globex's row"
send ow_sender_acme --once --deliver "files:$out/a2"
[ -z "$(ls "$out/a2")" ] || fail "a second run delivered again: $(ls "$out/a2")"
echo "sender_delivers_each_row_once: $(ls "$out/a" | wc -l) files for acme's rows, each named by its id and acknowledged; a second run delivers nothing; globex's row untouched"

# sender_links_for_one_person: links for alice, carol, dave, whose tokens
# verify and name them; none for "*", the role or the issuer-qualified id
for f in "$out"/a/*.eml; do
	who=$(header "$f" X-OpenWOP-Recipient)
	inspect=$(sed -n 's/^Inspect: *https:\/\/approvals\.example\.org\/ow\/inspect?token=//p' "$f")
	resolve=$(sed -n 's/^Resolve: *https:\/\/approvals\.example\.org\/ow\/resolve?token=//p' "$f")
	iid=$(header "$f" X-OpenWOP-Interrupt)
	case $who in
	alice | carol | dave)
		[ -n "$inspect" ] && [ -n "$resolve" ] || fail "no links for $who: $(cat "$f")"
		v=$(psql -X -A -t -q -v ON_ERROR_STOP=1 -d $db -v tok="$resolve" \
			<<<"SELECT c ->> 'intent', c ->> 'principal', c ->> 'interruptId' FROM openwop.verify_interrupt_token(:'tok') c;")
		[ "$v" = "resolve|$who|$iid" ] || fail "$who's resolve token verifies as [$v]"
		v=$(psql -X -A -t -q -v ON_ERROR_STOP=1 -d $db -v tok="$inspect" \
			<<<"SELECT c ->> 'intent', c ->> 'principal', c ->> 'interruptId' FROM openwop.verify_interrupt_token(:'tok') c;")
		[ "$v" = "inspect||$iid" ] || fail "$who's inspect token verifies as [$v]" ;;
	*)
		[ -z "$inspect$resolve" ] && ! grep -q 'token=' "$f" || fail "links for $who: $(cat "$f")" ;;
	esac
done
echo "sender_links_for_one_person: inspect and resolve links for each person, tokens verifying as theirs; none for *, role:treasury and an issuer-qualified id"

# sender_mint_failure_leaves_link_out: a gate decided before its message
# goes out: the raised row is delivered without links, and the decision too
raise acme/sender-gate-decided-1 'Decided early' '"approversList": ["postgres", "alice"]'
q "SELECT openwop.resolve_interrupt('acme/sender-gate-decided-1', 'gate', '{\"action\": \"accept\"}') ->> 'decision'" >/dev/null
send ow_sender_acme --once --deliver "files:$out/b"
for f in "$out"/b/*.eml; do
	[ "$(header "$f" X-OpenWOP-Run)" = acme/sender-gate-decided-1 ] || continue
	! grep -q 'token=' "$f" || fail "a link to a decided gate: $(cat "$f")"
done
# (the requester's own "decided" is checked last: see outbox_tells_the_requester)
told_plain=$(grep -l '^X-OpenWOP-Recipient: rita$' "$out"/b/*.eml | wc -l || true)
kinds=$(for f in "$out"/b/*.eml; do echo "$(header "$f" X-OpenWOP-Kind):$(header "$f" X-OpenWOP-Recipient)"; done |
	grep -v ':rita$' | sort | tr '\n' ' ')
[ "$kinds" = "decided:alice decided:postgres raised:alice raised:postgres " ] || fail "delivered: [$kinds]"
[ "$(header "$(grep -l '^X-OpenWOP-Kind: decided' "$out"/b/*.eml | head -n 1)" Subject)" = "Decided (granted): Decided early" ] ||
	fail "the decision's subject: $(grep -h '^Subject:' "$out"/b/*.eml)"
echo "sender_mint_failure_leaves_link_out: a gate decided first: its raised and decided messages go out, with no link"

# sender_escalation_links: a reminder, then an escalation to execs: erin's
# resolve token names her, eligible from the escalation on
raise acme/sender-gate-ladder-01 'Ladder' '"approversList": ["alice"]' ladder
sleep 1
q "SELECT openwop.sweep()" >/dev/null
[ "$(q "SELECT string_agg(kind || ':' || notified, ' ' ORDER BY step) FROM openwop.gate_steps
        WHERE run_id = 'acme/sender-gate-ladder-01' AND fired_at IS NOT NULL")" = \
	"reminder:1 escalation:1" ] || fail "the ladder's steps: $(q "SELECT string_agg(kind || ':' || notified || ':' || (fired_at IS NOT NULL), ' ') FROM openwop.gate_steps")"
send ow_sender_acme --once --deliver "files:$out/c"
esc=$(grep -l '^X-OpenWOP-Kind: escalation' "$out"/c/*.eml)
[ "$(header "$esc" X-OpenWOP-Recipient)" = erin ] || fail "the escalation went to $(header "$esc" X-OpenWOP-Recipient)"
grep -q '^Step: *2 (due ' "$esc" && grep -q '^Group: *execs$' "$esc" || fail "the escalation's message: $(cat "$esc")"
resolve=$(sed -n 's/^Resolve: *https:\/\/approvals\.example\.org\/ow\/resolve?token=//p' "$esc")
v=$(psql -X -A -t -q -v ON_ERROR_STOP=1 -d $db -v tok="$resolve" <<<"SELECT openwop.verify_interrupt_token(:'tok') ->> 'principal';")
[ "$v" = erin ] || fail "erin's token names [$v]"
rem=$(grep -l '^X-OpenWOP-Kind: reminder' "$out"/c/*.eml)
[ "$(header "$rem" Subject)" = "Reminder: approval waiting: Ladder" ] && grep -q '^Resolve: ' "$rem" ||
	fail "the reminder: $(cat "$rem")"
echo "sender_escalation_links: the reminder and the escalation go out; the escalated member's resolve token names erin"

# sender_retries_then_leaves_unacked: a failing command is tried 1 + 2
# times within the lease, the row left unacknowledged; it is not claimed
# again before the lease ends, and is delivered after (its second attempt)
raise acme/sender-gate-retry-001 'Retry me' '"approversList": ["alice"]'
id=$(q "SELECT max(id) FROM openwop.notifications")
set +e
send ow_sender_acme --once --lease 8 --retries 2 --deliver "echo \$OPENWOP_NOTIFICATION_ID >>'$out/tries'; exit 3" 2>"$out/retry.err"
status=$?
set -e
[ $status = 1 ] || fail "a failed delivery: exit status $status"
[ "$(grep -c "^$id$" "$out/tries")" = 3 ] || fail "tries: $(cat "$out/tries")"
grep -q "$id (raised to alice): not delivered (exit status 3)" "$out/retry.err" || fail "its report: $(cat "$out/retry.err")"
[ "$(q "SELECT attempts || ' ' || (lease_until > now()) FROM openwop.notifications WHERE id = $id")" = "1 true" ] ||
	fail "the failed row: $(q "SELECT row_to_json(n) FROM openwop.notifications n WHERE id = $id")"
send ow_sender_acme --once --deliver "files:$out/d"
[ -z "$(ls "$out/d")" ] || fail "claimed again inside its lease: $(ls "$out/d")"
wait_for 15 "SELECT lease_until <= now() FROM openwop.notifications WHERE id = $id" t
send ow_sender_acme --once --deliver "files:$out/d"
[ "$(ls "$out/d")" = "$id.eml" ] || fail "after the lease: $(ls "$out/d")"
grep -q "(delivery 2)" "$out/d/$id.eml" || fail "the second attempt says: $(tail -n 3 "$out/d/$id.eml")"
[ "$(q "SELECT count(*) FROM openwop.notifications WHERE id = $id")" = 0 ] ||
	fail "the retried row, delivered, is still there: $(q "SELECT row_to_json(n) FROM openwop.notifications n WHERE id = $id")"
echo "sender_retries_then_leaves_unacked: a failing delivery tried 3 times in its lease, left unacknowledged, not claimed again until the lease ended, then delivered as attempt 2"

# sender_dead_after_max_attempts: two claims, then dead, counted
psql -X -q -d postgres -c "ALTER SYSTEM SET openwop.notification_max_attempts = 2" -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
dead_before=$(q "SELECT coalesce(sum(count), 0) FROM openwop.stats WHERE database = current_database() AND event = 'notifications_dead'")
raise acme/sender-gate-dead-0001 'Never delivered' '"approversList": ["alice"]'
id=$(q "SELECT max(id) FROM openwop.notifications")
for attempt in 1 2; do
	send ow_sender_acme --once --lease 1 --retries 0 --deliver 'exit 1' 2>/dev/null && fail "attempt $attempt succeeded"
	wait_for 15 "SELECT lease_until <= now() FROM openwop.notifications WHERE id = $id" t
done
send ow_sender_acme --once --deliver "files:$out/e"    # this claim buries it
wait_for 15 "SELECT count(*) FROM openwop.dead_notifications WHERE id = $id" 1
[ -z "$(ls "$out/e")" ] || fail "a dead row was delivered: $(ls "$out/e")"
dead_after=$(q "SELECT coalesce(sum(count), 0) FROM openwop.stats WHERE database = current_database() AND event = 'notifications_dead'")
[ "$dead_after" = $((dead_before + 1)) ] || fail "notifications_dead went from $dead_before to $dead_after"
psql -X -q -d postgres -c "ALTER SYSTEM RESET openwop.notification_max_attempts" -c "SELECT pg_reload_conf()" >/dev/null
echo "sender_dead_after_max_attempts: after 2 failed claims the row is dead, never delivered, and notifications_dead counts it once"

# sender_two_at_once: 40 rows, two senders in small batches: each row in
# exactly one of their directories
for i in $(seq 1 40); do q "SELECT openwop.add_group_member('crowd', 'member$i', 'acme')" >/dev/null; done
raise acme/sender-gate-crowd-0001 'Crowd' '"approverGroupRefs": ["crowd"]'
send ow_sender_acme --once --batch 3 --deliver "files:$out/f1" &
p1=$!
send ow_sender_acme --once --batch 3 --deliver "files:$out/f2" &
p2=$!
wait $p1 && wait $p2 || fail "a concurrent sender failed"
n1=$(ls "$out/f1" | wc -l)
n2=$(ls "$out/f2" | wc -l)
both=$(ls "$out/f1" "$out/f2" | grep -c '\.eml$')
uniq=$(ls "$out/f1" "$out/f2" | grep '\.eml$' | sort -u | wc -l)
[ "$both" = 40 ] && [ "$uniq" = 40 ] || fail "two senders: $n1 + $n2 files, $uniq distinct"
echo "sender_two_at_once: two senders delivered the 40 rows between them ($n1 and $n2), none twice"

# sender_every_tenant: a login bound to "*" drains globex's row, and without
# the issuer role mints inspect links only
send ow_sender_all --once --deliver "files:$out/g" 2>"$out/g.err"
grep -q 'no token issuer' "$out/g.err" || fail "no warning about resolve links: $(cat "$out/g.err")"
f=$(ls "$out"/g/*.eml)
[ "$(header "$f" X-OpenWOP-Tenant) $(header "$f" X-OpenWOP-Recipient)" = "globex gina" ] || fail "the every-tenant sender delivered: $(ls "$out/g")"
grep -q '^Inspect: ' "$f" && ! grep -q '^Resolve: ' "$f" || fail "globex's message: $(cat "$f")"
echo "sender_every_tenant: a sender bound to '*' delivers another tenant's row; without the issuer role, inspect links only"

# sender_needs_psql_and_coreutils: nothing else on PATH (no jq, python,
# sed, grep or awk); and sendmail gets RFC 5322 with To: from the map or
# the template, no header a title can add, and a recipient without an
# address left for another claim
mkdir -p "$out/bin" "$out/mail"
for b in $(dpkg -L coreutils | grep -E '^(/usr)?/bin/[^/]+$'); do ln -sf "$b" "$out/bin/"; done
ln -sf "$(command -v bash)" "$out/bin/bash"
ln -sf "$(command -v sh)" "$out/bin/sh"
ln -sf "$(command -v psql)" "$out/bin/psql"
cat >"$out/sendmail" <<EOF
#!/bin/bash
cat >"$out/mail/\$\$.\$RANDOM.eml"
EOF
chmod +x "$out/sendmail"
printf '# recipient address\nrole:treasury treasury-team@example.org\n' >"$out/map"
raise acme/sender-gate-mail-0001 $'Pay "7"\nBcc: thief@example.net\t\\ ü' '"approversList": ["alice"], "approverRoleRefs": ["treasury"]'
set +e
PATH=$out/bin send ow_sender_acme --once --deliver sendmail --sendmail "$out/sendmail" --address '%s@example.org' \
	--address-map "$out/map" --from approvals@example.org 2>"$out/mail.err"
status=$?
set -e
[ $status = 0 ] || fail "the sendmail run: status $status: $(cat "$out/mail.err")"
to=$(grep -h '^To: ' "$out"/mail/*.eml | sort | tr '\n' ' ')
[ "$to" = "To: alice@example.org To: treasury-team@example.org " ] || fail "sendmail got: [$to] $(cat "$out/mail.err")"
! grep -q '^Bcc:' "$out"/mail/*.eml || fail "a title added a header: $(cat "$out"/mail/*.eml)"
for f in "$out"/mail/*.eml; do
	[ "$(header "$f" From)" = approvals@example.org ] || fail "From: $(header "$f" From)"
	[[ $(header "$f" Subject) == =\?UTF-8\?B\?* ]] || fail "a subject that is not ASCII, unencoded: $(header "$f" Subject)"
	grep -q '^Message-ID: <openwop\.[0-9]*\.ow_sender@' "$f" || fail "no Message-ID: $(cat "$f")"
done
echo "sender_needs_psql_and_coreutils: with only bash, sh, psql and coreutils on PATH it delivers to sendmail: To: from the map and the template, From:, an encoded subject, no header from a title"

# sender_webhook_example: examples/webhook-post posts the message as JSON
# (a stand-in for curl keeps the body); the JSON holds the title exactly
mkdir -p "$out/hookbin" "$out/hook"
cat >"$out/hookbin/curl" <<EOF
#!/bin/bash
printf '%s\n' "\$@" >"$out/hook/\$OPENWOP_NOTIFICATION_ID.args"
cat >"$out/hook/\$OPENWOP_NOTIFICATION_ID.json"
EOF
chmod +x "$out/hookbin/curl"
raise acme/sender-gate-hook-0001 $'Hook "7"\n\\ \tü' '"approversList": ["alice"]'
id=$(q "SELECT max(id) FROM openwop.notifications")
PATH=$out/hookbin:$PATH WEBHOOK_URL=https://hooks.example.org/approvals \
	send ow_sender_acme --once --deliver "$root/examples/webhook-post"
[ -s "$out/hook/$id.json" ] || fail "no body posted for $id: $(ls "$out/hook")"
grep -qx 'https://hooks.example.org/approvals' "$out/hook/$id.args" &&
	grep -qx "Idempotency-Key: openwop-notification-$id" "$out/hook/$id.args" || fail "curl's arguments: $(cat "$out/hook/$id.args")"
v=$(psql -X -A -t -q -v ON_ERROR_STOP=1 -d $db -v body="$(cat "$out/hook/$id.json")" <<'SQL'
SELECT (b -> 'notification' ->> 'id') || '|' || (b ->> 'subject' = 'Approval waiting: ' || (b -> 'notification' -> 'detail' ->> 'title'))
       || '|' || (b -> 'links' ->> 'resolve' LIKE 'https://approvals.example.org/ow/resolve?token=ow2.%')
       || '|' || (b ->> 'text' LIKE 'An approval is waiting for you.%')
  FROM (SELECT :'body'::jsonb) x (b);
SQL
)
[ "$v" = "$id|true|true|true" ] || fail "the webhook's JSON: [$v] $(cat "$out/hook/$id.json")"
echo "sender_webhook_example: examples/webhook-post posts valid JSON with the notification, its subject (the title exact), text and links, keyed by the id"

# Two rules of the outbox and the planner this check once found broken;
# each runs after the sender's own rules.
known=0

# outbox_tells_the_requester: the run's requester (create_run's
# requested_by, "rita" here) hears of the decision ("decided" goes to the
# audience and the requester), under no policy as under one that excludes
# requesters (once, only the latter told her: the requester was read from
# the pin).
# alice rejects the ladder's gate by a token (the run's owner, this login, may not vote under the policy)
[ "$(q "SELECT openwop.resolve_interrupt_by_token(openwop.mint_interrupt_token(i.interrupt_id, 'resolve', NULL, 'alice'),
        '{\"action\": \"reject\"}') ->> 'decision' FROM openwop.interrupts i WHERE i.run_id = 'acme/sender-gate-ladder-01'")" = rejected ] ||
	fail "alice could not reject the ladder's gate"
told_pinned=$(q "SELECT count(*) FROM openwop.notifications WHERE run_id = 'acme/sender-gate-ladder-01' AND kind = 'decided' AND recipient = 'rita'")
if [ "$told_plain" = 1 ] && [ "$told_pinned" = 1 ]; then
	echo "outbox_tells_the_requester: the requester hears of the decision, with a policy or without"
else
	echo "outbox_tells_the_requester: the requester got $told_plain \"decided\" of a gate under no policy, $told_pinned under a policy excluding requesters; 1 each expected" >&2
	known=1
fi

# calendar_plans_every_step: a policy on a business calendar with three
# steps (two reminders and an escalation, after 1, 2 and 3 working hours)
# plans three steps, each in the future (once, ow_calendar_add() held two
# amounts and a third was written past them: the escalation came out at
# 2000-01-01, fired at once).
psql -X -q -v ON_ERROR_STOP=1 -d $db >/dev/null <<'SQL'
SET openwop.bound_tenant = 'acme';
SET SESSION AUTHORIZATION ow_sender_dba;
SELECT openwop.set_calendar('office', '{"timezone": "Europe/Berlin", "week": {"mon": [["09:00", "17:00"]],
  "tue": [["09:00", "17:00"]], "wed": [["09:00", "17:00"]], "thu": [["09:00", "17:00"]], "fri": [["09:00", "17:00"]]}}');
SELECT openwop.set_approval_policy('three-steps', '{"appliesTo": {"workflowId": "three", "nodeId": "*"}, "calendar": "office",
  "reminders": [{"afterMs": 3600000}, {"afterMs": 7200000}], "escalation": {"afterMs": 10800000, "groupRef": "execs"}}');
SQL
raise acme/sender-gate-three-0001 'Three steps' '"approversList": ["alice"]' three
steps=$(q "SELECT string_agg(kind || ':' || (due_at > now()), ' ' ORDER BY step) FROM openwop.gate_steps WHERE run_id = 'acme/sender-gate-three-0001'")
if [ "$steps" = "reminder:true reminder:true escalation:true" ]; then
	echo "calendar_plans_every_step: three steps on a calendar, each in the future, in order"
else
	echo "calendar_plans_every_step: planned [$steps], not [reminder:true reminder:true escalation:true]" >&2
	known=1
fi

[ "$known" = 0 ] || exit 1
echo "sender_delivers_each_row_once_and_retries: sender checks passed"
