#!/usr/bin/env bash
# ALTER EXTENSION openwop_interrupt UPDATE from every released version to
# the newest: data recorded by 0.1.0 (principals as bare strings) keeps
# working and is read with OpenWOP's legacy subject; the updated catalog
# (tables, columns, indexes, constraints, functions, triggers, grants,
# comments, dumped tables) is the same as a fresh install of the newest.
# Needs the cluster test/run starts.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
up=openwop_upgrade
fresh=openwop_fresh
out=$(mktemp -d)
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d $up -c "SET openwop.tenant = 'acme'" -c "$1" | tail -n 1; }
trap 'rm -rf "$out"; dropdb --if-exists $up; dropdb --if-exists $fresh' EXIT
dropdb --if-exists $up
dropdb --if-exists $fresh
createdb $up
createdb $fresh
make_login_approver $up
newest=$(sed -n "s/^default_version = '\(.*\)'/\1/p" openwop_interrupt.control)

# the re-entry key of the gate, as the newest derives it (keys never change across versions)
psql -X -q -v ON_ERROR_STOP=1 -d $fresh -c "CREATE EXTENSION openwop_interrupt" >/dev/null
key=$(psql -X -A -t -q -v ON_ERROR_STOP=1 -d $fresh -c "SET openwop.tenant = 'acme'" \
	-c "SELECT openwop.create_run('legacy', '{\"runId\": \"acme/upgrade-run-000001\"}')" \
	-c "SELECT openwop.start_node('acme/upgrade-run-000001', 'gate')" \
	-c "SELECT openwop.interrupt('acme/upgrade-run-000001', 'gate', '{\"kind\": \"approval\", \"data\": {\"artifactId\": \"a\", \"artifactType\": \"doc\", \"title\": \"T\", \"actions\": [\"accept\"]}}') ->> 'key'" | tail -n 1)
psql -X -q -v ON_ERROR_STOP=1 -d $fresh -c "DROP EXTENSION openwop_interrupt" >/dev/null

# what 0.1.0 recorded for a run with a resolved one-vote gate, a counted
# vote on a quorum gate and an idempotency record (written as 0.1.0 wrote them)
psql -X -q -v ON_ERROR_STOP=1 -v key="$key" -d $up >/dev/null <<'SQL'
CREATE EXTENSION openwop_interrupt VERSION '0.1.0';
INSERT INTO openwop.runs (tenant, run_id, workflow_id, status, owner_principal, event_prefix, next_sequence)
VALUES ('acme', 'acme/upgrade-run-000001', 'legacy', 'running', 'alice', 'upgradeprefix01', 5);
INSERT INTO openwop.node_executions (tenant, run_id, node_id, visit, type_id, status)
VALUES ('acme', 'acme/upgrade-run-000001', 'gate', 0, 'x.y', 'pending'),
       ('acme', 'acme/upgrade-run-000001', 'quorum', 0, 'x.y', 'interrupted');
INSERT INTO openwop.events (tenant, run_id, sequence, type, node_id, payload) VALUES
  ('acme', 'acme/upgrade-run-000001', 0, 'run.started', NULL, '{"workflowId": "legacy"}'),
  ('acme', 'acme/upgrade-run-000001', 1, 'interrupt.requested', 'gate', jsonb_build_object('kind', 'approval', 'key', :'key', 'data', '{}'::jsonb)),
  ('acme', 'acme/upgrade-run-000001', 2, 'interrupt.resolved', 'gate',
   '{"nodeId": "gate", "interruptId": "acme/upgrade-int-00000001", "kind": "approval", "resolvedBy": {"id": "bob"},
     "decision": "granted", "action": "accept", "resumeValue": {"action": "accept", "decidedAt": "2026-11-01T00:00:00.000Z"}}'),
  ('acme', 'acme/upgrade-run-000001', 3, 'node.resumed', 'gate', '{"nodeId": "gate", "interruptId": "acme/upgrade-int-00000001"}'),
  ('acme', 'acme/upgrade-run-000001', 4, 'interrupt.requested', 'quorum', '{"kind": "approval", "key": "k1.b", "data": {}}');
INSERT INTO openwop.interrupts (tenant, interrupt_id, run_id, root_run_id, node_id, visit, ordinal, key, kind, payload,
                                status, requested_sequence, resolved_sequence, resume_value, decision, action, resolved_by)
VALUES ('acme', 'acme/upgrade-int-00000001', 'acme/upgrade-run-000001', 'acme/upgrade-run-000001', 'gate', 0, 0, :'key',
        'approval', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc", "title": "T", "actions": ["accept"]}}',
        'resolved', 1, 2, '{"action": "accept"}', 'granted', 'accept', 'bob'),
       ('acme', 'acme/upgrade-int-00000002', 'acme/upgrade-run-000001', 'acme/upgrade-run-000001', 'quorum', 0, 0, 'k1.b',
        'approval', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc", "title": "T", "actions": ["accept"], "requiredApprovals": 2}}',
        'pending', 4, NULL, NULL, NULL, NULL, NULL);
INSERT INTO openwop.votes (tenant, interrupt_id, voter, revision, action, resume_value, eligibility)
VALUES ('acme', 'acme/upgrade-int-00000002', 'carol', 1, 'accept', '{"action": "accept"}',
        '{"principal": "carol", "matched": ["any"], "groups": [], "roles": [], "override": false}');
INSERT INTO openwop.idempotency_keys (tenant, endpoint, key, request_digest, response, expires_at)
VALUES ('acme', 'resolveInterruptByRun', 'upgrade-key-00000000000001', 'x', '{"status": "resolved"}', now() + interval '1 day');
UPDATE openwop.runs SET status = 'waiting-approval', current_node_id = 'quorum';
SQL

psql -X -q -v ON_ERROR_STOP=1 -d $up -c "ALTER EXTENSION openwop_interrupt UPDATE" >/dev/null
[ "$(q "SELECT extversion FROM pg_extension WHERE extname = 'openwop_interrupt'")" = "$newest" ]
echo "0.1.0 updated to $newest"

# history is read with the legacy subject, stamped once
legacy='{"issuer": "urn:openwop:legacy", "subjectId": "%s", "tenant": "acme", "lane": "api-key", "kind": "user"}'
[ "$(q "SELECT openwop.run_snapshot('acme/upgrade-run-000001') #> '{owner,subject}' = '$(printf "$legacy" alice)'")" = t ]
[ "$(q "SELECT e #> '{payload,resolvedBy}' = '$(printf "$legacy" bob)' FROM openwop.events('acme/upgrade-run-000001') e WHERE e ->> 'type' = 'interrupt.resolved'")" = t ]
[ "$(q "SELECT resolved_by = '$(printf "$legacy" bob)' FROM openwop.interrupts WHERE interrupt_id = 'acme/upgrade-int-00000001'")" = t ]
[ "$(q "SELECT voter_subject = '$(printf "$legacy" carol)' FROM openwop.votes")" = t ]
[ "$(q "SELECT openwop.interrupt('acme/upgrade-run-000001', 'gate', payload) -> 'resolvedBy' = '$(printf "$legacy" bob)'
          FROM openwop.interrupts WHERE interrupt_id = 'acme/upgrade-int-00000001'")" = t ]
echo "owner, resolvedBy (log, row and replay) and voters of 0.1.0 read as legacy subjects"

# it keeps working: the 0.1.0 vote still counts, a new vote decides the quorum gate
[ "$(q "SELECT openwop.resolve_interrupt('acme/upgrade-run-000001', 'quorum', '{\"action\": \"accept\"}') ->> 'decision'")" = granted ]
[ "$(q "SELECT count(DISTINCT voter) FROM openwop.votes")" = 2 ]
# an idempotency record of 0.1.0 names no subject: it replays for nobody
try=$(psql -X -A -t -q -d $up -c "SET openwop.tenant = 'acme'" \
	-c "SELECT openwop.resolve_interrupt('acme/upgrade-run-000001', 'quorum', '{}', 'upgrade-key-00000000000001')" 2>&1 || true)
echo "$try" | grep -q idempotency_key_mismatch
echo "the updated run keeps working; a 0.1.0 idempotency record replays for nobody"

# the updated catalog is a fresh install's
psql -X -q -v ON_ERROR_STOP=1 -d $fresh -c "CREATE EXTENSION openwop_interrupt" >/dev/null
catalog() {
	psql -X -A -t -q -v ON_ERROR_STOP=1 -d "$1" <<'SQL'
SELECT 'column ' || table_name || '.' || column_name || ' ' || ordinal_position || ' ' || data_type || ' '
       || coalesce(collation_name, '-') || ' ' || is_nullable || ' ' || coalesce(column_default, '-')
  FROM information_schema.columns WHERE table_schema IN ('openwop', 'openwop_api') ORDER BY 1;
SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname IN ('openwop', 'openwop_api') ORDER BY 1;
SELECT 'constraint ' || conrelid::regclass || ' ' || conname || ' ' || pg_get_constraintdef(oid)
  FROM pg_constraint WHERE connamespace::regnamespace::text IN ('openwop', 'openwop_api') ORDER BY 1;
SELECT 'function ' || p.oid::regprocedure || ' ' || pg_get_function_result(p.oid) || ' ' || p.provolatile::text || ' '
       || p.prosecdef::text || ' ' || p.prosrc || ' ' || coalesce(p.proacl::text, '-') || ' ' || coalesce(obj_description(p.oid, 'pg_proc'), '-')
  FROM pg_proc p WHERE p.pronamespace::regnamespace::text IN ('openwop', 'openwop_api') ORDER BY 1;
SELECT 'trigger ' || tgrelid::regclass || ' ' || tgname || ' ' || tgenabled::text || ' ' || pg_get_triggerdef(oid)
  FROM pg_trigger WHERE NOT tgisinternal AND tgrelid::regclass::text LIKE 'openwop.%' ORDER BY 1;
SELECT 'table ' || c.oid::regclass || ' ' || c.relkind::text || ' ' || coalesce(c.relacl::text, '-') || ' '
       || coalesce(array_to_string(c.reloptions, ','), '-') || ' ' || coalesce(obj_description(c.oid, 'pg_class'), '-')
  FROM pg_class c WHERE c.relnamespace::regnamespace::text IN ('openwop', 'openwop_api') ORDER BY 1;
SELECT 'comment ' || c.oid::regclass || '.' || a.attname || ' ' || coalesce(col_description(c.oid, a.attnum), '-')
  FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
 WHERE c.relnamespace::regnamespace::text IN ('openwop', 'openwop_api') AND c.relkind = 'r' ORDER BY 1;
SELECT 'dumped ' || string_agg(x::regclass::text, ',' ORDER BY x::regclass::text)
  FROM pg_extension e, unnest(e.extconfig) x WHERE e.extname = 'openwop_interrupt';
SELECT 'schema ' || n.nspname || ' ' || coalesce(n.nspacl::text, '-') || ' ' || coalesce(obj_description(n.oid, 'pg_namespace'), '-')
  FROM pg_namespace n WHERE n.nspname IN ('openwop', 'openwop_api') ORDER BY 1;
SQL
}
catalog $up >"$out/updated"
catalog $fresh >"$out/fresh"
if ! diff -u "$out/fresh" "$out/updated"; then
	echo "the updated catalog differs from a fresh install of $newest" >&2
	exit 1
fi
echo "the updated catalog is identical to a fresh install of $newest ($(wc -l <"$out/fresh") objects compared)"
