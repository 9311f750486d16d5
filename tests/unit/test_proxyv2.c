/* lib/core/proxyv2.c: the PROXY protocol v2 header, every way it can be wrong. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include "proxyv2.h"
#include "wire.h"

#define MAX 512

/* A header: version/command byte, family/transport byte, then body (its length written). */
static size_t header(uint8_t *out, uint8_t ver_cmd, uint8_t fam_tr, const uint8_t *body, size_t body_len)
{
	memcpy(out, proxyv2_signature, PROXYV2_SIG_LEN);
	out[12] = ver_cmd;
	out[13] = fam_tr;
	wire_store16(out + 14, (uint16_t)body_len);
	if (body_len)
		memcpy(out + 16, body, body_len);
	return 16 + body_len;
}

/* 192.0.2.7:5353 -> 198.51.100.1:53, then extra bytes (TLVs) */
static size_t v4_body(uint8_t *b, const uint8_t *extra, size_t extra_len)
{
	static const uint8_t a[12] = { 192, 0, 2, 7, 198, 51, 100, 1, 0x14, 0xe9, 0, 53 };
	memcpy(b, a, sizeof(a));
	if (extra_len)
		memcpy(b + 12, extra, extra_len);
	return 12 + extra_len;
}

static void a_v4_header_gives_the_client_and_its_length(void **state)
{
	uint8_t body[64], buf[128];
	size_t n = header(buf, 0x21, 0x12, body, v4_body(body, NULL, 0));
	memcpy(buf + n, "DNS", 3);
	struct proxyv2_header h;
	assert_int_equal(proxyv2_parse(buf, n + 3, MAX, &h), PROXYV2_OK);
	assert_int_equal(h.len, 28);
	assert_int_equal(h.command, PROXYV2_PROXY);
	assert_int_equal(h.transport, PROXYV2_DGRAM);
	assert_int_equal(h.src.family, AF_INET);
	assert_memory_equal(h.src.addr, ((uint8_t[]){ 192, 0, 2, 7 }), 4);
	assert_int_equal(h.src.port, 5353);
	assert_memory_equal(h.dst.addr, ((uint8_t[]){ 198, 51, 100, 1 }), 4);
	assert_int_equal(h.dst.port, 53);
	assert_int_equal(proxyv2_skip(buf, n + 3), 28);
}

static void a_v6_stream_header_with_tlvs(void **state)
{
	uint8_t body[128], buf[192];
	struct in6_addr src, dst;
	inet_pton(AF_INET6, "2001:db8::1", &src);
	inet_pton(AF_INET6, "2001:db8::53", &dst);
	memcpy(body, &src, 16);
	memcpy(body + 16, &dst, 16);
	wire_store16(body + 32, 40000);
	wire_store16(body + 34, 853);
	/* PP2_TYPE_ALPN "dot", an empty NOOP, a CRC32C */
	static const uint8_t tlvs[] = { 0x01, 0, 3, 'd', 'o', 't', 0x04, 0, 0, 0x03, 0, 4, 1, 2, 3, 4 };
	memcpy(body + 36, tlvs, sizeof(tlvs));
	size_t n = header(buf, 0x21, 0x21, body, 36 + sizeof(tlvs));
	struct proxyv2_header h;
	assert_int_equal(proxyv2_parse(buf, n, MAX, &h), PROXYV2_OK);
	assert_int_equal(h.len, n);
	assert_int_equal(h.transport, PROXYV2_STREAM);
	assert_int_equal(h.src.family, AF_INET6);
	assert_memory_equal(h.src.addr, &src, 16);
	assert_int_equal(h.src.port, 40000);
	assert_int_equal(h.dst.port, 853);
}

static void local_carries_no_client_whatever_its_block(void **state)
{
	uint8_t buf[64], junk[5] = { 9, 9, 9, 9, 9 };
	struct proxyv2_header h;
	size_t n = header(buf, 0x20, 0x00, NULL, 0);
	assert_int_equal(proxyv2_parse(buf, n, MAX, &h), PROXYV2_OK);
	assert_int_equal(h.command, PROXYV2_LOCAL);
	assert_int_equal(h.len, 16);
	assert_int_equal(h.src.family, 0);
	/* a block that would not parse as INET is skipped, not read */
	n = header(buf, 0x20, 0x11, junk, sizeof(junk));
	assert_int_equal(proxyv2_parse(buf, n, MAX, &h), PROXYV2_OK);
	assert_int_equal(h.len, 21);
	assert_int_equal(h.src.family, 0);
}

static void every_prefix_of_a_valid_header_is_short(void **state)
{
	uint8_t body[64], buf[128];
	static const uint8_t tlv[] = { 0xe0, 0, 2, 'x', 'y' };
	size_t n = header(buf, 0x21, 0x11, body, v4_body(body, tlv, sizeof(tlv)));
	struct proxyv2_header h;
	for (size_t k = 0; k < n; k++)
		assert_int_equal(proxyv2_parse(buf, k, MAX, &h), PROXYV2_SHORT);
	assert_int_equal(proxyv2_parse(buf, n, MAX, &h), PROXYV2_OK);
	assert_int_equal(proxyv2_skip(buf, n - 1), 0);
}

static void a_plain_dns_message_is_not_proxy(void **state)
{
	/* a query (id 0x0d0a: starts like the signature), and a TCP length prefix */
	static const uint8_t q[] = { 0x0d, 0x0a, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1 };
	static const uint8_t t[] = { 0x00, 0x11, 0x0d, 0x0a };
	struct proxyv2_header h;
	assert_int_equal(proxyv2_parse(q, sizeof(q), MAX, &h), PROXYV2_NOT_PROXY);
	assert_int_equal(proxyv2_parse(q, 2, MAX, &h), PROXYV2_SHORT);      /* so far, it could be */
	assert_int_equal(proxyv2_parse(t, sizeof(t), MAX, &h), PROXYV2_NOT_PROXY);
	assert_int_equal(proxyv2_skip(q, sizeof(q)), 0);
	/* a v1 text header is not read */
	static const char v1[] = "PROXY TCP4 192.0.2.1 192.0.2.2 1 2\r\n";
	assert_int_equal(proxyv2_parse((const uint8_t *)v1, sizeof(v1) - 1, MAX, &h), PROXYV2_NOT_PROXY);
}

static void each_malformed_header_has_its_reason(void **state)
{
	uint8_t body[600], buf[700];
	struct proxyv2_header h;
	size_t b = v4_body(body, NULL, 0);
	struct {
		uint8_t ver_cmd, fam_tr;
		size_t body_len;
		enum proxyv2_status want;
	} cases[] = {
		{ 0x11, 0x11, b, PROXYV2_BAD_VERSION },
		{ 0x31, 0x11, b, PROXYV2_BAD_VERSION },
		{ 0x22, 0x11, b, PROXYV2_BAD_COMMAND },
		{ 0x2f, 0x11, b, PROXYV2_BAD_COMMAND },
		{ 0x21, 0x01, b, PROXYV2_BAD_FAMILY },          /* UNSPEC with PROXY */
		{ 0x21, 0x31, b, PROXYV2_BAD_FAMILY },          /* UNIX */
		{ 0x21, 0x41, b, PROXYV2_BAD_FAMILY },
		{ 0x21, 0x10, b, PROXYV2_BAD_TRANSPORT },       /* UNSPEC with PROXY */
		{ 0x21, 0x13, b, PROXYV2_BAD_TRANSPORT },
		{ 0x21, 0x11, 11, PROXYV2_SHORT_ADDRESS },
		{ 0x21, 0x21, 35, PROXYV2_SHORT_ADDRESS },      /* v4's length, v6's family */
		{ 0x21, 0x11, 12 + 1, PROXYV2_BAD_TLV },        /* a lone type byte */
		{ 0x21, 0x11, 12 + 2, PROXYV2_BAD_TLV },        /* half a length */
		{ 0x21, 0x11, 12 + 4, PROXYV2_BAD_TLV },        /* says 0x0101 bytes, has 1 */
		{ 0x21, 0x11, MAX - 16 + 1, PROXYV2_TOO_LONG },
		{ 0x20, 0x00, MAX - 16 + 1, PROXYV2_TOO_LONG }, /* LOCAL too */
	};
	memset(body + b, 1, sizeof(body) - b);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = header(buf, cases[i].ver_cmd, cases[i].fam_tr, body, cases[i].body_len);
		print_message("case %zu\n", i);
		assert_int_equal(proxyv2_parse(buf, n, MAX, &h), cases[i].want);
		/* and already once the fixed part is in, for those it tells */
		if (cases[i].want != PROXYV2_BAD_TLV)
			assert_int_equal(proxyv2_parse(buf, 16, MAX, &h), cases[i].want);
		assert_string_not_equal(proxyv2_strerror(cases[i].want), "?");
	}
	/* exactly the limit is taken */
	size_t n = header(buf, 0x20, 0x00, body, MAX - 16);
	assert_int_equal(proxyv2_parse(buf, n, MAX, &h), PROXYV2_OK);
	assert_int_equal(h.len, MAX);
	/* a truncated header, and a bad signature byte anywhere */
	n = header(buf, 0x21, 0x11, body, b);
	assert_int_equal(proxyv2_parse(buf, n - 1, MAX, &h), PROXYV2_SHORT);
	for (size_t i = 0; i < PROXYV2_SIG_LEN; i++) {
		buf[i] ^= 0x40;
		assert_int_equal(proxyv2_parse(buf, n, MAX, &h), PROXYV2_NOT_PROXY);
		assert_int_equal(proxyv2_parse(buf, i + 1, MAX, &h), PROXYV2_NOT_PROXY);
		buf[i] ^= 0x40;
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_v4_header_gives_the_client_and_its_length),
		cmocka_unit_test(a_v6_stream_header_with_tlvs),
		cmocka_unit_test(local_carries_no_client_whatever_its_block),
		cmocka_unit_test(every_prefix_of_a_valid_header_is_short),
		cmocka_unit_test(a_plain_dns_message_is_not_proxy),
		cmocka_unit_test(each_malformed_header_has_its_reason),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
