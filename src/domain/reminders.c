/*-------------------------------------------------------------------------
 *
 * reminders.c
 *	  The steps of an approval gate: the reminders and escalations of the
 *	  policies it pinned, planned at the raise and fired by the database
 *	  worker, each exactly once.
 *
 * The pin (policies.c) carries each step's instant, computed at the raise
 * on the pinned business calendar or the wall clock; the raise plans one
 * row of openwop.gate_steps per step.  The worker's fair rounds (due.c)
 * take due steps; firing one takes the run's lock, then the step's row
 * (FOR UPDATE), sets its fired_at and writes its notifications, all in one
 * transaction: a worker killed before the commit leaves the step to fire
 * again, one killed after finds it fired.  A step of a gate that closed
 * first, or whose deadline has passed by the time it is fired (a worker
 * behind, or down, may not have applied it yet), is removed, unfired.
 *
 * A reminder tells the eligible approvers who have not voted; it grants
 * nothing and changes no tally.  An escalation's group becomes eligible at
 * its instant whether or not the worker has fired it yet (eligibility reads
 * the pin, approvals.c); firing it tells the group's members.  It adds no
 * required accept: the quorum is never lowered.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "ipc/ipc.h"
#include "base/base.h"
#include "store/store.h"
#include "domain/internal.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"

/*
 * Gate interrupt_id of the locked run pinned pin: plan its steps (none
 * when the policies name no reminder or escalation) and wake the worker
 * at commit.
 */
void
ow_plan_gate_steps(OwRun *run, const char *interrupt_id, Jsonb *pin)
{
	static OwQuery q = {
		"INSERT INTO openwop.gate_steps (tenant, interrupt_id, step, kind, run_id, due_at, group_ref)"
		" SELECT $1, $2, pg_catalog.row_number() OVER (ORDER BY s.at, s.kind, s.group_ref),"
		"        s.kind, $3, s.at, s.group_ref"
		"   FROM (SELECT 'reminder' AS kind,"
		"                CAST(r OPERATOR(pg_catalog.->>) 'at' AS pg_catalog.timestamptz) AS at,"
		"                NULL::pg_catalog.text AS group_ref"
		"           FROM pg_catalog.jsonb_array_elements($4 OPERATOR(pg_catalog.->) 'reminders') r"
		"         UNION ALL"
		"         SELECT 'escalation',"
		"                CAST(e OPERATOR(pg_catalog.->>) 'at' AS pg_catalog.timestamptz),"
		"                e OPERATOR(pg_catalog.->>) 'groupRef'"
		"           FROM pg_catalog.jsonb_array_elements($4 OPERATOR(pg_catalog.->) 'escalations') e) s",
		4, {TEXTOID, TEXTOID, TEXTOID, JSONBOID}, SPI_OK_INSERT
	};
	Datum		args[4];

	if (owj_get(pin, "reminders") == NULL && owj_get(pin, "escalations") == NULL)
		return;
	args[0] = CStringGetTextDatum(run->tenant);
	args[1] = CStringGetTextDatum(interrupt_id);
	args[2] = CStringGetTextDatum(run->run_id);
	args[3] = JsonbPGetDatum(pin);
	if (ow_exec(&q, args, NULL, false, 0) > 0)
		ow_deadline_raised();	/* the worker wakes at commit, and sleeps until the first */
}

/*
 * Fire the due step due->n of gate due->id, if its run is free (else
 * busy): tell whom it tells, and mark it fired; remove it when the gate
 * has closed.
 */
static void
settle_step(OwDueItem *due)
{
	static OwQuery step = {
		"SELECT s.kind, s.group_ref, s.due_at, o.status, o.node_id, o.payload, o.policy,"
		"       COALESCE(o.expires_at OPERATOR(pg_catalog.<=) $4, false)"
		"  FROM openwop.gate_steps s"
		"  LEFT JOIN openwop.open_interrupts o"
		"         ON o.tenant OPERATOR(pg_catalog.=) s.tenant"
		"        AND o.interrupt_id OPERATOR(pg_catalog.=) s.interrupt_id"
		" WHERE s.tenant OPERATOR(pg_catalog.=) $1 AND s.interrupt_id OPERATOR(pg_catalog.=) $2"
		"   AND s.step OPERATOR(pg_catalog.=) $3 AND s.fired_at IS NULL"
		"   AND s.due_at OPERATOR(pg_catalog.<=) $4"
		"   FOR UPDATE OF s",
		4, {TEXTOID, TEXTOID, INT4OID, TIMESTAMPTZOID}, SPI_OK_SELECT
	};
	static OwQuery fired = {
		"UPDATE openwop.gate_steps SET fired_at = pg_catalog.clock_timestamp(), notified = $4"
		" WHERE tenant OPERATOR(pg_catalog.=) $1 AND interrupt_id OPERATOR(pg_catalog.=) $2"
		"   AND step OPERATOR(pg_catalog.=) $3",
		4, {TEXTOID, TEXTOID, INT4OID, INT4OID}, SPI_OK_UPDATE
	};
	static OwQuery gone = {
		"DELETE FROM openwop.gate_steps"
		" WHERE tenant OPERATOR(pg_catalog.=) $1 AND interrupt_id OPERATOR(pg_catalog.=) $2"
		"   AND step OPERATOR(pg_catalog.=) $3",
		3, {TEXTOID, TEXTOID, INT4OID}, SPI_OK_DELETE
	};
	OwRun		run;
	Datum		args[4];
	char	   *kind;
	char	   *group;
	char	   *status;
	char	   *node_id;
	Jsonb	   *payload;
	Jsonb	   *pin;
	bool		isnull;
	TimestampTz at;
	JsonbContainer *data;
	OwGateRule	rule;
	OwJson		j;
	bool		escalation;
	int			told;

	due->settled = false;
	due->busy = !ow_try_lock_run_id(&run, due->tenant, due->run_id);
	if (due->busy)
		return;
	args[0] = CStringGetTextDatum(due->tenant);
	args[1] = CStringGetTextDatum(due->id);
	args[2] = Int32GetDatum(due->n);
	args[3] = TimestampTzGetDatum(due->now);
	if (ow_exec(&step, args, NULL, false, 1) == 0)
		return;					/* fired meanwhile */
	kind = ow_col_text(0, 1);
	group = ow_col_text(0, 2);
	at = DatumGetTimestampTz(ow_col_datum(0, 3, TIMESTAMPTZOID, &isnull));
	status = ow_col_text(0, 4);
	node_id = ow_col_text(0, 5);
	payload = ow_col_jsonb(0, 6);
	pin = ow_col_jsonb(0, 7);
	due->settled = true;
	if (status == NULL || strcmp(status, "pending") != 0 || payload == NULL || ow_col_bool(0, 8))
	{
		/* the gate closed first, or its deadline has passed (not yet applied): nothing to tell */
		(void) ow_exec(&gone, args, NULL, false, 0);
		return;
	}

	escalation = strcmp(kind, "escalation") == 0;
	data = owj_get(payload, "data")->val.binary.data;
	ow_gate_rule(data, pin, &rule);
	ow_notice_detail(&j, node_id, data, true);
	owj_int(&j, "step", due->n);
	owj_str(&j, "dueAt", owj_iso8601(at));
	if (escalation)
		owj_str(&j, "groupRef", group);
	told = ow_notify_gate(&run, due->id, escalation ? OW_NOTICE_ESCALATION : OW_NOTICE_REMINDER,
						  data, &rule, group, owj_end(&j));
	args[3] = Int32GetDatum(told);
	due->weight = 1 + told;		/* a step that told thousands is a pass's worth of work */
	if (ow_exec(&fired, args, NULL, false, 0) != 1)
		elog(ERROR, "could not mark step %d of interrupt \"%s\" fired", due->n, due->id);
	ow_count_decision(escalation ? OW_STAT_ESCALATED : OW_STAT_REMINDED);
}

/* The tenants with steps waiting, each with its earliest: a loose scan of gate_steps_due. */
static OwQuery step_tenants = {
	"WITH RECURSIVE t (tenant) AS ("
	"  (SELECT s.tenant FROM openwop.gate_steps s WHERE s.fired_at IS NULL ORDER BY s.tenant LIMIT 1)"
	"  UNION ALL"
	"  SELECT (SELECT s.tenant FROM openwop.gate_steps s WHERE s.fired_at IS NULL"
	"             AND s.tenant OPERATOR(pg_catalog.>) t.tenant ORDER BY s.tenant LIMIT 1)"
	"    FROM t WHERE t.tenant IS NOT NULL)"
	" SELECT t.tenant, (SELECT s.due_at FROM openwop.gate_steps s"
	"                    WHERE s.fired_at IS NULL AND s.tenant OPERATOR(pg_catalog.=) t.tenant"
	"                    ORDER BY s.due_at LIMIT 1)"
	"   FROM t WHERE t.tenant IS NOT NULL",
	0, {InvalidOid}, SPI_OK_SELECT
};

/* A tenant's due steps after the cursor, oldest first. */
static OwQuery step_next = {
	"SELECT s.run_id, s.interrupt_id, s.step, s.due_at FROM openwop.gate_steps s"
	" WHERE s.tenant OPERATOR(pg_catalog.=) $1 AND s.fired_at IS NULL"
	"   AND s.due_at OPERATOR(pg_catalog.<=) $2"
	"   AND ROW(s.due_at, s.interrupt_id, s.step) OPERATOR(pg_catalog.>) ROW($3, $4, $5)"
	" ORDER BY s.due_at, s.interrupt_id, s.step LIMIT $6",
	6, {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID, INT4OID, INT4OID}, SPI_OK_SELECT
};

static const OwDueSource steps = {"reminder or escalation", &step_tenants, &step_next, settle_step};

/*
 * Fire due steps, shared out fairly between tenants (ow_sweep_due);
 * returns how many were settled, *next the earliest step still waiting.
 */
int
ow_sweep_gate_steps(int max, void (*begin) (void), void (*end) (void), MemoryContext cxt,
					TimestampTz *next, char *turn)
{
	/* a database where no gate ever had a step (most): no statement */
	if (begin)
		begin();
	if (ow_table_never_written("gate_steps"))
	{
		if (end)
			end();
		*next = DT_NOEND;
		return 0;
	}
	if (end)
		end();
	return ow_sweep_due(&steps, max, begin, end, cxt, next, turn);
}
