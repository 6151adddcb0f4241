/*-------------------------------------------------------------------------
 *
 * worktime.c
 *	  Business calendars: a calendar document checked and read (a time
 *	  zone, working hours for each day of the week, holidays), and an
 *	  amount of working time added to an instant in it.
 *
 * Working hours are local times of the calendar's zone, so a deadline
 * follows the zone's daylight-saving changes as its people do; an hour
 * that a change skips is not worked, one it repeats is worked twice.
 * Time is added day by day from the start's local date, over at most
 * OW_CALENDAR_MAX_DAYS days: a deadline further away than that (a
 * calendar of an hour a week and a timeout of centuries) never falls due,
 * as a wall-clock deadline past the year 100000 never does.
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

static int
compare_days(const void *a, const void *b)
{
	int			x = *(const int *) a;
	int			y = *(const int *) b;

	return (x > y) - (x < y);
}

/*
 * Check calendar document doc and read it into cal (prefix: the field
 * name of the document in errors, e.g. "calendar").  A bad document is a
 * 400 validation_error naming the field.
 */
void
ow_calendar_read(Jsonb *doc, const char *prefix, OwCalendar *cal)
{
	Jsonb	   *schema = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(calendar_schema)));
	char	   *errors;
	JsonbValue *v;
	char	   *zone;
	int			d;
	int			spans = 0;

	if (!ow_schema_validate(schema, doc, &errors))
		ow_validation_errors(ow_schema_error_field(errors, prefix), errors, NULL,
							 "the business calendar is not valid");
	memset(cal, 0, sizeof(*cal));

	zone = owj_string(owj_get(doc, "timezone"));
	cal->tz = pg_tzset(zone);
	if (cal->tz == NULL || !pg_tz_acceptable(cal->tz))
		ow_validation_error(psprintf("%s.timezone", prefix),
							"\"%s\" is not a time zone PostgreSQL knows (an IANA name such as \"Europe/Berlin\")",
							ow_echo(zone));

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

/*
 * The instant of local time tod (microseconds since midnight, up to 24:00)
 * on Julian day jd in the calendar's zone, as core reads a local time
 * (DetermineTimeZoneOffset, then tm2timestamp).  False past the range of
 * timestamps.
 */
static bool
local_instant(const OwCalendar *cal, int jd, int64 tod, TimestampTz *out)
{
	struct pg_tm tm;
	int			tz;

	if (tod >= USECS_PER_DAY)
	{
		jd++;
		tod -= USECS_PER_DAY;
	}
	memset(&tm, 0, sizeof(tm));
	j2date(jd, &tm.tm_year, &tm.tm_mon, &tm.tm_mday);
	tm.tm_hour = (int) (tod / USECS_PER_HOUR);
	tm.tm_min = (int) ((tod / USECS_PER_MINUTE) % 60);
	tz = DetermineTimeZoneOffset(&tm, cal->tz);
	return tm2timestamp(&tm, 0, &tz, out) == 0;
}

/*
 * start plus ms milliseconds of the calendar's working time: the instant
 * the amount has been worked.  False when that is not within
 * OW_CALENDAR_MAX_DAYS days of start's local date (or past the range of
 * timestamps): it never falls due.
 */
bool
ow_calendar_add(const OwCalendar *cal, TimestampTz start, int64 ms, TimestampTz *due)
{
	int64		left;
	struct pg_tm tm;
	fsec_t		fsec;
	int			tz;
	int			jd;
	int			day;

	if (pg_mul_s64_overflow(ms, 1000, &left) || left <= 0 ||
		timestamp2tm(start, &tz, &tm, &fsec, NULL, cal->tz) != 0)
		return false;
	jd = date2j(tm.tm_year, tm.tm_mon, tm.tm_mday);
	for (day = 0; day < OW_CALENDAR_MAX_DAYS; day++, jd++)
	{
		int			wd = j2day(jd);
		int			i;

		CHECK_FOR_INTERRUPTS(); /* 100 years of days: about 20 ms at the most */
		if (is_holiday(cal, jd))
			continue;
		for (i = 0; i < cal->nspans[wd]; i++)
		{
			TimestampTz from;
			TimestampTz to;

			if (!local_instant(cal, jd, cal->week[wd][i].start, &from) ||
				!local_instant(cal, jd, cal->week[wd][i].end, &to))
				return false;
			if (from < start)
				from = start;
			if (to <= from)
				continue;
			if (left <= to - from)
			{
				*due = from + left;
				return true;
			}
			left -= to - from;
		}
	}
	return false;
}
