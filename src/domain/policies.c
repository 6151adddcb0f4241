/*-------------------------------------------------------------------------
 *
 * policies.c
 *	  Approval policies the DBA owns: versioned documents in an append-only
 *	  log (set_approval_policy, retire_approval_policy), matched when an
 *	  approval gate is raised and pinned on it with the rule they make with
 *	  the engine's request, which they only ever make stricter.
 *
 * A gate's rule is decided once, when it is raised, and kept with it
 * (openwop.interrupts.policy, copied to its open row): a later version, a
 * retirement, or a policy set while the gate waits changes nothing of it,
 * and a replay reads what was pinned.  The engine's request is carried on
 * interrupt.requested verbatim; the pin lives in host tables only, and on
 * interrupt.resolved under the vendor hatch.
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
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/numeric.h"

PG_FUNCTION_INFO_V1(ow_set_approval_policy);
PG_FUNCTION_INFO_V1(ow_retire_approval_policy);

/* the most accepts a policy may ask for, in all and of its groups together */
#define POLICY_MAX_APPROVALS 1000
/* the most reminders a policy names, and a gate plans (and escalations) */
#define POLICY_MAX_STEPS 10

/*
 * The policy document, closed: a key misspelt would otherwise be a rule
 * silently not applied.
 */
static const char policy_schema[] =
"{\"type\": \"object\", \"required\": [\"appliesTo\"], \"additionalProperties\": false,"
" \"properties\": {"
"  \"appliesTo\": {\"type\": \"object\", \"required\": [\"workflowId\", \"nodeId\"],"
"                 \"additionalProperties\": false,"
"                 \"properties\": {\"workflowId\": {\"type\": \"string\", \"minLength\": 1, \"maxLength\": 256},"
"                                \"nodeId\": {\"type\": \"string\", \"minLength\": 1, \"maxLength\": 256}}},"
"  \"requiredApprovals\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 1000},"
"  \"rejectionPolicy\": {\"enum\": [\"single-veto\", \"majority\"]},"
"  \"groups\": {\"type\": \"array\", \"maxItems\": 32,"
"             \"items\": {\"type\": \"object\", \"required\": [\"ref\", \"required\"],"
"                       \"additionalProperties\": false,"
"                       \"properties\": {\"ref\": {\"type\": \"string\", \"minLength\": 1, \"maxLength\": 256},"
"                                      \"required\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 1000}}}},"
"  \"excludeRequester\": {\"type\": \"boolean\"},"
"  \"maxTimeoutMs\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 3153600000000000},"
"  \"dueAfterMs\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 3153600000000000},"
"  \"calendar\": {\"type\": \"string\", \"minLength\": 1, \"maxLength\": 128, \"pattern\": \"^[A-Za-z0-9._:-]+$\"},"
"  \"reminders\": {\"type\": \"array\", \"maxItems\": " CppAsString2(POLICY_MAX_STEPS) ","
"                \"items\": {\"type\": \"object\", \"required\": [\"afterMs\"], \"additionalProperties\": false,"
"                          \"properties\": {\"afterMs\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 3153600000000000}}}},"
"  \"escalation\": {\"type\": \"object\", \"required\": [\"afterMs\", \"groupRef\"], \"additionalProperties\": false,"
"                 \"properties\": {\"afterMs\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 3153600000000000},"
"                                \"groupRef\": {\"type\": \"string\", \"minLength\": 1, \"maxLength\": 256}}},"
"  \"overrideBypassesQuorum\": {\"type\": \"boolean\"},"
"  \"description\": {\"type\": \"string\", \"maxLength\": 1000}}}";

/* ----------
 * Reading a document
 * ----------
 */

/*
 * A member's integer value, or dflt when absent or not a number; one past
 * bigint reads as the nearest bound (a pin read by may_decide() is the
 * caller's argument: no error, whatever it holds).
 */
static int64
member_int(JsonbContainer *obj, const char *key, int64 dflt)
{
	JsonbValue *v = owj_get_container(obj, key);
	Datum		n;

	if (v == NULL || v->type != jbvNumeric || numeric_is_nan(v->val.numeric))
		return dflt;
	n = NumericGetDatum(v->val.numeric);
	if (DatumGetInt32(DirectFunctionCall2(numeric_cmp, n, NumericGetDatum(int64_to_numeric(PG_INT64_MAX)))) >= 0)
		return PG_INT64_MAX;
	if (DatumGetInt32(DirectFunctionCall2(numeric_cmp, n, NumericGetDatum(int64_to_numeric(PG_INT64_MIN)))) <= 0)
		return PG_INT64_MIN;
	return DatumGetInt64(DirectFunctionCall1(numeric_int8, n));
}

/* A count a pin holds (required approvals): at least 1, at most int's largest. */
static int
member_count(JsonbContainer *obj, const char *key)
{
	int64		n = member_int(obj, key, 1);

	return (int) Max(1, Min(n, PG_INT32_MAX));
}

/* The i-th element of array, when it is an object; else NULL. */
static JsonbContainer *
object_at(JsonbContainer *array, int i)
{
	JsonbValue *v = getIthJsonbValueFromContainer(array, i);

	return owj_is_object(v) ? v->val.binary.data : NULL;
}

/* A member that is a string, or NULL. */
static char *
member_string(JsonbContainer *obj, const char *key)
{
	JsonbValue *v = owj_get_container(obj, key);

	return v && v->type == jbvString ? owj_string(v) : NULL;
}

static bool
member_bool(JsonbContainer *obj, const char *key, bool dflt)
{
	JsonbValue *v = owj_get_container(obj, key);

	return (v && v->type == jbvBool) ? v->val.boolean : dflt;
}

static bool
member_is(JsonbContainer *obj, const char *key, const char *value)
{
	JsonbValue *v = owj_get_container(obj, key);

	return v && v->type == jbvString && v->val.string.len == (int) strlen(value) &&
		memcmp(v->val.string.val, value, v->val.string.len) == 0;
}

/* The array member key of obj, or NULL. */
static JsonbContainer *
member_array(JsonbContainer *obj, const char *key)
{
	JsonbValue *v = owj_get_container(obj, key);

	return owj_is_array(v) ? v->val.binary.data : NULL;
}

/* The gate's requiredApprovals (1 when absent); a value beyond int4 reads as the largest. */
static int
requested_approvals(JsonbContainer *data)
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
 * Refuse a bad policy document (400 validation_error naming the field):
 * its schema, then what a schema does not say: each group once, and no
 * more accepts than a gate can count.
 */
static void
check_policy(Jsonb *policy)
{
	Jsonb	   *schema = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(policy_schema)));
	char	   *errors;
	JsonbContainer *groups;
	int64		total = 0;
	int			i,
				j;

	if (!ow_schema_validate(schema, policy, &errors))
		ow_validation_errors(ow_schema_error_field(errors, "policy"), errors, NULL, "the approval policy is not valid");
	groups = member_array(&policy->root, "groups");
	if (groups == NULL)
		return;
	for (i = 0; i < (int) JsonContainerSize(groups); i++)
	{
		JsonbContainer *g = getIthJsonbValueFromContainer(groups, i)->val.binary.data;
		char	   *ref = owj_string(owj_get_container(g, "ref"));

		for (j = 0; j < i; j++)
			if (strcmp(ref, owj_string(owj_get_container(getIthJsonbValueFromContainer(groups, j)->val.binary.data,
														 "ref"))) == 0)
				ow_validation_error(psprintf("policy.groups[%d].ref", i),
									"group \"%s\" is listed twice: give it one requirement", ow_echo(ref));
		total += member_int(g, "required", 1);
	}
	if (total > POLICY_MAX_APPROVALS)
		ow_validation_error("policy.groups",
							"the groups require %lld approvals together, more than the %d a policy may",
							(long long) total, POLICY_MAX_APPROVALS);
}

/*
 * A policy naming a calendar names one set in its tenant (400 otherwise):
 * a name misspelt would otherwise be a deadline silently measured on the
 * wall clock.
 */
static void
check_calendar_named(Jsonb *policy, const char *tenant)
{
	JsonbValue *v = owj_get(policy, "calendar");
	OwCalendar	cal;
	int			version;

	if (v != NULL && !ow_calendar_latest(tenant, owj_string(v), &version, &cal))
		ow_validation_error("policy.calendar",
							"business calendar \"%s\" is not set in tenant \"%s\": set it with openwop.set_calendar() first",
							owj_string(v), tenant);
}

/* {name, version, tenant} and more, built in the caller's context. */
static Jsonb *
policy_answer(const char *name, int version, const char *tenant, bool retire, bool changed)
{
	OwJson		j;

	owj_begin(&j);
	owj_str(&j, "name", name);
	owj_str(&j, "tenant", tenant);
	if (retire)
		owj_bool(&j, "changed", changed);
	owj_int(&j, "version", version);
	if (retire)
		owj_bool(&j, "retired", true);
	return owj_end(&j);
}

/*
 * openwop.set_approval_policy(name, policy, tenant) → {name, version, tenant}:
 * a new version, the one new gates pin from the commit on.
 */
Datum
ow_set_approval_policy(PG_FUNCTION_ARGS)
{
	/* the next version; a concurrent call that took it first makes this one take the next */
	static OwQuery insert = {
		"INSERT INTO openwop.approval_policy_log"
		" (tenant, name, version, change, policy, changed_by, changed_at)"
		" SELECT $1, $2, COALESCE(pg_catalog.max(version), 0) OPERATOR(pg_catalog.+) 1, 'set', $3, $4,"
		"        pg_catalog.now()"
		"   FROM openwop.approval_policy_log"
		"  WHERE tenant OPERATOR(pg_catalog.=) $1 AND name OPERATOR(pg_catalog.=) $2"
		" ON CONFLICT DO NOTHING RETURNING version",
		4, {TEXTOID, TEXTOID, JSONBOID, TEXTOID}, SPI_OK_INSERT_RETURNING
	};
	OwCall		call;
	char	   *name;
	char	   *tenant;
	Jsonb	   *policy;
	Datum		args[4];
	int			version;
	Jsonb	   *result;

	policy = ow_admin_document_args(fcinfo, &call.caller, "set_approval_policy()",
									"changing approval policies", "policy", &name);
	check_policy(policy);
	tenant = ow_tenant_arg(fcinfo, 2, &call.caller, "changing another tenant's approval policies");

	ow_call_enter(&call);
	check_calendar_named(policy, tenant);
	args[0] = CStringGetTextDatum(tenant);
	args[1] = CStringGetTextDatum(name);
	args[2] = JsonbPGetDatum(policy);
	args[3] = CStringGetTextDatum(call.caller.subject.subject_id);
	version = ow_take_version(&insert, args, "approval policy", name);
	ow_call_end(&call);
	result = policy_answer(name, version, tenant, false, false);
	ow_call_finish(&call);
	PG_RETURN_JSONB_P(result);
}

/*
 * openwop.retire_approval_policy(name, tenant) → {name, version, tenant,
 * retired, changed}: its latest version stops applying to new gates.
 * Retiring a retired policy again changes nothing; one never set is 404.
 */
Datum
ow_retire_approval_policy(PG_FUNCTION_ARGS)
{
	static OwQuery latest = {
		"SELECT s.version, EXISTS (SELECT FROM openwop.approval_policy_log r"
		"        WHERE r.tenant OPERATOR(pg_catalog.=) s.tenant AND r.name OPERATOR(pg_catalog.=) s.name"
		"          AND r.version OPERATOR(pg_catalog.=) s.version AND r.change OPERATOR(pg_catalog.=) 'retire')"
		"  FROM openwop.approval_policy_log s"
		" WHERE s.tenant OPERATOR(pg_catalog.=) $1 AND s.name OPERATOR(pg_catalog.=) $2"
		"   AND s.change OPERATOR(pg_catalog.=) 'set'"
		" ORDER BY s.version DESC LIMIT 1",
		2, {TEXTOID, TEXTOID}, SPI_OK_SELECT
	};
	static OwQuery retire = {
		"INSERT INTO openwop.approval_policy_log"
		" (tenant, name, version, change, policy, changed_by, changed_at)"
		" VALUES ($1, $2, $3, 'retire', NULL, $4, pg_catalog.now())"
		" ON CONFLICT DO NOTHING",
		4, {TEXTOID, TEXTOID, INT4OID, TEXTOID}, SPI_OK_INSERT
	};
	OwCall		call;
	char	   *name;
	char	   *tenant;
	Datum		args[4];
	int			version;
	bool		changed = false;
	Jsonb	   *result;

	ow_refuse_read_only("retire_approval_policy()");
	ow_caller(&call.caller);
	ow_require_policy_admin(&call.caller, "changing approval policies");
	name = ow_admin_name(fcinfo, 0, "policy");
	tenant = ow_tenant_arg(fcinfo, 1, &call.caller, "changing another tenant's approval policies");

	ow_call_enter(&call);
	args[0] = CStringGetTextDatum(tenant);
	args[1] = CStringGetTextDatum(name);
	if (ow_exec(&latest, args, NULL, false, 1) != 1)
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "name", name);
		ow_details_str(&d, "tenant", tenant);
		ow_raise(OW_NOT_FOUND, &d, NULL,
				 "approval policy \"%s\" does not exist in tenant \"%s\"", name, tenant);
	}
	version = (int) ow_col_int64(0, 1);
	if (!ow_col_bool(0, 2))
	{
		args[2] = Int32GetDatum(version);
		args[3] = CStringGetTextDatum(call.caller.subject.subject_id);
		changed = ow_exec(&retire, args, NULL, false, 0) == 1;
	}
	ow_call_end(&call);
	result = policy_answer(name, version, tenant, true, changed);
	ow_call_finish(&call);
	PG_RETURN_JSONB_P(result);
}

/* ----------
 * Pinning: a gate's rule, when it is raised
 * ----------
 */

/* A group requirement of the rule being made: the largest asked for the group. */
static void
merge_group(OwGateRule *rule, const char *ref, int required)
{
	int			i;

	for (i = 0; i < rule->ngroups; i++)
		if (strcmp(rule->groups[i].ref, ref) == 0)
		{
			rule->groups[i].required = Max(rule->groups[i].required, required);
			return;
		}
	if (rule->groups == NULL)
		rule->groups = palloc(sizeof(OwGateGroup) * 32);
	else if (rule->ngroups % 32 == 0)
		rule->groups = repalloc(rule->groups, sizeof(OwGateGroup) * (rule->ngroups + 32));
	rule->groups[rule->ngroups].ref = pstrdup(ref);
	rule->groups[rule->ngroups].required = required;
	rule->ngroups++;
}

/*
 * Who may not vote on a gate whose policy excludes the requester, under
 * key: {owner: the run's owner (issuer-qualified), requester: the person
 * create_run named, when it named one}.
 */
static void
excluded_voters(OwJson *j, const char *key, OwRun *run)
{
	static OwQuery q = {
		"SELECT owner OPERATOR(pg_catalog.->>) 'issuer', owner OPERATOR(pg_catalog.->>) 'subjectId',"
		"       requested_by"
		"  FROM openwop.runs"
		" WHERE tenant OPERATOR(pg_catalog.=) $1 AND run_id OPERATOR(pg_catalog.=) $2",
		2, {TEXTOID, TEXTOID}, SPI_OK_SELECT
	};
	char	   *issuer;
	char	   *subject;
	char	   *requester;

	if (ow_run_exec(&q, run, NULL, false, 1) != 1)
		elog(ERROR, "run \"%s\" has no row", run->run_id);
	issuer = ow_col_text(0, 1);
	subject = ow_col_text(0, 2);
	requester = ow_col_text(0, 3);
	owj_begin_object(j, key);
	if (issuer && subject)
		owj_str(j, "owner", psprintf("%s/%s", issuer, subject));
	if (requester)
		owj_str(j, "requester", requester);
	owj_end_object(j);
}

/* The calendar a gate pins, and when the gate falls due on it. */
typedef struct PinnedCalendar
{
	char	   *name;			/* NULL: none */
	int			version;
	OwCalendar	c;
	TimestampTz expires;		/* the deadline; DT_NOEND: never, or none asked */
	TimestampTz due;			/* the due date of dueAfterMs; DT_NOEND: never, 0: none asked */
} PinnedCalendar;

/*
 * Consider calendar name of tenant for a gate raised now with a deadline
 * of timeout and a due date of due_after milliseconds of working time
 * (PG_INT64_MAX: none): pinned in *cal when it is the first considered
 * or the gate falls due earlier on it (its deadline, else its due date).
 */
static void
pin_calendar(const char *tenant, const char *name, int64 timeout, int64 due_after, PinnedCalendar *cal)
{
	OwCalendar	c;
	int			version;
	int64		amounts[2] = {timeout, due_after};
	TimestampTz at[2];
	TimestampTz expires;
	TimestampTz due;

	if (cal->name != NULL && strcmp(cal->name, name) == 0)
		return;					/* named by two policies: considered once */
	/* set_approval_policy saw it set, and calendars are never removed */
	if (!ow_calendar_latest(tenant, name, &version, &c))
		elog(ERROR, "business calendar \"%s\" of tenant \"%s\" has no version", name, tenant);
	/* both in one walk; an amount of PG_INT64_MAX (none asked) is never reached */
	ow_calendar_add(&c, GetCurrentTransactionStartTimestamp(), 2, amounts, at);
	expires = at[0];
	due = due_after == PG_INT64_MAX ? 0 : at[1];
	if (cal->name != NULL &&
		(timeout != PG_INT64_MAX ? expires >= cal->expires : due >= cal->due))
		return;
	cal->name = pstrdup(name);
	cal->version = version;
	cal->c = c;
	cal->expires = expires;
	cal->due = due;
}

/* A step the policies of a gate plan: a reminder, or an escalation to group. */
typedef struct PlannedStep
{
	int64		after_ms;
	const char *group;			/* an escalation's; NULL: a reminder */
	TimestampTz at;				/* DT_NOEND: more than 100 years away, not planned */
} PlannedStep;

/* Steps in the order of their amounts of time. */
static int
step_cmp(const void *a, const void *b)
{
	int64		x = ((const PlannedStep *) a)->after_ms;
	int64		y = ((const PlannedStep *) b)->after_ms;

	return x < y ? -1 : x > y;
}

/*
 * The steps of the n policies docs, in steps (room for 11 a policy): each
 * reminder's afterMs once, each escalation's group once, at its earliest;
 * each at afterMs from the raise, in working time on the pinned calendar
 * when there is one; at most POLICY_MAX_STEPS reminders and as many
 * escalations, the earliest.  Returns how many.
 */
static int
plan_steps(Jsonb **docs, int n, const PinnedCalendar *cal, PlannedStep *steps)
{
	TimestampTz start = GetCurrentTransactionStartTimestamp();
	int			k = 0;
	int			i;
	int			s;

	for (i = 0; i < n; i++)
	{
		JsonbContainer *reminders = member_array(&docs[i]->root, "reminders");
		JsonbValue *e = owj_get_container(&docs[i]->root, "escalation");
		int			r;

		for (r = 0; reminders && r < (int) JsonContainerSize(reminders); r++)
		{
			int64		ms = member_int(getIthJsonbValueFromContainer(reminders, r)->val.binary.data,
										"afterMs", 1);

			for (s = 0; s < k && (steps[s].group != NULL || steps[s].after_ms != ms); s++)
				;
			if (s == k)
				steps[k++] = (PlannedStep) {.after_ms = ms};
		}
		if (e != NULL && owj_is_object(e))
		{
			const char *group = owj_string(owj_get_container(e->val.binary.data, "groupRef"));
			int64		ms = member_int(e->val.binary.data, "afterMs", 1);

			for (s = 0; s < k && (steps[s].group == NULL || strcmp(steps[s].group, group) != 0); s++)
				;
			if (s == k)
				steps[k++] = (PlannedStep) {.after_ms = ms,.group = group};
			else
				steps[s].after_ms = Min(steps[s].after_ms, ms);
		}
	}
	if (k == 0)
		return 0;
	/* however many policies match, a gate has at most as many steps as one may name: the earliest */
	qsort(steps, k, sizeof(PlannedStep), step_cmp);
	{
		int			reminders = 0;
		int			escalations = 0;
		int			kept = 0;

		for (s = 0; s < k; s++)
			if (steps[s].group ? ++escalations <= POLICY_MAX_STEPS : ++reminders <= POLICY_MAX_STEPS)
				steps[kept++] = steps[s];
		k = kept;
	}
	if (cal->name != NULL)
	{
		int64	   *amounts = palloc(sizeof(int64) * k);
		TimestampTz *at = palloc(sizeof(TimestampTz) * k);

		for (s = 0; s < k; s++)
			amounts[s] = steps[s].after_ms;
		ow_calendar_add(&cal->c, start, k, amounts, at);
		for (s = 0; s < k; s++)
			steps[s].at = at[s];
	}
	else
		for (s = 0; s < k; s++)
			steps[s].at = steps[s].after_ms > INT64CONST(100) * 366 * 24 * 3600 * 1000 ? DT_NOEND :
				TimestampTzPlusMilliseconds(start, steps[s].after_ms);
	return k;
}

/* The planned steps of one kind (escalations or reminders) under key, the ones within reach. */
static void
pin_steps(OwJson *j, const char *key, const PlannedStep *steps, int k, bool escalations)
{
	int			s;
	bool		any = false;

	for (s = 0; s < k; s++)
		any |= (steps[s].group != NULL) == escalations && steps[s].at != DT_NOEND;
	if (!any)
		return;
	owj_begin_array(j, key);
	for (s = 0; s < k; s++)
	{
		if ((steps[s].group != NULL) != escalations || steps[s].at == DT_NOEND)
			continue;
		owj_begin_object(j, NULL);
		owj_str(j, "at", owj_iso8601(steps[s].at));
		owj_int(j, "afterMs", steps[s].after_ms);
		if (escalations)
			owj_str(j, "groupRef", steps[s].group);
		owj_end_object(j);
	}
	owj_end_array(j);
}

/*
 * The policies that govern an approval gate node_id of run raises with
 * request data: every active version of the run's tenant whose appliesTo
 * names the run's workflow and the node (exactly or with "*"), read in one
 * snapshot, so a change racing the raise is pinned whole or not at all.
 * NULL when none matches.  Else the pin: {name, version} of the first by
 * name (policies: every one, when several match) and the rule they make
 * with the request, each member the stricter of the two:
 * requiredApprovals the largest (and at least the groups' sum, their
 * members being distinct humans), single-veto unless every side says
 * majority (a policy silent on it says single-veto, the default), groups merged (the largest requirement of each), the
 * requester excluded when any policy excludes it (the default), an
 * override principal's bypass only when the request and every policy allow
 * it, and the shortest deadline: *timeout_ms is lowered to it.  A policy
 * naming a business calendar makes the deadline, and the due date of
 * dueAfterMs (the shortest), working time on it: *expires_at is then set
 * (DT_NOEND when it never falls due), else left 0 and the deadline is the
 * wall clock's.  When several policies name calendars, the one on which
 * the gate falls due first is pinned, as the shortest deadline is.
 */
Jsonb *
ow_policy_pin(OwRun *run, const char *node_id, JsonbContainer *data, int64 *timeout_ms,
			  TimestampTz *expires_at)
{
	static OwQuery matching = {
		"SELECT s.name, s.version, s.policy FROM openwop.approval_policy_log s"
		" WHERE s.tenant OPERATOR(pg_catalog.=) $1 AND s.change OPERATOR(pg_catalog.=) 'set'"
		"   AND (s.policy OPERATOR(pg_catalog.#>>) '{appliesTo,workflowId}') IN ($2, '*')"
		"   AND (s.policy OPERATOR(pg_catalog.#>>) '{appliesTo,nodeId}') IN ($3, '*')"
		"   AND NOT EXISTS (SELECT FROM openwop.approval_policy_log n"
		"        WHERE n.tenant OPERATOR(pg_catalog.=) s.tenant AND n.name OPERATOR(pg_catalog.=) s.name"
		"          AND (n.version OPERATOR(pg_catalog.>) s.version"
		"               OR (n.version OPERATOR(pg_catalog.=) s.version"
		"                   AND n.change OPERATOR(pg_catalog.=) 'retire')))"
		" ORDER BY s.name",
		3, {TEXTOID, TEXTOID, TEXTOID}, SPI_OK_SELECT
	};
	Datum		args[3];
	uint64		n;
	uint64		i;
	char	  **names;
	int		   *versions;
	Jsonb	  **docs;
	OwGateRule	rule = {0};
	bool		single_veto;
	int64		timeout = *timeout_ms > 0 ? *timeout_ms : PG_INT64_MAX;
	int64		due_after = PG_INT64_MAX;
	int64		total = 0;
	PinnedCalendar cal = {0};
	TimestampTz due = 0;
	PlannedStep *steps;
	int			nsteps;
	OwJson		j;
	int			g;

	/* a database that never had a policy (most): no statement (measured: 68k instructions a raise) */
	if (ow_table_never_written("approval_policy_log"))
		return NULL;
	args[0] = CStringGetTextDatum(run->tenant);
	args[1] = CStringGetTextDatum(run->workflow_id);
	args[2] = CStringGetTextDatum(node_id);
	n = ow_exec(&matching, args, NULL, false, 0);
	if (n == 0)
		return NULL;
	names = palloc(sizeof(char *) * n);
	versions = palloc(sizeof(int) * n);
	docs = palloc(sizeof(Jsonb *) * n);
	for (i = 0; i < n; i++)
	{
		names[i] = ow_col_text(i, 1);
		versions[i] = (int) ow_col_int64(i, 2);
		docs[i] = ow_col_jsonb(i, 3);
	}

	/* the request's rule, then each policy's on top */
	rule.required = requested_approvals(data);
	single_veto = !member_is(data, "rejectionPolicy", "majority");
	rule.bypass = member_bool(data, "overrideBypassesQuorum", false);
	for (i = 0; i < n; i++)
	{
		JsonbContainer *p = &docs[i]->root;
		JsonbContainer *groups = member_array(p, "groups");

		rule.required = Max(rule.required, member_count(p, "requiredApprovals"));
		/* a policy silent on it keeps the default, single-veto: majority needs every side's word */
		single_veto |= !member_is(p, "rejectionPolicy", "majority");
		rule.bypass &= member_bool(p, "overrideBypassesQuorum", false);
		rule.exclude_requester |= member_bool(p, "excludeRequester", true);
		timeout = Min(timeout, member_int(p, "maxTimeoutMs", PG_INT64_MAX));
		due_after = Min(due_after, member_int(p, "dueAfterMs", PG_INT64_MAX));
		for (g = 0; groups && g < (int) JsonContainerSize(groups); g++)
		{
			JsonbContainer *gc = getIthJsonbValueFromContainer(groups, g)->val.binary.data;

			merge_group(&rule, owj_string(owj_get_container(gc, "ref")), member_count(gc, "required"));
		}
	}
	for (g = 0; g < rule.ngroups; g++)
		total += rule.groups[g].required;
	rule.required = (int) Max((int64) rule.required, total);

	/* the deadline and the due date, on the calendar they fall first on, if any names one */
	for (i = 0; i < n; i++)
	{
		JsonbValue *c = owj_get_container(&docs[i]->root, "calendar");

		if (c != NULL)
			pin_calendar(run->tenant, owj_string(c), timeout, due_after, &cal);
	}
	if (cal.name != NULL)
	{
		if (timeout != PG_INT64_MAX)
			*expires_at = cal.expires;
		due = cal.due;
	}
	else if (due_after != PG_INT64_MAX && due_after <= INT64CONST(100000) * 365 * 24 * 3600 * 1000)
		due = TimestampTzPlusMilliseconds(GetCurrentTransactionStartTimestamp(), due_after);
	/* the reminders and escalations, on the same calendar */
	steps = palloc(sizeof(PlannedStep) * n * 11);
	nsteps = plan_steps(docs, (int) n, &cal, steps);

	/* in jsonb's key order (see json.c) */
	owj_begin(&j);
	owj_str(&j, "name", names[0]);
	if (due != 0 && due != DT_NOEND)
		owj_str(&j, "dueAt", owj_iso8601(due));
	owj_begin_array(&j, "groups");
	for (g = 0; g < rule.ngroups; g++)
	{
		owj_begin_object(&j, NULL);
		owj_str(&j, "ref", rule.groups[g].ref);
		owj_int(&j, "required", rule.groups[g].required);
		owj_end_object(&j);
	}
	owj_end_array(&j);
	owj_int(&j, "version", versions[0]);
	if (cal.name != NULL)
	{
		owj_begin_object(&j, "calendar");
		owj_str(&j, "name", cal.name);
		owj_int(&j, "version", cal.version);
		owj_end_object(&j);
	}
	if (rule.exclude_requester)
		excluded_voters(&j, "excluded", run);
	if (n > 1)
	{
		owj_begin_array(&j, "policies");
		for (i = 0; i < n; i++)
		{
			owj_begin_object(&j, NULL);
			owj_str(&j, "name", names[i]);
			owj_int(&j, "version", versions[i]);
			owj_end_object(&j);
		}
		owj_end_array(&j);
	}
	pin_steps(&j, "reminders", steps, nsteps, false);
	pin_steps(&j, "escalations", steps, nsteps, true);
	if (timeout != PG_INT64_MAX && timeout != *timeout_ms)
	{
		owj_int(&j, "timeoutMs", timeout);
		*timeout_ms = timeout;
	}
	owj_str(&j, "rejectionPolicy", single_veto ? "single-veto" : "majority");
	owj_bool(&j, "excludeRequester", rule.exclude_requester);
	owj_int(&j, "requiredApprovals", rule.required);
	owj_bool(&j, "overrideBypassesQuorum", rule.bypass);
	return owj_end(&j);
}

/*
 * The rule of an approval gate with request data: the one its pin
 * recorded (ow_policy_pin), or the request's own when it pinned none.
 */
void
ow_gate_rule(JsonbContainer *data, Jsonb *pin, OwGateRule *rule)
{
	JsonbContainer *source = pin ? &pin->root : data;
	JsonbContainer *groups;
	JsonbValue *v;
	int			i;

	memset(rule, 0, sizeof(*rule));
	rule->pin = pin;
	rule->required = pin ? member_count(source, "requiredApprovals") : requested_approvals(data);
	rule->majority = member_is(source, "rejectionPolicy", "majority");
	rule->bypass = member_bool(source, "overrideBypassesQuorum", false);
	if (pin == NULL)
		return;
	/*
	 * The pin is read defensively: the inbox passes it to may_decide() as
	 * an argument any approver may forge.  A member of the wrong shape is
	 * skipped, a requirement of the wrong size clamped, an escalation
	 * instant that is not one the pin could hold never comes.
	 */
	rule->exclude_requester = member_bool(source, "excludeRequester", true);
	groups = member_array(source, "groups");
	for (i = 0; groups && i < (int) JsonContainerSize(groups); i++)
	{
		JsonbContainer *gc = object_at(groups, i);
		char	   *ref = gc ? member_string(gc, "ref") : NULL;

		if (ref)
			merge_group(rule, ref, member_count(gc, "required"));
	}
	groups = member_array(source, "escalations");
	if (groups != NULL)
	{
		rule->escalations = palloc(sizeof(OwGateEscalation) * (JsonContainerSize(groups) + 1));
		for (i = 0; i < (int) JsonContainerSize(groups); i++)
		{
			JsonbContainer *ec = object_at(groups, i);
			OwGateEscalation *e = &rule->escalations[rule->nescalations];

			if (ec == NULL || (e->ref = member_string(ec, "groupRef")) == NULL)
				continue;
			if (!owj_read_iso8601(member_string(ec, "at"), &e->at))
				e->at = DT_NOEND;
			rule->nescalations++;
		}
	}
	if ((v = owj_get_container(source, "excluded")) != NULL && owj_is_object(v))
	{
		JsonbValue *who;

		if ((who = owj_get_container(v->val.binary.data, "owner")) != NULL)
			rule->owner = owj_string(who);
		if ((who = owj_get_container(v->val.binary.data, "requester")) != NULL)
			rule->requester = owj_string(who);
	}
}

/* What interrupt.resolved records of a pin: {name, version, policies?}, or NULL. */
Jsonb *
ow_policy_record(const OwGateRule *rule)
{
	OwJson		j;
	JsonbValue *v;

	if (rule->pin == NULL)
		return NULL;
	owj_begin(&j);
	owj_value(&j, "name", owj_get(rule->pin, "name"));
	owj_value(&j, "version", owj_get(rule->pin, "version"));
	if ((v = owj_get(rule->pin, "policies")) != NULL)
		owj_value(&j, "policies", v);
	return owj_end(&j);
}
