/*-------------------------------------------------------------------------
 *
 * call.c
 *	  The call bracket of an API function, and becoming the extension
 *	  owner around table access.
 *
 * An API function checks its arguments, decides who is calling
 * (caller.c), and only then connects SPI and becomes the owner of the
 * extension's tables, in a security-restricted context; it builds its
 * result after ow_call_end, back in the caller's role and memory context.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/base.h"
#include "store/store.h"
#include "auth/internal.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

/* ----------
 * The extension owner
 * ----------
 */

/*
 * The role that owns the extension's tables (the role that ran CREATE
 * EXTENSION), found through openwop.runs rather than the schema, whose
 * owner could differ if the schema existed beforehand.
 */
static Oid
openwop_owner(void)
{
	Oid			relid = get_relname_relid("runs", get_namespace_oid("openwop", false));
	HeapTuple	tup;
	Oid			owner;

	if (!OidIsValid(relid))
		elog(ERROR, "table openwop.runs does not exist");
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

/*
 * Run the following statements as the extension owner, with the search
 * path core gives maintenance commands (pg_catalog, pg_temp): code a DBA
 * attached to the tables (a CHECK, a trigger, a policy) runs as the owner,
 * and must not find a function a caller put ahead on the caller's own
 * path.  The restricted context forbids SET ROLE and similar inside; an
 * error unwinds both through (sub)transaction abort, so only the success
 * path calls ow_restore_user.
 */
void
ow_become_owner(OwPriv *priv)
{
	GetUserIdAndSecContext(&priv->save_userid, &priv->save_sec_context);
	SetUserIdAndSecContext(openwop_owner(),
						   priv->save_sec_context |
						   SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	priv->guc_level = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
}

void
ow_restore_user(OwPriv *priv)
{
	AtEOXact_GUC(true, priv->guc_level);
	SetUserIdAndSecContext(priv->save_userid, priv->save_sec_context);
}

/*
 * Administration (approver groups, signing keys) is for the extension's
 * owner and superusers, whatever EXECUTE grants say.
 */
bool
ow_is_admin(void)
{
	return has_privs_of_role(GetUserId(), openwop_owner());
}

void
ow_require_admin(const char *what)
{
	if (InSecurityRestrictedOperation())
		ow_no_identity_here("a security-restricted operation");
	if (!ow_is_admin())
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_raise(OW_FORBIDDEN, &d,
				 "Ask the owner of the openwop_interrupt extension.",
				 "only the owner of the openwop tables may %s", what);
	}
}

/* ----------
 * The call bracket of an API function
 * ----------
 */

/* Who is calling (decided before anything runs as the owner), then SPI, as the owner. */
void
ow_call_begin(OwCall *call)
{
	ow_caller(&call->caller);
	ow_call_enter(call);
}

/* The same for a call that decided call->caller itself, to check its arguments first. */
void
ow_call_enter(OwCall *call)
{
	ow_require_current_schema();
	call->callerctx = CurrentMemoryContext;
	SPI_connect();
	ow_become_owner(&call->priv);
}

/*
 * A function that changes the store refuses to run on a standby (a clear
 * error that names the primary) and in a read-only transaction, before it
 * reads anything: the rows it would lock and write are not the caller's to
 * change there.  function is its name as the caller called it.
 */
void
ow_refuse_read_only(const char *function)
{
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("%s cannot run on a standby", function),
				 errdetail("This server is in recovery: it replays the primary's changes and makes none of its own."),
				 errhint("Call %s on the primary. A standby answers the readers: events(), run_snapshot(), inspect_interrupt(), verify_interrupt_token(), the inbox and the FlowDrop entry (and mint_interrupt_token() for a lifetime its key has signed before).",
						 function)));
	if (XactReadOnly)
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot execute %s in a read-only transaction", function)));
}

/* Back to the caller's role and memory context, to build the result. */
void
ow_call_end(OwCall *call)
{
	ow_restore_user(&call->priv);
	MemoryContextSwitchTo(call->callerctx);
}

/* Release SPI; the result was built in the caller's context and survives. */
void
ow_call_finish(OwCall *call)
{
	SPI_finish();
}
