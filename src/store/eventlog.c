/*-------------------------------------------------------------------------
 *
 * eventlog.c
 *	  The store: the run row lock, gapless event append (each event hashed
 *	  into the run's chain, chain.c), the run row's write-back (which queues
 *	  the run's notification), the append-only trigger, and how an event's
 *	  payload reads back.
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
PG_FUNCTION_INFO_V1(ow_approval_policy_log_append_only);
PG_FUNCTION_INFO_V1(ow_artifact_changes_append_only);
PG_FUNCTION_INFO_V1(ow_calendar_log_append_only);



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

/* What the run lock reads of the row into the OwRun (arg). */
static void
run_read(const OwRow *row, void *arg)
{
	OwRun	   *run = arg;

	run->workflow_id = TextDatumGetCString(row->values[0]);
	run->status = TextDatumGetCString(row->values[1]);
	run->current_node_id = row->nulls[2] ? NULL : TextDatumGetCString(row->values[2]);
	run->event_prefix = TextDatumGetCString(row->values[3]);
	run->created_at = DatumGetTimestampTz(row->values[4]);
	run->next_sequence = DatumGetInt64(row->values[5]);
	run->first_sequence = run->next_sequence;
	run->has_definition = !row->nulls[6];
	run->fork_of = row->nulls[7] ? NULL : TextDatumGetCString(row->values[7]);
	/* a hash the chain did not make (a DBA's edit) is chained on as it is: verify_run() reports it */
	run->has_head = !row->nulls[8];
	if (run->has_head && !ow_event_hash_read(row->values[8], run->head))
		memset(run->head, 0, OW_EVENT_HASH_LEN);
	run->requested_by = row->nulls[9] ? NULL : TextDatumGetCString(row->values[9]);
	run->tid = row->tid;
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
	static OwRead lock = {.table = OW_RUNS,.index = OW_RUNS_PKEY,.nkeys = 2,.ncols = 10,
		.cols = {RUN_WORKFLOW_ID, RUN_STATUS, RUN_CURRENT_NODE_ID, RUN_EVENT_PREFIX, RUN_CREATED_AT,
	RUN_NEXT_SEQUENCE, RUN_DEFINITION, RUN_FORK_OF, RUN_EVENT_HASH, RUN_REQUESTED_BY}};
	Datum		keys[2];

	run->tenant = pstrdup(tenant);
	run->run_id = pstrdup(run_id);
	run->root_run_id = run->run_id;
	run->first_sequence = 0;
	run->appended = 0;
	run->hashes = NULL;
	run->error = NULL;
	run->outputs = NULL;
	ItemPointerSetInvalid(&run->tid);
	run_key(run, keys);
	if (ow_read(NULL, &lock, keys, 0, skip_locked ? OW_LOCK_SKIP_LOCKED : OW_LOCK, 1, NULL,
				run_read, run) == 0)
		return false;
	read_key_root(run);
	return true;
}

/*
 * Insert n events at the run's next sequences, caused by the run's event
 * causation_id (NULL: none), created at (0: now), with the writes of d
 * (NULL: an operation of their own, which inserts into events); advances
 * the run and its chain.  Returns the sequence of the first.
 */
static int64
append_events(OwDirect *d, OwRun *run, const char *node_id, int n, const char *const *types,
			  Jsonb *const *payloads, const char *causation_id, TimestampTz at)
{
	static OwWrite insert = {.table = OW_EVENTS,.kind = OW_WRITE_INSERT,.ncols = 10,
		.cols = {EV_TENANT, EV_RUN_ID, EV_SEQUENCE, EV_TYPE, EV_NODE_ID, EV_PAYLOAD, EV_CREATED_AT,
	EV_SCHEMA_VERSION, EV_CAUSATION_ID, EV_HASH}};
	int64		seq = run->next_sequence;
	OwDirect	own;
	Datum		values[10];
	bool		nulls[10] = {false};
	StringInfoData buf;
	int			i;

	if (d == NULL)
	{
		d = &own;
		ow_begin(d, 0, OW_TABLE_BIT(OW_EVENTS), 0, 0);
	}
	values[0] = CStringGetTextDatum(run->tenant);
	values[1] = CStringGetTextDatum(run->run_id);
	values[4] = node_id ? CStringGetTextDatum(node_id) : (Datum) 0;
	nulls[4] = node_id == NULL;
	values[7] = Int32GetDatum(1);
	values[8] = causation_id ? CStringGetTextDatum(causation_id) : (Datum) 0;
	nulls[8] = causation_id == NULL;
	run->hashes = run->hashes == NULL ? palloc(n * OW_EVENT_HASH_LEN) :
		repalloc(run->hashes, (run->appended + n) * OW_EVENT_HASH_LEN);
	initStringInfo(&buf);
	for (i = 0; i < n; i++)
	{
		TimestampTz created = at ? at : GetCurrentTimestamp();	/* clock_timestamp(), as the default */
		uint8	   *hash = run->hashes + (run->appended + i) * OW_EVENT_HASH_LEN;

		ow_event_hash(&buf, run->has_head ? run->head : NULL, seq + i, types[i], node_id, payloads[i],
					  created, 1, causation_id, hash);
		memcpy(run->head, hash, OW_EVENT_HASH_LEN);
		run->has_head = true;
		values[2] = Int64GetDatum(seq + i);
		values[3] = CStringGetTextDatum(types[i]);
		values[5] = JsonbPGetDatum(payloads[i]);
		values[6] = TimestampTzGetDatum(created);
		values[9] = ow_event_hash_datum(hash);
		(void) ow_write(d, &insert, NULL, values, nulls, NULL);
	}
	pfree(buf.data);
	if (d == &own)
		ow_end(d);
	run->next_sequence = seq + n;
	run->appended += n;
	return seq;
}

/* The hash of the event at seq, which this change appended. */
const uint8 *
ow_appended_hash(OwRun *run, int64 seq)
{
	int64		i = seq - (run->next_sequence - run->appended);

	if (i < 0 || i >= run->appended)
		elog(ERROR, "event " INT64_FORMAT " of run \"%s\" was not appended by this change", seq, run->run_id);
	return run->hashes + i * OW_EVENT_HASH_LEN;
}

/*
 * The hash the run's first event (at sequence 0, created at) will have:
 * what create_run writes on the run row before it appends it.
 */
void
ow_first_event_hash(OwRun *run, const char *type, Jsonb *payload, TimestampTz at)
{
	ow_event_hash(NULL, NULL, 0, type, NULL, payload, at, 1, NULL, run->head);
	run->has_head = false;		/* appended next, from the start of the chain */
}

/* The run's first event, created at: its hash ow_first_event_hash() gave. */
int64
ow_append_first(OwDirect *d, OwRun *run, const char *type, Jsonb *payload, TimestampTz at)
{
	return append_events(d, run, NULL, 1, &type, &payload, NULL, at);
}

/* Insert n events at the run's next sequences with the writes of d (which inserts into events). */
int64
ow_append_in(OwDirect *d, OwRun *run, const char *node_id, int n, const char *const *types,
			 Jsonb *const *payloads)
{
	return append_events(d, run, node_id, n, types, payloads, NULL, 0);
}

/*
 * Append two events (the pairs the hot paths write: interrupt.requested +
 * node.suspended, interrupt.resolved + node.resumed) in one operation.
 * Returns the sequence of the first.
 */
int64
ow_append_pair(OwRun *run, const char *node_id,
			   const char *type1, Jsonb *payload1, const char *type2, Jsonb *payload2)
{
	const char *types[2] = {type1, type2};
	Jsonb	   *payloads[2] = {payload1, payload2};

	return append_events(NULL, run, node_id, 2, types, payloads, NULL, 0);
}

/* Append one event at the run's next sequence; returns that sequence. */
int64
ow_append(OwRun *run, const char *type, const char *node_id, Jsonb *payload)
{
	return append_events(NULL, run, node_id, 1, &type, &payload, NULL, 0);
}

/*
 * Append one event caused by the run's event at cause_seq (its envelope
 * causationId is that event's id); returns its sequence.
 */
int64
ow_append_caused(OwRun *run, const char *type, const char *node_id, Jsonb *payload, int64 cause_seq)
{
	return append_events(NULL, run, node_id, 1, &type, &payload,
						 psprintf("%s." INT64_FORMAT, run->event_prefix, cause_seq), 0);
}

/*
 * Write the run row back (sequence, status, current node, terminal fields)
 * with the writes of d (NULL: an operation of its own, which reads and
 * updates runs) and remember the appended range for the commit-time
 * NOTIFY.  The row is found where the lock left it, unless this
 * transaction changed it since.
 */
void
ow_save_run_in(OwDirect *d, OwRun *run)
{
#define SAVE_COLS RUN_NEXT_SEQUENCE, RUN_STATUS, RUN_CURRENT_NODE_ID, RUN_UPDATED_AT, RUN_ENDED_AT, \
	RUN_EVENT_HASH
	/* a run that ends may record its error or its outputs; else they stay */
	static OwWrite save[3] = {
		{.table = OW_RUNS,.kind = OW_WRITE_UPDATE,.key = OW_RUNS_PKEY,.ncols = 6,.cols = {SAVE_COLS}},
		{.table = OW_RUNS,.kind = OW_WRITE_UPDATE,.key = OW_RUNS_PKEY,.ncols = 7,.cols = {SAVE_COLS, RUN_ERROR}},
		{.table = OW_RUNS,.kind = OW_WRITE_UPDATE,.key = OW_RUNS_PKEY,.ncols = 7,.cols = {SAVE_COLS, RUN_OUTPUTS}},
	};
#undef SAVE_COLS
	Datum		now = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	Datum		keys[2];
	Datum		values[7];
	bool		nulls[7] = {false};

	run_key(run, keys);
	values[0] = Int64GetDatum(run->next_sequence);
	values[1] = CStringGetTextDatum(run->status);
	values[2] = run->current_node_id ? CStringGetTextDatum(run->current_node_id) : (Datum) 0;
	nulls[2] = run->current_node_id == NULL;
	values[3] = now;
	values[4] = now;
	nulls[4] = !ow_run_is_terminal(run->status);
	values[5] = run->has_head ? ow_event_hash_datum(run->head) : (Datum) 0;
	nulls[5] = !run->has_head;
	values[6] = run->error ? JsonbPGetDatum(run->error) : JsonbPGetDatum(run->outputs);
	if (!ow_write(d, &save[run->error ? 1 : run->outputs ? 2 : 0], keys, values, nulls, &run->tid))
		elog(ERROR, "could not update run \"%s\"", run->run_id);
	if (run->appended > 0)
		ow_notify_later(run->run_id, run->first_sequence, run->next_sequence - 1);
}

/* ow_save_run_in in an operation of its own. */
void
ow_save_run(OwRun *run)
{
	ow_save_run_in(NULL, run);
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
 * The body of an append-only log's trigger (function, on table
 * openwop.<table>): bound BEFORE UPDATE OR DELETE (row) and BEFORE TRUNCATE
 * (statement), and enabled ALWAYS so session_replication_role cannot
 * silence it; it refuses every change, for every role.
 */
static void
refuse_change(FunctionCallInfo fcinfo, const char *function, const char *table, const char *log,
			  const char *why, const char *hint)
{
	TriggerData *trigdata = ow_trigger_data(fcinfo, function, table,
											OW_TRIGGER_BEFORE | OW_TRIGGER_ROW | OW_TRIGGER_STATEMENT |
											OW_TRIGGER_UPDATE | OW_TRIGGER_DELETE |
											OW_TRIGGER_TRUNCATE);
	const char *op = TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event) ? "UPDATE" :
		TRIGGER_FIRED_BY_DELETE(trigdata->tg_event) ? "DELETE" : "TRUNCATE";

	/* rows for UPDATE and DELETE; TRUNCATE has no rows */
	if (TRIGGER_FIRED_FOR_STATEMENT(trigdata->tg_event) != TRIGGER_FIRED_BY_TRUNCATE(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("%s fires FOR EACH ROW on UPDATE and DELETE, FOR EACH STATEMENT on TRUNCATE",
						function)));

	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("the %s is append-only", log),
			 errdetail("%s on table %s.%s is refused for every role: %s.",
					   op,
					   get_namespace_name(RelationGetNamespace(trigdata->tg_relation)),
					   RelationGetRelationName(trigdata->tg_relation), why),
			 errhint("%s", hint)));
}

/* Trigger on openwop.events: the log is append-only for every role. */
Datum
ow_events_append_only(PG_FUNCTION_ARGS)
{
	refuse_change(fcinfo, "openwop.events_append_only()", "events", "openwop event log",
				  "events are permanent history",
				  "Record a change by appending a new event through the openwop functions.");
	PG_RETURN_NULL();
}

/* Trigger on openwop.approval_policy_log: every change to a policy stays on record. */
Datum
ow_approval_policy_log_append_only(PG_FUNCTION_ARGS)
{
	refuse_change(fcinfo, "openwop.approval_policy_log_append_only()", "approval_policy_log",
				  "approval policy log", "every version of a policy stays on record",
				  "Change a policy with openwop.set_approval_policy() or openwop.retire_approval_policy().");
	PG_RETURN_NULL();
}

/* Trigger on openwop.artifact_changes: every change of a gate's artifact stays on record. */
Datum
ow_artifact_changes_append_only(PG_FUNCTION_ARGS)
{
	refuse_change(fcinfo, "openwop.artifact_changes_append_only()", "artifact_changes",
				  "record of artifact changes", "every change, and the votes it voided, stays on record",
				  "Tell a change with openwop.artifact_changed().");
	PG_RETURN_NULL();
}

/* Trigger on openwop.calendar_log: every version of a calendar stays on record. */
Datum
ow_calendar_log_append_only(PG_FUNCTION_ARGS)
{
	refuse_change(fcinfo, "openwop.calendar_log_append_only()", "calendar_log",
				  "calendar log", "every version of a calendar stays on record",
				  "Change a calendar with openwop.set_calendar().");
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
