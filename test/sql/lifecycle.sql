-- The run lifecycle end to end: create, node executions and visits,
-- recovery, terminal transitions, the event envelopes and the snapshot.
\set VERBOSITY default
\set SHOW_CONTEXT never
SET openwop.tenant = 'acme';

-- event rows without the parts that change between runs (ids, times, durations)
CREATE FUNCTION log_of(run text) RETURNS TABLE (seq bigint, type text, node text, payload jsonb)
LANGUAGE sql AS $$
  SELECT (e->>'sequence')::bigint, e->>'type', e->>'nodeId', (e->'payload') - 'durationMs' - 'cancelledBy' - 'owner'
    FROM openwop.events(run) AS e
$$;

SELECT openwop.create_run('invoice-approval',
         '{"runId": "acme/lifecycle-run-0001",
           "configurable": {"version": 1, "run": {"escalationThreshold": 0.5}},
           "inputs": {"amount": 1200},
           "metadata": {"requestedBy": "ops"}}');

-- first execution of "fetch": visit 0
SELECT openwop.start_node('acme/lifecycle-run-0001', 'fetch', 'core.http.get');
-- calling again while it is open is a recovery of the same execution
SELECT openwop.start_node('acme/lifecycle-run-0001', 'fetch');
SELECT openwop.run_snapshot('acme/lifecycle-run-0001') - 'owner';
SELECT openwop.complete_node('acme/lifecycle-run-0001', 'fetch', '{"body": "ok"}');
-- a later execution of the same node is a new visit
SELECT openwop.start_node('acme/lifecycle-run-0001', 'fetch', 'core.http.get');
SELECT openwop.fail_node('acme/lifecycle-run-0001', 'fetch',
         '{"code": "upstream_down", "message": "503 from upstream", "retryable": true}');
SELECT openwop.start_node('acme/lifecycle-run-0001', 'notify');
SELECT openwop.complete_run('acme/lifecycle-run-0001', '{"sent": true}');

SELECT * FROM log_of('acme/lifecycle-run-0001');
-- run.started echoes the snapshot's owner block: the tenant and the Subject that created the run
SELECT e #> '{payload,owner}' = openwop.run_snapshot('acme/lifecycle-run-0001') -> 'owner' AS started_echoes_owner,
       e #>> '{payload,owner,subject,issuer}' AS owner_issuer
  FROM openwop.events('acme/lifecycle-run-0001') AS e WHERE e ->> 'type' = 'run.started';
SELECT openwop.run_snapshot('acme/lifecycle-run-0001') - 'owner' AS snapshot,
       openwop.run_snapshot('acme/lifecycle-run-0001') #>> '{owner,tenant}' AS owner_tenant;

-- the envelope: required members, eventId grammar, ISO-8601 timestamp
SELECT e ? 'eventId' AND e ? 'runId' AND e ? 'type' AND e ? 'payload'
       AND e ? 'timestamp' AND e ? 'sequence' AND e ? 'schemaVersion' AS envelope_complete,
       e->>'eventId' ~ '^[A-Za-z0-9._~-]{16,128}$' AS event_id_grammar,
       e->>'timestamp' ~ '^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$' AS iso8601,
       (e->>'timestamp')::timestamptz IS NOT NULL AS parses,
       (e->>'schemaVersion')::int AS schema_version
  FROM openwop.events('acme/lifecycle-run-0001') AS e
 GROUP BY 1, 2, 3, 4, 5;
-- event ids are unique
SELECT count(DISTINCT e->>'eventId') = count(*) AS unique_event_ids
  FROM openwop.events('acme/lifecycle-run-0001') AS e;

-- paging: after_sequence and max
SELECT e->>'sequence' AS seq, e->>'type' AS type
  FROM openwop.events('acme/lifecycle-run-0001', 2, 3) AS e;

-- a failed run: open executions are cancelled first, the snapshot's error drops retryable
SELECT openwop.create_run('invoice-approval', '{"runId": "acme/lifecycle-run-0002"}');
SELECT openwop.start_node('acme/lifecycle-run-0002', 'charge');
SELECT openwop.fail_run('acme/lifecycle-run-0002',
         '{"code": "card_declined", "message": "declined", "retryable": false,
           "details": {"last4": "4242"}}', 'charge');
SELECT * FROM log_of('acme/lifecycle-run-0002');
SELECT openwop.run_snapshot('acme/lifecycle-run-0002')->'error' AS snapshot_error;

-- a cancelled run
SELECT openwop.create_run('invoice-approval', '{"runId": "acme/lifecycle-run-0003"}');
SELECT openwop.start_node('acme/lifecycle-run-0003', 'a');
SELECT openwop.start_node('acme/lifecycle-run-0003', 'b');
SELECT openwop.cancel_run('acme/lifecycle-run-0003', 'operator stopped it');
SELECT * FROM log_of('acme/lifecycle-run-0003');

-- exactly one terminal event per run, and it is the run's last event
SELECT r.run_id,
       count(*) FILTER (WHERE e.type IN ('run.completed', 'run.failed', 'run.cancelled')) AS terminal_events,
       max(e.sequence) = max(e.sequence) FILTER (WHERE e.type IN ('run.completed', 'run.failed', 'run.cancelled')) AS terminal_is_last,
       max(e.sequence) + 1 = count(*) AND min(e.sequence) = 0 AS gapless
  FROM openwop.runs r JOIN openwop.events e USING (tenant, run_id)
 WHERE r.run_id LIKE 'acme/lifecycle-run-%'
 GROUP BY r.run_id ORDER BY r.run_id;

-- a host-minted run id: tenant-bound, 16+ opaque characters, never a "~"
SELECT (r->>'runId') ~ '^acme/[A-Za-z0-9._-]{16,128}$' AS minted_id_ok, r->>'status' AS status
  FROM openwop.create_run('minted') AS r;

-- a registered definition: typeId comes from it
SELECT openwop.create_run('with-def', '{"runId": "acme/lifecycle-run-0004",
  "definition": {"nodes": [{"id": "gate", "typeId": "core.approval"}, {"id": "after"}],
                 "edges": [{"from": "gate", "to": "after", "triggerRule": "all_success"}]}}');
SELECT openwop.start_node('acme/lifecycle-run-0004', 'gate');
SELECT payload FROM log_of('acme/lifecycle-run-0004') WHERE type = 'node.started';
