/*-------------------------------------------------------------------------
 *
 * domain/internal.h
 *	  What the files of domain/ share among themselves and no layer above
 *	  uses (domain/domain.h is the layer's face).
 *
 *-------------------------------------------------------------------------
 */
#ifndef OW_DOMAIN_INTERNAL_H
#define OW_DOMAIN_INTERNAL_H

#include "domain/domain.h"

extern void ow_check_configurable(JsonbValue *cv);
extern void ow_conversation_announce(OwRun *run, const char *node_id, const OwConversation *c,
									 int64 suspended_seq);
extern Jsonb *ow_conversation_raise(OwRun *run, const char *kind, Jsonb *payload,
									const char *interrupt_id, OwConversation *c);
extern bool ow_derive_recorded(OwRun *run, const char *node_id, const OwExec *ex, int32 ordinal,
							   const char *key, const char *kind, char **interrupt_id, int64 *seq);
extern int64 ow_end_run(OwRun *run, OwTerminal how, Jsonb *value, const char *failed_node,
						const char *reason, const char *principal);
extern Jsonb *ow_error_arg(FunctionCallInfo fcinfo, int n);
extern int64 ow_fail_execution(OwRun *run, const char *node_id, const OwExec *ex, Jsonb *error);
extern pg_noreturn void ow_node_conflict(OwRun *run, const char *node_id, const char *hint,
										 const char *fmt,...) pg_attribute_printf(4, 5);
extern Jsonb *ow_object_arg(FunctionCallInfo fcinfo, int n, const char *field);
extern void ow_refuse_if_terminal(OwRun *run);
extern pg_noreturn void ow_refuse_other_kind(const char *key, const char *stored_kind, const char *asked_kind);
extern Datum ow_reply(OwCall *call, OwJson *j);
extern const char *ow_required_run_arg(FunctionCallInfo fcinfo);
extern char *ow_text_arg(FunctionCallInfo fcinfo, int n);
extern bool ow_is_policy_admin(const OwCaller *c);
extern void ow_require_policy_admin(const OwCaller *c, const char *what);
extern char *ow_tenant_arg(FunctionCallInfo fcinfo, int n, const OwCaller *c, const char *what);
extern char *ow_admin_name(FunctionCallInfo fcinfo, int n, const char *what);
extern Jsonb *ow_admin_document_args(FunctionCallInfo fcinfo, OwCaller *caller, const char *function,
									 const char *act, const char *what, char **name);
extern int	ow_take_version(OwQuery *insert, Datum *args, const char *what, const char *name);
extern bool ow_calendar_latest(const char *tenant, const char *name, int *version, OwCalendar *cal);
extern Jsonb *ow_approval_void_votes(OwRun *run, const char *interrupt_id, const char *digest,
									 const char *reason);

/* outbox.c */
extern bool ow_outbox_on(void);
extern int	ow_notify_gate(OwRun *run, const char *interrupt_id, OwNotice kind, JsonbContainer *data,
						   const OwGateRule *rule, const char *group, Jsonb *detail);
extern int	ow_notify_voter(OwRun *run, const char *interrupt_id, const char *kind, const char *voter,
							const OwGateRule *rule, Jsonb *detail);
extern void ow_notice_detail(OwJson *j, const char *node_id, JsonbContainer *data, bool links);
extern void ow_write_notices_in(OwDirect *d, OwRun *run, const char *interrupt_id, const OwNotices *n);

/* reminders.c */
extern void ow_plan_gate_steps(OwRun *run, const char *interrupt_id, Jsonb *pin);

/*
 * due.c: work that falls due, shared out fairly between tenants.  An item
 * is copied out of SPI before it is settled.
 */
typedef struct OwDueItem
{
	char	   *tenant;
	char	   *run_id;
	char	   *id;				/* the interrupt */
	int32		n;				/* the step of a gate; 0 for a deadline */
	TimestampTz now;			/* due at this time */
	bool		busy;			/* out: another transaction holds its run */
	bool		settled;		/* out: it was settled */
	int			weight;			/* out: what it cost, in rows written (1 unless set) */
} OwDueItem;

typedef struct OwDueSource
{
	const char *what;			/* for the log: "deadline", ... */
	OwQuery    *tenants;		/* () → tenant, its earliest due time */
	OwQuery    *next;			/* ($1 tenant, $2 now, $3 after at, $4 after id, $5 after n,
								 * $6 limit) → run_id, id, n, at: due items after the cursor */
	void		(*settle) (OwDueItem *due); /* in a subtransaction; sets busy, settled */
} OwDueSource;

extern int	ow_sweep_due(const OwDueSource *src, int max, void (*begin) (void), void (*end) (void),
						 MemoryContext cxt, TimestampTz *next, char *turn);

#endif							/* OW_DOMAIN_INTERNAL_H */
