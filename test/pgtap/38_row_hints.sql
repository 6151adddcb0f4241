-- Where the raise wrote a pending interrupt's rows (0.10.0): the open row
-- keeps the interrupt row's and the suspended execution's tids, and the
-- resolve reads them there instead of probing two indexes.  A hint only:
-- rows moved by CLUSTER to another row's place, hints past the table's end,
-- rows changed since, NULL hints (a raise through SQL statements,
-- rows from before 0.10.0) all resolve as the indexes say.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir callers.psql
\ir gates.psql

-- each run's claim as it should be: its interrupt resolved by its own
-- interrupt.resolved event, its execution pending again, no open row left
CREATE FUNCTION pg_temp.claimed(prefix text) RETURNS bigint LANGUAGE sql AS $$
  SELECT count(*) FROM openwop.runs r
   WHERE r.run_id LIKE 'acme/rowhints-000-' || prefix || '%'
     AND (SELECT i.status = 'resolved' AND i.resolved_sequence = e.sequence
            FROM openwop.interrupts i
            JOIN openwop.events e ON e.tenant = i.tenant AND e.run_id = i.run_id AND e.type = 'interrupt.resolved'
                                 AND e.payload ->> 'interruptId' = i.interrupt_id
           WHERE i.run_id = r.run_id)
     AND (SELECT status FROM openwop.node_executions x WHERE x.run_id = r.run_id AND x.node_id = 'gate') = 'pending'
     AND NOT EXISTS (SELECT FROM openwop.open_interrupts o WHERE o.run_id = r.run_id)
$$;

-- the hints are where the rows are
DO $$ BEGIN PERFORM pg_temp.gate('acme/rowhints-000-hint-1'); END $$;
SELECT is((SELECT o.interrupt_tid = i.ctid FROM openwop.open_interrupts o
             JOIN openwop.interrupts i USING (tenant, interrupt_id) WHERE o.run_id = 'acme/rowhints-000-hint-1'),
          true, 'row_hints_interrupt_tid: the open row names the interrupt row the raise wrote');
SELECT is((SELECT o.execution_tid = x.ctid FROM openwop.open_interrupts o
             JOIN openwop.node_executions x ON x.tenant = o.tenant AND x.run_id = o.run_id
                                            AND x.node_id = o.node_id AND x.visit = o.visit
            WHERE o.run_id = 'acme/rowhints-000-hint-1'),
          true, 'row_hints_execution_tid: the open row names the execution row the raise suspended');
SELECT is(openwop.resolve_interrupt('acme/rowhints-000-hint-1', 'gate', '{"action": "accept"}') ->> 'status', 'resolved',
          'row_hints_resolve: a resolve by the hints');
SELECT is(pg_temp.claimed('hint-1'), 1::bigint, 'row_hints_resolve_claims: its interrupt, event and execution as by the indexes');

-- the hints are what the resolve reads: no probe of either index
CREATE FUNCTION pg_temp.probes() RETURNS bigint LANGUAGE sql AS $$
  SELECT pg_stat_get_xact_numscans('openwop.interrupts_pkey'::regclass)
       + pg_stat_get_xact_numscans('openwop.node_executions_pkey'::regclass)
$$;
DO $$ BEGIN PERFORM pg_temp.gate('acme/rowhints-000-used'); END $$;
CREATE TEMP TABLE probes_before AS SELECT pg_temp.probes() AS n;
SELECT is(openwop.resolve_interrupt('acme/rowhints-000-used', 'gate', '{"action": "accept"}') ->> 'status', 'resolved',
          'row_hints_used_resolves: resolved by its hints');
SELECT is(pg_temp.probes() - (SELECT n FROM probes_before), 0::bigint,
          'row_hints_used: the claim probed neither interrupts_pkey nor node_executions_pkey');
DO $$ BEGIN PERFORM pg_temp.gate('acme/rowhints-000-probed'); END $$;
UPDATE openwop.open_interrupts SET interrupt_tid = NULL, execution_tid = NULL WHERE run_id = 'acme/rowhints-000-probed';
UPDATE probes_before SET n = pg_temp.probes();
SELECT is(openwop.resolve_interrupt('acme/rowhints-000-probed', 'gate', '{"action": "accept"}') ->> 'status', 'resolved',
          'row_hints_probed_resolves: resolved without hints');
SELECT is(pg_temp.probes() - (SELECT n FROM probes_before), 2::bigint,
          'row_hints_probed: without hints the claim probes each index once');

-- forged hints: gate A's naming gate B's live rows, and another tenant's
DO $$ BEGIN PERFORM pg_temp.gate('acme/rowhints-000-forged-a'); PERFORM pg_temp.gate('acme/rowhints-000-forged-b'); END $$;
SET LOCAL openwop.tenant = 'umbrella';
DO $$ BEGIN PERFORM pg_temp.gate('umbrella/rowhints-000-forged-c'); END $$;
SET LOCAL openwop.tenant = 'acme';
UPDATE openwop.open_interrupts o
   SET interrupt_tid = (SELECT ctid FROM openwop.interrupts WHERE run_id = 'acme/rowhints-000-forged-b'),
       execution_tid = (SELECT ctid FROM openwop.node_executions WHERE run_id = 'acme/rowhints-000-forged-b')
 WHERE o.run_id = 'acme/rowhints-000-forged-a';
SELECT is(openwop.resolve_interrupt('acme/rowhints-000-forged-a', 'gate', '{"action": "accept"}') ->> 'status', 'resolved',
          'row_hints_forged_resolves: a gate whose hints name another gate''s rows resolves');
SELECT is(pg_temp.claimed('forged-a'), 1::bigint, 'row_hints_forged_claims: it claimed its own rows');
SELECT is((SELECT i.status || '/' || x.status FROM openwop.interrupts i
             JOIN openwop.node_executions x ON x.tenant = i.tenant AND x.run_id = i.run_id AND x.node_id = i.node_id
            WHERE i.run_id = 'acme/rowhints-000-forged-b'), 'pending/interrupted',
          'row_hints_forged_other_untouched: the gate its hints named is still pending and interrupted');
UPDATE openwop.open_interrupts o
   SET interrupt_tid = (SELECT ctid FROM openwop.interrupts WHERE run_id = 'umbrella/rowhints-000-forged-c'),
       execution_tid = (SELECT ctid FROM openwop.node_executions WHERE run_id = 'umbrella/rowhints-000-forged-c')
 WHERE o.run_id = 'acme/rowhints-000-forged-b';
SELECT is(openwop.resolve_interrupt('acme/rowhints-000-forged-b', 'gate', '{"action": "accept"}') ->> 'status', 'resolved',
          'row_hints_forged_tenant_resolves: a gate whose hints name another tenant''s rows resolves');
SELECT is(pg_temp.claimed('forged-b'), 1::bigint, 'row_hints_forged_tenant_claims: it claimed its own rows');
SELECT is((SELECT i.status || '/' || x.status FROM openwop.interrupts i
             JOIN openwop.node_executions x ON x.tenant = i.tenant AND x.run_id = i.run_id AND x.node_id = i.node_id
            WHERE i.run_id = 'umbrella/rowhints-000-forged-c'), 'pending/interrupted',
          'row_hints_forged_tenant_untouched: the other tenant''s gate is still pending and interrupted');

-- CLUSTER moves every row: a hint then names another gate's row, or none
DO $$ BEGIN PERFORM pg_temp.gate('acme/rowhints-000-moved-' || g) FROM generate_series(1, 60) g; END $$;
CLUSTER openwop.interrupts USING interrupts_pkey;
CLUSTER openwop.node_executions USING node_executions_pkey;
SELECT is((SELECT count(*) FROM openwop.open_interrupts o JOIN openwop.interrupts i USING (tenant, interrupt_id)
            WHERE o.run_id LIKE 'acme/rowhints-000-moved-%' AND o.interrupt_tid <> i.ctid) > 0,
          true, 'row_hints_cluster_moved: after CLUSTER the gates'' hints name other places');
SELECT is((SELECT count(*) FROM generate_series(1, 60) g
            WHERE openwop.resolve_interrupt('acme/rowhints-000-moved-' || g, 'gate', '{"action": "accept"}') ->> 'status' = 'resolved'),
          60::bigint, 'row_hints_moved_resolve: every gate whose hints name other rows resolves');
SELECT is(pg_temp.claimed('moved-'), 60::bigint,
          'row_hints_moved_claims: each claimed its own interrupt and execution, none another''s');

-- a hint past the table's end (the table shrank), or past the last row of its page
DO $$ BEGIN PERFORM pg_temp.gate('acme/rowhints-000-last'); END $$;
UPDATE openwop.open_interrupts SET interrupt_tid = '(4000000,1)', execution_tid = '(0,250)'
 WHERE run_id = 'acme/rowhints-000-last';
SELECT is(openwop.resolve_interrupt('acme/rowhints-000-last', 'gate', '{"action": "accept"}') ->> 'status', 'resolved',
          'row_hints_past_end_resolves: a hint past the end, or past a page''s rows, is looked up by the index');
SELECT is(pg_temp.claimed('last'), 1::bigint, 'row_hints_past_end_claims: the right rows claimed');

-- a row changed since the raise: its hint names a dead version
DO $$ BEGIN PERFORM pg_temp.gate('acme/rowhints-000-changed'); END $$;
UPDATE openwop.interrupts SET payload = payload WHERE run_id = 'acme/rowhints-000-changed';
UPDATE openwop.node_executions SET attempt = attempt WHERE run_id = 'acme/rowhints-000-changed';
SELECT is((SELECT o.interrupt_tid <> i.ctid FROM openwop.open_interrupts o JOIN openwop.interrupts i USING (tenant, interrupt_id)
            WHERE o.run_id = 'acme/rowhints-000-changed'), true, 'row_hints_changed_setup: the interrupt row has a new version');
SELECT is(openwop.resolve_interrupt('acme/rowhints-000-changed', 'gate', '{"action": "accept"}') ->> 'status', 'resolved',
          'row_hints_changed_resolves: a hint to an old version is looked up by the index');
SELECT is(pg_temp.claimed('changed'), 1::bigint, 'row_hints_changed_claims: the current versions claimed');

-- no hints: rows from before 0.10.0, or written by SQL statements
DO $$ BEGIN PERFORM pg_temp.gate('acme/rowhints-000-nohint'); END $$;
UPDATE openwop.open_interrupts SET interrupt_tid = NULL, execution_tid = NULL WHERE run_id = 'acme/rowhints-000-nohint';
SELECT is(openwop.resolve_interrupt('acme/rowhints-000-nohint', 'gate', '{"action": "accept"}') ->> 'status', 'resolved',
          'row_hints_null_resolves: without hints the indexes say where the rows are');
SELECT is(pg_temp.claimed('nohint'), 1::bigint, 'row_hints_null_claims: the right rows claimed');

CREATE FUNCTION public.tap_hints_noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE TRIGGER tap_hints_noop BEFORE INSERT ON openwop.interrupts FOR EACH ROW EXECUTE FUNCTION public.tap_hints_noop();
DO $$ BEGIN PERFORM pg_temp.gate('acme/rowhints-000-sql-raise'); END $$;
SELECT is((SELECT interrupt_tid IS NULL FROM openwop.open_interrupts WHERE run_id = 'acme/rowhints-000-sql-raise'), true,
          'row_hints_sql_raise: an interrupt row inserted by its statement leaves its hint NULL');
SELECT is((SELECT execution_tid IS NOT NULL FROM openwop.open_interrupts WHERE run_id = 'acme/rowhints-000-sql-raise'), true,
          'row_hints_sql_raise_execution: the execution, still written directly, is named');
DROP TRIGGER tap_hints_noop ON openwop.interrupts;
SELECT is(openwop.resolve_interrupt('acme/rowhints-000-sql-raise', 'gate', '{"action": "accept"}') ->> 'status', 'resolved',
          'row_hints_sql_raise_resolves: resolved by the index and the execution''s hint');
SELECT is(pg_temp.claimed('sql-raise'), 1::bigint, 'row_hints_sql_raise_claims: the right rows claimed');

SELECT * FROM finish();
ROLLBACK;
