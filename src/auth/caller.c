/*-------------------------------------------------------------------------
 *
 * caller.c
 *	  Who is calling: a Subject in a tenant, with or without the
 *	  approvals:respond scope (the call bracket that uses it is call.c).
 *
 * Identity is decided once per API call, before the call becomes the
 * extension owner, from what the caller cannot forge:
 *
 *	- a request session (session_user is a real member of the role named by
 *	  openwop.jwt_session_role, PostgREST's authenticator) speaks through the
 *	  verified claims in request.jwt.claims: the subject is (iss, sub), the
 *	  scope is the "scope" claim, the tenant the configured claim;
 *	- any other session is its login: session_user, whatever role it has
 *	  SET, so one login is one voter however many roles it holds.
 *
 * No identity at all is given inside a security-restricted operation
 * (ANALYZE and autovacuum, VACUUM FULL, REINDEX, CREATE INDEX, REFRESH
 * MATERIALIZED VIEW, and the index expressions they evaluate), where code
 * written by a table's owner runs in somebody else's session; nor inside a
 * SECURITY DEFINER function, whose code is its owner's, not the caller's.
 * request.jwt.claims itself cannot be set in either (request_settings.c).
 * Superuser status never makes claims count.
 *
 * A shard behind a router (PL/Proxy, docs/scale-out.md) hears every call
 * from the router's login.  A session whose login is a real member of the
 * role named by openwop.forwarding_role is a forwarder: when it sets
 * openwop.forwarded_caller (the identity the router decided for its own
 * caller, in the form ow_router_caller() returns), that is the caller,
 * checked member by member and held to the forwarder's own bound tenant.
 * The setting is guarded as request.jwt.claims is, and a session that is
 * not a forwarder may not set it at all (request_settings.c).
 *
 * The tenant is bound by the DBA: openwop.bound_tenant, a superuser-only
 * setting given to a login with ALTER ROLE ... SET, names the one tenant the
 * login acts in, or "*" for the few roles that serve many tenants (their
 * openwop.tenant chooses).  An unbound login acts in openwop.default_tenant
 * only.  See docs/security.md.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/base.h"
#include "store/store.h"
#include "auth/internal.h"

#include "access/htup_details.h"
#include "access/parallel.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_proc_d.h"
#include "catalog/pg_type.h"
#include "common/jsonapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "tcop/pquery.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/portal.h"
#include "utils/syscache.h"

/* Settings, defined by ow_define_caller_settings() */

/* Tenant of a plain SQL session; empty means "use the default". */
static char *ow_tenant_setting = NULL;

/* Tenant used when neither a JWT claim nor openwop.tenant names one. */
static char *ow_default_tenant = NULL;

/* Name of the request.jwt.claims member that carries the tenant. */
static char *ow_tenant_claim = NULL;

/* Logins that are members of this role speak through request.jwt.claims. */
static char *ow_jwt_session_role = NULL;

/* The tenant a login is bound to ("*": any; empty: the default tenant only). */
static char *ow_bound_tenant = NULL;

/* The role whose members hold approvals:respond in SQL sessions. */
static char *ow_approver_role = NULL;

/* Roles with the privileges of this role may mint resolve tokens (defined in tokens.c's settings). */
char	   *ow_token_issuer_role = NULL;

void
ow_no_identity_here(const char *where)
{
	OwDetails	d;

	ow_details_init(&d);
	ow_details_str(&d, "context", where);
	ow_raise(OW_FORBIDDEN, &d,
			 "Call openwop functions directly from the session that acts, not from code that ANALYZE, VACUUM, an index or a SECURITY DEFINER function runs.",
			 "openwop cannot tell who is calling inside %s", where);
}

/*
 * Is this a request session: does the login really belong to the role named
 * by openwop.jwt_session_role?  Real membership, so a superuser's session
 * is one only if a DBA made it so.
 */
static bool
request_session(void)
{
	Oid			role;

	if (ow_jwt_session_role == NULL || ow_jwt_session_role[0] == '\0')
		return false;
	role = get_role_oid(ow_jwt_session_role, true);
	return OidIsValid(role) && is_member_of_role_nosuper(GetSessionUserId(), role);
}

/*
 * The verified JWT claims of a request session: request.jwt.claims as an
 * object ({} when PostgREST set none).
 */
static Jsonb *
request_claims(void)
{
	const char *raw = GetConfigOption("request.jwt.claims", true, false);
	JsonLexContext *lex;
	Jsonb	   *claims;

	if (raw == NULL || raw[0] == '\0')
		raw = "{}";
	lex = ow_json_lexer(pstrdup(raw), strlen(raw), GetDatabaseEncoding(), false);
	if (pg_parse_json(lex, &nullSemAction) != JSON_SUCCESS ||
		!JB_ROOT_IS_OBJECT((claims = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(raw))))))
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "field", "request.jwt.claims");
		ow_raise(OW_VALIDATION_ERROR, &d, NULL,
				 "request.jwt.claims is not a JSON object");
	}
	return claims;
}

static pg_noreturn void unresolvable(const char *key, const char *value, const char *why);

/* 401 identity_unresolvable, details {key: value}. */
static void
unresolvable(const char *key, const char *value, const char *why)
{
	OwDetails	d;

	ow_details_init(&d);
	ow_details_str(&d, key, value);
	ow_raise(OW_IDENTITY_UNRESOLVABLE, &d, NULL,
			 "the caller resolves to no subject: %s", why);
}

/*
 * Does issuer name this host's own subjects, which no JWT may claim?  URNs
 * compare case-insensitively; urn:openwop: is OpenWOP's own (legacy
 * subjects).
 */
static bool
host_issuer(const char *issuer)
{
	return pg_strncasecmp(issuer, "urn:openwop-interrupt", strlen("urn:openwop-interrupt")) == 0 ||
		pg_strncasecmp(issuer, "urn:openwop:", strlen("urn:openwop:")) == 0;
}

/* The subject of a request session's claims: (iss, sub), or anonymous. */
static void
claims_subject(Jsonb *claims, const char *tenant, OwSubject *s)
{
	JsonbValue *sub = owj_get(claims, "sub");
	JsonbValue *iss = owj_get(claims, "iss");
	char	   *issuer = OW_ISSUER_JWT;

	if (sub == NULL)
	{
		ow_set_subject(s, OW_ISSUER_ANON, "anonymous", tenant, "anonymous", "anonymous");
		return;
	}
	if (sub->type != jbvString || !ow_valid_subject_id(owj_string(sub)))
		unresolvable("claim", "sub", "the sub claim must be a string of 1 to 256 characters without white space or \"/\"");
	if (iss != NULL)
	{
		if (iss->type != jbvString || !ow_valid_issuer(owj_string(iss)))
			unresolvable("claim", "iss", "the iss claim must be a string of 1 to 1024 characters without white space");
		issuer = owj_string(iss);
		if (host_issuer(issuer))
			unresolvable("claim", "iss", "issuers under urn:openwop-interrupt and urn:openwop: name this host's own subjects");
	}
	ow_set_subject(s, issuer, owj_string(sub), tenant, "oauth2", "user");
}

/* ----------
 * The tenant
 * ----------
 */

static pg_noreturn void tenant_refused(const char *asked, const char *source, const char *tenant,
									   const char *why);

static void
tenant_refused(const char *asked, const char *source, const char *tenant, const char *why)
{
	OwDetails	d;

	ow_details_init(&d);
	ow_details_str(&d, "tenant", asked);
	ow_details_str(&d, "callerTenant", tenant);
	ow_raise(OW_ID_TENANT_MISMATCH, &d,
			 "A DBA binds a login to its tenant with ALTER ROLE ... SET openwop.bound_tenant.",
			 "tenant \"%s\" named by %s is not this caller's: %s", ow_echo(asked), source, why);
}

static void
check_tenant_grammar(const char *tenant, const char *source)
{
	if (!ow_valid_tenant(tenant))
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "field", "tenant");
		ow_raise(OW_VALIDATION_ERROR, &d,
				 "A tenant is 1 to 128 characters of A-Z a-z 0-9 . _ ~ -, optionally prefixed \"anon:\".",
				 "tenant \"%s\" taken from %s is not a valid tenant id", ow_echo(tenant), source);
	}
}

/* May this login choose any tenant: bound to "*", or a superuser? */
static bool
may_choose_tenant(Oid login)
{
	return superuser_arg(login) || (ow_bound_tenant && strcmp(ow_bound_tenant, "*") == 0);
}

/*
 * The caller's tenant.  The login's binding (openwop.bound_tenant) decides:
 * a login bound to one tenant acts there only, and a claim or setting
 * naming another is refused; a login that may choose takes the tenant
 * claim of a request session, or openwop.tenant; an unbound login stays
 * in openwop.default_tenant.
 */
static char *
caller_tenant(Jsonb *claims, Oid login)
{
	const char *bound = ow_bound_tenant ? ow_bound_tenant : "";
	bool		single = bound[0] != '\0' && strcmp(bound, "*") != 0;
	char	   *asked = NULL;
	const char *source = NULL;

	if (claims != NULL)
	{
		if (ow_tenant_claim != NULL && ow_tenant_claim[0] != '\0')
		{
			JsonbValue *v = owj_get(claims, ow_tenant_claim);

			/* a tenant claim that is there but unusable never falls back */
			if (v != NULL && (v->type != jbvString || v->val.string.len == 0))
			{
				OwDetails	d;

				ow_details_init(&d);
				ow_details_str(&d, "claim", ow_tenant_claim);
				ow_raise(OW_FORBIDDEN, &d, NULL,
						 "the JWT claim \"%s\" does not name a tenant", ow_tenant_claim);
			}
			asked = owj_string(v);
			source = "the JWT tenant claim";
		}
	}
	else if (ow_tenant_setting != NULL && ow_tenant_setting[0] != '\0')
	{
		asked = ow_tenant_setting;
		source = "openwop.tenant";
	}

	if (single)
	{
		if (asked && strcmp(asked, bound) != 0)
			tenant_refused(asked, source, bound, "this login is bound to another tenant");
		return pstrdup(bound);
	}
	if (asked && !may_choose_tenant(login) && strcmp(asked, ow_default_tenant) != 0)
		tenant_refused(asked, source, ow_default_tenant,
					   "only a login bound to \"*\" chooses its tenant");
	if (asked)
	{
		check_tenant_grammar(asked, source);
		return pstrdup(asked);
	}
	check_tenant_grammar(ow_default_tenant, "openwop.default_tenant");
	return pstrdup(ow_default_tenant);
}

/* ----------
 * Forwarded callers
 * ----------
 */

#define FORWARDED "openwop.forwarded_caller"

/*
 * The most a forwarded caller may take, in bytes: its longest members (an
 * issuer of 1024 characters, a subjectId of 256, a tenant of 128) fit with
 * every character escaped as JSON at its longest.
 */
#define OW_FORWARDED_CALLER_MAX 16384

/* The members of a forwarded caller, every one required. */
static const char *const forwarded_members[] = {"issuer", "subjectId", "tenant", "lane", "kind", "scopes",
"privileges", NULL};

/* The privileges a router may forward ("privileges", optional), as OW_PRIV_* bits in that order. */
static const char *const forwarded_privileges[] = {"mintResolveTokens", "readEventLogs", NULL};

/* The lanes and kinds of the callers ow_caller decides (a login, a JWT subject, an anonymous request). */
static const char *const forwarded_lanes[] = {"session", "oauth2", "anonymous", NULL};
static const char *const forwarded_kinds[] = {"user", "anonymous", NULL};

/* The entry of list equal to s (s is one of them). */
static const char *
listed(const char *const *list, const char *s)
{
	while (strcmp(*list, s) != 0)
		list++;
	return *list;
}

static pg_noreturn void forwarded_invalid(const char *member, const char *why);

/* 400 validation_error, details.field "openwop.forwarded_caller.<member>". */
static void
forwarded_invalid(const char *member, const char *why)
{
	ow_validation_error(ow_field_name(FORWARDED, member), "%s.%s %s", FORWARDED, member, why);
}

/*
 * Refuse a forwarded tenant the forwarder's login could not act in itself:
 * a login bound to one tenant forwards that tenant only, a login bound to
 * "*" (or a superuser) any, an unbound login openwop.default_tenant only.
 */
static void
check_forwarded_tenant(const char *tenant, Oid forwarder)
{
	const char *bound = ow_bound_tenant ? ow_bound_tenant : "";

	if (bound[0] != '\0' && strcmp(bound, "*") != 0)
	{
		if (strcmp(tenant, bound) != 0)
			tenant_refused(tenant, FORWARDED, bound, "the forwarding login is bound to another tenant");
	}
	else if (!may_choose_tenant(forwarder) && strcmp(tenant, ow_default_tenant) != 0)
		tenant_refused(tenant, FORWARDED, ow_default_tenant,
					   "only a forwarding login bound to \"*\" forwards any tenant");
}

/*
 * The caller a forwarder speaks for: openwop.forwarded_caller, the closed
 * object {issuer, subjectId, tenant, lane, kind, scopes, privileges?}
 * ow_router_caller writes.  Each member is checked by the grammar of its
 * kind: a subject
 * ow_caller could have decided itself (a login: issuer
 * urn:openwop-interrupt:session, lane session; a JWT subject: lane oauth2,
 * an issuer of its own or urn:openwop-interrupt:jwt; an anonymous request),
 * scopes this host knows (approvals:respond; none for an anonymous caller),
 * the privileges the router's grants gave it (mintResolveTokens,
 * readEventLogs; none for an anonymous caller), and a tenant the
 * forwarder's login may act in.  Nothing of the
 * forwarder's own session (claims, openwop.tenant, roles) counts.
 */
static void
forwarded_caller(OwCaller *c)
{
	const char *raw = ow_forwarded_caller_setting;
	JsonLexContext *lex;
	Jsonb	   *fc;
	JsonbContainer *o;
	JsonbValue *scopes;
	JsonbValue *privileges;
	uint32		granted = 0;
	char	   *issuer;
	char	   *subject_id;
	char	   *tenant;
	const char *lane;
	const char *kind;
	int			n;
	int			i;

	if (strlen(raw) > OW_FORWARDED_CALLER_MAX)
		ow_validation_error(FORWARDED, "%s is longer than %d bytes", FORWARDED, OW_FORWARDED_CALLER_MAX);
	/* strings de-escaped as jsonb will, so \u0000 is refused here and not there */
	lex = ow_json_lexer(pstrdup(raw), strlen(raw), GetDatabaseEncoding(), true);
	if (pg_parse_json(lex, &nullSemAction) != JSON_SUCCESS ||
		!JB_ROOT_IS_OBJECT((fc = DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(raw))))))
		ow_validation_error(FORWARDED, "%s is not a JSON object", FORWARDED);
	o = &fc->root;

	ow_member_closed(o, forwarded_members, FORWARDED);
	issuer = ow_member_str(o, FORWARDED, "issuer", true, 0, 0);
	subject_id = ow_member_str(o, FORWARDED, "subjectId", true, 0, 0);
	tenant = ow_member_str(o, FORWARDED, "tenant", true, 0, 0);
	ow_member_enum(o, FORWARDED, "lane", true, forwarded_lanes);
	ow_member_enum(o, FORWARDED, "kind", true, forwarded_kinds);
	lane = listed(forwarded_lanes, ow_member_str(o, FORWARDED, "lane", true, 0, 0));
	kind = listed(forwarded_kinds, ow_member_str(o, FORWARDED, "kind", true, 0, 0));
	scopes = ow_member_str_array(o, FORWARDED, "scopes", true, 1, true, false);
	privileges = ow_member_str_array(o, FORWARDED, "privileges", false, 1, true, false);
	for (i = 0; privileges && i < (int) JsonContainerSize(privileges->val.binary.data); i++)
	{
		const char *p = owj_string(getIthJsonbValueFromContainer(privileges->val.binary.data, i));
		int			k;

		for (k = 0; forwarded_privileges[k] && strcmp(forwarded_privileges[k], p) != 0; k++)
			;
		if (forwarded_privileges[k] == NULL)
			forwarded_invalid("privileges", "names a privilege this host does not know (it knows mintResolveTokens and readEventLogs)");
		granted |= 1 << k;
	}
	n = JsonContainerSize(scopes->val.binary.data);
	for (i = 0; i < n; i++)
		if (strcmp(owj_string(getIthJsonbValueFromContainer(scopes->val.binary.data, i)), OW_SCOPE) != 0)
			forwarded_invalid("scopes", psprintf("names a scope this host does not know (it knows %s)", OW_SCOPE));

	if (!ow_valid_issuer(issuer))
		forwarded_invalid("issuer", "must be 1 to 1024 characters without white space");
	if (!ow_valid_subject_id(subject_id))
		forwarded_invalid("subjectId", "must be 1 to 256 characters without white space or \"/\"");
	check_tenant_grammar(tenant, FORWARDED);
	if (strcmp(lane, "session") == 0)
	{
		if (strcmp(issuer, OW_ISSUER_SESSION) != 0)
			forwarded_invalid("issuer", "of a login's subject (lane session) must be " OW_ISSUER_SESSION);
	}
	else if (strcmp(lane, "oauth2") == 0)
	{
		if (strcmp(issuer, OW_ISSUER_JWT) != 0 && host_issuer(issuer))
			forwarded_invalid("issuer", "of a JWT subject (lane oauth2) may not be under urn:openwop-interrupt or urn:openwop: but " OW_ISSUER_JWT);
	}
	else
	{
		if (strcmp(issuer, OW_ISSUER_ANON) != 0 || strcmp(subject_id, "anonymous") != 0)
			forwarded_invalid("lane", "anonymous is the subject anonymous of issuer " OW_ISSUER_ANON " only");
		if (n > 0)
			forwarded_invalid("scopes", "of an anonymous caller must be empty");
		if (granted != 0)
			forwarded_invalid("privileges", "of an anonymous caller must be empty");
	}
	if ((strcmp(lane, "anonymous") == 0) != (strcmp(kind, "anonymous") == 0))
		forwarded_invalid("kind", "must be anonymous for the lane anonymous, and user for the others");

	check_forwarded_tenant(tenant, GetSessionUserId());
	ow_set_subject(&c->subject, issuer, subject_id, tenant, lane, kind);
	c->login = InvalidOid;
	c->forwarded_by = GetUserNameFromId(GetSessionUserId(), false);
	c->forwarded_scope = n > 0;
	c->forwarded_privileges = granted;
}

/* ----------
 * The caller
 * ----------
 */

/*
 * Who is calling, in which tenant.  Call it at the top of an API function,
 * before ow_become_owner: inside the owner's restricted context it refuses,
 * like any security-restricted operation.
 */
void
ow_caller(OwCaller *c)
{
	bool		forwarder;
	bool		request;

	if (!ow_preloaded)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("openwop_interrupt must be loaded at server start to tell who is calling"),
				 errdetail("Loaded later, a session could have set its openwop.* settings and request.jwt.claims unchecked before the library defined them."),
				 errhint("Add openwop_interrupt to shared_preload_libraries and restart the server.")));
	if (InSecurityRestrictedOperation())
		ow_no_identity_here("a security-restricted operation");
	if (InLocalUserIdChange())
		ow_no_identity_here("a SECURITY DEFINER function");
	forwarder = ow_forwarding_session();
	if (forwarder && !ow_forwarded_caller_untampered())
		ow_no_identity_here("a call whose forwarded caller was changed by a SECURITY DEFINER function or a security-restricted operation");
	request = request_session();

	memset(c, 0, sizeof(*c));
	c->login = GetSessionUserId();
	if (ow_forwarded_caller_setting != NULL && ow_forwarded_caller_setting[0] != '\0')
	{
		/* never ignored: a session that may not forward is refused, not itself */
		if (!forwarder)
		{
			OwDetails	d;

			ow_details_init(&d);
			ow_details_str(&d, "setting", FORWARDED);
			ow_raise(OW_FORBIDDEN, &d,
					 "A DBA grants the role named by openwop.forwarding_role to the router's login; any other session calls as itself, with openwop.forwarded_caller empty.",
					 "this session's login may not speak for another caller: it is not a member of openwop.forwarding_role");
		}
		forwarded_caller(c);
	}
	else if (request)
	{
		if (!ow_claims_untampered())
			ow_no_identity_here("a request whose claims were changed by a SECURITY DEFINER function or a security-restricted operation");
		c->claims = request_claims();
		c->subject.tenant = caller_tenant(c->claims, c->login);
		claims_subject(c->claims, c->subject.tenant, &c->subject);
		c->login = InvalidOid;
	}
	else
	{
		char	   *login = GetUserNameFromId(c->login, false);
		char	   *tenant = caller_tenant(NULL, c->login);

		if (!ow_valid_subject_id(login))
			unresolvable("login", login,
						 "a login name must be 1 to 256 characters without white space or \"/\"");
		ow_set_subject(&c->subject, OW_ISSUER_SESSION, login, tenant, "session", "user");
	}
	if (strcmp(c->subject.subject_id, OW_TOKEN_PRINCIPAL) == 0)
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "subjectId", OW_TOKEN_PRINCIPAL);
		ow_raise(OW_FORBIDDEN, &d, NULL,
				 "\"%s\" is reserved for the holders of tokens that name no principal",
				 OW_TOKEN_PRINCIPAL);
	}
}

/*
 * May caller c act in every tenant?  Only a login bound to "*" and a
 * superuser login may, and not in a request session (whose caller is its
 * JWT subject).  ow_require_every_tenant refuses the others (what: the
 * act): sweep() applies every tenant's deadlines.
 */
bool
ow_acts_in_every_tenant(const OwCaller *c)
{
	/* a request session speaks for its JWT subject, a forwarder for its caller: never for every tenant */
	return c->claims == NULL && c->forwarded_by == NULL && may_choose_tenant(GetSessionUserId());
}

void
ow_require_every_tenant(const OwCaller *c, const char *what)
{
	OwDetails	d;

	if (ow_acts_in_every_tenant(c))
		return;
	ow_details_init(&d);
	ow_details_str(&d, "tenant", "*");
	ow_details_str(&d, "callerTenant", c->subject.tenant);
	ow_raise(OW_ID_TENANT_MISMATCH, &d,
			 "A DBA binds the scheduler's login with ALTER ROLE ... SET openwop.bound_tenant = '*'.",
			 "%s acts in every tenant: only a login bound to \"*\" may", what);
}

/*
 * Does the caller hold approvals:respond?  A request session only through
 * its "scope" claim (space-separated string or array), whatever role the
 * JWT maps to; a login through real membership of openwop.approver_role
 * (superuser status does not count); a forwarded caller through the scopes
 * the router decided for it.
 */
bool
ow_has_scope(const OwCaller *c)
{
	Oid			role;

	if (c->forwarded_by)
		return c->forwarded_scope;
	if (c->claims)
	{
		JsonbValue *scope = owj_get(c->claims, "scope");

		/* an anonymous request holds no scope, whatever its claims say */
		if (strcmp(c->subject.lane, "anonymous") == 0)
			return false;
		if (scope && scope->type == jbvString)
		{
			char	   *s = owj_string(scope);
			char	   *tok;
			char	   *save = NULL;

			for (tok = strtok_r(s, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
				if (strcmp(tok, OW_SCOPE) == 0)
					return true;
		}
		else if (owj_is_array(scope))
		{
			int			i;

			for (i = 0; i < (int) JsonContainerSize(scope->val.binary.data); i++)
			{
				char	   *s = owj_string(getIthJsonbValueFromContainer(scope->val.binary.data, i));

				if (s && strcmp(s, OW_SCOPE) == 0)
					return true;
			}
		}
		return false;
	}
	role = get_role_oid(ow_approver_role, true);
	return OidIsValid(role) && is_member_of_role_nosuper(c->login, role);
}

/* Refuse a caller without approvals:respond (403 forbidden). */
void
ow_check_scope(const OwCaller *c)
{
	OwDetails	d;

	if (ow_has_scope(c))
		return;
	ow_details_init(&d);
	ow_details_str(&d, "requiredScope", OW_SCOPE);
	ow_raise(OW_FORBIDDEN, &d, ow_scope_hint(c), "resolving an interrupt needs the %s scope", OW_SCOPE);
}

/* How caller c would come to hold approvals:respond (the hint of a refusal). */
const char *
ow_scope_hint(const OwCaller *c)
{
	if (c->forwarded_by)
		return psprintf("The router decides a forwarded caller's scopes: there, put %s in the JWT scope claim, or grant the caller's login the role named by openwop.approver_role.", OW_SCOPE);
	if (c->claims)
		return psprintf("Put %s in the JWT scope claim.", OW_SCOPE);
	return psprintf("Grant the role %s to the login.", ow_approver_role);
}

/*
 * Does the current role have the privileges of openwop.token_issuer_role
 * (a superuser's always has)?  Owners are asked for by the caller
 * (ow_is_admin), which needs this database's extension.
 */
bool
ow_role_issues_tokens(void)
{
	Oid			role = get_role_oid(ow_token_issuer_role, true);

	return OidIsValid(role) && has_privs_of_role(GetUserId(), role);
}

/*
 * May the current role read runs' event logs: EXECUTE on
 * openwop.events(text, bigint, integer) in this database (in a router
 * database, the router's)?
 */
bool
ow_role_reads_event_logs(void)
{
	Oid			argtypes[3] = {TEXTOID, INT8OID, INT4OID};
	Oid			nsp = get_namespace_oid("openwop", true);
	Oid			events;

	/*
	 * Found by the catalog, not by name lookup: looking a name up in schema
	 * openwop needs USAGE on it, which a web role has no need of, and its
	 * refusal would stand in for the answer (403 forbidden).
	 */
	if (!OidIsValid(nsp))
		return false;
	events = GetSysCacheOid3(PROCNAMEARGSNSP, Anum_pg_proc_oid, CStringGetDatum("events"),
							 PointerGetDatum(buildoidvector(argtypes, 3)), ObjectIdGetDatum(nsp));
	return OidIsValid(events) && object_aclcheck(ProcedureRelationId, events, GetUserId(), ACL_EXECUTE) == ACLCHECK_OK;
}

/* ----------
 * The router's caller
 * ----------
 */

/*
 * caller as a forwarded caller, {issuer, subjectId, tenant, lane, kind,
 * scopes}: what openwop.forwarded_caller takes.
 */
static Jsonb *
forwarded_form(const OwCaller *c)
{
	OwJson		j;

	owj_begin(&j);
	owj_subject_members(&j, &c->subject);
	owj_str_array(&j, "scopes", ow_has_scope(c) ? list_make1(OW_SCOPE) : NIL);
	if (c->subject.kind == NULL || strcmp(c->subject.kind, "anonymous") != 0)
	{
		List	   *granted = NIL;

		if (ow_role_issues_tokens())
			granted = lappend(granted, (char *) forwarded_privileges[0]);
		if (ow_role_reads_event_logs())
			granted = lappend(granted, (char *) forwarded_privileges[1]);
		owj_str_array(&j, "privileges", granted);
	}
	return owj_end(&j);
}

PG_FUNCTION_INFO_V1(ow_router_caller);
/*
 * ow_router_caller() → jsonb: the calling session's caller, decided as
 * every API function decides it (and refused where they refuse), in the
 * form a shard's openwop.forwarded_caller takes.  A router database
 * (openwop_router) binds it as openwop_router.caller() without the
 * openwop_interrupt schema: it reads no table.
 */
Datum
ow_router_caller(PG_FUNCTION_ARGS)
{
	OwCaller	c;

	ow_caller(&c);
	PG_RETURN_JSONB_P(forwarded_form(&c));
}

/* ----------
 * Settings
 * ----------
 */

/* Was the library loaded at server start (shared_preload_libraries)? */
bool		ow_preloaded = false;

/* openwop.bound_tenant: empty, "*", or a tenant id */
static bool
check_bound_tenant(char **newval, void **extra, GucSource source)
{
	if (**newval == '\0' || strcmp(*newval, "*") == 0 || ow_valid_tenant(*newval))
		return true;
	GUC_check_errdetail("A bound tenant is a tenant id, \"*\" (any tenant), or empty (the default tenant only).");
	return false;
}

void
ow_define_caller_settings(void)
{
	DefineCustomStringVariable("openwop.tenant",
							   "Tenant of this session's OpenWOP calls, for logins bound to \"*\".",
							   "A login bound to one tenant acts in it whatever this says; an unbound login acts in openwop.default_tenant. Empty means openwop.default_tenant.",
							   &ow_tenant_setting,
							   "",
							   PGC_USERSET,
							   0,
							   NULL, NULL, NULL);
	DefineCustomStringVariable("openwop.default_tenant",
							   "Tenant used when no claim and no openwop.tenant setting names one.",
							   NULL,
							   &ow_default_tenant,
							   "default",
							   PGC_SUSET,
							   0,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("openwop.tenant_claim",
							   "Member of request.jwt.claims that names the caller's tenant.",
							   "PostgREST puts the verified JWT claims in request.jwt.claims; empty disables the claim.",
							   &ow_tenant_claim,
							   "tenant",
							   PGC_SUSET,
							   0,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("openwop.jwt_session_role",
							   "Role whose member logins speak through request.jwt.claims.",
							   "Set it to PostgREST's authenticator role. Only sessions whose login is a real member of it (superuser status does not count) take identity, tenant and scope from the claims; everyone else is their login. Empty: no session does.",
							   &ow_jwt_session_role,
							   "",
							   PGC_SUSET,
							   0,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("openwop.bound_tenant",
							   "Tenant this login is bound to: one tenant id, or \"*\" for a login that serves many.",
							   "A DBA sets it per login with ALTER ROLE ... SET; the login cannot change it. Empty: the login acts in openwop.default_tenant only.",
							   &ow_bound_tenant,
							   "",
							   PGC_SUSET,
							   GUC_NO_RESET_ALL,
							   check_bound_tenant, NULL, NULL);

	DefineCustomStringVariable("openwop.approver_role",
							   "Role whose members hold the approvals:respond scope in SQL sessions.",
							   NULL,
							   &ow_approver_role,
							   "openwop_approver",
							   PGC_SUSET,
							   0,
							   NULL, NULL, NULL);
}
