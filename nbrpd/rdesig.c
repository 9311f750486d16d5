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

struct rdesig {
	struct rde *rde;
	struct sigkey key;
	struct trust trust;
	bool have_trust;
	struct attest_verifier v;
	struct sigpool pool;
	uv_timer_t poll;                /* the trust file's modification time */
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
	if (verbose)
		log_info("signatures: %s read: %zu routers, %zu origins", cfg->trust_file, t.n_routers, t.n_origins);
}

static void on_poll(uv_timer_t *h)
{
	struct rdesig *s = h->data;
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
	attest_verifier_set_trust(&s->v, NULL);
	read_trust(s, false);
	uv_timer_init(r->loop, &s->poll);
	s->poll.data = s;
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

void rdesig_stop(struct rdesig *s)
{
	if (!s)
		return;
	s->stopping = true;
	uv_close((uv_handle_t *)&s->poll, NULL);
	sigpool_close(&s->pool);        /* owed callbacks run, and free what they carry */
}

void rdesig_free(struct rdesig *s)
{
	if (!s)
		return;
	attest_verifier_free(&s->v);
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
	if (p->sig == SIG_PREFER && j->state != ATTEST_VALID)
		k->local_pref = 0;      /* below every valid route of a peer with a preference above 0 */
}
