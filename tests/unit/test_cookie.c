/*
 * lib/dns/cookie.c: option lengths (RFC 7873 5.2.2), server cookies made and
 * checked as RFC 9018 says, including its test vector.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "cookie.h"

static const uint8_t secret[16] = { 0xe5, 0xe9, 0x73, 0xe5, 0xa6, 0xb2, 0xa4, 0x3f,
				    0x48, 0xe7, 0xdc, 0x84, 0x9e, 0x37, 0xbf, 0xcf };
static const uint8_t client[8] = { 0x24, 0x64, 0xc4, 0xab, 0xcf, 0x10, 0xc9, 0x57 };
static const uint8_t v4[4] = { 198, 51, 100, 100 };

static void test_parse_lengths(void **state)
{
	(void)state;
	uint8_t data[48] = { 0 };
	const uint8_t *c, *s;
	size_t sl;
	for (size_t len = 0; len <= sizeof(data); len++) {
		int rc = cookie_parse(data, len, &c, &s, &sl);
		bool ok = len == 8 || (len >= 16 && len <= 40);
		assert_int_equal(rc, ok ? 0 : -1);
		if (ok) {
			assert_ptr_equal(c, data);
			assert_int_equal(sl, len - 8);
		}
	}
}

/* RFC 9018 appendix A.1 and A.2: an IPv4 client learning a server cookie, then a renewed one. */
static void test_rfc9018_vector(void **state)
{
	(void)state;
	uint8_t out[16];
	cookie_make(secret, client, 1559731985, v4, 4, out);
	static const uint8_t want[16] = { 0x01, 0x00, 0x00, 0x00, 0x5c, 0xf7, 0x9f, 0x11,
					  0x1f, 0x81, 0x30, 0xc3, 0xee, 0xe2, 0x94, 0x80 };
	assert_memory_equal(out, want, 16);
	assert_true(cookie_check(secret, client, out, 16, 1559731985, v4, 4));
	/* A.2: forty minutes later it is still good, and renewed */
	assert_true(cookie_check(secret, client, out, 16, 1559734385, v4, 4));
	cookie_make(secret, client, 1559734385, v4, 4, out);
	static const uint8_t renewed[16] = { 0x01, 0x00, 0x00, 0x00, 0x5c, 0xf7, 0xa8, 0x71,
					     0xd4, 0xa5, 0x64, 0xa1, 0x44, 0x2a, 0xca, 0x77 };
	assert_memory_equal(out, renewed, 16);
}

static void test_check(void **state)
{
	(void)state;
	uint8_t sc[16];
	uint8_t v6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
	cookie_make(secret, client, 1000000, v6, 16, sc);
	assert_true(cookie_check(secret, client, sc, 16, 1000000, v6, 16));
	/* within the hour, and five minutes of skew the other way */
	assert_true(cookie_check(secret, client, sc, 16, 1000000 + 3600, v6, 16));
	assert_false(cookie_check(secret, client, sc, 16, 1000000 + 3601, v6, 16));
	assert_true(cookie_check(secret, client, sc, 16, 1000000 - 300, v6, 16));
	assert_false(cookie_check(secret, client, sc, 16, 1000000 - 301, v6, 16));
	/* another address, client cookie, secret, length, version, or a changed byte */
	uint8_t other[16];
	memcpy(other, v6, 16);
	other[15] = 2;
	assert_false(cookie_check(secret, client, sc, 16, 1000000, other, 16));
	uint8_t c2[8];
	memcpy(c2, client, 8);
	c2[0] ^= 1;
	assert_false(cookie_check(secret, c2, sc, 16, 1000000, v6, 16));
	uint8_t s2[16];
	memcpy(s2, secret, 16);
	s2[3] ^= 0x80;
	assert_false(cookie_check(s2, client, sc, 16, 1000000, v6, 16));
	assert_false(cookie_check(secret, client, sc, 15, 1000000, v6, 16));
	for (unsigned i = 0; i < 16; i++) {
		uint8_t bad[16];
		memcpy(bad, sc, 16);
		bad[i] ^= 0x40;
		assert_false(cookie_check(secret, client, bad, 16, 1000000, v6, 16));
	}
}

/* Our client cookie: one per server address and port, stable, and nothing without the secret. */
static void test_client_cookie(void **state)
{
	(void)state;
	uint8_t other_secret[16] = { 1, 2, 4 };
	uint8_t v4b[4] = { 198, 51, 100, 101 };
	uint8_t a[8], b[8];
	cookie_client_make(secret, v4, 4, 53, a);
	cookie_client_make(secret, v4, 4, 53, b);
	assert_memory_equal(a, b, 8);
	cookie_client_make(secret, v4, 4, 5353, b);
	assert_memory_not_equal(a, b, 8);
	cookie_client_make(secret, v4b, 4, 53, b);
	assert_memory_not_equal(a, b, 8);
	cookie_client_make(other_secret, v4, 4, 53, b);
	assert_memory_not_equal(a, b, 8);
	uint8_t v6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
	cookie_client_make(secret, v6, 16, 53, b);
	assert_memory_not_equal(a, b, 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_lengths),
		cmocka_unit_test(test_rfc9018_vector),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_client_cookie),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
