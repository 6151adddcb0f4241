/*-------------------------------------------------------------------------
 *
 * token_format.c
 *	  The pure part of signed interrupt tokens: grammar, base64url, the
 *	  HMAC-SHA256 MAC and its constant-time comparison ("Tokens" in the
 *	  OpenWOP interrupt spec, and https://openwop.dev/spec/v2/core/identity.html).
 *
 *	  token = "ow2." alg "." kid "." payload "." mac
 *	  alg   = "hs256"
 *	  kid   = ^[A-Za-z0-9._~-]{1,128}$      (may itself contain dots)
 *	  payload = unpadded base64url of the JSON claims {"i","r","n","e","t"}
 *	  mac   = lowercase hex HMAC-SHA256(secret(kid), "hs256." kid "." payload)
 *
 * Nothing here touches backend state, so the same file builds into the
 * standalone libFuzzer harness (test/fuzz) with libpgcommon and libpgport.
 *
 *-------------------------------------------------------------------------
 */
#ifdef FRONTEND
#include "postgres_fe.h"
#else
#include "postgres.h"
#endif

#include "common/cryptohash.h"
#include "common/hmac.h"
#include "common/sha2.h"
#include "port.h"

#include "token_format.h"

static bool
b64url_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		c == '-' || c == '_';
}

static bool
lower_hex_char(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/*
 * Split a token into its segments, checking the grammar only.  The MAC
 * is the last segment and the payload the one before it, so a kid may
 * contain dots.  Never reads past len, never allocates.
 */
OwTokenStatus
ow_token_split(const char *token, size_t len, OwTokenParts *parts)
{
	const char *end = token + len;
	const char *alg;
	const char *p;
	const char *mac_dot = NULL;
	const char *payload_dot = NULL;

	memset(parts, 0, sizeof(*parts));
	if (len > OW_TOKEN_MAX_LEN)
		return OW_TOKEN_MALFORMED;
	if (len < 4 || memcmp(token, "ow2.", 4) != 0)
		return OW_TOKEN_NOT_OW2;

	/* alg: up to the next dot */
	alg = token + 4;
	for (p = alg; p < end && *p != '.'; p++)
		;
	if (p == end)
		return OW_TOKEN_MALFORMED;
	parts->alg = alg;
	parts->alg_len = p - alg;
	if (parts->alg_len != 5 || memcmp(alg, "hs256", 5) != 0)
		return OW_TOKEN_BAD_ALG;

	/* the last two dots delimit payload and mac */
	for (p = end; p > alg + parts->alg_len; p--)
	{
		if (p[-1] == '.')
		{
			if (mac_dot == NULL)
				mac_dot = p - 1;
			else
			{
				payload_dot = p - 1;
				break;
			}
		}
	}
	if (mac_dot == NULL || payload_dot == NULL || payload_dot <= alg + parts->alg_len)
		return OW_TOKEN_MALFORMED;

	parts->kid = alg + parts->alg_len + 1;
	parts->kid_len = payload_dot - parts->kid;
	parts->payload = payload_dot + 1;
	parts->payload_len = mac_dot - parts->payload;
	parts->mac = mac_dot + 1;
	parts->mac_len = end - parts->mac;

	if (parts->kid_len < 1 || parts->kid_len > OW_KID_MAX_LEN)
		return OW_TOKEN_MALFORMED;
	for (p = parts->kid; p < parts->kid + parts->kid_len; p++)
		if (!ow_unreserved_char(*p))
			return OW_TOKEN_MALFORMED;
	if (parts->payload_len < 1)
		return OW_TOKEN_MALFORMED;
	for (p = parts->payload; p < parts->payload + parts->payload_len; p++)
		if (!b64url_char(*p))
			return OW_TOKEN_MALFORMED;
	if (parts->mac_len != OW_MAC_HEX_LEN)
		return OW_TOKEN_MALFORMED;
	for (p = parts->mac; p < parts->mac + parts->mac_len; p++)
		if (!lower_hex_char(*p))
			return OW_TOKEN_MALFORMED;
	return OW_TOKEN_OK;
}

static const char b64url_alphabet[] =
"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Unpadded base64url of src into dst; returns the length, or -1 if dstlen is too small. */
int
ow_b64url_encode(const unsigned char *src, size_t len, char *dst, size_t dstlen)
{
	size_t		need = (len / 3) * 4 + (len % 3 ? len % 3 + 1 : 0);
	size_t		i;
	size_t		o = 0;

	if (need + 1 > dstlen)
		return -1;
	for (i = 0; i + 2 < len; i += 3)
	{
		uint32		v = ((uint32) src[i] << 16) | ((uint32) src[i + 1] << 8) | src[i + 2];

		dst[o++] = b64url_alphabet[(v >> 18) & 63];
		dst[o++] = b64url_alphabet[(v >> 12) & 63];
		dst[o++] = b64url_alphabet[(v >> 6) & 63];
		dst[o++] = b64url_alphabet[v & 63];
	}
	if (len - i == 1)
	{
		uint32		v = (uint32) src[i] << 16;

		dst[o++] = b64url_alphabet[(v >> 18) & 63];
		dst[o++] = b64url_alphabet[(v >> 12) & 63];
	}
	else if (len - i == 2)
	{
		uint32		v = ((uint32) src[i] << 16) | ((uint32) src[i + 1] << 8);

		dst[o++] = b64url_alphabet[(v >> 18) & 63];
		dst[o++] = b64url_alphabet[(v >> 12) & 63];
		dst[o++] = b64url_alphabet[(v >> 6) & 63];
	}
	dst[o] = '\0';
	return (int) o;
}

static int
b64url_value(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '-')
		return 62;
	if (c == '_')
		return 63;
	return -1;
}

/*
 * Decode strict unpadded base64url: only the alphabet, no padding, a
 * length that is not 1 mod 4, and zero unused trailing bits (so every
 * byte string has exactly one encoding).  Returns the decoded length, or
 * -1 when the input is not canonical base64url or dst is too small.
 */
int
ow_b64url_decode(const char *src, size_t len, unsigned char *dst, size_t dstlen)
{
	size_t		i;
	size_t		o = 0;
	uint32		acc = 0;
	int			bits = 0;

	if (len % 4 == 1 || (len / 4) * 3 + (len % 4 ? len % 4 - 1 : 0) > dstlen)
		return -1;
	for (i = 0; i < len; i++)
	{
		int			v = b64url_value(src[i]);

		if (v < 0)
			return -1;
		acc = (acc << 6) | (uint32) v;
		bits += 6;
		if (bits >= 8)
		{
			bits -= 8;
			dst[o++] = (unsigned char) ((acc >> bits) & 0xFF);
		}
	}
	if (bits > 0 && (acc & ((1u << bits) - 1)) != 0)
		return -1;				/* non-canonical: unused bits set */
	return (int) o;
}

/*
 * The MAC of a token: lowercase hex HMAC-SHA256 over "hs256." kid "."
 * payload.  Writes OW_MAC_HEX_LEN characters and a NUL into hex; returns
 * false if the HMAC could not be computed.
 */
bool
ow_token_mac(const unsigned char *secret, size_t secret_len,
			 const char *kid, size_t kid_len, const char *payload, size_t payload_len,
			 char *hex)
{
	static const char digits[] = "0123456789abcdef";
	pg_hmac_ctx *ctx = pg_hmac_create(PG_SHA256);
	uint8		mac[PG_SHA256_DIGEST_LENGTH];
	bool		ok;
	int			i;

	ok = ctx != NULL &&
		pg_hmac_init(ctx, secret, secret_len) == 0 &&
		pg_hmac_update(ctx, (const uint8 *) "hs256.", 6) == 0 &&
		pg_hmac_update(ctx, (const uint8 *) kid, kid_len) == 0 &&
		pg_hmac_update(ctx, (const uint8 *) ".", 1) == 0 &&
		pg_hmac_update(ctx, (const uint8 *) payload, payload_len) == 0 &&
		pg_hmac_final(ctx, mac, sizeof(mac)) == 0;
	if (ctx)
		pg_hmac_free(ctx);
	if (!ok)
		return false;
	for (i = 0; i < PG_SHA256_DIGEST_LENGTH; i++)
	{
		hex[2 * i] = digits[mac[i] >> 4];
		hex[2 * i + 1] = digits[mac[i] & 15];
	}
	hex[OW_MAC_HEX_LEN] = '\0';
	return true;
}

/* Constant-time equality of two MACs in hex (both OW_MAC_HEX_LEN long). */
bool
ow_token_mac_equal(const char *a, const char *b)
{
	return timingsafe_bcmp(a, b, OW_MAC_HEX_LEN) == 0;
}
