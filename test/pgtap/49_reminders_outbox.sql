-- Reminders, escalation and the notification outbox (issue 36): a policy's
-- reminder ladder and escalation are planned at the raise as rows of
-- openwop.gate_steps, each fired once (here by openwop.sweep(), which runs
-- the worker's code in this transaction); a reminder tells whoever has not
-- voted and changes nothing else; an escalation's group may vote from its
-- instant, counted once, and the quorum stays; a gate that closed first
-- loses its steps unfired.  While openwop.notification_outbox is on, each
-- event of an approval gate writes a row per recipient to
-- openwop.notifications, which senders claim with a lease and acknowledge,
-- each within its tenant.
--
-- A step's instant is afterMs after the raising transaction's start, and
-- this file is one transaction: a policy step of a few milliseconds has
-- passed by the time a gate is raised, and one of an hour never passes
-- here.  Nothing waits for the clock: where the file needs time to pass
-- (a step due, a lease ended) it moves the row's instant back as the
-- superuser, and says so.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
SET LOCAL timezone = 'UTC';
SET LOCAL openwop.notification_outbox = on;
\ir refusal.psql
\ir callers.psql

\ir policy_admin.psql
CREATE ROLE tap_out_dba LOGIN;
CREATE ROLE tap_out_sender LOGIN;
CREATE ROLE tap_out_clerk LOGIN;
CREATE ROLE tap_out_approver LOGIN;
GRANT openwop_policy_admin TO tap_out_dba;
GRANT openwop_notification_sender TO tap_out_sender;
GRANT openwop_approver TO tap_out_approver;
GRANT USAGE ON SCHEMA openwop TO tap_out_clerk;

CREATE FUNCTION pg_temp.set_policy(name text, policy jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_login('tap_out_dba', 'acme', format('SELECT openwop.set_approval_policy(%L, %L)', name, policy))
$$;
-- a gate raised by the engine (this login) in workflow wf, its run requested by requester; returns the run's status
CREATE FUNCTION pg_temp.gate(run text, wf text, data jsonb DEFAULT '{}', requester text DEFAULT NULL, extra jsonb DEFAULT '{}')
    RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  PERFORM openwop.create_run(wf, jsonb_build_object('runId', run), requester);
  PERFORM openwop.start_node(run, 'gate');
  RETURN openwop.interrupt(run, 'gate', jsonb_build_object('kind', 'approval', 'data',
           jsonb_build_object('artifactId', 'a', 'artifactType', 'doc', 'title', 'T',
                              'actions', '["accept", "reject", "ask"]'::jsonb) || data) || extra) ->> 'status';
END $$;
CREATE FUNCTION pg_temp.iid(run text) RETURNS text LANGUAGE sql AS $$
  SELECT interrupt_id FROM openwop.interrupts WHERE run_id = run
$$;
CREATE FUNCTION pg_temp.jwt(who text, tenant text DEFAULT 'acme') RETURNS jsonb LANGUAGE sql AS $$
  SELECT jsonb_build_object('sub', who, 'tenant', tenant, 'scope', 'approvals:respond')
$$;
CREATE FUNCTION pg_temp.vote(run text, who text, action text DEFAULT 'accept') RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_request(pg_temp.jwt(who), format('SELECT openwop.resolve_interrupt(%L, %L, %L)', run, 'gate', jsonb_build_object('action', action)))
$$;
CREATE FUNCTION pg_temp.refused_vote(run text, who text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.refusal(format('SELECT pg_temp.vote(%L, %L)', run, who))
$$;
CREATE FUNCTION pg_temp.withdraw(run text, who text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_request(pg_temp.jwt(who), format('SELECT openwop.withdraw_vote(%L, %L)', run, 'gate'))
$$;
-- the gate's tally as who reads it in the inbox
CREATE FUNCTION pg_temp.tally(run text, who text DEFAULT 'ann') RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_request(pg_temp.jwt(who), format(
    'SELECT jsonb_build_object(''required'', required_approvals, ''accepts'', accepts, ''voters'', voters) FROM openwop.pending_interrupts WHERE run_id = %L', run))
$$;
-- who was told of run's gate, for notifications of kind, sorted
CREATE FUNCTION pg_temp.told(run text, k text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT coalesce(jsonb_agg(recipient ORDER BY recipient), '[]') FROM openwop.notifications WHERE run_id = run AND kind = k
$$;
-- the steps of run's gate: [step, kind, fired, notified]
CREATE FUNCTION pg_temp.steps(run text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT coalesce(jsonb_agg(jsonb_build_array(step, kind, fired_at IS NOT NULL, notified) ORDER BY step), '[]')
    FROM openwop.gate_steps WHERE run_id = run
$$;
-- the eligibility record's matched refs of who's last vote on run
CREATE FUNCTION pg_temp.matched(run text, who text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT v.eligibility -> 'matched' FROM openwop.votes v JOIN openwop.interrupts i USING (tenant, interrupt_id)
   WHERE i.run_id = run AND v.voter = who ORDER BY v.revision DESC LIMIT 1
$$;
-- a statement as the sender login, bound to tenant bound (its own tenant chosen with it)
CREATE FUNCTION pg_temp.as_sender(bound text, sql text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE r jsonb; t text := current_setting('openwop.tenant');
BEGIN
  IF bound <> '*' THEN PERFORM set_config('openwop.tenant', bound, true); END IF;
  r := pg_temp.as_login('tap_out_sender', bound, sql);
  PERFORM set_config('openwop.tenant', t, true);
  RETURN r;
END $$;
CREATE FUNCTION pg_temp.claim(bound text, max integer DEFAULT 10, lease interval DEFAULT '1 second') RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_sender(bound, format(
    'SELECT coalesce(jsonb_agg(c ORDER BY (c ->> ''id'')::bigint), ''[]'') FROM openwop.claim_notifications(%s, %L) c', max, lease))
$$;
CREATE FUNCTION pg_temp.ack(bound text, ids text[]) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_sender(bound, format('SELECT to_jsonb(openwop.ack_notifications(%L))', ids))
$$;
-- the ids of run's notifications (as text, in order)
CREATE FUNCTION pg_temp.ids(run text) RETURNS text[] LANGUAGE sql AS $$
  SELECT array_agg(id::text ORDER BY id) FROM openwop.notifications WHERE run_id = run
$$;
-- a lease of every claimed row of run ends: its instant moved back by the lease a claim took,
-- as the clock moving on by it would (within this transaction now() stands still)
CREATE FUNCTION pg_temp.lease_ends(run text, lease interval DEFAULT '1 second') RETURNS void LANGUAGE sql AS $$
  UPDATE openwop.notifications SET lease_until = lease_until - lease WHERE run_id = run AND lease_until IS NOT NULL
$$;

DO $$ BEGIN
  PERFORM openwop.add_group_member('finance', 'fay');
  PERFORM openwop.add_group_member('finance', 'finn');
  PERFORM openwop.add_group_member('execs', 'erin');
  PERFORM openwop.add_group_member('execs', 'eve');
  PERFORM openwop.add_group_member('audit', 'ada');
END $$;

/* ------------------------------------------------------------------
 * The policy's members: bad documents refused, nothing stored
 * ------------------------------------------------------------------ */
CREATE FUNCTION pg_temp.field(extra jsonb) RETURNS text LANGUAGE sql AS $$
  SELECT coalesce(r -> 'details' ->> 'field', r ->> 'code', 'accepted')
    FROM pg_temp.set_policy('bad', '{"appliesTo": {"workflowId": "bad", "nodeId": "*"}}'::jsonb || extra) r
$$;
SELECT is(pg_temp.set_policy('bad', '{"appliesTo": {"workflowId": "bad", "nodeId": "*"}, "reminders": {"afterMs": 1}}') - 'message' - 'details',
          '{"code": "validation_error", "sqlstate": "PT400"}', 'policy_reminders_schema: a bad document is 400 validation_error');
SELECT is(jsonb_build_array(
            pg_temp.field('{"reminders": {"afterMs": 1}}'),
            pg_temp.field(jsonb_build_object('reminders', (SELECT jsonb_agg(jsonb_build_object('afterMs', i)) FROM generate_series(1, 11) i))),
            pg_temp.field('{"reminders": [{}]}'),
            pg_temp.field('{"reminders": [{"afterMs": 0}]}'),
            pg_temp.field('{"reminders": [{"afterMs": "60000"}]}'),
            pg_temp.field('{"reminders": [{"afterMs": 1.5}]}'),
            pg_temp.field('{"reminders": [{"afterMs": 3153600000000001}]}'),
            pg_temp.field('{"reminders": [{"afterMs": 1}, {"afterMs": 2, "to": "ann"}]}'),
            pg_temp.field('{"reminders": [60000]}'),
            pg_temp.field('{"reminders": null}')),
          '["policy.reminders", "policy.reminders", "policy.reminders[0]", "policy.reminders[0].afterMs", "policy.reminders[0].afterMs",
            "policy.reminders[0].afterMs", "policy.reminders[0].afterMs", "policy.reminders[1].to", "policy.reminders[0]", "policy.reminders"]',
          'policy_reminders_schema: not an array, eleven steps, a step without afterMs, afterMs 0, a string, a fraction or past 100,000 years, an unknown member, a bare number, null: each names the field');
SELECT is(jsonb_build_array(
            pg_temp.field('{"escalation": {"afterMs": 1}}'),
            pg_temp.field('{"escalation": {"groupRef": "execs"}}'),
            pg_temp.field('{"escalation": {"afterMs": 0, "groupRef": "execs"}}'),
            pg_temp.field('{"escalation": {"afterMs": "1", "groupRef": "execs"}}'),
            pg_temp.field('{"escalation": {"afterMs": 1, "groupRef": ""}}'),
            pg_temp.field('{"escalation": {"afterMs": 1, "groupRef": 7}}'),
            pg_temp.field(jsonb_build_object('escalation', jsonb_build_object('afterMs', 1, 'groupRef', repeat('g', 257)))),
            pg_temp.field('{"escalation": {"afterMs": 1, "groupRef": "execs", "required": 1}}'),
            pg_temp.field('{"escalation": [{"afterMs": 1, "groupRef": "execs"}]}'),
            pg_temp.field('{"escalations": {"afterMs": 1, "groupRef": "execs"}}')),
          '["policy.escalation", "policy.escalation", "policy.escalation.afterMs", "policy.escalation.afterMs", "policy.escalation.groupRef",
            "policy.escalation.groupRef", "policy.escalation.groupRef", "policy.escalation.required", "policy.escalation", "policy.escalations"]',
          'policy_reminders_schema: an escalation without groupRef or afterMs, afterMs 0 or a string, groupRef empty, not a string or too long, an unknown member, a list, a misspelt member: each names the field');
SELECT is((SELECT count(*) FROM openwop.approval_policy_log WHERE name = 'bad'), 0::bigint,
          'policy_reminders_schema: nothing refused was stored');
SELECT is(pg_temp.field('{"reminders": [], "escalation": {"afterMs": 1, "groupRef": "nobody-yet"}}'), 'accepted',
          'policy_reminders_schema: no reminders and an escalation to a group nobody is in yet are allowed');

-- the policies of this file, each for its own workflow; a step of a few
-- milliseconds counts from this transaction's start, so it has passed at
-- every raise below (the pause makes sure of it)
DO $$ BEGIN
  PERFORM pg_temp.set_policy('ladder', '{"appliesTo": {"workflowId": "ladder", "nodeId": "*"},
                                         "reminders": [{"afterMs": 1}, {"afterMs": 2}], "escalation": {"afterMs": 3, "groupRef": "execs"}}');
  PERFORM pg_temp.set_policy('remind', '{"appliesTo": {"workflowId": "remind", "nodeId": "*"}, "reminders": [{"afterMs": 1}]}');
  PERFORM pg_temp.set_policy('later', '{"appliesTo": {"workflowId": "later", "nodeId": "*"},
                                        "reminders": [{"afterMs": 3600000}], "escalation": {"afterMs": 3600000, "groupRef": "execs"}}');
  PERFORM pg_temp.set_policy('audited', '{"appliesTo": {"workflowId": "audited", "nodeId": "*"}, "groups": [{"ref": "audit", "required": 1}]}');
  PERFORM pg_temp.set_policy('quiet', '{"appliesTo": {"workflowId": "quiet", "nodeId": "*"}}');
END $$;
DO $$ BEGIN PERFORM pg_sleep(0.01); END $$;

/* ------------------------------------------------------------------
 * Reminders
 * ------------------------------------------------------------------ */
SELECT is(pg_temp.gate('acme/out-once-000000001', 'ladder', '{"approversList": ["ann", "ben", "rick"]}', 'rick'),
          'interrupted', 'a gate under the ladder: two reminders and an escalation');
SELECT is(pg_temp.steps('acme/out-once-000000001'),
          '[[1, "reminder", false, null], [2, "reminder", false, null], [3, "escalation", false, null]]',
          'steps_planned_at_raise: one waiting row per step, in the order they fall due');
SELECT is((SELECT jsonb_agg(due_at ORDER BY step) FROM openwop.gate_steps WHERE run_id = 'acme/out-once-000000001'),
          (SELECT jsonb_agg(date_trunc('milliseconds', now() + ms * interval '1 ms') ORDER BY ms) FROM unnest(ARRAY[1, 2, 3]) ms),
          '... each afterMs after the raise, on the wall clock (no calendar), to the millisecond');
SELECT is((SELECT jsonb_agg((e ->> 'at')::timestamptz ORDER BY (e ->> 'at')::timestamptz)
             FROM openwop.open_interrupts, jsonb_array_elements((policy -> 'reminders') || (policy -> 'escalations')) e
            WHERE run_id = 'acme/out-once-000000001'),
          (SELECT jsonb_agg(due_at ORDER BY step) FROM openwop.gate_steps WHERE run_id = 'acme/out-once-000000001'),
          '... the instants the pin carries');
SELECT is(openwop.sweep(), 3, 'reminder_fires_once_per_step: a sweep fires the three due steps');
SELECT is(pg_temp.steps('acme/out-once-000000001'),
          '[[1, "reminder", true, 4], [2, "reminder", true, 4], [3, "escalation", true, 2]]',
          'reminder_fires_once_per_step: each step fired, with how many it told');
SELECT is((SELECT jsonb_agg(jsonb_build_array(step, kind, rows, recipients) ORDER BY step)
             FROM (SELECT (detail ->> 'step')::integer AS step, kind, count(*) AS rows, count(DISTINCT recipient) AS recipients
                     FROM openwop.notifications WHERE run_id = 'acme/out-once-000000001' AND kind IN ('reminder', 'escalation')
                    GROUP BY 1, 2) n),
          (SELECT jsonb_agg(jsonb_build_array(step, kind, notified, notified) ORDER BY step) FROM openwop.gate_steps WHERE run_id = 'acme/out-once-000000001'),
          'reminder_fires_once_per_step: one notification per recipient per step, as many as the step counted');
SELECT is(openwop.sweep(), 0, 'reminder_fires_once_per_step: a second sweep fires nothing');
SELECT is((SELECT count(*) FROM openwop.notifications WHERE run_id = 'acme/out-once-000000001' AND kind IN ('reminder', 'escalation')), 10::bigint,
          '... and writes nothing: each step told once');
SELECT is(pg_temp.told('acme/out-once-000000001', 'reminder'), '["ann", "ann", "ben", "ben", "erin", "erin", "eve", "eve"]',
          'reminder_to_audience: the approvers and, once its instant passed, the escalation''s group; never the requester, though listed');
SELECT is((SELECT detail - 'dueAt' FROM openwop.notifications WHERE run_id = 'acme/out-once-000000001' AND kind = 'reminder' AND recipient = 'ann' AND detail ->> 'step' = '2'),
          '{"step": 2, "title": "T", "nodeId": "gate", "links": ["inspect", "resolve"]}',
          'reminder detail: the step, the node, the title and the links a sender may mint');
SELECT is((SELECT (detail ->> 'dueAt')::timestamptz FROM openwop.notifications WHERE run_id = 'acme/out-once-000000001' AND kind = 'reminder' AND recipient = 'ann' AND detail ->> 'step' = '2'),
          (SELECT due_at FROM openwop.gate_steps WHERE run_id = 'acme/out-once-000000001' AND step = 2),
          '... and when it fell due');

-- a reminder grants nothing
DO $$ BEGIN PERFORM pg_temp.gate('acme/out-grant-00000001', 'remind', '{"approversList": ["ann", "ben"], "requiredApprovals": 2}');
            PERFORM pg_temp.vote('acme/out-grant-00000001', 'ann'); END $$;
CREATE TEMP TABLE grant_before AS
  SELECT openwop.run_snapshot('acme/out-grant-00000001') AS snapshot, pg_temp.tally('acme/out-grant-00000001') AS tally,
         (SELECT status FROM openwop.interrupts WHERE run_id = 'acme/out-grant-00000001') AS status,
         (SELECT count(*) FROM openwop.votes WHERE interrupt_id = pg_temp.iid('acme/out-grant-00000001')) AS votes,
         (SELECT count(*) FROM openwop.events('acme/out-grant-00000001') e) AS events;
SELECT is(openwop.sweep(), 1, 'the reminder falls due and is fired');
SELECT is(pg_temp.tally('acme/out-grant-00000001'), (SELECT tally FROM grant_before),
          'reminder_never_grants: the tally is as it was (one accept of two)');
SELECT is((SELECT jsonb_build_array(openwop.run_snapshot('acme/out-grant-00000001'),
                                    (SELECT status FROM openwop.interrupts WHERE run_id = 'acme/out-grant-00000001'),
                                    (SELECT count(*) FROM openwop.votes WHERE interrupt_id = pg_temp.iid('acme/out-grant-00000001')),
                                    (SELECT count(*) FROM openwop.events('acme/out-grant-00000001') e))),
          (SELECT jsonb_build_array(snapshot, status, votes, events) FROM grant_before),
          'reminder_never_grants: the run, the gate''s status, its votes and its events are unchanged');
SELECT is((SELECT status FROM grant_before), 'pending', '... the gate still pending');
SELECT is(pg_temp.vote('acme/out-grant-00000001', 'ben') ->> 'decision', 'granted', '... and ben''s accept decides it, the second of two');

-- who a reminder tells
DO $$ BEGIN PERFORM pg_temp.gate('acme/out-waiting-000001', 'remind', '{"approversList": ["ann", "ben", "cat", "dan"], "requiredApprovals": 4}');
            PERFORM pg_temp.vote('acme/out-waiting-000001', 'ann');
            PERFORM pg_temp.vote('acme/out-waiting-000001', 'ben');
            PERFORM pg_temp.withdraw('acme/out-waiting-000001', 'ben');
            PERFORM pg_temp.vote('acme/out-waiting-000001', 'dan', 'ask');
            PERFORM openwop.sweep(); END $$;
SELECT is(pg_temp.told('acme/out-waiting-000001', 'reminder'), '["ben", "cat", "dan"]',
          'reminder_only_to_waiting_approvers: ann voted and is not reminded; ben withdrew, cat never voted, dan only asked: they are');
SELECT is(pg_temp.steps('acme/out-waiting-000001'), '[[1, "reminder", true, 3]]', '... the step counted three');

/* ------------------------------------------------------------------
 * Escalation
 * ------------------------------------------------------------------ */
DO $$ BEGIN PERFORM pg_temp.gate('acme/out-esc-before-0001', 'later', '{"approversList": ["ann"]}'); END $$;
SELECT is(pg_temp.refused_vote('acme/out-esc-before-0001', 'erin') - 'details',
          '{"code": "forbidden", "sqlstate": "PT403"}',
          'escalation_makes_new_voter_eligible: before its instant (an hour on) a member of the escalation''s group is refused 403');
SELECT is(openwop.sweep(), 0, '... the steps are not due');
SELECT is(pg_temp.steps('acme/out-esc-before-0001'), '[[1, "escalation", false, null], [2, "reminder", false, null]]', '... and wait');

DO $$ BEGIN PERFORM pg_temp.gate('acme/out-esc-after-00001', 'ladder', '{"approversList": ["ann"], "requiredApprovals": 2}'); END $$;
SELECT is(pg_temp.steps('acme/out-esc-after-00001') -> 2, '[3, "escalation", false, null]', 'a gate whose escalation''s instant has passed, not yet fired');
SELECT is(pg_temp.vote('acme/out-esc-after-00001', 'erin') - 'interruptId',
          '{"runId": "acme/out-esc-after-00001", "nodeId": "gate", "status": "pending", "action": "accept", "counted": true,
            "tally": {"voters": 1, "accepts": 1, "rejects": 0, "requiredApprovals": 2}}',
          'escalation_makes_new_voter_eligible: after its instant the member votes, fired or not');
SELECT is(pg_temp.matched('acme/out-esc-after-00001', 'erin'), '["escalation:execs"]',
          'escalation_makes_new_voter_eligible: the vote''s eligibility record says "escalation:execs"');
SELECT is(pg_temp.refused_vote('acme/out-esc-after-00001', 'zoe') ->> 'code', 'forbidden',
          '... and nobody outside the group is made eligible');
DO $$ BEGIN PERFORM openwop.sweep(); END $$;
SELECT is(pg_temp.told('acme/out-esc-after-00001', 'escalation'), '["erin", "eve"]',
          'escalation_tells_group: firing it tells the group''s members');
SELECT is((SELECT detail - 'dueAt' FROM openwop.notifications WHERE run_id = 'acme/out-esc-after-00001' AND kind = 'escalation' AND recipient = 'eve'),
          '{"step": 3, "title": "T", "nodeId": "gate", "groupRef": "execs", "links": ["inspect", "resolve"]}',
          '... naming the group and the step');
SELECT is(pg_temp.vote('acme/out-esc-after-00001', 'eve') ->> 'decision', 'granted', '... and eve decides it');

DO $$ BEGIN PERFORM pg_temp.gate('acme/out-esc-once-000001', 'ladder', '{"approversList": ["erin", "ann"], "requiredApprovals": 2}'); END $$;
SELECT is(pg_temp.vote('acme/out-esc-once-000001', 'erin') -> 'tally', '{"voters": 1, "accepts": 1, "rejects": 0, "requiredApprovals": 2}',
          'escalation_vote_counts_once: erin, listed and in the escalated group, counts one accept');
SELECT is(pg_temp.matched('acme/out-esc-once-000001', 'erin'), '["approversList", "escalation:execs"]',
          '... eligible both ways, as the record says');
SELECT is(pg_temp.vote('acme/out-esc-once-000001', 'erin') -> 'tally', '{"voters": 1, "accepts": 1, "rejects": 0, "requiredApprovals": 2}',
          'escalation_vote_counts_once: voting again replaces her vote');
SELECT is(pg_temp.vote('acme/out-esc-once-000001', 'ann') ->> 'decision', 'granted', '... and ann''s is the second');
DO $$ BEGIN PERFORM openwop.sweep(); END $$;
SELECT is(pg_temp.steps('acme/out-esc-once-000001'), '[]', 'steps_removed_when_gate_closed: the steps of a gate decided before a sweep came are deleted');
SELECT is((SELECT count(*) FROM openwop.notifications WHERE run_id = 'acme/out-esc-once-000001' AND kind IN ('reminder', 'escalation')), 0::bigint,
          '... unfired');

DO $$ BEGIN PERFORM pg_temp.gate('acme/out-esc-quorum-0001', 'ladder', '{"approversList": ["ann"], "requiredApprovals": 3}'); END $$;
CREATE TEMP TABLE quorum_pin AS SELECT policy FROM openwop.open_interrupts WHERE run_id = 'acme/out-esc-quorum-0001';
SELECT is((SELECT jsonb_build_array(policy -> 'requiredApprovals', policy -> 'groups') FROM quorum_pin), '[3, []]',
          'escalation_never_lowers_quorum: the pin keeps the gate''s three and adds no group requirement');
DO $$ BEGIN PERFORM openwop.sweep(); END $$;
SELECT is(pg_temp.steps('acme/out-esc-quorum-0001') -> 2, '[3, "escalation", true, 2]', 'the escalation fired');
SELECT is((SELECT policy FROM openwop.open_interrupts WHERE run_id = 'acme/out-esc-quorum-0001'), (SELECT policy FROM quorum_pin),
          '... and the pin is as it was');
SELECT is(pg_temp.tally('acme/out-esc-quorum-0001') ->> 'required', '3', 'escalation_never_lowers_quorum: three required approvals after it');
SELECT is(pg_temp.vote('acme/out-esc-quorum-0001', 'erin') ->> 'status', 'pending', 'an escalated accept ...');
SELECT is(pg_temp.vote('acme/out-esc-quorum-0001', 'eve') -> 'tally', '{"voters": 2, "accepts": 2, "rejects": 0, "requiredApprovals": 3}',
          'escalation_never_lowers_quorum: the two escalated accepts are two of three');
SELECT is(pg_temp.vote('acme/out-esc-quorum-0001', 'ann') ->> 'decision', 'granted', '... ann''s the third');

/* ------------------------------------------------------------------
 * Working time: a holiday moves the steps
 * ------------------------------------------------------------------ */
-- every hour of every day is worked, but today and tomorrow (UTC) are holidays
SELECT is(pg_temp.as_login('tap_out_dba', 'acme', format('SELECT openwop.set_calendar(%L, %L)', 'closed',
            jsonb_build_object('timezone', 'UTC',
                               'week', (SELECT jsonb_object_agg(d, '[["00:00", "24:00"]]'::jsonb)
                                          FROM unnest(ARRAY['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun']) d),
                               'holidays', jsonb_build_array(to_char(now(), 'YYYY-MM-DD'), to_char(now() + interval '1 day', 'YYYY-MM-DD'))))) ->> 'version',
          '1', 'a calendar whose today and tomorrow are holidays');
SELECT is(pg_temp.set_policy('holiday', '{"appliesTo": {"workflowId": "holiday", "nodeId": "*"}, "calendar": "closed",
                                           "reminders": [{"afterMs": 3600000}], "escalation": {"afterMs": 7200000, "groupRef": "execs"}}') ->> 'version',
          '1', 'a policy with a reminder after an hour and an escalation after two, on it');
DO $$ BEGIN PERFORM pg_temp.gate('acme/out-holiday-000001', 'holiday', '{"approversList": ["ann"]}');
            PERFORM pg_temp.gate('acme/out-holiday-000002', 'later', '{"approversList": ["ann"]}'); END $$;
SELECT is((SELECT jsonb_agg(jsonb_build_array(step, kind, due_at) ORDER BY step) FROM openwop.gate_steps WHERE run_id = 'acme/out-holiday-000001'),
          jsonb_build_array(jsonb_build_array(1, 'reminder', date_trunc('day', now()) + interval '2 days 1 hour'),
                            jsonb_build_array(2, 'escalation', date_trunc('day', now()) + interval '2 days 2 hours')),
          'holiday_shifts_steps: the steps fall due an hour and two into the day after the holidays');
SELECT is((SELECT jsonb_agg(due_at ORDER BY step) FROM openwop.gate_steps WHERE run_id = 'acme/out-holiday-000001'),
          pg_temp.as_login('tap_out_dba', 'acme', format('SELECT jsonb_build_array(openwop.calendar_due(%L, %L, 3600000), openwop.calendar_due(%L, %L, 7200000))',
                                                          'closed', now(), 'closed', now())),
          '... where calendar_due puts them');
SELECT is((SELECT jsonb_build_array(policy -> 'calendar', (policy -> 'reminders' -> 0 ->> 'at')::timestamptz, (policy -> 'escalations' -> 0 ->> 'at')::timestamptz)
             FROM openwop.open_interrupts WHERE run_id = 'acme/out-holiday-000001'),
          jsonb_build_array('{"name": "closed", "version": 1}'::jsonb, date_trunc('day', now()) + interval '2 days 1 hour',
                            date_trunc('day', now()) + interval '2 days 2 hours'),
          'holiday_shifts_steps: the pin carries the calendar and the same instants');
SELECT is((SELECT jsonb_agg(due_at ORDER BY step) FROM openwop.gate_steps WHERE run_id = 'acme/out-holiday-000002'),
          jsonb_build_array(date_trunc('milliseconds', now() + interval '1 hour'), date_trunc('milliseconds', now() + interval '1 hour')),
          '... where a policy without a calendar has them an hour on');
SELECT is(pg_temp.refused_vote('acme/out-holiday-000001', 'erin') ->> 'code', 'forbidden',
          'holiday_shifts_steps: the escalation''s group is not eligible during the holidays');

-- a full ladder (ten reminders and an escalation) on the calendar: each step where calendar_due puts it
SELECT is(pg_temp.set_policy('full-ladder', jsonb_build_object('appliesTo', '{"workflowId": "full-ladder", "nodeId": "*"}'::jsonb,
            'calendar', 'closed',
            'reminders', (SELECT jsonb_agg(jsonb_build_object('afterMs', k * 3600000)) FROM generate_series(1, 10) k),
            'escalation', '{"afterMs": 39600000, "groupRef": "execs"}'::jsonb)) ->> 'version',
          '1', 'a policy with ten reminders, an hour apart, and an escalation after eleven hours, on the calendar');
DO $$ BEGIN PERFORM pg_temp.gate('acme/out-ladder-0000001', 'full-ladder', '{"approversList": ["ann"]}'); END $$;
SELECT is((SELECT jsonb_agg(due_at ORDER BY step) FROM openwop.gate_steps WHERE run_id = 'acme/out-ladder-0000001'),
          pg_temp.as_login('tap_out_dba', 'acme', format(
            'SELECT jsonb_agg(openwop.calendar_due(%L, %L, k * 3600000) ORDER BY k) FROM generate_series(1, 11) k', 'closed', now())),
          'calendar_plans_every_step: all eleven steps planned, each where calendar_due puts it (none in the past)');

/* ------------------------------------------------------------------
 * A gate that closes first
 * ------------------------------------------------------------------ */
DO $$ BEGIN PERFORM pg_temp.gate('acme/out-closed-0000001', 'later', '{"approversList": ["ann"]}');
            PERFORM pg_temp.vote('acme/out-closed-0000001', 'ann');
            PERFORM pg_temp.gate('acme/out-closed-0000002', 'later', '{"approversList": ["ann"]}');
            PERFORM openwop.cancel_run('acme/out-closed-0000002', 'no longer needed'); END $$;
SELECT is(jsonb_build_array(pg_temp.steps('acme/out-closed-0000001'), pg_temp.steps('acme/out-closed-0000002')),
          '[[[1, "escalation", false, null], [2, "reminder", false, null]], [[1, "escalation", false, null], [2, "reminder", false, null]]]',
          'a decided gate and a cancelled one keep their waiting steps until they fall due');
-- the hour passes
UPDATE openwop.gate_steps SET due_at = now() - interval '1 second' WHERE run_id IN ('acme/out-closed-0000001', 'acme/out-closed-0000002');
SELECT is(openwop.sweep(), 4, 'the four steps fall due');
SELECT is(jsonb_build_array(pg_temp.steps('acme/out-closed-0000001'), pg_temp.steps('acme/out-closed-0000002')), '[[], []]',
          'steps_removed_when_gate_closed: a decided gate''s and a cancelled run''s steps are deleted, unfired');
SELECT is((SELECT count(*) FROM openwop.notifications WHERE run_id IN ('acme/out-closed-0000001', 'acme/out-closed-0000002')
             AND kind IN ('reminder', 'escalation')), 0::bigint, '... and tell nobody');

-- however many policies match, a gate plans at most ten reminders (and ten escalations): the earliest
DO $$ BEGIN
  PERFORM pg_temp.set_policy('many-a', jsonb_build_object('appliesTo', '{"workflowId": "many", "nodeId": "*"}'::jsonb,
            'reminders', (SELECT jsonb_agg(jsonb_build_object('afterMs', 3600000 * k)) FROM generate_series(1, 19, 2) k)));
  PERFORM pg_temp.set_policy('many-b', jsonb_build_object('appliesTo', '{"workflowId": "many", "nodeId": "*"}'::jsonb,
            'reminders', (SELECT jsonb_agg(jsonb_build_object('afterMs', 3600000 * k)) FROM generate_series(2, 20, 2) k)));
  PERFORM pg_temp.gate('acme/out-many-00000001', 'many', '{"approversList": ["ann"]}');
END $$;
SELECT is((SELECT jsonb_agg(round(extract(epoch FROM due_at - now()) / 3600) ORDER BY step) FROM openwop.gate_steps WHERE run_id = 'acme/out-many-00000001'),
          '[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]',
          'steps_bounded_per_gate: two policies of ten reminders each plan ten, the earliest of their twenty');

-- a reminder whose instant is after the gate's deadline is never sent, even
-- when the deadline has not been applied yet (a worker behind, or down)
DO $$ BEGIN
  PERFORM pg_temp.set_policy('overdue', '{"appliesTo": {"workflowId": "overdue", "nodeId": "*"},
                                          "reminders": [{"afterMs": 3600000}], "maxTimeoutMs": 1800000}');
  PERFORM pg_temp.gate('acme/out-late-00000001', 'overdue', '{"approversList": ["ann"]}');
END $$;
UPDATE openwop.gate_steps SET due_at = now() - interval '1 second' WHERE run_id = 'acme/out-late-00000001';
UPDATE openwop.open_interrupts SET expires_at = now() - interval '2 seconds' WHERE run_id = 'acme/out-late-00000001';
SELECT is(openwop.sweep(), 2, 'the step and the deadline fall due');
SELECT is(jsonb_build_array(pg_temp.steps('acme/out-late-00000001'), pg_temp.told('acme/out-late-00000001', 'reminder'),
                            pg_temp.told('acme/out-late-00000001', 'expired')),
          '[[], [], ["ann"]]',
          'reminder_after_deadline_not_sent: a step due after the deadline is removed unfired; ann hears the gate expired, not a reminder to decide it');

-- a branch fork keeps a pending gate with its pin (and its deadline), and
-- plans its steps at the pinned instants
DO $$ BEGIN PERFORM pg_temp.gate('acme/out-fork-000000001', 'later', '{"approversList": ["ann"]}');
            PERFORM openwop.start_node('acme/out-fork-000000001', 'side'); END $$;
CREATE TEMP TABLE forked AS SELECT openwop.fork_run('acme/out-fork-000000001', '{"mode": "branch", "fromSeq": 4}') ->> 'runId' AS run;
SELECT is((SELECT policy FROM openwop.open_interrupts WHERE run_id = (SELECT run FROM forked)),
          (SELECT policy FROM openwop.open_interrupts WHERE run_id = 'acme/out-fork-000000001'), 'a branch fork keeps the pending gate with its pin');
SELECT is(pg_temp.steps((SELECT run FROM forked)), '[[1, "escalation", false, null], [2, "reminder", false, null]]',
          'steps_follow_forked_gate: ... and its steps, waiting');

/* ------------------------------------------------------------------
 * The outbox: who hears of what
 * ------------------------------------------------------------------ */
SET LOCAL openwop.notification_outbox = off;
DO $$ BEGIN PERFORM pg_temp.gate('acme/out-off-000000001', 'ladder', '{"approversList": ["ann", "ben"], "requiredApprovals": 2}', 'rick');
            PERFORM pg_temp.vote('acme/out-off-000000001', 'ann');
            PERFORM pg_temp.withdraw('acme/out-off-000000001', 'ann');
            PERFORM pg_temp.vote('acme/out-off-000000001', 'ann');
            PERFORM openwop.artifact_changed('acme/out-off-000000001', 'gate', 'sha256:v1');
            PERFORM openwop.sweep(); END $$;
SELECT is(pg_temp.steps('acme/out-off-000000001'), '[[1, "reminder", true, 0], [2, "reminder", true, 0], [3, "escalation", true, 0]]',
          'outbox_off_writes_nothing: the steps fire, telling nobody');
SELECT is(jsonb_build_array(pg_temp.vote('acme/out-off-000000001', 'ann') ->> 'status', pg_temp.vote('acme/out-off-000000001', 'ben') ->> 'decision'),
          '["pending", "granted"]', '... the gate is decided');
SELECT is((SELECT count(*) FROM openwop.notifications WHERE run_id = 'acme/out-off-000000001'), 0::bigint,
          'outbox_off_writes_nothing: no raise, vote withdrawn or voided, step or decision wrote a row');
SET LOCAL openwop.notification_outbox = on;

SELECT is(pg_temp.gate('acme/out-aud-000000001', 'audited',
            jsonb_build_object('approversList', jsonb_build_array('ann', 'rick', session_user::text), 'approverGroupRefs', '["finance"]'::jsonb,
                               'approverRoleRefs', '["openwop_approver"]'::jsonb), 'rick', '{"timeoutMs": 3600000}'),
          'interrupted', 'a gate naming approvers, a group and a role, under a policy with a group, requested by rick');
SELECT is(pg_temp.told('acme/out-aud-000000001', 'raised'), '["ada", "ann", "fay", "finn", "role:openwop_approver"]',
          'outbox_raised_to_audience: approversList, the group''s members, the policy group''s members and the role; neither the requester nor the run''s owner');
SELECT is((SELECT detail - 'expiresAt' FROM openwop.notifications WHERE run_id = 'acme/out-aud-000000001' AND recipient = 'ann'),
          '{"nodeId": "gate", "title": "T", "links": ["inspect", "resolve"]}', 'raised detail: the node, the title, the links');
SELECT is((SELECT (n.detail ->> 'expiresAt')::timestamptz - i.expires_at BETWEEN interval '-1 ms' AND interval '1 ms'
             FROM openwop.notifications n JOIN openwop.interrupts i USING (interrupt_id)
            WHERE n.run_id = 'acme/out-aud-000000001' AND n.recipient = 'ann'), true, '... and the deadline');
SELECT is(openwop.interrupt('acme/out-aud-000000001', 'gate', jsonb_build_object('kind', 'approval', 'timeoutMs', 3600000, 'data',
            jsonb_build_object('artifactId', 'a', 'artifactType', 'doc', 'title', 'T', 'actions', '["accept", "reject", "ask"]'::jsonb,
                               'approversList', jsonb_build_array('ann', 'rick', session_user::text), 'approverGroupRefs', '["finance"]'::jsonb,
                               'approverRoleRefs', '["openwop_approver"]'::jsonb))) ->> 'status', 'interrupted', 'the engine asks again (a replay of its node)');
SELECT is((SELECT count(*) FROM openwop.notifications WHERE run_id = 'acme/out-aud-000000001'), 5::bigint,
          'outbox_raised_once: the replay writes no second round of notifications');
SELECT is(openwop.interrupt('acme/out-esc-before-0001', 'gate', jsonb_build_object('kind', 'approval', 'data',
            jsonb_build_object('artifactId', 'a', 'artifactType', 'doc', 'title', 'T', 'actions', '["accept", "reject", "ask"]'::jsonb,
                               'approversList', '["ann"]'::jsonb))) ->> 'status', 'interrupted', 'a gate with steps asked again');
SELECT is(jsonb_build_array(pg_temp.steps('acme/out-esc-before-0001'), pg_temp.told('acme/out-esc-before-0001', 'raised')),
          '[[[1, "escalation", false, null], [2, "reminder", false, null]], ["ann"]]',
          'outbox_raised_once: ... plans no second set of steps and tells nobody again');
SELECT is(jsonb_build_array(pg_temp.told('acme/out-once-000000001', 'raised'), pg_temp.told('acme/out-esc-before-0001', 'raised')),
          '[["ann", "ben", "erin", "eve"], ["ann"]]',
          'outbox_raised_to_audience: an escalation''s group is of the audience once its instant has passed, not before');

SELECT is(pg_temp.gate('acme/out-hint-00000001', 'audited',
            '{"approversList": ["ann"], "audience": {"subjects": ["hal", "rick"], "groups": ["finance"], "roles": ["ops"]}}', 'rick'),
          'interrupted', 'a gate with an audience hint');
SELECT is(pg_temp.told('acme/out-hint-00000001', 'raised'), '["fay", "finn", "hal", "role:ops"]',
          'outbox_audience_hint: data.audience says who hears, instead of the approvers (the requester still left out)');
SELECT is(pg_temp.refused_vote('acme/out-hint-00000001', 'hal') ->> 'code', 'forbidden', '... a hint, never eligibility: hal may not vote');

DO $$ BEGIN PERFORM pg_temp.gate('acme/out-star-00000001', 'quiet', '{}', 'rick'); END $$;
SELECT is(pg_temp.told('acme/out-star-00000001', 'raised'), '["*"]',
          'outbox_star_when_no_approvers: a gate naming nobody is every approver''s to decide: "*"');
SELECT is(pg_temp.vote('acme/out-star-00000001', 'zoe') ->> 'decision', 'granted', '... anyone decides it');
SELECT is(pg_temp.told('acme/out-star-00000001', 'decided'), '["*", "rick"]', '... and everyone hears of it, the requester too');
DO $$ BEGIN PERFORM pg_temp.gate('acme/out-req-000000001', 'unpinned', '{"approversList": ["ann"]}', 'rita');
            PERFORM pg_temp.vote('acme/out-req-000000001', 'ann'); END $$;
SELECT is(pg_temp.told('acme/out-req-000000001', 'decided'), '["ann", "rita"]',
          'outbox_tells_the_requester: a gate under no policy tells its requester of the decision too');

-- once an escalation's instant has passed, a gate naming nobody is still
-- everyone's to decide (zoe below): its audience stays "*" (the group is
-- told by the escalation itself)
DO $$ BEGIN PERFORM pg_temp.gate('acme/out-star-00000002', 'ladder', '{"requiredApprovals": 2}', 'rick'); END $$;
SELECT is(pg_temp.vote('acme/out-star-00000002', 'zoe') ->> 'status', 'pending',
          'a gate naming nobody, its escalation''s instant passed: zoe, in no group, may still vote');
SELECT is(pg_temp.told('acme/out-star-00000002', 'raised'), '["*"]',
          'outbox_star_when_no_approvers: ... so its audience is still "*"');

DO $$ BEGIN PERFORM pg_temp.gate('acme/out-dec-000000001', 'quiet', '{"approversList": ["ann", "ben"]}', 'rick');
            PERFORM pg_temp.vote('acme/out-dec-000000001', 'ann'); END $$;
SELECT is(pg_temp.told('acme/out-dec-000000001', 'decided'), '["ann", "ben", "rick"]',
          'outbox_decided_and_expired: a decision is told to the audience and the requester');
SELECT is((SELECT detail FROM openwop.notifications WHERE run_id = 'acme/out-dec-000000001' AND kind = 'decided' AND recipient = 'rick'),
          '{"nodeId": "gate", "title": "T", "decision": "granted", "action": "accept"}', '... with the decision and the action');
DO $$ BEGIN PERFORM pg_temp.gate('acme/out-exp-000000001', 'quiet', '{"approversList": ["ann", "ben"]}', 'rick', '{"timeoutMs": 1}'); END $$;
SELECT is(pg_temp.told('acme/out-exp-000000001', 'expired'), '[]', 'a gate past its deadline, not yet swept');
DO $$ BEGIN PERFORM openwop.sweep(); END $$;
SELECT is((SELECT jsonb_build_array(status, decision, action) FROM openwop.interrupts WHERE run_id = 'acme/out-exp-000000001'), '["resolved", "rejected", "timeout"]',
          'the sweep applies its deadline');
SELECT is(pg_temp.told('acme/out-exp-000000001', 'expired'), '["ann", "ben", "rick"]',
          'outbox_decided_and_expired: the deadline is told to the audience and the requester');
SELECT is((SELECT detail FROM openwop.notifications WHERE run_id = 'acme/out-exp-000000001' AND kind = 'expired' AND recipient = 'ann'),
          '{"nodeId": "gate", "title": "T", "decision": "rejected", "action": "timeout"}', '... rejected by timeout');
SELECT is((SELECT count(*) FROM openwop.notifications WHERE run_id = 'acme/out-exp-000000001' AND kind = 'decided'), 0::bigint, '... and not as decided');
DO $$ BEGIN PERFORM pg_temp.gate('acme/out-exp-000000002', 'quiet', '{"approversList": ["ann", "ben"]}', 'rick', '{"timeoutMs": 1}'); END $$;
SELECT is(pg_temp.vote('acme/out-exp-000000002', 'ann') ->> 'status', 'expired', 'an answer after the deadline, before any sweep, is answered expired');
SELECT is(pg_temp.told('acme/out-exp-000000002', 'expired'), '["ann", "ben", "rick"]', 'outbox_decided_and_expired: a late answer tells of the deadline');
DO $$ BEGIN PERFORM openwop.sweep(); END $$;
SELECT is(jsonb_build_array(openwop.run_snapshot('acme/out-exp-000000002') ->> 'status', pg_temp.told('acme/out-exp-000000002', 'expired')),
          '["failed", ["ann", "ben", "rick"]]', '... and the sweep ending its run tells nobody again');

DO $$ BEGIN PERFORM pg_temp.gate('acme/out-wd-0000000001', 'quiet', '{"approversList": ["ann", "ben"], "requiredApprovals": 2}', 'rick');
            PERFORM pg_temp.vote('acme/out-wd-0000000001', 'ann');
            PERFORM pg_temp.withdraw('acme/out-wd-0000000001', 'ann'); END $$;
SELECT is(pg_temp.told('acme/out-wd-0000000001', 'withdrawn'), '["ann", "rick"]', 'outbox_withdrawn: the voter and the requester hear of a withdrawal');
SELECT is((SELECT detail ->> 'voter' FROM openwop.notifications WHERE run_id = 'acme/out-wd-0000000001' AND kind = 'withdrawn' AND recipient = 'rick'),
          'ann', '... naming the voter');
SELECT is((SELECT detail - 'voter' FROM openwop.notifications WHERE run_id = 'acme/out-wd-0000000001' AND kind = 'withdrawn' AND recipient = 'rick'),
          '{"nodeId": "gate", "title": "T", "links": ["inspect", "resolve"]}', 'outbox_withdrawn: ... with the gate''s node, title and links');

DO $$ BEGIN PERFORM pg_temp.gate('acme/out-void-00000001', 'quiet', '{"approversList": ["ann", "ben", "cat"], "requiredApprovals": 3}', 'rick');
            PERFORM openwop.artifact_changed('acme/out-void-00000001', 'gate', 'sha256:v1');
            PERFORM pg_temp.vote('acme/out-void-00000001', 'ann');
            PERFORM pg_temp.vote('acme/out-void-00000001', 'ben');
            PERFORM openwop.artifact_changed('acme/out-void-00000001', 'gate', 'sha256:v2', 'fixed a typo'); END $$;
SELECT is(pg_temp.told('acme/out-void-00000001', 'voided'), '["ann", "ben"]',
          'outbox_voided: each voter whose vote the new digest voided is told (cat, who had not voted, is not; nor is the requester)');
SELECT is((SELECT detail FROM openwop.notifications WHERE run_id = 'acme/out-void-00000001' AND kind = 'voided' AND recipient = 'ann'),
          '{"nodeId": "gate", "title": "T", "digest": "sha256:v2", "reason": "fixed a typo", "links": ["inspect", "resolve"]}',
          '... with the gate''s title, the new digest, the reason and the links to vote again');
SELECT is((SELECT count(*) FROM openwop.notifications WHERE run_id = 'acme/out-void-00000001' AND kind = 'voided'), 2::bigint,
          '... the first digest voided nothing and told nobody');

/* ------------------------------------------------------------------
 * Claiming and acknowledging
 * ------------------------------------------------------------------ */
-- the claims below see this file's rows only (rolled back at the end)
DELETE FROM openwop.notifications;
DO $$ BEGIN PERFORM pg_temp.gate('acme/out-claim-0000001', 'quiet', '{"approversList": ["ann", "ben", "cat"]}', 'rick');
            PERFORM set_config('openwop.tenant', 'beta', true);
            PERFORM pg_temp.gate('beta/out-claim-0000001', 'quiet', '{"approversList": ["bea"]}');
            PERFORM set_config('openwop.tenant', 'acme', true); END $$;
SELECT is((SELECT jsonb_agg(jsonb_build_array(tenant, recipient) ORDER BY id) FROM openwop.notifications),
          '[["acme", "ann"], ["acme", "ben"], ["acme", "cat"], ["beta", "bea"]]', 'three rows of acme''s, one of beta''s');

CREATE TEMP TABLE first_claim AS SELECT pg_temp.claim('acme', 1, '1 second') AS c;
SELECT is((SELECT jsonb_agg(k ORDER BY k) FROM first_claim, jsonb_object_keys(c -> 0) k),
          '["attempt", "createdAt", "detail", "id", "interruptId", "kind", "leaseUntil", "recipient", "runId", "tenant"]',
          'claim_returns_contract_fields: {id, tenant, kind, recipient, runId, interruptId, createdAt, attempt, leaseUntil, detail}');
SELECT is((SELECT e - 'createdAt' - 'leaseUntil' FROM first_claim, jsonb_array_elements(c) e),
          (SELECT jsonb_build_object('id', id::text, 'tenant', 'acme', 'kind', 'raised', 'recipient', 'ann', 'runId', 'acme/out-claim-0000001',
                                     'interruptId', pg_temp.iid('acme/out-claim-0000001'), 'attempt', 1, 'detail', detail)
             FROM openwop.notifications WHERE run_id = 'acme/out-claim-0000001' AND recipient = 'ann'),
          'claim_returns_contract_fields: the oldest row, its id as text, the tenant-bound interrupt id, the first attempt');
SELECT is((SELECT jsonb_build_array((c -> 0 ->> 'createdAt')::timestamptz, (c -> 0 ->> 'leaseUntil')::timestamptz) FROM first_claim),
          jsonb_build_array(now(), now() + interval '1 second'), 'claim_returns_contract_fields: createdAt the event''s, leaseUntil the claim''s plus the lease');
SELECT is((SELECT jsonb_agg(c ->> 'recipient') FROM jsonb_array_elements(pg_temp.claim('acme', 10, '1 second')) c), '["ben", "cat"]',
          'claim_oldest_first: the next claim takes the rest of acme''s rows, oldest first, not the one leased');
SELECT is(pg_temp.claim('acme'), '[]', '... and then none: every row is leased');
DO $$ BEGIN PERFORM pg_temp.lease_ends('acme/out-claim-0000001'); END $$;
SELECT is((SELECT jsonb_agg(jsonb_build_array(c ->> 'id', c ->> 'recipient', c -> 'attempt') ORDER BY c ->> 'id') FROM jsonb_array_elements(pg_temp.claim('acme')) c),
          (SELECT jsonb_agg(jsonb_build_array(id::text, recipient, 2) ORDER BY id::text) FROM openwop.notifications WHERE run_id = 'acme/out-claim-0000001'),
          'claimed_but_unacked_returns_after_lease: once the lease has ended, the unacknowledged rows are claimed again, same ids, attempt 2');

CREATE TEMP TABLE claim_ids AS SELECT pg_temp.ids('acme/out-claim-0000001') AS ids;
SELECT is(pg_temp.ack('acme', (SELECT ids[1:2] FROM claim_ids)), '2', 'ack_notifications: two rows acknowledged');
SELECT is(pg_temp.ack('acme', (SELECT ids[1:2] FROM claim_ids)), '0', 'ack_is_idempotent: again, none acknowledged now');
SELECT is(pg_temp.ack('acme', (SELECT ids FROM claim_ids)), '1', '... with a new one among them, that one');
SELECT is(pg_temp.ack('acme', ARRAY['9223372036854775807']), '0', '... an id that does not exist: none');
SELECT is((SELECT count(*) FROM openwop.notifications WHERE run_id = 'acme/out-claim-0000001'),
          0::bigint, 'ack_removes_rows: an acknowledged row leaves the outbox (a queue, not a log)');
SELECT is(pg_temp.claim('acme'), '[]', 'ack_is_idempotent: an acknowledged row is never claimed again');

-- a row never acknowledged: five claims, then it is dead
DO $$ BEGIN PERFORM pg_temp.gate('acme/out-dead-00000001', 'quiet', '{"approversList": ["dan"]}'); END $$;
CREATE TEMP TABLE dead_claims (n integer, got jsonb);
DO $$ BEGIN
  FOR i IN 1..6 LOOP
    INSERT INTO dead_claims SELECT i, pg_temp.claim('acme');
    PERFORM pg_temp.lease_ends('acme/out-dead-00000001');
  END LOOP;
END $$;
SELECT is((SELECT jsonb_agg(jsonb_build_array(n, (SELECT jsonb_agg(c -> 'attempt') FROM jsonb_array_elements(got) c)) ORDER BY n) FROM dead_claims),
          '[[1, [1]], [2, [2]], [3, [3]], [4, [4]], [5, [5]], [6, null]]',
          'dead_after_max_attempts: claimed five times (openwop.notification_max_attempts), the sixth claim returns nothing');
SELECT is((SELECT jsonb_build_array(dead_at = now(), attempts) FROM openwop.dead_notifications WHERE run_id = 'acme/out-dead-00000001'),
          '[true, 5]', 'dead_after_max_attempts: the row is dead, claimed five times: a dead letter');
SELECT is((SELECT count(*) FROM openwop.notifications WHERE run_id = 'acme/out-dead-00000001'), 0::bigint,
          'dead_after_max_attempts: ... moved out of the outbox, out of the way of every later claim');
SELECT is(pg_temp.ack('acme', (SELECT array_agg(id::text) FROM openwop.dead_notifications WHERE run_id = 'acme/out-dead-00000001')), '0',
          '... a dead letter is not acknowledged');
SELECT is(pg_temp.claim('acme'), '[]', '... nor claimed again');
-- dead letters are kept for the retention, then removed by the worker's upkeep
UPDATE openwop.dead_notifications SET dead_at = now() - interval '8 days' WHERE run_id = 'acme/out-dead-00000001';
DO $$ BEGIN PERFORM openwop.sweep(); END $$;
SELECT is((SELECT count(*) FROM openwop.dead_notifications WHERE run_id = 'acme/out-dead-00000001'), 0::bigint,
          'dead_letters_removed_after_retention: a dead letter older than openwop.notification_retention (7 days) is removed by the sweep');

-- tenants
DO $$ BEGIN PERFORM pg_temp.gate('acme/out-claim-0000002', 'quiet', '{"approversList": ["eli"]}'); END $$;
SELECT is((SELECT jsonb_agg(jsonb_build_array(c ->> 'tenant', c ->> 'recipient')) FROM jsonb_array_elements(pg_temp.claim('acme')) c), '[["acme", "eli"]]',
          'claim_and_ack_tenant_bound: a sender bound to acme claims acme''s rows only');
SELECT is(pg_temp.ack('acme', pg_temp.ids('beta/out-claim-0000001')), '0', 'claim_and_ack_tenant_bound: ... and acknowledges none of beta''s');
SELECT is((SELECT jsonb_build_array(attempts, lease_until) FROM openwop.notifications WHERE run_id = 'beta/out-claim-0000001'), '[0, null]',
          '... beta''s row untouched');
SELECT is((SELECT jsonb_agg(jsonb_build_array(c ->> 'tenant', c ->> 'recipient')) FROM jsonb_array_elements(pg_temp.claim('beta')) c), '[["beta", "bea"]]',
          'claim_and_ack_tenant_bound: beta''s sender claims beta''s');
SELECT is(pg_temp.ack('beta', pg_temp.ids('acme/out-claim-0000002')), '0', '... and cannot acknowledge acme''s');
DO $$ BEGIN PERFORM pg_temp.lease_ends('acme/out-claim-0000002'); PERFORM pg_temp.lease_ends('beta/out-claim-0000001'); END $$;
SELECT is((SELECT jsonb_agg(jsonb_build_array(c ->> 'tenant', c ->> 'recipient') ORDER BY c ->> 'tenant') FROM jsonb_array_elements(pg_temp.claim('*')) c),
          '[["acme", "eli"], ["beta", "bea"]]', 'claim_every_tenant: a sender bound to "*" claims every tenant''s');
SELECT is(pg_temp.ack('*', pg_temp.ids('acme/out-claim-0000002') || pg_temp.ids('beta/out-claim-0000001')), '2', '... and acknowledges them');

-- bad arguments
SELECT is(jsonb_build_array(
            pg_temp.refusal($$ SELECT openwop.claim_notifications(0, '1 minute') $$),
            pg_temp.refusal($$ SELECT openwop.claim_notifications(10001, '1 minute') $$),
            pg_temp.refusal($$ SELECT openwop.claim_notifications(NULL, '1 minute') $$),
            pg_temp.refusal($$ SELECT openwop.claim_notifications(-1, '1 minute') $$)),
          jsonb_build_array(jsonb_build_object('code', 'validation_error', 'sqlstate', 'PT400', 'details', '{"field": "max"}'::jsonb),
                            jsonb_build_object('code', 'validation_error', 'sqlstate', 'PT400', 'details', '{"field": "max"}'::jsonb),
                            jsonb_build_object('code', 'validation_error', 'sqlstate', 'PT400', 'details', '{"field": "max"}'::jsonb),
                            jsonb_build_object('code', 'validation_error', 'sqlstate', 'PT400', 'details', '{"field": "max"}'::jsonb)),
          'claim_validation: max 0, 10001, null or negative is 400 naming max');
SELECT is(jsonb_build_array(
            pg_temp.refusal($$ SELECT openwop.claim_notifications(1, '0') $$) -> 'details' ->> 'field',
            pg_temp.refusal($$ SELECT openwop.claim_notifications(1, '999 milliseconds') $$) -> 'details' ->> 'field',
            pg_temp.refusal($$ SELECT openwop.claim_notifications(1, NULL) $$) -> 'details' ->> 'field',
            pg_temp.refusal($$ SELECT openwop.claim_notifications(1, '1 day 1 hour') $$) -> 'details' ->> 'field',
            pg_temp.refusal($$ SELECT openwop.claim_notifications(1, '1 day') $$) -> 'details' ->> 'field',
            pg_temp.refusal($$ SELECT openwop.claim_notifications(1, '1 month') $$) -> 'details' ->> 'field',
            pg_temp.refusal($$ SELECT openwop.claim_notifications(1, '24:00:00.000001') $$) -> 'details' ->> 'field',
            pg_temp.refusal($$ SELECT openwop.claim_notifications(1, '-1 hour') $$) -> 'details' ->> 'field',
            pg_temp.refusal($$ SELECT openwop.claim_notifications(1, '1 hour') $$) ->> 'code',
            pg_temp.refusal($$ SELECT openwop.claim_notifications(1, '24:00:00') $$) ->> 'code',
            pg_temp.refusal($$ SELECT openwop.claim_notifications(10000, '00:00:01') $$) ->> 'code'),
          '["lease", "lease", "lease", "lease", "lease", "lease", "lease", "lease", null, null, null]',
          'claim_validation: a lease of 0, under a second, null, a day and an hour, a day, a month, past 24 hours or negative is 400 naming lease; an hour, 24 hours and a second are fine');
SELECT is(pg_temp.refusal($$ SELECT openwop.claim_notifications(1, '1 month') $$) ->> 'code', 'validation_error', '... validation_error');
SELECT is(jsonb_build_array(
            pg_temp.refusal($$ SELECT openwop.ack_notifications(ARRAY['abc']) $$),
            pg_temp.refusal($$ SELECT openwop.ack_notifications(ARRAY['1', NULL]) $$),
            pg_temp.refusal($$ SELECT openwop.ack_notifications(ARRAY[['1'], ['2']]) $$),
            pg_temp.refusal($$ SELECT openwop.ack_notifications(NULL) $$)),
          jsonb_build_array(jsonb_build_object('code', 'validation_error', 'sqlstate', 'PT400', 'details', '{"field": "ids"}'::jsonb),
                            jsonb_build_object('code', 'validation_error', 'sqlstate', 'PT400', 'details', '{"field": "ids"}'::jsonb),
                            jsonb_build_object('code', 'validation_error', 'sqlstate', 'PT400', 'details', '{"field": "ids"}'::jsonb),
                            jsonb_build_object('code', 'validation_error', 'sqlstate', 'PT400', 'details', '{"field": "ids"}'::jsonb)),
          'ack_validation: an id that is not a number, a null element, a two-dimensional array, null: 400 naming ids');
SELECT is(jsonb_build_array(
            pg_temp.refusal($$ SELECT openwop.ack_notifications(ARRAY['0']) $$) -> 'details' ->> 'field',
            pg_temp.refusal($$ SELECT openwop.ack_notifications(ARRAY['-1']) $$) -> 'details' ->> 'field',
            pg_temp.refusal($$ SELECT openwop.ack_notifications(ARRAY[' 1']) $$) -> 'details' ->> 'field',
            pg_temp.refusal($$ SELECT openwop.ack_notifications(ARRAY['1 ']) $$) -> 'details' ->> 'field',
            pg_temp.refusal($$ SELECT openwop.ack_notifications(ARRAY['+1']) $$) -> 'details' ->> 'field',
            pg_temp.refusal($$ SELECT openwop.ack_notifications(ARRAY['01']) $$) -> 'details' ->> 'field',
            pg_temp.refusal($$ SELECT openwop.ack_notifications(ARRAY['']) $$) -> 'details' ->> 'field',
            pg_temp.refusal($$ SELECT openwop.ack_notifications(ARRAY['9223372036854775808']) $$) -> 'details' ->> 'field',
            pg_temp.refusal($$ SELECT openwop.ack_notifications(array_fill('1'::text, ARRAY[10001])) $$) -> 'details' ->> 'field',
            pg_temp.refusal($$ SELECT openwop.ack_notifications('{}') $$) ->> 'code'),
          '["ids", "ids", "ids", "ids", "ids", "ids", "ids", "ids", "ids", null]',
          'ack_validation: 0, negative, spaces, a sign, a leading zero, empty, past bigint, more than 10,000: 400 naming ids; none at all is fine');

-- who may
SELECT is(jsonb_build_array(
            pg_temp.as_login('tap_out_clerk', 'acme', $$ SELECT to_jsonb(count(*)) FROM openwop.claim_notifications(1, '1 second') $$) ->> 'sqlstate',
            pg_temp.as_login('tap_out_clerk', 'acme', $$ SELECT to_jsonb(openwop.ack_notifications('{1}')) $$) ->> 'sqlstate',
            pg_temp.as_login('tap_out_approver', 'acme', $$ SELECT to_jsonb(count(*)) FROM openwop.claim_notifications(1, '1 second') $$) ->> 'sqlstate',
            pg_temp.as_login('tap_out_approver', 'acme', $$ SELECT to_jsonb(openwop.ack_notifications('{1}')) $$) ->> 'sqlstate'),
          '["42501", "42501", "42501", "42501"]',
          'claim_needs_sender_role: a plain login, or an approver, without openwop_notification_sender may neither claim nor acknowledge (42501)');
SELECT is((SELECT jsonb_agg(DISTINCT has_function_privilege('public', f, 'EXECUTE'))
             FROM unnest(ARRAY['openwop.claim_notifications(integer, interval)', 'openwop.ack_notifications(text[])']::regprocedure[]) f),
          '[false]', 'claim_needs_sender_role: PUBLIC has no EXECUTE');

SELECT * FROM finish();
ROLLBACK;
