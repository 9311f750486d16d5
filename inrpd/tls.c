/*
 * DNS over TLS (RFC 7858) and the TLS under DNS over HTTPS (RFC 8484), on
 * the main thread's libuv loop.  One tls_server per transport, each with
 * its listeners and connections; lib/sig/tlslink.c is the TLS (GnuTLS,
 * no I/O of its own), doh.c the HTTP/2 over it.
 *
 * The transport only frames: every query goes through tcp.c's answer path
 * (tcp_server_answer: the answer code, the main thread's cache shard and
 * forwarding engine), with TCP's size limit (no TC: up to 65535 bytes)
 * and no rate limit (a client that completed a handshake has shown its
 * address, as over TCP).  Forwarded answers come back through the
 * connection's struct inrpd_stream with the tag the query was asked with:
 * whether it was padded (bit 0) and, for DoH, its stream.  Over DoT they
 * are written when they come, out of order (RFC 7766 6.2.1.1).  An answer
 * to a query with EDNS Padding is padded to a multiple of 468 bytes (RFC
 * 8467 4.1).
 *
 * Connections are as over TCP: tcp-idle-timeout bounds the handshake and
 * the time without a complete query; at tcp-max-connections (each
 * transport its own) a newcomer closes the connection idle the longest
 * that has no query in flight, else is refused; a client that does not
 * read stops being read.  A reload's new certificate is for the
 * connections that come after; each link keeps a reference to the
 * credentials it started with.  Session tickets are sealed with a key the
 * reload keeps (tlslink_cred_x509), so they resume across it.
 *
 * A connection from an address in proxy-protocol-from starts with a PROXY
 * v2 header (proxy.h) before its handshake: its raw bytes are held (at
 * most a header's worth) until the header is whole, and what follows it
 * in the same read is the first ciphertext.  Its queries are answered,
 * and logged to dnstap, as the client the header carries.  Those bytes do
 * not restart the idle clock: the handshake's bound is the header's too.
 *
 * Idle, a connection holds its socket, its TLS session and a read buffer
 * of a few hundred bytes: plaintext not yet a whole message is the only
 * buffer kept between reads; ciphertext is read into the server's buffer
 * and written from buffers handed to libuv until written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>
#include <urcu-qsbr.h>

#include "answer.h"
#include "dnsframe.h"
#include "dnspad.h"
#include "log.h"
#include "lru.h"
#include "proxy.h"
#include "runtime.h"
#include "stream.h"
#include "tls.h"
#include "tlslink.h"
#include "wire.h"

#define TLS_BACKLOG             256
#define TLS_WRITE_QUEUE_MAX     (256 * 1024)
#define TLS_READ_BUF            (64 * 1024)
#define TLS_RBUF_INIT           1024    /* DoT plaintext: grown as a message needs */
#define TAG_PADDED              1u      /* the query had EDNS Padding */

struct tls_conn {
	uv_tcp_t handle;                /* handle.data: this */
	uv_timer_t timer;
	struct inrpd_stream st;
	struct tls_server *srv;
	struct lru_node lru;            /* on srv->conns */
	struct tlslink *link;
	struct doh_session *doh;        /* DoH, after the handshake */
	uint8_t *rbuf;                  /* DoT: plaintext short of a whole message */
	size_t rcap, rlen;
	uint8_t *head;                  /* the start of a PROXY header, until it is whole */
	size_t head_len;
	struct sockaddr_storage peer;
	struct sockaddr_storage client; /* the peer, or the client its PROXY header carried */
	unsigned open_handles;
	unsigned forwarded;             /* queries in the forwarding engine */
	bool started;                   /* that header, or its absence, settled */
	bool handshaken, closing, paused, eof;
	bool reading;                   /* in conn_input: it flushes, not deliver() */
};

struct tls_write {
	uv_write_t req;
	struct tls_conn *conn;
	uint8_t *data;
};

struct tls_server {
	uv_loop_t *loop;
	enum tls_kind kind;
	struct tcp_server *tcp;
	struct tlslink_cred *cred;      /* for new connections */
	unsigned nlisten, open_listeners;
	uv_tcp_t listeners[INRPD_MAX_LISTEN];
	struct lru conns;               /* most recently active first, closing ones too */
	unsigned nconns;                /* on the list, closing ones included */
	unsigned nopen;
	unsigned max_conns;
	uint64_t idle_ms;
	bool closing;
	char path[INRPD_HTTPS_PATH_MAX + 1];
	const struct inrpd_runtime *rt; /* while online in conn_input */
	uint64_t arrived_us;
	struct inrpd_counters cnt;
	struct tls_counters tc;
	uint8_t rbuf[TLS_READ_BUF];     /* ciphertext, straight into a link */
	uint8_t plain[16384];           /* DoH: plaintext for HTTP/2, a TLS record at most */
	uint8_t answer[INRPD_ANSWER_MAX];
	uint8_t frame[2 + DNS_TCP_MAX]; /* an answer padded and framed */
};

static const char *const counter_names[TLS_COUNTERS] = {
	[TLS_CNT_HANDSHAKES] = "handshakes", [TLS_CNT_RESUMED] = "resumed",
	[TLS_CNT_FAIL_NOT_TLS] = "handshake_not_tls", [TLS_CNT_FAIL_VERSION] = "handshake_version",
	[TLS_CNT_FAIL_CIPHER] = "handshake_cipher", [TLS_CNT_FAIL_ALERT] = "handshake_alert",
	[TLS_CNT_FAIL_TIMEOUT] = "handshake_timeout", [TLS_CNT_FAIL_OTHER] = "handshake_other",
	[TLS_CNT_FAIL_ALPN] = "alpn_refused", [TLS_CNT_EVICTED] = "evicted", [TLS_CNT_FULL] = "full",
	[TLS_CNT_CONNECTIONS] = "connections",
	[TLS_CNT_HTTP_200] = "http_200", [TLS_CNT_HTTP_400] = "http_400", [TLS_CNT_HTTP_404] = "http_404",
	[TLS_CNT_HTTP_405] = "http_405", [TLS_CNT_HTTP_413] = "http_413", [TLS_CNT_HTTP_415] = "http_415",
	[TLS_CNT_HTTP_500] = "http_500", [TLS_CNT_HTTP_503] = "http_503",
};

const char *tls_counter_name(enum tls_counter i)
{
	return counter_names[i];
}

const char *tls_kind_name(enum tls_kind k)
{
	return k == TLS_DOT ? "tls" : "https";
}

static void tc_inc(struct tls_server *s, enum tls_counter i)
{
	CNT_INC(&s->tc, v[i]);
}

/* A query: the connection is the most recently active, and its idle clock starts again. */
static void conn_touch(struct tls_conn *c)
{
	uv_timer_again(&c->timer);
	lru_touch(&c->srv->conns, &c->lru);
}

static void conn_handle_closed(uv_handle_t *h)
{
	struct tls_conn *c = h->data;
	if (--c->open_handles > 0)
		return;
	struct tls_server *s = c->srv;
	lru_remove(&s->conns, &c->lru);
	s->nconns--;
	doh_session_free(c->doh);
	tlslink_free(c->link);
	free(c->rbuf);
	free(c->head);
	free(c);
}

static void conn_close(struct tls_conn *c)
{
	if (c->closing)
		return;
	struct tls_server *s = c->srv;
	c->closing = true;
	s->nopen--;
	CNT_SET(&s->tc, v[TLS_CNT_CONNECTIONS], s->nopen);
	if (c->forwarded) {
		tcp_server_forget(s->tcp, &c->st);
		c->forwarded = 0;
	}
	uv_read_stop((uv_stream_t *)&c->handle);
	uv_timer_stop(&c->timer);
	uv_close((uv_handle_t *)&c->timer, conn_handle_closed);
	uv_close((uv_handle_t *)&c->handle, conn_handle_closed);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct tls_conn *c = h->data;
	(void)suggested;
	/* libuv reads right after this, and on_read hands every byte to the link */
	*buf = uv_buf_init((char *)c->srv->rbuf, sizeof(c->srv->rbuf));
}

static void on_write(uv_write_t *req, int status)
{
	struct tls_write *w = req->data;
	struct tls_conn *c = w->conn;
	free(w->data);
	free(w);
	if (c->closing)
		return;
	if (status < 0) {
		log_debug("%s: write: %s", tls_kind_name(c->srv->kind), uv_strerror(status));
		conn_close(c);
		return;
	}
	if (c->paused && !c->eof &&
	    uv_stream_get_write_queue_size((uv_stream_t *)&c->handle) < TLS_WRITE_QUEUE_MAX / 2) {
		c->paused = false;
		uv_read_start((uv_stream_t *)&c->handle, on_alloc, on_read);
	}
}

/* Hands the link's ciphertext to libuv; false if the connection closed. */
static bool conn_flush(struct tls_conn *c)
{
	if (c->doh && doh_session_send(c->doh, c->link) < 0) {
		log_debug("https: %s", tlslink_error(c->link));
		conn_close(c);
		return false;
	}
	size_t len;
	uint8_t *p = tlslink_take(c->link, &len);
	if (!p)
		return true;
	struct tls_write *w = malloc(sizeof(*w));
	if (!w) {
		free(p);
		conn_close(c);
		return false;
	}
	w->conn = c;
	w->data = p;
	w->req.data = w;
	uv_buf_t b = uv_buf_init((char *)p, (unsigned)len);
	int rc = uv_write(&w->req, (uv_stream_t *)&c->handle, &b, 1, on_write);
	if (rc < 0) {
		log_debug("%s: write: %s", tls_kind_name(c->srv->kind), uv_strerror(rc));
		free(p);
		free(w);
		conn_close(c);
		return false;
	}
	return true;
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	struct tls_conn *c = req->data;
	(void)status;
	free(req);
	conn_close(c);
}

/* The client is done and every answer is queued: close once they are written. */
static void conn_finish(struct tls_conn *c)
{
	uv_shutdown_t *req = malloc(sizeof(*req));
	if (!req) {
		conn_close(c);
		return;
	}
	req->data = c;
	if (uv_shutdown(req, (uv_stream_t *)&c->handle, on_shutdown) < 0) {
		free(req);
		conn_close(c);
	}
}

/* A query or its answer, as it came or went, to dnstap. */
static void conn_tap(struct tls_conn *c, enum dnstap_type type, const uint8_t *msg, size_t len)
{
	struct tls_server *s = c->srv;
	tcp_server_tap(s->tcp, type, s->kind == TLS_DOT ? DNSTAP_DOT : DNSTAP_DOH, &c->handle,
		       (const struct sockaddr *)&c->client, msg, len);
}

/* One answer for the client: padded if its query was, framed (DoT) or a response (DoH). */
static void conn_answer(struct tls_conn *c, uint64_t tag, const uint8_t *msg, size_t len)
{
	struct tls_server *s = c->srv;
	uint8_t *m = s->frame + 2;
	memcpy(m, msg, len);
	if (tag & TAG_PADDED)
		len = dns_msg_pad(m, len, DNS_TCP_MAX, DNS_PAD_BLOCK_RESPONSE);
	CNT_INC(&s->cnt, answered);
	conn_tap(c, DNSTAP_CLIENT_RESPONSE, m, len);
	if (c->doh) {
		doh_session_respond(c->doh, (int32_t)(tag >> 1), m, len);
		return;
	}
	wire_store16(s->frame, (uint16_t)len);
	if (tlslink_write(c->link, s->frame, 2 + len) < 0) {
		log_debug("tls: %s", tlslink_error(c->link));
		CNT_INC(&s->cnt, dropped);
		conn_close(c);
	}
}

/* A query, on the loop and online: answered now, or when the forwarding engine has it. */
static void conn_query(struct tls_conn *c, uint64_t tag, const uint8_t *msg, size_t len)
{
	struct tls_server *s = c->srv;
	if (dns_msg_padded(msg, len))
		tag |= TAG_PADDED;
	conn_tap(c, DNSTAP_CLIENT_QUERY, msg, len);
	c->forwarded++;         /* as if forwarded: an answer may come back before it returns */
	size_t alen = tcp_server_answer(s->tcp, &c->st, tag, msg, len, (const struct sockaddr *)&c->client,
					s->answer, &s->cnt);
	if (alen == INRPD_FORWARD)
		return;
	c->forwarded--;
	if (alen == 0) {
		if (c->doh)
			doh_session_respond(c->doh, (int32_t)(tag >> 1), NULL, 0);
		return;
	}
	conn_answer(c, tag, s->answer, alen);
	inrpd_latency_observe(&s->cnt, INRPD_PATH_LOCAL, inrpd_now_us() - s->arrived_us, 1);
}

/* An answer from the forwarding engine. */
static void deliver(struct inrpd_stream *st, uint64_t tag, const uint8_t *msg, size_t len)
{
	struct tls_conn *c = (struct tls_conn *)((char *)st - offsetof(struct tls_conn, st));
	c->forwarded--;
	if (c->closing)
		return;
	conn_answer(c, tag, msg, len);
	if (c->closing || c->reading || !conn_flush(c))
		return;
	if (c->eof && c->forwarded == 0)
		conn_finish(c);
}

void tls_conn_request(struct tls_conn *c, int32_t id, const uint8_t *msg, size_t len)
{
	conn_touch(c);
	conn_query(c, (uint64_t)id << 1, msg, len);
}

void tls_conn_http_status(struct tls_conn *c, unsigned status)
{
	static const struct {
		unsigned status;
		enum tls_counter i;
	} map[] = {
		{ 200, TLS_CNT_HTTP_200 }, { 400, TLS_CNT_HTTP_400 }, { 404, TLS_CNT_HTTP_404 },
		{ 405, TLS_CNT_HTTP_405 }, { 413, TLS_CNT_HTTP_413 }, { 415, TLS_CNT_HTTP_415 },
		{ 500, TLS_CNT_HTTP_500 }, { 503, TLS_CNT_HTTP_503 },
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (map[i].status == status)
			tc_inc(c->srv, map[i].i);
}

/* DoT: whole messages off the front of the plaintext; false on a bad frame. */
static bool dot_messages(struct tls_conn *c)
{
	size_t off = 0, mlen;
	enum dns_frame f;
	while (!c->closing && (f = dns_frame_next(c->rbuf + off, c->rlen - off, &mlen)) == DNS_FRAME_MSG) {
		conn_touch(c);
		conn_query(c, 0, c->rbuf + off + 2, mlen);
		off += 2 + mlen;
	}
	if (c->closing)
		return false;
	if (f == DNS_FRAME_BAD)
		return false;
	c->rlen -= off;
	if (c->rlen == 0) {
		free(c->rbuf);          /* an idle connection keeps no buffer */
		c->rbuf = NULL;
		c->rcap = 0;
	} else if (off) {
		memmove(c->rbuf, c->rbuf + off, c->rlen);
	}
	return true;
}

/* Plaintext from the link until it has no more: 1, 0 when the client closed TLS, -1 on error. */
static int conn_plaintext(struct tls_conn *c)
{
	for (;;) {
		ssize_t n;
		if (c->doh) {
			n = tlslink_read(c->link, c->srv->plain, sizeof(c->srv->plain));
			if (n > 0 && doh_session_input(c->doh, c->srv->plain, (size_t)n) < 0)
				return -1;
		} else {
			size_t cap = c->rcap ? dns_frame_grow(c->rcap, c->rlen) : TLS_RBUF_INIT;
			if (cap != c->rcap) {
				uint8_t *nb = realloc(c->rbuf, cap);
				if (!nb)
					return -1;
				c->rbuf = nb;
				c->rcap = cap;
			}
			n = tlslink_read(c->link, c->rbuf + c->rlen, c->rcap - c->rlen);
			if (n > 0) {
				c->rlen += (size_t)n;
				if (!dot_messages(c))
					return -1;
			}
		}
		if (c->closing)
			return -1;
		if (n == 0)
			return 1;
		if (n < 0)
			return 0;
	}
}

static void handshake_failed(struct tls_conn *c)
{
	static const enum tls_counter by_reason[] = {
		[TLSLINK_FAIL_OTHER] = TLS_CNT_FAIL_OTHER, [TLSLINK_FAIL_NOT_TLS] = TLS_CNT_FAIL_NOT_TLS,
		[TLSLINK_FAIL_VERSION] = TLS_CNT_FAIL_VERSION, [TLSLINK_FAIL_CIPHER] = TLS_CNT_FAIL_CIPHER,
		[TLSLINK_FAIL_ALERT] = TLS_CNT_FAIL_ALERT,
	};
	tc_inc(c->srv, by_reason[tlslink_failure(c->link)]);
	log_debug("%s: %s", tls_kind_name(c->srv->kind), tlslink_error(c->link));
	conn_flush(c);          /* our alert, if any */
	conn_close(c);
}

/* After ciphertext came in: the handshake, then the queries. */
static void conn_input(struct tls_conn *c)
{
	struct tls_server *s = c->srv;
	if (!c->handshaken) {
		int rc = tlslink_handshake(c->link);
		if (rc < 0) {
			handshake_failed(c);
			return;
		}
		if (rc == 0) {
			conn_flush(c);
			return;
		}
		c->handshaken = true;
		tc_inc(s, TLS_CNT_HANDSHAKES);
		if (tlslink_resumed(c->link))
			tc_inc(s, TLS_CNT_RESUMED);
		if (s->kind == TLS_DOH) {
			if (!tlslink_alpn_is(c->link, "h2")) {
				log_debug("https: the client did not agree to HTTP/2 (ALPN h2)");
				tc_inc(s, TLS_CNT_FAIL_ALPN);
				conn_close(c);
				return;
			}
			c->doh = doh_session_new(c, s->path);
			if (!c->doh) {
				log_err("https: out of memory for an HTTP/2 session");
				conn_close(c);
				return;
			}
		}
		uv_timer_again(&c->timer);
	}
	s->arrived_us = inrpd_now_us();
	rcu_thread_online();
	s->rt = rcu_dereference(inrpd_rt);
	c->reading = true;
	int rc = conn_plaintext(c);
	c->reading = false;
	s->rt = NULL;
	rcu_thread_offline();
	if (c->closing)
		return;
	if (rc < 0) {
		log_debug("%s: %s", tls_kind_name(s->kind), c->doh ? "HTTP/2 error" : tlslink_error(c->link));
		conn_flush(c);
		conn_close(c);
		return;
	}
	if (!conn_flush(c))
		return;
	if (rc == 0 || (c->doh && doh_session_done(c->doh))) {
		/* the client closed TLS: the answers in flight still go */
		log_debug("%s: %s", tls_kind_name(s->kind), tlslink_error(c->link));
		c->eof = true;
		uv_read_stop((uv_stream_t *)&c->handle);
		if (c->forwarded == 0)
			conn_finish(c);
		return;
	}
	if (uv_stream_get_write_queue_size((uv_stream_t *)&c->handle) > TLS_WRITE_QUEUE_MAX) {
		c->paused = true;
		uv_read_stop((uv_stream_t *)&c->handle);
	}
}

/* Ciphertext for the link, in two pieces (either empty); false if the connection closed. */
static bool conn_ciphertext(struct tls_conn *c, const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	uint8_t *room = tlslink_space(c->link, alen + blen);
	if (!room) {
		log_err("%s: out of memory for a read", tls_kind_name(c->srv->kind));
		conn_close(c);
		return false;
	}
	if (alen)
		memcpy(room, a, alen);
	if (blen)
		memcpy(room + alen, b, blen);
	tlslink_commit(c->link, alen + blen);
	return true;
}

/*
 * The first bytes, before the handshake: a PROXY header settled (held
 * until whole), then the rest as ciphertext.  False if the connection
 * closed or has nothing for TLS yet.
 */
static bool conn_start(struct tls_conn *c, const uint8_t *in, size_t n)
{
	struct tls_server *s = c->srv;
	const uint8_t *p = in;
	size_t len = n, took = n, used = 0;
	if (c->head) {
		took = n < INRPD_PROXY_MAX - c->head_len ? n : INRPD_PROXY_MAX - c->head_len;
		memcpy(c->head + c->head_len, in, took);
		c->head_len += took;
		p = c->head;
		len = c->head_len;
	}
	rcu_thread_online();
	enum inrpd_proxy_verdict v = inrpd_proxy_stream(rcu_dereference(inrpd_rt), (struct sockaddr *)&c->peer,
							p, len, &used, &c->client, &s->cnt);
	rcu_thread_offline();
	if (v == INRPD_PROXY_WAIT && took == n && len < INRPD_PROXY_MAX) {
		/* a header not yet whole is shorter than INRPD_PROXY_MAX */
		if (!c->head) {
			if (!(c->head = malloc(INRPD_PROXY_MAX))) {
				log_err("%s: out of memory for a PROXY header", tls_kind_name(s->kind));
				conn_close(c);
				return false;
			}
			memcpy(c->head, in, n);
			c->head_len = n;
		}
		return false;
	}
	if (v == INRPD_PROXY_WAIT)
		inrpd_proxy_stream_cut(&s->cnt);        /* cannot be: a header longer than its bound */
	if (v != INRPD_PROXY_PASS) {
		conn_close(c);
		return false;
	}
	c->started = true;
	/* dnsdist sends the ClientHello in the header's segment */
	bool more = len - used + n - took > 0;
	bool ok = !more || conn_ciphertext(c, p + used, len - used, in + took, n - took);
	free(c->head);
	c->head = NULL;
	c->head_len = 0;
	return ok && more;
}

/* The client went away or idled with a PROXY header begun: cut short. */
static bool conn_cut(struct tls_conn *c)
{
	if (c->started || !c->head_len)
		return false;
	inrpd_proxy_stream_cut(&c->srv->cnt);
	return true;
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct tls_conn *c = stream->data;
	if (c->closing || nread == 0)
		return;
	if (nread > 0) {
		const uint8_t *in = (const uint8_t *)buf->base;
		if (!c->started ? conn_start(c, in, (size_t)nread) : conn_ciphertext(c, in, (size_t)nread, NULL, 0))
			conn_input(c);
		return;
	}
	if (nread == UV_EOF && c->handshaken) {
		c->eof = true;
		uv_read_stop(stream);
		if (c->forwarded == 0)
			conn_finish(c);
		return;
	}
	if (!conn_cut(c) && !c->handshaken)
		tc_inc(c->srv, TLS_CNT_FAIL_OTHER);
	log_debug("%s: read: %s", tls_kind_name(c->srv->kind), uv_strerror((int)nread));
	conn_close(c);
}

static void on_idle(uv_timer_t *t)
{
	struct tls_conn *c = t->data;
	if (c->forwarded)
		return;                 /* waiting for us is not idle */
	if (!conn_cut(c) && !c->handshaken)
		tc_inc(c->srv, TLS_CNT_FAIL_TIMEOUT);
	log_debug("%s: closing idle connection", tls_kind_name(c->srv->kind));
	conn_close(c);
}

static bool conn_evict_idle(struct tls_server *s)
{
	for (struct lru_node *n = s->conns.tail; n; n = n->prev) {
		struct tls_conn *c = lru_entry(n, struct tls_conn, lru);
		if (c->closing || c->forwarded)
			continue;
		tc_inc(s, TLS_CNT_EVICTED);
		conn_close(c);
		return true;
	}
	return false;
}

static void on_connection(uv_stream_t *server, int status)
{
	struct tls_server *s = server->data;
	char err[160];
	if (status < 0) {
		log_warn("%s: accept: %s", tls_kind_name(s->kind), uv_strerror(status));
		return;
	}
	struct tls_conn *c = calloc(1, sizeof(*c));
	if (!c) {
		log_err("%s: out of memory for a connection", tls_kind_name(s->kind));
		return;
	}
	c->srv = s;
	c->st.deliver = deliver;
	uv_tcp_init(s->loop, &c->handle);
	c->handle.data = c;
	c->open_handles = 1;
	bool ok = uv_accept(server, (uv_stream_t *)&c->handle) == 0 && !s->closing;
	if (ok && s->nopen >= s->max_conns && !conn_evict_idle(s)) {
		tc_inc(s, TLS_CNT_FULL);
		ok = false;
	}
	if (ok && !(c->link = tlslink_new(s->cred, true, err, sizeof(err)))) {
		log_err("%s: %s", tls_kind_name(s->kind), err);
		ok = false;
	}
	if (ok && tlslink_set_alpn(c->link, s->kind == TLS_DOT ? "dot" : "h2") < 0) {
		log_err("%s: %s", tls_kind_name(s->kind), tlslink_error(c->link));
		ok = false;
	}
	int plen = sizeof(c->peer);
	if (ok && uv_tcp_getpeername(&c->handle, (struct sockaddr *)&c->peer, &plen) < 0)
		c->peer.ss_family = AF_UNSPEC;  /* not allowed recursion */
	c->client = c->peer;
	if (!ok) {
		c->closing = true;
		s->nconns++;
		lru_push(&s->conns, &c->lru);
		uv_close((uv_handle_t *)&c->handle, conn_handle_closed);
		return;
	}
	uv_timer_init(s->loop, &c->timer);
	c->timer.data = c;
	c->open_handles = 2;
	lru_push(&s->conns, &c->lru);
	s->nconns++;
	s->nopen++;
	CNT_SET(&s->tc, v[TLS_CNT_CONNECTIONS], s->nopen);
	uv_tcp_nodelay(&c->handle, 1);
	uv_timer_start(&c->timer, on_idle, s->idle_ms, s->idle_ms);
	int rc = uv_read_start((uv_stream_t *)&c->handle, on_alloc, on_read);
	if (rc < 0) {
		log_debug("%s: read start: %s", tls_kind_name(s->kind), uv_strerror(rc));
		conn_close(c);
	}
}

static void listener_closed(uv_handle_t *h)
{
	struct tls_server *s = h->data;
	s->open_listeners--;
}

struct tls_server *tls_server_open(uv_loop_t *loop, enum tls_kind kind, const struct inrpd_config *cfg,
				   struct tcp_server *tcp, char *err, size_t err_len)
{
	const struct inrpd_listen *ls = kind == TLS_DOT ? cfg->tls.dot : cfg->tls.doh;
	unsigned n = kind == TLS_DOT ? cfg->tls.ndot : cfg->tls.ndoh;
	struct tls_server *s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, err_len, "out of memory");
		return NULL;
	}
	s->loop = loop;
	s->kind = kind;
	s->tcp = tcp;
	tls_server_reload(s, cfg);
	for (unsigned i = 0; i < n; i++) {
		struct sockaddr_storage ss;
		char what[80];
		unsigned flags = ls[i].ep.family == AF_INET6 ? UV_TCP_IPV6ONLY : 0;
		ip_endpoint_sockaddr(&ls[i].ep, &ss);
		ip_endpoint_format(&ls[i].ep, what, sizeof(what));
		uv_tcp_t *t = &s->listeners[i];
		uv_tcp_init(loop, t);
		t->data = s;
		s->nlisten = i + 1;
		s->open_listeners++;
		int rc = uv_tcp_bind(t, (struct sockaddr *)&ss, flags);
		if (rc == 0)
			rc = uv_listen((uv_stream_t *)t, TLS_BACKLOG, on_connection);
		if (rc < 0) {
			snprintf(err, err_len, "listen-%s %s: %s", tls_kind_name(kind), what, uv_strerror(rc));
			tls_server_close(s);
			uv_run(loop, UV_RUN_NOWAIT);    /* runs the close callbacks */
			tls_server_free(s);
			return NULL;
		}
	}
	return s;
}

void tls_server_reload(struct tls_server *s, const struct inrpd_config *cfg)
{
	s->max_conns = cfg->tcp_max_conns;
	s->idle_ms = cfg->tcp_idle_ms;
	snprintf(s->path, sizeof(s->path), "%s", cfg->tls.https_path);
	for (struct lru_node *n = s->conns.head; n; n = n->next) {
		struct tls_conn *c = lru_entry(n, struct tls_conn, lru);
		if (!c->closing)
			uv_timer_set_repeat(&c->timer, s->idle_ms);
	}
	if (cfg->tls.cred) {
		if (s->cred)
			tlslink_cred_share_tickets(cfg->tls.cred, s->cred);
		tlslink_cred_free(s->cred);     /* open links keep their own reference */
		s->cred = tlslink_cred_ref(cfg->tls.cred);
	}
}

void tls_server_close(struct tls_server *s)
{
	if (s->closing)
		return;
	s->closing = true;
	for (unsigned i = 0; i < s->nlisten; i++)
		uv_close((uv_handle_t *)&s->listeners[i], listener_closed);
	for (struct lru_node *n = s->conns.head; n; n = n->next)
		conn_close(lru_entry(n, struct tls_conn, lru));
}

void tls_server_free(struct tls_server *s)
{
	if (!s)
		return;
	if (s->open_listeners || s->conns.head)
		log_err("%s: freeing the server with %u listeners and %u connections open",
			tls_kind_name(s->kind), s->open_listeners, s->nconns);
	tlslink_cred_free(s->cred);
	free(s);
}

void tls_server_counters(const struct tls_server *s, struct inrpd_counters *sum, struct tls_counters *t)
{
	inrpd_counters_add(sum, &s->cnt);
	for (unsigned i = 0; i < TLS_COUNTERS; i++)
		t->v[i] += __atomic_load_n(&s->tc.v[i], __ATOMIC_RELAXED);
}

int64_t tls_server_not_after(const struct tls_server *s)
{
	return s->cred ? tlslink_cred_not_after(s->cred) : 0;
}
