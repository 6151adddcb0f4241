/*-------------------------------------------------------------------------
 *
 * timeouts.c
 *	  openwop.sweep() and the database worker's timeout pass, the two
 *	  callers of the expiry policy (deadlines.c) that look for due work.
 *
 * The pass (in each database's worker, dbworker.c) settles each due
 * interrupt in a transaction of its own, so it holds one run's lock at a
 * time and a failure or a busy run delays nobody else; between two, the
 * worker relays the notifications that wait.  The worker sleeps until the
 * next deadline, at most openwop.sweeper_interval; a transaction that
 * raises an interrupt with a deadline (or that a late answer expired)
 * wakes it at commit.  Deadlines that passed while the server was down
 * (or while no worker served the database) are applied on its first pass.  sweep() runs in its caller's transaction:
 * it settles up to max interrupts, each in a subtransaction, and holds
 * their runs locked until that transaction ends.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "ipc/ipc.h"
#include "base/base.h"
#include "store/store.h"
#include "auth/auth.h"
#include "domain/domain.h"
#include "bgw/internal.h"

#include "access/xact.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "pgstat.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(ow_sweep);

/* The timeout worker's longest sleep, in seconds. */
static int	ow_sweeper_interval = 60;

/*
 * openwop.sweep(max) → integer
 *
 * Fires due reminders and escalations, applies due deadlines, idempotency
 * retention and the outbox's bounds once (at most max of each); returns
 * how many rows it settled, fired or removed.  The worker runs the
 * same code; pg_cron users may schedule this instead.
 */
Datum
ow_sweep(PG_FUNCTION_ARGS)
{
	int32		max = PG_ARGISNULL(0) ? 1000 : PG_GETARG_INT32(0);
	OwCall		call;
	TimestampTz next;
	int			n;

	ow_refuse_read_only("sweep()");
	if (max < 1)
		ow_validation_error("max", "max must be at least 1, not %d", max);
	ow_caller(&call.caller);
	ow_require_every_tenant(&call.caller, "sweep()");
	ow_call_enter(&call);
	n = ow_sweep_gate_steps(max, NULL, NULL, CurrentMemoryContext, &next, NULL);
	n += ow_sweep_deadlines(max, NULL, NULL, CurrentMemoryContext, &next, NULL);
	n += ow_purge_idempotency(max);
	n += ow_outbox_upkeep(max);
	ow_call_end(&call);
	ow_call_finish(&call);
	PG_RETURN_INT32(n);
}

/* ----------
 * The database worker's pass
 * ----------
 */

/*
 * The worker's transactions, each as the extension owner.  Not the call
 * bracket of auth/call.c: the worker acts for no caller, and it opens and
 * commits its transactions itself.
 */
static OwPriv worker_priv;

static void
worker_begin(void)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	ow_become_owner(&worker_priv);
}

/* ... and between two deadlines, the notifications that wait */
static void
worker_end(void)
{
	ow_restore_user(&worker_priv);
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	(void) ow_relay_drain();
}

/* Is the extension installed in the worker's database?  Outside a transaction. */
bool
ow_extension_installed(void)
{
	bool		found;

	StartTransactionCommand();
	found = OidIsValid(get_extension_oid("openwop_interrupt", true));
	CommitTransactionCommand();
	return found;
}

/*
 * The database the extension was created in, or the DBA last said to
 * serve (openwop.served_database): a database whose oid is not the one
 * recorded is a copy (CREATE DATABASE ... TEMPLATE copies the row).
 * *recorded is false where the schema is not the library's (the worker
 * waits there for ALTER EXTENSION ... UPDATE, see ow_timeout_pass).  In a
 * transaction, with a snapshot; read without privileges (the monitoring
 * view's reader has none on the table).
 */
Oid
ow_served_database(bool *recorded)
{
	static OwQuery q = {"SELECT database_oid FROM openwop.served_database", 0, {0}, SPI_OK_SELECT};
	Oid			dboid = InvalidOid;
	OwPriv		priv;

	*recorded = ow_schema_is_current(NULL);
	if (!*recorded)
		return InvalidOid;
	SPI_connect();
	ow_become_owner(&priv);
	if (ow_exec(&q, NULL, NULL, true, 1) == 1)
	{
		bool		isnull;
		Datum		d = ow_col_datum(0, 1, OIDOID, &isnull);

		dboid = isnull ? InvalidOid : DatumGetObjectId(d);
	}
	ow_restore_user(&priv);
	SPI_finish();
	return dboid;
}

/* Is the worker's database a copy the DBA has not said to serve?  Outside a transaction. */
bool
ow_database_is_unserved_copy(void)
{
	bool		recorded;
	Oid			dboid;

	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	dboid = ow_served_database(&recorded);
	PopActiveSnapshot();
	CommitTransactionCommand();
	return recorded && dboid != MyDatabaseId;
}

typedef enum
{
	SCHEMA_ABSENT,
	SCHEMA_CURRENT,
	SCHEMA_OTHER,
} SchemaState;

/*
 * Is the extension installed, and its schema the library's?  Outside a
 * transaction.  A schema of another version is said in the log once per
 * worker, and again after it has been current.
 */
static SchemaState
schema_state(void)
{
	static bool said = false;
	SchemaState state;
	char	   *version;

	StartTransactionCommand();
	if (ow_schema_is_current(&version))
		state = SCHEMA_CURRENT;
	else
		state = version == NULL ? SCHEMA_ABSENT : SCHEMA_OTHER;
	if (state == SCHEMA_OTHER && !said)
		ereport(LOG,
				(errmsg("openwop: database \"%s\" has schema version %s of openwop_interrupt, the library version %s: no deadline is applied until ALTER EXTENSION openwop_interrupt UPDATE",
						get_database_name(MyDatabaseId), version, OW_SCHEMA_VERSION)));
	said = state == SCHEMA_OTHER;
	CommitTransactionCommand();
	return state;
}

/*
 * One pass: fire due reminders and escalations, then settle due
 * deadlines, each in a transaction of its own (at most batch of each,
 * shared fairly between tenants), purge expired idempotency records, keep
 * the notification outbox bounded, then say how long to sleep, in ms: until the next
 * deadline, at most openwop.sweeper_interval, 0 when the batch ran out
 * with more work due; -1 when the extension is not installed.  A schema
 * that is not the library's version gets no pass (logged once): the
 * worker looks again after openwop.sweeper_interval.  *done: the
 * interrupts settled and records removed.
 */
long
ow_timeout_pass(int64 *done)
{
	const int	batch = 1000;
	long		sleep_ms = (long) ow_sweeper_interval * 1000L;
	static MemoryContext pass_cxt = NULL;
	static char turn[OW_TENANT_BUF];	/* whose turn was last, across passes */
	static char step_turn[OW_TENANT_BUF];
	TimestampTz next;
	TimestampTz next_step;
	int			settled;
	int			fired;
	int			purged;

	*done = 0;
	switch (schema_state())
	{
		case SCHEMA_ABSENT:
			return -1;
		case SCHEMA_OTHER:
			return sleep_ms;
		case SCHEMA_CURRENT:
			break;
	}
	/* reset, not deleted, each pass: an error escaping a pass must not leak it */
	if (pass_cxt == NULL)
		pass_cxt = AllocSetContextCreate(TopMemoryContext, "openwop timeout pass", ALLOCSET_SMALL_SIZES);
	MemoryContextReset(pass_cxt);

	/* steps first: a reminder costs little, and waits for no burst of deadlines */
	pgstat_report_activity(STATE_RUNNING, "openwop: firing reminders and escalations");
	fired = ow_sweep_gate_steps(batch, worker_begin, worker_end, pass_cxt, &next_step, step_turn);
	pgstat_report_activity(STATE_RUNNING, "openwop: applying deadlines");
	settled = ow_sweep_deadlines(batch, worker_begin, worker_end, pass_cxt, &next, turn);
	pgstat_report_activity(STATE_RUNNING, "openwop: removing expired idempotency records");
	worker_begin();
	purged = ow_purge_idempotency(batch);
	worker_end();
	pgstat_report_activity(STATE_RUNNING, "openwop: keeping the notification outbox");
	worker_begin();
	purged += ow_outbox_upkeep(batch);
	worker_end();
	pgstat_report_activity(STATE_IDLE, NULL);
	*done = settled + fired + purged;

	/* work was done and more may be due: go on at once */
	if (purged >= batch || (settled > 0 && next <= GetCurrentTimestamp()) ||
		(fired > 0 && next_step <= GetCurrentTimestamp()))
		return 0;
	next = Min(next, next_step);
	if (next != DT_NOEND)
	{
		long		ms = (long) ((next - GetCurrentTimestamp()) / 1000);

		/*
		 * Wake just after the next deadline.  One already due was left
		 * because its run is busy or its settling failed: retry in a
		 * second, not in a hot loop.
		 */
		sleep_ms = Min(sleep_ms, ms > 0 ? ms + 10 : 1000L);
	}
	return sleep_ms;
}

/* ----------
 * Settings
 * ----------
 */

void
ow_define_timeout_worker_settings(void)
{
	DefineCustomIntVariable("openwop.sweeper_interval",
							"Longest time a database worker sleeps between timeout passes.",
							"It wakes earlier at the next deadline, and when a transaction raises an interrupt with a deadline.",
							&ow_sweeper_interval,
							60, 1, 3600,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);
}
