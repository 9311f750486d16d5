/*
 * Aggregates in nbrpd (aggregates.h): stores, definitions, fetches, the
 * transfer server, and the members in inrpd's FIB.
 *
 * An aggregate's record lives as long as the daemon: aggregates are few
 * (thousands), and a record is what keeps its store open, so that a route
 * coming back finds the version at once.  A store is opened when the
 * aggregate is first defined or offered; opening reads its snapshot and
 * journal (docs/AGGREGATES.md: about 0.3 s for a million members).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aggfile.h"
#include "aggregates.h"
#include "aggstore.h"
#include "attest.h"
#include "chain.h"
#include "fibpush.h"
#include "hashkey.h"
#include "log.h"
#include "nameset.h"
#include "prefix.h"
#include "xfrserv.h"

#define RETRY_MIN_MS            1000    /* after a failed fetch; doubles up to */
#define RETRY_MAX_MS            60000
#define FETCH_MAX               4       /* fetches at once; a transfer server refuses more than its bound (8) */

struct aggregate {
	struct aggregates *owner;
	struct chain_node hlink;        /* on owner->tab */
	struct name name;
	struct aggstore *store;         /* NULL: could not be opened (error says why) */
	char error[256];
	bool local;                     /* defined in the configuration */
	bool offered;                   /* by a peer's route: */
	uint32_t offered_version;
	struct ip_endpoint offered_source;
	bool offered_signed;            /* with the member digest a valid route signed */
	uint8_t offered_digest[ATTEST_DIGEST_LEN];
	bool want_whole;                /* fetch AXFR: the version held is not to be built on */
	bool discarded;                 /* ...and is out of service (not routed, served or told) until then */
	uint64_t discards;
	struct xfrcli *fetch;           /* running */
	bool waiting;                   /* in the queue for a fetch */
	struct aggregate *wnext;
	bool fetch_had;                 /* the version held when it began */
	uint32_t fetch_from;
	bool fetch_whole;               /* it was asked whole, and the version held was out of service */
	bool fetch_discarded;
	uv_timer_t retry;               /* after a failure */
	uint64_t retry_ms;
	uint64_t fetches, failures;
	uint64_t cuts[XFRCLI_CUTS];     /* failures by the limit that ended them, or the check that refused them */
	bool has_last;
	struct xfrcli_result last;
	uint64_t last_unix;
};

struct aggregates {
	uv_loop_t *loop;
	const struct nbrpd_config *cfg;
	struct aggregates_ops ops;
	struct fibpush *fib;
	struct chain_table tab;         /* by name */
	struct xfrserv *serv;
	struct ip_endpoint serv_at;
	struct prefix *acl;
	unsigned nacl;
	uint64_t serv_idle_ms, serv_time_ms;
	uint64_t fetch_bytes;
	unsigned fetching;              /* fetches running, at most FETCH_MAX */
	struct aggregate *waitq, **waitq_tail;  /* aggregates to fetch when one ends, in order */
	bool stopping;
};

static uint64_t name_hash(const struct name *n)
{
	return hashkey64(n->wire, n->len);      /* peers name them */
}

static struct aggregate *find(const struct aggregates *a, const struct name *n)
{
	uint64_t h = name_hash(n);
	for (struct chain_node *c = chain_first(&a->tab, h); c; c = c->next) {
		struct aggregate *g = chain_entry(c, struct aggregate, hlink);
		if (c->hash == h && name_equal(&g->name, n))
			return g;
	}
	return NULL;
}

/* Every aggregate, in no order: from next_of(a, NULL) until NULL. */
static struct aggregate *next_of(const struct aggregates *a, const struct aggregate *g)
{
	const struct chain_node *c = chain_next(&a->tab, g ? &g->hlink : NULL);
	return c ? chain_entry(c, struct aggregate, hlink) : NULL;
}

static void text_of(const struct name *n, char *buf, size_t len)
{
	name_to_text(n, buf, len);
}

/* The record of an aggregate, made (with its store opened) the first time. */
static struct aggregate *get(struct aggregates *a, const struct name *n)
{
	struct aggregate *g = find(a, n);
	if (g)
		return g;
	if (!(g = calloc(1, sizeof(*g))))
		return NULL;
	g->owner = a;
	g->name = *n;
	g->retry_ms = RETRY_MIN_MS;
	uv_timer_init(a->loop, &g->retry);
	g->retry.data = g;
	(void)chain_add(&a->tab, &g->hlink, name_hash(n));      /* has buckets: aggregates_new */
	if (!a->cfg->state_dir) {
		char t[NAME_MAX_TEXT];
		text_of(n, t, sizeof(t));
		snprintf(g->error, sizeof(g->error), "no state-dir: aggregates are not kept (set state-dir and restart)");
		log_warn("aggregate %s: no state-dir, so its members are neither fetched nor served "
			 "(set state-dir and restart)", t);
		return g;
	}
	char err[256];
	if (aggstore_open(&g->store, a->cfg->state_dir, n, err, sizeof(err)) < 0) {
		char t[NAME_MAX_TEXT];
		text_of(n, t, sizeof(t));
		snprintf(g->error, sizeof(g->error), "%s", err);
		log_err("aggregate %s: %s: routing without its members", t, err);
		g->store = NULL;
	}
	return g;
}

/* ---- members into inrpd's FIB ---- */

static void push_all(struct aggregates *a, struct aggregate *g, bool replace)
{
	struct route routes[ROUTESET_MAX_ROUTES];
	unsigned count = a->ops.routes(a->ops.arg, &g->name, routes);
	const struct nameset *m = aggstore_members(g->store);
	fibpush_members_begin(a->fib, &g->name, routes, count, replace);
	size_t pos = 0;
	const uint8_t *wire;
	uint8_t len;
	while (nameset_next(m, &pos, &wire, &len))
		fibpush_member(a->fib, true, wire, len);
	fibpush_members_end(a->fib);
}

/* The store went from version `from` (had) to its current one: inrpd hears the difference. */
static void push_change(struct aggregates *a, struct aggregate *g, bool had, uint32_t from)
{
	if (!a->fib)
		return;
	if (!had) {
		push_all(a, g, false);
		return;
	}
	struct aggstore_diffs d;
	int rc = aggstore_diffs_open(g->store, from, &d);
	if (rc == AGGSTORE_CURRENT)
		return;
	if (rc != AGGSTORE_DIFFS) {
		/* the journal does not reach back (a whole new set): the members again, whole */
		push_all(a, g, true);
		return;
	}
	struct route routes[ROUTESET_MAX_ROUTES];
	unsigned count = a->ops.routes(a->ops.arg, &g->name, routes);
	struct aggstore_diff df;
	bool ok = true;
	/* each version's removals, then its additions: a name may leave and come back */
	while (ok && (rc = aggstore_diffs_next(&d, &df)) == 1) {
		fibpush_members_begin(a->fib, &g->name, routes, count, false);
		size_t pos = 0;
		const uint8_t *wire;
		uint8_t len;
		while (namelist_walk(df.dels, df.dels_len, &pos, &wire, &len))
			fibpush_member(a->fib, false, wire, len);
		pos = 0;
		while (namelist_walk(df.adds, df.adds_len, &pos, &wire, &len))
			fibpush_member(a->fib, true, wire, len);
		fibpush_members_end(a->fib);
	}
	aggstore_diffs_close(&d);
	if (rc < 0)
		push_all(a, g, true);   /* the journal could not be read back: whole */
}

static void tell_stored(struct aggregates *a, struct aggregate *g)
{
	uint32_t v;
	if (!g->store || g->discarded || !aggstore_version(g->store, &v))
		return;
	a->ops.stored(a->ops.arg, &g->name, v, aggstore_members(g->store));
}

/* ---- fetching what peers offer ---- */

static void fetch_start(struct aggregates *a, struct aggregate *g);

/* Slots free: the aggregates waiting start their fetches, in order (those that still need one). */
static void fetch_next(struct aggregates *a)
{
	while (a->fetching < FETCH_MAX && a->waitq) {
		struct aggregate *g = a->waitq;
		a->waitq = g->wnext;
		if (!a->waitq)
			a->waitq_tail = &a->waitq;
		g->waiting = false;
		fetch_start(a, g);
	}
}

static void on_retry(uv_timer_t *t)
{
	struct aggregate *g = t->data;
	fetch_start(g->owner, g);
}

static void fetch_done(void *ctx, const struct xfrcli_result *r)
{
	struct aggregate *g = ctx;
	struct aggregates *a = g->owner;
	g->fetch = NULL;
	a->fetching--;
	g->has_last = true;
	g->last = *r;
	g->last_unix = (uint64_t)time(NULL);
	a->fetch_bytes += r->bytes;
	uint32_t now;
	bool has = aggstore_version(g->store, &now);
	if (r->status == 0 && g->fetch_whole) {
		g->want_whole = g->discarded = false;      /* the version held is the one asked for */
		if (g->fetch_discarded && a->fib)
			push_all(a, g, true);           /* inrpd holds none of its members */
	}
	/* what arrived whole is stored, also when the fetch then failed */
	if (has && (r->versions || !g->fetch_had || now != g->fetch_from)) {
		if (!g->fetch_discarded)
			push_change(a, g, g->fetch_had, g->fetch_from);
		tell_stored(a, g);
	}
	if (a->stopping)
		return;
	if (r->status < 0) {
		g->failures++;
		g->cuts[r->cut]++;
		uv_timer_start(&g->retry, on_retry, g->retry_ms, 0);
		g->retry_ms = g->retry_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : g->retry_ms * 2;
	} else {
		g->retry_ms = RETRY_MIN_MS;
		fetch_start(a, g);      /* a newer version offered meanwhile: its slot first */
	}
	fetch_next(a);
}

static void fetch_start(struct aggregates *a, struct aggregate *g)
{
	if (a->stopping || g->fetch || !g->offered || g->local || !g->store ||
	    uv_is_active((uv_handle_t *)&g->retry))
		return;
	uint32_t held = 0;
	bool had = aggstore_version(g->store, &held);
	if (had && !g->want_whole && !serial_gt(g->offered_version, held))
		return;                 /* held, or what is offered is older (or undefined, 2^31 apart) */
	if (a->fetching >= FETCH_MAX) {
		/* a new session offering many aggregates: a few transfers at a time, not a refused herd */
		if (!g->waiting) {
			g->waiting = true;
			g->wnext = NULL;
			*a->waitq_tail = g;
			a->waitq_tail = &g->wnext;
		}
		return;
	}
	struct sockaddr_storage ss;
	ip_endpoint_sockaddr(&g->offered_source, &ss);
	g->fetch_had = had;
	g->fetch_from = held;
	g->fetch_whole = g->want_whole;
	g->fetch_discarded = g->discarded;
	g->fetches++;
	struct xfrcli_limits lim = {
		.max_names = a->cfg->fetch_max_names, .max_bytes = a->cfg->fetch_max_bytes,
		.idle_ms = (unsigned)a->cfg->fetch_idle_ms, .time_ms = (unsigned)a->cfg->fetch_time_ms,
	};
	/* the version offered and no other; with signatures, the members signed and no others */
	struct xfrcli_want want = {
		.version = g->offered_version, .digest = g->offered_signed ? g->offered_digest : NULL,
		.whole = g->want_whole,
	};
	/* from transfer-source, else from transfer-listen's address when it names one, so an
	 * allow-transfer of the router's address lets it in on a host with several */
	const struct ip_endpoint *src = a->cfg->has_transfer_source ? &a->cfg->transfer_source
				      : a->cfg->has_transfer && !ip_is_any(a->cfg->transfer.family, a->cfg->transfer.addr)
				      ? &a->cfg->transfer : NULL;
	struct sockaddr_storage local = { 0 };
	if (src) {
		struct ip_endpoint e = *src;
		e.port = 0;
		ip_endpoint_sockaddr(&e, &local);
	}
	if (xfrcli_fetch(&g->fetch, a->loop, g->store, (struct sockaddr *)&ss, src ? (struct sockaddr *)&local : NULL,
			 &lim, &want, fetch_done, g) < 0) {
		g->fetch = NULL;
		g->failures++;
		uv_timer_start(&g->retry, on_retry, g->retry_ms, 0);
		return;
	}
	a->fetching++;
}

/* The version held is not the one valid routes sign: its members leave inrpd's FIB until it is fetched whole. */
static void discard(struct aggregates *a, struct aggregate *g, uint32_t version)
{
	uint32_t held;
	g->want_whole = true;
	if (g->discarded || !g->store || !aggstore_version(g->store, &held))
		return;
	char t[NAME_MAX_TEXT];
	text_of(&g->name, t, sizeof(t));
	log_warn("aggregate %s: version %u held is not what the valid routes sign (version %u): "
		 "out of service, fetched whole", t, held, version);
	g->discarded = true;
	g->discards++;
	if (a->fib) {
		struct route routes[ROUTESET_MAX_ROUTES];
		unsigned count = a->ops.routes(a->ops.arg, &g->name, routes);
		fibpush_members_begin(a->fib, &g->name, routes, count, true);
		fibpush_members_end(a->fib);
	}
}

void aggregates_offered(struct aggregates *a, const struct name *agg, uint32_t version,
			const struct ip_endpoint *source, const uint8_t *digest, bool whole)
{
	struct aggregate *g = find(a, agg);
	bool fresh = !g;
	if (!g && !(g = get(a, agg))) {
		log_err("out of memory for an aggregate");
		return;
	}
	if (fresh && g->store) {
		/* a version stored before (we restarted): in service at once, nothing fetched */
		uint32_t v;
		if (aggstore_version(g->store, &v)) {
			if (a->fib)
				push_all(a, g, false);
			tell_stored(a, g);
		}
	}
	bool news = !g->offered || memcmp(&g->offered_source, source, sizeof(*source)) != 0 ||
		    version != g->offered_version || (digest != NULL) != g->offered_signed ||
		    (digest && memcmp(digest, g->offered_digest, ATTEST_DIGEST_LEN) != 0);
	g->offered = true;
	g->offered_version = version;
	g->offered_source = *source;
	if ((g->offered_signed = digest != NULL))
		memcpy(g->offered_digest, digest, ATTEST_DIGEST_LEN);
	if (whole && !g->local)
		discard(a, g, version);
	if (news && uv_is_active((uv_handle_t *)&g->retry)) {
		uv_timer_stop(&g->retry);       /* something else to try, or somewhere else: now */
		g->retry_ms = RETRY_MIN_MS;
	}
	fetch_start(a, g);
}

/* ---- definitions ---- */

struct report_ctx {
	const char *agg;
};

static void report_bad_line(void *ctx, const char *msg)
{
	struct report_ctx *r = ctx;
	log_err("aggregate %s: %s", r->agg, msg);
}

/* Reads a definition; returns false when it could not be read (logged). */
static bool define(struct aggregates *a, const struct nbrpd_content *c)
{
	char t[NAME_MAX_TEXT];
	text_of(&c->name, t, sizeof(t));
	struct aggregate *g = get(a, &c->name);
	if (!g) {
		log_err("aggregate %s: out of memory", t);
		return false;
	}
	g->local = true;
	g->want_whole = g->discarded = false;   /* ours: what we define is the truth */
	if (g->fetch) {
		xfrcli_cancel(g->fetch);        /* defined here now: ours wins */
		g->fetch = NULL;
		a->fetching--;
		fetch_next(a);
	}
	uv_timer_stop(&g->retry);
	if (!g->store)
		return false;
	struct nameset set;
	nameset_init(&set);
	bool ok = true;
	if (c->members_file) {
		struct report_ctx rc = { .agg = t };
		struct aggfile_result res;
		ok = aggfile_read(c->members_file, &set, &res, report_bad_line, &rc, 20) == 0;
		if (!ok)
			log_err("aggregate %s: %s not used (%u bad lines): keeping the version held", t,
				c->members_file, res.bad);
	}
	size_t pos = 0;
	const uint8_t *wire;
	uint8_t len;
	while (ok && namelist_walk(c->members.buf, c->members.len, &pos, &wire, &len))
		ok = nameset_add(&set, wire, len) >= 0;
	uint32_t held = 0;
	bool had = aggstore_version(g->store, &held);
	bool same = false;
	struct namelist dels, adds;
	namelist_init(&dels);
	namelist_init(&adds);
	if (ok && had) {
		ok = nameset_diff(aggstore_members(g->store), &set, &dels, &adds) == 0;
		same = dels.count == 0 && adds.count == 0;
	}
	if (ok && !same) {
		/* a new history starts from the clock, so it is newer than any a wiped state-dir forgot;
		 * a next version is the difference just computed */
		uint32_t version = had ? held + 1 : (uint32_t)time(NULL);
		int rc = had ? aggstore_apply(g->store, held, version, &dels, &adds)
			     : aggstore_replace(g->store, version, &set);
		if (rc < 0) {
			log_err("aggregate %s: cannot store version %u: %s; keeping version %s", t, version,
				aggstore_error(g->store), had ? "held" : "none");
			ok = false;
		} else {
			log_info("aggregate %s: version %u, %u members", t, version, set.count);
			push_change(a, g, had, held);
		}
	}
	namelist_free(&dels);
	namelist_free(&adds);
	nameset_free(&set);
	tell_stored(a, g);
	return ok;
}

/* ---- the transfer server ---- */

static struct aggstore *serve_lookup(void *ctx, const struct name *agg)
{
	struct aggregate *g = find(ctx, agg);
	return g && !g->discarded ? g->store : NULL;
}

/* allow-transfer, or the peers' addresses and loopback. */
static int acl_of(const struct nbrpd_config *cfg, struct prefix **out, unsigned *n)
{
	unsigned cap = cfg->allow_transfer ? cfg->nallow_transfer : cfg->npeers + 2;
	struct prefix *v = calloc(cap ? cap : 1, sizeof(*v));
	if (!v)
		return -1;
	if (cfg->allow_transfer) {
		memcpy(v, cfg->allow_transfer, cap * sizeof(*v));
	} else {
		prefix_parse("127.0.0.0/8", &v[0]);
		prefix_parse("::1/128", &v[1]);
		for (unsigned i = 0; i < cfg->npeers; i++) {
			const struct ip_endpoint *e = &cfg->peers[i].remote;
			v[2 + i].family = (uint8_t)e->family;
			v[2 + i].len = e->family == AF_INET ? 32 : 128;
			memcpy(v[2 + i].addr, e->addr, 16);
		}
	}
	*out = v;
	*n = cap;
	return 0;
}

static int serve(struct aggregates *a, const struct nbrpd_config *cfg, char *err, size_t err_len)
{
	struct prefix *acl;
	unsigned nacl;
	if (acl_of(cfg, &acl, &nacl) < 0) {
		snprintf(err, err_len, "out of memory");
		return -1;
	}
	bool same = a->serv && memcmp(&a->serv_at, &cfg->transfer, sizeof(cfg->transfer)) == 0 &&
		    nacl == a->nacl && memcmp(acl, a->acl, nacl * sizeof(*acl)) == 0 &&
		    a->serv_idle_ms == cfg->transfer_idle_ms && a->serv_time_ms == cfg->transfer_time_ms;
	if (same || (!cfg->has_transfer && !a->serv)) {
		free(acl);
		return 0;
	}
	if (a->serv) {
		xfrserv_stop(a->serv);
		a->serv = NULL;
	}
	free(a->acl);
	a->acl = acl;
	a->nacl = nacl;
	if (!cfg->has_transfer)
		return 0;
	struct xfrserv_config sc = {
		.family = cfg->transfer.family, .port = cfg->transfer.port, .acl = acl, .nacl = nacl,
		.idle_timeout_ms = (unsigned)cfg->transfer_idle_ms, .time_limit_ms = (unsigned)cfg->transfer_time_ms,
	};
	memcpy(sc.addr, cfg->transfer.addr, 16);
	if (xfrserv_start(&a->serv, a->loop, &sc, serve_lookup, a, err, err_len) < 0) {
		a->serv = NULL;
		return -1;
	}
	a->serv_at = cfg->transfer;
	a->serv_idle_ms = cfg->transfer_idle_ms;
	a->serv_time_ms = cfg->transfer_time_ms;
	return 0;
}

/* ---- life ---- */

static void preload(void *ctx, const struct name *agg)
{
	struct aggregates *a = ctx;
	struct aggregate *g = get(a, agg);
	if (g)
		tell_stored(a, g);
}

struct aggregates *aggregates_new(uv_loop_t *loop, const struct nbrpd_config *cfg,
				  const struct aggregates_ops *ops, char *err, size_t err_len)
{
	struct aggregates *a = calloc(1, sizeof(*a));
	if (!a || chain_init(&a->tab) < 0) {
		free(a);
		snprintf(err, err_len, "out of memory");
		return NULL;
	}
	a->loop = loop;
	a->cfg = cfg;
	a->ops = *ops;
	a->waitq_tail = &a->waitq;
	char e[256];
	if (serve(a, cfg, e, sizeof(e)) < 0) {
		char at[ENDPOINT_TEXT_MAX];
		snprintf(err, err_len, "transfer-listen %s: %s", ip_endpoint_format(&cfg->transfer, at, sizeof(at)), e);
		free(a->acl);
		chain_free(&a->tab);
		free(a);
		return NULL;
	}
	/* every version stored before is in service from the start: the first FIB sync has its
	 * members, and peers are offered it as soon as a route for it comes back */
	if (cfg->state_dir) {
		uint64_t t0 = uv_hrtime();
		int rc = aggstore_list(cfg->state_dir, preload, a);
		if (rc < 0)
			log_err("state-dir %s: %s", cfg->state_dir, strerror(-rc));
		struct aggregates_stats st;
		aggregates_stats(a, &st);
		if (st.aggregates)
			log_info("state-dir %s: %llu aggregates, %llu members, read in %.3f s", cfg->state_dir,
				 (unsigned long long)st.aggregates, (unsigned long long)st.members,
				 (double)(uv_hrtime() - t0) / 1e9);
	}
	return a;
}

void aggregates_set_fib(struct aggregates *a, struct fibpush *fib)
{
	a->fib = fib;
}

unsigned aggregates_configure(struct aggregates *a, const struct nbrpd_config *cfg)
{
	a->cfg = cfg;
	char err[256];
	if (serve(a, cfg, err, sizeof(err)) < 0)
		log_err("transfer-listen: %s: aggregates are not served", err);
	for (struct aggregate *g = next_of(a, NULL); g; g = next_of(a, g))
		g->local = false;
	unsigned bad = 0;
	for (unsigned i = 0; i < cfg->ncontent; i++)
		if (cfg->content[i].aggregate && !define(a, &cfg->content[i]))
			bad++;
	/* one no longer defined here may now be fetched from peers; a learned version is told
	 * again (nothing new for the RDE, unless signatures just started: it takes its digest) */
	for (struct aggregate *g = next_of(a, NULL); g; g = next_of(a, g)) {
		if (!g->local)
			tell_stored(a, g);
		fetch_start(a, g);
	}
	return bad;
}

const struct nameset *aggregates_members(struct aggregates *a, const struct name *agg)
{
	struct aggregate *g = find(a, agg);
	uint32_t v;
	return g && g->store && !g->discarded && aggstore_version(g->store, &v) ? aggstore_members(g->store) : NULL;
}

void aggregates_stop(struct aggregates *a)
{
	if (!a)
		return;
	a->stopping = true;
	for (struct aggregate *g = next_of(a, NULL); g; g = next_of(a, g)) {
		if (g->fetch)
			xfrcli_cancel(g->fetch);
		g->fetch = NULL;
		uv_close((uv_handle_t *)&g->retry, NULL);
	}
	if (a->serv)
		xfrserv_stop(a->serv);
	a->serv = NULL;
}

void aggregates_free(struct aggregates *a)
{
	if (!a)
		return;
	for (struct aggregate *g = next_of(a, NULL), *n; g; g = n) {
		n = next_of(a, g);
		aggstore_close(g->store);
		free(g);
	}
	chain_free(&a->tab);
	free(a->acl);
	free(a);
}

/* ---- the FIB channel's full sync ---- */

struct aggregates_sync {
	struct aggregate **list;        /* as at the start: records are never freed while running */
	size_t n, next;
};

struct aggregates_sync *aggregates_sync_begin(struct aggregates *a)
{
	struct aggregates_sync *s = calloc(1, sizeof(*s));
	if (!s || (a->tab.n && !(s->list = malloc(a->tab.n * sizeof(*s->list))))) {
		free(s);
		return NULL;
	}
	for (struct aggregate *g = next_of(a, NULL); g; g = next_of(a, g))
		s->list[s->n++] = g;
	return s;
}

bool aggregates_sync_step(struct aggregates *a, struct aggregates_sync *s, struct fibpush *fib, unsigned budget)
{
	struct fibpush *was = a->fib;
	a->fib = fib;
	unsigned sent = 0;
	/* an aggregate goes whole, in one turn: its members must not change under the walk */
	while (s->next < s->n && sent < budget) {
		struct aggregate *g = s->list[s->next++];
		uint32_t v;
		if (!g->store || g->discarded || !aggstore_version(g->store, &v))
			continue;
		push_all(a, g, false);
		sent += aggstore_members(g->store)->count + 1;
	}
	a->fib = was;
	return s->next >= s->n;
}

void aggregates_sync_end(struct aggregates_sync *s)
{
	if (s)
		free(s->list);
	free(s);
}

/* ---- reading ---- */

static void view_of(const struct aggregate *g, struct aggregate_view *v)
{
	memset(v, 0, sizeof(*v));
	v->name = g->name;
	v->local = g->local;
	v->offered = g->offered && !g->local;
	v->offered_version = g->offered_version;
	v->offered_source = g->offered_source;
	v->fetching = g->fetch != NULL;
	v->fetches = g->fetches;
	v->failures = g->failures;
	v->over_names = g->cuts[XFRCLI_CUT_NAMES];
	v->over_bytes = g->cuts[XFRCLI_CUT_BYTES];
	v->idle_cuts = g->cuts[XFRCLI_CUT_IDLE];
	v->time_cuts = g->cuts[XFRCLI_CUT_TIME];
	v->wrong_version = g->cuts[XFRCLI_CUT_VERSION];
	v->digest_mismatch = g->cuts[XFRCLI_CUT_DIGEST];
	v->discarded = g->discarded;
	v->discards = g->discards;
	v->has_last = g->has_last;
	v->last = g->last;
	v->last_unix = g->last_unix;
	v->error = g->error;
	if (g->store) {
		struct aggstore_stats st;
		aggstore_stats(g->store, &st);
		v->has_version = st.has_version;
		v->version = st.serial;
		v->members = st.members;
		v->snapshot_bytes = st.snapshot_bytes;
		v->journal_bytes = st.journal_bytes;
		v->journal_versions = st.journal_versions;
		v->compactions = st.compactions;
		v->store_errors = st.errors;
		v->read_only = st.read_only;
		if (!g->error[0])
			v->error = aggstore_error(g->store);
	}
	if (!v->error)
		v->error = "";
}

static int by_name(const void *x, const void *y)
{
	const struct aggregate *a = *(struct aggregate *const *)x, *b = *(struct aggregate *const *)y;
	return name_compare(&a->name, &b->name);
}

void aggregates_walk(struct aggregates *a, aggregates_walk_fn fn, void *arg)
{
	struct aggregate **list = malloc((a->tab.n ? a->tab.n : 1) * sizeof(*list));
	if (!list)
		return;
	size_t n = 0;
	for (struct aggregate *g = next_of(a, NULL); g; g = next_of(a, g))
		list[n++] = g;
	qsort(list, n, sizeof(*list), by_name);
	for (size_t i = 0; i < n; i++) {
		struct aggregate_view v;
		view_of(list[i], &v);
		fn(&v, arg);
	}
	free(list);
}

bool aggregates_view(struct aggregates *a, const struct name *agg, struct aggregate_view *out)
{
	const struct aggregate *g = find(a, agg);
	if (g)
		view_of(g, out);
	return g != NULL;
}

void aggregates_stats(struct aggregates *a, struct aggregates_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->aggregates = a->tab.n;
	out->fetch_bytes = a->fetch_bytes;
	for (struct aggregate *g = next_of(a, NULL); g; g = next_of(a, g)) {
		out->fetches += g->fetches;
		out->fetch_failures += g->failures;
		out->fetch_over_names += g->cuts[XFRCLI_CUT_NAMES];
		out->fetch_over_bytes += g->cuts[XFRCLI_CUT_BYTES];
		out->fetch_idle += g->cuts[XFRCLI_CUT_IDLE];
		out->fetch_time += g->cuts[XFRCLI_CUT_TIME];
		out->fetch_wrong_version += g->cuts[XFRCLI_CUT_VERSION];
		out->fetch_digest_mismatch += g->cuts[XFRCLI_CUT_DIGEST];
		out->discards += g->discards;
		if (g->store) {
			struct aggstore_stats st;
			aggstore_stats(g->store, &st);
			out->members += st.members;
			out->store_errors += st.errors;
		}
	}
	if (a->serv) {
		struct xfrserv_stats st;
		xfrserv_stats(a->serv, &st);
		out->serving = true;
		out->transfer_port = xfrserv_port(a->serv);
		out->served_axfr = st.axfr + st.ixfr_full;
		out->served_ixfr = st.ixfr;
		out->served_bytes = st.bytes;
		out->refused = st.closed_acl + st.refused_acl + st.refused_busy;
		out->closed_acl = st.closed_acl;
		out->closed_full = st.closed_full;
		out->closed_idle = st.closed_idle;
		out->closed_time = st.closed_time;
	}
}
