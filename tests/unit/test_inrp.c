/*
 * lib/dns/inrp.c: the INRP EDNS0 option codec.  Round trips of both kinds,
 * every way a malformed option is refused, the path and exclusion tests,
 * the option-list walk and the router id hash.
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

#include "inrp.h"

/* Parses an exact-size heap copy, so a sanitizer build catches any read past the end. */
static int query_parse(const uint8_t *d, size_t len, struct inrp_query_opt *o, const char **err)
{
	uint8_t *copy = malloc(len ? len : 1);
	assert_non_null(copy);
	if (len)
		memcpy(copy, d, len);
	int rc = inrp_query_opt_parse(copy, len, o, err);
	free(copy);
	return rc;
}

static int response_parse(const uint8_t *d, size_t len, struct inrp_response_opt *o,
			  const char **err)
{
	uint8_t *copy = malloc(len ? len : 1);
	assert_non_null(copy);
	if (len)
		memcpy(copy, d, len);
	int rc = inrp_response_opt_parse(copy, len, o, err);
	free(copy);
	return rc;
}

static void assert_query_equal(const struct inrp_query_opt *a, const struct inrp_query_opt *b)
{
	assert_int_equal(a->hop_limit, b->hop_limit);
	assert_int_equal(a->npath, b->npath);
	assert_int_equal(a->nexclude, b->nexclude);
	assert_int_equal(a->budget_ms, b->budget_ms);
	for (unsigned i = 0; i < a->npath; i++)
		assert_true(a->path[i] == b->path[i]);
	for (unsigned i = 0; i < a->nexclude; i++) {
		assert_int_equal(a->exclude[i].family, b->exclude[i].family);
		assert_memory_equal(a->exclude[i].addr, b->exclude[i].addr,
				    a->exclude[i].family == AF_INET ? 4 : 16);
	}
}

/* Writes o, checks the length, parses it back and compares; returns the length. */
static size_t query_round_trip(const struct inrp_query_opt *o, uint8_t *buf)
{
	size_t len = inrp_query_opt_write(o, buf);
	size_t want = 8 + (size_t)o->npath * 8;
	for (unsigned i = 0; i < o->nexclude; i++)
		want += o->exclude[i].family == AF_INET ? 5 : 17;
	assert_int_equal(len, want);
	assert_true(len <= INRP_QUERY_OPT_MAX);

	struct inrp_query_opt back;
	const char *err = NULL;
	memset(&back, 0xa5, sizeof(back));
	assert_int_equal(query_parse(buf, len, &back, &err), 0);
	assert_query_equal(o, &back);

	/* parsing is the inverse of writing: the bytes come out the same */
	uint8_t again[INRP_QUERY_OPT_MAX];
	assert_int_equal(inrp_query_opt_write(&back, again), len);
	assert_memory_equal(again, buf, len);
	return len;
}

/* ---- query kind: round trips ---- */

static void test_query_empty_path(void **state)
{
	(void)state;
	struct inrp_query_opt o;
	memset(&o, 0, sizeof(o));
	o.hop_limit = INRP_DEFAULT_HOP_LIMIT;
	uint8_t buf[INRP_QUERY_OPT_MAX];
	assert_int_equal(query_round_trip(&o, buf), 8);
	static const uint8_t want[8] = { INRP_VERSION, INRP_KIND_QUERY, 16, 0, 0, 0, 0, 0 };
	assert_memory_equal(buf, want, 8);
}

static void test_query_byte_layout(void **state)
{
	(void)state;
	struct inrp_query_opt o;
	memset(&o, 0, sizeof(o));
	o.hop_limit = 7;
	o.npath = 1;
	o.nexclude = 2;
	o.budget_ms = 0x1234;
	o.path[0] = 0x0102030405060708ull;
	o.exclude[0].family = AF_INET;
	memcpy(o.exclude[0].addr, "\xc0\x00\x02\x01", 4);
	o.exclude[1].family = AF_INET6;
	memcpy(o.exclude[1].addr, "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x09", 16);
	uint8_t buf[INRP_QUERY_OPT_MAX];
	size_t len = query_round_trip(&o, buf);
	static const uint8_t want[] = {
		1, 1, 7, 1, 2, 0, 0x12, 0x34,
		1, 2, 3, 4, 5, 6, 7, 8,
		1, 192, 0, 2, 1,
		2, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9,
	};
	assert_int_equal(len, sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
}

static void test_query_full_path(void **state)
{
	(void)state;
	struct inrp_query_opt o;
	memset(&o, 0, sizeof(o));
	o.hop_limit = 255;
	o.npath = INRP_MAX_PATH;
	o.budget_ms = 65535;
	for (unsigned i = 0; i < INRP_MAX_PATH; i++) {
		char name[32];
		snprintf(name, sizeof(name), "router-%u.example", i);
		o.path[i] = inrp_router_id(name);
	}
	o.path[3] = UINT64_MAX;
	o.path[4] = 0;
	uint8_t buf[INRP_QUERY_OPT_MAX];
	assert_int_equal(query_round_trip(&o, buf), 8 + INRP_MAX_PATH * 8);
	/* big-endian router ids */
	assert_memory_equal(buf + 8 + 3 * 8, "\xff\xff\xff\xff\xff\xff\xff\xff", 8);
	assert_memory_equal(buf + 8 + 4 * 8, "\0\0\0\0\0\0\0\0", 8);
}

static void test_query_largest(void **state)
{
	(void)state;
	/* full path and as many IPv6 exclusions as allowed: INRP_QUERY_OPT_MAX */
	struct inrp_query_opt o;
	memset(&o, 0, sizeof(o));
	o.npath = INRP_MAX_PATH;
	o.nexclude = INRP_MAX_EXCLUDE;
	for (unsigned i = 0; i < INRP_MAX_PATH; i++)
		o.path[i] = 0x1000 + i;
	for (unsigned i = 0; i < INRP_MAX_EXCLUDE; i++) {
		o.exclude[i].family = AF_INET6;
		memset(o.exclude[i].addr, (int)i + 1, 16);
	}
	uint8_t buf[INRP_QUERY_OPT_MAX];
	assert_int_equal(query_round_trip(&o, buf), INRP_QUERY_OPT_MAX);
}

static void test_query_mixed_exclusions(void **state)
{
	(void)state;
	struct inrp_query_opt o;
	memset(&o, 0, sizeof(o));
	o.hop_limit = 3;
	o.npath = 2;
	o.path[0] = inrp_router_id("r1");
	o.path[1] = inrp_router_id("r2");
	o.budget_ms = 800;
	o.nexclude = 5;
	for (unsigned i = 0; i < o.nexclude; i++) {
		o.exclude[i].family = i % 2 ? AF_INET6 : AF_INET;
		o.exclude[i].addr[0] = (uint8_t)(10 + i);
		o.exclude[i].addr[3] = (uint8_t)i;
		if (o.exclude[i].family == AF_INET6)
			o.exclude[i].addr[15] = 0xee;
	}
	uint8_t buf[INRP_QUERY_OPT_MAX];
	assert_int_equal(query_round_trip(&o, buf), 8 + 16 + 3 * 5 + 2 * 17);

	/* an IPv4 exclusion parses with the rest of addr zeroed */
	struct inrp_query_opt back;
	const char *err = NULL;
	memset(&back, 0xa5, sizeof(back));
	assert_int_equal(query_parse(buf, 8 + 16 + 3 * 5 + 2 * 17, &back, &err), 0);
	static const uint8_t zero[12];
	assert_int_equal(back.exclude[0].family, AF_INET);
	assert_memory_equal(back.exclude[0].addr + 4, zero, 12);
}

static void test_query_budget(void **state)
{
	(void)state;
	static const uint16_t budgets[] = { 0, 1, 255, 256, 1500, 0x8000, 65535 };
	for (size_t i = 0; i < sizeof(budgets) / sizeof(budgets[0]); i++) {
		struct inrp_query_opt o;
		memset(&o, 0, sizeof(o));
		o.hop_limit = 1;
		o.budget_ms = budgets[i];
		uint8_t buf[INRP_QUERY_OPT_MAX];
		assert_int_equal(query_round_trip(&o, buf), 8);
		assert_int_equal(buf[6], budgets[i] >> 8);
		assert_int_equal(buf[7], budgets[i] & 0xff);
	}
}

static void test_query_reserved_ignored(void **state)
{
	(void)state;
	/* the reserved byte is ignored on receipt and written as 0 */
	uint8_t in[8] = { 1, 1, 4, 0, 0, 0xff, 0, 9 };
	struct inrp_query_opt o;
	const char *err = NULL;
	assert_int_equal(query_parse(in, sizeof(in), &o, &err), 0);
	assert_int_equal(o.hop_limit, 4);
	assert_int_equal(o.budget_ms, 9);
	uint8_t out[INRP_QUERY_OPT_MAX];
	assert_int_equal(inrp_query_opt_write(&o, out), 8);
	assert_int_equal(out[5], 0);
}

static void test_query_write_clamps(void **state)
{
	(void)state;
	/* counts over the maximum are written as the maximum, never past the buffer */
	struct inrp_query_opt o;
	memset(&o, 0, sizeof(o));
	o.npath = 200;
	o.nexclude = 200;
	for (unsigned i = 0; i < INRP_MAX_EXCLUDE; i++)
		o.exclude[i].family = AF_INET6;
	uint8_t *buf = malloc(INRP_QUERY_OPT_MAX);
	assert_non_null(buf);
	assert_int_equal(inrp_query_opt_write(&o, buf), INRP_QUERY_OPT_MAX);
	assert_int_equal(buf[3], INRP_MAX_PATH);
	assert_int_equal(buf[4], INRP_MAX_EXCLUDE);
	free(buf);
}

/* ---- query kind: rejections ---- */

static void expect_query_reject(const uint8_t *d, size_t len)
{
	struct inrp_query_opt o;
	const char *err = NULL;
	assert_int_equal(query_parse(d, len, &o, &err), -1);
	assert_non_null(err);
	assert_true(strlen(err) > 0);
}

static void test_query_reject_short(void **state)
{
	(void)state;
	uint8_t d[8] = { 1, 1, 16, 0, 0, 0, 0, 0 };
	for (size_t len = 0; len < 8; len++)
		expect_query_reject(d, len);
}

static void test_query_reject_version_and_kind(void **state)
{
	(void)state;
	uint8_t d[8] = { 1, 1, 16, 0, 0, 0, 0, 0 };
	d[0] = 0;
	expect_query_reject(d, 8);
	d[0] = 2;
	expect_query_reject(d, 8);
	d[0] = 255;
	expect_query_reject(d, 8);
	d[0] = 1;
	d[1] = INRP_KIND_RESPONSE;
	expect_query_reject(d, 8);
	d[1] = 0;
	expect_query_reject(d, 8);
	d[1] = 3;
	expect_query_reject(d, 8);

	/* a well-formed response option is not a query option */
	struct inrp_response_opt r = { .status = 0, .load_ms = 1, .router_id = 2 };
	uint8_t rbuf[INRP_RESPONSE_OPT_LEN];
	inrp_response_opt_write(&r, rbuf);
	expect_query_reject(rbuf, sizeof(rbuf));
}

static void test_query_reject_counts(void **state)
{
	(void)state;
	/* npath 33 with the bytes for 33 ids present: still too many */
	uint8_t d[8 + 33 * 8 + 17 * 5];
	memset(d, 0, sizeof(d));
	d[0] = 1;
	d[1] = 1;
	d[3] = INRP_MAX_PATH + 1;
	expect_query_reject(d, 8 + 33 * 8);
	d[3] = 255;
	expect_query_reject(d, sizeof(d));
	d[3] = 0;
	d[4] = INRP_MAX_EXCLUDE + 1;
	for (unsigned i = 0; i < 17; i++)
		d[8 + i * 5] = 1;
	expect_query_reject(d, 8 + 17 * 5);
	d[4] = 255;
	expect_query_reject(d, 8 + 17 * 5);
}

static void test_query_reject_truncated_path(void **state)
{
	(void)state;
	struct inrp_query_opt o;
	memset(&o, 0, sizeof(o));
	o.npath = 3;
	o.path[0] = 1;
	o.path[1] = 2;
	o.path[2] = 3;
	uint8_t buf[INRP_QUERY_OPT_MAX];
	size_t len = inrp_query_opt_write(&o, buf);
	assert_int_equal(len, 32);
	for (size_t l = 8; l < len; l++)
		expect_query_reject(buf, l);
}

static void test_query_reject_truncated_exclusion(void **state)
{
	(void)state;
	struct inrp_query_opt o;
	memset(&o, 0, sizeof(o));
	o.npath = 1;
	o.nexclude = 2;
	o.exclude[0].family = AF_INET;
	o.exclude[1].family = AF_INET6;
	uint8_t buf[INRP_QUERY_OPT_MAX];
	size_t len = inrp_query_opt_write(&o, buf);
	assert_int_equal(len, 8 + 8 + 5 + 17);
	/* every cut: before the family byte, inside either address */
	for (size_t l = 16; l < len; l++)
		expect_query_reject(buf, l);
}

static void test_query_reject_family(void **state)
{
	(void)state;
	static const uint8_t fams[] = { 0, 3, 4, 6, 10, 0x80, 255 };
	for (size_t i = 0; i < sizeof(fams); i++) {
		/* enough bytes after the family for either address size */
		uint8_t d[8 + 1 + 16] = { 1, 1, 1, 0, 1, 0, 0, 0 };
		d[8] = fams[i];
		expect_query_reject(d, 8 + 1 + 4);
		expect_query_reject(d, 8 + 1 + 16);
	}
	/* the second of two exclusions is bad */
	uint8_t d2[8 + 5 + 5] = { 1, 1, 1, 0, 2, 0, 0, 0, 1, 10, 0, 0, 1, 5, 10, 0, 0, 2 };
	expect_query_reject(d2, sizeof(d2));
	d2[13] = 1;
	struct inrp_query_opt o;
	const char *err = NULL;
	assert_int_equal(query_parse(d2, sizeof(d2), &o, &err), 0);
}

static void test_query_reject_trailing(void **state)
{
	(void)state;
	struct inrp_query_opt o;
	memset(&o, 0, sizeof(o));
	o.npath = 2;
	o.nexclude = 1;
	o.exclude[0].family = AF_INET;
	uint8_t buf[INRP_QUERY_OPT_MAX + 20];
	size_t len = inrp_query_opt_write(&o, buf);
	memset(buf + len, 0, 20);
	for (size_t extra = 1; extra <= 20; extra++)
		expect_query_reject(buf, len + extra);
	/* the empty option with one byte more */
	uint8_t d[9] = { 1, 1, 16, 0, 0, 0, 0, 0, 0 };
	expect_query_reject(d, 9);
	/* counts smaller than what follows: the exclusion is left over */
	buf[4] = 0;
	expect_query_reject(buf, len);
	buf[3] = 1;
	expect_query_reject(buf, len - 5);
}

/* ---- response kind ---- */

static void test_response_round_trip(void **state)
{
	(void)state;
	struct inrp_response_opt cases[] = {
		{ INRP_STATUS_OK, 0, 0 },
		{ INRP_STATUS_LOOP, 1, 0x0102030405060708ull },
		{ INRP_STATUS_HOP_LIMIT, 0xdeadbeef, UINT64_MAX },
		{ INRP_STATUS_UNREACHABLE, UINT32_MAX, 0xaf63dc4c8601ec8cull, 7 },
		{ INRP_STATUS_NO_ROUTE, 0, 1, UINT32_MAX },
		{ 200, 12345, 42 },     /* unknown status values are carried, not judged */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t buf[INRP_RESPONSE_OPT_LEN];
		assert_int_equal(inrp_response_opt_write(&cases[i], buf), INRP_RESPONSE_OPT_LEN);
		struct inrp_response_opt back;
		const char *err = NULL;
		memset(&back, 0xa5, sizeof(back));
		assert_int_equal(response_parse(buf, sizeof(buf), &back, &err), 0);
		assert_int_equal(back.status, cases[i].status);
		assert_int_equal(back.load_ms, cases[i].load_ms);
		assert_true(back.router_id == cases[i].router_id);
		assert_int_equal(back.origin, cases[i].origin);
	}
}

static void test_response_byte_layout(void **state)
{
	(void)state;
	struct inrp_response_opt o = { INRP_STATUS_UNREACHABLE, 0x01020304, 0x1112131415161718ull, 0x21222324 };
	uint8_t buf[INRP_RESPONSE_OPT_LEN];
	inrp_response_opt_write(&o, buf);
	static const uint8_t want[INRP_RESPONSE_OPT_LEN] = {
		1, 2, 3, 0, 1, 2, 3, 4, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18,
		0x21, 0x22, 0x23, 0x24,
	};
	assert_memory_equal(buf, want, sizeof(want));

	/* the reserved byte is ignored on receipt */
	uint8_t in[INRP_RESPONSE_OPT_LEN];
	memcpy(in, want, sizeof(in));
	in[3] = 0x5a;
	struct inrp_response_opt back;
	const char *err = NULL;
	assert_int_equal(response_parse(in, sizeof(in), &back, &err), 0);
	assert_int_equal(back.status, 3);
	assert_int_equal(back.load_ms, 0x01020304);
	assert_true(back.router_id == 0x1112131415161718ull);
	assert_int_equal(back.origin, 0x21222324);

	/* the first routers' 16 bytes, without origin: not known */
	assert_int_equal(response_parse(in, INRP_RESPONSE_OPT_LEN_V1, &back, &err), 0);
	assert_true(back.router_id == 0x1112131415161718ull);
	assert_int_equal(back.origin, 0);
}

static void expect_response_reject(const uint8_t *d, size_t len)
{
	struct inrp_response_opt o;
	const char *err = NULL;
	assert_int_equal(response_parse(d, len, &o, &err), -1);
	assert_non_null(err);
	assert_true(strlen(err) > 0);
}

static void test_response_reject(void **state)
{
	(void)state;
	uint8_t d[INRP_RESPONSE_OPT_LEN + 8];
	struct inrp_response_opt o = { INRP_STATUS_OK, 5, 6 };
	memset(d, 0, sizeof(d));
	inrp_response_opt_write(&o, d);

	/* wrong length, both ways */
	for (size_t len = 0; len < sizeof(d); len++)
		if (len != INRP_RESPONSE_OPT_LEN && len != INRP_RESPONSE_OPT_LEN_V1)
			expect_response_reject(d, len);

	/* bad version */
	d[0] = 0;
	expect_response_reject(d, INRP_RESPONSE_OPT_LEN);
	d[0] = 2;
	expect_response_reject(d, INRP_RESPONSE_OPT_LEN);
	d[0] = 1;

	/* wrong kind */
	d[1] = INRP_KIND_QUERY;
	expect_response_reject(d, INRP_RESPONSE_OPT_LEN);
	d[1] = 0;
	expect_response_reject(d, INRP_RESPONSE_OPT_LEN);
	d[1] = 3;
	expect_response_reject(d, INRP_RESPONSE_OPT_LEN);

	/* a 16-byte query option (one path entry) is not a response option */
	struct inrp_query_opt q;
	memset(&q, 0, sizeof(q));
	q.npath = 1;
	uint8_t qbuf[INRP_QUERY_OPT_MAX];
	assert_int_equal(inrp_query_opt_write(&q, qbuf), INRP_RESPONSE_OPT_LEN_V1);
	expect_response_reject(qbuf, INRP_RESPONSE_OPT_LEN_V1);
}

/* ---- path and exclusions ---- */

static void test_path_contains(void **state)
{
	(void)state;
	struct inrp_query_opt o;
	memset(&o, 0, sizeof(o));
	uint64_t a = inrp_router_id("a.example"), b = inrp_router_id("b.example");
	uint64_t c = inrp_router_id("c.example");
	assert_false(inrp_path_contains(&o, a));
	assert_false(inrp_path_contains(&o, 0));        /* an empty path holds nothing, not even 0 */

	o.path[0] = a;
	o.path[1] = b;
	o.path[2] = c;                                  /* beyond npath: not on the path */
	o.npath = 2;
	assert_true(inrp_path_contains(&o, a));
	assert_true(inrp_path_contains(&o, b));
	assert_false(inrp_path_contains(&o, c));

	o.npath = INRP_MAX_PATH;
	for (unsigned i = 0; i < INRP_MAX_PATH; i++)
		o.path[i] = 1000 + i;
	assert_true(inrp_path_contains(&o, 1000));
	assert_true(inrp_path_contains(&o, 1000 + INRP_MAX_PATH - 1));
	assert_false(inrp_path_contains(&o, 1000 + INRP_MAX_PATH));
	assert_false(inrp_path_contains(&o, a));
}

static void test_is_excluded(void **state)
{
	(void)state;
	struct inrp_query_opt o;
	memset(&o, 0, sizeof(o));
	const uint8_t v4[4] = { 192, 0, 2, 1 };
	const uint8_t v4b[4] = { 192, 0, 2, 2 };
	uint8_t v6[16] = { 0x20, 0x01, 0x0d, 0xb8 };
	v6[15] = 1;
	uint8_t v6b[16];
	memcpy(v6b, v6, 16);
	v6b[15] = 2;
	/* an IPv6 address whose first 4 bytes are those of v4 */
	uint8_t v6_like_v4[16] = { 192, 0, 2, 1 };

	assert_false(inrp_is_excluded(&o, AF_INET, v4));
	assert_false(inrp_is_excluded(&o, AF_INET6, v6));

	/* build the exclusions through the parser, as a peer would send them */
	uint8_t d[8 + 5 + 17] = { 1, 1, 1, 0, 2, 0, 0, 0, 1, 192, 0, 2, 1, 2 };
	memcpy(d + 14, v6, 16);
	const char *err = NULL;
	assert_int_equal(query_parse(d, sizeof(d), &o, &err), 0);
	assert_true(inrp_is_excluded(&o, AF_INET, v4));
	assert_false(inrp_is_excluded(&o, AF_INET, v4b));
	assert_true(inrp_is_excluded(&o, AF_INET6, v6));
	assert_false(inrp_is_excluded(&o, AF_INET6, v6b));
	/* families do not mix */
	assert_false(inrp_is_excluded(&o, AF_INET6, v6_like_v4));
	assert_false(inrp_is_excluded(&o, AF_INET, v6));

	/* entries past nexclude do not count */
	o.nexclude = 1;
	assert_true(inrp_is_excluded(&o, AF_INET, v4));
	assert_false(inrp_is_excluded(&o, AF_INET6, v6));
}

/* ---- the option list ---- */

static size_t put_option(uint8_t *p, uint16_t code, const void *data, uint16_t len)
{
	p[0] = (uint8_t)(code >> 8);
	p[1] = (uint8_t)code;
	p[2] = (uint8_t)(len >> 8);
	p[3] = (uint8_t)len;
	if (len)
		memcpy(p + 4, data, len);
	return 4u + len;
}

/* Calls inrp_find_option on an exact-size heap copy; returns the offset of the data or -1. */
static long find(const uint8_t *opts, size_t len, uint16_t code, size_t *dlen)
{
	uint8_t *copy = malloc(len ? len : 1);
	assert_non_null(copy);
	if (len)
		memcpy(copy, opts, len);
	const uint8_t *data = NULL;
	*dlen = 12345;
	long off = -1;
	if (inrp_find_option(copy, len, code, &data, dlen)) {
		assert_non_null(data);
		assert_true(data >= copy && data + *dlen <= copy + len);
		off = data - copy;
	}
	free(copy);
	return off;
}

static void test_find_option(void **state)
{
	(void)state;
	uint8_t opts[256];
	size_t n = 0;
	n += put_option(opts + n, 10, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);     /* cookie */
	n += put_option(opts + n, INRP_OPTION_CODE, "\x01\x02\x00\x00", 4);
	n += put_option(opts + n, 8, "\x00\x01\x18\x00\xc0\x00\x02", 7);           /* ECS */
	n += put_option(opts + n, 12, NULL, 0);                                    /* padding */
	size_t dlen;

	/* middle */
	assert_int_equal(find(opts, n, INRP_OPTION_CODE, &dlen), 12 + 4);
	assert_int_equal(dlen, 4);
	/* first */
	assert_int_equal(find(opts, n, 10, &dlen), 4);
	assert_int_equal(dlen, 8);
	/* last, empty */
	assert_int_equal(find(opts, n, 12, &dlen), (long)n);
	assert_int_equal(dlen, 0);
	/* absent */
	assert_int_equal(find(opts, n, 65001, &dlen), -1);
	assert_int_equal(find(opts, n, 0, &dlen), -1);
	/* an empty list */
	assert_int_equal(find(opts, 0, INRP_OPTION_CODE, &dlen), -1);

	/* a list that is only our option, and ours last */
	uint8_t one[64];
	size_t m = put_option(one, INRP_OPTION_CODE, "abcdefghijklmnop", 16);
	assert_int_equal(find(one, m, INRP_OPTION_CODE, &dlen), 4);
	assert_int_equal(dlen, 16);
	uint8_t two[64];
	size_t k = put_option(two, 10, "12345678", 8);
	k += put_option(two + k, INRP_OPTION_CODE, "xy", 2);
	assert_int_equal(find(two, k, INRP_OPTION_CODE, &dlen), 12 + 4);
	assert_int_equal(dlen, 2);

	/* the first of two occurrences */
	k += put_option(two + k, INRP_OPTION_CODE, "zzz", 3);
	assert_int_equal(find(two, k, INRP_OPTION_CODE, &dlen), 12 + 4);
	assert_int_equal(dlen, 2);
}

static void test_find_option_truncated(void **state)
{
	(void)state;
	uint8_t opts[64];
	size_t n = 0;
	n += put_option(opts + n, 10, "12345678", 8);
	n += put_option(opts + n, INRP_OPTION_CODE, "\x01\x02\x00\x00", 4);
	size_t dlen;

	/* cut anywhere inside our option: not found, and nothing read past the list */
	for (size_t len = 12; len < n; len++)
		assert_int_equal(find(opts, len, INRP_OPTION_CODE, &dlen), -1);
	/* cut inside the option before it: not found either */
	for (size_t len = 0; len < 12; len++)
		assert_int_equal(find(opts, len, INRP_OPTION_CODE, &dlen), -1);
	/* a length that runs past the list hides what follows */
	opts[3] = 200;
	assert_int_equal(find(opts, n, INRP_OPTION_CODE, &dlen), -1);
	opts[2] = 0xff;
	opts[3] = 0xff;
	assert_int_equal(find(opts, n, INRP_OPTION_CODE, &dlen), -1);
	/* a stray 1..3 bytes after a complete list end the walk quietly */
	opts[2] = 0;
	opts[3] = 8;
	memset(opts + n, 0xfe, 3);
	for (size_t extra = 1; extra <= 3; extra++) {
		assert_int_equal(find(opts, n + extra, INRP_OPTION_CODE, &dlen), 12 + 4);
		assert_int_equal(find(opts, n + extra, 0xfefe, &dlen), -1);
	}
	assert_int_equal(find(opts, 3, 10, &dlen), -1);
}

/* ---- router ids ---- */

static void test_router_id(void **state)
{
	(void)state;
	/* FNV-1a 64 reference vectors */
	assert_true(inrp_router_id("") == 0xcbf29ce484222325ull);
	assert_true(inrp_router_id("a") == 0xaf63dc4c8601ec8cull);
	assert_true(inrp_router_id("foobar") == 0x85944171f73967e8ull);
	/* case and every byte count: ids hash the name as given */
	assert_true(inrp_router_id("router1.example") != inrp_router_id("Router1.example"));
	assert_true(inrp_router_id("r1") != inrp_router_id("r2"));
	/* bytes above 0x7f are taken unsigned */
	uint64_t h = 0xcbf29ce484222325ull;
	h ^= 0xff;
	h *= 0x100000001b3ull;
	assert_true(inrp_router_id("\xff") == h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_query_empty_path),
		cmocka_unit_test(test_query_byte_layout),
		cmocka_unit_test(test_query_full_path),
		cmocka_unit_test(test_query_largest),
		cmocka_unit_test(test_query_mixed_exclusions),
		cmocka_unit_test(test_query_budget),
		cmocka_unit_test(test_query_reserved_ignored),
		cmocka_unit_test(test_query_write_clamps),
		cmocka_unit_test(test_query_reject_short),
		cmocka_unit_test(test_query_reject_version_and_kind),
		cmocka_unit_test(test_query_reject_counts),
		cmocka_unit_test(test_query_reject_truncated_path),
		cmocka_unit_test(test_query_reject_truncated_exclusion),
		cmocka_unit_test(test_query_reject_family),
		cmocka_unit_test(test_query_reject_trailing),
		cmocka_unit_test(test_response_round_trip),
		cmocka_unit_test(test_response_byte_layout),
		cmocka_unit_test(test_response_reject),
		cmocka_unit_test(test_path_contains),
		cmocka_unit_test(test_is_excluded),
		cmocka_unit_test(test_find_option),
		cmocka_unit_test(test_find_option_truncated),
		cmocka_unit_test(test_router_id),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
