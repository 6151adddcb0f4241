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
	static OwQuery q = {"SELECT n.nspname FROM pg_catalog.pg_extension e"
		"  JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace"
		" WHERE e.extname OPERATOR(pg_catalog.=) 'pgcrypto'", 0, {0}, SPI_OK_SELECT};
	Oid			argtypes[2] = {BYTEAOID, TEXTOID};
	char	   *schema;

	if (ow_exec(&q, NULL, NULL, true, 1) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("openwop.key_encryption_key_file is set but the pgcrypto extension is not installed"),
				 errhint("CREATE EXTENSION pgcrypto, or clear openwop.key_encryption_key_file.")));
	schema = ow_col_text(0, 1);
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

/* The plain secret of kid, stored as stored (encrypted or not). */
static bytea *
plain_secret(const char *kid, bytea *stored, bool encrypted)
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
				 errdetail_log("%s", edata->message),	/* pgcrypto's words: the server log only */
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
	static OwQuery q = {"SELECT secret, encrypted FROM openwop.signing_keys"
		" WHERE kid OPERATOR(pg_catalog.=) $1"
		"   AND (state OPERATOR(pg_catalog.=) 'active'"
		"        OR verify_until OPERATOR(pg_catalog.>=) pg_catalog.now())",
	1, {TEXTOID}, SPI_OK_SELECT};
	Datum		args[1];
	bool		isnull;

	args[0] = CStringGetTextDatum(kid);
	if (ow_exec(&q, args, NULL, true, 1) == 0)
		return NULL;
	return plain_secret(kid, DatumGetByteaPCopy(ow_col_datum(0, 1, &isnull)), ow_col_bool(0, 2));
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
	stored = DatumGetByteaPCopy(ow_col_datum(0, 2, &isnull));
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
	static OwQuery q = {"INSERT INTO openwop.signing_keys (kid, secret, encrypted)"
		" VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
	3, {TEXTOID, BYTEAOID, BOOLOID}, SPI_OK_INSERT, true};
	char	   *kid;
	bytea	   *secret;
	bool		encrypted = false;
	OwCall		call;
	Datum		args[3];
	text	   *result;

	ow_refuse_read_only("add_signing_key()");
	ow_require_admin("manage signing keys");
	if (PG_ARGISNULL(0))
		ow_validation_error("kid", "kid must not be null");
	kid = text_to_cstring(PG_GETARG_TEXT_PP(0));
	if (!ow_valid_key_id(kid))
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

	/* administration: the caller is a role with the owner's privileges, no Subject */
	ow_call_enter(&call);
	if (kek_configured())
	{
		secret = pgcrypto_apply("pgp_sym_encrypt_bytea", secret);
		encrypted = true;
	}
	args[0] = CStringGetTextDatum(kid);
	args[1] = PointerGetDatum(secret);
	args[2] = BoolGetDatum(encrypted);
	if (ow_exec(&q, args, NULL, false, 0) == 0)
		ow_validation_error("kid", "signing key \"%s\" already exists; retire it and add a key with a new kid", kid);
	ow_call_end(&call);
	result = cstring_to_text(kid);
	ow_call_finish(&call);
	PG_RETURN_TEXT_P(result);
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
	static OwQuery q = {"UPDATE openwop.signing_keys"
		"   SET state = 'retired', retired_at = pg_catalog.now(),"
		"       verify_until = pg_catalog.now() OPERATOR(pg_catalog.+)"
		"                      pg_catalog.make_interval(secs => GREATEST($2, longest_ttl))"
		" WHERE kid OPERATOR(pg_catalog.=) $1"
		"   AND state OPERATOR(pg_catalog.=) 'active'", 2, {TEXTOID, INT4OID}, SPI_OK_UPDATE};
	char	   *kid;
	OwCall		call;
	Datum		args[2];

	ow_refuse_read_only("retire_signing_key()");
	ow_require_admin("manage signing keys");
	if (PG_ARGISNULL(0))
		ow_validation_error("kid", "kid must not be null");
	kid = text_to_cstring(PG_GETARG_TEXT_PP(0));
	/* administration: the caller is a role with the owner's privileges, no Subject */
	ow_call_enter(&call);
	args[0] = CStringGetTextDatum(kid);
	args[1] = Int32GetDatum(ow_token_max_ttl);
	if (ow_exec(&q, args, NULL, false, 0) == 0)
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "kid", kid);
		ow_raise(OW_NOT_FOUND, &d, NULL, "no active signing key \"%s\"", kid);
	}
	ow_call_end(&call);
	ow_call_finish(&call);
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
