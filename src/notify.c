/*-------------------------------------------------------------------------
 *
 * notify.c
 *	  One notification per committed transaction and run, on channel
 *	  openwop_events, with payload {runId, fromSequence, sequence}.
 *
 * A NOTIFY sent by the committing transaction itself serialises commits:
 * PostgreSQL holds a database-wide lock from queuing the notification
 * until the commit record is flushed, so concurrent resolves would wait
 * for each other's WAL flush (half of pgbench -N at 8 clients, measured).
 * When the library is preloaded, a relay worker sends the notifications
 * instead: at pre-commit a transaction reserves room in a shared ring, at
 * commit it writes its (run, range) entries there and wakes the relay,
 * which NOTIFYs them in batches from its own transactions.  Listeners in
 * the relay's database (openwop.database) get them from the relay; in any
 * other database, with no relay running, the ring full or the relay
 * lagging, the transaction NOTIFYs itself as before.  Either way a
 * notification is sent only for a committed change, once per transaction
 * and run (twice at worst, if a relay dies between sending a batch and
 * recording that it did).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "openwop.h"

#include "access/xact.h"
#include "commands/async.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/memutils.h"

#define OW_NOTIFY_CHANNEL "openwop_events"
#define RING_SIZE 4096
#define RUN_ID_BUF 272			/* "anon:" + 128-character tenant + "/" + 128 */
#define RELAY_BATCH 256
#define RELAY_STALL_MS 1000		/* an entry waiting this long: the relay lags */

PGDLLEXPORT void ow_relay_main(Datum arg);


typedef struct RingEntry
{
	int64		first;
	int64		last;
	TimestampTz published;		/* when the committing backend handed it over */
	char		run_id[RUN_ID_BUF];
} RingEntry;

typedef struct Ring
{
	slock_t		mutex;
	Latch	   *relay_latch;	/* NULL when no relay is running */
	Oid			relay_db;
	uint64		head;			/* next entry the relay sends; advanced once sent */
	uint64		tail;			/* next entry a backend writes */
	int			reserved;		/* promised to transactions still committing */
	RingEntry	entries[RING_SIZE];
} Ring;

static Ring *ring = NULL;

/* ----------
 * What this transaction changed, per (sub)transaction level
 * ----------
 */
typedef struct Change
{
	char	   *run_id;
	int64		first;
	int64		last;
	int			level;
} Change;

static List *changes = NIL;		/* in TopTransactionContext */
static List *reserved_batch = NIL;	/* merged, room reserved in the ring */
static bool callbacks_registered = false;

static char *
payload_of(const Change *c)
{
	StringInfoData payload;

	initStringInfo(&payload);
	appendStringInfoString(&payload, "{\"runId\": ");
	escape_json(&payload, c->run_id);
	appendStringInfo(&payload, ", \"fromSequence\": " INT64_FORMAT ", \"sequence\": " INT64_FORMAT "}",
					 c->first, c->last);
	return payload.data;
}

/* Changes by run id, then by when they were made: one run's changes are adjacent. */
static int
change_cmp(const void *a, const void *b)
{
	const Change *x = *(Change *const *) a;
	const Change *y = *(Change *const *) b;
	int			c = strcmp(x->run_id, y->run_id);

	return c != 0 ? c : (x->level < y->level ? -1 : x->level > y->level);
}

/* Merged runs in order of their first change (level holds that order here). */
static int
merged_cmp(const void *a, const void *b)
{
	const Change *x = *(Change *const *) a;
	const Change *y = *(Change *const *) b;

	return x->level < y->level ? -1 : x->level > y->level;
}

/*
 * The changes merged per run, in order of first change: sorted, so a
 * transaction that changed many runs commits in n log n, not n squared.
 */
static List *
merged_changes(void)
{
	int			n = list_length(changes);
	Change	  **all;
	Change	  **merged;
	List	   *out = NIL;
	int			m = 0;
	int			i;

	if (n == 0)
		return NIL;
	all = palloc(sizeof(Change *) * n);
	for (i = 0; i < n; i++)
	{
		all[i] = palloc(sizeof(Change));
		*all[i] = *(Change *) list_nth(changes, i);
		all[i]->level = i;		/* the order the change was made in */
	}
	qsort(all, n, sizeof(Change *), change_cmp);
	merged = palloc(sizeof(Change *) * n);
	for (i = 0; i < n; i++)
	{
		if (m > 0 && strcmp(merged[m - 1]->run_id, all[i]->run_id) == 0)
		{
			merged[m - 1]->first = Min(merged[m - 1]->first, all[i]->first);
			merged[m - 1]->last = Max(merged[m - 1]->last, all[i]->last);
		}
		else
			merged[m++] = all[i];
	}
	qsort(merged, m, sizeof(Change *), merged_cmp);
	for (i = 0; i < m; i++)
		out = lappend(out, merged[i]);
	return out;
}

/*
 * Reserve room for n entries if a relay serves this database and keeps up:
 * when the oldest waiting entry has waited RELAY_STALL_MS (the relay is
 * blocked, say behind another session's NOTIFY waiting for a synchronous
 * standby), the transaction notifies itself instead of queuing behind it.
 */
static bool
ring_reserve(int n)
{
	bool		ok = false;
	TimestampTz stale = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), -RELAY_STALL_MS);

	if (ring == NULL)
		return false;
	SpinLockAcquire(&ring->mutex);
	if (ring->relay_latch != NULL && ring->relay_db == MyDatabaseId &&
		(ring->tail - ring->head) + ring->reserved + n <= RING_SIZE &&
		(ring->head == ring->tail || ring->entries[ring->head % RING_SIZE].published > stale))
	{
		ring->reserved += n;
		ok = true;
	}
	SpinLockRelease(&ring->mutex);
	return ok;
}

/* After commit: must not fail.  The room was reserved at pre-commit. */
static void
ring_publish(List *batch)
{
	Latch	   *latch;
	ListCell   *lc;
	TimestampTz now = GetCurrentTimestamp();

	SpinLockAcquire(&ring->mutex);
	foreach(lc, batch)
	{
		Change	   *c = lfirst(lc);
		RingEntry  *e = &ring->entries[ring->tail % RING_SIZE];

		e->first = c->first;
		e->last = c->last;
		e->published = now;
		strlcpy(e->run_id, c->run_id, RUN_ID_BUF);
		ring->tail++;
	}
	ring->reserved -= list_length(batch);
	latch = ring->relay_latch;
	SpinLockRelease(&ring->mutex);
	if (latch)
		SetLatch(latch);
}

static void
ring_release(int n)
{
	SpinLockAcquire(&ring->mutex);
	ring->reserved -= n;
	SpinLockRelease(&ring->mutex);
}

static void
notify_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			if (changes != NIL)
			{
				MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
				List	   *merged = merged_changes();

				MemoryContextSwitchTo(old);

				if (ring_reserve(list_length(merged)))
					reserved_batch = merged;
				else
				{
					ListCell   *lc;

					foreach(lc, merged)
						Async_Notify(OW_NOTIFY_CHANNEL, payload_of(lfirst(lc)));
				}
			}
			changes = NIL;
			break;
		case XACT_EVENT_COMMIT:
			if (reserved_batch != NIL)
				ring_publish(reserved_batch);
			reserved_batch = NIL;
			changes = NIL;
			break;
		case XACT_EVENT_ABORT:
			if (reserved_batch != NIL)
				ring_release(list_length(reserved_batch));
			reserved_batch = NIL;
			changes = NIL;
			break;
		default:
			/* a prepared transaction cannot NOTIFY: its changes are not announced */
			changes = NIL;
			break;
	}
}

static void
notify_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();
	ListCell   *lc;

	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		/* a rolled-back savepoint forgets what it appended */
		foreach(lc, changes)
		{
			Change	   *c = lfirst(lc);

			if (c->level >= level)
				changes = foreach_delete_current(changes, lc);
		}
	}
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
	{
		foreach(lc, changes)
		{
			Change	   *c = lfirst(lc);

			if (c->level >= level)
				c->level = level - 1;
		}
	}
}

/* This transaction appended events first..last to run_id. */
void
ow_notify_later(const char *run_id, int64 first, int64 last)
{
	MemoryContext old;
	Change	   *c;

	if (!callbacks_registered)
	{
		RegisterXactCallback(notify_xact_callback, NULL);
		RegisterSubXactCallback(notify_subxact_callback, NULL);
		callbacks_registered = true;
	}
	old = MemoryContextSwitchTo(TopTransactionContext);
	c = palloc(sizeof(Change));
	c->run_id = pstrdup(run_id);
	c->first = first;
	c->last = last;
	c->level = GetCurrentTransactionNestLevel();
	changes = lappend(changes, c);
	MemoryContextSwitchTo(old);
}

/* ----------
 * The relay worker
 * ----------
 */

Size
ow_relay_shmem_size(void)
{
	return MAXALIGN(sizeof(Ring));
}

/* Called under AddinShmemInitLock. */
void
ow_relay_shmem_init(void)
{
	bool		found;

	ring = ShmemInitStruct("openwop_interrupt notify ring", sizeof(Ring), &found);
	if (!found)
	{
		SpinLockInit(&ring->mutex);
		ring->relay_latch = NULL;
		ring->relay_db = InvalidOid;
		ring->head = ring->tail = 0;
		ring->reserved = 0;
	}
}

static void
relay_detach(int code, Datum arg)
{
	SpinLockAcquire(&ring->mutex);
	ring->relay_latch = NULL;
	ring->relay_db = InvalidOid;
	SpinLockRelease(&ring->mutex);
}

/*
 * Send what the ring holds, a batch per transaction.  Entries between head
 * and tail never change (backends only write past tail, into room they
 * reserved), so they are copied out without the lock, and head advances
 * only once the batch's transaction committed: an error or a FATAL in
 * between leaves them for the next attempt, so a committed change is
 * announced at least once, never lost.
 */
static void
relay_drain(void)
{
	static Change batch[RELAY_BATCH];
	static char ids[RELAY_BATCH][RUN_ID_BUF];

	for (;;)
	{
		uint64		head;
		uint64		tail;
		int			n;
		int			i;

		SpinLockAcquire(&ring->mutex);
		head = ring->head;
		tail = ring->tail;
		SpinLockRelease(&ring->mutex);
		n = (int) Min(tail - head, (uint64) RELAY_BATCH);
		if (n == 0)
			return;
		for (i = 0; i < n; i++)
		{
			RingEntry  *e = &ring->entries[(head + i) % RING_SIZE];

			memcpy(ids[i], e->run_id, RUN_ID_BUF);
			batch[i].run_id = ids[i];
			batch[i].first = e->first;
			batch[i].last = e->last;
		}

		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		pgstat_report_activity(STATE_RUNNING, "openwop: relaying notifications");
		for (i = 0; i < n; i++)
			Async_Notify(OW_NOTIFY_CHANNEL, payload_of(&batch[i]));
		CommitTransactionCommand();
		pgstat_report_activity(STATE_IDLE, NULL);

		SpinLockAcquire(&ring->mutex);
		ring->head = head + n;
		SpinLockRelease(&ring->mutex);
	}
}

static void
relay_attach(void)
{
	/*
	 * Notifications carry no data of their own (listeners read the log), so
	 * the relay's commits need not wait for a WAL flush.
	 */
	SetConfigOption("synchronous_commit", "off", PGC_SUSET, PGC_S_OVERRIDE);

	SpinLockAcquire(&ring->mutex);
	ring->relay_db = MyDatabaseId;
	ring->relay_latch = MyLatch;
	SpinLockRelease(&ring->mutex);
	before_shmem_exit(relay_detach, (Datum) 0);
}

/* One pass: send what waits; then sleep until woken (or a second). */
static long
relay_pass(void)
{
	relay_drain();
	return 1000L;
}

void
ow_relay_main(Datum arg)
{
	/* a failed batch stays in the ring: logged, retried after 100 ms */
	ow_worker_main("openwop notify relay", relay_attach, relay_pass, 100L);
}
