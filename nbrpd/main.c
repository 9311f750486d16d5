/*
 * nbrpd: command line, daemon, signals, and the control socket for nbrc.
 * The protocol is in session.c, the decision in rib.c, the FIB channel in
 * fibpush.c (nbrpd.h has the map).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "conf.h"
#include "ctl.h"
#include "daemon.h"
#include "log.h"
#include "metrics.h"
#include "privdrop.h"
#include "prom.h"
#include "nbrpd.h"

#ifndef NBRPD_VERSION
#define NBRPD_VERSION "unknown"
#endif

static struct {
	struct nbrpd d;
	uv_loop_t loop;
	uv_signal_t sig_int, sig_term, sig_hup;
	struct ctl_server *ctl;
	struct metrics_server *metrics;
	bool foreground, debug;
} g;

struct peer *nbrpd_peer_by_name(struct nbrpd *d, const char *name)
{
	for (unsigned i = 0; i < d->npeers; i++)
		if (d->peers[i].configured && strcmp(d->peers[i].cfg.name, name) == 0)
			return &d->peers[i];
	return NULL;
}

static unsigned peers_configured(const struct nbrpd *d)
{
	unsigned n = 0;
	for (unsigned i = 0; i < d->npeers; i++)
		n += d->peers[i].configured;
	return n;
}

static bool policy_equal(const struct nbrpd_policy *a, const struct nbrpd_policy *b)
{
	if (a->nrules != b->nrules || a->default_deny != b->default_deny)
		return false;
	for (unsigned i = 0; i < a->nrules; i++)
		if (a->rules[i].allow != b->rules[i].allow || !name_equal(&a->rules[i].suffix, &b->rules[i].suffix))
			return false;
	return true;
}

static bool same_string(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void swap_str(char **a, char **b)
{
	char *t = *a;
	*a = *b;
	*b = t;
}

/* Once root is given up, a new listener on a privileged port could not be bound. */
static bool needs_privileges(const struct nbrpd_config *cfg, const struct nbrpd_config *old,
			     char *err, size_t err_len)
{
	char what[96], buf[80];
	snprintf(what, sizeof(what), "listen %s", nbrpd_endpoint_format(&cfg->listen, buf, sizeof(buf)));
	if (cfg->has_listen && (!old->has_listen || memcmp(&cfg->listen, &old->listen, sizeof(cfg->listen)) != 0) &&
	    !privdrop_can_bind(cfg->listen.port, what, err, err_len))
		return true;
	snprintf(what, sizeof(what), "metrics %s", metrics_config_format(&cfg->metrics, buf, sizeof(buf)));
	return cfg->metrics.enabled && !metrics_config_equal(&cfg->metrics, &old->metrics) &&
	       !privdrop_can_bind(cfg->metrics.port, what, err, err_len);
}

/*
 * SIGHUP or `nbrc reload`.  Sessions that the change does not concern stay
 * up: content, decision knobs, timers and a peer's policies apply in place
 * (a changed import policy or local preference asks the peer for its table
 * again with ROUTE-REFRESH); a removed peer gets CEASE/deconfigured, a new
 * one is started, one whose address changed starts over.
 */
static int reload_config(char *msg, size_t msg_len)
{
	struct nbrpd *d = &g.d;
	char err[CONF_ERR_LEN];
	struct nbrpd_config *cfg = nbrpd_config_load(d->conf_path, err, sizeof(err));
	if (!cfg) {
		log_err("reload failed, keeping the running configuration: %s", err);
		snprintf(msg, msg_len, "reload failed, keeping the running configuration: %s", err);
		return -1;
	}
	struct nbrpd_config *old = d->cfg;
	if (needs_privileges(cfg, old, err, sizeof(err))) {
		log_err("reload refused, keeping the running configuration: %s", err);
		snprintf(msg, msg_len, "reload refused, keeping the running configuration: %s", err);
		nbrpd_config_free(cfg);
		return -1;
	}
	if (strcmp(cfg->router_name, old->router_name) != 0 || cfg->has_listen != old->has_listen ||
	    memcmp(&cfg->listen, &old->listen, sizeof(cfg->listen)) != 0 ||
	    memcmp(&cfg->inrp, &old->inrp, sizeof(cfg->inrp)) != 0 ||
	    !same_string(cfg->fib_channel, old->fib_channel) || !same_string(cfg->control_path, old->control_path) ||
	    !same_string(cfg->pid_file, old->pid_file) || !same_string(cfg->bird_socket, old->bird_socket) ||
	    !metrics_config_equal(&cfg->metrics, &old->metrics) || !privdrop_config_equal(&cfg->run_as, &old->run_as))
		log_warn("reload: changes to router-name, listen, inrp-address, fib-channel, control, pid-file, "
			 "metrics, user, group and the BIRD socket take effect on restart");
	cfg->metrics = old->metrics;
	if (!g.debug)
		log_set_level(cfg->log_level >= 0 ? (enum log_level)cfg->log_level : LOG_LVL_INFO);
	memcpy(cfg->router_name, old->router_name, sizeof(cfg->router_name));
	cfg->has_listen = old->has_listen;
	cfg->listen = old->listen;
	cfg->inrp = old->inrp;
	swap_str(&cfg->fib_channel, &old->fib_channel);
	swap_str(&cfg->control_path, &old->control_path);
	swap_str(&cfg->pid_file, &old->pid_file);
	swap_str(&cfg->bird_socket, &old->bird_socket);
	bool redecide = cfg->max_routes != old->max_routes || cfg->load_ms_per_hop != old->load_ms_per_hop ||
			cfg->load_radius != old->load_radius || cfg->load_threshold_ms != old->load_threshold_ms;
	unsigned added = 0, removed = 0, reset = 0, refreshed = 0;

	health_stop(d->health);
	d->health = NULL;
	d->cfg = cfg;
	for (unsigned i = 0; i < d->npeers; i++) {
		struct peer *p = &d->peers[i];
		if (!p->configured)
			continue;
		bool kept = false;
		for (unsigned k = 0; k < cfg->npeers && !kept; k++)
			kept = strcmp(cfg->peers[k].name, p->cfg.name) == 0;
		if (!kept) {
			peer_remove(d, p);
			removed++;
		}
	}
	for (unsigned k = 0; k < cfg->npeers; k++) {
		const struct nbrpd_peer_config *pc = &cfg->peers[k];
		struct peer *p = nbrpd_peer_by_name(d, pc->name);
		if (!p) {
			unsigned slot = 0;
			/* a removed peer's slot is reused only once its connections are gone */
			while (slot < NBRPD_MAX_PEERS && (d->peers[slot].configured || d->peers[slot].conn[0] ||
							  d->peers[slot].conn[1] || d->peers[slot].established))
				slot++;
			if (slot == NBRPD_MAX_PEERS) {
				log_err("reload: no free slot for peer %s (old sessions still closing); "
					"reload again in a moment", pc->name);
				continue;
			}
			p = &d->peers[slot];
			bool timers = p->timers_ready;
			uv_timer_t rt = p->retry_timer, st = p->restart_timer;
			memset(p, 0, sizeof(*p));
			if (timers) {
				/* the handles stay registered with the loop: keep them */
				p->retry_timer = rt;
				p->restart_timer = st;
				p->timers_ready = true;
			}
			p->cfg = *pc;
			p->idx = slot;
			if (slot >= d->npeers)
				d->npeers = slot + 1;
			peer_add(d, p);
			added++;
			continue;
		}
		struct nbrpd_peer_config was = p->cfg;
		p->cfg = *pc;
		if (memcmp(&was.remote, &pc->remote, sizeof(pc->remote)) != 0) {
			nexthop_put(d, p->transport);
			p->transport = nexthop_get(d, pc->remote.family, pc->remote.addr);
		}
		if (memcmp(&was.remote, &pc->remote, sizeof(pc->remote)) != 0 || was.passive != pc->passive) {
			peer_reset(d, p, "peer address changed in the configuration");
			reset++;
			continue;
		}
		if (!p->established)
			continue;
		if (was.local_pref != pc->local_pref || !policy_equal(&was.import, &pc->import)) {
			peer_route_refresh(d, p);
			refreshed++;
		}
		if (!policy_equal(&was.export, &pc->export))
			rib_peer_reexport(d, p);
	}
	rib_reload_content(d, old, cfg);
	if (redecide)
		rib_redecide_all(d);
	d->health = health_start(d);
	nbrpd_config_free(old);
	log_info("reloaded %s: %u peers (%u added, %u removed, %u restarted, %u asked to resend), %u content names",
		 d->conf_path, peers_configured(d), added, removed, reset, refreshed, cfg->ncontent);
	snprintf(msg, msg_len, "reloaded %s: %u peers (%u added, %u removed, %u restarted, %u asked to resend), "
		 "%u content names", d->conf_path, peers_configured(d), added, removed, reset, refreshed,
		 cfg->ncontent);
	return 0;
}

/* systemd hears of every reload, whatever its outcome: the daemon runs on */
static int reload(char *msg, size_t msg_len)
{
	daemon_reloading();
	int rc = reload_config(msg, msg_len);
	daemon_reloaded();
	return rc;
}

void nbrpd_check_ready(struct nbrpd *d)
{
	if (d->rib_ready)
		return;
	for (unsigned i = 0; i < d->npeers; i++)
		if (d->peers[i].configured && d->peers[i].enabled && !d->peers[i].eor_received)
			return;
	d->rib_ready = true;
	uv_timer_stop(&d->sync_wait);
	rib_flush(d);
	if (d->fib)
		fibpush_ready(d->fib);
	log_info("every peer sent its table: the FIB is in sync");
}

static void on_sync_wait(uv_timer_t *t)
{
	struct nbrpd *d = t->data;
	if (d->rib_ready)
		return;
	d->rib_ready = true;
	rib_flush(d);
	if (d->fib)
		fibpush_ready(d->fib);
	log_info("fib-sync-wait over: syncing the FIB without every peer's table");
}

/* ---- control socket ---- */

static void show_status(void *ctx, char **args, unsigned nargs, bool json, struct ctl_reply *r)
{
	(void)ctx;
	(void)args;
	(void)nargs;
	struct nbrpd *d = &g.d;
	unsigned up = 0;
	for (unsigned i = 0; i < d->npeers; i++)
		up += d->peers[i].configured && d->peers[i].established != NULL;
	unsigned long long uptime = (unsigned long long)((uv_now(d->loop) - d->started) / 1000);
	bool fib = d->fib && fibpush_connected(d->fib);
	if (json) {
		ctl_reply_line(r, CTL_DATA, "{\"version\": \"%s\", \"pid\": %d, \"uptime_s\": %llu, "
			       "\"peers\": %u, \"established\": %u, \"names\": %llu, \"fib_channel\": %s, "
			       "\"fib_syncs\": %llu, \"bird\": \"%s\", \"nexthops\": %u}", NBRPD_VERSION, (int)getpid(), uptime,
			       peers_configured(d), up,
			       (unsigned long long)rib_count(d->rib), d->fib ? (fib ? "\"connected\"" : "\"down\"") : "null",
			       (unsigned long long)(d->fib ? fibpush_syncs(d->fib) : 0), birdmon_state(d->bird),
			       d->nnexthops);
		return;
	}
	ctl_reply_line(r, CTL_DATA, "nbrpd %s, router %s, pid %d, up %llu s", NBRPD_VERSION,
		       d->cfg->router_name, (int)getpid(), uptime);
	ctl_reply_line(r, CTL_DATA, "peers %u, established %u, names %llu", peers_configured(d), up,
		       (unsigned long long)rib_count(d->rib));
	if (d->fib)
		ctl_reply_line(r, CTL_DATA, "fib-channel %s: %s, %llu syncs", d->cfg->fib_channel,
			       fib ? "connected" : "down", (unsigned long long)fibpush_syncs(d->fib));
	ctl_reply_line(r, CTL_DATA, "BIRD: %s%s%s, %u addresses followed", birdmon_state(d->bird),
		       d->cfg->bird_socket ? " at " : "", d->cfg->bird_socket ? d->cfg->bird_socket : "",
		       d->nnexthops);
}

static void show_peers(void *ctx, char **args, unsigned nargs, bool json, struct ctl_reply *r)
{
	(void)ctx;
	(void)args;
	(void)nargs;
	struct nbrpd *d = &g.d;
	if (json)
		ctl_reply_line(r, CTL_DATA, "[");
	unsigned shown = 0, total = peers_configured(d);
	for (unsigned i = 0; i < d->npeers; i++) {
		const struct peer *p = &d->peers[i];
		if (!p->configured)
			continue;
		shown++;
		char addr[80];
		nbrpd_endpoint_format(&p->cfg.remote, addr, sizeof(addr));
		const char *state = p->enabled ? session_state_name(peer_state(p)) : "Disabled";
		unsigned long long since = p->established ? (uv_now(d->loop) - p->established_at) / 1000 : 0;
		if (json) {
			char err[2 * sizeof(p->last_error)];
			size_t o = 0;
			for (const char *s = p->last_error; *s && o + 3 < sizeof(err); s++) {
				if (*s == '"' || *s == '\\')
					err[o++] = '\\';
				err[o++] = (char)(*s >= 0x20 ? *s : '?');
			}
			err[o] = 0;
			ctl_reply_line(r, CTL_DATA, "{\"name\": \"%s\", \"address\": \"%s\", \"state\": \"%s\", "
				       "\"established_s\": %llu, \"names\": %llu, \"eor\": %s, \"updates_in\": %llu, "
				       "\"updates_out\": %llu, \"bad_routes\": %llu, \"notifications_in\": %llu, "
				       "\"notifications_out\": %llu, \"flaps\": %llu, \"last_error\": \"%s\"}%s",
				       p->cfg.name, addr, state, since, (unsigned long long)p->names,
				       p->eor_received ? "true" : "false", (unsigned long long)p->updates_in,
				       (unsigned long long)p->updates_out, (unsigned long long)p->bad_routes,
				       (unsigned long long)p->notifications_in, (unsigned long long)p->notifications_out,
				       (unsigned long long)p->flaps, err, shown < total ? "," : "");
		} else {
			ctl_reply_line(r, CTL_DATA, "%-16s %-28s %-12s %6llus names %llu updates in %llu out %llu%s%s",
				       p->cfg.name, addr, state, since, (unsigned long long)p->names,
				       (unsigned long long)p->updates_in, (unsigned long long)p->updates_out,
				       p->last_error[0] ? "; last error: " : "", p->last_error);
		}
	}
	if (json)
		ctl_reply_line(r, CTL_DATA, "]");
}

static void reply_line(void *arg, const char *text)
{
	ctl_reply_line(arg, CTL_DATA, "%s", text);
}

struct route_walk {
	struct ctl_reply *r;
	bool json;
	uint64_t total, done;
};

static void count_one(const struct rib_entry *e, void *arg)
{
	(void)e;
	((struct route_walk *)arg)->total++;
}

static void describe_one(const struct rib_entry *e, void *arg)
{
	struct route_walk *w = arg;
	w->done++;
	rib_describe(&g.d, e, w->json, w->done < w->total ? "," : "", reply_line, w->r);
}

static void show_route_count(void *ctx, char **args, unsigned nargs, bool json, struct ctl_reply *r)
{
	struct nbrpd *d = &g.d;
	(void)ctx;
	(void)args;
	(void)nargs;
	if (json)
		ctl_reply_line(r, CTL_DATA, "{\"names\": %llu}", (unsigned long long)rib_count(d->rib));
	else
		ctl_reply_line(r, CTL_DATA, "%llu names", (unsigned long long)rib_count(d->rib));
}

static void show_route(void *ctx, char **args, unsigned nargs, bool json, struct ctl_reply *r)
{
	struct nbrpd *d = &g.d;
	(void)ctx;
	if (nargs == 1) {
		struct name n;
		if (name_from_text(&n, args[0], strlen(args[0])) != NAME_OK) {
			ctl_reply_end(r, CTL_ERR_SYNTAX, "bad name '%s'", args[0]);
			return;
		}
		const struct rib_entry *e = rib_find(d->rib, &n);
		if (!e) {
			ctl_reply_end(r, CTL_ERR_FAILED, "no route for %s", args[0]);
			return;
		}
		rib_describe(d, e, json, "", reply_line, r);
		return;
	}
	/* JSON: one array of the objects a single name gets */
	struct route_walk w = { .r = r, .json = json };
	rib_walk(d->rib, count_one, &w);
	if (json)
		ctl_reply_line(r, CTL_DATA, "[");
	rib_walk(d->rib, describe_one, &w);
	if (json)
		ctl_reply_line(r, CTL_DATA, "]");
}

static void set_peer(const char *name, bool enable, struct ctl_reply *r)
{
	struct peer *p = nbrpd_peer_by_name(&g.d, name);
	if (!p) {
		ctl_reply_end(r, CTL_ERR_FAILED, "no peer '%s'", name);
		return;
	}
	peer_enable(&g.d, p, enable);
	ctl_reply_end(r, CTL_OK, "%s %s", enable ? "enabled" : "disabled", p->cfg.name);
}

static void cmd_reload(void *ctx, char **args, unsigned nargs, bool json, struct ctl_reply *r)
{
	char msg[CONF_ERR_LEN + 256];
	(void)ctx;
	(void)args;
	(void)nargs;
	(void)json;
	int rc = reload(msg, sizeof(msg));
	ctl_reply_end(r, rc == 0 ? CTL_OK : CTL_ERR_FAILED, "%s", msg);
}

static void cmd_enable_peer(void *ctx, char **args, unsigned nargs, bool json, struct ctl_reply *r)
{
	(void)ctx;
	(void)nargs;
	(void)json;
	set_peer(args[0], true, r);
}

static void cmd_disable_peer(void *ctx, char **args, unsigned nargs, bool json, struct ctl_reply *r)
{
	(void)ctx;
	(void)nargs;
	(void)json;
	set_peer(args[0], false, r);
}

static const struct ctl_command commands[] = {
	{ "show status", 0, 0, true, show_status, "show status [json]", "version, uptime, peers, names, BIRD" },
	{ "show peers", 0, 0, true, show_peers, "show peers [json]", "sessions, their state and counters" },
	{ "show route count", 0, 0, true, show_route_count, "show route count [json]", "names in the RIB" },
	{ "show route", 0, 1, true, show_route, "show route [NAME] [json]",
	  "routes, the ranked ones marked, with path, load and BIRD's view" },
	{ "enable", 1, 1, false, cmd_enable_peer, "enable PEER", "start the peer's session" },
	{ "disable", 1, 1, false, cmd_disable_peer, "disable PEER", "end the peer's session (CEASE)" },
	{ "reload", 0, 0, false, cmd_reload, "reload", "re-read the configuration, keeping unaffected sessions" },
	CTL_CMD_SET_LOG_LEVEL,
	{ NULL, 0, 0, false, NULL, NULL, NULL },
};

static void on_control(void *ctx, int argc, char **argv, struct ctl_reply *r)
{
	ctl_dispatch(commands, ctx, argc, argv, r);
}

/* ---- the loop ---- */

static void on_check(uv_check_t *h)
{
	struct nbrpd *d = h->data;
	rib_flush(d);
}

static void collect_metrics(void *ctx, struct prom *p)
{
	(void)ctx;
	nbrpd_metrics_write(p, &g.d, NBRPD_VERSION, g.metrics);
}

static void stop(void)
{
	if (g.d.stopping)
		return;
	g.d.stopping = true;
	log_info("shutting down");
	daemon_stopping();
	uv_close((uv_handle_t *)&g.sig_int, NULL);
	uv_close((uv_handle_t *)&g.sig_term, NULL);
	uv_close((uv_handle_t *)&g.sig_hup, NULL);
	ctl_server_close(g.ctl);
	g.ctl = NULL;
	metrics_server_close(g.metrics);
	g.metrics = NULL;
	sessions_stop(&g.d);
	rib_stop(&g.d);
	health_stop(g.d.health);
	g.d.health = NULL;
	birdmon_stop(g.d.bird);
	g.d.bird = NULL;
	fibpush_close(g.d.fib);
	uv_close((uv_handle_t *)&g.d.flush_check, NULL);
	uv_close((uv_handle_t *)&g.d.sync_wait, NULL);
}

static void on_signal(uv_signal_t *h, int signum)
{
	(void)h;
	if (signum == SIGHUP) {
		char msg[CONF_ERR_LEN + 256];
		reload(msg, sizeof(msg));
		return;
	}
	stop();
}

int main(int argc, char **argv)
{
	daemon_init("nbrpd");
	struct daemon_options opts;
	int status = daemon_parse_options(argc, argv, NBRPD_VERSION, 2, &opts);
	if (status >= 0)
		return status;
	const char *conf_arg = opts.config;
	bool check = opts.check;
	g.foreground = opts.foreground;
	g.debug = opts.debug;
	char err[CONF_ERR_LEN];
	struct nbrpd_config *cfg = nbrpd_config_load(conf_arg, err, sizeof(err));
	if (check) {
		if (cfg)
			printf("nbrpd: %s: configuration valid (%u peers, %u content names)\n", conf_arg,
			       cfg->npeers, cfg->ncontent);
		else
			fprintf(stderr, "nbrpd: %s\n", err);
		nbrpd_config_free(cfg);
		return cfg ? 0 : 1;
	}
	if (!cfg) {
		fprintf(stderr, "nbrpd: %s\n", err);
		return 1;
	}
	/* absolute: the daemon runs from "/" and reloads read it again */
	char *abs_path = realpath(conf_arg, NULL);
	if (!abs_path) {
		fprintf(stderr, "nbrpd: %s: %s\n", conf_arg, strerror(errno));
		nbrpd_config_free(cfg);
		return 1;
	}
	if (!g.foreground)
		daemon_background();
	int level = g.debug ? LOG_LVL_DEBUG : cfg->log_level >= 0 ? cfg->log_level : LOG_LVL_INFO;
	log_init("nbrpd", (enum log_level)level, !g.foreground);
	signal(SIGPIPE, SIG_IGN);

	struct nbrpd *d = &g.d;
	d->cfg = cfg;
	d->conf_path = abs_path;
	if (uv_loop_init(&g.loop) < 0)
		daemon_fail("uv_loop_init failed");
	d->loop = &g.loop;
	d->started = uv_now(d->loop);
	d->rib = rib_create();
	d->npeers = cfg->npeers;
	d->peers = calloc(NBRPD_MAX_PEERS, sizeof(*d->peers));
	if (!d->rib || !d->peers)
		daemon_fail("out of memory");
	for (unsigned i = 0; i < cfg->npeers; i++) {
		d->peers[i].cfg = cfg->peers[i];
		d->peers[i].idx = i;
		d->peers[i].configured = true;
	}
	rib_set_local(d, cfg);
	uv_check_init(d->loop, &d->flush_check);
	d->flush_check.data = d;
	uv_check_start(&d->flush_check, on_check);
	uv_signal_init(d->loop, &g.sig_int);
	uv_signal_init(d->loop, &g.sig_term);
	uv_signal_start(&g.sig_int, on_signal, SIGINT);
	uv_signal_start(&g.sig_term, on_signal, SIGTERM);
	uv_signal_init(d->loop, &g.sig_hup);
	uv_signal_start(&g.sig_hup, on_signal, SIGHUP);
	if (sessions_start(d, err, sizeof(err)) < 0)
		daemon_fail(err);
	if (cfg->control_path &&
	    !(g.ctl = ctl_server_open(d->loop, cfg->control_path, "nbrpd " NBRPD_VERSION, on_control, NULL,
				     err, sizeof(err))))
		daemon_fail(err);
	if (cfg->metrics.enabled &&
	    !(g.metrics = metrics_server_open(d->loop, &cfg->metrics, collect_metrics, NULL, err, sizeof(err))))
		daemon_fail(err);
	const char *own[] = { cfg->control_path };
	if (privdrop_apply(&cfg->run_as, own, 1, err, sizeof(err)) < 0 ||
	    (g.metrics && metrics_server_start(g.metrics, err, sizeof(err)) < 0))
		daemon_fail(err);
	if (cfg->fib_channel && !(d->fib = fibpush_open(d, cfg->fib_channel)))
		daemon_fail("out of memory");
	if (!(d->health = health_start(d)))
		daemon_fail("out of memory");
	d->bird = birdmon_start(d);
	if (cfg->bird_socket && !d->bird)
		daemon_fail("bird: cannot start the BIRD client (socket path too long?)");
	uv_timer_init(d->loop, &d->sync_wait);
	d->sync_wait.data = d;
	uv_timer_start(&d->sync_wait, on_sync_wait, cfg->fib_sync_wait_ms, 0);
	nbrpd_check_ready(d);           /* no peers: ready at once */
	if (cfg->pid_file && daemon_write_pid_file(cfg->pid_file, err, sizeof(err)) < 0)
		daemon_fail(err);
	log_info("nbrpd %s started: router %s, %u peers, %u content names", NBRPD_VERSION,
		 cfg->router_name, cfg->npeers, cfg->ncontent);
	daemon_ready();

	uv_run(d->loop, UV_RUN_DEFAULT);

	if (uv_loop_close(d->loop) < 0)
		log_err("uv_loop_close: handles still open");
	fibpush_free(d->fib);
	rib_free(d->rib);
	nexthop_free_all(d);
	free(d->peers);
	free(abs_path);
	/* the configuration in force: reloads replace d->cfg */
	if (d->cfg->pid_file)
		unlink(d->cfg->pid_file);
	nbrpd_config_free(d->cfg);
	return 0;
}
