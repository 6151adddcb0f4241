/*
 * openwop_interrupt 0.3.0 -> 0.4.0: low-confidence escalation without a
 * trigger.
 *
 * record_agent_decision() suspends the node itself when the confidence is
 * below the run's threshold, so the AFTER INSERT trigger on openwop.events
 * and its function go.  Until this update runs, the trigger still fires:
 * the library keeps its C symbol as a function that does nothing, so a
 * decision escalates exactly once either way.
 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION openwop_interrupt UPDATE TO '0.4.0'" to load this file. \quit

DROP TRIGGER events_escalate_low_confidence ON openwop.events;
DROP FUNCTION openwop.escalate_low_confidence();

COMMENT ON FUNCTION openwop.record_agent_decision(text, text, text, float8, jsonb) IS
  'Appends agent.decided {agentId, decision, confidence} and, when confidence is below the run''s threshold (configurable.run.escalationThreshold, else openwop.escalation_threshold), suspends the node on a low-confidence interrupt in the same call.';
