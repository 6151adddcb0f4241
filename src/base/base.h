/*-------------------------------------------------------------------------
 *
 * base/base.h
 *	  Pure functions of their arguments (and the shared counters): the
 *	  error contract, the counters of openwop.stats, jsonb building
 *	  and reading, bounded work, the id grammars, the JSON Schema subset,
 *	  member readers, the interrupt kinds and Subjects.  No table is read.
 *
 *-------------------------------------------------------------------------
 */
#ifndef OW_BASE_H
#define OW_BASE_H

#include "compat.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

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
	OW_FORK_POINT_INVALID,		/* 422 */
	OW_PRECONDITION_FAILED		/* 412: the last, as OW_STATS counts */
} OwError;

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
extern pg_noreturn void ow_raise(OwError error, OwDetails *details, const char *hint, const char *fmt,...)
			pg_attribute_printf(4, 5);
extern pg_noreturn void ow_validation_error(const char *field, const char *fmt,...)
			pg_attribute_printf(2, 3);
extern pg_noreturn void ow_validation_errors(const char *field, const char *errors, const char *hint,
											 const char *fmt,...) pg_attribute_printf(4, 5);
extern pg_noreturn void ow_run_not_found(const char *run_id);
extern pg_noreturn void ow_interrupt_not_found(const char *interrupt_id);
extern pg_noreturn void ow_run_terminal(const char *run_id, const char *status);

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
 * stats.c: cumulative counters per database in shared memory
 * (openwop.stats): decisions counted at commit, refusals when raised.
 * ----------
 */
typedef enum OwStat
{
	OW_STAT_RESOLVED,			/* an answer resolved an interrupt */
	OW_STAT_VOTED,				/* an answer was recorded without deciding */
	OW_STAT_EXPIRED,			/* a deadline was applied */
	OW_STAT_REMINDED,			/* a reminder fired */
	OW_STAT_ESCALATED,			/* an escalation fired */
	OW_STAT_NOTIFIED,			/* a notification was written to the outbox */
	OW_STAT_NOTIFICATION_DROPPED,	/* ... dropped: its tenant's outbox was full */
	OW_STAT_NOTIFICATION_DEAD,	/* ... given up after its last attempt */
	OW_STAT_REFUSED				/* + the OwError: a refusal was raised */
} OwStat;

#define OW_STATS (OW_STAT_REFUSED + OW_PRECONDITION_FAILED + 1)

extern Size ow_stats_shmem_size(void);
extern void ow_stats_shmem_init(void);
extern void ow_count_decision(OwStat stat);
extern void ow_count_decisions(OwStat stat, int n);
extern void ow_count_refusal(int error);
extern int	ow_stats_snapshot(int max, Oid *oids, TimestampTz *since, uint64 *counts);
extern int	ow_stats_capacity(void);
extern void ow_stats_reset(bool all);
extern int	ow_stats_databases(Oid *oids);
extern void ow_stats_forget(Oid dboid);

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
extern void owj_begin_array(OwJson *j, const char *key);
extern void owj_end_array(OwJson *j);
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
extern List *owj_string_list(JsonbContainer *obj, const char *key);
extern Jsonb *owj_string_array(List *l);

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
extern bool owj_read_iso8601(const char *s, TimestampTz *out);
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
 * token_format.c: see common/token_format.h (the token grammar,
 * base64url and the MAC, free of backend state for the fuzz harness).
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
#define OW_UUID_BYTES 16
extern char *ow_mint_interrupt_opaque(void);
extern bool ow_interrupt_uuid(const char *interrupt_id, char *out);
extern char *ow_uuid_opaque(const char *input);
extern char *ow_canonical_interrupt_id(const char *input, const char *caller_tenant);

/* ----------
 * jsonschema.c: the JSON Schema subset of resume and outcome schemas.
 * ----------
 */
extern char *ow_schema_check(Jsonb *schema);
extern bool ow_schema_validate(Jsonb *schema, Jsonb *value, char **errors);
extern char *ow_schema_error_field(const char *errors, const char *prefix);

/* ----------
 * worktime.c: business calendars, and working time added in one.
 * ----------
 */
#define OW_CALENDAR_MAX_SPANS 8		/* spans of working hours a day */
#define OW_CALENDAR_MAX_HOLIDAYS 1000

typedef struct OwCalendar
{
	struct pg_tz *tz;
	int			nspans[7];		/* by weekday, 0 = Sunday */
	struct
	{
		int64		start;		/* local time, microseconds since midnight */
		int64		end;
	}			week[7][OW_CALENDAR_MAX_SPANS];
	int			nholidays;
	int		   *holidays;		/* Julian days, sorted */
} OwCalendar;

extern void ow_calendar_read(Jsonb *doc, const char *prefix, OwCalendar *cal);
extern bool ow_calendar_load(Jsonb *doc, OwCalendar *cal, char **why);
extern void ow_calendar_add(const OwCalendar *cal, TimestampTz start, int n, const int64 *ms,
							TimestampTz *due);

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

/* ----------
 * kinds.c: the nine interrupt kinds, their requests and waiting statuses.
 * ----------
 */
extern void ow_check_credential_ref(JsonbContainer *obj, const char *prefix, const char *key,
									bool required);
extern Jsonb *ow_check_request(Jsonb *request, const char *key, char **kind_out, int64 *timeout_ms);
extern const char *ow_waiting_status(const char *kind);
extern bool ow_credential_interrupts;
extern void ow_define_kind_settings(void);

/* ----------
 * subjects.c: OpenWOP Subjects, their JSON forms, refs and the
 * eligibility match.
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

extern void ow_set_subject(OwSubject *s, const char *issuer, const char *subject_id,
						   const char *tenant, const char *lane, const char *kind);
extern void owj_subject_members(OwJson *j, const OwSubject *s);
extern void ow_host_subject(OwSubject *s, const char *tenant);
extern void ow_credential_host_subject(OwSubject *s, const char *tenant);
extern void ow_token_subject(OwSubject *s, const char *tenant, const char *principal);
extern void owj_subject(OwJson *j, const char *key, const OwSubject *s);
extern void owj_legacy_subject(OwJson *j, const char *key, const char *id, const char *tenant);
extern Jsonb *ow_subject_jsonb(const OwSubject *s);
extern const char *ow_issuer_authentication(const char *issuer);
extern char *ow_subject_ref(const OwSubject *s);
extern bool ow_subject_matches(const OwSubject *s, const char *ref);
extern const char *ow_ref_subject_id(const char *ref);

#endif							/* OW_BASE_H */
