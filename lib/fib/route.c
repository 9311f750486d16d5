#include <string.h>
#include <sys/socket.h>

#include "route.h"

bool route_addr_parse(struct route *r, const char *text)
{
	int family;
	if (!ip_parse(text, &family, r->addr))
		return false;
	r->family = (uint8_t)family;
	return true;
}

const char *route_addr_format(const struct route *r, char *buf, size_t len)
{
	return ip_format(r->family == AF_INET6 ? AF_INET6 : AF_INET, r->addr, buf, len);
}

bool route_equal(const struct route *a, const struct route *b)
{
	return a->kind == b->kind && a->family == b->family && a->port == b->port &&
	       a->load_ms == b->load_ms && a->origin == b->origin &&
	       memcmp(a->addr, b->addr, sizeof(a->addr)) == 0;
}

struct ip_endpoint route_endpoint(const struct route *r)
{
	struct ip_endpoint e = { .family = r->family, .port = r->port };
	memcpy(e.addr, r->addr, sizeof(e.addr));
	return e;
}

socklen_t route_sockaddr(const struct route *r, struct sockaddr_storage *ss)
{
	return sockaddr_from_bytes(r->family, r->addr, r->port, ss);
}
