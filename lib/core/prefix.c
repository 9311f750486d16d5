/*
 * Address prefixes for access lists (prefix.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "addr.h"
#include "prefix.h"

int prefix_parse(const char *text, struct prefix *out)
{
	char buf[INET6_ADDRSTRLEN + 8];
	if (strlen(text) >= sizeof(buf))
		return -1;
	strcpy(buf, text);
	char *slash = strchr(buf, '/');
	if (slash)
		*slash = 0;
	memset(out, 0, sizeof(*out));
	int family;
	if (!ip_parse(buf, &family, out->addr))
		return -1;
	unsigned max = family == AF_INET ? 32 : 128, len = max;
	if (slash) {
		char *end;
		unsigned long v = strtoul(slash + 1, &end, 10);
		if (end == slash + 1 || *end || v > max)
			return -1;
		len = (unsigned)v;
	}
	out->family = (uint8_t)family;
	out->len = (uint8_t)len;
	return 0;
}

bool prefix_contains(const struct prefix *p, int family, const uint8_t *addr)
{
	if (p->family != family)
		return false;
	unsigned full = p->len / 8, rest = p->len % 8;
	/* a byte or two for the usual prefix: no call to memcmp (inrpd asks on every UDP query) */
	for (unsigned i = 0; i < full; i++)
		if (p->addr[i] != addr[i])
			return false;
	if (rest == 0)
		return true;
	uint8_t mask = (uint8_t)(0xff << (8 - rest));
	return (p->addr[full] & mask) == (addr[full] & mask);
}

bool prefix_list_has(const struct prefix *list, unsigned n, int family, const uint8_t *addr)
{
	for (unsigned i = 0; i < n; i++)
		if (prefix_contains(&list[i], family, addr))
			return true;
	return false;
}

int prefix_sockaddr_addr(const struct sockaddr *sa, uint8_t out[16])
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	struct ip_addr a;
	if (!sockaddr_ip(sa, &a))
		return 0;
	if (a.family == AF_INET6 && memcmp(a.addr, mapped, 12) == 0) {
		memcpy(out, a.addr + 12, 4);
		return AF_INET;
	}
	memcpy(out, a.addr, a.family == AF_INET ? 4 : 16);
	return a.family;
}

bool prefix_list_contains(const struct prefix *list, unsigned n, const struct sockaddr *sa)
{
	uint8_t addr[16];
	int family = prefix_sockaddr_addr(sa, addr);
	return family && prefix_list_has(list, n, family, addr);
}
