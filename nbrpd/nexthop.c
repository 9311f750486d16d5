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
 * (through the `changed` callback, which the RDE registers): an unreachable
 * next hop makes them unusable, and metrics break ties after the
 * content-level distance.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "log.h"
#include "nexthop.h"

#define NEXTHOP_BUCKETS 1024

struct nexthop_table {
	uv_loop_t *loop;
	struct nexthop *buckets[NEXTHOP_BUCKETS];
	unsigned count;
	nexthop_fn added, changed;
	void *added_arg, *changed_arg;
};

struct nexthop_table *nexthop_table_new(uv_loop_t *loop)
{
	struct nexthop_table *t = calloc(1, sizeof(*t));
	if (t)
		t->loop = loop;
	return t;
}

void nexthop_on_added(struct nexthop_table *t, nexthop_fn added, void *arg)
{
	t->added = added;
	t->added_arg = arg;
}

void nexthop_on_changed(struct nexthop_table *t, nexthop_fn changed, void *arg)
{
	t->changed = changed;
	t->changed_arg = arg;
}

unsigned nexthop_count(const struct nexthop_table *t)
{
	return t->count;
}

static size_t nh_hash(int family, const uint8_t *addr)
{
	return (size_t)(ip_hash(family, addr) % NEXTHOP_BUCKETS);
}

struct nexthop *nexthop_get(struct nexthop_table *t, int family, const uint8_t *addr)
{
	unsigned alen = family == AF_INET ? 4 : 16;
	size_t k = nh_hash(family, addr);
	for (struct nexthop *nh = t->buckets[k]; nh; nh = nh->hnext)
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
	nh->hnext = t->buckets[k];
	t->buckets[k] = nh;
	t->count++;
	if (t->added)
		t->added(t->added_arg, nh);
	return nh;
}

struct nexthop *nexthop_lookup(struct nexthop_table *t, int family, const uint8_t *addr)
{
	unsigned alen = family == AF_INET ? 4 : 16;
	for (struct nexthop *nh = t->buckets[nh_hash(family, addr)]; nh; nh = nh->hnext)
		if (nh->family == family && memcmp(nh->addr, addr, alen) == 0)
			return nh;
	return NULL;
}

void nexthop_put(struct nexthop_table *t, struct nexthop *nh)
{
	if (!nh || --nh->refs > 0)
		return;
	struct nexthop **pp = &t->buckets[nh_hash(nh->family, nh->addr)];
	while (*pp != nh)
		pp = &(*pp)->hnext;
	*pp = nh->hnext;
	t->count--;
	free(nh);
}

void nexthop_walk(struct nexthop_table *t, nexthop_fn fn, void *arg)
{
	for (size_t i = 0; i < NEXTHOP_BUCKETS; i++) {
		struct nexthop *nh = t->buckets[i], *next;
		for (; nh; nh = next) {
			next = nh->hnext;
			fn(arg, nh);
		}
	}
}

const char *nexthop_format(const struct nexthop *nh, char *buf, size_t len)
{
	char a[IP_TEXT_MAX];
	ip_format(nh->family, nh->addr, a, sizeof(a));
	if (!nh->known)
		snprintf(buf, len, "%s: %s", a, "no word from IP routing");
	else if (!nh->reachable)
		snprintf(buf, len, "%s: unreachable", a);
	else
		snprintf(buf, len, "%s: reachable via %s, IGP metric %u, AS path %u", a,
			 nh->protocol[0] ? nh->protocol : "?", nh->igp_metric, nh->as_path_len);
	return buf;
}

void nexthop_update(struct nexthop_table *t, struct nexthop *nh, bool reachable, uint32_t igp_metric,
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
		nh->unreachable_since = reachable ? 0 : uv_now(t->loop);
	}
	if (changed && t->changed)
		t->changed(t->changed_arg, nh);
}

void nexthop_table_free(struct nexthop_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < NEXTHOP_BUCKETS; i++) {
		struct nexthop *nh = t->buckets[i];
		while (nh) {
			struct nexthop *n = nh->hnext;
			free(nh);
			nh = n;
		}
	}
	free(t);
}
