/*-------------------------------------------------------------------------
 *
 * envelope.c
 *	  A refusal as an HTTP client receives it: the error envelope
 *	  {error, message, details} and its status ("Errors" in the OpenWOP
 *	  interrupt spec), read from the refusal's own ereport (base/errors.c).
 *	  The PostgREST surface answers a refused call with it, and
 *	  resolve_interrupts each refused item.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/base.h"
#include "api/internal.h"

#include "common/jsonapi.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"

/* A JSON text as jsonb, or NULL when it is not JSON. */
Jsonb *
ow_parse_json(const char *text)
{
	JsonLexContext *lex = ow_json_lexer(pstrdup(text), strlen(text),
										GetDatabaseEncoding(), false);

	if (pg_parse_json(lex, &nullSemAction) != JSON_SUCCESS)
		return NULL;
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(text)));
}

/*
 * The error envelope {error, message, details} of a refusal, and its HTTP
 * status.  Any other error is re-thrown as it was.
 */
Jsonb *
ow_refusal_envelope(ErrorData *edata, int *status)
{
	OwRefusal	r;
	Jsonb	   *details;
	OwJson		j;

	if (!ow_refusal_of(edata, &r) || (details = ow_parse_json(r.details)) == NULL ||
		!JB_ROOT_IS_OBJECT(details))
		ReThrowError(edata);
	*status = r.status;
	owj_begin(&j);
	owj_str(&j, "error", r.code);
	owj_str(&j, "message", r.message);
	owj_jsonb(&j, "details", details);
	return owj_end(&j);
}
