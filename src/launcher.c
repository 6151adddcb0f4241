/*-------------------------------------------------------------------------
 *
 * launcher.c
 *	  The launcher: one background worker, connected to no database, that
 *	  keeps a database worker (dbworker.c) running in every database in
 *	  which the extension is created.
 *
 * Every LAUNCHER_NAP_MS, or when woken (a CREATE EXTENSION committed, a
 * pause ended, one of its workers started or stopped), it reads
 * pg_database.  A database it has not seen is probed: a worker starts
 * there, and leaves at once, saying so, when the extension is absent; such
 * a database is probed again only when CREATE EXTENSION commits there (the
 * DDL hook tells the launcher, also of one it could not take in at once) or
 * when the launcher restarts.  A worker that ends without saying why
 * (an error, a crash, a refused connection) is restarted after a wait that
 * doubles from a second up to BACKOFF_MAX_MS; that, a database named in
 * openwop.databases that does not exist, and a worker that cannot be
 * started (openwop.max_databases or max_worker_processes reached) are
 * logged once, until the database is served again.  Template databases
 * and databases that do not allow connections are not served.  A database
 * a DBA is dropping, renaming, moving or copying is paused (ddl.c): no
 * worker starts there until the DDL's transaction ends.  Nor does one
 * start in a database a session holds locked against new connections; one
 * that still has not connected CONNECT_MS after it was started is stopped,
 * and tried again with back-off.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "openwop.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/varlena.h"

PGDLLEXPORT void ow_launcher_main(Datum arg);

#define LAUNCHER_NAP_MS 10000L
#define BACKOFF_FIRST_MS 1000L
#define BACKOFF_MAX_MS 300000L
#define HEALTHY_MS 10000L		/* a worker up this long ends a back-off */
#define CONNECT_MS 30000L		/* a worker not connected by then is stopped */
#define MAX_REQUESTS_TAKEN 64

typedef enum DbState
{
	DB_NEW,						/* not probed yet, or to be probed again */
	DB_RUNNING,					/* a worker was started (it may be a probe) */
	DB_ABSENT,					/* the extension was not there */
	DB_FAILING					/* its worker ended without saying why */
} DbState;

typedef struct DbEntry
{
	Oid			dboid;			/* hash key */
	DbState		state;
	int			slot;
	BackgroundWorkerHandle *handle;
	TimestampTz next_try;
	long		backoff_ms;
	bool		complained;		/* logged; silent until it is served */
	bool		timed_out;		/* its worker was stopped for not connecting */
	bool		seen;			/* in this pass's pg_database */
	bool		eligible;
	char		name[NAMEDATALEN];
} DbEntry;

static HTAB *dbs = NULL;
static List *missing_named = NIL;	/* names of openwop.databases logged as missing */

static bool
named_before(List *names, const char *name)
{
	ListCell   *lc;

	foreach(lc, names)
		if (strcmp((char *) lfirst(lc), name) == 0)
			return true;
	return false;
}

/*
 * The names openwop.databases lists (NIL: every database), in the pass's
 * memory; *bad when it does not parse.
 */
static List *
restriction(bool *bad)
{
	char	   *copy = pstrdup(ow_databases_setting());
	List	   *names = NIL;

	*bad = false;
	if (copy[0] == '\0')
		return NIL;
	if (!SplitIdentifierString(copy, ',', &names))
	{
		*bad = true;
		return NIL;
	}
	return names;
}

static void
fail(DbEntry *e, TimestampTz now, const char *what, const char *hint)
{
	e->state = DB_FAILING;
	e->backoff_ms = e->backoff_ms == 0 ? BACKOFF_FIRST_MS : Min(e->backoff_ms * 2, BACKOFF_MAX_MS);
	e->next_try = TimestampTzPlusMilliseconds(now, e->backoff_ms);
	if (!e->complained)
		ereport(LOG,
				(errmsg("openwop cannot serve database \"%s\": %s", e->name, what),
				 errdetail("It is tried again in %ld s, then with a wait that doubles up to %ld s; this is not logged again until the database is served.",
						   e->backoff_ms / 1000, BACKOFF_MAX_MS / 1000),
				 hint ? errhint("%s", hint) : 0));
	e->complained = true;
}

static void
served(DbEntry *e)
{
	if (e->complained)
		ereport(LOG, (errmsg("openwop serves database \"%s\" again", e->name)));
	e->complained = false;
	e->backoff_ms = 0;
}

/* Has the worker of e stopped?  Then free its slot and learn why. */
static void
poll_worker(DbEntry *e, TimestampTz now)
{
	pid_t		pid;
	TimestampTz started;
	OwSlotEnd	end;

	if (e->state != DB_RUNNING)
		return;
	if (e->handle != NULL && GetBackgroundWorkerPid(e->handle, &pid) != BGWH_STOPPED)
	{
		/* up a while: a back-off it was in is over */
		if (ow_slot_pid(e->slot, &started) != 0)
		{
			if (e->complained && TimestampDifferenceExceeds(started, now, HEALTHY_MS))
				served(e);
		}

		/*
		 * Still connecting: a session that holds its database locked (a
		 * RENAME TO left in an open or prepared transaction) keeps it
		 * waiting as long as it likes, with a slot and a background worker
		 * taken meanwhile.  It is stopped, and tried again with back-off.
		 */
		else if (!e->timed_out &&
				 TimestampDifferenceExceeds(ow_slot_claimed(e->slot), now, CONNECT_MS))
		{
			e->timed_out = true;
			TerminateBackgroundWorker(e->handle);
		}
		return;
	}
	if (e->handle == NULL && ow_slot_pid(e->slot, &started) != 0)
		return;					/* adopted from a launcher before us: still attached */
	if (e->handle)
		pfree(e->handle);
	e->handle = NULL;
	end = ow_slot_release(e->slot);
	e->slot = -1;
	switch (end)
	{
		case OW_END_ABSENT:
			e->state = DB_ABSENT;
			e->next_try = DT_NOEND;	/* until CREATE EXTENSION there */
			if (e->complained)
				served(e);
			break;
		case OW_END_STOPPED:
			e->state = DB_NEW;
			e->next_try = now;
			break;
		case OW_END_NONE:
			if (e->timed_out)
				fail(e, now, psprintf("its worker did not connect within %ld s", CONNECT_MS / 1000),
					 "A session may hold the database locked: see pg_locks.");
			else
				fail(e, now, "its worker exited before it said why (see the lines above)", NULL);
			break;
	}
	e->timed_out = false;
}

/*
 * Does a session hold dboid locked against new connections (a RENAME TO or
 * DROP DATABASE under way, or left in an open or prepared transaction)?
 * A worker started there would wait in its connection as long as that
 * lasts, with a slot and a background worker taken meanwhile.
 */
static bool
database_locked(Oid dboid)
{
	LOCKTAG		tag;
	bool		locked;

	/* a session lock: no transaction inside the scan of the hash */
	SET_LOCKTAG_OBJECT(tag, InvalidOid, DatabaseRelationId, dboid, 0);
	locked = LockAcquire(&tag, RowExclusiveLock, true, true) == LOCKACQUIRE_NOT_AVAIL;
	if (!locked)
		LockRelease(&tag, RowExclusiveLock, true);
	return locked;
}

/* Start a worker for e: claim a slot, register the dynamic worker. */
static void
start_worker(DbEntry *e, TimestampTz now)
{
	int			slot;
	MemoryContext old;
	bool		ok;

	if (database_locked(e->dboid))
		return;					/* looked at again at the next pass */
	slot = ow_slot_claim(e->dboid, e->name);
	if (slot == -1)
		return;					/* paused by DDL: the launcher is woken when it ends */
	if (slot == -2)
	{
		fail(e, now, psprintf("every one of the %d slots of openwop.max_databases is in use", ow_max_databases),
			 "Raise openwop.max_databases (server start).");
		return;
	}
	old = MemoryContextSwitchTo(TopMemoryContext);
	ok = ow_start_database_worker(slot, &e->handle);
	MemoryContextSwitchTo(old);
	if (!ok)
	{
		(void) ow_slot_release(slot);
		e->handle = NULL;
		fail(e, now, "no background worker slot is free",
			 "Raise max_worker_processes (server start): the launcher and each served database take one.");
		return;
	}
	e->slot = slot;
	e->state = DB_RUNNING;
	e->timed_out = false;
}

/* Every database of pg_database into the hash, marked seen and eligible or not. */
static void
read_databases(List *names)
{
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;
	HASH_SEQ_STATUS seq;
	DbEntry    *e;

	hash_seq_init(&seq, dbs);
	while ((e = hash_seq_search(&seq)) != NULL)
		e->seen = false;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);
		bool		found;

		e = hash_search(dbs, &db->oid, HASH_ENTER, &found);
		if (!found)
		{
			e->state = DB_NEW;
			e->slot = -1;
			e->handle = NULL;
			e->next_try = 0;
			e->backoff_ms = 0;
			e->complained = false;
			e->timed_out = false;
		}
		e->seen = true;
		strlcpy(e->name, NameStr(db->datname), NAMEDATALEN);
		e->eligible = db->datallowconn && !db->datistemplate && !database_is_invalid_form(db) &&
			(names == NIL || named_before(names, e->name));
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	PopActiveSnapshot();
	CommitTransactionCommand();
}

/* Log, once each, the databases openwop.databases names that do not exist. */
static void
check_named(List *names)
{
	ListCell   *lc;
	List	   *still = NIL;
	MemoryContext old;

	foreach(lc, names)
	{
		char	   *name = lfirst(lc);
		HASH_SEQ_STATUS seq;
		DbEntry    *e;
		bool		exists = false;

		hash_seq_init(&seq, dbs);
		while ((e = hash_seq_search(&seq)) != NULL)
			if (e->seen && strcmp(e->name, name) == 0)
			{
				exists = true;
				hash_seq_term(&seq);
				break;
			}
		if (exists)
			continue;
		if (!named_before(missing_named, name))
			ereport(LOG,
					(errmsg("database \"%s\" named in openwop.databases does not exist", name),
					 errdetail("The launcher serves it once it is created (and the extension in it); this is not logged again until then.")));
		old = MemoryContextSwitchTo(TopMemoryContext);
		still = lappend(still, pstrdup(name));
		MemoryContextSwitchTo(old);
	}
	list_free_deep(missing_named);
	missing_named = still;
}

/* One pass; returns how long to sleep, in ms. */
static long
launcher_pass(void)
{
	static bool bad_logged = false;
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz wake = TimestampTzPlusMilliseconds(now, LAUNCHER_NAP_MS);
	Oid			requested[MAX_REQUESTS_TAKEN];
	bool		all;
	int			n;
	int			i;
	bool		bad;
	List	   *names = restriction(&bad);
	HASH_SEQ_STATUS seq;
	DbEntry    *e;
	Oid		   *counted;
	int			ncounted;

	if (bad && !bad_logged)
		ereport(LOG,
				(errmsg("openwop.databases is not a list of database names: \"%s\"", ow_databases_setting()),
				 errdetail("The workers serve every database until it is corrected.")));
	bad_logged = bad;

	/* CREATE EXTENSION committed there: probe again now */
	n = ow_take_requests(requested, MAX_REQUESTS_TAKEN, &all);
	hash_seq_init(&seq, dbs);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		if (e->state == DB_ABSENT && all)
			e->next_try = 0;
		for (i = 0; i < n; i++)
			if (e->dboid == requested[i] && e->state == DB_ABSENT)
				e->next_try = 0;
	}

	/*
	 * The counters of databases dropped since: an entry taken before this
	 * look at pg_database is of a database that look finds, unless it was
	 * dropped.
	 */
	counted = palloc(sizeof(Oid) * ow_stats_capacity());
	ncounted = ow_stats_databases(counted);
	read_databases(names);
	check_named(names);
	for (i = 0; i < ncounted; i++)
	{
		e = hash_search(dbs, &counted[i], HASH_FIND, NULL);
		if (e == NULL || !e->seen)
			ow_stats_forget(counted[i]);
	}

	hash_seq_init(&seq, dbs);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		poll_worker(e, now);
		if (e->state == DB_RUNNING)
		{
			if (!e->seen || !e->eligible)
				(void) ow_slot_stop(e->slot);	/* dropped meanwhile, or no longer to be served */
			continue;
		}
		if (!e->seen)
		{
			(void) hash_search(dbs, &e->dboid, HASH_REMOVE, NULL);
			continue;
		}
		if (!e->eligible)
			continue;
		if (e->next_try > now)
		{
			wake = Min(wake, e->next_try);
			continue;
		}
		start_worker(e, now);
		if (e->state == DB_FAILING)
			wake = Min(wake, e->next_try);
	}
	ow_launcher_passed();
	return (long) Max(1, (wake - GetCurrentTimestamp()) / 1000);
}

/*
 * A launcher that restarted finds the workers its predecessor started.  It
 * has no handle on them (they tell the launcher that started them when
 * they stop), so it asks each to leave, treats it as running until it has
 * left its slot, and then starts it anew.
 */
static void
adopt_workers(void)
{
	int			i;

	for (i = 0; i < ow_max_databases; i++)
	{
		Oid			dboid = ow_slot_stop(i);
		DbEntry    *e;

		if (!OidIsValid(dboid))
			continue;
		e = hash_search(dbs, &dboid, HASH_ENTER, NULL);
		e->state = DB_RUNNING;
		e->slot = i;
		e->handle = NULL;
		e->next_try = 0;
		e->backoff_ms = 0;
		e->complained = false;
		e->timed_out = false;
		e->name[0] = '\0';
	}
}

static void
launcher_exit(int code, Datum arg)
{
	ow_launcher_detach();
}

void
ow_launcher_main(Datum arg)
{
	HASHCTL		ctl;
	MemoryContext pass_cxt;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("openwop launcher");

	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(DbEntry);
	dbs = hash_create("openwop launcher databases", 64, &ctl, HASH_ELEM | HASH_BLOBS);
	pass_cxt = AllocSetContextCreate(TopMemoryContext, "openwop launcher pass", ALLOCSET_SMALL_SIZES);

	ow_launcher_attach();
	before_shmem_exit(launcher_exit, (Datum) 0);
	adopt_workers();
	ereport(LOG, (errmsg("openwop launcher started")));

	for (;;)
	{
		long		sleep_ms;
		MemoryContext old;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		MemoryContextReset(pass_cxt);
		old = MemoryContextSwitchTo(pass_cxt);
		sleep_ms = launcher_pass();
		MemoryContextSwitchTo(old);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 sleep_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
