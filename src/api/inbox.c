/*-------------------------------------------------------------------------
 *
 * inbox.c
 *	  The approver's inbox, openwop.pending_interrupts: the functions the
 *	  view evaluates, each deciding the caller once per statement.
 *
 * The view is plain SQL over openwop.interrupts (the "inbox" section of
 * the install script).  Its rows are the caller's tenant's pending
 * interrupts, found through an index keyed by inbox_tenant() (a constant
 * of the statement) in the order they were requested, so a page reads the
 * interrupts it returns and the ones it skips, and no others; may_decide()
 * keeps those the caller could resolve now, by the rules a resolve applies
 * (approvals.c), and the tally and the caller's own vote are read for the
 * rows returned only.
 *
 * Each function keeps the caller in its fn_extra, which lives as long as
 * the executor state of the statement: the caller, its scope and its
 * groups are read once per statement, whatever the number of rows, and
 * never carried into the next statement (whose caller may differ).  (A
 * PL/pgSQL simple expression calling one of them directly keeps its
 * executor state for the transaction, and so its first caller; within a
 * transaction a caller changes only by the session's own SET, to a caller
 * the session could be anyway.)
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/base.h"
#include "store/store.h"
#include "auth/auth.h"
#include "domain/domain.h"
#include "api/internal.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(ow_inbox_waiting);
PG_FUNCTION_INFO_V1(ow_inbox_tenant);
PG_FUNCTION_INFO_V1(ow_inbox_voter);
PG_FUNCTION_INFO_V1(ow_may_decide);
PG_FUNCTION_INFO_V1(ow_due_at);

/* The caller of one statement, as the inbox sees it. */
typedef struct InboxCaller
{
	OwCaller	caller;
	bool		scope;			/* holds approvals:respond */
	bool		groups_read;
	List	   *groups;			/* all its groups in its tenant, once read */
	bool		delegations_read;
	List	   *delegations;	/* InboxDelegator: whom it may vote for, once read */
} InboxCaller;

/* A delegator whose gates the caller may decide, with its groups. */
typedef struct InboxDelegator
{
	OwSubject	subject;
	List	   *groups;
} InboxDelegator;

/*
 * The caller of the statement this call belongs to: decided on the first
 * call, like every API function decides it (a refusal, e.g. inside a
 * SECURITY DEFINER function or for a bound login naming another tenant,
 * is the same), and kept in fn_extra for the rest of the statement.
 */
static InboxCaller *
inbox_caller(FunctionCallInfo fcinfo)
{
	InboxCaller *ic = (InboxCaller *) fcinfo->flinfo->fn_extra;
	MemoryContext old;

	if (ic != NULL)
		return ic;
	ow_require_current_schema();
	old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
	ic = palloc0(sizeof(InboxCaller));
	ow_caller(&ic->caller);
	ic->scope = ow_has_scope(&ic->caller);
	MemoryContextSwitchTo(old);
	fcinfo->flinfo->fn_extra = ic;
	return ic;
}

/*
 * openwop.inbox_waiting(status) → boolean: status = 'pending', the
 * predicate of index interrupts_inbox.  Its declared cost (see its COMMENT
 * in the install script) is what steers the view onto that index.
 */
Datum
ow_inbox_waiting(PG_FUNCTION_ARGS)
{
	text	   *status = PG_GETARG_TEXT_PP(0);

	PG_RETURN_BOOL(VARSIZE_ANY_EXHDR(status) == 7 &&
				   memcmp(VARDATA_ANY(status), "pending", 7) == 0);
}

/* The caller's tenant (or, voter, its subjectId) as text; NULL without approvals:respond. */
static Datum
caller_text(FunctionCallInfo fcinfo, bool voter)
{
	InboxCaller *ic = inbox_caller(fcinfo);

	if (!ic->scope)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(voter ? ic->caller.subject.subject_id
									 : ic->caller.subject.tenant));
}

/*
 * openwop.inbox_tenant() → text: the caller's tenant, or NULL for a
 * caller without approvals:respond, who may decide nothing (the view then
 * reads no row at all).
 */
Datum
ow_inbox_tenant(PG_FUNCTION_ARGS)
{
	return caller_text(fcinfo, false);
}

/*
 * openwop.inbox_voter() → text: the subjectId the caller's votes are
 * recorded under (openwop.votes.voter), or NULL without approvals:respond.
 */
Datum
ow_inbox_voter(PG_FUNCTION_ARGS)
{
	return caller_text(fcinfo, true);
}

/*
 * The caller's groups in its tenant, read as the extension owner on the
 * first gate that needs them and kept, like the caller, for the statement.
 */
static List *
caller_groups(FunctionCallInfo fcinfo, InboxCaller *ic)
{
	OwCall		call;

	if (ic->groups_read)
		return ic->groups;
	call.caller = ic->caller;
	ow_call_enter(&call);
	ic->groups = ow_subject_groups(ic->caller.subject.tenant, &ic->caller.subject,
								   fcinfo->flinfo->fn_mcxt);
	ic->groups_read = true;
	ow_call_end(&call);
	ow_call_finish(&call);
	return ic->groups;
}

/*
 * The delegators whose eligibility the caller holds now, each with its
 * groups, read on the first gate the caller is not eligible for itself
 * and kept for the statement.
 */
static List *
caller_delegators(FunctionCallInfo fcinfo, InboxCaller *ic)
{
	OwCall		call;
	ListCell   *lc;
	MemoryContext old;

	if (ic->delegations_read)
		return ic->delegations;
	call.caller = ic->caller;
	ow_call_enter(&call);
	/* read into the statement's context, where the caller is kept */
	old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
	foreach(lc, ow_delegations_held(ic->caller.subject.tenant, &ic->caller.subject, false))
	{
		OwDelegation *d = lfirst(lc);
		InboxDelegator *id = palloc(sizeof(InboxDelegator));

		id->subject = d->delegator;
		id->groups = ow_subject_groups(ic->caller.subject.tenant, &id->subject, fcinfo->flinfo->fn_mcxt);
		ic->delegations = lappend(ic->delegations, id);
	}
	MemoryContextSwitchTo(old);
	ic->delegations_read = true;
	ow_call_end(&call);
	ow_call_finish(&call);
	return ic->delegations;
}

/*
 * openwop.may_decide(tenant, interrupt_id, kind, payload, policy) → boolean:
 * may the caller resolve this pending interrupt now, as resolve_interrupt()
 * would let it?  It needs approvals:respond and the interrupt's tenant.  An
 * approval gate then asks for eligibility under the rule its policy pin
 * makes (approversList, approverGroupRefs, approverRoleRefs, the policies'
 * groups; a gate that names none, under no policy with groups, is open to
 * every holder of the scope; the requester a policy excludes never) and
 * for an answer left: a voter who has given the gate
 * openwop.max_votes_per_voter answers may act no more, unless the gate
 * takes an answer that is not counted (a one-vote gate decides on any
 * answer but ask).  A voter whose vote counts may still change it.  Every
 * other kind is for every holder of the scope in the tenant: a resolve
 * checks no approvers for them.  Whether the interrupt is pending and
 * before its deadline is the view's to check.
 */
Datum
ow_may_decide(PG_FUNCTION_ARGS)
{
	InboxCaller *ic;
	char	   *tenant;
	JsonbValue *data;
	OwGateRule	rule;
	const OwSubject *voter;
	OwCall		call;
	bool		left;

	/* a strict function before 0.11.0: the pin is the only argument that may be null */
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(3))
		PG_RETURN_NULL();
	ic = inbox_caller(fcinfo);
	tenant = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (!ic->scope || strcmp(tenant, ic->caller.subject.tenant) != 0)
		PG_RETURN_BOOL(false);
	if (strcmp(text_to_cstring(PG_GETARG_TEXT_PP(2)), "approval") != 0)
		PG_RETURN_BOOL(true);
	data = owj_get(PG_GETARG_JSONB_P(3), "data");
	if (!owj_is_object(data))
		PG_RETURN_BOOL(false);
	ow_gate_rule(data->val.binary.data, PG_ARGISNULL(4) ? NULL : PG_GETARG_JSONB_P(4), &rule);
	voter = &ic->caller.subject;
	if (!ow_approval_eligible(data->val.binary.data, &rule, voter, ic->caller.login,
							  caller_groups(fcinfo, ic)))
	{
		ListCell   *lc;

		/* as resolve_interrupt decides: not excluded itself, then the first delegator eligible */
		voter = NULL;
		if (!ow_approval_excluded(&rule, &ic->caller.subject))
			foreach(lc, caller_delegators(fcinfo, ic))
			{
				InboxDelegator *id = lfirst(lc);

				if (ow_approval_eligible(data->val.binary.data, &rule, &id->subject, InvalidOid, id->groups))
				{
					voter = &id->subject;
					break;
				}
			}
		if (voter == NULL)
			PG_RETURN_BOOL(false);
	}
	if (!ow_approval_answers_limited(data->val.binary.data, &rule))
		PG_RETURN_BOOL(true);

	call.caller = ic->caller;
	ow_call_enter(&call);
	left = ow_approval_answer_left(tenant, text_to_cstring(PG_GETARG_TEXT_PP(1)), voter->subject_id,
								   &ic->caller.subject);
	ow_call_end(&call);
	ow_call_finish(&call);
	PG_RETURN_BOOL(left);
}

/*
 * openwop.due_at(interrupt_id) → timestamptz: when the interrupt falls
 * due, as the inbox shows it: the due date its approval policy set
 * (dueAfterMs), else its deadline; NULL when it has neither.  Measured in
 * working time when its policy names a business calendar.  Readable by
 * whoever may read its FlowDrop entry.
 */
Datum
ow_due_at(PG_FUNCTION_ARGS)
{
	static OwQuery q = {
		"SELECT COALESCE(CAST(policy OPERATOR(pg_catalog.->>) 'dueAt' AS pg_catalog.timestamptz), expires_at)"
		"  FROM openwop.interrupts"
		" WHERE tenant OPERATOR(pg_catalog.=) $1 AND interrupt_id OPERATOR(pg_catalog.=) $2",
		2, {TEXTOID, TEXTOID}, SPI_OK_SELECT
	};
	OwCall		call;
	char	   *interrupt_id;
	Datum		args[2];
	bool		isnull;
	TimestampTz due;

	if (PG_ARGISNULL(0))
		ow_validation_error("interruptId", "interrupt_id must not be null");
	ow_check_arg_size(fcinfo, 0, "interruptId", false);
	ow_caller(&call.caller);
	ow_check_entry_reader(&call.caller, "an interrupt's due date");
	interrupt_id = ow_normalize_id(text_to_cstring(PG_GETARG_TEXT_PP(0)), call.caller.subject.tenant,
								   "interruptId", "interrupt");

	ow_call_enter(&call);
	args[0] = CStringGetTextDatum(call.caller.subject.tenant);
	args[1] = CStringGetTextDatum(interrupt_id);
	if (ow_exec(&q, args, NULL, true, 1) == 0)
		ow_interrupt_not_found(interrupt_id);
	due = DatumGetTimestampTz(ow_col_datum(0, 1, TIMESTAMPTZOID, &isnull));
	ow_call_end(&call);
	ow_call_finish(&call);
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMPTZ(due);
}
