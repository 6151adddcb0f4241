/*-------------------------------------------------------------------------
 *
 * wakeup.c
 *	  Waking the timeout worker: a transaction that raised an interrupt
 *	  with a deadline (or expired one) sets the worker's latch when it
 *	  commits, so the worker need not poll for new deadlines.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "openwop.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/shmem.h"
#include "storage/spin.h"

/* Shared state: where to find the worker, to wake it. */
typedef struct OwShared
{
	slock_t		mutex;
	Latch	   *worker_latch;
} OwShared;

static OwShared *ow_shared = NULL;
static bool deadline_raised = false;
static bool xact_callback_registered = false;

/* ----------
 * Waking the worker when a transaction raises an interrupt with a deadline
 * ----------
 */
static void
wakeup_xact_callback(XactEvent event, void *arg)
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
		RegisterXactCallback(wakeup_xact_callback, NULL);
		xact_callback_registered = true;
	}
	deadline_raised = true;
}

Size
ow_wakeup_shmem_size(void)
{
	return MAXALIGN(sizeof(OwShared));
}

/* Called under AddinShmemInitLock. */
void
ow_wakeup_shmem_init(void)
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
wakeup_detach(int code, Datum arg)
{
	SpinLockAcquire(&ow_shared->mutex);
	ow_shared->worker_latch = NULL;
	SpinLockRelease(&ow_shared->mutex);
}

/* The timeout worker: wake me (MyLatch) from now on, until I exit. */
void
ow_wakeup_attach(void)
{
	SpinLockAcquire(&ow_shared->mutex);
	ow_shared->worker_latch = MyLatch;
	SpinLockRelease(&ow_shared->mutex);
	before_shmem_exit(wakeup_detach, (Datum) 0);
}
