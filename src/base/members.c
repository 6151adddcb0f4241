/*-------------------------------------------------------------------------
 *
 * members.c
 *	  Typed readers of the members of a JSON object that a caller sent:
 *	  each refuses a missing, mistyped or out-of-range member with
 *	  validation_error naming the field as "<prefix>.<key>" (a NULL prefix:
 *	  the bare key, for an API's options object, as create_run names its
 *	  own).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/internal.h"

#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/numeric.h"

char *
ow_field_name(const char *prefix, const char *key)
{
	return prefix ? psprintf("%s.%s", prefix, key) : pstrdup(key);
}

void
ow_member_closed(JsonbContainer *obj, const char *const *allowed, const char *prefix)
{
	const char *unknown = owj_unknown_key(obj, allowed);

	if (unknown)
		ow_validation_error(ow_field_name(prefix, unknown), "%s has unknown member \"%s\"",
							prefix ? prefix : "options", unknown);
}

/* A string member; minlen/maxlen in characters (maxlen 0: unbounded). */
char *
ow_member_str(JsonbContainer *obj, const char *prefix, const char *key, bool required,
		   int minlen, int maxlen)
{
	JsonbValue *v = owj_get_container(obj, key);
	char	   *f = ow_field_name(prefix, key);
	int			len;

	if (v == NULL)
	{
		if (required)
			ow_validation_error(f, "%s is required", f);
		return NULL;
	}
	if (v->type != jbvString)
		ow_validation_error(f, "%s must be a string, not %s", f, owj_type_name(v));
	len = pg_mbstrlen_with_len(v->val.string.val, v->val.string.len);
	if (len < minlen || (maxlen > 0 && len > maxlen))
	{
		if (maxlen > 0)
			ow_validation_error(f, "%s must be %d to %d characters long", f, minlen, maxlen);
		ow_validation_error(f, "%s must not be empty", f);
	}
	return owj_string(v);
}

void
ow_member_enum(JsonbContainer *obj, const char *prefix, const char *key, bool required,
			const char *const *values)
{
	char	   *s = ow_member_str(obj, prefix, key, required, 0, 0);
	const char *const *v;

	if (s == NULL)
		return;
	for (v = values; *v; v++)
		if (strcmp(*v, s) == 0)
			return;
	ow_validation_error(ow_field_name(prefix, key), "%s \"%s\" is not an allowed value", ow_field_name(prefix, key), s);
}

/* An array of strings; items at least item_min long; optionally unique / non-empty. */
JsonbValue *
ow_member_str_array(JsonbContainer *obj, const char *prefix, const char *key, bool required,
				 int item_min, bool unique, bool nonempty)
{
	JsonbValue *v = owj_get_container(obj, key);
	char	   *f = ow_field_name(prefix, key);
	int			n;
	int			i;

	if (v == NULL)
	{
		if (required)
			ow_validation_error(f, "%s is required", f);
		return NULL;
	}
	if (!owj_is_array(v))
		ow_validation_error(f, "%s must be an array of strings", f);
	n = JsonContainerSize(v->val.binary.data);
	if (nonempty && n == 0)
		ow_validation_error(f, "%s must not be empty", f);
	for (i = 0; i < n; i++)
	{
		JsonbValue *e = getIthJsonbValueFromContainer(v->val.binary.data, i);
		int			k;

		if (e->type != jbvString || e->val.string.len < item_min)
			ow_validation_error(f, "%s[%d] must be a%s string", f, i, item_min > 0 ? " non-empty" : "");
		for (k = 0; unique && k < i; k++)
		{
			JsonbValue *o = getIthJsonbValueFromContainer(v->val.binary.data, k);

			if (o->val.string.len == e->val.string.len &&
				memcmp(o->val.string.val, e->val.string.val, e->val.string.len) == 0)
				ow_validation_error(f, "%s has \"%.*s\" twice", f, e->val.string.len, e->val.string.val);
		}
	}
	return v;
}

JsonbValue *
ow_member_object(JsonbContainer *obj, const char *prefix, const char *key, bool required)
{
	JsonbValue *v = owj_get_container(obj, key);

	if (v == NULL)
	{
		if (required)
			ow_validation_error(ow_field_name(prefix, key), "%s is required", ow_field_name(prefix, key));
		return NULL;
	}
	if (!owj_is_object(v))
		ow_validation_error(ow_field_name(prefix, key), "%s must be an object", ow_field_name(prefix, key));
	return v;
}

static int
numeric_cmp_int(Numeric n, int64 i)
{
	return DatumGetInt32(DirectFunctionCall2(numeric_cmp, NumericGetDatum(n),
											 NumericGetDatum(int64_to_numeric(i))));
}

static bool
numeric_integral(Numeric n)
{
	Numeric		f = DatumGetNumeric(DirectFunctionCall1(numeric_floor, NumericGetDatum(n)));

	return DatumGetInt32(DirectFunctionCall2(numeric_cmp, NumericGetDatum(f), NumericGetDatum(n))) == 0;
}

/* An integer member >= min; returns it (clamped to int64) or -1 when absent. */
int64
ow_member_int(JsonbContainer *obj, const char *prefix, const char *key, int64 min)
{
	JsonbValue *v = owj_get_container(obj, key);
	char	   *f = ow_field_name(prefix, key);

	if (v == NULL)
		return -1;
	if (v->type != jbvNumeric || !numeric_integral(v->val.numeric) ||
		numeric_cmp_int(v->val.numeric, min) < 0)
		ow_validation_error(f, "%s must be an integer of at least " INT64_FORMAT, f, min);
	if (numeric_cmp_int(v->val.numeric, PG_INT64_MAX / 2) > 0)
		return PG_INT64_MAX / 2;
	return DatumGetInt64(DirectFunctionCall1(numeric_int8, NumericGetDatum(v->val.numeric)));
}

void
ow_member_unit_number(JsonbContainer *obj, const char *prefix, const char *key)
{
	JsonbValue *v = owj_get_container(obj, key);
	char	   *f = ow_field_name(prefix, key);

	if (v == NULL)
		ow_validation_error(f, "%s is required", f);
	if (v->type != jbvNumeric || numeric_cmp_int(v->val.numeric, 0) < 0 ||
		numeric_cmp_int(v->val.numeric, 1) > 0)
		ow_validation_error(f, "%s must be a number between 0 and 1", f);
}

void
ow_member_bool(JsonbContainer *obj, const char *prefix, const char *key)
{
	JsonbValue *v = owj_get_container(obj, key);

	if (v != NULL && v->type != jbvBool)
		ow_validation_error(ow_field_name(prefix, key), "%s must be a boolean", ow_field_name(prefix, key));
}

/* A schema the host will validate against: refuse what the subset cannot check. */
void
ow_member_schema(JsonbContainer *obj, const char *prefix, const char *key)
{
	JsonbValue *v = owj_get_container(obj, key);
	char	   *problem;

	if (v == NULL)
		return;
	if (!owj_is_object(v))
		ow_validation_error(ow_field_name(prefix, key), "%s must be a JSON Schema object", ow_field_name(prefix, key));
	problem = ow_schema_check(owj_to_jsonb(v));
	if (problem)
		ow_validation_error(ow_field_name(prefix, key), "%s cannot be enforced: %s", ow_field_name(prefix, key), problem);
}
