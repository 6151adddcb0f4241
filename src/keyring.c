/*-------------------------------------------------------------------------
 *
 * keyring.c
 *	  The signing keys of interrupt tokens: add_signing_key(),
 *	  retire_signing_key(), the secrets for minting and verifying, and
 *	  their optional encryption at rest with pgcrypto under a passphrase
 *	  read from openwop.key_encryption_key_file.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "openwop.h"
#include "token_format.h"

#include <sys/stat.h>
#include <unistd.h>

#include "catalog/pg_type.h"
#include "nodes/value.h"
#include "parser/parse_func.h"
#include "storage/fd.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#define OW_KEK_MAX_LEN 1024

/* File holding the passphrase that encrypts signing secrets at rest (pgcrypto). */
static char *ow_key_encryption_key_file = NULL;

/* Longest lifetime of any token, in seconds: a retired key verifies this long. */
int			ow_token_max_ttl = 604800;

/* The Oid of pgcrypto's name(bytea, text); errors if pgcrypto is absent. */
static Oid
pgcrypto_function(const char *name)
{
	Oid			argtypes[2] = {BYTEAOID, TEXTOID};
	char	   *schema;

	if (SPI_execute("SELECT n.nspname FROM pg_catalog.pg_extension e"
					"  JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace"
					" WHERE e.extname OPERATOR(pg_catalog.=) 'pgcrypto'", true, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("openwop.key_encryption_key_file is set but the pgcrypto extension is not installed"),
				 errhint("CREATE EXTENSION pgcrypto, or clear openwop.key_encryption_key_file.")));
	schema = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	return LookupFuncName(list_make2(makeString(schema), makeString(pstrdup(name))), 2, argtypes, false);
}

/* Is a key-encryption key configured? */
static bool
kek_configured(void)
{
	return ow_key_encryption_key_file != NULL && ow_key_encryption_key_file[0] != '\0';
}

/*
 * The key-encryption passphrase, read from openwop.key_encryption_key_file
 * whenever it is needed (adding a key, a backend's first use of an
 * encrypted one).  It is never a setting, so no reload logs it and no SHOW
 * or pg_settings shows it; it travels to pgcrypto as a statement parameter,
 * which pg_stat_activity does not show.  Like ssl_key_file, the file must
 * belong to the server's OS user and be readable by nobody else.  Errors
 * name the file, never its content.
 */
static char *
key_encryption_key(void)
{
	const char *path = ow_key_encryption_key_file;
	struct stat st;
	FILE	   *fp;
	char	   *buf = palloc(OW_KEK_MAX_LEN + 2);
	size_t		n;

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
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	if (n > 0 && buf[n - 1] == '\r')
		n--;
	buf[n] = '\0';
	if (n == 0 || n > OW_KEK_MAX_LEN || strlen(buf) != n)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("key-encryption key file \"%s\" must hold one passphrase of 1 to %d bytes", path, OW_KEK_MAX_LEN)));
	return buf;
}

/*
 * pgp_sym_encrypt_bytea / pgp_sym_decrypt_bytea of data under the
 * key-encryption key, called through fmgr, not SPI: a statement would put
 * the passphrase, and the decrypted secret the planner folds out of an
 * immutable call, into a plan that debug_print_plan shows to any session.
 */
static bytea *
pgcrypto_apply(const char *fn, bytea *data)
{
	Oid			fnoid = pgcrypto_function(fn);
	char	   *kek = key_encryption_key();
	text	   *passphrase = cstring_to_text(kek);
	bytea	   *result;

	explicit_bzero(kek, strlen(kek));
	result = DatumGetByteaPCopy(OidFunctionCall2(fnoid, PointerGetDatum(data), PointerGetDatum(passphrase)));
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
	bytea	   *plain;
} SecretEntry;

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

bytea *
ow_plain_secret(const char *kid, bytea *stored, bool encrypted)
{
	SecretEntry *entry;
	DecryptArgs a;
	ErrorData  *edata;
	bool		found;

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
		return entry->plain;

	if (!kek_configured())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("signing key \"%s\" is encrypted but openwop.key_encryption_key_file is not set", kid),
				 errhint("Set openwop.key_encryption_key_file to a file holding the passphrase the key was added under.")));

	/* decrypt first: the cache changes only once the plain secret exists */
	a.stored = stored;
	a.plain = NULL;
	edata = ow_try_subtransaction(decrypt_secret, &a);
	if (edata)
	{
		if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED || edata->sqlerrcode == ERRCODE_OUT_OF_MEMORY)
			ReThrowError(edata);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("signing key \"%s\" cannot be decrypted with the passphrase in openwop.key_encryption_key_file", kid),
				 errdetail_internal("%s", edata->message),
				 errhint("Put the passphrase the key was added under in openwop.key_encryption_key_file, or retire the key.")));
	}

	entry = hash_search(secret_cache, kid, HASH_ENTER, &found);
	if (found)
	{
		pfree(entry->stored);
		pfree(entry->plain);
	}
	entry->stored = MemoryContextAlloc(TopMemoryContext, VARSIZE_ANY(stored));
	memcpy(entry->stored, stored, VARSIZE_ANY(stored));
	entry->plain = MemoryContextAlloc(TopMemoryContext, VARSIZE_ANY(a.plain));
	memcpy(entry->plain, a.plain, VARSIZE_ANY(a.plain));
	return entry->plain;
}

/*
 * The secret of kid if this host holds it for verification: an active key,
 * or a retired one whose tokens may still be unexpired.  NULL otherwise.
 */
bytea *
ow_verification_secret(const char *kid)
{
	static SPIPlanPtr plan = NULL;
	Datum		args[1];
	bool		isnull;
	bytea	   *stored;
	bool		encrypted;

	if (plan == NULL)
	{
		Oid			types[1] = {TEXTOID};

		plan = ow_prepare("SELECT secret, encrypted FROM openwop.signing_keys"
						  " WHERE kid OPERATOR(pg_catalog.=) $1"
						  "   AND (state OPERATOR(pg_catalog.=) 'active'"
						  "        OR verify_until OPERATOR(pg_catalog.>=) pg_catalog.now())", 1, types);
	}
	args[0] = CStringGetTextDatum(kid);
	if (SPI_execute_plan(plan, args, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read signing key \"%s\"", kid);
	if (SPI_processed == 0)
		return NULL;
	stored = DatumGetByteaPCopy(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	encrypted = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull));
	return ow_plain_secret(kid, stored, encrypted);
}

/*
 * Remember the longest lifetime a key has signed for, so that retiring it
 * keeps it verifying until its last token expired even if token_max_ttl
 * was lowered since.  Written only when exceeded: rarely.
 */
void
ow_note_lifetime(const char *kid, int32 longest_ttl, int32 lifetime)
{
	static SPIPlanPtr plan = NULL;
	Datum		args[2];

	if (lifetime <= longest_ttl)
		return;
	if (plan == NULL)
	{
		Oid			types[2] = {TEXTOID, INT4OID};

		plan = ow_prepare("UPDATE openwop.signing_keys SET longest_ttl = $2"
						  " WHERE kid OPERATOR(pg_catalog.=) $1"
						  "   AND longest_ttl OPERATOR(pg_catalog.<) $2", 2, types);
	}
	args[0] = CStringGetTextDatum(kid);
	args[1] = Int32GetDatum(lifetime);
	if (SPI_execute_plan(plan, args, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not record the lifetime of signing key \"%s\"", kid);
}

PG_FUNCTION_INFO_V1(ow_add_signing_key);
/*
 * openwop.add_signing_key(kid, secret) → text: a new active key.  Without
 * a secret, 32 bytes from pg_strong_random.  With
 * openwop.key_encryption_key_file set, the secret is stored encrypted with
 * pgcrypto.
 */
Datum
ow_add_signing_key(PG_FUNCTION_ARGS)
{
	static SPIPlanPtr plan = NULL;
	char	   *kid;
	bytea	   *secret;
	bool		encrypted = false;
	OwPriv		priv;
	Datum		args[3];
	size_t		i;

	ow_require_admin("manage signing keys");
	if (PG_ARGISNULL(0))
		ow_validation_error("kid", "kid must not be null");
	kid = text_to_cstring(PG_GETARG_TEXT_PP(0));
	for (i = 0; kid[i]; i++)
		if (!((kid[i] >= 'A' && kid[i] <= 'Z') || (kid[i] >= 'a' && kid[i] <= 'z') ||
			  (kid[i] >= '0' && kid[i] <= '9') || strchr("._~-", kid[i])))
			break;
	if (kid[i] != '\0' || i < 1 || i > OW_KID_MAX_LEN)
		ow_validation_error("kid", "\"%s\" is not a key id (1 to 128 characters of A-Z a-z 0-9 . _ ~ -)", ow_echo(kid));
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

	SPI_connect();
	ow_become_owner(&priv);
	if (kek_configured())
	{
		secret = pgcrypto_apply("pgp_sym_encrypt_bytea", secret);
		encrypted = true;
	}
	if (plan == NULL)
	{
		Oid			types[3] = {TEXTOID, BYTEAOID, BOOLOID};

		plan = ow_prepare_secret("INSERT INTO openwop.signing_keys (kid, secret, encrypted)"
								 " VALUES ($1, $2, $3) ON CONFLICT DO NOTHING", 3, types);
	}
	args[0] = CStringGetTextDatum(kid);
	args[1] = PointerGetDatum(secret);
	args[2] = BoolGetDatum(encrypted);
	if (SPI_execute_plan(plan, args, NULL, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not add signing key \"%s\"", kid);
	if (SPI_processed == 0)
		ow_validation_error("kid", "signing key \"%s\" already exists; retire it and add a key with a new kid", kid);
	ow_restore_user(&priv);
	SPI_finish();
	PG_RETURN_TEXT_P(cstring_to_text(kid));
}

PG_FUNCTION_INFO_V1(ow_retire_signing_key);
/*
 * openwop.retire_signing_key(kid): the key stops minting at once and keeps
 * verifying for the longer of openwop.token_max_ttl and the longest
 * lifetime it ever signed, after which every token it signed has expired.
 */
Datum
ow_retire_signing_key(PG_FUNCTION_ARGS)
{
	static SPIPlanPtr plan = NULL;
	char	   *kid;
	OwPriv		priv;
	Datum		args[2];

	ow_require_admin("manage signing keys");
	if (PG_ARGISNULL(0))
		ow_validation_error("kid", "kid must not be null");
	kid = text_to_cstring(PG_GETARG_TEXT_PP(0));
	SPI_connect();
	ow_become_owner(&priv);
	if (plan == NULL)
	{
		Oid			types[2] = {TEXTOID, INT4OID};

		plan = ow_prepare("UPDATE openwop.signing_keys"
						  "   SET state = 'retired', retired_at = pg_catalog.now(),"
						  "       verify_until = pg_catalog.now() OPERATOR(pg_catalog.+)"
						  "                      pg_catalog.make_interval(secs => GREATEST($2, longest_ttl))"
						  " WHERE kid OPERATOR(pg_catalog.=) $1"
						  "   AND state OPERATOR(pg_catalog.=) 'active'", 2, types);
	}
	args[0] = CStringGetTextDatum(kid);
	args[1] = Int32GetDatum(ow_token_max_ttl);
	if (SPI_execute_plan(plan, args, NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not retire signing key \"%s\"", kid);
	if (SPI_processed == 0)
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "kid", kid);
		ow_raise(OW_NOT_FOUND, &d, NULL, "no active signing key \"%s\"", kid);
	}
	ow_restore_user(&priv);
	SPI_finish();
	PG_RETURN_VOID();
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
	DefineCustomStringVariable("openwop.key_encryption_key_file",
							   "File holding the passphrase that encrypts signing secrets at rest with pgcrypto.",
							   "The file must be owned by the server's OS user and readable by nobody else; the passphrase itself is never a setting, so it reaches no log and no SHOW.",
							   &ow_key_encryption_key_file,
							   "",
							   PGC_SUSET,
							   GUC_SUPERUSER_ONLY | GUC_NOT_IN_SAMPLE,
							   NULL, NULL, NULL);
}
