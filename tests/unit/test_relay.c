/*
 * lib/dns/dns.c, the forwarding half: outgoing queries (dns_query_write),
 * checking what comes back (dns_upstream_answer_parse) and relaying it to
 * the client (dns_response_relay, after any CNAMEs).  Upstream answers are
 * built with ldns, which compresses names the way real servers do, and
 * every message we write is parsed back with ldns.
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
/* before ldns: without it, ldns/common.h defines bool as signed char */
#include <stdbool.h>
#include <ldns/ldns.h>

#include "dns.h"
#include "inrp.h"
#include "testpkt.h"
#include "wire.h"

/* ---- building messages by hand ---- */

static void opt_rr(struct pkt *p, uint16_t udp, uint8_t ext_rcode, bool dnssec_ok,
		   const uint8_t *rdata, uint16_t rdlen)
{
	put8(p, 0);
	put16(p, DNS_TYPE_OPT);
	put16(p, udp);
	put32(p, ((uint32_t)ext_rcode << 24) | (dnssec_ok ? 0x8000u : 0));
	put16(p, rdlen);
	if (rdlen)
		put_bytes(p, rdata, rdlen);
}

/* A record with the owner given as raw bytes (so pointers can be written). */
static void rr_raw_owner(struct pkt *p, const void *owner, size_t owner_len, uint16_t type,
			 uint32_t ttl, const void *rdata, uint16_t rdlen)
{
	put_bytes(p, owner, owner_len);
	put16(p, type);
	put16(p, DNS_CLASS_IN);
	put32(p, ttl);
	put16(p, rdlen);
	if (rdlen)
		put_bytes(p, rdata, rdlen);
}

static struct name mkname(const char *text)
{
	struct name n;
	assert_int_equal(name_from_text(&n, text, strlen(text)), NAME_OK);
	return n;
}

/* The client's query, parsed as inrpd would. */
static void client_query(struct dns_query *q, uint16_t id, const char *qname, uint16_t qtype,
			 bool edns, uint16_t udp, bool dnssec_ok)
{
	struct pkt p;
	header(&p, id, 0x01, 0x00, 1, 0, 0, edns ? 1 : 0);
	question(&p, qname, qtype, DNS_CLASS_IN);
	if (edns)
		opt_rr(&p, udp, 0, dnssec_ok, NULL, 0);
	uint8_t *copy = malloc(p.len);
	assert_non_null(copy);
	memcpy(copy, p.b, p.len);
	assert_int_equal(dns_query_parse(copy, p.len, q), DNS_PARSE_OK);
	free(copy);
}

/* ---- upstream answers built with ldns ---- */

struct up_spec {
	uint16_t id;
	const char *qname;
	ldns_rr_type qtype;
	ldns_pkt_rcode rcode;
	uint8_t ext_rcode;
	bool ad, tc;
	uint16_t edns_udp;                      /* 0: no OPT RR */
	const uint8_t *edns_data;               /* the OPT RR's option area */
	uint16_t edns_data_len;
	const char *const *an, *const *ns, *const *ar;  /* NULL-terminated, or NULL */
};

static void push_rrs(ldns_pkt *lp, ldns_pkt_section sec, const char *const *rrs)
{
	for (size_t i = 0; rrs && rrs[i]; i++) {
		ldns_rr *rr = NULL;
		ldns_status st = ldns_rr_new_frm_str(&rr, rrs[i], 3600, NULL, NULL);
		if (st != LDNS_STATUS_OK)
			fail_msg("ldns rejects \"%s\": %s", rrs[i], ldns_get_errorstr_by_id(st));
		assert_true(ldns_pkt_push_rr(lp, sec, rr));
	}
}

static ldns_pkt *up_pkt(const struct up_spec *s)
{
	ldns_pkt *lp = ldns_pkt_new();
	assert_non_null(lp);
	ldns_pkt_set_id(lp, s->id);
	ldns_pkt_set_qr(lp, true);
	ldns_pkt_set_rd(lp, true);
	ldns_pkt_set_ra(lp, true);
	ldns_pkt_set_ad(lp, s->ad);
	ldns_pkt_set_tc(lp, s->tc);
	ldns_pkt_set_rcode(lp, (uint8_t)s->rcode);
	ldns_rr *q = NULL;
	char qtext[512];
	char *type = ldns_rr_type2str(s->qtype);
	snprintf(qtext, sizeof(qtext), "%s IN %s", s->qname, type);
	LDNS_FREE(type);
	assert_int_equal(ldns_rr_new_question_frm_str(&q, qtext, NULL, NULL), LDNS_STATUS_OK);
	assert_true(ldns_pkt_push_rr(lp, LDNS_SECTION_QUESTION, q));
	push_rrs(lp, LDNS_SECTION_ANSWER, s->an);
	push_rrs(lp, LDNS_SECTION_AUTHORITY, s->ns);
	push_rrs(lp, LDNS_SECTION_ADDITIONAL, s->ar);
	if (s->edns_udp) {
		ldns_pkt_set_edns_udp_size(lp, s->edns_udp);
		ldns_pkt_set_edns_extended_rcode(lp, s->ext_rcode);
		if (s->edns_data_len)
			ldns_pkt_set_edns_data(lp, ldns_rdf_new_frm_data(LDNS_RDF_TYPE_UNKNOWN,
									 s->edns_data_len,
									 s->edns_data));
	}
	return lp;
}

/* The upstream answer on the wire, in an exact-size heap buffer (free it). */
static uint8_t *up_wire(const struct up_spec *s, size_t *len)
{
	ldns_pkt *lp = up_pkt(s);
	uint8_t *wire = NULL;
	assert_int_equal(ldns_pkt2wire(&wire, lp, len), LDNS_STATUS_OK);
	ldns_pkt_free(lp);
	uint8_t *copy = malloc(*len);
	assert_non_null(copy);
	memcpy(copy, wire, *len);
	LDNS_FREE(wire);
	return copy;
}

static bool has_pointer(const uint8_t *w, size_t from, size_t len)
{
	for (size_t i = from; i + 1 < len; i++)
		if ((w[i] & 0xC0) == 0xC0 && w[i + 1] >= DNS_HEADER_LEN)
			return true;
	return false;
}

static ldns_pkt *ldns_parse_ok(const uint8_t *buf, size_t len)
{
	ldns_pkt *lp = NULL;
	ldns_status st = ldns_wire2pkt(&lp, buf, len);
	if (st != LDNS_STATUS_OK)
		fail_msg("ldns rejects the message: %s", ldns_get_errorstr_by_id(st));
	assert_non_null(lp);
	return lp;
}

static void assert_owner(const ldns_rr *rr, const char *want)
{
	char *s = ldns_rdf2str(ldns_rr_owner(rr));
	assert_string_equal(s, want);
	LDNS_FREE(s);
}

/* Same record (names without case, TTL included). */
static void assert_rr_same(const ldns_rr *a, const ldns_rr *b)
{
	assert_int_equal(ldns_dname_compare(ldns_rr_owner(a), ldns_rr_owner(b)), 0);
	assert_int_equal(ldns_rr_get_type(a), ldns_rr_get_type(b));
	assert_int_equal(ldns_rr_get_class(a), ldns_rr_get_class(b));
	assert_int_equal(ldns_rr_ttl(a), ldns_rr_ttl(b));
	assert_int_equal(ldns_rr_rd_count(a), ldns_rr_rd_count(b));
	for (size_t i = 0; i < ldns_rr_rd_count(a); i++) {
		const ldns_rdf *x = ldns_rr_rdf(a, i), *y = ldns_rr_rdf(b, i);
		assert_int_equal(ldns_rdf_get_type(x), ldns_rdf_get_type(y));
		if (ldns_rdf_get_type(x) == LDNS_RDF_TYPE_DNAME)
			assert_int_equal(ldns_dname_compare(x, y), 0);
		else
			assert_int_equal(ldns_rdf_compare(x, y), 0);
	}
}

static void assert_section_same(const ldns_rr_list *ours, size_t from, const ldns_rr_list *theirs)
{
	assert_int_equal(ldns_rr_list_rr_count(ours), from + ldns_rr_list_rr_count(theirs));
	for (size_t i = 0; i < ldns_rr_list_rr_count(theirs); i++)
		assert_rr_same(ldns_rr_list_rr(ours, from + i), ldns_rr_list_rr(theirs, i));
}

/* ---- dns_query_write ---- */

static void test_query_write_full(void **state)
{
	(void)state;
	struct name qn = mkname("www.Example.COM");
	struct inrp_query_opt o;
	memset(&o, 0, sizeof(o));
	o.hop_limit = 15;
	o.npath = 1;
	o.path[0] = inrp_router_id("r1");
	o.budget_ms = 700;
	uint8_t opt[INRP_QUERY_OPT_MAX];
	uint16_t opt_len = (uint16_t)inrp_query_opt_write(&o, opt);
	/* name_from_text lowercases; the query carries what it is given */
	static const uint8_t mixed[] = "\003www\007Example\003COM";
	struct dns_query_spec s = {
		.id = 0xbeef, .qname = mixed, .qname_len = sizeof(mixed), .qtype = DNS_TYPE_AAAA,
		.qclass = DNS_CLASS_IN, .rd = true, .cd = true, .edns = true, .edns_do = true,
		.udp_size = 4096, .opt_code = INRP_OPTION_CODE, .opt_len = opt_len, .opt_data = opt,
	};
	assert_int_equal(qn.len, sizeof(mixed));
	uint8_t buf[1024];
	size_t len = dns_query_write(&s, buf, sizeof(buf));
	assert_int_equal(len, DNS_HEADER_LEN + qn.len + 4 + DNS_OPT_RR_LEN + 4 + opt_len);

	ldns_pkt *lp = ldns_parse_ok(buf, len);
	assert_int_equal(ldns_pkt_id(lp), 0xbeef);
	assert_false(ldns_pkt_qr(lp));
	assert_int_equal(ldns_pkt_get_opcode(lp), LDNS_PACKET_QUERY);
	assert_true(ldns_pkt_rd(lp));
	assert_true(ldns_pkt_cd(lp));
	assert_false(ldns_pkt_aa(lp));
	assert_false(ldns_pkt_tc(lp));
	assert_false(ldns_pkt_ad(lp));
	assert_int_equal(ldns_pkt_qdcount(lp), 1);
	assert_int_equal(ldns_pkt_ancount(lp), 0);
	assert_int_equal(ldns_pkt_nscount(lp), 0);
	assert_int_equal(ldns_pkt_arcount(lp), 0);      /* the OPT RR is not counted by ldns */
	ldns_rr *qr = ldns_rr_list_rr(ldns_pkt_question(lp), 0);
	assert_owner(qr, "www.Example.COM.");
	assert_int_equal(ldns_rr_get_type(qr), LDNS_RR_TYPE_AAAA);
	assert_int_equal(ldns_rr_get_class(qr), LDNS_RR_CLASS_IN);
	assert_true(ldns_pkt_edns(lp));
	assert_int_equal(ldns_pkt_edns_udp_size(lp), 4096);
	assert_true(ldns_pkt_edns_do(lp));
	assert_int_equal(ldns_pkt_edns_version(lp), 0);
	assert_int_equal(ldns_pkt_edns_extended_rcode(lp), 0);
	ldns_rdf *ed = ldns_pkt_edns_data(lp);
	assert_non_null(ed);
	assert_int_equal(ldns_rdf_size(ed), 4u + opt_len);
	const uint8_t *d = ldns_rdf_data(ed);
	assert_int_equal((d[0] << 8) | d[1], INRP_OPTION_CODE);
	assert_int_equal((d[2] << 8) | d[3], opt_len);
	assert_memory_equal(d + 4, opt, opt_len);
	ldns_pkt_free(lp);

	/* our own query parser takes it, and the option is found and decodes */
	struct dns_query q;
	assert_int_equal(dns_query_parse(buf, len, &q), DNS_PARSE_OK);
	assert_true(name_equal(&q.qname, &qn));
	assert_true(q.has_edns);
	assert_true(q.edns_do);
	const uint8_t *data;
	size_t dlen;
	assert_true(inrp_find_option(buf + q.edns_opts_off, q.edns_opts_len, INRP_OPTION_CODE,
				     &data, &dlen));
	struct inrp_query_opt back;
	const char *err = NULL;
	assert_int_equal(inrp_query_opt_parse(data, dlen, &back, &err), 0);
	assert_int_equal(back.hop_limit, 15);
	assert_int_equal(back.npath, 1);
	assert_true(back.path[0] == o.path[0]);
	assert_int_equal(back.budget_ms, 700);
}

static void test_query_write_variants(void **state)
{
	(void)state;
	struct name qn = mkname("cart.shop.example");
	uint8_t buf[1024];

	/* no EDNS at all: no OPT RR, flags clear */
	struct dns_query_spec s = {
		.id = 1, .qname = qn.wire, .qname_len = qn.len, .qtype = DNS_TYPE_MX,
		.qclass = DNS_CLASS_IN, .udp_size = 4096,
		.opt_code = INRP_OPTION_CODE, .opt_len = 3, .opt_data = (const uint8_t *)"abc",
	};
	size_t len = dns_query_write(&s, buf, sizeof(buf));
	assert_int_equal(len, DNS_HEADER_LEN + qn.len + 4);
	ldns_pkt *lp = ldns_parse_ok(buf, len);
	assert_int_equal(ldns_pkt_id(lp), 1);
	assert_false(ldns_pkt_rd(lp));
	assert_false(ldns_pkt_cd(lp));
	assert_false(ldns_pkt_edns(lp));
	assert_int_equal(ldns_rr_get_type(ldns_rr_list_rr(ldns_pkt_question(lp), 0)), LDNS_RR_TYPE_MX);
	ldns_pkt_free(lp);
	assert_int_equal(buf[2], 0);
	assert_int_equal(buf[3], 0);
	assert_int_equal(buf[11], 0);

	/* EDNS without an option, DO clear */
	s.edns = true;
	s.opt_code = 0;
	s.udp_size = 1232;
	s.rd = true;
	len = dns_query_write(&s, buf, sizeof(buf));
	assert_int_equal(len, DNS_HEADER_LEN + qn.len + 4 + DNS_OPT_RR_LEN);
	lp = ldns_parse_ok(buf, len);
	assert_true(ldns_pkt_rd(lp));
	assert_false(ldns_pkt_cd(lp));
	assert_true(ldns_pkt_edns(lp));
	assert_false(ldns_pkt_edns_do(lp));
	assert_int_equal(ldns_pkt_edns_udp_size(lp), 1232);
	assert_true(ldns_pkt_edns_data(lp) == NULL || ldns_rdf_size(ldns_pkt_edns_data(lp)) == 0);
	ldns_pkt_free(lp);
	assert_int_equal(buf[len - 2], 0);                      /* RDLENGTH 0 */
	assert_int_equal(buf[len - 1], 0);

	/* an empty option (length 0) is still written.  (opt_data is not NULL:
	 * dns_query_write passes it to memcpy even for length 0.) */
	s.opt_code = 65001;
	s.opt_len = 0;
	s.opt_data = (const uint8_t *)"";
	len = dns_query_write(&s, buf, sizeof(buf));
	assert_int_equal(len, DNS_HEADER_LEN + qn.len + 4 + DNS_OPT_RR_LEN + 4);
	lp = ldns_parse_ok(buf, len);
	ldns_rdf *ed = ldns_pkt_edns_data(lp);
	assert_non_null(ed);
	assert_int_equal(ldns_rdf_size(ed), 4);
	assert_memory_equal(ldns_rdf_data(ed), "\xfd\xe9\x00\x00", 4);
	ldns_pkt_free(lp);

	/* the root as qname */
	struct name root = mkname(".");
	s.qname = root.wire;
	s.qname_len = root.len;
	s.qtype = DNS_TYPE_NS;
	s.opt_code = 0;
	len = dns_query_write(&s, buf, sizeof(buf));
	lp = ldns_parse_ok(buf, len);
	assert_owner(ldns_rr_list_rr(ldns_pkt_question(lp), 0), ".");
	ldns_pkt_free(lp);
}

static void test_query_write_cap(void **state)
{
	(void)state;
	struct name qn = mkname("www.example.com");
	uint8_t opt[8] = { 1, 1, 16, 0, 0, 0, 0, 0 };
	struct dns_query_spec s = {
		.id = 9, .qname = qn.wire, .qname_len = qn.len, .qtype = DNS_TYPE_A,
		.qclass = DNS_CLASS_IN, .edns = true, .udp_size = 4096,
		.opt_code = INRP_OPTION_CODE, .opt_len = sizeof(opt), .opt_data = opt,
	};
	size_t need = DNS_HEADER_LEN + qn.len + 4 + DNS_OPT_RR_LEN + 4 + sizeof(opt);
	uint8_t *buf = malloc(need);
	assert_non_null(buf);
	/* too small by one, or far: nothing written (an exact heap buffer catches overruns) */
	assert_int_equal(dns_query_write(&s, buf, need - 1), 0);
	assert_int_equal(dns_query_write(&s, buf, 0), 0);
	assert_int_equal(dns_query_write(&s, buf, DNS_HEADER_LEN), 0);
	assert_int_equal(dns_query_write(&s, buf, need), need);
	ldns_pkt_free(ldns_parse_ok(buf, need));
	free(buf);
}

/* A COOKIE option follows the INRP option in the same OPT RR, and is counted in its length and the cap. */
static void test_query_write_cookie(void **state)
{
	(void)state;
	struct name qn = mkname("www.example.com");
	uint8_t opt[8] = { 1, 1, 16, 0, 0, 0, 0, 0 };
	uint8_t cookie[24];
	for (unsigned i = 0; i < sizeof(cookie); i++)
		cookie[i] = (uint8_t)(0xa0 + i);
	struct dns_query_spec s = {
		.id = 9, .qname = qn.wire, .qname_len = qn.len, .qtype = DNS_TYPE_A,
		.qclass = DNS_CLASS_IN, .edns = true, .udp_size = 4096,
		.opt_code = INRP_OPTION_CODE, .opt_len = sizeof(opt), .opt_data = opt,
		.cookie = cookie, .cookie_len = sizeof(cookie),
	};
	size_t need = DNS_HEADER_LEN + qn.len + 4 + DNS_OPT_RR_LEN + 4 + sizeof(opt) + 4 + sizeof(cookie);
	uint8_t *buf = malloc(need);
	assert_non_null(buf);
	assert_int_equal(dns_query_write(&s, buf, need - 1), 0);
	assert_int_equal(dns_query_write(&s, buf, need), need);
	size_t rdlen_at = DNS_HEADER_LEN + qn.len + 4 + 9;
	assert_int_equal(wire_load16(buf + rdlen_at), 4 + sizeof(opt) + 4 + sizeof(cookie));
	const uint8_t *c = buf + need - sizeof(cookie) - 4;
	assert_int_equal(wire_load16(c), DNS_OPT_COOKIE);
	assert_int_equal(wire_load16(c + 2), sizeof(cookie));
	assert_memory_equal(c + 4, cookie, sizeof(cookie));
	ldns_pkt_free(ldns_parse_ok(buf, need));
	/* the cookie alone (an upstream resolver: no INRP option) */
	s.opt_code = 0;
	s.cookie_len = 8;
	size_t len = dns_query_write(&s, buf, need);
	assert_int_equal(len, DNS_HEADER_LEN + qn.len + 4 + DNS_OPT_RR_LEN + 4 + 8);
	assert_int_equal(wire_load16(buf + rdlen_at), 12);
	assert_int_equal(wire_load16(buf + rdlen_at + 2), DNS_OPT_COOKIE);
	free(buf);
}

/* ---- dns_upstream_answer_parse ---- */

static const char *const basic_an[] = {
	"www.example.com. 300 IN A 192.0.2.1",
	"www.example.com. 300 IN A 192.0.2.2",
	NULL,
};

static int up_parse(const uint8_t *w, size_t len, uint16_t id, const char *qname, uint16_t qtype,
		    uint16_t qclass, struct dns_upstream_answer *a, const char **err)
{
	struct name qn = mkname(qname);
	uint8_t *copy = malloc(len ? len : 1);
	assert_non_null(copy);
	if (len)
		memcpy(copy, w, len);
	*err = NULL;
	int rc = dns_upstream_answer_parse(copy, len, id, &qn, qtype, qclass, a, err);
	free(copy);
	if (rc < 0)
		assert_non_null(*err);
	return rc;
}

static void test_upstream_accepts(void **state)
{
	(void)state;
	static const uint8_t opts[] = {
		0x00, 0x0a, 0x00, 0x08, 1, 2, 3, 4, 5, 6, 7, 8,                 /* cookie */
		0xfe, 0x4c, 0x00, 0x10, 1, 2, 0, 0, 0, 0, 0, 7,                 /* INRP response */
		0, 0, 0, 0, 0, 0, 0, 9,
	};
	const char *const ns[] = { "example.com. 300 IN NS ns1.example.com.", NULL };
	const char *const ar[] = { "ns1.example.com. 300 IN A 192.0.2.53", NULL };
	struct up_spec s = {
		.id = 0x4242, .qname = "WWW.example.COM.", .qtype = LDNS_RR_TYPE_A, .ad = true,
		.edns_udp = 1232, .edns_data = opts, .edns_data_len = sizeof(opts),
		.an = basic_an, .ns = ns, .ar = ar,
	};
	size_t len;
	uint8_t *w = up_wire(&s, &len);
	struct dns_upstream_answer a;
	const char *err;
	/* the question matches without case */
	assert_int_equal(up_parse(w, len, 0x4242, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN, &a, &err), 0);
	assert_int_equal(a.rcode, DNS_RCODE_NOERROR);
	assert_false(a.tc);
	assert_true(a.ad);
	assert_int_equal(a.ancount, 2);
	assert_int_equal(a.nscount, 1);
	assert_int_equal(a.arcount, 2);                 /* the OPT RR included */
	assert_int_equal(a.records_off, DNS_HEADER_LEN + 17 + 4);
	assert_true(a.has_opt);
	assert_int_equal(a.opts_len, sizeof(opts));
	assert_int_equal(a.opts_off + a.opts_len, len);  /* ldns puts the OPT RR last */
	assert_memory_equal(w + a.opts_off, opts, sizeof(opts));
	const uint8_t *d;
	size_t dl;
	assert_true(inrp_find_option(w + a.opts_off, a.opts_len, INRP_OPTION_CODE, &d, &dl));
	struct inrp_response_opt ro;
	assert_int_equal(inrp_response_opt_parse(d, dl, &ro, &err), 0);
	assert_int_equal(ro.load_ms, 7);
	assert_true(ro.router_id == 9);
	free(w);

	/* no OPT, NXDOMAIN with an SOA, TC */
	const char *const soa[] = {
		"example.com. 60 IN SOA ns1.example.com. hostmaster.example.com. 1 7200 900 1209600 60",
		NULL,
	};
	struct up_spec s2 = {
		.id = 7, .qname = "nope.example.com.", .qtype = LDNS_RR_TYPE_AAAA,
		.rcode = LDNS_RCODE_NXDOMAIN, .tc = true, .ns = soa,
	};
	w = up_wire(&s2, &len);
	assert_int_equal(up_parse(w, len, 7, "nope.example.com", DNS_TYPE_AAAA, DNS_CLASS_IN, &a, &err), 0);
	assert_int_equal(a.rcode, DNS_RCODE_NXDOMAIN);
	assert_true(a.tc);
	assert_false(a.ad);
	assert_false(a.has_opt);
	assert_int_equal(a.opts_len, 0);
	assert_int_equal(a.ancount, 0);
	assert_int_equal(a.nscount, 1);
	assert_int_equal(a.arcount, 0);
	free(w);
}

static void test_upstream_extended_rcode(void **state)
{
	(void)state;
	/* BADVERS (16): header rcode 0, extended rcode 1 in the OPT RR */
	struct up_spec s = {
		.id = 5, .qname = "www.example.com.", .qtype = LDNS_RR_TYPE_A,
		.edns_udp = 512, .ext_rcode = 1,
	};
	size_t len;
	uint8_t *w = up_wire(&s, &len);
	struct dns_upstream_answer a;
	const char *err;
	assert_int_equal(up_parse(w, len, 5, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN, &a, &err), 0);
	assert_int_equal(a.rcode, DNS_RCODE_BADVERS);
	assert_true(a.has_opt);
	assert_int_equal(a.opts_len, 0);
	free(w);

	/* the top of the 12-bit space: ext 0xff, header 0xf */
	struct pkt p;
	header(&p, 5, 0x80, 0x0f, 1, 0, 0, 1);
	question(&p, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN);
	opt_rr(&p, 1232, 0xff, false, NULL, 0);
	assert_int_equal(up_parse(p.b, p.len, 5, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN, &a, &err), 0);
	assert_int_equal(a.rcode, 0xfff);
}

static void test_upstream_rejects_header(void **state)
{
	(void)state;
	struct up_spec s = {
		.id = 0x1111, .qname = "www.example.com.", .qtype = LDNS_RR_TYPE_A,
		.edns_udp = 1232, .an = basic_an,
	};
	size_t len;
	uint8_t *w = up_wire(&s, &len);
	struct dns_upstream_answer a;
	const char *err;
	assert_int_equal(up_parse(w, len, 0x1111, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN, &a, &err), 0);

	/* wrong id */
	assert_int_equal(up_parse(w, len, 0x1112, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN, &a, &err), -1);
	assert_int_equal(up_parse(w, len, 0x0000, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN, &a, &err), -1);
	/* shorter than a header */
	for (size_t l = 0; l < DNS_HEADER_LEN; l++)
		assert_int_equal(up_parse(w, l, 0x1111, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN, &a, &err), -1);

	uint8_t *m = malloc(len);
	assert_non_null(m);
	/* QR clear: a query, not an answer */
	memcpy(m, w, len);
	m[2] &= 0x7f;
	assert_int_equal(up_parse(m, len, 0x1111, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN, &a, &err), -1);
	/* opcode other than QUERY (NOTIFY, UPDATE) */
	memcpy(m, w, len);
	m[2] = (uint8_t)((m[2] & ~0x78) | (4 << 3));
	assert_int_equal(up_parse(m, len, 0x1111, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN, &a, &err), -1);
	m[2] = (uint8_t)((m[2] & ~0x78) | (5 << 3));
	assert_int_equal(up_parse(m, len, 0x1111, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN, &a, &err), -1);
	/* qdcount 0 and 2 */
	memcpy(m, w, len);
	m[5] = 0;
	assert_int_equal(up_parse(m, len, 0x1111, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN, &a, &err), -1);
	m[5] = 2;
	assert_int_equal(up_parse(m, len, 0x1111, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN, &a, &err), -1);
	m[4] = 1;
	m[5] = 1;
	assert_int_equal(up_parse(m, len, 0x1111, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN, &a, &err), -1);
	free(m);

	/* a bare refusal or failure (header only, as Unbound's REFUSED): taken, never relayed */
	static const uint8_t bare[] = { 0x11, 0x11, 0x80, 0x05, 0, 0, 0, 0, 0, 0, 0, 0 };
	uint8_t b2[sizeof(bare)];
	memcpy(b2, bare, sizeof(b2));
	assert_int_equal(up_parse(b2, sizeof(b2), 0x1111, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN, &a, &err), 0);
	assert_false(a.has_question);
	assert_int_equal(a.rcode, DNS_RCODE_REFUSED);
	b2[3] = 0x82;                                   /* SERVFAIL */
	assert_int_equal(up_parse(b2, sizeof(b2), 0x1111, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN, &a, &err), 0);
	b2[3] = 0x83;                                   /* NXDOMAIN needs its question */
	assert_int_equal(up_parse(b2, sizeof(b2), 0x1111, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN, &a, &err), -1);
	b2[3] = 0x80;
	assert_int_equal(up_parse(b2, sizeof(b2), 0x1111, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN, &a, &err), -1);
	b2[3] = 0x85;
	b2[7] = 1;                                      /* a refusal with an answer is not bare */
	assert_int_equal(up_parse(b2, sizeof(b2), 0x1111, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN, &a, &err), -1);

	/* another question: name, type, class */
	assert_int_equal(up_parse(w, len, 0x1111, "www.example.org", DNS_TYPE_A, DNS_CLASS_IN, &a, &err), -1);
	assert_int_equal(up_parse(w, len, 0x1111, "example.com", DNS_TYPE_A, DNS_CLASS_IN, &a, &err), -1);
	assert_int_equal(up_parse(w, len, 0x1111, "a.www.example.com", DNS_TYPE_A, DNS_CLASS_IN, &a, &err), -1);
	assert_int_equal(up_parse(w, len, 0x1111, "www.example.com", DNS_TYPE_AAAA, DNS_CLASS_IN, &a, &err), -1);
	assert_int_equal(up_parse(w, len, 0x1111, "www.example.com", DNS_TYPE_A, 3 /* CH */, &a, &err), -1);
	free(w);
}

static void test_upstream_rejects_records(void **state)
{
	(void)state;
	const char *const ns[] = { "example.com. 300 IN NS ns1.example.com.", NULL };
	const char *const ar[] = { "ns1.example.com. 300 IN A 192.0.2.53", NULL };
	struct up_spec s = {
		.id = 0x2222, .qname = "www.example.com.", .qtype = LDNS_RR_TYPE_A,
		.edns_udp = 1232, .edns_data = (const uint8_t *)"\x00\x0a\x00\x02" "xy", .edns_data_len = 6,
		.an = basic_an, .ns = ns, .ar = ar,
	};
	size_t len;
	uint8_t *w = up_wire(&s, &len);
	struct dns_upstream_answer a;
	const char *err;
	assert_int_equal(up_parse(w, len, 0x2222, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN, &a, &err), 0);
	size_t qend = a.records_off;

	/* cut anywhere: the question, a record, its data, the OPT RR */
	for (size_t l = DNS_HEADER_LEN; l < len; l++)
		assert_int_equal(up_parse(w, l, 0x2222, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN,
					  &a, &err), -1);
	/* counts claiming one record more than there is */
	uint8_t *m = malloc(len);
	assert_non_null(m);
	for (int sec = 0; sec < 3; sec++) {
		memcpy(m, w, len);
		m[7 + 2 * sec]++;
		assert_int_equal(up_parse(m, len, 0x2222, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN,
					  &a, &err), -1);
	}
	/* a record data length running past the end */
	memcpy(m, w, len);
	size_t first_rdlen = qend + 2 + 8;              /* owner is a 2-byte pointer */
	assert_int_equal(m[qend], 0xC0);
	m[first_rdlen] = 0xff;
	assert_int_equal(up_parse(m, len, 0x2222, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN, &a, &err), -1);
	/* a bad label type in an owner */
	memcpy(m, w, len);
	m[qend] = 0x80;
	assert_int_equal(up_parse(m, len, 0x2222, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN, &a, &err), -1);
	free(m);
	free(w);
}

static void test_upstream_rejects_opt(void **state)
{
	(void)state;
	struct dns_upstream_answer a;
	const char *err;
	struct pkt p;
	static const uint8_t ptr_qname[2] = { 0xC0, 0x0C };
	static const uint8_t addr[4] = { 192, 0, 2, 1 };

	/* baseline: one OPT in the additional section, first of two records */
	header(&p, 3, 0x80, 0, 1, 1, 0, 2);
	question(&p, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN);
	rr_raw_owner(&p, ptr_qname, 2, DNS_TYPE_A, 60, addr, 4);
	opt_rr(&p, 1232, 0, false, (const uint8_t *)"\x00\x0c\x00\x01\x00", 5);
	rr_raw_owner(&p, "\003ns1\300\020", 6, DNS_TYPE_A, 60, addr, 4);
	assert_int_equal(up_parse(p.b, p.len, 3, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN, &a, &err), 0);
	assert_true(a.has_opt);
	assert_int_equal(a.opts_len, 5);
	assert_int_equal(p.b[a.opts_off], 0x00);
	assert_int_equal(p.b[a.opts_off + 1], 0x0c);

	/* two OPT RRs */
	header(&p, 3, 0x80, 0, 1, 1, 0, 2);
	question(&p, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN);
	rr_raw_owner(&p, ptr_qname, 2, DNS_TYPE_A, 60, addr, 4);
	opt_rr(&p, 1232, 0, false, NULL, 0);
	opt_rr(&p, 1232, 0, false, NULL, 0);
	assert_int_equal(up_parse(p.b, p.len, 3, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN, &a, &err), -1);

	/* an OPT RR in the answer section */
	header(&p, 3, 0x80, 0, 1, 2, 0, 0);
	question(&p, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN);
	rr_raw_owner(&p, ptr_qname, 2, DNS_TYPE_A, 60, addr, 4);
	opt_rr(&p, 1232, 0, false, NULL, 0);
	assert_int_equal(up_parse(p.b, p.len, 3, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN, &a, &err), -1);

	/* ... and in the authority section */
	header(&p, 3, 0x80, 0, 1, 1, 1, 0);
	question(&p, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN);
	rr_raw_owner(&p, ptr_qname, 2, DNS_TYPE_A, 60, addr, 4);
	opt_rr(&p, 1232, 0, false, NULL, 0);
	assert_int_equal(up_parse(p.b, p.len, 3, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN, &a, &err), -1);

	/* an OPT RR owned by something other than the root (plain or by pointer) */
	header(&p, 3, 0x80, 0, 1, 0, 0, 1);
	question(&p, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN);
	rr_raw_owner(&p, ptr_qname, 2, DNS_TYPE_OPT, 0, NULL, 0);
	assert_int_equal(up_parse(p.b, p.len, 3, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN, &a, &err), -1);
	header(&p, 3, 0x80, 0, 1, 0, 0, 1);
	question(&p, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN);
	rr_raw_owner(&p, "\001x\000", 3, DNS_TYPE_OPT, 0, NULL, 0);
	assert_int_equal(up_parse(p.b, p.len, 3, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN, &a, &err), -1);
}

/* ---- dns_response_relay ---- */

struct relayed {
	uint8_t buf[DNS_TCP_MAX];
	size_t len;
	bool relay_ok;
	struct dns_builder b;
};

/*
 * Parses upstream's answer w for (qname, qtype), relays it into a response
 * to q under limit (after chain, CNAME targets in text, NULL-terminated),
 * optionally with an EDNS option, and finishes with our size 1232.
 */
static void relay(struct relayed *r, const struct dns_query *q, size_t limit,
		  const char *const *chain, const uint8_t *w, size_t wlen, uint16_t up_id,
		  const char *qname, uint16_t qtype, const uint8_t *opt, uint16_t opt_len)
{
	struct dns_upstream_answer a;
	const char *err;
	struct name qn = mkname(qname);
	uint8_t *copy = malloc(wlen);
	assert_non_null(copy);
	memcpy(copy, w, wlen);
	if (dns_upstream_answer_parse(copy, wlen, up_id, &qn, qtype, DNS_CLASS_IN, &a, &err) < 0)
		fail_msg("upstream answer refused: %s", err);

	assert_true(limit <= sizeof(r->buf));
	dns_response_init(&r->b, q, DNS_RCODE_NOERROR, r->buf, limit);
	if (opt_len)
		assert_true(dns_response_add_option(&r->b, INRP_OPTION_CODE, opt, opt_len));
	for (size_t i = 0; chain && chain[i]; i++) {
		struct name t = mkname(chain[i]);
		dns_response_add_cname(&r->b, &t, 30);
	}
	r->relay_ok = dns_response_relay(&r->b, copy, wlen, &a, &qn);
	free(copy);
	r->len = dns_response_finish(&r->b, 1232);
	assert_true(r->len <= limit);
}

static const char *const rich_an[] = {
	"Www.Example.com. 300 IN CNAME Web.Example.com.",
	"web.example.com. 300 IN A 192.0.2.1",
	"web.example.com. 300 IN A 192.0.2.2",
	"www.example.com. 120 IN MX 10 Mail.example.com.",
	"www.example.com. 120 IN A 192.0.2.3",
	NULL,
};
static const char *const rich_ns[] = {
	"example.com. 60 IN SOA ns1.example.com. hostmaster.example.com. 2024010101 7200 900 1209600 60",
	NULL,
};
static const char *const rich_ar[] = {
	"example.com. 3600 IN NS ns1.Example.com.",
	"ns1.example.com. 3600 IN A 192.0.2.53",
	"ns1.example.com. 3600 IN AAAA 2001:db8::53",
	"mail.example.com. 3600 IN A 192.0.2.25",
	NULL,
};

static void test_relay_rich(void **state)
{
	(void)state;
	for (int edns = 0; edns <= 1; edns++) {
		struct dns_query q;
		client_query(&q, 0xc1c1, "WwW.ExAmPlE.CoM", DNS_TYPE_A, edns, 4096, true);
		struct up_spec s = {
			.id = 0x5555, .qname = "www.example.com.", .qtype = LDNS_RR_TYPE_A,
			.ad = true, .edns_udp = 4096,
			.edns_data = (const uint8_t *)"\x00\x0a\x00\x08" "zyxwvuts", .edns_data_len = 12,
			.an = rich_an, .ns = rich_ns, .ar = rich_ar,
		};
		size_t wlen;
		uint8_t *w = up_wire(&s, &wlen);
		/* ldns compressed names: owners, CNAME/MX/SOA/NS targets */
		assert_true(has_pointer(w, DNS_HEADER_LEN + 21, wlen));

		static struct relayed r;
		relay(&r, &q, dns_query_udp_limit(&q, 1232), NULL, w, wlen, 0x5555,
		      "www.example.com", DNS_TYPE_A, NULL, 0);
		assert_true(r.relay_ok);
		assert_true(r.len > 0);
		ldns_pkt *ours = ldns_parse_ok(r.buf, r.len);
		ldns_pkt *theirs = ldns_parse_ok(w, wlen);

		assert_int_equal(ldns_pkt_id(ours), 0xc1c1);
		assert_true(ldns_pkt_qr(ours));
		assert_true(ldns_pkt_rd(ours));
		assert_true(ldns_pkt_ra(ours));
		assert_false(ldns_pkt_aa(ours));
		assert_false(ldns_pkt_tc(ours));
		/* upstream's AD, only for a client that set DO (RFC 6840 5.8) */
		assert_int_equal(ldns_pkt_ad(ours), edns);
		assert_int_equal(ldns_pkt_get_rcode(ours), LDNS_RCODE_NOERROR);
		assert_int_equal(ldns_pkt_qdcount(ours), 1);
		ldns_rr *qr = ldns_rr_list_rr(ldns_pkt_question(ours), 0);
		assert_owner(qr, "WwW.ExAmPlE.CoM.");           /* the client's case */
		assert_int_equal(ldns_rr_get_type(qr), LDNS_RR_TYPE_A);

		assert_section_same(ldns_pkt_answer(ours), 0, ldns_pkt_answer(theirs));
		assert_section_same(ldns_pkt_authority(ours), 0, ldns_pkt_authority(theirs));
		assert_section_same(ldns_pkt_additional(ours), 0, ldns_pkt_additional(theirs));
		assert_int_equal(ldns_pkt_ancount(ours), 5);
		assert_int_equal(ldns_pkt_nscount(ours), 1);
		assert_int_equal(ldns_pkt_arcount(ours), 4);

		/* upstream's OPT is gone; ours is there only if the client sent one */
		assert_int_equal(ldns_pkt_edns(ours), edns);
		assert_int_equal(r.buf[10] << 8 | r.buf[11], 4 + edns);
		if (edns) {
			assert_int_equal(ldns_pkt_edns_udp_size(ours), 1232);
			assert_true(ldns_pkt_edns_do(ours));
			ldns_rdf *ed = ldns_pkt_edns_data(ours);
			assert_true(ed == NULL || ldns_rdf_size(ed) == 0);
		}
		ldns_pkt_free(ours);
		ldns_pkt_free(theirs);

		/* records owned by the question name point at the question */
		size_t first = DNS_HEADER_LEN + q.qname.len + 4;
		assert_int_equal(r.buf[first], 0xC0);
		assert_int_equal(r.buf[first + 1], DNS_HEADER_LEN);
		free(w);
	}
}

static void test_relay_option_and_rcodes(void **state)
{
	(void)state;
	static const ldns_pkt_rcode rcodes[] = {
		LDNS_RCODE_NXDOMAIN, LDNS_RCODE_SERVFAIL, LDNS_RCODE_REFUSED, LDNS_RCODE_NOERROR,
	};
	struct inrp_response_opt ro = { INRP_STATUS_OK, 12, 0x1234567890abcdefull };
	uint8_t opt[INRP_RESPONSE_OPT_LEN];
	inrp_response_opt_write(&ro, opt);

	for (size_t i = 0; i < sizeof(rcodes) / sizeof(rcodes[0]); i++) {
		struct dns_query q;
		client_query(&q, 77, "missing.example.com", DNS_TYPE_AAAA, true, 1232, false);
		struct up_spec s = {
			.id = 78, .qname = "missing.example.com.", .qtype = LDNS_RR_TYPE_AAAA,
			.rcode = rcodes[i], .edns_udp = 1232,
			.edns_data = (const uint8_t *)"\xfe\x4c\x00\x02" "zz", .edns_data_len = 6,
			.ns = rich_ns,
		};
		size_t wlen;
		uint8_t *w = up_wire(&s, &wlen);
		static struct relayed r;
		relay(&r, &q, dns_query_udp_limit(&q, 1232), NULL, w, wlen, 78,
		      "missing.example.com", DNS_TYPE_AAAA, opt, sizeof(opt));
		assert_true(r.relay_ok);
		ldns_pkt *lp = ldns_parse_ok(r.buf, r.len);
		assert_int_equal(ldns_pkt_get_rcode(lp), rcodes[i]);
		assert_false(ldns_pkt_ad(lp));
		assert_int_equal(ldns_pkt_ancount(lp), 0);
		assert_int_equal(ldns_pkt_nscount(lp), 1);
		assert_int_equal(ldns_pkt_arcount(lp), 0);
		assert_true(ldns_pkt_edns(lp));
		assert_false(ldns_pkt_edns_do(lp));
		assert_int_equal(ldns_pkt_edns_extended_rcode(lp), 0);
		/* our option, not upstream's */
		ldns_rdf *ed = ldns_pkt_edns_data(lp);
		assert_non_null(ed);
		assert_int_equal(ldns_rdf_size(ed), 4 + INRP_RESPONSE_OPT_LEN);
		const uint8_t *d = ldns_rdf_data(ed);
		assert_int_equal(d[0] << 8 | d[1], INRP_OPTION_CODE);
		assert_int_equal(d[2] << 8 | d[3], INRP_RESPONSE_OPT_LEN);
		assert_memory_equal(d + 4, opt, sizeof(opt));
		ldns_pkt_free(lp);
		free(w);
	}
}

static void test_relay_extended_rcode(void **state)
{
	(void)state;
	struct up_spec s = {
		.id = 9, .qname = "www.example.com.", .qtype = LDNS_RR_TYPE_A,
		.edns_udp = 1232, .ext_rcode = 1,               /* BADVERS */
	};
	size_t wlen;
	uint8_t *w = up_wire(&s, &wlen);

	/* a client with EDNS gets it in our OPT RR */
	struct dns_query q;
	client_query(&q, 10, "www.example.com", DNS_TYPE_A, true, 1232, false);
	static struct relayed r;
	relay(&r, &q, 1232, NULL, w, wlen, 9, "www.example.com", DNS_TYPE_A, NULL, 0);
	assert_true(r.relay_ok);
	ldns_pkt *lp = ldns_parse_ok(r.buf, r.len);
	assert_int_equal(ldns_pkt_get_rcode(lp), 0);
	assert_true(ldns_pkt_edns(lp));
	assert_int_equal(ldns_pkt_edns_extended_rcode(lp), 1);
	ldns_pkt_free(lp);

	/* a client without EDNS cannot get it: SERVFAIL */
	client_query(&q, 11, "www.example.com", DNS_TYPE_A, false, 0, false);
	relay(&r, &q, 512, NULL, w, wlen, 9, "www.example.com", DNS_TYPE_A, NULL, 0);
	assert_true(r.relay_ok);
	lp = ldns_parse_ok(r.buf, r.len);
	assert_int_equal(ldns_pkt_get_rcode(lp), LDNS_RCODE_SERVFAIL);
	assert_false(ldns_pkt_edns(lp));
	ldns_pkt_free(lp);
	free(w);
}

/* n A records for the question name, then n AAAA glue records with long names */
static char **big_rrs(const char *owner, const char *type, unsigned n, bool long_names)
{
	char **v = calloc(n + 1, sizeof(*v));
	assert_non_null(v);
	for (unsigned i = 0; i < n; i++) {
		v[i] = malloc(256);
		assert_non_null(v[i]);
		if (long_names)
			snprintf(v[i], 256, "host-%03u-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.%s 60 IN %s 2001:db8::%x",
				 i, owner, type, i + 1);
		else if (strcmp(type, "A") == 0)
			snprintf(v[i], 256, "%s 60 IN A 198.51.100.%u", owner, i + 1);
		else
			snprintf(v[i], 256, "%s 60 IN %s 2001:db8::%x", owner, type, i + 1);
	}
	return v;
}

static void free_rrs(char **v)
{
	for (size_t i = 0; v[i]; i++)
		free(v[i]);
	free(v);
}

static void test_relay_truncation(void **state)
{
	(void)state;
	/* 40 A records: 40 * 16 = 640 bytes of answer, over 512 */
	char **an = big_rrs("www.example.com.", "A", 40, false);
	struct up_spec s = {
		.id = 1, .qname = "www.example.com.", .qtype = LDNS_RR_TYPE_A, .edns_udp = 4096,
		.an = (const char *const *)an, .ns = rich_ns,
	};
	size_t wlen;
	uint8_t *w = up_wire(&s, &wlen);
	struct dns_query q;
	static struct relayed r;

	/* no EDNS: 512, TC, question only */
	client_query(&q, 2, "www.example.com", DNS_TYPE_A, false, 0, false);
	relay(&r, &q, dns_query_udp_limit(&q, 1232), NULL, w, wlen, 1, "www.example.com",
	      DNS_TYPE_A, NULL, 0);
	assert_true(r.relay_ok);
	assert_true(r.b.truncated);
	assert_int_equal(r.len, DNS_HEADER_LEN + q.qname.len + 4);
	ldns_pkt *lp = ldns_parse_ok(r.buf, r.len);
	assert_true(ldns_pkt_tc(lp));
	assert_int_equal(ldns_pkt_qdcount(lp), 1);
	assert_int_equal(ldns_pkt_ancount(lp), 0);
	assert_int_equal(ldns_pkt_nscount(lp), 0);
	assert_int_equal(ldns_pkt_arcount(lp), 0);
	ldns_pkt_free(lp);

	/* EDNS 512: TC, and our OPT RR still goes out */
	client_query(&q, 3, "www.example.com", DNS_TYPE_A, true, 512, false);
	relay(&r, &q, dns_query_udp_limit(&q, 1232), NULL, w, wlen, 1, "www.example.com",
	      DNS_TYPE_A, NULL, 0);
	lp = ldns_parse_ok(r.buf, r.len);
	assert_true(ldns_pkt_tc(lp));
	assert_int_equal(ldns_pkt_ancount(lp), 0);
	assert_true(ldns_pkt_edns(lp));
	ldns_pkt_free(lp);

	/* EDNS 1232: it all fits */
	client_query(&q, 4, "www.example.com", DNS_TYPE_A, true, 1232, false);
	relay(&r, &q, dns_query_udp_limit(&q, 1232), NULL, w, wlen, 1, "www.example.com",
	      DNS_TYPE_A, NULL, 0);
	lp = ldns_parse_ok(r.buf, r.len);
	assert_false(ldns_pkt_tc(lp));
	assert_int_equal(ldns_pkt_ancount(lp), 40);
	assert_int_equal(ldns_pkt_nscount(lp), 1);
	ldns_pkt_free(lp);

	/* the exact size fits, one byte less truncates */
	size_t full = r.len;
	relay(&r, &q, full, NULL, w, wlen, 1, "www.example.com", DNS_TYPE_A, NULL, 0);
	assert_int_equal(r.len, full);
	assert_false(r.b.truncated);
	relay(&r, &q, full - 1, NULL, w, wlen, 1, "www.example.com", DNS_TYPE_A, NULL, 0);
	assert_true(r.b.truncated);
	assert_int_equal(r.len, DNS_HEADER_LEN + q.qname.len + 4 + DNS_OPT_RR_LEN);
	free(w);
	free_rrs(an);

	/* upstream truncated: so are we, even with room */
	struct up_spec t = {
		.id = 5, .qname = "www.example.com.", .qtype = LDNS_RR_TYPE_A, .tc = true,
		.an = basic_an,
	};
	w = up_wire(&t, &wlen);
	relay(&r, &q, 4096, NULL, w, wlen, 5, "www.example.com", DNS_TYPE_A, NULL, 0);
	assert_true(r.relay_ok);
	lp = ldns_parse_ok(r.buf, r.len);
	assert_true(ldns_pkt_tc(lp));
	assert_int_equal(ldns_pkt_ancount(lp), 0);
	ldns_pkt_free(lp);
	free(w);
}

static void test_relay_additional_dropped(void **state)
{
	(void)state;
	/* a small answer, an authority record, and 30 long-named glue records */
	char **ar = big_rrs("example.com.", "AAAA", 30, true);
	struct up_spec s = {
		.id = 1, .qname = "www.example.com.", .qtype = LDNS_RR_TYPE_A, .edns_udp = 4096,
		.an = basic_an, .ns = rich_ns, .ar = (const char *const *)ar,
	};
	size_t wlen;
	uint8_t *w = up_wire(&s, &wlen);
	struct dns_query q;
	static struct relayed r;
	client_query(&q, 2, "www.example.com", DNS_TYPE_A, true, 1232, false);
	relay(&r, &q, 1232, NULL, w, wlen, 1, "www.example.com", DNS_TYPE_A, NULL, 0);
	assert_true(r.relay_ok);
	assert_false(r.b.truncated);
	ldns_pkt *ours = ldns_parse_ok(r.buf, r.len);
	ldns_pkt *theirs = ldns_parse_ok(w, wlen);
	assert_false(ldns_pkt_tc(ours));
	assert_section_same(ldns_pkt_answer(ours), 0, ldns_pkt_answer(theirs));
	assert_section_same(ldns_pkt_authority(ours), 0, ldns_pkt_authority(theirs));
	/* some glue, not all of it, and what is there is upstream's first records in order */
	size_t n = ldns_rr_list_rr_count(ldns_pkt_additional(ours));
	assert_true(n > 0 && n < 30);
	assert_int_equal(ldns_pkt_arcount(ours), n);
	for (size_t i = 0; i < n; i++)
		assert_rr_same(ldns_rr_list_rr(ldns_pkt_additional(ours), i),
			       ldns_rr_list_rr(ldns_pkt_additional(theirs), i));
	assert_true(ldns_pkt_edns(ours));
	ldns_pkt_free(ours);
	ldns_pkt_free(theirs);

	/* room for the answer only: the authority does not fit, and that truncates */
	client_query(&q, 2, "www.example.com", DNS_TYPE_A, false, 0, false);
	size_t answer_only = DNS_HEADER_LEN + q.qname.len + 4 + 2 * 16;
	relay(&r, &q, answer_only + 10, NULL, w, wlen, 1, "www.example.com", DNS_TYPE_A, NULL, 0);
	assert_true(r.b.truncated);
	ours = ldns_parse_ok(r.buf, r.len);
	assert_true(ldns_pkt_tc(ours));
	assert_int_equal(ldns_pkt_ancount(ours), 0);
	assert_int_equal(ldns_pkt_nscount(ours), 0);
	ldns_pkt_free(ours);
	free(w);
	free_rrs(ar);
}

static void test_relay_redirect(void **state)
{
	(void)state;
	struct dns_query q;
	client_query(&q, 0x3333, "Shop.Example.ORG", DNS_TYPE_A, true, 1232, false);
	static const char *const chain[] = { "shop.cdn.example.net", "edge.example.com", NULL };
	const char *const an[] = {
		"edge.example.com. 20 IN A 192.0.2.80",
		"edge.example.com. 20 IN A 192.0.2.81",
		NULL,
	};
	const char *const ar[] = { "edge.example.com. 20 IN AAAA 2001:db8::80", NULL };
	struct up_spec s = {
		.id = 0x4444, .qname = "EDGE.example.com.", .qtype = LDNS_RR_TYPE_A, .edns_udp = 1232,
		.an = an, .ns = rich_ns, .ar = ar,
	};
	size_t wlen;
	uint8_t *w = up_wire(&s, &wlen);
	static struct relayed r;
	relay(&r, &q, 1232, chain, w, wlen, 0x4444, "edge.example.com", DNS_TYPE_A, NULL, 0);
	assert_true(r.relay_ok);
	ldns_pkt *ours = ldns_parse_ok(r.buf, r.len);
	ldns_pkt *theirs = ldns_parse_ok(w, wlen);
	assert_int_equal(ldns_pkt_id(ours), 0x3333);
	assert_owner(ldns_rr_list_rr(ldns_pkt_question(ours), 0), "Shop.Example.ORG.");
	ldns_rr_list *ans = ldns_pkt_answer(ours);
	assert_int_equal(ldns_rr_list_rr_count(ans), 4);

	ldns_rr *c1 = ldns_rr_list_rr(ans, 0), *c2 = ldns_rr_list_rr(ans, 1);
	assert_int_equal(ldns_rr_get_type(c1), LDNS_RR_TYPE_CNAME);
	assert_owner(c1, "Shop.Example.ORG.");
	char *t = ldns_rdf2str(ldns_rr_rdf(c1, 0));
	assert_string_equal(t, "shop.cdn.example.net.");
	LDNS_FREE(t);
	assert_int_equal(ldns_rr_ttl(c1), 30);
	assert_int_equal(ldns_rr_get_type(c2), LDNS_RR_TYPE_CNAME);
	assert_owner(c2, "shop.cdn.example.net.");
	t = ldns_rdf2str(ldns_rr_rdf(c2, 0));
	assert_string_equal(t, "edge.example.com.");
	LDNS_FREE(t);
	/* upstream's records follow, owned by the last target */
	assert_section_same(ans, 2, ldns_pkt_answer(theirs));
	assert_owner(ldns_rr_list_rr(ans, 2), "edge.example.com.");
	assert_section_same(ldns_pkt_authority(ours), 0, ldns_pkt_authority(theirs));
	assert_section_same(ldns_pkt_additional(ours), 0, ldns_pkt_additional(theirs));
	ldns_pkt_free(ours);
	ldns_pkt_free(theirs);

	/* the A records point at the second CNAME's target */
	size_t c2_off = DNS_HEADER_LEN + q.qname.len + 4 + 12 + 22;   /* "shop.cdn.example.net" is 22 bytes */
	size_t a_off = c2_off + 12 + 18;                               /* "edge.example.com" is 18 bytes */
	uint16_t target = (uint16_t)(c2_off + 12);
	assert_int_equal(r.buf[a_off], 0xC0 | (target >> 8));
	assert_int_equal(r.buf[a_off + 1], target & 0xff);
	free(w);

	/* the chain with a limit that takes the CNAMEs but not upstream's answer: TC, no CNAMEs */
	w = up_wire(&s, &wlen);
	size_t cnames_end = DNS_HEADER_LEN + q.qname.len + 4 + 12 + 22 + 12 + 18;
	relay(&r, &q, cnames_end + DNS_OPT_RR_LEN + 20, chain, w, wlen, 0x4444, "edge.example.com",
	      DNS_TYPE_A, NULL, 0);
	assert_true(r.b.truncated);
	ours = ldns_parse_ok(r.buf, r.len);
	assert_true(ldns_pkt_tc(ours));
	assert_int_equal(ldns_pkt_ancount(ours), 0);
	ldns_pkt_free(ours);
	free(w);
}

static void test_relay_opt_first_in_additional(void **state)
{
	(void)state;
	/* upstream's OPT RR before the glue: skipped, the glue relayed */
	struct pkt p;
	static const uint8_t ptr_qname[2] = { 0xC0, 0x0C };
	header(&p, 21, 0x80, 0x80, 1, 1, 0, 3);
	question(&p, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN);
	rr_raw_owner(&p, ptr_qname, 2, DNS_TYPE_A, 60, "\xc0\x00\x02\x01", 4);
	opt_rr(&p, 1232, 0, true, (const uint8_t *)"\x00\x0a\x00\x08" "abcdefgh", 12);
	rr_raw_owner(&p, "\003ns1\300\020", 6, DNS_TYPE_A, 60, "\xc0\x00\x02\x35", 4);
	rr_raw_owner(&p, "\003ns2\300\020", 6, DNS_TYPE_A, 60, "\xc0\x00\x02\x36", 4);

	struct dns_query q;
	client_query(&q, 22, "www.example.com", DNS_TYPE_A, false, 0, false);
	static struct relayed r;
	relay(&r, &q, 512, NULL, p.b, p.len, 21, "www.example.com", DNS_TYPE_A, NULL, 0);
	assert_true(r.relay_ok);
	ldns_pkt *lp = ldns_parse_ok(r.buf, r.len);
	assert_false(ldns_pkt_edns(lp));
	assert_int_equal(ldns_pkt_ancount(lp), 1);
	assert_int_equal(ldns_pkt_arcount(lp), 2);
	assert_owner(ldns_rr_list_rr(ldns_pkt_additional(lp), 0), "ns1.example.com.");
	assert_owner(ldns_rr_list_rr(ldns_pkt_additional(lp), 1), "ns2.example.com.");
	ldns_pkt_free(lp);
}

static void test_relay_rdata_layouts(void **state)
{
	(void)state;
	/* every name-bearing type the relay decompresses, plus raw ones */
	const char *const an[] = {
		"www.example.com. 60 IN CNAME a.Example.com.",
		"www.example.com. 60 IN NS ns.example.com.",
		"www.example.com. 60 IN PTR ptr.example.com.",
		"www.example.com. 60 IN DNAME example.net.",
		"www.example.com. 60 IN MX 5 mx.example.com.",
		"www.example.com. 60 IN AFSDB 1 afs.example.com.",
		"www.example.com. 60 IN RT 2 rt.example.com.",
		"www.example.com. 60 IN KX 3 kx.example.com.",
		"www.example.com. 60 IN MINFO r.example.com. e.example.com.",
		"www.example.com. 60 IN RP mbox.example.com. txt.example.com.",
		"www.example.com. 60 IN SRV 1 2 443 srv.example.com.",
		"www.example.com. 60 IN SOA m.example.com. r.example.com. 1 2 3 4 5",
		"www.example.com. 60 IN TXT \"hello\" \"world\"",
		"www.example.com. 60 IN AAAA 2001:db8::1",
		"www.example.com. 60 IN TYPE65000 \\# 3 010203",
		NULL,
	};
	struct up_spec s = {
		.id = 1, .qname = "www.example.com.", .qtype = LDNS_RR_TYPE_A, .an = an,
	};
	size_t wlen;
	uint8_t *w = up_wire(&s, &wlen);
	struct dns_query q;
	client_query(&q, 2, "www.example.com", DNS_TYPE_A, true, 4096, false);
	static struct relayed r;
	relay(&r, &q, 4096, NULL, w, wlen, 1, "www.example.com", DNS_TYPE_A, NULL, 0);
	assert_true(r.relay_ok);
	ldns_pkt *ours = ldns_parse_ok(r.buf, r.len);
	ldns_pkt *theirs = ldns_parse_ok(w, wlen);
	assert_section_same(ldns_pkt_answer(ours), 0, ldns_pkt_answer(theirs));
	ldns_pkt_free(ours);
	ldns_pkt_free(theirs);
	free(w);
}

static void test_relay_undecodable(void **state)
{
	(void)state;
	struct dns_query q;
	client_query(&q, 2, "www.example.com", DNS_TYPE_A, false, 0, false);
	static const uint8_t ptr_qname[2] = { 0xC0, 0x0C };
	static struct relayed r;
	struct pkt p;

	/* an MX whose RDATA is only the preference */
	header(&p, 1, 0x80, 0, 1, 1, 0, 0);
	question(&p, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN);
	rr_raw_owner(&p, ptr_qname, 2, DNS_TYPE_MX, 60, "\x00\x05", 2);
	relay(&r, &q, 512, NULL, p.b, p.len, 1, "www.example.com", DNS_TYPE_A, NULL, 0);
	assert_false(r.relay_ok);

	/* a CNAME target running past its RDATA (into the next record) */
	header(&p, 1, 0x80, 0, 1, 2, 0, 0);
	question(&p, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN);
	rr_raw_owner(&p, ptr_qname, 2, DNS_TYPE_CNAME, 60, "\001a", 2);
	rr_raw_owner(&p, "\000", 1, DNS_TYPE_A, 60, "\x01\x02\x03\x04", 4);
	relay(&r, &q, 512, NULL, p.b, p.len, 1, "www.example.com", DNS_TYPE_A, NULL, 0);
	assert_false(r.relay_ok);

	/* a CNAME with bytes after its target */
	header(&p, 1, 0x80, 0, 1, 1, 0, 0);
	question(&p, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN);
	rr_raw_owner(&p, ptr_qname, 2, DNS_TYPE_CNAME, 60, "\001a\000\000", 4);
	relay(&r, &q, 512, NULL, p.b, p.len, 1, "www.example.com", DNS_TYPE_A, NULL, 0);
	assert_false(r.relay_ok);

	/* an owner pointing forward */
	header(&p, 1, 0x80, 0, 1, 1, 0, 0);
	question(&p, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN);
	rr_raw_owner(&p, "\xc0\x30", 2, DNS_TYPE_A, 60, "\x01\x02\x03\x04", 4);
	relay(&r, &q, 512, NULL, p.b, p.len, 1, "www.example.com", DNS_TYPE_A, NULL, 0);
	assert_false(r.relay_ok);

	/* an SOA without its 20 bytes of numbers */
	header(&p, 1, 0x80, 0, 1, 0, 1, 0);
	question(&p, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN);
	rr_raw_owner(&p, "\300\020", 2, DNS_TYPE_SOA, 60, "\000\000\000\000\000\000\000\000\000\000\000", 11);
	relay(&r, &q, 512, NULL, p.b, p.len, 1, "www.example.com", DNS_TYPE_A, NULL, 0);
	assert_false(r.relay_ok);
}

/* Upstream's TSIG and SIG(0) sign its message to us: not relayed, and our OPT stays last. */
static void test_relay_drops_transaction_signatures(void **state)
{
	(void)state;
	struct dns_query q;
	client_query(&q, 3, "www.example.com", DNS_TYPE_A, true, 1232, false);
	static const uint8_t ptr_qname[2] = { 0xC0, 0x0C };
	static struct relayed r;
	struct pkt p;

	header(&p, 1, 0x80, 0, 1, 1, 0, 2);
	question(&p, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN);
	rr_raw_owner(&p, ptr_qname, 2, DNS_TYPE_A, 60, "\xc0\x00\x02\x01", 4);
	rr_raw_owner(&p, "\000", 1, DNS_TYPE_SIG, 0, "\x00\x00\x00\x00", 4);
	rr_raw_owner(&p, "\003key\000", 5, DNS_TYPE_TSIG, 0, "\x00\x00\x00\x00\x00\x00", 6);
	relay(&r, &q, 1232, NULL, p.b, p.len, 1, "www.example.com", DNS_TYPE_A, NULL, 0);
	assert_true(r.relay_ok);
	ldns_pkt *ours = ldns_parse_ok(r.buf, r.len);
	assert_int_equal(ldns_pkt_ancount(ours), 1);
	assert_int_equal(ldns_pkt_arcount(ours), 0);    /* ldns counts the OPT apart */
	assert_true(ldns_pkt_edns(ours));
	assert_int_equal(r.buf[11], 1);                 /* ARCOUNT: our OPT only */
	ldns_pkt_free(ours);

	/* a TSIG anywhere but last makes the message malformed */
	header(&p, 1, 0x80, 0, 1, 2, 0, 0);
	question(&p, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN);
	rr_raw_owner(&p, "\003key\000", 5, DNS_TYPE_TSIG, 0, "\x00\x00\x00\x00\x00\x00", 6);
	rr_raw_owner(&p, ptr_qname, 2, DNS_TYPE_A, 60, "\xc0\x00\x02\x01", 4);
	struct dns_upstream_answer a;
	const char *err = NULL;
	struct name qn = mkname("www.example.com");
	assert_int_equal(dns_upstream_answer_parse(p.b, p.len, 1, &qn, DNS_TYPE_A, DNS_CLASS_IN, &a, &err), -1);
	assert_non_null(err);

	/* last, but in the authority section: malformed too, or it would be relayed there (found by fuzz_relay) */
	header(&p, 1, 0x80, 0, 1, 1, 1, 0);
	question(&p, "www.example.com", DNS_TYPE_A, DNS_CLASS_IN);
	rr_raw_owner(&p, ptr_qname, 2, DNS_TYPE_A, 60, "\xc0\x00\x02\x01", 4);
	rr_raw_owner(&p, "\003key\000", 5, DNS_TYPE_TSIG, 0, "\x00\x00\x00\x00\x00\x00", 6);
	err = NULL;
	assert_int_equal(dns_upstream_answer_parse(p.b, p.len, 1, &qn, DNS_TYPE_A, DNS_CLASS_IN, &a, &err), -1);
	assert_non_null(err);
	assert_non_null(strstr(err, "TSIG"));
}

/* Names keep the case upstream wrote them in (RFC 4343), compressed or not. */
static void test_relay_keeps_case(void **state)
{
	(void)state;
	struct dns_query q;
	client_query(&q, 4, "www.example.com", DNS_TYPE_CNAME, false, 0, false);
	static const uint8_t ptr_qname[2] = { 0xC0, 0x0C };
	static struct relayed r;
	struct pkt p;

	header(&p, 1, 0x80, 0, 1, 2, 0, 0);
	question(&p, "www.example.com", DNS_TYPE_CNAME, DNS_CLASS_IN);
	/* the target: "Web" then a pointer to "example.com" in the question */
	rr_raw_owner(&p, ptr_qname, 2, DNS_TYPE_CNAME, 60, "\003Web\xc0\x10", 6);
	rr_raw_owner(&p, "\003WeB\007ExAmPlE\003cOm\000", 17, DNS_TYPE_A, 60, "\x01\x02\x03\x04", 4);
	relay(&r, &q, 512, NULL, p.b, p.len, 1, "www.example.com", DNS_TYPE_CNAME, NULL, 0);
	assert_true(r.relay_ok);
	ldns_pkt *ours = ldns_parse_ok(r.buf, r.len);
	ldns_rr *cname = ldns_rr_list_rr(ldns_pkt_answer(ours), 0);
	ldns_rr *a = ldns_rr_list_rr(ldns_pkt_answer(ours), 1);
	char *target = ldns_rdf2str(ldns_rr_rdf(cname, 0));
	char *owner = ldns_rdf2str(ldns_rr_owner(a));
	assert_string_equal(target, "Web.example.com.");
	assert_string_equal(owner, "WeB.ExAmPlE.cOm.");
	free(target);
	free(owner);
	ldns_pkt_free(ours);
}

static void test_relay_builder_failed(void **state)
{
	(void)state;
	struct dns_query q;
	client_query(&q, 2, "www.example.com", DNS_TYPE_A, true, 1232, false);
	struct up_spec s = { .id = 1, .qname = "www.example.com.", .qtype = LDNS_RR_TYPE_A, .an = basic_an };
	size_t wlen;
	uint8_t *w = up_wire(&s, &wlen);
	static struct relayed r;
	/* too small for header, question and OPT: nothing to send, nothing written */
	relay(&r, &q, DNS_HEADER_LEN + q.qname.len + 4 + DNS_OPT_RR_LEN - 1, NULL, w, wlen, 1,
	      "www.example.com", DNS_TYPE_A, NULL, 0);
	assert_true(r.b.failed);
	assert_int_equal(r.len, 0);
	free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_query_write_full),
		cmocka_unit_test(test_query_write_variants),
		cmocka_unit_test(test_query_write_cap),
		cmocka_unit_test(test_query_write_cookie),
		cmocka_unit_test(test_upstream_accepts),
		cmocka_unit_test(test_upstream_extended_rcode),
		cmocka_unit_test(test_upstream_rejects_header),
		cmocka_unit_test(test_upstream_rejects_records),
		cmocka_unit_test(test_upstream_rejects_opt),
		cmocka_unit_test(test_relay_rich),
		cmocka_unit_test(test_relay_drops_transaction_signatures),
		cmocka_unit_test(test_relay_keeps_case),
		cmocka_unit_test(test_relay_option_and_rcodes),
		cmocka_unit_test(test_relay_extended_rcode),
		cmocka_unit_test(test_relay_truncation),
		cmocka_unit_test(test_relay_additional_dropped),
		cmocka_unit_test(test_relay_redirect),
		cmocka_unit_test(test_relay_opt_first_in_additional),
		cmocka_unit_test(test_relay_rdata_layouts),
		cmocka_unit_test(test_relay_undecodable),
		cmocka_unit_test(test_relay_builder_failed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
