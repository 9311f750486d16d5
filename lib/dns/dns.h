/*
 * The DNS message layer shared by the daemons, in the style of NSD and
 * Knot: no allocation, every read and write bounds-checked against an
 * explicit length.
 *
 * Parsing a query (dns_query_parse) takes a whole message as received and
 * fills one struct dns_query.  The policy is a resolver's (the one Unbound
 * applies): a query carries exactly one question, nothing in the answer and
 * authority sections, and at most one additional record, which must be an
 * OPT RR owned by the root (RFC 6891).  Everything else is FORMERR.
 *
 * Building a response (dns_response_*) writes into the caller's buffer:
 *
 *     struct dns_builder b;
 *     dns_response_init(&b, &q, DNS_RCODE_NOERROR, buf,
 *                       dns_query_udp_limit(&q, our_udp_size));
 *     dns_response_add_addr(&b, AF_INET, addr, ttl);     (any number)
 *     size_t len = dns_response_finish(&b, our_udp_size);
 *
 * The question is echoed in the client's case at offset 12, answers point
 * their owner name at it, an OPT RR is added when the query had one, and an
 * answer that would not fit the limit sets TC and keeps the question only.
 */
#ifndef CR_DNS_H
#define CR_DNS_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

#include "name.h"
#include "wire.h"

#define DNS_HEADER_LEN  12
#define DNS_UDP_MIN     512     /* RFC 1035 limit; also the floor for EDNS sizes */
#define DNS_EDNS_MAX    4096    /* the largest client payload size honoured */
#define DNS_TCP_MAX     65535   /* RFC 7766: a 2-byte length prefix */
#define DNS_OPT_RR_LEN  11      /* an OPT RR without options */
/* Largest response the builder can produce for one question and n addresses. */
#define DNS_RESPONSE_MAX(n) (DNS_HEADER_LEN + NAME_MAX_WIRE + 4 + (n) * (2 + 10 + 16) + DNS_OPT_RR_LEN)

enum dns_rcode {
	DNS_RCODE_NOERROR = 0,
	DNS_RCODE_FORMERR = 1,
	DNS_RCODE_SERVFAIL = 2,
	DNS_RCODE_NXDOMAIN = 3,
	DNS_RCODE_NOTIMP = 4,
	DNS_RCODE_REFUSED = 5,
	DNS_RCODE_BADVERS = 16,         /* extended: needs an OPT RR */
	DNS_RCODE_BADCOOKIE = 23,       /* RFC 7873 */
};

enum dns_opcode { DNS_OPCODE_QUERY = 0 };

enum dns_type {
	DNS_TYPE_A = 1,
	DNS_TYPE_NS = 2,
	DNS_TYPE_CNAME = 5,
	DNS_TYPE_SOA = 6,
	DNS_TYPE_MX = 15,
	DNS_TYPE_TXT = 16,
	DNS_TYPE_AAAA = 28,
	DNS_TYPE_SIG = 24,
	DNS_TYPE_OPT = 41,
	DNS_TYPE_TSIG = 250,
	DNS_TYPE_IXFR = 251,
	DNS_TYPE_AXFR = 252,
	DNS_TYPE_ANY = 255,
};

#define DNS_CLASS_IN 1
#define DNS_CLASS_CH 3

/* dns_query_parse results; any positive value is the rcode to answer with. */
enum dns_parse_result {
	DNS_PARSE_DROP = -1,    /* not a query (QR set) or shorter than a header: no answer */
	DNS_PARSE_OK = 0,
	/* DNS_RCODE_FORMERR, DNS_RCODE_NOTIMP (opcode not QUERY), DNS_RCODE_BADVERS */
};

struct dns_query {
	/* Header: valid whenever the result is not DNS_PARSE_DROP. */
	uint16_t id;
	uint8_t opcode;
	bool rd;
	bool cd;
	bool ad;                                /* RFC 6840 5.7: it understands AD in the answer */

	/* Question: valid when has_question. */
	bool has_question;
	uint16_t qtype;
	uint16_t qclass;
	struct name qname;                      /* canonical (lowercase) */
	uint8_t qname_orig[NAME_MAX_WIRE + 1];  /* as received, qname.len bytes (+1: read in whole words) */

	/* EDNS (RFC 6891): valid when has_edns. */
	bool has_edns;
	bool edns_do;                           /* DNSSEC OK, copied to the answer */
	uint8_t edns_version;
	uint16_t edns_udp_raw;                  /* the payload size as sent */
	/* Where the OPT RR's options lie in the packet (walked and bounds-checked). */
	uint16_t edns_opts_off;
	uint16_t edns_opts_len;

	/* The client's limit for a UDP answer: 512 without EDNS, else its
	 * payload size clamped to [DNS_UDP_MIN, DNS_EDNS_MAX]. */
	uint16_t udp_size;
};

/*
 * Parses a query.  Returns DNS_PARSE_OK, DNS_PARSE_DROP, or the rcode to
 * answer with (header fields are then valid, the question and EDNS fields
 * only where their has_ flag says so).
 */
int dns_query_parse(const uint8_t *pkt, size_t len, struct dns_query *q);

/* The size limit for a UDP answer: the client's, capped by our own maximum. */
static inline size_t dns_query_udp_limit(const struct dns_query *q, uint16_t our_udp_size)
{
	size_t lim = q->udp_size;
	if (q->has_edns && our_udp_size < lim)
		lim = our_udp_size < DNS_UDP_MIN ? DNS_UDP_MIN : our_udp_size;
	return lim;
}

#define DNS_MAX_OPTIONS 4       /* in one answer: INRP, NSID, cookie, extended error */

/* EDNS option codes (IANA "DNS EDNS0 Option Codes") */
enum dns_option {
	DNS_OPT_NSID = 3,               /* RFC 5001 */
	DNS_OPT_COOKIE = 10,            /* RFC 7873 */
	DNS_OPT_PADDING = 12,           /* RFC 7830 */
	DNS_OPT_EDE = 15,               /* RFC 8914 */
};

struct dns_builder {
	uint8_t *buf;
	size_t limit;           /* bytes the message may use */
	size_t len;
	size_t question_end;
	size_t reserve;         /* kept free for the OPT RR */
	uint16_t ancount;
	uint16_t nscount;
	uint16_t arcount;       /* without our OPT RR */
	uint16_t rcode;
	uint16_t owner_off;     /* where the name the next address belongs to lies */
	uint8_t upstream_flags; /* AD copied from a relayed answer */
	bool with_question;
	bool truncated;
	bool failed;            /* limit too small even for header and question */
	const struct dns_query *q;
	/* EDNS options for our OPT RR (dns_response_add_option) */
	uint8_t nopts;
	struct {
		uint16_t code, len;
		const uint8_t *data;
	} opts[DNS_MAX_OPTIONS];
};

/*
 * Starts a response to q with rcode (DNS_RCODE_BADVERS included).  buf
 * holds at least limit bytes.  FORMERR and NOTIMP answers carry no
 * question, only the header as far as it was parsed (id, opcode, RD, CD);
 * others echo the question.  Every answer to a query whose OPT RR parsed
 * carries an OPT RR (RFC 6891 6.1.1).
 */
void dns_response_init(struct dns_builder *b, const struct dns_query *q, unsigned rcode,
		       uint8_t *buf, size_t limit);

/* Makes the answer a truncated one (TC, the question only). */
void dns_response_truncate(struct dns_builder *b);

/*
 * The builder's one room check: what is left before the OPT record and
 * options kept back (reserve).  The fixed fields of a record are then
 * stored unchecked into what it made room for.  Inline, with the answer
 * records below: every local answer adds its addresses through them.
 */
static inline size_t dns_builder_end(const struct dns_builder *b)
{
	return b->limit > b->reserve ? b->limit - b->reserve : 0;
}

static inline bool dns_builder_fits(const struct dns_builder *b, size_t n)
{
	return dns_builder_end(b) - b->len >= n;        /* wire_room's test */
}

static inline uint8_t *dns_builder_room(struct dns_builder *b, size_t n)
{
	if (!dns_builder_fits(b, n))
		return NULL;
	b->len += n;
	return b->buf + b->len - n;
}

/*
 * Appends one answer record owned by the current owner name (the question,
 * or the last CNAME's target) to a builder neither failed nor truncated,
 * with a question; returns the offset of its RDATA, or 0 (the response is
 * then truncated) when it does not fit.  Inlined: an address's RDATA is
 * then copied as one 4- or 16-byte move, not by a call to memcpy.
 */
static inline __attribute__((always_inline)) size_t dns_builder_answer(struct dns_builder *b, uint16_t type,
								       const uint8_t *rdata, uint16_t rdlen,
								       uint32_t ttl)
{
	uint8_t *p = b->ancount < UINT16_MAX ? dns_builder_room(b, 2u + 10u + rdlen) : NULL;
	if (!p) {
		dns_response_truncate(b);
		return 0;
	}
	wire_store16(p, 0xC000 | b->owner_off);
	wire_store16(p + 2, type);
	wire_store16(p + 4, b->q->qclass);     /* IN, or CH for CHAOS TXT */
	wire_store32(p + 6, ttl);
	wire_store16(p + 10, rdlen);
	memcpy(p + 12, rdata, rdlen);
	b->ancount++;
	return b->len - rdlen;
}

/*
 * Adds an A (family AF_INET, 4 bytes) or AAAA (AF_INET6, 16 bytes) record
 * for the question name.  Returns false once the answer no longer fits:
 * the response is then truncated (TC, question only) and later adds are
 * ignored.
 */
static inline bool dns_response_add_addr(struct dns_builder *b, int family, const uint8_t *addr, uint32_t ttl)
{
	if (b->failed || b->truncated || !b->with_question)
		return false;
	if (family == AF_INET)
		return dns_builder_answer(b, DNS_TYPE_A, addr, 4, ttl) != 0;
	if (family == AF_INET6)
		return dns_builder_answer(b, DNS_TYPE_AAAA, addr, 16, ttl) != 0;
	return false;
}

/*
 * Adds a CNAME record: the owner is the question name, or the previous
 * CNAME's target; the target becomes the owner of the records added next
 * (the chain of a redirected name).  Returns false once truncated.
 */
bool dns_response_add_cname(struct dns_builder *b, const struct name *target, uint32_t ttl);

/*
 * Puts an EDNS option (data kept by the caller until finish) in the OPT
 * RR, if the query had one; up to DNS_MAX_OPTIONS.  Call it right after
 * init, before any record.  Returns false if it does not fit (the option
 * is then left out).
 */
bool dns_response_add_option(struct dns_builder *b, uint16_t code, const uint8_t *data, uint16_t len);

/*
 * Adds a record of any type for the current owner (the question name, or
 * the last CNAME's target) to the answer section; rdata is in wire form,
 * its names uncompressed.  Returns false once truncated.
 */
bool dns_response_add_rr(struct dns_builder *b, uint16_t type, const uint8_t *rdata, uint16_t rdlen,
			 uint32_t ttl);

/*
 * Adds a record owned by `owner` to the authority section, after every
 * answer (a negative answer's SOA, RFC 2308).  Returns false once
 * truncated: without its SOA a negative answer is not cacheable, so one
 * that does not fit truncates the message.
 */
bool dns_response_add_authority(struct dns_builder *b, const struct name *owner, uint16_t type,
				const uint8_t *rdata, uint16_t rdlen, uint32_t ttl);

/*
 * Completes the header and appends the OPT RR (advertising our_udp_size)
 * if the query had one.  Returns the message length, or 0 if nothing can
 * be sent (the limit is too small for even the header and question).
 */
size_t dns_response_finish(struct dns_builder *b, uint16_t our_udp_size);


/*
 * Outgoing queries, to the next content router or an upstream resolver.
 */
struct dns_query_spec {
	uint16_t id;
	const uint8_t *qname;           /* wire form, uncompressed */
	uint8_t qname_len;
	uint16_t qtype, qclass;
	bool rd, cd;
	bool ad;                        /* we read AD in the answer (RFC 6840 5.7) */
	bool edns;                      /* add an OPT RR */
	bool edns_do;
	uint16_t udp_size;              /* our receive buffer, advertised */
	uint16_t opt_code;              /* 0: no option */
	uint16_t opt_len;
	const uint8_t *opt_data;
	const uint8_t *cookie;          /* a COOKIE option's data (RFC 7873), after the option above */
	uint8_t cookie_len;             /* 0: none */
};
/* Writes the query into buf; returns its length, or 0 if cap is too small. */
size_t dns_query_write(const struct dns_query_spec *s, uint8_t *buf, size_t cap);

/*
 * A response from upstream, checked against what we asked: same id, QR
 * set, opcode QUERY, exactly our question (names compared without case),
 * every record inside the message, at most one OPT RR, a TSIG only last.
 * A SERVFAIL or REFUSED with no question and no answer or authority
 * records is taken too (has_question false): servers leave it out of
 * refusals.
 */
struct dns_upstream_answer {
	uint16_t rcode;                 /* extended rcode included */
	bool has_question;              /* false only for a bare SERVFAIL or REFUSED */
	bool tc;
	bool ad;
	uint16_t ancount, nscount, arcount;
	uint16_t records_off;           /* first record after the question */
	bool has_opt;
	uint16_t opts_off, opts_len;    /* the OPT RR's options */
};

/* "NOERROR" to "NOTZONE" (RFC 1035, 2136); NULL for any other rcode. */
const char *dns_rcode_name(unsigned rcode);
/* A type by its mnemonic (the common ones) or as TYPEnnn (RFC 3597), in any case. */
bool dns_type_from_text(const char *s, uint16_t *type);
/* type's mnemonic, or TYPEnnn written into buf (at least 10 bytes). */
const char *dns_type_to_text(uint16_t type, char *buf, size_t len);

/* Returns 0, or -1 with *err set when the message is not our answer. */
int dns_upstream_answer_parse(const uint8_t *pkt, size_t len, uint16_t id, const struct name *qname,
			      uint16_t qtype, uint16_t qclass, struct dns_upstream_answer *a,
			      const char **err);

/*
 * Puts records kept from an earlier answer to the same question (the
 * packet cache) after the question: body holds them as they followed a
 * question of the same length, an_ns_len bytes of answer and authority
 * then the additional ones.  Takes rcode and AD (for a client with DO).
 * Answer and authority that do not fit truncate; additional records that
 * do not fit are left out.  Returns the offset of the copy in the
 * message and sets *copied to its length (0 when truncated).
 */
size_t dns_response_replay(struct dns_builder *b, const uint8_t *body, size_t body_len,
			   size_t an_ns_len, uint16_t an, uint16_t ns, uint16_t ar, uint16_t rcode,
			   bool ad, size_t *copied);

/*
 * Copies the records of a checked upstream answer into a response being
 * built (after any CNAMEs), decompressing names, dropping upstream's OPT
 * RR, and takes its rcode and AD bit.  The answer is truncated (TC,
 * question only) when it does not fit or upstream's was.  qname is the
 * name upstream was asked about: records it owns point at where that name
 * is in our message.  Returns false if a record could not be decoded.
 */
bool dns_response_relay(struct dns_builder *b, const uint8_t *pkt, size_t len,
			const struct dns_upstream_answer *a, const struct name *qname);

#endif
