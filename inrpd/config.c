/*
 * inrpd's configuration: the keywords of inrpd.conf on top of lib/conf.
 *
 *     listen 127.0.0.1 port 5353;          repeatable, IPv4 or IPv6
 *     listen-tls 127.0.0.1 port 853;       DNS over TLS (RFC 7858), repeatable
 *     listen-https 127.0.0.1 port 443;     DNS over HTTPS (RFC 8484), repeatable
 *     tls-certificate "/etc/inrpd/cert.pem";  the chain, PEM; read again on reload
 *     tls-key "/etc/inrpd/key.pem";
 *     https-path "/dns-query";
 *     workers 2;                           or "auto": one per CPU
 *     answer-ttl 5;
 *     edns-udp-size 1232;
 *     tcp-idle-timeout 10s;
 *     tcp-max-connections 128;
 *     log-level info;
 *     pid-file "/run/inrpd.pid";
 *     control "/run/inrpd/inrpd.ctl";      (inrpc talks to it)
 *     router-id "cr1.example.net";         names this router in INRP paths
 *     upstream 127.0.0.53 port 53;         fallback resolvers, ranked
 *     upstream-0x20 no;                    the name in random case to upstreams (RFC 5452 9.2)
 *     allow-recursion 192.0.2.0/24;        who may use them (default: loopback
 *                                          and private ranges; "none": nobody)
 *     proxy-protocol-from 127.0.0.1;       repeatable: these must send a PROXY v2
 *                                          header, others may not (proxy.h)
 *     query-timeout 2s;                    all attempts of one query
 *     hop-probe-interval 5s;               a hop passed over as slow is probed this often
 *     hop-limit 16;
 *     nsid yes;                            NSID (RFC 5001) answers the router-id
 *     identity "cr1";                      CHAOS id.server, hostname.bind (default: the router-id,
 *                                          else the host name); hide-identity yes: REFUSED
 *     version "inrpd";                     CHAOS version.bind, version.server; hide-version yes
 *     minimal-any yes;                     RFC 8482: ANY over UDP answered with one RRset
 *     cache-size 64M;                      packet cache, all threads (0: none)
 *     cache-max-ttl 24h;
 *     cache-max-negative-ttl 1h;
 *     cache-servfail-ttl 5s;
 *     cache-serve-stale 0;                 RFC 8767 window; 0: off
 *     rrl-rate 20;                         answers/s per /24 or /56 outside
 *                                          allow-recursion, unproven; 0: off
 *     rrl-slip 2;                          every 2nd limited query: TC (a cookie: BADCOOKIE, always)
 *     rrl-exempt 192.0.2.0/24;             repeatable
 *     rrl-exempt-routers yes;              next-hop routers are not limited
 *     cookie-secret "0123...ef";           16 bytes in hex; default: random
 *     max-pending 4096;                    queries in flight per worker
 *     fib-channel "/run/inrpd/fib";        nbrpd pushes its routes here
 *     fib-grace-time 60s;                  kept that long when nbrpd goes away
 *     metrics 127.0.0.1 port 9153;         Prometheus /metrics (lib/ops/metrics.h)
 *     metrics-allow 192.0.2.0/24;          who may scrape (default: loopback)
 *     user "inrpd";  group "inrpd";        given up root for, once bound (lib/ops/privdrop.h)
 *     dnstap { socket-path "/run/dnstap.sock"; }   query logs (tap.h)
 *     route "www.example.content" {
 *         server 127.0.0.10;               ranked in the order given
 *         server ::1 load 20;
 *         router 127.0.0.2 port 5353;      the next content router's inrpd
 *     }
 *     route "alias.example" { redirect "www.example.content"; }
 *     route "www.example.content" {
 *         server 127.0.0.10;
 *         record HTTPS "1 . alpn=h2";      answered for the route's names
 *     }
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <ctype.h>
#include <sodium.h>
#include <urcu-qsbr.h>

#include "conf.h"
#include "service_conf.h"
#include "log.h"
#include "config.h"
#include "fib.h"
#include "inrp.h"
#include "records.h"
#include "refresh.h"
#include "rrl.h"
#include "vec.h"
#include "tlslink.h"

#ifndef INRPD_VERSION
#define INRPD_VERSION "unknown"
#endif

#define DEFAULT_ANSWER_TTL      5
#define DEFAULT_EDNS_UDP_SIZE   1232    /* avoids fragmentation (DNS flag day 2020) */
#define DEFAULT_TCP_IDLE_MS     10000
#define DEFAULT_TCP_MAX_CONNS   128
#define DEFAULT_QUERY_TIMEOUT_MS 2000
#define DEFAULT_HOP_PROBE_MS    5000
#define DEFAULT_MAX_PENDING     4096
#define DEFAULT_REFRESH_SLOTS   0       /* off, as Unbound's prefetch: docs/benchmarks/topology.md */
#define DEFAULT_FIB_GRACE_MS    60000
#define DEFAULT_CACHE_SIZE      (64u << 20)
#define DEFAULT_CACHE_MAX_TTL   86400
#define DEFAULT_CACHE_NEG_TTL   3600
#define DEFAULT_CACHE_SERVFAIL  5
#define DEFAULT_RRL_RATE        20
#define DEFAULT_RRL_SLIP        2

/* Recursion for loopback and private networks only: never an open resolver. */
static const char *const default_acl[] = {
	"127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "::1/128", "fc00::/7",
};

struct cfg_route {
	struct name name;
	struct inrpd_records *records;  /* the config's table: every route's records */
	unsigned nrecords;
	const struct conf_stmt *stmt;
	unsigned nroutes;
	struct route routes[ROUTESET_MAX_ROUTES];
	bool has_redirect;
	struct name redirect;
};

struct cfg_ctx {
	struct inrpd_config *cfg;
	struct cfg_route *routes;
	size_t nroutes, cap;
	bool seen_workers, seen_ttl, seen_udp, seen_idle, seen_maxconn, seen_log, seen_pid, seen_control;
	bool seen_fib_channel, seen_grace, seen_nsid, seen_0x20, seen_any;
	bool seen_identity, seen_version, seen_hide_identity, seen_hide_version;
	bool seen_cache_size, seen_cache_ttl, seen_cache_neg, seen_cache_servfail, seen_cache_stale;
	bool seen_rrl_rate, seen_rrl_slip, seen_rrl_routers, seen_cookie_secret;
	bool seen_router_id, seen_acl, seen_acl_none, seen_timeout, seen_probe, seen_hop_limit, seen_pending, seen_refresh;
	bool seen_cert, seen_key, seen_https_path;
	const struct conf_stmt *tls_stmt, *cert_stmt, *key_stmt;
};

/* "KEYWORD ADDRESS [port NUMBER]" into list (n of them). */
static int parse_listen(const struct conf_stmt *s, struct inrpd_listen *list, unsigned *n, uint16_t port,
			char *err, size_t err_len)
{
	struct inrpd_listen l = { .ep.port = port, .line = s->line };

	if (conf_arg_addr(s, 1, &l.ep.family, l.ep.addr, err, err_len) < 0)
		return -1;
	if (s->argc == 3)
		return conf_error(err, err_len, s, "expected '%s ADDRESS [port NUMBER]'", s->argv[0]);
	if (s->argc == 4) {
		uint64_t p;
		if (strcmp(s->argv[2], "port") != 0)
			return conf_error(err, err_len, s, "expected 'port', not '%s'", s->argv[2]);
		if (conf_arg_uint(s, 3, 1, 65535, &p, err, err_len) < 0)
			return -1;
		l.ep.port = (uint16_t)p;
	}
	for (unsigned i = 0; i < *n; i++) {
		const struct inrpd_listen *o = &list[i];
		if (o->ep.family == l.ep.family && o->ep.port == l.ep.port &&
		    memcmp(o->ep.addr, l.ep.addr, l.ep.family == AF_INET ? 4 : 16) == 0) {
			char buf[80];
			return conf_error(err, err_len, s, "duplicate %s %s (first at line %u)", s->argv[0],
					  ip_endpoint_format(&l.ep, buf, sizeof(buf)), o->line);
		}
	}
	if (*n == INRPD_MAX_LISTEN)
		return conf_error(err, err_len, s, "too many %s addresses (at most %d)", s->argv[0],
				  INRPD_MAX_LISTEN);
	list[(*n)++] = l;
	return 0;
}

static int kw_listen(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return parse_listen(s, x->cfg->listen, &x->cfg->nlisten, INRPD_DEFAULT_PORT, err, err_len);
}

static int kw_listen_tls(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	if (!x->tls_stmt)
		x->tls_stmt = s;
	return parse_listen(s, x->cfg->tls.dot, &x->cfg->tls.ndot, INRPD_DOT_PORT, err, err_len);
}

static int kw_listen_https(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	if (!x->tls_stmt)
		x->tls_stmt = s;
	return parse_listen(s, x->cfg->tls.doh, &x->cfg->tls.ndoh, INRPD_DOH_PORT, err, err_len);
}

static int kw_tls_certificate(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	x->cert_stmt = s;
	return conf_arg_path_near(s, 1, &x->seen_cert, PATH_MAX, &x->cfg->tls.cert_file, err, err_len);
}

static int kw_tls_key(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	x->key_stmt = s;
	return conf_arg_path_near(s, 1, &x->seen_key, PATH_MAX, &x->cfg->tls.key_file, err, err_len);
}

static int kw_https_path(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	const char *p = s->argv[1];
	if (conf_once(&x->seen_https_path, s, err, err_len) < 0)
		return -1;
	if (p[0] != '/' || strlen(p) > INRPD_HTTPS_PATH_MAX || strpbrk(p, "?# \t"))
		return conf_error(err, err_len, s, "https-path: expected a path from '/', without '?' or '#', "
				  "of at most %d bytes", INRPD_HTTPS_PATH_MAX);
	snprintf(x->cfg->tls.https_path, sizeof(x->cfg->tls.https_path), "%s", p);
	return 0;
}

/* The certificate and key read now, so a bad one is the configuration's error (and a reload's). */
static int load_tls(struct cfg_ctx *x, char *err, size_t err_len)
{
	struct inrpd_tls_config *t = &x->cfg->tls;
	if (!x->seen_cert && !x->seen_key) {
		if (x->tls_stmt)
			return conf_error(err, err_len, x->tls_stmt, "%s needs 'tls-certificate' and 'tls-key'",
					  x->tls_stmt->argv[0]);
		return 0;
	}
	if (!x->seen_cert || !x->seen_key) {
		const struct conf_stmt *s = x->seen_cert ? x->cert_stmt : x->key_stmt;
		return conf_error(err, err_len, s, "'tls-certificate' and 'tls-key' go together");
	}
	char why[CONF_ERR_LEN];
	t->cred = tlslink_cred_x509(t->cert_file, t->key_file, why, sizeof(why));
	if (!t->cred)
		return conf_error(err, err_len, x->cert_stmt, "tls-certificate: %s", why);
	return 0;
}

static int kw_workers(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	uint64_t n;
	if (conf_once(&x->seen_workers, s, err, err_len) < 0)
		return -1;
	if (strcmp(s->argv[1], "auto") == 0) {
		x->cfg->workers = 0;
		return 0;
	}
	if (conf_arg_uint(s, 1, 1, INRPD_MAX_WORKERS, &n, err, err_len) < 0)
		return -1;
	x->cfg->workers = (unsigned)n;
	return 0;
}

static int kw_answer_ttl(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	uint64_t n;
	if (conf_once(&x->seen_ttl, s, err, err_len) < 0 ||
	    conf_arg_uint(s, 1, 0, 86400, &n, err, err_len) < 0)
		return -1;
	x->cfg->answer_ttl = (uint32_t)n;
	return 0;
}

static int kw_edns_udp_size(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	uint64_t n;
	if (conf_once(&x->seen_udp, s, err, err_len) < 0 ||
	    conf_arg_uint(s, 1, DNS_UDP_MIN, DNS_EDNS_MAX, &n, err, err_len) < 0)
		return -1;
	x->cfg->edns_udp_size = (uint16_t)n;
	return 0;
}

static int kw_tcp_idle(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return conf_once_duration_ms(s, &x->seen_idle, 100, 3600000, &x->cfg->tcp_idle_ms, err, err_len);
}

static int kw_tcp_max(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	uint64_t n;
	if (conf_once(&x->seen_maxconn, s, err, err_len) < 0 ||
	    conf_arg_uint(s, 1, 1, 65536, &n, err, err_len) < 0)
		return -1;
	x->cfg->tcp_max_conns = (unsigned)n;
	return 0;
}

static int kw_log_level(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return conf_once_log_level(s, &x->seen_log, &x->cfg->log_level, err, err_len);
}

static int kw_pid_file(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return conf_arg_path(s, 1, &x->seen_pid, PATH_MAX - 1, &x->cfg->pid_file, err, err_len);
}

/* "ADDRESS [port N] [load MS]" from argv[1]; port only where allowed. */
static int parse_endpoint(const struct conf_stmt *s, struct route *rt, bool with_port,
			  bool with_load, char *err, size_t err_len)
{
	int family;
	if (conf_arg_addr(s, 1, &family, rt->addr, err, err_len) < 0)
		return -1;
	rt->family = (uint8_t)family;
	bool seen_port = false, seen_load = false;
	for (unsigned i = 2; i < s->argc; i += 2) {
		const char *kw = s->argv[i];
		bool is_port = with_port && strcmp(kw, "port") == 0;
		bool is_load = with_load && strcmp(kw, "load") == 0;
		if (!is_port && !is_load)
			return conf_error(err, err_len, s, "unexpected '%s': expected %s%s", kw,
					  with_port ? "'port NUMBER'" : "",
					  with_load ? (with_port ? " or 'load MILLISECONDS'" : "'load MILLISECONDS'") : "");
		if (i + 1 >= s->argc)
			return conf_error(err, err_len, s, "'%s' needs a value", kw);
		uint64_t v;
		if (is_port) {
			if (seen_port)
				return conf_error(err, err_len, s, "'port' given twice");
			seen_port = true;
			if (conf_arg_uint(s, i + 1, 1, 65535, &v, err, err_len) < 0)
				return -1;
			rt->port = (uint16_t)v;
		} else {
			if (seen_load)
				return conf_error(err, err_len, s, "'load' given twice");
			seen_load = true;
			if (conf_arg_uint(s, i + 1, 0, UINT32_MAX, &v, err, err_len) < 0)
				return -1;
			rt->load_ms = (uint32_t)v;
		}
	}
	return 0;
}

static int add_route(const struct conf_stmt *s, struct cfg_route *r, const struct route *rt,
		     char *err, size_t err_len)
{
	for (unsigned i = 0; i < r->nroutes; i++)
		if (route_equal(&r->routes[i], rt))
			return conf_error(err, err_len, s, "duplicate %s %s", s->argv[0], s->argv[1]);
	if (r->nroutes == ROUTESET_MAX_ROUTES)
		return conf_error(err, err_len, s, "too many servers and routers in one route (at most %d)",
				  ROUTESET_MAX_ROUTES);
	r->routes[r->nroutes++] = *rt;
	return 0;
}

static int kw_server(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct route rt = { .kind = ROUTE_SERVER };
	if (parse_endpoint(s, &rt, false, true, err, err_len) < 0)
		return -1;
	return add_route(s, arg, &rt, err, err_len);
}

static int kw_router(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct route rt = { .kind = ROUTE_ROUTER, .port = INRPD_DEFAULT_PORT };
	if (parse_endpoint(s, &rt, true, true, err, err_len) < 0)
		return -1;
	return add_route(s, arg, &rt, err, err_len);
}

static int kw_redirect(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_route *r = arg;
	if (r->has_redirect)
		return conf_error(err, err_len, s, "'redirect' given twice");
	int rc = name_from_text(&r->redirect, s->argv[1], strlen(s->argv[1]));
	if (rc != NAME_OK)
		return conf_error(err, err_len, s, "bad name \"%s\": %s", s->argv[1], name_strerror(rc));
	r->has_redirect = true;
	return 0;
}

static int kw_record(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_route *r = arg;
	char why[256];
	if (inrpd_records_add(r->records, &r->name, s->argv[1], s->argv[2], why, sizeof(why)) < 0)
		return conf_error(err, err_len, s, "%s", why);
	r->nrecords++;
	return 0;
}

static const struct conf_keyword route_keywords[] = {
	{ "server", 2, 4, CONF_NO_BLOCK, kw_server },
	{ "router", 2, 6, CONF_NO_BLOCK, kw_router },
	{ "redirect", 2, 2, CONF_NO_BLOCK, kw_redirect },
	{ "record", 3, 3, CONF_NO_BLOCK, kw_record },
	{ NULL, 0, 0, CONF_NO_BLOCK, NULL },
};

static int kw_route(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	struct cfg_route r;

	memset(&r, 0, sizeof(r));
	r.stmt = s;
	r.records = x->cfg->records;
	int rc = name_from_text(&r.name, s->argv[1], strlen(s->argv[1]));
	if (rc != NAME_OK)
		return conf_error(err, err_len, s, "bad name \"%s\": %s", s->argv[1], name_strerror(rc));
	if (conf_dispatch(s->block, route_keywords, &r, err, err_len) < 0)
		return -1;
	if (r.has_redirect && r.nroutes > 0)
		return conf_error(err, err_len, s, "route \"%s\" has a redirect and servers or routers: "
				  "it must have one or the other", s->argv[1]);
	if (r.has_redirect && name_equal(&r.redirect, &r.name))
		return conf_error(err, err_len, s, "route \"%s\" redirects to itself", s->argv[1]);
	unsigned nservers = 0;
	for (unsigned i = 0; i < r.nroutes; i++)
		nservers += r.routes[i].kind == ROUTE_SERVER;
	if (r.nrecords > 0 && nservers == 0)
		return conf_error(err, err_len, s, "route \"%s\" has records but no server: "
				  "only the router next to the servers answers them", s->argv[1]);
	if (!r.has_redirect && r.nroutes == 0)
		return conf_error(err, err_len, s, "route \"%s\" has no server, router or redirect",
				  s->argv[1]);
	if (VEC_RESERVE(x->routes, x->cap, x->nroutes + 1) < 0)
		return conf_error(err, err_len, s, "out of memory");
	x->routes[x->nroutes++] = r;
	return 0;
}

static int kw_control(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	/* a unix socket path must fit sun_path */
	return conf_arg_path(s, 1, &x->seen_control, UNIX_PATH_MAX, &x->cfg->control_path, err, err_len);
}

/* A string of 1 to max characters, given once, into out (max + 1 bytes). */
static int text_once(const struct conf_stmt *s, bool *seen, char *out, size_t max, char *err, size_t err_len)
{
	if (conf_once(seen, s, err, err_len) < 0)
		return -1;
	size_t n = strlen(s->argv[1]);
	if (n == 0 || n > max)
		return conf_error(err, err_len, s, "%s must have 1 to %zu characters", s->argv[0], max);
	memcpy(out, s->argv[1], n + 1);
	return 0;
}

static int kw_router_id(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return text_once(s, &x->seen_router_id, x->cfg->router_name, INRPD_ROUTER_NAME_MAX, err, err_len);
}

static int kw_upstream(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	struct inrpd_config *cfg = x->cfg;
	struct route rt = { .kind = ROUTE_ROUTER, .port = INRPD_DEFAULT_PORT };
	if (parse_endpoint(s, &rt, true, false, err, err_len) < 0)
		return -1;
	for (unsigned i = 0; i < cfg->nupstreams; i++)
		if (route_equal(&cfg->upstreams[i], &rt))
			return conf_error(err, err_len, s, "duplicate upstream %s", s->argv[1]);
	if (cfg->nupstreams == INRPD_MAX_UPSTREAMS)
		return conf_error(err, err_len, s, "too many upstreams (at most %d)", INRPD_MAX_UPSTREAMS);
	cfg->upstreams[cfg->nupstreams++] = rt;
	return 0;
}

static int add_acl(struct inrpd_config *cfg, const struct conf_stmt *s, const char *text,
		   char *err, size_t err_len)
{
	struct prefix p = { 0 };
	int family;
	unsigned len;
	if (s) {
		if (conf_arg_prefix(s, 1, &family, p.addr, &len, err, err_len) < 0)
			return -1;
	} else {
		/* the built-in defaults, written as prefixes above */
		if (prefix_parse(text, &p) < 0)
			return -1;
		family = p.family;
		len = p.len;
	}
	p.family = (uint8_t)family;
	p.len = (uint8_t)len;
	if (cfg->nacl == INRPD_MAX_ACL)
		return conf_error(err, err_len, s, "too many allow-recursion prefixes (at most %d)",
				  INRPD_MAX_ACL);
	cfg->acl[cfg->nacl++] = p;
	return 0;
}

static int kw_allow_recursion(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	if (strcmp(s->argv[1], "none") == 0) {
		if (x->seen_acl)
			return conf_error(err, err_len, s, "'allow-recursion none' with prefixes");
		x->seen_acl = x->seen_acl_none = true;
		return 0;
	}
	if (x->seen_acl_none)
		return conf_error(err, err_len, s, "'allow-recursion none' with prefixes");
	x->seen_acl = true;
	return add_acl(x->cfg, s, NULL, err, err_len);
}

/* A repeatable "KEYWORD PREFIX;" into a list of INRPD_MAX_ACL. */
static int add_prefix(const struct conf_stmt *s, struct prefix *list, unsigned *n, char *err, size_t err_len)
{
	struct prefix p = { 0 };
	int family;
	unsigned len;
	if (conf_arg_prefix(s, 1, &family, p.addr, &len, err, err_len) < 0)
		return -1;
	if (*n == INRPD_MAX_ACL)
		return conf_error(err, err_len, s, "too many %s prefixes (at most %d)", s->argv[0], INRPD_MAX_ACL);
	p.family = (uint8_t)family;
	p.len = (uint8_t)len;
	list[(*n)++] = p;
	return 0;
}

static int kw_proxy_protocol_from(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct inrpd_config *cfg = ((struct cfg_ctx *)arg)->cfg;
	return add_prefix(s, cfg->proxy_from, &cfg->nproxy_from, err, err_len);
}

static int kw_query_timeout(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	uint64_t ms;
	if (conf_once(&x->seen_timeout, s, err, err_len) < 0 ||
	    conf_arg_duration_ms(s, 1, 50, 60000, &ms, err, err_len) < 0)
		return -1;
	x->cfg->query_timeout_ms = (uint32_t)ms;
	return 0;
}

static int kw_hop_probe(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	uint64_t ms;
	if (conf_once(&x->seen_probe, s, err, err_len) < 0 ||
	    conf_arg_duration_ms(s, 1, 100, 3600000, &ms, err, err_len) < 0)
		return -1;
	x->cfg->hop_probe_ms = (uint32_t)ms;
	return 0;
}

static int kw_hop_limit(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	uint64_t n;
	if (conf_once(&x->seen_hop_limit, s, err, err_len) < 0 ||
	    conf_arg_uint(s, 1, 1, INRP_MAX_PATH, &n, err, err_len) < 0)
		return -1;
	x->cfg->hop_limit = (uint8_t)n;
	return 0;
}

static int kw_max_pending(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	uint64_t n;
	if (conf_once(&x->seen_pending, s, err, err_len) < 0 ||
	    conf_arg_uint(s, 1, 1, 65535, &n, err, err_len) < 0)
		return -1;
	x->cfg->max_pending = (unsigned)n;
	return 0;
}

static int kw_refresh(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	uint64_t n;
	if (conf_once(&x->seen_refresh, s, err, err_len) < 0 ||
	    conf_arg_uint(s, 1, 0, REFRESH_MAX_SLOTS, &n, err, err_len) < 0)
		return -1;
	x->cfg->refresh_slots = (unsigned)n;
	return 0;
}

static int kw_fib_channel(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return conf_arg_path(s, 1, &x->seen_fib_channel, UNIX_PATH_MAX, &x->cfg->fib_channel_path, err, err_len);
}

static int kw_fib_grace(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	if (conf_once(&x->seen_grace, s, err, err_len) < 0)
		return -1;
	return conf_arg_duration_ms(s, 1, 0, 86400000, &x->cfg->fib_grace_ms, err, err_len);
}

static int kw_nsid(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return conf_once_bool(s, &x->seen_nsid, &x->cfg->nsid, err, err_len);
}

static int kw_minimal_any(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return conf_once_bool(s, &x->seen_any, &x->cfg->minimal_any, err, err_len);
}


static int kw_identity(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return text_once(s, &x->seen_identity, x->cfg->identity, INRPD_TXT_MAX, err, err_len);
}

static int kw_version(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return text_once(s, &x->seen_version, x->cfg->version, INRPD_TXT_MAX, err, err_len);
}

static int kw_hide_identity(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return conf_once_bool(s, &x->seen_hide_identity, &x->cfg->hide_identity, err, err_len);
}

static int kw_hide_version(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return conf_once_bool(s, &x->seen_hide_version, &x->cfg->hide_version, err, err_len);
}

static int kw_upstream_0x20(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return conf_once_bool(s, &x->seen_0x20, &x->cfg->upstream_0x20, err, err_len);
}

/* "64M", "512K", "1G" or plain bytes; 0 turns the cache off. */
static int kw_cache_size(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	if (conf_once(&x->seen_cache_size, s, err, err_len) < 0)
		return -1;
	const char *t = s->argv[1];
	char *end;
	unsigned long long v = strtoull(t, &end, 10);
	unsigned shift = 0;
	if (*end == 'K' || *end == 'k')
		shift = 10;
	else if (*end == 'M' || *end == 'm')
		shift = 20;
	else if (*end == 'G' || *end == 'g')
		shift = 30;
	if (end == t || (shift && end[1]) || (!shift && *end) || v > (1ull << 40) >> shift)
		return conf_error(err, err_len, s, "cache-size: expected bytes, e.g. 64M, not '%s'", t);
	v <<= shift;
	if (v != 0 && v < CACHE_MIN_BYTES)
		return conf_error(err, err_len, s, "cache-size: at least %uK, or 0 for none",
				  CACHE_MIN_BYTES >> 10);
	x->cfg->cache_size = v;
	return 0;
}

static int cache_seconds(const struct conf_stmt *s, bool *seen, uint64_t min_ms, uint32_t *out,
			 char *err, size_t err_len)
{
	uint64_t ms;
	if (conf_once_duration_ms(s, seen, min_ms, 7 * 86400000ull, &ms, err, err_len) < 0)
		return -1;
	*out = (uint32_t)(ms / 1000);
	return 0;
}

static int kw_cache_max_ttl(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return cache_seconds(s, &x->seen_cache_ttl, 1000, &x->cfg->cache.max_ttl, err, err_len);
}

static int kw_cache_neg_ttl(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return cache_seconds(s, &x->seen_cache_neg, 0, &x->cfg->cache.max_negative_ttl, err, err_len);
}

static int kw_cache_servfail_ttl(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return cache_seconds(s, &x->seen_cache_servfail, 0, &x->cfg->cache.servfail_ttl, err, err_len);
}

static int kw_cache_stale(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return cache_seconds(s, &x->seen_cache_stale, 0, &x->cfg->cache_stale_s, err, err_len);
}

static int kw_rrl_rate(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	uint64_t n;
	if (conf_once_uint(s, &x->seen_rrl_rate, 0, 1000000, &n, err, err_len) < 0)
		return -1;
	x->cfg->rrl_rate = (uint32_t)n;
	return 0;
}

static int kw_rrl_slip(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	uint64_t n;
	if (conf_once_uint(s, &x->seen_rrl_slip, 0, 100, &n, err, err_len) < 0)
		return -1;
	x->cfg->rrl_slip = (uint32_t)n;
	return 0;
}

static int kw_rrl_exempt(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct inrpd_config *cfg = ((struct cfg_ctx *)arg)->cfg;
	return add_prefix(s, cfg->rrl_exempt, &cfg->nrrl_exempt, err, err_len);
}

static int kw_rrl_routers(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return conf_once_bool(s, &x->seen_rrl_routers, &x->cfg->rrl_exempt_routers, err, err_len);
}

static int kw_cookie_secret(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	if (conf_once(&x->seen_cookie_secret, s, err, err_len) < 0)
		return -1;
	const char *h = s->argv[1];
	if (strlen(h) != 2 * COOKIE_SECRET_LEN)
		return conf_error(err, err_len, s, "cookie-secret: expected %d hex digits", 2 * COOKIE_SECRET_LEN);
	for (unsigned i = 0; i < COOKIE_SECRET_LEN; i++) {
		unsigned v;
		char pair[3] = { h[2 * i], h[2 * i + 1], 0 };
		char *end;
		v = (unsigned)strtoul(pair, &end, 16);
		if (*end || !isxdigit((unsigned char)pair[0]))
			return conf_error(err, err_len, s, "cookie-secret: expected %d hex digits",
					  2 * COOKIE_SECRET_LEN);
		x->cfg->cookie_secret[i] = (uint8_t)v;
	}
	x->cfg->has_cookie_secret = true;
	return 0;
}

static int kw_dnstap(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return tap_conf_parse(s, &x->cfg->dnstap, err, err_len);
}

static int kw_rpz(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	return inrpd_rpz_conf_zone(&((struct cfg_ctx *)arg)->cfg->rpz, s, err, err_len);
}

static int kw_rpz_log_level(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	return inrpd_rpz_conf_log_level(&((struct cfg_ctx *)arg)->cfg->rpz, s, err, err_len);
}

static int kw_state_dir(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	return inrpd_rpz_conf_state_dir(&((struct cfg_ctx *)arg)->cfg->rpz, s, err, err_len);
}

static const struct conf_keyword top_keywords[] = {
	{ "rpz", 2, 2, CONF_BLOCK, kw_rpz },
	{ "state-dir", 2, 2, CONF_NO_BLOCK, kw_state_dir },
	{ "rpz-log-level", 2, 2, CONF_NO_BLOCK, kw_rpz_log_level },
	{ "listen", 2, 4, CONF_NO_BLOCK, kw_listen },
	{ "listen-tls", 2, 4, CONF_NO_BLOCK, kw_listen_tls },
	{ "listen-https", 2, 4, CONF_NO_BLOCK, kw_listen_https },
	{ "tls-certificate", 2, 2, CONF_NO_BLOCK, kw_tls_certificate },
	{ "tls-key", 2, 2, CONF_NO_BLOCK, kw_tls_key },
	{ "https-path", 2, 2, CONF_NO_BLOCK, kw_https_path },
	{ "workers", 2, 2, CONF_NO_BLOCK, kw_workers },
	{ "answer-ttl", 2, 2, CONF_NO_BLOCK, kw_answer_ttl },
	{ "edns-udp-size", 2, 2, CONF_NO_BLOCK, kw_edns_udp_size },
	{ "tcp-idle-timeout", 2, 2, CONF_NO_BLOCK, kw_tcp_idle },
	{ "tcp-max-connections", 2, 2, CONF_NO_BLOCK, kw_tcp_max },
	{ "log-level", 2, 2, CONF_NO_BLOCK, kw_log_level },
	{ "pid-file", 2, 2, CONF_NO_BLOCK, kw_pid_file },
	{ "control", 2, 2, CONF_NO_BLOCK, kw_control },
	{ "route", 2, 2, CONF_BLOCK, kw_route },
	{ "router-id", 2, 2, CONF_NO_BLOCK, kw_router_id },
	{ "upstream", 2, 4, CONF_NO_BLOCK, kw_upstream },
	{ "allow-recursion", 2, 2, CONF_NO_BLOCK, kw_allow_recursion },
	{ "proxy-protocol-from", 2, 2, CONF_NO_BLOCK, kw_proxy_protocol_from },
	{ "query-timeout", 2, 2, CONF_NO_BLOCK, kw_query_timeout },
	{ "hop-probe-interval", 2, 2, CONF_NO_BLOCK, kw_hop_probe },
	{ "hop-limit", 2, 2, CONF_NO_BLOCK, kw_hop_limit },
	{ "max-pending", 2, 2, CONF_NO_BLOCK, kw_max_pending },
	{ "refresh-on-route-change", 2, 2, CONF_NO_BLOCK, kw_refresh },
	{ "fib-channel", 2, 2, CONF_NO_BLOCK, kw_fib_channel },
	{ "fib-grace-time", 2, 2, CONF_NO_BLOCK, kw_fib_grace },
	{ "nsid", 2, 2, CONF_NO_BLOCK, kw_nsid },
	{ "upstream-0x20", 2, 2, CONF_NO_BLOCK, kw_upstream_0x20 },
	{ "minimal-any", 2, 2, CONF_NO_BLOCK, kw_minimal_any },
	{ "identity", 2, 2, CONF_NO_BLOCK, kw_identity },
	{ "hide-identity", 2, 2, CONF_NO_BLOCK, kw_hide_identity },
	{ "version", 2, 2, CONF_NO_BLOCK, kw_version },
	{ "hide-version", 2, 2, CONF_NO_BLOCK, kw_hide_version },
	{ "cache-size", 2, 2, CONF_NO_BLOCK, kw_cache_size },
	{ "cache-max-ttl", 2, 2, CONF_NO_BLOCK, kw_cache_max_ttl },
	{ "cache-max-negative-ttl", 2, 2, CONF_NO_BLOCK, kw_cache_neg_ttl },
	{ "cache-servfail-ttl", 2, 2, CONF_NO_BLOCK, kw_cache_servfail_ttl },
	{ "cache-serve-stale", 2, 2, CONF_NO_BLOCK, kw_cache_stale },
	{ "rrl-rate", 2, 2, CONF_NO_BLOCK, kw_rrl_rate },
	{ "rrl-slip", 2, 2, CONF_NO_BLOCK, kw_rrl_slip },
	{ "rrl-exempt", 2, 2, CONF_NO_BLOCK, kw_rrl_exempt },
	{ "rrl-exempt-routers", 2, 2, CONF_NO_BLOCK, kw_rrl_routers },
	{ "cookie-secret", 2, 2, CONF_NO_BLOCK, kw_cookie_secret },
	{ "dnstap", 1, 1, CONF_BLOCK, kw_dnstap },
	{ NULL, 0, 0, CONF_NO_BLOCK, NULL },
};

static int route_cmp(const void *a, const void *b)
{
	const struct cfg_route *x = a, *y = b;
	int c = name_compare(&x->name, &y->name);
	if (c)
		return c;
	/* keep file order among equal names so the error names the later one */
	return x->stmt->line < y->stmt->line ? -1 : x->stmt->line > y->stmt->line;
}

static int build_fib(struct cfg_ctx *x, char *err, size_t err_len)
{
	struct inrpd_config *cfg = x->cfg;

	if (x->nroutes > 1)
		qsort(x->routes, x->nroutes, sizeof(*x->routes), route_cmp);
	for (size_t i = 1; i < x->nroutes; i++) {
		if (name_equal(&x->routes[i - 1].name, &x->routes[i].name)) {
			const struct conf_stmt *first = x->routes[i - 1].stmt;
			return conf_error(err, err_len, x->routes[i].stmt,
					  "route \"%s\" already defined at %s:%u",
					  x->routes[i].stmt->argv[1], first->file, first->line);
		}
	}
	cfg->fib = fib_create();
	if (!cfg->fib) {
		snprintf(err, err_len, "out of memory creating the FIB");
		return -1;
	}
	/*
	 * FIB writers hand freed memory to call_rcu(), which QSBR wants called
	 * online; the caller is offline otherwise (fib_destroy's rcu_barrier()
	 * must not run online).
	 */
	int rc = FIB_OK;
	size_t i;
	rcu_thread_online();
	/* sized once for every name, not rebuilt on the way */
	if (fib_reserve(cfg->fib, x->nroutes) != FIB_OK) {
		rcu_thread_offline();
		snprintf(err, err_len, "out of memory sizing the FIB for %zu routes", x->nroutes);
		return -1;
	}
	for (i = 0; i < x->nroutes && rc == FIB_OK; i++) {
		const struct cfg_route *r = &x->routes[i];
		rc = r->has_redirect ? fib_set_redirect(cfg->fib, &r->name, &r->redirect)
				     : fib_set_routes(cfg->fib, &r->name, r->routes, r->nroutes);
		inrpd_routers_add_set(r->routes, r->nroutes);
	}
	if (rc == FIB_OK)
		fib_commit(cfg->fib);
	rcu_thread_offline();
	if (rc != FIB_OK) {
		const struct conf_stmt *s = x->routes[i - 1].stmt;
		return conf_error(err, err_len, s, "route \"%s\": %s", s->argv[1], fib_strerror(rc));
	}
	cfg->nroutes = (unsigned)x->nroutes;
	return 0;
}

struct inrpd_config *inrpd_config_load(const char *path, char *err, size_t err_len)
{
	struct inrpd_config *cfg = calloc(1, sizeof(*cfg));
	if (!cfg) {
		snprintf(err, err_len, "out of memory");
		return NULL;
	}
	cfg->answer_ttl = DEFAULT_ANSWER_TTL;
	cfg->minimal_any = true;
	cfg->edns_udp_size = DEFAULT_EDNS_UDP_SIZE;
	cfg->tcp_idle_ms = DEFAULT_TCP_IDLE_MS;
	cfg->tcp_max_conns = DEFAULT_TCP_MAX_CONNS;
	cfg->log_level = -1;
	cfg->query_timeout_ms = DEFAULT_QUERY_TIMEOUT_MS;
	cfg->hop_probe_ms = DEFAULT_HOP_PROBE_MS;
	cfg->hop_limit = INRP_DEFAULT_HOP_LIMIT;
	cfg->max_pending = DEFAULT_MAX_PENDING;
	cfg->refresh_slots = DEFAULT_REFRESH_SLOTS;
	cfg->fib_grace_ms = DEFAULT_FIB_GRACE_MS;
	cfg->cache_size = DEFAULT_CACHE_SIZE;
	cfg->cache.max_ttl = DEFAULT_CACHE_MAX_TTL;
	cfg->cache.max_negative_ttl = DEFAULT_CACHE_NEG_TTL;
	cfg->cache.servfail_ttl = DEFAULT_CACHE_SERVFAIL;
	cfg->rrl_rate = DEFAULT_RRL_RATE;
	cfg->rrl_slip = DEFAULT_RRL_SLIP;
	cfg->rrl_exempt_routers = true;
	cfg->rpz.log_level = LOG_LVL_INFO;
	snprintf(cfg->tls.https_path, sizeof(cfg->tls.https_path), "/dns-query");
	cfg->records = inrpd_records_new();
	if (!cfg->records) {
		snprintf(err, err_len, "out of memory");
		free(cfg);
		return NULL;
	}

	struct conf *c = conf_parse_file(path, err, err_len);
	if (!c) {
		inrpd_config_free(cfg);
		return NULL;
	}
	struct cfg_ctx x = { .cfg = cfg };
	struct service_conf svc = { .metrics = &cfg->metrics, .run_as = &cfg->run_as };
	int rc = conf_dispatch_also(c->first, top_keywords, &x, service_keywords, &svc, err, err_len);
	if (rc == 0 && cfg->nlisten == 0) {
		snprintf(err, err_len, "%s: no 'listen' statement", path);
		rc = -1;
	}
	if (rc == 0 && !x.seen_acl)
		for (size_t i = 0; i < sizeof(default_acl) / sizeof(default_acl[0]); i++)
			add_acl(cfg, NULL, default_acl[i], err, err_len);
	metrics_conf_finish(&cfg->metrics);
	if (rc == 0)
		rc = privdrop_conf_check(&cfg->run_as, path, err, err_len);
	if (rc == 0 && !x.seen_router_id) {
		/* unique per listen address on one host, stable across restarts */
		char where[80];
		snprintf(cfg->router_name, sizeof(cfg->router_name), "inrpd %s",
			 ip_endpoint_format(&cfg->listen[0].ep, where, sizeof(where)));
	}
	if (rc == 0)
		rc = load_tls(&x, err, err_len);
	if (rc == 0)
		rc = build_fib(&x, err, err_len);
	if (rc == 0)
		inrpd_records_finish(cfg->records);
	free(x.routes);
	conf_free(c);
#ifdef __GLIBC__
	/* a large config's tree sits inside the heap; give its pages back */
	malloc_trim(0);
#endif
	if (rc < 0) {
		inrpd_config_free(cfg);
		return NULL;
	}
	return cfg;
}

void inrpd_config_free(struct inrpd_config *cfg)
{
	if (!cfg)
		return;
	if (cfg->fib)
		fib_destroy(cfg->fib);
	inrpd_records_free(cfg->records);
	free(cfg->pid_file);
	free(cfg->control_path);
	free(cfg->fib_channel_path);
	free(cfg->tls.cert_file);
	free(cfg->tls.key_file);
	tlslink_cred_free(cfg->tls.cred);
	privdrop_conf_free(&cfg->run_as);
	tap_conf_free(&cfg->dnstap);
	free(cfg);
}

/* One per process: a reload without cookie-secret keeps the cookies given out. */
static const uint8_t *random_secret(void)
{
	static uint8_t secret[COOKIE_SECRET_LEN];
	static bool made;
	if (!made) {
		if (sodium_init() < 0)
			abort();                /* no random source: nothing safe to do */
		randombytes_buf(secret, sizeof(secret));
		made = true;
	}
	return secret;
}

struct inrpd_runtime *inrpd_runtime_from_config(struct inrpd_config *cfg)
{
	struct inrpd_runtime *rt = calloc(1, sizeof(*rt));
	if (!rt)
		return NULL;
	rt->fib = cfg->fib;
	rt->records = cfg->records;
	cfg->records = NULL;
	rt->answer_ttl = cfg->answer_ttl;
	rt->edns_udp_size = cfg->edns_udp_size;
	rt->nroutes = cfg->nroutes;
	memcpy(rt->router_name, cfg->router_name, sizeof(rt->router_name));
	rt->router_id = inrp_router_id(cfg->router_name);
	rt->query_timeout_ms = cfg->query_timeout_ms;
	rt->hop_probe_ms = cfg->hop_probe_ms;
	rt->hop_limit = cfg->hop_limit;
	rt->nsid = cfg->nsid;
	rt->upstream_0x20 = cfg->upstream_0x20;
	rt->minimal_any = cfg->minimal_any;
	if (!cfg->hide_identity) {
		if (cfg->identity[0])
			memcpy(rt->identity, cfg->identity, sizeof(rt->identity));
		else if (cfg->router_name[0])
			snprintf(rt->identity, sizeof(rt->identity), "%s", cfg->router_name);
		else if (gethostname(rt->identity, sizeof(rt->identity) - 1) < 0)
			rt->identity[0] = '\0';
	}
	if (!cfg->hide_version)
		snprintf(rt->version, sizeof(rt->version), "%s", cfg->version[0] ? cfg->version : "inrpd " INRPD_VERSION);
	rt->cache = cfg->cache;
	rt->cache_stale_s = cfg->cache_stale_s;
	rt->rrl_rate = cfg->rrl_rate;
	rt->rrl_slip = cfg->rrl_slip;
	rt->rrl_exempt_routers = cfg->rrl_exempt_routers;
	rt->nrrl_exempt = cfg->nrrl_exempt;
	memcpy(rt->rrl_exempt, cfg->rrl_exempt, sizeof(rt->rrl_exempt));
	memcpy(rt->cookie_secret, cfg->has_cookie_secret ? cfg->cookie_secret : random_secret(),
	       COOKIE_SECRET_LEN);
	rt->nupstreams = cfg->nupstreams;
	memcpy(rt->upstreams, cfg->upstreams, sizeof(rt->upstreams));
	rt->nacl = cfg->nacl;
	memcpy(rt->acl, cfg->acl, sizeof(rt->acl));
	rt->nproxy_from = cfg->nproxy_from;
	memcpy(rt->proxy_from, cfg->proxy_from, sizeof(rt->proxy_from));
	cfg->fib = NULL;
	return rt;
}

void inrpd_runtime_free(struct inrpd_runtime *rt)
{
	if (!rt)
		return;
	if (rt->fib)
		fib_destroy(rt->fib);
	inrpd_records_free(rt->records);
	free(rt);
}
