/*-------------------------------------------------------------------------
 *
 * resolve.c
 *	  openwop.resolve_interrupt(): the run-scoped resolve
 *	  (resolveInterruptByRun), with one winner among concurrent resolves.
 *
 * Order of checks ("Resolve surfaces" and its "Errors" in the OpenWOP
 * interrupt spec): arguments and Idempotency-Key grammar
 * (400), scope approvals:respond (403), tenant binding (403), idempotency
 * replay or mismatch, unknown run then node (404), already resolved or run
 * ended (409), approver eligibility (403), resume value (400), then the
 * claim and the record.  The run row lock serialises resolves of one run:
 * the second of two concurrent resolves finds no pending interrupt and gets
 * interrupt_already_resolved, having changed nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "ipc/ipc.h"
#include "base/base.h"
#include "store/store.h"
#include "auth/auth.h"
#include "domain/domain.h"
#include "api/internal.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

PG_FUNCTION_INFO_V1(ow_resolve_interrupt);

#define RUN_ENDPOINT "resolveInterruptByRun"
#define CONFIRM_ENDPOINT "confirmCredential"

/*
 * The pending interrupt of a locked run, named by node (find_pending) or by
 * id (ow_find_pending_by_id), read with what the resolve needs next under
 * the same lock: the run's other pending interrupt, latest raised first
 * (it holds the run once this one settles).  One walk over the run's
 * pending interrupts finds both.  The subject's groups are left to
 * eligibility, which reads only those a gate asks about.
 */
typedef struct PendingRead
{
	OwColumn	by;				/* OPEN_NODE_ID or OPEN_INTERRUPT_ID */
	const char *match;
	OwPending  *p;
	bool		found;
	int64		latest;			/* the other one's requested sequence */
} PendingRead;

/* The columns read, in order. */
enum
{
	PR_INTERRUPT_ID, PR_NODE_ID, PR_KIND, PR_PAYLOAD, PR_VISIT, PR_EXPIRES_AT, PR_STATUS,
	PR_REQUESTED_SEQUENCE, PR_INTERRUPT_TID, PR_EXECUTION_TID, PR_POLICY, PR_ARTIFACT_DIGEST
};

/* Where the raise wrote a row, as the open row keeps it (column c), or invalid. */
static void
tid_hint(const OwRow *row, int c, ItemPointer tid)
{
	if (row->nulls[c])
		ItemPointerSetInvalid(tid);
	else
		ItemPointerCopy((ItemPointer) DatumGetPointer(row->values[c]), tid);
}

static bool
text_is(Datum v, const char *s)
{
	text	   *t = DatumGetTextPP(v);
	size_t		len = strlen(s);

	return VARSIZE_ANY_EXHDR(t) == len && memcmp(VARDATA_ANY(t), s, len) == 0;
}

static void
pending_read(const OwRow *row, void *arg)
{
	PendingRead *pr = arg;
	OwPending  *p = pr->p;
	int64		seq;

	if (!text_is(row->values[PR_STATUS], "pending"))
		return;
	if (!pr->found &&
		text_is(row->values[pr->by == OPEN_NODE_ID ? PR_NODE_ID : PR_INTERRUPT_ID], pr->match))
	{
		p->interrupt_id = TextDatumGetCString(row->values[PR_INTERRUPT_ID]);
		p->node_id = TextDatumGetCString(row->values[PR_NODE_ID]);
		p->kind = TextDatumGetCString(row->values[PR_KIND]);
		p->payload = DatumGetJsonbPCopy(row->values[PR_PAYLOAD]);
		p->policy = row->nulls[PR_POLICY] ? NULL : DatumGetJsonbPCopy(row->values[PR_POLICY]);
		p->artifact_digest = row->nulls[PR_ARTIFACT_DIGEST] ? NULL :
			TextDatumGetCString(row->values[PR_ARTIFACT_DIGEST]);
		p->visit = DatumGetInt32(row->values[PR_VISIT]);
		p->has_deadline = !row->nulls[PR_EXPIRES_AT];
		p->expires_at = p->has_deadline ? DatumGetTimestampTz(row->values[PR_EXPIRES_AT]) : 0;
		p->overdue = p->has_deadline && p->expires_at <= GetCurrentTimestamp();
		p->open_tid = row->tid;
		tid_hint(row, PR_INTERRUPT_TID, &p->tid);
		tid_hint(row, PR_EXECUTION_TID, &p->exec_tid);
		pr->found = true;
		return;
	}
	seq = DatumGetInt64(row->values[PR_REQUESTED_SEQUENCE]);
	if (seq > pr->latest)
	{
		pr->latest = seq;
		p->other_kind = TextDatumGetCString(row->values[PR_KIND]);
		p->other_node = TextDatumGetCString(row->values[PR_NODE_ID]);
	}
}

static bool
read_pending(OwRun *run, OwColumn by, const char *match, OwPending *p)
{
	static OwRead pending = {.table = OW_OPEN_INTERRUPTS,.index = OW_OPEN_PENDING,.nkeys = 2,
		.ncols = 12,.cols = {OPEN_INTERRUPT_ID, OPEN_NODE_ID, OPEN_KIND, OPEN_PAYLOAD, OPEN_VISIT,
			OPEN_EXPIRES_AT, OPEN_STATUS, OPEN_REQUESTED_SEQUENCE, OPEN_INTERRUPT_TID,
	OPEN_EXECUTION_TID, OPEN_POLICY, OPEN_ARTIFACT_DIGEST}};
	PendingRead pr = {by, match, p, false, -1};
	Datum		keys[2];

	p->other_kind = NULL;
	p->other_node = NULL;
	p->groups = NIL;
	p->groups_read = false;
	ItemPointerSetInvalid(&p->tid);
	ItemPointerSetInvalid(&p->open_tid);
	ItemPointerSetInvalid(&p->exec_tid);
	keys[0] = CStringGetTextDatum(run->tenant);
	keys[1] = CStringGetTextDatum(run->run_id);
	(void) ow_read(NULL, &pending, keys, 0, OW_NO_LOCK, 0, NULL, pending_read, &pr);
	return pr.found;
}

/* The pending interrupt of node_id in the locked run, if any. */
static bool
find_pending(OwRun *run, const char *node_id, OwPending *p)
{
	return read_pending(run, OPEN_NODE_ID, node_id, p);
}

/* Interrupt interrupt_id of the locked run, if it is still pending. */
bool
ow_find_pending_by_id(OwRun *run, const char *interrupt_id, OwPending *p)
{
	return read_pending(run, OPEN_INTERRUPT_ID, interrupt_id, p);
}

/* Did the node ever raise an interrupt in this run? */
static bool
node_had_interrupt(OwRun *run, const char *node_id)
{
	static OwQuery q = {"SELECT 1 FROM openwop.interrupts"
		" WHERE tenant OPERATOR(pg_catalog.=) $1"
		"   AND root_run_id OPERATOR(pg_catalog.=) $2"
		"   AND run_id OPERATOR(pg_catalog.=) $3"
		"   AND node_id OPERATOR(pg_catalog.=) $4 LIMIT 1",
	4, {TEXTOID, TEXTOID, TEXTOID, TEXTOID}, SPI_OK_SELECT};
	Datum		args[4];

	args[0] = CStringGetTextDatum(run->tenant);
	args[1] = CStringGetTextDatum(run->root_run_id);
	args[2] = CStringGetTextDatum(run->run_id);
	args[3] = CStringGetTextDatum(node_id);
	/* not read-only: see what committed while this call waited for the run lock */
	return ow_exec(&q, args, NULL, false, 1) > 0;
}

static void
already_resolved(OwRun *run, const char *node_id)
{
	OwDetails	d;

	ow_details_init(&d);
	ow_details_str(&d, "runId", run->run_id);
	ow_details_str(&d, "nodeId", node_id);
	ow_details_str(&d, "runStatus", run->status);
	ow_raise(OW_INTERRUPT_ALREADY_RESOLVED, &d, NULL,
			 ow_run_is_terminal(run->status)
			 ? "node \"%s\" has no pending interrupt: run \"%s\" has ended"
			 : "node \"%s\" has no pending interrupt in run \"%s\": it was already resolved",
			 node_id, run->run_id);
}

/* A refused resume value: details.field, and details.errors when a schema failed. */
#define resume_error(field, errors, ...) ow_validation_errors((field), (errors), NULL, __VA_ARGS__)

/*
 * A refineFeedback member that must be a string, or (array) an array of
 * strings: interrupt.resolved records refineFeedback verbatim, and its
 * schema types sectionPath and text as strings, itemIds and tags as arrays
 * of strings (the "Approval" section of the OpenWOP interrupt spec).
 */
static void
check_refine_member(JsonbContainer *rf, const char *key, bool array)
{
	JsonbValue *v = owj_get_container(rf, key);
	char	   *field = psprintf("resumeValue.refineFeedback.%s", key);
	int			i;

	if (v == NULL)
		return;
	if (!array)
	{
		if (v->type != jbvString)
			resume_error(field, NULL, "%s must be a string, not %s", field, owj_type_name(v));
		return;
	}
	if (!owj_is_array(v))
		resume_error(field, NULL, "%s must be an array of strings, not %s", field, owj_type_name(v));
	for (i = 0; i < (int) JsonContainerSize(v->val.binary.data); i++)
	{
		JsonbValue *e = getIthJsonbValueFromContainer(v->val.binary.data, i);

		if (e->type != jbvString)
			resume_error(field, NULL, "%s[%d] must be a string, not %s", field, i, owj_type_name(e));
	}
}

/* The approval resume value: the action and the field it requires ("Approval"). */
static char *
check_approval_resume(JsonbContainer *data, Jsonb *value, const OwSubject *who)
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
		resume_error(psprintf("resumeValue.%s", ow_echo(unknown)), NULL,
					 "resumeValue has unknown member \"%s\"", ow_echo(unknown));
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
					 "action \"%s\" is not one of the interrupt's actions", ow_echo(action));

	if ((v = owj_get(value, "feedback")) && v->type != jbvString)
		resume_error("resumeValue.feedback", NULL, "resumeValue.feedback must be a string");
	if ((v = owj_get(value, "decidedAt")) && v->type != jbvString)
		resume_error("resumeValue.decidedAt", NULL, "resumeValue.decidedAt must be an ISO 8601 string");
	if ((v = owj_get(value, "decidedBy")) && v->type != jbvString)
		resume_error("resumeValue.decidedBy", NULL, "resumeValue.decidedBy must be a string");
	/* the host records who decided: a caller may repeat it, never name someone else */
	if (v && !ow_subject_matches(who, owj_string(v)))
		resume_error("resumeValue.decidedBy", NULL,
					 "resumeValue.decidedBy \"%s\" is not the caller \"%s\"; omit it, the host records who decided",
					 owj_string(v), who->subject_id);

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
		check_refine_member(v->val.binary.data, "sectionPath", false);
		check_refine_member(v->val.binary.data, "itemIds", true);
		check_refine_member(v->val.binary.data, "tags", true);
		check_refine_member(v->val.binary.data, "text", false);
	}
	if (strcmp(action, "edit-accept") == 0 && owj_get(value, "editedArtifactData") == NULL)
		resume_error("resumeValue.editedArtifactData", NULL,
					 "action \"edit-accept\" needs resumeValue.editedArtifactData");
	return action;
}

/* A clarification's questions, sorted by id once per answer: a lookup is a binary search. */
typedef struct Question
{
	const char *id;
	int			idlen;
	JsonbValue *schema;			/* NULL: any answer */
	bool		answered;
} Question;

typedef struct Questions
{
	Question   *q;
	int			n;
	MemoryContext work;			/* reset after each answer */
} Questions;

static int
question_cmp(const void *a, const void *b)
{
	const Question *x = a;
	const Question *y = b;
	int			c = memcmp(x->id, y->id, Min(x->idlen, y->idlen));

	return c != 0 ? c : x->idlen - y->idlen;
}

static void
load_questions(Questions *qs, JsonbContainer *data)
{
	JsonbValue *list = owj_get_container(data, "questions");
	int			i;

	qs->n = (int) JsonContainerSize(list->val.binary.data);
	qs->q = palloc(sizeof(Question) * qs->n);
	for (i = 0; i < qs->n; i++)
	{
		JsonbContainer *q = getIthJsonbValueFromContainer(list->val.binary.data, i)->val.binary.data;
		JsonbValue *qid = owj_get_container(q, "id");

		qs->q[i].id = qid->val.string.val;
		qs->q[i].idlen = qid->val.string.len;
		qs->q[i].schema = owj_get_container(q, "schema");
		qs->q[i].answered = false;
	}
	qsort(qs->q, qs->n, sizeof(Question), question_cmp);
	qs->work = AllocSetContextCreate(CurrentMemoryContext, "openwop clarification answer",
									 ALLOCSET_DEFAULT_SIZES);
}

/* Check one answer: it names a question not answered yet, and matches its schema. */
static void
check_answer(Questions *qs, const char *id, int idlen, JsonbValue *answer)
{
	Question	key = {id, idlen, NULL, false};
	Question   *q = bsearch(&key, qs->q, qs->n, sizeof(Question), question_cmp);
	const char *qid = ow_echo(pnstrdup(id, idlen));
	MemoryContext old;
	char	   *errors;

	CHECK_FOR_INTERRUPTS();
	if (q == NULL)
		resume_error(psprintf("resumeValue.%s", qid), NULL,
					 "\"%s\" is not a question of this clarification", qid);
	if (q->answered)
		resume_error(psprintf("resumeValue.%s", qid), NULL,
					 "question \"%s\" is answered more than once", qid);
	q->answered = true;
	if (q->schema == NULL)
		return;
	old = MemoryContextSwitchTo(qs->work);
	if (!ow_schema_validate(owj_to_jsonb(q->schema), owj_to_jsonb(answer), &errors))
	{
		MemoryContextSwitchTo(old);
		resume_error(psprintf("resumeValue.%s", qid), errors,
					 "the answer to question \"%s\" does not match its schema", qid);
	}
	MemoryContextSwitchTo(old);
	MemoryContextReset(qs->work);
}

/*
 * Clarification answers, in exactly one of the shapes in use: keyed by
 * question id ({q1: ...}), or {answers: {q1: ...}}, or {answers: [{id,
 * answer}]}.  Every answer must name a question, at most once, and match
 * its schema.
 */
static void
check_clarification_answers(JsonbContainer *data, Jsonb *value)
{
	static const char *const only_answers[] = {"answers", NULL};
	static const char *const pair_keys[] = {"id", "answer", NULL};
	Questions	qs;
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
		resume_error(psprintf("resumeValue.%s", ow_echo(unknown)), NULL,
					 "resumeValue has \"answers\" and also \"%s\"; use one shape", ow_echo(unknown));
	load_questions(&qs, data);
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
			check_answer(&qs, id->val.string.val, id->val.string.len, answer);
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
		check_answer(&qs, k.val.string.val, k.val.string.len, &v);
	}
}

/*
 * A conversation's answer: a start or a close takes none (JSON null or
 * {}); a turn's must match the exchange's outcomeSchema, when it has one
 * (refused as a failing resumeSchema is).
 */
static void
check_conversation_answer(const char *kind, JsonbContainer *data, Jsonb *value)
{
	JsonbValue	root;
	JsonbValue *schema;
	char	   *errors;

	if (strcmp(kind, "conversation.exchange") != 0)
	{
		owj_root(value, &root);
		if (root.type != jbvNull && !(JB_ROOT_IS_OBJECT(value) && JB_ROOT_COUNT(value) == 0))
			resume_error("resumeValue", NULL, "a %s takes no resume value: send null or {}", kind);
		return;
	}
	schema = owj_get_container(data, "outcomeSchema");
	if (schema && !ow_schema_validate(owj_to_jsonb(schema), value, &errors))
		resume_error("resumeValue", errors, "resumeValue does not match the turn's outcomeSchema");
}

/*
 * An approval answer as recorded: the caller's members, with decidedBy
 * (the principal) and decidedAt (the host's clock) filled by the host.
 */
static Jsonb *
stamped_answer(Jsonb *value, const OwSubject *who)
{
	static const char *const filled[] = {"decidedBy", "decidedAt", NULL};
	OwJson		j;

	owj_begin(&j);
	owj_members_except(&j, value, filled);
	owj_str(&j, "decidedAt", owj_iso8601(GetCurrentTimestamp()));
	owj_str(&j, "decidedBy", who->subject_id);
	return owj_end(&j);
}

/*
 * End a resolve call with its response, built in the caller's context:
 * stored first under the Idempotency-Key (tenant, endpoint, key) when one
 * was given (key NULL: none, or result is a replay of a stored response).
 */
Datum
ow_resolve_respond(OwCall *call, const char *tenant, const char *endpoint, const char *key,
				   Jsonb *result)
{
	if (key)
		ow_idempotency_complete(tenant, endpoint, key, result);
	ow_call_end(call);
	ow_call_finish(call);
	PG_RETURN_JSONB_P(result);
}

/*
 * What a resolve's response says besides {status, runId, nodeId,
 * interruptId}, which every response holds: each member NULL (or the
 * sequence 0) when absent.
 */
typedef struct Response
{
	const char *kind;
	const char *action;
	const char *reason;
	const OwVote *tally;		/* a vote: the tally, and whether it counted */
	bool		counted;
	const char *decision;
	int64		sequence;		/* of interrupt.resolved (never event 0) */
	const char *run_status;
	const OwSubject *resolved_by;
	Jsonb	   *receipt;		/* of a resolution */
} Response;

/* The response, built in resultctx, its keys pushed in jsonb's key order (see json.c). */
static Jsonb *
response(MemoryContext resultctx, const char *status, OwRun *run, const OwPending *p,
		 const Response *r)
{
	MemoryContext old = MemoryContextSwitchTo(resultctx);
	OwJson		j;
	Jsonb	   *result;

	owj_begin(&j);
	if (r->kind)
		owj_str(&j, "kind", r->kind);
	owj_str(&j, "runId", run->run_id);
	if (r->tally)
	{
		owj_begin_object(&j, "tally");
		if (r->tally->ngroups > 0)
		{
			int			g;

			/* each group requirement, and the accepts counted toward it (distinct humans) */
			owj_begin_array(&j, "groups");
			for (g = 0; g < r->tally->ngroups; g++)
			{
				owj_begin_object(&j, NULL);
				owj_int(&j, "met", r->tally->met[g]);
				owj_str(&j, "ref", r->tally->groups[g].ref);
				owj_int(&j, "required", r->tally->groups[g].required);
				owj_end_object(&j);
			}
			owj_end_array(&j);
		}
		owj_int(&j, "voters", r->tally->voters);
		owj_int(&j, "accepts", r->tally->accepts);
		owj_int(&j, "rejects", r->tally->rejects);
		owj_int(&j, "requiredApprovals", r->tally->required);
		owj_end_object(&j);
	}
	if (r->action)
		owj_str(&j, "action", r->action);
	owj_str(&j, "nodeId", p->node_id);
	if (r->reason)
		owj_str(&j, "reason", r->reason);
	owj_str(&j, "status", status);
	if (r->tally)
		owj_bool(&j, "counted", r->counted);
	if (r->decision)
		owj_str(&j, "decision", r->decision);
	if (r->sequence)
		owj_int(&j, "sequence", r->sequence);
	if (r->run_status)
		owj_str(&j, "runStatus", r->run_status);
	if (r->receipt)
		owj_jsonb(&j, "receipt", r->receipt);
	if (r->resolved_by)
		owj_subject(&j, "resolvedBy", r->resolved_by);
	owj_str(&j, "interruptId", p->interrupt_id);
	result = owj_end(&j);
	MemoryContextSwitchTo(old);
	return result;
}

/*
 * The receipt of a resolution: what was decided on which gate, by whom and
 * how each was authenticated, under which policy, and the interrupt.resolved
 * event's place and hash in the run's chain (openwop.verify_run() checks
 * it; an auditor keeps it).  rule: an approval gate's, else NULL; voter and
 * action: the deciding answer as cast.
 */
static Jsonb *
receipt(OwRun *run, const OwPending *p, const OwResolution *r, int64 seq, const OwGateRule *rule,
		const OwSubject *who, const char *voter, const char *action)
{
	char		hex[OW_EVENT_HASH_HEX];
	OwJson		j;

	ow_event_hash_hex(ow_appended_hash(run, seq), hex);
	owj_begin(&j);
	owj_str(&j, "kind", p->kind);
	owj_begin_object(&j, "event");
	owj_str(&j, "hash", hex);
	owj_str(&j, "type", "interrupt.resolved");
	owj_int(&j, "sequence", seq);
	owj_end_object(&j);
	owj_str(&j, "runId", run->run_id);
	if (r->action)
		owj_str(&j, "action", r->action);
	owj_str(&j, "nodeId", p->node_id);
	if (r->policy)
		owj_jsonb(&j, "policy", r->policy);
	if (rule)
		owj_approval_voters(&j, "voters", run, p->interrupt_id, rule, who, voter, action);
	if (r->decision)
		owj_str(&j, "decision", r->decision);
	owj_subject(&j, "resolvedBy", who);
	owj_str(&j, "interruptId", p->interrupt_id);
	if (p->artifact_digest)
		owj_str(&j, "artifactDigest", p->artifact_digest);
	owj_str(&j, "authenticatedBy", ow_issuer_authentication(who->issuer));
	return owj_end(&j);
}

/*
 * An answer to an interrupt already past its deadline: the expiry policy
 * on its late-answer path (FlowDrop INT-23).  An approval is rejected by
 * timeout exactly as a sweep would (fail closed); any other kind expires
 * silently and the next sweep ends its run (INT-18).  The outcome is
 * recorded and returned, never raised.
 */
static Jsonb *
late_answer(OwRun *run, OwPending *p, MemoryContext resultctx)
{
	OwDeadline	d;
	Response	resp = {0};

	d.interrupt_id = p->interrupt_id;
	d.node_id = p->node_id;
	d.kind = p->kind;
	d.visit = p->visit;
	d.expired = false;
	d.payload = p->payload;
	d.policy = p->policy;
	ow_apply_deadline(run, &d, true);

	resp.kind = p->kind;
	if (strcmp(p->kind, "approval") == 0)
	{
		resp.decision = "rejected";
		resp.action = "timeout";
		resp.reason = "timeout";
	}
	resp.run_status = run->status;
	return response(resultctx, "expired", run, p, &resp);
}

/*
 * Resolve the pending interrupt p of the locked run, answering as the
 * subject who (login: its SQL login, for role refs; else InvalidOid):
 * eligibility, resume validation, the vote tally for approvals, then the
 * record.  confirmed_by: the login of the host's grant callback, which
 * vouches that a credential now resolves (confirm_credential()), recorded
 * beside the host as resolver; else NULL.  Returns the response, built in
 * resultctx.
 */
static Jsonb *
resolve_locked(OwRun *run, OwPending *p, Jsonb *value, const OwSubject *who,
			   Oid login, const OwSubject *confirmed_by, MemoryContext resultctx)
{
	JsonbValue *rs;
	JsonbContainer *data;
	OwResolution r = {0};
	Response	resp = {0};
	int64		resolved_seq;
	bool		is_override = false;
	bool		conversation = false;
	OwGateRule	rule;
	const char *voter = NULL;
	const char *cast = NULL;

	if (p->overdue)
		return late_answer(run, p, resultctx);
	data = owj_get(p->payload, "data")->val.binary.data;

	r.interrupt_id = p->interrupt_id;
	r.kind = p->kind;
	r.node_id = p->node_id;
	r.visit = p->visit;
	r.resume_value = value;
	r.resolver = who;
	r.confirmed_by = confirmed_by;
	r.other_known = true;
	r.other_kind = p->other_kind;
	r.other_node = p->other_node;
	r.tid = p->tid;
	r.open_tid = p->open_tid;
	r.exec_tid = p->exec_tid;

	/* who may decide, then what they may say */
	if (strcmp(p->kind, "approval") == 0)
	{
		ow_gate_rule(data, p->policy, &rule);
		rule.digest = p->artifact_digest;
		r.policy = ow_policy_record(&rule);
		r.eligibility = ow_approval_eligibility(run, p->interrupt_id, data, &rule, who, login,
												p->groups_read ? &p->groups : NULL, &is_override,
												&voter);
		r.action = check_approval_resume(data, value, who);
		cast = r.action;
		r.resume_value = stamped_answer(value, who);
	}
	rs = owj_get(p->payload, "resumeSchema");
	if (rs)
	{
		char	   *errors;

		if (!ow_schema_validate(owj_to_jsonb(rs), value, &errors))
			resume_error("resumeValue", errors, "resumeValue does not match the interrupt's resumeSchema");
	}
	/* the voter's word on which artifact it approved */
	if (cast)
		ow_artifact_precondition(p->interrupt_id, run->run_id, p->node_id, p->artifact_digest);
	if (strcmp(p->kind, "clarification") == 0)
		check_clarification_answers(data, value);
	else if (strncmp(p->kind, "conversation.", 13) == 0)
	{
		check_conversation_answer(p->kind, data, value);
		conversation = true;
	}
	/* the deadline passed while the answer was checked: it is a late answer after all */
	if (p->has_deadline && GetCurrentTimestamp() >= p->expires_at)
		return late_answer(run, p, resultctx);
	if (strcmp(p->kind, "credential") == 0)
	{
		/*
		 * A caller's word is never enough (it would hand the run a credential
		 * nobody holds); only the host's grant callback confirms, through
		 * confirm_credential().
		 */
		JsonbValue *outcome = owj_get(value, "outcome");

		/* the pinned resumeSchema made outcome a string; a hand-edited row need not have */
		if (outcome == NULL || outcome->type != jbvString)
			resume_error("resumeValue", NULL, "a credential's resumeValue is {outcome: \"authorized\" | \"declined\"}");
		if (confirmed_by == NULL && strcmp(owj_string(outcome), "authorized") == 0)
			resume_error("resumeValue", NULL,
						 "outcome \"authorized\" is refused: only the host confirms a credential, with confirm_credential()");
		ow_fail_disposition(&r);
	}
	else if (strcmp(p->kind, "approval") == 0)
	{
		OwVote		v;

		ow_approval_vote(run, p->interrupt_id, &rule, who, voter, r.action, r.resume_value,
						 r.eligibility, is_override, &v);
		if (!v.decided)
		{
			/* counted (or an ask, recorded): the gate stays suspended, nothing appended */
			ow_count_decision(OW_STAT_VOTED);
			resp.action = r.action;
			resp.counted = strcmp(r.action, "ask") != 0;
			resp.tally = &v;
			return response(resultctx, "pending", run, p, &resp);
		}
		r.decision = v.decision;
		r.action = v.action;
		r.reason = v.reason;
		if (p->artifact_digest)
			r.artifact = ow_artifact_record(run->tenant, p->interrupt_id, p->artifact_digest);
		ow_fail_disposition(&r);
	}

	/* the claim: the run lock makes this the only resolution of the interrupt */
	if (strcmp(p->kind, "approval") == 0)
		r.notices = ow_outcome_notices(run, p->interrupt_id, p->node_id, p->payload, p->policy, false,
									   r.decision, r.action);
	resolved_seq = ow_record_resolution(run, &r);
	if (conversation)
	{
		/* its step is done (a turn completes): appended after the run row was written */
		ow_conversation_answered(run, p->kind, p->interrupt_id, p->node_id, p->payload, value,
								 resolved_seq);
		r.saved = false;
	}
	if (!r.saved)
		ow_save_run(run);
	ow_count_decision(OW_STAT_RESOLVED);

	resp.kind = p->kind;
	resp.decision = r.decision;
	resp.action = r.action;
	resp.reason = r.reason;
	resp.resolved_by = who;
	resp.run_status = run->status;
	resp.sequence = resolved_seq;
	resp.receipt = receipt(run, p, &r, resolved_seq, cast ? &rule : NULL, who, voter, cast);
	return response(resultctx, "resolved", run, p, &resp);
}

/*
 * Resolve the pending interrupt p of the locked run, answering as the
 * subject who (login: its SQL login, for role refs; else InvalidOid):
 * shared by the run-scoped and the token surfaces.
 */
Jsonb *
ow_resolve_locked(OwRun *run, OwPending *p, Jsonb *value, const OwSubject *who,
				  Oid login, MemoryContext resultctx)
{
	return resolve_locked(run, p, value, who, login, NULL, resultctx);
}

/* A run-scoped call's run id and node id (arguments 0 and 1) are not null (400). */
static void
require_run_node(FunctionCallInfo fcinfo)
{
	if (PG_ARGISNULL(0))
		ow_validation_error("runId", "run_id must not be null");
	if (PG_ARGISNULL(1))
		ow_validation_error("nodeId", "node_id must not be null");
}

/*
 * The run id, node id and (argument idem_arg; -1: none) Idempotency-Key of
 * a run-scoped call, the first two known not to be null: the node id and
 * the key checked.
 */
static void
run_node_args(FunctionCallInfo fcinfo, int idem_arg, char **run_input, char **node_id,
			  char **idem_key)
{
	*run_input = text_to_cstring(PG_GETARG_TEXT_PP(0));
	*node_id = text_to_cstring(PG_GETARG_TEXT_PP(1));
	*idem_key = idem_arg < 0 || PG_ARGISNULL(idem_arg) ? NULL :
		text_to_cstring(PG_GETARG_TEXT_PP(idem_arg));
	if (!ow_valid_author_id(*node_id))
		ow_validation_error("nodeId", "\"%s\" is not a valid node id", ow_echo(*node_id));
	if (*idem_key)
		ow_check_idempotency_key(*idem_key);
}

/*
 * Claim idem_key for a run-scoped request {runId, nodeId, resumeValue?}:
 * the stored response of an earlier one with the same key, or NULL.
 */
static Jsonb *
claim_run_request(OwCall *call, const char *endpoint, const char *idem_key,
				  const char *run_id, const char *node_id, Jsonb *value)
{
	OwJson		j;

	owj_begin(&j);
	owj_str(&j, "runId", run_id);
	owj_str(&j, "nodeId", node_id);
	if (value)
		owj_jsonb(&j, "resumeValue", value);
	return ow_idempotency_claim(call->caller.subject.tenant, endpoint, idem_key, owj_end(&j),
								&call->caller.subject, call->callerctx);
}

/*
 * Lock run_id and find the pending interrupt of node_id.  A node that never
 * raised an interrupt is unknown to the resolve surface: 404 before any
 * terminal check, even on an ended run.  One that did is resolved or
 * invalidated: 409.
 */
static void
lock_pending(OwRun *run, const char *tenant, const char *run_id, const char *node_id,
			 OwPending *p)
{
	ow_lock_run_id(run, tenant, run_id);
	if (find_pending(run, node_id, p))
		return;
	if (node_had_interrupt(run, node_id))
		already_resolved(run, node_id);
	ow_node_not_found(run, node_id, "has no interrupt");
}

/*
 * openwop.resolve_interrupt(run_id, node_id, resume_value, idempotency_key)
 */
Datum
ow_resolve_interrupt(PG_FUNCTION_ARGS)
{
	char	   *run_input;
	char	   *node_id;
	Jsonb	   *value;
	char	   *idem_key;
	char	   *tenant;
	char	   *run_id;
	OwCall		call;
	OwRun		run;
	OwPending	p;
	Jsonb	   *result;

	ow_refuse_read_only("resolve_interrupt()");
	require_run_node(fcinfo);
	if (PG_ARGISNULL(2))
		ow_validation_error("resumeValue", "resume_value is required");
	ow_check_json_arg(fcinfo, 2, "resumeValue", true);
	value = PG_GETARG_JSONB_P(2);
	run_node_args(fcinfo, 3, &run_input, &node_id, &idem_key);

	ow_caller(&call.caller);
	ow_check_scope(&call.caller);
	tenant = call.caller.subject.tenant;
	run_id = ow_normalize_run_id(run_input, tenant);

	ow_call_enter(&call);
	if (idem_key &&
		(result = claim_run_request(&call, RUN_ENDPOINT, idem_key, run_id, node_id, value)) != NULL)
		return ow_resolve_respond(&call, NULL, NULL, NULL, result);
	lock_pending(&run, tenant, run_id, node_id, &p);
	result = ow_resolve_locked(&run, &p, value, &call.caller.subject, call.caller.login,
							   call.callerctx);
	return ow_resolve_respond(&call, tenant, RUN_ENDPOINT, idem_key, result);
}

/*
 * Resolve the interrupt interrupt_id (the caller's tenant's, in either
 * form an id takes) as the caller, exactly as resolve_interrupt() resolves
 * its run's node: 404 when there is none, 409 when it is no longer
 * pending.  The answer is built in resultctx.
 */
Jsonb *
ow_resolve_by_id(const OwCaller *caller, const char *interrupt_id, Jsonb *value,
				 MemoryContext resultctx)
{
	static OwQuery q = {"SELECT run_id, node_id FROM openwop.interrupts"
		" WHERE tenant OPERATOR(pg_catalog.=) $1 AND interrupt_id OPERATOR(pg_catalog.=) $2",
	2, {TEXTOID, TEXTOID}, SPI_OK_SELECT};
	const char *tenant = caller->subject.tenant;
	char	   *id = ow_normalize_id(interrupt_id, tenant, "interruptId", "interrupt");
	Datum		args[2];
	char	   *node_id;

	args[0] = CStringGetTextDatum(tenant);
	args[1] = CStringGetTextDatum(id);
	if (ow_exec(&q, args, NULL, false, 1) != 1)
		ow_interrupt_not_found(id);
	node_id = ow_col_text(0, 2);
	return ow_resolve_in_run(caller, id, ow_col_text(0, 1), node_id, value, resultctx);
}

/* The same for an interrupt of the caller's tenant whose run and node are known. */
Jsonb *
ow_resolve_in_run(const OwCaller *caller, const char *interrupt_id, const char *run_id,
				  const char *node_id, Jsonb *value, MemoryContext resultctx)
{
	OwRun		run;
	OwPending	p;

	ow_lock_run_id(&run, caller->subject.tenant, run_id);
	if (!ow_find_pending_by_id(&run, interrupt_id, &p))
		already_resolved(&run, node_id);
	return ow_resolve_locked(&run, &p, value, &caller->subject, caller->login, resultctx);
}

/* node_id of the locked run waits on a kind of interrupt the call does not answer (409). */
static void
other_kind(OwRun *run, const char *node_id, const char *kind, const char *wanted, const char *hint)
{
	OwDetails	d;

	ow_details_init(&d);
	ow_details_str(&d, "runId", run->run_id);
	ow_details_str(&d, "nodeId", node_id);
	ow_details_str(&d, "kind", kind);
	ow_raise(OW_RUN_STATE_CONFLICT, &d, hint, "node \"%s\" waits on a %s interrupt, not %s",
			 ow_echo(node_id), kind, wanted);
}

PG_FUNCTION_INFO_V1(ow_withdraw_vote);
/*
 * openwop.withdraw_vote(run_id, node_id) → jsonb: the caller takes back its
 * counted vote on the approval gate of node_id while the gate is pending
 * (a new revision, under the run lock like any vote), and is answered as a
 * vote that decides nothing: {status: "pending", action: "withdraw",
 * counted: false, tally}.  The caller must be eligible now, as for a vote
 * (403): a caller refused as a voter cannot take a vote back either, nor a
 * delegate whose delegation ended.  A decided gate is 409, as for a vote;
 * past its deadline it is a late answer.
 */
Datum
ow_withdraw_vote(PG_FUNCTION_ARGS)
{
	char	   *run_input;
	char	   *node_id;
	char	   *tenant;
	char	   *run_id;
	OwCall		call;
	OwRun		run;
	OwPending	p;
	OwGateRule	rule;
	OwVote		v;
	Response	resp = {0};
	Jsonb	   *result;
	char	   *idem_key;		/* none: withdraw_vote takes no key */

	ow_refuse_read_only("withdraw_vote()");
	require_run_node(fcinfo);
	run_node_args(fcinfo, -1, &run_input, &node_id, &idem_key);

	ow_caller(&call.caller);
	ow_check_scope(&call.caller);
	tenant = call.caller.subject.tenant;
	run_id = ow_normalize_run_id(run_input, tenant);

	ow_call_enter(&call);
	lock_pending(&run, tenant, run_id, node_id, &p);
	if (strcmp(p.kind, "approval") != 0)
		other_kind(&run, node_id, p.kind, "an approval gate", "Only an approval gate counts votes.");
	if (p.overdue)
		result = late_answer(&run, &p, call.callerctx);
	else
	{
		JsonbContainer *data = owj_get(p.payload, "data")->val.binary.data;
		const char *voter;
		bool		is_override;

		/* who may take back only what it may cast now: eligibility, as for a vote (403) */
		ow_gate_rule(data, p.policy, &rule);
		rule.digest = p.artifact_digest;
		(void) ow_approval_eligibility(&run, p.interrupt_id, data, &rule, &call.caller.subject,
									   call.caller.login, NULL, &is_override, &voter);
		ow_approval_withdraw(&run, p.interrupt_id, p.node_id, data, &rule, &call.caller.subject, voter, &v);
		ow_count_decision(OW_STAT_VOTED);
		resp.action = "withdraw";
		resp.counted = false;
		resp.tally = &v;
		result = response(call.callerctx, "pending", &run, &p, &resp);
	}
	return ow_resolve_respond(&call, tenant, NULL, NULL, result);
}

PG_FUNCTION_INFO_V1(ow_artifact_changed);
/*
 * openwop.artifact_changed(run_id, node_id, artifact_digest, reason): the
 * engine tells the pending approval gate of node_id which version of its
 * artifact it shows (domain/artifacts.c), under the run lock, so a vote
 * is counted on one version or the other, never on a mix.
 */
Datum
ow_artifact_changed(PG_FUNCTION_ARGS)
{
	char	   *run_input;
	char	   *node_id;
	char	   *digest;
	char	   *reason;
	char	   *tenant;
	char	   *run_id;
	OwCall		call;
	OwRun		run;
	OwPending	p;
	Jsonb	   *voided;
	bool		changed;
	OwJson		j;
	Jsonb	   *result;
	char	   *idem_key;		/* none: artifact_changed takes no key */

	ow_refuse_read_only("artifact_changed()");
	require_run_node(fcinfo);
	run_node_args(fcinfo, -1, &run_input, &node_id, &idem_key);
	digest = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));
	ow_check_artifact_digest(digest);
	reason = PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3));
	ow_check_artifact_reason(reason);

	ow_caller(&call.caller);
	tenant = call.caller.subject.tenant;
	run_id = ow_normalize_run_id(run_input, tenant);

	ow_call_enter(&call);
	lock_pending(&run, tenant, run_id, node_id, &p);
	if (strcmp(p.kind, "approval") != 0)
		other_kind(&run, node_id, p.kind, "an approval gate", "Only an approval gate counts votes on an artifact.");
	voided = ow_artifact_change(&run, p.interrupt_id, node_id, p.artifact_digest, digest, reason,
								&call.caller.subject, &changed);
	ow_call_end(&call);

	/* in jsonb's key order */
	owj_begin(&j);
	owj_str(&j, "runId", run_id);
	owj_str(&j, "digest", digest);
	owj_str(&j, "nodeId", node_id);
	owj_jsonb(&j, "voided", voided);
	owj_bool(&j, "changed", changed);
	owj_str(&j, "interruptId", p.interrupt_id);
	if (p.artifact_digest)
		owj_str(&j, "previousDigest", p.artifact_digest);
	else
		owj_null(&j, "previousDigest");
	result = owj_end(&j);		/* before SPI lets go of what it reads from */
	ow_call_finish(&call);
	PG_RETURN_JSONB_P(result);
}

PG_FUNCTION_INFO_V1(ow_confirm_credential);
/*
 * openwop.confirm_credential(run_id, node_id, idempotency_key): the host's
 * OAuth callback, once its token request succeeded, resolves the credential
 * interrupt of node_id with {outcome: "authorized"} as the host.  EXECUTE is
 * granted to nobody: a DBA grants it to the callback's login alone, as
 * anyone who may call it can hand a run a credential.
 */
Datum
ow_confirm_credential(PG_FUNCTION_ARGS)
{
	char	   *run_input;
	char	   *node_id;
	char	   *idem_key;
	char	   *tenant;
	char	   *run_id;
	OwCall		call;
	OwRun		run;
	OwPending	p;
	OwSubject	host;
	Jsonb	   *result;

	ow_refuse_read_only("confirm_credential()");
	require_run_node(fcinfo);
	run_node_args(fcinfo, 2, &run_input, &node_id, &idem_key);

	/* the privilege is the grant: the callback's login need not be an approver */
	ow_caller(&call.caller);
	tenant = call.caller.subject.tenant;
	run_id = ow_normalize_run_id(run_input, tenant);

	ow_call_enter(&call);
	if (idem_key &&
		(result = claim_run_request(&call, CONFIRM_ENDPOINT, idem_key, run_id, node_id, NULL)) != NULL)
		return ow_resolve_respond(&call, NULL, NULL, NULL, result);
	lock_pending(&run, tenant, run_id, node_id, &p);
	if (strcmp(p.kind, "credential") != 0)
		other_kind(&run, node_id, p.kind, "a credential",
				   "Only a credential interrupt is confirmed; answer this one with resolve_interrupt().");
	ow_credential_host_subject(&host, run.tenant);
	result = resolve_locked(&run, &p, DatumGetJsonbP(DirectFunctionCall1(jsonb_in,
																		  CStringGetDatum("{\"outcome\": \"authorized\"}"))),
							&host, InvalidOid, &call.caller.subject, call.callerctx);
	return ow_resolve_respond(&call, tenant, CONFIRM_ENDPOINT, idem_key, result);
}
