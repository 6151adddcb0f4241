/*-------------------------------------------------------------------------
 *
 * engine_args.c
 *	  The argument readers and the reply of the engine API (runs.c's
 *	  create_run ... cancel_run, nodes.c's start_node, complete_node and
 *	  fail_node): each refuses a bad argument with 400 validation_error
 *	  naming its field, before any table is read.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/base.h"
#include "store/store.h"
#include "auth/auth.h"
#include "domain/internal.h"

#include "utils/builtins.h"

/*
 * The reply of an API function, built in the caller's context after
 * ow_call_end: release SPI and return it.
 */
Datum
ow_reply(OwCall *call, OwJson *j)
{
	Jsonb	   *result = owj_end(j);

	ow_call_finish(call);
	PG_RETURN_JSONB_P(result);
}

void
ow_refuse_if_terminal(OwRun *run)
{
	if (ow_run_is_terminal(run->status))
		ow_run_terminal(run->run_id, run->status);
}

char *
ow_text_arg(FunctionCallInfo fcinfo, int n)
{
	return PG_ARGISNULL(n) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(n));
}

const char *
ow_required_run_arg(FunctionCallInfo fcinfo)
{
	if (PG_ARGISNULL(0))
		ow_validation_error("runId", "run_id must not be null");
	return text_to_cstring(PG_GETARG_TEXT_PP(0));
}

/* A jsonb argument that must be an object; NULL becomes {}. */
Jsonb *
ow_object_arg(FunctionCallInfo fcinfo, int n, const char *field)
{
	Jsonb	   *jb;

	if (PG_ARGISNULL(n))
	{
		OwJson		j;

		owj_begin(&j);
		return owj_end(&j);
	}
	ow_check_json_arg(fcinfo, n, field, false);
	jb = PG_GETARG_JSONB_P(n);
	if (!JB_ROOT_IS_OBJECT(jb))
		ow_validation_error(field, "%s must be a JSON object", field);
	return jb;
}

static bool
is_vendor_key(const char *key)
{
	return strncmp(key, "openwop-", 8) == 0 || strncmp(key, "x-", 2) == 0 ||
		strncmp(key, "vendor.", 7) == 0;
}

/*
 * The closed _errorObject of node.failed / run.failed: code and message
 * (non-empty strings), optional details (object) and retryable (boolean),
 * plus vendor keys.
 */
Jsonb *
ow_error_arg(FunctionCallInfo fcinfo, int n)
{
	static const char *const allowed[] = {"code", "message", "details", "retryable", NULL};
	Jsonb	   *err;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	JsonbValue *m;

	if (PG_ARGISNULL(n))
		ow_validation_error("error", "error must not be null");
	ow_check_json_arg(fcinfo, n, "error", false);
	err = PG_GETARG_JSONB_P(n);
	if (!JB_ROOT_IS_OBJECT(err))
		ow_validation_error("error", "error must be a JSON object with code and message");

	it = JsonbIteratorInit(&err->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		char	   *key;
		const char *const *a;
		bool		known = false;

		if (tok != WJB_KEY)
			continue;
		key = pnstrdup(v.val.string.val, v.val.string.len);
		for (a = allowed; *a; a++)
			known |= strcmp(*a, key) == 0;
		if (!known && !is_vendor_key(key))
			ow_validation_error(psprintf("error.%s", key),
								"error has unknown member \"%s\"", key);
	}

	m = owj_get(err, "code");
	if (m == NULL || m->type != jbvString || m->val.string.len == 0)
		ow_validation_error("error.code", "error.code must be a non-empty string");
	m = owj_get(err, "message");
	if (m == NULL || m->type != jbvString || m->val.string.len == 0)
		ow_validation_error("error.message", "error.message must be a non-empty string");
	m = owj_get(err, "details");
	if (m != NULL && !owj_is_object(m))
		ow_validation_error("error.details", "error.details must be a JSON object");
	m = owj_get(err, "retryable");
	if (m != NULL && m->type != jbvBool)
		ow_validation_error("error.retryable", "error.retryable must be a boolean");
	return err;
}
