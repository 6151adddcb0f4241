-- Benchmark fixtures, run once per benchmark cluster (database postgres,
-- where the notify relay runs).  Everything lives in schema bench except
-- the PL/pgSQL alternative (plpgsql_resolve.sql).
CREATE EXTENSION IF NOT EXISTS openwop_interrupt;
CREATE EXTENSION IF NOT EXISTS pgcrypto;
CREATE SCHEMA IF NOT EXISTS bench;

-- the benchmark login answers as a SQL approver (a member of openwop.approver_role),
-- and can play PostgREST's authenticator for the JWT approvers of bench.make_approvals
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'openwop_approver') THEN CREATE ROLE openwop_approver; END IF;
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'bench_authenticator') THEN CREATE ROLE bench_authenticator; END IF;
  EXECUTE format('GRANT openwop_approver, bench_authenticator TO %I', current_user);
END $$;

-- the approval gate every resolve benchmark answers
CREATE FUNCTION bench.gate_request() RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT '{"kind": "approval", "data": {"artifactId": "expense-412", "artifactType": "expense",
           "title": "Approve 412.50 for jo", "actions": ["accept", "reject"]}}'::jsonb
$$;

-- run ids: default/benchmark-run-<tag>-<client>-<n>; the pgbench scripts write the same
-- id as one literal (a client passes the id as a value: nothing to inline)
CREATE FUNCTION bench.run_id(tag int, client int, n int) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT 'default/benchmark-run-' || tag || '-' || client || '-' || n
$$;

-- per client, "per" runs suspended on an approval gate, through the extension's API
CREATE PROCEDURE bench.make_gates(tag int, clients int, per int) LANGUAGE plpgsql AS $$
DECLARE c int; n int; r text;
BEGIN
  FOR c IN 0 .. clients - 1 LOOP
    FOR n IN 1 .. per LOOP
      r := bench.run_id(tag, c, n);
      PERFORM openwop.create_run('bench', jsonb_build_object('runId', r));
      PERFORM openwop.start_node(r, 'gate');
      PERFORM openwop.interrupt(r, 'gate', bench.gate_request());
    END LOOP;
    COMMIT;
  END LOOP;
END $$;

-- a resolve that may lose the race: 409 is a result here, not an error
CREATE FUNCTION bench.try_resolve(run text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  PERFORM openwop.resolve_interrupt(run, 'gate', '{"action": "accept"}');
  RETURN true;
EXCEPTION WHEN SQLSTATE 'PT409' THEN
  RETURN false;
END $$;

-- results, one row per figure
CREATE TABLE bench.results (
    figure   text, clients int, value numeric, unit text,
    baseline text, baseline_value numeric, ratio numeric, target text, met text,
    wal_per_txn numeric, baseline_wal_per_txn numeric,     -- WAL bytes per transaction
    fpi_per_txn numeric, baseline_fpi_per_txn numeric      -- full-page images per transaction
);
