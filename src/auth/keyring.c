/*-------------------------------------------------------------------------
 *
 * keyring.c
 *	  The signing keys of interrupt tokens: add_signing_key(),
 *	  retire_signing_key(), the secrets for minting and verifying, and
 *	  their encryption at rest with pgcrypto under a passphrase that no
 *	  table and no setting holds: the output of
 *	  openwop.key_encryption_key_command, or the content of
 *	  openwop.key_encryption_key_file.
 *
 * Every role that reads tables, pg_read_all_data with BYPASSRLS among
 * them, reads openwop.signing_keys: so no secret is ever stored there in
 * clear (0.11.0 on; the update from 0.10.0 encrypts those it finds).  A
 * process that holds a plain secret or the passphrase is made
 * non-dumpable first, as ssh-agent is: no core file, and /proc/<pid>/mem
 * and environ belong to root, so pg_read_server_files cannot read them
 * back out of this backend or another.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "base/base.h"
#include "store/store.h"
#include "auth/auth.h"
#include "base/token_format.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#include <sys/syscall.h>
#endif

#include "catalog/pg_type.h"
#include "common/string.h"
#include "port.h"
#include "storage/fd.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#define OW_KEK_MAX_LEN 1024

/* Where the passphrase that encrypts signing secrets at rest comes from. */
static char *ow_key_encryption_key_command = NULL;
static char *ow_key_encryption_key_file = NULL;

/* Longest lifetime of any token, in seconds: a retired key verifies this long. */
int			ow_token_max_ttl = 604800;

/* pgcrypto's function name(bytea, text), from its library: no CREATE EXTENSION needed. */
static PGFunction
pgcrypto_function(const char *name)
{
	return load_external_function("$libdir/pgcrypto", name, true, NULL);
}

static bool
is_set(const char *setting)
{
	return setting != NULL && setting[0] != '\0';
}

/*
 * libpq/auth.h's hook, declared as it declares it: the header itself pulls
 * in libpq-be.h, which needs GSSAPI headers that Debian's
 * postgresql-server-dev does not bring.  The same in PostgreSQL 15 to 18.
 */
struct Port;
typedef void (*OwClientAuthenticationHook) (struct Port *port, int status);
extern PGDLLIMPORT OwClientAuthenticationHook ClientAuthentication_hook;

/* openwop.protect_backend_memory: every client backend non-dumpable once authenticated */
static bool ow_protect_backend_memory = true;
static OwClientAuthenticationHook prev_client_authentication_hook = NULL;

/* openwop.protect_server_memory: the postmaster, and so every process it forks, non-dumpable */
static bool ow_protect_server_memory = false;

/*
 * This process cannot be dumped from now on: its /proc files that show
 * memory and open files (mem, environ, fd; maps to others) belong to root,
 * so no role that reads the server's files (pg_read_server_files:
 * pg_read_binary_file('/proc/self/mem', ...)) reads them, from this
 * process or another, and a crash writes no core file with what it held.
 * Inherited by fork(), not by exec(); and a non-dumpable process may not
 * write its own oom_score_adj, which fork_process() does in each child.
 * Linux only.
 */
void
ow_protect_memory(void)
{
#ifdef __linux__
	static bool done = false;

	if (done)
		return;
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not make this process non-dumpable: %m")));
	done = true;
#endif
}

/*
 * A client backend holds what its client sends: tokens in a link, answers,
 * claims, the data it reads.  With openwop.protect_backend_memory on (the
 * default) none can be read out of it once it is authenticated (before,
 * only openwop.protect_server_memory keeps it: see there).
 */
static void
protect_client_backend(struct Port *port, int status)
{
	if (prev_client_authentication_hook)
		prev_client_authentication_hook(port, status);
	if (ow_protect_backend_memory)
		ow_protect_memory();
}

/* Turned on by a reload: the sessions already open are protected too. */
static void
assign_protect_backend_memory(bool newval, void *extra)
{
#ifdef __linux__
	if (newval && IsUnderPostmaster && MyBackendType == B_BACKEND)
		(void) prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);	/* an assign hook must not fail */
#endif
}

/*
 * At server start (the postmaster loading the library): the memory guards.
 * Client backends from their authentication on (ClientAuthentication_hook:
 * after fork_process() has written the child's oom_score_adj).  With
 * openwop.protect_server_memory on, the postmaster itself, so that every
 * process it forks is non-dumpable from its first instruction: a backend
 * while it authenticates (a password, a SCRAM proof: a hostile review read
 * a superuser's password out of one), parallel workers, and the server's
 * own processes, which map shared memory (every buffered page,
 * pg_stat_activity's statement texts, the channels' key).  Its cost: no
 * child can then reset the oom_score_adj it inherits (Debian's
 * pg_ctlcluster asks each to, PG_OOM_ADJUST_FILE, under a postmaster at
 * -900), which is logged.
 */
void
ow_install_memory_guards(void)
{
	DefineCustomBoolVariable("openwop.protect_server_memory",
							 "Make the postmaster, and so every process it forks, non-dumpable.",
							 "Closes what openwop.protect_backend_memory leaves open: a backend while it authenticates, parallel workers, the processes that map shared memory. No child can then reset the oom_score_adj it inherits from the postmaster (PG_OOM_ADJUST_FILE), and no process writes a core file.",
							 &ow_protect_server_memory,
							 false,
							 PGC_POSTMASTER,
							 0,
							 NULL, NULL, NULL);
	prev_client_authentication_hook = ClientAuthentication_hook;
	ClientAuthentication_hook = protect_client_backend;
	if (ow_protect_server_memory)
	{
		const char *oom = getenv("PG_OOM_ADJUST_FILE");

		if (oom != NULL && oom[0] != '\0')
			ereport(WARNING,
					(errmsg("with openwop.protect_server_memory on, the server's processes keep the postmaster's oom_score_adj"),
					 errdetail("PG_OOM_ADJUST_FILE asks each to reset it after fork(), which a non-dumpable process may not."),
					 errhint("Give the postmaster the score its children should have, or turn openwop.protect_server_memory off.")));
		ow_protect_memory();
	}
}

/*
 * This backend is about to hold a plain secret or the passphrase: it is
 * made non-dumpable first, whatever the settings say, as ssh-agent makes
 * itself.
 */
static void
hold_secrets(void)
{
	ow_protect_memory();
}

/* The passphrase in buf, n bytes read from what: one line of 1 to OW_KEK_MAX_LEN bytes. */
static char *
passphrase_of(char *buf, size_t n, const char *what, const char *name)
{
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	if (n > 0 && buf[n - 1] == '\r')
		n--;
	buf[n] = '\0';
	if (n == 0 || n > OW_KEK_MAX_LEN || strlen(buf) != n)
	{
		explicit_bzero(buf, OW_KEK_MAX_LEN + 2);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("key-encryption key %s \"%s\" must give one passphrase of 1 to %d bytes",
						what, name, OW_KEK_MAX_LEN)));
	}
	return buf;
}

/*
 * The command's process: standard input /dev/null, standard output the
 * socket, nothing else of the backend (its client connection, its files);
 * signals as a fresh program has them.  Never returns.
 */
static void
exec_command(const char *command, int out)
{
	sigset_t	none;
	int			devnull = open("/dev/null", O_RDONLY);

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);	/* ignored by backends; a command expects it */
	if (devnull < 0 || dup2(devnull, STDIN_FILENO) < 0 || dup2(out, STDOUT_FILENO) < 0)
		_exit(126);
#if defined(__linux__) && defined(SYS_close_range)
	(void) syscall(SYS_close_range, 3, ~0U, 0);
#else
	for (int fd = 3; fd < 1024; fd++)
		(void) close(fd);
#endif
	execl("/bin/sh", "sh", "-c", command, (char *) NULL);
	_exit(127);
}

/*
 * The passphrase from openwop.key_encryption_key_command: a program the
 * server runs (sh -c), whose standard output is the passphrase, as
 * ssl_passphrase_command.  It can fetch it from where the server's own
 * files are not (a secret manager, a root-owned file read through sudo):
 * then no role that reads files can read it.  Not popen(): the shell runs
 * as the server's OS user, dumpable again once it is a program of its
 * own, and a pipe on its standard output can be opened a second time
 * through /proc/<pid>/fd/1 (COPY FROM, which pg_read_server_files may run)
 * and drained before this backend reads it; a socket cannot be opened so.
 * What the command's own processes hold is theirs to guard (README:
 * sudo, or a helper that makes itself non-dumpable).  Errors name the
 * command, never its output.
 */
static char *
passphrase_from_command(const char *command)
{
	int			sv[2];
	pid_t		forked;
	volatile int sock;			/* changed in PG_TRY, read in PG_CATCH */
	volatile pid_t child;
	char	   *buf = palloc0(OW_KEK_MAX_LEN + 2);
	size_t		n = 0;
	int			status = 0;
	bool		eof = false;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		ereport(ERROR,
				(errcode_for_socket_access(),
				 errmsg("could not run key-encryption key command \"%s\": %m", command)));
	fflush(NULL);
	forked = fork();
	if (forked == 0)
		exec_command(command, sv[1]);
	close(sv[1]);
	if (forked < 0)
	{
		close(sv[0]);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("could not run key-encryption key command \"%s\": %m", command)));
	}
	sock = sv[0];
	child = forked;
	PG_TRY();
	{
		/* read until the command closes its output, then wait for it; a cancel stops it */
		while (!eof && n <= OW_KEK_MAX_LEN)
		{
			struct pollfd pfd = {sock, POLLIN, 0};
			ssize_t		got;

			CHECK_FOR_INTERRUPTS();
			if (poll(&pfd, 1, 100) <= 0)
				continue;
			got = read(sock, buf + n, OW_KEK_MAX_LEN + 1 - n);
			if ((got < 0 && errno != EINTR) || got == 0)
				eof = true;
			else if (got > 0)
				n += got;
		}
		close(sock);
		sock = -1;
		for (;;)
		{
			pid_t		done = waitpid(child, &status, WNOHANG);

			if (done == child)
				break;
			if (done < 0 && errno != EINTR)
			{
				status = -1;
				break;
			}
			CHECK_FOR_INTERRUPTS();
			pg_usleep(10000L);
		}
		child = -1;
	}
	PG_CATCH();
	{
		int			ignored;

		explicit_bzero(buf, OW_KEK_MAX_LEN + 2);
		if (sock >= 0)
			close(sock);
		if (child > 0)
		{
			(void) kill(child, SIGKILL);
			while (waitpid(child, &ignored, 0) < 0 && errno == EINTR)
				;
		}
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (status != 0)
	{
		explicit_bzero(buf, OW_KEK_MAX_LEN + 2);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("key-encryption key command \"%s\" failed", command),
				 errdetail_internal("%s", wait_result_to_str(status))));
	}
	return passphrase_of(buf, n, "command", command);
}

/*
 * The passphrase in openwop.key_encryption_key_file.  Like ssl_key_file,
 * the file must belong to the server's OS user and be readable by nobody
 * else.  A file in the data directory is read, with a warning (once per
 * backend): a base backup and a standby's copy carry it next to the
 * secrets it encrypts.  Errors name the file, never its content.
 */
static char *
passphrase_from_file(const char *path)
{
	struct stat st;
	FILE	   *fp;
	char	   *buf = palloc0(OW_KEK_MAX_LEN + 2);
	size_t		n;
	char	   *abs = make_absolute_path(path);
	static bool warned = false;

	/* through symbolic links: the file where it is, the data directory where it is */
	char	   *real = realpath(abs, NULL);
	char	   *real_data = realpath(DataDir, NULL);
	bool		inside = path_is_prefix_of_path(DataDir, abs) ||
		(real && real_data && path_is_prefix_of_path(real_data, real));

	free(real);
	free(real_data);
	if (!warned && inside)
	{
		ereport(WARNING,
				(errcode(ERRCODE_WARNING),
				 errmsg("key-encryption key file \"%s\" is inside the data directory", path),
				 errdetail("A base backup carries it next to the secrets it encrypts."),
				 errhint("Move it outside the data directory, or use openwop.key_encryption_key_command.")));
		warned = true;
	}
	if (stat(path, &st) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read key-encryption key file \"%s\": %m", path)));
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & (S_IRWXG | S_IRWXO)) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("key-encryption key file \"%s\" must be a file owned by the database server's user and readable by it alone", path),
				 errhint("chown it to the server's user and chmod it 0600.")));
	fp = AllocateFile(path, "r");
	if (fp == NULL)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open key-encryption key file \"%s\": %m", path)));
	n = fread(buf, 1, OW_KEK_MAX_LEN + 1, fp);
	FreeFile(fp);
	return passphrase_of(buf, n, "file", path);
}

/*
 * The key-encryption passphrase, fetched whenever it is needed (adding a
 * key, a backend's first use of one): never a setting, so no reload logs
 * it and no SHOW or pg_settings shows it.  Without a source configured no
 * secret can be stored: fail closed.
 */
static char *
key_encryption_key(void)
{
	if (is_set(ow_key_encryption_key_command) && is_set(ow_key_encryption_key_file))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("openwop.key_encryption_key_command and openwop.key_encryption_key_file are both set"),
				 errhint("Clear one of them: the passphrase comes from one place.")));
	if (!is_set(ow_key_encryption_key_command) && !is_set(ow_key_encryption_key_file))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("no key-encryption key is configured: signing secrets are never stored in clear"),
				 errhint("Set openwop.key_encryption_key_command (or openwop.key_encryption_key_file) in postgresql.conf: see the README, \"Signed tokens\".")));
	hold_secrets();
	if (is_set(ow_key_encryption_key_command))
		return passphrase_from_command(ow_key_encryption_key_command);
	return passphrase_from_file(ow_key_encryption_key_file);
}

/*
 * pgp_sym_encrypt_bytea / pgp_sym_decrypt_bytea of data under the
 * key-encryption key, called directly, not through a statement: a
 * statement would put the passphrase, and the decrypted secret the planner
 * folds out of an immutable call, into a plan that debug_print_plan shows
 * to any session.
 */
static bytea *
pgcrypto_apply(const char *fn, bytea *data)
{
	PGFunction	f = pgcrypto_function(fn);
	char	   *kek = key_encryption_key();
	text	   *passphrase = cstring_to_text(kek);
	bytea	   *result;

	explicit_bzero(kek, strlen(kek));
	result = DatumGetByteaPCopy(DirectFunctionCall2(f, PointerGetDatum(data), PointerGetDatum(passphrase)));
	explicit_bzero(VARDATA(passphrase), VARSIZE(passphrase) - VARHDRSZ);
	return result;
}

/*
 * Decrypted secrets stay cached in this backend, one entry per kid (the
 * keyring is DBA-sized), keyed on the stored ciphertext too, so a re-added
 * or re-encrypted key is decrypted afresh.  Verification then pays
 * pgcrypto's key stretching once per key and backend, not per token.
 */
typedef struct SecretEntry
{
	char		kid[OW_KID_MAX_LEN + 1];	/* hash key */
	bytea	   *stored;
	bytea	   *plain;			/* NULL: decrypting stored failed, at failed_at */
	TimestampTz failed_at;
} SecretEntry;

/*
 * A key that failed to decrypt is not tried again in this backend for this
 * long: each try may run the passphrase command, and any caller, an
 * anonymous token holder too, makes one by naming the key in a token.
 */
#define DECRYPT_RETRY_MS 10000

static HTAB *secret_cache = NULL;

typedef struct DecryptArgs
{
	bytea	   *stored;
	bytea	   *plain;
} DecryptArgs;

static void
decrypt_secret(void *arg)
{
	DecryptArgs *a = (DecryptArgs *) arg;

	a->plain = pgcrypto_apply("pgp_sym_decrypt_bytea", a->stored);
}

/* kid cannot be decrypted; why (the file's, the command's or pgcrypto's words) goes to the log only */
static void
undecryptable(const char *kid, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("signing key \"%s\" cannot be decrypted with the key-encryption passphrase", kid),
			 errdetail_log("%s", why),
			 errhint("The passphrase must be the one the key was added under (openwop.key_encryption_key_command or openwop.key_encryption_key_file); or retire the key.")));
}

/*
 * No key-encryption key to decrypt with: the one error that is the DBA's
 * to fix, raised as it is (the others are pgcrypto's, for the log).
 */
static void
check_key_source(void)
{
	if (is_set(ow_key_encryption_key_command) == is_set(ow_key_encryption_key_file))
		(void) key_encryption_key();	/* raises: both set, or neither */
}

/*
 * The plain secret of kid, stored as stored: encrypted, or in clear on a
 * schema of 0.10.0 or before that is not updated yet.
 */
static bytea *
plain_secret(const char *kid, bytea *stored, bool encrypted)
{
	SecretEntry *entry;
	DecryptArgs a;
	ErrorData  *edata;
	bool		found;

	hold_secrets();
	if (!encrypted)
		return stored;
	if (secret_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = OW_KID_MAX_LEN + 1;
		ctl.entrysize = sizeof(SecretEntry);
		secret_cache = hash_create("openwop signing secrets", 16, &ctl, HASH_ELEM | HASH_STRINGS);
	}
	entry = hash_search(secret_cache, kid, HASH_FIND, NULL);
	if (entry && VARSIZE_ANY(entry->stored) == VARSIZE_ANY(stored) &&
		memcmp(VARDATA_ANY(entry->stored), VARDATA_ANY(stored), VARSIZE_ANY_EXHDR(stored)) == 0)
	{
		if (entry->plain)
			return entry->plain;
		if (!TimestampDifferenceExceeds(entry->failed_at, GetCurrentTimestamp(), DECRYPT_RETRY_MS))
			undecryptable(kid, "it failed to decrypt in this backend less than 10 s ago");
	}

	check_key_source();

	/* decrypt first: the cache changes only once the outcome is known */
	a.stored = stored;
	a.plain = NULL;
	edata = ow_try_subtransaction(decrypt_secret, &a);
	if (edata && (edata->sqlerrcode == ERRCODE_QUERY_CANCELED || edata->sqlerrcode == ERRCODE_OUT_OF_MEMORY))
		ReThrowError(edata);

	entry = hash_search(secret_cache, kid, HASH_ENTER, &found);
	if (found)
	{
		pfree(entry->stored);
		if (entry->plain)
		{
			explicit_bzero(VARDATA(entry->plain), VARSIZE(entry->plain) - VARHDRSZ);
			pfree(entry->plain);
		}
	}
	entry->stored = MemoryContextAlloc(TopMemoryContext, VARSIZE_ANY(stored));
	memcpy(entry->stored, stored, VARSIZE_ANY(stored));
	entry->plain = NULL;
	entry->failed_at = GetCurrentTimestamp();
	if (edata)
		undecryptable(kid, edata->message);
	entry->plain = MemoryContextAlloc(TopMemoryContext, VARSIZE_ANY(a.plain));
	memcpy(entry->plain, a.plain, VARSIZE_ANY(a.plain));
	explicit_bzero(VARDATA_ANY(a.plain), VARSIZE_ANY_EXHDR(a.plain));
	return entry->plain;
}

/*
 * The secret of kid if this host holds it for verification: an active key,
 * or a retired one whose tokens may still be unexpired.  NULL otherwise: a
 * key retired at once (revoked) verifies nothing from its commit on.
 */
bytea *
ow_verification_secret(const char *kid)
{
	static OwQuery q = {"SELECT secret, encrypted FROM openwop.signing_keys"
		" WHERE kid OPERATOR(pg_catalog.=) $1"
		"   AND (state OPERATOR(pg_catalog.=) 'active'"
		"        OR verify_until OPERATOR(pg_catalog.>=) pg_catalog.now())",
	1, {TEXTOID}, SPI_OK_SELECT};
	Datum		args[1];
	bool		isnull;

	Datum		stored;

	args[0] = CStringGetTextDatum(kid);
	if (ow_exec(&q, args, NULL, true, 1) == 0)
		return NULL;
	stored = ow_col_datum(0, 1, BYTEAOID, &isnull);
	if (isnull)
		return NULL;			/* erased: verifies nothing */
	return plain_secret(kid, DatumGetByteaPCopy(stored), ow_col_bool(0, 2));
}

/*
 * The key that signs new tokens: the newest active one.  Without one, no
 * token can be minted: capability_required.
 */
void
ow_signing_key(OwSigningKey *key)
{
	static OwQuery q = {"SELECT kid, secret, encrypted, longest_ttl FROM openwop.signing_keys"
		" WHERE state OPERATOR(pg_catalog.=) 'active'"
		" ORDER BY created_at DESC, kid DESC LIMIT 1", 0, {0}, SPI_OK_SELECT};
	bool		isnull;
	bytea	   *stored;
	bool		encrypted;

	if (ow_exec(&q, NULL, NULL, true, 1) == 0)
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "requiredCapability", "signingKey");
		ow_raise(OW_CAPABILITY_REQUIRED, &d,
				 "A DBA adds one with SELECT openwop.add_signing_key('k1').",
				 "openwop has no active signing key");
	}
	/* every column first: decrypting runs a statement of its own */
	key->kid = ow_col_text(0, 1);
	stored = DatumGetByteaPCopy(ow_col_datum(0, 2, BYTEAOID, &isnull));
	encrypted = ow_col_bool(0, 3);
	key->longest_ttl = (int32) ow_col_int64(0, 4);
	key->secret = plain_secret(key->kid, stored, encrypted);
}

/*
 * Remember the longest lifetime a key has signed for, so that retiring it
 * keeps it verifying until its last token expired even if token_max_ttl
 * was lowered since.  Written only when exceeded: rarely.
 */
void
ow_note_lifetime(const OwSigningKey *key, int32 lifetime)
{
	static OwQuery q = {"UPDATE openwop.signing_keys SET longest_ttl = $2"
		" WHERE kid OPERATOR(pg_catalog.=) $1"
		"   AND longest_ttl OPERATOR(pg_catalog.<) $2", 2, {TEXTOID, INT4OID}, SPI_OK_UPDATE};
	Datum		args[2];

	if (lifetime <= key->longest_ttl)
		return;
	/* the one write of a mint: refused clearly where nothing may be written */
	ow_refuse_read_only("mint_interrupt_token()");
	args[0] = CStringGetTextDatum(key->kid);
	args[1] = Int32GetDatum(lifetime);
	(void) ow_exec(&q, args, NULL, false, 0);
}

/*
 * The checks every new key starts with: the caller administers keys, the
 * transaction may write, and argument 0 is a key id.
 */
static char *
new_key_id(FunctionCallInfo fcinfo, const char *fn)
{
	char	   *kid;

	hold_secrets();
	ow_refuse_read_only(fn);
	ow_require_admin("manage signing keys");
	if (PG_ARGISNULL(0))
		ow_validation_error("kid", "kid must not be null");
	kid = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (!ow_valid_key_id(kid))
		ow_validation_error("kid", "\"%s\" is not a key id (1 to 128 characters of A-Z a-z 0-9 . _ ~ -)", ow_echo(kid));
	return kid;
}

/*
 * Stores an active key with its sealed secret and returns its kid; a kid
 * already there is 400, unless same_is_ok and it is that very key, active.
 */
static text *
store_new_key(const char *kid, bytea *sealed, bool same_is_ok)
{
	static OwQuery q = {"INSERT INTO openwop.signing_keys (kid, secret, encrypted)"
		" VALUES ($1, $2, true) ON CONFLICT DO NOTHING",
	2, {TEXTOID, BYTEAOID}, SPI_OK_INSERT, true};
	static OwQuery same = {"SELECT 1 FROM openwop.signing_keys"
		" WHERE kid OPERATOR(pg_catalog.=) $1 AND secret OPERATOR(pg_catalog.=) $2"
		"   AND state OPERATOR(pg_catalog.=) 'active'",
	2, {TEXTOID, BYTEAOID}, SPI_OK_SELECT, true};
	OwCall		call;
	Datum		args[2];
	text	   *result;

	/* administration: the caller is a role with the owner's privileges, no Subject */
	ow_call_enter(&call);
	args[0] = CStringGetTextDatum(kid);
	args[1] = PointerGetDatum(sealed);
	if (ow_exec(&q, args, NULL, false, 0) == 0 &&
		!(same_is_ok && ow_exec(&same, args, NULL, true, 1) > 0))
		ow_validation_error("kid", "signing key \"%s\" already exists; retire it and add a key with a new kid", kid);
	ow_call_end(&call);
	result = cstring_to_text(kid);
	ow_call_finish(&call);
	return result;
}

PG_FUNCTION_INFO_V1(ow_add_signing_key);
/*
 * openwop.add_signing_key(kid, secret) → text: a new active key.  Without
 * a secret, 32 bytes from pg_strong_random.  The secret is stored
 * encrypted with pgcrypto under the key-encryption passphrase; without
 * one configured, nothing is stored.
 */
Datum
ow_add_signing_key(PG_FUNCTION_ARGS)
{
	char	   *kid;
	bytea	   *secret;

	kid = new_key_id(fcinfo, "add_signing_key()");
	if (PG_ARGISNULL(1))
	{
		secret = palloc(VARHDRSZ + 32);
		SET_VARSIZE(secret, VARHDRSZ + 32);
		if (!pg_strong_random(VARDATA(secret), 32))
			ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("could not generate random bytes")));
	}
	else
	{
		secret = PG_GETARG_BYTEA_PP(1);
		if (VARSIZE_ANY_EXHDR(secret) < 16)
			ow_validation_error("secret", "a signing secret must be at least 16 bytes");
	}

	PG_RETURN_TEXT_P(store_new_key(kid, pgcrypto_apply("pgp_sym_encrypt_bytea", secret), false));
}

PG_FUNCTION_INFO_V1(ow_retire_signing_key);
/*
 * openwop.retire_signing_key(kid, immediately DEFAULT false): the key
 * stops minting at once and keeps verifying for the longer of
 * openwop.token_max_ttl and the longest lifetime it ever signed, after
 * which every token it signed has expired.  immediately (0.11.0): it is
 * revoked, active or retired, and its secret erased: from the commit on,
 * no token it signed verifies (the key leaked, or a token did).  The SQL
 * of 0.10.0 and before passes kid only.
 */
Datum
ow_retire_signing_key(PG_FUNCTION_ARGS)
{
	static OwQuery retire = {"UPDATE openwop.signing_keys"
		"   SET state = 'retired', retired_at = pg_catalog.now(),"
		"       verify_until = pg_catalog.now() OPERATOR(pg_catalog.+)"
		"                      pg_catalog.make_interval(secs => GREATEST($2, longest_ttl))"
		" WHERE kid OPERATOR(pg_catalog.=) $1"
		"   AND state OPERATOR(pg_catalog.=) 'active'", 2, {TEXTOID, INT4OID}, SPI_OK_UPDATE};
	static OwQuery revoke = {"UPDATE openwop.signing_keys"
		"   SET state = 'revoked', retired_at = COALESCE(retired_at, pg_catalog.now()),"
		"       verify_until = NULL, secret = NULL"
		" WHERE kid OPERATOR(pg_catalog.=) $1"
		"   AND state OPERATOR(pg_catalog.<>) 'revoked'", 1, {TEXTOID}, SPI_OK_UPDATE};
	char	   *kid;
	bool		immediately = PG_NARGS() > 1 && !PG_ARGISNULL(1) && PG_GETARG_BOOL(1);
	OwCall		call;
	Datum		args[2];
	uint64		n;

	ow_refuse_read_only("retire_signing_key()");
	ow_require_admin("manage signing keys");
	if (PG_ARGISNULL(0))
		ow_validation_error("kid", "kid must not be null");
	kid = text_to_cstring(PG_GETARG_TEXT_PP(0));
	/* administration: the caller is a role with the owner's privileges, no Subject */
	ow_call_enter(&call);
	args[0] = CStringGetTextDatum(kid);
	args[1] = Int32GetDatum(ow_token_max_ttl);
	n = ow_exec(immediately ? &revoke : &retire, args, NULL, false, 0);
	if (n == 0)
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "kid", kid);
		if (immediately)
			ow_raise(OW_NOT_FOUND, &d, NULL, "no signing key \"%s\" that still verifies", kid);
		ow_raise(OW_NOT_FOUND, &d, NULL, "no active signing key \"%s\"", kid);
	}
	ow_call_end(&call);
	ow_call_finish(&call);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(ow_export_signing_key);
/*
 * openwop.export_signing_key(kid) → bytea: the active key's secret as
 * stored, encrypted under this server's key-encryption passphrase, for
 * import_signing_key() on a server with the same passphrase (the shards of
 * a router): one secret on every shard, which never travels, nor sits in
 * a router's memory, in clear.  The extension's owner and superusers only.
 */
Datum
ow_export_signing_key(PG_FUNCTION_ARGS)
{
	static OwQuery q = {"SELECT secret FROM openwop.signing_keys"
		" WHERE kid OPERATOR(pg_catalog.=) $1 AND state OPERATOR(pg_catalog.=) 'active'"
		"   AND encrypted AND secret IS NOT NULL", 1, {TEXTOID}, SPI_OK_SELECT, true};
	char	   *kid;
	OwCall		call;
	Datum		args[1];
	bytea	   *sealed = NULL;
	bytea	   *result;
	bool		isnull;

	ow_require_admin("manage signing keys");
	if (PG_ARGISNULL(0))
		ow_validation_error("kid", "kid must not be null");
	kid = text_to_cstring(PG_GETARG_TEXT_PP(0));
	ow_call_enter(&call);
	args[0] = CStringGetTextDatum(kid);
	if (ow_exec(&q, args, NULL, true, 1) == 1)
		sealed = DatumGetByteaPCopy(ow_col_datum(0, 1, BYTEAOID, &isnull));
	if (sealed == NULL)
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "kid", kid);
		ow_raise(OW_NOT_FOUND, &d, NULL, "no active signing key \"%s\"", kid);
	}
	ow_call_end(&call);
	result = DatumGetByteaPCopy(PointerGetDatum(sealed));
	ow_call_finish(&call);
	PG_RETURN_BYTEA_P(result);
}

PG_FUNCTION_INFO_V1(ow_import_signing_key);
/*
 * openwop.import_signing_key(kid, sealed) → text: a new active key whose
 * secret is sealed, as export_signing_key() gave it on a server with the
 * same key-encryption passphrase; refused (55000) when it does not decrypt
 * here, or is shorter than 16 bytes.  The same kid with the same sealed
 * secret again, still active, is no error (two partitions of a router may
 * name one database).  The extension's owner and superusers only.
 */
Datum
ow_import_signing_key(PG_FUNCTION_ARGS)
{
	char	   *kid;
	bytea	   *sealed;
	bytea	   *plain;
	DecryptArgs a;
	ErrorData  *edata;

	kid = new_key_id(fcinfo, "import_signing_key()");
	if (PG_ARGISNULL(1))
		ow_validation_error("sealed", "sealed must not be null");
	sealed = PG_GETARG_BYTEA_PP(1);

	/* it must decrypt here: a key no backend could use verifies nothing */
	check_key_source();
	a.stored = sealed;
	a.plain = NULL;
	edata = ow_try_subtransaction(decrypt_secret, &a);
	if (edata && (edata->sqlerrcode == ERRCODE_QUERY_CANCELED || edata->sqlerrcode == ERRCODE_OUT_OF_MEMORY))
		ReThrowError(edata);
	if (edata)
		undecryptable(kid, edata->message);
	plain = a.plain;
	if (VARSIZE_ANY_EXHDR(plain) < 16)
		ow_validation_error("sealed", "a signing secret must be at least 16 bytes");
	explicit_bzero(VARDATA_ANY(plain), VARSIZE_ANY_EXHDR(plain));

	PG_RETURN_TEXT_P(store_new_key(kid, sealed, true));
}

PG_FUNCTION_INFO_V1(ow_seal_signing_keys);
/*
 * openwop.seal_signing_keys() → integer, for the update to 0.11.0 only:
 * every secret that 0.10.0 or before stored in clear is encrypted under
 * the key-encryption passphrase, or erased if its key no longer verifies.
 * Returns how many.  Without a passphrase configured, it raises, and the
 * update with it: no clear secret survives the update.
 */
Datum
ow_seal_signing_keys(PG_FUNCTION_ARGS)
{
	static OwQuery clear = {"SELECT kid, secret,"
		"       state OPERATOR(pg_catalog.=) 'active' OR verify_until OPERATOR(pg_catalog.>=) pg_catalog.now()"
		"  FROM openwop.signing_keys WHERE NOT encrypted AND secret IS NOT NULL"
		"   FOR UPDATE", 0, {0}, SPI_OK_SELECT, true};
	static OwQuery seal = {"UPDATE openwop.signing_keys SET secret = $2, encrypted = $2 IS NOT NULL"
		" WHERE kid OPERATOR(pg_catalog.=) $1", 2, {TEXTOID, BYTEAOID}, SPI_OK_UPDATE, true};
	OwCall		call;
	uint64		n;
	uint64		i;
	char	  **kids;
	bytea	  **secrets;
	bool	   *verifying;

	hold_secrets();
	ow_require_admin("manage signing keys");
	ow_call_enter(&call);
	n = ow_exec(&clear, NULL, NULL, false, 0);
	kids = palloc(sizeof(char *) * (n + 1));
	secrets = palloc(sizeof(bytea *) * (n + 1));
	verifying = palloc(sizeof(bool) * (n + 1));
	for (i = 0; i < n; i++)
	{
		bool		isnull;

		kids[i] = ow_col_text(i, 1);
		secrets[i] = DatumGetByteaPCopy(ow_col_datum(i, 2, BYTEAOID, &isnull));
		verifying[i] = ow_col_bool(i, 3);
	}
	for (i = 0; i < n; i++)
	{
		Datum		args[2];
		char		nulls[2] = {' ', ' '};

		args[0] = CStringGetTextDatum(kids[i]);
		if (verifying[i])
			args[1] = PointerGetDatum(pgcrypto_apply("pgp_sym_encrypt_bytea", secrets[i]));
		else
			nulls[1] = 'n';		/* it verifies nothing any more: erased */
		(void) ow_exec(&seal, args, nulls, false, 0);
		explicit_bzero(VARDATA_ANY(secrets[i]), VARSIZE_ANY_EXHDR(secrets[i]));
	}
	ow_call_end(&call);
	ow_call_finish(&call);
	PG_RETURN_INT32((int32) n);
}

/* ----------
 * Settings
 * ----------
 */

void
ow_define_keyring_settings(void)
{
	DefineCustomIntVariable("openwop.token_max_ttl",
							"Longest lifetime of any interrupt token.",
							"A retired signing key keeps verifying this long after its retirement.",
							&ow_token_max_ttl,
							604800, 1, INT_MAX,
							PGC_SUSET,
							GUC_UNIT_S,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("openwop.protect_backend_memory",
							 "Make every client backend non-dumpable once it is authenticated.",
							 "Its memory and open files then belong to root in /proc, out of reach of pg_read_server_files (tokens, answers and claims it holds), and a crash writes no core file. Turned on by a reload, it protects the sessions already open too. A backend that holds a signing secret is made so whatever this says. Turn it off to get core files of crashing backends.",
							 &ow_protect_backend_memory,
							 true,
							 PGC_SIGHUP,
							 0,
							 NULL, assign_protect_backend_memory, NULL);
	DefineCustomStringVariable("openwop.key_encryption_key_command",
							   "Command whose output is the passphrase that encrypts signing secrets at rest with pgcrypto.",
							   "Run with sh -c by a backend when it first needs the passphrase. It can fetch it from where the server's files are not (a secret manager, a root-owned file through sudo), out of reach of pg_read_server_files. Set this or openwop.key_encryption_key_file, not both.",
							   &ow_key_encryption_key_command,
							   "",
							   PGC_SUSET,
							   GUC_SUPERUSER_ONLY | GUC_NOT_IN_SAMPLE,
							   NULL, NULL, NULL);
	DefineCustomStringVariable("openwop.key_encryption_key_file",
							   "File holding the passphrase that encrypts signing secrets at rest with pgcrypto.",
							   "The file must be owned by the server's OS user and readable by nobody else, outside the data directory; the passphrase itself is never a setting, so it reaches no log and no SHOW. A role with pg_read_server_files can read the file: use openwop.key_encryption_key_command where one has it.",
							   &ow_key_encryption_key_file,
							   "",
							   PGC_SUSET,
							   GUC_SUPERUSER_ONLY | GUC_NOT_IN_SAMPLE,
							   NULL, NULL, NULL);
}
