/*-------------------------------------------------------------------------
 *
 * shmem.c
 *	  The extension's LWLocks: one named tranche, "openwop_interrupt", with
 *	  a lock for the workers' registry, one for the counters' entries and
 *	  one for each database slot's notify ring.  A spinlock covers only a
 *	  few instructions; these cover loops over slots and copies of entries.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "ipc/ipc.h"

#include "storage/lwlock.h"

#define TRANCHE "openwop_interrupt"

static LWLockPadded *locks = NULL;
static int	nlocks = 0;

/* From the shmem_request_hook, with the extension's shared memory: rings database slots. */
void
ow_lwlocks_request(int rings)
{
	nlocks = OW_LOCK_RING(rings);
	RequestNamedLWLockTranche(TRANCHE, nlocks);
}

/* From the shmem_startup_hook, before any module looks its lock up. */
void
ow_lwlocks_attach(void)
{
	locks = GetNamedLWLockTranche(TRANCHE);
}

/* Lock which: OW_LOCK_REGISTRY, OW_LOCK_STATS or OW_LOCK_RING(slot). */
LWLock *
ow_lwlock(int which)
{
	Assert(locks != NULL && which >= 0 && which < nlocks);
	return &locks[which].lock;
}
