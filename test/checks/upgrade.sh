#!/usr/bin/env bash
# ALTER EXTENSION openwop_interrupt UPDATE from every released version to
# the newest: data recorded by 0.1.0 (principals as bare strings) keeps
# working and is read with OpenWOP's legacy subject; each later release,
# installed as CREATE EXTENSION ... VERSION installs it (0.1.0's script and
# the update scripts up to it: sql/ holds no other install script; the
# newest library serving it) and filled with runs in every state as the
# newest writes them (the columns that release has), updates and keeps
# working; every updated catalog (tables, columns, indexes, constraints,
# functions, triggers, views, grants, comments, dumped tables) is the same
# as a fresh install of the newest, which runs the same scripts on no data.
# Needs the cluster test/run starts.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
up=openwop_upgrade
fresh=openwop_fresh
out=$(mktemp -d)
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d $up -c "SET openwop.tenant = 'acme'" -c "$1" | tail -n 1; }
src=openwop_upgrade_source
# every version of extension $1 whose scripts are in directory $2: its
# install script's (X.sql, or a template X.sql.in) and each update's target
versions() { ls "$2" | sed -n "s/^$1--\([0-9.]*--\)\{0,1\}\([0-9.]*\)\.sql\(\.in\)\{0,1\}$/\2/p" | sort -uV; }
released=$(versions openwop_interrupt sql)

# installed_scripts_are_shipped: the server's extension directory holds only
# the scripts sql/ and router/sql/ ship (make install removes a full script
# an older build left, which CREATE EXTENSION would take over the chain)
extdir="$("${PG_CONFIG:-pg_config}" --sharedir)/extension"
for f in "$extdir"/openwop_interrupt--*.sql "$extdir"/openwop_router--*.sql; do
	b=$(basename "$f")
	[ -e "sql/$b" ] || [ -e "router/sql/$b" ] || [ -e "router/sql/$b.in" ] ||
		{ echo "$b is installed but not shipped: CREATE EXTENSION would take it over the update chain" >&2; exit 1; }
done
echo "installed_scripts_are_shipped: $(ls "$extdir"/openwop_interrupt--*.sql "$extdir"/openwop_router--*.sql | wc -l) scripts, each one sql/ or router/sql/ ships"
# every table of the hot paths read and written directly in database $1 ($2: how it got there)
direct_path_on() {
	local off
	off=$(psql -X -A -t -q -v ON_ERROR_STOP=1 -d "$1" -c "SELECT string_agg(table_name || ': ' || reason, '; ') FROM openwop.direct_path() WHERE NOT direct")
	[ -z "$off" ] || { echo "the direct path is off in a database $2: $off" >&2; exit 1; }
}
dbs_of_releases() { for v in $released; do echo "openwop_upgrade_${v//./_}"; done; }
trap 'rm -rf "$out"; for d in $up $fresh $src $(dbs_of_releases) openwop_upgrade_sealed openwop_router_fresh openwop_router_up; do dropdb --if-exists $d; done
      psql -X -q -d postgres -c "DROP ROLE IF EXISTS openwop_upgrade_second" >/dev/null 2>&1 || true' EXIT
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
direct_path_on $up "updated from 0.1.0"
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
# update_chains_history: 0.1.0's events chained by the update, the new ones on them
[ "$(q "SELECT openwop.verify_run('acme/upgrade-run-000001') ->> 'valid'")" = true ]
# an idempotency record of 0.1.0 names no subject: it replays for nobody
try=$(psql -X -A -t -q -d $up -c "SET openwop.tenant = 'acme'" \
	-c "SELECT openwop.resolve_interrupt('acme/upgrade-run-000001', 'quorum', '{}', 'upgrade-key-00000000000001')" 2>&1 || true)
echo "$try" | grep -q idempotency_key_mismatch
echo "the updated run keeps working; a 0.1.0 idempotency record replays for nobody"

# the updated catalog is a fresh install's
psql -X -q -v ON_ERROR_STOP=1 -d $fresh -c "CREATE EXTENSION openwop_interrupt" >/dev/null
direct_path_on $fresh "freshly installed"
catalog() {
	psql -X -A -t -q -v ON_ERROR_STOP=1 -d "$1" <<'SQL'
SELECT 'column ' || table_name || '.' || column_name || ' ' || ordinal_position || ' ' || data_type || ' '
       || coalesce(collation_name, '-') || ' ' || is_nullable || ' ' || coalesce(column_default, '-')
  FROM information_schema.columns WHERE table_schema IN ('openwop', 'openwop_api', 'openwop_forward') ORDER BY 1;
SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname IN ('openwop', 'openwop_api', 'openwop_forward') ORDER BY 1;
SELECT 'constraint ' || conrelid::regclass || ' ' || conname || ' ' || pg_get_constraintdef(oid)
  FROM pg_constraint WHERE connamespace::regnamespace::text IN ('openwop', 'openwop_api', 'openwop_forward') ORDER BY 1;
SELECT 'function ' || p.oid::regprocedure || ' (' || pg_get_function_arguments(p.oid) || ') ' || pg_get_function_result(p.oid) || ' ' || p.provolatile::text || ' '
       || p.prosecdef::text || ' ' || coalesce(pg_get_function_sqlbody(p.oid), p.prosrc) || ' ' || coalesce(array_to_string(p.proconfig, ','), '-') || ' '
       || coalesce(p.proacl::text, '-') || ' ' || coalesce(obj_description(p.oid, 'pg_proc'), '-')
  FROM pg_proc p WHERE p.pronamespace::regnamespace::text IN ('openwop', 'openwop_api', 'openwop_forward') ORDER BY 1;
SELECT 'trigger ' || tgrelid::regclass || ' ' || tgname || ' ' || tgenabled::text || ' ' || pg_get_triggerdef(oid)
  FROM pg_trigger WHERE NOT tgisinternal AND tgrelid::regclass::text LIKE 'openwop.%' ORDER BY 1;
SELECT 'table ' || c.oid::regclass || ' ' || c.relkind::text || ' ' || coalesce(c.relacl::text, '-') || ' '
       || coalesce(array_to_string(c.reloptions, ','), '-') || ' ' || coalesce(obj_description(c.oid, 'pg_class'), '-')
  FROM pg_class c WHERE c.relnamespace::regnamespace::text IN ('openwop', 'openwop_api', 'openwop_forward') ORDER BY 1;
SELECT 'comment ' || c.oid::regclass || '.' || a.attname || ' ' || coalesce(col_description(c.oid, a.attnum), '-')
  FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
 WHERE c.relnamespace::regnamespace::text IN ('openwop', 'openwop_api', 'openwop_forward') AND c.relkind IN ('r', 'v') ORDER BY 1;
SELECT 'view ' || c.oid::regclass || ' ' || pg_get_viewdef(c.oid)
  FROM pg_class c WHERE c.relnamespace::regnamespace::text IN ('openwop', 'openwop_api', 'openwop_forward') AND c.relkind = 'v' ORDER BY 1;
SELECT 'dumped ' || string_agg(x::regclass::text, ',' ORDER BY x::regclass::text)
  FROM pg_extension e, unnest(e.extconfig) x WHERE e.extname = 'openwop_interrupt';
SELECT 'schema ' || n.nspname || ' ' || coalesce(n.nspacl::text, '-') || ' ' || coalesce(obj_description(n.oid, 'pg_namespace'), '-')
  FROM pg_namespace n WHERE n.nspname IN ('openwop', 'openwop_api', 'openwop_forward') ORDER BY 1;
SQL
}
catalog $up >"$out/updated"
catalog $fresh >"$out/fresh"
if ! diff -u "$out/fresh" "$out/updated"; then
	echo "the updated catalog differs from a fresh install of $newest" >&2
	exit 1
fi
echo "the updated catalog is identical to a fresh install of $newest ($(wc -l <"$out/fresh") objects compared)"

# every later release: filled, updated, working, and the fresh catalog
createdb $src
make_login_approver $src
psql -X -q -v ON_ERROR_STOP=1 -d $src -c "CREATE EXTENSION openwop_interrupt" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -d $src >/dev/null <<'SQL'
SET openwop.tenant = 'acme';
-- a completed run with a granted gate, answered under an idempotency key
SELECT openwop.create_run('up', '{"runId": "acme/upgrade-all-run-01"}');
SELECT openwop.start_node('acme/upgrade-all-run-01', 'gate');
SELECT openwop.interrupt('acme/upgrade-all-run-01', 'gate', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc", "title": "T", "actions": ["accept"]}}');
SELECT openwop.resolve_interrupt('acme/upgrade-all-run-01', 'gate', '{"action": "accept"}', 'upgrade-all-key-000000000001');
SELECT openwop.complete_node('acme/upgrade-all-run-01', 'gate');
SELECT openwop.complete_run('acme/upgrade-all-run-01');
-- a run waiting on a 2-of-2 gate with one vote counted
SELECT openwop.create_run('up', '{"runId": "acme/upgrade-all-run-02"}');
SELECT openwop.start_node('acme/upgrade-all-run-02', 'quorum');
SELECT openwop.interrupt('acme/upgrade-all-run-02', 'quorum', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc", "title": "T", "actions": ["accept", "reject"], "requiredApprovals": 2}}');
SELECT openwop.resolve_interrupt('acme/upgrade-all-run-02', 'quorum', '{"action": "accept"}');
-- a run in a conversation (0.8.0 on): opened, one turn answered, the next asked
SELECT openwop.create_run('up', '{"runId": "acme/upgrade-all-run-05"}');
SELECT openwop.start_node('acme/upgrade-all-run-05', 'talk');
SELECT openwop.interrupt('acme/upgrade-all-run-05', 'talk', '{"kind": "conversation.start", "data": {"conversationId": "upgrade-c1"}}');
SELECT openwop.resolve_interrupt('acme/upgrade-all-run-05', 'talk', 'null');
SELECT openwop.interrupt('acme/upgrade-all-run-05', 'talk', '{"kind": "conversation.exchange", "data": {"conversationId": "upgrade-c1", "prompt": "?"}}', 1);
SELECT openwop.resolve_interrupt('acme/upgrade-all-run-05', 'talk', '"yes"');
SELECT openwop.interrupt('acme/upgrade-all-run-05', 'talk', '{"kind": "conversation.exchange", "data": {"conversationId": "upgrade-c1", "prompt": "?"}}', 2);
-- a run waiting for an external event with a deadline, and a cancelled one
SELECT openwop.create_run('up', '{"runId": "acme/upgrade-all-run-03"}');
SELECT openwop.start_node('acme/upgrade-all-run-03', 'wait');
SELECT openwop.interrupt('acme/upgrade-all-run-03', 'wait', '{"kind": "external-event", "timeoutMs": 3600000, "data": {"eventType": "paid", "correlation": {}}}');
SELECT openwop.create_run('up', '{"runId": "acme/upgrade-all-run-04"}');
SELECT openwop.cancel_run('acme/upgrade-all-run-04', 'not needed');
SQL
qa() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d "$1" -c "SET openwop.tenant = 'acme'" -c "$2" | tail -n 1; }
# a table's columns in database $1, in order
columns() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d "$1" -c "SELECT string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position)
                                                     FROM information_schema.columns WHERE table_schema = 'openwop' AND table_name = '$2'"; }
tables="runs node_executions events interrupts open_interrupts votes idempotency_keys conversations"
# database $1, on an older release, gets the rows of $src (the columns that
# release has; the library refuses calls on an older schema, so they are
# copied, not made); a release before the conversations (0.8.0) never held
# the conversation run
fill() {
	local d=$1 t cols only conversations
	conversations=$(columns $d conversations)
	for t in $tables; do
		cols=$(columns $d $t)
		[ -n "$cols" ] || continue   # a table of a later release
		only=
		[ -n "$conversations" ] || [[ " $cols," != *" run_id,"* ]] || only="WHERE run_id <> 'acme/upgrade-all-run-05'"
		psql -X -q -v ON_ERROR_STOP=1 -d $src -c "\copy (SELECT $cols FROM openwop.$t $only) TO STDOUT" |
			psql -X -q -v ON_ERROR_STOP=1 -d $d -c "\copy openwop.$t ($cols) FROM STDIN"
	done
}
# a second approver, to decide the quorum gate the first voted on
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "DROP ROLE IF EXISTS openwop_upgrade_second" -c "CREATE ROLE openwop_upgrade_second LOGIN PASSWORD '${PGPASSWORD:-unused}'" \
	-c "ALTER ROLE openwop_upgrade_second SET openwop.bound_tenant = 'acme'" -c "GRANT openwop_approver TO openwop_upgrade_second" >/dev/null
for v in $released; do
	[ "$v" != 0.1.0 ] && [ "$v" != "$newest" ] || continue
	d=openwop_upgrade_${v//./_}
	dropdb --if-exists $d
	createdb $d
	make_login_approver $d
	psql -X -q -v ON_ERROR_STOP=1 -d $d -c "CREATE EXTENSION openwop_interrupt VERSION '$v'" >/dev/null
	fill $d
	conversations=$(columns $d conversations)
	psql -X -q -v ON_ERROR_STOP=1 -d $d -c "ALTER EXTENSION openwop_interrupt UPDATE" >/dev/null
	[ "$(qa $d "SELECT extversion FROM pg_extension WHERE extname = 'openwop_interrupt'")" = "$newest" ]
	# direct_path_on_after_update: the hot paths read and write every table directly
	direct_path_on $d "updated from $v"
	# it keeps working: the counted vote still counts, a second decides; replay derives; the deadline is due work
	[ "$(qa $d "SELECT string_agg(openwop.run_snapshot('acme/upgrade-all-run-0' || i) ->> 'status', ',' ORDER BY i) FROM generate_series(1, 4) i")" \
		= "completed,waiting-approval,waiting-external,cancelled" ]
	# open_gates_carried_over_unpinned: a gate open before the update pinned no
	# policy, and one set after it (quorum 5 for every gate of the workflow)
	# does not reach it: its 2-of-2 is decided by the second vote below
	psql -X -q -v ON_ERROR_STOP=1 -d $d -c "BEGIN" -c "GRANT openwop_policy_admin TO CURRENT_USER" -c "SET LOCAL openwop.tenant = 'acme'" \
		-c "SELECT openwop.set_approval_policy('after-update', '{\"appliesTo\": {\"workflowId\": \"up\", \"nodeId\": \"*\"}, \"requiredApprovals\": 5}')" \
		-c "REVOKE openwop_policy_admin FROM CURRENT_USER" -c "COMMIT" >/dev/null
	[ "$(qa $d "SELECT bool_and(policy IS NULL) AND count(*) FILTER (WHERE run_id = 'acme/upgrade-all-run-02') = 1 FROM openwop.open_interrupts")" = t ]
	psql -X -q -v ON_ERROR_STOP=1 -d $d -c "GRANT USAGE ON SCHEMA openwop TO openwop_upgrade_second" \
		-c "GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop TO openwop_upgrade_second" >/dev/null
	[ "$(psql -X -A -t -q -v ON_ERROR_STOP=1 -d $d -U openwop_upgrade_second -c "SET openwop.tenant = 'acme'" \
		-c "SELECT openwop.resolve_interrupt('acme/upgrade-all-run-02', 'quorum', '{\"action\": \"accept\"}') ->> 'decision'" | tail -n 1)" = granted ]
	[ "$(qa $d "SELECT openwop.interrupt('acme/upgrade-all-run-01', 'gate', '{\"kind\": \"approval\", \"data\": {\"artifactId\": \"a\", \"artifactType\": \"doc\", \"title\": \"T\", \"actions\": [\"accept\"]}}') ->> 'status'")" = resolved ]
	[ "$(qa $d "SELECT openwop.resolve_interrupt('acme/upgrade-all-run-01', 'gate', '{\"action\": \"accept\"}', 'upgrade-all-key-000000000001') ->> 'idempotentReplay'")" = true ]
	[ "$(qa $d "SELECT count(*) FROM openwop.open_interrupts WHERE run_id = 'acme/upgrade-all-run-03' AND expires_at IS NOT NULL")" = 1 ]
	# conversations: on a release that had them they carry on; on one before they begin
	if [ -n "$conversations" ]; then
		[ "$(qa $d "SELECT openwop.resolve_interrupt('acme/upgrade-all-run-05', 'talk', '\"again\"') ->> 'status'")" = resolved ]
		[ "$(qa $d "SELECT turn_count FROM openwop.conversations WHERE conversation_id = 'upgrade-c1'")" = 2 ]
	else
		qa $d "SELECT openwop.create_run('up', '{\"runId\": \"acme/upgrade-conv-run-01\"}')" >/dev/null
		qa $d "SELECT openwop.start_node('acme/upgrade-conv-run-01', 'talk')" >/dev/null
		[ "$(qa $d "SELECT openwop.interrupt('acme/upgrade-conv-run-01', 'talk', '{\"kind\": \"conversation.start\", \"data\": {\"conversationId\": \"upgrade-c2\"}}') ->> 'status'")" = interrupted ]
	fi
	[ "$(qa $d "SELECT openwop.capabilities() -> 'conversationPrimitive'")" = "{}" ]
	# update_chains_history: every event recorded before the update is chained, and
	# the events appended since chain on: every run verifies, with every event counted
	[ "$(qa $d "SELECT bool_and((openwop.verify_run(run_id) ->> 'valid')::boolean
	                    AND (openwop.verify_run(run_id) ->> 'events')::bigint = next_sequence) AND count(*) >= 4
	              FROM openwop.runs WHERE tenant = 'acme'")" = t ]
	psql -X -q -v ON_ERROR_STOP=1 -d $d -c "REVOKE ALL ON SCHEMA openwop FROM openwop_upgrade_second" \
		-c "REVOKE ALL ON ALL FUNCTIONS IN SCHEMA openwop FROM openwop_upgrade_second" >/dev/null
	catalog $d >"$out/updated-$v"
	if ! diff -u "$out/fresh" "$out/updated-$v"; then
		echo "the catalog updated from $v differs from a fresh install of $newest" >&2
		exit 1
	fi
	echo "$v: filled, updated to $newest, working (its open gates unpinned, its history chained), catalog identical"
done

# 0.10.0 stored signing secrets in clear (without a key-encryption key): the
# update to 0.11.0 encrypts them, or fails, changing nothing, with no
# passphrase to encrypt with; a key that no longer verifies is erased
d=openwop_upgrade_sealed
dropdb --if-exists $d
createdb $d
make_login_approver $d
psql -X -q -v ON_ERROR_STOP=1 -d $d >/dev/null <<'SQL'
CREATE EXTENSION openwop_interrupt VERSION '0.10.0';
CREATE EXTENSION pgcrypto;
-- as 0.10.0 stored them without openwop.key_encryption_key_file
INSERT INTO openwop.signing_keys (kid, secret, encrypted) VALUES ('k-clear', 'a-clear-0.10.0-secret-01234567', false);
INSERT INTO openwop.signing_keys (kid, secret, encrypted, state, retired_at, verify_until)
VALUES ('k-clear-done', 'an-expired-0.10.0-secret-0123', false, 'retired', now() - interval '9 days', now() - interval '1 day');
SQL
fill $d
# a token k-clear signed under 0.10.0 for the pending quorum gate: the same
# key signs it alike in $src, which holds the same gate (a token names no database)
qa $src "SELECT openwop.add_signing_key('k-clear', convert_to('a-clear-0.10.0-secret-01234567', 'UTF8'))" >/dev/null
token=$(qa $src "SELECT openwop.mint_interrupt_token(interrupt_id, 'inspect') FROM openwop.interrupts WHERE run_id = 'acme/upgrade-all-run-02'")
# 0.10.0's statistics held the clear secrets: the table's, and those of an
# expression index and a statistics object a DBA made on it
psql -X -q -v ON_ERROR_STOP=1 -d $d -c "CREATE INDEX signing_keys_dba_expr ON openwop.signing_keys ((secret || '\\x00'::bytea))" \
	-c "CREATE STATISTICS openwop.signing_keys_dba_stats (mcv) ON kid, secret FROM openwop.signing_keys" \
	-c "ANALYZE openwop.signing_keys" >/dev/null
stats_left() {
	qa $d "SELECT (SELECT count(*) FROM pg_stats WHERE schemaname = 'openwop' AND tablename IN ('signing_keys', 'signing_keys_dba_expr')
	                AND attname IN ('secret', 'expr'))
	            + (SELECT count(*) FROM pg_statistic_ext_data x JOIN pg_statistic_ext e ON e.oid = x.stxoid
	                WHERE e.stxname = 'signing_keys_dba_stats')"
}
[ "$(stats_left)" -ge 2 ] || { echo "the statistics to clear were not gathered: $(stats_left)" >&2; exit 1; }
err=$(psql -X -q -d $d -c "SET openwop.key_encryption_key_file = ''" -c "ALTER EXTENSION openwop_interrupt UPDATE" 2>&1 || true)
grep -q 'no key-encryption key is configured' <<<"$err" || { echo "the update without a passphrase: $err" >&2; exit 1; }
[ "$(qa $d "SELECT extversion FROM pg_extension WHERE extname = 'openwop_interrupt'")" = 0.10.0 ]
[ "$(qa $d "SELECT count(*) FROM openwop.signing_keys WHERE NOT encrypted")" = 2 ]
echo "clear_secrets_update_fails_without_passphrase: no passphrase, no update, nothing changed"
psql -X -q -v ON_ERROR_STOP=1 -d $d -c "ALTER EXTENSION openwop_interrupt UPDATE" >/dev/null
kek=$(psql -X -A -t -q -d $d -c "SELECT rtrim(pg_read_file(current_setting('openwop.key_encryption_key_file')), E'\n')")
[ "$(qa $d "SELECT encrypted AND convert_from(pgp_sym_decrypt_bytea(secret, '$kek'), 'UTF8') = 'a-clear-0.10.0-secret-01234567'
              AND position('a-clear-0.10.0' IN encode(secret, 'escape')) = 0 FROM openwop.signing_keys WHERE kid = 'k-clear'")" = t ]
[ "$(qa $d "SELECT secret IS NULL FROM openwop.signing_keys WHERE kid = 'k-clear-done'")" = t ]
[ "$(stats_left)" = 0 ] || { echo "statistics of 0.10.0's secrets survived the update: $(stats_left)" >&2; exit 1; }
psql -X -q -v ON_ERROR_STOP=1 -d $d -c "DROP INDEX openwop.signing_keys_dba_expr" -c "DROP STATISTICS openwop.signing_keys_dba_stats" \
	-c "ANALYZE openwop.signing_keys" >/dev/null
[ "$(qa $d "SELECT count(*) FROM pg_stats WHERE schemaname = 'openwop' AND tablename = 'signing_keys' AND attname = 'secret'")" = 0 ]
[ "$(qa $d "SELECT openwop.inspect_interrupt('$token') ->> 'kind'")" = approval ]
catalog $d >"$out/updated-sealed"
diff -u "$out/fresh" "$out/updated-sealed" || { echo "the catalog updated with secrets to seal differs from a fresh install" >&2; exit 1; }
dropdb $d
echo "clear_secrets_sealed_by_update: a clear secret of 0.10.0 encrypted (its token still verifies), an expired one erased, no statistics of the secrets left or gathered again, catalog identical"

# the router extension: each released version updated is a fresh install of the newest
router_newest=$(sed -n "s/^default_version = '\(.*\)'/\1/p" router/openwop_router.control)
router_catalog() {
	psql -X -A -t -q -v ON_ERROR_STOP=1 -d "$1" <<'SQL'
SELECT 'function ' || p.oid::regprocedure || ' (' || pg_get_function_arguments(p.oid) || ') ' || pg_get_function_result(p.oid) || ' '
       || p.provolatile::text || ' ' || p.prosrc || ' ' || coalesce(p.proacl::text, '-') || ' ' || coalesce(obj_description(p.oid, 'pg_proc'), '-')
  FROM pg_proc p WHERE p.pronamespace::regnamespace::text IN ('openwop', 'openwop_router') ORDER BY 1;
SELECT 'relation ' || c.oid::regclass || ' ' || c.relkind::text || ' ' || coalesce(c.relacl::text, '-') || ' ' || coalesce(obj_description(c.oid, 'pg_class'), '-')
       || ' ' || CASE WHEN c.relkind = 'v' THEN pg_get_viewdef(c.oid) ELSE '' END
  FROM pg_class c WHERE c.relnamespace::regnamespace::text IN ('openwop', 'openwop_router') ORDER BY 1;
SELECT 'column ' || table_name || '.' || column_name || ' ' || ordinal_position || ' ' || data_type
  FROM information_schema.columns WHERE table_schema IN ('openwop', 'openwop_router') ORDER BY 1;
SELECT 'schema ' || n.nspname || ' ' || coalesce(n.nspacl::text, '-') || ' ' || coalesce(obj_description(n.oid, 'pg_namespace'), '-')
  FROM pg_namespace n WHERE n.nspname IN ('openwop', 'openwop_router') ORDER BY 1;
SQL
}
for d in openwop_router_fresh openwop_router_up; do dropdb --if-exists $d; createdb $d; done
psql -X -q -v ON_ERROR_STOP=1 -d openwop_router_fresh -c "CREATE EXTENSION openwop_router CASCADE" >/dev/null
router_catalog openwop_router_fresh >"$out/router-fresh"
for v in $(versions openwop_router router/sql); do
	[ "$v" != "$router_newest" ] || continue
	psql -X -q -v ON_ERROR_STOP=1 -d openwop_router_up -c "DROP EXTENSION IF EXISTS openwop_router" \
		-c "CREATE EXTENSION openwop_router VERSION '$v' CASCADE" -c "ALTER EXTENSION openwop_router UPDATE" >/dev/null
	router_catalog openwop_router_up >"$out/router-up-$v"
	diff -u "$out/router-fresh" "$out/router-up-$v" || { echo "openwop_router updated from $v differs from a fresh $router_newest" >&2; exit 1; }
	echo "openwop_router $v: updated to $router_newest, catalog identical ($(wc -l <"$out/router-fresh") objects compared)"
done
for d in openwop_router_fresh openwop_router_up; do dropdb $d; done
echo "upgrade checks passed"
