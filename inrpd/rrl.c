/*
 * Response rate limiting for clients outside allow-recursion that have
 * not proven their address (no valid DNS cookie, over UDP): a token
 * bucket per source prefix (/24 for IPv4, /56 for IPv6), rrl-rate
 * answers a second with a second's burst.  A query over the rate is
 * dropped, except every rrl-slip-th, which gets a truncated answer (TC,
 * the question only: no bigger than the query) so a real client behind a
 * spoofed prefix asks again over TCP (BIND and Knot do the same).
 *
 * Each UDP worker has its own table, with its share of the rate (the
 * kernel spreads a source's queries over the workers), so no state is
 * shared.  A table entry per prefix hash: a colliding prefix takes the
 * entry over with a full bucket (a flood can only make its victims'
 * limits reset, never tighter).
 *
 * Routers: other content routers forward their clients' queries to us
 * from outside allow-recursion.  By default every next-hop router address
 * in our routes (the config's and nbrpd's) is exempt, as are rrl-exempt
 * prefixes; an INRP option proves nothing (anyone can send one).  The
 * router set only grows until a restart: a router that left keeps its
 * exemption, which costs nothing but a looser limit for its address.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "arena.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "inrpd.h"

#define RRL_BUCKETS     4096
#define ROUTERS_MAX     8192    /* router addresses remembered for the exemption */

struct bucket {
	uint64_t key;                   /* 0: free */
	uint64_t last_ms;
	int64_t tokens;                 /* thousandths of an answer */
	uint32_t limited;               /* over the rate since the bucket began */
};

struct rrl {
	unsigned share;                 /* the rate is divided among this many workers */
	struct bucket b[RRL_BUCKETS];
};

/* Fresh pages: a router no outsider asks keeps none of the table resident. */
struct rrl *rrl_create(unsigned share)
{
	struct rrl *r = bigtable_alloc(sizeof(*r), BIGTABLE_SMALL_PAGES);
	if (r)
		r->share = share ? share : 1;
	return r;
}

void rrl_free(struct rrl *r)
{
	bigtable_free(r, sizeof(*r));
}

enum rrl_verdict rrl_check(struct rrl *r, const struct inrpd_runtime *rt, int family,
			   const uint8_t *addr, uint64_t now_ms)
{
	if (!r || rt->rrl_rate == 0)
		return RRL_PASS;
	/* the prefix, with its family, as the key */
	uint64_t key = family == AF_INET ? 4 : 6;
	unsigned n = family == AF_INET ? 3 : 7;         /* /24, /56 */
	for (unsigned i = 0; i < n; i++)
		key = key << 8 | addr[i];
	struct bucket *b = &r->b[XXH3_64bits(&key, sizeof(key)) % RRL_BUCKETS];
	int64_t rate = rt->rrl_rate / r->share ? rt->rrl_rate / r->share : 1;
	int64_t burst = rate * 1000;
	if (b->key != key) {
		b->key = key;
		b->tokens = burst;
		b->last_ms = now_ms;
		b->limited = 0;
	}
	if (now_ms > b->last_ms) {
		b->tokens += (int64_t)(now_ms - b->last_ms) * rate;
		if (b->tokens > burst)
			b->tokens = burst;
		b->last_ms = now_ms;
	}
	if (b->tokens >= 1000) {
		b->tokens -= 1000;
		return RRL_PASS;
	}
	b->limited++;
	if (rt->rrl_slip && b->limited % rt->rrl_slip == 0)
		return RRL_SLIP;
	return RRL_DROP;
}

/* ---- the routers' addresses: written by the main thread, read by all ---- */

struct router_addr {
	uint8_t state;                  /* 0 free, 1 in use: published with release */
	struct ip_addr ip;
};

static struct router_addr routers[ROUTERS_MAX];

static size_t router_slot(int family, const uint8_t *addr)
{
	uint8_t k[17] = { (uint8_t)family };
	memcpy(k + 1, addr, family == AF_INET ? 4 : 16);
	return (size_t)(XXH3_64bits(k, sizeof(k)) % ROUTERS_MAX);
}

void inrpd_routers_add(int family, const uint8_t *addr)
{
	for (size_t i = 0, k = router_slot(family, addr); i < ROUTERS_MAX; i++, k = (k + 1) % ROUTERS_MAX) {
		struct router_addr *r = &routers[k];
		if (__atomic_load_n(&r->state, __ATOMIC_ACQUIRE)) {
			if (ip_equal(r->ip.family, r->ip.addr, family, addr))
				return;
			continue;
		}
		r->ip.family = family;
		memset(r->ip.addr, 0, sizeof(r->ip.addr));
		memcpy(r->ip.addr, addr, family == AF_INET ? 4 : 16);
		__atomic_store_n(&r->state, 1, __ATOMIC_RELEASE);
		return;
	}
	/* full: that router is rate-limited like anyone (rrl-exempt still works) */
}

bool inrpd_routers_has(int family, const uint8_t *addr)
{
	for (size_t i = 0, k = router_slot(family, addr); i < ROUTERS_MAX; i++, k = (k + 1) % ROUTERS_MAX) {
		const struct router_addr *r = &routers[k];
		if (!__atomic_load_n(&r->state, __ATOMIC_ACQUIRE))
			return false;
		if (ip_equal(r->ip.family, r->ip.addr, family, addr))
			return true;
	}
	return false;
}

void inrpd_routers_add_set(const struct route *routes, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (routes[i].kind == ROUTE_ROUTER)
			inrpd_routers_add(routes[i].family, routes[i].addr);
}
