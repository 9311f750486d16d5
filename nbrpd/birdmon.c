/*
 * nbrpd beside BIRD (docs/BIRD.md): every address in the next-hop table
 * (nexthop.c) is asked about with `show route for ADDR all` through the
 * control-socket client in lib/bird/bird.c, at once when it is new and again
 * every poll-interval.  The answer updates the entry: reachable or not,
 * IGP metric, AS path length, protocol.
 *
 * BIRD not configured: nothing is asked, every address counts as
 * reachable with metric 0, and that is said once at start.  BIRD down or
 * hung: the client reconnects with backoff and nothing changes meanwhile,
 * so routes do not flap while BIRD restarts.
 *
 * A BIRD that started less than settle-time ago (`show status`, asked
 * first on every connection) is still bringing its protocols up: until
 * then its "cannot reach" is not believed, so a restarted BIRD does not
 * take routes and sessions down before OSPF and BGP have their routes.
 *
 * After each poll the `polled` callback runs: the session layer checks
 * its peers' transport addresses there (a peer IP routing cannot reach
 * for unreachable-delay is dropped).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "bird.h"
#include "log.h"
#include "birdmon.h"
#include "config.h"
#include "nexthop.h"

struct birdmon {
	uv_loop_t *loop;
	uint64_t settle_ms;
	uint64_t settled_at;            /* loop time from which "cannot reach" is believed */
	struct nexthop_table *nexthops;
	void (*polled)(void *arg);
	void *arg;
	struct bird_client *client;
	uv_timer_t poll;
	bool up;
	uint64_t queries, answers, failures;
};

struct query {
	struct birdmon *m;
	int family;
	uint8_t addr[16];
};

static void on_reply(void *arg, int status, const struct bird_reply *r)
{
	struct query *q = arg;
	struct birdmon *m = q->m;
	/* by address: the entry may have gone (and come back) meanwhile */
	struct nexthop *nh = nexthop_lookup(m->nexthops, q->family, q->addr);
	if (nh)
		nh->query_pending = false;
	if (status < 0 || !nh) {
		if (status < 0)
			m->failures++;
		free(q);
		return;                 /* BIRD went away: keep what we knew */
	}
	struct bird_route_info info;
	if (bird_parse_route(r, &info) < 0) {
		m->failures++;
		log_debug("BIRD: unexpected reply %d to show route for an address", r->code);
		free(q);
		return;
	}
	m->answers++;
	if (!(info.found && info.reachable) && uv_now(m->loop) < m->settled_at) {
		free(q);
		return;                 /* a young BIRD: its protocols may not have it yet */
	}
	nexthop_update(m->nexthops, nh, info.found && info.reachable, info.igp_metric, info.as_path_len,
		       info.found ? info.protocol : "");
	free(q);
}

static void ask(struct birdmon *m, struct nexthop *nh)
{
	if (!m->up || nh->query_pending)
		return;
	struct query *q = malloc(sizeof(*q));
	if (!q)
		return;
	char cmd[80];
	q->m = m;
	q->family = nh->family;
	memcpy(q->addr, nh->addr, 16);
	char a[IP_TEXT_MAX];
	snprintf(cmd, sizeof(cmd), "show route for %s all", ip_format(nh->family, nh->addr, a, sizeof(a)));
	if (bird_client_query(m->client, cmd, on_reply, q) < 0) {
		free(q);
		return;
	}
	nh->query_pending = true;
	m->queries++;
}

static void ask_one(void *arg, struct nexthop *nh)
{
	ask(arg, nh);
}

static void on_poll(uv_timer_t *t)
{
	struct birdmon *m = t->data;
	nexthop_walk(m->nexthops, ask_one, m);
	if (m->polled)
		m->polled(m->arg);
}

static void on_status(void *arg, int status, const struct bird_reply *r)
{
	struct birdmon *m = arg;
	uint64_t uptime;
	if (status < 0 || bird_parse_uptime(r, &uptime) < 0 || uptime >= m->settle_ms) {
		m->settled_at = 0;      /* settled, or not known: believe it */
		return;
	}
	m->settled_at = uv_now(m->loop) + (m->settle_ms - uptime);
	log_info("BIRD started %llu ms ago: what it cannot reach is believed in %llu ms (settle-time)",
		 (unsigned long long)uptime, (unsigned long long)(m->settle_ms - uptime));
}

static void on_up(void *arg, const char *greeting)
{
	struct birdmon *m = arg;
	m->up = true;
	log_info("BIRD: connected (%s)", greeting);
	/* before any address: the replies come in order */
	m->settled_at = UINT64_MAX;
	if (bird_client_query(m->client, "show status", on_status, m) < 0)
		m->settled_at = 0;
	nexthop_walk(m->nexthops, ask_one, m);
}

static void on_down(void *arg, const char *why)
{
	struct birdmon *m = arg;
	m->up = false;
	log_warn("BIRD: %s; keeping what it said last", why);
}

static void poll_closed(uv_handle_t *h)
{
	free(h->data);
}

struct birdmon *birdmon_start(uv_loop_t *loop, const struct nbrpd_config *cfg, struct nexthop_table *t,
			      void (*polled)(void *arg), void *arg)
{
	if (!cfg->bird_socket) {
		log_info("BIRD is not configured: every next hop counts as reachable, IGP metrics as equal");
		return NULL;
	}
	struct birdmon *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->nexthops = t;
	m->loop = loop;
	m->settle_ms = cfg->bird_settle_ms;
	m->polled = polled;
	m->arg = arg;
	static const struct bird_client_ops ops = { .up = on_up, .down = on_down };
	m->client = bird_client_open(loop, cfg->bird_socket, &ops, m);
	if (!m->client) {
		free(m);
		return NULL;
	}
	bird_client_set_timeout(m->client, cfg->bird_timeout_ms);
	uv_timer_init(loop, &m->poll);
	m->poll.data = m;
	uv_timer_start(&m->poll, on_poll, cfg->bird_poll_ms, cfg->bird_poll_ms);
	nexthop_on_added(t, ask_one, m);
	return m;
}

void birdmon_stop(struct birdmon *m)
{
	if (!m)
		return;
	nexthop_on_added(m->nexthops, NULL, NULL);
	bird_client_close(m->client);   /* their callbacks run now, while m is still there */
	uv_close((uv_handle_t *)&m->poll, poll_closed);
}

const char *birdmon_state(const struct birdmon *m)
{
	return !m ? "not configured" : m->up ? "up" : "down";
}
