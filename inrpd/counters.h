/*
 * Counters, one block per thread, and the answer latency histogram in it;
 * counters.c sums them, main.c names them for `show counters`.
 */
#ifndef INRPD_COUNTERS_H
#define INRPD_COUNTERS_H

#include <stdint.h>

#include "proxyv2.h"

/*
 * How long answers take, from the query's arrival to the answer handed to
 * the kernel, by how they were made: here (local routes, and every error
 * answered at once), through the next content router, through an
 * upstream.  A histogram per thread, in the counters below.
 */
enum inrpd_path { INRPD_PATH_LOCAL, INRPD_PATH_FORWARDED, INRPD_PATH_FALLBACK, INRPD_PATHS };
#define INRPD_LAT_BOUNDS_US { 50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, \
			      100000, 250000, 500000, 1000000, 2500000 }
#define INRPD_LAT_BUCKETS 15
struct inrpd_latency {
	uint64_t count[INRPD_PATHS][INRPD_LAT_BUCKETS + 1];     /* the last: above every bound */
	uint64_t sum_us[INRPD_PATHS];
};

/*
 * Counters, one block per thread.  Only the owning thread writes (plain
 * relaxed stores, no read-modify-write shared between CPUs); others read
 * them with relaxed loads when summing.
 */
struct inrpd_counters {
	uint64_t queries;               /* messages received */
	uint64_t answered;              /* responses sent, any rcode */
	uint64_t formerr;
	uint64_t refused;
	uint64_t truncated;
	uint64_t dropped;               /* no response: not a query, or could not send */
	uint64_t local;                 /* answered from this router's own servers */
	uint64_t forwarded;             /* sent on to the next content router */
	uint64_t fallback;              /* sent to the upstream resolvers */
	uint64_t servfail;              /* all alternates failed, loops, hop limit */
	uint64_t loops;                 /* queries that came back to us */
	uint64_t acl_refused;           /* fallback refused: client outside allow-recursion */
	uint64_t pending_full;          /* no room for one more query in flight */
	uint64_t bad_upstream;          /* responses that were not ours or did not decode */
	/* ... of which, why (forward.c): possible spoofing */
	uint64_t fwd_wrong_source;      /* not from the address and port asked */
	uint64_t fwd_bad_id;            /* not the id of the query in flight */
	uint64_t fwd_bad_cookie;        /* not our client cookie, or none from a hop that speaks cookies */
	uint64_t fwd_0x20_mismatch;     /* upstream-0x20: the question not in the case asked */
	uint64_t fwd_no_socket;         /* queries failed: no socket to ask from (fd limit) */
	uint64_t upstream_tcp;          /* truncated answers asked again over TCP (TCP clients) */
	uint64_t upstream_tcp_full;     /* ... relayed truncated instead: no connection to be had */
	struct inrpd_latency lat;       /* not in "show counters": metrics.c's histogram */
	uint64_t nodata;                /* routed names: NOERROR, no record of the type, SOA */
	uint64_t chaos;                 /* CHAOS TXT id.server, version.bind, ... answered */
	uint64_t notimp;                /* opcodes other than QUERY */
	uint64_t hop_failed;            /* SERVFAIL/REFUSED from a hop: next alternate tried */
	uint64_t rrl_dropped;           /* over the rate limit: no answer */
	uint64_t rrl_slipped;           /* over the rate limit: a truncated answer (BADCOOKIE for a client cookie) */
	uint64_t amp_truncated;         /* TC: too big for an unproven client's query */
	uint64_t cookies;               /* queries with a valid server cookie */
	uint64_t badcookie;             /* BADCOOKIE: a server cookie not ours or too old, or a client cookie alone over the rate limit */
	uint64_t cached;                /* answered from the packet cache */
	uint64_t stale;                 /* ... with an expired answer, every hop failing */
	uint64_t no_route;              /* a router asked for a name we have no route for */
	uint64_t hop_behind;            /* a hop said no route, or answered from another origin: asked again */
	uint64_t other_origin;          /* relayed from another origin than our route's: not cached */
	uint64_t rerouted;              /* paused for a hop behind us, gone on by the name's new routes */
	uint64_t refreshed;             /* questions asked lately fetched again after their route changed */
	uint64_t tcp_evicted;           /* TCP connections closed, idle the longest, to make room for a new one */
	uint64_t tcp_full;              /* TCP connections refused: every one had a query in flight */
	/* PROXY v2 headers (proxy.h): datagrams or connections */
	uint64_t proxy_accepted;        /* from proxy-protocol-from, valid */
	uint64_t proxy_refused;         /* a header from elsewhere */
	uint64_t proxy_missing;         /* from proxy-protocol-from, no header */
	uint64_t proxy_bad[PROXYV2_STATUSES];   /* from proxy-protocol-from, malformed: by proxyv2_status */
	uint64_t dnstap_sent;           /* dnstap messages handed to the writer thread (tap.h) */
	uint64_t dnstap_dropped;        /* ... not: no reader connected, or its queue full */
	uint64_t in_flight;             /* a gauge: queries in the forwarding engine now (max-pending bounds it) */
} __attribute__((aligned(64)));

#define CNT_INC(c, field) \
	__atomic_store_n(&(c)->field, __atomic_load_n(&(c)->field, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED)
#define CNT_ADD(c, field, n) \
	__atomic_store_n(&(c)->field, __atomic_load_n(&(c)->field, __ATOMIC_RELAXED) + (n), __ATOMIC_RELAXED)
#define CNT_SET(c, field, v) __atomic_store_n(&(c)->field, (v), __ATOMIC_RELAXED)

void inrpd_counters_add(struct inrpd_counters *sum, const struct inrpd_counters *c);

static inline void inrpd_latency_observe(struct inrpd_counters *c, enum inrpd_path path, uint64_t us,
					 uint64_t n)
{
	static const uint32_t bounds[INRPD_LAT_BUCKETS] = INRPD_LAT_BOUNDS_US;
	unsigned b = 0;
	while (b < INRPD_LAT_BUCKETS && us > bounds[b])
		b++;
	CNT_ADD(c, lat.count[path][b], n);
	CNT_ADD(c, lat.sum_us[path], us * n);
}

#endif
