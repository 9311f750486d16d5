/*
 * Fixed-size objects carved from big chunks, for structures allocated and
 * freed one per name by the hundred thousand (nbrpd's RIB), where malloc's
 * work per call and its header per object were the largest single cost.
 *
 * A chunk is SLAB_CHUNK_BYTES, aligned to its size, so a freed object
 * finds its chunk by masking its address, and the chunk keeps a bitmap of
 * its freed objects.  Freed objects are handed out again lowest address
 * first, a chunk at a time: after a peer's routes went, the routes that
 * replace them are written in address order, as into a fresh chunk.  (A
 * free list linked through the objects handed them out in the order they
 * were freed, which is the RIB's hash order, and its load missed the cache
 * on nearly every object: a third of the router's time re-learning a
 * peer's routes.)  Chunks go back to the system only with the whole slab
 * (BIRD's slab without giving empty pages back).  Not thread-safe: one
 * owner.
 *
 * Under ASan, free objects and the unused tail of a chunk are poisoned, so
 * a use after slab_free is still reported.
 */
#ifndef CR_SLAB_H
#define CR_SLAB_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#if defined(__SANITIZE_ADDRESS__)
#define SLAB_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SLAB_ASAN 1
#endif
#endif

#ifdef SLAB_ASAN
#include <sanitizer/asan_interface.h>
#define SLAB_POISON(p, n)       ASAN_POISON_MEMORY_REGION((p), (n))
#define SLAB_UNPOISON(p, n)     ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define SLAB_POISON(p, n)       ((void)(p), (void)(n))
#define SLAB_UNPOISON(p, n)     ((void)(p), (void)(n))
#endif

#define SLAB_CHUNK_BYTES        ((size_t)1 << 20)

struct slab_chunk {
	void *map_base;                 /* its mapping (slab.c) */
	struct slab_chunk *next;        /* every chunk of the slab */
	struct slab_chunk *next_partial;/* chunks with freed objects */
	uint32_t nfree;                 /* bits set in map */
	uint32_t cursor;                /* no bit is set in a word of map before this one */
	uint64_t map[];                 /* a bit set: that object was freed */
};

struct slab {
	size_t size;                    /* bytes per object, a multiple of 8 */
	size_t data;                    /* offset of the first object in a chunk */
	struct slab_chunk *partial;     /* chunks with freed objects, newest first */
	uint8_t *next, *end;            /* the part of the newest chunk never handed out */
	struct slab_chunk *chunks;
	size_t live;                    /* objects handed out and not freed */
};

/* size: bytes per object, at most SLAB_CHUNK_BYTES / 16. */
void slab_init(struct slab *s, size_t size);
/* Frees every chunk: every object of the slab is gone. */
void slab_destroy(struct slab *s);
/* The slow path of slab_alloc: a new chunk.  NULL when out of memory. */
void *slab_alloc_chunk(struct slab *s);

/* An object of s->size bytes, not zeroed; NULL when out of memory. */
static inline void *slab_alloc(struct slab *s)
{
	uint8_t *p;
	struct slab_chunk *c = s->partial;
	if (c) {
		uint32_t w = c->cursor;
		while (!c->map[w])
			w++;
		uint64_t m = c->map[w];
		c->map[w] = m & (m - 1);
		c->cursor = w;
		if (--c->nfree == 0)
			s->partial = c->next_partial;
		p = (uint8_t *)c + s->data + ((size_t)w * 64 + (size_t)__builtin_ctzll(m)) * s->size;
		SLAB_UNPOISON(p, s->size);
	} else if (s->end - s->next >= (ptrdiff_t)s->size) {
		p = s->next;
		s->next += s->size;
		SLAB_UNPOISON(p, s->size);
	} else {
		p = slab_alloc_chunk(s);
		if (!p)
			return NULL;
	}
	s->live++;
	return p;
}

static inline void slab_free(struct slab *s, void *obj)
{
	if (!obj)
		return;
	struct slab_chunk *c = (struct slab_chunk *)((uintptr_t)obj & ~(uintptr_t)(SLAB_CHUNK_BYTES - 1));
	size_t i = (size_t)((uint8_t *)obj - ((uint8_t *)c + s->data)) / s->size;
	uint32_t w = (uint32_t)(i / 64);
	uint64_t bit = (uint64_t)1 << (i % 64);
	if (c->map[w] & bit)
		abort();                /* freed twice */
	c->map[w] |= bit;
	if (w < c->cursor)
		c->cursor = w;
	if (c->nfree++ == 0) {
		c->next_partial = s->partial;
		s->partial = c;
	}
	s->live--;
	SLAB_POISON(obj, s->size);
}

#endif
