/*-------------------------------------------------------------------------
 *
 * schema.c
 *	  The library serves the schema of its own version only.
 *
 * A server runs the newest library as soon as it is installed and the
 * server restarted; each database keeps its older schema until a DBA runs
 * ALTER EXTENSION openwop_interrupt UPDATE there.  Serving every older
 * schema meant a second form of many statements and writes, chosen by
 * which tables and columns a database had; instead, every call on an
 * older (or newer) schema is refused with an error that names the update,
 * and the database worker waits for it.  Nothing is read or written
 * before the refusal.
 *
 * The installed version is read from pg_extension once and remembered
 * while it is the library's; any relation cache invalidation forgets it
 * (DROP EXTENSION drops the tables, so a schema that changes back to an
 * older version is always seen).  An update script runs with the new
 * version already recorded; a script of this extension that calls the
 * library while it is being created or updated is not refused (another
 * extension's script is).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "store/store.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "commands/dbcommands.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/rel.h"

static bool current = false;
static bool registered = false;

static void
forget(Datum arg, Oid relid)
{
	current = false;
}

/* The version of openwop_interrupt installed in this database, or NULL. */
static char *
installed_version(void)
{
	Relation	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	char	   *version = NULL;

	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("openwop_interrupt"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		bool		isnull;
		Datum		d = heap_getattr(tuple, Anum_pg_extension_extversion, RelationGetDescr(rel), &isnull);

		if (!isnull)
			version = text_to_cstring(DatumGetTextPP(d));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return version;
}

/* a before b, as release numbers (major.minor.patch) */
static bool
older(const char *a, const char *b)
{
	int			x[3] = {0}, y[3] = {0};
	int			i;

	(void) sscanf(a, "%d.%d.%d", &x[0], &x[1], &x[2]);
	(void) sscanf(b, "%d.%d.%d", &y[0], &y[1], &y[2]);
	for (i = 0; i < 3; i++)
		if (x[i] != y[i])
			return x[i] < y[i];
	return false;
}

/*
 * Is the schema of this database the library's (OW_SCHEMA_VERSION)?  In a
 * transaction.  *version (if not NULL) is the installed one, NULL where
 * the extension is not installed.
 */
bool
ow_schema_is_current(char **version)
{
	char	   *v;

	if (!registered)
	{
		CacheRegisterRelcacheCallback(forget, (Datum) 0);
		registered = true;
	}
	if (current || (creating_extension &&
					CurrentExtensionObject == get_extension_oid("openwop_interrupt", true)))
	{
		if (version)
			*version = pstrdup(OW_SCHEMA_VERSION);
		return true;
	}
	v = installed_version();
	current = v != NULL && strcmp(v, OW_SCHEMA_VERSION) == 0;
	if (version)
		*version = v;
	return current;
}

/* Refuse, before anything is read, unless the schema is the library's. */
void
ow_require_current_schema(void)
{
	char	   *version;

	if (ow_schema_is_current(&version))
		return;
	if (version == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension openwop_interrupt is not installed in database \"%s\"",
						get_database_name(MyDatabaseId)),
				 errhint("Run CREATE EXTENSION openwop_interrupt in this database.")));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("openwop_interrupt's schema in database \"%s\" is version %s, its library version %s",
					get_database_name(MyDatabaseId), version, OW_SCHEMA_VERSION),
			 errdetail("The library serves only the schema of its own version: nothing was read or written."),
			 older(version, OW_SCHEMA_VERSION) ?
			 errhint("Run ALTER EXTENSION openwop_interrupt UPDATE in this database.") :
			 errhint("Install the library of version %s or later, and restart the server.", version)));
}
