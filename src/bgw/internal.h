/*-------------------------------------------------------------------------
 *
 * bgw/internal.h
 *	  What the files of bgw/ share among themselves and no layer above
 *	  uses (bgw/bgw.h is the layer's face).
 *
 *-------------------------------------------------------------------------
 */
#ifndef OW_BGW_INTERNAL_H
#define OW_BGW_INTERNAL_H

#include "bgw/bgw.h"

extern bool ow_database_is_unserved_copy(void);
extern bool ow_extension_installed(void);
extern Oid	ow_served_database(bool *recorded);
extern long ow_timeout_pass(int64 *done);

#endif							/* OW_BGW_INTERNAL_H */
