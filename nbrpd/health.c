/*
 * Health checks of the content servers attached to this router: a TCP
 * connect to each server's health-check port every interval.  A server
 * that does not accept within the timeout is taken out of its content's
 * routes (withdrawn from peers and inrpd when none is left) and put back
 * at its first good check.  A state change is logged once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "log.h"
#include "config.h"
#include "health.h"
#include "rde.h"

struct probe {
	struct health *h;
	struct nbrpd_content *c;
	unsigned server;
	uv_timer_t interval;
	uv_timer_t timeout;
	uv_tcp_t *tcp;                  /* the attempt in flight, NULL: none */
	uv_connect_t req;
};

struct health {
	struct rde *rde;
	unsigned nprobes;
	unsigned open_handles;
	struct probe probes[];
};

static void tcp_closed(uv_handle_t *h)
{
	free(h);
}

static void set_state(struct probe *pr, bool up)
{
	struct nbrpd_content *c = pr->c;
	uint32_t bit = 1u << pr->server;
	bool was_up = (c->up_mask & bit) != 0;
	if (was_up == up)
		return;
	char name[NAME_MAX_TEXT], addr[INET6_ADDRSTRLEN];
	name_to_text(&c->name, name, sizeof(name));
	route_addr_format(&c->servers[pr->server], addr, sizeof(addr));
	log_warn("content %s: server %s %s its health check (port %u)", name, addr,
		 up ? "passes" : "fails", (unsigned)c->hc_port);
	c->up_mask = up ? c->up_mask | bit : c->up_mask & ~bit;
	rde_content_changed(pr->h->rde, c);
}

static void attempt_done(struct probe *pr, bool ok)
{
	if (!pr->tcp)
		return;
	uv_timer_stop(&pr->timeout);
	uv_close((uv_handle_t *)pr->tcp, tcp_closed);
	pr->tcp = NULL;
	set_state(pr, ok);
}

static void on_connect(uv_connect_t *req, int status)
{
	struct probe *pr = req->data;
	if ((uv_tcp_t *)req->handle != pr->tcp)
		return;                 /* an attempt already given up on */
	attempt_done(pr, status == 0);
}

static void on_timeout(uv_timer_t *t)
{
	attempt_done(t->data, false);
}

static void on_interval(uv_timer_t *t)
{
	struct probe *pr = t->data;
	if (pr->tcp)
		return;
	const struct route *srv = &pr->c->servers[pr->server];
	struct sockaddr_storage ss;
	sockaddr_from_bytes(srv->family, srv->addr, pr->c->hc_port, &ss);
	pr->tcp = malloc(sizeof(*pr->tcp));
	if (!pr->tcp)
		return;
	uv_tcp_init(t->loop, pr->tcp);
	pr->req.data = pr;
	if (uv_tcp_connect(&pr->req, pr->tcp, (struct sockaddr *)&ss, on_connect) < 0) {
		uv_close((uv_handle_t *)pr->tcp, tcp_closed);
		pr->tcp = NULL;
		set_state(pr, false);
		return;
	}
	uv_timer_start(&pr->timeout, on_timeout, pr->c->hc_timeout_ms, 0);
}

struct health *health_start(uv_loop_t *loop, struct nbrpd_config *cfg, struct rde *rde)
{
	unsigned n = 0;
	for (unsigned i = 0; i < cfg->ncontent; i++)
		if (cfg->content[i].hc_port)
			n += cfg->content[i].nservers;
	struct health *h = calloc(1, sizeof(*h) + n * sizeof(h->probes[0]));
	if (!h)
		return NULL;
	h->rde = rde;
	for (unsigned i = 0; i < cfg->ncontent; i++) {
		struct nbrpd_content *c = &cfg->content[i];
		if (!c->hc_port)
			continue;
		for (unsigned s = 0; s < c->nservers; s++) {
			struct probe *pr = &h->probes[h->nprobes++];
			pr->h = h;
			pr->c = c;
			pr->server = s;
			uv_timer_init(loop, &pr->interval);
			uv_timer_init(loop, &pr->timeout);
			pr->interval.data = pr->timeout.data = pr;
			/* the first check at once, so a dead server is not advertised for long */
			uv_timer_start(&pr->interval, on_interval, 0, c->hc_interval_ms);
		}
	}
	return h;
}

static void timer_closed(uv_handle_t *t)
{
	struct probe *pr = t->data;
	struct health *h = pr->h;
	if (--h->open_handles == 0)
		free(h);
}

/* Stops every probe; the struct frees itself once its timers are closed. */
void health_stop(struct health *h)
{
	if (!h)
		return;
	if (h->nprobes == 0) {
		free(h);
		return;
	}
	h->open_handles = 2 * h->nprobes;
	for (unsigned i = 0; i < h->nprobes; i++) {
		struct probe *pr = &h->probes[i];
		if (pr->tcp) {
			uv_close((uv_handle_t *)pr->tcp, tcp_closed);
			pr->tcp = NULL;
		}
		uv_close((uv_handle_t *)&pr->interval, timer_closed);
		uv_close((uv_handle_t *)&pr->timeout, timer_closed);
	}
}
