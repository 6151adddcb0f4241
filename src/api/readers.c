/*-------------------------------------------------------------------------
 *
 * readers.c
 *	  The read-only API: events(), verify_run(), run_snapshot(), capabilities(),
 *	  current_caller(), and listen() / unlisten(), the notifications of the
 *	  caller's tenant.  Reads are tenant-checked like every call: a run of
 *	  another tenant is refused from its id alone.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "ipc/ipc.h"
#include "base/base.h"
#include "store/store.h"
#include "auth/auth.h"
#include "api/api.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/async.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#define OW_EVENTS_MAX 10000

/* Run q, keyed by ($1 tenant, $2 run id), for the run's row: 404 when there is none. */
static void
read_run(OwQuery *q, Datum *args, const char *tenant, const char *run_id)
{
	args[0] = CStringGetTextDatum(tenant);
	args[1] = CStringGetTextDatum(run_id);
	if (ow_exec(q, args, NULL, true, 1) == 0)
		ow_run_not_found(run_id);
}

PG_FUNCTION_INFO_V1(ow_events);
/*
 * openwop.events(run_id, after_sequence, max) → SETOF jsonb
 *
 * Envelopes in sequence order: eventId, runId, type, payload, timestamp,
 * sequence, schemaVersion, and nodeId / causationId when present.
 */
Datum
ow_events(PG_FUNCTION_ARGS)
{
	static OwQuery run_q = {"SELECT event_prefix FROM openwop.runs"
		" WHERE tenant OPERATOR(pg_catalog.=) $1"
		"   AND run_id OPERATOR(pg_catalog.=) $2",
	2, {TEXTOID, TEXTOID}, SPI_OK_SELECT};
	static OwQuery events_q = {"SELECT sequence, type, node_id, payload, created_at,"
		"       schema_version, causation_id"
		"  FROM openwop.events"
		" WHERE tenant OPERATOR(pg_catalog.=) $1"
		"   AND run_id OPERATOR(pg_catalog.=) $2"
		"   AND sequence OPERATOR(pg_catalog.>) $3"
		" ORDER BY sequence LIMIT $4",
	4, {TEXTOID, TEXTOID, INT8OID, INT4OID}, SPI_OK_SELECT};
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *run_input;
	int64		after;
	int32		max;
	char	   *tenant;
	char	   *run_id;
	char	   *prefix;
	Datum		args[4];
	OwCall		call;
	uint64		n;
	uint64		i;
	MemoryContext rowctx;

	if (PG_ARGISNULL(0))
		ow_validation_error("runId", "run_id must not be null");
	run_input = text_to_cstring(PG_GETARG_TEXT_PP(0));
	after = PG_ARGISNULL(1) ? -1 : PG_GETARG_INT64(1);
	max = PG_ARGISNULL(2) ? 1000 : PG_GETARG_INT32(2);
	if (after < -1)
		ow_validation_error("afterSequence", "after_sequence must be -1 or greater, not " INT64_FORMAT, after);
	if (max < 1 || max > OW_EVENTS_MAX)
		ow_validation_error("max", "max must be between 1 and %d, not %d", OW_EVENTS_MAX, max);

	ow_caller(&call.caller);
	tenant = call.caller.subject.tenant;
	run_id = ow_normalize_run_id(run_input, tenant);

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);

	ow_call_enter(&call);
	read_run(&run_q, args, tenant, run_id);
	prefix = ow_col_text(0, 1);

	args[2] = Int64GetDatum(after);
	args[3] = Int32GetDatum(max);
	n = ow_exec(&events_q, args, NULL, true, 0);

	rowctx = AllocSetContextCreate(CurrentMemoryContext, "openwop events row",
								   ALLOCSET_DEFAULT_SIZES);
	for (i = 0; i < n; i++)
	{
		MemoryContext old = MemoryContextSwitchTo(rowctx);
		bool		isnull;
		int64		seq = ow_col_int64(i, 1);
		char	   *node_id = ow_col_text(i, 3);
		char	   *causation = ow_col_text(i, 7);
		char	   *type = ow_col_text(i, 2);
		OwJson		j;
		Datum		value;
		bool		nullflag = false;

		owj_begin(&j);
		owj_str(&j, "eventId", psprintf("%s." INT64_FORMAT, prefix, seq));
		owj_str(&j, "runId", run_id);
		owj_str(&j, "type", type);
		owj_jsonb(&j, "payload", ow_event_payload(type, DatumGetJsonbP(ow_col_datum(i, 4, JSONBOID, &isnull)),
												 tenant));
		owj_str(&j, "timestamp", owj_iso8601(DatumGetTimestampTz(ow_col_datum(i, 5, TIMESTAMPTZOID, &isnull))));
		owj_int(&j, "sequence", seq);
		owj_int(&j, "schemaVersion", ow_col_int64(i, 6));
		if (node_id)
			owj_str(&j, "nodeId", node_id);
		if (causation)
			owj_str(&j, "causationId", causation);
		value = JsonbPGetDatum(owj_end(&j));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &value, &nullflag);
		MemoryContextSwitchTo(old);
		/* each envelope is copied into the tuplestore: free the row's work */
		MemoryContextReset(rowctx);
	}

	ow_call_end(&call);
	ow_call_finish(&call);
	return (Datum) 0;
}

/* Member key from jsonb column col of the row read, unless it is null. */
static void
optional_jsonb(OwJson *j, const char *key, int col)
{
	bool		isnull;
	Datum		d = ow_col_datum(0, col, JSONBOID, &isnull);

	if (!isnull)
		owj_jsonb(j, key, DatumGetJsonbP(d));
}

PG_FUNCTION_INFO_V1(ow_verify_run);
/*
 * openwop.verify_run(run_id) → jsonb
 *
 * Recomputes the run's hash chain (store/chain.c) from its events in
 * sequence order: {valid, brokenAt, events, head}.  brokenAt is the
 * sequence of the first event that is missing or moved (its place holds
 * another), or whose stored hash is not its canonical form's; else, when
 * the run row counts more events than there are, the first missing one;
 * else, when the run row's head is not the last event's hash, the last
 * event; null when valid.  head: the last event's stored hash, to compare
 * with a receipt.
 */
Datum
ow_verify_run(PG_FUNCTION_ARGS)
{
	static OwQuery run_q = {"SELECT next_sequence, event_hash FROM openwop.runs"
		" WHERE tenant OPERATOR(pg_catalog.=) $1"
		"   AND run_id OPERATOR(pg_catalog.=) $2",
	2, {TEXTOID, TEXTOID}, SPI_OK_SELECT};
	static OwQuery chain_q = {"SELECT pg_catalog.count(*),"
		"       pg_catalog.min(CASE WHEN c.position OPERATOR(pg_catalog.<>) c.sequence THEN c.position"
		"                           WHEN c.hash IS DISTINCT FROM c.expected THEN c.sequence END),"
		"       (SELECT e.hash FROM openwop.events e"
		"         WHERE e.tenant OPERATOR(pg_catalog.=) $1 AND e.run_id OPERATOR(pg_catalog.=) $2"
		"         ORDER BY e.sequence DESC LIMIT 1)"
		"  FROM (SELECT e.sequence, e.hash,"
		"               pg_catalog.row_number() OVER w OPERATOR(pg_catalog.-) 1 AS position,"
		"               openwop.event_chain(e.sequence, e.type, e.node_id, e.payload, e.created_at,"
		"                                   e.schema_version, e.causation_id) OVER w AS expected"
		"          FROM openwop.events e"
		"         WHERE e.tenant OPERATOR(pg_catalog.=) $1 AND e.run_id OPERATOR(pg_catalog.=) $2"
		"        WINDOW w AS (ORDER BY e.sequence ROWS UNBOUNDED PRECEDING)) c",
	2, {TEXTOID, TEXTOID}, SPI_OK_SELECT};
	char	   *tenant;
	char	   *run_id;
	Datum		args[2];
	OwCall		call;
	int64		next;
	int64		count;
	int64		broken = -1;
	bool		isnull;
	Datum		row_head;
	bool		row_head_null;
	Datum		head;
	bool		head_null;
	uint8		head_hash[OW_EVENT_HASH_LEN];
	bool		has_head;
	char		hex[OW_EVENT_HASH_HEX];
	OwJson		j;

	if (PG_ARGISNULL(0))
		ow_validation_error("runId", "run_id must not be null");
	ow_caller(&call.caller);
	tenant = call.caller.subject.tenant;
	run_id = ow_normalize_run_id(text_to_cstring(PG_GETARG_TEXT_PP(0)), tenant);

	ow_call_enter(&call);
	read_run(&run_q, args, tenant, run_id);
	next = ow_col_int64(0, 1);
	row_head = ow_col_datum(0, 2, BYTEAOID, &row_head_null);
	if (ow_exec(&chain_q, args, NULL, true, 1) != 1)
		elog(ERROR, "could not verify run \"%s\"", run_id);
	count = ow_col_int64(0, 1);
	(void) ow_col_datum(0, 2, INT8OID, &isnull);
	head = ow_col_datum(0, 3, BYTEAOID, &head_null);
	has_head = !head_null && ow_event_hash_read(head, head_hash);
	if (!isnull)
		broken = ow_col_int64(0, 2);
	else if (count < next)
		broken = count;
	else if (count > 0 && (row_head_null || head_null ||
						   !DatumGetBool(DirectFunctionCall2(byteaeq, row_head, head))))
		broken = count - 1;
	ow_call_end(&call);

	/* in jsonb's key order */
	owj_begin(&j);
	if (has_head)
	{
		ow_event_hash_hex(head_hash, hex);
		owj_str(&j, "head", hex);
	}
	else
		owj_null(&j, "head");
	owj_bool(&j, "valid", broken < 0);
	owj_int(&j, "events", count);
	if (broken >= 0)
		owj_int(&j, "brokenAt", broken);
	else
		owj_null(&j, "brokenAt");
	ow_call_finish(&call);
	PG_RETURN_JSONB_P(owj_end(&j));
}

PG_FUNCTION_INFO_V1(ow_run_snapshot);
/*
 * openwop.run_snapshot(run_id) → jsonb: the OpenWOP RunSnapshot (closed
 * object; optional members are omitted when unset), and the requester
 * create_run named as openwop-requestedBy.
 */
Datum
ow_run_snapshot(PG_FUNCTION_ARGS)
{
	static OwQuery q = {"SELECT workflow_id, status, owner, current_node_id,"
		"       error, configurable, metadata, requested_by"
		"  FROM openwop.runs"
		" WHERE tenant OPERATOR(pg_catalog.=) $1"
		"   AND run_id OPERATOR(pg_catalog.=) $2",
	2, {TEXTOID, TEXTOID}, SPI_OK_SELECT};
	char	   *tenant;
	char	   *run_id;
	Datum		args[2];
	OwCall		call;
	OwJson		j;
	Jsonb	   *result;
	bool		isnull;
	char	   *s;

	if (PG_ARGISNULL(0))
		ow_validation_error("runId", "run_id must not be null");
	ow_caller(&call.caller);
	tenant = call.caller.subject.tenant;
	run_id = ow_normalize_run_id(text_to_cstring(PG_GETARG_TEXT_PP(0)), tenant);

	ow_call_enter(&call);
	read_run(&q, args, tenant, run_id);

	/* the row stays readable until ow_call_finish */
	ow_call_end(&call);
	owj_begin(&j);
	owj_str(&j, "runId", run_id);
	owj_str(&j, "workflowId", ow_col_text(0, 1));
	owj_str(&j, "status", ow_col_text(0, 2));
	owj_begin_object(&j, "owner");
	owj_str(&j, "tenant", tenant);
	owj_jsonb(&j, "subject", DatumGetJsonbP(ow_col_datum(0, 3, JSONBOID, &isnull)));
	owj_end_object(&j);
	owj_int(&j, "eventLogSchemaVersion", 1);
	if ((s = ow_col_text(0, 4)) != NULL)
		owj_str(&j, "currentNodeId", s);
	optional_jsonb(&j, "error", 5);
	optional_jsonb(&j, "configurable", 6);
	optional_jsonb(&j, "metadata", 7);
	/* outside the spec's closed snapshot: under the vendor hatch */
	if ((s = ow_col_text(0, 8)) != NULL)
		owj_str(&j, "openwop-requestedBy", s);
	result = owj_end(&j);
	ow_call_finish(&call);
	PG_RETURN_JSONB_P(result);
}

PG_FUNCTION_INFO_V1(ow_capabilities);
/*
 * openwop.capabilities() → jsonb: the interrupt facet as advertised; the
 * replay family's modes once the schema has fork_run() (0.8.0 on);
 * conversationPrimitive, a family with no facets
 * whose presence is the claim ({}), once the schema has the conversations
 * (0.8.0 on); and oauth.credentialInterrupt while
 * openwop.credential_interrupts is on and the schema has
 * confirm_credential() (0.8.0 on).
 */
Datum
ow_capabilities(PG_FUNCTION_ARGS)
{
	OwJson		j;

	ow_require_current_schema();
	owj_begin(&j);
	owj_begin_object(&j, "interrupt");
	owj_str_array(&j, "tokenAlgs", list_make1("hs256"));
	owj_str_array(&j, "refKinds", list_make3("principal", "group", "role"));
	owj_bool(&j, "callbackDelivery", false);
	owj_end_object(&j);
	/* forkRun (forks.c) */
	owj_begin_object(&j, "replay");
	owj_str_array(&j, "modes", list_make2("replay", "branch"));
	owj_end_object(&j);
	owj_begin_object(&j, "conversationPrimitive");
	owj_end_object(&j);
	/* presence is the claim: the facet is there only while it holds */
	if (ow_credential_interrupts)
	{
		owj_begin_object(&j, "oauth");
		owj_bool(&j, "credentialInterrupt", true);
		owj_end_object(&j);
	}
	PG_RETURN_JSONB_P(owj_end(&j));
}

PG_FUNCTION_INFO_V1(ow_current_caller);
/*
 * openwop.current_caller() → jsonb: who this session is to openwop,
 * {subject, tenant, source, scopes}, and forwardedBy (the forwarder's
 * login) for a forwarded caller, for a DBA setting up roles, bindings,
 * PostgREST and routers.  It reads no table, so it needs no call bracket.
 */
Datum
ow_current_caller(PG_FUNCTION_ARGS)
{
	OwCaller	c;
	OwJson		j;

	ow_require_current_schema();
	ow_caller(&c);
	owj_begin(&j);
	owj_subject(&j, "subject", &c.subject);
	owj_str(&j, "tenant", c.subject.tenant);
	owj_str(&j, "source", c.forwarded_by ? "openwop.forwarded_caller" :
			c.claims ? "request.jwt.claims" : "session_user");
	owj_str_array(&j, "scopes", ow_has_scope(&c) ? list_make1(OW_SCOPE) : NIL);
	if (c.forwarded_by)
		owj_str(&j, "forwardedBy", c.forwarded_by);
	PG_RETURN_JSONB_P(owj_end(&j));
}

/*
 * The channel of the caller's tenant, for a session that may listen: a SQL
 * login's own session, not a request session (a pooled PostgREST
 * connection would hold every tenant's notifications it never reads, and
 * keep the server's notification queue from being freed) nor a router's
 * forwarding session; refused where LISTEN is (a security-restricted
 * operation, parallel mode, recovery, a background process).
 */
static text *
listen_channel(const char *function, char *channel)
{
	OwCaller	caller;

	if (InSecurityRestrictedOperation())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("cannot run %s within security-restricted operation", function)));
	PreventCommandIfParallelMode(function);
	PreventCommandDuringRecovery(function);
	if (MyBackendType != B_BACKEND)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s is for client sessions", function)));
	ow_caller(&caller);
	if (caller.claims != NULL || caller.forwarded_by != NULL)
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_raise(OW_FORBIDDEN, &d,
				 "Listen from a session of your own (a SQL login), not through PostgREST or a router.",
				 "%s is for a SQL login's own session", function);
	}
	if (!ow_tenant_channel(caller.subject.tenant, channel))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("openwop_interrupt must be loaded at server start to name a notification channel"),
				 errhint("Add it to shared_preload_libraries and restart.")));
	return cstring_to_text(channel);
}

PG_FUNCTION_INFO_V1(ow_listen);
/*
 * openwop.listen() → text: this session listens to the notifications of
 * the caller's tenant ({runId, fromSequence, sequence}, one per committed
 * transaction and run), from the commit of the calling transaction on, as
 * after LISTEN; returns the channel they arrive on.  The name is never
 * written in a statement, so no pg_stat_activity row shows it to others.
 */
Datum
ow_listen(PG_FUNCTION_ARGS)
{
	char		channel[OW_CHANNEL_BUF];
	text	   *result = listen_channel("listen()", channel);

	Async_Listen(channel);
	PG_RETURN_TEXT_P(result);
}

PG_FUNCTION_INFO_V1(ow_unlisten);
/* openwop.unlisten() → text: this session stops listening to its tenant's channel. */
Datum
ow_unlisten(PG_FUNCTION_ARGS)
{
	char		channel[OW_CHANNEL_BUF];
	text	   *result = listen_channel("unlisten()", channel);

	Async_Unlisten(channel);
	PG_RETURN_TEXT_P(result);
}
