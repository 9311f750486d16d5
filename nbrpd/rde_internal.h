/*
 * Inside the RDE (rde.h): routes, interned attributes, the RDE's view of a
 * peer and struct rde, over the table (rib.h).  Only the RDE's files
 * include this.
 *
 * A route is split the way OpenBGPD splits a prefix from its rde_aspath
 * (and BIRD an rte from its rta): what a peer said for many names at once
 * (peer, session, next hop, path, load, local preference) is interned in
 * a shared, reference-counted struct rib_attrs; per name there is only a
 * small struct rib_route.  Entries and routes come from slabs.
 *
 * What peers were told is not kept per peer (that was a bit per peer and
 * name, and a limit of 64 peers): every peer is told the same thing about
 * a name, the entry's exported attributes (adv), filtered per peer by
 * rules that depend only on the attributes and the peer (adjout.c).  A
 * peer whose table is still being dumped has a cursor: names behind it
 * were sent and hear of changes, names ahead of it will be sent when the
 * cursor gets there.
 */
#ifndef NBRPD_RDE_INTERNAL_H
#define NBRPD_RDE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "agg_table.h"
#include "attest.h"
#include "config.h"
#include "hashkey.h"
#include "origin_wd.h"
#include "peer_names.h"
#include "rde.h"
#include "rib.h"
#include "sigchain.h"
#include "slab.h"

#define LOCAL_PREF_LOCAL        UINT32_MAX

/* ---- the RDE's view of a peer ---- */

struct rde_peer {
	struct rde *rde;
	void *owner;                    /* the session layer's, for the callbacks */
	uint32_t refs;                  /* attributes naming it, +1 while configured */
	uint32_t gen;                   /* session generation: routes of older ones are stale */
	uint32_t local_pref;
	uint64_t max_names;
	enum max_names_action max_action;
	enum nbrpd_role role;           /* ours on its session, fixed while it is up */
	enum nbrpd_role role_conf;      /* configured: in force from the next session */
	bool server_mode;
	bool configured;
	bool up;                        /* established: told routes */
	bool max_warned;
	bool dumping;                   /* its table is being sent (cursor `dump`) */
	bool eor_owed;                  /* the dump is done; END-OF-RIB waits for our signatures for it */
	bool reexporting;               /* a new export policy is being applied (cursor `reexport`) */
	struct rib_cursor dump, reexport;
	struct nbrpd_policy import, export;
	struct nbrpd_policy export_old;         /* while reexporting: what names ahead of the cursor were told under */
	struct nbrpd_policy export_next;        /* waiting for the job to start */
	bool export_next_set;
	uint32_t flush_mark;            /* excluded from this flush's update group */
	uint64_t names;
	uint64_t updates_out, withdrawn_in, bad_routes;
	uint64_t names_in, names_out, withdrawn_out;    /* names in UPDATEs */
	uint64_t owd_refused;           /* routes of signed peers its origin withdrawals did not drop */
	uint64_t owd_log_ms;            /* the last line logged about them */
	struct chain_node hlink;        /* by name (peer_names.c) */
	/* what its routes' signatures mean, and whether it is sent ours (set by the signature stage, rdesig.h) */
	enum sig_policy sig;            /* SIG_OFF without a signer */
	char name[];                    /* as long as it is: a simulated router has tens of peers (sim/net.c) */
};

/* ---- attributes ---- */

/* What a route says apart from its name; zeroed before filling (hashed and compared as bytes). */
struct rib_attrs_key {
	struct rde_peer *peer;                  /* NULL: local content */
	const struct nbrpd_content *content;    /* local: its servers */
	uint32_t gen;                           /* the peer's session it came in */
	uint32_t local_pref;
	uint32_t load_ms;
	struct ip_endpoint next_hop;
	bool server;                            /* from a content server's own session */
	uint8_t role;                           /* enum nbrpd_role: ours on the session it came in */
	uint8_t sig_state;                      /* its check: enum attest_state + 1; 0: not checked */
	uint8_t sig_reason;                     /* enum attest_reason */
	uint8_t sig_head[ATTEST_DIGEST_LEN];    /* a valid chain's newest link (what we sign over); else 0 */
	uint8_t npath;
	uint16_t path_bytes;
	uint32_t agg_version;                   /* an aggregate's route: the version it offers */
	struct ip_endpoint agg_source;          /* ... and where the sender serves it */
	uint64_t origin_seq;                    /* the origin's stamp of the announcement; 0: none */
};

/* Interned attributes, shared by every route that says the same; immutable but for the indexes. */
struct rib_attrs {
	struct rib_attrs *hnext;
	struct rib_attrs *nh_next, **nh_pprev;  /* the next hop's list of attributes through it */
	uint32_t refs;                          /* routes, exports (adv), an UPDATE being applied */
	uint32_t hash;
	uint32_t origin;                        /* the path's last router (us for an empty path) as the FIB tags it (route.h) */
	uint64_t sig;                           /* path and peer as one number: equal sig, equal UPDATE Route */
	struct nexthop *nh;                     /* the next hop, as IP routing sees it; NULL: local */
	/* The next-hop index: every name that had a route with these attributes.
	 * Appended when a route is made, compacted when stale slots outnumber
	 * live routes, so it stays within twice the live count. */
	struct rib_entry **ents;
	uint32_t nents, ents_cap, nroutes, walkers;
	/* peers whose name is in the path (not told), as of rde->peers_gen */
	struct rde_peer **path_peers;
	uint32_t npath_peers, path_peers_gen;
	uint32_t excluded_mark;                 /* the flush its peers were last marked excluded in */
	struct sig_chain *chain;                /* a valid route's attestations as received (sigchain.h) */
	struct rib_attrs_key k;
	char path[];                            /* npath NUL-terminated router names */
};

struct rib_attrs *attrs_get(struct rde *r, const struct rib_attrs_key *k, const char *path);
/* The last router name of a's path (the origin), NULL for an empty path. */
const char *attrs_origin(const struct rib_attrs *a);
/* Frees a set of attributes whose last reference went (attrs_put). */
void attrs_free(struct rde *r, struct rib_attrs *a);
static inline void attrs_put(struct rde *r, struct rib_attrs *a)
{
	if (a && --a->refs == 0)
		attrs_free(r, a);
}
/* Records that e has a route with a (the next-hop index). */
static inline void attrs_index(struct rde *r, struct rib_attrs *a, struct rib_entry *e);
/* Its slow path: the list full, or the name's count of slots. */
void attrs_index_grow(struct rde *r, struct rib_attrs *a, struct rib_entry *e);
/* Lets go of index slots (their entries may then be freed). */
void attrs_unindex(struct rde *r, struct rib_entry **ents, uint32_t n);
#define UNINDEX_AT_ONCE         4096    /* more slots than this go through a job */
/* The peers whose name is in a's path. */
unsigned attrs_path_peers(struct rde *r, struct rib_attrs *a, struct rde_peer ***out);
bool attrs_same_advertisement(const struct rib_attrs *a, const struct rib_attrs *b);
void attrs_free_all(struct rde *r);

/* ---- routes and entries ---- */

struct rib_route {
	struct rib_route *next;
	struct rib_attrs *a;
	uint64_t seq : 56;                      /* arrival order */
	uint64_t rank : 8;                      /* 1..nbest among the best; 0: not ranked */
};

/* The origin key of a's chain (an aggregate's is ordered by its version: none), or NULL. */
static inline const uint8_t *attrs_chain_origin(const struct rib_entry *e, const struct rib_attrs *a)
{
	return a->chain && !entry_is_aggregate(e) ? sig_chain_origin(a->chain) : NULL;
}

/* The member digest a valid aggregate route was signed with, or NULL (not valid, not signed). */
static inline const uint8_t *attrs_valid_digest(const struct rib_attrs *a)
{
	if (!a->k.peer || a->k.sig_state != ATTEST_VALID + 1 || !a->chain || a->chain->digest.len != ATTEST_DIGEST_LEN)
		return NULL;
	return a->chain->digest.data;
}

static inline bool route_stale(const struct rib_route *rt)
{
	return rt->a->k.peer && rt->a->k.gen != rt->a->k.peer->gen;
}

static inline void attrs_index(struct rde *r, struct rib_attrs *a, struct rib_entry *e)
{
	if (!a->nh)
		return;                 /* local content: its servers are followed by content */
	if (a->nents == a->ents_cap || e->refs == UINT16_MAX) {
		attrs_index_grow(r, a, e);
		return;
	}
	a->ents[a->nents++] = e;
	e->refs++;
}

/* ---- roles (RFC 9234) ---- */

/* A route learned where we are customer, peer or route-server client (from a provider, a peer
 * or a route server) goes only down: to customers and route-server clients. */
static inline bool role_down_only(enum nbrpd_role learned_on)
{
	return learned_on == ROLE_CUSTOMER || learned_on == ROLE_PEER || learned_on == ROLE_RS_CLIENT;
}
/* Whether a peer we have this role towards is told routes that go only down (no role: yes). */
static inline bool role_told_all(enum nbrpd_role to)
{
	return to == ROLE_NONE || to == ROLE_PROVIDER || to == ROLE_RS_SERVER;
}

/* ---- the RDE ---- */

struct nameset;
struct origin_wd_sig;

/* What valid routes said of an aggregate's version stored here (struct rde_signer's aggregate_signed). */
enum agg_signed {
	AGG_UNSIGNED,           /* none signed it, none signed another */
	AGG_SIGNED,             /* one signed its member digest */
	AGG_DISTRUSTED,         /* one signed another before any signed it: fetched whole at the flush */
};

/*
 * The signature stage's part in the RDE (rdesig.h), installed by the RDE's
 * owner (rde_set_signer): the RDE and its packer reach signature code only
 * through these.
 */
struct rde_signer {
	void *arg;
	uint64_t *chain_bytes;          /* chains kept with attributes are charged here */
	/* Export to `to`, a peer with signatures on: its context for `export`, taken once a packing. */
	void *(*export_peer)(void *arg, struct rde_peer *to);
	/* The attestations of e's route with attributes a, our hop for the peer first, into out (at
	 * most max); 0: sent unsigned; -1: our signature is being made, the name is sent when it is.
	 * seq: the origin_seq the origin signed; digest: for an aggregate of ours, the member digest
	 * signed (ATTEST_DIGEST_LEN bytes, the stage's), else left alone. */
	int (*export)(void *peer, const struct rib_entry *e, const struct rib_attrs *a,
		      Nbrp__Attestation **out, size_t max, uint64_t *seq, const uint8_t **digest);
	/* The signed name set e's route is in (a received chain's, or one of our names'), or NULL. */
	const struct sig_set *(*set_of)(void *arg, const struct rib_entry *e, const struct rib_attrs *a);
	/* Our hop signatures for p are being made: its END-OF-RIB waits (rde_peer_eor when they are). */
	bool (*export_pending)(void *arg, const struct rde_peer *p);
	/* Our withdrawal of our name up to stamp seq signed into out; false: not (no authorisation). */
	bool (*sign_withdrawal)(void *arg, const uint8_t *wire, size_t len, uint64_t seq, struct origin_wd_sig *out);
	/* An origin withdrawal signed by key applied: older stamps of that key are stale from now on. */
	void (*withdrawn)(void *arg, const uint8_t *wire, size_t len, const uint8_t *key, uint64_t seq,
			  uint64_t until);
	/* A version of aggregate agg stored (e: its entry, or NULL): its member digest made and its
	 * signed routes checked against it.  false: that version's again, nothing new. */
	bool (*aggregate_stored)(void *arg, const uint8_t *agg, size_t len, uint32_t version,
				 const struct nameset *members, struct rib_entry *e);
	/* What valid routes said of the version of agg stored. */
	enum agg_signed (*aggregate_signed)(void *arg, const uint8_t *agg, size_t len);
	/* The version of agg stored is thrown away (to be fetched whole): what was known of it goes. */
	void (*aggregate_dropped)(void *arg, const uint8_t *agg, size_t len);
	/* A loop turn's work is done. */
	void (*turn)(void *arg);
};

struct rde_job;
struct packer;
struct decide_cand;

/* The flush's update group: peers every changed name is told alike to, sent one encoding (rde.c);
 * one for each export class (role_told_all or not). */
struct update_group {
	struct rde *r;
	bool own_and_customers;                 /* routes that go only down are not told */
	struct rde_peer **members;
	unsigned n;
	size_t cap;
};

/* One name's candidates while its routes are ranked (rde.c): arrays that only grow. */
struct rank_scratch {
	struct decide_cand *cands;
	struct rib_route **routes;
	size_t cands_cap, routes_cap;
};

struct rde {
	uv_loop_t *loop;
	const struct nbrpd_config *cfg;
	struct nexthop_table *nexthops;
	struct rde_ops ops;
	struct rib rib;
	struct slab routes;                     /* struct rib_route */
	uint64_t seq;                           /* arrival order of routes */
	uint64_t start_ms;
	struct rib_attrs **attrs;               /* interned attributes */
	size_t nattrs_buckets, nattrs;
	struct rde_peer **peers;                /* every peer, configured or going */
	unsigned npeers;
	size_t peers_cap;
	struct peer_names by_name;              /* configured peers */
	uint32_t peers_gen;                     /* changes when a peer comes or goes */
	struct entry_list dirty, deferred;
	uv_timer_t deferred_timer;
	struct entry_list held;                 /* changed names peers are told of once update-delay is over */
	struct entry_list lost;                 /* ... left without a route: once withdrawal-delay is */
	uint64_t held_since, lost_since;        /* the loop's time the first was held */
	uv_timer_t held_timer;
	uv_check_t check;                       /* jobs, then the flush, once per loop turn */
	uv_idle_t idle;                         /* keeps the loop from blocking while jobs can run */
	struct rde_job *jobs;
	unsigned njobs;
	struct agg_table aggs;
	/* takes over a malloc'd array of index slots and lets go of them over several turns (attr.c's) */
	void (*unindex_later)(struct rde *r, struct rib_entry **ents, uint32_t n);
	uint32_t flush_no;
	struct update_group group[2];           /* told all; own and customers' routes only */
	struct rank_scratch rank;
	struct packer *packer;                  /* the UPDATEs being made (packer.h) */
	const struct rde_signer *signer;        /* NULL: signatures neither checked nor made */
	struct origin_wd owd;                   /* origin withdrawals to pass on at the flush */
	uint64_t last_stamp;                    /* our last origin_seq */
	uint32_t stamp_flush;                   /* the flush_no it was given in */
	uint64_t best_changed_us;               /* rde_stats' best_changed_us */
	bool input_paused;                      /* rde_busy said so this turn */
	bool stopping;
};

/* Marks e for the next flush. */
static inline void rde_mark_dirty(struct rde *r, struct rib_entry *e)
{
	if (!(e->flags & ENTRY_DIRTY) && entry_list_push(&r->dirty, e))
		e->flags |= ENTRY_DIRTY;
}
static inline struct rib_route *route_new(struct rde *r, struct rib_attrs *a, uint64_t seq)
{
	struct rib_route *rt = slab_alloc(&r->routes);
	if (rt)
		*rt = (struct rib_route){ .a = a, .seq = seq };
	return rt;
}
/* Takes a route out of its entry's list, or NULL (peer NULL: the local one). */
static inline struct rib_route *route_take(struct rib_entry *e, const struct rde_peer *p)
{
	for (struct rib_route **pp = &e->routes; *pp; pp = &(*pp)->next)
		if ((*pp)->a->k.peer == p) {
			struct rib_route *rt = *pp;
			*pp = rt->next;
			return rt;
		}
	return NULL;
}

/* Counts an UPDATE for the peer (arg) and queues it on its session: a packer_emit_fn for one peer. */
void rde_emit_to_peer(void *arg, struct wq_buf *frame, unsigned names, unsigned withdrawn);
/* Whether a stored signed route's attributes change with this check (rdesig.c's, done again). */
bool rde_route_recheck_changes(const struct rib_route *rt, const struct attest_job *j);
/* ... then the route kept with them (keep: its check accepted, rdesig.c's), or withdrawn. */
void rde_route_recheck(struct rde *r, struct rib_entry *e, struct rib_route *rt, const struct attest_job *j,
		       bool keep);
/* A stamp for an announcement of ours, newer than every one before it. */
uint64_t rde_stamp(struct rde *r);
/* Names p is told again, if it is told them now (the signer's: our signature for them is made);
 * between begin and end, one packing. */
void rde_resend_begin(struct rde_peer *p);
void rde_resend(struct rde_peer *p, const uint8_t *wire, size_t len);
void rde_resend_end(struct rde_peer *p);
/* END-OF-RIB to p if its dump is done and none of its names waits for our signature. */
void rde_peer_eor(struct rde_peer *p);

/* ---- what peers are told (adjout.c) ---- */

/* Whether p is told about attributes a (the name's export policy aside). */
bool adjout_to_peer(struct rde *r, struct rib_attrs *a, struct rde_peer *p);
/* ... and with the name under a policy. */
bool adjout_allows(struct rde *r, struct rib_attrs *a, const struct rib_entry *e, struct rde_peer *p,
		   const struct nbrpd_policy *export);
/* The load a peer is told for a route with these attributes (load-radius). */
static inline uint32_t adjout_load(const struct rde *r, const struct rib_attrs *a)
{
	return (uint32_t)a->k.npath + 1 <= r->cfg->load_radius ? a->k.load_ms : 0;
}

#endif
