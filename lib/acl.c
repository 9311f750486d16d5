/*
 * Address prefix lists; see acl.h.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "acl.h"

bool acl_prefix_parse(struct acl_prefix *p, const char *text)
{
	char buf[64];
	const char *slash = strchr(text, '/');
	size_t alen = slash ? (size_t)(slash - text) : strlen(text);
	if (alen >= sizeof(buf))
		return false;
	memcpy(buf, text, alen);
	buf[alen] = 0;
	memset(p, 0, sizeof(*p));
	unsigned max;
	if (inet_pton(AF_INET, buf, p->addr) == 1) {
		p->family = AF_INET;
		max = 32;
	} else if (inet_pton(AF_INET6, buf, p->addr) == 1) {
		p->family = AF_INET6;
		max = 128;
	} else {
		return false;
	}
	unsigned len = max;
	if (slash) {
		char *end;
		unsigned long v = strtoul(slash + 1, &end, 10);
		if (!slash[1] || *end || v > max)
			return false;
		len = (unsigned)v;
	}
	p->len = (uint8_t)len;
	return true;
}

static bool prefix_match(const struct acl_prefix *p, const uint8_t *addr)
{
	unsigned bytes = p->len / 8u, bits = p->len % 8u;
	if (memcmp(p->addr, addr, bytes) != 0)
		return false;
	if (bits == 0)
		return true;
	uint8_t mask = (uint8_t)(0xff << (8 - bits));
	return (p->addr[bytes] & mask) == (addr[bytes] & mask);
}

bool acl_allows(const struct acl_prefix *acl, unsigned n, const struct sockaddr *client)
{
	int family = client->sa_family;
	const uint8_t *addr;
	if (family == AF_INET) {
		addr = (const uint8_t *)&((const struct sockaddr_in *)client)->sin_addr;
	} else if (family == AF_INET6) {
		addr = (const uint8_t *)&((const struct sockaddr_in6 *)client)->sin6_addr;
		static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
		if (memcmp(addr, mapped, 12) == 0) {
			addr += 12;
			family = AF_INET;
		}
	} else {
		return false;
	}
	for (unsigned i = 0; i < n; i++)
		if (acl[i].family == family && prefix_match(&acl[i], addr))
			return true;
	return false;
}
