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

#include "base/base.h"
#include "store/store.h"
#include "auth/auth.h"
#include "domain/internal.h"

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
 * The disposition of a resolution, from what it records: a declined
 * credential and a rejected approval (by vote or timeout) fail closed.
 * Every path that records one, deciding or deriving, sets it here.
 */
void
ow_fail_disposition(OwResolution *r)
{
	JsonbValue *outcome;

	r->fail_code = NULL;
	r->fail_message = NULL;
	if (strcmp(r->kind, "credential") == 0)
	{
		outcome = r->resume_value ? owj_get(r->resume_value, "outcome") : NULL;
		if (outcome == NULL || outcome->type != jbvString ||
			strcmp(owj_string(outcome), "authorized") != 0)
		{
			r->fail_code = "connector_auth_declined";
			r->fail_message = "the credential request was declined";
		}
	}
	else if (r->decision && strcmp(r->decision, "rejected") == 0)
	{
		r->fail_code = "approval_rejected";
		r->fail_message = r->action && strcmp(r->action, "timeout") == 0
			? "the approval timed out" : "the approval was rejected";
	}
}

/* The run's most recently raised pending interrupt, if any: what holds it. */
static void
held_by(OwRun *run, char **kind, char **node_id)
{
	static OwQuery q = {"SELECT kind, node_id FROM openwop.open_interrupts"
		" WHERE tenant OPERATOR(pg_catalog.=) $1"
		"   AND run_id OPERATOR(pg_catalog.=) $2"
		"   AND status OPERATOR(pg_catalog.=) 'pending'"
		" ORDER BY requested_sequence DESC LIMIT 1",
	2, {TEXTOID, TEXTOID}, SPI_OK_SELECT};

	*kind = NULL;
	*node_id = NULL;
	if (ow_run_exec(&q, run, NULL, false, 1) > 0)
	{
		*kind = ow_col_text(0, 1);
		*node_id = ow_col_text(0, 2);
	}
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
	char	   *kind;
	char	   *node_id;

	if (strncmp(run->status, "waiting-", 8) != 0)
		return false;
	held_by(run, &kind, &node_id);
	if (kind)
	{
		run->status = (char *) ow_waiting_status(kind);
		run->current_node_id = node_id;
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
 * The claim, with the writes of d: interrupt r becomes resolved with
 * sequence seq and is no longer open, and its node's execution returns
 * from interrupted to pending (INT-3).  The run lock makes it the only
 * one.  The interrupt is named by run and node too, so no generic plan of
 * its statement can walk the tenant's pending interrupts.  Each row is
 * looked for where the raise wrote it first.
 */
static void
claim(OwDirect *d, OwRun *run, OwResolution *r, int64 seq, Jsonb *resolved_by)
{
	static OwWrite resolve = {.table = OW_INTERRUPTS,.kind = OW_WRITE_UPDATE,
		.key = OW_INTERRUPTS_PKEY,.stored_tid = true,.ncols = 8,
		.cols = {INT_STATUS, INT_RESOLVED_AT, INT_RESUME_VALUE, INT_DECISION, INT_ACTION,
		INT_RESOLVED_BY, INT_RESOLVED_SEQUENCE, INT_REASON},
	.nconds = 3,.conds = {INT_RUN_ID, INT_NODE_ID, INT_STATUS}};
	static OwWrite resume = {.table = OW_NODE_EXECUTIONS,.kind = OW_WRITE_UPDATE,
		.key = OW_NODE_EXECUTIONS_PKEY,.stored_tid = true,.ncols = 1,.cols = {EXEC_STATUS},
	.nconds = 1,.conds = {EXEC_STATUS}};
	Datum		keys[5];
	Datum		values[8];
	bool		nulls[8] = {false};

	keys[0] = CStringGetTextDatum(run->tenant);
	keys[1] = CStringGetTextDatum(r->interrupt_id);
	keys[2] = CStringGetTextDatum(run->run_id);
	keys[3] = CStringGetTextDatum(r->node_id);
	keys[4] = CStringGetTextDatum("pending");
	values[0] = CStringGetTextDatum("resolved");
	values[1] = TimestampTzGetDatum(GetCurrentTimestamp());
	values[2] = PointerGetDatum(r->resume_value);
	nulls[2] = r->resume_value == NULL;
	values[3] = r->decision ? CStringGetTextDatum(r->decision) : (Datum) 0;
	nulls[3] = r->decision == NULL;
	values[4] = r->action ? CStringGetTextDatum(r->action) : (Datum) 0;
	nulls[4] = r->action == NULL;
	values[5] = JsonbPGetDatum(resolved_by);
	values[6] = Int64GetDatum(seq);
	values[7] = r->reason ? CStringGetTextDatum(r->reason) : (Datum) 0;
	nulls[7] = r->reason == NULL;
	if (!ow_write(d, &resolve, keys, values, nulls, &r->tid))
		ow_changed_meanwhile(OW_INTERRUPTS);
	ow_close_interrupt_in(d, run->tenant, r->interrupt_id, &r->open_tid);

	/* keys: tenant, run, node, visit; the condition: interrupted */
	keys[1] = CStringGetTextDatum(run->run_id);
	keys[2] = CStringGetTextDatum(r->node_id);
	keys[3] = Int32GetDatum(r->visit);
	keys[4] = CStringGetTextDatum("interrupted");
	values[0] = CStringGetTextDatum("pending");
	(void) ow_write(d, &resume, keys, values, NULL, &r->exec_tid);
}

/* The tables a claim reads, updates and deletes from. */
#define CLAIM_READS (OW_TABLE_BIT(OW_INTERRUPTS) | OW_TABLE_BIT(OW_NODE_EXECUTIONS) | \
					 OW_TABLE_BIT(OW_OPEN_INTERRUPTS))
#define CLAIM_UPDATES (OW_TABLE_BIT(OW_INTERRUPTS) | OW_TABLE_BIT(OW_NODE_EXECUTIONS))
#define CLAIM_DELETES OW_TABLE_BIT(OW_OPEN_INTERRUPTS)

/*
 * The whole record in one operation: the events, the claim, the
 * notifications of the outcome and, when the run's new state is known (it
 * resumes and what else holds it was read under the lock), the run row.
 * Returns the sequence of the first event.
 */
static int64
record(OwRun *run, OwResolution *r, Jsonb *resolved, Jsonb *resumed, Jsonb *resolved_by)
{
	const char *const types[2] = {"interrupt.resolved", "node.resumed"};
	Jsonb	   *payloads[2] = {resolved, resumed};
	bool		save = resumed != NULL && r->other_known;
	uint32		runs = save ? OW_TABLE_BIT(OW_RUNS) : 0;
	OwDirect	d;
	int64		seq;

	ow_begin(&d, CLAIM_READS | runs,
			 OW_TABLE_BIT(OW_EVENTS) | (r->notices ? OW_TABLE_BIT(OW_NOTIFICATIONS) : 0),
			 CLAIM_UPDATES | runs, CLAIM_DELETES);
	seq = ow_append_in(&d, run, r->node_id, resumed ? 2 : 1, types, payloads);
	claim(&d, run, r, seq, resolved_by);
	if (r->notices)
		ow_write_notices_in(&d, run, r->interrupt_id, r->notices);
	if (save)
	{
		resume_run_status(run, r->node_id, r->other_kind, r->other_node);
		ow_save_run_in(&d, run);
		r->saved = true;
	}
	ow_end(&d);
	return seq;
}

/*
 * A replay fork's derived interrupt.resolved: the members its chain
 * recorded, as they are, under this run's node and interrupt ids; and who
 * resolved it as recorded (else by_default).
 */
static Jsonb *
recorded_payload(const OwResolution *r, Jsonb *by_default, Jsonb **resolved_by)
{
	static const char *const ids[] = {"nodeId", "interruptId", NULL};
	JsonbValue *by = owj_get(r->recorded, "resolvedBy");
	OwJson		j;

	owj_begin(&j);
	owj_str(&j, "nodeId", r->node_id);
	owj_str(&j, "interruptId", r->interrupt_id);
	owj_members_except(&j, r->recorded, ids);
	*resolved_by = by ? owj_to_jsonb(by) : by_default;
	return owj_end(&j);
}

/*
 * Record the resolution r of a pending interrupt in the locked run, all in
 * the caller's transaction.  Returns the sequence of interrupt.resolved.
 * The caller saves the run unless r->saved says it was written already.
 */
int64
ow_record_resolution(OwRun *run, OwResolution *r)
{
	OwJson		j;
	Jsonb	   *resolved;
	Jsonb	   *resumed = NULL;
	char	   *other_kind;
	char	   *other_node;
	int64		seq;
	Jsonb	   *resolved_by;
	OwSubject	host;

	/* the resolver, or the host when it decided (deadlines) */
	if (r->resolver == NULL)
	{
		ow_host_subject(&host, run->tenant);
		r->resolver = &host;
	}
	/* in jsonb's key order (see json.c) */
	owj_begin(&j);
	owj_str(&j, "kind", r->kind);
	if (r->action)
		owj_str(&j, "action", r->action);
	owj_str(&j, "nodeId", r->node_id);
	if (r->reason)
		owj_str(&j, "reason", r->reason);
	if (r->decision)
		owj_str(&j, "decision", r->decision);
	owj_subject(&j, "resolvedBy", r->resolver);
	owj_str(&j, "interruptId", r->interrupt_id);
	if (r->resume_value)
		owj_jsonb(&j, "resumeValue", r->resume_value);
	if (r->resume_value && r->action)
	{
		JsonbValue *v;

		if ((v = owj_get(r->resume_value, "refineFeedback")) != NULL)
			owj_value(&j, "refineFeedback", v);
		if ((v = owj_get(r->resume_value, "editedArtifactData")) != NULL)
			owj_value(&j, "editedArtifactData", v);
	}
	/* the host resolved it; who vouched for the credential is history too */
	if (r->policy)
		owj_jsonb(&j, "openwop-policy", r->policy);
	if (r->artifact)
		owj_jsonb(&j, "openwop-artifact", r->artifact);
	if (r->confirmed_by)
		owj_subject(&j, "openwop-confirmedBy", r->confirmed_by);
	if (r->eligibility)
		owj_jsonb(&j, "openwop-eligibility", r->eligibility);
	resolved = owj_end(&j);
	if (!r->fail_code)
	{
		/* resumed at once: node.resumed follows interrupt.resolved */
		owj_begin(&j);
		owj_str(&j, "nodeId", r->node_id);
		owj_str(&j, "interruptId", r->interrupt_id);
		if (r->resume_value)
			owj_jsonb(&j, "resumeValue", r->resume_value);
		resumed = owj_end(&j);
	}

	/* the events, then the claim: the run lock makes it the only one */
	r->saved = false;
	resolved_by = ow_subject_jsonb(r->resolver);
	if (r->recorded)
		resolved = recorded_payload(r, resolved_by, &resolved_by);
	seq = record(run, r, resolved, resumed, resolved_by);
	if (r->saved)
		return seq;

	if (r->fail_code)
	{
		/* the disposition may end the run or route on: read what holds it afterwards */
		fail_closed(run, r->node_id, r->fail_code, r->fail_message);
		if (!ow_run_is_terminal(run->status))
			(void) settle_run_status(run);
	}
	else if (r->other_known)
		resume_run_status(run, r->node_id, r->other_kind, r->other_node);
	else
	{
		held_by(run, &other_kind, &other_node);
		resume_run_status(run, r->node_id, other_kind, other_node);
	}
	return seq;
}
