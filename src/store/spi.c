/*-------------------------------------------------------------------------
 *
 * spi.c
 *	  The one way this extension runs a statement: an OwQuery, prepared on
 *	  first use and kept for the life of the backend, executed with its
 *	  parameters and checked against the result it must give; readers of
 *	  the rows it returned; subtransactions that hand an error back; and
 *	  the check of how a trigger function was fired.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "store/internal.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "parser/parse_coerce.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/guc.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

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
	ow_require_current_schema();
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

/*
 * Run a read-only statement against the latest committed state rather than
 * the transaction's snapshot: what a REPEATABLE READ or SERIALIZABLE caller
 * compares its snapshot with, to find a change it cannot see.
 */
uint64
ow_exec_latest(OwQuery *q, Datum *args, const char *nulls, long count)
{
	int			rc;
	int			level = plan_for_probes();

	if (q->plan == NULL)
		prepare(q);
	rc = SPI_execute_snapshot(q->plan, args, nulls, GetLatestSnapshot(), InvalidSnapshot,
							  true, false, count);
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

/*
 * The statements read tables a DBA may ALTER: a column of another type
 * than the one asked for (type, or one binary-coercible to it: a domain
 * over it, varchar for text) is refused here rather than read as the
 * wrong thing.
 */
static void
check_col_type(int col, Oid type)
{
	Oid			actual = SPI_gettypeid(SPI_tuptable->tupdesc, col);

	if (actual != type && !IsBinaryCoercible(actual, type))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("an openwop table's column read as %s is of type %s",
						format_type_be(type), format_type_be(actual)),
				 errdetail("Column %d of a statement the extension runs on its own tables is no longer of the type the install script gave it.",
						   col),
				 errhint("ALTER the column back to type %s.", format_type_be(type))));
}

/* Column col (1-based) of row row of SPI_tuptable, of type type. */
Datum
ow_col_datum(uint64 row, int col, Oid type, bool *isnull)
{
	check_col_type(col, type);
	return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, isnull);
}

/* An int8, int4 or bool column that may not be null. */
int64
ow_col_int64(uint64 row, int col)
{
	bool		isnull;
	Oid			type = SPI_gettypeid(SPI_tuptable->tupdesc, col);
	Datum		d;

	if (type != INT4OID && type != BOOLOID)
		type = INT8OID;
	d = ow_col_datum(row, col, type, &isnull);
	if (isnull)
		elog(ERROR, "column %d of an openwop statement is null", col);
	switch (type)
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
	Datum		d = ow_col_datum(row, col, JSONBOID, &isnull);

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

/* What a trigger function was fired for, in words, for the refusal. */
static const char *
fired_as(TriggerEvent event)
{
	const char *timing = TRIGGER_FIRED_BEFORE(event) ? "BEFORE" :
		TRIGGER_FIRED_AFTER(event) ? "AFTER" : "INSTEAD OF";
	const char *op = TRIGGER_FIRED_BY_INSERT(event) ? "INSERT" :
		TRIGGER_FIRED_BY_UPDATE(event) ? "UPDATE" :
		TRIGGER_FIRED_BY_DELETE(event) ? "DELETE" : "TRUNCATE";

	return psprintf("%s %s FOR EACH %s", timing, op,
					TRIGGER_FIRED_FOR_ROW(event) ? "ROW" : "STATEMENT");
}

/*
 * The TriggerData of a trigger function fired as the extension binds it,
 * refused otherwise: not as a trigger, at another timing, level or event,
 * or on any table but openwop.<table> (a TEMP table of that name, a view,
 * a foreign or partitioned table a caller attached it to).  The install
 * script binds each function once; anyone with EXECUTE on it may bind it
 * anywhere else, and a trigger trusts the shape of the rows it is given.
 */
struct TriggerData *
ow_trigger_data(FunctionCallInfo fcinfo, const char *function, const char *table, int allowed)
{
	TriggerData *trigdata;
	TriggerEvent event;
	Relation	rel;
	int			mask = 0;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("%s was not called by the trigger manager", function),
				 errhint("It is a trigger function of table openwop.%s.", table)));
	trigdata = (TriggerData *) fcinfo->context;
	event = trigdata->tg_event;
	rel = trigdata->tg_relation;
	if (rel == NULL || rel->rd_rel->relkind != RELKIND_RELATION ||
		RelationGetNamespace(rel) != get_namespace_oid("openwop", true) ||
		strcmp(RelationGetRelationName(rel), table) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("%s fires on table openwop.%s only", function, table),
				 rel ? errdetail("It was fired on %s.%s.",
								 get_namespace_name(RelationGetNamespace(rel)),
								 RelationGetRelationName(rel)) : 0));
	mask |= TRIGGER_FIRED_FOR_ROW(event) ? OW_TRIGGER_ROW : OW_TRIGGER_STATEMENT;
	mask |= TRIGGER_FIRED_BEFORE(event) ? OW_TRIGGER_BEFORE :
		TRIGGER_FIRED_AFTER(event) ? OW_TRIGGER_AFTER : 0;
	mask |= TRIGGER_FIRED_BY_INSERT(event) ? OW_TRIGGER_INSERT :
		TRIGGER_FIRED_BY_UPDATE(event) ? OW_TRIGGER_UPDATE :
		TRIGGER_FIRED_BY_DELETE(event) ? OW_TRIGGER_DELETE :
		TRIGGER_FIRED_BY_TRUNCATE(event) ? OW_TRIGGER_TRUNCATE : 0;
	/* one of each group present, and every one allowed */
	if ((mask & (OW_TRIGGER_BEFORE | OW_TRIGGER_AFTER)) == 0 ||
		(mask & (OW_TRIGGER_INSERT | OW_TRIGGER_UPDATE | OW_TRIGGER_DELETE | OW_TRIGGER_TRUNCATE)) == 0 ||
		(mask & (OW_TRIGGER_ROW | OW_TRIGGER_STATEMENT) & allowed) == 0 ||
		(mask & (OW_TRIGGER_BEFORE | OW_TRIGGER_AFTER) & allowed) == 0 ||
		(mask & (OW_TRIGGER_INSERT | OW_TRIGGER_UPDATE | OW_TRIGGER_DELETE | OW_TRIGGER_TRUNCATE) & allowed) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("%s cannot be fired %s", function, fired_as(event)),
				 errhint("The install script binds it to openwop.%s; do not bind it again.", table)));
	return trigdata;
}

/*
 * The attribute number of column in the trigger's table, refused when the
 * table has no such column (a DBA dropped it): a trigger that read past
 * its tuple descriptor would read garbage.
 */
int
ow_trigger_column(struct TriggerData *trigdata, const char *function, const char *column)
{
	int			attnum = SPI_fnumber(RelationGetDescr(trigdata->tg_relation), column);

	if (attnum <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("%s needs column \"%s\" of table openwop.%s", function, column,
						RelationGetRelationName(trigdata->tg_relation))));
	return attnum;
}

/*
 * Has table openwop.<name> never held a row: no block at all?  A table
 * that is only appended to (the policy log) has none until its first
 * insert, so its readers skip a statement that could find nothing; an
 * insert not yet committed extends it, and its readers then run the
 * statement, which sees what their snapshot lets them.
 */
bool
ow_table_never_written(const char *name)
{
	Oid			relid = get_relname_relid(name, get_namespace_oid("openwop", false));
	Relation	rel;
	BlockNumber blocks;

	if (!OidIsValid(relid))
		elog(ERROR, "table openwop.%s does not exist", name);
	rel = table_open(relid, AccessShareLock);
	blocks = RelationGetNumberOfBlocks(rel);
	table_close(rel, AccessShareLock);
	return blocks == 0;
}
