/*
 * NBRP sessions (docs/NBRP.md), BGP's finite state machine simplified:
 *
 *   Idle --connect/accept--> OpenSent --their OPEN--> OpenConfirm
 *        --their KEEPALIVE--> Established
 *
 * Both sides send OPEN as soon as the TCP connection is up; a valid OPEN
 * is answered with KEEPALIVE.  Either side may connect, so a peer has up
 * to two connections ([0] ours, [1] theirs); when both have an OPEN, the
 * one opened by the router whose name sorts higher survives (RFC 4271
 * 6.8) and the other gets CEASE/collision.  Any error is a NOTIFICATION
 * that says what was wrong, then the connection closes; a session that
 * closes withdraws its routes, and ours reconnects with a doubling backoff.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "log.h"
#include "nbrpd.h"

#define READ_BUF                (64 * 1024)
#define RETRY_MAX_FACTOR        32
#define OPEN_HOLD_MS            30000   /* waiting for OPEN with no hold time agreed */
#define WRITE_QUEUE_MAX         (64u << 20)

struct conn {
	uv_tcp_t tcp;
	uv_connect_t connect_req;
	uv_timer_t hold_timer;
	uv_timer_t keepalive_timer;
	struct nbrpd *d;
	struct peer *peer;
	int dir;                        /* 0: we connected, 1: they did */
	enum session_state state;
	uint32_t hold_s;                /* agreed, 0: none */
	uint32_t peer_restart_s;        /* from its OPEN */
	bool notified;                  /* a NOTIFICATION went either way: no graceful restart */
	unsigned open_handles;
	bool closing;
	bool close_after_write;
	struct nbrp_reader reader;     /* read into straight from the socket */
};

struct write_req {
	uv_write_t req;
	struct conn *c;
	uint8_t *data;
};

static const char *const state_names[] = { "Idle", "Connect", "OpenSent", "OpenConfirm", "Established" };

const char *session_state_name(enum session_state s)
{
	return s <= SESSION_ESTABLISHED ? state_names[s] : "?";
}

static void schedule_retry(struct nbrpd *d, struct peer *p);
static void conn_close(struct conn *c);

static void on_restart_over(uv_timer_t *t)
{
	struct peer *p = t->data;
	struct nbrpd *d = p->restart_timer.loop->data;
	if (!p->restarting)
		return;
	p->restarting = false;
	log_warn("peer %s: restart time over, dropping its stale routes", p->cfg.name);
	rib_peer_sweep(d, p);
}

static void handle_closed(uv_handle_t *h)
{
	struct conn *c = h->data;
	if (--c->open_handles == 0) {
		nbrp_reader_free(&c->reader);
		free(c);
	}
}

/* Forgets the connection; if it carried the session, the session is down. */
static void conn_close(struct conn *c)
{
	if (c->closing)
		return;
	c->closing = true;
	struct peer *p = c->peer;
	struct nbrpd *d = c->d;
	if (p) {
		if (p->conn[c->dir] == c)
			p->conn[c->dir] = NULL;
		if (p->established == c) {
			p->established = NULL;
			p->flaps++;
			if (!c->notified && p->restart_time_s && !d->stopping && p->enabled) {
				/* it vanished without a word: it may be restarting */
				log_warn("peer %s: session down; keeping its routes for %u s (graceful restart)",
					 p->cfg.name, p->restart_time_s);
				p->restarting = true;
				rib_peer_stale(d, p);
				uv_timer_start(&p->restart_timer, on_restart_over, (uint64_t)p->restart_time_s * 1000, 0);
			} else {
				log_warn("peer %s: session down", p->cfg.name);
				if (p->restarting) {
					p->restarting = false;
					uv_timer_stop(&p->restart_timer);
				}
				rib_peer_down(d, p);
			}
		}
	}
	uv_read_stop((uv_stream_t *)&c->tcp);
	uv_close((uv_handle_t *)&c->tcp, handle_closed);
	uv_close((uv_handle_t *)&c->hold_timer, handle_closed);
	uv_close((uv_handle_t *)&c->keepalive_timer, handle_closed);
	if (p && c->dir == 0)
		schedule_retry(d, p);
}

static void on_write(uv_write_t *req, int status)
{
	struct write_req *w = req->data;
	struct conn *c = w->c;
	free(w->data);
	free(w);
	if (c->closing)
		return;
	if (status < 0) {
		log_debug("peer %s: write: %s", c->peer ? c->peer->cfg.name : "?", uv_strerror(status));
		conn_close(c);
		return;
	}
	if (c->close_after_write && uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp) == 0)
		conn_close(c);
}

static void conn_send(struct conn *c, const Nbrp__Message *m)
{
	if (c->closing || c->close_after_write)
		return;
	size_t len;
	uint8_t *frame = nbrp_encode(m, &len);
	struct write_req *w = frame ? malloc(sizeof(*w)) : NULL;
	if (!w) {
		free(frame);
		log_err("peer %s: out of memory for a message", c->peer ? c->peer->cfg.name : "?");
		conn_close(c);
		return;
	}
	w->c = c;
	w->data = frame;
	w->req.data = w;
	uv_buf_t b = uv_buf_init((char *)frame, (unsigned)len);
	int rc = uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, on_write);
	if (rc < 0) {
		free(frame);
		free(w);
		conn_close(c);
		return;
	}
	if (uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp) > WRITE_QUEUE_MAX) {
		log_warn("peer %s: %u bytes unsent, closing", c->peer ? c->peer->cfg.name : "?",
			 (unsigned)uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp));
		conn_close(c);
	}
}

/* Sends a NOTIFICATION, then closes once it is written. */
static void conn_notify(struct conn *c, uint8_t code, uint8_t subcode, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void conn_notify(struct conn *c, uint8_t code, uint8_t subcode, const char *fmt, ...)
{
	struct nbrp_error e = { .code = code, .subcode = subcode };
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e.text, sizeof(e.text), fmt, ap);
	va_end(ap);
	struct peer *p = c->peer;
	if (p) {
		snprintf(p->last_error, sizeof(p->last_error), "sent %s: %s",
			 nbrp_error_text(code, subcode), e.text);
		p->notifications_out++;
	}
	log_warn("peer %s: sending NOTIFICATION %u/%u (%s): %s", p ? p->cfg.name : "?", code, subcode,
		 nbrp_error_text(code, subcode), e.text);
	Nbrp__Message m;
	Nbrp__Notification n;
	nbrp_notification(&m, &n, &e);
	conn_send(c, &m);
	c->notified = true;
	uv_read_stop((uv_stream_t *)&c->tcp);
	c->close_after_write = true;
	if (!c->closing && uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp) == 0)
		conn_close(c);
}

static void on_hold_expired(uv_timer_t *t)
{
	struct conn *c = t->data;
	conn_notify(c, NBRP_ERR_HOLD_TIMER, 0, "no message for %u s", c->hold_s ? c->hold_s : OPEN_HOLD_MS / 1000);
}

static void on_keepalive_timer(uv_timer_t *t)
{
	struct conn *c = t->data;
	Nbrp__Message m = NBRP__MESSAGE__INIT;
	Nbrp__Keepalive k = NBRP__KEEPALIVE__INIT;
	m.body_case = NBRP__MESSAGE__BODY_KEEPALIVE;
	m.keepalive = &k;
	conn_send(c, &m);
}

static void hold_restart(struct conn *c)
{
	uint64_t ms = c->state >= SESSION_OPENCONFIRM ? (uint64_t)c->hold_s * 1000 : OPEN_HOLD_MS;
	if (ms)
		uv_timer_start(&c->hold_timer, on_hold_expired, ms, 0);
	else
		uv_timer_stop(&c->hold_timer);
}

static void send_open(struct conn *c)
{
	const struct nbrpd_config *cfg = c->d->cfg;
	Nbrp__Message m = NBRP__MESSAGE__INIT;
	Nbrp__Open o = NBRP__OPEN__INIT;
	static char *caps[] = { "route-refresh" };
	o.version = NBRP_VERSION;
	o.router_name = (char *)cfg->router_name;
	o.hold_time = cfg->hold_time_s;
	o.restart_time = cfg->restart_time_s;
	o.n_capabilities = 1;
	o.capabilities = caps;
	m.body_case = NBRP__MESSAGE__BODY_OPEN;
	m.open = &o;
	c->state = SESSION_OPENSENT;
	conn_send(c, &m);
	hold_restart(c);
}

void peer_notify(struct nbrpd *d, struct peer *p, uint8_t code, uint8_t subcode, const char *text)
{
	(void)d;
	if (p->established)
		conn_notify(p->established, code, subcode, "%s", text);
}

void peer_send(struct nbrpd *d, struct peer *p, const Nbrp__Message *m)
{
	(void)d;
	if (p->established)
		conn_send(p->established, m);
}

/* Both connections have an OPEN: keep the one the higher-named router opened. */
static bool collision_lost(struct conn *c)
{
	struct peer *p = c->peer;
	struct conn *other = p->conn[!c->dir];
	if (!other || other->closing || other->state < SESSION_OPENCONFIRM)
		return false;
	if (other->state == SESSION_ESTABLISHED)
		return true;
	bool we_are_higher = strcmp(c->d->cfg->router_name, p->cfg.name) > 0;
	int winner = we_are_higher ? 0 : 1;
	if (c->dir == winner) {
		conn_notify(other, NBRP_ERR_CEASE, NBRP_CEASE_COLLISION, "connection collision");
		return false;
	}
	return true;
}

static void on_open(struct conn *c, const Nbrp__Open *o)
{
	struct peer *p = c->peer;
	struct nbrp_error e;
	if (c->state != SESSION_OPENSENT) {
		conn_notify(c, NBRP_ERR_FSM, 1, "OPEN in state %s", session_state_name(c->state));
		return;
	}
	if (nbrp_check_open(o, &e) < 0) {
		conn_notify(c, e.code, e.subcode, "%s", e.text);
		return;
	}
	if (o->server_mode != p->cfg.server_mode) {
		conn_notify(c, NBRP_ERR_OPEN, NBRP_OPEN_BAD_ROLE, "%s", p->cfg.server_mode
			    ? "configured as a content server's session, but the OPEN is a router's"
			    : "configured as a router's session, but the OPEN is a content server's");
		return;
	}
	if (strcmp(o->router_name, p->cfg.name) != 0) {
		conn_notify(c, NBRP_ERR_OPEN, NBRP_OPEN_BAD_ROUTER_NAME, "expected router \"%s\", not \"%.100s\"",
			    p->cfg.name, o->router_name);
		return;
	}
	c->peer_restart_s = o->restart_time;
	uint32_t ours = c->d->cfg->hold_time_s, theirs = o->hold_time;
	c->hold_s = ours == 0 || theirs == 0 ? 0 : ours < theirs ? ours : theirs;
	c->state = SESSION_OPENCONFIRM;
	if (collision_lost(c)) {
		conn_notify(c, NBRP_ERR_CEASE, NBRP_CEASE_COLLISION, "connection collision");
		return;
	}
	on_keepalive_timer(&c->keepalive_timer);
	hold_restart(c);
}

static void on_established(struct conn *c)
{
	struct peer *p = c->peer;
	struct nbrpd *d = c->d;
	struct conn *other = p->conn[!c->dir];
	if (other && !other->closing)
		conn_notify(other, NBRP_ERR_CEASE, NBRP_CEASE_COLLISION, "connection collision");
	c->state = SESSION_ESTABLISHED;
	p->established = c;
	p->hold_time_s = c->hold_s;
	p->established_at = uv_now(d->loop);
	p->retry_ms = d->cfg->connect_retry_ms;
	p->eor_received = false;
	p->restart_time_s = c->peer_restart_s;
	p->max_warned = false;
	p->last_error[0] = 0;
	if (c->hold_s)
		uv_timer_start(&c->keepalive_timer, on_keepalive_timer, c->hold_s * 1000 / 3, c->hold_s * 1000 / 3);
	log_info("peer %s: session established (hold time %u s)", p->cfg.name, c->hold_s);
	rib_peer_up(d, p);
}

static void on_message(struct conn *c, const Nbrp__Message *m)
{
	struct peer *p = c->peer;
	struct nbrpd *d = c->d;
	hold_restart(c);
	switch (m->body_case) {
	case NBRP__MESSAGE__BODY_OPEN:
		on_open(c, m->open);
		return;
	case NBRP__MESSAGE__BODY_KEEPALIVE:
		if (c->state == SESSION_OPENCONFIRM)
			on_established(c);
		else if (c->state != SESSION_ESTABLISHED)
			conn_notify(c, NBRP_ERR_FSM, 1, "KEEPALIVE in state %s", session_state_name(c->state));
		return;
	case NBRP__MESSAGE__BODY_NOTIFICATION: {
		const Nbrp__Notification *n = m->notification;
		c->notified = true;
		p->notifications_in++;
		snprintf(p->last_error, sizeof(p->last_error), "received %s: %.200s",
			 nbrp_error_text((uint8_t)n->code, (uint8_t)n->subcode), n->text ? n->text : "");
		log_warn("peer %s: NOTIFICATION %u/%u received (%s): %.200s", p->cfg.name, n->code, n->subcode,
			 nbrp_error_text((uint8_t)n->code, (uint8_t)n->subcode), n->text ? n->text : "");
		conn_close(c);
		return;
	}
	default:
		break;
	}
	if (c->state != SESSION_ESTABLISHED) {
		conn_notify(c, NBRP_ERR_FSM, 1, "message %d before the session is established",
			    (int)m->body_case);
		return;
	}
	switch (m->body_case) {
	case NBRP__MESSAGE__BODY_UPDATE:
		p->updates_in++;
		rib_peer_update(d, p, m->update);
		return;
	case NBRP__MESSAGE__BODY_END_OF_RIB:
		p->eor_received = true;
		if (p->restarting) {
			/* what it did not send again is gone */
			p->restarting = false;
			uv_timer_stop(&p->restart_timer);
			rib_peer_sweep(d, p);
		}
		log_info("peer %s: end of RIB, %llu names", p->cfg.name, (unsigned long long)p->names);
		nbrpd_check_ready(d);
		return;
	case NBRP__MESSAGE__BODY_ROUTE_REFRESH:
		rib_peer_up(d, p);
		return;
	default:
		return;
	}
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct conn *c = h->data;
	(void)suggested;
	/* no room (out of memory): libuv reports UV_ENOBUFS to on_read */
	uint8_t *room = nbrp_reader_space(&c->reader, READ_BUF);
	*buf = uv_buf_init((char *)room, room ? READ_BUF : 0);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct conn *c = s->data;
	(void)buf;
	if (c->closing || c->close_after_write)
		return;
	if (n == UV_ENOBUFS) {
		conn_notify(c, NBRP_ERR_CEASE, NBRP_CEASE_RESET, "out of memory");
		return;
	}
	if (n < 0) {
		if (c->peer)
			snprintf(c->peer->last_error, sizeof(c->peer->last_error), "connection %s",
				 n == UV_EOF ? "closed by the peer" : uv_strerror((int)n));
		log_info("peer %s: connection %s", c->peer ? c->peer->cfg.name : "?",
			 n == UV_EOF ? "closed by the peer" : uv_strerror((int)n));
		conn_close(c);
		return;
	}
	nbrp_reader_commit(&c->reader, (size_t)n);
	for (;;) {
		Nbrp__Message *m;
		struct nbrp_error e;
		int rc = nbrp_reader_next(&c->reader, &m, &e);
		if (rc == 0)
			return;
		if (rc < 0) {
			conn_notify(c, e.code, e.subcode, "%s", e.text);
			return;
		}
		on_message(c, m);
		nbrp_message_free(m);
		if (c->closing || c->close_after_write)
			return;
	}
}

static struct conn *conn_new(struct nbrpd *d, struct peer *p, int dir)
{
	struct conn *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->d = d;
	c->peer = p;
	c->dir = dir;
	c->state = SESSION_IDLE;
	nbrp_reader_init(&c->reader, d->cfg->max_message);
	uv_tcp_init(d->loop, &c->tcp);
	uv_timer_init(d->loop, &c->hold_timer);
	uv_timer_init(d->loop, &c->keepalive_timer);
	c->tcp.data = c->hold_timer.data = c->keepalive_timer.data = c;
	c->open_handles = 3;
	return c;
}

static void conn_start(struct conn *c)
{
	uv_tcp_nodelay(&c->tcp, 1);
	int rc = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
	if (rc < 0) {
		conn_close(c);
		return;
	}
	send_open(c);
}

static void on_connect(uv_connect_t *req, int status)
{
	struct conn *c = req->data;
	if (c->closing)
		return;
	if (status < 0) {
		if (c->peer)
			snprintf(c->peer->last_error, sizeof(c->peer->last_error), "connect: %s",
				 uv_strerror(status));
		log_debug("peer %s: connect: %s", c->peer->cfg.name, uv_strerror(status));
		conn_close(c);
		return;
	}
	conn_start(c);
}

static socklen_t endpoint_sockaddr(const struct nbrpd_endpoint *e, struct sockaddr_storage *ss)
{
	return sockaddr_from_bytes(e->family, e->addr, e->port, ss);
}

static bool transport_unreachable(const struct nbrpd *d, const struct peer *p)
{
	return d->bird && p->transport && p->transport->known && !p->transport->reachable;
}

static void peer_connect(struct nbrpd *d, struct peer *p)
{
	if (!p->enabled || p->cfg.passive || p->conn[0] || p->established || d->stopping)
		return;
	if (transport_unreachable(d, p))
		return;                 /* IP routing cannot reach it: birdmon kicks us when it can */
	struct conn *c = conn_new(d, p, 0);
	if (!c)
		return;
	p->conn[0] = c;
	c->state = SESSION_CONNECT;
	struct sockaddr_storage ss;
	endpoint_sockaddr(&p->cfg.remote, &ss);
	/* connect from our listen address, so the peer recognises us */
	if (d->cfg->has_listen) {
		struct nbrpd_endpoint local = d->cfg->listen;
		struct sockaddr_storage ls;
		local.port = 0;
		if (local.family == p->cfg.remote.family) {
			endpoint_sockaddr(&local, &ls);
			uv_tcp_bind(&c->tcp, (struct sockaddr *)&ls, 0);
		}
	}
	c->connect_req.data = c;
	int rc = uv_tcp_connect(&c->connect_req, &c->tcp, (struct sockaddr *)&ss, on_connect);
	if (rc < 0) {
		snprintf(p->last_error, sizeof(p->last_error), "connect: %s", uv_strerror(rc));
		conn_close(c);
	}
}

static void on_retry(uv_timer_t *t)
{
	struct peer *p = t->data;
	struct nbrpd *d = p->retry_timer.loop->data;
	peer_connect(d, p);
}

static void schedule_retry(struct nbrpd *d, struct peer *p)
{
	if (d->stopping || !p->enabled || p->cfg.passive)
		return;
	uv_timer_start(&p->retry_timer, on_retry, p->retry_ms, 0);
	if (p->retry_ms < d->cfg->connect_retry_ms * RETRY_MAX_FACTOR)
		p->retry_ms *= 2;
}

static bool same_addr(const struct nbrpd_endpoint *e, const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET && e->family == AF_INET)
		return memcmp(&((const struct sockaddr_in *)ss)->sin_addr, e->addr, 4) == 0;
	if (ss->ss_family == AF_INET6 && e->family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)ss)->sin6_addr, e->addr, 16) == 0;
	return false;
}

static void on_accept(uv_stream_t *server, int status)
{
	struct nbrpd *d = server->data;
	if (status < 0) {
		log_warn("nbrp: accept: %s", uv_strerror(status));
		return;
	}
	struct conn *c = conn_new(d, NULL, 1);
	if (!c)
		return;
	if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0) {
		conn_close(c);
		return;
	}
	struct sockaddr_storage ss;
	int sl = sizeof(ss);
	uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &sl);
	struct peer *p = NULL;
	for (unsigned i = 0; i < d->npeers; i++)
		if (d->peers[i].configured && same_addr(&d->peers[i].cfg.remote, &ss)) {
			p = &d->peers[i];
			break;
		}
	char a[INET6_ADDRSTRLEN] = "?";
	inet_ntop(ss.ss_family, ss.ss_family == AF_INET ? (void *)&((struct sockaddr_in *)&ss)->sin_addr
						       : (void *)&((struct sockaddr_in6 *)&ss)->sin6_addr, a, sizeof(a));
	if (!p || !p->enabled || d->stopping || transport_unreachable(d, p)) {
		log_info("nbrp: connection from %s, %s: closing", a, p ? "a disabled peer" : "not a configured peer");
		conn_close(c);
		return;
	}
	if (p->conn[1])
		conn_close(p->conn[1]);         /* the peer gave up on that one */
	c->peer = p;
	p->conn[1] = c;
	log_debug("peer %s: connection from %s", p->cfg.name, a);
	conn_start(c);
}

void peer_enable(struct nbrpd *d, struct peer *p, bool enable)
{
	if (p->enabled == enable)
		return;
	p->enabled = enable;
	if (enable) {
		p->retry_ms = d->cfg->connect_retry_ms;
		peer_connect(d, p);
		return;
	}
	uv_timer_stop(&p->retry_timer);
	for (int i = 0; i < 2; i++)
		if (p->conn[i])
			conn_notify(p->conn[i], NBRP_ERR_CEASE, NBRP_CEASE_SHUTDOWN, "administratively disabled");
	nbrpd_check_ready(d);           /* a disabled peer is not waited for */
}

void peer_add(struct nbrpd *d, struct peer *p)
{
	if (!p->timers_ready) {
		uv_timer_init(d->loop, &p->retry_timer);
		p->retry_timer.data = p;
		uv_timer_init(d->loop, &p->restart_timer);
		p->restart_timer.data = p;
		p->timers_ready = true;
	}
	p->configured = true;
	p->retry_ms = d->cfg->connect_retry_ms;
	p->enabled = true;
	if (!p->transport)
		p->transport = nexthop_get(d, p->cfg.remote.family, p->cfg.remote.addr);
	peer_connect(d, p);
}

void peer_kick(struct nbrpd *d, struct peer *p)
{
	if (p->configured && !uv_is_active((uv_handle_t *)&p->retry_timer))
		peer_connect(d, p);
}

void peer_reset(struct nbrpd *d, struct peer *p, const char *why)
{
	(void)d;
	for (int i = 0; i < 2; i++)
		if (p->conn[i])
			conn_notify(p->conn[i], NBRP_ERR_CEASE, NBRP_CEASE_RESET, "%s", why);
}

void peer_remove(struct nbrpd *d, struct peer *p)
{
	p->configured = false;
	p->enabled = false;
	uv_timer_stop(&p->retry_timer);
	uv_timer_stop(&p->restart_timer);
	p->restarting = false;
	for (int i = 0; i < 2; i++)
		if (p->conn[i])
			conn_notify(p->conn[i], NBRP_ERR_CEASE, NBRP_CEASE_DECONFIGURED, "peer removed from the configuration");
	if (!p->established)
		rib_peer_down(d, p);    /* stale routes included */
	memset(&p->cfg.import, 0, sizeof(p->cfg.import));
	memset(&p->cfg.export, 0, sizeof(p->cfg.export));
	nexthop_put(d, p->transport);
	p->transport = NULL;
}

void peer_route_refresh(struct nbrpd *d, struct peer *p)
{
	Nbrp__Message m = NBRP__MESSAGE__INIT;
	Nbrp__RouteRefresh rr = NBRP__ROUTE_REFRESH__INIT;
	m.body_case = NBRP__MESSAGE__BODY_ROUTE_REFRESH;
	m.route_refresh = &rr;
	peer_send(d, p, &m);
}

int sessions_start(struct nbrpd *d, char *err, size_t err_len)
{
	d->loop->data = d;
	if (d->cfg->has_listen) {
		struct sockaddr_storage ss;
		endpoint_sockaddr(&d->cfg->listen, &ss);
		uv_tcp_init(d->loop, &d->listener);
		d->listener.data = d;
		d->listening = true;
		int rc = uv_tcp_bind(&d->listener, (struct sockaddr *)&ss, 0);
		if (rc == 0)
			rc = uv_listen((uv_stream_t *)&d->listener, 64, on_accept);
		if (rc < 0) {
			char buf[80];
			snprintf(err, err_len, "listen %s: %s", nbrpd_endpoint_format(&d->cfg->listen, buf, sizeof(buf)),
				 uv_strerror(rc));
			return -1;
		}
	}
	for (unsigned i = 0; i < d->npeers; i++)
		if (d->peers[i].configured)
			peer_add(d, &d->peers[i]);
	return 0;
}

void sessions_stop(struct nbrpd *d)
{
	if (d->listening) {
		uv_close((uv_handle_t *)&d->listener, NULL);
		d->listening = false;
	}
	for (unsigned i = 0; i < d->npeers; i++) {
		struct peer *p = &d->peers[i];
		if (p->timers_ready) {
			uv_close((uv_handle_t *)&p->retry_timer, NULL);
			uv_close((uv_handle_t *)&p->restart_timer, NULL);
		}
		for (int k = 0; k < 2; k++) {
			if (!p->conn[k])
				continue;
			/* a connect in flight has no one to tell; a NOTIFICATION would
			 * wait for it, up to the kernel's SYN retries (minutes) */
			if (p->conn[k]->state == SESSION_CONNECT)
				conn_close(p->conn[k]);
			else
				conn_notify(p->conn[k], NBRP_ERR_CEASE, NBRP_CEASE_SHUTDOWN, "shutting down");
		}
	}
}

enum session_state peer_state(const struct peer *p)
{
	if (p->established)
		return SESSION_ESTABLISHED;
	enum session_state s = SESSION_IDLE;
	for (int i = 0; i < 2; i++)
		if (p->conn[i] && !p->conn[i]->closing && p->conn[i]->state > s)
			s = p->conn[i]->state;
	return s;
}
