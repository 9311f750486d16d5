/*
 * The simulated network: one nbrpd RDE a router, sessions along the
 * graph's links carrying frames lib/nbrp encoded (and decodes at the
 * receiver), each delivered after its link's delay, in order; a router
 * works on what it received one turn at a time, each turn charged by the
 * cost model before what it sent leaves.  docs/SIMULATION.md.
 *
 * Gao-Rexford is nbrpd's own configuration: each session's `local-pref`
 * and `local-role` (RFC 9234) by relationship.  What nbrpd cannot be
 * told is done here, in the session layer, and nowhere else: the
 * references, origin withdrawals taken out of every UPDATE (plain
 * path-vector exploration, once a frame) and a BGP-like MRAI per session.
 */
#ifndef SIM_NET_H
#define SIM_NET_H

#include <stdbool.h>
#include <stdint.h>

#include "evq.h"
#include "topo.h"

struct net;
struct nbrpd_config;

/* What a router's turn costs (docs/SIMULATION.md, "Cost model"). */
struct net_cost {
	uint64_t update_ns;             /* each UPDATE read (and a turn with none) */
	uint64_t name_ns;               /* each name read */
	uint64_t peer_name_ns;          /* each name queued for a peer */
	uint64_t fetch_ns;              /* an aggregate's fetch, beside its round trip */
};

struct net_opts {
	bool gao_rexford;               /* p2c/p2p links: local-pref and local-role by relationship */
	bool origin_withdrawals;        /* passed on (false: taken out of every UPDATE) */
	uint64_t mrai_ns;               /* 0: none; else each session's, jittered 0.75-1x */
	uint64_t seed;
	struct net_cost cost;
};

/* What happened since net_window_start. */
struct net_window {
	uint64_t start_ns;
	uint64_t updates, bytes;        /* UPDATE messages delivered, their frames' bytes */
	uint64_t names_in, withdrawn_in;        /* names announced, withdrawn, in them */
	uint64_t owd_in;                /* origin withdrawals in them */
	uint64_t best_changes;          /* a router's best route for a name changed (path exploration) */
	uint64_t routers_changed;       /* routers whose best route for some name changed */
	uint64_t agg_stored;            /* aggregate versions stored */
	uint64_t last_change_ns;        /* the last best-route change (or version stored) */
	uint64_t last_busy_ns;          /* the end of the last turn */
	uint64_t turns;
	uint32_t peak_queue;            /* frames waiting at one router */
	uint32_t max_sent;              /* UPDATEs one router sent, the most */
	uint64_t dropped;               /* frames lost with a failed session */
	uint64_t held;                  /* announcements the MRAI replaced before they left */
};

struct net *net_new(const struct topo *t, const struct nbrpd_config *tmpl, const struct net_opts *o,
		    char *err, size_t err_len);
void net_free(struct net *n);

uint64_t net_now(const struct net *n);
/* Runs every event due up to until_ns (UINT64_MAX: until none is left). */
void net_run(struct net *n, uint64_t until_ns);
void net_window_start(struct net *n);
const struct net_window *net_window(const struct net *n);

/* Local events, now. */
int net_announce(struct net *n, uint32_t router, const char *name);
int net_withdraw(struct net *n, uint32_t router, const char *name);
/* An aggregate defined at router (version 1) or its next version: the version, or -1. */
int net_aggregate(struct net *n, uint32_t router, const char *agg);
int net_session(struct net *n, uint32_t a, uint32_t b, bool up);

/* Router r's best route for a name: the neighbour it came from (r itself for its own), path length
 * (0 for its own); false when it has none. */
bool net_best(const struct net *n, uint32_t r, const char *name, uint32_t *from, unsigned *npath);
/* When router r's best route for some name last changed in this window; false: it did not. */
bool net_router_changed(const struct net *n, uint32_t r, uint64_t *at_ns);
/* Routers whose stored version of the aggregate is below v. */
uint32_t net_agg_behind(const struct net *n, const char *agg, uint32_t v);
/* Bytes of the process's resident set (/proc/self/statm). */
uint64_t net_rss_bytes(void);

#endif
