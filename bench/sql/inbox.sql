-- The inbox figure: tenants with many pending approval gates, made through
-- the API (create_run, start_node, interrupt), as an engine makes them.

-- half the gates are for group bench-finance (the approver's), half for
-- bench-legal: a page skips the gates its reader may not decide
CREATE FUNCTION bench.inbox_request(n int) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_build_object('kind', 'approval', 'data', jsonb_build_object(
           'artifactId', 'expense-' || n, 'artifactType', 'expense', 'title', 'Approve expense ' || n,
           'description', 'Travel, 412.50 EUR', 'actions', '["accept", "reject", "ask"]'::jsonb,
           'approverGroupRefs', jsonb_build_array(CASE WHEN n % 2 = 0 THEN 'bench-finance' ELSE 'bench-legal' END)))
$$;

-- gates first .. last of tenant t (run ids <t>/inbox-run-<n>), in one transaction
CREATE PROCEDURE bench.make_inbox(t text, first int, last int) LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
  PERFORM set_config('openwop.tenant', t, true);
  FOR n IN first .. last LOOP
    r := t || '/inbox-run-' || lpad(n::text, 10, '0');
    PERFORM openwop.create_run('bench-inbox', jsonb_build_object('runId', r));
    PERFORM openwop.start_node(r, 'gate');
    PERFORM openwop.interrupt(r, 'gate', bench.inbox_request(n));
  END LOOP;
END $$;

-- the backend's own CPU time so far, in clock ticks (utime + stime of /proc/self/stat)
CREATE FUNCTION bench.backend_ticks() RETURNS bigint LANGUAGE sql AS $$
  SELECT f[12]::bigint + f[13]::bigint
    FROM (SELECT string_to_array(split_part(pg_read_file('/proc/self/stat'), ') ', 2), ' ') AS f) s
$$;

-- CPU milliseconds of this backend per execution of sql, over n executions
-- (each planned anew, as a client's query is); hz: clock ticks per second
CREATE FUNCTION bench.cpu_ms_per(sql text, n int, hz int) RETURNS numeric LANGUAGE plpgsql AS $$
DECLARE t0 bigint := bench.backend_ticks();
BEGIN
  FOR i IN 1 .. n LOOP
    EXECUTE sql;
  END LOOP;
  RETURN round((bench.backend_ticks() - t0) * 1000.0 / hz / n, 4);
END $$;

-- shared buffers one execution of sql touches (hit or read), and the rows it returns
CREATE FUNCTION bench.buffers_and_rows(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE p jsonb;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON) ' || sql INTO p;
  p := p -> 0 -> 'Plan';
  RETURN ((p ->> 'Shared Hit Blocks')::int + (p ->> 'Shared Read Blocks')::int) || ' ' || round((p ->> 'Actual Rows')::numeric);  -- 18 reports rows as 50.00
END $$;
