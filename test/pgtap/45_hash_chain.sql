-- Receipts and the hash chain (README, "Receipts and the hash chain"): each
-- event's hash is the SHA-256 of its canonical form, chained to the run's
-- event before it; verify_run() recomputes the chain and names the first
-- event tampered with, whichever column was changed; a resolution's answer
-- carries a receipt with its event's hash.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir refusal.psql
\ir callers.psql

CREATE FUNCTION pg_temp.jwt(who text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('sub', who, 'tenant', 'acme', 'scope', 'approvals:respond')
$$;
CREATE FUNCTION pg_temp.gate(run text, data jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM openwop.create_run('chain', jsonb_build_object('runId', run, 'metadata', jsonb_build_object('note', E'tab\there\nnewline \u00e9 \u2603 \\ " end')));
  PERFORM openwop.start_node(run, 'gate');
  PERFORM openwop.interrupt(run, 'gate', jsonb_build_object('kind', 'approval', 'data', jsonb_build_object('artifactId', 'a', 'artifactType', 'doc', 'title', 'T',
           'actions', '["accept", "reject"]'::jsonb) || data));
END $$;
CREATE FUNCTION pg_temp.vote(run text, who text, action text DEFAULT 'accept') RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_request(pg_temp.jwt(who), format('SELECT openwop.resolve_interrupt(%L, %L, %L)', run, 'gate', jsonb_build_object('action', action)))
$$;
-- the canonical form in plain SQL, as README documents it
CREATE FUNCTION pg_temp.canonical_hash(prev bytea, e openwop.events) RETURNS bytea LANGUAGE sql AS $$
  SELECT sha256(convert_to(jsonb_build_array(encode(prev, 'hex'), e.sequence, e.type, e.node_id,
                  (extract(epoch FROM e.created_at) * 1000000)::bigint, e.schema_version, e.causation_id, e.payload)::text,
                current_setting('server_encoding')))
$$;
CREATE FUNCTION pg_temp.verify(run text) RETURNS jsonb LANGUAGE sql AS $$ SELECT openwop.verify_run(run) - 'head' $$;

DO $$ BEGIN PERFORM pg_temp.gate('acme/chain-one-0000000001', '{}'); END $$;
SELECT pg_temp.vote('acme/chain-one-0000000001', 'ann') AS answer \gset
SELECT is((SELECT count(*) FILTER (WHERE e.hash = pg_temp.canonical_hash(p.hash, e))
             FROM openwop.events e LEFT JOIN openwop.events p ON p.tenant = e.tenant AND p.run_id = e.run_id AND p.sequence = e.sequence - 1
            WHERE e.run_id = 'acme/chain-one-0000000001'), 6::bigint,
          'chain_canonical_form: every event''s hash is sha256 of jsonb_build_array(prev hex, sequence, type, node_id, created_at µs, schema_version, causation_id, payload)::text');
SELECT is((SELECT encode(event_hash, 'hex') FROM openwop.runs WHERE run_id = 'acme/chain-one-0000000001'),
          (SELECT encode(hash, 'hex') FROM openwop.events WHERE run_id = 'acme/chain-one-0000000001' ORDER BY sequence DESC LIMIT 1),
          'chain_head_on_run_row: the run row keeps its latest event''s hash');
-- the extension writes the canonical form itself (src/store/chain.c); it
-- must be byte for byte what jsonb_build_array(...)::text gives, whatever
-- the payload holds: every control character, quotes and backslashes,
-- multi-byte text, numbers as numeric prints them, deep nesting, empty
-- containers, scalar roots, 2,000 keys in jsonb's order, and escapes in
-- keys, type, node_id and causation_id
CREATE TEMP TABLE canonical_cases AS
SELECT p FROM (
  SELECT jsonb_build_object(chr(c), chr(c) || 'x' || chr(c), 'k' || c, jsonb_build_array(chr(c))) AS p FROM generate_series(1, 127) c
  UNION ALL SELECT to_jsonb(chr(c) || ' é ☃ 😀 "q" \\ ') FROM generate_series(1, 40) c
  UNION ALL VALUES ('{"n": [0, -0, 1.50, -1e-7, 1e300, 12345678901234567890.000, 0.1]}'::jsonb),
                   ('[]'), ('{}'), ('[[], {}, [[{}]], {"a": {"b": []}}]'), ('"bare"'), ('42.10'), ('null'), ('true'), ('false'),
                   ('{"a": null, "b": true, "c": false, "": "", "nested": {"x": [1, "two", null, {"y": "z"}]}}'),
                   (jsonb_build_object('long', repeat('ab"\', 5000), 'tail', repeat(E'\n', 300))),
                   ('{"e": [1e-1000, 9.99e131071, -0.0, 0.000, 1E+2]}'),
                   ((repeat('[', 200) || '{"deep": "x"}' || repeat(']', 200))::jsonb)
  UNION ALL SELECT jsonb_object_agg(repeat(chr(65 + k % 26), 1 + k % 7) || E'\t' || k, k) FROM generate_series(1, 2000) k
) cases(p);
SELECT is((SELECT count(*) FILTER (WHERE openwop.event_hash(CASE WHEN k % 2 = 0 THEN sha256('prev') END, k, E'ty"pe\\\t' || k, E'no\nde', p,
                                                            '2026-12-06 12:00:00.123456+00', 7, CASE WHEN k % 3 = 0 THEN E'cause\u0001' END)
                                      = sha256(convert_to(jsonb_build_array(encode(CASE WHEN k % 2 = 0 THEN sha256('prev') END, 'hex'), k, E'ty"pe\\\t' || k, E'no\nde',
                                                                            (extract(epoch FROM timestamptz '2026-12-06 12:00:00.123456+00') * 1000000)::bigint, 7,
                                                                            CASE WHEN k % 3 = 0 THEN E'cause\u0001' END, p)::text,
                                                          current_setting('server_encoding'))))
             FROM (SELECT row_number() OVER () AS k, p FROM canonical_cases) c),
          (SELECT count(*) FROM canonical_cases),
          'chain_canonical_form_escapes: the form the extension writes is jsonb_build_array(...)::text byte for byte, for every control character, quote, backslash, multi-byte character, number, nesting and scalar root');

SELECT is(pg_temp.verify('acme/chain-one-0000000001'), '{"valid": true, "events": 6, "brokenAt": null}', 'verify_run_valid: an untouched run verifies');
SELECT is(openwop.verify_run('acme/chain-one-0000000001') ->> 'head',
          (SELECT encode(hash, 'hex') FROM openwop.events WHERE run_id = 'acme/chain-one-0000000001' AND sequence = 5), '... and names its head');

-- the receipt
SELECT is(:'answer'::jsonb #>> '{receipt,event,hash}',
          (SELECT encode(hash, 'hex') FROM openwop.events WHERE run_id = 'acme/chain-one-0000000001' AND type = 'interrupt.resolved'),
          'receipt_event_hash: the receipt names the interrupt.resolved event''s hash');
SELECT is((:'answer'::jsonb -> 'receipt') - 'interruptId' - 'event',
          '{"kind": "approval", "runId": "acme/chain-one-0000000001", "action": "accept", "nodeId": "gate", "decision": "granted",
            "voters": [{"action": "accept", "subject": {"kind": "user", "lane": "oauth2", "issuer": "urn:openwop-interrupt:jwt", "tenant": "acme", "subjectId": "ann"}, "authenticatedBy": "jwt"}],
            "resolvedBy": {"kind": "user", "lane": "oauth2", "issuer": "urn:openwop-interrupt:jwt", "tenant": "acme", "subjectId": "ann"},
            "authenticatedBy": "jwt"}',
          'receipt_members: gate, decision, voters with how each was authenticated, who resolved');
SELECT is((:'answer'::jsonb #> '{receipt,event}') - 'hash', '{"type": "interrupt.resolved", "sequence": 4}', '... and the event''s place');

-- a quorum gate: every counted voter, in voter order; a withdrawn vote is not one
DO $$ BEGIN PERFORM pg_temp.gate('acme/chain-quorum-00000001', '{"approversList": ["ann", "bea", "cid"], "requiredApprovals": 2}');
            PERFORM pg_temp.vote('acme/chain-quorum-00000001', 'cid');
            PERFORM pg_temp.as_request(pg_temp.jwt('cid'), $q$ SELECT openwop.withdraw_vote('acme/chain-quorum-00000001', 'gate') $q$);
            PERFORM pg_temp.vote('acme/chain-quorum-00000001', 'bea'); END $$;
SELECT is((SELECT jsonb_agg(jsonb_build_array(v #>> '{subject,subjectId}', v ->> 'action', v ->> 'authenticatedBy') ORDER BY ord)
             FROM jsonb_array_elements(pg_temp.vote('acme/chain-quorum-00000001', 'ann') #> '{receipt,voters}') WITH ORDINALITY AS x(v, ord)),
          '[["ann", "accept", "jwt"], ["bea", "accept", "jwt"]]',
          'receipt_voters_counted: a quorum gate''s receipt lists each counted voter; a withdrawn vote is not one');

-- a delegate's vote: on whose behalf
DO $$ BEGIN PERFORM pg_temp.gate('acme/chain-delegate-000001', '{"approversList": ["fay", "gil"], "requiredApprovals": 2}');
            PERFORM pg_temp.as_request(pg_temp.jwt('fay'), $q$ SELECT openwop.delegate_approvals('dave', now() - interval '1 hour', now() + interval '1 day') $q$);
            PERFORM pg_temp.vote('acme/chain-delegate-000001', 'dave'); END $$;
SELECT is((SELECT jsonb_agg(jsonb_build_array(v #>> '{subject,subjectId}', v ->> 'onBehalfOf') ORDER BY ord)
             FROM jsonb_array_elements(pg_temp.vote('acme/chain-delegate-000001', 'gil') #> '{receipt,voters}') WITH ORDINALITY AS x(v, ord)),
          '[["dave", "fay"], ["gil", null]]', 'receipt_on_behalf_of: a delegate''s vote names its delegator');

-- a SQL login and a token name how they were authenticated
DO $$ BEGIN PERFORM pg_temp.gate('acme/chain-login-00000001', '{}'); END $$;
SELECT is(openwop.resolve_interrupt('acme/chain-login-00000001', 'gate', '{"action": "reject"}') #>> '{receipt,authenticatedBy}', 'sql-login',
          'receipt_authenticated_by: a SQL login is sql-login');
DO $$ BEGIN PERFORM pg_temp.gate('acme/chain-token-00000001', '{}');
            IF NOT EXISTS (SELECT FROM openwop.signing_keys WHERE retired_at IS NULL) THEN PERFORM openwop.add_signing_key('k-chain'); END IF; END $$;
SELECT openwop.mint_interrupt_token((SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/chain-token-00000001'), 'resolve', NULL, 'ann') AS token \gset
SELECT is(openwop.resolve_interrupt_by_token(:'token', '{"action": "accept"}') #>> '{receipt,voters,0,authenticatedBy}', 'interrupt-token',
          '... a token minted for a principal is interrupt-token');

-- a bare token's holder learns no voter's name (the review's attack): actions and how authenticated only
DO $$ BEGIN PERFORM pg_temp.gate('acme/chain-bare-000000001', '{"requiredApprovals": 2}');
            PERFORM pg_temp.vote('acme/chain-bare-000000001', 'ann'); END $$;
SELECT openwop.mint_interrupt_token((SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/chain-bare-000000001')) AS bare \gset
SELECT is(openwop.resolve_interrupt_by_token(:'bare', '{"action": "accept"}') #> '{receipt,voters}',
          '[{"action": "accept", "authenticatedBy": "jwt"}, {"action": "accept", "authenticatedBy": "bare-token"}]',
          'receipt_bare_token_names_nobody: a bare token''s receipt lists the votes without the voters'' subjects');

-- a policy pinned on the gate: its name and version
CREATE ROLE tap_chain_dba LOGIN;
GRANT openwop_policy_admin TO tap_chain_dba;
SELECT pg_temp.as_login('tap_chain_dba', 'acme', $q$ SELECT openwop.set_approval_policy('chain-two', '{"appliesTo": {"workflowId": "chain", "nodeId": "*"}, "requiredApprovals": 2}') $q$);
DO $$ BEGIN PERFORM pg_temp.gate('acme/chain-policy-0000001', '{"approversList": ["ann", "bea"]}');
            PERFORM pg_temp.vote('acme/chain-policy-0000001', 'ann'); END $$;
SELECT is((pg_temp.vote('acme/chain-policy-0000001', 'bea') #> '{receipt,policy}') - 'policies', '{"name": "chain-two", "version": 1}',
          'receipt_policy_version: the policy the gate pinned, by name and version');
SELECT pg_temp.as_login('tap_chain_dba', 'acme', $q$ SELECT openwop.retire_approval_policy('chain-two') $q$);

-- forks are chained anew (an interrupt's id and a cause are the fork's)
SELECT openwop.fork_run('acme/chain-one-0000000001', '{"mode": "branch", "fromSeq": 4}') ->> 'runId' AS branch \gset
SELECT openwop.fork_run('acme/chain-one-0000000001', '{"mode": "replay", "fromSeq": 4}') ->> 'runId' AS replay \gset
SELECT is(pg_temp.verify(:'branch') ->> 'valid', 'true', 'chain_fork_branch: a branch''s chain verifies');
SELECT is(pg_temp.verify(:'replay') ->> 'valid', 'true', 'chain_fork_replay: a replay''s chain, its payloads rewritten and events appended, verifies');
SELECT is((SELECT jsonb_build_array(f.sequence, f.hash = s.hash) FROM openwop.events f JOIN openwop.events s ON s.sequence = f.sequence
             WHERE f.run_id = :'replay' AND s.run_id = 'acme/chain-one-0000000001' AND f.payload <> s.payload ORDER BY f.sequence LIMIT 1),
          '[3, false]', '... the first copy naming the fork''s interrupt has a hash of its own');

-- tampering, as a superuser with the append-only trigger disabled: reported at that event
ALTER TABLE openwop.events DISABLE TRIGGER events_append_only_row;
CREATE FUNCTION pg_temp.tampered(change text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE r jsonb;
BEGIN
  EXECUTE change;
  r := pg_temp.verify('acme/chain-one-0000000001');
  RAISE EXCEPTION USING MESSAGE = r::text, ERRCODE = 'P0001';
EXCEPTION WHEN raise_exception THEN
  RETURN SQLERRM::jsonb;   -- the change is undone with the block
END $$;
SELECT is(pg_temp.tampered($q$ UPDATE openwop.events SET type = 'node.failed' WHERE run_id = 'acme/chain-one-0000000001' AND sequence = 3 $q$),
          '{"valid": false, "events": 6, "brokenAt": 3}', 'verify_run_tampered_type');
SELECT is(pg_temp.tampered($q$ UPDATE openwop.events SET node_id = 'other' WHERE run_id = 'acme/chain-one-0000000001' AND sequence = 2 $q$),
          '{"valid": false, "events": 6, "brokenAt": 2}', 'verify_run_tampered_node_id');
SELECT is(pg_temp.tampered($q$ UPDATE openwop.events SET node_id = NULL WHERE run_id = 'acme/chain-one-0000000001' AND sequence = 1 $q$),
          '{"valid": false, "events": 6, "brokenAt": 1}', '... set to null');
SELECT is(pg_temp.tampered($q$ UPDATE openwop.events SET payload = payload || '{"decision": "rejected"}' WHERE run_id = 'acme/chain-one-0000000001' AND sequence = 4 $q$),
          '{"valid": false, "events": 6, "brokenAt": 4}', 'verify_run_tampered_payload');
SELECT is(pg_temp.tampered($q$ UPDATE openwop.events SET created_at = created_at + interval '1 microsecond' WHERE run_id = 'acme/chain-one-0000000001' AND sequence = 0 $q$),
          '{"valid": false, "events": 6, "brokenAt": 0}', 'verify_run_tampered_created_at');
SELECT is(pg_temp.tampered($q$ UPDATE openwop.events SET schema_version = 2 WHERE run_id = 'acme/chain-one-0000000001' AND sequence = 5 $q$),
          '{"valid": false, "events": 6, "brokenAt": 5}', 'verify_run_tampered_schema_version');
SELECT is(pg_temp.tampered($q$ UPDATE openwop.events SET causation_id = 'x.1' WHERE run_id = 'acme/chain-one-0000000001' AND sequence = 3 $q$),
          '{"valid": false, "events": 6, "brokenAt": 3}', 'verify_run_tampered_causation_id');
SELECT is(pg_temp.tampered($q$ UPDATE openwop.events SET hash = sha256('x') WHERE run_id = 'acme/chain-one-0000000001' AND sequence = 2 $q$),
          '{"valid": false, "events": 6, "brokenAt": 2}', 'verify_run_tampered_hash');
SELECT is(pg_temp.tampered($q$ UPDATE openwop.events SET sequence = 60 WHERE run_id = 'acme/chain-one-0000000001' AND sequence = 2 $q$),
          '{"valid": false, "events": 6, "brokenAt": 2}', 'verify_run_tampered_sequence: an event moved leaves its place broken');
SELECT is(pg_temp.tampered($q$ UPDATE openwop.events SET run_id = 'acme/chain-elsewhere-00001' WHERE run_id = 'acme/chain-one-0000000001' AND sequence = 1 $q$),
          '{"valid": false, "events": 5, "brokenAt": 1}', 'verify_run_tampered_run_id: an event taken to another run is missing here');
SELECT is(pg_temp.tampered($q$ UPDATE openwop.events SET tenant = 'zeta' WHERE run_id = 'acme/chain-one-0000000001' AND sequence = 4 $q$),
          '{"valid": false, "events": 5, "brokenAt": 4}', 'verify_run_tampered_tenant');
SELECT is(pg_temp.tampered($q$ DELETE FROM openwop.events WHERE run_id = 'acme/chain-one-0000000001' AND sequence = 5 $q$),
          '{"valid": false, "events": 5, "brokenAt": 5}', 'verify_run_tail_deleted: the run row counts the event that is gone');
SELECT is(pg_temp.tampered($q$ UPDATE openwop.runs SET event_hash = sha256('x') WHERE run_id = 'acme/chain-one-0000000001' $q$),
          '{"valid": false, "events": 6, "brokenAt": 5}', 'verify_run_head_changed: the run row''s head is not its last event''s');
ALTER TABLE openwop.events ENABLE ALWAYS TRIGGER events_append_only_row;

-- refusals
SELECT is(pg_temp.refusal($q$ SELECT openwop.verify_run(NULL) $q$) ->> 'code', 'validation_error', 'verify_run_null: a null run id is 400');
SELECT is(pg_temp.refusal($q$ SELECT openwop.verify_run('acme/chain-none-000000001') $q$) ->> 'code', 'not_found', 'verify_run_unknown: an unknown run is 404');
SELECT is(pg_temp.refusal($q$ SELECT pg_temp.as_request('{"sub": "zed", "tenant": "zeta", "scope": "approvals:respond"}', $r$ SELECT openwop.verify_run('acme/chain-one-0000000001') $r$) $q$) ->> 'code',
          'id_tenant_mismatch', 'verify_run_other_tenant: a run of another tenant is 403');
SELECT is(pg_temp.refusal($q$ SELECT openwop.event_hash('\x00', 0, 't', NULL, '{}', now(), 1, NULL) $q$) ->> 'sqlstate', '22023',
          'event_hash_prev_length: prev must be 32 bytes');
SELECT is(pg_temp.refusal($q$ SELECT openwop.event_hash(NULL, NULL, 't', NULL, '{}', now(), 1, NULL) $q$) ->> 'sqlstate', '22004',
          'event_hash_nulls: only prev, node_id and causation_id may be null');
SELECT is(has_function_privilege('public', 'openwop.verify_run(text)', 'EXECUTE'), false, 'verify_run_not_public: granted by the DBA, like events()');

SELECT * FROM finish();
ROLLBACK;
