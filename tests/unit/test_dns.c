/*
 * lib/dns/dns.c: query parsing (accept and reject cases) and the response
 * builder.  Every built response is also parsed with ldns, so the tests
 * check it is valid DNS, not only that our own reader agrees with itself.
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
#include <ldns/ldns.h>

#include "dns.h"
#include "testpkt.h"

/* ---- building test queries by hand ---- */

/* OPT RR: owner root, udp size, ext rcode 0, version, DO, rdata given */
static void opt(struct pkt *p, uint16_t udp, uint8_t version, bool dnssec_ok,
		const uint8_t *rdata, uint16_t rdlen)
{
	put8(p, 0);
	put16(p, DNS_TYPE_OPT);
	put16(p, udp);
	put32(p, ((uint32_t)version << 16) | (dnssec_ok ? 0x8000u : 0));
	put16(p, rdlen);
	if (rdlen)
		put_bytes(p, rdata, rdlen);
}

static void simple_query(struct pkt *p, const char *name, uint16_t type)
{
	header(p, 0x1234, 0x01, 0x00, 1, 0, 0, 0);      /* RD */
	question(p, name, type, DNS_CLASS_IN);
}

static void edns_query(struct pkt *p, const char *name, uint16_t type, uint16_t udp)
{
	header(p, 0xbeef, 0x01, 0x00, 1, 0, 0, 1);
	question(p, name, type, DNS_CLASS_IN);
	opt(p, udp, 0, false, NULL, 0);
}

/* Parses an exact-size heap copy, so a sanitizer build catches any read past the end. */
static int parse(const struct pkt *p, struct dns_query *q)
{
	uint8_t *copy = malloc(p->len ? p->len : 1);
	assert_non_null(copy);
	memcpy(copy, p->b, p->len);
	int rc = dns_query_parse(copy, p->len, q);
	free(copy);
	return rc;
}

/* ---- parser: accepted queries ---- */

static void test_parse_simple(void **state)
{
	(void)state;
	struct pkt p;
	struct dns_query q;
	simple_query(&p, "wWw.ExAmPlE.content", DNS_TYPE_A);
	assert_int_equal(parse(&p, &q), DNS_PARSE_OK);
	assert_int_equal(q.id, 0x1234);
	assert_int_equal(q.opcode, 0);
	assert_true(q.rd);
	assert_false(q.cd);
	assert_true(q.has_question);
	assert_int_equal(q.qtype, DNS_TYPE_A);
	assert_int_equal(q.qclass, DNS_CLASS_IN);
	assert_false(q.has_edns);
	assert_int_equal(q.udp_size, 512);

	struct name want;
	assert_int_equal(name_from_text(&want, "www.example.content", 19), NAME_OK);
	assert_true(name_equal(&q.qname, &want));
	/* the original case is kept for the echo */
	assert_int_equal(q.qname.len, 21);
	assert_memory_equal(q.qname_orig, "\003wWw\007ExAmPlE\007content\000", 21);
}

/* Every octet in a label: only A-Z change case, as name_from_packet has it. */
static void test_parse_lowercases_as_name_from_packet(void **state)
{
	(void)state;
	for (unsigned half = 0; half < 256; half += 128) {
		struct pkt p;
		struct dns_query q;
		uint8_t wire[NAME_MAX_WIRE];
		size_t n = 0;
		for (unsigned c = half; c < half + 128; c += 60) {
			unsigned lab = half + 128 - c < 60 ? half + 128 - c : 60;
			wire[n++] = (uint8_t)lab;
			for (unsigned k = 0; k < lab; k++)
				wire[n++] = (uint8_t)(c + k);
		}
		wire[n++] = 0;
		header(&p, 1, 0x01, 0x00, 1, 0, 0, 0);
		put_bytes(&p, wire, n);
		put16(&p, DNS_TYPE_A);
		put16(&p, DNS_CLASS_IN);
		assert_int_equal(parse(&p, &q), DNS_PARSE_OK);

		struct name want;
		size_t pos = DNS_HEADER_LEN;
		assert_int_equal(name_from_packet(&want, p.b, p.len, &pos), NAME_OK);
		assert_int_equal(q.qname.len, n);
		assert_memory_equal(q.qname.wire, want.wire, n);
		assert_memory_equal(q.qname_orig, wire, n);
	}
}

static void test_parse_root_and_flags(void **state)
{
	(void)state;
	struct pkt p;
	struct dns_query q;
	header(&p, 7, 0x00, 0x10, 1, 0, 0, 0);          /* RD clear, CD set */
	put8(&p, 0);
	put16(&p, DNS_TYPE_NS);
	put16(&p, DNS_CLASS_IN);
	assert_int_equal(parse(&p, &q), DNS_PARSE_OK);
	assert_false(q.rd);
	assert_true(q.cd);
	assert_int_equal(q.qname.len, 1);
}

static void test_parse_ldns_built_query(void **state)
{
	(void)state;
	ldns_pkt *lq = NULL;
	assert_int_equal(ldns_pkt_query_new_frm_str(&lq, "Cart.Shop.example.content", LDNS_RR_TYPE_AAAA,
						    LDNS_RR_CLASS_IN, LDNS_RD), LDNS_STATUS_OK);
	ldns_pkt_set_id(lq, 4242);
	ldns_pkt_set_edns_udp_size(lq, 1400);
	ldns_pkt_set_edns_do(lq, true);
	uint8_t *wire = NULL;
	size_t len = 0;
	assert_int_equal(ldns_pkt2wire(&wire, lq, &len), LDNS_STATUS_OK);

	struct dns_query q;
	assert_int_equal(dns_query_parse(wire, len, &q), DNS_PARSE_OK);
	assert_int_equal(q.id, 4242);
	assert_int_equal(q.qtype, DNS_TYPE_AAAA);
	assert_true(q.has_edns);
	assert_true(q.edns_do);
	assert_int_equal(q.udp_size, 1400);
	assert_memory_equal(q.qname_orig, "\004Cart\004Shop", 10);
	LDNS_FREE(wire);
	ldns_pkt_free(lq);
}

static void test_parse_longest_name(void **state)
{
	(void)state;
	struct pkt p;
	struct dns_query q;
	/* 4 labels of 63 bytes = 256 bytes + root: one too many */
	char label[64];
	memset(label, 'a', 63);
	label[63] = 0;
	char text[300];
	snprintf(text, sizeof(text), "%s.%s.%s.%.61s", label, label, label, label);
	simple_query(&p, text, DNS_TYPE_A);             /* 3*64 + 62 + 1 = 255 bytes */
	assert_int_equal(parse(&p, &q), DNS_PARSE_OK);
	assert_int_equal(q.qname.len, 255);

	snprintf(text, sizeof(text), "%s.%s.%s.%.62s", label, label, label, label);
	simple_query(&p, text, DNS_TYPE_A);             /* 256 bytes */
	assert_int_equal(parse(&p, &q), DNS_RCODE_FORMERR);
}

/* ---- parser: rejected queries ---- */

static void test_parse_short_header_dropped(void **state)
{
	(void)state;
	struct pkt p;
	struct dns_query q;
	simple_query(&p, "www.example.content", DNS_TYPE_A);
	struct pkt cut = p;
	for (cut.len = 0; cut.len < DNS_HEADER_LEN; cut.len++)
		assert_int_equal(parse(&cut, &q), DNS_PARSE_DROP);
}

static void test_parse_response_dropped(void **state)
{
	(void)state;
	struct pkt p;
	struct dns_query q;
	simple_query(&p, "www.example.content", DNS_TYPE_A);
	p.b[2] |= 0x80;                                 /* QR */
	assert_int_equal(parse(&p, &q), DNS_PARSE_DROP);
}

static void test_parse_opcode_notimp(void **state)
{
	(void)state;
	struct pkt p;
	struct dns_query q;
	for (unsigned op = 1; op < 16; op++) {
		simple_query(&p, "www.example.content", DNS_TYPE_SOA);
		p.b[2] = (uint8_t)((op << 3) | 0x01);
		assert_int_equal(parse(&p, &q), DNS_RCODE_NOTIMP);
		assert_int_equal(q.opcode, op);
		assert_int_equal(q.id, 0x1234);
		assert_false(q.has_question);
	}
}

static void test_parse_counts(void **state)
{
	(void)state;
	struct pkt p;
	struct dns_query q;
	header(&p, 1, 0, 0, 0, 0, 0, 0);                /* QDCOUNT 0 */
	assert_int_equal(parse(&p, &q), DNS_RCODE_FORMERR);

	header(&p, 1, 0, 0, 2, 0, 0, 0);                /* QDCOUNT 2 */
	question(&p, "a.example", DNS_TYPE_A, DNS_CLASS_IN);
	question(&p, "b.example", DNS_TYPE_A, DNS_CLASS_IN);
	assert_int_equal(parse(&p, &q), DNS_RCODE_FORMERR);
	assert_false(q.has_question);

	header(&p, 1, 0, 0, 1, 1, 0, 0);                /* an answer in a query */
	question(&p, "a.example", DNS_TYPE_A, DNS_CLASS_IN);
	put16(&p, 0xC00C); put16(&p, DNS_TYPE_A); put16(&p, 1); put32(&p, 5); put16(&p, 4); put32(&p, 0x7f000001);
	assert_int_equal(parse(&p, &q), DNS_RCODE_FORMERR);

	header(&p, 1, 0, 0, 1, 0, 1, 0);                /* authority in a query */
	question(&p, "a.example", DNS_TYPE_A, DNS_CLASS_IN);
	put16(&p, 0xC00C); put16(&p, DNS_TYPE_A); put16(&p, 1); put32(&p, 5); put16(&p, 4); put32(&p, 0x7f000001);
	assert_int_equal(parse(&p, &q), DNS_RCODE_FORMERR);

	header(&p, 1, 0, 0, 1, 0, 0, 1);                /* ARCOUNT 1 but nothing there */
	question(&p, "a.example", DNS_TYPE_A, DNS_CLASS_IN);
	assert_int_equal(parse(&p, &q), DNS_RCODE_FORMERR);
}

static void test_parse_compression_in_question(void **state)
{
	(void)state;
	struct pkt p;
	struct dns_query q;
	/* a loop: the name points at itself */
	header(&p, 1, 0, 0, 1, 0, 0, 0);
	put16(&p, 0xC00C);
	put16(&p, DNS_TYPE_A);
	put16(&p, DNS_CLASS_IN);
	assert_int_equal(parse(&p, &q), DNS_RCODE_FORMERR);

	/* a label, then a pointer back to it */
	header(&p, 1, 0, 0, 1, 0, 0, 0);
	put8(&p, 3); put_bytes(&p, "www", 3); put16(&p, 0xC00C);
	put16(&p, DNS_TYPE_A);
	put16(&p, DNS_CLASS_IN);
	assert_int_equal(parse(&p, &q), DNS_RCODE_FORMERR);

	/* a pointer into the header (offset 5 holds 0x01 then 0x00 ...) */
	header(&p, 1, 0, 0, 1, 0, 0, 0);
	put16(&p, 0xC004);
	put16(&p, DNS_TYPE_A);
	put16(&p, DNS_CLASS_IN);
	assert_int_equal(parse(&p, &q), DNS_RCODE_FORMERR);

	/* a forward pointer */
	header(&p, 1, 0, 0, 1, 0, 0, 0);
	put16(&p, 0xC012);
	put16(&p, DNS_TYPE_A);
	put16(&p, DNS_CLASS_IN);
	put_name(&p, "x.example");
	assert_int_equal(parse(&p, &q), DNS_RCODE_FORMERR);
}

static void test_parse_bad_labels(void **state)
{
	(void)state;
	struct pkt p;
	struct dns_query q;
	uint8_t big[64];
	memset(big, 'x', sizeof(big));

	header(&p, 1, 0, 0, 1, 0, 0, 0);                /* a 64-byte label */
	put8(&p, 64); put_bytes(&p, big, 64); put8(&p, 0);
	put16(&p, DNS_TYPE_A); put16(&p, DNS_CLASS_IN);
	assert_int_equal(parse(&p, &q), DNS_RCODE_FORMERR);

	header(&p, 1, 0, 0, 1, 0, 0, 0);                /* 0x80 label type */
	put8(&p, 0x81); put8(&p, 'a'); put8(&p, 0);
	put16(&p, DNS_TYPE_A); put16(&p, DNS_CLASS_IN);
	assert_int_equal(parse(&p, &q), DNS_RCODE_FORMERR);

	header(&p, 1, 0, 0, 1, 0, 0, 0);                /* label runs past the end */
	put8(&p, 10); put_bytes(&p, "abc", 3);
	assert_int_equal(parse(&p, &q), DNS_RCODE_FORMERR);

	header(&p, 1, 0, 0, 1, 0, 0, 0);                /* no root label */
	put8(&p, 3); put_bytes(&p, "abc", 3);
	assert_int_equal(parse(&p, &q), DNS_RCODE_FORMERR);
}

static void test_parse_truncated_and_trailing(void **state)
{
	(void)state;
	struct pkt p;
	struct dns_query q;
	edns_query(&p, "www.example.content", DNS_TYPE_A, 1232);
	/* every strict prefix past the header is malformed */
	struct pkt cut = p;
	for (cut.len = DNS_HEADER_LEN; cut.len < p.len; cut.len++)
		assert_int_equal(parse(&cut, &q), DNS_RCODE_FORMERR);
	assert_int_equal(parse(&p, &q), DNS_PARSE_OK);

	put8(&p, 0);                                    /* one byte of trailing garbage */
	assert_int_equal(parse(&p, &q), DNS_RCODE_FORMERR);
}

static void test_parse_qtype_opt(void **state)
{
	(void)state;
	struct pkt p;
	struct dns_query q;
	simple_query(&p, "www.example.content", DNS_TYPE_OPT);
	assert_int_equal(parse(&p, &q), DNS_RCODE_FORMERR);
}

/* ---- parser: EDNS ---- */

static void test_edns_basic(void **state)
{
	(void)state;
	struct pkt p;
	struct dns_query q;
	header(&p, 9, 0x01, 0, 1, 0, 0, 1);
	question(&p, "www.example.content", DNS_TYPE_A, DNS_CLASS_IN);
	opt(&p, 4096, 0, true, NULL, 0);
	assert_int_equal(parse(&p, &q), DNS_PARSE_OK);
	assert_true(q.has_edns);
	assert_true(q.edns_do);
	assert_int_equal(q.edns_version, 0);
	assert_int_equal(q.edns_udp_raw, 4096);
	assert_int_equal(q.udp_size, 4096);
	assert_int_equal(q.edns_opts_len, 0);
}

static void test_edns_payload_clamped(void **state)
{
	(void)state;
	static const struct { uint16_t sent, got; } cases[] = {
		{ 0, 512 }, { 100, 512 }, { 511, 512 }, { 512, 512 }, { 1232, 1232 },
		{ 4096, 4096 }, { 4097, 4096 }, { 65535, 4096 },
	};
	struct pkt p;
	struct dns_query q;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		edns_query(&p, "www.example.content", DNS_TYPE_A, cases[i].sent);
		assert_int_equal(parse(&p, &q), DNS_PARSE_OK);
		assert_int_equal(q.edns_udp_raw, cases[i].sent);
		assert_int_equal(q.udp_size, cases[i].got);
	}
	/* our own cap applies on top of the client's */
	edns_query(&p, "www.example.content", DNS_TYPE_A, 4096);
	assert_int_equal(parse(&p, &q), DNS_PARSE_OK);
	assert_int_equal(dns_query_udp_limit(&q, 1232), 1232);
	assert_int_equal(dns_query_udp_limit(&q, 4096), 4096);
	edns_query(&p, "www.example.content", DNS_TYPE_A, 600);
	assert_int_equal(parse(&p, &q), DNS_PARSE_OK);
	assert_int_equal(dns_query_udp_limit(&q, 1232), 600);
	simple_query(&p, "www.example.content", DNS_TYPE_A);
	assert_int_equal(parse(&p, &q), DNS_PARSE_OK);
	assert_int_equal(dns_query_udp_limit(&q, 1232), 512);
}

static void test_edns_badvers(void **state)
{
	(void)state;
	struct pkt p;
	struct dns_query q;
	header(&p, 9, 0x01, 0, 1, 0, 0, 1);
	question(&p, "www.example.content", DNS_TYPE_A, DNS_CLASS_IN);
	opt(&p, 1232, 1, false, NULL, 0);
	assert_int_equal(parse(&p, &q), DNS_RCODE_BADVERS);
	assert_true(q.has_question);
	assert_true(q.has_edns);
	assert_int_equal(q.edns_version, 1);

	/* a malformed packet is FORMERR even with a version we do not speak */
	put8(&p, 0);
	assert_int_equal(parse(&p, &q), DNS_RCODE_FORMERR);
}

static void test_edns_two_opts(void **state)
{
	(void)state;
	struct pkt p;
	struct dns_query q;
	header(&p, 9, 0x01, 0, 1, 0, 0, 2);
	question(&p, "www.example.content", DNS_TYPE_A, DNS_CLASS_IN);
	opt(&p, 1232, 0, false, NULL, 0);
	opt(&p, 1232, 0, false, NULL, 0);
	assert_int_equal(parse(&p, &q), DNS_RCODE_FORMERR);
}

static void test_edns_owner_not_root(void **state)
{
	(void)state;
	struct pkt p;
	struct dns_query q;
	header(&p, 9, 0x01, 0, 1, 0, 0, 1);
	question(&p, "www.example.content", DNS_TYPE_A, DNS_CLASS_IN);
	put16(&p, 0xC00C);                              /* owner: the question name */
	put16(&p, DNS_TYPE_OPT); put16(&p, 1232); put32(&p, 0); put16(&p, 0);
	assert_int_equal(parse(&p, &q), DNS_RCODE_FORMERR);

	header(&p, 9, 0x01, 0, 1, 0, 0, 1);
	question(&p, "www.example.content", DNS_TYPE_A, DNS_CLASS_IN);
	put_name(&p, "x.example");
	put16(&p, DNS_TYPE_OPT); put16(&p, 1232); put32(&p, 0); put16(&p, 0);
	assert_int_equal(parse(&p, &q), DNS_RCODE_FORMERR);

	/* the owner must be the single root byte: here "\000." followed by an OPT */
	header(&p, 9, 0x01, 0, 1, 0, 0, 1);
	question(&p, "www.example.content", DNS_TYPE_A, DNS_CLASS_IN);
	put8(&p, 1);
	put16(&p, DNS_TYPE_OPT); put16(&p, 1232); put32(&p, 0); put16(&p, 0);
	assert_int_equal(parse(&p, &q), DNS_RCODE_FORMERR);

	/* a root-owned record that is not an OPT (a TSIG, say) */
	header(&p, 9, 0x01, 0, 1, 0, 0, 1);
	question(&p, "www.example.content", DNS_TYPE_A, DNS_CLASS_IN);
	put8(&p, 0); put16(&p, 250); put16(&p, 255); put32(&p, 0); put16(&p, 0);
	assert_int_equal(parse(&p, &q), DNS_RCODE_FORMERR);
}

static void test_edns_options(void **state)
{
	(void)state;
	struct pkt p;
	struct dns_query q;
	/* a client cookie (10, 8 bytes) and an unknown local option (65001) */
	static const uint8_t rdata[] = {
		0x00, 0x0a, 0x00, 0x08, 1, 2, 3, 4, 5, 6, 7, 8,
		0xfd, 0xe9, 0x00, 0x03, 'i', 'n', 'r',
		0x00, 0x0c, 0x00, 0x00,                 /* padding, empty */
	};
	header(&p, 9, 0x01, 0, 1, 0, 0, 1);
	question(&p, "www.example.content", DNS_TYPE_A, DNS_CLASS_IN);
	size_t opt_at = p.len;
	opt(&p, 1232, 0, false, rdata, sizeof(rdata));
	assert_int_equal(parse(&p, &q), DNS_PARSE_OK);
	assert_true(q.has_edns);
	assert_int_equal(q.edns_opts_off, opt_at + DNS_OPT_RR_LEN);
	assert_int_equal(q.edns_opts_len, sizeof(rdata));
	assert_memory_equal(p.b + q.edns_opts_off, rdata, sizeof(rdata));
}

static void test_edns_bad_options(void **state)
{
	(void)state;
	struct pkt p;
	struct dns_query q;
	static const uint8_t overrun[] = { 0x00, 0x0a, 0x00, 0x09, 1, 2, 3, 4, 5, 6, 7, 8 };
	static const uint8_t partial[] = { 0x00, 0x0a, 0x00, 0x00, 0x00, 0x0a };

	header(&p, 9, 0x01, 0, 1, 0, 0, 1);
	question(&p, "www.example.content", DNS_TYPE_A, DNS_CLASS_IN);
	opt(&p, 1232, 0, false, overrun, sizeof(overrun));
	assert_int_equal(parse(&p, &q), DNS_RCODE_FORMERR);

	header(&p, 9, 0x01, 0, 1, 0, 0, 1);
	question(&p, "www.example.content", DNS_TYPE_A, DNS_CLASS_IN);
	opt(&p, 1232, 0, false, partial, sizeof(partial));
	assert_int_equal(parse(&p, &q), DNS_RCODE_FORMERR);

	/* RDLENGTH past the end of the packet */
	header(&p, 9, 0x01, 0, 1, 0, 0, 1);
	question(&p, "www.example.content", DNS_TYPE_A, DNS_CLASS_IN);
	put8(&p, 0); put16(&p, DNS_TYPE_OPT); put16(&p, 1232); put32(&p, 0); put16(&p, 4);
	put16(&p, 10);
	assert_int_equal(parse(&p, &q), DNS_RCODE_FORMERR);
}

/* ---- builder ---- */

static ldns_pkt *ldns_parse_ok(const uint8_t *buf, size_t len)
{
	ldns_pkt *lp = NULL;
	assert_int_equal(ldns_wire2pkt(&lp, buf, len), LDNS_STATUS_OK);
	assert_non_null(lp);
	return lp;
}

static void assert_ldns_question(ldns_pkt *lp, const char *name, uint16_t type)
{
	assert_int_equal(ldns_pkt_qdcount(lp), 1);
	ldns_rr *qr = ldns_rr_list_rr(ldns_pkt_question(lp), 0);
	assert_non_null(qr);
	char *owner = ldns_rdf2str(ldns_rr_owner(qr));
	assert_string_equal(owner, name);
	LDNS_FREE(owner);
	assert_int_equal(ldns_rr_get_type(qr), type);
	assert_int_equal(ldns_rr_get_class(qr), LDNS_RR_CLASS_IN);
}

static size_t build(const struct dns_query *q, unsigned rcode, uint8_t *buf, size_t limit,
		    unsigned n4, unsigned n6, uint16_t our_udp)
{
	struct dns_builder b;
	dns_response_init(&b, q, rcode, buf, limit);
	for (unsigned i = 0; i < n4; i++) {
		uint8_t a[4] = { 192, 0, 2, (uint8_t)(i + 1) };
		dns_response_add_addr(&b, AF_INET, a, 5);
	}
	for (unsigned i = 0; i < n6; i++) {
		uint8_t a[16] = { 0x20, 0x01, 0x0d, 0xb8 };
		a[15] = (uint8_t)(i + 1);
		dns_response_add_addr(&b, AF_INET6, a, 5);
	}
	return dns_response_finish(&b, our_udp);
}

static void test_build_header_bits(void **state)
{
	(void)state;
	struct pkt p;
	struct dns_query q;
	uint8_t buf[4096];

	for (int rd = 0; rd <= 1; rd++) {
		header(&p, 0xabcd, rd ? 0x01 : 0x00, 0x10 /* CD */, 1, 0, 0, 0);
		question(&p, "WwW.example.CONTENT", DNS_TYPE_A, DNS_CLASS_IN);
		assert_int_equal(parse(&p, &q), DNS_PARSE_OK);
		size_t len = build(&q, DNS_RCODE_NOERROR, buf, 512, 2, 0, 1232);
		assert_true(len > 0);
		assert_int_equal(buf[0], 0xab);
		assert_int_equal(buf[1], 0xcd);
		assert_int_equal(buf[2] & 0x80, 0x80);          /* QR */
		assert_int_equal(buf[2] & 0x78, 0);             /* opcode QUERY */
		assert_int_equal(buf[2] & 0x04, 0);             /* AA clear */
		assert_int_equal(buf[2] & 0x02, 0);             /* TC clear */
		assert_int_equal(buf[2] & 0x01, rd);            /* RD copied */
		assert_int_equal(buf[3] & 0x80, 0x80);          /* RA */
		assert_int_equal(buf[3] & 0x20, 0);             /* AD clear */
		assert_int_equal(buf[3] & 0x10, 0x10);          /* CD copied */
		assert_int_equal(buf[3] & 0x0f, 0);
		/* the question is echoed byte for byte, in the client's case */
		size_t qlen = p.len - DNS_HEADER_LEN;
		assert_memory_equal(buf + DNS_HEADER_LEN, p.b + DNS_HEADER_LEN, qlen);

		ldns_pkt *lp = ldns_parse_ok(buf, len);
		assert_int_equal(ldns_pkt_id(lp), 0xabcd);
		assert_true(ldns_pkt_qr(lp));
		assert_int_equal(ldns_pkt_rd(lp), rd);
		assert_true(ldns_pkt_ra(lp));
		assert_false(ldns_pkt_aa(lp));
		assert_false(ldns_pkt_tc(lp));
		assert_true(ldns_pkt_cd(lp));
		assert_int_equal(ldns_pkt_get_opcode(lp), LDNS_PACKET_QUERY);
		assert_int_equal(ldns_pkt_get_rcode(lp), LDNS_RCODE_NOERROR);
		assert_ldns_question(lp, "WwW.example.CONTENT.", LDNS_RR_TYPE_A);
		assert_false(ldns_pkt_edns(lp));
		ldns_pkt_free(lp);
	}
}

static void test_build_answers(void **state)
{
	(void)state;
	struct pkt p;
	struct dns_query q;
	uint8_t buf[4096];

	simple_query(&p, "Cart.Shop.example.content", DNS_TYPE_AAAA);
	assert_int_equal(parse(&p, &q), DNS_PARSE_OK);
	size_t len = build(&q, DNS_RCODE_NOERROR, buf, 512, 1, 3, 1232);
	assert_true(len > 0);
	ldns_pkt *lp = ldns_parse_ok(buf, len);
	assert_int_equal(ldns_pkt_ancount(lp), 4);
	ldns_rr_list *ans = ldns_pkt_answer(lp);
	assert_int_equal(ldns_rr_list_rr_count(ans), 4);
	for (size_t i = 0; i < 4; i++) {
		ldns_rr *rr = ldns_rr_list_rr(ans, i);
		char *owner = ldns_rdf2str(ldns_rr_owner(rr));
		assert_string_equal(owner, "Cart.Shop.example.content.");
		LDNS_FREE(owner);
		assert_int_equal(ldns_rr_ttl(rr), 5);
		assert_int_equal(ldns_rr_get_class(rr), LDNS_RR_CLASS_IN);
		char *rd = ldns_rdf2str(ldns_rr_rdf(rr, 0));
		if (i == 0) {
			assert_int_equal(ldns_rr_get_type(rr), LDNS_RR_TYPE_A);
			assert_string_equal(rd, "192.0.2.1");
		} else {
			assert_int_equal(ldns_rr_get_type(rr), LDNS_RR_TYPE_AAAA);
			char want[32];
			snprintf(want, sizeof(want), "2001:db8::%zu", i);
			assert_string_equal(rd, want);
		}
		LDNS_FREE(rd);
	}
	ldns_pkt_free(lp);
	/* the owner is a pointer to the question */
	size_t first_rr = DNS_HEADER_LEN + q.qname.len + 4;
	assert_int_equal(buf[first_rr], 0xC0);
	assert_int_equal(buf[first_rr + 1], DNS_HEADER_LEN);
}

static void test_build_truncation(void **state)
{
	(void)state;
	struct pkt p;
	struct dns_query q;
	uint8_t buf[4096];
	/* a 200-byte name and 16 AAAA records (448 bytes) exceed 512 */
	char text[256];
	snprintf(text, sizeof(text), "%.63s.%.63s.%.63s.example",
		 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
		 "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
		 "ccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc");
	simple_query(&p, text, DNS_TYPE_AAAA);
	assert_int_equal(parse(&p, &q), DNS_PARSE_OK);

	size_t len = build(&q, DNS_RCODE_NOERROR, buf, dns_query_udp_limit(&q, 1232), 0, 16, 1232);
	assert_int_equal(len, p.len);                           /* header + question only */
	assert_true(len <= 512);
	ldns_pkt *lp = ldns_parse_ok(buf, len);
	assert_true(ldns_pkt_tc(lp));
	assert_int_equal(ldns_pkt_ancount(lp), 0);
	assert_int_equal(ldns_pkt_get_rcode(lp), LDNS_RCODE_NOERROR);
	assert_ldns_question(lp, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa."
			     "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb."
			     "ccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc.example.",
			     LDNS_RR_TYPE_AAAA);
	ldns_pkt_free(lp);

	/* with EDNS 1232 it fits; the OPT RR is there, truncated or not */
	header(&p, 3, 0x01, 0, 1, 0, 0, 1);
	question(&p, text, DNS_TYPE_AAAA, DNS_CLASS_IN);
	opt(&p, 1232, 0, false, NULL, 0);
	assert_int_equal(parse(&p, &q), DNS_PARSE_OK);
	len = build(&q, DNS_RCODE_NOERROR, buf, dns_query_udp_limit(&q, 1232), 0, 16, 1232);
	lp = ldns_parse_ok(buf, len);
	assert_false(ldns_pkt_tc(lp));
	assert_int_equal(ldns_pkt_ancount(lp), 16);
	assert_true(ldns_pkt_edns(lp));
	assert_int_equal(ldns_pkt_edns_udp_size(lp), 1232);
	ldns_pkt_free(lp);

	/* EDNS with a 512 payload: truncated, but the OPT RR still goes out */
	header(&p, 3, 0x01, 0, 1, 0, 0, 1);
	question(&p, text, DNS_TYPE_AAAA, DNS_CLASS_IN);
	opt(&p, 512, 0, false, NULL, 0);
	assert_int_equal(parse(&p, &q), DNS_PARSE_OK);
	len = build(&q, DNS_RCODE_NOERROR, buf, dns_query_udp_limit(&q, 1232), 0, 16, 1232);
	assert_true(len <= 512);
	lp = ldns_parse_ok(buf, len);
	assert_true(ldns_pkt_tc(lp));
	assert_int_equal(ldns_pkt_ancount(lp), 0);
	assert_true(ldns_pkt_edns(lp));
	ldns_pkt_free(lp);

	/* over TCP there is no such limit */
	simple_query(&p, text, DNS_TYPE_AAAA);
	assert_int_equal(parse(&p, &q), DNS_PARSE_OK);
	len = build(&q, DNS_RCODE_NOERROR, buf, DNS_TCP_MAX, 0, 16, 1232);
	lp = ldns_parse_ok(buf, len);
	assert_false(ldns_pkt_tc(lp));
	assert_int_equal(ldns_pkt_ancount(lp), 16);
	ldns_pkt_free(lp);
}

static void test_build_exact_fit(void **state)
{
	(void)state;
	struct pkt p;
	struct dns_query q;
	uint8_t buf[4096];
	simple_query(&p, "www.example.content", DNS_TYPE_A);
	assert_int_equal(parse(&p, &q), DNS_PARSE_OK);
	size_t full = build(&q, DNS_RCODE_NOERROR, buf, 4096, 3, 0, 1232);
	assert_int_equal(full, p.len + 3 * 16);
	/* a limit of exactly that size fits; one byte less truncates */
	assert_int_equal(build(&q, DNS_RCODE_NOERROR, buf, full, 3, 0, 1232), full);
	assert_int_equal(buf[2] & 0x02, 0);
	assert_int_equal(build(&q, DNS_RCODE_NOERROR, buf, full - 1, 3, 0, 1232), p.len);
	assert_int_equal(buf[2] & 0x02, 0x02);
	/* too small for even the question: nothing to send */
	assert_int_equal(build(&q, DNS_RCODE_NOERROR, buf, p.len - 1, 1, 0, 1232), 0);
}

static void test_build_badvers(void **state)
{
	(void)state;
	struct pkt p;
	struct dns_query q;
	uint8_t buf[4096];
	header(&p, 77, 0x01, 0, 1, 0, 0, 1);
	question(&p, "www.example.content", DNS_TYPE_A, DNS_CLASS_IN);
	opt(&p, 4096, 1, true, NULL, 0);
	int rc = parse(&p, &q);
	assert_int_equal(rc, DNS_RCODE_BADVERS);
	size_t len = build(&q, (unsigned)rc, buf, dns_query_udp_limit(&q, 1232), 0, 0, 1232);
	assert_true(len > 0);
	assert_int_equal(buf[3] & 0x0f, 0);                     /* low bits of 16 */
	ldns_pkt *lp = ldns_parse_ok(buf, len);
	assert_true(ldns_pkt_edns(lp));
	assert_int_equal(ldns_pkt_edns_extended_rcode(lp), 1);  /* 16 >> 4 */
	assert_int_equal(ldns_pkt_edns_version(lp), 0);
	assert_true(ldns_pkt_edns_do(lp));
	assert_int_equal(ldns_pkt_edns_udp_size(lp), 1232);
	assert_int_equal(ldns_pkt_ancount(lp), 0);
	assert_ldns_question(lp, "www.example.content.", LDNS_RR_TYPE_A);
	ldns_pkt_free(lp);
}

static void test_build_errors_header_only(void **state)
{
	(void)state;
	struct pkt p;
	struct dns_query q;
	uint8_t buf[4096];

	/* FORMERR: id, RD kept; no question, no OPT */
	header(&p, 0x5151, 0x01, 0, 2, 0, 0, 0);
	question(&p, "a.example", DNS_TYPE_A, DNS_CLASS_IN);
	question(&p, "b.example", DNS_TYPE_A, DNS_CLASS_IN);
	int rc = parse(&p, &q);
	assert_int_equal(rc, DNS_RCODE_FORMERR);
	size_t len = build(&q, (unsigned)rc, buf, 512, 2, 0, 1232);
	assert_int_equal(len, DNS_HEADER_LEN);
	ldns_pkt *lp = ldns_parse_ok(buf, len);
	assert_int_equal(ldns_pkt_id(lp), 0x5151);
	assert_true(ldns_pkt_qr(lp));
	assert_true(ldns_pkt_rd(lp));
	assert_int_equal(ldns_pkt_get_rcode(lp), LDNS_RCODE_FORMERR);
	assert_int_equal(ldns_pkt_qdcount(lp), 0);
	assert_int_equal(ldns_pkt_ancount(lp), 0);
	ldns_pkt_free(lp);

	/* FORMERR for a second OPT: no question, but the first OPT was valid,
	 * so an OPT RR comes back (RFC 6891 6.1.1) */
	header(&p, 0x5152, 0x00, 0, 1, 0, 0, 2);
	question(&p, "www.example.content", DNS_TYPE_A, DNS_CLASS_IN);
	opt(&p, 1232, 0, true, NULL, 0);
	opt(&p, 1232, 0, false, NULL, 0);
	rc = parse(&p, &q);
	assert_int_equal(rc, DNS_RCODE_FORMERR);
	len = build(&q, (unsigned)rc, buf, 512, 0, 0, 1400);
	assert_int_equal(len, DNS_HEADER_LEN + DNS_OPT_RR_LEN);
	assert_int_equal(buf[2], 0x80);                         /* QR only: RD was clear */
	assert_int_equal(buf[3], 0x80 | DNS_RCODE_FORMERR);
	lp = ldns_parse_ok(buf, len);
	assert_int_equal(ldns_pkt_get_rcode(lp), LDNS_RCODE_FORMERR);
	assert_int_equal(ldns_pkt_qdcount(lp), 0);
	assert_true(ldns_pkt_edns(lp));
	assert_int_equal(ldns_pkt_edns_udp_size(lp), 1400);
	assert_true(ldns_pkt_edns_do(lp));
	ldns_pkt_free(lp);

	/* FORMERR in the OPT itself: header only */
	header(&p, 0x5153, 0x01, 0, 1, 0, 0, 1);
	question(&p, "www.example.content", DNS_TYPE_A, DNS_CLASS_IN);
	opt(&p, 1232, 0, false, (const uint8_t *)"\x00\x0a\x00\x09", 4);
	rc = parse(&p, &q);
	assert_int_equal(rc, DNS_RCODE_FORMERR);
	assert_int_equal(build(&q, (unsigned)rc, buf, 512, 0, 0, 1232), DNS_HEADER_LEN);

	/* NOTIMP: opcode echoed */
	simple_query(&p, "www.example.content", DNS_TYPE_SOA);
	p.b[2] = (4 << 3) | 0x01;                               /* NOTIFY */
	rc = parse(&p, &q);
	assert_int_equal(rc, DNS_RCODE_NOTIMP);
	len = build(&q, (unsigned)rc, buf, 512, 0, 0, 1232);
	assert_int_equal(len, DNS_HEADER_LEN);
	lp = ldns_parse_ok(buf, len);
	assert_int_equal(ldns_pkt_get_opcode(lp), LDNS_PACKET_NOTIFY);
	assert_int_equal(ldns_pkt_get_rcode(lp), LDNS_RCODE_NOTIMPL);
	assert_true(ldns_pkt_qr(lp));
	/* an opcode we do not know: no promise of recursion, CD not echoed */
	assert_false(ldns_pkt_ra(lp));
	assert_false(ldns_pkt_cd(lp));
	ldns_pkt_free(lp);
	p.b[3] |= 0x10;                                         /* CD */
	rc = parse(&p, &q);
	assert_int_equal(rc, DNS_RCODE_NOTIMP);
	len = build(&q, (unsigned)rc, buf, 512, 0, 0, 1232);
	assert_int_equal(buf[3] & 0x90, 0);                     /* RA and CD clear */
}

/* Several EDNS options, a generic record and a negative answer's SOA, checked by ldns. */
static void test_build_options_records_authority(void **state)
{
	(void)state;
	struct pkt p;
	struct dns_query q;
	uint8_t buf[4096];
	header(&p, 77, 0x01, 0, 1, 0, 0, 1);
	question(&p, "Www.Example.Content", 65, DNS_CLASS_IN);
	opt(&p, 1232, 0, false, NULL, 0);
	assert_int_equal(parse(&p, &q), DNS_PARSE_OK);

	struct dns_builder b;
	dns_response_init(&b, &q, DNS_RCODE_NOERROR, buf, 1232);
	assert_true(dns_response_add_option(&b, DNS_OPT_NSID, (const uint8_t *)"r1", 2));
	assert_true(dns_response_add_option(&b, DNS_OPT_EDE, (const uint8_t *)"\x00\x16x", 3));
	assert_true(dns_response_add_option(&b, 65100, (const uint8_t *)"", 0));
	assert_true(dns_response_add_option(&b, DNS_OPT_COOKIE, (const uint8_t *)"12345678", 8));
	assert_false(dns_response_add_option(&b, DNS_OPT_PADDING, (const uint8_t *)"", 0));
	static const uint8_t https[] = { 0, 1, 0 };             /* 1 . */
	assert_true(dns_response_add_rr(&b, 65, https, sizeof(https), 7));
	struct name apex;
	assert_int_equal(name_from_text(&apex, "example.content", 15), NAME_OK);
	uint8_t soa[2 * 255 + 20] = { 0 };
	memcpy(soa, apex.wire, apex.len);
	memcpy(soa + apex.len, apex.wire, apex.len);
	size_t soa_len = 2u * apex.len + 20;
	assert_true(dns_response_add_authority(&b, &apex, DNS_TYPE_SOA, soa, (uint16_t)soa_len, 5));
	/* answers after authority would be out of order */
	assert_false(dns_response_add_rr(&b, 65, https, sizeof(https), 7));
	size_t len = dns_response_finish(&b, 1232);
	ldns_pkt *lp = ldns_parse_ok(buf, len);
	assert_int_equal(ldns_pkt_ancount(lp), 1);
	assert_int_equal(ldns_pkt_nscount(lp), 1);
	ldns_rr *rr = ldns_rr_list_rr(ldns_pkt_answer(lp), 0);
	assert_int_equal(ldns_rr_get_type(rr), 65);
	assert_int_equal(ldns_rr_ttl(rr), 7);
	rr = ldns_rr_list_rr(ldns_pkt_authority(lp), 0);
	assert_int_equal(ldns_rr_get_type(rr), LDNS_RR_TYPE_SOA);
	char *owner = ldns_rdf2str(ldns_rr_owner(rr));
	assert_string_equal(owner, "example.content.");
	free(owner);
	/* the options, in order, in the OPT RR's data */
	ldns_rdf *ed = ldns_pkt_edns_data(lp);
	assert_non_null(ed);
	static const uint8_t want[] = {
		0, 3, 0, 2, 'r', '1', 0, 15, 0, 3, 0, 0x16, 'x', 0xfe, 0x4c, 0, 0,
		0, 10, 0, 8, '1', '2', '3', '4', '5', '6', '7', '8',
	};
	assert_int_equal(ldns_rdf_size(ed), sizeof(want));
	assert_memory_equal(ldns_rdf_data(ed), want, sizeof(want));
	ldns_pkt_free(lp);

	/* replayed after another question of the same length: records, counts, rcode, AD */
	size_t q_end = DNS_HEADER_LEN + q.qname.len + 4;
	size_t body_len = len - q_end - (11 + 4 + 2 + 4 + 3 + 4 + 4 + 8);     /* less our OPT RR */
	uint8_t body[512];
	memcpy(body, buf + q_end, body_len);
	size_t an_len = 2 + 10 + sizeof(https);
	uint8_t out[4096];
	struct dns_query q2;
	header(&p, 78, 0x01, 0, 1, 0, 0, 1);
	question(&p, "WWW.EXAMPLE.CONTENT", 65, DNS_CLASS_IN);
	opt(&p, 1232, 0, true, NULL, 0);
	assert_int_equal(parse(&p, &q2), DNS_PARSE_OK);
	dns_response_init(&b, &q2, DNS_RCODE_NOERROR, out, 1232);
	size_t copied;
	size_t at = dns_response_replay(&b, body, body_len, body_len, 1, 1, 0, DNS_RCODE_NXDOMAIN, true, &copied);
	assert_int_equal(at, q_end);
	assert_int_equal(copied, body_len);
	len = dns_response_finish(&b, 1232);
	lp = ldns_parse_ok(out, len);
	assert_int_equal(ldns_pkt_get_rcode(lp), LDNS_RCODE_NXDOMAIN);
	assert_true(ldns_pkt_ad(lp));                           /* the client set DO */
	assert_int_equal(ldns_pkt_ancount(lp), 1);
	assert_int_equal(ldns_pkt_nscount(lp), 1);
	owner = ldns_rdf2str(ldns_rr_owner(ldns_rr_list_rr(ldns_pkt_answer(lp), 0)));
	assert_string_equal(owner, "WWW.EXAMPLE.CONTENT.");   /* the pointer finds this question */
	free(owner);
	ldns_pkt_free(lp);
	/* answer and authority that do not fit: TC, the question only */
	dns_response_init(&b, &q2, DNS_RCODE_NOERROR, out, q_end + 11 + an_len);
	dns_response_replay(&b, body, body_len, body_len, 1, 1, 0, DNS_RCODE_NOERROR, false, &copied);
	assert_int_equal(copied, 0);
	assert_true(b.truncated);
	/* additional records that do not fit are left out, without TC */
	dns_response_init(&b, &q2, DNS_RCODE_NOERROR, out, q_end + 11 + body_len);
	dns_response_replay(&b, body, body_len + 0, an_len, 1, 0, 1, DNS_RCODE_NOERROR, false, &copied);
	assert_int_equal(copied, body_len);
	dns_response_init(&b, &q2, DNS_RCODE_NOERROR, out, q_end + 11 + body_len - 1);
	dns_response_replay(&b, body, body_len, an_len, 1, 0, 1, DNS_RCODE_NOERROR, false, &copied);
	assert_int_equal(copied, an_len);
	assert_false(b.truncated);
	assert_int_equal(b.arcount, 0);
	/* dns_response_truncate: TC and the question only */
	dns_response_init(&b, &q2, DNS_RCODE_NOERROR, out, 1232);
	dns_response_truncate(&b);
	len = dns_response_finish(&b, 1232);
	assert_true(out[2] & 0x02);
	assert_int_equal(len, q_end + 11);

	/* an SOA that does not fit truncates: a negative answer needs it */
	dns_response_init(&b, &q, DNS_RCODE_NOERROR, buf, DNS_HEADER_LEN + q.qname.len + 4 + 11 + 20);
	assert_false(dns_response_add_authority(&b, &apex, DNS_TYPE_SOA, soa, (uint16_t)soa_len, 5));
	assert_true(b.truncated);
}

static void test_build_refused_with_edns(void **state)
{
	(void)state;
	struct pkt p;
	struct dns_query q;
	uint8_t buf[4096];
	header(&p, 12, 0x01, 0, 1, 0, 0, 1);
	question(&p, "nowhere.example", DNS_TYPE_A, DNS_CLASS_IN);
	opt(&p, 4096, 0, true, (const uint8_t *)"\x00\x0a\x00\x08" "abcdefgh", 12);
	assert_int_equal(parse(&p, &q), DNS_PARSE_OK);
	size_t len = build(&q, DNS_RCODE_REFUSED, buf, dns_query_udp_limit(&q, 1400), 0, 0, 1400);
	ldns_pkt *lp = ldns_parse_ok(buf, len);
	assert_int_equal(ldns_pkt_get_rcode(lp), LDNS_RCODE_REFUSED);
	assert_ldns_question(lp, "nowhere.example.", LDNS_RR_TYPE_A);
	assert_true(ldns_pkt_edns(lp));
	assert_int_equal(ldns_pkt_edns_udp_size(lp), 1400);
	assert_true(ldns_pkt_edns_do(lp));
	assert_int_equal(ldns_pkt_edns_extended_rcode(lp), 0);
	ldns_pkt_free(lp);
	/* our answer is not a query */
	struct dns_query back;
	assert_int_equal(dns_query_parse(buf, len, &back), DNS_PARSE_DROP);
}

static void test_build_family_filter(void **state)
{
	(void)state;
	struct pkt p;
	struct dns_query q;
	uint8_t buf[512];
	struct dns_builder b;
	simple_query(&p, "www.example.content", DNS_TYPE_A);
	assert_int_equal(parse(&p, &q), DNS_PARSE_OK);
	dns_response_init(&b, &q, DNS_RCODE_NOERROR, buf, sizeof(buf));
	uint8_t a[16] = { 0 };
	assert_false(dns_response_add_addr(&b, AF_UNIX, a, 5));
	assert_true(dns_response_add_addr(&b, AF_INET, a, 5));
	assert_int_equal(b.ancount, 1);
	assert_true(dns_response_finish(&b, 1232) > 0);
}

/* Type mnemonics both ways, RFC 3597's TYPEnnn, and what is not a type. */
static void test_type_and_rcode_names(void **state)
{
	(void)state;
	uint16_t t;
	char buf[12];
	assert_true(dns_type_from_text("aaaa", &t));
	assert_int_equal(t, DNS_TYPE_AAAA);
	assert_true(dns_type_from_text("MX", &t));
	assert_int_equal(t, DNS_TYPE_MX);
	assert_true(dns_type_from_text("type65534", &t));
	assert_int_equal(t, 65534);
	assert_string_equal(dns_type_to_text(65534, buf, sizeof(buf)), "TYPE65534");
	assert_string_equal(dns_type_to_text(DNS_TYPE_TXT, buf, sizeof(buf)), "TXT");
	static const char *const bad[] = { "", "AAAAA", "TYPE", "TYPE65536", "TYPE1x", "TYPE-1", "TYPE+1",
					   "TYPE000001", "A " };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(dns_type_from_text(bad[i], &t));
	assert_string_equal(dns_rcode_name(DNS_RCODE_NXDOMAIN), "NXDOMAIN");
	assert_null(dns_rcode_name(DNS_RCODE_BADCOOKIE));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_simple),
		cmocka_unit_test(test_parse_root_and_flags),
		cmocka_unit_test(test_parse_lowercases_as_name_from_packet),
		cmocka_unit_test(test_parse_ldns_built_query),
		cmocka_unit_test(test_parse_longest_name),
		cmocka_unit_test(test_parse_short_header_dropped),
		cmocka_unit_test(test_parse_response_dropped),
		cmocka_unit_test(test_parse_opcode_notimp),
		cmocka_unit_test(test_parse_counts),
		cmocka_unit_test(test_parse_compression_in_question),
		cmocka_unit_test(test_parse_bad_labels),
		cmocka_unit_test(test_parse_truncated_and_trailing),
		cmocka_unit_test(test_parse_qtype_opt),
		cmocka_unit_test(test_edns_basic),
		cmocka_unit_test(test_edns_payload_clamped),
		cmocka_unit_test(test_edns_badvers),
		cmocka_unit_test(test_edns_two_opts),
		cmocka_unit_test(test_edns_owner_not_root),
		cmocka_unit_test(test_edns_options),
		cmocka_unit_test(test_edns_bad_options),
		cmocka_unit_test(test_build_header_bits),
		cmocka_unit_test(test_build_answers),
		cmocka_unit_test(test_build_truncation),
		cmocka_unit_test(test_build_exact_fit),
		cmocka_unit_test(test_build_badvers),
		cmocka_unit_test(test_build_errors_header_only),
		cmocka_unit_test(test_build_refused_with_edns),
		cmocka_unit_test(test_build_options_records_authority),
		cmocka_unit_test(test_build_family_filter),
		cmocka_unit_test(test_type_and_rcode_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
