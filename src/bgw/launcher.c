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
 * there, and leaves at once, saying so, when the extension is absent or
 * the database is a copy (CREATE DATABASE ... TEMPLATE) that the DBA has
 * not said to serve (openwop.serve_database()).  Such a database is probed
 * again when CREATE EXTENSION or serve_database() commits there (the DDL
 * hook tells the launcher; a request that comes while a probe is under way
 * is kept for when it ends, so none is lost), when a session finds its
 * database unserved (at most once a minute for a copy), or when the
 * launcher restarts.  At most MAX_PROBES probes run at once, databases
 * served before are started first, and of the rest those a
 * superuser owns: a role with CREATEDB that makes many databases gets them
 * probed one after another, never a worker each.  A worker that ends
 * without saying why
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

#include "ipc/ipc.h"
#include "auth/auth.h"
#include "bgw/bgw.h"

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
#define MAX_PROBES 2			/* probes under way at once */
#define PROBE_AGAIN_MS 1000L	/* a database is probed again at most this often */
#define COPY_PROBE_AGAIN_MS 60000L	/* ... a copy, unless the DBA asks */

typedef enum DbState
{
	DB_NEW,						/* not probed yet, or to be probed again */
	DB_RUNNING,					/* a worker was started (it may be a probe) */
	DB_ABSENT,					/* the extension was not there */
	DB_COPY,					/* it was, in a copy not yet served */
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
	bool		served_before;	/* a worker served it: its start is no probe */
	bool		copy_logged;	/* logged as a copy, once */
	bool		requested;		/* asked for while a probe was under way */
	bool		asked;			/* by a session that found it unserved */
	bool		dba_owned;		/* owned by a superuser: probed before others */
	TimestampTz probed;			/* when its last worker was started */
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
fail(DbEntry *e, TimestampTz now, OwUnserved why, const char *what, const char *hint)
{
	ow_note_unserved(e->dboid, why);
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
	ow_note_unserved(e->dboid, OW_UNSERVED_NONE);
	if (e->complained)
		ereport(LOG, (errmsg("openwop serves database \"%s\" again", e->name)));
	e->complained = false;
	e->backoff_ms = 0;
}

/*
 * A probe found nothing to serve (end): the database waits for a request,
 * unless one came while the probe was under way.
 */
static void
nothing_to_serve(DbEntry *e, TimestampTz now, OwSlotEnd end)
{
	if (end == OW_END_COPY)
	{
		if (!e->copy_logged)
			ereport(LOG,
					(errmsg("openwop does not serve database \"%s\": it is a copy of another database", e->name),
					 errdetail("CREATE DATABASE ... TEMPLATE copied the extension; a copy gets a worker once a superuser or the extension's owner says so."),
					 errhint("Run SELECT openwop.serve_database() in it to have it served.")));
		ow_note_unserved(e->dboid, OW_UNSERVED_COPY);
		e->copy_logged = true;
		e->complained = false;
		e->backoff_ms = 0;
		e->state = DB_COPY;
	}
	else
	{
		if (e->complained)
			served(e);
		ow_note_unserved(e->dboid, OW_UNSERVED_NONE);
		e->served_before = false;
		e->asked = false;
		e->state = DB_ABSENT;
	}
	e->next_try = DT_NOEND;		/* until a request */
	if (e->requested)
		e->next_try = TimestampTzPlusMilliseconds(e->probed, PROBE_AGAIN_MS);
	e->requested = false;
}

/* Has the worker of e stopped?  Then free its slot and learn why. */
static void
poll_worker(DbEntry *e, TimestampTz now)
{
	pid_t		pid;
	TimestampTz started;
	bool		serving;
	OwSlotEnd	end;

	if (e->state != DB_RUNNING)
		return;
	if (e->handle != NULL && GetBackgroundWorkerPid(e->handle, &pid) != BGWH_STOPPED)
	{
		/* up a while: a back-off it was in is over */
		if (ow_slot_pid(e->slot, &started, &serving) != 0)
		{
			if (serving && !e->served_before && e->asked)
				ereport(LOG,
						(errmsg("openwop serves database \"%s\", which a session found unserved", e->name),
						 errdetail("The launcher had not been told that the extension was created there (CREATE EXTENSION in a prepared transaction tells it nothing).")));
			if (serving)
			{
				e->served_before = true;
				e->requested = false;
				e->asked = false;
			}
			if (e->complained && serving && TimestampDifferenceExceeds(started, now, HEALTHY_MS))
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
	if (e->handle == NULL && ow_slot_pid(e->slot, &started, &serving) != 0)
		return;					/* adopted from a launcher before us: still attached */
	if (e->handle)
		pfree(e->handle);
	e->handle = NULL;
	end = ow_slot_release(e->slot);
	e->slot = -1;
	switch (end)
	{
		case OW_END_ABSENT:
		case OW_END_COPY:
			nothing_to_serve(e, now, end);
			break;
		case OW_END_STOPPED:
			e->state = DB_NEW;
			e->next_try = now;
			break;
		case OW_END_NONE:
			if (e->timed_out)
				fail(e, now, OW_UNSERVED_NOT_CONNECTED,
					 psprintf("its worker did not connect within %ld s", CONNECT_MS / 1000),
					 "A session may hold the database locked: see pg_locks.");
			else
				fail(e, now, OW_UNSERVED_FAILING,
					 "its worker exited before it said why (see the lines above)", NULL);
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
		fail(e, now, OW_UNSERVED_NO_SLOT,
			 psprintf("every one of the %d slots of openwop.max_databases is in use", ow_max_databases),
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
		fail(e, now, OW_UNSERVED_NO_WORKER, "no background worker slot is free",
			 "Raise max_worker_processes (server start): the launcher and each served database take one.");
		return;
	}
	e->slot = slot;
	e->state = DB_RUNNING;
	e->timed_out = false;
	e->probed = now;
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
			e->served_before = false;
			e->copy_logged = false;
			e->requested = false;
			e->asked = false;
			e->probed = 0;
		}
		e->seen = true;
		e->dba_owned = superuser_arg(db->datdba);
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

/*
 * A request for e: probe it again now (a copy that the DBA did not ask for
 * at most every COPY_PROBE_AGAIN_MS), or, while its worker is under way,
 * once that ends with nothing to serve.
 */
static void
take_request(DbEntry *e, bool admin)
{
	TimestampTz at;

	if (e->state == DB_RUNNING)
	{
		e->requested = true;
		return;
	}
	if (e->state != DB_ABSENT && e->state != DB_COPY)
		return;					/* to be started anyway */
	if (e->state == DB_ABSENT && !admin)
		e->asked = true;
	at = TimestampTzPlusMilliseconds(e->probed, e->state == DB_COPY && !admin ?
									 COPY_PROBE_AGAIN_MS : PROBE_AGAIN_MS);
	/* a request never puts off an earlier one (the DBA's, say) */
	e->next_try = Min(e->next_try, at);
}

/*
 * Who is started first: databases served before, then of the rest
 * (probes: copies and databases of unknown state among them) those a
 * superuser owns, each in order of oid.
 */
static int
start_order(const void *a, const void *b)
{
	const DbEntry *x = *(DbEntry *const *) a;
	const DbEntry *y = *(DbEntry *const *) b;

	if (x->served_before != y->served_before)
		return x->served_before ? -1 : 1;
	if (x->dba_owned != y->dba_owned)
		return x->dba_owned ? -1 : 1;
	return x->dboid < y->dboid ? -1 : x->dboid > y->dboid;
}

/* One pass; returns how long to sleep, in ms. */
static long
launcher_pass(void)
{
	static bool bad_logged = false;
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz wake = TimestampTzPlusMilliseconds(now, LAUNCHER_NAP_MS);
	OwRequest	requested[MAX_REQUESTS_TAKEN];
	bool		all;
	int			n;
	int			i;
	bool		bad;
	List	   *names = restriction(&bad);
	HASH_SEQ_STATUS seq;
	DbEntry    *e;
	Oid		   *counted;
	int			ncounted;
	DbEntry   **due;
	int			ndue = 0;
	int			probing = 0;

	if (bad && !bad_logged)
		ereport(LOG,
				(errmsg("openwop.databases is not a list of database names: \"%s\"", ow_databases_setting()),
				 errdetail("The workers serve every database until it is corrected.")));
	bad_logged = bad;

	/* CREATE EXTENSION or serve_database() committed there, or a session asks */
	n = ow_take_requests(requested, MAX_REQUESTS_TAKEN, &all);
	hash_seq_init(&seq, dbs);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		if (all)
			take_request(e, false);
		for (i = 0; i < n; i++)
			if (e->dboid == requested[i].dboid)
				take_request(e, requested[i].admin);
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

	due = palloc(sizeof(DbEntry *) * hash_get_num_entries(dbs));
	hash_seq_init(&seq, dbs);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		poll_worker(e, now);
		if (e->state == DB_RUNNING)
		{
			if (!e->seen || !e->eligible)
				(void) ow_slot_stop(e->slot);	/* dropped meanwhile, or no longer to be served */
			else if (!e->served_before)
				probing++;
			continue;
		}
		if (!e->seen)
		{
			ow_note_unserved(e->dboid, OW_UNSERVED_NONE);
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
		due[ndue++] = e;
	}

	/* start what is due, served databases first; MAX_PROBES probes at a time */
	qsort(due, ndue, sizeof(DbEntry *), start_order);
	for (i = 0; i < ndue; i++)
	{
		e = due[i];
		if (!e->served_before && probing >= MAX_PROBES)
		{
			wake = Min(wake, TimestampTzPlusMilliseconds(now, PROBE_AGAIN_MS));
			continue;			/* a probe that ends wakes the launcher */
		}
		start_worker(e, now);
		if (e->state == DB_RUNNING && !e->served_before)
			probing++;
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
		e->served_before = false;
		e->copy_logged = false;
		e->requested = false;
		e->asked = false;
		e->dba_owned = false;
		e->probed = 0;
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
	ow_protect_memory();		/* it maps shared memory, the channels' key with it */

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
