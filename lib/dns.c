/*
 * DNS queries in, responses out.  See dns.h for the policy.
 */
#include <string.h>
#include <sys/socket.h>

#include "dns.h"
#include "wire.h"

/* Header flag bits (RFC 1035 4.1.1, RFC 4035 for AD/CD). */
#define F1_QR           0x80
#define F1_OPCODE_SHIFT 3
#define F1_OPCODE_MASK  0x78
#define F1_AA           0x04
#define F1_TC           0x02
#define F1_RD           0x01
#define F2_RA           0x80
#define F2_AD           0x20
#define F2_CD           0x10
#define F2_RCODE_MASK   0x0f

#define EDNS_DO         0x8000  /* in the OPT RR's flags (low 16 bits of TTL) */

/*
 * The length of the question name at pos, root label included; 0 if it
 * is not one we take.  The question is the first name in a message, so a
 * compression pointer there could only point into the header: no encoder
 * writes one, and it is refused (as are label types other than 00, labels
 * over 63 bytes, names over 255 bytes and names running past the packet).
 */
static size_t question_name_len(const uint8_t *pkt, size_t len, size_t pos)
{
	size_t p = pos, n = 0;

	for (;;) {
		if (p >= len)
			return 0;
		uint8_t b = pkt[p];
		if (b > NAME_MAX_LABEL)         /* pointers and 0x40/0x80 types included */
			return 0;
		if (b == 0)
			return n + 1;
		if (n + 1u + b + 1u > NAME_MAX_WIRE || len - p - 1 < b)
			return 0;
		n += 1u + b;
		p += 1u + b;
	}
}

_Static_assert(sizeof(struct name) >= 1 + (NAME_MAX_WIRE + 7) / 8 * 8, "whole words fit in a name");
_Static_assert(sizeof(((struct dns_query *)0)->qname_orig) >= (NAME_MAX_WIRE + 7) / 8 * 8, "and in qname_orig");

/* The question name at *pos into q: as received, and canonical, lowercased a word at a time. */
static bool question_name(const uint8_t *pkt, size_t len, size_t *pos, struct dns_query *q)
{
	size_t n = question_name_len(pkt, len, *pos);
	if (!n)
		return false;
	memcpy(q->qname_orig, pkt + *pos, n);
	for (size_t w = 0; w < n; w += 8) {
		uint64_t x;
		memcpy(&x, q->qname_orig + w, 8);
		x = name_lower_word(x);
		memcpy(q->qname.wire + w, &x, 8);
	}
	q->qname.len = (uint8_t)n;
	*pos += n;
	return true;
}

/*
 * The additional section of a query may hold one OPT RR and nothing else.
 * Returns DNS_PARSE_OK or DNS_RCODE_FORMERR; *pos moves past the record.
 */
static int parse_opt(const uint8_t *pkt, size_t len, size_t *pos, struct dns_query *q)
{
	size_t p = *pos;

	/* owner: the root, written as a single zero byte (RFC 6891 6.1.2) */
	if (len - p < DNS_OPT_RR_LEN || pkt[p] != 0)
		return DNS_RCODE_FORMERR;
	if (wire_load16(pkt + p + 1) != DNS_TYPE_OPT)
		return DNS_RCODE_FORMERR;
	if (q->has_edns)                        /* a second OPT (RFC 6891 6.1.1) */
		return DNS_RCODE_FORMERR;

	uint16_t udp = wire_load16(pkt + p + 3);
	/* TTL: extended rcode (ignored in queries), version, flags */
	uint8_t version = pkt[p + 6];
	uint16_t flags = wire_load16(pkt + p + 7);
	uint16_t rdlen = wire_load16(pkt + p + 9);
	p += DNS_OPT_RR_LEN;
	if (len - p < rdlen)
		return DNS_RCODE_FORMERR;

	/* options: code, length, data; every one must lie inside the RDATA */
	size_t o = p, end = p + rdlen;
	while (o < end) {
		if (end - o < 4)
			return DNS_RCODE_FORMERR;
		uint16_t olen = wire_load16(pkt + o + 2);
		o += 4;
		if (end - o < olen)
			return DNS_RCODE_FORMERR;
		o += olen;
	}

	q->has_edns = true;
	q->edns_version = version;
	q->edns_do = (flags & EDNS_DO) != 0;
	q->edns_udp_raw = udp;
	q->edns_opts_off = (uint16_t)p;
	q->edns_opts_len = rdlen;
	q->udp_size = udp < DNS_UDP_MIN ? DNS_UDP_MIN : udp > DNS_EDNS_MAX ? DNS_EDNS_MAX : udp;
	*pos = end;
	return DNS_PARSE_OK;
}

int dns_query_parse(const uint8_t *pkt, size_t len, struct dns_query *q)
{
	q->id = 0;
	q->opcode = 0;
	q->rd = false;
	q->cd = false;
	q->has_question = false;
	q->has_edns = false;
	q->edns_do = false;
	q->edns_version = 0;
	q->edns_udp_raw = 0;
	q->edns_opts_off = 0;
	q->edns_opts_len = 0;
	q->udp_size = DNS_UDP_MIN;
	q->qtype = 0;
	q->qclass = 0;
	q->qname.len = 0;

	if (len < DNS_HEADER_LEN)
		return DNS_PARSE_DROP;
	if (len > DNS_TCP_MAX)                  /* offsets below fit in 16 bits */
		return DNS_PARSE_DROP;

	q->id = wire_load16(pkt);
	q->opcode = (pkt[2] & F1_OPCODE_MASK) >> F1_OPCODE_SHIFT;
	q->rd = (pkt[2] & F1_RD) != 0;
	q->cd = (pkt[3] & F2_CD) != 0;
	if (pkt[2] & F1_QR)                     /* a response: answering could loop */
		return DNS_PARSE_DROP;
	if (q->opcode != DNS_OPCODE_QUERY)
		return DNS_RCODE_NOTIMP;

	uint16_t qdcount = wire_load16(pkt + 4), ancount = wire_load16(pkt + 6);
	uint16_t nscount = wire_load16(pkt + 8), arcount = wire_load16(pkt + 10);
	if (qdcount != 1 || ancount != 0 || nscount != 0)
		return DNS_RCODE_FORMERR;

	size_t pos = DNS_HEADER_LEN;
	if (!question_name(pkt, len, &pos, q))
		return DNS_RCODE_FORMERR;
	if (len - pos < 4)
		return DNS_RCODE_FORMERR;
	q->qtype = wire_load16(pkt + pos);
	q->qclass = wire_load16(pkt + pos + 2);
	pos += 4;
	if (q->qtype == DNS_TYPE_OPT)           /* a pseudo-type, never asked for */
		return DNS_RCODE_FORMERR;

	for (unsigned i = 0; i < arcount; i++) {
		int rc = parse_opt(pkt, len, &pos, q);
		if (rc != DNS_PARSE_OK)
			return rc;
	}
	if (pos != len)                         /* trailing bytes */
		return DNS_RCODE_FORMERR;

	q->has_question = true;
	if (q->has_edns && q->edns_version > 0)
		return DNS_RCODE_BADVERS;
	return DNS_PARSE_OK;
}

void dns_response_init(struct dns_builder *b, const struct dns_query *q, unsigned rcode,
		       uint8_t *buf, size_t limit)
{
	/* an extended rcode can only travel in an OPT RR */
	if (rcode > F2_RCODE_MASK && !q->has_edns)
		rcode = DNS_RCODE_SERVFAIL;
	b->buf = buf;
	b->limit = limit > DNS_TCP_MAX ? DNS_TCP_MAX : limit;
	b->q = q;
	b->rcode = (uint16_t)rcode;
	b->ancount = b->nscount = b->arcount = 0;
	b->owner_off = DNS_HEADER_LEN;
	b->upstream_flags = 0;
	b->nopts = 0;
	b->truncated = false;
	b->failed = false;
	b->with_question = q->has_question &&
			   rcode != DNS_RCODE_FORMERR && rcode != DNS_RCODE_NOTIMP;
	/* RFC 6891 6.1.1: a query with a (valid) OPT RR gets one back, errors included */
	b->reserve = q->has_edns ? DNS_OPT_RR_LEN : 0;

	size_t need = DNS_HEADER_LEN + (b->with_question ? q->qname.len + 4u : 0) + b->reserve;
	if (need > b->limit) {
		b->failed = true;
		b->len = b->question_end = 0;
		return;
	}
	memset(buf, 0, DNS_HEADER_LEN);
	wire_store16(buf, q->id);
	size_t p = DNS_HEADER_LEN;
	if (b->with_question) {
		memcpy(buf + p, q->qname_orig, q->qname.len);
		p += q->qname.len;
		wire_store16(buf + p, q->qtype);
		wire_store16(buf + p + 2, q->qclass);
		p += 4;
	}
	b->len = b->question_end = p;
}

/* RFC 2181 9: a partial RRset is worse than none; the client retries over TCP */
static void truncate(struct dns_builder *b)
{
	b->truncated = true;
	b->len = b->question_end;
	b->ancount = b->nscount = b->arcount = 0;
	b->owner_off = DNS_HEADER_LEN;
}

void dns_response_truncate(struct dns_builder *b)
{
	if (!b->failed && b->with_question)
		truncate(b);
}

bool dns_response_add_option(struct dns_builder *b, uint16_t code, const uint8_t *data, uint16_t len)
{
	if (b->failed || !b->q->has_edns || b->len != b->question_end || b->nopts == DNS_MAX_OPTIONS)
		return false;
	if (4u + len > b->limit - b->reserve - b->len)
		return false;
	b->opts[b->nopts].code = code;
	b->opts[b->nopts].len = len;
	b->opts[b->nopts].data = data;
	b->nopts++;
	b->reserve += 4u + len;
	return true;
}

/*
 * Appends one answer record owned by the current owner name (the question,
 * or the last CNAME's target); returns the offset of its RDATA, or 0 (the
 * response is then truncated) when it does not fit.
 */
static size_t add_answer(struct dns_builder *b, uint16_t type, const uint8_t *rdata, uint16_t rdlen,
			 uint32_t ttl)
{
	size_t rr_len = 2u + 10u + rdlen;
	if (rr_len > b->limit - b->reserve - b->len || b->ancount == UINT16_MAX) {
		truncate(b);
		return 0;
	}
	uint8_t *p = b->buf + b->len;
	wire_store16(p, 0xC000 | b->owner_off);
	wire_store16(p + 2, type);
	wire_store16(p + 4, DNS_CLASS_IN);
	wire_store32(p + 6, ttl);
	wire_store16(p + 10, rdlen);
	memcpy(p + 12, rdata, rdlen);
	b->len += rr_len;
	b->ancount++;
	return b->len - rdlen;
}

bool dns_response_add_rr(struct dns_builder *b, uint16_t type, const uint8_t *rdata, uint16_t rdlen,
			 uint32_t ttl)
{
	if (b->failed || b->truncated || !b->with_question || b->nscount || b->arcount)
		return false;
	return add_answer(b, type, rdata, rdlen, ttl) != 0;
}

bool dns_response_add_authority(struct dns_builder *b, const struct name *owner, uint16_t type,
				const uint8_t *rdata, uint16_t rdlen, uint32_t ttl)
{
	if (b->failed || b->truncated || !b->with_question || b->arcount)
		return false;
	size_t rr_len = owner->len + 10u + rdlen;
	if (rr_len > b->limit - b->reserve - b->len || b->nscount == UINT16_MAX) {
		truncate(b);
		return false;
	}
	uint8_t *p = b->buf + b->len;
	memcpy(p, owner->wire, owner->len);
	p += owner->len;
	wire_store16(p, type);
	wire_store16(p + 2, DNS_CLASS_IN);
	wire_store32(p + 4, ttl);
	wire_store16(p + 8, rdlen);
	memcpy(p + 10, rdata, rdlen);
	b->len += rr_len;
	b->nscount++;
	return true;
}

size_t dns_response_replay(struct dns_builder *b, const uint8_t *body, size_t body_len,
			   size_t an_ns_len, uint16_t an, uint16_t ns, uint16_t ar, uint16_t rcode,
			   bool ad, size_t *copied)
{
	*copied = 0;
	if (b->failed)
		return 0;
	b->rcode = rcode > F2_RCODE_MASK && !b->q->has_edns ? DNS_RCODE_SERVFAIL : rcode;
	b->upstream_flags = ad && b->q->edns_do ? F2_AD : 0;
	if (b->truncated || !b->with_question || b->ancount || b->nscount || b->arcount)
		return 0;
	size_t room = b->limit - b->reserve - b->len;
	if (an_ns_len > room) {
		truncate(b);
		return 0;
	}
	size_t n = body_len <= room ? body_len : an_ns_len;
	size_t at = b->len;
	memcpy(b->buf + at, body, n);
	b->len += n;
	b->ancount = an;
	b->nscount = ns;
	b->arcount = n == body_len ? ar : 0;
	*copied = n;
	return at;
}

bool dns_response_add_cname(struct dns_builder *b, const struct name *target, uint32_t ttl)
{
	if (b->failed || b->truncated || !b->with_question)
		return false;
	if (b->len + 12u > 0x3fff) {            /* the target must be reachable by a pointer */
		truncate(b);
		return false;
	}
	size_t at = add_answer(b, DNS_TYPE_CNAME, target->wire, target->len, ttl);
	if (!at)
		return false;
	b->owner_off = (uint16_t)at;
	return true;
}

bool dns_response_add_addr(struct dns_builder *b, int family, const uint8_t *addr, uint32_t ttl)
{
	if (b->failed || b->truncated || !b->with_question)
		return false;
	if (family == AF_INET)
		return add_answer(b, DNS_TYPE_A, addr, 4, ttl) != 0;
	if (family == AF_INET6)
		return add_answer(b, DNS_TYPE_AAAA, addr, 16, ttl) != 0;
	return false;
}

size_t dns_response_finish(struct dns_builder *b, uint16_t our_udp_size)
{
	if (b->failed)
		return 0;
	const struct dns_query *q = b->q;
	uint8_t *h = b->buf;

	h[2] = (uint8_t)(F1_QR | ((q->opcode << F1_OPCODE_SHIFT) & F1_OPCODE_MASK) |
			 (b->truncated ? F1_TC : 0) | (q->rd ? F1_RD : 0));
	/* NOTIMP (an opcode we do not know) promises nothing: no RA, no CD */
	bool notimp = b->rcode == DNS_RCODE_NOTIMP;
	h[3] = (uint8_t)((notimp ? 0 : F2_RA) | (q->cd && !notimp ? F2_CD : 0) |
			 (b->upstream_flags & F2_AD) | (b->rcode & F2_RCODE_MASK));
	wire_store16(h + 4, b->with_question ? 1 : 0);
	wire_store16(h + 6, b->ancount);
	wire_store16(h + 8, b->nscount);
	wire_store16(h + 10, (uint16_t)(b->arcount + (b->reserve ? 1 : 0)));

	if (b->reserve) {
		uint8_t *p = b->buf + b->len;
		p[0] = 0;                               /* root owner */
		wire_store16(p + 1, DNS_TYPE_OPT);
		wire_store16(p + 3, our_udp_size < DNS_UDP_MIN ? DNS_UDP_MIN : our_udp_size);
		p[5] = (uint8_t)(b->rcode >> 4);        /* extended rcode: BADVERS */
		p[6] = 0;                               /* the version we speak */
		wire_store16(p + 7, q->edns_do ? EDNS_DO : 0);  /* RFC 3225 3: DO is copied */
		size_t rdlen = b->reserve - DNS_OPT_RR_LEN;
		wire_store16(p + 9, (uint16_t)rdlen);
		b->len += DNS_OPT_RR_LEN;
		for (unsigned i = 0; i < b->nopts; i++) {
			wire_store16(b->buf + b->len, b->opts[i].code);
			wire_store16(b->buf + b->len + 2, b->opts[i].len);
			if (b->opts[i].len)
				memcpy(b->buf + b->len + 4, b->opts[i].data, b->opts[i].len);
			b->len += 4u + b->opts[i].len;
		}
	}
	return b->len;
}

size_t dns_query_write(const struct dns_query_spec *s, uint8_t *buf, size_t cap)
{
	size_t opts = (s->opt_code ? 4u + s->opt_len : 0) + (s->cookie_len ? 4u + s->cookie_len : 0);
	size_t need = DNS_HEADER_LEN + s->qname_len + 4u + (s->edns ? DNS_OPT_RR_LEN + opts : 0);
	if (need > cap)
		return 0;
	memset(buf, 0, DNS_HEADER_LEN);
	wire_store16(buf, s->id);
	buf[2] = s->rd ? F1_RD : 0;
	buf[3] = s->cd ? F2_CD : 0;
	wire_store16(buf + 4, 1);
	wire_store16(buf + 10, s->edns ? 1 : 0);
	size_t p = DNS_HEADER_LEN;
	memcpy(buf + p, s->qname, s->qname_len);
	p += s->qname_len;
	wire_store16(buf + p, s->qtype);
	wire_store16(buf + p + 2, s->qclass);
	p += 4;
	if (s->edns) {
		buf[p] = 0;
		wire_store16(buf + p + 1, DNS_TYPE_OPT);
		wire_store16(buf + p + 3, s->udp_size);
		buf[p + 5] = 0;
		buf[p + 6] = 0;
		wire_store16(buf + p + 7, s->edns_do ? EDNS_DO : 0);
		wire_store16(buf + p + 9, (uint16_t)opts);
		p += DNS_OPT_RR_LEN;
		if (s->opt_code) {
			wire_store16(buf + p, s->opt_code);
			wire_store16(buf + p + 2, s->opt_len);
			if (s->opt_len)
				memcpy(buf + p + 4, s->opt_data, s->opt_len);
			p += 4u + s->opt_len;
		}
		if (s->cookie_len) {
			wire_store16(buf + p, DNS_OPT_COOKIE);
			wire_store16(buf + p + 2, s->cookie_len);
			memcpy(buf + p + 4, s->cookie, s->cookie_len);
			p += 4u + s->cookie_len;
		}
	}
	return p;
}

/* Steps over a name without decoding it (a pointer ends it). */
static bool skip_name(const uint8_t *pkt, size_t len, size_t *pos)
{
	size_t p = *pos;
	for (unsigned n = 0; n < 128; n++) {
		if (p >= len)
			return false;
		uint8_t b = pkt[p];
		if ((b & 0xC0) == 0xC0) {
			if (len - p < 2)
				return false;
			*pos = p + 2;
			return true;
		}
		if (b > NAME_MAX_LABEL)
			return false;
		if (b == 0) {
			*pos = p + 1;
			return true;
		}
		p += 1u + b;
	}
	return false;
}

int dns_upstream_answer_parse(const uint8_t *pkt, size_t len, uint16_t id, const struct name *qname,
			      uint16_t qtype, uint16_t qclass, struct dns_upstream_answer *a,
			      const char **err)
{
	if (len < DNS_HEADER_LEN || len > DNS_TCP_MAX) {
		*err = "message length out of range";
		return -1;
	}
	if (wire_load16(pkt) != id) {
		*err = "unexpected id";
		return -1;
	}
	if (!(pkt[2] & F1_QR) || ((pkt[2] & F1_OPCODE_MASK) >> F1_OPCODE_SHIFT) != DNS_OPCODE_QUERY) {
		*err = "not a response to a query";
		return -1;
	}
	uint16_t qdcount = wire_load16(pkt + 4);
	a->tc = (pkt[2] & F1_TC) != 0;
	a->ad = (pkt[3] & F2_AD) != 0;
	a->rcode = pkt[3] & F2_RCODE_MASK;
	a->ancount = wire_load16(pkt + 6);
	a->nscount = wire_load16(pkt + 8);
	a->arcount = wire_load16(pkt + 10);
	a->has_opt = false;
	a->has_question = qdcount == 1;
	a->opts_off = a->opts_len = 0;

	/* a refusal or failure may leave the question out (Unbound's REFUSED
	 * does): the id and source say it is ours, and it is never relayed */
	bool bare = qdcount == 0 && a->ancount == 0 && a->nscount == 0 &&
		    (a->rcode == DNS_RCODE_SERVFAIL || a->rcode == DNS_RCODE_REFUSED);
	if (qdcount != 1 && !bare) {
		*err = "not exactly one question";
		return -1;
	}
	size_t pos = DNS_HEADER_LEN;
	if (qdcount == 1) {
		struct name n;
		if (name_from_packet(&n, pkt, len, &pos) != NAME_OK || len - pos < 4) {
			*err = "bad question";
			return -1;
		}
		if (!name_equal(&n, qname) || wire_load16(pkt + pos) != qtype || wire_load16(pkt + pos + 2) != qclass) {
			*err = "answers another question";
			return -1;
		}
		pos += 4;
	}
	a->records_off = (uint16_t)pos;

	unsigned total = (unsigned)a->ancount + a->nscount + a->arcount;
	for (unsigned i = 0; i < total; i++) {
		size_t owner = pos;
		if (!skip_name(pkt, len, &pos) || len - pos < 10) {
			*err = "record runs past the message";
			return -1;
		}
		uint16_t type = wire_load16(pkt + pos), rdlen = wire_load16(pkt + pos + 8);
		if (len - pos - 10 < rdlen) {
			*err = "record data runs past the message";
			return -1;
		}
		/* relay drops it from the additional section; anywhere else it would pass on misplaced */
		if (type == DNS_TYPE_TSIG && (i != total - 1 || a->arcount == 0)) {
			*err = "TSIG record not the last additional one (RFC 8945 5.1)";
			return -1;
		}
		if (type == DNS_TYPE_OPT) {
			if (i < (unsigned)a->ancount + a->nscount || a->has_opt || pkt[owner] != 0) {
				*err = "misplaced OPT record";
				return -1;
			}
			a->has_opt = true;
			a->rcode |= (uint16_t)(pkt[pos + 4] << 4);
			a->opts_off = (uint16_t)(pos + 10);
			a->opts_len = rdlen;
		}
		pos += 10u + rdlen;
	}
	return 0;
}

/* Where names sit in the RDATA of the types RFC 1035 and friends let compress. */
enum rdata_layout { RD_RAW, RD_NAME, RD_PREF_NAME, RD_TWO_NAMES, RD_SOA, RD_SRV };

static enum rdata_layout rdata_layout(uint16_t type)
{
	switch (type) {
	case 2: case 3: case 4: case 5: case 7: case 8: case 9: case 12: case 39:
		return RD_NAME;                 /* NS MD MF CNAME MB MG MR PTR DNAME */
	case 15: case 18: case 21: case 36:
		return RD_PREF_NAME;            /* MX AFSDB RT KX */
	case 14: case 17:
		return RD_TWO_NAMES;            /* MINFO RP */
	case 6:
		return RD_SOA;
	case 33:
		return RD_SRV;
	default:
		return RD_RAW;
	}
}

/*
 * Decompresses the name at *pos into out (NAME_MAX_WIRE bytes) keeping
 * the sender's case (RFC 4343), with name_from_packet's rules: pointers
 * strictly backwards and past the header, labels of at most 63 bytes,
 * names of at most 255.  *pos moves past the name's bytes where it is.
 */
static bool name_copy_raw(const uint8_t *pkt, size_t len, size_t *pos, uint8_t *out, size_t *out_len)
{
	size_t p = *pos, n = 0, limit = *pos;
	bool jumped = false;
	for (;;) {
		if (p >= len)
			return false;
		uint8_t b = pkt[p];
		if ((b & 0xC0) == 0xC0) {
			if (len - p < 2)
				return false;
			size_t target = (size_t)(b & 0x3F) << 8 | pkt[p + 1];
			if (target >= limit || target < DNS_HEADER_LEN)
				return false;
			if (!jumped)
				*pos = p + 2;
			jumped = true;
			limit = target;
			p = target;
			continue;
		}
		if (b > NAME_MAX_LABEL || n + 1u + b > NAME_MAX_WIRE || len - p - 1 < b)
			return false;
		memcpy(out + n, pkt + p, 1u + b);
		n += 1u + b;
		p += 1u + b;
		if (b == 0) {
			if (!jumped)
				*pos = p;
			*out_len = n;
			return true;
		}
	}
}

/* Copies one name from pkt at *pos into out, uncompressed: 1, 0 if it does not fit, -1 if bad. */
static int put_name(uint8_t *out, size_t room, size_t *o, const uint8_t *pkt, size_t len,
		    size_t *pos, size_t end)
{
	uint8_t raw[NAME_MAX_WIRE];
	size_t n;
	if (!name_copy_raw(pkt, len, pos, raw, &n) || *pos > end)
		return -1;
	if (room - *o < n)
		return 0;
	memcpy(out + *o, raw, n);
	*o += n;
	return 1;
}

/*
 * Copies one record; returns 1 when copied, 0 when it does not fit,
 * -1 when it cannot be decoded.
 */
static int relay_record(struct dns_builder *b, const uint8_t *pkt, size_t len, size_t *pos,
			const struct name *qname)
{
	size_t room = b->limit - b->reserve;
	size_t o = b->len;
	uint8_t raw[NAME_MAX_WIRE];
	size_t raw_len;
	struct name owner;
	if (!name_copy_raw(pkt, len, pos, raw, &raw_len) || len - *pos < 10 ||
	    name_from_wire(&owner, raw, raw_len) != NAME_OK)
		return -1;
	if (name_equal(&owner, qname)) {
		if (room - o < 2)
			return 0;
		wire_store16(b->buf + o, 0xC000 | b->owner_off);
		o += 2;
	} else {
		if (room - o < raw_len)
			return 0;
		memcpy(b->buf + o, raw, raw_len);
		o += raw_len;
	}
	const uint8_t *fixed = pkt + *pos;
	uint16_t type = wire_load16(fixed), rdlen = wire_load16(fixed + 8);
	*pos += 10;
	size_t end = *pos + rdlen;
	if (room - o < 10)
		return 0;
	memcpy(b->buf + o, fixed, 8);
	size_t rdlen_at = o + 8;
	o += 10;
	size_t rd_start = o, p = *pos;
	int ok = 1;
	enum rdata_layout layout = rdata_layout(type);

	if (layout == RD_PREF_NAME || layout == RD_SRV) {
		size_t fixed_len = layout == RD_SRV ? 6 : 2;
		if (end - p < fixed_len)
			return -1;
		if (room - o < fixed_len)
			return 0;
		memcpy(b->buf + o, pkt + p, fixed_len);
		o += fixed_len;
		p += fixed_len;
	}
	switch (layout) {
	case RD_RAW:
		if (room - o < rdlen)
			return 0;
		memcpy(b->buf + o, pkt + p, rdlen);
		o += rdlen;
		p = end;
		break;
	case RD_NAME:
	case RD_PREF_NAME:
	case RD_SRV:
		ok = put_name(b->buf, room, &o, pkt, len, &p, end);
		break;
	case RD_TWO_NAMES:
	case RD_SOA:
		ok = put_name(b->buf, room, &o, pkt, len, &p, end);
		if (ok == 1)
			ok = put_name(b->buf, room, &o, pkt, len, &p, end);
		if (ok == 1 && layout == RD_SOA) {
			if (end - p < 20)
				return -1;
			if (room - o < 20)
				return 0;
			memcpy(b->buf + o, pkt + p, 20);
			o += 20;
			p += 20;
		}
		break;
	}
	if (ok != 1)
		return ok;
	if (p != end || o - rd_start > UINT16_MAX)
		return -1;
	wire_store16(b->buf + rdlen_at, (uint16_t)(o - rd_start));
	*pos = end;
	b->len = o;
	return 1;
}

bool dns_response_relay(struct dns_builder *b, const uint8_t *pkt, size_t len,
			const struct dns_upstream_answer *a, const struct name *qname)
{
	if (b->failed)
		return true;
	b->rcode = a->rcode;
	if (a->rcode > F2_RCODE_MASK && !b->q->has_edns)
		b->rcode = DNS_RCODE_SERVFAIL;
	/* RFC 6840 5.8: AD only for a client that signalled it understands it */
	b->upstream_flags = a->ad && b->q->edns_do ? F2_AD : 0;
	if (b->truncated || !b->with_question)
		return true;
	if (a->tc || !a->has_question) {
		truncate(b);
		return true;
	}
	size_t pos = a->records_off;
	unsigned total = (unsigned)a->ancount + a->nscount + a->arcount;
	for (unsigned i = 0; i < total; i++) {
		if (a->has_opt && pos == a->opts_off - 10u - 1u) {
			pos = a->opts_off + a->opts_len;        /* upstream's OPT: ours replaces it */
			continue;
		}
		if (i >= (unsigned)a->ancount + a->nscount) {
			/* a transaction signature is upstream's to us: it cannot verify
			 * for the client, and it must be the last record (RFC 8945) */
			size_t q = pos;
			if (!skip_name(pkt, len, &q))
				return false;
			uint16_t type = wire_load16(pkt + q);          /* in bounds: checked by the parse */
			if (type == DNS_TYPE_TSIG || type == DNS_TYPE_SIG) {
				pos = q + 10u + wire_load16(pkt + q + 8);
				continue;
			}
		}
		int rc = relay_record(b, pkt, len, &pos, qname);
		if (rc < 0)
			return false;
		if (rc == 0) {
			/* RFC 2181 9: leaving out additional data does not need TC */
			if (i < (unsigned)a->ancount + a->nscount)
				truncate(b);
			return true;
		}
		if (i < a->ancount)
			b->ancount++;
		else if (i < (unsigned)a->ancount + a->nscount)
			b->nscount++;
		else
			b->arcount++;
	}
	return true;
}
