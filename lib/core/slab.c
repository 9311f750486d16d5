#include <stdlib.h>
#include <string.h>

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

void *slab_alloc_chunk(struct slab *s)
{
	void *mem;
	if (posix_memalign(&mem, SLAB_CHUNK_BYTES, SLAB_CHUNK_BYTES) != 0)
		return NULL;
	struct slab_chunk *c = mem;
	memset(c, 0, s->data);
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
		/* ASan keeps its marks on memory that goes back to malloc */
		SLAB_UNPOISON(c, SLAB_CHUNK_BYTES);
		free(c);
		c = n;
	}
	slab_init(s, s->size);
}
