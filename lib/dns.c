/*
 * DNS queries in, responses out.  See dns.h for the policy.
 */
#include <string.h>
#include <sys/socket.h>

#include "dns.h"

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

static inline uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

static inline void wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void wr32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/*
 * Walks the question name at *pos, copying its bytes as received.  The
 * question is the first name in a message, so a compression pointer there
 * could only point into the header: no encoder writes one, and it is
 * refused (as are label types other than 00, labels over 63 bytes, names
 * over 255 bytes and names running past the packet).
 */
static bool question_name_copy(const uint8_t *pkt, size_t len, size_t *pos, uint8_t *out, size_t *out_len)
{
	size_t p = *pos, n = 0;

	for (;;) {
		if (p >= len)
			return false;
		uint8_t b = pkt[p];
		if (b > NAME_MAX_LABEL)         /* pointers and 0x40/0x80 types included */
			return false;
		if (n + 1u + b > NAME_MAX_WIRE)
			return false;
		if (b == 0) {
			out[n++] = 0;
			*out_len = n;
			*pos = p + 1;
			return true;
		}
		if (len - p - 1 < b)
			return false;
		memcpy(out + n, pkt + p, 1u + b);
		n += 1u + b;
		p += 1u + b;
	}
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
	if (rd16(pkt + p + 1) != DNS_TYPE_OPT)
		return DNS_RCODE_FORMERR;
	if (q->has_edns)                        /* a second OPT (RFC 6891 6.1.1) */
		return DNS_RCODE_FORMERR;

	uint16_t udp = rd16(pkt + p + 3);
	/* TTL: extended rcode (ignored in queries), version, flags */
	uint8_t version = pkt[p + 6];
	uint16_t flags = rd16(pkt + p + 7);
	uint16_t rdlen = rd16(pkt + p + 9);
	p += DNS_OPT_RR_LEN;
	if (len - p < rdlen)
		return DNS_RCODE_FORMERR;

	/* options: code, length, data; every one must lie inside the RDATA */
	size_t o = p, end = p + rdlen;
	while (o < end) {
		if (end - o < 4)
			return DNS_RCODE_FORMERR;
		uint16_t olen = rd16(pkt + o + 2);
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

	q->id = rd16(pkt);
	q->opcode = (pkt[2] & F1_OPCODE_MASK) >> F1_OPCODE_SHIFT;
	q->rd = (pkt[2] & F1_RD) != 0;
	q->cd = (pkt[3] & F2_CD) != 0;
	if (pkt[2] & F1_QR)                     /* a response: answering could loop */
		return DNS_PARSE_DROP;
	if (q->opcode != DNS_OPCODE_QUERY)
		return DNS_RCODE_NOTIMP;

	uint16_t qdcount = rd16(pkt + 4), ancount = rd16(pkt + 6);
	uint16_t nscount = rd16(pkt + 8), arcount = rd16(pkt + 10);
	if (qdcount != 1 || ancount != 0 || nscount != 0)
		return DNS_RCODE_FORMERR;

	size_t pos = DNS_HEADER_LEN, orig_len = 0;
	if (!question_name_copy(pkt, len, &pos, q->qname_orig, &orig_len))
		return DNS_RCODE_FORMERR;
	size_t npos = DNS_HEADER_LEN;
	if (name_from_packet(&q->qname, pkt, len, &npos) != NAME_OK ||
	    npos != pos || q->qname.len != orig_len)
		return DNS_RCODE_FORMERR;
	if (len - pos < 4)
		return DNS_RCODE_FORMERR;
	q->qtype = rd16(pkt + pos);
	q->qclass = rd16(pkt + pos + 2);
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
	b->ancount = 0;
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
	wr16(buf, q->id);
	size_t p = DNS_HEADER_LEN;
	if (b->with_question) {
		memcpy(buf + p, q->qname_orig, q->qname.len);
		p += q->qname.len;
		wr16(buf + p, q->qtype);
		wr16(buf + p + 2, q->qclass);
		p += 4;
	}
	b->len = b->question_end = p;
}

bool dns_response_add_addr(struct dns_builder *b, int family, const uint8_t *addr, uint32_t ttl)
{
	if (b->failed || b->truncated || !b->with_question)
		return false;
	uint16_t type, rdlen;
	if (family == AF_INET) {
		type = DNS_TYPE_A;
		rdlen = 4;
	} else if (family == AF_INET6) {
		type = DNS_TYPE_AAAA;
		rdlen = 16;
	} else {
		return false;
	}
	size_t rr_len = 2u + 10u + rdlen;
	if (rr_len > b->limit - b->reserve - b->len || b->ancount == UINT16_MAX) {
		/* RFC 2181 9: a partial RRset is worse than none; the client retries over TCP */
		b->truncated = true;
		b->len = b->question_end;
		b->ancount = 0;
		return false;
	}
	uint8_t *p = b->buf + b->len;
	wr16(p, 0xC000 | DNS_HEADER_LEN);       /* the owner: the question name */
	wr16(p + 2, type);
	wr16(p + 4, DNS_CLASS_IN);
	wr32(p + 6, ttl);
	wr16(p + 10, rdlen);
	memcpy(p + 12, addr, rdlen);
	b->len += rr_len;
	b->ancount++;
	return true;
}

size_t dns_response_finish(struct dns_builder *b, uint16_t our_udp_size)
{
	if (b->failed)
		return 0;
	const struct dns_query *q = b->q;
	uint8_t *h = b->buf;

	h[2] = (uint8_t)(F1_QR | ((q->opcode << F1_OPCODE_SHIFT) & F1_OPCODE_MASK) |
			 (b->truncated ? F1_TC : 0) | (q->rd ? F1_RD : 0));
	h[3] = (uint8_t)(F2_RA | (q->cd ? F2_CD : 0) | (b->rcode & F2_RCODE_MASK));
	wr16(h + 4, b->with_question ? 1 : 0);
	wr16(h + 6, b->ancount);
	wr16(h + 8, 0);
	wr16(h + 10, b->reserve ? 1 : 0);

	if (b->reserve) {
		uint8_t *p = b->buf + b->len;
		p[0] = 0;                               /* root owner */
		wr16(p + 1, DNS_TYPE_OPT);
		wr16(p + 3, our_udp_size < DNS_UDP_MIN ? DNS_UDP_MIN : our_udp_size);
		p[5] = (uint8_t)(b->rcode >> 4);        /* extended rcode: BADVERS */
		p[6] = 0;                               /* the version we speak */
		wr16(p + 7, q->edns_do ? EDNS_DO : 0);  /* RFC 3225 3: DO is copied */
		wr16(p + 9, 0);
		b->len += DNS_OPT_RR_LEN;
	}
	return b->len;
}
