/*-------------------------------------------------------------------------
 *
 * approvals.c
 *	  Approval gates: who may decide (approversList, approverGroupRefs,
 *	  approverRoleRefs, override principals), one vote per voter, and the
 *	  quorum / single-veto / majority tally (the "Approval" and "Approver
 *	  enforcement" sections of the OpenWOP interrupt spec).
 *
 * A gate pinned by approval policies (policies.c) follows the stricter rule
 * they make: their groups' members are eligible too, each group's
 * requirement is met by distinct humans (one human counts toward one
 * requirement only, however many groups they are in), and the run's
 * requester and owner may not vote.  A voter not eligible itself may vote
 * as a delegator whose delegation it holds (delegations.c).
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
#include "domain/internal.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"

PG_FUNCTION_INFO_V1(ow_add_group_member);
PG_FUNCTION_INFO_V1(ow_remove_group_member);

/* The group whose members are override principals of approval gates. */
static char *ow_override_group = NULL;

static bool
list_has_string(List *l, const char *s)
{
	ListCell   *lc;

	foreach(lc, l)
		if (strcmp((char *) lfirst(lc), s) == 0)
			return true;
	return false;
}

/* who has given the gate openwop.max_votes_per_voter answers as voter already. */
#define ANSWERS_HINT "Each voter may give a gate openwop.max_votes_per_voter answers (votes, re-votes and asks)."
static void
too_many_answers(const OwSubject *who, const char *voter, const char *interrupt_id)
{
	OwDetails	d;

	ow_details_init(&d);
	ow_details_str(&d, "field", "resumeValue");
	ow_details_str(&d, "interruptId", interrupt_id);
	ow_details_int(&d, "limit", ow_max_votes_per_voter);
	ow_details_str(&d, "setting", "openwop.max_votes_per_voter");
	if (strcmp(voter, who->subject_id) != 0)
		ow_raise(OW_VALIDATION_ERROR, &d, ANSWERS_HINT,
				 "\"%s\" has answered interrupt \"%s\" as \"%s\" %d times, the most allowed",
				 who->subject_id, interrupt_id, voter, ow_max_votes_per_voter);
	ow_raise(OW_VALIDATION_ERROR, &d, ANSWERS_HINT,
			 "\"%s\" has answered interrupt \"%s\" %d times, the most allowed",
			 who->subject_id, interrupt_id, ow_max_votes_per_voter);
}

/*
 * Who cast a vote: the person its eligibility record names (a delegate
 * casts its delegator's), or, on a vote recorded before delegation, the
 * voter.
 */
#define CAST_BY "COALESCE(eligibility OPERATOR(pg_catalog.->>) 'principal', voter)"
/* the gate's votes cast by $9 as another voter than $3 */
#define VOTED_AS_ANOTHER_FROM \
	" FROM openwop.votes" \
	" WHERE tenant OPERATOR(pg_catalog.=) $1 AND interrupt_id OPERATOR(pg_catalog.=) $2" \
	"   AND voter OPERATOR(pg_catalog.<>) $3 AND " CAST_BY " OPERATOR(pg_catalog.=) $9"
#define VOTED_AS_ANOTHER "SELECT" VOTED_AS_ANOTHER_FROM
/*
 * The revision of voter $3's latest void on the gate ($1, $2), or 0: a
 * change of the artifact voided what the voter had said, so the answers
 * before it are no longer the voter's to count against the cap.
 */
#define LAST_VOID \
	"COALESCE((SELECT pg_catalog.max(l.revision) FROM openwop.votes l" \
	"           WHERE l.tenant OPERATOR(pg_catalog.=) $1 AND l.interrupt_id OPERATOR(pg_catalog.=) $2" \
	"             AND l.voter OPERATOR(pg_catalog.=) $3 AND l.action OPERATOR(pg_catalog.=) 'void'), 0)"

/*
 * A REPEATABLE READ or SERIALIZABLE caller counts and checks the gate's
 * votes as its snapshot shows them; a vote another transaction committed
 * since (which a counted vote records without changing the run row, so the
 * run lock raises nothing) would make it count a tally that is not the
 * gate's or let one person vote twice: a serialization failure (40001),
 * retried as any other.  args: the vote's ($1 tenant, $2 interrupt).
 */
static void
refuse_unseen_votes(Datum *args)
{
	static OwQuery count = {
		"SELECT pg_catalog.count(*) FROM openwop.votes"
		" WHERE tenant OPERATOR(pg_catalog.=) $1 AND interrupt_id OPERATOR(pg_catalog.=) $2",
		2, {TEXTOID, TEXTOID}, SPI_OK_SELECT
	};
	int64		seen;

	if (ow_exec(&count, args, NULL, true, 1) != 1)
		elog(ERROR, "could not count the votes of an interrupt");
	seen = ow_col_int64(0, 1);
	if (ow_exec_latest(&count, args, NULL, 1) != 1)
		elog(ERROR, "could not count the votes of an interrupt");
	if (ow_col_int64(0, 1) != seen)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access due to a concurrent vote"),
				 errdetail("Another transaction recorded a vote on this gate after this transaction's snapshot was taken."),
				 errhint("Retry the transaction.")));
}

/* who has voted on the gate as voted_as already: one person, one vote (403). */
static void
voted_as_another(const OwSubject *who, const char *voted_as)
{
	OwDetails	d;

	ow_details_init(&d);
	ow_details_str(&d, "principal", who->subject_id);
	ow_details_str(&d, "votedAs", voted_as);
	ow_raise(OW_FORBIDDEN, &d,
			 "One person has one vote on a gate, whether its own or a delegator's; a re-vote goes to the same one.",
			 "principal \"%s\" has voted on this gate as \"%s\" already", who->subject_id, voted_as);
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
	List	   *matched;		/* "approversList", "group:<ref>", "policy-group:<ref>",
								 * "role:<ref>" or "any"; NIL: not eligible */
	List	   *groups;			/* its groups among approverGroupRefs, the
								 * policies' groups and the override group */
	List	   *roles;			/* the approverRoleRefs its login holds */
	bool		is_override;	/* a member of openwop.override_group */
} Eligibility;

/*
 * Decide, now, whether the subject who may vote on the gate described by
 * data and rule, in tenant; login is the session's login for a SQL caller
 * (role refs match only logins), InvalidOid otherwise.  known_groups, when
 * given, are all the subject's groups in the tenant, already read (else
 * they are looked up).  Eligible when the gate names no approvers at all
 * and its policies no groups, or when an approversList entry names the
 * subject (its subjectId, or "<issuer>/<subjectId>"), or it is in one of
 * approverGroupRefs or of the policies' groups, or its login holds one of
 * approverRoleRefs, or it is in the group of an escalation of the policies
 * whose instant has passed.  Membership of the override group makes a
 * voter eligible by another route than an escalation an override
 * principal; it makes no one eligible.
 */
static void
decide_eligibility(const char *tenant, JsonbContainer *data, const OwGateRule *rule,
				   const OwSubject *who, Oid login, List **known_groups, Eligibility *e)
{
	List	   *listed = owj_string_list(data, "approversList");
	List	   *group_refs = owj_string_list(data, "approverGroupRefs");
	List	   *role_refs = owj_string_list(data, "approverRoleRefs");
	List	   *asked = list_copy(group_refs);
	ListCell   *lc;
	int			i;
	/* an escalation's group is eligible from its instant on, fired or not */
	TimestampTz now = GetCurrentTimestamp();

	for (i = 0; i < rule->ngroups; i++)
		asked = lappend(asked, (char *) rule->groups[i].ref);
	for (i = 0; i < rule->nescalations; i++)
		if (rule->escalations[i].at <= now)
			asked = lappend(asked, (char *) rule->escalations[i].ref);
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
	{
		if (list_has_string(group_refs, lfirst(lc)))
			e->matched = lappend(e->matched, psprintf("group:%s", (char *) lfirst(lc)));
		for (i = 0; i < rule->ngroups; i++)
			if (strcmp(rule->groups[i].ref, lfirst(lc)) == 0)
				e->matched = lappend(e->matched, psprintf("policy-group:%s", (char *) lfirst(lc)));
		for (i = 0; i < rule->nescalations; i++)
			if (rule->escalations[i].at <= now && strcmp(rule->escalations[i].ref, lfirst(lc)) == 0)
				e->matched = lappend(e->matched, psprintf("escalation:%s", (char *) lfirst(lc)));
	}
	foreach(lc, e->roles)
		e->matched = lappend(e->matched, psprintf("role:%s", (char *) lfirst(lc)));
	if (listed == NIL && group_refs == NIL && role_refs == NIL && rule->ngroups == 0)
		e->matched = lappend(e->matched, "any");
	/* an escalation adds voters, never an override principal's power over the quorum */
	if (e->is_override)
	{
		bool		other = false;

		foreach(lc, e->matched)
			other |= strncmp(lfirst(lc), "escalation:", 11) != 0;
		e->is_override = other;
	}
}

/*
 * Why the subject may not vote on a gate whose policy excludes the
 * requester: "owner" (it started the run), "requester" (create_run named
 * it), or NULL.  By subjectId, whatever the issuer on either side: a bare
 * approversList entry or group member is one person under every issuer, so
 * the requester is too (excluding a namesake of another issuer fails closed).
 */
static const char *
excluded_as(const OwGateRule *rule, const OwSubject *who)
{
	if (!rule->exclude_requester)
		return NULL;
	if (rule->owner && strcmp(ow_ref_subject_id(rule->owner), who->subject_id) == 0)
		return "owner";
	if (rule->requester && strcmp(ow_ref_subject_id(rule->requester), who->subject_id) == 0)
		return "requester";
	return NULL;
}

/* Is the subject the run's owner or requester, on a gate whose policy excludes them? */
bool
ow_approval_excluded(const OwGateRule *rule, const OwSubject *who)
{
	return excluded_as(rule, who) != NULL;
}

/* The voter who has voted for on the gate as someone else (a delegator), or NULL. */
static const char *
voted_for_on(const char *tenant, const char *interrupt_id, const OwSubject *who)
{
	static OwQuery q = {
		"SELECT voter FROM openwop.votes"
		" WHERE tenant OPERATOR(pg_catalog.=) $1 AND interrupt_id OPERATOR(pg_catalog.=) $2"
		"   AND voter OPERATOR(pg_catalog.<>) $3 AND " CAST_BY " OPERATOR(pg_catalog.=) $3"
		" LIMIT 1",
		3, {TEXTOID, TEXTOID, TEXTOID}, SPI_OK_SELECT
	};
	Datum		args[3];

	args[0] = CStringGetTextDatum(tenant);
	args[1] = CStringGetTextDatum(interrupt_id);
	args[2] = CStringGetTextDatum(who->subject_id);
	return ow_exec(&q, args, NULL, false, 1) == 1 ? ow_col_text(0, 1) : NULL;
}

/* Refuse the run's owner or requester on a gate whose policy excludes them (403). */
static void
refuse_excluded(const OwGateRule *rule, const OwSubject *who)
{
	const char *as = excluded_as(rule, who);
	OwDetails	d;

	if (as == NULL)
		return;
	ow_details_init(&d);
	ow_details_str(&d, "principal", who->subject_id);
	ow_details_str(&d, "reason", strcmp(as, "owner") == 0 ? "run-owner" : "requester");
	ow_details_str(&d, "policy", owj_string(owj_get(rule->pin, "name")));
	ow_raise(OW_FORBIDDEN, &d,
			 "The approval policy of this gate separates duties: whoever asked for the run does not approve it.",
			 strcmp(as, "owner") == 0
			 ? "principal \"%s\" started this run and may not vote on its gate"
			 : "principal \"%s\" requested this run and may not vote on its gate",
			 who->subject_id);
}

/*
 * The eligibility of a vote (decide_eligibility, in the run's tenant):
 * refuses with 403 forbidden when the subject is excluded by the gate's
 * policy, or is not eligible itself and holds no delegation of someone who
 * is (the run keeps waiting).  *voter: whom the vote counts as, the
 * subject or the delegator it votes for.  Returns the decision to record:
 * {principal, subject, matched: [...], groups: [...], roles: [...],
 * override} and, for a vote on behalf of a delegator, {onBehalfOf,
 * delegationId} with the delegator's matched, groups and override.
 */
Jsonb *
ow_approval_eligibility(OwRun *run, const char *interrupt_id, JsonbContainer *data,
						const OwGateRule *rule, const OwSubject *who, Oid login, List **known_groups,
						bool *is_override, const char **voter)
{
	Eligibility e;
	const OwDelegation *on_behalf = NULL;
	OwJson		j;

	refuse_excluded(rule, who);
	decide_eligibility(run->tenant, data, rule, who, login, known_groups, &e);
	if (e.matched == NIL)
	{
		ListCell   *lc;

		List	   *held = ow_delegations_held(run->tenant, who, true);
		const char *voted_for = held ? voted_for_on(run->tenant, interrupt_id, who) : NULL;

		/*
		 * The delegations it holds: the delegator it voted for on this gate
		 * already, if it still may, else the first eligible itself (never a
		 * delegate's delegate).
		 */
		if (voted_for)
			foreach(lc, held)
			{
				OwDelegation *d = lfirst(lc);

				if (strcmp(d->delegator.subject_id, voted_for) == 0)
				{
					held = list_make1(d);
					break;
				}
			}
		foreach(lc, held)
		{
			const OwDelegation *d = lfirst(lc);

			if (excluded_as(rule, &d->delegator))
				continue;
			decide_eligibility(run->tenant, data, rule, &d->delegator, InvalidOid, NULL, &e);
			if (e.matched != NIL)
			{
				/* eligibility is delegated; an override principal's power is not */
				on_behalf = d;
				e.is_override = false;
				break;
			}
		}
	}
	*is_override = e.is_override;
	*voter = on_behalf ? on_behalf->delegator.subject_id : who->subject_id;
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
	if (on_behalf)
	{
		owj_str(&j, "onBehalfOf", on_behalf->delegator_ref);
		owj_str(&j, "delegationId", on_behalf->delegation_id);
	}
	return owj_end(&j);
}

/*
 * Would ow_approval_eligibility let the subject vote on the gate?  The
 * same decision, without a refusal; groups are all the subject's groups in
 * the gate's tenant (ow_subject_groups), so nothing is read.
 */
bool
ow_approval_eligible(JsonbContainer *data, const OwGateRule *rule, const OwSubject *who, Oid login,
					 List *groups)
{
	Eligibility e;

	if (excluded_as(rule, who))
		return false;
	decide_eligibility(NULL, data, rule, who, login, &groups, &e);
	return e.matched != NIL;
}

/*
 * Is an answer with this action recorded in openwop.votes, where it counts
 * against openwop.max_votes_per_voter?  On a one-vote gate whose policies
 * ask for no group any answer but ask decides at once and is recorded only
 * in interrupt.resolved.
 */
static bool
answer_is_recorded(const OwGateRule *rule, const char *action)
{
	return rule->required != 1 || rule->ngroups > 0 || strcmp(action, "ask") == 0 ||
		strcmp(action, "withdraw") == 0;
}

/*
 * Does every answer the gate takes count against openwop.max_votes_per_voter
 * (see answer_is_recorded)?  If not, a voter who used up its answers may
 * still decide the gate.
 */
bool
ow_approval_answers_limited(JsonbContainer *data, const OwGateRule *rule)
{
	ListCell   *lc;

	foreach(lc, owj_string_list(data, "actions"))
		if (!answer_is_recorded(rule, lfirst(lc)))
			return false;
	return true;
}

/* Does a voter's latest answer (but an ask) count: neither withdrawn nor voided? */
static bool
counted(const char *action)
{
	return strcmp(action, "withdraw") != 0 && strcmp(action, "void") != 0;
}

/*
 * Has who an answer left on the gate as voter (itself, or the delegator it
 * votes for): fewer than openwop.max_votes_per_voter given, and no vote
 * as anyone else?
 */
bool
ow_approval_answer_left(const char *tenant, const char *interrupt_id, const char *voter,
						const OwSubject *who)
{
	static OwQuery q = {
		"SELECT pg_catalog.count(*) FILTER (WHERE voter OPERATOR(pg_catalog.=) $3"
		"                                    AND revision OPERATOR(pg_catalog.>) " LAST_VOID ")"
		"         OPERATOR(pg_catalog.<) $4"
		"       AND pg_catalog.count(*) FILTER (WHERE voter OPERATOR(pg_catalog.<>) $3) OPERATOR(pg_catalog.=) 0"
		"  FROM openwop.votes"
		" WHERE tenant OPERATOR(pg_catalog.=) $1"
		"   AND interrupt_id OPERATOR(pg_catalog.=) $2"
		"   AND " CAST_BY " OPERATOR(pg_catalog.=) $5",
		5, {TEXTOID, TEXTOID, TEXTOID, INT4OID, TEXTOID}, SPI_OK_SELECT
	};
	Datum		args[5];

	args[0] = CStringGetTextDatum(tenant);
	args[1] = CStringGetTextDatum(interrupt_id);
	args[2] = CStringGetTextDatum(voter);
	args[3] = Int32GetDatum(ow_max_votes_per_voter);
	args[4] = CStringGetTextDatum(who->subject_id);
	if (ow_exec(&q, args, NULL, true, 1) != 1)
		elog(ERROR, "could not count the answers to interrupt \"%s\"", interrupt_id);
	return ow_col_bool(0, 1);
}

/*
 * The accepting voters of a gate under a rule with groups, each with the
 * groups it was recorded in when it voted: who may fill which requirement.
 */
typedef struct Acceptor
{
	List	   *groups;			/* indexes into the rule's groups */
	int			assigned;		/* the group it counts toward, or -1 */
} Acceptor;

/*
 * Try to count acceptor a toward a group requirement, moving others to
 * another of their groups if that frees a place (an augmenting path):
 * visited marks the groups this search passed.
 */
static bool
count_toward(Acceptor *acc, int nacc, int a, int *load, const OwGateRule *rule, bool *visited)
{
	ListCell   *lc;
	int			b;

	foreach(lc, acc[a].groups)
	{
		int			g = lfirst_int(lc);

		if (visited[g])
			continue;
		visited[g] = true;
		if (load[g] < rule->groups[g].required)
		{
			acc[a].assigned = g;
			load[g]++;
			return true;
		}
		for (b = 0; b < nacc; b++)
			if (b != a && acc[b].assigned == g && count_toward(acc, nacc, b, load, rule, visited))
			{
				/* b moved to another of its groups: a takes its place in g */
				acc[a].assigned = g;
				return true;
			}
	}
	return false;
}

/*
 * Count the accepting voters toward the rule's group requirements, each
 * voter toward one requirement only (a maximum matching of voters to the
 * places the groups ask for): met[g], the accepts counted toward group g.
 * Every requirement is met when the matching fills every place.
 */
static bool
groups_met(Acceptor *acc, int nacc, const OwGateRule *rule, int *met)
{
	bool	   *visited = palloc(sizeof(bool) * rule->ngroups);
	bool		all = true;
	int			a;
	int			g;

	memset(met, 0, sizeof(int) * rule->ngroups);
	for (a = 0; a < nacc; a++)
	{
		memset(visited, 0, sizeof(bool) * rule->ngroups);
		(void) count_toward(acc, nacc, a, met, rule, visited);
	}
	for (g = 0; g < rule->ngroups; g++)
		all &= met[g] >= rule->groups[g].required;
	return all;
}

/*
 * The tally of a gate whose rule has groups: each voter's latest answer
 * but an ask (which never withdraws a vote, as in the count below), and
 * for each accepting voter the groups its vote was recorded in.
 * Returns whether every group requirement is met.
 */
static bool
tally_groups(OwRun *run, const char *interrupt_id, const OwGateRule *rule, OwVote *vote)
{
	static OwQuery latest = {
		"SELECT DISTINCT ON (voter) action, eligibility OPERATOR(pg_catalog.->) 'groups'"
		"  FROM openwop.votes"
		" WHERE tenant OPERATOR(pg_catalog.=) $1"
		"   AND interrupt_id OPERATOR(pg_catalog.=) $2"
		"   AND action OPERATOR(pg_catalog.<>) 'ask'"
		" ORDER BY voter, revision DESC",
		2, {TEXTOID, TEXTOID}, SPI_OK_SELECT
	};
	Datum		args[2];
	uint64		n;
	uint64		i;
	Acceptor   *acc;
	int			nacc = 0;

	args[0] = CStringGetTextDatum(run->tenant);
	args[1] = CStringGetTextDatum(interrupt_id);
	n = ow_exec(&latest, args, NULL, false, 0);
	acc = palloc0(sizeof(Acceptor) * (n + 1));
	vote->accepts = vote->rejects = vote->voters = 0;
	for (i = 0; i < n; i++)
	{
		char	   *action = ow_col_text(i, 1);
		Jsonb	   *groups;
		int			k;
		int			g;

		if (!counted(action))
			continue;
		vote->voters++;
		if (strcmp(action, "reject") == 0)
			vote->rejects++;
		if (strcmp(action, "accept") != 0 && strcmp(action, "edit-accept") != 0)
			continue;
		vote->accepts++;
		acc[nacc].assigned = -1;
		groups = ow_col_jsonb(i, 2);
		for (k = 0; groups && JB_ROOT_IS_ARRAY(groups) && k < (int) JB_ROOT_COUNT(groups); k++)
		{
			char	   *ref = owj_string(getIthJsonbValueFromContainer(&groups->root, k));

			for (g = 0; ref && g < rule->ngroups; g++)
				if (strcmp(rule->groups[g].ref, ref) == 0)
					acc[nacc].groups = lappend_int(acc[nacc].groups, g);
		}
		nacc++;
	}
	vote->ngroups = rule->ngroups;
	vote->groups = rule->groups;
	vote->met = palloc(sizeof(int) * rule->ngroups);
	return groups_met(acc, nacc, rule, vote->met);
}

/*
 * Record the vote who cast as voter (itself, or the delegator it votes
 * for): a new revision of voter's (the latest per voter counts;
 * the deciding answer of a one-vote gate lives only in interrupt.resolved)
 * and tally the gate by its rule:
 *   - ask is recorded and never decides;
 *   - refine exits the suspend at once (the node revises; nothing is granted);
 *   - an override principal releases the gate alone when the rule allows
 *     it (accept: overridden; reject: rejected);
 *   - single-veto: one eligible reject rejects; majority: rejects above
 *     half of required reject (reason quorum-reject);
 *   - accepts (edit-accept counts) reaching required grant, once every
 *     group requirement is met by distinct accepting voters.
 */
void
ow_approval_vote(OwRun *run, const char *interrupt_id, const OwGateRule *rule,
				 const OwSubject *who, const char *voter, const char *action,
				 Jsonb *resume_value, Jsonb *eligibility, bool is_override, OwVote *vote)
{
	/*
	 * The next revision of voter's, unless the person casting it ($9) has
	 * given $8 answers as voter already, or has voted on the gate as
	 * someone else (itself, or another delegator): one person, one vote.
	 */
	static OwQuery insert_vote = {
		"INSERT INTO openwop.votes"
		" (tenant, interrupt_id, voter, revision, action, resume_value, eligibility,"
		"  voter_subject, artifact_digest)"
		" SELECT $1, $2, $3, COALESCE(pg_catalog.max(revision), 0) OPERATOR(pg_catalog.+) 1,"
		"        $4, $5, $6, $7, $10"
		"   FROM openwop.votes"
		"  WHERE tenant OPERATOR(pg_catalog.=) $1"
		"    AND interrupt_id OPERATOR(pg_catalog.=) $2"
		"    AND voter OPERATOR(pg_catalog.=) $3"
		" HAVING pg_catalog.count(*) FILTER (WHERE " CAST_BY " OPERATOR(pg_catalog.=) $9"
		"                                      AND revision OPERATOR(pg_catalog.>) " LAST_VOID ")"
		"        OPERATOR(pg_catalog.<) $8"
		"    AND NOT EXISTS (" VOTED_AS_ANOTHER ")",
		10, {TEXTOID, TEXTOID, TEXTOID, TEXTOID, JSONBOID, JSONBOID, JSONBOID, INT4OID, TEXTOID, TEXTOID},
		SPI_OK_INSERT
	};
	static OwQuery voted_as = {
		"SELECT voter" VOTED_AS_ANOTHER_FROM " LIMIT 1",
		9, {TEXTOID, TEXTOID, TEXTOID, TEXTOID, JSONBOID, JSONBOID, JSONBOID, INT4OID, TEXTOID},
		SPI_OK_SELECT
	};
	static OwQuery tally = {
		"SELECT pg_catalog.count(*) FILTER (WHERE action OPERATOR(pg_catalog.=) ANY"
		"            ('{accept,edit-accept}'::pg_catalog.text[])),"
		"       pg_catalog.count(*) FILTER (WHERE action OPERATOR(pg_catalog.=) 'reject'),"
		"       pg_catalog.count(*) FILTER (WHERE action OPERATOR(pg_catalog.<>) ALL"
		"            ('{withdraw,void}'::pg_catalog.text[]))"
		"  FROM (SELECT DISTINCT ON (voter) voter, action FROM openwop.votes"
		"         WHERE tenant OPERATOR(pg_catalog.=) $1"
		"           AND interrupt_id OPERATOR(pg_catalog.=) $2"
		"           AND action OPERATOR(pg_catalog.<>) 'ask'"
		"         ORDER BY voter, revision DESC) latest",
		2, {TEXTOID, TEXTOID}, SPI_OK_SELECT
	};
	bool		groups_ok = true;
	Datum		args[10];
	char		nulls[10];

	vote->required = rule->required;
	vote->ngroups = 0;
	vote->groups = NULL;
	vote->met = NULL;

	args[0] = CStringGetTextDatum(run->tenant);
	args[1] = CStringGetTextDatum(interrupt_id);
	args[2] = CStringGetTextDatum(voter);
	args[3] = CStringGetTextDatum(action);
	args[4] = JsonbPGetDatum(resume_value);
	args[5] = JsonbPGetDatum(eligibility);
	args[6] = JsonbPGetDatum(ow_subject_jsonb(who));
	/* a withdrawal is never capped: the votes it takes back are */
	args[7] = Int32GetDatum(strcmp(action, "withdraw") == 0 ? PG_INT32_MAX : ow_max_votes_per_voter);
	args[8] = CStringGetTextDatum(who->subject_id);
	/* the artifact the vote was cast on */
	memset(nulls, ' ', sizeof(nulls));
	args[9] = rule->digest ? CStringGetTextDatum(rule->digest) : (Datum) 0;
	nulls[9] = rule->digest ? ' ' : 'n';
	if (!answer_is_recorded(rule, action))
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
		if (IsolationUsesXactSnapshot())
			refuse_unseen_votes(args);
		if (ow_exec(&insert_vote, args, nulls, false, 0) != 1)
		{
			if (ow_exec(&voted_as, args, NULL, false, 1) == 1)
				voted_as_another(who, ow_col_text(0, 1));
			too_many_answers(who, voter, interrupt_id);
		}
		if (rule->ngroups > 0)
			groups_ok = tally_groups(run, interrupt_id, rule, vote);
		else
		{
			if (ow_exec(&tally, args, NULL, false, 1) != 1)
				elog(ERROR, "could not tally the votes of interrupt \"%s\"", interrupt_id);
			vote->accepts = (int) ow_col_int64(0, 1);
			vote->rejects = (int) ow_col_int64(0, 2);
			vote->voters = (int) ow_col_int64(0, 3);
		}
	}

	vote->decided = false;
	vote->decision = NULL;
	vote->reason = NULL;
	vote->action = action;
	/* an ask is recorded, a withdrawal takes a vote back: neither decides */
	if (strcmp(action, "ask") == 0 || strcmp(action, "withdraw") == 0)
		return;
	if (strcmp(action, "refine") == 0)
	{
		vote->decided = true;
		return;
	}
	if (is_override && rule->bypass)
	{
		vote->decided = true;
		vote->decision = strcmp(action, "reject") == 0 ? "rejected" : "overridden";
		return;
	}
	if (!rule->majority && vote->rejects >= 1)
	{
		vote->decided = true;
		vote->decision = "rejected";
		vote->action = "reject";
	}
	else if (rule->majority && 2 * vote->rejects > vote->required)
	{
		vote->decided = true;
		vote->decision = "rejected";
		vote->action = "reject";
		vote->reason = "quorum-reject";
	}
	else if (vote->accepts >= vote->required && groups_ok)
	{
		vote->decided = true;
		vote->decision = "granted";
	}
}

/*
 * A voter of a receipt, in jsonb's key order: what it said, who and on
 * whose behalf (when named), how authenticated.
 */
static void
receipt_voter(OwJson *j, const char *action, Jsonb *subject, const char *voter, bool named)
{
	JsonbValue *issuer = owj_get(subject, "issuer");
	JsonbValue *id = owj_get(subject, "subjectId");

	owj_begin_object(j, NULL);
	owj_str(j, "action", action);
	if (named)
		owj_jsonb(j, "subject", subject);
	if (named && id && id->type == jbvString && strcmp(owj_string(id), voter) != 0)
		owj_str(j, "onBehalfOf", voter);
	owj_str(j, "authenticatedBy",
			issuer && issuer->type == jbvString ? ow_issuer_authentication(owj_string(issuer)) : "unknown");
	owj_end_object(j);
}

/*
 * The voters a decided gate counted, for its receipt: under key, an array
 * of {action, subject, onBehalfOf?, authenticatedBy} in voter order.  On a
 * gate whose answers are recorded, each voter's latest counted vote; else
 * the one answer that decided it (who, as voter, saying action).  A bare
 * token's holder (who) is answered no voter's name: the link names nobody,
 * so it learns nobody's.
 */
void
owj_approval_voters(OwJson *j, const char *key, OwRun *run, const char *interrupt_id,
					const OwGateRule *rule, const OwSubject *who, const char *voter,
					const char *action)
{
	static OwQuery counted = {
		"SELECT voter, action, voter_subject FROM ("
		"  SELECT DISTINCT ON (voter) voter, action, voter_subject FROM openwop.votes"
		"   WHERE tenant OPERATOR(pg_catalog.=) $1 AND interrupt_id OPERATOR(pg_catalog.=) $2"
		"     AND action OPERATOR(pg_catalog.<>) 'ask'"
		"   ORDER BY voter, revision DESC) latest"
		" WHERE action OPERATOR(pg_catalog.<>) ALL ('{withdraw,void}'::pg_catalog.text[])"
		" ORDER BY voter",
		2, {TEXTOID, TEXTOID}, SPI_OK_SELECT
	};

	bool		named = strcmp(who->issuer, OW_ISSUER_ANON) != 0;

	owj_begin_array(j, key);
	if (!answer_is_recorded(rule, action))
		receipt_voter(j, action, ow_subject_jsonb(who), voter ? voter : who->subject_id, named);
	else
	{
		Datum		args[2];
		uint64		n;
		uint64		i;

		args[0] = CStringGetTextDatum(run->tenant);
		args[1] = CStringGetTextDatum(interrupt_id);
		n = ow_exec(&counted, args, NULL, false, 0);
		for (i = 0; i < n; i++)
			receipt_voter(j, ow_col_text(i, 2), ow_col_jsonb(i, 3), ow_col_text(i, 1), named);
	}
	owj_end_array(j);
}

/*
 * Withdraw who's counted vote on the gate (of node_id, request data), cast
 * as voter (itself, or the delegator it votes for, as
 * ow_approval_eligibility decided it now: who
 * may withdraw only what it may cast): a new revision, action "withdraw",
 * with that vote's eligibility record, then the tally (nothing is
 * decided).  404 when voter's latest vote is not who's counted one (never
 * voted, only asked, withdrawn already, or the delegator's own vote
 * replaced it).  A withdrawal is not capped by openwop.max_votes_per_voter:
 * the votes it takes back are.
 */
void
ow_approval_withdraw(OwRun *run, const char *interrupt_id, const char *node_id, JsonbContainer *data,
					 const OwGateRule *rule, const OwSubject *who, const char *voter, OwVote *vote)
{
	/* voter's latest answer but an ask */
	static OwQuery latest = {
		"SELECT action, " CAST_BY ", eligibility FROM openwop.votes"
		" WHERE tenant OPERATOR(pg_catalog.=) $1 AND interrupt_id OPERATOR(pg_catalog.=) $2"
		"   AND voter OPERATOR(pg_catalog.=) $3 AND action OPERATOR(pg_catalog.<>) 'ask'"
		" ORDER BY revision DESC LIMIT 1",
		3, {TEXTOID, TEXTOID, TEXTOID}, SPI_OK_SELECT
	};
	Datum		args[3];
	OwJson		j;

	args[0] = CStringGetTextDatum(run->tenant);
	args[1] = CStringGetTextDatum(interrupt_id);
	args[2] = CStringGetTextDatum(voter);
	/* a vote committed since the snapshot is what it would take back: see it, or fail 40001 */
	if (IsolationUsesXactSnapshot())
		refuse_unseen_votes(args);
	if (ow_exec(&latest, args, NULL, false, 1) != 1 || !counted(ow_col_text(0, 1)) ||
		strcmp(ow_col_text(0, 2), who->subject_id) != 0)
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "principal", who->subject_id);
		ow_details_str(&d, "interruptId", interrupt_id);
		ow_raise(OW_NOT_FOUND, &d, NULL,
				 "principal \"%s\" has no counted vote on interrupt \"%s\" to withdraw",
				 who->subject_id, interrupt_id);
	}
	owj_begin(&j);
	owj_str(&j, "action", "withdraw");
	owj_str(&j, "decidedAt", owj_iso8601(GetCurrentTimestamp()));
	owj_str(&j, "decidedBy", who->subject_id);
	ow_approval_vote(run, interrupt_id, rule, who, voter, "withdraw", owj_end(&j), ow_col_jsonb(0, 3),
					 false, vote);
	if (ow_outbox_on())
	{
		ow_notice_detail(&j, node_id, data, true);
		owj_str(&j, "voter", voter);
		(void) ow_notify_voter(run, interrupt_id, "withdrawn", voter, rule, owj_end(&j));
	}
}

/*
 * The gate's artifact is now digest (artifact_changed, artifacts.c): void
 * each counted vote bound to another (cast on another digest, or before
 * the engine told one), because reason.  A void is a new revision of the
 * voter's, action "void", with the voided vote's eligibility record and
 * caster (it stays that person's, for one person, one vote) and the new
 * digest; it is nobody's answer, so it counts against no cap.  Returns the
 * votes voided, [{voter, digest, action}] by voter.
 */
Jsonb *
ow_approval_void_votes(OwRun *run, const char *interrupt_id, const char *digest, const char *reason)
{
	static OwQuery void_votes = {
		"WITH latest AS ("
		"  SELECT DISTINCT ON (voter) voter, action, eligibility, voter_subject, artifact_digest"
		"    FROM openwop.votes"
		"   WHERE tenant OPERATOR(pg_catalog.=) $1 AND interrupt_id OPERATOR(pg_catalog.=) $2"
		"     AND action OPERATOR(pg_catalog.<>) 'ask'"
		"   ORDER BY voter, revision DESC),"
		" voided AS ("
		"  INSERT INTO openwop.votes"
		"  (tenant, interrupt_id, voter, revision, action, resume_value, eligibility, voter_subject,"
		"   artifact_digest)"
		"  SELECT $1, $2, l.voter,"
		"         (SELECT pg_catalog.max(v.revision) FROM openwop.votes v"
		"           WHERE v.tenant OPERATOR(pg_catalog.=) $1 AND v.interrupt_id OPERATOR(pg_catalog.=) $2"
		"             AND v.voter OPERATOR(pg_catalog.=) l.voter) OPERATOR(pg_catalog.+) 1,"
		"         'void',"
		"         pg_catalog.jsonb_build_object('action', 'void', 'voided', l.action, 'votedDigest', l.artifact_digest,"
		"                                       'digest', $3, 'reason', $4, 'decidedAt', $5),"
		"         l.eligibility, l.voter_subject, $3"
		"    FROM latest l"
		"   WHERE l.action OPERATOR(pg_catalog.<>) ALL ('{withdraw,void}'::pg_catalog.text[])"
		"     AND l.artifact_digest IS DISTINCT FROM $3"
		"  RETURNING voter, resume_value)"
		" SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object("
		"          'voter', voter, 'digest', resume_value OPERATOR(pg_catalog.->) 'votedDigest',"
		"          'action', resume_value OPERATOR(pg_catalog.->) 'voided') ORDER BY voter), '[]')"
		"   FROM voided",
		5, {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID}, SPI_OK_SELECT
	};
	Datum		args[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', ' '};

	args[0] = CStringGetTextDatum(run->tenant);
	args[1] = CStringGetTextDatum(interrupt_id);
	args[2] = CStringGetTextDatum(digest);
	args[3] = reason ? CStringGetTextDatum(reason) : (Datum) 0;
	nulls[3] = reason ? ' ' : 'n';
	args[4] = CStringGetTextDatum(owj_iso8601(GetCurrentTimestamp()));
	/* a vote committed since the snapshot is one to void: see it, or fail 40001 */
	if (IsolationUsesXactSnapshot())
		refuse_unseen_votes(args);
	if (ow_exec(&void_votes, args, nulls, false, 1) != 1)
		elog(ERROR, "could not void the votes of interrupt \"%s\"", interrupt_id);
	return ow_col_jsonb(0, 1);
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
