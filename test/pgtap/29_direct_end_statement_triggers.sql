-- The end of a run with nothing open skips its cancelling statements
-- (src/domain/runs.c nothing_open_direct) only while the tables those statements
-- write are plain: a DBA's statement-level trigger fires for an UPDATE or
-- DELETE that changes no row, so with one on openwop.interrupts,
-- openwop.node_executions or openwop.open_interrupts the statements run,
-- and the trigger fires, as it did before the direct path.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';

CREATE TABLE public.tap_end_audit (tab text, op text);
CREATE FUNCTION public.tap_end_audit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.tap_end_audit VALUES (TG_TABLE_NAME, TG_OP);
  RETURN NULL;
END $$;
-- a run with one node, completed: nothing is left open at its end
CREATE FUNCTION pg_temp.ended(run text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
  PERFORM openwop.create_run('ending', jsonb_build_object('runId', run));
  PERFORM openwop.start_node(run, 'a');
  PERFORM openwop.complete_node(run, 'a', '{"x": 1}');
  DELETE FROM public.tap_end_audit;
  PERFORM openwop.complete_run(run, '{"done": 1}');
  SELECT string_agg(tab || ' ' || op, ', ' ORDER BY tab) INTO r FROM public.tap_end_audit;
  RETURN r;
END $$;

CREATE TRIGGER tap_end_execs AFTER UPDATE ON openwop.node_executions
    FOR EACH STATEMENT EXECUTE FUNCTION public.tap_end_audit();
SELECT is(pg_temp.ended('acme/end-stmt-trigger-execs1'), 'node_executions UPDATE',
          'direct_end_statement_trigger: a statement trigger on node_executions fires at the end of a run with nothing open');
DROP TRIGGER tap_end_execs ON openwop.node_executions;

CREATE TRIGGER tap_end_interrupts AFTER UPDATE ON openwop.interrupts
    FOR EACH STATEMENT EXECUTE FUNCTION public.tap_end_audit();
SELECT is(pg_temp.ended('acme/end-stmt-trigger-intr001'), 'interrupts UPDATE',
          '... one on interrupts too');
DROP TRIGGER tap_end_interrupts ON openwop.interrupts;

CREATE TRIGGER tap_end_open AFTER DELETE ON openwop.open_interrupts
    FOR EACH STATEMENT EXECUTE FUNCTION public.tap_end_audit();
SELECT is(pg_temp.ended('acme/end-stmt-trigger-open001'), 'open_interrupts DELETE',
          '... and one on open_interrupts');
DROP TRIGGER tap_end_open ON openwop.open_interrupts;

SELECT is(pg_temp.ended('acme/end-stmt-trigger-plain01'), NULL,
          'direct_end_statement_trigger_plain: on plain tables no statement runs');
SELECT is((SELECT jsonb_agg(type ORDER BY sequence) FROM openwop.events WHERE run_id = 'acme/end-stmt-trigger-execs1'),
          (SELECT jsonb_agg(type ORDER BY sequence) FROM openwop.events WHERE run_id = 'acme/end-stmt-trigger-plain01'),
          '... and both leave the same log');

SELECT * FROM finish();
ROLLBACK;
