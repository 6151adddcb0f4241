/*-------------------------------------------------------------------------
 *
 * interrupts.c
 *	  openwop.interrupt(): the deterministic re-entry key, suspension (the
 *	  request itself is checked by kinds.c), and the envelopes returned to
 *	  the engine (FlowDrop INT-1 / INT-2, OpenWOP replay).
 *
 * The key is derived from the root of the run's replay chain (the run
 * itself, unless it is a replay fork: forks.c), the node, the node's visit
 * index and the ordinal of the call within the execution, so a replay of
 * one execution re-derives it and a later visit cannot.  UNIQUE (tenant,
 * root_run_id, key), root_run_id being the run itself, makes "requested at
 * most once per run" a constraint.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "ipc/ipc.h"
#include "base/base.h"
#include "store/store.h"
#include "auth/auth.h"
#include "domain/internal.h"

#include "access/detoast.h"
#include "catalog/pg_type.h"
#include "common/cryptohash.h"
#include "common/sha2.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(ow_interrupt);


/*
 * The re-entry key: "k1." + base64url(SHA-256(root run, node, visit,
 * ordinal)).  Opaque, fixed length (well under the 256 limit), and a pure
 * function of its inputs, so any process re-derives it.
 */
static char *
derive_key(const char *root_run_id, const char *node_id, int32 visit, int32 ordinal)
{
	pg_cryptohash_ctx *ctx = pg_cryptohash_create(PG_SHA256);
	uint8		digest[PG_SHA256_DIGEST_LENGTH];
	char	   *material = psprintf("%s\n%s\n%d\n%d", root_run_id, node_id, visit, ordinal);

	if (ctx == NULL || pg_cryptohash_init(ctx) < 0 ||
		pg_cryptohash_update(ctx, (uint8 *) material, strlen(material)) < 0 ||
		pg_cryptohash_final(ctx, digest, sizeof(digest)) < 0)
		elog(ERROR, "could not compute SHA-256: %s", pg_cryptohash_error(ctx));
	pg_cryptohash_free(ctx);
	return psprintf("k1.%s", ow_base64url((const char *) digest, sizeof(digest)));
}

/* ----------
 * Envelopes
 * ----------
 */

/* One node.completed event of the completed prefix. */
typedef struct PrefixEvent
{
	char	   *node_id;		/* NULL: an event without a node */
	int64		sequence;
	ItemPointerData tid;		/* its row (invalid: a statement read it) */
	Size		size;			/* its size once detoasted; 0: none */
	Jsonb	   *payload;		/* detoasted once the sizes were checked */
} PrefixEvent;

/*
 * node_id, then the latest first; events without a node last, also the
 * latest first: the order of the statement's ORDER BY node_id, sequence DESC
 */
static int
prefix_order(const void *a, const void *b)
{
	const PrefixEvent *x = a;
	const PrefixEvent *y = b;
	int			c;

	if ((x->node_id == NULL) != (y->node_id == NULL))
		return (x->node_id == NULL) - (y->node_id == NULL);
	if (x->node_id != NULL && (c = strcmp(x->node_id, y->node_id)) != 0)
		return c;
	return (x->sequence < y->sequence) - (x->sequence > y->sequence);
}

/* Do two events fall in one DISTINCT ON (node_id) group?  (NULLs do.) */
static bool
same_node(const char *a, const char *b)
{
	return a == NULL ? b == NULL : b != NULL && strcmp(a, b) == 0;
}

/*
 * Refuse a prefix too large for an envelope, measured before any payload
 * is detoasted (the envelope must stay a jsonb value).
 */
static void
check_prefix_size(OwRun *run, PrefixEvent *events, int n)
{
	Size		total = 0;
	int			i;

	for (i = 0; i < n; i++)
		total += events[i].size;
	if (total > OW_ENVELOPE_MAX)
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "runId", run->run_id);
		ow_details_int(&d, "size", (int64) total);
		ow_details_int(&d, "limit", (int64) OW_ENVELOPE_MAX);
		ow_raise(OW_RUN_STATE_CONFLICT, &d,
				 "An interrupt's envelope carries the outputs of every completed node: keep large data out of node outputs.",
				 "the completed nodes of run \"%s\" hold %zu bytes of outputs, more than an envelope may carry",
				 run->run_id, total);
	}
}

/* A node.completed event before the request, onto the list (arg): its row, not its payload. */
typedef struct PrefixRead
{
	PrefixEvent *events;
	int			n;
	int			cap;
} PrefixRead;

static void
prefix_event_read(const OwRow *row, void *arg)
{
	PrefixRead *pr = arg;
	PrefixEvent *e;

	if (pr->n == pr->cap)
	{
		pr->cap *= 2;
		pr->events = repalloc(pr->events, pr->cap * sizeof(PrefixEvent));
	}
	e = &pr->events[pr->n++];
	e->node_id = row->nulls[0] ? NULL : TextDatumGetCString(row->values[0]);
	e->sequence = DatumGetInt64(row->values[1]);
	e->tid = row->tid;
	e->size = 0;
	e->payload = NULL;
}

/* The size of the event's payload (arg), not detoasted */
static void
prefix_size_read(const OwRow *row, void *arg)
{
	PrefixEvent *e = arg;

	e->size = row->nulls[0] ? 0 : toast_raw_datum_size(row->values[0]);
}

static void
prefix_payload_read(const OwRow *row, void *arg)
{
	PrefixEvent *e = arg;

	e->payload = row->nulls[0] ? NULL : DatumGetJsonbPCopy(row->values[0]);
}

/*
 * The latest node.completed event of each node before requested_seq (as
 * DISTINCT ON (node_id) keeps it; one without a node), in node order.  The
 * walk reads the node.completed events' keys only (a statement's result
 * holds every row it walked); the kept ones are then measured, one at a
 * time, and read only if they fit an envelope: a long log costs no more
 * memory than the envelope, on either carrier.
 */
static void
read_prefix(OwRun *run, int64 requested_seq, PrefixEvent **events, int *n)
{
	static OwRead completed = {.table = OW_EVENTS,.index = OW_EVENTS_PKEY,.nkeys = 2,.below = true,
		.backward = true,.ncols = 2,.cols = {EV_NODE_ID, EV_SEQUENCE},
	.match_col = EV_TYPE,.match = "node.completed"};
	static OwRead payload = {.table = OW_EVENTS,.index = OW_EVENTS_PKEY,.nkeys = 3,.ncols = 1,
	.cols = {EV_PAYLOAD}};
	PrefixRead	pr;
	OwDirect	d;
	Datum		keys[3];
	int			i;

	pr.cap = 8;
	pr.n = 0;
	pr.events = palloc(pr.cap * sizeof(PrefixEvent));
	keys[0] = CStringGetTextDatum(run->tenant);
	keys[1] = CStringGetTextDatum(run->run_id);
	ow_begin(&d, OW_TABLE_BIT(OW_EVENTS), 0, 0, 0);
	(void) ow_read(&d, &completed, keys, requested_seq, OW_NO_LOCK, 0, NULL, prefix_event_read, &pr);

	/* the latest of each node, as DISTINCT ON (node_id) keeps it; one without a node */
	if (pr.n > 1)
	{
		int			kept = 0;

		qsort(pr.events, pr.n, sizeof(PrefixEvent), prefix_order);
		for (i = 0; i < pr.n; i++)
		{
			if (kept > 0 && same_node(pr.events[i].node_id, pr.events[kept - 1].node_id))
				continue;
			pr.events[kept++] = pr.events[i];
		}
		pr.n = kept;
	}
	/* in the same operation, which saw these rows: their sizes, then their payloads */
	for (i = 0; i < pr.n; i++)
	{
		PrefixEvent *e = &pr.events[i];

		keys[2] = Int64GetDatum(e->sequence);
		if (ow_read(&d, &payload, keys, 0, OW_NO_LOCK, 1, &e->tid, prefix_size_read, e) != 1)
			elog(ERROR, "could not read event %lld of run \"%s\"", (long long) e->sequence,
				 run->run_id);
	}
	check_prefix_size(run, pr.events, pr.n);
	for (i = 0; i < pr.n; i++)
	{
		PrefixEvent *e = &pr.events[i];

		if (e->size == 0)
			continue;
		keys[2] = Int64GetDatum(e->sequence);
		if (ow_read(&d, &payload, keys, 0, OW_NO_LOCK, 1, &e->tid, prefix_payload_read, e) != 1)
			elog(ERROR, "could not read event %lld of run \"%s\"", (long long) e->sequence,
				 run->run_id);
	}
	ow_end(&d);
	*events = pr.events;
	*n = pr.n;
}

/*
 * results: the completed prefix of the interrupt requested at sequence
 * requested_seq (FlowDrop INT-1), read from the log: for every node with a
 * node.completed event before the request, the outputs of its latest one.
 * A node completed after the request (a parallel branch) is not part of
 * the prefix, however often the pending envelope is returned again.
 */
static void
add_completed_prefix(OwJson *j, OwRun *run, int64 requested_seq)
{
	PrefixEvent *events;
	int			n;
	int			i;

	read_prefix(run, requested_seq, &events, &n);
	owj_begin_object(j, "results");
	for (i = 0; i < n; i++)
	{
		JsonbValue *out;

		/* an event without a node or outputs (restored, not ours) names no result */
		if (events[i].payload == NULL || events[i].node_id == NULL ||
			(out = owj_get(events[i].payload, "outputs")) == NULL)
			continue;
		owj_value(j, events[i].node_id, out);
	}
	owj_end_object(j);
}

/* The INT-1 envelope of a stored, pending interrupt (built from the row: INT-2). */
static Jsonb *
pending_envelope(OwRun *run, const char *interrupt_id, const char *node_id,
				 const char *status, const char *key, const char *kind,
				 int64 requested_seq, MemoryContext resultctx)
{
	OwJson		j;
	MemoryContext old = MemoryContextSwitchTo(resultctx);
	Jsonb	   *env;

	owj_begin(&j);
	owj_str(&j, "status", "interrupted");
	owj_str(&j, "runId", run->run_id);
	MemoryContextSwitchTo(old);
	add_completed_prefix(&j, run, requested_seq);	/* runs SPI: in the SPI context */
	old = MemoryContextSwitchTo(resultctx);
	owj_begin_object(&j, "metadata");
	owj_begin_object(&j, "interrupt");
	owj_str(&j, "id", interrupt_id);
	owj_str(&j, "nodeId", node_id);
	owj_str(&j, "status", status);
	owj_end_object(&j);
	owj_end_object(&j);
	owj_str(&j, "key", key);
	owj_str(&j, "kind", kind);
	env = owj_end(&j);
	MemoryContextSwitchTo(old);
	return env;
}

/*
 * The recorded resolution, read back from the interrupt.resolved event in
 * the log (the log, not a cache, is what replay consults).
 */
static Jsonb *
resolved_envelope(OwRun *run, const char *interrupt_id, int64 resolved_seq, MemoryContext resultctx)
{
	static const char *const copied[] = {"resumeValue", "decision", "action", "reason", "resolvedBy", NULL};
	Jsonb	   *ev = ow_resolved_event(run->tenant, run->run_id, resolved_seq);
	OwJson		j;
	MemoryContext old;
	const char *const *k;
	Jsonb	   *env;

	if (ev == NULL)
		elog(ERROR, "interrupt \"%s\" has no interrupt.resolved event at sequence " INT64_FORMAT,
			 interrupt_id, resolved_seq);
	ev = ow_event_payload("interrupt.resolved", ev, run->tenant);

	old = MemoryContextSwitchTo(resultctx);
	owj_begin(&j);
	owj_str(&j, "status", "resolved");
	owj_str(&j, "interruptId", interrupt_id);
	for (k = copied; *k; k++)
	{
		JsonbValue *v = owj_get(ev, *k);

		if (v)
			owj_value(&j, *k, v);
	}
	env = owj_end(&j);
	MemoryContextSwitchTo(old);
	return env;
}

/*
 * Suspend the open execution ex of node_id on a new interrupt (the run is
 * locked): validate the request, store the interrupt first, append
 * interrupt.requested and node.suspended, mark the job interrupted, move
 * the run to waiting-*, save it.  Returns the INT-1 envelope built from the
 * stored row, in resultctx.  Shared by interrupt() and low-confidence
 * escalation (lowconf.c).
 */
Jsonb *
ow_suspend(OwRun *run, const char *node_id, OwExec *ex, int32 ordinal, Jsonb *request,
		   MemoryContext resultctx)
{
	/* pending: what a resolve sets is null */
	static OwWrite insert_interrupt = {.table = OW_INTERRUPTS,.kind = OW_WRITE_INSERT,.ncols = 22,
		.cols = {INT_TENANT, INT_INTERRUPT_ID, INT_RUN_ID, INT_ROOT_RUN_ID, INT_NODE_ID, INT_VISIT,
			INT_ORDINAL, INT_KEY, INT_KIND, INT_PAYLOAD, INT_REQUESTED_SEQUENCE, INT_EXPIRES_AT,
			INT_STATUS, INT_CREATED_AT, INT_POLICY, INT_RESOLVED_SEQUENCE, INT_RESUME_VALUE,
	INT_DECISION, INT_ACTION, INT_REASON, INT_RESOLVED_BY, INT_RESOLVED_AT}};
	static OwWrite suspend_exec = {.table = OW_NODE_EXECUTIONS,.kind = OW_WRITE_UPDATE,
	.key = OW_NODE_EXECUTIONS_PKEY,.ncols = 2,.cols = {EXEC_STATUS, EXEC_INTERRUPT_ID}};
	char	   *key = derive_key(run->key_root, node_id, ex->visit, ordinal);
	char	   *kind;
	int64		timeout_ms;
	Jsonb	   *payload;
	Jsonb	   *policy = NULL;
	TimestampTz calendar_expiry = 0;	/* the deadline in working time, when a policy's calendar sets it */
	Datum		args[22];
	bool		nulls[22];
	char	   *interrupt_id;
	int64		req_seq;
	OwJson		j;
	bool		conversation;
	OwConversation conv;
	ItemPointerData interrupt_tid;	/* where the rows went, for the resolve: unknown through SQL */
	ItemPointerData execution_tid;

	/* a new interrupt: validate fully before writing anything */
	payload = ow_check_request(request, key, &kind, &timeout_ms);
	if (strcmp(ex->status, "interrupted") == 0)
		ow_node_conflict(run, node_id,
						 "Resolve the node's pending interrupt before raising another.",
						 "node \"%s\" is already suspended on another interrupt", node_id);

	/* a replay fork derives what its chain recorded under the key: no new request */
	if (strcmp(run->key_root, run->run_id) != 0 &&
		ow_derive_recorded(run, node_id, ex, ordinal, key, kind, &interrupt_id, &req_seq))
		return resolved_envelope(run, interrupt_id, req_seq, resultctx);

	interrupt_id = psprintf("%s/%s", run->tenant, ow_mint_interrupt_opaque());
	/* an approval gate pins the policies that govern it, which may shorten its deadline */
	if (strcmp(kind, "approval") == 0)
		policy = ow_policy_pin(run, node_id, owj_get(payload, "data")->val.binary.data, &timeout_ms,
							   &calendar_expiry);
	/* a conversation's step is checked against it, and taken, first */
	conversation = strncmp(kind, "conversation.", 13) == 0;
	if (conversation)
		payload = ow_conversation_raise(run, kind, payload, interrupt_id, &conv);

	owj_begin(&j);
	owj_str(&j, "nodeId", node_id);
	owj_str(&j, "interruptId", interrupt_id);
	owj_str(&j, "kind", kind);
	if (strcmp(kind, "low-confidence") == 0)
		owj_str(&j, "reason", "low-confidence");
	owj_str(&j, "key", key);
	req_seq = ow_append_pair(run, node_id, "interrupt.requested", payload, "node.suspended", owj_end(&j));

	memset(nulls, false, sizeof(nulls));
	args[0] = CStringGetTextDatum(run->tenant);
	args[1] = CStringGetTextDatum(interrupt_id);
	args[2] = CStringGetTextDatum(run->run_id);
	args[3] = CStringGetTextDatum(run->root_run_id);
	args[4] = CStringGetTextDatum(node_id);
	args[5] = Int32GetDatum(ex->visit);
	args[6] = Int32GetDatum(ordinal);
	args[7] = CStringGetTextDatum(key);
	args[8] = CStringGetTextDatum(kind);
	args[9] = JsonbPGetDatum(payload);
	args[10] = Int64GetDatum(req_seq);
	/*
	 * absent or 0: never expires (FlowDrop INT-23); nor does a deadline past
	 * year 100000, or one a business calendar puts more than 100 years away
	 */
	if (timeout_ms <= 0 || timeout_ms > INT64CONST(100000) * 365 * 24 * 3600 * 1000 ||
		calendar_expiry == DT_NOEND)
		nulls[11] = true;
	else if (calendar_expiry != 0)
		args[11] = TimestampTzGetDatum(calendar_expiry);
	else
		args[11] = TimestampTzGetDatum(TimestampTzPlusMilliseconds(GetCurrentTransactionStartTimestamp(),
																	timeout_ms));
	args[12] = CStringGetTextDatum("pending");
	args[13] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	args[14] = PointerGetDatum(policy);
	nulls[14] = policy == NULL;
	memset(nulls + 15, true, 7 * sizeof(bool));
	ItemPointerSetInvalid(&interrupt_tid);
	(void) ow_write(NULL, &insert_interrupt, NULL, args, nulls, &interrupt_tid);

	{
		Datum		keys[4] = {CStringGetTextDatum(run->tenant), CStringGetTextDatum(run->run_id),
		CStringGetTextDatum(node_id), Int32GetDatum(ex->visit)};
		Datum		values[2] = {CStringGetTextDatum("interrupted"), CStringGetTextDatum(interrupt_id)};

		ItemPointerSetInvalid(&execution_tid);
		if (!ow_write(NULL, &suspend_exec, keys, values, NULL, &execution_tid))
			ow_changed_meanwhile(OW_NODE_EXECUTIONS);
	}

	ow_open_interrupt(run, interrupt_id, node_id, ex->visit, kind, payload, policy, req_seq, !nulls[11],
					  nulls[11] ? 0 : DatumGetTimestampTz(args[11]), &interrupt_tid, &execution_tid);
	if (conversation)
		ow_conversation_announce(run, node_id, &conv, req_seq + 1);
	if (policy)
		ow_plan_gate_steps(run, interrupt_id, policy);
	if (strcmp(kind, "approval") == 0 && ow_outbox_on())
	{
		JsonbContainer *data = owj_get(payload, "data")->val.binary.data;
		OwGateRule	rule;

		ow_gate_rule(data, policy, &rule);
		ow_notice_detail(&j, node_id, data, true);
		if (!nulls[11])
			owj_str(&j, "expiresAt", owj_iso8601(DatumGetTimestampTz(args[11])));
		(void) ow_notify_gate(run, interrupt_id, OW_NOTICE_RAISED, data, &rule, NULL, owj_end(&j));
	}
	run->status = (char *) ow_waiting_status(kind);
	run->current_node_id = (char *) node_id;
	ow_save_run(run);
	if (timeout_ms > 0)
		ow_deadline_raised();	/* the timeout worker wakes at commit */
	return pending_envelope(run, interrupt_id, node_id, "pending", key, kind, req_seq, resultctx);
}

/* The interrupt requested before under a key, as find_key reads it. */
typedef struct KeyedInterrupt
{
	char	   *key;			/* set when found under another key (find_inherited_invocation) */
	char	   *id;
	char	   *status;
	char	   *kind;
	int64		resolved_seq;
	int64		requested_seq;
} KeyedInterrupt;

/* What find_key reads of the row into the KeyedInterrupt (arg). */
static void
keyed_read(const OwRow *row, void *arg)
{
	KeyedInterrupt *ki = arg;

	ki->id = TextDatumGetCString(row->values[0]);
	ki->status = TextDatumGetCString(row->values[1]);
	ki->kind = TextDatumGetCString(row->values[2]);
	ki->resolved_seq = row->nulls[3] ? 0 : DatumGetInt64(row->values[3]);
	ki->requested_seq = DatumGetInt64(row->values[4]);
}

/* The interrupt of run requested under key: false if none. */
static bool
find_key(OwRun *run, const char *key, KeyedInterrupt *ki)
{
	static OwRead read = {.table = OW_INTERRUPTS,.index = OW_INTERRUPTS_KEY,.nkeys = 3,.ncols = 5,
	.cols = {INT_INTERRUPT_ID, INT_STATUS, INT_KIND, INT_RESOLVED_SEQUENCE, INT_REQUESTED_SEQUENCE}};
	Datum		keys[3];

	keys[0] = CStringGetTextDatum(run->tenant);
	keys[1] = CStringGetTextDatum(run->root_run_id);
	keys[2] = CStringGetTextDatum(key);
	return ow_read(NULL, &read, keys, 0, OW_NO_LOCK, 1, NULL, keyed_read, ki) == 1;
}

/*
 * In a fork, the interrupt of this invocation (node, visit, ordinal) its
 * prefix holds under the key its source derived: a branch keys on itself,
 * so the same invocation, inherited, has another key's spelling.
 */
static bool
find_inherited_invocation(OwRun *run, const char *node_id, int32 visit, int32 ordinal,
						  KeyedInterrupt *ki)
{
	static OwQuery q = {
		"SELECT interrupt_id, status, kind, resolved_sequence, requested_sequence, key"
		"  FROM openwop.interrupts"
		" WHERE tenant OPERATOR(pg_catalog.=) $1 AND root_run_id OPERATOR(pg_catalog.=) $2"
		"   AND node_id OPERATOR(pg_catalog.=) $3 AND visit OPERATOR(pg_catalog.=) $4"
		"   AND ordinal OPERATOR(pg_catalog.=) $5",
		5, {TEXTOID, TEXTOID, TEXTOID, INT4OID, INT4OID}, SPI_OK_SELECT
	};
	Datum		args[5];
	bool		isnull;
	Datum		v;

	if (run->fork_of == NULL)
		return false;
	args[0] = CStringGetTextDatum(run->tenant);
	args[1] = CStringGetTextDatum(run->run_id);
	args[2] = CStringGetTextDatum(node_id);
	args[3] = Int32GetDatum(visit);
	args[4] = Int32GetDatum(ordinal);
	if (ow_exec(&q, args, NULL, false, 1) != 1)
		return false;
	ki->id = ow_col_text(0, 1);
	ki->status = ow_col_text(0, 2);
	ki->kind = ow_col_text(0, 3);
	v = ow_col_datum(0, 4, INT8OID, &isnull);
	ki->resolved_seq = isnull ? 0 : DatumGetInt64(v);
	ki->requested_seq = ow_col_int64(0, 5);
	ki->key = ow_col_text(0, 6);
	return true;
}

/* What interrupt() answers for a key requested before (ki), in resultctx. */
static Jsonb *
replayed(OwRun *run, const char *node_id, const char *key, const KeyedInterrupt *ki,
		 Jsonb *request, MemoryContext resultctx)
{
	const char *id = ki->id;
	const char *status = ki->status;
	const char *stored_kind = ki->kind;
	char	   *asked_kind = JB_ROOT_IS_OBJECT(request) ? owj_string(owj_get(request, "kind")) : NULL;
	OwJson		j;
	MemoryContext old;
	Jsonb	   *env;

	if (asked_kind && strcmp(asked_kind, stored_kind) != 0)
		ow_refuse_other_kind(key, stored_kind, asked_kind);
	if (strcmp(status, "resolved") == 0)
		return resolved_envelope(run, id, ki->resolved_seq, resultctx);
	if (strcmp(status, "pending") == 0)
		return pending_envelope(run, id, node_id, status, key, stored_kind,
								ki->requested_seq, resultctx);
	/* cancelled, or expired with its run */
	if (strcmp(status, "expired") != 0 || ow_run_is_terminal(run->status))
		ow_run_terminal(run->run_id, run->status);

	/* a late answer expired it; the next sweep ends the run (INT-18) */
	old = MemoryContextSwitchTo(resultctx);
	owj_begin(&j);
	owj_str(&j, "status", "expired");
	owj_str(&j, "runId", run->run_id);
	owj_str(&j, "interruptId", id);
	owj_str(&j, "kind", stored_kind);
	env = owj_end(&j);
	MemoryContextSwitchTo(old);
	return env;
}

/* ----------
 * openwop.interrupt(run_id, node_id, request, ordinal) → jsonb
 * ----------
 */
Datum
ow_interrupt(PG_FUNCTION_ARGS)
{
	const char *run_input;
	char	   *node_id;
	Jsonb	   *request;
	int32		ordinal;
	OwCall		call;
	OwRun		run;
	OwExec		ex;
	char	   *key;
	Jsonb	   *result;
	KeyedInterrupt ki;

	ow_refuse_read_only("interrupt()");
	if (PG_ARGISNULL(0))
		ow_validation_error("runId", "run_id must not be null");
	if (PG_ARGISNULL(1))
		ow_validation_error("nodeId", "node_id must not be null");
	if (PG_ARGISNULL(2))
		ow_validation_error("request", "request must not be null");
	ow_check_json_arg(fcinfo, 2, "request", false);
	run_input = text_to_cstring(PG_GETARG_TEXT_PP(0));
	node_id = text_to_cstring(PG_GETARG_TEXT_PP(1));
	request = PG_GETARG_JSONB_P(2);
	ordinal = PG_ARGISNULL(3) ? 0 : PG_GETARG_INT32(3);
	if (!ow_valid_author_id(node_id))
		ow_validation_error("nodeId", "\"%s\" is not a valid node id", ow_echo(node_id));
	if (ordinal < 0)
		ow_validation_error("ordinal", "ordinal must be 0 or greater, not %d", ordinal);

	ow_call_begin(&call);
	ow_lock_run(&run, call.caller.subject.tenant, run_input);
	ow_latest_exec(&run, node_id, &ex);
	if (!ex.found)
	{
		if (ow_run_is_terminal(run.status))
			ow_run_terminal(run.run_id, run.status);
		ow_node_not_found(&run, node_id, "has not been started");
	}

	/*
	 * The key of the node's latest execution.  A resolved key is replayed
	 * even when the host has since closed the execution or ended the run (a
	 * rejected gate): replay derives, never re-decides.
	 */
	key = derive_key(run.key_root, node_id, ex.visit, ordinal);

	/* the same key again: a replay or a repeated call; append nothing */
	ki.key = NULL;
	if (find_key(&run, key, &ki) ||
		find_inherited_invocation(&run, node_id, ex.visit, ordinal, &ki))
		result = replayed(&run, node_id, ki.key ? ki.key : key, &ki, request, call.callerctx);
	else
	{
		if (ow_run_is_terminal(run.status))
			ow_run_terminal(run.run_id, run.status);
		if (!ow_exec_is_open(&ex))
			ow_node_not_open(&run, node_id, &ex);
		result = ow_suspend(&run, node_id, &ex, ordinal, request, call.callerctx);
	}

	ow_call_end(&call);
	ow_call_finish(&call);
	PG_RETURN_JSONB_P(result);
}
