-- History for the latency-at-scale figure, and the sample for the storage figure.

-- Grow the event log to about "target" events: 200 whole runs through the
-- API (run.started … run.completed, a resolved approval each) as a
-- template, then copies of them under new run and interrupt ids.
CREATE PROCEDURE bench.grow_history(target bigint) LANGUAGE plpgsql AS $$
DECLARE
  r text;
  have bigint;
  per_copy bigint;
  first_copy int;
  copies int;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM openwop.runs WHERE run_id = 'default/benchmark-hist-1') THEN
    FOR i IN 1 .. 200 LOOP
      r := 'default/benchmark-hist-' || i;
      PERFORM openwop.create_run('bench', jsonb_build_object('runId', r));
      PERFORM openwop.start_node(r, 'gate');
      PERFORM openwop.interrupt(r, 'gate', bench.gate_request());
      PERFORM openwop.resolve_interrupt(r, 'gate', '{"action": "accept"}');
      PERFORM openwop.complete_node(r, 'gate', '{"approved": true}');
      PERFORM openwop.complete_run(r, '{"booked": true}');
    END LOOP;
  END IF;
  SELECT count(*) INTO have FROM openwop.events;
  IF have >= target THEN
    RETURN;
  END IF;
  SELECT count(*) INTO per_copy FROM openwop.events WHERE run_id ~ '^default/benchmark-hist-[0-9]+$';
  SELECT coalesce(max(substring(run_id FROM '-c([0-9]+)$')::int), 0) + 1 INTO first_copy
    FROM openwop.runs WHERE run_id LIKE 'default/benchmark-hist-%-c%';
  copies := ceil((target - have)::numeric / per_copy);

  CREATE TEMP TABLE copies ON COMMIT DROP AS
    SELECT g FROM generate_series(first_copy, first_copy + copies - 1) g;
  -- a copy's events keep their hashes: the canonical form names no run id
  INSERT INTO openwop.events (tenant, run_id, sequence, type, node_id, payload, created_at, schema_version, causation_id, hash)
  SELECT e.tenant, e.run_id || '-c' || c.g, e.sequence, e.type, e.node_id, e.payload, e.created_at, e.schema_version, e.causation_id, e.hash
    FROM openwop.events e, copies c WHERE e.run_id ~ '^default/benchmark-hist-[0-9]+$';
  -- (f(...)).* would call f once per column: each row is made once, in LATERAL
  INSERT INTO openwop.runs
  SELECT r.* FROM openwop.runs x, copies c,
         LATERAL jsonb_populate_record(NULL::openwop.runs, to_jsonb(x) || jsonb_build_object('run_id', x.run_id || '-c' || c.g)) r
   WHERE x.run_id ~ '^default/benchmark-hist-[0-9]+$';
  INSERT INTO openwop.node_executions
  SELECT r.* FROM openwop.node_executions x, copies c,
         LATERAL jsonb_populate_record(NULL::openwop.node_executions, to_jsonb(x) || jsonb_build_object('run_id', x.run_id || '-c' || c.g)) r
   WHERE x.run_id ~ '^default/benchmark-hist-[0-9]+$';
  INSERT INTO openwop.votes
  SELECT r.* FROM openwop.votes x JOIN openwop.interrupts i USING (tenant, interrupt_id), copies c,
         LATERAL jsonb_populate_record(NULL::openwop.votes, to_jsonb(x) || jsonb_build_object('interrupt_id', x.interrupt_id || '-c' || c.g)) r
   WHERE i.run_id ~ '^default/benchmark-hist-[0-9]+$';
  INSERT INTO openwop.interrupts
  SELECT r.* FROM openwop.interrupts x, copies c,
         LATERAL jsonb_populate_record(NULL::openwop.interrupts, to_jsonb(x) || jsonb_build_object(
            'interrupt_id', x.interrupt_id || '-c' || c.g, 'run_id', x.run_id || '-c' || c.g,
            'root_run_id', x.root_run_id || '-c' || c.g)) r
   WHERE x.run_id ~ '^default/benchmark-hist-[0-9]+$';
END $$;

-- a vote by a JWT approver, as a PostgREST request makes it (a request session: the
-- login belongs to openwop.jwt_session_role; verified claims in request.jwt.claims)
CREATE FUNCTION bench.vote_as(run text, sub text, value jsonb) RETURNS jsonb LANGUAGE plpgsql
    SET openwop.jwt_session_role = 'bench_authenticator' SET request.jwt.claims = '' AS $$
BEGIN
  PERFORM set_config('request.jwt.claims', jsonb_build_object('sub', sub, 'tenant', 'default', 'scope', 'approvals:respond')::text, true);
  RETURN openwop.resolve_interrupt(run, 'gate', value);
END $$;

-- n approval gates as DBAs run them: a 2-of-3 gate, two named approvers
-- vote (each vote a row), the node and the run complete.
CREATE PROCEDURE bench.make_approvals(n int) LANGUAGE plpgsql AS $$
DECLARE r text;
BEGIN
  FOR i IN 1 .. n LOOP
    r := 'default/benchmark-store-' || i;
    PERFORM openwop.create_run('bench', jsonb_build_object('runId', r));
    PERFORM openwop.start_node(r, 'gate');
    PERFORM openwop.interrupt(r, 'gate', jsonb_set(bench.gate_request(), '{data}',
              (bench.gate_request() -> 'data') || '{"requiredApprovals": 2,
               "approversList": ["alice@example.org", "bob@example.org", "carol@example.org"]}'));
    PERFORM bench.vote_as(r, 'alice@example.org', '{"action": "accept"}');
    PERFORM bench.vote_as(r, 'bob@example.org', '{"action": "accept", "feedback": "fine"}');
    PERFORM openwop.complete_node(r, 'gate', '{"approved": true}');
    PERFORM openwop.complete_run(r, '{"booked": true}');
    IF i % 500 = 0 THEN
      COMMIT;
    END IF;
  END LOOP;
END $$;

-- bytes of every openwop table with its indexes and TOAST
CREATE FUNCTION bench.openwop_bytes() RETURNS TABLE (tbl text, bytes bigint) LANGUAGE sql AS $$
  SELECT c.relname::text, pg_total_relation_size(c.oid)
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE n.nspname = 'openwop' AND c.relkind = 'r'
$$;
