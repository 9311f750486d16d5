/*
 * The relay path of inrpd: the input is an upstream's answer to our query
 * for "www.example.com" A.  Its id is taken from the input's first two
 * bytes, so those bytes also pick the case (answered over what a real
 * answer would have to match anyway):
 *   id high byte  bits 0-1  CNAMEs before the relayed answer (0, 1 or 2;
 *                           3 counts as 0): the client asked for an alias
 *                 bit 2     the client's query had no EDNS
 *                 bit 3     an INRP response option in our OPT RR
 *                 bit 4     the client set DO
 *   id low byte             the size limit, 512..4096
 * If dns_upstream_answer_parse accepts the input, it is relayed into a
 * response to the client, and:
 *   - the response fits the limit and passes our own answer check (every
 *     record inside the message, one OPT RR exactly when the client sent
 *     one), with the client's id, upstream's rcode (SERVFAIL for an
 *     extended one the client cannot get) and AD (only for a client that
 *     set DO), and counts that say
 *     whether it was truncated;
 *   - if ldns accepts the input, it accepts our response too, with no more
 *     answers than upstream's plus the CNAMEs, and (untruncated) the same
 *     records, names compared without case; but only where ldns reads the
 *     input's records as we do (ldns_reads_alike).
 * Any disagreement abort()s.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* before ldns: without it, ldns/common.h defines bool as signed char */
#include <stdbool.h>
#include <ldns/ldns.h>

#include "dns.h"
#include "inrp.h"

#define CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "fuzz_relay: check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
		abort(); \
	} \
} while (0)

#define CLIENT_ID 0x7a7a

static const char *const chain_text[2][2] = {
	{ "www.example.com", NULL },
	{ "mid.example.net", "www.example.com" },
};

/* The client's query: id CLIENT_ID, RD, one question, an OPT RR if edns. */
static size_t client_query(uint8_t *p, const uint8_t *qname_wire, size_t qlen, bool edns, bool dnssec_ok)
{
	size_t n = 0;
	p[n++] = CLIENT_ID >> 8;
	p[n++] = CLIENT_ID & 0xff;
	p[n++] = 0x01;
	p[n++] = 0x00;
	static const uint8_t counts[8] = { 0, 1, 0, 0, 0, 0, 0, 0 };   /* QD AN NS AR */
	memcpy(p + n, counts, 8);
	p[n + 7] = edns ? 1 : 0;
	n += 8;
	memcpy(p + n, qname_wire, qlen);
	n += qlen;
	static const uint8_t a_in[4] = { 0, 1, 0, 1 };
	memcpy(p + n, a_in, 4);
	n += 4;
	if (edns) {
		static const uint8_t opt[11] = { 0, 0, 41, 0x10, 0x00, 0, 0, 0, 0, 0, 0 };
		memcpy(p + n, opt, 11);
		if (dnssec_ok)
			p[n + 7] = 0x80;
		n += 11;
	}
	return n;
}

/* The types whose RDATA names dns_response_relay decompresses (lib/dns/dns.c, rdata_layout). */
static bool relay_decompresses(uint16_t type)
{
	switch (type) {
	case 2: case 3: case 4: case 5: case 6: case 7: case 8: case 9: case 12: case 14:
	case 15: case 17: case 18: case 21: case 33: case 36: case 39:
		return true;
	default:
		return false;
	}
}

/* Where the record at pos ends by its RDLENGTH (it passed our check: in bounds). */
static size_t record_end(const uint8_t *p, size_t pos)
{
	while (p[pos] != 0 && (p[pos] & 0xC0) != 0xC0)
		pos += 1u + p[pos];
	pos += p[pos] == 0 ? 1 : 2;
	return pos + 10u + (size_t)(p[pos + 8] << 8 | p[pos + 9]);
}

/*
 * Whether ldns reads upstream's records as we do, so that comparing with
 * it is fair.  Two leniencies of ldns make it read another message than
 * the one on the wire, and are left out:
 *   - it does not skip to the end of the RDATA after the fields it knows
 *     (an A record with RDLENGTH 8 leaves 4 bytes it reads as the next
 *     record), so its records can end elsewhere than RDLENGTH says;
 *   - it follows compression pointers inside the RDATA of types that must
 *     not be compressed (RFC 3597 4: NSEC, RRSIG, NAPTR, ...), which the
 *     relay copies as they are: the pointer then points into our message.
 * (Upstream's TSIG and SIG(0) records are not relayed: they sign upstream's
 * message to us, not ours to the client.)
 */
static bool ldns_reads_alike(const uint8_t *data, size_t size, const struct dns_upstream_answer *a)
{
	size_t pos = a->records_off;
	unsigned an = a->ancount, anns = an + a->nscount, total = anns + a->arcount;
	for (unsigned i = 0; i < total; i++) {
		size_t end = record_end(data, pos), lpos = pos;
		ldns_rr *rr = NULL;
		ldns_pkt_section sec = i < an ? LDNS_SECTION_ANSWER :
				       i < anns ? LDNS_SECTION_AUTHORITY : LDNS_SECTION_ADDITIONAL;
		if (ldns_wire2rr(&rr, data, size, &lpos, sec) != LDNS_STATUS_OK)
			return false;
		bool alike = lpos == end;
		if (alike && !relay_decompresses(ldns_rr_get_type(rr)))
			for (size_t k = 0; k < ldns_rr_rd_count(rr); k++)
				if (ldns_rdf_get_type(ldns_rr_rdf(rr, k)) == LDNS_RDF_TYPE_DNAME)
					alike = false;
		ldns_rr_free(rr);
		if (!alike)
			return false;
		pos = end;
	}
	return true;
}

static bool rr_same(const ldns_rr *a, const ldns_rr *b)
{
	if (ldns_dname_compare(ldns_rr_owner(a), ldns_rr_owner(b)) != 0 ||
	    ldns_rr_get_type(a) != ldns_rr_get_type(b) ||
	    ldns_rr_get_class(a) != ldns_rr_get_class(b) ||
	    ldns_rr_ttl(a) != ldns_rr_ttl(b) ||
	    ldns_rr_rd_count(a) != ldns_rr_rd_count(b))
		return false;
	for (size_t i = 0; i < ldns_rr_rd_count(a); i++) {
		const ldns_rdf *x = ldns_rr_rdf(a, i), *y = ldns_rr_rdf(b, i);
		if (ldns_rdf_get_type(x) != ldns_rdf_get_type(y))
			return false;
		if (ldns_rdf_get_type(x) == LDNS_RDF_TYPE_DNAME ? ldns_dname_compare(x, y) != 0
								 : ldns_rdf_compare(x, y) != 0)
			return false;
	}
	return true;
}

static void check_section(const ldns_rr_list *ours, size_t from, const ldns_rr_list *theirs,
			  size_t count, const char *what)
{
	CHECK(ldns_rr_list_rr_count(ours) >= from + count);
	CHECK(ldns_rr_list_rr_count(theirs) >= count);
	for (size_t i = 0; i < count; i++) {
		const ldns_rr *a = ldns_rr_list_rr(ours, from + i), *b = ldns_rr_list_rr(theirs, i);
		if (!rr_same(a, b)) {
			char *sa = ldns_rr2str(a), *sb = ldns_rr2str(b);
			fprintf(stderr, "fuzz_relay: %s record %zu differs:\n  ours:     %s  upstream: %s",
				what, i, sa ? sa : "?\n", sb ? sb : "?\n");
			free(sa);
			free(sb);
			abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t www_wire[] = "\003www\007example\003com";
	static const uint8_t alias_wire[] = "\005Alias\007Example\003ORG";
	static const uint8_t www_mixed[] = "\003WWW\007Example\003Com";
	struct name target;
	CHECK(name_from_wire(&target, www_wire, sizeof(www_wire)) == NAME_OK);

	if (size < 2)
		return 0;
	uint16_t id = (uint16_t)(data[0] << 8 | data[1]);
	struct dns_upstream_answer a;
	const char *err = NULL;
	if (dns_upstream_answer_parse(data, size, id, &target, DNS_TYPE_A, DNS_CLASS_IN, &a, &err) < 0) {
		CHECK(err != NULL);
		return 0;
	}
	CHECK(size >= DNS_HEADER_LEN);
	CHECK(a.records_off <= size);
	if (a.has_opt)
		CHECK(a.opts_off >= a.records_off + 11u && (size_t)a.opts_off + a.opts_len <= size);

	unsigned nchain = data[0] & 3;
	if (nchain == 3)
		nchain = 0;
	bool edns = (data[0] & 4) == 0, with_opt = (data[0] & 8) != 0, dnssec_ok = (data[0] & 16) != 0;
	size_t limit = DNS_UDP_MIN + (size_t)data[1] * (DNS_EDNS_MAX - DNS_UDP_MIN) / 255;

	uint8_t qbuf[DNS_HEADER_LEN + NAME_MAX_WIRE + 4 + DNS_OPT_RR_LEN];
	size_t qlen = nchain ? client_query(qbuf, alias_wire, sizeof(alias_wire), edns, dnssec_ok)
			     : client_query(qbuf, www_mixed, sizeof(www_mixed), edns, dnssec_ok);
	struct dns_query q;
	CHECK(dns_query_parse(qbuf, qlen, &q) == DNS_PARSE_OK);

	uint8_t *buf = malloc(limit);
	CHECK(buf != NULL);
	struct dns_builder b;
	dns_response_init(&b, &q, DNS_RCODE_NOERROR, buf, limit);
	CHECK(!b.failed);
	struct inrp_response_opt ro = { INRP_STATUS_OK, 3, 0x0123456789abcdefull };
	uint8_t opt[INRP_RESPONSE_OPT_LEN];
	inrp_response_opt_write(&ro, opt);
	if (with_opt)
		CHECK(dns_response_add_option(&b, INRP_OPTION_CODE, opt, sizeof(opt)) == edns);
	for (unsigned i = 0; i < nchain; i++) {
		struct name t;
		const char *s = chain_text[nchain - 1][i];
		CHECK(name_from_text(&t, s, strlen(s)) == NAME_OK);
		CHECK(dns_response_add_cname(&b, &t, 30));
	}
	bool ok = dns_response_relay(&b, data, size, &a, &target);
	size_t len = dns_response_finish(&b, 1232);
	CHECK(len > 0 && len <= limit);
	if (!ok) {
		/* inrpd drops such an answer; what was built so far is still a message */
		struct dns_upstream_answer self;
		CHECK(dns_upstream_answer_parse(buf, len, CLIENT_ID, &q.qname, DNS_TYPE_A, DNS_CLASS_IN,
						&self, &err) == 0);
		free(buf);
		return 0;
	}

	/* our own answer check, as a router downstream of us would apply it */
	struct dns_upstream_answer self;
	err = NULL;
	if (dns_upstream_answer_parse(buf, len, CLIENT_ID, &q.qname, DNS_TYPE_A, DNS_CLASS_IN,
				      &self, &err) != 0) {
		fprintf(stderr, "fuzz_relay: our own check refuses our response: %s\n", err);
		abort();
	}
	unsigned rcode = a.rcode > 15 && !edns ? DNS_RCODE_SERVFAIL : a.rcode;
	CHECK(self.rcode == rcode);
	CHECK(self.ad == (a.ad && edns && dnssec_ok));      /* RFC 6840 5.8 */
	CHECK(self.has_opt == edns);
	CHECK(self.tc == b.truncated);
	if (a.tc)
		CHECK(self.tc);
	unsigned up_ar = a.arcount - (a.has_opt ? 1u : 0u);
	if (self.tc) {
		CHECK(self.ancount == 0 && self.nscount == 0);
		CHECK(self.arcount == (edns ? 1 : 0));
	} else {
		CHECK(self.ancount == a.ancount + nchain);
		CHECK(self.nscount == a.nscount);
		CHECK(self.arcount <= up_ar + (edns ? 1 : 0));
	}
	if (edns && with_opt) {
		const uint8_t *d;
		size_t dl;
		CHECK(inrp_find_option(buf + self.opts_off, self.opts_len, INRP_OPTION_CODE, &d, &dl));
		CHECK(dl == sizeof(opt) && memcmp(d, opt, dl) == 0);
	}

	/* against ldns: if it takes upstream's answer (and reads it as we do), it takes ours */
	ldns_pkt *in = NULL, *out = NULL;
	if (ldns_wire2pkt(&in, data, size) != LDNS_STATUS_OK) {
		free(buf);
		return 0;
	}
	if (!ldns_reads_alike(data, size, &a)) {
		ldns_pkt_free(in);
		free(buf);
		return 0;
	}
	ldns_status st = ldns_wire2pkt(&out, buf, len);
	if (st != LDNS_STATUS_OK) {
		fprintf(stderr, "fuzz_relay: ldns takes the input but not our response: %s\n",
			ldns_get_errorstr_by_id(st));
		abort();
	}
	CHECK(ldns_pkt_id(out) == CLIENT_ID);
	CHECK(ldns_pkt_qr(out));
	CHECK(ldns_pkt_tc(out) == self.tc);
	CHECK(ldns_pkt_qdcount(out) == 1);
	CHECK(ldns_pkt_ancount(out) <= (size_t)a.ancount + nchain);
	CHECK(ldns_pkt_edns(out) == edns);
	if (!self.tc) {
		CHECK(ldns_pkt_ancount(out) == ldns_pkt_ancount(in) + nchain);
		check_section(ldns_pkt_answer(out), nchain, ldns_pkt_answer(in), a.ancount, "answer");
		check_section(ldns_pkt_authority(out), 0, ldns_pkt_authority(in), a.nscount, "authority");
		/* upstream's transaction signatures (SIG(0), TSIG) are not relayed */
		ldns_rr_list *up_add = ldns_rr_list_new();
		CHECK(up_add);
		for (size_t i = 0; i < ldns_rr_list_rr_count(ldns_pkt_additional(in)); i++) {
			ldns_rr *rr = ldns_rr_list_rr(ldns_pkt_additional(in), i);
			if (ldns_rr_get_type(rr) != LDNS_RR_TYPE_SIG && ldns_rr_get_type(rr) != LDNS_RR_TYPE_TSIG)
				ldns_rr_list_push_rr(up_add, rr);
		}
		check_section(ldns_pkt_additional(out), 0, up_add,
			      ldns_rr_list_rr_count(ldns_pkt_additional(out)), "additional");
		ldns_rr_list_free(up_add);       /* the records stay in the packet */
	}
	ldns_pkt_free(in);
	ldns_pkt_free(out);
	free(buf);
	return 0;
}
