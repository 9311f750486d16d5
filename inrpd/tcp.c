/*
 * DNS over TCP (RFC 7766) on the main thread's libuv loop.
 *
 * Each message has a 2-byte length prefix.  Queries pipelined on one
 * connection are answered in the order they arrive (answers are computed
 * as soon as a message is complete, and written in order).  A connection
 * is closed after tcp-idle-timeout without a complete query, on a
 * zero-length message, when the client closes its side (once our answers
 * are written), and at shutdown.  Bytes that do not complete a query do
 * not restart the idle clock, so a client trickling them is closed too.
 * At tcp-max-connections, a new connection closes the one idle the
 * longest (RFC 7766 6.2.3: slow or idle clients must not lock others
 * out); one with a query in the forwarding engine is not idle.  When
 * every connection has one, the newcomer is accepted and closed at once,
 * so it does not linger in the backlog.  A client that does not read its
 * answers stops being read once TCP_WRITE_QUEUE_MAX bytes are queued,
 * until the queue drains.
 *
 * A connection from an address in proxy-protocol-from starts with a PROXY
 * v2 header (proxy.h), read before the first message; its queries are
 * answered as the client it carries.  One cut short there (closed, idle)
 * is counted proxy_truncated.
 *
 * Queries that go to another router or an upstream resolver are handed to
 * the main thread's forwarding engine, whose sockets and deadline this
 * loop watches; their answers are written when they come, so they may
 * overtake earlier queries (RFC 7766 6.2.1.1 allows it).  A client that
 * half-closes still gets the answers in flight; a connection that closes
 * drops them.
 *
 * When a hop's answer to a forwarded query comes back truncated over UDP,
 * the engine asks that hop again over TCP (forward.c); the connections
 * for that are here too (struct fwd_tcp_conn): one per exchange, one
 * query and one answer, then closed.  Such exchanges are rare (a TCP
 * client and an answer too large for the hop's UDP), so a kept-open
 * connection is not worth the upstream's idle rules.  The engine's
 * deadline bounds each exchange: no timer here.
 *
 * DNS over TLS and HTTPS (tls.c) hand their queries to the same answer
 * path, packet cache and forwarding engine (tcp_server_answer): the main
 * thread's engine answers every stream transport, each connection behind
 * a struct inrpd_stream that says where its forwarded answers go.
 *
 * RCU: the main thread is offline except while it answers the messages of
 * one read; the runtime is dereferenced once per read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <uv.h>
#include <urcu-qsbr.h>

#include "dnsframe.h"
#include "log.h"
#include "inrpd.h"
#include "lru.h"
#include "proxy.h"
#include "stream.h"
#include "tcp.h"
#include "tap.h"
#include "wire.h"

#define TCP_RBUF_INIT           4096
#define TCP_WRITE_QUEUE_MAX     (256 * 1024)
#define TCP_BACKLOG             256
/*
 * Upstream TCP connections open at once.  Each holds a socket and, while
 * reading, up to 64 KiB of answer; they are only for truncated answers to
 * TCP clients, far fewer than that at any time on a healthy router, so
 * this caps what a flood of large-answer queries over TCP can take.  Over
 * it, the client gets the truncated answer (counted upstream_tcp_full).
 */
#define TCP_UPSTREAM_MAX        64

struct tcp_server;

struct tcp_conn {
	uv_tcp_t handle;                /* first: handle.data is unused */
	uv_timer_t timer;
	struct inrpd_stream st;         /* the forwarding engine's client */
	uv_shutdown_t shutdown;
	struct tcp_server *srv;
	struct lru_node lru;            /* on srv->conns */
	uint8_t *rbuf;
	size_t rcap, rlen;
	struct sockaddr_storage client; /* the peer, or the client its PROXY header carried */
	bool started;                   /* that header, or its absence, settled */
	unsigned open_handles;
	unsigned forwarded;             /* queries in the forwarding engine */
	bool closing;
	bool paused;                    /* reading stopped for write backpressure */
	bool eof;
};

struct tcp_write {
	uv_write_t req;
	struct tcp_conn *conn;
	size_t len;
	uint8_t data[];
};

/* One exchange with a hop over TCP for the forwarding engine. */
struct fwd_tcp_conn {
	uv_tcp_t handle;                /* handle.data: this */
	uv_connect_t connect;
	uv_write_t write;
	struct tcp_server *srv;
	struct fwd_tcp_conn *prev, *next;
	uint32_t token;                 /* the engine's, for fwd_on_tcp_answer */
	bool attached;                  /* the engine waits for the outcome */
	bool closing;
	uint8_t prefix[2];              /* the answer's length */
	size_t prefix_got;
	uint8_t *answer;                /* allocated once the length is read */
	size_t answer_len, answer_got;
	size_t query_len;               /* with its length prefix */
	uint8_t query[];
};

struct tcp_server {
	uv_loop_t *loop;
	unsigned nlisten;
	uv_tcp_t listeners[INRPD_MAX_LISTEN];
	struct lru conns;               /* most recently active first, closing ones too */
	unsigned nconns;                /* on the list, closing ones included */
	unsigned nopen;                 /* not closing: what max_conns bounds */
	unsigned max_conns;
	uint64_t idle_ms;
	unsigned open_listeners;
	bool closing;
	struct inrpd_counters cnt;
	struct inrpd_worker ctx;        /* the counters above, its engine, the main thread's cache shard */
	uv_poll_t fwd_poll;
	uv_timer_t fwd_timer;
	unsigned open_aux;              /* fwd_poll and fwd_timer handles */
	struct fwd_tcp_conn *upstreams; /* open or closing, until their close callback */
	unsigned nupstreams;
};

static void fwd_rearm(struct tcp_server *s);

static void conn_close(struct tcp_conn *c);

/* A query or an answer: the connection is the most recently active. */
static void conn_touch(struct tcp_conn *c)
{
	lru_touch(&c->srv->conns, &c->lru);
}

static void conn_handle_closed(uv_handle_t *h)
{
	struct tcp_conn *c = h->data;
	if (--c->open_handles > 0)
		return;
	struct tcp_server *s = c->srv;
	lru_remove(&s->conns, &c->lru);
	s->nconns--;
	free(c->rbuf);
	free(c);
}

static void conn_close(struct tcp_conn *c)
{
	if (c->closing)
		return;
	c->closing = true;
	c->srv->nopen--;
	if (c->forwarded) {
		fwd_cancel_conn(c->srv->ctx.fwd, &c->st);
		c->forwarded = 0;
		fwd_rearm(c->srv);
	}
	uv_read_stop((uv_stream_t *)&c->handle);
	uv_timer_stop(&c->timer);
	uv_close((uv_handle_t *)&c->timer, conn_handle_closed);
	uv_close((uv_handle_t *)&c->handle, conn_handle_closed);
}

/* The client went away or idled before its first bytes were settled. */
static void conn_cut(struct tcp_conn *c)
{
	if (!c->started && c->rlen > 0)
		inrpd_proxy_stream_cut(&c->srv->cnt);
}

static void on_idle(uv_timer_t *t)
{
	struct tcp_conn *c = t->data;
	log_debug("tcp: closing idle connection");
	conn_cut(c);
	conn_close(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct tcp_conn *c = h->data;
	(void)suggested;
	/* whatever is buffered is less than one whole message (see on_read) */
	size_t cap = dns_frame_grow(c->rcap, c->rlen);
	if (cap != c->rcap) {
		/* not vec: dns_frame_grow sizes it, up to one maximal message */
		uint8_t *nb = realloc(c->rbuf, cap);
		if (nb) {
			c->rbuf = nb;
			c->rcap = cap;
		}
	}
	*buf = uv_buf_init((char *)c->rbuf + c->rlen, (unsigned)(c->rcap - c->rlen));
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);

static void on_shutdown(uv_shutdown_t *req, int status)
{
	struct tcp_conn *c = req->data;
	(void)status;
	conn_close(c);
}

static void on_write(uv_write_t *req, int status)
{
	struct tcp_write *w = req->data;
	struct tcp_conn *c = w->conn;
	free(w);
	if (c->closing)
		return;
	if (status < 0) {
		log_debug("tcp: write: %s", uv_strerror(status));
		conn_close(c);
		return;
	}
	if (c->paused && !c->eof &&
	    uv_stream_get_write_queue_size((uv_stream_t *)&c->handle) < TCP_WRITE_QUEUE_MAX / 2) {
		c->paused = false;
		uv_read_start((uv_stream_t *)&c->handle, on_alloc, on_read);
	}
}

/* Output of one read: the answers, each with its length prefix. */
struct outbuf {
	struct tcp_write *w;
	size_t cap;
	unsigned count;
};

static bool out_append(struct outbuf *o, const uint8_t *msg, size_t len)
{
	size_t used = o->w ? o->w->len : 0;
	if (!o->w || o->cap - used < len + 2) {
		size_t cap = o->cap ? o->cap : 4096;
		while (cap - used < len + 2)
			cap *= 2;
		/* not vec: the answers follow the write request in one allocation, freed by on_write */
		struct tcp_write *nw = realloc(o->w, sizeof(*nw) + cap);
		if (!nw)
			return false;
		if (!o->w)
			nw->len = 0;
		o->w = nw;
		o->cap = cap;
	}
	uint8_t *p = o->w->data + o->w->len;
	wire_store16(p, (uint16_t)len);
	memcpy(p + 2, msg, len);
	o->w->len += len + 2;
	o->count++;
	return true;
}

static void conn_resume_or_pause(struct tcp_conn *c)
{
	if (uv_stream_get_write_queue_size((uv_stream_t *)&c->handle) > TCP_WRITE_QUEUE_MAX) {
		c->paused = true;
		uv_read_stop((uv_stream_t *)&c->handle);
	}
}

void tcp_server_tap(struct tcp_server *s, enum dnstap_type type, enum dnstap_protocol proto,
		    const struct uv_tcp_s *h, const struct sockaddr *client, const uint8_t *msg, size_t len)
{
	if (!tap_wants(s->ctx.tap, type))
		return;
	struct sockaddr_storage self;
	int slen = sizeof(self);
	if (uv_tcp_getsockname(h, (struct sockaddr *)&self, &slen) < 0)
		self.ss_family = AF_UNSPEC;
	tap_client(s->ctx.tap, type, proto, client, (struct sockaddr *)&self, msg, len);
}

/* A client's query or our answer to it, to dnstap, as the client PROXY named if it did. */
static void tap_tcp(struct tcp_server *s, struct tcp_conn *c, enum dnstap_type type, const uint8_t *msg,
		    size_t len)
{
	tcp_server_tap(s, type, DNSTAP_TCP, &c->handle, (struct sockaddr *)&c->client, msg, len);
}

static void conn_process(struct tcp_conn *c)
{
	struct tcp_server *s = c->srv;
	struct outbuf o = { 0 };
	uint8_t answer[INRPD_ANSWER_MAX];
	size_t off = 0, mlen;
	bool bad = false;
	enum dns_frame f = DNS_FRAME_MORE;
	uint64_t arrived = inrpd_now_us();

	rcu_thread_online();
	inrpd_worker_begin(&s->ctx);
	if (!c->started) {
		enum inrpd_proxy_verdict v = inrpd_proxy_stream(s->ctx.rt, (struct sockaddr *)&c->client, c->rbuf,
								c->rlen, &off, &c->client, &s->cnt);
		c->started = v == INRPD_PROXY_PASS;
		bad = v == INRPD_PROXY_DROP;
	}
	while (c->started && !bad &&
	       (f = dns_frame_next(c->rbuf + off, c->rlen - off, &mlen)) == DNS_FRAME_MSG) {
		tap_tcp(s, c, DNSTAP_CLIENT_QUERY, c->rbuf + off + 2, mlen);
		size_t alen = inrpd_answer(&s->ctx, c->rbuf + off + 2, mlen, (struct sockaddr *)&c->client, answer);
		off += 2 + mlen;
		if (alen == INRPD_FORWARD) {
			struct fwd_client fc = { .conn = &c->st };
			c->forwarded++;
			fwd_start(s->ctx.fwd, &s->ctx.req, &fc);
			if (c->closing)         /* delivery failed and closed it */
				break;
			continue;
		}
		if (alen)
			tap_tcp(s, c, DNSTAP_CLIENT_RESPONSE, answer, alen);
		if (alen && !out_append(&o, answer, alen)) {
			log_err("tcp: out of memory for answers");
			CNT_INC(&s->cnt, dropped);
			bad = true;
			break;
		}
	}
	if (f == DNS_FRAME_BAD)
		bad = true;
	rcu_thread_offline();
	fwd_rearm(s);

	if (off > 0) {
		memmove(c->rbuf, c->rbuf + off, c->rlen - off);
		c->rlen -= off;
		uv_timer_again(&c->timer);      /* idle counts from the last query */
		conn_touch(c);
	}
	if (o.w) {
		o.w->conn = c;
		o.w->req.data = o.w;
		uv_buf_t b = uv_buf_init((char *)o.w->data, (unsigned)o.w->len);
		int rc = uv_write(&o.w->req, (uv_stream_t *)&c->handle, &b, 1, on_write);
		if (rc < 0) {
			log_debug("tcp: write: %s", uv_strerror(rc));
			CNT_ADD(&s->cnt, dropped, o.count);
			free(o.w);
			bad = true;
		} else {
			CNT_ADD(&s->cnt, answered, o.count);
			inrpd_latency_observe(&s->cnt, INRPD_PATH_LOCAL, inrpd_now_us() - arrived, o.count);
		}
	}
	if (bad) {
		conn_close(c);
		return;
	}
	conn_resume_or_pause(c);
}

static void conn_shutdown(struct tcp_conn *c)
{
	c->shutdown.data = c;
	if (uv_shutdown(&c->shutdown, (uv_stream_t *)&c->handle, on_shutdown) < 0)
		conn_close(c);
}

/* An answer from the forwarding engine, for whichever transport's connection asked. */
static void deliver_stream(void *ctx, const struct fwd_client *fc, const uint8_t *msg, size_t len)
{
	struct inrpd_stream *st = fc->conn;
	(void)ctx;
	st->deliver(st, fc->serial, msg, len);
}

static void deliver_tcp(struct inrpd_stream *st, uint64_t tag, const uint8_t *msg, size_t len)
{
	struct tcp_conn *c = (struct tcp_conn *)((char *)st - offsetof(struct tcp_conn, st));
	struct tcp_server *s = c->srv;
	struct outbuf o = { 0 };
	(void)tag;

	c->forwarded--;
	if (c->closing)
		return;
	if (!out_append(&o, msg, len)) {
		CNT_INC(&s->cnt, dropped);
		conn_close(c);
		return;
	}
	o.w->conn = c;
	o.w->req.data = o.w;
	uv_buf_t b = uv_buf_init((char *)o.w->data, (unsigned)o.w->len);
	int rc = uv_write(&o.w->req, (uv_stream_t *)&c->handle, &b, 1, on_write);
	if (rc < 0) {
		free(o.w);
		CNT_INC(&s->cnt, dropped);
		conn_close(c);
		return;
	}
	CNT_INC(&s->cnt, answered);
	tap_tcp(s, c, DNSTAP_CLIENT_RESPONSE, msg, len);
	conn_touch(c);
	if (c->eof && c->forwarded == 0)
		conn_shutdown(c);
	else if (!c->eof)
		conn_resume_or_pause(c);
}

static void on_fwd_timer(uv_timer_t *t)
{
	struct tcp_server *s = t->data;
	fwd_rearm(s);
}

static void fwd_rearm(struct tcp_server *s)
{
	if (s->closing)
		return;
	int ms = fwd_expire(s->ctx.fwd);
	if (ms < 0)
		uv_timer_stop(&s->fwd_timer);
	else
		uv_timer_start(&s->fwd_timer, on_fwd_timer, (uint64_t)ms, 0);
}

static void on_fwd_readable(uv_poll_t *h, int status, int events)
{
	struct tcp_server *s = h->data;
	(void)status;
	(void)events;
	fwd_on_readable(s->ctx.fwd);
	fwd_rearm(s);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct tcp_conn *c = stream->data;
	(void)buf;
	if (c->closing)
		return;
	if (nread > 0) {
		c->rlen += (size_t)nread;
		conn_process(c);
		return;
	}
	if (nread == 0)                         /* EAGAIN */
		return;
	conn_cut(c);
	if (nread == UV_EOF) {
		/* the client is done: send what is queued and in flight, then close */
		c->eof = true;
		uv_read_stop(stream);
		if (c->forwarded == 0)
			conn_shutdown(c);
		return;
	}
	log_debug("tcp: read: %s", uv_strerror((int)nread));
	conn_close(c);
}

/* Closes the connection idle the longest to make room; false if every one has a query in flight. */
static bool conn_evict_idle(struct tcp_server *s)
{
	for (struct lru_node *n = s->conns.tail; n; n = n->prev) {
		struct tcp_conn *c = lru_entry(n, struct tcp_conn, lru);
		if (c->closing || c->forwarded)
			continue;
		log_debug("tcp: %u connections, closing the one idle the longest", s->nopen);
		CNT_INC(&s->cnt, tcp_evicted);
		conn_close(c);
		return true;
	}
	return false;
}

static void on_connection(uv_stream_t *server, int status)
{
	struct tcp_server *s = server->data;
	if (status < 0) {
		log_warn("tcp: accept: %s", uv_strerror(status));
		return;
	}
	struct tcp_conn *c = calloc(1, sizeof(*c));
	if (!c) {
		log_err("tcp: out of memory for a connection");
		return;
	}
	c->srv = s;
	c->st.deliver = deliver_tcp;
	uv_tcp_init(s->loop, &c->handle);
	c->handle.data = c;
	c->open_handles = 1;
	bool ok = uv_accept(server, (uv_stream_t *)&c->handle) == 0 && !s->closing;
	if (ok && s->nopen >= s->max_conns && !conn_evict_idle(s)) {
		log_debug("tcp: %u connections, each with a query in flight: refusing another", s->nopen);
		CNT_INC(&s->cnt, tcp_full);
		ok = false;
	}
	if (!ok || !(c->rbuf = malloc(TCP_RBUF_INIT))) {
		/* close alone: on the list (for tcp_server_free's count) but not open */
		c->closing = true;
		s->nconns++;
		lru_push(&s->conns, &c->lru);
		uv_close((uv_handle_t *)&c->handle, conn_handle_closed);
		return;
	}
	c->rcap = TCP_RBUF_INIT;
	int plen = sizeof(c->client);
	if (uv_tcp_getpeername(&c->handle, (struct sockaddr *)&c->client, &plen) < 0)
		c->client.ss_family = AF_UNSPEC;        /* not allowed recursion */
	uv_timer_init(s->loop, &c->timer);
	c->timer.data = c;
	c->open_handles = 2;
	lru_push(&s->conns, &c->lru);
	s->nconns++;
	s->nopen++;
	uv_tcp_nodelay(&c->handle, 1);
	uv_timer_start(&c->timer, on_idle, s->idle_ms, s->idle_ms);
	int rc = uv_read_start((uv_stream_t *)&c->handle, on_alloc, on_read);
	if (rc < 0) {
		log_debug("tcp: read start: %s", uv_strerror(rc));
		conn_close(c);
	}
}

static void listener_closed(uv_handle_t *h)
{
	struct tcp_server *s = h->data;
	s->open_listeners--;
}

static void aux_closed(uv_handle_t *h)
{
	struct tcp_server *s = h->data;
	s->open_aux--;
}

/* ---- asking a hop over TCP for the forwarding engine ---- */

static void upstream_closed(uv_handle_t *h)
{
	struct fwd_tcp_conn *u = h->data;
	struct tcp_server *s = u->srv;
	if (u->prev)
		u->prev->next = u->next;
	else
		s->upstreams = u->next;
	if (u->next)
		u->next->prev = u->prev;
	s->nupstreams--;
	free(u->answer);
	free(u);
}

/* Closes it; the connect, write and read callbacks that come after do nothing. */
static void upstream_close(struct fwd_tcp_conn *u)
{
	if (u->closing)
		return;
	u->closing = true;
	u->attached = false;
	uv_close((uv_handle_t *)&u->handle, upstream_closed);
}

/* Hands the outcome (pkt NULL: none) to the engine, once, and closes. */
static void upstream_done(struct fwd_tcp_conn *u, const uint8_t *pkt, size_t len)
{
	struct tcp_server *s = u->srv;
	bool attached = u->attached;
	u->attached = false;
	/* pkt lies in u->answer, freed only by the close callback, after this */
	if (attached)
		fwd_on_tcp_answer(s->ctx.fwd, u->token, u, pkt, len);
	upstream_close(u);
	fwd_rearm(s);
}

static void upstream_failed(struct fwd_tcp_conn *u, const char *what, int status)
{
	log_debug("tcp: upstream %s: %s", what, uv_strerror(status));
	upstream_done(u, NULL, 0);
}

/* Reads exactly the length prefix, then exactly the answer: nothing past it. */
static void upstream_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct fwd_tcp_conn *u = h->data;
	(void)suggested;
	if (u->prefix_got < sizeof(u->prefix))
		*buf = uv_buf_init((char *)u->prefix + u->prefix_got,
				   (unsigned)(sizeof(u->prefix) - u->prefix_got));
	else
		*buf = uv_buf_init((char *)u->answer + u->answer_got,
				   (unsigned)(u->answer_len - u->answer_got));
}

static void upstream_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct fwd_tcp_conn *u = stream->data;
	(void)buf;
	if (u->closing || nread == 0)
		return;
	if (nread < 0) {
		upstream_failed(u, "closed before its answer", (int)nread);
		return;
	}
	if (u->prefix_got < sizeof(u->prefix)) {
		u->prefix_got += (size_t)nread;
		if (u->prefix_got < sizeof(u->prefix))
			return;
		u->answer_len = wire_load16(u->prefix);       /* at most 65535 */
		if (u->answer_len < DNS_HEADER_LEN) {
			log_debug("tcp: upstream sent a %zu-byte message", u->answer_len);
			upstream_done(u, NULL, 0);
			return;
		}
		u->answer = malloc(u->answer_len);
		if (!u->answer) {
			log_err("tcp: out of memory for an upstream answer");
			upstream_done(u, NULL, 0);
		}
		return;
	}
	u->answer_got += (size_t)nread;
	if (u->answer_got == u->answer_len) {
		uv_read_stop(stream);
		upstream_done(u, u->answer, u->answer_len);
	}
}

static void upstream_written(uv_write_t *req, int status)
{
	struct fwd_tcp_conn *u = req->data;
	if (!u->closing && status < 0)
		upstream_failed(u, "write", status);
}

static void upstream_connected(uv_connect_t *req, int status)
{
	struct fwd_tcp_conn *u = req->data;
	if (u->closing)
		return;                         /* UV_ECANCELED from the close */
	if (status < 0) {
		upstream_failed(u, "connect", status);
		return;
	}
	uv_buf_t b = uv_buf_init((char *)u->query, (unsigned)u->query_len);
	u->write.data = u;
	int rc = uv_write(&u->write, (uv_stream_t *)&u->handle, &b, 1, upstream_written);
	if (rc == 0)
		rc = uv_read_start((uv_stream_t *)&u->handle, upstream_alloc, upstream_read);
	if (rc < 0)
		upstream_failed(u, "write", rc);
}

static struct fwd_tcp_conn *upstream_open(void *ctx, const struct route *to, const uint8_t *query,
					  size_t len, uint32_t token)
{
	struct tcp_server *s = ctx;
	if (s->closing || s->nupstreams >= TCP_UPSTREAM_MAX || len > UINT16_MAX)
		return NULL;
	struct fwd_tcp_conn *u = calloc(1, sizeof(*u) + 2 + len);
	if (!u)
		return NULL;
	u->srv = s;
	u->token = token;
	wire_store16(u->query, (uint16_t)len);
	memcpy(u->query + 2, query, len);
	u->query_len = 2 + len;
	int rc = uv_tcp_init(s->loop, &u->handle);
	if (rc < 0) {
		free(u);
		return NULL;
	}
	u->handle.data = u;
	u->next = s->upstreams;
	if (s->upstreams)
		s->upstreams->prev = u;
	s->upstreams = u;
	s->nupstreams++;
	struct sockaddr_storage ss;
	route_sockaddr(to, &ss);
	u->connect.data = u;
	rc = uv_tcp_connect(&u->connect, &u->handle, (struct sockaddr *)&ss, upstream_connected);
	if (rc < 0) {
		log_debug("tcp: upstream connect: %s", uv_strerror(rc));
		upstream_close(u);
		return NULL;
	}
	u->attached = true;
	return u;
}

static void upstream_abort(void *ctx, struct fwd_tcp_conn *u)
{
	(void)ctx;
	upstream_close(u);
}

struct tcp_server *tcp_server_open(uv_loop_t *loop, const struct inrpd_config *cfg,
				   char *err, size_t err_len)
{
	struct tcp_server *s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, err_len, "out of memory");
		return NULL;
	}
	s->loop = loop;
	s->max_conns = cfg->tcp_max_conns;
	s->idle_ms = cfg->tcp_idle_ms;
	s->ctx.cnt = &s->cnt;
	s->ctx.fwd = fwd_engine_create(&s->ctx, cfg->max_pending, cfg->max_sockets, deliver_stream, s, err, err_len);
	if (!s->ctx.fwd) {
		free(s);
		return NULL;
	}
	if (cfg->cache_size && cfg->cache_shards &&
	    !(s->ctx.cache = cache_create(cfg->cache_size / cfg->cache_shards, inrpd_cache_flush))) {
		snprintf(err, err_len, "out of memory for the packet cache");
		fwd_engine_free(s->ctx.fwd);
		free(s);
		return NULL;
	}
	s->ctx.tap = tap_queue_next(inrpd_tap, &s->cnt);
	static const struct fwd_tcp_ops tcp_ops = { .open = upstream_open, .abort = upstream_abort };
	fwd_engine_set_tcp(s->ctx.fwd, &tcp_ops);
	uv_timer_init(loop, &s->fwd_timer);
	s->fwd_timer.data = s;
	s->open_aux++;
	uv_poll_init(loop, &s->fwd_poll, fwd_engine_fd(s->ctx.fwd));
	s->fwd_poll.data = s;
	s->open_aux++;
	uv_poll_start(&s->fwd_poll, UV_READABLE, on_fwd_readable);
	for (unsigned i = 0; i < cfg->nlisten; i++) {
		const struct inrpd_listen *l = &cfg->listen[i];
		struct sockaddr_storage ss;
		char what[80];
		unsigned flags = l->ep.family == AF_INET6 ? UV_TCP_IPV6ONLY : 0;
		ip_endpoint_sockaddr(&(l)->ep, &ss);
		ip_endpoint_format(&(l)->ep, what, sizeof(what));
		uv_tcp_t *t = &s->listeners[i];
		uv_tcp_init(loop, t);
		t->data = s;
		s->nlisten = i + 1;
		s->open_listeners++;
		int rc = uv_tcp_bind(t, (struct sockaddr *)&ss, flags);
		if (rc == 0)
			rc = uv_listen((uv_stream_t *)t, TCP_BACKLOG, on_connection);
		if (rc < 0) {
			snprintf(err, err_len, "listen %s: tcp: %s", what, uv_strerror(rc));
			tcp_server_close(s);
			uv_run(loop, UV_RUN_NOWAIT);    /* runs the close callbacks */
			tcp_server_free(s);
			return NULL;
		}
	}
	return s;
}

/*
 * A query from another stream transport (DoT, DoH), answered by the main
 * thread's context with that transport's counters; a forwarded one comes
 * back through st->deliver with tag.
 */
size_t tcp_server_answer(struct tcp_server *s, struct inrpd_stream *st, uint64_t tag, const uint8_t *pkt,
			 size_t len, const struct sockaddr *peer, uint8_t *out, struct inrpd_counters *cnt)
{
	inrpd_worker_begin(&s->ctx);
	s->ctx.cnt = cnt;
	size_t alen = inrpd_answer(&s->ctx, pkt, len, peer, out);
	s->ctx.cnt = &s->cnt;
	if (alen == INRPD_FORWARD) {
		struct fwd_client fc = { .conn = st, .serial = tag };
		fwd_start(s->ctx.fwd, &s->ctx.req, &fc);
		fwd_rearm(s);
	}
	return alen;
}

void tcp_server_forget(struct tcp_server *s, struct inrpd_stream *st)
{
	fwd_cancel_conn(s->ctx.fwd, st);
	fwd_rearm(s);
}

void tcp_server_set_limits(struct tcp_server *s, unsigned max_conns, uint64_t idle_ms)
{
	s->max_conns = max_conns;
	s->idle_ms = idle_ms;
	for (struct lru_node *n = s->conns.head; n; n = n->next) {
		struct tcp_conn *c = lru_entry(n, struct tcp_conn, lru);
		if (!c->closing)
			uv_timer_set_repeat(&c->timer, idle_ms);
	}
}

void tcp_server_close(struct tcp_server *s)
{
	if (s->closing)
		return;
	s->closing = true;
	for (unsigned i = 0; i < s->nlisten; i++)
		uv_close((uv_handle_t *)&s->listeners[i], listener_closed);
	for (struct lru_node *n = s->conns.head; n; n = n->next)
		conn_close(lru_entry(n, struct tcp_conn, lru));
	/* closing the clients cancelled their queries' exchanges; this is for certainty */
	for (struct fwd_tcp_conn *u = s->upstreams; u; u = u->next)
		upstream_close(u);
	uv_close((uv_handle_t *)&s->fwd_timer, aux_closed);
	uv_close((uv_handle_t *)&s->fwd_poll, aux_closed);
}

void tcp_server_hops(const struct tcp_server *s, fwd_hop_fn fn, void *arg)
{
	fwd_engine_hops(s->ctx.fwd, fn, arg);
}

void tcp_server_cache_stats(const struct tcp_server *s, struct cache_stats *st)
{
	if (s->ctx.cache)
		cache_stats_add(s->ctx.cache, st);
}

bool tcp_server_cache_peek(const struct tcp_server *s, const struct cache_key *k, uint64_t now_ms,
			   struct cache_peek *p)
{
	return s->ctx.cache && cache_peek(s->ctx.cache, k, now_ms, p);
}

void tcp_server_counters(const struct tcp_server *s, struct inrpd_counters *sum)
{
	inrpd_counters_add(sum, &s->cnt);
}

void tcp_server_free(struct tcp_server *s)
{
	if (!s)
		return;
	if (s->open_listeners || s->conns.head || s->open_aux || s->upstreams)
		log_err("tcp: freeing the server with %u listeners, %u connections and %u upstream "
			"connections open", s->open_listeners, s->nconns, s->nupstreams);
	fwd_engine_free(s->ctx.fwd);
	cache_destroy(s->ctx.cache);
	free(s);
}
