-- Every read and write of the hot paths exists once (src/store/rowstore.c:
-- OwRead, OwWrite): carried directly while the tables are plain, else by
-- the statement made from the same description.  One whole life of a run
-- touches each of them; lived once with the direct path on and once with
-- every table sent to the statements, it writes the same rows.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
-- the outbox on: its rows are written by the same carrier
SET LOCAL openwop.notification_outbox = on;
\ir callers.psql

CREATE FUNCTION pg_temp.vote(run text, who text, value jsonb, node text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_request(jsonb_build_object('sub', who, 'tenant', 'acme', 'scope', 'approvals:respond'),
                            format('SELECT openwop.resolve_interrupt(%L, %L, %L)', run, node, value))
$$;

-- a run's rows and events without ids and clocks
CREATE FUNCTION pg_temp.shape(run text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object(
    'run', (SELECT jsonb_build_array(workflow_id, status, current_node_id, configurable, inputs, metadata,
                                     outputs, error, next_sequence, fork_of, ended_at IS NULL)
              FROM openwop.runs WHERE run_id = run),
    'events', (SELECT jsonb_agg(jsonb_build_array(sequence, type, node_id,
                                                  payload - '{interruptId,key,durationMs,runId}'::text[]
                                                    #- '{resumeValue,decidedAt}' #- '{resolvedBy,id}',
                                                  schema_version, causation_id IS NULL) ORDER BY sequence)
                 FROM openwop.events WHERE run_id = run),
    'executions', (SELECT jsonb_agg(jsonb_build_array(node_id, visit, status, attempt, outputs, error,
                                                      interrupt_id IS NULL, ended_sequence, ended_at IS NULL)
                                    ORDER BY node_id, visit)
                     FROM openwop.node_executions WHERE run_id = run),
    'interrupts', (SELECT jsonb_agg(jsonb_build_array(node_id, visit, ordinal, kind, status, requested_sequence,
                                                      resolved_sequence, decision, action, reason,
                                                      expires_at IS NULL, resolved_at IS NULL)
                                    ORDER BY node_id, visit, ordinal)
                     FROM openwop.interrupts WHERE run_id = run),
    'open', (SELECT jsonb_agg(jsonb_build_array(node_id, status) ORDER BY node_id)
               FROM openwop.open_interrupts WHERE run_id = run),
    'notifications', (SELECT jsonb_agg(jsonb_build_array(kind, recipient, detail, attempts, lease_until IS NULL,
                                                         created_at = now()) ORDER BY id)
                        FROM openwop.notifications WHERE run_id = run))
$$;

-- one life: a completed node (the prefix), a group's vote, a token, a late
-- answer to an expired gate, a key read back, an end that cancels what is open
CREATE FUNCTION pg_temp.life(run text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  envelope jsonb;
  again jsonb;
  token text;
BEGIN
  PERFORM openwop.create_run('carrier', jsonb_build_object('runId', run, 'inputs', '{"n": 1}'::jsonb));
  PERFORM openwop.start_node(run, 'a');
  PERFORM openwop.complete_node(run, 'a', '{"x": 1}');
  PERFORM openwop.start_node(run, 'a');
  PERFORM openwop.complete_node(run, 'a', '{"x": 2}');
  PERFORM openwop.start_node(run, 'gate');
  envelope := openwop.interrupt(run, 'gate', '{"kind": "approval", "data": {"artifactId": "a",
    "artifactType": "doc", "title": "T", "actions": ["accept", "reject"], "requiredApprovals": 2,
    "approverGroupRefs": ["carrier-finance"]}}');
  -- the same request again answers the same pending envelope, found by its key
  again := openwop.interrupt(run, 'gate', '{"kind": "approval", "data": {"artifactId": "a",
    "artifactType": "doc", "title": "T", "actions": ["accept", "reject"], "requiredApprovals": 2,
    "approverGroupRefs": ["carrier-finance"]}}');
  IF envelope <> again OR envelope #> '{results,a,x}' <> '2' THEN
    RAISE EXCEPTION 'envelopes differ or miss the prefix: % %', envelope, again;
  END IF;
  PERFORM pg_temp.vote(run, 'carrier-dave', '{"action": "accept"}', 'gate');
  PERFORM pg_temp.vote(run, 'carrier-erin', '{"action": "accept"}', 'gate');
  PERFORM openwop.complete_node(run, 'gate', '{"approved": true}');

  PERFORM openwop.start_node(run, 'tok');
  PERFORM openwop.interrupt(run, 'tok', '{"kind": "clarification", "data": {"questions": [{"id": "q1", "question": "Why?"}]}}');
  token := openwop.mint_interrupt_token((SELECT interrupt_id FROM openwop.interrupts
                                          WHERE run_id = run AND node_id = 'tok'));
  PERFORM openwop.resolve_interrupt_by_token(token, '{"answers": {"q1": "because"}}');
  PERFORM openwop.complete_node(run, 'tok', '{}');

  PERFORM openwop.start_node(run, 'late');
  PERFORM openwop.interrupt(run, 'late', '{"kind": "external-event", "data": {"eventType": "paid",
    "correlation": {"order": 7}}, "timeoutMs": 60000}');
  UPDATE openwop.interrupts SET expires_at = now() - interval '1 second' WHERE run_id = run AND node_id = 'late';
  BEGIN
    PERFORM openwop.resolve_interrupt(run, 'late', '{"payload": {}}');
  EXCEPTION WHEN OTHERS THEN NULL;
  END;

  PERFORM openwop.start_node(run, 'open');
  PERFORM openwop.interrupt(run, 'open', '{"kind": "approval", "data": {"artifactId": "b",
    "artifactType": "doc", "title": "U", "actions": ["accept", "reject"]}}');
  PERFORM openwop.start_node(run, 'busy');
  PERFORM openwop.cancel_run(run, 'done here');
  RETURN pg_temp.shape(run);
END $$;

SELECT is(openwop.add_signing_key('k-carrier'), 'k-carrier', 'a signing key for the token');
SELECT ok(openwop.add_group_member('carrier-finance', 'carrier-dave'), 'a group for the gate');
SELECT ok(openwop.add_group_member('carrier-finance', 'carrier-erin'), '... of two');

SELECT is((SELECT count(*) FROM openwop.direct_path() WHERE direct), 7::bigint,
          'every_operation_one_implementation: the direct path is on for every table');
CREATE TEMP TABLE direct_life AS SELECT pg_temp.life('acme/carrier-direct-00001') AS shape;

-- row security on every table (the test login owns nothing of it: the
-- superuser bypasses the policy, so only the carrier changes)
ALTER TABLE openwop.runs ENABLE ROW LEVEL SECURITY;
ALTER TABLE openwop.events ENABLE ROW LEVEL SECURITY;
ALTER TABLE openwop.interrupts ENABLE ROW LEVEL SECURITY;
ALTER TABLE openwop.node_executions ENABLE ROW LEVEL SECURITY;
ALTER TABLE openwop.group_members ENABLE ROW LEVEL SECURITY;
ALTER TABLE openwop.open_interrupts ENABLE ROW LEVEL SECURITY;
ALTER TABLE openwop.notifications ENABLE ROW LEVEL SECURITY;
SELECT is((SELECT count(*) FROM openwop.direct_path() WHERE NOT direct AND reason = 'it has row-level security'), 7::bigint,
          '... and off for every table once each has row security');
CREATE TEMP TABLE statement_life AS SELECT pg_temp.life('acme/carrier-statement-1') AS shape;

SELECT is((SELECT shape FROM statement_life), (SELECT shape FROM direct_life),
          'every_operation_one_implementation: the statements write the rows the direct path writes');
SELECT is((SELECT shape -> 'run' ->> 1 FROM direct_life), 'cancelled', '... a whole life, to the end');
SELECT is((SELECT jsonb_array_length(shape -> 'events') FROM direct_life) > 20, true, '... with every kind of write in it');
SELECT is((SELECT jsonb_array_length(shape -> 'notifications') FROM direct_life) > 3, true,
          '... notifications of the outbox among them');
SELECT is((SELECT shape -> 'open' FROM statement_life), '[["late", "expired"]]'::jsonb,
          '... and on either only the late answer''s expiry is left open, for the next sweep to announce (INT-18)');

SELECT * FROM finish();
ROLLBACK;
