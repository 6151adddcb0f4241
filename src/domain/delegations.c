/*-------------------------------------------------------------------------
 *
 * delegations.c
 *	  Delegation of approval (and its API: delegate_approvals,
 *	  set_delegation, revoke_delegation): between its start and end, unless
 *	  revoked, a delegate may vote on the gates its delegator is eligible
 *	  for, once, as the delegator, recorded "on behalf of".
 *
 * A delegate uses a delegation only where it is not eligible itself (one
 * human, one vote), and only the delegator's own eligibility: a delegate's
 * delegate gets nothing.  The delegation is read FOR SHARE when a vote uses
 * it, so a revocation racing the vote has one outcome: the vote counted
 * first, or the delegation revoked first and the vote refused.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/base.h"
#include "store/store.h"
#include "auth/auth.h"
#include "domain/internal.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(ow_delegate_approvals);
PG_FUNCTION_INFO_V1(ow_set_delegation);
PG_FUNCTION_INFO_V1(ow_revoke_delegation);
PG_FUNCTION_INFO_V1(ow_delegation_viewer);

/* The subject a delegation's ref names: "<issuer>/<subjectId>", or a subjectId under no issuer. */
static void
subject_of_ref(const char *ref, const char *tenant, OwSubject *s)
{
	const char *id = ow_ref_subject_id(ref);

	memset(s, 0, sizeof(*s));
	s->tenant = pstrdup(tenant);
	s->lane = "delegated";
	s->kind = "user";
	s->issuer = id == ref ? "" : pnstrdup(ref, id - 1 - ref);
	s->subject_id = pstrdup(id);
}

/*
 * The delegations who holds in tenant now, in a stable order (delegator,
 * id).  With lock (a vote), each is locked FOR SHARE: a revocation waits
 * for the vote that uses it, and a vote waiting for a revocation's commit
 * no longer finds it; without (the inbox), they are read as they are.
 */
List *
ow_delegations_held(const char *tenant, const OwSubject *who, bool lock)
{
#define HELD "SELECT delegation_id, delegator FROM openwop.approval_delegations" \
	" WHERE tenant OPERATOR(pg_catalog.=) $1" \
	"   AND delegate OPERATOR(pg_catalog.=) ANY (ARRAY[$2, $3])" \
	"   AND ends_at OPERATOR(pg_catalog.>) pg_catalog.statement_timestamp()" \
	"   AND starts_at OPERATOR(pg_catalog.<=) pg_catalog.statement_timestamp()" \
	"   AND revoked_at IS NULL" \
	" ORDER BY delegator, delegation_id"
	static OwQuery locked = {HELD " FOR SHARE", 3, {TEXTOID, TEXTOID, TEXTOID}, SPI_OK_SELECT};
	static OwQuery read = {HELD, 3, {TEXTOID, TEXTOID, TEXTOID}, SPI_OK_SELECT};
	Datum		args[3];
	uint64		n;
	uint64		i;
	List	   *out = NIL;

	args[0] = CStringGetTextDatum(tenant);
	args[1] = CStringGetTextDatum(who->subject_id);
	args[2] = CStringGetTextDatum(ow_subject_ref(who));
	n = ow_exec(lock ? &locked : &read, args, NULL, !lock, 0);
	for (i = 0; i < n; i++)
	{
		OwDelegation *d = palloc(sizeof(OwDelegation));

		d->delegation_id = ow_col_text(i, 1);
		d->delegator_ref = ow_col_text(i, 2);
		subject_of_ref(d->delegator_ref, tenant, &d->delegator);
		out = lappend(out, d);
	}
	return out;
}

/* The longest a delegation may last: it is time-boxed, not a standing grant. */
#define DELEGATION_MAX_DAYS 366

/* A timestamptz argument that must be given, and finite. */
static TimestampTz
time_arg(FunctionCallInfo fcinfo, int n, const char *field)
{
	TimestampTz t;

	if (PG_ARGISNULL(n))
		ow_validation_error(field, "%s must not be null", field);
	t = PG_GETARG_TIMESTAMPTZ(n);
	if (TIMESTAMP_NOT_FINITE(t))
		ow_validation_error(field, "%s must be a finite time", field);
	return t;
}



/* A subject ref argument that must be given: a subjectId or "<issuer>/<subjectId>". */
static char *
ref_arg(FunctionCallInfo fcinfo, int n, const char *field)
{
	char	   *ref;

	if (PG_ARGISNULL(n))
		ow_validation_error(field, "%s must not be null", field);
	ref = text_to_cstring(PG_GETARG_TEXT_PP(n));
	if (!ow_valid_subject_ref(ref))
		ow_validation_error(field, "%s must be a subject id, or \"<issuer>/<subject id>\", without white space",
							field);
	if (strcmp(ow_ref_subject_id(ref), OW_TOKEN_PRINCIPAL) == 0)
		ow_validation_error(field, "\"%s\" is reserved for tokens that name no principal", OW_TOKEN_PRINCIPAL);
	return ref;
}

/*
 * Record a delegation: the window checked (it ends after it starts, is
 * not over, and lasts at most DELEGATION_MAX_DAYS), not to oneself under
 * any spelling.  Returns the answer, built in the caller's context.
 */
static Jsonb *
delegate(OwCall *call, const char *tenant, const char *delegator, const char *delegate_ref,
		 TimestampTz starts, TimestampTz ends)
{
	static OwQuery insert = {
		"INSERT INTO openwop.approval_delegations"
		" (tenant, delegation_id, delegator, delegate, starts_at, ends_at, set_by, set_at)"
		" VALUES ($1, $2, $3, $4, $5, $6, $7, pg_catalog.now())",
		7, {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID}, SPI_OK_INSERT
	};
	char	   *id;
	Datum		args[7];
	OwJson		j;
	Jsonb	   *result;
	MemoryContext old;

	if (ends <= starts)
		ow_validation_error("endsAt", "ends_at must be after starts_at");
	if (ends <= GetCurrentTimestamp())
		ow_validation_error("endsAt", "ends_at is past: the delegation would never apply");
	if (ends - starts > (TimestampTz) DELEGATION_MAX_DAYS * USECS_PER_DAY)
		ow_validation_error("endsAt", "a delegation lasts at most %d days: set a new one when it ends",
							DELEGATION_MAX_DAYS);
	/* one person under every issuer, as a bare approversList entry is */
	if (strcmp(ow_ref_subject_id(delegator), ow_ref_subject_id(delegate_ref)) == 0)
		ow_validation_error("delegate", "\"%s\" cannot delegate to itself", ow_echo(delegator));

	id = psprintf("%s/%s", tenant, ow_mint_opaque(16));
	ow_call_enter(call);
	args[0] = CStringGetTextDatum(tenant);
	args[1] = CStringGetTextDatum(id);
	args[2] = CStringGetTextDatum(delegator);
	args[3] = CStringGetTextDatum(delegate_ref);
	args[4] = TimestampTzGetDatum(starts);
	args[5] = TimestampTzGetDatum(ends);
	args[6] = CStringGetTextDatum(call->caller.subject.subject_id);
	(void) ow_exec(&insert, args, NULL, false, 0);
	ow_call_end(call);

	old = MemoryContextSwitchTo(call->callerctx);
	owj_begin(&j);
	owj_str(&j, "endsAt", owj_iso8601(ends));
	owj_str(&j, "tenant", tenant);
	owj_str(&j, "delegate", delegate_ref);
	owj_str(&j, "startsAt", owj_iso8601(starts));
	owj_str(&j, "delegator", delegator);
	owj_str(&j, "delegationId", id);
	result = owj_end(&j);
	MemoryContextSwitchTo(old);
	ow_call_finish(call);
	return result;
}

/*
 * openwop.delegate_approvals(delegate, starts_at, ends_at, tenant) → jsonb:
 * the caller delegates its own eligibility, in its own tenant.
 */
Datum
ow_delegate_approvals(PG_FUNCTION_ARGS)
{
	OwCall		call;
	char	   *delegate_ref;
	TimestampTz starts;
	TimestampTz ends;

	ow_refuse_read_only("delegate_approvals()");
	ow_caller(&call.caller);
	ow_check_scope(&call.caller);
	delegate_ref = ref_arg(fcinfo, 0, "delegate");
	starts = time_arg(fcinfo, 1, "startsAt");
	ends = time_arg(fcinfo, 2, "endsAt");
	if (!PG_ARGISNULL(3))
	{
		char	   *tenant = text_to_cstring(PG_GETARG_TEXT_PP(3));

		/* one's own eligibility is in one's own tenant */
		if (strcmp(tenant, call.caller.subject.tenant) != 0)
		{
			OwDetails	d;

			ow_details_init(&d);
			ow_details_str(&d, "tenant", tenant);
			ow_details_str(&d, "callerTenant", call.caller.subject.tenant);
			ow_raise(OW_ID_TENANT_MISMATCH, &d, NULL,
					 "tenant \"%s\" is not the caller's tenant \"%s\": one delegates one's own eligibility",
					 ow_echo(tenant), call.caller.subject.tenant);
		}
	}
	PG_RETURN_JSONB_P(delegate(&call, call.caller.subject.tenant, call.caller.subject.subject_id,
							   delegate_ref, starts, ends));
}

/*
 * openwop.set_delegation(delegator, delegate, starts_at, ends_at, tenant) →
 * jsonb: a policy admin delegates someone's eligibility.
 */
Datum
ow_set_delegation(PG_FUNCTION_ARGS)
{
	OwCall		call;
	char	   *delegator;
	char	   *delegate_ref;
	TimestampTz starts;
	TimestampTz ends;
	char	   *tenant;

	ow_refuse_read_only("set_delegation()");
	ow_caller(&call.caller);
	ow_require_policy_admin(&call.caller, "setting a delegation for someone else");
	delegator = ref_arg(fcinfo, 0, "delegator");
	delegate_ref = ref_arg(fcinfo, 1, "delegate");
	starts = time_arg(fcinfo, 2, "startsAt");
	ends = time_arg(fcinfo, 3, "endsAt");
	tenant = ow_tenant_arg(fcinfo, 4, &call.caller, "setting another tenant's delegations");
	PG_RETURN_JSONB_P(delegate(&call, tenant, delegator, delegate_ref, starts, ends));
}

/*
 * openwop.revoke_delegation(delegation_id) → {delegationId, revoked,
 * changed}: for its delegator, its delegate, or a policy admin of its
 * tenant; the row is locked first, and a revoked one is left as it is.
 */
Datum
ow_revoke_delegation(PG_FUNCTION_ARGS)
{
	static OwQuery lock = {
		"SELECT delegator, delegate, revoked_at IS NOT NULL FROM openwop.approval_delegations"
		" WHERE tenant OPERATOR(pg_catalog.=) $1 AND delegation_id OPERATOR(pg_catalog.=) $2"
		" FOR UPDATE",
		2, {TEXTOID, TEXTOID}, SPI_OK_SELECT
	};
	static OwQuery revoke = {
		"UPDATE openwop.approval_delegations SET revoked_at = pg_catalog.now(), revoked_by = $3"
		" WHERE tenant OPERATOR(pg_catalog.=) $1 AND delegation_id OPERATOR(pg_catalog.=) $2",
		3, {TEXTOID, TEXTOID, TEXTOID}, SPI_OK_UPDATE
	};
	OwCall		call;
	char	   *id;
	char	   *tenant;
	Datum		args[3];
	bool		changed = false;
	OwJson		j;
	Jsonb	   *result;

	ow_refuse_read_only("revoke_delegation()");
	if (PG_ARGISNULL(0))
		ow_validation_error("delegationId", "delegation_id must not be null");
	ow_caller(&call.caller);
	tenant = call.caller.subject.tenant;
	id = ow_normalize_id(text_to_cstring(PG_GETARG_TEXT_PP(0)), tenant, "delegationId", "delegation");

	ow_call_enter(&call);
	args[0] = CStringGetTextDatum(tenant);
	args[1] = CStringGetTextDatum(id);
	if (ow_exec(&lock, args, NULL, false, 1) != 1)
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "delegationId", id);
		ow_raise(OW_NOT_FOUND, &d, NULL, "delegation \"%s\" does not exist", id);
	}
	if (!ow_subject_matches(&call.caller.subject, ow_col_text(0, 1)) &&
		!ow_subject_matches(&call.caller.subject, ow_col_text(0, 2)) &&
		!ow_is_policy_admin(&call.caller))
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "delegationId", id);
		ow_raise(OW_FORBIDDEN, &d,
				 "Its delegator, its delegate or a policy admin (openwop_policy_admin) of its tenant revokes a delegation.",
				 "\"%s\" may not revoke delegation \"%s\"", call.caller.subject.subject_id, id);
	}
	if (!ow_col_bool(0, 3))
	{
		args[2] = CStringGetTextDatum(call.caller.subject.subject_id);
		changed = ow_exec(&revoke, args, NULL, false, 0) == 1;
	}
	ow_call_end(&call);
	owj_begin(&j);
	owj_bool(&j, "changed", changed);
	owj_bool(&j, "revoked", true);
	owj_str(&j, "delegationId", id);
	result = owj_end(&j);
	ow_call_finish(&call);
	PG_RETURN_JSONB_P(result);
}

/*
 * openwop.delegation_viewer() → text[]: {tenant ("*": every tenant),
 * subjectId, "admin" or "self", issuer-qualified subject} of the caller,
 * for openwop.delegations.
 */
Datum
ow_delegation_viewer(PG_FUNCTION_ARGS)
{
	OwCaller	c;
	bool		admin;
	Datum		elems[4];

	ow_caller(&c);
	admin = ow_is_policy_admin(&c);
	elems[0] = CStringGetTextDatum(admin && ow_acts_in_every_tenant(&c) ? "*" : c.subject.tenant);
	elems[1] = CStringGetTextDatum(c.subject.subject_id);
	elems[2] = CStringGetTextDatum(admin ? "admin" : "self");
	elems[3] = CStringGetTextDatum(ow_subject_ref(&c.subject));
	PG_RETURN_ARRAYTYPE_P(construct_array(elems, 4, TEXTOID, -1, false, TYPALIGN_INT));
}
