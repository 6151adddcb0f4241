/*
 * openwop_interrupt 0.4.0 -> 0.5.0: the approver's side — the inbox view
 * openwop.pending_interrupts, the FlowDrop INT-22 entry
 * openwop.flowdrop_interrupt(), and the PostgREST schema openwop_api.
 * Nothing existing changes; each part is the same as in the 0.5.0 install
 * script.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION openwop_interrupt UPDATE TO '0.5.0'" to load this file. \quit

-- == inbox: openwop.pending_interrupts (begin) ==
-- == inbox (end) ==

-- == flowdrop: openwop.flowdrop_interrupt (begin) ==
/* ------------------------------------------------------------------------
 * FlowDrop INT-22: an interrupt published as 24 keys, in the rule's order,
 * every one present.  json, not jsonb: the key order is normative.  Reads
 * need the approvals:respond scope or EXECUTE on openwop.events()
 * (docs/flowdrop.md).
 * ------------------------------------------------------------------------ */

CREATE FUNCTION openwop.flowdrop_interrupt(interrupt_id text)
    RETURNS json AS 'MODULE_PATHNAME', 'ow_flowdrop_interrupt'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION openwop.flowdrop_interrupt(text) IS
  'FlowDrop INT-22 entry of an interrupt of the caller''s tenant: id, type, status, message, nodeId, workflowId, pipelineId, sessionId, schema, options, context, defaultValue, responseData, createdAt, expiresAt, scheduledAt, resolvedAt, resolvedBy, direction, jobId, targetPipelineId, initiatorUid, reason, linkedInterruptId, in that order, null when unset; timestamps ISO-8601 UTC; no deadline is expiresAt null (INT-23). Needs approvals:respond or EXECUTE on openwop.events(); another tenant''s id is id_tenant_mismatch (PT403), an unknown one not_found (PT404).';

CREATE FUNCTION openwop.flowdrop_interrupts(interrupt_ids text[])
    RETURNS json AS 'MODULE_PATHNAME', 'ow_flowdrop_interrupts'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION openwop.flowdrop_interrupts(text[]) IS
  'The list form of flowdrop_interrupt: a JSON array of the INT-22 entries of interrupt_ids (at most 1000 ids "<tenant>/<opaque>"), in the order given, read by one statement; ids of another tenant or of no interrupt are left out, and the answer is an array even when none is left. Needs approvals:respond or EXECUTE on openwop.events().';

REVOKE ALL ON FUNCTION
    openwop.flowdrop_interrupt(text),
    openwop.flowdrop_interrupts(text[])
FROM PUBLIC;
-- == flowdrop (end) ==

-- == openwop_api: the PostgREST schema (begin) ==

/* ------------------------------------------------------------------------
 * openwop_api: the resolve surfaces over PostgREST (docs/postgrest.md).
 * PostgREST serves this schema alone (db-schemas = openwop_api): one
 * function per operation of the OpenWOP interrupt spec, named after it,
 * so the routes are POST /rpc/resolveInterruptByRun,
 * GET /rpc/inspectInterruptByToken?token=... and
 * POST /rpc/resolveInterruptByToken.  No table is reachable through it.
 *
 * Privileges: no role has USAGE on the schema until the DBA grants it to
 * PostgREST's web roles (db-anon-role and the roles JWTs name); that
 * grant is the only one they need.  EXECUTE stays with PUBLIC: these
 * functions call the openwop entry points directly (EXECUTE on those is
 * not needed), which decide who is calling and what it may do as they do
 * for every caller.
 *
 * A POST function takes the body whole (its one unnamed jsonb parameter:
 * PostgREST passes a JSON body so), reads the Idempotency-Key header from
 * request.headers, and answers a refusal with the spec's envelope
 * {error, message, details} and response.status.
 * ------------------------------------------------------------------------ */

CREATE SCHEMA openwop_api;
COMMENT ON SCHEMA openwop_api IS
E'OpenWOP interrupt: resolve surfaces\n'
 'The resolve operations of the OpenWOP interrupt spec ("Resolve surfaces"): answer the pending interrupt of a run''s node with the approvals:respond scope, or inspect and answer one interrupt with a signed token. '
 'Refusals answer the spec''s HTTP status with the body {error, message, details}.';

CREATE FUNCTION openwop_api."resolveInterruptByRun"(jsonb)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_api_resolve_by_run'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop_api."resolveInterruptByRun"(jsonb) IS
E'resolveInterruptByRun: answer the pending interrupt of a node of a run\n'
 'POST a JSON body {"runId": "<tenant>/<id>", "nodeId": "<node>", "resumeValue": <the answer>} and nothing else; an optional Idempotency-Key header makes a retry safe. '
 'The caller needs the approvals:respond scope (the JWT scope claim) and, on an approval gate, must be eligible; the host records who decided and when. '
 '200: {status, runId, nodeId, interruptId, kind, decision?, action?, resolvedBy, runStatus, sequence}, or {status: "pending", tally} for a vote that decides nothing yet; a replayed response carries the header OpenWOP-Idempotent-Replay: true. '
 'Refusals, as {error, message, details}: 400 validation_error, idempotency_key_invalid; 401 identity_unresolvable; 403 forbidden, id_tenant_mismatch; 404 not_found; 409 interrupt_already_resolved, idempotency_key_mismatch, idempotency_in_flight. '
 'It calls openwop.resolve_interrupt.';

CREATE FUNCTION openwop_api."inspectInterruptByToken"(token text DEFAULT NULL)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_api_inspect_by_token'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION openwop_api."inspectInterruptByToken"(text) IS
E'inspectInterruptByToken: read the interrupt a signed token names\n'
 'GET with the query parameter token=ow2.hs256.<kid>.<payload>.<mac>; the token is the credential, no JWT is needed. '
 '200: the InterruptPayload {kind, key, data, resumeSchema?, timeoutMs?}. '
 'Refusals, as {error, message, details}: 401 interrupt_token_invalid; 404 not_found; 409 interrupt_already_resolved; 410 interrupt_expired. '
 'It calls openwop.inspect_interrupt.';

CREATE FUNCTION openwop_api."resolveInterruptByToken"(jsonb)
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_api_resolve_by_token'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION openwop_api."resolveInterruptByToken"(jsonb) IS
E'resolveInterruptByToken: answer the interrupt a signed token names\n'
 'POST a JSON body {"token": "ow2.hs256.<kid>.<payload>.<mac>", "resumeValue": <the answer>} and nothing else; an optional Idempotency-Key header makes a retry safe. The token is the credential, no JWT is needed; a token minted for a principal answers as that principal. '
 '200: as resolveInterruptByRun; a replayed response carries the header OpenWOP-Idempotent-Replay: true. '
 'Refusals, as {error, message, details}: 400 validation_error, idempotency_key_invalid; 401 interrupt_token_invalid; 403 forbidden (an inspect token, an ineligible principal); 404 not_found; 409 interrupt_already_resolved, idempotency_key_mismatch, idempotency_in_flight; 410 interrupt_expired. '
 'It calls openwop.resolve_interrupt_by_token.';

-- The inbox joins this schema as a view over openwop.pending_interrupts
-- (openwop_api.pending_interrupts, GET /pending_interrupts), added here
-- with the inbox; SELECT on it is granted to the web roles like USAGE.

-- == openwop_api (end) ==
