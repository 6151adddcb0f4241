/*-------------------------------------------------------------------------
 *
 * postgrest.c
 *	  The PostgREST surface, schema openwop_api: one function per operation
 *	  of "Resolve surfaces" in the OpenWOP interrupt spec, each the SQL
 *	  entry point of its operation called with the request as PostgREST
 *	  passes it:
 *
 *	  "resolveInterruptByRun"(body)       resolve_interrupt (resolve.c)
 *	  "inspectInterruptByToken"(token)    inspect_interrupt (tokens.c)
 *	  "resolveInterruptByToken"(body)     resolve_interrupt_by_token (tokens.c)
 *	  "withdrawVote"(body)                withdraw_vote (resolve.c)
 *	  "resolveInterrupts"(body)           resolve_interrupts (bulk.c)
 *	  "flowdropInterrupts"(after, max)    the inbox as FlowDrop entries (flowdrop.c)
 *
 * A POST body arrives whole, as the function's one unnamed json
 * parameter (PostgREST passes a JSON body so to such a function), and is
 * closed like the spec's bodies: the operation's path parameters and
 * resumeValue, nothing else (400 validation_error).  The Idempotency-Key
 * header is read from request.headers, PostgREST's JSON object of the
 * request's headers (names in lower case); a replayed response is marked
 * "OpenWOP-Idempotent-Replay: true" through response.headers.  Every
 * success is 200, the only success status the spec names for these
 * operations, so response.status is set for refusals alone.
 *
 * A refusal is answered with the spec's error envelope {error, message,
 * details}.  PostgREST's own custom error (RAISE SQLSTATE 'PGRST') cannot
 * carry it: its body is always {code, message, details, hint}, with
 * details a string.  So the operation runs in a subtransaction, and a
 * refusal of errors.c's table is rolled back and returned as the result,
 * with response.status set to its HTTP status: PostgREST answers that
 * status with that body and commits a transaction in which nothing is
 * left.  Any other error (privileges, cancellation, lock timeouts and
 * serialization failures, internal errors) is re-thrown untouched, for
 * PostgREST to answer as it always does.  See docs/postgrest.md.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/base.h"
#include "store/store.h"
#include "auth/auth.h"
#include "api/internal.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/guc.h"

PG_FUNCTION_INFO_V1(ow_api_resolve_by_run);
PG_FUNCTION_INFO_V1(ow_api_inspect_by_token);
PG_FUNCTION_INFO_V1(ow_api_resolve_by_token);
PG_FUNCTION_INFO_V1(ow_api_withdraw_vote);
PG_FUNCTION_INFO_V1(ow_api_resolve_interrupts);
PG_FUNCTION_INFO_V1(ow_api_flowdrop_interrupts);

/* The header that marks a replayed response ("Idempotency" in the OpenWOP spec). */
#define REPLAY_HEADER "OpenWOP-Idempotent-Replay"

#define MAX_ARGS 4

/* One call of an operation. */
typedef struct Operation
{
	PGFunction	entry;			/* the SQL entry point */
	const char *const *members; /* of its POST body, in the entry point's
								 * argument order; NULL: the openwop_api
								 * function's own arguments are the entry
								 * point's */
	const char *json_member;	/* the member passed as jsonb (the others are
								 * strings), or NULL */
	const char *json_member2;	/* a second one, or NULL */
	bool		keyed;			/* the entry point takes an Idempotency-Key last */
	bool		conditional;	/* an If-Match header names the artifact answered */
	FunctionCallInfo fcinfo;	/* of the openwop_api function */
	Datum		result;
} Operation;


/*
 * The JSON a setting holds, as jsonb.  NULL with *set false when the
 * setting is unset or empty; NULL with *set true when it holds no JSON.
 */
static Jsonb *
setting_json(const char *name, bool *set)
{
	const char *raw = GetConfigOption(name, true, false);

	*set = raw != NULL && raw[0] != '\0';
	return *set ? ow_parse_json(raw) : NULL;
}

/* set_config(name, value, true): for the rest of the transaction. */
static void
set_local(const char *name, const char *value)
{
	(void) set_config_option(name, value, PGC_USERSET, PGC_S_SESSION, GUC_ACTION_LOCAL,
							 true, 0, false);
}

/*
 * The POST body (argument 0) as jsonb.  It arrives as json, which
 * PostgreSQL takes as written; PostgREST would cast it to a jsonb
 * parameter itself and answer a failed cast with its own 400 body.  So a
 * body jsonb cannot hold (\u0000, a lone surrogate, an escape the
 * database encoding has no character for, a number beyond numeric's
 * range, more than a jsonb may hold) is refused here, as the
 * caller's mistake it is: 400 validation_error.  A function still
 * declared with a jsonb parameter (a schema not yet updated to 0.11.0)
 * passes jsonb.
 */
static Jsonb *
request_body(FunctionCallInfo fcinfo)
{
	MemoryContext cxt = CurrentMemoryContext;
	char	   *raw;
	Jsonb	   *volatile body = NULL;
	ErrorData  *volatile edata = NULL;

	if (get_fn_expr_argtype(fcinfo->flinfo, 0) == JSONBOID)
		return PG_GETARG_JSONB_P(0);
	raw = text_to_cstring(PG_GETARG_TEXT_PP(0));
	PG_TRY();
	{
		body = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(raw)));
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		if (edata->sqlerrcode != ERRCODE_UNTRANSLATABLE_CHARACTER &&
			edata->sqlerrcode != ERRCODE_INVALID_TEXT_REPRESENTATION &&
			edata->sqlerrcode != ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE &&
			edata->sqlerrcode != ERRCODE_PROGRAM_LIMIT_EXCEEDED)
			PG_RE_THROW();
		FlushErrorState();
	}
	PG_END_TRY();
	if (edata != NULL)
		ow_validation_error("body", "the request body is JSON that PostgreSQL cannot store: %s",
							edata->detail ? edata->detail : edata->message);
	return body;
}

/*
 * The entry point's arguments from the POST body (argument 0): a JSON
 * object of no members but op->members, each passed as a string (or, the
 * JSON member, as jsonb) and an absent one as NULL, which the entry point
 * refuses as it always does.  Returns how many arguments it set.
 */
static int
body_arguments(Operation *op, FunctionCallInfo call)
{
	FunctionCallInfo fcinfo = op->fcinfo;
	StringInfoData list;
	Jsonb	   *body;
	const char *unknown;
	int			n;

	initStringInfo(&list);
	for (n = 0; op->members[n]; n++)
		appendStringInfo(&list, "%s%s", n > 0 ? ", " : "", op->members[n]);
	body = PG_ARGISNULL(0) ? NULL : request_body(fcinfo);
	if (body == NULL || !JB_ROOT_IS_OBJECT(body))
		ow_validation_error("body", "the request body must be a JSON object {%s}", list.data);
	if ((unknown = owj_unknown_key(&body->root, op->members)) != NULL)
		ow_validation_error(unknown, "the request body has unknown member \"%s\"; it takes {%s}",
							ow_echo(unknown), list.data);
	for (n = 0; op->members[n]; n++)
	{
		JsonbValue *v = owj_get(body, op->members[n]);

		call->args[n].isnull = v == NULL;
		if (v == NULL)
			continue;
		if ((op->json_member && strcmp(op->members[n], op->json_member) == 0) ||
			(op->json_member2 && strcmp(op->members[n], op->json_member2) == 0))
			call->args[n].value = JsonbPGetDatum(owj_to_jsonb(v));
		else if (v->type == jbvString)
			call->args[n].value = PointerGetDatum(cstring_to_text_with_len(v->val.string.val,
																		   v->val.string.len));
		else
			ow_validation_error(op->members[n], "%s must be a string, not %s", op->members[n],
								owj_type_name(v));
	}
	return n;
}

/*
 * A header of the request, or NULL: member name (in lower case) of
 * request.headers, which PostgREST sets for each request to a JSON object
 * of the request's headers, their names in lower case.
 */
static JsonbValue *
request_header(const char *name)
{
	bool		set;
	Jsonb	   *headers = setting_json("request.headers", &set);

	if (!set)
		return NULL;
	/* headers that code running as someone else set choose nothing */
	if (!ow_request_headers_untampered())
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "context", "request.headers");
		ow_raise(OW_FORBIDDEN, &d,
				 "Set request.headers from the session that acts, not from code a SECURITY DEFINER function, a trigger or ANALYZE runs.",
				 "request.headers were changed by code running as someone else");
	}
	if (headers == NULL || !JB_ROOT_IS_OBJECT(headers))
		ow_validation_error("request.headers", "request.headers is not a JSON object");
	return owj_get(headers, name);
}

/* The request's Idempotency-Key header, or NULL. */
static text *
idempotency_key(void)
{
	JsonbValue *v = request_header("idempotency-key");

	if (v == NULL)
		return NULL;
	/* a header is a string: anything else is refused as a key outside the grammar */
	if (v->type != jbvString)
		return cstring_to_text("");
	return cstring_to_text_with_len(v->val.string.val, v->val.string.len);
}

/* Call op's entry point with the request's arguments (in a subtransaction). */
static void
run_operation(void *arg)
{
	Operation  *op = arg;
	FunctionCallInfo fcinfo = op->fcinfo;
	FmgrInfo	flinfo;
	LOCAL_FCINFO(call, MAX_ARGS);
	int			n;

	if (op->members)
		n = body_arguments(op, call);
	else
	{
		for (n = 0; n < PG_NARGS(); n++)
			call->args[n] = fcinfo->args[n];
	}
	/* If-Match: the artifact the voter looked at (domain/artifacts.c) */
	if (op->conditional)
	{
		JsonbValue *v = request_header("if-match");

		if (v != NULL)
			set_local("openwop.artifact_digest", v->type == jbvString ? owj_string(v) : "");
	}
	if (op->keyed)
	{
		text	   *key = idempotency_key();

		call->args[n].value = PointerGetDatum(key);
		call->args[n].isnull = key == NULL;
		n++;
	}
	Assert(n <= MAX_ARGS);

	MemSet(&flinfo, 0, sizeof(flinfo));
	flinfo.fn_addr = op->entry;
	flinfo.fn_oid = InvalidOid;
	flinfo.fn_nargs = n;
	flinfo.fn_mcxt = CurrentMemoryContext;
	InitFunctionCallInfoData(*call, &flinfo, n, PG_GET_COLLATION(), NULL, NULL);
	op->result = FunctionCallInvoke(call);
	if (call->isnull)
		elog(ERROR, "an openwop entry point returned null");
}

/*
 * Add a header to the response.  response.headers is PostgREST's JSON
 * array of one-member objects; one that something else set first (a
 * db-pre-request function) is kept.
 */
static void
add_response_header(const char *name, const char *value)
{
	bool		set;
	Jsonb	   *prior = setting_json("response.headers", &set);
	Jsonb	   *header;
	char	   *headers;
	OwJson		j;

	owj_begin(&j);
	owj_str(&j, name, value);
	header = owj_end(&j);
	headers = psprintf("[%s]", JsonbToCString(NULL, &header->root, VARSIZE(header)));
	if (prior && JB_ROOT_IS_ARRAY(prior) && !JB_ROOT_IS_SCALAR(prior))
	{
		Jsonb	   *both = DatumGetJsonbP(DirectFunctionCall2(jsonb_concat, JsonbPGetDatum(prior),
															  JsonbPGetDatum(ow_parse_json(headers))));

		headers = JsonbToCString(NULL, &both->root, VARSIZE(both));
	}
	set_local("response.headers", headers);
}

/*
 * A stored response replayed under its Idempotency-Key comes back from
 * the entry point with "idempotentReplay": true (idempotency.c): answer
 * the stored body as it was, marked with the replay header.
 */
static Datum
mark_replay(Datum result)
{
	static const char *const marker[] = {"idempotentReplay", NULL};
	Jsonb	   *response = DatumGetJsonbP(result);
	JsonbValue *v = owj_get(response, marker[0]);
	OwJson		j;

	if (v == NULL || v->type != jbvBool || !v->val.boolean)
		return result;
	add_response_header(REPLAY_HEADER, "true");
	owj_begin(&j);
	owj_members_except(&j, response, marker);
	return JsonbPGetDatum(owj_end(&j));
}

/*
 * Run op and answer: its result, or for a refusal the error envelope
 * {error, message, details} and response.status, read from the refusal's
 * own ereport ("Errors" in the OpenWOP interrupt spec).  Every other
 * error is re-thrown as it was.
 */
static Datum
answer(Operation *op)
{
	ErrorData  *edata = ow_try_subtransaction(run_operation, op);
	Jsonb	   *envelope;
	int			status;

	if (edata == NULL)
		return op->keyed ? mark_replay(op->result) : op->result;
	envelope = ow_refusal_envelope(edata, &status);
	set_local("response.status", psprintf("%d", status));
	/* as PostgREST's own 401 answers have it: RFC 9110 asks every 401 for one */
	if (status == 401)
		add_response_header("WWW-Authenticate", "Bearer");
	if (get_fn_expr_rettype(op->fcinfo->flinfo) == JSONOID)
		return CStringGetTextDatum(JsonbToCString(NULL, &envelope->root, VARSIZE(envelope)));
	return JsonbPGetDatum(envelope);
}


/*
 * openwop_api."resolveInterruptByRun"(body json): POST
 * /rpc/resolveInterruptByRun {runId, nodeId, resumeValue}, with an
 * optional Idempotency-Key header.
 */
Datum
ow_api_resolve_by_run(PG_FUNCTION_ARGS)
{
	static const char *const members[] = {"runId", "nodeId", "resumeValue", NULL};
	Operation	op = {ow_resolve_interrupt, members, "resumeValue", NULL, true, true, fcinfo, (Datum) 0};

	PG_RETURN_DATUM(answer(&op));
}

/*
 * openwop_api."inspectInterruptByToken"(token text): GET
 * /rpc/inspectInterruptByToken?token=...  A GET does not honor an
 * Idempotency-Key.
 */
Datum
ow_api_inspect_by_token(PG_FUNCTION_ARGS)
{
	Operation	op = {ow_inspect_interrupt, NULL, NULL, NULL, false, false, fcinfo, (Datum) 0};

	PG_RETURN_DATUM(answer(&op));
}

/*
 * openwop_api."resolveInterruptByToken"(body json): POST
 * /rpc/resolveInterruptByToken {token, resumeValue}, with an optional
 * Idempotency-Key header.
 */
Datum
ow_api_resolve_by_token(PG_FUNCTION_ARGS)
{
	static const char *const members[] = {"token", "resumeValue", NULL};
	Operation	op = {ow_resolve_interrupt_by_token, members, "resumeValue", NULL, true, true, fcinfo, (Datum) 0};

	PG_RETURN_DATUM(answer(&op));
}

/*
 * openwop_api."withdrawVote"(body json): POST /rpc/withdrawVote
 * {runId, nodeId}.  A withdrawal takes no Idempotency-Key: doing it again
 * is answered 404 (nothing counted to withdraw).
 */
Datum
ow_api_withdraw_vote(PG_FUNCTION_ARGS)
{
	static const char *const members[] = {"runId", "nodeId", NULL};
	Operation	op = {ow_withdraw_vote, members, NULL, NULL, false, false, fcinfo, (Datum) 0};

	PG_RETURN_DATUM(answer(&op));
}

/*
 * openwop_api."resolveInterrupts"(body json): POST /rpc/resolveInterrupts
 * {interruptIds, resumeValue}, with optional Idempotency-Key and If-Match
 * headers (the artifact every item must show): {items: [{interruptId,
 * status, result}]}, each item as the single call would answer it.
 */
Datum
ow_api_resolve_interrupts(PG_FUNCTION_ARGS)
{
	static const char *const members[] = {"interruptIds", "resumeValue", NULL};
	Operation	op = {ow_resolve_interrupts_json, members, "resumeValue", "interruptIds", true, true, fcinfo, (Datum) 0};

	PG_RETURN_DATUM(answer(&op));
}

/*
 * openwop_api."flowdropInterrupts"(after text, max integer) → json: GET
 * /rpc/flowdropInterrupts?max=50, then &after=<the last entry's id>: the
 * caller's inbox as FlowDrop INT-22 entries, a page at a time
 * (flowdrop.c).
 */
Datum
ow_api_flowdrop_interrupts(PG_FUNCTION_ARGS)
{
	Operation	op = {ow_flowdrop_page, NULL, NULL, NULL, false, false, fcinfo, (Datum) 0};

	PG_RETURN_DATUM(answer(&op));
}
