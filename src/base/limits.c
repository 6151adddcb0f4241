/*-------------------------------------------------------------------------
 *
 * limits.c
 *	  Bounded work: the size limits every argument meets before it is read
 *	  (openwop.max_payload_size, openwop.max_answer_size) and the shape
 *	  limits of JSON arguments (nesting, number magnitude and scale); it
 *	  also owns openwop.max_votes_per_voter, which approvals.c applies.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/base.h"

#include "access/detoast.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/numeric.h"

/*
 * The largest payload an API call stores (options, outputs, errors,
 * interrupt requests, decisions), the largest answer (a resume value:
 * reachable by anonymous token holders), in bytes, and how many answers
 * one voter may give one approval gate (votes, re-votes, asks).
 */
int			ow_max_payload_size = 1024 * 1024;
static int	ow_max_answer_size = 64 * 1024;
int			ow_max_votes_per_voter = 16;

void
ow_define_limit_settings(void)
{
	DefineCustomIntVariable("openwop.max_payload_size",
							"Largest JSON payload an openwop call stores.",
							"Run options, node outputs and errors, interrupt requests and agent decisions; a larger one is refused with validation_error before anything is read or written.",
							&ow_max_payload_size,
							1024 * 1024, 1024, 256 * 1024 * 1024,
							PGC_SUSET,
							GUC_UNIT_BYTE,
							NULL, NULL, NULL);

	DefineCustomIntVariable("openwop.max_answer_size",
							"Largest resume value an interrupt accepts.",
							"Answers reach the database from approvers and token holders; a larger one is refused with validation_error before it is looked at.",
							&ow_max_answer_size,
							64 * 1024, 1024, 256 * 1024 * 1024,
							PGC_SUSET,
							GUC_UNIT_BYTE,
							NULL, NULL, NULL);

	DefineCustomIntVariable("openwop.max_votes_per_voter",
							"Most answers one voter may give one approval gate.",
							"Votes, re-votes and asks together; one more is refused with validation_error.",
							&ow_max_votes_per_voter,
							16, 1, 10000,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);
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
	ow_raise(OW_VALIDATION_ERROR, &d,
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
	ow_raise(OW_VALIDATION_ERROR, &d,
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
