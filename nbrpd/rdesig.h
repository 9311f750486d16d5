/*
 * Signatures (docs/SIGNATURES.md, "In nbrpd"): a stage in front of the
 * RDE.  It owns our key, the trust file (polled), the verifier and its
 * cache, the worker pool, and for each peer (struct rdesig_peer, the
 * session layer's) the queue of its UPDATEs waiting for their checks and
 * its budget.  The session layer hands it every UPDATE once signatures
 * are on; it hands each to the RDE once, with its checks
 * (rde_peer_update), and the RDE reaches it only through the hooks of
 * rdesig_signer (export-time signing, and what must call back), which the
 * RDE's owner installs (rde_set_signer).
 *
 * An UPDATE from a peer with `signatures prefer|require` is prepared whole
 * (attest_prepare for each Route: cached chains, not-found and most
 * invalid routes are final at once); if some Route has signatures left to
 * verify, the UPDATE waits, a copy of it in the peer's queue, while the
 * worker pool verifies them, and is applied whole, with every Route's
 * state, when they are done.  While the queue is not empty the peer's
 * later UPDATEs join it, each prepared and verified at once but applied in
 * order (its END-OF-RIB's sweep too), so nothing the peer says overtakes
 * what it said before.  A full queue (SIGQ_MAX) or a used turn budget
 * stops its session reading (rdesig_peer_waiting): TCP holds the rest,
 * nothing is dropped.
 */
#ifndef NBRPD_RDESIG_H
#define NBRPD_RDESIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"
#include "nbrp.h"

struct name;
struct rde;
struct rde_peer;
struct rde_signer;
struct rdesig;
struct rdesig_peer;
struct refused_entry;
struct sigkey;

/* Our key (copied), the trust file read, the worker pool started; NULL with err set. */
struct rdesig *rdesig_new(uv_loop_t *loop, struct rde *r, const struct sigkey *key, char *err, size_t err_len);
/* Its hooks, for rde_set_signer. */
const struct rde_signer *rdesig_signer(struct rdesig *s);
/* Reload: the trust file read again (it is also polled); new routes are checked against it. */
void rdesig_reload(struct rdesig *s);
/* Closes the worker pool (the loop must run once more); queued UPDATEs are dropped. */
void rdesig_stop(struct rdesig *s);
/* After rde_free: the RDE's chains are charged to it. */
void rdesig_free(struct rdesig *s);
/* The key the trust file in force gives router name: NULL when it has none, or none is in force. */
const uint8_t *rdesig_router_key(const struct rdesig *s, const char *name);

struct rdesig_stats {
	bool on;                        /* a key is loaded */
	bool trust;                     /* a trust file is in force */
	uint64_t verified;              /* signatures verified */
	uint64_t cache_hits, cache_misses;      /* verified links looked up */
	uint64_t bad_cached;            /* chains refused by a link that failed before: no crypto */
	uint64_t signed_hops, signed_origins;   /* signatures made */
	uint64_t signed_withdrawals;            /* origin withdrawals of our names signed */
	uint64_t hops_kept;             /* our hop signatures kept, by (head, peer) */
	uint64_t rechecked;             /* stored routes checked again */
	uint64_t stale_verdicts;        /* batches checked under trust data replaced meanwhile: checked again */
	uint64_t chain_bytes;           /* chains kept to pass on, and name sets (ours too) */
	uint64_t fresh_kept;            /* (name, origin key) newest origin_seq entries */
	uint64_t trust_serial, trust_valid_until;       /* of the trust file in force */
	bool trust_expiring;            /* it expires within TRUST_WARN_S (or has) */
	const uint64_t *trust_refused;  /* trust files read and not installed, by enum rdesig_trust_refusal */
};
/* s NULL: signatures off (all zero). */
void rdesig_stats(const struct rdesig *s, struct rdesig_stats *out);

/* Why a trust file read was not installed (the one in force stays). */
enum rdesig_trust_refusal {
	TRUST_REFUSED_BAD,              /* does not read, parse or verify */
	TRUST_REFUSED_OLDER,            /* serial not larger than the one in force's (and another file) */
	TRUST_REFUSED_NOT_YET,          /* valid-from is still to come */
	TRUST_REFUSED_EXPIRED,          /* valid-until has passed */
	TRUST_REFUSALS
};
const char *rdesig_trust_refusal_name(enum rdesig_trust_refusal r);
#define TRUST_WARN_S    (7 * 86400)     /* a trust file this close to its end is warned about */

/* The name's routes refused for their signatures lately, newest first (at most REFUSED_WAYS). */
unsigned rdesig_refused(const struct rdesig *s, const struct name *n, struct refused_entry *out);
/*
 * The members of the aggregate's version stored that the origin of its
 * signed routes may not originate, as last counted under the trust file in
 * force (its routes are then invalid, unauthorised member), and the first
 * of them; 0: none.
 */
uint32_t rdesig_aggregate_unauthorised(const struct rdesig *s, const struct name *agg, struct name *first);
/* Valid routes of the aggregate that named another source than the one their origin signed
 * (unsigned aggregate source: fetched only from the signed one). */
uint64_t rdesig_aggregate_unsigned_sources(const struct rdesig *s, const struct name *agg);

/* ---- peers: the session layer's calls ---- */

/* A peer of the RDE's, its `signatures` setting (in force from now on). */
struct rdesig_peer *rdesig_peer_add(struct rdesig *s, struct rde_peer *p, enum sig_policy sig);
void rdesig_peer_configure(struct rdesig_peer *sp, enum sig_policy sig);
/* Before rde_peer_remove: its waiting UPDATEs are dropped; freed once the workers are done with them. */
void rdesig_peer_remove(struct rdesig_peer *sp);
/* Before rde_peer_up. */
void rdesig_peer_up(struct rdesig_peer *sp);
/* Before rde_peer_down: its waiting UPDATEs are dropped. */
void rdesig_peer_down(struct rdesig_peer *sp);
/* An UPDATE from it: checked, then handed to the RDE now or once verified. */
void rdesig_update(struct rdesig_peer *sp, const Nbrp__Update *u);
/* Its END-OF-RIB's sweep (rde_peer_sweep), after the UPDATEs that came before it. */
void rdesig_peer_sweep(struct rdesig_peer *sp);
/* Its UPDATEs wait for their checks, or it used its turn's budget: its session should not read. */
bool rdesig_peer_waiting(const struct rdesig_peer *sp);

struct rdesig_peer_stats {
	const uint64_t *state;          /* routes received by attest_state (valid .. unverified) */
	const uint64_t *invalid;        /* invalid routes received by attest_reason */
	uint64_t owd_forged;            /* its signed origin withdrawals refused (bad signature, key, ...) */
	/* its verification budget */
	uint64_t verified;              /* signatures sent to the workers for it */
	uint64_t failed;                /* routes whose signatures failed there */
	uint64_t queued;                /* UPDATEs waiting for their checks */
	uint64_t loop_ns;               /* loop time its checks took */
	uint64_t worker_items, worker_ns;       /* routes the workers checked for it, their time */
	uint64_t throttled;             /* loop turns its reading stopped at its budget */
	unsigned weight;                /* its share against other peers' */
};
/* sp NULL: signatures off (all zero). */
void rdesig_peer_stats(const struct rdesig_peer *sp, struct rdesig_peer_stats *out);

#endif
