-- A database whose schema is not the library's version (installed before
-- the library was updated, and not yet ALTER EXTENSION ... UPDATE'd): every
-- call that reads or writes the store is refused with 55000, naming the
-- update, before anything is read or written; after the update the same
-- calls work, in the same session.  A schema newer than the library is
-- refused the same way, naming the library to install.
BEGIN;
SELECT * FROM no_plan();
DROP EXTENSION openwop_interrupt;

-- no_extension_refused: a function of the library reached in a database
-- without the extension (a DBA's own CREATE FUNCTION) is refused too
CREATE FUNCTION public.tap_capabilities() RETURNS jsonb AS 'openwop_interrupt', 'ow_capabilities' LANGUAGE C;
SELECT throws_ok('SELECT public.tap_capabilities()', '55000',
                 format('extension openwop_interrupt is not installed in database "%s"', current_database()),
                 'no_extension_refused: without the extension a library function is 55000, naming CREATE EXTENSION');
DROP FUNCTION public.tap_capabilities();

CREATE EXTENSION openwop_interrupt VERSION '0.10.0';
SET LOCAL openwop.tenant = 'acme';
\ir callers.psql

-- what a client sees of a refusal: its SQLSTATE and hint, or NULL
CREATE FUNCTION pg_temp.refused(sql text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE st text; msg text; hint text;
BEGIN
  EXECUTE sql;
  RETURN NULL;
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT;
  RETURN jsonb_build_object('sqlstate', st, 'message', msg, 'hint', hint);
END $$;
CREATE TEMP TABLE calls (name text, sql text);
INSERT INTO calls VALUES
  ('create_run', $$SELECT openwop.create_run('old', '{"runId": "acme/old-schema-run-0001"}')$$),
  ('run_snapshot', $$SELECT openwop.run_snapshot('acme/old-schema-run-0001')$$),
  ('events', $$SELECT * FROM openwop.events('acme/old-schema-run-0001')$$),
  ('start_node', $$SELECT openwop.start_node('acme/old-schema-run-0001', 'gate')$$),
  ('interrupt', $$SELECT openwop.interrupt('acme/old-schema-run-0001', 'gate', '{"kind": "approval", "data": {"artifactId": "a",
                  "artifactType": "doc", "title": "T", "actions": ["accept"]}}')$$),
  ('resolve_interrupt', $$SELECT openwop.resolve_interrupt('acme/old-schema-run-0001', 'gate', '{"action": "accept"}')$$),
  ('resolve_interrupt_by_token', $$SELECT openwop.resolve_interrupt_by_token('v1.x.y.z', '{"action": "accept"}')$$),
  ('cancel_run', $$SELECT openwop.cancel_run('acme/old-schema-run-0001')$$),
  ('fork_run', $$SELECT openwop.fork_run('acme/old-schema-run-0001', '{"mode": "branch", "fromSeq": 0}')$$),
  ('record_agent_decision', $$SELECT openwop.record_agent_decision('acme/old-schema-run-0001', 'agent', 'planner', 0.1)$$),
  ('capabilities', $$SELECT openwop.capabilities()$$),
  ('current_caller', $$SELECT openwop.current_caller()$$),
  ('sweep', $$SELECT openwop.sweep(10)$$),
  ('add_signing_key', $$SELECT openwop.add_signing_key('old-schema-key')$$),
  ('pending_interrupts', $$SELECT count(*) FROM openwop.pending_interrupts$$),
  ('flowdrop_interrupts', $$SELECT openwop.flowdrop_interrupts('{acme/old-schema-int-0001}')$$),
  ('workers', $$SELECT count(*) FROM openwop.workers$$);

SELECT is(pg_temp.refused(sql) - 'message',
          '{"sqlstate": "55000", "hint": "Run ALTER EXTENSION openwop_interrupt UPDATE in this database."}',
          'old_schema_refused: ' || name || ' on schema 0.10.0 is 55000, naming the update')
  FROM calls ORDER BY name;
SELECT is(pg_temp.refused('SELECT openwop.capabilities()') ->> 'message',
          format('openwop_interrupt''s schema in database "%s" is version 0.10.0, its library version %s',
                 current_database(), (SELECT default_version FROM pg_available_extensions WHERE name = 'openwop_interrupt')),
          'old_schema_refused_names_versions: the message names the database, the schema''s version and the library''s');
SELECT is((SELECT count(*) FROM openwop.runs) + (SELECT count(*) FROM openwop.events) + (SELECT count(*) FROM openwop.signing_keys),
          0::bigint, 'old_schema_refused_writes_nothing: nothing was written');
SELECT is(jsonb_array_length(openwop.json_schema_errors('{"type": "string"}', '1')), 1,
          'old_schema_pure_functions_work: a function that reads no table (json_schema_errors) still answers');

-- the update, in the same session: the same calls work
ALTER EXTENSION openwop_interrupt UPDATE;
SELECT is(openwop.create_run('old', '{"runId": "acme/old-schema-run-0001"}') ->> 'runId', 'acme/old-schema-run-0001',
          'updated_schema_served: after ALTER EXTENSION ... UPDATE the session''s next call is served');
SELECT is(openwop.start_node('acme/old-schema-run-0001', 'gate') ->> 'status', 'running', '... and the next');
SELECT ok(openwop.capabilities() ? 'conversationPrimitive', '... capabilities() advertises all of the library''s');

-- old_schema_refused_every_release: the same on the schema of every release
-- back to 0.1.0, as CREATE EXTENSION ... VERSION installs it: each call the
-- release has is 55000 naming the update (one it lacks does not exist
-- there), and no refusal carries a statement of the library
CREATE TEMP TABLE every_release (version text, name text, refusal jsonb);
DO $$
DECLARE v text; c record;
BEGIN
  FOR v IN SELECT version FROM pg_available_extension_versions
            WHERE name = 'openwop_interrupt'
              AND version <> (SELECT default_version FROM pg_available_extensions WHERE name = 'openwop_interrupt')
  LOOP
    DROP EXTENSION openwop_interrupt;
    EXECUTE format('CREATE EXTENSION openwop_interrupt VERSION %L', v);
    FOR c IN SELECT * FROM calls LOOP
      INSERT INTO every_release VALUES (v, c.name, pg_temp.refused(c.sql));
    END LOOP;
  END LOOP;
END $$;
SELECT is((SELECT count(DISTINCT version) FROM every_release), 10::bigint, 'old_schema_refused_every_release: ten releases before this one, 0.1.0 to 0.10.0');
SELECT is((SELECT string_agg(version || ' ' || name || ': ' || coalesce(refusal::text, 'served'), '; ')
             FROM every_release
            WHERE refusal IS NULL
               OR NOT (refusal - 'message' = '{"sqlstate": "55000", "hint": "Run ALTER EXTENSION openwop_interrupt UPDATE in this database."}'
                       OR refusal ->> 'sqlstate' IN ('42883', '42P01'))),
          NULL, '... every call each release has is 55000 naming the update (one it lacks: 42883 or 42P01)');
SELECT is((SELECT count(*) FROM every_release WHERE refusal ->> 'sqlstate' = '55000' AND version = '0.1.0'), 12::bigint,
          '... 0.1.0''s calls among them (twelve of these existed then)');
SELECT is((SELECT count(*) FROM every_release WHERE refusal ->> 'message' ~* 'select |openwop\.[a-z_]+ where'), 0::bigint,
          '... and no refusal carries a statement of the library');
DROP EXTENSION openwop_interrupt;
CREATE EXTENSION openwop_interrupt;

-- a schema newer than the library (the library was downgraded): refused,
-- naming the library to install (any relation cache invalidation makes a
-- backend look at the version again)
UPDATE pg_extension SET extversion = '99.0.0' WHERE extname = 'openwop_interrupt';
ALTER TABLE openwop.runs SET (fillfactor = 80);
SELECT is(pg_temp.refused('SELECT openwop.run_snapshot(''acme/old-schema-run-0001'')') - 'message',
          '{"sqlstate": "55000", "hint": "Install the library of version 99.0.0 or later, and restart the server."}',
          'newer_schema_refused: a schema newer than the library is 55000, naming the library to install');

SELECT * FROM finish();
ROLLBACK;
