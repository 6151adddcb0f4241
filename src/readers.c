/*-------------------------------------------------------------------------
 *
 * readers.c
 *	  The read-only API: events(), run_snapshot(), capabilities() and
 *	  current_caller().  Reads are tenant-checked like every call: a run of
 *	  another tenant is refused from its id alone.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "openwop.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#define OW_EVENTS_MAX 10000

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
	static SPIPlanPtr run_plan = NULL;
	static SPIPlanPtr ev_plan = NULL;
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *run_input;
	int64		after;
	int32		max;
	char	   *tenant;
	char	   *run_id;
	char	   *prefix;
	Datum		args[4];
	OwPriv		priv;
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

	tenant = ow_caller_tenant();
	run_id = ow_normalize_run_id(run_input, tenant);

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);

	SPI_connect();
	ow_become_owner(&priv);
	if (run_plan == NULL)
	{
		Oid			types[2] = {TEXTOID, TEXTOID};
		Oid			evtypes[4] = {TEXTOID, TEXTOID, INT8OID, INT4OID};

		run_plan = ow_prepare("SELECT event_prefix FROM openwop.runs"
							  " WHERE tenant OPERATOR(pg_catalog.=) $1"
							  "   AND run_id OPERATOR(pg_catalog.=) $2", 2, types);
		ev_plan = ow_prepare("SELECT sequence, type, node_id, payload, created_at,"
							 "       schema_version, causation_id"
							 "  FROM openwop.events"
							 " WHERE tenant OPERATOR(pg_catalog.=) $1"
							 "   AND run_id OPERATOR(pg_catalog.=) $2"
							 "   AND sequence OPERATOR(pg_catalog.>) $3"
							 " ORDER BY sequence LIMIT $4", 4, evtypes);
	}
	args[0] = CStringGetTextDatum(tenant);
	args[1] = CStringGetTextDatum(run_id);
	if (SPI_execute_plan(run_plan, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read run \"%s\"", run_id);
	if (SPI_processed == 0)
		ow_run_not_found(run_id);
	prefix = ow_col_text(0, 1);

	args[2] = Int64GetDatum(after);
	args[3] = Int32GetDatum(max);
	if (SPI_execute_plan(ev_plan, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read events of run \"%s\"", run_id);

	rowctx = AllocSetContextCreate(CurrentMemoryContext, "openwop events row",
								   ALLOCSET_DEFAULT_SIZES);
	for (i = 0; i < SPI_processed; i++)
	{
		MemoryContext old = MemoryContextSwitchTo(rowctx);
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		int64		seq = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
		char	   *node_id = SPI_getvalue(tup, desc, 3);
		char	   *causation = SPI_getvalue(tup, desc, 7);
		char	   *type = SPI_getvalue(tup, desc, 2);
		OwJson		j;
		Datum		value;
		bool		nullflag = false;

		owj_begin(&j);
		owj_str(&j, "eventId", psprintf("%s." INT64_FORMAT, prefix, seq));
		owj_str(&j, "runId", run_id);
		owj_str(&j, "type", type);
		owj_jsonb(&j, "payload", ow_event_payload(type, DatumGetJsonbP(SPI_getbinval(tup, desc, 4, &isnull)),
												 tenant));
		owj_str(&j, "timestamp",
				owj_iso8601(DatumGetTimestampTz(SPI_getbinval(tup, desc, 5, &isnull))));
		owj_int(&j, "sequence", seq);
		owj_int(&j, "schemaVersion", DatumGetInt32(SPI_getbinval(tup, desc, 6, &isnull)));
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

	ow_restore_user(&priv);
	SPI_finish();
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(ow_run_snapshot);
/*
 * openwop.run_snapshot(run_id) → jsonb: the OpenWOP RunSnapshot (closed
 * object; optional members are omitted when unset).
 */
Datum
ow_run_snapshot(PG_FUNCTION_ARGS)
{
	static SPIPlanPtr plan = NULL;
	MemoryContext callerctx = CurrentMemoryContext;
	char	   *tenant;
	char	   *run_id;
	Datum		args[2];
	OwPriv		priv;
	OwJson		j;
	Jsonb	   *result;
	bool		isnull;
	Datum		d;
	char	   *s;

	if (PG_ARGISNULL(0))
		ow_validation_error("runId", "run_id must not be null");
	tenant = ow_caller_tenant();
	run_id = ow_normalize_run_id(text_to_cstring(PG_GETARG_TEXT_PP(0)), tenant);

	SPI_connect();
	ow_become_owner(&priv);
	if (plan == NULL)
	{
		Oid			types[2] = {TEXTOID, TEXTOID};

		plan = ow_prepare("SELECT workflow_id, status, owner, current_node_id,"
						  "       error, configurable, metadata"
						  "  FROM openwop.runs"
						  " WHERE tenant OPERATOR(pg_catalog.=) $1"
						  "   AND run_id OPERATOR(pg_catalog.=) $2", 2, types);
	}
	args[0] = CStringGetTextDatum(tenant);
	args[1] = CStringGetTextDatum(run_id);
	if (SPI_execute_plan(plan, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read run \"%s\"", run_id);
	if (SPI_processed == 0)
		ow_run_not_found(run_id);

	MemoryContextSwitchTo(callerctx);
	owj_begin(&j);
	owj_str(&j, "runId", run_id);
	owj_str(&j, "workflowId", ow_col_text(0, 1));
	owj_str(&j, "status", ow_col_text(0, 2));
	owj_begin_object(&j, "owner");
	owj_str(&j, "tenant", tenant);
	owj_jsonb(&j, "subject", DatumGetJsonbP(ow_col_datum(0, 3, &isnull)));
	owj_end_object(&j);
	owj_int(&j, "eventLogSchemaVersion", 1);
	if ((s = ow_col_text(0, 4)) != NULL)
		owj_str(&j, "currentNodeId", s);
	d = ow_col_datum(0, 5, &isnull);
	if (!isnull)
		owj_jsonb(&j, "error", DatumGetJsonbP(d));
	d = ow_col_datum(0, 6, &isnull);
	if (!isnull)
		owj_jsonb(&j, "configurable", DatumGetJsonbP(d));
	d = ow_col_datum(0, 7, &isnull);
	if (!isnull)
		owj_jsonb(&j, "metadata", DatumGetJsonbP(d));
	result = owj_end(&j);

	ow_restore_user(&priv);
	SPI_finish();
	PG_RETURN_JSONB_P(result);
}

PG_FUNCTION_INFO_V1(ow_capabilities);
/*
 * openwop.capabilities() → jsonb: the interrupt facet as advertised.
 */
Datum
ow_capabilities(PG_FUNCTION_ARGS)
{
	OwJson		j;

	owj_begin(&j);
	owj_begin_object(&j, "interrupt");
	owj_str_array(&j, "tokenAlgs", list_make1("hs256"));
	owj_str_array(&j, "refKinds", list_make3("principal", "group", "role"));
	owj_bool(&j, "callbackDelivery", false);
	owj_end_object(&j);
	PG_RETURN_JSONB_P(owj_end(&j));
}

PG_FUNCTION_INFO_V1(ow_current_caller);
Datum
ow_current_caller(PG_FUNCTION_ARGS)
{
	OwCaller	c;
	OwJson		j;

	ow_caller(&c);
	owj_begin(&j);
	owj_subject(&j, "subject", &c.subject);
	owj_str(&j, "tenant", c.subject.tenant);
	owj_str(&j, "source", c.claims ? "request.jwt.claims" : "session_user");
	owj_str_array(&j, "scopes", ow_has_scope(&c) ? list_make1(OW_SCOPE) : NIL);
	PG_RETURN_JSONB_P(owj_end(&j));
}
