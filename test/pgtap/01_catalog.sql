-- The installed objects: tables and keys, function signatures, comments,
-- privileges and pg_dump registration.
BEGIN;
SELECT * FROM no_plan();

SELECT has_schema('openwop');
SELECT has_table('openwop', 'runs', 'runs table');
SELECT has_table('openwop', 'node_executions', 'node_executions table');
SELECT has_table('openwop', 'events', 'events table');
SELECT has_table('openwop', 'conversations', 'conversations table');

-- every key includes the tenant (Citus-ready)
SELECT col_is_pk('openwop', 'runs', ARRAY['tenant', 'run_id'], 'runs key includes the tenant');
SELECT col_is_pk('openwop', 'node_executions', ARRAY['tenant', 'run_id', 'node_id', 'visit'],
                 'node_executions key includes the tenant and the visit index');
SELECT col_is_pk('openwop', 'events', ARRAY['tenant', 'run_id', 'sequence'],
                 'events key is the per-run sequence, with the tenant');
SELECT col_is_pk('openwop', 'conversations', ARRAY['tenant', 'conversation_id'],
                 'conversations key is the conversation id, unique in its tenant');
SELECT is_empty($$
  SELECT conname FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid
   WHERE t.relnamespace = 'openwop'::regnamespace AND c.contype IN ('p', 'u')
     AND t.relname NOT IN ('signing_keys', 'served_database')   -- host-wide: the keyring (a Citus reference table), the database served
     AND NOT EXISTS (SELECT 1 FROM pg_attribute a
                      WHERE a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)
                        AND a.attname = 'tenant')
$$, 'no primary or unique key without the tenant (but the host-wide keyring and served database)');

-- exactly one terminal event per run is a constraint
SET LOCAL openwop.tenant = 'acme';
SELECT lives_ok($$ SELECT openwop.create_run('catalog', '{"runId": "acme/catalog-run-000001"}');
                   SELECT openwop.cancel_run('acme/catalog-run-000001') $$, 'a cancelled run');
SELECT throws_ok($$
  INSERT INTO openwop.events (tenant, run_id, sequence, type, payload, hash)
  VALUES ('acme', 'acme/catalog-run-000001', 2, 'run.completed', '{"outputs": {}}', sha256('forged'))
$$, '23505', NULL, 'a second terminal event is refused by a unique index, even for the owner');

-- the API signatures (README.md, "Function reference")
SELECT has_function('openwop', 'create_run', ARRAY['text', 'jsonb', 'text']);
SELECT has_function('openwop', 'start_node', ARRAY['text', 'text', 'text']);
SELECT has_function('openwop', 'complete_node', ARRAY['text', 'text', 'jsonb']);
SELECT has_function('openwop', 'fail_node', ARRAY['text', 'text', 'jsonb']);
SELECT has_function('openwop', 'complete_run', ARRAY['text', 'jsonb']);
SELECT has_function('openwop', 'fail_run', ARRAY['text', 'jsonb', 'text']);
SELECT has_function('openwop', 'cancel_run', ARRAY['text', 'text']);
SELECT has_function('openwop', 'run_snapshot', ARRAY['text']);
SELECT has_function('openwop', 'events', ARRAY['text', 'bigint', 'integer']);
SELECT function_returns('openwop', 'events', ARRAY['text', 'bigint', 'integer'], 'setof jsonb');
SELECT is(
  (SELECT array_agg(pg_get_function_arguments(p.oid) ORDER BY p.proname)
     FROM pg_proc p WHERE p.pronamespace = 'openwop'::regnamespace
      AND p.proname IN ('create_run', 'start_node', 'events', 'fail_run', 'cancel_run')),
  ARRAY['run_id text, reason text DEFAULT NULL::text',
        'workflow_id text, options jsonb DEFAULT ''{}''::jsonb, requested_by text DEFAULT NULL::text',
        'run_id text, after_sequence bigint DEFAULT ''-1''::integer, max integer DEFAULT 1000',
        'run_id text, error jsonb, failed_node_id text DEFAULT NULL::text',
        'run_id text, node_id text, type_id text DEFAULT NULL::text'],
  'argument names and defaults are the documented ones');

-- COMMENT ON every object
SELECT is_empty($$
  SELECT p.oid::regprocedure::text FROM pg_proc p
   WHERE p.pronamespace = 'openwop'::regnamespace AND obj_description(p.oid, 'pg_proc') IS NULL
$$, 'every function has a comment');
SELECT is_empty($$
  SELECT c.relname FROM pg_class c
   WHERE c.relnamespace = 'openwop'::regnamespace AND c.relkind IN ('r', 'v')
     AND obj_description(c.oid, 'pg_class') IS NULL
$$, 'every table and view has a comment');
SELECT is_empty($$
  SELECT c.relname || '.' || a.attname FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
   WHERE c.relnamespace = 'openwop'::regnamespace AND c.relkind IN ('r', 'v')
     AND a.attnum > 0 AND NOT a.attisdropped AND col_description(c.oid, a.attnum) IS NULL
$$, 'every column has a comment');
SELECT is_empty($$
  SELECT t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
   WHERE c.relnamespace = 'openwop'::regnamespace AND NOT t.tgisinternal
     AND obj_description(t.oid, 'pg_trigger') IS NULL
$$, 'every trigger has a comment');
SELECT isnt(obj_description('openwop'::regnamespace, 'pg_namespace'), NULL, 'the schema has a comment');

-- application roles get nothing by default
SELECT is_empty($$
  SELECT table_name FROM information_schema.role_table_grants
   WHERE table_schema = 'openwop' AND grantee = 'PUBLIC'
$$, 'PUBLIC has no privilege on any table');
SELECT is_empty($$
  SELECT p.oid::regprocedure::text FROM pg_proc p
   WHERE p.pronamespace = 'openwop'::regnamespace AND has_function_privilege('public', p.oid, 'EXECUTE')
$$, 'PUBLIC cannot execute any function until the DBA grants it');
SELECT is_empty($$
  SELECT p.oid::regprocedure::text FROM pg_proc p
   WHERE p.pronamespace = 'openwop'::regnamespace AND p.prosecdef
$$, 'no SECURITY DEFINER function: the caller stays the principal');

-- the append-only triggers fire ALWAYS
SELECT is((SELECT array_agg(tgname::text || ':' || tgenabled::text ORDER BY tgname) FROM pg_trigger
            WHERE tgrelid = 'openwop.events'::regclass AND NOT tgisinternal),
          ARRAY['events_append_only_row:A', 'events_append_only_truncate:A'],
          'the event log''s triggers are enabled ALWAYS');

-- table data is dumped with pg_dump
SELECT set_eq($$
  SELECT unnest(extconfig)::regclass::text FROM pg_extension WHERE extname = 'openwop_interrupt'
$$, ARRAY['openwop.runs', 'openwop.node_executions', 'openwop.events',
        'openwop.interrupts', 'openwop.idempotency_keys', 'openwop.votes', 'openwop.group_members',
        'openwop.open_interrupts', 'openwop.conversations', 'openwop.forks', 'openwop.approval_policy_log',
        'openwop.approval_delegations', 'openwop.artifact_changes', 'openwop.calendar_log',
        'openwop.gate_steps', 'openwop.notifications', 'openwop.notification_ids',
        'openwop.notification_drops', 'openwop.dead_notifications'],
  'every table holding user data is registered with pg_extension_config_dump');

-- the extension is not relocatable and not trusted
SELECT is((SELECT ROW(relocatable, trusted, schema::text)::text FROM pg_available_extension_versions
            WHERE name = 'openwop_interrupt' AND version = '0.1.0'),
          '(f,f,openwop)',
          'control file: fixed schema openwop, not relocatable, not trusted');

-- once the module is loaded, the openwop.* prefix is reserved
LOAD 'openwop_interrupt';
SELECT throws_ok($$ SET openwop.no_such_setting = 'x' $$, '42602', NULL,
                 'unknown openwop.* settings are refused');

SELECT * FROM finish();
ROLLBACK;
