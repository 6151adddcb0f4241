-- openwop.open_interrupts must not drift from openwop.interrupts: the
-- trigger interrupts_keep_open promises that a DBA's change to an interrupt
-- row reaches its open row "so the two never disagree", but it fires only
-- for UPDATE OF the copied columns, not status (nor tenant).  A DBA who
-- closes an interrupt by hand (status 'cancelled') leaves its open row
-- pending: the inbox still lists it and a resolve dies with an internal
-- error (XX000) instead of the contract's answer for a closed interrupt.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir callers.psql

SELECT lives_ok($$SELECT openwop.create_run('drift', '{"runId": "acme/drift-status-000001"}');
                  SELECT openwop.start_node('acme/drift-status-000001', 'gate');
                  SELECT openwop.interrupt('acme/drift-status-000001', 'gate', '{"kind": "approval", "data":
                    {"artifactId": "a", "artifactType": "doc", "title": "T", "actions": ["accept", "reject"]}}')$$,
                'drift: a gate is raised');
UPDATE openwop.interrupts SET status = 'cancelled', resolved_at = now() WHERE run_id = 'acme/drift-status-000001';
SELECT is((SELECT count(*)::int FROM openwop.open_interrupts
            WHERE run_id = 'acme/drift-status-000001' AND status = 'pending'), 0,
          'drift: an interrupt a DBA cancelled by hand is no longer pending in openwop.open_interrupts');
SELECT is((SELECT count(*)::int FROM openwop.pending_interrupts WHERE run_id = 'acme/drift-status-000001'), 0,
          '... nor in the inbox');
SELECT isnt((SELECT sqlstate FROM (SELECT pg_temp.as_login(current_user, NULL,
               $$SELECT openwop.resolve_interrupt('acme/drift-status-000001', 'gate', '{"action": "accept"}')$$) ->> 'sqlstate'
               AS sqlstate) x), 'XX000',
            '... and a resolve of it is refused by the contract, not with an internal error');

-- a deadline moved by hand, and the expiry of a late-expired interrupt announced by hand
SELECT lives_ok($$SELECT openwop.create_run('drift', '{"runId": "acme/drift-expire-000001"}');
                  SELECT openwop.start_node('acme/drift-expire-000001', 'wait');
                  SELECT openwop.interrupt('acme/drift-expire-000001', 'wait', '{"kind": "external-event", "data":
                    {"eventType": "paid", "correlation": {"order": 7}}, "timeoutMs": 600000}')$$,
                'drift: an external event is awaited');
UPDATE openwop.interrupts SET expires_at = now() - interval '1 second' WHERE run_id = 'acme/drift-expire-000001';
SELECT is((SELECT expires_at FROM openwop.open_interrupts WHERE run_id = 'acme/drift-expire-000001'), now() - interval '1 second',
          'drift: a deadline moved by hand moves in openwop.open_interrupts');
SELECT is(openwop.resolve_interrupt('acme/drift-expire-000001', 'wait', '{"paid": true}') ->> 'status', 'expired',
          '... the answer after it is late');
SELECT is((SELECT status FROM openwop.open_interrupts WHERE run_id = 'acme/drift-expire-000001'), 'expired',
          '... the interrupt stays open until its run is ended');
UPDATE openwop.interrupts SET resolved_sequence = 4 WHERE run_id = 'acme/drift-expire-000001';
SELECT is((SELECT count(*)::int FROM openwop.open_interrupts WHERE run_id = 'acme/drift-expire-000001'), 0,
          'drift: an expiry announced by hand closes it');
SELECT is(openwop.sweep(10), 0, '... and the sweep has nothing left to do for it');

-- a row removed by hand
SELECT lives_ok($$SELECT openwop.create_run('drift', '{"runId": "acme/drift-delete-000001"}');
                  SELECT openwop.start_node('acme/drift-delete-000001', 'gate');
                  SELECT openwop.interrupt('acme/drift-delete-000001', 'gate', '{"kind": "approval", "data":
                    {"artifactId": "a", "artifactType": "doc", "title": "T", "actions": ["accept"]}}')$$,
                'drift: another gate is raised');
DELETE FROM openwop.interrupts WHERE run_id = 'acme/drift-delete-000001';
SELECT is((SELECT count(*)::int FROM openwop.open_interrupts WHERE run_id = 'acme/drift-delete-000001'), 0,
          'drift: an interrupt removed by hand is removed from openwop.open_interrupts');

SELECT * FROM finish();
ROLLBACK;
