/*-------------------------------------------------------------------------
 *
 * auth/internal.h
 *	  What the files of auth/ share among themselves and no layer above
 *	  uses (auth/auth.h is the layer's face).
 *
 *-------------------------------------------------------------------------
 */
#ifndef OW_AUTH_INTERNAL_H
#define OW_AUTH_INTERNAL_H

#include "auth/auth.h"

extern pg_noreturn void ow_no_identity_here(const char *where);

/* request_settings.c: the settings identity is read from, and who may set them */
extern char *ow_forwarding_role;
extern char *ow_forwarded_caller_setting;
extern bool ow_forwarding_session(void);
extern bool ow_forwarded_caller_untampered(void);
extern bool ow_claims_untampered(void);

#endif							/* OW_AUTH_INTERNAL_H */
