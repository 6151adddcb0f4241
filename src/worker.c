/*-------------------------------------------------------------------------
 *
 * worker.c
 *	  What the two background workers (the timeout worker and the notify
 *	  relay) share: their registration, the database they serve
 *	  (openwop.database) and their main loop.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "openwop.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"

/* Database the timeout worker and the notify relay serve. */
static char *ow_database = NULL;

/* openwop.database exists only when the library is loaded at server start. */
void
ow_define_worker_settings(void)
{
	DefineCustomStringVariable("openwop.database",
							   "Database whose deadlines the timeout worker applies and whose notifications the relay sends.",
							   NULL,
							   &ow_database,
							   "postgres",
							   PGC_POSTMASTER,
							   0,
							   NULL, NULL, NULL);
}

/*
 * Register a background worker of this library that connects to
 * openwop.database; restart is seconds before the postmaster restarts it.
 */
void
ow_register_worker(const char *function, const char *name, int restart)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = restart;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "openwop_interrupt");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "%s", function);
	snprintf(worker.bgw_name, BGW_MAXLEN, "%s", name);
	snprintf(worker.bgw_type, BGW_MAXLEN, "%s", name);
	RegisterBackgroundWorker(&worker);
}

/*
 * The body of both background workers: connect to openwop.database,
 * attach, then run pass() and sleep on the latch as long as it asks (0:
 * go again at once).  An error in a pass is logged, its transaction rolled
 * back, and the worker sleeps error_ms before the next.
 */
void
ow_worker_main(const char *name, void (*attach) (void), long (*pass) (void), long error_ms)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(ow_database, NULL, 0);
	attach();
	elog(LOG, "%s started in database \"%s\"", name, ow_database);

	for (;;)
	{
		volatile long sleep_ms;
		MemoryContext oldcxt = CurrentMemoryContext;

		PG_TRY();
		{
			sleep_ms = pass();
		}
		PG_CATCH();
		{
			MemoryContextSwitchTo(oldcxt);
			EmitErrorReport();
			FlushErrorState();
			AbortCurrentTransaction();
			pgstat_report_activity(STATE_IDLE, NULL);
			sleep_ms = error_ms;
		}
		PG_END_TRY();
		if (sleep_ms > 0)
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 sleep_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
	}
}
