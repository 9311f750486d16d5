/*
 * inrpd: answers DNS queries for content names from the content router's
 * FIB.  This file holds the process: command line, daemonising, signals,
 * reload and shutdown.  See inrpd.h for the threads.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <uv.h>
#include <urcu-qsbr.h>

#include "addr.h"
#include "answer.h"
#include "dns.h"
#include "inrpd.h"
#include "conf.h"
#include "ctl.h"
#include "strbuf.h"
#include "daemon.h"
#include "log.h"
#include "metrics.h"
#include "privdrop.h"
#include "prom.h"
#include "config.h"
#include "fibsync.h"
#include "rrl.h"
#include "stats.h"
#include "tcp.h"
#include "udp.h"
#include "tap.h"
#include "tls.h"
#include "tlslink.h"

#ifndef INRPD_VERSION
#define INRPD_VERSION "unknown"
#endif

struct inrpd_runtime *inrpd_rt;

static struct {
	const char *conf_path;          /* absolute: reload works after chdir("/") */
	bool debug;                     /* -d: overrides log-level */
	bool foreground;
	struct inrpd_config *cfg;       /* the configuration the sockets were opened with */
	struct udp_workers *udp;
	struct tcp_server *tcp;
	struct tls_server *tls[2];      /* by enum tls_kind: DoT, DoH; NULL: not listening */
	uv_loop_t loop;
	uv_signal_t sig_int, sig_term, sig_hup, sig_usr1;
	struct ctl_server *ctl;
	struct fibsync *fibsync;
	struct metrics_server *metrics;
	uint64_t started;               /* uv_now at start, ms */
	bool stopping;
} g;

static unsigned cpu_count(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return (unsigned)CPU_COUNT(&set);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

static enum log_level effective_level(const struct inrpd_config *cfg)
{
	if (g.debug)
		return LOG_LVL_DEBUG;
	return cfg->log_level >= 0 ? (enum log_level)cfg->log_level : LOG_LVL_INFO;
}


/*
 * Every query in flight has a socket of its own (upsock.c): the soft limit
 * on open files is raised to hold them all besides the rest.  Short of it
 * (the hard limit), each engine gets its share of what is left after the
 * rest, and the queries past it fail, counted in fwd_no_socket.  Returns
 * that share.
 */
static unsigned socket_share(unsigned engines, unsigned max_pending)
{
	const rlim_t others = 1024;     /* listeners, TCP clients and hops, control, files */
	rlim_t want = (rlim_t)engines * max_pending + others;
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return max_pending;
	if (rl.rlim_cur < want) {
		rlim_t soft = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want ? rl.rlim_max : want;
		rlim_t was = rl.rlim_cur;
		rl.rlim_cur = soft;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
			log_warn("setrlimit(RLIMIT_NOFILE): %s", strerror(errno));
			rl.rlim_cur = was;
		}
	}
	if (rl.rlim_cur >= want)
		return max_pending;
	rlim_t spare = rl.rlim_cur > 2 * others ? rl.rlim_cur - others : rl.rlim_cur / 2;
	unsigned share = (unsigned)(spare / engines) ? (unsigned)(spare / engines) : 1;
	log_warn("open files limited to %llu: %u queries in flight per thread have a socket, "
		 "not the %u of max-pending", (unsigned long long)rl.rlim_cur, share, max_pending);
	return share;
}

/* Every counter, in the order shown by "show counters" and in the log. */
static const struct {
	const char *name;
	size_t off;
} counter_fields[] = {
#define F(x) { #x, offsetof(struct inrpd_counters, x) }
	F(queries), F(answered), F(local), F(forwarded), F(fallback), F(servfail),
	F(formerr), F(refused), F(acl_refused), F(truncated), F(dropped), F(loops),
	F(pending_full), F(bad_upstream), F(upstream_tcp), F(upstream_tcp_full),
	F(fwd_wrong_source), F(fwd_bad_id), F(fwd_bad_cookie), F(fwd_0x20_mismatch), F(fwd_no_socket),
	F(nodata), F(chaos), F(notimp), F(hop_failed), F(cached), F(stale), F(no_route), F(hop_behind), F(other_origin), F(rerouted), F(refreshed),
	F(tcp_evicted), F(tcp_full), F(in_flight),
	F(rrl_dropped), F(rrl_slipped), F(amp_truncated), F(cookies), F(badcookie),
	F(proxy_accepted), F(proxy_refused), F(proxy_missing),
#define BAD(x, st) { "proxy_" #x, offsetof(struct inrpd_counters, proxy_bad[st]) }
	BAD(truncated, PROXYV2_SHORT), BAD(bad_version, PROXYV2_BAD_VERSION),
	BAD(bad_command, PROXYV2_BAD_COMMAND), BAD(bad_family, PROXYV2_BAD_FAMILY),
	BAD(bad_transport, PROXYV2_BAD_TRANSPORT), BAD(too_long, PROXYV2_TOO_LONG),
	BAD(short_address, PROXYV2_SHORT_ADDRESS), BAD(bad_tlv, PROXYV2_BAD_TLV),
#undef BAD
	F(dnstap_sent), F(dnstap_dropped),
#undef F
};
#define NCOUNTERS (sizeof(counter_fields) / sizeof(counter_fields[0]))

static unsigned long long counter_get(const struct inrpd_counters *c, size_t i)
{
	return (unsigned long long)*(const uint64_t *)((const char *)c + counter_fields[i].off);
}

unsigned inrpd_counter_count(void)
{
	return NCOUNTERS;
}

const char *inrpd_counter_name(unsigned i)
{
	return counter_fields[i].name;
}

uint64_t inrpd_counter_value(const struct inrpd_counters *c, unsigned i)
{
	return counter_get(c, i);
}

/* "queries 5 answered 5 ..." or, json, "{"queries": 5, ...}" */
static void format_counters(const struct inrpd_counters *c, bool json, char *buf, size_t len)
{
	size_t n = 0;
	if (json)
		n += (size_t)snprintf(buf + n, len - n, "{");
	for (size_t i = 0; i < NCOUNTERS && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, json ? "%s\"%s\": %llu" : "%s%s %llu",
				      i ? (json ? ", " : " ") : "", counter_fields[i].name, counter_get(c, i));
	if (json && n < len)
		snprintf(buf + n, len - n, "}");
}

/* A TLS transport's counters: the answer path's, then its own (HTTP's only for DoH), as format_counters. */
static void format_transport(unsigned k, bool json, char *buf, size_t len)
{
	struct inrpd_counters c = { 0 };
	struct tls_counters tc = { 0 };
	tls_server_counters(g.tls[k], &c, &tc);
	format_counters(&c, json, buf, len);
	size_t n = strlen(buf);
	if (json && n)
		n--;    /* the transport's own counters go in the same object */
	for (unsigned i = 0; i < TLS_COUNTERS && n < len; i++)
		if (k == TLS_DOH || i < TLS_CNT_HTTP_FIRST)
			n += (size_t)snprintf(buf + n, len - n, json ? ", \"%s\": %llu" : " %s %llu",
					      tls_counter_name((enum tls_counter)i), (unsigned long long)tc.v[i]);
	if (json && n < len)
		snprintf(buf + n, len - n, "}");
}

/* A line for each transport, TLS's and HTTPS's own counters after the answer path's. */
static void log_counters(const char *when, const struct inrpd_counters *u,
			 const struct inrpd_counters *t)
{
	char buf[4096];
	format_counters(u, false, buf, sizeof(buf));
	log_info("%s: udp: %s", when, buf);
	format_counters(t, false, buf, sizeof(buf));
	log_info("%s: tcp: %s", when, buf);
	for (unsigned k = 0; k < 2; k++) {
		if (!g.tls[k])
			continue;
		format_transport(k, false, buf, sizeof(buf));
		log_info("%s: %s: %s", when, tls_kind_name((enum tls_kind)k), buf);
	}
}

static bool same_string(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static bool listens_equal(const struct inrpd_listen *a, unsigned na, const struct inrpd_listen *b, unsigned nb)
{
	if (na != nb)
		return false;
	for (unsigned i = 0; i < na; i++) {
		const struct inrpd_listen *x = &a[i], *y = &b[i];
		if (x->ep.family != y->ep.family || x->ep.port != y->ep.port || memcmp(x->ep.addr, y->ep.addr, 16) != 0)
			return false;
	}
	return true;
}

static bool listen_equal(const struct inrpd_config *a, const struct inrpd_config *b)
{
	return listens_equal(a->listen, a->nlisten, b->listen, b->nlisten) &&
	       listens_equal(a->tls.dot, a->tls.ndot, b->tls.dot, b->tls.ndot) &&
	       listens_equal(a->tls.doh, a->tls.ndoh, b->tls.doh, b->tls.ndoh);
}

/* Once root is given up, a new listener on a privileged port could not be bound. */
static bool needs_privileges(const struct inrpd_config *cfg, char *err, size_t err_len)
{
	for (unsigned i = 0; i < cfg->nlisten; i++) {
		const struct inrpd_listen *l = &cfg->listen[i];
		bool known = false;
		for (unsigned k = 0; k < g.cfg->nlisten && !known; k++)
			known = l->ep.family == g.cfg->listen[k].ep.family && l->ep.port == g.cfg->listen[k].ep.port &&
				memcmp(l->ep.addr, g.cfg->listen[k].ep.addr, 16) == 0;
		char what[96], buf[80];
		snprintf(what, sizeof(what), "listen %s", ip_endpoint_format(&l->ep, buf, sizeof(buf)));
		if (!known && !privdrop_can_bind(l->ep.port, what, err, err_len))
			return true;
	}
	char what[96], buf[80];
	snprintf(what, sizeof(what), "metrics %s", metrics_config_format(&cfg->metrics, buf, sizeof(buf)));
	return cfg->metrics.enabled && !metrics_config_equal(&cfg->metrics, &g.cfg->metrics) &&
	       !privdrop_can_bind(cfg->metrics.port, what, err, err_len);
}

/*
 * SIGHUP.  The main thread is an offline QSBR thread here (online only
 * while config.c writes the new FIB): synchronize_rcu() waits for every
 * worker to leave the batch that may still use the old runtime, and the
 * old FIB is destroyed offline.
 */
static int reload_config(char *msg, size_t msg_len)
{
	char err[CONF_ERR_LEN];
	log_info("reloading %s", g.conf_path);
	tap_reopen(inrpd_tap);          /* a rotated dnstap file, whatever the configuration says */
	struct inrpd_config *cfg = inrpd_config_load(g.conf_path, err, sizeof(err));
	if (!cfg) {
		log_err("reload failed, keeping the running configuration: %s", err);
		snprintf(msg, msg_len, "reload failed, keeping the running configuration: %s", err);
		return -1;
	}
	if (needs_privileges(cfg, err, sizeof(err))) {
		log_err("reload refused, keeping the running configuration: %s", err);
		snprintf(msg, msg_len, "reload refused, keeping the running configuration: %s", err);
		inrpd_config_free(cfg);
		return -1;
	}
	if (!listen_equal(cfg, g.cfg) || cfg->workers != g.cfg->workers ||
	    !same_string(cfg->pid_file, g.cfg->pid_file) || !same_string(cfg->control_path, g.cfg->control_path) ||
	    !same_string(cfg->fib_channel_path, g.cfg->fib_channel_path) || cfg->max_pending != g.cfg->max_pending ||
	    cfg->refresh_slots != g.cfg->refresh_slots ||
	    !metrics_config_equal(&cfg->metrics, &g.cfg->metrics) ||
	    !privdrop_config_equal(&cfg->run_as, &g.cfg->run_as))
		log_warn("reload: changes to 'listen', 'listen-tls', 'listen-https', 'workers', 'pid-file', 'control', 'fib-channel', "
			 "'max-pending', 'refresh-on-route-change', 'metrics', 'user' and 'group' take effect on restart");
	if (!tap_conf_equal(&cfg->dnstap, &g.cfg->dnstap))
		log_warn("reload: changes to 'dnstap' take effect on restart");
	if (g.fibsync)
		fibsync_set_grace(g.fibsync, cfg->fib_grace_ms);
	log_set_level(effective_level(cfg));
	tcp_server_set_limits(g.tcp, cfg->tcp_max_conns, cfg->tcp_idle_ms);
	for (unsigned k = 0; k < 2; k++)
		if (g.tls[k])
			tls_server_reload(g.tls[k], cfg);     /* new connections get the new certificate */

	struct inrpd_runtime *rt = inrpd_runtime_from_config(cfg);
	if (rt && inrpd_rpz_apply(&g.loop, &cfg->rpz) < 0)
		log_err("reload: out of memory for the rpz zones; the ones running stay");
	inrpd_config_free(cfg);
	if (!rt) {
		log_err("reload failed, keeping the running configuration: out of memory");
		snprintf(msg, msg_len, "reload failed, keeping the running configuration: out of memory");
		return -1;
	}
	struct inrpd_runtime *old = rcu_xchg_pointer(&inrpd_rt, rt);
	synchronize_rcu();
	inrpd_runtime_free(old);
	udp_workers_routes_changed(g.udp);
	log_info("reloaded %s: %u routes", g.conf_path, rt->nroutes);
	snprintf(msg, msg_len, "reloaded %s: %u routes", g.conf_path, rt->nroutes);
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

/* ---- the control socket (inrpc) ----------------------------------------- */

static void counters_now(struct inrpd_counters *u, struct inrpd_counters *t)
{
	memset(u, 0, sizeof(*u));
	memset(t, 0, sizeof(*t));
	udp_workers_counters(g.udp, u);
	tcp_server_counters(g.tcp, t);
}

static void show_counters(void *ctx, char **args, unsigned nargs, bool json, struct ctl_reply *r)
{
	(void)ctx;
	(void)args;
	(void)nargs;
	struct inrpd_counters u, t;
	counters_now(&u, &t);
	if (json) {
		char ub[4096], tb[4096];
		format_counters(&u, true, ub, sizeof(ub));
		format_counters(&t, true, tb, sizeof(tb));
		struct strbuf sb = { 0 };
		strbuf_addf(&sb, "{\"udp\": %s, \"tcp\": %s", ub, tb);
		for (unsigned k = 0; k < 2; k++) {
			if (!g.tls[k])
				continue;
			format_transport(k, true, ub, sizeof(ub));
			strbuf_addf(&sb, ", \"%s\": %s", tls_kind_name((enum tls_kind)k), ub);
		}
		strbuf_addf(&sb, "}");
		ctl_reply_line(r, CTL_DATA, "%s", strbuf_str(&sb));
		strbuf_free(&sb);
		return;
	}
	/* one counter a line, as unbound-control prints them, so grep and awk can pick one */
	for (size_t i = 0; i < NCOUNTERS; i++)
		ctl_reply_line(r, CTL_DATA, "udp.%s %llu", counter_fields[i].name, counter_get(&u, i));
	for (size_t i = 0; i < NCOUNTERS; i++)
		ctl_reply_line(r, CTL_DATA, "tcp.%s %llu", counter_fields[i].name, counter_get(&t, i));
	for (unsigned k = 0; k < 2; k++) {
		if (!g.tls[k])
			continue;
		struct inrpd_counters c = { 0 };
		struct tls_counters tc = { 0 };
		const char *name = tls_kind_name((enum tls_kind)k);
		tls_server_counters(g.tls[k], &c, &tc);
		for (size_t i = 0; i < NCOUNTERS; i++)
			ctl_reply_line(r, CTL_DATA, "%s.%s %llu", name, counter_fields[i].name, counter_get(&c, i));
		for (unsigned i = 0; i < TLS_COUNTERS; i++)
			if (k == TLS_DOH || i < TLS_CNT_HTTP_FIRST)
				ctl_reply_line(r, CTL_DATA, "%s.%s %llu", name, tls_counter_name((enum tls_counter)i),
					       (unsigned long long)tc.v[i]);
	}
}

static void show_hops(void *ctx, char **args, unsigned nargs, bool json, struct ctl_reply *r)
{
	(void)ctx;
	(void)args;
	(void)nargs;
	struct inrpd_hops l;
	inrpd_hops_collect(g.udp, g.tcp, &l);
	if (json)
		ctl_reply_line(r, CTL_DATA, "[");
	for (unsigned i = 0; i < l.n; i++) {
		const struct fwd_hop_stats *h = &l.h[i];
		char a[IP_TEXT_MAX];
		ip_format(h->hop.family, h->hop.addr, a, sizeof(a));
		if (json)
			ctl_reply_line(r, CTL_DATA, "{\"addr\": \"%s\", \"port\": %u, \"queries\": %llu, "
				       "\"answers\": %llu, \"timeouts\": %llu, \"failures\": %llu, \"probes\": %llu, "
				       "\"srtt_us\": %u, \"load_ms\": %u}%s",
				       a, h->hop.port, (unsigned long long)h->queries, (unsigned long long)h->answers,
				       (unsigned long long)h->timeouts, (unsigned long long)h->failures,
				       (unsigned long long)h->probes, h->srtt_us, h->load_ms,
				       i + 1 < l.n ? "," : "");
		else
			ctl_reply_line(r, CTL_DATA, "%s port %u: queries %llu answers %llu timeouts %llu "
				       "failures %llu probes %llu srtt %u.%03u ms load %u ms", a, h->hop.port,
				       (unsigned long long)h->queries, (unsigned long long)h->answers,
				       (unsigned long long)h->timeouts, (unsigned long long)h->failures,
				       (unsigned long long)h->probes, h->srtt_us / 1000, h->srtt_us % 1000, h->load_ms);
	}
	if (json)
		ctl_reply_line(r, CTL_DATA, "]");
	inrpd_hops_free(&l);
}

/* Unix time in microseconds as a JSON number of seconds; 0 is null. */
static const char *unix_us_json(uint64_t us, char *buf, size_t len)
{
	if (!us)
		return "null";
	snprintf(buf, len, "%llu.%06u", (unsigned long long)(us / 1000000u), (unsigned)(us % 1000000u));
	return buf;
}

static void show_status(void *ctx, char **args, unsigned nargs, bool json, struct ctl_reply *r)
{
	(void)ctx;
	(void)args;
	(void)nargs;
	const struct inrpd_runtime *rt = inrpd_rt;     /* the main thread is the only writer */
	struct fib_stats st;
	fib_get_stats(rt->fib, &st);
	unsigned long long uptime = (unsigned long long)((uv_now(&g.loop) - g.started) / 1000);
	if (json) {
		char fsj[512] = "null";
		if (g.fibsync) {
			struct fibsync_status fs;
			char when[32];
			fibsync_status(g.fibsync, &fs, uv_now(&g.loop));
			snprintf(fsj, sizeof(fsj), "{\"connected\": %s, \"syncing\": %s, \"in_service\": %s, "
				 "\"stale\": %s, \"epoch\": %llu, \"names\": %llu, \"aggregates\": %llu, "
				 "\"connections\": %llu, \"replaced\": %llu, \"syncs\": %llu, \"updates\": %llu, "
				 "\"errors\": %llu, \"last_change\": %s}",
				 fs.connected ? "true" : "false", fs.syncing ? "true" : "false",
				 fs.in_service ? "true" : "false", fs.stale ? "true" : "false",
				 (unsigned long long)fs.epoch, (unsigned long long)fs.names,
				 (unsigned long long)fs.aggregates, (unsigned long long)fs.connections,
				 (unsigned long long)fs.replaced, (unsigned long long)fs.syncs, (unsigned long long)fs.updates,
				 (unsigned long long)fs.errors, unix_us_json(fs.last_change_us, when, sizeof(when)));
		}
		ctl_reply_line(r, CTL_DATA, "{\"version\": \"%s\", \"pid\": %d, \"uptime_s\": %llu, "
			       "\"config\": \"%s\", \"routes\": %u, \"fib_names\": %llu, \"fib_route_sets\": %llu, "
			       "\"fib_aggregates\": %llu, \"router_id\": \"%016llx\", \"upstreams\": %u, "
			       "\"fib_channel\": %s}",
			       INRPD_VERSION, (int)getpid(), uptime, g.conf_path,
			       rt->nroutes, (unsigned long long)st.entries, (unsigned long long)st.routesets,
			       (unsigned long long)st.aggregates, (unsigned long long)rt->router_id,
			       rt->nupstreams, fsj);
		return;
	}
	ctl_reply_line(r, CTL_DATA, "inrpd %s, pid %d, up %llu s", INRPD_VERSION, (int)getpid(), uptime);
	ctl_reply_line(r, CTL_DATA, "config %s", g.conf_path);
	for (unsigned i = 0; i < g.cfg->nlisten; i++) {
		char buf[80];
		ctl_reply_line(r, CTL_DATA, "listen %s", ip_endpoint_format(&g.cfg->listen[i].ep, buf, sizeof(buf)));
	}
	ctl_reply_line(r, CTL_DATA, "router-id \"%s\" (%016llx)", rt->router_name,
		       (unsigned long long)rt->router_id);
	for (unsigned i = 0; i < rt->nupstreams; i++) {
		char a[INET6_ADDRSTRLEN];
		ctl_reply_line(r, CTL_DATA, "upstream %s port %u",
			       route_addr_format(&rt->upstreams[i], a, sizeof(a)), rt->upstreams[i].port);
	}
	ctl_reply_line(r, CTL_DATA, "routes %u, FIB names %llu, route sets %llu, aggregates %llu",
		       rt->nroutes, (unsigned long long)st.entries, (unsigned long long)st.routesets,
		       (unsigned long long)st.aggregates);
	if (g.fibsync) {
		struct fibsync_status fs;
		fibsync_status(g.fibsync, &fs, uv_now(&g.loop));
		ctl_reply_line(r, CTL_DATA, "fib-channel %s: %s%s, epoch %llu, %llu names, %llu aggregates",
			       g.cfg->fib_channel_path, fs.connected ? "connected" : "not connected",
			       fs.syncing ? ", syncing" : fs.stale ? ", stale" : "", (unsigned long long)fs.epoch,
			       (unsigned long long)fs.names, (unsigned long long)fs.aggregates);
		ctl_reply_line(r, CTL_DATA, "fib-channel connections %llu (%llu replaced) messages %llu syncs %llu "
			       "updates %llu errors %llu%s%s", (unsigned long long)fs.connections,
			       (unsigned long long)fs.replaced,
			       (unsigned long long)fs.messages, (unsigned long long)fs.syncs,
			       (unsigned long long)fs.updates, (unsigned long long)fs.errors,
			       fs.last_error[0] ? ", last: " : "", fs.last_error);
		if (fs.last_change_us) {
			time_t secs = (time_t)(fs.last_change_us / 1000000u);
			struct tm tm;
			char day[32];
			strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", gmtime_r(&secs, &tm));
			ctl_reply_line(r, CTL_DATA, "fib-channel last change %s.%06uZ", day,
				       (unsigned)(fs.last_change_us % 1000000u));
		}
	}
}

static void cmd_reload(void *ctx, char **args, unsigned nargs, bool json, struct ctl_reply *r)
{
	char msg[CONF_ERR_LEN + 64];
	(void)ctx;
	(void)args;
	(void)nargs;
	(void)json;
	int rc = reload(msg, sizeof(msg));
	ctl_reply_end(r, rc == 0 ? CTL_OK : CTL_ERR_FAILED, "%s", msg);
}

static void show_cache(void *ctx, char **args, unsigned nargs, bool json, struct ctl_reply *r)
{
	(void)ctx;
	(void)args;
	(void)nargs;
	struct cache_stats st = { 0 };
	udp_workers_cache_stats(g.udp, &st);
	tcp_server_cache_stats(g.tcp, &st);
	ctl_reply_line(r, CTL_DATA, json ? "{\"capacity\": %llu, \"used\": %llu, \"entries\": %llu, "
		       "\"hits\": %llu, \"misses\": %llu, \"stores\": %llu, \"evictions\": %llu, "
		       "\"stale_hits\": %llu}"
		       : "capacity %llu bytes, used %llu, entries %llu, hits %llu, misses %llu, stores %llu, "
		       "evictions %llu, stale hits %llu",
		       (unsigned long long)st.capacity, (unsigned long long)st.used,
		       (unsigned long long)st.entries, (unsigned long long)st.hits,
		       (unsigned long long)st.misses, (unsigned long long)st.stores,
		       (unsigned long long)st.evictions, (unsigned long long)st.stale_hits);
}

/*
 * What the packet cache holds of a name's answers for types, in every
 * shard: the UDP workers' asked of their owners (udp_workers_cache_peek),
 * the stream transports' looked at here, on its owner thread.  Every
 * combination of the key's flags (RD, CD, DO) is a key of its own.
 */
#define PEEK_FLAGS 8

static const char *flags_text(unsigned f, bool json, char *buf, size_t len)
{
	static const char *const names[] = { "rd", "cd", "do" };       /* CACHE_F_RD, _CD, _DO */
	size_t o = 0;
	buf[0] = '\0';
	for (unsigned i = 0; i < 3; i++)
		if (f & (1u << i))
			o += (size_t)snprintf(buf + o, len - o, json ? "%s\"%s\"" : "%s%s", o ? (json ? ", " : " ") : "",
					      names[i]);
	return o || json ? buf : "no flags";
}

static bool show_route_cache(const struct name *n, const uint16_t *types, unsigned ntypes, bool json,
			     struct strbuf *b, struct ctl_reply *r)
{
	const struct inrpd_runtime *rt = inrpd_rt;     /* the main thread is the only writer */
	uint64_t fp_now = 0;
	bool routed = inrpd_cache_route_fp(rt, n, &fp_now);
	struct cache_key keys[3 * PEEK_FLAGS];
	unsigned nkeys = 0;
	for (unsigned t = 0; t < ntypes; t++)
		for (unsigned f = 0; f < PEEK_FLAGS; f++)
			cache_key_make(&keys[nkeys++], n, types[t], DNS_CLASS_IN, (uint8_t)f);
	unsigned nudp = udp_workers_count(g.udp);
	struct udp_peek_result *res = calloc((size_t)(nudp + 1) * nkeys, sizeof(*res));
	if (!res)
		return false;
	uint64_t now = inrpd_now_ms();
	udp_workers_cache_peek(g.udp, keys, nkeys, now, res);
	struct udp_peek_result *tcp = res + (size_t)nudp * nkeys;
	for (unsigned k = 0; k < nkeys; k++)
		tcp[k].found = tcp_server_cache_peek(g.tcp, &keys[k], now, &tcp[k].peek);

	if (json)
		strbuf_addf(b, ", \"cache\": [");
	for (unsigned t = 0; t < ntypes; t++) {
		char tbuf[16], shard[24], fl[32];
		const char *type = dns_type_to_text(types[t], tbuf, sizeof(tbuf));
		unsigned shown = 0;
		if (json)
			strbuf_addf(b, "%s{\"type\": \"%s\", \"entries\": [", t ? ", " : "", type);
		for (unsigned s = 0; s <= nudp; s++) {
			for (unsigned f = 0; f < PEEK_FLAGS; f++) {
				const struct udp_peek_result *x = &res[(size_t)s * nkeys + t * PEEK_FLAGS + f];
				if (x->busy || !x->found)
					continue;
				uint64_t life_ms = (uint64_t)x->peek.lifetime_s * 1000;
				bool stale = x->peek.age_ms >= life_ms;
				if (stale && x->peek.age_ms - life_ms >= (uint64_t)rt->cache_stale_s * 1000)
					continue;       /* expired: never served again */
				uint32_t ttl = stale ? 0 : x->peek.lifetime_s - x->peek.age_ms / 1000;
				bool same = routed && x->peek.fp == fp_now;
				const char *rcode = dns_rcode_name(x->peek.rcode);
				if (s < nudp)
					snprintf(shard, sizeof(shard), json ? "udp%u" : "udp worker %u", s);
				else
					snprintf(shard, sizeof(shard), "tcp");
				if (json)
					strbuf_addf(b, "%s{\"shard\": \"%s\", \"flags\": [%s], \"rcode\": \"%s\", "
						    "\"ttl\": %u, \"lifetime\": %u, \"stale\": %s, \"route_matches\": %s}",
						    shown ? ", " : "", shard, flags_text(f, true, fl, sizeof(fl)),
						    rcode ? rcode : "?", ttl, x->peek.lifetime_s, stale ? "true" : "false",
						    same ? "true" : "false");
				else if (stale)
					ctl_reply_line(r, CTL_DATA, "  %s cached in %s (%s): %s, stale, %s", type, shard,
						       flags_text(f, false, fl, sizeof(fl)), rcode ? rcode : "?",
						       same ? "under this route" : "cached under another route");
				else
					ctl_reply_line(r, CTL_DATA, "  %s cached in %s (%s): %s, ttl %u of %u s, %s", type,
						       shard, flags_text(f, false, fl, sizeof(fl)), rcode ? rcode : "?", ttl,
						       x->peek.lifetime_s,
						       same ? "under this route" : "cached under another route");
				shown++;
			}
		}
		if (json)
			strbuf_addf(b, "], \"cached\": %s}", shown ? "true" : "false");
		else if (!shown)
			ctl_reply_line(r, CTL_DATA, "  %s not cached", type);
	}
	if (json)
		strbuf_addf(b, "], \"cache_busy\": [");
	for (unsigned s = 0, busy = 0; s < nudp; s++) {
		if (!res[(size_t)s * nkeys].busy)
			continue;
		if (json)
			strbuf_addf(b, "%s\"udp%u\"", busy ? ", " : "", s);
		else
			ctl_reply_line(r, CTL_DATA, "  udp worker %u busy: its shard not looked at", s);
		busy++;
	}
	if (json)
		strbuf_addf(b, "]");
	free(res);
	return true;
}

/*
 * The route a name takes now (from which table, its suffix, memberships,
 * the candidates ranked) and what the cache holds of its answers for A,
 * AAAA and the type asked.
 */
static void show_route(void *ctx, char **args, unsigned nargs, bool json, struct ctl_reply *r)
{
	(void)ctx;
	struct name n;
	int rc = name_from_text(&n, args[0], strlen(args[0]));
	if (rc != NAME_OK) {
		ctl_reply_end(r, CTL_ERR_SYNTAX, "bad name \"%s\": %s", args[0], name_strerror(rc));
		return;
	}
	uint16_t types[3] = { DNS_TYPE_A, DNS_TYPE_AAAA };
	unsigned ntypes = 2;
	if (nargs > 1) {
		if (!dns_type_from_text(args[1], &types[2])) {
			ctl_reply_end(r, CTL_ERR_SYNTAX, "bad type \"%s\": a mnemonic (MX) or TYPEnnn", args[1]);
			return;
		}
		if (types[2] != DNS_TYPE_A && types[2] != DNS_TYPE_AAAA)
			ntypes = 3;
	}
	struct inrpd_route_view v;
	inrpd_route_view(inrpd_rt, &n, &v);     /* the main thread is the only writer of inrpd_rt */
	char suffix[NAME_MAX_TEXT] = "", target[NAME_MAX_TEXT] = "";
	name_to_text(&v.suffix, suffix, sizeof(suffix));
	if (v.has_redirect)
		name_to_text(&v.redirect, target, sizeof(target));
	struct strbuf b = { 0 };
	const char *table = !v.found ? "none" : v.from_nbrpd ? "nbrpd" : "configuration";
	if (json) {
		strbuf_addf(&b, "{\"name\": \"");
		strbuf_add_json(&b, args[0]);
		strbuf_addf(&b, "\", \"route\": \"");
		strbuf_add_json(&b, suffix);
		strbuf_addf(&b, "\", \"table\": \"%s\", \"own\": %s, \"redirect\": \"", table, v.own ? "true" : "false");
		strbuf_add_json(&b, target);
		strbuf_addf(&b, "\", \"aggregates\": [");
	} else if (!v.found) {
		strbuf_addf(&b, "%s: no route: to the upstreams, if the client may recurse", args[0]);
	} else {
		strbuf_addf(&b, "%s: route %s, from %s%s%s%s", args[0], suffix, table, v.own ? ", its own" : "",
			    v.has_redirect ? ", redirect to " : "", target);
	}
	for (unsigned i = 0; i < v.naggs; i++) {
		char agg[NAME_MAX_TEXT];
		name_to_text(&v.aggs[i], agg, sizeof(agg));
		if (json) {
			strbuf_addf(&b, "%s\"", i ? ", " : "");
			strbuf_add_json(&b, agg);
			strbuf_addf(&b, "\"");
		} else {
			strbuf_addf(&b, "%s%s", i ? ", " : "; a member of ", agg);
		}
	}
	if (json)
		strbuf_addf(&b, "], \"routes\": [");
	for (unsigned i = 0; i < v.nroutes; i++) {
		const struct route *rt = &v.routes[i];
		char a[IP_TEXT_MAX];
		route_addr_format(rt, a, sizeof(a));
		bool router = rt->kind == ROUTE_ROUTER;
		if (json)
			strbuf_addf(&b, "%s{\"kind\": \"%s\", \"address\": \"%s\", \"port\": %u, \"load_ms\": %u}",
				    i ? ", " : "", router ? "router" : "server", a, router ? rt->port : 0, rt->load_ms);
	}
	if (json) {
		strbuf_addf(&b, "]");
		if (show_route_cache(&n, types, ntypes, true, &b, r)) {
			strbuf_addf(&b, "}");
			ctl_reply_line(r, CTL_DATA, "%s", strbuf_str(&b));
		} else {
			ctl_reply_end(r, CTL_ERR_FAILED, "out of memory");
		}
	} else {
		ctl_reply_line(r, CTL_DATA, "%s", strbuf_str(&b));
		for (unsigned i = 0; i < v.nroutes; i++) {
			const struct route *rt = &v.routes[i];
			char a[IP_TEXT_MAX];
			route_addr_format(rt, a, sizeof(a));
			if (rt->kind == ROUTE_ROUTER)
				ctl_reply_line(r, CTL_DATA, "  %u. next router %s port %u, load %u ms", i + 1, a, rt->port,
					       rt->load_ms);
			else
				ctl_reply_line(r, CTL_DATA, "  %u. server %s, load %u ms", i + 1, a, rt->load_ms);
		}
		if (!show_route_cache(&n, types, ntypes, false, NULL, r))
			ctl_reply_end(r, CTL_ERR_FAILED, "out of memory");
	}
	strbuf_free(&b);
}

static void flush_cache(void *ctx, char **args, unsigned nargs, bool json, struct ctl_reply *r)
{
	(void)ctx;
	(void)json;
	if (nargs == 0) {
		cache_flush_all(inrpd_cache_flush);
		ctl_reply_end(r, CTL_OK, "cache flushed");
		return;
	}
	struct name n;
	int rc = name_from_text(&n, args[0], strlen(args[0]));
	if (rc != NAME_OK) {
		ctl_reply_end(r, CTL_ERR_SYNTAX, "bad name \"%s\": %s", args[0], name_strerror(rc));
		return;
	}
	cache_flush_name(inrpd_cache_flush, &n);
	ctl_reply_end(r, CTL_OK, "%s and below flushed", args[0]);
}

static void show_rpz(void *ctx, char **args, unsigned nargs, bool json, struct ctl_reply *r)
{
	(void)ctx, (void)args, (void)nargs;
	inrpd_rpz_show(r, json);
}

static const struct ctl_command commands[] = {
	{ "show status", 0, 0, true, show_status, "show status [json]",
	  "version, uptime, listen addresses, table size" },
	{ "show counters", 0, 0, true, show_counters, "show counters [json]",
	  "queries and what became of them, UDP and TCP" },
	{ "show hops", 0, 0, true, show_hops, "show hops [json]",
	  "next routers and upstreams: queries, timeouts, RTT, load" },
	{ "show cache", 0, 0, true, show_cache, "show cache [json]",
	  "the packet cache: size, entries, hits, misses, evictions" },
	{ "show route", 1, 2, true, show_route, "show route NAME [TYPE] [json]",
	  "the route a name takes now, and its answers cached (A, AAAA, TYPE)" },
	{ "show rpz", 0, 0, true, show_rpz, "show rpz [json]",
	  "response policy zones: primary, serial, rules, transfers, hits by action" },
	{ "flush cache", 0, 1, false, flush_cache, "flush cache [NAME]",
	  "drop every cached answer, or those of NAME and below" },
	{ "reload", 0, 0, false, cmd_reload, "reload", "re-read the configuration file" },
	CTL_CMD_SET_LOG_LEVEL,
	{ NULL, 0, 0, false, NULL, NULL, NULL },
};

static void on_control(void *ctx, int argc, char **argv, struct ctl_reply *r)
{
	ctl_dispatch(commands, ctx, argc, argv, r);
}

static void collect_metrics(void *ctx, struct prom *p)
{
	(void)ctx;
	uint64_t now = uv_now(&g.loop);
	inrpd_metrics_write(p, &(struct inrpd_metrics_source){
		.version = INRPD_VERSION, .uptime_ms = now - g.started, .now_ms = now,
		.udp = g.udp, .tcp = g.tcp, .tls = { g.tls[0], g.tls[1] }, .fibsync = g.fibsync,
		.metrics = g.metrics });
}

/* The FIB channel changed routes in service: the workers' questions asked lately are looked up again. */
static void routes_changed(void *arg)
{
	(void)arg;
	udp_workers_routes_changed(g.udp);
}

static void stop(void)
{
	if (g.stopping)
		return;
	g.stopping = true;
	log_info("shutting down");
	daemon_stopping();
	uv_close((uv_handle_t *)&g.sig_int, NULL);
	uv_close((uv_handle_t *)&g.sig_term, NULL);
	uv_close((uv_handle_t *)&g.sig_hup, NULL);
	uv_close((uv_handle_t *)&g.sig_usr1, NULL);
	ctl_server_close(g.ctl);
	g.ctl = NULL;
	metrics_server_close(g.metrics);
	g.metrics = NULL;
	fibsync_close(g.fibsync);
	inrpd_rpz_close();
	for (unsigned k = 0; k < 2; k++)
		if (g.tls[k])
			tls_server_close(g.tls[k]);
	tcp_server_close(g.tcp);        /* the loop ends once every handle is closed */
}

static void on_signal(uv_signal_t *h, int signum)
{
	(void)h;
	switch (signum) {
	case SIGHUP: {
		char msg[CONF_ERR_LEN + 64];
		reload(msg, sizeof(msg));
		break;
	}
	case SIGUSR1: {
		struct inrpd_counters u = { 0 }, t = { 0 };
		udp_workers_counters(g.udp, &u);
		tcp_server_counters(g.tcp, &t);
		log_counters("statistics", &u, &t);
		break;
	}
	default:
		stop();
		break;
	}
}

int main(int argc, char **argv)
{
	daemon_init("inrpd");
	struct daemon_options opts;
	int status = daemon_parse_options(argc, argv, INRPD_VERSION, 1, &opts);
	if (status >= 0)
		return status;
	const char *conf_arg = opts.config;
	bool check = opts.check;
	g.foreground = opts.foreground;
	g.debug = opts.debug;

	char err[CONF_ERR_LEN];
	if (check) {
		/* the FIB needs a registered QSBR thread, offline but while it writes */
		rcu_register_thread();
		rcu_thread_offline();
		struct inrpd_config *cfg = inrpd_config_load(conf_arg, err, sizeof(err));
		if (cfg)
			printf("inrpd: %s: configuration valid (%u listen, %u routes)\n",
			       conf_arg, cfg->nlisten, cfg->nroutes);
		else
			fprintf(stderr, "inrpd: %s\n", err);
		bool ok = cfg != NULL;
		inrpd_config_free(cfg);
		rcu_unregister_thread();
		return ok ? 0 : 1;
	}
	char *abs_path = realpath(conf_arg, NULL);
	if (!abs_path) {
		fprintf(stderr, "inrpd: %s: %s\n", conf_arg, strerror(errno));
		return 1;
	}
	g.conf_path = abs_path;
	/*
	 * Fork before anything starts a thread (loading the FIB may start
	 * urcu's call_rcu thread); the parent reports our startup errors.
	 */
	if (!g.foreground)
		daemon_background();

	rcu_register_thread();
	rcu_thread_offline();
	struct inrpd_config *cfg = inrpd_config_load(abs_path, err, sizeof(err));
	if (!cfg)
		daemon_fail(err);
	g.cfg = cfg;
	log_init("inrpd", effective_level(cfg), !g.foreground);
	signal(SIGPIPE, SIG_IGN);

	struct inrpd_runtime *first = inrpd_runtime_from_config(cfg);
	if (!first)
		daemon_fail("out of memory");
	rcu_assign_pointer(inrpd_rt, first);
	unsigned nworkers = cfg->workers ? cfg->workers : cpu_count();
	if (nworkers > INRPD_MAX_WORKERS)
		nworkers = INRPD_MAX_WORKERS;
	cfg->cache_shards = nworkers + 1;
	cfg->max_sockets = socket_share(nworkers + 1, cfg->max_pending);
	if (!(inrpd_cache_flush = cache_flush_new()))
		daemon_fail("out of memory");

	if ((cfg->dnstap.socket_path || cfg->dnstap.file_path) &&
	    !(inrpd_tap = tap_open(&cfg->dnstap, first->identity, first->version, nworkers + 1, err, sizeof(err))))
		daemon_fail(err);
	if (uv_loop_init(&g.loop) < 0)
		daemon_fail("uv_loop_init failed");
	/*
	 * TCP first: its listeners are exclusive, so an address another
	 * process serves fails here, before our SO_REUSEPORT UDP sockets join
	 * that process's group and take a share of its queries.
	 */
	g.tcp = tcp_server_open(&g.loop, cfg, err, sizeof(err));
	if (!g.tcp)
		daemon_fail(err);
	if (cfg->tls.ndot && !(g.tls[TLS_DOT] = tls_server_open(&g.loop, TLS_DOT, cfg, g.tcp, err, sizeof(err))))
		daemon_fail(err);
	if (cfg->tls.ndoh && !(g.tls[TLS_DOH] = tls_server_open(&g.loop, TLS_DOH, cfg, g.tcp, err, sizeof(err))))
		daemon_fail(err);
	g.udp = udp_workers_open(cfg, nworkers, err, sizeof(err));
	if (!g.udp)
		daemon_fail(err);
	uv_signal_init(&g.loop, &g.sig_int);
	uv_signal_init(&g.loop, &g.sig_term);
	uv_signal_init(&g.loop, &g.sig_hup);
	uv_signal_init(&g.loop, &g.sig_usr1);
	uv_signal_start(&g.sig_int, on_signal, SIGINT);
	uv_signal_start(&g.sig_term, on_signal, SIGTERM);
	uv_signal_start(&g.sig_hup, on_signal, SIGHUP);
	uv_signal_start(&g.sig_usr1, on_signal, SIGUSR1);
	g.started = uv_now(&g.loop);
	if (cfg->control_path &&
	    !(g.ctl = ctl_server_open(&g.loop, cfg->control_path, "inrpd " INRPD_VERSION, on_control, NULL,
				     err, sizeof(err))))
		daemon_fail(err);
	if (cfg->fib_channel_path &&
	    !(g.fibsync = fibsync_open(&g.loop, cfg->fib_channel_path, cfg->fib_grace_ms, err, sizeof(err))))
		daemon_fail(err);
	if (g.fibsync)
		fibsync_on_change(g.fibsync, routes_changed, NULL);
	if (cfg->metrics.enabled &&
	    !(g.metrics = metrics_server_open(&g.loop, &cfg->metrics, collect_metrics, NULL, err, sizeof(err))))
		daemon_fail(err);
	if (cfg->pid_file && daemon_write_pid_file(cfg->pid_file, err, sizeof(err)) < 0)
		daemon_fail(err);
	const char *state = cfg->rpz.state_dir[0] ? cfg->rpz.state_dir : NULL;
	if (state && mkdir(state, 0700) < 0 && errno != EEXIST) {
		snprintf(err, sizeof(err), "state-dir %.300s: %s", state, strerror(errno));
		daemon_fail(err);
	}
	const char *own[] = { cfg->control_path, cfg->fib_channel_path, state };
	if (privdrop_apply(&cfg->run_as, own, 3, err, sizeof(err)) < 0 ||
	    (g.metrics && metrics_server_start(g.metrics, err, sizeof(err)) < 0))
		daemon_fail(err);
	if (inrpd_tap && tap_start(inrpd_tap, err, sizeof(err)) < 0)
		daemon_fail(err);
	if (udp_workers_start(g.udp, err, sizeof(err)) < 0)
		daemon_fail(err);
	if (inrpd_rpz_apply(&g.loop, &cfg->rpz) < 0)
		daemon_fail("out of memory");

	log_info("inrpd %s started: %u listen addresses, %u udp workers, %u routes",
		 INRPD_VERSION, cfg->nlisten, nworkers, first->nroutes);
	daemon_ready();

	uv_run(&g.loop, UV_RUN_DEFAULT);

	/* every handle is closed: stop the workers, then free what they read */
	struct inrpd_counters u = { 0 }, t = { 0 };
	udp_workers_stop(g.udp, &u);
	g.udp = NULL;
	tcp_server_counters(g.tcp, &t);
	log_counters("stopped", &u, &t);
	for (unsigned k = 0; k < 2; k++) {
		tls_server_free(g.tls[k]);
		g.tls[k] = NULL;
	}
	tcp_server_free(g.tcp);
	g.tcp = NULL;
	tap_close(inrpd_tap);           /* every thread that logged has stopped */
	inrpd_tap = NULL;
	cache_flush_free(inrpd_cache_flush);
	inrpd_cache_flush = NULL;
	int rc = uv_loop_close(&g.loop);
	if (rc < 0)
		log_err("uv_loop_close: %s", uv_strerror(rc));

	struct inrpd_runtime *rt = rcu_xchg_pointer(&inrpd_rt, NULL);
	struct fib *chan = rcu_xchg_pointer(&inrpd_chan_fib, NULL);
	synchronize_rcu();
	inrpd_runtime_free(rt);         /* fib_destroy waits for pending call_rcu work */
	if (chan)
		fib_destroy(chan);
	fibsync_free(g.fibsync);
	g.fibsync = NULL;
	inrpd_rpz_free();
	if (cfg->pid_file)
		unlink(cfg->pid_file);
	inrpd_config_free(cfg);
	free(abs_path);
	tlslink_global_deinit();
	rcu_unregister_thread();
	return 0;
}
