/*
 * nbrpd: the NBRP routing daemon of a content router (DESIGN.md, NBRP;
 * docs/NBRP.md).  One thread, one libuv loop, split the OpenBGPD way:
 *
 *   session.c   TCP sessions with peers: connect and accept, OPEN,
 *               KEEPALIVE, hold timers, collisions, NOTIFICATION
 *   rib.c       Adj-RIB-In (routes per name per peer), the decision,
 *               Loc-RIB (the best few per name), Adj-RIB-Out (what each
 *               peer was told), and the changes for the FIB
 *   fibpush.c   the FIB channel to inrpd: full sync, then changes
 *   config.c    the configuration file
 *   main.c      daemon, signals, control socket (nbrc)
 */
#ifndef NBRPD_H
#define NBRPD_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <uv.h>

#include "name.h"
#include "nbrp.h"
#include "route.h"

#define NBRPD_MAX_PEERS         64      /* one bit each in a name's Adj-RIB-Out mask */
#define NBRPD_MAX_BEST          ROUTESET_MAX_ROUTES

enum max_names_action { MAX_NAMES_WARN, MAX_NAMES_REFUSE, MAX_NAMES_SHUT };

struct nbrpd_endpoint {
	int family;
	uint8_t addr[16];
	uint16_t port;
};

/* allow/deny by name suffix: the longest matching rule decides */
struct nbrpd_policy_rule {
	struct name suffix;
	bool allow;
};

struct nbrpd_policy {
	unsigned nrules;
	struct nbrpd_policy_rule *rules;
	bool default_deny;
};

bool nbrpd_policy_allows(const struct nbrpd_policy *pol, const struct name *n);

struct nbrpd_peer_config {
	char name[NBRP_ROUTER_NAME_MAX + 1];
	struct nbrpd_endpoint remote;
	uint32_t local_pref;
	uint64_t max_names;             /* 0: no limit */
	enum max_names_action max_action;
	bool passive;                   /* wait for the peer to connect */
	bool server_mode;               /* a content server announcing its own names */
	struct nbrpd_policy import, export;
	unsigned line;
};

struct nbrpd_content {
	struct name name;
	unsigned nservers;
	struct route servers[ROUTESET_MAX_ROUTES];
	struct nexthop *server_nh[ROUTESET_MAX_ROUTES];  /* IP routing's view, once started */
	uint32_t up_mask;               /* servers passing their health check (all without one) */
	uint16_t hc_port;               /* 0: no health check */
	uint64_t hc_interval_ms, hc_timeout_ms;
	const char *file;               /* valid while loading: for error messages */
	unsigned line;
	unsigned order;                 /* position in the file, while loading */
};

struct nbrpd_config {
	char router_name[NBRP_ROUTER_NAME_MAX + 1];
	struct nbrpd_endpoint listen;
	bool has_listen;
	struct nbrpd_endpoint inrp;     /* our inrpd, the next hop we advertise */
	uint32_t hold_time_s;
	uint64_t connect_retry_ms;      /* first retry; doubles up to 32x */
	uint64_t fib_sync_wait_ms;      /* at most this long for END-OF-RIBs before the first FIB sync */
	uint32_t restart_time_s;        /* peers keep our routes this long if we vanish (0: not) */
	uint32_t load_ms_per_hop;
	uint32_t load_radius;           /* hops a load figure travels */
	uint32_t load_threshold_ms;     /* smaller load changes are not re-advertised */
	uint64_t load_interval_ms;      /* a name's load is re-advertised at most this often */
	unsigned max_routes;            /* ranked routes per name pushed to inrpd */
	size_t max_message;
	char *fib_channel;              /* inrpd's socket; NULL: none */
	char *bird_socket;              /* BIRD's control socket; NULL: no BIRD */
	uint64_t bird_poll_ms;          /* how often every address is asked about again */
	uint64_t bird_timeout_ms;       /* a BIRD that does not answer this long is hung */
	uint64_t bird_unreachable_delay_ms;     /* a peer BIRD cannot reach this long is dropped */
	uint64_t bird_settle_ms;        /* a BIRD younger than this is not believed "cannot reach" */
	char *control_path;
	char *pid_file;
	int log_level;
	unsigned npeers;
	struct nbrpd_peer_config peers[NBRPD_MAX_PEERS];
	unsigned ncontent;
	struct nbrpd_content *content;
};

struct nbrpd_config *nbrpd_config_load(const char *path, char *err, size_t err_len);
void nbrpd_config_free(struct nbrpd_config *cfg);
const char *nbrpd_endpoint_format(const struct nbrpd_endpoint *e, char *buf, size_t len);

/* ---- what IP routing says about addresses (nexthop.c) ---- */

struct nexthop {
	struct nexthop *hnext;
	uint32_t refs;
	uint8_t family;
	uint8_t addr[16];
	bool known;                     /* IP routing (BIRD) answered about it */
	bool reachable;                 /* true until IP routing says otherwise */
	uint32_t igp_metric;
	uint32_t as_path_len;
	char protocol[64];              /* the BIRD protocol of the best route */
	uint64_t unreachable_since;     /* uv_now, ms; 0: reachable */
	bool query_pending;             /* asked BIRD, no answer yet */
};

struct nbrpd;
/* Takes a reference on the entry for an address (created if new). */
struct nexthop *nexthop_get(struct nbrpd *d, int family, const uint8_t *addr);
/* The entry for an address if there is one (no reference taken). */
struct nexthop *nexthop_lookup(struct nbrpd *d, int family, const uint8_t *addr);
void nexthop_put(struct nbrpd *d, struct nexthop *nh);
void nexthop_walk(struct nbrpd *d, void (*fn)(struct nbrpd *d, struct nexthop *nh, void *arg), void *arg);
/* What IP routing now says; routes through it are decided again if that changed. */
void nexthop_update(struct nbrpd *d, struct nexthop *nh, bool reachable, uint32_t igp_metric,
		    uint32_t as_path_len, const char *protocol);
const char *nexthop_format(const struct nexthop *nh, char *buf, size_t len);
void nexthop_free_all(struct nbrpd *d);
/* birdmon.c: BIRD's view of the next-hop table. */
struct birdmon;
struct birdmon *birdmon_start(struct nbrpd *d);        /* NULL: not configured */
void birdmon_stop(struct birdmon *m);
const char *birdmon_state(const struct birdmon *m);    /* "up", "down", "not configured" */
/* A new address: asked about at once. */
void nexthop_added(struct nbrpd *d, struct nexthop *nh);

/* ---- sessions (session.c) ---- */

enum session_state {
	SESSION_IDLE,
	SESSION_CONNECT,                /* TCP connect in progress */
	SESSION_OPENSENT,               /* connected, our OPEN sent */
	SESSION_OPENCONFIRM,            /* their OPEN received, KEEPALIVE awaited */
	SESSION_ESTABLISHED,
};
const char *session_state_name(enum session_state s);

struct conn;

struct peer {
	struct nbrpd_peer_config cfg;
	unsigned idx;                   /* bit in the Adj-RIB-Out masks */
	bool configured;                /* a slot freed by a reload is not */
	bool timers_ready;
	struct conn *conn[2];           /* [0] we connected, [1] they connected */
	struct conn *established;       /* one of the two, once Established */
	uv_timer_t retry_timer;
	uint64_t retry_ms;
	bool enabled;
	bool eor_received;
	uint64_t established_at;        /* uv_now, ms */
	uint32_t hold_time_s;           /* negotiated */
	uint64_t names;                 /* names with a route from this peer */
	uint32_t restart_time_s;        /* the peer's, from its OPEN */
	struct nexthop *transport;      /* its address, as IP routing sees it */
	uv_timer_t restart_timer;       /* its routes are stale until END-OF-RIB or this */
	bool restarting;
	bool max_warned;
	uint64_t updates_in, updates_out, withdrawn_in, bad_routes, notifications_in, notifications_out;
	uint64_t flaps;
	char last_error[256];
	/* Adj-RIB-Out changes waiting to be sent */
	struct nbrp_batch *out;
};

struct nbrpd;
int sessions_start(struct nbrpd *d, char *err, size_t err_len);
void sessions_stop(struct nbrpd *d);
/* Reload: a new peer starts, a removed one is told CEASE/deconfigured,
 * one whose address changed starts over. */
void peer_add(struct nbrpd *d, struct peer *p);
void peer_remove(struct nbrpd *d, struct peer *p);
void peer_reset(struct nbrpd *d, struct peer *p, const char *why);
/* Connects now if the peer is enabled, active, not connected and reachable. */
void peer_kick(struct nbrpd *d, struct peer *p);
void peer_route_refresh(struct nbrpd *d, struct peer *p);
void peer_enable(struct nbrpd *d, struct peer *p, bool enable);
enum session_state peer_state(const struct peer *p);
/* Ends the peer's established session with a NOTIFICATION. */
void peer_notify(struct nbrpd *d, struct peer *p, uint8_t code, uint8_t subcode, const char *text);
/* Queues a message on the peer's established session. */
void peer_send(struct nbrpd *d, struct peer *p, const Nbrp__Message *m);

/* ---- the RIB (rib.c) ---- */

struct rib_route;
struct rib_entry;
struct rib;

struct rib *rib_create(void);
void rib_free(struct rib *r);
/* Local content from the configuration (replaces what was there). */
void rib_set_local(struct nbrpd *d, struct nbrpd_config *cfg);
/* An UPDATE from an established peer. */
void rib_peer_update(struct nbrpd *d, struct peer *p, const Nbrp__Update *u);
/* A peer's session came up: send it the table, then END-OF-RIB. */
void rib_peer_up(struct nbrpd *d, struct peer *p);
/* A peer's session went down: withdraw everything learned from it. */
void rib_peer_down(struct nbrpd *d, struct peer *p);
/* Graceful restart (RFC 4724 idea): keep a vanished peer's routes, marked
 * stale, until it sends them again; then drop the stale ones. */
void rib_peer_stale(struct nbrpd *d, struct peer *p);
void rib_peer_sweep(struct nbrpd *d, struct peer *p);
/* Sends what changed to peers and inrpd (called once per loop iteration). */
void rib_flush(struct nbrpd *d);
/* Closes the RIB's timer (shutdown). */
void rib_stop(struct nbrpd *d);
uint64_t rib_count(const struct rib *r);

/* Walks names with at least one route; fn gets the ranked best routes. */
struct rib_view {
	const uint8_t *name;            /* canonical wire */
	uint8_t name_len;
	unsigned nroutes;
	unsigned nbest;
};
typedef void (*rib_walk_fn)(const struct rib_entry *e, void *arg);
void rib_walk(const struct rib *r, rib_walk_fn fn, void *arg);
const struct rib_entry *rib_find(const struct rib *r, const struct name *n);
/* Formats one name's routes for `show route`: text, or one JSON object over
 * several lines (a route per line), followed by `after` (e.g. ","). */
void rib_describe(const struct nbrpd *d, const struct rib_entry *e, bool json, const char *after,
		  void (*line)(void *arg, const char *text), void *arg);
/* The FIB routes of an entry (ranked); returns how many. */
unsigned rib_fib_routes(const struct nbrpd *d, const struct rib_entry *e, struct route *out);
void rib_entry_name(const struct rib_entry *e, struct name *out);

/* Reload: what the peer is told follows its new export policy. */
void rib_peer_reexport(struct nbrpd *d, struct peer *p);
/* Reload: the decision knobs changed. */
void rib_redecide_all(struct nbrpd *d);
/* Reload: local routes move to the new configuration's content. */
void rib_reload_content(struct nbrpd *d, struct nbrpd_config *old_cfg, struct nbrpd_config *new_cfg);
/* IP routing changed its mind about an address: decide again where it matters. */
void rib_nexthop_changed(struct nbrpd *d, struct nexthop *nh);
/* A content's up_mask changed: re-originate it (withdrawn when no server is up). */
void rib_content_changed(struct nbrpd *d, struct nbrpd_content *c);

/* ---- health checks of attached servers (health.c) ---- */

struct health;
struct health *health_start(struct nbrpd *d);
void health_stop(struct health *h);

/* ---- the FIB channel to inrpd (fibpush.c) ---- */

struct fibpush;
struct fibpush *fibpush_open(struct nbrpd *d, const char *path);
void fibpush_close(struct fibpush *f);
void fibpush_free(struct fibpush *f);
/* Queues a name's routes (count 0: withdrawn); sent at the next flush. */
void fibpush_name(struct fibpush *f, const struct name *n, const struct route *routes, unsigned count);
void fibpush_flush(struct fibpush *f);
/* The RIB is complete enough to replace what inrpd has (sent once). */
void fibpush_ready(struct fibpush *f);
bool fibpush_connected(const struct fibpush *f);
uint64_t fibpush_syncs(const struct fibpush *f);

/* ---- the daemon ---- */

struct nbrpd {
	uv_loop_t *loop;
	struct nbrpd_config *cfg;
	const char *conf_path;
	unsigned npeers;
	struct peer *peers;
	uv_tcp_t listener;
	bool listening;
	struct rib *rib;
	struct fibpush *fib;
	struct health *health;          /* frees itself once stopped */
	struct nexthop **nexthops;      /* hash buckets */
	unsigned nnexthops;
	struct birdmon *bird;           /* NULL: no BIRD configured */
	uv_check_t flush_check;         /* rib_flush after each loop iteration */
	uv_timer_t sync_wait;
	bool rib_ready;
	bool stopping;
	uint64_t started;
};

struct peer *nbrpd_peer_by_name(struct nbrpd *d, const char *name);
/* Checks whether every peer has sent its table; then the FIB may be synced. */
void nbrpd_check_ready(struct nbrpd *d);

#endif
