-- The "write it yourself" alternative: the same resolve transaction as a
-- straightforward PL/pgSQL function over its own tables — lock the run row,
-- find the pending interrupt, check the action, append interrupt.resolved
-- and node.resumed, update the interrupt and the run, NOTIFY.  No
-- eligibility, quorum, idempotency or tenancy: it does less than the
-- extension, which is what a first version written by hand does.  Its
-- tables have the fillfactor of the extension's (runs 80, interrupts 60), so
-- its updates find room on the page for a HOT update as the extension's do.
CREATE SCHEMA plbench;

CREATE TABLE plbench.runs (
    run_id          text PRIMARY KEY,
    status          text NOT NULL,
    current_node_id text,
    next_sequence   bigint NOT NULL DEFAULT 0,
    updated_at      timestamptz NOT NULL DEFAULT now()
) WITH (fillfactor = 80);
CREATE TABLE plbench.interrupts (
    interrupt_id text PRIMARY KEY,
    run_id       text NOT NULL,
    node_id      text NOT NULL,
    payload      jsonb NOT NULL,
    status       text NOT NULL DEFAULT 'pending',
    resume_value jsonb,
    decision     text,
    resolved_by  text,
    resolved_at  timestamptz
) WITH (fillfactor = 60);
CREATE UNIQUE INDEX ON plbench.interrupts (run_id, node_id) WHERE status = 'pending';
CREATE TABLE plbench.events (
    run_id     text NOT NULL,
    sequence   bigint NOT NULL,
    type       text NOT NULL,
    node_id    text,
    payload    jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, sequence)
);

CREATE FUNCTION plbench.resolve_interrupt(p_run_id text, p_node_id text, p_value jsonb)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  r plbench.runs;
  i plbench.interrupts;
  v_action text := p_value ->> 'action';
  v_decision text;
BEGIN
  SELECT * INTO r FROM plbench.runs WHERE run_id = p_run_id FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'not_found: run "%" does not exist', p_run_id USING ERRCODE = 'PT404';
  END IF;
  SELECT * INTO i FROM plbench.interrupts
   WHERE run_id = p_run_id AND node_id = p_node_id AND status = 'pending';
  IF NOT FOUND OR r.status IN ('completed', 'failed', 'cancelled') THEN
    RAISE EXCEPTION 'interrupt_already_resolved' USING ERRCODE = 'PT409';
  END IF;
  IF v_action IS NULL OR NOT (i.payload -> 'data' -> 'actions') ? v_action THEN
    RAISE EXCEPTION 'validation_error: action not allowed' USING ERRCODE = 'PT400';
  END IF;
  v_decision := CASE v_action WHEN 'reject' THEN 'rejected' ELSE 'granted' END;

  INSERT INTO plbench.events (run_id, sequence, type, node_id, payload)
  VALUES (p_run_id, r.next_sequence, 'interrupt.resolved', p_node_id,
          jsonb_build_object('nodeId', p_node_id, 'interruptId', i.interrupt_id, 'kind', 'approval',
                             'resumeValue', p_value, 'resolvedBy', jsonb_build_object('id', current_user),
                             'decision', v_decision, 'action', v_action));
  INSERT INTO plbench.events (run_id, sequence, type, node_id, payload)
  VALUES (p_run_id, r.next_sequence + 1, 'node.resumed', p_node_id,
          jsonb_build_object('nodeId', p_node_id, 'interruptId', i.interrupt_id, 'resumeValue', p_value));
  UPDATE plbench.interrupts
     SET status = 'resolved', resume_value = p_value, decision = v_decision,
         resolved_by = current_user, resolved_at = now()
   WHERE interrupt_id = i.interrupt_id;
  UPDATE plbench.runs
     SET next_sequence = r.next_sequence + 2, status = 'running', updated_at = now()
   WHERE run_id = p_run_id;
  -- plbench.notify = off measures the same function without its NOTIFY
  IF current_setting('plbench.notify', true) IS DISTINCT FROM 'off' THEN
    PERFORM pg_notify('plbench_events',
                      json_build_object('runId', p_run_id, 'sequence', r.next_sequence + 1)::text);
  END IF;
  RETURN jsonb_build_object('status', 'resolved', 'runId', p_run_id, 'nodeId', p_node_id,
                            'interruptId', i.interrupt_id, 'decision', v_decision,
                            'sequence', r.next_sequence);
END $$;

-- fixtures: the same runs, suspended on the same gate (events 0..3 as the extension writes them)
CREATE PROCEDURE plbench.make_gates(tag int, clients int, per int) LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO plbench.runs (run_id, status, current_node_id, next_sequence)
  SELECT bench.run_id(tag, c, n), 'waiting-approval', 'gate', 4
    FROM generate_series(0, clients - 1) c, generate_series(1, per) n;
  INSERT INTO plbench.interrupts (interrupt_id, run_id, node_id, payload)
  SELECT 'default/int-' || md5(bench.run_id(tag, c, n)), bench.run_id(tag, c, n), 'gate', bench.gate_request()
    FROM generate_series(0, clients - 1) c, generate_series(1, per) n;
  INSERT INTO plbench.events (run_id, sequence, type, node_id, payload)
  SELECT bench.run_id(tag, c, n), s, t, CASE WHEN s > 0 THEN 'gate' END, '{}'::jsonb
    FROM generate_series(0, clients - 1) c, generate_series(1, per) n,
         unnest(ARRAY[0, 1, 2, 3], ARRAY['run.started', 'node.started', 'interrupt.requested', 'node.suspended']) AS e(s, t);
END $$;

-- Backend CPU per resolve, commits out of the picture: the gates of
-- (tag, client 0) resolved in this one backend with a commit every 50 (so
-- pages are pruned as between clients' transactions and an update can be
-- HOT, as it is under load; 1 commit in 50 is noise), timed by this
-- process's CPU clock (ticks of 1/hz s).  impl: openwop (the extension,
-- its notifications queued as usual) or plbench (the PL/pgSQL
-- alternative, without its pg_notify).
-- The gates are taken n / 50 apart (200 in the full run, 40 in the quick
-- one), so that the fifty of one transaction fall on different pages (in
-- the quick run a few may share one).  Taken in order, the fifty would
-- update the rows of a few pages together, each page would fill with
-- versions that no commit has yet made prunable, and updates would not be
-- HOT that under load (a commit per resolve) are: measured, half the
-- extension's claims and two thirds of the PL/pgSQL function's run
-- updates.
CREATE PROCEDURE bench.cpu_per_resolve(impl text, tag int, n int, hz int, INOUT us numeric DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE
  ids text[] := ARRAY(SELECT bench.run_id(tag, 0, g) FROM generate_series(1, n) g
                      ORDER BY (g - 1) % greatest(n / 50, 1), g);
  t0 bigint;
BEGIN
  PERFORM set_config('plbench.notify', 'off', false);
  t0 := bench.backend_ticks();
  FOR i IN 1 .. n LOOP
    IF impl = 'openwop' THEN
      PERFORM openwop.resolve_interrupt(ids[i], 'gate', '{"action": "accept"}');
    ELSE
      PERFORM plbench.resolve_interrupt(ids[i], 'gate', '{"action": "accept"}');
    END IF;
    IF i % 50 = 0 THEN
      COMMIT;
    END IF;
  END LOOP;
  us := round((bench.backend_ticks() - t0) * 1e6 / hz / n, 1);
END $$;
