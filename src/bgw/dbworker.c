/*-------------------------------------------------------------------------
 *
 * dbworker.c
 *	  The database worker: one per database in which the extension is
 *	  created, started by the launcher (launcher.c) in the registry slot it
 *	  was given.  It is its database's notify relay (notify.c) and applies
 *	  its deadlines (timeouts.c), and it leaves when asked: its
 *	  database is to be dropped, renamed, moved or copied, the extension was
 *	  dropped, or the database is no longer to be served.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "ipc/ipc.h"
#include "auth/auth.h"
#include "bgw/internal.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "commands/dbcommands.h"
#include "utils/guc.h"
#include "utils/memutils.h"

PGDLLEXPORT void ow_database_worker_main(Datum arg);

#define RELAY_RETRY_MS 100L		/* after a failed batch, which stays in the ring */

/*
 * At most one relay transaction per RELAY_GATHER_US: under load, what
 * commits meanwhile goes in one batch, so one client resolving back to back
 * does not pay a relay transaction (an xid, a commit record, a wake-up of a
 * second process on a busy core) per resolve; a notification that follows a
 * quiet spell goes at once.
 */
/* PostgreSQL's least interval between two flushes of a backend's statistics */
#define STATS_FLUSH_US 1000000
#define RELAY_GATHER_US 1000L
#define TIMEOUT_RETRY_MS 10000L /* after a failed timeout pass */

/* The error being handled, for the status view; the error state is flushed after. */
static void
record_error(int slot, bool timeout_pass, MemoryContext cxt)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(cxt);
	edata = CopyErrorData();
	EmitErrorReport();
	FlushErrorState();
	AbortCurrentTransaction();
	pgstat_report_activity(STATE_IDLE, NULL);
	ow_slot_record(slot, timeout_pass, 0, edata->message);
	FreeErrorData(edata);
}

static char *dbname = "";

static uint32 generation;

static void
leave(int slot, OwSlotEnd end, const char *why)
{
	ow_slot_ending(slot, generation, end);
	ereport(LOG,
			(errmsg("openwop worker for database \"%s\" stops: %s", dbname, why)));
	proc_exit(0);
}

/*
 * One relay batch (notify.c).  On an error the batch stays in the ring and
 * is retried after RELAY_RETRY_MS.  The PG_TRY blocks live in functions of
 * their own so that no variable of the worker's loop lives across a
 * setjmp.
 */
static void
relay_pass(int slot, MemoryContext cxt, TimestampTz *relay_retry, TimestampTz *last_relay)
{
	PG_TRY();
	{
		int64		sent = ow_relay_drain();

		if (sent > 0)
		{
			*last_relay = GetCurrentTimestamp();
			ow_slot_record(slot, false, sent, NULL);
		}
	}
	PG_CATCH();
	{
		record_error(slot, false, cxt);
		*relay_retry = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), RELAY_RETRY_MS);
	}
	PG_END_TRY();
}

/* One timeout pass (timeouts.c): the milliseconds until the next, or -1 when the extension is gone. */
static long
timeout_pass(int slot, MemoryContext cxt)
{
	volatile long sleep_ms = 0;

	PG_TRY();
	{
		int64		done = 0;

		sleep_ms = ow_timeout_pass(&done);
		if (sleep_ms >= 0)
			ow_slot_record(slot, true, done, NULL);
	}
	PG_CATCH();
	{
		record_error(slot, true, cxt);
		sleep_ms = TIMEOUT_RETRY_MS;
	}
	PG_END_TRY();
	return sleep_ms;
}

void
ow_database_worker_main(Datum arg)
{
	int			slot = DatumGetInt32(arg);
	Oid			dboid;
	bool		stop;
	bool		recheck;
	bool		deadline;
	TimestampTz next_pass = 0;	/* a timeout pass is due at once */
	TimestampTz stats_deferred_at = 0;	/* when a statistics flush was put off; 0: none */
	TimestampTz relay_retry = 0;
	TimestampTz last_relay = 0;
	MemoryContext cxt = AllocSetContextCreate(TopMemoryContext, "openwop worker", ALLOCSET_SMALL_SIZES);

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	ow_protect_memory();		/* it maps shared memory, the channels' key with it */

	/* paused (or released) between the launcher's start and ours: do not connect */
	memcpy(&generation, MyBgworkerEntry->bgw_extra, sizeof(uint32));
	dboid = ow_slot_database(slot, generation);
	ow_slot_flags(slot, &stop, &recheck, &deadline);
	if (!OidIsValid(dboid) || stop)
	{
		ow_slot_ending(slot, generation, OW_END_STOPPED);
		proc_exit(0);
	}
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);

	/*
	 * The database's owner may have set these for every session (ALTER
	 * DATABASE ... SET); the worker's own transactions must not be
	 * read-only or cut short by them.
	 */
	SetConfigOption("default_transaction_read_only", "off", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("default_transaction_isolation", "read committed", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("statement_timeout", "0", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("lock_timeout", "0", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("idle_in_transaction_session_timeout", "0", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("search_path", "pg_catalog", PGC_SUSET, PGC_S_OVERRIDE);
	if (!ow_slot_attach(slot, generation))
	{
		ow_slot_ending(slot, generation, OW_END_STOPPED);
		proc_exit(0);
	}
	pgstat_report_appname("openwop worker");

	if (!ow_extension_installed())
	{
		/* the launcher probes each database it has not seen: most have no extension */
		ow_slot_ending(slot, generation, OW_END_ABSENT);
		proc_exit(0);
	}
	if (ow_database_is_unserved_copy())
	{
		/* a role with CREATEDB copied it: served once the DBA says so */
		ow_slot_ending(slot, generation, OW_END_COPY);
		proc_exit(0);
	}
	StartTransactionCommand();
	dbname = MemoryContextStrdup(cxt, get_database_name(MyDatabaseId));
	CommitTransactionCommand();
	ow_relay_attach(slot);
	ow_slot_serving(slot, dbname);
	ereport(LOG,
			(errmsg("openwop worker started in database \"%s\"", dbname)));

	for (;;)
	{
		TimestampTz now;
		long		wait_ms;
		long		stat_ms;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		ow_slot_flags(slot, &stop, &recheck, &deadline);
		if (stop)
			leave(slot, OW_END_STOPPED, "asked to leave the database");
		if (recheck && !ow_extension_installed())
			leave(slot, OW_END_ABSENT, "the extension was dropped");

		now = GetCurrentTimestamp();
		if (now >= relay_retry)
		{
			if (now - last_relay < RELAY_GATHER_US && ow_relay_waiting())
			{
				pg_usleep(RELAY_GATHER_US - (now - last_relay));
				CHECK_FOR_INTERRUPTS();
			}
			relay_pass(slot, cxt, &relay_retry, &last_relay);
		}

		if (deadline || now >= next_pass)
		{
			long		sleep_ms = timeout_pass(slot, cxt);

			if (sleep_ms < 0)
				leave(slot, OW_END_ABSENT, "the extension was dropped");
			next_pass = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), sleep_ms);
		}

		now = GetCurrentTimestamp();
		wait_ms = (long) Max(0, (next_pass - now) / 1000);
		if (relay_retry > now)
			wait_ms = Min(wait_ms, (long) ((relay_retry - now) / 1000) + 1);

		/*
		 * The rows this worker changed count in pg_stat_user_tables, which
		 * autovacuum reads.  pgstat_report_stat flushes at most once a
		 * second, measured by the last commit's time, which stays put while
		 * the worker runs no transaction: so what it defers is flushed a
		 * second later by force, as an idle backend's timeout does.
		 */
		now = GetCurrentTimestamp();
		stat_ms = pgstat_report_stat(stats_deferred_at != 0 &&
									 now - stats_deferred_at >= STATS_FLUSH_US);
		if (stat_ms <= 0)
			stats_deferred_at = 0;
		else
		{
			if (stats_deferred_at == 0)
				stats_deferred_at = now;
			wait_ms = Min(wait_ms, Max(1, (STATS_FLUSH_US - (now - stats_deferred_at)) / 1000 + 1));
		}
		if (wait_ms > 0)
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 wait_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
