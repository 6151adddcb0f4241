/*-------------------------------------------------------------------------
 *
 * request_settings.c
 *	  The settings a caller's identity is read from: request.jwt.claims and
 *	  request.headers (PostgREST's), openwop.forwarded_caller (a router's),
 *	  and who may set them.
 *
 * Each may be set only by the session's own SET or set_config(), never by
 * code that runs as someone else (a SECURITY DEFINER function, a
 * security-restricted operation, a trigger, a WITH HOLD cursor at commit);
 * a reader trusts a value only if it is the one such code did not change
 * (caller.c reads them).  openwop.forwarded_caller may be set only in a
 * forwarder's session (openwop.forwarding_role).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/base.h"
#include "auth/internal.h"

#include "access/parallel.h"
#include "access/xact.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "tcop/pquery.h"
#include "utils/acl.h"
#include "utils/fmgrprotos.h"
#include "utils/guc.h"
#include "utils/portal.h"

/* Logins that are members of this role may speak for another caller (openwop.forwarded_caller). */
char *ow_forwarding_role = NULL;

/* ----------
 * Where identity may be taken from
 * ----------
 */

/*
 * request.jwt.claims and request.headers, which PostgREST sets at the top
 * of each request, are defined by this extension (ow_define_request_settings,
 * with these hooks) so that code running as someone else cannot set them: a
 * SECURITY DEFINER function or a security-restricted operation (ANALYZE, an
 * index expression) changing the claims would change who a request session
 * is for the rest of its transaction, and changing the headers would choose
 * the Idempotency-Key of the session's next resolve over HTTP.
 */
static char *ow_jwt_claims_setting = NULL;
static char *ow_request_headers_setting = NULL;

/*
 * openwop.forwarded_caller, the caller a forwarder speaks for ("Forwarded
 * callers" below), has the same hooks, and one more: only a forwarder's
 * session may set it.
 */
char	   *ow_forwarded_caller_setting = NULL;

/*
 * Each as last set by code running as itself (not a SECURITY DEFINER
 * function, not a security-restricted operation); NULL if unknown.  A
 * RESET inside such code skips the check hook, so a reader compares the
 * current value with this one and trusts nothing when they differ.
 */
static char *ow_jwt_claims_trusted = NULL;
static char *ow_request_headers_trusted = NULL;
static char *ow_forwarded_caller_trusted = NULL;

/* How many triggers deep this backend is (pg_trigger_depth()). */
static int
trigger_depth(void)
{
	LOCAL_FCINFO(fcinfo, 0);

	InitFunctionCallInfoData(*fcinfo, NULL, 0, InvalidOid, NULL, NULL);
	return DatumGetInt32(pg_trigger_depth(fcinfo));
}

/*
 * Is the running code someone else's rather than the session's own: a
 * SECURITY DEFINER function, a security-restricted operation, a trigger
 * (immediate or deferred to commit, on a table another role may own), or a
 * WITH HOLD cursor being materialised at commit?  Such code may not set the
 * claims.
 */
static bool
foreign_code(void)
{
	return InSecurityRestrictedOperation() || InLocalUserIdChange() || trigger_depth() > 0 ||
		(ActivePortal != NULL && (ActivePortal->cursorOptions & CURSOR_OPT_HOLD) != 0);
}

/*
 * Are the request settings guarded in this database: does it have
 * openwop_interrupt, or openwop_router (whose caller() reads the claims)?
 * They are defined in every database the library is loaded in, but only
 * where a caller's identity is read from them are they refused to anyone
 * but the session's own code; elsewhere they are left as PostgREST and
 * other code use them.  Where the catalog cannot be read (outside a
 * transaction: the configuration file at a reload; a backend of no
 * database: a physical walsender): guarded.
 */
static bool
guarded_here(void)
{
	if (!IsTransactionState() || !OidIsValid(MyDatabaseId))
		return true;
	return OidIsValid(get_extension_oid("openwop_interrupt", true)) ||
		OidIsValid(get_extension_oid("openwop_router", true));
}

/*
 * A request setting (name) may only be set by a session's own SET or
 * set_config() (source PGC_S_SESSION), outside foreign code: no database,
 * role or file default, no startup option, where it is guarded.  Clearing
 * it is always allowed.  *extra says whether the value was approved so
 * (a value accepted where the setting is not guarded was not): it travels
 * with the value, so a value the GUC machinery restores later (at the end
 * of a transaction, a function or a savepoint, where no check runs) is
 * trusted only if it was approved when it was set.
 */
static bool
check_request_setting(const char *name, char **newval, void **extra, GucSource source)
{
	bool		guarded = guarded_here();
	bool	   *approved;

	if (**newval != '\0' && guarded)
	{
		if (source != PGC_S_SESSION)
		{
			GUC_check_errcode(ERRCODE_INSUFFICIENT_PRIVILEGE);
			GUC_check_errmsg("%s can only be set by SET or set_config in the session that uses it", name);
			return false;
		}
		if (foreign_code())
		{
			GUC_check_errcode(ERRCODE_INSUFFICIENT_PRIVILEGE);
			GUC_check_errmsg("%s cannot be set inside a SECURITY DEFINER function, a security-restricted operation, a trigger or a WITH HOLD cursor", name);
			return false;
		}
	}
	approved = ow_guc_malloc(sizeof(bool));
	if (approved == NULL)
	{
		GUC_check_errcode(ERRCODE_OUT_OF_MEMORY);
		GUC_check_errmsg("out of memory");
		return false;
	}
	*approved = **newval == '\0' || guarded;
	*extra = approved;
	return true;
}

/*
 * Remember newval as *trusted when the session's own code set it, and it
 * was approved when it was set (extra); a value that was not approved
 * leaves nothing trusted.
 */
static void
assign_request_setting(char **trusted, const char *newval, void *extra)
{
	if (foreign_code())
		return;
	free(*trusted);
	*trusted = NULL;
	if (extra != NULL && *(bool *) extra)
		*trusted = strdup(newval);	/* NULL (unknown) on failure: trusted nowhere */
}

/* Is value (the setting's current value) the one last set by code running as itself? */
static bool
request_setting_untampered(const char *value, const char *trusted)
{
	return trusted != NULL && strcmp(value ? value : "", trusted) == 0;
}

static bool
check_jwt_claims(char **newval, void **extra, GucSource source)
{
	return check_request_setting("request.jwt.claims", newval, extra, source);
}

static void
assign_jwt_claims(const char *newval, void *extra)
{
	assign_request_setting(&ow_jwt_claims_trusted, newval, extra);
}

static bool
check_request_headers(char **newval, void **extra, GucSource source)
{
	return check_request_setting("request.headers", newval, extra, source);
}

static void
assign_request_headers(const char *newval, void *extra)
{
	assign_request_setting(&ow_request_headers_trusted, newval, extra);
}

/*
 * Is this a forwarder's session: does the login really belong to the role
 * named by openwop.forwarding_role (superuser status does not count)?
 */
bool
ow_forwarding_session(void)
{
	Oid			role;

	if (ow_forwarding_role == NULL || ow_forwarding_role[0] == '\0')
		return false;
	role = get_role_oid(ow_forwarding_role, true);
	return OidIsValid(role) && is_member_of_role_nosuper(GetSessionUserId(), role);
}

/*
 * openwop.forwarded_caller: a request setting, that only a forwarder's
 * session may set.  The membership is read where the catalogs can be
 * (in a transaction; not while a parallel worker copies its leader's
 * settings, which the leader's own check admitted); whoever reads the
 * setting asks again (ow_caller), as forwarding_role may have changed.
 */
static bool
check_forwarded_caller(char **newval, void **extra, GucSource source)
{
	if (!check_request_setting("openwop.forwarded_caller", newval, extra, source))
		return false;
	if (**newval == '\0' || !IsTransactionState() || IsParallelWorker() || ow_forwarding_session())
		return true;
	/* refused after all: the approval made above goes (the caller frees no extra of a refusal) */
	ow_guc_free(*extra);
	*extra = NULL;
	GUC_check_errcode(ERRCODE_INSUFFICIENT_PRIVILEGE);
	GUC_check_errmsg("openwop.forwarded_caller can only be set by a member of the role named by openwop.forwarding_role");
	GUC_check_errdetail("A forwarded caller is believed only from a router's login; any other session is the caller itself.");
	GUC_check_errhint("A DBA grants the role named by openwop.forwarding_role to the router's login.");
	return false;
}

static void
assign_forwarded_caller(const char *newval, void *extra)
{
	assign_request_setting(&ow_forwarded_caller_trusted, newval, extra);
}

/* Is the forwarded caller the one last set by code running as itself? */
bool
ow_forwarded_caller_untampered(void)
{
	return request_setting_untampered(ow_forwarded_caller_setting, ow_forwarded_caller_trusted);
}

/* Are the current claims the ones last set by code running as itself? */
bool
ow_claims_untampered(void)
{
	return request_setting_untampered(ow_jwt_claims_setting, ow_jwt_claims_trusted);
}

/* The same for request.headers (the PostgREST surface reads its Idempotency-Key there). */
bool
ow_request_headers_untampered(void)
{
	return request_setting_untampered(ow_request_headers_setting, ow_request_headers_trusted);
}

/* ----------
 * Settings
 * ----------
 */

void
ow_define_request_settings(void)
{
	DefineCustomStringVariable("request.jwt.claims",
							   "Verified JWT claims of the current PostgREST request.",
							   "PostgREST sets it per request; openwop trusts it only in sessions of openwop.jwt_session_role.",
							   &ow_jwt_claims_setting,
							   "",
							   PGC_USERSET,
							   GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE,
							   check_jwt_claims, assign_jwt_claims, NULL);

	DefineCustomStringVariable("request.headers",
							   "Headers of the current PostgREST request, as a JSON object.",
							   "PostgREST sets it per request; openwop reads the Idempotency-Key header there, and only a value the session's own code set.",
							   &ow_request_headers_setting,
							   "",
							   PGC_USERSET,
							   GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE,
							   check_request_headers, assign_request_headers, NULL);

	DefineCustomStringVariable("openwop.forwarding_role",
							   "Role whose member logins may speak for another caller through openwop.forwarded_caller.",
							   "Set it to a role granted to the router's login (openwop_router). Only sessions whose login is a real member of it (superuser status does not count) forward a caller; the forwarded tenant must also be one the login's own openwop.bound_tenant allows. Empty: no session does.",
							   &ow_forwarding_role,
							   "",
							   PGC_SUSET,
							   0,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("openwop.forwarded_caller",
							   "The caller a forwarding router's call is for, as JSON.",
							   "The router sets it per call (openwop_forward.*); openwop believes it only in sessions of openwop.forwarding_role and refuses it in any other.",
							   &ow_forwarded_caller_setting,
							   "",
							   PGC_USERSET,
							   GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE,
							   check_forwarded_caller, assign_forwarded_caller, NULL);
}
