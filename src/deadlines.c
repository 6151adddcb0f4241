/*-------------------------------------------------------------------------
 *
 * deadlines.c
 *	  The one expiry policy: what a passed deadline does, whichever path
 *	  finds it (the timeout worker, openwop.sweep(), or a late answer).
 *
 * An approval past its deadline is rejected by timeout ({action: timeout,
 * decision: rejected, reason: timeout}, whatever onTimeout says) and the
 * rejection disposition applies, on every path.  Any other kind expires;
 * FlowDrop INT-18 ends the run it held open (its open jobs cancelled, the
 * run cancelled with reason "interrupt-expired", announced once), and
 * INT-23 makes the two paths differ in exactly one observable: a sweep
 * announces the expiry, a late answer expires the interrupt silently.
 * The run a late answer left open is then ended by the next sweep, which
 * therefore also takes interrupts that are expired but not yet announced.
 *
 * An expired interrupt's resolved_sequence is the run's terminal event,
 * which announced the expiry; it is NULL while the announcement is due (a
 * late answer expired it).  If the run ended otherwise meanwhile, that
 * ending is the announcement (INT-18: a recorded outcome is kept, never
 * announced twice).
 *
 * Due work is taken oldest deadline first with the run row locked FOR
 * UPDATE SKIP LOCKED, so runs that other transactions hold are passed
 * over without counting against the batch: one tenant holding many due
 * runs locked cannot delay another tenant's deadline.
 *
 *-------------------------------------------------------------------------
 */
#include "openwop.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"

/* The due interrupts, the same predicate as the partial index interrupts_due. */
#define DUE_PREDICATE \
	"i.expires_at IS NOT NULL" \
	"   AND (i.status OPERATOR(pg_catalog.=) 'pending'" \
	"        OR (i.status OPERATOR(pg_catalog.=) 'expired' AND i.resolved_sequence IS NULL))" \
	"   AND i.expires_at OPERATOR(pg_catalog.<=) pg_catalog.now()"

/* Mark interrupt_id of the locked run expired (it was pending). */
static void
mark_expired(OwRun *run, const char *interrupt_id)
{
	static SPIPlanPtr plan = NULL;
	Datum		args[2];

	if (plan == NULL)
	{
		Oid			types[2] = {TEXTOID, TEXTOID};

		plan = ow_prepare("UPDATE openwop.interrupts"
						  "   SET status = 'expired', resolved_at = pg_catalog.now()"
						  " WHERE tenant OPERATOR(pg_catalog.=) $1"
						  "   AND interrupt_id OPERATOR(pg_catalog.=) $2"
						  "   AND status OPERATOR(pg_catalog.=) 'pending'", 2, types);
	}
	args[0] = CStringGetTextDatum(run->tenant);
	args[1] = CStringGetTextDatum(interrupt_id);
	if (SPI_execute_plan(plan, args, NULL, false, 0) != SPI_OK_UPDATE || SPI_processed != 1)
		elog(ERROR, "could not expire interrupt \"%s\"", interrupt_id);
}

/* Record that the run's terminal event at seq announced the expiry of interrupt_id. */
static void
mark_announced(OwRun *run, const char *interrupt_id, int64 seq)
{
	static SPIPlanPtr plan = NULL;
	Datum		args[3];

	if (plan == NULL)
	{
		Oid			types[3] = {TEXTOID, TEXTOID, INT8OID};

		plan = ow_prepare("UPDATE openwop.interrupts SET resolved_sequence = $3"
						  " WHERE tenant OPERATOR(pg_catalog.=) $1"
						  "   AND interrupt_id OPERATOR(pg_catalog.=) $2"
						  "   AND status OPERATOR(pg_catalog.=) 'expired'"
						  "   AND resolved_sequence IS NULL", 3, types);
	}
	args[0] = CStringGetTextDatum(run->tenant);
	args[1] = CStringGetTextDatum(interrupt_id);
	args[2] = Int64GetDatum(seq);
	if (SPI_execute_plan(plan, args, NULL, false, 0) != SPI_OK_UPDATE || SPI_processed != 1)
		elog(ERROR, "could not record the announcement of interrupt \"%s\"", interrupt_id);
}

/*
 * Apply the passed deadline of interrupt d in the locked run, on path
 * late (a late answer) or not (a sweep), and save the run.  The caller
 * has checked, under the lock, that d is due.
 */
void
ow_apply_deadline(OwRun *run, const OwDeadline *d, bool late)
{
	if (strcmp(d->kind, "approval") == 0 && !d->expired)
	{
		OwResolution r = {0};

		/* a timeout never grants, whatever onTimeout says */
		r.interrupt_id = d->interrupt_id;
		r.kind = d->kind;
		r.node_id = d->node_id;
		r.visit = d->visit;
		r.decision = "rejected";
		r.action = "timeout";
		r.reason = "timeout";
		r.fail_code = "approval_rejected";
		r.fail_message = "the approval timed out";
		ow_record_resolution(run, &r);
		ow_save_run(run);
		return;
	}

	if (!d->expired)
		mark_expired(run, d->interrupt_id);
	if (late)
	{
		/* INT-23: announce nothing now; wake the worker to end the run (INT-18) */
		Assert(!d->expired);
		ow_deadline_raised();
		return;
	}
	if (ow_run_is_terminal(run->status))
	{
		/* the run ended otherwise after a late answer: that ending was the announcement */
		mark_announced(run, d->interrupt_id, run->next_sequence - 1);
		return;
	}
	mark_announced(run, d->interrupt_id,
				   ow_end_run(run, OW_CANCEL, NULL, NULL, "interrupt-expired", NULL));
	ow_save_run(run);
}

/* A due interrupt, copied out of SPI before it is settled. */
typedef struct DueInterrupt
{
	char	   *tenant;
	char	   *run_id;
	char	   *interrupt_id;
	bool		settled;
} DueInterrupt;

/*
 * Settle one due interrupt; its run is locked already (by the due query).
 * due->settled is false when it was no longer due: a resolve won the race.
 */
static void
settle_one(void *arg)
{
	static SPIPlanPtr plan = NULL;
	DueInterrupt *due = arg;
	OwRun		run;
	OwDeadline	d;
	Datum		args[2];
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;

	due->settled = false;
	ow_lock_run_id(&run, due->tenant, due->run_id);		/* held: reads the row */
	if (plan == NULL)
	{
		Oid			types[2] = {TEXTOID, TEXTOID};

		plan = ow_prepare("SELECT i.kind, i.node_id, i.visit, i.status OPERATOR(pg_catalog.=) 'expired'"
						  "  FROM openwop.interrupts i"
						  " WHERE i.tenant OPERATOR(pg_catalog.=) $1"
						  "   AND i.interrupt_id OPERATOR(pg_catalog.=) $2"
						  "   AND " DUE_PREDICATE, 2, types);
	}
	args[0] = CStringGetTextDatum(due->tenant);
	args[1] = CStringGetTextDatum(due->interrupt_id);
	if (SPI_execute_plan(plan, args, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not re-read interrupt \"%s\"", due->interrupt_id);
	if (SPI_processed == 0)
		return;
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	d.interrupt_id = due->interrupt_id;
	d.kind = SPI_getvalue(tup, desc, 1);
	d.node_id = SPI_getvalue(tup, desc, 2);
	d.visit = DatumGetInt32(SPI_getbinval(tup, desc, 3, &isnull));
	d.expired = DatumGetBool(SPI_getbinval(tup, desc, 4, &isnull));
	ow_apply_deadline(&run, &d, false);
	due->settled = true;
}

/*
 * Settle at most max due interrupts, oldest deadline first, skipping runs
 * that other transactions hold and the interrupts named in *failed.  Each
 * is settled in its own subtransaction: a failure is logged, added to
 * *failed (allocated in failed_cxt) and skipped (INT-18: recorded, never
 * raised).  Returns how many were settled; *found says how many were due.
 */
int
ow_sweep_deadlines(int max, List **failed, MemoryContext failed_cxt, int *found)
{
	static SPIPlanPtr plan = NULL;
	Datum		args[2];
	Datum	   *skip;
	ListCell   *lc;
	DueInterrupt *due;
	int			n;
	int			i;
	int			settled = 0;
	MemoryContext old;

	if (plan == NULL)
	{
		Oid			types[2] = {INT4OID, TEXTARRAYOID};

		/* the lock is taken as rows are found, so locked runs do not count against the limit */
		plan = ow_prepare("SELECT i.tenant, i.run_id, i.interrupt_id"
						  "  FROM openwop.interrupts i"
						  "  JOIN openwop.runs r ON r.tenant OPERATOR(pg_catalog.=) i.tenant"
						  "                     AND r.run_id OPERATOR(pg_catalog.=) i.run_id"
						  " WHERE " DUE_PREDICATE
						  "   AND i.interrupt_id OPERATOR(pg_catalog.<>) ALL ($2)"
						  " ORDER BY i.expires_at LIMIT $1"
						  "   FOR UPDATE OF r SKIP LOCKED", 2, types);
	}
	skip = palloc(sizeof(Datum) * (list_length(*failed) + 1));
	i = 0;
	foreach(lc, *failed)
		skip[i++] = CStringGetTextDatum((char *) lfirst(lc));
	args[0] = Int32GetDatum(max);
	args[1] = PointerGetDatum(construct_array(skip, i, TEXTOID, -1, false, TYPALIGN_INT));
	if (SPI_execute_plan(plan, args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not list due interrupts");
	n = (int) SPI_processed;
	due = palloc(sizeof(DueInterrupt) * (n + 1));
	for (i = 0; i < n; i++)
	{
		due[i].tenant = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		due[i].run_id = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
		due[i].interrupt_id = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 3);
	}
	*found = n;

	for (i = 0; i < n; i++)
	{
		ErrorData  *edata = ow_try_subtransaction(settle_one, &due[i]);

		if (edata == NULL)
		{
			settled += due[i].settled;
			continue;
		}
		/* a cancel stops the sweep; anything else is logged and skipped */
		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED || edata->sqlerrcode == ERRCODE_ADMIN_SHUTDOWN)
			ReThrowError(edata);
		ereport(WARNING,
				(errmsg("openwop: could not apply the deadline of interrupt \"%s\": %s",
						due[i].interrupt_id, edata->message)));
		FreeErrorData(edata);
		old = MemoryContextSwitchTo(failed_cxt);
		*failed = lappend(*failed, pstrdup(due[i].interrupt_id));
		MemoryContextSwitchTo(old);
	}
	return settled;
}
