/*
 * What IP routing says about the addresses nbrpd depends on: the next hop
 * of every route learned from a peer (the peer's inrpd), every attached
 * content server, and every peer's transport address.  One entry per
 * address, shared and reference-counted by the routes that use it.
 *
 * Without BIRD every address is reachable with metric 0.  With BIRD
 * (bird.c polls it) an entry holds the last answer: reachable or not, the
 * IGP metric and the BGP AS path length to it, and the protocol the route
 * came from.  When that changes, the routes through it are decided again
 * (rib.c): an unreachable next hop makes them unusable, and metrics break
 * ties after the content-level distance.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "log.h"
#include "nbrpd.h"

#define NEXTHOP_BUCKETS 1024

static size_t nh_hash(int family, const uint8_t *addr)
{
	uint64_t h = 1469598103934665603ull ^ (uint64_t)family;
	for (unsigned i = 0; i < (family == AF_INET ? 4u : 16u); i++) {
		h ^= addr[i];
		h *= 1099511628211ull;
	}
	return (size_t)h % NEXTHOP_BUCKETS;
}

struct nexthop *nexthop_get(struct nbrpd *d, int family, const uint8_t *addr)
{
	if (!d->nexthops) {
		d->nexthops = calloc(NEXTHOP_BUCKETS, sizeof(*d->nexthops));
		if (!d->nexthops)
			return NULL;
	}
	unsigned alen = family == AF_INET ? 4 : 16;
	size_t k = nh_hash(family, addr);
	for (struct nexthop *nh = d->nexthops[k]; nh; nh = nh->hnext)
		if (nh->family == family && memcmp(nh->addr, addr, alen) == 0) {
			nh->refs++;
			return nh;
		}
	struct nexthop *nh = calloc(1, sizeof(*nh));
	if (!nh)
		return NULL;
	nh->family = (uint8_t)family;
	memcpy(nh->addr, addr, alen);
	nh->reachable = true;           /* until IP routing says otherwise */
	nh->refs = 1;
	nh->hnext = d->nexthops[k];
	d->nexthops[k] = nh;
	d->nnexthops++;
	nexthop_added(d, nh);
	return nh;
}

struct nexthop *nexthop_lookup(struct nbrpd *d, int family, const uint8_t *addr)
{
	if (!d->nexthops)
		return NULL;
	unsigned alen = family == AF_INET ? 4 : 16;
	for (struct nexthop *nh = d->nexthops[nh_hash(family, addr)]; nh; nh = nh->hnext)
		if (nh->family == family && memcmp(nh->addr, addr, alen) == 0)
			return nh;
	return NULL;
}

void nexthop_put(struct nbrpd *d, struct nexthop *nh)
{
	if (!nh || --nh->refs > 0)
		return;
	struct nexthop **pp = &d->nexthops[nh_hash(nh->family, nh->addr)];
	while (*pp != nh)
		pp = &(*pp)->hnext;
	*pp = nh->hnext;
	d->nnexthops--;
	free(nh);
}

void nexthop_walk(struct nbrpd *d, void (*fn)(struct nbrpd *d, struct nexthop *nh, void *arg), void *arg)
{
	if (!d->nexthops)
		return;
	for (size_t i = 0; i < NEXTHOP_BUCKETS; i++) {
		struct nexthop *nh = d->nexthops[i], *next;
		for (; nh; nh = next) {
			next = nh->hnext;
			fn(d, nh, arg);
		}
	}
}

const char *nexthop_format(const struct nexthop *nh, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];
	if (!inet_ntop(nh->family, nh->addr, a, sizeof(a)))
		strcpy(a, "?");
	if (!nh->known)
		snprintf(buf, len, "%s: %s", a, "no word from IP routing");
	else if (!nh->reachable)
		snprintf(buf, len, "%s: unreachable", a);
	else
		snprintf(buf, len, "%s: reachable via %s, IGP metric %u, AS path %u", a,
			 nh->protocol[0] ? nh->protocol : "?", nh->igp_metric, nh->as_path_len);
	return buf;
}

void nexthop_update(struct nbrpd *d, struct nexthop *nh, bool reachable, uint32_t igp_metric,
		    uint32_t as_path_len, const char *protocol)
{
	bool flip = nh->known ? nh->reachable != reachable : !reachable;
	bool changed = !nh->known || nh->reachable != reachable || nh->igp_metric != igp_metric ||
		       nh->as_path_len != as_path_len;
	nh->known = true;
	nh->reachable = reachable;
	nh->igp_metric = igp_metric;
	nh->as_path_len = as_path_len;
	snprintf(nh->protocol, sizeof(nh->protocol), "%s", protocol ? protocol : "");
	if (flip) {
		char buf[200];
		log_info("IP routing: %s", nexthop_format(nh, buf, sizeof(buf)));
		nh->unreachable_since = reachable ? 0 : uv_now(d->loop);
	}
	if (changed)
		rib_nexthop_changed(d, nh);
}

void nexthop_free_all(struct nbrpd *d)
{
	if (!d->nexthops)
		return;
	for (size_t i = 0; i < NEXTHOP_BUCKETS; i++) {
		struct nexthop *nh = d->nexthops[i];
		while (nh) {
			struct nexthop *n = nh->hnext;
			free(nh);
			nh = n;
		}
	}
	free(d->nexthops);
	d->nexthops = NULL;
}
