/*-------------------------------------------------------------------------
 *
 * module.c
 *	  _PG_init: the top of the layer order.  It asks each file that owns
 *	  settings to define them, and, when the library is loaded at server
 *	  start, reserves the shared memory of the workers' registry, of the
 *	  counters and of the notify rings, registers the launcher and installs
 *	  the DDL hook.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "ipc/ipc.h"
#include "base/base.h"
#include "auth/auth.h"
#include "domain/domain.h"
#include "api/api.h"
#include "bgw/bgw.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* Shared memory of the workers' registry, of the counters and of the notify rings. */
static void
shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	ow_lwlocks_request(ow_max_databases);
	RequestAddinShmemSpace(ow_registry_shmem_size());
	RequestAddinShmemSpace(ow_stats_shmem_size());
	RequestAddinShmemSpace(ow_relay_shmem_size());
}

static void
shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	ow_lwlocks_attach();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	ow_registry_shmem_init();
	ow_stats_shmem_init();
	ow_relay_shmem_init();
	LWLockRelease(AddinShmemInitLock);
}

void
_PG_init(void)
{
	/*
	 * Loaded later than server start, a session could have set openwop.*
	 * and request.jwt.claims as unchecked placeholders first (or dropped a
	 * DBA's superuser-only values with a startup option): caller.c then
	 * names no caller at all.
	 */
	ow_preloaded = process_shared_preload_libraries_in_progress;

	ow_define_caller_settings();
	ow_define_request_settings();
	ow_define_limit_settings();
	ow_define_kind_settings();
	ow_define_approval_settings();
	ow_define_outbox_settings();
	ow_define_artifact_settings();
	ow_define_idempotency_settings();
	ow_define_keyring_settings();
	ow_define_token_settings();
	ow_define_bulk_settings();
	ow_define_low_confidence_settings();
	ow_define_timeout_worker_settings();
	ow_define_notify_settings();

	/* the workers exist only when loaded at server start */
	if (process_shared_preload_libraries_in_progress)
	{
		ow_define_worker_settings();
		prev_shmem_request_hook = shmem_request_hook;
		shmem_request_hook = shmem_request;
		prev_shmem_startup_hook = shmem_startup_hook;
		shmem_startup_hook = shmem_startup;
		ow_register_launcher();
		ow_install_ddl_hook();
		ow_install_memory_guards();	/* defines openwop.protect_server_memory */
	}

	MarkGUCPrefixReserved("openwop");
}
