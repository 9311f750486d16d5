/*
 * The PROXY protocol's version 2 header (proxyv2.h), read through the
 * bounded wire reader.  The checks come in the order the bytes do, so a
 * stream that has a prefix of a header learns the first thing wrong with
 * it as soon as those bytes are in, and never waits for more of a header
 * that cannot be valid.
 */
#include <string.h>
#include <sys/socket.h>

#include "proxyv2.h"
#include "wire.h"

const uint8_t proxyv2_signature[PROXYV2_SIG_LEN] = {
	'\r', '\n', '\r', '\n', '\0', '\r', '\n', 'Q', 'U', 'I', 'T', '\n',
};

enum { FAMILY_UNSPEC, FAMILY_INET, FAMILY_INET6 };

static void take_addr(struct wire_reader *r, int family, struct ip_endpoint *e)
{
	size_t n = family == AF_INET ? 4 : 16;
	const uint8_t *p = wire_take(r, n);
	e->family = family;
	if (p)
		memcpy(e->addr, p, n);
}

enum proxyv2_status proxyv2_parse(const uint8_t *buf, size_t len, size_t max_len,
				  struct proxyv2_header *h)
{
	if (len == 0)
		return PROXYV2_SHORT;
	if (memcmp(buf, proxyv2_signature, len < PROXYV2_SIG_LEN ? len : PROXYV2_SIG_LEN) != 0)
		return PROXYV2_NOT_PROXY;
	if (len < PROXYV2_FIXED_LEN)
		return PROXYV2_SHORT;

	struct wire_reader r = wire_reader(buf + PROXYV2_SIG_LEN, len - PROXYV2_SIG_LEN);
	uint8_t ver_cmd = wire_u8(&r);
	uint8_t fam_tr = wire_u8(&r);
	size_t rest = wire_u16(&r);
	uint8_t command = ver_cmd & 0x0f, family = fam_tr >> 4, transport = fam_tr & 0x0f;
	if (ver_cmd >> 4 != 2)
		return PROXYV2_BAD_VERSION;
	if (command != PROXYV2_LOCAL && command != PROXYV2_PROXY)
		return PROXYV2_BAD_COMMAND;
	size_t addr_len = 0;
	if (command == PROXYV2_PROXY) {
		if (family == FAMILY_INET)
			addr_len = 2 * 4 + 2 * 2;
		else if (family == FAMILY_INET6)
			addr_len = 2 * 16 + 2 * 2;
		else
			return PROXYV2_BAD_FAMILY;
		if (transport != PROXYV2_STREAM && transport != PROXYV2_DGRAM)
			return PROXYV2_BAD_TRANSPORT;
	}
	if (rest > max_len - PROXYV2_FIXED_LEN)
		return PROXYV2_TOO_LONG;
	if (rest < addr_len)
		return PROXYV2_SHORT_ADDRESS;
	const uint8_t *body = wire_take(&r, rest);
	if (!body)
		return PROXYV2_SHORT;

	struct proxyv2_header out = { .len = PROXYV2_FIXED_LEN + rest, .command = command };
	if (command == PROXYV2_PROXY) {
		/* the lengths were checked: these reads are all there */
		struct wire_reader b = wire_reader(body, rest);
		int af = family == FAMILY_INET ? AF_INET : AF_INET6;
		out.transport = transport;
		take_addr(&b, af, &out.src);
		take_addr(&b, af, &out.dst);
		out.src.port = wire_u16(&b);
		out.dst.port = wire_u16(&b);
		while (wire_left(&b) > 0) {
			(void)wire_u8(&b);              /* type */
			size_t n = wire_u16(&b);
			if (!wire_take(&b, n))
				return PROXYV2_BAD_TLV;
		}
	}
	*h = out;
	return PROXYV2_OK;
}

const char *proxyv2_strerror(enum proxyv2_status s)
{
	switch (s) {
	case PROXYV2_OK:
		return "ok";
	case PROXYV2_SHORT:
		return "truncated";
	case PROXYV2_NOT_PROXY:
		return "no PROXY v2 signature";
	case PROXYV2_BAD_VERSION:
		return "version is not 2";
	case PROXYV2_BAD_COMMAND:
		return "command neither LOCAL nor PROXY";
	case PROXYV2_BAD_FAMILY:
		return "address family not IPv4 or IPv6";
	case PROXYV2_BAD_TRANSPORT:
		return "transport not TCP or UDP";
	case PROXYV2_TOO_LONG:
		return "header too long";
	case PROXYV2_SHORT_ADDRESS:
		return "length too short for the addresses";
	case PROXYV2_BAD_TLV:
		return "TLV past the header's end";
	case PROXYV2_STATUSES:
		break;
	}
	return "?";
}
