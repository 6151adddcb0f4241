/*-------------------------------------------------------------------------
 *
 * token_format.h
 *	  Signed interrupt tokens, the pure part (token_format.c): grammar, base64url,
 *	  MAC.  Free of backend state so the fuzz harness can link it alone.
 *
 *-------------------------------------------------------------------------
 */
#ifndef OW_TOKEN_H
#define OW_TOKEN_H

/*
 * The unreserved characters of RFC 3986 (A-Z a-z 0-9 . _ ~ -): what tenant
 * ids, opaque id segments and key ids are made of.  The one definition of
 * that grammar, here because the standalone token code needs it too.
 */
static inline bool
ow_unreserved_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		c == '.' || c == '_' || c == '~' || c == '-';
}

#define OW_TOKEN_MAX_LEN 4096
#define OW_KID_MAX_LEN 128
#define OW_MAC_HEX_LEN 64

typedef enum OwTokenStatus
{
	OW_TOKEN_OK,
	OW_TOKEN_NOT_OW2,			/* no "ow2." prefix (a v1 token, refused) */
	OW_TOKEN_BAD_ALG,			/* an algorithm this host does not advertise */
	OW_TOKEN_MALFORMED			/* outside the grammar */
} OwTokenStatus;

typedef struct OwTokenParts
{
	const char *alg;
	size_t		alg_len;
	const char *kid;
	size_t		kid_len;
	const char *payload;
	size_t		payload_len;
	const char *mac;
	size_t		mac_len;
} OwTokenParts;

extern OwTokenStatus ow_token_split(const char *token, size_t len, OwTokenParts *parts);
extern int	ow_b64url_encode(const unsigned char *src, size_t len, char *dst, size_t dstlen);
extern int	ow_b64url_decode(const char *src, size_t len, unsigned char *dst, size_t dstlen);
extern bool ow_token_mac(const unsigned char *secret, size_t secret_len,
						 const char *kid, size_t kid_len, const char *payload, size_t payload_len,
						 char *hex);
extern bool ow_token_mac_equal(const char *a, const char *b);

#endif							/* OW_TOKEN_H */
