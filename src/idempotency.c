/*-------------------------------------------------------------------------
 *
 * idempotency.c
 *	  Idempotency-Key records for resolves (OpenWOP idempotency, digest §8)
 *	  and the housekeeping sweep.
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

#include "openwop.h"

#include "catalog/pg_type.h"
#include "common/cryptohash.h"
#include "common/sha2.h"
#include "utils/builtins.h"
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
char *
ow_request_digest(Jsonb *request)
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
	SPIPlanPtr	plan;
	Datum	   *args;
	bool		inserted;
} InsertCall;

static void
run_insert(void *arg)
{
	InsertCall *c = arg;

	if (SPI_execute_plan(c->plan, c->args, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not record idempotency key");
	c->inserted = SPI_processed == 1;
}

static bool
try_insert(SPIPlanPtr plan, Datum *args, const char *key)
{
	InsertCall	c = {plan, args, false};
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

/*
 * Claim (tenant, endpoint, key) for a request with digest made by who.
 * Returns NULL when this request is the one to process, or the stored
 * final response of an earlier request of the same subject with the same
 * key and body (to replay).
 */
Jsonb *
ow_idempotency_claim(const char *tenant, const char *endpoint, const char *key,
					 const char *digest, const OwSubject *who)
{
	static SPIPlanPtr insert_plan = NULL;
	static SPIPlanPtr read_plan = NULL;
	static SPIPlanPtr drop_plan = NULL;
	Datum		args[7];
	int			attempt;
	OwJson		j;

	if (insert_plan == NULL)
	{
		Oid			types[7] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT4OID, JSONBOID, JSONBOID};

		insert_plan = ow_prepare_secret("INSERT INTO openwop.idempotency_keys"
								 " (tenant, endpoint, key, request_digest, expires_at, principal)"
								 " VALUES ($1, $2, $3, $4, pg_catalog.now()"
								 "   OPERATOR(pg_catalog.+) pg_catalog.make_interval(secs => $5), $6)"
								 " ON CONFLICT DO NOTHING", 7, types);
		read_plan = ow_prepare_secret("SELECT request_digest, response,"
							   "       expires_at OPERATOR(pg_catalog.<) pg_catalog.now(),"
							   "       COALESCE(principal OPERATOR(pg_catalog.@>) $7, false)"
							   "  FROM openwop.idempotency_keys"
							   " WHERE tenant OPERATOR(pg_catalog.=) $1"
							   "   AND endpoint OPERATOR(pg_catalog.=) $2"
							   "   AND key OPERATOR(pg_catalog.=) $3", 7, types);
		drop_plan = ow_prepare_secret("DELETE FROM openwop.idempotency_keys"
							   " WHERE tenant OPERATOR(pg_catalog.=) $1"
							   "   AND endpoint OPERATOR(pg_catalog.=) $2"
							   "   AND key OPERATOR(pg_catalog.=) $3"
							   "   AND expires_at OPERATOR(pg_catalog.<) pg_catalog.now()", 3, types);
	}
	args[0] = CStringGetTextDatum(tenant);
	args[1] = CStringGetTextDatum(endpoint);
	args[2] = CStringGetTextDatum(key);
	args[3] = CStringGetTextDatum(digest);
	args[4] = Int32GetDatum(ow_idempotency_retention);
	args[5] = JsonbPGetDatum(ow_subject_jsonb(who));
	owj_begin(&j);
	owj_str(&j, "issuer", who->issuer);
	owj_str(&j, "subjectId", who->subject_id);
	args[6] = JsonbPGetDatum(owj_end(&j));

	for (attempt = 0; attempt < 2; attempt++)
	{
		HeapTuple	tup;
		TupleDesc	desc;
		bool		isnull;
		char	   *stored_digest;
		Datum		response;
		bool		no_response;

		if (try_insert(insert_plan, args, key))
			return NULL;

		if (SPI_execute_plan(read_plan, args, NULL, false, 1) != SPI_OK_SELECT)
			elog(ERROR, "could not read idempotency key");
		if (SPI_processed == 0)
			continue;			/* removed meanwhile: claim again */
		tup = SPI_tuptable->vals[0];
		desc = SPI_tuptable->tupdesc;
		stored_digest = SPI_getvalue(tup, desc, 1);
		response = SPI_getbinval(tup, desc, 2, &no_response);
		if (DatumGetBool(SPI_getbinval(tup, desc, 3, &isnull)))
		{
			/* past retention: forget it and claim the key afresh */
			if (SPI_execute_plan(drop_plan, args, NULL, false, 0) != SPI_OK_DELETE)
				elog(ERROR, "could not remove an expired idempotency key");
			continue;
		}
		/* another subject's key, or another body: never the stored response */
		if (!DatumGetBool(SPI_getbinval(tup, desc, 4, &isnull)) || strcmp(stored_digest, digest) != 0)
			mismatch();
		if (no_response)
			in_flight(key);
		return DatumGetJsonbPCopy(response);
	}
	in_flight(key);
	return NULL;				/* not reached */
}

/* Store the final response of the request that claimed the key. */
void
ow_idempotency_complete(const char *tenant, const char *endpoint, const char *key,
						Jsonb *response)
{
	static SPIPlanPtr plan = NULL;
	Datum		args[4];

	if (plan == NULL)
	{
		Oid			types[4] = {TEXTOID, TEXTOID, TEXTOID, JSONBOID};

		plan = ow_prepare_secret("UPDATE openwop.idempotency_keys SET response = $4"
						  " WHERE tenant OPERATOR(pg_catalog.=) $1"
						  "   AND endpoint OPERATOR(pg_catalog.=) $2"
						  "   AND key OPERATOR(pg_catalog.=) $3", 4, types);
	}
	args[0] = CStringGetTextDatum(tenant);
	args[1] = CStringGetTextDatum(endpoint);
	args[2] = CStringGetTextDatum(key);
	args[3] = JsonbPGetDatum(response);
	if (SPI_execute_plan(plan, args, NULL, false, 0) != SPI_OK_UPDATE || SPI_processed != 1)
		elog(ERROR, "could not store the response of idempotency key");
}

/* Remove at most max records past their retention; returns how many. */
int
ow_purge_idempotency(int max)
{
	static SPIPlanPtr plan = NULL;
	Datum		args[1];

	if (plan == NULL)
	{
		Oid			types[1] = {INT4OID};

		plan = ow_prepare("DELETE FROM openwop.idempotency_keys"
						  " WHERE ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
						  "   SELECT ctid FROM openwop.idempotency_keys"
						  "    WHERE expires_at OPERATOR(pg_catalog.<) pg_catalog.now()"
						  "    LIMIT $1 FOR UPDATE SKIP LOCKED))", 1, types);
	}
	args[0] = Int32GetDatum(max);
	if (SPI_execute_plan(plan, args, NULL, false, 0) != SPI_OK_DELETE)
		elog(ERROR, "could not remove expired idempotency keys");
	return (int) SPI_processed;
}

/* A stored final response handed back again, marked as a replay. */
Jsonb *
ow_replay_response(Jsonb *stored)
{
	OwJson		j;

	owj_begin(&j);
	owj_members(&j, stored);
	owj_bool(&j, "idempotentReplay", true);
	return owj_end(&j);
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
