/*-------------------------------------------------------------------------
 *
 * resolution.c
 *	  Recording the outcome of an interrupt, shared by the run-scoped resolve
 *	  and the timeout sweeper: interrupt.resolved, the stored row, the job
 *	  back to pending (FlowDrop INT-3), then either node.resumed or the
 *	  fail-closed disposition of a rejection (digest §9.5).
 *
 *-------------------------------------------------------------------------
 */
#include "openwop.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"

/* Is there an outgoing edge from node_id whose rule admits a failed source? */
static bool
failure_is_routed(OwRun *run, const char *node_id)
{
	static SPIPlanPtr plan = NULL;

	if (!run->has_definition)
		return false;
	if (ow_run_query(&plan, "SELECT 1 FROM openwop.runs r,"
							"       pg_catalog.jsonb_array_elements(r.definition OPERATOR(pg_catalog.->) 'edges') e"
							" WHERE r.tenant OPERATOR(pg_catalog.=) $1 AND r.run_id OPERATOR(pg_catalog.=) $2"
							"   AND (e OPERATOR(pg_catalog.->>) 'from') OPERATOR(pg_catalog.=) $3"
							"   AND (e OPERATOR(pg_catalog.->>) 'triggerRule') OPERATOR(pg_catalog.=) ANY"
							"       ('{all_complete,any_failed}'::pg_catalog.text[])"
							" LIMIT 1",
					 run, node_id, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the edges of run \"%s\"", run->run_id);
	return SPI_processed > 0;
}

/*
 * Fail closed (digest §9.5): the node fails with code (retryable false) in
 * this same transaction; the run goes on only over an all_complete or
 * any_failed edge, otherwise it fails naming the node.
 */
void
ow_fail_closed(OwRun *run, const char *node_id, const char *code, const char *message,
			const char *principal)
{
	OwExec		ex;
	OwJson		j;
	Jsonb	   *error;

	owj_begin(&j);
	owj_str(&j, "code", code);
	owj_str(&j, "message", message);
	owj_bool(&j, "retryable", false);
	error = owj_end(&j);

	ow_latest_exec(run, node_id, &ex);
	ow_fail_execution(run, node_id, &ex, error);
	if (failure_is_routed(run, node_id))
		return;
	ow_end_run(run, OW_FAIL, error, node_id, NULL, principal);
}

/*
 * Once node_id's interrupt no longer holds the run: if another interrupt is
 * still pending, the run keeps waiting on the most recently raised one, which
 * names currentNodeId; otherwise a waiting run resumes (INT-3: a run that was
 * not waiting is left alone).  Returns true when another interrupt holds it.
 */
static bool
settle_run_status(OwRun *run)
{
	static SPIPlanPtr plan = NULL;

	if (strncmp(run->status, "waiting-", 8) != 0)
		return false;
	if (ow_run_query(&plan, "SELECT kind, node_id FROM openwop.interrupts"
							" WHERE tenant OPERATOR(pg_catalog.=) $1"
							"   AND run_id OPERATOR(pg_catalog.=) $2"
							"   AND status OPERATOR(pg_catalog.=) 'pending'"
							" ORDER BY requested_sequence DESC LIMIT 1",
					 run, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read the pending interrupts of run \"%s\"", run->run_id);
	if (SPI_processed > 0)
	{
		run->status = (char *) ow_waiting_status(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
		run->current_node_id = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
		return true;
	}
	run->status = "running";
	return false;
}


/*
 * Record the resolution r of a pending interrupt in the locked run, all in
 * the caller's transaction.  Returns the sequence of interrupt.resolved.
 * The caller saves the run.
 */
int64
ow_record_resolution(OwRun *run, const OwResolution *r)
{
	static SPIPlanPtr claim_plan = NULL;
	static SPIPlanPtr job_plan = NULL;
	Datum		args[10];
	char		nulls[10];
	OwJson		j;
	Jsonb	   *resolved;
	int64		seq;

	owj_begin(&j);
	owj_str(&j, "nodeId", r->node_id);
	owj_str(&j, "interruptId", r->interrupt_id);
	owj_str(&j, "kind", r->kind);
	if (r->resume_value)
		owj_jsonb(&j, "resumeValue", r->resume_value);
	if (r->principal)
	{
		owj_begin_object(&j, "resolvedBy");
		owj_str(&j, "id", r->principal);
		owj_end_object(&j);
	}
	if (r->decision)
		owj_str(&j, "decision", r->decision);
	if (r->action)
		owj_str(&j, "action", r->action);
	if (r->reason)
		owj_str(&j, "reason", r->reason);
	if (r->resume_value && r->action)
	{
		JsonbValue *v;

		if ((v = owj_get(r->resume_value, "refineFeedback")) != NULL)
			owj_value(&j, "refineFeedback", v);
		if ((v = owj_get(r->resume_value, "editedArtifactData")) != NULL)
			owj_value(&j, "editedArtifactData", v);
	}
	if (r->eligibility)
		owj_jsonb(&j, "openwop-eligibility", r->eligibility);
	resolved = owj_end(&j);
	if (r->fail_code)
		seq = ow_append(run, "interrupt.resolved", r->node_id, resolved);
	else
	{
		/* resumed at once: both events in one statement */
		owj_begin(&j);
		owj_str(&j, "nodeId", r->node_id);
		owj_str(&j, "interruptId", r->interrupt_id);
		if (r->resume_value)
			owj_jsonb(&j, "resumeValue", r->resume_value);
		seq = ow_append_pair(run, r->node_id, "interrupt.resolved", resolved, "node.resumed", owj_end(&j));
	}

	if (claim_plan == NULL)
	{
		Oid			types[10] = {TEXTOID, TEXTOID, JSONBOID, TEXTOID, TEXTOID, TEXTOID, INT8OID, TEXTOID,
		TEXTOID, TEXTOID};

		/*
		 * Name the run and node too: with only the id, a generic plan may
		 * pick the pending-per-node partial index on the tenant prefix and
		 * walk every pending interrupt of the tenant.
		 */
		claim_plan = ow_prepare("UPDATE openwop.interrupts"
								"   SET status = 'resolved', resolved_at = pg_catalog.now(),"
								"       resume_value = $3, decision = $4, action = $5,"
								"       resolved_by = $6, resolved_sequence = $7, reason = $8"
								" WHERE tenant OPERATOR(pg_catalog.=) $1"
								"   AND run_id OPERATOR(pg_catalog.=) $9"
								"   AND node_id OPERATOR(pg_catalog.=) $10"
								"   AND status OPERATOR(pg_catalog.=) 'pending'"
								"   AND interrupt_id OPERATOR(pg_catalog.=) $2", 10, types);
	}
	memset(nulls, ' ', sizeof(nulls));
	args[0] = CStringGetTextDatum(run->tenant);
	args[1] = CStringGetTextDatum(r->interrupt_id);
	args[2] = r->resume_value ? JsonbPGetDatum(r->resume_value) : (Datum) 0;
	nulls[2] = r->resume_value ? ' ' : 'n';
	args[3] = r->decision ? CStringGetTextDatum(r->decision) : (Datum) 0;
	nulls[3] = r->decision ? ' ' : 'n';
	args[4] = r->action ? CStringGetTextDatum(r->action) : (Datum) 0;
	nulls[4] = r->action ? ' ' : 'n';
	args[5] = r->principal ? CStringGetTextDatum(r->principal) : (Datum) 0;
	nulls[5] = r->principal ? ' ' : 'n';
	args[6] = Int64GetDatum(seq);
	args[7] = r->reason ? CStringGetTextDatum(r->reason) : (Datum) 0;
	nulls[7] = r->reason ? ' ' : 'n';
	args[8] = CStringGetTextDatum(run->run_id);
	args[9] = CStringGetTextDatum(r->node_id);
	if (SPI_execute_plan(claim_plan, args, nulls, false, 0) != SPI_OK_UPDATE || SPI_processed != 1)
		elog(ERROR, "interrupt \"%s\" is no longer pending", r->interrupt_id);

	/* INT-3: the job returns to pending unconditionally */
	if (job_plan == NULL)
	{
		Oid			types[4] = {TEXTOID, TEXTOID, TEXTOID, INT4OID};

		job_plan = ow_prepare("UPDATE openwop.node_executions SET status = 'pending'"
							  " WHERE tenant OPERATOR(pg_catalog.=) $1"
							  "   AND run_id OPERATOR(pg_catalog.=) $2"
							  "   AND node_id OPERATOR(pg_catalog.=) $3"
							  "   AND visit OPERATOR(pg_catalog.=) $4"
							  "   AND status OPERATOR(pg_catalog.=) 'interrupted'", 4, types);
	}
	args[1] = CStringGetTextDatum(run->run_id);
	args[2] = CStringGetTextDatum(r->node_id);
	args[3] = Int32GetDatum(r->visit);
	if (SPI_execute_plan(job_plan, args, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not resume execution of node \"%s\"", r->node_id);

	if (r->fail_code)
		ow_fail_closed(run, r->node_id, r->fail_code, r->fail_message, r->principal);
	if (!ow_run_is_terminal(run->status) && !settle_run_status(run) && !r->fail_code)
		run->current_node_id = (char *) r->node_id;
	return seq;
}
