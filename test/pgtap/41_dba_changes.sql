-- What a DBA's own additions to the openwop tables (a CHECK, a trigger, a
-- retyped column, an index of their own, a grant) cannot be turned into by
-- a caller, found by a hostile review of the store: code the DBA attached
-- runs as the extension owner with the owner's search path, never the
-- caller's; a retyped column is read as the type the library takes or
-- refused, never misread; a same-named index made otherwise turns the
-- direct path off; the open row follows an interrupt a login changed only
-- as far as that login's privileges go.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir callers.psql
\ir refusal.psql

-- ---------------------------------------------------------------------
-- owner_search_path: a caller with CREATE in a schema of its own puts it
-- ahead on its search_path, with a length(text) of its own; the DBA's
-- CHECK and trigger call length() unqualified.  The extension runs them
-- as its owner, with pg_catalog, pg_temp: the caller's function never runs.
-- ---------------------------------------------------------------------
CREATE ROLE tap_sp_caller LOGIN;
GRANT openwop_approver TO tap_sp_caller;
GRANT USAGE ON SCHEMA openwop TO tap_sp_caller;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop TO tap_sp_caller;
CREATE SCHEMA tap_sp_evil AUTHORIZATION tap_sp_caller;
CREATE TABLE public.tap_sp_ran (who name, at text);
GRANT INSERT ON public.tap_sp_ran TO PUBLIC;
SET LOCAL ROLE tap_sp_caller;
CREATE FUNCTION tap_sp_evil.length(text) RETURNS integer LANGUAGE sql
  AS $$ INSERT INTO public.tap_sp_ran VALUES (current_user, $1) RETURNING 1 $$;
RESET ROLE;

CREATE FUNCTION public.tap_sp_valid(w text) RETURNS boolean LANGUAGE sql AS $$ SELECT length(w) > 0 $$;
ALTER TABLE openwop.runs ADD CONSTRAINT tap_sp_rule CHECK (public.tap_sp_valid(workflow_id));
CREATE FUNCTION public.tap_sp_trigger() RETURNS trigger LANGUAGE plpgsql
  AS $$ BEGIN PERFORM length(NEW.kind); RETURN NEW; END $$;
CREATE TRIGGER tap_sp_trigger BEFORE INSERT ON openwop.interrupts FOR EACH ROW EXECUTE FUNCTION public.tap_sp_trigger();

SET LOCAL search_path = tap_sp_evil, public, pg_catalog;
CREATE TEMP TABLE sp_calls AS SELECT
  pg_temp.as_login('tap_sp_caller', 'acme',
    $$SELECT jsonb_build_object('run', openwop.create_run('sp', '{"runId": "acme/sp-search-path-000001"}'),
                                'path', current_setting('search_path'))$$) AS created,
  pg_temp.as_login('tap_sp_caller', 'acme',
    $$SELECT openwop.start_node('acme/sp-search-path-000001', 'ask')$$) AS started,
  pg_temp.as_login('tap_sp_caller', 'acme',
    $$SELECT openwop.interrupt('acme/sp-search-path-000001', 'ask', '{"kind": "custom", "data": {"customKind": "confirm"}}')$$) AS raised;
RESET search_path;

SELECT is((SELECT created #>> '{run,status}' FROM sp_calls), 'running', 'owner_search_path: the run is created past the DBA''s CHECK');
SELECT is((SELECT raised ->> 'status' FROM sp_calls), 'interrupted', '... and interrupted past the DBA''s trigger');
SELECT is((SELECT count(*) FROM public.tap_sp_ran), 0::bigint,
          'owner_search_path: the caller''s length() ran neither in the CHECK nor in the trigger, as the owner or at all');
SELECT is((SELECT created ->> 'path' FROM sp_calls), 'tap_sp_evil, public, pg_catalog',
          '... and the caller''s own search_path is back once the call returns');
SET LOCAL search_path = tap_sp_evil, public, pg_catalog;
SELECT pg_temp.refusal($$SELECT openwop.create_run('', '{"runId": "acme/sp-search-path-000002"}')$$) IS NOT NULL AS refused \gset
SELECT current_setting('search_path') AS path_after_error \gset
RESET search_path;
SELECT ok(:'refused'::boolean, 'owner_search_path: a call refused as the owner ...');
SELECT is(:'path_after_error'::text, 'tap_sp_evil, public, pg_catalog', '... leaves the caller''s search_path as it was');
DROP TRIGGER tap_sp_trigger ON openwop.interrupts;
ALTER TABLE openwop.runs DROP CONSTRAINT tap_sp_rule;

-- owner_search_path_relations: the owner's path is pg_catalog, then the
-- session's temporary schema (PostgreSQL searches that first when a path
-- leaves it out): a relation the DBA's code names unqualified can be a
-- caller's TEMP view.  Qualified, as the documentation asks, it is the DBA's.
CREATE TABLE public.tap_sp_blocked (workflow_id text);
CREATE FUNCTION public.tap_sp_deny() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT FROM public.tap_sp_blocked b WHERE b.workflow_id = NEW.workflow_id) THEN
    RAISE EXCEPTION 'workflow % is blocked', NEW.workflow_id;
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER tap_sp_deny BEFORE INSERT ON openwop.runs FOR EACH ROW EXECUTE FUNCTION public.tap_sp_deny();
INSERT INTO public.tap_sp_blocked VALUES ('blocked');
GRANT SELECT ON public.tap_sp_blocked TO tap_sp_caller;
-- the session's TEMP view of that name, empty (a caller's session has one temporary schema)
CREATE TEMP VIEW tap_sp_blocked AS SELECT NULL::text AS workflow_id WHERE false;
SELECT is(pg_temp.as_login('tap_sp_caller', 'acme',
  $$SELECT openwop.create_run('blocked', '{"runId": "acme/sp-temp-relation-0001"}')$$) ->> 'code',
  'workflow blocked is blocked',
  'owner_search_path_relations: the DBA''s qualified deny-list holds whatever the caller''s path');
DROP TRIGGER tap_sp_deny ON openwop.runs;

-- ---------------------------------------------------------------------
-- retyped_read: a column a DBA retyped to another representation (name
-- for text, numeric for bigint) is read through the statements, cast to
-- the type the library takes: the snapshot and the gate work; a type the
-- statements cannot carry is a clear refusal, never a misread.
-- ---------------------------------------------------------------------
SAVEPOINT retyped;
SELECT openwop.create_run('rt', '{"runId": "acme/retyped-read-0000001"}') ->> 'status' AS created \gset
ALTER TABLE openwop.runs ALTER COLUMN status TYPE name, ALTER COLUMN next_sequence TYPE numeric;
SELECT is(openwop.run_snapshot('acme/retyped-read-0000001') ->> 'status', 'running',
          'retyped_read: status retyped to name reads as its text');
SELECT is(openwop.start_node('acme/retyped-read-0000001', 'ask') ->> 'status', 'running', '... start_node');
SELECT is(openwop.interrupt('acme/retyped-read-0000001', 'ask', '{"kind": "approval", "data": {"artifactId": "a",
  "artifactType": "doc", "title": "T", "actions": ["accept", "reject"]}}') ->> 'status', 'interrupted', '... interrupt');
SELECT is(openwop.resolve_interrupt('acme/retyped-read-0000001', 'ask', '{"action": "accept"}') ->> 'status', 'resolved',
          '... resolve');
SELECT is((SELECT array_agg(sequence ORDER BY sequence) FROM openwop.events WHERE run_id = 'acme/retyped-read-0000001'),
          '{0,1,2,3,4,5}'::bigint[], 'retyped_read: next_sequence retyped to numeric still numbers the log without a gap');
SELECT is((SELECT next_sequence FROM openwop.runs WHERE run_id = 'acme/retyped-read-0000001'), 6::numeric, '... and is written back');
ROLLBACK TO retyped;
CREATE TYPE public.tap_rt_flag AS ENUM ('running', 'waiting-approval', 'completed', 'failed', 'cancelled', 'paused');
SELECT openwop.create_run('rt', '{"runId": "acme/retyped-read-0000002"}') ->> 'status' AS created \gset
ALTER TABLE openwop.runs ALTER COLUMN status TYPE public.tap_rt_flag USING status::text::public.tap_rt_flag;
SELECT is(openwop.run_snapshot('acme/retyped-read-0000002') ->> 'status', 'running',
          'retyped_read: status retyped to an enum still reads as its text');
SELECT is(pg_temp.refusal($$SELECT openwop.start_node('acme/retyped-read-0000002', 'ask')$$) ->> 'sqlstate', '42804',
          '... and a write the statements cannot carry (text into the enum) is refused, not misread');
ROLLBACK TO retyped;
SELECT openwop.create_run('rt', '{"runId": "acme/retyped-read-0000004"}') ->> 'status' AS created \gset
ALTER TABLE openwop.events ALTER COLUMN payload TYPE json;
SELECT is(pg_temp.refusal($$SELECT count(*) FROM openwop.events('acme/retyped-read-0000004')$$) ->> 'sqlstate', '42804',
          'retyped_read_refused: a column of another representation where a statement reads jsonb (payload as json) is 42804, not misread');
ROLLBACK TO retyped;
ALTER TABLE openwop.node_executions ALTER COLUMN attempt TYPE numeric;
SELECT openwop.create_run('rt', '{"runId": "acme/retyped-read-0000003"}') ->> 'status' AS created \gset
SELECT openwop.start_node('acme/retyped-read-0000003', 'work') ->> 'status' AS started \gset
SELECT is(openwop.fail_node('acme/retyped-read-0000003', 'work', '{"code": "no", "message": "no"}') ->> 'status', 'failed',
          'retyped_read: an execution''s attempt retyped to numeric ...');
SELECT is((SELECT payload ->> 'attempts' FROM openwop.events WHERE run_id = 'acme/retyped-read-0000003' AND type = 'node.failed'),
          '1', '... is read as the integer it holds');
ROLLBACK TO retyped;

-- ---------------------------------------------------------------------
-- index_not_the_install_scripts: a same-named index a DBA made otherwise
-- turns the direct path off (it probes, trusts uniqueness and walks the
-- order of its own); remade as installed, it is on again.
-- ---------------------------------------------------------------------
CREATE FUNCTION pg_temp.index_why() RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(reason, 'direct') FROM openwop.direct_path() WHERE table_name = 'runs' $$;
CREATE FUNCTION pg_temp.remade(def text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE 'ALTER TABLE openwop.interrupts DROP CONSTRAINT interrupts_key_once_per_run';
  EXECUTE def;
  RETURN pg_temp.index_why();
END $$;
SAVEPOINT idx;
SELECT is(pg_temp.remade('CREATE UNIQUE INDEX interrupts_key_once_per_run ON openwop.interrupts (tenant, root_run_id, key)'),
          'direct', 'index_not_the_install_scripts: the index remade as installed keeps the direct path');
ROLLBACK TO idx;
SELECT alike(pg_temp.remade('CREATE UNIQUE INDEX interrupts_key_once_per_run ON openwop.interrupts (tenant, root_run_id DESC, key)'),
          'openwop.interrupts: its index interrupts_key_once_per_run is not the install script''s%',
          'index_not_the_install_scripts: descending');
ROLLBACK TO idx;
SELECT alike(pg_temp.remade('CREATE UNIQUE INDEX interrupts_key_once_per_run ON openwop.interrupts (tenant, root_run_id NULLS FIRST, key)'),
          '%not the install script''s%', '... nulls first');
ROLLBACK TO idx;
SELECT alike(pg_temp.remade('CREATE UNIQUE INDEX interrupts_key_once_per_run ON openwop.interrupts (tenant, root_run_id text_pattern_ops, key)'),
          '%not the install script''s%', '... another operator class');
ROLLBACK TO idx;
SELECT alike(pg_temp.remade('CREATE UNIQUE INDEX interrupts_key_once_per_run ON openwop.interrupts (tenant, root_run_id COLLATE "POSIX", key)'),
          '%not the install script''s%', '... another collation');
ROLLBACK TO idx;
SELECT alike(pg_temp.remade('CREATE INDEX interrupts_key_once_per_run ON openwop.interrupts (tenant, root_run_id, key)'),
          '%not the install script''s%', '... not unique');
ROLLBACK TO idx;
SELECT alike(pg_temp.remade('ALTER TABLE openwop.interrupts ADD CONSTRAINT interrupts_key_once_per_run UNIQUE (tenant, root_run_id, key) DEFERRABLE'),
          '%not the install script''s%', '... deferrable');
ROLLBACK TO idx;
SELECT alike(pg_temp.remade('CREATE UNIQUE INDEX interrupts_key_once_per_run ON openwop.interrupts (tenant, root_run_id, key) WHERE status <> ''x'''),
          '%not the install script''s%', '... partial');
ROLLBACK TO idx;
SELECT alike(pg_temp.remade('CREATE UNIQUE INDEX interrupts_key_once_per_run ON openwop.interrupts (tenant, root_run_id, (key || ''''))'),
          '%not the install script''s%', '... an expression');
ROLLBACK TO idx;
DROP INDEX openwop.interrupts_one_pending_per_node;
CREATE UNIQUE INDEX interrupts_one_pending_per_node ON openwop.open_interrupts (tenant, run_id, node_id) WHERE status = 'expired';
SELECT alike(pg_temp.index_why(), 'openwop.open_interrupts: its index interrupts_one_pending_per_node is not the install script''s%',
            'index_not_the_install_scripts: a partial index with another predicate');
ROLLBACK TO idx;
DROP INDEX openwop.interrupts_one_pending_per_node;
CREATE UNIQUE INDEX interrupts_one_pending_per_node ON openwop.open_interrupts (tenant, run_id, node_id) WHERE status = 'pending';
SELECT is(pg_temp.index_why(), 'direct', '... and with the install script''s predicate, direct again');
ROLLBACK TO idx;

-- ---------------------------------------------------------------------
-- nondeterministic_collation: a text column of the store given a
-- nondeterministic collation turns the direct path off (it compares text
-- by its bytes), so both paths answer as the statements do.
-- ---------------------------------------------------------------------
SAVEPOINT ci;
CREATE COLLATION public.tap_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
ALTER TABLE openwop.node_executions ALTER COLUMN node_id TYPE text COLLATE public.tap_ci;
SELECT is((SELECT reason FROM openwop.direct_path() WHERE table_name = 'node_executions'),
          'openwop.node_executions: its column node_id has a nondeterministic collation, so every table is written with statements',
          'nondeterministic_collation: a case-insensitive collation turns the direct path off, named');
SELECT openwop.create_run('ci', '{"runId": "acme/nondeterministic-0001"}') ->> 'status' AS created \gset
SELECT openwop.start_node('acme/nondeterministic-0001', 'Ask') ->> 'status' AS started \gset
SELECT is(openwop.complete_node('acme/nondeterministic-0001', 'ask', '{}') ->> 'status', 'completed',
          '... and the calls answer as the statements do (ask finds Ask under the collation)');
ROLLBACK TO ci;

-- ---------------------------------------------------------------------
-- conversation_changed_outside: a conversation row a DBA changed or
-- removed is a clear refusal (55000, naming what changed), never XX000;
-- nothing applied.
-- ---------------------------------------------------------------------
SELECT openwop.create_run('conv', '{"runId": "acme/conversation-dba-0001"}') ->> 'status' AS created \gset
SELECT openwop.start_node('acme/conversation-dba-0001', 'ask') ->> 'status' AS started \gset
SELECT openwop.interrupt('acme/conversation-dba-0001', 'ask', '{"kind": "conversation.start", "data": {"conversationId": "tap-dba-c1", "title": "T", "initialPrompt": "P"}}') ->> 'status' AS raised \gset
UPDATE openwop.conversations SET pending_interrupt_id = NULL WHERE conversation_id = 'tap-dba-c1';
SELECT is(pg_temp.refusal($$SELECT openwop.resolve_interrupt('acme/conversation-dba-0001', 'ask', 'null')$$) ->> 'sqlstate', '55000',
          'conversation_changed_outside: a conversation no longer waiting on its interrupt is 55000');
SELECT is((SELECT status FROM openwop.interrupts WHERE run_id = 'acme/conversation-dba-0001'), 'pending', '... nothing applied');
DELETE FROM openwop.conversations WHERE conversation_id = 'tap-dba-c1';
SELECT is(pg_temp.refusal($$SELECT openwop.resolve_interrupt('acme/conversation-dba-0001', 'ask', 'null')$$) ->> 'sqlstate', '55000',
          '... and one removed');

-- ---------------------------------------------------------------------
-- keep_open_privileges: the trigger that carries a change of an interrupt
-- to its open row runs as whoever made the change; a login the DBA let
-- update interrupts but not delete open rows cannot close one through it.
-- ---------------------------------------------------------------------
SELECT openwop.create_run('ko', '{"runId": "acme/keep-open-privilege-01"}') ->> 'status' AS created \gset
SELECT openwop.start_node('acme/keep-open-privilege-01', 'ask') ->> 'status' AS started \gset
SELECT openwop.interrupt('acme/keep-open-privilege-01', 'ask', '{"kind": "custom", "data": {"customKind": "confirm"}}') ->> 'status' AS raised \gset
CREATE ROLE tap_ko_clerk;
GRANT USAGE ON SCHEMA openwop TO tap_ko_clerk;
GRANT SELECT, UPDATE ON openwop.interrupts TO tap_ko_clerk;
SET LOCAL ROLE tap_ko_clerk;
SELECT throws_ok($$UPDATE openwop.interrupts SET status = 'cancelled' WHERE run_id = 'acme/keep-open-privilege-01'$$,
                 '42501', NULL, 'keep_open_privileges: closing an interrupt needs DELETE on its open row, checked as the login');
RESET ROLE;
SELECT is((SELECT status FROM openwop.interrupts WHERE run_id = 'acme/keep-open-privilege-01'), 'pending', '... nothing applied');
SELECT is((SELECT count(*) FROM openwop.open_interrupts WHERE run_id = 'acme/keep-open-privilege-01'), 1::bigint, '... the open row kept');
GRANT SELECT, DELETE ON openwop.open_interrupts TO tap_ko_clerk;
SET LOCAL ROLE tap_ko_clerk;
SELECT lives_ok($$UPDATE openwop.interrupts SET status = 'cancelled' WHERE run_id = 'acme/keep-open-privilege-01'$$,
                '... with it granted, the change and its open row go together');
RESET ROLE;
SELECT is((SELECT count(*) FROM openwop.open_interrupts WHERE run_id = 'acme/keep-open-privilege-01'), 0::bigint, '... the open row closed');

SELECT * FROM finish();
ROLLBACK;
