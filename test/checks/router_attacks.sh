#!/usr/bin/env bash
# Hostile callers of the router (openwop_router, PL/Proxy) over four shard
# databases in two throwaway clusters, set up as test/checks/router.sh sets
# them up (cluster A: the router database and shards 0 and 1; cluster B:
# shards 2 and 3).  Each case is a regression test of an attack from the
# issue 17 review, named after what must hold; the script prints "ok" or
# "not ok" per case and fails when any case does.
# - a token's unverified payload decides only where it goes: no work on the
#   router beyond the shards' own bound (a token is at most 4096 bytes there),
#   and a malformed one is refused as the shard refuses it;
# - a shard that cannot be reached is 08006 with JSON details, for the
#   monitoring views too, and its error names no shard server (host, port,
#   socket, login);
# - the inbox is its tenant's shard's: a stale copy of a tenant's rows on
#   another shard (a move or a doubling in progress) is not in it, and it is
#   served while another shard is down;
# - a read-only transaction on the router changes nothing on a shard;
# - the single server's own checks of grant-based privileges survive the
#   hop: a role that may mint only inspect tokens mints no resolve token
#   through the router, and one with neither the scope nor the event log
#   reads no FlowDrop entry;
# - refused calls cost the shards no new connection each;
# - a function of the caller's own ahead of pg_catalog never routes a call;
# - what held: token errors are no oracle of another tenant's interrupts, a
#   retry with an Idempotency-Key after the router's ROLLBACK replays.
# Needs root (the clusters run as postgres) and PostgreSQL 15's binaries with
# openwop_interrupt, openwop_router and plproxy installed (OW_PGBIN: see
# test/lib.sh).  ROUTER_ATTACKS_PORTS="A B" chooses the two ports (unix
# sockets in a private directory).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
throwaway_begin
work=$THROWAWAY
trap throwaway_end EXIT
read -r A B <<<"${ROUTER_ATTACKS_PORTS:-5831 5832}"
. "$(dirname "$0")/../router_lib.sh"
# the ERROR and DETAIL lines (verbose: with the SQLSTATE) of what CMD prints
refusal() { "$@" -v VERBOSITY=verbose 2>&1 | grep -E '^(ERROR|DETAIL):' || true; }

passed=0
failed=0
# check NAME GOT WANT
check() {
	if [ "$2" = "$3" ]; then
		passed=$((passed + 1))
		echo "ok - $1"
	else
		failed=$((failed + 1))
		echo "not ok - $1"
		printf '#   got:  %s\n#   want: %s\n' "$2" "$3"
	fi
}

# ---- the clusters, roles, shards and router (as router.sh, plus the attackers)
router_clusters_start 60
for port in $A $B; do
	on $port postgres postgres >/dev/null <<'SQL'
CREATE ROLE engine LOGIN;
ALTER ROLE engine SET openwop.bound_tenant = '*';
CREATE ROLE a1 LOGIN IN ROLE openwop_approver;
ALTER ROLE a1 SET openwop.bound_tenant = '*';
CREATE ROLE mallory LOGIN IN ROLE openwop_approver;     -- an approver of acme only
ALTER ROLE mallory SET openwop.bound_tenant = 'acme';
CREATE ROLE eve LOGIN;                                  -- an engine of acme with a schema of its own
ALTER ROLE eve SET openwop.bound_tenant = 'acme';
CREATE ROLE linker LOGIN;                               -- mints inspect links: EXECUTE on mint, not an issuer
ALTER ROLE linker SET openwop.bound_tenant = 'acme';
CREATE ROLE viewer LOGIN;                               -- EXECUTE on the FlowDrop entry only
ALTER ROLE viewer SET openwop.bound_tenant = 'acme';
SQL
done
for i in 0 1 2 3; do
	router_new_shard "${shard_port[$i]}" "${shard_db[$i]}" <<'SQL'
-- the same callers directly, for the comparisons
GRANT USAGE ON SCHEMA openwop TO engine, a1, mallory, linker, viewer;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop TO engine, a1, mallory;
GRANT EXECUTE ON FUNCTION openwop.mint_interrupt_token(text, text, interval, text) TO linker;
GRANT EXECUTE ON FUNCTION openwop.flowdrop_interrupt(text) TO viewer;
GRANT SELECT ON openwop.pending_interrupts TO a1, mallory;
SQL
done
router_new_router <<SQL
GRANT USAGE ON FOREIGN SERVER openwop TO engine, a1, mallory, eve, linker, viewer;
GRANT USAGE ON SCHEMA openwop, openwop_router TO engine, a1, mallory, eve, linker, viewer;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop, openwop_router TO engine, a1, mallory, eve;
GRANT SELECT ON openwop.pending_interrupts TO a1, mallory;
-- the least each of the two needs for what it does on a single server
GRANT EXECUTE ON FUNCTION openwop.mint_interrupt_token(text, text, interval, text),
    openwop_router.mint_interrupt_token(jsonb, text, text, interval, text) TO linker;
GRANT EXECUTE ON FUNCTION openwop.flowdrop_interrupt(text), openwop_router.flowdrop_interrupt(jsonb, text) TO viewer;
CREATE SCHEMA eve AUTHORIZATION eve;
SQL
shard_of() { on $A router postgres -c "SELECT hashtext('$1') & 3"; }
s=$(shard_of acme)
[ "$s" != "$(shard_of beta)" ] || { echo "acme and beta must live on two shards" >&2; exit 1; }
other=$(( (s + 2) % 4 ))   # a shard of the other cluster than acme's
[ "$(on $A router postgres -c "SELECT openwop.add_signing_key('attack-key-1')")" = attack-key-1 ]

# a pending approval gate in acme and in beta, and one of acme's that only a1 may decide
for t in acme beta; do
	rt engine $t >/dev/null <<SQL
SELECT openwop.create_run('attack', '{"runId": "$t/attack-gate-00000001"}');
SELECT openwop.start_node('$t/attack-gate-00000001', 'gate');
SELECT openwop.interrupt('$t/attack-gate-00000001', 'gate', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc",
         "title": "T", "actions": ["accept", "reject"]}}');
SQL
done
rt engine acme >/dev/null <<'SQL'
SELECT openwop.create_run('attack', '{"runId": "acme/attack-cancel-000000001"}');
SELECT openwop.create_run('attack', '{"runId": "acme/attack-only-a1-00001"}');
SELECT openwop.start_node('acme/attack-only-a1-00001', 'gate');
SELECT openwop.interrupt('acme/attack-only-a1-00001', 'gate', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc",
         "title": "T", "actions": ["accept", "reject"], "approversList": ["a1"]}}');
SQL
gate_of() { sh "$(shard_of "${1%%/*}")" postgres acme -c "SELECT interrupt_id FROM openwop.interrupts WHERE run_id = '$1'"; }
acme_gate=$(gate_of acme/attack-gate-00000001)
only_a1=$(gate_of acme/attack-only-a1-00001)
# the check's own helper, on the router and on acme's shard: a token of
# key attack-key-1 with claims, and a MAC of zeros (no shard verifies it)
for where in "$A router" "${shard_port[$s]} ${shard_db[$s]}"; do
	on $where postgres >/dev/null <<'SQL'
CREATE FUNCTION public.attack_token(claims text) RETURNS text LANGUAGE sql AS $$
  SELECT 'ow2.hs256.attack-key-1.' || translate(rtrim(encode(convert_to(claims, 'UTF8'), 'base64'), '='), E'+/\n', '-_')
         || '.' || repeat('0', 64)
$$;
SQL
done
echo "# the router and four shards are up; acme is on shard $s"

# ---- tokens: what the router reads before a shard verifies
# a token of 48 MB whose payload names beta, and one whose claims nest 100,000 deep
big="attack_token('{\"i\": \"beta/' || repeat('x', 36000000) || '\"}')"
deep="attack_token('{\"i\": \"beta/x\", \"z\": ' || repeat('[', 100000) || repeat(']', 100000) || '}')"
check "token_unbounded_payload_not_decoded: a token longer than any a shard takes names no tenant" \
	"$(rt mallory acme -c "SELECT coalesce(openwop_router.token_tenant($big), 'NULL')")" NULL
for kind in big deep; do
	check "token_malformed_refused_as_on_the_shard: a $kind token through the router" \
		"$(refusal rt mallory acme -c "SELECT openwop.verify_interrupt_token(${!kind})")" \
		"$(refusal sh "$s" mallory acme -c "SELECT openwop.verify_interrupt_token(${!kind})")"
done

# held: a forged token naming beta's real interrupt, or acme's, or none, is
# refused alike wherever it goes (the signature is checked before anything is read)
beta_gate=$(gate_of beta/attack-gate-00000001)
forged() { echo "ow2.hs256.attack-key-1.$(printf '{"i":"%s","r":"x","n":"gate","e":"2099-01-01T00:00:00.000Z","t":"resolve"}' "$1" | base64 -w0 | tr '+/' '-_' | tr -d '=').$(printf '%064d' 0)"; }
a=$(refusal rt mallory acme -c "SELECT openwop.inspect_interrupt('$(forged "$beta_gate")')")
b=$(refusal rt mallory acme -c "SELECT openwop.inspect_interrupt('$(forged beta/no-such-interrupt-000001)')")
c=$(refusal rt mallory acme -c "SELECT openwop.inspect_interrupt('$(forged "$acme_gate")')")
check "token_errors_no_oracle: a forged token for another tenant's interrupt, a missing one and one's own are refused alike" \
	"$a|$b" "$c|$c"

# ---- the inbox is the tenant's shard's
# a stale copy of acme's pending gate on a shard that is not acme's (a tenant
# moved or a shard doubled, the old rows not yet deleted: docs/scale-out.md)
for table in runs interrupts open_interrupts node_executions; do
	sh "$s" postgres acme -c "\\copy (SELECT * FROM openwop.$table WHERE tenant = 'acme') TO STDOUT" |
		sh "$other" postgres acme -c "\\copy openwop.$table FROM STDIN"
done
check "inbox_is_the_tenant_shard_only: a stale copy of acme's rows on another shard is not in acme's inbox" \
	"$(rt a1 acme -c "SELECT count(*) FROM openwop.pending_interrupts WHERE interrupt_id = '$acme_gate'")" 1

# ---- a read-only transaction on the router changes nothing
ro=$(rt engine acme -v VERBOSITY=verbose -c "BEGIN READ ONLY" \
	-c "SELECT openwop.create_run('attack', '{\"runId\": \"acme/attack-read-only-00001\"}')" 2>&1 | grep -E '^ERROR:' || true)
check "read_only_transaction_refused: create_run in a read-only router transaction" \
	"$ro" "ERROR:  25006: cannot execute create_run() in a read-only transaction"
check "read_only_transaction_changes_nothing: no run on the shard" \
	"$(sh "$s" postgres acme -c "SELECT count(*) FROM openwop.runs WHERE run_id = 'acme/attack-read-only-00001'")" 0
ro=$(rt engine acme -v VERBOSITY=verbose -c "SET default_transaction_read_only = on" \
	-c "SELECT openwop.cancel_run('acme/attack-cancel-000000001')" 2>&1 | grep -E '^ERROR:' || true)
check "read_only_transaction_refused: cancel_run with default_transaction_read_only" \
	"$ro" "ERROR:  25006: cannot execute cancel_run() in a read-only transaction"
check "read_only_transaction_changes_nothing: the run is still running" \
	"$(rt engine acme -c "SELECT openwop.run_snapshot('acme/attack-cancel-000000001') ->> 'status'")" running

# ---- privileges that are grants on a single server, through the router
# linker may mint inspect links (EXECUTE on mint_interrupt_token) and is no
# token issuer: a resolve token for a1, who alone may decide the gate, is refused
direct=$(refusal sh "$s" linker acme -c "SELECT openwop.mint_interrupt_token('$only_a1', 'resolve', NULL, 'a1')")
[ -n "$direct" ] || { echo "linker minted a resolve token on the shard directly" >&2; exit 1; }
check "mint_resolve_token_needs_issuer_at_the_router: linker's resolve token through the router" \
	"$(refusal rt linker acme -c "SELECT openwop.mint_interrupt_token('$only_a1', 'resolve', NULL, 'a1')")" "$direct"
check "mint_inspect_token_through_the_router: linker's inspect token" \
	"$(rt linker acme -c "SELECT openwop.mint_interrupt_token('$only_a1', 'inspect') LIKE 'ow2.%'")" t
check "ineligible_approver_cannot_decide_by_minting: mallory, not a1, does not resolve a1's gate through a token of her own" \
	"$(rt mallory acme -c "SELECT openwop.resolve_interrupt_by_token(openwop.mint_interrupt_token('$only_a1', 'resolve', NULL, 'a1'),
	                          '{\"action\": \"accept\"}') ->> 'status'" 2>/dev/null || echo refused)" refused
# viewer holds neither approvals:respond nor EXECUTE on events()
direct=$(refusal sh "$s" viewer acme -c "SELECT openwop.flowdrop_interrupt('$acme_gate')")
[ -n "$direct" ] || { echo "viewer read a FlowDrop entry on the shard directly" >&2; exit 1; }
check "flowdrop_reader_checked_at_the_router: viewer's FlowDrop entry through the router" \
	"$(refusal rt viewer acme -c "SELECT openwop.flowdrop_interrupt('$acme_gate')")" "$direct"

# ---- (open, not tested here: PL/Proxy drops its shard connection after a
# remote error and opens a new one, a new shard backend, at the next call;
# docs/scale-out.md, "Errors", says to put a pooler between router and shards)

# ---- search_path: a function of the caller's own never routes a call
rt eve acme >/dev/null <<'SQL'
CREATE FUNCTION eve.hashtext(text) RETURNS integer LANGUAGE plpgsql AS $$BEGIN RAISE WARNING 'eve.hashtext ran'; RETURN 0; END$$;
SQL
shadow=$(rt eve acme -c "SET search_path = eve, pg_catalog" -c "SELECT openwop.add_group_member('g', 'p', 'acme')" 2>&1 | grep -c 'eve.hashtext ran' || true)
check "routing_ignores_search_path: eve's hashtext ahead of pg_catalog routing add_group_member" "$shadow" 0

# ---- held: a retry with the same Idempotency-Key after the router's ROLLBACK
rt a1 acme >/dev/null <<'SQL'
BEGIN;
SELECT openwop.resolve_interrupt('acme/attack-gate-00000001', 'gate', '{"action": "accept"}', 'attack-retry-key-0000000000001');
ROLLBACK;
SQL
check "retry_after_router_rollback_replays: the shard committed, the retry gets the stored response" \
	"$(rt a1 acme -c "SELECT openwop.resolve_interrupt('acme/attack-gate-00000001', 'gate', '{\"action\": \"accept\"}',
	                    'attack-retry-key-0000000000001') ->> 'idempotentReplay'")" true

# ---- a shard down
as_pg "$PGBIN/pg_ctl -D $work/b -m fast stop" >/dev/null
t_up=""
for t in acme beta gamma delta epsilon zeta; do
	if [ "${shard_port[$(shard_of $t)]}" = $A ]; then t_up=$t; break; fi
done
check "inbox_served_while_another_shard_is_down: the inbox of $t_up (cluster A) with cluster B stopped" \
	"$(rt a1 "$t_up" -c "SELECT count(*) FROM openwop.pending_interrupts" 2>&1)" 0
down=$(refusal rt a1 beta -c "SELECT openwop.run_snapshot('beta/attack-gate-00000001')")
check "shard_unavailable_is_08006: a call for a tenant of the stopped cluster" \
	"$(grep -c '^ERROR:  08006: shard_unavailable' <<<"$down" || true)" 1
check "shard_unavailable_detail_is_json: the detail is the JSON details of the contract" \
	"$(sed -n 's/^DETAIL:  //p' <<<"$down" | cut -c1)" "{"
check "shard_unavailable_names_no_server: no socket, host, port or login of a shard in the error" \
	"$(grep -cE "$work|\\.s\\.PGSQL|port $B|openwop_router\"" <<<"$down" || true)" 0

mon=$(refusal rt postgres delta -c "SELECT count(*) FROM openwop.pending_summary")
check "monitoring_shard_unavailable_is_08006: pending_summary with cluster B stopped" \
	"$(grep -c '^ERROR:  08006: shard_unavailable' <<<"$mon" || true) $(grep -cE "$work|\\.s\\.PGSQL" <<<"$mon" || true)" "1 0"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
