-- Credential interrupts, gated like every capability: advertised as
-- oauth.credentialInterrupt while openwop.credential_interrupts is on (the
-- default), refused with 422 capability_required while it is off; a
-- caller's "authorized" is always refused, and only the host's OAuth
-- callback confirms one, with confirm_credential() (EXECUTE granted by a DBA).
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';

\ir refusal.psql
\ir callers.psql
\ir events.psql

CREATE ROLE openwop_tap_oauth_callback LOGIN;
CREATE ROLE openwop_tap_bystander LOGIN;
GRANT USAGE ON SCHEMA openwop TO openwop_tap_oauth_callback, openwop_tap_bystander;

CREATE FUNCTION pg_temp.credential() RETURNS jsonb LANGUAGE sql AS $$
  SELECT '{"kind": "credential", "data": {"provider": "gh", "scopes": ["repo"], "reason": "missing",
           "connectUrl": "https://host.example/connect/1"}}'::jsonb
$$;
-- a run suspended on a credential interrupt at node "cred"
CREATE FUNCTION pg_temp.suspended(run text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM openwop.create_run('cred', jsonb_build_object('runId', run));
  PERFORM openwop.start_node(run, 'cred');
  PERFORM openwop.interrupt(run, 'cred', pg_temp.credential());
END $$;

-- advertised by default, and the kind is accepted
SELECT is(openwop.capabilities() -> 'oauth', '{"credentialInterrupt": true}',
          'capabilities: oauth.credentialInterrupt is advertised while openwop.credential_interrupts is on');
SELECT pg_temp.suspended('acme/credential-run-00000001');
SELECT is(openwop.run_snapshot('acme/credential-run-00000001') ->> 'status', 'waiting-input',
          'openwop.requirement.0199.credential-interrupt: the run waits for input on a credential interrupt');

-- a caller's own "authorized" is refused, whoever calls
SELECT is(pg_temp.refusal($$SELECT openwop.resolve_interrupt('acme/credential-run-00000001', 'cred', '{"outcome": "authorized"}')$$) ->> 'code',
          'validation_error', 'openwop.requirement.0199.credential-resume-rechecked: a caller''s authorized is refused');
SELECT is(openwop.run_snapshot('acme/credential-run-00000001') ->> 'status', 'waiting-input',
          'openwop.requirement.0199.credential-resume-rechecked: the run still waits');

-- and through a token, whoever holds it
SELECT openwop.add_signing_key('k33', 'example-secret-do-not-use'::bytea);
SELECT is(pg_temp.refusal(format('SELECT openwop.resolve_interrupt_by_token(%L, %L)',
            (SELECT openwop.mint_interrupt_token(interrupt_id) FROM openwop.interrupts WHERE run_id = 'acme/credential-run-00000001'),
            '{"outcome": "authorized"}')) #>> '{details,field}',
          'resumeValue', 'openwop.requirement.0199.credential-resume-rechecked: a token holder''s authorized is refused');

-- confirm_credential: EXECUTE is granted to nobody by default
SELECT is(pg_temp.as_login('openwop_tap_bystander', 'acme',
            $$SELECT openwop.confirm_credential('acme/credential-run-00000001', 'cred')$$) ->> 'sqlstate',
          '42501', 'confirm_credential: refused to a login it was not granted to');
SELECT ok(NOT has_function_privilege('public', 'openwop.confirm_credential(text, text, text)', 'EXECUTE'),
          'confirm_credential: PUBLIC may not execute it');
GRANT EXECUTE ON FUNCTION openwop.confirm_credential(text, text, text) TO openwop_tap_oauth_callback;

-- the callback's login confirms: resolved as the host, the node resumes
SELECT is(pg_temp.as_login('openwop_tap_oauth_callback', 'acme',
            $$SELECT openwop.confirm_credential('acme/credential-run-00000001', 'cred') - 'interruptId' - 'sequence' - 'receipt'$$),
          jsonb_build_object('status', 'resolved', 'runId', 'acme/credential-run-00000001', 'nodeId', 'cred',
                             'kind', 'credential', 'runStatus', 'running',
                             'resolvedBy', jsonb_build_object('kind', 'workload', 'lane', 'workload', 'tenant', 'acme',
                                                              'issuer', 'urn:openwop-interrupt:host', 'subjectId', 'credential')),
          'confirm_credential: the host resolves the interrupt and the run runs on');
SELECT is((SELECT payload -> 'resumeValue' FROM openwop.events
            WHERE run_id = 'acme/credential-run-00000001' AND type = 'interrupt.resolved'),
          '{"outcome": "authorized"}',
          'openwop.requirement.0199.credential-interrupt: interrupt.resolved.resumeValue is {outcome: authorized}');
SELECT is((SELECT payload -> 'resolvedBy' ->> 'subjectId' FROM openwop.events
            WHERE run_id = 'acme/credential-run-00000001' AND type = 'interrupt.resolved'),
          'credential', 'confirm_credential: resolvedBy is the host''s subject');
SELECT is((SELECT payload -> 'openwop-confirmedBy' ->> 'subjectId' FROM openwop.events
            WHERE run_id = 'acme/credential-run-00000001' AND type = 'interrupt.resolved'),
          'openwop_tap_oauth_callback', 'confirm_credential: the login that confirmed is recorded beside the host (openwop-confirmedBy)');
SELECT is((SELECT array_agg(type ORDER BY sequence) FROM openwop.events
            WHERE run_id = 'acme/credential-run-00000001' AND sequence > 3),
          ARRAY['interrupt.resolved', 'node.resumed'], 'confirm_credential: interrupt.resolved then node.resumed, no failure');
SELECT is((SELECT status FROM openwop.node_executions WHERE run_id = 'acme/credential-run-00000001' AND node_id = 'cred'),
          'pending', 'confirm_credential: the job is pending again');
DO $$ BEGIN PERFORM openwop.complete_node('acme/credential-run-00000001', 'cred', '{}');
            PERFORM openwop.complete_run('acme/credential-run-00000001', '{}'); END $$;
SELECT is(openwop.run_snapshot('acme/credential-run-00000001') ->> 'status', 'completed',
          'openwop.requirement.0199.credential-interrupt: the run completes');

-- refusals of confirm_credential
SELECT is(pg_temp.as_login('openwop_tap_oauth_callback', 'acme',
            $$SELECT openwop.confirm_credential('acme/credential-run-00000001', 'cred')$$) ->> 'code',
          'interrupt_already_resolved', 'confirm_credential: a resolved interrupt is 409');
SELECT is(pg_temp.as_login('openwop_tap_oauth_callback', 'acme',
            $$SELECT openwop.confirm_credential('acme/credential-run-unknown1', 'cred')$$) ->> 'code',
          'not_found', 'confirm_credential: an unknown run is 404');
SELECT is(pg_temp.as_login('openwop_tap_oauth_callback', 'acme',
            $$SELECT openwop.confirm_credential('acme/credential-run-00000001', 'never')$$) ->> 'code',
          'not_found', 'confirm_credential: a node that never raised an interrupt is 404');
SELECT is(pg_temp.as_login('openwop_tap_oauth_callback', 'acme',
            $$SELECT openwop.confirm_credential('globex/credential-run-00000001', 'cred')$$) ->> 'code',
          'id_tenant_mismatch', 'confirm_credential: a run of another tenant is 403');
SELECT is(pg_temp.as_login('openwop_tap_oauth_callback', 'acme',
            $$SELECT openwop.confirm_credential(NULL, 'cred')$$) #>> '{details,field}',
          'runId', 'confirm_credential: a null run id is 400');
SELECT is(pg_temp.as_login('openwop_tap_oauth_callback', 'acme',
            $$SELECT openwop.confirm_credential('acme/credential-run-00000001', NULL)$$) #>> '{details,field}',
          'nodeId', 'confirm_credential: a null node id is 400');
SELECT is(pg_temp.as_login('openwop_tap_oauth_callback', 'acme',
            $$SELECT openwop.confirm_credential('acme/credential-run-00000001', 'no such/node')$$) #>> '{details,field}',
          'nodeId', 'confirm_credential: an invalid node id is 400');
SELECT is(pg_temp.as_login('openwop_tap_oauth_callback', 'acme',
            $$SELECT openwop.confirm_credential('acme/credential-run-00000001', 'cred', 'short')$$) ->> 'code',
          'idempotency_key_invalid', 'confirm_credential: a malformed Idempotency-Key is 400');

-- only a credential interrupt is confirmed
DO $$ BEGIN
  PERFORM openwop.create_run('cred', '{"runId": "acme/credential-run-00000002"}');
  PERFORM openwop.start_node('acme/credential-run-00000002', 'ask');
  PERFORM openwop.interrupt('acme/credential-run-00000002', 'ask',
    '{"kind": "clarification", "data": {"questions": [{"id": "q1", "question": "Which?"}]}}');
END $$;
SELECT is(pg_temp.as_login('openwop_tap_oauth_callback', 'acme',
            $$SELECT openwop.confirm_credential('acme/credential-run-00000002', 'ask')$$) - 'message',
          jsonb_build_object('sqlstate', 'PT409', 'code', 'run_state_conflict',
                             'details', jsonb_build_object('runId', 'acme/credential-run-00000002', 'nodeId', 'ask', 'kind', 'clarification')),
          'confirm_credential: another kind is 409 run_state_conflict, and names it');
SELECT is(openwop.run_snapshot('acme/credential-run-00000002') ->> 'status', 'waiting-input',
          'confirm_credential: the other kind still waits');

-- an Idempotency-Key: the retried confirmation is a replay
SELECT pg_temp.suspended('acme/credential-run-00000003');
SELECT is(pg_temp.as_login('openwop_tap_oauth_callback', 'acme',
            $$SELECT openwop.confirm_credential('acme/credential-run-00000003', 'cred', 'confirm-key-000000000000001') - 'idempotentReplay'$$),
          pg_temp.as_login('openwop_tap_oauth_callback', 'acme',
            $$SELECT openwop.confirm_credential('acme/credential-run-00000003', 'cred', 'confirm-key-000000000000001') - 'idempotentReplay'$$),
          'confirm_credential: a retry with its Idempotency-Key returns the stored response');
SELECT is(pg_temp.as_login('openwop_tap_oauth_callback', 'acme',
            $$SELECT openwop.confirm_credential('acme/credential-run-00000003', 'cred', 'confirm-key-000000000000001')$$) -> 'idempotentReplay',
          'true', 'confirm_credential: the retry is marked as a replay');
SELECT is((SELECT count(*)::int FROM openwop.events
            WHERE run_id = 'acme/credential-run-00000003' AND type = 'interrupt.resolved'), 1,
          'confirm_credential: one interrupt.resolved however often it is retried');

-- declined still fails the node connector_auth_declined
SELECT pg_temp.suspended('acme/credential-run-00000004');
SELECT is(openwop.resolve_interrupt('acme/credential-run-00000004', 'cred', '{"outcome": "declined"}') ->> 'runStatus',
          'failed', 'a caller''s declined fails the node and, with no routing edge, the run');
SELECT is((SELECT count(*)::int FROM openwop.events
            WHERE run_id = 'acme/credential-run-00000004' AND payload ? 'openwop-confirmedBy'), 0,
          'a caller''s answer records no openwop-confirmedBy');

-- read-only: refused before anything
SELECT pg_temp.suspended('acme/credential-run-00000005');
SAVEPOINT read_only;
SET LOCAL transaction_read_only = on;
SELECT is(pg_temp.as_login('openwop_tap_oauth_callback', 'acme',
            $$SELECT openwop.confirm_credential('acme/credential-run-00000005', 'cred')$$) ->> 'sqlstate',
          '25006', 'confirm_credential: refused in a read-only transaction');
ROLLBACK TO read_only;

-- the setting is a DBA's: a login that is not a superuser cannot turn it off or on
SELECT is(pg_temp.as_login('openwop_tap_bystander', 'acme',
            $$SELECT to_jsonb(set_config('openwop.credential_interrupts', 'off', true))$$) ->> 'sqlstate',
          '42501', 'openwop.credential_interrupts: only a superuser sets it');

-- off: not advertised, and a new credential interrupt is refused; one raised before stays answerable
SET LOCAL openwop.credential_interrupts = off;
SELECT ok(NOT openwop.capabilities() ? 'oauth',
          'capabilities: no oauth facet while openwop.credential_interrupts is off');
DO $$ BEGIN PERFORM openwop.create_run('cred', '{"runId": "acme/credential-run-00000006"}');
            PERFORM openwop.start_node('acme/credential-run-00000006', 'cred'); END $$;
SELECT is(pg_temp.refusal(format('SELECT openwop.interrupt(%L, %L, %L)', 'acme/credential-run-00000006', 'cred', pg_temp.credential())) - 'sqlstate',
          '{"code": "capability_required", "details": {"requiredCapability": "oauth.credentialInterrupt"}}',
          'off: a credential interrupt is refused with 422 capability_required naming oauth.credentialInterrupt');
SELECT is((SELECT count(*)::int FROM openwop.events WHERE run_id = 'acme/credential-run-00000006'), 2,
          'off: the refusal appends nothing');
SELECT is(openwop.resolve_interrupt('acme/credential-run-00000005', 'cred', '{"outcome": "declined"}') ->> 'status',
          'resolved', 'off: a credential interrupt raised while it was on stays answerable');

SELECT * FROM finish();
ROLLBACK;
