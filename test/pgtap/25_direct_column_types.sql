-- Direct row access and a column whose type a DBA changed: the direct path
-- writes each column as a Datum of the type the install script gave it, so
-- a column of another type (ALTER COLUMN ... TYPE, a domain, a length
-- limit) must switch the table to the SQL statements, which coerce the
-- value and check the domain; never a value of the wrong type in the row.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir callers.psql

\ir gates.psql

-- a domain with a CHECK on a column the claim writes: the statement checks it
CREATE DOMAIN public.tap_decision AS text COLLATE "C" CHECK (VALUE IS DISTINCT FROM 'rejected');
ALTER TABLE openwop.interrupts ALTER COLUMN decision TYPE public.tap_decision;
SELECT pg_temp.gate('acme/direct-domain-00001');
SELECT throws_ok($$SELECT openwop.resolve_interrupt('acme/direct-domain-00001', 'gate', '{"action": "reject"}')$$,
                 '23514', NULL, 'direct_types: a domain''s CHECK a DBA put on a column refuses the claim');
SELECT is((SELECT status FROM openwop.interrupts WHERE run_id = 'acme/direct-domain-00001'), 'pending',
          '... and the interrupt is still pending');
ALTER TABLE openwop.interrupts ALTER COLUMN decision TYPE text;

-- a length limit on a column the claim writes: the statement checks it
ALTER TABLE openwop.interrupts ALTER COLUMN action TYPE varchar(5) USING left(action, 5);
SELECT pg_temp.gate('acme/direct-varchar-0001');
SELECT throws_ok($$SELECT openwop.resolve_interrupt('acme/direct-varchar-0001', 'gate', '{"action": "accept"}')$$,
                 '22001', NULL, 'direct_types: varchar(5) refuses the action accept as the statement would');
ALTER TABLE openwop.interrupts ALTER COLUMN action TYPE text;

-- a column of another type altogether: the statement's assignment cast, not a crash
ALTER TABLE openwop.interrupts ALTER COLUMN resolved_at TYPE text;
SELECT pg_temp.gate('acme/direct-retyped-0001');
SELECT is(openwop.resolve_interrupt('acme/direct-retyped-0001', 'gate', '{"action": "accept"}') ->> 'runStatus',
          'running', 'direct_types: with resolved_at retyped to text, the resolve resumes the run');
SELECT ok((SELECT resolved_at::timestamptz IS NOT NULL FROM openwop.interrupts WHERE run_id = 'acme/direct-retyped-0001'),
          '... and resolved_at holds a timestamp as text');

SELECT * FROM finish();
ROLLBACK;
