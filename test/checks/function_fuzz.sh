#!/usr/bin/env bash
# Every function of the extension, as a router's login holding the grants
# the docs recommend (USAGE and EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop,
# openwop_api, openwop_forward, TEMP on the database), fuzzed:
# - each function (found in pg_proc through pg_depend, so new ones are
#   fuzzed too) is called with every argument NULL, with each argument NULL
#   in turn, and with each argument in turn set to odd values of its type
#   (empty, huge, separators, control characters, extremes, deep nesting,
#   10,000-element arrays, 1 MB bytea ...), the others ordinary values;
# - each trigger function is called directly, and attached by that login
#   to TEMP tables it created (one named like each extension table, one
#   with the real column types, one with no columns, one with one int
#   column), a TEMP view (INSTEAD OF), a partitioned TEMP table and a
#   foreign table (postgres_fdw loopback), with every timing, event and
#   level CREATE TRIGGER accepts, and fired by INSERT (NULLs and values),
#   UPDATE, DELETE and TRUNCATE; as the superuser, attached to the
#   extension's other tables, and to its own with another event;
# each call and statement in a subtransaction of its own, rolled back, its
# outcome committed before the next (a crash names its case: the first
# without one; a new session goes on from the next).
# Passes when no backend crashed (the sessions survive, the server log has
# no "terminated by signal"), no call ended in XX000, every firing of a
# trigger function on a relation the install script does not bind it to
# was refused with 39P01, one on its own table with another event was
# refused, and no firing by the login changed a row of the extension.
# Prints each failing case, then per function the cases and SQLSTATEs.
# Needs the cluster test/run starts (preloaded, PG* set by pg_virtualenv)
# and postgres_fdw (in Debian's postgresql-15).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
db=ow_fuzz_db
router=ow_fuzz_router
forwarder=ow_fuzz_forwarder
approver=ow_fuzz_approver
issuer=ow_fuzz_issuer
started=$SECONDS
log=$(server_log_file)
[ -r "$log" ] || { echo "cannot read the server log [$log]" >&2; exit 1; }
work=""
cleanup() {
	dropdb --if-exists --force $db >/dev/null 2>&1 || true
	for r in $router $forwarder $approver $issuer; do
		psql -X -q -d postgres -c "DROP ROLE IF EXISTS $r" >/dev/null 2>&1 || true
	done
	[ -z "$work" ] || rm -rf "$work"
}
trap cleanup EXIT
cleanup
work=$(mktemp -d)
sq() { psql -X -q -v ON_ERROR_STOP=1 -d $db "$@"; }
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d $db -c "$1"; }
log_from=$(($(wc -l <"$log") + 1))
crash_lines() { tail -n "+$log_from" "$log" | grep -E 'terminated by signal|was terminated' || true; }

# ---- the database, the login and its grants (README, docs/scale-out.md):
# a router's login, bound to every tenant, a forwarder; and, so that the
# calls get past the scope checks into the code behind them, an approver
# and a token issuer (the roles named per database, so nothing else in the
# cluster changes)
psql -X -q -v ON_ERROR_STOP=1 -d postgres >/dev/null <<SQL
CREATE ROLE $forwarder NOLOGIN;
CREATE ROLE $approver NOLOGIN;
CREATE ROLE $issuer NOLOGIN;
CREATE ROLE $router LOGIN PASSWORD '${PGPASSWORD:-unused}' IN ROLE $forwarder, $approver, $issuer;
ALTER ROLE $router SET openwop.bound_tenant = '*';
GRANT $approver TO CURRENT_USER;    -- the superuser casts a vote below
SQL
createdb $db
sq >/dev/null <<SQL
ALTER DATABASE $db SET openwop.forwarding_role = '$forwarder';
ALTER DATABASE $db SET openwop.approver_role = '$approver';
ALTER DATABASE $db SET openwop.token_issuer_role = '$issuer';
SQL
sq >/dev/null <<SQL
CREATE EXTENSION openwop_interrupt;
CREATE EXTENSION postgres_fdw;
GRANT USAGE ON SCHEMA openwop, openwop_api, openwop_forward TO $router;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop, openwop_api, openwop_forward TO $router;
GRANT SELECT ON openwop.pending_interrupts TO $router;
GRANT TEMP ON DATABASE $db TO $router;
SQL

# ---- rows for the calls to meet (tenant acme): runs, interrupts, a vote,
# an idempotency key, a group member, a signing key, a token, a fork
sq >/dev/null <<'SQL'
SET openwop.tenant = 'acme';
SELECT openwop.create_run('fuzz', '{"runId": "acme/fuzz-run-0000000001"}');
SELECT openwop.start_node('acme/fuzz-run-0000000001', 'work');
SELECT openwop.complete_node('acme/fuzz-run-0000000001', 'work', '{}');
SELECT openwop.start_node('acme/fuzz-run-0000000001', 'gate');
SELECT openwop.interrupt('acme/fuzz-run-0000000001', 'gate', '{"kind": "approval", "data": {"artifactId": "a",
  "artifactType": "d", "title": "t", "actions": ["accept", "reject", "ask"], "requiredApprovals": 2}}');
SELECT openwop.resolve_interrupt('acme/fuzz-run-0000000001', 'gate', '{"action": "accept"}', 'fuzz-seed-key-0000000001');
SELECT openwop.start_node('acme/fuzz-run-0000000001', 'ask');
SELECT openwop.interrupt('acme/fuzz-run-0000000001', 'ask', '{"kind": "clarification", "data": {"questions":
  [{"id": "q1", "question": "?", "schema": {"type": "string"}}]}, "timeoutMs": 86400000}');
SELECT openwop.create_run('fuzz', '{"runId": "acme/fuzz-run-0000000002"}');
SELECT openwop.start_node('acme/fuzz-run-0000000002', 'talk');
SELECT openwop.interrupt('acme/fuzz-run-0000000002', 'talk', '{"kind": "conversation.start", "data": {"conversationId": "c1"}}');
SELECT openwop.fork_run('acme/fuzz-run-0000000001', '{"mode": "replay"}');
-- the interrupt the rows written to the trigger functions' relations name: no call touches it
SELECT openwop.create_run('fuzz', '{"runId": "acme/fuzz-held-0000000001"}');
SELECT openwop.start_node('acme/fuzz-held-0000000001', 'gate');
SELECT openwop.interrupt('acme/fuzz-held-0000000001', 'gate', '{"kind": "approval", "data": {"artifactId": "a",
  "artifactType": "d", "title": "t", "actions": ["accept"]}, "timeoutMs": 86400000}');
SELECT openwop.add_group_member('g', 'carol', 'acme');
SELECT openwop.add_signing_key('k-fuzz', 'fuzz-secret-do-not-use-00000001'::bytea);
SQL

# ---- the harness: schema fuzz, the superuser's
sq >/dev/null <<SQL
SET openwop.tenant = 'acme';
CREATE SCHEMA fuzz;
GRANT USAGE ON SCHEMA fuzz TO $router;
CREATE TABLE fuzz.seed AS
  SELECT i.interrupt_id AS iid, i.run_id AS run, openwop.mint_interrupt_token(i.interrupt_id) AS token
    FROM openwop.interrupts i WHERE i.run_id = 'acme/fuzz-held-0000000001' AND i.node_id = 'gate';
-- a trigger that counts its firings where no rollback undoes the count
CREATE SEQUENCE fuzz.fired;
SELECT nextval('fuzz.fired');
CREATE FUNCTION fuzz.witness() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
  PERFORM nextval('fuzz.fired');
  IF TG_LEVEL = 'ROW' THEN
    IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
    RETURN NEW;
  END IF;
  RETURN NULL;
END \$\$;
-- what the extension's tables hold, as one digest (read as the superuser)
CREATE FUNCTION fuzz.ext_digest() RETURNS text LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS \$\$
DECLARE r regclass; d text; acc text := '';
BEGIN
  FOR r IN SELECT c.oid FROM pg_class c JOIN pg_depend dp ON dp.classid = 'pg_class'::regclass AND dp.objid = c.oid
             AND dp.deptype = 'e' JOIN pg_extension e ON dp.refobjid = e.oid AND e.extname = 'openwop_interrupt'
            WHERE c.relkind = 'r' ORDER BY c.oid LOOP
    EXECUTE format('SELECT md5(coalesce(string_agg(t::text, %L ORDER BY t::text), %L)) FROM %s t', chr(10), '', r) INTO d;
    acc := acc || r::text || '=' || d || ' ';
  END LOOP;
  RETURN acc;
END \$\$;
REVOKE ALL ON FUNCTION fuzz.ext_digest() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fuzz.ext_digest(), fuzz.witness() TO $router;
GRANT SELECT, UPDATE ON SEQUENCE fuzz.fired TO $router;
GRANT SELECT ON fuzz.seed TO $router;
SQL

# the digest sees a change (rolled back)
[ "$(psql -X -A -t -q -v ON_ERROR_STOP=1 -d $db -c "BEGIN" -c "CREATE TEMP TABLE d0 AS SELECT fuzz.ext_digest() AS d" \
	-c "UPDATE openwop.group_members SET added_at = added_at + interval '1 second'" \
	-c "SELECT fuzz.ext_digest() IS DISTINCT FROM d FROM d0" -c "ROLLBACK" | grep -E '^[tf]$')" = t ] \
	|| { echo "fuzz.ext_digest() missed a change" >&2; exit 1; }

# the extension's functions, from the catalog
q "CREATE VIEW fuzz.functions AS
  SELECT p.oid, p.oid::regprocedure::text AS sig, n.nspname, p.proname, p.prokind, p.proretset,
         p.prorettype = 'trigger'::regtype AS is_trigger,
         ARRAY(SELECT t FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY u(t, i) ORDER BY i) AS argtypes,
         ARRAY(SELECT coalesce(a.name, '') FROM unnest(coalesce(p.proargnames, '{}'::text[]),
                 coalesce(p.proargmodes, array_fill('i'::\"char\", ARRAY[p.pronargs]))) a(name, mode)
                WHERE a.mode IN ('i', 'b', 'v')) AS argnames
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
    JOIN pg_extension e ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid
   WHERE e.extname = 'openwop_interrupt'" >/dev/null
nfun=$(q "SELECT count(*) FROM fuzz.functions")
ntrig=$(q "SELECT count(*) FROM fuzz.functions WHERE is_trigger")
[ "$ntrig" -ge 1 ] && [ "$nfun" -gt "$ntrig" ] || { echo "found no functions of the extension ($nfun, $ntrig triggers)" >&2; exit 1; }
echo "the extension has $nfun functions, $ntrig of them trigger functions"

# a run of its own for each function to call, with a pending interrupt
sq >/dev/null <<'SQL'
SET openwop.tenant = 'acme';
CREATE TABLE fuzz.fseed (fn oid PRIMARY KEY, run text, iid text, token text);
DO $$
DECLARE f record; n integer := 100; r text;
BEGIN
  FOR f IN SELECT oid FROM fuzz.functions WHERE NOT is_trigger ORDER BY sig LOOP
    n := n + 1;
    r := format('acme/fuzz-run-%s', lpad(n::text, 10, '0'));
    PERFORM openwop.create_run('fuzz', jsonb_build_object('runId', r));
    PERFORM openwop.start_node(r, 'gate');
    PERFORM openwop.interrupt(r, 'gate', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "d", "title": "t",
      "actions": ["accept", "reject", "ask", "refine", "edit-accept"]}, "timeoutMs": 86400000}');
    INSERT INTO fuzz.fseed SELECT f.oid, r, i.interrupt_id, openwop.mint_interrupt_token(i.interrupt_id)
      FROM openwop.interrupts i WHERE i.run_id = r AND i.node_id = 'gate';
  END LOOP;
END $$;
SQL

# ---- the calls: an ordinary value per argument (by name, else by type),
# odd values per type; each case one statement
sq >/dev/null <<'SQL'
CREATE FUNCTION fuzz.ordinary(argname text, typ oid, fn oid) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT CASE
    WHEN typ = 'text'::regtype THEN quote_literal(CASE
      WHEN argname = 'run_id' THEN (SELECT run FROM fuzz.fseed s WHERE s.fn = ordinary.fn)
      WHEN argname IN ('node_id', 'failed_node_id') THEN 'gate'
      WHEN argname = 'interrupt_id' THEN (SELECT iid FROM fuzz.fseed s WHERE s.fn = ordinary.fn)
      WHEN argname = 'token' THEN (SELECT token FROM fuzz.fseed s WHERE s.fn = ordinary.fn)
      WHEN argname = 'tenant' THEN 'acme'
      WHEN argname = 'kid' THEN 'k-fuzz-2'
      WHEN argname = 'intent' THEN 'resolve'
      WHEN argname = 'status' THEN 'pending'
      WHEN argname = 'kind' THEN 'approval'
      WHEN argname = 'idempotency_key' THEN 'fuzz-key-0000000000000001'
      WHEN argname = 'principal' THEN 'carol'
      WHEN argname = 'group_ref' THEN 'g'
      WHEN argname = 'type_id' THEN 'core.ai.callPrompt'
      ELSE 'fuzz' END)
    WHEN typ = 'jsonb'::regtype THEN quote_literal(CASE
      WHEN argname = 'caller' THEN '{"issuer": "https://idp.example.org", "subjectId": "carol", "tenant": "acme", "lane": "oauth2", "kind": "user", "scopes": ["approvals:respond"]}'
      WHEN argname IN ('request', 'payload') THEN '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "d", "title": "t", "actions": ["accept"]}}'
      WHEN argname = 'resume_value' THEN '{"action": "accept"}'
      WHEN argname = 'options' THEN '{"mode": "replay"}'
      WHEN argname = 'error' THEN '{"code": "x", "message": "y"}'
      WHEN argname = 'schema' THEN '{"type": "object"}'
      ELSE '{}' END)
    WHEN typ = 'text[]'::regtype THEN format('ARRAY[%L]', (SELECT iid FROM fuzz.fseed s WHERE s.fn = ordinary.fn))
    WHEN typ = 'integer'::regtype THEN CASE WHEN argname = 'ordinal' THEN '0' ELSE '10' END
    WHEN typ = 'bigint'::regtype THEN '0'
    WHEN typ = 'double precision'::regtype THEN '0.5'
    WHEN typ = 'interval'::regtype THEN quote_literal('1 hour')
    WHEN typ = 'bytea'::regtype THEN quote_literal('fuzz-secret-do-not-use-00000002')
    WHEN typ = 'boolean'::regtype THEN 'false'
    WHEN typ = 'timestamptz'::regtype THEN 'now()'
    ELSE 'NULL' END
$$;
CREATE TABLE fuzz.odd (typ regtype, label text, expr text);
INSERT INTO fuzz.odd SELECT 'text', l, e FROM (VALUES
  ('empty', quote_literal('')), ('100kB', 'repeat(''x'', 102400)'), ('slash', quote_literal('/')),
  ('slashes', quote_literal('acme//x/')), ('tenant-only', quote_literal('acme/')), ('no-tenant', quote_literal('/fuzz-run-0000000001')),
  ('star', quote_literal('*')), ('colon', quote_literal('a:b:c')), ('control', 'E''\x01\x02\x1b[0m\t\n\r'''),
  ('dotdot', quote_literal('acme/../other')), ('missing-id', quote_literal('acme/fuzz-run-9999999999')),
  ('other-tenant', quote_literal('other/fuzz-run-0000000001')), ('long-id', quote_literal('acme/' || repeat('a', 300))),
  ('format', quote_literal('%s%n%x%%')), ('unicode', quote_literal('é☃𝄞')), ('json-ish', quote_literal('{"a":1}')),
  ('token-ish', quote_literal('ow2.hs256.k-fuzz.e30.AAAA')), ('encoded', quote_literal('acme~2Ffuzz-run-0000000001'))) v(l, e);
INSERT INTO fuzz.odd SELECT 'jsonb', l, e || '::jsonb' FROM (VALUES
  ('null', quote_literal('null')), ('array', quote_literal('[]')), ('object', quote_literal('{}')), ('string', quote_literal('"x"')),
  ('one', quote_literal('1')), ('minus-zero', quote_literal('-0')), ('1e308', quote_literal('1e308')), ('true', quote_literal('true')),
  ('nested-arrays-2000', '(repeat(''['', 2000) || repeat('']'', 2000))'),
  ('nested-objects-2000', '(repeat(''{"a": '', 2000) || ''1'' || repeat(''}'', 2000))'),
  ('odd-keys', quote_literal('{"": 1, "\u0001": 2, "a.b": 3, "/": 4, "kind": null, "action": null}')),
  ('long-key', '(''{"'' || repeat(''k'', 100000) || ''": 1}'')'),
  ('big-array', '(SELECT jsonb_agg(i) FROM generate_series(1, 10000) i)::text'),
  ('100kB-string', '(''"'' || repeat(''s'', 102400) || ''"'')'),
  ('wrong-types', quote_literal('{"kind": 1, "data": [], "action": {}, "runId": 5, "mode": [], "issuer": 1, "subjectId": [], "tenant": {}, "scopes": "x"}'))) v(l, e);
INSERT INTO fuzz.odd SELECT 'integer', l, e FROM (VALUES ('zero', '0'), ('minus-one', '-1'), ('min', '(-2147483648)'), ('max', '2147483647')) v(l, e);
INSERT INTO fuzz.odd SELECT 'bigint', l, e FROM (VALUES ('zero', '0'), ('minus-one', '-1'), ('min', '(-9223372036854775808)'), ('max', '9223372036854775807')) v(l, e);
INSERT INTO fuzz.odd SELECT 'double precision', l, quote_literal(e) FROM (VALUES ('nan', 'NaN'), ('inf', 'Infinity'), ('minus-inf', '-Infinity'),
  ('minus-zero', '-0'), ('huge', '1e308'), ('tiny', '5e-324'), ('minus-one', '-1')) v(l, e);
INSERT INTO fuzz.odd SELECT 'interval', l, quote_literal(e) FROM (VALUES ('negative', '-1 second'), ('zero', '0'),
  ('huge', '178000000 years'), ('minus-huge', '-178000000 years'), ('microsecond', '1 microsecond')) v(l, e);
INSERT INTO fuzz.odd SELECT 'bytea', l, e FROM (VALUES ('empty', quote_literal('')), ('one-byte', quote_literal('\x00')),
  ('1MB', 'decode(repeat(''00'', 1048576), ''hex'')')) v(l, e);
INSERT INTO fuzz.odd SELECT 'boolean', l, e FROM (VALUES ('true', 'true'), ('false', 'false')) v(l, e);
INSERT INTO fuzz.odd SELECT 'text[]', l, e FROM (VALUES ('empty', quote_literal('{}')), ('null-element', quote_literal('{NULL}')),
  ('empty-element', quote_literal('{""}')), ('two-dimensional', quote_literal('{{a,b},{c,d}}')), ('lower-bound-0', quote_literal('[0:1]={a,b}')),
  ('10000-elements', '(SELECT array_agg(''acme/fuzz-int-'' || i) FROM generate_series(1, 10000) i)'),
  ('10000-same', '(SELECT array_agg(s.iid) FROM fuzz.seed s, generate_series(1, 10000))'),
  ('id-and-null', '(SELECT ARRAY[iid, NULL] FROM fuzz.seed)')) v(l, e);
INSERT INTO fuzz.odd SELECT 'timestamptz', l, quote_literal(e) FROM (VALUES ('minus-infinity', '-infinity'), ('infinity', 'infinity'),
  ('earliest', '4713-01-01 00:00:00+00 BC'), ('latest', '294276-12-31 00:00:00+00')) v(l, e);

CREATE TABLE fuzz.cases (
  id serial PRIMARY KEY, run_as text NOT NULL, grp text NOT NULL, fn text NOT NULL, label text NOT NULL,
  rel text, setup text, attach text, witness text, sql text NOT NULL, check_digest boolean NOT NULL DEFAULT false,
  status text, sqlstate text, message text, fired boolean, changed boolean, ms numeric);
CREATE INDEX ON fuzz.cases (run_as, id) WHERE status IS NULL;

-- a call of f with argument expressions args
CREATE FUNCTION fuzz.call_sql(f fuzz.functions, args text[]) RETURNS text LANGUAGE sql AS $$
  SELECT CASE WHEN f.prokind = 'p' THEN 'CALL ' WHEN f.proretset THEN 'SELECT count(*) FROM ' ELSE 'SELECT ' END
      || format('%I.%I(', f.nspname, f.proname)
      || coalesce((SELECT string_agg(format('(%s)::%s', a.e, format_type(t.t, NULL)), ', ' ORDER BY a.i)
                     FROM unnest(args) WITH ORDINALITY a(e, i) JOIN unnest(f.argtypes) WITH ORDINALITY t(t, i) USING (i)), '')
      || ')'
$$;
WITH w AS (SELECT fr, fr.sig, cardinality(fr.argtypes) AS n, fr.argtypes,
                  ARRAY(SELECT fuzz.ordinary(a.name, a.t, fr.oid) FROM unnest(fr.argnames, fr.argtypes) WITH ORDINALITY a(name, t, i) ORDER BY a.i) AS ord
             FROM fuzz.functions fr WHERE NOT fr.is_trigger)
INSERT INTO fuzz.cases (run_as, grp, fn, label, sql)
SELECT * FROM (
SELECT 'router', 'ordinary', w.sig, 'ordinary', fuzz.call_sql(w.fr, w.ord) FROM w
UNION ALL
SELECT 'router', 'null', w.sig, 'all-null', fuzz.call_sql(w.fr, array_fill('NULL'::text, ARRAY[w.n])) FROM w WHERE w.n > 0
UNION ALL
SELECT 'router', 'null', w.sig, format('arg%s-null', i), fuzz.call_sql(w.fr, w.ord[:i - 1] || 'NULL'::text || w.ord[i + 1:])
  FROM w CROSS JOIN generate_series(1, w.n) i WHERE w.n > 1
UNION ALL
SELECT 'router', 'odd', w.sig, format('arg%s-%s', i, o.label), fuzz.call_sql(w.fr, w.ord[:i - 1] || o.expr || w.ord[i + 1:])
  FROM w CROSS JOIN generate_series(1, w.n) i JOIN fuzz.odd o ON o.typ = w.argtypes[i]) c
ORDER BY 3, 4;
-- at most 200 odd values per function (the first values of every argument
-- first), so that a function with many arguments cannot stretch the check
DELETE FROM fuzz.cases c USING (
  SELECT id, row_number() OVER (PARTITION BY fn ORDER BY r, id) AS k
    FROM (SELECT id, fn, row_number() OVER (PARTITION BY fn, split_part(label, '-', 1) ORDER BY id) AS r
            FROM fuzz.cases WHERE grp = 'odd') x) y
 WHERE c.id = y.id AND y.k > 200;
-- trigger functions called directly: PostgreSQL's own refusal
INSERT INTO fuzz.cases (run_as, grp, fn, label, sql)
SELECT 'router', 'direct', sig, l, format(s, nspname, proname)
  FROM fuzz.functions, (VALUES ('select', 'SELECT %I.%I()'), ('from', 'SELECT * FROM %I.%I()')) v(l, s) WHERE is_trigger;
SQL

# ---- the relations a trigger function is attached to
sq >/dev/null <<SQL
-- the rows they hold, and the values written to them (ids of a real open interrupt)
CREATE TABLE fuzz.rowvals AS
  SELECT l AS label, jsonb_build_object('tenant', 'acme', 'interrupt_id', s.iid, 'run_id', s.run, 'root_run_id', s.run,
           'node_id', 'gate', 'visit', 0, 'ordinal', 0, 'key', 'k', 'kind', 'approval', 'payload', '{"kind": "approval"}'::jsonb,
           'status', l, 'requested_sequence', 5, 'created_at', '2020-01-01T00:00:00Z', 'expires_at', '2020-01-02T00:00:00Z',
           'sequence', 1, 'type', 'run.started', 'schema_version', 1, 'n', 1) AS j
    FROM fuzz.seed s, unnest(ARRAY['pending', 'expired', 'resolved']) l;
GRANT SELECT ON fuzz.rowvals TO $router;
-- its columns: the names of a table of the extension, text or jsonb, nullable
CREATE FUNCTION fuzz.cols(t regclass, typed boolean) RETURNS text LANGUAGE sql AS \$\$
  SELECT coalesce(string_agg(format('%I %s', attname, CASE WHEN typed THEN format_type(atttypid, atttypmod)
                                                       WHEN atttypid = 'jsonb'::regtype THEN 'jsonb' ELSE 'text' END), ', ' ORDER BY attnum), '')
    FROM pg_attribute WHERE attrelid = t AND attnum > 0 AND NOT attisdropped
\$\$;
CREATE TABLE fuzz.rels (rel text, grp text, cols text[], ddl text[]);
INSERT INTO fuzz.rels VALUES
  ('pg_temp.interrupts', 'temp_table', NULL, ARRAY[format('CREATE TEMP TABLE interrupts (%s)', fuzz.cols('openwop.interrupts', false))]),
  ('pg_temp.events', 'temp_table', NULL, ARRAY[format('CREATE TEMP TABLE events (%s)', fuzz.cols('openwop.events', false))]),
  ('pg_temp.open_interrupts', 'temp_table', NULL, ARRAY[format('CREATE TEMP TABLE open_interrupts (%s)', fuzz.cols('openwop.open_interrupts', false))]),
  ('pg_temp.fz_typed', 'temp_table', NULL, ARRAY[format('CREATE TEMP TABLE fz_typed (%s)', fuzz.cols('openwop.interrupts', true))]),
  ('pg_temp.fz_nocols', 'table_without_its_columns', NULL, ARRAY['CREATE TEMP TABLE fz_nocols ()']),
  ('pg_temp.fz_int', 'table_without_its_columns', NULL, ARRAY['CREATE TEMP TABLE fz_int (n integer)']),
  ('pg_temp.fz_view', 'view', NULL, ARRAY['CREATE TEMP VIEW fz_view AS SELECT * FROM pg_temp.interrupts']),
  ('pg_temp.fz_parted', 'partitioned_table', NULL, ARRAY[
     format('CREATE TEMP TABLE fz_parted (%s) PARTITION BY LIST (status)', fuzz.cols('openwop.interrupts', false)),
     'CREATE TEMP TABLE fz_parted_pending PARTITION OF fz_parted FOR VALUES IN (''pending'')',
     'CREATE TEMP TABLE fz_parted_other PARTITION OF fz_parted DEFAULT']),
  ('fuzz.fz_foreign', 'foreign_table', NULL, NULL);
-- the foreign table: postgres_fdw back into this database, as the login itself
CREATE SERVER fuzz_loopback FOREIGN DATA WRAPPER postgres_fdw
  OPTIONS (host '${PGHOST:-localhost}', port '${PGPORT:-5432}', dbname '$db');
CREATE USER MAPPING FOR $router SERVER fuzz_loopback OPTIONS (user '$router', password '${PGPASSWORD:-unused}');
CREATE USER MAPPING FOR CURRENT_USER SERVER fuzz_loopback OPTIONS (user '$router', password '${PGPASSWORD:-unused}');
GRANT USAGE ON FOREIGN SERVER fuzz_loopback TO $router;
DO \$\$ BEGIN
  EXECUTE format('CREATE TABLE fuzz.fz_remote (%s)', fuzz.cols('openwop.interrupts', false));
  EXECUTE format('CREATE FOREIGN TABLE fuzz.fz_foreign (%s) SERVER fuzz_loopback OPTIONS (schema_name %L, table_name %L)',
                 fuzz.cols('openwop.interrupts', false), 'fuzz', 'fz_remote');
END \$\$;
INSERT INTO fuzz.fz_remote SELECT (jsonb_populate_record(NULL::fuzz.fz_remote, j)).* FROM fuzz.rowvals;
INSERT INTO fuzz.fz_remote DEFAULT VALUES;
GRANT ALL ON fuzz.fz_remote, fuzz.fz_foreign TO $router;   -- TRIGGER included: the login attaches to it
UPDATE fuzz.rels r SET cols = ARRAY(SELECT attname FROM pg_attribute a WHERE a.attrelid = r.rel::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum)
 WHERE rel = 'fuzz.fz_foreign';
SQL
# the login's session: its TEMP relations, with rows (a session of its own
# after each crash makes them anew)
sq >/dev/null <<SQL
CREATE FUNCTION fuzz.session_setup() RETURNS void LANGUAGE plpgsql AS \$\$
DECLARE r record; s text;
BEGIN
  SET client_min_messages = warning;
  SET openwop.tenant = 'acme';    -- the tenant a login bound to every tenant calls in
  FOR r IN SELECT * FROM fuzz.rels WHERE ddl IS NOT NULL ORDER BY rel <> 'pg_temp.interrupts', rel LOOP
    FOREACH s IN ARRAY r.ddl LOOP EXECUTE s; END LOOP;
  END LOOP;
  FOR r IN SELECT * FROM fuzz.rels WHERE ddl IS NOT NULL AND rel <> 'pg_temp.fz_view' LOOP
    EXECUTE format('INSERT INTO %s DEFAULT VALUES', r.rel);
    IF r.rel NOT IN ('pg_temp.fz_nocols') THEN
      EXECUTE format('INSERT INTO %1\$s SELECT (jsonb_populate_record(NULL::%1\$s, j)).* FROM fuzz.rowvals', r.rel);
    END IF;
  END LOOP;
END \$\$;
GRANT EXECUTE ON FUNCTION fuzz.session_setup() TO $router;
GRANT SELECT ON fuzz.rels TO $router;
SQL
# the columns of the TEMP relations, as the login sees them
psql -X -q -A -t -v ON_ERROR_STOP=1 -d $db -U $router -c "SELECT fuzz.session_setup()" \
	-c "SELECT rel || '|' || coalesce((SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute
	      WHERE attrelid = rel::regclass AND attnum > 0 AND NOT attisdropped), '') FROM fuzz.rels WHERE ddl IS NOT NULL" \
	| grep '|' >"$work/cols"
while IFS='|' read -r rel cols; do
	q "UPDATE fuzz.rels SET cols = string_to_array('$cols', ',') WHERE rel = '$rel'" >/dev/null
done <"$work/cols"
[ "$(q "SELECT count(*) FROM fuzz.rels WHERE cols IS NULL")" = 0 ] || { echo "a relation has no column list" >&2; exit 1; }

# ---- the trigger cases: every timing, event and level, each fired by the
# statements of its event
sq >/dev/null <<'SQL'
CREATE TABLE fuzz.combos AS
  SELECT t AS timing, e AS event, l AS level,
         (CASE l WHEN 'ROW' THEN 1 ELSE 0 END) | (CASE t WHEN 'BEFORE' THEN 2 WHEN 'INSTEAD OF' THEN 64 ELSE 0 END) AS kind_bits,
         (CASE e WHEN 'INSERT' THEN 4 WHEN 'DELETE' THEN 8 WHEN 'UPDATE' THEN 16 ELSE 32 END) AS event_bit
    FROM unnest(ARRAY['BEFORE', 'AFTER', 'INSTEAD OF']) t, unnest(ARRAY['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE']) e,
         unnest(ARRAY['ROW', 'STATEMENT']) l;
-- the statements that fire an event on relation rel with columns cols;
-- rowsql selects a row of rel's type, the values written
CREATE FUNCTION fuzz.dml(rel text, cols text[], event text, rowsql text)
  RETURNS TABLE (label text, sql text) LANGUAGE sql AS $$
  SELECT v.label, v.sql FROM (VALUES
    ('insert-nulls', 'INSERT', format('INSERT INTO %s DEFAULT VALUES', rel)),
    ('insert-values', 'INSERT', CASE WHEN cardinality(cols) > 0 THEN format('INSERT INTO %s SELECT (p).* FROM (%s) s(p)', rel, rowsql) END),
    ('update-same', 'UPDATE', CASE WHEN cardinality(cols) > 0 THEN format('UPDATE %s SET %I = %I', rel, cols[1], cols[1]) END),
    ('update-nulls', 'UPDATE', CASE WHEN cardinality(cols) > 0 THEN format('UPDATE %s SET %s', rel,
       (SELECT string_agg(format('%I = NULL', c), ', ') FROM unnest(cols) c)) END),
    ('update-values', 'UPDATE', CASE WHEN cardinality(cols) > 0 THEN format('UPDATE %s t SET %s FROM (%s) s(p)', rel,
       (SELECT string_agg(format('%1$I = (s.p).%1$I', c), ', ') FROM unnest(cols) c), rowsql) END),
    ('delete', 'DELETE', format('DELETE FROM %s', rel)),
    ('truncate', 'TRUNCATE', format('TRUNCATE %s', rel))) v(label, ev, sql)
   WHERE v.ev = event AND v.sql IS NOT NULL
$$;
-- as the login: its own relations
INSERT INTO fuzz.cases (run_as, grp, fn, label, rel, attach, witness, sql, check_digest)
SELECT 'router', r.grp, f.sig, format('%s %s FOR EACH %s: %s', c.timing, c.event, c.level, d.label), r.rel,
       format('CREATE TRIGGER b_fuzz %s %s ON %s FOR EACH %s EXECUTE FUNCTION %s', c.timing, c.event, r.rel, c.level, f.sig),
       format('CREATE TRIGGER a_fuzz_witness %s %s ON %s FOR EACH %s EXECUTE FUNCTION fuzz.witness()', c.timing, c.event, r.rel, c.level),
       d.sql, true
  FROM fuzz.functions f, fuzz.rels r, fuzz.combos c,
       fuzz.dml(r.rel, r.cols, c.event, format('SELECT jsonb_populate_record(NULL::%s, j) FROM fuzz.rowvals WHERE label = %L', r.rel, 'pending')) d
 WHERE f.is_trigger
 ORDER BY f.sig, r.rel, c.timing, c.event, c.level, d.label;
-- as the superuser: the extension's tables, their own triggers disabled;
-- where the install script binds the function, only the other events
CREATE TABLE fuzz.home AS
  SELECT tgfoid AS fn, tgrelid AS rel, tgtype FROM pg_trigger t JOIN fuzz.functions f ON f.oid = t.tgfoid AND f.is_trigger
   WHERE NOT tgisinternal;
CREATE TABLE fuzz.ext_tables AS
  SELECT c.oid AS rel, c.oid::regclass::text AS name,
         ARRAY(SELECT attname FROM pg_attribute WHERE attrelid = c.oid AND attnum > 0 AND NOT attisdropped ORDER BY attnum) AS cols,
         coalesce((SELECT jsonb_object_agg(attname, 1) FROM pg_attribute a
                    WHERE a.attrelid = c.oid AND a.atttypid = 'text'::regtype
                      AND EXISTS (SELECT FROM pg_index i WHERE i.indrelid = c.oid AND i.indisunique AND a.attnum = ANY (i.indkey))), '{}') AS keys
    FROM pg_class c JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e'
    JOIN pg_extension e ON d.refobjid = e.oid AND e.extname = 'openwop_interrupt'
   WHERE c.relkind = 'r';
INSERT INTO fuzz.cases (run_as, grp, fn, label, rel, setup, attach, witness, sql)
SELECT 'super', CASE WHEN h.home THEN 'wrong_event_on_its_table' ELSE 'other_extension_table' END, f.sig,
       format('%s %s FOR EACH %s: %s', c.timing, c.event, c.level, d.label), t.name,
       format('ALTER TABLE %s DISABLE TRIGGER USER', t.name),
       format('CREATE TRIGGER b_fuzz %s %s ON %s FOR EACH %s EXECUTE FUNCTION %s', c.timing, c.event, t.name, c.level, f.sig),
       format('CREATE TRIGGER a_fuzz_witness %s %s ON %s FOR EACH %s EXECUTE FUNCTION fuzz.witness()', c.timing, c.event, t.name, c.level),
       d.sql
  FROM fuzz.functions f CROSS JOIN fuzz.ext_tables t CROSS JOIN fuzz.combos c
  CROSS JOIN LATERAL (SELECT EXISTS (SELECT FROM fuzz.home h WHERE h.fn = f.oid AND h.rel = t.rel) AS home,
                             EXISTS (SELECT FROM fuzz.home h WHERE h.fn = f.oid AND h.rel = t.rel
                                        AND h.tgtype & 67 = c.kind_bits AND h.tgtype & c.event_bit <> 0) AS bound) h
  CROSS JOIN LATERAL fuzz.dml(t.name, t.cols, c.event,
       format('SELECT jsonb_populate_record(NULL::%1$s, to_jsonb(x) || coalesce((SELECT jsonb_object_agg(k, (to_jsonb(x) ->> k) || %2$L) FROM jsonb_object_keys(%3$L::jsonb) k), %4$L)) FROM %1$s x LIMIT 1',
              t.name, '-fuzz', t.keys, '{}')) d
 WHERE f.is_trigger AND c.timing <> 'INSTEAD OF' AND NOT h.bound
 ORDER BY f.sig, t.name, c.timing, c.event, c.level, d.label;
SQL

# ---- the runner: each case in a subtransaction, its outcome committed
# before the next begins, so a crash leaves the culprit the first case
# without an outcome (synchronous commits: an asynchronous one lost in the
# crash would blame the case before)
sq >/dev/null <<SQL
GRANT SELECT, UPDATE ON fuzz.cases TO $router;
CREATE PROCEDURE fuzz.run(who text) LANGUAGE plpgsql AS \$\$
DECLARE
  c record; st text; msg text; phase text; n0 bigint; n1 bigint; d0 text; fired_ boolean; changed_ boolean; t0 timestamptz;
BEGIN
  FOR c IN SELECT * FROM fuzz.cases WHERE status IS NULL AND run_as = who ORDER BY id LOOP
    st := NULL; msg := NULL; fired_ := NULL; changed_ := NULL; t0 := clock_timestamp();
    IF c.attach IS NULL THEN
      phase := 'call';
      BEGIN
        EXECUTE c.sql;
        st := '00000';
      EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
      END;
    ELSE
      phase := 'attach';
      BEGIN
        IF c.setup IS NOT NULL THEN EXECUTE c.setup; END IF;
        EXECUTE c.attach;
        EXECUTE c.witness;
        phase := 'fire';
        IF c.check_digest THEN d0 := fuzz.ext_digest(); END IF;
        SELECT last_value INTO n0 FROM fuzz.fired;
        BEGIN
          EXECUTE c.sql;
          st := '00000';
        EXCEPTION WHEN OTHERS THEN
          GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
        END;
        SELECT last_value INTO n1 FROM fuzz.fired;
        fired_ := n1 > n0;
        IF c.check_digest THEN changed_ := fuzz.ext_digest() IS DISTINCT FROM d0; END IF;
        RAISE EXCEPTION 'undo the case' USING ERRCODE = 'FZ000';
      EXCEPTION WHEN OTHERS THEN
        IF phase = 'attach' OR SQLSTATE <> 'FZ000' THEN
          phase := phase || '-failed';
          GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
        END IF;
      END;
    END IF;
    UPDATE fuzz.cases SET status = CASE phase WHEN 'attach-failed' THEN 'not attached' WHEN 'fire-failed' THEN 'harness error' ELSE 'done' END,
           sqlstate = st, message = left(msg, 300), fired = fired_, changed = changed_,
           ms = round(extract(epoch FROM clock_timestamp() - t0) * 1000, 1)
     WHERE id = c.id;
    COMMIT;
  END LOOP;
END \$\$;
GRANT EXECUTE ON PROCEDURE fuzz.run(text) TO $router;
SQL
ncases=$(q "SELECT count(*) FROM fuzz.cases")
echo "$ncases cases: $(q "SELECT string_agg(grp || ' ' || n, ', ' ORDER BY grp) FROM (SELECT grp, count(*) n FROM fuzz.cases GROUP BY grp) g")"

# ---- run them: as the login, then as the superuser; a session lost is
# a crash (or a hang), its case marked, and a new session goes on
sessions_lost=0
server_up() {
	local deadline=$((SECONDS + 60))
	until psql -X -A -t -q -d $db -c "SELECT 1" >/dev/null 2>&1; do
		[ $SECONDS -lt $deadline ] || { echo "the server did not come back" >&2; return 1; }
		sleep 0.3
	done
}
run_cases() {    # run_cases router|super
	local who=$1 rc before id
	local -a login=()
	[ "$who" = router ] && login=(-U $router)
	while [ "$(q "SELECT count(*) FROM fuzz.cases WHERE status IS NULL AND run_as = '$who'")" != 0 ]; do
		before=$(crash_lines | wc -l)
		rc=0
		timeout 300 psql -X -q -v ON_ERROR_STOP=1 -d $db "${login[@]}" -c "SELECT fuzz.session_setup()" \
			-c "SET client_min_messages = warning" \
			-c "CALL fuzz.run('$who')" >"$work/run.log" 2>&1 || rc=$?
		[ $rc = 0 ] && continue
		sessions_lost=$((sessions_lost + 1))
		server_up
		id=$(q "SELECT min(id) FROM fuzz.cases WHERE status IS NULL AND run_as = '$who'")
		if [ "$(crash_lines | wc -l)" -gt "$before" ]; then
			q "UPDATE fuzz.cases SET status = 'crashed', message = 'backend crashed: ' || replace(\$m\$$(crash_lines | tail -n 1 | cut -c1-200)\$m\$, chr(10), ' ') WHERE id = $id" >/dev/null
		elif [ $rc = 124 ]; then
			q "UPDATE fuzz.cases SET status = 'hung', message = 'no outcome within 300 s' WHERE id = $id" >/dev/null
		else
			q "UPDATE fuzz.cases SET status = 'session lost', message = left(\$m\$$(tail -n 3 "$work/run.log" | tr '\n' ' ')\$m\$, 300) WHERE id = $id" >/dev/null
		fi
		[ $sessions_lost -le 60 ] || { echo "more than 60 sessions lost; the rest of the cases not run" >&2; break; }
	done
}
run_cases router
run_cases super
echo "ran $ncases cases in $((SECONDS - started)) s"

# ---- the outcome
failures=0
assert() {    # assert NAME SQL-listing-the-violations
	local out
	out=$(psql -X -q -A -t -F ' | ' -v ON_ERROR_STOP=1 -d $db -c "$2")
	if [ -z "$out" ]; then
		echo "ok - $1"
	else
		failures=$((failures + 1))
		echo "not ok - $1 ($(echo "$out" | wc -l) cases)"
		echo "$out" | head -n 40 | sed 's/^/    /'
		[ "$(echo "$out" | wc -l)" -le 40 ] || echo "    ..."
	fi
}
q "CREATE VIEW fuzz.shown AS SELECT id, fn, coalesce(rel || ' ', '') || label AS what, status, sqlstate, message, sql FROM fuzz.cases" >/dev/null
crashed="status IN ('crashed', 'hung', 'session lost', 'harness error') OR status IS NULL"
show_call="fn, what, coalesce(sqlstate, status), left(message, 160), left(sql, 300)"
show_trig="fn, what, coalesce(sqlstate, status), left(message, 160)"
worst="status = 'done' AND sqlstate IS DISTINCT FROM 'XX000', status = 'done', id"

echo "== function calls (as $router)"
assert no_function_crashes_on_null_arguments "SELECT $show_call FROM fuzz.shown WHERE id IN (SELECT id FROM fuzz.cases WHERE grp = 'null' AND ($crashed OR sqlstate = 'XX000')) ORDER BY $worst"
assert no_function_crashes_on_odd_values "SELECT $show_call FROM fuzz.shown WHERE id IN (SELECT id FROM fuzz.cases WHERE grp = 'odd' AND ($crashed OR sqlstate = 'XX000')) ORDER BY $worst"
assert no_function_crashes_on_ordinary_values "SELECT $show_call FROM fuzz.shown WHERE id IN (SELECT id FROM fuzz.cases WHERE grp = 'ordinary' AND ($crashed OR sqlstate = 'XX000')) ORDER BY $worst"
# PostgreSQL refuses a trigger function in FROM (42804) but calls a C one in
# a select list, with no trigger data: the function refuses (39P01)
assert trigger_function_refuses_direct_call "SELECT $show_call FROM fuzz.shown WHERE id IN (SELECT id FROM fuzz.cases WHERE grp = 'direct'
  AND ($crashed OR sqlstate IS NULL OR sqlstate NOT IN ('39P01', '42804', '0A000'))) ORDER BY $worst"

echo "== trigger functions attached where the install script does not bind them"
assert no_trigger_function_crash_when_attached_elsewhere "SELECT fn, what, status, sql FROM fuzz.shown
  WHERE id IN (SELECT id FROM fuzz.cases WHERE attach IS NOT NULL AND ($crashed)) ORDER BY $worst"
for g in temp_table table_without_its_columns view partitioned_table foreign_table other_extension_table; do
	assert trigger_function_refuses_$g "SELECT $show_trig FROM fuzz.shown WHERE id IN (SELECT id FROM fuzz.cases WHERE grp = '$g'
	  AND ($crashed OR sqlstate = 'XX000' OR (fired AND sqlstate IS DISTINCT FROM '39P01'))) ORDER BY $worst"
done
# on its own table, another event than the install script binds is refused
# (39P01, or the function's own refusal: the event log's 42501), never done
assert trigger_function_refuses_wrong_event_on_its_table "SELECT $show_trig FROM fuzz.shown WHERE id IN (SELECT id FROM fuzz.cases
  WHERE grp = 'wrong_event_on_its_table' AND ($crashed OR sqlstate = 'XX000' OR (fired AND sqlstate = '00000'))) ORDER BY $worst"
assert trigger_function_attached_elsewhere_changes_no_row_of_the_extension "SELECT $show_trig FROM fuzz.shown WHERE id IN (SELECT id FROM fuzz.cases WHERE changed) ORDER BY $worst"
# the harness reached them: each function fired on each relation CREATE TRIGGER let it onto
assert trigger_fuzz_fired_on_every_relation "SELECT fn, rel, 'never fired' FROM fuzz.cases WHERE attach IS NOT NULL GROUP BY fn, rel
  HAVING count(*) FILTER (WHERE status = 'done' OR status = 'crashed') > 0 AND NOT bool_or(coalesce(fired, false) OR status = 'crashed') ORDER BY 1, 2"

echo "== everywhere"
assert no_internal_error "SELECT $show_trig FROM fuzz.shown WHERE sqlstate = 'XX000' ORDER BY $worst"
assert no_case_left_without_outcome "SELECT $show_trig FROM fuzz.shown WHERE status IS NULL OR status IN ('hung', 'session lost', 'harness error') ORDER BY $worst"
if [ $sessions_lost = 0 ]; then echo "ok - fuzz_sessions_survive"; else failures=$((failures + 1)); echo "not ok - fuzz_sessions_survive ($sessions_lost sessions lost)"; fi
if [ -z "$(crash_lines)" ]; then
	echo "ok - no_backend_crash_in_server_log"
else
	failures=$((failures + 1))
	echo "not ok - no_backend_crash_in_server_log ($(crash_lines | wc -l) lines)"
	tail -n "+$log_from" "$log" | grep -E -A2 'terminated by signal|was terminated' | head -n 60 | sed 's/^/    /'
fi

echo "== per function: calls and statements, SQLSTATEs"
psql -X -q -P pager=off -d $db -c "SELECT fn AS function, count(*) AS cases,
    count(*) FILTER (WHERE attach IS NOT NULL AND status = 'not attached') AS not_attached,
    count(*) FILTER (WHERE fired) AS fired,
    string_agg(DISTINCT coalesce(sqlstate, status), ' ') FILTER (WHERE status <> 'not attached') AS sqlstates
  FROM fuzz.cases GROUP BY fn ORDER BY fn"
echo "== notable outcomes (not failures): stack depth, statement timeout, out of memory, program limits"
psql -X -q -A -t -F ' | ' -d $db -c "SELECT fn, label, sqlstate, left(message, 120) FROM fuzz.cases
  WHERE sqlstate IN ('54001', '54000', '57014', '53200', '53100') ORDER BY $worst" | head -n 20 | sed 's/^/    /'
echo "== odd arguments that never reached the function (the argument itself was refused)"
psql -X -q -A -t -F ' | ' -d $db -c "SELECT sqlstate, count(*), min(fn || ' ' || label), left(min(message), 100) FROM fuzz.cases
  WHERE attach IS NULL AND sqlstate ~ '^(22|42)' GROUP BY sqlstate ORDER BY 1" | sed 's/^/    /'
echo "== wrong events on its own table refused otherwise than with 39P01"
psql -X -q -A -t -F ' | ' -d $db -c "SELECT fn, coalesce(rel || ' ', '') || label, sqlstate FROM fuzz.cases
  WHERE grp = 'wrong_event_on_its_table' AND fired AND sqlstate <> '39P01' ORDER BY $worst" | sed 's/^/    /'
echo "== slowest cases"
psql -X -q -A -t -F ' | ' -d $db -c "SELECT ms || ' ms', fn, coalesce(rel || ' ', '') || label FROM fuzz.cases WHERE ms IS NOT NULL ORDER BY ms DESC LIMIT 5" | sed 's/^/    /'

crashes=$(q "SELECT count(*) FROM fuzz.cases WHERE status = 'crashed'")
internal=$(q "SELECT count(*) FROM fuzz.cases WHERE sqlstate = 'XX000'")
echo "function_fuzz: $ncases cases over $nfun functions in $((SECONDS - started)) s; $crashes crashes, $internal internal errors, $failures assertions failed"
[ "$failures" = 0 ]
