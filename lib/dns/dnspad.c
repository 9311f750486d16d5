#include <string.h>

#include "dns.h"
#include "dnspad.h"
#include "dnsrr.h"

#define OPT_HEADER_LEN 4        /* option code and length */

/* The records of msg after its questions; false when it does not decode. */
static bool records_start(const uint8_t *msg, size_t len, struct dns_rr_iter *it)
{
	struct wire_reader r = wire_reader(msg, len);
	struct dns_header h;
	if (!dns_header_read(&r, &h))
		return false;
	for (unsigned i = 0; i < h.qdcount; i++)
		if (!dns_name_skip(&r) || !wire_take(&r, 4))
			return false;
	dns_rr_iter_init(it, msg, len, (size_t)(r.p - msg), h.ancount, h.nscount, h.arcount);
	return true;
}

/* The OPT record of msg: 1 with *opt, 0 when there is none, -1 when msg does not decode. */
static int find_opt(const uint8_t *msg, size_t len, struct dns_rr *opt)
{
	struct dns_rr_iter it;
	struct dns_rr rr;
	int rc;
	if (!records_start(msg, len, &it))
		return -1;
	while ((rc = dns_rr_next(&it, &rr)) == 1)
		if (rr.section == DNS_SECTION_ADDITIONAL && rr.type == DNS_TYPE_OPT) {
			*opt = rr;
			return 1;
		}
	return rc;
}

/* The OPT record's data is whole options, to its last byte (else one added at its end would not be read). */
static bool options_whole(const struct dns_rr *opt)
{
	struct wire_reader r = wire_reader(opt->rdata, opt->rdlen);
	while (wire_left(&r) >= OPT_HEADER_LEN) {
		(void)wire_u16(&r);
		if (!wire_take(&r, wire_u16(&r)))
			return false;
	}
	return wire_left(&r) == 0;
}

static bool has_padding(const struct dns_rr *opt)
{
	struct wire_reader r = wire_reader(opt->rdata, opt->rdlen);
	while (wire_left(&r) >= OPT_HEADER_LEN) {
		uint16_t code = wire_u16(&r), olen = wire_u16(&r);
		if (code == DNS_OPT_PADDING)
			return true;
		if (!wire_take(&r, olen))
			break;
	}
	return false;
}

bool dns_msg_padded(const uint8_t *msg, size_t len)
{
	struct dns_rr opt;
	return find_opt(msg, len, &opt) == 1 && has_padding(&opt);
}

size_t dns_msg_pad(uint8_t *msg, size_t len, size_t cap, size_t block)
{
	struct dns_rr opt;
	if (find_opt(msg, len, &opt) != 1 || has_padding(&opt) || !options_whole(&opt) || block == 0)
		return len;
	size_t bare = len + OPT_HEADER_LEN;
	size_t pad = (block - bare % block) % block;
	size_t total = bare + pad;
	if (total > cap || total > DNS_TCP_MAX || (size_t)opt.rdlen + OPT_HEADER_LEN + pad > UINT16_MAX)
		return len;
	/* the option goes at the end of the OPT record's data; what follows moves up */
	size_t at = (size_t)(opt.rdata - msg) + opt.rdlen;
	memmove(msg + at + OPT_HEADER_LEN + pad, msg + at, len - at);
	wire_store16(msg + at, DNS_OPT_PADDING);
	wire_store16(msg + at + 2, (uint16_t)pad);
	memset(msg + at + OPT_HEADER_LEN, 0, pad);
	size_t rdlen_at = (size_t)(opt.fixed - msg) + 8;
	wire_store16(msg + rdlen_at, (uint16_t)(opt.rdlen + OPT_HEADER_LEN + pad));
	return total;
}

int64_t dns_msg_min_ttl(const uint8_t *msg, size_t len, uint32_t def)
{
	struct dns_rr_iter it;
	struct dns_rr rr;
	int rc;
	int64_t min = -1;
	if (!records_start(msg, len, &it))
		return -1;
	while ((rc = dns_rr_next(&it, &rr)) == 1) {
		if (rr.section == DNS_SECTION_ADDITIONAL)
			break;
		uint32_t ttl = rr.ttl;
		if (rr.type == DNS_TYPE_SOA && rr.section == DNS_SECTION_AUTHORITY && rr.rdlen >= 4) {
			uint32_t minimum = wire_load32(rr.rdata + rr.rdlen - 4);
			if (minimum < ttl)
				ttl = minimum;
		}
		if (min < 0 || ttl < min)
			min = ttl;
	}
	if (rc < 0)
		return -1;
	return min < 0 ? def : min;
}
