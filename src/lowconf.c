/*-------------------------------------------------------------------------
 *
 * lowconf.c
 *	  Low-confidence escalation (digest §12.2): record_agent_decision()
 *	  appends agent.decided, and a trigger on the event log suspends the
 *	  node on a low-confidence interrupt when the confidence is below the
 *	  run's threshold.
 *
 * The threshold is configurable.run.escalationThreshold of the run, else
 * openwop.escalation_threshold (0.7).  confidence < threshold escalates;
 * equal does not; a missing, NaN or infinite confidence never escalates.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "openwop.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/rel.h"

PG_FUNCTION_INFO_V1(ow_record_agent_decision);
PG_FUNCTION_INFO_V1(ow_escalate_low_confidence);

/* Escalation threshold when a run's configurable names none. */
static double ow_escalation_threshold = 0.7;

/*
 * Set by record_agent_decision around its own insert: the trigger escalates
 * only decisions recorded through the API, never rows arriving by COPY,
 * pg_restore, replication or a direct INSERT.
 */
static bool escalation_armed = false;

/* The run's threshold: configurable.run.escalationThreshold, else the setting. */
static double
run_threshold(OwRun *run)
{
	static SPIPlanPtr plan = NULL;
	bool		isnull;
	Datum		d;

	/* rounded first: a stored 1e-400 must read as 0, not underflow float8 */
	if (ow_run_query(&plan, "SELECT pg_catalog.round((configurable OPERATOR(pg_catalog.#>) '{run,escalationThreshold}')::pg_catalog.numeric, 17)::pg_catalog.float8"
							"  FROM openwop.runs"
							" WHERE tenant OPERATOR(pg_catalog.=) $1 AND run_id OPERATOR(pg_catalog.=) $2"
							"   AND pg_catalog.jsonb_typeof(configurable OPERATOR(pg_catalog.#>) '{run,escalationThreshold}')"
							"       OPERATOR(pg_catalog.=) 'number'",
					 run, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the threshold of run \"%s\"", run->run_id);
	if (SPI_processed == 0)
		return ow_escalation_threshold;
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? ow_escalation_threshold : DatumGetFloat8(d);
}

/*
 * The next free ordinal of the execution: one past the highest it raised,
 * so an escalation never takes the key of an interrupt the engine raised
 * at an ordinal of its choosing; past the largest ordinal, the lowest free
 * one.
 */
static int32
next_ordinal(OwRun *run, const char *node_id, int32 visit)
{
	static SPIPlanPtr plan = NULL;
	Datum		args[4];
	bool		isnull;
	Datum		d;

	if (plan == NULL)
	{
		Oid			types[4] = {TEXTOID, TEXTOID, TEXTOID, INT4OID};

#define EXEC_INTERRUPTS(a) \
		"openwop.interrupts " a \
		" WHERE " a ".tenant OPERATOR(pg_catalog.=) $1 AND " a ".root_run_id OPERATOR(pg_catalog.=) $2" \
		"   AND " a ".node_id OPERATOR(pg_catalog.=) $3 AND " a ".visit OPERATOR(pg_catalog.=) $4"
		plan = ow_prepare("SELECT CASE WHEN pg_catalog.max(i.ordinal) IS NULL THEN 0"
						  "            WHEN pg_catalog.max(i.ordinal) OPERATOR(pg_catalog.<) 2147483647"
						  "            THEN pg_catalog.max(i.ordinal) OPERATOR(pg_catalog.+) 1"
						  "            WHEN NOT EXISTS (SELECT FROM " EXEC_INTERRUPTS("z")
						  "                               AND z.ordinal OPERATOR(pg_catalog.=) 0) THEN 0"
						  "            ELSE (SELECT pg_catalog.min(g.ordinal OPERATOR(pg_catalog.+) 1) FROM " EXEC_INTERRUPTS("g")
						  "                     AND g.ordinal OPERATOR(pg_catalog.<) 2147483647"
						  "                     AND NOT EXISTS (SELECT FROM " EXEC_INTERRUPTS("x")
						  "                                      AND x.ordinal OPERATOR(pg_catalog.=) (g.ordinal OPERATOR(pg_catalog.+) 1)))"
						  "        END"
						  "  FROM " EXEC_INTERRUPTS("i"), 4, types);
#undef EXEC_INTERRUPTS
	}
	args[0] = CStringGetTextDatum(run->tenant);
	args[1] = CStringGetTextDatum(run->root_run_id);
	args[2] = CStringGetTextDatum(node_id);
	args[3] = Int32GetDatum(visit);
	if (SPI_execute_plan(plan, args, NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read the ordinals of node \"%s\"", node_id);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (isnull)
		elog(ERROR, "node \"%s\" has no free interrupt ordinal", node_id);
	return DatumGetInt32(d);
}

/*
 * Trigger on openwop.events, AFTER INSERT FOR EACH ROW WHEN type =
 * 'agent.decided': escalate a decision below the run's threshold.
 */
Datum
ow_escalate_low_confidence(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	TupleDesc	desc;
	HeapTuple	row;
	bool		isnull;
	Jsonb	   *payload;
	JsonbValue *conf;
	double		confidence;
	double		threshold;
	char	   *tenant;
	char	   *run_id;
	char	   *node_id;
	OwPriv		priv;
	OwRun		run;
	OwExec		ex;
	OwJson		j;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_AFTER(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event) || !TRIGGER_FIRED_BY_INSERT(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("openwop.escalate_low_confidence() must be an AFTER INSERT row trigger")));
	if (!escalation_armed)
		return PointerGetDatum(NULL);
	desc = RelationGetDescr(trigdata->tg_relation);
	row = trigdata->tg_trigtuple;
	payload = DatumGetJsonbP(heap_getattr(row, SPI_fnumber(desc, "payload"), desc, &isnull));
	conf = owj_get(payload, "confidence");
	if (conf == NULL || conf->type != jbvNumeric || owj_string(owj_get(payload, "agentId")) == NULL)
		return PointerGetDatum(NULL);	/* missing: no signal */
	confidence = DatumGetFloat8(DirectFunctionCall1(numeric_float8, NumericGetDatum(conf->val.numeric)));
	if (isnan(confidence) || isinf(confidence))
		return PointerGetDatum(NULL);

	tenant = TextDatumGetCString(heap_getattr(row, SPI_fnumber(desc, "tenant"), desc, &isnull));
	run_id = TextDatumGetCString(heap_getattr(row, SPI_fnumber(desc, "run_id"), desc, &isnull));
	node_id = TextDatumGetCString(heap_getattr(row, SPI_fnumber(desc, "node_id"), desc, &isnull));
	if (isnull)
		return PointerGetDatum(NULL);

	SPI_connect();
	ow_become_owner(&priv);
	ow_lock_run_id(&run, tenant, run_id);
	threshold = run_threshold(&run);
	if (confidence < threshold && !ow_run_is_terminal(run.status))
	{
		ow_latest_exec(&run, node_id, &ex);
		if (ow_exec_is_open(&ex) && strcmp(ex.status, "interrupted") != 0)
		{
			JsonbValue *decision = owj_get(payload, "decision");

			owj_begin(&j);
			owj_str(&j, "kind", "low-confidence");
			owj_begin_object(&j, "data");
			owj_value(&j, "agentId", owj_get(payload, "agentId"));
			owj_float(&j, "threshold", threshold);
			owj_value(&j, "observed", conf);
			if (decision && decision->type != jbvNull)
				owj_value(&j, "decision", decision);
			owj_end_object(&j);
			(void) ow_suspend(&run, node_id, &ex, next_ordinal(&run, node_id, ex.visit),
							  owj_end(&j), CurrentMemoryContext);
		}
	}
	ow_restore_user(&priv);
	SPI_finish();
	return PointerGetDatum(NULL);
}

/*
 * openwop.record_agent_decision(run_id, node_id, agent_id, confidence,
 * decision) → jsonb
 */
Datum
ow_record_agent_decision(PG_FUNCTION_ARGS)
{
	static SPIPlanPtr find_plan = NULL;
	MemoryContext callerctx = CurrentMemoryContext;
	char	   *run_input;
	char	   *tenant;
	char	   *node_id;
	char	   *agent_id;
	bool		has_conf = !PG_ARGISNULL(3);
	double		confidence = has_conf ? PG_GETARG_FLOAT8(3) : 0;
	Jsonb	   *decision = PG_ARGISNULL(4) ? NULL : PG_GETARG_JSONB_P(4);
	OwPriv		priv;
	OwRun		run;
	OwExec		ex;
	OwJson		j;
	volatile int64 seq = 0;
	Jsonb	   *result;
	char	   *interrupt_id = NULL;
	Datum		args[3];

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2))
		ow_validation_error(PG_ARGISNULL(0) ? "runId" : PG_ARGISNULL(1) ? "nodeId" : "agentId",
							"run_id, node_id and agent_id must not be null");
	ow_check_json_arg(fcinfo, 4, "decision", false);
	run_input = text_to_cstring(PG_GETARG_TEXT_PP(0));
	node_id = text_to_cstring(PG_GETARG_TEXT_PP(1));
	agent_id = text_to_cstring(PG_GETARG_TEXT_PP(2));
	if (!ow_valid_author_id(node_id))
		ow_validation_error("nodeId", "\"%s\" is not a valid node id", ow_echo(node_id));
	if (!ow_valid_author_id(agent_id))
		ow_validation_error("agentId", "\"%s\" is not a valid agent id", ow_echo(agent_id));
	/* NaN and infinity are a buggy signal: recorded without a confidence, never escalated */
	if (has_conf && (isnan(confidence) || isinf(confidence)))
		has_conf = false;
	if (has_conf && (confidence < 0.0 || confidence > 1.0))
		ow_validation_error("confidence", "confidence must be between 0 and 1");
	tenant = ow_caller_tenant();

	SPI_connect();
	ow_become_owner(&priv);
	ow_lock_run(&run, tenant, run_input);
	if (ow_run_is_terminal(run.status))
		ow_run_terminal(run.run_id, run.status);
	ow_latest_exec(&run, node_id, &ex);
	if (!ex.found)
		ow_node_not_found(&run, node_id, "has not been started");
	if (!ow_exec_is_open(&ex) || strcmp(ex.status, "interrupted") == 0)
		ow_node_not_open(&run, node_id, &ex);

	owj_begin(&j);
	owj_str(&j, "agentId", agent_id);
	if (decision)
		owj_jsonb(&j, "decision", decision);
	else
		owj_null(&j, "decision");
	if (has_conf)
		owj_float(&j, "confidence", confidence);
	escalation_armed = true;
	PG_TRY();
	{
		seq = ow_append_then_triggers(&run, "agent.decided", node_id, owj_end(&j));
	}
	PG_FINALLY();
	{
		escalation_armed = false;
	}
	PG_END_TRY();

	/* what the escalation trigger did, if anything */
	ow_lock_run_id(&run, run.tenant, run.run_id);
	if (find_plan == NULL)
	{
		Oid			types[3] = {TEXTOID, TEXTOID, INT8OID};

		find_plan = ow_prepare("SELECT interrupt_id FROM openwop.interrupts"
							   " WHERE tenant OPERATOR(pg_catalog.=) $1"
							   "   AND run_id OPERATOR(pg_catalog.=) $2"
							   "   AND requested_sequence OPERATOR(pg_catalog.>) $3"
							   "   AND kind OPERATOR(pg_catalog.=) 'low-confidence'", 3, types);
	}
	args[0] = CStringGetTextDatum(run.tenant);
	args[1] = CStringGetTextDatum(run.run_id);
	args[2] = Int64GetDatum(seq);
	if (SPI_execute_plan(find_plan, args, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not look up the escalation of run \"%s\"", run.run_id);
	if (SPI_processed > 0)
		interrupt_id = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);

	MemoryContextSwitchTo(callerctx);
	owj_begin(&j);
	owj_str(&j, "runId", run.run_id);
	owj_str(&j, "nodeId", node_id);
	owj_int(&j, "sequence", seq);
	owj_bool(&j, "escalated", interrupt_id != NULL);
	if (interrupt_id)
		owj_str(&j, "interruptId", interrupt_id);
	owj_str(&j, "runStatus", run.status);
	result = owj_end(&j);
	ow_restore_user(&priv);
	SPI_finish();
	PG_RETURN_JSONB_P(result);
}

/* ----------
 * Settings
 * ----------
 */

void
ow_define_low_confidence_settings(void)
{
	DefineCustomRealVariable("openwop.escalation_threshold",
							 "Agent confidence below which a decision escalates to a low-confidence interrupt.",
							 "A run's configurable.run.escalationThreshold takes precedence.",
							 &ow_escalation_threshold,
							 0.7, 0.0, 1.0,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
}
