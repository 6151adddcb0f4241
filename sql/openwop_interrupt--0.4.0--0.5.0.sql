/*
 * openwop_interrupt 0.4.0 -> 0.5.0: the approver's side — the inbox view
 * openwop.pending_interrupts, the FlowDrop INT-22 entry
 * openwop.flowdrop_interrupt(), the PostgREST schema openwop_api, and an
 * index that serves the Idempotency-Key retention purge.
 * Nothing existing changes; each part is the same as in the 0.5.0 install
 * script.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION openwop_interrupt UPDATE TO '0.5.0'" to load this file. \quit

-- == retention: the idempotency purge (begin) ==
/*
 * The retention purge (sweep() and the timeout worker, every pass) finds
 * expired Idempotency-Key records through this index, not by reading the
 * whole table.
 */
CREATE INDEX idempotency_keys_expiry ON openwop.idempotency_keys (expires_at);
-- == retention (end) ==

-- == inbox: openwop.pending_interrupts (begin) ==

/* ------------------------------------------------------------------------
 * The inbox: the pending interrupts the caller may decide now, in its
 * tenant (docs/inbox.md).  A plain view over openwop.interrupts; C decides
 * the caller once per statement and each row's eligibility (src/inbox.c,
 * src/approvals.c).
 * ------------------------------------------------------------------------ */

CREATE FUNCTION openwop.inbox_waiting(status text)
    RETURNS boolean AS 'MODULE_PATHNAME', 'ow_inbox_waiting'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE COST 1000000;
COMMENT ON FUNCTION openwop.inbox_waiting(text) IS
  'status = ''pending'': the predicate of index interrupts_inbox and a qual of view openwop.pending_interrupts. Its declared cost is not what it costs: PostgreSQL plans a security-barrier view for all its rows when the outer query sorts, and would then read and sort a tenant''s whole inbox for one page; an index scan on interrupts_inbox never evaluates its own predicate and every other plan would, so the cost makes the planner walk that index, in order, and stop at the page''s end.';

CREATE INDEX interrupts_inbox ON openwop.interrupts (tenant, created_at, interrupt_id)
    WHERE openwop.inbox_waiting(status);
COMMENT ON INDEX openwop.interrupts_inbox IS
  'The inbox order: a tenant''s pending interrupts, oldest request first; openwop.pending_interrupts reads a page through it.';

CREATE FUNCTION openwop.inbox_tenant()
    RETURNS text AS 'MODULE_PATHNAME', 'ow_inbox_tenant'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION openwop.inbox_tenant() IS
  'The tenant whose inbox the caller sees: its own (a request session''s JWT subject, else the session''s login, decided once per statement), or NULL for a caller without approvals:respond. Used by openwop.pending_interrupts.';

CREATE FUNCTION openwop.inbox_voter()
    RETURNS text AS 'MODULE_PATHNAME', 'ow_inbox_voter'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION openwop.inbox_voter() IS
  'The subjectId the caller''s votes are recorded under (openwop.votes.voter), or NULL for a caller without approvals:respond. Used by openwop.pending_interrupts.';

CREATE FUNCTION openwop.may_decide(tenant text, interrupt_id text, kind text, payload jsonb)
    RETURNS boolean AS 'MODULE_PATHNAME', 'ow_may_decide'
    LANGUAGE C STABLE STRICT COST 10;
COMMENT ON FUNCTION openwop.may_decide(text, text, text, jsonb) IS
  'May the caller resolve this pending interrupt now, by the rules resolve_interrupt applies: approvals:respond in the interrupt''s tenant; for an approval gate, eligibility (approversList, approverGroupRefs, approverRoleRefs; a gate naming none is open to every holder of the scope) and an answer left under openwop.max_votes_per_voter. The caller and its groups are read once per statement. Used by openwop.pending_interrupts.';

CREATE VIEW openwop.pending_interrupts WITH (security_barrier) AS
SELECT i.interrupt_id,
       i.run_id,
       i.node_id,
       i.kind,
       i.payload OPERATOR(pg_catalog.#>>) '{data,title}'::pg_catalog.text[] AS title,
       (i.payload OPERATOR(pg_catalog.->) 'data'::pg_catalog.text) OPERATOR(pg_catalog.-)
           '{approversList,approverGroupRefs,approverRoleRefs,audience}'::pg_catalog.text[] AS request,
       i.payload OPERATOR(pg_catalog.->) 'resumeSchema'::pg_catalog.text AS resume_schema,
       i.created_at AS requested_at,
       i.expires_at,
       CASE WHEN i.kind OPERATOR(pg_catalog.=) 'approval'::pg_catalog.text
            THEN COALESCE(pg_catalog.int4((i.payload OPERATOR(pg_catalog.#>) '{data,requiredApprovals}'::pg_catalog.text[])), 1)
       END AS required_approvals,
       t.accepts,
       t.rejects,
       t.voters,
       m.action AS my_vote,
       m.cast_at AS my_vote_at
  FROM openwop.interrupts i
  LEFT JOIN LATERAL (
        -- the tally a resolve counts: each voter's latest answer, asks left out
        SELECT pg_catalog.int4(pg_catalog.count(*) FILTER (WHERE l.action OPERATOR(pg_catalog.=) ANY
                   ('{accept,edit-accept}'::pg_catalog.text[]))) AS accepts,
               pg_catalog.int4(pg_catalog.count(*) FILTER (WHERE l.action OPERATOR(pg_catalog.=)
                   'reject'::pg_catalog.text)) AS rejects,
               pg_catalog.int4(pg_catalog.count(*)) AS voters
          FROM (SELECT DISTINCT ON (v.voter) v.action
                  FROM openwop.votes v
                 WHERE v.tenant OPERATOR(pg_catalog.=) i.tenant
                   AND v.interrupt_id OPERATOR(pg_catalog.=) i.interrupt_id
                   AND v.action OPERATOR(pg_catalog.<>) 'ask'::pg_catalog.text
                 ORDER BY v.voter, v.revision DESC) l) t
         ON i.kind OPERATOR(pg_catalog.=) 'approval'::pg_catalog.text
  LEFT JOIN LATERAL (
        -- the caller's own latest answer
        SELECT v.action, v.cast_at
          FROM openwop.votes v
         WHERE v.tenant OPERATOR(pg_catalog.=) i.tenant
           AND v.interrupt_id OPERATOR(pg_catalog.=) i.interrupt_id
           AND v.voter OPERATOR(pg_catalog.=) openwop.inbox_voter()
         ORDER BY v.revision DESC
         LIMIT 1) m ON true
 WHERE i.tenant OPERATOR(pg_catalog.=) openwop.inbox_tenant()
   AND openwop.inbox_waiting(i.status)
   AND (i.expires_at IS NULL OR i.expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp())
   AND openwop.may_decide(i.tenant, i.interrupt_id, i.kind, i.payload)
 ORDER BY i.created_at, i.interrupt_id;

COMMENT ON VIEW openwop.pending_interrupts IS
  'The inbox: the pending interrupts the caller (a request session''s JWT subject, else the session''s login) may decide now, in its tenant only, by the rules resolve_interrupt applies; nothing without approvals:respond; none past its deadline. Oldest request first: ORDER BY requested_at LIMIT n reads one page through index interrupts_inbox. A security barrier: a function in the query''s WHERE sees only these rows.';
COMMENT ON COLUMN openwop.pending_interrupts.interrupt_id IS 'Tenant-bound interrupt id (for mint_interrupt_token).';
COMMENT ON COLUMN openwop.pending_interrupts.run_id IS 'Run that raised it (resolve_interrupt''s run_id).';
COMMENT ON COLUMN openwop.pending_interrupts.node_id IS 'Node that raised it (resolve_interrupt''s node_id).';
COMMENT ON COLUMN openwop.pending_interrupts.kind IS 'InterruptPayload kind: approval, clarification, external-event, custom, low-confidence or credential.';
COMMENT ON COLUMN openwop.pending_interrupts.title IS 'data.title of an approval (NULL for a kind without one).';
COMMENT ON COLUMN openwop.pending_interrupts.request IS 'The interrupt''s data as requested (title, artifactId, artifactType, actions, description, questions, ...), without the members that say who else may decide (approversList, approverGroupRefs, approverRoleRefs, audience).';
COMMENT ON COLUMN openwop.pending_interrupts.resume_schema IS 'The JSON Schema a resume value must match, if the interrupt has one.';
COMMENT ON COLUMN openwop.pending_interrupts.requested_at IS 'When it was raised; the inbox order.';
COMMENT ON COLUMN openwop.pending_interrupts.expires_at IS 'Its deadline; NULL when it never expires.';
COMMENT ON COLUMN openwop.pending_interrupts.required_approvals IS 'Accepts an approval gate needs (data.requiredApprovals, 1 when absent); NULL for other kinds.';
COMMENT ON COLUMN openwop.pending_interrupts.accepts IS 'Voters whose latest answer to the approval gate is accept or edit-accept; NULL for other kinds.';
COMMENT ON COLUMN openwop.pending_interrupts.rejects IS 'Voters whose latest answer to the approval gate is reject; NULL for other kinds.';
COMMENT ON COLUMN openwop.pending_interrupts.voters IS 'Voters counted on the approval gate (latest answer other than ask); NULL for other kinds.';
COMMENT ON COLUMN openwop.pending_interrupts.my_vote IS 'The caller''s own latest answer to the gate (accept, reject, refine, edit-accept or ask), NULL if none is recorded.';
COMMENT ON COLUMN openwop.pending_interrupts.my_vote_at IS 'When the caller gave that answer; NULL with my_vote.';

/* The DBA grants the inbox to approver roles (docs/inbox.md, "Grants"). */
REVOKE ALL ON openwop.pending_interrupts FROM PUBLIC;
REVOKE ALL ON FUNCTION
    openwop.inbox_waiting(text),
    openwop.inbox_tenant(),
    openwop.inbox_voter(),
    openwop.may_decide(text, text, text, jsonb)
FROM PUBLIC;

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
 * Privileges: no role may use anything here until the DBA grants it to
 * PostgREST's web roles (db-anon-role and the roles JWTs name): USAGE on
 * the schema, EXECUTE on the operations it serves, SELECT on the inbox.
 * The functions call the openwop entry points directly (EXECUTE on those
 * is not needed), which decide who is calling and what it may do as they
 * do for every caller.
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

/*
 * The inbox over HTTP: GET /pending_interrupts?order=requested_at&limit=50
 * (ascending requested_at is the order its index serves; docs/inbox.md).
 * A security-barrier view over openwop.pending_interrupts: the rows the
 * caller may decide, in its tenant, nothing else.
 */
CREATE VIEW openwop_api.pending_interrupts WITH (security_barrier) AS
SELECT interrupt_id, run_id, node_id, kind, title, request, resume_schema, requested_at,
       expires_at, required_approvals, accepts, rejects, voters, my_vote, my_vote_at
  FROM openwop.pending_interrupts;
COMMENT ON VIEW openwop_api.pending_interrupts IS
E'The inbox: pending interrupts the caller may decide now\n'
 'The interrupts of the caller''s tenant that the caller may answer (approval gates it is eligible for, and the other kinds for holders of approvals:respond), with what an approver needs to decide: the request without its eligibility lists, the deadline, the tally and the caller''s own latest vote. '
 'Read it in pages: ?order=requested_at&limit=50, then &requested_at=gt.<last>. It is the view openwop.pending_interrupts.';

/* Nothing here is callable until the DBA grants it (docs/postgrest.md, "Roles and grants"). */
REVOKE ALL ON openwop_api.pending_interrupts FROM PUBLIC;
REVOKE ALL ON FUNCTION
    openwop_api."resolveInterruptByRun"(jsonb),
    openwop_api."inspectInterruptByToken"(text),
    openwop_api."resolveInterruptByToken"(jsonb)
FROM PUBLIC;

-- == openwop_api (end) ==
