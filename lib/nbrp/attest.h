/*
 * Route attestations (docs/NBRP.md, Attestations): the origin's signature
 * over what it originates, and one signature per path hop for the next
 * router, chained by BLAKE2b link digests.  Building them, checking them
 * against the trust file (trust.h), and a cache of verified chain prefixes
 * so a signature is verified once.
 *
 * A check is split for the worker pool (sigpool.h): attest_prepare does
 * everything but the Ed25519 verifications on the caller's thread (parse,
 * trust lookups, expiry, link digests, the cache), leaving the signatures
 * still to check in the job; attest_finish records their results.  The
 * cache belongs to the caller's thread; workers only run crypto.
 *
 * The subject of a route is one name, one aggregate (name, version,
 * member digest), or one set of names (its digest): one signature per hop
 * covers every member.  A Route for a set carries the names it routes and
 * the set's others (set_others), so that a router may pass on any subset.
 */
#ifndef CR_ATTEST_H
#define CR_ATTEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nameset.h"
#include "nbrp.pb-c.h"
#include "sigkey.h"
#include "sigpool.h"
#include "trust.h"

#define ATTEST_DIGEST_LEN       32
#define ATTEST_HINT_LEN         4       /* for_key: a prefix of the next router's key */
#define ATTEST_HOP_MSG_LEN      120
#define ATTEST_SOURCE_MAX       64      /* an aggregate's signed source: "ADDRESS PORT" */
#define ATTEST_ORIGIN_MSG_MAX   (16 + 32 + 32 + 8 + 8 + 8 + 1 + 255 + 4 + 32 + 1 + ATTEST_SOURCE_MAX)
#define ATTEST_MAX_SKEW         300     /* seconds an origin's timestamp may be ahead */
#define ATTEST_SET_MAX_NAMES    8192    /* names in a signed set */
#define ATTEST_SET_MAX_BYTES    262144  /* their wire forms together: a Route stays far below a message */

enum attest_state {
	ATTEST_VALID,
	ATTEST_INVALID,
	ATTEST_NOT_FOUND,               /* no authorisation covers the name */
	ATTEST_UNVERIFIED,              /* no (current) trust data */
	ATTEST_PENDING,                 /* signatures left to check (prepare only) */
};

enum attest_reason {
	ATTEST_OK,
	ATTEST_UNAUTHORISED_ORIGIN,
	ATTEST_BAD_SIGNATURE,
	ATTEST_PATH_MISMATCH,           /* attestations do not match the path */
	ATTEST_EXPIRED,                 /* or not yet valid */
	ATTEST_REPLAYED,                /* signed for another router */
	ATTEST_UNKNOWN_KEY,             /* a router in the path has no key */
	ATTEST_MALFORMED,               /* a field of the wrong size, several names not a set, a name twice */
	ATTEST_DIGEST_MISMATCH,         /* aggregate members not the signed ones */
	ATTEST_UNAUTHORISED_MEMBER,     /* an aggregate member its origin may not originate */
	ATTEST_STALE,                   /* an origin_seq older than one seen for the name and origin key */
	ATTEST_UNSIGNED_SOURCE,         /* an aggregate's source not the one its origin signed */
	ATTEST_REASONS
};

const char *attest_state_name(enum attest_state s);
const char *attest_reason_name(enum attest_reason r);

/* What an origin signs for. */
struct attest_subject {
	const uint8_t *name;            /* canonical wire form (not for a set) */
	uint8_t name_len;
	bool aggregate;
	bool set;                       /* a set of names: digest is the set's */
	uint32_t version;
	uint8_t digest[ATTEST_DIGEST_LEN];
	const char *source;             /* an aggregate's: its transfer source, "ADDRESS PORT" */
	uint8_t source_len;             /* at most ATTEST_SOURCE_MAX */
	uint64_t seq;                   /* origin_seq: the origin's stamp of this announcement */
};

/* A name by pointer, as sets are sorted. */
struct attest_name {
	const uint8_t *wire;
	size_t len;
};

/* One attestation as sent, and what Nbrp__Attestation points into. */
struct attest_wire {
	uint8_t signer[SIGKEY_PUBLIC_LEN];
	bool origin;                    /* signer and timestamp present */
	uint8_t sig[SIGKEY_SIG_LEN];
	uint64_t timestamp, expiry;
	uint8_t for_key[ATTEST_HINT_LEN];
	uint8_t link[ATTEST_DIGEST_LEN];        /* its link digest: what the next hop signs over */
};

/* BLAKE2b-256 over the members in byte order of their wire forms. */
int attest_member_digest(const struct nameset *members, uint8_t out[ATTEST_DIGEST_LEN]);

/*
 * A signed set's names (r's names and set_others together) in byte order,
 * and their digest (out NULL: not computed): attest_member_digest's,
 * over the same names.  sorted (if not NULL) gets them, malloc'd,
 * pointing into r.  Returns 0;
 * -1 if a name is not canonical or is there twice, or the set is over
 * ATTEST_SET_MAX_NAMES or ATTEST_SET_MAX_BYTES; -2 if out of memory.
 */
int attest_set_digest(const Nbrp__Route *r, uint8_t out[ATTEST_DIGEST_LEN], struct attest_name **sorted);
/* Whether r is a name set's route: a digest and no aggregate. */
bool attest_route_is_set(const Nbrp__Route *r);

/*
 * The signed bytes.  The origin's: msg of up to ATTEST_ORIGIN_MSG_MAX
 * bytes, its length returned; first is the key of the router that puts the
 * route into NBRP (the last of the path; the origin's own in router mode).
 */
size_t attest_origin_message(uint8_t *msg, const uint8_t signer[SIGKEY_PUBLIC_LEN],
			     const uint8_t first[SIGKEY_PUBLIC_LEN], uint64_t timestamp, uint64_t expiry,
			     const struct attest_subject *s);
void attest_hop_message(uint8_t msg[ATTEST_HOP_MSG_LEN], const uint8_t prev[ATTEST_DIGEST_LEN], uint64_t expiry,
			const uint8_t signer[SIGKEY_PUBLIC_LEN], const uint8_t target[SIGKEY_PUBLIC_LEN]);
/* BLAKE2b-256(msg || sig). */
void attest_link(uint8_t out[ATTEST_DIGEST_LEN], const uint8_t *msg, size_t len, const uint8_t sig[SIGKEY_SIG_LEN]);

/* Signing on the caller's thread (the worker pool signs the same messages). */
void attest_sign_origin(struct attest_wire *out, const struct sigkey *k, const uint8_t first[SIGKEY_PUBLIC_LEN],
			uint64_t timestamp, uint64_t expiry, const struct attest_subject *s);
void attest_sign_hop(struct attest_wire *out, const struct sigkey *k, const uint8_t prev[ATTEST_DIGEST_LEN],
		     const uint8_t target[SIGKEY_PUBLIC_LEN], uint64_t expiry);
/* Points a protobuf Attestation at w (which must outlive it). */
void attest_to_pb(Nbrp__Attestation *pb, struct attest_wire *w);

/*
 * A received chain kept with its route, to pass it on: the origin's
 * attestation and the hops, copied out of the message (112 bytes, then 76
 * a hop).  attest_chain_pb lays it out for sending with our new hop
 * first; pb and pp need room for NBRP_MAX_PATH + 2 entries, and point into
 * c and first, which must outlive them.
 */
struct attest_chain_hop {
	uint8_t sig[SIGKEY_SIG_LEN];
	uint64_t expiry;
	uint8_t for_key[ATTEST_HINT_LEN];
};

struct attest_chain {
	struct attest_wire origin;
	uint32_t n_hops;                /* path order: hop[0] the sender's */
	struct attest_chain_hop hop[];
};

/* The chain of a route that checked valid (any other: NULL), or NULL if out of memory. */
struct attest_chain *attest_chain_copy(const Nbrp__Route *r);
/* A chain of our own origination (no hops yet). */
struct attest_chain *attest_chain_origin(const struct attest_wire *origin);
/* Fills pb/pp: first (if not NULL), the hops, the origin.  Returns the count. */
size_t attest_chain_pb(struct attest_chain *c, struct attest_wire *first, Nbrp__Attestation *pb,
		       Nbrp__Attestation **pp);

/*
 * Verified chain prefixes, by link digest: a digest found here means its
 * signature and every one before it verified, under the keys it names.
 * Set-associative, a fixed number of entries; entries past their expiry
 * are dead, the least recently used of a set is replaced.
 */
struct attest_cache_entry {
	uint8_t link[ATTEST_DIGEST_LEN];
	uint64_t expiry;
	uint32_t used;
	uint32_t pad;
};

struct attest_cache {
	struct attest_cache_entry *e;
	uint32_t sets_mask;             /* sets of ATTEST_CACHE_WAYS */
	uint32_t clock;
	uint64_t hits, misses, inserts, evictions;
};

#define ATTEST_CACHE_WAYS       8

/* entries rounded up to a power of two (at least ATTEST_CACHE_WAYS). -1 if out of memory. */
int attest_cache_init(struct attest_cache *c, size_t entries);
void attest_cache_free(struct attest_cache *c);
void attest_cache_clear(struct attest_cache *c);
bool attest_cache_find(struct attest_cache *c, const uint8_t link[ATTEST_DIGEST_LEN], uint64_t now);
void attest_cache_add(struct attest_cache *c, const uint8_t link[ATTEST_DIGEST_LEN], uint64_t expiry, uint64_t now);

/* One signature to check: what a worker runs. */
struct attest_sigcheck {
	uint8_t pk[SIGKEY_PUBLIC_LEN];
	uint8_t sig[SIGKEY_SIG_LEN];
	uint8_t link[ATTEST_DIGEST_LEN];
	uint64_t expiry;                /* of the prefix up to this link */
	size_t len;
	uint8_t msg[ATTEST_ORIGIN_MSG_MAX];
	bool ok;
};

/* One route's check. */
struct attest_job {
	enum attest_state state;
	enum attest_reason reason;
	int where;                      /* the attestation at fault (path index; path length: the origin) */
	uint64_t expiry;                /* the earliest expiry in the chain: check again then */
	bool other_source;              /* an aggregate's source is not the signed one: invalid if the chain is good */
	uint8_t head[ATTEST_DIGEST_LEN];        /* link digest of the newest: what we sign over */
	unsigned n_checks;              /* signatures to verify (state PENDING) */
	struct attest_sigcheck *checks; /* oldest first; malloc'd, freed by attest_finish */
};

#define ATTEST_BAD_CACHE        16384   /* link digests whose signature failed (56 bytes each) */
#define ATTEST_BAD_TTL          3600    /* seconds a failed link is remembered */

struct attest_verifier {
	const struct trust *trust;      /* NULL: every route unverified */
	uint8_t me[SIGKEY_PUBLIC_LEN];  /* this router's key */
	struct attest_cache cache;
	/* Links whose signature failed, under the trust file in force (emptied by a new one): the
	 * same forgery again costs no verification. */
	struct attest_cache bad;
	uint64_t bad_hits;              /* chains refused by it */
	uint64_t min_lifetime;          /* a chain received must be valid this many seconds more */
	uint64_t verified;              /* signatures checked */
	uint64_t by_reason[ATTEST_REASONS];
};

int attest_verifier_init(struct attest_verifier *v, const uint8_t me[SIGKEY_PUBLIC_LEN], size_t cache_entries);
void attest_verifier_free(struct attest_verifier *v);
/* A new trust file (or NULL).  The cache stays: its entries name their keys; the failed links go. */
void attest_verifier_set_trust(struct attest_verifier *v, const struct trust *t);

/*
 * Everything but the signatures, for route r received from the router
 * named peer (NULL: not checked; otherwise the path must start with it),
 * at now (unix seconds).  agg_digest is ignored for a route that is not
 * an aggregate's.  Returns the state: anything but ATTEST_PENDING is final
 * (job->reason, job->where); PENDING leaves job->n_checks signatures to
 * verify (sigkey_verify on checks[i], result in checks[i].ok), then
 * attest_finish.
 */
enum attest_state attest_prepare(struct attest_verifier *v, const Nbrp__Route *r, const char *peer,
				 uint64_t now, struct attest_job *job);
/*
 * The same for a stored route checked again whose set (set true) was
 * checked against its digest when it was received: r holds only the
 * names it routes here, and aggregate_digest is taken as theirs.
 */
enum attest_state attest_prepare_stored(struct attest_verifier *v, const Nbrp__Route *r, const char *peer,
					bool set, uint64_t now, struct attest_job *job);
/*
 * Either of them, by flags: ATTEST_STORED (as attest_prepare_stored: no
 * minimum lifetime), ATTEST_STORED_SET (its set checked at import), and
 * ATTEST_SERVER: peer is a content server in server mode (no path), whose
 * route's origin must be its own key, the trust file's `router` line for
 * peer (none: unknown key; another key: path mismatch, a chain signed by
 * someone else replayed through it).
 */
#define ATTEST_STORED           1u
#define ATTEST_STORED_SET       2u
#define ATTEST_SERVER           4u
enum attest_state attest_prepare_flags(struct attest_verifier *v, const Nbrp__Route *r, const char *peer,
				       unsigned flags, uint64_t now, struct attest_job *job);
enum attest_state attest_finish(struct attest_verifier *v, struct attest_job *job, uint64_t now);
/* Frees a job's checks without finishing it (a route gone meanwhile). */
void attest_job_drop(struct attest_job *job);
/* prepare, verify inline, finish: for tests and tools. */
enum attest_state attest_verify(struct attest_verifier *v, const Nbrp__Route *r, const char *peer,
				uint64_t now, struct attest_job *job);

/*
 * Checks on the worker pool.  The caller prepares each job (attest_prepare
 * on the loop), then submits the batch: workers verify the PENDING jobs'
 * signatures, and on the loop every PENDING job is finished (states final,
 * the cache filled) before done(b) is called.  jobs and v must stay until
 * then.
 */
struct attest_batch {
	struct sigpool_batch pool;
	struct attest_verifier *v;
	struct attest_job *jobs;
	size_t n;
	uint64_t now;                   /* as given to attest_prepare */
	void (*done)(struct attest_batch *b);
	void *arg;
};

void attest_batch_submit(struct sigpool *p, struct attest_batch *b);

/*
 * Signing hops on the worker pool: for each request, the hop attestation
 * by key for target over prev (attest_sign_hop), done(b) on the loop.
 */
struct attest_hop_request {
	uint8_t prev[ATTEST_DIGEST_LEN];
	uint8_t target[SIGKEY_PUBLIC_LEN];
	uint64_t expiry;
	struct attest_wire out;
};

struct attest_sign_batch {
	struct sigpool_batch pool;
	const struct sigkey *key;
	struct attest_hop_request *req;
	size_t n;
	void (*done)(struct attest_sign_batch *b);
	void *arg;
};

void attest_sign_batch_submit(struct sigpool *p, struct attest_sign_batch *b);

/*
 * Signed origin withdrawals (docs/NBRP.md, Origin withdrawals): the
 * origin's signature over its key, the stamp withdrawn, an expiry and the
 * name.  attest_withdrawal_check takes one as received: ATTEST_OK, or why
 * not (no trust file in force: ATTEST_UNKNOWN_KEY; a signer the trust file
 * does not let originate the name: ATTEST_UNAUTHORISED_ORIGIN, ...).  The
 * signature is verified on the caller's thread (one verification; a
 * failed one is remembered as a failed link is).
 */
#define ATTEST_WITHDRAW_MSG_MAX (16 + 32 + 8 + 8 + 255)
size_t attest_withdrawal_message(uint8_t *msg, const uint8_t signer[SIGKEY_PUBLIC_LEN], uint64_t seq,
				 uint64_t expiry, const uint8_t *name, size_t name_len);
void attest_sign_withdrawal(uint8_t sig[SIGKEY_SIG_LEN], const struct sigkey *k, uint64_t seq, uint64_t expiry,
			    const uint8_t *name, size_t name_len);
/* Whether w carries a signature (any of its three fields). */
bool attest_withdrawal_signed(const Nbrp__OriginWithdrawal *w);
enum attest_reason attest_withdrawal_check(struct attest_verifier *v, const Nbrp__OriginWithdrawal *w,
					   uint64_t now);

/*
 * An aggregate's members against its signed route: ATTEST_OK, or
 * ATTEST_DIGEST_MISMATCH (also for a route without a digest).
 */
enum attest_reason attest_members_check(const Nbrp__Route *r, const struct nameset *members);

#endif
