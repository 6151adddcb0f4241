/*-------------------------------------------------------------------------
 *
 * approvals.c
 *	  Approval gates: who may decide (approversList, approverGroupRefs,
 *	  approverRoleRefs, override principals), one vote per voter, and the
 *	  quorum / single-veto / majority tally (the "Approval" and "Approver
 *	  enforcement" sections of the OpenWOP interrupt spec).
 *
 * Eligibility is resolved when the vote is cast and recorded with it (and
 * on interrupt.resolved); it is never re-resolved, so replays read fixed
 * history.  The inbox (inbox.c) asks the same question of every gate it
 * lists, through the same rules, without a refusal.  Votes are serialised
 * by the run row lock that every resolve holds, so concurrent voters
 * cannot lose a vote or decide a gate twice.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/base.h"
#include "store/store.h"
#include "auth/auth.h"
#include "domain/domain.h"

#include "catalog/pg_type.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/numeric.h"

PG_FUNCTION_INFO_V1(ow_add_group_member);
PG_FUNCTION_INFO_V1(ow_remove_group_member);

/* The group whose members are override principals of approval gates. */
static char *ow_override_group = NULL;

/* The strings of a jsonb string array member, or NIL. */
static List *
string_list(JsonbContainer *data, const char *key)
{
	JsonbValue *v = owj_get_container(data, key);
	List	   *out = NIL;
	int			i;

	if (v == NULL || !owj_is_array(v))
		return NIL;
	for (i = 0; i < (int) JsonContainerSize(v->val.binary.data); i++)
	{
		char	   *s = owj_string(getIthJsonbValueFromContainer(v->val.binary.data, i));

		if (s)
			out = lappend(out, s);
	}
	return out;
}

static bool
list_has_string(List *l, const char *s)
{
	ListCell   *lc;

	foreach(lc, l)
		if (strcmp((char *) lfirst(lc), s) == 0)
			return true;
	return false;
}

/* The voter has given the gate openwop.max_votes_per_voter answers already. */
static void
too_many_answers(const OwSubject *who, const char *interrupt_id)
{
	OwDetails	d;

	ow_details_init(&d);
	ow_details_str(&d, "field", "resumeValue");
	ow_details_str(&d, "interruptId", interrupt_id);
	ow_details_int(&d, "limit", ow_max_votes_per_voter);
	ow_details_str(&d, "setting", "openwop.max_votes_per_voter");
	ow_raise(OW_VALIDATION_ERROR, &d,
			 "Each voter may give a gate openwop.max_votes_per_voter answers (votes, re-votes and asks).",
			 "\"%s\" has answered interrupt \"%s\" %d times, the most allowed",
			 who->subject_id, interrupt_id, ow_max_votes_per_voter);
}

static int
strcmp_cells(const ListCell *a, const ListCell *b)
{
	return strcmp(lfirst(a), lfirst(b));
}

/* A group_members row read: its group, onto the list (arg), when kept. */
typedef struct GroupsRead
{
	List	   *keep;
	List	   *groups;
} GroupsRead;

static void
group_read(const OwRow *row, void *arg)
{
	GroupsRead *g = arg;
	char	   *ref = TextDatumGetCString(row->values[0]);

	if (g->keep == NIL || list_has_string(g->keep, ref))
		g->groups = lappend(g->groups, ref);
}

/*
 * Every group the subject belongs to in the tenant (read by its subjectId
 * and by its issuer-qualified ref), sorted as COLLATE "C" and each once,
 * in resultctx; keep (when not NIL) keeps only those among it.
 */
static List *
groups_of(const char *tenant, const OwSubject *who, List *keep, MemoryContext resultctx)
{
	static OwRead members = {.table = OW_GROUP_MEMBERS,.index = OW_GROUP_MEMBERS_PKEY,.nkeys = 2,
	.ncols = 1,.cols = {GM_GROUP_REF}};
	const char *refs[2] = {who->subject_id, ow_subject_ref(who)};
	GroupsRead	g = {keep, NIL};
	OwDirect	d;
	List	   *out = NIL;
	ListCell   *lc;
	MemoryContext old = MemoryContextSwitchTo(resultctx);
	int			i;

	ow_begin(&d, OW_TABLE_BIT(OW_GROUP_MEMBERS), 0, 0, 0);
	for (i = 0; i < 2; i++)
	{
		Datum		keys[2] = {CStringGetTextDatum(tenant), CStringGetTextDatum(refs[i])};

		(void) ow_read(&d, &members, keys, 0, OW_NO_LOCK, 0, NULL, group_read, &g);
	}
	ow_end(&d);
	list_sort(g.groups, strcmp_cells);
	foreach(lc, g.groups)
		if (out == NIL || strcmp(llast(out), lfirst(lc)) != 0)
			out = lappend(out, lfirst(lc));
	MemoryContextSwitchTo(old);
	return out;
}

/* The group refs among refs that the subject belongs to, in the tenant. */
static List *
member_groups(const char *tenant, const OwSubject *who, List *refs)
{
	if (refs == NIL)
		return NIL;
	return groups_of(tenant, who, refs, CurrentMemoryContext);
}

/*
 * Every group the subject belongs to in the tenant, built in resultctx:
 * what eligibility needs when it decides many gates for one subject.
 */
List *
ow_subject_groups(const char *tenant, const OwSubject *who, MemoryContext resultctx)
{
	return groups_of(tenant, who, NIL, resultctx);
}

/*
 * The role refs that a login holds: actual membership of the ref role (not
 * superuser privilege), whatever role the session has SET, so a DBA grants
 * approval rights with GRANT and one login stays one approver.
 */
static List *
held_roles(Oid login, List *refs)
{
	List	   *out = NIL;
	ListCell   *lc;

	if (!OidIsValid(login))
		return NIL;
	foreach(lc, refs)
	{
		Oid			role = get_role_oid((char *) lfirst(lc), true);

		if (OidIsValid(role) && is_member_of_role_nosuper(login, role))
			out = lappend(out, lfirst(lc));
	}
	return out;
}

/* Who a subject is among a gate's approvers, as eligibility decides it. */
typedef struct Eligibility
{
	List	   *matched;		/* "approversList", "group:<ref>", "role:<ref>" or
								 * "any"; NIL: not eligible */
	List	   *groups;			/* its groups among approverGroupRefs and the
								 * override group */
	List	   *roles;			/* the approverRoleRefs its login holds */
	bool		is_override;	/* a member of openwop.override_group */
} Eligibility;

/*
 * Decide, now, whether the subject who may vote on the gate described by
 * data, in tenant; login is the session's login for a SQL caller (role refs
 * match only logins), InvalidOid otherwise.  known_groups, when given, are
 * all the subject's groups in the tenant, already read (else they are
 * looked up).  Eligible when the gate names no approvers at all, or when an
 * approversList entry names the subject (its subjectId, or
 * "<issuer>/<subjectId>"), or it is in one of approverGroupRefs, or its
 * login holds one of approverRoleRefs.  Membership of the override group
 * makes an eligible voter an override principal; it makes no one eligible.
 */
static void
decide_eligibility(const char *tenant, JsonbContainer *data, const OwSubject *who, Oid login,
				   List **known_groups, Eligibility *e)
{
	List	   *listed = string_list(data, "approversList");
	List	   *group_refs = string_list(data, "approverGroupRefs");
	List	   *role_refs = string_list(data, "approverRoleRefs");
	List	   *asked = list_copy(group_refs);
	ListCell   *lc;

	if (ow_override_group && ow_override_group[0] != '\0')
		asked = lappend(asked, ow_override_group);
	if (known_groups)
	{
		/* the subject's groups were read already */
		e->groups = NIL;
		foreach(lc, *known_groups)
			if (list_has_string(asked, lfirst(lc)))
				e->groups = lappend(e->groups, lfirst(lc));
	}
	else
		e->groups = member_groups(tenant, who, asked);
	e->roles = held_roles(login, role_refs);
	e->is_override = ow_override_group && ow_override_group[0] != '\0' &&
		list_has_string(e->groups, ow_override_group);

	e->matched = NIL;
	foreach(lc, listed)
		if (ow_subject_matches(who, lfirst(lc)))
		{
			e->matched = lappend(e->matched, "approversList");
			break;
		}
	foreach(lc, e->groups)
		if (list_has_string(group_refs, lfirst(lc)))
			e->matched = lappend(e->matched, psprintf("group:%s", (char *) lfirst(lc)));
	foreach(lc, e->roles)
		e->matched = lappend(e->matched, psprintf("role:%s", (char *) lfirst(lc)));
	if (listed == NIL && group_refs == NIL && role_refs == NIL)
		e->matched = lappend(e->matched, "any");
}

/*
 * The eligibility of a vote (decide_eligibility, in the run's tenant):
 * refuses with 403 forbidden when the subject is not eligible (the run
 * keeps waiting).  Returns the decision to record:
 * {principal, subject, matched: [...], groups: [...], roles: [...], override}.
 */
Jsonb *
ow_approval_eligibility(OwRun *run, JsonbContainer *data, const OwSubject *who, Oid login,
						List **known_groups, bool *is_override)
{
	Eligibility e;
	OwJson		j;

	decide_eligibility(run->tenant, data, who, login, known_groups, &e);
	*is_override = e.is_override;
	if (e.matched == NIL)
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "principal", who->subject_id);
		ow_raise(OW_FORBIDDEN, &d, NULL,
				 "principal \"%s\" is not an eligible approver of this interrupt", who->subject_id);
	}

	/* in jsonb's key order (see json.c) */
	owj_begin(&j);
	owj_str_array(&j, "roles", e.roles);
	owj_str_array(&j, "groups", e.groups);
	owj_str_array(&j, "matched", e.matched);
	owj_subject(&j, "subject", who);
	owj_bool(&j, "override", e.is_override);
	owj_str(&j, "principal", who->subject_id);
	return owj_end(&j);
}

/*
 * Would ow_approval_eligibility let the subject vote on the gate?  The
 * same decision, without a refusal; groups are all the subject's groups in
 * the gate's tenant (ow_subject_groups), so nothing is read.
 */
bool
ow_approval_eligible(JsonbContainer *data, const OwSubject *who, Oid login, List *groups)
{
	Eligibility e;

	decide_eligibility(NULL, data, who, login, &groups, &e);
	return e.matched != NIL;
}

/* The gate's requiredApprovals (1 when absent); a value beyond int4 reads as the largest. */
static int
required_approvals(JsonbContainer *data)
{
	JsonbValue *v = owj_get_container(data, "requiredApprovals");
	bool		overflow = false;
	int			required;

	if (v == NULL || v->type != jbvNumeric)
		return 1;
	required = numeric_int4_opt_error(v->val.numeric, &overflow);
	return overflow ? PG_INT32_MAX : required;
}

/*
 * Is an answer with this action recorded in openwop.votes, where it counts
 * against openwop.max_votes_per_voter?  On a one-vote gate any answer but
 * ask decides at once and is recorded only in interrupt.resolved.
 */
static bool
answer_is_recorded(int required, const char *action)
{
	return required != 1 || strcmp(action, "ask") == 0;
}

/*
 * Does every answer the gate takes count against openwop.max_votes_per_voter
 * (see answer_is_recorded)?  If not, a voter who used up its answers may
 * still decide the gate.
 */
bool
ow_approval_answers_limited(JsonbContainer *data)
{
	int			required = required_approvals(data);
	ListCell   *lc;

	foreach(lc, string_list(data, "actions"))
		if (!answer_is_recorded(required, lfirst(lc)))
			return false;
	return true;
}

/* Has the voter an answer left on the gate: fewer than openwop.max_votes_per_voter given? */
bool
ow_approval_answer_left(const char *tenant, const char *interrupt_id, const OwSubject *who)
{
	static OwQuery q = {
		"SELECT COALESCE(pg_catalog.max(revision), 0) OPERATOR(pg_catalog.<) $4"
		"  FROM openwop.votes"
		" WHERE tenant OPERATOR(pg_catalog.=) $1"
		"   AND interrupt_id OPERATOR(pg_catalog.=) $2"
		"   AND voter OPERATOR(pg_catalog.=) $3",
		4, {TEXTOID, TEXTOID, TEXTOID, INT4OID}, SPI_OK_SELECT
	};
	Datum		args[4];

	args[0] = CStringGetTextDatum(tenant);
	args[1] = CStringGetTextDatum(interrupt_id);
	args[2] = CStringGetTextDatum(who->subject_id);
	args[3] = Int32GetDatum(ow_max_votes_per_voter);
	if (ow_exec(&q, args, NULL, true, 1) != 1)
		elog(ERROR, "could not count the answers to interrupt \"%s\"", interrupt_id);
	return ow_col_bool(0, 1);
}

/*
 * Record who's vote (a new revision; the latest per principal counts;
 * the deciding answer of a one-vote gate lives only in interrupt.resolved)
 * and tally the gate:
 *   - ask is recorded and never decides;
 *   - refine exits the suspend at once (the node revises; nothing is granted);
 *   - an override principal releases the gate alone when
 *     overrideBypassesQuorum is true (accept: overridden; reject: rejected);
 *   - single-veto: one eligible reject rejects; majority: rejects above
 *     half of requiredApprovals reject (reason quorum-reject);
 *   - accepts (edit-accept counts) reaching requiredApprovals grant.
 */
void
ow_approval_vote(OwRun *run, const char *interrupt_id, JsonbContainer *data,
				 const OwSubject *who, const char *action, Jsonb *resume_value,
				 Jsonb *eligibility, bool is_override, OwVote *vote)
{
	/* the next revision, unless the voter has given the gate $8 answers already */
	static OwQuery insert_vote = {
		"INSERT INTO openwop.votes"
		" (tenant, interrupt_id, voter, revision, action, resume_value, eligibility,"
		"  voter_subject)"
		" SELECT $1, $2, $3, COALESCE(pg_catalog.max(revision), 0) OPERATOR(pg_catalog.+) 1,"
		"        $4, $5, $6, $7"
		"   FROM openwop.votes"
		"  WHERE tenant OPERATOR(pg_catalog.=) $1"
		"    AND interrupt_id OPERATOR(pg_catalog.=) $2"
		"    AND voter OPERATOR(pg_catalog.=) $3"
		" HAVING COALESCE(pg_catalog.max(revision), 0) OPERATOR(pg_catalog.<) $8",
		8, {TEXTOID, TEXTOID, TEXTOID, TEXTOID, JSONBOID, JSONBOID, JSONBOID, INT4OID},
		SPI_OK_INSERT
	};
	static OwQuery tally = {
		"SELECT pg_catalog.count(*) FILTER (WHERE action OPERATOR(pg_catalog.=) ANY"
		"            ('{accept,edit-accept}'::pg_catalog.text[])),"
		"       pg_catalog.count(*) FILTER (WHERE action OPERATOR(pg_catalog.=) 'reject'),"
		"       pg_catalog.count(*)"
		"  FROM (SELECT DISTINCT ON (voter) voter, action FROM openwop.votes"
		"         WHERE tenant OPERATOR(pg_catalog.=) $1"
		"           AND interrupt_id OPERATOR(pg_catalog.=) $2"
		"           AND action OPERATOR(pg_catalog.<>) 'ask'"
		"         ORDER BY voter, revision DESC) latest",
		2, {TEXTOID, TEXTOID}, SPI_OK_SELECT
	};
	JsonbValue *v;
	bool		majority;
	bool		bypass;
	Datum		args[8];

	vote->required = required_approvals(data);
	v = owj_get_container(data, "rejectionPolicy");
	majority = v && v->type == jbvString && v->val.string.len == 8 &&
		strncmp(v->val.string.val, "majority", 8) == 0;
	v = owj_get_container(data, "overrideBypassesQuorum");
	bypass = v && v->type == jbvBool && v->val.boolean;

	args[0] = CStringGetTextDatum(run->tenant);
	args[1] = CStringGetTextDatum(interrupt_id);
	args[2] = CStringGetTextDatum(who->subject_id);
	args[3] = CStringGetTextDatum(action);
	args[4] = JsonbPGetDatum(resume_value);
	args[5] = JsonbPGetDatum(eligibility);
	args[6] = JsonbPGetDatum(ow_subject_jsonb(who));
	args[7] = Int32GetDatum(ow_max_votes_per_voter);
	if (!answer_is_recorded(vote->required, action))
	{
		/*
		 * A one-vote gate: any answer but ask decides it, so no counted vote
		 * precedes this one, the tally is this vote alone, and the answer
		 * is recorded once, in interrupt.resolved (with the eligibility
		 * decision): openwop.votes keeps what a gate has to count or keep.
		 */
		vote->accepts = (strcmp(action, "accept") == 0 || strcmp(action, "edit-accept") == 0) ? 1 : 0;
		vote->rejects = strcmp(action, "reject") == 0 ? 1 : 0;
		vote->voters = 1;
	}
	else
	{
		if (ow_exec(&insert_vote, args, NULL, false, 0) != 1)
			too_many_answers(who, interrupt_id);
		if (ow_exec(&tally, args, NULL, false, 1) != 1)
			elog(ERROR, "could not tally the votes of interrupt \"%s\"", interrupt_id);
		vote->accepts = (int) ow_col_int64(0, 1);
		vote->rejects = (int) ow_col_int64(0, 2);
		vote->voters = (int) ow_col_int64(0, 3);
	}

	vote->decided = false;
	vote->decision = NULL;
	vote->reason = NULL;
	vote->action = action;
	if (strcmp(action, "ask") == 0)
		return;
	if (strcmp(action, "refine") == 0)
	{
		vote->decided = true;
		return;
	}
	if (is_override && bypass)
	{
		vote->decided = true;
		vote->decision = strcmp(action, "reject") == 0 ? "rejected" : "overridden";
		return;
	}
	if (!majority && vote->rejects >= 1)
	{
		vote->decided = true;
		vote->decision = "rejected";
		vote->action = "reject";
	}
	else if (majority && 2 * vote->rejects > vote->required)
	{
		vote->decided = true;
		vote->decision = "rejected";
		vote->action = "reject";
		vote->reason = "quorum-reject";
	}
	else if (vote->accepts >= vote->required)
	{
		vote->decided = true;
		vote->decision = "granted";
	}
}

/* ----------
 * Administration
 * ----------
 */

static Datum
change_membership(FunctionCallInfo fcinfo, bool add)
{
	static OwQuery add_member = {
		"INSERT INTO openwop.group_members (tenant, group_ref, principal)"
		" VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
		3, {TEXTOID, TEXTOID, TEXTOID}, SPI_OK_INSERT
	};
	static OwQuery remove_member = {
		"DELETE FROM openwop.group_members"
		" WHERE tenant OPERATOR(pg_catalog.=) $1"
		"   AND group_ref OPERATOR(pg_catalog.=) $2"
		"   AND principal OPERATOR(pg_catalog.=) $3",
		3, {TEXTOID, TEXTOID, TEXTOID}, SPI_OK_DELETE
	};
	char	   *group_ref;
	char	   *principal;
	char	   *tenant = NULL;
	Datum		args[3];
	OwCall		call;
	bool		changed;

	ow_refuse_read_only(add ? "add_group_member()" : "remove_group_member()");
	ow_require_admin("manage approver groups");
	if (!PG_ARGISNULL(2))
	{
		tenant = text_to_cstring(PG_GETARG_TEXT_PP(2));
		if (!ow_valid_tenant(tenant))
			ow_validation_error("tenant", "\"%s\" is not a valid tenant id", ow_echo(tenant));
	}
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ow_validation_error(PG_ARGISNULL(0) ? "groupRef" : "principal",
							"group_ref and principal must not be null");
	group_ref = text_to_cstring(PG_GETARG_TEXT_PP(0));
	principal = text_to_cstring(PG_GETARG_TEXT_PP(1));
	if (group_ref[0] == '\0')
		ow_validation_error("groupRef", "group_ref must not be empty");
	if (!ow_valid_subject_ref(principal))
		ow_validation_error("principal",
							"principal must be a subject id, or \"<issuer>/<subject id>\", without white space");
	if (add && strcmp(principal, OW_TOKEN_PRINCIPAL) == 0)
		ow_validation_error("principal", "\"%s\" is reserved for tokens that name no principal",
							OW_TOKEN_PRINCIPAL);
	/* who is calling matters only when no tenant is named */
	if (tenant == NULL)
	{
		ow_caller(&call.caller);
		tenant = call.caller.subject.tenant;
	}

	ow_call_enter(&call);
	args[0] = CStringGetTextDatum(tenant);
	args[1] = CStringGetTextDatum(group_ref);
	args[2] = CStringGetTextDatum(principal);
	changed = ow_exec(add ? &add_member : &remove_member, args, NULL, false, 0) > 0;
	ow_call_end(&call);
	ow_call_finish(&call);
	PG_RETURN_BOOL(changed);
}

Datum
ow_add_group_member(PG_FUNCTION_ARGS)
{
	return change_membership(fcinfo, true);
}

Datum
ow_remove_group_member(PG_FUNCTION_ARGS)
{
	return change_membership(fcinfo, false);
}

/* ----------
 * Settings
 * ----------
 */

void
ow_define_approval_settings(void)
{
	DefineCustomStringVariable("openwop.override_group",
							   "Group whose members are override principals of approval gates.",
							   "Manage it with openwop.add_group_member; an override principal releases a gate alone when overrideBypassesQuorum is true.",
							   &ow_override_group,
							   "openwop-override",
							   PGC_SUSET,
							   0,
							   NULL, NULL, NULL);
}
