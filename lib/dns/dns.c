/*
 * DNS queries in, responses out.  See dns.h for the policy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "dns.h"
#include "dnsrr.h"
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

_Static_assert(sizeof(struct name) >= 1 + (NAME_MAX_WIRE + 7) / 8 * 8, "whole words fit in a name");
_Static_assert(sizeof(((struct dns_query *)0)->qname_orig) >= (NAME_MAX_WIRE + 7) / 8 * 8, "and in qname_orig");

/*
 * The question name at r into q: as received, and canonical, lowercased a
 * word at a time.  The question is the first name in a message, so a
 * compression pointer there could only point into the header: no encoder
 * writes one, and it is refused (as are label types other than 00, labels
 * over 63 bytes, names over 255 bytes and names running past the packet).
 */
static bool question_name(struct wire_reader *r, struct dns_query *q)
{
	/* every query comes here: one look at what is left (at most a whole
	 * name), then the labels stepped over unchecked inside it */
	const uint8_t *start = wire_peek(r, 0);
	size_t span = start ? wire_left(r) : 0, n = 0;
	if (span > NAME_MAX_WIRE)
		span = NAME_MAX_WIRE;
	for (;;) {
		if (n >= span)
			return false;
		uint8_t b = start[n];
		if (b > NAME_MAX_LABEL)                 /* pointers and 0x40/0x80 types included */
			return false;
		n += 1u + b;
		if (b == 0)
			break;
	}
	wire_take(r, n);
	wire_copy_short(q->qname_orig, start, n);
	for (size_t w = 0; w < n; w += 8) {
		uint64_t x;
		memcpy(&x, q->qname_orig + w, 8);
		x = name_lower_word(x);
		memcpy(q->qname.wire + w, &x, 8);
	}
	q->qname.len = (uint8_t)n;
	return true;
}

/*
 * The additional section of a query may hold one OPT RR and nothing else.
 * Returns DNS_PARSE_OK or DNS_RCODE_FORMERR; r moves past the record.
 */
static int parse_opt(struct wire_reader *r, const uint8_t *pkt, struct dns_query *q)
{
	/* the fixed part in one check, read unchecked (every query with EDNS comes here) */
	const uint8_t *f = wire_take(r, DNS_OPT_RR_LEN);
	/* owner: the root, written as a single zero byte (RFC 6891 6.1.2) */
	if (!f || f[0] != 0 || wire_load16(f + 1) != DNS_TYPE_OPT)
		return DNS_RCODE_FORMERR;
	if (q->has_edns)                        /* a second OPT (RFC 6891 6.1.1) */
		return DNS_RCODE_FORMERR;

	uint16_t udp = wire_load16(f + 3);
	/* TTL: extended rcode (ignored in queries), version, flags */
	uint8_t version = f[6];
	uint16_t flags = wire_load16(f + 7);
	uint16_t rdlen = wire_load16(f + 9);
	const uint8_t *rdata = wire_take(r, rdlen);
	if (!rdata)
		return DNS_RCODE_FORMERR;

	/* options: code, length, data; every one must lie inside the RDATA */
	struct wire_reader o = wire_reader(rdata, rdlen);
	while (wire_left(&o) && !o.bad) {
		wire_u16(&o);
		wire_take(&o, wire_u16(&o));
	}
	if (o.bad)
		return DNS_RCODE_FORMERR;

	q->has_edns = true;
	q->edns_version = version;
	q->edns_do = (flags & EDNS_DO) != 0;
	q->edns_udp_raw = udp;
	q->edns_opts_off = (uint16_t)(rdata - pkt);
	q->edns_opts_len = rdlen;
	q->udp_size = udp < DNS_UDP_MIN ? DNS_UDP_MIN : udp > DNS_EDNS_MAX ? DNS_EDNS_MAX : udp;
	return DNS_PARSE_OK;
}

int dns_query_parse(const uint8_t *pkt, size_t len, struct dns_query *q)
{
	q->id = 0;
	q->opcode = 0;
	q->rd = false;
	q->cd = false;
	q->ad = false;
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

	struct wire_reader r = wire_reader(pkt, len);
	/* the header in one check, read unchecked: dns_header_read's work, kept inline on the query path */
	const uint8_t *h = wire_take(&r, DNS_HEADER_LEN);
	if (!h || len > DNS_TCP_MAX)            /* offsets below fit in 16 bits */
		return DNS_PARSE_DROP;

	q->id = wire_load16(h);
	q->opcode = (h[2] & F1_OPCODE_MASK) >> F1_OPCODE_SHIFT;
	q->rd = (h[2] & F1_RD) != 0;
	q->cd = (h[3] & F2_CD) != 0;
	q->ad = (h[3] & F2_AD) != 0;
	if (h[2] & F1_QR)                       /* a response: answering could loop */
		return DNS_PARSE_DROP;
	if (q->opcode != DNS_OPCODE_QUERY)
		return DNS_RCODE_NOTIMP;
	uint16_t arcount = wire_load16(h + 10);
	if (wire_load16(h + 4) != 1 || wire_load16(h + 6) != 0 || wire_load16(h + 8) != 0)
		return DNS_RCODE_FORMERR;

	if (!question_name(&r, q))
		return DNS_RCODE_FORMERR;
	uint16_t qtype = wire_u16(&r), qclass = wire_u16(&r);
	if (r.bad)
		return DNS_RCODE_FORMERR;
	q->qtype = qtype;
	q->qclass = qclass;
	if (q->qtype == DNS_TYPE_OPT)           /* a pseudo-type, never asked for */
		return DNS_RCODE_FORMERR;

	for (unsigned i = 0; i < arcount; i++) {
		int rc = parse_opt(&r, pkt, q);
		if (rc != DNS_PARSE_OK)
			return rc;
	}
	if (wire_left(&r) != 0)                 /* trailing bytes */
		return DNS_RCODE_FORMERR;

	q->has_question = true;
	if (q->has_edns && q->edns_version > 0)
		return DNS_RCODE_BADVERS;
	return DNS_PARSE_OK;
}

/* The same room as a wire_writer on the message so far, for the relay's records. */
static struct wire_writer builder_writer(const struct dns_builder *b)
{
	struct wire_writer w = wire_writer(b->buf, dns_builder_end(b));
	w.len = b->len;
	return w;
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

	b->len = 0;
	uint8_t *h = dns_builder_room(b, DNS_HEADER_LEN + (b->with_question ? q->qname.len + 4u : 0));
	if (!h) {
		b->failed = true;
		b->len = b->question_end = 0;
		return;
	}
	memset(h, 0, DNS_HEADER_LEN);
	wire_store16(h, q->id);
	if (b->with_question) {
		wire_copy_short(h + DNS_HEADER_LEN, q->qname_orig, q->qname.len);
		wire_store16(h + DNS_HEADER_LEN + q->qname.len, q->qtype);
		wire_store16(h + DNS_HEADER_LEN + q->qname.len + 2, q->qclass);
	}
	b->question_end = b->len;
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
	if (!dns_builder_fits(b, 4u + len))        /* kept back for dns_response_finish */
		return false;
	b->opts[b->nopts].code = code;
	b->opts[b->nopts].len = len;
	b->opts[b->nopts].data = data;
	b->nopts++;
	b->reserve += 4u + len;
	return true;
}

bool dns_response_add_rr(struct dns_builder *b, uint16_t type, const uint8_t *rdata, uint16_t rdlen,
			 uint32_t ttl)
{
	if (b->failed || b->truncated || !b->with_question || b->nscount || b->arcount)
		return false;
	return dns_builder_answer(b, type, rdata, rdlen, ttl) != 0;
}

bool dns_response_add_authority(struct dns_builder *b, const struct name *owner, uint16_t type,
				const uint8_t *rdata, uint16_t rdlen, uint32_t ttl)
{
	if (b->failed || b->truncated || !b->with_question || b->arcount)
		return false;
	uint8_t *p = b->nscount < UINT16_MAX ? dns_builder_room(b, owner->len + 10u + rdlen) : NULL;
	if (!p) {
		truncate(b);
		return false;
	}
	memcpy(p, owner->wire, owner->len);
	p += owner->len;
	wire_store16(p, type);
	wire_store16(p + 2, DNS_CLASS_IN);
	wire_store32(p + 4, ttl);
	wire_store16(p + 8, rdlen);
	memcpy(p + 10, rdata, rdlen);
	b->nscount++;
	return true;
}

/* RFC 6840 5.8: AD only for a client that signalled it understands it, by DO or by AD */
static bool wants_ad(const struct dns_query *q)
{
	return q->edns_do || q->ad;
}

size_t dns_response_replay(struct dns_builder *b, const uint8_t *body, size_t body_len,
			   size_t an_ns_len, uint16_t an, uint16_t ns, uint16_t ar, uint16_t rcode,
			   bool ad, size_t *copied)
{
	*copied = 0;
	if (b->failed)
		return 0;
	b->rcode = rcode > F2_RCODE_MASK && !b->q->has_edns ? DNS_RCODE_SERVFAIL : rcode;
	b->upstream_flags = ad && wants_ad(b->q) ? F2_AD : 0;
	if (b->truncated || !b->with_question || b->ancount || b->nscount || b->arcount)
		return 0;
	/* the whole body if it fits, else the answer and authority sections without the additional */
	size_t at = b->len;
	size_t n = body_len;
	uint8_t *p = dns_builder_room(b, n);
	if (!p)
		p = dns_builder_room(b, n = an_ns_len);
	if (!p) {
		truncate(b);
		return 0;
	}
	memcpy(p, body, n);
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
	size_t at = dns_builder_answer(b, DNS_TYPE_CNAME, target->wire, target->len, ttl);
	if (!at)
		return false;
	b->owner_off = (uint16_t)at;
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
	/* NOTIMP (an opcode we do not know) promises nothing: no RA, no CD */
	bool notimp = b->rcode == DNS_RCODE_NOTIMP;
	h[3] = (uint8_t)((notimp ? 0 : F2_RA) | (q->cd && !notimp ? F2_CD : 0) |
			 (b->upstream_flags & F2_AD) | (b->rcode & F2_RCODE_MASK));
	wire_store16(h + 4, b->with_question ? 1 : 0);
	wire_store16(h + 6, b->ancount);
	wire_store16(h + 8, b->nscount);
	wire_store16(h + 10, (uint16_t)(b->arcount + (b->reserve ? 1 : 0)));

	if (b->reserve) {
		/* into the room kept back (reserve) from the start: no check */
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
	struct wire_writer w = wire_writer(buf, cap);
	wire_put16(&w, s->id);
	wire_put8(&w, s->rd ? F1_RD : 0);
	wire_put8(&w, (s->cd ? F2_CD : 0) | (s->ad ? F2_AD : 0));
	wire_put16(&w, 1);                      /* QDCOUNT */
	wire_put16(&w, 0);
	wire_put16(&w, 0);
	wire_put16(&w, s->edns ? 1 : 0);
	wire_put(&w, s->qname, s->qname_len);
	wire_put16(&w, s->qtype);
	wire_put16(&w, s->qclass);
	if (s->edns) {
		size_t opts = (s->opt_code ? 4u + s->opt_len : 0) + (s->cookie_len ? 4u + s->cookie_len : 0);
		wire_put8(&w, 0);                       /* root owner */
		wire_put16(&w, DNS_TYPE_OPT);
		wire_put16(&w, s->udp_size);
		wire_put16(&w, 0);                      /* extended rcode, version */
		wire_put16(&w, s->edns_do ? EDNS_DO : 0);
		wire_put16(&w, (uint16_t)opts);
		if (s->opt_code) {
			wire_put16(&w, s->opt_code);
			wire_put16(&w, s->opt_len);
			if (s->opt_len)                 /* opt_data may be NULL then */
				wire_put(&w, s->opt_data, s->opt_len);
		}
		if (s->cookie_len) {
			wire_put16(&w, DNS_OPT_COOKIE);
			wire_put16(&w, s->cookie_len);
			wire_put(&w, s->cookie, s->cookie_len);
		}
	}
	return w.bad ? 0 : wire_written(&w);
}

int dns_upstream_answer_parse(const uint8_t *pkt, size_t len, uint16_t id, const struct name *qname,
			      uint16_t qtype, uint16_t qclass, struct dns_upstream_answer *a,
			      const char **err)
{
	struct wire_reader r = wire_reader(pkt, len);
	struct dns_header h;
	if (len > DNS_TCP_MAX || !dns_header_read(&r, &h)) {
		*err = "message length out of range";
		return -1;
	}
	if (h.id != id) {
		*err = "unexpected id";
		return -1;
	}
	if (!(h.flags1 & F1_QR) || ((h.flags1 & F1_OPCODE_MASK) >> F1_OPCODE_SHIFT) != DNS_OPCODE_QUERY) {
		*err = "not a response to a query";
		return -1;
	}
	a->tc = (h.flags1 & F1_TC) != 0;
	a->ad = (h.flags2 & F2_AD) != 0;
	a->rcode = h.flags2 & F2_RCODE_MASK;
	a->ancount = h.ancount;
	a->nscount = h.nscount;
	a->arcount = h.arcount;
	a->has_opt = false;
	a->has_question = h.qdcount == 1;
	a->opts_off = a->opts_len = 0;

	/* a refusal or failure may leave the question out (Unbound's REFUSED
	 * does): the id and source say it is ours, and it is never relayed */
	bool bare = h.qdcount == 0 && a->ancount == 0 && a->nscount == 0 &&
		    (a->rcode == DNS_RCODE_SERVFAIL || a->rcode == DNS_RCODE_REFUSED);
	if (h.qdcount != 1 && !bare) {
		*err = "not exactly one question";
		return -1;
	}
	if (h.qdcount == 1) {
		struct name n;
		uint16_t t, c;
		if (!dns_question_read(&r, pkt, &n, &t, &c)) {
			*err = "bad question";
			return -1;
		}
		if (!name_equal(&n, qname) || t != qtype || c != qclass) {
			*err = "answers another question";
			return -1;
		}
	}
	a->records_off = (uint16_t)(r.p - pkt);

	struct dns_rr_iter it;
	struct dns_rr rr;
	int rc;
	dns_rr_iter_init(&it, pkt, len, a->records_off, a->ancount, a->nscount, a->arcount);
	while ((rc = dns_rr_next(&it, &rr)) == 1) {
		/* relay drops it from the additional section; anywhere else it would pass on misplaced */
		if (rr.type == DNS_TYPE_TSIG && (!rr.last || rr.section != DNS_SECTION_ADDITIONAL)) {
			*err = "TSIG record not the last additional one (RFC 8945 5.1)";
			return -1;
		}
		if (rr.type == DNS_TYPE_OPT) {
			if (rr.section != DNS_SECTION_ADDITIONAL || a->has_opt || rr.owner[0] != 0) {
				*err = "misplaced OPT record";
				return -1;
			}
			a->has_opt = true;
			a->rcode |= (uint16_t)(rr.ttl >> 24 << 4);      /* the extended rcode */
			a->opts_off = (uint16_t)(rr.rdata - pkt);
			a->opts_len = rr.rdlen;
		}
	}
	if (rc < 0) {
		*err = "record runs past the message";
		return -1;
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
 * Decompresses the name at r into out (NAME_MAX_WIRE bytes) keeping the
 * sender's case (RFC 4343), with name_from_packet's rules: pointers
 * strictly backwards and past the header, labels of at most 63 bytes,
 * names of at most 255.  r moves past the name's bytes where it is; a
 * pointer may lead anywhere before it in the message (pkt, len bytes).
 */
static bool name_copy_raw(const uint8_t *pkt, size_t len, struct wire_reader *r, uint8_t *out,
			  size_t *out_len)
{
	struct wire_reader at = *r;
	const uint8_t *limit = r->p;
	bool jumped = false;
	size_t n = 0;
	for (;;) {
		uint8_t b = wire_u8(&at);
		if ((b & 0xC0) == 0xC0) {
			const uint8_t *target = pkt + ((size_t)(b & 0x3F) << 8 | wire_u8(&at));
			if (at.bad || target >= limit || target < pkt + DNS_HEADER_LEN)
				break;
			if (!jumped)
				r->p = at.p;
			jumped = true;
			limit = target;
			at = wire_reader_at(pkt, len, (size_t)(target - pkt));
			continue;
		}
		const uint8_t *label = b <= NAME_MAX_LABEL ? wire_take(&at, b) : NULL;
		if (!label || n + 1u + b > NAME_MAX_WIRE)
			break;
		out[n] = b;
		memcpy(out + n + 1, label, b);
		n += 1u + b;
		if (b == 0) {
			if (!jumped)
				r->p = at.p;
			*out_len = n;
			return true;
		}
	}
	r->bad = true;
	return false;
}

/*
 * Names written into a relayed answer, so later ones point at them
 * (RFC 1035 4.1.4) and the answer stays as small as the upstream's: each
 * entry is where a suffix of a name already written starts.  Matches are
 * exact, case included, so the upstream's case (and 0x20) survives.
 */
#define RELAY_TARGETS 128
struct relay_names {
	uint16_t at[RELAY_TARGETS];
	unsigned n;
};

/* The name at buf[off] (ours: pointers only backwards) equals raw[0..raw_len)? */
static bool written_equals(const uint8_t *buf, size_t buf_len, size_t off, const uint8_t *raw, size_t raw_len)
{
	struct wire_reader have = wire_reader_at(buf, buf_len, off), want = wire_reader(raw, raw_len);
	for (unsigned hops = 0; hops < 64;) {
		const uint8_t *l = wire_peek(&have, 1);
		if (!l)
			return false;
		uint8_t b = *l;
		if ((b & 0xC0) == 0xC0) {
			uint16_t ptr = wire_u16(&have);
			if (have.bad)
				return false;
			have = wire_reader_at(buf, buf_len, ptr & 0x3FFF);
			hops++;
			continue;
		}
		/* raw is a whole uncompressed name, so it ends where its root label is */
		const uint8_t *h = wire_take(&have, 1u + b), *w = wire_take(&want, 1u + b);
		if (!h || !w || memcmp(h, w, 1u + b) != 0)
			return false;
		if (b == 0)
			return wire_left(&want) == 0;
	}
	return false;
}

static void remember(struct relay_names *t, size_t off)
{
	if (t->n < RELAY_TARGETS && off < 0x4000)
		t->at[t->n++] = (uint16_t)off;
}

/*
 * Writes the name raw into w: compressed against names written before
 * when t is given (owners, and RDATA names of RFC 1035's own types: RFC
 * 3597 4 forbids it in others), else as it is.
 */
static void put_raw_name(struct wire_writer *w, struct relay_names *t, const uint8_t *raw, size_t raw_len)
{
	if (!t) {
		wire_put(w, raw, raw_len);
		return;
	}
	size_t start = wire_written(w);
	for (size_t i = 0; raw[i] != 0; i += 1u + raw[i]) {
		for (unsigned k = 0; k < t->n; k++)
			if (written_equals(w->buf, start, t->at[k], raw + i, raw_len - i)) {
				for (size_t j = 0; j < i; j += 1u + raw[j])
					remember(t, start + j);
				wire_put(w, raw, i);
				wire_put16(w, (uint16_t)(0xC000 | t->at[k]));
				return;
			}
	}
	for (size_t j = 0; raw[j] != 0; j += 1u + raw[j])
		remember(t, start + j);
	wire_put(w, raw, raw_len);
}

/* Copies one name at r into w, compressed against t (NULL: not compressed). */
static void put_name(struct wire_writer *w, struct relay_names *t, const uint8_t *pkt, size_t len,
		     struct wire_reader *r)
{
	uint8_t raw[NAME_MAX_WIRE];
	size_t n;
	if (name_copy_raw(pkt, len, r, raw, &n))
		put_raw_name(w, t, raw, n);
}

static void put_bytes(struct wire_writer *w, struct wire_reader *r, size_t n)
{
	const uint8_t *p = wire_take(r, n);
	if (p)
		wire_put(w, p, n);
}

/*
 * Copies one record; returns 1 when copied, 0 when it does not fit,
 * -1 when it cannot be decoded.
 */
static int relay_record(struct dns_builder *b, const uint8_t *pkt, size_t len, const struct dns_rr *rr,
			const struct name *qname, struct relay_names *t)
{
	struct wire_writer w = builder_writer(b);
	struct wire_reader o = wire_reader(rr->owner, (size_t)(rr->fixed - rr->owner));
	uint8_t raw[NAME_MAX_WIRE];
	size_t raw_len;
	struct name owner;
	if (!name_copy_raw(pkt, len, &o, raw, &raw_len) || name_from_wire(&owner, raw, raw_len) != NAME_OK)
		return -1;
	if (name_equal(&owner, qname))
		wire_put16(&w, 0xC000 | b->owner_off);
	else
		put_raw_name(&w, t, raw, raw_len);
	wire_put(&w, rr->fixed, 8);
	size_t rdlen_at = wire_written(&w);
	wire_put16(&w, 0);                      /* set below */
	size_t rd_start = wire_written(&w);

	struct wire_reader d = wire_reader(rr->rdata, rr->rdlen);
	enum rdata_layout layout = rdata_layout(rr->type);
	/* compressed only in RFC 1035's own types (RFC 3597 4) */
	struct relay_names *rt = rr->type <= 15 ? t : NULL;
	switch (layout) {
	case RD_RAW:
		put_bytes(&w, &d, rr->rdlen);
		break;
	case RD_PREF_NAME:
	case RD_SRV:
		put_bytes(&w, &d, layout == RD_SRV ? 6 : 2);
		put_name(&w, rt, pkt, len, &d);
		break;
	case RD_NAME:
		put_name(&w, rt, pkt, len, &d);
		break;
	case RD_TWO_NAMES:
	case RD_SOA:
		put_name(&w, rt, pkt, len, &d);
		put_name(&w, rt, pkt, len, &d);
		if (layout == RD_SOA)
			put_bytes(&w, &d, 20);
		break;
	}
	if (d.bad || wire_left(&d) != 0)
		return -1;
	if (w.bad)
		return 0;
	wire_store16(b->buf + rdlen_at, (uint16_t)(wire_written(&w) - rd_start));  /* room reserved above */
	b->len = wire_written(&w);
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
	b->upstream_flags = a->ad && wants_ad(b->q) ? F2_AD : 0;
	if (b->truncated || !b->with_question)
		return true;
	if (a->tc || !a->has_question) {
		truncate(b);
		return true;
	}
	struct dns_rr_iter it;
	struct dns_rr rr;
	int rc;
	struct relay_names t = { .n = 0 };
	for (size_t j = 0; j + 1 < qname->len; j += 1u + qname->wire[j])
		remember(&t, b->owner_off + j);         /* the question's suffixes */
	dns_rr_iter_init(&it, pkt, len, a->records_off, a->ancount, a->nscount, a->arcount);
	while ((rc = dns_rr_next(&it, &rr)) == 1) {
		if (rr.section == DNS_SECTION_ADDITIONAL) {
			/* upstream's OPT: ours replaces it; a transaction signature is
			 * upstream's to us: it cannot verify for the client (RFC 8945) */
			if (rr.type == DNS_TYPE_OPT || rr.type == DNS_TYPE_TSIG || rr.type == DNS_TYPE_SIG)
				continue;
		}
		unsigned kept = t.n;
		int copied = relay_record(b, pkt, len, &rr, qname, &t);
		if (copied <= 0)
			t.n = kept;             /* nothing of it stays in the message */
		if (copied < 0)
			return false;
		if (copied == 0) {
			/* RFC 2181 9: leaving out additional data does not need TC */
			if (rr.section != DNS_SECTION_ADDITIONAL)
				truncate(b);
			return true;
		}
		if (rr.section == DNS_SECTION_ANSWER)
			b->ancount++;
		else if (rr.section == DNS_SECTION_AUTHORITY)
			b->nscount++;
		else
			b->arcount++;
	}
	return rc == 0;
}

/* ---- names of codes ---- */

const char *dns_rcode_name(unsigned rcode)
{
	static const char *const names[] = { "NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP",
					     "REFUSED", "YXDOMAIN", "YXRRSET", "NXRRSET", "NOTAUTH", "NOTZONE" };
	return rcode < sizeof(names) / sizeof(names[0]) ? names[rcode] : NULL;
}

static const struct {
	uint16_t type;
	const char *name;
} type_names[] = {
	{ 1, "A" }, { 2, "NS" }, { 5, "CNAME" }, { 6, "SOA" }, { 12, "PTR" }, { 13, "HINFO" },
	{ 15, "MX" }, { 16, "TXT" }, { 28, "AAAA" }, { 29, "LOC" }, { 33, "SRV" }, { 35, "NAPTR" },
	{ 39, "DNAME" }, { 43, "DS" }, { 44, "SSHFP" }, { 46, "RRSIG" }, { 47, "NSEC" },
	{ 48, "DNSKEY" }, { 50, "NSEC3" }, { 52, "TLSA" }, { 64, "SVCB" }, { 65, "HTTPS" },
	{ 99, "SPF" }, { 255, "ANY" }, { 257, "CAA" },
};

bool dns_type_from_text(const char *s, uint16_t *type)
{
	for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++) {
		if (strcasecmp(s, type_names[i].name) == 0) {
			*type = type_names[i].type;
			return true;
		}
	}
	if (strncasecmp(s, "TYPE", 4) != 0 || s[4] < '0' || s[4] > '9' || strlen(s + 4) > 5)
		return false;
	char *end;
	unsigned long v = strtoul(s + 4, &end, 10);
	if (*end || v > UINT16_MAX)
		return false;
	*type = (uint16_t)v;
	return true;
}

const char *dns_type_to_text(uint16_t type, char *buf, size_t len)
{
	for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
		if (type_names[i].type == type)
			return type_names[i].name;
	snprintf(buf, len, "TYPE%u", type);
	return buf;
}
