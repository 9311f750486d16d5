/*
 * Signatures in the RDE: the verifier, the trust file and the worker pool,
 * and the queue of a peer's UPDATEs waiting for their checks (rdesig.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>

#include "log.h"
#include "rdesig.h"

#define SIG_LOG_PER_S   5       /* rejected routes logged per peer and second */
#define SIG_LIFETIME    86400   /* seconds our signatures are valid */
#define SIG_RENEW       (SIG_LIFETIME / 4)      /* re-signed when less is left */
#define SWEEP_BUCKETS   4096    /* of the signature caches, per poll */

/* A valid route's attestations as received (the protobuf structs point into its own bytes). */
struct sig_chain {
	size_t size;                    /* bytes of this allocation */
	uint8_t head[ATTEST_DIGEST_LEN];
	uint64_t expiry;
	size_t n;
	ProtobufCBinaryData digest;
	uint8_t digest_buf[ATTEST_DIGEST_LEN];
	/* a name set's: its names in byte order, each [len][wire] at set + set_off[i] */
	uint32_t set_n, set_bytes;
	uint32_t *set_off;
	uint8_t *set;
	Nbrp__Attestation **ptrs;
	Nbrp__Attestation pb[];
};

/* Our hop signature over prev (a chain head: one name's, or a set's) for target (a peer's key). */
struct hop {
	struct hop *next;
	uint8_t prev[ATTEST_DIGEST_LEN];
	uint8_t target[SIGKEY_PUBLIC_LEN];
	bool pending, have;
	struct rib_attrs *set;          /* while pending, a set's: every name of it is sent when signed */
	struct attest_wire w;
	Nbrp__Attestation pb;
	uint8_t len;
	uint8_t wire[];                 /* the RIB key of the name */
};

/* Our origin attestation for a content name of ours. */
struct origin {
	struct origin *next;
	uint8_t len;
	uint8_t wire[NAME_MAX_WIRE];
	struct attest_wire w;
	Nbrp__Attestation pb, *ptr;
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

struct rdesig {
	struct rde *rde;
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
	struct hop **asked;
	size_t nasked, asked_cap;
	uint64_t signed_hops, signed_origins;
	uint64_t chain_bytes;           /* kept chains (and sets' names) */
	struct stat seen;               /* of the trust file last read (or tried) */
	bool stopping;
};

/* An UPDATE waiting for its checks: a copy, and one job per Route once prepared. */
struct sig_upd {
	struct sig_upd *next;
	struct rde_peer *p;             /* a reference */
	Nbrp__Update *u;
	struct attest_job *jobs;        /* NULL: not prepared yet */
	struct attest_batch b;
	bool dead;                      /* its session ended while its batch ran */
};

static uint64_t unix_now(void)
{
	return (uint64_t)time(NULL);
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
	struct rdesig *s;
	struct recheck_item *items;
	size_t n, cap;
};

static void recheck_start(struct rdesig *s);

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Reads the trust file; a good one replaces the one in force, a bad one is logged and changes nothing. */
static void read_trust(struct rdesig *s, bool verbose)
{
	const struct nbrpd_config *cfg = s->rde->cfg;
	if (!cfg->trust_file || !cfg->has_trust_anchor)
		return;
	if (stat(cfg->trust_file, &s->seen) < 0)
		memset(&s->seen, 0, sizeof(s->seen));
	struct trust t;
	char err[512];
	if (trust_read(cfg->trust_file, cfg->trust_anchor, &t, err, sizeof(err)) < 0) {
		log_err("signatures: %s: %s", err, s->have_trust ? "keeping the trust data in force"
			: "routes are unverified until it can be read");
		return;
	}
	if (s->have_trust)
		trust_free(&s->trust);
	s->trust = t;
	s->have_trust = true;
	attest_verifier_set_trust(&s->v, &s->trust);   /* the cache stays: its links name their keys */
	recheck_start(s);
	if (verbose)
		log_info("signatures: %s read: %zu routers, %zu origins", cfg->trust_file, t.n_routers, t.n_origins);
}

static void sweep(struct rdesig *s);
static void table_free(struct sig_table *t);
static void on_kick(uv_timer_t *t);

static void on_poll(uv_timer_t *h)
{
	struct rdesig *s = h->data;
	sweep(s);
	if (!s->rechecking && s->next_expiry < unix_now())
		recheck_start(s);       /* a chain expired (valid up to its expiry second): checked again */
	struct stat st;
	const char *path = s->rde->cfg->trust_file;
	if (!path)
		return;
	if (stat(path, &st) < 0)
		memset(&st, 0, sizeof(st));
	if (!same_file(&st, &s->seen))
		read_trust(s, true);
}

void rde_sig_reload(struct rde *r)
{
	struct rdesig *s = r->sig;
	if (!s)
		return;
	read_trust(s, true);
	uv_timer_set_repeat(&s->poll, r->cfg->trust_poll_ms);
}

int rde_sig_start(struct rde *r, const struct sigkey *key, char *err, size_t err_len)
{
	const struct nbrpd_config *cfg = r->cfg;
	struct rdesig *s = calloc(1, sizeof(*s));
	if (!s || attest_verifier_init(&s->v, key->pk, cfg->signature_cache) < 0) {
		free(s);
		snprintf(err, err_len, "signatures: out of memory for %llu cache entries",
			 (unsigned long long)cfg->signature_cache);
		return -1;
	}
	if (sigpool_init(&s->pool, r->loop, cfg->signature_workers) < 0) {
		attest_verifier_free(&s->v);
		free(s);
		snprintf(err, err_len, "signatures: cannot start %u worker threads", cfg->signature_workers);
		return -1;
	}
	s->rde = r;
	s->key = *key;
	s->next_expiry = UINT64_MAX;
	attest_verifier_set_trust(&s->v, NULL);
	read_trust(s, false);
	uv_timer_init(r->loop, &s->poll);
	s->poll.data = s;
	uv_timer_init(r->loop, &s->kick);
	s->kick.data = s;
	uv_timer_init(r->loop, &s->recheck);
	s->recheck.data = s;
	uv_timer_start(&s->poll, on_poll, cfg->trust_poll_ms, cfg->trust_poll_ms);
	r->sig = s;
	for (unsigned i = 0; i < r->npeers; i++)
		r->peers[i]->sig = r->peers[i]->sig_cfg;
	return 0;
}

bool rde_has_signatures(const struct rde *r)
{
	return r->sig != NULL;
}

void rde_sig_stats(const struct rde *r, struct rde_sig_stats *out)
{
	memset(out, 0, sizeof(*out));
	const struct rdesig *s = r->sig;
	if (!s)
		return;
	out->on = true;
	out->trust = s->have_trust;
	out->verified = s->v.verified;
	out->cache_hits = s->v.cache.hits;
	out->cache_misses = s->v.cache.misses;
	out->signed_hops = s->signed_hops;
	out->signed_origins = s->signed_origins;
	out->hops_kept = s->hops.n;
	out->rechecked = s->rechecked;
	out->chain_bytes = s->chain_bytes;
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
	table_free(&s->hops);
	table_free(&s->origins);
	free(s->asked);
	if (s->have_trust)
		trust_free(&s->trust);
	sigkey_wipe(&s->key);
	free(s);
}

/* ---- the queue ---- */

static void upd_free(struct rde *r, struct sig_upd *q)
{
	if (q->jobs) {
		size_t n = q->u->n_routes;
		for (size_t i = 0; i < n; i++)
			attest_job_drop(&q->jobs[i]);
		free(q->jobs);
	}
	nbrp__update__free_unpacked(q->u, NULL);
	struct rde_peer *p = q->p;
	free(q);
	(void)r;
	if (--p->refs == 0)
		free(p);
}

/* Prepares every Route; true when some have signatures left to verify. */
static bool prepare(struct rdesig *s, struct rde_peer *p, const Nbrp__Update *u, struct attest_job *jobs)
{
	uint64_t now = unix_now();
	bool pending = false;
	for (size_t i = 0; i < u->n_routes; i++)
		pending |= attest_prepare(&s->v, u->routes[i], p->server_mode ? NULL : p->name, now,
					  &jobs[i]) == ATTEST_PENDING;
	return pending;
}

static void apply(struct rde_peer *p, const Nbrp__Update *u, const struct attest_job *jobs)
{
	p->sig_jobs = jobs;
	rde_peer_update(p, u);
	p->sig_jobs = NULL;
}

static void drain(struct rde_peer *p);

static void on_checked(struct attest_batch *b)
{
	struct sig_upd *q = b->arg;
	struct rde_peer *p = q->p;
	struct rde *r = p->rde;
	if (q->dead || r->sig->stopping) {
		upd_free(r, q);
		return;
	}
	drain(p);
}

static void submit(struct rdesig *s, struct sig_upd *q)
{
	memset(&q->b, 0, sizeof(q->b));
	q->b.v = &s->v;
	q->b.jobs = q->jobs;
	q->b.n = q->u->n_routes;
	q->b.now = unix_now();
	q->b.done = on_checked;
	q->b.arg = q;
	attest_batch_submit(&s->pool, &q->b);
}

/* Applies the waiting UPDATEs in order, up to the first that must wait for the workers. */
static void drain(struct rde_peer *p)
{
	struct rde *r = p->rde;
	struct rdesig *s = r->sig;
	struct sig_upd *q;
	while ((q = p->sigq)) {
		if (!q->jobs) {
			q->jobs = calloc(q->u->n_routes ? q->u->n_routes : 1, sizeof(*q->jobs));
			if (!q->jobs) {
				log_err("peer %s: out of memory for the checks of an UPDATE: dropped", p->name);
			} else if (prepare(s, p, q->u, q->jobs)) {
				submit(s, q);
				return;
			}
		}
		p->sigq = q->next;
		if (!p->sigq)
			p->sigq_tail = &p->sigq;
		if (q->jobs)
			apply(p, q->u, q->jobs);
		upd_free(r, q);
	}
	rde_input_resume(r);            /* its session may read again */
}

static struct sig_upd *enqueue(struct rde_peer *p, const Nbrp__Update *u)
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
	q->p = p;
	p->refs++;
	if (!p->sigq)
		p->sigq_tail = &p->sigq;
	*p->sigq_tail = q;
	p->sigq_tail = &q->next;
	return q;
}

void rdesig_update(struct rde_peer *p, const Nbrp__Update *u)
{
	struct rdesig *s = p->rde->sig;
	if (p->sigq) {
		if (!enqueue(p, u))
			log_err("peer %s: out of memory for a waiting UPDATE: dropped", p->name);
		return;
	}
	struct attest_job *jobs = calloc(u->n_routes ? u->n_routes : 1, sizeof(*jobs));
	if (!jobs) {
		log_err("peer %s: out of memory for the checks of an UPDATE: dropped", p->name);
		return;
	}
	if (!prepare(s, p, u, jobs)) {
		apply(p, u, jobs);
		free(jobs);
		return;
	}
	struct sig_upd *q = enqueue(p, u);
	if (!q) {
		log_err("peer %s: out of memory for a waiting UPDATE: dropped", p->name);
		for (size_t i = 0; i < u->n_routes; i++)
			attest_job_drop(&jobs[i]);
		free(jobs);
		return;
	}
	q->jobs = jobs;
	submit(s, q);
}

void rdesig_peer_down(struct rde_peer *p)
{
	struct rde *r = p->rde;
	struct sig_upd *q = p->sigq;
	p->sigq = NULL;
	p->sigq_tail = &p->sigq;
	if (!q)
		return;
	/* the first may be with the workers: its callback frees it */
	for (struct sig_upd *n; q; q = n) {
		n = q->next;
		bool running = q->jobs && q->b.done;
		if (running)
			q->dead = true;
		else
			upd_free(r, q);
	}
	rde_input_resume(r);
}

bool rde_peer_waiting(const struct rde_peer *p)
{
	return p->sigq != NULL;
}

/* ---- a route's check applied ---- */

bool rdesig_accept(struct rde_peer *p, const struct attest_job *j)
{
	if (j->state >= ATTEST_PENDING)
		return false;           /* not reached: every job is final when applied */
	p->sig_state[j->state]++;
	if (j->state == ATTEST_INVALID)
		p->sig_invalid[j->reason]++;
	if (p->sig != SIG_REQUIRE || j->state == ATTEST_VALID)
		return true;
	uint64_t now = uv_now(p->rde->loop);
	if (now - p->sig_log_ms >= 1000) {
		if (p->sig_logged > SIG_LOG_PER_S)
			log_warn("peer %s: %u more routes rejected for their signatures", p->name,
				 p->sig_logged - SIG_LOG_PER_S);
		p->sig_log_ms = now;
		p->sig_logged = 0;
	}
	if (p->sig_logged++ < SIG_LOG_PER_S)
		log_warn("peer %s: route rejected: %s%s%s", p->name, attest_state_name(j->state),
			 j->state == ATTEST_INVALID ? ": " : "",
			 j->state == ATTEST_INVALID ? attest_reason_name(j->reason) : "");
	return false;
}

void rdesig_attrs(const struct rde_peer *p, const struct attest_job *j, struct rib_attrs_key *k)
{
	k->sig_state = (uint8_t)(j->state + 1);
	k->sig_reason = j->state == ATTEST_INVALID ? (uint8_t)j->reason : 0;
	/* a valid chain is its route's own: what it says is passed on */
	if (j->state == ATTEST_VALID)
		memcpy(k->sig_head, j->head, sizeof(k->sig_head));
	if (p->sig == SIG_PREFER && j->state != ATTEST_VALID)
		k->local_pref = 0;      /* below every valid route of a peer with a preference above 0 */
}

/* ---- a valid route's chain, kept to be passed on ---- */

static ProtobufCBinaryData copy_bytes(uint8_t **at, ProtobufCBinaryData b)
{
	ProtobufCBinaryData o = { b.len, b.len ? *at : NULL };
	if (b.len)
		memcpy(*at, b.data, b.len);
	*at += b.len;
	return o;
}

void rdesig_keep_chain(struct rib_attrs *a, const Nbrp__Route *rt, const struct attest_job *j)
{
	if (a->chain || j->state != ATTEST_VALID)
		return;
	size_t n = rt->n_attestations, bytes = 0;
	for (size_t i = 0; i < n; i++) {
		const Nbrp__Attestation *x = rt->attestations[i];
		bytes += x->signer.len + x->signature.len + x->for_key.len;
	}
	/* a set's names, sorted: for the others of each Route we pass its names on in */
	struct attest_name *set = NULL;
	size_t set_n = 0, set_bytes = 0;
	uint8_t d[ATTEST_DIGEST_LEN];
	if (attest_route_is_set(rt)) {
		if (attest_set_digest(rt, d, &set) != 0)
			return;         /* out of memory (it checked valid): passed on unsigned */
		set_n = rt->n_names + rt->n_set_others;
		for (size_t i = 0; i < set_n; i++)
			set_bytes += 1 + set[i].len;
	}
	bytes = (bytes + 3) & ~(size_t)3;
	size_t size = sizeof(struct sig_chain) + n * (sizeof(Nbrp__Attestation) + sizeof(Nbrp__Attestation *)) + bytes +
		      set_n * sizeof(uint32_t) + set_bytes;
	struct sig_chain *c = malloc(size);
	if (!c) {
		free(set);
		return;                 /* passed on unsigned */
	}
	c->size = size;
	memcpy(c->head, j->head, sizeof(c->head));
	c->expiry = j->expiry;
	c->n = n;
	c->ptrs = (Nbrp__Attestation **)(c->pb + n);
	uint8_t *at = (uint8_t *)(c->ptrs + n);
	for (size_t i = 0; i < n; i++) {
		const Nbrp__Attestation *x = rt->attestations[i];
		Nbrp__Attestation *y = &c->pb[i];
		nbrp__attestation__init(y);
		y->signer = copy_bytes(&at, x->signer);
		y->signature = copy_bytes(&at, x->signature);
		y->for_key = copy_bytes(&at, x->for_key);
		y->timestamp = x->timestamp;
		y->expiry = x->expiry;
		c->ptrs[i] = y;
	}
	c->digest.len = 0;
	c->digest.data = NULL;
	if (rt->aggregate_digest.len == ATTEST_DIGEST_LEN) {
		memcpy(c->digest_buf, rt->aggregate_digest.data, ATTEST_DIGEST_LEN);
		c->digest.data = c->digest_buf;
		c->digest.len = ATTEST_DIGEST_LEN;
	}
	c->set_n = (uint32_t)set_n;
	c->set_bytes = (uint32_t)set_bytes;
	c->set_off = (uint32_t *)((uint8_t *)(c->ptrs + n) + bytes);
	c->set = (uint8_t *)(c->set_off + set_n);
	for (size_t i = 0, off = 0; i < set_n; i++) {
		c->set_off[i] = (uint32_t)off;
		c->set[off] = (uint8_t)set[i].len;
		memcpy(c->set + off + 1, set[i].wire, set[i].len);
		off += 1 + set[i].len;
	}
	free(set);
	a->chain = c;
	struct rdesig *s = a->k.peer->rde->sig;
	s->chain_bytes += size;
	if (c->expiry < s->next_expiry)
		s->next_expiry = c->expiry;
}

/* The copy's pointers are moved to its own bytes. */
void rdesig_copy_chain(struct rib_attrs *to, const struct rib_attrs *from)
{
	const struct sig_chain *c = from->chain;
	if (to->chain || !c)
		return;
	struct sig_chain *d = malloc(c->size);
	if (!d)
		return;
	memcpy(d, c, c->size);
	ptrdiff_t shift = (const uint8_t *)d - (const uint8_t *)c;
	d->ptrs = (Nbrp__Attestation **)((uint8_t *)c->ptrs + shift);
	for (size_t i = 0; i < d->n; i++) {
		Nbrp__Attestation *y = &d->pb[i];
		d->ptrs[i] = y;
		if (y->signer.data)
			y->signer.data += shift;
		if (y->signature.data)
			y->signature.data += shift;
		if (y->for_key.data)
			y->for_key.data += shift;
	}
	if (d->digest.data)
		d->digest.data = d->digest_buf;
	d->set_off = (uint32_t *)((uint8_t *)c->set_off + shift);
	d->set = c->set + shift;
	to->chain = d;
	to->k.peer->rde->sig->chain_bytes += d->size;
}

void rdesig_chain_free(struct rde *r, struct sig_chain *c)
{
	if (!c)
		return;
	if (r->sig)
		r->sig->chain_bytes -= c->size;
	free(c);
}

bool rdesig_is_set(const struct rib_attrs *a)
{
	return a->chain && a->chain->set_n;
}

size_t rdesig_set_size(const struct rib_attrs *a, size_t *bytes)
{
	*bytes = a->chain ? a->chain->set_bytes : 0;
	return a->chain ? a->chain->set_n : 0;
}

/* The index of name in a's set, or -1. */
static long set_find(const struct sig_chain *c, const uint8_t *wire, size_t len)
{
	size_t lo = 0, hi = c->set_n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const uint8_t *m = c->set + c->set_off[mid];
		int cmp = memcmp(m + 1, wire, m[0] < len ? m[0] : len);
		if (!cmp)
			cmp = (m[0] > len) - (m[0] < len);
		if (!cmp)
			return (long)mid;
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

size_t rdesig_set_others(const struct rib_attrs *a, const ProtobufCBinaryData *names, size_t n,
			 ProtobufCBinaryData *others)
{
	const struct sig_chain *c = a->chain;
	static uint8_t *in;
	static size_t cap;
	if (c->set_n > cap) {
		uint8_t *v = realloc(in, c->set_n);
		if (!v)
			return 0;       /* the receiver finds the digest wrong: as if sent unsigned */
		in = v;
		cap = c->set_n;
	}
	memset(in, 0, c->set_n);
	for (size_t i = 0; i < n; i++) {
		long k = set_find(c, names[i].data, names[i].len);
		if (k >= 0)
			in[k] = 1;
	}
	size_t m = 0;
	for (uint32_t i = 0; i < c->set_n; i++)
		if (!in[i]) {
			const uint8_t *w = c->set + c->set_off[i];
			others[m].data = (uint8_t *)w + 1;
			others[m++].len = w[0];
		}
	return m;
}

void rdesig_export_digest(const struct rib_entry *e, const struct rib_attrs *a, Nbrp__Route *rt)
{
	(void)e;
	if (a->chain && a->chain->digest.len)
		rt->aggregate_digest = a->chain->digest;
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
	/* prev is a BLAKE2b digest: its bytes are already uniform */
	uint64_t a, b;
	memcpy(&a, h->prev, sizeof(a));
	memcpy(&b, h->target, sizeof(b));
	return (size_t)((a ^ b) & (nb - 1));
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

/* Our origin attestation for a content name (its RIB key), signed on the loop once per period. */
static struct origin *origin_get(struct rdesig *s, const struct rib_entry *e, uint64_t now)
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
	if (!o->w.expiry || o->w.expiry <= now + SIG_RENEW) {
		/* one signature per name and period: what an origin costs (docs/SIGNATURES.md) */
		struct attest_subject sub = { .name = o->wire, .name_len = o->len };
		attest_sign_origin(&o->w, &s->key, s->key.pk, now, now + SIG_LIFETIME, &sub);
		attest_to_pb(&o->pb, &o->w);
		o->ptr = &o->pb;
		s->signed_origins++;
	}
	return o;
}

static void on_kick(uv_timer_t *t);

/* Our hop h is to be signed (again); set: a name set's attributes, whose names are sent when it is. */
static void hop_request(struct rdesig *s, struct hop *h, struct rib_attrs *set)
{
	if (s->nasked == s->asked_cap) {
		size_t cap = s->asked_cap ? s->asked_cap * 2 : 256;
		struct hop **v = realloc(s->asked, cap * sizeof(*v));
		if (!v)
			return;         /* asked again at the next export */
		s->asked = v;
		s->asked_cap = cap;
	}
	h->pending = true;
	if (set) {
		h->set = set;
		set->refs++;
	}
	s->asked[s->nasked++] = h;
	if (!uv_is_active((uv_handle_t *)&s->kick))
		uv_timer_start(&s->kick, on_kick, 0, 0);
}

int rdesig_export(struct rde_peer *to, const struct rib_entry *e, const struct rib_attrs *a,
		  Nbrp__Attestation **out, size_t max)
{
	struct rdesig *s = to->rde->sig;
	const uint8_t *target = s && s->have_trust ? trust_router_key(&s->trust, to->name, strlen(to->name)) : NULL;
	if (!target)
		return 0;
	uint64_t now = unix_now();
	Nbrp__Attestation **chain;
	size_t n;
	const uint8_t *prev;
	if (a->k.peer) {
		if (!a->chain || a->k.sig_state != ATTEST_VALID + 1 || a->chain->expiry <= now)
			return 0;
		chain = a->chain->ptrs;
		n = a->chain->n;
		prev = a->chain->head;
	} else {
		if (entry_is_aggregate(e))
			return 0;       /* our aggregates need their member digest: not signed yet */
		struct origin *o = origin_get(s, e, now);
		if (!o)
			return 0;
		chain = &o->ptr;
		n = 1;
		prev = o->w.link;
	}
	struct hop *h = n + 1 <= max ? hop_get(s, prev, target, e) : NULL;
	if (!h)
		return 0;
	if (!h->pending && (!h->have || h->w.expiry <= now + SIG_RENEW))
		hop_request(s, h, rdesig_is_set(a) ? (struct rib_attrs *)a : NULL);
	if (!h->have || h->w.expiry <= now)
		return -1;
	out[0] = &h->pb;
	memcpy(out + 1, chain, n * sizeof(*chain));
	return (int)n + 1;
}

/* A name whose signature for p is made: p hears its route now, if it is still told it. */
static void resend(struct rdesig *s, struct rde_peer *p, const uint8_t *wire, uint8_t len)
{
	struct rde *r = s->rde;
	struct rib_entry *e = rib_lookup(&r->rib, wire, len, rib_hash(wire, len));
	if (!e || !e->adv)
		return;
	if (p->dumping && !rib_cursor_passed(&p->dump, e))
		return;                 /* the dump sends it */
	const struct nbrpd_policy *pol = p->reexporting && !rib_cursor_passed(&p->reexport, e)
					 ? &p->export_old : &p->export;
	if (adjout_allows(r, e->adv, e, p, pol))
		packer_advertise(e, e->adv, e->adv_load);
}

static bool peer_signed(struct rde_peer *p)
{
	return p && p->up && p->sig != SIG_OFF && p->owner;
}

/* The peer with signatures on whose key the trust file gives as target. */
static struct rde_peer *peer_of_key(struct rdesig *s, const uint8_t *target)
{
	struct rde *r = s->rde;
	for (unsigned i = 0; i < r->npeers && s->have_trust; i++) {
		struct rde_peer *p = r->peers[i];
		const uint8_t *k = peer_signed(p) ? trust_router_key(&s->trust, p->name, strlen(p->name)) : NULL;
		if (k && memcmp(k, target, SIGKEY_PUBLIC_LEN) == 0)
			return p;
	}
	return NULL;
}

/* A hop signed for p: its name, or every name of its set, sent to p now. */
static void resend_hop(struct rdesig *s, struct rde_peer *p, struct hop *h)
{
	if (!h->set) {
		resend(s, p, h->wire, h->len);
		return;
	}
	const struct sig_chain *c = h->set->chain;
	for (uint32_t i = 0; i < c->set_n; i++) {
		const uint8_t *w = c->set + c->set_off[i];
		resend(s, p, w + 1, w[0]);
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
		struct rde_peer *p = s->stopping ? NULL : peer_of_key(s, target);
		if (p) {
			packer_begin(s->rde, rde_emit_to_peer, p);
			packer_sign_for(p);
		}
		for (size_t k = i; k < b->n; k++) {
			struct hop *h = run->hops[k];
			if (!h->pending || memcmp(h->target, target, SIGKEY_PUBLIC_LEN) != 0)
				continue;
			if (p)
				resend_hop(s, p, h);
			h->pending = false;
			if (h->set)
				attrs_put(s->rde, h->set);
			h->set = NULL;
		}
		if (p)
			packer_end();
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
			attrs_put(s->rde, s->asked[i]->set);
			s->asked[i]->set = NULL;
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
	attest_sign_batch_submit(&s->pool, &run->b);
}

/* A slice of the caches a poll: expired entries go, hops near their expiry are signed again
 * (sent to their peer when made), origins are re-signed when next exported. */
static void sweep(struct rdesig *s)
{
	uint64_t now = unix_now();
	for (size_t i = 0; i < SWEEP_BUCKETS && s->hops.nb; i++) {
		size_t k = s->hops.sweep++ & (s->hops.nb - 1);
		for (struct hop **pp = (struct hop **)&s->hops.b[k], *h; (h = *pp);) {
			if (!h->pending && h->have && h->w.expiry <= now) {
				*pp = h->next;
				s->hops.n--;
				free(h);
				continue;
			}
			struct rde_peer *p = h->have && !h->pending && h->w.expiry <= now + SIG_RENEW
					     ? peer_of_key(s, h->target) : NULL;
			if (p) {
				struct rib_entry *e = rib_lookup(&s->rde->rib, h->wire, h->len, rib_hash(h->wire, h->len));
				struct rib_attrs *a = e ? e->adv : NULL;
				if (a)
					hop_request(s, h, rdesig_is_set(a) && !memcmp(a->chain->head, h->prev,
										      ATTEST_DIGEST_LEN) ? a : NULL);
			}
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
			if (o->w.expiry <= now + SIG_RENEW && !s->stopping) {
				/* passed on again: re-signed on export, then a new hop for each peer */
				struct rde *r = s->rde;
				for (unsigned q = 0; q < r->npeers; q++) {
					struct rde_peer *p = r->peers[q];
					if (!peer_signed(p))
						continue;
					packer_begin(r, rde_emit_to_peer, p);
					packer_sign_for(p);
					resend(s, p, o->wire, o->len);
					packer_end();
				}
			}
			pp = &o->next;
		}
	}
}

static void table_free(struct sig_table *t)
{
	for (size_t i = 0; i < t->nb; i++)
		for (void *e = t->b[i], *n; e; e = n) {
			n = *(void **)e;
			free(e);
		}
	free(t->b);
}

/* ---- a new trust file: the stored signed routes checked again ---- */

/* The Route a stored signed route was received as: what attest_prepare checks. */
static void route_of(const struct rib_entry *e, const struct rib_attrs *a, Nbrp__Route *rt,
		     ProtobufCBinaryData *name, char **path)
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
	rt->attestations = a->chain->ptrs;
	rt->n_attestations = a->chain->n;
	if (a->chain->set_n)
		rt->aggregate_digest = a->chain->digest;        /* the set's, checked when received */
	if (agg) {
		rt->aggregate = *name;
		rt->aggregate_version = a->k.agg_version;
		rt->aggregate_digest = a->chain->digest;
	}
}

static void on_rechecked(struct attest_batch *b)
{
	struct recheck_run *run = b->arg;
	struct rdesig *s = run->s;
	struct rde *r = s->rde;
	for (size_t i = 0; i < run->n; i++) {
		struct recheck_item *it = &run->items[i];
		struct rde_peer *p = s->stopping ? NULL : rde_peer_by_name(r, it->peer);
		struct rib_entry *e = p ? rib_lookup(&r->rib, it->wire, it->len, rib_hash(it->wire, it->len)) : NULL;
		for (struct rib_route *rt = e ? e->routes : NULL; rt; rt = rt->next)
			if (rt->a == it->a) {
				rde_route_recheck(r, e, rt, &run->b.jobs[i]);
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
	struct rde *r = s->rde;
	for (struct rib_route *rt = e->routes, *next; rt; rt = next) {
		next = rt->next;        /* rt may be replaced */
		struct rib_attrs *a = rt->a;
		struct rde_peer *p = a->k.peer;
		if (!a->chain || !p || p->sig == SIG_OFF || route_stale(rt))
			continue;
		if (a->chain->expiry >= x->now && a->chain->expiry < s->next_expiry)
			s->next_expiry = a->chain->expiry;
		Nbrp__Route route;
		ProtobufCBinaryData name;
		char *path[NBRP_MAX_PATH];
		route_of(e, a, &route, &name, path);
		struct attest_job j;
		enum attest_state st = attest_prepare_stored(&s->v, &route, p->server_mode ? NULL : p->name,
							     a->chain->set_n != 0, x->now, &j);
		s->rechecked++;
		if (st != ATTEST_PENDING) {
			rde_route_recheck(r, e, rt, &j);
			continue;
		}
		struct recheck_run *run = x->run;
		if (run && run->n == run->cap) {
			size_t cap = run->cap ? run->cap * 2 : 64;
			struct recheck_item *v = realloc(run->items, cap * sizeof(*v));
			struct attest_job *jv = v ? realloc(run->b.jobs, cap * sizeof(*jv)) : NULL;
			if (v)
				run->items = v;
			if (jv)
				run->b.jobs = jv;
			if (v && jv)
				run->cap = cap;
		}
		if (!run || run->n == run->cap) {
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
	if (!s->rde->sig)
		return;                 /* at start: nothing stored yet */
	rib_cursor_start(&s->rde->rib, &s->recheck_cur);
	s->rechecking = true;
	s->next_expiry = UINT64_MAX;    /* found again by the walk, and by chains kept meanwhile */
	uv_timer_start(&s->recheck, on_recheck, 0, 0);
}
