/*-------------------------------------------------------------------------
 *
 * calendars.c
 *	  Business calendars the DBA owns: versioned documents in an
 *	  append-only log (set_calendar), named by approval policies so that
 *	  the gates they pin measure their deadlines in working time, and
 *	  calendar_due(), which says when a deadline set at a given instant
 *	  would fall due.
 *
 * A gate pins the version current when it is raised (with its policy):
 * a holiday added later does not move the deadline of a gate already
 * waiting, as a later version of its policy does not change its rule.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/base.h"
#include "store/store.h"
#include "auth/auth.h"
#include "domain/internal.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(ow_set_calendar);
PG_FUNCTION_INFO_V1(ow_calendar_due);

/*
 * The latest version of calendar name in tenant, read into cal: false
 * when it was never set; 55000 when it cannot be read any more (its zone
 * gone from the server's time zone database), which the DBA mends with a
 * new version: never blamed on the caller whose call needed it.
 */
bool
ow_calendar_latest(const char *tenant, const char *name, int *version, OwCalendar *cal)
{
	static OwQuery q = {
		"SELECT version, calendar FROM openwop.calendar_log"
		" WHERE tenant OPERATOR(pg_catalog.=) $1 AND name OPERATOR(pg_catalog.=) $2"
		" ORDER BY version DESC LIMIT 1",
		2, {TEXTOID, TEXTOID}, SPI_OK_SELECT
	};
	Datum		args[2];
	char	   *why;

	args[0] = CStringGetTextDatum(tenant);
	args[1] = CStringGetTextDatum(name);
	if (ow_exec(&q, args, NULL, false, 1) != 1)
		return false;
	*version = (int) ow_col_int64(0, 1);
	if (!ow_calendar_load(ow_col_jsonb(0, 2), cal, &why))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("business calendar \"%s\" of tenant \"%s\" (version %d) cannot be read: %s",
						name, tenant, *version, why),
				 errhint("A policy admin sets a new version of the calendar with openwop.set_calendar(), with a zone the server knows.")));
	return true;
}

/* Refuse a calendar name in tenant never set (404); field: the argument's name in details. */
static pg_noreturn void
calendar_not_found(const char *name, const char *tenant, const char *field)
{
	OwDetails	d;

	ow_details_init(&d);
	ow_details_str(&d, "field", field);
	ow_details_str(&d, "name", name);
	ow_details_str(&d, "tenant", tenant);
	ow_raise(OW_NOT_FOUND, &d, "Set it with openwop.set_calendar() first.",
			 "business calendar \"%s\" does not exist in tenant \"%s\"", name, tenant);
}

/*
 * openwop.set_calendar(name, calendar, tenant) → {name, version, tenant}:
 * a new version, the one gates raised from the commit on pin.
 */
Datum
ow_set_calendar(PG_FUNCTION_ARGS)
{
	/* the next version; a concurrent call that took it first makes this one take the next */
	static OwQuery insert = {
		"INSERT INTO openwop.calendar_log (tenant, name, version, calendar, changed_by, changed_at)"
		" SELECT $1, $2, COALESCE(pg_catalog.max(version), 0) OPERATOR(pg_catalog.+) 1, $3, $4,"
		"        pg_catalog.now()"
		"   FROM openwop.calendar_log"
		"  WHERE tenant OPERATOR(pg_catalog.=) $1 AND name OPERATOR(pg_catalog.=) $2"
		" ON CONFLICT DO NOTHING RETURNING version",
		4, {TEXTOID, TEXTOID, JSONBOID, TEXTOID}, SPI_OK_INSERT_RETURNING
	};
	OwCall		call;
	char	   *name;
	char	   *tenant;
	Jsonb	   *doc;
	OwCalendar	cal;
	Datum		args[4];
	int			version;
	OwJson		j;
	Jsonb	   *result;

	doc = ow_admin_document_args(fcinfo, &call.caller, "set_calendar()",
								 "changing business calendars", "calendar", &name);
	ow_calendar_read(doc, "calendar", &cal);
	tenant = ow_tenant_arg(fcinfo, 2, &call.caller, "changing another tenant's business calendars");

	ow_call_enter(&call);
	args[0] = CStringGetTextDatum(tenant);
	args[1] = CStringGetTextDatum(name);
	args[2] = JsonbPGetDatum(doc);
	args[3] = CStringGetTextDatum(call.caller.subject.subject_id);
	version = ow_take_version(&insert, args, "business calendar", name);
	ow_call_end(&call);
	owj_begin(&j);
	owj_str(&j, "name", name);
	owj_str(&j, "tenant", tenant);
	owj_int(&j, "version", version);
	result = owj_end(&j);
	ow_call_finish(&call);
	PG_RETURN_JSONB_P(result);
}

/*
 * openwop.calendar_due(name, from, after_ms, tenant) → timestamptz: when
 * after_ms milliseconds of the calendar's working time, counted from
 * from, have passed (the deadline of a gate raised at from with that
 * timeout); NULL when that is more than 100 years away.  For policy
 * admins: to check a calendar before a policy names it.
 */
Datum
ow_calendar_due(PG_FUNCTION_ARGS)
{
	OwCall		call;
	char	   *name;
	char	   *tenant;
	TimestampTz from;
	int64		after_ms;
	OwCalendar	cal;
	int			version;
	TimestampTz due;

	ow_caller(&call.caller);
	ow_require_policy_admin(&call.caller, "reading business calendars");
	name = ow_admin_name(fcinfo, 0, "calendar");
	if (PG_ARGISNULL(1))
		ow_validation_error("from", "from must not be null");
	from = PG_GETARG_TIMESTAMPTZ(1);
	if (TIMESTAMP_NOT_FINITE(from))
		ow_validation_error("from", "from must be a finite time");
	if (PG_ARGISNULL(2))
		ow_validation_error("afterMs", "after_ms must not be null");
	after_ms = PG_GETARG_INT64(2);
	if (after_ms < 1)
		ow_validation_error("afterMs", "after_ms must be at least 1");
	tenant = ow_tenant_arg(fcinfo, 3, &call.caller, "reading another tenant's business calendars");

	ow_call_enter(&call);
	if (!ow_calendar_latest(tenant, name, &version, &cal))
		calendar_not_found(name, tenant, "name");
	ow_calendar_add(&cal, from, 1, &after_ms, &due);
	ow_call_end(&call);
	ow_call_finish(&call);
	if (due == DT_NOEND)
		PG_RETURN_NULL();
	PG_RETURN_TIMESTAMPTZ(due);
}
