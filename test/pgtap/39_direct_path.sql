-- openwop.direct_path(): whether the hot paths read and write each table
-- directly or with SQL statements, and why.  On as installed (checks the
-- C side's table, column and index descriptions against what the install
-- scripts made); off, with the reason, for each kind of change a DBA can
-- make; for pg_monitor and the owner only.
BEGIN;
SELECT * FROM no_plan();

SELECT is((SELECT array_agg(table_name || ' ' || direct || ' ' || coalesce(reason, '-') ORDER BY table_name) FROM openwop.direct_path()),
          '{"events true -","group_members true -","interrupts true -","node_executions true -","notifications true -","open_interrupts true -","runs true -"}',
          'direct_path_on_after_install: every table of the hot paths is read and written directly as installed');

CREATE FUNCTION pg_temp.why(t text) RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(reason, 'direct') FROM openwop.direct_path() WHERE table_name = t $$;
CREATE FUNCTION public.tap_dp_noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;

SAVEPOINT s;
CREATE TRIGGER dp BEFORE UPDATE ON openwop.node_executions FOR EACH ROW EXECUTE FUNCTION public.tap_dp_noop();
SELECT is(pg_temp.why('node_executions'), 'it has a trigger', 'direct_path_trigger: a DBA''s trigger turns its table''s direct path off, named');
SELECT is((SELECT count(*) FROM openwop.direct_path() WHERE direct), 6::bigint, '... and only its table''s');
ROLLBACK TO s;
CREATE TRIGGER dp AFTER INSERT ON openwop.group_members FOR EACH ROW EXECUTE FUNCTION public.tap_dp_noop();
SELECT is(pg_temp.why('group_members'), 'direct', '... a trigger on a table the hot paths only read changes nothing');
ROLLBACK TO s;
CREATE RULE dp AS ON UPDATE TO openwop.runs DO ALSO NOTIFY dp;
SELECT is(pg_temp.why('runs'), 'it has a rule', 'direct_path_rule: a rule');
ROLLBACK TO s;
ALTER TABLE openwop.events ENABLE ROW LEVEL SECURITY;
SELECT is(pg_temp.why('events'), 'it has row-level security', 'direct_path_row_security: row security');
ROLLBACK TO s;
ALTER TABLE openwop.interrupts ADD COLUMN dp text;
SELECT is(pg_temp.why('interrupts'), 'it has a column the install script did not make', 'direct_path_column: a column of the DBA''s');
ROLLBACK TO s;
ALTER TABLE openwop.open_interrupts ALTER COLUMN kind SET DEFAULT 'approval';
SELECT is(pg_temp.why('open_interrupts'), 'direct', 'direct_path_default: a default of the DBA''s leaves it on (every insert names every column)');
ROLLBACK TO s;
ALTER TABLE openwop.runs ADD COLUMN dp2 integer GENERATED ALWAYS AS (1) STORED;
SELECT is(pg_temp.why('runs'), 'it has a generated column', 'direct_path_generated: a generated column');
ROLLBACK TO s;
ALTER TABLE openwop.node_executions ALTER COLUMN type_id TYPE varchar(200);
SELECT is(pg_temp.why('events'), 'openwop.node_executions: its column type_id is no longer of type text, so every table is written with statements',
          'direct_path_retyped: a retyped column turns every table''s direct path off, naming the table and column');
ROLLBACK TO s;
ALTER TABLE openwop.interrupts DROP CONSTRAINT interrupts_key_once_per_run;
SELECT is(pg_temp.why('runs'), 'openwop.interrupts: its index interrupts_key_once_per_run is gone, so every table is written with statements',
          'direct_path_index: an index gone (with its constraint)');
ROLLBACK TO s;
ALTER TABLE openwop.group_members RENAME TO group_members_moved;
SELECT is(pg_temp.why('runs'), 'a table of the store is gone', 'direct_path_table_gone: a table renamed away turns every table''s direct path off');
ROLLBACK TO s;
SELECT is((SELECT count(*) FROM openwop.direct_path() WHERE direct), 7::bigint, 'direct_path_undone: undone, every table is direct again');

-- who may look
CREATE ROLE tap_dp_login;
SET LOCAL ROLE tap_dp_login;
SELECT throws_ok('SELECT * FROM openwop.direct_path()', '42501', NULL, 'direct_path_privileges: a login without pg_monitor may not call it');
RESET ROLE;
GRANT pg_monitor TO tap_dp_login;
SET LOCAL ROLE tap_dp_login;
SELECT is((SELECT count(*) FROM openwop.direct_path()), 7::bigint, '... a member of pg_monitor may');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
