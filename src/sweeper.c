/*-------------------------------------------------------------------------
 *
 * sweeper.c
 *	  openwop.sweep() and the timeout worker, the two callers of the
 *	  expiry policy (deadlines.c) that look for due work.
 *
 * The worker (loaded through shared_preload_libraries) settles each due
 * interrupt in a transaction of its own, so it holds one run's lock at a
 * time and a failure or a busy run delays nobody else.  It sleeps until
 * the next deadline, at most openwop.sweeper_interval; a transaction that
 * raises an interrupt with a deadline (or that a late answer expired)
 * wakes it at commit.  Deadlines that passed while the server was down are
 * applied on its first pass.  sweep() runs in its caller's transaction:
 * it settles up to max interrupts, each in a subtransaction, and holds
 * their runs locked until that transaction ends.
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
#include "utils/memutils.h"
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
	TimestampTz next;
	int			n;

	if (max < 1)
		ow_validation_error("max", "max must be at least 1, not %d", max);
	ow_require_every_tenant("sweep()");
	SPI_connect();
	ow_become_owner(&priv);
	n = ow_sweep_deadlines(max, NULL, NULL, CurrentMemoryContext, &next, NULL);
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

/* The worker's transactions: each runs as the extension owner. */
static OwPriv worker_priv;

static void
worker_begin(void)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	ow_become_owner(&worker_priv);
}

static void
worker_end(void)
{
	ow_restore_user(&worker_priv);
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
}

/* Is the extension installed in the worker's database? */
static bool
installed(void)
{
	bool		found;

	StartTransactionCommand();
	found = OidIsValid(get_extension_oid("openwop_interrupt", true));
	CommitTransactionCommand();
	return found;
}

/*
 * One pass: settle due deadlines, each in a transaction of its own (at
 * most batch of them, shared fairly between tenants), purge expired
 * idempotency records, then say how long to sleep, in ms: until the next
 * deadline, at most openwop.sweeper_interval, 0 when the batch ran out
 * with more work due.
 */
static long
sweeper_pass(void)
{
	const int	batch = 1000;
	long		sleep_ms = (long) ow_sweeper_interval * 1000L;
	static MemoryContext pass_cxt = NULL;
	static char turn[OW_TENANT_BUF];	/* whose turn was last, across passes */
	TimestampTz next;
	int			settled;
	int			purged;

	if (!installed())
		return sleep_ms;
	/* reset, not deleted, each pass: an error escaping a pass must not leak it */
	if (pass_cxt == NULL)
		pass_cxt = AllocSetContextCreate(TopMemoryContext, "openwop timeout pass", ALLOCSET_SMALL_SIZES);
	MemoryContextReset(pass_cxt);

	pgstat_report_activity(STATE_RUNNING, "openwop: applying deadlines");
	settled = ow_sweep_deadlines(batch, worker_begin, worker_end, pass_cxt, &next, turn);
	pgstat_report_activity(STATE_RUNNING, "openwop: removing expired idempotency records");
	worker_begin();
	purged = ow_purge_idempotency(batch);
	worker_end();
	pgstat_report_activity(STATE_IDLE, NULL);

	/* work was done and more may be due: go on at once */
	if (purged >= batch || (settled > 0 && next <= GetCurrentTimestamp()))
		return 0;
	if (next != DT_NOEND)
	{
		long		ms = (long) ((next - GetCurrentTimestamp()) / 1000);

		/*
		 * Wake just after the next deadline.  One already due was left
		 * because its run is busy or its settling failed: retry in a
		 * second, not in a hot loop.
		 */
		sleep_ms = Min(sleep_ms, ms > 0 ? ms + 10 : 1000L);
	}
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
