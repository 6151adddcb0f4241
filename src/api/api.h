/*-------------------------------------------------------------------------
 *
 * api/api.h
 *	  The SQL API the layers below do not hold: readers.c (events(),
 *	  run_snapshot(), capabilities(), current_caller(), listen()),
 *	  flowdrop.c (the FlowDrop INT-22 entry, and its pages over HTTP),
 *	  inbox.c (what the inbox view evaluates per row), resolve.c
 *	  (resolve_interrupt() and the path every resolve takes), bulk.c
 *	  (resolve_interrupts()), lowconf.c (record_agent_decision()),
 *	  connectors.c (connector_auth_expired()), tokens.c (mint,
 *	  verify, inspect and resolve by token) and postgrest.c (the PostgREST
 *	  surface, schema openwop_api).  Most of it is reached only from SQL;
 *	  what module.c uses is below, what the files share is in internal.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef OW_API_H
#define OW_API_H

/* tokens.c.  Settings: openwop.token_ttl, openwop.token_issuer_role. */
extern void ow_define_token_settings(void);

/* bulk.c.  Setting: openwop.bulk_resolve_max. */
extern void ow_define_bulk_settings(void);

/* lowconf.c.  Setting: openwop.escalation_threshold. */
extern void ow_define_low_confidence_settings(void);

#endif							/* OW_API_H */
