/*
 * lib/dns/dnspad.c and dohreq.c: padding to 468-byte blocks wherever the
 * OPT record sits, left alone when it cannot be; the smallest TTL of an
 * answer (the SOA's minimum for a negative one); base64url by RFC 4648's
 * vectors, strict; a DoH request's statuses.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "dnspad.h"
#include "dnsrr.h"
#include "dohreq.h"
#include "wire.h"

struct msg {
	uint8_t b[70000];
	size_t len;
};

static void put(struct msg *m, const void *p, size_t n)
{
	memcpy(m->b + m->len, p, n);
	m->len += n;
}

static void put16(struct msg *m, uint16_t v)
{
	wire_store16(m->b + m->len, v);
	m->len += 2;
}

static void put32(struct msg *m, uint32_t v)
{
	wire_store32(m->b + m->len, v);
	m->len += 4;
}

static void put_opt(struct msg *m)
{
	put(m, "", 1);
	put16(m, 41);
	put16(m, 1232);
	put32(m, 0);
	put16(m, 6);                    /* an NSID option of 2 bytes */
	put16(m, 3);
	put16(m, 2);
	put(m, "r1", 2);
}

static void put_glue(struct msg *m)
{
	put16(m, 0xc00c);
	put16(m, 1);
	put16(m, 1);
	put32(m, 60);
	put16(m, 4);
	put(m, "\xc0\0\2\1", 4);
}

/* A response to www.example A: answers with the TTLs given, then (opt_first) OPT and an A glue record, or the reverse. */
static void response(struct msg *m, const uint32_t *ttls, unsigned n, bool opt, bool opt_first)
{
	static const uint8_t qname[] = "\3www\7example";
	m->len = 0;
	put16(m, 0x1234);
	put16(m, 0x8180);
	put16(m, 1);
	put16(m, (uint16_t)n);
	put16(m, 0);
	put16(m, (uint16_t)(opt ? 2 : 1));
	put(m, qname, sizeof(qname));
	put16(m, 1);
	put16(m, 1);
	for (unsigned i = 0; i < n; i++) {
		put16(m, 0xc00c);
		put16(m, 1);
		put16(m, 1);
		put32(m, ttls[i]);
		put16(m, 4);
		put(m, "\x7f\0\0\x0a", 4);
	}
	if (opt && opt_first)
		put_opt(m);
	put_glue(m);
	if (opt && !opt_first)
		put_opt(m);
}

/* Every record still reads; the glue's address is intact. */
static void check_records(const struct msg *m, size_t len)
{
	struct dns_rr_iter it;
	struct dns_rr rr;
	int rc;
	unsigned glue = 0;
	dns_rr_iter_init(&it, m->b, len, 12 + 13 + 4, wire_load16(m->b + 6), 0, wire_load16(m->b + 10));
	while ((rc = dns_rr_next(&it, &rr)) == 1)
		if (rr.section == DNS_SECTION_ADDITIONAL && rr.type == 1)
			glue += memcmp(rr.rdata, "\xc0\0\2\1", 4) == 0;
	assert_int_equal(rc, 0);
	assert_int_equal(dns_rr_iter_offset(&it), len);
	assert_int_equal(glue, 1);
}

static void test_pad_to_blocks(void **state)
{
	(void)state;
	static struct msg m;
	uint32_t ttls[] = { 300, 60 };
	for (int first = 0; first < 2; first++) {
		response(&m, ttls, 2, true, first);
		assert_false(dns_msg_padded(m.b, m.len));
		size_t len = dns_msg_pad(m.b, m.len, sizeof(m.b), DNS_PAD_BLOCK_RESPONSE);
		assert_int_equal(len, DNS_PAD_BLOCK_RESPONSE);
		assert_true(dns_msg_padded(m.b, len));
		check_records(&m, len);
		/* padded once is padded: not again */
		assert_int_equal(dns_msg_pad(m.b, len, sizeof(m.b), DNS_PAD_BLOCK_RESPONSE), len);
	}
	/* a bigger message takes the next block */
	uint32_t many[40];
	for (unsigned i = 0; i < 40; i++)
		many[i] = 100 + i;
	response(&m, many, 40, true, false);
	assert_true(m.len > DNS_PAD_BLOCK_RESPONSE);
	assert_int_equal(dns_msg_pad(m.b, m.len, sizeof(m.b), DNS_PAD_BLOCK_RESPONSE), 2 * DNS_PAD_BLOCK_RESPONSE);
}

static void test_pad_left_alone(void **state)
{
	(void)state;
	static struct msg m;
	uint32_t ttl = 5;
	response(&m, &ttl, 1, false, false);
	assert_int_equal(dns_msg_pad(m.b, m.len, sizeof(m.b), DNS_PAD_BLOCK_RESPONSE), m.len);     /* no OPT */
	response(&m, &ttl, 1, true, false);
	assert_int_equal(dns_msg_pad(m.b, m.len, m.len + 10, DNS_PAD_BLOCK_RESPONSE), m.len);      /* no room */
	assert_int_equal(dns_msg_pad(m.b, m.len - 3, sizeof(m.b), DNS_PAD_BLOCK_RESPONSE), m.len - 3); /* cut */
	/* an OPT whose data ends in part of an option: padding added after it
	 * would not be read as an option (fuzz_doh's finding) */
	m.len = 0;
	response(&m, &ttl, 1, false, false);
	m.b[11] = 2;                            /* ARCOUNT: the glue and this OPT */
	put(&m, "", 1);
	put16(&m, 41);
	put16(&m, 1232);
	put32(&m, 0);
	put16(&m, 3);                           /* three bytes: no whole option */
	put(&m, "\x00\x0a\x00", 3);
	assert_int_equal(dns_msg_pad(m.b, m.len, sizeof(m.b), DNS_PAD_BLOCK_RESPONSE), m.len);
	assert_false(dns_msg_padded(m.b, m.len));
}

static void test_min_ttl(void **state)
{
	(void)state;
	static struct msg m;
	uint32_t ttls[] = { 300, 60, 90 };
	response(&m, ttls, 3, true, true);
	assert_int_equal(dns_msg_min_ttl(m.b, m.len, 7), 60);       /* the glue's 60 is additional: not counted */
	ttls[1] = 600;
	response(&m, ttls, 3, true, false);
	assert_int_equal(dns_msg_min_ttl(m.b, m.len, 7), 90);
	response(&m, ttls, 0, false, false);
	assert_int_equal(dns_msg_min_ttl(m.b, m.len, 7), 7);
	/* NXDOMAIN with an SOA of TTL 3600, minimum 300 */
	m.len = 0;
	put(&m, "\x12\x34\x81\x83\0\1\0\0\0\1\0\0", 12);
	put(&m, "\1x\7example\0\0\1\0\1", 15);
	put(&m, "\7example\0\0\6\0\1", 13);
	put32(&m, 3600);
	put16(&m, 1 + 1 + 20);          /* the root as MNAME and RNAME */
	put(&m, "\0\0", 2);
	put32(&m, 1);
	put32(&m, 3600);
	put32(&m, 600);
	put32(&m, 86400);
	put32(&m, 300);
	assert_int_equal(dns_msg_min_ttl(m.b, m.len, 7), 300);
	assert_int_equal(dns_msg_min_ttl(m.b, m.len - 1, 7), -1);
}

static void test_base64url(void **state)
{
	(void)state;
	static const struct {
		const char *in, *out;
	} ok[] = { { "", "" }, { "Zg", "f" }, { "Zm8", "fo" }, { "Zm9v", "foo" }, { "Zm9vYg", "foob" },
		   { "Zm9vYmE", "fooba" }, { "Zm9vYmFy", "foobar" }, { "-_8", "\xfb\xff" } };
	uint8_t buf[16];
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		long n = base64url_decode(ok[i].in, strlen(ok[i].in), buf, sizeof(buf));
		assert_int_equal(n, strlen(ok[i].out));
		assert_memory_equal(buf, ok[i].out, (size_t)n);
	}
	static const char *const bad[] = { "Zm9vY", "Zm9vYg==", "Zm9v+g", "Zm9v/g", "Zh", "Zm9vYh", "Zm 9v" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(base64url_decode(bad[i], strlen(bad[i]), buf, sizeof(buf)), -1);
	assert_int_equal(base64url_decode("Zm9vYmFy", 8, buf, 5), -1);     /* does not fit */
}

static size_t request_len;

static uint16_t request(const char *method, const char *path, const char *ctype, const char *body, size_t blen)
{
	struct dohreq r;
	const uint8_t *msg;
	size_t len;
	dohreq_init(&r, "/dns-query");
	if (method)
		dohreq_header(&r, (const uint8_t *)":method", 7, (const uint8_t *)method, strlen(method));
	if (path)
		dohreq_header(&r, (const uint8_t *)":path", 5, (const uint8_t *)path, strlen(path));
	if (ctype)
		dohreq_header(&r, (const uint8_t *)"content-type", 12, (const uint8_t *)ctype, strlen(ctype));
	if (body)
		dohreq_body(&r, (const uint8_t *)body, blen);
	uint16_t status = dohreq_finish(&r, &msg, &len);
	request_len = status == 0 ? len : 0;
	dohreq_free(&r);
	return status;
}

static void test_doh_statuses(void **state)
{
	(void)state;
	const char *q12 = "/dns-query?dns=EjQBAAAAAAAAAAAA";        /* a 12-byte header */
	static char big[70000];
	assert_int_equal(request("GET", q12, NULL, NULL, 0), 0);
	assert_int_equal(request_len, 12);
	assert_int_equal(request("GET", "/dns-query?a=b&dns=EjQBAAAAAAAAAAAA&c", NULL, NULL, 0), 0);
	assert_int_equal(request("POST", "/dns-query", "application/dns-message", "\x12\x34\1\0\0\0\0\0\0\0\0\0", 12), 0);
	assert_int_equal(request("POST", "/dns-query", "Application/DNS-Message; x=y", "\x12\x34\1\0\0\0\0\0\0\0\0\0", 12), 0);
	assert_int_equal(request("GET", "/dns-query", NULL, NULL, 0), 400);
	assert_int_equal(request("GET", "/dns-query?dns=EjQB", NULL, NULL, 0), 400);
	assert_int_equal(request("GET", "/dns-query?dns=EjQBAAAAAAAAAAAA=", NULL, NULL, 0), 400);
	assert_int_equal(request("GET", "/dns-query?dns=EjQBAAAAAAAAAAAA&dns=EjQBAAAAAAAAAAAA", NULL, NULL, 0), 400);
	assert_int_equal(request("GET", NULL, NULL, NULL, 0), 400);
	assert_int_equal(request(NULL, q12, NULL, NULL, 0), 400);
	assert_int_equal(request("GET", "/dns-query2?dns=EjQBAAAAAAAAAAAA", NULL, NULL, 0), 404);
	assert_int_equal(request("HEAD", q12, NULL, NULL, 0), 405);
	assert_int_equal(request("POST", "/dns-query", "text/plain", "\x12\x34\1\0\0\0\0\0\0\0\0\0", 12), 415);
	assert_int_equal(request("POST", "/dns-query", NULL, "\x12\x34\1\0\0\0\0\0\0\0\0\0", 12), 415);
	assert_int_equal(request("POST", "/dns-query", "application/dns-message", big, sizeof(big)), 413);
	assert_int_equal(request("POST", "/dns-query", "application/dns-message", big, 65535), 0);
	assert_int_equal(request_len, 65535);
	assert_int_equal(request("POST", q12, "application/dns-message", "\x12\x34\1\0\0\0\0\0\0\0\0\0", 12), 400);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pad_to_blocks),
		cmocka_unit_test(test_pad_left_alone),
		cmocka_unit_test(test_min_ttl),
		cmocka_unit_test(test_base64url),
		cmocka_unit_test(test_doh_statuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
