/*
 * openwop_interrupt 0.4.0 -> 0.5.0: the approver's side — the inbox view
 * openwop.pending_interrupts, the FlowDrop INT-22 entry
 * openwop.flowdrop_interrupt(), and the PostgREST schema openwop_api.
 * Nothing existing changes; each part is the same as in the 0.5.0 install
 * script.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION openwop_interrupt UPDATE TO '0.5.0'" to load this file. \quit

-- == inbox: openwop.pending_interrupts (begin) ==
-- == inbox (end) ==

-- == flowdrop: openwop.flowdrop_interrupt (begin) ==
-- == flowdrop (end) ==

-- == openwop_api: the PostgREST schema (begin) ==
-- == openwop_api (end) ==
