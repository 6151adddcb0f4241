/*-------------------------------------------------------------------------
 *
 * conversations.c
 *	  The conversation kinds (conversation.start, .exchange, .close: the
 *	  conversationPrimitive capability) over openwop.conversations: a
 *	  conversation id unique in its tenant, turns with a strictly monotonic
 *	  turnIndex, nothing after close, and the conversation.opened,
 *	  .exchanged and .closed events.
 *
 * A conversation belongs to the run that opened it, and every change to it
 * is made under that run's lock: raising one of its interrupts
 * (ow_conversation_raise, ow_conversation_announce) or resolving one
 * (ow_conversation_answered).  The one change made outside that lock, a
 * conversation.start in another run of the tenant, only inserts: the
 * primary key (tenant, conversation_id) leaves one winner.  A conversation
 * takes one step at a time: while one of its interrupts is pending nothing
 * else is raised on it, so its turns complete in turnIndex order and no
 * turn completes after its close.  Replays never come here: a key already
 * requested derives its recorded answer (interrupts.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/base.h"
#include "store/store.h"
#include "domain/internal.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"

/* A refusal about conversation c of the locked run: 409, or 404 when it is not the run's. */
static pg_noreturn void
refuse(OwRun *run, OwError error, const OwConversation *c, const char *hint, const char *fmt,...)
pg_attribute_printf(5, 6);

static void
refuse(OwRun *run, OwError error, const OwConversation *c, const char *hint, const char *fmt,...)
{
	StringInfoData msg;
	OwDetails	d;

	initStringInfo(&msg);
	OW_APPEND_VA(&msg, fmt);
	ow_details_init(&d);
	ow_details_str(&d, "runId", run->run_id);
	if (error == OW_RUN_STATE_CONFLICT)
		ow_details_str(&d, "runStatus", run->status);
	ow_details_str(&d, "conversationId", c->conversation_id);
	if (c->turn_index >= 0)
		ow_details_int(&d, "turnIndex", c->turn_index);
	if (c->last_turn_index >= 0)
		ow_details_int(&d, "lastTurnIndex", c->last_turn_index);
	ow_raise(error, &d, hint, "%s", msg.data);
}

/* Run q ($1 tenant, $2 conversation id, then args) for conversation c of the run. */
static uint64
conversation_exec(OwQuery *q, OwRun *run, const OwConversation *c, Datum *args, bool read_only)
{
	args[0] = CStringGetTextDatum(run->tenant);
	args[1] = CStringGetTextDatum(c->conversation_id);
	return ow_exec(q, args, NULL, read_only, 0);
}

/*
 * conversation.start: claim the id for the run, pending on interrupt_id.
 * Of two runs opening one id at once, the second waits for the first and
 * then finds it taken, as ON CONFLICT DO NOTHING does.
 */
static void
open_conversation(OwRun *run, OwConversation *c, const char *interrupt_id)
{
	static OwQuery q = {"INSERT INTO openwop.conversations"
		" (tenant, conversation_id, run_id, pending_interrupt_id)"
		" VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
	4, {TEXTOID, TEXTOID, TEXTOID, TEXTOID}, SPI_OK_INSERT};
	Datum		args[4];

	args[2] = CStringGetTextDatum(run->run_id);
	args[3] = CStringGetTextDatum(interrupt_id);
	if (conversation_exec(&q, run, c, args, false) != 1)
		refuse(run, OW_RUN_STATE_CONFLICT, c,
			   "A conversation id names one conversation of the tenant, for ever: choose another.",
			   "conversation \"%s\" already exists", c->conversation_id);
}

/*
 * conversation.exchange or .close: the conversation must be the run's,
 * open and waiting on nothing; an exchange's turn must come after the
 * latest (its index is derived when the request has none).  Then the row
 * records the step, pending on interrupt_id.
 */
static void
step_conversation(OwRun *run, OwConversation *c, const char *interrupt_id, JsonbContainer *data)
{
	static OwQuery read = {"SELECT run_id, state, last_turn_index, turn_count, pending_interrupt_id"
		"  FROM openwop.conversations"
		" WHERE tenant OPERATOR(pg_catalog.=) $1"
		"   AND conversation_id OPERATOR(pg_catalog.=) $2",
	2, {TEXTOID, TEXTOID}, SPI_OK_SELECT};
	static OwQuery turn = {"UPDATE openwop.conversations"
		"   SET last_turn_index = $3, pending_interrupt_id = $4"
		" WHERE tenant OPERATOR(pg_catalog.=) $1"
		"   AND conversation_id OPERATOR(pg_catalog.=) $2",
	4, {TEXTOID, TEXTOID, INT4OID, TEXTOID}, SPI_OK_UPDATE};
	static OwQuery close = {"UPDATE openwop.conversations"
		"   SET state = 'closed', closed_at = pg_catalog.now(), pending_interrupt_id = $3"
		" WHERE tenant OPERATOR(pg_catalog.=) $1"
		"   AND conversation_id OPERATOR(pg_catalog.=) $2",
	3, {TEXTOID, TEXTOID, TEXTOID}, SPI_OK_UPDATE};
	Datum		args[4];
	bool		isnull;
	char	   *pending;
	int64		asked;

	/*
	 * Not read-only: a read-only statement would see the calling
	 * statement's snapshot, taken before the run lock was granted, and miss
	 * a step another node of the run committed while this call waited for
	 * that lock (it would then overwrite the step's pending interrupt, take
	 * its turn index again, or take a turn after its close).  A new snapshot
	 * sees every step, as all of them are made under the lock now held.
	 */
	if (conversation_exec(&read, run, c, args, false) == 0 || strcmp(ow_col_text(0, 1), run->run_id) != 0)
		refuse(run, OW_NOT_FOUND, c, "Open it with a conversation.start interrupt of this run first.",
			   "conversation \"%s\" was never opened in run \"%s\"", c->conversation_id, run->run_id);
	(void) ow_col_datum(0, 3, INT4OID, &isnull);
	c->last_turn_index = isnull ? -1 : ow_col_int64(0, 3);
	c->turn_count = (int32) ow_col_int64(0, 4);
	pending = ow_col_text(0, 5);
	if (strcmp(ow_col_text(0, 2), "closed") == 0)
		refuse(run, OW_RUN_STATE_CONFLICT, c, "No turn follows conversation.close in the run.",
			   "conversation \"%s\" is closed", c->conversation_id);
	if (pending)
		refuse(run, OW_RUN_STATE_CONFLICT, c,
			   "A conversation takes one step at a time: resolve its pending interrupt first.",
			   "conversation \"%s\" still waits on interrupt \"%s\"", c->conversation_id, pending);

	args[2] = CStringGetTextDatum(interrupt_id);
	if (c->close)
	{
		if (conversation_exec(&close, run, c, args, false) != 1)
			ow_row_changed_meanwhile("conversations");
		return;
	}

	asked = ow_member_int(data, "data", "turnIndex", 0);
	if (asked >= 0)
	{
		c->turn_index = (int32) asked;
		if (asked <= c->last_turn_index)
			refuse(run, OW_RUN_STATE_CONFLICT, c,
				   "turnIndex is strictly monotonic: give a greater one, or omit it and the host derives it.",
				   "turn %d of conversation \"%s\" does not come after its turn %d",
				   c->turn_index, c->conversation_id, (int) c->last_turn_index);
	}
	else if (c->last_turn_index == PG_INT32_MAX)
		refuse(run, OW_RUN_STATE_CONFLICT, c, NULL,
			   "conversation \"%s\" has used its last turn index", c->conversation_id);
	else
	{
		c->turn_index = (int32) (c->last_turn_index + 1);
		c->derived = true;
	}
	args[2] = Int32GetDatum(c->turn_index);
	args[3] = CStringGetTextDatum(interrupt_id);
	if (conversation_exec(&turn, run, c, args, false) != 1)
		ow_row_changed_meanwhile("conversations");
}

/*
 * The payload recorded for an exchange whose turnIndex the host derived:
 * the request's, with data.turnIndex filled in (as the key is), so the log
 * alone says which turn it is.
 */
static Jsonb *
with_turn_index(Jsonb *payload, int32 turn_index)
{
	static const char *const data_key[] = {"data", NULL};
	OwJson		j;

	owj_begin(&j);
	owj_members_except(&j, payload, data_key);
	owj_begin_object(&j, "data");
	owj_members(&j, owj_to_jsonb(owj_get(payload, "data")));
	owj_int(&j, "turnIndex", turn_index);
	owj_end_object(&j);
	return owj_end(&j);
}

/*
 * A conversation interrupt of kind about to be raised on interrupt_id by
 * the locked run (payload checked by kinds.c): check it against the
 * run's conversations and record the step.  Returns the payload to
 * record (an exchange's with its turnIndex) and fills c for
 * ow_conversation_announce.  Refusals: 404 not_found for a conversation
 * the run never opened; 409 run_state_conflict for an id taken, a conversation closed
 * or still waiting, a turnIndex that does not go forward.
 */
Jsonb *
ow_conversation_raise(OwRun *run, const char *kind, Jsonb *payload, const char *interrupt_id,
					  OwConversation *c)
{
	JsonbContainer *data = owj_get(payload, "data")->val.binary.data;

	memset(c, 0, sizeof(*c));
	c->conversation_id = owj_string(owj_get_container(data, "conversationId"));
	c->start = strcmp(kind, "conversation.start") == 0;
	c->close = strcmp(kind, "conversation.close") == 0;
	c->reason = owj_string(owj_get_container(data, "reason"));
	c->turn_index = -1;
	c->last_turn_index = -1;
	if (c->start)
		open_conversation(run, c, interrupt_id);
	else
		step_conversation(run, c, interrupt_id, data);
	return c->derived ? with_turn_index(payload, c->turn_index) : payload;
}

/*
 * After node.suspended (at suspended_seq) of a conversation.start or
 * .close: conversation.opened {conversationId} or conversation.closed
 * {conversationId, reason?, turnCount}, caused by that node.suspended.
 */
void
ow_conversation_announce(OwRun *run, const char *node_id, const OwConversation *c, int64 suspended_seq)
{
	OwJson		j;

	if (!c->start && !c->close)
		return;
	owj_begin(&j);
	owj_str(&j, "conversationId", c->conversation_id);
	if (c->close)
	{
		if (c->reason)
			owj_str(&j, "reason", c->reason);
		owj_int(&j, "turnCount", c->turn_count);
	}
	(void) ow_append_caused(run, c->start ? "conversation.opened" : "conversation.closed", node_id,
							owj_end(&j), suspended_seq);
}

/*
 * Conversation interrupt interrupt_id (kind, payload) of the locked run was
 * just resolved with value, its interrupt.resolved at resolved_seq: the
 * conversation waits on nothing any more, and a turn is complete:
 * conversation.exchanged {conversationId, turnIndex, outcome} follows,
 * caused by that interrupt.resolved.
 */
void
ow_conversation_answered(OwRun *run, const char *kind, const char *interrupt_id, const char *node_id,
						 Jsonb *payload, Jsonb *value, int64 resolved_seq)
{
	static OwQuery q = {"UPDATE openwop.conversations"
		"   SET pending_interrupt_id = NULL, turn_count = turn_count OPERATOR(pg_catalog.+) $4"
		" WHERE tenant OPERATOR(pg_catalog.=) $1"
		"   AND conversation_id OPERATOR(pg_catalog.=) $2"
		"   AND pending_interrupt_id OPERATOR(pg_catalog.=) $3",
	4, {TEXTOID, TEXTOID, TEXTOID, INT4OID}, SPI_OK_UPDATE};
	JsonbContainer *data = owj_get(payload, "data")->val.binary.data;
	bool		exchange = strcmp(kind, "conversation.exchange") == 0;
	OwConversation c = {0};
	Datum		args[4];
	OwJson		j;

	c.conversation_id = owj_string(owj_get_container(data, "conversationId"));
	args[2] = CStringGetTextDatum(interrupt_id);
	args[3] = Int32GetDatum(exchange ? 1 : 0);
	/*
	 * Its row says what the interrupt's raise wrote, under the run lock,
	 * unless someone changed it outside the extension: a retry would find
	 * the same, so not 40001.
	 */
	if (conversation_exec(&q, run, &c, args, false) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("conversation \"%s\" does not wait on interrupt \"%s\"", c.conversation_id,
						interrupt_id),
				 errdetail("Its row in openwop.conversations was changed or removed outside the extension."),
				 errhint("Set its pending_interrupt_id back to the interrupt, or cancel the run.")));
	if (!exchange)
		return;
	owj_begin(&j);
	owj_str(&j, "conversationId", c.conversation_id);
	owj_value(&j, "turnIndex", owj_get_container(data, "turnIndex"));
	owj_jsonb(&j, "outcome", value);
	(void) ow_append_caused(run, "conversation.exchanged", node_id, owj_end(&j), resolved_seq);
}
