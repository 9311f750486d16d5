/*
 * The transfer server; see xfrserv.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "dns.h"
#include "log.h"
#include "route.h"
#include "wire.h"
#include "xfr.h"
#include "xfrserv.h"

#define QUERY_MAX 4096          /* a transfer query is small; more is not one */
#define MSG_MAX DNS_TCP_MAX

struct conn;

struct xfrserv {
	uv_loop_t *loop;
	uv_tcp_t tcp;
	uv_udp_t udp;
	struct xfrserv_config cfg;
	struct prefix *acl;
	xfrserv_lookup_fn lookup;
	void *ctx;
	struct conn *conns;
	unsigned nconns;
	unsigned open_handles;
	bool stopping;
	struct xfrserv_stats st;
	uint64_t acl_logged_at;         /* uv_now of the last "outside allow-transfer" line */
	uint64_t acl_unlogged;          /* closed since, not logged one by one */
	uint8_t udp_buf[DNS_EDNS_MAX];
	uint8_t udp_out[512];
};

struct conn {
	uv_tcp_t tcp;                   /* first: the handle's address is the connection's */
	uv_timer_t timer;
	uv_write_t wreq;
	struct xfrserv *srv;
	struct conn *next, **pprev;
	char peer[INET6_ADDRSTRLEN + 8];
	struct sockaddr_storage peer_addr;
	uint8_t rbuf[QUERY_MAX + 2];
	size_t rlen;
	uint8_t *wbuf;                  /* 2 + MSG_MAX, while a reply is written */
	bool writing;
	bool transferring;
	bool eof;                       /* the client has sent all it will */
	bool closing;
	int handles;
	struct xfr_out out;
	char agg[NAME_MAX_TEXT];
	uint64_t t0;
	uint64_t deadline;              /* uv_now when time_limit_ms runs out */
	bool linked;                    /* in srv->conns, counted in nconns */
};

static void server_handle_closed(uv_handle_t *h)
{
	struct xfrserv *s = h->data;
	if (--s->open_handles == 0 && s->stopping) {
		free(s->acl);
		free(s);
	}
}

static void conn_handle_closed(uv_handle_t *h)
{
	struct conn *c = h->data;
	if (--c->handles > 0)
		return;
	struct xfrserv *s = c->srv;
	free(c->wbuf);
	free(c);
	server_handle_closed((uv_handle_t *)&s->tcp);   /* the connection counted as one */
}

static void log_transfer(struct conn *c, const char *outcome)
{
	struct xfr_out *x = &c->out;
	double secs = (double)(uv_hrtime() - c->t0) / 1e9;
	char what[64] = "";
	if (x->kind == XFR_OUT_IXFR)
		snprintf(what, sizeof(what), " from version %u", x->diffs.n ? x->diffs.recs[0].from : 0);
	log_info("transfer of %s to %s: %s, version %u%s, %llu records, %llu bytes in %llu messages, %.3f s%s%s",
		 c->agg, c->peer, xfr_out_kind_name(x->kind), x->serial, what,
		 (unsigned long long)x->records, (unsigned long long)x->bytes,
		 (unsigned long long)x->messages, secs, outcome ? ": " : "", outcome ? outcome : "");
}

static void end_transfer(struct conn *c, const char *aborted)
{
	if (!c->transferring)
		return;
	if (aborted) {
		c->srv->st.aborted++;
		log_transfer(c, aborted);
	} else {
		log_transfer(c, NULL);
	}
	c->srv->st.bytes += c->out.bytes;
	c->srv->st.active--;
	c->transferring = false;
	xfr_out_free(&c->out);
}

static void conn_close(struct conn *c, const char *why)
{
	if (c->closing)
		return;
	c->closing = true;
	end_transfer(c, why ? why : "connection closed");
	if (c->linked) {
		*c->pprev = c->next;
		if (c->next)
			c->next->pprev = c->pprev;
		c->srv->nconns--;
	}
	uv_timer_stop(&c->timer);
	uv_close((uv_handle_t *)&c->timer, conn_handle_closed);
	uv_close((uv_handle_t *)&c->tcp, conn_handle_closed);
}

static void on_idle(uv_timer_t *t)
{
	struct conn *c = t->data;
	struct xfrserv *s = c->srv;
	if (uv_now(s->loop) >= c->deadline) {
		s->st.closed_time++;
		log_info("transfer connection from %s closed: open for %u ms", c->peer, s->cfg.time_limit_ms);
		conn_close(c, "open too long");
		return;
	}
	s->st.closed_idle++;
	if (!c->transferring)
		log_debug("transfer connection from %s closed: no progress for %u ms", c->peer, s->cfg.idle_timeout_ms);
	conn_close(c, "no progress, timed out");
}

/* The idle timer again, or the connection's time limit if it comes first. */
static void progress(struct conn *c)
{
	uint64_t now = uv_now(c->srv->loop);
	uint64_t ms = c->srv->cfg.idle_timeout_ms;
	uint64_t left = c->deadline > now ? c->deadline - now : 0;
	uv_timer_start(&c->timer, on_idle, left < ms ? left : ms, 0);
}

static void process(struct conn *c);
static void send_next(struct conn *c);

static void on_write(uv_write_t *req, int status)
{
	struct conn *c = req->data;
	c->writing = false;
	if (c->closing)
		return;
	if (status < 0) {
		conn_close(c, uv_strerror(status));
		return;
	}
	progress(c);
	if (c->transferring)
		send_next(c);
	else
		process(c);
}

static void write_msg(struct conn *c, size_t len)
{
	c->wbuf[0] = (uint8_t)(len >> 8);
	c->wbuf[1] = (uint8_t)len;
	uv_buf_t b = uv_buf_init((char *)c->wbuf, (unsigned)(len + 2));
	c->wreq.data = c;
	c->writing = true;
	int rc = uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, on_write);
	if (rc < 0) {
		c->writing = false;
		conn_close(c, uv_strerror(rc));
	}
}

static void send_next(struct conn *c)
{
	size_t len = xfr_out_next(&c->out, c->wbuf + 2, MSG_MAX);
	if (len > 0) {
		write_msg(c, len);
		return;
	}
	if (c->out.error) {
		char why[128];
		snprintf(why, sizeof(why), "journal read failed: %s", strerror(-c->out.error));
		conn_close(c, why);
		return;
	}
	end_transfer(c, NULL);
	process(c);
}

static bool ensure_wbuf(struct conn *c)
{
	if (!c->wbuf)
		c->wbuf = malloc(2 + MSG_MAX);
	return c->wbuf != NULL;
}

/* The answer to one query: a lone message, or the start of a transfer. */
static void answer(struct conn *c, const uint8_t *pkt, size_t len)
{
	struct xfrserv *s = c->srv;
	struct xfr_query q;
	bool hq;
	int rc = xfr_query_parse(pkt, len, &q, &hq);
	if (rc < 0) {
		conn_close(c, "not a query");
		return;
	}
	if (!ensure_wbuf(c)) {
		conn_close(c, "out of memory");
		return;
	}
	struct aggstore *store = NULL;
	if (rc == 0 && !prefix_list_contains(s->acl, s->cfg.nacl, (struct sockaddr *)&c->peer_addr)) {
		rc = DNS_RCODE_REFUSED;
		s->st.refused_acl++;
		log_info("transfer query from %s refused: not in allow-transfer", c->peer);
	} else if (rc == 0 && !(store = s->lookup(s->ctx, &q.qname))) {
		rc = DNS_RCODE_NOTAUTH;
		s->st.notauth++;
	} else if (rc == 0 && q.qtype != DNS_TYPE_SOA && s->st.active >= s->cfg.max_transfers) {
		rc = DNS_RCODE_REFUSED;
		s->st.refused_busy++;
		log_warn("transfer query from %s refused: %u transfers running", c->peer, s->st.active);
	} else if (rc == DNS_RCODE_FORMERR) {
		s->st.formerr++;
	} else if (rc == DNS_RCODE_NOTIMP) {
		s->st.notimp++;
	}
	if (rc == 0) {
		int r = xfr_out_start(&c->out, store, &q);
		if (r < 0) {
			xfr_out_free(&c->out);
			rc = DNS_RCODE_SERVFAIL;
			s->st.servfail++;
		}
	}
	if (rc != 0) {
		size_t n = xfr_error_reply(&q, hq, (unsigned)rc, c->wbuf + 2, MSG_MAX);
		if (n == 0) {
			conn_close(c, "cannot answer");
			return;
		}
		write_msg(c, n);
		return;
	}
	switch (c->out.kind) {
	case XFR_OUT_AXFR: s->st.axfr++; break;
	case XFR_OUT_IXFR: s->st.ixfr++; break;
	case XFR_OUT_IXFR_FULL: s->st.ixfr_full++; break;
	case XFR_OUT_CURRENT: s->st.ixfr_current++; break;
	case XFR_OUT_SOA: s->st.soa++; break;
	}
	name_to_text(&q.qname, c->agg, sizeof(c->agg));
	if (c->out.kind == XFR_OUT_SOA) {
		size_t n = xfr_out_next(&c->out, c->wbuf + 2, MSG_MAX);
		xfr_out_free(&c->out);
		if (n == 0) {
			conn_close(c, "cannot answer");
			return;
		}
		write_msg(c, n);
		return;
	}
	c->transferring = true;
	c->t0 = uv_hrtime();
	s->st.active++;
	send_next(c);
}

/* Takes the next whole query from the read buffer, if no reply is being written. */
static void process(struct conn *c)
{
	if (c->closing || c->writing || c->transferring)
		return;
	struct wire_reader r = wire_reader(c->rbuf, c->rlen);
	size_t len = wire_u16(&r);
	if (!r.bad && (len < DNS_HEADER_LEN || len > QUERY_MAX)) {
		conn_close(c, "bad query length");
		return;
	}
	const uint8_t *q = wire_take(&r, len);
	if (!q) {
		if (c->eof)
			conn_close(c, NULL);    /* ended inside a query */
		return;
	}
	uint8_t pkt[QUERY_MAX];
	memcpy(pkt, q, len);
	size_t used = (size_t)(r.p - c->rbuf);
	memmove(c->rbuf, c->rbuf + used, c->rlen - used);
	c->rlen -= used;
	answer(c, pkt, len);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct conn *c = h->data;
	*buf = uv_buf_init((char *)c->rbuf + c->rlen, (unsigned)(sizeof(c->rbuf) - c->rlen));
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct conn *c = stream->data;
	if (nread == UV_EOF) {
		/* a half-close: answer what was asked, then close */
		c->eof = true;
		uv_read_stop(stream);
		process(c);
		return;
	}
	if (nread == UV_ENOBUFS) {
		conn_close(c, "too many queries queued");
		return;
	}
	if (nread < 0) {
		conn_close(c, uv_strerror((int)nread));
		return;
	}
	c->rlen += (size_t)nread;
	if (nread > 0)
		progress(c);
	process(c);
}

/* One line for the first connection from outside allow-transfer, then at most one a minute. */
static void log_outside(struct xfrserv *s, const struct conn *c)
{
	uint64_t now = uv_now(s->loop);
	if (s->acl_logged_at && now - s->acl_logged_at < 60000) {
		s->acl_unlogged++;
		log_debug("transfer connection from %s closed: not in allow-transfer", c->peer);
		return;
	}
	if (s->acl_unlogged)
		log_warn("transfer connection from %s closed: not in allow-transfer (and %llu more since the last "
			 "such line)", c->peer, (unsigned long long)s->acl_unlogged);
	else
		log_warn("transfer connection from %s closed: not in allow-transfer", c->peer);
	s->acl_logged_at = now;
	s->acl_unlogged = 0;
}

static void on_connection(uv_stream_t *server, int status)
{
	struct xfrserv *s = server->data;
	if (status < 0 || s->stopping)
		return;
	struct conn *c = calloc(1, sizeof(*c));
	if (!c)
		return;
	c->srv = s;
	uv_tcp_init(s->loop, &c->tcp);
	uv_timer_init(s->loop, &c->timer);
	c->tcp.data = c->timer.data = c;
	c->handles = 2;
	s->open_handles++;
	int alen = sizeof(c->peer_addr);
	if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0 ||
	    uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&c->peer_addr, &alen) < 0) {
		conn_close(c, NULL);
		return;
	}
	sockaddr_format_port((struct sockaddr *)&c->peer_addr, c->peer, sizeof(c->peer));
	/* before a slot is taken or a byte read: outsiders cannot hold the connections */
	if (!prefix_list_contains(s->acl, s->cfg.nacl, (struct sockaddr *)&c->peer_addr)) {
		s->st.closed_acl++;
		log_outside(s, c);
		conn_close(c, NULL);
		return;
	}
	if (s->nconns >= s->cfg.max_connections) {
		s->st.closed_full++;
		log_warn("transfer connection from %s closed: %u connections open", c->peer, s->nconns);
		conn_close(c, NULL);
		return;
	}
	c->next = s->conns;
	c->pprev = &s->conns;
	if (s->conns)
		s->conns->pprev = &c->next;
	s->conns = c;
	s->nconns++;
	c->linked = true;
	c->deadline = uv_now(s->loop) + s->cfg.time_limit_ms;
	progress(c);
	if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) < 0)
		conn_close(c, NULL);
}

static void udp_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct xfrserv *s = h->data;
	*buf = uv_buf_init((char *)s->udp_buf, sizeof(s->udp_buf));
}

/* SOA over UDP; IXFR gets the current SOA alone; AXFR is TCP only. */
static void udp_recv(uv_udp_t *h, ssize_t nread, const uv_buf_t *buf, const struct sockaddr *from,
		     unsigned flags)
{
	struct xfrserv *s = h->data;
	if (nread <= 0 || !from || (flags & UV_UDP_PARTIAL))
		return;
	struct xfr_query q;
	bool hq;
	int rc = xfr_query_parse(s->udp_buf, (size_t)nread, &q, &hq);
	if (rc < 0)
		return;
	struct aggstore *store = NULL;
	if (rc == 0 && !prefix_list_contains(s->acl, s->cfg.nacl, from)) {
		rc = DNS_RCODE_REFUSED;
		s->st.refused_acl++;
	} else if (rc == 0 && q.qtype == DNS_TYPE_AXFR) {
		rc = DNS_RCODE_NOTIMP;
		s->st.notimp++;
	} else if (rc == 0 && !(store = s->lookup(s->ctx, &q.qname))) {
		rc = DNS_RCODE_NOTAUTH;
		s->st.notauth++;
	}
	size_t n = 0;
	if (rc == 0) {
		struct xfr_out x;
		struct xfr_query soa = q;
		soa.qtype = DNS_TYPE_SOA;       /* IXFR over UDP: the current SOA alone */
		if (xfr_out_start(&x, store, &soa) == 0) {
			x.qtype = q.qtype;
			n = xfr_out_next(&x, s->udp_out, sizeof(s->udp_out));
			s->st.soa++;
		} else {
			rc = DNS_RCODE_SERVFAIL;
			s->st.servfail++;
		}
		xfr_out_free(&x);
	}
	if (rc != 0)
		n = xfr_error_reply(&q, hq, (unsigned)rc, s->udp_out, sizeof(s->udp_out));
	if (n) {
		uv_buf_t b = uv_buf_init((char *)s->udp_out, (unsigned)n);
		uv_udp_try_send(&s->udp, &b, 1, from);  /* dropped if the socket is full */
	}
}

int xfrserv_start(struct xfrserv **out, uv_loop_t *loop, const struct xfrserv_config *cfg,
		  xfrserv_lookup_fn lookup, void *ctx, char *err, size_t err_len)
{
	struct xfrserv *s = calloc(1, sizeof(*s));
	if (!s || (cfg->nacl && !(s->acl = calloc(cfg->nacl, sizeof(*s->acl))))) {
		free(s);
		snprintf(err, err_len, "out of memory");
		return -1;
	}
	s->loop = loop;
	s->cfg = *cfg;
	if (cfg->nacl)
		memcpy(s->acl, cfg->acl, cfg->nacl * sizeof(*s->acl));
	s->cfg.acl = s->acl;
	if (!s->cfg.max_transfers)
		s->cfg.max_transfers = 8;
	if (!s->cfg.max_connections)
		s->cfg.max_connections = 64;
	if (!s->cfg.idle_timeout_ms)
		s->cfg.idle_timeout_ms = 10000;
	if (!s->cfg.time_limit_ms)
		s->cfg.time_limit_ms = 600000;
	s->lookup = lookup;
	s->ctx = ctx;

	struct sockaddr_storage ss;
	sockaddr_from_bytes(cfg->family, cfg->addr, cfg->port, &ss);
	uv_tcp_init(loop, &s->tcp);
	uv_udp_init(loop, &s->udp);
	s->tcp.data = s->udp.data = s;
	s->open_handles = 2;
	int rc = uv_tcp_bind(&s->tcp, (struct sockaddr *)&ss, 0);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)&s->tcp, 64, on_connection);
	if (rc == 0) {
		/* UDP on the port TCP got */
		struct sockaddr_storage got;
		int glen = sizeof(got);
		uv_tcp_getsockname(&s->tcp, (struct sockaddr *)&got, &glen);
		rc = uv_udp_bind(&s->udp, (struct sockaddr *)&got, 0);
	}
	if (rc == 0)
		rc = uv_udp_recv_start(&s->udp, udp_alloc, udp_recv);
	if (rc < 0) {
		char a[IP_TEXT_MAX];
		snprintf(err, err_len, "transfer server on %s port %u: %s", ip_format(cfg->family, cfg->addr, a, sizeof(a)),
			 cfg->port, uv_strerror(rc));
		s->stopping = true;
		uv_close((uv_handle_t *)&s->tcp, server_handle_closed);
		uv_close((uv_handle_t *)&s->udp, server_handle_closed);
		return -1;
	}
	*out = s;
	return 0;
}

uint16_t xfrserv_port(const struct xfrserv *s)
{
	struct sockaddr_storage got;
	int glen = sizeof(got);
	if (uv_tcp_getsockname(&s->tcp, (struct sockaddr *)&got, &glen) < 0)
		return 0;
	return sockaddr_port((struct sockaddr *)&got);
}

void xfrserv_stats(const struct xfrserv *s, struct xfrserv_stats *st)
{
	*st = s->st;
}

void xfrserv_stop(struct xfrserv *s)
{
	if (!s || s->stopping)
		return;
	s->stopping = true;
	while (s->conns)
		conn_close(s->conns, "server stopping");
	uv_close((uv_handle_t *)&s->tcp, server_handle_closed);
	uv_close((uv_handle_t *)&s->udp, server_handle_closed);
}
