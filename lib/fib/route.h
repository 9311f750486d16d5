/*
 * What the FIB knows about a name: a ranked set of routes, best first.
 * Route sets are immutable and interned, so the millions of names that
 * share a next hop share one set, and a set can be read without locks
 * while the writer publishes a replacement.
 */
#ifndef CR_ROUTE_H
#define CR_ROUTE_H

#include <stdint.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <urcu-qsbr.h>

#include "addr.h"
#include "name.h"

#define ROUTESET_MAX_ROUTES 16

enum route_kind {
	ROUTE_SERVER = 1,       /* content server attached here: answer with its address */
	ROUTE_ROUTER = 2,       /* next content router: forward the query to its inrpd */
};

struct route {
	uint8_t kind;           /* enum route_kind */
	uint8_t family;         /* AF_INET or AF_INET6 */
	uint16_t port;          /* host order; INRP port of a router, unused for servers */
	uint32_t load_ms;       /* expected response latency, 0 if unknown */
	uint8_t addr[16];       /* IPv4 in the first 4 bytes */
	/* the router at the end of the route's path (this one for its own
	 * servers) as inrp_origin_tag names it, 0 if not known: an answer
	 * cached at every router on the way is known stale when the name
	 * moves to another origin behind the same hop, and one from another
	 * origin (INRP's response option says) is not cached under it */
	uint32_t origin;
};

struct routeset {
	struct rcu_head rcu;
	uint32_t refs;          /* touched by the FIB writer only */
	uint32_t id;            /* slot in the FIB's set table */
	uint64_t hash;
	bool has_redirect;      /* the name is an alias: restart resolution at redirect */
	uint8_t count;
	struct name redirect;
	struct route routes[];  /* ranked, best first */
};

/* Fills a route from "192.0.2.1" or "2001:db8::1"; false if not an address. */
bool route_addr_parse(struct route *r, const char *text);
/* Writes the address as text; buf needs INET6_ADDRSTRLEN bytes. */
const char *route_addr_format(const struct route *r, char *buf, size_t len);
bool route_equal(const struct route *a, const struct route *b);
socklen_t route_sockaddr(const struct route *r, struct sockaddr_storage *ss);
/* Where a router route's queries go: its address and port. */
struct ip_endpoint route_endpoint(const struct route *r);

#endif
