/*-------------------------------------------------------------------------
 *
 * tokens.c
 *	  Signed interrupt tokens: mint_interrupt_token(),
 *	  verify_interrupt_token(), inspect_interrupt() and
 *	  resolve_interrupt_by_token() ("Tokens" and "Resolve surfaces" in the
 *	  OpenWOP interrupt spec); the keys are keyring.c's.
 *
 * Order of checks on the token surface: grammar, alg, kid and MAC
 * (constant time) before any interrupt is looked up -> 401
 * interrupt_token_invalid; then an unknown interrupt -> 404; resolved, or
 * its run ended -> 409 interrupt_already_resolved; past expiresAt -> 410
 * interrupt_expired; an inspect-intent token used to resolve -> 403.  A
 * token resolve then takes the same path as a run-scoped one (run lock,
 * single winner, eligibility, votes, idempotency).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/base.h"
#include "store/store.h"
#include "auth/auth.h"
#include "domain/domain.h"
#include "api/internal.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "common/jsonapi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/timestamp.h"

#include "base/token_format.h"

PG_FUNCTION_INFO_V1(ow_mint_interrupt_token);
PG_FUNCTION_INFO_V1(ow_inspect_interrupt);
PG_FUNCTION_INFO_V1(ow_verify_interrupt_token);
PG_FUNCTION_INFO_V1(ow_resolve_interrupt_by_token);

/* The role whose members may mint resolve tokens (issue credentials). */

/* Default lifetime of a token, in seconds (capped by openwop.token_max_ttl). */
static int	ow_token_ttl = 1800;


#define TOKEN_ENDPOINT "resolveInterruptByToken"

/* The claims of a verified token. */
typedef struct OwClaims
{
	char	   *interrupt_id;
	char	   *tenant;
	char	   *run_id;
	char	   *node_id;
	char	   *intent;
	char	   *principal;		/* the "p" claim, or NULL */
	TimestampTz expires;
} OwClaims;

static void
token_invalid(const char *why)
{
	OwDetails	d;

	ow_details_init(&d);
	ow_raise(OW_INTERRUPT_TOKEN_INVALID, &d, NULL, "%s", why);
}

/* ----------
 * Verifying
 * ----------
 */

/*
 * Read "YYYY-MM-DDTHH:MM:SS.mmmZ", the only expiry form this host mints,
 * into *ts.  False for any other shape or an impossible date or time.
 */
static bool
parse_expiry(const char *s, TimestampTz *ts)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:dd.dddZ";
	struct pg_tm tm;
	int			ms;
	int			i;

	if (strlen(s) != strlen(shape))
		return false;
	for (i = 0; shape[i]; i++)
	{
		if (shape[i] == 'd' ? (s[i] < '0' || s[i] > '9') : s[i] != shape[i])
			return false;
	}
#define DIGITS2(p) (((p)[0] - '0') * 10 + ((p)[1] - '0'))
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = DIGITS2(s) * 100 + DIGITS2(s + 2);
	tm.tm_mon = DIGITS2(s + 5);
	tm.tm_mday = DIGITS2(s + 8);
	tm.tm_hour = DIGITS2(s + 11);
	tm.tm_min = DIGITS2(s + 14);
	tm.tm_sec = DIGITS2(s + 17);
	ms = DIGITS2(s + 20) * 10 + (s[22] - '0');
#undef DIGITS2
	if (tm.tm_year < 1 || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 ||
		tm.tm_mday > day_tab[isleap(tm.tm_year)][tm.tm_mon - 1] ||
		tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 59)
		return false;
	if (tm2timestamp(&tm, (fsec_t) ms * 1000, NULL, ts) != 0)
		return false;
	return true;
}

/*
 * Verify a token's grammar, alg, kid and MAC, then read its claims.  Every
 * failure is 401 interrupt_token_invalid, decided before any interrupt is
 * looked up.  Runs as the extension owner (it reads the keyring).
 */
static void
verify_token(const char *token, OwClaims *c)
{
	OwTokenParts parts;
	OwTokenStatus status = ow_token_split(token, strlen(token), &parts);
	char	   *kid;
	bytea	   *secret;
	char		mac[OW_MAC_HEX_LEN + 1];
	char		given[OW_MAC_HEX_LEN + 1];
	unsigned char *json;
	int			json_len;
	JsonLexContext *lex;
	Jsonb	   *claims;
	JsonbValue *v;
	char	   *slash;

	if (status == OW_TOKEN_NOT_OW2)
		token_invalid("the token is not an ow2 token (v1 tokens are not accepted by this host)");
	if (status == OW_TOKEN_BAD_ALG)
		token_invalid("the token's algorithm is not one this host advertises (hs256)");
	if (status != OW_TOKEN_OK)
		token_invalid("the token is not well formed");

	kid = pnstrdup(parts.kid, parts.kid_len);
	secret = ow_verification_secret(kid);
	if (secret == NULL)
		token_invalid("the token's key is not held by this host");
	if (!ow_token_mac((unsigned char *) VARDATA_ANY(secret), VARSIZE_ANY_EXHDR(secret),
					  parts.kid, parts.kid_len, parts.payload, parts.payload_len, mac))
		elog(ERROR, "could not compute HMAC-SHA256");
	memcpy(given, parts.mac, OW_MAC_HEX_LEN);
	given[OW_MAC_HEX_LEN] = '\0';
	if (!ow_token_mac_equal(mac, given))
		token_invalid("the token's signature does not verify");

	/* signed by us: the claims are ours, but read them defensively all the same */
	json = palloc(parts.payload_len + 1);
	json_len = ow_b64url_decode(parts.payload, parts.payload_len, json, parts.payload_len);
	if (json_len < 0)
		token_invalid("the token's payload is not base64url");
	json[json_len] = '\0';
	lex = ow_json_lexer((char *) json, json_len, PG_UTF8, false);
	if (pg_parse_json(lex, &nullSemAction) != JSON_SUCCESS)
		token_invalid("the token's claims are not JSON");
	claims = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum((char *) json)));
	if (!JB_ROOT_IS_OBJECT(claims))
		token_invalid("the token's claims are not an object");
	c->interrupt_id = owj_string(owj_get(claims, "i"));
	c->run_id = owj_string(owj_get(claims, "r"));
	c->node_id = owj_string(owj_get(claims, "n"));
	c->intent = owj_string(owj_get(claims, "t"));
	c->principal = owj_string(owj_get(claims, "p"));
	v = owj_get(claims, "e");
	if (!c->interrupt_id || !c->run_id || !c->node_id || !c->intent || v == NULL ||
		v->type != jbvString)
		token_invalid("the token's claims are incomplete");
	if (strcmp(c->intent, "resolve") != 0 && strcmp(c->intent, "inspect") != 0)
		token_invalid("the token's intent is neither resolve nor inspect");
	if (!parse_expiry(owj_string(v), &c->expires))
		token_invalid("the token's expiry is not an ISO-8601 UTC timestamp");
	slash = strchr(c->interrupt_id, '/');
	if (slash == NULL || !ow_valid_opaque(slash + 1))
		token_invalid("the token's interrupt id is not tenant-bound");
	c->tenant = pnstrdup(c->interrupt_id, slash - c->interrupt_id);
	if (!ow_valid_tenant(c->tenant))
		token_invalid("the token's interrupt id is not tenant-bound");
}

/* Run q, keyed by ($1 tenant, $2 interrupt id), for its row: 404 when there is none. */
static void
read_interrupt(OwQuery *q, const char *tenant, const char *interrupt_id, bool read_only)
{
	Datum		args[2];

	args[0] = CStringGetTextDatum(tenant);
	args[1] = CStringGetTextDatum(interrupt_id);
	if (ow_exec(q, args, NULL, read_only, 1) == 0)
		ow_interrupt_not_found(interrupt_id);
}

static void
token_already_resolved(const char *interrupt_id, const char *why)
{
	OwDetails	d;

	ow_details_init(&d);
	ow_details_str(&d, "interruptId", interrupt_id);
	ow_raise(OW_INTERRUPT_ALREADY_RESOLVED, &d, NULL,
			 "the token's interrupt is no longer pending: %s", why);
}

static void
token_expired(const char *interrupt_id, TimestampTz expires)
{
	OwDetails	d;

	ow_details_init(&d);
	ow_details_str(&d, "interruptId", interrupt_id);
	ow_details_str(&d, "expiresAt", owj_iso8601(expires));
	ow_raise(OW_INTERRUPT_EXPIRED, &d,
			 "Ask for a new link.", "the token expired at %s", owj_iso8601(expires));
}

/*
 * The interrupt a verified token names: 404 when it does not exist (or
 * does not match the token's run and node), 409 when it is no longer
 * pending or its run has ended.  With lock_run, the run row is locked and
 * the interrupt read under the lock; otherwise it is read as of now.
 */
static void
token_interrupt(OwClaims *c, bool lock_run, OwRun *run, OwPending *p, Jsonb **payload)
{
	static OwQuery q = {"SELECT i.status, i.run_id, i.node_id, r.status, i.payload"
		"  FROM openwop.interrupts i"
		"  JOIN openwop.runs r ON r.tenant OPERATOR(pg_catalog.=) i.tenant"
		"                     AND r.run_id OPERATOR(pg_catalog.=) i.run_id"
		" WHERE i.tenant OPERATOR(pg_catalog.=) $1"
		"   AND i.interrupt_id OPERATOR(pg_catalog.=) $2",
	2, {TEXTOID, TEXTOID}, SPI_OK_SELECT};
	char	   *status;
	char	   *run_status;
	char	   *run_id;
	char	   *node_id;

	read_interrupt(&q, c->tenant, c->interrupt_id, false);
	status = ow_col_text(0, 1);
	run_id = ow_col_text(0, 2);
	node_id = ow_col_text(0, 3);
	run_status = ow_col_text(0, 4);
	if (payload)
		*payload = ow_col_jsonb(0, 5);
	if (strcmp(run_id, c->run_id) != 0 || strcmp(node_id, c->node_id) != 0)
		ow_interrupt_not_found(c->interrupt_id);
	if (!lock_run)
	{
		if (ow_run_is_terminal(run_status))
			token_already_resolved(c->interrupt_id, psprintf("its run is %s", run_status));
		if (strcmp(status, "pending") != 0)
			token_already_resolved(c->interrupt_id, psprintf("it is %s", status));
		return;
	}
	ow_lock_run_id(run, c->tenant, run_id);
	if (ow_run_is_terminal(run->status))
		token_already_resolved(c->interrupt_id, psprintf("its run is %s", run->status));
	if (!ow_find_pending_by_id(run, c->interrupt_id, p))
		token_already_resolved(c->interrupt_id, "it was already resolved");
}

/* ----------
 * The SQL functions
 * ----------
 */

/* openwop.inspect_interrupt(token) → jsonb: the InterruptPayload. */
Datum
ow_inspect_interrupt(PG_FUNCTION_ARGS)
{
	OwCall		call;
	OwClaims	c;
	Jsonb	   *payload;
	Jsonb	   *result;

	if (PG_ARGISNULL(0))
		token_invalid("no token");
	/* the token is the caller: the session's identity plays no part */
	ow_call_enter(&call);
	verify_token(text_to_cstring(PG_GETARG_TEXT_PP(0)), &c);
	token_interrupt(&c, false, NULL, NULL, &payload);
	if (GetCurrentTimestamp() > c.expires)
		token_expired(c.interrupt_id, c.expires);
	ow_call_end(&call);
	result = DatumGetJsonbPCopy(JsonbPGetDatum(payload));
	ow_call_finish(&call);
	PG_RETURN_JSONB_P(result);
}

/*
 * openwop.verify_interrupt_token(token) → jsonb: the claims of a token that
 * verifies, with whether it has expired; the interrupt is not read.  For a
 * front end that routes or renders a link before acting on it.
 */
Datum
ow_verify_interrupt_token(PG_FUNCTION_ARGS)
{
	OwCall		call;
	OwClaims	c;
	OwJson		j;
	Jsonb	   *result;

	if (PG_ARGISNULL(0))
		token_invalid("no token");
	/* the token is the caller: the session's identity plays no part */
	ow_call_enter(&call);
	verify_token(text_to_cstring(PG_GETARG_TEXT_PP(0)), &c);
	ow_call_end(&call);
	owj_begin(&j);
	owj_str(&j, "interruptId", c.interrupt_id);
	owj_str(&j, "runId", c.run_id);
	owj_str(&j, "nodeId", c.node_id);
	owj_str(&j, "expiresAt", owj_iso8601(c.expires));
	owj_str(&j, "intent", c.intent);
	if (c.principal)
		owj_str(&j, "principal", c.principal);
	owj_bool(&j, "expired", GetCurrentTimestamp() > c.expires);
	result = owj_end(&j);
	ow_call_finish(&call);
	PG_RETURN_JSONB_P(result);
}

/* openwop.resolve_interrupt_by_token(token, resume_value, idempotency_key) → jsonb */
Datum
ow_resolve_interrupt_by_token(PG_FUNCTION_ARGS)
{
	char	   *token;
	Jsonb	   *value;
	char	   *idem_key;
	OwCall		call;
	OwClaims	c;
	OwRun		run;
	OwPending	p;
	OwSubject	who;
	Jsonb	   *result;
	OwJson		j;

	ow_refuse_read_only("resolve_interrupt_by_token()");
	if (PG_ARGISNULL(0))
		token_invalid("no token");
	token = text_to_cstring(PG_GETARG_TEXT_PP(0));

	/*
	 * The token is the credential, and the caller: it is checked before
	 * anything else, and the session's identity plays no part.
	 */
	ow_call_enter(&call);
	verify_token(token, &c);

	if (PG_ARGISNULL(1))
		ow_validation_error("resumeValue", "resume_value is required");
	ow_check_json_arg(fcinfo, 1, "resumeValue", true);
	value = PG_GETARG_JSONB_P(1);
	idem_key = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));
	if (idem_key)
		ow_check_idempotency_key(idem_key);

	/* the token is the caller: its principal, in the tenant of its interrupt */
	ow_token_subject(&who, c.tenant, c.principal);
	if (idem_key)
	{
		owj_begin(&j);
		owj_str(&j, "token", token);
		owj_jsonb(&j, "resumeValue", value);
		result = ow_idempotency_claim(c.tenant, TOKEN_ENDPOINT, idem_key, owj_end(&j), &who,
									  call.callerctx);
		if (result)
			return ow_resolve_respond(&call, NULL, NULL, NULL, result);
	}

	token_interrupt(&c, true, &run, &p, NULL);
	if (GetCurrentTimestamp() > c.expires)
		token_expired(c.interrupt_id, c.expires);
	if (strcmp(c.intent, "resolve") != 0)
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "intent", c.intent);
		ow_raise(OW_FORBIDDEN, &d, NULL,
				 "this token may inspect the interrupt but not resolve it");
	}

	result = ow_resolve_locked(&run, &p, value, &who, InvalidOid, call.callerctx);
	return ow_resolve_respond(&call, c.tenant, TOKEN_ENDPOINT, idem_key, result);
}

/*
 * A resolve token decides for its holder: minting one is issuing a
 * credential, kept to members of openwop.token_issuer_role, the extension's
 * owner and superusers.
 */
static void
require_issuer(const OwCaller *c)
{
	OwDetails	d;

	/*
	 * A forwarded caller mints only when its router made it an issuer, and
	 * the router's login must be one here too: the login's own grant speaks
	 * for no one it forwards.
	 */
	if ((c->forwarded_by == NULL || (c->forwarded_privileges & OW_PRIV_MINT_RESOLVE_TOKENS)) &&
		(ow_role_issues_tokens() || ow_is_admin()))
		return;
	ow_details_init(&d);
	ow_details_str(&d, "intent", "resolve");
	ow_raise(OW_FORBIDDEN, &d,
			 c->forwarded_by
			 ? psprintf("On the router, grant the caller's role the role named by openwop.token_issuer_role there; the router's login must hold %s here.", ow_token_issuer_role)
			 : psprintf("Grant the role %s to the service that sends approval links.", ow_token_issuer_role),
			 "minting a resolve token needs the privileges of role %s", ow_token_issuer_role);
}

/*
 * Does the gate restrict who may approve it: approvers named by its
 * request, or a policy it pinned with groups or that excludes the
 * requester (a token holder named by nobody could be the requester)?
 */
static bool
gate_restricts(JsonbContainer *data, const OwGateRule *rule)
{
	static const char *const refs[] = {"approversList", "approverGroupRefs", "approverRoleRefs", NULL};
	const char *const *r;

	if (rule->ngroups > 0 || rule->exclude_requester)
		return true;

	for (r = refs; *r; r++)
	{
		JsonbValue *v = owj_get_container(data, *r);

		if (owj_is_array(v) && JsonContainerSize(v->val.binary.data) > 0)
			return true;
	}
	return false;
}

/*
 * openwop.mint_interrupt_token(interrupt_id, intent, ttl, principal) → text
 *
 * Lifetime: ttl (default openwop.token_ttl, 30 min), at most
 * openwop.token_max_ttl, never past the interrupt's deadline.  A resolve
 * token for a gate that restricts its approvers is minted only for a
 * named, eligible principal, which it carries: a token never bypasses
 * approversList, groups or roles.
 */
Datum
ow_mint_interrupt_token(PG_FUNCTION_ARGS)
{
	static OwQuery q = {"SELECT run_id, node_id, status, kind, payload, expires_at,"
		"       COALESCE(expires_at OPERATOR(pg_catalog.<=) pg_catalog.clock_timestamp(), false),"
		"       policy"
		"  FROM openwop.interrupts"
		" WHERE tenant OPERATOR(pg_catalog.=) $1"
		"   AND interrupt_id OPERATOR(pg_catalog.=) $2",
	2, {TEXTOID, TEXTOID}, SPI_OK_SELECT};
	OwCall		call;
	char	   *tenant;
	char	   *interrupt_id;
	char	   *intent;
	char	   *principal;
	int64		ttl_ms;
	bool		isnull;
	char	   *run_id;
	char	   *node_id;
	char	   *status;
	char	   *kind;
	Jsonb	   *payload;
	bool		has_deadline;
	TimestampTz deadline;
	TimestampTz now;
	TimestampTz expires;
	OwSigningKey key;
	StringInfoData claims;
	char	   *b64;
	char		mac[OW_MAC_HEX_LEN + 1];
	char	   *token;
	text	   *result;

	ow_caller(&call.caller);
	tenant = call.caller.subject.tenant;
	if (PG_ARGISNULL(0))
		ow_validation_error("interruptId", "interrupt_id must not be null");
	interrupt_id = ow_normalize_id(text_to_cstring(PG_GETARG_TEXT_PP(0)), tenant, "interruptId", "interrupt");
	intent = PG_ARGISNULL(1) ? "resolve" : text_to_cstring(PG_GETARG_TEXT_PP(1));
	if (strcmp(intent, "resolve") != 0 && strcmp(intent, "inspect") != 0)
		ow_validation_error("intent", "intent must be resolve or inspect, not \"%s\"", ow_echo(intent));
	if (strcmp(intent, "resolve") == 0)
		require_issuer(&call.caller);
	if (PG_ARGISNULL(2))
		ttl_ms = (int64) ow_token_ttl * 1000;
	else
	{
		Interval   *ttl = PG_GETARG_INTERVAL_P(2);
		double		secs = DatumGetFloat8(DirectFunctionCall2(interval_part,
															  CStringGetTextDatum("epoch"),
															  IntervalPGetDatum(ttl)));

		if (!(secs > 0))
			ow_validation_error("ttl", "ttl must be a positive interval");
		/* rounded up: a sub-millisecond ttl still gives a token that lives */
		ttl_ms = secs > (double) ow_token_max_ttl ? (int64) ow_token_max_ttl * 1000 : (int64) ceil(secs * 1000);
	}
	ttl_ms = Min(ttl_ms, (int64) ow_token_max_ttl * 1000);
	principal = PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3));
	/* a principal is what a resolve token votes as; an inspect token has no one to name */
	if (principal && strcmp(intent, "resolve") != 0)
		ow_validation_error("principal", "only a resolve token names a principal");
	if (principal && !ow_valid_subject_id(principal))
		ow_validation_error("principal", "principal must be a subject id: 1 to 256 characters without white space or \"/\"");
	if (principal && strcmp(principal, OW_TOKEN_PRINCIPAL) == 0)
		ow_validation_error("principal", "\"%s\" is reserved for tokens that name no principal", OW_TOKEN_PRINCIPAL);

	ow_call_enter(&call);
	read_interrupt(&q, tenant, interrupt_id, true);
	run_id = ow_col_text(0, 1);
	node_id = ow_col_text(0, 2);
	status = ow_col_text(0, 3);
	kind = ow_col_text(0, 4);
	payload = ow_col_jsonb(0, 5);
	deadline = DatumGetTimestampTz(ow_col_datum(0, 6, TIMESTAMPTZOID, &isnull));
	has_deadline = !isnull;
	if (strcmp(status, "pending") != 0)
		token_already_resolved(interrupt_id, psprintf("it is %s", status));
	if (ow_col_bool(0, 7))
		token_expired(interrupt_id, deadline);

	if (strcmp(kind, "approval") == 0 && strcmp(intent, "resolve") == 0)
	{
		JsonbContainer *data = owj_get(payload, "data")->val.binary.data;
		OwGateRule	rule;

		ow_gate_rule(data, ow_col_jsonb(0, 8), &rule);
		if (gate_restricts(data, &rule))
		{
			OwRun		run = {0};
			OwSubject	holder;
			bool		is_override;
			const char *voter;

			if (principal == NULL)
				ow_validation_error("principal",
									"this gate restricts its approvers: mint the token for a named eligible principal");
			run.tenant = tenant;
			run.run_id = run_id;
			ow_token_subject(&holder, tenant, principal);
			(void) ow_approval_eligibility(&run, interrupt_id, data, &rule, &holder, InvalidOid, NULL,
										   &is_override, &voter);
		}
	}

	ow_signing_key(&key);

	now = GetCurrentTimestamp();
	/* whole milliseconds, rounded up, as the claim writes them */
	expires = TimestampTzPlusMilliseconds(now, ttl_ms);
	expires += (1000 - expires % 1000) % 1000;
	if (has_deadline && deadline < expires)
		expires = deadline;		/* never outlive the interrupt */
	ow_note_lifetime(&key, (int32) ((expires - now + USECS_PER_SEC - 1) / USECS_PER_SEC));

	/* claims in a fixed order, as the reference host writes them */
	initStringInfo(&claims);
	appendStringInfoString(&claims, "{\"i\":");
	escape_json(&claims, interrupt_id);
	appendStringInfoString(&claims, ",\"r\":");
	escape_json(&claims, run_id);
	appendStringInfoString(&claims, ",\"n\":");
	escape_json(&claims, node_id);
	appendStringInfoString(&claims, ",\"e\":");
	escape_json(&claims, owj_iso8601(expires));
	appendStringInfoString(&claims, ",\"t\":");
	escape_json(&claims, intent);
	if (principal)
	{
		appendStringInfoString(&claims, ",\"p\":");
		escape_json(&claims, principal);
	}
	appendStringInfoChar(&claims, '}');

	b64 = ow_base64url(claims.data, claims.len);
	if (!ow_token_mac((unsigned char *) VARDATA_ANY(key.secret), VARSIZE_ANY_EXHDR(key.secret),
					  key.kid, strlen(key.kid), b64, strlen(b64), mac))
		elog(ERROR, "could not sign the token");
	token = psprintf("ow2.hs256.%s.%s.%s", key.kid, b64, mac);
	/* ids, node ids and the principal are bounded well below this */
	if (strlen(token) > OW_TOKEN_MAX_LEN)
		elog(ERROR, "a minted token of %zu characters exceeds %d", strlen(token), OW_TOKEN_MAX_LEN);

	ow_call_end(&call);
	result = cstring_to_text(token);
	ow_call_finish(&call);
	PG_RETURN_TEXT_P(result);
}

/* ----------
 * Settings
 * ----------
 */

void
ow_define_token_settings(void)
{
	DefineCustomStringVariable("openwop.token_issuer_role",
							   "Role whose members may mint resolve tokens.",
							   "A resolve token decides on behalf of whoever holds it (or of the principal it names): minting one is issuing a credential. Superusers and the extension's owner may always mint.",
							   &ow_token_issuer_role,
							   "openwop_token_issuer",
							   PGC_SUSET,
							   0,
							   NULL, NULL, NULL);
	DefineCustomIntVariable("openwop.token_ttl",
							"Default lifetime of an interrupt token.",
							"Capped at openwop.token_max_ttl and at the interrupt's deadline.",
							&ow_token_ttl,
							1800, 1, INT_MAX,
							PGC_USERSET,
							GUC_UNIT_S,
							NULL, NULL, NULL);

}

