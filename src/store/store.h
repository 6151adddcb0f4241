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

#include "compat.h"
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
#define OW_QUERY_MAX_ARGS 32

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
extern uint64 ow_exec_latest(OwQuery *q, Datum *args, const char *nulls, long count);
extern char *ow_col_text(uint64 row, int col);
extern Datum ow_col_datum(uint64 row, int col, Oid type, bool *isnull);
extern int64 ow_col_int64(uint64 row, int col);
extern bool ow_col_bool(uint64 row, int col);
extern Jsonb *ow_col_jsonb(uint64 row, int col);
extern ErrorData *ow_try_subtransaction(void (*fn) (void *), void *arg);
extern bool ow_table_never_written(const char *name);

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
 * rowstore.c: the reads and writes of the hot paths, each described once
 * (OwRead, OwWrite) and carried without a statement while the tables are
 * plain (no trigger, rule or row security a DBA added), else by the
 * statement made from the description.
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
	OW_NOTIFICATIONS,
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
	RUN_REQUESTED_BY, RUN_EVENT_HASH,
	EV_TENANT, EV_RUN_ID, EV_SEQUENCE, EV_TYPE, EV_NODE_ID, EV_PAYLOAD, EV_CREATED_AT,
	EV_SCHEMA_VERSION, EV_CAUSATION_ID, EV_HASH,
	INT_TENANT, INT_INTERRUPT_ID, INT_RUN_ID, INT_ROOT_RUN_ID, INT_NODE_ID, INT_VISIT, INT_ORDINAL,
	INT_KEY, INT_KIND, INT_PAYLOAD, INT_STATUS, INT_EXPIRES_AT, INT_REQUESTED_SEQUENCE,
	INT_RESOLVED_SEQUENCE, INT_RESUME_VALUE, INT_DECISION, INT_ACTION, INT_REASON, INT_RESOLVED_BY,
	INT_CREATED_AT, INT_RESOLVED_AT, INT_POLICY,
	EXEC_TENANT, EXEC_RUN_ID, EXEC_NODE_ID, EXEC_VISIT, EXEC_TYPE_ID, EXEC_STATUS, EXEC_ATTEMPT,
	EXEC_OUTPUTS, EXEC_ERROR, EXEC_INTERRUPT_ID, EXEC_ENDED_SEQUENCE, EXEC_STARTED_AT, EXEC_ENDED_AT,
	GM_TENANT, GM_PRINCIPAL, GM_GROUP_REF,
	OPEN_TENANT, OPEN_INTERRUPT_ID, OPEN_RUN_ID, OPEN_NODE_ID, OPEN_VISIT, OPEN_KIND, OPEN_PAYLOAD,
	OPEN_STATUS, OPEN_REQUESTED_SEQUENCE, OPEN_CREATED_AT, OPEN_EXPIRES_AT, OPEN_INTERRUPT_TID,
	OPEN_EXECUTION_TID, OPEN_POLICY, OPEN_ARTIFACT_DIGEST,
	NOTE_ID, NOTE_TENANT, NOTE_KIND, NOTE_RECIPIENT, NOTE_RUN_ID, NOTE_INTERRUPT_ID, NOTE_DETAIL,
	NOTE_CREATED_AT, NOTE_ATTEMPTS, NOTE_LEASE_UNTIL,
	OW_COLUMN_COUNT
} OwColumn;

/* One operation's carrier: its tables, snapshot and (for writes) executor state when direct. */
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
	bool		direct;			/* ow_begin: false, its reads and writes are statements */
} OwDirect;

extern bool ow_direct_begin_instead(OwDirect *d, uint32 reads, uint32 updates, uint32 deletes);
extern void ow_direct_end(OwDirect *d);
extern const char *ow_direct_path_refusal(int t, const char **name);
/*
 * A write of the hot paths, described once at its call site: the table,
 * what it does, the columns it sets, the index whose key names the row
 * (an update, a delete) and other columns the row must equal, else it is
 * left alone.  An insert sets every column of its table, so a default a
 * DBA adds or changes means the same to either carrier: nothing.  Done
 * directly while the tables are plain, else by the statement rowstore.c
 * makes from the description the first time it is needed: one
 * implementation of each write, whatever carries it.
 */
typedef enum OwWriteKind
{
	OW_WRITE_INSERT,
	OW_WRITE_INSERT_NEW,		/* unless its key is taken: ON CONFLICT DO NOTHING */
	OW_WRITE_UPDATE,
	OW_WRITE_DELETE
} OwWriteKind;

#define OW_WRITE_MAX_COLS 24
#define OW_WRITE_MAX_CONDS 3

typedef struct OwWrite
{
	OwTableId	table;
	OwWriteKind kind;
	OwIndexId	key;			/* an update's or a delete's */
	bool		stored_tid;		/* the tid it is given was stored by an earlier transaction */
	int			ncols;
	OwColumn	cols[OW_WRITE_MAX_COLS];
	int			nconds;
	OwColumn	conds[OW_WRITE_MAX_CONDS];
	OwQuery		sql;			/* made on first use */
} OwWrite;

/*
 * A read of the hot paths, described once at its call site: the table,
 * the index whose first nkeys key columns (given) name the rows, read in
 * the index's order or backward, only those whose next key column (a
 * bigint) is below a bound when below, and the columns it reads.
 */
#define OW_READ_MAX_COLS 16

typedef struct OwRead
{
	OwTableId	table;
	OwIndexId	index;
	int			nkeys;
	bool		below;
	bool		backward;
	int			ncols;
	OwColumn	cols[OW_READ_MAX_COLS];
	/* only rows whose text column match_col is match (if match) */
	OwColumn	match_col;
	const char *match;
	OwQuery		sql[3];			/* by OwLock, made on first use */
} OwRead;

typedef enum OwLock
{
	OW_NO_LOCK,
	OW_LOCK,					/* FOR UPDATE */
	OW_LOCK_SKIP_LOCKED			/* FOR UPDATE SKIP LOCKED */
} OwLock;

/* A row read: the read's columns in its order, and where the row is (invalid: a statement read it). */
typedef struct OwRow
{
	const Datum *values;
	const bool *nulls;
	ItemPointerData tid;
} OwRow;

/* Called with each row read; the values last only until it returns. */
typedef void (*OwRowFn) (const OwRow *row, void *arg);

/*
 * The reads and writes of one operation share its carrier: one direct
 * operation (ow_direct_begin's tables), or, when a table is not plain, a
 * statement each.  d->direct says which.
 */
extern void ow_begin(OwDirect *d, uint32 reads, uint32 inserts, uint32 updates, uint32 deletes);
extern void ow_end(OwDirect *d);
extern bool ow_write(OwDirect *d, OwWrite *w, const Datum *keys, const Datum *values,
					 const bool *nulls, ItemPointer tid);
extern uint64 ow_read(OwDirect *d, OwRead *r, const Datum *keys, int64 bound, OwLock lock,
					  long limit, ItemPointer tid, OwRowFn fn, void *arg);

/*
 * A row the run lock should have kept as read is not (a writer that took
 * no run lock, a DBA's UPDATE, changed it meanwhile): 40001, the caller
 * retries and sees the change.
 */
extern pg_noreturn void ow_changed_meanwhile(OwTableId t);
extern pg_noreturn void ow_row_changed_meanwhile(const char *table);

/* ----------
 * eventlog.c: the run row lock and the append-only event log.
 * ----------
 */

/* ----------
 * chain.c: each event's SHA-256, chained to the run's event before it.
 * ----------
 */
#define OW_EVENT_HASH_LEN 32
#define OW_EVENT_HASH_HEX (2 * OW_EVENT_HASH_LEN + 1)

extern void ow_event_hash_hex(const uint8 *hash, char *hex);
extern Datum ow_event_hash_datum(const uint8 *hash);
extern bool ow_event_hash_read(Datum d, uint8 *out);

/* A run row locked FOR UPDATE, and the events this change appends. */
typedef struct OwRun
{
	char	   *tenant;
	char	   *run_id;
	char	   *root_run_id;	/* the run itself: its keys are unique under it */
	char	   *key_root;		/* keys derive from it: a replay fork's chain root, else the run */
	char	   *fork_of;		/* the source of a fork, else NULL */
	char	   *requested_by;	/* whom create_run named as its requester, else NULL */
	char	   *workflow_id;
	char	   *status;
	char	   *current_node_id;
	char	   *event_prefix;
	TimestampTz created_at;
	int64		next_sequence;	/* next free sequence, advanced by ow_append */
	int64		first_sequence; /* first sequence appended by this change */
	int			appended;		/* events appended by this change */
	bool		has_head;		/* the run has an event: head is its latest's hash */
	uint8		head[OW_EVENT_HASH_LEN];
	uint8	   *hashes;			/* of the events this change appended, in order */
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
extern void ow_first_event_hash(OwRun *run, const char *type, Jsonb *payload, TimestampTz at);
extern int64 ow_append_first(OwDirect *d, OwRun *run, const char *type, Jsonb *payload,
							 TimestampTz at);
extern int64 ow_duration_ms(OwRun *run);
extern Jsonb *ow_event_payload(const char *type, Jsonb *payload, const char *tenant);
extern Jsonb *ow_resolved_event(const char *tenant, const char *run_id, int64 seq);
extern const uint8 *ow_appended_hash(OwRun *run, int64 seq);

/* ----------
 * open_interrupts.c: openwop.open_interrupts, the interrupts still open,
 * kept in step with openwop.interrupts.
 * ----------
 */
extern void ow_open_interrupt(OwRun *run, const char *interrupt_id, const char *node_id,
							  int32 visit, const char *kind, Jsonb *payload, Jsonb *policy,
							  int64 requested_seq, bool has_deadline, TimestampTz expires_at,
							  ItemPointer interrupt_tid, ItemPointer execution_tid);
extern void ow_close_interrupt(const char *tenant, const char *interrupt_id);
extern void ow_close_interrupt_in(OwDirect *d, const char *tenant, const char *interrupt_id,
								  ItemPointer tid);
extern void ow_expire_open_interrupt(const char *tenant, const char *interrupt_id);
extern void ow_close_run_interrupts(OwRun *run);

#endif							/* OW_STORE_H */
