/*-------------------------------------------------------------------------
 *
 * worktime.c
 *	  Business calendars: a calendar document checked and read (a time
 *	  zone, working hours for each day of the week, holidays), and an
 *	  amount of working time added to an instant in it.
 *
 * Working hours are local times of the calendar's zone, so a deadline
 * follows the zone's daylight-saving changes as its people do: a local
 * time a change skips is read as the instant of the change, so the hour
 * skipped (or a whole day, as Samoa skipped one) is not worked, and a
 * local time a change repeats is read as PostgreSQL reads it, the later
 * of the two (an hour repeated is worked once).  Time is
 * added day by day from the start's local date, over at most
 * OW_CALENDAR_MAX_DAYS days: a deadline further away than that (a
 * calendar of an hour a week and a timeout of centuries) never falls due,
 * as a wall-clock deadline past the year 100000 never does.
 *
 * A zone is one of the time zone database's files, named as it names it
 * (not a POSIX rule string, which PostgreSQL would also read, nor the
 * server's own "localtime"): a calendar means a place.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/base.h"

#include "pgtime.h"
#include "utils/builtins.h"
#include "common/int.h"
#include "miscadmin.h"
#include "utils/datetime.h"

/* How far ahead a working-time deadline is looked for: 100 years of days. */
#define OW_CALENDAR_MAX_DAYS 36525

static const char *const day_names[7] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

/*
 * The document, closed: a misspelt day would otherwise be a day silently
 * not worked.  Spans are ["HH:MM", "HH:MM"], local, the end "24:00" at most.
 */
#define SPANS "{\"$ref\": \"#/$defs/spans\"}"
static const char calendar_schema[] =
"{\"type\": \"object\", \"required\": [\"timezone\", \"week\"], \"additionalProperties\": false,"
" \"$defs\": {\"spans\": {\"type\": \"array\", \"maxItems\": " CppAsString2(OW_CALENDAR_MAX_SPANS) ","
"              \"items\": {\"type\": \"array\", \"minItems\": 2, \"maxItems\": 2,"
"                        \"items\": {\"type\": \"string\", \"pattern\": \"^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$\"}}}},"
" \"properties\": {"
"  \"timezone\": {\"type\": \"string\", \"minLength\": 1, \"maxLength\": 64},"
"  \"week\": {\"type\": \"object\", \"additionalProperties\": false,"
"           \"properties\": {\"mon\": " SPANS ", \"tue\": " SPANS ", \"wed\": " SPANS ", \"thu\": " SPANS ","
"                          \"fri\": " SPANS ", \"sat\": " SPANS ", \"sun\": " SPANS "}},"
"  \"holidays\": {\"type\": \"array\", \"maxItems\": " CppAsString2(OW_CALENDAR_MAX_HOLIDAYS) ","
"               \"items\": {\"type\": \"string\", \"pattern\": \"^[0-9]{4}-[0-9]{2}-[0-9]{2}$\"}},"
"  \"description\": {\"type\": \"string\", \"maxLength\": 1000}}}";

/* "HH:MM" (checked by the schema) as microseconds since midnight. */
static int64
clock_time(JsonbValue *v)
{
	const char *s = v->val.string.val;

	return ((int64) ((s[0] - '0') * 10 + (s[1] - '0')) * 60 + (s[3] - '0') * 10 + (s[4] - '0')) *
		USECS_PER_MINUTE;
}

static void read_calendar(Jsonb *doc, const char *prefix, OwCalendar *cal);

static int
compare_days(const void *a, const void *b)
{
	int			x = *(const int *) a;
	int			y = *(const int *) b;

	return (x > y) - (x < y);
}

/*
 * Is zone a file of the time zone database, spelt as the database spells
 * it?  pg_tzset also reads POSIX rule strings and any case; the
 * enumeration (as pg_timezone_names lists zones) says what is a file.
 */
static bool
is_zone_file(const char *zone)
{
	static const char *const not_places[] = {"localtime", "posixrules", "Factory"};
	pg_tzenum  *dir;
	pg_tz	   *tz;
	bool		found = false;
	int			i;

	if (strspn(zone, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+-/") != strlen(zone) ||
		zone[0] == '/' || strncmp(zone, "posix/", 6) == 0 || strncmp(zone, "right/", 6) == 0)
		return false;
	for (i = 0; i < (int) lengthof(not_places); i++)
		if (strcmp(zone, not_places[i]) == 0)
			return false;
	tz = pg_tzset(zone);
	if (tz == NULL || !pg_tz_acceptable(tz))
		return false;
	dir = pg_tzenumerate_start();
	while (!found && (tz = pg_tzenumerate_next(dir)) != NULL)
		found = strcmp(pg_get_timezone_name(tz), zone) == 0;
	pg_tzenumerate_end(dir);
	return found;
}

/*
 * Check calendar document doc and read it into cal (prefix: the field
 * name of the document in errors, e.g. "calendar").  A bad document is a
 * 400 validation_error naming the field.
 */
void
ow_calendar_read(Jsonb *doc, const char *prefix, OwCalendar *cal)
{
	char	   *zone;

	read_calendar(doc, prefix, cal);
	zone = owj_string(owj_get(doc, "timezone"));
	if (!is_zone_file(zone))
		ow_validation_error(psprintf("%s.timezone", prefix),
							"\"%s\" is not a time zone of the server's time zone database (an IANA name, spelt as pg_timezone_names lists it, such as \"Europe/Berlin\")",
							ow_echo(zone));
}

/*
 * Read a stored calendar document into cal: false, with why, when it
 * cannot be read any more (its zone gone from the server's time zone
 * database, as an operating system upgrade may remove old alias names).
 */
bool
ow_calendar_load(Jsonb *doc, OwCalendar *cal, char **why)
{
	char	   *zone = owj_string(owj_get(doc, "timezone"));

	read_calendar(doc, "calendar", cal);
	if (cal->tz == NULL)
	{
		*why = psprintf("its time zone \"%s\" is not in the server's time zone database", zone ? zone : "");
		return false;
	}
	return true;
}

/*
 * The checks and reading both share: the schema, the spans, the holidays
 * (a 400 naming the field); cal->tz is the zone, or NULL when PostgreSQL
 * cannot read it.
 */
static void
read_calendar(Jsonb *doc, const char *prefix, OwCalendar *cal)
{
	Jsonb	   *schema = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(calendar_schema)));
	char	   *errors;
	JsonbValue *v;
	int			d;
	int			spans = 0;

	if (!ow_schema_validate(schema, doc, &errors))
		ow_validation_errors(ow_schema_error_field(errors, prefix), errors, NULL,
							 "the business calendar is not valid");
	memset(cal, 0, sizeof(*cal));

	cal->tz = pg_tzset(owj_string(owj_get(doc, "timezone")));
	if (cal->tz != NULL && !pg_tz_acceptable(cal->tz))
		cal->tz = NULL;

	v = owj_get(doc, "week");
	for (d = 0; d < 7; d++)
	{
		JsonbValue *day = owj_get_container(v->val.binary.data, day_names[d]);
		int			i;

		if (day == NULL)
			continue;
		for (i = 0; i < (int) JsonContainerSize(day->val.binary.data); i++)
		{
			JsonbContainer *span = getIthJsonbValueFromContainer(day->val.binary.data, i)->val.binary.data;
			int64		start = clock_time(getIthJsonbValueFromContainer(span, 0));
			int64		end = clock_time(getIthJsonbValueFromContainer(span, 1));

			if (start >= end)
				ow_validation_error(psprintf("%s.week.%s[%d]", prefix, day_names[d], i),
									"a span of working hours ends after it starts");
			if (i > 0 && start < cal->week[d][i - 1].end)
				ow_validation_error(psprintf("%s.week.%s[%d]", prefix, day_names[d], i),
									"the spans of a day are in order and do not overlap");
			cal->week[d][i].start = start;
			cal->week[d][i].end = end;
		}
		cal->nspans[d] = i;
		spans += i;
	}
	if (spans == 0)
		ow_validation_error(psprintf("%s.week", prefix),
							"a calendar works at least one span a week: without one, nothing would ever fall due");

	v = owj_get(doc, "holidays");
	if (v != NULL)
	{
		int			n = (int) JsonContainerSize(v->val.binary.data);
		int			i;

		cal->holidays = palloc(sizeof(int) * Max(n, 1));
		for (i = 0; i < n; i++)
		{
			char	   *s = owj_string(getIthJsonbValueFromContainer(v->val.binary.data, i));
			int			y = atoi(s);
			int			m = atoi(s + 5);
			int			dd = atoi(s + 8);
			int			jd;
			int			y2,
						m2,
						d2;

			/* a real date: one that comes back from its Julian day unchanged */
			jd = date2j(y, m, dd);
			j2date(jd, &y2, &m2, &d2);
			if (y < 1 || m < 1 || m > 12 || dd < 1 || y2 != y || m2 != m || d2 != dd)
				ow_validation_error(psprintf("%s.holidays[%d]", prefix, i),
									"\"%s\" is not a date (YYYY-MM-DD)", s);
			cal->holidays[i] = jd;
		}
		qsort(cal->holidays, n, sizeof(int), compare_days);
		cal->nholidays = n;
	}
}

static bool
is_holiday(const OwCalendar *cal, int jd)
{
	return cal->nholidays > 0 &&
		bsearch(&jd, cal->holidays, cal->nholidays, sizeof(int), compare_days) != NULL;
}

/* The local wall-clock time of instant t in the calendar's zone, as a timestamp without zone. */
static bool
wall_clock(const OwCalendar *cal, TimestampTz t, Timestamp *wall)
{
	struct pg_tm tm;
	fsec_t		fsec;
	int			tz;

	return timestamp2tm(t, &tz, &tm, &fsec, NULL, cal->tz) == 0 &&
		tm2timestamp(&tm, fsec, NULL, wall) == 0;
}

/*
 * The instant of local time tod (microseconds since midnight, up to 24:00)
 * on Julian day jd in the calendar's zone, as core reads a local time
 * (DetermineTimeZoneOffset, then tm2timestamp).  A local time that a
 * daylight-saving change skips is the instant of the change: core reads
 * it with the offset before the change, an instant after it, from which
 * the change is found by bisection (the offset changes once in between).
 * False past the range of timestamps.
 */
static bool
local_instant(const OwCalendar *cal, int jd, int64 tod, TimestampTz *out)
{
	struct pg_tm tm;
	int			tz;
	Timestamp	want;
	Timestamp	wall;
	TimestampTz lo;
	TimestampTz hi;
	int64		offset;

	if (tod >= USECS_PER_DAY)
	{
		jd++;
		tod -= USECS_PER_DAY;
	}
	memset(&tm, 0, sizeof(tm));
	j2date(jd, &tm.tm_year, &tm.tm_mon, &tm.tm_mday);
	tm.tm_hour = (int) (tod / USECS_PER_HOUR);
	tm.tm_min = (int) ((tod / USECS_PER_MINUTE) % 60);
	if (tm2timestamp(&tm, 0, NULL, &want) != 0)
		return false;
	tz = DetermineTimeZoneOffset(&tm, cal->tz);
	if (tm2timestamp(&tm, 0, &tz, out) != 0 || !wall_clock(cal, *out, &wall))
		return false;
	if (wall == want)
		return true;

	/* skipped: the change is after *out less the jump, at or before *out */
	offset = wall - *out;
	lo = *out - (wall - want);
	hi = *out;
	while (hi - lo > 1)
	{
		TimestampTz mid = lo + (hi - lo) / 2;

		if (!wall_clock(cal, mid, &wall))
			return false;
		if (wall - mid == offset)
			hi = mid;
		else
			lo = mid;
	}
	*out = hi;
	return true;
}

/*
 * start plus each of n amounts of the calendar's working time (ms[i]
 * milliseconds, at least 1): due[i] the instant the amount has been
 * worked, or DT_NOEND when that is not within OW_CALENDAR_MAX_DAYS days of
 * start's local date.  One walk serves them all.
 */
void
ow_calendar_add(const OwCalendar *cal, TimestampTz start, int n, const int64 *ms, TimestampTz *due)
{
	/* more than the days could hold, with every repeated hour worked twice: never */
	const int64 most = (int64) (OW_CALENDAR_MAX_DAYS + 1) * USECS_PER_DAY + 400 * USECS_PER_HOUR;
	int64	   *left = palloc(sizeof(int64) * Max(n, 1));
	int			open = 0;
	int			i;
	struct pg_tm tm;
	fsec_t		fsec;
	int			tz;
	int			jd;
	int			day;
	int64		worked = 0;

	for (i = 0; i < n; i++)
	{
		due[i] = DT_NOEND;
		if (ms[i] >= 1 && ms[i] <= most / 1000)
		{
			left[i] = ms[i] * 1000;
			open++;
		}
		else
			left[i] = -1;
	}
	if (open == 0 || timestamp2tm(start, &tz, &tm, &fsec, NULL, cal->tz) != 0)
		return;
	jd = date2j(tm.tm_year, tm.tm_mon, tm.tm_mday);
	for (day = 0; day < OW_CALENDAR_MAX_DAYS && open > 0; day++, jd++)
	{
		int			wd = j2day(jd);

		CHECK_FOR_INTERRUPTS(); /* 100 years of days: some tens of milliseconds at the most */
		if (is_holiday(cal, jd))
			continue;
		for (i = 0; i < cal->nspans[wd] && open > 0; i++)
		{
			TimestampTz from;
			TimestampTz to;
			int			k;

			if (!local_instant(cal, jd, cal->week[wd][i].start, &from) ||
				!local_instant(cal, jd, cal->week[wd][i].end, &to))
				return;
			if (from < start)
				from = start;
			if (to <= from)
				continue;
			for (k = 0; k < n; k++)
				if (left[k] > 0 && left[k] - worked <= to - from)
				{
					due[k] = from + (left[k] - worked);
					left[k] = -1;
					open--;
				}
			worked += to - from;
		}
	}
}
