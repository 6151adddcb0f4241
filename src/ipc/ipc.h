/*-------------------------------------------------------------------------
 *
 * ipc/ipc.h
 *	  The shared-memory layer, the lowest: the library's LWLocks, the
 *	  workers' registry, the worker's latch and the notification rings.
 *	  Nothing here reads a table.
 *
 *-------------------------------------------------------------------------
 */
#ifndef OW_IPC_H
#define OW_IPC_H

#include "compat.h"
#include "datatype/timestamp.h"

/*
 * The longest tenant id (base/ids.c checks the grammar), and room for one
 * with its terminator: the notify rings and the deadline sweep keep
 * tenants in fixed buffers.
 */
#define OW_TENANT_MAX 128
#define OW_TENANT_BUF (OW_TENANT_MAX + 8)

/* ----------
 * shmem.c: the extension's LWLocks, one named tranche
 * ----------
 */
#define OW_LOCK_REGISTRY 0		/* registry.c: slots, requests, pauses */
#define OW_LOCK_STATS 1			/* stats.c: taking and resetting entries */
#define OW_LOCK_RING(slot) (2 + (slot)) /* notify.c: a database slot's ring */

extern void ow_lwlocks_request(int rings);
extern void ow_lwlocks_attach(void);
extern struct LWLock *ow_lwlock(int which);

/* ----------
 * registry.c: the registry of the databases the workers serve (shared
 * memory): a slot per database worker, pauses for DDL, the launcher's
 * requests.  Settings: openwop.databases, openwop.database (deprecated),
 * openwop.max_databases.
 * ----------
 */
typedef enum OwSlotEnd
{
	OW_END_NONE = 0,			/* not said: an error or a crash */
	OW_END_ABSENT,				/* the extension is not in its database */
	OW_END_COPY,				/* it is, in a copy not yet served (serve_database()) */
	OW_END_STOPPED				/* asked to leave */
} OwSlotEnd;

/* Why the launcher serves no worker in a database that has the extension. */
typedef enum OwUnserved
{
	OW_UNSERVED_NONE = 0,
	OW_UNSERVED_COPY,			/* a copy of another database, not yet served */
	OW_UNSERVED_NO_SLOT,		/* openwop.max_databases reached */
	OW_UNSERVED_NO_WORKER,		/* max_worker_processes reached */
	OW_UNSERVED_FAILING,		/* its worker exited: started again with back-off */
	OW_UNSERVED_NOT_CONNECTED	/* its worker did not connect in time */
} OwUnserved;

/* A request to the launcher to look at a database again. */
typedef struct OwRequest
{
	Oid			dboid;
	bool		admin;			/* the DBA's: CREATE EXTENSION or serve_database() */
} OwRequest;

typedef struct OwSlot
{
	Oid			dboid;			/* InvalidOid: free */
	uint32		generation;		/* counts the slot's claims */
	char		dbname[NAMEDATALEN];
	int			pid;			/* 0 until the worker attached */
	struct Latch *latch;
	bool		stop;			/* leave: DDL on the database, no longer to be served */
	bool		recheck;		/* check that the extension is still there */
	bool		deadline_raised;	/* a commit raised a deadline: run a timeout pass */
	bool		serving;		/* attached, the extension found: not a probe */
	OwSlotEnd	end;
	TimestampTz claimed;
	TimestampTz started;
	TimestampTz last_relay;
	TimestampTz last_timeout_pass;
	TimestampTz last_error_at;
	int64		relay_batches;
	int64		relayed;
	int64		timeout_passes;
	int64		settled;
	int64		errors;
	char		last_error[256];
} OwSlot;

extern int	ow_max_databases;
extern void ow_define_worker_settings(void);
extern const char *ow_databases_setting(void);
extern Size ow_registry_shmem_size(void);
extern void ow_registry_shmem_init(void);
extern bool ow_registry_ready(void);
extern void ow_request_launch(Oid dboid, bool admin);
extern void ow_request_recheck(Oid dboid);
extern bool ow_pause_database(Oid dboid, long wait_ms);
extern void ow_unpause_mine(void);
/* the launcher */
extern void ow_register_launcher(void);
extern void ow_launcher_attach(void);
extern void ow_launcher_detach(void);
extern void ow_launcher_passed(void);
extern int	ow_take_requests(OwRequest *out, int n, bool *all);
extern void ow_note_unserved(Oid dboid, OwUnserved why);
extern int	ow_slot_claim(Oid dboid, const char *dbname);
extern OwSlotEnd ow_slot_release(int slot);
extern Oid	ow_slot_stop(int slot);
extern bool ow_database_paused(Oid dboid);
extern int	ow_slot_pid(int slot, TimestampTz *started, bool *serving);
extern TimestampTz ow_slot_claimed(int slot);
struct BackgroundWorkerHandle;
extern bool ow_start_database_worker(int slot, struct BackgroundWorkerHandle **handle);
/* a database worker */
extern Oid	ow_slot_database(int slot, uint32 generation);
extern bool ow_slot_attach(int slot, uint32 generation);
extern void ow_slot_serving(int slot, const char *dbname);
extern void ow_slot_ending(int slot, uint32 generation, OwSlotEnd end);
extern void ow_slot_flags(int slot, bool *stop, bool *recheck, bool *deadline);
extern void ow_slot_record(int slot, bool timeout_pass, int64 done, const char *error);
/* the status view */
extern OwUnserved ow_unserved_reason(Oid dboid, TimestampTz *since);
extern bool ow_launcher_running(void);
extern int	ow_registry_snapshot(OwSlot *out, int *index, int *launcher_pid,
								 TimestampTz *launcher_started, TimestampTz *launcher_pass);

/* ----------
 * wakeup.c: waking the database's worker when a transaction that raised a
 * deadline commits.
 * ----------
 */
extern void ow_deadline_raised(void);

/* ----------
 * notify.c: one notification per committed transaction and run, on its
 * tenant's channel, sent by the database's worker as its relay.  Setting:
 * openwop.shared_channel.
 * ----------
 */
#define OW_CHANNEL_BUF 48		/* "openwop_events_" + 32 hex digits + NUL */
extern Size ow_relay_shmem_size(void);
extern void ow_relay_shmem_init(void);
extern void ow_define_notify_settings(void);
extern bool ow_tenant_channel(const char *tenant, char *out);
extern void ow_notify_later(const char *run_id, int64 first, int64 last);
extern void ow_relay_attach(int slot);
extern int64 ow_relay_drain(void);
extern bool ow_relay_waiting(void);
extern int64 ow_relay_lag_ms(int slot);

#endif							/* OW_IPC_H */
