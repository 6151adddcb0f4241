/*-------------------------------------------------------------------------
 *
 * store/store.h
 *	  The store: the schema's version, statements (SPI), direct row access
 *	  through the relation cache, the run row lock and event log, the open
 *	  interrupts.  The one header of the library with executor types.
 *
 *-------------------------------------------------------------------------
 */
#ifndef OW_STORE_H
#define OW_STORE_H

#include "executor/spi.h"
#include "executor/tuptable.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

/* ----------
 * schema.c: the library serves the schema of its own version only; any
 * other is refused (55000, the hint naming ALTER EXTENSION ... UPDATE).
 * ----------
 */
extern bool ow_schema_is_current(char **version);
extern void ow_require_current_schema(void);

/* ----------
 * spi.c: the one way to run a statement.  An OwQuery is declared static
 * next to its use ({sql, nargs, {types}, expected SPI result}), prepared
 * on first use and kept for the backend.
 * ----------
 */
#define OW_QUERY_MAX_ARGS 16

typedef struct OwQuery
{
	const char *sql;
	int			nargs;
	Oid			types[OW_QUERY_MAX_ARGS];
	int			expect;			/* SPI_OK_SELECT, SPI_OK_INSERT, ...; 0: any success */
	bool		secret;			/* carries a secret: always a generic plan, so the
								 * value is never folded into a plan a debug
								 * setting prints */
	SPIPlanPtr	plan;			/* prepared on first use */
} OwQuery;

extern uint64 ow_exec(OwQuery *q, Datum *args, const char *nulls, bool read_only, long count);
extern char *ow_col_text(uint64 row, int col);
extern Datum ow_col_datum(uint64 row, int col, bool *isnull);
extern int64 ow_col_int64(uint64 row, int col);
extern bool ow_col_bool(uint64 row, int col);
extern Jsonb *ow_col_jsonb(uint64 row, int col);
extern ErrorData *ow_try_subtransaction(void (*fn) (void *), void *arg);

/*
 * The one check of how a trigger function of the extension was fired: as
 * a trigger, at the timing, level and events given (TRIGGER_EVENT_* bits
 * as in commands/trigger.h), on table openwop.<table>.  A trigger function
 * is reachable by any role with EXECUTE on it and a table of its own to
 * attach it to; anything else is refused (39P01).
 */
#define OW_TRIGGER_ROW			0x01
#define OW_TRIGGER_STATEMENT	0x02
#define OW_TRIGGER_BEFORE		0x04
#define OW_TRIGGER_AFTER		0x08
#define OW_TRIGGER_INSERT		0x10
#define OW_TRIGGER_UPDATE		0x20
#define OW_TRIGGER_DELETE		0x40
#define OW_TRIGGER_TRUNCATE		0x80

/* ----------
 * rowstore.c: direct row access for the hot paths (probes, row locks,
 * inserts, updates) without a statement, used while the tables are plain
 * (no trigger, rule or row security a DBA added); else the OwQuery runs.
 * ----------
 */
typedef enum OwTableId
{
	OW_RUNS,
	OW_EVENTS,
	OW_INTERRUPTS,
	OW_NODE_EXECUTIONS,
	OW_GROUP_MEMBERS,
	OW_OPEN_INTERRUPTS,
	OW_TABLE_COUNT
} OwTableId;

#define OW_TABLE_BIT(t) ((uint32) 1 << (t))

typedef enum OwIndexId
{
	OW_RUNS_PKEY,				/* (tenant, run_id) */
	OW_INTERRUPTS_PKEY,			/* (tenant, interrupt_id) */
	OW_OPEN_PKEY,				/* open_interrupts (tenant, interrupt_id) */
	OW_OPEN_PENDING,			/* open_interrupts (tenant, run_id, node_id) WHERE status = 'pending' */
	OW_NODE_EXECUTIONS_PKEY,	/* (tenant, run_id, node_id, visit) */
	OW_GROUP_MEMBERS_PKEY,		/* (tenant, principal, group_ref) */
	OW_EVENTS_PKEY,				/* (tenant, run_id, sequence) */
	OW_INTERRUPTS_KEY,			/* (tenant, root_run_id, key) */
	OW_INDEX_COUNT
} OwIndexId;

/* The columns the hot paths read or write: every column of a table they insert into. */
typedef enum OwColumn
{
	RUN_TENANT, RUN_RUN_ID, RUN_WORKFLOW_ID, RUN_STATUS, RUN_CURRENT_NODE_ID, RUN_OWNER,
	RUN_CONFIGURABLE, RUN_DEFINITION, RUN_INPUTS, RUN_METADATA, RUN_OUTPUTS, RUN_ERROR,
	RUN_NEXT_SEQUENCE, RUN_EVENT_PREFIX, RUN_FORK_OF, RUN_CREATED_AT, RUN_UPDATED_AT, RUN_ENDED_AT,
	EV_TENANT, EV_RUN_ID, EV_SEQUENCE, EV_TYPE, EV_NODE_ID, EV_PAYLOAD, EV_CREATED_AT,
	EV_SCHEMA_VERSION, EV_CAUSATION_ID,
	INT_TENANT, INT_INTERRUPT_ID, INT_RUN_ID, INT_ROOT_RUN_ID, INT_NODE_ID, INT_VISIT, INT_ORDINAL,
	INT_KEY, INT_KIND, INT_PAYLOAD, INT_STATUS, INT_EXPIRES_AT, INT_REQUESTED_SEQUENCE,
	INT_RESOLVED_SEQUENCE, INT_RESUME_VALUE, INT_DECISION, INT_ACTION, INT_REASON, INT_RESOLVED_BY,
	INT_CREATED_AT, INT_RESOLVED_AT,
	EXEC_TENANT, EXEC_RUN_ID, EXEC_NODE_ID, EXEC_VISIT, EXEC_TYPE_ID, EXEC_STATUS, EXEC_ATTEMPT,
	EXEC_OUTPUTS, EXEC_ERROR, EXEC_INTERRUPT_ID, EXEC_ENDED_SEQUENCE, EXEC_STARTED_AT, EXEC_ENDED_AT,
	GM_TENANT, GM_PRINCIPAL, GM_GROUP_REF,
	OPEN_TENANT, OPEN_INTERRUPT_ID, OPEN_RUN_ID, OPEN_NODE_ID, OPEN_VISIT, OPEN_KIND, OPEN_PAYLOAD,
	OPEN_STATUS, OPEN_REQUESTED_SEQUENCE, OPEN_CREATED_AT, OPEN_EXPIRES_AT, OPEN_INTERRUPT_TID,
	OPEN_EXECUTION_TID,
	OW_COLUMN_COUNT
} OwColumn;

/* One direct operation: its tables, snapshot and (for writes) executor state. */
typedef struct OwDirect
{
	Relation	rel[OW_TABLE_COUNT];
	struct ResultRelInfo *rri[OW_TABLE_COUNT];
	TupleTableSlot *slot[OW_TABLE_COUNT];	/* rows read */
	TupleTableSlot *newslot[OW_TABLE_COUNT];	/* rows written */
	TupleTableSlot *lockslot[OW_TABLE_COUNT];	/* rows locked before a write */
	struct EState *estate;
	Snapshot	snapshot;
	bool		triggers;		/* a written table has a trigger of ours */
} OwDirect;

typedef struct OwScan
{
	struct IndexScanDescData *scan;
	Relation	index;
	TupleTableSlot *slot;		/* the current row */
	bool		backward;
} OwScan;

extern bool ow_direct_begin(OwDirect *d, uint32 reads, uint32 inserts, uint32 updates);
extern bool ow_direct_begin_delete(OwDirect *d, uint32 reads, uint32 inserts, uint32 updates,
								   uint32 deletes);
extern bool ow_direct_begin_instead(OwDirect *d, uint32 reads, uint32 updates, uint32 deletes);
extern void ow_direct_end(OwDirect *d);
extern void ow_scan_begin(OwDirect *d, OwScan *s, OwIndexId idx, int nkeys, const Datum *keys);
extern void ow_scan_begin_dir(OwDirect *d, OwScan *s, OwIndexId idx, int nkeys, const Datum *keys,
							  bool backward);
extern void ow_scan_begin_below(OwDirect *d, OwScan *s, OwIndexId idx, int nkeys,
								const Datum *keys, int64 bound);
extern bool ow_scan_next(OwScan *s);
extern void ow_scan_end(OwScan *s);
extern bool ow_fetch_tid(OwDirect *d, OwTableId t, ItemPointer tid, TupleTableSlot **slot);
extern bool ow_fetch_hint(OwDirect *d, OwTableId t, ItemPointer tid, TupleTableSlot **slot);
extern Datum ow_get(TupleTableSlot *slot, OwColumn c, bool *isnull);
extern char *ow_get_text(TupleTableSlot *slot, OwColumn c);
extern bool ow_get_text_is(TupleTableSlot *slot, OwColumn c, const char *s);
extern Jsonb *ow_get_jsonb(TupleTableSlot *slot, OwColumn c);
extern TupleTableSlot *ow_new_row(OwDirect *d, OwTableId t);
extern TupleTableSlot *ow_changed_row(OwDirect *d, OwTableId t, TupleTableSlot *old);
extern void ow_set(TupleTableSlot *row, OwColumn c, Datum value, bool isnull);
extern void ow_set_text(TupleTableSlot *row, OwColumn c, const char *s);
extern bool ow_insert_new(OwDirect *d, OwTableId t, TupleTableSlot *row);
extern void ow_update(OwDirect *d, OwTableId t, TupleTableSlot *old, TupleTableSlot *row);
extern void ow_delete(OwDirect *d, OwTableId t, TupleTableSlot *old);
extern const char *ow_direct_path_refusal(int t, const char **name);
/*
 * A write of one row of the hot paths, described once at its call site:
 * the table, the columns it sets and, for an update, the index whose key
 * names the row (OW_NO_KEY: an insert).  Done directly while the table is
 * plain, else by the statement rowstore.c makes from the description.
 */
#define OW_NO_KEY (-1)
typedef struct OwWrite
{
	OwTableId	table;
	int			key;			/* an OwIndexId, or OW_NO_KEY */
	int			ncols;
	OwColumn	cols[OW_QUERY_MAX_ARGS];
	OwQuery		sql;			/* made on first use */
} OwWrite;

extern void ow_insert_row(OwWrite *w, const Datum *values, const bool *nulls, ItemPointer tid);
extern bool ow_update_row(OwWrite *w, const Datum *keys, const Datum *values, const bool *nulls,
						  ItemPointer tid);

/* ----------
 * eventlog.c: the run row lock and the append-only event log.
 * ----------
 */

/* A run row locked FOR UPDATE, and the events this change appends. */
typedef struct OwRun
{
	char	   *tenant;
	char	   *run_id;
	char	   *root_run_id;	/* the run itself: its keys are unique under it */
	char	   *key_root;		/* keys derive from it: a replay fork's chain root, else the run */
	char	   *fork_of;		/* the source of a fork, else NULL */
	char	   *workflow_id;
	char	   *status;
	char	   *current_node_id;
	char	   *event_prefix;
	TimestampTz created_at;
	int64		next_sequence;	/* next free sequence, advanced by ow_append */
	int64		first_sequence; /* first sequence appended by this change */
	int			appended;		/* events appended by this change */
	bool		has_definition; /* a workflow definition was registered */
	Jsonb	   *error;			/* set by fail_run */
	Jsonb	   *outputs;		/* set by complete_run */
	ItemPointerData tid;		/* the row version locked, when read directly */
} OwRun;

extern bool ow_run_is_terminal(const char *status);
extern void ow_lock_run(OwRun *run, const char *tenant, const char *run_id_input);
extern void ow_lock_run_id(OwRun *run, const char *tenant, const char *run_id);
extern bool ow_try_lock_run_id(OwRun *run, const char *tenant, const char *run_id);
extern uint64 ow_run_exec(OwQuery *q, OwRun *run, const char *node_id, bool read_only, long count);
extern int64 ow_append(OwRun *run, const char *type, const char *node_id, Jsonb *payload);
extern int64 ow_append_caused(OwRun *run, const char *type, const char *node_id, Jsonb *payload,
							  int64 cause_seq);
extern int64 ow_append_pair(OwRun *run, const char *node_id, const char *type1, Jsonb *payload1,
							const char *type2, Jsonb *payload2);
extern void ow_save_run(OwRun *run);
extern int64 ow_append_in(OwDirect *d, OwRun *run, const char *node_id, int n,
						  const char *const *types, Jsonb *const *payloads);
extern void ow_save_run_in(OwDirect *d, OwRun *run);
extern int64 ow_duration_ms(OwRun *run);
extern Jsonb *ow_event_payload(const char *type, Jsonb *payload, const char *tenant);
extern Jsonb *ow_resolved_event(const char *tenant, const char *run_id, int64 seq);

/* ----------
 * open_interrupts.c: openwop.open_interrupts, the interrupts still open,
 * kept in step with openwop.interrupts.
 * ----------
 */
extern void ow_open_interrupt(OwRun *run, const char *interrupt_id, const char *node_id,
							  int32 visit, const char *kind, Jsonb *payload, int64 requested_seq,
							  bool has_deadline, TimestampTz expires_at, ItemPointer interrupt_tid,
							  ItemPointer execution_tid);
extern void ow_close_interrupt(const char *tenant, const char *interrupt_id);
extern void ow_expire_open_interrupt(const char *tenant, const char *interrupt_id);
extern void ow_close_run_interrupts(OwRun *run);

#endif							/* OW_STORE_H */
