/*-------------------------------------------------------------------------
 *
 * chain.c
 *	  The event log's hash chain: each event's hash is the SHA-256 of its
 *	  canonical form, which names the hash of the run's event before it.
 *
 * The canonical form of an event is the text jsonb writes for the array
 *
 *	  [prev, sequence, type, node_id, created_at, schema_version,
 *	   causation_id, payload]
 *
 * prev: the lowercase hex of the previous event's hash (null for event 0);
 * created_at: microseconds since 1970-01-01 00:00 UTC; node_id and
 * causation_id null when absent; the text in the database's encoding.  It
 * is what jsonb_build_array(...)::text gives, so a checker without the
 * extension recomputes it with psql and sha256sum (tools/verify-run).
 * Every column of the event but its key is in it: tampering with any of
 * them breaks the chain at that event, and a missing or moved event breaks
 * the sequence.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/base.h"
#include "store/internal.h"

#include "common/cryptohash.h"
#include "datatype/timestamp.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/numeric.h"

#ifdef USE_OPENSSL
#include <openssl/err.h>
#include <openssl/evp.h>
#endif

PG_FUNCTION_INFO_V1(ow_event_hash_sql);

/* microseconds from 1970-01-01 to PostgreSQL's epoch, 2000-01-01 */
#define UNIX_EPOCH_USECS \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY)

static const char hex_digits[] = "0123456789abcdef";

/*
 * n bytes onto s.  Inline: the canonical form is written in pieces of a
 * few bytes, and a call to appendBinaryStringInfo for each cost more than
 * the hash.
 */
static inline void
put(StringInfo s, const char *bytes, int n)
{
	if (s->len + n >= s->maxlen)
		enlargeStringInfo(s, n);
	memcpy(s->data + s->len, bytes, n);
	s->len += n;
	s->data[s->len] = '\0';
}

/*
 * str (len bytes) as a JSON string, escaped byte for byte as jsonb's text
 * output escapes it (the checker compares with that).
 */
static void
put_string(StringInfo s, const char *str, int len)
{
	const char *end = str + len;
	char	   *d;

	enlargeStringInfo(s, len + 2);
	d = s->data + s->len;
	*d++ = '"';
	for (; str < end; str++)
	{
		unsigned char c = (unsigned char) *str;
		char		esc[6] = {'\\', 'u', '0', '0'};
		int			n = 2;

		if (c >= 0x20 && c != '"' && c != '\\')
		{
			*d++ = c;
			continue;
		}
		switch (c)
		{
			case '\b': esc[1] = 'b'; break;
			case '\f': esc[1] = 'f'; break;
			case '\n': esc[1] = 'n'; break;
			case '\r': esc[1] = 'r'; break;
			case '\t': esc[1] = 't'; break;
			case '"':
			case '\\':
				esc[1] = c;
				break;
			default:
				esc[4] = hex_digits[c >> 4];
				esc[5] = hex_digits[c & 0xf];
				n = 6;
		}
		/* room for the escape and the rest, as enlarged above */
		s->len = d - s->data;
		enlargeStringInfo(s, n + (end - str) + 1);
		d = s->data + s->len;
		memcpy(d, esc, n);
		d += n;
	}
	*d++ = '"';
	s->len = d - s->data;
	*d = '\0';
}

static void
put_text_or_null(StringInfo s, const char *v)
{
	put(s, ", ", 2);
	if (v)
		put_string(s, v, strlen(v));
	else
		put(s, "null", 4);
}

static void
put_int64(StringInfo s, int64 v)
{
	char		digits[MAXINT8LEN + 1];

	put(s, digits, pg_lltoa(v, digits));
}

static void
put_scalar(StringInfo s, const JsonbValue *v)
{
	switch (v->type)
	{
		case jbvNull:
			put(s, "null", 4);
			break;
		case jbvString:
			put_string(s, v->val.string.val, v->val.string.len);
			break;
		case jbvNumeric:
			appendStringInfoString(s, DatumGetCString(DirectFunctionCall1(numeric_out,
																		  NumericGetDatum(v->val.numeric))));
			break;
		case jbvBool:
			if (v->val.boolean)
				put(s, "true", 4);
			else
				put(s, "false", 5);
			break;
		default:
			elog(ERROR, "unexpected jsonb scalar of type %d", (int) v->type);
	}
}

/*
 * j as jsonb's text output writes it (JsonbToCString): ", " between
 * members and elements, ": " after a key, a scalar root bare.  Written
 * here, with the string escapes above, at a third of its cost.
 */
static void
put_jsonb(StringInfo s, Jsonb *j)
{
	JsonbIterator *it = JsonbIteratorInit(&j->root);
	JsonbValue	v;
	JsonbIteratorToken tok;
	bool		first = true;	/* nothing written yet in the open container */

	while ((tok = JsonbIteratorNext(&it, &v, false)) != WJB_DONE)
	{
		switch (tok)
		{
			case WJB_BEGIN_ARRAY:
			case WJB_BEGIN_OBJECT:
				if (tok == WJB_BEGIN_ARRAY && v.val.array.rawScalar)
					break;
				if (!first)
					put(s, ", ", 2);
				put(s, tok == WJB_BEGIN_ARRAY ? "[" : "{", 1);
				first = true;
				break;
			case WJB_KEY:
				if (!first)
					put(s, ", ", 2);
				put_scalar(s, &v);
				put(s, ": ", 2);
				first = true;	/* its value follows, without a comma */
				break;
			case WJB_ELEM:
				if (!first)
					put(s, ", ", 2);
				/* FALLTHROUGH */
			case WJB_VALUE:
				put_scalar(s, &v);
				first = false;
				break;
			case WJB_END_ARRAY:
				if (!JB_ROOT_IS_SCALAR(j))
					put(s, "]", 1);
				first = false;
				break;
			case WJB_END_OBJECT:
				put(s, "}", 1);
				first = false;
				break;
			default:
				elog(ERROR, "unexpected jsonb iterator token %d", (int) tok);
		}
	}
}

/* A hash in lowercase hex, into hex (OW_EVENT_HASH_HEX bytes, the last a NUL). */
void
ow_event_hash_hex(const uint8 *hash, char *hex)
{
	int			i;

	for (i = 0; i < OW_EVENT_HASH_LEN; i++)
	{
		hex[2 * i] = hex_digits[hash[i] >> 4];
		hex[2 * i + 1] = hex_digits[hash[i] & 0xf];
	}
	hex[2 * OW_EVENT_HASH_LEN] = '\0';
}

/* The canonical form of an event (see the file's head), into s. */
static void
canonical_form(StringInfo s, const uint8 *prev, int64 seq, const char *type, const char *node_id,
			   Jsonb *payload, TimestampTz created_at, int32 schema_version, const char *causation_id)
{
	enlargeStringInfo(s, VARSIZE(payload) + 256);
	put(s, "[", 1);
	if (prev)
	{
		char		hex[OW_EVENT_HASH_HEX];

		ow_event_hash_hex(prev, hex);
		put(s, "\"", 1);
		put(s, hex, OW_EVENT_HASH_HEX - 1);
		put(s, "\"", 1);
	}
	else
		put(s, "null", 4);
	put(s, ", ", 2);
	put_int64(s, seq);
	put(s, ", ", 2);
	put_string(s, type, strlen(type));
	put_text_or_null(s, node_id);
	put(s, ", ", 2);
	put_int64(s, (int64) created_at + UNIX_EPOCH_USECS);
	put(s, ", ", 2);
	put_int64(s, schema_version);
	put_text_or_null(s, causation_id);
	put(s, ", ", 2);
	put_jsonb(s, payload);
	put(s, "]", 1);
}

/*
 * SHA-256 of data into out.  With OpenSSL, through one digest and one
 * context fetched once per backend: pg_cryptohash's create, init and free
 * for each event (a provider fetch under a lock, an error-queue clear)
 * cost more than hashing a small event.  Without it, PostgreSQL's own.
 */
static void
sha256(const char *data, int len, int64 seq, uint8 *out)
{
#ifdef USE_OPENSSL
	static const EVP_MD *md;
	static EVP_MD_CTX *ctx;

	if (ctx == NULL)
	{
		if (md == NULL)
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
			md = EVP_MD_fetch(NULL, "SHA256", NULL);	/* fetched once, not at each init */
#else
			md = EVP_sha256();
#endif
		if (md != NULL)
			ctx = EVP_MD_CTX_new();
	}
	if (ctx == NULL || !EVP_DigestInit_ex(ctx, md, NULL) ||
		!EVP_DigestUpdate(ctx, data, len) || !EVP_DigestFinal_ex(ctx, out, NULL))
	{
		unsigned long e = ERR_get_error();
		const char *why = e ? ERR_reason_error_string(e) : NULL;

		ERR_clear_error();		/* leave nothing queued for the server's own TLS */
		elog(ERROR, "could not compute the hash of event " INT64_FORMAT ": %s", seq,
			 why ? why : "OpenSSL's SHA-256 failed");
	}
#else
	pg_cryptohash_ctx *ctx = pg_cryptohash_create(PG_SHA256);

	if (ctx == NULL || pg_cryptohash_init(ctx) < 0 ||
		pg_cryptohash_update(ctx, (const uint8 *) data, len) < 0 ||
		pg_cryptohash_final(ctx, out, OW_EVENT_HASH_LEN) < 0)
		elog(ERROR, "could not compute the hash of event " INT64_FORMAT ": %s", seq,
			 ctx ? pg_cryptohash_error(ctx) : "out of memory");
	pg_cryptohash_free(ctx);
#endif
}

/*
 * The hash of an event chained to prev (NULL: the run's first), into out.
 * buf: a StringInfo the caller reuses across events, or NULL.
 */
void
ow_event_hash(StringInfo buf, const uint8 *prev, int64 seq, const char *type, const char *node_id,
			  Jsonb *payload, TimestampTz created_at, int32 schema_version,
			  const char *causation_id, uint8 *out)
{
	StringInfoData own;

	if (buf == NULL)
	{
		initStringInfo(&own);
		buf = &own;
	}
	else
		resetStringInfo(buf);
	canonical_form(buf, prev, seq, type, node_id, payload, created_at, schema_version, causation_id);
	sha256(buf->data, buf->len, seq, out);
	if (buf == &own)
		pfree(own.data);
}

/* A hash as the bytea the tables store. */
Datum
ow_event_hash_datum(const uint8 *hash)
{
	bytea	   *b = palloc(VARHDRSZ + OW_EVENT_HASH_LEN);

	SET_VARSIZE(b, VARHDRSZ + OW_EVENT_HASH_LEN);
	memcpy(VARDATA(b), hash, OW_EVENT_HASH_LEN);
	return PointerGetDatum(b);
}

/* A stored hash, if it has the length of one (else false: not a hash this chain made). */
bool
ow_event_hash_read(Datum d, uint8 *out)
{
	bytea	   *b = DatumGetByteaPP(d);

	if (VARSIZE_ANY_EXHDR(b) != OW_EVENT_HASH_LEN)
		return false;
	memcpy(out, VARDATA_ANY(b), OW_EVENT_HASH_LEN);
	return true;
}

/*
 * openwop.event_hash(prev bytea, sequence bigint, type text, node_id text,
 *	payload jsonb, created_at timestamptz, schema_version integer,
 *	causation_id text) → bytea
 *
 * One link of the chain: the transition of the aggregate
 * openwop.event_chain(...), which a fork's copy and verify_run() use as a
 * window over a run's events in sequence order.
 */
Datum
ow_event_hash_sql(PG_FUNCTION_ARGS)
{
	uint8		prev[OW_EVENT_HASH_LEN];
	uint8		out[OW_EVENT_HASH_LEN];
	int			i;

	for (i = 1; i <= 6; i++)
		if (PG_ARGISNULL(i) && i != 3)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("openwop.event_hash: only prev, node_id and causation_id may be null")));
	if (!PG_ARGISNULL(0) && !ow_event_hash_read(PG_GETARG_DATUM(0), prev))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("openwop.event_hash: prev must be a hash of %d bytes", OW_EVENT_HASH_LEN)));
	ow_event_hash(NULL, PG_ARGISNULL(0) ? NULL : prev, PG_GETARG_INT64(1),
				  text_to_cstring(PG_GETARG_TEXT_PP(2)),
				  PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3)),
				  PG_GETARG_JSONB_P(4), PG_GETARG_TIMESTAMPTZ(5), PG_GETARG_INT32(6),
				  PG_ARGISNULL(7) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(7)), out);
	PG_RETURN_DATUM(ow_event_hash_datum(out));
}
