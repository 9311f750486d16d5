/*
 * DNS messages on a TCP stream; see dnsframe.h.
 */
#include "dnsframe.h"
#include "wire.h"

enum dns_frame dns_frame_next(const uint8_t *buf, size_t len, size_t *msg_len)
{
	struct wire_reader r = wire_reader(buf, len);
	size_t n = wire_u16(&r);
	if (r.bad)
		return DNS_FRAME_MORE;
	if (n == 0)
		return DNS_FRAME_BAD;
	if (!wire_peek(&r, n))
		return DNS_FRAME_MORE;
	*msg_len = n;
	return DNS_FRAME_MSG;
}

size_t dns_frame_grow(size_t cap, size_t len)
{
	if (cap - len >= 1024 || cap >= DNS_FRAME_BUF_MAX)
		return cap;
	return cap * 2 < DNS_FRAME_BUF_MAX ? cap * 2 : DNS_FRAME_BUF_MAX;
}
