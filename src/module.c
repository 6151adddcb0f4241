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

	MarkGUCPrefixReserved("openwop");
}
