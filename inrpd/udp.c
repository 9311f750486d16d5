/*
 * UDP data plane: one thread per worker, and per listen address one
 * SO_REUSEPORT socket per worker, so the kernel spreads clients over the
 * workers with no shared state.  A worker polls its sockets (and its
 * forwarding engine's epoll set), then drains each readable socket with
 * recvmmsg into preallocated buffers, answers the batch, and sends it with
 * one sendmmsg.
 * Nothing is allocated per packet.
 *
 * A query that needs another router or an upstream resolver goes to the
 * worker's own forwarding engine (forward.c), whose sockets and deadlines
 * the worker waits for with its own: one poll() covers the listeners and
 * the engine's epoll set (a socket per query in flight, upsock.c, and the
 * worker's stop and wake eventfds).  The answer leaves through the
 * socket the query came in on, to the address it came from, also when a
 * PROXY v2 header (proxy.h) says the query is another client's.
 *
 * A worker's cache shard is its own, read and written without a lock:
 * `inrpc show route` asks each worker to look into it (its wake eventfd),
 * and the worker answers between two rounds of batches.
 *
 * RCU (QSBR): a worker is online only between its wait and the end of its
 * batches.  It dereferences the runtime once per batch, uses lookup results
 * within the batch, and announces a quiescent state after each one.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <urcu-qsbr.h>

#include "log.h"
#include "inrpd.h"
#include "proxy.h"
#include "rrl.h"
#include "tap.h"
#include "udp.h"
#include "upsock.h"
#include "refresh.h"

#define UDP_BATCH               32
#define UDP_IN_MAX              4096    /* larger queries arrive truncated and are dropped */
#define UDP_BATCHES_PER_ROUND   8       /* per socket, before polling again */
#define UDP_RCVBUF              (4 << 20)
#define UDP_WAIT_MAX            (UPSOCK_WAIT_MAX + INRPD_MAX_LISTEN) /* the engine's tokens, the listeners */
/* the wait's tokens: listeners by index, then our eventfds in the engine's epoll set */
#define UDP_TOKEN_STOP          INRPD_MAX_LISTEN
#define UDP_TOKEN_WAKE          (INRPD_MAX_LISTEN + 1)
#define CTL_LEN                 CMSG_SPACE(sizeof(struct in6_pktinfo))
#define PEEK_WAIT_MS            500     /* for the workers' answers to a cache peek */

struct udp_worker {
	struct inrpd_counters cnt;      /* first: its own cache line */
	struct udp_workers *parent;
	unsigned idx;
	pthread_t thread;
	bool running;
	unsigned nfds;
	int fds[INRPD_MAX_LISTEN];
	bool pktinfo[INRPD_MAX_LISTEN]; /* wildcard address: reply from the query's destination */
	struct inrpd_worker ctx;        /* counters above, its engine, cache shard, rate limits */
	struct refresh *refresh;        /* questions asked lately (NULL: refresh-on-route-change 0) */
	struct tap_queue *tap;          /* dnstap (NULL: off) */
	struct sockaddr_storage self[INRPD_MAX_LISTEN];        /* listen addresses, for dnstap */
	int wake_fd;                    /* routes changed, or a cache peek asked */
	bool wake_pending;              /* routes changed and wake_fd was written since we read it */
	bool peek_pending;              /* a cache peek asked (udp_workers_cache_peek) */
	uint64_t peek_done;             /* the last peek answered (under the peek's lock) */

	struct mmsghdr in[UDP_BATCH];
	unsigned in_used;               /* entries of in[] the last recvmmsg filled (arm_in) */
	bool in_pktinfo;                /* in[] has control buffers */
	struct mmsghdr out[UDP_BATCH];
	struct iovec iov_in[UDP_BATCH];
	struct iovec iov_out[UDP_BATCH];
	struct sockaddr_storage peer[UDP_BATCH];
	union {
		struct cmsghdr align;
		uint8_t buf[CTL_LEN];
	} ctl_in[UDP_BATCH], ctl_out[UDP_BATCH];
	uint8_t inbuf[UDP_BATCH][UDP_IN_MAX];
	struct inrpd_hint hint[UDP_BATCH];      /* where each query's lookups start (prefetch_batch) */
	uint8_t outbuf[UDP_BATCH][INRPD_ANSWER_MAX];
};

/*
 * A cache peek (inrpc's `show route`): the shards are the workers' own
 * and lock-free, so the control thread asks each owner, and every field
 * here and the workers' peek_done are read and written under lock only.
 */
struct udp_peek {
	pthread_mutex_t lock;
	pthread_cond_t answered;        /* a worker has answered (CLOCK_MONOTONIC) */
	uint64_t seq;                   /* the peek asked now; 0: none */
	uint64_t last;                  /* the last one asked */
	uint64_t now_ms;
	unsigned nkeys;
	const struct cache_key *keys;   /* the asker's, while seq is asked */
	struct udp_peek_result *res;    /* [worker * nkeys + key] */
};

struct udp_workers {
	unsigned n;
	int stop_fd;
	bool stop;
	struct udp_worker **w;
	bool peek_ready;                /* peek's lock and condition made */
	struct udp_peek peek;
};

static bool addr_is_wildcard(const struct inrpd_listen *l)
{
	static const uint8_t zero[16];
	return memcmp(l->ep.addr, zero, l->ep.family == AF_INET ? 4 : 16) == 0;
}

static int open_socket(const struct inrpd_listen *l, bool *pktinfo, char *err, size_t err_len)
{
	char what[80];
	const int on = 1;
	struct sockaddr_storage ss;
	socklen_t sslen = ip_endpoint_sockaddr(&(l)->ep, &ss);

	ip_endpoint_format(&(l)->ep, what, sizeof(what));

	int fd = socket(l->ep.family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, err_len, "listen %s: udp socket: %s", what, strerror(errno));
		return -1;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on)) < 0) {
		snprintf(err, err_len, "listen %s: SO_REUSEPORT: %s", what, strerror(errno));
		goto fail;
	}
	if (l->ep.family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on)) < 0) {
		snprintf(err, err_len, "listen %s: IPV6_V6ONLY: %s", what, strerror(errno));
		goto fail;
	}
	*pktinfo = addr_is_wildcard(l);
	if (*pktinfo) {
		int rc = l->ep.family == AF_INET
			? setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &on, sizeof(on))
			: setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &on, sizeof(on));
		if (rc < 0) {
			snprintf(err, err_len, "listen %s: PKTINFO: %s", what, strerror(errno));
			goto fail;
		}
	}
	/* best effort: absorbs bursts; capped by net.core.rmem_max */
	int rcvbuf = UDP_RCVBUF;
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (bind(fd, (struct sockaddr *)&ss, sslen) < 0) {
		snprintf(err, err_len, "listen %s: udp bind: %s", what, strerror(errno));
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return -1;
}

/* Turns the received destination address into the source of the reply. */
static size_t reply_pktinfo(const struct msghdr *in, void *out, size_t out_len)
{
	struct msghdr tmp = { .msg_control = out, .msg_controllen = out_len };

	for (struct cmsghdr *c = CMSG_FIRSTHDR((struct msghdr *)in); c;
	     c = CMSG_NXTHDR((struct msghdr *)in, c)) {
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO &&
		    c->cmsg_len >= CMSG_LEN(sizeof(struct in_pktinfo))) {
			struct in_pktinfo pi;
			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			pi.ipi_spec_dst = pi.ipi_addr;
			pi.ipi_ifindex = 0;
			struct cmsghdr *o = CMSG_FIRSTHDR(&tmp);
			o->cmsg_level = IPPROTO_IP;
			o->cmsg_type = IP_PKTINFO;
			o->cmsg_len = CMSG_LEN(sizeof(pi));
			memcpy(CMSG_DATA(o), &pi, sizeof(pi));
			return CMSG_SPACE(sizeof(pi));
		}
		if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO &&
		    c->cmsg_len >= CMSG_LEN(sizeof(struct in6_pktinfo))) {
			struct in6_pktinfo pi;
			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			struct cmsghdr *o = CMSG_FIRSTHDR(&tmp);
			o->cmsg_level = IPPROTO_IPV6;
			o->cmsg_type = IPV6_PKTINFO;
			o->cmsg_len = CMSG_LEN(sizeof(pi));
			memcpy(CMSG_DATA(o), &pi, sizeof(pi));
			return CMSG_SPACE(sizeof(pi));
		}
	}
	return 0;
}

/* A question that went to next content routers (forwarded), or was answered
 * from the cache for them (only such a request is cacheable and not
 * fallback): asked lately. */
static inline void note(struct udp_worker *w, bool forwarded)
{
	const struct fwd_request *req = &w->ctx.req;
	if (!w->refresh || !req->cacheable || req->fallback)
		return;
	uint64_t now_ms = w->ctx.now_ms;        /* the pass's clock: a precise one runs ahead of it */
	unsigned slot = refresh_note(w->refresh, req->cache_key.hash, &req->q, now_ms);
	if (forwarded)
		refresh_started(w->refresh, slot, req->cache_fp, now_ms);
}

/*
 * Routes changed: the questions asked lately go through the query path
 * again, as a client's that may not fall back; those that now miss the
 * cache go out along their new routes, their answers for the cache.
 */
static void refresh_pass(struct udp_worker *w)
{
	uint64_t now_ms = inrpd_now_ms();
	if (!refresh_begin(w->refresh, now_ms))
		return;
	struct inrpd_counters scratch;  /* not clients' queries: counted as refreshed */
	struct inrpd_worker pass = {    /* as over TCP: no RRL, no UDP limit */
		.cnt = &scratch, .cache = w->ctx.cache, .fwd = w->ctx.fwd,
	};
	inrpd_worker_begin(&pass);
	struct fwd_request *req = &pass.req;
	struct sockaddr_storage self = { .ss_family = AF_UNSPEC };
	uint8_t query[DNS_HEADER_LEN + NAME_MAX_WIRE + 4 + DNS_OPT_RR_LEN];
	unsigned slot;
	size_t qlen;
	while ((qlen = refresh_next(w->refresh, now_ms, query, sizeof(query), &slot))) {
		memset(&scratch, 0, sizeof(scratch));
		size_t len = inrpd_answer(&pass, query, qlen, (const struct sockaddr *)&self, w->outbuf[0]);
		if (len != INRPD_FORWARD || req->fallback ||
		    !refresh_wanted(w->refresh, slot, req->cache_fp, now_ms, pass.rt->query_timeout_ms))
			continue;
		struct fwd_client c = { .refresh = slot + 1 };
		refresh_started(w->refresh, slot, req->cache_fp, now_ms);
		CNT_INC(&w->cnt, refreshed);
		fwd_start(w->ctx.fwd, req, &c);
	}
}

/*
 * Fetches the table entries of the batch's n queries, all at once: read
 * back to back, their TLB walks and cache misses overlap; one query's
 * read between two answers (a few queries ahead) waits alone.  Each
 * query keeps its hint for its answer.
 */
static void prefetch_batch(struct udp_worker *w, int n)
{
	for (int i = 0; i < n; i++) {
		/* a truncated message is not answered: no hint */
		size_t len = w->in[i].msg_hdr.msg_flags & MSG_TRUNC ? 0 : w->in[i].msg_len;
		size_t skip = proxyv2_skip(w->inbuf[i], len);
		inrpd_buckets(&w->ctx, w->inbuf[i] + skip, len - skip, &w->hint[i]);
	}
	inrpd_hints_fetch(w->hint, (unsigned)n);
}

/*
 * Readies in[] for recvmmsg.  The kernel rewrites the lengths and flags of
 * the entries it fills and no others, so only those are set again (every
 * one when the listener's kind changes): a call that finds one query, or
 * none, does not pay for the whole batch.
 */
static void arm_in(struct udp_worker *w, bool pktinfo)
{
	unsigned n = w->in_used;
	if (pktinfo != w->in_pktinfo) {
		n = UDP_BATCH;
		w->in_pktinfo = pktinfo;
	}
	for (unsigned i = 0; i < n; i++) {
		struct msghdr *h = &w->in[i].msg_hdr;
		h->msg_namelen = sizeof(w->peer[i]);
		h->msg_control = pktinfo ? w->ctl_in[i].buf : NULL;
		h->msg_controllen = pktinfo ? sizeof(w->ctl_in[i].buf) : 0;
		h->msg_flags = 0;
	}
	w->in_used = 0;
}

/* One recvmmsg batch on fd; returns the number of messages received. */
static int serve_batch(struct udp_worker *w, unsigned listen_idx)
{
	int fd = w->fds[listen_idx];
	bool pktinfo = w->pktinfo[listen_idx];
	arm_in(w, pktinfo);
	int n = recvmmsg(fd, w->in, UDP_BATCH, MSG_DONTWAIT, NULL);
	w->in_used = n >= 0 ? (unsigned)n : UDP_BATCH;  /* after a failure, trust none */
	if (n <= 0) {
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			log_debug("udp worker %u: recvmmsg: %s", w->idx, strerror(errno));
		return 0;
	}

	uint64_t arrived = inrpd_now_us();     /* one clock read per batch, not per query */
	inrpd_worker_begin(&w->ctx);
	unsigned k = 0;
	prefetch_batch(w, n);
	for (int i = 0; i < n; i++) {
		struct msghdr *h = &w->in[i].msg_hdr;
		if (h->msg_flags & MSG_TRUNC) {         /* larger than any query we take */
			CNT_INC(&w->cnt, queries);
			CNT_INC(&w->cnt, dropped);
			continue;
		}
		const uint8_t *query = w->inbuf[i];
		size_t qlen = w->in[i].msg_len;
		struct sockaddr_storage carried;
		const struct sockaddr *client = inrpd_proxy_datagram(w->ctx.rt, (const struct sockaddr *)&w->peer[i],
								     &query, &qlen, &carried, &w->cnt);
		if (!client)
			continue;
		const struct sockaddr *self = (const struct sockaddr *)&w->self[listen_idx];
		tap_client(w->ctx.tap, DNSTAP_CLIENT_QUERY, DNSTAP_UDP, client, self, query, qlen);
		w->ctx.hint = &w->hint[i];
		size_t len = inrpd_answer(&w->ctx, query, qlen, client, w->outbuf[k]);
		/* no room in flight: the SERVFAIL goes out in this batch, not alone */
		if (len == INRPD_FORWARD)
			fwd_shed(w->ctx.fwd, &w->ctx.req, w->outbuf[k], sizeof(w->outbuf[k]), &len);
		if (len == INRPD_FORWARD) {
			struct fwd_client c;
			memcpy(&c.peer, &w->peer[i], sizeof(c.peer));
			c.peer_len = h->msg_namelen;
			c.listen_idx = (uint8_t)listen_idx;
			c.ctl_len = pktinfo ? (uint8_t)reply_pktinfo(h, c.ctl.buf, sizeof(c.ctl.buf)) : 0;
			c.conn = NULL;
			c.serial = 0;
			c.refresh = 0;
			note(w, true);
			fwd_start(w->ctx.fwd, &w->ctx.req, &c);
			continue;
		}
		if (len == 0)
			continue;
		note(w, false);
		tap_client(w->ctx.tap, DNSTAP_CLIENT_RESPONSE, DNSTAP_UDP, client, self, w->outbuf[k], len);
		struct msghdr *o = &w->out[k].msg_hdr;        /* its buffer and iovec set once (udp_workers_open) */
		w->iov_out[k].iov_len = len;
		o->msg_name = &w->peer[i];
		o->msg_namelen = h->msg_namelen;
		o->msg_control = NULL;
		o->msg_controllen = 0;
		if (pktinfo) {
			size_t cl = reply_pktinfo(h, w->ctl_out[k].buf, sizeof(w->ctl_out[k].buf));
			if (cl) {
				o->msg_control = w->ctl_out[k].buf;
				o->msg_controllen = cl;
			}
		}
		k++;
	}

	unsigned sent = 0;
	while (sent < k) {
		int r = sendmmsg(fd, w->out + sent, k - sent, 0);
		if (r > 0) {
			CNT_ADD(&w->cnt, answered, (unsigned)r);
			sent += (unsigned)r;
		} else if (r < 0 && errno == EINTR) {
			continue;
		} else {
			/* the first unsent message failed: skip it, send the rest */
			log_debug("udp worker %u: sendmmsg: %s", w->idx, r < 0 ? strerror(errno) : "nothing sent");
			CNT_INC(&w->cnt, dropped);
			sent++;
		}
	}
	if (k)
		inrpd_latency_observe(&w->cnt, INRPD_PATH_LOCAL, inrpd_now_us() - arrived, k);
	return n;
}

/* A cache peek asked of this worker: its shard looked at, between batches (it is the owner). */
static void answer_peek(struct udp_worker *w)
{
	struct udp_peek *p = &w->parent->peek;
	pthread_mutex_lock(&p->lock);
	if (p->seq && p->seq != w->peek_done) {
		struct udp_peek_result *res = p->res + (size_t)w->idx * p->nkeys;
		for (unsigned i = 0; i < p->nkeys; i++)
			res[i].found = w->ctx.cache && cache_peek(w->ctx.cache, &p->keys[i], p->now_ms, &res[i].peek);
		w->peek_done = p->seq;
		pthread_cond_signal(&p->answered);
	}
	pthread_mutex_unlock(&p->lock);
}

/*
 * The listeners are polled directly, beside the forwarding engine's epoll
 * set (which holds its upstream sockets, the stop and wake eventfds), and
 * not kept in that set: a socket in an epoll set always has a waiter, and
 * the kernel walks a socket's waiters for every datagram queued to it and
 * every answer it sends (its write space): several per cent of a local
 * answer's CPU under load.  poll()'s waiters exist only while it sleeps.
 */
static int worker_wait(struct udp_worker *w, int timeout, uint32_t *ready, unsigned *nready)
{
	struct pollfd pfd[INRPD_MAX_LISTEN + 1];
	unsigned n = w->nfds;

	for (unsigned l = 0; l < n; l++)
		pfd[l] = (struct pollfd){ .fd = w->fds[l], .events = POLLIN };
	pfd[n] = (struct pollfd){ .fd = fwd_engine_fd(w->ctx.fwd), .events = POLLIN };
	*nready = 0;
	if (poll(pfd, n + 1, timeout) < 0)
		return -1;
	if ((pfd[n].revents & POLLIN) && fwd_engine_wait(w->ctx.fwd, 0, ready, nready) < 0)
		return -1;
	for (unsigned l = 0; l < n; l++)
		if (pfd[l].revents)
			ready[(*nready)++] = l;
	return 0;
}

static void *worker_main(void *arg)
{
	struct udp_worker *w = arg;
	struct udp_workers *ws = w->parent;
	uint32_t ready[UDP_WAIT_MAX];
	unsigned nready;

	rcu_register_thread();

	for (;;) {
		int timeout = fwd_expire(w->ctx.fwd);
		if (w->refresh) {
			int due = refresh_timeout(w->refresh, inrpd_now_ms());
			if (due >= 0 && (timeout < 0 || due < timeout))
				timeout = due;
		}
		rcu_thread_offline();
		int n = worker_wait(w, timeout, ready, &nready);
		rcu_thread_online();
		if (__atomic_load_n(&ws->stop, __ATOMIC_ACQUIRE))
			break;
		if (n < 0) {
			if (errno != EINTR) {
				log_err("udp worker %u: poll: %s", w->idx, strerror(errno));
				break;
			}
			continue;
		}
		for (unsigned k = 0; k < nready; k++) {
			if (ready[k] != UDP_TOKEN_WAKE)
				continue;
			uint64_t v;
			bool routes = __atomic_exchange_n(&w->wake_pending, false, __ATOMIC_RELAXED);
			if (read(w->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				log_debug("udp worker %u: wake: %s", w->idx, strerror(errno));
			if (routes && w->refresh)
				refresh_routes_changed(w->refresh, inrpd_now_ms());
			if (__atomic_exchange_n(&w->peek_pending, false, __ATOMIC_ACQUIRE))
				answer_peek(w);
		}
		fwd_on_ready(w->ctx.fwd);
		if (w->refresh) {
			refresh_pass(w);
			rcu_quiescent_state();
		}
		for (unsigned k = 0; k < nready; k++) {
			if (ready[k] >= w->nfds)
				continue;
			for (unsigned b = 0; b < UDP_BATCHES_PER_ROUND; b++) {
				/* under load more came while a short batch was
				 * answered: read until none is left, which saves
				 * a poll() that would return at once */
				int got = serve_batch(w, ready[k]);
				rcu_quiescent_state();
				if (got == 0)
					break;
			}
		}
	}
	rcu_unregister_thread();
	return NULL;
}

/* The forwarding engine's answers leave through the socket the query came in on. */
static void deliver_udp(void *ctx, const struct fwd_client *c, const uint8_t *msg, size_t len)
{
	struct udp_worker *w = ctx;
	if (c->refresh) {               /* the cache has it: no one to tell */
		refresh_done(w->refresh, c->refresh - 1);
		return;
	}
	struct iovec iov = { .iov_base = (void *)msg, .iov_len = len };
	struct msghdr h = {
		.msg_name = (void *)&c->peer,
		.msg_namelen = c->peer_len,
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = c->ctl_len ? (void *)c->ctl.buf : NULL,
		.msg_controllen = c->ctl_len,
	};
	ssize_t n;
	do
		n = sendmsg(w->fds[c->listen_idx], &h, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		log_debug("udp worker %u: sendmsg: %s", w->idx, strerror(errno));
		CNT_INC(&w->cnt, dropped);
		return;
	}
	CNT_INC(&w->cnt, answered);
	tap_client(w->ctx.tap, DNSTAP_CLIENT_RESPONSE, DNSTAP_UDP, (const struct sockaddr *)&c->peer,
		   (const struct sockaddr *)&w->self[c->listen_idx], msg, len);
}

struct udp_workers *udp_workers_open(const struct inrpd_config *cfg, unsigned nworkers,
				     char *err, size_t err_len)
{
	struct udp_workers *ws = calloc(1, sizeof(*ws));
	if (!ws)
		goto nomem;
	ws->stop_fd = -1;
	ws->w = calloc(nworkers, sizeof(*ws->w));
	if (!ws->w)
		goto nomem;
	ws->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ws->stop_fd < 0) {
		snprintf(err, err_len, "eventfd: %s", strerror(errno));
		goto fail;
	}
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	int e = pthread_cond_init(&ws->peek.answered, &ca);
	pthread_condattr_destroy(&ca);
	if (e == 0 && (e = pthread_mutex_init(&ws->peek.lock, NULL)) != 0)
		pthread_cond_destroy(&ws->peek.answered);
	if (e != 0) {
		snprintf(err, err_len, "cache peek: %s", strerror(e));
		goto fail;
	}
	ws->peek_ready = true;
	for (unsigned i = 0; i < nworkers; i++) {
		struct udp_worker *w;
		if (posix_memalign((void **)&w, 64, sizeof(*w)) != 0)
			goto nomem;
		memset(w, 0, sizeof(*w));
		ws->w[i] = w;
		ws->n = i + 1;
		w->parent = ws;
		w->idx = i;
		w->wake_fd = -1;
		if (cfg->refresh_slots && !(w->refresh = refresh_create(cfg->refresh_slots)))
			goto nomem;
		w->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (w->wake_fd < 0) {
			snprintf(err, err_len, "eventfd: %s", strerror(errno));
			goto fail;
		}
		w->ctx.cnt = &w->cnt;
		w->ctx.udp = true;
		w->ctx.fwd = fwd_engine_create(&w->ctx, cfg->max_pending, cfg->max_sockets, deliver_udp, w,
					       err, err_len);
		if (!w->ctx.fwd)
			goto fail;
		if (!(w->ctx.rrl = rrl_create(nworkers)))
			goto nomem;
		/* a shard each, the TCP thread's included: no lock on any hit */
		if (cfg->cache_size && cfg->cache_shards &&
		    !(w->ctx.cache = cache_create(cfg->cache_size / cfg->cache_shards, inrpd_cache_flush)))
			goto nomem;
		w->ctx.tap = tap_queue_next(inrpd_tap, &w->cnt);
		for (unsigned j = 0; j < UDP_BATCH; j++) {
			struct msghdr *h = &w->in[j].msg_hdr;
			w->iov_in[j].iov_base = w->inbuf[j];
			w->iov_in[j].iov_len = sizeof(w->inbuf[j]);
			h->msg_name = &w->peer[j];
			h->msg_iov = &w->iov_in[j];
			h->msg_iovlen = 1;
			struct msghdr *o = &w->out[j].msg_hdr;
			w->iov_out[j].iov_base = w->outbuf[j];
			o->msg_iov = &w->iov_out[j];
			o->msg_iovlen = 1;
		}
		w->in_used = UDP_BATCH;         /* the rest: arm_in */
		for (unsigned l = 0; l < cfg->nlisten; l++) {
			int fd = open_socket(&cfg->listen[l], &w->pktinfo[l], err, err_len);
			if (fd < 0)
				goto fail;
			w->fds[l] = fd;
			w->nfds = l + 1;
			ip_endpoint_sockaddr(&cfg->listen[l].ep, &w->self[l]);
		}
		if (fwd_engine_watch(w->ctx.fwd, ws->stop_fd, UDP_TOKEN_STOP) < 0 ||
		    fwd_engine_watch(w->ctx.fwd, w->wake_fd, UDP_TOKEN_WAKE) < 0)
			goto epoll_fail;
	}
	return ws;
epoll_fail:
	snprintf(err, err_len, "epoll_ctl: %s", strerror(errno));
	goto fail;
nomem:
	snprintf(err, err_len, "out of memory");
fail:
	udp_workers_stop(ws, NULL);
	return NULL;
}

int udp_workers_start(struct udp_workers *ws, char *err, size_t err_len)
{
	sigset_t all, old;
	sigfillset(&all);
	/* workers take no signals: the main thread's libuv loop handles them */
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = 0;
	for (unsigned i = 0; i < ws->n; i++) {
		int e = pthread_create(&ws->w[i]->thread, NULL, worker_main, ws->w[i]);
		if (e != 0) {
			snprintf(err, err_len, "starting udp worker %u: %s", i, strerror(e));
			rc = -1;
			break;
		}
		ws->w[i]->running = true;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

void udp_workers_stop(struct udp_workers *ws, struct inrpd_counters *final)
{
	if (!ws)
		return;
	__atomic_store_n(&ws->stop, true, __ATOMIC_RELEASE);
	if (ws->stop_fd >= 0) {
		uint64_t one = 1;
		/* never read: stays readable, so every worker wakes up */
		if (write(ws->stop_fd, &one, sizeof(one)) != sizeof(one))
			log_err("udp workers: waking for stop: %s", strerror(errno));
	}
	for (unsigned i = 0; i < ws->n; i++) {
		struct udp_worker *w = ws->w[i];
		if (w->running)
			pthread_join(w->thread, NULL);
		if (final)
			inrpd_counters_add(final, &w->cnt);
		for (unsigned l = 0; l < w->nfds; l++)
			close(w->fds[l]);
		fwd_engine_free(w->ctx.fwd);
		cache_destroy(w->ctx.cache);
		rrl_free(w->ctx.rrl);
		refresh_free(w->refresh);
		if (w->wake_fd >= 0)
			close(w->wake_fd);
		free(w);
	}
	if (ws->stop_fd >= 0)
		close(ws->stop_fd);
	if (ws->peek_ready) {
		pthread_mutex_destroy(&ws->peek.lock);
		pthread_cond_destroy(&ws->peek.answered);
	}
	free(ws->w);
	free(ws);
}

void udp_workers_routes_changed(struct udp_workers *ws)
{
	uint64_t one = 1;
	for (unsigned i = 0; i < ws->n; i++) {
		struct udp_worker *w = ws->w[i];
		if (!w->refresh || __atomic_exchange_n(&w->wake_pending, true, __ATOMIC_RELAXED))
			continue;
		if (write(w->wake_fd, &one, sizeof(one)) != sizeof(one))
			log_debug("udp worker %u: waking for routes: %s", w->idx, strerror(errno));
	}
}

unsigned udp_workers_count(const struct udp_workers *ws)
{
	return ws->n;
}

/*
 * Asks every worker at once and waits for them together: a worker wakes
 * from its poll, or ends its round of batches, in well under a
 * millisecond, so only one stuck in a long round misses the deadline.
 * The peek is withdrawn (seq 0) before the lock is let go, so a late
 * worker never writes into res after we return.
 */
void udp_workers_cache_peek(struct udp_workers *ws, const struct cache_key *keys, unsigned nkeys,
			    uint64_t now_ms, struct udp_peek_result *res)
{
	struct udp_peek *p = &ws->peek;
	for (size_t i = 0; i < (size_t)ws->n * nkeys; i++)
		res[i] = (struct udp_peek_result){ .busy = true };
	pthread_mutex_lock(&p->lock);
	p->seq = ++p->last;
	p->now_ms = now_ms;
	p->nkeys = nkeys;
	p->keys = keys;
	p->res = res;
	pthread_mutex_unlock(&p->lock);
	uint64_t one = 1;
	for (unsigned i = 0; i < ws->n; i++) {
		struct udp_worker *w = ws->w[i];
		__atomic_store_n(&w->peek_pending, true, __ATOMIC_RELEASE);
		if (write(w->wake_fd, &one, sizeof(one)) != sizeof(one))
			log_debug("udp worker %u: waking for a cache peek: %s", w->idx, strerror(errno));
	}
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_nsec += (PEEK_WAIT_MS % 1000) * 1000000L;
	until.tv_sec += PEEK_WAIT_MS / 1000 + until.tv_nsec / 1000000000L;
	until.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		unsigned done = 0;
		for (unsigned i = 0; i < ws->n; i++)
			done += ws->w[i]->peek_done == p->seq;
		if (done == ws->n || pthread_cond_timedwait(&p->answered, &p->lock, &until) == ETIMEDOUT)
			break;
	}
	for (unsigned i = 0; i < ws->n; i++)
		for (unsigned k = 0; k < nkeys && ws->w[i]->peek_done == p->seq; k++)
			res[(size_t)i * nkeys + k].busy = false;
	p->seq = 0;
	p->keys = NULL;
	p->res = NULL;
	pthread_mutex_unlock(&p->lock);
}

void udp_workers_counters(const struct udp_workers *ws, struct inrpd_counters *sum)
{
	for (unsigned i = 0; i < ws->n; i++)
		inrpd_counters_add(sum, &ws->w[i]->cnt);
}

void udp_workers_cache_stats(const struct udp_workers *ws, struct cache_stats *st)
{
	for (unsigned i = 0; i < ws->n; i++)
		if (ws->w[i]->ctx.cache)
			cache_stats_add(ws->w[i]->ctx.cache, st);
}

void udp_workers_hops(const struct udp_workers *ws, fwd_hop_fn fn, void *arg)
{
	for (unsigned i = 0; i < ws->n; i++)
		fwd_engine_hops(ws->w[i]->ctx.fwd, fn, arg);
}
