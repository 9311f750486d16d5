/*
 * Fixed-size objects carved from big chunks, for structures allocated and
 * freed one per name by the hundred thousand (nbrpd's RIB), where malloc's
 * work per call and its header per object were the largest single cost.
 * A freed object goes on a free list and is the next one handed out;
 * chunks go back to the system only with the whole slab (BIRD's slab
 * without the per-page bookkeeping).  Not thread-safe: one owner.
 *
 * Under ASan, free objects and the unused tail of a chunk are poisoned, so
 * a use after slab_free is still reported.
 */
#ifndef CR_SLAB_H
#define CR_SLAB_H

#include <stddef.h>
#include <stdint.h>

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

struct slab_chunk;

struct slab {
	size_t size;                    /* bytes per object, a multiple of 8 */
	void *free;                     /* freed objects, linked through their first word */
	uint8_t *next, *end;            /* the part of the newest chunk never handed out */
	struct slab_chunk *chunks;
	size_t live;                    /* objects handed out and not freed */
};

/* size: bytes per object (at least a pointer's worth is used). */
void slab_init(struct slab *s, size_t size);
/* Frees every chunk: every object of the slab is gone. */
void slab_destroy(struct slab *s);
/* The slow path of slab_alloc: a new chunk.  NULL when out of memory. */
void *slab_alloc_chunk(struct slab *s);

/* An object of s->size bytes, not zeroed; NULL when out of memory. */
static inline void *slab_alloc(struct slab *s)
{
	void *p = s->free;
	if (p) {
		SLAB_UNPOISON(p, s->size);
		s->free = *(void **)p;
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

static inline void slab_free(struct slab *s, void *p)
{
	if (!p)
		return;
	*(void **)p = s->free;
	s->free = p;
	s->live--;
	SLAB_POISON(p, s->size);
}

#endif
