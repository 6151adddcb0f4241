/*-------------------------------------------------------------------------
 *
 * module.c
 *	  Module initialisation, the openwop.* settings and the registration of
 *	  the background workers.
 *
 *-------------------------------------------------------------------------
 */
#include "openwop.h"

#include "access/xact.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/*
 * Register a background worker of this library that connects to
 * openwop.database; restart is seconds before the postmaster restarts it.
 */
static void
register_worker(const char *function, const char *name, int restart)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = restart;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "openwop_interrupt");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "%s", function);
	snprintf(worker.bgw_name, BGW_MAXLEN, "%s", name);
	snprintf(worker.bgw_type, BGW_MAXLEN, "%s", name);
	RegisterBackgroundWorker(&worker);
}

/* Shared memory of the timeout worker and of the notify relay. */
static void
ow_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(ow_sweeper_shmem_size());
	RequestAddinShmemSpace(ow_relay_shmem_size());
}

static void
ow_shmem_startup(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	ow_sweeper_shmem_init();
	ow_relay_shmem_init();
	LWLockRelease(AddinShmemInitLock);
}

/* Tenant of a plain SQL session (DESIGN §4.4); empty means "use the default". */
char	   *ow_tenant_setting = NULL;

/* Tenant used when neither a JWT claim nor openwop.tenant names one. */
char	   *ow_default_tenant = NULL;

/* Name of the request.jwt.claims member that carries the tenant. */
char	   *ow_tenant_claim = NULL;

/* Logins that are members of this role speak through request.jwt.claims. */
char	   *ow_jwt_session_role = NULL;

/* The tenant a login is bound to ("*": any; empty: the default tenant only). */
char	   *ow_bound_tenant = NULL;

/* The role whose members hold approvals:respond in SQL sessions. */
char	   *ow_approver_role = NULL;

/* The role whose members may mint resolve tokens (issue credentials). */
char	   *ow_token_issuer_role = NULL;

/* How long idempotency records are kept, in seconds (at least 24 hours). */
int			ow_idempotency_retention = 86400;

/* The group whose members are override principals of approval gates. */
char	   *ow_override_group = NULL;

/* Escalation threshold when a run's configurable names none. */
double		ow_escalation_threshold = 0.7;

/* Token lifetimes, in seconds: the default, and the cap of every token. */
int			ow_token_ttl = 1800;
int			ow_token_max_ttl = 604800;

/* File holding the passphrase that encrypts signing secrets at rest (pgcrypto). */
char	   *ow_key_encryption_key_file = NULL;

/* Database the timeout worker serves, and its longest sleep in seconds. */
char	   *ow_database = NULL;
int			ow_sweeper_interval = 60;

/*
 * Bounded work: the largest payload an API call stores (options, outputs,
 * errors, interrupt requests, decisions), the largest answer (a resume
 * value: reachable by anonymous token holders), in bytes, and how many
 * answers one voter may give one approval gate (votes, re-votes, asks).
 */
int			ow_max_payload_size = 1024 * 1024;
int			ow_max_answer_size = 64 * 1024;
int			ow_max_votes_per_voter = 16;

/* Was the library loaded at server start (shared_preload_libraries)? */
bool		ow_preloaded = false;

/* openwop.bound_tenant: empty, "*", or a tenant id */
static bool
check_bound_tenant(char **newval, void **extra, GucSource source)
{
	if (**newval == '\0' || strcmp(*newval, "*") == 0 || ow_valid_tenant(*newval))
		return true;
	GUC_check_errdetail("A bound tenant is a tenant id, \"*\" (any tenant), or empty (the default tenant only).");
	return false;
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

	DefineCustomStringVariable("openwop.tenant",
							   "Tenant of this session's OpenWOP calls, for logins bound to \"*\".",
							   "A login bound to one tenant acts in it whatever this says; an unbound login acts in openwop.default_tenant. Empty means openwop.default_tenant.",
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

	DefineCustomStringVariable("request.jwt.claims",
							   "Verified JWT claims of the current PostgREST request.",
							   "PostgREST sets it per request; openwop trusts it only in sessions of openwop.jwt_session_role.",
							   &ow_jwt_claims_setting,
							   "",
							   PGC_USERSET,
							   GUC_NO_SHOW_ALL | GUC_NOT_IN_SAMPLE,
							   ow_check_jwt_claims, ow_assign_jwt_claims, NULL);

	DefineCustomStringVariable("openwop.jwt_session_role",
							   "Role whose member logins speak through request.jwt.claims.",
							   "Set it to PostgREST's authenticator role. Only sessions whose login is a real member of it (superuser status does not count) take identity, tenant and scope from the claims; everyone else is their login. Empty: no session does.",
							   &ow_jwt_session_role,
							   "",
							   PGC_SUSET,
							   0,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("openwop.bound_tenant",
							   "Tenant this login is bound to: one tenant id, or \"*\" for a login that serves many.",
							   "A DBA sets it per login with ALTER ROLE ... SET; the login cannot change it. Empty: the login acts in openwop.default_tenant only.",
							   &ow_bound_tenant,
							   "",
							   PGC_SUSET,
							   GUC_NO_RESET_ALL,
							   check_bound_tenant, NULL, NULL);

	DefineCustomStringVariable("openwop.approver_role",
							   "Role whose members hold the approvals:respond scope in SQL sessions.",
							   NULL,
							   &ow_approver_role,
							   "openwop_approver",
							   PGC_SUSET,
							   0,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("openwop.token_issuer_role",
							   "Role whose members may mint resolve tokens.",
							   "A resolve token decides on behalf of whoever holds it (or of the principal it names): minting one is issuing a credential. Superusers and the extension's owner may always mint.",
							   &ow_token_issuer_role,
							   "openwop_token_issuer",
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

	DefineCustomStringVariable("openwop.override_group",
							   "Group whose members are override principals of approval gates.",
							   "Manage it with openwop.add_group_member; an override principal releases a gate alone when overrideBypassesQuorum is true.",
							   &ow_override_group,
							   "openwop-override",
							   PGC_SUSET,
							   0,
							   NULL, NULL, NULL);

	DefineCustomRealVariable("openwop.escalation_threshold",
							 "Agent confidence below which a decision escalates to a low-confidence interrupt.",
							 "A run's configurable.run.escalationThreshold takes precedence.",
							 &ow_escalation_threshold,
							 0.7, 0.0, 1.0,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("openwop.sweeper_interval",
							"Longest time the timeout worker sleeps between passes.",
							"It wakes earlier at the next deadline, and when a transaction raises an interrupt with a deadline.",
							&ow_sweeper_interval,
							60, 1, 3600,
							PGC_SIGHUP,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomIntVariable("openwop.max_payload_size",
							"Largest JSON payload an openwop call stores.",
							"Run options, node outputs and errors, interrupt requests and agent decisions; a larger one is refused with validation_error before anything is read or written.",
							&ow_max_payload_size,
							1024 * 1024, 1024, 256 * 1024 * 1024,
							PGC_SUSET,
							GUC_UNIT_BYTE,
							NULL, NULL, NULL);

	DefineCustomIntVariable("openwop.max_answer_size",
							"Largest resume value an interrupt accepts.",
							"Answers reach the database from approvers and token holders; a larger one is refused with validation_error before it is looked at.",
							&ow_max_answer_size,
							64 * 1024, 1024, 256 * 1024 * 1024,
							PGC_SUSET,
							GUC_UNIT_BYTE,
							NULL, NULL, NULL);

	DefineCustomIntVariable("openwop.max_votes_per_voter",
							"Most answers one voter may give one approval gate.",
							"Votes, re-votes and asks together; one more is refused with validation_error.",
							&ow_max_votes_per_voter,
							16, 1, 10000,
							PGC_SUSET,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("openwop.token_ttl",
							"Default lifetime of an interrupt token.",
							"Capped at openwop.token_max_ttl and at the interrupt's deadline.",
							&ow_token_ttl,
							1800, 1, INT_MAX,
							PGC_USERSET,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomIntVariable("openwop.token_max_ttl",
							"Longest lifetime of any interrupt token.",
							"A retired signing key keeps verifying this long after its retirement.",
							&ow_token_max_ttl,
							604800, 1, INT_MAX,
							PGC_SUSET,
							GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomStringVariable("openwop.key_encryption_key_file",
							   "File holding the passphrase that encrypts signing secrets at rest with pgcrypto.",
							   "The file must be owned by the server's OS user and readable by nobody else; the passphrase itself is never a setting, so it reaches no log and no SHOW.",
							   &ow_key_encryption_key_file,
							   "",
							   PGC_SUSET,
							   GUC_SUPERUSER_ONLY | GUC_NOT_IN_SAMPLE,
							   NULL, NULL, NULL);

	/* the timeout worker exists only when loaded at server start */
	if (process_shared_preload_libraries_in_progress)
	{
		DefineCustomStringVariable("openwop.database",
								   "Database whose deadlines the timeout worker applies and whose notifications the relay sends.",
								   NULL,
								   &ow_database,
								   "postgres",
								   PGC_POSTMASTER,
								   0,
								   NULL, NULL, NULL);
		prev_shmem_request_hook = shmem_request_hook;
		shmem_request_hook = ow_shmem_request;
		prev_shmem_startup_hook = shmem_startup_hook;
		shmem_startup_hook = ow_shmem_startup;
		register_worker("ow_sweeper_main", "openwop timeout worker", 10);
		register_worker("ow_relay_main", "openwop notify relay", 1);
	}

	MarkGUCPrefixReserved("openwop");
}

/*
 * The body of both background workers: connect to openwop.database,
 * attach, then run pass() and sleep on the latch as long as it asks (0:
 * go again at once).  An error in a pass is logged, its transaction rolled
 * back, and the worker sleeps error_ms before the next.
 */
void
ow_worker_main(const char *name, void (*attach) (void), long (*pass) (void), long error_ms)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(ow_database, NULL, 0);
	attach();
	elog(LOG, "%s started in database \"%s\"", name, ow_database);

	for (;;)
	{
		volatile long sleep_ms;
		MemoryContext oldcxt = CurrentMemoryContext;

		PG_TRY();
		{
			sleep_ms = pass();
		}
		PG_CATCH();
		{
			MemoryContextSwitchTo(oldcxt);
			EmitErrorReport();
			FlushErrorState();
			AbortCurrentTransaction();
			pgstat_report_activity(STATE_IDLE, NULL);
			sleep_ms = error_ms;
		}
		PG_END_TRY();
		if (sleep_ms > 0)
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 sleep_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
	}
}
