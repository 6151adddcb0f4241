/*-------------------------------------------------------------------------
 *
 * registry.c
 *	  The registry of the databases the workers serve, in shared memory:
 *	  one slot per database worker (assigned by the launcher, launcher.c),
 *	  the pauses that keep workers out of a database a DBA is dropping,
 *	  renaming, moving or copying, and the requests that make the launcher
 *	  look at a database again (CREATE EXTENSION).  Each slot also holds
 *	  what the workers' status view shows.  One spinlock guards it all: every
 *	  section under it copies a few fields (but for the scan of the pauses
 *	  when the launcher claims a slot while some are held).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "ipc/internal.h"

#include "utils/timestamp.h"

#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include OW_PROC_NUMBER_HEADER
#include "storage/latch.h"
#include "storage/shmem.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "storage/lwlock.h"
#include "utils/guc.h"

#define PAUSES_PER_BACKEND 4
#define MAX_REQUESTS 64
#define MAX_UNSERVED 32

/* A database with the extension that the launcher does not serve, and why. */
typedef struct Unserved
{
	Oid			dboid;			/* InvalidOid: free */
	OwUnserved	why;
	TimestampTz since;
} Unserved;

typedef struct Registry
{
	ConditionVariable slot_freed;	/* a worker's slot was freed (ow_slot_release) */
	Latch	   *launcher_latch;
	int			launcher_pid;
	TimestampTz launcher_started;
	TimestampTz launcher_pass;
	int			npaused;		/* entries of pauses in use */
	OwRequest	requests[MAX_REQUESTS]; /* databases to look at again */
	int			nrequests;
	bool		requests_overflowed;	/* look at every database again */
	Unserved	unserved[MAX_UNSERVED]; /* what the status view says of them */
	OwSlot		slots[FLEXIBLE_ARRAY_MEMBER];
} Registry;

static Registry *registry = NULL;
static LWLock *registry_lock = NULL;	/* everything in the registry and pauses */

/*
 * The pauses, after the slots: PAUSES_PER_BACKEND databases for each
 * backend (by BackendId), InvalidOid where free.  Each backend has its own,
 * so no role's DDL, however many databases it owns and keeps paused in
 * open transactions, leaves another's DDL without a pause.
 */
static Oid *pauses = NULL;

/* Settings (server start, preloaded only) */
int			ow_max_databases = 16;
static char *ow_databases = NULL;
static char *ow_database_old = NULL;

/* this backend's slot, found once and checked at each use */
static int	my_slot = -1;

static Size
registry_size(void)
{
	return MAXALIGN(add_size(offsetof(Registry, slots),
							 mul_size(sizeof(OwSlot), ow_max_databases)));
}

/* MaxBackends is known from the shmem_request_hook on. */
Size
ow_registry_shmem_size(void)
{
	return add_size(registry_size(), mul_size(sizeof(Oid), mul_size(MaxBackends, PAUSES_PER_BACKEND)));
}

/* Called under AddinShmemInitLock. */
void
ow_registry_shmem_init(void)
{
	bool		found;

	registry_lock = ow_lwlock(OW_LOCK_REGISTRY);
	registry = ShmemInitStruct("openwop_interrupt workers", ow_registry_shmem_size(), &found);
	pauses = (Oid *) ((char *) registry + registry_size());
	if (!found)
	{
		memset(registry, 0, ow_registry_shmem_size());
		ConditionVariableInit(&registry->slot_freed);
	}
}

bool
ow_registry_ready(void)
{
	return registry != NULL;
}

/* ----------
 * For any backend
 * ----------
 */

/*
 * The slot of the worker serving this backend's database, -1 if none.
 * Read without the lock (an Oid is read whole); callers that act on the
 * answer check it again under the lock of what they touch.
 */
int
ow_slot_of_my_database(void)
{
	int			i;

	if (registry == NULL)
		return -1;
	if (my_slot >= 0 && registry->slots[my_slot].dboid == MyDatabaseId)
		return my_slot;
	my_slot = -1;
	for (i = 0; i < ow_max_databases; i++)
		if (registry->slots[i].dboid == MyDatabaseId)
			return my_slot = i;
	return -1;
}

/* Wake the worker of slot i, setting its deadline flag first if asked. */
void
ow_slot_wake(int i, bool deadline)
{
	Latch	   *latch;

	LWLockAcquire(registry_lock, LW_EXCLUSIVE);
	if (registry->slots[i].dboid != MyDatabaseId)
		latch = NULL;
	else
	{
		if (deadline)
			registry->slots[i].deadline_raised = true;
		latch = registry->slots[i].latch;
	}
	LWLockRelease(registry_lock);
	if (latch)
		SetLatch(latch);
}

/*
 * Ask the launcher to look at dboid again now: admin when the DBA said so
 * (CREATE EXTENSION or serve_database() committed there), not when a
 * session merely found its database unserved.
 */
void
ow_request_launch(Oid dboid, bool admin)
{
	Latch	   *latch;

	if (registry == NULL)
		return;
	LWLockAcquire(registry_lock, LW_EXCLUSIVE);
	if (registry->nrequests < MAX_REQUESTS)
	{
		registry->requests[registry->nrequests].dboid = dboid;
		registry->requests[registry->nrequests++].admin = admin;
	}
	else
		registry->requests_overflowed = true;
	latch = registry->launcher_latch;
	LWLockRelease(registry_lock);
	if (latch)
		SetLatch(latch);
}

/* Ask the worker serving dboid, if any, to check that the extension is still there. */
void
ow_request_recheck(Oid dboid)
{
	Latch	   *latch = NULL;
	int			i;

	if (registry == NULL)
		return;
	LWLockAcquire(registry_lock, LW_EXCLUSIVE);
	for (i = 0; i < ow_max_databases; i++)
		if (registry->slots[i].dboid == dboid)
		{
			registry->slots[i].recheck = true;
			latch = registry->slots[i].latch;
		}
	LWLockRelease(registry_lock);
	if (latch)
		SetLatch(latch);
}

/* ----------
 * Pauses: DDL that needs a database without other sessions
 * ----------
 */

/*
 * Keep the workers out of dboid until ow_unpause_mine(): no worker starts
 * there, and the one serving it is asked to leave; wait up to wait_ms for
 * it to be gone.  False when no pause could be recorded (this backend's
 * transaction already paused PAUSES_PER_BACKEND other databases) or the
 * worker did not leave in time: the DDL then meets the worker's
 * session as it would meet any other.
 */
bool
ow_pause_database(Oid dboid, long wait_ms)
{
	int			i;
	bool		recorded = false;
	bool		gone = false;
	TimestampTz until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), wait_ms);
	Oid		   *mine;

	if (registry == NULL || ow_my_backend_slot() < 0 || ow_my_backend_slot() >= MaxBackends)
		return false;
	mine = &pauses[ow_my_backend_slot() * PAUSES_PER_BACKEND];
	LWLockAcquire(registry_lock, LW_EXCLUSIVE);
	for (i = 0; i < PAUSES_PER_BACKEND && !recorded; i++)
		recorded = mine[i] == dboid;
	for (i = 0; i < PAUSES_PER_BACKEND && !recorded; i++)
		if (mine[i] == InvalidOid)
		{
			mine[i] = dboid;
			registry->npaused++;
			recorded = true;
		}
	LWLockRelease(registry_lock);
	if (!recorded)
		return false;

	/* woken when the launcher frees a slot, not polling */
	ConditionVariablePrepareToSleep(&registry->slot_freed);
	for (;;)
	{
		Latch	   *latch = NULL;
		bool		present = false;
		long		left;

		LWLockAcquire(registry_lock, LW_EXCLUSIVE);
		for (i = 0; i < ow_max_databases; i++)
			if (registry->slots[i].dboid == dboid)
			{
				present = true;
				registry->slots[i].stop = true;
				latch = registry->slots[i].latch;
			}
		LWLockRelease(registry_lock);
		gone = !present;
		left = (long) ((until - GetCurrentTimestamp()) / 1000);
		if (gone || left <= 0)
			break;
		if (latch)
			SetLatch(latch);
		(void) ConditionVariableTimedSleep(&registry->slot_freed, left, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	return gone;
}

/* End this backend's pauses (at the end of its transaction). */
void
ow_unpause_mine(void)
{
	int			i;
	Latch	   *latch;
	bool		had = false;
	Oid		   *mine;

	if (registry == NULL || ow_my_backend_slot() < 0 || ow_my_backend_slot() >= MaxBackends)
		return;
	mine = &pauses[ow_my_backend_slot() * PAUSES_PER_BACKEND];
	LWLockAcquire(registry_lock, LW_EXCLUSIVE);
	for (i = 0; i < PAUSES_PER_BACKEND; i++)
		if (mine[i] != InvalidOid)
		{
			mine[i] = InvalidOid;
			registry->npaused--;
			had = true;
		}
	latch = registry->launcher_latch;
	LWLockRelease(registry_lock);
	if (had && latch)
		SetLatch(latch);
}

/*
 * Under the registry's lock: is dboid paused?  A pause ends with its backend's
 * transaction, also when the backend exits in the middle of one (the abort
 * runs the callback); a crash reinitialises shared memory.
 */
static bool
paused_locked(Oid dboid)
{
	int			i;

	if (registry->npaused == 0)
		return false;
	for (i = 0; i < MaxBackends * PAUSES_PER_BACKEND; i++)
		if (pauses[i] == dboid)
			return true;
	return false;
}

/* ----------
 * For the launcher
 * ----------
 */

void
ow_launcher_attach(void)
{
	LWLockAcquire(registry_lock, LW_EXCLUSIVE);
	registry->launcher_latch = MyLatch;
	registry->launcher_pid = MyProcPid;
	registry->launcher_started = GetCurrentTimestamp();
	LWLockRelease(registry_lock);
}

void
ow_launcher_detach(void)
{
	LWLockAcquire(registry_lock, LW_EXCLUSIVE);
	registry->launcher_latch = NULL;
	registry->launcher_pid = 0;
	LWLockRelease(registry_lock);
}

void
ow_launcher_passed(void)
{
	TimestampTz now = GetCurrentTimestamp();

	LWLockAcquire(registry_lock, LW_EXCLUSIVE);
	registry->launcher_pass = now;
	LWLockRelease(registry_lock);
}

/*
 * The databases the launcher was asked to look at, at most n, into out;
 * *all when more were asked than fit.  Clears the requests.
 */
int
ow_take_requests(OwRequest *out, int n, bool *all)
{
	int			m;

	LWLockAcquire(registry_lock, LW_EXCLUSIVE);
	m = Min(n, registry->nrequests);
	memcpy(out, registry->requests, sizeof(OwRequest) * m);
	*all = registry->requests_overflowed || registry->nrequests > n;
	registry->nrequests = 0;
	registry->requests_overflowed = false;
	LWLockRelease(registry_lock);
	return m;
}

/*
 * Take a free slot for dboid, unless a pause keeps workers out of it:
 * the slot's index, -1 when paused, -2 when every slot is taken.  Checked
 * and taken under one lock, so a DDL that paused the database either sees
 * the slot (and waits for its worker) or keeps the launcher out.
 */
int
ow_slot_claim(Oid dboid, const char *dbname)
{
	int			i;
	int			got = -2;

	LWLockAcquire(registry_lock, LW_EXCLUSIVE);
	if (paused_locked(dboid))
		got = -1;
	else
		for (i = 0; i < ow_max_databases; i++)
			if (registry->slots[i].dboid == InvalidOid)
			{
				OwSlot	   *s = &registry->slots[i];

				uint32		generation = s->generation + 1;

				memset(s, 0, sizeof(OwSlot));
				s->generation = generation;
				s->dboid = dboid;
				strlcpy(s->dbname, dbname, NAMEDATALEN);
				s->claimed = GetCurrentTimestamp();
				got = i;
				break;
			}
	LWLockRelease(registry_lock);
	return got;
}

/* The worker of slot i is gone: free it, saying how the worker ended. */
OwSlotEnd
ow_slot_release(int i)
{
	OwSlotEnd	end;

	LWLockAcquire(registry_lock, LW_EXCLUSIVE);
	end = registry->slots[i].end;
	registry->slots[i].dboid = InvalidOid;
	registry->slots[i].latch = NULL;
	registry->slots[i].pid = 0;
	LWLockRelease(registry_lock);
	ConditionVariableBroadcast(&registry->slot_freed);
	return end;
}

/*
 * Ask the worker of slot i, if the slot is in use, to leave (its database
 * is no longer to be served); returns the slot's database, InvalidOid when
 * it is free.
 */
Oid
ow_slot_stop(int i)
{
	Latch	   *latch = NULL;
	Oid			dboid;

	LWLockAcquire(registry_lock, LW_EXCLUSIVE);
	dboid = registry->slots[i].dboid;
	if (OidIsValid(dboid))
	{
		registry->slots[i].stop = true;
		latch = registry->slots[i].latch;
	}
	LWLockRelease(registry_lock);
	if (latch)
		SetLatch(latch);
	return dboid;
}

/* Is a pause keeping workers out of dboid? */
bool
ow_database_paused(Oid dboid)
{
	bool		p;

	LWLockAcquire(registry_lock, LW_EXCLUSIVE);
	p = paused_locked(dboid);
	LWLockRelease(registry_lock);
	return p;
}

/* ----------
 * For a database worker
 * ----------
 */

/*
 * The database of slot i if the slot is still the claim the worker was
 * started for (generation), InvalidOid if it was released meanwhile.
 */
Oid
ow_slot_database(int i, uint32 generation)
{
	Oid			dboid = InvalidOid;

	LWLockAcquire(registry_lock, LW_EXCLUSIVE);
	if (registry->slots[i].generation == generation)
		dboid = registry->slots[i].dboid;
	LWLockRelease(registry_lock);
	return dboid;
}

/* When slot i was claimed for its worker. */
TimestampTz
ow_slot_claimed(int i)
{
	TimestampTz claimed;

	LWLockAcquire(registry_lock, LW_EXCLUSIVE);
	claimed = registry->slots[i].claimed;
	LWLockRelease(registry_lock);
	return claimed;
}

/*
 * The worker of slot i: its pid (0 until it attached, and after it left),
 * when it attached, and whether it found its database one to serve.
 */
int
ow_slot_pid(int i, TimestampTz *started, bool *serving)
{
	int			pid;

	LWLockAcquire(registry_lock, LW_EXCLUSIVE);
	pid = registry->slots[i].pid;
	*started = registry->slots[i].started;
	*serving = registry->slots[i].serving;
	LWLockRelease(registry_lock);
	return pid;
}

/*
 * The launcher's word on dboid, a database with the extension: why it is
 * not served (OW_UNSERVED_NONE: it is, or the launcher has nothing to
 * say).  Kept for MAX_UNSERVED databases; beyond that the oldest word is
 * dropped (the server log has every one).
 */
void
ow_note_unserved(Oid dboid, OwUnserved why)
{
	TimestampTz now = GetCurrentTimestamp();
	int			i;
	int			free_at = -1;
	int			oldest = 0;

	LWLockAcquire(registry_lock, LW_EXCLUSIVE);
	for (i = 0; i < MAX_UNSERVED; i++)
	{
		Unserved   *u = &registry->unserved[i];

		if (u->dboid == dboid)
			break;
		if (u->dboid == InvalidOid && free_at < 0)
			free_at = i;
		if (u->since < registry->unserved[oldest].since)
			oldest = i;
	}
	if (i == MAX_UNSERVED && why != OW_UNSERVED_NONE)
		i = free_at >= 0 ? free_at : oldest;
	if (i < MAX_UNSERVED)
	{
		Unserved   *u = &registry->unserved[i];

		if (why == OW_UNSERVED_NONE)
			u->dboid = InvalidOid;
		else if (u->dboid != dboid || u->why != why)
		{
			u->dboid = dboid;
			u->why = why;
			u->since = now;
		}
	}
	LWLockRelease(registry_lock);
}

static void
slot_detach(int code, Datum arg)
{
	int			i = DatumGetInt32(arg);

	LWLockAcquire(registry_lock, LW_EXCLUSIVE);
	registry->slots[i].latch = NULL;
	registry->slots[i].pid = 0;
	LWLockRelease(registry_lock);
}

/*
 * The worker of slot i serves its database from now on, until it exits;
 * false if the slot is no longer the claim it was started for, or it was
 * asked to leave meanwhile.
 */
bool
ow_slot_attach(int i, uint32 generation)
{
	bool		ok;

	LWLockAcquire(registry_lock, LW_EXCLUSIVE);
	ok = registry->slots[i].generation == generation && registry->slots[i].dboid == MyDatabaseId &&
		!registry->slots[i].stop;
	if (ok)
	{
		registry->slots[i].latch = MyLatch;
		registry->slots[i].pid = MyProcPid;
		registry->slots[i].started = GetCurrentTimestamp();
	}
	LWLockRelease(registry_lock);
	if (ok)
		before_shmem_exit(slot_detach, Int32GetDatum(i));
	return ok;
}

/*
 * The worker of slot i found the extension: it serves its database now,
 * named dbname as the worker's connection found it (the launcher may have
 * read the name before a RENAME TO committed).
 */
void
ow_slot_serving(int i, const char *dbname)
{
	LWLockAcquire(registry_lock, LW_EXCLUSIVE);
	strlcpy(registry->slots[i].dbname, dbname, NAMEDATALEN);
	registry->slots[i].serving = true;
	LWLockRelease(registry_lock);
}

/* How the worker of slot i is ending (read by the launcher once it has). */
void
ow_slot_ending(int i, uint32 generation, OwSlotEnd end)
{
	LWLockAcquire(registry_lock, LW_EXCLUSIVE);
	if (registry->slots[i].generation == generation)
		registry->slots[i].end = end;
	LWLockRelease(registry_lock);
}

/*
 * What the worker of slot i is asked to do: leave (stop), check that the
 * extension is still there (recheck), run a timeout pass (deadline); each
 * flag is cleared as it is read, but stop.
 */
void
ow_slot_flags(int i, bool *stop, bool *recheck, bool *deadline)
{
	OwSlot	   *s = &registry->slots[i];

	LWLockAcquire(registry_lock, LW_EXCLUSIVE);
	*stop = s->stop;
	*recheck = s->recheck;
	*deadline = s->deadline_raised;
	s->recheck = false;
	s->deadline_raised = false;
	LWLockRelease(registry_lock);
}

/* Record a pass of the worker of slot i: what it did, or its error (NULL: none). */
void
ow_slot_record(int i, bool timeout_pass, int64 done, const char *error)
{
	OwSlot	   *s = &registry->slots[i];
	TimestampTz now = GetCurrentTimestamp();

	LWLockAcquire(registry_lock, LW_EXCLUSIVE);
	if (timeout_pass)
	{
		s->timeout_passes++;
		s->last_timeout_pass = now;
		s->settled += done;
	}
	else
	{
		s->relay_batches++;
		s->last_relay = now;
		s->relayed += done;
	}
	if (error)
	{
		s->errors++;
		s->last_error_at = now;
		strlcpy(s->last_error, error, sizeof(s->last_error));
	}
	LWLockRelease(registry_lock);
}

/* ----------
 * For the status view: a copy of every slot in use, and the launcher's
 * ----------
 */

/* What the launcher said of dboid (ow_note_unserved), and since when. */
OwUnserved
ow_unserved_reason(Oid dboid, TimestampTz *since)
{
	OwUnserved	why = OW_UNSERVED_NONE;
	int			i;

	if (registry == NULL)
		return why;
	LWLockAcquire(registry_lock, LW_EXCLUSIVE);
	for (i = 0; i < MAX_UNSERVED; i++)
		if (registry->unserved[i].dboid == dboid)
		{
			why = registry->unserved[i].why;
			*since = registry->unserved[i].since;
			break;
		}
	LWLockRelease(registry_lock);
	return why;
}

/* Is the launcher running? */
bool
ow_launcher_running(void)
{
	bool		running;

	if (registry == NULL)
		return false;
	LWLockAcquire(registry_lock, LW_EXCLUSIVE);
	running = registry->launcher_pid != 0;
	LWLockRelease(registry_lock);
	return running;
}
int
ow_registry_snapshot(OwSlot *out, int *index, int *launcher_pid, TimestampTz *launcher_started,
					 TimestampTz *launcher_pass)
{
	int			i;
	int			n = 0;

	if (registry == NULL)
	{
		*launcher_pid = 0;
		return 0;
	}
	LWLockAcquire(registry_lock, LW_EXCLUSIVE);
	*launcher_pid = registry->launcher_pid;
	*launcher_started = registry->launcher_started;
	*launcher_pass = registry->launcher_pass;
	for (i = 0; i < ow_max_databases; i++)
		if (registry->slots[i].dboid != InvalidOid)
		{
			index[n] = i;
			out[n++] = registry->slots[i];
		}
	LWLockRelease(registry_lock);
	return n;
}

/* ----------
 * Registration and settings
 * ----------
 */

/* Register the launcher, at server start. */
void
ow_register_launcher(void)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	/* not on a standby: the workers write; they start at promotion */
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 5;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "openwop_interrupt");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "ow_launcher_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "openwop launcher");
	snprintf(worker.bgw_type, BGW_MAXLEN, "openwop launcher");
	RegisterBackgroundWorker(&worker);
}

/*
 * Start the worker of slot i (its database claimed by ow_slot_claim), as a
 * dynamic background worker that tells the launcher when it starts and
 * stops.  False when no background worker slot is free.
 */
bool
ow_start_database_worker(int i, BackgroundWorkerHandle **handle)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;	/* the launcher restarts it, with back-off */
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "openwop_interrupt");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "ow_database_worker_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "openwop worker for database %u", registry->slots[i].dboid);
	snprintf(worker.bgw_type, BGW_MAXLEN, "openwop worker");
	worker.bgw_main_arg = Int32GetDatum(i);
	memcpy(worker.bgw_extra, &registry->slots[i].generation, sizeof(uint32));
	worker.bgw_notify_pid = MyProcPid;
	return RegisterDynamicBackgroundWorker(&worker, handle);
}

void
ow_define_worker_settings(void)
{
	DefineCustomStringVariable("openwop.databases",
							   "Databases the workers may serve, as a comma-separated list; empty: every database.",
							   "Of these, the workers serve those in which the extension is created. Template databases and databases that do not allow connections are never served.",
							   &ow_databases,
							   "",
							   PGC_SIGHUP,
							   GUC_LIST_INPUT,
							   NULL, NULL, NULL);
	DefineCustomStringVariable("openwop.database",
							   "Deprecated: a single database to serve; use openwop.databases.",
							   "When set, the workers serve this database only (openwop.databases is ignored).",
							   &ow_database_old,
							   "",
							   PGC_SIGHUP,
							   0,
							   NULL, NULL, NULL);
	DefineCustomIntVariable("openwop.max_databases",
							"Most databases the workers serve at once: one background worker each.",
							"Each also takes one of max_worker_processes.",
							&ow_max_databases,
							16, 1, 1024,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);
}

/* The restriction in force: openwop.database when set, else openwop.databases. */
const char *
ow_databases_setting(void)
{
	if (ow_database_old != NULL && ow_database_old[0] != '\0')
		return ow_database_old;
	return ow_databases ? ow_databases : "";
}
