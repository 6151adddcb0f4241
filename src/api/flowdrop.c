/*-------------------------------------------------------------------------
 *
 * flowdrop.c
 *	  The FlowDrop entry of an interrupt (INT-22): flowdrop_interrupt(id)
 *	  and its list form flowdrop_interrupts(ids), 24 keys in the rule's
 *	  order, every one present, unset ones null, timestamps ISO-8601.
 *
 * The entry is json text written here key by key: jsonb would sort the
 * keys.  Each key is read from what the interrupt and its run store
 * (docs/flowdrop.md maps them), in one statement.  Reads are tenant-checked
 * like every call, and need the approvals:respond scope or the privilege
 * to read runs' event logs (EXECUTE on openwop.events()), which show
 * everything an entry does.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/base.h"
#include "store/store.h"
#include "auth/auth.h"
#include "api/internal.h"

#include "access/detoast.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/memutils.h"

PG_FUNCTION_INFO_V1(ow_flowdrop_interrupt);
PG_FUNCTION_INFO_V1(ow_flowdrop_interrupts);

/* The most ids one call of the list form takes. */
#define OW_FLOWDROP_MAX_IDS 1000

/*
 * What an entry is made of: the interrupt i and its run r, one row per
 * entry.  The columns, in the order the enum below numbers them.
 */
#define ENTRY_COLUMNS \
	"SELECT i.interrupt_id, i.kind, i.status, i.node_id, r.workflow_id, i.run_id," \
	"       i.payload, i.resume_value, i.created_at, i.expires_at, i.resolved_at," \
	"       i.resolved_by, i.visit, r.owner, i.reason, r.status"
#define ENTRY_RUN \
	"  JOIN openwop.runs r ON r.tenant OPERATOR(pg_catalog.=) i.tenant" \
	"                     AND r.run_id OPERATOR(pg_catalog.=) i.run_id"

enum
{
	COL_ID = 1,
	COL_KIND,
	COL_STATUS,
	COL_NODE,
	COL_WORKFLOW,
	COL_RUN,
	COL_PAYLOAD,
	COL_RESUME_VALUE,
	COL_CREATED_AT,
	COL_EXPIRES_AT,
	COL_RESOLVED_AT,
	COL_RESOLVED_BY,
	COL_VISIT,
	COL_OWNER,
	COL_REASON,
	COL_RUN_STATUS
};

/* ----------
 * Who may read
 * ----------
 */

/*
 * An entry shows the request, its answer and who gave it: readable by
 * approvers (approvals:respond) and by roles that may read the event log,
 * which records all of it (the engine's).  Anyone else is refused before
 * any id is looked at (403 forbidden).
 */
void
ow_check_entry_reader(const OwCaller *c, const char *what)
{
	const char *hint;
	OwDetails	d;

	/* a forwarded caller reads event logs only when its router says it may */
	if (ow_has_scope(c) ||
		((c->forwarded_by == NULL || (c->forwarded_privileges & OW_PRIV_READ_EVENT_LOGS)) &&
		 ow_role_reads_event_logs()))
		return;
	if (c->claims || c->forwarded_by)
		hint = ow_scope_hint(c);
	else
		hint = "Grant the login the role named by openwop.approver_role, or grant its role EXECUTE on openwop.events(text, bigint, integer).";
	ow_details_init(&d);
	ow_details_str(&d, "requiredScope", OW_SCOPE);
	ow_raise(OW_FORBIDDEN, &d, hint,
			 "reading %s needs the %s scope or the privilege to read event logs",
			 what, OW_SCOPE);
}

/*
 * The checks both functions begin with, in this order: the argument
 * (arg, field for details), who is calling, whether it may read entries.
 * Returns the caller's tenant; nothing has been looked up yet.
 */
static char *
entry_reader(FunctionCallInfo fcinfo, OwCall *call, const char *arg, const char *field)
{
	if (PG_ARGISNULL(0))
		ow_validation_error(field, "%s must not be null", arg);
	ow_check_arg_size(fcinfo, 0, field, false);
	ow_caller(&call->caller);
	ow_check_entry_reader(&call->caller, "an interrupt's FlowDrop entry");
	return call->caller.subject.tenant;
}

/* ----------
 * The entry: an ordered json object, written as text
 * ----------
 */

typedef struct Entry
{
	StringInfo	out;
	int			keys;			/* keys written so far */
} Entry;

/* A key: one of the rule's camelCase names, which need no escaping. */
static void
entry_key(Entry *e, const char *key)
{
	appendStringInfoString(e->out, e->keys++ == 0 ? "{\"" : ", \"");
	appendStringInfoString(e->out, key);
	appendStringInfoString(e->out, "\": ");
}

static void
entry_str(Entry *e, const char *key, const char *value)
{
	entry_key(e, key);
	if (value)
		escape_json(e->out, value);
	else
		appendStringInfoString(e->out, "null");
}

static void
entry_null(Entry *e, const char *key)
{
	entry_str(e, key, NULL);
}

/* A value inside a stored jsonb (as jsonb prints it), or null when absent. */
static void
entry_member(Entry *e, const char *key, JsonbValue *v)
{
	entry_key(e, key);
	if (v == NULL || v->type == jbvNull)
		appendStringInfoString(e->out, "null");
	else if (v->type == jbvBinary)
		(void) JsonbToCString(e->out, v->val.binary.data, v->val.binary.len);
	else
	{
		Jsonb	   *scalar = owj_to_jsonb(v);

		(void) JsonbToCString(e->out, &scalar->root, VARSIZE(scalar));
	}
}

/* A jsonb column of the row, or null. */
static void
entry_jsonb_col(Entry *e, const char *key, uint64 row, int col)
{
	bool		isnull;
	Datum		d = ow_col_datum(row, col, JSONBOID, &isnull);
	Jsonb	   *jb;

	entry_key(e, key);
	if (isnull)
	{
		appendStringInfoString(e->out, "null");
		return;
	}
	jb = DatumGetJsonbP(d);
	(void) JsonbToCString(e->out, &jb->root, VARSIZE(jb));
}

/* A timestamptz column of the row as ISO-8601 UTC, or null: never a number (INT-22). */
static void
entry_time_col(Entry *e, const char *key, uint64 row, int col)
{
	bool		isnull;
	Datum		d = ow_col_datum(row, col, TIMESTAMPTZOID, &isnull);

	entry_str(e, key, isnull ? NULL : owj_iso8601(DatumGetTimestampTz(d)));
}

/*
 * message: the text the request addresses to a person, when it has one:
 * an approval's title, a clarification's first question, a conversation
 * turn's prompt, a conversation.start's initialPrompt (else its title).
 * Other kinds carry none (an event type, a custom kind, an agent's
 * confidence, a credential's closed reason code, a close's reason code),
 * and the host writes no text of its own.
 */
static char *
entry_message(const char *kind, JsonbContainer *data)
{
	JsonbValue *questions;
	JsonbValue *first;

	if (strcmp(kind, "approval") == 0)
		return owj_string(owj_get_container(data, "title"));
	if (strcmp(kind, "conversation.exchange") == 0)
		return owj_string(owj_get_container(data, "prompt"));
	if (strcmp(kind, "conversation.start") == 0)
		return owj_string(owj_get_container(data, owj_get_container(data, "initialPrompt")
											? "initialPrompt" : "title"));
	if (strcmp(kind, "clarification") != 0)
		return NULL;
	questions = owj_get_container(data, "questions");
	if (!owj_is_array(questions) || JsonContainerSize(questions->val.binary.data) == 0)
		return NULL;
	first = getIthJsonbValueFromContainer(questions->val.binary.data, 0);
	return owj_is_object(first) ? owj_string(owj_get_container(first->val.binary.data, "question")) : NULL;
}

/*
 * reason: what the resolution recorded (timeout, quorum-reject); for an
 * interrupt that left pending unanswered, why: "expired", or the ending of
 * its run ("run-completed", "run-failed", "run-cancelled", as its job's
 * node.cancelled says).
 */
static const char *
entry_reason(const char *status, const char *recorded, const char *run_status)
{
	if (recorded)
		return recorded;
	if (strcmp(status, "expired") == 0)
		return "expired";
	if (strcmp(status, "cancelled") == 0 && ow_run_is_terminal(run_status))
		return psprintf("run-%s", run_status);
	return NULL;
}

/* initiatorUid: the subjectId of the run's owner; null for an anonymous one. */
static char *
entry_initiator(Jsonb *owner)
{
	char	   *kind = owj_string(owj_get(owner, "kind"));

	if (kind && strcmp(kind, "anonymous") == 0)
		return NULL;
	return owj_string(owj_get(owner, "subjectId"));
}

/* Append the INT-22 entry of row row of the entry statement to out. */
static void
write_entry(StringInfo out, uint64 row)
{
	Entry		e = {out, 0};
	bool		isnull;
	char	   *kind = ow_col_text(row, COL_KIND);
	char	   *status = ow_col_text(row, COL_STATUS);
	char	   *node_id = ow_col_text(row, COL_NODE);
	char	   *run_id = ow_col_text(row, COL_RUN);
	Jsonb	   *payload = DatumGetJsonbP(ow_col_datum(row, COL_PAYLOAD, JSONBOID, &isnull));
	JsonbValue *data = owj_get(payload, "data");
	JsonbContainer *fields = owj_is_object(data) ? data->val.binary.data : NULL;
	char		uuid[37];

	/* INT-22: the interrupt's UUID, its id's opaque segment written the other way (ids.c) */
	if (!ow_interrupt_uuid(ow_col_text(row, COL_ID), uuid))
		elog(ERROR, "interrupt id \"%s\" has no UUID", ow_col_text(row, COL_ID));
	entry_str(&e, "id", uuid);
	entry_str(&e, "type", kind);
	entry_str(&e, "status", status);
	entry_str(&e, "message", fields ? entry_message(kind, fields) : NULL);
	entry_str(&e, "nodeId", node_id);
	entry_str(&e, "workflowId", ow_col_text(row, COL_WORKFLOW));
	entry_str(&e, "pipelineId", run_id);
	entry_null(&e, "sessionId");
	entry_member(&e, "schema", owj_get(payload, "resumeSchema"));
	entry_member(&e, "options", strcmp(kind, "approval") == 0 && fields
				 ? owj_get_container(fields, "actions") : NULL);
	entry_member(&e, "context", data);
	entry_null(&e, "defaultValue");
	entry_jsonb_col(&e, "responseData", row, COL_RESUME_VALUE);
	entry_time_col(&e, "createdAt", row, COL_CREATED_AT);
	/* no deadline (absent or 0 timeoutMs: stored as NULL) is null, never 0 (INT-23) */
	entry_time_col(&e, "expiresAt", row, COL_EXPIRES_AT);
	entry_null(&e, "scheduledAt");
	entry_time_col(&e, "resolvedAt", row, COL_RESOLVED_AT);
	entry_jsonb_col(&e, "resolvedBy", row, COL_RESOLVED_BY);
	entry_str(&e, "direction", "outward");
	/* the node execution: unique in the run, and with the run's id, everywhere */
	entry_str(&e, "jobId", psprintf("%s#%s#" INT64_FORMAT, run_id, node_id,
									ow_col_int64(row, COL_VISIT)));
	entry_null(&e, "targetPipelineId");
	entry_str(&e, "initiatorUid", entry_initiator(ow_col_jsonb(row, COL_OWNER)));
	entry_str(&e, "reason", entry_reason(status, ow_col_text(row, COL_REASON),
										 ow_col_text(row, COL_RUN_STATUS)));
	entry_null(&e, "linkedInterruptId");
	appendStringInfoChar(out, '}');
	Assert(e.keys == 24);
}

/*
 * A text value built in place: out starts with room for the varlena
 * header, so the result is not copied again (a list may be large).
 */
static void
begin_text(StringInfo out)
{
	initStringInfo(out);
	appendStringInfoSpaces(out, VARHDRSZ);
}

static text *
end_text(StringInfo out)
{
	text	   *result = (text *) out->data;

	SET_VARSIZE(result, out->len);
	return result;
}

/* ----------
 * The SQL functions
 * ----------
 */

/*
 * openwop.flowdrop_interrupt(interrupt_id) → json: the INT-22 entry of one
 * interrupt of the caller's tenant; another tenant's id is refused from
 * the string alone (403), an unknown one is 404.
 */
Datum
ow_flowdrop_interrupt(PG_FUNCTION_ARGS)
{
	static OwQuery q = {ENTRY_COLUMNS
		"  FROM openwop.interrupts i" ENTRY_RUN
		" WHERE i.tenant OPERATOR(pg_catalog.=) $1"
		"   AND i.interrupt_id OPERATOR(pg_catalog.=) $2",
	2, {TEXTOID, TEXTOID}, SPI_OK_SELECT};
	OwCall		call;
	char	   *tenant;
	char	   *interrupt_id;
	Datum		args[2];
	StringInfoData out;
	text	   *result;

	tenant = entry_reader(fcinfo, &call, "interrupt_id", "interruptId");
	interrupt_id = ow_normalize_id(text_to_cstring(PG_GETARG_TEXT_PP(0)), tenant,
								   "interruptId", "interrupt");

	ow_call_enter(&call);
	args[0] = CStringGetTextDatum(tenant);
	args[1] = CStringGetTextDatum(interrupt_id);
	if (ow_exec(&q, args, NULL, true, 1) == 0)
		ow_interrupt_not_found(interrupt_id);

	/* the row stays readable until ow_call_finish */
	ow_call_end(&call);
	begin_text(&out);
	write_entry(&out, 0);
	result = end_text(&out);
	ow_call_finish(&call);
	PG_RETURN_TEXT_P(result);
}

/*
 * The ids of array a that name interrupts of tenant, as a text[] in the
 * order given (NULL when none does).  Every element must be an id
 * "<tenant>/<opaque>" (400 otherwise); one of another tenant is left out,
 * as an unknown one will be (INT-22: a list filtered by access is still a
 * list).
 */
static Datum
own_ids(ArrayType *a, const char *tenant, int *count)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			i;
	Datum	   *own;
	int			kept = 0;

	if (ARR_NDIM(a) > 1)
		ow_validation_error("interruptIds", "interrupt_ids must be a one-dimensional array");
	deconstruct_array(a, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	if (n > OW_FLOWDROP_MAX_IDS)
		ow_validation_error("interruptIds", "interrupt_ids holds %d ids, more than the %d one call may ask for",
							n, OW_FLOWDROP_MAX_IDS);
	own = palloc(sizeof(Datum) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		char	   *field = psprintf("interruptIds[%d]", i);
		char	   *s;
		char	   *slash;
		char	   *its_tenant;
		char	   *id;
		char	   *opaque;

		if (nulls[i])
			ow_validation_error(field, "%s must not be null", field);
		s = TextDatumGetCString(elems[i]);
		slash = strchr(s, '/');
		/* an interrupt's UUID names it in the caller's tenant */
		if (slash == NULL && (opaque = ow_uuid_opaque(s)) != NULL)
		{
			own[kept++] = CStringGetTextDatum(psprintf("%s/%s", tenant, opaque));
			continue;
		}
		if (slash == NULL)
			ow_validation_error(field, "%s \"%s\" is neither an id \"<tenant>/<opaque>\" nor an interrupt's UUID (the ~2F form is for one URL path segment)",
								field, ow_echo(s));

		/*
		 * The grammar is ow_normalize_id's; named with its own tenant, an
		 * id is never refused as another tenant's: that one is left out.
		 */
		its_tenant = pnstrdup(s, slash - s);
		id = ow_normalize_id(s, its_tenant, field, "interrupt");
		if (strcmp(its_tenant, tenant) == 0)
			own[kept++] = CStringGetTextDatum(id);
	}
	*count = kept;
	if (kept == 0)
		return (Datum) 0;
	return PointerGetDatum(construct_array(own, kept, TEXTOID, -1, false, TYPALIGN_INT));
}

/*
 * Refuse a list whose stored values would make an answer larger than an
 * envelope may carry, measured before any is read.
 */
static void
check_list_size(uint64 rows)
{
	Size		total = 0;
	uint64		i;

	for (i = 0; i < rows; i++)
	{
		static const int cols[] = {COL_PAYLOAD, COL_RESUME_VALUE, COL_RESOLVED_BY, COL_OWNER};
		int			k;

		for (k = 0; k < (int) lengthof(cols); k++)
		{
			bool		isnull;
			Datum		d = ow_col_datum(i, cols[k], JSONBOID, &isnull);

			total += isnull ? 0 : toast_raw_datum_size(d);
		}
	}
	if (total > OW_ENVELOPE_MAX)
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "field", "interruptIds");
		ow_details_int(&d, "size", (int64) total);
		ow_details_int(&d, "limit", (int64) OW_ENVELOPE_MAX);
		ow_raise(OW_VALIDATION_ERROR, &d, "Ask for fewer interrupts at a time.",
				 "the " UINT64_FORMAT " interrupts asked for hold %zu bytes, more than one answer may carry",
				 rows, total);
	}
}

/*
 * The JSON array of the INT-22 entries of ids (count of them, all of
 * tenant), in their order, read by one statement as the owner (call
 * entered); call is ended before the entries are written.  An id of no
 * interrupt is left out; the answer is an array even when nothing is left
 * ([]).
 */
static text *
write_entries(OwCall *call, const char *tenant, Datum ids, int count)
{
	/*
	 * LIMIT 1 (the key is unique) keeps the subquery from being flattened
	 * into a join the planner might answer by reading the tenant's
	 * interrupts: each id is one probe of each primary key, however many
	 * interrupts the tenant holds.
	 */
	static OwQuery q = {"SELECT e.*"
		"  FROM pg_catalog.unnest($2::pg_catalog.text[]) WITH ORDINALITY AS a (id, n)"
		" CROSS JOIN LATERAL (" ENTRY_COLUMNS
		"  FROM openwop.interrupts i" ENTRY_RUN
		" WHERE i.tenant OPERATOR(pg_catalog.=) $1"
		"   AND i.interrupt_id OPERATOR(pg_catalog.=) a.id"
		" LIMIT 1) e"
		" ORDER BY a.n",
	2, {TEXTOID, TEXTARRAYOID}, SPI_OK_SELECT};
	Datum		args[2];
	uint64		rows = 0;
	uint64		i;
	StringInfoData out;
	MemoryContext rowctx;

	if (count > 0)
	{
		args[0] = CStringGetTextDatum(tenant);
		args[1] = ids;
		rows = ow_exec(&q, args, NULL, true, 0);
		check_list_size(rows);
	}

	ow_call_end(call);
	begin_text(&out);
	appendStringInfoChar(&out, '[');
	rowctx = AllocSetContextCreate(CurrentMemoryContext, "openwop flowdrop entry",
								   ALLOCSET_DEFAULT_SIZES);
	for (i = 0; i < rows; i++)
	{
		MemoryContext old = MemoryContextSwitchTo(rowctx);

		if (i > 0)
			appendStringInfoString(&out, ", ");
		write_entry(&out, i);
		MemoryContextSwitchTo(old);
		/* the entry is in out: free what reading it took (detoasted values) */
		MemoryContextReset(rowctx);
	}
	appendStringInfoChar(&out, ']');
	return end_text(&out);
}

/*
 * openwop.flowdrop_interrupts(interrupt_ids) → json: a JSON array of the
 * entries of the ids given, in their order.  An id of another tenant is
 * left out like one of no interrupt.
 */
Datum
ow_flowdrop_interrupts(PG_FUNCTION_ARGS)
{
	OwCall		call;
	char	   *tenant;
	Datum		ids;
	int			count;
	text	   *result;

	tenant = entry_reader(fcinfo, &call, "interrupt_ids", "interruptIds");
	ids = own_ids(PG_GETARG_ARRAYTYPE_P(0), tenant, &count);

	ow_call_enter(&call);
	result = write_entries(&call, tenant, ids, count);
	ow_call_finish(&call);
	PG_RETURN_TEXT_P(result);
}

/*
 * The FlowDrop entries of the caller's inbox over HTTP (INT-22 over
 * PostgREST: openwop_api."flowdropInterrupts"(after, max)): a page of at
 * most max interrupts of openwop_api.pending_interrupts, in its order
 * (raised, then id), after the interrupt named after (its UUID or its id),
 * as a JSON array of entries.  The page's order is the inbox index's, so a
 * page costs what an inbox page costs; naming the last entry, not its
 * time, keeps interrupts raised at one instant from being skipped.  The
 * interrupt after names may have left the inbox since (decided, expired):
 * its position is read from the interrupts themselves.
 */
Datum
ow_flowdrop_page(PG_FUNCTION_ARGS)
{
	static OwQuery position = {"SELECT i.created_at FROM openwop.interrupts i"
		" WHERE i.tenant OPERATOR(pg_catalog.=) $1"
		"   AND i.interrupt_id OPERATOR(pg_catalog.=) $2",
	2, {TEXTOID, TEXTOID}, SPI_OK_SELECT};

	/*
	 * As the caller: the inbox is who is asking, and a web role reads it
	 * with the grants of GET /pending_interrupts alone.  The row comparison
	 * is pushed through the security barriers (its operators are
	 * leakproof) onto the inbox index, which also gives the order.
	 */
	static OwQuery first = {"SELECT p.interrupt_id FROM openwop_api.pending_interrupts p"
		" ORDER BY p.requested_at, p.interrupt_id LIMIT $1",
	1, {INT4OID}, SPI_OK_SELECT};
	static OwQuery next = {"SELECT p.interrupt_id FROM openwop_api.pending_interrupts p"
		" WHERE (p.requested_at, p.interrupt_id) OPERATOR(pg_catalog.>) ($2, $3)"
		" ORDER BY p.requested_at, p.interrupt_id LIMIT $1",
	3, {INT4OID, TIMESTAMPTZOID, TEXTOID}, SPI_OK_SELECT};
	OwCall		call;
	int32		max = PG_ARGISNULL(1) ? 50 : PG_GETARG_INT32(1);
	char	   *tenant;
	char	   *after = NULL;
	Datum		args[3];
	bool		isnull;
	uint64		n;
	uint64		i;
	Datum	   *ids;
	text	   *result;

	if (max < 1 || max > OW_FLOWDROP_MAX_IDS)
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "field", "max");
		ow_details_int(&d, "limit", OW_FLOWDROP_MAX_IDS);
		ow_raise(OW_VALIDATION_ERROR, &d, NULL,
				 "max must be between 1 and %d", OW_FLOWDROP_MAX_IDS);
	}
	if (!PG_ARGISNULL(0))
		ow_check_arg_size(fcinfo, 0, "after", false);
	ow_caller(&call.caller);
	ow_check_entry_reader(&call.caller, "the FlowDrop entries of the inbox");
	tenant = call.caller.subject.tenant;
	if (!PG_ARGISNULL(0))
		after = ow_normalize_id(text_to_cstring(PG_GETARG_TEXT_PP(0)), tenant, "after", "interrupt");

	ow_call_enter(&call);
	args[0] = Int32GetDatum(max);
	if (after != NULL)
	{
		Datum		pos[2] = {CStringGetTextDatum(tenant), CStringGetTextDatum(after)};

		if (ow_exec(&position, pos, NULL, true, 1) == 0)
			ow_interrupt_not_found(after);
		args[1] = ow_col_datum(0, 1, TIMESTAMPTZOID, &isnull);
		args[2] = CStringGetTextDatum(after);
	}
	ow_call_end(&call);
	n = ow_exec(after ? &next : &first, args, NULL, true, 0);
	ids = palloc(sizeof(Datum) * (n + 1));
	for (i = 0; i < n; i++)
		ids[i] = CStringGetTextDatum(ow_col_text(i, 1));

	ow_become_owner(&call.priv);
	result = write_entries(&call, tenant,
						   PointerGetDatum(construct_array(ids, (int) n, TEXTOID, -1, false, TYPALIGN_INT)),
						   (int) n);
	ow_call_finish(&call);
	PG_RETURN_TEXT_P(result);
}
