/*-------------------------------------------------------------------------
 *
 * domain/domain.h
 *	  The interrupt domain: runs, conversations, approvals, idempotency,
 *	  outcomes, deadlines, forks and suspending a node.
 *
 *-------------------------------------------------------------------------
 */
#ifndef OW_DOMAIN_H
#define OW_DOMAIN_H

#include "store/store.h"
#include "auth/auth.h"

/* ----------
 * runs.c: the run lifecycle (and its API: create_run, complete_run,
 * fail_run, cancel_run).
 * ----------
 */
typedef enum OwTerminal
{
	OW_COMPLETE,
	OW_FAIL,
	OW_CANCEL
} OwTerminal;

/* ----------
 * nodes.c: node executions (and their API: start_node, complete_node,
 * fail_node).
 * ----------
 */
/* The latest execution of a node in a run. */
typedef struct OwExec
{
	bool		found;
	int32		visit;
	char	   *status;
	int32		attempt;
	TimestampTz started_at;
} OwExec;

extern void ow_latest_exec(OwRun *run, const char *node_id, OwExec *ex);
extern bool ow_exec_is_open(const OwExec *ex);
extern pg_noreturn void ow_node_not_found(OwRun *run, const char *node_id, const char *why);
extern pg_noreturn void ow_node_not_open(OwRun *run, const char *node_id, const OwExec *ex);
extern void ow_lock_open_execution(OwRun *run, const char *tenant, const char *run_input,
								   const char *node_id, OwExec *ex);

/* ----------
 * conversations.c: the conversation kinds over openwop.conversations
 * (0.8.0 on): tenant-unique ids, monotonic turns, nothing after close.
 * ----------
 */
/* A step of a conversation, as ow_conversation_raise checked and recorded it. */
typedef struct OwConversation
{
	char	   *conversation_id;
	bool		start;			/* conversation.start */
	bool		close;			/* conversation.close */
	char	   *reason;			/* a close's data.reason, or NULL */
	int32		turn_index;		/* an exchange's turn; -1 otherwise */
	bool		derived;		/* the host derived it (the request had none) */
	int64		last_turn_index;	/* the latest turn before this step; -1: none */
	int32		turn_count;		/* turns completed before this step */
} OwConversation;

extern void ow_conversation_answered(OwRun *run, const char *kind, const char *interrupt_id,
									 const char *node_id, Jsonb *payload, Jsonb *value,
									 int64 resolved_seq);

/* ----------
 * policies.c: approval policies (and their API: set_approval_policy,
 * retire_approval_policy), pinned on the gates they match when raised.
 * ----------
 */
/* A group whose members must give a gate this many accepts, each a distinct human. */
typedef struct OwGateGroup
{
	const char *ref;
	int			required;
} OwGateGroup;

/* A group whose members become eligible voters of a gate at a time (a policy's escalation). */
typedef struct OwGateEscalation
{
	const char *ref;
	TimestampTz at;
} OwGateEscalation;

/* The rule of an approval gate: its request's, made stricter by the policies it pinned. */
typedef struct OwGateRule
{
	int			required;		/* accepts that grant */
	bool		majority;		/* rejects above half of required reject; else one does */
	bool		bypass;			/* an override principal releases it alone */
	bool		exclude_requester;	/* owner and requester may not vote */
	const char *owner;			/* the run's owner, "<issuer>/<subjectId>" */
	const char *requester;		/* the requester create_run named, or NULL */
	int			ngroups;
	OwGateGroup *groups;		/* each met by distinct humans */
	int			nescalations;
	OwGateEscalation *escalations;	/* groups made eligible from a time on */
	Jsonb	   *pin;			/* the policies pinned, or NULL */
	const char *digest;			/* the artifact the gate shows now (artifact_changed), or NULL */
} OwGateRule;

extern Jsonb *ow_policy_pin(OwRun *run, const char *node_id, JsonbContainer *data, int64 *timeout_ms,
						   TimestampTz *expires_at);
extern void ow_gate_rule(JsonbContainer *data, Jsonb *pin, OwGateRule *rule);
extern Jsonb *ow_policy_record(const OwGateRule *rule);

/* ----------
 * outbox.c: the notification outbox (and its API: claim_notifications,
 * ack_notifications).  Settings: openwop.notification_outbox, _retention,
 * _cap, _max_attempts.
 * ----------
 */
typedef enum OwNotice
{
	OW_NOTICE_RAISED,
	OW_NOTICE_REMINDER,
	OW_NOTICE_ESCALATION,
	OW_NOTICE_DECIDED,
	OW_NOTICE_EXPIRED
} OwNotice;

extern void ow_define_outbox_settings(void);
extern int	ow_outbox_upkeep(int max);
typedef struct OwNotices OwNotices;
extern OwNotices *ow_outcome_notices(OwRun *run, const char *interrupt_id, const char *node_id,
									 Jsonb *payload, Jsonb *pin, bool expired, const char *decision,
									 const char *action);

/* ----------
 * reminders.c: a policy's reminders and escalations, fired by the
 * database worker.
 * ----------
 */
extern int	ow_sweep_gate_steps(int max, void (*begin) (void), void (*end) (void), MemoryContext cxt,
								TimestampTz *next, char *turn);

/* ----------
 * artifacts.c: approvals bound to what was approved (artifact_changed).
 * Setting: openwop.artifact_digest.
 * ----------
 */
extern void ow_define_artifact_settings(void);
extern void ow_check_artifact_digest(const char *digest);
extern void ow_check_artifact_reason(const char *reason);
extern void ow_artifact_precondition(const char *interrupt_id, const char *run_id, const char *node_id,
									 const char *current);
extern Jsonb *ow_artifact_change(OwRun *run, const char *interrupt_id, const char *node_id,
								 const char *current, const char *digest, const char *reason,
								 const OwSubject *who, bool *changed);
extern Jsonb *ow_artifact_record(const char *tenant, const char *interrupt_id, const char *digest);

/* ----------
 * delegations.c: delegation of approval (and its API: delegate_approvals,
 * set_delegation, revoke_delegation).
 * ----------
 */
/* A delegation a voter holds now: it may vote as delegator. */
typedef struct OwDelegation
{
	char	   *delegation_id;
	char	   *delegator_ref;	/* as recorded: a subjectId or "<issuer>/<subjectId>" */
	OwSubject	delegator;
} OwDelegation;

extern List *ow_delegations_held(const char *tenant, const OwSubject *who, bool lock);

/* ----------
 * approvals.c: approval gates: eligibility, votes and their tally (and
 * the group membership API).  Setting: openwop.override_group.
 * ----------
 */
typedef struct OwVote
{
	bool		decided;
	const char *decision;		/* when decided */
	const char *action;			/* the deciding action */
	const char *reason;
	int			accepts;
	int			rejects;
	int			required;
	int			voters;
	int			ngroups;		/* the rule's groups, and the accepts */
	const OwGateGroup *groups;	/* counted toward each (distinct humans) */
	int		   *met;
} OwVote;

extern void ow_define_approval_settings(void);
extern List *ow_subject_groups(const char *tenant, const OwSubject *who, MemoryContext resultctx);
extern Jsonb *ow_approval_eligibility(OwRun *run, const char *interrupt_id, JsonbContainer *data,
									  const OwGateRule *rule, const OwSubject *who, Oid login,
									  List **known_groups, bool *is_override, const char **voter);
extern bool ow_approval_eligible(JsonbContainer *data, const OwGateRule *rule, const OwSubject *who,
								 Oid login, List *groups);
extern bool ow_approval_excluded(const OwGateRule *rule, const OwSubject *who);
extern bool ow_approval_answers_limited(JsonbContainer *data, const OwGateRule *rule);
extern bool ow_approval_answer_left(const char *tenant, const char *interrupt_id, const char *voter,
									const OwSubject *who);
extern void owj_approval_voters(OwJson *j, const char *key, OwRun *run, const char *interrupt_id,
								const OwGateRule *rule, const OwSubject *who, const char *voter,
								const char *action);
extern void ow_approval_withdraw(OwRun *run, const char *interrupt_id, const char *node_id,
								 JsonbContainer *data, const OwGateRule *rule, const OwSubject *who,
								 const char *voter, OwVote *vote);
extern void ow_approval_vote(OwRun *run, const char *interrupt_id, const OwGateRule *rule,
							 const OwSubject *who, const char *voter, const char *action,
							 Jsonb *resume_value, Jsonb *eligibility, bool is_override, OwVote *vote);

/* ----------
 * idempotency.c: Idempotency-Key records.  Setting:
 * openwop.idempotency_retention.
 * ----------
 */
extern void ow_define_idempotency_settings(void);
extern void ow_check_idempotency_key(const char *key);
extern Jsonb *ow_idempotency_claim(const char *tenant, const char *endpoint, const char *key,
								   Jsonb *request, const OwSubject *who, MemoryContext resultctx);
extern void ow_idempotency_complete(const char *tenant, const char *endpoint,
									const char *key, Jsonb *response);
extern int	ow_purge_idempotency(int max);

/* ----------
 * outcomes.c: recording an interrupt's outcome.
 * ----------
 */
typedef struct OwResolution
{
	const char *interrupt_id;
	const char *kind;
	const char *node_id;
	int32		visit;
	Jsonb	   *resume_value;	/* NULL for a timeout */
	const char *decision;		/* granted, rejected, overridden or NULL */
	const char *action;			/* approval action, or NULL */
	const char *reason;			/* e.g. timeout, quorum-reject, or NULL */
	const OwSubject *resolver;	/* who decided; NULL: the host (deadlines) */
	const OwSubject *confirmed_by;	/* the login that confirmed a credential, or NULL */
	Jsonb	   *eligibility;	/* recorded eligibility decision, or NULL */
	Jsonb	   *policy;			/* the policies the gate pinned (ow_policy_record), or NULL */
	Jsonb	   *artifact;		/* the artifact it was decided on (ow_artifact_record), or NULL */
	Jsonb	   *recorded;		/* a replay fork's inherited interrupt.resolved: its members are recorded as they are */
	OwNotices  *notices;		/* notifications written with the record (ow_outcome_notices), or NULL */
	const char *fail_code;		/* fail closed with this code, or NULL */
	const char *fail_message;
	bool		other_known;	/* other_kind/other_node were read under the lock */
	const char *other_kind;		/* the run's other pending interrupt, if any */
	const char *other_node;
	bool		saved;			/* out: the run row was written with the record */
	ItemPointerData tid;		/* the interrupt's row version read under the lock, if known */
	ItemPointerData open_tid;	/* its row in openwop.open_interrupts, if known */
	ItemPointerData exec_tid;	/* where the raise wrote its node execution's row, if known */
} OwResolution;

extern void ow_fail_disposition(OwResolution *r);
extern int64 ow_record_resolution(OwRun *run, OwResolution *r);

/* ----------
 * deadlines.c: the one expiry policy, and the fair sweep of due work.
 * ----------
 */
typedef struct OwDeadline
{
	const char *interrupt_id;
	const char *node_id;
	const char *kind;
	int32		visit;
	bool		expired;		/* a late answer expired it: only its run is left to end */
	Jsonb	   *payload;		/* its request, and the pin of its policies: for */
	Jsonb	   *policy;			/* the notifications of an approval's timeout */
} OwDeadline;

extern void ow_apply_deadline(OwRun *run, const OwDeadline *d, bool late);

extern int	ow_sweep_deadlines(int max, void (*begin) (void), void (*end) (void), MemoryContext cxt,
							   TimestampTz *next, char *turn);

/* ----------
 * forks.c: forks of a run (and its API, fork_run()): the copied prefix,
 * the state folded from it, and the recorded resolutions a replay fork
 * derives from its chain instead of deciding again.
 * ----------
 */

/* ----------
 * interrupts.c: suspending a node on an interrupt (and its API,
 * interrupt()): the re-entry key and the envelopes.
 * ----------
 */
extern Jsonb *ow_suspend(OwRun *run, const char *node_id, OwExec *ex, int32 ordinal,
						 Jsonb *request, MemoryContext resultctx);

#endif							/* OW_DOMAIN_H */
