/*-------------------------------------------------------------------------
 *
 * outcomes.c
 *	  Recording the outcome of an interrupt, shared by every resolve and the
 *	  expiry policy (deadlines.c): interrupt.resolved, the stored row, the
 *	  job back to pending (FlowDrop INT-3), then either node.resumed or the
 *	  fail-closed disposition of a rejection ("Rejection" in the OpenWOP
 *	  interrupt spec).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "openwop.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"

/* Is there an outgoing edge from node_id whose rule admits a failed source? */
static bool
failure_is_routed(OwRun *run, const char *node_id)
{
	static OwQuery q = {"SELECT 1 FROM openwop.runs r,"
		"       pg_catalog.jsonb_array_elements(r.definition OPERATOR(pg_catalog.->) 'edges') e"
		" WHERE r.tenant OPERATOR(pg_catalog.=) $1 AND r.run_id OPERATOR(pg_catalog.=) $2"
		"   AND (e OPERATOR(pg_catalog.->>) 'from') OPERATOR(pg_catalog.=) $3"
		"   AND (e OPERATOR(pg_catalog.->>) 'triggerRule') OPERATOR(pg_catalog.=) ANY"
		"       ('{all_complete,any_failed}'::pg_catalog.text[])"
		" LIMIT 1",
	3, {TEXTOID, TEXTOID, TEXTOID}, SPI_OK_SELECT};

	return run->has_definition && ow_run_exec(&q, run, node_id, true, 1) > 0;
}

/*
 * Fail closed ("Rejection" in the OpenWOP interrupt spec): the node fails with code (retryable false) in
 * this same transaction; the run goes on only over an all_complete or
 * any_failed edge, otherwise it fails naming the node.
 */
static void
fail_closed(OwRun *run, const char *node_id, const char *code, const char *message)
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
	ow_end_run(run, OW_FAIL, error, node_id, NULL, NULL);
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
	static OwQuery q = {"SELECT kind, node_id FROM openwop.interrupts"
		" WHERE tenant OPERATOR(pg_catalog.=) $1"
		"   AND run_id OPERATOR(pg_catalog.=) $2"
		"   AND status OPERATOR(pg_catalog.=) 'pending'"
		" ORDER BY requested_sequence DESC LIMIT 1",
	2, {TEXTOID, TEXTOID}, SPI_OK_SELECT};

	if (strncmp(run->status, "waiting-", 8) != 0)
		return false;
	if (ow_run_exec(&q, run, NULL, false, 1) > 0)
	{
		run->status = (char *) ow_waiting_status(ow_col_text(0, 1));
		run->current_node_id = ow_col_text(0, 2);
		return true;
	}
	run->status = "running";
	return false;
}


/*
 * The run's state once node_id's interrupt resumed: if another interrupt
 * is still pending (other_kind, other_node), a waiting run keeps waiting
 * on it; otherwise a waiting run resumes (INT-3: a run that was not
 * waiting is left alone) and names node_id as current.
 */
static void
resume_run_status(OwRun *run, const char *node_id, const char *other_kind, const char *other_node)
{
	if (strncmp(run->status, "waiting-", 8) == 0 && other_kind != NULL)
	{
		run->status = (char *) ow_waiting_status(other_kind);
		run->current_node_id = (char *) other_node;
		return;
	}
	if (strncmp(run->status, "waiting-", 8) == 0)
		run->status = "running";
	run->current_node_id = (char *) node_id;
}

/*
 * One statement appends the events, claims the interrupt (the run lock
 * makes this the only claim) and returns the job to pending (INT-3):
 * each statement costs executor start-up more than its rows.  The claim
 * names run and node too, so no generic plan can walk the tenant's
 * pending interrupts.  When the caller read the run's other pending
 * interrupt under the lock and the interrupt resumes, the run's new
 * state is known and its row is written by the same statement;
 * otherwise the statement finds what else holds the run (it sees the
 * interrupt as it was, hence "<> $12") and the caller saves the run.
 */
#define RECORD_CTE \
	"WITH appended AS (" \
	"  INSERT INTO openwop.events (tenant, run_id, sequence, type, node_id, payload)" \
	"  SELECT $1, $2, $3 OPERATOR(pg_catalog.+) v.k, v.type, $4, v.payload" \
	"    FROM (VALUES (0, 'interrupt.resolved', $5::pg_catalog.jsonb)," \
	"                 (1, 'node.resumed', $6::pg_catalog.jsonb)) v (k, type, payload)" \
	"   WHERE v.payload IS NOT NULL" \
	"), claimed AS (" \
	"  UPDATE openwop.interrupts" \
	"     SET status = 'resolved', resolved_at = pg_catalog.clock_timestamp()," \
	"         resume_value = $7, decision = $8, action = $9," \
	"         resolved_by = $10, resolved_sequence = $3, reason = $11" \
	"   WHERE tenant OPERATOR(pg_catalog.=) $1 AND run_id OPERATOR(pg_catalog.=) $2" \
	"     AND node_id OPERATOR(pg_catalog.=) $4 AND status OPERATOR(pg_catalog.=) 'pending'" \
	"     AND interrupt_id OPERATOR(pg_catalog.=) $12" \
	"  RETURNING 1" \
	"), resumed AS (" \
	"  UPDATE openwop.node_executions SET status = 'pending'" \
	"   WHERE tenant OPERATOR(pg_catalog.=) $1 AND run_id OPERATOR(pg_catalog.=) $2" \
	"     AND node_id OPERATOR(pg_catalog.=) $4 AND visit OPERATOR(pg_catalog.=) $13" \
	"     AND status OPERATOR(pg_catalog.=) 'interrupted'" \
	")"
#define RECORD_TYPES TEXTOID, TEXTOID, INT8OID, TEXTOID, JSONBOID, JSONBOID, JSONBOID, \
	TEXTOID, TEXTOID, JSONBOID, TEXTOID, TEXTOID, INT4OID
static OwQuery record_then_look = {RECORD_CTE
	" SELECT (SELECT pg_catalog.count(*) FROM claimed), o.kind, o.node_id"
	"   FROM (SELECT 1) one LEFT JOIN LATERAL ("
	"        SELECT kind, node_id FROM openwop.interrupts"
	"         WHERE tenant OPERATOR(pg_catalog.=) $1 AND run_id OPERATOR(pg_catalog.=) $2"
	"           AND status OPERATOR(pg_catalog.=) 'pending'"
	"           AND interrupt_id OPERATOR(pg_catalog.<>) $12"
	"         ORDER BY requested_sequence DESC LIMIT 1) o ON true",
13, {RECORD_TYPES}, SPI_OK_SELECT};
static OwQuery record_and_save = {RECORD_CTE
	", saved AS ("
	"  UPDATE openwop.runs"
	"     SET next_sequence = $14, status = $15, current_node_id = $16,"
	"         updated_at = pg_catalog.now()"
	"   WHERE tenant OPERATOR(pg_catalog.=) $1 AND run_id OPERATOR(pg_catalog.=) $2"
	"  RETURNING 1"
	")"
	" SELECT (SELECT pg_catalog.count(*) FROM claimed),"
	"        (SELECT pg_catalog.count(*) FROM saved)",
16, {RECORD_TYPES, INT8OID, TEXTOID, TEXTOID}, SPI_OK_SELECT};
#undef RECORD_TYPES
#undef RECORD_CTE

/*
 * Record the resolution r of a pending interrupt in the locked run, all in
 * the caller's transaction.  Returns the sequence of interrupt.resolved.
 * The caller saves the run unless r->saved says it was written already.
 */
int64
ow_record_resolution(OwRun *run, OwResolution *r)
{
	Datum		args[16];
	char		nulls[16];
	OwJson		j;
	Jsonb	   *resolved;
	Jsonb	   *resumed = NULL;
	char	   *other_kind;
	char	   *other_node;
	int64		seq;
	OwSubject	host;

	owj_begin(&j);
	owj_str(&j, "nodeId", r->node_id);
	owj_str(&j, "interruptId", r->interrupt_id);
	owj_str(&j, "kind", r->kind);
	if (r->resume_value)
		owj_jsonb(&j, "resumeValue", r->resume_value);
	/* the resolver, or the host when it decided (deadlines) */
	if (r->resolver == NULL)
	{
		ow_host_subject(&host, run->tenant);
		r->resolver = &host;
	}
	owj_subject(&j, "resolvedBy", r->resolver);
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
	if (!r->fail_code)
	{
		/* resumed at once: node.resumed follows in the same statement */
		owj_begin(&j);
		owj_str(&j, "nodeId", r->node_id);
		owj_str(&j, "interruptId", r->interrupt_id);
		if (r->resume_value)
			owj_jsonb(&j, "resumeValue", r->resume_value);
		resumed = owj_end(&j);
	}

	seq = run->next_sequence;
	memset(nulls, ' ', sizeof(nulls));
	args[0] = CStringGetTextDatum(run->tenant);
	args[1] = CStringGetTextDatum(run->run_id);
	args[2] = Int64GetDatum(seq);
	args[3] = CStringGetTextDatum(r->node_id);
	args[4] = JsonbPGetDatum(resolved);
	args[5] = resumed ? JsonbPGetDatum(resumed) : (Datum) 0;
	nulls[5] = resumed ? ' ' : 'n';
	args[6] = r->resume_value ? JsonbPGetDatum(r->resume_value) : (Datum) 0;
	nulls[6] = r->resume_value ? ' ' : 'n';
	args[7] = r->decision ? CStringGetTextDatum(r->decision) : (Datum) 0;
	nulls[7] = r->decision ? ' ' : 'n';
	args[8] = r->action ? CStringGetTextDatum(r->action) : (Datum) 0;
	nulls[8] = r->action ? ' ' : 'n';
	args[9] = JsonbPGetDatum(ow_subject_jsonb(r->resolver));
	args[10] = r->reason ? CStringGetTextDatum(r->reason) : (Datum) 0;
	nulls[10] = r->reason ? ' ' : 'n';
	args[11] = CStringGetTextDatum(r->interrupt_id);
	args[12] = Int32GetDatum(r->visit);
	run->next_sequence = seq + (resumed ? 2 : 1);
	run->appended += resumed ? 2 : 1;
	r->saved = false;

	if (resumed && r->other_known)
	{
		/*
		 * The run's new state is known: write it with the record.  A resumed
		 * run is never terminal, so of what ow_save_run writes only the
		 * sequence, status, current node and updated_at can have changed.
		 */
		resume_run_status(run, r->node_id, r->other_kind, r->other_node);
		Assert(!ow_run_is_terminal(run->status) && run->error == NULL && run->outputs == NULL);
		args[13] = Int64GetDatum(run->next_sequence);
		args[14] = CStringGetTextDatum(run->status);
		args[15] = run->current_node_id ? CStringGetTextDatum(run->current_node_id) : (Datum) 0;
		nulls[15] = run->current_node_id ? ' ' : 'n';
		if (ow_exec(&record_and_save, args, nulls, false, 0) != 1)
			elog(ERROR, "could not record the resolution of interrupt \"%s\"", r->interrupt_id);
		if (ow_col_int64(0, 1) != 1)
			elog(ERROR, "interrupt \"%s\" is no longer pending", r->interrupt_id);
		if (ow_col_int64(0, 2) != 1)
			elog(ERROR, "could not update run \"%s\"", run->run_id);
		ow_notify_later(run->run_id, run->first_sequence, run->next_sequence - 1);
		r->saved = true;
		return seq;
	}

	if (ow_exec(&record_then_look, args, nulls, false, 0) != 1)
		elog(ERROR, "could not record the resolution of interrupt \"%s\"", r->interrupt_id);
	if (ow_col_int64(0, 1) != 1)
		elog(ERROR, "interrupt \"%s\" is no longer pending", r->interrupt_id);
	other_kind = ow_col_text(0, 2);
	other_node = ow_col_text(0, 3);

	if (r->fail_code)
	{
		/* the disposition may end the run or route on: read what holds it afterwards */
		fail_closed(run, r->node_id, r->fail_code, r->fail_message);
		if (!ow_run_is_terminal(run->status))
			(void) settle_run_status(run);
	}
	else
		resume_run_status(run, r->node_id, other_kind, other_node);
	return seq;
}
