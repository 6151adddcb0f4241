-- The event log is append-only for every role, superusers included, and
-- session_replication_role cannot silence the trigger.
\set VERBOSITY default
\set SHOW_CONTEXT never
SET openwop.tenant = 'acme';
SELECT openwop.create_run('append-only', '{"runId": "acme/append-only-run-01"}') ->> 'status';

UPDATE openwop.events SET type = 'run.completed' WHERE run_id = 'acme/append-only-run-01';
DELETE FROM openwop.events WHERE run_id = 'acme/append-only-run-01';
TRUNCATE openwop.events;

SET session_replication_role = replica;
DELETE FROM openwop.events WHERE run_id = 'acme/append-only-run-01';
TRUNCATE openwop.events;
RESET session_replication_role;

-- the triggers fire ALWAYS
SELECT tgname, tgenabled FROM pg_trigger
 WHERE tgrelid = 'openwop.events'::regclass AND NOT tgisinternal ORDER BY tgname;

-- a role granted every table privilege still cannot rewrite history
CREATE ROLE openwop_regress_writer;
GRANT USAGE ON SCHEMA openwop TO openwop_regress_writer;
GRANT ALL ON openwop.events TO openwop_regress_writer;
SET ROLE openwop_regress_writer;
DELETE FROM openwop.events WHERE run_id = 'acme/append-only-run-01';
UPDATE openwop.events SET payload = '{}' WHERE run_id = 'acme/append-only-run-01';
RESET ROLE;
REVOKE ALL ON openwop.events FROM openwop_regress_writer;
REVOKE USAGE ON SCHEMA openwop FROM openwop_regress_writer;
DROP ROLE openwop_regress_writer;

-- calling the trigger function directly is refused too
SELECT openwop.events_append_only();

SELECT count(*) AS events_kept FROM openwop.events WHERE run_id = 'acme/append-only-run-01';
