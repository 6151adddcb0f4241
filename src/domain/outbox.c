/*-------------------------------------------------------------------------
 *
 * outbox.c
 *	  The notification outbox: who should hear of an approval gate's event,
 *	  written as rows of openwop.notifications in the event's transaction,
 *	  claimed by senders with a lease and acknowledged (claim_notifications,
 *	  ack_notifications), and kept bounded by the database worker.
 *
 * A gate's audience is its data.audience when it names one (a hint, never
 * eligibility: the spec's "audience"), else the union of its eligibility
 * refs: approversList, the members of approverGroupRefs, of the groups of
 * the policies it pinned and of the escalations that have fired, and
 * "role:<ref>" for each approverRoleRefs entry; "*" when it names no one
 * (every holder of approvals:respond may decide it).  The run's owner and
 * requester are left out when the policy excludes them from voting.
 *
 * Delivery is at least once: a row whose lease ends unacknowledged is
 * claimed again, each claim counted, until openwop.notification_max_attempts
 * claims; then it is dead: the claim that would take it once more moves it
 * to openwop.dead_notifications (counted in openwop.stats), out of the way
 * of every later claim.  Rows a claim holds are skipped (SKIP LOCKED), so
 * two senders never hold one row at once.
 *
 * An acknowledged row is removed.  The worker removes dead letters
 * openwop.notification_retention after they died, and drops each tenant's
 * undelivered rows beyond openwop.notification_cap, newest first, counting
 * them per tenant; one event writes no more than the cap on its own.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/base.h"
#include "store/store.h"
#include "auth/auth.h"
#include "domain/internal.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/sequence.h"
#include "common/pg_prng.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/datum.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(ow_claim_notifications);
PG_FUNCTION_INFO_V1(ow_ack_notifications);

/* The most notifications one claim takes, and ids one acknowledgement names. */
#define OUTBOX_MAX_BATCH 10000

static bool ow_notification_outbox = false;
static int	ow_notification_retention = 7 * 24 * 3600;	/* seconds */
static int	ow_notification_cap = 100000;
static int	ow_notification_max_attempts = 5;

/* Where this session's next every-tenant claim begins, in its list of tenants; -1: not yet chosen. */
static int64 claim_turn = -1;

/* Is the outbox on: do gate events write notifications? */
bool
ow_outbox_on(void)
{
	return ow_notification_outbox;
}

/* The part of a recipient a vote is recorded under: "<issuer>/<subjectId>" → subjectId. */
static const char *
recipient_subject(const char *recipient)
{
	const char *slash = strrchr(recipient, '/');

	return slash ? slash + 1 : recipient;
}

/*
 * The recipients of a gate of tenant among subjects and the members of
 * groups (jsonb string arrays), each once, in order; with waiting, only
 * those who have no counted vote on interrupt_id (a vote neither withdrawn
 * nor voided; asks are no votes).
 */
static List *
expand(const char *tenant, const char *interrupt_id, List *subjects, List *groups, bool waiting)
{
	static OwQuery q = {
		"SELECT DISTINCT r.recipient FROM ("
		"    SELECT pg_catalog.jsonb_array_elements_text($2) COLLATE \"C\""
		"    UNION ALL"
		"    SELECT m.principal FROM openwop.group_members m"
		"     WHERE m.tenant OPERATOR(pg_catalog.=) $1"
		"       AND m.group_ref IN (SELECT pg_catalog.jsonb_array_elements_text($3))) r (recipient)"
		" WHERE NOT $4 OR NOT EXISTS ("
		"    SELECT FROM (SELECT DISTINCT ON (v.voter) v.action FROM openwop.votes v"
		"                  WHERE v.tenant OPERATOR(pg_catalog.=) $1"
		"                    AND v.interrupt_id OPERATOR(pg_catalog.=) $5"
		"                    AND v.voter OPERATOR(pg_catalog.=)"
		"                        pg_catalog.regexp_replace(r.recipient, '^.*/', '')"
		"                    AND v.action OPERATOR(pg_catalog.<>) 'ask'"
		"                  ORDER BY v.voter, v.revision DESC) l"
		"     WHERE l.action OPERATOR(pg_catalog.<>) ALL ('{withdraw,void}'::pg_catalog.text[]))"
		" ORDER BY 1",
		5, {TEXTOID, JSONBOID, JSONBOID, BOOLOID, TEXTOID}, SPI_OK_SELECT
	};
	Datum		args[5];
	List	   *out = NIL;
	uint64		n;
	uint64		i;

	if (subjects == NIL && groups == NIL)
		return NIL;
	args[1] = JsonbPGetDatum(owj_string_array(subjects));
	args[2] = JsonbPGetDatum(owj_string_array(groups));
	args[0] = CStringGetTextDatum(tenant);
	args[3] = BoolGetDatum(waiting);
	args[4] = CStringGetTextDatum(interrupt_id);
	n = ow_exec(&q, args, NULL, true, 0);
	for (i = 0; i < n; i++)
		out = lappend(out, ow_col_text(i, 1));
	return out;
}

/* Is recipient excluded from voting on the gate of rule (its run's owner or requester)? */
static bool
excluded(const OwGateRule *rule, const char *recipient)
{
	const char *who = recipient_subject(recipient);

	if (!rule->exclude_requester)
		return false;
	return (rule->owner && strcmp(recipient_subject(rule->owner), who) == 0) ||
		(rule->requester && strcmp(recipient_subject(rule->requester), who) == 0);
}

/*
 * The audience of the approval gate of data and rule (see the head of
 * the file); waiting: only those who have not voted.  For an escalation
 * (group not NULL), that group's members only.
 */
static List *
audience(OwRun *run, const char *interrupt_id, JsonbContainer *data, const OwGateRule *rule,
		 bool waiting, const char *group)
{
	JsonbValue *a = owj_get_container(data, "audience");
	List	   *subjects;
	List	   *groups;
	List	   *roles;
	List	   *out = NIL;
	ListCell   *lc;
	int			i;

	if (group != NULL)
	{
		subjects = NIL;
		groups = list_make1((char *) group);
		roles = NIL;
	}
	else if (a != NULL && owj_is_object(a))
	{
		subjects = owj_string_list(a->val.binary.data, "subjects");
		groups = owj_string_list(a->val.binary.data, "groups");
		roles = owj_string_list(a->val.binary.data, "roles");
	}
	else
	{
		subjects = owj_string_list(data, "approversList");
		groups = owj_string_list(data, "approverGroupRefs");
		roles = owj_string_list(data, "approverRoleRefs");
		for (i = 0; i < rule->ngroups; i++)
			groups = lappend(groups, (char *) rule->groups[i].ref);
		/* a gate that names no one is every holder's to decide, escalated or not */
		if (subjects == NIL && groups == NIL && roles == NIL)
			return list_make1("*");
		for (i = 0; i < rule->nescalations; i++)
			if (rule->escalations[i].at <= GetCurrentTimestamp())
				groups = lappend(groups, (char *) rule->escalations[i].ref);
	}
	foreach(lc, expand(run->tenant, interrupt_id, subjects, groups, waiting))
		if (!excluded(rule, lfirst(lc)))
			out = lappend(out, lfirst(lc));
	foreach(lc, roles)
		out = list_append_unique(out, psprintf("role:%s", (char *) lfirst(lc)));
	return out;
}

/*
 * Write a notification of kind about interrupt_id of run to each of
 * recipients, with detail, in operation d (NULL: one of its own): rows of
 * the store (rowstore.c), written directly while the table is plain, as
 * the resolve's own rows are (measured: a statement per event cost a
 * resolve a third more CPU), with one index entry each, the primary key's.
 */
static int
write_rows(OwDirect *d, OwRun *run, const char *interrupt_id, const char *kind, List *recipients,
		   Jsonb *detail)
{
	static OwWrite insert = {.table = OW_NOTIFICATIONS,.kind = OW_WRITE_INSERT,.ncols = 10,
		.cols = {NOTE_ID, NOTE_TENANT, NOTE_KIND, NOTE_RECIPIENT, NOTE_RUN_ID, NOTE_INTERRUPT_ID,
	NOTE_DETAIL, NOTE_CREATED_AT, NOTE_ATTEMPTS, NOTE_LEASE_UNTIL}};
	Datum		values[10];
	bool		nulls[10] = {false};
	int			n;
	Oid			ids;
	OwDirect	own;
	ListCell   *lc;

	if (recipients == NIL)
		return 0;
	/* one event never writes past the cap; the worker keeps the whole outbox under it */
	n = list_length(recipients);
	if (ow_notification_cap > 0 && n > ow_notification_cap)
	{
		ereport(LOG,
				(errmsg("openwop: a %s notification of interrupt \"%s\" had %d recipients: the first %d were written",
						kind, interrupt_id, n, ow_notification_cap),
				 errdetail("openwop.notification_cap is %d.", ow_notification_cap)));
		ow_count_decisions(OW_STAT_NOTIFICATION_DROPPED, n - ow_notification_cap);
		recipients = list_truncate(recipients, ow_notification_cap);
	}
	ids = get_relname_relid("notification_ids", get_namespace_oid("openwop", false));
	if (!OidIsValid(ids))
		elog(ERROR, "sequence openwop.notification_ids does not exist");
	values[1] = CStringGetTextDatum(run->tenant);
	values[2] = CStringGetTextDatum(kind);
	values[4] = CStringGetTextDatum(run->run_id);
	values[5] = CStringGetTextDatum(interrupt_id);
	values[6] = JsonbPGetDatum(detail);
	values[7] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	values[8] = Int32GetDatum(0);
	nulls[9] = true;
	if (d == NULL)
		ow_begin(&own, 0, OW_TABLE_BIT(OW_NOTIFICATIONS), 0, 0);
	foreach(lc, recipients)
	{
		values[0] = Int64GetDatum(nextval_internal(ids, false));
		values[3] = CStringGetTextDatum(lfirst(lc));
		(void) ow_write(d ? d : &own, &insert, NULL, values, nulls, NULL);
	}
	if (d == NULL)
		ow_end(&own);
	ow_count_decisions(OW_STAT_NOTIFIED, list_length(recipients));
	return list_length(recipients);
}

static const char *const notice_kinds[] = {
	[OW_NOTICE_RAISED] = "raised",[OW_NOTICE_REMINDER] = "reminder",
	[OW_NOTICE_ESCALATION] = "escalation",[OW_NOTICE_DECIDED] = "decided",
	[OW_NOTICE_EXPIRED] = "expired"
};

/*
 * The approval gate interrupt_id of run (request data, rule) had an event
 * of kind (ow_notice): each person of its audience who should hear of it
 * gets a notification, with detail (the message's facts: {nodeId, title,
 * ...}).  The requester hears of the decision too.  Returns how many rows
 * were written; none while the outbox is off.
 */
int
ow_notify_gate(OwRun *run, const char *interrupt_id, OwNotice kind, JsonbContainer *data,
			   const OwGateRule *rule, const char *group, Jsonb *detail)
{
	List	   *to;

	if (!ow_notification_outbox)
		return 0;
	to = audience(run, interrupt_id, data, rule, kind == OW_NOTICE_REMINDER,
				  kind == OW_NOTICE_ESCALATION ? group : NULL);
	return write_rows(NULL, run, interrupt_id, notice_kinds[kind], to, detail);
}

/*
 * A vote on the gate interrupt_id of run was withdrawn (kind "withdrawn")
 * or voided ("voided"): its voter hears of it, and of a withdrawal the
 * run's requester too (create_run's requested_by, when named).
 */
int
ow_notify_voter(OwRun *run, const char *interrupt_id, const char *kind, const char *voter,
				const OwGateRule *rule, Jsonb *detail)
{
	List	   *to;

	if (!ow_notification_outbox)
		return 0;
	to = list_make1((char *) voter);
	if (strcmp(kind, "withdrawn") == 0 && run->requested_by != NULL)
		to = list_append_unique(to, run->requested_by);
	return write_rows(NULL, run, interrupt_id, kind, to, detail);
}

/* Who hears of a gate's outcome, and what: made before it is recorded, written with its record. */
struct OwNotices
{
	const char *kind;
	List	   *recipients;
	Jsonb	   *detail;
};

/*
 * The approval gate interrupt_id of run (node_id, payload, the pin of its
 * policies or NULL) is being decided, or expired (its deadline passed):
 * the notifications of its audience and its requester, for the record to
 * write in its own operation (ow_write_notices_in); NULL while the outbox
 * is off, or when nobody is to hear.  Made before the record: its
 * audience is read with statements.
 */
OwNotices *
ow_outcome_notices(OwRun *run, const char *interrupt_id, const char *node_id, Jsonb *payload,
				   Jsonb *pin, bool expired, const char *decision, const char *action)
{
	JsonbContainer *data;
	OwGateRule	rule;
	OwJson		j;
	OwNotices  *n;

	if (!ow_notification_outbox || payload == NULL)
		return NULL;
	data = owj_get(payload, "data")->val.binary.data;
	ow_gate_rule(data, pin, &rule);
	n = palloc(sizeof(OwNotices));
	n->kind = notice_kinds[expired ? OW_NOTICE_EXPIRED : OW_NOTICE_DECIDED];
	n->recipients = audience(run, interrupt_id, data, &rule, false, NULL);
	if (run->requested_by != NULL)
		n->recipients = list_append_unique(n->recipients, run->requested_by);
	if (n->recipients == NIL)
		return NULL;
	ow_notice_detail(&j, node_id, data, false);
	if (decision)
		owj_str(&j, "decision", decision);
	if (action)
		owj_str(&j, "action", action);
	n->detail = owj_end(&j);
	return n;
}

/* Write notices about interrupt_id of run in operation d, which inserts into openwop.notifications. */
void
ow_write_notices_in(OwDirect *d, OwRun *run, const char *interrupt_id, const OwNotices *n)
{
	(void) write_rows(d, run, interrupt_id, n->kind, n->recipients, n->detail);
}

/*
 * Begin the facts a message about a gate needs: {nodeId, title, links: the
 * links a sender may mint}; the caller adds more and ends it.
 */
void
ow_notice_detail(OwJson *j, const char *node_id, JsonbContainer *data, bool links)
{
	JsonbValue *title = data ? owj_get_container(data, "title") : NULL;

	owj_begin(j);
	if (node_id)
		owj_str(j, "nodeId", node_id);
	if (title && title->type == jbvString)
		owj_value(j, "title", title);
	if (links)
		owj_str_array(j, "links", list_make2("inspect", "resolve"));
}

/* ----------
 * Claiming and acknowledging
 * ----------
 */

/* The tenant whose outbox the caller drains: its own, or NULL for a caller of every tenant. */
static const char *
outbox_tenant(OwCaller *c, const char *function)
{
	ow_caller(c);
	return ow_acts_in_every_tenant(c) ? NULL : c->subject.tenant;
}

/*
 * Claim up to max of tenant's notifications for lease, oldest first, into
 * the result set: one statement takes the rows (FOR UPDATE SKIP LOCKED, on
 * the primary key) and leases them; a row it takes after its last attempt
 * is dead instead: moved to dead_notifications, not returned.  Returns how
 * many it returned.
 */
static int
claim_tenant(ReturnSetInfo *rsinfo, const char *tenant, int max, Interval *lease)
{
	static OwQuery q = {
		"WITH c AS (SELECT id, attempts OPERATOR(pg_catalog.>=) $3 AS dead FROM openwop.notifications"
		"  WHERE tenant OPERATOR(pg_catalog.=) $4"
		"    AND (lease_until IS NULL OR lease_until OPERATOR(pg_catalog.<=) pg_catalog.now())"
		"  ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED),"
		" gone AS (DELETE FROM openwop.notifications n USING c"
		"  WHERE n.tenant OPERATOR(pg_catalog.=) $4 AND n.id OPERATOR(pg_catalog.=) c.id AND c.dead"
		"  RETURNING n.*),"
		" buried AS (INSERT INTO openwop.dead_notifications"
		"  (id, tenant, kind, recipient, run_id, interrupt_id, detail, created_at, attempts, dead_at)"
		"  SELECT id, tenant, kind, recipient, run_id, interrupt_id, detail, created_at, attempts, pg_catalog.now()"
		"    FROM gone RETURNING id),"
		" leased AS (UPDATE openwop.notifications n"
		"    SET attempts = n.attempts OPERATOR(pg_catalog.+) 1,"
		"        lease_until = pg_catalog.now() OPERATOR(pg_catalog.+) $2"
		"   FROM c WHERE n.tenant OPERATOR(pg_catalog.=) $4 AND n.id OPERATOR(pg_catalog.=) c.id AND NOT c.dead"
		" RETURNING n.id, pg_catalog.jsonb_build_object("
		"    'id', n.id::pg_catalog.text, 'tenant', n.tenant, 'kind', n.kind, 'recipient', n.recipient,"
		"    'runId', n.run_id, 'interruptId', n.interrupt_id, 'createdAt', n.created_at,"
		"    'attempt', n.attempts, 'leaseUntil', n.lease_until, 'detail', n.detail) AS o)"
		" SELECT id, o FROM leased UNION ALL SELECT id, NULL FROM buried ORDER BY 1",
		4, {INT4OID, INTERVALOID, INT4OID, TEXTOID}, SPI_OK_SELECT
	};
	Datum		args[4];
	uint64		n;
	uint64		i;
	int			dead = 0;
	int			out = 0;

	args[0] = Int32GetDatum(max);
	args[1] = IntervalPGetDatum(lease);
	args[2] = Int32GetDatum(ow_notification_max_attempts);
	args[3] = CStringGetTextDatum(tenant);
	n = ow_exec(&q, args, NULL, false, 0);
	for (i = 0; i < n; i++)
	{
		Datum		value;
		bool		isnull;

		value = ow_col_datum(i, 2, JSONBOID, &isnull);
		if (isnull)
		{
			dead++;
			continue;
		}
		value = datumCopy(value, false, -1);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &value, &isnull);
		out++;
	}
	ow_count_decisions(OW_STAT_NOTIFICATION_DEAD, dead);
	return out;
}

/* t: the tenants with notifications, in order (a loose scan of the primary key, one probe each) */
#define OUTBOX_TENANTS \
	"WITH RECURSIVE t (tenant) AS (" \
	"  (SELECT tenant FROM openwop.notifications ORDER BY tenant LIMIT 1)" \
	"  UNION ALL" \
	"  SELECT (SELECT n.tenant FROM openwop.notifications n" \
	"           WHERE n.tenant OPERATOR(pg_catalog.>) t.tenant ORDER BY n.tenant LIMIT 1)" \
	"    FROM t WHERE t.tenant IS NOT NULL)"

/* The tenants with notifications, in order: a loose scan of the primary key. */
static List *
outbox_tenants(void)
{
	static OwQuery q = {
		OUTBOX_TENANTS
		" SELECT tenant FROM t WHERE tenant IS NOT NULL",
		0, {InvalidOid}, SPI_OK_SELECT
	};
	List	   *out = NIL;
	uint64		n = ow_exec(&q, NULL, NULL, true, 0);
	uint64		i;

	for (i = 0; i < n; i++)
		out = lappend(out, ow_col_text(i, 1));
	return out;
}

/*
 * openwop.claim_notifications(max, lease) → SETOF jsonb: see the SQL
 * comment.  A caller of every tenant has max shared out between the
 * tenants with notifications, round after round, beginning after the
 * tenants the session's last claim began with, so a tenant with a backlog
 * does not hold up the others'.
 */
Datum
ow_claim_notifications(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	OwCall		call;
	const char *tenant;
	int32		max;
	Interval   *lease;

	ow_refuse_read_only("claim_notifications()");
	tenant = outbox_tenant(&call.caller, "claim_notifications()");
	if (PG_ARGISNULL(0))
		ow_validation_error("max", "max must not be null");
	max = PG_GETARG_INT32(0);
	if (max < 1 || max > OUTBOX_MAX_BATCH)
		ow_validation_error("max", "max must be 1 to %d, not %d", OUTBOX_MAX_BATCH, max);
	if (PG_ARGISNULL(1))
		ow_validation_error("lease", "lease must not be null");
	lease = PG_GETARG_INTERVAL_P(1);
	/* an infinite interval (17 on) has months, so it is refused too */
	if (lease->month != 0 || lease->day != 0 ||
		lease->time < USECS_PER_SEC || lease->time > USECS_PER_DAY)
		ow_validation_error("lease", "lease must be 1 second to 24 hours, in hours, minutes and seconds");

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	ow_call_enter(&call);
	if (tenant)
		(void) claim_tenant(rsinfo, tenant, max, lease);
	else
	{
		List	   *tenants = outbox_tenants();
		int			left = max;

		/*
		 * Begin where this session's last claim stopped (the first time, at
		 * a tenant taken at random): no tenant waits for those before it
		 * by name.
		 */
		if (claim_turn < 0)
			claim_turn = (int64) pg_prng_uint64_range(&pg_global_prng_state, 0, PG_INT32_MAX);
		if (list_length(tenants) > 1)
		{
			int			k = (int) (claim_turn % list_length(tenants));

			tenants = list_concat(list_copy_tail(tenants, k), list_truncate(list_copy(tenants), k));
			claim_turn = k + Min(max, list_length(tenants));
		}

		/* each round, an even share of what is left to each tenant that still had some */
		while (left > 0 && tenants != NIL)
		{
			List	   *more = NIL;
			ListCell   *lc;
			int			share = Max(1, left / list_length(tenants));

			foreach(lc, tenants)
			{
				int			got;

				if (left <= 0)
					break;
				got = claim_tenant(rsinfo, lfirst(lc), Min(share, left), lease);
				left -= got;
				if (got == Min(share, left + got))
					more = lappend(more, lfirst(lc));
			}
			tenants = more;
		}
	}
	ow_call_end(&call);
	ow_call_finish(&call);
	return (Datum) 0;
}

/* openwop.ack_notifications(ids) → integer: see the SQL comment. */
Datum
ow_ack_notifications(PG_FUNCTION_ARGS)
{
	static OwQuery one = {
		"DELETE FROM openwop.notifications"
		" WHERE tenant OPERATOR(pg_catalog.=) $2 AND id OPERATOR(pg_catalog.=) ANY ($1)",
		2, {INT8ARRAYOID, TEXTOID}, SPI_OK_DELETE
	};
	OwCall		call;
	const char *tenant;
	ArrayType  *ids;
	Datum	   *elems;
	bool	   *nulls;
	int			nelems;
	int			i;
	Datum	   *keys;
	Datum		args[2];
	uint64		n;

	ow_refuse_read_only("ack_notifications()");
	tenant = outbox_tenant(&call.caller, "ack_notifications()");
	if (PG_ARGISNULL(0))
		ow_validation_error("ids", "ids must not be null");
	ids = PG_GETARG_ARRAYTYPE_P(0);
	if (ARR_NDIM(ids) > 1)
		ow_validation_error("ids", "ids must be a one-dimensional array");
	deconstruct_array(ids, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &nelems);
	if (nelems > OUTBOX_MAX_BATCH)
		ow_validation_error("ids", "ids names %d notifications; at most %d at once", nelems, OUTBOX_MAX_BATCH);
	keys = palloc(sizeof(Datum) * Max(nelems, 1));
	for (i = 0; i < nelems; i++)
	{
		char	   *s;
		char	   *end;
		long long	id;

		if (nulls[i])
			ow_validation_error("ids", "ids[%d] is null", i + 1);
		s = TextDatumGetCString(elems[i]);
		errno = 0;
		id = strtoll(s, &end, 10);
		if (s[0] < '1' || s[0] > '9' || *end != '\0' || errno != 0)
			ow_validation_error("ids", "ids[%d] \"%s\" is not a notification id", i + 1, ow_echo(s));
		keys[i] = Int64GetDatum((int64) id);
	}

	ow_call_enter(&call);
	args[0] = PointerGetDatum(construct_array(keys, nelems, INT8OID, sizeof(int64), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	if (tenant)
	{
		args[1] = CStringGetTextDatum(tenant);
		n = ow_exec(&one, args, NULL, false, 0);
	}
	else
	{
		ListCell   *lc;

		/* by the primary key, tenant by tenant: no index leads with the id */
		n = 0;
		foreach(lc, nelems > 0 ? outbox_tenants() : NIL)
		{
			args[1] = CStringGetTextDatum(lfirst(lc));
			n += ow_exec(&one, args, NULL, false, 0);
		}
	}
	ow_call_end(&call);
	ow_call_finish(&call);
	PG_RETURN_INT32((int32) n);
}

/* ----------
 * The worker's upkeep
 * ----------
 */

/* Remove up to *(int *) arg dead letters past the retention; leaves how many in it. */
static void
purge_dead(void *arg)
{
	static OwQuery q = {
		"DELETE FROM openwop.dead_notifications WHERE (tenant, id) IN ("
		"  SELECT tenant, id FROM openwop.dead_notifications"
		"   WHERE dead_at OPERATOR(pg_catalog.<) (pg_catalog.now() OPERATOR(pg_catalog.-) $1)"
		"   ORDER BY dead_at LIMIT $2 FOR UPDATE SKIP LOCKED)",
		2, {INTERVALOID, INT4OID}, SPI_OK_DELETE
	};
	int		   *n = arg;
	Interval	retention = {0};
	Datum		args[2];

	retention.time = (int64) ow_notification_retention * USECS_PER_SEC;
	args[0] = IntervalPGetDatum(&retention);
	args[1] = Int32GetDatum(*n);
	*n = (int) ow_exec(&q, args, NULL, false, 0);
}

/*
 * Drop each tenant's undelivered notifications beyond the cap, newest
 * first, counting them per tenant; leaves how many in *(int *) arg.
 */
static void
apply_cap(void *arg)
{
	/* per tenant (a loose scan of the primary key), the first id beyond the cap */
	static OwQuery over = {
		OUTBOX_TENANTS
		" SELECT t.tenant, b.id FROM t CROSS JOIN LATERAL ("
		"   SELECT n.id FROM openwop.notifications n"
		"    WHERE n.tenant OPERATOR(pg_catalog.=) t.tenant"
		"    ORDER BY n.id OFFSET $1 LIMIT 1) b",
		1, {INT4OID}, SPI_OK_SELECT
	};
	static OwQuery drop = {
		"WITH d AS (DELETE FROM openwop.notifications"
		"  WHERE tenant OPERATOR(pg_catalog.=) $1 AND id OPERATOR(pg_catalog.>=) $2 RETURNING 1),"
		" n AS (SELECT pg_catalog.count(*) AS dropped FROM d)"
		" INSERT INTO openwop.notification_drops AS s (tenant, dropped, last_dropped_at)"
		" SELECT $1, n.dropped, pg_catalog.now() FROM n WHERE n.dropped OPERATOR(pg_catalog.>) 0"
		" ON CONFLICT (tenant) DO UPDATE SET dropped = s.dropped OPERATOR(pg_catalog.+) excluded.dropped,"
		"   last_dropped_at = excluded.last_dropped_at"
		" RETURNING (SELECT n.dropped FROM n)",
		2, {TEXTOID, INT8OID}, SPI_OK_INSERT_RETURNING
	};
	int		   *done = arg;
	Datum		args[2];
	uint64		n;
	uint64		i;
	List	   *tenants = NIL;
	List	   *firsts = NIL;
	ListCell   *lc;
	ListCell   *lf;

	*done = 0;
	args[0] = Int32GetDatum(ow_notification_cap);
	n = ow_exec(&over, args, NULL, true, 0);
	for (i = 0; i < n; i++)
	{
		tenants = lappend(tenants, ow_col_text(i, 1));
		firsts = lappend(firsts, ow_col_text(i, 2));
	}
	forboth(lc, tenants, lf, firsts)
	{
		int64		dropped;

		args[0] = CStringGetTextDatum(lfirst(lc));
		args[1] = DirectFunctionCall1(int8in, CStringGetDatum(lfirst(lf)));
		if (ow_exec(&drop, args, NULL, false, 0) != 1)
			continue;
		dropped = ow_col_int64(0, 1);
		ow_count_decisions(OW_STAT_NOTIFICATION_DROPPED, (int) Min(dropped, PG_INT32_MAX));
		ereport(LOG,
				(errmsg("openwop: dropped %lld notifications of tenant \"%s\": its outbox holds openwop.notification_cap (%d) undelivered",
						(long long) dropped, (char *) lfirst(lc), ow_notification_cap),
				 errhint("Run a sender for the tenant (claim_notifications), or raise openwop.notification_cap.")));
		*done += (int) Min(dropped, PG_INT32_MAX - *done);
	}
}

/* Run step in a subtransaction: a failure is logged (what: the step), and the rest of the upkeep goes on. */
static int
upkeep_step(void (*step) (void *), int n, const char *what)
{
	ErrorData  *edata = ow_try_subtransaction(step, &n);

	if (edata == NULL)
		return n;
	if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED || edata->sqlerrcode == ERRCODE_ADMIN_SHUTDOWN)
		ReThrowError(edata);
	ereport(WARNING, (errmsg("openwop: could not %s: %s", what, edata->message)));
	FreeErrorData(edata);
	return 0;
}

/*
 * Keep the outbox bounded: remove up to max dead letters past the
 * retention, and drop each tenant's undelivered rows beyond the cap,
 * newest first, counting them.  Each in a subtransaction, so a failure of
 * one (logged) costs neither the other nor the caller's pass.  Returns the
 * rows removed.
 */
int
ow_outbox_upkeep(int max)
{
	int			done = 0;

	if (!ow_table_never_written("dead_notifications"))
		done += upkeep_step(purge_dead, max, "remove dead notifications");
	if (ow_notification_cap > 0 && !ow_table_never_written("notifications"))
		done += upkeep_step(apply_cap, 0, "apply openwop.notification_cap");
	return done;
}

/* ----------
 * Settings
 * ----------
 */

void
ow_define_outbox_settings(void)
{
	DefineCustomBoolVariable("openwop.notification_outbox",
							 "Write a notification for each person who should hear of an approval gate's event.",
							 "Rows of openwop.notifications, in the event's transaction, for senders to claim with claim_notifications().",
							 &ow_notification_outbox,
							 false,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("openwop.notification_retention",
							"How long dead notifications are kept (an acknowledged one is removed at once).",
							"The database worker removes a row of openwop.dead_notifications this long after it was given up.",
							&ow_notification_retention,
							7 * 24 * 3600, 60, INT_MAX,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomIntVariable("openwop.notification_cap",
							"Most undelivered notifications kept per tenant; 0 keeps all.",
							"At each pass the database worker drops a tenant's newest undelivered notifications beyond it and counts them in openwop.notification_drops.",
							&ow_notification_cap,
							100000, 0, INT_MAX,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);
	DefineCustomIntVariable("openwop.notification_max_attempts",
							"Claims of a notification before it is given up as dead.",
							"A claimed notification not acknowledged before its lease ends is claimed again, until this many claims.",
							&ow_notification_max_attempts,
							5, 1, 1000,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);
}
