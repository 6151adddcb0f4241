/*-------------------------------------------------------------------------
 *
 * spi.c
 *	  The one way this extension runs a statement: an OwQuery, prepared on
 *	  first use and kept for the life of the backend, executed with its
 *	  parameters and checked against the result it must give; readers of
 *	  the rows it returned; and subtransactions that hand an error back.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "openwop.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "utils/guc.h"
#include "utils/resowner.h"

/*
 * Every statement of the extension is an index probe by design, and its
 * plan is kept for the backend's life: a plan made while the store looked
 * empty to the planner (a fresh install whose empty tables were analysed)
 * would scan sequentially for ever after.  So statements are planned, and
 * re-planned after an invalidation, with sequential scans disabled, for
 * the statement only: the returned GUC nest level is popped with
 * AtEOXact_GUC (an error pops it with the transaction).  JIT is off too:
 * a statement with no index path (the small signing_keys table, read by
 * its state) costs the disabled scan's 1e10 and would be compiled on every
 * execution (tens of milliseconds each), and no probe gains by it.  The
 * settings are made per statement, not per call, so that a call that runs
 * no statement (a resolve, on plain tables) pays nothing for them.
 */
static int
plan_for_probes(void)
{
	int			level = NewGUCNestLevel();

	(void) set_config_option("enable_seqscan", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("jit", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	return level;
}

/* Prepare q once per backend and keep the plan. */
static void
prepare(OwQuery *q)
{
	SPIPlanPtr	plan;

	Assert(q->nargs >= 0 && q->nargs <= OW_QUERY_MAX_ARGS);
	plan = SPI_prepare_cursor(q->sql, q->nargs, q->types,
							  q->secret ? CURSOR_OPT_GENERIC_PLAN : 0);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for \"%s\": %s",
			 q->sql, SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "SPI_keepplan failed");
	q->plan = plan;
}

/*
 * Run q with args (nulls as SPI takes them, NULL: none is null), at most
 * count rows (0: all).  A result other than q->expect is an internal
 * error: every statement here is the extension's own.  Returns the number
 * of rows processed; they are in SPI_tuptable.
 */
uint64
ow_exec(OwQuery *q, Datum *args, const char *nulls, bool read_only, long count)
{
	int			rc;
	int			level = plan_for_probes();

	if (q->plan == NULL)
		prepare(q);
	rc = SPI_execute_plan(q->plan, args, nulls, read_only, count);
	AtEOXact_GUC(true, level);
	if (rc < 0 || (q->expect != 0 && rc != q->expect))
		elog(ERROR, "openwop statement failed (%s): %s", SPI_result_code_string(rc), q->sql);
	return SPI_processed;
}

/* Column col (1-based) of row row of SPI_tuptable as a C string, NULL if null. */
char *
ow_col_text(uint64 row, int col)
{
	return SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col);
}

Datum
ow_col_datum(uint64 row, int col, bool *isnull)
{
	return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, isnull);
}

/* An int8, int4 or bool column that may not be null. */
int64
ow_col_int64(uint64 row, int col)
{
	bool		isnull;
	Datum		d = ow_col_datum(row, col, &isnull);

	if (isnull)
		elog(ERROR, "column %d of an openwop statement is null", col);
	switch (SPI_gettypeid(SPI_tuptable->tupdesc, col))
	{
		case INT4OID:
			return DatumGetInt32(d);
		case BOOLOID:
			return DatumGetBool(d);
		default:
			return DatumGetInt64(d);
	}
}

bool
ow_col_bool(uint64 row, int col)
{
	return ow_col_int64(row, col) != 0;
}

/* A jsonb column, copied into the current memory context; NULL if null. */
Jsonb *
ow_col_jsonb(uint64 row, int col)
{
	bool		isnull;
	Datum		d = ow_col_datum(row, col, &isnull);

	return isnull ? NULL : DatumGetJsonbPCopy(d);
}

/*
 * Run fn(arg) in a subtransaction.  Returns NULL when it succeeded; when
 * it raised, the subtransaction is rolled back first and the error is
 * returned for the caller to handle or re-throw (ReThrowError), so no
 * error ever escapes with our subtransaction still open.
 */
ErrorData *
ow_try_subtransaction(void (*fn) (void *), void *arg)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	ErrorData  *volatile edata = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcxt);
	PG_TRY();
	{
		fn(arg);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(oldcxt);
	CurrentResourceOwner = oldowner;
	return edata;
}
