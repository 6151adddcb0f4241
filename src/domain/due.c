/*-------------------------------------------------------------------------
 *
 * due.c
 *	  Work that falls due, shared out fairly between tenants: the deadlines
 *	  of interrupts (deadlines.c) and the steps of gates (reminders.c).
 *
 * A sweep takes the tenants with due work (a loose scan of an index that
 * leads with the tenant), then settles up to OW_DUE_ROUND of each
 * tenant's oldest due items in turn, round after round.  A tenant with a
 * burst of thousands of due items gets its share of each round, not the
 * whole worker.  Each tenant's due list is walked once per sweep with a
 * cursor, and a run another transaction holds is passed over (SKIP
 * LOCKED) without waiting: a thousand runs held locked cost one look
 * each, then nothing.
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

/* How many of one tenant's due items a round of a sweep takes. */
#define OW_DUE_ROUND 10

/* Settle due in a subtransaction: a failure is logged and skipped (INT-18: recorded, never raised). */
static void
settle_logged(const OwDueSource *src, OwDueItem *due)
{
	ErrorData  *edata = ow_try_subtransaction((void (*) (void *)) src->settle, due);

	if (edata == NULL)
		return;
	/* a cancel stops the sweep; anything else is logged and skipped */
	if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED || edata->sqlerrcode == ERRCODE_ADMIN_SHUTDOWN)
		ReThrowError(edata);
	ereport(WARNING,
			(errmsg("openwop: could not apply the %s of interrupt \"%s\": %s",
					src->what, due->id, edata->message)));
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
	int32		after_n;
	bool		done;
} DueTenant;

/*
 * The tenants with deadline work, each with its earliest deadline, in
 * cxt; *next is the earliest of all (DT_NOEND when there is none).  A
 * loose scan: one index probe per tenant, however many deadlines it has.
 */
static List *
due_tenants(const OwDueSource *src, MemoryContext cxt, TimestampTz *next)
{
	List	   *out = NIL;
	uint64		n = ow_exec(src->tenants, NULL, NULL, true, 0);
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
next_due(const OwDueSource *src, DueTenant *t, TimestampTz now, int n, OwDueItem *due,
		 MemoryContext cxt)
{
	Datum		args[6];
	uint64		found;
	uint64		i;

	args[0] = CStringGetTextDatum(t->tenant);
	args[1] = TimestampTzGetDatum(now);
	args[2] = TimestampTzGetDatum(t->after_at);
	args[3] = CStringGetTextDatum(t->after_id);
	args[4] = Int32GetDatum(t->after_n);
	args[5] = Int32GetDatum(n);
	found = ow_exec(src->next, args, NULL, true, 0);
	for (i = 0; i < found; i++)
	{
		MemoryContext old = MemoryContextSwitchTo(cxt);
		bool		isnull;

		due[i].tenant = t->tenant;
		due[i].run_id = ow_col_text(i, 1);
		due[i].id = ow_col_text(i, 2);
		due[i].n = (int32) ow_col_int64(i, 3);
		due[i].now = now;
		t->after_at = DatumGetTimestampTz(ow_col_datum(i, 4, TIMESTAMPTZOID, &isnull));
		t->after_id = due[i].id;
		t->after_n = due[i].n;
		MemoryContextSwitchTo(old);
	}
	if (found < (uint64) n)
		t->done = true;
	return (int) found;
}

/*
 * Settle the due work of src, sharing it out fairly between tenants: round
 * after round, up to OW_DUE_ROUND of each tenant's oldest.  At most max
 * are tried, an item counting its weight (a step that told a thousand
 * people, a thousand); runs another transaction holds are looked at, not
 * counted.
 * Each is settled in a subtransaction under its run's lock; a
 * run another transaction holds is passed over.  begin and end, when not
 * NULL, bracket each piece of work in a transaction of its own (the
 * worker: it holds one run's lock at a time); otherwise everything runs
 * in the caller's transaction.  Work lives in cxt.  turn, when not NULL
 * (OW_TENANT_BUF bytes), names the tenant whose turn was last: the rounds
 * begin after it, and it is updated.  Returns how many were settled;
 * *next is the earliest due work still pending when it started (DT_NOEND
 * if none), for the worker's sleep.
 */
int
ow_sweep_due(const OwDueSource *src, int max, void (*begin) (void), void (*end) (void),
			 MemoryContext cxt, TimestampTz *next, char *turn)
{
	TimestampTz now = GetCurrentTimestamp();
	List	   *tenants;
	ListCell   *lc;
	OwDueItem *due = MemoryContextAlloc(cxt, sizeof(OwDueItem) * OW_DUE_ROUND);
	int			tried = 0;
	int			settled = 0;
	bool		more = true;

	if (begin)
		begin();
	tenants = due_tenants(src, cxt, next);
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
			n = next_due(src, t, now, Min(OW_DUE_ROUND, max - tried), due, cxt);
			if (end)
				end();
			more |= !t->done;
			for (k = 0; k < n; k++)
			{
				if (begin)
					begin();
				due[k].weight = 1;
				settle_logged(src, &due[k]);
				if (end)
					end();
				/* a busy run cost one look; it does not count against max, a heavy item counts its weight */
				settled += due[k].settled;
				tried += due[k].busy ? 0 : Max(1, due[k].weight);
			}
			if (turn && n > 0)
				strlcpy(turn, t->tenant, OW_TENANT_BUF);
		}
	}
	return settled;
}
