/*
 * The forwarding engine: queries in flight to the next content router or
 * to an upstream resolver (docs/INRP.md: per-query state at each hop,
 * the answer relayed back on the same path, a smoothed RTT per next hop,
 * the next ranked alternate on timeout).
 *
 * One engine per thread, nothing shared: a UDP worker polls its engine's
 * sockets beside its listeners, the main thread drives the TCP one from
 * libuv.  Every query in flight is a slot in a fixed array (max-pending)
 * with its own UDP socket (upsock.c), found from an answer by the socket
 * it came on, and ordered by deadline in a binary heap.  Nothing is
 * allocated per query.
 *
 * Upstream resolvers are each asked up to twice (FWD_UPSTREAM_ROUNDS), as a
 * stub resolver would retry; a next content router only once, since it
 * retries its own alternates within the budget we grant it.
 *
 * An answer of SERVFAIL or REFUSED says the hop cannot deliver (its own
 * alternates gone, a broken upstream, a policy): the next ranked
 * alternate is asked within the budget, as Unbound and dnsdist do, and
 * that hop is not asked again for this query (a loop through it stays a
 * loop).  When none is left the client gets our SERVFAIL, with the INRP
 * status the last hop gave.  NXDOMAIN and NODATA are answers.
 *
 * A hop out of step with our route while routes converge (INRP status
 * no-route: it has none for a name it gave us a route for; or an answer
 * from another origin than the one our route ends at, kept in its cache
 * under its old route) is asked again after a pause (FWD_BEHIND_PAUSE_MS,
 * doubling, FWD_BEHIND_WAITS times): its inrpd may be a few scheduler
 * slices behind its nbrpd, which told us first.  Each time it is asked
 * the name's routes again, which may have moved meanwhile (the hop had
 * withdrawn the route, and so have we now).  Then its answer stands:
 * a no-route is a failure like any other, another origin's answer goes to
 * the client but not into the cache, where it would be served under our
 * route for its whole TTL.
 *
 * Time budget: a query has query-timeout (or what the previous router
 * granted, budget-ms in the INRP option) for all its attempts.  Each
 * attempt gets the remaining time divided by the alternates left, so a
 * router with one route lends the next hop all it has, and a router with
 * alternates keeps time for them; the next router is told a little less
 * than we wait, so it gives up (and answers SERVFAIL) before we do.
 *
 * Choosing among alternates, as Unbound chooses among servers (RTT
 * banding): every candidate has an expected cost, its smoothed RTT plus
 * the load the hop last reported (a hop never asked counts as
 * FWD_UNKNOWN_US, or as nothing when it is the one judged, so a new route
 * is tried; a hop that timed out less than hop-probe-interval ago as very
 * slow).  The candidates within a band of the cheapest (FWD_BAND_MIN_US,
 * or an eighth of the cost) are as good as each other, and of those the
 * best FIB rank is asked: nbrpd ranked them by content distance, which a
 * random pick among equals (Unbound's, for servers of one zone) would
 * throw away.  What is known about a hop passed over goes stale, so a hop
 * that was slow would never be seen to be fast again: a hop outside the
 * band whose RTT is older than hop-probe-interval gets the next query
 * that could go to it (one query per hop per interval, whatever the query
 * rate: a timer, not a fraction of queries, so a busy router does not
 * send hundreds of clients a second the slow way, and an idle one still
 * learns), and that sample replaces the stale RTT instead of being
 * averaged into it.  A probe waits until the preferred hop was asked
 * since the last one, and its answer is not cached, so on a quiet router
 * whose cache absorbs the rest probes cannot become all of its traffic.
 * What is known about a
 * next hop (RTT, load, last timeout) is shared by every engine of the
 * process in one table (relaxed atomics; a lost update costs nothing but
 * a sample), so what one worker learns steers them all; the query,
 * answer and timeout counts are each engine's own.
 *
 * Off-path spoofing (RFC 5452): each attempt goes from a fresh random port
 * (upsock.c) with a fresh id from a CSPRNG, and an answer is taken only on
 * the attempt's socket, from the hop's address and port, with its id and
 * question, so a spoofer guesses about 31 bits per attempt.  With
 * upstream-0x20 the name's letters are in random case too, and the answer
 * must ask in the same case (RFC 5452 9.2: a bit per letter).  Each
 * reason an answer is dropped has its counter (fwd_* in show counters).
 *
 * Every query carries a DNS cookie (RFC 7873): our client cookie for that
 * hop, and the server cookie it last gave us.  A hop's answer with
 * another client cookie is a spoofer's and is dropped, and so is an
 * answer without one from a hop that once gave us a server cookie for
 * ours: it speaks cookies, so a spoofer sent that one; the next router's
 * rate limit lets a query with its valid server cookie through, so the
 * queries one router forwards for many clients are never limited as one
 * unproven source (which starved a router's downstream neighbours while
 * they asked it more than rrl-rate times a second).  BADCOOKIE (the hop
 * restarted with a new secret) gives its fresh cookie, and the query is
 * asked again once with it.
 *
 * Truncated answers (TC: upstream's answer did not fit its UDP limit,
 * which may be lower than the 4096 bytes we advertise): for a client that
 * asked over TCP the engine asks the same hop again over TCP (RFC 7766),
 * as Unbound and dnsdist do, with a fresh id and a fresh share of the
 * budget, and relays that answer; the transport does the TCP I/O
 * (struct fwd_tcp_ops, only the main thread's engine has it).  The TCP
 * exchange is an attempt like any other: its deadline in the heap, a
 * timeout or a failed connection moves on to the next alternate.  A UDP
 * client gets the TC answer as before: it asks us again over TCP, and
 * then this path applies, so the UDP workers need no TCP of their own.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sodium.h>

#include "log.h"
#include "forward.h"
#include "inrpd.h"
#include "tap.h"
#include "upsock.h"
#include "wire.h"

#define FWD_HOPS_MAX            4096            /* next hops tracked per process */
#define FWD_MSG_MAX             65535
#define FWD_UPSTREAM_UDP_SIZE   4096            /* advertised to next hops */
#define FWD_MIN_ATTEMPT_MS      20
#define FWD_UNKNOWN_US          20000   /* the RTT assumed of a hop never asked */
#define FWD_BAND_MIN_US         1000    /* costs this close are equal (or an eighth apart) */
#define FWD_TIMEOUT_PENALTY_US  (60ull * 1000 * 1000)
#define FWD_READS_PER_WAKE      64
#define FWD_UPSTREAM_ROUNDS     2       /* a lost datagram is not a lost query */
#define FWD_BEHIND_PAUSE_MS     4       /* a hop behind us is asked again after this, doubling */
#define FWD_BEHIND_WAITS        4       /* ... at most this many times: 60 ms in all */
#define FWD_RANDOM_BUF          512     /* CSPRNG bytes drawn at a time for ids and 0x20 */

enum { HOP_EMPTY, HOP_WRITING, HOP_READY };

/* What the process knows about one next hop; shared by every engine. */
struct fwd_hop {
	uint8_t state;                  /* enum above; READY published with release */
	struct ip_endpoint ep;          /* the key */
	uint32_t srtt_us;               /* 0: no sample yet */
	uint32_t load_ms;
	uint8_t load_known;
	uint64_t last_sample_us;        /* when srtt_us was last changed */
	uint64_t last_timeout_us;
	uint64_t probe_us;              /* when it was last probed (claimed by CAS) */
	uint8_t client_cookie[COOKIE_CLIENT_LEN];      /* ours for it, set before READY */
	uint8_t cookies;                /* it gave a server cookie for ours: it speaks them */
	/* the server cookie it gave us: a sequence lock (odd: being written),
	 * so a reader copies all of it or none (then asks without, as at first) */
	uint32_t sc_seq;
	uint8_t sc_len;
	uint64_t sc[(COOKIE_OPT_MAX - COOKIE_CLIENT_LEN) / 8];
};

/* One engine's counts for one next hop (same index as the shared table). */
struct fwd_hop_counts {
	uint64_t queries, answers, timeouts;
	uint64_t failures;              /* answers of SERVFAIL or REFUSED */
	uint64_t probes;                /* queries sent to learn its RTT again */
};

static struct fwd_hop hop_table[FWD_HOPS_MAX];
static uint8_t client_secret[COOKIE_SECRET_LEN];      /* our client cookies', one per process */
static pthread_once_t client_secret_once = PTHREAD_ONCE_INIT;

struct fwd_pending {
	bool used;
	uint8_t cur;                    /* candidate in flight */
	uint16_t id;                    /* on the wire */
	uint32_t heap_idx;
	uint32_t tried;                 /* bit per candidate, this round */
	uint32_t failed;                /* bit per candidate that answered SERVFAIL/REFUSED */
	uint8_t rounds_left;            /* upstreams: each is asked twice */
	bool asked;                     /* an attempt was sent: no probe for this query */
	bool probing;                   /* the attempt in flight is a probe */
	bool cookie_retried;            /* asked again after BADCOOKIE */
	bool pausing;                   /* the deadline ends a pause, not an attempt: ask again */
	bool udp_live;                  /* a UDP attempt waits for its answer on the slot's socket */
	bool mixed_case;                /* qcase holds the name as asked (upstream-0x20) */
	uint8_t pauses;                 /* for hops behind us (FWD_BEHIND_WAITS) */
	uint8_t status;                 /* INRP status of the last failure, for our SERVFAIL */
	uint64_t deadline_us;           /* of this attempt */
	uint64_t end_us;                /* of the whole query */
	uint64_t sent_us;
	struct fwd_hop *hop;            /* NULL: the table was full */
	struct fwd_tcp_conn *tcp;       /* the attempt is a TCP exchange; NULL: UDP */
	struct fwd_client client;
	struct fwd_request req;
	uint8_t qcase[NAME_MAX_WIRE];
};

struct fwd_engine {
	fwd_deliver_fn deliver;
	void *ctx;
	struct fwd_tcp_ops tcp;         /* open == NULL: truncated answers are relayed */
	struct inrpd_worker *w;         /* the owner's: its counters, its cache shard */
	struct upsock *up;
	unsigned max_pending;
	unsigned npending;
	struct fwd_pending *slots;
	uint32_t *free_slots;           /* stack of free slot indexes */
	unsigned nfree;
	uint32_t *heap;                 /* slot indexes, earliest deadline first */
	unsigned nready;                /* slots fwd_engine_wait() found readable */
	uint32_t ready[UPSOCK_WAIT_MAX];
	unsigned random_left;           /* unused bytes at the end of random */
	uint8_t random[FWD_RANDOM_BUF];
	struct fwd_hop_counts counts[FWD_HOPS_MAX];
	uint8_t rbuf[FWD_MSG_MAX];
	uint8_t obuf[FWD_MSG_MAX];
};

/* n (at most FWD_RANDOM_BUF) bytes from the CSPRNG, drawn a buffer at a time */
static const uint8_t *random_bytes(struct fwd_engine *e, unsigned n)
{
	if (e->random_left < n) {
		randombytes_buf(e->random, sizeof(e->random));
		e->random_left = sizeof(e->random);
	}
	e->random_left -= n;
	return e->random + e->random_left;
}

/* Time since t; 0 if another thread stamped t after our clock read. */
static uint64_t since(uint64_t now, uint64_t t)
{
	return now > t ? now - t : 0;
}

#define RELAXED_ADD(p, n) __atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + (n), __ATOMIC_RELAXED)

/* ---- next hops ---- */

/*
 * Finds or adds a next hop.  Lock-free: a slot is claimed with a CAS,
 * written, then published; a reader meeting a slot being written waits
 * for it (a few stores), so a hop never gets two slots.
 */
static struct fwd_hop *hop_get(const struct route *r)
{
	struct ip_endpoint ep = route_endpoint(r);
	for (unsigned i = 0, k = (unsigned)ip_endpoint_hash(&ep); i < FWD_HOPS_MAX; i++, k++) {
		struct fwd_hop *h = &hop_table[k % FWD_HOPS_MAX];
		uint8_t st = __atomic_load_n(&h->state, __ATOMIC_ACQUIRE);
		if (st == HOP_EMPTY) {
			uint8_t expect = HOP_EMPTY;
			if (__atomic_compare_exchange_n(&h->state, &expect, HOP_WRITING, false,
							__ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)) {
				h->ep = ep;
				cookie_client_make(client_secret, ep.addr, ep.family == AF_INET ? 4 : 16,
						   ep.port, h->client_cookie);
				__atomic_store_n(&h->state, HOP_READY, __ATOMIC_RELEASE);
				return h;
			}
			st = expect;
		}
		while (st == HOP_WRITING)
			st = __atomic_load_n(&h->state, __ATOMIC_ACQUIRE);
		if (ip_endpoint_equal(&h->ep, &ep))
			return h;
	}
	return NULL;                    /* full: this hop goes untracked */
}

/* Copies the hop's server cookie into out; returns its length, 0: none (or being written). */
static size_t hop_server_cookie(const struct fwd_hop *h, uint8_t *out)
{
	uint32_t seq = __atomic_load_n(&h->sc_seq, __ATOMIC_ACQUIRE);
	if (seq & 1)
		return 0;
	size_t len = __atomic_load_n(&h->sc_len, __ATOMIC_RELAXED);
	uint64_t w[sizeof(h->sc) / 8];
	for (size_t i = 0; i < sizeof(h->sc) / 8; i++)
		w[i] = __atomic_load_n(&h->sc[i], __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&h->sc_seq, __ATOMIC_RELAXED) != seq || len > sizeof(w))
		return 0;
	memcpy(out, w, len);
	return len;
}

/* Keeps the server cookie a hop sent, if new; another engine writing it wins. */
static void hop_set_server_cookie(struct fwd_hop *h, const uint8_t *sc, size_t len)
{
	uint8_t cur[sizeof(h->sc)];
	if (len > sizeof(h->sc) || (hop_server_cookie(h, cur) == len && memcmp(cur, sc, len) == 0))
		return;
	uint32_t seq = __atomic_load_n(&h->sc_seq, __ATOMIC_RELAXED);
	if ((seq & 1) || !__atomic_compare_exchange_n(&h->sc_seq, &seq, seq + 1, false,
						       __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	uint64_t w[sizeof(h->sc) / 8] = { 0 };
	memcpy(w, sc, len);
	for (size_t i = 0; i < sizeof(h->sc) / 8; i++)
		__atomic_store_n(&h->sc[i], w[i], __ATOMIC_RELAXED);
	__atomic_store_n(&h->sc_len, (uint8_t)len, __ATOMIC_RELAXED);
	__atomic_store_n(&h->sc_seq, seq + 2, __ATOMIC_RELEASE);
}

static struct fwd_hop_counts *hop_counts(struct fwd_engine *e, const struct fwd_hop *h)
{
	return &e->counts[h - hop_table];
}

/* A probe's sample replaces the stale RTT that kept the hop out of use. */
static void hop_sample(struct fwd_hop *h, uint64_t rtt_us, uint64_t now, bool probe)
{
	uint32_t s = __atomic_load_n(&h->srtt_us, __ATOMIC_RELAXED);
	uint32_t sample = rtt_us > UINT32_MAX ? UINT32_MAX : (uint32_t)rtt_us;
	if (sample == 0)
		sample = 1;
	if (s != 0 && !probe)
		sample = (uint32_t)(((uint64_t)s * 7 + sample) / 8);   /* RFC 6298 alpha */
	__atomic_store_n(&h->srtt_us, sample, __ATOMIC_RELAXED);
	__atomic_store_n(&h->last_sample_us, now, __ATOMIC_RELAXED);
}

void fwd_engine_hops(const struct fwd_engine *e, fwd_hop_fn fn, void *arg)
{
	for (unsigned i = 0; i < FWD_HOPS_MAX; i++) {
		const struct fwd_hop *h = &hop_table[i];
		if (__atomic_load_n(&h->state, __ATOMIC_ACQUIRE) != HOP_READY)
			continue;
		const struct fwd_hop_counts *c = &e->counts[i];
		struct fwd_hop_stats st = {
			.hop = h->ep,
			.queries = __atomic_load_n(&c->queries, __ATOMIC_RELAXED),
			.answers = __atomic_load_n(&c->answers, __ATOMIC_RELAXED),
			.timeouts = __atomic_load_n(&c->timeouts, __ATOMIC_RELAXED),
			.failures = __atomic_load_n(&c->failures, __ATOMIC_RELAXED),
			.probes = __atomic_load_n(&c->probes, __ATOMIC_RELAXED),
			.srtt_us = __atomic_load_n(&h->srtt_us, __ATOMIC_RELAXED),
			.load_ms = __atomic_load_n(&h->load_ms, __ATOMIC_RELAXED),
		};
		if (st.queries == 0)
			continue;               /* another engine's hop */
		fn(&st, arg);
	}
}

/* ---- the deadline heap ---- */

static bool heap_less(const struct fwd_engine *e, uint32_t a, uint32_t b)
{
	return e->slots[e->heap[a]].deadline_us < e->slots[e->heap[b]].deadline_us;
}

static void heap_swap(struct fwd_engine *e, uint32_t a, uint32_t b)
{
	uint32_t t = e->heap[a];
	e->heap[a] = e->heap[b];
	e->heap[b] = t;
	e->slots[e->heap[a]].heap_idx = a;
	e->slots[e->heap[b]].heap_idx = b;
}

static void heap_fix(struct fwd_engine *e, uint32_t i)
{
	while (i > 0 && heap_less(e, i, (i - 1) / 2)) {
		heap_swap(e, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < e->npending && heap_less(e, l, m))
			m = l;
		if (r < e->npending && heap_less(e, r, m))
			m = r;
		if (m == i)
			break;
		heap_swap(e, i, m);
		i = m;
	}
}

static void heap_push(struct fwd_engine *e, uint32_t slot)
{
	uint32_t i = e->npending++;
	e->heap[i] = slot;
	e->slots[slot].heap_idx = i;
	heap_fix(e, i);
}

static void heap_remove(struct fwd_engine *e, uint32_t slot)
{
	uint32_t i = e->slots[slot].heap_idx;
	uint32_t last = --e->npending;
	if (i != last) {
		heap_swap(e, i, last);
		heap_fix(e, i);
	}
}

/* ---- slots ---- */

/* Abandons the slot's TCP exchange: the transport closes it and reports nothing. */
static void tcp_drop(struct fwd_engine *e, struct fwd_pending *p)
{
	struct fwd_tcp_conn *c = p->tcp;
	if (!c)
		return;
	p->tcp = NULL;
	e->tcp.abort(e->ctx, c);
}

/* Ends the slot's UDP attempt: its port is given back, nothing more is taken. */
static void udp_end(struct fwd_engine *e, struct fwd_pending *p)
{
	if (!p->udp_live)
		return;
	p->udp_live = false;
	upsock_release(e->up, (uint32_t)(p - e->slots));
}

static void slot_release(struct fwd_engine *e, struct fwd_pending *p)
{
	uint32_t slot = (uint32_t)(p - e->slots);
	tcp_drop(e, p);
	udp_end(e, p);
	p->used = false;
	e->free_slots[e->nfree++] = slot;
	CNT_SET(e->w->cnt, in_flight, e->max_pending - e->nfree);
}

/*
 * Frees the slot, then hands the answer in obuf over.  The slot goes
 * first: deliver() may close a TCP connection, which cancels its other
 * queries and re-enters the engine.  The slot's request and obuf stay as
 * they are until the next fwd_start(), so the caller may still keep the
 * answer in the cache.
 */
static void finish_query(struct fwd_engine *e, struct fwd_pending *p, size_t len)
{
	struct fwd_client c = p->client;
	uint64_t started = p->end_us - (uint64_t)p->req.budget_ms * 1000;
	enum inrpd_path path = p->req.fallback ? INRPD_PATH_FALLBACK : INRPD_PATH_FORWARDED;
	slot_release(e, p);
	if (len == 0) {
		CNT_INC(e->w->cnt, dropped);
		return;
	}
	if (!c.refresh)                 /* clients' answers only */
		inrpd_latency_observe(e->w->cnt, path, inrpd_now_us() - started, 1);
	e->deliver(e->ctx, &c, e->obuf, len);
}

static void fail(struct fwd_engine *e, struct fwd_pending *p, uint64_t router_id)
{
	struct cache_hit hit;
	/* RFC 8767: every hop failed; an expired answer beats none */
	if (e->w->cache && p->req.cacheable && p->req.cache_stale_s &&
	    cache_lookup(e->w->cache, &p->req.cache_key, p->req.cache_fp, inrpd_now_ms(),
			 p->req.cache_stale_s, &hit)) {
		size_t n = inrpd_answer_cached(&p->req, &hit, e->obuf, sizeof(e->obuf));
		if (n) {
			CNT_INC(e->w->cnt, stale);
			finish_query(e, p, n);
			return;
		}
	}
	CNT_INC(e->w->cnt, servfail);
	size_t n = inrpd_answer_servfail(&p->req, router_id, p->status, e->obuf, sizeof(e->obuf));
	/* held briefly, so a burst for a failing name does not go out again; a
	 * router client's failure may be its short budget, not the name's */
	finish_query(e, p, n);
	/* ... not a refresh's: a failure while routes converge is not the clients' */
	if (!p->req.client_inrp && !p->client.refresh)
		inrpd_cache_store(e->w->cache, &p->req, e->obuf, n, NULL);
}

/* A candidate's expected cost, as the worst (a hop never asked is
 * FWD_UNKNOWN_US away) and as the best it may be (such a hop is near). */
struct cost {
	uint64_t hi, lo;
	bool stale;                     /* a known RTT older than probe_ms, no timeout since */
};

static struct cost expected_cost(const struct fwd_pending *p, unsigned i, const struct fwd_hop *h,
				 uint64_t now)
{
	uint64_t load = p->req.cand[i].load_ms, rtt = 0, penalty = 0;
	uint64_t probe_us = p->req.probe_ms * 1000ull;
	bool stale = false;
	if (h) {
		rtt = __atomic_load_n(&h->srtt_us, __ATOMIC_RELAXED);
		if (__atomic_load_n(&h->load_known, __ATOMIC_RELAXED))
			load = __atomic_load_n(&h->load_ms, __ATOMIC_RELAXED);
		/* a timeout holds the hop down for probe_ms; then it is asked as it was */
		uint64_t last = __atomic_load_n(&h->last_timeout_us, __ATOMIC_RELAXED);
		if (last && since(now, last) < probe_us)
			penalty = FWD_TIMEOUT_PENALTY_US;
		stale = rtt && !penalty &&
			since(now, __atomic_load_n(&h->last_sample_us, __ATOMIC_RELAXED)) >= probe_us;
	}
	uint64_t base = load * 1000 + penalty;
	return (struct cost){ .hi = base + (rtt ? rtt : FWD_UNKNOWN_US), .lo = base + rtt, .stale = stale };
}

static uint64_t band_end(uint64_t best)
{
	uint64_t band = best / 8;
	return best + (band < FWD_BAND_MIN_US ? FWD_BAND_MIN_US : band);
}

/* Claims hop h's probe for this interval; false if another query has it. */
static bool probe_claim(struct fwd_hop *h, uint64_t now, uint32_t probe_ms)
{
	uint64_t last = __atomic_load_n(&h->probe_us, __ATOMIC_RELAXED);
	if (last && since(now, last) < probe_ms * 1000ull)
		return false;
	return __atomic_compare_exchange_n(&h->probe_us, &last, now, false,
					   __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/*
 * The candidate to try next, or -1 when all were tried: the best ranked
 * within the band of the cheapest; on a query's first attempt, a stale hop
 * outside the band instead, once per probe interval and only when that
 * best one was asked since the hop's last probe, so probes never take all
 * the queries of a quiet router (*probe set).
 */
static int choose(struct fwd_pending *p, uint64_t now, struct fwd_hop **hop, bool *probe)
{
	struct fwd_hop *hops[ROUTESET_MAX_ROUTES];
	struct cost costs[ROUTESET_MAX_ROUTES];
	uint64_t best = UINT64_MAX;

	*probe = false;
	for (unsigned i = 0; i < p->req.ncand; i++) {
		if (p->tried & (1u << i))
			continue;
		hops[i] = hop_get(&p->req.cand[i]);
		costs[i] = expected_cost(p, i, hops[i], now);
		if (costs[i].hi < best)
			best = costs[i].hi;
	}
	if (best == UINT64_MAX)
		return -1;
	uint64_t end = band_end(best);
	int pick = -1;
	for (unsigned i = 0; i < p->req.ncand && pick < 0; i++)
		if (!(p->tried & (1u << i)) && costs[i].lo <= end)
			pick = (int)i;
	uint64_t pick_asked = hops[pick] ? __atomic_load_n(&hops[pick]->last_sample_us, __ATOMIC_RELAXED) : 0;
	for (unsigned i = 0; i < p->req.ncand && !p->asked && pick_asked; i++) {
		if ((p->tried & (1u << i)) || costs[i].lo <= end || !costs[i].stale ||
		    pick_asked <= __atomic_load_n(&hops[i]->probe_us, __ATOMIC_RELAXED) ||
		    !probe_claim(hops[i], now, p->req.probe_ms))
			continue;
		*probe = true;
		pick = (int)i;
		break;
	}
	*hop = hops[pick];
	return pick;
}

/* Room for our outgoing queries: header, question, OPT RR with the INRP and COOKIE options. */
#define FWD_QUERY_MAX (DNS_HEADER_LEN + NAME_MAX_WIRE + 4 + DNS_OPT_RR_LEN + 4 + INRP_QUERY_OPT_MAX + \
		       4 + COOKIE_OPT_MAX)

/* The query to hop h (NULL: untracked, no cookie) for an attempt of
 * attempt_ms; returns its length (0: does not fit). */
static size_t build_query(const struct fwd_pending *p, const struct fwd_hop *h, uint32_t attempt_ms,
			  uint8_t *msg, size_t cap)
{
	const struct fwd_request *req = &p->req;
	uint8_t opt[INRP_QUERY_OPT_MAX];
	uint8_t cookie[COOKIE_OPT_MAX];
	struct dns_query_spec s = {
		.id = p->id,
		.qname = p->mixed_case ? p->qcase : req->target.wire,
		.qname_len = req->target.len,
		.qtype = req->q.qtype,
		.qclass = req->q.qclass,
		.rd = req->fallback ? true : req->q.rd,
		.cd = req->q.cd,
		.edns = true,
		.edns_do = req->q.edns_do,
		.udp_size = FWD_UPSTREAM_UDP_SIZE,
	};
	if (!req->fallback) {
		struct inrp_query_opt o = req->inrp;
		/* the next router must answer before we give up on it */
		uint32_t budget = attempt_ms - attempt_ms / 8 - 1;
		if (budget == 0)
			budget = 1;             /* 0 would mean "not said" */
		o.budget_ms = (uint16_t)(budget > UINT16_MAX ? UINT16_MAX : budget);
		s.opt_code = INRP_OPTION_CODE;
		s.opt_len = (uint16_t)inrp_query_opt_write(&o, opt);
		s.opt_data = opt;
	}
	if (h) {
		memcpy(cookie, h->client_cookie, COOKIE_CLIENT_LEN);
		s.cookie = cookie;
		s.cookie_len = (uint8_t)(COOKIE_CLIENT_LEN + hop_server_cookie(h, cookie + COOKIE_CLIENT_LEN));
	}
	return dns_query_write(&s, msg, cap);
}

/*
 * The name as asked of an upstream with upstream-0x20: each letter's case
 * from a random bit (RFC 5452 9.2), so a spoofer must guess those too.
 */
static void mix_case(struct fwd_engine *e, struct fwd_pending *p)
{
	const struct name *n = &p->req.target;
	memcpy(p->qcase, n->wire, n->len);
	for (size_t pos = 0; pos < n->len && n->wire[pos]; pos += n->wire[pos] + 1u) {
		uint8_t len = n->wire[pos];
		const uint8_t *bits = random_bytes(e, (len + 7u) / 8);
		for (unsigned k = 0; k < len; k++) {
			uint8_t *c = &p->qcase[pos + 1 + k];
			if (((*c | 0x20) >= 'a' && (*c | 0x20) <= 'z'))
				*c = (uint8_t)((bits[k / 8] >> (k % 8)) & 1 ? *c | 0x20 : *c & ~0x20);
		}
	}
}

/*
 * Sends the attempt from the slot's socket, connected afresh to the hop.
 * Returns 0, -1 when the hop cannot be asked (next alternate), -2 when
 * no socket is to be had (fd limit, kernel memory, no free port).
 */
static int send_attempt(struct fwd_engine *e, struct fwd_pending *p, unsigned i, const struct fwd_hop *h,
			uint32_t attempt_ms)
{
	const struct route *r = &p->req.cand[i];
	uint32_t slot = (uint32_t)(p - e->slots);
	uint8_t msg[FWD_QUERY_MAX];
	p->mixed_case = p->req.fallback && p->req.upstream_0x20;
	if (p->mixed_case)
		mix_case(e, p);
	size_t len = build_query(p, h, attempt_ms, msg, sizeof(msg));
	if (len == 0)
		return -1;

	struct sockaddr_storage ss;
	socklen_t sl = route_sockaddr(r, &ss);
	udp_end(e, p);
	int fd = upsock_connect(e->up, slot, (struct sockaddr *)&ss, sl);
	if (fd < 0) {
		/* EAGAIN: every port of the range taken */
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM || errno == EAGAIN) {
			log_debug("forward: no socket: %s", strerror(errno));
			return -2;
		}
		log_debug("forward: connect: %s", strerror(errno));
		return -1;
	}
	p->udp_live = true;
	ssize_t n;
	/* a failed send may only have reported an ICMP error of an earlier attempt */
	for (unsigned tries = 0; tries < 3; tries++) {
		n = send(fd, msg, len, 0);
		if (n >= 0 || (errno != EINTR && errno != ECONNREFUSED))
			break;
	}
	if (n < 0) {
		log_debug("forward: send: %s", strerror(errno));
		udp_end(e, p);
		return -1;
	}
	tap_forwarder(e->w->tap, DNSTAP_FORWARDER_QUERY, DNSTAP_UDP, r, msg, len, 0);
	return 0;
}

/*
 * This attempt's share of the time left: the remaining budget divided
 * over it and the attempts still possible (untried alternates, and every
 * candidate again for each round left), at least FWD_MIN_ATTEMPT_MS.
 */
static uint32_t attempt_ms(const struct fwd_pending *p, uint64_t now)
{
	unsigned left = p->rounds_left * p->req.ncand;
	for (unsigned k = 0; k < p->req.ncand; k++)
		if (!(p->tried & (1u << k)))
			left++;
	uint64_t remaining_ms = (p->end_us - now) / 1000;
	uint64_t ms = remaining_ms / (left + 1);
	if (ms < FWD_MIN_ATTEMPT_MS)
		ms = remaining_ms < FWD_MIN_ATTEMPT_MS ? remaining_ms : FWD_MIN_ATTEMPT_MS;
	return ms == 0 ? 1 : (uint32_t)ms;
}

/* A fresh id from the CSPRNG: each query has its own socket, so ids need not differ. */
static uint16_t new_id(struct fwd_engine *e)
{
	return wire_load16(random_bytes(e, 2));
}

/* Sends the query to the best untried candidate; fails the query when none is left. */
static void attempt(struct fwd_engine *e, struct fwd_pending *p, uint64_t router_id)
{
	uint32_t slot = (uint32_t)(p - e->slots);

	for (;;) {
		uint64_t now = inrpd_now_us();
		struct fwd_hop *h;
		bool probe;
		int i = choose(p, now, &h, &probe);
		if (i < 0 && p->rounds_left > 0) {
			p->rounds_left--;
			p->tried = p->failed;   /* a hop that said it cannot is not asked again */
			i = choose(p, now, &h, &probe);
		}
		if (i < 0 || now >= p->end_us) {
			fail(e, p, router_id);
			return;
		}
		p->tried |= 1u << i;
		uint32_t ms = attempt_ms(p, now);

		/* a fresh random id per attempt: a late answer to the last one is not taken */
		p->id = new_id(e);

		if (h) {
			RELAXED_ADD(&hop_counts(e, h)->queries, 1);
			if (probe)
				RELAXED_ADD(&hop_counts(e, h)->probes, 1);
		}
		int sent = send_attempt(e, p, (unsigned)i, h, ms);
		if (sent == -2) {
			/* every alternate would need one too */
			CNT_INC(e->w->cnt, fwd_no_socket);
			fail(e, p, router_id);
			return;
		}
		if (sent < 0)
			continue;               /* unreachable at once: next alternate */
		p->asked = true;
		p->probing = probe;
		p->cur = (uint8_t)i;
		p->hop = h;
		p->sent_us = now;
		p->deadline_us = now + (uint64_t)ms * 1000;
		heap_push(e, slot);
		return;
	}
}

bool fwd_shed(struct fwd_engine *e, const struct fwd_request *req, uint8_t *out, size_t cap, size_t *len)
{
	if (e->nfree > 0)
		return false;
	CNT_INC(e->w->cnt, pending_full);
	CNT_INC(e->w->cnt, servfail);
	/* answer from the request itself: no slot to borrow */
	*len = inrpd_answer_servfail(req, req->router_id, INRP_STATUS_UNREACHABLE, out, cap);
	return true;
}

void fwd_start(struct fwd_engine *e, const struct fwd_request *req, const struct fwd_client *client)
{
	uint64_t router_id = req->router_id;
	size_t n;
	if (fwd_shed(e, req, e->obuf, sizeof(e->obuf), &n)) {
		if (n)
			e->deliver(e->ctx, client, e->obuf, n);
		return;
	}
	uint32_t slot = e->free_slots[--e->nfree];
	CNT_SET(e->w->cnt, in_flight, e->max_pending - e->nfree);
	struct fwd_pending *p = &e->slots[slot];
	p->used = true;
	p->tried = 0;
	p->failed = 0;
	p->asked = false;
	p->probing = false;
	p->cookie_retried = false;
	p->pausing = false;
	p->udp_live = false;
	p->mixed_case = false;
	p->pauses = 0;
	p->status = INRP_STATUS_UNREACHABLE;
	/* a next router retries on its own, within the budget we give it */
	p->rounds_left = req->fallback ? FWD_UPSTREAM_ROUNDS - 1 : 0;
	p->hop = NULL;
	p->tcp = NULL;
	p->id = 0;
	p->client = *client;
	p->req = *req;
	p->end_us = inrpd_now_us() + (uint64_t)req->budget_ms * 1000;
	p->deadline_us = 0;
	attempt(e, p, router_id);
}

static bool source_matches(const struct route *r, const struct sockaddr_storage *ss)
{
	struct ip_addr a;
	return sockaddr_ip((const struct sockaddr *)ss, &a) && sockaddr_port((const struct sockaddr *)ss) == r->port &&
	       ip_equal(a.family, a.addr, r->family, r->addr);
}

/*
 * Asks p's hop again over TCP after a truncated answer; p is out of the
 * heap.  Returns false when it does not (no TCP in this engine, a UDP
 * client, no time left, no connection to be had): the caller then relays
 * the truncated answer.
 */
static bool ask_over_tcp(struct fwd_engine *e, struct fwd_pending *p)
{
	uint32_t slot = (uint32_t)(p - e->slots);
	/* a UDP client can use TC: it asks us again over TCP, and comes here then */
	if (!e->tcp.open || p->req.limit_udp)
		return false;
	uint64_t now = inrpd_now_us();
	if (now >= p->end_us)
		return false;
	uint32_t ms = attempt_ms(p, now);
	/* only our connection can bring this answer */
	p->id = new_id(e);
	uint8_t msg[FWD_QUERY_MAX];
	size_t len = build_query(p, p->hop, ms, msg, sizeof(msg));
	struct fwd_tcp_conn *c = len ? e->tcp.open(e->ctx, &p->req.cand[p->cur], msg, len, slot) : NULL;
	if (!c) {
		CNT_INC(e->w->cnt, upstream_tcp_full);
		return false;
	}
	CNT_INC(e->w->cnt, upstream_tcp);
	tap_forwarder(e->w->tap, DNSTAP_FORWARDER_QUERY, DNSTAP_TCP, &p->req.cand[p->cur], msg, len, 0);
	if (p->hop)
		RELAXED_ADD(&hop_counts(e, p->hop)->queries, 1);
	p->tcp = c;
	p->sent_us = now;
	p->deadline_us = now + (uint64_t)ms * 1000;
	heap_push(e, slot);
	return true;
}

/*
 * The COOKIE option of hop h's answer: -1 if it is not our client cookie
 * (a spoofer's, or a broken hop), or if there is none and the hop speaks
 * cookies (RFC 7873 5.3); otherwise its server cookie is kept.  A hop
 * that never gave us one need not speak them.
 */
static int answer_cookie(struct fwd_hop *h, const uint8_t *pkt, const struct dns_upstream_answer *a)
{
	const uint8_t *d, *cc, *sc;
	size_t dl, sl;
	if (!h)
		return 0;
	if (!a->has_opt || !inrp_find_option(pkt + a->opts_off, a->opts_len, DNS_OPT_COOKIE, &d, &dl))
		return __atomic_load_n(&h->cookies, __ATOMIC_RELAXED) ? -1 : 0;
	if (cookie_parse(d, dl, &cc, &sc, &sl) < 0 || memcmp(cc, h->client_cookie, COOKIE_CLIENT_LEN) != 0)
		return -1;
	if (sl) {
		hop_set_server_cookie(h, sc, sl);
		if (!__atomic_load_n(&h->cookies, __ATOMIC_RELAXED))
			__atomic_store_n(&h->cookies, 1, __ATOMIC_RELAXED);
	}
	return 0;
}

/* With upstream-0x20: does the answer ask in the case we asked?  (A bare
 * refusal without its question is never relayed.) */
static bool case_matches(const struct fwd_pending *p, const uint8_t *pkt, size_t len,
			 const struct dns_upstream_answer *a)
{
	size_t n = p->req.target.len;
	return !p->mixed_case || !a->has_question ||
	       (len >= DNS_HEADER_LEN + n && memcmp(pkt + DNS_HEADER_LEN, p->qcase, n) == 0);
}

/*
 * The hop is behind us (or ahead): it has no route for a name it gave us a
 * route for, or answers from another origin than the one our route ends
 * at.  Routes are converging, and its inrpd may be a few scheduler slices
 * behind its nbrpd, which told us first: it is asked again after a pause,
 * a few times, rather than the client getting a SERVFAIL or an answer the
 * cache would keep under the wrong origin.  False: no more pauses, or no
 * time for one.
 */
static bool pause_for_hop(struct fwd_engine *e, struct fwd_pending *p, uint64_t now)
{
	uint64_t pause_us = (uint64_t)FWD_BEHIND_PAUSE_MS * 1000 << p->pauses;
	if (p->pauses >= FWD_BEHIND_WAITS || now + pause_us >= p->end_us)
		return false;
	CNT_INC(e->w->cnt, hop_behind);
	p->pauses++;
	p->pausing = true;
	p->tried &= ~(1u << p->cur);
	udp_end(e, p);                  /* a second answer to this attempt is not taken */
	p->deadline_us = now + pause_us;
	heap_push(e, (uint32_t)(p - e->slots));
	return true;
}

/* A checked answer for p, which is out of the heap: relayed, or asked again over TCP. */
static void accept_answer(struct fwd_engine *e, struct fwd_pending *p, const uint8_t *pkt, size_t len,
			  const struct dns_upstream_answer *a, bool over_tcp)
{
	uint64_t now = inrpd_now_us();
	struct fwd_hop *h = p->hop;
	struct inrp_response_opt hop_opt, *from_hop = NULL;
	tap_forwarder(e->w->tap, DNSTAP_FORWARDER_RESPONSE, over_tcp ? DNSTAP_TCP : DNSTAP_UDP, &p->req.cand[p->cur],
		      pkt, len, p->sent_us);
	if (h) {
		RELAXED_ADD(&hop_counts(e, h)->answers, 1);
		/* a TCP exchange's time includes the handshake: not the hop's RTT */
		if (!over_tcp)
			hop_sample(h, now - p->sent_us, now, p->probing);
	}
	if (!p->req.fallback && a->has_opt) {
		const uint8_t *d;
		size_t dl;
		const char *why;
		if (inrp_find_option(pkt + a->opts_off, a->opts_len, INRP_OPTION_CODE, &d, &dl) &&
		    inrp_response_opt_parse(d, dl, &hop_opt, &why) == 0) {
			from_hop = &hop_opt;
			if (h) {
				__atomic_store_n(&h->load_ms, hop_opt.load_ms, __ATOMIC_RELAXED);
				__atomic_store_n(&h->load_known, 1, __ATOMIC_RELAXED);
			}
		}
	}
	uint64_t router_id = p->req.router_id;
	if (a->rcode == DNS_RCODE_BADCOOKIE && h && !p->cookie_retried) {
		/* RFC 7873 5.3: its fresh server cookie is kept; ask again with it */
		p->cookie_retried = true;
		p->tried &= ~(1u << p->cur);
		attempt(e, p, router_id);
		return;
	}
	bool failed = a->rcode == DNS_RCODE_SERVFAIL || a->rcode == DNS_RCODE_REFUSED ||
		      a->rcode == DNS_RCODE_BADCOOKIE;
	uint32_t origin = p->req.cand[p->cur].origin;
	bool other_origin = !failed && from_hop && from_hop->origin && origin && from_hop->origin != origin;
	bool no_route = failed && from_hop && from_hop->status == INRP_STATUS_NO_ROUTE;
	if ((other_origin || no_route) && !over_tcp && pause_for_hop(e, p, now))
		return;
	if (failed) {
		/* the hop cannot deliver: the next alternate, this one not again */
		CNT_INC(e->w->cnt, hop_failed);
		if (h)
			RELAXED_ADD(&hop_counts(e, h)->failures, 1);
		p->failed |= 1u << p->cur;
		if (from_hop && from_hop->status != INRP_STATUS_OK)
			p->status = from_hop->status;
		attempt(e, p, router_id);
		return;
	}
	if (a->tc && !over_tcp && ask_over_tcp(e, p))
		return;
	size_t n = inrpd_answer_relay(&p->req, router_id, pkt, len, a, from_hop,
				      e->obuf, sizeof(e->obuf));
	if (n == 0) {
		/* records we cannot decode: as good as no answer */
		CNT_INC(e->w->cnt, bad_upstream);
		attempt(e, p, router_id);
		return;
	}
	/* a probe's answer is the client's, but not the cache's: the next
	 * query goes the preferred way; nor is one from another origin */
	bool keep = !p->probing && !other_origin;
	if (other_origin)
		CNT_INC(e->w->cnt, other_origin);
	/* the client first: storing may fault in a fresh page of the cache */
	finish_query(e, p, n);
	if (keep)
		inrpd_cache_store(e->w->cache, &p->req, e->obuf, n, from_hop);
}

/*
 * A datagram on p's socket during its UDP attempt.  Anything not our
 * answer is dropped and counted, and the attempt keeps waiting: it may
 * be a spoofer's, and the real answer may still come.  bad_upstream
 * counts every drop, the fwd_* counters why.  Returns whether it was
 * taken.
 */
static bool on_answer(struct fwd_engine *e, struct fwd_pending *p, const uint8_t *pkt, size_t len,
		      const struct sockaddr_storage *from)
{
#define DROP(why) do { CNT_INC(e->w->cnt, bad_upstream); CNT_INC(e->w->cnt, why); } while (0)
	/* the socket is connected, so only a datagram queued before it was
	 * connected again comes from elsewhere */
	if (!source_matches(&p->req.cand[p->cur], from)) {
		DROP(fwd_wrong_source);
		return false;
	}
	uint16_t id = wire_load16(pkt);
	if (id != p->id) {
		DROP(fwd_bad_id);
		return false;
	}
	struct dns_upstream_answer a;
	const char *why;
	if (dns_upstream_answer_parse(pkt, len, id, &p->req.target, p->req.q.qtype, p->req.q.qclass,
				      &a, &why) < 0) {
		CNT_INC(e->w->cnt, bad_upstream);
		log_debug("forward: ignoring an answer: %s", why);
		return false;
	}
	if (!case_matches(p, pkt, len, &a)) {
		DROP(fwd_0x20_mismatch);
		log_debug("forward: ignoring an answer: question not in the case asked");
		return false;
	}
	if (answer_cookie(p->hop, pkt, &a) < 0) {
		DROP(fwd_bad_cookie);
		log_debug("forward: ignoring an answer: not our client cookie");
		return false;
	}
#undef DROP
	/* the port is given back once the client has its answer (read_slot) */
	p->udp_live = false;
	heap_remove(e, (uint32_t)(p - e->slots));
	accept_answer(e, p, pkt, len, &a, false);
	return true;
}

/* Reads slot's socket: answers to its attempt, or what came too late for one. */
static void read_slot(struct fwd_engine *e, uint32_t slot)
{
	struct fwd_pending *p = &e->slots[slot];
	for (unsigned i = 0; i < FWD_READS_PER_WAKE; i++) {
		/* an answer taken may have sent the next attempt: another family's socket */
		int fd = upsock_slot_fd(e->up, slot);
		if (fd < 0)
			return;
		struct sockaddr_storage from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(fd, e->rbuf, sizeof(e->rbuf), MSG_DONTWAIT,
				     (struct sockaddr *)&from, &fl);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			/* an ICMP error (ECONNREFUSED) is not trusted: the attempt waits on */
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				log_debug("forward: recvfrom: %s", strerror(errno));
			return;
		}
		if (!p->used || !p->udp_live || (size_t)n < DNS_HEADER_LEN) {
			CNT_INC(e->w->cnt, bad_upstream);  /* late (the attempt is over), or junk */
			continue;
		}
		if (on_answer(e, p, e->rbuf, (size_t)n, &from)) {
			/* unless the answer sent the next attempt from this socket */
			if (!p->udp_live)
				upsock_release(e->up, slot);
			return;
		}
	}
}

void fwd_on_tcp_answer(struct fwd_engine *e, uint32_t token, struct fwd_tcp_conn *c,
		       const uint8_t *pkt, size_t len)
{
	if (token >= e->max_pending)
		return;
	struct fwd_pending *p = &e->slots[token];
	if (!p->used || p->tcp != c)
		return;                         /* abandoned (abort() should have kept it quiet) */
	p->tcp = NULL;                          /* the transport closes it */
	heap_remove(e, token);
	struct dns_upstream_answer a;
	const char *why = "connection failed or closed before the answer";
	if (!pkt || dns_upstream_answer_parse(pkt, len, p->id, &p->req.target, p->req.q.qtype,
					      p->req.q.qclass, &a, &why) < 0) {
		/* our own connection to the hop: a wrong answer means a broken hop,
		 * not a spoofer to wait out, so on to the next alternate */
		CNT_INC(e->w->cnt, bad_upstream);
		log_debug("forward: no answer over TCP: %s", why);
		attempt(e, p, p->req.router_id);
		return;
	}
	if (!case_matches(p, pkt, len, &a)) {
		CNT_INC(e->w->cnt, bad_upstream);
		CNT_INC(e->w->cnt, fwd_0x20_mismatch);
		log_debug("forward: no answer over TCP: question not in the case asked");
		attempt(e, p, p->req.router_id);
		return;
	}
	if (answer_cookie(p->hop, pkt, &a) < 0) {
		CNT_INC(e->w->cnt, bad_upstream);
		CNT_INC(e->w->cnt, fwd_bad_cookie);
		log_debug("forward: no answer over TCP: not our client cookie");
		attempt(e, p, p->req.router_id);
		return;
	}
	accept_answer(e, p, pkt, len, &a, true);
}

void fwd_on_readable(struct fwd_engine *e)
{
	e->nready = upsock_ready(e->up, e->ready, FWD_READS_PER_WAKE);
	fwd_on_ready(e);
}

int fwd_engine_watch(struct fwd_engine *e, int fd, uint32_t token)
{
	return upsock_watch(e->up, fd, token);
}

int fwd_engine_wait(struct fwd_engine *e, int timeout, uint32_t *tokens, unsigned *ntokens)
{
	return upsock_wait(e->up, timeout, e->ready, &e->nready, tokens, ntokens);
}

void fwd_on_ready(struct fwd_engine *e)
{
	unsigned n = e->nready;
	e->nready = 0;
	for (unsigned i = 0; i < n; i++)
		read_slot(e, e->ready[i]);
}

int fwd_expire(struct fwd_engine *e)
{
	uint64_t now = inrpd_now_us();

	while (e->npending > 0) {
		uint32_t slot = e->heap[0];
		struct fwd_pending *p = &e->slots[slot];
		if (p->deadline_us > now)
			return (int)((p->deadline_us - now + 999) / 1000);
		heap_remove(e, slot);
		if (p->pausing) {
			p->pausing = false;
			/* our own route may have moved meanwhile (the hop had withdrawn it) */
			if (inrpd_reroute(&p->req)) {
				CNT_INC(e->w->cnt, rerouted);
				p->tried = p->failed = 0;
			}
			attempt(e, p, p->req.router_id);
			now = inrpd_now_us();
			continue;
		}
		tcp_drop(e, p);                 /* a TCP exchange that took too long */
		udp_end(e, p);
		if (p->hop) {
			RELAXED_ADD(&hop_counts(e, p->hop)->timeouts, 1);
			__atomic_store_n(&p->hop->last_timeout_us, now, __ATOMIC_RELAXED);
		}
		attempt(e, p, p->req.router_id);
		now = inrpd_now_us();
	}
	return -1;
}

void fwd_cancel_conn(struct fwd_engine *e, const void *conn)
{
	for (unsigned i = 0; i < e->max_pending; i++) {
		struct fwd_pending *p = &e->slots[i];
		if (p->used && p->client.conn == conn) {
			heap_remove(e, i);
			slot_release(e, p);
		}
	}
}

unsigned fwd_pending_count(const struct fwd_engine *e)
{
	return e->npending;
}

void fwd_engine_set_tcp(struct fwd_engine *e, const struct fwd_tcp_ops *ops)
{
	e->tcp = *ops;
}

int fwd_engine_fd(const struct fwd_engine *e)
{
	return upsock_fd(e->up);
}

/*
 * Fresh zeroed pages from the kernel, not calloc: after a big config load
 * the heap is full of freed memory that calloc would have to clear, and
 * with it make resident.  Here a page counts only once a query used it
 * (slots are reused last-in first-out, so few ever are).
 */
static void *zmap(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void zunmap(void *p, size_t bytes)
{
	if (p)
		munmap(p, bytes);
}

static void init_client_secret(void)
{
	if (getrandom(client_secret, sizeof(client_secret), 0) != sizeof(client_secret)) {
		uint64_t t = inrpd_now_us();
		memcpy(client_secret, &t, sizeof(t));   /* cookies then only tell hops apart */
	}
}

struct fwd_engine *fwd_engine_create(struct inrpd_worker *w, unsigned max_pending, unsigned max_sockets,
				     fwd_deliver_fn deliver_fn, void *ctx, char *err, size_t err_len)
{
	if (max_pending == 0 || max_pending > 65535) {
		snprintf(err, err_len, "max-pending must lie in 1..65535");
		return NULL;
	}
	pthread_once(&client_secret_once, init_client_secret);
	if (sodium_init() < 0) {
		snprintf(err, err_len, "no random source for query ids");
		return NULL;
	}
	struct fwd_engine *e = zmap(sizeof(*e));
	if (!e)
		goto nomem;
	e->deliver = deliver_fn;
	e->ctx = ctx;
	e->w = w;
	e->max_pending = max_pending;
	e->slots = zmap(max_pending * sizeof(*e->slots));
	e->free_slots = calloc(max_pending, sizeof(*e->free_slots));
	e->heap = calloc(max_pending, sizeof(*e->heap));
	if (!e->slots || !e->free_slots || !e->heap)
		goto nomem;
	for (unsigned i = 0; i < max_pending; i++)
		e->free_slots[i] = max_pending - 1 - i;
	e->nfree = max_pending;
	e->up = upsock_create(max_pending, max_sockets && max_sockets < max_pending ? max_sockets : max_pending);
	if (!e->up) {
		snprintf(err, err_len, "forwarding sockets: %s", strerror(errno));
		fwd_engine_free(e);
		return NULL;
	}
	return e;
nomem:
	snprintf(err, err_len, "out of memory for the forwarding engine");
	fwd_engine_free(e);
	return NULL;
}

void fwd_engine_free(struct fwd_engine *e)
{
	if (!e)
		return;
	upsock_free(e->up);
	zunmap(e->slots, e->max_pending * sizeof(*e->slots));
	free(e->free_slots);
	free(e->heap);
	zunmap(e, sizeof(*e));
}
