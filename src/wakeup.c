/*-------------------------------------------------------------------------
 *
 * wakeup.c
 *	  Waking the database's worker: a transaction that raised an interrupt
 *	  with a deadline (or expired one) sets the worker's latch when it
 *	  commits, so the worker need not poll for new deadlines.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "openwop.h"

#include "access/xact.h"

static bool deadline_raised = false;
static bool xact_callback_registered = false;

static void
wakeup_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT && deadline_raised)
	{
		int			slot = ow_slot_of_my_database();

		if (slot >= 0)
			ow_slot_wake(slot, true);
	}
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PARALLEL_ABORT)
		deadline_raised = false;
}

/* Called when this transaction raised an interrupt with a deadline. */
void
ow_deadline_raised(void)
{
	if (!ow_registry_ready())
		return;					/* no workers: openwop.sweep() applies deadlines */
	if (!xact_callback_registered)
	{
		RegisterXactCallback(wakeup_xact_callback, NULL);
		xact_callback_registered = true;
	}
	deadline_raised = true;
}
