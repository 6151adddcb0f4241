/*-------------------------------------------------------------------------
 *
 * errors.c
 *	  The error contract: every refusal is one ereport with a PTxxx SQLSTATE
 *	  (the HTTP status PostgREST will use), a message that starts with the
 *	  OpenWOP error code ("not_found: ..."), and a detail that is the error's
 *	  "details" object as JSON, so clients can parse both without guessing.
 *
 *-------------------------------------------------------------------------
 */
#include "openwop.h"

#include "access/detoast.h"
#include "access/xact.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/numeric.h"
#include "utils/json.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

/*
 * A caller's input as a refusal may quote it: at most OW_ECHO_MAX bytes
 * (cut at a character boundary, then "..."), so an argument of any size
 * costs its refusal no more than this.
 */
const char *
ow_echo(const char *s)
{
	int			len;

	if (s == NULL || (len = strlen(s)) <= OW_ECHO_MAX)
		return s;
	return psprintf("%.*s...", pg_mbcliplen(s, len, OW_ECHO_MAX), s);
}

void
ow_details_init(OwDetails *d)
{
	initStringInfo(&d->buf);
	appendStringInfoChar(&d->buf, '{');
	d->count = 0;
}

static void
details_key(OwDetails *d, const char *key)
{
	if (d->count++ > 0)
		appendStringInfoString(&d->buf, ", ");
	escape_json(&d->buf, key);
	appendStringInfoString(&d->buf, ": ");
}

void
ow_details_str(OwDetails *d, const char *key, const char *value)
{
	details_key(d, key);
	if (value)
		escape_json(&d->buf, ow_echo(value));
	else
		appendStringInfoString(&d->buf, "null");
}

/* value is already JSON text (an array or object built by the caller) */
void
ow_details_raw(OwDetails *d, const char *key, const char *json)
{
	details_key(d, key);
	appendStringInfoString(&d->buf, json);
}

void
ow_details_int(OwDetails *d, const char *key, int64 value)
{
	details_key(d, key);
	appendStringInfo(&d->buf, INT64_FORMAT, value);
}

/*
 * Raise an OpenWOP refusal.  Never returns.  details may be NULL ("{}").
 */
void
ow_raise(int sqlstate, const char *code, OwDetails *details,
		 const char *hint, const char *fmt,...)
{
	StringInfoData msg;
	const char *detail_json = "{}";

	initStringInfo(&msg);
	appendStringInfo(&msg, "%s: ", code);
	OW_APPEND_VA(&msg, fmt);
	/* whatever a message quotes, it stays a message */
	if (msg.len > 2 * OW_ECHO_MAX)
	{
		msg.len = pg_mbcliplen(msg.data, msg.len, 2 * OW_ECHO_MAX);
		msg.data[msg.len] = '\0';
		appendStringInfoString(&msg, "...");
	}

	if (details)
	{
		appendStringInfoChar(&details->buf, '}');
		detail_json = details->buf.data;
	}

	ereport(ERROR,
			(errcode(sqlstate),
			 errmsg_internal("%s", msg.data),
			 errdetail_internal("%s", detail_json),
			 hint ? errhint("%s", hint) : 0));
	pg_unreachable();
}

static void raise_validation(const char *field, const char *errors, const char *hint, const char *msg)
			pg_attribute_noreturn();

/* The refusal of a bad value: details.field, and details.errors when a schema failed. */
static void
raise_validation(const char *field, const char *errors, const char *hint, const char *msg)
{
	OwDetails	d;

	ow_details_init(&d);
	ow_details_str(&d, "field", field);
	if (errors)
		ow_details_raw(&d, "errors", errors);
	ow_raise(OW_SQLSTATE_400, "validation_error", &d, hint, "%s", msg);
}

void
ow_validation_error(const char *field, const char *fmt,...)
{
	StringInfoData msg;

	initStringInfo(&msg);
	OW_APPEND_VA(&msg, fmt);
	raise_validation(field, NULL, NULL, msg.data);
}

/*
 * The same for a value that failed a schema: errors (a JSON array text of
 * {path, keyword, message}, or NULL) become details.errors.
 */
void
ow_validation_errors(const char *field, const char *errors, const char *hint, const char *fmt,...)
{
	StringInfoData msg;

	initStringInfo(&msg);
	OW_APPEND_VA(&msg, fmt);
	raise_validation(field, errors, hint, msg.data);
}

void
ow_run_not_found(const char *run_id)
{
	OwDetails	d;

	ow_details_init(&d);
	ow_details_str(&d, "runId", run_id);
	ow_raise(OW_SQLSTATE_404, "not_found", &d, NULL,
			 "run \"%s\" does not exist", run_id);
}

void
ow_run_terminal(const char *run_id, const char *status)
{
	OwDetails	d;

	ow_details_init(&d);
	ow_details_str(&d, "runId", run_id);
	ow_details_str(&d, "runStatus", status);
	ow_raise(OW_SQLSTATE_409, "run_terminal", &d,
			 "A completed, failed or cancelled run accepts no further change; start a new run instead.",
			 "run \"%s\" is %s", run_id, status);
}

/*
 * Run fn(arg) in a subtransaction.  Returns NULL when it succeeded; when
 * it raised, the subtransaction is rolled back first and the error is
 * returned for the caller to handle or re-throw (ReThrowError), so no
 * error ever escapes with our subtransaction still open.
 */
ErrorData *
ow_try_subtransaction(void (*fn) (void *), void *arg)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	ErrorData  *volatile edata = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcxt);
	PG_TRY();
	{
		fn(arg);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(oldcxt);
	CurrentResourceOwner = oldowner;
	return edata;
}

/*
 * Refuse argument n of the calling function (field, for details.field)
 * when it is larger than openwop.max_answer_size (answer) or
 * openwop.max_payload_size.  Measured before the value is detoasted or
 * read, so an oversized value costs nothing more than its arrival.
 */
void
ow_check_arg_size(FunctionCallInfo fcinfo, int n, const char *field, bool answer)
{
	Size		size;
	int			limit = answer ? ow_max_answer_size : ow_max_payload_size;
	const char *setting = answer ? "openwop.max_answer_size" : "openwop.max_payload_size";
	OwDetails	d;

	if (PG_ARGISNULL(n))
		return;
	size = toast_raw_datum_size(PG_GETARG_DATUM(n)) - VARHDRSZ;
	if (size <= (Size) limit)
		return;
	ow_details_init(&d);
	ow_details_str(&d, "field", field);
	ow_details_int(&d, "size", (int64) size);
	ow_details_int(&d, "limit", limit);
	ow_details_str(&d, "setting", setting);
	ow_raise(OW_SQLSTATE_400, "validation_error", &d,
			 psprintf("The limit is the setting %s.", setting),
			 "%s is %zu bytes, more than the %d bytes allowed", field, size, limit);
}

/* JSON values nest at most this deep; numbers stay within 1e100 and 100 decimals. */
#define OW_JSON_MAX_DEPTH 1000
#define OW_JSON_MAX_SCALE 100

static void
json_bound_error(const char *field, const char *what)
{
	OwDetails	d;

	ow_details_init(&d);
	ow_details_str(&d, "field", field);
	ow_raise(OW_SQLSTATE_400, "validation_error", &d,
			 "JSON values nest at most 1000 levels deep, and numbers are below 1e100 in magnitude with at most 100 decimal places.",
			 "%s %s", field, what);
}

/*
 * A jsonb argument: its size as ow_check_arg_size checks it, then its
 * shape, in one pass that does not recurse: nesting at most
 * OW_JSON_MAX_DEPTH (deeper values overflow the stack of the code that
 * copies them), numbers below 1e100 in magnitude with at most
 * OW_JSON_MAX_SCALE decimal places (a 16-byte 1e131071 prints as 131,072
 * characters, in every event, digest and message that carries it).
 */
void
ow_check_json_arg(FunctionCallInfo fcinfo, int n, const char *field, bool answer)
{
	static Numeric limit = NULL;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	int			depth = 0;

	ow_check_arg_size(fcinfo, n, field, answer);
	if (PG_ARGISNULL(n))
		return;
	if (limit == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		limit = DatumGetNumeric(DirectFunctionCall3(numeric_in, CStringGetDatum("1e100"),
													ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1)));
		MemoryContextSwitchTo(old);
	}
	it = JsonbIteratorInit(&PG_GETARG_JSONB_P(n)->root);
	while ((tok = JsonbIteratorNext(&it, &v, false)) != WJB_DONE)
	{
		if (tok == WJB_BEGIN_ARRAY || tok == WJB_BEGIN_OBJECT)
		{
			if (++depth > OW_JSON_MAX_DEPTH)
				json_bound_error(field, "nests deeper than 1000 levels");
		}
		else if (tok == WJB_END_ARRAY || tok == WJB_END_OBJECT)
			depth--;
		else if ((tok == WJB_VALUE || tok == WJB_ELEM) && v.type == jbvNumeric)
		{
			Numeric		abs = DatumGetNumeric(DirectFunctionCall1(numeric_abs, NumericGetDatum(v.val.numeric)));

			if (DatumGetInt32(DirectFunctionCall2(numeric_cmp, NumericGetDatum(abs), NumericGetDatum(limit))) >= 0)
				json_bound_error(field, "holds a number of 1e100 or more in magnitude");
			if (DatumGetInt32(DirectFunctionCall1(numeric_scale, NumericGetDatum(v.val.numeric))) > OW_JSON_MAX_SCALE)
				json_bound_error(field, "holds a number with more than 100 decimal places");
		}
	}
}
