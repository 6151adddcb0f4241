-- A transaction that is read-only (SET TRANSACTION READ ONLY,
-- default_transaction_read_only) changes nothing through the API: every
-- function that changes the store refuses with 25006 before it reads
-- anything, as PostgreSQL refuses an INSERT there -- the rows a resolve
-- writes directly (src/store/rowstore.c) bypass the executor, so the check is the
-- extension's own.  The readers still answer.  (On a standby the same
-- functions refuse with a hint naming the primary: test/checks/standby.sh.)
BEGIN;
SELECT * FROM no_plan();
\ir callers.psql
SET LOCAL openwop.tenant = 'acme';
SELECT openwop.add_signing_key('read-only-key');
SELECT openwop.create_run('ro', '{"runId": "acme/read-only-run-00001"}') ->> 'status';
SELECT openwop.start_node('acme/read-only-run-00001', 'gate') ->> 'status';
SELECT openwop.interrupt('acme/read-only-run-00001', 'gate', '{"kind": "approval",
  "data": {"artifactId": "a", "artifactType": "doc", "title": "T", "actions": ["accept", "reject"]}}') ->> 'status';
CREATE TEMP TABLE ro_token AS
SELECT openwop.mint_interrupt_token(interrupt_id) AS token FROM openwop.interrupts WHERE run_id = 'acme/read-only-run-00001';
\ir refusal.psql

SET LOCAL transaction_read_only = on;

SELECT is((SELECT r ->> 'sqlstate' || ' ' || (r ->> 'code') FROM pg_temp.refusal(format('SELECT %s', call)) r),
          '25006 cannot execute ' || fn || ' in a read-only transaction',
          'read_only_refused: ' || fn || ' in a read-only transaction')
  FROM (VALUES
    ('create_run()', $$openwop.create_run('ro', '{"runId": "acme/read-only-run-00002"}')$$),
    ('fork_run()', $$openwop.fork_run('acme/read-only-run-00001', '{"mode": "replay"}')$$),
    ('start_node()', $$openwop.start_node('acme/read-only-run-00001', 'other')$$),
    ('complete_node()', $$openwop.complete_node('acme/read-only-run-00001', 'gate')$$),
    ('fail_node()', $$openwop.fail_node('acme/read-only-run-00001', 'gate', '{"code": "x", "message": "y"}')$$),
    ('complete_run()', $$openwop.complete_run('acme/read-only-run-00001')$$),
    ('fail_run()', $$openwop.fail_run('acme/read-only-run-00001', '{"code": "x", "message": "y"}')$$),
    ('cancel_run()', $$openwop.cancel_run('acme/read-only-run-00001')$$),
    ('interrupt()', $$openwop.interrupt('acme/read-only-run-00001', 'gate', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc", "title": "T", "actions": ["accept", "reject"]}}')$$),
    ('resolve_interrupt()', $$openwop.resolve_interrupt('acme/read-only-run-00001', 'gate', '{"action": "accept"}')$$),
    ('resolve_interrupt_by_token()', $$openwop.resolve_interrupt_by_token((SELECT token FROM ro_token), '{"action": "accept"}')$$),
    ('record_agent_decision()', $$openwop.record_agent_decision('acme/read-only-run-00001', 'gate', 'agent', 0.9)$$),
    ('connector_auth_expired()', $$openwop.connector_auth_expired('acme/read-only-run-00001', 'gate', 'synthetic', '{"ref": "c"}')$$),
    ('add_group_member()', $$openwop.add_group_member('g', 'alice')$$),
    ('remove_group_member()', $$openwop.remove_group_member('g', 'alice')$$),
    ('add_signing_key()', $$openwop.add_signing_key('read-only-key-2')$$),
    ('retire_signing_key()', $$openwop.retire_signing_key('read-only-key')$$),
    ('sweep()', $$openwop.sweep()$$),
    -- a token outliving every one its key signed: the key must record it
    ('mint_interrupt_token()', $$openwop.mint_interrupt_token((SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/read-only-run-00001'), 'resolve', interval '2 hours')$$)
  ) AS calls (fn, call);
SELECT is(openwop.verify_interrupt_token(openwop.mint_interrupt_token(
            (SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/read-only-run-00001'), 'inspect', interval '10 minutes')) ->> 'intent',
          'inspect', 'read_only_readers: a token its key has signed as long for is minted in a read-only transaction');

SELECT is(openwop.run_snapshot('acme/read-only-run-00001') ->> 'status', 'waiting-approval',
          'read_only_readers: run_snapshot answers in a read-only transaction, and nothing changed');
SELECT is((SELECT count(*) FROM openwop.events('acme/read-only-run-00001')), 4::bigint,
          'read_only_readers: events answers, the log as it was');
SELECT is(openwop.inspect_interrupt((SELECT token FROM ro_token)) ->> 'kind', 'approval',
          'read_only_readers: inspect_interrupt answers');
SELECT is(openwop.verify_interrupt_token((SELECT token FROM ro_token)) ->> 'intent', 'resolve',
          'read_only_readers: verify_interrupt_token answers');
SELECT is((SELECT count(*) FROM openwop.pending_interrupts WHERE run_id = 'acme/read-only-run-00001'), 1::bigint,
          'read_only_readers: the inbox answers');

SELECT * FROM finish();
ROLLBACK;
