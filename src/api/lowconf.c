/*-------------------------------------------------------------------------
 *
 * lowconf.c
 *	  Low-confidence escalation: record_agent_decision() appends
 *	  agent.decided and, when the confidence is below the run's threshold,
 *	  suspends the node on a low-confidence interrupt in the same call (the
 *	  "Payload" section of the OpenWOP interrupt spec: such an agent.decided
 *	  must be followed by node.suspended {reason: low-confidence}).
 *
 * The threshold is configurable.run.escalationThreshold of the run, else
 * openwop.escalation_threshold (0.7).  confidence < threshold escalates;
 * equal does not; a missing, NaN or infinite confidence never escalates.
 * Only this API escalates: an agent.decided row that arrives by COPY,
 * pg_restore, replication or a direct INSERT is history, not a decision.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/base.h"
#include "store/store.h"
#include "auth/auth.h"
#include "domain/domain.h"
#include "api/api.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/guc.h"

PG_FUNCTION_INFO_V1(ow_record_agent_decision);
PG_FUNCTION_INFO_V1(ow_escalate_low_confidence);

/* Escalation threshold when a run's configurable names none. */
static double ow_escalation_threshold = 0.7;

/*
 * The statements below run after the run lock with read_only false: a fresh
 * snapshot sees what the transaction we waited for committed.
 */

/* The run's threshold: configurable.run.escalationThreshold, else the setting. */
static double
run_threshold(OwRun *run)
{
	/* rounded first: a stored 1e-400 must read as 0, not underflow float8 */
	static OwQuery q = {
		"SELECT pg_catalog.round((configurable OPERATOR(pg_catalog.#>) '{run,escalationThreshold}')::pg_catalog.numeric, 17)::pg_catalog.float8"
		"  FROM openwop.runs"
		" WHERE tenant OPERATOR(pg_catalog.=) $1 AND run_id OPERATOR(pg_catalog.=) $2"
		"   AND pg_catalog.jsonb_typeof(configurable OPERATOR(pg_catalog.#>) '{run,escalationThreshold}')"
		"       OPERATOR(pg_catalog.=) 'number'",
	2, {TEXTOID, TEXTOID}, SPI_OK_SELECT};
	bool		isnull;
	Datum		d;

	if (ow_run_exec(&q, run, NULL, false, 1) == 0)
		return ow_escalation_threshold;
	d = ow_col_datum(0, 1, FLOAT8OID, &isnull);
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
#define EXEC_INTERRUPTS(a) \
	"openwop.interrupts " a \
	" WHERE " a ".tenant OPERATOR(pg_catalog.=) $1 AND " a ".root_run_id OPERATOR(pg_catalog.=) $2" \
	"   AND " a ".node_id OPERATOR(pg_catalog.=) $3 AND " a ".visit OPERATOR(pg_catalog.=) $4"
	static OwQuery q = {
		"SELECT CASE WHEN pg_catalog.max(i.ordinal) IS NULL THEN 0"
		"            WHEN pg_catalog.max(i.ordinal) OPERATOR(pg_catalog.<) 2147483647"
		"            THEN pg_catalog.max(i.ordinal) OPERATOR(pg_catalog.+) 1"
		"            WHEN NOT EXISTS (SELECT FROM " EXEC_INTERRUPTS("z")
		"                               AND z.ordinal OPERATOR(pg_catalog.=) 0) THEN 0"
		"            ELSE (SELECT pg_catalog.min(g.ordinal OPERATOR(pg_catalog.+) 1) FROM " EXEC_INTERRUPTS("g")
		"                     AND g.ordinal OPERATOR(pg_catalog.<) 2147483647"
		"                     AND NOT EXISTS (SELECT FROM " EXEC_INTERRUPTS("x")
		"                                      AND x.ordinal OPERATOR(pg_catalog.=) (g.ordinal OPERATOR(pg_catalog.+) 1)))"
		"        END"
		"  FROM " EXEC_INTERRUPTS("i"),
	4, {TEXTOID, TEXTOID, TEXTOID, INT4OID}, SPI_OK_SELECT};
#undef EXEC_INTERRUPTS
	Datum		args[4];
	bool		isnull;
	Datum		d;

	args[0] = CStringGetTextDatum(run->tenant);
	args[1] = CStringGetTextDatum(run->root_run_id);
	args[2] = CStringGetTextDatum(node_id);
	args[3] = Int32GetDatum(visit);
	if (ow_exec(&q, args, NULL, false, 1) != 1)
		elog(ERROR, "could not read the ordinals of node \"%s\"", node_id);
	d = ow_col_datum(0, 1, INT4OID, &isnull);
	if (isnull)
		elog(ERROR, "node \"%s\" has no free interrupt ordinal", node_id);
	return DatumGetInt32(d);
}

/*
 * Escalate the decision just appended (decided: the agent.decided payload)
 * when its confidence is below the run's threshold: suspend the open
 * execution ex on a low-confidence interrupt, which also saves the run.
 * The confidence is compared and reported as agent.decided recorded it, so
 * the log explains every escalation.  Returns the interrupt id, or NULL
 * when the decision does not escalate.
 */
static char *
escalate(OwRun *run, const char *node_id, OwExec *ex, Jsonb *decided)
{
	JsonbValue *observed = owj_get(decided, "confidence");
	JsonbValue *decision = owj_get(decided, "decision");
	double		confidence;
	double		threshold;
	Jsonb	   *envelope;
	JsonbValue *interrupt;
	OwJson		j;

	if (observed == NULL)
		return NULL;			/* none recorded (missing, NaN, infinite): no signal */
	confidence = DatumGetFloat8(DirectFunctionCall1(numeric_float8,
													NumericGetDatum(observed->val.numeric)));
	threshold = run_threshold(run);
	if (confidence >= threshold)
		return NULL;

	owj_begin(&j);
	owj_str(&j, "kind", "low-confidence");
	owj_begin_object(&j, "data");
	owj_value(&j, "agentId", owj_get(decided, "agentId"));
	owj_float(&j, "threshold", threshold);
	owj_value(&j, "observed", observed);
	if (decision->type != jbvNull)
		owj_value(&j, "decision", decision);
	owj_end_object(&j);
	envelope = ow_suspend(run, node_id, ex, next_ordinal(run, node_id, ex->visit),
						  owj_end(&j), CurrentMemoryContext);

	/* a replay fork derived the recorded resolution: its interruptId */
	if (owj_get(envelope, "metadata") == NULL)
		return owj_string(owj_get(envelope, "interruptId"));
	/* the envelope's metadata.interrupt.id */
	interrupt = owj_get_container(owj_get(envelope, "metadata")->val.binary.data, "interrupt");
	return owj_string(owj_get_container(interrupt->val.binary.data, "id"));
}

/*
 * openwop.record_agent_decision(run_id, node_id, agent_id, confidence,
 * decision) → jsonb
 */
Datum
ow_record_agent_decision(PG_FUNCTION_ARGS)
{
	char	   *run_input;
	char	   *node_id;
	char	   *agent_id;
	bool		has_conf = !PG_ARGISNULL(3);
	double		confidence = has_conf ? PG_GETARG_FLOAT8(3) : 0;
	Jsonb	   *decision = PG_ARGISNULL(4) ? NULL : PG_GETARG_JSONB_P(4);
	OwCall		call;
	OwRun		run;
	OwExec		ex;
	OwJson		j;
	int64		seq;
	Jsonb	   *decided;
	char	   *interrupt_id;
	Jsonb	   *result;

	ow_refuse_read_only("record_agent_decision()");
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

	ow_call_begin(&call);
	ow_lock_open_execution(&run, call.caller.subject.tenant, run_input, node_id, &ex);

	owj_begin(&j);
	owj_str(&j, "agentId", agent_id);
	if (decision)
		owj_jsonb(&j, "decision", decision);
	else
		owj_null(&j, "decision");
	if (has_conf)
		owj_float(&j, "confidence", confidence);
	decided = owj_end(&j);
	seq = ow_append(&run, "agent.decided", node_id, decided);
	interrupt_id = escalate(&run, node_id, &ex, decided);
	if (interrupt_id == NULL)
		ow_save_run(&run);

	ow_call_end(&call);
	owj_begin(&j);
	owj_str(&j, "runId", run.run_id);
	owj_str(&j, "nodeId", node_id);
	owj_int(&j, "sequence", seq);
	owj_bool(&j, "escalated", interrupt_id != NULL);
	if (interrupt_id)
		owj_str(&j, "interruptId", interrupt_id);
	owj_str(&j, "runStatus", run.status);
	result = owj_end(&j);
	ow_call_finish(&call);
	PG_RETURN_JSONB_P(result);
}

/*
 * openwop.escalate_low_confidence(): the AFTER INSERT trigger on
 * openwop.events of schema versions 0.1.0 to 0.3.0.  It does nothing:
 * record_agent_decision escalates by itself.  It must stay, because those
 * install scripts create the function from this symbol, and a database not
 * yet updated to 0.4.0 still fires the trigger on every agent.decided.
 */
Datum
ow_escalate_low_confidence(PG_FUNCTION_ARGS)
{
	return PointerGetDatum(NULL);
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
