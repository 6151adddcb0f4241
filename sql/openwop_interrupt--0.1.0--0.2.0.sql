/*
 * openwop_interrupt 0.1.0 -> 0.2.0: identity the referee can trust.
 *
 * Subjects instead of bare principals: the run owner, the resolver of an
 * interrupt and every voter are OpenWOP Subject objects.  History recorded
 * by 0.1.0 is read with the legacy subject OpenWOP prescribes (issuer
 * urn:openwop:legacy, lane api-key, kind user), stamped once, here.
 * Idempotency records belong to the subject that made them; those made by
 * 0.1.0 have none and replay for nobody.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION openwop_interrupt UPDATE TO '0.2.0'" to load this file. \quit

ALTER TABLE openwop.runs RENAME COLUMN owner_principal TO owner;
ALTER TABLE openwop.runs ALTER COLUMN owner TYPE jsonb USING pg_catalog.jsonb_build_object(
    'issuer', 'urn:openwop:legacy', 'subjectId', owner, 'tenant', tenant, 'lane', 'api-key', 'kind', 'user');
COMMENT ON COLUMN openwop.runs.owner IS 'Subject that created the run {issuer, subjectId, tenant, lane, kind}: RunSnapshot.owner.subject.';

ALTER TABLE openwop.interrupts ALTER COLUMN resolved_by TYPE jsonb USING CASE WHEN resolved_by IS NOT NULL THEN
    pg_catalog.jsonb_build_object('issuer', 'urn:openwop:legacy', 'subjectId', resolved_by, 'tenant', tenant,
                                  'lane', 'api-key', 'kind', 'user') END;
COMMENT ON COLUMN openwop.interrupts.resolved_by IS 'Subject that resolved it {issuer, subjectId, tenant, lane, kind}; the host''s subject for a timeout.';

ALTER TABLE openwop.idempotency_keys ADD COLUMN principal jsonb;
COMMENT ON COLUMN openwop.idempotency_keys.principal IS 'Subject that made the request; the key replays only for it (another subject gets idempotency_key_mismatch). NULL for records made before 0.2.0, which replay for nobody.';

ALTER TABLE openwop.votes ADD COLUMN voter_subject jsonb;
UPDATE openwop.votes SET voter_subject = pg_catalog.jsonb_build_object(
    'issuer', 'urn:openwop:legacy', 'subjectId', voter, 'tenant', tenant, 'lane', 'api-key', 'kind', 'user');
ALTER TABLE openwop.votes ALTER COLUMN voter_subject SET NOT NULL;
COMMENT ON COLUMN openwop.votes.voter IS 'Principal that voted: the subjectId of voter_subject. One person, one vote: the latest revision per voter counts.';
COMMENT ON COLUMN openwop.votes.resume_value IS 'The resume value of the vote, with decidedBy and decidedAt filled by the host.';
COMMENT ON COLUMN openwop.votes.voter_subject IS 'Subject that voted {issuer, subjectId, tenant, lane, kind}.';

COMMENT ON COLUMN openwop.group_members.principal IS 'Member: a subjectId (a JWT sub, a login name, a token principal) under any trusted issuer, or "<issuer>/<subjectId>" for one issuer.';

COMMENT ON FUNCTION openwop.resolve_interrupt(text, text, jsonb, text) IS
  'resolveInterruptByRun: resolves the pending interrupt of node_id with resume_value as the caller (a request session''s JWT subject, else the session''s login), who needs approvals:respond (the JWT scope claim, or membership of openwop.approver_role); exactly one of concurrent resolves wins, the others get interrupt_already_resolved (PT409). The host fills decidedBy and decidedAt. Honors an Idempotency-Key, which belongs to the subject that used it.';
COMMENT ON FUNCTION openwop.add_group_member(text, text, text) IS
  'Adds principal (a subjectId, or "<issuer>/<subjectId>" to pin one issuer) to group_ref in tenant (default: the caller''s tenant) for approverGroupRefs; the group named by openwop.override_group holds the override principals. Only the extension owner or a superuser may call it. Returns false if it was already a member.';
COMMENT ON FUNCTION openwop.mint_interrupt_token(text, text, interval, text) IS
  'A signed token ow2.hs256.<kid>.<payload>.<mac> for a pending interrupt of the caller''s tenant; lifetime ttl (default openwop.token_ttl, 30 min), capped at openwop.token_max_ttl and the interrupt''s deadline. A resolve token for a gate that restricts its approvers needs a named eligible principal (a subject id), which it carries and votes as; an inspect token names none. Minting a resolve token needs the privileges of openwop.token_issuer_role.';

COMMENT ON FUNCTION openwop.sweep(integer) IS
  'Applies due deadlines and retention once (the timeout worker runs the same code; pg_cron users may call it): approvals past timeoutMs are rejected (action timeout), other interrupts expire and cancel their run; then removes idempotency records past retention. At most max of each; returns how many it changed. It acts in every tenant: only a superuser or a login bound to * (openwop.bound_tenant) may call it.';

CREATE FUNCTION openwop.current_caller()
    RETURNS jsonb AS 'MODULE_PATHNAME', 'ow_current_caller'
    LANGUAGE C STABLE;
COMMENT ON FUNCTION openwop.current_caller() IS
  'Who this session is to openwop: {subject {issuer, subjectId, tenant, lane, kind}, tenant, source (request.jwt.claims or session_user), scopes}. Refused where no caller can be trusted (security-restricted operations, SECURITY DEFINER code in a request session).';
REVOKE ALL ON FUNCTION openwop.current_caller() FROM PUBLIC;
