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
-- == openwop_api (end) ==
