/*
 * token_unit.c — standalone checks of src/base/token_format.c, linked with libpgcommon
 * and libpgport only: the worked example (test/fuzz/corpus/worked-example,
 * also checked against pgcrypto in test/pgtap/08_tokens.sql) reproduced
 * byte for byte, base64url round trips, and grammar refusals.
 * Prints TAP.
 */
#include "postgres_fe.h"

#include "base/token_format.h"

static int	tests = 0;
static int	failures = 0;

static void
check(bool ok, const char *what)
{
	tests++;
	if (!ok)
		failures++;
	printf("%s %d - %s\n", ok ? "ok" : "not ok", tests, what);
}

static OwTokenStatus
split(const char *token, OwTokenParts *parts)
{
	return ow_token_split(token, strlen(token), parts);
}

int
main(void)
{
	const char *claims = "{\"i\":\"acme/int-0123456789abcdef\",\"r\":\"acme/run-0123456789abcdef\","
		"\"n\":\"gate\",\"e\":\"2026-10-01T12:30:00.000Z\",\"t\":\"resolve\"}";
	const char *payload = "eyJpIjoiYWNtZS9pbnQtMDEyMzQ1Njc4OWFiY2RlZiIsInIiOiJhY21lL3J1bi0wMTIzNDU2Nzg5YWJjZGVmIiwibiI6ImdhdGUiLCJlIjoiMjAyNi0xMC0wMVQxMjozMDowMC4wMDBaIiwidCI6InJlc29sdmUifQ";
	const char *secret = "example-secret-do-not-use";
	const char *token = "ow2.hs256.k2026a.eyJpIjoiYWNtZS9pbnQtMDEyMzQ1Njc4OWFiY2RlZiIsInIiOiJhY21lL3J1bi0wMTIzNDU2Nzg5YWJjZGVmIiwibiI6ImdhdGUiLCJlIjoiMjAyNi0xMC0wMVQxMjozMDowMC4wMDBaIiwidCI6InJlc29sdmUifQ.817d0bf3fbae75b9e082f149f8366288c43bbfbce68666856ad66c21830d3b5a";
	char		b64[512];
	char		mac[OW_MAC_HEX_LEN + 1];
	unsigned char raw[512];
	char		built[1024];
	OwTokenParts parts;
	int			n;
	int			len;

	printf("1..14\n");

	/* the worked example, byte for byte */
	n = ow_b64url_encode((const unsigned char *) claims, strlen(claims), b64, sizeof(b64));
	check(n > 0 && strcmp(b64, payload) == 0, "worked example: the payload is unpadded base64url of the claims");
	check(ow_token_mac((const unsigned char *) secret, strlen(secret), "k2026a", 6, b64, strlen(b64), mac) &&
		  strcmp(mac, "817d0bf3fbae75b9e082f149f8366288c43bbfbce68666856ad66c21830d3b5a") == 0,
		  "worked example: the MAC is lowercase hex HMAC-SHA256 over hs256.<kid>.<payload>");
	snprintf(built, sizeof(built), "ow2.hs256.k2026a.%s.%s", b64, mac);
	check(strcmp(built, token) == 0, "worked example: the token reproduces byte for byte");
	check(ow_token_split(token, strlen(token), &parts) == OW_TOKEN_OK &&
		  parts.kid_len == 6 && memcmp(parts.kid, "k2026a", 6) == 0 &&
		  parts.payload_len == strlen(payload) && parts.mac_len == OW_MAC_HEX_LEN,
		  "the worked example splits into kid, payload and mac");
	len = ow_b64url_decode(payload, strlen(payload), raw, sizeof(raw));
	check(len == (int) strlen(claims) && memcmp(raw, claims, len) == 0, "its payload decodes to the claims");
	check(ow_token_mac_equal(mac, "817d0bf3fbae75b9e082f149f8366288c43bbfbce68666856ad66c21830d3b5a") &&
		  !ow_token_mac_equal(mac, "817d0bf3fbae75b9e082f149f8366288c43bbfbce68666856ad66c21830d3b5b"),
		  "MAC comparison tells equal from unequal");

	/* grammar */
	check(split("eyJpIjoi.66e532e2", &parts) == OW_TOKEN_NOT_OW2, "an unprefixed (v1) token is refused");
	check(split("ow2.hs512.k.cA.817d0bf3fbae75b9e082f149f8366288c43bbfbce68666856ad66c21830d3b5a", &parts) == OW_TOKEN_BAD_ALG,
		  "another alg is refused");
	check(split("ow2.hs256.k.cA.817D0BF3FBAE75B9E082F149F8366288C43BBFBCE68666856AD66C21830D3B5A", &parts) == OW_TOKEN_MALFORMED,
		  "an uppercase MAC is outside the grammar");
	check(split("ow2.hs256.a.b.c.cA.817d0bf3fbae75b9e082f149f8366288c43bbfbce68666856ad66c21830d3b5a", &parts) == OW_TOKEN_OK &&
		  parts.kid_len == 5 && memcmp(parts.kid, "a.b.c", 5) == 0, "a kid may contain dots");
	check(split("ow2.hs256..cA.817d0bf3fbae75b9e082f149f8366288c43bbfbce68666856ad66c21830d3b5a", &parts) == OW_TOKEN_MALFORMED,
		  "an empty kid is refused");

	/* base64url */
	check(ow_b64url_decode("cB", 2, raw, sizeof(raw)) == -1, "non-canonical base64url (unused bits set) is refused");
	check(ow_b64url_decode("cA=", 3, raw, sizeof(raw)) == -1, "padding is refused");
	{
		bool		round = true;
		int			l;

		for (l = 0; l < 64 && round; l++)
		{
			unsigned char src[64];
			char		enc[128];
			unsigned char dec[64];
			int			i;

			for (i = 0; i < l; i++)
				src[i] = (unsigned char) (i * 37 + l);
			n = ow_b64url_encode(src, l, enc, sizeof(enc));
			round = n >= 0 && ow_b64url_decode(enc, n, dec, sizeof(dec)) == l && memcmp(src, dec, l) == 0;
		}
		check(round, "base64url round-trips every length from 0 to 63");
	}

	printf("%d passed, %d failed\n", tests - failures, failures);
	return failures ? 1 : 0;
}
