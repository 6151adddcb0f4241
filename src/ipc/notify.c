/*-------------------------------------------------------------------------
 *
 * notify.c
 *	  One notification per committed transaction and run, on the channel
 *	  of the run's tenant, with payload {runId, fromSequence, sequence}.
 *
 * LISTEN needs no privilege: any login may listen on any channel it can
 * name, in any database it may connect to.  So a tenant's channel is named
 * by a keyed hash of the database and the tenant,
 * openwop_events_<32 hex digits> (HMAC-SHA256 under a key made at server
 * start, in shared memory, never stored), which only openwop.listen()
 * tells, and only to a caller of that tenant: no login learns another
 * tenant's run ids or activity from notifications.  The channel changes
 * when the server restarts (and on a standby promoted), when listeners
 * reconnect anyway.  With openwop.shared_channel on, each notification also
 * goes to channel openwop_events, as before 0.11.0, which every login can
 * hear: for single-tenant deployments.
 *
 * A NOTIFY sent by the committing transaction itself serialises commits:
 * PostgreSQL holds a database-wide lock from queuing the notification
 * until the commit record is flushed, so concurrent resolves would wait
 * for each other's WAL flush (half of pgbench -N at 8 clients, measured).
 * When the library is preloaded, a relay worker sends the notifications
 * instead: at pre-commit a transaction reserves room in a shared ring, at
 * commit it writes its (run, range) entries there and wakes the relay,
 * which NOTIFYs them in batches from its own transactions.  Each database
 * worker (dbworker.c) is the relay of its database, with a ring of its own
 * (one per slot of the registry, registry.c).  With no worker serving the
 * database, the ring full or the relay lagging, the transaction NOTIFYs
 * itself as before.  Either way a
 * notification is sent only for a committed change, once per transaction
 * and run (twice at worst, if a relay dies between sending a batch and
 * recording that it did).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "ipc/internal.h"

#include "utils/timestamp.h"

#include "access/xact.h"
#include "commands/async.h"
#include "common/hmac.h"
#include "common/sha2.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "port/pg_bswap.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/shmem.h"
#include "storage/lwlock.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/memutils.h"

#define OW_NOTIFY_CHANNEL "openwop_events"	/* the shared channel */
#define CHANNEL_KEY_LEN 32
#define CHANNEL_HASH_LEN 16		/* bytes of the HMAC in a channel's name */
#define RING_SIZE 2048
#define RUN_ID_BUF 272			/* "anon:" + 128-character tenant + "/" + 128 */
#define RELAY_BATCH 256
#define RELAY_STALL_MS 1000		/* an entry waiting this long: the relay lags */


typedef struct RingEntry
{
	Oid			dboid;			/* a slot's ring may have served another database before */
	int64		first;
	int64		last;
	TimestampTz published;		/* when the committing backend handed it over */
	char		run_id[RUN_ID_BUF];
} RingEntry;

typedef struct Ring
{
	LWLock	   *lock;			/* of the module's tranche: one per ring */
	Latch	   *relay_latch;	/* NULL when no relay is running */
	Oid			relay_db;
	uint64		head;			/* next entry the relay sends; advanced once sent */
	uint64		tail;			/* next entry a backend writes */
	int			reserved;		/* promised to transactions still committing */
	RingEntry	entries[RING_SIZE];
} Ring;

/* The key of the tenants' channel names, made at server start. */
typedef struct ChannelKey
{
	uint8		key[CHANNEL_KEY_LEN];
} ChannelKey;

static ChannelKey *channel_key = NULL;
static bool ow_shared_channel = false;

static Ring *rings = NULL;		/* one per slot of the registry */
static Ring *ring = NULL;		/* the relay's own, in a database worker */

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
static List *reserved_batch = NIL;	/* merged, room reserved in reserved_ring */
static Ring *reserved_ring = NULL;
static bool callbacks_registered = false;

static char *payload_of(const Change *c);

/*
 * The channel of tenant's notifications in this database into out
 * (OW_CHANNEL_BUF bytes): openwop_events_ and the hex of the first
 * CHANNEL_HASH_LEN bytes of HMAC-SHA256(key, database oid, tenant).  False when the key is not there (the library
 * was not preloaded: no caller is known either, so nothing notifies).
 */
bool
ow_tenant_channel(const char *tenant, char *out)
{
	static char last_tenant[OW_TENANT_BUF] = "";
	static char last_channel[OW_CHANNEL_BUF] = "";
	uint8		mac[PG_SHA256_DIGEST_LENGTH];
	pg_hmac_ctx *ctx;
	uint32		dboid;
	int			i;

	if (channel_key == NULL)
		return false;
	/* one tenant's runs notify in a row: its channel is kept */
	if (last_channel[0] != '\0' && strcmp(tenant, last_tenant) == 0)
	{
		strlcpy(out, last_channel, OW_CHANNEL_BUF);
		return true;
	}
	/* the database's too: a login may connect to another database and LISTEN there */
	dboid = pg_hton32(MyDatabaseId);
	ctx = pg_hmac_create(PG_SHA256);
	if (ctx == NULL ||
		pg_hmac_init(ctx, channel_key->key, CHANNEL_KEY_LEN) < 0 ||
		pg_hmac_update(ctx, (const uint8 *) &dboid, sizeof(dboid)) < 0 ||
		pg_hmac_update(ctx, (const uint8 *) tenant, strlen(tenant)) < 0 ||
		pg_hmac_final(ctx, mac, sizeof(mac)) < 0)
	{
		pg_hmac_free(ctx);
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not compute the notification channel of a tenant")));
	}
	pg_hmac_free(ctx);
	strcpy(out, "openwop_events_");
	for (i = 0; i < CHANNEL_HASH_LEN; i++)
		sprintf(out + strlen("openwop_events_") + 2 * i, "%02x", mac[i]);
	if (strlen(tenant) < OW_TENANT_BUF)
	{
		strlcpy(last_tenant, tenant, OW_TENANT_BUF);
		strlcpy(last_channel, out, OW_CHANNEL_BUF);
	}
	return true;
}

/* The tenant of a run id: what precedes its "/". */
static void
tenant_of_run(const char *run_id, char *out)
{
	const char *slash = strchr(run_id, '/');
	size_t		n = slash ? (size_t) (slash - run_id) : strlen(run_id);

	n = Min(n, OW_TENANT_BUF - 1);
	memcpy(out, run_id, n);
	out[n] = '\0';
}

/* Queue the notification of c: on its tenant's channel, and the shared one if asked. */
static void
notify(const Change *c)
{
	char		tenant[OW_TENANT_BUF];
	char		channel[OW_CHANNEL_BUF];
	char	   *payload = payload_of(c);

	tenant_of_run(c->run_id, tenant);
	if (ow_tenant_channel(tenant, channel))
		Async_Notify(channel, payload);
	if (ow_shared_channel)
		Async_Notify(OW_NOTIFY_CHANNEL, payload);
}

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
	int			slot = ow_slot_of_my_database();
	Ring	   *r;

	if (rings == NULL || slot < 0)
		return false;
	r = &rings[slot];
	LWLockAcquire(r->lock, LW_EXCLUSIVE);
	if (r->relay_latch != NULL && r->relay_db == MyDatabaseId &&
		(r->tail - r->head) + r->reserved + n <= RING_SIZE &&
		(r->head == r->tail || r->entries[r->head % RING_SIZE].published > stale))
	{
		r->reserved += n;
		ok = true;
	}
	LWLockRelease(r->lock);
	if (ok)
		reserved_ring = r;
	return ok;
}

/* After commit: must not fail.  The room was reserved at pre-commit. */
static void
ring_publish(Ring *r, List *batch)
{
	Latch	   *latch;
	ListCell   *lc;
	TimestampTz now = GetCurrentTimestamp();

	LWLockAcquire(r->lock, LW_EXCLUSIVE);
	foreach(lc, batch)
	{
		Change	   *c = lfirst(lc);
		RingEntry  *e = &r->entries[r->tail % RING_SIZE];

		e->dboid = MyDatabaseId;
		e->first = c->first;
		e->last = c->last;
		e->published = now;
		strlcpy(e->run_id, c->run_id, RUN_ID_BUF);
		r->tail++;
	}
	r->reserved -= list_length(batch);
	latch = r->relay_latch;
	LWLockRelease(r->lock);
	if (latch)
		SetLatch(latch);
}

static void
ring_release(Ring *r, int n)
{
	LWLockAcquire(r->lock, LW_EXCLUSIVE);
	r->reserved -= n;
	LWLockRelease(r->lock);
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
						notify(lfirst(lc));
				}
			}
			changes = NIL;
			break;
		case XACT_EVENT_COMMIT:
			if (reserved_batch != NIL)
				ring_publish(reserved_ring, reserved_batch);
			reserved_batch = NIL;
			changes = NIL;
			break;
		case XACT_EVENT_ABORT:
			if (reserved_batch != NIL)
				ring_release(reserved_ring, list_length(reserved_batch));
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
	return add_size(MAXALIGN(mul_size(sizeof(Ring), ow_max_databases)), sizeof(ChannelKey));
}

/* Called under AddinShmemInitLock. */
void
ow_relay_shmem_init(void)
{
	bool		found;
	int			i;

	rings = ShmemInitStruct("openwop_interrupt notify rings", ow_relay_shmem_size(), &found);
	channel_key = (ChannelKey *) ((char *) rings + MAXALIGN(mul_size(sizeof(Ring), ow_max_databases)));
	if (!found && !pg_strong_random(channel_key->key, CHANNEL_KEY_LEN))
		ereport(FATAL,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not generate the key of the notification channels")));
	if (!found)
		for (i = 0; i < ow_max_databases; i++)
		{
			rings[i].lock = ow_lwlock(OW_LOCK_RING(i));
			rings[i].relay_latch = NULL;
			rings[i].relay_db = InvalidOid;
			rings[i].head = rings[i].tail = 0;
			rings[i].reserved = 0;
		}
}

static void
relay_detach(int code, Datum arg)
{
	LWLockAcquire(ring->lock, LW_EXCLUSIVE);
	ring->relay_latch = NULL;
	ring->relay_db = InvalidOid;
	LWLockRelease(ring->lock);
}

/*
 * Commit a relay transaction.  Notifications carry no data of their own
 * (listeners read the log), so it need not wait for a WAL flush, nor for a
 * synchronous standby; the worker's other transactions (deadlines) commit
 * as configured.
 */
static void
commit_without_waiting(void)
{
	/* SET LOCAL synchronous_commit = off: the commit record is written before it reverts */
	(void) set_config_option("synchronous_commit", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_LOCAL, true, 0, false);
	CommitTransactionCommand();
}

/*
 * Send what the ring holds, a batch per transaction; returns how many
 * notifications were sent.  Entries between head and tail never change
 * (backends only write past tail, into room they reserved), so they are
 * copied out without the lock, and head advances only once the batch's
 * transaction committed: an error or a FATAL in between leaves them for
 * the next attempt, so a committed change is announced at least once,
 * never lost.  Entries another database left in this slot's ring (its
 * worker gone, a transaction publishing late) are skipped.
 */
int64
ow_relay_drain(void)
{
	static Change batch[RELAY_BATCH];
	static char ids[RELAY_BATCH][RUN_ID_BUF];
	int64		sent = 0;

	for (;;)
	{
		uint64		head;
		uint64		tail;
		int			n;
		int			m = 0;
		int			i;

		LWLockAcquire(ring->lock, LW_EXCLUSIVE);
		head = ring->head;
		tail = ring->tail;
		LWLockRelease(ring->lock);
		n = (int) Min(tail - head, (uint64) RELAY_BATCH);
		if (n == 0)
			return sent;
		for (i = 0; i < n; i++)
		{
			RingEntry  *e = &ring->entries[(head + i) % RING_SIZE];

			if (e->dboid != MyDatabaseId)
				continue;
			memcpy(ids[m], e->run_id, RUN_ID_BUF);
			batch[m].run_id = ids[m];
			batch[m].first = e->first;
			batch[m].last = e->last;
			m++;
		}

		if (m > 0)
		{
			SetCurrentStatementStartTimestamp();
			StartTransactionCommand();
			pgstat_report_activity(STATE_RUNNING, "openwop: relaying notifications");
			for (i = 0; i < m; i++)
				notify(&batch[i]);
			commit_without_waiting();
			pgstat_report_activity(STATE_IDLE, NULL);
		}

		LWLockAcquire(ring->lock, LW_EXCLUSIVE);
		ring->head = head + n;
		LWLockRelease(ring->lock);
		sent += m;
	}
}

/* Whether the relay's ring holds anything to send. */
bool
ow_relay_waiting(void)
{
	bool		waiting;

	LWLockAcquire(ring->lock, LW_EXCLUSIVE);
	waiting = ring->tail != ring->head;
	LWLockRelease(ring->lock);
	return waiting;
}

/*
 * How long the oldest notification waiting in slot's ring has waited, in
 * ms (0: none waits).
 */
int64
ow_relay_lag_ms(int slot)
{
	Ring	   *r;
	TimestampTz oldest = 0;

	if (rings == NULL || slot < 0)
		return 0;
	r = &rings[slot];
	LWLockAcquire(r->lock, LW_EXCLUSIVE);
	if (r->head != r->tail)
		oldest = r->entries[r->head % RING_SIZE].published;
	LWLockRelease(r->lock);
	if (oldest == 0)
		return 0;
	return Max(0, (GetCurrentTimestamp() - oldest) / 1000);
}

/* The database worker of slot becomes its database's relay, until it exits. */
void
ow_relay_attach(int slot)
{
	ring = &rings[slot];
	LWLockAcquire(ring->lock, LW_EXCLUSIVE);
	ring->relay_db = MyDatabaseId;
	ring->relay_latch = MyLatch;
	LWLockRelease(ring->lock);
	before_shmem_exit(relay_detach, (Datum) 0);
}

void
ow_define_notify_settings(void)
{
	DefineCustomBoolVariable("openwop.shared_channel",
							 "Also send every notification on channel openwop_events, which any login may LISTEN to.",
							 "It carries the run ids of every tenant: for single-tenant deployments, and engines not yet moved to openwop.listen().",
							 &ow_shared_channel,
							 false,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);
}
