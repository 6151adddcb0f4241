/*-------------------------------------------------------------------------
 *
 * resolve.c
 *	  openwop.resolve_interrupt(): the run-scoped resolve
 *	  (resolveInterruptByRun), with one winner among concurrent resolves.
 *
 * Order of checks (digest §6.3): arguments and Idempotency-Key grammar
 * (400), scope approvals:respond (403), tenant binding (403), idempotency
 * replay or mismatch, unknown run then node (404), already resolved or run
 * ended (409), approver eligibility (403), resume value (400), then the
 * claim and the record.  The run row lock serialises resolves of one run:
 * the second of two concurrent resolves finds no pending interrupt and gets
 * interrupt_already_resolved, having changed nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "openwop.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(ow_resolve_interrupt);

extern char *ow_approver_role;

#define OW_SCOPE "approvals:respond"

/* The pending interrupt of a node, as stored. */
typedef struct OwPending
{
	char	   *interrupt_id;
	char	   *kind;
	Jsonb	   *payload;
	int32		visit;
} OwPending;

/*
 * approvals:respond: in the JWT "scope" claim (space-separated string or
 * array), or, for SQL sessions, through the privileges of the role named by
 * openwop.approver_role (superusers have every role's privileges).
 */
static void
check_scope(void)
{
	Jsonb	   *claims = ow_jwt_claims();
	Oid			role;

	if (claims)
	{
		JsonbValue *scope = owj_get(claims, "scope");

		if (scope && scope->type == jbvString)
		{
			char	   *s = owj_string(scope);
			char	   *tok;
			char	   *save = NULL;

			for (tok = strtok_r(s, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
				if (strcmp(tok, OW_SCOPE) == 0)
					return;
		}
		else if (owj_is_array(scope))
		{
			int			i;

			for (i = 0; i < (int) JsonContainerSize(scope->val.binary.data); i++)
			{
				char	   *s = owj_string(getIthJsonbValueFromContainer(scope->val.binary.data, i));

				if (s && strcmp(s, OW_SCOPE) == 0)
					return;
			}
		}
	}
	role = get_role_oid(ow_approver_role, true);
	if ((OidIsValid(role) && has_privs_of_role(GetUserId(), role)) || superuser())
		return;

	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "requiredScope", OW_SCOPE);
		ow_raise(OW_SQLSTATE_403, "forbidden", &d,
				 psprintf("Grant the role %s to the caller, or put %s in the JWT scope claim.",
						  ow_approver_role, OW_SCOPE),
				 "resolving an interrupt needs the %s scope", OW_SCOPE);
	}
}

static bool
find_pending(OwRun *run, const char *node_id, OwPending *p)
{
	static SPIPlanPtr plan = NULL;
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;

	if (ow_run_query(&plan, "SELECT interrupt_id, kind, payload, visit"
							"  FROM openwop.interrupts"
							" WHERE tenant OPERATOR(pg_catalog.=) $1"
							"   AND run_id OPERATOR(pg_catalog.=) $2"
							"   AND node_id OPERATOR(pg_catalog.=) $3"
							"   AND status OPERATOR(pg_catalog.=) 'pending'",
					 run, node_id, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not look up the pending interrupt of node \"%s\"", node_id);
	if (SPI_processed == 0)
		return false;
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	p->interrupt_id = SPI_getvalue(tup, desc, 1);
	p->kind = SPI_getvalue(tup, desc, 2);
	p->payload = DatumGetJsonbP(SPI_getbinval(tup, desc, 3, &isnull));
	p->visit = DatumGetInt32(SPI_getbinval(tup, desc, 4, &isnull));
	return true;
}

/* Did the node ever raise an interrupt in this run? */
static bool
node_had_interrupt(OwRun *run, const char *node_id)
{
	static SPIPlanPtr plan = NULL;
	Datum		args[4];

	if (plan == NULL)
	{
		Oid			types[4] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID};

		plan = ow_prepare("SELECT 1 FROM openwop.interrupts"
						  " WHERE tenant OPERATOR(pg_catalog.=) $1"
						  "   AND root_run_id OPERATOR(pg_catalog.=) $2"
						  "   AND run_id OPERATOR(pg_catalog.=) $3"
						  "   AND node_id OPERATOR(pg_catalog.=) $4 LIMIT 1", 4, types);
	}
	args[0] = CStringGetTextDatum(run->tenant);
	args[1] = CStringGetTextDatum(run->root_run_id);
	args[2] = CStringGetTextDatum(run->run_id);
	args[3] = CStringGetTextDatum(node_id);
	if (SPI_execute_plan(plan, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not look up the interrupts of node \"%s\"", node_id);
	return SPI_processed > 0;
}

static void
already_resolved(OwRun *run, const char *node_id)
{
	OwDetails	d;

	ow_details_init(&d);
	ow_details_str(&d, "runId", run->run_id);
	ow_details_str(&d, "nodeId", node_id);
	ow_details_str(&d, "runStatus", run->status);
	ow_raise(OW_SQLSTATE_409, "interrupt_already_resolved", &d, NULL,
			 ow_run_is_terminal(run->status)
			 ? "node \"%s\" has no pending interrupt: run \"%s\" has ended"
			 : "node \"%s\" has no pending interrupt in run \"%s\": it was already resolved",
			 node_id, run->run_id);
}

static void
resume_error(const char *field, const char *errors, const char *fmt,...) pg_attribute_printf(3, 4);

static void
resume_error(const char *field, const char *errors, const char *fmt,...)
{
	StringInfoData msg;
	OwDetails	d;

	initStringInfo(&msg);
	OW_APPEND_VA(&msg, fmt);
	ow_details_init(&d);
	ow_details_str(&d, "field", field);
	if (errors)
		ow_details_raw(&d, "errors", errors);
	ow_raise(OW_SQLSTATE_400, "validation_error", &d, NULL, "%s", msg.data);
}

/* approversList binds everywhere: the principal must be listed. */
static void
check_eligibility(JsonbContainer *data, const char *principal)
{
	JsonbValue *list = owj_get_container(data, "approversList");
	int			i;
	int			n;

	if (list == NULL || !owj_is_array(list) ||
		(n = JsonContainerSize(list->val.binary.data)) == 0)
		return;					/* empty or unset: anyone with the scope */
	for (i = 0; i < n; i++)
	{
		char	   *p = owj_string(getIthJsonbValueFromContainer(list->val.binary.data, i));

		if (p && strcmp(p, principal) == 0)
			return;
	}
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "principal", principal);
		ow_raise(OW_SQLSTATE_403, "forbidden", &d, NULL,
				 "principal \"%s\" is not an eligible approver of this interrupt", principal);
	}
}

/* The approval resume value: the action and the field it requires (digest §9.1). */
static char *
check_approval_resume(JsonbContainer *data, Jsonb *value)
{
	static const char *const keys[] = {"action", "feedback", "refineFeedback",
	"editedArtifactData", "decidedAt", "decidedBy", NULL};
	static const char *const rf_keys[] = {"scope", "sectionPath", "itemIds", "tags", "text", NULL};
	JsonbValue *actions = owj_get_container(data, "actions");
	JsonbValue *v;
	const char *unknown;
	char	   *action;
	bool		allowed = false;
	int			i;

	if (!JB_ROOT_IS_OBJECT(value))
		resume_error("resumeValue", NULL, "an approval's resumeValue must be an object {action, ...}");
	if ((unknown = owj_unknown_key(&value->root, keys)) != NULL)
		resume_error(psprintf("resumeValue.%s", unknown), NULL,
					 "resumeValue has unknown member \"%s\"", unknown);
	action = owj_string(owj_get(value, "action"));
	if (action == NULL)
		resume_error("resumeValue.action", NULL, "resumeValue.action is required");
	if (strcmp(action, "timeout") == 0)
		resume_error("resumeValue.action", NULL,
					 "action \"timeout\" is recorded by the host's timer and is never accepted from a caller");
	for (i = 0; i < (int) JsonContainerSize(actions->val.binary.data); i++)
	{
		char	   *a = owj_string(getIthJsonbValueFromContainer(actions->val.binary.data, i));

		allowed |= strcmp(a, action) == 0;
	}
	if (!allowed)
		resume_error("resumeValue.action", NULL,
					 "action \"%s\" is not one of the interrupt's actions", action);

	if ((v = owj_get(value, "feedback")) && v->type != jbvString)
		resume_error("resumeValue.feedback", NULL, "resumeValue.feedback must be a string");
	if ((v = owj_get(value, "decidedAt")) && v->type != jbvString)
		resume_error("resumeValue.decidedAt", NULL, "resumeValue.decidedAt must be an ISO 8601 string");
	if ((v = owj_get(value, "decidedBy")) && v->type != jbvString)
		resume_error("resumeValue.decidedBy", NULL, "resumeValue.decidedBy must be a string");

	v = owj_get(value, "refineFeedback");
	if (strcmp(action, "refine") == 0 && v == NULL)
		resume_error("resumeValue.refineFeedback", NULL, "action \"refine\" needs resumeValue.refineFeedback");
	if (v)
	{
		char	   *scope;

		if (!owj_is_object(v))
			resume_error("resumeValue.refineFeedback", NULL, "resumeValue.refineFeedback must be an object");
		if ((unknown = owj_unknown_key(v->val.binary.data, rf_keys)) != NULL)
			resume_error(psprintf("resumeValue.refineFeedback.%s", unknown), NULL,
						 "resumeValue.refineFeedback has unknown member \"%s\"", unknown);
		scope = owj_string(owj_get_container(v->val.binary.data, "scope"));
		if (scope == NULL || (strcmp(scope, "whole") != 0 && strcmp(scope, "section") != 0 &&
							  strcmp(scope, "items") != 0))
			resume_error("resumeValue.refineFeedback.scope", NULL,
						 "resumeValue.refineFeedback.scope must be whole, section or items");
	}
	if (strcmp(action, "edit-accept") == 0 && owj_get(value, "editedArtifactData") == NULL)
		resume_error("resumeValue.editedArtifactData", NULL,
					 "action \"edit-accept\" needs resumeValue.editedArtifactData");
	return action;
}

/* The schema of question id, or NULL; *known tells whether the question exists. */
static JsonbValue *
question_schema(JsonbValue *qs, const char *id, int idlen, bool *known)
{
	int			i;

	*known = false;
	for (i = 0; i < (int) JsonContainerSize(qs->val.binary.data); i++)
	{
		JsonbContainer *q = getIthJsonbValueFromContainer(qs->val.binary.data, i)->val.binary.data;
		JsonbValue *qid = owj_get_container(q, "id");

		if (qid->val.string.len == idlen && memcmp(qid->val.string.val, id, idlen) == 0)
		{
			*known = true;
			return owj_get_container(q, "schema");
		}
	}
	return NULL;
}

static void
check_answer(JsonbValue *qs, const char *id, int idlen, JsonbValue *answer)
{
	bool		known;
	JsonbValue *schema = question_schema(qs, id, idlen, &known);
	char	   *qid = pnstrdup(id, idlen);
	char	   *errors;

	if (!known)
		resume_error(psprintf("resumeValue.%s", qid), NULL,
					 "\"%s\" is not a question of this clarification", qid);
	if (schema && !ow_schema_validate(owj_to_jsonb(schema), owj_to_jsonb(answer), &errors))
		resume_error(psprintf("resumeValue.%s", qid), errors,
					 "the answer to question \"%s\" does not match its schema", qid);
}

/*
 * Clarification answers, in exactly one of the shapes in use: keyed by
 * question id ({q1: ...}), or {answers: {q1: ...}}, or {answers: [{id,
 * answer}]}.  Every answer must name a question and match its schema.
 */
static void
check_clarification_answers(JsonbContainer *data, Jsonb *value)
{
	static const char *const only_answers[] = {"answers", NULL};
	static const char *const pair_keys[] = {"id", "answer", NULL};
	JsonbValue *qs = owj_get_container(data, "questions");
	JsonbValue *answers;
	JsonbContainer *keyed;
	JsonbIterator *it;
	JsonbValue	k;
	JsonbValue	v;
	JsonbIteratorToken tok;
	const char *unknown;

	if (!JB_ROOT_IS_OBJECT(value))
		resume_error("resumeValue", NULL, "a clarification's resumeValue must be an object of answers");
	answers = owj_get(value, "answers");
	if (answers && (unknown = owj_unknown_key(&value->root, only_answers)) != NULL)
		resume_error(psprintf("resumeValue.%s", unknown), NULL,
					 "resumeValue has \"answers\" and also \"%s\"; use one shape", unknown);
	if (answers && owj_is_array(answers))
	{
		int			i;

		for (i = 0; i < (int) JsonContainerSize(answers->val.binary.data); i++)
		{
			JsonbValue *a = getIthJsonbValueFromContainer(answers->val.binary.data, i);
			JsonbValue *id;
			JsonbValue *answer;

			if (!owj_is_object(a) || owj_unknown_key(a->val.binary.data, pair_keys) != NULL ||
				(id = owj_get_container(a->val.binary.data, "id")) == NULL || id->type != jbvString ||
				(answer = owj_get_container(a->val.binary.data, "answer")) == NULL)
				resume_error(psprintf("resumeValue.answers[%d]", i), NULL,
							 "resumeValue.answers[%d] must be {id, answer}", i);
			check_answer(qs, id->val.string.val, id->val.string.len, answer);
		}
		return;
	}
	if (answers && !owj_is_object(answers))
		resume_error("resumeValue.answers", NULL, "resumeValue.answers must be an object or an array");
	keyed = answers ? answers->val.binary.data : &value->root;
	it = JsonbIteratorInit(keyed);
	while ((tok = JsonbIteratorNext(&it, &k, true)) != WJB_DONE)
	{
		if (tok != WJB_KEY)
			continue;
		JsonbIteratorNext(&it, &v, true);
		check_answer(qs, k.val.string.val, k.val.string.len, &v);
	}
}

/* Is there an outgoing edge from node_id whose rule admits a failed source? */
static bool
failure_is_routed(OwRun *run, const char *node_id)
{
	static SPIPlanPtr plan = NULL;

	if (!run->has_definition)
		return false;
	if (ow_run_query(&plan, "SELECT 1 FROM openwop.runs r,"
							"       pg_catalog.jsonb_array_elements(r.definition OPERATOR(pg_catalog.->) 'edges') e"
							" WHERE r.tenant OPERATOR(pg_catalog.=) $1 AND r.run_id OPERATOR(pg_catalog.=) $2"
							"   AND (e OPERATOR(pg_catalog.->>) 'from') OPERATOR(pg_catalog.=) $3"
							"   AND (e OPERATOR(pg_catalog.->>) 'triggerRule') OPERATOR(pg_catalog.=) ANY"
							"       ('{all_complete,any_failed}'::pg_catalog.text[])"
							" LIMIT 1",
					 run, node_id, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the edges of run \"%s\"", run->run_id);
	return SPI_processed > 0;
}

/*
 * Fail closed (digest §9.5): the node fails with code (retryable false) in
 * this same transaction; the run goes on only over an all_complete or
 * any_failed edge, otherwise it fails naming the node.
 */
static void
fail_closed(OwRun *run, const char *node_id, const char *code, const char *message,
			const char *principal)
{
	OwExec		ex;
	OwJson		j;
	Jsonb	   *error;

	owj_begin(&j);
	owj_str(&j, "code", code);
	owj_str(&j, "message", message);
	owj_bool(&j, "retryable", false);
	error = owj_end(&j);

	ow_latest_exec(run, node_id, &ex);
	ow_fail_execution(run, node_id, &ex, error);
	if (failure_is_routed(run, node_id))
		return;
	ow_end_run(run, OW_FAIL, error, node_id, NULL, principal);
}

/*
 * Once node_id's interrupt no longer holds the run: if another interrupt is
 * still pending, the run keeps waiting on the most recently raised one, which
 * names currentNodeId; otherwise a waiting run resumes (INT-3: a run that was
 * not waiting is left alone).  Returns true when another interrupt holds it.
 */
static bool
settle_run_status(OwRun *run)
{
	static SPIPlanPtr plan = NULL;

	if (strncmp(run->status, "waiting-", 8) != 0)
		return false;
	if (ow_run_query(&plan, "SELECT kind, node_id FROM openwop.interrupts"
							" WHERE tenant OPERATOR(pg_catalog.=) $1"
							"   AND run_id OPERATOR(pg_catalog.=) $2"
							"   AND status OPERATOR(pg_catalog.=) 'pending'"
							" ORDER BY requested_sequence DESC LIMIT 1",
					 run, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the pending interrupts of run \"%s\"", run->run_id);
	if (SPI_processed > 0)
	{
		run->status = (char *) ow_waiting_status(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
		run->current_node_id = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
		return true;
	}
	run->status = "running";
	return false;
}

/*
 * openwop.resolve_interrupt(run_id, node_id, resume_value, idempotency_key)
 */
Datum
ow_resolve_interrupt(PG_FUNCTION_ARGS)
{
	static SPIPlanPtr claim_plan = NULL;
	static SPIPlanPtr job_plan = NULL;
	MemoryContext callerctx = CurrentMemoryContext;
	char	   *run_input;
	char	   *node_id;
	Jsonb	   *value;
	char	   *idem_key;
	char	   *principal;
	char	   *tenant;
	char	   *run_id;
	char	   *digest = NULL;
	OwPriv		priv;
	OwRun		run;
	OwPending	p;
	JsonbValue *rs;
	JsonbContainer *data;
	char	   *action = NULL;
	const char *decision = NULL;
	bool		rejected = false;
	bool		declined = false;
	Jsonb	   *stored_value;
	OwJson		j;
	int64		resolved_seq;
	Datum		args[7];
	char		nulls[7];
	Jsonb	   *result;

	if (PG_ARGISNULL(0))
		ow_validation_error("runId", "run_id must not be null");
	if (PG_ARGISNULL(1))
		ow_validation_error("nodeId", "node_id must not be null");
	if (PG_ARGISNULL(2))
		ow_validation_error("resumeValue", "resume_value is required");
	run_input = text_to_cstring(PG_GETARG_TEXT_PP(0));
	node_id = text_to_cstring(PG_GETARG_TEXT_PP(1));
	value = PG_GETARG_JSONB_P(2);
	idem_key = PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3));
	if (!ow_valid_author_id(node_id))
		ow_validation_error("nodeId", "\"%s\" is not a valid node id", node_id);
	if (idem_key)
		ow_check_idempotency_key(idem_key);

	check_scope();
	principal = ow_caller_principal();
	tenant = ow_caller_tenant();
	run_id = ow_normalize_run_id(run_input, tenant);

	SPI_connect();
	ow_become_owner(&priv);

	if (idem_key)
	{
		Jsonb	   *replay;

		owj_begin(&j);
		owj_str(&j, "runId", run_id);
		owj_str(&j, "nodeId", node_id);
		owj_jsonb(&j, "resumeValue", value);
		digest = ow_request_digest(owj_end(&j));
		replay = ow_idempotency_claim(tenant, "resolveInterruptByRun", idem_key, digest);
		if (replay)
		{
			/* the stored final response, marked as a replay */
			MemoryContextSwitchTo(callerctx);
			owj_begin(&j);
			owj_members(&j, replay);
			owj_bool(&j, "idempotentReplay", true);
			result = owj_end(&j);
			ow_restore_user(&priv);
			SPI_finish();
			PG_RETURN_JSONB_P(result);
		}
	}

	ow_lock_run(&run, run_id);
	if (!find_pending(&run, node_id, &p))
	{
		if (ow_run_is_terminal(run.status) || node_had_interrupt(&run, node_id))
			already_resolved(&run, node_id);
		ow_node_not_found(&run, node_id, "has no interrupt");
	}
	data = owj_get(p.payload, "data")->val.binary.data;

	/* who may decide, then what they may say */
	if (strcmp(p.kind, "approval") == 0)
		check_eligibility(data, principal);
	rs = owj_get(p.payload, "resumeSchema");
	if (rs)
	{
		char	   *errors;

		if (!ow_schema_validate(owj_to_jsonb(rs), value, &errors))
			resume_error("resumeValue", errors, "resumeValue does not match the interrupt's resumeSchema");
	}
	stored_value = value;
	if (strcmp(p.kind, "approval") == 0)
	{
		action = check_approval_resume(data, value);
		if (strcmp(action, "accept") == 0 || strcmp(action, "edit-accept") == 0)
			decision = "granted";
		else if (strcmp(action, "reject") == 0)
		{
			decision = "rejected";
			rejected = true;
		}
		if (owj_get(value, "decidedAt") == NULL)
		{
			/* every resume carries decidedAt: stamp it when the caller did not */
			owj_begin(&j);
			owj_members(&j, value);
			owj_str(&j, "decidedAt", owj_iso8601(GetCurrentTransactionStartTimestamp()));
			stored_value = owj_end(&j);
		}
		if (strcmp(action, "ask") == 0)
		{
			/* ask does not exit the suspend: nothing is resolved */
			MemoryContextSwitchTo(callerctx);
			owj_begin(&j);
			owj_str(&j, "status", "pending");
			owj_str(&j, "runId", run.run_id);
			owj_str(&j, "nodeId", node_id);
			owj_str(&j, "interruptId", p.interrupt_id);
			owj_str(&j, "action", "ask");
			result = owj_end(&j);
			if (idem_key)
				ow_idempotency_complete(tenant, "resolveInterruptByRun", idem_key, result);
			ow_restore_user(&priv);
			SPI_finish();
			PG_RETURN_JSONB_P(result);
		}
	}
	else if (strcmp(p.kind, "clarification") == 0)
		check_clarification_answers(data, value);
	else if (strcmp(p.kind, "credential") == 0)
	{
		char	   *outcome = owj_string(owj_get(value, "outcome"));

		if (strcmp(outcome, "authorized") == 0)
			resume_error("resumeValue",
						 NULL, "outcome \"authorized\" is refused: no credential resolves on this host");
		declined = true;
	}

	/* the claim: the run lock makes this the only resolve of the interrupt */
	owj_begin(&j);
	owj_str(&j, "nodeId", node_id);
	owj_str(&j, "interruptId", p.interrupt_id);
	owj_str(&j, "kind", p.kind);
	owj_jsonb(&j, "resumeValue", stored_value);
	owj_begin_object(&j, "resolvedBy");
	owj_str(&j, "id", principal);
	owj_end_object(&j);
	if (decision)
		owj_str(&j, "decision", decision);
	if (action)
	{
		JsonbValue *v;

		owj_str(&j, "action", action);
		if ((v = owj_get(value, "refineFeedback")) != NULL)
			owj_value(&j, "refineFeedback", v);
		if ((v = owj_get(value, "editedArtifactData")) != NULL)
			owj_value(&j, "editedArtifactData", v);
	}
	resolved_seq = ow_append(&run, "interrupt.resolved", node_id, owj_end(&j));

	if (claim_plan == NULL)
	{
		Oid			types[7] = {TEXTOID, TEXTOID, JSONBOID, TEXTOID, TEXTOID, TEXTOID, INT8OID};

		claim_plan = ow_prepare("UPDATE openwop.interrupts"
								"   SET status = 'resolved', resolved_at = pg_catalog.now(),"
								"       resume_value = $3, decision = $4, action = $5,"
								"       resolved_by = $6, resolved_sequence = $7"
								" WHERE tenant OPERATOR(pg_catalog.=) $1"
								"   AND interrupt_id OPERATOR(pg_catalog.=) $2"
								"   AND status OPERATOR(pg_catalog.=) 'pending'", 7, types);
	}
	if (job_plan == NULL)
	{
		Oid			types[4] = {TEXTOID, TEXTOID, TEXTOID, INT4OID};

		job_plan = ow_prepare("UPDATE openwop.node_executions SET status = 'pending'"
							  " WHERE tenant OPERATOR(pg_catalog.=) $1"
							  "   AND run_id OPERATOR(pg_catalog.=) $2"
							  "   AND node_id OPERATOR(pg_catalog.=) $3"
							  "   AND visit OPERATOR(pg_catalog.=) $4"
							  "   AND status OPERATOR(pg_catalog.=) 'interrupted'", 4, types);
	}
	memset(nulls, ' ', sizeof(nulls));
	args[0] = CStringGetTextDatum(run.tenant);
	args[1] = CStringGetTextDatum(p.interrupt_id);
	args[2] = JsonbPGetDatum(stored_value);
	args[3] = decision ? CStringGetTextDatum(decision) : (Datum) 0;
	nulls[3] = decision ? ' ' : 'n';
	args[4] = action ? CStringGetTextDatum(action) : (Datum) 0;
	nulls[4] = action ? ' ' : 'n';
	args[5] = CStringGetTextDatum(principal);
	args[6] = Int64GetDatum(resolved_seq);
	if (SPI_execute_plan(claim_plan, args, nulls, false, 0) != SPI_OK_UPDATE || SPI_processed != 1)
		already_resolved(&run, node_id);

	/* INT-3: the job returns to pending unconditionally */
	args[1] = CStringGetTextDatum(run.run_id);
	args[2] = CStringGetTextDatum(node_id);
	args[3] = Int32GetDatum(p.visit);
	if (SPI_execute_plan(job_plan, args, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not resume execution of node \"%s\"", node_id);

	if (rejected || declined)
		fail_closed(&run, node_id, rejected ? "approval_rejected" : "connector_auth_declined",
					rejected ? "the approval was rejected" : "the credential request was declined",
					principal);
	else
	{
		owj_begin(&j);
		owj_str(&j, "nodeId", node_id);
		owj_str(&j, "interruptId", p.interrupt_id);
		owj_jsonb(&j, "resumeValue", stored_value);
		ow_append(&run, "node.resumed", node_id, owj_end(&j));
	}
	if (!ow_run_is_terminal(run.status) && !settle_run_status(&run) && !rejected && !declined)
		run.current_node_id = node_id;
	ow_save_run(&run);

	MemoryContextSwitchTo(callerctx);
	owj_begin(&j);
	owj_str(&j, "status", "resolved");
	owj_str(&j, "runId", run.run_id);
	owj_str(&j, "nodeId", node_id);
	owj_str(&j, "interruptId", p.interrupt_id);
	owj_str(&j, "kind", p.kind);
	if (decision)
		owj_str(&j, "decision", decision);
	if (action)
		owj_str(&j, "action", action);
	owj_str(&j, "runStatus", run.status);
	owj_int(&j, "sequence", resolved_seq);
	result = owj_end(&j);
	if (idem_key)
		ow_idempotency_complete(tenant, "resolveInterruptByRun", idem_key, result);
	ow_restore_user(&priv);
	SPI_finish();
	PG_RETURN_JSONB_P(result);
}
