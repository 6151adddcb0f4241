/*-------------------------------------------------------------------------
 *
 * openwop.h
 *	  What the C files of openwop_interrupt share, one section per layer,
 *	  the lowest first.  A file calls only files of the sections before its
 *	  own, and files listed before it in its own section: nothing calls up
 *	  (docs/architecture.md draws it).
 *
 *	  1. helpers     shmem, stats, errors, json, limits, token_format (token_format.h),
 *	                 ids, jsonschema, members, kinds
 *	  2. plumbing    schema, spi, rowstore, caller, worker, wakeup, notify
 *	  3. store       eventlog, open_interrupts
 *	  4. domain      runs, conversations, approvals, idempotency,
 *	                 outcomes, deadlines, forks, interrupts
 *	  5. entry points readers, flowdrop, inbox, resolve, keyring, tokens,
 *	                 lowconf, timeout_worker, dbworker, launcher, ddl,
 *	                 monitor, postgrest
 *	  6. module      _PG_init
 *
 *	  Each file that owns settings defines them in ow_define_*_settings(),
 *	  which _PG_init calls; a setting another file reads is declared in its
 *	  owner's section below.
 *
 *-------------------------------------------------------------------------
 */
#ifndef OPENWOP_H
#define OPENWOP_H

#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"
#include "utils/guc.h"

/* ==========
 * 1. Helpers: pure functions of their arguments, and the shared counters; no
 * table is read.
 * ==========
 */

/* ----------
 * shmem.c: the extension's LWLocks, one named tranche
 * ----------
 */
#define OW_LOCK_REGISTRY 0		/* worker.c: slots, requests, pauses */
#define OW_LOCK_STATS 1			/* stats.c: taking and resetting entries */
#define OW_LOCK_RING(slot) (2 + (slot)) /* notify.c: a database slot's ring */

extern void ow_lwlocks_request(int rings);
extern void ow_lwlocks_attach(void);
extern struct LWLock *ow_lwlock(int which);

/* ----------
 * errors.c: the error contract.  Every refusal is one ereport: SQLSTATE
 * "PT" + the HTTP status (what PostgREST answers with), a message that
 * starts with the OpenWOP error code, and a detail that is the error's
 * "details" object as JSON ("Errors" in the OpenWOP interrupt spec).
 * ----------
 */
typedef enum OwError
{
	OW_VALIDATION_ERROR,		/* 400 */
	OW_IDEMPOTENCY_KEY_INVALID, /* 400 */
	OW_IDENTITY_UNRESOLVABLE,	/* 401 */
	OW_INTERRUPT_TOKEN_INVALID, /* 401 */
	OW_FORBIDDEN,				/* 403 */
	OW_ID_TENANT_MISMATCH,		/* 403 */
	OW_NOT_FOUND,				/* 404 */
	OW_IDEMPOTENCY_IN_FLIGHT,	/* 409 */
	OW_IDEMPOTENCY_KEY_MISMATCH,	/* 409 */
	OW_INTERRUPT_ALREADY_RESOLVED,	/* 409 */
	OW_RUN_STATE_CONFLICT,		/* 409 */
	OW_RUN_TERMINAL,			/* 409 */
	OW_INTERRUPT_EXPIRED,		/* 410 */
	OW_CAPABILITY_REQUIRED,		/* 422 */
	OW_FORK_POINT_INVALID		/* 422 */
} OwError;

/* ----------
 * stats.c: cumulative counters per database in shared memory
 * (openwop.stats): decisions counted at commit, refusals when raised.
 * ----------
 */
typedef enum OwStat
{
	OW_STAT_RESOLVED,			/* an answer resolved an interrupt */
	OW_STAT_VOTED,				/* an answer was recorded without deciding */
	OW_STAT_EXPIRED,			/* a deadline was applied */
	OW_STAT_REFUSED				/* + the OwError: a refusal was raised */
} OwStat;

#define OW_STATS (OW_STAT_REFUSED + OW_FORK_POINT_INVALID + 1)

extern Size ow_stats_shmem_size(void);
extern void ow_stats_shmem_init(void);
extern void ow_count_decision(OwStat stat);
extern void ow_count_refusal(int error);
extern int	ow_stats_snapshot(int max, Oid *oids, TimestampTz *since, uint64 *counts);
extern int	ow_stats_capacity(void);
extern void ow_stats_reset(bool all);
extern int	ow_stats_databases(Oid *oids);
extern void ow_stats_forget(Oid dboid);

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

/* The most of a caller's input that a refusal quotes, in bytes. */
#define OW_ECHO_MAX 512

extern const char *ow_echo(const char *s);
extern void ow_details_init(OwDetails *d);
extern void ow_details_str(OwDetails *d, const char *key, const char *value);
extern void ow_details_int(OwDetails *d, const char *key, int64 value);
extern const char *ow_error_code(int error);
extern void ow_raise(OwError error, OwDetails *details, const char *hint, const char *fmt,...)
			pg_attribute_printf(4, 5) pg_attribute_noreturn();
extern void ow_validation_error(const char *field, const char *fmt,...)
			pg_attribute_printf(2, 3) pg_attribute_noreturn();
extern void ow_validation_errors(const char *field, const char *errors, const char *hint,
								 const char *fmt,...) pg_attribute_printf(4, 5) pg_attribute_noreturn();
extern void ow_run_not_found(const char *run_id) pg_attribute_noreturn();
extern void ow_interrupt_not_found(const char *interrupt_id) pg_attribute_noreturn();
extern void ow_run_terminal(const char *run_id, const char *status) pg_attribute_noreturn();

/* What a refusal raised by ow_raise says, read back from its ErrorData. */
typedef struct OwRefusal
{
	const char *code;			/* the OpenWOP error code */
	int			status;			/* its HTTP status */
	const char *message;		/* the message after "<code>: " */
	const char *details;		/* the details object, as JSON text */
} OwRefusal;

extern bool ow_refusal_of(const ErrorData *edata, OwRefusal *r);

/* ----------
 * json.c: building jsonb (a push-style builder over pushJsonbValue, so
 * payloads are made as jsonb directly, with no text round trip) and
 * reading it.
 * ----------
 */
typedef struct OwJson
{
	JsonbParseState *state;
	JsonbValue *result;
} OwJson;

extern void owj_begin(OwJson *j);
extern Jsonb *owj_end(OwJson *j);
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
extern void owj_root(Jsonb *jb, JsonbValue *out);
extern bool owj_is_object(JsonbValue *v);
extern bool owj_is_array(JsonbValue *v);
extern const char *owj_type_name(JsonbValue *v);
extern char *owj_iso8601(TimestampTz ts);
extern bool owj_pointer_token(const char *s, int len, StringInfo out);

/* ----------
 * limits.c: bounded work.  Settings: openwop.max_payload_size,
 * openwop.max_answer_size, openwop.max_votes_per_voter.
 * ----------
 */
extern int	ow_max_payload_size;
extern int	ow_max_votes_per_voter;
extern void ow_define_limit_settings(void);
extern void ow_check_arg_size(FunctionCallInfo fcinfo, int n, const char *field, bool answer);
extern void ow_check_json_arg(FunctionCallInfo fcinfo, int n, const char *field, bool answer);

/*
 * The most the outputs carried by one interrupt envelope may total: 128
 * payloads, and never near jsonb's 256 MB.
 */
#define OW_ENVELOPE_MAX ((Size) Min(128 * 1024 * 1024, 128 * (int64) ow_max_payload_size))

/* ----------
 * token_format.c: see token_format.h (the token grammar, base64url and
 * the MAC, free of backend state for the fuzz harness).
 *
 * ids.c: the id grammars, and fresh opaque ids.
 * ----------
 */
extern bool ow_valid_tenant(const char *tenant);
extern bool ow_valid_opaque(const char *s);
extern bool ow_valid_author_id(const char *s);
extern bool ow_valid_type_id(const char *s);
extern bool ow_valid_key_id(const char *s);
extern bool ow_valid_idempotency_key(const char *key);
extern bool ow_valid_subject_id(const char *s);
extern bool ow_valid_subject_ref(const char *s);
extern bool ow_valid_issuer(const char *s);
extern char *ow_normalize_run_id(const char *input, const char *caller_tenant);
extern char *ow_normalize_id(const char *input, const char *caller_tenant, const char *field,
							 const char *what);
extern char *ow_base64url(const char *data, int len);
extern char *ow_mint_opaque(int nbytes);

/* ----------
 * jsonschema.c: the JSON Schema subset of resume and outcome schemas.
 * ----------
 */
extern char *ow_schema_check(Jsonb *schema);
extern bool ow_schema_validate(Jsonb *schema, Jsonb *value, char **errors);

/* ----------
 * members.c: typed, field-checked readers of a caller's JSON object
 * members; a refusal names the field "<prefix>.<key>".
 * ----------
 */
extern char *ow_field_name(const char *prefix, const char *key);
extern void ow_member_closed(JsonbContainer *obj, const char *const *allowed, const char *prefix);
extern char *ow_member_str(JsonbContainer *obj, const char *prefix, const char *key, bool required,
						   int minlen, int maxlen);
extern void ow_member_enum(JsonbContainer *obj, const char *prefix, const char *key, bool required,
						   const char *const *values);
extern JsonbValue *ow_member_str_array(JsonbContainer *obj, const char *prefix, const char *key,
									   bool required, int item_min, bool unique, bool nonempty);
extern JsonbValue *ow_member_object(JsonbContainer *obj, const char *prefix, const char *key,
									bool required);
extern int64 ow_member_int(JsonbContainer *obj, const char *prefix, const char *key, int64 min);
extern void ow_member_unit_number(JsonbContainer *obj, const char *prefix, const char *key);
extern void ow_member_bool(JsonbContainer *obj, const char *prefix, const char *key);
extern void ow_member_schema(JsonbContainer *obj, const char *prefix, const char *key);

/* ----------
 * kinds.c: the nine interrupt kinds, their requests and waiting statuses.
 * ----------
 */
extern Jsonb *ow_check_request(Jsonb *request, const char *key, char **kind_out, int64 *timeout_ms);
extern const char *ow_waiting_status(const char *kind);
extern bool ow_credential_interrupts;
extern void ow_define_kind_settings(void);

/* ==========
 * 2. Plumbing: statements, who is calling, the workers, notifications.
 * ==========
 */

/* ----------
 * schema.c: the library serves the schema of its own version only; any
 * other is refused (55000, the hint naming ALTER EXTENSION ... UPDATE).
 * ----------
 */
extern bool ow_schema_is_current(char **version);
extern void ow_require_current_schema(void);

/* ----------
 * spi.c: the one way to run a statement.  An OwQuery is declared static
 * next to its use ({sql, nargs, {types}, expected SPI result}), prepared
 * on first use and kept for the backend.
 * ----------
 */
#define OW_QUERY_MAX_ARGS 16

typedef struct OwQuery
{
	const char *sql;
	int			nargs;
	Oid			types[OW_QUERY_MAX_ARGS];
	int			expect;			/* SPI_OK_SELECT, SPI_OK_INSERT, ...; 0: any success */
	bool		secret;			/* carries a secret: always a generic plan, so the
								 * value is never folded into a plan a debug
								 * setting prints */
	SPIPlanPtr	plan;			/* prepared on first use */
} OwQuery;

extern uint64 ow_exec(OwQuery *q, Datum *args, const char *nulls, bool read_only, long count);
extern char *ow_col_text(uint64 row, int col);
extern Datum ow_col_datum(uint64 row, int col, bool *isnull);
extern int64 ow_col_int64(uint64 row, int col);
extern bool ow_col_bool(uint64 row, int col);
extern Jsonb *ow_col_jsonb(uint64 row, int col);
extern ErrorData *ow_try_subtransaction(void (*fn) (void *), void *arg);

/*
 * The one check of how a trigger function of the extension was fired: as
 * a trigger, at the timing, level and events given (TRIGGER_EVENT_* bits
 * as in commands/trigger.h), on table openwop.<table>.  A trigger function
 * is reachable by any role with EXECUTE on it and a table of its own to
 * attach it to; anything else is refused (39P01).
 */
#define OW_TRIGGER_ROW			0x01
#define OW_TRIGGER_STATEMENT	0x02
#define OW_TRIGGER_BEFORE		0x04
#define OW_TRIGGER_AFTER		0x08
#define OW_TRIGGER_INSERT		0x10
#define OW_TRIGGER_UPDATE		0x20
#define OW_TRIGGER_DELETE		0x40
#define OW_TRIGGER_TRUNCATE		0x80
extern struct TriggerData *ow_trigger_data(FunctionCallInfo fcinfo, const char *function,
										   const char *table, int allowed);
extern int	ow_trigger_column(struct TriggerData *trigdata, const char *function, const char *column);

/* ----------
 * rowstore.c: direct row access for the hot paths (probes, row locks,
 * inserts, updates) without a statement, used while the tables are plain
 * (no trigger, rule or row security a DBA added); else the OwQuery runs.
 * ----------
 */
typedef enum OwTableId
{
	OW_RUNS,
	OW_EVENTS,
	OW_INTERRUPTS,
	OW_NODE_EXECUTIONS,
	OW_GROUP_MEMBERS,
	OW_OPEN_INTERRUPTS,
	OW_TABLE_COUNT
} OwTableId;

#define OW_TABLE_BIT(t) ((uint32) 1 << (t))

typedef enum OwIndexId
{
	OW_RUNS_PKEY,				/* (tenant, run_id) */
	OW_INTERRUPTS_PKEY,			/* (tenant, interrupt_id) */
	OW_OPEN_PKEY,				/* open_interrupts (tenant, interrupt_id) */
	OW_OPEN_PENDING,			/* open_interrupts (tenant, run_id, node_id) WHERE status = 'pending' */
	OW_NODE_EXECUTIONS_PKEY,	/* (tenant, run_id, node_id, visit) */
	OW_GROUP_MEMBERS_PKEY,		/* (tenant, principal, group_ref) */
	OW_EVENTS_PKEY,				/* (tenant, run_id, sequence) */
	OW_INTERRUPTS_KEY,			/* (tenant, root_run_id, key) */
	OW_INDEX_COUNT
} OwIndexId;

/* The columns the hot paths read or write: every column of a table they insert into. */
typedef enum OwColumn
{
	RUN_TENANT, RUN_RUN_ID, RUN_WORKFLOW_ID, RUN_STATUS, RUN_CURRENT_NODE_ID, RUN_OWNER,
	RUN_CONFIGURABLE, RUN_DEFINITION, RUN_INPUTS, RUN_METADATA, RUN_OUTPUTS, RUN_ERROR,
	RUN_NEXT_SEQUENCE, RUN_EVENT_PREFIX, RUN_FORK_OF, RUN_CREATED_AT, RUN_UPDATED_AT, RUN_ENDED_AT,
	EV_TENANT, EV_RUN_ID, EV_SEQUENCE, EV_TYPE, EV_NODE_ID, EV_PAYLOAD, EV_CREATED_AT,
	EV_SCHEMA_VERSION, EV_CAUSATION_ID,
	INT_TENANT, INT_INTERRUPT_ID, INT_RUN_ID, INT_ROOT_RUN_ID, INT_NODE_ID, INT_VISIT, INT_ORDINAL,
	INT_KEY, INT_KIND, INT_PAYLOAD, INT_STATUS, INT_EXPIRES_AT, INT_REQUESTED_SEQUENCE,
	INT_RESOLVED_SEQUENCE, INT_RESUME_VALUE, INT_DECISION, INT_ACTION, INT_REASON, INT_RESOLVED_BY,
	INT_CREATED_AT, INT_RESOLVED_AT,
	EXEC_TENANT, EXEC_RUN_ID, EXEC_NODE_ID, EXEC_VISIT, EXEC_TYPE_ID, EXEC_STATUS, EXEC_ATTEMPT,
	EXEC_OUTPUTS, EXEC_ERROR, EXEC_INTERRUPT_ID, EXEC_ENDED_SEQUENCE, EXEC_STARTED_AT, EXEC_ENDED_AT,
	GM_TENANT, GM_PRINCIPAL, GM_GROUP_REF,
	OPEN_TENANT, OPEN_INTERRUPT_ID, OPEN_RUN_ID, OPEN_NODE_ID, OPEN_VISIT, OPEN_KIND, OPEN_PAYLOAD,
	OPEN_STATUS, OPEN_REQUESTED_SEQUENCE, OPEN_CREATED_AT, OPEN_EXPIRES_AT, OPEN_INTERRUPT_TID,
	OPEN_EXECUTION_TID,
	OW_COLUMN_COUNT
} OwColumn;

/* One direct operation: its tables, snapshot and (for writes) executor state. */
typedef struct OwDirect
{
	Relation	rel[OW_TABLE_COUNT];
	struct ResultRelInfo *rri[OW_TABLE_COUNT];
	TupleTableSlot *slot[OW_TABLE_COUNT];	/* rows read */
	TupleTableSlot *newslot[OW_TABLE_COUNT];	/* rows written */
	TupleTableSlot *lockslot[OW_TABLE_COUNT];	/* rows locked before a write */
	struct EState *estate;
	Snapshot	snapshot;
	bool		triggers;		/* a written table has a trigger of ours */
} OwDirect;

typedef struct OwScan
{
	struct IndexScanDescData *scan;
	Relation	index;
	TupleTableSlot *slot;		/* the current row */
	bool		backward;
} OwScan;

extern bool ow_direct_begin(OwDirect *d, uint32 reads, uint32 inserts, uint32 updates);
extern bool ow_direct_begin_delete(OwDirect *d, uint32 reads, uint32 inserts, uint32 updates,
								   uint32 deletes);
extern bool ow_direct_begin_instead(OwDirect *d, uint32 reads, uint32 updates, uint32 deletes);
extern void ow_direct_end(OwDirect *d);
extern void ow_scan_begin(OwDirect *d, OwScan *s, OwIndexId idx, int nkeys, const Datum *keys);
extern void ow_scan_begin_dir(OwDirect *d, OwScan *s, OwIndexId idx, int nkeys, const Datum *keys,
							  bool backward);
extern void ow_scan_begin_below(OwDirect *d, OwScan *s, OwIndexId idx, int nkeys,
								const Datum *keys, int64 bound);
extern bool ow_scan_next(OwScan *s);
extern void ow_scan_end(OwScan *s);
extern bool ow_fetch_tid(OwDirect *d, OwTableId t, ItemPointer tid, TupleTableSlot **slot);
extern bool ow_fetch_hint(OwDirect *d, OwTableId t, ItemPointer tid, TupleTableSlot **slot);
extern bool ow_lock_row(OwDirect *d, OwTableId t, TupleTableSlot *slot, bool skip_locked);
extern Datum ow_get(TupleTableSlot *slot, OwColumn c, bool *isnull);
extern char *ow_get_text(TupleTableSlot *slot, OwColumn c);
extern bool ow_get_text_is(TupleTableSlot *slot, OwColumn c, const char *s);
extern Jsonb *ow_get_jsonb(TupleTableSlot *slot, OwColumn c);
extern TupleTableSlot *ow_new_row(OwDirect *d, OwTableId t);
extern TupleTableSlot *ow_changed_row(OwDirect *d, OwTableId t, TupleTableSlot *old);
extern void ow_set(TupleTableSlot *row, OwColumn c, Datum value, bool isnull);
extern void ow_set_text(TupleTableSlot *row, OwColumn c, const char *s);
extern void ow_insert(OwDirect *d, OwTableId t, TupleTableSlot *row);
extern bool ow_insert_new(OwDirect *d, OwTableId t, TupleTableSlot *row);
extern void ow_update(OwDirect *d, OwTableId t, TupleTableSlot *old, TupleTableSlot *row);
extern void ow_delete(OwDirect *d, OwTableId t, TupleTableSlot *old);
extern bool ow_direct_insert(OwTableId t, int n, const OwColumn *cols, const Datum *values,
							 const bool *nulls, ItemPointer tid);
extern bool ow_direct_update(OwTableId t, OwIndexId idx, const Datum *keys, int n,
							 const OwColumn *cols, const Datum *values, const bool *nulls,
							 bool *updated, ItemPointer tid);

/* ----------
 * caller.c: who is calling (a Subject in a tenant, with or without the
 * approvals:respond scope), the switch to the extension owner around
 * table access, and the call bracket of an API function.  Settings: openwop.tenant, openwop.default_tenant,
 * openwop.tenant_claim, openwop.jwt_session_role, openwop.bound_tenant,
 * openwop.approver_role, openwop.forwarding_role, openwop.forwarded_caller,
 * and request.jwt.claims and request.headers themselves.
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
	char	   *forwarded_by;	/* login of the forwarder that speaks for it, else NULL */
	bool		forwarded_scope;	/* a forwarded caller holds approvals:respond */
	uint32		forwarded_privileges;	/* OW_PRIV_* the router granted a forwarded caller */
} OwCaller;

/*
 * Two privileges that are grants on a single server, which a router decides
 * for its own caller and forwards (a forwarded caller does not inherit them
 * from the router's login): minting resolve tokens (openwop.token_issuer_role)
 * and reading event logs (EXECUTE on openwop.events()).
 */
#define OW_PRIV_MINT_RESOLVE_TOKENS 0x01
#define OW_PRIV_READ_EVENT_LOGS 0x02
extern char *ow_token_issuer_role;
extern bool ow_role_issues_tokens(void);
extern bool ow_role_reads_event_logs(void);

/* The scope an approver's caller must hold to resolve. */
#define OW_SCOPE "approvals:respond"

extern bool ow_preloaded;		/* set by _PG_init */
extern void ow_define_caller_settings(void);
extern void ow_caller(OwCaller *c);
extern void ow_require_every_tenant(const OwCaller *c, const char *what);
extern bool ow_has_scope(const OwCaller *c);
extern bool ow_request_headers_untampered(void);
extern void ow_check_scope(const OwCaller *c);
extern const char *ow_scope_hint(const OwCaller *c);
extern void ow_host_subject(OwSubject *s, const char *tenant);
extern void ow_credential_host_subject(OwSubject *s, const char *tenant);
extern void ow_token_subject(OwSubject *s, const char *tenant, const char *principal);
extern void owj_subject(OwJson *j, const char *key, const OwSubject *s);
extern void owj_legacy_subject(OwJson *j, const char *key, const char *id, const char *tenant);
extern Jsonb *ow_subject_jsonb(const OwSubject *s);
extern char *ow_subject_ref(const OwSubject *s);
extern bool ow_subject_matches(const OwSubject *s, const char *ref);

/* Statements run as the extension owner, with restricted security context. */
typedef struct OwPriv
{
	Oid			save_userid;
	int			save_sec_context;
} OwPriv;

extern void ow_become_owner(OwPriv *priv);
extern void ow_restore_user(OwPriv *priv);
extern bool ow_is_admin(void);
extern void ow_require_admin(const char *what);

/*
 * The bracket of an API function: ow_call_begin decides who is calling
 * (before anything runs as the owner), connects SPI and becomes the owner
 * (ow_call_enter: the same once call->caller is decided);
 * ow_call_end goes back to the caller's role and memory context, where
 * the result is built; ow_call_finish releases SPI.
 */
typedef struct OwCall
{
	MemoryContext callerctx;
	OwCaller	caller;
	OwPriv		priv;
} OwCall;

extern void ow_refuse_read_only(const char *function);
extern void ow_call_begin(OwCall *call);
extern void ow_call_enter(OwCall *call);
extern void ow_call_end(OwCall *call);
extern void ow_call_finish(OwCall *call);

/* ----------
 * worker.c: the registry of the databases the workers serve (shared
 * memory): a slot per database worker, pauses for DDL, the launcher's
 * requests.  Settings: openwop.databases, openwop.database (deprecated),
 * openwop.max_databases.
 * ----------
 */
typedef enum OwSlotEnd
{
	OW_END_NONE = 0,			/* not said: an error or a crash */
	OW_END_ABSENT,				/* the extension is not in its database */
	OW_END_COPY,				/* it is, in a copy not yet served (serve_database()) */
	OW_END_STOPPED				/* asked to leave */
} OwSlotEnd;

/* Why the launcher serves no worker in a database that has the extension. */
typedef enum OwUnserved
{
	OW_UNSERVED_NONE = 0,
	OW_UNSERVED_COPY,			/* a copy of another database, not yet served */
	OW_UNSERVED_NO_SLOT,		/* openwop.max_databases reached */
	OW_UNSERVED_NO_WORKER,		/* max_worker_processes reached */
	OW_UNSERVED_FAILING,		/* its worker exited: started again with back-off */
	OW_UNSERVED_NOT_CONNECTED	/* its worker did not connect in time */
} OwUnserved;

/* A request to the launcher to look at a database again. */
typedef struct OwRequest
{
	Oid			dboid;
	bool		admin;			/* the DBA's: CREATE EXTENSION or serve_database() */
} OwRequest;

typedef struct OwSlot
{
	Oid			dboid;			/* InvalidOid: free */
	uint32		generation;		/* counts the slot's claims */
	char		dbname[NAMEDATALEN];
	int			pid;			/* 0 until the worker attached */
	struct Latch *latch;
	bool		stop;			/* leave: DDL on the database, no longer to be served */
	bool		recheck;		/* check that the extension is still there */
	bool		deadline_raised;	/* a commit raised a deadline: run a timeout pass */
	bool		serving;		/* attached, the extension found: not a probe */
	OwSlotEnd	end;
	TimestampTz claimed;
	TimestampTz started;
	TimestampTz last_relay;
	TimestampTz last_timeout_pass;
	TimestampTz last_error_at;
	int64		relay_batches;
	int64		relayed;
	int64		timeout_passes;
	int64		settled;
	int64		errors;
	char		last_error[256];
} OwSlot;

extern int	ow_max_databases;
extern void ow_define_worker_settings(void);
extern const char *ow_databases_setting(void);
extern Size ow_registry_shmem_size(void);
extern void ow_registry_shmem_init(void);
extern bool ow_registry_ready(void);
/* any backend */
extern int	ow_slot_of_my_database(void);
extern void ow_slot_wake(int slot, bool deadline);
extern void ow_request_launch(Oid dboid, bool admin);
extern void ow_request_recheck(Oid dboid);
extern bool ow_pause_database(Oid dboid, long wait_ms);
extern void ow_unpause_mine(void);
/* the launcher */
extern void ow_register_launcher(void);
extern void ow_launcher_attach(void);
extern void ow_launcher_detach(void);
extern void ow_launcher_passed(void);
extern int	ow_take_requests(OwRequest *out, int n, bool *all);
extern void ow_note_unserved(Oid dboid, OwUnserved why);
extern int	ow_slot_claim(Oid dboid, const char *dbname);
extern OwSlotEnd ow_slot_release(int slot);
extern Oid	ow_slot_stop(int slot);
extern bool ow_database_paused(Oid dboid);
extern int	ow_slot_pid(int slot, TimestampTz *started, bool *serving);
extern TimestampTz ow_slot_claimed(int slot);
struct BackgroundWorkerHandle;
extern bool ow_start_database_worker(int slot, struct BackgroundWorkerHandle **handle);
/* a database worker */
extern Oid	ow_slot_database(int slot, uint32 generation);
extern bool ow_slot_attach(int slot, uint32 generation);
extern void ow_slot_serving(int slot, const char *dbname);
extern void ow_slot_ending(int slot, uint32 generation, OwSlotEnd end);
extern void ow_slot_flags(int slot, bool *stop, bool *recheck, bool *deadline);
extern void ow_slot_record(int slot, bool timeout_pass, int64 done, const char *error);
/* the status view */
extern OwUnserved ow_unserved_reason(Oid dboid, TimestampTz *since);
extern bool ow_launcher_running(void);
extern int	ow_registry_snapshot(OwSlot *out, int *index, int *launcher_pid,
								 TimestampTz *launcher_started, TimestampTz *launcher_pass);

/* ----------
 * wakeup.c: waking the database's worker when a transaction that raised a
 * deadline commits.
 * ----------
 */
extern void ow_deadline_raised(void);

/* ----------
 * notify.c: one notification per committed transaction and run, on its
 * tenant's channel, sent by the database's worker as its relay.  Setting:
 * openwop.shared_channel.
 * ----------
 */
#define OW_CHANNEL_BUF 48		/* "openwop_events_" + 32 hex digits + NUL */
extern Size ow_relay_shmem_size(void);
extern void ow_relay_shmem_init(void);
extern void ow_define_notify_settings(void);
extern bool ow_tenant_channel(const char *tenant, char *out);
extern void ow_notify_later(const char *run_id, int64 first, int64 last);
extern void ow_relay_attach(int slot);
extern int64 ow_relay_drain(void);
extern bool ow_relay_waiting(void);
extern int64 ow_relay_lag_ms(int slot);

/* ==========
 * 3. Store: eventlog.c, the run row lock and the append-only event log.
 * ==========
 */

/* A run row locked FOR UPDATE, and the events this change appends. */
typedef struct OwRun
{
	char	   *tenant;
	char	   *run_id;
	char	   *root_run_id;	/* the run itself: its keys are unique under it */
	char	   *key_root;		/* keys derive from it: a replay fork's chain root, else the run */
	char	   *fork_of;		/* the source of a fork, else NULL */
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
	ItemPointerData tid;		/* the row version locked, when read directly */
} OwRun;

extern bool ow_run_is_terminal(const char *status);
extern void ow_lock_run(OwRun *run, const char *tenant, const char *run_id_input);
extern void ow_lock_run_id(OwRun *run, const char *tenant, const char *run_id);
extern bool ow_try_lock_run_id(OwRun *run, const char *tenant, const char *run_id);
extern uint64 ow_run_exec(OwQuery *q, OwRun *run, const char *node_id, bool read_only, long count);
extern int64 ow_append(OwRun *run, const char *type, const char *node_id, Jsonb *payload);
extern int64 ow_append_caused(OwRun *run, const char *type, const char *node_id, Jsonb *payload,
							  int64 cause_seq);
extern int64 ow_append_pair(OwRun *run, const char *node_id, const char *type1, Jsonb *payload1,
							const char *type2, Jsonb *payload2);
extern void ow_save_run(OwRun *run);
extern int64 ow_append_in(OwDirect *d, OwRun *run, const char *node_id, int n,
						  const char *const *types, Jsonb *const *payloads);
extern void ow_save_run_in(OwDirect *d, OwRun *run);
extern int64 ow_duration_ms(OwRun *run);
extern Jsonb *ow_event_payload(const char *type, Jsonb *payload, const char *tenant);
extern Jsonb *ow_resolved_event(const char *tenant, const char *run_id, int64 seq);

/*
 * open_interrupts.c: openwop.open_interrupts (0.6.0 on), the interrupts
 * still open, kept in step with openwop.interrupts.
 */
extern void ow_open_interrupt(OwRun *run, const char *interrupt_id, const char *node_id,
							  int32 visit, const char *kind, Jsonb *payload, int64 requested_seq,
							  bool has_deadline, TimestampTz expires_at, ItemPointer interrupt_tid,
							  ItemPointer execution_tid);
extern void ow_close_interrupt(const char *tenant, const char *interrupt_id);
extern void ow_expire_open_interrupt(const char *tenant, const char *interrupt_id);
extern void ow_close_run_interrupts(OwRun *run);

/* ==========
 * 4. Domain: runs, conversations, approvals, idempotency, outcomes,
 * deadlines, forks, interrupts.
 * ==========
 */

/* ----------
 * runs.c: the run lifecycle (and its API: create_run ... cancel_run).
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

extern void ow_check_configurable(JsonbValue *cv);
extern void ow_latest_exec(OwRun *run, const char *node_id, OwExec *ex);
extern bool ow_exec_is_open(const OwExec *ex);
extern void ow_node_not_found(OwRun *run, const char *node_id, const char *why) pg_attribute_noreturn();
extern void ow_node_not_open(OwRun *run, const char *node_id, const OwExec *ex) pg_attribute_noreturn();
extern void ow_node_conflict(OwRun *run, const char *node_id, const char *hint,
							 const char *fmt,...) pg_attribute_printf(4, 5) pg_attribute_noreturn();
extern int64 ow_fail_execution(OwRun *run, const char *node_id, const OwExec *ex, Jsonb *error);
extern int64 ow_end_run(OwRun *run, OwTerminal how, Jsonb *value, const char *failed_node,
						const char *reason, const char *principal);

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

extern Jsonb *ow_conversation_raise(OwRun *run, const char *kind, Jsonb *payload,
									const char *interrupt_id, OwConversation *c);
extern void ow_conversation_announce(OwRun *run, const char *node_id, const OwConversation *c,
									 int64 suspended_seq);
extern void ow_conversation_answered(OwRun *run, const char *kind, const char *interrupt_id,
									 const char *node_id, Jsonb *payload, Jsonb *value,
									 int64 resolved_seq);

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
} OwVote;

extern void ow_define_approval_settings(void);
extern Datum ow_subject_refs_array(const OwSubject *who);
extern List *ow_subject_groups(const char *tenant, const OwSubject *who, MemoryContext resultctx);
extern Jsonb *ow_approval_eligibility(OwRun *run, JsonbContainer *data, const OwSubject *who,
									  Oid login, List **known_groups, bool *is_override);
extern bool ow_approval_eligible(JsonbContainer *data, const OwSubject *who, Oid login,
								 List *groups);
extern bool ow_approval_answers_limited(JsonbContainer *data);
extern bool ow_approval_answer_left(const char *tenant, const char *interrupt_id,
									const OwSubject *who);
extern void ow_approval_vote(OwRun *run, const char *interrupt_id, JsonbContainer *data,
							 const OwSubject *who, const char *action, Jsonb *resume_value,
							 Jsonb *eligibility, bool is_override, OwVote *vote);

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
	Jsonb	   *recorded;		/* a replay fork's inherited interrupt.resolved: its members are recorded as they are */
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
} OwDeadline;

extern void ow_apply_deadline(OwRun *run, const OwDeadline *d, bool late);

/* Room for a tenant id and its terminator. */
#define OW_TENANT_BUF 136

extern int	ow_sweep_deadlines(int max, void (*begin) (void), void (*end) (void), MemoryContext cxt,
							   TimestampTz *next, char *turn);

/* ----------
 * forks.c: forks of a run (and its API, fork_run()): the copied prefix,
 * the state folded from it, and the recorded resolutions a replay fork
 * derives from its chain instead of deciding again.
 * ----------
 */
extern void ow_refuse_other_kind(const char *key, const char *stored_kind, const char *asked_kind)
			pg_attribute_noreturn();
extern bool ow_derive_recorded(OwRun *run, const char *node_id, const OwExec *ex, int32 ordinal,
							   const char *key, const char *kind, char **interrupt_id, int64 *seq);

/* ----------
 * interrupts.c: suspending a node on an interrupt (and its API,
 * interrupt()): the re-entry key and the envelopes.
 * ----------
 */
extern Jsonb *ow_suspend(OwRun *run, const char *node_id, OwExec *ex, int32 ordinal,
						 Jsonb *request, MemoryContext resultctx);

/* ==========
 * 5. Entry points: the rest of the SQL API and the timeout worker.
 * ==========
 */

/* ----------
 * flowdrop.c: flowdrop_interrupt() and flowdrop_interrupts(), the FlowDrop
 * INT-22 entry of an interrupt; SQL-callable only, nothing to declare.
 * ----------
 */

/* ----------
 * resolve.c: resolve_interrupt(), and the path every resolve takes.
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
	bool		groups_read;	/* groups holds them (else eligibility looks up those it asks about) */
	ItemPointerData tid;		/* where the raise wrote its row, when read directly */
	ItemPointerData open_tid;	/* its row in openwop.open_interrupts, when read directly */
	ItemPointerData exec_tid;	/* where the raise wrote its node execution's row, when read directly */
} OwPending;

extern Jsonb *ow_resolve_locked(OwRun *run, OwPending *p, Jsonb *value, const OwSubject *who,
								Oid login, MemoryContext resultctx);
extern bool ow_find_pending_by_id(OwRun *run, const char *interrupt_id, const OwSubject *who,
								  OwPending *p);
/* resolve_interrupt(), also called by the PostgREST surface (postgrest.c) */
extern Datum ow_resolve_interrupt(PG_FUNCTION_ARGS);
extern Datum ow_resolve_respond(OwCall *call, const char *tenant, const char *endpoint,
								const char *key, Jsonb *result);

/* ----------
 * keyring.c: signing keys, and processes' memory out of reach.  Settings:
 * openwop.token_max_ttl, openwop.key_encryption_key_command,
 * openwop.key_encryption_key_file, openwop.protect_backend_memory,
 * openwop.protect_server_memory.
 * ----------
 */
/* The key that signs new tokens. */
typedef struct OwSigningKey
{
	char	   *kid;
	bytea	   *secret;			/* plain, decrypted if stored encrypted */
	int32		longest_ttl;	/* longest lifetime it has signed for, in seconds */
} OwSigningKey;

extern int	ow_token_max_ttl;
extern void ow_define_keyring_settings(void);
extern void ow_protect_memory(void);
extern void ow_install_memory_guards(void);
extern bytea *ow_verification_secret(const char *kid);
extern void ow_signing_key(OwSigningKey *key);
extern void ow_note_lifetime(const OwSigningKey *key, int32 lifetime);

/* ----------
 * tokens.c: mint, verify, inspect and resolve by token.  Settings:
 * openwop.token_ttl, openwop.token_issuer_role.
 *
 * lowconf.c: low-confidence escalation.  Setting:
 * openwop.escalation_threshold.
 *
 * timeout_worker.c: sweep() and the timeout worker.  Setting:
 * openwop.sweeper_interval.
 *
 * inbox.c: what openwop.pending_interrupts evaluates per row
 * (inbox_tenant(), inbox_voter(), may_decide()); SQL-callable only.
 * ----------
 */
extern void ow_define_token_settings(void);
/* the token surface, also called by the PostgREST surface (postgrest.c) */
extern Datum ow_inspect_interrupt(PG_FUNCTION_ARGS);
extern Datum ow_resolve_interrupt_by_token(PG_FUNCTION_ARGS);
extern void ow_define_low_confidence_settings(void);
extern void ow_define_timeout_worker_settings(void);
extern bool ow_extension_installed(void);
extern Oid	ow_served_database(bool *recorded);
extern bool ow_database_is_unserved_copy(void);
extern long ow_timeout_pass(int64 *done);

/* ----------
 * dbworker.c: the database worker (relay and deadlines of one database).
 * launcher.c: the launcher, which keeps one running in every database
 * with the extension.  ddl.c: the ProcessUtility hook that pauses a
 * database for DDL and tells the launcher of CREATE and DROP EXTENSION.
 * monitor.c: what openwop.workers and openwop.stats show.
 * ----------
 */
extern void ow_install_ddl_hook(void);

/* ----------
 * postgrest.c: the PostgREST surface, schema openwop_api: the resolve
 * operations called as PostgREST calls them, refusals answered with the
 * spec's error envelope and status.  SQL entry points only.
 * ----------
 */

#endif							/* OPENWOP_H */
