#!/usr/bin/env bash
# The log leaves the database by logical decoding: a publication of
# openwop.events (pgoutput) on a throwaway primary with wal_level = logical,
# and a subscriber cluster with a plain table of the same shape (another
# system; it knows nothing of the extension).  The subscriber receives every
# event of a run in the order of its sequence, in the shape the log has;
# nothing arrives for a refused call, a rolled-back transaction or a
# rolled-back savepoint.  Needs root (the clusters run as postgres).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
throwaway_begin
work=$THROWAWAY
trap throwaway_end EXIT
opts="-k $work -c listen_addresses=''"
pub() { psql -X -A -t -q -v ON_ERROR_STOP=1 -h "$work" -p 5821 -U postgres -d postgres -c "SET openwop.tenant = 'acme'" "$@" | tail -n 1; }
sub() { psql -X -A -t -q -v ON_ERROR_STOP=1 -h "$work" -p 5822 -U postgres -d postgres "$@" | tail -n 1; }

as_pg "$PGBIN/initdb -D $work/pub -A trust --encoding=UTF8 --locale=C.UTF-8" >/dev/null
as_pg "$PGBIN/pg_ctl -D $work/pub -l $work/pub.log -o \"-p 5821 $opts -c shared_preload_libraries=openwop_interrupt -c wal_level=logical\" -w start" >/dev/null
as_pg "$PGBIN/initdb -D $work/sub -A trust --encoding=UTF8 --locale=C.UTF-8" >/dev/null
as_pg "$PGBIN/pg_ctl -D $work/sub -l $work/sub.log -o \"-p 5822 $opts\" -w start" >/dev/null

psql -X -q -v ON_ERROR_STOP=1 -h "$work" -p 5821 -U postgres -d postgres >/dev/null <<'SQL'
CREATE EXTENSION openwop_interrupt;
CREATE ROLE openwop_approver;
GRANT openwop_approver TO postgres;
CREATE PUBLICATION openwop_events FOR TABLE openwop.events;
SQL
# the subscriber: the log's shape, and the order in which rows arrive
psql -X -q -v ON_ERROR_STOP=1 -h "$work" -p 5822 -U postgres -d postgres >/dev/null <<SQL
CREATE SCHEMA openwop;
CREATE TABLE openwop.events (
    tenant text NOT NULL, run_id text NOT NULL, sequence bigint NOT NULL, type text NOT NULL,
    node_id text, payload jsonb NOT NULL, created_at timestamptz NOT NULL, schema_version integer NOT NULL,
    causation_id text, hash bytea NOT NULL, PRIMARY KEY (tenant, run_id, sequence));
CREATE TABLE arrivals (n bigserial PRIMARY KEY, run_id text, sequence bigint);
CREATE FUNCTION arrived() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN INSERT INTO public.arrivals (run_id, sequence) VALUES (NEW.run_id, NEW.sequence); RETURN NEW; END \$\$;
CREATE TRIGGER arrived AFTER INSERT ON openwop.events FOR EACH ROW EXECUTE FUNCTION arrived();
ALTER TABLE openwop.events ENABLE ALWAYS TRIGGER arrived;
CREATE SUBSCRIPTION openwop_events CONNECTION 'host=$work port=5821 dbname=postgres user=postgres' PUBLICATION openwop_events;
SQL

# a whole run, each call its own transaction, as an engine and an approver make them
run=acme/decoding-run-000001
for call in "openwop.create_run('decoding', '{\"runId\": \"$run\"}')" \
	"openwop.start_node('$run', 'fetch')" "openwop.complete_node('$run', 'fetch', '{\"receipt\": \"r-1\"}')" \
	"openwop.start_node('$run', 'gate')" \
	"openwop.interrupt('$run', 'gate', '{\"kind\": \"approval\", \"data\": {\"artifactId\": \"a\", \"artifactType\": \"doc\", \"title\": \"T\", \"actions\": [\"accept\"]}}')" \
	"openwop.resolve_interrupt('$run', 'gate', '{\"action\": \"accept\"}')" \
	"openwop.complete_node('$run', 'gate')" "openwop.complete_run('$run', '{\"booked\": true}')"; do
	pub -c "SELECT $call" >/dev/null
done
# a refused call, a rolled-back transaction, a rolled-back savepoint: nothing of theirs may arrive
if pub -c "SELECT openwop.resolve_interrupt('$run', 'gate', '{\"action\": \"accept\"}')" >/dev/null 2>&1; then
	echo "a second resolve was not refused" >&2; exit 1
fi
psql -X -q -v ON_ERROR_STOP=1 -h "$work" -p 5821 -U postgres -d postgres >/dev/null <<'SQL'
SET openwop.tenant = 'acme';
BEGIN;
SELECT openwop.create_run('decoding', '{"runId": "acme/decoding-run-rolledback"}');
ROLLBACK;
BEGIN;
SELECT openwop.create_run('decoding', '{"runId": "acme/decoding-run-000002"}');
SAVEPOINT s;
SELECT openwop.start_node('acme/decoding-run-000002', 'undone');
ROLLBACK TO SAVEPOINT s;
SELECT openwop.cancel_run('acme/decoding-run-000002', 'done');
COMMIT;
SQL
until_true 30 "the subscriber has the two runs' events" sub -c "SELECT count(*) = $(pub -c "SELECT count(*) FROM openwop.events") FROM openwop.events"

# every event, in order, in the log's shape
# (the hash chain too: each event's hash arrives with it)
want=$(pub -c "SELECT string_agg(sequence || ':' || type || ':' || coalesce(node_id, '-') || ':' || md5(payload::text) || ':' || created_at || ':' || encode(hash, 'hex'), ',' ORDER BY run_id, sequence) FROM openwop.events")
got=$(sub -c "SELECT string_agg(sequence || ':' || type || ':' || coalesce(node_id, '-') || ':' || md5(payload::text) || ':' || created_at || ':' || encode(hash, 'hex'), ',' ORDER BY run_id, sequence) FROM openwop.events")
[ "$want" = "$got" ] || { echo "the subscriber's log differs:" >&2; echo "$want" >&2; echo "$got" >&2; exit 1; }
[ "$(sub -c "SELECT count(*) FROM openwop.events WHERE run_id = '$run'")" = 10 ]
[ "$(sub -c "SELECT bool_and(sequence = rank - 1) FROM (SELECT sequence, rank() OVER (PARTITION BY run_id ORDER BY n) FROM arrivals) a")" = t ]
echo "the subscriber received the run's 10 events, each as the log has it (its hash in the chain too), in the order of their sequence"
[ "$(sub -c "SELECT count(*) FROM openwop.events WHERE run_id = 'acme/decoding-run-rolledback' OR node_id = 'undone'")" = 0 ]
[ "$(sub -c "SELECT string_agg(type, ',' ORDER BY sequence) FROM openwop.events WHERE run_id = 'acme/decoding-run-000002'")" = "run.started,run.cancelled" ]
echo "nothing arrived for the refused resolve, the rolled-back transaction or the rolled-back savepoint"
echo "logical decoding checks passed"
