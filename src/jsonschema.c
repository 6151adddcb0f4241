/*-------------------------------------------------------------------------
 *
 * jsonschema.c
 *	  The JSON Schema subset used for resumeSchema, outcomeSchema and
 *	  clarification question schemas, evaluated directly over jsonb.
 *
 * Supported keywords: type, enum, const, properties, required,
 * additionalProperties, items (one schema), minItems, maxItems, uniqueItems,
 * minLength, maxLength (in code points), pattern, minimum, maximum,
 * exclusiveMinimum, exclusiveMaximum, multipleOf, anyOf, allOf, oneOf, not,
 * and $ref to "#/$defs/<name>".  Annotations ($schema, $comment, title,
 * description, default, examples, deprecated, readOnly, writeOnly) and
 * $defs are accepted.  Boolean schemas (true / false) are accepted anywhere
 * a schema is.
 *
 * Any other keyword makes ow_schema_check() refuse the schema when the
 * interrupt is raised, so no constraint is ever silently ignored.  $ref
 * follows the 2020-12 reading: sibling keywords still apply.
 *
 *-------------------------------------------------------------------------
 */
#include "openwop.h"

#include "catalog/pg_collation.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "regex/regex.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/json.h"
#include "utils/memutils.h"
#include "utils/numeric.h"

#define SCHEMA_MAX_DEPTH 64

/*
 * Work budget of one validation, in schema applications and value
 * comparisons.  A hostile schema ($ref fan-out under anyOf/allOf) could
 * otherwise demand exponential work; past the budget the value is refused.
 */
#define SCHEMA_MAX_STEPS 50000

typedef struct SchemaCtx
{
	JsonbContainer *root;		/* root schema object (for $ref), or NULL */
	StringInfoData errors;		/* JSON array body: {"path","keyword","message"},... */
	int			nerrors;
	int			quiet;			/* > 0 inside anyOf/oneOf/not: record nothing */
	int			depth;
	long		steps;			/* work done, against SCHEMA_MAX_STEPS */
	bool		exhausted;		/* the budget ran out: the value is refused */
	StringInfoData path;		/* JSON pointer of the instance being checked */
} SchemaCtx;

static bool validate(SchemaCtx *c, JsonbValue *schema, JsonbValue *inst);

/* ----------
 * Small helpers over JsonbValue
 * ----------
 */

static bool
is_object(JsonbValue *v)
{
	return v->type == jbvBinary && JsonContainerIsObject(v->val.binary.data);
}

static bool
is_array(JsonbValue *v)
{
	return v->type == jbvBinary && JsonContainerIsArray(v->val.binary.data);
}

static Numeric
num(JsonbValue *v)
{
	return v->val.numeric;
}

static int
num_cmp(Numeric a, Numeric b)
{
	return DatumGetInt32(DirectFunctionCall2(numeric_cmp, NumericGetDatum(a), NumericGetDatum(b)));
}

static bool
num_is_integral(Numeric n)
{
	Numeric		f = DatumGetNumeric(DirectFunctionCall1(numeric_floor, NumericGetDatum(n)));

	return num_cmp(f, n) == 0;
}

/* A non-negative integer keyword value (minItems, maxLength, ...), or -1. */
static int64
count_value(JsonbValue *v)
{
	Numeric		zero;

	if (v->type != jbvNumeric || !num_is_integral(num(v)))
		return -1;
	zero = int64_to_numeric(0);
	if (num_cmp(num(v), zero) < 0)
		return -1;
	if (num_cmp(num(v), int64_to_numeric(PG_INT32_MAX)) > 0)
		return PG_INT32_MAX;
	return DatumGetInt64(DirectFunctionCall1(numeric_int8, NumericGetDatum(num(v))));
}

/* JSON equality: numbers by value, objects regardless of key order. */
static bool
json_equal(JsonbValue *a, JsonbValue *b)
{
	Jsonb	   *ja = JsonbValueToJsonb(a);
	Jsonb	   *jb = JsonbValueToJsonb(b);

	return compareJsonbContainers(&ja->root, &jb->root) == 0;
}

static const char *
json_type(JsonbValue *v)
{
	switch (v->type)
	{
		case jbvNull:
			return "null";
		case jbvBool:
			return "boolean";
		case jbvNumeric:
			return "number";
		case jbvString:
			return "string";
		case jbvBinary:
			return JsonContainerIsArray(v->val.binary.data) ? "array" : "object";
		default:
			return "unknown";
	}
}

static bool
type_matches(const char *name, int len, JsonbValue *inst)
{
	const char *t = json_type(inst);

	if (len == 7 && strncmp(name, "integer", 7) == 0)
		return inst->type == jbvNumeric && num_is_integral(num(inst));
	return (size_t) len == strlen(t) && strncmp(name, t, len) == 0;
}

/* Count one unit of work; false once the budget is spent. */
static bool
spend(SchemaCtx *c)
{
	CHECK_FOR_INTERRUPTS();
	if (++c->steps > SCHEMA_MAX_STEPS)
		c->exhausted = true;
	return !c->exhausted;
}

/* ----------
 * Errors
 * ----------
 */

static void
fail(SchemaCtx *c, const char *keyword, const char *fmt,...) pg_attribute_printf(3, 4);

static void
fail(SchemaCtx *c, const char *keyword, const char *fmt,...)
{
	StringInfoData msg;

	if (c->quiet > 0)
		return;
	initStringInfo(&msg);
	OW_APPEND_VA(&msg, fmt);
	if (c->nerrors++ > 0)
		appendStringInfoString(&c->errors, ", ");
	appendStringInfoString(&c->errors, "{\"path\": ");
	escape_json(&c->errors, c->path.len > 0 ? c->path.data : "");
	appendStringInfoString(&c->errors, ", \"keyword\": ");
	escape_json(&c->errors, keyword);
	appendStringInfoString(&c->errors, ", \"message\": ");
	escape_json(&c->errors, msg.data);
	appendStringInfoChar(&c->errors, '}');
}

/* Append a JSON pointer segment (escaping ~ and /); returns the old length. */
static int
path_push(StringInfo path, const char *seg, int len)
{
	int			old = path->len;
	int			i;

	appendStringInfoChar(path, '/');
	for (i = 0; i < len; i++)
	{
		if (seg[i] == '~')
			appendStringInfoString(path, "~0");
		else if (seg[i] == '/')
			appendStringInfoString(path, "~1");
		else
			appendStringInfoChar(path, seg[i]);
	}
	return old;
}

static void
path_pop(StringInfo path, int old)
{
	path->len = old;
	path->data[old] = '\0';
}

/* ----------
 * $ref
 * ----------
 */

/* "#/$defs/<name>" with JSON-pointer escapes; the $defs entry, or NULL. */
static JsonbValue *
resolve_ref(JsonbContainer *root, JsonbValue *ref)
{
	const char *prefix = "#/$defs/";
	int			plen = strlen(prefix);
	char	   *name;
	int			len = 0;
	JsonbValue *defs;
	int			i;

	if (root == NULL || ref->type != jbvString ||
		ref->val.string.len <= plen ||
		strncmp(ref->val.string.val, prefix, plen) != 0)
		return NULL;

	name = palloc(ref->val.string.len - plen + 1);
	for (i = plen; i < ref->val.string.len; i++)
	{
		char		ch = ref->val.string.val[i];
		char		next = i + 1 < ref->val.string.len ? ref->val.string.val[i + 1] : '\0';

		if (ch == '/')
			return NULL;		/* only direct children of $defs */
		if (ch == '~' && (next == '0' || next == '1'))
		{
			name[len++] = next == '0' ? '~' : '/';
			i++;
		}
		else if (ch == '~')
			return NULL;
		else
			name[len++] = ch;
	}

	defs = getKeyJsonValueFromContainer(root, "$defs", 5, NULL);
	if (defs == NULL || !is_object(defs))
		return NULL;
	return getKeyJsonValueFromContainer(defs->val.binary.data, name, len, NULL);
}

/* ----------
 * Validation
 * ----------
 */

static bool
pattern_matches(JsonbValue *pattern, JsonbValue *inst)
{
	text	   *re = cstring_to_text_with_len(pattern->val.string.val, pattern->val.string.len);

	return RE_compile_and_execute(re, inst->val.string.val, inst->val.string.len,
								  REG_ADVANCED, C_COLLATION_OID, 0, NULL);
}

/* Validate inst against a subschema reached by key (or index) seg. */
static bool
validate_at(SchemaCtx *c, JsonbValue *schema, JsonbValue *inst, const char *seg, int seglen)
{
	int			old = path_push(&c->path, seg, seglen);
	bool		ok = validate(c, schema, inst);

	path_pop(&c->path, old);
	return ok;
}

static bool
validate_quiet(SchemaCtx *c, JsonbValue *schema, JsonbValue *inst)
{
	bool		ok;

	c->quiet++;
	ok = validate(c, schema, inst);
	c->quiet--;
	return ok;
}

static bool
validate_object_keywords(SchemaCtx *c, JsonbContainer *s, JsonbValue *inst)
{
	JsonbValue *props = getKeyJsonValueFromContainer(s, "properties", 10, NULL);
	JsonbValue *addl = getKeyJsonValueFromContainer(s, "additionalProperties", 20, NULL);
	JsonbValue *req = getKeyJsonValueFromContainer(s, "required", 8, NULL);
	JsonbContainer *obj = inst->val.binary.data;
	bool		ok = true;

	if (props || addl)
	{
		JsonbIterator *it = JsonbIteratorInit(obj);
		JsonbValue	k;
		JsonbValue	v;
		JsonbIteratorToken tok;

		while ((tok = JsonbIteratorNext(&it, &k, true)) != WJB_DONE)
		{
			JsonbValue *sub = NULL;
			char	   *key;
			int			keylen;

			if (tok != WJB_KEY)
				continue;
			key = pnstrdup(k.val.string.val, k.val.string.len);
			keylen = k.val.string.len;
			tok = JsonbIteratorNext(&it, &v, true);
			Assert(tok == WJB_VALUE);
			if (props)
				sub = getKeyJsonValueFromContainer(props->val.binary.data, key, keylen, NULL);
			if (sub)
				ok &= validate_at(c, sub, &v, key, keylen);
			else if (addl)
			{
				if (addl->type == jbvBool && !addl->val.boolean)
				{
					int			old = path_push(&c->path, key, keylen);

					fail(c, "additionalProperties", "property \"%s\" is not allowed", key);
					path_pop(&c->path, old);
					ok = false;
				}
				else
					ok &= validate_at(c, addl, &v, key, keylen);
			}
			if (!ok && c->quiet > 0)
				return false;
		}
	}

	if (req)
	{
		int			i;

		for (i = 0; i < (int) JsonContainerSize(req->val.binary.data); i++)
		{
			JsonbValue *name = getIthJsonbValueFromContainer(req->val.binary.data, i);

			if (getKeyJsonValueFromContainer(obj, name->val.string.val,
											 name->val.string.len, NULL) == NULL)
			{
				fail(c, "required", "required property \"%.*s\" is missing",
					 name->val.string.len, name->val.string.val);
				ok = false;
			}
		}
	}
	return ok;
}

static bool
validate_array_keywords(SchemaCtx *c, JsonbContainer *s, JsonbValue *inst)
{
	JsonbContainer *arr = inst->val.binary.data;
	int			n = JsonContainerSize(arr);
	JsonbValue *kw;
	bool		ok = true;
	int			i;

	if ((kw = getKeyJsonValueFromContainer(s, "minItems", 8, NULL)) && n < count_value(kw))
	{
		fail(c, "minItems", "array has %d items, fewer than %lld", n, (long long) count_value(kw));
		ok = false;
	}
	if ((kw = getKeyJsonValueFromContainer(s, "maxItems", 8, NULL)) && n > count_value(kw))
	{
		fail(c, "maxItems", "array has %d items, more than %lld", n, (long long) count_value(kw));
		ok = false;
	}
	if ((kw = getKeyJsonValueFromContainer(s, "uniqueItems", 11, NULL)) &&
		kw->type == jbvBool && kw->val.boolean && n > 1)
	{
		Jsonb	  **items = palloc(sizeof(Jsonb *) * n);
		bool		dup = false;

		for (i = 0; i < n; i++)
			items[i] = JsonbValueToJsonb(getIthJsonbValueFromContainer(arr, i));

		for (i = 0; i < n && !dup; i++)
		{
			int			j;

			for (j = i + 1; j < n && !dup; j++)
			{
				if (!spend(c))
					return false;
				if (compareJsonbContainers(&items[i]->root, &items[j]->root) == 0)
				{
					fail(c, "uniqueItems", "items %d and %d are equal", i, j);
					dup = true;
				}
			}
		}
		ok &= !dup;
	}
	if ((kw = getKeyJsonValueFromContainer(s, "items", 5, NULL)))
	{
		for (i = 0; i < n; i++)
		{
			char		idx[16];

			snprintf(idx, sizeof(idx), "%d", i);
			ok &= validate_at(c, kw, getIthJsonbValueFromContainer(arr, i), idx, strlen(idx));
			if (!ok && c->quiet > 0)
				return false;
		}
	}
	return ok;
}

static bool
validate_string_keywords(SchemaCtx *c, JsonbContainer *s, JsonbValue *inst)
{
	JsonbValue *kw;
	bool		ok = true;
	int			len = -1;

	if ((kw = getKeyJsonValueFromContainer(s, "minLength", 9, NULL)))
	{
		len = pg_mbstrlen_with_len(inst->val.string.val, inst->val.string.len);
		if (len < count_value(kw))
		{
			fail(c, "minLength", "string has %d characters, fewer than %lld", len, (long long) count_value(kw));
			ok = false;
		}
	}
	if ((kw = getKeyJsonValueFromContainer(s, "maxLength", 9, NULL)))
	{
		if (len < 0)
			len = pg_mbstrlen_with_len(inst->val.string.val, inst->val.string.len);
		if (len > count_value(kw))
		{
			fail(c, "maxLength", "string has %d characters, more than %lld", len, (long long) count_value(kw));
			ok = false;
		}
	}
	if ((kw = getKeyJsonValueFromContainer(s, "pattern", 7, NULL)) && !pattern_matches(kw, inst))
	{
		fail(c, "pattern", "string does not match pattern \"%.*s\"",
			 kw->val.string.len, kw->val.string.val);
		ok = false;
	}
	return ok;
}

static bool
validate_number_keywords(SchemaCtx *c, JsonbContainer *s, JsonbValue *inst)
{
	static const struct
	{
		const char *name;
		int			sign;		/* the comparison that fails */
		bool		strict;
		const char *what;
	}			bounds[] = {
		{"minimum", -1, false, "less than"},
		{"maximum", 1, false, "greater than"},
		{"exclusiveMinimum", -1, true, "less than or equal to"},
		{"exclusiveMaximum", 1, true, "greater than or equal to"},
	};
	JsonbValue *kw;
	bool		ok = true;
	int			b;

	for (b = 0; b < (int) lengthof(bounds); b++)
	{
		int			cmp;

		kw = getKeyJsonValueFromContainer(s, bounds[b].name, strlen(bounds[b].name), NULL);
		if (kw == NULL)
			continue;
		cmp = num_cmp(num(inst), num(kw));
		if ((bounds[b].sign < 0 ? cmp < 0 : cmp > 0) || (bounds[b].strict && cmp == 0))
		{
			fail(c, bounds[b].name, "%s is %s %s",
				 numeric_normalize(num(inst)), bounds[b].what, numeric_normalize(num(kw)));
			ok = false;
		}
	}
	if ((kw = getKeyJsonValueFromContainer(s, "multipleOf", 10, NULL)))
	{
		Numeric		rem = DatumGetNumeric(DirectFunctionCall2(numeric_mod,
															  NumericGetDatum(num(inst)),
															  NumericGetDatum(num(kw))));

		if (num_cmp(rem, int64_to_numeric(0)) != 0)
		{
			fail(c, "multipleOf", "%s is not a multiple of %s",
				 numeric_normalize(num(inst)), numeric_normalize(num(kw)));
			ok = false;
		}
	}
	return ok;
}

static bool
validate_combinators(SchemaCtx *c, JsonbContainer *s, JsonbValue *inst)
{
	JsonbValue *kw;
	bool		ok = true;
	int			i;

	if ((kw = getKeyJsonValueFromContainer(s, "allOf", 5, NULL)))
	{
		for (i = 0; i < (int) JsonContainerSize(kw->val.binary.data); i++)
		{
			if (!validate_quiet(c, getIthJsonbValueFromContainer(kw->val.binary.data, i), inst))
			{
				fail(c, "allOf", "value does not match allOf[%d]", i);
				ok = false;
			}
		}
	}
	if ((kw = getKeyJsonValueFromContainer(s, "anyOf", 5, NULL)))
	{
		bool		any = false;

		for (i = 0; i < (int) JsonContainerSize(kw->val.binary.data) && !any; i++)
			any = validate_quiet(c, getIthJsonbValueFromContainer(kw->val.binary.data, i), inst);
		if (!any)
		{
			fail(c, "anyOf", "value matches none of the anyOf schemas");
			ok = false;
		}
	}
	if ((kw = getKeyJsonValueFromContainer(s, "oneOf", 5, NULL)))
	{
		int			matches = 0;

		for (i = 0; i < (int) JsonContainerSize(kw->val.binary.data) && matches < 2; i++)
			matches += validate_quiet(c, getIthJsonbValueFromContainer(kw->val.binary.data, i), inst);
		if (matches != 1)
		{
			fail(c, "oneOf", matches == 0 ? "value matches none of the oneOf schemas"
				 : "value matches more than one oneOf schema");
			ok = false;
		}
	}
	if ((kw = getKeyJsonValueFromContainer(s, "not", 3, NULL)) && validate_quiet(c, kw, inst))
	{
		fail(c, "not", "value matches the schema under not");
		ok = false;
	}
	return ok;
}

static bool
validate(SchemaCtx *c, JsonbValue *schema, JsonbValue *inst)
{
	JsonbContainer *s;
	JsonbValue *kw;
	bool		ok = true;

	check_stack_depth();
	if (!spend(c))
		return false;
	if (schema->type == jbvBool)
	{
		if (!schema->val.boolean)
			fail(c, "false", "no value is allowed here");
		return schema->val.boolean;
	}
	s = schema->val.binary.data;

	if (++c->depth > SCHEMA_MAX_DEPTH)
	{
		c->depth--;
		fail(c, "$ref", "schema nesting deeper than %d", SCHEMA_MAX_DEPTH);
		return false;
	}

	if ((kw = getKeyJsonValueFromContainer(s, "$ref", 4, NULL)))
	{
		JsonbValue *target = resolve_ref(c->root, kw);

		if (target == NULL)
		{
			fail(c, "$ref", "unresolvable $ref");
			ok = false;
		}
		else
			ok &= validate(c, target, inst);
	}

	if ((kw = getKeyJsonValueFromContainer(s, "type", 4, NULL)))
	{
		bool		match = false;

		if (kw->type == jbvString)
			match = type_matches(kw->val.string.val, kw->val.string.len, inst);
		else
		{
			int			i;

			for (i = 0; i < (int) JsonContainerSize(kw->val.binary.data) && !match; i++)
			{
				JsonbValue *t = getIthJsonbValueFromContainer(kw->val.binary.data, i);

				match = type_matches(t->val.string.val, t->val.string.len, inst);
			}
		}
		if (!match)
		{
			fail(c, "type", "%s is not of the type the schema requires", json_type(inst));
			ok = false;
		}
	}
	if ((kw = getKeyJsonValueFromContainer(s, "enum", 4, NULL)))
	{
		bool		found = false;
		int			i;

		for (i = 0; i < (int) JsonContainerSize(kw->val.binary.data) && !found && spend(c); i++)
			found = json_equal(getIthJsonbValueFromContainer(kw->val.binary.data, i), inst);
		if (!found)
		{
			fail(c, "enum", "value is not one of the enumerated values");
			ok = false;
		}
	}
	if ((kw = getKeyJsonValueFromContainer(s, "const", 5, NULL)) && !json_equal(kw, inst))
	{
		fail(c, "const", "value is not the constant the schema requires");
		ok = false;
	}

	if (is_object(inst))
		ok &= validate_object_keywords(c, s, inst);
	else if (is_array(inst))
		ok &= validate_array_keywords(c, s, inst);
	else if (inst->type == jbvString)
		ok &= validate_string_keywords(c, s, inst);
	else if (inst->type == jbvNumeric)
		ok &= validate_number_keywords(c, s, inst);

	ok &= validate_combinators(c, s, inst);
	c->depth--;
	return ok;
}

/*
 * Validate value against schema.  Returns true when valid; otherwise, when
 * errors is not NULL, *errors is a JSON array text listing each failure as
 * {"path", "keyword", "message"}.  The schema must have passed
 * ow_schema_check().
 */
bool
ow_schema_validate(Jsonb *schema, Jsonb *value, char **errors)
{
	MemoryContext work = AllocSetContextCreate(CurrentMemoryContext, "openwop schema validation",
											   ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(work);
	SchemaCtx	c;
	JsonbValue	root;
	JsonbValue	inst;
	bool		ok;

	c.root = JB_ROOT_IS_OBJECT(schema) ? &schema->root : NULL;
	initStringInfo(&c.errors);
	initStringInfo(&c.path);
	c.nerrors = 0;
	c.quiet = 0;
	c.depth = 0;
	c.steps = 0;
	c.exhausted = false;

	if (JB_ROOT_IS_SCALAR(schema))
		JsonbExtractScalar(&schema->root, &root);
	else
	{
		root.type = jbvBinary;
		root.val.binary.data = &schema->root;
		root.val.binary.len = VARSIZE(schema) - VARHDRSZ;
	}
	if (JB_ROOT_IS_SCALAR(value))
		JsonbExtractScalar(&value->root, &inst);
	else
	{
		inst.type = jbvBinary;
		inst.val.binary.data = &value->root;
		inst.val.binary.len = VARSIZE(value) - VARHDRSZ;
	}

	ok = validate(&c, &root, &inst);
	if (c.exhausted)
	{
		/* fail closed, with one clear error instead of a partial list */
		ok = false;
		resetStringInfo(&c.errors);
		resetStringInfo(&c.path);
		c.nerrors = 0;
		c.quiet = 0;
		fail(&c, "$ref", "validating the value needs more than %d steps; the schema is too expensive",
			 SCHEMA_MAX_STEPS);
	}
	MemoryContextSwitchTo(old);
	if (errors)
		*errors = psprintf("[%s]", c.errors.data);
	MemoryContextDelete(work);
	return ok;
}

/* ----------
 * Checking a schema when an interrupt is raised
 * ----------
 */

typedef struct CheckCtx
{
	JsonbContainer *root;
	StringInfoData where;		/* JSON pointer into the schema */
	char	   *problem;		/* first problem found */
} CheckCtx;

static void
check_schema(CheckCtx *c, JsonbValue *schema);

static void
problem(CheckCtx *c, const char *fmt,...) pg_attribute_printf(2, 3);

static void
problem(CheckCtx *c, const char *fmt,...)
{
	StringInfoData msg;

	if (c->problem)
		return;
	initStringInfo(&msg);
	OW_APPEND_VA(&msg, fmt);
	c->problem = psprintf("%s at \"%s\"", msg.data, c->where.len ? c->where.data : "/");
}

static void
check_at(CheckCtx *c, JsonbValue *schema, const char *seg, int len)
{
	int			old = path_push(&c->where, seg, len);

	check_schema(c, schema);
	path_pop(&c->where, old);
}

static void
check_schema_array(CheckCtx *c, JsonbValue *v, const char *kw)
{
	int			i;

	if (!is_array(v) || JsonContainerSize(v->val.binary.data) == 0)
	{
		problem(c, "%s must be a non-empty array of schemas", kw);
		return;
	}
	for (i = 0; i < (int) JsonContainerSize(v->val.binary.data); i++)
	{
		char		idx[16];

		snprintf(idx, sizeof(idx), "%d", i);
		check_at(c, getIthJsonbValueFromContainer(v->val.binary.data, i), idx, strlen(idx));
	}
}

static void
compile_pattern(void *arg)
{
	JsonbValue *pattern = arg;
	text	   *re = cstring_to_text_with_len(pattern->val.string.val, pattern->val.string.len);

	(void) RE_compile_and_execute(re, "", 0, REG_ADVANCED, C_COLLATION_OID, 0, NULL);
}

/* Does a regular expression compile?  Checked in a subtransaction. */
static bool
pattern_compiles(JsonbValue *pattern)
{
	ErrorData  *edata = ow_try_subtransaction(compile_pattern, pattern);

	/* a cancel or out-of-memory is not a verdict on the pattern */
	if (edata && edata->sqlerrcode != ERRCODE_INVALID_REGULAR_EXPRESSION)
		ReThrowError(edata);
	return edata == NULL;
}

static void
check_keyword(CheckCtx *c, JsonbValue *k, JsonbValue *v)
{
	static const char *const annotations[] = {"$schema", "$comment", "title", "description",
	"default", "examples", "deprecated", "readOnly", "writeOnly", NULL};
	static const char *const counts[] = {"minItems", "maxItems", "minLength", "maxLength", NULL};
	static const char *const numbers[] = {"minimum", "maximum", "exclusiveMinimum",
	"exclusiveMaximum", NULL};
	static const char *const types[] = {"null", "boolean", "object", "array", "number",
	"string", "integer", NULL};
	const char *const *a;
	char	   *kw = pnstrdup(k->val.string.val, k->val.string.len);

	for (a = annotations; *a; a++)
		if (strcmp(kw, *a) == 0)
			return;
	for (a = counts; *a; a++)
		if (strcmp(kw, *a) == 0)
		{
			if (count_value(v) < 0)
				problem(c, "%s must be a non-negative integer", kw);
			return;
		}
	for (a = numbers; *a; a++)
		if (strcmp(kw, *a) == 0)
		{
			if (v->type != jbvNumeric)
				problem(c, "%s must be a number", kw);
			return;
		}

	if (strcmp(kw, "type") == 0)
	{
		int			n = 1;
		int			i;

		if (v->type != jbvString && !(is_array(v) && (n = JsonContainerSize(v->val.binary.data)) > 0))
		{
			problem(c, "type must be a type name or a non-empty array of them");
			return;
		}
		for (i = 0; i < n; i++)
		{
			JsonbValue *t = v->type == jbvString ? v : getIthJsonbValueFromContainer(v->val.binary.data, i);
			bool		known = false;

			if (t->type == jbvString)
				for (a = types; *a; a++)
					known |= (size_t) t->val.string.len == strlen(*a) &&
						strncmp(t->val.string.val, *a, t->val.string.len) == 0;
			if (!known)
				problem(c, "type names must be null, boolean, object, array, number, string or integer");
		}
	}
	else if (strcmp(kw, "enum") == 0)
	{
		if (!is_array(v))
			problem(c, "enum must be an array");
	}
	else if (strcmp(kw, "const") == 0)
		;
	else if (strcmp(kw, "properties") == 0 || strcmp(kw, "$defs") == 0)
	{
		JsonbIterator *it;
		JsonbValue	pk;
		JsonbValue	pv;
		JsonbIteratorToken tok;
		int			old;

		if (!is_object(v))
		{
			problem(c, "%s must be an object of schemas", kw);
			return;
		}
		old = path_push(&c->where, kw, strlen(kw));
		it = JsonbIteratorInit(v->val.binary.data);
		while ((tok = JsonbIteratorNext(&it, &pk, true)) != WJB_DONE)
		{
			if (tok != WJB_KEY)
				continue;
			JsonbIteratorNext(&it, &pv, true);
			check_at(c, &pv, pk.val.string.val, pk.val.string.len);
		}
		path_pop(&c->where, old);
	}
	else if (strcmp(kw, "required") == 0)
	{
		int			i;

		if (!is_array(v))
		{
			problem(c, "required must be an array of strings");
			return;
		}
		for (i = 0; i < (int) JsonContainerSize(v->val.binary.data); i++)
			if (getIthJsonbValueFromContainer(v->val.binary.data, i)->type != jbvString)
				problem(c, "required must be an array of strings");
	}
	else if (strcmp(kw, "additionalProperties") == 0 || strcmp(kw, "not") == 0)
		check_at(c, v, kw, strlen(kw));
	else if (strcmp(kw, "items") == 0)
	{
		if (is_array(v))
			problem(c, "items must be one schema (the array form is not supported)");
		else
			check_at(c, v, kw, strlen(kw));
	}
	else if (strcmp(kw, "uniqueItems") == 0)
	{
		if (v->type != jbvBool)
			problem(c, "uniqueItems must be a boolean");
	}
	else if (strcmp(kw, "pattern") == 0)
	{
		if (v->type != jbvString)
			problem(c, "pattern must be a string");
		else if (!pattern_compiles(v))
			problem(c, "pattern \"%.*s\" is not a valid regular expression",
					v->val.string.len, v->val.string.val);
	}
	else if (strcmp(kw, "multipleOf") == 0)
	{
		if (v->type != jbvNumeric || num_cmp(num(v), int64_to_numeric(0)) <= 0)
			problem(c, "multipleOf must be a number greater than 0");
	}
	else if (strcmp(kw, "anyOf") == 0 || strcmp(kw, "allOf") == 0 || strcmp(kw, "oneOf") == 0)
	{
		int			old = path_push(&c->where, kw, strlen(kw));

		check_schema_array(c, v, kw);
		path_pop(&c->where, old);
	}
	else if (strcmp(kw, "$ref") == 0)
	{
		if (resolve_ref(c->root, v) == NULL)
			problem(c, "$ref must point to an existing \"#/$defs/<name>\"");
	}
	else
		problem(c, "keyword \"%s\" is not supported", kw);
}

static void
check_schema(CheckCtx *c, JsonbValue *schema)
{
	JsonbIterator *it;
	JsonbValue	k;
	JsonbValue	v;
	JsonbIteratorToken tok;

	check_stack_depth();
	if (schema->type == jbvBool)
		return;
	if (!is_object(schema))
	{
		problem(c, "a schema must be an object or a boolean");
		return;
	}
	it = JsonbIteratorInit(schema->val.binary.data);
	while ((tok = JsonbIteratorNext(&it, &k, true)) != WJB_DONE && c->problem == NULL)
	{
		if (tok != WJB_KEY)
			continue;
		JsonbIteratorNext(&it, &v, true);
		check_keyword(c, &k, &v);
	}
}

/*
 * NULL when schema uses only the supported subset, well-formed; otherwise a
 * message naming the first problem and where it is (a JSON pointer).
 */
char *
ow_schema_check(Jsonb *schema)
{
	CheckCtx	c;
	JsonbValue	root;

	c.root = JB_ROOT_IS_OBJECT(schema) ? &schema->root : NULL;
	initStringInfo(&c.where);
	c.problem = NULL;
	if (JB_ROOT_IS_SCALAR(schema))
		JsonbExtractScalar(&schema->root, &root);
	else
	{
		root.type = jbvBinary;
		root.val.binary.data = &schema->root;
		root.val.binary.len = VARSIZE(schema) - VARHDRSZ;
	}
	check_schema(&c, &root);
	return c.problem;
}

/*
 * openwop.json_schema_errors(schema jsonb, value jsonb) → jsonb
 *
 * The errors of value against schema, as an array of {path, keyword,
 * message}; [] when it is valid.  A schema outside the supported subset is
 * refused with validation_error.
 */
PG_FUNCTION_INFO_V1(ow_json_schema_errors);

Datum
ow_json_schema_errors(PG_FUNCTION_ARGS)
{
	Jsonb	   *schema;
	Jsonb	   *value;
	char	   *problem;
	char	   *errors;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ow_validation_error(PG_ARGISNULL(0) ? "schema" : "value", "schema and value must not be null");
	schema = PG_GETARG_JSONB_P(0);
	value = PG_GETARG_JSONB_P(1);
	if ((problem = ow_schema_check(schema)) != NULL)
		ow_validation_error("schema", "unsupported or malformed schema: %s", problem);
	(void) ow_schema_validate(schema, value, &errors);
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(errors)));
}
