/*-------------------------------------------------------------------------
 *
 * wakeup.c
 *	  Waking the database's worker: a transaction that raised an interrupt
 *	  with a deadline (or expired one) sets the worker's latch when it
 *	  commits, so the worker need not poll for new deadlines.  Where no
 *	  worker serves the database, it asks the launcher to look at it again
 *	  (at most every ASK_AGAIN_MS per backend): a database whose worker
 *	  was never started, or whose request to the launcher went astray, is
 *	  served as soon as it has a deadline.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "ipc/internal.h"

#include "utils/timestamp.h"

#include "access/xact.h"
#include "miscadmin.h"

#define ASK_AGAIN_MS 10000L

static bool deadline_raised = false;
static TimestampTz asked = 0;
static bool xact_callback_registered = false;

static void
wakeup_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT && deadline_raised)
	{
		int			slot = ow_slot_of_my_database();

		if (slot >= 0)
			ow_slot_wake(slot, true);
		else if (ow_launcher_running() &&
				 TimestampDifferenceExceeds(asked, GetCurrentTimestamp(), ASK_AGAIN_MS))
		{
			asked = GetCurrentTimestamp();
			ow_request_launch(MyDatabaseId, false);
		}
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
