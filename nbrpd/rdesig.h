/*
 * Signatures in the RDE (docs/SIGNATURES.md, "In nbrpd"): the checks of
 * the routes of peers with `signatures prefer|require`.  Only the rde
 * files include this.
 *
 * An UPDATE from such a peer is prepared whole (attest_prepare for each
 * Route: cached chains, not-found and most invalid routes are final at
 * once); if some Route has signatures left to verify, the UPDATE waits,
 * a copy of it in the peer's queue, while the worker pool verifies them,
 * and is applied whole, with every Route's state, when they are done.
 * While the queue is not empty the peer's later UPDATEs join it, each
 * prepared and verified at once but applied in order (its END-OF-RIB's
 * sweep too), so nothing the peer says overtakes what it said before.
 * A full queue (SIGQ_MAX) stops its session reading (rde_peer_waiting):
 * TCP holds the rest, nothing is dropped.
 */
#ifndef NBRPD_RDESIG_H
#define NBRPD_RDESIG_H

#include "rib.h"

void rdesig_free(struct rdesig *s);
/* Closes the worker pool (the loop must run once more); queued UPDATEs are dropped. */
void rdesig_stop(struct rdesig *s);

/* An UPDATE from a peer whose signatures are checked: applied now, or queued. */
void rdesig_update(struct rde_peer *p, const Nbrp__Update *u);
/*
 * Whether a route with this check is imported (require: valid only); counts
 * it, and logs a refusal with its first name (and how many more it had).
 */
bool rdesig_accept(struct rde_peer *p, const struct attest_job *j, const struct name *first, size_t more);
/* A name of a route refused for its check, kept for `show route` (refused.h); forgotten when
 * the same peer's route for it is taken. */
void rdesig_refused_note(struct rde_peer *p, const struct attest_job *j, const uint8_t *wire, size_t len);
void rdesig_refused_forget(struct rde_peer *p, const uint8_t *wire, size_t len);
/* The check's part of the attributes: its state, and for `prefer` a local preference. */
void rdesig_attrs(const struct rde_peer *p, const struct attest_job *j, struct rib_attrs_key *k);
/* A valid route's attestations kept with its (new) attributes, to pass on. */
void rdesig_keep_chain(struct rib_attrs *a, const Nbrp__Route *rt, const struct attest_job *j);
/*
 * Export to `to` (signatures on): the attestations of e's route with
 * attributes a, our hop for `to` first, into out (at most max); 0: sent
 * unsigned (not valid here, not checked, no key for `to`); -1: our
 * signature is being made, the name is sent to `to` when it is (or an
 * aggregate's route names a version not stored here yet: sent when it is).
 * seq: the origin_seq the origin signed, for the Route (ours: a set's is
 * its own stamp).
 */
int rdesig_export(struct rde_peer *to, const struct rib_entry *e, const struct rib_attrs *a,
		  Nbrp__Attestation **out, size_t max, uint64_t *seq);
/* An aggregate's route passed on signed: the member digest it was signed with (ours: of the version stored). */
void rdesig_export_digest(const struct rde *r, const struct rib_entry *e, const struct rib_attrs *a,
			  Nbrp__Route *rt);
/*
 * rt, an aggregate's Route from p, has a good chain but names another
 * source than the one its origin signed (ATTEST_UNSIGNED_SOURCE): counted
 * with the aggregate, logged.
 */
void rdesig_unsigned_source(struct rde_peer *p, const Nbrp__Route *rt);
/*
 * A version of aggregate g stored (e: its entry, or NULL): its member
 * digest taken, and the signed routes that name this version checked
 * against it (a mismatch: invalid, member digest mismatch).
 */
void rdesig_aggregate_stored(struct rde *r, struct rde_agg *g, const struct nameset *members, struct rib_entry *e);
/* The member digest a valid aggregate route was signed with, or NULL (not valid, not signed). */
const uint8_t *rdesig_valid_digest(const struct rib_attrs *a);
/* A chain's memory given back (attrs_free). */
void rdesig_chain_free(struct rde *r, struct sig_chain *c);
/*
 * The signed name set (docs/NBRP.md, Attestations) e's route with
 * attributes a is signed in, or NULL: a received set's chain, or one of
 * our own content names' sets.  Names of one set may share a Route to a
 * peer, which carries the set's digest and its others (the set's names
 * not among names[0..n), rdesig_set_others: into others, room for the
 * set's size, their count returned).
 */
struct sig_set;
const struct sig_set *rdesig_set_of(struct rde *r, const struct rib_entry *e, const struct rib_attrs *a);
size_t rdesig_set_size(const struct sig_set *set, size_t *bytes);
size_t rdesig_set_others(struct rdesig *s, const struct sig_set *set, const ProtobufCBinaryData *names, size_t n,
			 ProtobufCBinaryData *others);
void rdesig_set_digest(const struct sig_set *set, Nbrp__Route *rt);
/* A route's chain, kept for attributes that were given a new state. */
void rdesig_copy_chain(struct rib_attrs *to, const struct rib_attrs *from);
/*
 * The origin with key signed seq for a name (withdrawn: withdrew it), its
 * signature valid until `until`: the newest is kept, and stored routes of
 * peers other than from with an older stamp of that origin become invalid,
 * stale origin_seq.  false: seq is older than one noted (stale itself).
 */
bool rdesig_fresh_note(struct rde *r, const struct rde_peer *from, const uint8_t *wire, size_t len,
		       const uint8_t *key, uint64_t seq, uint64_t until, bool withdrawn);
/* The origin key of a stored route's valid chain (not an aggregate's), or NULL. */
const uint8_t *rdesig_route_origin(const struct rib_entry *e, const struct rib_attrs *a);
/*
 * A signed origin withdrawal from peer `from`, checked as an origin
 * attestation is (the trust file, its expiry, its signature): true and
 * its signature in out; false: refused, counted and logged for `from`.
 */
bool rdesig_withdrawal_check(struct rde *r, struct rde_peer *from, const Nbrp__OriginWithdrawal *w,
			     struct origin_wd_sig *out);
/* Our withdrawal of our name (up to stamp seq) signed into out; false: not (no key, no authorisation). */
bool rdesig_sign_withdrawal(struct rde *r, const uint8_t *wire, size_t len, uint64_t seq,
			    struct origin_wd_sig *out);
/* The session ended or the peer went away: its waiting UPDATEs are dropped. */
void rdesig_peer_down(struct rde_peer *p);
/*
 * Budgets: each peer's verifications are a flow of the worker pool, and
 * its checks may take a share of each loop turn (its weight, lower while
 * its routes fail); past it, rde_peer_waiting stops its session reading
 * until the next turn (TCP backpressure, nothing dropped).  Our own
 * signing goes in the pool's urgent lane.
 */
void rdesig_turn(struct rde *r);
void rdesig_peer_stats(const struct rde_peer *p, struct rde_peer_stats *out);

#endif
