/*
 * DNS messages read on a wire_reader; see dnsrr.h.
 */
#include "dnsrr.h"

bool dns_header_read(struct wire_reader *r, struct dns_header *h)
{
	const uint8_t *p = wire_take(r, 12);
	if (!p)
		return false;
	/* one bounds check for the twelve bytes */
	h->id = wire_load16(p);
	h->flags1 = p[2];
	h->flags2 = p[3];
	h->qdcount = wire_load16(p + 4);
	h->ancount = wire_load16(p + 6);
	h->nscount = wire_load16(p + 8);
	h->arcount = wire_load16(p + 10);
	return true;
}

bool dns_name_skip(struct wire_reader *r)
{
	/* at most 127 labels fit in 255 bytes; the 128th byte read must end it */
	for (unsigned n = 0; n < 128; n++) {
		uint8_t b = wire_u8(r);
		if (r->bad)
			return false;
		if ((b & 0xC0) == 0xC0) {
			wire_u8(r);
			return !r->bad;
		}
		if (b > NAME_MAX_LABEL)
			break;
		if (b == 0)
			return true;
		if (!wire_take(r, b))
			return false;
	}
	r->bad = true;
	return false;
}

int dns_name_read(struct wire_reader *r, const uint8_t *msg, struct name *out)
{
	if (r->bad)
		return NAME_ERR_TRUNCATED;
	size_t pos = (size_t)(r->p - msg);
	int rc = name_from_packet(out, msg, (size_t)(r->end - msg), &pos);
	if (rc != NAME_OK)
		r->bad = true;
	else
		r->p = msg + pos;
	return rc;
}

bool dns_question_read(struct wire_reader *r, const uint8_t *msg, struct name *qname, uint16_t *qtype,
		       uint16_t *qclass)
{
	if (dns_name_read(r, msg, qname) != NAME_OK)
		return false;
	*qtype = wire_u16(r);
	*qclass = wire_u16(r);
	return !r->bad;
}

void dns_rr_iter_init(struct dns_rr_iter *it, const uint8_t *msg, size_t len, size_t off, uint16_t an,
		      uint16_t ns, uint16_t ar)
{
	it->msg = msg;
	it->r = wire_reader(msg, len);
	wire_take(&it->r, off);                 /* bad when off is past the end */
	it->next = 0;
	it->an_end = an;
	it->ns_end = (unsigned)an + ns;
	it->total = it->ns_end + ar;
}

int dns_rr_next(struct dns_rr_iter *it, struct dns_rr *rr)
{
	if (it->r.bad)
		return -1;
	if (it->next == it->total)
		return 0;
	rr->owner = it->r.p;
	if (!dns_name_skip(&it->r))
		return -1;
	const uint8_t *f = wire_take(&it->r, 10);
	if (!f)
		return -1;
	rr->fixed = f;
	rr->type = wire_load16(f);             /* the ten bytes were taken */
	rr->rclass = wire_load16(f + 2);
	rr->ttl = wire_load32(f + 4);
	rr->rdlen = wire_load16(f + 8);
	rr->rdata = wire_take(&it->r, rr->rdlen);
	if (!rr->rdata)
		return -1;
	rr->index = it->next++;
	rr->section = rr->index < it->an_end ? DNS_SECTION_ANSWER :
		      rr->index < it->ns_end ? DNS_SECTION_AUTHORITY : DNS_SECTION_ADDITIONAL;
	rr->last = it->next == it->total;
	return 1;
}
