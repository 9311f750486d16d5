/*
 * The query path of inrpd: dns_query_parse on the input and, if it parses
 * (or asks for an error answer), a response built into a buffer.  Checked
 * against ldns:
 *   - whatever our parser accepts, ldns_wire2pkt accepts too, and both
 *     agree on id, flags, qname, qtype, qclass and EDNS;
 *   - every response we build parses with ldns and says what we built;
 *   - a response is never taken for a query.
 *   - the EDNS options inrpd reads (COOKIE, NSID) split as RFC 7873 says,
 *     and a server cookie checks only if we made it;
 *   - the packet cache walks any message given to it without reading past
 *     its end, and serves back what it kept.
 * Any disagreement abort()s.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <ldns/ldns.h>

#include "cache.h"
#include "cookie.h"
#include "dns.h"
#include "inrp.h"

#define CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "fuzz_query: check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
		abort(); \
	} \
} while (0)

static void check_against_ldns(const uint8_t *data, size_t size, const struct dns_query *q)
{
	ldns_pkt *lp = NULL;
	ldns_status st = ldns_wire2pkt(&lp, data, size);
	if (st != LDNS_STATUS_OK) {
		fprintf(stderr, "fuzz_query: we accept, ldns says %s\n", ldns_get_errorstr_by_id(st));
		abort();
	}
	CHECK(ldns_pkt_id(lp) == q->id);
	CHECK(!ldns_pkt_qr(lp));
	CHECK(ldns_pkt_get_opcode(lp) == LDNS_PACKET_QUERY);
	CHECK(ldns_pkt_rd(lp) == q->rd);
	CHECK(ldns_pkt_cd(lp) == q->cd);
	CHECK(ldns_pkt_qdcount(lp) == 1);
	ldns_rr *qr = ldns_rr_list_rr(ldns_pkt_question(lp), 0);
	CHECK(qr != NULL);
	CHECK(ldns_rr_get_type(qr) == q->qtype);
	CHECK(ldns_rr_get_class(qr) == q->qclass);

	/* the owner name: ldns keeps the case, we keep both forms */
	ldns_rdf *owner = ldns_rr_owner(qr);
	CHECK(ldns_rdf_size(owner) == q->qname.len);
	CHECK(memcmp(ldns_rdf_data(owner), q->qname_orig, q->qname.len) == 0);
	ldns_rdf *lower = ldns_rdf_clone(owner);
	CHECK(lower != NULL);
	ldns_dname2canonical(lower);
	CHECK(memcmp(ldns_rdf_data(lower), q->qname.wire, q->qname.len) == 0);
	ldns_rdf_deep_free(lower);

	CHECK(ldns_pkt_edns(lp) == q->has_edns);
	if (q->has_edns) {
		CHECK(ldns_pkt_edns_udp_size(lp) == q->edns_udp_raw);
		CHECK(ldns_pkt_edns_version(lp) == q->edns_version);
		CHECK(ldns_pkt_edns_do(lp) == q->edns_do);
	}
	ldns_pkt_free(lp);
}

static void check_response(const struct dns_query *q, int rc, const struct dns_builder *b,
			   const uint8_t *buf, size_t len, unsigned added)
{
	ldns_pkt *lp = NULL;
	ldns_status st = ldns_wire2pkt(&lp, buf, len);
	if (st != LDNS_STATUS_OK) {
		fprintf(stderr, "fuzz_query: ldns rejects our response: %s\n", ldns_get_errorstr_by_id(st));
		abort();
	}
	unsigned rcode = rc == DNS_PARSE_OK ? DNS_RCODE_NOERROR : (unsigned)rc;
	CHECK(ldns_pkt_id(lp) == q->id);
	CHECK(ldns_pkt_qr(lp));
	/* NOTIMP promises nothing: RA and CD clear */
	CHECK(ldns_pkt_ra(lp) == (rcode != DNS_RCODE_NOTIMP));
	CHECK(ldns_pkt_cd(lp) == (q->cd && rcode != DNS_RCODE_NOTIMP));
	CHECK(!ldns_pkt_aa(lp));
	CHECK(ldns_pkt_rd(lp) == q->rd);
	CHECK(ldns_pkt_get_opcode(lp) == q->opcode);
	CHECK(ldns_pkt_tc(lp) == b->truncated);
	CHECK(ldns_pkt_get_rcode(lp) == (rcode & 0xf));
	bool with_question = rcode != DNS_RCODE_FORMERR && rcode != DNS_RCODE_NOTIMP;
	CHECK(ldns_pkt_qdcount(lp) == (with_question ? 1 : 0));
	CHECK(ldns_pkt_ancount(lp) == (b->truncated ? 0 : added));
	CHECK(ldns_pkt_edns(lp) == q->has_edns);
	if (ldns_pkt_edns(lp))
		CHECK(ldns_pkt_edns_extended_rcode(lp) == (rcode >> 4));
	ldns_rr_list *ans = ldns_pkt_answer(lp);
	for (size_t i = 0; i < ldns_rr_list_rr_count(ans); i++) {
		ldns_rr *rr = ldns_rr_list_rr(ans, i);
		CHECK(ldns_rdf_size(ldns_rr_owner(rr)) == q->qname.len);
		CHECK(ldns_rr_get_type(rr) == LDNS_RR_TYPE_A);
		CHECK(ldns_rr_ttl(rr) == 5);
	}
	ldns_pkt_free(lp);

	struct dns_query back;
	CHECK(dns_query_parse(buf, len, &back) == DNS_PARSE_DROP);
}

static void check_options(const uint8_t *data, const struct dns_query *q)
{
	static const uint8_t secret[COOKIE_SECRET_LEN] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	static const uint8_t addr[4] = { 192, 0, 2, 1 };
	const uint8_t *opt, *cc, *sc;
	size_t olen, sl;
	if (!inrp_find_option(data + q->edns_opts_off, q->edns_opts_len, DNS_OPT_COOKIE, &opt, &olen))
		return;
	int rc = cookie_parse(opt, olen, &cc, &sc, &sl);
	CHECK((rc == 0) == (olen == 8 || (olen >= 16 && olen <= 40)));
	if (rc < 0)
		return;
	CHECK(cc == opt && sl == olen - 8);
	uint8_t mine[COOKIE_SERVER_LEN];
	cookie_make(secret, cc, 1000, addr, 4, mine);
	CHECK(cookie_check(secret, cc, mine, sizeof(mine), 1000, addr, 4));
	/* what the client sent checks only if it is exactly what we would make */
	if (sl && cookie_check(secret, cc, sc, sl, 1000, addr, 4))
		CHECK(sl == COOKIE_SERVER_LEN && memcmp(sc, mine, sl) == 0);
}

static void check_cache(const uint8_t *data, size_t size, const struct dns_query *q)
{
	static struct cache *c;
	static const struct cache_limits lim = { 86400, 3600, 5 };
	if (!c)
		c = cache_create(1 << 20, NULL);
	CHECK(c != NULL);
	struct cache_key k;
	cache_key_make(&k, &q->qname, q->qtype, q->qclass, 0);
	/* an exact-size copy, so a sanitizer sees any read past the end */
	uint8_t *copy = malloc(size ? size : 1);
	CHECK(copy != NULL);
	memcpy(copy, data, size);
	if (size > 2)
		copy[2] |= 0x80;                /* as a response */
	bool stored = cache_store(c, &k, 1, copy, size, &lim, data, size < 16 ? (uint8_t)size : 16, 0);
	free(copy);
	struct cache_hit h;
	bool found = cache_lookup(c, &k, 1, 0, 0, &h);
	if (stored) {
		CHECK(found);
		CHECK(h.body_len <= size && h.an_ns_len <= h.body_len);
		uint8_t out[65536];
		memcpy(out, h.body, h.body_len);
		cache_hit_ttls(&h, out, h.body_len, 30);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dns_query q;
	int rc = dns_query_parse(data, size, &q);
	if (rc == DNS_PARSE_DROP)
		return 0;
	CHECK(rc == DNS_PARSE_OK || rc == DNS_RCODE_FORMERR || rc == DNS_RCODE_NOTIMP ||
	      rc == DNS_RCODE_BADVERS);
	if (rc == DNS_PARSE_OK || rc == DNS_RCODE_BADVERS) {
		CHECK(q.has_question);
		CHECK(q.udp_size >= DNS_UDP_MIN && q.udp_size <= DNS_EDNS_MAX);
		check_against_ldns(data, size, &q);
		if (q.has_edns)
			check_options(data, &q);
		check_cache(data, size, &q);
	}

	/*
	 * A response with a couple of fake A records, under the UDP limit the
	 * query asks for (some inputs truncate), then the same under a
	 * limit picked from the input to exercise the edges.
	 */
	static const uint8_t addrs[3][4] = { { 192, 0, 2, 1 }, { 192, 0, 2, 2 }, { 198, 51, 100, 7 } };
	uint8_t buf[DNS_RESPONSE_MAX(3)];
	size_t limits[2] = { dns_query_udp_limit(&q, 1232), 0 };
	limits[1] = DNS_HEADER_LEN + (size > 2 ? data[size - 1] + data[size - 2] : 0);
	for (int l = 0; l < 2; l++) {
		size_t limit = limits[l] > sizeof(buf) ? sizeof(buf) : limits[l];
		struct dns_builder b;
		unsigned added = 0;
		dns_response_init(&b, &q, rc == DNS_PARSE_OK ? DNS_RCODE_NOERROR : (unsigned)rc, buf, limit);
		if (rc == DNS_PARSE_OK)
			for (unsigned i = 0; i < 3; i++)
				if (dns_response_add_addr(&b, AF_INET, addrs[i], 5))
					added++;
		size_t len = dns_response_finish(&b, 1232);
		CHECK(len <= limit);
		if (len == 0) {
			CHECK(b.failed);
			continue;
		}
		check_response(&q, rc, &b, buf, len, added);
	}
	return 0;
}
