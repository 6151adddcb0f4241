/*-------------------------------------------------------------------------
 *
 * caller.c
 *	  Who is calling (principal, tenant), the id grammars, and the switch to
 *	  the extension owner around table access.
 *
 * The API functions are SECURITY INVOKER, so current_user is the caller's
 * role (after any SET ROLE, which is what PostgREST does per request).  They
 * become the owner of schema openwop only while running their own prepared
 * statements, in a restricted security context, so application roles need
 * no privilege on the tables at all.
 *
 *-------------------------------------------------------------------------
 */
#include "openwop.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "common/jsonapi.h"
#include "mb/pg_wchar.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "common/base64.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/syscache.h"

/* GUCs, defined in module.c */
extern char *ow_tenant_setting;
extern char *ow_default_tenant;
extern char *ow_tenant_claim;
extern char *ow_jwt_session_role;

/*
 * May this session speak for others through request.jwt.claims?  Any role
 * can SET that setting, so claims count only where the session user is
 * trusted to have verified them: a session of the role named by
 * openwop.jwt_session_role (PostgREST's authenticator), or a superuser's.
 * Anywhere else the caller is current_user in openwop.tenant.
 */
static bool
claims_trusted(void)
{
	Oid			session = GetSessionUserId();

	if (superuser_arg(session))
		return true;
	if (ow_jwt_session_role != NULL && ow_jwt_session_role[0] != '\0')
	{
		Oid			role = get_role_oid(ow_jwt_session_role, true);

		return OidIsValid(role) && has_privs_of_role(session, role);
	}
	return false;
}

/*
 * The verified JWT claims PostgREST put in request.jwt.claims, or NULL when
 * the setting is absent or empty (a plain SQL session) or not trusted here.
 */
Jsonb *
ow_jwt_claims(void)
{
	const char *raw = GetConfigOption("request.jwt.claims", true, false);
	JsonLexContext *lex;

	if (raw == NULL || raw[0] == '\0' || !claims_trusted())
		return NULL;
	lex = makeJsonLexContextCstringLen(pstrdup(raw), strlen(raw), GetDatabaseEncoding(), false);
	if (pg_parse_json(lex, &nullSemAction) != JSON_SUCCESS)
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "field", "request.jwt.claims");
		ow_raise(OW_SQLSTATE_400, "validation_error", &d, NULL,
				 "request.jwt.claims is not valid JSON");
	}
	return DatumGetJsonbP(DirectFunctionCall1(jsonb_in, CStringGetDatum(raw)));
}

static char *
claim_string(Jsonb *claims, const char *name)
{
	if (claims == NULL || name == NULL || name[0] == '\0')
		return NULL;
	return owj_string(owj_get(claims, name));
}

/*
 * The principal: the "sub" claim when trusted claims carry one, else
 * current_user.  *is_role (may be NULL) tells whether it is a role name, the
 * only kind of principal approverRoleRefs can match.
 */
char *
ow_caller_principal_ex(bool *is_role)
{
	char	   *sub = claim_string(ow_jwt_claims(), "sub");

	if (is_role)
		*is_role = sub == NULL || sub[0] == '\0';
	if (sub != NULL && sub[0] != '\0')
		return sub;
	return GetUserNameFromId(GetUserId(), false);
}

char *
ow_caller_principal(void)
{
	return ow_caller_principal_ex(NULL);
}

/*
 * The tenant: the configured claim (openwop.tenant_claim) of the JWT, else
 * the openwop.tenant setting, else openwop.default_tenant.
 */
char *
ow_caller_tenant(void)
{
	Jsonb	   *claims = ow_jwt_claims();
	char	   *tenant = NULL;
	const char *source = "the JWT claim named by openwop.tenant_claim";

	if (claims != NULL && ow_tenant_claim != NULL && ow_tenant_claim[0] != '\0')
	{
		JsonbValue *v = owj_get(claims, ow_tenant_claim);

		/* a tenant claim that is there but unusable never falls back */
		if (v != NULL && (v->type != jbvString || v->val.string.len == 0))
		{
			OwDetails	d;

			ow_details_init(&d);
			ow_details_str(&d, "claim", ow_tenant_claim);
			ow_raise(OW_SQLSTATE_403, "forbidden", &d, NULL,
					 "the JWT claim \"%s\" does not name a tenant", ow_tenant_claim);
		}
		tenant = owj_string(v);
	}
	if (tenant == NULL)
	{
		if (ow_tenant_setting != NULL && ow_tenant_setting[0] != '\0')
		{
			tenant = ow_tenant_setting;
			source = "openwop.tenant";
		}
		else
		{
			tenant = ow_default_tenant;
			source = "openwop.default_tenant";
		}
	}
	if (!ow_valid_tenant(tenant))
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "field", "tenant");
		ow_raise(OW_SQLSTATE_400, "validation_error", &d,
				 "A tenant is 1 to 128 characters of A-Z a-z 0-9 . _ ~ -, optionally prefixed \"anon:\".",
				 "tenant \"%s\" taken from %s is not a valid tenant id", tenant, source);
	}
	return tenant;
}

static bool
is_unreserved(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		(c >= '0' && c <= '9') || c == '.' || c == '_' || c == '~' || c == '-';
}

/* s[0..len) is made of unreserved characters only, and len is in [min, max]. */
static bool
unreserved_span(const char *s, size_t len, size_t min, size_t max)
{
	size_t		i;

	if (len < min || len > max)
		return false;
	for (i = 0; i < len; i++)
		if (!is_unreserved(s[i]))
			return false;
	return true;
}

/* Tenant id grammar: ^(anon:)?[A-Za-z0-9._~-]{1,128}$ */
bool
ow_valid_tenant(const char *tenant)
{
	if (strncmp(tenant, "anon:", 5) == 0)
		tenant += 5;
	return unreserved_span(tenant, strlen(tenant), 1, 128);
}

/* Opaque segment of a tenant-bound id: ^[A-Za-z0-9._~-]{16,128}$ */
bool
ow_valid_opaque(const char *s)
{
	return unreserved_span(s, strlen(s), 16, 128);
}

/* Author-chosen ids (nodeId, workflowId, agentId): ^[A-Za-z0-9._~:-]{1,128}$ */
bool
ow_valid_author_id(const char *s)
{
	size_t		len = strlen(s);
	size_t		i;

	if (len < 1 || len > 128)
		return false;
	for (i = 0; i < len; i++)
		if (!is_unreserved(s[i]) && s[i] != ':')
			return false;
	return true;
}

static bool
is_lower(char c)
{
	return c >= 'a' && c <= 'z';
}

static bool
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Node type id: ^[a-z][a-z0-9_-]*(\.[a-z][a-zA-Z0-9_-]*)+$, at most 256 long */
bool
ow_valid_type_id(const char *s)
{
	const char *p = s;
	int			segments = 0;

	if (strlen(s) > 256 || !is_lower(*p))
		return false;
	for (p++; is_lower(*p) || is_digit(*p) || *p == '_' || *p == '-'; p++)
		;
	while (*p == '.')
	{
		p++;
		if (!is_lower(*p))
			return false;
		for (p++; is_lower(*p) || (*p >= 'A' && *p <= 'Z') || is_digit(*p) ||
			 *p == '_' || *p == '-'; p++)
			;
		segments++;
	}
	return *p == '\0' && segments > 0;
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Bring a run id into its canonical "tenant/opaque" form and check it.
 *
 * On the wire an id is one path segment, with "/" projected as "~2F" (or
 * percent-encoded "%2F"); an id without a "/" is decoded first.  A malformed
 * id is a 400; a well-formed id of another tenant is 403 id_tenant_mismatch,
 * decided from the string alone so nothing about the other tenant leaks.
 */
char *
ow_normalize_run_id(const char *input, const char *caller_tenant)
{
	return ow_normalize_id(input, caller_tenant, "runId", "run");
}

/* The same for any tenant-bound id (runs, interrupts); field and what name it in errors. */
char *
ow_normalize_id(const char *input, const char *caller_tenant, const char *field, const char *what)
{
	char	   *id;
	const char *slash;
	char	   *tenant;

	if (strchr(input, '/') == NULL)
	{
		const char *p = input;
		char	   *q;

		id = q = palloc(strlen(input) + 1);
		while (*p)
		{
			if (*p == '~' || *p == '%')
			{
				char		c;

				/* an escape must be two hex digits naming "/" or an id character */
				if (hexval(p[1]) < 0 || hexval(p[2]) < 0 ||
					((c = (char) (hexval(p[1]) * 16 + hexval(p[2]))) != '/' && !is_unreserved(c)))
				{
					q = NULL;
					break;
				}
				*q++ = c;
				p += 3;
			}
			else
				*q++ = *p++;
		}
		if (q)
			*q = '\0';
		else
			id[0] = '\0';		/* a bad escape: refused below */
	}
	else
		id = pstrdup(input);

	slash = strchr(id, '/');
	if (slash == NULL || strchr(slash + 1, '/') != NULL ||
		!ow_valid_opaque(slash + 1) ||
		!ow_valid_tenant((tenant = pnstrdup(id, slash - id))))
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "field", field);
		ow_details_str(&d, field, input);
		ow_raise(OW_SQLSTATE_400, "validation_error", &d,
				 psprintf("A %s id is \"<tenant>/<opaque>\": the tenant, a slash, then 16 to 128 characters of A-Z a-z 0-9 . _ ~ -.", what),
				 "\"%s\" is not a valid %s id", input, what);
	}

	if (strcmp(tenant, caller_tenant) != 0)
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, field, id);
		ow_details_str(&d, "tenant", caller_tenant);
		ow_raise(OW_SQLSTATE_403, "id_tenant_mismatch", &d, NULL,
				 "%s \"%s\" does not belong to tenant \"%s\"", what, id, caller_tenant);
	}
	return id;
}

/* Unpadded base64url of len bytes (RFC 4648 §5). */
char *
ow_base64url(const char *data, int len)
{
	int			enclen = pg_b64_enc_len(len);
	char	   *out = palloc(enclen + 1);
	int			n;
	int			i;

	n = pg_b64_encode(data, len, out, enclen);
	if (n < 0)
		elog(ERROR, "could not encode base64");
	while (n > 0 && out[n - 1] == '=')
		n--;
	out[n] = '\0';
	for (i = 0; i < n; i++)
	{
		if (out[i] == '+')
			out[i] = '-';
		else if (out[i] == '/')
			out[i] = '_';
	}
	return out;
}

/*
 * nbytes of strong randomness as unpadded base64url: never contains "~",
 * so it is a valid opaque id segment once it is at least 16 characters.
 */
char *
ow_mint_opaque(int nbytes)
{
	char		raw[64];

	Assert(nbytes > 0 && nbytes <= (int) sizeof(raw));
	if (!pg_strong_random(raw, nbytes))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not generate random bytes")));
	return ow_base64url(raw, nbytes);
}

/*
 * The role that owns the extension's tables (the role that ran CREATE
 * EXTENSION), found through openwop.runs rather than the schema, whose
 * owner could differ if the schema existed beforehand.
 */
static Oid
openwop_owner(void)
{
	Oid			relid = get_relname_relid("runs", get_namespace_oid("openwop", false));
	HeapTuple	tup;
	Oid			owner;

	if (!OidIsValid(relid))
		elog(ERROR, "table openwop.runs does not exist");
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

/*
 * Run the following statements as the extension owner.  The restricted
 * context forbids SET ROLE and similar inside; an error unwinds it through
 * transaction abort, so only the success path calls ow_restore_user.
 */
void
ow_become_owner(OwPriv *priv)
{
	GetUserIdAndSecContext(&priv->save_userid, &priv->save_sec_context);
	SetUserIdAndSecContext(openwop_owner(),
						   priv->save_sec_context |
						   SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
}

void
ow_restore_user(OwPriv *priv)
{
	SetUserIdAndSecContext(priv->save_userid, priv->save_sec_context);
}

/*
 * Administration (approver groups, signing keys) is for the extension's
 * owner and superusers, whatever EXECUTE grants say.
 */
bool
ow_is_admin(void)
{
	return has_privs_of_role(GetUserId(), openwop_owner());
}

void
ow_require_admin(const char *what)
{
	if (!ow_is_admin())
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_raise(OW_SQLSTATE_403, "forbidden", &d,
				 "Ask the owner of the openwop_interrupt extension.",
				 "only the owner of the openwop tables may %s", what);
	}
}
