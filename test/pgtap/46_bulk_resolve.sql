-- One answer to many interrupts (README, "Deciding many at once"):
-- resolve_interrupts answers each interrupt in a subtransaction of its own,
-- exactly as resolve_interrupt would, itemised with the status and body the
-- single call answers; a refused item undoes nothing of another; a repeated
-- call under the same key replays every item; the list is capped.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir refusal.psql
\ir callers.psql

CREATE FUNCTION pg_temp.jwt(who text, tenant text DEFAULT 'acme') RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('sub', who, 'tenant', tenant, 'scope', 'approvals:respond')
$$;
-- a gate on node gate of run, open to approvers (NULL: anyone with the scope); returns its interrupt id
CREATE FUNCTION pg_temp.gate(run text, approvers jsonb DEFAULT NULL, required int DEFAULT 1) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  PERFORM openwop.create_run('bulk', jsonb_build_object('runId', run));
  PERFORM openwop.start_node(run, 'gate');
  RETURN openwop.interrupt(run, 'gate', jsonb_build_object('kind', 'approval', 'data',
           jsonb_build_object('artifactId', 'a', 'artifactType', 'doc', 'title', 'T', 'actions', '["accept", "reject"]'::jsonb,
                              'requiredApprovals', required)
           || CASE WHEN approvers IS NULL THEN '{}' ELSE jsonb_build_object('approversList', approvers) END)) #>> '{metadata,interrupt,id}';
END $$;
-- resolve_interrupts as who: {items: [[id, status, code or status of the body]]}
CREATE FUNCTION pg_temp.bulk(who text, ids text[], value jsonb DEFAULT '{"action": "accept"}', key text DEFAULT NULL) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_request(pg_temp.jwt(who), format(
    'SELECT jsonb_agg(jsonb_build_array(interrupt_id, status, coalesce(result ->> %L, result ->> %L)) ORDER BY ordinality)
       FROM openwop.resolve_interrupts(%L, %L, %L) WITH ORDINALITY', 'error', 'status', ids, value, key))
$$;
CREATE FUNCTION pg_temp.types(run text) RETURNS text LANGUAGE sql AS $$
  SELECT string_agg(type, ',' ORDER BY sequence) FROM openwop.events WHERE run_id = run
$$;

SELECT pg_temp.gate('acme/bulk-open-0000000001') AS g1 \gset
SELECT pg_temp.gate('acme/bulk-open-0000000002') AS g2 \gset
SELECT pg_temp.gate('acme/bulk-bea-00000000001', '["bea"]') AS g3 \gset
SELECT pg_temp.gate('acme/bulk-done-0000000001') AS g4 \gset
SELECT pg_temp.gate('acme/bulk-quorum-00000001', '["ann", "bea"]', 2) AS g5 \gset
SELECT openwop.resolve_interrupt('acme/bulk-done-0000000001', 'gate', '{"action": "reject"}') IS NOT NULL AS decided \gset

SELECT is(pg_temp.bulk('ann', ARRAY[:'g1', :'g3', :'g4', 'acme/nosuchinterrupt00001', 'zeta/someoneelses000001', NULL, :'g5', :'g2']),
          jsonb_build_array(jsonb_build_array(:'g1', 200, 'resolved'), jsonb_build_array(:'g3', 403, 'forbidden'),
                            jsonb_build_array(:'g4', 409, 'interrupt_already_resolved'), jsonb_build_array('acme/nosuchinterrupt00001', 404, 'not_found'),
                            jsonb_build_array('zeta/someoneelses000001', 403, 'id_tenant_mismatch'), jsonb_build_array(NULL, 400, 'validation_error'),
                            jsonb_build_array(:'g5', 200, 'pending'), jsonb_build_array(:'g2', 200, 'resolved')),
          'bulk_resolve_itemised: each item answered with the status and body the single call answers, in the order given');
SELECT is(pg_temp.types('acme/bulk-open-0000000001') || ' | ' || pg_temp.types('acme/bulk-open-0000000002'),
          'run.started,node.started,interrupt.requested,node.suspended,interrupt.resolved,node.resumed | run.started,node.started,interrupt.requested,node.suspended,interrupt.resolved,node.resumed',
          'bulk_resolve_each_recorded: each granted item is recorded as a single resolve records it');
SELECT is(pg_temp.types('acme/bulk-bea-00000000001'), 'run.started,node.started,interrupt.requested,node.suspended',
          'bulk_resolve_refused_item_untouched: a refused item appends nothing');
SELECT is((SELECT count(*) FROM openwop.votes v JOIN openwop.interrupts i USING (tenant, interrupt_id) WHERE i.run_id = 'acme/bulk-quorum-00000001'),
          1::bigint, 'bulk_resolve_quorum: on a 2-of-2 gate the item is a counted vote');

-- the bodies: a receipt for each resolution, the error envelope for each refusal
SELECT pg_temp.gate('acme/bulk-body-0000000001') AS g6 \gset
SELECT pg_temp.as_request(pg_temp.jwt('ann'), format($q$ SELECT jsonb_agg(result ORDER BY ordinality) FROM openwop.resolve_interrupts(%L, '{"action": "accept"}') WITH ORDINALITY $q$,
                          ARRAY[:'g6', 'acme/nosuchinterrupt00001'])) AS bodies \gset
SELECT is(:'bodies'::jsonb #>> '{0,receipt,event,hash}',
          (SELECT encode(hash, 'hex') FROM openwop.events WHERE run_id = 'acme/bulk-body-0000000001' AND type = 'interrupt.resolved'),
          'bulk_resolve_receipt: a granted item''s body carries its receipt');
SELECT is(:'bodies'::jsonb -> 1, '{"error": "not_found", "message": "interrupt \"acme/nosuchinterrupt00001\" does not exist", "details": {"interruptId": "acme/nosuchinterrupt00001"}}',
          'bulk_resolve_error_envelope: a refused item''s body is the error envelope {error, message, details}');

-- an answer the gate does not take: 400 for that item only
SELECT pg_temp.gate('acme/bulk-value-000000001') AS g7 \gset
SELECT is(pg_temp.bulk('ann', ARRAY[:'g7'], '{"action": "frobnicate"}') -> 0 -> 1, '400', 'bulk_resolve_invalid_value: a resume value the gate refuses is 400 for the item');

-- under an idempotency key: every item replayed as it was answered
SELECT pg_temp.gate('acme/bulk-key-0000000001') AS g8 \gset
SELECT pg_temp.bulk('ann', ARRAY[:'g8', :'g3'], '{"action": "accept"}', 'bulk-key-0000000000000000001') AS first \gset
SELECT is(pg_temp.bulk('ann', ARRAY[:'g8', :'g3'], '{"action": "accept"}', 'bulk-key-0000000000000000001'), :'first'::jsonb,
          'bulk_resolve_replay: the same key replays every item''s answer');
SELECT is(pg_temp.types('acme/bulk-key-0000000001'), 'run.started,node.started,interrupt.requested,node.suspended,interrupt.resolved,node.resumed',
          '... and records nothing again');
SELECT is(pg_temp.refusal(format($q$ SELECT pg_temp.bulk('ann', %L, '{"action": "accept"}', 'bulk-key-0000000000000000001') $q$, ARRAY[:'g8'])) ->> 'code',
          'idempotency_key_mismatch', 'bulk_resolve_key_other_body: the same key with another list is 409');

-- the cap: refused whole, nothing applied
SELECT pg_temp.gate('acme/bulk-cap-0000000001') AS g9 \gset
SET LOCAL openwop.bulk_resolve_max = 2;
SELECT is(pg_temp.refusal(format($q$ SELECT pg_temp.bulk('ann', %L) $q$, ARRAY[:'g9', :'g1', :'g2'])) -> 'details',
          '{"field": "interruptIds", "count": 3, "limit": 2, "setting": "openwop.bulk_resolve_max"}',
          'bulk_resolve_cap: more ids than openwop.bulk_resolve_max is 400 validation_error');
SELECT is(pg_temp.types('acme/bulk-cap-0000000001'), 'run.started,node.started,interrupt.requested,node.suspended', '... and nothing is applied');
RESET openwop.bulk_resolve_max;
SELECT is(current_setting('openwop.bulk_resolve_max'), '500', 'bulk_resolve_max_default: 500');
CREATE ROLE tap_bulk_clerk LOGIN;
SELECT is(pg_temp.as_login('tap_bulk_clerk', 'acme', $q$ SELECT to_jsonb(set_config('openwop.bulk_resolve_max', '10000', true)) $q$) ->> 'sqlstate',
          '42501', 'bulk_resolve_max_superuser: only a superuser (or ALTER ROLE by one) raises the cap');

-- refusals of the whole call
SELECT is(pg_temp.refusal($q$ SELECT * FROM openwop.resolve_interrupts(NULL, '{"action": "accept"}') $q$) -> 'details' ->> 'field', 'interruptIds',
          'bulk_resolve_null_ids: a null list is 400');
SELECT is(pg_temp.refusal(format($q$ SELECT * FROM openwop.resolve_interrupts(%L, NULL) $q$, ARRAY[:'g9'])) -> 'details' ->> 'field', 'resumeValue',
          'bulk_resolve_null_value: a null resume value is 400');
SELECT is(pg_temp.refusal(format($q$ SELECT * FROM openwop.resolve_interrupts(%L, '{"action": "accept"}') $q$, ARRAY[ARRAY[:'g9'], ARRAY[:'g1']])) -> 'details' ->> 'field',
          'interruptIds', 'bulk_resolve_two_dimensions: a two-dimensional list is 400');
SELECT is(pg_temp.refusal(format($q$ SELECT * FROM openwop.resolve_interrupts(%L, '{"action": "accept"}', 'not a key') $q$, ARRAY[:'g9'])) ->> 'code',
          'idempotency_key_invalid', 'bulk_resolve_bad_key: a malformed idempotency key is 400');
SELECT is(pg_temp.refusal(format($q$ SELECT pg_temp.as_request('{"sub": "viewer", "tenant": "acme"}', %L) $q$,
                                 format('SELECT to_jsonb(count(*)) FROM openwop.resolve_interrupts(%L, %L)', ARRAY[:'g9'], '{"action": "accept"}'))) ->> 'code',
          'forbidden', 'bulk_resolve_scope: a caller without approvals:respond is refused whole (403)');
SELECT is(pg_temp.types('acme/bulk-cap-0000000001'), 'run.started,node.started,interrupt.requested,node.suspended', '... nothing applied');
SELECT is(pg_temp.bulk('ann', '{}'::text[]), NULL, 'bulk_resolve_empty: an empty list answers no row');
SELECT is(has_function_privilege('public', 'openwop.resolve_interrupts(text[], jsonb, text)', 'EXECUTE'), false,
          'bulk_resolve_not_public: granted by the DBA, like resolve_interrupt');

-- the issue's case: 500 gates, 7 the caller may not decide, 3 decided already
CREATE TEMP TABLE many AS
SELECT g, pg_temp.gate(format('acme/bulk-many-%s', lpad(g::text, 10, '0')), CASE WHEN g % 71 = 0 THEN '["bea"]'::jsonb END) AS id
  FROM generate_series(1, 500) g;
DO $$ BEGIN PERFORM openwop.resolve_interrupt(format('acme/bulk-many-%s', lpad(g::text, 10, '0')), 'gate', '{"action": "reject"}')
              FROM generate_series(100, 300, 100) g; END $$;
SELECT is(pg_temp.as_request(pg_temp.jwt('ann'), format($q$ SELECT jsonb_object_agg(status, n) FROM (SELECT status, count(*) AS n FROM openwop.resolve_interrupts(%L, '{"action": "accept"}') GROUP BY status) s $q$,
                                                     (SELECT array_agg(id ORDER BY g) FROM many))),
          '{"200": 490, "403": 7, "409": 3}', 'bulk_resolve_500: of 500 gates, 7 the caller may not decide and 3 decided, 490 are granted in one call');

SELECT * FROM finish();
ROLLBACK;
