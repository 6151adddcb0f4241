/*
 * openwop_interrupt 0.9.0 -> 0.10.0: the open row of a pending interrupt
 * names where the raise wrote its interrupt and node execution rows, so a
 * resolve reads them without an index probe.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION openwop_interrupt UPDATE TO '0.10.0'" to load this file. \quit

-- == 0.10.0: where a pending interrupt's rows are (begin) ==
/* ------------------------------------------------------------------------
 * The open row names the row versions the raise wrote: the interrupt's
 * row and the suspended node execution's.  A resolve, under the run lock,
 * reads them there instead of probing two indexes (about a tenth of its
 * CPU).  A hint only: a version that is no longer the one the resolve sees
 * (updated since, or moved by VACUUM FULL, CLUSTER or a restore), or
 * whose keys are not the interrupt's, is looked up by its index as
 * before; NULL (a raise through SQL statements, rows from before 0.10.0)
 * means the same.
 * ---------------------------------------------------------------------- */
ALTER TABLE openwop.open_interrupts
  ADD COLUMN interrupt_tid tid,
  ADD COLUMN execution_tid tid;
COMMENT ON COLUMN openwop.open_interrupts.interrupt_tid IS 'Where the raise wrote the interrupt''s row in openwop.interrupts (a hint for the resolve; NULL when unknown).';
COMMENT ON COLUMN openwop.open_interrupts.execution_tid IS 'Where the raise wrote the suspended node execution''s row in openwop.node_executions (a hint for the resolve; NULL when unknown).';
-- == where a pending interrupt's rows are (end) ==
