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
 * shared.  A table entry per prefix, picked by a keyed hash (hashkey.h)
 * so nobody can tell which prefixes share one.  An entry stays its
 * prefix's until its bucket is full again: a prefix landing on it before
 * that shares its limit (rrl_check says why), so a flood can only make
 * the limits of prefixes in its entry tighter, never reset them.
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

#define XXH_INLINE_ALL                  /* hashkey64 inlined: every outsider's answer pays it */
#include <xxhash.h>

#include "hashkey.h"
#include "rrl.h"

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

/* The prefix, with its family: /24 for IPv4, /56 for IPv6. */
static uint64_t prefix_key(int family, const uint8_t *addr)
{
	uint64_t key = family == AF_INET ? 4 : 6;
	unsigned n = family == AF_INET ? 3 : 7;
	for (unsigned i = 0; i < n; i++)
		key = key << 8 | addr[i];
	return key;
}

static unsigned key_slot(uint64_t key)
{
	return (unsigned)(hashkey64(&key, sizeof(key)) % RRL_BUCKETS);
}

unsigned rrl_slot(int family, const uint8_t *addr)
{
	return key_slot(prefix_key(family, addr));
}

enum rrl_verdict rrl_check(struct rrl *r, const struct inrpd_runtime *rt, int family,
			   const uint8_t *addr, uint64_t now_ms)
{
	if (!r || rt->rrl_rate == 0)
		return RRL_PASS;
	uint64_t key = prefix_key(family, addr);
	struct bucket *b = &r->b[key_slot(key)];
	int64_t rate = rt->rrl_rate / r->share ? rt->rrl_rate / r->share : 1;
	int64_t burst = rate * 1000;
	if (now_ms > b->last_ms) {
		uint64_t idle = now_ms - b->last_ms;    /* a second fills any bucket: no overflow */
		b->tokens = idle >= 1000 ? burst : b->tokens + (int64_t)idle * rate;
		if (b->tokens > burst)
			b->tokens = burst;
		b->last_ms = now_ms;
	}
	/*
	 * Another prefix's entry becomes ours only when free or full: a full
	 * bucket limits no one, so taking it resets nothing.  One still short
	 * of tokens is shared instead, at the cost of a tighter limit for
	 * both; were it reset, queries from a prefix in the same entry would
	 * keep refilling it and a flood at a victim's address would be
	 * answered whole.  One entry looked at, no second choice: the check
	 * is on every outsider's answer, and the key keeps a flood from
	 * choosing whom it shares with.
	 */
	if (b->key != key && (b->key == 0 || b->tokens >= burst)) {
		b->key = key;
		b->tokens = burst;
		b->last_ms = now_ms;
		b->limited = 0;
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
	return (size_t)(ip_hash(family, addr) % ROUTERS_MAX);
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
