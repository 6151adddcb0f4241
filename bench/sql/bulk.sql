-- One answer to many interrupts in the benchmark: the gates bench.make_gates
-- raises, answered one resolve_interrupt at a time or in resolve_interrupts
-- calls of per_call ids, in one backend; CPU µs per interrupt answered, the
-- commits (one per 50 answers, or one per call) left in.  The gates are
-- taken in the same spread order as bench.cpu_per_resolve's.
CREATE PROCEDURE bench.cpu_per_bulk_item(how text, tag int, n int, per_call int, hz int, INOUT us numeric DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
  runs text[] := ARRAY(SELECT bench.run_id(tag, 0, g) FROM generate_series(1, n) g
                        ORDER BY (g - 1) % greatest(n / 50, 1), g);
  ids text[] := ARRAY(SELECT i.interrupt_id FROM unnest(runs) WITH ORDINALITY AS r(run_id, o)
                        JOIN openwop.interrupts i ON i.tenant = 'default' AND i.run_id = r.run_id
                       ORDER BY r.o);
  t0 bigint;
  granted int;
BEGIN
  t0 := bench.backend_ticks();
  IF how = 'single' THEN
    FOR k IN 1 .. n LOOP
      PERFORM openwop.resolve_interrupt(runs[k], 'gate', '{"action": "accept"}');
      IF k % 50 = 0 THEN
        COMMIT;
      END IF;
    END LOOP;
  ELSE
    FOR k IN 0 .. (n - 1) / per_call LOOP
      SELECT count(*) FILTER (WHERE status = 200) INTO granted
        FROM openwop.resolve_interrupts(ids[k * per_call + 1 : (k + 1) * per_call], '{"action": "accept"}');
      IF granted <> least(per_call, n - k * per_call) THEN
        RAISE EXCEPTION 'a bulk call granted % of %', granted, least(per_call, n - k * per_call);
      END IF;
      COMMIT;
    END LOOP;
  END IF;
  us := round((bench.backend_ticks() - t0) * 1e6 / hz / n, 1);
END $$;
