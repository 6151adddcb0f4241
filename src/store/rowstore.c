/*-------------------------------------------------------------------------
 *
 * rowstore.c
 *	  Direct row access for the hot paths: index probes, row locks, inserts
 *	  and updates of the store's tables through the relation cache, with no
 *	  statement to plan or executor to start.
 *
 * A resolve is a handful of single-row operations on known indexes.  Run
 * as SQL statements, most of their cost was executor start-up, not the
 * rows (docs/benchmarks.md).  An operation here does what its statement
 * would: a snapshot taken as SPI takes one for a statement (after a
 * command counter increment, so it sees this transaction's earlier
 * writes), row locks that follow the update chain in READ COMMITTED and
 * fail with a serialization error above it, and writes through
 * ExecSimpleRelationInsert/Update (what logical replication applies rows
 * with): NOT NULL and CHECK constraints, unique and partial index
 * maintenance, HOT updates.  The access methods take the SSI predicate
 * locks a statement's scans would.
 *
 * Every read and write of the hot paths is described once, where it is
 * made (OwRead, OwWrite in store.h), and carried here: directly while the
 * tables are plain, else by the statement made from the same description,
 * so whatever PostgreSQL does for a statement happens.  A table is not
 * plain when a DBA adds a trigger, a rule or row-level security to it, or
 * a column to a table the hot paths insert into (its default would be
 * skipped: an insert sets every column it knows, so a default of one of
 * those means nothing to either carrier).  Nor when a column changes type
 * (another type, a domain, a length): the values are written as Datums of
 * the install script's types, with no coercion, domain check or length
 * check, so the whole direct path is off until the column is as the
 * install script made it.
 *
 * Relations, indexes and attribute numbers are looked up by name once per
 * backend and forgotten on any relation cache invalidation of them (DROP
 * and CREATE EXTENSION, ALTER TABLE, ANALYZE, ...).  The schema is the
 * library's version (schema.c) before anything is looked up.
 *
 * One file, though long: the checks that a table is as the install script
 * made it, the direct operations that rely on them and the statements
 * made for when they cannot are one contract, and the table, column and
 * index descriptions they share stay private to it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "store/internal.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/relscan.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_operator_d.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/value.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "parser/parse_func.h"
#include "parser/parse_relation.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

static const char *const table_names[OW_TABLE_COUNT] = {
	[OW_RUNS] = "runs",
	[OW_EVENTS] = "events",
	[OW_INTERRUPTS] = "interrupts",
	[OW_NODE_EXECUTIONS] = "node_executions",
	[OW_GROUP_MEMBERS] = "group_members",
	[OW_OPEN_INTERRUPTS] = "open_interrupts",
	[OW_NOTIFICATIONS] = "notifications",
};

typedef struct OwColumnDef
{
	OwTableId	table;
	const char *name;
	Oid			type;			/* the install script's type: the Datums written are of it */
} OwColumnDef;

static const OwColumnDef columns[OW_COLUMN_COUNT] = {
	[RUN_TENANT] = {OW_RUNS, "tenant", TEXTOID},
	[RUN_RUN_ID] = {OW_RUNS, "run_id", TEXTOID},
	[RUN_WORKFLOW_ID] = {OW_RUNS, "workflow_id", TEXTOID},
	[RUN_STATUS] = {OW_RUNS, "status", TEXTOID},
	[RUN_CURRENT_NODE_ID] = {OW_RUNS, "current_node_id", TEXTOID},
	[RUN_OWNER] = {OW_RUNS, "owner", JSONBOID},
	[RUN_CONFIGURABLE] = {OW_RUNS, "configurable", JSONBOID},
	[RUN_DEFINITION] = {OW_RUNS, "definition", JSONBOID},
	[RUN_INPUTS] = {OW_RUNS, "inputs", JSONBOID},
	[RUN_METADATA] = {OW_RUNS, "metadata", JSONBOID},
	[RUN_OUTPUTS] = {OW_RUNS, "outputs", JSONBOID},
	[RUN_ERROR] = {OW_RUNS, "error", JSONBOID},
	[RUN_NEXT_SEQUENCE] = {OW_RUNS, "next_sequence", INT8OID},
	[RUN_EVENT_PREFIX] = {OW_RUNS, "event_prefix", TEXTOID},
	[RUN_FORK_OF] = {OW_RUNS, "fork_of", TEXTOID},
	[RUN_CREATED_AT] = {OW_RUNS, "created_at", TIMESTAMPTZOID},
	[RUN_UPDATED_AT] = {OW_RUNS, "updated_at", TIMESTAMPTZOID},
	[RUN_ENDED_AT] = {OW_RUNS, "ended_at", TIMESTAMPTZOID},
	[RUN_REQUESTED_BY] = {OW_RUNS, "requested_by", TEXTOID},
	[RUN_EVENT_HASH] = {OW_RUNS, "event_hash", BYTEAOID},
	[EV_TENANT] = {OW_EVENTS, "tenant", TEXTOID},
	[EV_RUN_ID] = {OW_EVENTS, "run_id", TEXTOID},
	[EV_SEQUENCE] = {OW_EVENTS, "sequence", INT8OID},
	[EV_TYPE] = {OW_EVENTS, "type", TEXTOID},
	[EV_NODE_ID] = {OW_EVENTS, "node_id", TEXTOID},
	[EV_PAYLOAD] = {OW_EVENTS, "payload", JSONBOID},
	[EV_CREATED_AT] = {OW_EVENTS, "created_at", TIMESTAMPTZOID},
	[EV_SCHEMA_VERSION] = {OW_EVENTS, "schema_version", INT4OID},
	[EV_CAUSATION_ID] = {OW_EVENTS, "causation_id", TEXTOID},
	[EV_HASH] = {OW_EVENTS, "hash", BYTEAOID},
	[INT_TENANT] = {OW_INTERRUPTS, "tenant", TEXTOID},
	[INT_INTERRUPT_ID] = {OW_INTERRUPTS, "interrupt_id", TEXTOID},
	[INT_RUN_ID] = {OW_INTERRUPTS, "run_id", TEXTOID},
	[INT_ROOT_RUN_ID] = {OW_INTERRUPTS, "root_run_id", TEXTOID},
	[INT_NODE_ID] = {OW_INTERRUPTS, "node_id", TEXTOID},
	[INT_VISIT] = {OW_INTERRUPTS, "visit", INT4OID},
	[INT_ORDINAL] = {OW_INTERRUPTS, "ordinal", INT4OID},
	[INT_KEY] = {OW_INTERRUPTS, "key", TEXTOID},
	[INT_KIND] = {OW_INTERRUPTS, "kind", TEXTOID},
	[INT_PAYLOAD] = {OW_INTERRUPTS, "payload", JSONBOID},
	[INT_STATUS] = {OW_INTERRUPTS, "status", TEXTOID},
	[INT_EXPIRES_AT] = {OW_INTERRUPTS, "expires_at", TIMESTAMPTZOID},
	[INT_REQUESTED_SEQUENCE] = {OW_INTERRUPTS, "requested_sequence", INT8OID},
	[INT_RESOLVED_SEQUENCE] = {OW_INTERRUPTS, "resolved_sequence", INT8OID},
	[INT_RESUME_VALUE] = {OW_INTERRUPTS, "resume_value", JSONBOID},
	[INT_DECISION] = {OW_INTERRUPTS, "decision", TEXTOID},
	[INT_ACTION] = {OW_INTERRUPTS, "action", TEXTOID},
	[INT_REASON] = {OW_INTERRUPTS, "reason", TEXTOID},
	[INT_RESOLVED_BY] = {OW_INTERRUPTS, "resolved_by", JSONBOID},
	[INT_CREATED_AT] = {OW_INTERRUPTS, "created_at", TIMESTAMPTZOID},
	[INT_RESOLVED_AT] = {OW_INTERRUPTS, "resolved_at", TIMESTAMPTZOID},
	[INT_POLICY] = {OW_INTERRUPTS, "policy", JSONBOID},
	[EXEC_TENANT] = {OW_NODE_EXECUTIONS, "tenant", TEXTOID},
	[EXEC_RUN_ID] = {OW_NODE_EXECUTIONS, "run_id", TEXTOID},
	[EXEC_NODE_ID] = {OW_NODE_EXECUTIONS, "node_id", TEXTOID},
	[EXEC_VISIT] = {OW_NODE_EXECUTIONS, "visit", INT4OID},
	[EXEC_TYPE_ID] = {OW_NODE_EXECUTIONS, "type_id", TEXTOID},
	[EXEC_STATUS] = {OW_NODE_EXECUTIONS, "status", TEXTOID},
	[EXEC_ATTEMPT] = {OW_NODE_EXECUTIONS, "attempt", INT4OID},
	[EXEC_OUTPUTS] = {OW_NODE_EXECUTIONS, "outputs", JSONBOID},
	[EXEC_ERROR] = {OW_NODE_EXECUTIONS, "error", JSONBOID},
	[EXEC_INTERRUPT_ID] = {OW_NODE_EXECUTIONS, "interrupt_id", TEXTOID},
	[EXEC_ENDED_SEQUENCE] = {OW_NODE_EXECUTIONS, "ended_sequence", INT8OID},
	[EXEC_STARTED_AT] = {OW_NODE_EXECUTIONS, "started_at", TIMESTAMPTZOID},
	[EXEC_ENDED_AT] = {OW_NODE_EXECUTIONS, "ended_at", TIMESTAMPTZOID},
	[GM_TENANT] = {OW_GROUP_MEMBERS, "tenant", TEXTOID},
	[GM_PRINCIPAL] = {OW_GROUP_MEMBERS, "principal", TEXTOID},
	[GM_GROUP_REF] = {OW_GROUP_MEMBERS, "group_ref", TEXTOID},
	[OPEN_TENANT] = {OW_OPEN_INTERRUPTS, "tenant", TEXTOID},
	[OPEN_INTERRUPT_ID] = {OW_OPEN_INTERRUPTS, "interrupt_id", TEXTOID},
	[OPEN_RUN_ID] = {OW_OPEN_INTERRUPTS, "run_id", TEXTOID},
	[OPEN_NODE_ID] = {OW_OPEN_INTERRUPTS, "node_id", TEXTOID},
	[OPEN_VISIT] = {OW_OPEN_INTERRUPTS, "visit", INT4OID},
	[OPEN_KIND] = {OW_OPEN_INTERRUPTS, "kind", TEXTOID},
	[OPEN_PAYLOAD] = {OW_OPEN_INTERRUPTS, "payload", JSONBOID},
	[OPEN_STATUS] = {OW_OPEN_INTERRUPTS, "status", TEXTOID},
	[OPEN_REQUESTED_SEQUENCE] = {OW_OPEN_INTERRUPTS, "requested_sequence", INT8OID},
	[OPEN_CREATED_AT] = {OW_OPEN_INTERRUPTS, "created_at", TIMESTAMPTZOID},
	[OPEN_EXPIRES_AT] = {OW_OPEN_INTERRUPTS, "expires_at", TIMESTAMPTZOID},
	[OPEN_INTERRUPT_TID] = {OW_OPEN_INTERRUPTS, "interrupt_tid", TIDOID},
	[OPEN_EXECUTION_TID] = {OW_OPEN_INTERRUPTS, "execution_tid", TIDOID},
	[OPEN_POLICY] = {OW_OPEN_INTERRUPTS, "policy", JSONBOID},
	[OPEN_ARTIFACT_DIGEST] = {OW_OPEN_INTERRUPTS, "artifact_digest", TEXTOID},
	[NOTE_ID] = {OW_NOTIFICATIONS, "id", INT8OID},
	[NOTE_TENANT] = {OW_NOTIFICATIONS, "tenant", TEXTOID},
	[NOTE_KIND] = {OW_NOTIFICATIONS, "kind", TEXTOID},
	[NOTE_RECIPIENT] = {OW_NOTIFICATIONS, "recipient", TEXTOID},
	[NOTE_RUN_ID] = {OW_NOTIFICATIONS, "run_id", TEXTOID},
	[NOTE_INTERRUPT_ID] = {OW_NOTIFICATIONS, "interrupt_id", TEXTOID},
	[NOTE_DETAIL] = {OW_NOTIFICATIONS, "detail", JSONBOID},
	[NOTE_CREATED_AT] = {OW_NOTIFICATIONS, "created_at", TIMESTAMPTZOID},
	[NOTE_ATTEMPTS] = {OW_NOTIFICATIONS, "attempts", INT4OID},
	[NOTE_LEASE_UNTIL] = {OW_NOTIFICATIONS, "lease_until", TIMESTAMPTZOID},
};

#define INDEX_MAX_PROBE_KEYS 4

typedef struct OwIndexDef
{
	OwTableId	table;
	const char *name;
	int			nkeys;			/* key columns, in index order */
	OwColumn	keys[INDEX_MAX_PROBE_KEYS];
	/* a partial index's predicate: pred_col = pred_value (text), if pred_value */
	OwColumn	pred_col;
	const char *pred_value;
} OwIndexDef;

static const OwIndexDef indexes[OW_INDEX_COUNT] = {
	[OW_RUNS_PKEY] = {OW_RUNS, "runs_pkey", 2, {RUN_TENANT, RUN_RUN_ID}},
	[OW_INTERRUPTS_PKEY] = {OW_INTERRUPTS, "interrupts_pkey", 2, {INT_TENANT, INT_INTERRUPT_ID}},
	[OW_OPEN_PKEY] = {OW_OPEN_INTERRUPTS, "open_interrupts_pkey", 2, {OPEN_TENANT, OPEN_INTERRUPT_ID}},
	[OW_OPEN_PENDING] = {OW_OPEN_INTERRUPTS, "interrupts_one_pending_per_node", 3,
	{OPEN_TENANT, OPEN_RUN_ID, OPEN_NODE_ID}, OPEN_STATUS, "pending"},
	[OW_NODE_EXECUTIONS_PKEY] = {OW_NODE_EXECUTIONS, "node_executions_pkey", 4,
	{EXEC_TENANT, EXEC_RUN_ID, EXEC_NODE_ID, EXEC_VISIT}},
	[OW_GROUP_MEMBERS_PKEY] = {OW_GROUP_MEMBERS, "group_members_pkey", 3,
	{GM_TENANT, GM_PRINCIPAL, GM_GROUP_REF}},
	[OW_EVENTS_PKEY] = {OW_EVENTS, "events_pkey", 3, {EV_TENANT, EV_RUN_ID, EV_SEQUENCE}},
	[OW_INTERRUPTS_KEY] = {OW_INTERRUPTS, "interrupts_key_once_per_run", 3,
	{INT_TENANT, INT_ROOT_RUN_ID, INT_KEY}},
};

/* An index scan of the operation's snapshot. */
typedef struct OwScan
{
	struct IndexScanDescData *scan;
	Relation	index;
	TupleTableSlot *slot;		/* the current row */
	bool		backward;
} OwScan;

/* What the catalog says, looked up on first use. */
static struct
{
	bool		valid;
	Oid			relids[OW_TABLE_COUNT];
	int			known[OW_TABLE_COUNT];	/* columns named above, per table */
	AttrNumber	attnums[OW_COLUMN_COUNT];
	Oid			indexids[OW_INDEX_COUNT];
	RegProcedure eqprocs[OW_INDEX_COUNT][INDEX_MAX_PROBE_KEYS];
	Oid			collations[OW_INDEX_COUNT][INDEX_MAX_PROBE_KEYS];
	Oid			keep_open;		/* openwop.interrupts_keep_open() */
} cache;

static void
forget(Datum arg, Oid relid)
{
	int			i;

	if (!cache.valid)
		return;
	if (relid == InvalidOid)
	{
		cache.valid = false;
		return;
	}
	for (i = 0; i < OW_TABLE_COUNT; i++)
		if (cache.relids[i] == relid)
			cache.valid = false;
	for (i = 0; i < OW_INDEX_COUNT; i++)
		if (cache.indexids[i] == relid)
			cache.valid = false;
}

/* The equality function of a probe key of type typid, or InvalidOid. */
static RegProcedure
equality_of(Oid typid)
{
	switch (typid)
	{
		case TEXTOID:
			return F_TEXTEQ;
		case INT4OID:
			return F_INT4EQ;
		case INT8OID:
			return F_INT8EQ;
		default:
			return InvalidOid;
	}
}

/*
 * The direct path is off for table t, for reason: said in the server log
 * once per backend and table, so a DBA who changed a table learns why the
 * hot paths now run statements.
 */
static bool quiet = false;		/* refuse() records, logs nothing */
static const char *quiet_reason = NULL;
static int	quiet_table = -1;

static bool
refuse(OwTableId t, const char *reason)
{
	static uint32 logged = 0;

	if (quiet)
	{
		if (quiet_reason == NULL)
		{
			quiet_reason = reason;
			quiet_table = t;
		}
		return false;
	}
	if (logged & OW_TABLE_BIT(t))
		return false;
	logged |= OW_TABLE_BIT(t);
	ereport(LOG,
			(errmsg("openwop: openwop.%s is written with SQL statements, not directly: %s",
					table_names[t], reason),
			 errdetail("The hot paths write a table directly only while it is as the install script made it."),
			 errhint("Undo the change to the table to have the faster path again.")));
	return false;
}

/*
 * Is the partial index's predicate the install script's, def->pred_col =
 * def->pred_value as text (none if def has none)?  Compared as the planner
 * holds it, not as deparsed text.
 */
static bool
predicate_is(Relation index, const OwIndexDef *def)
{
	List	   *pred = RelationGetIndexPredicate(index);
	OpExpr	   *op;
	Var		   *var;
	Const	   *value;

	if (def->pred_value == NULL)
		return pred == NIL;
	if (list_length(pred) != 1 || !IsA(linitial(pred), OpExpr))
		return false;
	op = linitial_node(OpExpr, pred);
	if (op->opno != TextEqualOperator || list_length(op->args) != 2 ||
		!IsA(linitial(op->args), Var) || !IsA(lsecond(op->args), Const))
		return false;
	var = linitial_node(Var, op->args);
	value = lsecond_node(Const, op->args);
	return var->varattno == cache.attnums[def->pred_col] &&
		value->consttype == TEXTOID && !value->constisnull &&
		strcmp(TextDatumGetCString(value->constvalue), def->pred_value) == 0;
}

/*
 * Is index (cache.indexids[i]) as the install script made it?  The direct
 * path probes it for equal keys, takes its uniqueness for the statement's
 * ON CONFLICT and key lookups, and walks it in order: a same-named index a
 * DBA made otherwise (descending, another operator class or collation, an
 * expression, another predicate, not unique, deferrable) would give other
 * rows than the statements.
 */
static bool
index_is_the_install_scripts(Relation index, int i)
{
	const OwIndexDef *def = &indexes[i];
	Form_pg_index form = index->rd_index;
	int			k;

	if (index->rd_rel->relam != BTREE_AM_OID || form->indrelid != cache.relids[def->table] ||
		!form->indisvalid || !form->indisready || !form->indislive ||
		!form->indisunique || !form->indimmediate ||
		IndexRelationGetNumberOfKeyAttributes(index) != def->nkeys ||
		RelationGetIndexExpressions(index) != NIL || !predicate_is(index, def))
		return false;
	for (k = 0; k < def->nkeys; k++)
	{
		AttrNumber	attnum = cache.attnums[def->keys[k]];
		Oid			type = columns[def->keys[k]].type;
		Oid			opclass = GetDefaultOpClass(type, BTREE_AM_OID);
		Oid			atttype;
		int32		atttypmod;
		Oid			attcollation;

		get_atttypetypmodcoll(cache.relids[def->table], attnum, &atttype, &atttypmod, &attcollation);
		cache.eqprocs[i][k] = equality_of(type);
		cache.collations[i][k] = index->rd_indcollation[k];
		if (form->indkey.values[k] != attnum || index->rd_indoption[k] != 0 ||
			!OidIsValid(opclass) || index->rd_opfamily[k] != get_opclass_family(opclass) ||
			index->rd_opcintype[k] != type ||
			index->rd_indcollation[k] != attcollation ||
			!OidIsValid(cache.eqprocs[i][k]))
			return false;
	}
	return true;
}

/*
 * Look everything up.  False, with the cache left invalid, when anything
 * is not as the install script made it (the SQL statements then run).
 */
static bool
fill_cache(void)
{
	static bool registered = false;
	Oid			nsp = get_namespace_oid("openwop", true);
	int			i;

	ow_require_current_schema();
	if (!registered)
	{
		CacheRegisterRelcacheCallback(forget, (Datum) 0);
		registered = true;
	}
	if (!OidIsValid(nsp))
		return false;
	for (i = 0; i < OW_TABLE_COUNT; i++)
	{
		cache.relids[i] = get_relname_relid(table_names[i], nsp);
		cache.known[i] = 0;
		if (!OidIsValid(cache.relids[i]))
			return false;
	}
	for (i = 0; i < OW_COLUMN_COUNT; i++)
	{
		Oid			type;
		int32		typmod;
		Oid			collation;

		cache.attnums[i] = get_attnum(cache.relids[columns[i].table], columns[i].name);
		if (cache.attnums[i] <= 0)
			return refuse(columns[i].table, psprintf("its column %s is gone", columns[i].name));
		/* a column retyped (another type, a domain, a length) gets the statements' coercion */
		get_atttypetypmodcoll(cache.relids[columns[i].table], cache.attnums[i], &type, &typmod, &collation);
		if (type != columns[i].type || typmod != -1)
			return refuse(columns[i].table, psprintf("its column %s is no longer of type %s",
													 columns[i].name, format_type_be(columns[i].type)));
		/* the direct path compares text by its bytes, as a deterministic collation's = does */
		if (OidIsValid(collation) && !get_collation_isdeterministic(collation))
			return refuse(columns[i].table, psprintf("its column %s has a nondeterministic collation",
													 columns[i].name));
		cache.known[columns[i].table]++;
	}
	for (i = 0; i < OW_INDEX_COUNT; i++)
	{
		const OwIndexDef *def = &indexes[i];
		Relation	index;
		bool		usable;

		cache.indexids[i] = get_relname_relid(def->name, nsp);
		if (!OidIsValid(cache.indexids[i]))
			return refuse(def->table, psprintf("its index %s is gone", def->name));
		index = index_open(cache.indexids[i], AccessShareLock);
		usable = index_is_the_install_scripts(index, i);
		index_close(index, NoLock);
		if (!usable)
			return refuse(def->table, psprintf("its index %s is not the install script's (a valid unique btree on the same columns, ascending, with their default operator classes and collations, and the same predicate)",
											   def->name));
	}
	{
		List	   *name = list_make2(makeString("openwop"), makeString("interrupts_keep_open"));

		cache.keep_open = LookupFuncName(name, 0, NULL, true);
	}
	cache.valid = true;
	return true;
}

/* Can the operation act on rel itself, as its statement would? */
/*
 * Does rel have a trigger for a command the operation runs on it?  The
 * extension's own interrupts_keep_open does not count: it fires only for
 * changes to columns these operations never change.
 */
static bool
has_trigger(Relation rel, bool inserts, bool updates, bool deletes)
{
	TriggerDesc *trig = rel->trigdesc;
	int			i;

	if (trig == NULL)
		return false;
	for (i = 0; i < trig->numtriggers; i++)
	{
		Trigger    *tg = &trig->triggers[i];

		if (tg->tgfoid == cache.keep_open)
			continue;
		if ((inserts && TRIGGER_FOR_INSERT(tg->tgtype)) ||
			(updates && TRIGGER_FOR_UPDATE(tg->tgtype)) ||
			(deletes && TRIGGER_FOR_DELETE(tg->tgtype)))
			return true;
	}
	return false;
}

static bool
plain(Relation rel, OwTableId t, uint32 inserts, uint32 updates, uint32 deletes)
{
	TupleDesc	desc = RelationGetDescr(rel);

	if (rel->rd_rel->relkind != RELKIND_RELATION)
		return refuse(t, "it is not a plain table");
	if (rel->rd_rules != NULL)
		return refuse(t, "it has a rule");
	if (rel->rd_rel->relrowsecurity)
		return refuse(t, "it has row-level security");
	if (desc->constr && desc->constr->has_generated_stored && (inserts | updates) & OW_TABLE_BIT(t))
		return refuse(t, "it has a generated column");
	if (has_trigger(rel, inserts & OW_TABLE_BIT(t), updates & OW_TABLE_BIT(t), deletes & OW_TABLE_BIT(t)))
		return refuse(t, "it has a trigger");
	if (inserts & OW_TABLE_BIT(t))
	{
		int			live = 0;
		int			i;

		/* every column is one the insert sets: no default to evaluate */
		for (i = 0; i < desc->natts; i++)
			if (!TupleDescAttr(desc, i)->attisdropped)
				live++;
		if (live != cache.known[t])
			return refuse(t, "it has a column the install script did not make");
	}
	return true;
}

/* What the hot paths write directly, per table (what plain() asks of each). */
#define WRITTEN_INSERTS (OW_TABLE_BIT(OW_RUNS) | OW_TABLE_BIT(OW_EVENTS) | OW_TABLE_BIT(OW_INTERRUPTS) | \
						 OW_TABLE_BIT(OW_NODE_EXECUTIONS) | OW_TABLE_BIT(OW_OPEN_INTERRUPTS) | \
						 OW_TABLE_BIT(OW_NOTIFICATIONS))
#define WRITTEN_UPDATES (OW_TABLE_BIT(OW_RUNS) | OW_TABLE_BIT(OW_INTERRUPTS) | OW_TABLE_BIT(OW_OPEN_INTERRUPTS) | \
						 OW_TABLE_BIT(OW_NODE_EXECUTIONS))
#define WRITTEN_DELETES OW_TABLE_BIT(OW_OPEN_INTERRUPTS)

/*
 * Why the hot paths do not read and write table t directly, or NULL when
 * they do; *name is the table's.  For monitoring (openwop.direct_path()):
 * the checks the operations make, with nothing logged.
 */
const char *
ow_direct_path_refusal(int t, const char **name)
{
	const char *volatile why = NULL;

	Assert(t >= 0 && t < OW_TABLE_COUNT);
	*name = table_names[t];
	quiet = true;
	quiet_reason = NULL;
	PG_TRY();
	{
		if (!cache.valid && !fill_cache())
			why = quiet_reason == NULL ? "a table of the store is gone" :
				psprintf("openwop.%s: %s, so every table is written with statements",
						 table_names[quiet_table], quiet_reason);
		else
		{
			Relation	rel = table_open(cache.relids[t], AccessShareLock);

			if (!plain(rel, t, WRITTEN_INSERTS, WRITTEN_UPDATES, WRITTEN_DELETES))
				why = quiet_reason;
			table_close(rel, AccessShareLock);
		}
	}
	PG_FINALLY();
	{
		quiet = false;
	}
	PG_END_TRY();
	return why;
}

/*
 * What ow_direct_begin, ow_direct_begin_delete and ow_direct_begin_instead
 * do: open the tables, check each is plain for what the operation (or the
 * statements it skips) would do to it, take the snapshot, set up the writes.
 */
static bool
direct_begin(OwDirect *d, uint32 reads, uint32 inserts, uint32 updates, uint32 deletes,
			 uint32 skipped_updates, uint32 skipped_deletes)
{
	uint32		all = reads | inserts | updates | deletes | skipped_updates | skipped_deletes;
	uint32		writes = inserts | updates | deletes;
	List	   *rtable = NIL;
	int			i;

	/*
	 * The executor refuses a statement that writes in a read-only
	 * transaction (or on a standby); direct writes must too.
	 */
	if (writes && XactReadOnly)
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot execute %s in a read-only transaction",
						inserts ? "INSERT" : updates ? "UPDATE" : "DELETE")));
	memset(d, 0, sizeof(*d));
	if (!cache.valid && !fill_cache())
		return false;
	for (i = 0; i < OW_TABLE_COUNT; i++)
	{
		if (!(all & OW_TABLE_BIT(i)))
			continue;
		d->rel[i] = table_open(cache.relids[i],
							   (writes & OW_TABLE_BIT(i)) ? RowExclusiveLock : AccessShareLock);
		if (!plain(d->rel[i], i, inserts, updates | skipped_updates, deletes | skipped_deletes))
		{
			for (; i >= 0; i--)
				if (d->rel[i])
					table_close(d->rel[i], NoLock);
			return false;
		}
	}

	/* as SPI does for a statement that may write */
	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	UpdateActiveSnapshotCommandId();
	d->snapshot = GetActiveSnapshot();

	if (writes)
	{
		d->estate = CreateExecutorState();
		for (i = 0; i < OW_TABLE_COUNT; i++)
		{
			RangeTblEntry *rte;

			if (!(writes & OW_TABLE_BIT(i)))
				continue;
			rte = makeNode(RangeTblEntry);
			rte->rtekind = RTE_RELATION;
			rte->relid = cache.relids[i];
			rte->relkind = RELKIND_RELATION;
			rte->rellockmode = RowExclusiveLock;
			rtable = lappend(rtable, rte);
			d->rri[i] = makeNode(ResultRelInfo);
			InitResultRelInfo(d->rri[i], d->rel[i], list_length(rtable), NULL, 0);
			/* a delete leaves the index entries to VACUUM */
			if ((inserts | updates) & OW_TABLE_BIT(i))
				ExecOpenIndices(d->rri[i], false);
			d->newslot[i] = ExecInitExtraTupleSlot(d->estate, RelationGetDescr(d->rel[i]),
												   &TTSOpsVirtual);
		}
		ow_init_range_table(d->estate, rtable);
		d->estate->es_snapshot = d->snapshot;
		d->estate->es_output_cid = GetCurrentCommandId(true);
		/* a trigger that may stay (interrupts_keep_open) is checked in a query of our own */
		for (i = 0; i < OW_TABLE_COUNT; i++)
			if ((writes & OW_TABLE_BIT(i)) && d->rel[i]->trigdesc)
				d->triggers = true;
		if (d->triggers)
			AfterTriggerBeginQuery();
	}
	d->direct = true;
	return true;
}

/*
 * Open the tables an operation reads (reads), inserts into (inserts),
 * updates (updates) and deletes from (deletes), as OW_TABLE_BIT masks, and
 * take its snapshot.  False when the operation must run as SQL instead;
 * nothing was done then.
 */
static bool
ow_direct_begin_delete(OwDirect *d, uint32 reads, uint32 inserts, uint32 updates, uint32 deletes)
{
	return direct_begin(d, reads, inserts, updates, deletes, 0, 0);
}

/*
 * ow_direct_begin for an operation that reads reads to decide that the
 * statements updating the tables updates and deleting from deletes would
 * change no row, and skips them: those tables must be plain too (a
 * statement-level trigger, or a rule, acts on a statement that changes no
 * row).  They are checked, not written.
 */
bool
ow_direct_begin_instead(OwDirect *d, uint32 reads, uint32 updates, uint32 deletes)
{
	return direct_begin(d, reads, 0, 0, 0, updates, deletes);
}

/* Close what ow_direct_begin opened; later statements see what was written. */
void
ow_direct_end(OwDirect *d)
{
	int			i;

	for (i = 0; i < OW_TABLE_COUNT; i++)
	{
		if (d->slot[i])
			ExecDropSingleTupleTableSlot(d->slot[i]);
		if (d->lockslot[i])
			ExecDropSingleTupleTableSlot(d->lockslot[i]);
		if (d->rri[i])
			ExecCloseIndices(d->rri[i]);
	}
	if (d->estate)
	{
		if (d->triggers)
			AfterTriggerEndQuery(d->estate);
		ExecResetTupleTable(d->estate->es_tupleTable, false);
		FreeExecutorState(d->estate);
	}
	PopActiveSnapshot();
	for (i = 0; i < OW_TABLE_COUNT; i++)
		if (d->rel[i])
			table_close(d->rel[i], NoLock);	/* locks are kept to the end of the transaction */
	CommandCounterIncrement();
}

/*
 * Scan index idx for the rows whose first nkeys key columns equal keys,
 * under the operation's snapshot (bounded: and whose next key column, a
 * bigint, is below bound).  ow_scan_next() puts each in s->slot.
 */
static void
begin_scan(OwDirect *d, OwScan *s, OwIndexId idx, int nkeys, const Datum *keys, bool backward,
		   bool bounded, int64 bound)
{
	OwTableId	t = indexes[idx].table;
	ScanKeyData skeys[INDEX_MAX_PROBE_KEYS];
	int			n = nkeys;
	int			k;

	Assert(d->rel[t] != NULL && nkeys > 0 && nkeys + (bounded ? 1 : 0) <= indexes[idx].nkeys);
	Assert(!bounded || columns[indexes[idx].keys[nkeys]].type == INT8OID);
	if (d->slot[t] == NULL)
		d->slot[t] = table_slot_create(d->rel[t], NULL);
	s->slot = d->slot[t];
	s->index = index_open(cache.indexids[idx], AccessShareLock);
	for (k = 0; k < nkeys; k++)
	{
		ScanKeyEntryInitialize(&skeys[k], 0, k + 1, BTEqualStrategyNumber, InvalidOid,
							   cache.collations[idx][k], cache.eqprocs[idx][k], keys[k]);
	}
	if (bounded)
		ScanKeyEntryInitialize(&skeys[n++], 0, nkeys + 1, BTLessStrategyNumber, InvalidOid,
							   InvalidOid, F_INT8LT, Int64GetDatum(bound));
	s->backward = backward;
	s->scan = ow_index_beginscan(d->rel[t], s->index, d->snapshot, n);
	index_rescan(s->scan, skeys, n, NULL, 0);
}

static void
ow_scan_begin(OwDirect *d, OwScan *s, OwIndexId idx, int nkeys, const Datum *keys)
{
	begin_scan(d, s, idx, nkeys, keys, false, false, 0);
}

static bool
ow_scan_next(OwScan *s)
{
	return index_getnext_slot(s->scan, s->backward ? BackwardScanDirection : ForwardScanDirection,
							  s->slot);
}

static void
ow_scan_end(OwScan *s)
{
	index_endscan(s->scan);
	index_close(s->index, NoLock);
}

/*
 * The row version at tid, a row of t this transaction read or locked
 * earlier, into the table's slot: false when that version is no longer the
 * one the operation's snapshot sees (something updated it since), and the
 * caller probes its index instead.
 */
static bool
ow_fetch_tid(OwDirect *d, OwTableId t, ItemPointer tid, TupleTableSlot **slot)
{
	Assert(d->rel[t] != NULL);
	if (!ItemPointerIsValid(tid))
		return false;
	if (d->slot[t] == NULL)
		d->slot[t] = table_slot_create(d->rel[t], NULL);
	*slot = d->slot[t];
	return table_tuple_fetch_row_version(d->rel[t], tid, d->snapshot, *slot);
}

/*
 * ow_fetch_tid for a tid an earlier transaction stored as a hint (the open
 * row's interrupt_tid, execution_tid): VACUUM FULL, CLUSTER or a restore
 * may have moved the row, even past the end of the table now, so a block
 * beyond it is not read (nor one of a table of another access method,
 * whose tids may mean something else); the caller checks the row's keys,
 * as the version there may be another row's.  Under SERIALIZABLE a hint
 * that names another row predicate-locks that row, as a statement reading
 * it would: at worst a spurious, retryable serialization failure.
 *
 * The page is pruned first, as an index scan prunes each heap page it
 * reaches: a fetch by tid does not, and without it the claim that follows
 * found no room for the resolved version beside the old one in one claim
 * of five, so it was no HOT update and wrote both unique indexes of
 * interrupts (and their full-page images) anew.
 */
static bool
ow_fetch_hint(OwDirect *d, OwTableId t, ItemPointer tid, TupleTableSlot **slot)
{
	Buffer		buf;

	if (!ItemPointerIsValid(tid) || d->rel[t]->rd_rel->relam != HEAP_TABLE_AM_OID ||
		ItemPointerGetBlockNumber(tid) >= RelationGetNumberOfBlocks(d->rel[t]))
		return false;
	buf = ReadBuffer(d->rel[t], ItemPointerGetBlockNumber(tid));
	heap_page_prune_opt(d->rel[t], buf);
	ReleaseBuffer(buf);
	return ow_fetch_tid(d, t, tid, slot);
}

/*
 * Lock the row in slot FOR UPDATE (or SKIP LOCKED), as a statement would:
 * in READ COMMITTED the latest version is locked and put in slot; in
 * REPEATABLE READ and SERIALIZABLE a concurrent update is a serialization
 * failure.  False when the row was skipped or deleted meanwhile.
 */
static bool
ow_lock_row(OwDirect *d, OwTableId t, TupleTableSlot *slot, bool skip_locked)
{
	TM_FailureData tmfd;
	TM_Result	res;
	ItemPointerData tid = slot->tts_tid;

	/* as the executor refuses SELECT ... FOR UPDATE there */
	if (XactReadOnly)
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot execute %s in a read-only transaction", "SELECT FOR UPDATE")));
	res = table_tuple_lock(d->rel[t], &tid, d->snapshot, slot, GetCurrentCommandId(false),
						   LockTupleExclusive, skip_locked ? LockWaitSkip : LockWaitBlock,
						   IsolationUsesXactSnapshot() ? 0 : TUPLE_LOCK_FLAG_FIND_LAST_VERSION,
						   &tmfd);
	switch (res)
	{
		case TM_Ok:
			return true;
		case TM_WouldBlock:
			return false;
		case TM_Updated:
		case TM_Deleted:
			if (IsolationUsesXactSnapshot())
				ereport(ERROR,
						(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
						 errmsg("could not serialize access due to concurrent update")));
			if (res == TM_Deleted)
				return false;
			break;
		default:
			break;
	}
	elog(ERROR, "unexpected result %d locking a row of openwop.%s", (int) res, table_names[t]);
	return false;				/* keep the compiler quiet */
}

/*
 * The row an insert into t will write, every column null: set its values
 * with ow_set, then ow_insert.
 */
static TupleTableSlot *
ow_new_row(OwDirect *d, OwTableId t)
{
	TupleTableSlot *row = d->newslot[t];
	int			i;

	Assert(row != NULL);
	ExecClearTuple(row);
	for (i = 0; i < row->tts_tupleDescriptor->natts; i++)
	{
		row->tts_values[i] = (Datum) 0;
		row->tts_isnull[i] = true;
	}
	return row;
}

/*
 * The row an update of old (a row of t read by this operation) will
 * write: old's values, to be changed with ow_set, then ow_update.
 */
static TupleTableSlot *
ow_changed_row(OwDirect *d, OwTableId t, TupleTableSlot *old)
{
	TupleTableSlot *row = d->newslot[t];
	int			natts = row->tts_tupleDescriptor->natts;

	Assert(row != NULL);
	ExecMaterializeSlot(old);	/* its values must outlive any change to its page */
	slot_getallattrs(old);
	ExecClearTuple(row);
	memcpy(row->tts_values, old->tts_values, natts * sizeof(Datum));
	memcpy(row->tts_isnull, old->tts_isnull, natts * sizeof(bool));
	return row;
}

static void
ow_set(TupleTableSlot *row, OwColumn c, Datum value, bool isnull)
{
	row->tts_values[cache.attnums[c] - 1] = value;
	row->tts_isnull[cache.attnums[c] - 1] = isnull;
}

/* Insert row into t: constraints, then the row, then its index entries. */
static void
ow_insert(OwDirect *d, OwTableId t, TupleTableSlot *row)
{
	ExecStoreVirtualTuple(row);
	ExecSimpleRelationInsert(d->rri[t], d->estate, row);
}

/*
 * Above READ COMMITTED, a conflicting row this transaction's snapshot does
 * not see (committed by another since the snapshot was taken) is a
 * serialization failure, as ON CONFLICT DO NOTHING raises it: "nothing to
 * do" must not rest on a row the transaction cannot read.
 */
static void
check_conflict_visible(OwDirect *d, OwTableId t, ItemPointer conflict)
{
	TupleTableSlot *slot;
	bool		isnull;

	if (!IsolationUsesXactSnapshot())
		return;
	slot = table_slot_create(d->rel[t], NULL);
	if (!table_tuple_fetch_row_version(d->rel[t], conflict, SnapshotAny, slot))
		elog(ERROR, "could not fetch the row a unique key conflicts with");
	if (!table_tuple_satisfies_snapshot(d->rel[t], slot, d->snapshot) &&
		!TransactionIdIsCurrentTransactionId(DatumGetTransactionId(slot_getsysattr(slot, MinTransactionIdAttributeNumber, &isnull))))
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access due to concurrent update")));
	ExecDropSingleTupleTableSlot(slot);
}

/*
 * Insert row into t unless a row with the same key of a unique index
 * exists, as INSERT ... ON CONFLICT DO NOTHING does (speculative
 * insertion): false when one exists, committed or by a transaction that
 * committed while this one waited for it.  t has no trigger (plain).
 */
static bool
ow_insert_new(OwDirect *d, OwTableId t, TupleTableSlot *row)
{
	ResultRelInfo *rri = d->rri[t];
	TransactionId xid = GetCurrentTransactionId();
	int			i;

	ExecStoreVirtualTuple(row);
	if (RelationGetDescr(d->rel[t])->constr)
		ExecConstraints(rri, row, d->estate);
	/* the unique indexes' equality functions, which ExecOpenIndices left out */
	for (i = 0; i < rri->ri_NumIndices; i++)
	{
		IndexInfo  *ii = rri->ri_IndexRelationInfo[i];

		if (ii->ii_Unique && ii->ii_UniqueOps == NULL)
			BuildSpeculativeIndexInfo(rri->ri_IndexRelationDescs[i], ii);
	}
	for (;;)
	{
		ItemPointerData conflict;
		bool		raced = false;
		uint32		token;
		List	   *recheck;

		CHECK_FOR_INTERRUPTS();
		if (!ow_check_index_constraints(rri, row, d->estate, &conflict))
		{
			check_conflict_visible(d, t, &conflict);
			return false;
		}
		token = SpeculativeInsertionLockAcquire(xid);
		table_tuple_insert_speculative(d->rel[t], row, d->estate->es_output_cid, 0, NULL, token);
		recheck = ow_insert_index_tuples(rri, row, d->estate, true, &raced);
		table_tuple_complete_speculative(d->rel[t], row, token, !raced);
		SpeculativeInsertionLockRelease(xid);
		list_free(recheck);
		if (!raced)
			return true;
		/* another inserted the key meanwhile: look again, as ON CONFLICT does */
	}
}

/*
 * Lock old, the version of a row of t this operation read, before it is
 * changed, as logical apply locks a row before ExecSimpleRelationUpdate or
 * Delete (those raise XX000 on a row another transaction changed): a
 * transaction that holds the row is waited for.  If it committed a new
 * version or deleted the row, this operation decided on a version that is
 * gone: a serialization failure (40001), in READ COMMITTED too, which the
 * caller retries.  A row this transaction holds already (the run row) is
 * no new lock.
 */
static void
lock_to_write(OwDirect *d, OwTableId t, TupleTableSlot *old, LockTupleMode mode)
{
	TM_FailureData tmfd;
	TM_Result	res;
	ItemPointerData tid = old->tts_tid;

	if (d->lockslot[t] == NULL)
		d->lockslot[t] = table_slot_create(d->rel[t], NULL);
	res = table_tuple_lock(d->rel[t], &tid, d->snapshot, d->lockslot[t], d->estate->es_output_cid,
						   mode, LockWaitBlock, 0, &tmfd);
	if (res == TM_Ok)
		return;
	if (res == TM_Updated || res == TM_Deleted)
		ow_changed_meanwhile(t);
	elog(ERROR, "unexpected result %d locking a row of openwop.%s to change it", (int) res, table_names[t]);
}

void
ow_changed_meanwhile(OwTableId t)
{
	ow_row_changed_meanwhile(table_names[t]);
}

void
ow_row_changed_meanwhile(const char *table)
{
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not serialize access due to concurrent update"),
			 errdetail("Another transaction changed a row of openwop.%s that this call had read.", table),
			 errhint("Retry the call.")));
}

/* Delete old, a row of t read by this operation. */
static void
ow_delete(OwDirect *d, OwTableId t, TupleTableSlot *old)
{
	lock_to_write(d, t, old, LockTupleExclusive);
	ExecSimpleRelationDelete(d->rri[t], d->estate, NULL, old);
}

/* Replace old, a row of t read by this operation, with row. */
static void
ow_update(OwDirect *d, OwTableId t, TupleTableSlot *old, TupleTableSlot *row)
{
	/* an UPDATE's lock: heap_update takes the stronger one if a key column changes */
	lock_to_write(d, t, old, LockTupleNoKeyExclusive);
	ExecStoreVirtualTuple(row);
	ExecSimpleRelationUpdate(d->rri[t], d->estate, NULL, old, row);
}

/*
 * The writes an operation makes (OwWrite) and their carrier.  The
 * statement of a write is made from its description the first time a
 * table is not plain; its text is made of the install script's names and
 * parameters only, no input reaches it.
 */

/* How many columns of table t the hot paths know: an insert sets them all. */
static int
columns_of(OwTableId t)
{
	int			n = 0;
	int			i;

	for (i = 0; i < OW_COLUMN_COUNT; i++)
		if (columns[i].table == t)
			n++;
	return n;
}

/* " WHERE key = $n AND ... AND cond = $m ...", the key and conditions of w from parameter first. */
static void
append_where(StringInfo sql, OwWrite *w, int first)
{
	const OwIndexDef *key = &indexes[w->key];
	int			n = 0;
	int			i;

	Assert(key->table == w->table);
	for (i = 0; i < key->nkeys + w->nconds; i++)
	{
		OwColumn	c = i < key->nkeys ? key->keys[i] : w->conds[i - key->nkeys];

		appendStringInfo(sql, " %s %s OPERATOR(pg_catalog.=) $%d", i ? "AND" : "WHERE",
						 columns[c].name, first + n);
		w->sql.types[first + n - 1] = columns[c].type;
		n++;
	}
	w->sql.nargs += n;
}

static void
make_statement(OwWrite *w)
{
	StringInfoData sql;
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
	int			i;

	initStringInfo(&sql);
	w->sql.nargs = w->ncols;
	for (i = 0; i < w->ncols; i++)
		w->sql.types[i] = columns[w->cols[i]].type;
	switch (w->kind)
	{
		case OW_WRITE_INSERT:
		case OW_WRITE_INSERT_NEW:
			appendStringInfo(&sql, "INSERT INTO openwop.%s (", table_names[w->table]);
			for (i = 0; i < w->ncols; i++)
				appendStringInfo(&sql, "%s%s", i ? ", " : "", columns[w->cols[i]].name);
			appendStringInfoString(&sql, ") VALUES (");
			for (i = 0; i < w->ncols; i++)
				appendStringInfo(&sql, "%s$%d", i ? ", " : "", i + 1);
			appendStringInfoChar(&sql, ')');
			if (w->kind == OW_WRITE_INSERT_NEW)
				appendStringInfoString(&sql, " ON CONFLICT DO NOTHING");
			w->sql.expect = SPI_OK_INSERT;
			break;
		case OW_WRITE_UPDATE:
			appendStringInfo(&sql, "UPDATE openwop.%s SET ", table_names[w->table]);
			for (i = 0; i < w->ncols; i++)
				appendStringInfo(&sql, "%s%s = $%d", i ? ", " : "", columns[w->cols[i]].name, i + 1);
			append_where(&sql, w, w->ncols + 1);
			w->sql.expect = SPI_OK_UPDATE;
			break;
		case OW_WRITE_DELETE:
			appendStringInfo(&sql, "DELETE FROM openwop.%s", table_names[w->table]);
			append_where(&sql, w, 1);
			w->sql.expect = SPI_OK_DELETE;
			break;
	}
	w->sql.sql = sql.data;
	MemoryContextSwitchTo(old);
}

/*
 * Is w a description the carriers can share?  Checked on its first use,
 * whatever carries it: an insert sets every column of its table (no
 * default to evaluate on either), an update or a delete names its row by
 * every key column of a unique index.
 */
static void
check_write(OwWrite *w)
{
	int			i;
	int			nargs = w->ncols;

	if (w->kind == OW_WRITE_INSERT || w->kind == OW_WRITE_INSERT_NEW)
	{
		if (w->ncols != columns_of(w->table) || w->nconds != 0)
			elog(ERROR, "an insert into openwop.%s sets %d of its %d columns",
				 table_names[w->table], w->ncols, columns_of(w->table));
	}
	else
	{
		if (indexes[w->key].table != w->table || (w->kind == OW_WRITE_DELETE) != (w->ncols == 0))
			elog(ERROR, "a write of openwop.%s is described wrongly", table_names[w->table]);
		nargs += indexes[w->key].nkeys + w->nconds;
	}
	if (nargs > OW_QUERY_MAX_ARGS || w->ncols > OW_WRITE_MAX_COLS || w->nconds > OW_WRITE_MAX_CONDS)
		elog(ERROR, "a write of openwop.%s takes too many values", table_names[w->table]);
	for (i = 0; i < w->ncols; i++)
		if (columns[w->cols[i]].table != w->table)
			elog(ERROR, "column %s is not one of openwop.%s", columns[w->cols[i]].name,
				 table_names[w->table]);
	for (i = 0; i < w->nconds; i++)
		if (columns[w->conds[i]].table != w->table)
			elog(ERROR, "column %s is not one of openwop.%s", columns[w->conds[i]].name,
				 table_names[w->table]);
	make_statement(w);
}

/* Run w's statement: its values (nulls[i]: null; nulls may be NULL), then its keys and conditions. */
static uint64
write_by_statement(OwWrite *w, const Datum *keys, const Datum *values, const bool *nulls)
{
	Datum		args[OW_QUERY_MAX_ARGS];
	char		spi_nulls[OW_QUERY_MAX_ARGS];
	int			i;

	for (i = 0; i < w->sql.nargs; i++)
	{
		bool		isnull = i < w->ncols && nulls && nulls[i];

		args[i] = i < w->ncols ? values[i] : keys[i - w->ncols];
		spi_nulls[i] = isnull ? 'n' : ' ';
	}
	return ow_exec(&w->sql, args, spi_nulls, false, 0);
}

/* The length and passing of values of type, as datum_image_eq takes them. */
static void
type_image(Oid type, int16 *len, bool *byval)
{
	if (type == TEXTOID)
		*len = -1, *byval = false;
	else if (type == INT4OID)
		*len = 4, *byval = true;
	else if (type == INT8OID)
		*len = 8, *byval = true;
	else
		get_typlenbyval(type, len, byval);
}

/*
 * Does the row in slot have the first n of w's key and condition values
 * (keys: the index's key columns, then w's conditions)?  As the
 * statement's = says: text under a deterministic collation and integers
 * are equal when their images are.
 */
static bool
row_has(TupleTableSlot *slot, OwWrite *w, const Datum *keys, int n)
{
	const OwIndexDef *key = &indexes[w->key];
	int			i;

	for (i = 0; i < n; i++)
	{
		OwColumn	c = i < key->nkeys ? key->keys[i] : w->conds[i - key->nkeys];
		bool		isnull;
		Datum		v = slot_getattr(slot, cache.attnums[c], &isnull);
		int16		len;
		bool		byval;

		type_image(columns[c].type, &len, &byval);
		if (isnull || !datum_image_eq(v, keys[i], byval, len))
			return false;
	}
	return true;
}

/*
 * The row w names, read in d, if it has w's conditions: looked for where
 * *tid says first (the version there may be another row's, when the tid
 * was stored: its key says), else where w's index says.
 */
static TupleTableSlot *
find_row(OwDirect *d, OwWrite *w, const Datum *keys, ItemPointer tid)
{
	int			nkeys = indexes[w->key].nkeys;
	OwScan		s;
	TupleTableSlot *slot = NULL;

	if (tid == NULL ||
		!(w->stored_tid ? ow_fetch_hint(d, w->table, tid, &slot) : ow_fetch_tid(d, w->table, tid, &slot)) ||
		!row_has(slot, w, keys, nkeys))
	{
		ow_scan_begin(d, &s, w->key, nkeys, keys);
		slot = ow_scan_next(&s) ? s.slot : NULL;
		ow_scan_end(&s);
	}
	return slot && row_has(slot, w, keys, nkeys + w->nconds) ? slot : NULL;
}

/*
 * Make write w in d (NULL: in an operation of its own): an insert of
 * values, or the update (values) or delete of the row whose key and
 * conditions are keys (the index's key columns, then w's conditions).
 * False when an insert-new found its key taken, or no row matched.  tid
 * (if not NULL): in, where the row to change may be (invalid: unknown);
 * out, where the written version went (invalid when a statement wrote it).
 */
bool
ow_write(OwDirect *d, OwWrite *w, const Datum *keys, const Datum *values, const bool *nulls,
		 ItemPointer tid)
{
	OwDirect	own;
	TupleTableSlot *old = NULL;
	TupleTableSlot *row = NULL;
	bool		done = true;
	int			i;

	if (w->sql.sql == NULL)
		check_write(w);
	if (d == NULL)
	{
		d = &own;
		ow_begin(d, w->kind >= OW_WRITE_UPDATE ? OW_TABLE_BIT(w->table) : 0,
					   w->kind <= OW_WRITE_INSERT_NEW ? OW_TABLE_BIT(w->table) : 0,
					   w->kind == OW_WRITE_UPDATE ? OW_TABLE_BIT(w->table) : 0,
					   w->kind == OW_WRITE_DELETE ? OW_TABLE_BIT(w->table) : 0);
	}
	if (!d->direct)
	{
		done = write_by_statement(w, keys, values, nulls) > 0;
		if (tid)
			ItemPointerSetInvalid(tid);
	}
	else if (w->kind == OW_WRITE_DELETE)
	{
		if ((done = (old = find_row(d, w, keys, tid)) != NULL))
			ow_delete(d, w->table, old);
	}
	else
	{
		if (w->kind == OW_WRITE_UPDATE)
		{
			if ((old = find_row(d, w, keys, tid)) != NULL)
				row = ow_changed_row(d, w->table, old);
			else
				done = false;
		}
		else
			row = ow_new_row(d, w->table);
		if (done)
		{
			for (i = 0; i < w->ncols; i++)
				ow_set(row, w->cols[i], values[i], nulls && nulls[i]);
			if (w->kind == OW_WRITE_UPDATE)
				ow_update(d, w->table, old, row);
			else if (w->kind == OW_WRITE_INSERT_NEW)
				done = ow_insert_new(d, w->table, row);
			else
				ow_insert(d, w->table, row);
		}
		if (tid)
		{
			if (done)
				*tid = row->tts_tid;
			else
				ItemPointerSetInvalid(tid);
		}
	}
	if (d == &own)
		ow_end(d);
	return done;
}

/*
 * The statement of read r under lock: its columns, from its rows named by
 * its keys ($1...) and bound, in the index's order.
 */
static void
make_read_statement(OwRead *r, OwLock lock)
{
	static const char *const locks[] = {"", " FOR UPDATE", " FOR UPDATE SKIP LOCKED"};
	const OwIndexDef *key = &indexes[r->index];
	OwQuery    *q = &r->sql[lock];
	StringInfoData sql;
	MemoryContext old;
	int			i;

	if (key->table != r->table || r->nkeys < 1 || r->nkeys + (r->below ? 1 : 0) > key->nkeys ||
		r->ncols < 1 || r->ncols > OW_READ_MAX_COLS ||
		(r->below && columns[key->keys[r->nkeys]].type != INT8OID) ||
		(r->match && (columns[r->match_col].table != r->table || columns[r->match_col].type != TEXTOID)))
		elog(ERROR, "a read of openwop.%s is described wrongly", table_names[r->table]);
	for (i = 0; i < r->ncols; i++)
		if (columns[r->cols[i]].table != r->table)
			elog(ERROR, "column %s is not one of openwop.%s", columns[r->cols[i]].name,
				 table_names[r->table]);
	old = MemoryContextSwitchTo(TopMemoryContext);
	initStringInfo(&sql);
	/* cast: a column a DBA retyped still reads as the type the caller takes */
	appendStringInfoString(&sql, "SELECT ");
	for (i = 0; i < r->ncols; i++)
		appendStringInfo(&sql, "%sCAST(%s AS %s)", i ? ", " : "", columns[r->cols[i]].name,
						 format_type_extended(columns[r->cols[i]].type, -1, FORMAT_TYPE_FORCE_QUALIFY));
	appendStringInfo(&sql, " FROM openwop.%s", table_names[r->table]);
	for (i = 0; i < r->nkeys + (r->below ? 1 : 0); i++)
	{
		appendStringInfo(&sql, " %s %s OPERATOR(pg_catalog.%s) $%d", i ? "AND" : "WHERE",
						 columns[key->keys[i]].name, i < r->nkeys ? "=" : "<", i + 1);
		q->types[i] = columns[key->keys[i]].type;
	}
	q->nargs = i;
	if (key->pred_value)
		appendStringInfo(&sql, " AND %s OPERATOR(pg_catalog.=) %s", columns[key->pred_col].name,
						 quote_literal_cstr(key->pred_value));
	if (r->match)
		appendStringInfo(&sql, " AND %s OPERATOR(pg_catalog.=) %s", columns[r->match_col].name,
						 quote_literal_cstr(r->match));
	for (i = 0; i < key->nkeys; i++)
		appendStringInfo(&sql, "%s%s%s", i ? ", " : " ORDER BY ", columns[key->keys[i]].name,
						 r->backward ? " DESC" : "");
	appendStringInfoString(&sql, locks[lock]);
	q->expect = SPI_OK_SELECT;
	q->sql = sql.data;
	MemoryContextSwitchTo(old);
}

/* Does the row in slot have r's key (keys)? */
static bool
read_row_has(TupleTableSlot *slot, OwRead *r, const Datum *keys)
{
	const OwIndexDef *key = &indexes[r->index];
	int			i;

	for (i = 0; i < r->nkeys; i++)
	{
		bool		isnull;
		Datum		v = slot_getattr(slot, cache.attnums[key->keys[i]], &isnull);
		int16		len;
		bool		byval;

		type_image(columns[key->keys[i]].type, &len, &byval);
		if (isnull || !datum_image_eq(v, keys[i], byval, len))
			return false;
	}
	return true;
}

/* Is the row in slot one r reads (its match column, if any, is r->match)? */
static bool
read_row_matches(TupleTableSlot *slot, OwRead *r)
{
	bool		isnull;
	Datum		v;
	text	   *t;
	size_t		len;

	if (r->match == NULL)
		return true;
	v = slot_getattr(slot, cache.attnums[r->match_col], &isnull);
	if (isnull)
		return false;
	t = DatumGetTextPP(v);
	len = strlen(r->match);
	return VARSIZE_ANY_EXHDR(t) == len && memcmp(VARDATA_ANY(t), r->match, len) == 0;
}

/* Hand the row in slot to fn, as r reads it. */
static void
read_slot(OwRead *r, TupleTableSlot *slot, OwRowFn fn, void *arg)
{
	Datum		values[OW_READ_MAX_COLS];
	bool		nulls[OW_READ_MAX_COLS];
	OwRow		row = {values, nulls};
	int			i;

	for (i = 0; i < r->ncols; i++)
		values[i] = slot_getattr(slot, cache.attnums[r->cols[i]], &nulls[i]);
	row.tid = slot->tts_tid;
	fn(&row, arg);
}

/*
 * Make read r in d (NULL: in an operation of its own): hand fn each row
 * whose key is keys (r's first nkeys key columns) and, when r reads below,
 * whose next key column is below bound; at most limit rows (0: all).
 * Rows locked FOR UPDATE (lock) as the statement would lock them: the
 * latest version in READ COMMITTED, one changed meanwhile so that its key
 * is no longer keys left out; one skipped with SKIP LOCKED left out.  tid
 * (if not NULL and valid, and keys name one row): where the row may be, a
 * row read earlier in d.  Returns the rows handed to fn.
 */
uint64
ow_read(OwDirect *d, OwRead *r, const Datum *keys, int64 bound, OwLock lock, long limit,
		ItemPointer tid, OwRowFn fn, void *arg)
{
	OwDirect	own;
	uint64		n = 0;

	if (r->sql[lock].sql == NULL)
		make_read_statement(r, lock);
	if (d == NULL)
	{
		d = &own;
		ow_begin(d, OW_TABLE_BIT(r->table), 0, 0, 0);
	}
	if (!d->direct)
	{
		Datum		args[INDEX_MAX_PROBE_KEYS + 1];
		uint64		rows;
		Datum		values[OW_READ_MAX_COLS];
		bool		nulls[OW_READ_MAX_COLS];
		OwRow		row = {values, nulls};
		int			i;

		memcpy(args, keys, r->nkeys * sizeof(Datum));
		args[r->nkeys] = Int64GetDatum(bound);
		/*
		 * Not read-only: a read-only statement sees the calling statement's
		 * snapshot, taken before the run lock was granted, and would miss
		 * what a transaction committed while this one waited for the lock.
		 */
		rows = ow_exec(&r->sql[lock], args, NULL, false, limit);
		ItemPointerSetInvalid(&row.tid);
		for (n = 0; n < rows; n++)
		{
			for (i = 0; i < r->ncols; i++)
				values[i] = ow_col_datum(n, i + 1, columns[r->cols[i]].type, &nulls[i]);
			fn(&row, arg);
		}
	}
	else
	{
		TupleTableSlot *slot;
		OwScan		s;

		if (tid && r->nkeys == indexes[r->index].nkeys && lock == OW_NO_LOCK &&
			ow_fetch_tid(d, r->table, tid, &slot) && read_row_has(slot, r, keys))
		{
			if (read_row_matches(slot, r))
			{
				read_slot(r, slot, fn, arg);
				n = 1;
			}
		}
		else
		{
			begin_scan(d, &s, r->index, r->nkeys, keys, r->backward, r->below, bound);
			while ((limit == 0 || n < (uint64) limit) && ow_scan_next(&s))
			{
				/* as the statement: its filter, then the lock and the filter again on what it locked */
				if (!read_row_matches(s.slot, r))
					continue;
				if (lock != OW_NO_LOCK &&
					(!ow_lock_row(d, r->table, s.slot, lock == OW_LOCK_SKIP_LOCKED) ||
					 !read_row_has(s.slot, r, keys) || !read_row_matches(s.slot, r)))
					continue;
				read_slot(r, s.slot, fn, arg);
				n++;
			}
			ow_scan_end(&s);
		}
	}
	if (d == &own)
		ow_end(d);
	return n;
}

/*
 * Begin the reads and writes of one operation: directly, in one direct
 * operation on the tables given (as ow_direct_begin_delete takes them),
 * while they are plain; else each is its statement.
 */
void
ow_begin(OwDirect *d, uint32 reads, uint32 inserts, uint32 updates, uint32 deletes)
{
	if (!ow_direct_begin_delete(d, reads, inserts, updates, deletes))
		d->direct = false;
}

void
ow_end(OwDirect *d)
{
	if (d->direct)
		ow_direct_end(d);
}
