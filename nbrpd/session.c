/*
 * nbrpd's peers (session.h): which connections belong to which configured
 * peer, over the NBRP connection of lib/nbrp/nbrp_session.c.
 *
 * Either side may connect, so a peer has up to two connections ([0] ours,
 * [1] theirs); when both have an OPEN, the one opened by the router whose
 * name sorts higher survives (RFC 4271 6.8) and the other gets
 * CEASE/collision.  Ours reconnects with a doubling backoff.  A session
 * that ends withdraws its routes, unless the peer vanished without a word
 * and asked for graceful restart: then they stay, stale, for its restart
 * time or until its END-OF-RIB.  What peers say goes to the RDE; what the
 * RDE sends comes back through session_send.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "attest.h"
#include "log.h"
#include "nbrp_session.h"
#include "nexthop.h"
#include "rde.h"
#include "rdesig.h"
#include "route.h"
#include "session.h"
#include "sigkey.h"
#include "tlslink.h"
#include "vec.h"

#define RETRY_MAX_FACTOR        32

struct sessions {
	uv_loop_t *loop;
	const struct nbrpd_config *cfg;
	struct rde *rde;
	struct nexthop_table *nexthops;
	bool follow_ip;                 /* BIRD is followed: an unreachable transport counts */
	void (*on_eor)(void *arg);
	void *arg;
	struct peer **peers;            /* the configured ones */
	unsigned npeers;
	size_t cap;
	struct tlslink_cred *tls;       /* our key, for `authentication tls` */
	struct rdesig *sig;             /* NULL: signatures off */
	uint64_t auth_refused, tls_failures;    /* every peer's, removed ones' too */
	uv_tcp_t listener;
	bool listening;
	bool stopping;
};

static void schedule_retry(struct sessions *sess, struct peer *p);
static void peer_release(struct peer *p);

/* With signatures on, the signature stage sits between a peer's session and the RDE (rdesig.h). */
static void peer_sweep(struct peer *p)
{
	if (p->sig)
		rdesig_peer_sweep(p->sig);
	else if (p->rde)
		rde_peer_sweep(p->rde);
}

static void peer_down(struct peer *p, bool keep_stale)
{
	if (p->sig)
		rdesig_peer_down(p->sig);
	rde_peer_down(p->rde, keep_stale);
}

static void peer_up(struct peer *p)
{
	if (p->sig)
		rdesig_peer_up(p->sig);
	rde_peer_up(p->rde);
}

static int dir_of(const struct peer *p, const struct nbrp_session *c)
{
	return p->conn[0] == c ? 0 : 1;
}

static void on_restart_over(uv_timer_t *t)
{
	struct peer *p = t->data;
	if (!p->restarting)
		return;
	p->restarting = false;
	log_warn("peer %s: restart time over, dropping its stale routes", p->cfg.name);
	peer_sweep(p);
}

/* The connection is gone; if it carried the session, the session is down. */
static void on_closed(struct nbrp_session *c)
{
	struct peer *p = c->data;
	if (!p)
		return;                 /* accepted from no configured peer */
	struct sessions *sess = p->s;
	int dir = dir_of(p, c);
	if (p->conn[dir] == c)
		p->conn[dir] = NULL;
	if (p->established == c) {
		p->established = NULL;
		p->flaps++;
		if (!c->notified && p->restart_time_s && !sess->stopping && p->enabled && p->rde) {
			/* it vanished without a word: it may be restarting */
			log_warn("peer %s: session down; keeping its routes for %u s (graceful restart)",
				 p->cfg.name, p->restart_time_s);
			p->restarting = true;
			peer_down(p, true);
			uv_timer_start(&p->restart_timer, on_restart_over, (uint64_t)p->restart_time_s * 1000, 0);
		} else {
			log_warn("peer %s: session down", p->cfg.name);
			if (p->restarting) {
				p->restarting = false;
				uv_timer_stop(&p->restart_timer);
			}
			if (p->rde)
				peer_down(p, false);
		}
	}
	if (dir == 0)
		schedule_retry(sess, p);
	if (!p->configured && !p->conn[0] && !p->conn[1])
		peer_release(p);
}

static void on_event(struct nbrp_session *c, enum nbrp_session_event ev, uint8_t code, const char *text)
{
	struct peer *p = c->data;
	if (!p)
		return;
	snprintf(p->last_error, sizeof(p->last_error), "%s", text);
	if (ev == NBRP_EVENT_NOTIFICATION_SENT) {
		p->notifications_out++;
		p->notif_out_code[code < 8 ? code : 0]++;
	} else if (ev == NBRP_EVENT_NOTIFICATION_RECEIVED) {
		p->notifications_in++;
		p->notif_in_code[code < 8 ? code : 0]++;
	} else if (ev == NBRP_EVENT_TLS_FAILED) {
		p->tls_failures++;
		p->s->tls_failures++;
	}
}

/*
 * The key the peer proved it holds in the TLS handshake must be the trust
 * file's for the router it names: else the session is refused, with a
 * NOTIFICATION that says so (it goes over the TLS just made).
 */
static bool session_key_trusted(struct peer *p, const struct nbrp_session *c, const Nbrp__Open *o,
				struct nbrp_error *e)
{
	const uint8_t *got = nbrp_session_peer_key(c);
	const uint8_t *want = p->rde ? rdesig_router_key(p->s->sig, p->cfg.name) : NULL;
	bool open_key_agrees = o->key.len == 0 || (got && memcmp(o->key.data, got, SIGKEY_PUBLIC_LEN) == 0);
	if (got && want && memcmp(got, want, SIGKEY_PUBLIC_LEN) == 0 && open_key_agrees)
		return true;
	p->auth_refused++;
	p->s->auth_refused++;
	e->subcode = NBRP_OPEN_BAD_KEY;
	if (!got)
		snprintf(e->text, sizeof(e->text), "no TLS key: the session is not authenticated");
	else if (!want)
		snprintf(e->text, sizeof(e->text), "the trust file in force has no key for router \"%.80s\"", p->cfg.name);
	else if (memcmp(got, want, SIGKEY_PUBLIC_LEN) == 0)
		snprintf(e->text, sizeof(e->text), "the OPEN's key is not the one of the TLS session");
	else {
		char k[SIGKEY_TEXT_LEN + 1];
		sigkey_public_text(got, k);
		snprintf(e->text, sizeof(e->text), "session key %s does not match the trust file's key for router \"%.80s\"",
			 k, p->cfg.name);
	}
	return false;
}

/* Both connections have an OPEN: keep the one the higher-named router opened. */
static bool collision_lost(struct peer *p, struct nbrp_session *c)
{
	int dir = dir_of(p, c);
	struct nbrp_session *other = p->conn[!dir];
	if (!other || other->closing || other->state < NBRP_SESSION_OPENCONFIRM)
		return false;
	if (other->state == NBRP_SESSION_ESTABLISHED)
		return true;
	bool we_are_higher = strcmp(p->s->cfg->router_name, p->cfg.name) > 0;
	int winner = we_are_higher ? 0 : 1;
	if (dir == winner) {
		nbrp_session_notify(other, NBRP_ERR_CEASE, NBRP_CEASE_COLLISION, "connection collision");
		return false;
	}
	return true;
}

static int on_open(struct nbrp_session *c, const Nbrp__Open *o, struct nbrp_error *e)
{
	struct peer *p = c->data;
	e->code = NBRP_ERR_OPEN;
	if (o->server_mode != p->cfg.server_mode) {
		e->subcode = NBRP_OPEN_BAD_ROLE;
		snprintf(e->text, sizeof(e->text), "%s", p->cfg.server_mode
			 ? "configured as a content server's session, but the OPEN is a router's"
			 : "configured as a router's session, but the OPEN is a content server's");
		return -1;
	}
	if (strcmp(o->router_name, p->cfg.name) != 0) {
		e->subcode = NBRP_OPEN_BAD_ROUTER_NAME;
		snprintf(e->text, sizeof(e->text), "expected router \"%.80s\", not \"%.80s\"", p->cfg.name,
			 o->router_name);
		return -1;
	}
	if (p->cfg.tls && !session_key_trusted(p, c, o, e))
		return -1;
	if (collision_lost(p, c)) {
		e->code = NBRP_ERR_CEASE;
		e->subcode = NBRP_CEASE_COLLISION;
		snprintf(e->text, sizeof(e->text), "connection collision");
		return -1;
	}
	return 0;
}

static void on_established(struct nbrp_session *c)
{
	struct peer *p = c->data;
	struct sessions *sess = p->s;
	struct nbrp_session *other = p->conn[!dir_of(p, c)];
	if (other && !other->closing)
		nbrp_session_notify(other, NBRP_ERR_CEASE, NBRP_CEASE_COLLISION, "connection collision");
	p->established = c;
	p->hold_time_s = c->hold_s;
	p->established_at = uv_now(sess->loop);
	p->retry_ms = sess->cfg->connect_retry_ms;
	p->eor_received = false;
	p->restart_time_asked_s = c->peer_restart_s;
	p->restart_time_s = c->peer_restart_s;
	if (p->restart_time_s > sess->cfg->max_peer_restart_s) {
		/* a peer's stale routes stay on its word alone: how long is ours to say */
		p->restart_time_s = sess->cfg->max_peer_restart_s;
		p->restart_capped++;
		log_warn("peer %s: asks %u s of graceful restart; %u s granted (max-peer-restart-time)",
			 p->cfg.name, c->peer_restart_s, p->restart_time_s);
	}
	p->last_error[0] = 0;
	log_info("peer %s: session established (hold time %u s)", p->cfg.name, c->hold_s);
	if (p->rde)
		peer_up(p);
}

static void on_message(struct nbrp_session *c, const Nbrp__Message *m)
{
	struct peer *p = c->data;
	struct sessions *sess = p->s;
	switch (m->body_case) {
	case NBRP__MESSAGE__BODY_UPDATE:
		p->updates_in++;
		if (p->sig)
			rdesig_update(p->sig, m->update);
		else if (p->rde)
			rde_peer_update(p->rde, m->update, NULL);
		if (p->rde && (rde_busy(sess->rde) || (p->sig && rdesig_peer_waiting(p->sig))))
			nbrp_session_pause(c);  /* sessions_resume, after this turn's flush */
		return;
	case NBRP__MESSAGE__BODY_END_OF_RIB:
		p->eor_received = true;
		if (p->restarting) {
			/* what it did not send again is gone */
			p->restarting = false;
			uv_timer_stop(&p->restart_timer);
			peer_sweep(p);
		}
		log_info("peer %s: end of RIB", p->cfg.name);
		sess->on_eor(sess->arg);
		return;
	case NBRP__MESSAGE__BODY_ROUTE_REFRESH:
		if (p->sig)
			rdesig_peer_up(p->sig);         /* its table again, as at its start */
		if (p->rde)
			rde_peer_refresh(p->rde);
		return;
	default:
		return;
	}
}

static void on_drained(struct nbrp_session *c)
{
	struct peer *p = c->data;
	if (p && p->established == c && p->rde)
		rde_peer_drained(p->rde);
}

static const struct nbrp_session_ops session_ops = {
	.open = on_open, .established = on_established, .message = on_message,
	.drained = on_drained, .event = on_event, .closed = on_closed,
};

/* ---- the RDE's way out ---- */

void session_notify(void *arg, void *owner, uint8_t code, uint8_t subcode, const char *text)
{
	struct peer *p = owner;
	(void)arg;
	if (p->established)
		nbrp_session_notify(p->established, code, subcode, "%s", text);
}

void session_send(void *arg, void *owner, struct wq_buf *frame)
{
	struct peer *p = owner;
	(void)arg;
	if (p->established)
		nbrp_session_send_buf(p->established, frame);
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

/* ---- connecting and accepting ---- */

static struct nbrp_session *conn_new(struct sessions *sess, struct peer *p)
{
	const struct nbrpd_config *cfg = sess->cfg;
	struct nbrp_session_config sc = {
		.router_name = cfg->router_name, .hold_time_s = cfg->hold_time_s,
		.restart_time_s = cfg->restart_time_s, .max_message = cfg->max_message,
		.tls = p && p->cfg.tls ? sess->tls : NULL,
	};
	char label[NBRP_ROUTER_NAME_MAX + 8];
	snprintf(label, sizeof(label), "peer %s", p ? p->cfg.name : "?");
	return nbrp_session_new(sess->loop, &sc, &session_ops, p, label);
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
		return;                 /* IP routing cannot reach it: the next poll kicks us when it can */
	struct nbrp_session *c = conn_new(sess, p);
	if (!c)
		return;
	p->conn[0] = c;
	struct sockaddr_storage ss, ls;
	sockaddr_from_bytes(p->cfg.remote.family, p->cfg.remote.addr, p->cfg.remote.port, &ss);
	/* connect from our listen address, so the peer recognises us */
	bool bind = sess->cfg->has_listen && sess->cfg->listen.family == p->cfg.remote.family;
	if (bind)
		sockaddr_from_bytes(sess->cfg->listen.family, sess->cfg->listen.addr, 0, &ls);
	nbrp_session_connect(c, (struct sockaddr *)&ss, bind ? (struct sockaddr *)&ls : NULL);
}

static void on_retry(uv_timer_t *t)
{
	struct peer *p = t->data;
	peer_connect(p->s, p);
}

static void schedule_retry(struct sessions *sess, struct peer *p)
{
	if (sess->stopping || !p->enabled || p->cfg.passive || !p->configured)
		return;
	uv_timer_start(&p->retry_timer, on_retry, p->retry_ms, 0);
	if (p->retry_ms < sess->cfg->connect_retry_ms * RETRY_MAX_FACTOR)
		p->retry_ms *= 2;
}

static bool same_addr(const struct ip_endpoint *e, const struct sockaddr_storage *ss)
{
	struct ip_addr a;
	return sockaddr_ip((const struct sockaddr *)ss, &a) && ip_equal(a.family, a.addr, e->family, e->addr);
}

static void on_accept(uv_stream_t *server, int status)
{
	struct sessions *sess = server->data;
	if (status < 0) {
		log_warn("nbrp: accept: %s", uv_strerror(status));
		return;
	}
	struct nbrp_session *c = conn_new(sess, NULL);
	if (!c)
		return;
	if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0) {
		nbrp_session_close(c);
		return;
	}
	struct sockaddr_storage ss;
	int sl = sizeof(ss);
	uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &sl);
	struct peer *p = NULL;
	for (unsigned i = 0; i < sess->npeers && !p; i++)
		if (same_addr(&sess->peers[i]->cfg.remote, &ss))
			p = sess->peers[i];
	char a[IP_TEXT_MAX];
	sockaddr_format((struct sockaddr *)&ss, a, sizeof(a));
	if (!p || !p->enabled || sess->stopping || transport_unreachable(sess, p)) {
		log_info("nbrp: connection from %s, %s: closing", a, p ? "a disabled peer" : "not a configured peer");
		nbrp_session_close(c);
		return;
	}
	if (p->conn[1])
		nbrp_session_close(p->conn[1]);         /* the peer gave up on that one */
	c->data = p;
	c->cfg.tls = p->cfg.tls ? sess->tls : NULL;
	char label[NBRP_ROUTER_NAME_MAX + 8];
	snprintf(label, sizeof(label), "peer %s", p->cfg.name);
	nbrp_session_set_label(c, label);
	p->conn[1] = c;
	log_debug("peer %s: connection from %s", p->cfg.name, a);
	nbrp_session_start(c);
}

/* ---- peers ---- */

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
			nbrp_session_notify(p->conn[i], NBRP_ERR_CEASE, NBRP_CEASE_SHUTDOWN, "administratively disabled");
	sess->on_eor(sess->arg);        /* a disabled peer is not waited for */
}

struct peer *peer_add(struct sessions *sess, const struct nbrpd_peer_config *pc)
{
	if (VEC_RESERVE(sess->peers, sess->cap, sess->npeers + 1) < 0)
		return NULL;
	struct peer *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->s = sess;
	p->cfg = *pc;
	p->rde = rde_peer_add(sess->rde, pc, p);
	p->sig = p->rde && sess->sig ? rdesig_peer_add(sess->sig, p->rde, pc->signatures) : NULL;
	p->transport = nexthop_get(sess->nexthops, pc->remote.family, pc->remote.addr);
	if (!p->rde || (sess->sig && !p->sig) || !p->transport) {
		if (p->sig)
			rdesig_peer_remove(p->sig);
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
	if (sess->listening)
		peer_connect(sess, p);  /* started (a reload): at once */
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
	if (!uv_is_closing((uv_handle_t *)&p->retry_timer)) {
		uv_close((uv_handle_t *)&p->retry_timer, timer_closed);
		uv_close((uv_handle_t *)&p->restart_timer, timer_closed);
	}
}

void peer_reset(struct peer *p, const char *why)
{
	for (int i = 0; i < 2; i++)
		if (p->conn[i])
			nbrp_session_notify(p->conn[i], NBRP_ERR_CEASE, NBRP_CEASE_RESET, "%s", why);
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
	if (p->sig)
		rdesig_peer_remove(p->sig);
	p->sig = NULL;
	rde_peer_remove(p->rde);
	p->rde = NULL;
	nexthop_put(sess->nexthops, p->transport);
	p->transport = NULL;
	for (int i = 0; i < 2; i++)
		if (p->conn[i])
			nbrp_session_notify(p->conn[i], NBRP_ERR_CEASE, NBRP_CEASE_DECONFIGURED,
					    "peer removed from the configuration");
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
		nbrp_session_send(p->established, &m);
}

enum nbrp_session_state peer_state(const struct peer *p)
{
	if (p->established)
		return NBRP_SESSION_ESTABLISHED;
	enum nbrp_session_state s = NBRP_SESSION_IDLE;
	for (int i = 0; i < 2; i++)
		if (p->conn[i] && !p->conn[i]->closing && p->conn[i]->state > s)
			s = p->conn[i]->state;
	return s;
}

void sessions_resume(void *arg)
{
	struct sessions *sess = arg;
	for (unsigned i = 0; i < sess->npeers; i++) {
		struct peer *p = sess->peers[i];
		if (p->established && p->established->paused && !(p->sig && rdesig_peer_waiting(p->sig)))
			nbrp_session_resume(p->established);
	}
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
			/* reachable again: connect if we should */
			if (!uv_is_active((uv_handle_t *)&p->retry_timer))
				peer_connect(sess, p);
			continue;
		}
		if (p->established && now - t->unreachable_since >= sess->cfg->bird_unreachable_delay_ms) {
			char a[IP_TEXT_MAX], why[128];
			snprintf(why, sizeof(why), "IP routing cannot reach %s", ip_format(t->family, t->addr, a, sizeof(a)));
			peer_reset(p, why);
		}
	}
}

/* ---- all of them ---- */

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

void sessions_check_keys(struct sessions *sess)
{
	for (unsigned i = 0; i < sess->npeers; i++) {
		struct peer *p = sess->peers[i];
		for (int k = 0; k < 2; k++) {
			struct nbrp_session *c = p->conn[k];
			const uint8_t *got = c && !c->closing ? nbrp_session_peer_key(c) : NULL;
			if (!got || c->state < NBRP_SESSION_OPENCONFIRM)
				continue;       /* its OPEN, checked against the new file, is still to come */
			const uint8_t *want = rdesig_router_key(sess->sig, p->cfg.name);
			if (want && memcmp(got, want, SIGKEY_PUBLIC_LEN) == 0)
				continue;
			p->auth_refused++;
			sess->auth_refused++;
			nbrp_session_notify(c, NBRP_ERR_CEASE, NBRP_CEASE_RESET, "the trust file in force %s router \"%.80s\"",
					    want ? "gives another key than this session's to" : "has no key for", p->cfg.name);
		}
	}
}

void sessions_refresh_refused(struct sessions *sess)
{
	for (unsigned i = 0; i < sess->npeers; i++) {
		struct peer *p = sess->peers[i];
		if (!p->established || !p->rde || p->cfg.signatures != SIG_REQUIRE)
			continue;
		struct rdesig_peer_stats ss;
		rdesig_peer_stats(p->sig, &ss);
		uint64_t refused = 0;
		for (int k = ATTEST_INVALID; ss.state && k < ATTEST_PENDING; k++)
			refused += ss.state[k];
		if (!refused)
			continue;
		log_info("peer %s: asking for its table again, to check the %llu routes refused so far under the "
			 "new trust file", p->cfg.name, (unsigned long long)refused);
		peer_route_refresh(p);
		p->trust_refreshes++;
	}
}

void sessions_auth_totals(const struct sessions *sess, uint64_t *key_refused, uint64_t *tls_failures)
{
	*key_refused = sess->auth_refused;
	*tls_failures = sess->tls_failures;
}

void sessions_set_signatures(struct sessions *sess, struct rdesig *sig)
{
	sess->sig = sig;
	for (unsigned i = 0; i < sess->npeers; i++) {
		struct peer *p = sess->peers[i];
		if (p->rde && !(p->sig = rdesig_peer_add(sig, p->rde, p->cfg.signatures)))
			log_err("peer %s: out of memory for its signatures: its routes go unchecked", p->cfg.name);
	}
}

int sessions_set_key(struct sessions *sess, const struct sigkey *k, char *err, size_t err_len)
{
	if (sess->tls)
		return 0;
	sess->tls = tlslink_cred_new(k, err, err_len);
	return sess->tls ? 0 : -1;
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
		const struct ip_endpoint *l = &sess->cfg->listen;
		sockaddr_from_bytes(l->family, l->addr, l->port, &ss);
		uv_tcp_init(sess->loop, &sess->listener);
		sess->listener.data = sess;
		int rc = uv_tcp_bind(&sess->listener, (struct sockaddr *)&ss, 0);
		if (rc == 0)
			rc = uv_listen((uv_stream_t *)&sess->listener, 511, on_accept);
		if (rc < 0) {
			char buf[80];
			snprintf(err, err_len, "listen %s: %s", ip_endpoint_format(l, buf, sizeof(buf)), uv_strerror(rc));
			return -1;
		}
	}
	sess->listening = true;
	for (unsigned i = 0; i < sess->npeers; i++)
		peer_connect(sess, sess->peers[i]);
	return 0;
}

void sessions_stop(struct sessions *sess)
{
	sess->stopping = true;
	if (sess->listening && sess->cfg->has_listen)
		uv_close((uv_handle_t *)&sess->listener, NULL);
	sess->listening = false;
	/* every peer goes: each frees itself once its connections and timers are closed */
	for (unsigned i = 0; i < sess->npeers; i++) {
		struct peer *p = sess->peers[i];
		uv_timer_stop(&p->retry_timer);
		uv_timer_stop(&p->restart_timer);
		p->configured = false;
		p->rde = NULL;
		p->sig = NULL;          /* the stage's, freed with it */
		for (int k = 0; k < 2; k++)
			if (p->conn[k])
				nbrp_session_notify(p->conn[k], NBRP_ERR_CEASE, NBRP_CEASE_SHUTDOWN, "shutting down");
		if (!p->conn[0] && !p->conn[1])
			peer_release(p);
	}
	sess->npeers = 0;
}

void sessions_free(struct sessions *sess)
{
	if (sess) {
		free(sess->peers);
		tlslink_cred_free(sess->tls);
	}
	free(sess);
}
