/*
 * The table: one entry per name, entries sized to their name from slabs,
 * in a chained hash table that only grows, a doubling spread over many
 * loop turns (rib.h).  A walk's cursor visits names by their hash modulo
 * the table size when it began: the same class whichever array a name is
 * in, so growth under a walk neither skips nor repeats a name.
 */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "rib.h"
#include "vec.h"

#define MOVE_PER_INSERT 1       /* buckets of a doubling moved with each new name */

int rib_init(struct rib *t)
{
	memset(t, 0, sizeof(*t));
	t->nbuckets = 1024;
	t->buckets = calloc(t->nbuckets, sizeof(*t->buckets));
	if (!t->buckets)
		return -1;
	for (size_t c = 0; c < ENTRY_CLASSES; c++)
		slab_init(&t->entry_slabs[c], c * 8);
	return 0;
}

void rib_destroy(struct rib *t)
{
	/* entries go with their slabs */
	for (size_t c = 0; c < ENTRY_CLASSES; c++)
		slab_destroy(&t->entry_slabs[c]);
	free(t->buckets);
	free(t->old);
	free(t->release.v);
	t->buckets = t->old = NULL;
}

static inline struct rib_entry *find(struct rib_entry *e, const uint8_t *wire, size_t len)
{
	for (; e; e = e->hnext)
		if (e->len == len && memcmp(e->wire, wire, len) == 0)
			return e;
	return NULL;
}

struct rib_entry *rib_lookup(const struct rib *t, const uint8_t *wire, size_t len, uint32_t hash)
{
	return find(*rib_chain(t, hash), wire, len);
}

#define HASH_MID_LOW    10      /* rib_entry.hash_mid: hash bits 10..25 */
#define HASH_MID_BITS   16
#define GROW_AHEAD      16      /* buckets */

bool rib_grow_step(struct rib *t, unsigned budget)
{
	if (!t->old)
		return false;
	/* from old bucket h mod nold to h mod 2 nold: one more bit of h, kept in the entry if it is bit 10..25 */
	uint32_t bit = (uint32_t)t->nold;
	bool kept = t->nold >> HASH_MID_LOW && t->nold >> (HASH_MID_LOW + HASH_MID_BITS) == 0;
	for (; budget > 0 && t->moved < t->nold; budget--, t->moved++) {
		/* entries are all over memory (their new buckets are two streams in order): ask
		 * for a bucket's first entry some buckets ahead, its second once the first has come */
		if (t->moved + GROW_AHEAD < t->nold)
			__builtin_prefetch(t->old[t->moved + GROW_AHEAD], 1);
		if (t->moved + GROW_AHEAD / 2 < t->nold) {
			const struct rib_entry *f = t->old[t->moved + GROW_AHEAD / 2];
			if (f)
				__builtin_prefetch(f->hnext, 1);
		}
		struct rib_entry *e = t->old[t->moved], *n;
		for (; e; e = n) {
			n = e->hnext;
			uint32_t h = kept ? (uint32_t)e->hash_mid << HASH_MID_LOW : rib_hash(e->wire, e->len);
			struct rib_entry **b = &t->buckets[t->moved | (h & bit)];
			e->hnext = *b;
			*b = e;
		}
		t->old[t->moved] = NULL;
	}
	if (t->moved < t->nold)
		return true;
	free(t->old);
	t->old = NULL;
	t->nold = t->moved = 0;
	return false;
}

static void grow(struct rib *t)
{
	if (t->old)
		return;                 /* one doubling at a time */
	struct rib_entry **b = calloc(t->nbuckets * 2, sizeof(*b));
	if (!b)
		return;                 /* longer chains, still correct */
	t->old = t->buckets;
	t->nold = t->nbuckets;
	t->moved = 0;
	t->buckets = b;
	t->nbuckets *= 2;
}

struct rib_entry *rib_get(struct rib *t, const uint8_t *wire, size_t len, uint32_t hash)
{
	struct rib_entry **b = rib_chain(t, hash);
	struct rib_entry *e = find(*b, wire, len);
	if (e)
		return e;
	e = slab_alloc(&t->entry_slabs[ENTRY_CLASS(len)]);
	if (!e)
		return NULL;
	memset(e, 0, offsetof(struct rib_entry, wire));
	e->len = (uint8_t)len;
	e->hash_mid = (uint16_t)(hash >> HASH_MID_LOW);
	memcpy(e->wire, wire, len);
	if (t->old) {
		rib_grow_step(t, MOVE_PER_INSERT);
		b = rib_chain(t, hash);     /* the step may have moved its bucket */
	}
	e->hnext = *b;
	*b = e;
	if (++t->entries > 2 * t->nbuckets)
		grow(t);                /* chains of two on average: 4 bytes of bucket per name */
	return e;
}

static void entry_release(struct rib *t, struct rib_entry *e)
{
	if (e->routes || e->adv || e->flags || e->refs)
		return;
	struct rib_entry **pp = rib_chain(t, rib_hash(e->wire, e->len));
	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	t->entries--;
	slab_free(&t->entry_slabs[ENTRY_CLASS(e->len)], e);
}

void rib_release_pending(struct rib *t)
{
	for (size_t i = 0; i < t->release.n; i++) {
		t->release.v[i]->flags &= (uint8_t)~ENTRY_RELEASE;
		entry_release(t, t->release.v[i]);
	}
	t->release.n = 0;
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

/* Calls fn on the entries of chain b whose class (hash modulo the cursor's size) is cls;
 * all of them when every entry of the chain is of that class. */
static unsigned visit(struct rib_entry *e, const struct rib_cursor *c, size_t cls, bool filter,
		      void (*fn)(struct rib_entry *e, void *arg), void *arg)
{
	unsigned seen = 0;
	for (struct rib_entry *n; e; e = n) {
		n = e->hnext;   /* entries are freed only by the flush, never during a walk */
		if (filter && (rib_hash(e->wire, e->len) & (c->nb - 1)) != cls)
			continue;
		fn(e, arg);
		seen++;
	}
	return seen;
}

unsigned rib_cursor_step(struct rib *t, struct rib_cursor *c, void (*fn)(struct rib_entry *e, void *arg), void *arg)
{
	size_t cls = c->next;
	unsigned seen = 0;
	/* the class in today's array: buckets cls, cls + nb, cls + 2 nb, ... (nb divides its size) */
	for (size_t b = cls; b < t->nbuckets; b += c->nb)
		seen += visit(t->buckets[b], c, cls, false, fn, arg);
	/* and in the old one, in buckets not moved yet */
	if (t->old) {
		size_t step = c->nb < t->nold ? c->nb : t->nold;
		for (size_t b = cls & (step - 1); b < t->nold; b += step)
			if (b >= t->moved)
				seen += visit(t->old[b], c, cls, c->nb > t->nold, fn, arg);
	}
	c->next++;
	return seen;
}

bool entry_list_grow(struct entry_list *l, struct rib_entry *e)
{
	if (VEC_RESERVE(l->v, l->cap, l->n + 1) < 0) {
		log_err("out of memory for a list of %zu changed names", l->n + 1);
		return false;
	}
	l->v[l->n++] = e;
	return true;
}
