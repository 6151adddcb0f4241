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
role=openwop_settings_role
cleanup() {
	for d in $plain $guarded; do dropdb --if-exists $d >/dev/null 2>&1 || true; done
	psql -X -q -d postgres -c "DROP ROLE IF EXISTS $role" >/dev/null 2>&1 || true
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
