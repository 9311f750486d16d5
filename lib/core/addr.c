#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "addr.h"
#include "hashkey.h"

const char *ip_format(int family, const uint8_t *addr, char *buf, size_t len)
{
	if ((family != AF_INET && family != AF_INET6) || !inet_ntop(family, addr, buf, (socklen_t)len))
		snprintf(buf, len, "?");
	return buf;
}

bool ip_parse(const char *text, int *family, uint8_t addr[16])
{
	memset(addr, 0, 16);
	if (inet_pton(AF_INET, text, addr) == 1)
		*family = AF_INET;
	else if (inet_pton(AF_INET6, text, addr) == 1)
		*family = AF_INET6;
	else
		return false;
	return true;
}

const char *ip_endpoint_format(const struct ip_endpoint *e, char *buf, size_t len)
{
	char a[IP_TEXT_MAX];
	snprintf(buf, len, "%s port %u", ip_format(e->family, e->addr, a, sizeof(a)), (unsigned)e->port);
	return buf;
}

bool ip_equal(int family_a, const uint8_t *a, int family_b, const uint8_t *b)
{
	return family_a == family_b && memcmp(a, b, family_a == AF_INET ? 4 : 16) == 0;
}

/* Over what ip_equal and ip_endpoint_equal compare. */
uint64_t ip_hash(int family, const uint8_t *addr)
{
	uint8_t k[17] = { (uint8_t)family };
	memcpy(k + 1, addr, family == AF_INET ? 4 : 16);
	return hashkey64(k, family == AF_INET ? 5 : 17);
}

uint64_t ip_endpoint_hash(const struct ip_endpoint *e)
{
	uint8_t k[19] = { (uint8_t)e->family, (uint8_t)(e->port >> 8), (uint8_t)e->port };
	memcpy(k + 3, e->addr, e->family == AF_INET ? 4 : 16);
	return hashkey64(k, e->family == AF_INET ? 7 : 19);
}

socklen_t sockaddr_from_bytes(int family, const uint8_t *addr, uint16_t port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		memcpy(&sin->sin_addr, addr, 4);
		return sizeof(*sin);
	}
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	sin6->sin6_family = AF_INET6;
	sin6->sin6_port = htons(port);
	memcpy(&sin6->sin6_addr, addr, 16);
	return sizeof(*sin6);
}

bool sockaddr_ip(const struct sockaddr *sa, struct ip_addr *out)
{
	memset(out, 0, sizeof(*out));
	if (sa->sa_family == AF_INET)
		memcpy(out->addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	else if (sa->sa_family == AF_INET6)
		memcpy(out->addr, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	else
		return false;
	out->family = sa->sa_family;
	return true;
}

const char *sockaddr_format(const struct sockaddr *sa, char *buf, size_t len)
{
	struct ip_addr a;
	sockaddr_ip(sa, &a);
	return ip_format(a.family, a.addr, buf, len);
}

uint16_t sockaddr_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return 0;
}

const char *sockaddr_format_port(const struct sockaddr *sa, char *buf, size_t len)
{
	char a[IP_TEXT_MAX];
	snprintf(buf, len, "%s#%u", sockaddr_format(sa, a, sizeof(a)), (unsigned)sockaddr_port(sa));
	return buf;
}

bool ip_is_any(int family, const uint8_t *addr)
{
	static const uint8_t zero[16];
	return memcmp(addr, zero, family == AF_INET6 ? 16 : 4) == 0;
}
