/*
 * lib/dns/cache.c: what is stored and for how long, TTLs counted down, the
 * key, fingerprints, flushes, a peek that changes nothing, and the memory
 * bound under a million names (with what is used kept).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "cache.h"
#include "dns.h"

static const struct cache_limits lim = { .max_ttl = 86400, .max_negative_ttl = 3600, .servfail_ttl = 5 };

/* A query for name/type, parsed, so the builder can answer it. */
static void query(struct dns_query *q, const char *name, uint16_t type, bool edns)
{
	uint8_t pkt[512];
	struct name n;
	assert_int_equal(name_from_text(&n, name, strlen(name)), NAME_OK);
	struct dns_query_spec s = { .id = 7, .qname = n.wire, .qname_len = n.len, .qtype = type,
				    .qclass = DNS_CLASS_IN, .rd = true, .edns = edns, .udp_size = 1232 };
	size_t len = dns_query_write(&s, pkt, sizeof(pkt));
	assert_true(len > 0);
	assert_int_equal(dns_query_parse(pkt, len, q), DNS_PARSE_OK);
}

static void key(struct cache_key *k, const char *name, uint16_t type, uint8_t flags)
{
	struct name n;
	assert_int_equal(name_from_text(&n, name, strlen(name)), NAME_OK);
	cache_key_make(k, &n, type, DNS_CLASS_IN, flags);
}

/* An answer with n A records of TTL ttl (and an OPT RR when edns). */
static size_t answer(uint8_t *buf, const char *name, unsigned n, uint32_t ttl, bool edns)
{
	struct dns_query q;
	query(&q, name, DNS_TYPE_A, edns);
	struct dns_builder b;
	dns_response_init(&b, &q, DNS_RCODE_NOERROR, buf, 4096);
	for (unsigned i = 0; i < n; i++) {
		uint8_t a[4] = { 192, 0, 2, (uint8_t)i };
		assert_true(dns_response_add_addr(&b, AF_INET, a, ttl + i));
	}
	return dns_response_finish(&b, 1232);
}

static size_t negative(uint8_t *buf, const char *name, unsigned rcode, uint32_t soa_ttl,
		       uint32_t minimum, bool with_soa)
{
	struct dns_query q;
	query(&q, name, DNS_TYPE_A, false);
	struct dns_builder b;
	dns_response_init(&b, &q, rcode, buf, 4096);
	if (with_soa) {
		struct name apex;
		assert_int_equal(name_from_text(&apex, "example", 7), NAME_OK);
		uint8_t rd[2 * 9 + 20] = { 0 };
		memcpy(rd, apex.wire, apex.len);
		memcpy(rd + apex.len, apex.wire, apex.len);
		uint8_t *m = rd + 2 * apex.len + 16;
		m[0] = (uint8_t)(minimum >> 24);
		m[1] = (uint8_t)(minimum >> 16);
		m[2] = (uint8_t)(minimum >> 8);
		m[3] = (uint8_t)minimum;
		assert_true(dns_response_add_authority(&b, &apex, DNS_TYPE_SOA, rd, 2 * apex.len + 20, soa_ttl));
	}
	return dns_response_finish(&b, 1232);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void test_store_hit_and_countdown(void **state)
{
	(void)state;
	struct cache *c = cache_create(1 << 20, NULL);
	assert_non_null(c);
	uint8_t buf[4096];
	size_t len = answer(buf, "www.example", 3, 300, true);
	struct cache_key k;
	key(&k, "www.example", DNS_TYPE_A, CACHE_F_RD);
	assert_true(cache_store(c, &k, 42, buf, len, &lim, (const uint8_t *)"meta", 4, 1000));

	struct cache_hit h;
	assert_true(cache_lookup(c, &k, 42, 1000, 0, &h));
	assert_int_equal(h.ancount, 3);
	assert_int_equal(h.nscount + h.arcount, 0);             /* our OPT RR is not kept */
	assert_int_equal(h.lifetime_s, 300);                    /* the smallest TTL */
	assert_int_equal(h.meta_len, 4);
	assert_memory_equal(h.meta, "meta", 4);
	assert_int_equal(h.body_len, 3 * 16);
	/* 7.5 s later: every TTL 7 less, none over the lifetime */
	assert_true(cache_lookup(c, &k, 42, 8500, 0, &h));
	uint8_t out[64];
	memcpy(out, h.body, h.body_len);
	cache_hit_ttls(&h, out, h.body_len, 30);
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(rd32(out + 16 * i + 6), 300 - 7);
	/* another fingerprint (the route changed), other flags, another type: misses */
	assert_false(cache_lookup(c, &k, 43, 8500, 0, &h));
	struct cache_key k2;
	key(&k2, "www.example", DNS_TYPE_A, CACHE_F_RD | CACHE_F_DO);
	assert_false(cache_lookup(c, &k2, 42, 8500, 0, &h));
	key(&k2, "www.example", DNS_TYPE_AAAA, CACHE_F_RD);
	assert_false(cache_lookup(c, &k2, 42, 8500, 0, &h));
	/* the name in another case is the same key */
	key(&k2, "WWW.Example", DNS_TYPE_A, CACHE_F_RD);
	assert_true(cache_lookup(c, &k2, 42, 8500, 0, &h));
	/* expired at 300 s, unless stale answers are wanted (and then for that long) */
	assert_false(cache_lookup(c, &k, 42, 301000, 0, &h));
	assert_true(cache_lookup(c, &k, 42, 301000, 60, &h));
	assert_true(h.stale);
	memcpy(out, h.body, h.body_len);
	cache_hit_ttls(&h, out, h.body_len, 30);
	assert_int_equal(rd32(out + 6), 30);
	assert_false(cache_lookup(c, &k, 42, 361000, 60, &h));

	struct cache_stats st = { 0 };
	cache_stats_add(c, &st);
	assert_int_equal(st.entries, 1);
	assert_int_equal(st.stores, 1);
	assert_int_equal(st.hits, 3);
	assert_int_equal(st.stale_hits, 1);
	assert_int_equal(st.misses, 5);
	cache_destroy(c);
}

static void test_what_is_stored(void **state)
{
	(void)state;
	struct cache *c = cache_create(1 << 20, NULL);
	uint8_t buf[4096];
	struct cache_key k;
	struct cache_hit h;
	key(&k, "x.example", DNS_TYPE_A, 0);

	/* NXDOMAIN: the lesser of the SOA's TTL and MINIMUM, at most max-negative */
	size_t len = negative(buf, "x.example", DNS_RCODE_NXDOMAIN, 900, 600, true);
	assert_true(cache_store(c, &k, 1, buf, len, &lim, NULL, 0, 0));
	assert_true(cache_lookup(c, &k, 1, 0, 0, &h));
	assert_int_equal(h.lifetime_s, 600);
	assert_int_equal(h.rcode, DNS_RCODE_NXDOMAIN);
	assert_int_equal(h.nscount, 1);
	len = negative(buf, "x.example", DNS_RCODE_NOERROR, 86400, 86400, true);     /* NODATA */
	assert_true(cache_store(c, &k, 1, buf, len, &lim, NULL, 0, 0));
	assert_true(cache_lookup(c, &k, 1, 0, 0, &h));
	assert_int_equal(h.lifetime_s, 3600);
	/* without an SOA: not at all (RFC 2308 5) */
	struct cache_key k2;
	key(&k2, "y.example", DNS_TYPE_A, 0);
	len = negative(buf, "y.example", DNS_RCODE_NXDOMAIN, 0, 0, false);
	assert_false(cache_store(c, &k2, 1, buf, len, &lim, NULL, 0, 0));
	/* SERVFAIL: briefly */
	len = negative(buf, "y.example", DNS_RCODE_SERVFAIL, 0, 0, false);
	assert_true(cache_store(c, &k2, 1, buf, len, &lim, NULL, 0, 0));
	assert_true(cache_lookup(c, &k2, 1, 4999, 0, &h));
	assert_false(cache_lookup(c, &k2, 1, 5000, 0, &h));
	/* REFUSED, TC, TTL 0: never */
	len = negative(buf, "y.example", DNS_RCODE_REFUSED, 0, 0, false);
	assert_false(cache_store(c, &k2, 1, buf, len, &lim, NULL, 0, 0));
	len = answer(buf, "y.example", 1, 300, false);
	buf[2] |= 0x02;
	assert_false(cache_store(c, &k2, 1, buf, len, &lim, NULL, 0, 0));
	len = answer(buf, "y.example", 1, 0, false);
	assert_false(cache_store(c, &k2, 1, buf, len, &lim, NULL, 0, 0));
	/* positive answers at most max-ttl */
	len = answer(buf, "y.example", 1, 1000000, false);
	assert_true(cache_store(c, &k2, 1, buf, len, &lim, NULL, 0, 0));
	assert_true(cache_lookup(c, &k2, 1, 0, 0, &h));
	assert_int_equal(h.lifetime_s, 86400);
	/* a message that does not walk: a record running past its end */
	len = answer(buf, "z.example", 2, 300, false);
	key(&k2, "z.example", DNS_TYPE_A, 0);
	for (size_t cut = 12; cut < len; cut++)
		assert_false(cache_store(c, &k2, 1, buf, cut, &lim, NULL, 0, 0));
	cache_destroy(c);
}

static void test_flushes(void **state)
{
	(void)state;
	struct cache_flush *f = cache_flush_new();
	struct cache *c = cache_create(1 << 20, f);
	uint8_t buf[4096];
	static const char *const names[] = { "a.shop.example", "shop.example", "xshop.example", "other.example" };
	struct cache_key k[4];
	struct cache_hit h;
	for (unsigned i = 0; i < 4; i++) {
		size_t len = answer(buf, names[i], 1, 300, false);
		key(&k[i], names[i], DNS_TYPE_A, 0);
		assert_true(cache_store(c, &k[i], 0, buf, len, &lim, NULL, 0, 0));
	}
	struct name n;
	assert_int_equal(name_from_text(&n, "shop.example", 12), NAME_OK);
	cache_flush_name(f, &n);
	assert_false(cache_lookup(c, &k[0], 0, 0, 0, &h));
	assert_false(cache_lookup(c, &k[1], 0, 0, 0, &h));
	assert_true(cache_lookup(c, &k[2], 0, 0, 0, &h));     /* not below shop.example */
	assert_true(cache_lookup(c, &k[3], 0, 0, 0, &h));
	/* stored again after the flush: served */
	size_t len = answer(buf, names[0], 1, 300, false);
	assert_true(cache_store(c, &k[0], 0, buf, len, &lim, NULL, 0, 0));
	assert_true(cache_lookup(c, &k[0], 0, 0, 0, &h));
	cache_flush_all(f);
	for (unsigned i = 0; i < 4; i++)
		assert_false(cache_lookup(c, &k[i], 0, 0, 0, &h));
	/* more name flushes than the ring remembers: older entries count as flushed */
	assert_true(cache_store(c, &k[3], 0, buf, answer(buf, names[3], 1, 300, false), &lim, NULL, 0, 0));
	for (unsigned i = 0; i < 40; i++)
		cache_flush_name(f, &n);
	assert_false(cache_lookup(c, &k[3], 0, 0, 0, &h));
	cache_destroy(c);
	cache_flush_free(f);
}

/* A million distinct names through a 1 MiB cache: the bound holds, what is used stays. */
static void test_memory_bound_and_use(void **state)
{
	(void)state;
	const size_t bytes = 1 << 20;
	struct cache *c = cache_create(bytes, NULL);
	uint8_t buf[4096];
	char name[64];
	struct cache_key hot, k;
	struct cache_hit h;
	size_t len = answer(buf, "hot.example", 2, 3600, false);
	key(&hot, "hot.example", DNS_TYPE_A, 0);
	assert_true(cache_store(c, &hot, 0, buf, len, &lim, NULL, 0, 0));
	/* one template answer; its question name is not what the key says, which the cache does not care about */
	len = answer(buf, "n0000000.example", 1, 3600, false);
	for (unsigned i = 0; i < 1000000; i++) {
		snprintf(name, sizeof(name), "n%07u.example", i);
		key(&k, name, DNS_TYPE_A, 0);
		assert_true(cache_store(c, &k, 0, buf, len, &lim, NULL, 0, 0));
		if (i % 512 == 0)
			assert_true(cache_lookup(c, &hot, 0, 0, 0, &h));
	}
	struct cache_stats st = { 0 };
	cache_stats_add(c, &st);
	assert_true(st.capacity <= bytes);
	assert_true(st.used <= st.capacity);
	assert_true(st.entries > 1000 && st.entries < 20000);
	assert_true(st.evictions >= 1000000 - st.entries);
	/* the newest names are there, the oldest gone */
	key(&k, "n0999999.example", DNS_TYPE_A, 0);
	assert_true(cache_lookup(c, &k, 0, 0, 0, &h));
	key(&k, "n0000001.example", DNS_TYPE_A, 0);
	assert_false(cache_lookup(c, &k, 0, 0, 0, &h));
	assert_true(cache_lookup(c, &hot, 0, 0, 0, &h));
	cache_destroy(c);
}

/* A peek sees what a lookup would, under any fingerprint and age, and changes nothing. */
static void test_peek_changes_nothing(void **state)
{
	(void)state;
	struct cache_flush *f = cache_flush_new();
	struct cache *c = cache_create(CACHE_MIN_BYTES, f);
	uint8_t buf[4096];
	char name[64];
	struct cache_key a, k;
	struct cache_peek p;
	struct cache_stats before = { 0 }, after = { 0 };
	key(&a, "a.example", DNS_TYPE_A, CACHE_F_RD);
	assert_true(cache_store(c, &a, 42, buf, answer(buf, "a.example", 1, 300, false), &lim, NULL, 0, 1000));
	key(&k, "a.example", DNS_TYPE_AAAA, CACHE_F_RD);
	assert_false(cache_peek(c, &k, 1000, &p));
	assert_true(cache_peek(c, &a, 8500, &p));
	assert_true(p.fp == 42);
	assert_int_equal(p.rcode, DNS_RCODE_NOERROR);
	assert_int_equal(p.age_ms, 7500);
	assert_int_equal(p.lifetime_s, 300);
	assert_true(cache_peek(c, &a, 400000, &p));             /* expired: still seen, with its age */
	assert_int_equal(p.age_ms, 399000);

	/* fillers until a peeked entry falls out of the ring: no promotion, no counters */
	size_t len = answer(buf, "f0000.example", 1, 300, false);
	unsigned fillers = 0;
	cache_stats_add(c, &before);
	while (cache_peek(c, &a, 1000, &p)) {
		snprintf(name, sizeof(name), "f%04u.example", fillers++);
		key(&k, name, DNS_TYPE_A, 0);
		assert_true(cache_store(c, &k, 0, buf, len, &lim, NULL, 0, 1000));
		assert_true(fillers < 10000);
	}
	cache_stats_add(c, &after);
	assert_int_equal(after.hits, before.hits);
	assert_int_equal(after.misses, before.misses);
	assert_int_equal(after.stale_hits, before.stale_hits);
	assert_int_equal(after.stores - before.stores, fillers);
	cache_destroy(c);

	/* the same fillers with a lookup each: the entry is promoted and stays */
	c = cache_create(CACHE_MIN_BYTES, f);
	struct cache_hit h;
	assert_true(cache_store(c, &a, 42, buf, answer(buf, "a.example", 1, 300, false), &lim, NULL, 0, 1000));
	len = answer(buf, "f0000.example", 1, 300, false);
	for (unsigned i = 0; i < 2 * fillers; i++) {
		snprintf(name, sizeof(name), "f%04u.example", i);
		key(&k, name, DNS_TYPE_A, 0);
		assert_true(cache_store(c, &k, 0, buf, len, &lim, NULL, 0, 1000));
		assert_true(cache_lookup(c, &a, 42, 1000, 0, &h));
	}
	/* flushed: not seen */
	struct name n;
	assert_int_equal(name_from_text(&n, "example", 7), NAME_OK);
	cache_flush_name(f, &n);
	assert_false(cache_peek(c, &a, 1000, &p));
	cache_destroy(c);
	cache_flush_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_store_hit_and_countdown),
		cmocka_unit_test(test_what_is_stored),
		cmocka_unit_test(test_flushes),
		cmocka_unit_test(test_memory_bound_and_use),
		cmocka_unit_test(test_peek_changes_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
