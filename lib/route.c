#include <arpa/inet.h>
#include <string.h>
#include <sys/socket.h>

#include "route.h"

bool route_addr_parse(struct route *r, const char *text)
{
	memset(r->addr, 0, sizeof(r->addr));
	if (inet_pton(AF_INET, text, r->addr) == 1) {
		r->family = AF_INET;
		return true;
	}
	if (inet_pton(AF_INET6, text, r->addr) == 1) {
		r->family = AF_INET6;
		return true;
	}
	return false;
}

const char *route_addr_format(const struct route *r, char *buf, size_t len)
{
	if (!inet_ntop(r->family == AF_INET6 ? AF_INET6 : AF_INET, r->addr, buf, (socklen_t)len))
		return "?";
	return buf;
}

bool route_equal(const struct route *a, const struct route *b)
{
	return a->kind == b->kind && a->family == b->family && a->port == b->port &&
	       a->load_ms == b->load_ms && memcmp(a->addr, b->addr, sizeof(a->addr)) == 0;
}
