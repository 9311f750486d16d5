/*
 * The table (rib.c): one entry per name, with its routes and what peers
 * are told (rde_internal.h) held by pointer only: the table knows nothing
 * of routes, peers or the RDE.
 */
#ifndef NBRPD_RIB_H
#define NBRPD_RIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hashkey.h"
#include "name.h"
#include "slab.h"

struct rib_route;
struct rib_attrs;

/* How far a walk of the table got: buckets are visited by their index
 * modulo the table size when the walk began (the table only doubles), so
 * a name is behind the cursor when its hash modulo that size is below it. */
struct rib_cursor {
	size_t nb;                      /* table size when the walk began */
	size_t next;                    /* the next bucket class to visit */
};

enum {
	ENTRY_DIRTY = 1,                        /* in the flush list */
	ENTRY_DEFERRED = 2,                     /* a load change waits for load-interval */
	ENTRY_RELEASE = 4,                      /* in the list of entries to free at the flush */
	ENTRY_MARK = 8,                         /* seen, during a compaction of the next-hop index */
	ENTRY_ORIGIN_WD = 16,                   /* origin withdrawals to pass on with it (origin_wd.c) */
	ENTRY_HELD = 32,                        /* its change waits for update-delay (rde.c) */
};

/* 38 bytes before the name: most names fit a 56-byte slab object.  Of the
 * name's hash only bits 10..25 are kept, the ones a doubling of the table
 * from 2^10 to 2^26 buckets needs (rib.c): the whole hash would cost 4 more
 * bytes a name on average (half the names would take the next slab class),
 * these 2, and a doubling then moves a name without hashing it again. */
struct rib_entry {
	struct rib_entry *hnext;
	struct rib_route *routes;
	struct rib_attrs *adv;                  /* what peers are told (a reference); NULL: nothing */
	uint32_t adv_load;
	uint32_t adv_time;                      /* ms since the RDE started, of the last advertisement */
	uint16_t refs;                          /* next-hop index slots pointing here */
	uint8_t flags;
	uint8_t len;
	uint16_t hash_mid;                      /* bits 10..25 of rib_hash */
	uint8_t wire[];
};

/*
 * An aggregate's entry shares the table with the names: its key is the
 * aggregate's wire name after this byte, which no name starts with (a
 * label is at most 63 bytes), so an aggregate and a name may have the
 * same name.  Hence an aggregate's name is at most 254 bytes.
 */
#define AGG_KEY_MARK            0xff
static inline bool entry_is_aggregate(const struct rib_entry *e)
{
	return e->len > 1 && e->wire[0] == AGG_KEY_MARK;
}

/* The entry's name: a name's, or for an aggregate's entry the aggregate's. */
static inline void rib_entry_name(const struct rib_entry *e, struct name *out)
{
	size_t skip = entry_is_aggregate(e);
	out->len = (uint8_t)(e->len - skip);
	memcpy(out->wire, e->wire + skip, out->len);
}

#define ENTRY_CLASS(len)        ((offsetof(struct rib_entry, wire) + (len) + 7) / 8)
#define ENTRY_CLASSES           (ENTRY_CLASS(NAME_MAX_WIRE) + 1)

/* A list of entries (dirty, deferred, to release); false when out of memory. */
struct entry_list {
	struct rib_entry **v;
	size_t n, cap;
};
bool entry_list_grow(struct entry_list *l, struct rib_entry *e);
static inline bool entry_list_push(struct entry_list *l, struct rib_entry *e)
{
	if (l->n == l->cap)
		return entry_list_grow(l, e);
	l->v[l->n++] = e;
	return true;
}

/*
 * Chained, two entries a bucket on average, doubling when full.  A doubling
 * is spread over many loop turns (Redis's incremental rehash): until every
 * bucket of the old array is moved, a name is in the old array if its old
 * bucket is not moved yet, else in the new one.
 */
struct rib {
	struct rib_entry **buckets;
	size_t nbuckets;
	struct rib_entry **old;                 /* growing: the previous array, */
	size_t nold, moved;                     /* its buckets [0, moved) already moved */
	uint64_t entries;
	uint64_t names;                         /* entries with a route */
	struct slab entry_slabs[ENTRY_CLASSES];
	struct entry_list release;              /* entries nothing may hold any more, freed at the flush */
};

int rib_init(struct rib *t);
void rib_destroy(struct rib *t);
/* Keyed: the names are the peers'. */
static inline uint32_t rib_hash(const uint8_t *wire, size_t len)
{
	return (uint32_t)hashkey64(wire, len);
}
/* The chain a name with this hash is in. */
static inline struct rib_entry **rib_chain(const struct rib *t, uint32_t hash)
{
	if (t->old) {
		size_t ob = hash & (t->nold - 1);
		if (ob >= t->moved)
			return &t->old[ob];
	}
	return &t->buckets[hash & (t->nbuckets - 1)];
}
/* A big table is mostly out of the caches: a name about to be looked up has its bucket
 * fetched first, then (once that has come) the first entry of its chain (rde.c, hash_ahead). */
static inline void rib_prefetch_bucket(const struct rib *t, uint32_t hash)
{
	__builtin_prefetch(rib_chain(t, hash));
}
static inline void rib_prefetch_chain(const struct rib *t, uint32_t hash)
{
	__builtin_prefetch(*rib_chain(t, hash));
}
struct rib_entry *rib_lookup(const struct rib *t, const uint8_t *wire, size_t len, uint32_t hash);
struct rib_entry *rib_get(struct rib *t, const uint8_t *wire, size_t len, uint32_t hash);
/* Moves up to `budget` buckets of a doubling; true while one is under way. */
bool rib_grow_step(struct rib *t, unsigned budget);
/* An entry nothing may hold any more (no route, nothing advertised, not listed, no index
 * slot): freed at the next rib_release_pending if that is still so. */
static inline void rib_maybe_release(struct rib *t, struct rib_entry *e)
{
	if (e->routes || e->adv || e->refs || (e->flags & (ENTRY_DIRTY | ENTRY_HELD | ENTRY_DEFERRED | ENTRY_RELEASE)))
		return;
	if (entry_list_push(&t->release, e))
		e->flags |= ENTRY_RELEASE;
}
/* Only the flush calls it, so no walk ever holds a freed entry. */
void rib_release_pending(struct rib *t);
void rib_cursor_start(const struct rib *t, struct rib_cursor *c);
bool rib_cursor_done(const struct rib *t, const struct rib_cursor *c);
/* Calls fn on every entry of the cursor's next bucket class, then advances; returns entries seen. */
unsigned rib_cursor_step(struct rib *t, struct rib_cursor *c, void (*fn)(struct rib_entry *e, void *arg), void *arg);
static inline bool rib_cursor_passed(const struct rib_cursor *c, const struct rib_entry *e)
{
	return (rib_hash(e->wire, e->len) & (c->nb - 1)) < c->next;
}

#endif
