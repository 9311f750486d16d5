/*
 * answer.c: the decision for one query and every answer a client gets,
 * relayed ones included; the packet cache's keys and entries.
 */
#ifndef INRPD_ANSWER_H
#define INRPD_ANSWER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "cache.h"
#include "cookie.h"
#include "counters.h"
#include "dns.h"
#include "fib.h"
#include "inrp.h"
#include "runtime.h"

#define INRPD_MAX_REDIRECTS     8       /* CNAMEs in one answer */
#define INRPD_AMPLIFICATION     3       /* an unproven client's answer: at most 3x its query */
#define INRPD_SERVFAIL_RETRY_MS 100     /* a held SERVFAIL this old: the next query goes out again */

/*
 * What a query needs when it cannot be answered at once: the next content
 * routers (or upstream resolvers) to try, ranked, and what to tell them.
 */
struct fwd_request {
	struct dns_query q;             /* the client's query */
	bool limit_udp;                 /* answer within the client's UDP limit */
	bool client_inrp;               /* the client is a router: answer with an INRP option */
	bool fallback;                  /* upstream resolvers, not content routers */
	bool upstream_0x20;             /* ... asked with the name's case randomised */
	struct inrp_query_opt inrp;     /* to send on: our path, hop limit, exclusions */
	struct name target;             /* the name to ask about (after redirects) */
	uint8_t nchain;                 /* CNAME targets, in order, for the answer */
	uint16_t chain_len;
	uint8_t chain[INRPD_MAX_REDIRECTS * NAME_MAX_WIRE];
	uint32_t answer_ttl;            /* for the CNAMEs */
	uint16_t policy_ede;            /* a response policy's CNAME rewrite: its zone's extended error; 0 none */
	uint8_t nsid_len;               /* >0: the client asked for our NSID, and it is on */
	bool cookie;                    /* the client sent a cookie: ours goes back */
	uint16_t udp_cap;               /* an unproven client's answer limit; 0: none */
	uint8_t cookie_out[COOKIE_CLIENT_LEN + COOKIE_SERVER_LEN];
	char nsid[INRPD_ROUTER_NAME_MAX];
	uint16_t edns_udp_size;
	uint32_t budget_ms;             /* the whole query, all attempts */
	uint32_t probe_ms;              /* hop-probe-interval */
	uint64_t router_id;             /* ours, when the request was made */
	uint8_t ncand;
	struct route cand[ROUTESET_MAX_ROUTES];
	/* the packet cache: where the answer goes once it comes */
	bool cacheable;
	uint64_t cache_fp;              /* how the name was routed (cache.h) */
	struct cache_limits cache_limits;
	uint32_t cache_stale_s;
	struct cache_key cache_key;
};

#define INRPD_ANSWER_MAX (DNS_RESPONSE_MAX(ROUTESET_MAX_ROUTES) + \
			  INRPD_MAX_REDIRECTS * (12 + NAME_MAX_WIRE) + 4 + INRP_RESPONSE_OPT_LEN + \
			  INRPD_RECORDS_MAX + 4 + INRPD_ROUTER_NAME_MAX + 64)
#define INRPD_FORWARD ((size_t)-1)
/* Room for configured records, or the SOA of a negative answer, in a local answer. */
#define INRPD_RECORDS_MAX 4096

/*
 * What a thread answers queries with: each UDP worker has one, the TCP
 * thread one, and a UDP worker's refresh pass one of its own (counters
 * apart).  rt, chan, policy and now_ms are the batch's (inrpd_worker_begin);
 * the rest is the thread's own, so nothing in it is shared.
 */
struct fwd_engine;
struct inrpd_policy;
struct rrl;
struct inrpd_worker {
	const struct inrpd_runtime *rt;
	const struct fib *chan;         /* nbrpd's routes (fibsync.h); NULL: none */
	uint64_t now_ms;                /* inrpd_now_ms(): rate limits and cache ages */
	struct inrpd_counters *cnt;
	struct cache *cache;            /* its shard of the packet cache; NULL: none */
	struct rrl *rrl;                /* its rate limits; NULL: none */
	struct fwd_engine *fwd;         /* its forwarding engine (forward.h) */
	struct tap_queue *tap;          /* its dnstap queue (tap.h); NULL: off */
	const struct inrpd_policy *policy; /* the batch's response policy (policy.h); NULL: none */
	const struct inrpd_hint *hint;  /* the next query's, made in this batch (inrpd_buckets); NULL: none */
	bool udp;                       /* clients over UDP: their size limit, and RRL */
	/* the batch's last client asked about its exemption from RRL (family 0: none yet), and whether it is */
	struct ip_addr exempt_from;
	bool exempt_was;
	struct fwd_request req;         /* the query being answered */
};

/*
 * A batch begins: the runtime, nbrpd's routes and the response policy in
 * force now, used until the owner's next quiescent state (it is an online
 * RCU reader meanwhile), and the coarse clock, read once for the batch.
 */
void inrpd_worker_begin(struct inrpd_worker *w);

/*
 * answer.c: answers one message from client into out (INRPD_ANSWER_MAX
 * bytes).  Returns the response length, 0 for no response, or
 * INRPD_FORWARD when w->req was filled for the forwarding engine.
 */
size_t inrpd_answer(struct inrpd_worker *w, const uint8_t *pkt, size_t len,
		    const struct sockaddr *client, uint8_t *out);
/*
 * Where the query's lookups will read first (fib.h's hints, one for each
 * table): a UDP worker fetches a whole batch's buckets at once before
 * answering it, so at a million names their cache misses overlap instead
 * of stalling one query at a time, and answers each query with its hint
 * (inrpd_worker's hint), so the name is not hashed again.
 */
struct inrpd_hint {
	const uint8_t *pkt;             /* the query it was made of */
	struct fib_hint fib[2];         /* the static routes', nbrpd's */
};
static inline void inrpd_buckets(const struct inrpd_worker *w, const uint8_t *pkt, size_t len,
				 struct inrpd_hint *h)
{
	h->pkt = pkt;
	h->fib[0].table = h->fib[1].table = NULL;
	if (len <= DNS_HEADER_LEN)
		return;
	if (w->rt->nroutes > 0)
		fib_buckets_wire(w->rt->fib, pkt + DNS_HEADER_LEN, len - DNS_HEADER_LEN, &h->fib[0]);
	if (w->chan)
		fib_buckets_wire(w->chan, pkt + DNS_HEADER_LEN, len - DNS_HEADER_LEN, &h->fib[1]);
}

/*
 * Reads a word of each bucket the batch's n queries will look in first.
 * Loads, not prefetch hints: in a loop of their own the batch's loads
 * overlap, as the echo floor's do, where after prefetcht0's the lookup's
 * first load of its bucket still waited (three quarters of the lookup's
 * samples under perf); loads cost 2-4% less CPU a query under dnsperf.
 */
static inline void inrpd_hints_fetch(const struct inrpd_hint *h, unsigned n)
{
	uint64_t x = 0;
	for (unsigned i = 0; i < n; i++)
		for (unsigned t = 0; t < 2; t++)
			if (h[i].fib[t].table)
				x ^= __atomic_load_n((const uint64_t *)h[i].fib[t].bucket[0], __ATOMIC_RELAXED) ^
				     __atomic_load_n((const uint64_t *)h[i].fib[t].bucket[1], __ATOMIC_RELAXED);
	__asm__ volatile("" : : "r"(x));        /* the loads are the point, not their value */
}
/* The client's answer from a cache hit (TTLs counted down). */
size_t inrpd_answer_cached(const struct fwd_request *req, const struct cache_hit *hit,
			   uint8_t *out, size_t cap);
/* Keeps a client's answer in the cache if its request may be (the INRP option of
 * the hop that answered, if any, kept with it). */
void inrpd_cache_store(struct cache *cache, const struct fwd_request *req, const uint8_t *msg,
		       size_t len, const struct inrp_response_opt *from_hop);
/* Flushes, shared by every thread's cache; created by main before the workers. */
extern struct cache_flush *inrpd_cache_flush;
/*
 * A query paused for a next router out of step (forward.c): its
 * candidates replaced by the name's routes as they are now, if those
 * changed and still go to next routers only.  Returns whether they did.
 */
bool inrpd_reroute(struct fwd_request *req);

/* What `inrpc show route NAME` says: the route a name takes now. */
struct inrpd_route_view {
	bool found;
	bool from_nbrpd;                /* nbrpd's table (else the configuration's) */
	struct name suffix;             /* the route's name: the longest suffix with routes */
	bool has_redirect;
	struct name redirect;           /* the route rewrites the suffix to this */
	bool own;                       /* the suffix has routes of its own */
	unsigned naggs;                 /* aggregates the suffix is a member of */
	struct name aggs[FIB_MAX_AGGREGATES_PER_NAME];
	unsigned nroutes;               /* the candidates, ranked, as a query would get them */
	struct route routes[ROUTESET_MAX_ROUTES];
};
/* Fills v for n; call on a registered RCU thread (it goes online for the lookup). */
void inrpd_route_view(const struct inrpd_runtime *rt, const struct name *n, struct inrpd_route_view *v);
/*
 * The route fingerprint (struct fwd_request) a client's query for n would
 * look the cache up with now: a client that may recurse, with no INRP
 * option and no response policy.  False when no answer of n is cached
 * under any: answered here, a broken redirect chain, no route and no
 * upstream.  Call on a registered RCU thread, as inrpd_route_view.
 */
bool inrpd_cache_route_fp(const struct inrpd_runtime *rt, const struct name *n, uint64_t *fp);
/* A SERVFAIL (with INRP status if the client is a router, and an extended
 * DNS error saying why) for a request. */
size_t inrpd_answer_servfail(const struct fwd_request *req, uint64_t router_id, uint8_t status,
			     uint8_t *out, size_t cap);
/* The client's answer built from a checked upstream answer; 0 if it does not decode. */
size_t inrpd_answer_relay(const struct fwd_request *req, uint64_t router_id,
			  const uint8_t *pkt, size_t len, const struct dns_upstream_answer *a,
			  const struct inrp_response_opt *from_hop, uint8_t *out, size_t cap);
bool inrpd_acl_allows(const struct inrpd_runtime *rt, const struct sockaddr *client);

#endif
