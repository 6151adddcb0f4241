/*-------------------------------------------------------------------------
 *
 * openwop.h
 *	  Declarations shared by the openwop_interrupt C files.
 *
 * The extension is split by concern: module.c (init, GUCs), errors.c (the
 * error contract), json.c (jsonb building and reading), caller.c (principal,
 * tenant, ids, privilege switching), eventlog.c (run lock, event append,
 * NOTIFY, the append-only trigger, reads) and runs.c (the lifecycle API).
 *
 *-------------------------------------------------------------------------
 */
#ifndef OPENWOP_H
#define OPENWOP_H

#include "postgres.h"

#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"
#include "utils/guc.h"

/* ----------
 * Error contract (DESIGN §4.5).  The SQLSTATE encodes the HTTP status that
 * PostgREST answers with; the message starts with the OpenWOP error code and
 * the detail is the error's "details" object as JSON.
 * ----------
 */
#define OW_SQLSTATE_400 MAKE_SQLSTATE('P','T','4','0','0')
#define OW_SQLSTATE_401 MAKE_SQLSTATE('P','T','4','0','1')
#define OW_SQLSTATE_403 MAKE_SQLSTATE('P','T','4','0','3')
#define OW_SQLSTATE_404 MAKE_SQLSTATE('P','T','4','0','4')
#define OW_SQLSTATE_409 MAKE_SQLSTATE('P','T','4','0','9')
#define OW_SQLSTATE_410 MAKE_SQLSTATE('P','T','4','1','0')
#define OW_SQLSTATE_422 MAKE_SQLSTATE('P','T','4','2','2')

/*
 * Append a printf-style message from the enclosing variadic function's
 * "fmt, ..." arguments to a StringInfo.
 */
#define OW_APPEND_VA(sinfo, fmt) \
	for (;;) \
	{ \
		va_list		args_; \
		int			needed_; \
		va_start(args_, fmt); \
		needed_ = appendStringInfoVA((sinfo), (fmt), args_); \
		va_end(args_); \
		if (needed_ == 0) \
			break; \
		enlargeStringInfo((sinfo), needed_); \
	}

/* A details object under construction: "key": value pairs, values already JSON. */
typedef struct OwDetails
{
	StringInfoData buf;
	int			count;
} OwDetails;

/* The most of a caller's input that a refusal quotes, in bytes (errors.c). */
#define OW_ECHO_MAX 512

extern const char *ow_echo(const char *s);
extern void ow_details_init(OwDetails *d);
extern void ow_details_str(OwDetails *d, const char *key, const char *value);
extern void ow_details_int(OwDetails *d, const char *key, int64 value);
extern void ow_details_raw(OwDetails *d, const char *key, const char *json);

extern void ow_raise(int sqlstate, const char *code, OwDetails *details,
					 const char *hint, const char *fmt,...)
			pg_attribute_printf(5, 6) pg_attribute_noreturn();

extern ErrorData *ow_try_subtransaction(void (*fn) (void *), void *arg);

/* Bounded work: the size and count limits (settings of module.c). */
extern int	ow_max_payload_size;
extern int	ow_max_answer_size;
extern int	ow_max_votes_per_voter;
extern void ow_check_arg_size(FunctionCallInfo fcinfo, int n, const char *field, bool answer);
extern void ow_check_json_arg(FunctionCallInfo fcinfo, int n, const char *field, bool answer);

/*
 * The most the outputs carried by one interrupt envelope may total
 * (interrupts.c): 128 payloads, and never near jsonb's 256 MB.
 */
#define OW_ENVELOPE_MAX ((Size) Min(128 * 1024 * 1024, 128 * (int64) ow_max_payload_size))

/* Shorthands for the common refusals. */
extern void ow_validation_error(const char *field, const char *fmt,...)
			pg_attribute_printf(2, 3) pg_attribute_noreturn();
extern void ow_validation_errors(const char *field, const char *errors, const char *hint,
								 const char *fmt,...) pg_attribute_printf(4, 5) pg_attribute_noreturn();
extern void ow_run_not_found(const char *run_id) pg_attribute_noreturn();
extern void ow_run_terminal(const char *run_id, const char *status) pg_attribute_noreturn();

/* ----------
 * jsonb building (json.c).  A small push-style builder over pushJsonbValue
 * so payloads are made as jsonb directly, with no text round trip.
 * ----------
 */
typedef struct OwJson
{
	JsonbParseState *state;
	JsonbValue *result;
} OwJson;

extern void owj_begin(OwJson *j);
extern Jsonb *owj_end(OwJson *j);
extern void owj_key(OwJson *j, const char *key);
extern void owj_begin_object(OwJson *j, const char *key);
extern void owj_end_object(OwJson *j);
extern void owj_str(OwJson *j, const char *key, const char *value);
extern void owj_int(OwJson *j, const char *key, int64 value);
extern void owj_bool(OwJson *j, const char *key, bool value);
extern void owj_null(OwJson *j, const char *key);
extern void owj_float(OwJson *j, const char *key, double value);
extern void owj_jsonb(OwJson *j, const char *key, Jsonb *value);
extern void owj_value(OwJson *j, const char *key, JsonbValue *value);
extern void owj_members(OwJson *j, Jsonb *obj);
extern void owj_members_except(OwJson *j, Jsonb *obj, const char *const *skip);
extern void owj_str_array(OwJson *j, const char *key, List *l);

/* jsonb reading helpers */
extern JsonbValue *owj_get(Jsonb *obj, const char *key);
extern JsonbValue *owj_get_container(JsonbContainer *obj, const char *key);
extern const char *owj_unknown_key(JsonbContainer *obj, const char *const *allowed);
extern char *owj_string(JsonbValue *v);
extern Jsonb *owj_to_jsonb(JsonbValue *v);
extern bool owj_is_object(JsonbValue *v);
extern bool owj_is_array(JsonbValue *v);
extern const char *owj_type_name(JsonbValue *v);
extern Jsonb *owj_remove_key(Jsonb *obj, const char *key);
extern char *owj_iso8601(TimestampTz ts);

/* ----------
 * Caller model and ids (caller.c)
 * ----------
 */

/*
 * A Subject (OpenWOP identity): who acts, as {issuer, subjectId, tenant,
 * lane, kind}.  Within a tenant, subjectId is the principal: the key of a
 * vote and what eligibility refs name.
 */
typedef struct OwSubject
{
	char	   *issuer;
	char	   *subject_id;
	char	   *tenant;
	const char *lane;
	const char *kind;
} OwSubject;

/* The issuers of the subjects this host vouches for itself. */
#define OW_ISSUER_PREFIX "urn:openwop-interrupt:"
#define OW_ISSUER_SESSION OW_ISSUER_PREFIX "session"	/* SQL logins */
#define OW_ISSUER_TOKEN OW_ISSUER_PREFIX "interrupt-token"	/* tokens minted for a principal */
#define OW_ISSUER_ANON OW_ISSUER_PREFIX "anon-surface"	/* anonymous callers, bare tokens */
#define OW_ISSUER_HOST OW_ISSUER_PREFIX "host"	/* the host's own deadlines */
#define OW_ISSUER_JWT OW_ISSUER_PREFIX "jwt"	/* JWTs that carry no iss claim */

/*
 * The voter of a token that names no principal.  Reserved: no caller,
 * group member or token principal may be called this.
 */
#define OW_TOKEN_PRINCIPAL "token-holder"

/* The caller of an API function, decided once, before it becomes the owner. */
typedef struct OwCaller
{
	OwSubject	subject;		/* who, in which tenant (subject.tenant) */
	Oid			login;			/* session_user of a SQL session, else InvalidOid */
	Jsonb	   *claims;			/* verified claims of a request session, else NULL */
} OwCaller;

extern void ow_caller(OwCaller *c);
extern bool ow_preloaded;		/* set by module.c */
extern char *ow_jwt_claims_setting;
extern bool ow_check_jwt_claims(char **newval, void **extra, GucSource source);
extern void ow_assign_jwt_claims(const char *newval, void *extra);
extern char *ow_caller_tenant(void);
extern void ow_require_every_tenant(const char *what);
extern void ow_check_scope(const OwCaller *c);
extern void ow_host_subject(OwSubject *s, const char *tenant);
extern void ow_token_subject(OwSubject *s, const char *tenant, const char *principal);
extern void owj_subject(OwJson *j, const char *key, const OwSubject *s);
extern void owj_legacy_subject(OwJson *j, const char *key, const char *id, const char *tenant);
extern Jsonb *ow_subject_jsonb(const OwSubject *s);
extern char *ow_subject_ref(const OwSubject *s);
extern bool ow_subject_matches(const OwSubject *s, const char *ref);
extern bool ow_valid_subject_id(const char *s);
extern bool ow_valid_subject_ref(const char *s);
extern char *ow_normalize_run_id(const char *input, const char *caller_tenant);
extern char *ow_normalize_id(const char *input, const char *caller_tenant, const char *field,
							 const char *what);
extern bool ow_valid_tenant(const char *tenant);
extern bool ow_valid_opaque(const char *s);
extern bool ow_valid_author_id(const char *s);
extern bool ow_valid_type_id(const char *s);
extern char *ow_mint_opaque(int nbytes);
extern char *ow_base64url(const char *data, int len);

/* Statements run as the extension owner, with restricted security context. */
typedef struct OwPriv
{
	Oid			save_userid;
	int			save_sec_context;
} OwPriv;

extern void ow_become_owner(OwPriv *priv);
extern void ow_restore_user(OwPriv *priv);
extern void ow_require_admin(const char *what);
extern bool ow_is_admin(void);

/* ----------
 * Event log (eventlog.c)
 * ----------
 */

/* A run row locked FOR UPDATE, and the events this change appends. */
typedef struct OwRun
{
	char	   *tenant;
	char	   *run_id;
	char	   *root_run_id;	/* root of the replay chain: keys are unique under it */
	char	   *workflow_id;
	char	   *status;
	char	   *current_node_id;
	char	   *event_prefix;
	TimestampTz created_at;
	int64		next_sequence;	/* next free sequence, advanced by ow_append */
	int64		first_sequence; /* first sequence appended by this change */
	int			appended;		/* events appended by this change */
	bool		has_definition; /* a workflow definition was registered */
	Jsonb	   *error;			/* set by fail_run */
	Jsonb	   *outputs;		/* set by complete_run */
} OwRun;

extern SPIPlanPtr ow_prepare(const char *sql, int nargs, Oid *argtypes);
extern SPIPlanPtr ow_prepare_secret(const char *sql, int nargs, Oid *argtypes);
extern int	ow_run_query(SPIPlanPtr *plan, const char *sql, OwRun *run, const char *node_id,
						 bool read_only, long count);
extern bool ow_run_is_terminal(const char *status);
extern void ow_lock_run(OwRun *run, const char *tenant, const char *run_id_input);
extern Jsonb *ow_event_payload(const char *type, Jsonb *payload, const char *tenant);
extern void ow_lock_run_id(OwRun *run, const char *tenant, const char *run_id);
extern bool ow_try_lock_run_id(OwRun *run, const char *tenant, const char *run_id);
extern int64 ow_append(OwRun *run, const char *type, const char *node_id, Jsonb *payload);
extern int64 ow_append_pair(OwRun *run, const char *node_id, const char *type1, Jsonb *payload1,
							const char *type2, Jsonb *payload2);
extern int64 ow_append_then_triggers(OwRun *run, const char *type, const char *node_id, Jsonb *payload);
extern void ow_save_run(OwRun *run);
extern int64 ow_duration_ms(OwRun *run);
extern const char *ow_waiting_status(const char *kind);


/* ----------
 * Run lifecycle pieces shared with the interrupt code (runs.c)
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

typedef enum OwTerminal
{
	OW_COMPLETE,
	OW_FAIL,
	OW_CANCEL
} OwTerminal;

extern void ow_latest_exec(OwRun *run, const char *node_id, OwExec *ex);
extern Jsonb *ow_suspend(OwRun *run, const char *node_id, OwExec *ex, int32 ordinal,
						 Jsonb *request, MemoryContext resultctx);
extern bool ow_exec_is_open(const OwExec *ex);
extern void ow_node_not_found(OwRun *run, const char *node_id, const char *why) pg_attribute_noreturn();
extern void ow_node_not_open(OwRun *run, const char *node_id, const OwExec *ex) pg_attribute_noreturn();
extern void ow_node_conflict(OwRun *run, const char *node_id, const char *hint,
							 const char *fmt,...) pg_attribute_printf(4, 5) pg_attribute_noreturn();
extern int64 ow_fail_execution(OwRun *run, const char *node_id, const OwExec *ex, Jsonb *error);
extern int64 ow_end_run(OwRun *run, OwTerminal how, Jsonb *value, const char *failed_node,
						const char *reason, const char *principal);

/* ----------
 * Resolving (resolve.c)
 * ----------
 */

/* A pending interrupt, as stored. */
typedef struct OwPending
{
	char	   *interrupt_id;
	char	   *node_id;
	char	   *kind;
	Jsonb	   *payload;
	int32		visit;
	bool		overdue;		/* past its deadline when read, under the run lock */
	bool		has_deadline;
	TimestampTz expires_at;		/* its deadline, when has_deadline */
	char	   *other_kind;		/* the run's other pending interrupt, if any */
	char	   *other_node;
	List	   *groups;			/* the answering subject's groups in the tenant */
} OwPending;

extern Jsonb *ow_resolve_locked(OwRun *run, OwPending *p, Jsonb *value, const OwSubject *who,
								Oid login, MemoryContext resultctx);
extern bool ow_find_pending_by_id(OwRun *run, const char *interrupt_id, const OwSubject *who,
								  OwPending *p);

/* ----------
 * Recording an interrupt's outcome (resolution.c)
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
	Jsonb	   *eligibility;	/* recorded eligibility decision, or NULL */
	const char *fail_code;		/* fail closed with this code, or NULL */
	const char *fail_message;
	bool		other_known;	/* other_kind/other_node were read under the lock */
	const char *other_kind;		/* the run's other pending interrupt, if any */
	const char *other_node;
	bool		saved;			/* out: the run row was written with the record */
} OwResolution;

extern int64 ow_record_resolution(OwRun *run, OwResolution *r);
extern void ow_fail_closed(OwRun *run, const char *node_id, const char *code,
						   const char *message);

/* ----------
 * Approval gates (approvals.c)
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
} OwVote;

extern Datum ow_subject_refs_array(const OwSubject *who);
extern Jsonb *ow_approval_eligibility(OwRun *run, JsonbContainer *data, const OwSubject *who,
									  Oid login, List **known_groups, bool *is_override);
extern void ow_approval_vote(OwRun *run, const char *interrupt_id, JsonbContainer *data,
							 const OwSubject *who, const char *action, Jsonb *resume_value,
							 Jsonb *eligibility, bool is_override, OwVote *vote);

/* ----------
 * The expiry policy (deadlines.c)
 * ----------
 */
typedef struct OwDeadline
{
	const char *interrupt_id;
	const char *node_id;
	const char *kind;
	int32		visit;
	bool		expired;		/* a late answer expired it: only its run is left to end */
} OwDeadline;

extern void ow_apply_deadline(OwRun *run, const OwDeadline *d, bool late);
/* Room for a tenant id and its terminator. */
#define OW_TENANT_BUF 136

extern int	ow_sweep_deadlines(int max, void (*begin) (void), void (*end) (void), MemoryContext cxt,
							   TimestampTz *next, char *turn);

/* ----------
 * The timeout worker and sweep() (sweeper.c)
 * ----------
 */
extern void ow_deadline_raised(void);
extern void ow_worker_main(const char *name, void (*attach) (void), long (*pass) (void),
						   long error_ms) pg_attribute_noreturn();
extern Size ow_sweeper_shmem_size(void);
extern void ow_sweeper_shmem_init(void);

/* notify.c */
extern void ow_notify_later(const char *run_id, int64 first, int64 last);
extern Size ow_relay_shmem_size(void);
extern void ow_relay_shmem_init(void);

/* ----------
 * Idempotency records (idempotency.c)
 * ----------
 */
extern void ow_check_idempotency_key(const char *key);
extern char *ow_request_digest(Jsonb *request);
extern Jsonb *ow_idempotency_claim(const char *tenant, const char *endpoint,
								   const char *key, const char *digest, const OwSubject *who);
extern void ow_idempotency_complete(const char *tenant, const char *endpoint,
									const char *key, Jsonb *response);
extern Jsonb *ow_replay_response(Jsonb *stored);
extern int	ow_purge_idempotency(int max);

/* ----------
 * JSON Schema subset (jsonschema.c)
 * ----------
 */
extern char *ow_schema_check(Jsonb *schema);
extern bool ow_schema_validate(Jsonb *schema, Jsonb *value, char **errors);

#endif							/* OPENWOP_H */
