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
#include "utils/json.h"

PG_FUNCTION_INFO_V1(ow_event_hash_sql);

/* microseconds from 1970-01-01 to PostgreSQL's epoch, 2000-01-01 */
#define UNIX_EPOCH_USECS \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY)

static void
put_text_or_null(StringInfo s, const char *v)
{
	appendStringInfoString(s, ", ");
	if (v)
		escape_json(s, v);
	else
		appendStringInfoString(s, "null");
}

/* A hash in lowercase hex, into hex (OW_EVENT_HASH_HEX bytes, the last a NUL). */
void
ow_event_hash_hex(const uint8 *hash, char *hex)
{
	static const char digits[] = "0123456789abcdef";
	int			i;

	for (i = 0; i < OW_EVENT_HASH_LEN; i++)
	{
		hex[2 * i] = digits[hash[i] >> 4];
		hex[2 * i + 1] = digits[hash[i] & 0xf];
	}
	hex[2 * OW_EVENT_HASH_LEN] = '\0';
}

/* The canonical form of an event (see the file's head), into s. */
static void
canonical_form(StringInfo s, const uint8 *prev, int64 seq, const char *type, const char *node_id,
			   Jsonb *payload, TimestampTz created_at, int32 schema_version, const char *causation_id)
{
	appendStringInfoChar(s, '[');
	if (prev)
	{
		char		hex[OW_EVENT_HASH_HEX];

		ow_event_hash_hex(prev, hex);
		appendStringInfo(s, "\"%s\"", hex);
	}
	else
		appendStringInfoString(s, "null");
	appendStringInfo(s, ", " INT64_FORMAT ", ", seq);
	escape_json(s, type);
	put_text_or_null(s, node_id);
	appendStringInfo(s, ", " INT64_FORMAT ", %d", (int64) created_at + UNIX_EPOCH_USECS, schema_version);
	put_text_or_null(s, causation_id);
	appendStringInfoString(s, ", ");
	(void) JsonbToCString(s, &payload->root, VARSIZE(payload));
	appendStringInfoChar(s, ']');
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
	pg_cryptohash_ctx *ctx;

	if (buf == NULL)
	{
		initStringInfo(&own);
		buf = &own;
	}
	else
		resetStringInfo(buf);
	canonical_form(buf, prev, seq, type, node_id, payload, created_at, schema_version, causation_id);
	ctx = pg_cryptohash_create(PG_SHA256);
	if (ctx == NULL || pg_cryptohash_init(ctx) < 0 ||
		pg_cryptohash_update(ctx, (const uint8 *) buf->data, buf->len) < 0 ||
		pg_cryptohash_final(ctx, out, OW_EVENT_HASH_LEN) < 0)
		elog(ERROR, "could not compute the hash of event " INT64_FORMAT ": %s", seq,
			 ctx ? pg_cryptohash_error(ctx) : "out of memory");
	pg_cryptohash_free(ctx);
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
