/*
 * nbrpd: command line, daemon, signals, and the control socket for nbrc.
 * The protocol is in session.c, the decision in rib.c, the FIB channel in
 * fibpush.c (nbrpd.h has the map).
 */
#include <errno.h>
#include <getopt.h>
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
#include "nbrpd.h"

#ifndef NBRPD_VERSION
#define NBRPD_VERSION "unknown"
#endif

static struct {
	struct nbrpd d;
	uv_loop_t loop;
	uv_signal_t sig_int, sig_term;
	struct ctl_server *ctl;
	bool foreground, debug;
} g;

static void usage(FILE *f)
{
	fprintf(f, "usage: nbrpd [-f] [-d] [-t] -c FILE\n"
		   "  -c, --config FILE   configuration file\n"
		   "  -f, --foreground    stay in the foreground, log to stderr\n"
		   "  -d, --debug         log debug messages\n"
		   "  -t, --check         check the configuration and exit\n"
		   "  -V, --version\n");
}

struct peer *nbrpd_peer_by_name(struct nbrpd *d, const char *name)
{
	for (unsigned i = 0; i < d->npeers; i++)
		if (strcmp(d->peers[i].cfg.name, name) == 0)
			return &d->peers[i];
	return NULL;
}

void nbrpd_check_ready(struct nbrpd *d)
{
	if (d->rib_ready)
		return;
	for (unsigned i = 0; i < d->npeers; i++)
		if (d->peers[i].enabled && !d->peers[i].eor_received)
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

static void show_status(bool json, struct ctl_reply *r)
{
	struct nbrpd *d = &g.d;
	unsigned up = 0;
	for (unsigned i = 0; i < d->npeers; i++)
		up += d->peers[i].established != NULL;
	unsigned long long uptime = (unsigned long long)((uv_now(d->loop) - d->started) / 1000);
	bool fib = d->fib && fibpush_connected(d->fib);
	if (json) {
		ctl_reply_line(r, CTL_DATA, "{\"version\": \"%s\", \"pid\": %d, \"uptime_s\": %llu, "
			       "\"peers\": %u, \"established\": %u, \"names\": %llu, \"fib_channel\": %s, "
			       "\"fib_syncs\": %llu}", NBRPD_VERSION, (int)getpid(), uptime, d->npeers, up,
			       (unsigned long long)rib_count(d->rib), d->fib ? (fib ? "\"connected\"" : "\"down\"") : "null",
			       (unsigned long long)(d->fib ? fibpush_syncs(d->fib) : 0));
		return;
	}
	ctl_reply_line(r, CTL_DATA, "nbrpd %s, router %s, pid %d, up %llu s", NBRPD_VERSION,
		       d->cfg->router_name, (int)getpid(), uptime);
	ctl_reply_line(r, CTL_DATA, "peers %u, established %u, names %llu", d->npeers, up,
		       (unsigned long long)rib_count(d->rib));
	if (d->fib)
		ctl_reply_line(r, CTL_DATA, "fib-channel %s: %s, %llu syncs", d->cfg->fib_channel,
			       fib ? "connected" : "down", (unsigned long long)fibpush_syncs(d->fib));
}

static void show_peers(bool json, struct ctl_reply *r)
{
	struct nbrpd *d = &g.d;
	if (json)
		ctl_reply_line(r, CTL_DATA, "[");
	for (unsigned i = 0; i < d->npeers; i++) {
		const struct peer *p = &d->peers[i];
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
				       (unsigned long long)p->flaps, err, i + 1 < d->npeers ? "," : "");
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
	bool first;
};

static void describe_one(const struct rib_entry *e, void *arg)
{
	struct route_walk *w = arg;
	rib_describe(&g.d, e, w->json, reply_line, w->r);
}

static void show_route(int argc, char **argv, bool json, struct ctl_reply *r)
{
	struct nbrpd *d = &g.d;
	if (argc == 3 && strcmp(argv[2], "count") == 0) {
		if (json)
			ctl_reply_line(r, CTL_DATA, "{\"names\": %llu}", (unsigned long long)rib_count(d->rib));
		else
			ctl_reply_line(r, CTL_DATA, "%llu names", (unsigned long long)rib_count(d->rib));
		return;
	}
	if (argc == 3) {
		struct name n;
		if (name_from_text(&n, argv[2], strlen(argv[2])) != NAME_OK) {
			ctl_reply_end(r, CTL_ERR_SYNTAX, "bad name '%s'", argv[2]);
			return;
		}
		const struct rib_entry *e = rib_find(d->rib, &n);
		if (!e) {
			ctl_reply_end(r, CTL_ERR_FAILED, "no route for %s", argv[2]);
			return;
		}
		rib_describe(d, e, json, reply_line, r);
		return;
	}
	struct route_walk w = { .r = r, .json = json };
	rib_walk(d->rib, describe_one, &w);
}

static void on_control(void *ctx, int argc, char **argv, struct ctl_reply *r)
{
	(void)ctx;
	bool json = argc >= 2 && strcmp(argv[argc - 1], "json") == 0;
	int words = json ? argc - 1 : argc;
	if (words == 2 && strcmp(argv[0], "show") == 0 && strcmp(argv[1], "status") == 0) {
		show_status(json, r);
	} else if (words == 2 && strcmp(argv[0], "show") == 0 && strcmp(argv[1], "peers") == 0) {
		show_peers(json, r);
	} else if ((words == 2 || words == 3) && strcmp(argv[0], "show") == 0 && strcmp(argv[1], "route") == 0) {
		show_route(words, argv, json, r);
	} else if (words == 2 && (strcmp(argv[0], "enable") == 0 || strcmp(argv[0], "disable") == 0)) {
		struct peer *p = nbrpd_peer_by_name(&g.d, argv[1]);
		if (!p) {
			ctl_reply_end(r, CTL_ERR_FAILED, "no peer '%s'", argv[1]);
			return;
		}
		peer_enable(&g.d, p, argv[0][0] == 'e');
		ctl_reply_end(r, CTL_OK, "%s %s", argv[0][0] == 'e' ? "enabled" : "disabled", p->cfg.name);
	} else if (argc == 1 && strcmp(argv[0], "help") == 0) {
		ctl_reply_line(r, CTL_DATA, "show status [json]        version, uptime, peers, names");
		ctl_reply_line(r, CTL_DATA, "show peers [json]         sessions, their state and counters");
		ctl_reply_line(r, CTL_DATA, "show route [NAME] [json]  routes, the ranked ones marked, with path and load");
		ctl_reply_line(r, CTL_DATA, "show route count [json]   names in the RIB");
		ctl_reply_line(r, CTL_DATA, "enable PEER | disable PEER");
		ctl_reply_line(r, CTL_DATA, "quit                      close this connection");
	} else {
		ctl_reply_end(r, CTL_ERR_SYNTAX, "unknown command '%s' (try 'help')", argv[0]);
	}
}

/* ---- the loop ---- */

static void on_check(uv_check_t *h)
{
	struct nbrpd *d = h->data;
	rib_flush(d);
}

static void stop(void)
{
	if (g.d.stopping)
		return;
	g.d.stopping = true;
	log_info("shutting down");
	uv_close((uv_handle_t *)&g.sig_int, NULL);
	uv_close((uv_handle_t *)&g.sig_term, NULL);
	ctl_server_close(g.ctl);
	g.ctl = NULL;
	sessions_stop(&g.d);
	health_stop(g.d.health);
	fibpush_close(g.d.fib);
	uv_close((uv_handle_t *)&g.d.flush_check, NULL);
	uv_close((uv_handle_t *)&g.d.sync_wait, NULL);
}

static void on_signal(uv_signal_t *h, int signum)
{
	(void)h;
	(void)signum;
	stop();
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "debug", no_argument, NULL, 'd' },
		{ "check", no_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *conf_arg = NULL;
	bool check = false;
	int opt;

	daemon_init("nbrpd");
	while ((opt = getopt_long(argc, argv, "c:fdthV", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c': conf_arg = optarg; break;
		case 'f': g.foreground = true; break;
		case 'd': g.debug = true; break;
		case 't': check = true; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("nbrpd %s\n", NBRPD_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!conf_arg || optind != argc) {
		usage(stderr);
		return 2;
	}
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
	if (!g.foreground)
		daemon_background();
	int level = g.debug ? LOG_LVL_DEBUG : cfg->log_level >= 0 ? cfg->log_level : LOG_LVL_INFO;
	log_init("nbrpd", (enum log_level)level, !g.foreground);
	signal(SIGPIPE, SIG_IGN);

	struct nbrpd *d = &g.d;
	d->cfg = cfg;
	d->conf_path = conf_arg;
	if (uv_loop_init(&g.loop) < 0)
		daemon_fail("uv_loop_init failed");
	d->loop = &g.loop;
	d->started = uv_now(d->loop);
	d->rib = rib_create();
	d->npeers = cfg->npeers;
	d->peers = calloc(cfg->npeers ? cfg->npeers : 1, sizeof(*d->peers));
	if (!d->rib || !d->peers)
		daemon_fail("out of memory");
	for (unsigned i = 0; i < cfg->npeers; i++) {
		d->peers[i].cfg = cfg->peers[i];
		d->peers[i].idx = i;
	}
	rib_set_local(d, cfg);
	uv_check_init(d->loop, &d->flush_check);
	d->flush_check.data = d;
	uv_check_start(&d->flush_check, on_check);
	uv_signal_init(d->loop, &g.sig_int);
	uv_signal_init(d->loop, &g.sig_term);
	uv_signal_start(&g.sig_int, on_signal, SIGINT);
	uv_signal_start(&g.sig_term, on_signal, SIGTERM);
	if (sessions_start(d, err, sizeof(err)) < 0)
		daemon_fail(err);
	if (cfg->control_path &&
	    !(g.ctl = ctl_server_open(d->loop, cfg->control_path, "nbrpd " NBRPD_VERSION, on_control, NULL,
				     err, sizeof(err))))
		daemon_fail(err);
	if (cfg->fib_channel && !(d->fib = fibpush_open(d, cfg->fib_channel)))
		daemon_fail("out of memory");
	if (!(d->health = health_start(d)))
		daemon_fail("out of memory");
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
	free(d->health);
	rib_free(d->rib);
	free(d->peers);
	if (cfg->pid_file)
		unlink(cfg->pid_file);
	nbrpd_config_free(cfg);
	return 0;
}
