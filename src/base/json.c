/*-------------------------------------------------------------------------
 *
 * json.c
 *	  Building and reading jsonb in C.
 *
 * Payloads are pushed straight into a JsonbParseState: no JSON text is
 * printed and parsed again, and a caller's jsonb value is embedded as is.
 *
 * An object's members are sorted when it ends, into jsonb's key order:
 * shorter keys first, keys of one length bytewise.  The hot paths push
 * their keys in that order already ("in jsonb's key order" where they do):
 * the sort then only confirms the order, where members pushed out of
 * order cost it swaps of 72-byte pairs (the sort was a twentieth of a
 * resolve's CPU, measured).  The order pushed never changes the value.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/base.h"

#include "nodes/pg_list.h"
#include "utils/datetime.h"
#include "utils/float.h"
#include "utils/fmgrprotos.h"
#include "utils/numeric.h"

static void
push_key(OwJson *j, const char *key)
{
	JsonbValue	k;

	k.type = jbvString;
	k.val.string.val = (char *) key;
	k.val.string.len = strlen(key);
	j->result = pushJsonbValue(&j->state, WJB_KEY, &k);
}

void
owj_begin(OwJson *j)
{
	j->state = NULL;
	j->result = pushJsonbValue(&j->state, WJB_BEGIN_OBJECT, NULL);
}

Jsonb *
owj_end(OwJson *j)
{
	j->result = pushJsonbValue(&j->state, WJB_END_OBJECT, NULL);
	return JsonbValueToJsonb(j->result);
}

/* An object under key; key NULL: an element of the array being built. */
void
owj_begin_object(OwJson *j, const char *key)
{
	if (key)
		push_key(j, key);
	j->result = pushJsonbValue(&j->state, WJB_BEGIN_OBJECT, NULL);
}

void
owj_end_object(OwJson *j)
{
	j->result = pushJsonbValue(&j->state, WJB_END_OBJECT, NULL);
}

/* An array under key, its elements objects begun with owj_begin_object(j, NULL). */
void
owj_begin_array(OwJson *j, const char *key)
{
	push_key(j, key);
	j->result = pushJsonbValue(&j->state, WJB_BEGIN_ARRAY, NULL);
}

void
owj_end_array(OwJson *j)
{
	j->result = pushJsonbValue(&j->state, WJB_END_ARRAY, NULL);
}

/* A member under key; key NULL: an element of the array being built (as every owj_ scalar). */
void
owj_value(OwJson *j, const char *key, JsonbValue *value)
{
	if (key == NULL)
	{
		j->result = pushJsonbValue(&j->state, WJB_ELEM, value);
		return;
	}
	push_key(j, key);
	j->result = pushJsonbValue(&j->state, WJB_VALUE, value);
}

void
owj_str(OwJson *j, const char *key, const char *value)
{
	JsonbValue	v;

	v.type = jbvString;
	v.val.string.val = (char *) value;
	v.val.string.len = strlen(value);
	owj_value(j, key, &v);
}

void
owj_int(OwJson *j, const char *key, int64 value)
{
	JsonbValue	v;

	v.type = jbvNumeric;
	v.val.numeric = int64_to_numeric(value);
	owj_value(j, key, &v);
}

void
owj_null(OwJson *j, const char *key)
{
	JsonbValue	v;

	v.type = jbvNull;
	owj_value(j, key, &v);
}

/* A finite float8 as a JSON number. */
void
owj_float(OwJson *j, const char *key, double value)
{
	JsonbValue	v;

	/* the shortest text that reads back as the same double, not 15 digits */
	v.type = jbvNumeric;
	v.val.numeric = DatumGetNumeric(DirectFunctionCall3(numeric_in,
														CStringGetDatum(float8out_internal(value)),
														ObjectIdGetDatum(InvalidOid),
														Int32GetDatum(-1)));
	owj_value(j, key, &v);
}

void
owj_bool(OwJson *j, const char *key, bool value)
{
	JsonbValue	v;

	v.type = jbvBool;
	v.val.boolean = value;
	owj_value(j, key, &v);
}

/* An array of the C strings in list l under key. */
void
owj_str_array(OwJson *j, const char *key, List *l)
{
	ListCell   *lc;

	push_key(j, key);
	j->result = pushJsonbValue(&j->state, WJB_BEGIN_ARRAY, NULL);
	foreach(lc, l)
	{
		JsonbValue	v;

		v.type = jbvString;
		v.val.string.val = (char *) lfirst(lc);
		v.val.string.len = strlen(v.val.string.val);
		j->result = pushJsonbValue(&j->state, WJB_ELEM, &v);
	}
	j->result = pushJsonbValue(&j->state, WJB_END_ARRAY, NULL);
}

/* A jsonb array of the strings of l. */
Jsonb *
owj_string_array(List *l)
{
	JsonbParseState *state = NULL;
	JsonbValue *result;
	ListCell   *lc;

	(void) pushJsonbValue(&state, WJB_BEGIN_ARRAY, NULL);
	foreach(lc, l)
	{
		JsonbValue	v;

		v.type = jbvString;
		v.val.string.val = (char *) lfirst(lc);
		v.val.string.len = strlen(v.val.string.val);
		(void) pushJsonbValue(&state, WJB_ELEM, &v);
	}
	result = pushJsonbValue(&state, WJB_END_ARRAY, NULL);
	return JsonbValueToJsonb(result);
}

/* The strings of the string array member key of obj (other elements skipped), or NIL. */
List *
owj_string_list(JsonbContainer *obj, const char *key)
{
	JsonbValue *v = owj_get_container(obj, key);
	List	   *out = NIL;
	int			i;

	if (v == NULL || !owj_is_array(v))
		return NIL;
	for (i = 0; i < (int) JsonContainerSize(v->val.binary.data); i++)
	{
		char	   *s = owj_string(getIthJsonbValueFromContainer(v->val.binary.data, i));

		if (s)
			out = lappend(out, s);
	}
	return out;
}

/* Embed a jsonb value (object, array or scalar) under key. */
void
owj_jsonb(OwJson *j, const char *key, Jsonb *value)
{
	JsonbValue	v;

	v.type = jbvBinary;
	v.val.binary.data = &value->root;
	v.val.binary.len = VARSIZE(value) - VARHDRSZ;
	owj_value(j, key, &v);
}

/*
 * Push every member of the jsonb object obj, but those named in skip
 * (NULL-terminated, or NULL), into the object being built.
 */
void
owj_members_except(OwJson *j, Jsonb *obj, const char *const *skip)
{
	JsonbIterator *it = JsonbIteratorInit(&obj->root);
	JsonbValue	v;
	JsonbIteratorToken tok;

	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
		{
			char	   *k = pnstrdup(v.val.string.val, v.val.string.len);
			const char *const *s;
			bool		skipped = false;

			for (s = skip; s && *s && !skipped; s++)
				skipped = strcmp(k, *s) == 0;
			JsonbIteratorNext(&it, &v, true);
			if (!skipped)
				owj_value(j, k, &v);
		}
	}
}

/* Push every member of the jsonb object obj into the object being built. */
void
owj_members(OwJson *j, Jsonb *obj)
{
	owj_members_except(j, obj, NULL);
}

/*
 * Look up key in a jsonb object; NULL when absent or when obj is not an
 * object.  Nested containers come back as jbvBinary.
 */
JsonbValue *
owj_get_container(JsonbContainer *obj, const char *key)
{
	if (!JsonContainerIsObject(obj))
		return NULL;
	return getKeyJsonValueFromContainer(obj, key, strlen(key), NULL);
}

JsonbValue *
owj_get(Jsonb *obj, const char *key)
{
	return owj_get_container(&obj->root, key);
}

/* The first key of obj not in the NULL-terminated allowed list, or NULL. */
const char *
owj_unknown_key(JsonbContainer *obj, const char *const *allowed)
{
	JsonbIterator *it = JsonbIteratorInit(obj);
	JsonbValue	v;
	JsonbIteratorToken tok;

	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		const char *const *a;
		bool		found = false;

		if (tok != WJB_KEY)
			continue;
		for (a = allowed; *a; a++)
		{
			if (strlen(*a) == (size_t) v.val.string.len &&
				memcmp(*a, v.val.string.val, v.val.string.len) == 0)
			{
				found = true;
				break;
			}
		}
		if (!found)
			return pnstrdup(v.val.string.val, v.val.string.len);
	}
	return NULL;
}

/* A palloc'd C string of a jbvString, or NULL for any other type. */
char *
owj_string(JsonbValue *v)
{
	if (v == NULL || v->type != jbvString)
		return NULL;
	return pnstrdup(v->val.string.val, v->val.string.len);
}

Jsonb *
owj_to_jsonb(JsonbValue *v)
{
	return JsonbValueToJsonb(v);
}

bool
owj_is_object(JsonbValue *v)
{
	return v != NULL && v->type == jbvBinary &&
		JsonContainerIsObject(v->val.binary.data);
}

bool
owj_is_array(JsonbValue *v)
{
	return v != NULL && v->type == jbvBinary &&
		JsonContainerIsArray(v->val.binary.data);
}

/* JSON type name of a value, for error messages. */
const char *
owj_type_name(JsonbValue *v)
{
	switch (v->type)
	{
		case jbvNull:
			return "null";
		case jbvString:
			return "string";
		case jbvNumeric:
			return "number";
		case jbvBool:
			return "boolean";
		case jbvBinary:
			return JsonContainerIsArray(v->val.binary.data) ? "array" : "object";
		default:
			return "value";
	}
}

/* ISO-8601 UTC with milliseconds, the form JavaScript's toISOString() prints. */
char *
owj_iso8601(TimestampTz ts)
{
	struct pg_tm tm;
	fsec_t		fsec;

	if (TIMESTAMP_NOT_FINITE(ts) ||
		timestamp2tm(ts, NULL, &tm, &fsec, NULL, NULL) != 0)
		elog(ERROR, "timestamp out of range");
	return psprintf("%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
					tm.tm_year, tm.tm_mon, tm.tm_mday,
					tm.tm_hour, tm.tm_min, tm.tm_sec, (int) (fsec / 1000));
}

/*
 * Read back what owj_iso8601 printed, and nothing else: false (never an
 * error) for any other text, or a time out of range.
 */
bool
owj_read_iso8601(const char *s, TimestampTz *out)
{
	struct pg_tm tm = {0};
	int			ms;
	int			n = 0;

	if (s == NULL || strlen(s) != 24 ||
		sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
			   &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms, &n) != 7 || n != 24)
		return false;
	if (tm.tm_year < 1 || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 ||
		tm.tm_mday > day_tab[isleap(tm.tm_year)][tm.tm_mon - 1] ||
		tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 59 || ms < 0)
		return false;
	return tm2timestamp(&tm, (fsec_t) ms * 1000, NULL, out) == 0 && !TIMESTAMP_NOT_FINITE(*out);
}

/*
 * Decode one reference token of a JSON Pointer (RFC 6901: "~1" is "/",
 * "~0" is "~"), s[0..len), into out; false when a "~" is followed by
 * anything else.
 */
bool
owj_pointer_token(const char *s, int len, StringInfo out)
{
	int			i;

	for (i = 0; i < len; i++)
	{
		if (s[i] != '~')
			appendStringInfoChar(out, s[i]);
		else if (i + 1 < len && (s[i + 1] == '0' || s[i + 1] == '1'))
			appendStringInfoChar(out, s[++i] == '0' ? '~' : '/');
		else
			return false;
	}
	return true;
}

/* The root of jb as one JsonbValue: the scalar itself, or the container. */
void
owj_root(Jsonb *jb, JsonbValue *out)
{
	if (JB_ROOT_IS_SCALAR(jb))
		JsonbExtractScalar(&jb->root, out);
	else
	{
		out->type = jbvBinary;
		out->val.binary.data = &jb->root;
		out->val.binary.len = VARSIZE(jb) - VARHDRSZ;
	}
}
