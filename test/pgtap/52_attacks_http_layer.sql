-- Attacks on the HTTP layer of 0.11.0, as hostile callers try them: the
-- POST operations taking json bodies (request_body in src/api/postgrest.c),
-- interrupt ids minted from UUID v4 bytes and a UUID accepted wherever an
-- interrupt id is (src/base/ids.c, own_ids in src/api/flowdrop.c),
-- openwop_api."flowdropInterrupts"(after, max), the ordered HTTP inbox,
-- openwop.connector_auth_expired(), openwop_api.openapi(), and the update
-- script's DO block that carries EXECUTE grants to the json functions.
-- The attackers: an anonymous PostgREST request; a JWT approver of another
-- tenant holding an acme interrupt's UUID (read it, decide it, page after
-- it); a reporting login with pg_read_all_data; a role with a schema of
-- its own ahead of pg_catalog; a caller sending bodies jsonb cannot hold;
-- two approvers deciding the same batch at once.
--
-- Each test is named after the rule it defends; its description says how
-- the attack broke it, or that the attack failed and must stay failed.
-- What broke (these fail until it is fixed): a body holding a number
-- numeric cannot hold (1e999999) answered a raw 22003, not the envelope;
-- a bulk resolve by UUIDs took its runs' locks in the order given, so two
-- approvers' calls deadlocked; flowdropInterrupts answered an anonymous
-- or scopeless web role a raw 42501 (schema openwop) instead of 403; the
-- list form took or refused (403) a ~2F-projected id of 36 characters;
-- connector_auth_expired's provider limit counted bytes and said
-- characters; the update's carried grants became the extension's initial
-- privileges (lost by pg_dump) and lost their grantor.
-- The deadlock two bulk calls over UUIDs made needs two sessions; here it
-- is tested by what causes it, the order the items take their runs' locks
-- (the interrupt.resolved events are dated by the clock).  The update
-- script's test drops and re-creates the extension, so it comes last.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
SET LOCAL timezone = 'UTC';
\ir refusal.psql
\ir callers.psql
\ir api.psql

-- an approval gate on node gate of a new run, raised in the run's tenant
-- (then acting in acme again); returns the interrupt id
CREATE FUNCTION pg_temp.gate(run text, data jsonb DEFAULT '{}') RETURNS text LANGUAGE plpgsql AS $$
DECLARE iid text;
BEGIN
  PERFORM set_config('openwop.tenant', split_part(run, '/', 1), true);
  PERFORM openwop.create_run('h52', jsonb_build_object('runId', run));
  PERFORM openwop.start_node(run, 'gate');
  iid := openwop.interrupt(run, 'gate', jsonb_build_object('kind', 'approval', 'data',
           jsonb_build_object('artifactId', 'a', 'artifactType', 'doc', 'title', 'T',
                              'actions', '["accept", "reject"]'::jsonb) || data)) #>> '{metadata,interrupt,id}';
  PERFORM set_config('openwop.tenant', 'acme', true);
  RETURN iid;
END $$;
-- what PostgREST would answer for an openwop_api call: {status, body}, or
-- {sqlstate} for an error that is no envelope (PostgREST's own body)
CREATE FUNCTION pg_temp.http(sql text, headers jsonb DEFAULT '{}') RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE st text;
BEGIN
  RETURN pg_temp.api(sql, headers) - 'headers';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE;
  RETURN jsonb_build_object('sqlstate', st);
END $$;
-- {status, error} of an answer, or {sqlstate}
CREATE FUNCTION pg_temp.outcome(r jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT CASE WHEN r ? 'sqlstate' THEN r
              ELSE jsonb_build_object('status', r -> 'status', 'error', r #> '{body,error}') END
$$;

-- a PostgREST request of a web role (as PostgREST switches to it), with
-- the verified claims: {status, body} or {sqlstate}
CREATE ROLE tap_h52_web;
CREATE ROLE tap_h52_anon;
GRANT tap_h52_web, tap_h52_anon TO openwop_tap_authenticator;
CREATE FUNCTION pg_temp.web_in(role text, sql text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE r jsonb; st text;
BEGIN
  PERFORM set_config('role', role, true);
  BEGIN
    EXECUTE sql INTO r;
    r := jsonb_build_object('status', coalesce(nullif(current_setting('response.status', true), '')::int, 200), 'body', r);
  EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE;
    r := jsonb_build_object('sqlstate', st);
  END;
  PERFORM set_config('role', 'none', true);
  PERFORM set_config('response.status', '', true), set_config('response.headers', '', true);
  RETURN r;
END $$;
CREATE FUNCTION pg_temp.web(role text, claims jsonb, sql text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_request(claims || jsonb_build_object('role', role), format('SELECT pg_temp.web_in(%L, %L)', role, sql))
$$;

CREATE TEMP TABLE g AS SELECT
  pg_temp.gate('acme/h52-gate-000000000001') AS acme1,
  pg_temp.gate('acme/h52-gate-000000000002') AS acme2,
  pg_temp.gate('acme/h52-gate-000000000003', '{"requiredApprovals": 2}') AS acme_quorum,
  pg_temp.gate('globex/h52-gate-000000000001') AS globex1;
ALTER TABLE g ADD COLUMN u_acme1 text, ADD COLUMN u_globex1 text;
UPDATE g SET u_acme1 = pg_temp.uuid_of(acme1), u_globex1 = pg_temp.uuid_of(globex1);
SELECT is(openwop.resolve_interrupt('acme/h52-gate-000000000003', 'gate', '{"action": "accept"}') ->> 'status', 'pending',
          'control: the quorum gate holds one counted vote of this login');
DO $$ BEGIN PERFORM openwop.add_signing_key('tap-h52-key'); END $$;
CREATE TEMP TABLE tok AS SELECT openwop.mint_interrupt_token(acme2) AS t FROM g;

/* ------------------------------------------------------------------
 * Bodies jsonb cannot hold: numbers outside numeric's range
 * ------------------------------------------------------------------ */

-- One body per operation, every member the operation takes, and a number
-- inside it that json takes (json_in checks the grammar only) and jsonb
-- cannot hold (numeric_in: 22003 value overflows numeric format).
CREATE TEMP TABLE bodies AS
  SELECT op, n, format('SELECT openwop_api.%I(%L::json)', op, replace(b, '<N>', n)) AS sql
    FROM (VALUES
      ('resolveInterruptByRun', '{"runId": "acme/h52-gate-000000000001", "nodeId": "gate", "resumeValue": {"action": "accept", "n": <N>}}'),
      ('resolveInterruptByToken', '{"token": "<T>", "resumeValue": {"action": "accept", "n": <N>}}'),
      ('withdrawVote', '{"runId": "acme/h52-gate-000000000003", "nodeId": "gate", "n": <N>}'),
      ('resolveInterrupts', '{"interruptIds": ["<I>"], "resumeValue": {"action": "accept", "n": <N>}}')) o (op, b),
    unnest(ARRAY['1e999999', '-1e999999', '1e-999999', '1' || repeat('0', 140000)]) n;
UPDATE bodies SET sql = replace(replace(sql, '<T>', (SELECT t FROM tok)), '<I>', (SELECT acme1 FROM g));
SELECT is(pg_temp.outcome(pg_temp.http(sql)), '{"status": 400, "error": "validation_error"}',
          format('body_jsonb_cannot_hold_is_the_envelope: %s with the number %s in its body is 400 validation_error (it was a raw 22003, which PostgREST answers with its own body)',
                 op, CASE WHEN length(n) > 20 THEN '1 and 140000 zeros' ELSE n END))
  FROM bodies ORDER BY op, n;
SELECT is((SELECT jsonb_agg(status ORDER BY interrupt_id) FROM openwop.interrupts WHERE interrupt_id IN (acme1, acme2)),
          '["pending", "pending"]', '... and nothing was resolved') FROM g;
SELECT is((SELECT count(*)::int FROM openwop.votes v WHERE v.interrupt_id = g.acme_quorum AND v.action = 'withdraw'), 0,
          '... nor withdrawn') FROM g;

-- held: what jsonb_in refuses with 22P05 (json takes it) is the envelope on every operation
SELECT is(pg_temp.outcome(pg_temp.http(format('SELECT openwop_api.%I(%L::json)', op, b))), '{"status": 400, "error": "validation_error"}',
          format('body_jsonb_cannot_hold_is_the_envelope: %s with %s is 400 validation_error', op, what))
  FROM (VALUES ('resolveInterruptByRun', 'a \u0000 in a key', '{"runId": "acme/h52-gate-000000000001", "nodeId": "gate", "resumeValue": {"action": "accept", "k\u0000": 1}}'),
               ('resolveInterruptByToken', 'a \u0000 in the resume value', '{"token": "x", "resumeValue": {"action": "accept", "c": "\u0000"}}'),
               ('withdrawVote', 'a \u0000 in the node id', '{"runId": "acme/h52-gate-000000000003", "nodeId": "gate\u0000"}'),
               ('resolveInterrupts', 'a \u0000 in an id', '{"interruptIds": ["acme/\u0000"], "resumeValue": {"action": "accept"}}')) t (op, what, b);
-- held: the refusal caught inside request_body leaves nothing behind: the
-- same transaction then answers a good body, and the session is as before
SELECT is(pg_temp.outcome(pg_temp.http(format('SELECT openwop_api."resolveInterruptByRun"(%L::json)',
            '{"runId": "acme/h52-gate-000000000001", "nodeId": "gate", "resumeValue": {"action": "accept"}}'))),
          '{"status": 200, "error": null}', 'refused_body_leaves_no_state: after the refused bodies a good one is answered in the same transaction');
SELECT is(current_user || '/' || current_setting('openwop.tenant'), session_user || '/acme',
          '... as the same role, in the same tenant');

/* ------------------------------------------------------------------
 * UUIDs: an acme interrupt's UUID in the hands of globex's approver
 * ------------------------------------------------------------------ */

\set globex '{"sub": "gary", "iss": "https://idp.example.org", "tenant": "globex", "scope": "approvals:respond"}'
\set acme '{"sub": "alice", "iss": "https://idp.example.org", "tenant": "acme", "scope": "approvals:respond"}'
-- a UUID no interrupt has: what globex's approver gets for acme's must be the same
CREATE TEMP TABLE nobody AS SELECT '0b7f2b4e-9c1a-4d2e-8f3a-5e6d7c8b9a01'::text AS u;
SELECT is(pg_temp.as_request(:'globex', format('SELECT pg_temp.refusal(%L)', format('SELECT openwop.flowdrop_interrupt(%L)', u_acme1))) - 'details',
          '{"sqlstate": "PT404", "code": "not_found"}', 'uuid_never_reaches_another_tenant: flowdrop_interrupt(acme''s UUID) from globex is 404')
  FROM g;
SELECT is(pg_temp.as_request(:'globex', format('SELECT pg_temp.refusal(%L)', format('SELECT openwop.flowdrop_interrupt(%L)', u_acme1))) #>> '{details,interruptId}',
          'globex/' || split_part(acme1, '/', 2), '... naming the id in globex, never acme''s') FROM g;
SELECT is(pg_temp.as_request(:'globex', format('SELECT pg_temp.refusal(%L)', format('SELECT openwop.due_at(%L)', u_acme1))) ->> 'code',
          'not_found', 'uuid_never_reaches_another_tenant: due_at(acme''s UUID) from globex is 404') FROM g;
SELECT is(pg_temp.as_request(:'globex', format('SELECT pg_temp.refusal(%L)', format('SELECT openwop.mint_interrupt_token(%L, ''inspect'')', u_acme1))) ->> 'code',
          'not_found', 'uuid_never_reaches_another_tenant: mint_interrupt_token(acme''s UUID) from globex is 404, no token for acme''s gate') FROM g;
SELECT is(pg_temp.as_request(:'globex', format('SELECT jsonb_agg(e -> ''id'') FROM json_array_elements(openwop.flowdrop_interrupts(ARRAY[%L, %L])) e', u_acme1, u_globex1)),
          jsonb_build_array(u_globex1), 'uuid_never_reaches_another_tenant: flowdrop_interrupts leaves acme''s UUID out, answers globex''s') FROM g;
SELECT is(pg_temp.as_request(:'globex', format('SELECT jsonb_agg(jsonb_build_array(r.status, r.result -> ''error'')) FROM openwop.resolve_interrupts(ARRAY[%L], ''{"action": "accept"}'') r', u_acme1)),
          '[[404, "not_found"]]', 'uuid_never_reaches_another_tenant: resolve_interrupts(acme''s UUID) from globex is an item 404') FROM g;
SELECT is(pg_temp.outcome(pg_temp.as_request(:'globex', format('SELECT pg_temp.http(%L)', format('SELECT openwop_api."resolveInterrupts"(%L::json)',
            json_build_object('interruptIds', json_build_array(u_acme1), 'resumeValue', json_build_object('action', 'accept')))))) ,
          '{"status": 200, "error": null}', '... over HTTP too: 200 with the item refused') FROM g;
SELECT is((SELECT status FROM openwop.interrupts WHERE interrupt_id = g.acme1), 'resolved',
          'control: acme1 was resolved by this login above (refused_body_leaves_no_state)') FROM g;
SELECT is((SELECT count(*)::int FROM openwop.events e WHERE e.run_id = 'acme/h52-gate-000000000002' AND e.type = 'interrupt.resolved'), 0,
          '... and nothing globex did touched acme''s other gate');
-- the after cursor is no oracle: acme's UUID and a UUID nobody has are answered alike
CREATE FUNCTION pg_temp.page(after text, max integer DEFAULT 5) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.outcome(pg_temp.http(format('SELECT openwop_api."flowdropInterrupts"(%L, %s)', after, coalesce(max::text, 'NULL'))))
$$;
SELECT is(pg_temp.as_request(:'globex', format('SELECT pg_temp.page(%L)', u_acme1)),
          pg_temp.as_request(:'globex', format('SELECT pg_temp.page(%L)', (SELECT u FROM nobody))),
          'after_is_no_oracle_across_tenants: flowdropInterrupts(after => acme''s UUID) from globex is answered as a UUID nobody has')
  FROM g;
SELECT is(pg_temp.as_request(:'globex', format('SELECT pg_temp.page(%L)', u_acme1)), '{"status": 404, "error": "not_found"}',
          '... 404 not_found') FROM g;
SELECT is(pg_temp.as_request(:'globex', format('SELECT pg_temp.page(%L)', acme1)), '{"status": 403, "error": "id_tenant_mismatch"}',
          '... and acme''s tenant-bound id is refused from the string alone (403), before any lookup') FROM g;
-- held: the HTTP inbox, read as PostgREST pages it, is the caller's tenant's alone
SELECT is(pg_temp.as_request(:'globex', $$SELECT jsonb_agg(interrupt_id) FROM (SELECT interrupt_id FROM openwop_api.pending_interrupts
                                          WHERE requested_at >= '-infinity' ORDER BY requested_at, interrupt_id LIMIT 50 OFFSET 0) p$$),
          jsonb_build_array(globex1), 'http_inbox_is_the_callers_tenant: globex''s approver pages its inbox and sees globex''s gate alone') FROM g;
-- held: max and after are checked before who is calling, so an anonymous
-- request learns nothing from them
SELECT is(pg_temp.as_request('{}', format('SELECT pg_temp.page(%L, %s)', a, m)), '{"status": 400, "error": "validation_error"}',
          format('flowdrop_page_arguments_checked_first: max %s is 400 before anything is looked up', m))
  FROM (VALUES (NULL, 0), (NULL, 1001), (NULL, -1), (NULL, 2147483647)) v (a, m);
SELECT is(pg_temp.as_request('{}', format('SELECT pg_temp.page(repeat(''a'', 2000000), 5)')), '{"status": 400, "error": "validation_error"}',
          'flowdrop_page_arguments_checked_first: an after of 2 MB is 400 before anything is looked up');

/* ------------------------------------------------------------------
 * The bulk resolve takes its runs' locks in run order, UUIDs included
 * ------------------------------------------------------------------ */

-- Two approvers deciding the same gates at once, their lists in opposite
-- orders, each by the UUIDs FlowDrop shows them: the items named by a UUID
-- were taken as "run unknown" and resolved first, in the order given, so
-- each call locked a run the other waited for (40P01 in three runs of
-- three; none with tenant-bound ids).  The order a call's items are
-- resolved in is what decides it: here, by the interrupt.resolved events'
-- instants (the clock's).
-- (NULL if two instants tie, which would say nothing)
CREATE FUNCTION pg_temp.resolved_order(runs text[]) RETURNS text[] LANGUAGE sql AS $$
  SELECT CASE WHEN count(DISTINCT e.created_at) = count(*) THEN array_agg(right(e.run_id, 1) ORDER BY e.created_at) END
    FROM openwop.events e WHERE e.run_id = ANY (runs) AND e.type = 'interrupt.resolved'
$$;
CREATE TEMP TABLE ord AS SELECT
  pg_temp.gate('acme/h52-order-ids-000000b') AS ids_b, pg_temp.gate('acme/h52-order-ids-000000a') AS ids_a,
  pg_temp.gate('acme/h52-order-uuid-00000b') AS uuid_b, pg_temp.gate('acme/h52-order-uuid-00000a') AS uuid_a,
  pg_temp.gate('acme/h52-order-http-00000b') AS http_b, pg_temp.gate('acme/h52-order-http-00000a') AS http_a;
SELECT is((SELECT count(*)::int FROM openwop.resolve_interrupts(ARRAY[ids_b, ids_a], '{"action": "accept"}') r WHERE r.status = 200), 2,
          'control: a bulk resolve of two tenant-bound ids, run b''s first') FROM ord;
SELECT is(pg_temp.resolved_order('{acme/h52-order-ids-000000a,acme/h52-order-ids-000000b}'), '{a,b}',
          'control: ... resolves them in run order (a, then b)');
SELECT is((SELECT count(*)::int FROM openwop.resolve_interrupts(ARRAY[pg_temp.uuid_of(uuid_b), pg_temp.uuid_of(uuid_a)], '{"action": "accept"}') r
            WHERE r.status = 200), 2, 'control: the same by their UUIDs') FROM ord;
SELECT is(pg_temp.resolved_order('{acme/h52-order-uuid-00000a,acme/h52-order-uuid-00000b}'), '{a,b}',
          'bulk_locks_runs_in_run_order: items named by UUIDs are resolved in run order too (they were resolved as given, b then a: two calls over the same runs in opposite orders deadlocked, 40P01, the whole call lost)');
SELECT is(pg_temp.outcome(pg_temp.http(format('SELECT openwop_api."resolveInterrupts"(%L::json)',
            json_build_object('interruptIds', json_build_array(pg_temp.uuid_of(http_b), pg_temp.uuid_of(http_a)),
                              'resumeValue', json_build_object('action', 'accept'))))), '{"status": 200, "error": null}',
          'control: resolveInterrupts over HTTP with the two UUIDs') FROM ord;
SELECT is(pg_temp.resolved_order('{acme/h52-order-http-00000a,acme/h52-order-http-00000b}'), '{a,b}',
          'bulk_locks_runs_in_run_order: ... over HTTP as well');

/* ------------------------------------------------------------------
 * flowdropInterrupts with the grants the docs give a web role
 * ------------------------------------------------------------------ */

-- docs/postgrest.md: the web roles need USAGE on openwop_api, EXECUTE on
-- its operations, SELECT on the inbox view and EXECUTE on the functions it
-- evaluates, and no privilege on the functions or tables of schema
-- openwop, not even USAGE; the page needs the inbox's grants only.  The
-- anonymous role is granted the operation too (docs/flowdrop.md: it gains
-- nothing by it), to see what it answers.
GRANT USAGE ON SCHEMA openwop_api TO tap_h52_web, tap_h52_anon;
GRANT EXECUTE ON FUNCTION openwop_api."flowdropInterrupts"(text, integer) TO tap_h52_web, tap_h52_anon;
GRANT SELECT ON openwop_api.pending_interrupts TO tap_h52_web;
GRANT EXECUTE ON FUNCTION openwop.inbox_waiting(text), openwop.inbox_tenant(), openwop.inbox_voter(),
                          openwop.may_decide(text, text, text, jsonb, jsonb) TO tap_h52_web;
SELECT is(pg_temp.outcome(pg_temp.web('tap_h52_anon', '{}', 'SELECT openwop_api."flowdropInterrupts"(NULL, 5)::jsonb')),
          '{"status": 403, "error": "forbidden"}',
          'flowdrop_page_refusal_is_the_envelope: an anonymous request is 403 forbidden (it was a raw 42501 "permission denied for schema openwop": the check for EXECUTE on openwop.events, ow_role_reads_event_logs, looks the function up by its qualified name, which needs USAGE on openwop)');
SELECT is(pg_temp.outcome(pg_temp.web('tap_h52_web', '{"sub": "bob", "tenant": "acme", "scope": "openid"}', 'SELECT openwop_api."flowdropInterrupts"(NULL, 5)::jsonb')),
          '{"status": 403, "error": "forbidden"}', 'flowdrop_page_refusal_is_the_envelope: ... and so is a JWT without approvals:respond');
SELECT is(pg_temp.web('tap_h52_web', :'acme', 'SELECT to_jsonb(json_typeof(openwop_api."flowdropInterrupts"(NULL, 5)))'),
          '{"status": 200, "body": "array"}',
          'flowdrop_page_served_with_documented_grants: an approver''s web role with the documented grants reads its page (at 4d17514 it was a raw 42501 "permission denied for schema openwop": the page was read as the caller through openwop.flowdrop_interrupts; held since 1219362)');
-- held: the reporting login reads tables, not the HTTP surfaces
CREATE ROLE tap_h52_reporter;
GRANT pg_read_all_data TO tap_h52_reporter;
SELECT is(pg_temp.web_in('tap_h52_reporter', 'SELECT to_jsonb(count(*)) FROM openwop_api.pending_interrupts'), '{"sqlstate": "42501"}',
          'reporter_gets_no_http_surface: pg_read_all_data does not read the HTTP inbox (its functions need EXECUTE)');
SELECT is(pg_temp.web_in('tap_h52_reporter', 'SELECT openwop_api."flowdropInterrupts"(NULL, 5)::jsonb'), '{"sqlstate": "42501"}',
          '... nor call flowdropInterrupts');

/* ------------------------------------------------------------------
 * The list form never takes the ~2F projection
 * ------------------------------------------------------------------ */

-- own_ids sends any 36-character element with a '-' at index 8 to
-- ow_normalize_id, which decodes the ~2F projection and refuses another
-- tenant's id with 403: so one element of that shape refused the whole
-- list 403 (another tenant's) or was taken (the caller's), where the list
-- refuses the projection 400 and leaves other tenants' ids out.
CREATE TEMP TABLE proj AS SELECT pg_temp.gate('acmecorp-12/h52-proj-0000000001') AS iid;
SELECT is(length(replace(iid, '/', '~2F')) || substr(replace(iid, '/', '~2F'), 9, 1), '36-',
          'control: the projected id of an interrupt of tenant acmecorp-12 is 36 characters with a - at index 8') FROM proj;
SELECT is(pg_temp.refusal(format('SELECT openwop.flowdrop_interrupts(ARRAY[%L])', replace(iid, '/', '~2F'))) ->> 'code', 'validation_error',
          'flowdrop_list_takes_no_projected_id: from acme, acmecorp-12''s projected id is 400 like any malformed element (it was 403 id_tenant_mismatch, the whole list refused)')
  FROM proj;
SET LOCAL openwop.tenant = 'acmecorp-12';
SELECT is(pg_temp.refusal(format('SELECT openwop.flowdrop_interrupts(ARRAY[%L])', replace(iid, '/', '~2F'))) ->> 'code',
          'validation_error', 'flowdrop_list_takes_no_projected_id: ... and from acmecorp-12 it is 400 too (it was taken)')
  FROM proj;
SET LOCAL openwop.tenant = 'acme';

/* ------------------------------------------------------------------
 * A schema of the caller's own, ahead of pg_catalog
 * ------------------------------------------------------------------ */

CREATE ROLE tap_h52_mallory LOGIN;
GRANT openwop_approver TO tap_h52_mallory;
GRANT USAGE ON SCHEMA openwop, openwop_api TO tap_h52_mallory;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA openwop, openwop_api TO tap_h52_mallory;
GRANT SELECT ON openwop.pending_interrupts, openwop_api.pending_interrupts TO tap_h52_mallory;
CREATE SCHEMA tap_h52_mallory AUTHORIZATION tap_h52_mallory;
CREATE TABLE pg_temp.ran_as (who text, what text);
GRANT INSERT ON pg_temp.ran_as TO PUBLIC;
SET LOCAL ROLE tap_h52_mallory;
-- each shadow records whom it ran as, when that is anyone but mallory
CREATE FUNCTION tap_h52_mallory.note(what text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  IF current_user <> 'tap_h52_mallory' THEN EXECUTE format('INSERT INTO %s VALUES (current_user, %L)', 'pg_temp.ran_as', what); END IF;
  RETURN true;
END $$;
CREATE FUNCTION tap_h52_mallory.t_eq(text, text) RETURNS boolean LANGUAGE sql AS $$ SELECT tap_h52_mallory.note('text =') AND $1 OPERATOR(pg_catalog.=) $2 $$;
CREATE OPERATOR tap_h52_mallory.= (LEFTARG = text, RIGHTARG = text, FUNCTION = tap_h52_mallory.t_eq);
CREATE FUNCTION tap_h52_mallory.t_gt(text, text) RETURNS boolean LANGUAGE sql AS $$ SELECT tap_h52_mallory.note('text >') AND $1 OPERATOR(pg_catalog.>) $2 $$;
CREATE OPERATOR tap_h52_mallory.> (LEFTARG = text, RIGHTARG = text, FUNCTION = tap_h52_mallory.t_gt);
CREATE FUNCTION tap_h52_mallory.ts_gt(timestamptz, timestamptz) RETURNS boolean LANGUAGE sql AS $$ SELECT tap_h52_mallory.note('timestamptz >') AND $1 OPERATOR(pg_catalog.>) $2 $$;
CREATE OPERATOR tap_h52_mallory.> (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = tap_h52_mallory.ts_gt);
CREATE FUNCTION tap_h52_mallory.j_get(jsonb, text) RETURNS jsonb LANGUAGE sql AS $$ SELECT CASE WHEN tap_h52_mallory.note('jsonb ->') THEN $1 OPERATOR(pg_catalog.->) $2 END $$;
CREATE OPERATOR tap_h52_mallory.-> (LEFTARG = jsonb, RIGHTARG = text, FUNCTION = tap_h52_mallory.j_get);
CREATE FUNCTION tap_h52_mallory.i_eq(integer, integer) RETURNS boolean LANGUAGE sql AS $$ SELECT tap_h52_mallory.note('int4 =') AND $1 OPERATOR(pg_catalog.=) $2 $$;
CREATE OPERATOR tap_h52_mallory.= (LEFTARG = integer, RIGHTARG = integer, FUNCTION = tap_h52_mallory.i_eq);
CREATE FUNCTION tap_h52_mallory.flowdrop_interrupts(text[]) RETURNS json LANGUAGE sql AS $$ SELECT CASE WHEN tap_h52_mallory.note('flowdrop_interrupts') THEN '[]'::pg_catalog.json END $$;
RESET ROLE;
-- sql run with the caller's schema first on search_path, as the caller
-- alone: the test's own statements (and pgTAP's) keep the usual path
CREATE FUNCTION pg_temp.shadowed(sql text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE r jsonb; saved text := current_setting('search_path');
BEGIN
  PERFORM pg_catalog.set_config('search_path', 'tap_h52_mallory, pg_catalog', true);
  EXECUTE sql INTO r;
  PERFORM pg_catalog.set_config('search_path', saved, true);
  RETURN r;
END $$;
-- the detector works: a shadow that runs as anyone but mallory is noted
SELECT is(pg_temp.shadowed($$SELECT to_jsonb('a'::text = 'a'::text)$$), 'true', 'control: the superuser, with mallory''s schema first, runs its = ...');
SELECT is((SELECT array_agg(what) FROM pg_temp.ran_as), '{"text ="}', '... and the shadow notes it');
DELETE FROM pg_temp.ran_as;
CREATE TEMP TABLE shadow_run AS
  SELECT openwop.create_run('h52', '{"runId": "acme/h52-shadow-00000001"}') AS created,
         openwop.start_node('acme/h52-shadow-00000001', 'fetch') AS started;
SELECT is(jsonb_typeof(pg_temp.as_login('tap_h52_mallory', 'acme', format('SELECT pg_temp.shadowed(%L)',
              format('SELECT openwop_api."flowdropInterrupts"(%L, 5)::jsonb', pg_temp.uuid_of(acme2))))), 'array',
          'control: mallory pages after a UUID with its schema first on search_path') FROM g;
SELECT is(pg_temp.as_login('tap_h52_mallory', 'acme', format('SELECT pg_temp.shadowed(%L)',
            $$SELECT openwop.connector_auth_expired('acme/h52-shadow-00000001', 'fetch', 'google', '{"ref": "cred-1"}')$$)) ->> 'sequence', '2',
          'control: mallory records connector.auth-expired with its schema first on search_path');
SELECT is(pg_temp.as_login('tap_h52_mallory', 'acme', format('SELECT pg_temp.shadowed(%L)',
            format('SELECT jsonb_agg(r.status) FROM openwop.resolve_interrupts(ARRAY[%L], ''{"action": "accept"}'') r', pg_temp.uuid_of(acme2)))), '[200]',
          'control: mallory decides by a UUID with its schema first on search_path') FROM g;
SELECT is(pg_temp.as_login('tap_h52_mallory', 'acme', format('SELECT pg_temp.shadowed(%L)', 'SELECT openwop_api.openapi()::jsonb -> ''openapi''')), '"3.0.3"',
          'control: mallory reads the OpenAPI document with its schema first on search_path');
SELECT is((SELECT count(*)::int FROM pg_temp.ran_as), 0,
          'no_shadow_runs_as_owner: no operator or function of the caller''s schema ran as anyone but the caller (flowdropInterrupts'' position read as the owner, its page as the caller; connector_auth_expired; a bulk resolve by UUID; openapi())');

/* ------------------------------------------------------------------
 * connector_auth_expired: its run, its node, its payload
 * ------------------------------------------------------------------ */

CREATE TEMP TABLE conn AS
  SELECT openwop.create_run('h52', '{"runId": "acme/h52-conn-0000000001"}') AS created,
         openwop.start_node('acme/h52-conn-0000000001', 'fetch') AS started;
SET LOCAL openwop.tenant = 'globex';
CREATE TEMP TABLE conn_globex AS
  SELECT openwop.create_run('h52', '{"runId": "globex/h52-conn-0000000001"}') AS created,
         openwop.start_node('globex/h52-conn-0000000001', 'fetch') AS started;
SET LOCAL openwop.tenant = 'acme';
CREATE TEMP TABLE before AS SELECT count(*) AS n FROM openwop.events WHERE run_id IN ('acme/h52-conn-0000000001', 'globex/h52-conn-0000000001');
SELECT is(pg_temp.refusal(format('SELECT openwop.connector_auth_expired(%L, ''fetch'', ''google'', %L, %L)', r, ref, reason)) ->> 'code', code,
          format('connector_auth_expired_checked: %s is %s', what, code))
  FROM (VALUES ('globex''s run from acme', 'globex/h52-conn-0000000001', '{"ref": "c"}', NULL, 'id_tenant_mismatch'),
               ('a run named by a UUID', '0b7f2b4e-9c1a-4d2e-8f3a-5e6d7c8b9a01', '{"ref": "c"}', NULL, 'validation_error'),
               ('a credentialRef with another member', 'acme/h52-conn-0000000001', '{"ref": "c", "token": "secret"}', NULL, 'validation_error'),
               ('a credentialRef without ref', 'acme/h52-conn-0000000001', '{"scope": "s"}', NULL, 'validation_error'),
               ('an empty reason', 'acme/h52-conn-0000000001', '{"ref": "c"}', '', 'validation_error'),
               ('a credentialRef nested 5000 deep', 'acme/h52-conn-0000000001', '{"ref": "c", "scope": ' || repeat('[', 5000) || repeat(']', 5000) || '}', NULL, 'validation_error'))
       t (what, r, ref, reason, code);
SELECT is((SELECT count(*) FROM openwop.events WHERE run_id IN ('acme/h52-conn-0000000001', 'globex/h52-conn-0000000001')), (SELECT n FROM before),
          '... and nothing was appended to either run');
-- one with hostile strings: recorded as data, the chain holds, a fork copies it
SELECT is(openwop.connector_auth_expired('acme/h52-conn-0000000001', 'fetch', E'g"\\\u2028</script>', '{"ref": "c\"}{", "scope": "\u0001"}', E'x\ny') ->> 'sequence',
          '2', 'control: connector.auth-expired with quotes, a line separator and control characters is recorded');
SELECT is(openwop.verify_run('acme/h52-conn-0000000001') ->> 'valid', 'true', 'connector_event_keeps_the_chain: verify_run holds after it');
SELECT is(openwop.interrupt('acme/h52-conn-0000000001', 'fetch', '{"kind": "credential", "data": {"provider": "google", "reason": "expired", "scopes": ["s"], "connectUrl": "https://idp.example.org/c", "credentialRef": {"ref": "c"}}}') ->> 'status',
          'interrupted', 'control: the node then suspends on its credential interrupt');
CREATE TEMP TABLE conn_fork AS SELECT openwop.fork_run('acme/h52-conn-0000000001', '{"mode": "branch", "fromSeq": 3}') ->> 'runId' AS run;
SELECT is((SELECT e.payload FROM openwop.events e WHERE e.run_id = f.run AND e.type = 'connector.auth-expired'),
          (SELECT e.payload FROM openwop.events e WHERE e.run_id = 'acme/h52-conn-0000000001' AND e.type = 'connector.auth-expired'),
          'connector_event_keeps_the_chain: a fork from after it copies it as it is') FROM conn_fork f;
SELECT is(openwop.verify_run(run) ->> 'valid', 'true', '... and the fork''s chain verifies') FROM conn_fork;
SELECT is(pg_temp.refusal($$SELECT openwop.connector_auth_expired('acme/h52-conn-0000000001', 'fetch', 'google', '{"ref": "c"}')$$) ->> 'code',
          'run_state_conflict', 'connector_auth_expired_checked: a node suspended on an interrupt has no open execution (409)');
SELECT is(openwop.cancel_run('acme/h52-conn-0000000001') ->> 'status', 'cancelled', 'control: the run is cancelled');
SELECT is(pg_temp.refusal($$SELECT openwop.connector_auth_expired('acme/h52-conn-0000000001', 'fetch', 'google', '{"ref": "c"}')$$) ->> 'code',
          'run_terminal', 'connector_auth_expired_checked: an ended run is refused (409 run_terminal)');
-- the provider's limit: "provider must be 1 to 256 characters", counted in bytes
CREATE FUNCTION pg_temp.refusal_message(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE msg text;
BEGIN
  EXECUTE sql;
  RETURN NULL;
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT;
  RETURN msg;
END $$;
SELECT ok(coalesce(m LIKE '%bytes%', true),
          'connector_provider_limit_says_what_it_counts: a provider of 200 characters (400 bytes) is taken, or refused naming bytes (it was refused as more than "256 characters")')
  FROM pg_temp.refusal_message(format('SELECT openwop.connector_auth_expired(''acme/h52-shadow-00000001'', ''fetch'', %L, ''{"ref": "c"}'')',
                                      repeat('é', 200))) m;

/* ------------------------------------------------------------------
 * The update script: grants carried to the json operations
 * ------------------------------------------------------------------ */

-- The update creates the json operations, grants them to every role the
-- DBA granted the jsonb ones, and drops those.  A GRANT run by an
-- extension script is recorded as the extension's initial privilege
-- (pg_init_privs), which pg_dump leaves out: after a dump and restore the
-- web roles could no longer call resolveInterruptByRun or
-- resolveInterruptByToken (and the engine create_run, whose grants the
-- same way pass to its new signature).  Found by dumping an updated
-- database and restoring it: the functions' ACLs held the owner alone.
DROP EXTENSION openwop_interrupt;
CREATE EXTENSION openwop_interrupt VERSION '0.10.0';
CREATE ROLE tap_h52_granter;
CREATE ROLE tap_h52_regrantee;
GRANT USAGE ON SCHEMA openwop, openwop_api TO tap_h52_web, tap_h52_anon, tap_h52_granter;
GRANT EXECUTE ON FUNCTION openwop_api."resolveInterruptByToken"(jsonb) TO tap_h52_anon, tap_h52_web;
GRANT EXECUTE ON FUNCTION openwop_api."resolveInterruptByRun"(jsonb) TO tap_h52_web;
GRANT EXECUTE ON FUNCTION openwop_api."resolveInterruptByRun"(jsonb) TO tap_h52_granter WITH GRANT OPTION;
GRANT EXECUTE ON FUNCTION openwop.create_run(text, jsonb) TO tap_h52_web;
SET LOCAL ROLE tap_h52_granter;
GRANT EXECUTE ON FUNCTION openwop_api."resolveInterruptByRun"(jsonb) TO tap_h52_regrantee;
RESET ROLE;
ALTER EXTENSION openwop_interrupt UPDATE;
SELECT ok(has_function_privilege('tap_h52_web', 'openwop_api."resolveInterruptByRun"(json)', 'EXECUTE')
          AND has_function_privilege('tap_h52_anon', 'openwop_api."resolveInterruptByToken"(json)', 'EXECUTE')
          AND has_function_privilege('tap_h52_regrantee', 'openwop_api."resolveInterruptByRun"(json)', 'EXECUTE'),
          'control: the update carried the grants to the json operations');
SELECT is((SELECT array_agg(DISTINCT a.grantee::regrole::text ORDER BY a.grantee::regrole::text)
             FROM pg_init_privs i, aclexplode(i.initprivs) a
            WHERE i.classoid = 'pg_proc'::regclass
              AND i.objoid IN ('openwop_api."resolveInterruptByRun"(json)'::regprocedure,
                               'openwop_api."resolveInterruptByToken"(json)'::regprocedure,
                               'openwop.create_run(text, jsonb, text)'::regprocedure)
              AND a.grantee::regrole::text LIKE 'tap_h52_%'), NULL,
          'update_carried_grants_are_dumped: the grants the update carried are the DBA''s, not the extension''s initial privileges (pg_init_privs), so pg_dump keeps them (they were initial privileges: a restore lost every one)');
SELECT is((SELECT a.grantor::regrole::text FROM pg_proc p, aclexplode(p.proacl) a
            WHERE p.oid = 'openwop_api."resolveInterruptByRun"(json)'::regprocedure AND a.grantee = 'tap_h52_regrantee'::regrole),
          'tap_h52_granter',
          'update_carried_grants_keep_their_grantor: a grant made by a holder of the grant option keeps its grantor, so revoking that option still takes it away (it became the owner''s, outliving the revoke)');

SELECT * FROM finish();
ROLLBACK;
