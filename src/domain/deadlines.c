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
 * Due work is shared out fairly: a sweep takes the tenants with due work
 * (a loose scan of the index interrupts_due, which leads with the tenant),
 * then settles up to OW_DUE_ROUND of each tenant's oldest due interrupts
 * in turn, round after round.  A tenant with a burst of thousands of due
 * deadlines gets its share of each round, not the whole worker.  Each
 * tenant's due list is walked once per sweep with a cursor, and a run
 * another transaction holds is passed over (SKIP LOCKED) without waiting:
 * a thousand runs held locked cost one look each, then nothing.
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

/* How many of one tenant's due interrupts a round of a sweep takes. */
#define OW_DUE_ROUND 10

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
	TimestampTz now;			/* due at this time */
	bool		busy;			/* out: another transaction holds its run */
	bool		settled;		/* out: its deadline was applied */
} DueInterrupt;

/*
 * Settle one due interrupt, if its run is free: false when another
 * transaction holds the run, or the interrupt is no longer due (a resolve
 * won the race).
 */
static void
settle_one(void *arg)
{
	static OwQuery q = {"SELECT i.kind, i.node_id, i.visit, i.status OPERATOR(pg_catalog.=) 'expired'"
		"  FROM " DUE_FROM
		" WHERE i.tenant OPERATOR(pg_catalog.=) $1"
		"   AND i.interrupt_id OPERATOR(pg_catalog.=) $2"
		"   AND " DUE_WORK
		"   AND i.expires_at OPERATOR(pg_catalog.<=) $3",
		3, {TEXTOID, TEXTOID, TIMESTAMPTZOID}, SPI_OK_SELECT};
	DueInterrupt *due = arg;
	OwRun		run;
	OwDeadline	d;
	Datum		args[3];

	due->settled = false;
	due->busy = !ow_try_lock_run_id(&run, due->tenant, due->run_id);
	if (due->busy)
		return;
	args[0] = CStringGetTextDatum(due->tenant);
	args[1] = CStringGetTextDatum(due->interrupt_id);
	args[2] = TimestampTzGetDatum(due->now);
	if (ow_exec(&q, args, NULL, false, 1) == 0)
		return;
	d.interrupt_id = due->interrupt_id;
	d.kind = ow_col_text(0, 1);
	d.node_id = ow_col_text(0, 2);
	d.visit = (int32) ow_col_int64(0, 3);
	d.expired = ow_col_bool(0, 4);
	ow_apply_deadline(&run, &d, false);
	due->settled = true;
}

/* Settle due in a subtransaction: a failure is logged and skipped (INT-18: recorded, never raised). */
static void
settle_logged(DueInterrupt *due)
{
	ErrorData  *edata = ow_try_subtransaction(settle_one, due);

	if (edata == NULL)
		return;
	/* a cancel stops the sweep; anything else is logged and skipped */
	if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED || edata->sqlerrcode == ERRCODE_ADMIN_SHUTDOWN)
		ReThrowError(edata);
	ereport(WARNING,
			(errmsg("openwop: could not apply the deadline of interrupt \"%s\": %s",
					due->interrupt_id, edata->message)));
	FreeErrorData(edata);
	due->busy = false;
	due->settled = false;
}

/* A tenant with deadline work, and how far this sweep has walked its due list. */
typedef struct DueTenant
{
	char	   *tenant;
	TimestampTz first;			/* its earliest deadline */
	TimestampTz after_at;		/* cursor: walked up to (after_at, after_id) */
	char	   *after_id;
	bool		done;
} DueTenant;

/*
 * The tenants with deadline work, each with its earliest deadline, in
 * cxt; *next is the earliest of all (DT_NOEND when there is none).  A
 * loose scan: one index probe per tenant, however many deadlines it has.
 */
static List *
deadline_tenants(MemoryContext cxt, TimestampTz *next)
{
	static OwQuery q = {"WITH RECURSIVE t (tenant) AS ("
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
	List	   *out = NIL;
	uint64		n = ow_exec(&q, NULL, NULL, true, 0);
	uint64		i;

	*next = DT_NOEND;
	for (i = 0; i < n; i++)
	{
		MemoryContext old = MemoryContextSwitchTo(cxt);
		DueTenant  *t = palloc0(sizeof(DueTenant));
		bool		isnull;

		t->tenant = ow_col_text(i, 1);
		t->first = DatumGetTimestampTz(ow_col_datum(i, 2, TIMESTAMPTZOID, &isnull));
		t->after_at = DT_NOBEGIN;
		t->after_id = "";
		out = lappend(out, t);
		MemoryContextSwitchTo(old);
		*next = Min(*next, t->first);
	}
	return out;
}

/* The next at most n due interrupts of tenant t after its cursor, oldest first; advances the cursor. */
static int
next_due(DueTenant *t, TimestampTz now, int n, DueInterrupt *due, MemoryContext cxt)
{
	static OwQuery q = {"SELECT i.run_id, i.interrupt_id, i.expires_at FROM " DUE_FROM
		" WHERE i.tenant OPERATOR(pg_catalog.=) $1 AND " DUE_WORK
		"   AND i.expires_at OPERATOR(pg_catalog.<=) $2"
		"   AND ROW(i.expires_at, i.interrupt_id) OPERATOR(pg_catalog.>) ROW($3, $4)"
		" ORDER BY i.expires_at, i.interrupt_id LIMIT $5",
		5, {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID, INT4OID}, SPI_OK_SELECT};
	Datum		args[5];
	uint64		found;
	uint64		i;

	args[0] = CStringGetTextDatum(t->tenant);
	args[1] = TimestampTzGetDatum(now);
	args[2] = TimestampTzGetDatum(t->after_at);
	args[3] = CStringGetTextDatum(t->after_id);
	args[4] = Int32GetDatum(n);
	found = ow_exec(&q, args, NULL, true, 0);
	for (i = 0; i < found; i++)
	{
		MemoryContext old = MemoryContextSwitchTo(cxt);
		bool		isnull;

		due[i].tenant = t->tenant;
		due[i].run_id = ow_col_text(i, 1);
		due[i].interrupt_id = ow_col_text(i, 2);
		due[i].now = now;
		t->after_at = DatumGetTimestampTz(ow_col_datum(i, 3, TIMESTAMPTZOID, &isnull));
		t->after_id = due[i].interrupt_id;
		MemoryContextSwitchTo(old);
	}
	if (found < (uint64) n)
		t->done = true;
	return (int) found;
}

/*
 * Apply due deadlines, sharing them out fairly between tenants: round
 * after round, up to OW_DUE_ROUND of each tenant's oldest.  At most max
 * are tried; runs another transaction holds are looked at, not counted.
 * Each is settled in a subtransaction under its run's lock; a
 * run another transaction holds is passed over.  begin and end, when not
 * NULL, bracket each piece of work in a transaction of its own (the
 * worker: it holds one run's lock at a time); otherwise everything runs
 * in the caller's transaction.  Work lives in cxt.  turn, when not NULL
 * (OW_TENANT_BUF bytes), names the tenant whose turn was last: the rounds
 * begin after it, and it is updated.  Returns how many were settled;
 * *next is the earliest deadline still pending when it started (DT_NOEND
 * if none), for the worker's sleep.
 */
int
ow_sweep_deadlines(int max, void (*begin) (void), void (*end) (void), MemoryContext cxt,
				   TimestampTz *next, char *turn)
{
	TimestampTz now = GetCurrentTimestamp();
	List	   *tenants;
	ListCell   *lc;
	DueInterrupt *due = MemoryContextAlloc(cxt, sizeof(DueInterrupt) * OW_DUE_ROUND);
	int			tried = 0;
	int			settled = 0;
	bool		more = true;

	if (begin)
		begin();
	tenants = deadline_tenants(cxt, next);
	if (end)
		end();

	/* the round goes on where the last sweep stopped, so no tenant waits for ever behind the first */
	if (turn && turn[0] != '\0')
	{
		int			k = 0;

		foreach(lc, tenants)
		{
			if (strcmp(((DueTenant *) lfirst(lc))->tenant, turn) > 0)
				break;
			k++;
		}
		if (k > 0 && k < list_length(tenants))
		{
			MemoryContext old = MemoryContextSwitchTo(cxt);

			tenants = list_concat(list_copy_tail(tenants, k), list_truncate(list_copy(tenants), k));
			MemoryContextSwitchTo(old);
		}
	}

	while (more && tried < max)
	{
		more = false;
		foreach(lc, tenants)
		{
			DueTenant  *t = lfirst(lc);
			int			n;
			int			k;

			if (t->done || t->first > now || tried >= max)
				continue;
			if (begin)
				begin();
			n = next_due(t, now, Min(OW_DUE_ROUND, max - tried), due, cxt);
			if (end)
				end();
			more |= !t->done;
			for (k = 0; k < n; k++)
			{
				if (begin)
					begin();
				settle_logged(&due[k]);
				if (end)
					end();
				/* a busy run cost one look; it does not count against max */
				settled += due[k].settled;
				tried += !due[k].busy;
			}
			if (turn && n > 0)
				strlcpy(turn, t->tenant, OW_TENANT_BUF);
		}
	}
	return settled;
}
