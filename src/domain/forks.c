/*-------------------------------------------------------------------------
 *
 * forks.c
 *	  openwop.fork_run() (forkRun, OpenWOP replay.md): a new run, in the
 *	  source's tenant, whose log begins with the source's events below the
 *	  fork point and whose state is what those events leave; and the
 *	  recorded resolutions a replay fork derives from its chain instead of
 *	  deciding them again.
 *
 * The copy is the source's events as they are (sequence, type, node,
 * payload, timestamp), under the fork's run id and event ids, with one
 * change: an interrupt id names one interrupt of one run (the token
 * surface and the FlowDrop entry look it up), so each interrupt of the
 * prefix gets an id of the fork's and the payloads naming it name that
 * one.  The state is folded from the copied events, never copied from
 * the source's tables: node executions from node.started and what ended
 * or suspended each, interrupts as the prefix leaves them (requested, or
 * resolved below the fork point), the run waiting on the latest one still
 * pending.  Votes that decided nothing are not in the log and are not
 * carried: a gate still pending in the fork counts its answers afresh.
 *
 * A replay fork's keys derive from its chain's root (eventlog.c), so
 * interrupt() re-derives the source's key; where the nearest run up the
 * chain that holds the key recorded its interrupt.resolved, the fork
 * records that resolution as it is (who resolved it, the eligibility
 * recorded, decision, action, reason, resume value) with its disposition,
 * and raises no interrupt.requested.  An interrupt the prefix leaves
 * pending whose resolution the source recorded is derived the same way
 * when the fork is made.  One the source has not resolved stays pending
 * in the fork, its own to resolve, with the source's deadline.  A branch
 * keys on itself: what its prefix leaves pending is asked anew.
 *
 * A fork point must be a state the source was in: inside one change (the
 * node.suspended of an interrupt.requested, the consequences of a
 * resolution, an escalation, the cancellations that end a run) no reader
 * ever saw the run, and a fork there would skip what the change did next
 * (a rejected gate's failed run): 422 fork_point_invalid.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "ipc/ipc.h"
#include "base/base.h"
#include "store/store.h"
#include "auth/auth.h"
#include "domain/internal.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(ow_fork_run);

/* ----------
 * The recorded resolution of a key up a replay chain
 * ----------
 */

/* The interrupt of the nearest run up the chain that holds a key. */
typedef struct Inherited
{
	char	   *run_id;
	char	   *status;
	char	   *kind;
	Jsonb	   *payload;
	int64		resolved_seq;
} Inherited;

/*
 * The interrupt of one invocation (node, visit, ordinal) of the nearest run
 * up run's replay chain (its source, then the source's source while each
 * is a replay fork): false if none holds it.  Looked up by key (the key is
 * the invocation's under the chain's root), then by invocation: what the
 * chain's last run holds from its own prefix, when it is a branch, keeps
 * the key of the branch's source, and a replay of a branch derives what
 * the branch's history recorded too.  The second statement reads each
 * chain run's interrupts; it runs only when the key finds nothing.
 */
#define CHAIN_SQL \
	"WITH RECURSIVE chain(run_id, depth) AS (" \
	"  SELECT f.source_run_id, 1 FROM openwop.forks f" \
	"   WHERE f.tenant OPERATOR(pg_catalog.=) $1 AND f.run_id OPERATOR(pg_catalog.=) $2" \
	"     AND f.mode OPERATOR(pg_catalog.=) 'replay'" \
	"  UNION ALL" \
	"  SELECT f.source_run_id, c.depth OPERATOR(pg_catalog.+) 1" \
	"    FROM chain c JOIN openwop.forks f" \
	"      ON f.tenant OPERATOR(pg_catalog.=) $1 AND f.run_id OPERATOR(pg_catalog.=) c.run_id" \
	"     AND f.mode OPERATOR(pg_catalog.=) 'replay')" \
	" SELECT i.run_id, i.status, i.kind, i.payload, i.resolved_sequence" \
	"   FROM chain c JOIN openwop.interrupts i" \
	"     ON i.tenant OPERATOR(pg_catalog.=) $1 AND i.root_run_id OPERATOR(pg_catalog.=) c.run_id"
static bool
inherited(OwRun *run, const char *key, const char *node_id, int32 visit, int32 ordinal,
		  Inherited *in)
{
	static OwQuery by_key = {
		CHAIN_SQL
		"    AND i.key OPERATOR(pg_catalog.=) $3"
		"  ORDER BY c.depth LIMIT 1",
		3, {TEXTOID, TEXTOID, TEXTOID}, SPI_OK_SELECT
	};
	static OwQuery by_invocation = {
		CHAIN_SQL
		"    AND i.node_id OPERATOR(pg_catalog.=) $3 AND i.visit OPERATOR(pg_catalog.=) $4"
		"    AND i.ordinal OPERATOR(pg_catalog.=) $5"
		"  ORDER BY c.depth LIMIT 1",
		5, {TEXTOID, TEXTOID, TEXTOID, INT4OID, INT4OID}, SPI_OK_SELECT
	};
	Datum		args[5];
	bool		isnull;
	Datum		v;

	args[0] = CStringGetTextDatum(run->tenant);
	args[1] = CStringGetTextDatum(run->run_id);
	args[2] = CStringGetTextDatum(key);
	if (ow_exec(&by_key, args, NULL, false, 1) != 1)
	{
		args[2] = CStringGetTextDatum(node_id);
		args[3] = Int32GetDatum(visit);
		args[4] = Int32GetDatum(ordinal);
		if (ow_exec(&by_invocation, args, NULL, false, 1) != 1)
			return false;
	}
	in->run_id = ow_col_text(0, 1);
	in->status = ow_col_text(0, 2);
	in->kind = ow_col_text(0, 3);
	in->payload = ow_col_jsonb(0, 4);
	v = ow_col_datum(0, 5, INT8OID, &isnull);
	in->resolved_seq = isnull ? -1 : DatumGetInt64(v);
	return true;
}
#undef CHAIN_SQL

/* The interrupt.resolved the chain recorded for in. */
static Jsonb *
recorded_resolution(const char *tenant, const Inherited *in)
{
	Jsonb	   *payload = ow_resolved_event(tenant, in->run_id, in->resolved_seq);

	if (payload == NULL)
		elog(ERROR, "run \"%s\" has no interrupt.resolved at sequence " INT64_FORMAT,
			 in->run_id, in->resolved_seq);
	return payload;
}

/* A member of a recorded payload as a string, or NULL. */
static const char *
recorded_str(Jsonb *payload, const char *key)
{
	JsonbValue *v = owj_get(payload, key);

	return v && v->type == jbvString ? owj_string(v) : NULL;
}

/*
 * Record, in the locked fork run, the resolution in recorded for its
 * pending interrupt interrupt_id: the recorded members as they are, the
 * disposition they carry (a rejection fails the node and, unless routed,
 * the run).  Nothing is decided: no eligibility, no vote, no schema.
 */
static int64
derive(OwRun *run, const char *interrupt_id, const char *node_id, int32 visit, const char *kind,
	   Jsonb *recorded)
{
	OwResolution r = {0};
	JsonbValue *rv = owj_get(recorded, "resumeValue");
	int64		seq;

	r.interrupt_id = interrupt_id;
	r.kind = kind;
	r.node_id = node_id;
	r.visit = visit;
	r.resume_value = rv ? owj_to_jsonb(rv) : NULL;
	r.decision = recorded_str(recorded, "decision");
	r.action = recorded_str(recorded, "action");
	r.reason = recorded_str(recorded, "reason");
	r.recorded = recorded;
	ItemPointerSetInvalid(&r.tid);
	ItemPointerSetInvalid(&r.open_tid);
	ItemPointerSetInvalid(&r.exec_tid);
	ow_fail_disposition(&r);
	seq = ow_record_resolution(run, &r);
	if (!r.saved)
		ow_save_run(run);
	return seq;
}

/* A replay asked for another kind of interrupt than the key was requested as: 409. */
void
ow_refuse_other_kind(const char *key, const char *stored_kind, const char *asked_kind)
{
	OwDetails	d;

	ow_details_init(&d);
	ow_details_str(&d, "key", key);
	ow_details_str(&d, "kind", stored_kind);
	ow_raise(OW_RUN_STATE_CONFLICT, &d,
			 "A replay must raise the same interrupt as the execution it replays.",
			 "key \"%s\" was requested as a %s interrupt, not %s", key, stored_kind, asked_kind);
}

/*
 * interrupt() in a replay fork, for a key the fork never requested: when
 * the nearest run up its chain that holds the key recorded a resolution,
 * the fork records it (an interrupt of its own, under the same key,
 * resolved at once with the chain's request and resolution) instead of
 * suspending.  False when nothing is recorded: the fork asks itself.
 */
bool
ow_derive_recorded(OwRun *run, const char *node_id, const OwExec *ex, int32 ordinal,
				   const char *key, const char *kind, char **interrupt_id, int64 *seq)
{
	static OwQuery insert = {
		"INSERT INTO openwop.interrupts"
		" (tenant, interrupt_id, run_id, root_run_id, node_id, visit, ordinal, key, kind, payload,"
		"  requested_sequence)"
		" VALUES ($1, $2, $3, $3, $4, $5, $6, $7, $8, $9, $10)",
		10, {TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT4OID, INT4OID, TEXTOID, TEXTOID, JSONBOID, INT8OID},
		SPI_OK_INSERT
	};
	static OwQuery carry = {
		"UPDATE openwop.node_executions SET interrupt_id = $5"
		" WHERE tenant OPERATOR(pg_catalog.=) $1 AND run_id OPERATOR(pg_catalog.=) $2"
		"   AND node_id OPERATOR(pg_catalog.=) $3 AND visit OPERATOR(pg_catalog.=) $4",
		5, {TEXTOID, TEXTOID, TEXTOID, INT4OID, TEXTOID}, SPI_OK_UPDATE
	};
	Inherited	in;
	Jsonb	   *recorded;
	Datum		args[10];
	ItemPointerData no_tid;

	if (!inherited(run, key, node_id, ex->visit, ordinal, &in) || strcmp(in.status, "resolved") != 0 ||
		in.resolved_seq < 0)
		return false;
	if (strcmp(in.kind, kind) != 0)
		ow_refuse_other_kind(key, in.kind, kind);
	recorded = recorded_resolution(run->tenant, &in);

	/* its row, open for the instant the record claims it; the request is the chain's */
	*interrupt_id = psprintf("%s/%s", run->tenant, ow_mint_interrupt_opaque());
	args[0] = CStringGetTextDatum(run->tenant);
	args[1] = CStringGetTextDatum(*interrupt_id);
	args[2] = CStringGetTextDatum(run->run_id);
	args[3] = CStringGetTextDatum(node_id);
	args[4] = Int32GetDatum(ex->visit);
	args[5] = Int32GetDatum(ordinal);
	args[6] = CStringGetTextDatum(key);
	args[7] = CStringGetTextDatum(in.kind);
	args[8] = JsonbPGetDatum(in.payload);
	args[9] = Int64GetDatum(run->next_sequence);
	(void) ow_exec(&insert, args, NULL, false, 0);
	/* written by statements: no row hints (the record that follows claims it by its indexes) */
	ItemPointerSetInvalid(&no_tid);
	ow_open_interrupt(run, *interrupt_id, node_id, ex->visit, in.kind, in.payload, NULL,
					  run->next_sequence, false, 0, &no_tid, &no_tid);
	args[3] = Int32GetDatum(ex->visit);
	args[4] = CStringGetTextDatum(*interrupt_id);
	args[2] = CStringGetTextDatum(node_id);
	args[1] = CStringGetTextDatum(run->run_id);
	(void) ow_exec(&carry, args, NULL, false, 0);
	*seq = derive(run, *interrupt_id, node_id, ex->visit, in.kind, recorded);
	return true;
}

/* ----------
 * openwop.fork_run(run_id, options)
 * ----------
 */

typedef struct ForkOptions
{
	const char *mode;			/* replay or branch */
	int64		from_seq;
	JsonbValue *configurable;	/* a branch's overlay, or NULL */
	JsonbValue *metadata;
} ForkOptions;

/*
 * options {mode, fromSeq?, runOptionsOverlay?}, closed (OpenWOP runs.md
 * "Fork"): fromSeq an integer >= 0, required for a branch, 0 for a
 * replay; the overlay {configurable?, metadata?} for a branch only, each
 * member replacing the source's.
 */
static void
read_options(Jsonb *options, ForkOptions *o)
{
	static const char *const keys[] = {"mode", "fromSeq", "runOptionsOverlay", NULL};
	static const char *const overlay_keys[] = {"configurable", "metadata", NULL};
	static const char *const modes[] = {"replay", "branch", NULL};
	JsonbValue *overlay;

	/* members named bare in a refusal ("fromSeq"), as create_run names its options */
	if (!JB_ROOT_IS_OBJECT(options))
		ow_validation_error("options", "options must be a JSON object {mode, fromSeq?, runOptionsOverlay?}");
	ow_member_closed(&options->root, keys, NULL);
	ow_member_enum(&options->root, NULL, "mode", true, modes);
	o->mode = owj_string(owj_get(options, "mode"));
	o->from_seq = ow_member_int(&options->root, NULL, "fromSeq", 0);
	if (o->from_seq < 0)
	{
		if (strcmp(o->mode, "branch") == 0)
			ow_validation_error("fromSeq", "fromSeq is required for a branch fork");
		o->from_seq = 0;
	}
	o->configurable = NULL;
	o->metadata = NULL;
	overlay = ow_member_object(&options->root, NULL, "runOptionsOverlay", false);
	if (overlay == NULL)
		return;
	if (strcmp(o->mode, "replay") == 0 && JsonContainerSize(overlay->val.binary.data) > 0)
		ow_validation_error("runOptionsOverlay",
							"runOptionsOverlay is for a branch: a replay re-executes the source's run options");
	ow_member_closed(overlay->val.binary.data, overlay_keys, "runOptionsOverlay");
	o->configurable = owj_get_container(overlay->val.binary.data, "configurable");
	if (o->configurable)
		ow_check_configurable(o->configurable);
	o->metadata = ow_member_object(overlay->val.binary.data, "runOptionsOverlay", "metadata", false);
}

static pg_noreturn void
fork_point_invalid(OwRun *source, int64 from_seq, const char *hint, const char *fmt,...)
			pg_attribute_printf(4, 5);

static void
fork_point_invalid(OwRun *source, int64 from_seq, const char *hint, const char *fmt,...)
{
	StringInfoData msg;
	OwDetails	d;

	initStringInfo(&msg);
	OW_APPEND_VA(&msg, fmt);
	ow_details_init(&d);
	ow_details_str(&d, "sourceRunId", source->run_id);
	ow_details_int(&d, "fromSeq", from_seq);
	ow_details_int(&d, "lastSequence", source->next_sequence - 1);
	ow_raise(OW_FORK_POINT_INVALID, &d, hint, "%s", msg.data);
}

/*
 * Is the state before sequence from_seq one the source was in?  The
 * event at from_seq must not continue the change of the event before it
 * (every change appends its events together, under the run lock):
 *   node.suspended         its interrupt.requested
 *   node.resumed           its interrupt.resolved
 *   node.failed            right after its node's interrupt.resolved (the disposition)
 *   interrupt.requested    low-confidence, right after its node's agent.decided (the escalation)
 *   interrupt.resolved     low-confidence, right after its node's agent.decided (an escalation
 *                          a replay derived)
 *   conversation.*         always: opened and closed follow their node.suspended, exchanged
 *                          the resolution of its turn
 *   node.cancelled, run.*  right after node.cancelled or node.failed (ending the run)
 * The last rule also refuses an ending that merely follows an earlier
 * node.failed: fork before that node.failed, or at it.
 */
static void
check_fork_point(OwRun *source, int64 from_seq)
{
	static OwQuery q = {"SELECT type, node_id, payload OPERATOR(pg_catalog.->>) 'kind'"
		"  FROM openwop.events"
		" WHERE tenant OPERATOR(pg_catalog.=) $1 AND run_id OPERATOR(pg_catalog.=) $2"
		"   AND sequence OPERATOR(pg_catalog.>=) ($3 OPERATOR(pg_catalog.-) 1)"
		"   AND sequence OPERATOR(pg_catalog.<=) $3"
		" ORDER BY sequence",
	3, {TEXTOID, TEXTOID, INT8OID}, SPI_OK_SELECT};
	Datum		args[3];
	char	   *prev;
	char	   *prev_node;
	char	   *next;
	char	   *next_node;
	char	   *next_kind;
	bool		same_node;
	bool		inside;

	if (from_seq >= source->next_sequence)
		fork_point_invalid(source, from_seq,
						   "fromSeq names the first event to re-execute: one of the source's sequences.",
						   "sequence " INT64_FORMAT " is not in the log of run \"%s\", which ends at " INT64_FORMAT,
						   from_seq, source->run_id, source->next_sequence - 1);
	if (from_seq == 0)
		return;
	args[0] = CStringGetTextDatum(source->tenant);
	args[1] = CStringGetTextDatum(source->run_id);
	args[2] = Int64GetDatum(from_seq);
	if (ow_exec(&q, args, NULL, false, 2) != 2)
		elog(ERROR, "run \"%s\" has a gap in its log at sequence " INT64_FORMAT, source->run_id, from_seq);
	prev = ow_col_text(0, 1);
	prev_node = ow_col_text(0, 2);
	next = ow_col_text(1, 1);
	next_node = ow_col_text(1, 2);
	next_kind = ow_col_text(1, 3);
	same_node = prev_node && next_node && strcmp(prev_node, next_node) == 0;

	inside = strcmp(next, "node.suspended") == 0 || strcmp(next, "node.resumed") == 0 ||
		(strcmp(next, "node.failed") == 0 && strcmp(prev, "interrupt.resolved") == 0 && same_node) ||
		((strcmp(next, "interrupt.requested") == 0 || strcmp(next, "interrupt.resolved") == 0) &&
		 strcmp(prev, "agent.decided") == 0 && same_node &&
		 next_kind && strcmp(next_kind, "low-confidence") == 0) ||
		strncmp(next, "conversation.", 13) == 0 ||
		((strcmp(next, "node.cancelled") == 0 || strncmp(next, "run.", 4) == 0) &&
		 (strcmp(prev, "node.cancelled") == 0 || strcmp(prev, "node.failed") == 0));
	if (inside)
		fork_point_invalid(source, from_seq,
						   "Fork at the first event of a change, or after its last.",
						   "sequence " INT64_FORMAT " of run \"%s\" (%s) continues the change that appended %s: the run was never in the state before it",
						   from_seq, source->run_id, next, prev);
}

/* The source's interrupts requested below the fork point, each with a fresh id for the fork. */
static void
fork_interrupt_ids(OwRun *source, int64 from_seq, Datum *source_ids, Datum *fork_ids)
{
	static OwQuery q = {"SELECT interrupt_id FROM openwop.interrupts"
		" WHERE tenant OPERATOR(pg_catalog.=) $1 AND root_run_id OPERATOR(pg_catalog.=) $2"
		"   AND run_id OPERATOR(pg_catalog.=) $2"
		"   AND requested_sequence OPERATOR(pg_catalog.<) $3",
	3, {TEXTOID, TEXTOID, INT8OID}, SPI_OK_SELECT};
	Datum		args[3];
	uint64		n;
	uint64		i;
	Datum	   *src;
	Datum	   *dst;

	args[0] = CStringGetTextDatum(source->tenant);
	args[1] = CStringGetTextDatum(source->run_id);
	args[2] = Int64GetDatum(from_seq);
	n = ow_exec(&q, args, NULL, false, 0);
	src = palloc(sizeof(Datum) * (n + 1));
	dst = palloc(sizeof(Datum) * (n + 1));
	for (i = 0; i < n; i++)
	{
		src[i] = CStringGetTextDatum(ow_col_text(i, 1));
		dst[i] = CStringGetTextDatum(psprintf("%s/%s", source->tenant, ow_mint_interrupt_opaque()));
	}
	source_ids[0] = PointerGetDatum(construct_array(src, (int) n, TEXTOID, -1, false, TYPALIGN_INT));
	fork_ids[0] = PointerGetDatum(construct_array(dst, (int) n, TEXTOID, -1, false, TYPALIGN_INT));
}

/*
 * Copy the prefix and fold it: the fork's interrupts (fresh ids, as the
 * prefix leaves them), their open rows, the events (their payloads naming
 * the fork's interrupt ids), the node executions folded from the copied
 * events.  $1 tenant, $2 source, $3 fork, $4 fromSeq, $5/$6 the source's
 * interrupt ids and the fork's, $7/$8 the source's and the fork's event
 * prefixes.
 */
static void
copy_prefix(OwRun *source, const char *fork_id, const char *fork_prefix, int64 from_seq)
{
#define FORK_TYPES {TEXTOID, TEXTOID, TEXTOID, INT8OID, TEXTARRAYOID, TEXTARRAYOID, TEXTOID, TEXTOID}
#define IN_PREFIX "i.status OPERATOR(pg_catalog.=) 'resolved'" \
	" AND i.resolved_sequence OPERATOR(pg_catalog.<) $4"
	static OwQuery interrupts = {
		"INSERT INTO openwop.interrupts"
		" (tenant, interrupt_id, run_id, root_run_id, node_id, visit, ordinal, key, kind, payload,"
		"  status, expires_at, requested_sequence, resolved_sequence, resume_value, decision, action,"
		"  reason, resolved_by, created_at, resolved_at, policy)"
		" SELECT i.tenant, m.fork_id, $3, $3, i.node_id, i.visit, i.ordinal, i.key, i.kind, i.payload,"
		"        CASE WHEN " IN_PREFIX " THEN 'resolved' ELSE 'pending' END, i.expires_at,"
		"        i.requested_sequence,"
		"        CASE WHEN " IN_PREFIX " THEN i.resolved_sequence END,"
		"        CASE WHEN " IN_PREFIX " THEN i.resume_value END,"
		"        CASE WHEN " IN_PREFIX " THEN i.decision END,"
		"        CASE WHEN " IN_PREFIX " THEN i.action END,"
		"        CASE WHEN " IN_PREFIX " THEN i.reason END,"
		"        CASE WHEN " IN_PREFIX " THEN i.resolved_by END,"
		"        i.created_at,"
		"        CASE WHEN " IN_PREFIX " THEN i.resolved_at END,"
		"        i.policy"
		"   FROM ROWS FROM (pg_catalog.unnest($5), pg_catalog.unnest($6)) AS m(source_id, fork_id)"
		"   JOIN openwop.interrupts i ON i.tenant OPERATOR(pg_catalog.=) $1"
		"    AND i.interrupt_id OPERATOR(pg_catalog.=) m.source_id",
		8, FORK_TYPES, SPI_OK_INSERT
	};
	static OwQuery open = {
		"INSERT INTO openwop.open_interrupts"
		" (tenant, interrupt_id, run_id, node_id, visit, kind, payload, status, requested_sequence,"
		"  created_at, expires_at, policy)"
		" SELECT tenant, interrupt_id, run_id, node_id, visit, kind, payload, status, requested_sequence,"
		"        created_at, expires_at, policy"
		"   FROM openwop.interrupts"
		"  WHERE tenant OPERATOR(pg_catalog.=) $1 AND root_run_id OPERATOR(pg_catalog.=) $2"
		"    AND run_id OPERATOR(pg_catalog.=) $2 AND status OPERATOR(pg_catalog.=) 'pending'",
		2, {TEXTOID, TEXTOID}, SPI_OK_INSERT
	};
	/* the copies are chained anew: an interrupt's id and a cause are the fork's */
	static OwQuery events = {
		"INSERT INTO openwop.events"
		" (tenant, run_id, sequence, type, node_id, payload, created_at, schema_version, causation_id,"
		"  hash)"
		" SELECT c.tenant, $3, c.sequence, c.type, c.node_id, c.payload, c.created_at, c.schema_version,"
		"        c.causation_id,"
		"        openwop.event_chain(c.sequence, c.type, c.node_id, c.payload, c.created_at,"
		"                            c.schema_version, c.causation_id)"
		"          OVER (ORDER BY c.sequence ROWS UNBOUNDED PRECEDING)"
		"   FROM (SELECT e.tenant, e.sequence, e.type, e.node_id,"
		"                CASE WHEN m.fork_id IS NULL THEN e.payload"
		"                     ELSE pg_catalog.jsonb_set(e.payload, '{interruptId}', pg_catalog.to_jsonb(m.fork_id))"
		"                END AS payload,"
		"                e.created_at, e.schema_version,"
		"                CASE WHEN pg_catalog.starts_with(e.causation_id, $7 OPERATOR(pg_catalog.||) '.')"
		"                     THEN $8 OPERATOR(pg_catalog.||)"
		"                          pg_catalog.substr(e.causation_id, pg_catalog.length($7) OPERATOR(pg_catalog.+) 1)"
		"                     ELSE e.causation_id END AS causation_id"
		"           FROM openwop.events e"
		"           LEFT JOIN ROWS FROM (pg_catalog.unnest($5), pg_catalog.unnest($6)) AS m(source_id, fork_id)"
		"             ON m.source_id OPERATOR(pg_catalog.=) (e.payload OPERATOR(pg_catalog.->>) 'interruptId')"
		"          WHERE e.tenant OPERATOR(pg_catalog.=) $1 AND e.run_id OPERATOR(pg_catalog.=) $2"
		"            AND e.sequence OPERATOR(pg_catalog.<) $4) c",
		8, FORK_TYPES, SPI_OK_INSERT
	};
	/*
	 * each execution: its node.started, and the last event that ended or
	 * suspended it.  A searched CASE: the simple form (CASE x WHEN ...)
	 * looks "=" up on the caller's search_path, in a statement run as the
	 * extension's owner.
	 */
	static OwQuery executions = {
		"INSERT INTO openwop.node_executions"
		" (tenant, run_id, node_id, visit, type_id, status, attempt, outputs, error, interrupt_id,"
		"  ended_sequence, started_at, ended_at)"
		" WITH ev AS ("
		"  SELECT e.sequence, e.type, e.node_id, e.payload, e.created_at,"
		"         pg_catalog.count(*) FILTER (WHERE e.type OPERATOR(pg_catalog.=) 'node.started')"
		"           OVER (PARTITION BY e.node_id ORDER BY e.sequence) OPERATOR(pg_catalog.-) 1 AS visit"
		"    FROM openwop.events e"
		"   WHERE e.tenant OPERATOR(pg_catalog.=) $1 AND e.run_id OPERATOR(pg_catalog.=) $2"
		"     AND e.node_id IS NOT NULL),"
		" last AS ("
		"  SELECT DISTINCT ON (node_id, visit) node_id, visit, type, payload, sequence, created_at"
		"    FROM ev WHERE type OPERATOR(pg_catalog.=) ANY"
		"      ('{node.suspended,interrupt.resolved,node.completed,node.failed,node.cancelled,node.skipped}'::pg_catalog.text[])"
		"   ORDER BY node_id, visit, sequence DESC),"
		" raised AS ("
		"  SELECT DISTINCT ON (node_id, visit) node_id, visit,"
		"         payload OPERATOR(pg_catalog.->>) 'interruptId' AS interrupt_id"
		"    FROM ev WHERE type OPERATOR(pg_catalog.=) 'node.suspended'"
		"   ORDER BY node_id, visit, sequence DESC)"
		" SELECT $1, $2, s.node_id, s.visit::pg_catalog.int4,"
		"        COALESCE(s.payload OPERATOR(pg_catalog.->>) 'typeId', 'openwop_interrupt.unspecified'),"
		"        CASE WHEN l.type OPERATOR(pg_catalog.=) 'node.suspended' THEN 'interrupted'"
		"             WHEN l.type OPERATOR(pg_catalog.=) 'interrupt.resolved' THEN 'pending'"
		"             WHEN l.type OPERATOR(pg_catalog.=) 'node.completed' THEN 'completed'"
		"             WHEN l.type OPERATOR(pg_catalog.=) 'node.failed' THEN 'failed'"
		"             WHEN l.type OPERATOR(pg_catalog.=) 'node.cancelled' THEN 'cancelled'"
		"             WHEN l.type OPERATOR(pg_catalog.=) 'node.skipped' THEN 'skipped'"
		"             ELSE 'running' END,"
		"        COALESCE((s.payload OPERATOR(pg_catalog.->>) 'attempt')::pg_catalog.int4, 0),"
		"        CASE WHEN l.type OPERATOR(pg_catalog.=) 'node.completed' THEN l.payload OPERATOR(pg_catalog.->) 'outputs' END,"
		"        CASE WHEN l.type OPERATOR(pg_catalog.=) 'node.failed' THEN l.payload OPERATOR(pg_catalog.->) 'error' END,"
		"        x.interrupt_id,"
		"        CASE WHEN l.type OPERATOR(pg_catalog.=) ANY ('{node.completed,node.failed}'::pg_catalog.text[])"
		"             THEN l.sequence END,"
		"        s.created_at,"
		"        CASE WHEN l.type OPERATOR(pg_catalog.=) ANY"
		"                  ('{node.completed,node.failed,node.cancelled,node.skipped}'::pg_catalog.text[])"
		"             THEN l.created_at END"
		"   FROM ev s"
		"   LEFT JOIN last l ON l.node_id OPERATOR(pg_catalog.=) s.node_id AND l.visit OPERATOR(pg_catalog.=) s.visit"
		"   LEFT JOIN raised x ON x.node_id OPERATOR(pg_catalog.=) s.node_id AND x.visit OPERATOR(pg_catalog.=) s.visit"
		"  WHERE s.type OPERATOR(pg_catalog.=) 'node.started'",
		2, {TEXTOID, TEXTOID}, SPI_OK_INSERT
	};
#undef IN_PREFIX
#undef FORK_TYPES
	Datum		args[8];

	args[0] = CStringGetTextDatum(source->tenant);
	args[1] = CStringGetTextDatum(source->run_id);
	args[2] = CStringGetTextDatum(fork_id);
	args[3] = Int64GetDatum(from_seq);
	fork_interrupt_ids(source, from_seq, &args[4], &args[5]);
	args[6] = CStringGetTextDatum(source->event_prefix);
	args[7] = CStringGetTextDatum(fork_prefix);
	(void) ow_exec(&interrupts, args, NULL, false, 0);
	(void) ow_exec(&events, args, NULL, false, 0);
	args[1] = args[2];
	(void) ow_exec(&open, args, NULL, false, 0);
	(void) ow_exec(&executions, args, NULL, false, 0);
}

/*
 * The fork's run row (and its row in openwop.forks): the source's
 * workflow, owner (copied as it is: OpenWOP runs.md "Fork"), definition
 * and inputs; the overlay's configurable and metadata, else the source's;
 * waiting on the latest interrupt the prefix leaves pending, else running,
 * on the node the prefix last started, suspended or resumed that is still
 * open.
 */
static void
insert_fork(OwRun *source, const char *fork_id, const char *prefix, const ForkOptions *o)
{
	static OwQuery waiting = {"SELECT kind, node_id FROM openwop.open_interrupts"
		" WHERE tenant OPERATOR(pg_catalog.=) $1 AND run_id OPERATOR(pg_catalog.=) $2"
		"   AND status OPERATOR(pg_catalog.=) 'pending'"
		" ORDER BY requested_sequence DESC LIMIT 1",
	2, {TEXTOID, TEXTOID}, SPI_OK_SELECT};
	static OwQuery current = {"SELECT e.node_id FROM openwop.events e"
		" WHERE e.tenant OPERATOR(pg_catalog.=) $1 AND e.run_id OPERATOR(pg_catalog.=) $2"
		"   AND e.type OPERATOR(pg_catalog.=) ANY"
		"       ('{node.started,node.suspended,interrupt.resolved}'::pg_catalog.text[])"
		"   AND EXISTS (SELECT FROM openwop.node_executions x"
		"                WHERE x.tenant OPERATOR(pg_catalog.=) $1 AND x.run_id OPERATOR(pg_catalog.=) $2"
		"                  AND x.node_id OPERATOR(pg_catalog.=) e.node_id"
		"                  AND x.status OPERATOR(pg_catalog.=) ANY"
		"                      ('{running,interrupted,pending}'::pg_catalog.text[]))"
		" ORDER BY e.sequence DESC LIMIT 1",
	2, {TEXTOID, TEXTOID}, SPI_OK_SELECT};
	static OwQuery insert_run = {
		"INSERT INTO openwop.runs"
		" (tenant, run_id, workflow_id, status, current_node_id, owner, configurable, definition,"
		"  inputs, metadata, next_sequence, event_prefix, fork_of, requested_by, event_hash)"
		" SELECT tenant, $3, workflow_id, $4, $5, owner, COALESCE($6, configurable), definition,"
		"        inputs, COALESCE($7, metadata), $8, $9, run_id, requested_by,"
		"        (SELECT e.hash FROM openwop.events e"
		"          WHERE e.tenant OPERATOR(pg_catalog.=) $1 AND e.run_id OPERATOR(pg_catalog.=) $3"
		"            AND e.sequence OPERATOR(pg_catalog.=) ($8 OPERATOR(pg_catalog.-) 1))"
		"   FROM openwop.runs"
		"  WHERE tenant OPERATOR(pg_catalog.=) $1 AND run_id OPERATOR(pg_catalog.=) $2",
		9, {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID, JSONBOID, JSONBOID, INT8OID, TEXTOID},
		SPI_OK_INSERT
	};
	static OwQuery insert_forks = {
		"INSERT INTO openwop.forks (tenant, run_id, source_run_id, mode, from_sequence, key_root)"
		" VALUES ($1, $2, $3, $4, $5, $6)",
		6, {TEXTOID, TEXTOID, TEXTOID, TEXTOID, INT8OID, TEXTOID}, SPI_OK_INSERT
	};
	Datum		args[9];
	char		nulls[9];
	const char *status = "running";
	char	   *node = NULL;

	args[0] = CStringGetTextDatum(source->tenant);
	args[1] = CStringGetTextDatum(fork_id);
	if (ow_exec(&waiting, args, NULL, false, 1) == 1)
	{
		status = ow_waiting_status(ow_col_text(0, 1));
		node = ow_col_text(0, 2);
	}
	else if (ow_exec(&current, args, NULL, false, 1) == 1)
		node = ow_col_text(0, 1);

	memset(nulls, ' ', sizeof(nulls));
	args[1] = CStringGetTextDatum(source->run_id);
	args[2] = CStringGetTextDatum(fork_id);
	args[3] = CStringGetTextDatum(status);
	args[4] = node ? CStringGetTextDatum(node) : (Datum) 0;
	nulls[4] = node ? ' ' : 'n';
	args[5] = o->configurable ? JsonbPGetDatum(owj_to_jsonb(o->configurable)) : (Datum) 0;
	nulls[5] = o->configurable ? ' ' : 'n';
	args[6] = o->metadata ? JsonbPGetDatum(owj_to_jsonb(o->metadata)) : (Datum) 0;
	nulls[6] = o->metadata ? ' ' : 'n';
	args[7] = Int64GetDatum(o->from_seq);
	args[8] = CStringGetTextDatum(prefix);
	if (ow_exec(&insert_run, args, nulls, false, 0) != 1)
		elog(ERROR, "could not create fork \"%s\" of run \"%s\"", fork_id, source->run_id);

	args[1] = CStringGetTextDatum(fork_id);
	args[2] = CStringGetTextDatum(source->run_id);
	args[3] = CStringGetTextDatum(o->mode);
	args[4] = Int64GetDatum(o->from_seq);
	/* a replay keys at its source's root, a branch at itself */
	args[5] = CStringGetTextDatum(strcmp(o->mode, "replay") == 0 ? source->key_root : fork_id);
	(void) ow_exec(&insert_forks, args, NULL, false, 0);
}

/* A pending interrupt of the new fork, copied before derivation. */
typedef struct ForkPending
{
	char	   *interrupt_id;
	char	   *node_id;
	char	   *kind;
	char	   *key;
	int32		visit;
	int32		ordinal;
} ForkPending;

/*
 * A replay fork derives at once what its chain recorded for the
 * interrupts its prefix leaves pending, in the order they were recorded,
 * until the run ends (a rejection fails it).
 */
static void
derive_pending(OwRun *fork)
{
	static OwQuery q = {"SELECT interrupt_id, node_id, kind, key, visit, ordinal FROM openwop.interrupts"
		" WHERE tenant OPERATOR(pg_catalog.=) $1 AND root_run_id OPERATOR(pg_catalog.=) $2"
		"   AND run_id OPERATOR(pg_catalog.=) $2 AND status OPERATOR(pg_catalog.=) 'pending'",
	2, {TEXTOID, TEXTOID}, SPI_OK_SELECT};
	uint64		n = ow_run_exec(&q, fork, NULL, false, 0);
	ForkPending *p = palloc(sizeof(ForkPending) * (n + 1));
	Inherited  *in = palloc(sizeof(Inherited) * (n + 1));
	bool	   *recorded = palloc0(sizeof(bool) * (n + 1));
	uint64		i;

	for (i = 0; i < n; i++)
	{
		p[i].interrupt_id = ow_col_text(i, 1);
		p[i].node_id = ow_col_text(i, 2);
		p[i].kind = ow_col_text(i, 3);
		p[i].key = ow_col_text(i, 4);
		p[i].visit = (int32) ow_col_int64(i, 5);
		p[i].ordinal = (int32) ow_col_int64(i, 6);
	}
	for (i = 0; i < n; i++)
		recorded[i] = inherited(fork, p[i].key, p[i].node_id, p[i].visit, p[i].ordinal, &in[i]) &&
			strcmp(in[i].status, "resolved") == 0 &&
			in[i].resolved_seq >= 0;
	for (;;)
	{
		int64		first = -1;
		uint64		k = 0;

		for (i = 0; i < n; i++)
			if (recorded[i] && (first < 0 || in[i].resolved_seq < in[k].resolved_seq))
			{
				first = in[i].resolved_seq;
				k = i;
			}
		if (first < 0 || ow_run_is_terminal(fork->status))
			break;
		recorded[k] = false;
		(void) derive(fork, p[k].interrupt_id, p[k].node_id, p[k].visit, p[k].kind,
					  recorded_resolution(fork->tenant, &in[k]));
	}
}

/* The source's run.started, re-executed as the fork's first event (fromSeq 0). */
static void
restart(OwRun *source, OwRun *fork, const ForkOptions *o)
{
	static OwQuery q = {"SELECT payload FROM openwop.events"
		" WHERE tenant OPERATOR(pg_catalog.=) $1 AND run_id OPERATOR(pg_catalog.=) $2"
		"   AND sequence OPERATOR(pg_catalog.=) 0",
	2, {TEXTOID, TEXTOID}, SPI_OK_SELECT};
	static const char *const replaced[] = {"metadata", NULL};
	Jsonb	   *started;
	OwJson		j;

	if (ow_run_exec(&q, source, NULL, false, 1) != 1)
		elog(ERROR, "run \"%s\" has no first event", source->run_id);
	started = ow_col_jsonb(0, 1);
	if (o->metadata)
	{
		owj_begin(&j);
		owj_members_except(&j, started, replaced);
		owj_value(&j, "metadata", o->metadata);
		started = owj_end(&j);
	}
	(void) ow_append(fork, "run.started", NULL, started);
	ow_save_run(fork);
}

/*
 * A conversation belongs to the run that opened it (conversations.c): a
 * fork holds its prefix's conversation events but not the conversation,
 * so a conversation interrupt its prefix leaves pending, and it does not
 * derive at once, is one no one could resolve.  Refused: 422, nothing
 * made.
 */
static void
check_no_conversation_step(OwRun *source, OwRun *fork, int64 from_seq)
{
	static OwQuery q = {"SELECT kind, node_id FROM openwop.open_interrupts"
		" WHERE tenant OPERATOR(pg_catalog.=) $1 AND run_id OPERATOR(pg_catalog.=) $2"
		"   AND pg_catalog.starts_with(kind, 'conversation.')"
		" LIMIT 1",
	2, {TEXTOID, TEXTOID}, SPI_OK_SELECT};

	if (ow_run_exec(&q, fork, NULL, false, 1) == 1)
		fork_point_invalid(source, from_seq,
						   "Fork before the conversation interrupt was requested, or after it was resolved.",
						   "run \"%s\" waits on a %s interrupt of node \"%s\" at sequence " INT64_FORMAT
						   ": a fork cannot take a step of its source's conversation",
						   source->run_id, ow_col_text(0, 1), ow_col_text(0, 2), from_seq);
}

/*
 * The fork's gates still pending under a pin keep its schedule: their
 * reminders and escalations are planned for the fork's gate, at the pinned
 * instants (one already past fires at the worker's next pass).
 */
static void
plan_pinned_steps(OwRun *fork)
{
	static OwQuery q = {"SELECT interrupt_id, policy FROM openwop.open_interrupts"
		" WHERE tenant OPERATOR(pg_catalog.=) $1 AND run_id OPERATOR(pg_catalog.=) $2"
		"   AND status OPERATOR(pg_catalog.=) 'pending' AND policy IS NOT NULL",
	2, {TEXTOID, TEXTOID}, SPI_OK_SELECT};
	uint64		n = ow_run_exec(&q, fork, NULL, false, 0);
	char	  **ids = palloc(sizeof(char *) * (n + 1));
	Jsonb	  **pins = palloc(sizeof(Jsonb *) * (n + 1));
	uint64		i;

	for (i = 0; i < n; i++)
	{
		ids[i] = ow_col_text(i, 1);
		pins[i] = ow_col_jsonb(i, 2);
	}
	for (i = 0; i < n; i++)
		ow_plan_gate_steps(fork, ids[i], pins[i]);
}

/*
 * openwop.fork_run(run_id, options) → jsonb: {runId, sourceRunId, mode,
 * fromSeq, status, workflowId, sequence}.
 */
Datum
ow_fork_run(PG_FUNCTION_ARGS)
{
	static OwQuery deadlines = {"SELECT 1 FROM openwop.open_interrupts"
		" WHERE tenant OPERATOR(pg_catalog.=) $1 AND run_id OPERATOR(pg_catalog.=) $2"
		"   AND expires_at IS NOT NULL LIMIT 1",
	2, {TEXTOID, TEXTOID}, SPI_OK_SELECT};
	char	   *run_input;
	Jsonb	   *options;
	ForkOptions o;
	OwCall		call;
	OwRun		source;
	OwRun		fork;
	char	   *fork_id;
	char	   *prefix;
	OwJson		j;
	Jsonb	   *result;

	ow_refuse_read_only("fork_run()");
	if (PG_ARGISNULL(0))
		ow_validation_error("runId", "run_id must not be null");
	if (PG_ARGISNULL(1))
		ow_validation_error("options", "options must not be null: {mode, fromSeq?, runOptionsOverlay?}");
	ow_check_json_arg(fcinfo, 1, "options", false);
	run_input = text_to_cstring(PG_GETARG_TEXT_PP(0));
	options = PG_GETARG_JSONB_P(1);
	read_options(options, &o);

	ow_call_begin(&call);
	/* the source's writers wait: what its prefix leaves pending is read as it stands */
	ow_lock_run(&source, call.caller.subject.tenant, run_input);
	check_fork_point(&source, o.from_seq);

	fork_id = psprintf("%s/%s", source.tenant, ow_mint_opaque(16));
	prefix = ow_mint_opaque(12);
	copy_prefix(&source, fork_id, prefix, o.from_seq);
	insert_fork(&source, fork_id, prefix, &o);
	ow_lock_run_id(&fork, source.tenant, fork_id);
	if (o.from_seq == 0)
		restart(&source, &fork, &o);
	else if (strcmp(o.mode, "replay") == 0)
		derive_pending(&fork);
	check_no_conversation_step(&source, &fork, o.from_seq);
	/*
	 * One notification of the fork: from the fork point on, what the fork
	 * appended itself; its copied history is never announced as new.
	 */
	if (fork.appended == 0)
		ow_notify_later(fork.run_id, o.from_seq, o.from_seq - 1);
	if (ow_run_exec(&deadlines, &fork, NULL, false, 1) == 1)
		ow_deadline_raised();	/* the timeout worker learns of the copied deadlines */
	plan_pinned_steps(&fork);

	ow_call_end(&call);
	owj_begin(&j);
	owj_str(&j, "runId", fork.run_id);
	owj_str(&j, "sourceRunId", source.run_id);
	owj_str(&j, "mode", o.mode);
	owj_int(&j, "fromSeq", o.from_seq);
	owj_str(&j, "status", fork.status);
	owj_str(&j, "workflowId", source.workflow_id);
	owj_int(&j, "sequence", fork.next_sequence - 1);
	result = owj_end(&j);
	ow_call_finish(&call);
	PG_RETURN_JSONB_P(result);
}
