-- The hash chain's share of a resolve in the benchmark: the two events each
-- of n resolves appended (interrupt.resolved, node.resumed), hashed again
-- through openwop.event_hash in one backend, less the same rows read
-- without hashing; CPU µs per resolve.  An upper bound of what the resolve
-- itself spends: the SQL function also converts its text arguments and
-- pays a function call per event.  passes: times over the rows, for the
-- clock's resolution (CLK_TCK ticks).
CREATE PROCEDURE bench.cpu_hash_per_resolve(tag int, n int, passes int, hz int, INOUT us numeric DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
  runs text[] := ARRAY(SELECT bench.run_id(tag, 0, g) FROM generate_series(1, n) g);
  t0 bigint;
  hashing bigint := 0;
  reading bigint := 0;
  k bigint;
BEGIN
  DROP TABLE IF EXISTS pg_temp.resolve_events;
  CREATE TEMP TABLE resolve_events AS
  SELECT e.* FROM openwop.events e
   WHERE e.tenant = 'default' AND e.run_id = ANY (runs) AND e.type IN ('interrupt.resolved', 'node.resumed');
  SELECT count(*) INTO k FROM resolve_events;
  IF k <> 2 * n THEN
    RAISE EXCEPTION 'found % events of % resolves, not %', k, n, 2 * n;
  END IF;
  FOR p IN 1 .. passes LOOP
    t0 := bench.backend_ticks();
    SELECT count(openwop.event_hash(e.hash, e.sequence, e.type, e.node_id, e.payload, e.created_at,
                                    e.schema_version, e.causation_id)) INTO k FROM resolve_events e;
    hashing := hashing + bench.backend_ticks() - t0;
    t0 := bench.backend_ticks();
    SELECT count(ROW(e.hash, e.sequence, e.type, e.node_id, e.payload, e.created_at,
                     e.schema_version, e.causation_id)) INTO k FROM resolve_events e;
    reading := reading + bench.backend_ticks() - t0;
  END LOOP;
  us := round(greatest(hashing - reading, 0) * 1e6 / hz / passes / n, 2);
END $$;
