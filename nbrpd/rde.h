/*
 * The route decision engine (OpenBGPD's RDE, BIRD's rt-table): every route
 * nbrpd knows, the decision, and what peers and inrpd are told.
 *
 * Calls go one way.  The session layer hands the RDE what its peers say
 * (rde_peer_*), through the signature stage when signatures are on
 * (rdesig.h: each UPDATE once, with its checks); the RDE reaches the
 * sessions and the FIB channel only through the callbacks given to
 * rde_new, the signature stage only through the hooks its owner installs
 * (rde_set_signer), and hears of IP routing's changes through the next-hop
 * table's change callback.  Whole-table work (a new peer's table, a peer
 * going down, a sweep, a re-export, deciding everything again) is a job
 * that resumes across loop turns with a budget, and a peer's table is
 * produced only as fast as its session drains.
 *
 * Modules, each calling only those after it (tests/check_rde_calls.py):
 * rde.c (peers, UPDATEs in, jobs, flush), adjout.c (what peers are told),
 * packer.c (UPDATE packing), attr.c (interned attributes and the next-hop
 * index), agg_table.c (aggregates' stored versions), decide.c (the
 * decision), peer_names.c (peers by name), sigchain.c (the signatures a
 * route came with, kept to pass on), rib.c (the table); rde_internal.h is
 * what they share, over rib.h, the table alone.  All their state is in
 * struct rde: RDEs do not share any.  control.c renders `show route` from
 * the views below.
 */
#ifndef NBRPD_RDE_H
#define NBRPD_RDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"
#include "name.h"
#include "nbrp.h"
#include "route.h"

struct rde;
struct rde_peer;
struct rib_entry;
struct nexthop;
struct nexthop_table;
struct wq_buf;
struct attest_job;
struct nameset;

/* How the RDE reaches the rest of nbrpd; `owner` is what rde_peer_add was given. */
struct rde_ops {
	/* Queue one encoded message on the peer's established session (a reference is taken). */
	void (*send)(void *arg, void *owner, struct wq_buf *frame);
	/* The peer's session is above its high-water mark: produce nothing more for it now. */
	bool (*full)(void *arg, void *owner);
	/* End the peer's session with a NOTIFICATION. */
	void (*notify)(void *arg, void *owner, uint8_t code, uint8_t subcode, const char *text);
	/* A name's ranked routes for inrpd (count 0: withdrawn), then a flush; NULL: no FIB channel. */
	void (*fib_name)(void *arg, const struct name *n, const struct route *routes, unsigned count);
	/* The same for an aggregate: every member follows these routes. */
	void (*fib_aggregate)(void *arg, const struct name *agg, const struct route *routes, unsigned count);
	void (*fib_flush)(void *arg);
	/* A learned aggregate's routes offer this version, from this source (the newest
	 * version valid routes offer, else the newest any usable route offers; from the
	 * best of those routes): fetch exactly it if it is newer than the one stored
	 * (rde_aggregate_stored).  digest: what valid routes signed for it (NULL: none);
	 * whole: the version stored is not what they sign: out of service, fetch AXFR. */
	void (*aggregate_offered)(void *arg, const struct name *agg, uint32_t version,
				  const struct ip_endpoint *source, const uint8_t *digest, bool whole);
	/* The members of the aggregate's version stored (NULL: none), for checks of its signed routes. */
	const struct nameset *(*aggregate_members)(void *arg, const struct name *agg);
	/* inrpd is behind (fibpush_behind): rde_busy says so until rde_input_resume. */
	bool (*fib_behind)(void *arg);
	/* After a turn in which rde_busy said so: the sessions may read again. */
	void (*input_ready)(void *arg);
	/* Another trust file is in force, or the one in force expired: sessions' keys are checked again. */
	void (*trust_changed)(void *arg);
	void *arg;
};

struct rde *rde_new(uv_loop_t *loop, const struct nbrpd_config *cfg, struct nexthop_table *nexthops,
		    const struct rde_ops *ops);
/* Stops its handles (the loop then closes them); rde_free after the loop ends. */
void rde_stop(struct rde *r);
void rde_free(struct rde *r);
/* The configuration in force (reload): decision knobs, our name and inrpd. */
void rde_set_config(struct rde *r, const struct nbrpd_config *cfg);
/* Signatures: the stage's hooks (rdesig_signer), installed once; peers are SIG_OFF until set. */
struct rde_signer;
void rde_set_signer(struct rde *r, const struct rde_signer *signer);
void rde_peer_set_signatures(struct rde_peer *p, enum sig_policy sig);

/* One loop turn's work (table growth, jobs, the flush), which a check
 * handle runs every turn; true while more could run at once.  sim/ calls
 * it directly, its loop never run. */
bool rde_turn(struct rde *r);
/* When rde_turn next has work that waits for time: the loop's clock (uv_now) at which names
 * held by update-delay are due to leave; UINT64_MAX: none.  nbrpd's loop wakes itself then (a
 * timer); sim/, whose loop is never run, calls rde_turn at that time. */
uint64_t rde_wakeup(const struct rde *r);

/* ---- peers ---- */

struct rde_peer *rde_peer_add(struct rde *r, const struct nbrpd_peer_config *pc, void *owner);
/* Reload: preference, limits and import apply to routes from now on (ask the
 * peer for its table again to apply them to the rest); a new export policy
 * is applied to the whole table by a re-export job. */
void rde_peer_configure(struct rde_peer *p, const struct nbrpd_peer_config *pc);
/* Gone from the configuration: its routes are purged, then it is freed. */
void rde_peer_remove(struct rde_peer *p);
/* Established: its table is dumped to it (then END-OF-RIB). */
void rde_peer_up(struct rde_peer *p);
/* The session ended: keep_stale keeps its routes, stale, until rde_peer_sweep
 * (graceful restart); otherwise they are purged. */
void rde_peer_down(struct rde_peer *p, bool keep_stale);
/* Drops the routes of its earlier sessions (END-OF-RIB after a restart, or the restart time ran out). */
void rde_peer_sweep(struct rde_peer *p);
/* What the signature stage found for an UPDATE (rdesig.h), handed with it. */
struct rde_checks {
	const struct attest_job *routes;        /* each Route's check, final; NULL: not checked */
	const bool *refused;                    /* each Route refused for its check (require): withdrawn */
	const bool *withdrawal_ok;              /* each signed origin withdrawal's signature checked good */
};
/* An UPDATE, once: checks NULL without a signature stage. */
void rde_peer_update(struct rde_peer *p, const Nbrp__Update *u, const struct rde_checks *checks);
/* ROUTE-REFRESH: its table again, then END-OF-RIB. */
void rde_peer_refresh(struct rde_peer *p);
/* Its session went below its low-water mark. */
void rde_peer_drained(struct rde_peer *p);
/* This turn has changed enough names, or inrpd is behind: the sessions should stop reading
 * until input_ready, so that no loop turn decides and sends more than a bounded batch. */
bool rde_busy(struct rde *r);
/* The sessions may read again after this turn (paused by rde_busy or a peer's checks). */
void rde_input_resume(struct rde *r);

struct rde_peer_stats {
	uint64_t names;                 /* names with a route from it */
	uint64_t updates_out;
	uint64_t withdrawn_in;
	uint64_t bad_routes;            /* treated as withdrawn */
	uint64_t names_in, names_out, withdrawn_out;    /* names in UPDATEs */
	uint64_t owd_refused;           /* routes of peers with signatures on its origin withdrawals left */
	bool dumping;                   /* its table is still being sent */
};
void rde_peer_stats(const struct rde_peer *p, struct rde_peer_stats *out);

/* ---- local content ---- */

/* A content's servers or their health changed: re-originate it (withdrawn when none is up). */
void rde_content_changed(struct rde *r, struct nbrpd_content *c);
/* Reload: local routes move from the old configuration's content to the new one's. */
void rde_reload_content(struct rde *r, struct nbrpd_config *old_cfg, struct nbrpd_config *new_cfg);
/* Reload: the decision knobs changed, every name is decided again (a job). */
void rde_redecide_all(struct rde *r);

/* ---- aggregates (docs/NBRP.md, "Aggregates") ---- */

/* A version of the aggregate is stored here, its members in inrpd's FIB: peers are told it.
 * With signatures on, its member digest is taken here (once a version) for our origin
 * attestation and to check the routes that name this version. */
void rde_aggregate_stored(struct rde *r, const struct name *agg, uint32_t version, const struct nameset *members);
/* An aggregate's FIB routes (ranked); returns how many (0: none). */
unsigned rde_aggregate_fib_routes(const struct rde *r, const struct name *agg, struct route *out);

/* ---- reading it: `show`, the FIB channel's full sync ---- */

uint64_t rde_names(const struct rde *r);        /* names with at least one route */
const struct rib_entry *rde_find(const struct rde *r, const struct name *n);
typedef void (*rde_walk_fn)(const struct rib_entry *e, void *arg);
void rde_walk(const struct rde *r, rde_walk_fn fn, void *arg);
/* The entry's name: a name's, or for an aggregate's entry the aggregate's. */
void rde_entry_name(const struct rib_entry *e, struct name *out);
bool rde_entry_is_aggregate(const struct rib_entry *e);
/* An aggregate's entry, or NULL when no route is known for it. */
const struct rib_entry *rde_find_aggregate(const struct rde *r, const struct name *agg);
/* A walk over loop turns: each step calls fn on at most about `budget` names with routes;
 * rde_walk_step returns true when the walk is done.  The table may change between steps:
 * every name present throughout is seen once. */
struct rde_walk;
struct rde_walk *rde_walk_begin(const struct rde *r);
bool rde_walk_step(const struct rde *r, struct rde_walk *w, unsigned budget, rde_walk_fn fn, void *arg);
void rde_walk_end(struct rde_walk *w);
/* The FIB routes of a name (ranked); returns how many. */
unsigned rde_fib_routes(const struct rib_entry *e, struct route *out);

/* One route of a name as `show route` prints it. */
struct rde_route_view {
	unsigned rank;                  /* 1..: among the ranked; 0: not ranked */
	const char *from;               /* the peer's name, "" for local content */
	const struct ip_endpoint *next_hop;  /* NULL for local content */
	const struct nbrpd_content *content;    /* local content, else NULL */
	const char *path;               /* npath NUL-terminated router names */
	unsigned npath;
	uint32_t load_ms, local_pref;
	bool stale, usable;
	const struct nexthop *nh;       /* IP routing's view of the next hop; NULL for local */
	uint32_t agg_version;           /* an aggregate's route from a peer: what it offers, */
	const struct ip_endpoint *agg_source;   /* and from where (NULL otherwise) */
	const char *sig_state;          /* its signatures' check (attest_state_name); NULL: not checked */
	const char *sig_reason;         /* why invalid (attest_reason_name), else NULL */
};
/* The ranked routes in rank order, then the others; at most max; returns how many. */
unsigned rde_entry_routes(const struct rib_entry *e, struct rde_route_view *out, unsigned max);

struct rde_stats {
	uint64_t names, entries, routes, attrs;
	unsigned jobs;                  /* whole-table jobs running */
	/* wall clock (us) of the last flush that moved a best route to another peer or origin,
	 * or gave or took one; 0: none yet.  When a router settled, comparable across routers. */
	uint64_t best_changed_us;
};
void rde_stats(const struct rde *r, struct rde_stats *out);

#endif
