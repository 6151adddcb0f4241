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

SELECT * FROM finish();
ROLLBACK;
