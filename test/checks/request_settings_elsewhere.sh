#!/usr/bin/env bash
# request_settings_elsewhere: the library is loaded in every database of
# the server and defines request.jwt.claims and request.headers there, but
# refuses them to anything but the session's own SET or set_config() only
# in a database whose callers it names (one with openwop_interrupt or
# openwop_router).  In any other database another application keeps using
# them as PostgreSQL's placeholders allow: a SECURITY DEFINER function and a
# trigger set them, a database and a role default apply.  In a database
# with the extension the same are refused.  Needs the cluster test/run
# starts.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
plain=openwop_settings_plain
guarded=openwop_settings_guarded
later=openwop_settings_later
role=openwop_settings_role
cleanup() {
	for d in $plain $guarded $later; do dropdb --if-exists $d >/dev/null 2>&1 || true; done
	psql -X -q -d postgres -c "DROP ROLE IF EXISTS $role" -c "DROP ROLE IF EXISTS openwop_settings_authenticator" >/dev/null 2>&1 || true
}
trap cleanup EXIT
cleanup
createdb $plain
createdb $guarded
psql -X -q -v ON_ERROR_STOP=1 -d $guarded -c "CREATE EXTENSION openwop_interrupt" >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE ROLE $role LOGIN PASSWORD '${PGPASSWORD:-unused}'" >/dev/null

# what each database lets code other than the session's own do
setup='CREATE FUNCTION public.definer_sets() RETURNS text LANGUAGE sql SECURITY DEFINER
         AS $$ SELECT set_config('"'"'request.jwt.claims'"'"', '"'"'{"sub": "boss"}'"'"', true) $$;
       CREATE TABLE public.t (x int);
       CREATE FUNCTION public.trigger_sets() RETURNS trigger LANGUAGE plpgsql
         AS $$ BEGIN PERFORM set_config('"'"'request.headers'"'"', '"'"'{"idempotency-key": "k"}'"'"', true); RETURN NEW; END $$;
       CREATE TRIGGER t_sets BEFORE INSERT ON public.t FOR EACH ROW EXECUTE FUNCTION public.trigger_sets();'
for d in $plain $guarded; do
	psql -X -q -v ON_ERROR_STOP=1 -d $d -c "$setup" >/dev/null
done
try() {   # try DB SQL: the output, or the error's first line
	{ psql -X -A -t -q -v ON_ERROR_STOP=1 -d "$1" -c "$2" 2>&1 || true; } | head -n 1
}

# in a database without the extension: as PostgreSQL's placeholders behave
[ "$(psql -X -A -t -q -d $plain -c "BEGIN" -c "SELECT public.definer_sets()" -c "SELECT current_setting('request.jwt.claims')" -c "COMMIT" | tail -n 1)" = '{"sub": "boss"}' ]
[ "$(psql -X -A -t -q -d $plain -c "BEGIN" -c "INSERT INTO public.t VALUES (1)" -c "SELECT current_setting('request.headers')" -c "COMMIT" | tail -n 1)" = '{"idempotency-key": "k"}' ]
psql -X -q -v ON_ERROR_STOP=1 -d $plain -c "ALTER DATABASE $plain SET request.headers = '{\"x\": \"1\"}'" \
	-c "ALTER ROLE $role IN DATABASE $plain SET request.jwt.claims = '{\"sub\": \"r\"}'" >/dev/null
[ "$(psql -X -A -t -q -d $plain -U $role -c "SELECT current_setting('request.jwt.claims') || ' ' || current_setting('request.headers')")" = '{"sub": "r"} {"x": "1"}' ]
echo "request_settings_elsewhere: in a database without the extension, a SECURITY DEFINER function, a trigger, a database and a role default set them"

# in a database with the extension: refused (42501), nothing set
out=$(try $guarded "SELECT public.definer_sets()")
echo "$out" | grep -q "cannot be set inside a SECURITY DEFINER function" || { echo "a SECURITY DEFINER function set the claims where the extension is: $out" >&2; exit 1; }
out=$(try $guarded "INSERT INTO public.t VALUES (1)")
echo "$out" | grep -q "cannot be set inside" || { echo "a trigger set the headers where the extension is: $out" >&2; exit 1; }
out=$(try $guarded "ALTER DATABASE $guarded SET request.headers = '{}'")
echo "$out" | grep -q "can only be set by SET or set_config" || { echo "a database default of the headers was taken where the extension is: $out" >&2; exit 1; }
psql -X -q -v ON_ERROR_STOP=1 -d $plain -c "ALTER ROLE $role IN DATABASE $guarded SET request.jwt.claims = '{\"sub\": \"r\"}'" >/dev/null
[ "$(psql -X -A -t -q -d $guarded -U $role -c "SELECT current_setting('request.jwt.claims')" 2>/dev/null)" = "" ]
echo "request_settings_guarded: where the extension is, the same are refused, and a role default stored from elsewhere is not applied"

# request_settings_unguarded_never_trusted: a value taken while a database
# was not guarded (a default the database's owner set, a SECURITY DEFINER
# function's) is never a caller's identity once the extension is there: not
# when the session goes on after CREATE EXTENSION, nor when the end of a
# request's transaction restores it
createdb $later
forged='{"sub": "cfo", "tenant": "acme", "scope": "approvals:respond"}'
psql -X -q -v ON_ERROR_STOP=1 -d $later -c "ALTER DATABASE $later SET request.jwt.claims = '$forged'" \
	-c "CREATE ROLE openwop_settings_authenticator" -c "GRANT openwop_settings_authenticator TO CURRENT_USER" \
	-c "CREATE FUNCTION public.definer_sets_session() RETURNS text LANGUAGE sql SECURITY DEFINER
	      AS \$\$ SELECT set_config('request.jwt.claims', '$forged', false) \$\$" >/dev/null
caller_in_session() {   # the caller, or the refusal, at each step of one session that sees the extension installed
	psql -X -A -t -q -d $later 2>&1 <<SQL | grep -v '^$' || true
SET openwop.jwt_session_role = 'openwop_settings_authenticator';
$1
CREATE EXTENSION openwop_interrupt;
SELECT openwop.current_caller() ->> 'subject';
BEGIN;
SELECT set_config('request.jwt.claims', '{"sub": "clerk", "tenant": "acme"}', true) IS NOT NULL;
SELECT openwop.current_caller() #>> '{subject,subjectId}';
COMMIT;
SELECT openwop.current_caller() ->> 'subject';
DROP EXTENSION openwop_interrupt;
SQL
}
out=$(caller_in_session "SELECT current_setting('request.jwt.claims') IS NOT NULL;")
[ "$(echo "$out" | grep -c 'forbidden: openwop cannot tell who is calling')" = 2 ] && ! echo "$out" | grep -q cfo &&
	echo "$out" | grep -qx clerk || { echo "a database default taken before the extension was installed named the caller:" >&2; echo "$out" >&2; exit 1; }
psql -X -q -d $later -c "ALTER DATABASE $later RESET request.jwt.claims" >/dev/null
out=$(caller_in_session "SELECT public.definer_sets_session() IS NOT NULL;")
[ "$(echo "$out" | grep -c 'forbidden: openwop cannot tell who is calling')" = 2 ] && ! echo "$out" | grep -q cfo &&
	echo "$out" | grep -qx clerk || { echo "claims a SECURITY DEFINER function set before the extension was installed named the caller:" >&2; echo "$out" >&2; exit 1; }
echo "request_settings_unguarded_never_trusted: a default and a SECURITY DEFINER function's claims from before CREATE EXTENSION are refused (403), before and after a request of the session's own (which is served)"

# request_settings_no_database: a backend of no database (a physical
# walsender) does not read the catalog to decide; the claims are refused
out=$(psql -X -A -t "dbname=replication replication=true options='-c request.jwt.claims={}'" -c "IDENTIFY_SYSTEM" 2>&1 || true)
echo "$out" | grep -q "can only be set by SET or set_config" || { echo "a walsender's startup option: $out" >&2; exit 1; }
echo "request_settings_no_database: a walsender's startup claims are refused without reading a catalog"

# request_settings_refusal_frees: a refused openwop.forwarded_caller leaves
# nothing allocated behind (each refusal leaked its approval once): after a
# first round of refusals has grown what it may, a second round of as many
# grows the backend by less than 2 MB
rss_growth=$(psql -X -A -t -q -d $guarded 2>/dev/null <<'SQL' | tail -n 1
CREATE TEMP TABLE rss (n int, kb bigint);
CREATE FUNCTION pg_temp.rss_kb() RETURNS bigint LANGUAGE sql
    AS $$ SELECT (regexp_match(pg_read_file('/proc/' || pg_backend_pid() || '/status'), 'VmRSS:\s+(\d+)'))[1]::bigint $$;
DO $$ BEGIN FOR i IN 1..200000 LOOP BEGIN PERFORM set_config('openwop.forwarded_caller', '{"x": 1}', false);
      EXCEPTION WHEN insufficient_privilege THEN NULL; END; END LOOP; END $$;
INSERT INTO rss SELECT 1, pg_temp.rss_kb();
DO $$ BEGIN FOR i IN 1..200000 LOOP BEGIN PERFORM set_config('openwop.forwarded_caller', '{"x": 1}', false);
      EXCEPTION WHEN insufficient_privilege THEN NULL; END; END LOOP; END $$;
INSERT INTO rss SELECT 2, pg_temp.rss_kb();
SELECT max(kb) FILTER (WHERE n = 2) - max(kb) FILTER (WHERE n = 1) FROM rss;
SQL
)
[ -n "$rss_growth" ] && [ "$rss_growth" -lt 2048 ] || { echo "200,000 more refusals grew the backend by ${rss_growth:-?} kB" >&2; exit 1; }
echo "request_settings_refusal_frees: 200,000 more refused forwarded callers grew the backend by $rss_growth kB"
