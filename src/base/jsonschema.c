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
 * Cost.  An answer comes from whoever holds a token, so no schema may make
 * one validation expensive.  ow_schema_check() computes the schema's
 * weight, a bound on the validator's steps per JSON value of an answer, and
 * refuses a schema heavier than SCHEMA_MAX_WEIGHT; a validation therefore
 * takes at most SCHEMA_MAX_WEIGHT steps per value (the budget it runs with is
 * only a safety net).  enum and uniqueItems take logarithmic steps per value
 * (sorted arrays), and pattern runs on PCRE2 with a match limit: beyond a
 * small allowance per application, all pattern matching of one validation
 * shares REGEX_BUDGET match steps.
 *
 * One file, though long: the checker and the validator walk the same
 * keywords with the same weights, and a keyword's check, weight and
 * evaluation are kept side by side so that none can change alone.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/base.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/hsearch.h"
#include "utils/json.h"
#include "utils/memutils.h"
#include "utils/numeric.h"

/* Schema applications nested deeper than this refuse the value. */
#define SCHEMA_MAX_DEPTH 64

/* details.errors lists at most this many failures: the value is refused either way. */
#define SCHEMA_MAX_ERRORS 100

/*
 * The heaviest schema accepted: at most this many steps per JSON value of
 * the answer.  A step is one schema application, one comparison of two
 * values, one type name or required property tested; a pattern weighs
 * SCHEMA_PATTERN_WEIGHT.
 */
#define SCHEMA_MAX_WEIGHT 1000

/* Weights saturate here, so a hostile $ref fan-out cannot overflow them. */
#define SCHEMA_WEIGHT_CAP INT64CONST(1000000000000)

/* An enum longer than this is searched in a sorted copy. */
#define SCHEMA_ENUM_SCAN 8

/*
 * uniqueItems sorts the array: a jsonb array has fewer than 2^28 elements
 * (JB_CMASK), so a merge sort makes at most 28 comparisons per element, and
 * the scan for equal neighbours one more.
 */
#define SCHEMA_UNIQUE_WEIGHT 29

/* Applying a pattern: its steps and the PCRE2 match steps they include. */
#define SCHEMA_PATTERN_WEIGHT 10

/* multipleOf divides numbers of up to about 200 digits: ten steps' worth. */
#define SCHEMA_MULTIPLE_WEIGHT 10
#define REGEX_FREE_STEPS 100

/* PCRE2 match steps that all retries of one validation may spend. */
#define REGEX_BUDGET 1000000

/* Backtracking memory of one match, in kB. */
#define REGEX_HEAP_KB 16384

/*
 * One match step can scan the whole string (a repeat inside a lookahead),
 * so beyond the free first attempt a step is charged once per this many
 * bytes of the string: the budget bounds time, not only steps.
 */
#define REGEX_STEP_BYTES 256

/* Longest pattern, in bytes, and deepest nesting of its parentheses. */
#define REGEX_MAX_LENGTH 4096
#define REGEX_MAX_NESTING 64

/*
 * As close to ECMA-262 (JSON Schema's dialect) as PCRE2 comes: code points,
 * \uhhhh and \u{h...} escapes, an unset backreference matches the empty
 * string, $ only at the end, [] and [^] as in ECMA; \C (one byte of a
 * character) is refused.
 */
#define REGEX_OPTIONS (PCRE2_UTF | PCRE2_ALT_BSUX | PCRE2_MATCH_UNSET_BACKREF | \
					   PCRE2_DOLLAR_ENDONLY | PCRE2_ALLOW_EMPTY_CLASS | \
					   PCRE2_NEVER_BACKSLASH_C)

/*
 * An unanchored pattern is searched as one anchored match of this prefix
 * and the pattern: PCRE2 restarts its match limit at every start position
 * of an unanchored search, while here one limit covers the whole search.
 */
#define REGEX_SEARCH_PREFIX "(?s:.*?)(?:"

/* ----------
 * Small helpers over JsonbValue
 * ----------
 */



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

static int
type_rank(JsonbValue *v)
{
	switch (v->type)
	{
		case jbvNull:
			return 0;
		case jbvBool:
			return 1;
		case jbvNumeric:
			return 2;
		case jbvString:
			return 3;
		case jbvBinary:
			return JsonContainerIsArray(v->val.binary.data) ? 4 : 5;
		default:
			elog(ERROR, "unexpected jsonb value type %d", (int) v->type);
	}
	return 0;					/* keep the compiler quiet */
}

/*
 * A total order of JSON values whose equality is JSON equality: numbers by
 * value (1 = 1.0), strings by their bytes, arrays and objects by jsonb's
 * own order (compareJsonbContainers), which ignores object key order.
 * enum, const and uniqueItems all use it.
 */
static int
value_cmp(JsonbValue *a, JsonbValue *b)
{
	int			ra = type_rank(a);
	int			rb = type_rank(b);
	int			cmp;

	if (ra != rb)
		return ra < rb ? -1 : 1;
	switch (a->type)
	{
		case jbvBool:
			return (int) a->val.boolean - (int) b->val.boolean;
		case jbvNumeric:
			return num_cmp(num(a), num(b));
		case jbvString:
			cmp = memcmp(a->val.string.val, b->val.string.val,
						 Min(a->val.string.len, b->val.string.len));
			if (cmp != 0)
				return cmp;
			return a->val.string.len < b->val.string.len ? -1 :
				a->val.string.len > b->val.string.len ? 1 : 0;
		case jbvBinary:
			return compareJsonbContainers(a->val.binary.data, b->val.binary.data);
		default:
			return 0;			/* null */
	}
}


static bool
type_matches(const char *name, int len, JsonbValue *inst)
{
	const char *t = owj_type_name(inst);

	if (len == 7 && strncmp(name, "integer", 7) == 0)
		return inst->type == jbvNumeric && num_is_integral(num(inst));
	return (size_t) len == strlen(t) && strncmp(name, t, len) == 0;
}

/* Values of the instance: objects, arrays and scalars, at every level. */
static int64
count_values(Jsonb *value)
{
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	int64		n = 0;

	if (JB_ROOT_IS_SCALAR(value))
		return 1;
	it = JsonbIteratorInit(&value->root);
	while ((tok = JsonbIteratorNext(&it, &v, false)) != WJB_DONE)
	{
		/* a nested container comes as its BEGIN token, never as ELEM or VALUE */
		if (tok == WJB_BEGIN_ARRAY || tok == WJB_BEGIN_OBJECT ||
			tok == WJB_ELEM || tok == WJB_VALUE)
			n++;
	}
	return n;
}

/* ----------
 * Sorting values
 * ----------
 */

typedef struct SortItem
{
	JsonbValue	value;
	int			index;			/* position in the array it came from */
} SortItem;

/* The elements of a jsonb array, in order. */
static SortItem *
array_items(JsonbContainer *arr, int n)
{
	SortItem   *items = palloc(sizeof(SortItem) * Max(n, 1));
	JsonbIterator *it = JsonbIteratorInit(arr);
	JsonbValue	v;
	JsonbIteratorToken tok;
	int			i = 0;

	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok != WJB_ELEM)
			continue;
		Assert(i < n);
		items[i].value = v;
		items[i].index = i;
		i++;
	}
	return items;
}

/* ----------
 * Regular expressions (PCRE2), shared by checking and validation
 * ----------
 */

typedef struct Regex
{
	pcre2_general_context *general;
	pcre2_compile_context *compile;
	pcre2_match_context *match;
	pcre2_match_data *data;		/* shared by every match: no captures needed */
} Regex;

/*
 * PCRE2's memory comes from a PostgreSQL memory context.  An allocation
 * failure must come back as NULL (PCRE2 then reports it), never as a
 * longjmp through PCRE2's frames.
 */
static void *
regex_alloc(PCRE2_SIZE size, void *cxt)
{
	if (size > MaxAllocSize)
		return NULL;
	return MemoryContextAllocExtended((MemoryContext) cxt, size, MCXT_ALLOC_NO_OOM);
}

static void
regex_free(void *ptr, void *cxt)
{
	if (ptr != NULL)
		pfree(ptr);
}

static void
regex_out_of_memory(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_OUT_OF_MEMORY),
			 errmsg("out of memory"),
			 errdetail("PCRE2 could not allocate memory for a JSON Schema pattern.")));
}

/* A PCRE2 engine whose memory lives in the current memory context. */
static Regex *
regex_create(void)
{
	Regex	   *re = palloc(sizeof(Regex));

	re->general = pcre2_general_context_create(regex_alloc, regex_free, CurrentMemoryContext);
	if (re->general == NULL)
		regex_out_of_memory();
	re->compile = pcre2_compile_context_create(re->general);
	re->match = pcre2_match_context_create(re->general);
	re->data = pcre2_match_data_create(1, re->general);
	if (re->compile == NULL || re->match == NULL || re->data == NULL)
		regex_out_of_memory();
	/* ECMA-262's \u{h...}; "." stops at CR and LF, as ECMA's does */
	pcre2_set_compile_extra_options(re->compile, PCRE2_EXTRA_ALT_BSUX);
	pcre2_set_newline(re->compile, PCRE2_NEWLINE_ANYCRLF);
	pcre2_set_parens_nest_limit(re->compile, REGEX_MAX_NESTING);
	pcre2_set_heap_limit(re->match, REGEX_HEAP_KB);
	return re;
}

/*
 * s in UTF-8, which PCRE2 is compiled for; *len is updated.  NULL when it
 * cannot be: in a SQL_ASCII database a string is bytes, UTF-8 or not.
 */
static const char *
to_utf8(const char *s, int *len)
{
	const char *u;

	if (GetDatabaseEncoding() == PG_SQL_ASCII)
		return pg_verify_mbstr(PG_UTF8, s, *len, true) ? s : NULL;
	u = pg_server_to_any(s, *len, PG_UTF8);

	if (u != s)
		*len = strlen(u);
	return u;
}

/* PCRE2's compile error, with its offset counted in characters. */
static char *
regex_compile_error(int errcode, const char *pattern, int len, PCRE2_SIZE offset)
{
	PCRE2_UCHAR msg[256];
	int			chars = 0;
	PCRE2_SIZE	i;

	if (errcode == PCRE2_ERROR_HEAP_FAILED)
		regex_out_of_memory();
	if (pcre2_get_error_message(errcode, msg, sizeof(msg)) < 0)
		snprintf((char *) msg, sizeof(msg), "PCRE2 error %d", errcode);
	for (i = 0; i < offset && i < (PCRE2_SIZE) len; i++)
		if (((unsigned char) pattern[i] & 0xC0) != 0x80)
			chars++;
	return psprintf("%s (at offset %d)", (char *) msg, chars);
}

/*
 * Compile a pattern for an unanchored search, as JSON Schema applies it.
 * NULL with *error set when it does not compile.
 */
static pcre2_code *
regex_compile(Regex *re, const char *pattern, int len, char **error)
{
	const char *utf8 = to_utf8(pattern, &len);
	int			errcode;
	PCRE2_SIZE	offset;
	pcre2_code *code;
	uint32_t	options;
	StringInfoData search;
	int			prefix = strlen(REGEX_SEARCH_PREFIX);

	*error = NULL;
	if (utf8 == NULL)
	{
		*error = pstrdup("the pattern is not valid UTF-8");
		return NULL;
	}

	/* (*UCP), (*CR), (*LIMIT_MATCH=...) must open the pattern; ECMA has none */
	if (len >= 2 && utf8[0] == '(' && utf8[1] == '*')
	{
		*error = pstrdup("start-of-pattern settings such as (*UCP) are not supported");
		return NULL;
	}

	pcre2_set_max_pattern_length(re->compile, REGEX_MAX_LENGTH);
	code = pcre2_compile((PCRE2_SPTR) utf8, len, REGEX_OPTIONS, &errcode, &offset, re->compile);
	if (code == NULL)
	{
		*error = regex_compile_error(errcode, utf8, len, offset);
		return NULL;
	}

	/* an anchored pattern has one start position: PCRE2's limit covers it */
	if (pcre2_pattern_info(code, PCRE2_INFO_ALLOPTIONS, &options) == 0 &&
		(options & PCRE2_ANCHORED) != 0)
		return code;
	pcre2_code_free(code);

	initStringInfo(&search);
	appendStringInfoString(&search, REGEX_SEARCH_PREFIX);
	appendBinaryStringInfo(&search, utf8, len);
	appendStringInfoChar(&search, ')');
	pcre2_set_max_pattern_length(re->compile, search.len);
	code = pcre2_compile((PCRE2_SPTR) search.data, search.len, REGEX_OPTIONS | PCRE2_ANCHORED,
						 &errcode, &offset, re->compile);
	if (code == NULL)
	{
		/* report the offset in the caller's pattern */
		offset = offset > (PCRE2_SIZE) prefix ? offset - prefix : 0;
		*error = regex_compile_error(errcode, utf8, len, offset);
	}
	pfree(search.data);
	return code;
}

/* ----------
 * Validation
 * ----------
 */

typedef struct SchemaCtx
{
	MemoryContext work;			/* lives as long as the validation */
	MemoryContext scratch[SCHEMA_MAX_DEPTH + 1];	/* per nesting level */
	JsonbContainer *root;		/* root schema object (for $ref), or NULL */
	StringInfoData errors;		/* JSON array body: {"path","keyword","message"},... */
	int			nerrors;
	int			quiet;			/* > 0 inside anyOf/oneOf/not: record nothing */
	int			depth;
	int64		steps;			/* work done, against max_steps */
	int64		max_steps;		/* SCHEMA_MAX_WEIGHT per value of the instance */
	int64		regex_left;		/* what is left of REGEX_BUDGET */
	bool		exhausted;		/* a limit was reached: the value is refused */
	const char *exhausted_keyword;	/* ... with this one error */
	char	   *exhausted_path;
	char	   *exhausted_message;
	StringInfoData path;		/* JSON pointer of the instance being checked */
	HTAB	   *enums;			/* sorted copies of long enums */
	HTAB	   *patterns;		/* compiled patterns */
	Regex	   *regex;			/* created at the first pattern */
} SchemaCtx;

/* A long enum, sorted (cached by the enum array's address in the schema). */
typedef struct EnumIndex
{
	JsonbContainer *key;
	int			n;
	SortItem   *sorted;
} EnumIndex;

/* A compiled pattern (cached by the address of its text in the schema). */
typedef struct PatternEntry
{
	const char *key;
	pcre2_code *code;			/* NULL when it does not compile */
	char	   *error;			/* then why */
} PatternEntry;

static bool validate(SchemaCtx *c, JsonbValue *schema, JsonbValue *inst);

/* ----------
 * Errors and limits
 * ----------
 */

static bool
fail(SchemaCtx *c, const char *keyword, const char *fmt,...) pg_attribute_printf(3, 4);

/*
 * Record that the value failed keyword at the current path; returns false,
 * so a keyword check reads "ok = fail(...)".
 */
static bool
fail(SchemaCtx *c, const char *keyword, const char *fmt,...)
{
	StringInfoData msg;

	if (c->quiet > 0 || c->nerrors >= SCHEMA_MAX_ERRORS)
		return false;
	initStringInfo(&msg);
	OW_APPEND_VA(&msg, fmt);
	if (c->nerrors++ > 0)
		appendStringInfoString(&c->errors, ", ");
	/* a path or message quotes the answer: each at most OW_ECHO_MAX bytes */
	appendStringInfoString(&c->errors, "{\"path\": ");
	escape_json(&c->errors, ow_echo(c->path.len > 0 ? c->path.data : ""));
	appendStringInfoString(&c->errors, ", \"keyword\": ");
	escape_json(&c->errors, keyword);
	appendStringInfoString(&c->errors, ", \"message\": ");
	escape_json(&c->errors, ow_echo(msg.data));
	appendStringInfoChar(&c->errors, '}');
	return false;
}

/*
 * A limit was reached: the value is refused (fail closed) with this one
 * error, at the current path when here is true, else at the root.  Only
 * the first limit reached is reported; everything after it stops.
 */
static void
exhaust(SchemaCtx *c, bool here, const char *keyword, const char *fmt,...) pg_attribute_printf(4, 5);

static void
exhaust(SchemaCtx *c, bool here, const char *keyword, const char *fmt,...)
{
	StringInfoData msg;
	MemoryContext old;

	if (c->exhausted)
		return;
	old = MemoryContextSwitchTo(c->work);
	c->exhausted = true;
	c->exhausted_keyword = keyword;
	c->exhausted_path = pstrdup(here ? c->path.data : "");
	initStringInfo(&msg);
	OW_APPEND_VA(&msg, fmt);
	c->exhausted_message = msg.data;
	MemoryContextSwitchTo(old);
}

/*
 * Count n steps; false once a limit is reached.  A schema that passed
 * ow_schema_check() never reaches max_steps; one stored before the weight
 * rule existed may.
 */
static bool
spend(SchemaCtx *c, int64 n)
{
	CHECK_FOR_INTERRUPTS();
	if (c->exhausted)
		return false;
	c->steps += n;
	if (c->steps > c->max_steps)
		exhaust(c, false, "$ref", "validating the value needs more than " INT64_FORMAT
				" steps; the schema is too expensive", c->max_steps);
	return !c->exhausted;
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

/*
 * Stable bottom-up merge sort by value_cmp: at most n * ceil(log2 n)
 * comparisons whatever the input (a quicksort can be driven quadratic).
 * Each comparison is a step of c when c is not NULL; false when the budget
 * ran out.
 */
static bool
sort_items(SchemaCtx *c, SortItem *items, int n)
{
	SortItem   *from = items;
	SortItem   *to = palloc(sizeof(SortItem) * Max(n, 1));
	SortItem   *buf = to;
	int			width;

	for (width = 1; width < n; width *= 2)
	{
		SortItem   *swap;
		int			lo;

		CHECK_FOR_INTERRUPTS();
		for (lo = 0; lo < n; lo += 2 * width)
		{
			int			mid = Min(lo + width, n);
			int			hi = Min(lo + 2 * width, n);
			int			i = lo;
			int			j = mid;
			int			k = lo;

			while (i < mid && j < hi)
			{
				if (c != NULL && !spend(c, 1))
					return false;
				/* ties take the left run first: the sort is stable */
				if (value_cmp(&from[j].value, &from[i].value) < 0)
					to[k++] = from[j++];
				else
					to[k++] = from[i++];
			}
			while (i < mid)
				to[k++] = from[i++];
			while (j < hi)
				to[k++] = from[j++];
		}
		swap = from;
		from = to;
		to = swap;
	}
	if (from != items)
		memcpy(items, from, sizeof(SortItem) * n);
	pfree(buf);
	return true;
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
	StringInfoData name;
	JsonbValue *defs;

	if (root == NULL || ref->type != jbvString ||
		ref->val.string.len <= plen ||
		strncmp(ref->val.string.val, prefix, plen) != 0 ||
		memchr(ref->val.string.val + plen, '/', ref->val.string.len - plen) != NULL)
		return NULL;			/* only direct children of $defs */
	initStringInfo(&name);
	if (!owj_pointer_token(ref->val.string.val + plen, ref->val.string.len - plen, &name))
		return NULL;

	defs = getKeyJsonValueFromContainer(root, "$defs", 5, NULL);
	if (defs == NULL || !owj_is_object(defs))
		return NULL;
	return getKeyJsonValueFromContainer(defs->val.binary.data, name.data, name.len, NULL);
}

/* ----------
 * enum and pattern
 * ----------
 */

/*
 * The entry for *key (a pointer into the schema, which stays put for the
 * whole validation) in the validation-lifetime cache *h, created in cxt on
 * first use.  The entry's first member is the key.
 */
static void *
validation_cache(HTAB **h, const char *name, const void *key, Size entrysize, MemoryContext cxt,
				 bool *found)
{
	if (*h == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(void *);
		ctl.entrysize = entrysize;
		ctl.hcxt = cxt;
		*h = hash_create(name, 16, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	return hash_search(*h, key, HASH_ENTER, found);
}

/* The sorted copy of a long enum, built at its first use in this validation. */
static EnumIndex *
enum_index(SchemaCtx *c, JsonbContainer *values)
{
	EnumIndex  *e;
	bool		found;

	e = validation_cache(&c->enums, "openwop schema enums", &values, sizeof(EnumIndex), c->work, &found);
	if (!found)
	{
		MemoryContext old = MemoryContextSwitchTo(c->work);

		/* the sort grows with the schema, not the answer: no steps */
		e->n = JsonContainerSize(values);
		e->sorted = array_items(values, e->n);
		(void) sort_items(NULL, e->sorted, e->n);
		MemoryContextSwitchTo(old);
	}
	return e;
}

/* Is inst one of the values?  Linear for a short enum, else a binary search. */
static bool
enum_contains(SchemaCtx *c, JsonbContainer *values, JsonbValue *inst)
{
	int			n = JsonContainerSize(values);
	EnumIndex  *e;
	int			lo = 0;
	int			hi;
	int			i;

	if (n <= SCHEMA_ENUM_SCAN)
	{
		for (i = 0; i < n; i++)
		{
			if (!spend(c, 1))
				return false;
			if (value_cmp(getIthJsonbValueFromContainer(values, i), inst) == 0)
				return true;
		}
		return false;
	}

	e = enum_index(c, values);
	hi = e->n - 1;
	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		int			cmp;

		if (!spend(c, 1))
			return false;
		cmp = value_cmp(inst, &e->sorted[mid].value);
		if (cmp == 0)
			return true;
		if (cmp < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return false;
}

/* The compiled form of a pattern keyword, compiled once per validation. */
static PatternEntry *
pattern_entry(SchemaCtx *c, JsonbValue *pattern)
{
	const char *key = pattern->val.string.val;
	PatternEntry *p;
	bool		found;

	p = validation_cache(&c->patterns, "openwop schema patterns", &key, sizeof(PatternEntry), c->work, &found);
	if (!found)
	{
		/* the engine and the compiled pattern live as long as the validation */
		MemoryContext old = MemoryContextSwitchTo(c->work);

		p->code = NULL;
		p->error = NULL;
		if (c->regex == NULL)
			c->regex = regex_create();
		p->code = regex_compile(c->regex, pattern->val.string.val, pattern->val.string.len,
								&p->error);
		MemoryContextSwitchTo(old);
	}
	return p;
}

/*
 * Does the string inst match the compiled pattern anywhere?  The first
 * attempt may take REGEX_FREE_STEPS match steps, part of the pattern's
 * weight.  PCRE2 does not tell how many steps a match took, so a longer
 * match is retried with the limit doubled each time, and each retry is
 * charged its whole limit to the validation's regex budget: all retries of
 * a validation together take at most REGEX_BUDGET steps.  When the budget
 * or the backtracking memory runs out the value is refused (false, with
 * c->exhausted set).
 */
static bool
pattern_search(SchemaCtx *c, PatternEntry *p, JsonbValue *pattern, JsonbValue *inst)
{
	int			len = inst->val.string.len;
	const char *subject = to_utf8(inst->val.string.val, &len);
	int64		per_step = 1 + len / REGEX_STEP_BYTES;
	uint32_t	limit = REGEX_FREE_STEPS;
	uint32_t	flags = 0;

	if (subject == NULL)
	{
		exhaust(c, true, "pattern", "the string is not valid UTF-8: no pattern can be applied to it");
		return false;
	}

	for (;;)
	{
		int			rc;

		/* a step takes at most one frame: the depth limit never binds first */
		pcre2_set_match_limit(c->regex->match, limit);
		pcre2_set_depth_limit(c->regex->match, limit);
		rc = pcre2_match(p->code, (PCRE2_SPTR) subject, len, 0, flags,
						 c->regex->data, c->regex->match);
		if (rc >= 0)
			return true;
		if (rc == PCRE2_ERROR_NOMATCH)
			return false;
		if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT)
		{
			int64		next = Min((int64) limit * 2, c->regex_left / per_step);

			CHECK_FOR_INTERRUPTS();
			if (next <= limit)
			{
				exhaust(c, true, "pattern",
						"pattern \"%.*s\" needs more than the %d match steps one validation may take",
						Min(pattern->val.string.len, OW_ECHO_MAX), pattern->val.string.val, REGEX_BUDGET);
				return false;
			}
			limit = (uint32_t) next;
			c->regex_left -= limit * per_step;
			flags = PCRE2_NO_UTF_CHECK; /* the first attempt checked it */
			continue;
		}
		if (rc == PCRE2_ERROR_HEAPLIMIT)
		{
			exhaust(c, true, "pattern",
					"pattern \"%.*s\" needs more than %d kB of backtracking memory",
					Min(pattern->val.string.len, OW_ECHO_MAX), pattern->val.string.val, REGEX_HEAP_KB);
			return false;
		}
		if (rc == PCRE2_ERROR_NOMEMORY)
			regex_out_of_memory();
		{
			/* any other failure (recursion at the same position, ...): the value is refused */
			PCRE2_UCHAR msg[256];

			if (pcre2_get_error_message(rc, msg, sizeof(msg)) < 0)
				msg[0] = '\0';
			exhaust(c, true, "pattern", "pattern \"%.*s\" cannot be matched against this value: %s",
					Min(pattern->val.string.len, OW_ECHO_MAX), pattern->val.string.val, (char *) msg);
			return false;
		}
	}
}

/* ----------
 * Keywords
 * ----------
 */

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
		int			n = JsonContainerSize(req->val.binary.data);
		int			i;

		if (!spend(c, n))
			return false;
		for (i = 0; i < n; i++)
		{
			JsonbValue *name = getIthJsonbValueFromContainer(req->val.binary.data, i);

			if (getKeyJsonValueFromContainer(obj, name->val.string.val,
											 name->val.string.len, NULL) == NULL)
				ok = fail(c, "required", "required property \"%.*s\" is missing",
					      name->val.string.len, name->val.string.val);
		}
	}
	return ok;
}

/*
 * uniqueItems: sort, then look at neighbours.  Reports the same pair as
 * comparing all pairs in order would: the equal pair whose first index is
 * smallest, which in a stable sort opens a run of equal items.
 */
static bool
unique_items(SchemaCtx *c, JsonbContainer *arr, int n)
{
	SortItem   *items = array_items(arr, n);
	int			first = -1;
	int			second = -1;
	bool		in_run = false;
	int			i;

	if (!sort_items(c, items, n))
		return false;
	for (i = 1; i < n; i++)
	{
		bool		equal;

		if (!spend(c, 1))
			return false;
		equal = value_cmp(&items[i - 1].value, &items[i].value) == 0;
		if (equal && !in_run && (first < 0 || items[i - 1].index < first))
		{
			first = items[i - 1].index;
			second = items[i].index;
		}
		in_run = equal;
	}
	if (first < 0)
		return true;
	fail(c, "uniqueItems", "items %d and %d are equal", first, second);
	return false;
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
		ok = fail(c, "minItems", "array has %d items, fewer than %lld", n, (long long) count_value(kw));
	if ((kw = getKeyJsonValueFromContainer(s, "maxItems", 8, NULL)) && n > count_value(kw))
		ok = fail(c, "maxItems", "array has %d items, more than %lld", n, (long long) count_value(kw));
	if ((kw = getKeyJsonValueFromContainer(s, "uniqueItems", 11, NULL)) &&
		kw->type == jbvBool && kw->val.boolean && n > 1)
	{
		ok &= unique_items(c, arr, n);
		if (c->exhausted)
			return false;
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
			ok = fail(c, "minLength", "string has %d characters, fewer than %lld", len, (long long) count_value(kw));
	}
	if ((kw = getKeyJsonValueFromContainer(s, "maxLength", 9, NULL)))
	{
		if (len < 0)
			len = pg_mbstrlen_with_len(inst->val.string.val, inst->val.string.len);
		if (len > count_value(kw))
			ok = fail(c, "maxLength", "string has %d characters, more than %lld", len, (long long) count_value(kw));
	}
	if ((kw = getKeyJsonValueFromContainer(s, "pattern", 7, NULL)))
	{
		PatternEntry *p;

		if (!spend(c, SCHEMA_PATTERN_WEIGHT))
			return false;
		p = pattern_entry(c, kw);
		if (p->code == NULL)
		{
			/* only a schema stored before ow_schema_check() compiled patterns */
			fail(c, "pattern", "pattern \"%.*s\" cannot be used: %s",
				 Min(kw->val.string.len, OW_ECHO_MAX), kw->val.string.val, p->error);
			ok = false;
		}
		else if (!pattern_search(c, p, kw, inst))
			ok = fail(c, "pattern", "string does not match pattern \"%.*s\"",
				      Min(kw->val.string.len, OW_ECHO_MAX), kw->val.string.val);
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
			ok = fail(c, bounds[b].name, "%s is %s %s",
				      numeric_normalize(num(inst)), bounds[b].what, numeric_normalize(num(kw)));
	}
	if ((kw = getKeyJsonValueFromContainer(s, "multipleOf", 10, NULL)) && spend(c, SCHEMA_MULTIPLE_WEIGHT))
	{
		Numeric		rem = DatumGetNumeric(DirectFunctionCall2(numeric_mod,
															  NumericGetDatum(num(inst)),
															  NumericGetDatum(num(kw))));

		if (num_cmp(rem, int64_to_numeric(0)) != 0)
			ok = fail(c, "multipleOf", "%s is not a multiple of %s",
				      numeric_normalize(num(inst)), numeric_normalize(num(kw)));
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
				ok = fail(c, "allOf", "value does not match allOf[%d]", i);
		}
	}
	if ((kw = getKeyJsonValueFromContainer(s, "anyOf", 5, NULL)))
	{
		bool		any = false;

		for (i = 0; i < (int) JsonContainerSize(kw->val.binary.data) && !any; i++)
			any = validate_quiet(c, getIthJsonbValueFromContainer(kw->val.binary.data, i), inst);
		if (!any)
			ok = fail(c, "anyOf", "value matches none of the anyOf schemas");
	}
	if ((kw = getKeyJsonValueFromContainer(s, "oneOf", 5, NULL)))
	{
		int			matches = 0;

		for (i = 0; i < (int) JsonContainerSize(kw->val.binary.data) && matches < 2; i++)
			matches += validate_quiet(c, getIthJsonbValueFromContainer(kw->val.binary.data, i), inst);
		if (matches != 1)
			ok = fail(c, "oneOf", matches == 0 ? "value matches none of the oneOf schemas"
				      : "value matches more than one oneOf schema");
	}
	if ((kw = getKeyJsonValueFromContainer(s, "not", 3, NULL)) && validate_quiet(c, kw, inst))
		ok = fail(c, "not", "value matches the schema under not");
	return ok;
}

/* The keywords of one schema object applied to inst. */
static bool
validate_keywords(SchemaCtx *c, JsonbContainer *s, JsonbValue *inst)
{
	JsonbValue *kw;
	bool		ok = true;

	if ((kw = getKeyJsonValueFromContainer(s, "$ref", 4, NULL)))
	{
		JsonbValue *target = resolve_ref(c->root, kw);

		if (target == NULL)
			ok = fail(c, "$ref", "unresolvable $ref");
		else
			ok &= validate(c, target, inst);
	}

	if ((kw = getKeyJsonValueFromContainer(s, "type", 4, NULL)))
	{
		bool		match = false;

		if (kw->type == jbvString)
			match = spend(c, 1) && type_matches(kw->val.string.val, kw->val.string.len, inst);
		else if (spend(c, JsonContainerSize(kw->val.binary.data)))
		{
			int			i;

			for (i = 0; i < (int) JsonContainerSize(kw->val.binary.data) && !match; i++)
			{
				JsonbValue *t = getIthJsonbValueFromContainer(kw->val.binary.data, i);

				match = type_matches(t->val.string.val, t->val.string.len, inst);
			}
		}
		if (!match)
			ok = fail(c, "type", "%s is not of the type the schema requires", owj_type_name(inst));
	}
	if ((kw = getKeyJsonValueFromContainer(s, "enum", 4, NULL)) &&
		!enum_contains(c, kw->val.binary.data, inst))
		ok = fail(c, "enum", "value is not one of the enumerated values");
	if ((kw = getKeyJsonValueFromContainer(s, "const", 5, NULL)) &&
		!(spend(c, 1) && value_cmp(kw, inst) == 0))
		ok = fail(c, "const", "value is not the constant the schema requires");

	if (owj_is_object(inst))
		ok &= validate_object_keywords(c, s, inst);
	else if (owj_is_array(inst))
		ok &= validate_array_keywords(c, s, inst);
	else if (inst->type == jbvString)
		ok &= validate_string_keywords(c, s, inst);
	else if (inst->type == jbvNumeric)
		ok &= validate_number_keywords(c, s, inst);

	ok &= validate_combinators(c, s, inst);
	return ok;
}

static bool
validate(SchemaCtx *c, JsonbValue *schema, JsonbValue *inst)
{
	MemoryContext *scratch;
	MemoryContext old;
	bool		ok;

	check_stack_depth();
	if (!spend(c, 1))
		return false;
	if (schema->type == jbvBool)
	{
		if (!schema->val.boolean)
			fail(c, "false", "no value is allowed here");
		return schema->val.boolean;
	}
	if (c->depth >= SCHEMA_MAX_DEPTH)
	{
		/* refuse the whole value: under not or oneOf a quiet failure would pass it */
		exhaust(c, true, "$ref", "the value nests deeper than the %d schema applications a validation follows",
				SCHEMA_MAX_DEPTH);
		return false;
	}

	/*
	 * What an application allocates is freed when it returns, so memory
	 * follows the nesting and the answer's size, never the steps taken.
	 */
	c->depth++;
	scratch = &c->scratch[c->depth];
	if (*scratch == NULL)
		*scratch = AllocSetContextCreate(c->work, "openwop schema application",
										 ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(*scratch);
	ok = validate_keywords(c, schema->val.binary.data, inst);
	MemoryContextSwitchTo(old);
	MemoryContextReset(*scratch);
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

	memset(&c, 0, sizeof(c));
	c.work = work;
	c.root = JB_ROOT_IS_OBJECT(schema) ? &schema->root : NULL;
	initStringInfo(&c.errors);
	initStringInfo(&c.path);
	/* a safety net: a schema within SCHEMA_MAX_WEIGHT never reaches it */
	c.max_steps = (int64) SCHEMA_MAX_WEIGHT * (count_values(value) + 1);
	c.regex_left = REGEX_BUDGET;

	owj_root(schema, &root);
	owj_root(value, &inst);

	ok = validate(&c, &root, &inst);
	if (c.exhausted)
	{
		/* fail closed, with one clear error instead of a partial list */
		ok = false;
		resetStringInfo(&c.errors);
		resetStringInfo(&c.path);
		appendStringInfoString(&c.path, c.exhausted_path);
		c.nerrors = 0;
		c.quiet = 0;
		fail(&c, c.exhausted_keyword, "%s", c.exhausted_message);
	}
	MemoryContextSwitchTo(old);
	if (errors)
		*errors = psprintf("[%s]", c.errors.data);
	MemoryContextDelete(work);
	return ok;
}

/* ----------
 * The weight of a schema
 *
 * weight(s, levels) bounds the steps of applying s to a value, per value in
 * that value's subtree, with levels the schema nesting still allowed:
 *
 *   local(s) + sum of weight(c, levels - 1) over the subschemas c applied to
 *   the same value (allOf, anyOf, oneOf, not, the $ref target)
 *   + the most any child value can cost: the largest weight(t, levels - 1)
 *   over the subschemas t applied to children (each properties value,
 *   additionalProperties, items), plus SCHEMA_UNIQUE_WEIGHT under
 *   uniqueItems.
 *
 * A child value is reached by at most one of those per application, so the
 * steps of a validation are at most weight(root, SCHEMA_MAX_DEPTH) times the
 * values of the instance.  The bound is kept per kind of value (object,
 * array, string, other): only an object meets properties and required,
 * only an array items, only a string pattern, so a recursive schema that
 * offers an array branch and an object branch is not charged both.
 * Weights of $ref targets are memoized by (target, levels): a fan-out of
 * refs costs linear time to weigh, and sums saturate at SCHEMA_WEIGHT_CAP.
 * ----------
 */

typedef enum WeightKind
{
	W_OBJECT,
	W_ARRAY,
	W_STRING,
	W_OTHER,
	W_KINDS
} WeightKind;

typedef struct Weight
{
	int64		of[W_KINDS];
} Weight;

typedef struct WeightKey
{
	JsonbContainer *schema;
	int			levels;
} WeightKey;

typedef struct WeightEntry
{
	WeightKey	key;
	Weight		weight;
} WeightEntry;

typedef struct WeightCtx
{
	MemoryContext work;
	MemoryContext scratch[SCHEMA_MAX_DEPTH + 1];	/* per level, as in validate() */
	JsonbContainer *root;
	HTAB	   *memo;
} WeightCtx;

static void weigh(WeightCtx *c, JsonbValue *schema, int levels, Weight *w);

static int64
weight_sum(int64 a, int64 b)
{
	/* both are at most SCHEMA_WEIGHT_CAP: no overflow */
	return Min(a + b, SCHEMA_WEIGHT_CAP);
}

static int64
weight_max(const Weight *w)
{
	int64		max = 0;
	int			k;

	for (k = 0; k < W_KINDS; k++)
		max = Max(max, w->of[k]);
	return max;
}

static void
weight_add(Weight *w, const Weight *sub)
{
	int			k;

	for (k = 0; k < W_KINDS; k++)
		w->of[k] = weight_sum(w->of[k], sub->of[k]);
}

/* Comparisons of an enum search: a scan when short, else a binary search. */
static int64
enum_weight(int n)
{
	int			log2n = 0;

	if (n <= SCHEMA_ENUM_SCAN)
		return n;
	while (((int64) 1 << log2n) < n)
		log2n++;
	return 1 + log2n;
}

static void
weigh_subschemas(WeightCtx *c, JsonbValue *list, int levels, Weight *w)
{
	Weight		sub;
	int			i;

	for (i = 0; i < (int) JsonContainerSize(list->val.binary.data); i++)
	{
		weigh(c, getIthJsonbValueFromContainer(list->val.binary.data, i), levels, &sub);
		weight_add(w, &sub);
	}
}

static void
weigh_ref(WeightCtx *c, JsonbValue *target, int levels, Weight *w)
{
	WeightKey	key;
	WeightEntry *e;
	bool		found;

	if (target->type != jbvBinary)
	{
		weigh(c, target, levels, w);
		return;
	}
	memset(&key, 0, sizeof(key));	/* padding is part of the hash key */
	key.schema = target->val.binary.data;
	key.levels = levels;
	e = hash_search(c->memo, &key, HASH_FIND, NULL);
	if (e == NULL)
	{
		Weight		computed;

		weigh(c, target, levels, &computed);
		e = hash_search(c->memo, &key, HASH_ENTER, &found);
		e->weight = computed;
	}
	*w = e->weight;
}

/* The weight of one schema object, levels > 0. */
static void
weigh_keywords(WeightCtx *c, JsonbContainer *s, int levels, Weight *w)
{
	JsonbValue *kw;
	int64		local = 1;		/* the application */
	int64		child;
	Weight		sub;
	int			k;

	if ((kw = getKeyJsonValueFromContainer(s, "type", 4, NULL)))
		local += kw->type == jbvString ? 1 : JsonContainerSize(kw->val.binary.data);
	if ((kw = getKeyJsonValueFromContainer(s, "enum", 4, NULL)))
		local += enum_weight(JsonContainerSize(kw->val.binary.data));
	if (getKeyJsonValueFromContainer(s, "const", 5, NULL))
		local += 1;
	for (k = 0; k < W_KINDS; k++)
		w->of[k] = local;
	if (getKeyJsonValueFromContainer(s, "pattern", 7, NULL))
		w->of[W_STRING] += SCHEMA_PATTERN_WEIGHT;
	if (getKeyJsonValueFromContainer(s, "multipleOf", 10, NULL))
		w->of[W_OTHER] += SCHEMA_MULTIPLE_WEIGHT;
	if ((kw = getKeyJsonValueFromContainer(s, "required", 8, NULL)))
		w->of[W_OBJECT] += JsonContainerSize(kw->val.binary.data);

	/* subschemas applied to the same value */
	if ((kw = getKeyJsonValueFromContainer(s, "allOf", 5, NULL)))
		weigh_subschemas(c, kw, levels - 1, w);
	if ((kw = getKeyJsonValueFromContainer(s, "anyOf", 5, NULL)))
		weigh_subschemas(c, kw, levels - 1, w);
	if ((kw = getKeyJsonValueFromContainer(s, "oneOf", 5, NULL)))
		weigh_subschemas(c, kw, levels - 1, w);
	if ((kw = getKeyJsonValueFromContainer(s, "not", 3, NULL)))
	{
		weigh(c, kw, levels - 1, &sub);
		weight_add(w, &sub);
	}
	if ((kw = getKeyJsonValueFromContainer(s, "$ref", 4, NULL)))
	{
		JsonbValue *target = resolve_ref(c->root, kw);

		if (target != NULL)
		{
			weigh_ref(c, target, levels - 1, &sub);
			weight_add(w, &sub);
		}
	}

	/* the costliest subschema one child value may meet */
	child = 0;
	if ((kw = getKeyJsonValueFromContainer(s, "properties", 10, NULL)))
	{
		JsonbIterator *it = JsonbIteratorInit(kw->val.binary.data);
		JsonbValue	v;
		JsonbIteratorToken tok;

		while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		{
			if (tok != WJB_VALUE)
				continue;
			weigh(c, &v, levels - 1, &sub);
			child = Max(child, weight_max(&sub));
		}
	}
	if ((kw = getKeyJsonValueFromContainer(s, "additionalProperties", 20, NULL)))
	{
		weigh(c, kw, levels - 1, &sub);
		child = Max(child, weight_max(&sub));
	}
	w->of[W_OBJECT] = weight_sum(w->of[W_OBJECT], child);

	child = 0;
	if ((kw = getKeyJsonValueFromContainer(s, "items", 5, NULL)))
	{
		weigh(c, kw, levels - 1, &sub);
		child = weight_max(&sub);
	}
	if ((kw = getKeyJsonValueFromContainer(s, "uniqueItems", 11, NULL)) &&
		kw->type == jbvBool && kw->val.boolean)
		child += SCHEMA_UNIQUE_WEIGHT;
	w->of[W_ARRAY] = weight_sum(w->of[W_ARRAY], child);

	for (k = 0; k < W_KINDS; k++)
		w->of[k] = Min(w->of[k], SCHEMA_WEIGHT_CAP);
}

static void
weigh(WeightCtx *c, JsonbValue *schema, int levels, Weight *w)
{
	MemoryContext *scratch;
	MemoryContext old;
	int			k;

	check_stack_depth();
	/* a boolean is one step; so is an application nested too deep */
	if (schema->type != jbvBinary || levels == 0)
	{
		for (k = 0; k < W_KINDS; k++)
			w->of[k] = 1;
		return;
	}
	/* a schema is weighed up to 65 times: free each weighing's memory */
	scratch = &c->scratch[levels];
	if (*scratch == NULL)
		*scratch = AllocSetContextCreate(c->work, "openwop schema weight", ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(*scratch);
	weigh_keywords(c, schema->val.binary.data, levels, w);
	MemoryContextSwitchTo(old);
	MemoryContextReset(*scratch);
}

/* The weight of a well-formed schema: steps per value of an answer. */
static int64
schema_weight(JsonbContainer *root, JsonbValue *schema)
{
	WeightCtx	c;
	HASHCTL		ctl;
	Weight		w;

	memset(&c, 0, sizeof(c));
	ctl.keysize = sizeof(WeightKey);
	ctl.entrysize = sizeof(WeightEntry);
	ctl.hcxt = CurrentMemoryContext;
	c.work = CurrentMemoryContext;
	c.root = root;
	c.memo = hash_create("openwop schema weights", 64, &ctl,
						 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	weigh(&c, schema, SCHEMA_MAX_DEPTH, &w);
	return weight_max(&w);
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
	Regex	   *regex;			/* created at the first pattern */
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

	if (!owj_is_array(v) || JsonContainerSize(v->val.binary.data) == 0)
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

/* A pattern compiles exactly as the validator will compile it. */
static void
check_pattern(CheckCtx *c, JsonbValue *v)
{
	pcre2_code *code;
	char	   *error;

	if (c->regex == NULL)
		c->regex = regex_create();
	code = regex_compile(c->regex, v->val.string.val, v->val.string.len, &error);
	if (code == NULL)
		problem(c, "pattern \"%.*s\" is not a valid regular expression: %s",
				v->val.string.len, v->val.string.val, error);
	else
		pcre2_code_free(code);
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

		if (v->type != jbvString && !(owj_is_array(v) && (n = JsonContainerSize(v->val.binary.data)) > 0))
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
		if (!owj_is_array(v))
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

		if (!owj_is_object(v))
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

		if (!owj_is_array(v))
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
		if (owj_is_array(v))
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
		else
			check_pattern(c, v);
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
	if (!owj_is_object(schema))
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
 * NULL when schema uses only the supported subset, well-formed and within
 * SCHEMA_MAX_WEIGHT; otherwise a message naming the first problem and where
 * it is (a JSON pointer).
 */
char *
ow_schema_check(Jsonb *schema)
{
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext work = AllocSetContextCreate(caller, "openwop schema check",
											   ALLOCSET_DEFAULT_SIZES);
	CheckCtx	c;
	JsonbValue	root;
	char	   *result = NULL;

	MemoryContextSwitchTo(work);
	c.root = JB_ROOT_IS_OBJECT(schema) ? &schema->root : NULL;
	initStringInfo(&c.where);
	c.problem = NULL;
	c.regex = NULL;
	owj_root(schema, &root);
	check_schema(&c, &root);
	if (c.problem == NULL)
	{
		int64		weight = schema_weight(c.root, &root);

		if (weight > SCHEMA_MAX_WEIGHT)
			problem(&c, "the schema is too expensive to check: its weight is %s%lld, at most %d is allowed",
					weight >= SCHEMA_WEIGHT_CAP ? "over " : "", (long long) weight,
					SCHEMA_MAX_WEIGHT);
	}
	MemoryContextSwitchTo(caller);
	if (c.problem)
		result = pstrdup(c.problem);
	MemoryContextDelete(work);
	return result;
}

/*
 * openwop.json_schema_errors(schema jsonb, value jsonb) → jsonb
 *
 * The errors of value against schema, as an array of {path, keyword,
 * message}; [] when it is valid.  A schema outside the supported subset, or
 * heavier than SCHEMA_MAX_WEIGHT, is refused with validation_error.
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
	ow_check_json_arg(fcinfo, 0, "schema", false);
	ow_check_json_arg(fcinfo, 1, "value", false);
	schema = PG_GETARG_JSONB_P(0);
	value = PG_GETARG_JSONB_P(1);
	if ((problem = ow_schema_check(schema)) != NULL)
		ow_validation_error("schema", "unsupported or malformed schema: %s", problem);
	(void) ow_schema_validate(schema, value, &errors);
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(errors)));
}

/*
 * details.field of the first of a validation's errors (as
 * ow_schema_validate lists them): prefix, then the error's JSON pointer
 * path with array indexes in brackets (prefix "policy", /groups/0/required:
 * policy.groups[0].required).
 */
char *
ow_schema_error_field(const char *errors, const char *prefix)
{
	Jsonb	   *list = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(errors)));
	JsonbValue *first = getIthJsonbValueFromContainer(&list->root, 0);
	JsonbValue *path = first && first->type == jbvBinary ? owj_get_container(first->val.binary.data, "path") : NULL;
	char	   *p = path ? owj_string(path) : NULL;
	StringInfoData out;
	char	   *save = NULL;
	char	   *seg;

	initStringInfo(&out);
	appendStringInfoString(&out, prefix);
	if (p == NULL)
		return out.data;
	for (seg = strtok_r(p, "/", &save); seg; seg = strtok_r(NULL, "/", &save))
	{
		if (strspn(seg, "0123456789") == strlen(seg))
			appendStringInfo(&out, "[%s]", seg);
		else
			appendStringInfo(&out, ".%s", seg);
	}
	return out.data;
}
