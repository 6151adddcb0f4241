#!/usr/bin/env bash
# Notifications per tenant: a login bound to a tenant learns nothing about
# another tenant's runs from notifications.  Each tenant's notifications go
# to a channel whose name (a keyed hash of the tenant, new at each server
# start) openwop.listen() tells only that tenant's callers; the shared
# channel openwop_events is silent unless the DBA turns
# openwop.shared_channel on.  Both senders are tried: the database's worker
# (the relay) and, in a database it does not serve, the committing
# transaction itself.  Needs the cluster test/run starts.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
db=ow_channels
unserved=ow_channels_unserved
out=$(mktemp -d)
roles="chan_acme chan_globex chan_unbound"
cleanup() {
	psql -X -q -d postgres -c "ALTER SYSTEM RESET openwop.shared_channel" -c "ALTER SYSTEM RESET openwop.databases" \
		-c "SELECT pg_reload_conf()" >/dev/null 2>&1 || true
	for d in $db $unserved; do dropdb --if-exists $d >/dev/null 2>&1 || true; done
	for r in $roles; do psql -X -q -d postgres -c "DROP ROLE IF EXISTS $r" >/dev/null 2>&1 || true; done
	rm -rf "$out"
}
trap cleanup EXIT
cleanup
out=$(mktemp -d)
pass() { echo "ok - $1"; }
notified() { sed -n 's/^Asynchronous notification "\([^"]*\)" with payload "\(.*\)" received from server process with PID [0-9]*\.$/\1 \2/p' "$1"; }

psql -X -q -v ON_ERROR_STOP=1 -d postgres >/dev/null <<SQL
CREATE ROLE chan_acme LOGIN PASSWORD '${PGPASSWORD:-unused}';
CREATE ROLE chan_globex LOGIN PASSWORD '${PGPASSWORD:-unused}';
CREATE ROLE chan_unbound LOGIN PASSWORD '${PGPASSWORD:-unused}';
ALTER ROLE chan_acme SET openwop.bound_tenant = 'acme';
ALTER ROLE chan_globex SET openwop.bound_tenant = 'globex';
-- a database no worker serves: its transactions notify themselves
ALTER SYSTEM SET openwop.databases = '$db';
SELECT pg_reload_conf();
SQL
for d in $db $unserved; do
	createdb $d
	psql -X -q -v ON_ERROR_STOP=1 -d $d >/dev/null <<'SQL'
CREATE EXTENSION openwop_interrupt;
GRANT USAGE ON SCHEMA openwop TO chan_acme, chan_globex, chan_unbound;
GRANT EXECUTE ON FUNCTION openwop.listen(), openwop.unlisten() TO chan_acme, chan_globex, chan_unbound;
SQL
done
wait_served $db 15 >/dev/null

# listen AS DB SECONDS FILE [SQL]: a session of login AS that listens (SQL,
# default openwop.listen()), then prints what it received
listen() {
	printf '%s\nSELECT pg_sleep(%s);\nSELECT 1;\n' "${5:-SELECT openwop.listen();}" "$3" |
		psql -X -q -A -t -d "$2" -U "$1" >"$4" 2>&1 &
}
runs() {  # runs DB N: run N in acme and in globex, each a committed change
	psql -X -q -v ON_ERROR_STOP=1 -d "$1" >/dev/null <<SQL
SET openwop.tenant = 'acme';
SELECT openwop.create_run('channels', '{"runId": "acme/channel-run-00000$2"}');
SET openwop.tenant = 'globex';
SELECT openwop.create_run('channels', '{"runId": "globex/channel-run-00000$2"}');
SQL
}

for d in $db $unserved; do
	listen chan_acme $d 2 "$out/acme.txt"
	listen chan_globex $d 2 "$out/globex.txt"
	listen chan_unbound $d 2 "$out/unbound.txt"
	listen postgres $d 2 "$out/shared.txt" "LISTEN openwop_events;"
	sleep 0.7
	runs $d 1
	wait
	acme_channel=$(head -n 1 "$out/acme.txt")
	globex_channel=$(head -n 1 "$out/globex.txt")
	[[ "$acme_channel" =~ ^openwop_events_[0-9a-f]{32}$ ]] || { echo "acme's channel: [$acme_channel]" >&2; exit 1; }
	[ "$acme_channel" != "$globex_channel" ]
	[ "$(notified "$out/acme.txt")" = "$acme_channel {\"runId\": \"acme/channel-run-000001\", \"fromSequence\": 0, \"sequence\": 0}" ] ||
		{ echo "$d: acme's listener heard:" >&2; cat "$out/acme.txt" >&2; exit 1; }
	[ "$(notified "$out/globex.txt")" = "$globex_channel {\"runId\": \"globex/channel-run-000001\", \"fromSequence\": 0, \"sequence\": 0}" ] ||
		{ echo "$d: globex's listener heard:" >&2; cat "$out/globex.txt" >&2; exit 1; }
	[ -z "$(notified "$out/unbound.txt")" ] || { echo "$d: an unbound login heard:" >&2; cat "$out/unbound.txt" >&2; exit 1; }
	[ -z "$(notified "$out/shared.txt")" ] || { echo "$d: openwop_events carried:" >&2; cat "$out/shared.txt" >&2; exit 1; }
done
pass "listener_hears_own_tenant_only: each tenant's login hears its own runs only, from the relay and from a transaction that notifies itself"
# one tenant, two databases, two channels: a login of a tenant in one database
# that may connect to another learns nothing there of its namesake
c1=$(psql -X -A -t -q -d $db -U chan_acme -c "SELECT openwop.listen()")
c2=$(psql -X -A -t -q -d $unserved -U chan_acme -c "SELECT openwop.listen()")
[ "$c1" != "$c2" ] || { echo "tenant acme has one channel in both databases: $c1" >&2; exit 1; }
listen chan_globex $db 2 "$out/crossdb.txt" "LISTEN \"$c2\";"
sleep 0.7
runs $db 4
wait
[ -z "$(notified "$out/crossdb.txt")" ] || { echo "another database's channel name heard this one:" >&2; cat "$out/crossdb.txt" >&2; exit 1; }
pass "channel_per_database: a tenant's channel is its database's own (another database's name hears nothing here)"
pass "shared_channel_silent_by_default: LISTEN openwop_events hears nothing"
pass "unbound_login_hears_no_named_tenant: an unbound login hears neither tenant"

# a bound login cannot take another tenant's channel, whatever it sets
err=$(psql -X -A -t -q -d $db -U chan_globex -c "SET openwop.tenant = 'acme'" -c "SELECT openwop.listen()" 2>&1 || true)
grep -q 'id_tenant_mismatch' <<<"$err" || { echo "globex asked for acme's channel: $err" >&2; exit 1; }
pass "bound_login_cannot_listen_to_another_tenant: 403 id_tenant_mismatch"

# unlisten: nothing more
listen chan_acme $db 2 "$out/unlisten.txt" "SELECT openwop.listen(); SELECT openwop.unlisten();"
sleep 0.7
runs $db 2
wait
[ -z "$(notified "$out/unlisten.txt")" ] || { echo "heard after unlisten():" >&2; cat "$out/unlisten.txt" >&2; exit 1; }
pass "unlisten_stops: after unlisten() the session hears nothing"

# the DBA turns the shared channel on: every tenant's run ids on openwop_events
psql -X -q -d postgres -c "ALTER SYSTEM SET openwop.shared_channel = on" -c "SELECT pg_reload_conf()" >/dev/null
sleep 1
wait_served $db 15 >/dev/null   # the relay took the reload
listen chan_unbound $db 2 "$out/shared_on.txt" "LISTEN openwop_events;"
sleep 0.7
runs $db 3
wait
[ "$(notified "$out/shared_on.txt" | cut -d' ' -f1 | sort -u)" = openwop_events ] &&
	[ "$(notified "$out/shared_on.txt" | wc -l)" = 2 ] || { echo "the shared channel carried:" >&2; cat "$out/shared_on.txt" >&2; exit 1; }
psql -X -q -d postgres -c "ALTER SYSTEM RESET openwop.shared_channel" -c "SELECT pg_reload_conf()" >/dev/null
pass "shared_channel_when_on: with openwop.shared_channel on, openwop_events carries every tenant's runs"

# a new server start, a new name
before=$(psql -X -A -t -q -d $db -U chan_acme -c "SELECT openwop.listen()")
pg_ctlcluster "$PGVERSION" regress stop
pg_ctlcluster "$PGVERSION" regress start
after=$(psql -X -A -t -q -d $db -U chan_acme -c "SELECT openwop.listen()")
[ "$before" != "$after" ] || { echo "the channel kept its name across a restart: $before" >&2; exit 1; }
pass "channel_renamed_at_restart: a tenant's channel has a new name after a restart"
echo "tenant channel checks passed"
