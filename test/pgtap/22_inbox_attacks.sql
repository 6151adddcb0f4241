-- Attacks on the inbox, openwop.pending_interrupts (docs/inbox.md, "Security"),
-- beyond those of 19_inbox.sql: forged calls of its helper functions, leaky
-- functions in window functions, aggregates and LATERAL, the caller cached
-- across claims changes (cursor, prepared statement, PL/pgSQL), EXPLAIN as an
-- oracle, hostile gate data, and the inbox against the resolve, gate by gate.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir refusal.psql
\ir callers.psql
\ir inbox.psql
CREATE FUNCTION pg_temp.approval(data jsonb DEFAULT '{}') RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('kind', 'approval', 'data', jsonb_build_object('artifactId', 'exp-1', 'artifactType', 'expense',
           'title', 'Approve', 'actions', '["accept", "reject", "ask"]'::jsonb) || data)
$$;
CREATE FUNCTION pg_temp.jwt(sub text, tenant text DEFAULT 'acme', extra jsonb DEFAULT '{}') RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('sub', sub, 'tenant', tenant, 'scope', 'approvals:respond') || extra
$$;
CREATE FUNCTION pg_temp.seen_by(claims jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_request(claims, 'SELECT coalesce(jsonb_agg(run_id ORDER BY run_id), ''[]'') FROM openwop.pending_interrupts')
$$;
CREATE FUNCTION pg_temp.try_vote(run text, sub text, value jsonb) RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(pg_temp.refusal(format('SELECT pg_temp.as_request(%L, %L)', pg_temp.jwt(sub, split_part(run, '/', 1)),
                  format('SELECT openwop.resolve_interrupt(%L, %L, %L)', run, 'gate', value))) ->> 'code', 'answered')
$$;

DO $$ BEGIN
  PERFORM openwop.add_group_member('finance', 'dave', 'acme');
  PERFORM openwop.add_group_member('board', 'zed', 'globex');
END $$;
CREATE ROLE tap_atk_mallory LOGIN;
GRANT openwop_approver TO tap_atk_mallory;
GRANT USAGE ON SCHEMA openwop TO tap_atk_mallory;
GRANT SELECT ON openwop.pending_interrupts TO tap_atk_mallory;
GRANT EXECUTE ON FUNCTION openwop.inbox_tenant(), openwop.inbox_voter(), openwop.inbox_waiting(text),
                          openwop.may_decide(text, text, text, jsonb, jsonb) TO tap_atk_mallory;
CREATE SCHEMA tap_atk_mallory AUTHORIZATION tap_atk_mallory;
CREATE ROLE tap_atk_root LOGIN SUPERUSER;
CREATE FUNCTION pg_temp.as_mallory(sql text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_login('tap_atk_mallory', 'acme', sql)
$$;

SELECT pg_temp.raise('acme/atk-open-000000001', pg_temp.approval());
SELECT pg_temp.raise('acme/atk-alice-00000001', pg_temp.approval('{"approversList": ["alice"], "title": "alice only"}'));
SELECT pg_temp.raise('acme/atk-finance-000001', pg_temp.approval('{"approverGroupRefs": ["finance"]}'));
SELECT pg_temp.raise('acme/atk-quorum-0000001', pg_temp.approval('{"requiredApprovals": 2, "approversList": ["alice", "bob"]}'));
SELECT pg_temp.raise('acme/atk-askonly-000001', pg_temp.approval('{"actions": ["ask"]}'));
SELECT pg_temp.raise('acme/atk-odd-000000001', pg_temp.approval(jsonb_build_object(
  'approversList', (SELECT jsonb_agg(x) FROM (SELECT format('%s/"'';--%s', repeat('x', 40), g) x FROM generate_series(1, 2000) g) s)
                   || '["https://idp.example/carol", "*", "%", "alice/", "/alice"]'::jsonb,
  'approverGroupRefs', '["fin%", "*", "finance ", "FINANCE", "finance\\t"]'::jsonb,
  'approverRoleRefs', '["pg_read_all_data", "postgres", "PUBLIC", "public", "a\"b"]'::jsonb)));
SELECT pg_temp.raise('globex/atk-secret-00001', pg_temp.approval('{"approverGroupRefs": ["board"], "title": "globex secret"}'));
SELECT pg_temp.raise('globex/atk-open-00000001', pg_temp.approval());

/* ------------------------------------------------------------------
 * Callers that must see nothing of another tenant or principal
 * ------------------------------------------------------------------ */

SELECT is(pg_temp.seen_by('{"role": "web_anon"}'), '[]', 'anonymous PostgREST request (no sub, no scope): empty inbox');
SELECT is(pg_temp.seen_by('{"role": "web_anon", "scope": "approvals:respond", "tenant": "globex"}'), '[]',
          'anonymous request claiming the scope and another tenant: empty inbox');
SELECT is(pg_temp.as_request('{"role": "web_anon", "scope": "approvals:respond"}',
          'SELECT to_jsonb(ARRAY[openwop.inbox_tenant(), openwop.inbox_voter()])'), '[null, null]',
          '... its inbox_tenant() and inbox_voter() are NULL');
SELECT is(pg_temp.seen_by(pg_temp.jwt('zed', 'acme')) ? 'globex/atk-secret-00001', false,
          'a JWT approver of globex asking in acme never sees globex''s gate');
SELECT is(pg_temp.seen_by(pg_temp.jwt('zed', 'globex')), '["globex/atk-open-00000001", "globex/atk-secret-00001"]',
          'control: in globex it sees globex''s gates');
SELECT is(pg_temp.seen_by(pg_temp.jwt('alice', 'acme')) ?| '{globex/atk-secret-00001,globex/atk-open-00000001}', false,
          'acme''s approver never sees globex''s gates, open ones included');
SELECT is(pg_temp.as_login('tap_atk_root', 'acme', 'SELECT coalesce(jsonb_agg(run_id), ''[]'') FROM openwop.pending_interrupts'), '[]',
          'a superuser login that is no approver sees nothing');
SELECT is(pg_temp.as_mallory('SELECT coalesce(jsonb_agg(run_id ORDER BY run_id), ''[]'') FROM openwop.pending_interrupts'),
          '["acme/atk-askonly-000001", "acme/atk-open-000000001"]', 'mallory (SQL approver of acme) sees the open gates only');
SET LOCAL openwop.tenant = 'globex';
SELECT is(pg_temp.as_mallory('SELECT 1::text::jsonb FROM openwop.pending_interrupts LIMIT 1') ->> 'code', 'id_tenant_mismatch',
          'mallory bound to acme naming globex is refused');
SET LOCAL openwop.tenant = 'acme';

/* ------------------------------------------------------------------
 * The helper functions called directly, with forged arguments
 * ------------------------------------------------------------------ */

SELECT is(pg_temp.as_mallory($$ SELECT to_jsonb(ARRAY[openwop.inbox_tenant(), openwop.inbox_voter()]) $$),
          '["acme", "tap_atk_mallory"]', 'inbox_tenant() and inbox_voter() are mallory''s own');
SELECT is(pg_temp.as_mallory($$ SELECT to_jsonb(openwop.may_decide(tenant, interrupt_id, kind, payload, NULL))
                                 FROM (VALUES ('globex', 'x', 'approval', '{"data": {}}'::jsonb)) v(tenant, interrupt_id, kind, payload) $$),
          'false', 'may_decide naming another tenant: false, whatever the payload');
SELECT is(pg_temp.as_mallory($$ SELECT to_jsonb(openwop.may_decide('globex', 'x', 'clarification', '{}', NULL)) $$), 'false',
          '... any kind');
SELECT is(pg_temp.as_mallory($$ SELECT to_jsonb(openwop.may_decide('acme', 'x', 'approval',
                                  '{"data": {"approverGroupRefs": ["finance"]}}', NULL)) $$), 'false',
          'may_decide cannot probe another principal''s group: it answers for mallory, who is not in finance');
SELECT is(pg_temp.as_mallory($$ SELECT to_jsonb(openwop.may_decide('acme', 'x', 'approval',
                                  '{"data": {"approversList": ["dave"]}}', NULL)) $$), 'false',
          '... nor name someone else');
SELECT is(pg_temp.as_mallory($$ SELECT to_jsonb(openwop.may_decide('acme', 'x', 'approval',
                                  '{"data": {"approverGroupRefs": ["board"]}}', NULL)) $$), 'false',
          '... nor probe another tenant''s group');
SELECT is(pg_temp.as_mallory($$ SELECT to_jsonb(openwop.may_decide('acme', 'x', 'approval',
                                  '{"data": {"approversList": ["tap_atk_mallory"]}}', NULL)) $$), 'true',
          'control: it answers true for mallory herself');
SELECT is(pg_temp.as_mallory($$ SELECT to_jsonb(array_agg(openwop.may_decide('acme', interrupt_id, 'approval', payload, NULL)))
                                 FROM (VALUES ('x', '{}'::jsonb), ('x', '{"data": 1}'), ('x', '{"data": []}'), ('x', '{"data": null}'),
                                  ('x', '{"data": {"approversList": 7, "approverGroupRefs": {"a": 1}, "approverRoleRefs": [1, null, []]}}'),
                                  ('x', '{"data": {"requiredApprovals": "2", "actions": 5}}'),
                                  ('x', '{"data": {"requiredApprovals": 1e400, "actions": ["accept"]}}'),
                                  (repeat('z', 100000), jsonb_build_object('data', jsonb_build_object('requiredApprovals', 2))),
                                  ('x', (SELECT jsonb_build_object('data', jsonb_build_object('approversList', jsonb_agg(g::text)))
                                           FROM generate_series(1, 50000) g))) v(interrupt_id, payload) $$),
          '[false, false, false, false, true, true, true, true, false]',
          'may_decide reads hostile payloads (non-objects, wrong types, huge numbers and lists, a huge id) without a raw error');
SELECT is(pg_temp.as_request('{"sub": "alice", "tenant": "acme"}', $$ SELECT to_jsonb(openwop.may_decide('acme', 'x', 'custom', '{}', NULL)) $$),
          'false', 'may_decide for a JWT without the scope: false');

/* ------------------------------------------------------------------
 * Leaky functions in window functions, aggregates, LATERAL, GROUP BY, DISTINCT
 * ------------------------------------------------------------------ */

SET LOCAL SESSION AUTHORIZATION tap_atk_mallory;
CREATE TABLE tap_atk_mallory.seen (via text, run_id text);
CREATE FUNCTION tap_atk_mallory.leak(via text, run text) RETURNS boolean LANGUAGE plpgsql COST 0.0000001 AS $f$
BEGIN
  RAISE NOTICE 'leak (%): %', via, run;
  INSERT INTO tap_atk_mallory.seen VALUES (via, run);
  RETURN true;
END $f$;
CREATE FUNCTION tap_atk_mallory.boom(title text) RETURNS boolean LANGUAGE sql COST 0.0000001 AS $f$
  SELECT 1 / (CASE WHEN title = 'alice only' THEN 0 ELSE 1 END) = 1
$f$;
RESET SESSION AUTHORIZATION;
SET LOCAL client_min_messages = warning;
CREATE TEMP TABLE attack (via text, sql text);
INSERT INTO attack VALUES
  ('window', $$ SELECT to_jsonb(count(*)) FROM (SELECT run_id, row_number() OVER (ORDER BY tap_atk_mallory.leak('window', run_id)) FROM openwop.pending_interrupts) s $$),
  ('aggregate', $$ SELECT to_jsonb(count(*) FILTER (WHERE tap_atk_mallory.leak('aggregate', run_id))) FROM openwop.pending_interrupts $$),
  ('having', $$ SELECT to_jsonb(count(*)) FROM openwop.pending_interrupts GROUP BY run_id HAVING tap_atk_mallory.leak('having', run_id) LIMIT 1 $$),
  ('lateral', $$ SELECT to_jsonb(count(*)) FROM openwop.pending_interrupts p, LATERAL (SELECT 1 WHERE tap_atk_mallory.leak('lateral', p.run_id)) l $$),
  ('lateral-in', $$ SELECT to_jsonb(count(*)) FROM (VALUES ('acme/atk-alice-00000001')) v(r),
                     LATERAL (SELECT * FROM openwop.pending_interrupts p WHERE p.run_id = v.r AND tap_atk_mallory.leak('lateral-in', p.run_id)) l $$),
  ('in', $$ SELECT to_jsonb(count(*)) FROM openwop.pending_interrupts p WHERE p.run_id IN (SELECT p.run_id WHERE tap_atk_mallory.leak('in', p.run_id)) $$),
  ('distinct-on', $$ SELECT to_jsonb(count(*)) FROM (SELECT DISTINCT ON (tap_atk_mallory.leak('distinct-on', run_id)) run_id FROM openwop.pending_interrupts) s $$),
  ('join-on', $$ SELECT to_jsonb(count(*)) FROM openwop.pending_interrupts p LEFT JOIN openwop.pending_interrupts q
                  ON tap_atk_mallory.leak('join-on', p.run_id) AND tap_atk_mallory.leak('join-on', q.run_id) $$),
  ('leakproof-pushed', $$ SELECT to_jsonb(count(*)) FROM openwop.pending_interrupts p
                           WHERE p.run_id = 'acme/atk-alice-00000001' AND tap_atk_mallory.leak('leakproof-pushed', p.run_id) $$);
CREATE TEMP TABLE attacked AS SELECT via, pg_temp.as_mallory(sql) AS r FROM attack;
RESET client_min_messages;
SELECT is((SELECT count(*) FROM attacked WHERE r ? 'code'), 0::bigint, 'no leaky query was refused');
SELECT is((SELECT array_agg(DISTINCT via ORDER BY via) FROM tap_atk_mallory.seen),
          '{aggregate,distinct-on,having,in,join-on,lateral,window}', 'control: the leak ran wherever a visible row reached it');
SELECT is((SELECT array_agg(DISTINCT run_id ORDER BY run_id) FROM tap_atk_mallory.seen),
          '{acme/atk-askonly-000001,acme/atk-open-000000001}',
          'leaky functions in a window, an aggregate FILTER, HAVING, LATERAL, IN, DISTINCT ON and a join condition see only mallory''s rows');
SELECT is(pg_temp.as_mallory($$ SELECT to_jsonb(count(*)) FROM openwop.pending_interrupts p WHERE tap_atk_mallory.boom(p.title) $$), '2',
          'an error oracle on a hidden row''s value (division by zero on alice''s title) never fires');
SELECT is(pg_temp.as_mallory($$ SELECT to_jsonb(count(*)) FROM openwop.pending_interrupts p
                                 WHERE p.run_id = 'acme/atk-alice-00000001' AND tap_atk_mallory.boom(p.title) $$), '0',
          '... nor with a leakproof equality on the hidden row''s id pushed below the barrier');
SELECT is(pg_temp.as_mallory($$ SELECT to_jsonb(count(*)) FROM openwop.pending_interrupts p
                                 WHERE 1 / (CASE WHEN p.title = 'alice only' THEN 0 ELSE 1 END) = 1 $$), '2',
          '... nor the same oracle written inline');

/* ------------------------------------------------------------------
 * The caller per statement: claims changed under an open cursor, a
 * prepared statement, a PL/pgSQL function
 * ------------------------------------------------------------------ */

CREATE FUNCTION pg_temp.cursor_across_claims() RETURNS jsonb LANGUAGE plpgsql
    SET openwop.jwt_session_role = 'openwop_tap_authenticator' SET request.jwt.claims = '' AS $$
DECLARE c refcursor := 'c'; r text; out jsonb := '[]';
BEGIN
  PERFORM set_config('request.jwt.claims', pg_temp.jwt('bob')::text, true);
  OPEN c FOR SELECT run_id FROM openwop.pending_interrupts ORDER BY run_id;
  FETCH c INTO r; out := out || to_jsonb(r);
  PERFORM set_config('request.jwt.claims', pg_temp.jwt('alice')::text, true);
  LOOP FETCH c INTO r; EXIT WHEN NOT FOUND; out := out || to_jsonb(r); END LOOP;
  CLOSE c;
  RETURN out;
END $$;
SELECT is(pg_temp.cursor_across_claims(), '["acme/atk-askonly-000001", "acme/atk-open-000000001", "acme/atk-quorum-0000001"]',
          'a cursor opened as bob stays bob''s inbox after the claims change to alice (never alice''s atk-alice gate)');
SELECT is(pg_temp.seen_by(pg_temp.jwt('bob')), '["acme/atk-askonly-000001", "acme/atk-open-000000001", "acme/atk-quorum-0000001"]',
          'control: bob''s inbox');

-- a prepared statement reused after the claims change decides its caller anew
CREATE FUNCTION pg_temp.prepared_across_claims() RETURNS jsonb LANGUAGE plpgsql
    SET openwop.jwt_session_role = 'openwop_tap_authenticator' SET request.jwt.claims = '' AS $$
DECLARE a jsonb; b jsonb;
BEGIN
  PERFORM set_config('request.jwt.claims', pg_temp.jwt('bob')::text, true);
  EXECUTE 'PREPARE tap_atk_page AS SELECT coalesce(jsonb_agg(run_id ORDER BY run_id), ''[]'') FROM openwop.pending_interrupts';
  EXECUTE 'EXECUTE tap_atk_page' INTO a;
  PERFORM set_config('request.jwt.claims', pg_temp.jwt('dave')::text, true);
  EXECUTE 'EXECUTE tap_atk_page' INTO b;
  EXECUTE 'DEALLOCATE tap_atk_page';
  RETURN jsonb_build_array(a, b);
END $$;
SELECT is(pg_temp.prepared_across_claims() -> 1, pg_temp.seen_by(pg_temp.jwt('dave')),
          'a prepared statement executed again after the claims change reads the new caller''s inbox');
SELECT is(pg_temp.prepared_across_claims() -> 1 ? 'acme/atk-finance-000001', true, '... (dave''s finance gate)');
-- a PL/pgSQL function reading the view, called for two callers in one transaction
CREATE FUNCTION pg_temp.page() RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN RETURN (SELECT coalesce(jsonb_agg(run_id ORDER BY run_id), '[]') FROM openwop.pending_interrupts); END $$;
SELECT is(pg_temp.as_request(pg_temp.jwt('bob'), 'SELECT pg_temp.page()') ? 'acme/atk-finance-000001', false, 'PL/pgSQL page as bob');
SELECT is(pg_temp.as_request(pg_temp.jwt('dave'), 'SELECT pg_temp.page()') ? 'acme/atk-finance-000001', true,
          '... then as dave in the same transaction: dave''s inbox, not bob''s cached');
-- an inlinable SQL function over the view
CREATE FUNCTION pg_temp.sql_page() RETURNS SETOF openwop.pending_interrupts LANGUAGE sql STABLE AS 'SELECT * FROM openwop.pending_interrupts';
SELECT is(pg_temp.as_request(pg_temp.jwt('dave'), 'SELECT jsonb_agg(run_id ORDER BY run_id) FROM pg_temp.sql_page()'),
          pg_temp.seen_by(pg_temp.jwt('dave')), 'an inlined SQL function over the view is the caller''s inbox');
-- SET ROLE changes nothing: the caller is the login
CREATE ROLE tap_atk_reader;
GRANT USAGE ON SCHEMA openwop TO tap_atk_reader;
GRANT SELECT ON openwop.pending_interrupts TO tap_atk_reader;
GRANT EXECUTE ON FUNCTION openwop.inbox_tenant(), openwop.inbox_voter(), openwop.inbox_waiting(text),
                          openwop.may_decide(text, text, text, jsonb, jsonb) TO tap_atk_reader;
GRANT tap_atk_reader TO tap_atk_mallory;
SELECT is(pg_temp.as_login('tap_atk_mallory', 'acme', 'SELECT coalesce(jsonb_agg(run_id ORDER BY run_id), ''[]'') FROM openwop.pending_interrupts', 'tap_atk_reader'),
          '["acme/atk-askonly-000001", "acme/atk-open-000000001"]', 'SET ROLE to another role leaves mallory''s inbox');

/* ------------------------------------------------------------------
 * EXPLAIN as an oracle
 * ------------------------------------------------------------------ */

-- the rows the plan's filters removed: of the tables, and of the interrupts joined to the open ones
CREATE FUNCTION pg_temp.removed(plan jsonb) RETURNS bigint LANGUAGE sql AS $$
  SELECT sum((n ->> 'Rows Removed by Filter')::bigint) FROM jsonb_path_query(plan, 'strict $.**') n
   WHERE jsonb_typeof(n) = 'object'
     AND (n ->> 'Relation Name' IN ('interrupts', 'open_interrupts') OR n ->> 'Node Type' = 'Subquery Scan')
$$;
-- the page's plan, as on a store of any size (this one is a few rows: a sequential scan would be cheaper)
SET LOCAL enable_seqscan = off;
SELECT is(pg_temp.removed(pg_temp.as_mallory('EXPLAIN (ANALYZE, FORMAT JSON) SELECT * FROM openwop.pending_interrupts ORDER BY requested_at LIMIT 50')),
          (SELECT count(*) FROM openwop.interrupts WHERE tenant = 'acme' AND status = 'pending') - 2,
          'EXPLAIN ANALYZE of a page counts only acme''s pending gates mallory may not decide');
SET LOCAL enable_seqscan = on;
SET LOCAL enable_indexscan = off;
SET LOCAL enable_bitmapscan = off;
SELECT cmp_ok(pg_temp.removed(pg_temp.as_mallory('EXPLAIN (ANALYZE, FORMAT JSON) SELECT * FROM openwop.pending_interrupts')),
          '>=', (SELECT count(*) FROM openwop.open_interrupts WHERE tenant <> 'acme'),
          'KNOWN LIMIT (docs/inbox.md): with index scans disabled, the sequential scans'' Rows Removed by Filter count other tenants'' rows');
RESET enable_indexscan;
RESET enable_bitmapscan;

/* ------------------------------------------------------------------
 * The inbox against the resolve, gate by gate and caller by caller
 * ------------------------------------------------------------------ */

CREATE TEMP TABLE verdict AS
SELECT c.sub, g.run,
       pg_temp.seen_by(pg_temp.jwt(c.sub, split_part(g.run, '/', 1))) ? g.run AS shown,
       NULL::text AS resolve
  FROM (VALUES ('alice'), ('bob'), ('dave'), ('zed'), ('mallory')) c(sub),
       (SELECT run_id AS run FROM openwop.interrupts WHERE status = 'pending' AND run_id LIKE '%/atk-%') g;
-- ask is a recorded answer everywhere it is offered; a resolve that is refused for eligibility says forbidden
UPDATE verdict SET resolve = pg_temp.refusal(format('SELECT pg_temp.as_request(%L, %L)', pg_temp.jwt(sub, split_part(run, '/', 1)),
         format('SELECT openwop.resolve_interrupt(%L, %L, %L)', run, 'gate', '{"action": "ask"}'))) ->> 'code';
SELECT is((SELECT jsonb_agg(jsonb_build_array(sub, run, shown, resolve) ORDER BY sub, run) FROM verdict
            WHERE shown <> (resolve IS NULL)), NULL,
          'every gate an approver''s inbox shows, a resolve takes from it, and every gate a resolve takes is in its inbox');
SELECT cmp_ok((SELECT count(*) FROM verdict WHERE shown), '>=', 10::bigint, 'control: the sweep compared shown gates');
SELECT cmp_ok((SELECT count(*) FROM verdict WHERE NOT shown), '>=', 10::bigint, '... and hidden ones');
SELECT is(pg_temp.seen_by(pg_temp.jwt('carol', 'acme', '{"iss": "https://idp.example"}')) ? 'acme/atk-odd-000000001', true,
          'hostile refs (2,000 quoted entries, *, %, alice/, /alice, fin%, FINANCE, role PUBLIC) match exactly: only the pinned carol');
SELECT is(pg_temp.seen_by(pg_temp.jwt('alice')) ? 'acme/atk-odd-000000001', false, '... not alice ("alice/", "/alice" name no one)');


SELECT * FROM finish();
ROLLBACK;
