/*-------------------------------------------------------------------------
 *
 * open_interrupts.c
 *	  The store's list of open interrupts, openwop.open_interrupts: pending
 *	  ones, and ones a late answer expired whose run is still to be ended.
 *
 * The row is written with the interrupt (ow_open_interrupt), marked when a
 * late answer expires it (ow_expire_open_interrupt) and deleted when it
 * stops being open (ow_close_interrupt, ow_close_run_interrupts), always
 * in the transaction that changes openwop.interrupts, under the run lock.
 * The resolve's claim deletes the row with its other writes (outcomes.c).
 * A trigger on openwop.interrupts (ow_interrupts_keep_open) carries a DBA's
 * own changes to the copied columns over.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "store/internal.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "utils/builtins.h"
#include "utils/rel.h"

/* Run q ($1 tenant, $2 interrupt id or run id). */
static uint64
open_exec(OwQuery *q, const char *tenant, const char *id)
{
	Datum		args[2];

	args[0] = CStringGetTextDatum(tenant);
	args[1] = CStringGetTextDatum(id);
	return ow_exec(q, args, NULL, false, 0);
}

/*
 * Interrupt interrupt_id, just raised by node_id (visit) of the locked run
 * with requested_seq, is open: pending, with deadline expires_at when
 * has_deadline.  interrupt_tid and execution_tid say where the raise wrote
 * its row and its node execution's (invalid: unknown, NULL in the row);
 * the resolve reads those rows there (outcomes.c).
 */
void
ow_open_interrupt(OwRun *run, const char *interrupt_id, const char *node_id, int32 visit,
				  const char *kind, Jsonb *payload, Jsonb *policy, int64 requested_seq,
				  bool has_deadline, TimestampTz expires_at, ItemPointer interrupt_tid,
				  ItemPointer execution_tid)
{
	static OwWrite insert = {.table = OW_OPEN_INTERRUPTS,.kind = OW_WRITE_INSERT,.ncols = 15,
		.cols = {OPEN_TENANT, OPEN_INTERRUPT_ID, OPEN_RUN_ID, OPEN_NODE_ID, OPEN_VISIT, OPEN_KIND,
			OPEN_PAYLOAD, OPEN_REQUESTED_SEQUENCE, OPEN_CREATED_AT, OPEN_EXPIRES_AT, OPEN_STATUS,
		OPEN_INTERRUPT_TID, OPEN_EXECUTION_TID, OPEN_POLICY, OPEN_ARTIFACT_DIGEST}};
	Datum		values[15];
	bool		nulls[15] = {false};

	values[0] = CStringGetTextDatum(run->tenant);
	values[1] = CStringGetTextDatum(interrupt_id);
	values[2] = CStringGetTextDatum(run->run_id);
	values[3] = CStringGetTextDatum(node_id);
	values[4] = Int32GetDatum(visit);
	values[5] = CStringGetTextDatum(kind);
	values[6] = JsonbPGetDatum(payload);
	values[7] = Int64GetDatum(requested_seq);
	values[8] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	values[9] = TimestampTzGetDatum(expires_at);
	nulls[9] = !has_deadline;
	values[10] = CStringGetTextDatum("pending");
	values[11] = PointerGetDatum(interrupt_tid);
	nulls[11] = !ItemPointerIsValid(interrupt_tid);
	values[12] = PointerGetDatum(execution_tid);
	nulls[12] = !ItemPointerIsValid(execution_tid);
	values[13] = PointerGetDatum(policy);
	nulls[13] = policy == NULL;
	nulls[14] = true;			/* until the engine tells it (artifact_changed) */
	(void) ow_write(NULL, &insert, NULL, values, nulls, NULL);
}

/*
 * Interrupt interrupt_id is no longer open: resolved, cancelled, or its
 * expiry announced.  With the writes of d (NULL: an operation of its
 * own); tid (if not NULL): where its row may be.  It may be gone already:
 * a statement that resolved the interrupt had the trigger below delete it.
 */
void
ow_close_interrupt_in(OwDirect *d, const char *tenant, const char *interrupt_id, ItemPointer tid)
{
	static OwWrite delete = {.table = OW_OPEN_INTERRUPTS,.kind = OW_WRITE_DELETE,.key = OW_OPEN_PKEY};
	Datum		keys[2] = {CStringGetTextDatum(tenant), CStringGetTextDatum(interrupt_id)};

	(void) ow_write(d, &delete, keys, NULL, NULL, tid);
}

void
ow_close_interrupt(const char *tenant, const char *interrupt_id)
{
	ow_close_interrupt_in(NULL, tenant, interrupt_id, NULL);
}

/* A late answer expired pending interrupt interrupt_id: open until its run is ended (INT-18). */
void
ow_expire_open_interrupt(const char *tenant, const char *interrupt_id)
{
	static OwWrite expire = {.table = OW_OPEN_INTERRUPTS,.kind = OW_WRITE_UPDATE,.key = OW_OPEN_PKEY,
	.ncols = 1,.cols = {OPEN_STATUS}};
	Datum		keys[2] = {CStringGetTextDatum(tenant), CStringGetTextDatum(interrupt_id)};
	Datum		status = CStringGetTextDatum("expired");

	(void) ow_write(NULL, &expire, keys, &status, NULL, NULL);
}

/* The locked run ends: its pending interrupts are cancelled and no longer open. */
void
ow_close_run_interrupts(OwRun *run)
{
	static OwQuery q = {"DELETE FROM openwop.open_interrupts"
		" WHERE tenant OPERATOR(pg_catalog.=) $1 AND run_id OPERATOR(pg_catalog.=) $2"
		"   AND status OPERATOR(pg_catalog.=) 'pending'",
	2, {TEXTOID, TEXTOID}, SPI_OK_DELETE};

	(void) open_exec(&q, run->tenant, run->run_id);
}

PG_FUNCTION_INFO_V1(ow_interrupts_keep_open);

/*
 * Trigger on openwop.interrupts, AFTER UPDATE OF the columns that say what
 * is open OR DELETE, FOR EACH ROW: a DBA's change to an interrupt row (a
 * deadline moved, an interrupt closed by hand, a row removed) reaches its
 * open row, so the two never disagree.  An interrupt still open (pending,
 * or expired with its expiry not yet announced) has its open row follow
 * it; one no longer open has none.  The extension's own statements keep
 * both tables in step themselves (what this does again is a no-op then),
 * and its direct writes name no column: they never fire it.
 */
Datum
ow_interrupts_keep_open(PG_FUNCTION_ARGS)
{
	static OwQuery update = {"UPDATE openwop.open_interrupts"
		"   SET tenant = $3, interrupt_id = $4, run_id = $5, node_id = $6, visit = $7, kind = $8,"
		"       payload = $9, status = $10, requested_sequence = $11, created_at = $12, expires_at = $13"
		" WHERE tenant OPERATOR(pg_catalog.=) $1 AND interrupt_id OPERATOR(pg_catalog.=) $2",
		13, {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT4OID, TEXTOID, JSONBOID,
	TEXTOID, INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID}, SPI_OK_UPDATE};
	static const char *const columns[] = {"tenant", "interrupt_id", "tenant", "interrupt_id",
		"run_id", "node_id", "visit", "kind", "payload", "status", "requested_sequence",
	"created_at", "expires_at"};
	TriggerData *trigdata = ow_trigger_data(fcinfo, "openwop.interrupts_keep_open()", "interrupts",
											OW_TRIGGER_AFTER | OW_TRIGGER_ROW |
											OW_TRIGGER_UPDATE | OW_TRIGGER_DELETE);
	TupleDesc	desc = RelationGetDescr(trigdata->tg_relation);
	HeapTuple	old = trigdata->tg_trigtuple;
	HeapTuple	new = TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event) ? trigdata->tg_newtuple : NULL;
	int			attnums[13];
	Datum		args[13];
	char		nulls[13];
	bool		isnull;
	bool		open;
	int			i;

	/* every column it reads, looked up before anything is read */
	for (i = 0; i < 13; i++)
		attnums[i] = ow_trigger_column(trigdata, "openwop.interrupts_keep_open()", columns[i]);
	SPI_connect();
	open = false;
	if (new)
	{
		Datum		status = heap_getattr(new, attnums[9], desc, &isnull);

		/* a status is NOT NULL; a NULL one is no open interrupt */
		open = !isnull && strcmp(TextDatumGetCString(status), "pending") == 0;
		if (!isnull && !open && strcmp(TextDatumGetCString(status), "expired") == 0)
		{
			(void) heap_getattr(new, ow_trigger_column(trigdata, "openwop.interrupts_keep_open()",
													   "resolved_sequence"), desc, &isnull);
			open = isnull;
		}
	}
	if (!open)
	{
		Datum		tenant = heap_getattr(old, attnums[0], desc, &isnull);
		bool		id_null;
		Datum		id = heap_getattr(old, attnums[1], desc, &id_null);

		/*
		 * By its statement: the trigger runs as whoever changed the
		 * interrupt, whose DELETE privilege on the open rows the statement
		 * checks and a direct delete would not.
		 */
		OwDirect	by_statement = {.direct = false};

		if (!isnull && !id_null)
			ow_close_interrupt_in(&by_statement, TextDatumGetCString(tenant), TextDatumGetCString(id), NULL);
	}
	else
	{
		for (i = 0; i < 13; i++)
		{
			args[i] = heap_getattr(i < 2 ? old : new, attnums[i], desc, &isnull);
			nulls[i] = isnull ? 'n' : ' ';
		}
		(void) ow_exec(&update, args, nulls, false, 0);
	}
	SPI_finish();
	return PointerGetDatum(NULL);
}
