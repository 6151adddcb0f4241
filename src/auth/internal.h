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

extern void ow_no_identity_here(const char *where) pg_attribute_noreturn();

#endif							/* OW_AUTH_INTERNAL_H */
