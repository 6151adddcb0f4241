/*
 * openwop_interrupt 0.7.0 -> 0.8.0: every kind and every replay (issue 16).
 * Credential interrupts are confirmed by the host's OAuth callback.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION openwop_interrupt UPDATE TO '0.8.0'" to load this file. \quit

-- == credentials: confirm_credential (begin) ==
/*
 * The host's OAuth callback, once its token request succeeded, resolves a
 * credential interrupt as the host: a caller's own "authorized" is always
 * refused.  Whoever may call it can hand a run a credential, so EXECUTE is
 * granted to nobody; a DBA grants it to the callback's login alone.
 */
CREATE FUNCTION openwop.confirm_credential(run_id text, node_id text, idempotency_key text DEFAULT NULL)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_confirm_credential'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop.confirm_credential(text, text, text) IS
  'The host''s OAuth callback confirms that a credential now resolves for the credential interrupt of node_id: it is resolved with {outcome: "authorized"} as the host (resolvedBy: the host subject "credential") and the node resumes. Grant EXECUTE only to the callback''s login. Honors an Idempotency-Key.';
REVOKE ALL ON FUNCTION openwop.confirm_credential(text, text, text) FROM PUBLIC;

COMMENT ON FUNCTION openwop.capabilities() IS
  'The facets this host advertises: interrupt {refKinds, callbackDelivery, tokenAlgs}, and oauth {credentialInterrupt} while openwop.credential_interrupts is on.';
-- == credentials: confirm_credential (end) ==
