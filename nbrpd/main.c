/*
 * nbrpd: command line, daemon, signals, reload, and the wiring of the
 * modules (nbrpd.h has the map): the RDE gets the session layer and the
 * FIB channel as callbacks, the next-hop table its change callback.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "aggregates.h"
#include "aggstore.h"
#include "birdmon.h"
#include "conf.h"
#include "ctl.h"
#include "daemon.h"
#include "fibpush.h"
#include "health.h"
#include "log.h"
#include "metrics.h"
#include "nbrpd.h"
#include "nexthop.h"
#include "privdrop.h"
#include "prom.h"
#include "rde.h"
#include "rdesig.h"
#include "session.h"
#include "sigkey.h"
#include "tlslink.h"

#ifndef NBRPD_VERSION
#define NBRPD_VERSION "unknown"
#endif

static struct {
	struct nbrpd d;
	uv_loop_t loop;
	uv_signal_t sig_int, sig_term, sig_hup;
	struct ctl_server *ctl;
	struct metrics_server *metrics;
	int state_lock;                 /* held for the process's life: one nbrpd per state-dir */
	bool foreground, debug;
} g;

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
	snprintf(what, sizeof(what), "listen %s", ip_endpoint_format(&cfg->listen, buf, sizeof(buf)));
	if (cfg->has_listen && (!old->has_listen || memcmp(&cfg->listen, &old->listen, sizeof(cfg->listen)) != 0) &&
	    !privdrop_can_bind(cfg->listen.port, what, err, err_len))
		return true;
	snprintf(what, sizeof(what), "metrics %s", metrics_config_format(&cfg->metrics, buf, sizeof(buf)));
	return cfg->metrics.enabled && !metrics_config_equal(&cfg->metrics, &old->metrics) &&
	       !privdrop_can_bind(cfg->metrics.port, what, err, err_len);
}

/* Our key for signatures: a key file that others may read is refused (sigkey_load says why). */
static int load_key(const struct nbrpd_config *cfg, struct sigkey *k, char *err, size_t err_len)
{
	if (!sigkey_init()) {
		snprintf(err, err_len, "signatures: libsodium cannot start");
		return -1;
	}
	return sigkey_load(cfg->key_file, k, err, err_len);
}

/*
 * Signatures start with the first configuration that has a key file (at
 * start or a reload): the stage goes in front of the RDE, between it and
 * the sessions, and its hooks into the RDE.
 */
static int start_signatures(struct nbrpd *d, const struct nbrpd_config *cfg, char *err, size_t err_len)
{
	if (!cfg->key_file || d->sig)
		return 0;
	struct sigkey k;
	int rc = load_key(cfg, &k, err, err_len);
	if (rc == 0 && !(d->sig = rdesig_new(d->loop, d->rde, &k, err, err_len)))
		rc = -1;
	if (rc == 0) {
		rde_set_signer(d->rde, rdesig_signer(d->sig));
		sessions_set_signatures(d->sessions, d->sig);
		rc = sessions_set_key(d->sessions, &k, err, err_len);
	}
	sigkey_wipe(&k);
	return rc;
}

/* The settings a reload cannot change in place, named in *out when they differ. */
static void restart_needed(const struct nbrpd_config *cfg, const struct nbrpd_config *old, char *out, size_t len)
{
	const struct { bool differs; const char *what; } k[] = {
		{ strcmp(cfg->router_name, old->router_name) != 0, "router-name" },
		{ cfg->has_listen != old->has_listen || memcmp(&cfg->listen, &old->listen, sizeof(cfg->listen)) != 0,
		  "listen" },
		{ memcmp(&cfg->inrp, &old->inrp, sizeof(cfg->inrp)) != 0, "inrp-address" },
		{ !same_string(cfg->fib_channel, old->fib_channel), "fib-channel" },
		{ !same_string(cfg->control_path, old->control_path), "control" },
		{ !same_string(cfg->pid_file, old->pid_file), "pid-file" },
		{ !same_string(cfg->bird_socket, old->bird_socket), "bird socket" },
		{ !same_string(cfg->state_dir, old->state_dir), "state-dir" },
		{ !metrics_config_equal(&cfg->metrics, &old->metrics), "metrics" },
		{ !privdrop_config_equal(&cfg->run_as, &old->run_as), "user or group" },
	};
	size_t n = 0;
	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]) && n < len; i++)
		if (k[i].differs)
			n += (size_t)snprintf(out + n, len - n, "%s%s", n ? ", " : "", k[i].what);
}

/*
 * SIGHUP or `nbrc reload`.  Sessions that the change does not concern stay
 * up: content, decision knobs, timers and a peer's policies apply in place
 * (a changed import policy or local preference asks the peer for its table
 * again with ROUTE-REFRESH; a changed export policy is applied to what the
 * peer was told by a re-export job); a removed peer gets CEASE/deconfigured,
 * a new one is started, one whose address changed starts over.
 */
static int reload_config(struct nbrpd *d, char *msg, size_t msg_len)
{
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
	if (start_signatures(d, cfg, err, sizeof(err)) < 0) {
		log_err("reload refused, keeping the running configuration: %s", err);
		snprintf(msg, msg_len, "reload refused, keeping the running configuration: %s", err);
		nbrpd_config_free(cfg);
		return -1;
	}
	if (!same_string(cfg->key_file, old->key_file) && old->key_file)
		log_warn("reload: a new key-file takes effect on restart");
	char later[256] = "";
	restart_needed(cfg, old, later, sizeof(later));
	if (later[0])
		log_warn("reload: %s changed: takes effect on restart", later);
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
	swap_str(&cfg->state_dir, &old->state_dir);     /* the one locked, its files the user's */
	bool redecide = cfg->max_routes != old->max_routes || cfg->load_ms_per_hop != old->load_ms_per_hop ||
			cfg->load_radius != old->load_radius || cfg->load_threshold_ms != old->load_threshold_ms;
	unsigned added = 0, removed = 0, reset = 0, refreshed = 0;

	health_stop(d->health);
	d->health = NULL;
	d->cfg = cfg;
	sessions_set_config(d->sessions, cfg);
	rde_set_config(d->rde, cfg);
	if (d->fib)
		fibpush_set_hold(d->fib, cfg->fib_send_hold_ms);
	for (unsigned i = sessions_count(d->sessions); i-- > 0;) {
		struct peer *p = sessions_peer(d->sessions, i);
		bool kept = false;
		for (unsigned k = 0; k < cfg->npeers && !kept; k++)
			kept = strcmp(cfg->peers[k].name, p->cfg.name) == 0;
		if (!kept) {
			peer_remove(p);
			removed++;
		}
	}
	for (unsigned k = 0; k < cfg->npeers; k++) {
		const struct nbrpd_peer_config *pc = &cfg->peers[k];
		struct peer *p = sessions_peer_by_name(d->sessions, pc->name);
		if (!p) {
			if (!peer_add(d->sessions, pc))
				log_err("reload: out of memory for peer %s", pc->name);
			else
				added++;
			continue;
		}
		struct nbrpd_peer_config was = p->cfg;
		p->cfg = *pc;
		rde_peer_configure(p->rde, pc);
		if (p->sig)
			rdesig_peer_configure(p->sig, pc->signatures);
		if (memcmp(&was.remote, &pc->remote, sizeof(pc->remote)) != 0) {
			nexthop_put(d->nexthops, p->transport);
			p->transport = nexthop_get(d->nexthops, pc->remote.family, pc->remote.addr);
		}
		if (was.tls != pc->tls) {
			peer_reset(p, "peer authentication changed in the configuration");
			reset++;
			continue;
		}
		if (was.role != pc->role) {
			/* what it was told, and what others were told of its routes, followed the old role */
			peer_reset(p, "peer role changed in the configuration");
			reset++;
			continue;
		}
		if (memcmp(&was.remote, &pc->remote, sizeof(pc->remote)) != 0 || was.passive != pc->passive) {
			peer_reset(p, "peer address changed in the configuration");
			reset++;
			continue;
		}
		if (p->established &&
		    (was.local_pref != pc->local_pref || was.signatures != pc->signatures ||
		     !nbrpd_policy_equal(&was.import, &pc->import))) {
			peer_route_refresh(p);
			refreshed++;
		}
	}
	rde_reload_content(d->rde, old, cfg);
	if (d->sig)
		rdesig_reload(d->sig);
	unsigned bad_defs = aggregates_configure(d->aggs, cfg);
	if (redecide)
		rde_redecide_all(d->rde);
	d->health = health_start(d->loop, cfg, d->rde);
	nbrpd_config_free(old);
	unsigned n = sessions_count(d->sessions);
	char defs[384] = "";
	if (bad_defs)
		snprintf(defs, sizeof(defs), "; %u aggregate definitions not read (see the log)", bad_defs);
	if (later[0])
		snprintf(defs + strlen(defs), sizeof(defs) - strlen(defs), "; %s changed: takes effect on restart", later);
	log_info("reloaded %s: peers %u (%u added, %u removed, %u restarted, %u asked to resend), "
		 "content names and aggregates %u%s", d->conf_path, n, added, removed, reset, refreshed,
		 cfg->ncontent, defs);
	snprintf(msg, msg_len, "reloaded %s: peers %u (%u added, %u removed, %u restarted, %u asked to resend), "
		 "content names and aggregates %u%s", d->conf_path, n, added, removed, reset, refreshed,
		 cfg->ncontent, defs);
	return 0;
}

/* systemd hears of every reload, whatever its outcome: the daemon runs on */
int nbrpd_reload(struct nbrpd *d, char *msg, size_t msg_len)
{
	daemon_reloading();
	int rc = reload_config(d, msg, msg_len);
	daemon_reloaded();
	return rc;
}

static void fib_ready(struct nbrpd *d, bool every_table)
{
	d->rib_ready = true;
	uv_timer_stop(&d->sync_wait);
	if (!d->fib)
		log_info(every_table ? "every peer sent its table" : "fib-sync-wait over: some peers' tables still missing");
	else if (every_table)
		log_info("every peer sent its table: the FIB is in sync");
	else
		log_info("fib-sync-wait over: syncing the FIB without every peer's table");
	if (d->fib)
		fibpush_ready(d->fib);
}

/* Every peer sent its table: the FIB may replace what inrpd kept. */
static void on_eor(void *arg)
{
	struct nbrpd *d = arg;
	if (!d->rib_ready && sessions_all_eor(d->sessions))
		fib_ready(d, true);
}

static void on_sync_wait(uv_timer_t *t)
{
	struct nbrpd *d = t->data;
	if (!d->rib_ready)
		fib_ready(d, false);
}

/* ---- the RDE's ways out ---- */

static void fib_name(void *arg, const struct name *n, const struct route *routes, unsigned count)
{
	struct nbrpd *d = arg;
	if (d->fib)
		fibpush_name(d->fib, n, routes, count);
}

static void fib_aggregate(void *arg, const struct name *agg, const struct route *routes, unsigned count)
{
	struct nbrpd *d = arg;
	if (d->fib)
		fibpush_aggregate(d->fib, agg, routes, count);
}

static void aggregate_offered(void *arg, const struct name *agg, uint32_t version, const struct ip_endpoint *source,
			      const uint8_t *digest, bool whole)
{
	struct nbrpd *d = arg;
	if (d->aggs)
		aggregates_offered(d->aggs, agg, version, source, digest, whole);
}

static void aggregate_stored(void *arg, const struct name *agg, uint32_t version, const struct nameset *members)
{
	struct nbrpd *d = arg;
	rde_aggregate_stored(d->rde, agg, version, members);
}

static const struct nameset *aggregate_members(void *arg, const struct name *agg)
{
	struct nbrpd *d = arg;
	return d->aggs ? aggregates_members(d->aggs, agg) : NULL;
}

static unsigned aggregate_routes(void *arg, const struct name *agg, struct route *out)
{
	struct nbrpd *d = arg;
	return rde_aggregate_fib_routes(d->rde, agg, out);
}

static void fib_flush(void *arg)
{
	struct nbrpd *d = arg;
	if (d->fib)
		fibpush_flush(d->fib);
}

static bool fib_behind(void *arg)
{
	struct nbrpd *d = arg;
	return d->fib && fibpush_behind(d->fib);
}

static void fib_caught_up(void *arg)
{
	struct nbrpd *d = arg;
	rde_input_resume(d->rde);
}

static void sync_one(const struct rib_entry *e, void *arg)
{
	struct fibpush *f = arg;
	struct name n;
	struct route routes[ROUTESET_MAX_ROUTES];
	unsigned count = rde_fib_routes(e, routes);
	rde_entry_name(e, &n);
	if (rde_entry_is_aggregate(e))
		fibpush_aggregate(f, &n, routes, count);        /* with no routes too: members follow */
	else if (count)
		fibpush_name(f, &n, routes, count);
}

struct fib_sync {
	struct aggregates_sync *aggs;   /* first the aggregates' members, */
	struct rde_walk *walk;          /* then the RDE's table */
	bool aggs_done;
};

/* The FIB channel's full sync, a slice at a time. */
static bool fib_table(void *arg, struct fibpush *f, void **state, unsigned budget)
{
	struct nbrpd *d = arg;
	struct fib_sync *s = *state;
	if (budget == 0 || (!s && !(s = *state = calloc(1, sizeof(*s))))) {
		if (s) {
			aggregates_sync_end(s->aggs);
			rde_walk_end(s->walk);
			free(s);
		}
		*state = NULL;
		return budget == 0;     /* out of memory: tried again next turn */
	}
	if (!s->aggs_done) {
		if (!s->aggs && !(s->aggs = aggregates_sync_begin(d->aggs)))
			return false;
		/* members are cheaper than names: many more a turn */
		s->aggs_done = aggregates_sync_step(d->aggs, s->aggs, f, budget * 64);
		return false;
	}
	if (!s->walk && !(s->walk = rde_walk_begin(d->rde)))
		return false;
	if (!rde_walk_step(d->rde, s->walk, budget, sync_one, f))
		return false;
	aggregates_sync_end(s->aggs);
	rde_walk_end(s->walk);
	free(s);
	*state = NULL;
	return true;
}

static uint64_t fib_count(void *arg)
{
	struct nbrpd *d = arg;
	struct aggregates_stats as;
	aggregates_stats(d->aggs, &as);
	return rde_names(d->rde) + as.members;
}

static void input_ready(void *arg)
{
	struct nbrpd *d = arg;
	sessions_resume(d->sessions);
}

static void trust_changed(void *arg)
{
	struct nbrpd *d = arg;
	sessions_check_keys(d->sessions);
	sessions_refresh_refused(d->sessions);
}

static void on_bird_polled(void *arg)
{
	struct nbrpd *d = arg;
	sessions_check_transport(d->sessions);
}

/* ---- the loop ---- */

/* Right before each poll: the time since the last one, less the time blocked in it, was one turn. */
static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Right before each poll: the time since the last one, less the time blocked in it, was one
 * turn (wall clock: what a peer waiting for a KEEPALIVE sees); its CPU time says how much of
 * that was ours on a machine shared with other work. */
static void on_turn(uv_prepare_t *h)
{
	struct nbrpd *d = h->data;
	uint64_t now = uv_hrtime(), idle = uv_metrics_idle_time(d->loop), cpu = cpu_ns();
	if (d->turn_start_ns) {
		double ms = (double)((now - d->turn_start_ns) - (idle - d->turn_idle_ns)) / 1e6;
		double cpu_ms = (double)(cpu - d->turn_cpu_ns) / 1e6;
		if (ms > d->turn_max_ms)
			d->turn_max_ms = ms;
		if (cpu_ms > d->turn_max_cpu_ms)
			d->turn_max_cpu_ms = cpu_ms;
		d->turns++;
	}
	d->turn_start_ns = now;
	d->turn_idle_ns = idle;
	d->turn_cpu_ns = cpu;
}

static void collect_metrics(void *ctx, struct prom *p)
{
	(void)ctx;
	nbrpd_metrics_write(p, &g.d, NBRPD_VERSION, g.metrics);
}

static void stop(void)
{
	struct nbrpd *d = &g.d;
	if (d->stopping)
		return;
	d->stopping = true;
	log_info("shutting down");
	daemon_stopping();
	uv_close((uv_handle_t *)&g.sig_int, NULL);
	uv_close((uv_handle_t *)&g.sig_term, NULL);
	uv_close((uv_handle_t *)&g.sig_hup, NULL);
	ctl_server_close(g.ctl);
	g.ctl = NULL;
	metrics_server_close(g.metrics);
	g.metrics = NULL;
	sessions_stop(d->sessions);
	aggregates_stop(d->aggs);
	rdesig_stop(d->sig);
	rde_stop(d->rde);
	health_stop(d->health);
	d->health = NULL;
	birdmon_stop(d->bird);
	d->bird = NULL;
	fibpush_close(d->fib);
	uv_close((uv_handle_t *)&d->sync_wait, NULL);
	uv_close((uv_handle_t *)&d->turn_timer, NULL);
}

static void on_signal(uv_signal_t *h, int signum)
{
	(void)h;
	if (signum == SIGHUP) {
		char msg[CONF_ERR_LEN + 256];
		nbrpd_reload(&g.d, msg, sizeof(msg));
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
	g.foreground = opts.foreground;
	g.debug = opts.debug;
	char err[CONF_ERR_LEN];
	/* absolute: the daemon runs from "/", reloads read it again, member files are relative to it */
	char *abs_path = realpath(conf_arg, NULL);
	struct nbrpd_config *cfg = nbrpd_config_load(abs_path ? abs_path : conf_arg, err, sizeof(err));
	if (cfg && cfg->key_file) {
		/* a key file that others may read is refused before anything starts */
		struct sigkey k;
		if (load_key(cfg, &k, err, sizeof(err)) < 0) {
			fprintf(stderr, "nbrpd: %s\n", err);
			nbrpd_config_free(cfg);
			free(abs_path);
			return 1;
		}
		sigkey_wipe(&k);
	}
	if (opts.check) {
		if (cfg)
			printf("nbrpd: %s: configuration valid (peers %u, content names %u)\n", conf_arg,
			       cfg->npeers, cfg->ncontent);
		else
			fprintf(stderr, "nbrpd: %s\n", err);
		nbrpd_config_free(cfg);
		free(abs_path);
		return cfg ? 0 : 1;
	}
	if (!cfg) {
		fprintf(stderr, "nbrpd: %s\n", err);
		free(abs_path);
		return 1;
	}
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
	uv_loop_configure(&g.loop, UV_METRICS_IDLE_TIME);
	d->loop = &g.loop;
	d->started = uv_now(d->loop);
	const struct rde_ops ops = {
		.send = session_send, .full = session_full, .notify = session_notify,
		.fib_name = cfg->fib_channel ? fib_name : NULL, .fib_flush = cfg->fib_channel ? fib_flush : NULL,
		.fib_aggregate = cfg->fib_channel ? fib_aggregate : NULL, .aggregate_offered = aggregate_offered,
		.aggregate_members = aggregate_members,
		.fib_behind = cfg->fib_channel ? fib_behind : NULL, .input_ready = input_ready,
		.trust_changed = trust_changed, .arg = d,
	};
	const struct aggregates_ops agg_ops = { .stored = aggregate_stored, .routes = aggregate_routes, .arg = d };
	d->nexthops = nexthop_table_new(d->loop);
	d->rde = d->nexthops ? rde_new(d->loop, cfg, d->nexthops, &ops) : NULL;
	d->sessions = d->rde ? sessions_new(d->loop, cfg, d->rde, d->nexthops, cfg->bird_socket != NULL, on_eor, d)
			     : NULL;
	if (!d->sessions)
		daemon_fail("out of memory");
	/* before the signatures: they keep the trust serial there */
	g.state_lock = -1;
	if (cfg->state_dir && (g.state_lock = aggstore_lock_dir(cfg->state_dir, err, sizeof(err))) < 0)
		daemon_fail(err);
	if (start_signatures(d, cfg, err, sizeof(err)) < 0)
		daemon_fail(err);
	for (unsigned i = 0; i < cfg->npeers; i++)
		if (!peer_add(d->sessions, &cfg->peers[i]))
			daemon_fail("out of memory");
	for (unsigned i = 0; i < cfg->ncontent; i++)
		rde_content_changed(d->rde, &cfg->content[i]);
	if (!(d->aggs = aggregates_new(d->loop, cfg, &agg_ops, err, sizeof(err))))
		daemon_fail(err);
	aggregates_configure(d->aggs, cfg);
	uv_prepare_init(d->loop, &d->turn_timer);
	d->turn_timer.data = d;
	uv_prepare_start(&d->turn_timer, on_turn);
	uv_signal_init(d->loop, &g.sig_int);
	uv_signal_init(d->loop, &g.sig_term);
	uv_signal_start(&g.sig_int, on_signal, SIGINT);
	uv_signal_start(&g.sig_term, on_signal, SIGTERM);
	uv_signal_init(d->loop, &g.sig_hup);
	uv_signal_start(&g.sig_hup, on_signal, SIGHUP);
	d->bird = birdmon_start(d->loop, cfg, d->nexthops, on_bird_polled, d);
	if (cfg->bird_socket && !d->bird)
		daemon_fail("bird: cannot start the BIRD client (socket path too long?)");
	if (sessions_start(d->sessions, err, sizeof(err)) < 0)
		daemon_fail(err);
	if (cfg->control_path && !(g.ctl = control_open(d, cfg->control_path, "nbrpd " NBRPD_VERSION, err, sizeof(err))))
		daemon_fail(err);
	if (cfg->metrics.enabled &&
	    !(g.metrics = metrics_server_open(d->loop, &cfg->metrics, collect_metrics, NULL, err, sizeof(err))))
		daemon_fail(err);
	/* written as root, where root may write (as inrpd does) */
	if (cfg->pid_file && daemon_write_pid_file(cfg->pid_file, err, sizeof(err)) < 0)
		daemon_fail(err);
	/* what is written after the drop: the control socket, the state-dir and its stores */
	const char *own[] = { cfg->control_path, cfg->state_dir };
	if (privdrop_apply(&cfg->run_as, own, 2, err, sizeof(err)) < 0 ||
	    (g.metrics && metrics_server_start(g.metrics, err, sizeof(err)) < 0))
		daemon_fail(err);
	if (cfg->fib_channel &&
	    !(d->fib = fibpush_open(d->loop, cfg->fib_channel, cfg->fib_send_hold_ms, fib_table, fib_count,
				    fib_caught_up, d)))
		daemon_fail("out of memory");
	aggregates_set_fib(d->aggs, d->fib);
	if (!(d->health = health_start(d->loop, cfg, d->rde)))
		daemon_fail("out of memory");
	uv_timer_init(d->loop, &d->sync_wait);
	d->sync_wait.data = d;
	uv_timer_start(&d->sync_wait, on_sync_wait, cfg->fib_sync_wait_ms, 0);
	on_eor(d);                      /* no peers: ready at once */
	log_info("nbrpd %s started: router %s, peers %u, content names %u", NBRPD_VERSION,
		 cfg->router_name, cfg->npeers, cfg->ncontent);
	daemon_ready();

	uv_run(d->loop, UV_RUN_DEFAULT);

	if (uv_loop_close(d->loop) < 0)
		log_err("uv_loop_close: handles still open");
	fibpush_free(d->fib);
	aggregates_free(d->aggs);
	sessions_free(d->sessions);
	tlslink_global_deinit();
	rde_free(d->rde);
	rdesig_free(d->sig);            /* after the RDE: its chains are charged to it */
	nexthop_table_free(d->nexthops);
	free(abs_path);
	/* the configuration in force: reloads replace d->cfg */
	if (d->cfg->pid_file)
		unlink(d->cfg->pid_file);
	nbrpd_config_free(d->cfg);
	return 0;
}
