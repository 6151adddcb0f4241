-- Approval policies the DBA owns (README, "Approval policies (for DBAs)"):
-- versions in an append-only log, set and retired by openwop_policy_admin
-- only, each tenant's own; a gate pins the policies that match it when it
-- is raised, and its rule is the stricter of its request and theirs:
-- quorum, group requirements met by distinct humans, the requester and the
-- run's owner excluded, single-veto, the shorter deadline, no override
-- bypass the policy did not allow.  Every bad input refused with nothing
-- stored.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
\ir refusal.psql
\ir callers.psql
\ir events.psql

\ir policy_admin.psql
CREATE ROLE tap_pol_dba LOGIN;
CREATE ROLE tap_pol_clerk LOGIN;
CREATE ROLE tap_pol_root LOGIN;
GRANT openwop_policy_admin TO tap_pol_dba, tap_pol_root;

-- as a policy admin login bound to tenant (NULL: unbound)
CREATE FUNCTION pg_temp.as_dba(sql text, bound text DEFAULT 'acme', login text DEFAULT 'tap_pol_dba') RETURNS jsonb
    LANGUAGE sql AS $$ SELECT pg_temp.as_login(login, bound, sql) $$;
CREATE FUNCTION pg_temp.set_policy(name text, policy jsonb) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_dba(format('SELECT openwop.set_approval_policy(%L, %L)', name, policy))
$$;
CREATE FUNCTION pg_temp.retire_policy(name text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_dba(format('SELECT openwop.retire_approval_policy(%L)', name))
$$;
CREATE FUNCTION pg_temp.policies() RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_dba($q$ SELECT coalesce(jsonb_agg(jsonb_build_array(name, version, active, retired_at IS NOT NULL)
                                                       ORDER BY name, version), '[]')
                               FROM openwop.approval_policies $q$)
$$;
-- a gate raised by the engine (this login) in workflow wf, node gate
CREATE FUNCTION pg_temp.gate(run text, data jsonb, wf text DEFAULT 'expenses', node text DEFAULT 'gate',
                             requester text DEFAULT NULL, extra jsonb DEFAULT '{}') RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
  PERFORM openwop.create_run(wf, jsonb_build_object('runId', run), requester);
  PERFORM openwop.start_node(run, node);
  RETURN openwop.interrupt(run, node, jsonb_build_object('kind', 'approval', 'data',
           jsonb_build_object('artifactId', 'a', 'artifactType', 'doc', 'title', 'T',
                              'actions', '["accept", "reject", "ask"]'::jsonb) || data) || extra);
END $$;
-- the engine raising the same gate again (a replay of its node)
CREATE FUNCTION pg_temp.gate_again(run text, wf text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT openwop.interrupt(run, 'gate', jsonb_build_object('kind', 'approval', 'data',
           jsonb_build_object('artifactId', 'a', 'artifactType', 'doc', 'title', 'T', 'actions', '["accept", "reject", "ask"]'::jsonb)))
$$;
CREATE FUNCTION pg_temp.vote(run text, who text, value jsonb DEFAULT '{"action": "accept"}') RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.as_request(jsonb_build_object('sub', who, 'tenant', split_part(run, '/', 1), 'scope', 'approvals:respond'),
                            format('SELECT openwop.resolve_interrupt(%L, %L, %L)', run, 'gate', value))
$$;
-- the refusal of a vote, or NULL
CREATE FUNCTION pg_temp.refused_vote(run text, who text, value jsonb DEFAULT '{"action": "accept"}') RETURNS jsonb LANGUAGE sql AS $$
  SELECT pg_temp.refusal(format('SELECT pg_temp.vote(%L, %L, %L)', run, who, value))
$$;
CREATE FUNCTION pg_temp.pin(run text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT policy FROM openwop.interrupts WHERE run_id = run AND node_id = 'gate'
$$;
CREATE FUNCTION pg_temp.resolved(run text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT e -> 'payload' FROM openwop.events(run, -1, 10000) e WHERE e ->> 'type' = 'interrupt.resolved'
$$;
DO $$ BEGIN
  PERFORM openwop.add_group_member('security', 'sam');
  PERFORM openwop.add_group_member('security', 'dana');
  PERFORM openwop.add_group_member('finance', 'fay');
  PERFORM openwop.add_group_member('finance', 'finn');
  PERFORM openwop.add_group_member('finance', 'dana');   -- in both groups
  PERFORM openwop.add_group_member('finance', 'rita');   -- a finance approver who requests runs too
END $$;

/* ------------------------------------------------------------------
 * Who may set policies
 * ------------------------------------------------------------------ */

SELECT is(pg_temp.as_login('tap_pol_clerk', 'acme', $$ SELECT openwop.set_approval_policy('p', '{"appliesTo": {"workflowId": "*", "nodeId": "*"}}') $$)
            ->> 'sqlstate', '42501',
          'policy_admin_required: a login without openwop_policy_admin has no EXECUTE');
GRANT USAGE ON SCHEMA openwop TO tap_pol_clerk;
GRANT EXECUTE ON FUNCTION openwop.set_approval_policy(text, jsonb, text) TO tap_pol_clerk;
SELECT is(pg_temp.as_login('tap_pol_clerk', 'acme', $$ SELECT openwop.set_approval_policy('p', '{"appliesTo": {"workflowId": "*", "nodeId": "*"}}') $$)
            -> 'details' ->> 'requiredRole', 'openwop_policy_admin',
          'policy_admin_required: ... nor with EXECUTE granted: 403 forbidden naming the role');
SELECT is(pg_temp.refusal($$ SELECT openwop.set_approval_policy('p', '{"appliesTo": {"workflowId": "*", "nodeId": "*"}}') $$) ->> 'code',
          'forbidden', 'superuser_needs_the_grant: a superuser login is a plain login here');
SELECT is(pg_temp.refusal($$ SELECT pg_temp.as_request('{"sub": "tap_pol_dba", "tenant": "acme", "scope": "approvals:respond"}',
                                                       $q$ SELECT openwop.set_approval_policy('p', '{"appliesTo": {"workflowId": "*", "nodeId": "*"}}') $q$) $$)
            ->> 'code', 'forbidden',
          'policy_admin_sql_only: a request session (a JWT) never sets policies, whoever its subject');
SELECT is(pg_temp.as_login('tap_pol_clerk', 'acme', $$ SELECT to_jsonb(openwop.policy_admin_tenant()) $$) ->> 'sqlstate', '42501',
          'policy_admin_tenant is not for everyone');
SELECT is(pg_temp.as_dba($$ SELECT to_jsonb(openwop.policy_admin_tenant()) $$), '"acme"',
          'policy_admin_tenant: a policy admin bound to acme administers acme');
SELECT is(pg_temp.as_dba($$ SELECT to_jsonb(openwop.policy_admin_tenant()) $$, '*'), '"*"',
          '... one bound to "*" every tenant');
SELECT is((SELECT count(*) FROM openwop.approval_policy_log), 0::bigint, 'nothing refused was stored');

/* ------------------------------------------------------------------
 * Versions, retirement, the view, the log
 * ------------------------------------------------------------------ */

SELECT is(pg_temp.set_policy('expenses', '{"appliesTo": {"workflowId": "expenses", "nodeId": "*"}, "requiredApprovals": 2}'),
          '{"name": "expenses", "version": 1, "tenant": "acme"}', 'policy_versions: set answers {name, version, tenant}');
SELECT is(pg_temp.set_policy('expenses', '{"appliesTo": {"workflowId": "expenses", "nodeId": "*"}, "requiredApprovals": 3}') ->> 'version',
          '2', 'policy_versions: each call makes a new version');
SELECT is(pg_temp.policies(), '[["expenses", 1, false, false], ["expenses", 2, true, false]]',
          'the view: every version, the latest active');
SELECT is(pg_temp.as_dba($$ SELECT to_jsonb(p) - 'set_at' FROM openwop.approval_policies p WHERE version = 2 $$),
          '{"name": "expenses", "tenant": "acme", "version": 2, "active": true, "set_by": "tap_pol_dba",
            "retired_at": null, "retired_by": null,
            "policy": {"appliesTo": {"workflowId": "expenses", "nodeId": "*"}, "requiredApprovals": 3}}',
          'the view: name, tenant, version, the whole document, who set it');
SELECT is(pg_temp.retire_policy('expenses'), '{"name": "expenses", "version": 2, "tenant": "acme", "retired": true, "changed": true}',
          'retire_policy: the latest version is retired');
SELECT is(pg_temp.retire_policy('expenses') ->> 'changed', 'false', '... retiring it again changes nothing');
SELECT is(pg_temp.policies(), '[["expenses", 1, false, false], ["expenses", 2, false, true]]', '... and no version is active');
SELECT is(pg_temp.as_dba($$ SELECT openwop.retire_approval_policy('nope') $$) ->> 'code', 'not_found',
          'retire_policy: a policy never set is 404');
SELECT is(pg_temp.set_policy('expenses', '{"appliesTo": {"workflowId": "expenses", "nodeId": "*"}}') ->> 'version', '3',
          'a policy set after its retirement is a new version, active');
SELECT is(pg_temp.refusal($$ UPDATE openwop.approval_policy_log SET version = 9 $$) ->> 'sqlstate', '42501',
          'policy_log_append_only: UPDATE is refused, superusers included');
SELECT is(pg_temp.refusal($$ DELETE FROM openwop.approval_policy_log $$) ->> 'sqlstate', '42501', '... DELETE');
SELECT is(pg_temp.refusal($$ TRUNCATE openwop.approval_policy_log $$) ->> 'sqlstate', '42501', '... TRUNCATE');
SET LOCAL session_replication_role = replica;
SELECT is(pg_temp.refusal($$ DELETE FROM openwop.approval_policy_log $$) ->> 'sqlstate', '42501',
          '... whatever session_replication_role says');
RESET session_replication_role;
SELECT is(pg_temp.as_dba($$ SELECT jsonb_agg(change) FROM openwop.approval_policy_log $$) ->> 'sqlstate',
          '42501', 'the log itself is the owner''s: a policy admin reads the view');
SELECT is((SELECT jsonb_agg(jsonb_build_array(version, change, changed_by) ORDER BY version, change DESC) FROM openwop.approval_policy_log),
          '[[1, "set", "tap_pol_dba"], [2, "set", "tap_pol_dba"], [2, "retire", "tap_pol_dba"], [3, "set", "tap_pol_dba"]]',
          'every change is a record: who, when, what');
DO $$ BEGIN PERFORM pg_temp.retire_policy('expenses'); END $$;

/* ------------------------------------------------------------------
 * Bad input: a clear error naming the field, nothing stored
 * ------------------------------------------------------------------ */

CREATE FUNCTION pg_temp.bad(policy jsonb, name text DEFAULT 'bad') RETURNS text LANGUAGE sql AS $$
  SELECT (r ->> 'code') || ' ' || coalesce(r -> 'details' ->> 'field', '-')
    FROM pg_temp.as_dba(format('SELECT openwop.set_approval_policy(%L, %L)', name, policy)) r
$$;
SELECT is(pg_temp.bad('{"requiredApprovals": 2}'), 'validation_error policy', 'policy_bad_input: appliesTo is required');
SELECT is(pg_temp.bad('{"appliesTo": {"workflowId": "*"}}'), 'validation_error policy.appliesTo', '... with workflowId and nodeId');
SELECT is(pg_temp.bad('{"appliesTo": {"workflowId": "", "nodeId": "*"}}'), 'validation_error policy.appliesTo.workflowId', '... not empty');
SELECT is(pg_temp.bad('{"appliesTo": {"workflowId": "*", "nodeId": "*"}, "requiredApproval": 2}'), 'validation_error policy.requiredApproval',
          '... an unknown member (a misspelt rule would silently not apply)');
SELECT is(pg_temp.bad('{"appliesTo": {"workflowId": "*", "nodeId": "*"}, "requiredApprovals": 0}'),
          'validation_error policy.requiredApprovals', '... requiredApprovals below 1');
SELECT is(pg_temp.bad('{"appliesTo": {"workflowId": "*", "nodeId": "*"}, "requiredApprovals": 1.5}'),
          'validation_error policy.requiredApprovals', '... not a whole number');
SELECT is(pg_temp.bad('{"appliesTo": {"workflowId": "*", "nodeId": "*"}, "groups": [{}]}'),
          'validation_error policy.groups[0]', 'policy_bad_input: an empty groups entry');
SELECT is(pg_temp.bad('{"appliesTo": {"workflowId": "*", "nodeId": "*"}, "groups": [{"ref": "finance", "required": 0}]}'),
          'validation_error policy.groups[0].required', 'policy_bad_input: required below 1');
SELECT is(pg_temp.bad('{"appliesTo": {"workflowId": "*", "nodeId": "*"}, "groups": [{"ref": "finance", "required": 1}, {"ref": "finance", "required": 2}]}'),
          'validation_error policy.groups[1].ref', '... a group listed twice');
SELECT is(pg_temp.bad('{"appliesTo": {"workflowId": "*", "nodeId": "*"}, "groups": [{"ref": "a", "required": 600}, {"ref": "b", "required": 600}]}'),
          'validation_error policy.groups', '... more approvals than a policy may ask for');
SELECT is(pg_temp.bad('{"appliesTo": {"workflowId": "*", "nodeId": "*"}, "rejectionPolicy": "none"}'),
          'validation_error policy.rejectionPolicy', '... a rejection policy that does not exist');
SELECT is(pg_temp.bad('{"appliesTo": {"workflowId": "*", "nodeId": "*"}, "excludeRequester": "no"}'),
          'validation_error policy.excludeRequester', '... excludeRequester not a boolean');
SELECT is(pg_temp.bad('{"appliesTo": {"workflowId": "*", "nodeId": "*"}, "maxTimeoutMs": 0}'),
          'validation_error policy.maxTimeoutMs', '... a deadline of nothing');
SELECT is(pg_temp.bad('[1]'), 'validation_error policy', '... not an object');
SELECT is(pg_temp.bad('{"appliesTo": {"workflowId": "*", "nodeId": "*"}}', ''), 'validation_error name', '... an empty name');
SELECT is(pg_temp.bad('{"appliesTo": {"workflowId": "*", "nodeId": "*"}}', 'a b'), 'validation_error name', '... a name with a space');
SELECT is(pg_temp.as_dba($$ SELECT openwop.set_approval_policy('p', NULL) $$) -> 'details' ->> 'field', 'policy', '... a null policy');
SELECT is(pg_temp.as_dba($$ SELECT openwop.set_approval_policy('p', '{"appliesTo": {"workflowId": "*", "nodeId": "*"}}', 'globex') $$) ->> 'code',
          'id_tenant_mismatch', 'policy_bad_input: a tenant the caller is not bound to');
SELECT is(pg_temp.as_dba($$ SELECT openwop.set_approval_policy('p', '{"appliesTo": {"workflowId": "*", "nodeId": "*"}}', 'no such tenant') $$)
            -> 'details' ->> 'field', 'tenant', '... a tenant id that is not one');
SELECT is((SELECT count(*) FROM openwop.approval_policy_log WHERE name <> 'expenses'), 0::bigint, 'nothing refused was stored');

-- tenancy: a login bound to "*" sets another tenant's; each admin sees its own tenant's
SELECT is(pg_temp.as_dba($$ SELECT openwop.set_approval_policy('globex-all', '{"appliesTo": {"workflowId": "*", "nodeId": "*"}, "requiredApprovals": 9}', 'globex') $$, '*', 'tap_pol_root'),
          '{"name": "globex-all", "version": 1, "tenant": "globex"}', 'a policy admin bound to "*" sets any tenant''s');
SELECT is(pg_temp.as_dba($$ SELECT jsonb_agg(DISTINCT tenant) FROM openwop.approval_policies $$), '["acme"]',
          'policy_view_per_tenant: an admin bound to acme sees acme''s policies only');
SELECT is(pg_temp.as_dba($$ SELECT jsonb_agg(DISTINCT tenant ORDER BY tenant) FROM openwop.approval_policies $$, '*', 'tap_pol_root'),
          '["acme", "globex"]', '... one bound to "*" every tenant''s');

/* ------------------------------------------------------------------
 * Pinned at raise; only ever stricter
 * ------------------------------------------------------------------ */

SELECT is(pg_temp.pin((SELECT 'acme/pol-none-00000001' FROM pg_temp.gate('acme/pol-none-00000001', '{}'))), NULL,
          'no_policy_no_pin: a gate no active policy matches pins nothing');
SELECT is((SELECT required_approvals FROM openwop.pending_interrupts WHERE run_id = 'acme/pol-none-00000001'), 1, '... and keeps its own rule');
DO $$ BEGIN PERFORM pg_temp.set_policy('quorum', '{"appliesTo": {"workflowId": "expenses", "nodeId": "gate"}, "requiredApprovals": 3}'); END $$;
DO $$ BEGIN PERFORM pg_temp.gate('acme/pol-quorum-0000001', '{"approversList": ["ann", "bea", "cid", "dee"]}'); END $$;
SELECT is(pg_temp.pin('acme/pol-quorum-0000001') - 'excluded',
          '{"name": "quorum", "version": 1, "requiredApprovals": 3, "rejectionPolicy": "single-veto", "groups": [],
            "excludeRequester": true, "overrideBypassesQuorum": false}',
          'policy_pinned_at_raise: the gate records the policy''s name and version and the rule they make');
SELECT is(pg_temp.as_request('{"sub": "ann", "tenant": "acme", "scope": "approvals:respond"}',
                             $$ SELECT jsonb_build_array(policy, required_approvals) FROM openwop.pending_interrupts WHERE run_id = 'acme/pol-quorum-0000001' $$),
          '[{"name": "quorum", "version": 1}, 3]', '... the inbox shows {name, version} and the quorum the gate needs');
SELECT is(pg_temp.vote('acme/pol-quorum-0000001', 'ann') -> 'tally',
          '{"voters": 1, "accepts": 1, "rejects": 0, "requiredApprovals": 3}',
          'policy_only_strengthens: the engine asked for 1 approval, the policy for 3: one accept decides nothing');
DO $$ BEGIN PERFORM pg_temp.set_policy('quorum', '{"appliesTo": {"workflowId": "expenses", "nodeId": "gate"}, "requiredApprovals": 2}'); END $$;
SELECT is(pg_temp.vote('acme/pol-quorum-0000001', 'bea') -> 'tally' ->> 'requiredApprovals', '3',
          'policy_change_never_reaches_open_gate: a later version does not change a gate raised under an earlier one');
DO $$ BEGIN PERFORM pg_temp.retire_policy('quorum'); END $$;
SELECT is(pg_temp.vote('acme/pol-quorum-0000001', 'cid') ->> 'decision', 'granted', '... nor its retirement: the third accept grants');
SELECT is(pg_temp.resolved('acme/pol-quorum-0000001') -> 'openwop-policy', '{"name": "quorum", "version": 1}',
          'policy_recorded_on_resolved: interrupt.resolved records the pinned policy under the vendor hatch');
SELECT is(pg_temp.pin((SELECT 'acme/pol-retired-000001' FROM pg_temp.gate('acme/pol-retired-000001', '{}'))), NULL,
          'a retired policy pins no new gate');

-- a replay reads the pinned version: the engine asking again, a voter's key replayed, after later versions
DO $$ BEGIN PERFORM pg_temp.set_policy('replayed', '{"appliesTo": {"workflowId": "replayed", "nodeId": "gate"}, "requiredApprovals": 2}'); END $$;
CREATE TEMP TABLE first_ask AS SELECT pg_temp.gate('acme/pol-replay-0000001', '{}', 'replayed') AS answer;
DO $$ BEGIN PERFORM pg_temp.set_policy('replayed', '{"appliesTo": {"workflowId": "replayed", "nodeId": "gate"}, "requiredApprovals": 3}'); END $$;
SELECT is(pg_temp.gate_again('acme/pol-replay-0000001', 'replayed'), (SELECT answer FROM first_ask),
          'policy_replay_reads_pinned_version: the engine raising the gate again after a new version gets the same answer');
SELECT is(pg_temp.pin('acme/pol-replay-0000001') ->> 'version', '1', '... and the gate keeps version 1');
SELECT is(pg_temp.vote('acme/pol-replay-0000001', 'ann') -> 'tally' ->> 'requiredApprovals', '2', '... whose quorum of 2 counts the first accept');
CREATE TEMP TABLE replay_vote AS
  SELECT pg_temp.as_request('{"sub": "bea", "tenant": "acme", "scope": "approvals:respond"}',
           $$ SELECT openwop.resolve_interrupt('acme/pol-replay-0000001', 'gate', '{"action": "accept"}', 'bea-replay-key-0000000001') $$) AS answer;
SELECT is((SELECT answer #> '{receipt,policy}' FROM replay_vote), '{"name": "replayed", "version": 1}',
          '... the second grants under version 1');
DO $$ BEGIN PERFORM pg_temp.retire_policy('replayed'); END $$;
SELECT is(pg_temp.as_request('{"sub": "bea", "tenant": "acme", "scope": "approvals:respond"}',
           $$ SELECT openwop.resolve_interrupt('acme/pol-replay-0000001', 'gate', '{"action": "accept"}', 'bea-replay-key-0000000001') $$),
          (SELECT answer || '{"idempotentReplay": true}' FROM replay_vote),
          'policy_replay_reads_pinned_version: the voter''s key replays the same answer after the policy is retired');
SELECT is((pg_temp.gate_again('acme/pol-replay-0000001', 'replayed') -> 'resumeValue') - 'decidedAt', '{"action": "accept", "decidedBy": "bea"}',
          '... and the engine asking again is answered with the recorded resolution');
SELECT is(pg_temp.resolved('acme/pol-replay-0000001') -> 'openwop-policy', '{"name": "replayed", "version": 1}',
          '... recorded under version 1');

DO $$ BEGIN PERFORM pg_temp.set_policy('engine-larger', '{"appliesTo": {"workflowId": "big", "nodeId": "*"}, "requiredApprovals": 2}'); END $$;
DO $$ BEGIN PERFORM pg_temp.gate('acme/pol-larger-0000001', '{"requiredApprovals": 4}', 'big'); END $$;
SELECT is(pg_temp.pin('acme/pol-larger-0000001') ->> 'requiredApprovals', '4', 'the larger of the two quorums: the engine''s when it asks more');
DO $$ BEGIN PERFORM pg_temp.gate('acme/pol-other-node-001', '{}', 'expenses', 'review'); END $$;
SELECT is(pg_temp.pin('acme/pol-other-node-001'), NULL, 'appliesTo: a node the policy does not name');
SELECT is(pg_temp.pin((SELECT 'acme/pol-tenant-0000001' FROM pg_temp.gate('acme/pol-tenant-0000001', '{}', 'anything'))), NULL,
          'a policy of another tenant (globex''s, for every workflow) never pins an acme gate');

-- single-veto over the engine's majority; the override bypass the policy did not allow
DO $$ BEGIN PERFORM pg_temp.set_policy('veto', '{"appliesTo": {"workflowId": "veto", "nodeId": "*"}, "rejectionPolicy": "single-veto"}'); END $$;
DO $$ BEGIN PERFORM pg_temp.gate('acme/pol-veto-00000001', '{"requiredApprovals": 3, "rejectionPolicy": "majority"}', 'veto'); END $$;
SELECT is(pg_temp.vote('acme/pol-veto-00000001', 'ann', '{"action": "reject"}') ->> 'decision', 'rejected',
          'policy_stricter_rejection: single-veto beats the engine''s majority');
DO $$ BEGIN PERFORM openwop.add_group_member('openwop-override', 'oscar'); END $$;
DO $$ BEGIN PERFORM pg_temp.gate('acme/pol-override-00001', '{"requiredApprovals": 2, "overrideBypassesQuorum": true}', 'veto'); END $$;
SELECT is(pg_temp.vote('acme/pol-override-00001', 'oscar') ->> 'status', 'pending',
          'policy_engine_cannot_turn_off: an override principal does not bypass a policy''s quorum the policy did not waive');
DO $$ BEGIN PERFORM pg_temp.set_policy('waived', '{"appliesTo": {"workflowId": "waived", "nodeId": "*"}, "overrideBypassesQuorum": true}'); END $$;
DO $$ BEGIN PERFORM pg_temp.gate('acme/pol-override-00002', '{"requiredApprovals": 2, "overrideBypassesQuorum": true}', 'waived'); END $$;
SELECT is(pg_temp.vote('acme/pol-override-00002', 'oscar') ->> 'decision', 'overridden', '... one that waived it lets the override through');

-- the shorter deadline
DO $$ BEGIN PERFORM pg_temp.set_policy('deadline', '{"appliesTo": {"workflowId": "deadline", "nodeId": "*"}, "maxTimeoutMs": 3600000}'); END $$;
DO $$ BEGIN PERFORM pg_temp.gate('acme/pol-deadline-00001', '{}', 'deadline', 'gate', NULL, '{"timeoutMs": 86400000}');
            PERFORM pg_temp.gate('acme/pol-deadline-00002', '{}', 'deadline', 'gate', NULL, '{"timeoutMs": 60000}');
            PERFORM pg_temp.gate('acme/pol-deadline-00003', '{}', 'deadline'); END $$;
SELECT is((SELECT jsonb_agg(extract(epoch FROM expires_at - created_at)::int ORDER BY run_id) FROM openwop.interrupts
            WHERE run_id LIKE 'acme/pol-deadline-%'),
          '[3600, 60, 3600]', 'policy_shorter_timeout: the policy''s maximum, the engine''s shorter one, the policy''s where the engine set none');
SELECT is((SELECT jsonb_agg(pg_temp.pin(run_id) -> 'timeoutMs' ORDER BY run_id) FROM openwop.interrupts WHERE run_id LIKE 'acme/pol-deadline-%'),
          '[3600000, null, 3600000]', '... the pin says when it shortened the deadline');
SELECT is((SELECT payload -> 'timeoutMs' FROM openwop.interrupts WHERE run_id = 'acme/pol-deadline-00001'), '86400000',
          'interrupt.requested carries the engine''s request verbatim');

/* ------------------------------------------------------------------
 * Groups met by distinct humans; the requester excluded
 * ------------------------------------------------------------------ */

DO $$ BEGIN PERFORM pg_temp.set_policy('payments', '{"appliesTo": {"workflowId": "payments", "nodeId": "*"},
                                                    "groups": [{"ref": "security", "required": 1}, {"ref": "finance", "required": 2}]}'); END $$;
DO $$ BEGIN PERFORM pg_temp.gate('acme/pol-groups-0000001', '{"approversList": ["ann"]}', 'payments', 'gate', 'rita'); END $$;
SELECT is(pg_temp.pin('acme/pol-groups-0000001') - 'excluded' - 'name' - 'version',
          '{"requiredApprovals": 3, "rejectionPolicy": "single-veto", "excludeRequester": true, "overrideBypassesQuorum": false,
            "groups": [{"ref": "security", "required": 1}, {"ref": "finance", "required": 2}]}',
          'policy_groups: requiredApprovals is at least the groups'' sum (their members are distinct humans)');
SELECT is(pg_temp.refused_vote('acme/pol-groups-0000001', 'rita') - 'message',
          '{"sqlstate": "PT403", "code": "forbidden", "details": {"principal": "rita", "reason": "requester", "policy": "payments"}}',
          'policy_excludes_requester: the requester may not vote, though in finance (403, the reason in details)');
SELECT is(pg_temp.refused_vote('acme/pol-groups-0000001', 'mallory') ->> 'code', 'forbidden',
          'eligibility: neither named by the gate nor in a policy group');
SELECT is(pg_temp.vote('acme/pol-groups-0000001', 'dana') -> 'tally',
          '{"voters": 1, "accepts": 1, "rejects": 0, "requiredApprovals": 3,
            "groups": [{"ref": "security", "required": 1, "met": 0}, {"ref": "finance", "required": 2, "met": 1}]}',
          'policy_distinct_humans: dana, in security and finance, counts toward one requirement');
SELECT is(pg_temp.vote('acme/pol-groups-0000001', 'dana', '{"action": "ask", "feedback": "which vendor?"}') ->> 'counted', 'false',
          'dana asks a question');
SELECT is(pg_temp.vote('acme/pol-groups-0000001', 'fay') -> 'tally' -> 'groups',
          '[{"ref": "security", "required": 1, "met": 0}, {"ref": "finance", "required": 2, "met": 2}]',
          'policy_groups_ask_keeps_vote: fay toward finance, and dana''s accept still counts after her ask');
SELECT is(pg_temp.vote('acme/pol-groups-0000001', 'ann') - 'interruptId',
          '{"runId": "acme/pol-groups-0000001", "nodeId": "gate", "status": "pending", "action": "accept", "counted": true,
            "tally": {"voters": 3, "accepts": 3, "rejects": 0, "requiredApprovals": 3,
                      "groups": [{"ref": "security", "required": 1, "met": 0}, {"ref": "finance", "required": 2, "met": 2}]}}',
          'policy_distinct_humans: three accepts reach the quorum, but no one is left for security: dana counts once');
SELECT is(pg_temp.vote('acme/pol-groups-0000001', 'sam') ->> 'decision', 'granted',
          '... sam meets security: sam for security, dana and fay for finance, granted');
SELECT is(pg_temp.resolved('acme/pol-groups-0000001') -> 'openwop-eligibility' -> 'matched', '["policy-group:security"]',
          'the eligibility record says sam was eligible through the policy''s group');
DO $$ BEGIN PERFORM pg_temp.gate('acme/pol-groups-0000002', '{}', 'payments'); END $$;
SELECT is(jsonb_build_array(pg_temp.refused_vote('acme/pol-groups-0000002', 'ann') ->> 'code',
                            pg_temp.refused_vote('acme/pol-groups-0000002', 'fay')),
          '["forbidden", null]',
          'policy_groups_eligible: a gate naming nobody, under a policy with groups, is for the groups'' members only');

-- the run's owner (the engine's login) is excluded too, under every identity path
DO $$ BEGIN PERFORM pg_temp.gate('acme/pol-owner-00000001', jsonb_build_object('approversList', jsonb_build_array('ann', session_user)), 'payments'); END $$;
SELECT is(pg_temp.refusal(format($$ SELECT openwop.resolve_interrupt('acme/pol-owner-00000001', 'gate', '{"action": "accept"}') $$))
            -> 'details' ->> 'reason', 'run-owner',
          'policy_excludes_run_owner: the login that started the run may not vote on its gate');
SELECT is((SELECT policy -> 'excluded' ->> 'owner' FROM openwop.interrupts WHERE run_id = 'acme/pol-owner-00000001'),
          'urn:openwop-interrupt:session/' || session_user, '... named issuer-qualified in the pin');
DO $$ BEGIN PERFORM pg_temp.gate('acme/pol-token-00000001', '{}', 'payments', 'gate', 'rita');
            PERFORM openwop.add_signing_key('k-policies', 'example-secret-do-not-use'::bytea); END $$;
SELECT is(pg_temp.refusal($$ SELECT openwop.mint_interrupt_token((SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/pol-token-00000001'), 'resolve', NULL, 'rita') $$)
            -> 'details' ->> 'reason', 'requester',
          'policy_excludes_requester_token: no resolve token is minted for the requester');
SELECT is(pg_temp.refusal($$ SELECT openwop.mint_interrupt_token((SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/pol-token-00000001'), 'resolve', NULL, NULL) $$)
            -> 'details' ->> 'field', 'principal',
          '... nor one that names nobody (its holder could be the requester)');
SELECT is(pg_temp.refusal($$ SELECT openwop.resolve_interrupt_by_token(openwop.mint_interrupt_token((SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/pol-token-00000001'), 'resolve', NULL, 'fay'), '{"action": "accept"}') $$),
          NULL, 'control: a token minted for fay votes');
SELECT is(pg_temp.refusal(format($$ SELECT openwop.mint_interrupt_token((SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/pol-owner-00000001'), 'resolve', NULL, %L) $$,
                                 session_user)) -> 'details' ->> 'reason', 'run-owner',
          'policy_excludes_run_owner_token: no resolve token is minted for the run''s owner');
SELECT is(pg_temp.as_request('{"sub": "rita", "tenant": "acme", "scope": "approvals:respond"}',
                             $$ SELECT coalesce(jsonb_agg(run_id), '[]') FROM openwop.pending_interrupts WHERE run_id = 'acme/pol-token-00000001' $$),
          '[]', 'policy_excludes_requester_inbox: the requester does not find the gate in the inbox');
SELECT is(pg_temp.as_request('{"sub": "finn", "tenant": "acme", "scope": "approvals:respond"}',
                             $$ SELECT coalesce(jsonb_agg(run_id), '[]') FROM openwop.pending_interrupts WHERE run_id = 'acme/pol-token-00000001' $$),
          '["acme/pol-token-00000001"]', '... finn does');
CREATE ROLE tap_pol_rita LOGIN;
GRANT openwop_approver TO tap_pol_rita;
GRANT USAGE ON SCHEMA openwop TO tap_pol_rita;
GRANT EXECUTE ON FUNCTION openwop.resolve_interrupt(text, text, jsonb, text) TO tap_pol_rita;
DO $$ BEGIN PERFORM openwop.add_group_member('finance', 'tap_pol_rita');
            PERFORM pg_temp.gate('acme/pol-login-00000001', '{}', 'payments', 'gate', 'tap_pol_rita'); END $$;
SELECT is(pg_temp.as_login('tap_pol_rita', 'acme', $$ SELECT openwop.resolve_interrupt('acme/pol-login-00000001', 'gate', '{"action": "accept"}') $$)
            -> 'details' ->> 'reason', 'requester',
          'policy_excludes_requester_login: ... nor as a SQL login of that name');
SELECT is(openwop.run_snapshot('acme/pol-token-00000001') ->> 'openwop-requestedBy', 'rita',
          'requested_by: run_snapshot shows the requester under the vendor hatch');
SELECT is(pg_temp.refusal($$ SELECT openwop.create_run('payments', '{}', 'two words') $$) -> 'details' ->> 'field', 'requestedBy',
          'requested_by: a requester that is not a subject ref is refused');

-- the review's attacks (helper-16): the requester and owner under every spelling, a fork
DO $$ BEGIN PERFORM pg_temp.gate('acme/pol-spelled-000001', '{}', 'payments', 'gate', 'https://idp.example/rita'); END $$;
SELECT is(jsonb_build_array(
            pg_temp.refused_vote('acme/pol-spelled-000001', 'rita') -> 'details' ->> 'reason',
            pg_temp.refusal($$ SELECT pg_temp.as_request('{"iss": "https://other-idp.example", "sub": "rita", "tenant": "acme", "scope": "approvals:respond"}',
                               $q$ SELECT openwop.resolve_interrupt('acme/pol-spelled-000001', 'gate', '{"action": "reject"}') $q$) $$) -> 'details' ->> 'reason',
            pg_temp.refusal($$ SELECT openwop.mint_interrupt_token((SELECT interrupt_id FROM openwop.interrupts WHERE run_id = 'acme/pol-spelled-000001'), 'resolve', NULL, 'rita') $$)
              -> 'details' ->> 'reason'),
          '["requester", "requester", "requester"]',
          'policy_excludes_requester_any_issuer: a requester named with its issuer is refused under every issuer, and no token is minted for it');
SELECT is(pg_temp.as_request('{"iss": "https://idp.example", "sub": "eve", "tenant": "acme", "scope": "approvals:respond"}',
            $$ SELECT jsonb_build_object('r', openwop.create_run('payments', '{"runId": "acme/pol-jwt-owner-0001"}'),
                                         's', openwop.start_node('acme/pol-jwt-owner-0001', 'gate')) $$) -> 'r' ->> 'status',
          'running', 'a run started by a JWT subject (the engine through PostgREST)');
DO $$ BEGIN PERFORM openwop.interrupt('acme/pol-jwt-owner-0001', 'gate', '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc", "title": "T", "actions": ["accept"], "approversList": ["eve"]}}');
            PERFORM openwop.add_group_member('finance', 'eve'); END $$;
SELECT is(pg_temp.refused_vote('acme/pol-jwt-owner-0001', 'eve') -> 'details' ->> 'reason', 'run-owner',
          'policy_excludes_run_owner_any_issuer: its owner is refused under another issuer');
SELECT is(openwop.fork_run('acme/pol-token-00000001', '{"mode": "branch", "fromSeq": 0}') ->> 'status', 'running',
          'a branch of the run rita requested');
SELECT is((SELECT openwop.run_snapshot(run_id) ->> 'openwop-requestedBy' FROM openwop.runs WHERE fork_of = 'acme/pol-token-00000001'),
          'rita', 'policy_fork_keeps_requester: the fork keeps the requester');
DO $$ BEGIN PERFORM openwop.start_node((SELECT run_id FROM openwop.runs WHERE fork_of = 'acme/pol-token-00000001'), 'gate2');
            PERFORM openwop.interrupt((SELECT run_id FROM openwop.runs WHERE fork_of = 'acme/pol-token-00000001'), 'gate2',
                      '{"kind": "approval", "data": {"artifactId": "a", "artifactType": "doc", "title": "T", "actions": ["accept"]}}'); END $$;
SELECT is(pg_temp.refusal(format($$ SELECT pg_temp.as_request('{"sub": "rita", "tenant": "acme", "scope": "approvals:respond"}', %L) $$,
            format($$ SELECT openwop.resolve_interrupt(%L, 'gate2', '{"action": "accept"}') $$,
                   (SELECT run_id FROM openwop.runs WHERE fork_of = 'acme/pol-token-00000001')))) -> 'details' ->> 'reason',
          'requester', '... and its gates refuse the requester');

-- a policy silent on rejectionPolicy keeps single-veto; majority needs every side's word
DO $$ BEGIN PERFORM pg_temp.set_policy('silent', '{"appliesTo": {"workflowId": "silent", "nodeId": "*"}, "requiredApprovals": 3}');
            PERFORM pg_temp.gate('acme/pol-silent-0000001', '{"rejectionPolicy": "majority"}', 'silent'); END $$;
SELECT is(pg_temp.vote('acme/pol-silent-0000001', 'ann', '{"action": "reject"}') ->> 'decision', 'rejected',
          'policy_silent_rejection_is_single_veto: the engine''s majority does not survive a policy that says nothing');

-- excludeRequester false: the requester may vote
DO $$ BEGIN PERFORM pg_temp.set_policy('self-service', '{"appliesTo": {"workflowId": "self", "nodeId": "*"}, "excludeRequester": false}'); END $$;
DO $$ BEGIN PERFORM pg_temp.gate('acme/pol-self-00000001', '{}', 'self', 'gate', 'rita'); END $$;
SELECT is(pg_temp.vote('acme/pol-self-00000001', 'rita') ->> 'decision', 'granted',
          'excludeRequester false lets the requester decide');

-- two policies match: both pinned, the stricter of each member
DO $$ BEGIN PERFORM pg_temp.set_policy('all-two', '{"appliesTo": {"workflowId": "*", "nodeId": "*"}, "requiredApprovals": 2}');
            PERFORM pg_temp.set_policy('pay-security', '{"appliesTo": {"workflowId": "pay2", "nodeId": "*"}, "groups": [{"ref": "security", "required": 1}], "maxTimeoutMs": 60000}'); END $$;
DO $$ BEGIN PERFORM pg_temp.gate('acme/pol-two-000000001', '{}', 'pay2'); END $$;
SELECT is(pg_temp.pin('acme/pol-two-000000001') - 'excluded',
          '{"name": "all-two", "version": 1, "policies": [{"name": "all-two", "version": 1}, {"name": "pay-security", "version": 1}],
            "requiredApprovals": 2, "rejectionPolicy": "single-veto", "excludeRequester": true, "overrideBypassesQuorum": false,
            "groups": [{"ref": "security", "required": 1}], "timeoutMs": 60000}',
          'policies_combined: every matching policy is pinned, each member the stricter');
SELECT is(pg_temp.as_request('{"sub": "sam", "tenant": "acme", "scope": "approvals:respond"}',
                             $$ SELECT policy FROM openwop.pending_interrupts WHERE run_id = 'acme/pol-two-000000001' $$),
          '{"name": "all-two", "version": 1, "policies": [{"name": "all-two", "version": 1}, {"name": "pay-security", "version": 1}]}',
          '... the inbox lists them');

SELECT * FROM finish();
ROLLBACK;
