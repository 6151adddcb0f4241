/*-------------------------------------------------------------------------
 *
 * idempotency.c
 *	  Idempotency-Key records for resolves (OpenWOP's idempotency rules,
 *	  https://openwop.dev/spec/v2/core/idempotency.html) and the
 *	  housekeeping sweep.
 *
 * A record (tenant, endpoint, key) is claimed with INSERT ... ON CONFLICT
 * DO NOTHING in the caller's transaction.  A concurrent request with the
 * same key waits on that uncommitted row, then finds the committed final
 * response and replays it; if the winner rolled back, the waiter becomes
 * the winner.  If the wait is cut short by lock_timeout the loser gets
 * idempotency_in_flight.  Refusals are never recorded: an error rolls the
 * whole transaction back, and a refused request changed nothing, so
 * repeating it yields the same refusal.
 *
 * A record belongs to the subject that made it: another subject presenting
 * the same key gets idempotency_key_mismatch, never the stored response.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/base.h"
#include "store/store.h"
#include "auth/auth.h"
#include "domain/domain.h"

#include "catalog/pg_type.h"
#include "common/cryptohash.h"
#include "common/sha2.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"

/* How long idempotency records are kept, in seconds (at least 24 hours). */
static int	ow_idempotency_retention = 86400;

/* Refuse a key outside the grammar (ow_valid_idempotency_key). */
void
ow_check_idempotency_key(const char *key)
{
	if (!ow_valid_idempotency_key(key))
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "field", "Idempotency-Key");
		ow_raise(OW_IDEMPOTENCY_KEY_INVALID, &d,
				 "Use 22 to 128 characters of A-Z a-z 0-9 . _ ~ -, e.g. a UUID.",
				 "the idempotency key is not 22 to 128 characters of A-Z a-z 0-9 . _ ~ -");
	}
}

/* Lowercase hex SHA-256 of the request's canonical jsonb text. */
static char *
request_digest(Jsonb *request)
{
	char	   *text = JsonbToCString(NULL, &request->root, VARSIZE(request));
	pg_cryptohash_ctx *ctx = pg_cryptohash_create(PG_SHA256);
	uint8		digest[PG_SHA256_DIGEST_LENGTH];
	char	   *hex = palloc(PG_SHA256_DIGEST_LENGTH * 2 + 1);
	int			i;

	if (ctx == NULL || pg_cryptohash_init(ctx) < 0 ||
		pg_cryptohash_update(ctx, (uint8 *) text, strlen(text)) < 0 ||
		pg_cryptohash_final(ctx, digest, sizeof(digest)) < 0)
		elog(ERROR, "could not compute SHA-256: %s", pg_cryptohash_error(ctx));
	pg_cryptohash_free(ctx);
	for (i = 0; i < PG_SHA256_DIGEST_LENGTH; i++)
		snprintf(hex + 2 * i, 3, "%02x", digest[i]);
	return hex;
}

static void
in_flight(const char *key)
{
	OwDetails	d;

	ow_details_init(&d);
	ow_raise(OW_IDEMPOTENCY_IN_FLIGHT, &d,
			 "Retry the request later with the same key.",
			 "a request with this idempotency key is still in flight");
}

/*
 * The claiming INSERT, in a subtransaction so that a lock_timeout while
 * waiting for a concurrent same-key request becomes idempotency_in_flight
 * instead of a 55P03 that PostgREST would answer with HTTP 500.
 */
typedef struct InsertCall
{
	OwQuery    *q;
	Datum	   *args;
	bool		inserted;
} InsertCall;

static void
run_insert(void *arg)
{
	InsertCall *c = arg;

	c->inserted = ow_exec(c->q, c->args, NULL, false, 0) == 1;
}

static bool
try_insert(OwQuery *q, Datum *args, const char *key)
{
	InsertCall	c = {q, args, false};
	ErrorData  *edata = ow_try_subtransaction(run_insert, &c);

	if (edata && edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE)
		ReThrowError(edata);
	if (edata)
		in_flight(key);
	return c.inserted;
}

static void
mismatch(void)
{
	OwDetails	d;

	ow_details_init(&d);
	ow_raise(OW_IDEMPOTENCY_KEY_MISMATCH, &d,
			 "Use a new idempotency key for a different request.",
			 "the idempotency key was already used with a different request");
}

/* A record is keyed by ($1 tenant, $2 endpoint, $3 key): the first three parameters. */
#define RECORD_TYPES TEXTOID, TEXTOID, TEXTOID

static void
record_args(Datum *args, const char *tenant, const char *endpoint, const char *key)
{
	args[0] = CStringGetTextDatum(tenant);
	args[1] = CStringGetTextDatum(endpoint);
	args[2] = CStringGetTextDatum(key);
}

/* A stored final response handed back again, marked as a replay. */
static Jsonb *
replay_response(Jsonb *stored)
{
	OwJson		j;

	owj_begin(&j);
	owj_members(&j, stored);
	owj_bool(&j, "idempotentReplay", true);
	return owj_end(&j);
}

/*
 * Claim (tenant, endpoint, key) for request, made by who.  Returns NULL
 * when this request is the one to process; or, for an earlier request of
 * the same subject with the same key and body, its stored final response
 * marked as a replay, built in resultctx.  The key is a parameter of
 * generic plans only, so no plan holds it.
 */
Jsonb *
ow_idempotency_claim(const char *tenant, const char *endpoint, const char *key,
					 Jsonb *request, const OwSubject *who, MemoryContext resultctx)
{
	static OwQuery insert = {"INSERT INTO openwop.idempotency_keys"
		" (tenant, endpoint, key, request_digest, expires_at, principal)"
		" VALUES ($1, $2, $3, $4, pg_catalog.now()"
		"   OPERATOR(pg_catalog.+) pg_catalog.make_interval(secs => $5), $6)"
		" ON CONFLICT DO NOTHING",
	6, {RECORD_TYPES, TEXTOID, INT4OID, JSONBOID}, SPI_OK_INSERT, true};
	static OwQuery read = {"SELECT request_digest, response,"
		"       expires_at OPERATOR(pg_catalog.<) pg_catalog.now(),"
		"       COALESCE(principal OPERATOR(pg_catalog.@>) $7, false)"
		"  FROM openwop.idempotency_keys"
		" WHERE tenant OPERATOR(pg_catalog.=) $1"
		"   AND endpoint OPERATOR(pg_catalog.=) $2"
		"   AND key OPERATOR(pg_catalog.=) $3",
	7, {RECORD_TYPES, TEXTOID, INT4OID, JSONBOID, JSONBOID}, SPI_OK_SELECT, true};
	static OwQuery drop = {"DELETE FROM openwop.idempotency_keys"
		" WHERE tenant OPERATOR(pg_catalog.=) $1"
		"   AND endpoint OPERATOR(pg_catalog.=) $2"
		"   AND key OPERATOR(pg_catalog.=) $3"
		"   AND expires_at OPERATOR(pg_catalog.<) pg_catalog.now()",
	3, {RECORD_TYPES}, SPI_OK_DELETE, true};
	char	   *digest = request_digest(request);
	Datum		args[7];
	int			attempt;
	OwJson		j;

	record_args(args, tenant, endpoint, key);
	args[3] = CStringGetTextDatum(digest);
	args[4] = Int32GetDatum(ow_idempotency_retention);
	args[5] = JsonbPGetDatum(ow_subject_jsonb(who));
	owj_begin(&j);
	owj_str(&j, "issuer", who->issuer);
	owj_str(&j, "subjectId", who->subject_id);
	args[6] = JsonbPGetDatum(owj_end(&j));

	for (attempt = 0; attempt < 2; attempt++)
	{
		Datum		response;
		bool		no_response;
		MemoryContext old;
		Jsonb	   *replay;

		if (try_insert(&insert, args, key))
			return NULL;

		if (ow_exec(&read, args, NULL, false, 1) == 0)
			continue;			/* removed meanwhile: claim again */
		if (ow_col_bool(0, 3))
		{
			/* past retention: forget it and claim the key afresh */
			(void) ow_exec(&drop, args, NULL, false, 0);
			continue;
		}
		/* another subject's key, or another body: never the stored response */
		if (!ow_col_bool(0, 4) || strcmp(ow_col_text(0, 1), digest) != 0)
			mismatch();
		response = ow_col_datum(0, 2, JSONBOID, &no_response);
		if (no_response)
			in_flight(key);
		old = MemoryContextSwitchTo(resultctx);
		replay = replay_response(DatumGetJsonbP(response));
		MemoryContextSwitchTo(old);
		return replay;
	}
	in_flight(key);
	return NULL;				/* not reached */
}

/* Store the final response of the request that claimed the key. */
void
ow_idempotency_complete(const char *tenant, const char *endpoint, const char *key,
						Jsonb *response)
{
	static OwQuery update = {"UPDATE openwop.idempotency_keys SET response = $4"
		" WHERE tenant OPERATOR(pg_catalog.=) $1"
		"   AND endpoint OPERATOR(pg_catalog.=) $2"
		"   AND key OPERATOR(pg_catalog.=) $3",
	4, {RECORD_TYPES, JSONBOID}, SPI_OK_UPDATE, true};
	Datum		args[4];

	record_args(args, tenant, endpoint, key);
	args[3] = JsonbPGetDatum(response);
	if (ow_exec(&update, args, NULL, false, 0) != 1)
		elog(ERROR, "could not store the response of idempotency key");
}

/* Remove at most max records past their retention; returns how many. */
int
ow_purge_idempotency(int max)
{
	static OwQuery purge = {"DELETE FROM openwop.idempotency_keys"
		" WHERE ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
		"   SELECT ctid FROM openwop.idempotency_keys"
		"    WHERE expires_at OPERATOR(pg_catalog.<) pg_catalog.now()"
		"    LIMIT $1 FOR UPDATE SKIP LOCKED))",
	1, {INT4OID}, SPI_OK_DELETE};
	Datum		args[1];

	args[0] = Int32GetDatum(max);
	return (int) ow_exec(&purge, args, NULL, false, 0);
}

/* ----------
 * Settings
 * ----------
 */

void
ow_define_idempotency_settings(void)
{
	DefineCustomIntVariable("openwop.idempotency_retention",
							"How long Idempotency-Key records are kept.",
							NULL,
							&ow_idempotency_retention,
							86400,
							86400,
							INT_MAX,
							PGC_SUSET,
							GUC_UNIT_S,
							NULL, NULL, NULL);
}
