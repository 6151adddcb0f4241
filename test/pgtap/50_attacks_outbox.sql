-- Attacks on reminders, escalation and the notification outbox (issue 36),
-- as hostile callers try them: a sender bound to one tenant reaching for
-- another's rows or learning of its activity; hostile ids and arguments;
-- an approver, a reporting login and a request session calling the
-- sender's functions; a role's schema ahead of pg_catalog on search_path;
-- forged policy pins passed to may_decide(); escalation eligibility in the
-- inbox and at the resolve, across tenants and into the override group; a
-- reminder fired for a gate past its deadline; an every-tenant sender
-- slowed or starved by other tenants' rows; one event writing past the
-- cap, and the upkeep that should enforce it.
--
-- Each test states a rule an attack once broke (its description says how)
-- or an attack that failed and must stay failed.  The malformed pins that
-- once crashed the server run only once the forged pins are read without a
-- raw error.  Two findings needed more than one session and are not here:
-- the worker stalled for every tenant by one tenant's fan-out (a pass now
-- counts a step by the rows it writes: test/checks/reminders_fair.sh), and
-- a row buried dead twice when a claim and the worker's upkeep raced (only
-- a claim buries a row now, under its FOR UPDATE).
--
-- The file is one transaction: now() stands still, so where time has to
-- pass (a step's instant, a deadline) the superuser moves the row's instant
-- back, and says so.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
SET LOCAL timezone = 'UTC';
SET LOCAL openwop.notification_outbox = on;
-- every page a scan reads is counted in this backend (pg_stat_get_xact_blocks_fetched)
SET LOCAL max_parallel_workers_per_gather = 0;
\ir refusal.psql
\ir callers.psql
\ir policy_admin.psql

CREATE ROLE tap_ob_dba LOGIN;
CREATE ROLE tap_ob_sender LOGIN;
CREATE ROLE tap_ob_mallory LOGIN;
CREATE ROLE tap_ob_reporter LOGIN;
CREATE ROLE tap_ob_shadow LOGIN;
GRANT openwop_policy_admin TO tap_ob_dba;
GRANT openwop_notification_sender TO tap_ob_sender, tap_ob_shadow;
GRANT openwop_approver TO tap_ob_mallory;
GRANT USAGE ON SCHEMA openwop TO tap_ob_mallory;
GRANT SELECT ON openwop.pending_interrupts TO tap_ob_mallory;
GRANT EXECUTE ON FUNCTION openwop.inbox_tenant(), openwop.inbox_voter(), openwop.inbox_waiting(text),
                          openwop.may_decide(text, text, text, jsonb, jsonb) TO tap_ob_mallory;
GRANT pg_read_all_data TO tap_ob_reporter;
CREATE SCHEMA tap_ob_shadow AUTHORIZATION tap_ob_shadow;

CREATE FUNCTION pg_temp.set_policy(tenant text, name text, policy jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_login('tap_ob_dba', tenant, format('SELECT openwop.set_approval_policy(%L, %L)', name, policy))
$$;
-- an approval gate on node gate of a new run of workflow wf, raised by this
-- login in the run's tenant; returns the interrupt id
CREATE FUNCTION pg_temp.gate(run text, wf text, data jsonb DEFAULT '{}', extra jsonb DEFAULT '{}', requester text DEFAULT NULL)
    RETURNS text LANGUAGE plpgsql AS $$
DECLARE t text := current_setting('openwop.tenant');
BEGIN
  PERFORM set_config('openwop.tenant', split_part(run, '/', 1), true);
  PERFORM openwop.create_run(wf, jsonb_build_object('runId', run), requester);
  PERFORM openwop.start_node(run, 'gate');
  PERFORM openwop.interrupt(run, 'gate', jsonb_build_object('kind', 'approval', 'data',
            jsonb_build_object('artifactId', 'a', 'artifactType', 'doc', 'title', 'T',
                               'actions', '["accept", "reject"]'::jsonb) || data) || extra);
  PERFORM set_config('openwop.tenant', t, true);
  RETURN (SELECT interrupt_id FROM openwop.interrupts WHERE run_id = run);
END $$;
-- a statement as login, bound to tenant bound (its tenant chosen with it)
CREATE FUNCTION pg_temp.as_bound(login text, bound text, sql text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE r jsonb; t text := current_setting('openwop.tenant');
BEGIN
  IF bound <> '*' THEN PERFORM set_config('openwop.tenant', bound, true); END IF;
  r := pg_temp.as_login(login, bound, sql);
  PERFORM set_config('openwop.tenant', t, true);
  RETURN r;
END $$;
CREATE FUNCTION pg_temp.claim(bound text, max integer DEFAULT 100, lease interval DEFAULT '1 minute') RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_bound('tap_ob_sender', bound, format(
    'SELECT coalesce(jsonb_agg(c ORDER BY (c ->> ''id'')::bigint), ''[]'') FROM openwop.claim_notifications(%s, %L) c', max, lease))
$$;
CREATE FUNCTION pg_temp.ack(bound text, ids text[]) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_bound('tap_ob_sender', bound, format('SELECT to_jsonb(openwop.ack_notifications(%L::text[]))', ids))
$$;
-- the ids of run's notifications (as text, in order)
CREATE FUNCTION pg_temp.ids(run text) RETURNS text[] LANGUAGE sql AS $$
  SELECT coalesce(array_agg(id::text ORDER BY id), '{}') FROM openwop.notifications WHERE run_id = run
$$;
-- buffers of openwop.notifications and its indexes this transaction's statements have asked for so far
CREATE FUNCTION pg_temp.blocks_read() RETURNS bigint LANGUAGE sql AS $$
  SELECT sum(pg_stat_get_xact_blocks_fetched(c.oid))::bigint FROM pg_class c
   WHERE c.oid = 'openwop.notifications'::regclass
      OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = 'openwop.notifications'::regclass)
$$;
CREATE FUNCTION pg_temp.as_mallory(sql text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_bound('tap_ob_mallory', 'acme', sql)
$$;
-- what may_decide answers mallory for an open approval gate naming nobody, with the pin forged
CREATE FUNCTION pg_temp.forged(pin jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_mallory(format('SELECT to_jsonb(openwop.may_decide(%L, %L, %L, %L, %L))',
           'acme', 'acme/forged', 'approval', '{"data": {"actions": ["accept"]}}', pin))
$$;

DO $$ BEGIN
  PERFORM openwop.add_group_member('execs', 'erin', 'acme');
  PERFORM openwop.add_group_member('openwop-override', 'oscar', 'acme');
  PERFORM openwop.add_group_member('execs', 'gil', 'globex');
END $$;

/* ------------------------------------------------------------------
 * Tenants: a sender bound to acme and globex's rows
 * ------------------------------------------------------------------ */
DO $do$ BEGIN PERFORM pg_temp.gate('acme/ob-iso-0000000001', 'iso', '{"approversList": ["ann"], "title": "acme secret title"}'); END $do$;
DO $do$ BEGIN PERFORM pg_temp.gate('globex/ob-iso-000000001', 'iso', '{"approversList": ["gus", "gwen"], "title": "globex secret title"}'); END $do$;

SELECT is((SELECT jsonb_agg(DISTINCT c ->> 'tenant') FROM jsonb_array_elements(pg_temp.claim('acme')) c), '["acme"]',
          'claim_stays_in_tenant: a sender bound to acme claims acme''s rows only, never globex''s titles or recipients');
SELECT is(pg_temp.ack('acme', pg_temp.ids('globex/ob-iso-000000001')), '0',
          'ack_stays_in_tenant: acme''s sender naming globex''s ids acknowledges none');
SELECT is((SELECT count(*) FROM openwop.notifications WHERE run_id = 'globex/ob-iso-000000001'), 2::bigint,
          'ack_stays_in_tenant: ... and globex''s rows are still there');
SELECT is(jsonb_build_array(pg_temp.ack('acme', pg_temp.ids('globex/ob-iso-000000001')),
                            pg_temp.ack('acme', ARRAY['9000000000000000000'])),
          '[0, 0]', 'ack_is_no_oracle: another tenant''s id and an id never issued are answered alike');
SELECT is(pg_temp.as_bound('tap_ob_sender', 'acme',
            format('SELECT to_jsonb(openwop.ack_notifications(ARRAY[%L]))', (pg_temp.ids('globex/ob-iso-000000001'))[1] || ' OR true')) ->> 'code',
          'validation_error', 'ack_ids_are_numbers: an id with SQL after it is refused, not run');
SET LOCAL openwop.tenant = 'globex';
SELECT is(jsonb_build_array(
            pg_temp.as_login('tap_ob_sender', 'acme', $$ SELECT jsonb_agg(c) FROM openwop.claim_notifications(10, '1 minute') c $$) ->> 'code',
            pg_temp.as_login('tap_ob_sender', 'acme', $$ SELECT to_jsonb(openwop.ack_notifications('{1}')) $$) ->> 'code'),
          '["id_tenant_mismatch", "id_tenant_mismatch"]',
          'claim_stays_in_tenant: a sender bound to acme that names globex in openwop.tenant is refused, claiming or acknowledging');
SET LOCAL openwop.tenant = 'acme';

-- the ids come from one sequence for every tenant: a tenant's sender sees
-- in the gaps how many notifications were written meanwhile, an accepted
-- leak (docs/security.md, "The notification outbox")

/* ------------------------------------------------------------------
 * Hostile arguments
 * ------------------------------------------------------------------ */
SELECT is((SELECT jsonb_agg(coalesce(pg_temp.ack('acme', ids) ->> 'code', pg_temp.ack('acme', ids) #>> '{}')) FROM (VALUES
            (ARRAY['0']), (ARRAY['01']), (ARRAY['+1']), (ARRAY[' 1']), (ARRAY['1 ']), (ARRAY['-1']), (ARRAY['1e3']),
            (ARRAY['0x10']), (ARRAY['9223372036854775808']), (ARRAY[repeat('9', 100000)]), (ARRAY[NULL::text]),
            (ARRAY['1', NULL]), (ARRAY[E'1\n']), (ARRAY['1;']), ('{{1,2},{3,4}}'::text[]),
            ((SELECT array_agg(g::text) FROM generate_series(1, 10001) g))) v(ids)),
          '["validation_error", "validation_error", "validation_error", "validation_error", "validation_error", "validation_error",
            "validation_error", "validation_error", "validation_error", "validation_error", "validation_error", "validation_error",
            "validation_error", "validation_error", "validation_error", "validation_error"]',
          'ack_ids_are_numbers: zero, leading zeros, signs, spaces, exponents, hex, past bigint, 100,000 digits, NULL, a newline, a semicolon, two dimensions and 10,001 ids are each 400 validation_error');
SELECT is(jsonb_build_array(pg_temp.ack('acme', '{}'), pg_temp.ack('acme', '[7:8]={9000000000000000001,9000000000000000002}')),
          '[0, 0]', 'ack_ids_are_numbers: an empty array and one with other bounds acknowledge nothing, without an error');
SELECT is((SELECT jsonb_agg(coalesce(r ->> 'code', 'claimed')) FROM (
             SELECT pg_temp.as_bound('tap_ob_sender', 'acme', format('SELECT jsonb_agg(c) FROM openwop.claim_notifications(%s, %s) c', m, l)) r
               FROM (VALUES ('0', '''1 minute'''), ('10001', '''1 minute'''), ('NULL', '''1 minute'''), ('-2147483648', '''1 minute'''),
                            ('1', '''0.4 seconds'''), ('1', '''24:00:00.000001'''), ('1', '''1 day'''), ('1', '''1 mon'''),
                            ('1', '''-1 minute'''), ('1', 'NULL'), ('1', '''1 minute -59.5 seconds''')) v(m, l)) s),
          '["validation_error", "validation_error", "validation_error", "validation_error", "validation_error", "validation_error",
            "validation_error", "validation_error", "validation_error", "validation_error", "validation_error"]',
          'claim_arguments_bounded: max 0, 10,001, NULL or the smallest int, and a lease under a second, past 24 hours, in days or months, negative, NULL or netting under a second are each 400 validation_error');
SELECT is(pg_temp.refusal($$ SELECT set_config('transaction_read_only', 'on', true), openwop.ack_notifications('{1}') $$) ->> 'sqlstate',
          '25006', 'outbox_read_only_refused: ack_notifications in a read-only transaction is refused (it deletes)');

-- recipients, group refs and titles are data, never SQL
DO $do$ BEGIN PERFORM pg_temp.gate('acme/ob-odd-0000000001', 'odd', jsonb_build_object(
  'title', $t$x'); DELETE FROM openwop.notifications; --$t$,
  'approversList', jsonb_build_array($r$o'brien$r$, $r$a"); DROP TABLE openwop.notifications; --$r$, 'role:superuser', '*', 'https://idp/x/y'),
  'approverGroupRefs', jsonb_build_array($g$execs' OR '1'='1$g$, 'exec%', 'EXECS'))); END $do$;
SELECT is((SELECT jsonb_agg(recipient ORDER BY recipient) FROM openwop.notifications WHERE run_id = 'acme/ob-odd-0000000001'),
          jsonb_build_array('*', $r$a"); DROP TABLE openwop.notifications; --$r$, 'https://idp/x/y', $r$o'brien$r$, 'role:superuser'),
          'outbox_input_is_data: quotes and SQL in recipients are written as they are; group refs match no group by pattern or case (erin of execs is not told)');
SELECT is((SELECT DISTINCT detail ->> 'title' FROM openwop.notifications WHERE run_id = 'acme/ob-odd-0000000001'),
          $t$x'); DELETE FROM openwop.notifications; --$t$, 'outbox_input_is_data: ... and so is the title');

/* ------------------------------------------------------------------
 * Who may call: an approver, a reporting login, an anonymous request
 * ------------------------------------------------------------------ */
SELECT is(jsonb_build_array(
            pg_temp.as_mallory($$ SELECT jsonb_agg(c) FROM openwop.claim_notifications(10, '1 minute') c $$) ->> 'sqlstate',
            pg_temp.as_mallory($$ SELECT to_jsonb(openwop.ack_notifications('{1}')) $$) ->> 'sqlstate'),
          '["42501", "42501"]', 'outbox_for_senders_only: an approver may neither claim nor acknowledge');
SELECT is(jsonb_build_array(
            pg_temp.as_bound('tap_ob_reporter', 'acme', $$ SELECT jsonb_agg(c) FROM openwop.claim_notifications(10, '1 minute') c $$) ->> 'sqlstate',
            pg_temp.as_bound('tap_ob_reporter', 'acme', $$ SELECT to_jsonb(openwop.ack_notifications('{1}')) $$) ->> 'sqlstate',
            pg_temp.as_bound('tap_ob_reporter', 'acme', $$ WITH d AS (DELETE FROM openwop.notifications RETURNING 1) SELECT to_jsonb(count(*)) FROM d $$) ->> 'sqlstate',
            pg_temp.as_bound('tap_ob_reporter', 'acme', $$ SELECT to_jsonb(openwop.sweep(1)) $$) ->> 'sqlstate'),
          '["42501", "42501", "42501", "42501"]',
          'outbox_for_senders_only: a reporting login (pg_read_all_data) reads the outbox but can neither claim, acknowledge, delete nor sweep');
SELECT is(pg_temp.as_request('{"role": "web_anon", "tenant": "acme"}',
            $$ SELECT to_jsonb(openwop.current_caller() -> 'subject' ->> 'lane') $$), '"anonymous"',
          'control: a request without sub is the anonymous subject');
SELECT is(pg_temp.as_request('{"role": "web_anon", "tenant": "acme"}',
            'SELECT coalesce(jsonb_agg(DISTINCT c ->> ''tenant''), ''[]'') FROM openwop.claim_notifications(1000, ''1 minute'') c'),
          '["acme"]',
          'outbox_request_in_its_tenant: a request session whose role may EXECUTE claims only its claims'' tenant''s rows, never every tenant''s, though its login may choose any tenant');

/* ------------------------------------------------------------------
 * search_path: a role's own schema first, shadowing pg_catalog
 * ------------------------------------------------------------------ */
SET LOCAL ROLE tap_ob_shadow;
CREATE FUNCTION tap_ob_shadow.trap_tt(text, text) RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'shadowed: = on text'; END $$;
CREATE FUNCTION tap_ob_shadow.trap_bb(bigint, bigint) RETURNS boolean LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'shadowed: = on bigint'; END $$;
CREATE OPERATOR tap_ob_shadow.= (LEFTARG = text, RIGHTARG = text, FUNCTION = tap_ob_shadow.trap_tt);
CREATE OPERATOR tap_ob_shadow.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = tap_ob_shadow.trap_bb);
CREATE OPERATOR tap_ob_shadow.<> (LEFTARG = text, RIGHTARG = text, FUNCTION = tap_ob_shadow.trap_tt);
CREATE FUNCTION tap_ob_shadow.jsonb_array_elements_text(jsonb) RETURNS SETOF text LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'shadowed: jsonb_array_elements_text'; END $$;
CREATE FUNCTION tap_ob_shadow.jsonb_array_elements(jsonb) RETURNS SETOF jsonb LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'shadowed: jsonb_array_elements'; END $$;
CREATE FUNCTION tap_ob_shadow.regexp_replace(text, text, text) RETURNS text LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'shadowed: regexp_replace'; END $$;
CREATE FUNCTION tap_ob_shadow.now() RETURNS timestamptz LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'shadowed: now'; END $$;
CREATE FUNCTION tap_ob_shadow.clock_timestamp() RETURNS timestamptz LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'shadowed: clock_timestamp'; END $$;
CREATE FUNCTION tap_ob_shadow.timestamptz(text) RETURNS timestamptz LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'shadowed: timestamptz'; END $$;
CREATE FUNCTION tap_ob_shadow.text(bigint) RETURNS text LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'shadowed: text'; END $$;
CREATE FUNCTION tap_ob_shadow.nextval(regclass) RETURNS bigint LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'shadowed: nextval'; END $$;
CREATE FUNCTION tap_ob_shadow.jsonb_build_object(text, text) RETURNS jsonb LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'shadowed: jsonb_build_object'; END $$;
RESET ROLE;
DO $do$ BEGIN PERFORM pg_temp.set_policy('acme', 'shadow', '{"appliesTo": {"workflowId": "shadow", "nodeId": "*"},
                                           "reminders": [{"afterMs": 1}], "escalation": {"afterMs": 1, "groupRef": "execs"}}'); END $do$;
-- sql run with the role's schema first; what sql itself says is schema-qualified
CREATE FUNCTION pg_temp.shadowed(sql text) RETURNS jsonb LANGUAGE plpgsql SET search_path = tap_ob_shadow, pg_catalog, public AS $$
DECLARE r jsonb;
BEGIN
  EXECUTE sql INTO r;
  RETURN r;
EXCEPTION WHEN OTHERS THEN
  RETURN pg_catalog.jsonb_build_object('error', SQLERRM);
END $$;
CREATE TEMP TABLE shadow_out (what text, got jsonb);
INSERT INTO shadow_out VALUES
  ('run', pg_temp.shadowed($$ SELECT openwop.create_run('shadow', '{"runId": "acme/ob-shadow-00000001"}'::pg_catalog.jsonb) OPERATOR(pg_catalog.->) 'status' $$));
INSERT INTO shadow_out VALUES
  ('node', pg_temp.shadowed($$ SELECT openwop.start_node('acme/ob-shadow-00000001', 'gate') OPERATOR(pg_catalog.->) 'status' $$));
INSERT INTO shadow_out VALUES
  ('raise', pg_temp.shadowed($$ SELECT openwop.interrupt('acme/ob-shadow-00000001', 'gate', '{"kind": "approval", "data": {"artifactId": "a",
     "artifactType": "doc", "title": "T", "actions": ["accept", "reject"], "approversList": ["ann"]}}'::pg_catalog.jsonb) OPERATOR(pg_catalog.->) 'status' $$));
INSERT INTO shadow_out VALUES ('sweep', pg_temp.shadowed($$ SELECT pg_catalog.to_jsonb(openwop.sweep(100)) $$));
INSERT INTO shadow_out VALUES ('claim', pg_temp.shadowed($$ SELECT pg_temp.as_login('tap_ob_shadow', 'acme',
  'SELECT pg_catalog.jsonb_agg(c OPERATOR(pg_catalog.->) ''kind'' ORDER BY (c OPERATOR(pg_catalog.->>) ''id'')::pg_catalog.int8)
     FROM openwop.claim_notifications(1000, ''1 minute'') c
    WHERE c OPERATOR(pg_catalog.->>) ''runId'' OPERATOR(pg_catalog.=) ''acme/ob-shadow-00000001''') $$));
INSERT INTO shadow_out VALUES ('ack', pg_temp.shadowed(format('SELECT pg_temp.as_login(%L, %L, %L)', 'tap_ob_shadow', 'acme',
  format('SELECT pg_catalog.to_jsonb(openwop.ack_notifications(%L::pg_catalog.text[]))', pg_temp.ids('acme/ob-shadow-00000001')))));
INSERT INTO shadow_out VALUES ('resolve', pg_temp.shadowed($$ SELECT pg_temp.as_request('{"sub": "erin", "tenant": "acme", "scope": "approvals:respond"}',
  'SELECT openwop.resolve_interrupt(''acme/ob-shadow-00000001'', ''gate'', ''{"action": "accept"}'') OPERATOR(pg_catalog.->) ''status''') $$));
SELECT is((SELECT jsonb_object_agg(what, got) FROM shadow_out),
          '{"run": "running", "node": "running", "raise": "interrupted", "sweep": 2,
            "claim": ["raised", "raised", "escalation", "reminder", "reminder"], "ack": 5, "resolve": "resolved"}',
          'outbox_sql_ignores_search_path: with a role''s schema ahead of pg_catalog shadowing =, <>, jsonb_array_elements(_text), regexp_replace, now, clock_timestamp, nextval, jsonb_build_object, text and timestamptz, the raise, the steps, claim, ack and the resolve run pg_catalog''s');
SELECT is((SELECT jsonb_agg(kind || ' ' || recipient ORDER BY id) FROM openwop.notifications WHERE run_id = 'acme/ob-shadow-00000001'),
          '["decided ann", "decided erin"]', 'outbox_sql_ignores_search_path: ... and the decision was told to the gate''s audience');

/* ------------------------------------------------------------------
 * may_decide() with a forged pin: the inbox's helper trusts its argument
 * ------------------------------------------------------------------ */
SELECT is(pg_temp.forged(NULL), 'true', 'control: may_decide answers for a forged open gate with no pin');
SELECT is((SELECT jsonb_agg(jsonb_typeof(r)) FROM (SELECT pg_temp.forged(p) r FROM (VALUES
            ('{"escalations": [{"at": "not a time", "groupRef": "g"}]}'::jsonb),
            ('{"requiredApprovals": 1e30}'),
            ('{"groups": [{"ref": "g", "required": 1e30}]}'),
            ('{"escalations": [{"at": "99999-01-01T00:00:00Z", "groupRef": "g"}]}')) v(p)) s),
          '["boolean", "boolean", "boolean", "boolean"]',
          'may_decide_reads_a_forged_pin: an escalation instant that is no time, numbers past bigint and a year past 9999 in the pin argument are read without a raw error (once, the first three raised 22007, 22003, 22003), as a hostile payload is (docs/inbox.md)');
SELECT (pg_temp.forged('{"escalations": [{"at": "not a time", "groupRef": "g"}]}') ->> 'sqlstate') IS NULL AS forged_pin_read_safely \gset
\if :forged_pin_read_safely
SELECT is((SELECT jsonb_agg(jsonb_typeof(r)) FROM (SELECT pg_temp.forged(p) r FROM (VALUES
            ('{"groups": [1]}'::jsonb), ('{"groups": ["g"]}'), ('{"escalations": [1]}'), ('{"escalations": [[]]}'),
            ('{"escalations": [{"groupRef": "g"}]}'), ('{"escalations": [{"at": "2000-01-01T00:00:00Z"}]}'),
            ('{"escalations": [{"at": 5, "groupRef": "g"}]}'), ('{"groups": [{"ref": 5, "required": 1}]}'),
            ('{"groups": [{"required": 1}]}'), ('{"escalations": [{"at": "2000-01-01T00:00:00Z", "groupRef": null}]}')) v(p)) s),
          '["boolean", "boolean", "boolean", "boolean", "boolean", "boolean", "boolean", "boolean", "boolean", "boolean"]',
          'may_decide_survives_malformed_pin_members: groups and escalations that are not objects, or lack at, groupRef or ref, are read without crashing the server (once, they crashed it: signal 11)');
-- mallory is in a group, so a ref read as NULL is compared with her groups
DO $do$ BEGIN PERFORM openwop.add_group_member('staff', 'tap_ob_mallory', 'acme'); END $do$;
SELECT is((SELECT jsonb_agg(jsonb_typeof(r)) FROM (SELECT pg_temp.forged(p) r FROM (VALUES
            ('{"escalations": [{"at": "2000-01-01T00:00:00Z"}]}'::jsonb), ('{"groups": [{"required": 1}]}')) v(p)) s),
          '["boolean", "boolean"]',
          'may_decide_survives_malformed_pin_members: ... by a caller who belongs to a group too');
\else
SELECT fail('may_decide_survives_malformed_pin_members: not run, for the pins read with a raw error above: {"groups": [1]}, {"escalations": [1]} and {"escalations": [{"groupRef": "g"}]} passed to may_decide() by any approver once crashed the server');
\endif

/* ------------------------------------------------------------------
 * Escalation: eligibility in the inbox and at the resolve
 * ------------------------------------------------------------------ */
DO $do$ BEGIN PERFORM pg_temp.set_policy('acme', 'esc-now', '{"appliesTo": {"workflowId": "esc-now", "nodeId": "*"},
                                            "escalation": {"afterMs": 1, "groupRef": "execs"}}'); END $do$;
DO $do$ BEGIN PERFORM pg_temp.set_policy('acme', 'esc-later', '{"appliesTo": {"workflowId": "esc-later", "nodeId": "*"},
                                              "escalation": {"afterMs": 3600000, "groupRef": "execs"}}'); END $do$;
DO $do$ BEGIN PERFORM pg_temp.gate('acme/ob-esc-now-0000001', 'esc-now', '{"approversList": ["ann"], "requiredApprovals": 2}'); END $do$;
DO $do$ BEGIN PERFORM pg_temp.gate('acme/ob-esc-later-00001', 'esc-later', '{"approversList": ["ann"], "requiredApprovals": 2}'); END $do$;
CREATE FUNCTION pg_temp.jwt(who text, tenant text DEFAULT 'acme') RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('sub', who, 'tenant', tenant, 'scope', 'approvals:respond')
$$;
CREATE FUNCTION pg_temp.inbox(who text, tenant text DEFAULT 'acme') RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_request(pg_temp.jwt(who, tenant),
    'SELECT coalesce(jsonb_agg(run_id ORDER BY run_id), ''[]'') FROM openwop.pending_interrupts WHERE run_id LIKE ''%/ob-esc-%''')
$$;
CREATE FUNCTION pg_temp.try_vote(run text, who text, tenant text DEFAULT 'acme') RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(pg_temp.refusal(format('SELECT pg_temp.as_request(%L, %L)', pg_temp.jwt(who, tenant),
                  format('SELECT openwop.resolve_interrupt(%L, %L, %L)', run, 'gate', '{"action": "accept"}'))) ->> 'code', 'answered')
$$;
SELECT is(pg_temp.inbox('erin'), '["acme/ob-esc-now-0000001"]',
          'escalation_inbox_matches_resolve: erin of execs has the gate whose escalation''s instant passed in her inbox, not the other');
SELECT is(pg_temp.try_vote('acme/ob-esc-later-00001', 'erin'), 'forbidden',
          'escalation_inbox_matches_resolve: ... the resolve refuses her on the other');
SELECT is(pg_temp.try_vote('acme/ob-esc-now-0000001', 'erin'), 'answered',
          'escalation_inbox_matches_resolve: ... and takes her vote on the escalated one');
SELECT is(jsonb_build_array(pg_temp.inbox('gil', 'globex'), pg_temp.inbox('gil'), pg_temp.try_vote('acme/ob-esc-now-0000001', 'gil')),
          '[[], [], "forbidden"]',
          'escalation_group_is_the_gates_tenants: gil of globex''s execs sees no escalated acme gate and may not vote on it');
SELECT is(pg_temp.try_vote('acme/ob-esc-now-0000001', 'gil', 'globex'), 'id_tenant_mismatch',
          'escalation_group_is_the_gates_tenants: ... nor as a caller of globex');

-- an escalation to the override group
SET LOCAL openwop.override_group = 'openwop-override';
DO $do$ BEGIN PERFORM pg_temp.set_policy('acme', 'esc-override', '{"appliesTo": {"workflowId": "esc-override", "nodeId": "*"},
                                                 "overrideBypassesQuorum": true,
                                                 "escalation": {"afterMs": 1, "groupRef": "openwop-override"}}'); END $do$;
DO $do$ BEGIN PERFORM pg_temp.gate('acme/ob-esc-override-01', 'esc-override', '{"approversList": ["ann", "bo"], "requiredApprovals": 2, "overrideBypassesQuorum": true}'); END $do$;
SELECT is(pg_temp.try_vote('acme/ob-esc-override-01', 'oscar'), 'answered', 'control: oscar of the override group votes once the escalation''s instant passed');
SELECT is((SELECT status FROM openwop.interrupts WHERE run_id = 'acme/ob-esc-override-01'), 'pending',
          'escalation_to_override_group_keeps_quorum: an escalation to the override group makes its members voters, not override principals: one accept of the two required does not release the gate');

/* ------------------------------------------------------------------
 * A reminder for a gate whose deadline has passed (a worker behind)
 * ------------------------------------------------------------------ */
DO $do$ BEGIN PERFORM pg_temp.set_policy('acme', 'behind', '{"appliesTo": {"workflowId": "behind", "nodeId": "*"},
                                           "reminders": [{"afterMs": 60000}], "maxTimeoutMs": 120000}'); END $do$;
DO $do$ BEGIN PERFORM pg_temp.gate('acme/ob-behind-00000001', 'behind', '{"approversList": ["ann"]}'); END $do$;
-- the worker was down for an hour: the step fell due, then the deadline passed, neither applied
UPDATE openwop.gate_steps SET due_at = now() - interval '59 minutes' WHERE run_id = 'acme/ob-behind-00000001';
UPDATE openwop.open_interrupts SET expires_at = now() - interval '58 minutes' WHERE run_id = 'acme/ob-behind-00000001';
UPDATE openwop.interrupts SET expires_at = now() - interval '58 minutes' WHERE run_id = 'acme/ob-behind-00000001';
DO $$ BEGIN PERFORM openwop.sweep(); END $$;
SELECT is((SELECT jsonb_agg(kind ORDER BY id) FROM openwop.notifications WHERE run_id = 'acme/ob-behind-00000001'),
          '["raised", "expired"]',
          'reminder_not_sent_past_deadline: a step that fell due before the deadline but is fired after it (the worker behind) is removed unfired: ann is not asked to decide a gate that can no longer be decided');

/* ------------------------------------------------------------------
 * Every-tenant senders and one tenant's rows
 * ------------------------------------------------------------------ */
DO $$ BEGIN PERFORM pg_temp.ack('*', (SELECT array_agg(id::text) FROM openwop.notifications)); END $$;
-- three tenants with a backlog each, a "*" sender claiming two at a time
INSERT INTO openwop.notifications (tenant, kind, recipient, run_id, interrupt_id, detail, created_at)
  SELECT t, 'raised', 'r' || g, t || '/ob-fair-0000000001', t || '/ob-fair-gate-001', '{}', now()
    FROM unnest('{ta,tb,tc}'::text[]) t, generate_series(1, 3) g;
CREATE TEMP TABLE fair AS SELECT pg_temp.claim('*', 2) AS first, pg_temp.claim('*', 2) AS second;
SELECT is((SELECT jsonb_agg(DISTINCT c ->> 'tenant') FROM fair, jsonb_array_elements(first || second) c) ? 'tc', true,
          'every_tenant_claim_rotates: of three tenants with a backlog, the third gets a row within two claims of two (once, each claim started again with the first tenants by name: with more tenants than a claim takes, the last waited until the first had nothing left)');
DO $$ BEGIN PERFORM pg_temp.ack('*', (SELECT array_agg(id::text) FROM openwop.notifications WHERE tenant IN ('ta', 'tb', 'tc'))); END $$;
-- tenant bulk: 20,000 dead letters (their sender claimed them five times and
-- never acknowledged: they stay openwop.notification_retention) and 20,000
-- undelivered rows
INSERT INTO openwop.dead_notifications (id, tenant, kind, recipient, run_id, interrupt_id, detail, created_at, attempts, dead_at)
  SELECT nextval('openwop.notification_ids'), 'bulk', 'raised', 'r' || g, 'bulk/ob-bulk-0000000001', 'bulk/ob-bulk-gate-001', '{}', now(), 5, now()
    FROM generate_series(1, 20000) g;
INSERT INTO openwop.notifications (tenant, kind, recipient, run_id, interrupt_id, detail, created_at)
  SELECT 'bulk', 'raised', 'r' || g, 'bulk/ob-bulk-0000000002', 'bulk/ob-bulk-gate-002', '{}', now()
    FROM generate_series(1, 20000) g;
ANALYZE openwop.notifications;
DO $do$ BEGIN PERFORM pg_temp.gate('acme/ob-drain-000000001', 'drain', '{"approversList": ["ann"]}'); END $do$;
DO $do$ BEGIN PERFORM pg_temp.gate('globex/ob-drain-00000001', 'drain', '{"approversList": ["gus"]}'); END $do$;
CREATE TEMP TABLE drain_ids AS
  SELECT pg_temp.ids('acme/ob-drain-000000001') AS acme, pg_temp.ids('globex/ob-drain-00000001') AS globex;
CREATE TEMP TABLE reads (what text, n bigint);
INSERT INTO reads SELECT 'start', pg_temp.blocks_read();
INSERT INTO reads SELECT 'acme claims', jsonb_array_length(pg_temp.claim('acme', 10));
INSERT INTO reads SELECT 'after acme claim', pg_temp.blocks_read();
INSERT INTO reads SELECT 'acme acks', (pg_temp.ack('acme', (SELECT acme FROM drain_ids)) #>> '{}')::bigint;
INSERT INTO reads SELECT 'after acme ack', pg_temp.blocks_read();
SELECT is((SELECT jsonb_object_agg(what, n) FROM reads WHERE what LIKE 'acme %'), '{"acme acks": 1, "acme claims": 1}',
          'control: acme''s own sender claims and acknowledges acme''s one row');
SELECT cmp_ok((SELECT n FROM reads WHERE what = 'after acme ack') - (SELECT n FROM reads WHERE what = 'start'), '<', 50::bigint,
          'tenant_drain_reads_its_tenant: acme''s claim and acknowledgement read a handful of pages, none of bulk''s 40,000 rows');
INSERT INTO reads SELECT 'before every claim', pg_temp.blocks_read();
INSERT INTO reads SELECT 'every claim', (SELECT count(*) FROM jsonb_array_elements(pg_temp.claim('*', 2)) c WHERE c ->> 'tenant' = 'globex');
INSERT INTO reads SELECT 'after every claim', pg_temp.blocks_read();
SELECT is((SELECT n FROM reads WHERE what = 'every claim'), 1::bigint, 'control: a "*" sender claiming two gets globex''s row (each tenant its share)');
SELECT cmp_ok((SELECT n FROM reads WHERE what = 'after every claim') - (SELECT n FROM reads WHERE what = 'before every claim'), '<', 50::bigint,
          'every_tenant_claim_skips_dead_rows: a "*" sender''s claim of two reads a handful of pages, none of bulk''s 20,000 dead letters (once, it walked all of them, oldest first, at every claim)');
INSERT INTO reads SELECT 'before every ack', pg_temp.blocks_read();
INSERT INTO reads SELECT 'every ack', (pg_temp.ack('*', (SELECT globex FROM drain_ids)) #>> '{}')::bigint;
INSERT INTO reads SELECT 'after every ack', pg_temp.blocks_read();
SELECT is((SELECT n FROM reads WHERE what = 'every ack'), 1::bigint, 'control: a "*" sender acknowledges globex''s row');
SELECT cmp_ok((SELECT n FROM reads WHERE what = 'after every ack') - (SELECT n FROM reads WHERE what = 'before every ack'), '<', 50::bigint,
          'every_tenant_ack_reads_its_ids: a "*" sender''s acknowledgement of one id reads a few pages a tenant, none of bulk''s 20,000 rows (once, it read the whole table: no index leads with id)');
DELETE FROM openwop.notifications WHERE tenant = 'bulk';
DELETE FROM openwop.dead_notifications WHERE tenant = 'bulk';

/* ------------------------------------------------------------------
 * The cap: one event, one tenant
 * ------------------------------------------------------------------ */
-- a group of the cap's size and one more (the superuser writes the rows: add_group_member one by one would take minutes)
INSERT INTO openwop.group_members (tenant, group_ref, principal)
  SELECT 'flood', 'crowd', 'm' || g FROM generate_series(1, greatest(current_setting('openwop.notification_cap')::integer, 1) + 1) g;
DO $do$ BEGIN PERFORM pg_temp.gate('flood/ob-flood-00000001', 'flood', '{"approverGroupRefs": ["crowd"]}'); END $do$;
SELECT ok(current_setting('openwop.notification_cap')::bigint = 0 OR
          (SELECT count(*) FROM openwop.notifications WHERE tenant = 'flood') <= current_setting('openwop.notification_cap')::bigint,
          'outbox_cap_holds_within_an_event: one raise cannot put a tenant''s undelivered rows past openwop.notification_cap (once, it wrote one row per member of the gate''s groups, whatever the cap)');
-- one more row of flood's (another event), past the cap
INSERT INTO openwop.notifications (tenant, kind, recipient, run_id, interrupt_id, detail, created_at)
  VALUES ('flood', 'raised', 'late', 'flood/ob-flood-00000002', 'flood/ob-flood-gate-002', '{}', now());
-- and tenant zeta has a letter dead for a month, past openwop.notification_retention
INSERT INTO openwop.dead_notifications (id, tenant, kind, recipient, run_id, interrupt_id, detail, created_at, attempts, dead_at)
  VALUES (nextval('openwop.notification_ids'), 'zeta', 'raised', 'zed', 'zeta/ob-zeta-0000000001', 'zeta/ob-zeta-gate-001', '{}', now() - interval '31 days', 5, now() - interval '30 days');
CREATE TEMP TABLE others AS SELECT count(*) AS n FROM openwop.notifications WHERE tenant NOT IN ('flood', 'zeta');
CREATE TEMP TABLE upkeep AS SELECT pg_temp.refusal('SELECT openwop.sweep()') AS refused;
SELECT is((SELECT CASE WHEN current_setting('openwop.notification_cap') = '0' THEN '[null, true, 1, 0]' ELSE jsonb_build_array(
             (SELECT refused ->> 'sqlstate' FROM upkeep),
             (SELECT count(*) FROM openwop.notifications WHERE tenant = 'flood') = current_setting('openwop.notification_cap')::bigint,
             (SELECT dropped FROM openwop.notification_drops WHERE tenant = 'flood'),
             (SELECT count(*) FROM openwop.dead_notifications WHERE tenant = 'zeta')) END),
          '[null, true, 1, 0]',
          'outbox_cap_enforced: with a tenant past the cap, the upkeep drops its newest row and counts it, and removes zeta''s expired dead letter (once, its drop statement failed, 42P01: the cap never held, and the worker''s failed pass lost the retention purge and waited 10 s before the next)');
SELECT is((SELECT count(*) FROM openwop.notifications WHERE tenant NOT IN ('flood', 'zeta')), (SELECT n FROM others),
          'outbox_cap_is_per_tenant: the upkeep drops none of another tenant''s undelivered rows');

SELECT * FROM finish();
ROLLBACK;
