/*
 * openwop_interrupt 0.5.0 -> 0.6.0: the open interrupts move to a table of
 * their own, openwop.open_interrupts, with the three indexes that asked
 * for them (one pending per node, deadline work, inbox order), so that no
 * index of openwop.interrupts names a column a resolve changes and the
 * claim is a HOT update.  The inbox view reads the new table.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION openwop_interrupt UPDATE TO '0.6.0'" to load this file. \quit

-- room on the page for the resolved version: the claim is a HOT update
ALTER TABLE openwop.interrupts SET (fillfactor = 60);

DROP INDEX openwop.interrupts_one_pending_per_node;
DROP INDEX openwop.interrupts_due;
DROP INDEX openwop.interrupts_inbox;

-- == open interrupts: openwop.open_interrupts (begin) ==
/*
 * The interrupts still open: pending ones, and ones a late answer expired
 * whose run is still to be ended (FlowDrop INT-18).  The lookups that ask
 * "which interrupts are pending" (a run's, a node's, a tenant's by deadline
 * or in inbox order) read this table, not openwop.interrupts, so no index
 * of openwop.interrupts names a column a resolve changes: the claim is a
 * HOT update of the interrupt row and the delete of its row here.  It
 * carries the request too, so the inbox and the resolve read one row.  The
 * C code writes both tables in the same transaction, under the run lock.
 */
CREATE TABLE openwop.open_interrupts (
    tenant             text COLLATE "C" NOT NULL,
    interrupt_id       text COLLATE "C" NOT NULL,
    run_id             text COLLATE "C" NOT NULL,
    node_id            text COLLATE "C" NOT NULL,
    visit              integer     NOT NULL,
    kind               text COLLATE "C" NOT NULL,
    payload            jsonb       NOT NULL,
    status             text COLLATE "C" NOT NULL,
    requested_sequence bigint      NOT NULL,
    created_at         timestamptz NOT NULL,
    expires_at         timestamptz,
    PRIMARY KEY (tenant, interrupt_id)
);
COMMENT ON TABLE openwop.open_interrupts IS
  'The interrupts still open: one row per pending interrupt, and per interrupt a late answer expired whose run is still to be ended; the row goes when the interrupt is resolved, cancelled or its expiry announced. A copy of the open interrupts'' keys, so that no index of openwop.interrupts stops the resolve''s update from being HOT.';
COMMENT ON COLUMN openwop.open_interrupts.tenant IS 'Tenant of the run.';
COMMENT ON COLUMN openwop.open_interrupts.interrupt_id IS 'The interrupt (openwop.interrupts).';
COMMENT ON COLUMN openwop.open_interrupts.run_id IS 'Run that raised it.';
COMMENT ON COLUMN openwop.open_interrupts.node_id IS 'Node that raised it.';
COMMENT ON COLUMN openwop.open_interrupts.visit IS 'Visit index of the node execution that raised it.';
COMMENT ON COLUMN openwop.open_interrupts.kind IS 'InterruptPayload kind.';
COMMENT ON COLUMN openwop.open_interrupts.payload IS 'The InterruptPayload as requested (what the inbox shows and eligibility reads).';
COMMENT ON COLUMN openwop.open_interrupts.status IS 'pending, or expired (a late answer expired it; its run is still to be ended).';
COMMENT ON COLUMN openwop.open_interrupts.requested_sequence IS 'Sequence of its interrupt.requested event: the latest raised holds the run.';
COMMENT ON COLUMN openwop.open_interrupts.created_at IS 'When it was raised; the inbox order.';
COMMENT ON COLUMN openwop.open_interrupts.expires_at IS 'Its deadline; NULL when it never expires.';

-- at most one pending interrupt per (run, node); also the resolve path's lookup
CREATE UNIQUE INDEX interrupts_one_pending_per_node ON openwop.open_interrupts (tenant, run_id, node_id)
    WHERE status = 'pending';
COMMENT ON INDEX openwop.interrupts_one_pending_per_node IS
  'At most one pending interrupt per run and node; serves the run-scoped resolve lookup.';

-- the deadline sweep's work list: open interrupts with a deadline (absent or
-- 0: never, INT-23): pending ones, and expired ones whose run is still to be ended (INT-18)
CREATE INDEX interrupts_due ON openwop.open_interrupts (tenant, expires_at, interrupt_id)
    WHERE expires_at IS NOT NULL;
COMMENT ON INDEX openwop.interrupts_due IS
  'Deadline work per tenant, oldest first, for openwop.sweep() and the timeout worker (which share it out between tenants): pending interrupts with a deadline, and interrupts a late answer expired whose run is still to be ended.';

SELECT pg_catalog.pg_extension_config_dump('openwop.open_interrupts', '');
REVOKE ALL ON openwop.open_interrupts FROM PUBLIC;

/* a DBA's own change to an interrupt row reaches its open row (src/open_interrupts.c) */
CREATE FUNCTION openwop.interrupts_keep_open() RETURNS trigger
    AS 'MODULE_PATHNAME', 'ow_interrupts_keep_open'
    LANGUAGE C;
COMMENT ON FUNCTION openwop.interrupts_keep_open() IS
  'Trigger function: carries a change made by hand to an interrupt (its tenant, id, run, node, visit, kind, request, status, sequences, request time or deadline), or its removal, over to openwop.open_interrupts: the open row follows it, or goes when the interrupt is no longer open.';
CREATE TRIGGER interrupts_keep_open
    AFTER UPDATE OF tenant, interrupt_id, run_id, node_id, visit, kind, payload, status, requested_sequence,
    resolved_sequence, created_at, expires_at OR DELETE
    ON openwop.interrupts
    FOR EACH ROW EXECUTE FUNCTION openwop.interrupts_keep_open();
COMMENT ON TRIGGER interrupts_keep_open ON openwop.interrupts IS
  'Keeps openwop.open_interrupts in step with changes made to openwop.interrupts by hand (the extension''s own statements keep both in step themselves; its direct writes name no column and never fire it).';
REVOKE ALL ON FUNCTION openwop.interrupts_keep_open() FROM PUBLIC;
-- == open interrupts (end) ==

-- what was open before the update
INSERT INTO openwop.open_interrupts (tenant, interrupt_id, run_id, node_id, visit, kind, payload, status,
                                     requested_sequence, created_at, expires_at)
SELECT tenant, interrupt_id, run_id, node_id, visit, kind, payload, status, requested_sequence, created_at, expires_at
  FROM openwop.interrupts
 WHERE status = 'pending' OR (status = 'expired' AND resolved_sequence IS NULL AND expires_at IS NOT NULL);

CREATE INDEX interrupts_inbox ON openwop.open_interrupts (tenant, created_at, interrupt_id)
    WHERE openwop.inbox_waiting(status);
COMMENT ON INDEX openwop.interrupts_inbox IS
  'The inbox order: a tenant''s pending interrupts, oldest request first; openwop.pending_interrupts reads a page through it.';

CREATE OR REPLACE VIEW openwop.pending_interrupts WITH (security_barrier) AS
SELECT o.interrupt_id,
       o.run_id,
       o.node_id,
       o.kind,
       o.payload OPERATOR(pg_catalog.#>>) '{data,title}'::pg_catalog.text[] AS title,
       (o.payload OPERATOR(pg_catalog.->) 'data'::pg_catalog.text) OPERATOR(pg_catalog.-)
           '{approversList,approverGroupRefs,approverRoleRefs,audience}'::pg_catalog.text[] AS request,
       o.payload OPERATOR(pg_catalog.->) 'resumeSchema'::pg_catalog.text AS resume_schema,
       o.created_at AS requested_at,
       o.expires_at,
       CASE WHEN o.kind OPERATOR(pg_catalog.=) 'approval'::pg_catalog.text
            THEN COALESCE(pg_catalog.int4((o.payload OPERATOR(pg_catalog.#>) '{data,requiredApprovals}'::pg_catalog.text[])), 1)
       END AS required_approvals,
       t.accepts,
       t.rejects,
       t.voters,
       m.action AS my_vote,
       m.cast_at AS my_vote_at
  FROM openwop.open_interrupts o
  LEFT JOIN LATERAL (
        -- the tally a resolve counts: each voter's latest answer, asks left out
        SELECT pg_catalog.int4(pg_catalog.count(*) FILTER (WHERE l.action OPERATOR(pg_catalog.=) ANY
                   ('{accept,edit-accept}'::pg_catalog.text[]))) AS accepts,
               pg_catalog.int4(pg_catalog.count(*) FILTER (WHERE l.action OPERATOR(pg_catalog.=)
                   'reject'::pg_catalog.text)) AS rejects,
               pg_catalog.int4(pg_catalog.count(*)) AS voters
          FROM (SELECT DISTINCT ON (v.voter) v.action
                  FROM openwop.votes v
                 WHERE v.tenant OPERATOR(pg_catalog.=) o.tenant
                   AND v.interrupt_id OPERATOR(pg_catalog.=) o.interrupt_id
                   AND v.action OPERATOR(pg_catalog.<>) 'ask'::pg_catalog.text
                 ORDER BY v.voter, v.revision DESC) l) t
         ON o.kind OPERATOR(pg_catalog.=) 'approval'::pg_catalog.text
  LEFT JOIN LATERAL (
        -- the caller's own latest answer
        SELECT v.action, v.cast_at
          FROM openwop.votes v
         WHERE v.tenant OPERATOR(pg_catalog.=) o.tenant
           AND v.interrupt_id OPERATOR(pg_catalog.=) o.interrupt_id
           AND v.voter OPERATOR(pg_catalog.=) openwop.inbox_voter()
         ORDER BY v.revision DESC
         LIMIT 1) m ON true
 WHERE o.tenant OPERATOR(pg_catalog.=) openwop.inbox_tenant()
   AND openwop.inbox_waiting(o.status)
   AND (o.expires_at IS NULL OR o.expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp())
   AND openwop.may_decide(o.tenant, o.interrupt_id, o.kind, o.payload)
 ORDER BY o.created_at, o.interrupt_id;

