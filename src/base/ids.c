/*-------------------------------------------------------------------------
 *
 * ids.c
 *	  The id grammars of OpenWOP ("Identifiers" in the OpenWOP interrupt
 *	  spec): tenants, tenant-bound ids and their wire form, author-chosen
 *	  ids, node type ids, subject ids and refs; and fresh opaque ids.
 *
 * Pure functions of their input (and the database encoding): no table is
 * read, so a malformed or foreign id is refused before anything else.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "ipc/ipc.h"
#include "base/base.h"
#include "base/token_format.h"

#include "mb/pg_wchar.h"

/* Is the character at p white space, as JSON Schema's \s reads it? */
static bool
is_space_at(const unsigned char *p, bool utf8)
{
	pg_wchar	c;

	if (*p == ' ' || (*p >= 0x09 && *p <= 0x0d))
		return true;
	if (*p < 0x80 || !utf8)
		return false;
	c = utf8_to_unicode(p);
	return c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 ||
		c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000 || c == 0xfeff;
}

/* s is min to max characters with no white space, and no "/" when no_slash. */
static bool
no_space_span(const char *s, int min, int max, bool no_slash)
{
	const unsigned char *p = (const unsigned char *) s;
	bool		utf8 = GetDatabaseEncoding() == PG_UTF8;
	int			chars = 0;

	while (*p)
	{
		if (is_space_at(p, utf8) || (no_slash && *p == '/'))
			return false;
		p += utf8 ? pg_utf_mblen(p) : pg_mblen((const char *) p);
		chars++;
	}
	return chars >= min && chars <= max;
}

/* subjectId: ^[^\s/]{1,256}$ */
bool
ow_valid_subject_id(const char *s)
{
	return no_space_span(s, 1, 256, true);
}

/*
 * A ref that names a subject (an approversList entry, a group member): a
 * subjectId, or "<issuer>/<subjectId>".  A subjectId has no "/", so the
 * last "/" splits a qualified ref one way only.
 */
bool
ow_valid_subject_ref(const char *s)
{
	const char *slash = strrchr(s, '/');

	if (slash == NULL)
		return ow_valid_subject_id(s);
	return slash > s && slash - s <= 1024 && no_space_span(s, 1, 1024 + 1 + 256, false) &&
		ow_valid_subject_id(slash + 1);
}

/* issuer: ^\S+$, 1 to 1024 characters */
bool
ow_valid_issuer(const char *s)
{
	return no_space_span(s, 1, 1024, false);
}


/* s[0..len) is made of unreserved characters only, and len is in [min, max]. */
static bool
unreserved_span(const char *s, size_t len, size_t min, size_t max)
{
	size_t		i;

	if (len < min || len > max)
		return false;
	for (i = 0; i < len; i++)
		if (!ow_unreserved_char(s[i]))
			return false;
	return true;
}

/* Tenant id grammar: ^(anon:)?[A-Za-z0-9._~-]{1,128}$ */
bool
ow_valid_tenant(const char *tenant)
{
	if (strncmp(tenant, "anon:", 5) == 0)
		tenant += 5;
	return unreserved_span(tenant, strlen(tenant), 1, OW_TENANT_MAX);
}

/* Opaque segment of a tenant-bound id: ^[A-Za-z0-9._~-]{16,128}$ */
bool
ow_valid_opaque(const char *s)
{
	return unreserved_span(s, strlen(s), 16, 128);
}

/* Idempotency-Key: ^[A-Za-z0-9._~-]{22,128}$ (at least 128 bits of entropy). */
bool
ow_valid_idempotency_key(const char *key)
{
	return unreserved_span(key, strlen(key), 22, 128);
}

/* Signing key id (kid): ^[A-Za-z0-9._~-]{1,128}$ */
bool
ow_valid_key_id(const char *s)
{
	return unreserved_span(s, strlen(s), 1, OW_KID_MAX_LEN);
}

/* Author-chosen ids (nodeId, workflowId, agentId): ^[A-Za-z0-9._~:-]{1,128}$ */
bool
ow_valid_author_id(const char *s)
{
	size_t		len = strlen(s);
	size_t		i;

	if (len < 1 || len > 128)
		return false;
	for (i = 0; i < len; i++)
		if (!ow_unreserved_char(s[i]) && s[i] != ':')
			return false;
	return true;
}

static bool
is_lower(char c)
{
	return c >= 'a' && c <= 'z';
}

static bool
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Node type id: ^[a-z][a-z0-9_-]*(\.[a-z][a-zA-Z0-9_-]*)+$, at most 256 long */
bool
ow_valid_type_id(const char *s)
{
	const char *p = s;
	int			segments = 0;

	if (strlen(s) > 256 || !is_lower(*p))
		return false;
	for (p++; is_lower(*p) || is_digit(*p) || *p == '_' || *p == '-'; p++)
		;
	while (*p == '.')
	{
		p++;
		if (!is_lower(*p))
			return false;
		for (p++; is_lower(*p) || (*p >= 'A' && *p <= 'Z') || is_digit(*p) ||
			 *p == '_' || *p == '-'; p++)
			;
		segments++;
	}
	return *p == '\0' && segments > 0;
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Bring a run id into its canonical "tenant/opaque" form and check it.
 *
 * On the wire an id is one path segment, with "/" projected as "~2F" (or
 * percent-encoded "%2F"); an id without a "/" is decoded first.  A malformed
 * id is a 400; a well-formed id of another tenant is 403 id_tenant_mismatch,
 * decided from the string alone so nothing about the other tenant leaks.
 */
char *
ow_normalize_run_id(const char *input, const char *caller_tenant)
{
	return ow_normalize_id(input, caller_tenant, "runId", "run");
}

/*
 * input in its canonical form "tenant/opaque", its tenant in *tenant; NULL
 * when it is malformed.  A UUID (an interrupt's, when uuid_tenant is not
 * NULL) names the interrupt in uuid_tenant.
 */
static char *
canonical_id(const char *input, const char *uuid_tenant, char **tenant)
{
	char	   *id;
	const char *slash;

	if (uuid_tenant != NULL && (id = ow_uuid_opaque(input)) != NULL)
	{
		*tenant = pstrdup(uuid_tenant);
		return psprintf("%s/%s", uuid_tenant, id);
	}
	if (strchr(input, '/') == NULL)
	{
		const char *p = input;
		char	   *q;

		id = q = palloc(strlen(input) + 1);
		while (*p)
		{
			if (*p == '~' || *p == '%')
			{
				char		c;

				/* an escape must be two hex digits naming "/" or an id character */
				if (hexval(p[1]) < 0 || hexval(p[2]) < 0 ||
					((c = (char) (hexval(p[1]) * 16 + hexval(p[2]))) != '/' && !ow_unreserved_char(c)))
					return NULL;
				*q++ = c;
				p += 3;
			}
			else
				*q++ = *p++;
		}
		*q = '\0';
	}
	else
		id = pstrdup(input);

	slash = strchr(id, '/');
	if (slash == NULL || strchr(slash + 1, '/') != NULL ||
		!ow_valid_opaque(slash + 1) ||
		!ow_valid_tenant((*tenant = pnstrdup(id, slash - id))))
		return NULL;
	return id;
}

/*
 * The same for any tenant-bound id (runs, interrupts); field and what name
 * it in errors.  An interrupt is named by its UUID too (the FlowDrop
 * entry's id), in the caller's tenant.
 */
char *
ow_normalize_id(const char *input, const char *caller_tenant, const char *field, const char *what)
{
	char	   *tenant;
	char	   *id = canonical_id(input, strcmp(what, "interrupt") == 0 ? caller_tenant : NULL, &tenant);

	if (id == NULL)
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, "field", field);
		ow_details_str(&d, field, input);
		ow_raise(OW_VALIDATION_ERROR, &d,
				 psprintf("%s %s id is \"<tenant>/<opaque>\": the tenant, a slash, then 16 to 128 characters of A-Z a-z 0-9 . _ ~ -.",
						  strchr("aeiou", what[0]) ? "An" : "A", what),
				 "\"%s\" is not a valid %s id", ow_echo(input), what);
	}

	if (strcmp(tenant, caller_tenant) != 0)
	{
		OwDetails	d;

		ow_details_init(&d);
		ow_details_str(&d, field, id);
		ow_details_str(&d, "tenant", caller_tenant);
		ow_raise(OW_ID_TENANT_MISMATCH, &d, NULL,
				 "%s \"%s\" does not belong to tenant \"%s\"", what, id, caller_tenant);
	}
	return id;
}

/*
 * An interrupt id of caller_tenant in its canonical form, or NULL when
 * input is malformed or names another tenant: what ow_normalize_id would
 * answer, without refusing.
 */
char *
ow_canonical_interrupt_id(const char *input, const char *caller_tenant)
{
	char	   *tenant;
	char	   *id = canonical_id(input, caller_tenant, &tenant);

	return id != NULL && strcmp(tenant, caller_tenant) == 0 ? id : NULL;
}

/* Unpadded base64url of len bytes (RFC 4648 section 5). */
char *
ow_base64url(const char *data, int len)
{
	int			size = (len + 2) / 3 * 4 + 1;
	char	   *out = palloc(size);

	if (ow_b64url_encode((const unsigned char *) data, len, out, size) < 0)
		elog(ERROR, "could not encode base64url");
	return out;
}

static void
strong_random(char *raw, int nbytes)
{
	if (!pg_strong_random(raw, nbytes))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not generate random bytes")));
}

/*
 * nbytes of strong randomness as unpadded base64url: never contains "~",
 * so it is a valid opaque id segment once it is at least 16 characters.
 */
char *
ow_mint_opaque(int nbytes)
{
	char		raw[64];

	Assert(nbytes > 0 && nbytes <= (int) sizeof(raw));
	strong_random(raw, nbytes);
	return ow_base64url(raw, nbytes);
}

/*
 * The opaque segment of a fresh interrupt id: a random (version 4) UUID's
 * 16 bytes as base64url, so that the id FlowDrop publishes (INT-22: the
 * interrupt's UUID) is the same value, written the other way, and needs
 * neither a column nor an index.
 */
char *
ow_mint_interrupt_opaque(void)
{
	char		raw[OW_UUID_BYTES];

	strong_random(raw, sizeof(raw));
	raw[6] = (char) ((raw[6] & 0x0f) | 0x40);	/* version 4 */
	raw[8] = (char) ((raw[8] & 0x3f) | 0x80);	/* the RFC 9562 variant */
	return ow_base64url(raw, sizeof(raw));
}

/*
 * The UUID of an interrupt id "<tenant>/<opaque>": its opaque segment's 16
 * bytes, written 8-4-4-4-12 in lower-case hex into out (37 bytes).  False
 * when the segment is not 16 bytes of base64url, which no interrupt id
 * this extension minted is.
 */
bool
ow_interrupt_uuid(const char *interrupt_id, char *out)
{
	static const char digits[] = "0123456789abcdef";
	const char *opaque = strrchr(interrupt_id, '/');
	unsigned char raw[OW_UUID_BYTES + 2];
	int			i;

	opaque = opaque ? opaque + 1 : interrupt_id;
	if (strlen(opaque) != 22 ||
		ow_b64url_decode(opaque, 22, raw, sizeof(raw)) != OW_UUID_BYTES)
		return false;
	for (i = 0; i < OW_UUID_BYTES; i++)
	{
		if (i == 4 || i == 6 || i == 8 || i == 10)
			*out++ = '-';
		*out++ = digits[raw[i] >> 4];
		*out++ = digits[raw[i] & 0x0f];
	}
	*out = '\0';
	return true;
}

/*
 * The opaque segment an interrupt's UUID stands for (8-4-4-4-12 hex, either
 * case), or NULL when input is no UUID.
 */
char *
ow_uuid_opaque(const char *input)
{
	char		raw[OW_UUID_BYTES];
	int			i;
	int			n = 0;

	if (strlen(input) != 36)
		return NULL;
	for (i = 0; i < 36; i++)
	{
		if (i == 8 || i == 13 || i == 18 || i == 23)
		{
			if (input[i] != '-')
				return NULL;
			continue;
		}
		if (hexval(input[i]) < 0 || hexval(input[i + 1]) < 0)
			return NULL;
		raw[n++] = (char) (hexval(input[i]) * 16 + hexval(input[i + 1]));
		i++;
	}
	return ow_base64url(raw, OW_UUID_BYTES);
}
