#!/usr/bin/env bash
# Identity where the server runs somebody else's code (docs/security.md).
# mallory, an approver of tenant evil, indexes a table of hers with an
# "IMMUTABLE" function that sets request.jwt.claims to the CFO of acme and
# resolves acme's CFO-only gate.  Autovacuum's ANALYZE (in the bootstrap
# superuser's session) and a DBA's VACUUM FULL evaluate it; both are
# security-restricted operations, where openwop gives no identity at all:
# every attempt is refused 403 and the gate stays pending.  Autovacuum is
# made deterministic: a 1 s naptime, analyze thresholds of 0 on her table,
# and the check waits for its last_autoanalyze.
#
# Also: a binding a DBA gives a login with ALTER ROLE ... SET applies when
# it logs in, and the login cannot undo it, not even with a startup option;
# and in a server that did not preload the library (where a session could
# set openwop.* and request.jwt.claims unchecked before it loads), openwop
# names no caller at all.  Needs the cluster test/run starts.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
db=openwop_identity
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d $db -c "$1" | tail -n 1; }
cleanup() {
	psql -X -q -d postgres -c "ALTER SYSTEM RESET autovacuum_naptime" -c "SELECT pg_reload_conf()" >/dev/null 2>&1 || true
	psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
	psql -X -q -d postgres -c "DROP ROLE IF EXISTS idm_mallory" -c "DROP ROLE IF EXISTS idm_bound" -c "DROP ROLE IF EXISTS idm_auth" >/dev/null 2>&1 || true
}
trap cleanup EXIT
cleanup

psql -X -q -d postgres -c "CREATE DATABASE $db" -c "CREATE ROLE idm_mallory LOGIN" -c "CREATE ROLE idm_bound LOGIN" >/dev/null
make_login_approver $db
psql -X -q -v ON_ERROR_STOP=1 -d $db >/dev/null <<'SQL'
CREATE EXTENSION openwop_interrupt;
GRANT openwop_approver TO idm_mallory;
GRANT USAGE ON SCHEMA openwop TO idm_mallory, idm_bound;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop TO idm_mallory, idm_bound;
SET openwop.tenant = 'acme';
SELECT openwop.create_run('identity', '{"runId": "acme/idm-cfo-0000000001"}');
SELECT openwop.start_node('acme/idm-cfo-0000000001', 'gate');
SELECT openwop.interrupt('acme/idm-cfo-0000000001', 'gate', '{"kind": "approval", "data": {"artifactId": "a",
  "artifactType": "doc", "title": "T", "actions": ["accept", "reject"], "approversList": ["cfo@example.org"]}}');

CREATE SCHEMA mallory AUTHORIZATION idm_mallory;
SET ROLE idm_mallory;
-- via: what evaluated it (a client sets mallory.via; autovacuum sets nothing);
-- step: setting the claims, then resolving (whatever became of the claims)
CREATE TABLE mallory.outcome (via text, step text, outcome text, message text);
CREATE FUNCTION mallory.try_grant() RETURNS void LANGUAGE plpgsql AS $f$
DECLARE msg text; via text := coalesce(current_setting('mallory.via', true), 'autovacuum');
BEGIN
  BEGIN
    PERFORM set_config('request.jwt.claims', '{"sub": "cfo@example.org", "tenant": "acme", "scope": "approvals:respond"}', true);
    INSERT INTO mallory.outcome VALUES (via, 'claims', 'set', NULL);
  EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT;
    INSERT INTO mallory.outcome VALUES (via, 'claims', SQLSTATE, msg);
  END;
  BEGIN
    PERFORM openwop.resolve_interrupt('acme/idm-cfo-0000000001', 'gate', '{"action": "accept"}');
    INSERT INTO mallory.outcome VALUES (via, 'resolve', 'granted', NULL);
  EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT;
    INSERT INTO mallory.outcome VALUES (via, 'resolve', SQLSTATE, msg);
  END;
END $f$;
CREATE FUNCTION mallory.grant_cfo(i int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $f$
BEGIN
  PERFORM mallory.try_grant();
  RETURN i;
END $f$;
CREATE TABLE mallory.docs (i int) WITH (autovacuum_analyze_threshold = 0, autovacuum_analyze_scale_factor = 0);
CREATE INDEX docs_by_grant ON mallory.docs (mallory.grant_cfo(i));
RESET ROLE;
SQL
# the outcome of CREATE INDEX on an empty table: nothing evaluated yet
[ "$(q "SELECT count(*) FROM mallory.outcome")" = 0 ]

# autovacuum, made to come round every second, analyzes her table once it has rows
psql -X -q -d postgres -c "ALTER SYSTEM SET autovacuum_naptime = '1s'" -c "SELECT pg_reload_conf()" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -d $db -c "SET mallory.via = 'INSERT'" -c "INSERT INTO mallory.docs SELECT g FROM generate_series(1, 10) g" >/dev/null
deadline=$((SECONDS + 60))
until [ "$(q "SELECT last_autoanalyze IS NOT NULL FROM pg_stat_user_tables WHERE relid = 'mallory.docs'::regclass")" = t ]; do
	[ $SECONDS -lt $deadline ] || { echo "autovacuum did not analyze mallory.docs within 60 s" >&2; exit 1; }
	sleep 0.5
done
echo "autovacuum analyzed mallory.docs; what her code got there:"
q "SELECT string_agg(DISTINCT step || ': ' || outcome || ' ' || message, '; ') FROM mallory.outcome WHERE via = 'autovacuum'"
[ "$(q "SELECT count(*) > 0 FROM mallory.outcome WHERE via = 'autovacuum'")" = t ]
[ "$(q "SELECT string_agg(DISTINCT step || ' ' || outcome, ',' ORDER BY step || ' ' || outcome) FROM mallory.outcome WHERE via = 'autovacuum'")" = "claims 42501,resolve PT403" ]
[ "$(q "SELECT bool_and(message LIKE '%inside a security-restricted operation%') FROM mallory.outcome WHERE via = 'autovacuum' AND step = 'resolve'")" = t ]

# a DBA's VACUUM FULL rebuilds her index: the same
psql -X -q -v ON_ERROR_STOP=1 -d $db -c "SET mallory.via = 'VACUUM FULL'" -c "VACUUM FULL mallory.docs" >/dev/null
[ "$(q "SELECT count(*) FROM mallory.outcome WHERE via = 'VACUUM FULL' AND step = 'resolve' AND message LIKE '%inside a security-restricted operation%'")" = 10 ]
[ "$(q "SELECT count(*) FROM mallory.outcome WHERE via = 'VACUUM FULL' AND step = 'claims' AND outcome = '42501'")" = 10 ]

# nothing happened to the gate
[ "$(q "SELECT status FROM openwop.interrupts WHERE run_id = 'acme/idm-cfo-0000000001'")" = pending ]
[ "$(q "SELECT count(*) FROM openwop.events WHERE run_id = 'acme/idm-cfo-0000000001' AND type = 'interrupt.resolved'")" = 0 ]
echo "autovacuum and VACUUM FULL: refused, the gate is pending"

# a request session (the authenticator's login) calling a SECURITY DEFINER function of hers
# that leaves work behind for COMMIT: a deferred trigger on her table, a WITH HOLD cursor.
# Both run as code that is not the request's own: they cannot set the claims, and the
# request stays the clerk's (who holds no scope)
psql -X -q -v ON_ERROR_STOP=1 -d $db >/dev/null <<SQL
CREATE ROLE idm_auth LOGIN PASSWORD '${PGPASSWORD:-unused}';
ALTER ROLE idm_auth SET openwop.jwt_session_role = 'idm_auth';
ALTER ROLE idm_auth SET openwop.bound_tenant = '*';
GRANT USAGE ON SCHEMA openwop TO idm_auth;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop TO idm_auth;
GRANT USAGE ON SCHEMA mallory TO idm_auth;
SET ROLE idm_mallory;
GRANT INSERT ON mallory.outcome TO PUBLIC;    -- her code, run by others, reports back
CREATE TABLE mallory.q (i int);
CREATE FUNCTION mallory.q_fire() RETURNS trigger LANGUAGE plpgsql AS \$f\$
BEGIN PERFORM mallory.try_grant(); RETURN NULL; END \$f\$;
CREATE CONSTRAINT TRIGGER q_later AFTER INSERT ON mallory.q DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION mallory.q_fire();
CREATE FUNCTION mallory.harmless() RETURNS int LANGUAGE sql SECURITY DEFINER AS 'INSERT INTO mallory.q VALUES (1) RETURNING 1';
CREATE FUNCTION mallory.held(i int) RETURNS int LANGUAGE plpgsql AS \$f\$ BEGIN PERFORM mallory.try_grant(); RETURN i; END \$f\$;
CREATE FUNCTION mallory.hold() RETURNS int LANGUAGE plpgsql SECURITY DEFINER AS \$f\$
BEGIN EXECUTE 'DECLARE mc CURSOR WITH HOLD FOR SELECT mallory.held(1)'; RETURN 1; END \$f\$;
RESET ROLE;
SQL
as_auth() { psql -X -A -t -q -U idm_auth -d $db -c "$1" 2>&1 || true; }
as_auth "BEGIN; SET LOCAL mallory.via = 'deferred trigger';
         SELECT set_config('request.jwt.claims', '{\"sub\": \"clerk\", \"tenant\": \"acme\"}', true);
         SELECT mallory.harmless(); COMMIT;" >/dev/null
as_auth "BEGIN; SET LOCAL mallory.via = 'WITH HOLD cursor';
         SELECT set_config('request.jwt.claims', '{\"sub\": \"clerk\", \"tenant\": \"acme\"}', true);
         SELECT mallory.hold(); COMMIT;" >/dev/null
for via in 'deferred trigger' 'WITH HOLD cursor'; do
	got=$(q "SELECT string_agg(DISTINCT step || ' ' || outcome, ',' ORDER BY step || ' ' || outcome) FROM mallory.outcome WHERE via = '$via'")
	[ "$got" = "claims 42501,resolve PT403" ] || { echo "$via: [$got]" >&2; exit 1; }
done
[ "$(q "SELECT status FROM openwop.interrupts WHERE run_id = 'acme/idm-cfo-0000000001'")" = pending ]
echo "a deferred trigger and a WITH HOLD cursor left by SECURITY DEFINER code cannot set a request's claims"

# a binding given with ALTER ROLE applies at login; the login cannot undo it
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "ALTER ROLE idm_bound SET openwop.bound_tenant = 'acme'" \
	-c "ALTER ROLE idm_bound PASSWORD '${PGPASSWORD:-unused}'" >/dev/null
as_bound() { psql -X -A -t -q -U idm_bound -d $db -c "$1" 2>&1 || true; }
[ "$(as_bound "SELECT openwop.current_caller() ->> 'tenant'")" = acme ]
as_bound "SET openwop.bound_tenant = '*'" | grep -q 'permission denied to set parameter "openwop.bound_tenant"'
as_bound "ALTER ROLE CURRENT_USER SET openwop.bound_tenant = '*'" | grep -q 'permission denied'
[ "$(psql -X -A -t -q -U idm_bound -d $db -c "RESET ALL" -c "SHOW openwop.bound_tenant" | tail -n 1)" = acme ]
as_bound "SET openwop.tenant = 'globex'; SELECT openwop.current_caller()" | grep -q id_tenant_mismatch
PGOPTIONS="-c openwop.bound_tenant=globex" as_bound "SELECT openwop.current_caller()" | grep -q 'permission denied to set parameter "openwop.bound_tenant"'
PGOPTIONS="-c request.jwt.claims={}" as_bound "SELECT 1" | grep -q 'request.jwt.claims can only be set by SET or set_config'
echo "ALTER ROLE ... SET openwop.bound_tenant binds the login; it cannot change it, not even at startup"

# a server that did not preload the library names no caller
scratch=$(mktemp -d)
chown postgres "$scratch"
port=$((PGPORT + 137))
runuser -u postgres -- initdb -D "$scratch/data" -A trust >/dev/null
runuser -u postgres -- pg_ctl -D "$scratch/data" -o "-p $port -k $scratch -c listen_addresses=''" -l "$scratch/log" -w start >/dev/null
stop_scratch() { runuser -u postgres -- pg_ctl -D "$scratch/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$scratch"; }
trap 'stop_scratch; cleanup' EXIT
out=$(psql -X -A -t -q -h "$scratch" -p $port -U postgres -d postgres \
	-c "SET request.jwt.claims = '{\"sub\": \"cfo@example.org\"}'" -c "SET openwop.bound_tenant = '*'" \
	-c "CREATE EXTENSION openwop_interrupt" -c "SELECT openwop.current_caller()" 2>&1 || true)
grep -q 'openwop_interrupt must be loaded at server start to tell who is calling' <<<"$out"
echo "without shared_preload_libraries, openwop names no caller"
