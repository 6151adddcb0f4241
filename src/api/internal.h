/*-------------------------------------------------------------------------
 *
 * api/internal.h
 *	  What the files of api/ share among themselves and no layer above
 *	  uses (api/api.h is the layer's face).
 *
 *-------------------------------------------------------------------------
 */
#ifndef OW_API_INTERNAL_H
#define OW_API_INTERNAL_H

#include "domain/domain.h"
#include "api/api.h"

/* A pending interrupt, as stored. */
typedef struct OwPending
{
	char	   *interrupt_id;
	char	   *node_id;
	char	   *kind;
	Jsonb	   *payload;
	Jsonb	   *policy;			/* an approval gate's pin (policies.c), or NULL */
	char	   *artifact_digest;	/* the artifact it shows, as the engine told it, or NULL */
	int32		visit;
	bool		overdue;		/* past its deadline when read, under the run lock */
	bool		has_deadline;
	TimestampTz expires_at;		/* its deadline, when has_deadline */
	char	   *other_kind;		/* the run's other pending interrupt, if any */
	char	   *other_node;
	List	   *groups;			/* the answering subject's groups in the tenant */
	bool		groups_read;	/* groups holds them (else eligibility looks up those it asks about) */
	ItemPointerData tid;		/* where the raise wrote its row, when read directly */
	ItemPointerData open_tid;	/* its row in openwop.open_interrupts, when read directly */
	ItemPointerData exec_tid;	/* where the raise wrote its node execution's row, when read directly */
} OwPending;

extern bool ow_find_pending_by_id(OwRun *run, const char *interrupt_id, OwPending *p);
/* the token surface, also called by the PostgREST surface (postgrest.c) */
extern Datum ow_inspect_interrupt(PG_FUNCTION_ARGS);
/* resolve_interrupt(), also called by the PostgREST surface (postgrest.c) */
extern Datum ow_resolve_interrupt(PG_FUNCTION_ARGS);
extern Datum ow_resolve_interrupt_by_token(PG_FUNCTION_ARGS);
extern Datum ow_withdraw_vote(PG_FUNCTION_ARGS);
/* resolve_interrupts() for the PostgREST surface: its answer as one jsonb (bulk.c) */
extern Datum ow_resolve_interrupts_json(PG_FUNCTION_ARGS);
extern Jsonb *ow_resolve_locked(OwRun *run, OwPending *p, Jsonb *value, const OwSubject *who,
								Oid login, MemoryContext resultctx);
extern Jsonb *ow_resolve_by_id(const OwCaller *caller, const char *interrupt_id, Jsonb *value,
							   MemoryContext resultctx);
extern Jsonb *ow_resolve_in_run(const OwCaller *caller, const char *interrupt_id, const char *run_id,
								const char *node_id, Jsonb *value, MemoryContext resultctx);
extern Datum ow_resolve_respond(OwCall *call, const char *tenant, const char *endpoint,
								const char *key, Jsonb *result);

/* envelope.c */
extern void ow_check_entry_reader(const OwCaller *c, const char *what);
extern Datum ow_flowdrop_page(PG_FUNCTION_ARGS);
extern Jsonb *ow_parse_json(const char *text);
extern Jsonb *ow_refusal_envelope(ErrorData *edata, int *status);

#endif							/* OW_API_INTERNAL_H */
