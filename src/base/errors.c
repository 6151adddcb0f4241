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
#include "postgres.h"

#include "ipc/ipc.h"
#include "base/base.h"

#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/json.h"

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
static void
details_raw(OwDetails *d, const char *key, const char *json)
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

/* Each error's code and HTTP status, in the order of enum OwError. */
static const struct
{
	const char *code;
	int			status;
}			error_table[] =
{
	{"validation_error", 400},
	{"idempotency_key_invalid", 400},
	{"identity_unresolvable", 401},
	{"interrupt_token_invalid", 401},
	{"forbidden", 403},
	{"id_tenant_mismatch", 403},
	{"not_found", 404},
	{"idempotency_in_flight", 409},
	{"idempotency_key_mismatch", 409},
	{"interrupt_already_resolved", 409},
	{"run_state_conflict", 409},
	{"run_terminal", 409},
	{"interrupt_expired", 410},
	{"capability_required", 422},
	{"fork_point_invalid", 422},
	{"precondition_failed", 412},
};

StaticAssertDecl(lengthof(error_table) == OW_PRECONDITION_FAILED + 1,
				 "error_table must list every OwError");

/* The code of an OwError (for openwop.stats). */
const char *
ow_error_code(int error)
{
	return error >= 0 && error < (int) lengthof(error_table) ? error_table[error].code : NULL;
}

/* The SQLSTATE of an HTTP status: "PT" and its three digits. */
#define STATUS_SQLSTATE(status) \
	MAKE_SQLSTATE('P', 'T', '0' + (status) / 100, '0' + (status) / 10 % 10, '0' + (status) % 10)

/*
 * Raise an OpenWOP refusal.  Never returns.  details may be NULL ("{}").
 */
void
ow_raise(OwError error, OwDetails *details, const char *hint, const char *fmt,...)
{
	StringInfoData msg;
	const char *detail_json = "{}";

	initStringInfo(&msg);
	appendStringInfo(&msg, "%s: ", error_table[error].code);
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

	ow_count_refusal(error);
	ereport(ERROR,
			(errcode(STATUS_SQLSTATE(error_table[error].status)),
			 errmsg_internal("%s", msg.data),
			 errdetail_internal("%s", detail_json),
			 hint ? errhint("%s", hint) : 0));
	pg_unreachable();
}

/*
 * The refusal an error carries if ow_raise raised it: its SQLSTATE is
 * "PT" and the status of a code of the table, its message starts with
 * that code and ": ", and it has a detail.  False for any other error.
 */
bool
ow_refusal_of(const ErrorData *edata, OwRefusal *r)
{
	Size		i;

	if (edata->message == NULL || edata->detail == NULL)
		return false;
	for (i = 0; i < lengthof(error_table); i++)
	{
		size_t		len = strlen(error_table[i].code);

		if (edata->sqlerrcode == STATUS_SQLSTATE(error_table[i].status) &&
			strncmp(edata->message, error_table[i].code, len) == 0 &&
			strncmp(edata->message + len, ": ", 2) == 0)
		{
			r->code = error_table[i].code;
			r->status = error_table[i].status;
			r->message = edata->message + len + 2;
			r->details = edata->detail;
			return true;
		}
	}
	return false;
}

static pg_noreturn void raise_validation(const char *field, const char *errors, const char *hint, const char *msg);

/* The refusal of a bad value: details.field, and details.errors when a schema failed. */
static void
raise_validation(const char *field, const char *errors, const char *hint, const char *msg)
{
	OwDetails	d;

	ow_details_init(&d);
	ow_details_str(&d, "field", field);
	if (errors)
		details_raw(&d, "errors", errors);
	ow_raise(OW_VALIDATION_ERROR, &d, hint, "%s", msg);
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
	ow_raise(OW_NOT_FOUND, &d, NULL,
			 "run \"%s\" does not exist", run_id);
}

void
ow_interrupt_not_found(const char *interrupt_id)
{
	OwDetails	d;

	ow_details_init(&d);
	ow_details_str(&d, "interruptId", interrupt_id);
	ow_raise(OW_NOT_FOUND, &d, NULL, "interrupt \"%s\" does not exist", interrupt_id);
}

void
ow_run_terminal(const char *run_id, const char *status)
{
	OwDetails	d;

	ow_details_init(&d);
	ow_details_str(&d, "runId", run_id);
	ow_details_str(&d, "runStatus", status);
	ow_raise(OW_RUN_TERMINAL, &d,
			 "A completed, failed or cancelled run accepts no further change; start a new run instead.",
			 "run \"%s\" is %s", run_id, status);
}

