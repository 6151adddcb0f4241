/*-------------------------------------------------------------------------
 *
 * ipc/internal.h
 *	  What the files of ipc/ share among themselves and no layer above
 *	  uses (ipc/ipc.h is the layer's face).
 *
 *-------------------------------------------------------------------------
 */
#ifndef OW_IPC_INTERNAL_H
#define OW_IPC_INTERNAL_H

#include "ipc/ipc.h"

/* any backend */
extern int	ow_slot_of_my_database(void);
extern void ow_slot_wake(int slot, bool deadline);

#endif							/* OW_IPC_INTERNAL_H */
