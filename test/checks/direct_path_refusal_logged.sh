#!/usr/bin/env bash
# direct_path_refusal_logged: when a DBA changes a table the hot paths
# write directly (a trigger, a column of its own), they write it with SQL
# statements instead, and the server log says so once per backend and
# table, with the reason; a table as the install script made it is never
# named.  The messages are read as the session sees them
# (client_min_messages = log), so no other session's lines count.
# Needs the cluster test/run starts.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
D=ow_direct_refusal
cleanup() { dropdb --if-exists $D >/dev/null 2>&1 || true; }
trap cleanup EXIT
cleanup
createdb $D
psql -X -q -v ON_ERROR_STOP=1 -d $D -c "CREATE EXTENSION openwop_interrupt" >/dev/null

# RUN: raise an interrupt on a new run and cancel it, in a session that hears its LOG lines
gates() {
	local sql="SET client_min_messages = log; SET openwop.tenant = 'acme';"
	for r in "$@"; do
		sql="$sql SELECT openwop.create_run('w', '{\"runId\": \"$r\"}') IS NOT NULL;
		     SELECT openwop.start_node('$r', 'ask') IS NOT NULL;
		     SELECT openwop.interrupt('$r', 'ask', '{\"kind\": \"custom\", \"data\": {\"customKind\": \"confirm\"}}') IS NOT NULL;
		     SELECT openwop.cancel_run('$r', 'operator') IS NOT NULL;"
	done
	psql -X -q -A -t -v ON_ERROR_STOP=1 -d $D -c "$sql" 2>&1 >/dev/null
}

out=$(gates acme/refusal-run-0000001 acme/refusal-run-0000002)
if grep -q "written with SQL statements" <<<"$out"; then
	echo "a table as the install script made it was named:" >&2; echo "$out" >&2; exit 1
fi
echo "as installed: nothing logged"

psql -X -q -v ON_ERROR_STOP=1 -d $D \
	-c "CREATE FUNCTION public.noop() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END'" \
	-c "CREATE TRIGGER dba_audit BEFORE UPDATE ON openwop.node_executions FOR EACH ROW EXECUTE FUNCTION public.noop()" \
	-c "ALTER TABLE openwop.interrupts ADD COLUMN dba_note text"
out=$(gates acme/refusal-run-0000003 acme/refusal-run-0000004 acme/refusal-run-0000005)
n_exec=$(grep -c 'openwop.node_executions is written with SQL statements, not directly: it has a trigger' <<<"$out" || true)
n_int=$(grep -c 'openwop.interrupts is written with SQL statements, not directly: it has a column the install script did not make' <<<"$out" || true)
[ "$n_exec" = 1 ] || { echo "the trigger on node_executions was logged $n_exec times, not once:" >&2; echo "$out" >&2; exit 1; }
[ "$n_int" = 1 ] || { echo "the column of interrupts was logged $n_int times, not once:" >&2; echo "$out" >&2; exit 1; }
grep -q 'HINT:  Undo the change to the table' <<<"$out" || { echo "no hint:" >&2; echo "$out" >&2; exit 1; }
[ "$(psql -X -A -t -q -d $D -c "SELECT count(*) FROM openwop.interrupts WHERE status = 'cancelled'")" = 5 ] ||
	{ echo "the statements did not do the work" >&2; exit 1; }
echo "direct_path_refusal_logged: a trigger and a DBA's column each logged once per backend, with the reason; the statements did the work"
