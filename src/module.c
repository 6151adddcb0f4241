/*-------------------------------------------------------------------------
 *
 * module.c
 *	  Module initialisation and the openwop.* settings.
 *
 *-------------------------------------------------------------------------
 */
#include "openwop.h"

#include "fmgr.h"
#include "utils/guc.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

/* Tenant of a plain SQL session (DESIGN §4.4); empty means "use the default". */
char	   *ow_tenant_setting = NULL;

/* Tenant used when neither a JWT claim nor openwop.tenant names one. */
char	   *ow_default_tenant = NULL;

/* Name of the request.jwt.claims member that carries the tenant. */
char	   *ow_tenant_claim = NULL;

/* When set, request.jwt.claims count only in sessions of this role. */
char	   *ow_jwt_session_role = NULL;

/* The role whose members hold approvals:respond in SQL sessions. */
char	   *ow_approver_role = NULL;

/* How long idempotency records are kept, in seconds (at least 24 hours). */
int			ow_idempotency_retention = 86400;

void
_PG_init(void)
{
	DefineCustomStringVariable("openwop.tenant",
							   "Tenant of this session's OpenWOP calls.",
							   "Used when request.jwt.claims carries no tenant claim. Empty means openwop.default_tenant.",
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
							   "Role whose sessions may pass identity in request.jwt.claims.",
							   "Set it to PostgREST's authenticator role; other sessions then cannot forge a principal or tenant with SET request.jwt.claims. Empty trusts every session.",
							   &ow_jwt_session_role,
							   "",
							   PGC_SUSET,
							   0,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("openwop.approver_role",
							   "Role whose members hold the approvals:respond scope in SQL sessions.",
							   NULL,
							   &ow_approver_role,
							   "openwop_approver",
							   PGC_SUSET,
							   0,
							   NULL, NULL, NULL);

	DefineCustomIntVariable("openwop.idempotency_retention",
							"How long Idempotency-Key records are kept.",
							NULL,
							&ow_idempotency_retention,
							86400,
							86400,
							INT_MAX,
							PGC_SUSET,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	MarkGUCPrefixReserved("openwop");
}
