/*
 * Signatures, a stage in front of the RDE (rdesig.h): the verifier, the
 * trust file and the worker pool, each peer's queue of UPDATEs waiting for
 * their checks, and the signatures we make, which the RDE's packer asks
 * for through the hooks of struct rde_signer.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>

#include <xxhash.h>

#include "chain.h"
#include "decide.h"
#include "fresh.h"
#include "hashkey.h"
#include "log.h"
#include "rde_internal.h"
#include "rdesig.h"
#include "refused.h"
#include "trust_serial.h"
#include "vec.h"

#define SIG_LOG_PER_S   5       /* rejected routes logged per peer and second */
#define SIG_LIFETIME    43200   /* seconds our signatures are valid (docs/SIGNATURES.md, Expiry) */
#define SIG_RENEW       (SIG_LIFETIME / 4)      /* re-signed when less is left */
#define SWEEP_BUCKETS   4096    /* of the signature caches, per poll */
#define SWEEP_FRESH     65536   /* slots of the freshness table, per poll */
#define FRESH_AHEAD     8       /* names whose freshness slot is asked for ahead */
#define REFUSED_KEPT    16384   /* names refused for their signatures kept for show route (about 5 MiB) */
/*
 * A peer's budget: its share of the workers and of each loop turn is its
 * weight over the busy peers' sum; one whose routes lately failed more
 * than they checked gets the low weight (docs/SIGNATURES.md, Budgets).
 */
#define WEIGHT_GOOD     16
#define WEIGHT_BAD      1
#define TURN_NS         250000  /* a turn's loop time for a peer's checks, per unit of weight */
#define TURN_BYTES      65536   /* ... and of its UPDATEs' bytes (read and decoded before they come here) */
#define RECENT_ROUTES   4096    /* routes its weight looks back over, about */
/*
 * A peer's UPDATEs checked at once, when its routes verify more than they
 * fail; else one, so a forgery repeated is found in the failed links (its
 * first check done) instead of being verified again.  Then its session
 * stops reading.
 */
#define SIGQ_MAX        4

/* Our own content names, signed as sets: a name's set is the one its hash picks. */
#define OWN_SET_NAMES   512     /* names a set holds, on average */

struct own_set {
	struct sig_set *set;            /* NULL: no names, or too many (then signed one by one) */
	struct attest_wire w;           /* our origin attestation over its digest; expiry 0: not yet */
	uint64_t seq;                   /* the origin_seq it signs: a stamp taken when signed */
	Nbrp__Attestation pb, *ptr;
};

/* Our hop signature over prev (a chain head: one name's, or a set's) for target (a peer's key). */
struct hop {
	struct hop *next;
	uint8_t prev[ATTEST_DIGEST_LEN];
	uint8_t target[SIGKEY_PUBLIC_LEN];
	bool pending, have;
	struct sig_set *set;            /* a set's (a reference): its names are sent when signed */
	struct attest_wire w;
	Nbrp__Attestation pb;
	uint8_t len;
	uint8_t wire[];                 /* the RIB key of the name */
};

/* Our origin attestation for a content name or an aggregate of ours (its RIB key). */
struct origin {
	struct origin *next;
	uint8_t len;
	uint8_t wire[NAME_MAX_WIRE];
	struct attest_wire w;
	Nbrp__Attestation pb, *ptr;
	uint32_t version;               /* an aggregate's: the version and members signed */
	uint8_t digest[ATTEST_DIGEST_LEN];
	struct ip_endpoint source;      /* ... and its transfer source (transfer-listen) */
	uint64_t seq;                   /* the origin_seq signed: the name's announcement's */
};

/*
 * An aggregate's version stored here as the stage sees it (the RDE's is
 * struct rde_agg): the member digest its routes' origins sign, what valid
 * routes said of it, and its members an origin may not originate.
 */
struct sig_agg {
	struct agg_node n;                      /* first: by name (agg_table.h) */
	uint32_t version;                       /* the version stored the rest is of */
	bool has_digest;                        /* digest is of that version's members */
	bool verified;                          /* a valid route signed that digest for that version */
	bool distrust;                          /* one signed another and none this: fetched whole at the flush */
	uint8_t digest[ATTEST_DIGEST_LEN];      /* attest_member_digest: what its origin attestation covers */
	/* members of that version that auth_key may not originate, under trust file auth_gen (0: none counted) */
	uint64_t auth_gen;
	uint32_t auth_version, unauthorised;
	uint8_t auth_key[SIGKEY_PUBLIC_LEN];
	uint8_t unauth_len;                     /* the first of them */
	uint8_t unauth_wire[NAME_MAX_WIRE];
	uint64_t unsigned_sources;              /* good chains whose peer named another source than the signed one */
};

struct sig_table {
	void **b;                       /* struct hop * or struct origin *, chained by their first member */
	size_t nb, n, sweep;
};

/* Hop signatures asked for this loop turn, and one batch of them with the workers. */
struct sign_run {
	struct attest_sign_batch b;
	struct rdesig *s;
	struct hop **hops;
};

/* A peer as the stage sees it: its queue, its budget, what its routes' checks found. */
struct rdesig_peer {
	struct rdesig *s;
	struct rde_peer *p;             /* NULL once removed */
	struct rdesig_peer *next;       /* every peer */
	struct chain_node hlink;        /* by p, while it has one */
	uint32_t refs;                  /* the session layer's, and its UPDATEs' with the workers */
	struct sig_upd *q, **q_tail;    /* UPDATEs waiting for their checks, in order */
	uint32_t q_len;
	bool sweep_owed;                /* its END-OF-RIB came with UPDATEs in q: swept after them */
	uint32_t hops_pending;          /* our hop signatures for it being made: its END-OF-RIB waits */
	uint64_t state[ATTEST_PENDING]; /* routes received, by state */
	uint64_t invalid[ATTEST_REASONS];       /* invalid routes received, by reason */
	uint64_t log_ms;
	unsigned logged;                /* lines logged since log_ms */
	uint64_t owd_forged;            /* its signed origin withdrawals that did not check (not applied) */
	uint64_t owd_forged_log_ms;
	/* its budget: a fair share of the workers and of each loop turn */
	struct sigpool_flow flow;       /* its verifications with the workers */
	uint32_t good, bad;             /* routes valid and invalid lately: its weight */
	uint64_t turn;                  /* the loop turn turn_ns counts */
	uint64_t turn_ns;               /* loop time its checks took in that turn */
	uint64_t turn_bytes;            /* ... and bytes of its UPDATEs */
	uint64_t loop_ns;               /* ... in all */
	uint64_t verified, failed;      /* signatures verified for it; routes they failed */
	uint64_t throttled;             /* turns its reading stopped at its budget */
};

struct rdesig {
	struct rde *rde;
	struct rde_signer signer;       /* the hooks the RDE calls */
	struct rdesig_peer *peers;
	struct chain_table by_peer;     /* by the RDE's peer */
	struct agg_table aggs;          /* struct sig_agg, by the aggregate's name */
	bool *verdicts;                 /* scratch for rde_checks: refused, then withdrawal_ok */
	size_t verdicts_cap;
	struct sigkey key;
	struct trust trust;
	bool have_trust;
	struct attest_verifier v;
	struct sigpool pool;
	uv_timer_t poll;                /* the trust file's modification time; the caches' sweep */
	uv_timer_t kick;                /* submits the hop signatures asked for this turn */
	uv_timer_t recheck;             /* a new trust file: stored routes checked again, a slice a turn */
	struct rib_cursor recheck_cur;
	bool rechecking;
	uint64_t next_expiry;           /* the earliest expiry of a stored chain: checked again then */
	uint64_t rechecked;
	struct sig_table hops, origins;
	struct fresh_table fresh;       /* the newest origin_seq per (name, origin key) */
	struct refused refused;         /* names refused for their signatures, for show route */
	struct hop **asked;
	size_t nasked, asked_cap;
	uint64_t signed_hops, signed_origins, signed_withdrawals;
	uint64_t chain_bytes;           /* kept chains (and sets' names) */
	struct own_set *own;            /* our content names' sets, by the hash of a name */
	size_t nown;                    /* a power of two, or 0 */
	struct stat seen;               /* of the trust file last read (or tried) */
	uint64_t trust_gen;             /* counts the trust data changes: files installed, the one in force ended */
	uint64_t stale_verdicts;        /* checks finished under trust data replaced meanwhile: done again */
	uint64_t serial_floor;          /* the highest serial installed, kept in the state-dir across restarts */
	uint64_t trust_refused[TRUST_REFUSALS];
	bool trust_warned;              /* of the one in force: its end is near */
	bool trust_expired;             /* ... has passed: routes checked again then */
	uint64_t trust_not_yet;         /* a file refused as not valid yet: read again from then (0: none) */
	uint64_t turn;                  /* loop turns: a peer's budget is a turn's */
	bool stopping;
};

/* An UPDATE waiting for its checks: a copy, and one job per Route once prepared. */
struct sig_upd {
	struct sig_upd *next;
	struct rdesig_peer *sp;         /* a reference */
	Nbrp__Update *u;
	struct attest_job *jobs;        /* NULL: out of memory for them (dropped) */
	struct attest_batch b;
	uint64_t gen;                   /* the trust data its jobs were prepared under (trust_gen) */
	bool running;                   /* its batch is with the workers */
	bool dead;                      /* its session ended while its batch ran */
};

static uint64_t unix_now(void)
{
	return (uint64_t)time(NULL);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#define RECHECK_BUDGET  2048    /* entries a loop turn */

/* One route checked again whose signatures must be verified again (a key changed). */
struct recheck_item {
	char peer[NBRP_ROUTER_NAME_MAX + 1];
	uint8_t len;
	uint8_t wire[NAME_MAX_WIRE];
	struct rib_attrs *a;            /* a reference: applied only if the route still has it */
};

struct recheck_run {
	struct attest_batch b;
	uint64_t gen;                   /* prepared under (trust_gen): a newer walk supersedes it */
	struct rdesig *s;
	struct recheck_item *items;
	size_t n, cap, jobs_cap;
};

static void recheck_start(struct rdesig *s);
static void own_build(struct rdesig *s);

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

const char *rdesig_trust_refusal_name(enum rdesig_trust_refusal r)
{
	static const char *const names[TRUST_REFUSALS] = { "bad", "not newer", "not yet valid", "expired" };
	return r < TRUST_REFUSALS ? names[r] : "?";
}

static void utc_text(uint64_t t, char buf[32])
{
	time_t tt = (time_t)t;
	struct tm tm;
	buf[0] = 0;
	if (gmtime_r(&tt, &tm))
		strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/*
 * Whether t may replace the trust file in force: it must be valid now and
 * newer (a larger serial), so that an old file, with keys revoked since,
 * never comes back, and an expired or future one never makes every route
 * unverified.  Returns TRUST_REFUSALS to install it.
 */
static enum rdesig_trust_refusal trust_acceptable(const struct rdesig *s, const struct trust *t, uint64_t now)
{
	if (now < t->valid_from)
		return TRUST_REFUSED_NOT_YET;
	if (now > t->valid_until)
		return TRUST_REFUSED_EXPIRED;
	if (s->have_trust && t->serial <= s->trust.serial)
		return TRUST_REFUSED_OLDER;
	if (t->serial < s->serial_floor)
		return TRUST_REFUSED_OLDER;     /* older than one installed before a restart */
	return TRUST_REFUSALS;
}

/* The serial installed kept in the state-dir (if any), so that a restart does not take back an older file. */
static void serial_floor_raise(struct rdesig *s)
{
	const char *dir = s->rde->cfg->state_dir;
	char err[PATH_MAX + 64];
	if (!dir || s->trust.serial <= s->serial_floor)
		return;
	if (trust_serial_save(dir, s->trust.serial, err, sizeof(err)) < 0) {
		log_err("signatures: keeping trust serial %llu: %s; a restart may take an older file",
			(unsigned long long)s->trust.serial, err);
		return;
	}
	s->serial_floor = s->trust.serial;
}

/* Reads the trust file; a good one replaces the one in force, any other is logged, counted and changes nothing. */
static void read_trust(struct rdesig *s, bool verbose)
{
	const struct nbrpd_config *cfg = s->rde->cfg;
	if (!cfg->trust_file || !cfg->has_trust_anchor)
		return;
	if (stat(cfg->trust_file, &s->seen) < 0)
		memset(&s->seen, 0, sizeof(s->seen));
	struct trust t;
	char err[512];
	const char *keeping = s->have_trust ? "keeping the trust data in force"
			      : "routes are unverified until it can be read";
	if (trust_read(cfg->trust_file, cfg->trust_anchor, &t, err, sizeof(err)) < 0) {
		s->trust_refused[TRUST_REFUSED_BAD]++;
		s->trust_not_yet = 0;
		log_err("signatures: %s: %s", err, keeping);
		return;
	}
	if (s->have_trust && trust_equal(&t, &s->trust)) {
		/* read again (a reload, a touch): nothing new */
		if (verbose)
			log_info("signatures: %s read: %zu routers, %zu origins; serial %llu, in force already",
				 cfg->trust_file, t.n_routers, t.n_origins, (unsigned long long)t.serial);
		trust_free(&t);
		return;
	}
	uint64_t now = unix_now();
	enum rdesig_trust_refusal why = trust_acceptable(s, &t, now);
	if (why != TRUST_REFUSALS) {
		char from[32], until[32];
		utc_text(t.valid_from, from);
		utc_text(t.valid_until, until);
		s->trust_refused[why]++;
		s->trust_not_yet = why == TRUST_REFUSED_NOT_YET ? t.valid_from : 0;
		if (why == TRUST_REFUSED_OLDER && !s->have_trust)
			log_err("signatures: %s: serial %llu is lower than %llu, the highest installed before "
				"(%s/" TRUST_SERIAL_FILE "; refused: not newer); %s", cfg->trust_file,
				(unsigned long long)t.serial, (unsigned long long)s->serial_floor, cfg->state_dir,
				keeping);
		else if (why == TRUST_REFUSED_OLDER)
			log_err("signatures: %s: serial %llu is not larger than %llu, the file in force's "
				"(refused: not newer); %s", cfg->trust_file, (unsigned long long)t.serial,
				(unsigned long long)s->trust.serial, keeping);
		else
			log_err("signatures: %s: valid from %s until %s, not now (refused: %s); %s", cfg->trust_file,
				from, until, rdesig_trust_refusal_name(why), keeping);
		trust_free(&t);
		return;
	}
	if (s->have_trust)
		trust_free(&s->trust);
	s->trust = t;
	s->have_trust = true;
	s->trust_gen++;
	s->trust_warned = s->trust_expired = false;
	s->trust_not_yet = 0;
	attest_verifier_set_trust(&s->v, &s->trust);   /* the cache stays: its links name their keys */
	serial_floor_raise(s);
	recheck_start(s);
	own_build(s);           /* which of our names we may originate may have changed */
	if (s->rde->ops.trust_changed)
		s->rde->ops.trust_changed(s->rde->ops.arg);
	if (verbose)
		log_info("signatures: %s read: %zu routers, %zu origins; serial %llu", cfg->trust_file,
			 t.n_routers, t.n_origins, (unsigned long long)t.serial);
}

/* The trust file in force near or past its end: a warning well before, every route checked again after. */
static void trust_watch(struct rdesig *s, uint64_t now)
{
	if (!s->have_trust)
		return;
	char until[32];
	utc_text(s->trust.valid_until, until);
	if (!s->trust_warned && now + TRUST_WARN_S > s->trust.valid_until) {
		s->trust_warned = true;
		log_warn("signatures: the trust file in force (serial %llu) expires at %s: a newer one is needed "
			 "before then", (unsigned long long)s->trust.serial, until);
	}
	if (!s->trust_expired && now > s->trust.valid_until) {
		s->trust_expired = true;
		log_err("signatures: the trust file in force (serial %llu) expired at %s: every route is "
			"unverified until a newer one is read", (unsigned long long)s->trust.serial, until);
		s->trust_gen++;
		recheck_start(s);
		if (s->rde->ops.trust_changed)
			s->rde->ops.trust_changed(s->rde->ops.arg);
	}
}

static void sweep(struct rdesig *s);
static void table_free(struct rdesig *s, struct sig_table *t);
static void on_kick(uv_timer_t *t);

static void on_poll(uv_timer_t *h)
{
	struct rdesig *s = h->data;
	sweep(s);
	trust_watch(s, unix_now());
	if (!s->rechecking && s->next_expiry < unix_now())
		recheck_start(s);       /* a chain expired (valid up to its expiry second): checked again */
	struct stat st;
	const char *path = s->rde->cfg->trust_file;
	if (!path)
		return;
	if (stat(path, &st) < 0)
		memset(&st, 0, sizeof(st));
	if (!same_file(&st, &s->seen) || (s->trust_not_yet && unix_now() >= s->trust_not_yet))
		read_trust(s, true);
}

void rdesig_reload(struct rdesig *s)
{
	const struct nbrpd_config *cfg = s->rde->cfg;
	s->v.min_lifetime = cfg->signature_min_lifetime_s;
	read_trust(s, true);
	own_build(s);           /* the configuration's content names */
	uv_timer_set_repeat(&s->poll, cfg->trust_poll_ms);
}

static void *signer_export_peer(void *arg, struct rde_peer *to);
static int signer_export(void *peer, const struct rib_entry *e, const struct rib_attrs *a,
			 Nbrp__Attestation **out, size_t max, uint64_t *seq, const uint8_t **digest);
static const struct sig_set *signer_set_of(void *arg, const struct rib_entry *e, const struct rib_attrs *a);
static bool signer_export_pending(void *arg, const struct rde_peer *p);
static bool signer_sign_withdrawal(void *arg, const uint8_t *wire, size_t len, uint64_t seq,
				   struct origin_wd_sig *out);
static void signer_withdrawn(void *arg, const uint8_t *wire, size_t len, const uint8_t *key, uint64_t seq,
			     uint64_t until);
static bool signer_aggregate_stored(void *arg, const uint8_t *agg, size_t len, uint32_t version,
				    const struct nameset *members, struct rib_entry *e);
static enum agg_signed signer_aggregate_signed(void *arg, const uint8_t *agg, size_t len);
static void signer_aggregate_dropped(void *arg, const uint8_t *agg, size_t len);
static void signer_turn(void *arg);

struct rdesig *rdesig_new(uv_loop_t *loop, struct rde *r, const struct sigkey *key, char *err, size_t err_len)
{
	const struct nbrpd_config *cfg = r->cfg;
	struct rdesig *s = calloc(1, sizeof(*s));
	if (!s || attest_verifier_init(&s->v, key->pk, cfg->signature_cache) < 0) {
		free(s);
		snprintf(err, err_len, "signatures: out of memory for %llu cache entries",
			 (unsigned long long)cfg->signature_cache);
		return NULL;
	}
	if (sigpool_init(&s->pool, loop, cfg->signature_workers) < 0) {
		attest_verifier_free(&s->v);
		free(s);
		snprintf(err, err_len, "signatures: cannot start %u worker threads", cfg->signature_workers);
		return NULL;
	}
	s->rde = r;
	s->signer = (struct rde_signer){
		.arg = s, .chain_bytes = &s->chain_bytes, .export_peer = signer_export_peer,
		.export = signer_export, .set_of = signer_set_of, .export_pending = signer_export_pending,
		.sign_withdrawal = signer_sign_withdrawal, .withdrawn = signer_withdrawn,
		.aggregate_stored = signer_aggregate_stored, .aggregate_signed = signer_aggregate_signed,
		.aggregate_dropped = signer_aggregate_dropped, .turn = signer_turn,
	};
	s->key = *key;
	s->next_expiry = UINT64_MAX;
	(void)agg_table_init(&s->aggs, sizeof(struct sig_agg));        /* else grown at the first (or failing then) */
	if (refused_init(&s->refused, REFUSED_KEPT) < 0)
		log_err("signatures: out of memory for the table of refused routes: show route will not say why");
	s->v.min_lifetime = cfg->signature_min_lifetime_s;
	attest_verifier_set_trust(&s->v, NULL);
	if (cfg->state_dir && trust_serial_load(cfg->state_dir, &s->serial_floor, err, err_len) < 0)
		log_err("signatures: %s: any trust file valid now is taken", err);
	read_trust(s, false);
	uv_timer_init(loop, &s->poll);
	s->poll.data = s;
	uv_timer_init(loop, &s->kick);
	s->kick.data = s;
	uv_timer_init(loop, &s->recheck);
	s->recheck.data = s;
	uv_timer_start(&s->poll, on_poll, cfg->trust_poll_ms, cfg->trust_poll_ms);
	return s;
}

const struct rde_signer *rdesig_signer(struct rdesig *s)
{
	return &s->signer;
}

const uint8_t *rdesig_router_key(const struct rdesig *s, const char *name)
{
	if (!s || !s->have_trust || s->trust_expired)
		return NULL;
	return trust_router_key(&s->trust, name, strlen(name));
}

void rdesig_stats(const struct rdesig *s, struct rdesig_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!s)
		return;
	out->on = true;
	out->trust = s->have_trust;
	out->verified = s->v.verified;
	out->cache_hits = s->v.cache.hits;
	out->cache_misses = s->v.cache.misses;
	out->bad_cached = s->v.bad_hits;
	out->signed_hops = s->signed_hops;
	out->signed_origins = s->signed_origins;
	out->signed_withdrawals = s->signed_withdrawals;
	out->hops_kept = s->hops.n;
	out->rechecked = s->rechecked;
	out->stale_verdicts = s->stale_verdicts;
	out->chain_bytes = s->chain_bytes;
	out->fresh_kept = s->fresh.n;
	out->trust_serial = s->have_trust ? s->trust.serial : 0;
	out->trust_valid_until = s->have_trust ? s->trust.valid_until : 0;
	out->trust_expiring = s->trust_warned;
	out->trust_refused = s->trust_refused;
}

void rdesig_stop(struct rdesig *s)
{
	if (!s)
		return;
	s->stopping = true;
	uv_close((uv_handle_t *)&s->poll, NULL);
	uv_close((uv_handle_t *)&s->kick, NULL);
	uv_close((uv_handle_t *)&s->recheck, NULL);
	sigpool_close(&s->pool);        /* owed callbacks run, and free what they carry */
}

void rdesig_free(struct rdesig *s)
{
	if (!s)
		return;
	attest_verifier_free(&s->v);
	table_free(s, &s->hops);
	table_free(s, &s->origins);
	fresh_free(&s->fresh);
	refused_free(&s->refused);
	for (size_t b = 0; b < s->nown; b++)
		sig_set_release(s->own[b].set);
	free(s->own);
	free(s->asked);
	for (struct rdesig_peer *sp = s->peers, *n; sp; sp = n) {
		n = sp->next;
		free(sp);
	}
	chain_free(&s->by_peer);
	agg_table_free(&s->aggs);
	free(s->verdicts);
	if (s->have_trust)
		trust_free(&s->trust);
	sigkey_wipe(&s->key);
	free(s);
}

/* ---- peers ---- */

static uint64_t peer_hash(const struct rde_peer *p)
{
	return ((uintptr_t)p >> 4) * 0x9e3779b97f4a7c15ull >> 32;
}

/* The stage's view of an RDE peer (NULL: removed). */
static struct rdesig_peer *peer_of(const struct rdesig *s, const struct rde_peer *p)
{
	uint64_t h = peer_hash(p);
	for (struct chain_node *n = chain_first(&s->by_peer, h); n; n = n->next) {
		struct rdesig_peer *sp = chain_entry(n, struct rdesig_peer, hlink);
		if (sp->p == p)
			return sp;
	}
	return NULL;
}

struct rdesig_peer *rdesig_peer_add(struct rdesig *s, struct rde_peer *p, enum sig_policy sig)
{
	struct rdesig_peer *sp = calloc(1, sizeof(*sp));
	if (!sp)
		return NULL;
	if (chain_add(&s->by_peer, &sp->hlink, peer_hash(p)) < 0) {
		free(sp);
		return NULL;
	}
	sp->s = s;
	sp->p = p;
	sp->refs = 1;
	sp->q_tail = &sp->q;
	sp->next = s->peers;
	s->peers = sp;
	rde_peer_set_signatures(p, sig);
	return sp;
}

void rdesig_peer_configure(struct rdesig_peer *sp, enum sig_policy sig)
{
	rde_peer_set_signatures(sp->p, sig);
}

static void peer_put(struct rdesig_peer *sp)
{
	if (--sp->refs)
		return;
	struct rdesig *s = sp->s;
	for (struct rdesig_peer **pp = &s->peers; *pp; pp = &(*pp)->next)
		if (*pp == sp) {
			*pp = sp->next;
			break;
		}
	free(sp);
}

void rdesig_peer_remove(struct rdesig_peer *sp)
{
	rdesig_peer_down(sp);
	chain_remove(&sp->s->by_peer, &sp->hlink);
	sp->p = NULL;
	peer_put(sp);
}

void rdesig_peer_up(struct rdesig_peer *sp)
{
	sp->hops_pending = 0;   /* those asked for its last session are sent to nobody */
}

/* ---- a route's check applied ---- */

static void note_refused(struct rdesig *s, const struct rde_peer *p, const struct attest_job *j,
			 const uint8_t *wire, size_t len)
{
	struct name n;
	if (name_from_wire(&n, wire, len) == NAME_OK)
		refused_note(&s->refused, &n, p->name, (uint8_t)j->state, (uint8_t)j->reason, unix_now());
}

static void forget_refused(struct rdesig *s, const struct rde_peer *p, const uint8_t *wire, size_t len)
{
	struct name n;
	if (s->refused.used && name_from_wire(&n, wire, len) == NAME_OK)
		refused_forget(&s->refused, &n, p->name);
}

unsigned rdesig_refused(const struct rdesig *s, const struct name *n, struct refused_entry *out)
{
	return s ? refused_find(&s->refused, n, out) : 0;
}

/*
 * Routes of a peer lately verified valid on the workers, and refused for a
 * bad signature (there, or a failed link seen before): a peer whose routes
 * fail more than they verify gets the low weight.  Chains verified before
 * count neither way: they cost nothing.
 */
static void recent(struct rdesig_peer *sp, uint32_t good, uint32_t bad)
{
	sp->good += good;
	sp->bad += bad;
	if (sp->good + sp->bad >= RECENT_ROUTES) {
		sp->good /= 2;
		sp->bad /= 2;
	}
}

/*
 * Whether a route with this check is imported (require: valid only); counts
 * it, and logs a refusal with its first name (and how many more it had).
 */
static bool route_accepted(struct rdesig_peer *sp, const struct attest_job *j, const struct name *first, size_t more)
{
	const struct rde_peer *p = sp->p;
	if (j->state >= ATTEST_PENDING)
		return false;           /* not reached: every job is final when applied */
	sp->state[j->state]++;
	if (j->state == ATTEST_INVALID)
		sp->invalid[j->reason]++;
	if (j->state == ATTEST_INVALID && j->reason == ATTEST_BAD_SIGNATURE)
		recent(sp, 0, 1);
	if (p->sig != SIG_REQUIRE || j->state == ATTEST_VALID)
		return true;
	uint64_t now = uv_now(p->rde->loop);
	if (now - sp->log_ms >= 1000) {
		if (sp->logged > SIG_LOG_PER_S)
			log_warn("peer %s: %u more routes rejected for their signatures", p->name,
				 sp->logged - SIG_LOG_PER_S);
		sp->log_ms = now;
		sp->logged = 0;
	}
	if (sp->logged++ < SIG_LOG_PER_S) {
		char name[NAME_MAX_TEXT] = "?", and[48] = "";
		if (first)
			name_to_text(first, name, sizeof(name));
		if (more)
			snprintf(and, sizeof(and), " (and %zu more names)", more);
		log_warn("peer %s: route for %s%s rejected: %s%s%s", p->name, name, and, attest_state_name(j->state),
			 j->state == ATTEST_INVALID ? ": " : "",
			 j->state == ATTEST_INVALID ? attest_reason_name(j->reason) : "");
	}
	return false;
}

/* A stored route with check j done again: kept with its new state, or withdrawn (require). */
static void route_checked(struct rdesig *s, struct rib_entry *e, struct rib_route *rt, const struct attest_job *j)
{
	if (!rde_route_recheck_changes(rt, j))
		return;                 /* as it was */
	struct rdesig_peer *sp = peer_of(s, rt->a->k.peer);
	struct name n;
	rib_entry_name(e, &n);
	bool keep = sp ? route_accepted(sp, j, &n, 0) : true;
	if (!keep)
		note_refused(s, rt->a->k.peer, j, n.wire, n.len);
	rde_route_recheck(s->rde, e, rt, j, keep);
}

/*
 * A signed origin withdrawal from sp, checked as an origin attestation is
 * (the trust file, its expiry, its signature): false: refused, counted and
 * logged.
 */
static bool withdrawal_check(struct rdesig_peer *sp, const Nbrp__OriginWithdrawal *w)
{
	struct rdesig *s = sp->s;
	enum attest_reason why = attest_withdrawal_check(&s->v, w, unix_now());
	if (why == ATTEST_OK)
		return true;
	sp->owd_forged++;
	uint64_t now = uv_now(s->rde->loop);
	if (now - sp->owd_forged_log_ms >= 1000) {      /* a line a second: the counter has the rest */
		char name[NAME_MAX_TEXT] = "?";
		struct name n = { .len = (uint8_t)w->name.len };
		if (w->name.len <= NAME_MAX_WIRE) {
			memcpy(n.wire, w->name.data, w->name.len);
			name_to_text(&n, name, sizeof(name));
		}
		log_warn("peer %s: signed origin withdrawal of %s (stamp %llu) refused: %s (%llu so far)", sp->p->name,
			 name, (unsigned long long)w->origin_seq, attest_reason_name(why),
			 (unsigned long long)sp->owd_forged);
		sp->owd_forged_log_ms = now;
	}
	return false;
}

static void members_check(struct rdesig *s, const struct rde_peer *p, const uint8_t *agg, size_t len,
			  uint64_t version, const ProtobufCBinaryData *digest, Nbrp__Attestation *const *att,
			  size_t n_att, struct attest_job *j);
static void unsigned_source(struct rdesig *s, const struct rde_peer *p, const Nbrp__Route *rt);

static void fresh_route(struct rdesig *s, struct rde_peer *p, const Nbrp__Route *rt, struct attest_job *j);

/*
 * u, from sp, to the RDE, once: with each Route's final check (jobs; NULL:
 * its signatures are off), whether it is refused for it, and each signed
 * origin withdrawal's check.
 */
static void hand_over(struct rdesig_peer *sp, const Nbrp__Update *u, struct attest_job *jobs)
{
	struct rdesig *s = sp->s;
	struct rde_peer *p = sp->p;
	size_t n = u->n_routes + u->n_origin_withdrawals;
	if (VEC_RESERVE(s->verdicts, s->verdicts_cap, n) < 0) {
		log_err("peer %s: out of memory for the checks of an UPDATE: dropped", p->name);
		return;
	}
	if (n)
		memset(s->verdicts, 0, n * sizeof(*s->verdicts));
	bool *refused = s->verdicts, *withdrawal_ok = s->verdicts + u->n_routes;
	for (size_t i = 0; i < u->n_origin_withdrawals; i++) {
		const Nbrp__OriginWithdrawal *w = u->origin_withdrawals[i];
		if (!nbrp_name_valid(&w->name) || !nbrp_router_name_valid(w->origin))
			break;          /* the RDE ends the session there */
		withdrawal_ok[i] = !attest_withdrawal_signed(w) || withdrawal_check(sp, w);
	}
	for (size_t i = 0; jobs && i < u->n_routes; i++) {
		const Nbrp__Route *rt = u->routes[i];
		if (rt->aggregate.len)
			members_check(s, p, rt->aggregate.data, rt->aggregate.len, rt->aggregate_version,
				      &rt->aggregate_digest, rt->attestations, rt->n_attestations, &jobs[i]);
		else
			fresh_route(s, p, rt, &jobs[i]);
	}
	for (size_t i = 0; jobs && i < u->n_routes; i++) {
		const Nbrp__Route *rt = u->routes[i];
		const char *why;
		if (decide_import(rt, p->server_mode, p->rde->cfg->router_name, &why) != IMPORT_OK)
			continue;       /* malformed or a loop: the RDE says so */
		if (jobs[i].reason == ATTEST_UNSIGNED_SOURCE)
			unsigned_source(s, p, rt);
		struct name first = { .len = 0 };
		const ProtobufCBinaryData *n0 = rt->aggregate.len ? &rt->aggregate : rt->n_names ? &rt->names[0] : NULL;
		if (n0 && name_from_wire(&first, n0->data, n0->len) != NAME_OK)
			first.len = 0;
		refused[i] = !route_accepted(sp, &jobs[i], first.len ? &first : NULL,
					     rt->n_names > 1 && !rt->aggregate.len ? rt->n_names - 1 : 0);
		if (jobs[i].state == ATTEST_VALID && jobs[i].expiry < s->next_expiry)
			s->next_expiry = jobs[i].expiry;        /* its chain, kept, is checked again then */
		/* show route says why while it is refused, and no more once the peer's route is taken */
		for (size_t k = 0; k < rt->n_names; k++)
			if (refused[i])
				note_refused(s, p, &jobs[i], rt->names[k].data, rt->names[k].len);
			else
				forget_refused(s, p, rt->names[k].data, rt->names[k].len);
	}
	struct rde_checks c = { .routes = jobs, .refused = refused, .withdrawal_ok = withdrawal_ok };
	rde_peer_update(p, u, &c);
}

/* ---- the queue ---- */

static void upd_free(struct sig_upd *q)
{
	if (q->jobs) {
		size_t n = q->u->n_routes;
		for (size_t i = 0; i < n; i++)
			attest_job_drop(&q->jobs[i]);
		free(q->jobs);
	}
	nbrp__update__free_unpacked(q->u, NULL);
	struct rdesig_peer *sp = q->sp;
	free(q);
	peer_put(sp);
}

/* Prepares every Route; true when some have signatures left to verify. */
static bool prepare(struct rdesig *s, const struct rde_peer *p, const Nbrp__Update *u, struct attest_job *jobs)
{
	uint64_t now = unix_now();
	bool pending = false;
	for (size_t i = 0; i < u->n_routes; i++)
		pending |= attest_prepare_flags(&s->v, u->routes[i], p->name, p->server_mode ? ATTEST_SERVER : 0,
						now, &jobs[i]) == ATTEST_PENDING;
	return pending;
}

static void drain(struct rdesig_peer *sp);

static void on_checked(struct attest_batch *b)
{
	struct sig_upd *q = b->arg;
	struct rdesig_peer *sp = q->sp;
	q->running = false;
	uint32_t valid = 0;
	for (size_t i = 0; i < b->n; i++) {
		sp->failed += b->jobs[i].state == ATTEST_INVALID && b->jobs[i].reason == ATTEST_BAD_SIGNATURE;
		valid += b->jobs[i].state == ATTEST_VALID;
	}
	recent(sp, valid, 0);   /* failures when applied, with those failed before the workers */
	if (q->dead || sp->s->stopping) {
		upd_free(q);
		return;
	}
	drain(sp);
}

static unsigned peer_weight(const struct rdesig_peer *sp)
{
	return sp->bad > sp->good ? WEIGHT_BAD : WEIGHT_GOOD;
}

static bool over_budget(const struct rdesig *s, const struct rdesig_peer *sp)
{
	return sp->turn == s->turn && (sp->turn_ns >= (uint64_t)peer_weight(sp) * TURN_NS ||
					sp->turn_bytes >= (uint64_t)peer_weight(sp) * TURN_BYTES);
}

/*
 * Loop time since t0 spent on sp's checks, and bytes of an UPDATE of it:
 * at its turn's budget its session stops reading until the next.
 */
static void charge(struct rdesig *s, struct rdesig_peer *sp, uint64_t t0, size_t bytes)
{
	uint64_t ns = mono_ns() - t0;
	bool was = over_budget(s, sp);
	if (sp->turn != s->turn) {
		sp->turn = s->turn;
		sp->turn_ns = sp->turn_bytes = 0;
	}
	sp->turn_ns += ns;
	sp->turn_bytes += bytes;
	sp->loop_ns += ns;
	if (!was && over_budget(s, sp)) {
		sp->throttled++;
		rde_input_resume(s->rde);       /* read again next turn */
	}
}

static void signer_turn(void *arg)
{
	struct rdesig *s = arg;
	s->turn++;
}

static void submit(struct rdesig *s, struct sig_upd *q)
{
	struct rdesig_peer *sp = q->sp;
	memset(&q->b, 0, sizeof(q->b));
	q->b.pool.flow = &sp->flow;
	sigpool_flow_weight(&s->pool, &sp->flow, peer_weight(sp));
	for (size_t i = 0; i < q->u->n_routes; i++)
		if (q->jobs[i].state == ATTEST_PENDING)
			sp->verified += q->jobs[i].n_checks;
	q->b.v = &s->v;
	q->b.jobs = q->jobs;
	q->b.n = q->u->n_routes;
	q->b.now = unix_now();
	q->b.done = on_checked;
	q->b.arg = q;
	q->running = true;
	q->gen = s->trust_gen;
	attest_batch_submit(&s->pool, &q->b);
}

/*
 * q's verdicts were reached under trust data replaced while it waited (an
 * origin authorised then, a router key since changed): not applied but
 * prepared again under the data in force.  What verified stays cached (the
 * links name their keys), so this costs lookups, and crypto only for what
 * the new file asks that the old did not.
 */
static void upd_unprepare(struct rdesig *s, struct sig_upd *q)
{
	for (size_t i = 0; i < q->u->n_routes; i++)
		attest_job_drop(&q->jobs[i]);
	free(q->jobs);
	q->jobs = NULL;
	s->stale_verdicts++;
}

/* Applies the waiting UPDATEs in order, up to the first still with the workers. */
static void drain(struct rdesig_peer *sp)
{
	struct rdesig *s = sp->s;
	struct rde_peer *p = sp->p;
	struct sig_upd *q;
	uint64_t t0 = mono_ns();
	while ((q = sp->q) && !q->running) {
		if (q->jobs && q->gen != s->trust_gen) {
			upd_unprepare(s, q);
			q->jobs = calloc(q->u->n_routes ? q->u->n_routes : 1, sizeof(*q->jobs));
			if (!q->jobs) {
				log_err("peer %s: out of memory for the checks of an UPDATE: dropped", p->name);
			} else {
				q->gen = s->trust_gen;
				if (prepare(s, p, q->u, q->jobs)) {
					submit(s, q);
					break;
				}
			}
		}
		sp->q = q->next;
		sp->q_len--;
		if (!sp->q)
			sp->q_tail = &sp->q;
		if (q->jobs)
			hand_over(sp, q->u, q->jobs);
		upd_free(q);
	}
	if (!sp->q && sp->sweep_owed) {
		sp->sweep_owed = false;
		rde_peer_sweep(p);      /* its END-OF-RIB came after these */
	}
	charge(s, sp, t0, 0);
	rde_input_resume(s->rde);       /* its session may read again */
}

static struct sig_upd *enqueue(struct rdesig_peer *sp, const Nbrp__Update *u)
{
	struct sig_upd *q = calloc(1, sizeof(*q));
	size_t len = nbrp__update__get_packed_size(u);
	uint8_t *buf = q ? malloc(len ? len : 1) : NULL;
	if (buf) {
		nbrp__update__pack(u, buf);
		q->u = nbrp__update__unpack(NULL, len, buf);
		free(buf);
	}
	if (!q || !q->u) {
		free(q);
		return NULL;
	}
	q->sp = sp;
	sp->refs++;
	sp->q_len++;
	*sp->q_tail = q;
	sp->q_tail = &q->next;
	return q;
}

void rdesig_update(struct rdesig_peer *sp, const Nbrp__Update *u)
{
	struct rdesig *s = sp->s;
	struct rde_peer *p = sp->p;
	if (p->sig == SIG_OFF && !sp->q) {
		hand_over(sp, u, NULL);         /* only its origin withdrawals are checked */
		return;
	}
	if (sp->q) {
		/* checked now, applied after those before it */
		uint64_t t0 = mono_ns();
		struct sig_upd *q = enqueue(sp, u);
		if (!q)
			log_err("peer %s: out of memory for a waiting UPDATE: dropped", p->name);
		else if (!(q->jobs = calloc(u->n_routes ? u->n_routes : 1, sizeof(*q->jobs))))
			log_err("peer %s: out of memory for the checks of an UPDATE: dropped", p->name);
		else {
			q->gen = s->trust_gen;
			if (prepare(s, p, q->u, q->jobs))
				submit(s, q);
		}
		charge(s, sp, t0, nbrp__update__get_packed_size(u));
		return;
	}
	struct attest_job *jobs = calloc(u->n_routes ? u->n_routes : 1, sizeof(*jobs));
	if (!jobs) {
		log_err("peer %s: out of memory for the checks of an UPDATE: dropped", p->name);
		return;
	}
	uint64_t t0 = mono_ns();
	if (!prepare(s, p, u, jobs)) {
		hand_over(sp, u, jobs);
		free(jobs);
		charge(s, sp, t0, nbrp__update__get_packed_size(u));
		return;
	}
	struct sig_upd *q = enqueue(sp, u);
	if (!q) {
		log_err("peer %s: out of memory for a waiting UPDATE: dropped", p->name);
		for (size_t i = 0; i < u->n_routes; i++)
			attest_job_drop(&jobs[i]);
		free(jobs);
		return;
	}
	q->jobs = jobs;
	submit(s, q);
	charge(s, sp, t0, nbrp__update__get_packed_size(u));
}

void rdesig_peer_sweep(struct rdesig_peer *sp)
{
	if (sp->q)
		sp->sweep_owed = true;  /* after the UPDATEs it sent before */
	else
		rde_peer_sweep(sp->p);
}

void rdesig_peer_down(struct rdesig_peer *sp)
{
	struct sig_upd *q = sp->q;
	sp->q = NULL;
	sp->q_tail = &sp->q;
	sp->q_len = 0;
	sp->sweep_owed = false;
	if (!q)
		return;
	/* those with the workers: their callbacks free them */
	for (struct sig_upd *n; q; q = n) {
		n = q->next;
		if (q->running)
			q->dead = true;
		else
			upd_free(q);
	}
	rde_input_resume(sp->s->rde);
}

bool rdesig_peer_waiting(const struct rdesig_peer *sp)
{
	uint32_t depth = sp->good > sp->bad ? SIGQ_MAX : 1;
	return sp->q_len >= depth || over_budget(sp->s, sp);
}

void rdesig_peer_stats(const struct rdesig_peer *sp, struct rdesig_peer_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!sp)
		return;
	out->state = sp->state;
	out->invalid = sp->invalid;
	out->owd_forged = sp->owd_forged;
	out->verified = sp->verified;
	out->failed = sp->failed;
	out->queued = sp->q_len;
	out->loop_ns = sp->loop_ns;
	sigpool_flow_stats(&sp->s->pool, &sp->flow, &out->worker_items, &out->worker_ns);
	out->throttled = sp->throttled;
	out->weight = peer_weight(sp);
}

/* ---- our signatures: hops by (prev, target), origins by name ---- */

static size_t slot(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen, size_t nb)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < alen; i++)
		h = (h ^ a[i]) * 1099511628211ull;
	for (size_t i = 0; i < blen; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return (size_t)(h & (nb - 1));
}

static size_t hop_slot(const struct hop *h, size_t nb)
{
	/* keyed: a peer can grind the digests of the chains it sends us */
	uint8_t k[sizeof(h->prev) + sizeof(h->target)];
	memcpy(k, h->prev, sizeof(h->prev));
	memcpy(k + sizeof(h->prev), h->target, sizeof(h->target));
	return (size_t)hashkey64(k, sizeof(k)) & (nb - 1);
}

static size_t origin_slot(const uint8_t *wire, size_t len, size_t nb)
{
	return slot(wire, len, NULL, 0, nb);
}

/* Doubles t when full; entries are rehashed by slot_of. */
static void table_grow(struct sig_table *t, size_t (*slot_of)(void *e, size_t nb))
{
	if (t->nb && t->n < t->nb * 2)
		return;
	size_t nb = t->nb ? t->nb * 2 : 256;
	void **b = calloc(nb, sizeof(*b));
	if (!b)
		return;                 /* longer chains */
	for (size_t i = 0; i < t->nb; i++)
		for (void *e = t->b[i], *n; e; e = n) {
			n = *(void **)e;
			size_t k = slot_of(e, nb);
			*(void **)e = b[k];
			b[k] = e;
		}
	free(t->b);
	t->b = b;
	t->nb = nb;
	t->sweep = 0;
}

static size_t hop_slot_of(void *e, size_t nb)
{
	return hop_slot(e, nb);
}

static size_t origin_slot_of(void *e, size_t nb)
{
	struct origin *o = e;
	return origin_slot(o->wire, o->len, nb);
}

static struct hop *hop_get(struct rdesig *s, const uint8_t *prev, const uint8_t *target,
			   const struct rib_entry *e)
{
	if (!s->hops.nb)
		table_grow(&s->hops, hop_slot_of);
	if (!s->hops.nb)
		return NULL;
	struct hop key;
	memcpy(key.prev, prev, sizeof(key.prev));
	memcpy(key.target, target, sizeof(key.target));
	size_t k = hop_slot(&key, s->hops.nb);
	for (struct hop *h = s->hops.b[k]; h; h = h->next)
		if (memcmp(h->prev, prev, sizeof(h->prev)) == 0 && memcmp(h->target, target, sizeof(h->target)) == 0)
			return h;
	struct hop *h = calloc(1, sizeof(*h) + e->len);
	if (!h)
		return NULL;
	h->len = e->len;
	memcpy(h->wire, e->wire, e->len);
	table_grow(&s->hops, hop_slot_of);     /* never during a sweep: only exports add */
	k = hop_slot(&key, s->hops.nb);
	memcpy(h->prev, prev, sizeof(h->prev));
	memcpy(h->target, target, sizeof(h->target));
	h->next = s->hops.b[k];
	s->hops.b[k] = h;
	s->hops.n++;
	return h;
}

/* The set of our content names that holds this one, or NULL (signed alone). */
static struct own_set *own_of(struct rdesig *s, const uint8_t *wire, size_t len)
{
	if (!s->nown)
		return NULL;
	struct own_set *o = &s->own[slot(wire, len, NULL, 0, s->nown)];
	return o->set && sig_set_find(o->set, wire, len) >= 0 ? o : NULL;
}

/* Our origin attestation over a set, signed on the loop once per period and membership. */
static void own_sign(struct rdesig *s, struct own_set *o, uint64_t now)
{
	if (o->w.expiry && o->w.expiry > now + SIG_RENEW)
		return;
	/* a new stamp: newer than each of its names' announcements, so older chains are stale */
	struct attest_subject sub = { .set = true, .seq = o->seq = rde_stamp(s->rde) };
	memcpy(sub.digest, o->set->digest, ATTEST_DIGEST_LEN);
	attest_sign_origin(&o->w, &s->key, s->key.pk, now, now + SIG_LIFETIME, &sub);
	attest_to_pb(&o->pb, &o->w);
	o->ptr = &o->pb;
	s->signed_origins++;
}

/*
 * Our content names (not aggregates) that the trust file lets us
 * originate into sets by the hash of a name: about OWN_SET_NAMES a set,
 * so a change of names re-signs only the sets whose names changed (and
 * all of them when the count of sets doubles or halves).  The others are
 * signed one by one (a set with a name the receiver finds us not
 * authorised for would be invalid whole), and so are the names of a set
 * over the limits of one.
 */
static void own_build(struct rdesig *s)
{
	const struct nbrpd_config *cfg = s->rde->cfg;
	size_t count = 0, nb = 1;
	for (unsigned i = 0; i < cfg->ncontent; i++)
		count += !cfg->content[i].aggregate;    /* at most */
	while (nb * OWN_SET_NAMES < count)
		nb <<= 1;
	ProtobufCBinaryData *v = malloc((count ? count : 1) * sizeof(*v));
	uint32_t *slot_of = malloc((count ? count : 1) * sizeof(*slot_of));
	struct own_set *own = nb == s->nown ? s->own : calloc(nb, sizeof(*own));
	if (!v || !slot_of || !own) {
		free(v);
		free(slot_of);
		if (own != s->own)
			free(own);
		log_err("signatures: out of memory for the sets of our names: they are signed one by one");
		return;
	}
	/* each set's names, by a counting sort on their slot */
	size_t *start = calloc(nb + 1, sizeof(*start));
	ProtobufCBinaryData *by = malloc((count ? count : 1) * sizeof(*by));
	size_t k = 0;
	for (unsigned i = 0; i < cfg->ncontent; i++) {
		const struct nbrpd_content *c = &cfg->content[i];
		if (c->aggregate || !s->have_trust ||
		    trust_origin_check(&s->trust, c->name.wire, c->name.len, s->key.pk) != TRUST_AUTHORISED)
			continue;
		v[k] = (ProtobufCBinaryData){ c->name.len, (uint8_t *)c->name.wire };
		slot_of[k] = (uint32_t)slot(c->name.wire, c->name.len, NULL, 0, nb);
		if (start)
			start[slot_of[k] + 1]++;
		k++;
	}
	for (size_t b = 0; start && b < nb; b++)
		start[b + 1] += start[b];
	for (size_t i = 0; start && by && i < k; i++)
		by[start[slot_of[i]]++] = v[i];
	for (size_t b = nb; start && b > 0; b--)
		start[b] = start[b - 1];
	if (start)
		start[0] = 0;
	for (size_t b = 0; b < nb; b++) {
		struct own_set *o = &own[b];
		struct sig_set *set = NULL;
		size_t n = start && by ? start[b + 1] - start[b] : 0;
		if (n) {
			Nbrp__Route rt = NBRP__ROUTE__INIT;     /* attest_set_digest sorts them */
			rt.names = by + start[b];
			rt.n_names = n;
			struct attest_name *sorted;
			uint8_t d[ATTEST_DIGEST_LEN];
			if (o->set && o->set->n == n && attest_set_digest(&rt, d, NULL) == 0 &&
			    memcmp(d, o->set->digest, ATTEST_DIGEST_LEN) == 0)
				continue;       /* the same names: the same signature */
			if (attest_set_digest(&rt, d, &sorted) == 0) {
				set = sig_set_new(sorted, n, d, &s->chain_bytes);
				free(sorted);
			}
		}
		sig_set_release(o->set);
		memset(o, 0, sizeof(*o));
		o->set = set;           /* signed when first passed on */
	}
	if (own != s->own) {
		for (size_t b = 0; b < s->nown; b++)
			sig_set_release(s->own[b].set);
		free(s->own);
		s->own = own;
		s->nown = nb;
	}
	free(start);
	free(by);
	free(v);
	free(slot_of);
}

/* Our origin attestation for a content name (its RIB key), or for an aggregate's version stored
 * here (g), signed on the loop once per period and version. */
static uint32_t members_unauthorised(struct rdesig *s, const char *from, struct sig_agg *g,
				     const uint8_t key[SIGKEY_PUBLIC_LEN]);

static struct origin *origin_get(struct rdesig *s, const struct rib_entry *e, struct sig_agg *g,
				 uint64_t seq, uint64_t now)
{
	if (!s->origins.nb)
		table_grow(&s->origins, origin_slot_of);
	if (!s->origins.nb)
		return NULL;
	size_t k = origin_slot(e->wire, e->len, s->origins.nb);
	struct origin *o;
	for (o = s->origins.b[k]; o; o = o->next)
		if (o->len == e->len && memcmp(o->wire, e->wire, e->len) == 0)
			break;
	if (!o) {
		if (!(o = calloc(1, sizeof(*o))))
			return NULL;
		table_grow(&s->origins, origin_slot_of);
		k = origin_slot(e->wire, e->len, s->origins.nb);
		o->len = e->len;
		memcpy(o->wire, e->wire, e->len);
		o->next = s->origins.b[k];
		s->origins.b[k] = o;
		s->origins.n++;
	}
	const struct nbrpd_config *cfg = s->rde->cfg;
	struct ip_endpoint src = { 0 };
	if (g && cfg->has_transfer)
		src = cfg->transfer;
	if (!o->w.expiry || o->w.expiry <= now + SIG_RENEW || o->seq != seq ||
	    (g && (o->version != g->version || memcmp(o->digest, g->digest, ATTEST_DIGEST_LEN) != 0 ||
		   memcmp(&o->source, &src, sizeof(src)) != 0))) {
		/* one signature per name and period: what an origin costs (docs/SIGNATURES.md) */
		struct attest_subject sub = { .name = o->wire, .name_len = o->len, .seq = o->seq = seq };
		char text[NBRP_SOURCE_TEXT_MAX] = "";
		if (g) {
			/* the aggregate's name (the key without its mark), its version and members */
			sub.name = o->wire + 1;
			sub.name_len = (uint8_t)(o->len - 1);
			sub.aggregate = true;
			sub.version = o->version = g->version;
			memcpy(sub.digest, g->digest, ATTEST_DIGEST_LEN);
			memcpy(o->digest, g->digest, ATTEST_DIGEST_LEN);
			/* where it is fetched from: our transfer server (docs/AGGREGATES.md, Which version, from where) */
			if (cfg->has_transfer)
				nbrp_aggregate_source_format(&src, text, sizeof(text));
			sub.source = text;
			sub.source_len = (uint8_t)strlen(text);
			o->source = src;
			/* routers would refuse it whole: say so here (logged once a version and trust file) */
			members_unauthorised(s, "this router", g, s->key.pk);
		}
		attest_sign_origin(&o->w, &s->key, s->key.pk, now, now + SIG_LIFETIME, &sub);
		attest_to_pb(&o->pb, &o->w);
		o->ptr = &o->pb;
		s->signed_origins++;
	}
	return o;
}

static void on_kick(uv_timer_t *t);

/* Our hop h for peer sp is to be signed (again); set: a name set's, whose names are sent when it is. */
static void hop_request(struct rdesig *s, struct hop *h, const struct sig_set *set, struct rdesig_peer *sp)
{
	if (VEC_RESERVE(s->asked, s->asked_cap, s->nasked + 1) < 0)
		return;                 /* asked again at the next export */
	h->pending = true;
	if (sp)
		sp->hops_pending++;
	if (set && !h->set) {
		h->set = (struct sig_set *)set;
		h->set->refs++;
	}
	s->asked[s->nasked++] = h;
	if (!uv_is_active((uv_handle_t *)&s->kick))
		uv_timer_start(&s->kick, on_kick, 0, 0);
}

static void *signer_export_peer(void *arg, struct rde_peer *to)
{
	return peer_of(arg, to);
}

static bool signer_export_pending(void *arg, const struct rde_peer *p)
{
	const struct rdesig_peer *sp = peer_of(arg, p);
	return sp && sp->hops_pending;
}

static const struct sig_set *signer_set_of(void *arg, const struct rib_entry *e, const struct rib_attrs *a)
{
	if (a->k.peer)
		return a->chain ? a->chain->set : NULL;
	if (entry_is_aggregate(e))
		return NULL;
	struct own_set *o = own_of(arg, e->wire, e->len);
	return o ? o->set : NULL;
}

static int signer_export(void *peer, const struct rib_entry *e, const struct rib_attrs *a,
			 Nbrp__Attestation **out, size_t max, uint64_t *seq, const uint8_t **digest)
{
	struct rdesig_peer *sp = peer;
	if (!sp)
		return 0;               /* a peer the stage has not seen: unsigned */
	struct rdesig *s = sp->s;
	struct rde_peer *to = sp->p;
	const uint8_t *target = s->have_trust ? trust_router_key(&s->trust, to->name, strlen(to->name)) : NULL;
	if (!target)
		return 0;
	uint64_t now = unix_now();
	Nbrp__Attestation **chain;
	size_t n;
	const uint8_t *prev;
	struct sig_agg *g = agg_table_of(&s->aggs, e);          /* an aggregate's: the version stored */
	bool agg = entry_is_aggregate(e);
	if (a->k.peer) {
		if (!a->chain || a->k.sig_state != ATTEST_VALID + 1 || a->chain->expiry <= now)
			return 0;
		if (agg && (!g || !g->has_digest || g->version != a->k.agg_version))
			return -1;      /* the version signed is offered once stored here and checked */
		chain = a->chain->ptrs;
		n = a->chain->n;
		prev = a->chain->head;
		*seq = a->k.origin_seq;
	} else {
		if (agg && (!g || !g->has_digest))
			return 0;       /* no member digest (out of memory): passed on unsigned */
		struct own_set *os = g ? NULL : own_of(s, e->wire, e->len);
		if (os) {
			own_sign(s, os, now);
			chain = &os->ptr;
			prev = os->w.link;
			*seq = os->seq;
		} else {
			struct origin *o = origin_get(s, e, g, a->k.origin_seq, now);
			if (!o)
				return 0;
			chain = &o->ptr;
			prev = o->w.link;
			*seq = o->seq;
			if (g)
				*digest = g->digest;    /* what o signed */
		}
		n = 1;
	}
	struct hop *h = n + 1 <= max ? hop_get(s, prev, target, e) : NULL;
	if (!h)
		return 0;
	if (!h->pending && (!h->have || h->w.expiry <= now + SIG_RENEW))
		hop_request(s, h, signer_set_of(s, e, a), sp);
	if (!h->have || h->w.expiry <= now)
		return -1;
	out[0] = &h->pb;
	memcpy(out + 1, chain, n * sizeof(*chain));
	return (int)n + 1;
}

static bool peer_signed(const struct rdesig_peer *sp)
{
	return sp->p && sp->p->up && sp->p->sig != SIG_OFF && sp->p->owner;
}

/* The peer with signatures on whose key the trust file gives as target. */
static struct rdesig_peer *peer_of_key(struct rdesig *s, const uint8_t *target)
{
	for (struct rdesig_peer *sp = s->peers; sp && s->have_trust; sp = sp->next) {
		const uint8_t *k = peer_signed(sp) ? trust_router_key(&s->trust, sp->p->name, strlen(sp->p->name)) : NULL;
		if (k && memcmp(k, target, SIGKEY_PUBLIC_LEN) == 0)
			return sp;
	}
	return NULL;
}

/* A hop signed for p: its name, or every name of its set, sent to p now. */
static void resend_hop(struct rde_peer *p, const struct hop *h)
{
	if (!h->set) {
		rde_resend(p, h->wire, h->len);
		return;
	}
	for (uint32_t i = 0; i < h->set->n; i++) {
		const uint8_t *w = h->set->names + h->set->off[i];
		rde_resend(p, w + 1, w[0]);
	}
}

static void on_signed(struct attest_sign_batch *b)
{
	struct sign_run *run = b->arg;
	struct rdesig *s = run->s;
	for (size_t i = 0; i < b->n; i++) {
		struct hop *h = run->hops[i];
		h->w = b->req[i].out;
		attest_to_pb(&h->pb, &h->w);
		h->have = true;         /* still pending: not yet sent */
	}
	s->signed_hops += b->n;
	/* each peer hears of its names in one packing */
	for (size_t i = 0; i < b->n; i++) {
		if (!run->hops[i]->pending)
			continue;
		const uint8_t *target = run->hops[i]->target;
		struct rdesig_peer *sp = s->stopping ? NULL : peer_of_key(s, target);
		if (sp)
			rde_resend_begin(sp->p);
		for (size_t k = i; k < b->n; k++) {
			struct hop *h = run->hops[k];
			if (!h->pending || memcmp(h->target, target, SIGKEY_PUBLIC_LEN) != 0)
				continue;
			if (sp) {
				resend_hop(sp->p, h);
				if (sp->hops_pending)
					sp->hops_pending--;
			}
			h->pending = false;
		}
		if (sp) {
			rde_resend_end(sp->p);
			rde_peer_eor(sp->p);
		}
	}
	free(b->req);
	free(run->hops);
	free(run);
}

static void on_kick(uv_timer_t *t)
{
	struct rdesig *s = t->data;
	size_t n = s->nasked;
	if (!n || s->stopping)
		return;
	struct sign_run *run = calloc(1, sizeof(*run));
	struct attest_hop_request *req = run ? calloc(n, sizeof(*req)) : NULL;
	if (!req) {
		free(run);
		for (size_t i = 0; i < n; i++) {
			s->asked[i]->pending = false;   /* asked again at the next export */
			struct rdesig_peer *sp = peer_of_key(s, s->asked[i]->target);
			if (sp && sp->hops_pending && !--sp->hops_pending)
				rde_peer_eor(sp->p);        /* its table without those names: it is told them later */
		}
		s->nasked = 0;
		return;
	}
	uint64_t expiry = unix_now() + SIG_LIFETIME;
	for (size_t i = 0; i < n; i++) {
		memcpy(req[i].prev, s->asked[i]->prev, sizeof(req[i].prev));
		memcpy(req[i].target, s->asked[i]->target, sizeof(req[i].target));
		req[i].expiry = expiry;
	}
	run->s = s;
	run->hops = s->asked;
	s->asked = NULL;
	s->nasked = s->asked_cap = 0;
	run->b.key = &s->key;
	run->b.req = req;
	run->b.n = n;
	run->b.done = on_signed;
	run->b.arg = run;
	run->b.pool.urgent = true;      /* no flood of checks delays our own announcements */
	attest_sign_batch_submit(&s->pool, &run->b);
}

/* Whether a name the hop is for (its own, or one of its set's) is still told to peers. */
static bool hop_in_use(struct rdesig *s, const struct hop *h)
{
	struct rib *t = &s->rde->rib;
	if (!h->set) {
		const struct rib_entry *e = rib_lookup(t, h->wire, h->len, rib_hash(h->wire, h->len));
		return e && e->adv;
	}
	for (uint32_t i = 0; i < h->set->n; i++) {
		const uint8_t *w = h->set->names + h->set->off[i];
		const struct rib_entry *e = rib_lookup(t, w + 1, w[0], rib_hash(w + 1, w[0]));
		if (e && e->adv)
			return true;
	}
	return false;
}

/* Every peer with signatures on hears the set's names (or one name) again: re-signed on export. */
static void resend_signed(struct rdesig *s, const struct sig_set *set, const uint8_t *wire, uint8_t len)
{
	for (struct rdesig_peer *sp = s->peers; sp; sp = sp->next) {
		if (!peer_signed(sp))
			continue;
		struct rde_peer *p = sp->p;
		rde_resend_begin(p);
		for (uint32_t i = 0; set && i < set->n; i++) {
			const uint8_t *w = set->names + set->off[i];
			rde_resend(p, w + 1, w[0]);
		}
		if (!set)
			rde_resend(p, wire, len);
		rde_resend_end(p);
	}
}

/* A slice of the caches a poll: expired entries go, hops near their expiry are signed again
 * (sent to their peer when made), origins are re-signed when next exported. */
static void sweep(struct rdesig *s)
{
	uint64_t now = unix_now();
	for (size_t i = 0; i < SWEEP_BUCKETS && s->hops.nb; i++) {
		size_t k = s->hops.sweep++ & (s->hops.nb - 1);
		for (struct hop **pp = (struct hop **)&s->hops.b[k], *h; (h = *pp);) {
			/* expired, or for a set no route is signed in any more (it keeps the set's memory) */
			if (!h->pending && ((h->have && h->w.expiry <= now) || (h->set && !h->set->holders))) {
				*pp = h->next;
				s->hops.n--;
				sig_set_put(h->set);
				free(h);
				continue;
			}
			struct rdesig_peer *sp = h->have && !h->pending && h->w.expiry <= now + SIG_RENEW
						 ? peer_of_key(s, h->target) : NULL;
			if (sp && hop_in_use(s, h))
				hop_request(s, h, NULL, sp);
			pp = &h->next;
		}
	}
	for (size_t i = 0; i < SWEEP_BUCKETS && s->origins.nb; i++) {
		size_t k = s->origins.sweep++ & (s->origins.nb - 1);
		for (struct origin **pp = (struct origin **)&s->origins.b[k], *o; (o = *pp);) {
			if (o->w.expiry <= now) {
				*pp = o->next;
				s->origins.n--;
				free(o);
				continue;
			}
			if (o->w.expiry <= now + SIG_RENEW && !s->stopping)
				resend_signed(s, NULL, o->wire, o->len);
			pp = &o->next;
		}
	}
	fresh_sweep(&s->fresh, now, SWEEP_FRESH);
	/* our sets: passed on again near their expiry (re-signed on export) */
	for (size_t b = 0; b < s->nown && !s->stopping; b++) {
		struct own_set *o = &s->own[b];
		if (o->set && o->w.expiry && o->w.expiry <= now + SIG_RENEW)
			resend_signed(s, o->set, NULL, 0);
	}
}

static void table_free(struct rdesig *s, struct sig_table *t)
{
	for (size_t i = 0; i < t->nb; i++)
		for (void *e = t->b[i], *n; e; e = n) {
			n = *(void **)e;
			if (t == &s->hops)
				sig_set_put(((struct hop *)e)->set);
			free(e);
		}
	free(t->b);
}

/* ---- freshness: the newest origin_seq per name and origin key ---- */

/* Whether an announcement stamped seq is older than what the name's origin has signed since. */
static bool fresh_stale(const struct fresh_slot *f, uint64_t seq)
{
	return f && (seq < f->seq || (seq == f->seq && f->withdrawn));
}

static void stale_job(struct rdesig *s, struct attest_job *j, int where)
{
	attest_job_drop(j);
	j->state = ATTEST_INVALID;
	j->reason = ATTEST_STALE;
	j->where = where;
	s->v.by_reason[ATTEST_STALE]++;
}

/*
 * The origin signed seq (withdrawn: a withdrawal of it) for name wire by
 * key, until `until`: noted, and the stored routes of peers other than
 * `from` with an older stamp of that origin are stale (withdrawn under
 * require).  Returns false if it is itself older than what was noted.
 */
static bool fresh_note(struct rdesig *s, const struct rde_peer *from, const uint8_t *wire, size_t len,
		       const uint8_t *key, uint64_t seq, uint64_t until, bool withdrawn)
{
	struct rde *r = s->rde;
	struct fresh_slot *f = fresh_find(&s->fresh, wire, len, key);
	uint32_t till = until > UINT32_MAX ? UINT32_MAX : (uint32_t)until;
	if (fresh_stale(f, seq))
		return false;
	if (f && f->seq == seq && f->withdrawn == withdrawn) {
		if (till > f->until)
			f->until = till;
		return true;            /* nothing newer: the usual case, a route sent again */
	}
	bool first = !f;
	if (first && !(f = fresh_add(&s->fresh, wire, len, key)))
		return true;            /* out of memory: not remembered */
	f->seq = seq;
	f->withdrawn = withdrawn;
	if (till > f->until)
		f->until = till;
	/* every valid route of that key was noted (an entry goes only once its chains have expired):
	 * none can be older than a first one, but for a withdrawal, which may be first */
	if (first && !withdrawn)
		return true;
	struct rib_entry *e = rib_lookup(&r->rib, wire, len, rib_hash(wire, len));
	for (struct rib_route *rt = e ? e->routes : NULL, *next; rt; rt = next) {
		next = rt->next;        /* rt may be replaced */
		struct rib_attrs *a = rt->a;
		const uint8_t *o = a->k.peer && a->k.peer != from && a->k.sig_state == ATTEST_VALID + 1
				   ? attrs_chain_origin(e, a) : NULL;
		if (!o || memcmp(o, key, SIGKEY_PUBLIC_LEN) != 0 || !fresh_stale(f, a->k.origin_seq))
			continue;
		struct attest_job j = { 0 };
		stale_job(s, &j, a->k.npath);
		route_checked(s, e, rt, &j);
	}
	return true;
}

static void signer_withdrawn(void *arg, const uint8_t *wire, size_t len, const uint8_t *key, uint64_t seq,
			     uint64_t until)
{
	fresh_note(arg, NULL, wire, len, key, seq, until, true);
}

/* A Route checked valid: stale if its origin signed a newer stamp for one of its names since. */
static void fresh_route(struct rdesig *s, struct rde_peer *p, const Nbrp__Route *rt, struct attest_job *j)
{
	if (j->state != ATTEST_VALID || rt->n_attestations != rt->n_path + 1)
		return;
	/* one pass: what the origin signed is noted for each name, even if another is stale */
	const Nbrp__Attestation *o = rt->attestations[rt->n_path];
	const ProtobufCBinaryData *nm = rt->names;
	bool stale = false;
	for (size_t i = 0; i < rt->n_names && i < FRESH_AHEAD; i++)
		fresh_prefetch(&s->fresh, nm[i].data, nm[i].len, o->signer.data);
	for (size_t i = 0; i < rt->n_names; i++) {
		if (i + FRESH_AHEAD < rt->n_names)
			fresh_prefetch(&s->fresh, nm[i + FRESH_AHEAD].data, nm[i + FRESH_AHEAD].len, o->signer.data);
		stale |= !fresh_note(s, p, rt->names[i].data, rt->names[i].len, o->signer.data,
					    rt->origin_seq, o->expiry, false);
	}
	if (stale)
		stale_job(s, j, (int)rt->n_path);
}

static bool signer_sign_withdrawal(void *arg, const uint8_t *wire, size_t len, uint64_t seq,
				   struct origin_wd_sig *out)
{
	struct rdesig *s = arg;
	if (!s->have_trust || trust_origin_check(&s->trust, wire, len, s->key.pk) != TRUST_AUTHORISED)
		return false;   /* nobody would take it: what we could not sign as its origin */
	memcpy(out->signer, s->key.pk, sizeof(out->signer));
	out->expiry = unix_now() + SIG_LIFETIME;        /* as long as any chain we signed before it */
	attest_sign_withdrawal(out->sig, &s->key, seq, out->expiry, wire, len);
	s->signed_withdrawals++;
	return true;
}

/* A stored route checked again: a newer stamp noted since keeps it stale. */
static void fresh_stored(struct rdesig *s, const struct rib_entry *e, const struct rib_attrs *a,
			 struct attest_job *j)
{
	const uint8_t *o = j->state == ATTEST_VALID ? attrs_chain_origin(e, a) : NULL;
	if (o && fresh_stale(fresh_find(&s->fresh, e->wire, e->len, o), a->k.origin_seq))
		stale_job(s, j, a->k.npath);
}

/* ---- a new trust file: the stored signed routes checked again ---- */

/* The Route a stored signed route was received as: what attest_prepare checks. */
static void route_of(const struct rib_entry *e, const struct rib_attrs *a, Nbrp__Route *rt,
		     ProtobufCBinaryData *name, char **path, char source[NBRP_SOURCE_TEXT_MAX])
{
	nbrp__route__init(rt);
	bool agg = entry_is_aggregate(e);
	name->data = (uint8_t *)e->wire + agg;
	name->len = e->len - agg;
	rt->names = name;
	rt->n_names = 1;
	const char *p = a->path;
	for (unsigned i = 0; i < a->k.npath; i++) {
		path[i] = (char *)p;
		p += strlen(p) + 1;
	}
	rt->path = path;
	rt->n_path = a->k.npath;
	rt->origin_seq = a->k.origin_seq;       /* signed by the origin */
	rt->attestations = a->chain->ptrs;
	rt->n_attestations = a->chain->n;
	if (a->chain->set)
		rt->aggregate_digest = a->chain->digest;        /* the set's, checked when received */
	if (agg) {
		rt->aggregate = *name;
		rt->aggregate_version = a->k.agg_version;
		rt->aggregate_digest = a->chain->digest;
		/* a valid route's source is the one signed */
		rt->aggregate_source = rt->aggregate_signed_source =
			(char *)nbrp_aggregate_source_format(&a->k.agg_source, source, NBRP_SOURCE_TEXT_MAX);
	}
}

static void on_rechecked(struct attest_batch *b)
{
	struct recheck_run *run = b->arg;
	struct rdesig *s = run->s;
	struct rde *r = s->rde;
	/* trust data replaced since: the walk it started checks these routes again */
	bool stale = run->gen != s->trust_gen;
	s->stale_verdicts += stale;
	for (size_t i = 0; i < run->n; i++) {
		struct recheck_item *it = &run->items[i];
		struct rde_peer *p = s->stopping || stale ? NULL : peer_names_find(&r->by_name, it->peer);
		struct rib_entry *e = p ? rib_lookup(&r->rib, it->wire, it->len, rib_hash(it->wire, it->len)) : NULL;
		for (struct rib_route *rt = e ? e->routes : NULL; rt; rt = rt->next)
			if (rt->a == it->a) {
				if (entry_is_aggregate(e))
					members_check(s, p, e->wire + 1, e->len - 1u, it->a->k.agg_version,
						      &it->a->chain->digest, it->a->chain->ptrs, it->a->chain->n,
						      &run->b.jobs[i]);
				else
					fresh_stored(s, e, it->a, &run->b.jobs[i]);
				route_checked(s, e, rt, &run->b.jobs[i]);
				break;
			}
		attrs_put(r, it->a);
	}
	free(run->b.jobs);
	free(run->items);
	free(run);
}

struct recheck_ctx {
	struct rdesig *s;
	struct recheck_run *run;        /* the PENDING ones of this slice */
	uint64_t now;
};

static void recheck_one(struct rib_entry *e, void *arg)
{
	struct recheck_ctx *x = arg;
	struct rdesig *s = x->s;
	for (struct rib_route *rt = e->routes, *next; rt; rt = next) {
		next = rt->next;        /* rt may be replaced */
		struct rib_attrs *a = rt->a;
		struct rde_peer *p = a->k.peer;
		/* stale ones too: a restarting peer's routes are no more valid than its others */
		if (!a->chain || !p || p->sig == SIG_OFF)
			continue;
		if (a->chain->expiry >= x->now && a->chain->expiry < s->next_expiry)
			s->next_expiry = a->chain->expiry;
		Nbrp__Route route;
		ProtobufCBinaryData name;
		char *path[NBRP_MAX_PATH], source[NBRP_SOURCE_TEXT_MAX];
		route_of(e, a, &route, &name, path, source);
		struct attest_job j;
		unsigned flags = ATTEST_STORED | (a->chain->set ? ATTEST_STORED_SET : 0) |
				 (p->server_mode ? ATTEST_SERVER : 0);
		enum attest_state st = attest_prepare_flags(&s->v, &route, p->name, flags, x->now, &j);
		s->rechecked++;
		if (st != ATTEST_PENDING) {
			if (route.aggregate.len)
				members_check(s, p, route.aggregate.data, route.aggregate.len, route.aggregate_version,
					      &route.aggregate_digest, route.attestations, route.n_attestations, &j);
			else
				fresh_stored(s, e, a, &j);
			route_checked(s, e, rt, &j);
			continue;
		}
		struct recheck_run *run = x->run;
		if (!run || VEC_RESERVE(run->items, run->cap, run->n + 1) < 0 ||
		    VEC_RESERVE(run->b.jobs, run->jobs_cap, run->n + 1) < 0) {
			attest_job_drop(&j);    /* out of memory: it keeps its state */
			continue;
		}
		struct recheck_item *it = &run->items[run->n];
		snprintf(it->peer, sizeof(it->peer), "%s", p->name);
		it->len = e->len;
		memcpy(it->wire, e->wire, e->len);
		it->a = a;
		a->refs++;
		run->b.jobs[run->n++] = j;
	}
}

static void on_recheck(uv_timer_t *t)
{
	struct rdesig *s = t->data;
	struct rde *r = s->rde;
	if (s->stopping || !s->rechecking)
		return;
	struct recheck_ctx x = { .s = s, .run = calloc(1, sizeof(*x.run)), .now = unix_now() };
	unsigned seen = 0;
	while (seen < RECHECK_BUDGET && !rib_cursor_done(&r->rib, &s->recheck_cur))
		seen += rib_cursor_step(&r->rib, &s->recheck_cur, recheck_one, &x);
	if (x.run && x.run->n) {
		x.run->s = s;
		x.run->b.v = &s->v;
		x.run->b.n = x.run->n;
		x.run->b.now = x.now;
		x.run->b.done = on_rechecked;
		x.run->b.arg = x.run;
		x.run->gen = s->trust_gen;
		attest_batch_submit(&s->pool, &x.run->b);
	} else if (x.run) {
		free(x.run->items);
		free(x.run->b.jobs);
		free(x.run);
	}
	if (rib_cursor_done(&r->rib, &s->recheck_cur)) {
		s->rechecking = false;
		log_info("signatures: stored routes checked again (%llu so far)", (unsigned long long)s->rechecked);
		return;
	}
	uv_timer_start(&s->recheck, on_recheck, 0, 0);  /* the next slice, next turn */
}

/* Starts (or starts over) checking every stored signed route against the trust in force. */
static void recheck_start(struct rdesig *s)
{
	if (s->rde->signer != &s->signer)
		return;                 /* at start: nothing stored yet */
	rib_cursor_start(&s->rde->rib, &s->recheck_cur);
	s->rechecking = true;
	s->next_expiry = UINT64_MAX;    /* found again by the walk, and by chains kept meanwhile */
	uv_timer_start(&s->recheck, on_recheck, 0, 0);
}

/* ---- aggregates: the members of a version against the digest its routes were signed with ---- */

/*
 * The members of g's version stored that key may not originate (no trust
 * file line lets it: docs/NBRP.md, "An aggregate's members"), counted
 * once per version, key and trust file, and logged then.
 */
static uint32_t members_unauthorised(struct rdesig *s, const char *from, struct sig_agg *g,
				     const uint8_t key[SIGKEY_PUBLIC_LEN])
{
	if (g->auth_gen == s->trust_gen && g->auth_version == g->version &&
	    memcmp(g->auth_key, key, SIGKEY_PUBLIC_LEN) == 0)
		return g->unauthorised;
	struct name agg = { .len = g->n.len };
	memcpy(agg.wire, g->n.wire, g->n.len);
	const struct nameset *m = s->rde->ops.aggregate_members ?
				  s->rde->ops.aggregate_members(s->rde->ops.arg, &agg) : NULL;
	if (!m || !s->have_trust)
		return 0;       /* no members here: nothing they could route */
	uint32_t bad = 0;
	size_t pos = 0;
	const uint8_t *wire;
	uint8_t len;
	while (nameset_next(m, &pos, &wire, &len))
		if (trust_origin_check(&s->trust, wire, len, key) != TRUST_AUTHORISED && bad++ == 0) {
			g->unauth_len = len;
			memcpy(g->unauth_wire, wire, len);
		}
	g->auth_gen = s->trust_gen;
	g->auth_version = g->version;
	memcpy(g->auth_key, key, SIGKEY_PUBLIC_LEN);
	g->unauthorised = bad;
	if (bad) {
		char name[NAME_MAX_TEXT], first[NAME_MAX_TEXT];
		struct name f = { .len = g->unauth_len };
		memcpy(f.wire, g->unauth_wire, f.len);
		name_to_text(&f, first, sizeof(first));
		log_warn("aggregate %s: version %u from %s: %u members its origin may not originate, "
			 "%s the first (unauthorised member)", agg_node_text(&g->n, name), g->version, from, bad, first);
	}
	return bad;
}

/*
 * A valid route of aggregate agg naming this version, if that version is
 * stored here (else it is checked when it is: signer_aggregate_stored): a
 * mismatch of its digest, or a member its origin (att[n_att - 1], checked
 * valid) may not originate, makes it invalid.
 */
static void members_check(struct rdesig *s, const struct rde_peer *p, const uint8_t *agg, size_t len,
			  uint64_t version, const ProtobufCBinaryData *digest, Nbrp__Attestation *const *att,
			  size_t n_att, struct attest_job *j)
{
	struct sig_agg *g;
	if (j->state != ATTEST_VALID || !(g = agg_table_find(&s->aggs, agg, len)) || !g->has_digest ||
	    g->version != version)
		return;
	enum attest_reason why = ATTEST_DIGEST_MISMATCH;
	char from[NBRP_ROUTER_NAME_MAX + 8];
	snprintf(from, sizeof(from), "peer %s", p->name);
	if (digest->len == ATTEST_DIGEST_LEN && memcmp(digest->data, g->digest, ATTEST_DIGEST_LEN) == 0) {
		g->verified = true;
		if (!n_att || att[n_att - 1]->signer.len != SIGKEY_PUBLIC_LEN ||
		    !members_unauthorised(s, from, g, att[n_att - 1]->signer.data))
			return;
		why = ATTEST_UNAUTHORISED_MEMBER;
	} else if (!g->verified) {
		/* no valid route signed what is held (it came unsigned, or before signatures): the
		 * signature wins, and the version held is thrown away and fetched whole (rde.c) */
		if (!g->distrust) {
			char name[NAME_MAX_TEXT];
			log_warn("aggregate %s: version %u from %s: the version held is not the one signed "
				 "(member digest mismatch): fetched whole", agg_node_text(&g->n, name), g->version, from);
		}
		g->distrust = true;
		return;
	}
	j->state = ATTEST_INVALID;
	j->reason = why;
	j->where = -1;
	s->v.by_reason[why]++;
}

/*
 * rt, an aggregate's Route from p, has a good chain but names another
 * source than the one its origin signed (ATTEST_UNSIGNED_SOURCE): counted
 * with the aggregate, logged 1, 2, 4, ... times.
 */
static void unsigned_source(struct rdesig *s, const struct rde_peer *p, const Nbrp__Route *rt)
{
	struct sig_agg *g = agg_table_get(&s->aggs, rt->aggregate.data, rt->aggregate.len);
	if (!g)
		return;
	g->unsigned_sources++;
	if (g->unsigned_sources & (g->unsigned_sources - 1))
		return;
	char text[NAME_MAX_TEXT];
	log_warn("aggregate %s: version %llu from peer %s names source %s, not %s, the one its origin signed: "
		 "%s (unsigned aggregate source; %llu so far)", agg_node_text(&g->n, text),
		 (unsigned long long)rt->aggregate_version, p->name, rt->aggregate_source, rt->aggregate_signed_source,
		 p->sig == SIG_REQUIRE ? "refused" : "fetched only from the signed one",
		 (unsigned long long)g->unsigned_sources);
}

static bool signer_aggregate_stored(void *arg, const uint8_t *agg, size_t len, uint32_t version,
				    const struct nameset *members, struct rib_entry *e)
{
	struct rdesig *s = arg;
	char name[NAME_MAX_TEXT];
	struct sig_agg *g = agg_table_get(&s->aggs, agg, len);
	if (!g) {
		log_err("out of memory for aggregates: the signed routes of a version stored are neither checked "
			"nor passed on signed");
		return true;
	}
	if (g->has_digest && g->version == version)
		return false;   /* told again: a version is one set of members for the life of the store */
	if (g->version != version)
		g->verified = false;
	g->version = version;
	g->distrust = false;
	/* once a version: about a millisecond per 15,000 members (docs/NBRP.md, Attestations) */
	if (attest_member_digest(members, g->digest) < 0) {
		log_err("aggregate %s: out of memory for the digest of version %u: its signed routes are "
			"neither checked nor passed on signed", agg_node_text(&g->n, name), g->version);
		return true;
	}
	g->has_digest = true;
	/* one valid route signing these members makes the version verified: others disagree with it */
	for (struct rib_route *rt = e ? e->routes : NULL; rt && !g->verified; rt = rt->next) {
		const uint8_t *d = attrs_valid_digest(rt->a);
		g->verified = d && rt->a->k.agg_version == g->version && memcmp(d, g->digest, ATTEST_DIGEST_LEN) == 0;
	}
	for (struct rib_route *rt = e ? e->routes : NULL, *next; rt; rt = next) {
		next = rt->next;        /* rt may be replaced */
		struct rib_attrs *a = rt->a;
		struct rde_peer *p = a->k.peer;
		if (!p || p->sig == SIG_OFF || !a->chain || a->k.sig_state != ATTEST_VALID + 1)
			continue;
		struct attest_job j = { .state = ATTEST_VALID, .reason = ATTEST_OK, .where = -1 };
		members_check(s, p, g->n.wire, g->n.len, a->k.agg_version, &a->chain->digest, a->chain->ptrs,
			      a->chain->n, &j);
		if (j.state == ATTEST_VALID)
			continue;
		if (j.reason == ATTEST_DIGEST_MISMATCH)
			log_warn("aggregate %s: version %u from peer %s: its members are not the ones signed "
				 "(member digest mismatch)", agg_node_text(&g->n, name), g->version, p->name);
		route_checked(s, e, rt, &j);
	}
	return true;
}

static enum agg_signed signer_aggregate_signed(void *arg, const uint8_t *agg, size_t len)
{
	struct rdesig *s = arg;
	const struct sig_agg *g = agg_table_find(&s->aggs, agg, len);
	return !g ? AGG_UNSIGNED : g->distrust ? AGG_DISTRUSTED : g->verified ? AGG_SIGNED : AGG_UNSIGNED;
}

static void signer_aggregate_dropped(void *arg, const uint8_t *agg, size_t len)
{
	struct rdesig *s = arg;
	struct sig_agg *g = agg_table_find(&s->aggs, agg, len);
	if (g)
		g->has_digest = g->verified = g->distrust = false;
}

uint32_t rdesig_aggregate_unauthorised(const struct rdesig *s, const struct name *agg, struct name *first)
{
	const struct sig_agg *g = s ? agg_table_find(&s->aggs, agg->wire, agg->len) : NULL;
	if (!g || !g->unauthorised || g->auth_gen != s->trust_gen || g->auth_version != g->version)
		return 0;
	first->len = g->unauth_len;
	memcpy(first->wire, g->unauth_wire, g->unauth_len);
	return g->unauthorised;
}

uint64_t rdesig_aggregate_unsigned_sources(const struct rdesig *s, const struct name *agg)
{
	const struct sig_agg *g = s ? agg_table_find(&s->aggs, agg->wire, agg->len) : NULL;
	return g ? g->unsigned_sources : 0;
}
