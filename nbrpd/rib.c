/*
 * The table: one entry per name, in a chained hash table that only grows
 * (so a walk's cursor survives growth, rib.h), entries sized to their name
 * from slabs.
 */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "rib.h"

int rib_init(struct rib *t)
{
	memset(t, 0, sizeof(*t));
	t->nbuckets = 1024;
	t->buckets = calloc(t->nbuckets, sizeof(*t->buckets));
	if (!t->buckets)
		return -1;
	slab_init(&t->routes, sizeof(struct rib_route));
	for (size_t c = 0; c < ENTRY_CLASSES; c++)
		slab_init(&t->entry_slabs[c], c * 8);
	return 0;
}

void rib_destroy(struct rib *t)
{
	/* routes and entries go with their slabs */
	slab_destroy(&t->routes);
	for (size_t c = 0; c < ENTRY_CLASSES; c++)
		slab_destroy(&t->entry_slabs[c]);
	free(t->buckets);
	t->buckets = NULL;
}

uint32_t rib_hash(const uint8_t *wire, size_t len)
{
	return (uint32_t)XXH3_64bits(wire, len);
}

struct rib_entry *rib_lookup(const struct rib *t, const uint8_t *wire, size_t len, uint32_t hash)
{
	for (struct rib_entry *e = t->buckets[hash & (t->nbuckets - 1)]; e; e = e->hnext)
		if (e->hash == hash && e->len == len && memcmp(e->wire, wire, len) == 0)
			return e;
	return NULL;
}

static void grow(struct rib *t)
{
	size_t nb = t->nbuckets * 2;
	struct rib_entry **b = calloc(nb, sizeof(*b));
	if (!b)
		return;                 /* longer chains, still correct */
	for (size_t i = 0; i < t->nbuckets; i++) {
		struct rib_entry *e = t->buckets[i];
		while (e) {
			struct rib_entry *n = e->hnext;
			size_t k = e->hash & (nb - 1);
			e->hnext = b[k];
			b[k] = e;
			e = n;
		}
	}
	free(t->buckets);
	t->buckets = b;
	t->nbuckets = nb;
}

struct rib_entry *rib_get(struct rib *t, const uint8_t *wire, size_t len, uint32_t hash)
{
	struct rib_entry *e = rib_lookup(t, wire, len, hash);
	if (e)
		return e;
	e = slab_alloc(&t->entry_slabs[ENTRY_CLASS(len)]);
	if (!e)
		return NULL;
	memset(e, 0, offsetof(struct rib_entry, wire));
	e->hash = hash;
	e->len = (uint8_t)len;
	memcpy(e->wire, wire, len);
	size_t k = hash & (t->nbuckets - 1);
	e->hnext = t->buckets[k];
	t->buckets[k] = e;
	if (++t->entries > t->nbuckets)
		grow(t);
	return e;
}

void rib_entry_release(struct rib *t, struct rib_entry *e)
{
	if (e->routes || e->adv || e->flags || e->refs)
		return;
	struct rib_entry **pp = &t->buckets[e->hash & (t->nbuckets - 1)];
	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	t->entries--;
	slab_free(&t->entry_slabs[ENTRY_CLASS(e->len)], e);
}

struct rib_route *rib_route_new(struct rib *t, struct rib_attrs *a, uint64_t seq)
{
	struct rib_route *rt = slab_alloc(&t->routes);
	if (!rt)
		return NULL;
	rt->next = NULL;
	rt->a = a;
	rt->seq = seq;
	rt->rank = 0;
	return rt;
}

struct rib_route *rib_take_route(struct rib_entry *e, const struct rde_peer *p)
{
	for (struct rib_route **pp = &e->routes; *pp; pp = &(*pp)->next)
		if ((*pp)->a->k.peer == p) {
			struct rib_route *rt = *pp;
			*pp = rt->next;
			return rt;
		}
	return NULL;
}

void rib_cursor_start(const struct rib *t, struct rib_cursor *c)
{
	c->nb = t->nbuckets;
	c->next = 0;
}

bool rib_cursor_done(const struct rib *t, const struct rib_cursor *c)
{
	(void)t;
	return c->next >= c->nb;
}

unsigned rib_cursor_step(struct rib *t, struct rib_cursor *c, void (*fn)(struct rib_entry *e, void *arg), void *arg)
{
	unsigned seen = 0;
	/* the class's buckets in today's table: next, next + nb, next + 2 nb, ... */
	for (size_t b = c->next; b < t->nbuckets; b += c->nb) {
		struct rib_entry *e = t->buckets[b], *n;
		for (; e; e = n) {
			n = e->hnext;   /* entries are freed only by the flush, never during a walk */
			fn(e, arg);
			seen++;
		}
	}
	c->next++;
	return seen;
}
