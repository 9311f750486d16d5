/*
 * Reading a DNS message on a wire_reader (wire.h): the header, names
 * stepped over or decoded, and the resource records one after the other,
 * each checked to lie inside the message (RFC 1035 4.1.3).  The one RR
 * walk every reader of answers uses: the relay, the cache, the transfer
 * client and server.
 *
 *     struct dns_rr_iter it;
 *     struct dns_rr rr;
 *     dns_rr_iter_init(&it, msg, len, records_off, an, ns, ar);
 *     while ((rc = dns_rr_next(&it, &rr)) == 1)
 *             ... rr.type, rr.rdata[0 .. rr.rdlen) ...
 *     if (rc < 0) ... a record runs past the message ...
 */
#ifndef CR_DNSRR_H
#define CR_DNSRR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "name.h"
#include "wire.h"

struct dns_header {
	uint16_t id;
	uint8_t flags1, flags2;         /* QR opcode AA TC RD, RA Z AD CD rcode */
	uint16_t qdcount, ancount, nscount, arcount;
};

/* The 12-byte header; false (r bad) if fewer bytes are left. */
bool dns_header_read(struct wire_reader *r, struct dns_header *h);

/*
 * Steps over a name without decoding it (a pointer ends it); false, r
 * bad, when it runs past the end or has a label type other than 00 and 11.
 */
bool dns_name_skip(struct wire_reader *r);

/*
 * Decodes the name at r with name_from_packet's rules (canonical case,
 * pointers strictly backwards); msg is where the message starts, and
 * neither the name nor what it points at may go past r's end.  Returns
 * NAME_OK, or the error with r bad.
 */
int dns_name_read(struct wire_reader *r, const uint8_t *msg, struct name *out);

/* A question: name, type and class. */
bool dns_question_read(struct wire_reader *r, const uint8_t *msg, struct name *qname, uint16_t *qtype,
		       uint16_t *qclass);

enum dns_section { DNS_SECTION_ANSWER, DNS_SECTION_AUTHORITY, DNS_SECTION_ADDITIONAL };

struct dns_rr {
	const uint8_t *owner;           /* the owner name, as in the message */
	const uint8_t *fixed;           /* type, class, TTL, RDLENGTH: 10 bytes */
	uint16_t type, rclass;
	uint32_t ttl;
	uint16_t rdlen;
	const uint8_t *rdata;           /* rdlen bytes inside the message */
	enum dns_section section;
	unsigned index;                 /* in the message, from 0 */
	bool last;                      /* the message's last counted record */
};

struct dns_rr_iter {
	const uint8_t *msg;
	struct wire_reader r;
	unsigned next, an_end, ns_end, total;
};

/* The records of msg (len bytes) from offset off on: an + ns + ar of them. */
void dns_rr_iter_init(struct dns_rr_iter *it, const uint8_t *msg, size_t len, size_t off, uint16_t an,
		      uint16_t ns, uint16_t ar);

/*
 * The next record: 1 with *rr, 0 when every counted record was read, -1
 * when this one runs past the message (and every call after).
 */
int dns_rr_next(struct dns_rr_iter *it, struct dns_rr *rr);

/* Where the iterator is: after the last record read. */
static inline size_t dns_rr_iter_offset(const struct dns_rr_iter *it)
{
	return (size_t)(it->r.p - it->msg);
}

#endif
