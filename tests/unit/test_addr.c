/* lib/addr: equality and hash agree (IPv4's padding bytes count for neither), formatting. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <arpa/inet.h>

#include "addr.h"
#include "prefix.h"

static struct ip_endpoint ep(int family, const char *text, uint16_t port)
{
	struct ip_endpoint e = { .family = family, .port = port };
	assert_int_equal(inet_pton(family, text, e.addr), 1);
	return e;
}

static void test_equal_and_hash_agree(void **state)
{
	(void)state;
	struct ip_endpoint a = ep(AF_INET, "192.0.2.1", 53), b = a;
	memset(b.addr + 4, 0xa5, 12);           /* what is past an IPv4 address is not it */
	assert_true(ip_endpoint_equal(&a, &b));
	assert_int_equal(ip_endpoint_hash(&a), ip_endpoint_hash(&b));

	struct ip_endpoint other_port = ep(AF_INET, "192.0.2.1", 54);
	struct ip_endpoint other_addr = ep(AF_INET, "192.0.2.2", 53);
	struct ip_endpoint v6 = ep(AF_INET6, "::ffff:192.0.2.1", 53);
	assert_false(ip_endpoint_equal(&a, &other_port));
	assert_false(ip_endpoint_equal(&a, &other_addr));
	assert_false(ip_endpoint_equal(&a, &v6));
	assert_int_not_equal(ip_endpoint_hash(&a), ip_endpoint_hash(&other_port));
	assert_int_not_equal(ip_endpoint_hash(&a), ip_endpoint_hash(&other_addr));

	struct ip_addr x = { .family = AF_INET6 }, y = { .family = AF_INET6 };
	assert_int_equal(inet_pton(AF_INET6, "2001:db8::9", x.addr), 1);
	memcpy(y.addr, x.addr, 16);
	assert_true(ip_addr_equal(&x, &y));
	y.addr[15] ^= 1;
	assert_false(ip_addr_equal(&x, &y));
}

static void test_format(void **state)
{
	(void)state;
	char buf[ENDPOINT_TEXT_MAX];
	struct ip_endpoint a = ep(AF_INET6, "2001:db8::1", 5353);
	assert_string_equal(ip_endpoint_format(&a, buf, sizeof(buf)), "2001:db8::1 port 5353");
	assert_string_equal(ip_format(0, a.addr, buf, sizeof(buf)), "?");

	/* a socket address made from the bytes reads back the same */
	struct sockaddr_storage ss;
	assert_int_equal(ip_endpoint_sockaddr(&a, &ss), sizeof(struct sockaddr_in6));
	assert_int_equal(sockaddr_port((struct sockaddr *)&ss), 5353);
	assert_string_equal(sockaddr_format_port((struct sockaddr *)&ss, buf, sizeof(buf)), "2001:db8::1#5353");
	struct ip_endpoint b = ep(AF_INET, "192.0.2.7", 53);
	assert_int_equal(ip_endpoint_sockaddr(&b, &ss), sizeof(struct sockaddr_in));
	assert_int_equal(sockaddr_port((struct sockaddr *)&ss), 53);
	assert_string_equal(sockaddr_format_port((struct sockaddr *)&ss, buf, sizeof(buf)), "192.0.2.7#53");
	/* the address as it is: a v4-mapped one is not the IPv4 one */
	struct ip_addr ip;
	struct ip_endpoint m = ep(AF_INET6, "::ffff:192.0.2.7", 53);
	ip_endpoint_sockaddr(&m, &ss);
	assert_true(sockaddr_ip((struct sockaddr *)&ss, &ip));
	assert_int_equal(ip.family, AF_INET6);
	assert_true(ip_equal(ip.family, ip.addr, m.family, m.addr));
	assert_false(ip_equal(ip.family, ip.addr, b.family, b.addr));
	/* not IP: no port, no address */
	struct sockaddr un = { .sa_family = AF_UNIX };
	assert_false(sockaddr_ip(&un, &ip));
	assert_int_equal(sockaddr_port(&un), 0);
	assert_string_equal(sockaddr_format_port(&un, buf, sizeof(buf)), "?#0");
}

/* Bit by bit, as RFC 4632 says a prefix matches: the reference for prefix_contains's word compares. */
static bool contains_bitwise(const struct prefix *p, int family, const uint8_t *addr)
{
	if (p->family != family)
		return false;
	for (unsigned i = 0; i < p->len; i++) {
		unsigned byte = i / 8, bit = 7 - i % 8;
		if (((p->addr[byte] >> bit) & 1) != ((addr[byte] >> bit) & 1))
			return false;
	}
	return true;
}

/* Every length of both families, against addresses that differ from the prefix in one bit. */
static void test_prefix_contains(void **state)
{
	(void)state;
	static const char *const nets[] = { "192.0.2.128", "127.0.0.1", "2001:db8:ffff:8000::1", "fc00::" };
	for (unsigned k = 0; k < 4; k++) {
		int family = strchr(nets[k], ':') ? AF_INET6 : AF_INET;
		unsigned max = family == AF_INET ? 32 : 128;
		for (unsigned len = 0; len <= max; len++) {
			char text[64];
			struct prefix p;
			snprintf(text, sizeof(text), "%s/%u", nets[k], len);
			assert_int_equal(prefix_parse(text, &p), 0);
			for (unsigned flip = 0; flip <= max; flip++) {
				uint8_t a[16];
				memcpy(a, p.addr, sizeof(a));
				if (flip < max)
					a[flip / 8] ^= (uint8_t)(0x80 >> flip % 8);
				assert_int_equal(prefix_contains(&p, family, a), contains_bitwise(&p, family, a));
				assert_int_equal(prefix_contains(&p, family, a), flip >= len);
				assert_false(prefix_contains(&p, family == AF_INET ? AF_INET6 : AF_INET, a));
				assert_int_equal(prefix_list_has(&p, 1, family, a), flip >= len);
			}
		}
	}
}

static void test_parse(void **state)
{
	(void)state;
	int family = -1;
	uint8_t a[16];
	memset(a, 0xaa, sizeof(a));
	assert_true(ip_parse("192.0.2.7", &family, a));
	assert_int_equal(family, AF_INET);
	const uint8_t v4[16] = { 192, 0, 2, 7 };        /* the rest zero */
	assert_memory_equal(a, v4, 16);
	assert_true(ip_parse("2001:db8::1", &family, a));
	assert_int_equal(family, AF_INET6);
	assert_int_equal(a[0], 0x20);
	assert_int_equal(a[15], 1);
	family = -1;
	assert_false(ip_parse("192.0.2.256", &family, a));
	assert_false(ip_parse("192.0.2.7 ", &family, a));
	assert_false(ip_parse("", &family, a));
	assert_false(ip_parse("example.com", &family, a));
	assert_int_equal(family, -1);                   /* untouched */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_equal_and_hash_agree),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_prefix_contains),
		cmocka_unit_test(test_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
