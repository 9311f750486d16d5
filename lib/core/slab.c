#include <stdlib.h>
#include <sys/mman.h>

#include "slab.h"

void slab_init(struct slab *s, size_t size)
{
	if (size < 8)
		size = 8;
	s->size = (size + 7) & ~(size_t)7;
	/* the bitmap takes a bit an object, the objects start on a cache line */
	size_t n = (SLAB_CHUNK_BYTES - sizeof(struct slab_chunk)) * 8 / (s->size * 8 + 1);
	size_t words = (n + 63) / 64;
	s->data = (sizeof(struct slab_chunk) + words * 8 + 63) & ~(size_t)63;
	s->partial = NULL;
	s->next = s->end = NULL;
	s->chunks = NULL;
	s->live = 0;
}

/*
 * A chunk is mapped, not malloc'd: its pages are zero until touched, so a
 * slab that holds a few objects costs the pages they and the chunk's head
 * are on (the map's words are touched as objects are freed), where
 * posix_memalign's chunk cost two pages of malloc's headers and the whole
 * map zeroed (a simulated router has several slabs of a few objects:
 * sim/net.c).  The mapping is twice a chunk, to align one in it; the rest
 * stays mapped and untouched, so that the chunks' mappings stay
 * contiguous and the kernel keeps them in one area (a process has at most
 * vm.max_map_count of those).
 */
void *slab_alloc_chunk(struct slab *s)
{
	uint8_t *map = mmap(NULL, 2 * SLAB_CHUNK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return NULL;
	struct slab_chunk *c = (struct slab_chunk *)(((uintptr_t)map + SLAB_CHUNK_BYTES - 1) &
						     ~(uintptr_t)(SLAB_CHUNK_BYTES - 1));
	c->map_base = map;
	c->next = s->chunks;
	s->chunks = c;
	uint8_t *p = (uint8_t *)c + s->data;
	s->next = p + s->size;
	s->end = p + (SLAB_CHUNK_BYTES - s->data) / s->size * s->size;
	SLAB_POISON(s->next, (size_t)((uint8_t *)c + SLAB_CHUNK_BYTES - s->next));
	return p;
}

void slab_destroy(struct slab *s)
{
	struct slab_chunk *c = s->chunks;
	while (c) {
		struct slab_chunk *n = c->next;
		/* ASan keeps its marks on memory it did not see unmapped */
		SLAB_UNPOISON(c, SLAB_CHUNK_BYTES);
		munmap(c->map_base, 2 * SLAB_CHUNK_BYTES);
		c = n;
	}
	slab_init(s, s->size);
}
