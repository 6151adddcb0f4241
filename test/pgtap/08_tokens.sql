-- Signed interrupt tokens (the OpenWOP interrupt page, "Tokens"): the
-- recipe checked against the worked example and pgcrypto, the order of
-- checks, lifetimes, the keyring, eligibility carried by the token, and
-- idempotency.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir refusal.psql
CREATE EXTENSION IF NOT EXISTS pgcrypto;

-- a token built with pgcrypto alone: the independent implementation of the recipe
CREATE FUNCTION pg_temp.pgcrypto_token(kid text, secret text, claims text) RETURNS text LANGUAGE sql AS $$
  SELECT 'ow2.hs256.' || kid || '.' || p || '.' || encode(hmac('hs256.' || kid || '.' || p, secret, 'sha256'), 'hex')
    FROM (SELECT rtrim(translate(encode(convert_to(claims, 'UTF8'), 'base64'), E'+/\n', '-_'), '=') AS p) x
$$;
CREATE FUNCTION pg_temp.iso(t timestamptz) RETURNS text LANGUAGE sql AS $$
  SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;
CREATE FUNCTION pg_temp.claims(token text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT convert_from(decode(rpad(translate(split_part(token, '.', -2), '-_', '+/'),
                                  (length(split_part(token, '.', -2)) + 3) / 4 * 4, '='), 'base64'), 'UTF8')::jsonb
$$;
CREATE FUNCTION pg_temp.gate(run text, data jsonb, extra jsonb DEFAULT '{}') RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  PERFORM openwop.create_run('tokens', jsonb_build_object('runId', run));
  PERFORM openwop.start_node(run, 'gate');
  RETURN openwop.interrupt(run, 'gate', jsonb_build_object('kind', 'approval', 'data',
           jsonb_build_object('artifactId', 'a', 'artifactType', 'doc', 'title', 'T',
                              'actions', '["accept", "reject"]'::jsonb) || data) || extra) #>> '{metadata,interrupt,id}';
END $$;

-- the worked example (test/fuzz/corpus/worked-example): key k2026a, interrupt acme/int-0123456789abcdef
SELECT is(openwop.add_signing_key('k2026a', 'example-secret-do-not-use'::bytea), 'k2026a', 'add_signing_key with a given secret');
DO $$ BEGIN PERFORM pg_temp.gate('acme/run-0123456789abcdef', '{}'); END $$;
UPDATE openwop.interrupts SET interrupt_id = 'acme/int-0123456789abcdef' WHERE run_id = 'acme/run-0123456789abcdef';
SELECT is(pg_temp.pgcrypto_token('k2026a', 'example-secret-do-not-use',
            '{"i":"acme/int-0123456789abcdef","r":"acme/run-0123456789abcdef","n":"gate","e":"2026-10-01T12:30:00.000Z","t":"resolve"}'),
          'ow2.hs256.k2026a.eyJpIjoiYWNtZS9pbnQtMDEyMzQ1Njc4OWFiY2RlZiIsInIiOiJhY21lL3J1bi0wMTIzNDU2Nzg5YWJjZGVmIiwibiI6ImdhdGUiLCJlIjoiMjAyNi0xMC0wMVQxMjozMDowMC4wMDBaIiwidCI6InJlc29sdmUifQ.817d0bf3fbae75b9e082f149f8366288c43bbfbce68666856ad66c21830d3b5a',
          'the recipe with pgcrypto reproduces the worked example byte for byte');
SELECT is(pg_temp.refusal($$ SELECT openwop.inspect_interrupt('ow2.hs256.k2026a.eyJpIjoiYWNtZS9pbnQtMDEyMzQ1Njc4OWFiY2RlZiIsInIiOiJhY21lL3J1bi0wMTIzNDU2Nzg5YWJjZGVmIiwibiI6ImdhdGUiLCJlIjoiMjAyNi0xMC0wMVQxMjozMDowMC4wMDBaIiwidCI6InJlc29sdmUifQ.817d0bf3fbae75b9e082f149f8366288c43bbfbce68666856ad66c21830d3b5a') $$)->>'code',
          'interrupt_expired', 'the worked example verifies in C (its MAC is accepted; it expired on 2026-10-01: 410)');
SELECT is(openwop.inspect_interrupt(pg_temp.pgcrypto_token('k2026a', 'example-secret-do-not-use',
            format('{"i":"acme/int-0123456789abcdef","r":"acme/run-0123456789abcdef","n":"gate","e":"%s","t":"resolve"}',
                   pg_temp.iso(clock_timestamp() + interval '1 hour')))) ->> 'kind',
          'approval', 'a token computed independently with pgcrypto hmac() is accepted');

-- order of checks: 401 before any lookup
SELECT is(pg_temp.refusal($$ SELECT openwop.inspect_interrupt('b3BlbndvcC1jb25mb3JtYW5jZQ.0123456789abcdef0123456789abcdef') $$),
          '{"sqlstate": "PT401", "code": "interrupt_token_invalid", "details": {}}',
          'openwop.requirement.0170.interrupt-token-scheme.unprefixed-refused: a v1 (unprefixed) token is 401');
SELECT is(pg_temp.refusal($$ SELECT openwop.inspect_interrupt('ow2.hs256.nokid.b3BlbndvcC1jb25mb3JtYW5jZQ.0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef') $$)->>'sqlstate',
          'PT401', 'openwop.requirement.0170.interrupt-token-scheme.unheld-kid-refused: an unheld kid is 401, never 404');
SELECT is(pg_temp.refusal($$ SELECT openwop.inspect_interrupt('ow2.hs512.k2026a.cA.0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef') $$)->>'code',
          'interrupt_token_invalid', 'an alg that is not advertised is 401');
SELECT is(pg_temp.refusal($$ SELECT openwop.inspect_interrupt('ow2.hs256.k2026a.cA.XYZ') $$)->>'code',
          'interrupt_token_invalid', 'a malformed MAC is 401');
SELECT is(pg_temp.refusal(format('SELECT openwop.inspect_interrupt(%L)',
            pg_temp.pgcrypto_token('k2026a', 'wrong-secret-0123456789', '{"i":"acme/int-0123456789abcdef","r":"acme/run-0123456789abcdef","n":"gate","e":"2099-01-01T00:00:00.000Z","t":"resolve"}')))->>'code',
          'interrupt_token_invalid', 'a wrong MAC is 401');
SELECT is(pg_temp.refusal(format('SELECT openwop.inspect_interrupt(%L)',
            pg_temp.pgcrypto_token('k2026a', 'example-secret-do-not-use', '{"i":"acme/no-such-interrupt-0001","r":"acme/run-0123456789abcdef","n":"gate","e":"2099-01-01T00:00:00.000Z","t":"resolve"}')))->>'sqlstate',
          'PT404', 'a valid token for an unknown interrupt is 404');
SELECT is(pg_temp.refusal(format('SELECT openwop.resolve_interrupt_by_token(%L, %L)',
            pg_temp.pgcrypto_token('k2026a', 'example-secret-do-not-use', format('{"i":"acme/int-0123456789abcdef","r":"acme/run-0123456789abcdef","n":"gate","e":"%s","t":"resolve"}', pg_temp.iso(clock_timestamp() - interval '1 second'))),
            '{"action": "accept"}'))->>'code',
          'interrupt_expired', 'past expiresAt: 410 interrupt_expired');
SELECT is(pg_temp.refusal(format('SELECT openwop.resolve_interrupt_by_token(%L, %L)',
            openwop.mint_interrupt_token('acme/int-0123456789abcdef', 'inspect'), '{"action": "accept"}'))->>'sqlstate',
          'PT403', 'an inspect-intent token used to resolve is 403');

-- mint, inspect, resolve, then the token is spent
DO $$ BEGIN PERFORM pg_temp.gate('acme/tok-run-0000000001', '{}'); END $$;
CREATE TEMP TABLE t1 AS SELECT interrupt_id AS id, openwop.mint_interrupt_token(interrupt_id) AS token
  FROM openwop.interrupts WHERE run_id = 'acme/tok-run-0000000001';
SELECT matches((SELECT token FROM t1), '^ow2\.hs256\.k2026a\.[A-Za-z0-9_-]+\.[0-9a-f]{64}$', 'mint_interrupt_token: ow2.hs256.<kid>.<payload>.<mac>');
SELECT is((SELECT pg_temp.claims(token) - 'e' FROM t1),
          (SELECT jsonb_build_object('i', id, 'r', 'acme/tok-run-0000000001', 'n', 'gate', 't', 'resolve') FROM t1),
          'the claims are {i, r, n, e, t}');
SELECT ok((SELECT (pg_temp.claims(token)->>'e')::timestamptz BETWEEN clock_timestamp() + interval '29 minutes 50 seconds'
                                                                  AND clock_timestamp() + interval '30 minutes 10 seconds' FROM t1),
          'the default lifetime is 30 minutes');
SELECT is((SELECT openwop.inspect_interrupt(token) FROM t1),
          (SELECT payload FROM openwop.interrupts WHERE interrupt_id = (SELECT id FROM t1)),
          'inspect_interrupt returns the InterruptPayload');
SELECT is((SELECT openwop.resolve_interrupt_by_token(token, '{"action": "accept"}') ->> 'decision' FROM t1), 'granted',
          'resolve_interrupt_by_token resolves through the same path');
SELECT is((SELECT e->'payload'->'resolvedBy' FROM openwop.events('acme/tok-run-0000000001') e WHERE e->>'type' = 'interrupt.resolved'),
          '{"issuer": "urn:openwop-interrupt:anon-surface", "subjectId": "token-holder", "tenant": "acme", "lane": "anonymous", "kind": "anonymous"}',
          'the resolver of an anonymous token is the token holder, an anonymous Subject');
SELECT is(pg_temp.refusal((SELECT format('SELECT openwop.resolve_interrupt_by_token(%L, %L)', token, '{"action": "accept"}') FROM t1))->>'code',
          'interrupt_already_resolved', 'a token reused after its interrupt resolved is 409');
SELECT is(pg_temp.refusal((SELECT format('SELECT openwop.inspect_interrupt(%L)', token) FROM t1))->>'code',
          'interrupt_already_resolved', '... for inspect too');

-- invalidated by the run ending: cancelled, completed or failed
DO $$ BEGIN PERFORM pg_temp.gate('acme/tok-run-0000000002', '{}');
  PERFORM pg_temp.gate('acme/tok-run-0000000003', '{}');
  PERFORM pg_temp.gate('acme/tok-run-0000000004', '{}'); END $$;
CREATE TEMP TABLE t2 AS SELECT run_id, openwop.mint_interrupt_token(interrupt_id) AS token
  FROM openwop.interrupts WHERE run_id IN ('acme/tok-run-0000000002', 'acme/tok-run-0000000003', 'acme/tok-run-0000000004');
DO $$ BEGIN PERFORM openwop.cancel_run('acme/tok-run-0000000002');
  PERFORM openwop.complete_run('acme/tok-run-0000000003');
  PERFORM openwop.fail_run('acme/tok-run-0000000004', '{"code": "x", "message": "y"}'); END $$;
SELECT is((SELECT array_agg(pg_temp.refusal(format('SELECT openwop.resolve_interrupt_by_token(%L, %L)', token, '{"action": "accept"}'))->>'code' ORDER BY run_id) FROM t2),
          ARRAY['interrupt_already_resolved', 'interrupt_already_resolved', 'interrupt_already_resolved'],
          'a token is invalidated when its run is cancelled, completed or failed: 409');

-- lifetime caps
DO $$ BEGIN PERFORM pg_temp.gate('acme/tok-run-0000000005', '{}', '{"timeoutMs": 60000}'); END $$;
SELECT ok((SELECT (pg_temp.claims(openwop.mint_interrupt_token(interrupt_id, 'resolve', interval '2 hours'))->>'e')::timestamptz
                  <= expires_at FROM openwop.interrupts WHERE run_id = 'acme/tok-run-0000000005'),
          'a token never outlives its interrupt: capped at the deadline');
SET LOCAL openwop.token_max_ttl = '1h';
DO $$ BEGIN PERFORM pg_temp.gate('acme/tok-run-0000000006', '{}'); END $$;
SELECT ok((SELECT (pg_temp.claims(openwop.mint_interrupt_token(interrupt_id, 'resolve', interval '3 days'))->>'e')::timestamptz
                  <= clock_timestamp() + interval '1 hour 1 second' FROM openwop.interrupts WHERE run_id = 'acme/tok-run-0000000006'),
          'a requested lifetime is capped at openwop.token_max_ttl');
RESET openwop.token_max_ttl;
SELECT is(pg_temp.refusal($$ SELECT openwop.mint_interrupt_token((SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/tok-run-0000000006'), 'resolve', interval '-1 minute') $$)->>'code',
          'validation_error', 'a non-positive ttl is refused');
SELECT is(pg_temp.refusal($$ SELECT openwop.mint_interrupt_token((SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/tok-run-0000000006'), 'delete') $$)->>'code',
          'validation_error', 'an unknown intent is refused');
SELECT is(pg_temp.refusal($$ SELECT openwop.mint_interrupt_token('globex/tok-interrupt-000001') $$)->>'code',
          'id_tenant_mismatch', 'minting for another tenant''s interrupt is 403');

-- eligibility: no token bypasses approversList, groups or roles
DO $$ BEGIN PERFORM pg_temp.gate('acme/tok-run-0000000007', '{"approversList": ["alice@example.org"], "requiredApprovals": 1}'); END $$;
SELECT is(pg_temp.refusal($$ SELECT openwop.mint_interrupt_token((SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/tok-run-0000000007')) $$)->'details'->>'field',
          'principal', 'a resolve token for a gate that restricts its approvers needs a named principal');
SELECT is(pg_temp.refusal($$ SELECT openwop.mint_interrupt_token((SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/tok-run-0000000007'), 'resolve', NULL, 'mallory@example.org') $$)->>'code',
          'forbidden', '... and refuses one who is not eligible');
CREATE TEMP TABLE t3 AS SELECT openwop.mint_interrupt_token(interrupt_id, 'resolve', NULL, 'alice@example.org') AS token
  FROM openwop.interrupts WHERE run_id = 'acme/tok-run-0000000007';
SELECT is((SELECT pg_temp.claims(token)->>'p' FROM t3), 'alice@example.org', 'the token carries the eligible principal');
SELECT is((SELECT openwop.resolve_interrupt_by_token(token, '{"action": "accept"}') ->> 'decision' FROM t3), 'granted',
          'a token for an eligible principal resolves');
SELECT is((SELECT e->'payload'->'resolvedBy' FROM openwop.events('acme/tok-run-0000000007') e WHERE e->>'type' = 'interrupt.resolved'),
          '{"issuer": "urn:openwop-interrupt:interrupt-token", "subjectId": "alice@example.org", "tenant": "acme", "lane": "api-key", "kind": "user"}',
          '... recorded as that principal, acting through a token this host issued');
SELECT ok(openwop.mint_interrupt_token((SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/tok-run-0000000006'), 'inspect') IS NOT NULL,
          'an inspect token needs no principal');
DO $$ BEGIN PERFORM pg_temp.gate('acme/tok-run-0000000011', '{"approverGroupRefs": ["finance"]}');
            PERFORM openwop.add_group_member('finance', 'dave@example.org'); END $$;
SELECT is(pg_temp.claims(openwop.mint_interrupt_token((SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/tok-run-0000000011'),
                                                      'resolve', NULL, 'dave@example.org'))->>'p',
          'dave@example.org', 'a resolve token for a group gate is minted for a member of the group');
SELECT is(pg_temp.refusal($$ SELECT openwop.mint_interrupt_token((SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/tok-run-0000000011'), 'resolve', NULL, 'erin@example.org') $$)->>'code',
          'forbidden', '... and refused for anyone else');

-- idempotency on the token surface
DO $$ BEGIN PERFORM pg_temp.gate('acme/tok-run-0000000008', '{}'); END $$;
CREATE TEMP TABLE t4 AS SELECT openwop.mint_interrupt_token(interrupt_id) AS token FROM openwop.interrupts WHERE run_id = 'acme/tok-run-0000000008';
CREATE TEMP TABLE t5 AS SELECT openwop.resolve_interrupt_by_token(token, '{"action": "accept"}', 'tok-idem-00000000000000000001') AS r FROM t4;
SELECT is((SELECT openwop.resolve_interrupt_by_token(token, '{"action": "accept"}', 'tok-idem-00000000000000000001') FROM t4),
          (SELECT r || '{"idempotentReplay": true}' FROM t5), 'a token resolve repeated with its key replays the stored response');

-- the keyring.  The test cluster's passphrase is in the file
-- openwop.key_encryption_key_file names (test/run); pgcrypto reads it back.
CREATE FUNCTION pg_temp.kek() RETURNS text LANGUAGE sql AS $$
  SELECT rtrim(pg_read_file(current_setting('openwop.key_encryption_key_file')), E'\n')
$$;
DO $$ BEGIN PERFORM openwop.add_signing_key('k-generated'); END $$;
SELECT is(length((SELECT pgp_sym_decrypt_bytea(secret, pg_temp.kek()) FROM openwop.signing_keys WHERE kid = 'k-generated')), 32,
          'a generated secret is 32 random bytes');
SELECT ok((SELECT bool_and(encrypted AND position('example-secret-do-not-use'::bytea IN secret) = 0
                           AND pgp_sym_decrypt_bytea(secret, pg_temp.kek()) IS NOT NULL)
             FROM openwop.signing_keys),
          'signing_secret_never_stored_in_clear: every secret is stored encrypted under the passphrase');
SELECT is(split_part(openwop.mint_interrupt_token((SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/tok-run-0000000006')), '.', 3),
          'k-generated', 'the newest active key mints');
CREATE TEMP TABLE t6 AS SELECT openwop.mint_interrupt_token(interrupt_id) AS token FROM openwop.interrupts WHERE run_id = 'acme/tok-run-0000000006';
SELECT lives_ok($$ SELECT openwop.retire_signing_key('k-generated') $$, 'retire_signing_key');
SELECT is(split_part(openwop.mint_interrupt_token((SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/tok-run-0000000006')), '.', 3),
          'k2026a', 'a retired key no longer mints');
SELECT is((SELECT openwop.inspect_interrupt(token) ->> 'kind' FROM t6), 'approval', 'a retired key keeps verifying its tokens');
UPDATE openwop.signing_keys SET verify_until = now() - interval '1 second' WHERE kid = 'k-generated';
SELECT is(pg_temp.refusal((SELECT format('SELECT openwop.inspect_interrupt(%L)', token) FROM t6))->>'sqlstate', 'PT401',
          'once its tokens can no longer be valid, a retired key is not held: 401');
SELECT is(pg_temp.refusal($$ SELECT openwop.retire_signing_key('no-such-kid') $$)->>'code', 'not_found', 'retiring an unknown key is 404');

-- a key retired at once (revoked): its tokens stop verifying from the commit on
DO $$ BEGIN PERFORM openwop.add_signing_key('k-leaked'); END $$;
CREATE TEMP TABLE t_leaked AS SELECT openwop.mint_interrupt_token(interrupt_id, 'inspect') AS token FROM openwop.interrupts WHERE run_id = 'acme/tok-run-0000000006';
SELECT is((SELECT split_part(token, '.', 3) FROM t_leaked), 'k-leaked', 'the leaked key signed the token');
SELECT is((SELECT openwop.inspect_interrupt(token) ->> 'kind' FROM t_leaked), 'approval', 'its token verifies before the revocation');
SELECT lives_ok($$ SELECT openwop.retire_signing_key('k-leaked', true) $$, 'retire_signing_key(kid, immediately => true)');
SELECT is(pg_temp.refusal((SELECT format('SELECT openwop.inspect_interrupt(%L)', token) FROM t_leaked))->>'sqlstate', 'PT401',
          'revoked_key_stops_verifying_at_once: a token of a revoked key is 401 at once');
SELECT is((SELECT (state, secret IS NULL, verify_until IS NULL, retired_at IS NOT NULL)::text FROM openwop.signing_keys WHERE kid = 'k-leaked'),
          '(revoked,t,t,t)', 'a revoked key has its secret erased');
SELECT is(split_part(openwop.mint_interrupt_token((SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/tok-run-0000000006')), '.', 3),
          'k2026a', 'a revoked key no longer mints');
SELECT is(pg_temp.refusal($$ SELECT openwop.retire_signing_key('k-leaked', true) $$)->>'code', 'not_found',
          'revoking a revoked key is 404');
SELECT is(pg_temp.refusal($$ SELECT openwop.retire_signing_key('k-leaked') $$)->>'code', 'not_found',
          'retiring a revoked key is 404');
-- a retired key that still verifies is revoked too
DO $$ BEGIN PERFORM openwop.add_signing_key('k-retired-leaked'); END $$;
CREATE TEMP TABLE t_retired AS SELECT openwop.mint_interrupt_token(interrupt_id, 'inspect') AS token FROM openwop.interrupts WHERE run_id = 'acme/tok-run-0000000006';
DO $$ BEGIN PERFORM openwop.retire_signing_key('k-retired-leaked'); END $$;
SELECT is((SELECT openwop.inspect_interrupt(token) ->> 'kind' FROM t_retired), 'approval', 'the retired key still verifies its token');
SELECT lives_ok($$ SELECT openwop.retire_signing_key('k-retired-leaked', true) $$, 'a retired key is revoked');
SELECT is(pg_temp.refusal((SELECT format('SELECT openwop.inspect_interrupt(%L)', token) FROM t_retired))->>'sqlstate', 'PT401',
          'revoked_retired_key_stops_verifying: the retired key''s token is 401 once it is revoked');
SELECT is(pg_temp.refusal($$ SELECT openwop.retire_signing_key(NULL, true) $$)->>'code', 'validation_error',
          'revoking a NULL kid is 400');
SELECT lives_ok($$ SELECT openwop.retire_signing_key('k2026a', NULL) $$,
          'retire_signing_key(kid, NULL) retires as retire_signing_key(kid) does');
SELECT is((SELECT state FROM openwop.signing_keys WHERE kid = 'k2026a'), 'retired', 'NULL for immediately: retired, not revoked');
DO $$ BEGIN PERFORM openwop.add_signing_key('k2026b', 'example-secret-do-not-use'::bytea); END $$;
SELECT throws_ok($$ INSERT INTO openwop.signing_keys (kid, secret, encrypted) VALUES ('k-clear', 'a-clear-secret-0123456789', false) $$,
                 '23514', NULL, 'signing_keys_sealed: not even the owner stores a secret in clear');
SELECT is(pg_temp.refusal($$ SELECT openwop.add_signing_key('k2026a') $$)->>'code', 'validation_error', 'a kid is added once');
SELECT is(pg_temp.refusal($$ SELECT openwop.add_signing_key('short', 'tiny'::bytea) $$)->'details'->>'field', 'secret',
          'a secret shorter than 16 bytes is refused');

-- secrets at rest, encrypted with pgcrypto under a passphrase read from a
-- file that only the server's OS user can read, or from a command (the
-- passphrase itself, its reload and its errors: test/checks/key_encryption.sh).
-- COPY writes files others can read (0644): such a file is refused, naming
-- the file only.
DO $$ BEGIN
  EXECUTE format('COPY (SELECT %L) TO %L', 'kek-for-the-tests', current_setting('data_directory') || '/openwop_tap_kek');
END $$;
SET LOCAL openwop.key_encryption_key_file = 'openwop_tap_kek';
SELECT throws_like($$ SELECT openwop.add_signing_key('k-kek-open', 'an-encrypted-secret-0123456789'::bytea) $$,
                   'key-encryption key file "openwop_tap_kek" must be a file owned by the database server''s user and readable by it alone',
                   'a key-encryption key file that others can read is refused');
SET LOCAL openwop.key_encryption_key_file = 'no-such-kek-file';
SELECT throws_like($$ SELECT openwop.add_signing_key('k-kek-missing', 'an-encrypted-secret-0123456789'::bytea) $$,
                   'could not read key-encryption key file "no-such-kek-file"%',
                   'a missing key-encryption key file is a clear error naming the file');
SET LOCAL openwop.key_encryption_key_file = '';
SELECT throws_ok($$ SELECT openwop.add_signing_key('k-no-kek', 'an-encrypted-secret-0123456789'::bytea) $$,
                 '55000', 'no key-encryption key is configured: signing secrets are never stored in clear',
                 'no_key_encryption_key_no_secret: without a passphrase configured, no key is added');
SELECT is((SELECT count(*) FROM openwop.signing_keys WHERE kid = 'k-no-kek'), 0::bigint, 'nothing was stored');
-- the passphrase from a command
SET LOCAL openwop.key_encryption_key_command = 'printf kek-from-a-command';
SELECT is(openwop.add_signing_key('k-kek-command', 'a-commanded-secret-0123456789'::bytea), 'k-kek-command',
          'kek_command_encrypts: a key is added under the passphrase the command prints');
SELECT is((SELECT convert_from(pgp_sym_decrypt_bytea(secret, 'kek-from-a-command'), 'UTF8') FROM openwop.signing_keys WHERE kid = 'k-kek-command'),
          'a-commanded-secret-0123456789', 'it decrypts with that passphrase');
SELECT is(split_part(openwop.mint_interrupt_token((SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/tok-run-0000000006'), 'inspect'), '.', 3),
          'k-kek-command', 'and mints');
SET LOCAL openwop.key_encryption_key_file = 'no-such-kek-file';
SELECT throws_ok($$ SELECT openwop.add_signing_key('k-kek-both', 'an-encrypted-secret-0123456789'::bytea) $$,
                 '55000', 'openwop.key_encryption_key_command and openwop.key_encryption_key_file are both set',
                 'kek_one_source: a command and a file together are refused');
SET LOCAL openwop.key_encryption_key_file = '';
SET LOCAL openwop.key_encryption_key_command = 'exit 3';
SELECT throws_ok($$ SELECT openwop.add_signing_key('k-kek-fails', 'an-encrypted-secret-0123456789'::bytea) $$,
                 '55000', 'key-encryption key command "exit 3" failed',
                 'kek_command_fails: a command that fails is a clear error naming the command');
SET LOCAL openwop.key_encryption_key_command = 'true';
SELECT throws_ok($$ SELECT openwop.add_signing_key('k-kek-empty', 'an-encrypted-secret-0123456789'::bytea) $$,
                 '55000', 'key-encryption key command "true" must give one passphrase of 1 to 1024 bytes',
                 'kek_command_empty: a command that prints nothing is refused');
SET LOCAL openwop.key_encryption_key_command = 'head -c 2000 /dev/zero | tr ''\0'' x';
SELECT throws_like($$ SELECT openwop.add_signing_key('k-kek-long', 'an-encrypted-secret-0123456789'::bytea) $$,
                   'key-encryption key command % must give one passphrase of 1 to 1024 bytes',
                   'kek_command_too_long: a passphrase over 1024 bytes is refused');
RESET openwop.key_encryption_key_command;
RESET openwop.key_encryption_key_file;

-- the token is checked first: a bad token with a bad body is still 401
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt_by_token('not-a-token', NULL, 'bad key!') $$)->>'sqlstate',
          'PT401', 'a bad token is 401 even when the resume value and idempotency key are bad too');
SELECT is(pg_temp.refusal(format('SELECT openwop.inspect_interrupt(%L)',
            pg_temp.pgcrypto_token('k2026a', 'example-secret-do-not-use', '{"i":"acme/int-0123456789abcdef","r":"acme/run-0123456789abcdef","n":"gate","e":"2099-02-30T00:00:00.000Z","t":"inspect"}')))->>'sqlstate',
          'PT401', 'a signed expiry that is not a calendar date is 401');
SELECT matches((SELECT convert_from(decode(rpad(translate(split_part(token, '.', 4), '-_', '+/'),
                                              (length(split_part(token, '.', 4)) + 3) / 4 * 4, '='), 'base64'), 'UTF8') FROM t3),
               '^\{"i":"[^"]+","r":"[^"]+","n":"gate","e":"[0-9T:.Z-]+","t":"resolve","p":"alice@example\.org"\}$',
               'the claims are written in the reference order i, r, n, e, t (then p)');

-- verify_interrupt_token: the signature and the claims, no interrupt lookup
SELECT is((SELECT openwop.verify_interrupt_token(token) - 'expiresAt' FROM t3),
          (SELECT jsonb_build_object('interruptId', pg_temp.claims(token)->>'i', 'runId', 'acme/tok-run-0000000007',
                                     'nodeId', 'gate', 'intent', 'resolve', 'principal', 'alice@example.org', 'expired', false) FROM t3),
          'verify_interrupt_token returns the claims of a token that verifies');
SELECT is(openwop.verify_interrupt_token(pg_temp.pgcrypto_token('k2026a', 'example-secret-do-not-use',
            '{"i":"acme/no-such-interrupt-0001","r":"acme/run-0123456789abcdef","n":"gate","e":"2026-10-01T12:30:00.000Z","t":"inspect"}')),
          '{"interruptId": "acme/no-such-interrupt-0001", "runId": "acme/run-0123456789abcdef", "nodeId": "gate",
            "expiresAt": "2026-10-01T12:30:00.000Z", "intent": "inspect", "expired": true}',
          '... without reading the interrupt, and says when it has expired');
SELECT is(pg_temp.refusal(format('SELECT openwop.verify_interrupt_token(%L)',
            pg_temp.pgcrypto_token('k2026a', 'wrong-secret-0123456789', '{"i":"acme/int-0123456789abcdef","r":"acme/run-0123456789abcdef","n":"gate","e":"2099-01-01T00:00:00.000Z","t":"resolve"}'))),
          '{"sqlstate": "PT401", "code": "interrupt_token_invalid", "details": {}}',
          'verify_interrupt_token: a wrong MAC is 401');
SELECT is(pg_temp.refusal('SELECT openwop.verify_interrupt_token(NULL)')->>'sqlstate', 'PT401', '... and so is no token');

-- minting refusals
SELECT is(pg_temp.refusal($$ SELECT openwop.mint_interrupt_token((SELECT id FROM t1)) $$)->>'code',
          'interrupt_already_resolved', 'minting for an interrupt that is no longer pending is 409');
DO $$ BEGIN PERFORM pg_temp.gate('acme/tok-run-0000000009', '{}', '{"timeoutMs": 600000}'); END $$;
UPDATE openwop.interrupts SET expires_at = now() - interval '1 second' WHERE run_id = 'acme/tok-run-0000000009';
SELECT is(pg_temp.refusal($$ SELECT openwop.mint_interrupt_token((SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/tok-run-0000000009')) $$)->>'code',
          'interrupt_expired', 'minting past the interrupt''s deadline is 410');
SELECT is(pg_temp.refusal($$ SELECT openwop.mint_interrupt_token((SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/tok-run-0000000006'), 'resolve', NULL, repeat('x', 257)) $$)->'details'->>'field',
          'principal', 'a principal longer than 256 bytes is refused');
SELECT is(pg_temp.refusal($$ SELECT openwop.mint_interrupt_token((SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/tok-run-0000000006'), 'resolve', NULL, 'token-holder') $$)->'details'->>'field',
          'principal', 'the anonymous voter''s name is reserved: no token names it as its principal');
SELECT ok((SELECT (pg_temp.claims(openwop.mint_interrupt_token(interrupt_id, 'inspect', interval '1 microsecond'))->>'e')::timestamptz
                  >= statement_timestamp() + interval '1 millisecond' FROM openwop.interrupts WHERE run_id = 'acme/tok-run-0000000006'),
          'a sub-millisecond ttl is rounded up: no token is born expired');

-- the reserved voter name
SELECT is(pg_temp.refusal($$ SELECT openwop.add_group_member('reviewers', 'token-holder') $$)->'details'->>'field',
          'principal', 'no group member may be called token-holder');
CREATE ROLE "token-holder";
GRANT USAGE ON SCHEMA openwop TO "token-holder";
GRANT EXECUTE ON FUNCTION openwop.resolve_interrupt(text, text, jsonb, text) TO "token-holder";
CREATE TEMP TABLE holder_outcome (r jsonb);
GRANT ALL ON holder_outcome TO "token-holder";
SET LOCAL openwop.approver_role = 'token-holder';
SET LOCAL openwop.bound_tenant = 'acme';
SET LOCAL SESSION AUTHORIZATION "token-holder";
INSERT INTO holder_outcome SELECT pg_temp.refusal($$ SELECT openwop.resolve_interrupt('acme/tok-run-0000000006', 'gate', '{"action": "accept"}') $$);
RESET SESSION AUTHORIZATION;
RESET openwop.bound_tenant;
RESET openwop.approver_role;
SELECT is((SELECT r FROM holder_outcome), '{"sqlstate": "PT403", "code": "forbidden", "details": {"subjectId": "token-holder"}}',
          'a login named token-holder cannot vote as the holders of anonymous tokens');

-- who may mint: a resolve token is a credential, issued by openwop.token_issuer_role
CREATE ROLE openwop_tap_mailer;
GRANT USAGE ON SCHEMA openwop TO openwop_tap_mailer;
GRANT EXECUTE ON FUNCTION openwop.mint_interrupt_token(text, text, interval, text) TO openwop_tap_mailer;
CREATE TEMP TABLE t7 AS SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/tok-run-0000000006';
GRANT SELECT ON t7 TO openwop_tap_mailer;
SET LOCAL ROLE openwop_tap_mailer;
SELECT is(pg_temp.refusal($$ SELECT openwop.mint_interrupt_token((SELECT interrupt_id FROM t7)) $$),
          '{"sqlstate": "PT403", "code": "forbidden", "details": {"intent": "resolve"}}',
          'minting a resolve token without openwop.token_issuer_role is 403');
SELECT ok(openwop.mint_interrupt_token((SELECT interrupt_id FROM t7), 'inspect') IS NOT NULL,
          'an inspect token needs EXECUTE only');
RESET ROLE;
CREATE ROLE openwop_token_issuer;
GRANT openwop_token_issuer TO openwop_tap_mailer;
CREATE ROLE openwop_tap_web;
GRANT USAGE ON SCHEMA openwop TO openwop_tap_web;
GRANT EXECUTE ON FUNCTION openwop.inspect_interrupt(text), openwop.resolve_interrupt_by_token(text, jsonb, text) TO openwop_tap_web;
-- EXECUTE on the keyring functions too: the owner check holds whatever EXECUTE says
GRANT EXECUTE ON FUNCTION openwop.add_signing_key(text, bytea), openwop.retire_signing_key(text) TO openwop_tap_web;
SET LOCAL ROLE openwop_tap_mailer;
CREATE TEMP TABLE t8 AS SELECT openwop.mint_interrupt_token((SELECT interrupt_id FROM t7)) AS token;
RESET ROLE;
GRANT SELECT ON t8 TO openwop_tap_web;
SET LOCAL ROLE openwop_tap_web;
SELECT is((SELECT openwop.inspect_interrupt(token) ->> 'kind' FROM t8), 'approval',
          'an issuer mints a resolve token; an ordinary role with EXECUTE inspects with it');
SELECT is((SELECT openwop.resolve_interrupt_by_token(token, '{"action": "accept"}') ->> 'decision' FROM t8), 'granted',
          '... and resolves with it, with no approver role of its own');
SELECT throws_ok($$ SELECT openwop.add_signing_key('k-by-web') $$, 'PT403', NULL,
                 'an ordinary role cannot add a signing key, even with EXECUTE');
SELECT throws_ok($$ SELECT openwop.retire_signing_key('k2026a') $$, 'PT403', NULL,
                 '... nor retire one');
SELECT throws_ok($$ SHOW openwop.key_encryption_key_file $$, '42501', NULL,
                 'an ordinary role cannot read where the key-encryption key is');
RESET ROLE;
GRANT EXECUTE ON FUNCTION openwop.export_signing_key(text), openwop.import_signing_key(text, bytea) TO openwop_tap_web;
SET LOCAL ROLE openwop_tap_web;
SELECT throws_ok($$ SELECT openwop.export_signing_key('k2026b') $$, 'PT403', NULL,
                 'export_signing_key_owner_only: an ordinary role cannot export a key, even with EXECUTE');
SELECT throws_ok($$ SELECT openwop.import_signing_key('k-by-web', '\x00'::bytea) $$, 'PT403', NULL,
                 'import_signing_key_owner_only: ... nor import one');
RESET ROLE;

-- a key sealed on one server, imported on another with the same passphrase (a router's shards)
CREATE TEMP TABLE t_sealed AS SELECT openwop.export_signing_key('k2026b') AS sealed;
SELECT is((SELECT sealed FROM t_sealed), (SELECT secret FROM openwop.signing_keys WHERE kid = 'k2026b'),
          'export_signing_key gives the key''s secret as stored: ciphertext');
SELECT is((SELECT openwop.import_signing_key('k2026b-copy', sealed) FROM t_sealed), 'k2026b-copy',
          'import_signing_key adds it under its kid');
SELECT is((SELECT convert_from(pgp_sym_decrypt_bytea(secret, pg_temp.kek()), 'UTF8') FROM openwop.signing_keys WHERE kid = 'k2026b-copy'),
          'example-secret-do-not-use', 'the imported key holds the exported secret');
SELECT is((SELECT openwop.import_signing_key('k2026b-copy', sealed) FROM t_sealed), 'k2026b-copy',
          'the same kid and ciphertext again, still active, is no error (two partitions, one database)');
SELECT is(pg_temp.refusal($$ SELECT openwop.import_signing_key('k2026b-copy', (SELECT secret FROM openwop.signing_keys WHERE kid = 'k2026a')) $$)->>'code',
          'validation_error', 'another ciphertext under a kid that exists is 400');
SELECT throws_like($$ SELECT openwop.import_signing_key('k-garbage', '\xdeadbeef'::bytea) $$,
                   'signing key "k-garbage" cannot be decrypted with the key-encryption passphrase',
                   'import_signing_key_must_decrypt: a ciphertext that does not decrypt here is refused');
SELECT is((SELECT count(*) FROM openwop.signing_keys WHERE kid = 'k-garbage'), 0::bigint, 'nothing was stored');
DO $$ BEGIN PERFORM openwop.retire_signing_key('k2026b-copy'); END $$;
SELECT is(pg_temp.refusal($$ SELECT openwop.import_signing_key('k2026b-copy', (SELECT sealed FROM t_sealed)) $$)->>'code',
          'validation_error', 'the same ciphertext onto a retired key is 400, not a silent success');
SELECT is(pg_temp.refusal($$ SELECT openwop.export_signing_key('k2026b-copy') $$)->>'code', 'not_found',
          'a retired key is not exported (404)');
SELECT is(pg_temp.refusal($$ SELECT openwop.export_signing_key('k-leaked') $$)->>'code', 'not_found',
          'nor a revoked one');

-- a retired key verifies as long as the longest token it signed, even if token_max_ttl was lowered since
DO $$ BEGIN PERFORM openwop.add_signing_key('k-long'); PERFORM pg_temp.gate('acme/tok-run-0000000010', '{}'); END $$;
DO $$ BEGIN PERFORM openwop.mint_interrupt_token(interrupt_id, 'inspect', interval '3 days')
              FROM openwop.interrupts WHERE run_id = 'acme/tok-run-0000000010'; END $$;
SET LOCAL openwop.token_max_ttl = '1h';
DO $$ BEGIN PERFORM openwop.retire_signing_key('k-long'); END $$;
SELECT ok((SELECT verify_until >= now() + interval '3 days' FROM openwop.signing_keys WHERE kid = 'k-long'),
          'retiring a key keeps it verifying until the longest-lived token it signed has expired');
RESET openwop.token_max_ttl;


-- with no active key, minting needs a capability the host lacks
UPDATE openwop.signing_keys SET state = 'retired', retired_at = now(), verify_until = now() WHERE state = 'active';
SELECT is(pg_temp.refusal($$ SELECT openwop.mint_interrupt_token((SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/tok-run-0000000010'), 'inspect') $$),
          '{"sqlstate": "PT422", "code": "capability_required", "details": {"requiredCapability": "signingKey"}}',
          'minting with no active signing key is 422');

SELECT * FROM finish();
ROLLBACK;
