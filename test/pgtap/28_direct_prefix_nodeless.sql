-- The completed prefix read from the index (interrupt(), src/domain/interrupts.c
-- prefix_direct) measures what its statement measures: DISTINCT ON
-- (node_id) keeps one event of those without a node (the latest), so a
-- log holding several node.completed events without a node (restored, not
-- ours) counts one of them against the envelope limit, not all; the
-- direct read must neither refuse what the statement carries nor carry
-- what it refuses.
BEGIN;
SELECT * FROM no_plan();
SET LOCAL openwop.tenant = 'acme';
SET LOCAL openwop.max_payload_size = '1024';	-- an envelope may carry 128 kB

CREATE FUNCTION pg_temp.gate(run text) RETURNS jsonb LANGUAGE sql AS $$
  SELECT openwop.interrupt(run, 'gate', '{"kind": "approval", "data": {"artifactId": "a",
    "artifactType": "doc", "title": "T", "actions": ["accept", "reject"]}}') - 'interruptId' - 'key'
$$;
CREATE FUNCTION pg_temp.refusal(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE sql;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ' ' || SQLERRM;
END $$;
-- a run whose log holds, before its gate, nodeless node.completed events of
-- about 61 kB each (count of them) and one node's completion of size kB
CREATE FUNCTION pg_temp.run_with(run text, count int, size int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  PERFORM openwop.create_run('prefix', jsonb_build_object('runId', run));
  INSERT INTO openwop.events (tenant, run_id, sequence, type, node_id, payload, hash)
  SELECT 'acme', run, s, 'node.completed', NULL,
         jsonb_build_object('outputs', jsonb_build_object('x', repeat(md5(s::text), 1900))), sha256('forged')
    FROM generate_series(1, count) s;
  INSERT INTO openwop.events (tenant, run_id, sequence, type, node_id, payload, hash)
  VALUES ('acme', run, count + 1, 'node.completed', 'a',
          jsonb_build_object('outputs', jsonb_build_object('y', repeat('y', size * 1024))), sha256('forged'));
  UPDATE openwop.runs SET next_sequence = count + 2 WHERE run_id = run;
  PERFORM openwop.start_node(run, 'gate');
END $$;

SELECT pg_temp.run_with('acme/prefix-nodeless-direct1', 3, 1);
SELECT pg_temp.run_with('acme/prefix-nodeless-sqlpath1', 3, 1);
SELECT pg_temp.run_with('acme/prefix-nodeless-direct2', 3, 70);
SELECT pg_temp.run_with('acme/prefix-nodeless-sqlpath2', 3, 70);

SELECT is(pg_temp.refusal($$SELECT pg_temp.gate('acme/prefix-nodeless-direct1')$$), 'no error',
          'direct_prefix_nodeless: three nodeless completions count as one, as DISTINCT ON keeps one');
SELECT is(pg_temp.gate('acme/prefix-nodeless-direct1') -> 'results' -> 'a' ->> 'y', repeat('y', 1024),
          '... and the node''s outputs are carried');
SELECT ok(pg_temp.refusal($$SELECT pg_temp.gate('acme/prefix-nodeless-direct2')$$) LIKE 'PT409 %more than an envelope may carry',
          'direct_prefix_nodeless: the latest nodeless one and a node''s 70 kB are over the limit: 409');

-- the same through the statement (row security on the log)
ALTER TABLE openwop.events ENABLE ROW LEVEL SECURITY;
SELECT is(pg_temp.refusal($$SELECT pg_temp.gate('acme/prefix-nodeless-sqlpath1')$$), 'no error',
          'direct_prefix_nodeless_fallback: the statement carries it');
SELECT ok(pg_temp.refusal($$SELECT pg_temp.gate('acme/prefix-nodeless-sqlpath2')$$) LIKE 'PT409 %more than an envelope may carry',
          '... and refuses the larger one');
SELECT is(pg_temp.gate('acme/prefix-nodeless-sqlpath1') -> 'results', pg_temp.gate('acme/prefix-nodeless-direct1') -> 'results',
          '... with the same results');
ALTER TABLE openwop.events DISABLE ROW LEVEL SECURITY;

SELECT * FROM finish();
ROLLBACK;
