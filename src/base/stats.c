/*-------------------------------------------------------------------------
 *
 * stats.c
 *	  Cumulative counters per database, in shared memory (openwop.stats):
 *	  interrupts resolved by an answer, votes recorded that did not decide,
 *	  deadlines applied, reminders and escalations fired, notifications
 *	  written, dropped and given up, and refusals by error code.
 *
 * A decision is counted when its transaction commits (and not when it, or
 * the savepoint it was made in, rolls back); a refusal when it is raised,
 * whatever becomes of its transaction.  The counters live as long as the
 * server, until openwop.stats_reset(); without the library in
 * shared_preload_libraries nothing is counted.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "ipc/ipc.h"
#include "base/base.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/shmem.h"
#include "storage/lwlock.h"
#include "utils/memutils.h"

#define STATS_DATABASES 64

typedef struct DbStats
{
	Oid			dboid;			/* InvalidOid: free */
	TimestampTz since;			/* created or last reset */
	pg_atomic_uint64 counts[OW_STATS];
} DbStats;

typedef struct Stats
{
	DbStats		dbs[STATS_DATABASES];
} Stats;

static Stats *stats = NULL;
static LWLock *stats_lock = NULL;	/* taking and resetting entries */
static int	my_entry = -1;

/* Decisions of this transaction not yet counted: by subtransaction level. */
typedef struct Pending
{
	OwStat		stat;
	int			level;
	int			n;
} Pending;

static List *pending = NIL;		/* in TopTransactionContext */
static bool callbacks_registered = false;

Size
ow_stats_shmem_size(void)
{
	return MAXALIGN(sizeof(Stats));
}

/* Called under AddinShmemInitLock. */
void
ow_stats_shmem_init(void)
{
	bool		found;
	int			i;
	int			j;

	stats_lock = ow_lwlock(OW_LOCK_STATS);
	stats = ShmemInitStruct("openwop_interrupt stats", sizeof(Stats), &found);
	if (!found)
	{
		for (i = 0; i < STATS_DATABASES; i++)
		{
			stats->dbs[i].dboid = InvalidOid;
			stats->dbs[i].since = 0;
			for (j = 0; j < OW_STATS; j++)
				pg_atomic_init_u64(&stats->dbs[i].counts[j], 0);
		}
	}
}

/* This database's entry, taken on first use; NULL when every entry is taken. */
static DbStats *
my_stats(void)
{
	int			i;
	TimestampTz now;

	if (stats == NULL)
		return NULL;
	if (my_entry >= 0 && stats->dbs[my_entry].dboid == MyDatabaseId)
		return &stats->dbs[my_entry];
	my_entry = -1;
	now = GetCurrentTimestamp();
	LWLockAcquire(stats_lock, LW_EXCLUSIVE);
	for (i = 0; i < STATS_DATABASES && my_entry < 0; i++)
		if (stats->dbs[i].dboid == MyDatabaseId)
			my_entry = i;
	for (i = 0; i < STATS_DATABASES && my_entry < 0; i++)
		if (stats->dbs[i].dboid == InvalidOid)
		{
			int			j;

			for (j = 0; j < OW_STATS; j++)
				pg_atomic_write_u64(&stats->dbs[i].counts[j], 0);
			stats->dbs[i].since = now;
			stats->dbs[i].dboid = MyDatabaseId;
			my_entry = i;
		}
	LWLockRelease(stats_lock);
	return my_entry >= 0 ? &stats->dbs[my_entry] : NULL;
}

static void
stats_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT && pending != NIL)
	{
		DbStats    *s = my_stats();
		ListCell   *lc;

		if (s)
			foreach(lc, pending)
				pg_atomic_fetch_add_u64(&s->counts[((Pending *) lfirst(lc))->stat],
										((Pending *) lfirst(lc))->n);
	}
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PARALLEL_ABORT)
		pending = NIL;
}

static void
stats_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					   SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();
	ListCell   *lc;

	foreach(lc, pending)
	{
		Pending    *p = lfirst(lc);

		if (p->level < level)
			continue;
		if (event == SUBXACT_EVENT_ABORT_SUB)
			pending = foreach_delete_current(pending, lc);
		else if (event == SUBXACT_EVENT_COMMIT_SUB)
			p->level = level - 1;
	}
}

/* This transaction made a decision of kind stat: counted if it commits. */
void
ow_count_decision(OwStat stat)
{
	ow_count_decisions(stat, 1);
}

/* This transaction made n decisions of kind stat (notifications written, ...): counted if it commits. */
void
ow_count_decisions(OwStat stat, int n)
{
	MemoryContext old;
	Pending    *p;

	if (stats == NULL || n <= 0)
		return;
	if (!callbacks_registered)
	{
		RegisterXactCallback(stats_xact_callback, NULL);
		RegisterSubXactCallback(stats_subxact_callback, NULL);
		callbacks_registered = true;
	}
	old = MemoryContextSwitchTo(TopTransactionContext);
	p = palloc(sizeof(Pending));
	p->stat = stat;
	p->n = n;
	p->level = GetCurrentTransactionNestLevel();
	pending = lappend(pending, p);
	MemoryContextSwitchTo(old);
}

/* A refusal is being raised: counted now. */
void
ow_count_refusal(int error)
{
	DbStats    *s;

	if (stats == NULL || error < 0 || OW_STAT_REFUSED + error >= OW_STATS)
		return;
	s = my_stats();
	if (s)
		pg_atomic_fetch_add_u64(&s->counts[OW_STAT_REFUSED + error], 1);
}

/*
 * A copy of the counters of every database that has some: at most max
 * entries into oids, since and counts (max * OW_STATS values).
 */
int
ow_stats_snapshot(int max, Oid *oids, TimestampTz *since, uint64 *counts)
{
	int			i;
	int			j;
	int			n = 0;

	if (stats == NULL)
		return 0;
	LWLockAcquire(stats_lock, LW_EXCLUSIVE);
	for (i = 0; i < STATS_DATABASES && n < max; i++)
	{
		if (stats->dbs[i].dboid == InvalidOid)
			continue;
		oids[n] = stats->dbs[i].dboid;
		since[n] = stats->dbs[i].since;
		for (j = 0; j < OW_STATS; j++)
			counts[n * OW_STATS + j] = pg_atomic_read_u64(&stats->dbs[i].counts[j]);
		n++;
	}
	LWLockRelease(stats_lock);
	return n;
}

int
ow_stats_capacity(void)
{
	return STATS_DATABASES;
}

/* The databases that have an entry, at most ow_stats_capacity() into oids. */
int
ow_stats_databases(Oid *oids)
{
	int			i;
	int			n = 0;

	if (stats == NULL)
		return 0;
	LWLockAcquire(stats_lock, LW_EXCLUSIVE);
	for (i = 0; i < STATS_DATABASES; i++)
		if (stats->dbs[i].dboid != InvalidOid)
			oids[n++] = stats->dbs[i].dboid;
	LWLockRelease(stats_lock);
	return n;
}

/*
 * dboid was dropped (the launcher no longer finds it): free its entry, for
 * a database created later, which would otherwise not be counted once
 * STATS_DATABASES databases had counted since the server started (or, with
 * its Oid, would inherit the dropped one's counts).
 */
void
ow_stats_forget(Oid dboid)
{
	int			i;

	if (stats == NULL)
		return;
	LWLockAcquire(stats_lock, LW_EXCLUSIVE);
	for (i = 0; i < STATS_DATABASES; i++)
		if (stats->dbs[i].dboid == dboid)
			stats->dbs[i].dboid = InvalidOid;
	LWLockRelease(stats_lock);
}

/* Start the counters again: this database's, or every database's (the others' entries freed). */
void
ow_stats_reset(bool all)
{
	int			i;
	TimestampTz now = GetCurrentTimestamp();

	if (stats == NULL)
		return;
	LWLockAcquire(stats_lock, LW_EXCLUSIVE);
	for (i = 0; i < STATS_DATABASES; i++)
		if (stats->dbs[i].dboid != InvalidOid && (all || stats->dbs[i].dboid == MyDatabaseId))
		{
			int			j;

			for (j = 0; j < OW_STATS; j++)
				pg_atomic_write_u64(&stats->dbs[i].counts[j], 0);
			stats->dbs[i].since = now;
			/* a database that is gone frees its entry */
			if (all)
				stats->dbs[i].dboid = InvalidOid;
		}
	LWLockRelease(stats_lock);
	my_entry = -1;
	/* this database counts from now on, and shows its zeros */
	(void) my_stats();
}
