#!/usr/bin/env bash
# The router (openwop_router, PL/Proxy) over four shard databases, in two
# throwaway clusters of its own (unix sockets in a private directory):
# cluster A holds the router database and shards 0 and 1, cluster B shards 2
# and 3; PL/Proxy cluster openwop maps tenants to them by hashtext.
# - the router's openwop schema has the signatures of the shards' (every
#   function with an openwop_forward wrapper, and the administration and
#   monitoring the router sends to every shard), with the same defaults,
#   volatility, strictness and result columns;
# - the demo workflow, quorum and veto gates, tokens (minted on the router,
#   resolved by token through it), the inbox and a JWT request run through
#   the router for several tenants, and each tenant's rows are on exactly
#   the shard hashtext names, nowhere else;
# - a signing key added through the router is the same on every shard;
# - under concurrent resolvers, voters and whole runs through the router,
#   every shard keeps one winner per interrupt, gapless sequences and one
#   terminal event per run, the last;
# - identity: a caller on the router cannot forge the caller argument (not
#   even with an operator of its own ahead of pg_catalog, nor from a
#   SECURITY DEFINER function); a direct caller on a shard cannot pose as
#   forwarded; a forwarded caller cannot change its tenant;
# - refusals through the router carry the SQLSTATE, message and detail the
#   same call gets on its shard directly.
# Needs root (the clusters run as postgres) and PostgreSQL 15's binaries
# with openwop_interrupt, openwop_router and plproxy installed.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
throwaway_begin
work=$THROWAWAY
bg=""
cleanup() {
	[ -n "$bg" ] && kill $bg 2>/dev/null || true
	wait 2>/dev/null || true
	throwaway_end
}
trap cleanup EXIT
trap 'echo "router.sh: failed at line $LINENO" >&2' ERR
A=5821
B=5822
tenants="acme beta gamma delta"
. "$(dirname "$0")/../router_lib.sh"

# the shard of a tenant, as PL/Proxy picks it among 4 partitions
shard_of() { on $A router postgres -c "SELECT hashtext('$1') & 3"; }

# ---- the clusters
router_clusters_start 80

# roles, in each cluster (besides router_clusters_start's): a forwarder
# bound to one tenant, and the callers, who exist on both sides so that a
# call can be made through the router and directly alike
for port in $A $B; do
	on $port postgres postgres >/dev/null <<'SQL'
CREATE ROLE acme_forwarder LOGIN IN ROLE openwop_forwarder;
ALTER ROLE acme_forwarder SET openwop.bound_tenant = 'acme';
CREATE ROLE engine LOGIN;                              -- drives runs in any tenant
ALTER ROLE engine SET openwop.bound_tenant = '*';
GRANT openwop_token_issuer TO engine;                  -- and mints resolve tokens (decided on the router)
CREATE ROLE a1 LOGIN IN ROLE openwop_approver;         -- approvers in any tenant
CREATE ROLE a2 LOGIN IN ROLE openwop_approver;
CREATE ROLE a3 LOGIN IN ROLE openwop_approver;
ALTER ROLE a1 SET openwop.bound_tenant = '*';
ALTER ROLE a2 SET openwop.bound_tenant = '*';
ALTER ROLE a3 SET openwop.bound_tenant = '*';
CREATE ROLE mallory LOGIN IN ROLE openwop_approver;    -- an approver of acme only
ALTER ROLE mallory SET openwop.bound_tenant = 'acme';
CREATE ROLE web_user NOLOGIN IN ROLE openwop_approver; -- PostgREST's JWT role
CREATE ROLE authenticator LOGIN NOINHERIT IN ROLE web_user;
ALTER ROLE authenticator SET openwop.bound_tenant = '*';
SQL
done

# ---- the shards: what docs/scale-out.md tells the shard DBA to do
# new_shard PORT DB: a shard database, with the callers' grants
new_shard() {
	router_new_shard "$1" "$2" <<'SQL'
-- the callers' direct grants (for the comparisons), and the forwarder bound to acme
GRANT USAGE ON SCHEMA openwop TO engine, a1, a2, a3, mallory;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop TO engine, a1, a2, a3, mallory;
GRANT SELECT ON openwop.pending_interrupts TO a1, a2, a3, mallory;
GRANT USAGE ON SCHEMA openwop, openwop_forward TO acme_forwarder;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop, openwop_forward TO acme_forwarder;
SQL
}
for i in 0 1 2 3; do new_shard "${shard_port[$i]}" "${shard_db[$i]}"; done

# ---- the router: what docs/scale-out.md tells the router's DBA to do
router_new_router <<SQL
GRANT USAGE ON FOREIGN SERVER openwop TO engine, a1, a2, a3, mallory, web_user;
GRANT USAGE ON SCHEMA openwop, openwop_router TO engine, a1, a2, a3, mallory, web_user;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop, openwop_router TO engine, a1, a2, a3, mallory, web_user;
GRANT SELECT ON openwop.pending_interrupts TO a1, a2, a3, mallory, web_user;
-- the check's own helpers: an assertion, and a resolve that answers false when it loses
CREATE FUNCTION check_is(got text, want text, what text) RETURNS void LANGUAGE plpgsql AS \$\$
BEGIN
  IF got IS DISTINCT FROM want THEN
    RAISE EXCEPTION 'check failed: %: got %, want %', what, coalesce(got, 'NULL'), coalesce(want, 'NULL');
  END IF;
END \$\$;
CREATE FUNCTION check_fails(statement text, code text) RETURNS void LANGUAGE plpgsql AS \$\$
BEGIN
  EXECUTE statement;
  RAISE EXCEPTION 'check failed: % did not fail', statement;
EXCEPTION WHEN OTHERS THEN
  IF SQLSTATE <> code THEN
    RAISE EXCEPTION 'check failed: % failed with % (%), not %', statement, SQLSTATE, SQLERRM, code;
  END IF;
END \$\$;
CREATE FUNCTION check_try(run_id text, node_id text, answer jsonb) RETURNS text LANGUAGE plpgsql AS \$\$
BEGIN
  RETURN openwop.resolve_interrupt(run_id, node_id, answer) ->> 'status';
EXCEPTION WHEN SQLSTATE 'PT409' THEN
  RETURN 'lost';
END \$\$;
SQL
echo "the router and four shards are up (shards 0 and 1 beside the router, 2 and 3 in another cluster)"

# the tenants of the check cover the four shards
[ "$(for t in $tenants; do shard_of $t; done | sort -u | tr -d '\n')" = 0123 ]

# ---- 1. the same signatures
sig_router=$(on $A router postgres -c "
SELECT string_agg(format('%s(%s) %s %s %s %s', p.proname, pg_get_function_arguments(p.oid), pg_get_function_result(p.oid),
                         p.provolatile, p.proisstrict, p.proretset), E'\n' ORDER BY p.proname, pg_get_function_arguments(p.oid))
  FROM pg_proc p WHERE p.pronamespace = 'openwop'::regnamespace")
routed="'add_signing_key','retire_signing_key','add_group_member','remove_group_member','sweep','stats_reset'"
sig_shard=$(on $A shard0 postgres -c "
SELECT string_agg(format('%s(%s) %s %s %s %s', p.proname, pg_get_function_arguments(p.oid), pg_get_function_result(p.oid),
                         p.provolatile, p.proisstrict, p.proretset), E'\n' ORDER BY p.proname, pg_get_function_arguments(p.oid))
  FROM pg_proc p WHERE p.pronamespace = 'openwop'::regnamespace
   AND (p.proname IN (SELECT proname FROM pg_proc WHERE pronamespace = 'openwop_forward'::regnamespace)
        OR p.proname IN ($routed))")
if [ "$sig_router" != "$sig_shard" ]; then
	diff <(echo "$sig_shard") <(echo "$sig_router") >&2 || true
	echo "the router's openwop functions differ from the shards' (above: < shard, > router)" >&2
	exit 1
fi
views="'pending_interrupts','pending_summary','workers','stats'"
cols="SELECT string_agg(format('%s.%s %s', c.relname, a.attname, format_type(a.atttypid, a.atttypmod)), E'\n' ORDER BY c.relname, a.attnum)
        FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0
       WHERE c.relnamespace = 'openwop'::regnamespace AND c.relkind = 'v' AND c.relname IN ($views)"
[ "$(on $A router postgres -c "$cols")" = "$(on $A shard0 postgres -c "$cols")" ] ||
	{ echo "the router's views differ from the shards'" >&2; exit 1; }
n_fn=$(echo "$sig_router" | wc -l)
echo "the router's openwop schema: $n_fn functions and 4 views with the shards' signatures, defaults, volatility and columns"

# ---- 2. administration: one signing key on every shard
# with every statement logged on the shards, a key the router makes never shows there in clear
for port_ in $A $B; do on $port_ postgres postgres -c "ALTER SYSTEM SET log_statement = 'all'" -c "SELECT pg_reload_conf()" >/dev/null; done
sleep 0.5
[ "$(on $A router postgres -c "SELECT openwop.add_signing_key('router-key-1')")" = router-key-1 ]
for port_ in $A $B; do on $port_ postgres postgres -c "ALTER SYSTEM RESET log_statement" -c "SELECT pg_reload_conf()" >/dev/null; done
# each shard stores it encrypted under its passphrase (a salt of its own): the plain secrets agree
secrets=$(for i in 0 1 2 3; do sh $i postgres acme -c "CREATE EXTENSION IF NOT EXISTS pgcrypto" \
	-c "SELECT md5(pgp_sym_decrypt_bytea(secret, rtrim(pg_read_file(current_setting('openwop.key_encryption_key_file')), E'\n')))
	      FROM openwop.signing_keys WHERE kid = 'router-key-1' AND encrypted"; done | sort -u | wc -l)
[ "$secrets" = 1 ]
for i in 0 1 2 3; do [ "$(sh $i postgres acme -c "SELECT count(*) FROM openwop.signing_keys WHERE kid = 'router-key-1'")" = 1 ]; done
plain=$(sh 0 postgres acme -c "SELECT encode(pgp_sym_decrypt_bytea(secret, rtrim(pg_read_file(current_setting('openwop.key_encryption_key_file')), E'\n')), 'hex')
                                 FROM openwop.signing_keys WHERE kid = 'router-key-1'")
[ ${#plain} = 64 ] || { echo "router-key-1's secret on shard 0: [$plain]" >&2; exit 1; }
! grep -q -i "$plain" "$work/a.log" "$work/b.log" || { echo "a shard's log holds router-key-1's secret in clear" >&2; exit 1; }
echo "router_key_never_in_clear: add_signing_key through the router: one secret, made and sealed on the first shard, imported sealed by the others (no shard's log, every statement logged, holds it)"
for t in $tenants; do
	[ "$(on $A router postgres -c "SELECT openwop.add_group_member('finance', 'a2', '$t')")" = t ]
done
[ "$(rt postgres acme -c "SELECT openwop.add_group_member('finance', 'a3')")" = t ]
[ "$(rt postgres acme -c "SELECT openwop.remove_group_member('finance', 'a3')")" = t ]
[ "$(sh "$(shard_of acme)" postgres acme -c "SELECT count(*) FROM openwop.group_members WHERE tenant = 'acme'")" = 1 ]
echo "add_group_member and remove_group_member through the router: on the shard of the tenant named, or of the caller's"

# ---- 3. the flows, for each tenant
for t in $tenants; do
	rt engine "$t" -v t="$t" >/dev/null <<'SQL'
-- the demo workflow: a run with a definition, an approval with an
-- Idempotency-Key and its replay, the engine's recovery, completion
SELECT :'t' || '/demo-expense-00000001' AS r1 \gset
SELECT check_is(openwop.create_run('expense-report', jsonb_build_object('runId', :'r1',
         'definition', '{"nodes": [{"id": "fetch"}, {"id": "approve"}, {"id": "book"}],
                         "edges": [{"from": "fetch", "to": "approve"}, {"from": "approve", "to": "book"}]}'::jsonb)) ->> 'status', 'running', 'create_run');
SELECT openwop.start_node(:'r1', 'fetch');
SELECT openwop.complete_node(:'r1', 'fetch', '{"receipt": "r-77"}');
SELECT openwop.start_node(:'r1', 'approve');
SELECT check_is(openwop.interrupt(:'r1', 'approve', '{"kind": "approval", "data": {"artifactId": "e-1", "artifactType": "expense",
         "title": "Approve", "actions": ["accept", "reject"], "approversList": ["a1"]}}') ->> 'status', 'interrupted', 'interrupt');
SELECT check_is(openwop.run_snapshot(:'r1') ->> 'status', 'waiting-approval', 'waiting');
\c - a1
SET openwop.tenant = :'t';
SELECT check_is(openwop.resolve_interrupt(:'r1', 'approve', '{"action": "accept"}', 'demo-key-0001-00000000000000') ->> 'decision', 'granted', 'resolve');
SELECT check_is(openwop.resolve_interrupt(:'r1', 'approve', '{"action": "accept"}', 'demo-key-0001-00000000000000') ->> 'idempotentReplay', 'true', 'replay');
SELECT check_fails(format('SELECT openwop.resolve_interrupt(%L, %L, %L)', :'r1', 'approve', '{"action": "reject"}'), 'PT409');
SELECT check_fails(format('SELECT openwop.resolve_interrupt(%L, %L, %L, %L)', :'r1', 'approve', '{"action": "reject"}', 'demo-key-0001-00000000000000'), 'PT409');
\c - engine
SET openwop.tenant = :'t';
SELECT check_is(openwop.start_node(:'r1', 'approve') ->> 'recovered', 'true', 'recovered');
SELECT check_is(openwop.interrupt(:'r1', 'approve', '{"kind": "approval", "data": {"artifactId": "e-1", "artifactType": "expense",
         "title": "Approve", "actions": ["accept", "reject"], "approversList": ["a1"]}}') ->> 'status', 'resolved', 'replayed decision');
SELECT openwop.complete_node(:'r1', 'approve', '{"approved": true}');
SELECT openwop.start_node(:'r1', 'book');
SELECT openwop.complete_node(:'r1', 'book', '{"entry": 9001}');
SELECT check_is(openwop.complete_run(:'r1', '{"booked": 9001}') ->> 'status', 'completed', 'complete_run');
SELECT check_fails(format('SELECT openwop.cancel_run(%L)', :'r1'), 'PT409');
-- a second run waits for a clarification and is cancelled
SELECT :'t' || '/demo-expense-00000002' AS r2 \gset
SELECT openwop.create_run('expense-report', jsonb_build_object('runId', :'r2'));
SELECT openwop.start_node(:'r2', 'fetch');
SELECT openwop.interrupt(:'r2', 'fetch', '{"kind": "clarification", "data": {"questions": [{"id": "cc", "question": "Which cost centre?",
         "schema": {"type": "string", "pattern": "^CC-[0-9]{4}$"}}]}}');
\c - a2
SET openwop.tenant = :'t';
SELECT check_fails(format('SELECT openwop.resolve_interrupt(%L, %L, %L)', :'r2', 'fetch', '{"cc": "marketing"}'), 'PT400');
\c - engine
SET openwop.tenant = :'t';
SELECT check_is(openwop.cancel_run(:'r2', 'duplicate') ->> 'status', 'cancelled', 'cancel_run');
SELECT check_is((SELECT count(*) FROM openwop.events(:'r1'))::text, '12', 'events of the completed run');
-- a 2-of-3 gate (a named approver, a group member, anyone) and a vetoed gate
SELECT :'t' || '/demo-quorum-00000001' AS q \gset
SELECT openwop.create_run('po', jsonb_build_object('runId', :'q'));
SELECT openwop.start_node(:'q', 'sign-off');
SELECT openwop.interrupt(:'q', 'sign-off', '{"kind": "approval", "data": {"artifactId": "po", "artifactType": "po", "title": "Buy",
         "actions": ["accept", "reject"], "requiredApprovals": 2, "approversList": ["a1"], "approverGroupRefs": ["finance"]}}');
SELECT :'t' || '/demo-veto-0000000001' AS v \gset
SELECT openwop.create_run('po', jsonb_build_object('runId', :'v'));
SELECT openwop.start_node(:'v', 'sign-off');
SELECT openwop.interrupt(:'v', 'sign-off', '{"kind": "approval", "data": {"artifactId": "po", "artifactType": "po", "title": "Yacht",
         "actions": ["accept", "reject"], "requiredApprovals": 3}}');
-- a gate answered by token: minted on the router, inspected and resolved through it
SELECT :'t' || '/demo-token-000000001' AS k \gset
SELECT openwop.create_run('po', jsonb_build_object('runId', :'k'));
SELECT openwop.start_node(:'k', 'sign-off');
SELECT openwop.interrupt(:'k', 'sign-off', '{"kind": "approval", "data": {"artifactId": "po", "artifactType": "po", "title": "Lease",
         "actions": ["accept", "reject"]}}') #>> '{metadata,interrupt,id}' AS kid \gset
SELECT openwop.mint_interrupt_token(:'kid') AS token \gset
SELECT openwop.mint_interrupt_token(:'kid', 'inspect') AS inspect_token \gset
SELECT check_is(openwop_router.token_tenant(:'token'), :'t', 'the token''s tenant');
SELECT check_is(openwop.verify_interrupt_token(:'token') ->> 'interruptId', :'kid', 'verify');
SELECT check_is(openwop.inspect_interrupt(:'inspect_token') ->> 'kind', 'approval', 'inspect');
SELECT check_fails(format('SELECT openwop.resolve_interrupt_by_token(%L, %L)', :'inspect_token', '{"action": "accept"}'), 'PT403');
-- the inbox of an approver: what it may decide in its tenant, from the shards
\c - a1
SET openwop.tenant = :'t';
SELECT check_is((SELECT string_agg(run_id, ',' ORDER BY requested_at, interrupt_id) FROM openwop.pending_interrupts),
                concat_ws(',', :'q', :'v', :'k'), 'the inbox of a1');
\c - a3
SET openwop.tenant = :'t';
SELECT check_is((SELECT string_agg(run_id, ',' ORDER BY requested_at, interrupt_id) FROM openwop.pending_interrupts),
                concat_ws(',', :'v', :'k'), 'the inbox of a3 (not eligible on the quorum gate)');
-- quorum: a1 counts, a3 may not vote, a2 (group finance) decides
\c - a1
SET openwop.tenant = :'t';
SELECT check_is(openwop.resolve_interrupt(:'q', 'sign-off', '{"action": "accept"}') ->> 'status', 'pending', 'first of two votes');
\c - a3
SET openwop.tenant = :'t';
SELECT check_fails(format('SELECT openwop.resolve_interrupt(%L, %L, %L)', :'q', 'sign-off', '{"action": "accept"}'), 'PT403');
-- veto: one reject fails the run
SELECT check_is(openwop.resolve_interrupt(:'v', 'sign-off', '{"action": "reject"}') ->> 'decision', 'rejected', 'veto');
\c - a2
SET openwop.tenant = :'t';
SELECT check_is(openwop.resolve_interrupt(:'q', 'sign-off', '{"action": "accept"}') ->> 'decision', 'granted', 'quorum reached');
\c - engine
SET openwop.tenant = :'t';
SELECT check_is(openwop.run_snapshot(:'v') ->> 'status', 'failed', 'the vetoed run');
-- the token resolves once, as its holder
SELECT check_is(openwop.resolve_interrupt_by_token(:'token', '{"action": "accept"}') ->> 'decision', 'granted', 'by token');
SELECT check_fails(format('SELECT openwop.resolve_interrupt_by_token(%L, %L)', :'token', '{"action": "accept"}'), 'PT409');
SQL
	# a PostgREST request through the router: the JWT subject is the caller the shard sees
	caller=$(on $A router authenticator <<SQL
BEGIN;
SET LOCAL ROLE web_user;
SET LOCAL request.jwt.claims = '{"sub": "manager", "iss": "https://idp.example.org", "tenant": "$t", "scope": "approvals:respond"}';
SELECT openwop.current_caller() - 'scopes';
COMMIT;
SQL
)
	[ "$caller" = "{\"source\": \"openwop.forwarded_caller\", \"tenant\": \"$t\", \"subject\": {\"kind\": \"user\", \"lane\": \"oauth2\", \"issuer\": \"https://idp.example.org\", \"tenant\": \"$t\", \"subjectId\": \"manager\"}, \"forwardedBy\": \"openwop_router\"}" ] ||
		{ echo "a JWT request through the router: the shard saw $caller" >&2; exit 1; }
	echo "tenant $t (shard $(shard_of "$t")): the demo workflow, quorum, veto, a token minted and resolved, the inbox and a JWT request through the router"
done

# a call through the router is a transaction of its own on the shard: the
# router's ROLLBACK does not undo it (docs/scale-out.md, "Transactions")
rt engine acme >/dev/null <<'SQL'
BEGIN;
SELECT openwop.create_run('autocommit', '{"runId": "acme/rolled-back-here-0001"}');
ROLLBACK;
SQL
[ "$(rt engine acme -c "SELECT openwop.run_snapshot('acme/rolled-back-here-0001') ->> 'status'")" = running ]
echo "a router transaction rolled back leaves the shard's call committed (each call is its own transaction there)"

# ---- 4. concurrent load through the router
# per tenant: 20 one-vote gates and 10 two-of-three gates, which three
# approvers race to answer (in the same order), 10 gates one of them races
# a cancel of the run for, and 10 whole runs each of two engines drives
for t in $tenants; do
	rt engine "$t" -v t="$t" >/dev/null <<'SQL'
DO $$
DECLARE t text := current_setting('openwop.tenant'); run text;
BEGIN
  FOR i IN 1..40 LOOP
    run := format('%s/race-%s-%s', t, CASE WHEN i <= 20 THEN 'single' WHEN i <= 30 THEN 'quorum' ELSE 'cancel' END,
                  lpad(i::text, 10, '0'));
    PERFORM openwop.create_run('race', jsonb_build_object('runId', run));
    PERFORM openwop.start_node(run, 'gate');
    PERFORM openwop.interrupt(run, 'gate', jsonb_build_object('kind', 'approval', 'data', jsonb_build_object(
        'artifactId', 'a', 'artifactType', 'doc', 'title', 'race', 'actions', jsonb_build_array('accept', 'reject'),
        'requiredApprovals', CASE WHEN i BETWEEN 21 AND 30 THEN 2 ELSE 1 END)));
  END LOOP;
END $$;
SQL
done
# RACE_OUT: one line per answer, "<tenant> <gate number> <status>"
resolver() {
	local who=$1 from=$2 to=$3
	for t in $tenants; do
		rt "$who" "$t" -c "SELECT format('%s %s %s', '$t', i, check_try(format('%s/race-%s-%s', '$t',
		        CASE WHEN i <= 20 THEN 'single' WHEN i <= 30 THEN 'quorum' ELSE 'cancel' END, lpad(i::text, 10, '0')),
		        'gate', '{\"action\": \"accept\"}'))
		      FROM generate_series($from, $to) i"
	done
}
engine_runs() {
	local who=$1 t
	for t in $tenants; do
		rt "$who" "$t" -v who="$who" >/dev/null <<'SQL'
DO $$
DECLARE run text; visit text;
BEGIN
  FOR i IN 1..10 LOOP
    run := openwop.create_run('cycle') ->> 'runId';
    PERFORM openwop.start_node(run, 'step');
    PERFORM openwop.interrupt(run, 'step', '{"kind": "clarification", "data": {"questions": [{"id": "q", "question": "?"}]}}');
    PERFORM openwop.resolve_interrupt(run, 'step', '{"q": "yes"}');
    PERFORM openwop.complete_node(run, 'step', '{}');
    PERFORM openwop.complete_run(run, '{}');
  END LOOP;
END $$;
SQL
	done
}
canceller() {
	for t in $tenants; do
		rt engine "$t" -c "SELECT count(*) FROM generate_series(31, 40) i,
		        LATERAL openwop.cancel_run(format('%s/race-cancel-%s', '$t', lpad(i::text, 10, '0')), 'race') c" >/dev/null
	done
}
resolver a1 1 40 >"$work/race-a1" &
bg="$bg $!"
resolver a2 1 30 >"$work/race-a2" &
bg="$bg $!"
resolver a3 1 30 >"$work/race-a3" &
bg="$bg $!"
engine_runs a1 &
bg="$bg $!"
engine_runs a2 &
bg="$bg $!"
canceller &
bg="$bg $!"
for p in $bg; do wait "$p"; done
bg=""
cat "$work"/race-a* >"$work/race"
# every one-vote gate: one "resolved", the others lost; every quorum gate: one
# vote left pending, one resolved, one lost
for t in $tenants; do
	single=$(awk -v t="$t" '$1 == t && $2 <= 20' "$work/race" | sort -k3 | awk '{print $3}' | uniq -c | awk '{printf "%s:%s ", $2, $1}')
	quorum=$(awk -v t="$t" '$1 == t && $2 > 20 && $2 <= 30' "$work/race" | sort -k3 | awk '{print $3}' | uniq -c | awk '{printf "%s:%s ", $2, $1}')
	[ "$single" = "lost:40 resolved:20 " ] || { echo "tenant $t, one-vote gates raced by three: $single" >&2; exit 1; }
	[ "$quorum" = "lost:10 pending:10 resolved:10 " ] || { echo "tenant $t, quorum gates raced by three: $quorum" >&2; exit 1; }
done
echo "through the router, three approvers raced $(wc -l <"$work/race") answers: one winner per gate, quorum gates decided once each"

# the invariants, on each shard
for i in 0 1 2 3; do
	bad=$(sh $i postgres acme <<'SQL'
WITH resolved AS (
  SELECT tenant, payload ->> 'interruptId' AS interrupt_id, count(*) AS n
    FROM openwop.events WHERE type = 'interrupt.resolved' GROUP BY 1, 2),
runs AS (
  SELECT tenant, run_id, min(sequence) AS lo, max(sequence) AS hi, count(*) AS n,
         count(*) FILTER (WHERE type IN ('run.completed', 'run.failed', 'run.cancelled')) AS terminal,
         max(sequence) FILTER (WHERE type IN ('run.completed', 'run.failed', 'run.cancelled')) AS terminal_at
    FROM openwop.events GROUP BY 1, 2)
SELECT concat_ws(' ',
  (SELECT 'two winners: ' || string_agg(interrupt_id, ',') FROM resolved WHERE n > 1),
  (SELECT 'resolved without its event: ' || string_agg(i.interrupt_id, ',') FROM openwop.interrupts i
    LEFT JOIN resolved r USING (tenant, interrupt_id) WHERE i.status = 'resolved' AND r.n IS NULL),
  (SELECT 'gaps: ' || string_agg(run_id, ',') FROM runs WHERE lo <> 0 OR hi <> n - 1),
  (SELECT 'terminal events: ' || string_agg(run_id, ',') FROM runs WHERE terminal > 1 OR (terminal = 1 AND terminal_at <> hi)),
  (SELECT 'ended without one: ' || string_agg(r.run_id, ',') FROM openwop.runs r JOIN runs e USING (tenant, run_id)
    WHERE r.status IN ('completed', 'failed', 'cancelled') AND e.terminal <> 1),
  (SELECT 'quorum votes: ' || string_agg(i.interrupt_id, ',') FROM openwop.interrupts i
    WHERE i.run_id LIKE '%/race-quorum-%' AND (SELECT count(*) FROM openwop.votes v
      WHERE v.tenant = i.tenant AND v.interrupt_id = i.interrupt_id) <> 2))
SQL
)
	[ -z "$bad" ] || { echo "shard $i: $bad" >&2; exit 1; }
done
runs=0
for i in 0 1 2 3; do runs=$((runs + $(sh $i postgres acme -c "SELECT count(*) FROM openwop.runs"))); done
echo "on every shard: one winner per interrupt, gapless sequences, one terminal event per ended run, the last ($runs runs)"

# ---- 5. each tenant's rows are on its shard, and on no other
for i in 0 1 2 3; do
	found=$(sh $i postgres acme -c "SELECT string_agg(format('SELECT tenant FROM openwop.%I', c.table_name), ' UNION ')
	          FROM information_schema.columns c JOIN pg_tables p ON p.schemaname = c.table_schema AND p.tablename = c.table_name
	         WHERE c.table_schema = 'openwop' AND c.column_name = 'tenant'")
	have=$(sh $i postgres acme -c "SELECT string_agg(tenant, ' ' ORDER BY tenant) FROM ($found) x")
	want=$(for t in $tenants; do if [ "$(shard_of "$t")" = "$i" ]; then echo "$t"; fi; done | sort | paste -sd' ')
	[ "$have" = "$want" ] || { echo "shard $i holds the rows of [$have], not [$want]" >&2; exit 1; }
done
echo "every tenant's rows (runs, events, interrupts, votes, idempotency records, groups, ...) are on its shard only"

# ---- 6. identity
# fails SQLSTATE CMD...: CMD must fail with SQLSTATE (psql's verbose error line)
fails() {
	local code=$1 out
	shift
	if out=$("$@" -v VERBOSITY=verbose 2>&1); then
		echo "this succeeded, and should have failed with $code: $*" >&2; return 1
	fi
	grep -q "^ERROR:  $code:" <<<"$out" || { echo "not $code: $*" >&2; echo "$out" >&2; return 1; }
}
acme_caller=$(rt mallory acme -c "SELECT openwop_router.caller()")
beta_run=beta/demo-expense-00000001
# a caller on the router cannot forge the caller argument: another tenant, a scope it lacks
fails 42501 rt mallory acme -c "SELECT openwop_router.run_snapshot(jsonb_set(openwop_router.caller(), '{tenant}', '\"beta\"'), '$beta_run')"
fails 42501 rt engine acme -c "SELECT openwop_router.resolve_interrupt(jsonb_set(openwop_router.caller(), '{scopes}', '[\"approvals:respond\"]'),
                                 'acme/race-cancel-0000000040', 'gate', '{\"action\": \"accept\"}', NULL)"
fails 42501 rt engine acme -c "SELECT * FROM openwop_router.pending_interrupts(jsonb_set(openwop_router.caller(), '{subjectId}', '\"a1\"'))"
fails 42501 rt engine acme -c "SELECT openwop_router.current_caller(NULL)"
# ... nor with an = of its own ahead of pg_catalog's
on $A router postgres -c "CREATE SCHEMA evil AUTHORIZATION engine" >/dev/null
rt engine acme >/dev/null <<'SQL'
CREATE FUNCTION evil.always(jsonb, jsonb) RETURNS boolean LANGUAGE sql AS 'SELECT true';
CREATE OPERATOR evil.= (LEFTARG = jsonb, RIGHTARG = jsonb, FUNCTION = evil.always);
CREATE FUNCTION evil.definer() RETURNS jsonb LANGUAGE sql SECURITY DEFINER AS 'SELECT openwop.current_caller()';
CREATE FUNCTION evil.definer_forged() RETURNS jsonb LANGUAGE sql SECURITY DEFINER
    AS $$SELECT openwop_router.current_caller('{"issuer": "urn:openwop-interrupt:session", "subjectId": "postgres", "tenant": "acme", "lane": "session", "kind": "user", "scopes": []}')$$;
SQL
fails 42501 rt engine acme -c "SET search_path = evil, pg_catalog" \
	-c "SELECT openwop_router.run_snapshot(jsonb_set(openwop_router.caller(), '{tenant}', '\"beta\"'), '$beta_run')"
# ... nor from a SECURITY DEFINER function: no caller is told there
fails PT403 rt engine acme -c "SELECT evil.definer()"
fails PT403 rt engine acme -c "SELECT evil.definer_forged()"
echo "on the router: a forged caller argument is refused (42501), an = of the caller's own ahead of pg_catalog changes nothing, SECURITY DEFINER code has no caller"

# a direct caller on a shard cannot pose as forwarded: not by SET, not in the
# forwarding functions, not at connection
s=$(shard_of acme)
sh "$s" postgres acme -c "GRANT USAGE ON SCHEMA openwop_forward TO engine" -c "GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop_forward TO engine" >/dev/null
fails 42501 sh "$s" engine acme -c "SET openwop.forwarded_caller = '$acme_caller'"
fails 42501 sh "$s" engine acme -c "SELECT openwop_forward.current_caller('$acme_caller')"
if PGOPTIONS="-c openwop.forwarded_caller=$acme_caller" on "${shard_port[$s]}" "${shard_db[$s]}" engine \
	-c "SELECT openwop.current_caller()" >/dev/null 2>&1; then
	echo "a forwarded caller given at connection was believed" >&2; exit 1
fi
[ "$(sh "$s" engine acme -c "SELECT openwop.current_caller() #>> '{subject,subjectId}'")" = engine ]
echo "on a shard: a session that is not a forwarder cannot set a forwarded caller (SET, openwop_forward, connection options)"

# a forwarded caller cannot change its tenant: not on the router (its
# binding), not by an id of another tenant, not through the forwarder's own
# openwop.tenant, and a forwarder bound to one tenant forwards no other
fails PT403 rt mallory beta -c "SELECT openwop.run_snapshot('$beta_run')"
fails PT403 rt mallory acme -c "SELECT openwop.run_snapshot('$beta_run')"
fails PT403 rt mallory acme -c "SELECT openwop.resolve_interrupt('beta/race-cancel-0000000040', 'gate', '{\"action\": \"accept\"}')"
fails PT403 sh "$s" openwop_router beta -c "SELECT openwop_forward.run_snapshot('$acme_caller', '$beta_run')"
[ "$(sh "$s" openwop_router beta -c "SELECT openwop_forward.current_caller('$acme_caller') ->> 'tenant'")" = acme ]
fails PT403 sh "$s" acme_forwarder acme -c "SELECT openwop_forward.current_caller(jsonb_set('$acme_caller', '{tenant}', '\"beta\"'))"
[ "$(sh "$s" acme_forwarder acme -c "SELECT openwop_forward.current_caller('$acme_caller') ->> 'forwardedBy'")" = acme_forwarder ]
# after a forwarded call, the router's login is itself again
[ "$(sh "$s" openwop_router acme -c "SELECT openwop_forward.current_caller('$acme_caller') IS NOT NULL" \
	-c "SELECT openwop.current_caller() #>> '{subject,subjectId}'" | tail -n 1)" = openwop_router ]
echo "a forwarded caller keeps its tenant: the router's binding, another tenant's ids, the forwarder's openwop.tenant and a forwarder bound to acme all refuse"

# ---- 7. refusals through the router are the shard's own
# refusal USER SQL: the ERROR and DETAIL lines of SQL, as USER in tenant acme
refusal() { "$@" -v VERBOSITY=verbose 2>&1 | grep -E '^(ERROR|DETAIL):' || true; }
n=0
while IFS='|' read -r user call; do
	[ -n "$user" ] || continue
	via=$(refusal rt "$user" acme -c "SELECT $call")
	direct=$(refusal sh "$s" "$user" acme -c "SELECT $call")
	[ -n "$direct" ] || { echo "no refusal directly: $call" >&2; exit 1; }
	[ "$via" = "$direct" ] || { printf 'through the router:\n%s\ndirectly:\n%s\n' "$via" "$direct" >&2; exit 1; }
	n=$((n + 1))
done <<'SQL'
a1|openwop.resolve_interrupt('acme/race-single-0000000001', 'gate', '{"action": "accept"}')
a1|openwop.resolve_interrupt('acme/demo-expense-00000001', 'approve', '{"action": "accept"}')
a1|openwop.resolve_interrupt('acme/demo-expense-00000001', 'approve', '{"action": "reject"}', 'demo-key-0001-00000000000000')
a1|openwop.resolve_interrupt('acme/demo-expense-00000002', 'fetch', '{"cc": "CC-0042"}')
engine|openwop.resolve_interrupt('acme/race-cancel-0000000040', 'gate', '{"action": "accept"}')
a1|openwop.run_snapshot('acme/no-such-run-0000000001')
a1|openwop.run_snapshot('beta/demo-expense-00000001')
a1|openwop.run_snapshot('not-a-run-id')
a1|openwop.events('acme/demo-expense-00000001', -1, 0)
a1|openwop.resolve_interrupt_by_token('ow2.hs256.router-key-1.e30.00', '{"action": "accept"}')
a1|openwop.inspect_interrupt('v1.token')
a1|openwop.verify_interrupt_token(NULL)
engine|openwop.create_run('x', '{"runId": "acme/demo-expense-00000001"}')
engine|openwop.create_run('x', '{"tenant": "beta"}')
engine|openwop.create_run('x', '{"callbackUrl": "https://example.org/cb"}')
engine|openwop.interrupt('acme/race-cancel-0000000040', 'gate', '{"kind": "bogus"}')
engine|openwop.cancel_run('acme/demo-expense-00000001')
engine|openwop.complete_node('acme/demo-expense-00000001', 'nowhere')
engine|openwop.fork_run('acme/demo-expense-00000001', '{"mode": "branch"}')
engine|openwop.json_schema_errors('{"type": "no-such-type"}', '1')
engine|openwop.mint_interrupt_token('acme/no-such-interrupt-000001', 'inspect')
engine|openwop.flowdrop_interrupt('beta/no-such-interrupt-000001')
engine|openwop.record_agent_decision('acme/demo-expense-00000001', 'book', 'agent', 2.0)
engine|openwop.confirm_credential('acme/demo-expense-00000001', 'book')
engine|openwop.add_signing_key('k')
engine|openwop.retire_signing_key('router-key-1')
a1|openwop.add_group_member('finance', 'a1')
SQL
echo "$n refusals through the router have the SQLSTATE, message and detail of the same call on the shard"

# the inbox through the router is the shard's, for every tenant
for t in $tenants; do
	via=$(rt a1 "$t" -c "SELECT string_agg(interrupt_id, ',' ORDER BY requested_at, interrupt_id) FROM openwop.pending_interrupts")
	direct=$(sh "$(shard_of "$t")" a1 "$t" -c "SELECT string_agg(interrupt_id, ',' ORDER BY requested_at, interrupt_id) FROM openwop.pending_interrupts")
	[ "$via" = "$direct" ] || { echo "tenant $t: the inbox through the router [$via], on its shard [$direct]" >&2; exit 1; }
done
echo "the inbox through the router is the shard's, tenant by tenant"

# the grants docs/scale-out.md lists for an approver are enough, and needed
on $A router postgres >/dev/null <<'SQL'
CREATE ROLE minimal LOGIN IN ROLE openwop_approver;
ALTER ROLE minimal SET openwop.bound_tenant = 'acme';
GRANT USAGE ON FOREIGN SERVER openwop TO minimal;
GRANT USAGE ON SCHEMA openwop, openwop_router TO minimal;
GRANT EXECUTE ON FUNCTION openwop.resolve_interrupt(text, text, jsonb, text),
                          openwop_router.resolve_interrupt(jsonb, text, text, jsonb, text),
                          openwop_router.inbox(),
                          openwop_router.pending_interrupts(jsonb) TO minimal;
GRANT SELECT ON openwop.pending_interrupts TO minimal;
SQL
rt engine acme >/dev/null <<'SQL'
SELECT openwop.create_run('grants', '{"runId": "acme/minimal-grants-000001"}');
SELECT openwop.start_node('acme/minimal-grants-000001', 'gate');
SELECT openwop.interrupt('acme/minimal-grants-000001', 'gate', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc", "title": "T", "actions": ["accept"]}}');
SQL
[ "$(rt minimal acme -c "SELECT count(*) FROM openwop.pending_interrupts WHERE run_id = 'acme/minimal-grants-000001'")" = 1 ]
[ "$(rt minimal acme -c "SELECT openwop.resolve_interrupt('acme/minimal-grants-000001', 'gate', '{\"action\": \"accept\"}') ->> 'decision'")" = granted ]
fails 42501 rt minimal acme -c "SELECT openwop.run_snapshot('acme/minimal-grants-000001')"
echo "an approver with the grants docs/scale-out.md lists resolves and reads its inbox through the router, and calls nothing else"

# ---- 8. a tenant's rows moved to another shard database, as docs/scale-out.md says
# acme is the only tenant of its shard here: its rows go to a new database
# (the signing keys with them), the partition is pointed there, and the
# router finds acme's runs, inbox and new work in the new place only
s=$(shard_of acme)
inbox=$(rt a1 acme -c "SELECT string_agg(interrupt_id, ',' ORDER BY requested_at, interrupt_id) FROM openwop.pending_interrupts")
new_shard $B shard_new
tables=$(sh "$s" postgres acme -c "SELECT string_agg(c.table_name, ' ' ORDER BY c.table_name)
           FROM information_schema.columns c JOIN pg_tables p ON p.schemaname = c.table_schema AND p.tablename = c.table_name
          WHERE c.table_schema = 'openwop' AND c.column_name = 'tenant'")
for table in $tables; do
	sh "$s" postgres acme -c "\\copy (SELECT * FROM openwop.$table WHERE tenant = 'acme') TO STDOUT" |
		on $B shard_new postgres -c "\\copy openwop.$table FROM STDIN"
done
sh "$s" postgres acme -c "\\copy openwop.signing_keys TO STDOUT" | on $B shard_new postgres -c "TRUNCATE openwop.signing_keys" -c "\\copy openwop.signing_keys FROM STDIN"
{
	echo "BEGIN;"
	echo "ALTER TABLE openwop.events DISABLE TRIGGER events_append_only_row;"
	for table in $tables; do echo "DELETE FROM openwop.$table WHERE tenant = 'acme';"; done
	echo "ALTER TABLE openwop.events ENABLE ALWAYS TRIGGER events_append_only_row;"
	echo "COMMIT;"
} | sh "$s" postgres acme >/dev/null
on $A router postgres -c "ALTER SERVER openwop OPTIONS (SET p$s 'host=$work port=$B dbname=shard_new')" >/dev/null
[ "$(rt a1 acme -c "SELECT openwop.run_snapshot('acme/demo-expense-00000001') ->> 'status'")" = completed ]
[ "$(rt a1 acme -c "SELECT count(*) FROM openwop.events('acme/demo-expense-00000001')")" = 12 ]
[ "$(rt a1 acme -c "SELECT string_agg(interrupt_id, ',' ORDER BY requested_at, interrupt_id) FROM openwop.pending_interrupts")" = "$inbox" ]
rt engine acme >/dev/null <<'SQL'
SELECT openwop.create_run('moved', '{"runId": "acme/after-the-move-000001"}');
SELECT openwop.start_node('acme/after-the-move-000001', 'gate');
SELECT openwop.interrupt('acme/after-the-move-000001', 'gate', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc", "title": "T", "actions": ["accept"]}}');
SQL
[ "$(rt a1 acme -c "SELECT openwop.resolve_interrupt('acme/after-the-move-000001', 'gate', '{\"action\": \"accept\"}') ->> 'decision'")" = granted ]
[ "$(on $B shard_new postgres -c "SELECT count(*) FROM openwop.runs WHERE run_id = 'acme/after-the-move-000001'")" = 1 ]
[ "$(sh "$s" postgres acme -c "SELECT count(*) FROM openwop.runs")" = 0 ]
echo "acme's rows moved to a new shard database: through the router its runs, events and inbox are there, and its new work too"

# ---- 9. a shard down: its tenants' calls fail, the others' do not; a fan-out fails
as_pg "$PGBIN/pg_ctl -D $work/b -m fast stop" >/dev/null
[ "$(rt engine delta -c "SELECT openwop.run_snapshot('delta/demo-expense-00000001') ->> 'status'")" = completed ]
[ "$(rt engine gamma -c "SELECT openwop.run_snapshot('gamma/demo-expense-00000001') ->> 'status'")" = completed ]
down=$(rt engine beta -v VERBOSITY=verbose -c "SELECT openwop.run_snapshot('beta/demo-expense-00000001')" 2>&1 || true)
grep -q '^ERROR:  08006: shard_unavailable' <<<"$down" || { echo "a call for a tenant of a stopped shard: $down" >&2; exit 1; }
[ -n "$(rt a1 delta -c "SELECT count(*) FROM openwop.pending_interrupts")" ]
down=$(rt postgres delta -v VERBOSITY=verbose -c "SELECT count(*) FROM openwop.pending_summary" 2>&1 || true)
grep -q '^ERROR:' <<<"$down" || { echo "pending_summary with a shard stopped: $down" >&2; exit 1; }
echo "with shards 2 and 3 stopped: their tenants' calls fail (08006 shard_unavailable), the other tenants' are served (their inbox too), a fan-out fails"
echo "router checks passed"
