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
 * Due deadlines are shared out fairly between tenants by due.c, reading
 * the index interrupts_due, which leads with the tenant.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "ipc/ipc.h"
#include "store/store.h"
#include "domain/internal.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

/*
 * Deadline work: the open interrupts with a deadline, the rows of the
 * partial index interrupts_due.
 */
#define DUE_FROM "openwop.open_interrupts i"
#define DUE_WORK "i.expires_at IS NOT NULL"

/*
 * Change one interrupt row of the locked run: q takes ($1 tenant,
 * $2 interrupt id[, $3 sequence]) and must change exactly that row.
 */
static void
change_interrupt(OwQuery *q, OwRun *run, const char *interrupt_id, int64 seq)
{
	Datum		args[3];

	args[0] = CStringGetTextDatum(run->tenant);
	args[1] = CStringGetTextDatum(interrupt_id);
	args[2] = Int64GetDatum(seq);
	if (ow_exec(q, args, NULL, false, 0) != 1)
		elog(ERROR, "could not settle the deadline of interrupt \"%s\"", interrupt_id);
}

/* Mark interrupt_id of the locked run expired (it was pending). */
static void
mark_expired(OwRun *run, const char *interrupt_id)
{
	static OwQuery q = {"UPDATE openwop.interrupts"
		"   SET status = 'expired', resolved_at = pg_catalog.clock_timestamp()"
		" WHERE tenant OPERATOR(pg_catalog.=) $1"
		"   AND interrupt_id OPERATOR(pg_catalog.=) $2"
		"   AND status OPERATOR(pg_catalog.=) 'pending'",
	2, {TEXTOID, TEXTOID}, SPI_OK_UPDATE};

	change_interrupt(&q, run, interrupt_id, 0);
	ow_expire_open_interrupt(run->tenant, interrupt_id);
}

/* Record that the run's terminal event at seq announced the expiry of interrupt_id. */
static void
mark_announced(OwRun *run, const char *interrupt_id, int64 seq)
{
	static OwQuery q = {"UPDATE openwop.interrupts SET resolved_sequence = $3"
		" WHERE tenant OPERATOR(pg_catalog.=) $1"
		"   AND interrupt_id OPERATOR(pg_catalog.=) $2"
		"   AND status OPERATOR(pg_catalog.=) 'expired'"
		"   AND resolved_sequence IS NULL",
	3, {TEXTOID, TEXTOID, INT8OID}, SPI_OK_UPDATE};

	change_interrupt(&q, run, interrupt_id, seq);
	ow_close_interrupt(run->tenant, interrupt_id);
}

/*
 * Apply the passed deadline of interrupt d in the locked run, on path
 * late (a late answer) or not (a sweep), and save the run.  The caller
 * has checked, under the lock, that d is due.
 */
void
ow_apply_deadline(OwRun *run, const OwDeadline *d, bool late)
{
	if (!d->expired)
		ow_count_decision(OW_STAT_EXPIRED);
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
		ow_fail_disposition(&r);
		r.notices = ow_outcome_notices(run, d->interrupt_id, d->node_id, d->payload, d->policy, true,
									   r.decision, r.action);
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

/*
 * Settle one due interrupt, if its run is free: false when another
 * transaction holds the run, or the interrupt is no longer due (a resolve
 * won the race).
 */
static void
settle_deadline(OwDueItem *due)
{
	static OwQuery q = {"SELECT i.kind, i.node_id, i.visit, i.status OPERATOR(pg_catalog.=) 'expired',"
		"       i.payload, i.policy"
		"  FROM " DUE_FROM
		" WHERE i.tenant OPERATOR(pg_catalog.=) $1"
		"   AND i.interrupt_id OPERATOR(pg_catalog.=) $2"
		"   AND " DUE_WORK
		"   AND i.expires_at OPERATOR(pg_catalog.<=) $3",
		3, {TEXTOID, TEXTOID, TIMESTAMPTZOID}, SPI_OK_SELECT};
	OwRun		run;
	OwDeadline	d;
	Datum		args[3];

	due->settled = false;
	due->busy = !ow_try_lock_run_id(&run, due->tenant, due->run_id);
	if (due->busy)
		return;
	args[0] = CStringGetTextDatum(due->tenant);
	args[1] = CStringGetTextDatum(due->id);
	args[2] = TimestampTzGetDatum(due->now);
	if (ow_exec(&q, args, NULL, false, 1) == 0)
		return;
	d.interrupt_id = due->id;
	d.kind = ow_col_text(0, 1);
	d.node_id = ow_col_text(0, 2);
	d.visit = (int32) ow_col_int64(0, 3);
	d.expired = ow_col_bool(0, 4);
	d.payload = ow_col_jsonb(0, 5);
	d.policy = ow_col_jsonb(0, 6);
	ow_apply_deadline(&run, &d, false);
	due->settled = true;
}


/* The tenants with deadline work, each with its earliest deadline: a loose scan, one index probe per tenant. */
static OwQuery deadline_tenants = {"WITH RECURSIVE t (tenant) AS ("
	"  (SELECT i.tenant FROM " DUE_FROM " WHERE " DUE_WORK
	"    ORDER BY i.tenant LIMIT 1)"
	"  UNION ALL"
	"  SELECT (SELECT i.tenant FROM " DUE_FROM " WHERE " DUE_WORK
	"             AND i.tenant OPERATOR(pg_catalog.>) t.tenant ORDER BY i.tenant LIMIT 1)"
	"    FROM t WHERE t.tenant IS NOT NULL)"
	" SELECT t.tenant, (SELECT i.expires_at FROM " DUE_FROM
	"                    WHERE " DUE_WORK " AND i.tenant OPERATOR(pg_catalog.=) t.tenant"
	"                    ORDER BY i.expires_at LIMIT 1)"
	"   FROM t WHERE t.tenant IS NOT NULL",
0, {InvalidOid}, SPI_OK_SELECT};

/* A tenant's due interrupts after the cursor ($3, $4), oldest first ($5 unused: one per interrupt). */
static OwQuery deadline_next = {"SELECT i.run_id, i.interrupt_id, 0, i.expires_at FROM " DUE_FROM
	" WHERE i.tenant OPERATOR(pg_catalog.=) $1 AND " DUE_WORK
	"   AND i.expires_at OPERATOR(pg_catalog.<=) $2"
	"   AND ROW(i.expires_at, i.interrupt_id) OPERATOR(pg_catalog.>) ROW($3, $4)"
	"   AND $5 IS NOT NULL"
	" ORDER BY i.expires_at, i.interrupt_id LIMIT $6",
6, {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID, INT4OID, INT4OID}, SPI_OK_SELECT};

static const OwDueSource deadlines = {"deadline", &deadline_tenants, &deadline_next, settle_deadline};

/*
 * Apply due deadlines, shared out fairly between tenants (ow_sweep_due);
 * returns how many were settled, *next the earliest deadline still pending.
 */
int
ow_sweep_deadlines(int max, void (*begin) (void), void (*end) (void), MemoryContext cxt,
				   TimestampTz *next, char *turn)
{
	return ow_sweep_due(&deadlines, max, begin, end, cxt, next, turn);
}
