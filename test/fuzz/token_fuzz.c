/*
 * token_fuzz.c — libFuzzer target for src/base/token_format.c: the token parser, the
 * MAC verifier and base64url, under ASan and UBSan.  Invariants checked:
 * splitting never reads outside the input; a split token's segments obey
 * the grammar; a MAC recomputed over the parsed segments verifies; base64url
 * decoding is strict and re-encodes to the same text.
 */
#include "postgres_fe.h"

#include "base/token_format.h"

static const unsigned char secret[] = "fuzz-secret-0123456789";

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	OwTokenParts parts;
	unsigned char dec[OW_TOKEN_MAX_LEN];
	char		enc[OW_TOKEN_MAX_LEN * 2];
	char		mac[OW_MAC_HEX_LEN + 1];
	char		given[OW_MAC_HEX_LEN + 1];
	int			n;

	/* the parser on arbitrary bytes (not NUL-terminated: it must honour size) */
	if (ow_token_split((const char *) data, size, &parts) == OW_TOKEN_OK)
	{
		if (parts.mac_len != OW_MAC_HEX_LEN || parts.kid_len < 1 || parts.payload_len < 1)
			__builtin_trap();
		if (!ow_token_mac(secret, sizeof(secret) - 1, parts.kid, parts.kid_len,
						  parts.payload, parts.payload_len, mac))
			__builtin_trap();
		memcpy(given, parts.mac, OW_MAC_HEX_LEN);
		given[OW_MAC_HEX_LEN] = '\0';
		(void) ow_token_mac_equal(mac, given);
		if (!ow_token_mac_equal(mac, mac))
			__builtin_trap();
		n = ow_b64url_decode(parts.payload, parts.payload_len, dec, sizeof(dec));
		if (n >= 0)
		{
			int			m = ow_b64url_encode(dec, n, enc, sizeof(enc));

			/* strict decoding: the canonical encoding is the input itself */
			if (m != (int) parts.payload_len || memcmp(enc, parts.payload, m) != 0)
				__builtin_trap();
		}
	}

	/* base64url on arbitrary bytes, both ways */
	n = ow_b64url_decode((const char *) data, size, dec, sizeof(dec));
	if (n >= 0)
	{
		int			m = ow_b64url_encode(dec, n, enc, sizeof(enc));

		if (m != (int) size || memcmp(enc, data, size) != 0)
			__builtin_trap();
	}
	if (size <= OW_TOKEN_MAX_LEN)
	{
		n = ow_b64url_encode(data, size, enc, sizeof(enc));
		if (n < 0 || ow_b64url_decode(enc, n, dec, sizeof(dec)) != (int) size ||
			memcmp(dec, data, size) != 0)
			__builtin_trap();
	}
	return 0;
}
