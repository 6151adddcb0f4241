-- The same token check written in PL/pgSQL with pgcrypto, as a user would
-- write it over the extension's keyring: grammar and alg, the key of kid,
-- HMAC-SHA256 of "hs256.<kid>.<payload>", base64url-decoded claims.  It
-- returns what openwop.verify_interrupt_token returns.  (PL/pgSQL has no
-- constant-time comparison; this uses a plain one.)  The extension keeps
-- its secrets sealed under a passphrase SQL cannot read; the baseline reads
-- a clear copy of the bench's key from a table of its own, as a user's
-- keyring in SQL would hold it (bench.sh's fresh() fills it).
CREATE TABLE plbench.signing_keys (kid text PRIMARY KEY, secret bytea NOT NULL);

CREATE FUNCTION plbench.verify_interrupt_token(token text) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE
  m text[];
  v_secret bytea;
  v_b64 text;
  v_claims jsonb;
BEGIN
  m := regexp_match(token, '^ow2\.hs256\.([A-Za-z0-9._~-]{1,128})\.([A-Za-z0-9_-]+)\.([0-9a-f]{64})$');
  IF m IS NULL THEN
    RAISE EXCEPTION 'interrupt_token_invalid: malformed' USING ERRCODE = 'PT401';
  END IF;
  SELECT secret INTO v_secret FROM plbench.signing_keys WHERE kid = m[1];
  IF NOT FOUND THEN
    RAISE EXCEPTION 'interrupt_token_invalid: key not held' USING ERRCODE = 'PT401';
  END IF;
  IF encode(hmac(convert_to('hs256.' || m[1] || '.' || m[2], 'UTF8'), v_secret, 'sha256'), 'hex') <> m[3] THEN
    RAISE EXCEPTION 'interrupt_token_invalid: signature' USING ERRCODE = 'PT401';
  END IF;
  v_b64 := translate(m[2], '-_', '+/');
  v_b64 := v_b64 || repeat('=', (4 - length(v_b64) % 4) % 4);
  v_claims := convert_from(decode(v_b64, 'base64'), 'UTF8')::jsonb;
  IF jsonb_typeof(v_claims) <> 'object' OR NOT v_claims ?& ARRAY['i', 'r', 'n', 'e', 't']
     OR v_claims ->> 't' NOT IN ('resolve', 'inspect') THEN
    RAISE EXCEPTION 'interrupt_token_invalid: claims' USING ERRCODE = 'PT401';
  END IF;
  RETURN jsonb_build_object('interruptId', v_claims ->> 'i', 'runId', v_claims ->> 'r',
                            'nodeId', v_claims ->> 'n', 'expiresAt', v_claims ->> 'e',
                            'intent', v_claims ->> 't',
                            'expired', (v_claims ->> 'e')::timestamptz < clock_timestamp())
         || CASE WHEN v_claims ? 'p' THEN jsonb_build_object('principal', v_claims ->> 'p') ELSE '{}' END;
END $$;
