/*-------------------------------------------------------------------------
 *
 * eventlog.c
 *	  The store: the run row lock, gapless event append, the run row's
 *	  write-back (which queues the run's notification), the append-only
 *	  trigger, and how an event's payload reads back.
 *
 * Every change to a run follows one path: ow_lock_run() takes the run row
 * FOR UPDATE (the lock that serialises all writers of the run), ow_append()
 * inserts events at run->next_sequence, ow_save_run() writes the advanced
 * sequence and status back and queues one NOTIFY.  Sequence allocation and
 * the events commit or roll back together, so the per-run sequence is
 * gapless from 0 under any concurrency.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "ipc/ipc.h"
#include "base/base.h"
#include "store/internal.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

PG_FUNCTION_INFO_V1(ow_events_append_only);



/*
 * Run a statement keyed by the run: $1 tenant, $2 run id and, when node_id
 * is not NULL, $3 node id (q->nargs says which).
 */
uint64
ow_run_exec(OwQuery *q, OwRun *run, const char *node_id, bool read_only, long count)
{
	Datum		args[3];

	if (q->nargs != (node_id ? 3 : 2))
		elog(ERROR, "openwop statement takes %d parameters, not %d: %s", q->nargs, node_id ? 3 : 2, q->sql);
	args[0] = CStringGetTextDatum(run->tenant);
	args[1] = CStringGetTextDatum(run->run_id);
	if (node_id)
		args[2] = CStringGetTextDatum(node_id);
	return ow_exec(q, args, NULL, read_only, count);
}

bool
ow_run_is_terminal(const char *status)
{
	return strcmp(status, "completed") == 0 ||
		strcmp(status, "failed") == 0 ||
		strcmp(status, "cancelled") == 0;
}

static bool lock_run_row(OwRun *run, const char *tenant, const char *run_id, bool skip_locked);

/*
 * The root a fork's keys derive from (openwop.forks, 0.8.0): a replay
 * fork's is its chain's, so a replayed interrupt re-derives its source's
 * key; a branch keys on itself.  A run create_run made is its own root.
 */
static void
read_key_root(OwRun *run)
{
	static OwQuery q = {"SELECT key_root FROM openwop.forks"
		" WHERE tenant OPERATOR(pg_catalog.=) $1"
		"   AND run_id OPERATOR(pg_catalog.=) $2",
	2, {TEXTOID, TEXTOID}, SPI_OK_SELECT};

	run->key_root = run->run_id;
	/* a fresh snapshot: the run row was found with one (a fork made since the statement began) */
	if (run->fork_of != NULL && ow_run_exec(&q, run, NULL, false, 1) == 1)
		run->key_root = ow_col_text(0, 1);
}

/* The run row's key, as a probe of runs_pkey takes it. */
static void
run_key(OwRun *run, Datum *keys)
{
	keys[0] = CStringGetTextDatum(run->tenant);
	keys[1] = CStringGetTextDatum(run->run_id);
}

/*
 * lock_run_row without a statement (rowstore.c): false when the SQL
 * statement must run instead; else *found says whether the row was locked.
 */
static bool
lock_run_direct(OwRun *run, bool skip_locked, bool *found)
{
	OwDirect	d;
	OwScan		s;
	Datum		keys[2];
	bool		isnull;

	if (!ow_direct_begin(&d, OW_TABLE_BIT(OW_RUNS), 0, 0))
		return false;
	run_key(run, keys);
	ow_scan_begin(&d, &s, OW_RUNS_PKEY, 2, keys);
	*found = ow_scan_next(&s) && ow_lock_row(&d, OW_RUNS, s.slot, skip_locked);
	if (*found)
	{
		run->workflow_id = ow_get_text(s.slot, RUN_WORKFLOW_ID);
		run->status = ow_get_text(s.slot, RUN_STATUS);
		run->current_node_id = ow_get_text(s.slot, RUN_CURRENT_NODE_ID);
		run->event_prefix = ow_get_text(s.slot, RUN_EVENT_PREFIX);
		run->created_at = DatumGetTimestampTz(ow_get(s.slot, RUN_CREATED_AT, &isnull));
		run->next_sequence = DatumGetInt64(ow_get(s.slot, RUN_NEXT_SEQUENCE, &isnull));
		run->first_sequence = run->next_sequence;
		(void) ow_get(s.slot, RUN_DEFINITION, &isnull);
		run->has_definition = !isnull;
		run->fork_of = ow_get_text(s.slot, RUN_FORK_OF);
		run->tid = s.slot->tts_tid;
	}
	ow_scan_end(&s);
	ow_direct_end(&d);
	return true;
}

/*
 * Parse and check the run id, then lock the run row.  Refusals, in order:
 * malformed id (400), foreign tenant (403), unknown run (404).  The caller
 * decides what a terminal status means for its operation.
 */
void
ow_lock_run(OwRun *run, const char *tenant, const char *run_id_input)
{
	ow_lock_run_id(run, tenant, ow_normalize_run_id(run_id_input, tenant));
}

/* Lock the run row of a known (tenant, run id): for the expiry policy, which acts for every tenant. */
void
ow_lock_run_id(OwRun *run, const char *tenant, const char *run_id)
{
	if (!lock_run_row(run, tenant, run_id, false))
		ow_run_not_found(run_id);
}

/* The same without waiting: false when another transaction holds the run. */
bool
ow_try_lock_run_id(OwRun *run, const char *tenant, const char *run_id)
{
	return lock_run_row(run, tenant, run_id, true);
}

static bool
lock_run_row(OwRun *run, const char *tenant, const char *run_id, bool skip_locked)
{
#define LOCK_RUN_SQL "SELECT workflow_id, status, current_node_id, event_prefix," \
		"       created_at, next_sequence, definition IS NOT NULL, fork_of" \
		"  FROM openwop.runs" \
		" WHERE tenant OPERATOR(pg_catalog.=) $1" \
		"   AND run_id OPERATOR(pg_catalog.=) $2"
	static OwQuery wait = {LOCK_RUN_SQL " FOR UPDATE", 2, {TEXTOID, TEXTOID}, SPI_OK_SELECT};
	static OwQuery skip = {LOCK_RUN_SQL " FOR UPDATE SKIP LOCKED", 2, {TEXTOID, TEXTOID}, SPI_OK_SELECT};
#undef LOCK_RUN_SQL
	bool		isnull;
	bool		found;

	run->tenant = pstrdup(tenant);
	run->run_id = pstrdup(run_id);
	run->root_run_id = run->run_id;
	run->first_sequence = 0;
	run->appended = 0;
	run->error = NULL;
	run->outputs = NULL;
	ItemPointerSetInvalid(&run->tid);
	if (lock_run_direct(run, skip_locked, &found))
	{
		if (found)
			read_key_root(run);
		return found;
	}
	if (ow_run_exec(skip_locked ? &skip : &wait, run, NULL, false, 1) == 0)
		return false;

	run->workflow_id = ow_col_text(0, 1);
	run->status = ow_col_text(0, 2);
	run->current_node_id = ow_col_text(0, 3);
	run->event_prefix = ow_col_text(0, 4);
	run->created_at = DatumGetTimestampTz(ow_col_datum(0, 5, &isnull));
	run->next_sequence = ow_col_int64(0, 6);
	run->first_sequence = run->next_sequence;
	run->has_definition = ow_col_bool(0, 7);
	run->fork_of = ow_col_text(0, 8);
	read_key_root(run);
	return true;
}

/*
 * Insert n events at the run's next sequences in the direct operation d
 * (which inserts into events); advances the run.  created_at and
 * schema_version get what their column defaults give.  Returns the
 * sequence of the first.
 */
int64
ow_append_in(OwDirect *d, OwRun *run, const char *node_id, int n, const char *const *types,
			 Jsonb *const *payloads)
{
	int64		seq = run->next_sequence;
	int			i;

	for (i = 0; i < n; i++)
	{
		TupleTableSlot *row = ow_new_row(d, OW_EVENTS);

		ow_set_text(row, EV_TENANT, run->tenant);
		ow_set_text(row, EV_RUN_ID, run->run_id);
		ow_set(row, EV_SEQUENCE, Int64GetDatum(seq + i), false);
		ow_set_text(row, EV_TYPE, types[i]);
		ow_set_text(row, EV_NODE_ID, node_id);
		ow_set(row, EV_PAYLOAD, JsonbPGetDatum(payloads[i]), false);
		ow_set(row, EV_CREATED_AT, TimestampTzGetDatum(GetCurrentTimestamp()), false);
		ow_set(row, EV_SCHEMA_VERSION, Int32GetDatum(1), false);
		ow_insert(d, OW_EVENTS, row);
	}
	run->next_sequence = seq + n;
	run->appended += n;
	return seq;
}

/* ow_append_in in a direct operation of its own: false when the statement must run instead. */
static bool
append_direct(OwRun *run, const char *node_id, int n, const char *const *types,
			  Jsonb *const *payloads)
{
	OwDirect	d;

	if (!ow_direct_begin(&d, 0, OW_TABLE_BIT(OW_EVENTS), 0))
		return false;
	(void) ow_append_in(&d, run, node_id, n, types, payloads);
	ow_direct_end(&d);
	return true;
}

/* The parameters of one event row, from args[0] and nulls[0] on, and their types. */
#define EVENT_TYPES TEXTOID, TEXTOID, INT8OID, TEXTOID, TEXTOID, JSONBOID

static void
event_args(OwRun *run, int64 seq, const char *type, const char *node_id, Jsonb *payload,
		   Datum *args, char *nulls)
{
	args[0] = CStringGetTextDatum(run->tenant);
	args[1] = CStringGetTextDatum(run->run_id);
	args[2] = Int64GetDatum(seq);
	args[3] = CStringGetTextDatum(type);
	args[4] = node_id ? CStringGetTextDatum(node_id) : (Datum) 0;
	args[5] = JsonbPGetDatum(payload);
	memset(nulls, ' ', 6);
	nulls[4] = node_id ? ' ' : 'n';
}

/* Insert one event row at sequence seq, caused by event causation_id (NULL: none). */
static void
insert_event(OwRun *run, int64 seq, const char *type, const char *node_id, Jsonb *payload,
			 const char *causation_id)
{
	static OwQuery insert = {"INSERT INTO openwop.events"
		" (tenant, run_id, sequence, type, node_id, payload, causation_id)"
		" VALUES ($1, $2, $3, $4, $5, $6, $7)",
	7, {EVENT_TYPES, TEXTOID}, SPI_OK_INSERT};
	Datum		args[7];
	char		nulls[7];

	event_args(run, seq, type, node_id, payload, args, nulls);
	args[6] = causation_id ? CStringGetTextDatum(causation_id) : (Datum) 0;
	nulls[6] = causation_id ? ' ' : 'n';
	(void) ow_exec(&insert, args, nulls, false, 0);
}

/*
 * Append two events in one statement (the pairs the hot paths write:
 * interrupt.requested + node.suspended, interrupt.resolved + node.resumed);
 * each statement costs executor start-up more than its row.  Returns the
 * sequence of the first.
 */
int64
ow_append_pair(OwRun *run, const char *node_id,
			   const char *type1, Jsonb *payload1, const char *type2, Jsonb *payload2)
{
	static OwQuery insert = {"INSERT INTO openwop.events"
		" (tenant, run_id, sequence, type, node_id, payload)"
		" VALUES ($1, $2, $3, $4, $5, $6), ($7, $8, $9, $10, $11, $12)",
	12, {EVENT_TYPES, EVENT_TYPES}, SPI_OK_INSERT};
	int64		seq = run->next_sequence;
	Datum		args[12];
	char		nulls[12];
	const char *types[2] = {type1, type2};
	Jsonb	   *payloads[2] = {payload1, payload2};

	if (append_direct(run, node_id, 2, types, payloads))
		return seq;
	event_args(run, seq, type1, node_id, payload1, args, nulls);
	event_args(run, seq + 1, type2, node_id, payload2, args + 6, nulls + 6);
	if (ow_exec(&insert, args, nulls, false, 0) != 2)
		elog(ERROR, "could not append events to run \"%s\"", run->run_id);
	run->next_sequence = seq + 2;
	run->appended += 2;
	return seq;
}

/*
 * Append one event at the run's next sequence, caused by event
 * causation_id (NULL: none; the direct path writes none); returns that
 * sequence.
 */
static int64
append_one(OwRun *run, const char *type, const char *node_id, Jsonb *payload, const char *causation_id)
{
	int64		seq = run->next_sequence;

	if (causation_id == NULL && append_direct(run, node_id, 1, &type, &payload))
		return seq;
	insert_event(run, seq, type, node_id, payload, causation_id);
	run->next_sequence = seq + 1;
	run->appended++;
	return seq;
}

/* Append one event at the run's next sequence; returns that sequence. */
int64
ow_append(OwRun *run, const char *type, const char *node_id, Jsonb *payload)
{
	return append_one(run, type, node_id, payload, NULL);
}

/*
 * Append one event caused by the run's event at cause_seq (its envelope
 * causationId is that event's id); returns its sequence.  For the
 * conversation events, off the hot paths: always the statement.
 */
int64
ow_append_caused(OwRun *run, const char *type, const char *node_id, Jsonb *payload, int64 cause_seq)
{
	return append_one(run, type, node_id, payload,
					  psprintf("%s." INT64_FORMAT, run->event_prefix, cause_seq));
}

/* Write the run row back in the direct operation d (which updates runs). */
static void
save_row(OwDirect *d, OwRun *run)
{
	TupleTableSlot *old;
	TupleTableSlot *row;
	Datum		now = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());

	/* the version locked, unless this transaction changed the row since */
	if (!ow_fetch_tid(d, OW_RUNS, &run->tid, &old))
	{
		OwScan		s;
		Datum		keys[2];

		run_key(run, keys);
		ow_scan_begin(d, &s, OW_RUNS_PKEY, 2, keys);
		if (!ow_scan_next(&s))
			elog(ERROR, "could not update run \"%s\"", run->run_id);
		old = s.slot;
		ow_scan_end(&s);
	}
	row = ow_changed_row(d, OW_RUNS, old);
	ow_set(row, RUN_NEXT_SEQUENCE, Int64GetDatum(run->next_sequence), false);
	ow_set_text(row, RUN_STATUS, run->status);
	ow_set_text(row, RUN_CURRENT_NODE_ID, run->current_node_id);
	if (run->error)
		ow_set(row, RUN_ERROR, JsonbPGetDatum(run->error), false);
	if (run->outputs)
		ow_set(row, RUN_OUTPUTS, JsonbPGetDatum(run->outputs), false);
	ow_set(row, RUN_UPDATED_AT, now, false);
	ow_set(row, RUN_ENDED_AT, now, !ow_run_is_terminal(run->status));
	ow_update(d, OW_RUNS, old, row);
	run->tid = row->tts_tid;
}

/* ow_save_run in the direct operation d, which reads and updates runs. */
void
ow_save_run_in(OwDirect *d, OwRun *run)
{
	save_row(d, run);
	if (run->appended > 0)
		ow_notify_later(run->run_id, run->first_sequence, run->next_sequence - 1);
}

/* save_row in a direct operation of its own: false when the statement must run instead. */
static bool
save_run_direct(OwRun *run)
{
	OwDirect	d;

	if (!ow_direct_begin(&d, OW_TABLE_BIT(OW_RUNS), 0, OW_TABLE_BIT(OW_RUNS)))
		return false;
	save_row(&d, run);
	ow_direct_end(&d);
	return true;
}

/* ow_save_run as a statement. */
static void
save_run_sql(OwRun *run)
{
	static OwQuery update = {"UPDATE openwop.runs"
		"   SET next_sequence = $3, status = $4, current_node_id = $5,"
		"       error = COALESCE($6, error), outputs = COALESCE($7, outputs),"
		"       updated_at = pg_catalog.now(),"
		"       ended_at = CASE WHEN $4 OPERATOR(pg_catalog.=) ANY"
		"                     ('{completed,failed,cancelled}'::pg_catalog.text[])"
		"                  THEN pg_catalog.now() END"
		" WHERE tenant OPERATOR(pg_catalog.=) $1"
		"   AND run_id OPERATOR(pg_catalog.=) $2",
	7, {TEXTOID, TEXTOID, INT8OID, TEXTOID, TEXTOID, JSONBOID, JSONBOID}, SPI_OK_UPDATE};
	Datum		args[7];
	char		nulls[7] = {' ', ' ', ' ', ' ', ' ', ' ', ' '};

	args[0] = CStringGetTextDatum(run->tenant);
	args[1] = CStringGetTextDatum(run->run_id);
	args[2] = Int64GetDatum(run->next_sequence);
	args[3] = CStringGetTextDatum(run->status);
	if (run->current_node_id)
		args[4] = CStringGetTextDatum(run->current_node_id);
	else
		nulls[4] = 'n';
	if (run->error)
		args[5] = JsonbPGetDatum(run->error);
	else
		nulls[5] = 'n';
	if (run->outputs)
		args[6] = JsonbPGetDatum(run->outputs);
	else
		nulls[6] = 'n';
	if (ow_exec(&update, args, nulls, false, 0) != 1)
		elog(ERROR, "could not update run \"%s\"", run->run_id);
}

/*
 * Write the run row back (sequence, status, current node, terminal fields)
 * and remember the appended range for the commit-time NOTIFY.
 */
void
ow_save_run(OwRun *run)
{
	if (!save_run_direct(run))
		save_run_sql(run);
	if (run->appended > 0)
		ow_notify_later(run->run_id, run->first_sequence, run->next_sequence - 1);
}

/* Milliseconds from the run's creation to now (transaction start). */
int64
ow_duration_ms(OwRun *run)
{
	TimestampTz now = GetCurrentTransactionStartTimestamp();

	if (now <= run->created_at)
		return 0;
	return (now - run->created_at) / 1000;
}

/*
 * Trigger on openwop.events: the log is append-only for every role.  Bound
 * BEFORE UPDATE OR DELETE (row) and BEFORE TRUNCATE (statement), and
 * enabled ALWAYS so session_replication_role cannot silence it.
 */
Datum
ow_events_append_only(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = ow_trigger_data(fcinfo, "openwop.events_append_only()", "events",
											OW_TRIGGER_BEFORE | OW_TRIGGER_ROW | OW_TRIGGER_STATEMENT |
											OW_TRIGGER_UPDATE | OW_TRIGGER_DELETE |
											OW_TRIGGER_TRUNCATE);
	const char *op = TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event) ? "UPDATE" :
		TRIGGER_FIRED_BY_DELETE(trigdata->tg_event) ? "DELETE" : "TRUNCATE";

	/* rows for UPDATE and DELETE; TRUNCATE has no rows */
	if (TRIGGER_FIRED_FOR_STATEMENT(trigdata->tg_event) != TRIGGER_FIRED_BY_TRUNCATE(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("openwop.events_append_only() fires FOR EACH ROW on UPDATE and DELETE, FOR EACH STATEMENT on TRUNCATE")));

	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("the openwop event log is append-only"),
			 errdetail("%s on table %s.%s is refused for every role: events are permanent history.",
					   op,
					   get_namespace_name(RelationGetNamespace(trigdata->tg_relation)),
					   RelationGetRelationName(trigdata->tg_relation)),
			 errhint("Record a change by appending a new event through the openwop functions.")));
	PG_RETURN_NULL();
}

/*
 * The payload of the interrupt.resolved at sequence seq of a run, as
 * recorded, or NULL: what replay consults (the log, never a cache).  Read
 * with a fresh snapshot, so it sees one this call has just appended.
 */
Jsonb *
ow_resolved_event(const char *tenant, const char *run_id, int64 seq)
{
	static OwQuery q = {"SELECT payload FROM openwop.events"
		" WHERE tenant OPERATOR(pg_catalog.=) $1 AND run_id OPERATOR(pg_catalog.=) $2"
		"   AND sequence OPERATOR(pg_catalog.=) $3"
		"   AND type OPERATOR(pg_catalog.=) 'interrupt.resolved'",
	3, {TEXTOID, TEXTOID, INT8OID}, SPI_OK_SELECT};
	Datum		args[3];

	args[0] = CStringGetTextDatum(tenant);
	args[1] = CStringGetTextDatum(run_id);
	args[2] = Int64GetDatum(seq);
	return ow_exec(&q, args, NULL, false, 1) == 1 ? ow_col_jsonb(0, 1) : NULL;
}

/*
 * An event's payload as read back.  An interrupt.resolved recorded before
 * this host stamped Subjects carries resolvedBy {"id": ...}: it is read
 * with the legacy subject OpenWOP prescribes for such history (issuer
 * urn:openwop:legacy), never rewritten in the log.
 */
Jsonb *
ow_event_payload(const char *type, Jsonb *payload, const char *tenant)
{
	static const char *const replaced[] = {"resolvedBy", NULL};
	JsonbValue *by;
	JsonbValue *id;
	OwJson		j;

	if (strcmp(type, "interrupt.resolved") != 0 || (by = owj_get(payload, "resolvedBy")) == NULL ||
		!owj_is_object(by) || owj_get_container(by->val.binary.data, "issuer") != NULL ||
		(id = owj_get_container(by->val.binary.data, "id")) == NULL || id->type != jbvString)
		return payload;

	owj_begin(&j);
	owj_members_except(&j, payload, replaced);
	owj_legacy_subject(&j, "resolvedBy", owj_string(id), tenant);
	return owj_end(&j);
}
