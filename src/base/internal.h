/*-------------------------------------------------------------------------
 *
 * base/internal.h
 *	  What the files of base/ share among themselves and no layer above
 *	  uses (base/base.h is the layer's face).
 *
 *-------------------------------------------------------------------------
 */
#ifndef OW_BASE_INTERNAL_H
#define OW_BASE_INTERNAL_H

#include "base/base.h"

extern void ow_member_bool(JsonbContainer *obj, const char *prefix, const char *key);
extern void ow_member_schema(JsonbContainer *obj, const char *prefix, const char *key);
extern void ow_member_unit_number(JsonbContainer *obj, const char *prefix, const char *key);

#endif							/* OW_BASE_INTERNAL_H */
