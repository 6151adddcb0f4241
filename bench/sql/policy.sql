-- Approval policies in the benchmark: the same 2-of-2 gates, voted on by
-- the same two JWT subjects, in workflow bench-plain (no policy) and in
-- workflow bench-policy, which a two-group policy governs (one accept from
-- g1, one from g2: each vote records its voter's groups, and the deciding
-- one matches accepting voters to the groups' places).
DO $$ BEGIN
  EXECUTE format('GRANT openwop_policy_admin TO %I', current_user);
END $$;
SELECT openwop.add_group_member('g1', 'bench-g1', 'default'), openwop.add_group_member('g2', 'bench-g2', 'default');
SELECT openwop.set_approval_policy('bench-two-groups',
  '{"appliesTo": {"workflowId": "bench-policy", "nodeId": "*"},
    "groups": [{"ref": "g1", "required": 1}, {"ref": "g2", "required": 1}]}', 'default');

-- per gates of workflow wf, 2-of-2, in one backend: CPU µs per raise (create_run, start_node, interrupt)
CREATE PROCEDURE bench.cpu_per_policy_raise(wf text, tag int, per int, hz int, INOUT us numeric DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE r text; t0 bigint;
BEGIN
  t0 := bench.backend_ticks();
  FOR n IN 1 .. per LOOP
    r := bench.run_id(tag, 0, n);
    PERFORM openwop.create_run(wf, jsonb_build_object('runId', r));
    PERFORM openwop.start_node(r, 'gate');
    PERFORM openwop.interrupt(r, 'gate', '{"kind": "approval", "data": {"artifactId": "expense-412",
              "artifactType": "expense", "title": "Approve 412.50 for jo", "actions": ["accept", "reject"],
              "requiredApprovals": 2}}');
    IF n % 50 = 0 THEN
      COMMIT;
    END IF;
  END LOOP;
  us := round((bench.backend_ticks() - t0) * 1e6 / hz / per, 1);
END $$;

-- the two votes of each of those gates, by bench-g1 then bench-g2 (request
-- sessions, as PostgREST's are): CPU µs per vote, in one backend
CREATE PROCEDURE bench.cpu_per_policy_vote(tag int, per int, hz int, INOUT us numeric DEFAULT NULL)
LANGUAGE plpgsql AS $$
DECLARE t0 bigint; r text;
BEGIN
  PERFORM set_config('openwop.jwt_session_role', 'bench_authenticator', false);
  t0 := bench.backend_ticks();
  FOR n IN 1 .. per LOOP
    r := bench.run_id(tag, 0, n);
    PERFORM set_config('request.jwt.claims', '{"sub": "bench-g1", "tenant": "default", "scope": "approvals:respond"}', false);
    PERFORM openwop.resolve_interrupt(r, 'gate', '{"action": "accept"}');
    PERFORM set_config('request.jwt.claims', '{"sub": "bench-g2", "tenant": "default", "scope": "approvals:respond"}', false);
    IF openwop.resolve_interrupt(r, 'gate', '{"action": "accept"}') ->> 'decision' IS DISTINCT FROM 'granted' THEN
      RAISE EXCEPTION 'gate % was not granted by its second vote', r;
    END IF;
    IF n % 50 = 0 THEN
      COMMIT;
    END IF;
  END LOOP;
  us := round((bench.backend_ticks() - t0) * 1e6 / hz / (2 * per), 1);
  PERFORM set_config('request.jwt.claims', '', false);
  PERFORM set_config('openwop.jwt_session_role', '', false);
END $$;
