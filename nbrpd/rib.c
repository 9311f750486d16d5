/*
 * The RIB: every route nbrpd knows, per name, and the decision.
 *
 * A name's entry holds its routes (Adj-RIB-In of every peer, plus local
 * content), the best few ranked (Loc-RIB), and which peers were told about
 * it (Adj-RIB-Out as one bit per peer).  A change marks the entry dirty;
 * rib_flush, run once per loop iteration, sends what changed to every
 * established peer in UPDATEs and to inrpd over the FIB channel.
 *
 * A route is split the way OpenBGPD's rde splits a prefix from its
 * rde_aspath (and BIRD its rte from the rta): what the peer said for many
 * names at once (peer, next hop, path, load, local preference) is interned
 * in a shared, reference-counted struct rib_attrs; per name there is only
 * a small struct rib_route (its age, its rank, stale or not).  Routes and
 * entries come from slabs, and a name is hashed once, when it arrives.
 *
 * Decision (docs/NBRP.md), best first, among usable routes (IP routing
 * reaches the next hop, nexthop.c):
 *   higher local preference (local content above everything learned)
 *   shorter effective distance: path length * load-ms-per-hop + load
 *   lower IGP metric to the next hop, then shorter BGP AS path (BIRD)
 *   older route (arrival order)
 *   lower peer name
 * A peer is told the best route unless it came from that peer or has the
 * peer's name in its path; the path it gets starts with our name, and the
 * next hop is our inrpd.  Load travels load-radius hops, then is sent as
 * 0 (unknown); a load change smaller than load-threshold is not sent, and
 * a name's load is re-sent at most once per load-interval (the change
 * waits, the latest figure goes out when the interval is over).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <xxhash.h>

#include "log.h"
#include "nbrpd.h"
#include "slab.h"

#define BATCH_NAMES     1024    /* names per UPDATE */
#define LOCAL_PREF_LOCAL UINT32_MAX

/* What a route says apart from its name; zeroed before filling (hashed and compared as bytes). */
struct rib_attrs_key {
	struct peer *peer;                      /* NULL: local content */
	const struct nbrpd_content *content;    /* local: its servers */
	uint32_t local_pref;
	uint32_t load_ms;
	struct nbrpd_endpoint next_hop;
	bool server;                            /* from a content server's own session */
	uint8_t npath;
	uint16_t path_bytes;
};

/* Interned attributes, shared by every route that says the same; immutable. */
struct rib_attrs {
	struct rib_attrs *hnext;
	uint32_t refs;                          /* routes, plus an UPDATE being applied */
	uint32_t hash;
	uint64_t sig;                           /* path and peer as one number, for peers (never 0) */
	uint64_t path_peers;                    /* peers (bit idx) whose name is in the path: not told */
	struct nexthop *nh;                     /* the next hop, as IP routing sees it */
	struct rib_attrs_key k;
	char path[];                            /* npath NUL-terminated router names */
};

/* One name's route from one peer, or its local content. */
struct rib_route {
	struct rib_route *next;
	struct rib_attrs *a;
	uint64_t seq;                           /* arrival order */
	uint8_t rank;                           /* 1..nbest among the best; 0: not ranked */
	bool stale;                             /* kept across the peer's restart */
};

struct rib_entry {
	struct rib_entry *hnext;
	struct rib_entry *dirty_next;
	struct rib_entry *deferred_next;
	struct rib_route *routes;
	struct rib_route *best;                 /* rank 1 (NULL: none usable); the others know their rank */
	uint64_t adv_time;                      /* uv_now of the last advertisement, ms */
	uint64_t adv_mask;                      /* peers told about it */
	uint64_t adv_sig;                       /* what they were told (0: nothing) */
	uint32_t adv_load;
	uint32_t hash;                          /* of the name, computed once */
	uint8_t nbest;
	bool dirty;
	bool resend;                            /* during a flush: peers told before hear again */
	bool deferred;                          /* a load change waits for load-interval */
	uint8_t len;
	uint8_t wire[];
};

/* Entries are sized to their name: one slab per 8 bytes of size. */
#define ENTRY_CLASS(len)        ((offsetof(struct rib_entry, wire) + (len) + 7) / 8)
#define ENTRY_CLASSES           (ENTRY_CLASS(NAME_MAX_WIRE) + 1)

struct rib {
	struct rib_entry **buckets;
	size_t nbuckets;
	uint64_t count;
	uint64_t seq;
	struct rib_entry *dirty;
	struct rib_entry *deferred;             /* load changes held back by load-interval */
	uv_timer_t deferred_timer;
	bool timer_ready;
	struct rib_attrs **attrs;               /* interned attributes */
	size_t nattrs_buckets, nattrs;
	struct slab routes;
	struct slab entries[ENTRY_CLASSES];
};

/* ---- the table ---- */

struct rib *rib_create(void)
{
	struct rib *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->nbuckets = 1024;
	r->buckets = calloc(r->nbuckets, sizeof(*r->buckets));
	r->nattrs_buckets = 64;
	r->attrs = calloc(r->nattrs_buckets, sizeof(*r->attrs));
	if (!r->buckets || !r->attrs) {
		free(r->buckets);
		free(r->attrs);
		free(r);
		return NULL;
	}
	slab_init(&r->routes, sizeof(struct rib_route));
	for (size_t c = 0; c < ENTRY_CLASSES; c++)
		slab_init(&r->entries[c], c * 8);
	return r;
}

void rib_free(struct rib *r)
{
	if (!r)
		return;
	/* routes and entries go with their slabs; the next-hop table goes as a whole */
	for (size_t i = 0; i < r->nattrs_buckets; i++) {
		struct rib_attrs *a = r->attrs[i];
		while (a) {
			struct rib_attrs *n = a->hnext;
			free(a);
			a = n;
		}
	}
	slab_destroy(&r->routes);
	for (size_t c = 0; c < ENTRY_CLASSES; c++)
		slab_destroy(&r->entries[c]);
	free(r->attrs);
	free(r->buckets);
	free(r);
}

uint64_t rib_count(const struct rib *r)
{
	return r->count;
}

uint64_t rib_route_count(const struct rib *r)
{
	return r->routes.live;
}

static uint32_t name_hash(const uint8_t *wire, size_t len)
{
	return (uint32_t)XXH3_64bits(wire, len);
}

static struct rib_entry *lookup(const struct rib *r, const uint8_t *wire, size_t len, uint32_t hash)
{
	for (struct rib_entry *e = r->buckets[hash & (r->nbuckets - 1)]; e; e = e->hnext)
		if (e->hash == hash && e->len == len && memcmp(e->wire, wire, len) == 0)
			return e;
	return NULL;
}

static struct rib_entry *lookup_name(const struct rib *r, const struct name *n)
{
	return lookup(r, n->wire, n->len, name_hash(n->wire, n->len));
}

const struct rib_entry *rib_find(const struct rib *r, const struct name *n)
{
	const struct rib_entry *e = lookup_name(r, n);
	return e && e->routes ? e : NULL;
}

static void grow(struct rib *r)
{
	size_t nb = r->nbuckets * 2;
	struct rib_entry **b = calloc(nb, sizeof(*b));
	if (!b)
		return;                 /* longer chains, still correct */
	for (size_t i = 0; i < r->nbuckets; i++) {
		struct rib_entry *e = r->buckets[i];
		while (e) {
			struct rib_entry *n = e->hnext;
			size_t k = e->hash & (nb - 1);
			e->hnext = b[k];
			b[k] = e;
			e = n;
		}
	}
	free(r->buckets);
	r->buckets = b;
	r->nbuckets = nb;
}

static struct rib_entry *get_or_add(struct rib *r, const uint8_t *wire, size_t len, uint32_t hash)
{
	struct rib_entry *e = lookup(r, wire, len, hash);
	if (e)
		return e;
	e = slab_alloc(&r->entries[ENTRY_CLASS(len)]);
	if (!e)
		return NULL;
	memset(e, 0, offsetof(struct rib_entry, wire));
	e->hash = hash;
	e->len = (uint8_t)len;
	memcpy(e->wire, wire, len);
	size_t k = hash & (r->nbuckets - 1);
	e->hnext = r->buckets[k];
	r->buckets[k] = e;
	if (++r->count > r->nbuckets)
		grow(r);
	return e;
}

static void entry_free(struct rib *r, struct rib_entry *e)
{
	slab_free(&r->entries[ENTRY_CLASS(e->len)], e);
}

void rib_entry_name(const struct rib_entry *e, struct name *out)
{
	out->len = e->len;
	memcpy(out->wire, e->wire, e->len);
}

void rib_walk(const struct rib *r, rib_walk_fn fn, void *arg)
{
	for (size_t i = 0; i < r->nbuckets; i++)
		for (struct rib_entry *e = r->buckets[i]; e; e = e->hnext)
			if (e->routes)
				fn(e, arg);
}

/* ---- shared attributes ---- */

static bool path_has(const struct rib_attrs *a, const char *name)
{
	const char *s = a->path;
	for (unsigned i = 0; i < a->k.npath; i++) {
		if (strcmp(s, name) == 0)
			return true;
		s += strlen(s) + 1;
	}
	return false;
}

/* Whether p's name is in a's path, as bit p->idx of path_peers. */
static void attrs_check_path(struct rib_attrs *a, const struct peer *p)
{
	uint64_t bit = 1ull << p->idx;
	if (p->configured && path_has(a, p->cfg.name))
		a->path_peers |= bit;
	else
		a->path_peers &= ~bit;
}

static uint32_t attrs_hash(const struct rib_attrs_key *k, const char *path)
{
	return (uint32_t)XXH3_64bits_withSeed(path, k->path_bytes, XXH3_64bits(k, sizeof(*k)));
}

static void attrs_grow(struct rib *r)
{
	size_t nb = r->nattrs_buckets * 2;
	struct rib_attrs **b = calloc(nb, sizeof(*b));
	if (!b)
		return;
	for (size_t i = 0; i < r->nattrs_buckets; i++) {
		struct rib_attrs *a = r->attrs[i];
		while (a) {
			struct rib_attrs *n = a->hnext;
			a->hnext = b[a->hash & (nb - 1)];
			b[a->hash & (nb - 1)] = a;
			a = n;
		}
	}
	free(r->attrs);
	r->attrs = b;
	r->nattrs_buckets = nb;
}

/* The interned attributes for k and path, with a reference taken; NULL when out of memory. */
static struct rib_attrs *attrs_get(struct nbrpd *d, const struct rib_attrs_key *k, const char *path)
{
	struct rib *r = d->rib;
	uint32_t hash = attrs_hash(k, path);
	struct rib_attrs **head = &r->attrs[hash & (r->nattrs_buckets - 1)];
	for (struct rib_attrs *a = *head; a; a = a->hnext)
		if (a->hash == hash && memcmp(&a->k, k, sizeof(*k)) == 0 &&
		    memcmp(a->path, path, k->path_bytes) == 0) {
			a->refs++;
			return a;
		}
	struct rib_attrs *a = malloc(sizeof(*a) + k->path_bytes);
	if (!a)
		return NULL;
	a->refs = 1;
	a->hash = hash;
	memcpy(&a->k, k, sizeof(*k));  /* padding too: keys are compared as bytes */
	memcpy(a->path, path, k->path_bytes);
	a->sig = XXH3_64bits(path, k->path_bytes);
	a->sig ^= (uint64_t)(k->peer ? k->peer->idx + 1 : 0) << 56;
	a->sig |= 1;                    /* never 0: 0 is "nothing advertised" */
	a->nh = k->peer ? nexthop_get(d, k->next_hop.family, k->next_hop.addr) : NULL;
	a->path_peers = 0;
	for (unsigned i = 0; i < d->npeers && k->npath; i++)
		attrs_check_path(a, &d->peers[i]);
	a->hnext = *head;
	*head = a;
	if (++r->nattrs > r->nattrs_buckets)
		attrs_grow(r);
	return a;
}

static void attrs_put(struct nbrpd *d, struct rib_attrs *a)
{
	if (!a || --a->refs > 0)
		return;
	struct rib *r = d->rib;
	struct rib_attrs **pp = &r->attrs[a->hash & (r->nattrs_buckets - 1)];
	while (*pp != a)
		pp = &(*pp)->hnext;
	*pp = a->hnext;
	r->nattrs--;
	nexthop_put(d, a->nh);
	free(a);
}

/* The peer said the same again (whatever our local preference for it): the route keeps its age. */
static bool same_advertisement(const struct rib_attrs *a, const struct rib_attrs *b)
{
	return a == b || (a->k.load_ms == b->k.load_ms && a->k.npath == b->k.npath &&
			  a->k.path_bytes == b->k.path_bytes && memcmp(a->path, b->path, a->k.path_bytes) == 0 &&
			  memcmp(&a->k.next_hop, &b->k.next_hop, sizeof(a->k.next_hop)) == 0);
}

static struct rib_route *route_new(struct rib *r, struct rib_attrs *a, uint64_t seq)
{
	struct rib_route *rt = slab_alloc(&r->routes);
	if (!rt)
		return NULL;
	rt->next = NULL;
	rt->a = a;
	rt->seq = seq;
	rt->rank = 0;
	rt->stale = false;
	return rt;
}

static void route_free(struct nbrpd *d, struct rib_route *rt)
{
	if (!rt)
		return;
	attrs_put(d, rt->a);
	slab_free(&d->rib->routes, rt);
}

static bool route_usable(const struct rib_route *rt)
{
	return !rt->a->nh || rt->a->nh->reachable;
}

/* ---- the decision ---- */

static const char *route_from(const struct rib_route *rt)
{
	return rt->a->k.peer ? rt->a->k.peer->cfg.name : "";
}

static int route_cmp(const struct nbrpd *d, const struct rib_route *ra, const struct rib_route *rb)
{
	const struct rib_attrs *a = ra->a, *b = rb->a;
	if (a->k.local_pref != b->k.local_pref)
		return a->k.local_pref > b->k.local_pref ? -1 : 1;
	uint64_t mph = d->cfg->load_ms_per_hop;
	uint64_t da = a->k.npath * mph + a->k.load_ms, db = b->k.npath * mph + b->k.load_ms;
	if (da != db)
		return da < db ? -1 : 1;
	/* IP routing decides between routes that are equal at the content level */
	uint32_t ia = a->nh ? a->nh->igp_metric : 0, ib = b->nh ? b->nh->igp_metric : 0;
	if (ia != ib)
		return ia < ib ? -1 : 1;
	uint32_t pa = a->nh ? a->nh->as_path_len : 0, pb = b->nh ? b->nh->as_path_len : 0;
	if (pa != pb)
		return pa < pb ? -1 : 1;
	if (ra->seq != rb->seq)
		return ra->seq < rb->seq ? -1 : 1;
	return strcmp(route_from(ra), route_from(rb));
}

static void mark_dirty(struct rib *r, struct rib_entry *e)
{
	if (e->dirty)
		return;
	e->dirty = true;
	e->dirty_next = r->dirty;
	r->dirty = e;
}

static void rank_routes(struct nbrpd *d, struct rib_entry *e);

/* Ranks the usable routes, best first, and marks the entry for the next flush. */
static void decide(struct nbrpd *d, struct rib_entry *e)
{
	struct rib_route *only = e->routes;
	if (!only || !only->next) {
		/* none or one, the usual cases: nothing to compare (max-routes is at least 1) */
		bool usable = only && route_usable(only);
		if (only)
			only->rank = usable;
		e->best = usable ? only : NULL;
		e->nbest = usable;
		mark_dirty(d->rib, e);
		return;
	}
	rank_routes(d, e);
}

static __attribute__((noinline)) void rank_routes(struct nbrpd *d, struct rib_entry *e)
{
	struct rib_route *ranked[NBRPD_MAX_BEST + 1];
	unsigned n = 0, keep = d->cfg->max_routes;
	for (struct rib_route *rt = e->routes; rt; rt = rt->next) {
		rt->rank = 0;
		if (!route_usable(rt))
			continue;       /* IP routing cannot reach its next hop */
		/* insertion into the top `keep`, best first */
		unsigned i = n < keep ? n++ : keep;
		while (i > 0 && route_cmp(d, rt, ranked[i - 1]) < 0) {
			if (i < keep)
				ranked[i] = ranked[i - 1];
			i--;
		}
		if (i < keep)
			ranked[i] = rt;
	}
	for (unsigned i = 0; i < n; i++)
		ranked[i]->rank = (uint8_t)(i + 1);
	e->best = n ? ranked[0] : NULL;
	e->nbest = (uint8_t)n;
	mark_dirty(d->rib, e);
}

/* The ranked routes, best first; returns how many (e->nbest). */
static unsigned ranked_routes(const struct rib_entry *e, const struct rib_route **out)
{
	for (const struct rib_route *rt = e->routes; rt; rt = rt->next)
		if (rt->rank)
			out[rt->rank - 1] = rt;
	return e->nbest;
}

static struct rib_route *take_route(struct rib_entry *e, const struct peer *p)
{
	for (struct rib_route **pp = &e->routes; *pp; pp = &(*pp)->next)
		if ((*pp)->a->k.peer == p) {
			struct rib_route *rt = *pp;
			*pp = rt->next;
			return rt;
		}
	return NULL;
}

/* ---- local content ---- */

/* Servers that pass their health check and that IP routing reaches. */
static uint32_t content_usable(const struct nbrpd_content *c)
{
	uint32_t m = c->up_mask;
	for (unsigned s = 0; s < c->nservers; s++)
		if (c->server_nh[s] && !c->server_nh[s]->reachable)
			m &= ~(1u << s);
	return m;
}

static const struct route *first_up_server(const struct nbrpd_content *c)
{
	uint32_t m = content_usable(c);
	for (unsigned s = 0; s < c->nservers; s++)
		if (m & (1u << s))
			return &c->servers[s];
	return NULL;
}

void rib_content_changed(struct nbrpd *d, struct nbrpd_content *c)
{
	for (unsigned s = 0; s < c->nservers; s++)
		if (!c->server_nh[s])
			c->server_nh[s] = nexthop_get(d, c->servers[s].family, c->servers[s].addr);
	uint32_t hash = name_hash(c->name.wire, c->name.len);
	struct rib_entry *e = get_or_add(d->rib, c->name.wire, c->name.len, hash);
	if (!e) {
		log_err("out of memory for content routes");
		return;
	}
	struct rib_route *old = take_route(e, NULL);
	const struct route *first = first_up_server(c);
	if (!first) {
		/* no server answers: the name is withdrawn here */
		route_free(d, old);
		decide(d, e);
		return;
	}
	struct rib_attrs_key k;
	memset(&k, 0, sizeof(k));
	k.content = c;
	k.local_pref = LOCAL_PREF_LOCAL;
	k.load_ms = first->load_ms;
	struct rib_attrs *a = attrs_get(d, &k, "");
	struct rib_route *rt = old;
	if (a && !rt)
		rt = route_new(d->rib, a, d->rib->seq++);
	else if (a)
		attrs_put(d, rt->a);    /* a content's route keeps its age */
	if (!a || !rt) {
		attrs_put(d, a);
		if (old) {
			old->next = e->routes;
			e->routes = old;
		}
		log_err("out of memory for content routes");
		return;
	}
	rt->a = a;
	rt->next = e->routes;
	e->routes = rt;
	decide(d, e);
}

void rib_set_local(struct nbrpd *d, struct nbrpd_config *cfg)
{
	for (unsigned i = 0; i < cfg->ncontent; i++)
		rib_content_changed(d, &cfg->content[i]);
}

/* ---- from peers ---- */

static void withdraw_name(struct nbrpd *d, struct peer *p, const uint8_t *wire, size_t len)
{
	struct rib_entry *e = lookup(d->rib, wire, len, name_hash(wire, len));
	struct rib_route *old = e ? take_route(e, p) : NULL;
	if (!old)
		return;
	route_free(d, old);
	p->names--;
	decide(d, e);
}

/* The attributes of an UPDATE's Route, interned, with a reference for the UPDATE. */
static struct rib_attrs *attrs_from_update(struct nbrpd *d, struct peer *p, const Nbrp__Route *r)
{
	char path[NBRP_MAX_PATH * (NBRP_ROUTER_NAME_MAX + 1)];
	size_t bytes = 0;
	for (size_t i = 0; i < r->n_path; i++) {
		size_t l = strlen(r->path[i]) + 1;
		memcpy(path + bytes, r->path[i], l);
		bytes += l;
	}
	struct rib_attrs_key k;
	memset(&k, 0, sizeof(k));
	k.peer = p;
	k.server = p->cfg.server_mode;
	k.local_pref = p->cfg.local_pref;
	k.load_ms = r->load_ms;
	k.next_hop.family = r->next_hop.len == 4 ? AF_INET : AF_INET6;
	memcpy(k.next_hop.addr, r->next_hop.data, r->next_hop.len);
	k.next_hop.port = (uint16_t)r->next_hop_port;
	k.npath = (uint8_t)r->n_path;
	k.path_bytes = (uint16_t)bytes;
	return attrs_get(d, &k, path);
}

/* The import policy for a peer's name (one with rules: see import_all). */
static bool import_allows(const struct peer *p, const ProtobufCBinaryData *b)
{
	const struct nbrpd_policy *pol = &p->cfg.import;
	struct name n;
	n.len = (uint8_t)b->len;
	memcpy(n.wire, b->data, b->len);
	return nbrpd_policy_allows(pol, &n);
}

static void notify_peer(struct nbrpd *d, struct peer *p, uint8_t code, uint8_t sub, const char *text);

void rib_peer_update(struct nbrpd *d, struct peer *p, const Nbrp__Update *u)
{
	/*
	 * A name that does not parse cannot be withdrawn either, so what the
	 * peer meant is lost: RFC 7606 resets the session for bad NLRI.
	 */
	for (size_t i = 0; i < u->n_withdrawn; i++) {
		const ProtobufCBinaryData *b = &u->withdrawn[i];
		if (!nbrp_name_valid(b)) {
			notify_peer(d, p, NBRP_ERR_UPDATE, 1, "a withdrawn name is not a canonical wire name");
			return;
		}
		p->withdrawn_in++;
		withdraw_name(d, p, b->data, b->len);
	}
	for (size_t i = 0; i < u->n_routes; i++) {
		const Nbrp__Route *r = u->routes[i];
		const char *why = NULL;
		p->names_in += r->n_names;
		bool usable = nbrp_check_route(r, p->cfg.server_mode, &why) == 0;
		if (!usable) {
			p->bad_routes++;
			log_warn("peer %s: malformed route (%s): its names are withdrawn", p->cfg.name, why);
		}
		/* a route through us would loop: as good as withdrawn */
		if (usable) {
			for (size_t k = 0; k < r->n_path; k++)
				if (strcmp(r->path[k], d->cfg->router_name) == 0)
					usable = false;
		}
		/* every name of the Route shares its attributes and its arrival */
		struct rib_attrs *a = usable ? attrs_from_update(d, p, r) : NULL;
		uint64_t seq = a ? d->rib->seq++ : 0;
		/* no import rules: the default decides for every name, no name needs building */
		bool import_all = p->cfg.import.nrules == 0 && !p->cfg.import.default_deny;
		bool import_none = p->cfg.import.nrules == 0 && p->cfg.import.default_deny;
		for (size_t k = 0; k < r->n_names; k++) {
			const ProtobufCBinaryData *b = &r->names[k];
			if (!nbrp_name_valid(b)) {
				attrs_put(d, a);
				notify_peer(d, p, NBRP_ERR_UPDATE, 1, "a route's name is not a canonical wire name");
				return;
			}
			if (!a || import_none || (!import_all && !import_allows(p, b))) {
				withdraw_name(d, p, b->data, b->len);
				continue;
			}
			struct rib_entry *e = get_or_add(d->rib, b->data, b->len, name_hash(b->data, b->len));
			if (!e)
				continue;
			struct rib_route *old = take_route(e, p);
			if (!old && p->cfg.max_names && p->names >= p->cfg.max_names) {
				if (p->cfg.max_action == MAX_NAMES_SHUT) {
					decide(d, e);
					attrs_put(d, a);
					notify_peer(d, p, NBRP_ERR_CEASE, NBRP_CEASE_MAX_NAMES,
						    "more names than max-names allows");
					return;
				}
				if (!p->max_warned)
					log_warn("peer %s: over max-names (%llu)%s", p->cfg.name,
						 (unsigned long long)p->cfg.max_names,
						 p->cfg.max_action == MAX_NAMES_REFUSE ? ": refusing new names" : "");
				p->max_warned = true;
				if (p->cfg.max_action == MAX_NAMES_REFUSE) {
					decide(d, e);
					continue;
				}
			}
			/* an unchanged route keeps its age */
			struct rib_route *rt = route_new(d->rib, a, old && same_advertisement(old->a, a) ? old->seq : seq);
			if (!rt) {
				route_free(d, old);
				if (old)
					p->names--;
				decide(d, e);
				continue;
			}
			a->refs++;
			if (old)
				route_free(d, old);
			else
				p->names++;
			rt->next = e->routes;
			e->routes = rt;
			decide(d, e);
		}
		attrs_put(d, a);
	}
}

void rib_peer_down(struct nbrpd *d, struct peer *p)
{
	uint64_t bit = 1ull << p->idx;
	struct rib *r = d->rib;
	for (size_t i = 0; i < r->nbuckets; i++)
		for (struct rib_entry *e = r->buckets[i]; e; e = e->hnext) {
			e->adv_mask &= ~bit;
			struct rib_route *old = take_route(e, p);
			if (old) {
				route_free(d, old);
				decide(d, e);
			}
		}
	p->names = 0;
}

void rib_peer_stale(struct nbrpd *d, struct peer *p)
{
	uint64_t bit = 1ull << p->idx;
	struct rib *r = d->rib;
	for (size_t i = 0; i < r->nbuckets; i++)
		for (struct rib_entry *e = r->buckets[i]; e; e = e->hnext) {
			e->adv_mask &= ~bit;    /* its Adj-RIB-Out went with the session */
			for (struct rib_route *rt = e->routes; rt; rt = rt->next)
				if (rt->a->k.peer == p)
					rt->stale = true;       /* the decision does not change */
		}
}

void rib_peer_sweep(struct nbrpd *d, struct peer *p)
{
	struct rib *r = d->rib;
	uint64_t swept = 0;
	for (size_t i = 0; i < r->nbuckets; i++)
		for (struct rib_entry *e = r->buckets[i]; e; e = e->hnext)
			for (struct rib_route **pp = &e->routes; *pp; pp = &(*pp)->next)
				if ((*pp)->a->k.peer == p && (*pp)->stale) {
					struct rib_route *old = *pp;
					*pp = old->next;
					route_free(d, old);
					p->names--;
					swept++;
					decide(d, e);
					break;
				}
	if (swept)
		log_info("peer %s: %llu stale routes swept", p->cfg.name, (unsigned long long)swept);
}

void rib_nexthop_changed(struct nbrpd *d, struct nexthop *nh)
{
	struct rib *r = d->rib;
	for (size_t i = 0; i < r->nbuckets; i++)
		for (struct rib_entry *e = r->buckets[i]; e; e = e->hnext)
			for (struct rib_route *rt = e->routes; rt; rt = rt->next)
				if (rt->a->nh == nh) {
					decide(d, e);
					break;
				}
	for (unsigned i = 0; i < d->cfg->ncontent; i++) {
		struct nbrpd_content *c = &d->cfg->content[i];
		for (unsigned s = 0; s < c->nservers; s++)
			if (c->server_nh[s] == nh) {
				rib_content_changed(d, c);
				break;
			}
	}
}


/* ---- to peers ---- */

/* One UPDATE under construction, for one peer at a time. */
/*
 * Names whose best routes look the same to the peer (same path, same
 * load) share one Route, as the protocol allows: consecutive names in a
 * flush usually came in one UPDATE and go out in one.
 */
static struct {
	Nbrp__Update u;
	ProtobufCBinaryData withdrawn[BATCH_NAMES];
	Nbrp__Route *route_ptrs[BATCH_NAMES];
	Nbrp__Route routes[BATCH_NAMES];
	ProtobufCBinaryData names[BATCH_NAMES];
	size_t nnames;
	uint64_t last_sig;              /* of the last Route: route_sig ^ load */
	char *paths[BATCH_NAMES][NBRP_MAX_PATH];
} batch;

static void batch_send(struct nbrpd *d, struct peer *p)
{
	Nbrp__Update *u = &batch.u;
	if (u->n_withdrawn == 0 && u->n_routes == 0)
		return;
	Nbrp__Message m = NBRP__MESSAGE__INIT;
	m.body_case = NBRP__MESSAGE__BODY_UPDATE;
	m.update = u;
	peer_send(d, p, &m);
	p->updates_out++;
	p->names_out += batch.nnames;
	p->withdrawn_out += u->n_withdrawn;
	nbrp__update__init(u);
	u->withdrawn = batch.withdrawn;
	u->routes = batch.route_ptrs;
	batch.nnames = 0;
	batch.last_sig = 0;
}

static void batch_reset(void)
{
	nbrp__update__init(&batch.u);
	batch.u.withdrawn = batch.withdrawn;
	batch.u.routes = batch.route_ptrs;
	batch.nnames = 0;
	batch.last_sig = 0;
}

static void batch_withdraw(struct nbrpd *d, struct peer *p, struct rib_entry *e)
{
	Nbrp__Update *u = &batch.u;
	u->withdrawn[u->n_withdrawn].data = e->wire;
	u->withdrawn[u->n_withdrawn].len = e->len;
	if (++u->n_withdrawn == BATCH_NAMES)
		batch_send(d, p);
}

static uint32_t advertised_load(const struct nbrpd *d, const struct rib_attrs *best)
{
	return (uint32_t)best->k.npath + 1 <= d->cfg->load_radius ? best->k.load_ms : 0;
}

static void batch_advertise(struct nbrpd *d, struct peer *p, struct rib_entry *e)
{
	const struct rib_attrs *best = e->best->a;
	Nbrp__Update *u = &batch.u;
	uint32_t load = advertised_load(d, best);
	uint64_t sig = best->sig ^ ((uint64_t)load << 1);
	ProtobufCBinaryData *name = &batch.names[batch.nnames];
	name->data = e->wire;
	name->len = e->len;
	if (u->n_routes > 0 && sig == batch.last_sig) {
		/* the same attributes as the Route before: one more name for it */
		u->routes[u->n_routes - 1]->n_names++;
		if (++batch.nnames == BATCH_NAMES)
			batch_send(d, p);
		return;
	}
	size_t k = u->n_routes;
	Nbrp__Route *r = &batch.routes[k];
	nbrp__route__init(r);
	r->n_names = 1;
	r->names = name;
	batch.last_sig = sig;
	const struct nbrpd_endpoint *nh = &d->cfg->inrp;
	r->next_hop.data = (uint8_t *)nh->addr;
	r->next_hop.len = nh->family == AF_INET ? 4 : 16;
	r->next_hop_port = nh->port;
	r->load_ms = load;
	char **path = batch.paths[k];
	path[0] = d->cfg->router_name;
	const char *s = best->path;
	for (unsigned i = 0; i < best->k.npath; i++) {
		path[i + 1] = (char *)s;
		s += strlen(s) + 1;
	}
	r->n_path = best->k.npath + 1u;
	r->path = path;
	u->routes[k] = r;
	u->n_routes++;
	if (++batch.nnames == BATCH_NAMES)
		batch_send(d, p);
}

static __attribute__((noinline)) bool export_allows(const struct peer *p, const struct rib_entry *e)
{
	struct name n;
	rib_entry_name(e, &n);
	return nbrpd_policy_allows(&p->cfg.export, &n);
}

/* Once per name and peer in a flush: small enough to inline, the policy out of line. */
static inline bool advertisable_to(const struct nbrpd *d, const struct rib_entry *e, const struct peer *p)
{
	if (e->nbest == 0)
		return false;
	const struct rib_attrs *best = e->best->a;
	if (p->cfg.server_mode)
		return false;           /* a content server is not told routes */
	if (best->k.peer == p || (best->path_peers & (1ull << p->idx)) || best->k.npath + 1u > NBRP_MAX_PATH)
		return false;
	if ((p->cfg.export.nrules || p->cfg.export.default_deny) && !export_allows(p, e))
		return false;
	(void)d;
	return true;
}

void rib_peer_up(struct nbrpd *d, struct peer *p)
{
	uint64_t bit = 1ull << p->idx;
	struct rib *r = d->rib;
	/* the slot may have held another peer, by another name */
	for (size_t i = 0; i < r->nattrs_buckets; i++)
		for (struct rib_attrs *a = r->attrs[i]; a; a = a->hnext)
			attrs_check_path(a, p);
	batch_reset();
	for (size_t i = 0; i < r->nbuckets; i++)
		for (struct rib_entry *e = r->buckets[i]; e; e = e->hnext) {
			e->adv_mask &= ~bit;
			if (advertisable_to(d, e, p)) {
				batch_advertise(d, p, e);
				e->adv_mask |= bit;
			}
		}
	batch_send(d, p);
	Nbrp__Message m = NBRP__MESSAGE__INIT;
	Nbrp__EndOfRib eor = NBRP__END_OF_RIB__INIT;
	m.body_case = NBRP__MESSAGE__BODY_END_OF_RIB;
	m.end_of_rib = &eor;
	peer_send(d, p, &m);
}

void rib_peer_reexport(struct nbrpd *d, struct peer *p)
{
	if (!p->established)
		return;
	uint64_t bit = 1ull << p->idx;
	struct rib *r = d->rib;
	batch_reset();
	for (size_t i = 0; i < r->nbuckets; i++)
		for (struct rib_entry *e = r->buckets[i]; e; e = e->hnext) {
			bool adv = advertisable_to(d, e, p);
			if (adv && !(e->adv_mask & bit)) {
				batch_advertise(d, p, e);
				e->adv_mask |= bit;
			} else if (!adv && (e->adv_mask & bit)) {
				batch_withdraw(d, p, e);
				e->adv_mask &= ~bit;
			}
		}
	batch_send(d, p);
}

void rib_redecide_all(struct nbrpd *d)
{
	struct rib *r = d->rib;
	for (size_t i = 0; i < r->nbuckets; i++)
		for (struct rib_entry *e = r->buckets[i]; e; e = e->hnext)
			if (e->routes)
				decide(d, e);
}

void rib_reload_content(struct nbrpd *d, struct nbrpd_config *old_cfg, struct nbrpd_config *new_cfg)
{
	for (unsigned i = 0; i < old_cfg->ncontent; i++) {
		const struct nbrpd_content *c = &old_cfg->content[i];
		bool kept = false;
		for (unsigned k = 0; k < new_cfg->ncontent && !kept; k++)
			kept = name_equal(&new_cfg->content[k].name, &c->name);
		struct rib_entry *e = kept ? NULL : lookup_name(d->rib, &c->name);
		struct rib_route *rt = e ? take_route(e, NULL) : NULL;
		if (rt) {
			route_free(d, rt);
			decide(d, e);
		}
		for (unsigned s = 0; s < c->nservers; s++)
			nexthop_put(d, c->server_nh[s]);
	}
	rib_set_local(d, new_cfg);
}

/* ---- to inrpd ---- */

unsigned rib_fib_routes(const struct nbrpd *d, const struct rib_entry *e, struct route *out)
{
	unsigned n = 0;
	const struct rib_route *best[NBRPD_MAX_BEST];
	unsigned nbest = ranked_routes(e, best);
	(void)d;
	for (unsigned b = 0; b < nbest && n < ROUTESET_MAX_ROUTES; b++) {
		const struct rib_attrs *a = best[b]->a;
		if (!a->k.peer) {
			const struct nbrpd_content *c = a->k.content;
			uint32_t usable = content_usable(c);
			for (unsigned s = 0; s < c->nservers && n < ROUTESET_MAX_ROUTES; s++)
				if (usable & (1u << s))
					out[n++] = c->servers[s];
			continue;
		}
		struct route *r = &out[n++];
		memset(r, 0, sizeof(*r));
		r->kind = a->k.server ? ROUTE_SERVER : ROUTE_ROUTER;
		r->family = (uint8_t)a->k.next_hop.family;
		r->port = a->k.next_hop.port;
		r->load_ms = a->k.load_ms;
		memcpy(r->addr, a->k.next_hop.addr, 16);
	}
	return n;
}

static void on_deferred(uv_timer_t *t)
{
	struct nbrpd *d = t->data;
	struct rib *r = d->rib;
	struct rib_entry *e = r->deferred;
	r->deferred = NULL;
	while (e) {
		struct rib_entry *next = e->deferred_next;
		e->deferred = false;
		e->deferred_next = NULL;
		mark_dirty(r, e);
		e = next;
	}
	rib_flush(d);
}

/* Holds a load change back until the name's load-interval is over. */
static void defer(struct nbrpd *d, struct rib_entry *e)
{
	struct rib *r = d->rib;
	if (e->deferred)
		return;
	e->deferred = true;
	e->deferred_next = r->deferred;
	r->deferred = e;
	if (!r->timer_ready) {
		uv_timer_init(d->loop, &r->deferred_timer);
		r->deferred_timer.data = d;
		r->timer_ready = true;
	}
	if (!uv_is_active((uv_handle_t *)&r->deferred_timer)) {
		uint64_t wait = d->cfg->load_interval_ms - (uv_now(d->loop) - e->adv_time);
		uv_timer_start(&r->deferred_timer, on_deferred, wait ? wait : 1, 0);
	}
}

void rib_stop(struct nbrpd *d)
{
	if (d->rib->timer_ready)
		uv_close((uv_handle_t *)&d->rib->deferred_timer, NULL);
}

void rib_flush(struct nbrpd *d)
{
	struct rib *r = d->rib;
	if (!r->dirty)
		return;
	/* what each changed entry now says to peers, and whether that changed enough to resend */
	uint64_t now = uv_now(d->loop);
	for (struct rib_entry *e = r->dirty; e; e = e->dirty_next) {
		uint64_t sig = e->nbest ? e->best->a->sig : 0;
		uint32_t load = e->nbest ? advertised_load(d, e->best->a) : 0;
		uint32_t diff = load > e->adv_load ? load - e->adv_load : e->adv_load - load;
		bool load_news = diff > 0 && diff >= d->cfg->load_threshold_ms;
		if (sig == e->adv_sig && load_news && now - e->adv_time < d->cfg->load_interval_ms) {
			defer(d, e);            /* only the load changed, and too soon */
			load_news = false;
		}
		e->resend = sig != e->adv_sig || load_news;
		if (e->resend) {
			e->adv_sig = sig;
			e->adv_load = load;
			e->adv_time = now;
		}
	}
	for (unsigned i = 0; i < d->npeers; i++) {
		struct peer *p = &d->peers[i];
		if (!p->established || !p->configured)
			continue;
		uint64_t bit = 1ull << p->idx;
		batch_reset();
		for (struct rib_entry *e = r->dirty; e; e = e->dirty_next) {
			if (advertisable_to(d, e, p)) {
				if (e->resend || !(e->adv_mask & bit))
					batch_advertise(d, p, e);
				e->adv_mask |= bit;
			} else if (e->adv_mask & bit) {
				batch_withdraw(d, p, e);
				e->adv_mask &= ~bit;
			}
		}
		batch_send(d, p);
	}
	struct rib_entry *e = r->dirty;
	r->dirty = NULL;
	while (e) {
		struct rib_entry *next = e->dirty_next;
		if (d->fib) {
			struct name n;
			struct route routes[ROUTESET_MAX_ROUTES];
			rib_entry_name(e, &n);
			fibpush_name(d->fib, &n, routes, rib_fib_routes(d, e, routes));
		}
		e->dirty = false;
		e->dirty_next = NULL;
		if (!e->routes && !e->adv_mask && !e->deferred) {
			/* known to no one any more: the entry can go */
			struct rib_entry **pp = &r->buckets[e->hash & (r->nbuckets - 1)];
			while (*pp != e)
				pp = &(*pp)->hnext;
			*pp = e->hnext;
			r->count--;
			entry_free(r, e);
		}
		e = next;
	}
	if (d->fib)
		fibpush_flush(d->fib);
}

/* ---- show route ---- */

/* A growing string; every reply line is built in one (no fixed limit to overflow). */
struct sb {
	char *s;
	size_t len, cap;
};

static void sb_add(struct sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(struct sb *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (b->len + (size_t)n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + (size_t)n + 1)
			cap *= 2;
		char *ns = realloc(b->s, cap);
		if (!ns)
			return;
		b->s = ns;
		b->cap = cap;
	}
	va_start(ap, fmt);
	vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

/* s as a JSON string's contents (router names are printable ASCII) */
static void sb_json(struct sb *b, const char *s)
{
	for (; *s; s++)
		sb_add(b, *s == '"' || *s == '\\' ? "\\%c" : "%c", *s);
}

static void sb_line(struct sb *b, void (*line)(void *arg, const char *text), void *arg)
{
	line(arg, b->s ? b->s : "");
	b->len = 0;
	if (b->s)
		b->s[0] = 0;
}

void rib_describe(const struct nbrpd *d, const struct rib_entry *e, bool json, const char *after,
		  void (*line)(void *arg, const char *text), void *arg)
{
	char name[NAME_MAX_TEXT];
	struct name n;
	struct sb b = { 0 };
	rib_entry_name(e, &n);
	name_to_text(&n, name, sizeof(name));
	/* all routes: the ranked ones in rank order, then the rest */
	const struct rib_route *order[NBRPD_MAX_PEERS + 1];
	unsigned cnt = ranked_routes(e, order);
	for (const struct rib_route *rt = e->routes; rt && cnt < NBRPD_MAX_PEERS + 1; rt = rt->next)
		if (!rt->rank)
			order[cnt++] = rt;
	/* JSON: one line per route, so a line stays bounded whatever the paths */
	if (json) {
		sb_add(&b, "{\"name\": \"");
		sb_json(&b, name);
		sb_add(&b, "\", \"routes\": [");
	} else {
		sb_add(&b, "%s", name);
	}
	sb_line(&b, line, arg);
	for (unsigned i = 0; i < cnt; i++) {
		const struct rib_route *rt = order[i];
		const struct rib_attrs *a = rt->a;
		char hop[96] = "local";
		if (a->k.peer)
			nbrpd_endpoint_format(&a->k.next_hop, hop, sizeof(hop));
		if (json) {
			sb_add(&b, "{\"rank\": %u, \"best\": %s, \"from\": \"", i < e->nbest ? i + 1 : 0,
			       i == 0 ? "true" : "false");
			sb_json(&b, route_from(rt));
			sb_add(&b, "\", \"next_hop\": \"%s\", \"path\": [", hop);
		} else if (a->k.peer) {
			sb_add(&b, "  %s %s via %s from %s, path [", i == 0 ? "*" : " ",
			       i < e->nbest ? "ranked" : "      ", hop, a->k.peer->cfg.name);
		} else {
			sb_add(&b, "  %s %s local content, %u of %u servers up, load %u ms", i == 0 ? "*" : " ",
			       i < e->nbest ? "ranked" : "      ", (unsigned)__builtin_popcount(a->k.content->up_mask),
			       a->k.content->nservers, a->k.load_ms);
			sb_line(&b, line, arg);
			continue;
		}
		const char *p = a->path;
		for (unsigned k = 0; k < a->k.npath; k++) {
			if (json) {
				sb_add(&b, "%s\"", k ? ", " : "");
				sb_json(&b, p);
				sb_add(&b, "\"");
			} else {
				sb_add(&b, "%s%s", k ? " " : "", p);
			}
			p += strlen(p) + 1;
		}
		char ip[200] = "";
		const struct nexthop *nh = a->nh;
		if (nh && d->bird)
			nexthop_format(nh, ip, sizeof(ip));
		if (json)
			sb_add(&b, "], \"load_ms\": %u, \"local_pref\": %u, \"stale\": %s, \"usable\": %s, "
			       "\"ip_known\": %s, \"ip_reachable\": %s, \"igp_metric\": %u, \"as_path_len\": %u, "
			       "\"ip_protocol\": \"%s\"}%s",
			       a->k.load_ms, a->k.local_pref, rt->stale ? "true" : "false",
			       route_usable(rt) ? "true" : "false", nh && nh->known ? "true" : "false",
			       !nh || nh->reachable ? "true" : "false", nh ? nh->igp_metric : 0,
			       nh ? nh->as_path_len : 0, nh ? nh->protocol : "",
			       i + 1 < cnt ? "," : "");
		else
			sb_add(&b, "], load %u ms, local-pref %u%s%s%s%s", a->k.load_ms, a->k.local_pref,
			       rt->stale ? ", stale" : "", route_usable(rt) ? "" : ", UNUSABLE",
			       ip[0] ? "; BIRD: " : "", ip);
		sb_line(&b, line, arg);
	}
	if (json) {
		sb_add(&b, "]}%s", after ? after : "");
		sb_line(&b, line, arg);
	}
	free(b.s);
}

/* Withdrawing a session from inside the RIB goes through the session layer. */
static void notify_peer(struct nbrpd *d, struct peer *p, uint8_t code, uint8_t sub, const char *text)
{
	peer_notify(d, p, code, sub, text);
}
