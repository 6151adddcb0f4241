/*-------------------------------------------------------------------------
 *
 * admin.c
 *	  Who administers what the DBA owns (approval policies, business
 *	  calendars, delegations set for others): the holders of
 *	  openwop_policy_admin, each in its tenant, and the arguments their
 *	  calls share (a name, a tenant).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/base.h"
#include "store/store.h"
#include "auth/auth.h"
#include "domain/internal.h"

#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"

PG_FUNCTION_INFO_V1(ow_policy_admin_tenant);

/* The role whose real members set policies and calendars. */
#define POLICY_ADMIN_ROLE "openwop_policy_admin"
#define ADMIN_NAME_MAX 128
/* versions taken by concurrent changes of one document before a change is given up */
#define ADMIN_VERSION_TRIES 16

/* Does caller c hold openwop_policy_admin: a SQL login, by real membership? */
bool
ow_is_policy_admin(const OwCaller *c)
{
	Oid			role;

	if (c->claims != NULL || c->forwarded_by != NULL || !OidIsValid(c->login))
		return false;
	role = get_role_oid(POLICY_ADMIN_ROLE, true);
	return OidIsValid(role) && is_member_of_role_nosuper(c->login, role);
}

/* Refuse (403) a caller that is no policy admin; what: the act, e.g. "changing approval policies". */
void
ow_require_policy_admin(const OwCaller *c, const char *what)
{
	OwDetails	d;

	if (ow_is_policy_admin(c))
		return;
	ow_details_init(&d);
	ow_details_str(&d, "requiredRole", POLICY_ADMIN_ROLE);
	ow_raise(OW_FORBIDDEN, &d,
			 c->claims || c->forwarded_by
			 ? "Approval policies and calendars are set from a SQL session, by a login granted " POLICY_ADMIN_ROLE "."
			 : "GRANT " POLICY_ADMIN_ROLE " TO the login (superusers need the grant too).",
			 "%s needs the role %s", what, POLICY_ADMIN_ROLE);
}

/*
 * The tenant argument n of an administration call (policies, calendars,
 * delegations): the caller's own when NULL; another only for a caller of
 * every tenant (what: the act, for the refusal).
 */
char *
ow_tenant_arg(FunctionCallInfo fcinfo, int n, const OwCaller *c, const char *what)
{
	char	   *tenant;

	if (PG_ARGISNULL(n))
		return c->subject.tenant;
	tenant = text_to_cstring(PG_GETARG_TEXT_PP(n));
	if (!ow_valid_tenant(tenant))
		ow_validation_error("tenant", "\"%s\" is not a valid tenant id", ow_echo(tenant));
	if (strcmp(tenant, c->subject.tenant) != 0)
		ow_require_every_tenant(c, what);
	return tenant;
}

/* Is s a name of a policy or calendar? */
static bool
valid_admin_name(const char *s)
{
	const char *p;

	if (s[0] == '\0' || strlen(s) > ADMIN_NAME_MAX)
		return false;
	for (p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
			  *p == '.' || *p == '_' || *p == ':' || *p == '-'))
			return false;
	return true;
}

/* The name argument n of a policy or calendar (what): 1 to 128 letters, digits and . _ : - */
char *
ow_admin_name(FunctionCallInfo fcinfo, int n, const char *what)
{
	char	   *name;

	if (PG_ARGISNULL(n))
		ow_validation_error("name", "name must not be null");
	name = text_to_cstring(PG_GETARG_TEXT_PP(n));
	if (!valid_admin_name(name))
		ow_validation_error("name",
							"\"%s\" is not a %s name: use 1 to %d letters, digits and . _ : - only",
							ow_echo(name), what, ADMIN_NAME_MAX);
	return name;
}

/*
 * The arguments of a call that sets a versioned document the DBA owns
 * (function, e.g. "set_calendar()"; act, for the refusal of a caller that
 * is no policy admin; what, "policy" or "calendar": the document's
 * argument and field): refused in a read-only transaction, the caller a
 * policy admin, the name (argument 0) and the document (argument 1)
 * given and within bounds.  Returns the document, for the caller to check.
 */
Jsonb *
ow_admin_document_args(FunctionCallInfo fcinfo, OwCaller *caller, const char *function,
					   const char *act, const char *what, char **name)
{
	ow_refuse_read_only(function);
	ow_caller(caller);
	ow_require_policy_admin(caller, act);
	*name = ow_admin_name(fcinfo, 0, what);
	if (PG_ARGISNULL(1))
		ow_validation_error(what, "%s must not be null", what);
	ow_check_json_arg(fcinfo, 1, what, false);
	return PG_GETARG_JSONB_P(1);
}

/*
 * openwop.policy_admin_tenant() → text: the tenant whose policies and
 * calendars the caller administers, "*" for every tenant, NULL for a
 * caller that is no policy admin (openwop.approval_policies and
 * openwop.calendars show it nothing).
 */
Datum
ow_policy_admin_tenant(PG_FUNCTION_ARGS)
{
	OwCaller	c;

	ow_caller(&c);
	if (!ow_is_policy_admin(&c))
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(ow_acts_in_every_tenant(&c) ? "*" : c.subject.tenant));
}

/*
 * Insert the next version of a versioned document (a policy, a calendar)
 * with insert, which takes max(version) + 1 and does nothing on a conflict
 * (RETURNING version): a concurrent change that took the version first
 * makes this one take the next.  Returns the version taken; what and name
 * say which document, for the refusal after ADMIN_VERSION_TRIES.
 */
int
ow_take_version(OwQuery *insert, Datum *args, const char *what, const char *name)
{
	int			tries;

	for (tries = 0; tries < ADMIN_VERSION_TRIES; tries++)
		if (ow_exec(insert, args, NULL, false, 0) == 1)
			return (int) ow_col_int64(0, 1);
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not take a version of %s \"%s\"", what, name),
			 errdetail("%d concurrent changes took each version first.", ADMIN_VERSION_TRIES),
			 errhint("Retry the call.")));
}
