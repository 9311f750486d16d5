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
 *
 * Writes go through a bounded queue (lib/wqueue.h): above its high-water
 * mark the RDE stops producing the peer's table until it drains.  A peer
 * that reads nothing for its hold time is ended (the send hold timer of
 * RFC 9687), so what is queued for it stays bounded.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "log.h"
#include "nexthop.h"
#include "rde.h"
#include "session.h"
#include "wqueue.h"

#define READ_BUF                (64 * 1024)
#define RETRY_MAX_FACTOR        32
#define OPEN_HOLD_MS            30000   /* waiting for OPEN with no hold time agreed */
#define QUEUE_HIGH              (1u << 20)      /* the RDE stops filling above this */
#define QUEUE_LOW               (256u << 10)    /* and starts again below this */
#define QUEUE_MAX               (64u << 20)     /* changes for a peer this far behind: ended */

struct sessions {
	uv_loop_t *loop;
	const struct nbrpd_config *cfg;
	struct rde *rde;
	struct nexthop_table *nexthops;
	bool follow_ip;                 /* BIRD is followed: an unreachable transport counts */
	void (*on_eor)(void *arg);
	void *arg;
	struct peer **peers;            /* configured ones first: [0, npeers) */
	unsigned npeers, cap;
	uv_tcp_t listener;
	bool listening;
	bool stopping;
};

struct conn {
	uv_tcp_t tcp;
	uv_connect_t connect_req;
	uv_timer_t hold_timer;
	uv_timer_t keepalive_timer;
	struct wqueue wq;
	struct sessions *sess;
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

static const char *const state_names[] = { "Idle", "Connect", "OpenSent", "OpenConfirm", "Established" };

const char *session_state_name(enum session_state s)
{
	return s <= SESSION_ESTABLISHED ? state_names[s] : "?";
}

static void schedule_retry(struct sessions *sess, struct peer *p);
static void conn_close(struct conn *c);
static void peer_release(struct peer *p);

static void on_restart_over(uv_timer_t *t)
{
	struct peer *p = t->data;
	if (!p->restarting)
		return;
	p->restarting = false;
	log_warn("peer %s: restart time over, dropping its stale routes", p->cfg.name);
	if (p->rde)
		rde_peer_sweep(p->rde);
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
	struct sessions *sess = c->sess;
	if (p) {
		if (p->conn[c->dir] == c)
			p->conn[c->dir] = NULL;
		if (p->established == c) {
			p->established = NULL;
			p->flaps++;
			if (!c->notified && p->restart_time_s && !sess->stopping && p->enabled) {
				/* it vanished without a word: it may be restarting */
				log_warn("peer %s: session down; keeping its routes for %u s (graceful restart)",
					 p->cfg.name, p->restart_time_s);
				p->restarting = true;
				if (p->rde)
					rde_peer_down(p->rde, true);
				uv_timer_start(&p->restart_timer, on_restart_over, (uint64_t)p->restart_time_s * 1000, 0);
			} else {
				log_warn("peer %s: session down", p->cfg.name);
				if (p->restarting) {
					p->restarting = false;
					uv_timer_stop(&p->restart_timer);
				}
				if (p->rde)
					rde_peer_down(p->rde, false);
			}
		}
	}
	uv_read_stop((uv_stream_t *)&c->tcp);
	uv_close((uv_handle_t *)&c->tcp, handle_closed);
	uv_close((uv_handle_t *)&c->hold_timer, handle_closed);
	uv_close((uv_handle_t *)&c->keepalive_timer, handle_closed);
	if (p && c->dir == 0)
		schedule_retry(sess, p);
	if (p && !p->configured && !p->conn[0] && !p->conn[1])
		peer_release(p);
}

static void on_write_failed(struct wqueue *q, int status)
{
	struct conn *c = q->data;
	if (c->closing)
		return;
	log_debug("peer %s: write: %s", c->peer ? c->peer->cfg.name : "?", uv_strerror(status));
	conn_close(c);
}

static void on_drained(struct wqueue *q)
{
	struct conn *c = q->data;
	if (c->closing)
		return;
	if (c->close_after_write && q->queued == 0) {
		conn_close(c);
		return;
	}
	if (c->peer && c->peer->established == c && c->peer->rde)
		rde_peer_drained(c->peer->rde);
}

static void conn_send_buf(struct conn *c, struct wq_buf *b)
{
	if (c->closing || c->close_after_write)
		return;
	int rc = wqueue_send(&c->wq, b);
	if (rc < 0) {
		log_warn("peer %s: write: %s", c->peer ? c->peer->cfg.name : "?", uv_strerror(rc));
		conn_close(c);
		return;
	}
	if (c->wq.queued > QUEUE_MAX) {
		/* only changes pass the high-water mark (tables wait for it): a peer this far behind
		 * reads too slowly to follow them */
		log_warn("peer %s: %zu bytes of changes unsent, closing", c->peer ? c->peer->cfg.name : "?",
			 c->wq.queued);
		conn_close(c);
	}
}

static void conn_send(struct conn *c, const Nbrp__Message *m)
{
	if (c->closing || c->close_after_write)
		return;
	size_t len;
	uint8_t *frame = nbrp_encode(m, &len);
	struct wq_buf *b = wq_buf_adopt(frame, len);
	if (!b) {
		log_err("peer %s: out of memory for a message", c->peer ? c->peer->cfg.name : "?");
		conn_close(c);
		return;
	}
	conn_send_buf(c, b);
	wq_buf_put(b);
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
	if (!c->closing && c->wq.queued == 0)
		conn_close(c);
	else
		c->wq.full = true;      /* so that draining calls back: then it closes */
}

static void on_hold_expired(uv_timer_t *t)
{
	struct conn *c = t->data;
	conn_notify(c, NBRP_ERR_HOLD_TIMER, 0, "no message for %u s", c->hold_s ? c->hold_s : OPEN_HOLD_MS / 1000);
}

static void on_keepalive_timer(uv_timer_t *t)
{
	struct conn *c = t->data;
	if (c->hold_s && wqueue_stalled(&c->wq, (uint64_t)c->hold_s * 1000)) {
		/* nothing it was sent was read for a hold time: no NOTIFICATION would reach it either */
		log_warn("peer %s: nothing written for %u s (send hold timer), closing",
			 c->peer ? c->peer->cfg.name : "?", c->hold_s);
		if (c->peer)
			snprintf(c->peer->last_error, sizeof(c->peer->last_error),
				 "send hold timer expired: the peer read nothing for %u s", c->hold_s);
		conn_close(c);
		return;
	}
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
	const struct nbrpd_config *cfg = c->sess->cfg;
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

void session_notify(void *arg, void *owner, uint8_t code, uint8_t subcode, const char *text)
{
	struct peer *p = owner;
	(void)arg;
	if (p->established)
		conn_notify(p->established, code, subcode, "%s", text);
}

void session_send(void *arg, void *owner, struct wq_buf *frame)
{
	struct peer *p = owner;
	(void)arg;
	if (p->established)
		conn_send_buf(p->established, frame);
}

bool session_full(void *arg, void *owner)
{
	const struct peer *p = owner;
	(void)arg;
	return p->established && p->established->wq.full;
}

size_t peer_queued(const struct peer *p)
{
	return p->established ? p->established->wq.queued : 0;
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
	bool we_are_higher = strcmp(c->sess->cfg->router_name, p->cfg.name) > 0;
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
	uint32_t ours = c->sess->cfg->hold_time_s, theirs = o->hold_time;
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
	struct sessions *sess = c->sess;
	struct conn *other = p->conn[!c->dir];
	if (other && !other->closing)
		conn_notify(other, NBRP_ERR_CEASE, NBRP_CEASE_COLLISION, "connection collision");
	c->state = SESSION_ESTABLISHED;
	p->established = c;
	p->hold_time_s = c->hold_s;
	p->established_at = uv_now(sess->loop);
	p->retry_ms = sess->cfg->connect_retry_ms;
	p->eor_received = false;
	p->restart_time_s = c->peer_restart_s;
	p->last_error[0] = 0;
	if (c->hold_s)
		uv_timer_start(&c->keepalive_timer, on_keepalive_timer, c->hold_s * 1000 / 3, c->hold_s * 1000 / 3);
	log_info("peer %s: session established (hold time %u s)", p->cfg.name, c->hold_s);
	if (p->rde)
		rde_peer_up(p->rde);
}

static void on_message(struct conn *c, const Nbrp__Message *m)
{
	struct peer *p = c->peer;
	struct sessions *sess = c->sess;
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
		if (p->rde)
			rde_peer_update(p->rde, m->update);
		return;
	case NBRP__MESSAGE__BODY_END_OF_RIB:
		p->eor_received = true;
		if (p->restarting) {
			/* what it did not send again is gone */
			p->restarting = false;
			uv_timer_stop(&p->restart_timer);
			if (p->rde)
				rde_peer_sweep(p->rde);
		}
		log_info("peer %s: end of RIB", p->cfg.name);
		sess->on_eor(sess->arg);
		return;
	case NBRP__MESSAGE__BODY_ROUTE_REFRESH:
		if (p->rde)
			rde_peer_refresh(p->rde);
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

static struct conn *conn_new(struct sessions *sess, struct peer *p, int dir)
{
	struct conn *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->sess = sess;
	c->peer = p;
	c->dir = dir;
	c->state = SESSION_IDLE;
	nbrp_reader_init(&c->reader, sess->cfg->max_message);
	uv_tcp_init(sess->loop, &c->tcp);
	uv_timer_init(sess->loop, &c->hold_timer);
	uv_timer_init(sess->loop, &c->keepalive_timer);
	c->tcp.data = c->hold_timer.data = c->keepalive_timer.data = c;
	c->open_handles = 3;
	wqueue_init(&c->wq, (uv_stream_t *)&c->tcp, QUEUE_HIGH, QUEUE_LOW);
	c->wq.data = c;
	c->wq.drained = on_drained;
	c->wq.failed = on_write_failed;
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

static bool transport_unreachable(const struct sessions *sess, const struct peer *p)
{
	return sess->follow_ip && p->transport && p->transport->known && !p->transport->reachable;
}

static void peer_connect(struct sessions *sess, struct peer *p)
{
	if (!p->enabled || p->cfg.passive || p->conn[0] || p->established || sess->stopping)
		return;
	if (transport_unreachable(sess, p))
		return;                 /* IP routing cannot reach it: birdmon kicks us when it can */
	struct conn *c = conn_new(sess, p, 0);
	if (!c)
		return;
	p->conn[0] = c;
	c->state = SESSION_CONNECT;
	struct sockaddr_storage ss;
	endpoint_sockaddr(&p->cfg.remote, &ss);
	/* connect from our listen address, so the peer recognises us */
	if (sess->cfg->has_listen) {
		struct nbrpd_endpoint local = sess->cfg->listen;
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
	peer_connect(p->s, p);
}

static void schedule_retry(struct sessions *sess, struct peer *p)
{
	if (sess->stopping || !p->enabled || p->cfg.passive)
		return;
	uv_timer_start(&p->retry_timer, on_retry, p->retry_ms, 0);
	if (p->retry_ms < sess->cfg->connect_retry_ms * RETRY_MAX_FACTOR)
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
	struct sessions *sess = server->data;
	if (status < 0) {
		log_warn("nbrp: accept: %s", uv_strerror(status));
		return;
	}
	struct conn *c = conn_new(sess, NULL, 1);
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
	for (unsigned i = 0; i < sess->npeers; i++)
		if (same_addr(&sess->peers[i]->cfg.remote, &ss)) {
			p = sess->peers[i];
			break;
		}
	char a[INET6_ADDRSTRLEN] = "?";
	inet_ntop(ss.ss_family, ss.ss_family == AF_INET ? (void *)&((struct sockaddr_in *)&ss)->sin_addr
						       : (void *)&((struct sockaddr_in6 *)&ss)->sin6_addr, a, sizeof(a));
	if (!p || !p->enabled || sess->stopping || transport_unreachable(sess, p)) {
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

void peer_enable(struct peer *p, bool enable)
{
	struct sessions *sess = p->s;
	if (p->enabled == enable)
		return;
	p->enabled = enable;
	if (enable) {
		p->retry_ms = sess->cfg->connect_retry_ms;
		peer_connect(sess, p);
		return;
	}
	uv_timer_stop(&p->retry_timer);
	for (int i = 0; i < 2; i++)
		if (p->conn[i])
			conn_notify(p->conn[i], NBRP_ERR_CEASE, NBRP_CEASE_SHUTDOWN, "administratively disabled");
	sess->on_eor(sess->arg);        /* a disabled peer is not waited for */
}

struct peer *peer_add(struct sessions *sess, const struct nbrpd_peer_config *pc)
{
	if (sess->npeers == sess->cap) {
		unsigned cap = sess->cap ? sess->cap * 2 : 16;
		struct peer **v = realloc(sess->peers, cap * sizeof(*v));
		if (!v)
			return NULL;
		sess->peers = v;
		sess->cap = cap;
	}
	struct peer *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->s = sess;
	p->cfg = *pc;
	p->rde = rde_peer_add(sess->rde, pc, p);
	p->transport = nexthop_get(sess->nexthops, pc->remote.family, pc->remote.addr);
	if (!p->rde || !p->transport) {
		if (p->rde)
			rde_peer_remove(p->rde);
		nexthop_put(sess->nexthops, p->transport);
		free(p);
		return NULL;
	}
	uv_timer_init(sess->loop, &p->retry_timer);
	p->retry_timer.data = p;
	uv_timer_init(sess->loop, &p->restart_timer);
	p->restart_timer.data = p;
	p->open_timers = 2;
	p->configured = true;
	p->retry_ms = sess->cfg->connect_retry_ms;
	p->enabled = true;
	sess->peers[sess->npeers++] = p;
	if (sess->listening || !sess->cfg->has_listen)
		peer_connect(sess, p);  /* started: at once */
	return p;
}

static void timer_closed(uv_handle_t *h)
{
	struct peer *p = h->data;
	if (--p->open_timers == 0)
		free(p);
}

/* A removed peer whose connections are gone. */
static void peer_release(struct peer *p)
{
	if (p->open_timers == 2 && !uv_is_closing((uv_handle_t *)&p->retry_timer)) {
		uv_close((uv_handle_t *)&p->retry_timer, timer_closed);
		uv_close((uv_handle_t *)&p->restart_timer, timer_closed);
	}
}

static void kick(struct sessions *sess, struct peer *p)
{
	if (!uv_is_active((uv_handle_t *)&p->retry_timer))
		peer_connect(sess, p);
}

void peer_reset(struct peer *p, const char *why)
{
	for (int i = 0; i < 2; i++)
		if (p->conn[i])
			conn_notify(p->conn[i], NBRP_ERR_CEASE, NBRP_CEASE_RESET, "%s", why);
}

void peer_remove(struct peer *p)
{
	struct sessions *sess = p->s;
	for (unsigned i = 0; i < sess->npeers; i++)
		if (sess->peers[i] == p) {
			memmove(&sess->peers[i], &sess->peers[i + 1], (sess->npeers - i - 1) * sizeof(p));
			sess->npeers--;
			break;
		}
	p->configured = false;
	p->enabled = false;
	uv_timer_stop(&p->retry_timer);
	uv_timer_stop(&p->restart_timer);
	p->restarting = false;
	/* its routes, stale ones included, go with its RDE peer */
	rde_peer_remove(p->rde);
	p->rde = NULL;
	nexthop_put(sess->nexthops, p->transport);
	p->transport = NULL;
	for (int i = 0; i < 2; i++)
		if (p->conn[i])
			conn_notify(p->conn[i], NBRP_ERR_CEASE, NBRP_CEASE_DECONFIGURED, "peer removed from the configuration");
	if (!p->conn[0] && !p->conn[1])
		peer_release(p);
}

void peer_route_refresh(struct peer *p)
{
	Nbrp__Message m = NBRP__MESSAGE__INIT;
	Nbrp__RouteRefresh rr = NBRP__ROUTE_REFRESH__INIT;
	m.body_case = NBRP__MESSAGE__BODY_ROUTE_REFRESH;
	m.route_refresh = &rr;
	if (p->established)
		conn_send(p->established, &m);
}

void sessions_check_transport(struct sessions *sess)
{
	uint64_t now = uv_now(sess->loop);
	for (unsigned i = 0; i < sess->npeers; i++) {
		struct peer *p = sess->peers[i];
		const struct nexthop *t = p->transport;
		if (!t || !t->known)
			continue;
		if (t->reachable) {
			kick(sess, p);  /* reachable again: connect if we should */
			continue;
		}
		if (p->established && now - t->unreachable_since >= sess->cfg->bird_unreachable_delay_ms) {
			char a[INET6_ADDRSTRLEN], why[128];
			inet_ntop(t->family, t->addr, a, sizeof(a));
			snprintf(why, sizeof(why), "IP routing cannot reach %s", a);
			peer_reset(p, why);
		}
	}
}

struct sessions *sessions_new(uv_loop_t *loop, const struct nbrpd_config *cfg, struct rde *rde,
			      struct nexthop_table *nexthops, bool follow_ip_routing,
			      void (*on_eor)(void *arg), void *arg)
{
	struct sessions *sess = calloc(1, sizeof(*sess));
	if (!sess)
		return NULL;
	sess->loop = loop;
	sess->cfg = cfg;
	sess->rde = rde;
	sess->nexthops = nexthops;
	sess->follow_ip = follow_ip_routing;
	sess->on_eor = on_eor;
	sess->arg = arg;
	return sess;
}

void sessions_set_config(struct sessions *sess, const struct nbrpd_config *cfg)
{
	sess->cfg = cfg;
}

bool sessions_all_eor(const struct sessions *sess)
{
	for (unsigned i = 0; i < sess->npeers; i++)
		if (sess->peers[i]->enabled && !sess->peers[i]->eor_received)
			return false;
	return true;
}

unsigned sessions_count(const struct sessions *sess)
{
	return sess->npeers;
}

struct peer *sessions_peer(const struct sessions *sess, unsigned i)
{
	return sess->peers[i];
}

struct peer *sessions_peer_by_name(const struct sessions *sess, const char *name)
{
	for (unsigned i = 0; i < sess->npeers; i++)
		if (strcmp(sess->peers[i]->cfg.name, name) == 0)
			return sess->peers[i];
	return NULL;
}

int sessions_start(struct sessions *sess, char *err, size_t err_len)
{
	if (sess->cfg->has_listen) {
		struct sockaddr_storage ss;
		endpoint_sockaddr(&sess->cfg->listen, &ss);
		uv_tcp_init(sess->loop, &sess->listener);
		sess->listener.data = sess;
		sess->listening = true;
		int rc = uv_tcp_bind(&sess->listener, (struct sockaddr *)&ss, 0);
		if (rc == 0)
			rc = uv_listen((uv_stream_t *)&sess->listener, 511, on_accept);
		if (rc < 0) {
			char buf[80];
			snprintf(err, err_len, "listen %s: %s", nbrpd_endpoint_format(&sess->cfg->listen, buf, sizeof(buf)),
				 uv_strerror(rc));
			return -1;
		}
	}
	for (unsigned i = 0; i < sess->npeers; i++)
		peer_connect(sess, sess->peers[i]);
	return 0;
}

void sessions_stop(struct sessions *sess)
{
	sess->stopping = true;
	if (sess->listening) {
		uv_close((uv_handle_t *)&sess->listener, NULL);
		sess->listening = false;
	}
	/* removed peers still closing free themselves; configured ones stop here */
	for (unsigned i = 0; i < sess->npeers; i++) {
		struct peer *p = sess->peers[i];
		uv_timer_stop(&p->retry_timer);
		uv_timer_stop(&p->restart_timer);
		for (int k = 0; k < 2; k++)
			if (p->conn[k])
				conn_notify(p->conn[k], NBRP_ERR_CEASE, NBRP_CEASE_SHUTDOWN, "shutting down");
		p->configured = false;
		p->rde = NULL;
		if (!p->conn[0] && !p->conn[1])
			peer_release(p);
	}
	sess->npeers = 0;
}

void sessions_free(struct sessions *sess)
{
	if (sess)
		free(sess->peers);
	free(sess);
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
