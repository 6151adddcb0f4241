/*-------------------------------------------------------------------------
 *
 * store/internal.h
 *	  What the files of store/ share among themselves and no layer above
 *	  uses (store/store.h is the layer's face).
 *
 *-------------------------------------------------------------------------
 */
#ifndef OW_STORE_INTERNAL_H
#define OW_STORE_INTERNAL_H

#include "store/store.h"

extern int	ow_trigger_column(struct TriggerData *trigdata, const char *function, const char *column);
extern struct TriggerData *ow_trigger_data(FunctionCallInfo fcinfo, const char *function,
										   const char *table, int allowed);
extern void ow_event_hash(StringInfo buf, const uint8 *prev, int64 seq, const char *type,
						  const char *node_id, Jsonb *payload, TimestampTz created_at,
						  int32 schema_version, const char *causation_id, uint8 *out);

#endif							/* OW_STORE_INTERNAL_H */
