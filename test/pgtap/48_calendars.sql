-- Business calendars and due dates (README, "Deadlines in working time"):
-- calendars are versioned documents in an append-only log, set by
-- openwop_policy_admin only, each tenant's own; a policy naming one makes
-- the gates it pins measure their deadline (timeoutMs, maxTimeoutMs) and
-- their due date (dueAfterMs) in working time on the version current at
-- the raise; due_at() and the inbox say when a gate falls due.  Every bad
-- input refused with nothing stored.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir refusal.psql
\ir callers.psql

\ir policy_admin.psql
CREATE ROLE tap_cal_dba LOGIN;
CREATE ROLE tap_cal_clerk LOGIN;
GRANT openwop_policy_admin TO tap_cal_dba;

CREATE FUNCTION pg_temp.as_dba(sql text, bound text DEFAULT 'acme') RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_login('tap_cal_dba', bound, sql)
$$;
CREATE FUNCTION pg_temp.set_calendar(name text, calendar jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_dba(format('SELECT openwop.set_calendar(%L, %L)', name, calendar))
$$;
-- when after of working time from "from" has passed, on calendar name
CREATE FUNCTION pg_temp.due(name text, "from" timestamptz, after interval) RETURNS timestamptz LANGUAGE sql AS $$
  SELECT (pg_temp.as_dba(format('SELECT to_jsonb(openwop.calendar_due(%L, %L, %s))', name, "from",
                                (extract(epoch FROM after) * 1000)::bigint)) #>> '{}')::timestamptz
$$;
CREATE FUNCTION pg_temp.field(name text, calendar jsonb) RETURNS text LANGUAGE sql AS $$
  SELECT pg_temp.set_calendar(name, calendar) -> 'details' ->> 'field'
$$;
CREATE FUNCTION pg_temp.gate(run text, wf text, extra jsonb DEFAULT '{}') RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
  PERFORM openwop.create_run(wf, jsonb_build_object('runId', run));
  PERFORM openwop.start_node(run, 'gate');
  RETURN openwop.interrupt(run, 'gate', jsonb_build_object('kind', 'approval', 'data',
           jsonb_build_object('artifactId', 'a', 'artifactType', 'doc', 'title', 'T', 'actions', '["accept", "reject"]'::jsonb)) || extra);
END $$;
CREATE FUNCTION pg_temp.iid(run text) RETURNS text LANGUAGE sql AS $$
  SELECT interrupt_id FROM openwop.interrupts WHERE run_id = run
$$;
SET LOCAL timezone = 'UTC';

/* ------------------------------------------------------------------
 * Who may set calendars
 * ------------------------------------------------------------------ */
SELECT is(pg_temp.as_login('tap_cal_clerk', 'acme', $$ SELECT openwop.set_calendar('c', '{"timezone": "UTC", "week": {"mon": [["09:00", "17:00"]]}}') $$)
            ->> 'sqlstate', '42501', 'calendar_admin_required: a login without openwop_policy_admin has no EXECUTE');
GRANT USAGE ON SCHEMA openwop TO tap_cal_clerk;
GRANT EXECUTE ON FUNCTION openwop.set_calendar(text, jsonb, text), openwop.calendar_due(text, timestamptz, bigint, text) TO tap_cal_clerk;
SELECT is(pg_temp.as_login('tap_cal_clerk', 'acme', $$ SELECT openwop.set_calendar('c', '{"timezone": "UTC", "week": {"mon": [["09:00", "17:00"]]}}') $$)
            -> 'details' ->> 'requiredRole', 'openwop_policy_admin',
          '... nor with EXECUTE granted: 403 forbidden naming the role');
SELECT is(pg_temp.as_login('tap_cal_clerk', 'acme', $$ SELECT to_jsonb(openwop.calendar_due('c', now(), 1)) $$) ->> 'code', 'forbidden',
          'calendar_due is for policy admins too');
SELECT is(pg_temp.refusal($$ SELECT openwop.set_calendar('c', '{"timezone": "UTC", "week": {"mon": [["09:00", "17:00"]]}}') $$) ->> 'code',
          'forbidden', 'calendar_superuser_needs_the_grant: a superuser login is a plain login here');
SELECT is(pg_temp.refusal($$ SELECT pg_temp.as_request('{"sub": "tap_cal_dba", "tenant": "acme", "scope": "approvals:respond"}',
                                                       $q$ SELECT openwop.set_calendar('c', '{"timezone": "UTC", "week": {"mon": [["09:00", "17:00"]]}}') $q$) $$)
            ->> 'code', 'forbidden', 'calendar_admin_sql_only: a request session never sets calendars');

/* ------------------------------------------------------------------
 * Setting, versions, the view
 * ------------------------------------------------------------------ */
SELECT is(pg_temp.set_calendar('office', '{"timezone": "Europe/Berlin", "description": "Berlin office",
                                           "week": {"mon": [["09:00", "12:00"], ["13:00", "17:00"]], "tue": [["09:00", "17:00"]],
                                                    "wed": [["09:00", "17:00"]], "thu": [["09:00", "17:00"]], "fri": [["09:00", "17:00"]]},
                                           "holidays": ["2026-12-25", "2026-12-24"]}'),
          '{"name": "office", "tenant": "acme", "version": 1}', 'set_calendar: {name, tenant, version}');
SELECT is(pg_temp.as_dba($$ SELECT jsonb_agg(jsonb_build_array(name, tenant, version, set_by, active)) FROM openwop.calendars $$),
          '[["office", "acme", 1, "tap_cal_dba", true]]', 'calendars view: every version, who set it, the active one');
SELECT is(pg_temp.as_login('tap_cal_clerk', 'acme', $$ SELECT to_jsonb(count(*)) FROM openwop.calendars $$) ->> 'sqlstate', '42501',
          '... not for everyone');
SELECT is(pg_temp.refusal($$ UPDATE openwop.calendar_log SET calendar = '{}' WHERE name = 'office' $$) ->> 'sqlstate', '42501',
          'calendar_log_append_only: no version is changed');
SELECT is(pg_temp.refusal($$ DELETE FROM openwop.calendar_log $$) ->> 'sqlstate', '42501', '... or removed');
SELECT is(pg_temp.refusal($$ TRUNCATE openwop.calendar_log $$) ->> 'sqlstate', '42501', '... or truncated');

/* ------------------------------------------------------------------
 * Working time
 * ------------------------------------------------------------------ */
SELECT is(pg_temp.due('office', '2026-12-04 15:00+01', '3 hours'), '2026-12-07 10:00+01',
          'calendar_working_hours: Friday 15:00 plus three hours is Monday 10:00 (two on Friday, none at the weekend)');
SELECT is(pg_temp.due('office', '2026-12-07 11:30+01', '1 hour'), '2026-12-07 13:30+01',
          'calendar_working_hours: the lunch break is not worked');
SELECT is(pg_temp.due('office', '2026-12-05 10:00+01', '1 hour'), '2026-12-07 10:00+01',
          '... a deadline set at the weekend starts on Monday');
SELECT is(pg_temp.due('office', '2026-12-04 17:00+01', '7 hours'), '2026-12-07 17:00+01',
          '... and a span ending exactly at the deadline ends it');
SELECT is(pg_temp.due('office', '2026-12-23 16:00+01', '2 hours'), '2026-12-28 10:00+01',
          'calendar_holiday_shifts_due: the 24th and 25th are not worked');
SELECT is(pg_temp.due('office', '2026-03-27 16:00+01', '2 hours'), '2026-03-30 10:00+02',
          'calendar_follows_daylight_saving: working hours are the zone''s local time, before and after the change');
DO $$ BEGIN PERFORM pg_temp.set_calendar('ny-gap', '{"timezone": "America/New_York", "week": {"sun": [["02:00", "02:30"]]}}');
            PERFORM pg_temp.set_calendar('ny-across', '{"timezone": "America/New_York", "week": {"sun": [["01:30", "02:30"]]}}');
            PERFORM pg_temp.set_calendar('ny-back', '{"timezone": "America/New_York", "week": {"sun": [["01:00", "02:00"]]}}');
            PERFORM pg_temp.set_calendar('apia', '{"timezone": "Pacific/Apia", "week": {"mon": [["09:00", "17:00"]], "tue": [["09:00", "17:00"]],
                                                   "wed": [["09:00", "17:00"]], "thu": [["09:00", "17:00"]], "fri": [["09:00", "17:00"]]}}'); END $$;
SELECT is(pg_temp.due('ny-gap', '2026-03-07 12:00 America/New_York', '1 minute'), '2026-03-15 02:01 America/New_York',
          'calendar_skipped_hour_not_worked: a span inside the hour the spring change skips is not worked');
SELECT is(jsonb_build_array(pg_temp.due('ny-across', '2026-03-07 12:00 America/New_York', '30 minutes'),
                            pg_temp.due('ny-across', '2026-03-07 12:00 America/New_York', '31 minutes')),
          jsonb_build_array('2026-03-08 03:00 America/New_York'::timestamptz, '2026-03-15 01:31 America/New_York'::timestamptz),
          '... a span running into it is worked until the change: half an hour');
SELECT is(jsonb_build_array(pg_temp.due('ny-back', '2026-10-31 12:00 America/New_York', '60 minutes'),
                            pg_temp.due('ny-back', '2026-10-31 12:00 America/New_York', '61 minutes')),
          jsonb_build_array('2026-11-01 07:00+00'::timestamptz, '2026-11-08 06:01+00'::timestamptz),
          'calendar_repeated_hour_worked_once: 01:00 to 02:00 on the autumn change is read as PostgreSQL reads it, the later 01:00');
SELECT is(jsonb_build_array(pg_temp.due('apia', '2011-12-29 10:00 Pacific/Apia', '8 hours') AT TIME ZONE 'Pacific/Apia',
                            pg_temp.due('apia', '2011-12-29 10:00 Pacific/Apia', '16 hours') AT TIME ZONE 'Pacific/Apia'),
          '["2012-01-02T10:00:00", "2012-01-03T10:00:00"]',
          'calendar_skipped_day_not_worked: Samoa skipped Friday 30 December 2011; nor is the Saturday after it worked');
SELECT is(pg_temp.due('office', '2026-12-04 15:00+01', '40 hours'), '2026-12-11 16:00+01',
          'calendar_working_hours: forty hours from Friday afternoon end the next Friday afternoon (a week here is 39)');
SELECT is(pg_temp.as_dba($$ SELECT to_jsonb(openwop.calendar_due('nope', now(), 1)) $$) - 'message',
          '{"code": "not_found", "sqlstate": "PT404", "details": {"name": "nope", "field": "name", "tenant": "acme"}}',
          'calendar_due of a calendar never set is 404 naming it');
SELECT is(pg_temp.as_dba($$ SELECT to_jsonb(openwop.calendar_due('office', now(), 0)) $$) -> 'details' ->> 'field', 'afterMs',
          'calendar_due_bad_input: after_ms below 1');
SELECT is(pg_temp.as_dba($$ SELECT to_jsonb(openwop.calendar_due('office', 'infinity', 1)) $$) -> 'details' ->> 'field', 'from',
          '... an infinite start');
DO $$ BEGIN PERFORM pg_temp.set_calendar('rare', '{"timezone": "UTC", "week": {"sun": [["00:00", "00:01"]]}}'); END $$;
SELECT is(pg_temp.as_dba($$ SELECT to_jsonb(openwop.calendar_due('rare', '2026-12-06', 3600000 * 24)) $$), '"2054-07-05T00:01:00+00:00"',
          'calendar_working_hours: a minute a week, a day of work: 1,440 weeks on');
SELECT is(pg_temp.as_dba($$ SELECT to_jsonb(openwop.calendar_due('rare', '2026-12-06', 3600000::bigint * 24 * 60)) $$), NULL,
          'calendar_beyond_100_years: sixty days of work at a minute a week would be 1,600 years away: never due');

/* ------------------------------------------------------------------
 * Bad documents: each refused, naming the field, nothing stored
 * ------------------------------------------------------------------ */
SELECT is(jsonb_build_array(
            pg_temp.field('bad', '{"week": {"mon": [["09:00", "17:00"]]}}'),
            pg_temp.field('bad', '{"timezone": "Mars/Olympus_Mons", "week": {"mon": [["09:00", "17:00"]]}}'),
            pg_temp.field('bad', '{"timezone": "UTC", "week": {}}'),
            pg_temp.field('bad', '{"timezone": "UTC", "week": {"moon": [["09:00", "17:00"]]}}'),
            pg_temp.field('bad', '{"timezone": "UTC", "week": {"mon": [["17:00", "09:00"]]}}'),
            pg_temp.field('bad', '{"timezone": "UTC", "week": {"mon": [["09:00", "09:00"]]}}'),
            pg_temp.field('bad', '{"timezone": "UTC", "week": {"mon": [["09:00", "12:00"], ["11:00", "13:00"]]}}'),
            pg_temp.field('bad', '{"timezone": "UTC", "week": {"mon": [["09:00", "24:01"]]}}'),
            pg_temp.field('bad', '{"timezone": "UTC", "week": {"mon": [["9:00", "17:00"]]}}'),
            pg_temp.field('bad', '{"timezone": "UTC", "week": {"mon": [["09:00"]]}}'),
            pg_temp.field('bad', '{"timezone": "UTC", "week": {"mon": [["09:00", "17:00"]]}, "holidays": ["2026-02-30"]}'),
            pg_temp.field('bad', '{"timezone": "UTC", "week": {"mon": [["09:00", "17:00"]]}, "holidays": ["26-02-01"]}'),
            pg_temp.field('bad', '{"timezone": "UTC", "week": {"mon": [["09:00", "17:00"]]}, "weekend": []}'),
            pg_temp.field('bad', '"UTC"'),
            pg_temp.field('bad name', '{"timezone": "UTC", "week": {"mon": [["09:00", "17:00"]]}}'),
            pg_temp.as_dba($$ SELECT openwop.set_calendar('bad', NULL) $$) -> 'details' ->> 'field'),
          '["calendar", "calendar.timezone", "calendar.week", "calendar.week.moon", "calendar.week.mon[0]", "calendar.week.mon[0]",
            "calendar.week.mon[1]", "calendar.week.mon[0][1]", "calendar.week.mon[0][0]", "calendar.week.mon[0]", "calendar.holidays[0]",
            "calendar.holidays[0]", "calendar.weekend", "calendar", "name", "calendar"]',
          'calendar_bad_input: no zone, an unknown zone, no working hours, an unknown day, a span that ends before it starts or when it starts, overlapping spans, past 24:00, a time without two digits, half a span, a date that does not exist, a short year, an unknown member, not an object, a bad name, null');
SELECT is(jsonb_build_array(
            pg_temp.field('zone', '{"timezone": "EUROPE/BERLIN", "week": {"mon": [["09:00", "17:00"]]}}'),
            pg_temp.field('zone', '{"timezone": "GMT+99", "week": {"mon": [["09:00", "17:00"]]}}'),
            pg_temp.field('zone', '{"timezone": "<+00>0", "week": {"mon": [["09:00", "17:00"]]}}'),
            pg_temp.field('zone', '{"timezone": "localtime", "week": {"mon": [["09:00", "17:00"]]}}'),
            pg_temp.field('zone', '{"timezone": "posixrules", "week": {"mon": [["09:00", "17:00"]]}}'),
            pg_temp.field('zone', '{"timezone": "Factory", "week": {"mon": [["09:00", "17:00"]]}}'),
            pg_temp.field('zone', '{"timezone": "posix/Europe/Berlin", "week": {"mon": [["09:00", "17:00"]]}}'),
            pg_temp.field('zone', '{"timezone": "right/UTC", "week": {"mon": [["09:00", "17:00"]]}}'),
            pg_temp.field('zone', '{"timezone": "../../../etc/passwd", "week": {"mon": [["09:00", "17:00"]]}}')),
          '["calendar.timezone", "calendar.timezone", "calendar.timezone", "calendar.timezone", "calendar.timezone",
            "calendar.timezone", "calendar.timezone", "calendar.timezone", "calendar.timezone"]',
          'calendar_zone_is_a_place: a zone is a file of the time zone database spelt as it spells it: not another case, a POSIX rule, the server''s localtime, posixrules, Factory, posix/ or right/ (leap seconds), a path');
SELECT is(pg_temp.set_calendar('zone', '{"timezone": "UTC", "week": {"mon": [["09:00", "17:00"]]}}') ->> 'version', '1', '... UTC is one');
SELECT is(pg_temp.as_dba($$ SELECT openwop.set_calendar('other', '{"timezone": "UTC", "week": {"mon": [["09:00", "17:00"]]}}', 'globex') $$) ->> 'code',
          'id_tenant_mismatch', 'calendar_bad_input: a tenant the caller is not bound to');
SELECT is((SELECT count(*) FROM openwop.calendar_log WHERE name IN ('bad', 'bad name', 'other') OR (name = 'zone' AND version > 1)), 0::bigint,
          '... and nothing refused was stored');

/* ------------------------------------------------------------------
 * Gates under a policy naming a calendar
 * ------------------------------------------------------------------ */
SELECT is(pg_temp.as_dba($$ SELECT openwop.set_approval_policy('p', '{"appliesTo": {"workflowId": "cal", "nodeId": "*"}, "calendar": "nope"}') $$)
            -> 'details' ->> 'field', 'policy.calendar', 'policy_calendar_must_exist: a policy naming a calendar never set is refused');
SELECT is((SELECT count(*) FROM openwop.approval_policy_log WHERE name = 'p'), 0::bigint, '... and not stored');
DO $d$ BEGIN PERFORM pg_temp.as_dba($$ SELECT openwop.set_approval_policy('office-hours',
                      '{"appliesTo": {"workflowId": "cal", "nodeId": "*"}, "calendar": "office", "maxTimeoutMs": 7200000, "dueAfterMs": 3600000}') $$); END $d$;
SELECT pg_temp.gate('acme/cal-gate-0000000000001', 'cal') IS NOT NULL AS raised \gset
SELECT is((SELECT policy -> 'calendar' FROM openwop.interrupts WHERE run_id = 'acme/cal-gate-0000000000001'),
          '{"name": "office", "version": 1}', 'calendar_pinned_at_raise: the gate records the calendar''s name and version');
SELECT is((SELECT expires_at FROM openwop.interrupts WHERE run_id = 'acme/cal-gate-0000000000001'),
          pg_temp.due('office', now(), '2 hours'),
          'calendar_deadline_in_working_time: the policy''s two-hour deadline is two working hours from the raise');
SELECT is(openwop.due_at(pg_temp.iid('acme/cal-gate-0000000000001')), pg_temp.due('office', now(), '1 hour'),
          'due_at: the due date the policy set (dueAfterMs), in working time');
CREATE TEMP TABLE first_due AS SELECT openwop.due_at(pg_temp.iid('acme/cal-gate-0000000000001')) AS due;
DO $$ BEGIN PERFORM pg_temp.set_calendar('office', '{"timezone": "Europe/Berlin", "week": {"sat": [["09:00", "10:00"]]}}'); END $$;
SELECT is(openwop.due_at(pg_temp.iid('acme/cal-gate-0000000000001')), (SELECT due FROM first_due),
          'calendar_change_never_reaches_open_gate: a new version does not move a waiting gate''s due date ...');
SELECT is((SELECT expires_at FROM openwop.interrupts WHERE run_id = 'acme/cal-gate-0000000000001') <> pg_temp.due('office', now(), '2 hours'), true,
          'calendar_change_never_reaches_open_gate: version 2 would put the deadline elsewhere, the gate keeps version 1''s');
DO $$ BEGIN PERFORM pg_temp.gate('acme/cal-gate-0000000000002', 'cal'); END $$;
SELECT is((SELECT policy -> 'calendar' FROM openwop.interrupts WHERE run_id = 'acme/cal-gate-0000000000002'),
          '{"name": "office", "version": 2}', '... a gate raised after it pins version 2');
SELECT is((SELECT expires_at FROM openwop.interrupts WHERE run_id = 'acme/cal-gate-0000000000002'),
          pg_temp.due('office', now(), '2 hours'), '... and has its deadline on it');
SELECT is(pg_temp.gate('acme/cal-gate-0000000000003', 'cal', '{"timeoutMs": 60000}') IS NOT NULL, true, 'a gate asking for a one-minute timeout');
SELECT is((SELECT expires_at FROM openwop.interrupts WHERE run_id = 'acme/cal-gate-0000000000003'),
          pg_temp.due('office', now(), '1 minute'), 'calendar_engine_timeout_in_working_time: the engine''s timeoutMs is working time too');

-- a calendar that cannot be read any more (its zone gone from the server's
-- time zone database, as an OS upgrade may remove alias names): its
-- gates are refused with 55000 naming it, never blamed on the engine
DO $d$ BEGIN PERFORM pg_temp.set_calendar('gone', '{"timezone": "UTC", "week": {"mon": [["09:00", "17:00"]]}}');
             PERFORM pg_temp.as_dba($$ SELECT openwop.set_approval_policy('gone', '{"appliesTo": {"workflowId": "gone", "nodeId": "*"}, "calendar": "gone"}') $$); END $d$;
INSERT INTO openwop.calendar_log VALUES ('acme', 'gone', 2, '{"timezone": "Atlantis/Capital", "week": {"mon": [["09:00", "17:00"]]}}', 'test', now());
SELECT is(pg_temp.refusal($$ SELECT pg_temp.gate('acme/cal-gone-0000000000001', 'gone') $$) - 'message',
          '{"code": "business calendar \"gone\" of tenant \"acme\" (version 2) cannot be read", "details": null, "sqlstate": "55000"}',
          'calendar_unreadable_refused_55000: a gate under a calendar that cannot be read is refused, naming the calendar, not the engine''s request');
SELECT is((SELECT count(*) FROM openwop.runs WHERE run_id = 'acme/cal-gone-0000000000001'), 0::bigint, '... with nothing half-applied');
SELECT is(pg_temp.as_dba($$ SELECT to_jsonb(openwop.calendar_due('gone', now(), 1)) $$) ->> 'sqlstate', '55000', '... and calendar_due says so too');
SELECT is(pg_temp.set_calendar('gone', '{"timezone": "UTC", "week": {"mon": [["09:00", "17:00"]]}}') ->> 'version', '3',
          '... which a new version mends');
SELECT is(pg_temp.refusal($$ SELECT pg_temp.gate('acme/cal-gone-0000000000001', 'gone') $$), NULL, '... and the gate is raised');

-- without a policy, and without a calendar: the wall clock
DO $$ BEGIN PERFORM pg_temp.gate('acme/cal-gate-0000000000004', 'plain', '{"timeoutMs": 60000}'); END $$;
SELECT is(openwop.due_at(pg_temp.iid('acme/cal-gate-0000000000004')), now() + interval '1 minute',
          'due_at: a gate under no policy falls due at its wall-clock deadline');
DO $$ BEGIN PERFORM pg_temp.gate('acme/cal-gate-0000000000005', 'plain'); END $$;
SELECT is(openwop.due_at(pg_temp.iid('acme/cal-gate-0000000000005')), NULL, '... one with no deadline never does');
DO $d$ BEGIN PERFORM pg_temp.as_dba($$ SELECT openwop.set_approval_policy('wall', '{"appliesTo": {"workflowId": "wall", "nodeId": "*"}, "dueAfterMs": 1000}') $$);
             PERFORM pg_temp.gate('acme/cal-gate-0000000000006', 'wall'); END $d$;
SELECT is(openwop.due_at(pg_temp.iid('acme/cal-gate-0000000000006')), date_trunc('milliseconds', now()) + interval '1 second',
          'due_at: a policy''s dueAfterMs without a calendar is wall-clock time');

-- the inbox
SELECT is(pg_temp.as_request('{"sub": "ann", "tenant": "acme", "scope": "approvals:respond"}',
            $$ SELECT jsonb_agg(jsonb_build_array(run_id, due_at = openwop.due_at(interrupt_id), overdue) ORDER BY run_id)
                 FROM openwop.pending_interrupts WHERE run_id IN ('acme/cal-gate-0000000000001', 'acme/cal-gate-0000000000005') $$),
          '[["acme/cal-gate-0000000000001", true, false], ["acme/cal-gate-0000000000005", null, false]]',
          'inbox_due_at: the inbox shows due_at and overdue');
SELECT pg_sleep(1.1);
SELECT is(pg_temp.as_request('{"sub": "ann", "tenant": "acme", "scope": "approvals:respond"}',
            $$ SELECT jsonb_agg(overdue) FROM openwop.pending_interrupts WHERE run_id = 'acme/cal-gate-0000000000006' $$),
          '[true]', 'inbox_overdue: a gate past the due date its policy set stays in the inbox, overdue');

-- who may read a due date
SELECT is(pg_temp.as_request('{"sub": "ann", "tenant": "acme", "scope": "approvals:respond"}',
            format('SELECT to_jsonb(openwop.due_at(%L))', pg_temp.iid('acme/cal-gate-0000000000004'))),
          to_jsonb(now() + interval '1 minute'), 'due_at: an approver reads it');
GRANT EXECUTE ON FUNCTION openwop.due_at(text) TO tap_cal_clerk;
SELECT is(pg_temp.as_login('tap_cal_clerk', 'acme', format('SELECT to_jsonb(openwop.due_at(%L))', pg_temp.iid('acme/cal-gate-0000000000004')))
            - 'message',
          '{"code": "forbidden", "details": {"requiredScope": "approvals:respond"}, "sqlstate": "PT403"}',
          'due_at_needs_scope: a login without approvals:respond, which may not read event logs, may not');
SELECT is(pg_temp.refusal($$ SELECT pg_temp.as_request('{"sub": "ann", "tenant": "globex", "scope": "approvals:respond"}',
                               format('SELECT to_jsonb(openwop.due_at(%L))', pg_temp.iid('acme/cal-gate-0000000000004'))) $$) ->> 'code',
          'id_tenant_mismatch', 'due_at_other_tenant: an interrupt of another tenant is refused from its id');
SELECT is(pg_temp.refusal($$ SELECT openwop.due_at('acme/AAAAAAAAAAAAAAAAAAAAAA') $$) ->> 'code', 'not_found', 'due_at: an unknown id is 404');
SELECT is(pg_temp.refusal($$ SELECT openwop.due_at(NULL) $$) ->> 'code', 'validation_error', '... a null one 400');

SELECT * FROM finish();
ROLLBACK;
