/*-------------------------------------------------------------------------
 *
 * ddl.c
 *	  What DDL tells the workers, through a ProcessUtility hook (the library
 *	  is preloaded wherever there are workers).
 *
 * DROP DATABASE, ALTER DATABASE ... RENAME TO and ... SET TABLESPACE, and
 * CREATE DATABASE ... TEMPLATE need their database to have no other
 * sessions, and a database worker is one.  Before such a statement runs,
 * its database is paused: the worker there is asked to leave, the
 * statement waits (up to PAUSE_WAIT_MS) until it has, and no worker starts
 * there again until the statement's transaction ends.  Only a role that
 * could run the statement (the database's owner, a superuser) pauses
 * anything: a refused statement leaves the worker alone.  When CREATE
 * EXTENSION openwop_interrupt commits, the launcher is asked to serve the
 * database now; DROP EXTENSION, by the extension's owner, pauses the
 * database like the statements above (the worker leaves before the objects
 * go).  Only a statement that did create or drop the extension tells the
 * launcher anything: anyone may run one that fails.
 *
 * A copy of a database (CREATE DATABASE ... TEMPLATE, which any role with
 * CREATEDB may run on a database it owns) carries the extension but is
 * not served until a superuser or the extension's owner runs
 * openwop.serve_database() in it, which tells the launcher at commit too;
 * only a superuser may choose a new database's oid (CREATE DATABASE ...
 * OID), which would make a copy look like the database it was made from.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "ipc/ipc.h"
#include "base/base.h"
#include "store/store.h"
#include "auth/auth.h"
#include "bgw/bgw.h"

#include "access/xact.h"
#include "catalog/pg_database_d.h"
#include "catalog/pg_extension_d.h"
#include "catalog/pg_type.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/jsonb.h"

#define PAUSE_WAIT_MS 10000L

static ProcessUtility_hook_type prev_process_utility = NULL;
static bool paused = false;		/* this transaction paused a database */
static bool created = false;	/* this transaction created the extension */
static bool dropped = false;	/* ... dropped it */
static bool served = false;		/* ... ran serve_database() */
static bool callback_registered = false;

static void
ddl_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
			if (created || served)
				ow_request_launch(MyDatabaseId, true);
			if (dropped)
				ow_request_recheck(MyDatabaseId);
			/* FALLTHROUGH */
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PARALLEL_ABORT:
			if (paused)
				ow_unpause_mine();
			paused = created = dropped = served = false;
			break;
		default:
			break;
	}
}

static void
register_callback(void)
{
	if (!callback_registered)
	{
		RegisterXactCallback(ddl_xact_callback, NULL);
		callback_registered = true;
	}
}

/* Does the option list name option? Its value, or NULL. */
static DefElem *
option(List *options, const char *name)
{
	ListCell   *lc;

	foreach(lc, options)
	{
		DefElem    *d = lfirst(lc);

		if (strcmp(d->defname, name) == 0)
			return d;
	}
	return NULL;
}

/* The database this statement needs to itself, if the caller may run it; InvalidOid if none. */
static Oid
database_needed(Node *stmt)
{
	const char *name = NULL;
	Oid			dboid;

	switch (nodeTag(stmt))
	{
		case T_DropdbStmt:
			name = ((DropdbStmt *) stmt)->dbname;
			break;
		case T_RenameStmt:
			if (((RenameStmt *) stmt)->renameType == OBJECT_DATABASE)
				name = ((RenameStmt *) stmt)->subname;
			break;
		case T_AlterDatabaseStmt:
			if (option(((AlterDatabaseStmt *) stmt)->options, "tablespace"))
				name = ((AlterDatabaseStmt *) stmt)->dbname;
			break;
		case T_CreatedbStmt:
			{
				DefElem    *t = option(((CreatedbStmt *) stmt)->options, "template");

				if (t && t->arg)
					name = defGetString(t);
			}
			break;
		default:
			break;
	}
	if (name == NULL)
		return InvalidOid;
	dboid = get_database_oid(name, true);
	if (!OidIsValid(dboid))
		return InvalidOid;
	/*
	 * Each of these needs the database's owner (or a superuser); anyone
	 * else is refused by the statement, with the worker left alone.  (A
	 * template may be copied by anyone with CREATEDB, but no worker serves
	 * a template.)
	 */
	if (!object_ownercheck(DatabaseRelationId, dboid, GetUserId()))
		return InvalidOid;
	return dboid;
}

/* Is the statement CREATE or DROP EXTENSION openwop_interrupt? */
static bool
names_extension(Node *stmt)
{
	if (IsA(stmt, CreateExtensionStmt))
		return strcmp(((CreateExtensionStmt *) stmt)->extname, "openwop_interrupt") == 0;
	if (IsA(stmt, DropStmt) && ((DropStmt *) stmt)->removeType == OBJECT_EXTENSION)
	{
		ListCell   *lc;

		foreach(lc, ((DropStmt *) stmt)->objects)
			if (strcmp(strVal(lfirst(lc)), "openwop_interrupt") == 0)
				return true;
	}
	return false;
}

/*
 * After such a statement: tell the launcher at commit only when it did
 * create (or drop) the extension.  A statement that failed, a refused one
 * caught in a savepoint, or IF [NOT] EXISTS that found nothing to do must
 * not make the launcher start a worker: any role may run those, once a
 * transaction.
 */
static void
note_extension(bool existed)
{
	bool		exists = OidIsValid(get_extension_oid("openwop_interrupt", true));

	if (exists == existed)
		return;
	register_callback();
	if (exists)
		created = true;
	else
		dropped = true;
}

static void
ow_process_utility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
				   ProcessUtilityContext context, ParamListInfo params,
				   QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *stmt = pstmt->utilityStmt;
	Oid			dboid;
	bool		extension = names_extension(stmt);
	bool		existed = extension && OidIsValid(get_extension_oid("openwop_interrupt", true));

	/*
	 * CREATE DATABASE ... OID (for pg_upgrade) would let a role with
	 * CREATEDB give a copy the oid of a database it dropped: the copy's
	 * openwop.served_database then names it, and it is served without the
	 * DBA's serve_database().  Superusers only, while the library is loaded.
	 */
	if (IsA(stmt, CreatedbStmt) && option(((CreatedbStmt *) stmt)->options, "oid") && !superuser())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("only a superuser may choose the oid of a new database while openwop_interrupt is loaded"),
				 errdetail("A database's oid says whether the openwop workers serve it."),
				 errhint("Leave out the OID option.")));
	dboid = database_needed(stmt);

	if (OidIsValid(dboid))
	{
		register_callback();
		paused = true;
		(void) ow_pause_database(dboid, PAUSE_WAIT_MS);
	}

	/*
	 * DROP EXTENSION: the worker leaves before the extension's objects go,
	 * rather than meet them half dropped in a pass; only the extension's
	 * owner (who may drop it) pauses the worker.
	 */
	if (extension && existed && IsA(stmt, DropStmt) &&
		object_ownercheck(ExtensionRelationId, get_extension_oid("openwop_interrupt", false), GetUserId()))
	{
		register_callback();
		paused = true;
		(void) ow_pause_database(MyDatabaseId, PAUSE_WAIT_MS);
	}

	if (prev_process_utility)
		prev_process_utility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv, dest, qc);
	if (extension)
		note_extension(existed);
}

void
ow_install_ddl_hook(void)
{
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = ow_process_utility;
}

PG_FUNCTION_INFO_V1(ow_serve_database);
/*
 * openwop.serve_database() → jsonb {database, changed}: this database is
 * to be served (a copy of another is not, until a superuser or the
 * extension's owner says so).  Records its oid in
 * openwop.served_database; at commit the launcher starts its worker.
 */
Datum
ow_serve_database(PG_FUNCTION_ARGS)
{
	static OwQuery q = {"UPDATE openwop.served_database"
		"   SET database_oid = $1, served_by = pg_catalog.session_user(), served_at = pg_catalog.now()"
		" WHERE database_oid OPERATOR(pg_catalog.<>) $1", 1, {OIDOID}, SPI_OK_UPDATE};
	OwCall		call;
	Datum		args[1];
	bool		changed;
	OwJson		j;
	Jsonb	   *result;

	ow_refuse_read_only("serve_database()");
	ow_require_admin("choose the databases the workers serve");
	/* administration: the caller is a role with the owner's privileges, no Subject */
	ow_call_enter(&call);
	args[0] = ObjectIdGetDatum(MyDatabaseId);
	changed = ow_exec(&q, args, NULL, false, 0) > 0;
	ow_call_end(&call);
	register_callback();
	served = true;
	owj_begin(&j);
	owj_bool(&j, "changed", changed);
	owj_str(&j, "database", get_database_name(MyDatabaseId));
	result = owj_end(&j);
	ow_call_finish(&call);
	PG_RETURN_JSONB_P(result);
}
