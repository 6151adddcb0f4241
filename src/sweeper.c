/*-------------------------------------------------------------------------
 *
 * sweeper.c
 *	  Deadlines: openwop.sweep() and the timeout worker that runs it.
 *
 * A pending interrupt whose timeoutMs has passed is settled here: an
 * approval is rejected by timeout ({action: timeout, decision: rejected,
 * reason: timeout}, whatever onTimeout says) and the rejection disposition
 * applies; any other kind expires and the run it held open is cancelled,
 * announced once (FlowDrop INT-18).  An absent or zero deadline never
 * expires (INT-23).  Each interrupt is settled in its own subtransaction
 * under its run's row lock, so a racing resolve ends with one outcome and
 * one failure never stops the sweep.
 *
 * The worker (loaded through shared_preload_libraries) sleeps until the
 * next deadline, at most openwop.sweeper_interval; a transaction that
 * raises an interrupt with a deadline wakes it at commit.  Deadlines that
 * passed while the server was down are applied on its first pass.
 *
 *-------------------------------------------------------------------------
 */
#include "openwop.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(ow_sweep);

PGDLLEXPORT void ow_sweeper_main(Datum arg);

extern char *ow_database;
extern int	ow_sweeper_interval;

/* Shared state: where to find the worker, to wake it. */
typedef struct OwShared
{
	slock_t		mutex;
	Latch	   *worker_latch;
} OwShared;

static OwShared *ow_shared = NULL;
static bool deadline_raised = false;
static bool xact_callback_registered = false;

/* A due interrupt, copied out of SPI before it is settled. */
typedef struct DueInterrupt
{
	char	   *tenant;
	char	   *run_id;
	char	   *interrupt_id;
	bool		settled;
} DueInterrupt;

/*
 * Settle one due interrupt under its run's lock; false when it was no
 * longer pending and due (a resolve won the race) or its run is busy.
 */
static bool
settle_due(DueInterrupt *due)
{
	static SPIPlanPtr plan = NULL;
	static SPIPlanPtr expire_plan = NULL;
	OwRun		run;
	Datum		args[2];
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;
	char	   *kind;
	char	   *node_id;
	int32		visit;

	/* a run another transaction holds is left for a later pass */
	if (!ow_try_lock_run_id(&run, due->tenant, due->run_id) || ow_run_is_terminal(run.status))
		return false;
	if (plan == NULL)
	{
		Oid			types[2] = {TEXTOID, TEXTOID};

		plan = ow_prepare("SELECT kind, node_id, visit FROM openwop.interrupts"
						  " WHERE tenant OPERATOR(pg_catalog.=) $1"
						  "   AND interrupt_id OPERATOR(pg_catalog.=) $2"
						  "   AND status OPERATOR(pg_catalog.=) 'pending'"
						  "   AND expires_at OPERATOR(pg_catalog.<=) pg_catalog.now()", 2, types);
		expire_plan = ow_prepare("UPDATE openwop.interrupts"
								 "   SET status = 'expired', resolved_at = pg_catalog.now()"
								 " WHERE tenant OPERATOR(pg_catalog.=) $1"
								 "   AND interrupt_id OPERATOR(pg_catalog.=) $2"
								 "   AND status OPERATOR(pg_catalog.=) 'pending'", 2, types);
	}
	args[0] = CStringGetTextDatum(due->tenant);
	args[1] = CStringGetTextDatum(due->interrupt_id);
	if (SPI_execute_plan(plan, args, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not re-read interrupt \"%s\"", due->interrupt_id);
	if (SPI_processed == 0)
		return false;
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	kind = SPI_getvalue(tup, desc, 1);
	node_id = SPI_getvalue(tup, desc, 2);
	visit = DatumGetInt32(SPI_getbinval(tup, desc, 3, &isnull));

	if (strcmp(kind, "approval") == 0)
	{
		OwResolution r = {0};

		/* a timeout never grants, whatever onTimeout says */
		r.interrupt_id = due->interrupt_id;
		r.kind = kind;
		r.node_id = node_id;
		r.visit = visit;
		r.decision = "rejected";
		r.action = "timeout";
		r.reason = "timeout";
		r.fail_code = "approval_rejected";
		r.fail_message = "the approval timed out";
		ow_record_resolution(&run, &r);
	}
	else
	{
		/* INT-18: the expired interrupt ends the run it held open */
		if (SPI_execute_plan(expire_plan, args, NULL, false, 0) != SPI_OK_UPDATE)
			elog(ERROR, "could not expire interrupt \"%s\"", due->interrupt_id);
		ow_end_run(&run, OW_CANCEL, NULL, NULL, "interrupt-expired", NULL);
	}
	ow_save_run(&run);
	return true;
}

static void
settle_one(void *arg)
{
	DueInterrupt *due = arg;

	due->settled = settle_due(due);
}

/*
 * Settle at most max due interrupts, oldest deadline first.  Returns how
 * many were settled.  A failure settling one is logged and skipped (INT-18:
 * recorded, never raised), each in its own subtransaction.
 */
int
ow_sweep_deadlines(int max)
{
	static SPIPlanPtr plan = NULL;
	Datum		args[1];
	DueInterrupt *due;
	int			n;
	int			i;
	int			settled = 0;

	if (plan == NULL)
	{
		Oid			types[1] = {INT4OID};

		plan = ow_prepare("SELECT tenant, run_id, interrupt_id FROM openwop.interrupts"
						  " WHERE status OPERATOR(pg_catalog.=) 'pending'"
						  "   AND expires_at IS NOT NULL"
						  "   AND expires_at OPERATOR(pg_catalog.<=) pg_catalog.now()"
						  " ORDER BY expires_at LIMIT $1", 1, types);
	}
	args[0] = Int32GetDatum(max);
	if (SPI_execute_plan(plan, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not list due interrupts");
	n = (int) SPI_processed;
	due = palloc(sizeof(DueInterrupt) * (n + 1));
	for (i = 0; i < n; i++)
	{
		due[i].tenant = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		due[i].run_id = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
		due[i].interrupt_id = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 3);
	}

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
	}
	return settled;
}

/*
 * openwop.sweep(max) → integer
 *
 * Applies due deadlines and idempotency retention once (at most max of
 * each); returns how many rows it settled or removed.  The worker runs the
 * same code; pg_cron users may schedule this instead.
 */
Datum
ow_sweep(PG_FUNCTION_ARGS)
{
	int32		max = PG_ARGISNULL(0) ? 1000 : PG_GETARG_INT32(0);
	OwPriv		priv;
	int			n;

	if (max < 1)
		ow_validation_error("max", "max must be at least 1, not %d", max);
	ow_require_every_tenant("sweep()");
	SPI_connect();
	ow_become_owner(&priv);
	n = ow_sweep_deadlines(max);
	n += ow_purge_idempotency(max);
	ow_restore_user(&priv);
	SPI_finish();
	PG_RETURN_INT32(n);
}

/* ----------
 * Waking the worker when a transaction raises an interrupt with a deadline
 * ----------
 */
static void
sweeper_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT && deadline_raised && ow_shared != NULL)
	{
		Latch	   *latch;

		SpinLockAcquire(&ow_shared->mutex);
		latch = ow_shared->worker_latch;
		SpinLockRelease(&ow_shared->mutex);
		if (latch)
			SetLatch(latch);
	}
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PARALLEL_ABORT)
		deadline_raised = false;
}

/* Called when this transaction raised an interrupt with a deadline. */
void
ow_deadline_raised(void)
{
	if (ow_shared == NULL)
		return;					/* no worker: openwop.sweep() applies deadlines */
	if (!xact_callback_registered)
	{
		RegisterXactCallback(sweeper_xact_callback, NULL);
		xact_callback_registered = true;
	}
	deadline_raised = true;
}

/* ----------
 * The worker
 * ----------
 */

Size
ow_sweeper_shmem_size(void)
{
	return MAXALIGN(sizeof(OwShared));
}

/* Called under AddinShmemInitLock. */
void
ow_sweeper_shmem_init(void)
{
	bool		found;

	ow_shared = ShmemInitStruct("openwop_interrupt", sizeof(OwShared), &found);
	if (!found)
	{
		SpinLockInit(&ow_shared->mutex);
		ow_shared->worker_latch = NULL;
	}
}

static void
sweeper_detach(int code, Datum arg)
{
	SpinLockAcquire(&ow_shared->mutex);
	ow_shared->worker_latch = NULL;
	SpinLockRelease(&ow_shared->mutex);
}

/*
 * One pass in its own transaction.  Returns how long to sleep, in ms: until
 * the next deadline, at most openwop.sweeper_interval, 0 when a full batch
 * suggests more work is due.
 */
static long
sweeper_pass(void)
{
	long		sleep_ms = (long) ow_sweeper_interval * 1000L;
	const int	batch = 1000;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, "openwop: applying deadlines");

	if (OidIsValid(get_extension_oid("openwop_interrupt", true)))
	{
		OwPriv		priv;
		int			n;

		ow_become_owner(&priv);
		n = ow_sweep_deadlines(batch);
		n += ow_purge_idempotency(batch);
		if (n >= batch)
			sleep_ms = 0;
		else if (SPI_execute("SELECT EXTRACT(EPOCH FROM pg_catalog.min(expires_at) OPERATOR(pg_catalog.-) pg_catalog.now())"
							 "  FROM openwop.interrupts"
							 " WHERE status OPERATOR(pg_catalog.=) 'pending' AND expires_at IS NOT NULL",
							 true, 1) == SPI_OK_SELECT && SPI_processed == 1)
		{
			bool		isnull;
			Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

			if (!isnull)
			{
				double		ms = DatumGetFloat8(DirectFunctionCall1(numeric_float8, d)) * 1000.0;

				/*
				 * Wake just after the next deadline.  One already due was left
				 * because its run is busy: retry in a second, not in a hot loop.
				 */
				sleep_ms = Min(sleep_ms, ms > 0 ? (long) ms + 10 : 1000L);
			}
		}
		ow_restore_user(&priv);
	}

	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_activity(STATE_IDLE, NULL);
	return sleep_ms;
}

static void
sweeper_attach(void)
{
	SpinLockAcquire(&ow_shared->mutex);
	ow_shared->worker_latch = MyLatch;
	SpinLockRelease(&ow_shared->mutex);
	before_shmem_exit(sweeper_detach, (Datum) 0);
}

void
ow_sweeper_main(Datum arg)
{
	/* an error in a pass is logged; the worker backs off 10 s and carries on */
	ow_worker_main("openwop timeout worker", sweeper_attach, sweeper_pass, 10000L);
}
