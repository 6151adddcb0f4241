/*
 * openwop_interrupt 0.2.0 -> 0.3.0: one expiry policy.
 *
 * An interrupt a late answer expired (FlowDrop INT-23) is due work until
 * the sweep ends the run it held open (INT-18), so the deadline index
 * also covers expired interrupts whose announcement is still due
 * (resolved_sequence NULL).  Expiries 0.2.0 applied are stamped with the
 * terminal event of their run; one whose run 0.2.0 left waiting stays due,
 * and the first sweep after the update ends that run.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION openwop_interrupt UPDATE TO '0.3.0'" to load this file. \quit

UPDATE openwop.interrupts i
   SET resolved_sequence = r.next_sequence OPERATOR(pg_catalog.-) 1
  FROM openwop.runs r
 WHERE r.tenant OPERATOR(pg_catalog.=) i.tenant AND r.run_id OPERATOR(pg_catalog.=) i.run_id
   AND i.status OPERATOR(pg_catalog.=) 'expired' AND i.resolved_sequence IS NULL
   AND r.status OPERATOR(pg_catalog.=) ANY ('{completed,failed,cancelled}'::pg_catalog.text[]);

DROP INDEX openwop.interrupts_due;
CREATE INDEX interrupts_due ON openwop.interrupts (tenant, expires_at, interrupt_id)
    WHERE expires_at IS NOT NULL
      AND (status = 'pending' OR (status = 'expired' AND resolved_sequence IS NULL));
COMMENT ON INDEX openwop.interrupts_due IS
  'Deadline work per tenant, oldest first, for openwop.sweep() and the timeout worker (which share it out between tenants): pending interrupts with a deadline, and interrupts a late answer expired whose run is still to be ended.';

COMMENT ON COLUMN openwop.interrupts.resolved_sequence IS 'Sequence of its interrupt.resolved event; for an expired interrupt, of the run''s terminal event that announced the expiry (NULL while that is due: a late answer expired it, FlowDrop INT-23).';

COMMENT ON FUNCTION openwop.sweep(integer) IS
  'Applies due deadlines and retention once (the timeout worker runs the same policy; pg_cron users may call it): approvals past timeoutMs are rejected (action timeout), other interrupts expire and cancel their run, and runs held by interrupts a late answer expired are cancelled; runs other transactions hold are skipped, not waited for. At most max of each, each deadline in a subtransaction, in the caller''s transaction (which holds those runs locked until it ends); then removes idempotency records past retention. Returns how many it changed. It acts in every tenant: only a superuser or a login bound to * (openwop.bound_tenant) may call it.';

-- events are dated by the clock, so a decision taken after a wait for the
-- run lock (past a deadline, say) is not dated before the wait
ALTER TABLE openwop.events ALTER COLUMN created_at SET DEFAULT pg_catalog.clock_timestamp();
COMMENT ON COLUMN openwop.events.created_at IS 'Envelope timestamp: when the event was appended (the clock, not the transaction''s start, so a decision taken after a wait for the run lock is dated after that wait).';
