/*
 * nbrpd's configuration (lib/conf), BIRD style:
 *
 *     router-name "cr1";                   this router in NBRP paths
 *     listen 127.0.0.1 port 1790;          NBRP sessions
 *     inrp-address 127.0.0.1 port 5353;    our inrpd: where peers forward queries
 *     hold-time 90s;  connect-retry 1s;
 *     restart-time 120s;                   peers keep our routes this long if we vanish
 *                                          (default 0: they drop them at once)
 *     max-peer-restart-time 300s;          we keep a vanished peer's routes at most this long
 *     fib-sync-wait 20s;                   after a start, how long inrpd keeps the old FIB
 *                                          while peers send their tables
 *     fib-send-hold-time 60s;              an inrpd that reads nothing this long is let go
 *     load-ms-per-hop 50;  load-radius 3;  load-threshold 10;  load-interval 1s;
 *     update-delay 0ms;                    a change waits this long for others to leave with it
 *     withdrawal-delay 0ms;                ... a name an origin withdrawal took (at least update-delay)
 *     max-routes 4;                        ranked routes per name for inrpd
 *     max-message-size 1048576;
 *     fib-channel "/run/inrpd/fib";        inrpd's FIB channel socket
 *     control "/run/nbrpd/nbrpd.ctl";      for nbrc
 *     metrics 127.0.0.1 port 9154;  metrics-allow 192.0.2.0/24;   Prometheus (lib/ops/metrics.h)
 *     user "nbrpd";  group "nbrpd";        given up root for, once bound (lib/ops/privdrop.h)
 *     pid-file "/run/nbrpd.pid";  log-level info;
 *     peer "cr2" {
 *         address 127.0.0.2 port 1790;
 *         local-pref 100;
 *         local-role provider;             ours towards cr2 (RFC 9234): provider | customer |
 *                                          peer | rs-server | rs-client; routes from a
 *                                          provider, peer or route server go only to
 *                                          customers and route-server clients
 *         max-names 100000 shut;           warn | refuse | shut
 *         passive;                         wait for cr2 to connect
 *         server-mode;                     a content server, announcing its own
 *                                          names with itself as next hop
 *         import deny "bad.example";       the longest matching suffix decides;
 *         import allow "example";          names matching no rule: default allow
 *         export default deny;
 *         export allow "shop.example";
 *         signatures require;              require | prefer | off (default off)
 *         authentication tls;              tls | none: TLS 1.3 with the router keys
 *                                          (default tls under `signatures require`)
 *     }
 *     key-file "/etc/content-router/nbrpd.key";     this router's key pair (nbrp-key generate)
 *     trust-anchor "MItS0ztk...=";         the anchor's public key
 *     trust-file "/etc/content-router/trust";       signed by the anchor; polled, and read on reload
 *     trust-poll 10s;                      how often its modification time is looked at
 *     signature-workers 2;                 threads for Ed25519
 *     signature-cache 1048576;             verified links kept
 *     signature-min-lifetime 5m;           a chain received must be valid this much longer
 *     bird {                               IP reachability and metrics from BIRD
 *         socket "/run/bird/bird.ctl";
 *         poll-interval 1s;
 *         timeout 5s;                      a BIRD silent this long is reconnected
 *         unreachable-delay 5s;            a peer unreachable this long is dropped
 *         settle-time 30s;                 a BIRD started less long ago is not yet
 *                                          believed when it cannot reach an address
 *     }
 *     content "shop.example" {             names this router originates
 *         server 192.0.2.10 load 20;
 *         health-check port 80 interval 5s timeout 1s;   TCP connect to each server;
 *     }                                                  the failing ones are withdrawn
 *     state-dir "/var/lib/nbrpd";          aggregates' snapshots and journals
 *     transfer-listen 192.0.2.1 port 5300; aggregates served as AXFR/IXFR, over TCP and UDP
 *     transfer-source 192.0.2.1;          the address fetches come from (default: transfer-listen's)
 *     allow-transfer 198.51.100.0/24;      who may transfer (repeatable; default: the
 *                                          configured peers' addresses and loopback)
 *     transfer-idle-timeout 10s;           a transfer connection idle this long is closed,
 *     transfer-time-limit 600s;            and one open this long
 *     fetch-max-names 4000000;             a fetched aggregate's names, and bytes (default:
 *     fetch-max-bytes 256000000;           64 a name): more is refused, nothing stored
 *     fetch-idle-timeout 10s;              a fetch with no byte this long ends,
 *     fetch-time-limit 300s;               and one that runs this long
 *     aggregate "hosted.example" {         one route for many names (an aggregate
 *         server 192.0.2.10 load 20;       this router originates), as content { }
 *         member "shop.example.com" "blog.example.org";
 *         file "hosted.names";             one name per line; relative to this file
 *     }
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "conf.h"
#include "service_conf.h"
#include "config.h"
#include "sigpool.h"
#include "vec.h"

#define DEFAULT_HOLD_TIME_S     90
#define DEFAULT_CONNECT_RETRY   1000
#define DEFAULT_LOAD_PER_HOP    50
#define DEFAULT_LOAD_RADIUS     3
#define DEFAULT_LOAD_THRESHOLD  10
#define DEFAULT_LOAD_INTERVAL   1000
#define DEFAULT_MAX_ROUTES      4
#define DEFAULT_LOCAL_PREF      100
#define DEFAULT_FIB_SYNC_WAIT   20000
#define DEFAULT_FIB_SEND_HOLD   60000
#define DEFAULT_RESTART_TIME_S  0       /* graceful restart is asked for, not assumed */
#define DEFAULT_MAX_PEER_RESTART_S 300  /* a peer's ask is capped: its stale routes are its word */
#define DEFAULT_TRUST_POLL      10000
#define DEFAULT_SIG_CACHE       (1u << 20)
/*
 * Transfers (docs/AGGREGATES.md "Limits"): 4 million names is four times
 * the largest aggregate measured; a member's record is 12 bytes and its
 * name (about 30 bytes in all, the snapshot's 17 a member measured), so 64
 * bytes a name leaves twice the room.  The byte cap is also what a fetch
 * may hold in memory while it streams (the names' wire forms), for each
 * of the 4 fetches at once.  A fetch at the byte cap within the time
 * limit needs about 7 Mbit/s; the server's limit is the longer, so a
 * client's own limit ends first.
 */
#define DEFAULT_FETCH_MAX_NAMES 4000000
#define FETCH_BYTES_PER_NAME    64
#define DEFAULT_FETCH_IDLE      10000
#define DEFAULT_FETCH_TIME      300000
#define DEFAULT_TRANSFER_IDLE   10000
#define DEFAULT_TRANSFER_TIME   600000
#define DEFAULT_SIG_MIN_LIFE    300000  /* ms; chains are re-signed with 6 hours left */

struct cfg_ctx {
	struct nbrpd_config *cfg;
	size_t content_cap, allow_transfer_cap;
	bool seen_sync_wait, seen_send_hold, seen_restart, seen_max_restart, seen_load_interval, seen_bird,
	     seen_update_delay, seen_withdrawal_delay;
	bool seen_state_dir, seen_transfer, seen_xfr_source, seen_xfr_idle, seen_xfr_time;
	bool seen_fetch_names, seen_fetch_bytes, seen_fetch_idle, seen_fetch_time;
	bool seen_key, seen_anchor, seen_trust, seen_trust_poll, seen_workers, seen_sig_cache, seen_min_life;
	bool seen_name, seen_listen, seen_inrp, seen_hold, seen_retry, seen_mph, seen_radius,
	     seen_threshold, seen_max_routes, seen_max_msg, seen_fib, seen_control, seen_pid, seen_log;
};

struct peer_ctx {
	struct nbrpd_peer_config *p;
	bool seen_address, seen_pref, seen_role, seen_max, seen_passive, seen_server, seen_sig, seen_auth;
	size_t import_cap, export_cap;
};

static int endpoint(const struct conf_stmt *s, bool *seen, struct ip_endpoint *e, uint16_t default_port,
		    char *err, size_t err_len)
{
	if (seen && conf_once(seen, s, err, err_len) < 0)
		return -1;
	e->port = default_port;
	return conf_arg_endpoint(s, 1, &e->family, e->addr, &e->port, err, err_len);
}

static int kw_router_name(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	if (conf_once(&x->seen_name, s, err, err_len) < 0)
		return -1;
	if (!nbrp_router_name_valid(s->argv[1]))
		return conf_error(err, err_len, s, "router-name must be 1 to %d printable characters "
				  "without spaces", NBRP_ROUTER_NAME_MAX);
	snprintf(x->cfg->router_name, sizeof(x->cfg->router_name), "%s", s->argv[1]);
	return 0;
}

static int kw_listen(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	x->cfg->has_listen = true;
	return endpoint(s, &x->seen_listen, &x->cfg->listen, NBRP_DEFAULT_PORT, err, err_len);
}

static int kw_inrp(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return endpoint(s, &x->seen_inrp, &x->cfg->inrp, 53, err, err_len);
}

static int kw_hold(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	uint64_t ms;
	if (conf_once(&x->seen_hold, s, err, err_len) < 0 ||
	    conf_arg_duration_ms(s, 1, 0, 65535000, &ms, err, err_len) < 0)
		return -1;
	if (ms != 0 && ms < NBRP_MIN_HOLD_TIME * 1000)
		return conf_error(err, err_len, s, "hold-time is 0 or at least %ds", NBRP_MIN_HOLD_TIME);
	x->cfg->hold_time_s = (uint32_t)(ms / 1000);
	return 0;
}

static int kw_retry(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return conf_once_duration_ms(s, &x->seen_retry, 10, 3600000, &x->cfg->connect_retry_ms, err, err_len);
}

static int kw_sync_wait(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return conf_once_duration_ms(s, &x->seen_sync_wait, 0, 3600000, &x->cfg->fib_sync_wait_ms, err, err_len);
}

static int kw_send_hold(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return conf_once_duration_ms(s, &x->seen_send_hold, 1000, 3600000, &x->cfg->fib_send_hold_ms, err, err_len);
}

static int kw_load_interval(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return conf_once_duration_ms(s, &x->seen_load_interval, 0, 3600000, &x->cfg->load_interval_ms,
				     err, err_len);
}

static int kw_update_delay(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return conf_once_duration_ms(s, &x->seen_update_delay, 0, 60000, &x->cfg->update_delay_ms, err, err_len);
}

static int kw_withdrawal_delay(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return conf_once_duration_ms(s, &x->seen_withdrawal_delay, 0, 60000, &x->cfg->withdrawal_delay_ms, err,
				     err_len);
}

static int kw_restart_time(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	uint64_t ms;
	if (conf_once(&x->seen_restart, s, err, err_len) < 0 ||
	    conf_arg_duration_ms(s, 1, 0, 3600000, &ms, err, err_len) < 0)
		return -1;
	x->cfg->restart_time_s = (uint32_t)(ms / 1000);
	return 0;
}

static int kw_max_peer_restart_time(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	uint64_t ms;
	if (conf_once(&x->seen_max_restart, s, err, err_len) < 0 ||
	    conf_arg_duration_ms(s, 1, 0, 3600000, &ms, err, err_len) < 0)
		return -1;
	x->cfg->max_peer_restart_s = (uint32_t)(ms / 1000);
	return 0;
}

static int kw_mph(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	uint64_t v;
	if (conf_once_uint(s, &x->seen_mph, 1, 1000000, &v, err, err_len) < 0)
		return -1;
	x->cfg->load_ms_per_hop = (uint32_t)v;
	return 0;
}

static int kw_radius(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	uint64_t v;
	if (conf_once_uint(s, &x->seen_radius, 0, NBRP_MAX_PATH, &v, err, err_len) < 0)
		return -1;
	x->cfg->load_radius = (uint32_t)v;
	return 0;
}

static int kw_threshold(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	uint64_t v;
	if (conf_once_uint(s, &x->seen_threshold, 0, UINT32_MAX, &v, err, err_len) < 0)
		return -1;
	x->cfg->load_threshold_ms = (uint32_t)v;
	return 0;
}

static int kw_max_routes(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	uint64_t v;
	if (conf_once_uint(s, &x->seen_max_routes, 1, ROUTESET_MAX_ROUTES, &v, err, err_len) < 0)
		return -1;
	x->cfg->max_routes = (unsigned)v;
	return 0;
}

static int kw_max_msg(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	uint64_t v;
	if (conf_once_uint(s, &x->seen_max_msg, 4096, 64u << 20, &v, err, err_len) < 0)
		return -1;
	x->cfg->max_message = (size_t)v;
	return 0;
}

static int kw_fib(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return conf_arg_path(s, 1, &x->seen_fib, UNIX_PATH_MAX, &x->cfg->fib_channel, err, err_len);
}

static int kw_control(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return conf_arg_path(s, 1, &x->seen_control, UNIX_PATH_MAX, &x->cfg->control_path, err, err_len);
}

static int kw_pid(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return conf_arg_path(s, 1, &x->seen_pid, PATH_MAX - 1, &x->cfg->pid_file, err, err_len);
}

static int kw_log(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return conf_once_log_level(s, &x->seen_log, &x->cfg->log_level, err, err_len);
}

/* ---- peer { } ---- */

static int kw_address(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct peer_ctx *pc = arg;
	return endpoint(s, &pc->seen_address, &pc->p->remote, NBRP_DEFAULT_PORT, err, err_len);
}

static int kw_local_pref(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct peer_ctx *pc = arg;
	uint64_t v;
	if (conf_once_uint(s, &pc->seen_pref, 0, UINT32_MAX, &v, err, err_len) < 0)
		return -1;
	pc->p->local_pref = (uint32_t)v;
	return 0;
}

/* enum nbrpd_role's names, in its order after ROLE_NONE */
static const char *const role_names[] = { "provider", "customer", "peer", "rs-server", "rs-client", NULL };

const char *nbrpd_role_name(enum nbrpd_role role)
{
	return role == ROLE_NONE ? "none" : role_names[role - 1];
}

static int kw_local_role(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct peer_ctx *pc = arg;
	unsigned r;
	if (conf_once(&pc->seen_role, s, err, err_len) < 0 || conf_arg_choice(s, 1, role_names, &r, err, err_len) < 0)
		return -1;
	pc->p->role = (enum nbrpd_role)(r + 1);
	return 0;
}

static int kw_max_names(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	static const char *const actions[] = { "warn", "refuse", "shut", NULL };
	struct peer_ctx *pc = arg;
	if (conf_once(&pc->seen_max, s, err, err_len) < 0 ||
	    conf_arg_uint(s, 1, 1, UINT64_MAX, &pc->p->max_names, err, err_len) < 0)
		return -1;
	unsigned a = MAX_NAMES_WARN;
	if (s->argc == 3 && conf_arg_choice(s, 2, actions, &a, err, err_len) < 0)
		return -1;
	pc->p->max_action = (enum max_names_action)a;
	return 0;
}

static int kw_passive(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct peer_ctx *pc = arg;
	if (conf_once(&pc->seen_passive, s, err, err_len) < 0)
		return -1;
	pc->p->passive = true;
	return s->argc == 2 ? conf_arg_bool(s, 1, &pc->p->passive, err, err_len) : 0;
}

/* "import allow SUFFIX", "import deny SUFFIX", "import default allow|deny" */
static int kw_policy(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	static const char *const verbs[] = { "allow", "deny", "default", NULL };
	static const char *const defaults[] = { "allow", "deny", NULL };
	struct peer_ctx *pc = arg;
	bool import = strcmp(s->argv[0], "import") == 0;
	struct nbrpd_policy *pol = import ? &pc->p->import : &pc->p->export;
	size_t *cap = import ? &pc->import_cap : &pc->export_cap;
	unsigned verb, def;
	if (conf_arg_choice(s, 1, verbs, &verb, err, err_len) < 0)
		return -1;
	if (verb == 2) {
		if (conf_arg_choice(s, 2, defaults, &def, err, err_len) < 0)
			return -1;
		pol->default_deny = def == 1;
		return 0;
	}
	struct nbrpd_policy_rule r = { .allow = verb == 0 };
	int rc = name_from_text(&r.suffix, s->argv[2], strlen(s->argv[2]));
	if (rc != NAME_OK)
		return conf_error(err, err_len, s, "bad name \"%s\": %s", s->argv[2], name_strerror(rc));
	for (unsigned i = 0; i < pol->nrules; i++)
		if (name_equal(&pol->rules[i].suffix, &r.suffix))
			return conf_error(err, err_len, s, "%s rule for \"%s\" given twice", s->argv[0], s->argv[2]);
	if (VEC_RESERVE(pol->rules, *cap, pol->nrules + 1) < 0)
		return conf_error(err, err_len, s, "out of memory");
	pol->rules[pol->nrules++] = r;
	return 0;
}

static int kw_server_mode(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct peer_ctx *pc = arg;
	if (conf_once(&pc->seen_server, s, err, err_len) < 0)
		return -1;
	pc->p->server_mode = true;
	return s->argc == 2 ? conf_arg_bool(s, 1, &pc->p->server_mode, err, err_len) : 0;
}

static int kw_signatures(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	static const char *const modes[] = { "off", "prefer", "require", NULL };
	struct peer_ctx *pc = arg;
	unsigned m;
	if (conf_once(&pc->seen_sig, s, err, err_len) < 0 || conf_arg_choice(s, 1, modes, &m, err, err_len) < 0)
		return -1;
	pc->p->signatures = (enum sig_policy)m;
	return 0;
}

static int kw_authentication(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	static const char *const modes[] = { "none", "tls", NULL };
	struct peer_ctx *pc = arg;
	unsigned m;
	if (conf_once(&pc->seen_auth, s, err, err_len) < 0 || conf_arg_choice(s, 1, modes, &m, err, err_len) < 0)
		return -1;
	pc->p->tls = m == 1;
	return 0;
}

static const struct conf_keyword peer_keywords[] = {
	{ "authentication", 2, 2, CONF_NO_BLOCK, kw_authentication },
	{ "signatures", 2, 2, CONF_NO_BLOCK, kw_signatures },
	{ "server-mode", 1, 2, CONF_NO_BLOCK, kw_server_mode },
	{ "import", 3, 3, CONF_NO_BLOCK, kw_policy },
	{ "export", 3, 3, CONF_NO_BLOCK, kw_policy },
	{ "address", 2, 4, CONF_NO_BLOCK, kw_address },
	{ "local-pref", 2, 2, CONF_NO_BLOCK, kw_local_pref },
	{ "local-role", 2, 2, CONF_NO_BLOCK, kw_local_role },
	{ "max-names", 2, 3, CONF_NO_BLOCK, kw_max_names },
	{ "passive", 1, 2, CONF_NO_BLOCK, kw_passive },
	{ NULL, 0, 0, CONF_NO_BLOCK, NULL },
};

static int kw_peer(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	struct nbrpd_config *cfg = x->cfg;
	if (!nbrp_router_name_valid(s->argv[1]))
		return conf_error(err, err_len, s, "bad peer name \"%s\"", s->argv[1]);
	for (unsigned i = 0; i < cfg->npeers; i++)
		if (strcmp(cfg->peers[i].name, s->argv[1]) == 0)
			return conf_error(err, err_len, s, "peer \"%s\" already defined at line %u",
					  s->argv[1], cfg->peers[i].line);
	if (VEC_RESERVE(cfg->peers, cfg->peers_cap, cfg->npeers + 1) < 0)
		return conf_error(err, err_len, s, "out of memory");
	struct nbrpd_peer_config *p = &cfg->peers[cfg->npeers];
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", s->argv[1]);
	p->local_pref = DEFAULT_LOCAL_PREF;
	p->line = s->line;
	struct peer_ctx pc = { .p = p };
	cfg->npeers++;                  /* owned from here on: freed with the config */
	if (conf_dispatch(s->block, peer_keywords, &pc, err, err_len) < 0)
		return -1;
	if (!pc.seen_address)
		return conf_error(err, err_len, s, "peer \"%s\" has no address", s->argv[1]);
	if (!pc.seen_auth)
		p->tls = p->signatures == SIG_REQUIRE;
	return 0;
}

/* ---- content { } ---- */

static int kw_server(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct nbrpd_content *c = arg;
	struct route r = { .kind = ROUTE_SERVER };
	int family;
	if (conf_arg_addr(s, 1, &family, r.addr, err, err_len) < 0)
		return -1;
	r.family = (uint8_t)family;
	if (s->argc == 3)
		return conf_error(err, err_len, s, "expected 'server ADDRESS [load MILLISECONDS]'");
	if (s->argc == 4) {
		uint64_t load;
		if (strcmp(s->argv[2], "load") != 0)
			return conf_error(err, err_len, s, "expected 'load', not '%s'", s->argv[2]);
		if (conf_arg_uint(s, 3, 0, UINT32_MAX, &load, err, err_len) < 0)
			return -1;
		r.load_ms = (uint32_t)load;
	}
	for (unsigned i = 0; i < c->nservers; i++)
		if (c->servers[i].family == r.family && memcmp(c->servers[i].addr, r.addr, 16) == 0)
			return conf_error(err, err_len, s, "duplicate server %s", s->argv[1]);
	if (c->nservers == ROUTESET_MAX_ROUTES)
		return conf_error(err, err_len, s, "too many servers (at most %d)", ROUTESET_MAX_ROUTES);
	c->servers[c->nservers++] = r;
	return 0;
}

/* "health-check port N [interval DUR] [timeout DUR]" */
static int kw_health(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct nbrpd_content *c = arg;
	uint64_t v;
	if (c->hc_port)
		return conf_error(err, err_len, s, "'health-check' given twice");
	if (strcmp(s->argv[1], "port") != 0 || s->argc < 3)
		return conf_error(err, err_len, s, "expected 'health-check port N [interval TIME] [timeout TIME]'");
	if (conf_arg_uint(s, 2, 1, 65535, &v, err, err_len) < 0)
		return -1;
	c->hc_port = (uint16_t)v;
	c->hc_interval_ms = 5000;
	c->hc_timeout_ms = 1000;
	for (unsigned i = 3; i < s->argc; i += 2) {
		bool interval = strcmp(s->argv[i], "interval") == 0;
		if ((!interval && strcmp(s->argv[i], "timeout") != 0) || i + 1 >= s->argc)
			return conf_error(err, err_len, s, "expected 'interval TIME' or 'timeout TIME', not '%s'",
					  s->argv[i]);
		if (conf_arg_duration_ms(s, i + 1, 10, 3600000, interval ? &c->hc_interval_ms : &c->hc_timeout_ms,
					 err, err_len) < 0)
			return -1;
	}
	if (c->hc_timeout_ms >= c->hc_interval_ms)
		return conf_error(err, err_len, s, "the health-check timeout must be shorter than its interval");
	return 0;
}

/* "member NAME..." (repeatable) */
static int kw_member(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct nbrpd_content *c = arg;
	for (unsigned i = 1; i < s->argc; i++) {
		struct name n;
		int rc = name_from_text(&n, s->argv[i], strlen(s->argv[i]));
		if (rc == NAME_OK && n.len == 1)
			return conf_error(err, err_len, s, "the root cannot be a member");
		if (rc != NAME_OK)
			return conf_error(err, err_len, s, "bad name \"%s\": %s", s->argv[i], name_strerror(rc));
		if (namelist_add(&c->members, n.wire, n.len) < 0)
			return conf_error(err, err_len, s, "out of memory");
	}
	return 0;
}

/* "file PATH": relative to the directory of the file that names it */
static int kw_members_file(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct nbrpd_content *c = arg;
	bool seen = c->members_file != NULL;
	char *path;
	if (conf_arg_path_near(s, 1, &seen, PATH_MAX - 1, &path, err, err_len) < 0)
		return -1;
	c->members_file = path;
	return 0;
}

static const struct conf_keyword content_keywords[] = {
	{ "server", 2, 4, CONF_NO_BLOCK, kw_server },
	{ "health-check", 3, 7, CONF_NO_BLOCK, kw_health },
	{ NULL, 0, 0, CONF_NO_BLOCK, NULL },
};

static const struct conf_keyword aggregate_keywords[] = {
	{ "server", 2, 4, CONF_NO_BLOCK, kw_server },
	{ "health-check", 3, 7, CONF_NO_BLOCK, kw_health },
	{ "member", 2, 1024, CONF_NO_BLOCK, kw_member },
	{ "file", 2, 2, CONF_NO_BLOCK, kw_members_file },
	{ NULL, 0, 0, CONF_NO_BLOCK, NULL },
};

static void content_free(struct nbrpd_content *c)
{
	free(c->members_file);
	namelist_free(&c->members);
}

static int content_block(const struct conf_stmt *s, struct cfg_ctx *x, bool aggregate, char *err, size_t err_len)
{
	struct nbrpd_config *cfg = x->cfg;
	const char *what = aggregate ? "aggregate" : "content";
	struct nbrpd_content c;
	memset(&c, 0, sizeof(c));
	namelist_init(&c.members);
	c.line = s->line;
	c.aggregate = aggregate;
	int rc = name_from_text(&c.name, s->argv[1], strlen(s->argv[1]));
	if (rc != NAME_OK)
		return conf_error(err, err_len, s, "bad name \"%s\": %s", s->argv[1], name_strerror(rc));
	if (aggregate && c.name.len == 1)
		return conf_error(err, err_len, s, "an aggregate cannot be named the root");
	if (conf_dispatch(s->block, aggregate ? aggregate_keywords : content_keywords, &c, err, err_len) < 0) {
		content_free(&c);
		return -1;
	}
	if (c.nservers == 0) {
		content_free(&c);
		return conf_error(err, err_len, s, "%s \"%s\" has no server", what, s->argv[1]);
	}
	c.up_mask = (uint32_t)((1ull << c.nservers) - 1);
	c.file = s->file;
	if (VEC_RESERVE(cfg->content, x->content_cap, cfg->ncontent + 1) < 0) {
		content_free(&c);
		return conf_error(err, err_len, s, "out of memory");
	}
	cfg->content[cfg->ncontent++] = c;
	return 0;
}

static int kw_content(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	return content_block(s, arg, false, err, err_len);
}

static int kw_aggregate(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	return content_block(s, arg, true, err, err_len);
}

static int kw_state_dir(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	if (conf_arg_path(s, 1, &x->seen_state_dir, PATH_MAX - 64, &x->cfg->state_dir, err, err_len) < 0)
		return -1;
	if (x->cfg->state_dir[0] != '/')
		return conf_error(err, err_len, s, "state-dir must be an absolute path");
	return 0;
}

static int kw_transfer(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	x->cfg->has_transfer = true;
	return endpoint(s, &x->seen_transfer, &x->cfg->transfer, 53, err, err_len);
}

static int kw_transfer_source(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	if (conf_once(&x->seen_xfr_source, s, err, err_len) < 0)
		return -1;
	struct ip_endpoint *e = &x->cfg->transfer_source;
	memset(e, 0, sizeof(*e));
	if (conf_arg_addr(s, 1, &e->family, e->addr, err, err_len) < 0)
		return -1;
	x->cfg->has_transfer_source = true;
	return 0;
}

static int kw_allow_transfer(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	struct nbrpd_config *cfg = x->cfg;
	int family;
	unsigned len;
	struct prefix p = { 0 };
	if (conf_arg_prefix(s, 1, &family, p.addr, &len, err, err_len) < 0)
		return -1;
	if (VEC_RESERVE(cfg->allow_transfer, x->allow_transfer_cap, cfg->nallow_transfer + 1) < 0)
		return conf_error(err, err_len, s, "out of memory");
	p.family = (uint8_t)family;
	p.len = (uint8_t)len;
	cfg->allow_transfer[cfg->nallow_transfer++] = p;
	return 0;
}

static int kw_transfer_idle(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return conf_once_duration_ms(s, &x->seen_xfr_idle, 100, 3600000, &x->cfg->transfer_idle_ms, err, err_len);
}

static int kw_transfer_time(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return conf_once_duration_ms(s, &x->seen_xfr_time, 1000, 86400000, &x->cfg->transfer_time_ms, err, err_len);
}

static int kw_fetch_names(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return conf_once_uint(s, &x->seen_fetch_names, 1, 1000000000, &x->cfg->fetch_max_names, err, err_len);
}

static int kw_fetch_bytes(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return conf_once_uint(s, &x->seen_fetch_bytes, 65536, 1ull << 40, &x->cfg->fetch_max_bytes, err, err_len);
}

static int kw_fetch_idle(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return conf_once_duration_ms(s, &x->seen_fetch_idle, 100, 3600000, &x->cfg->fetch_idle_ms, err, err_len);
}

static int kw_fetch_time(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return conf_once_duration_ms(s, &x->seen_fetch_time, 1000, 86400000, &x->cfg->fetch_time_ms, err, err_len);
}

/* ---- signatures ---- */

static int kw_key_file(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return conf_arg_path(s, 1, &x->seen_key, PATH_MAX - 1, &x->cfg->key_file, err, err_len);
}

static int kw_trust_anchor(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	if (conf_once(&x->seen_anchor, s, err, err_len) < 0)
		return -1;
	if (sigkey_public_parse(s->argv[1], strlen(s->argv[1]), x->cfg->trust_anchor) < 0)
		return conf_error(err, err_len, s, "trust-anchor: not a public key (44 base64 characters)");
	x->cfg->has_trust_anchor = true;
	return 0;
}

static int kw_trust_file(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return conf_arg_path(s, 1, &x->seen_trust, PATH_MAX - 1, &x->cfg->trust_file, err, err_len);
}

static int kw_trust_poll(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return conf_once_duration_ms(s, &x->seen_trust_poll, 100, 86400000, &x->cfg->trust_poll_ms, err, err_len);
}

static int kw_sig_workers(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	uint64_t v;
	if (conf_once_uint(s, &x->seen_workers, 1, SIGPOOL_MAX_WORKERS, &v, err, err_len) < 0)
		return -1;
	x->cfg->signature_workers = (unsigned)v;
	return 0;
}

static int kw_sig_cache(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	return conf_once_uint(s, &x->seen_sig_cache, 8, 1u << 28, &x->cfg->signature_cache, err, err_len);
}

static int kw_sig_min_lifetime(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	uint64_t ms;
	if (conf_once_duration_ms(s, &x->seen_min_life, 0, 21600000, &ms, err, err_len) < 0)
		return -1;
	x->cfg->signature_min_lifetime_s = ms / 1000;
	return 0;
}

/* A peer with signatures on needs our key, the anchor and the trust file. */
static int check_signatures(struct nbrpd_config *cfg, const char *path, char *err, size_t err_len)
{
	if (cfg->trust_file && !cfg->has_trust_anchor) {
		snprintf(err, err_len, "%s: 'trust-file' needs 'trust-anchor' (the key that signs it)", path);
		return -1;
	}
	for (unsigned i = 0; i < cfg->npeers; i++) {
		const struct nbrpd_peer_config *p = &cfg->peers[i];
		if (p->tls && (!cfg->key_file || !cfg->trust_file)) {
			snprintf(err, err_len, "%s:%u: peer \"%s\": authentication tls needs 'key-file', "
				 "'trust-anchor' and 'trust-file'", path, p->line, p->name);
			return -1;
		}
		if (p->signatures == SIG_OFF)
			continue;
		cfg->signatures = true;
		if (!cfg->key_file || !cfg->trust_file) {
			snprintf(err, err_len, "%s:%u: peer \"%s\": signatures need 'key-file', 'trust-anchor' "
				 "and 'trust-file'", path, p->line, p->name);
			return -1;
		}
	}
	return 0;
}

struct bird_ctx {
	struct nbrpd_config *cfg;
	bool seen_socket, seen_poll, seen_timeout, seen_delay, seen_settle;
};

static int kw_bird_socket(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct bird_ctx *b = arg;
	return conf_arg_path(s, 1, &b->seen_socket, UNIX_PATH_MAX, &b->cfg->bird_socket, err, err_len);
}

static int kw_bird_poll(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct bird_ctx *b = arg;
	return conf_once_duration_ms(s, &b->seen_poll, 50, 3600000, &b->cfg->bird_poll_ms, err, err_len);
}

static int kw_bird_timeout(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct bird_ctx *b = arg;
	return conf_once_duration_ms(s, &b->seen_timeout, 50, 600000, &b->cfg->bird_timeout_ms, err, err_len);
}

static int kw_bird_delay(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct bird_ctx *b = arg;
	return conf_once_duration_ms(s, &b->seen_delay, 0, 3600000, &b->cfg->bird_unreachable_delay_ms,
				     err, err_len);
}

static int kw_bird_settle(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct bird_ctx *b = arg;
	return conf_once_duration_ms(s, &b->seen_settle, 0, 3600000, &b->cfg->bird_settle_ms, err, err_len);
}

static const struct conf_keyword bird_keywords[] = {
	{ "socket", 2, 2, CONF_NO_BLOCK, kw_bird_socket },
	{ "poll-interval", 2, 2, CONF_NO_BLOCK, kw_bird_poll },
	{ "timeout", 2, 2, CONF_NO_BLOCK, kw_bird_timeout },
	{ "unreachable-delay", 2, 2, CONF_NO_BLOCK, kw_bird_delay },
	{ "settle-time", 2, 2, CONF_NO_BLOCK, kw_bird_settle },
	{ NULL, 0, 0, CONF_NO_BLOCK, NULL },
};

static int kw_bird(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct cfg_ctx *x = arg;
	if (conf_once(&x->seen_bird, s, err, err_len) < 0)
		return -1;
	struct bird_ctx b = { .cfg = x->cfg };
	if (conf_dispatch(s->block, bird_keywords, &b, err, err_len) < 0)
		return -1;
	if (!b.seen_socket)
		return conf_error(err, err_len, s, "bird { } needs 'socket \"PATH\";' (BIRD's control socket)");
	return 0;
}

static const struct conf_keyword top_keywords[] = {
	{ "bird", 1, 1, CONF_BLOCK, kw_bird },
	{ "router-name", 2, 2, CONF_NO_BLOCK, kw_router_name },
	{ "listen", 2, 4, CONF_NO_BLOCK, kw_listen },
	{ "inrp-address", 2, 4, CONF_NO_BLOCK, kw_inrp },
	{ "hold-time", 2, 2, CONF_NO_BLOCK, kw_hold },
	{ "connect-retry", 2, 2, CONF_NO_BLOCK, kw_retry },
	{ "fib-sync-wait", 2, 2, CONF_NO_BLOCK, kw_sync_wait },
	{ "fib-send-hold-time", 2, 2, CONF_NO_BLOCK, kw_send_hold },
	{ "restart-time", 2, 2, CONF_NO_BLOCK, kw_restart_time },
	{ "max-peer-restart-time", 2, 2, CONF_NO_BLOCK, kw_max_peer_restart_time },
	{ "load-interval", 2, 2, CONF_NO_BLOCK, kw_load_interval },
	{ "update-delay", 2, 2, CONF_NO_BLOCK, kw_update_delay },
	{ "withdrawal-delay", 2, 2, CONF_NO_BLOCK, kw_withdrawal_delay },
	{ "load-ms-per-hop", 2, 2, CONF_NO_BLOCK, kw_mph },
	{ "load-radius", 2, 2, CONF_NO_BLOCK, kw_radius },
	{ "load-threshold", 2, 2, CONF_NO_BLOCK, kw_threshold },
	{ "max-routes", 2, 2, CONF_NO_BLOCK, kw_max_routes },
	{ "max-message-size", 2, 2, CONF_NO_BLOCK, kw_max_msg },
	{ "fib-channel", 2, 2, CONF_NO_BLOCK, kw_fib },
	{ "control", 2, 2, CONF_NO_BLOCK, kw_control },
	{ "pid-file", 2, 2, CONF_NO_BLOCK, kw_pid },
	{ "log-level", 2, 2, CONF_NO_BLOCK, kw_log },
	{ "peer", 2, 2, CONF_BLOCK, kw_peer },
	{ "content", 2, 2, CONF_BLOCK, kw_content },
	{ "aggregate", 2, 2, CONF_BLOCK, kw_aggregate },
	{ "state-dir", 2, 2, CONF_NO_BLOCK, kw_state_dir },
	{ "transfer-listen", 2, 4, CONF_NO_BLOCK, kw_transfer },
	{ "transfer-source", 2, 2, CONF_NO_BLOCK, kw_transfer_source },
	{ "allow-transfer", 2, 2, CONF_NO_BLOCK, kw_allow_transfer },
	{ "transfer-idle-timeout", 2, 2, CONF_NO_BLOCK, kw_transfer_idle },
	{ "transfer-time-limit", 2, 2, CONF_NO_BLOCK, kw_transfer_time },
	{ "fetch-max-names", 2, 2, CONF_NO_BLOCK, kw_fetch_names },
	{ "fetch-max-bytes", 2, 2, CONF_NO_BLOCK, kw_fetch_bytes },
	{ "fetch-idle-timeout", 2, 2, CONF_NO_BLOCK, kw_fetch_idle },
	{ "fetch-time-limit", 2, 2, CONF_NO_BLOCK, kw_fetch_time },
	{ "key-file", 2, 2, CONF_NO_BLOCK, kw_key_file },
	{ "trust-anchor", 2, 2, CONF_NO_BLOCK, kw_trust_anchor },
	{ "trust-file", 2, 2, CONF_NO_BLOCK, kw_trust_file },
	{ "trust-poll", 2, 2, CONF_NO_BLOCK, kw_trust_poll },
	{ "signature-min-lifetime", 2, 2, CONF_NO_BLOCK, kw_sig_min_lifetime },
	{ "signature-workers", 2, 2, CONF_NO_BLOCK, kw_sig_workers },
	{ "signature-cache", 2, 2, CONF_NO_BLOCK, kw_sig_cache },
	{ NULL, 0, 0, CONF_NO_BLOCK, NULL },
};

static int content_cmp(const void *a, const void *b)
{
	const struct nbrpd_content *x = a, *y = b;
	if (x->aggregate != y->aggregate)
		return x->aggregate ? 1 : -1;
	int c = name_compare(&x->name, &y->name);
	if (c)
		return c;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Duplicates found by sorting: a linear scan per block is quadratic for big configs. */
static int check_duplicate_content(struct nbrpd_config *cfg, char *err, size_t err_len)
{
	if (cfg->ncontent < 2)
		return 0;
	for (unsigned i = 0; i < cfg->ncontent; i++)
		cfg->content[i].order = i;
	qsort(cfg->content, cfg->ncontent, sizeof(cfg->content[0]), content_cmp);
	for (unsigned i = 1; i < cfg->ncontent; i++) {
		const struct nbrpd_content *a = &cfg->content[i - 1], *b = &cfg->content[i];
		if (a->aggregate == b->aggregate && name_equal(&a->name, &b->name)) {
			char name[NAME_MAX_TEXT];
			name_to_text(&b->name, name, sizeof(name));
			snprintf(err, err_len, "%s:%u: %s \"%s\" already defined at %s:%u", b->file, b->line,
				 b->aggregate ? "aggregate" : "content", name, a->file, a->line);
			return -1;
		}
	}
	return 0;
}

struct nbrpd_config *nbrpd_config_load(const char *path, char *err, size_t err_len)
{
	struct nbrpd_config *cfg = calloc(1, sizeof(*cfg));
	if (!cfg) {
		snprintf(err, err_len, "out of memory");
		return NULL;
	}
	cfg->hold_time_s = DEFAULT_HOLD_TIME_S;
	cfg->connect_retry_ms = DEFAULT_CONNECT_RETRY;
	cfg->fib_sync_wait_ms = DEFAULT_FIB_SYNC_WAIT;
	cfg->fib_send_hold_ms = DEFAULT_FIB_SEND_HOLD;
	cfg->restart_time_s = DEFAULT_RESTART_TIME_S;
	cfg->max_peer_restart_s = DEFAULT_MAX_PEER_RESTART_S;
	cfg->load_ms_per_hop = DEFAULT_LOAD_PER_HOP;
	cfg->load_radius = DEFAULT_LOAD_RADIUS;
	cfg->load_threshold_ms = DEFAULT_LOAD_THRESHOLD;
	cfg->load_interval_ms = DEFAULT_LOAD_INTERVAL;
	cfg->bird_poll_ms = 1000;
	cfg->bird_timeout_ms = 5000;
	cfg->bird_unreachable_delay_ms = 5000;
	cfg->bird_settle_ms = 30000;
	cfg->max_routes = DEFAULT_MAX_ROUTES;
	cfg->max_message = NBRP_MAX_MESSAGE;
	cfg->log_level = -1;
	cfg->trust_poll_ms = DEFAULT_TRUST_POLL;
	cfg->signature_workers = SIGPOOL_DEFAULT_WORKERS;
	cfg->signature_cache = DEFAULT_SIG_CACHE;
	cfg->transfer_idle_ms = DEFAULT_TRANSFER_IDLE;
	cfg->transfer_time_ms = DEFAULT_TRANSFER_TIME;
	cfg->fetch_max_names = DEFAULT_FETCH_MAX_NAMES;
	cfg->fetch_idle_ms = DEFAULT_FETCH_IDLE;
	cfg->fetch_time_ms = DEFAULT_FETCH_TIME;
	cfg->signature_min_lifetime_s = DEFAULT_SIG_MIN_LIFE / 1000;

	struct conf *c = conf_parse_file(path, err, err_len);
	if (!c) {
		nbrpd_config_free(cfg);
		return NULL;
	}
	struct cfg_ctx x = { .cfg = cfg };
	struct service_conf svc = { .metrics = &cfg->metrics, .run_as = &cfg->run_as };
	int rc = conf_dispatch_also(c->first, top_keywords, &x, service_keywords, &svc, err, err_len);
	if (rc == 0 && !x.seen_name) {
		snprintf(err, err_len, "%s: no 'router-name' statement", path);
		rc = -1;
	}
	if (rc == 0 && !x.seen_inrp) {
		snprintf(err, err_len, "%s: no 'inrp-address' statement (our inrpd, where peers forward queries)",
			 path);
		rc = -1;
	}
	metrics_conf_finish(&cfg->metrics);
	if (!x.seen_fetch_bytes)
		cfg->fetch_max_bytes = cfg->fetch_max_names * FETCH_BYTES_PER_NAME;
	if (rc == 0)
		rc = privdrop_conf_check(&cfg->run_as, path, err, err_len);
	if (rc == 0)
		rc = check_duplicate_content(cfg, err, err_len);
	if (rc == 0)
		rc = check_signatures(cfg, path, err, err_len);
	for (unsigned i = 0; rc == 0 && !cfg->state_dir && i < cfg->ncontent; i++)
		if (cfg->content[i].aggregate) {
			snprintf(err, err_len, "%s:%u: an aggregate needs 'state-dir' (where its versions are kept)",
				 cfg->content[i].file, cfg->content[i].line);
			rc = -1;
		}
	for (unsigned i = 0; rc == 0 && i < cfg->npeers; i++)
		if (strcmp(cfg->peers[i].name, cfg->router_name) == 0) {
			snprintf(err, err_len, "%s:%u: peer \"%s\" has this router's own name", path,
				 cfg->peers[i].line, cfg->peers[i].name);
			rc = -1;
		}
	conf_free(c);
	if (rc < 0) {
		nbrpd_config_free(cfg);
		return NULL;
	}
	return cfg;
}

void nbrpd_config_free(struct nbrpd_config *cfg)
{
	if (!cfg)
		return;
	for (unsigned i = 0; i < cfg->npeers; i++) {
		free(cfg->peers[i].import.rules);
		free(cfg->peers[i].export.rules);
	}
	free(cfg->peers);
	for (unsigned i = 0; i < cfg->ncontent; i++)
		content_free(&cfg->content[i]);
	free(cfg->content);
	free(cfg->state_dir);
	free(cfg->allow_transfer);
	free(cfg->key_file);
	free(cfg->trust_file);
	free(cfg->fib_channel);
	free(cfg->bird_socket);
	free(cfg->control_path);
	free(cfg->pid_file);
	privdrop_conf_free(&cfg->run_as);
	free(cfg);
}
