/*
 * Interned route attributes (rde_internal.h), and the next-hop index built on
 * them: a next hop lists the attributes through it, and attributes list
 * the names that had a route with them, so a change of IP routing decides
 * again only the names behind the next hop (rde.c, the next-hop job).
 */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "inrp.h"
#include "log.h"
#include "nexthop.h"
#include "rde_internal.h"

static uint32_t attrs_hash(const struct rib_attrs_key *k, const char *path)
{
	/* keyed: peers choose the paths */
	return (uint32_t)(hashkey64(k, sizeof(*k)) ^ hashkey64(path, k->path_bytes));
}

static void attrs_grow(struct rde *r)
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

const char *attrs_origin(const struct rib_attrs *a)
{
	if (a->k.npath == 0 || a->k.path_bytes < 2)
		return NULL;
	size_t start = a->k.path_bytes - 1u;
	while (start > 0 && a->path[start - 1] != '\0')
		start--;
	return a->path + start;
}

/* The path's last router as the FIB tags it (route.h); an empty path ends here. */
static uint32_t origin_tag(const struct rde *r, const struct rib_attrs *a)
{
	const char *o = attrs_origin(a);
	return inrp_origin_tag(o ? o : r->cfg->router_name);
}

struct rib_attrs *attrs_get(struct rde *r, const struct rib_attrs_key *k, const char *path)
{
	uint32_t hash = attrs_hash(k, path);
	struct rib_attrs **head = &r->attrs[hash & (r->nattrs_buckets - 1)];
	for (struct rib_attrs *a = *head; a; a = a->hnext)
		if (a->hash == hash && memcmp(&a->k, k, sizeof(*k)) == 0 &&
		    memcmp(a->path, path, k->path_bytes) == 0) {
			a->refs++;
			return a;
		}
	struct rib_attrs *a = calloc(1, sizeof(*a) + k->path_bytes);
	if (!a)
		return NULL;
	a->nh = k->peer ? nexthop_get(r->nexthops, k->next_hop.family, k->next_hop.addr) : NULL;
	if (k->peer && !a->nh) {
		free(a);
		return NULL;
	}
	a->refs = 1;
	a->hash = hash;
	memcpy(&a->k, k, sizeof(*k));  /* padding too: keys are compared as bytes */
	memcpy(a->path, path, k->path_bytes);
	a->origin = origin_tag(r, a);
	/* what the UPDATE Route says: the path and who it came from, not the session or preference */
	a->sig = XXH3_64bits_withSeed(path, k->path_bytes, (uint64_t)(uintptr_t)k->peer);
	if (k->sig_state)
		a->sig ^= XXH3_64bits(k->sig_head, sizeof(k->sig_head));   /* new attestations are news */
	if (k->origin_seq)
		a->sig ^= XXH3_64bits(&k->origin_seq, sizeof(k->origin_seq));      /* so is a new announcement */
	a->sig |= 1;                    /* never 0: 0 is "nothing" */
	if (k->peer)
		k->peer->refs++;
	if (a->nh) {
		struct rib_attrs *first = a->nh->users;
		a->nh_next = first;
		if (first)
			first->nh_pprev = &a->nh_next;
		a->nh_pprev = (struct rib_attrs **)&a->nh->users;
		a->nh->users = a;
	}
	a->hnext = *head;
	*head = a;
	if (++r->nattrs > r->nattrs_buckets)
		attrs_grow(r);
	return a;
}

void attrs_unindex(struct rde *r, struct rib_entry **ents, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (--ents[i]->refs == 0)
			rib_maybe_release(&r->rib, ents[i]);
}

static void ents_release(struct rde *r, struct rib_attrs *a)
{
	if (a->nents > UNINDEX_AT_ONCE) {
		/* a table's worth: a job lets go of it over several loop turns */
		r->unindex_later(r, a->ents, a->nents);
	} else {
		attrs_unindex(r, a->ents, a->nents);
		free(a->ents);
	}
	a->ents = NULL;
	a->nents = a->ents_cap = 0;
}

void attrs_free(struct rde *r, struct rib_attrs *a)
{
	struct rib_attrs **pp = &r->attrs[a->hash & (r->nattrs_buckets - 1)];
	while (*pp != a)
		pp = &(*pp)->hnext;
	*pp = a->hnext;
	r->nattrs--;
	if (a->nh) {
		*a->nh_pprev = a->nh_next;
		if (a->nh_next)
			a->nh_next->nh_pprev = a->nh_pprev;
		nexthop_put(r->nexthops, a->nh);
	}
	ents_release(r, a);
	free(a->path_peers);
	sig_chain_free(a->chain);
	struct rde_peer *p = a->k.peer;
	free(a);
	if (p && --p->refs == 0)
		free(p);                /* removed from the configuration, and its last route is gone */
}

static bool has_route_with(const struct rib_entry *e, const struct rib_attrs *a)
{
	for (const struct rib_route *rt = e->routes; rt; rt = rt->next)
		if (rt->a == a)
			return true;
	return false;
}

/* Drops the slots of names that no longer have a route with a, and second slots of a name. */
static void ents_compact(struct rde *r, struct rib_attrs *a)
{
	uint32_t kept = 0;
	for (uint32_t i = 0; i < a->nents; i++) {
		struct rib_entry *e = a->ents[i];
		if (!(e->flags & ENTRY_MARK) && has_route_with(e, a)) {
			e->flags |= ENTRY_MARK;
			a->ents[kept++] = e;
		} else if (--e->refs == 0) {
			rib_maybe_release(&r->rib, e);
		}
	}
	for (uint32_t i = 0; i < kept; i++)
		a->ents[i]->flags &= (uint8_t)~ENTRY_MARK;
	a->nents = kept;
}

void attrs_index_grow(struct rde *r, struct rib_attrs *a, struct rib_entry *e)
{
	if (e->refs == UINT16_MAX) {
		/* in 65,535 sets of attributes at once: something is very wrong; keep memory safe */
		log_err("a name is in too many next-hop index lists; a change of IP routing may miss it");
		return;
	}
	if (a->nents == a->ents_cap) {
		if (!a->walkers && a->nents >= 2 * a->nroutes + 16)
			ents_compact(r, a);
		if (a->nents == a->ents_cap) {
			/* not vec: its size_t capacity would grow this struct by 8 bytes, and its first
			 * 32 slots quadruple the index of a valid chain's attributes (a route's own) */
			uint32_t cap = a->ents_cap ? a->ents_cap * 2 : 8;
			struct rib_entry **v = realloc(a->ents, cap * sizeof(*v));
			if (!v) {
				log_err("out of memory for the next-hop index: deciding again on a change of "
					"IP routing may miss names");
				return;
			}
			a->ents = v;
			a->ents_cap = cap;
		}
	}
	a->ents[a->nents++] = e;
	e->refs++;
}

unsigned attrs_path_peers(struct rde *r, struct rib_attrs *a, struct rde_peer ***out)
{
	if (a->path_peers_gen != r->peers_gen) {     /* peers_gen is never 0 */
		struct rde_peer *found[NBRP_MAX_PATH];
		unsigned n = 0;
		const char *s = a->path;
		for (unsigned i = 0; i < a->k.npath; i++) {
			struct rde_peer *p = peer_names_find(&r->by_name, s);
			if (p)
				found[n++] = p;
			s += strlen(s) + 1;
		}
		free(a->path_peers);
		a->path_peers = NULL;
		a->npath_peers = 0;
		if (n && (a->path_peers = malloc(n * sizeof(*found)))) {
			memcpy(a->path_peers, found, n * sizeof(*found));
			a->npath_peers = n;
		}
		a->path_peers_gen = r->peers_gen;
	}
	*out = a->path_peers;
	return a->npath_peers;
}

/* The peer said the same again (whatever our local preference for it): the route keeps its age. */
bool attrs_same_advertisement(const struct rib_attrs *a, const struct rib_attrs *b)
{
	return a == b || (a->k.load_ms == b->k.load_ms && a->k.npath == b->k.npath &&
			  a->k.path_bytes == b->k.path_bytes && memcmp(a->path, b->path, a->k.path_bytes) == 0 &&
			  memcmp(&a->k.next_hop, &b->k.next_hop, sizeof(a->k.next_hop)) == 0);
}

void attrs_free_all(struct rde *r)
{
	for (size_t i = 0; i < r->nattrs_buckets; i++) {
		struct rib_attrs *a = r->attrs[i];
		while (a) {
			struct rib_attrs *n = a->hnext;
			struct rde_peer *p = a->k.peer;
			free(a->ents);
			free(a->path_peers);
			sig_chain_free(a->chain);
			free(a);
			if (p && !p->configured && --p->refs == 0)
				free(p);        /* removed, still purging */
			a = n;
		}
	}
	free(r->attrs);
	r->attrs = NULL;
}
