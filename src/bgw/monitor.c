/*-------------------------------------------------------------------------
 *
 * monitor.c
 *	  What the monitoring views show (for pg_monitor): openwop.workers, the
 *	  launcher and each database worker, read from the registry (ipc/registry.c)
 *	  in one copy so the rows are of one moment; openwop.stats, the
 *	  cumulative counters (stats.c), and their reset.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "ipc/ipc.h"
#include "base/base.h"
#include "store/store.h"
#include "bgw/internal.h"

#include "access/xlog.h"
#include "commands/dbcommands.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/varlena.h"

PG_FUNCTION_INFO_V1(ow_worker_status);
PG_FUNCTION_INFO_V1(ow_stats);
PG_FUNCTION_INFO_V1(ow_stats_reset_all);
PG_FUNCTION_INFO_V1(ow_direct_path);

#define NCOLS 15

/* What the launcher said of a database it does not serve, in words. */
static const char *
unserved_words(OwUnserved why)
{
	switch (why)
	{
		case OW_UNSERVED_COPY:
			return "a copy of another database: served once a superuser or the extension's owner runs SELECT openwop.serve_database() in it";
		case OW_UNSERVED_NO_SLOT:
			return "every slot of openwop.max_databases is in use";
		case OW_UNSERVED_NO_WORKER:
			return "no background worker slot is free (max_worker_processes)";
		case OW_UNSERVED_FAILING:
			return "its worker exited; it is started again with back-off (see the server log)";
		case OW_UNSERVED_NOT_CONNECTED:
			return "its worker did not connect in time: a session may hold the database locked";
		case OW_UNSERVED_NONE:
			break;
	}
	return NULL;
}

/*
 * Why no worker serves this database, which has the extension; *since
 * when the launcher said so (0: it did not).  A database with no word
 * from the launcher and no other reason asks it to look again: a request
 * lost along the way is made anew whenever someone looks.
 */
static const char *
why_unserved_here(TimestampTz *since)
{
	bool		recorded;
	Oid			served;
	bool		bad;
	char	   *names;
	List	   *list = NIL;
	OwUnserved	why;

	*since = 0;
	if (!ow_registry_ready())
		return "the library is not in shared_preload_libraries: openwop.sweep() applies deadlines";
	if (RecoveryInProgress())
		return "a standby: the workers start when it is promoted";
	if (!MyDatabaseId || !ow_launcher_running())
		return "the launcher is not running (see the server log)";
	names = pstrdup(ow_databases_setting());
	bad = names[0] != '\0' && !SplitIdentifierString(names, ',', &list);
	if (!bad && list != NIL)
	{
		ListCell   *lc;
		bool		listed = false;
		char	   *mine = get_database_name(MyDatabaseId);

		foreach(lc, list)
			listed = listed || strcmp((char *) lfirst(lc), mine) == 0;
		if (!listed)
			return "not listed in openwop.databases";
	}
	served = ow_served_database(&recorded);
	if (recorded && served != MyDatabaseId)
		return unserved_words(OW_UNSERVED_COPY);
	if (ow_database_paused(MyDatabaseId))
		return "paused while DDL on the database runs";
	why = ow_unserved_reason(MyDatabaseId, since);
	if (why != OW_UNSERVED_NONE && why != OW_UNSERVED_COPY)
		return unserved_words(why);
	ow_request_launch(MyDatabaseId, false);
	return "not served yet: the launcher has been asked to start its worker";
}

static Datum
ts_or_null(TimestampTz t, bool *isnull)
{
	*isnull = (t == 0);
	return TimestampTzGetDatum(t);
}

/*
 * openwop.worker_status() → SETOF (role, database, pid, started, last_pass,
 * last_relay, relay_lag, relayed, settled, timeout_passes, errors,
 * last_error, last_error_at, serving, reason): the launcher, every
 * database worker of the server, and, when none serves this database,
 * a row for it that says why (reason; last_error_at: since when the
 * launcher said so).
 */
Datum
ow_worker_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	OwSlot	   *slots = NULL;
	int		   *index = NULL;
	int			n = 0;
	int			i;
	bool		mine = false;
	int			launcher_pid = 0;
	TimestampTz launcher_started = 0;
	TimestampTz launcher_pass = 0;
	Datum		values[NCOLS];
	bool		nulls[NCOLS];

	ow_require_current_schema();
	InitMaterializedSRF(fcinfo, 0);
	memset(nulls, true, sizeof(nulls));

	if (ow_registry_ready())
	{
		slots = palloc(sizeof(OwSlot) * ow_max_databases);
		index = palloc(sizeof(int) * ow_max_databases);
		n = ow_registry_snapshot(slots, index, &launcher_pid, &launcher_started, &launcher_pass);
	}

	if (launcher_pid != 0)
	{
		memset(nulls, true, sizeof(nulls));
		values[0] = CStringGetTextDatum("launcher");
		nulls[0] = false;
		values[2] = Int32GetDatum(launcher_pid);
		nulls[2] = false;
		values[3] = ts_or_null(launcher_started, &nulls[3]);
		values[4] = ts_or_null(launcher_pass, &nulls[4]);
		values[13] = BoolGetDatum(true);
		nulls[13] = false;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	for (i = 0; i < n; i++)
	{
		OwSlot	   *s = &slots[i];
		int64		lag_ms;
		Interval   *lag;

		memset(nulls, false, sizeof(nulls));
		values[0] = CStringGetTextDatum("database worker");
		values[1] = CStringGetTextDatum(s->dbname);
		values[2] = Int32GetDatum(s->pid);
		nulls[2] = (s->pid == 0);
		values[3] = ts_or_null(s->started, &nulls[3]);
		values[4] = ts_or_null(s->last_timeout_pass, &nulls[4]);
		values[5] = ts_or_null(s->last_relay, &nulls[5]);
		lag_ms = s->pid != 0 ? ow_relay_lag_ms(index[i]) : 0;
		lag = palloc0(sizeof(Interval));
		lag->time = lag_ms * 1000;
		values[6] = IntervalPGetDatum(lag);
		values[7] = Int64GetDatum(s->relayed);
		values[8] = Int64GetDatum(s->settled);
		values[9] = Int64GetDatum(s->timeout_passes);
		values[10] = Int64GetDatum(s->errors);
		values[11] = CStringGetTextDatum(s->last_error);
		nulls[11] = (s->last_error[0] == '\0');
		values[12] = ts_or_null(s->last_error_at, &nulls[12]);
		/* attached and serving: a probe of a database without the extension is not */
		values[13] = BoolGetDatum(s->pid != 0 && s->serving);
		nulls[14] = true;
		if (s->dboid == MyDatabaseId)
			mine = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}

	/* this database has the extension (the view is its): no worker, and why */
	if (!mine)
	{
		TimestampTz since;
		const char *why = why_unserved_here(&since);

		memset(nulls, true, sizeof(nulls));
		values[0] = CStringGetTextDatum("database worker");
		nulls[0] = false;
		values[1] = CStringGetTextDatum(get_database_name(MyDatabaseId));
		nulls[1] = false;
		values[12] = ts_or_null(since, &nulls[12]);
		values[13] = BoolGetDatum(false);
		nulls[13] = false;
		values[14] = CStringGetTextDatum(why);
		nulls[14] = false;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	PG_RETURN_VOID();
}

/*
 * openwop.stats_counts() → SETOF (database, event, code, count, since):
 * per database with counters, a row per event (resolved, voted, expired)
 * and per refusal code, zeros included.
 */
Datum
ow_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			cap = ow_stats_capacity();
	Oid		   *oids = palloc(sizeof(Oid) * cap);
	TimestampTz *since = palloc(sizeof(TimestampTz) * cap);
	uint64	   *counts = palloc(sizeof(uint64) * cap * OW_STATS);
	int			n;
	int			i;
	int			j;
	static const char *const events[OW_STAT_REFUSED] = {
		[OW_STAT_RESOLVED] = "resolved",[OW_STAT_VOTED] = "voted",[OW_STAT_EXPIRED] = "expired",
		[OW_STAT_REMINDED] = "reminded",[OW_STAT_ESCALATED] = "escalated",
		[OW_STAT_NOTIFIED] = "notified",[OW_STAT_NOTIFICATION_DROPPED] = "notifications_dropped",
		[OW_STAT_NOTIFICATION_DEAD] = "notifications_dead"
	};

	InitMaterializedSRF(fcinfo, 0);
	n = ow_stats_snapshot(cap, oids, since, counts);
	for (i = 0; i < n; i++)
	{
		char	   *name = get_database_name(oids[i]);

		if (name == NULL)
			continue;			/* dropped since it counted */
		for (j = 0; j < OW_STATS; j++)
		{
			Datum		values[5];
			bool		nulls[5] = {false, false, false, false, false};

			values[0] = CStringGetTextDatum(name);
			if (j < OW_STAT_REFUSED)
			{
				values[1] = CStringGetTextDatum(events[j]);
				nulls[2] = true;
			}
			else
			{
				values[1] = CStringGetTextDatum("refused");
				values[2] = CStringGetTextDatum(ow_error_code(j - OW_STAT_REFUSED));
			}
			values[3] = Int64GetDatum((int64) counts[i * OW_STATS + j]);
			values[4] = TimestampTzGetDatum(since[i]);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	}
	PG_RETURN_VOID();
}

/*
 * openwop.stats_reset(all_databases boolean DEFAULT false) → void: this
 * database's counters for whoever may execute it (superusers, unless a DBA
 * grants it); every database's for superusers only, whatever the grants (a
 * router's login holds EXECUTE on it on every shard).
 */
Datum
ow_stats_reset_all(PG_FUNCTION_ARGS)
{
	bool		all = PG_ARGISNULL(0) ? false : PG_GETARG_BOOL(0);

	if (all && !superuser())
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_raise(OW_FORBIDDEN, &d, "Reset this database's counters: stats_reset().",
				 "only a superuser may reset the counters of every database");
	}
	ow_stats_reset(all);
	PG_RETURN_VOID();
}

/*
 * openwop.direct_path() → SETOF (table_name, direct, reason): for each
 * table of the hot paths, whether they read and write it directly
 * (store/rowstore.c) or with SQL statements, and why (a DBA's trigger,
 * rule, row security, column, default, retyped column or index).
 */
Datum
ow_direct_path(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			t;

	ow_require_current_schema();
	InitMaterializedSRF(fcinfo, 0);
	for (t = 0; t < OW_TABLE_COUNT; t++)
	{
		const char *name;
		const char *why = ow_direct_path_refusal(t, &name);
		Datum		values[3];
		bool		nulls[3] = {false, false, why == NULL};

		values[0] = CStringGetTextDatum(name);
		values[1] = BoolGetDatum(why == NULL);
		values[2] = why ? CStringGetTextDatum(why) : (Datum) 0;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
