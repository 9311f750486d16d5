/*
 * Address prefixes for access lists (prefix.h).
 */
#include <endian.h>
#include <stdint.h>
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

/*
 * Inlined into the list walk: inrpd asks on every UDP query from outside
 * allow-recursion, through its whole access list and rrl-exempt, so an
 * IPv4 prefix is one masked 32-bit compare, an IPv6 one two 64-bit ones.
 */
static inline bool contains(const struct prefix *p, int family, const uint8_t *addr)
{
	if (p->family != family)
		return false;
	if (family == AF_INET) {
		uint32_t a, n;
		memcpy(&a, addr, 4);
		memcpy(&n, p->addr, 4);
		uint32_t mask = p->len ? htonl(UINT32_MAX << (32 - p->len)) : 0;
		return ((a ^ n) & mask) == 0;
	}
	uint64_t a[2], n[2];
	memcpy(a, addr, 16);
	memcpy(n, p->addr, 16);
	for (unsigned i = 0, bits = p->len; i < 2; i++, bits = bits > 64 ? bits - 64 : 0) {
		uint64_t mask = bits >= 64 ? UINT64_MAX : bits ? UINT64_MAX << (64 - bits) : 0;
		if (((a[i] ^ n[i]) & htobe64(mask)) != 0)
			return false;
	}
	return true;
}

bool prefix_contains(const struct prefix *p, int family, const uint8_t *addr)
{
	return contains(p, family, addr);
}

bool prefix_list_has(const struct prefix *list, unsigned n, int family, const uint8_t *addr)
{
	for (unsigned i = 0; i < n; i++)
		if (contains(&list[i], family, addr))
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
