/*-------------------------------------------------------------------------
 *
 * nodes.c
 *	  Node executions of a run (openwop.node_executions) and their API:
 *	  start_node (a new visit, or the recovery of the open one; the
 *	  definition's trigger rules and the no-retry rule), complete_node and
 *	  fail_node; the latest execution of a node and the refusals about one.
 *
 * As in runs.c, whose argument readers and reply these functions share:
 * arguments are validated before any table is touched, then the run row
 * is locked, state checked, events appended and the run saved, all in the
 * caller's transaction.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/base.h"
#include "store/store.h"
#include "auth/auth.h"
#include "domain/internal.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(ow_start_node);
PG_FUNCTION_INFO_V1(ow_complete_node);
PG_FUNCTION_INFO_V1(ow_fail_node);

/* typeId carried on node.started when neither the call nor the definition names one */
#define OW_DEFAULT_TYPE_ID "openwop_interrupt.unspecified"

static char *
required_node_arg(FunctionCallInfo fcinfo, int n)
{
	char	   *node_id = ow_text_arg(fcinfo, n);

	if (node_id == NULL)
		ow_validation_error("nodeId", "node_id must not be null");
	if (!ow_valid_author_id(node_id))
		ow_validation_error("nodeId",
							"\"%s\" is not a valid node id (1 to 128 characters of A-Z a-z 0-9 . _ ~ : -)",
							ow_echo(node_id));
	return node_id;
}

bool
ow_exec_is_open(const OwExec *ex)
{
	return ex->found && (strcmp(ex->status, "running") == 0 ||
						 strcmp(ex->status, "interrupted") == 0 ||
						 strcmp(ex->status, "pending") == 0);
}

/* What ow_latest_exec reads of the row into the OwExec (arg). */
static void
exec_read(const OwRow *row, void *arg)
{
	OwExec	   *ex = arg;

	ex->visit = DatumGetInt32(row->values[0]);
	ex->status = TextDatumGetCString(row->values[1]);
	ex->attempt = DatumGetInt32(row->values[2]);
	ex->started_at = DatumGetTimestampTz(row->values[3]);
}

/*
 * Write w (an update of node_executions by its key) to the execution
 * args[0..3] (tenant, run id, node id, visit); it must be there.
 */
static void
change_exec(OwWrite *w, const Datum *args, const Datum *values, const bool *nulls)
{
	if (!ow_write(NULL, w, args, values, nulls, NULL))
		ow_changed_meanwhile(OW_NODE_EXECUTIONS);
}

/* The latest execution of node_id in the locked run (ex->found false if none). */
void
ow_latest_exec(OwRun *run, const char *node_id, OwExec *ex)
{
	static OwRead latest = {.table = OW_NODE_EXECUTIONS,.index = OW_NODE_EXECUTIONS_PKEY,
		.nkeys = 3,.backward = true,.ncols = 4,
	.cols = {EXEC_VISIT, EXEC_STATUS, EXEC_ATTEMPT, EXEC_STARTED_AT}};
	Datum		keys[3];

	keys[0] = CStringGetTextDatum(run->tenant);
	keys[1] = CStringGetTextDatum(run->run_id);
	keys[2] = CStringGetTextDatum(node_id);
	ex->found = ow_read(NULL, &latest, keys, 0, OW_NO_LOCK, 1, NULL, exec_read, ex) == 1;
}

/*
 * With a registered definition, the node must be one of its nodes; returns
 * the node's typeId there (or NULL).  *found tells whether it is listed.
 */
static char *
definition_type_id(OwRun *run, const char *node_id, bool *found)
{
	static OwQuery q = {
		"SELECT definition FROM openwop.runs"
		" WHERE tenant OPERATOR(pg_catalog.=) $1"
		"   AND run_id OPERATOR(pg_catalog.=) $2",
		2, {TEXTOID, TEXTOID}, SPI_OK_SELECT
	};
	Jsonb	   *def;
	JsonbValue *nodes;
	int			i;

	if (ow_run_exec(&q, run, NULL, false, 1) != 1)
		elog(ERROR, "could not read the definition of run \"%s\"", run->run_id);
	def = ow_col_jsonb(0, 1);

	*found = false;
	nodes = owj_get(def, "nodes");
	for (i = 0; i < (int) JsonContainerSize(nodes->val.binary.data); i++)
	{
		JsonbValue *n = getIthJsonbValueFromContainer(nodes->val.binary.data, i);
		char	   *id = owj_string(owj_get_container(n->val.binary.data, "id"));

		if (strcmp(id, node_id) == 0)
		{
			*found = true;
			return owj_string(owj_get_container(n->val.binary.data, "typeId"));
		}
	}
	return NULL;
}

void
ow_node_not_found(OwRun *run, const char *node_id, const char *why)
{
	OwDetails	d;

	ow_details_init(&d);
	ow_details_str(&d, "runId", run->run_id);
	ow_details_str(&d, "nodeId", node_id);
	ow_raise(OW_NOT_FOUND, &d, NULL,
			 "node \"%s\" %s in run \"%s\"", node_id, why, run->run_id);
}

/* The node's latest execution exists but is not open: a state conflict. */
void
ow_node_not_open(OwRun *run, const char *node_id, const OwExec *ex)
{
	OwDetails	d;

	ow_details_init(&d);
	ow_details_str(&d, "runId", run->run_id);
	ow_details_str(&d, "runStatus", run->status);
	ow_details_str(&d, "nodeId", node_id);
	ow_details_str(&d, "nodeStatus", ex->status);
	ow_raise(OW_RUN_STATE_CONFLICT, &d,
			 "Call start_node first to begin a new execution of the node.",
			 "node \"%s\" has no open execution in run \"%s\" (its latest execution is %s)",
			 node_id, run->run_id, ex->status);
}

/* A 409 about one node of the run, with the run's and node's identity. */
void
ow_node_conflict(OwRun *run, const char *node_id, const char *hint,
				 const char *fmt,...)
{
	StringInfoData msg;
	OwDetails	d;

	initStringInfo(&msg);
	OW_APPEND_VA(&msg, fmt);

	ow_details_init(&d);
	ow_details_str(&d, "runId", run->run_id);
	ow_details_str(&d, "runStatus", run->status);
	ow_details_str(&d, "nodeId", node_id);
	ow_raise(OW_RUN_STATE_CONFLICT, &d, hint, "%s", msg.data);
}

/*
 * With a registered definition, a node fires by the triggerRule of its
 * first incoming edge (all_success when unset), judged on the latest
 * execution of every source, and never when a failed source reaches it over
 * an all_success, any_success or none_failed edge (the "Rejection" section
 * of the OpenWOP interrupt spec):
 *   all_success  every source completed
 *   any_success  at least one source completed
 *   all_complete every source completed, failed, skipped or was cancelled
 *   none_failed  no source failed and all are done
 *   any_failed   at least one source failed
 * A node with no incoming edge always fires.  Refuses 409 otherwise.
 */
static void
check_trigger_rule(OwRun *run, const char *node_id)
{
	static OwQuery q = {
		"WITH incoming AS ("
		"  SELECT e.v OPERATOR(pg_catalog.->>) 'from' AS source,"
		"         COALESCE(e.v OPERATOR(pg_catalog.->>) 'triggerRule', 'all_success') AS rule, e.ord"
		"    FROM openwop.runs r,"
		"         pg_catalog.jsonb_array_elements(r.definition OPERATOR(pg_catalog.->) 'edges')"
		"           WITH ORDINALITY AS e(v, ord)"
		"   WHERE r.tenant OPERATOR(pg_catalog.=) $1 AND r.run_id OPERATOR(pg_catalog.=) $2"
		"     AND (e.v OPERATOR(pg_catalog.->>) 'to') OPERATOR(pg_catalog.=) $3),"
		" latest AS ("
		"  SELECT DISTINCT ON (x.node_id) x.node_id, x.status"
		"    FROM openwop.node_executions x"
		"   WHERE x.tenant OPERATOR(pg_catalog.=) $1 AND x.run_id OPERATOR(pg_catalog.=) $2"
		"     AND x.node_id OPERATOR(pg_catalog.=) ANY (SELECT source FROM incoming)"
		"   ORDER BY x.node_id, x.visit DESC)"
		" SELECT (SELECT rule FROM incoming ORDER BY ord LIMIT 1),"
		"        (SELECT pg_catalog.string_agg(i.source, ', ') FROM incoming i"
		"           JOIN latest f ON f.node_id OPERATOR(pg_catalog.=) i.source"
		"          WHERE f.status OPERATOR(pg_catalog.=) 'failed'"
		"            AND i.rule OPERATOR(pg_catalog.=) ANY"
		"                ('{all_success,any_success,none_failed}'::pg_catalog.text[])),"
		"        pg_catalog.count(*) FILTER (WHERE l.status OPERATOR(pg_catalog.=) 'completed'),"
		"        pg_catalog.count(*) FILTER (WHERE l.status OPERATOR(pg_catalog.=) 'failed'),"
		"        pg_catalog.count(*) FILTER (WHERE l.status OPERATOR(pg_catalog.=) ANY"
		"            ('{completed,failed,skipped,cancelled}'::pg_catalog.text[])),"
		"        (SELECT pg_catalog.count(DISTINCT source) FROM incoming)"
		"   FROM (SELECT DISTINCT source FROM incoming) s"
		"   LEFT JOIN latest l ON l.node_id OPERATOR(pg_catalog.=) s.source",
		3, {TEXTOID, TEXTOID, TEXTOID}, SPI_OK_SELECT
	};
	char	   *rule;
	char	   *failed_edge;
	int64		completed;
	int64		failed;
	int64		done;
	int64		total;
	bool		fires;

	if (ow_run_exec(&q, run, node_id, true, 1) != 1)
		elog(ERROR, "could not read the incoming edges of node \"%s\"", node_id);
	rule = ow_col_text(0, 1);
	if (rule == NULL)
		return;					/* no incoming edge */
	failed_edge = ow_col_text(0, 2);
	completed = ow_col_int64(0, 3);
	failed = ow_col_int64(0, 4);
	done = ow_col_int64(0, 5);
	total = ow_col_int64(0, 6);

	if (strcmp(rule, "any_success") == 0)
		fires = completed >= 1;
	else if (strcmp(rule, "all_complete") == 0)
		fires = done == total;
	else if (strcmp(rule, "none_failed") == 0)
		fires = failed == 0 && done == total;
	else if (strcmp(rule, "any_failed") == 0)
		fires = failed >= 1;
	else
		fires = completed == total;
	/* whatever the node's own rule, a failed source never satisfies its edge unless it admits failure */
	if (failed_edge != NULL)
		fires = false;

	if (!fires)
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "runId", run->run_id);
		ow_details_str(&d, "runStatus", run->status);
		ow_details_str(&d, "nodeId", node_id);
		ow_details_str(&d, "triggerRule", rule);
		ow_raise(OW_RUN_STATE_CONFLICT, &d,
				 "A failed source (such as a rejected approval) only satisfies all_complete or any_failed.",
				 "node \"%s\" does not fire: its trigger rule %s is not met by its sources", node_id, rule);
	}
}

/*
 * A node whose latest execution failed with retryable: false (a rejected
 * approval, a declined credential) must not be retried.  It may run again
 * only as a new invocation reached over an edge: some source on an
 * incoming edge of the registered definition completed after the failure.
 */
static void
refuse_retry(OwRun *run, const char *node_id)
{
	static OwQuery q = {
		"WITH last AS ("
		"  SELECT error, ended_sequence FROM openwop.node_executions"
		"   WHERE tenant OPERATOR(pg_catalog.=) $1 AND run_id OPERATOR(pg_catalog.=) $2"
		"     AND node_id OPERATOR(pg_catalog.=) $3"
		"   ORDER BY visit DESC LIMIT 1)"
		" SELECT COALESCE((SELECT error OPERATOR(pg_catalog.->) 'retryable' FROM last)"
		"                 OPERATOR(pg_catalog.<>) 'false'::pg_catalog.jsonb, true),"
		"        EXISTS (SELECT 1 FROM openwop.runs r,"
		"                  pg_catalog.jsonb_array_elements(r.definition OPERATOR(pg_catalog.->) 'edges') e,"
		"                  openwop.node_executions x"
		"                 WHERE r.tenant OPERATOR(pg_catalog.=) $1 AND r.run_id OPERATOR(pg_catalog.=) $2"
		"                   AND (e OPERATOR(pg_catalog.->>) 'to') OPERATOR(pg_catalog.=) $3"
		"                   AND x.tenant OPERATOR(pg_catalog.=) $1 AND x.run_id OPERATOR(pg_catalog.=) $2"
		"                   AND x.node_id OPERATOR(pg_catalog.=) (e OPERATOR(pg_catalog.->>) 'from')"
		"                   AND x.status OPERATOR(pg_catalog.=) 'completed'"
		"                   AND x.ended_sequence OPERATOR(pg_catalog.>) (SELECT ended_sequence FROM last))",
		3, {TEXTOID, TEXTOID, TEXTOID}, SPI_OK_SELECT
	};
	bool		retryable;
	bool		reentered;

	if (ow_run_exec(&q, run, node_id, true, 1) != 1)
		elog(ERROR, "could not read the last execution of node \"%s\"", node_id);
	retryable = ow_col_bool(0, 1);
	reentered = ow_col_bool(0, 2);
	if (!retryable && !reentered)
		ow_node_conflict(run, node_id,
						 "Reach the node again over an edge (a loop) to ask anew.",
						 "node \"%s\" failed with retryable false and must not be retried", node_id);
}

/* A pending execution (args: tenant, run id, node id, visit) runs again. */
static void
resume_execution(Datum *args)
{
	static OwWrite running = {.table = OW_NODE_EXECUTIONS,.kind = OW_WRITE_UPDATE,
	.key = OW_NODE_EXECUTIONS_PKEY,.ncols = 1,.cols = {EXEC_STATUS}};
	Datum		status = CStringGetTextDatum("running");

	change_exec(&running, args, &status, NULL);
}

/* A new running execution (args: tenant, run id, node id, visit, type id). */
static void
insert_execution(Datum *args)
{
	/* running: what its end sets is null */
	static OwWrite insert = {.table = OW_NODE_EXECUTIONS,.kind = OW_WRITE_INSERT,.ncols = 13,
		.cols = {EXEC_TENANT, EXEC_RUN_ID, EXEC_NODE_ID, EXEC_VISIT, EXEC_TYPE_ID, EXEC_STATUS,
			EXEC_ATTEMPT, EXEC_STARTED_AT, EXEC_OUTPUTS, EXEC_ERROR, EXEC_INTERRUPT_ID,
	EXEC_ENDED_SEQUENCE, EXEC_ENDED_AT}};
	Datum		values[13];
	bool		nulls[13] = {false, false, false, false, false, false, false, false,
	true, true, true, true, true};

	memcpy(values, args, 5 * sizeof(Datum));
	values[5] = CStringGetTextDatum("running");
	values[6] = Int32GetDatum(0);
	values[7] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	(void) ow_write(NULL, &insert, NULL, values, nulls, NULL);
}

/*
 * openwop.start_node(run_id, node_id, type_id) → jsonb
 *
 * A new execution gets visit = previous visit + 1 (0 for the first).  While
 * the latest execution is still open (running, interrupted, or pending after
 * a resolve) this is a recovery of that same execution: it is returned as it
 * is, and a pending one becomes running again, with no new node.started.
 */
Datum
ow_start_node(PG_FUNCTION_ARGS)
{
	const char *run_input = ow_required_run_arg(fcinfo);
	char	   *node_id = required_node_arg(fcinfo, 1);
	char	   *type_id = ow_text_arg(fcinfo, 2);
	OwCall		call;
	OwRun		locked;
	OwRun	   *run = &locked;
	OwExec		ex;
	OwJson		j;
	Datum		args[5];
	int32		visit;
	int64		seq = -1;
	bool		recovered;

	ow_refuse_read_only("start_node()");
	if (type_id && !ow_valid_type_id(type_id))
		ow_validation_error("typeId", "\"%s\" is not a valid node type id (e.g. core.ai.callPrompt)", ow_echo(type_id));

	ow_call_begin(&call);
	ow_lock_run(run, call.caller.subject.tenant, run_input);
	ow_refuse_if_terminal(run);
	if (run->has_definition)
	{
		bool		listed;
		char	   *def_type = definition_type_id(run, node_id, &listed);

		if (!listed)
			ow_node_not_found(run, node_id, "is not a node of the definition registered");
		if (type_id == NULL)
			type_id = def_type;
	}
	if (type_id == NULL)
		type_id = OW_DEFAULT_TYPE_ID;

	ow_latest_exec(run, node_id, &ex);
	args[0] = CStringGetTextDatum(run->tenant);
	args[1] = CStringGetTextDatum(run->run_id);
	args[2] = CStringGetTextDatum(node_id);
	recovered = ow_exec_is_open(&ex);
	if (recovered)
	{
		visit = ex.visit;
		if (strcmp(ex.status, "pending") == 0)
		{
			args[3] = Int32GetDatum(visit);
			resume_execution(args);
			ex.status = "running";
		}
	}
	else
	{
		if (ex.found && strcmp(ex.status, "failed") == 0)
			refuse_retry(run, node_id);
		if (run->has_definition)
			check_trigger_rule(run, node_id);
		visit = ex.found ? ex.visit + 1 : 0;
		args[3] = Int32GetDatum(visit);
		args[4] = CStringGetTextDatum(type_id);
		insert_execution(args);

		owj_begin(&j);
		owj_str(&j, "nodeId", node_id);
		owj_str(&j, "typeId", type_id);
		owj_int(&j, "attempt", 0);
		seq = ow_append(run, "node.started", node_id, owj_end(&j));
		ex.status = "running";
	}

	/* a run suspended elsewhere keeps its waiting status */
	if (strcmp(run->status, "pending") == 0 || strcmp(run->status, "paused") == 0)
		run->status = "running";
	if (strcmp(run->status, "running") == 0)
		run->current_node_id = node_id;
	ow_save_run(run);

	ow_call_end(&call);
	owj_begin(&j);
	owj_str(&j, "runId", run->run_id);
	owj_str(&j, "nodeId", node_id);
	owj_int(&j, "visit", visit);
	owj_str(&j, "status", ex.status);
	owj_bool(&j, "recovered", recovered);
	if (seq >= 0)
		owj_int(&j, "sequence", seq);
	return ow_reply(&call, &j);
}

/*
 * End an open execution as completed (value = outputs) or failed (value =
 * error) and append node.completed / node.failed.  Returns the sequence.
 */
static int64
finish_execution(OwRun *run, const char *node_id, const OwExec *ex, bool failed, Jsonb *value)
{
	static OwWrite end_exec = {.table = OW_NODE_EXECUTIONS,.kind = OW_WRITE_UPDATE,
		.key = OW_NODE_EXECUTIONS_PKEY,.ncols = 5,
	.cols = {EXEC_STATUS, EXEC_OUTPUTS, EXEC_ERROR, EXEC_ENDED_AT, EXEC_ENDED_SEQUENCE}};
	Datum		keys[4];
	Datum		values[5];
	bool		nulls[5] = {false, false, false, false, false};
	OwJson		j;
	int64		seq;

	owj_begin(&j);
	owj_str(&j, "nodeId", node_id);
	if (failed)
	{
		owj_jsonb(&j, "error", value);
		owj_int(&j, "attempts", ex->attempt + 1);
	}
	else
	{
		owj_jsonb(&j, "outputs", value);
		owj_int(&j, "durationMs",
				Max(0, (GetCurrentTransactionStartTimestamp() - ex->started_at) / 1000));
	}
	if (run->current_node_id && strcmp(run->current_node_id, node_id) == 0)
		run->current_node_id = NULL;
	seq = ow_append(run, failed ? "node.failed" : "node.completed", node_id, owj_end(&j));

	keys[0] = CStringGetTextDatum(run->tenant);
	keys[1] = CStringGetTextDatum(run->run_id);
	keys[2] = CStringGetTextDatum(node_id);
	keys[3] = Int32GetDatum(ex->visit);
	values[0] = CStringGetTextDatum(failed ? "failed" : "completed");
	values[1] = JsonbPGetDatum(value);
	values[2] = JsonbPGetDatum(value);
	nulls[failed ? 1 : 2] = true;
	values[3] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	values[4] = Int64GetDatum(seq);
	change_exec(&end_exec, keys, values, nulls);
	return seq;
}

/* Fail an open execution (node.failed): fail_run, rejected approvals. */
int64
ow_fail_execution(OwRun *run, const char *node_id, const OwExec *ex, Jsonb *error)
{
	return finish_execution(run, node_id, ex, true, error);
}

/*
 * A gate whose last answer was refine was sent back, not approved: the
 * execution may not complete on it.  The node raises the gate again (the
 * next ordinal) or fails.
 */
static void
refuse_after_refine(OwRun *run, const char *node_id, const OwExec *ex)
{
	static OwQuery q = {
		"SELECT action FROM openwop.interrupts"
		" WHERE tenant OPERATOR(pg_catalog.=) $1"
		"   AND root_run_id OPERATOR(pg_catalog.=) $2"
		"   AND run_id OPERATOR(pg_catalog.=) $2"
		"   AND node_id OPERATOR(pg_catalog.=) $3"
		"   AND visit OPERATOR(pg_catalog.=) $4"
		" ORDER BY ordinal DESC LIMIT 1",
		4, {TEXTOID, TEXTOID, TEXTOID, INT4OID}, SPI_OK_SELECT
	};
	Datum		args[4];

	args[0] = CStringGetTextDatum(run->tenant);
	args[1] = CStringGetTextDatum(run->run_id);
	args[2] = CStringGetTextDatum(node_id);
	args[3] = Int32GetDatum(ex->visit);
	/* not read-only: a refine committed while this call waited for the run lock counts */
	if (ow_exec(&q, args, NULL, false, 1) == 1)
	{
		char	   *action = ow_col_text(0, 1);

		if (action && strcmp(action, "refine") == 0)
			ow_node_conflict(run, node_id,
							 "Raise the gate again (the next ordinal) after revising, or fail the node.",
							 "node \"%s\" cannot complete: its approval gate was sent back with refine", node_id);
	}
}

/*
 * Lock the run and read node_id's open execution into ex, for a call that
 * writes to it: refused when the run has ended (run_terminal), the node
 * never started (not_found), or its latest execution is closed or waits on
 * an interrupt.  complete_node, fail_node, record_agent_decision and
 * connector_auth_expired begin so.
 */
void
ow_lock_open_execution(OwRun *run, const char *tenant, const char *run_input, const char *node_id,
					   OwExec *ex)
{
	ow_lock_run(run, tenant, run_input);
	ow_refuse_if_terminal(run);
	ow_latest_exec(run, node_id, ex);
	if (!ex->found)
		ow_node_not_found(run, node_id, "has not been started");
	if (!ow_exec_is_open(ex) || strcmp(ex->status, "interrupted") == 0)
		ow_node_not_open(run, node_id, ex);
}

/* complete_node and fail_node */
static Datum
end_node(FunctionCallInfo fcinfo, bool failed)
{
	const char *run_input = ow_required_run_arg(fcinfo);
	char	   *node_id = required_node_arg(fcinfo, 1);
	Jsonb	   *value = failed ? ow_error_arg(fcinfo, 2) : ow_object_arg(fcinfo, 2, "outputs");
	OwCall		call;
	OwRun		locked;
	OwRun	   *run = &locked;
	OwExec		ex;
	OwJson		j;
	int64		seq;

	ow_refuse_read_only(failed ? "fail_node()" : "complete_node()");
	ow_call_begin(&call);
	ow_lock_open_execution(run, call.caller.subject.tenant, run_input, node_id, &ex);
	if (!failed)
		refuse_after_refine(run, node_id, &ex);
	seq = finish_execution(run, node_id, &ex, failed, value);
	ow_save_run(run);

	ow_call_end(&call);
	owj_begin(&j);
	owj_str(&j, "runId", run->run_id);
	owj_str(&j, "nodeId", node_id);
	owj_int(&j, "visit", ex.visit);
	owj_str(&j, "status", failed ? "failed" : "completed");
	owj_int(&j, "sequence", seq);
	return ow_reply(&call, &j);
}

Datum
ow_complete_node(PG_FUNCTION_ARGS)
{
	return end_node(fcinfo, false);
}

Datum
ow_fail_node(PG_FUNCTION_ARGS)
{
	return end_node(fcinfo, true);
}
