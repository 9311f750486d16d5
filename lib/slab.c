#include <stdlib.h>

#include "slab.h"

#define CHUNK_BYTES     (64 * 1024)
#define CHUNK_MIN_OBJS  16

struct slab_chunk {
	struct slab_chunk *next;
	size_t bytes;
	max_align_t data[];
};

void slab_init(struct slab *s, size_t size)
{
	if (size < sizeof(void *))
		size = sizeof(void *);
	s->size = (size + 7) & ~(size_t)7;
	s->free = NULL;
	s->next = s->end = NULL;
	s->chunks = NULL;
	s->live = 0;
}

void *slab_alloc_chunk(struct slab *s)
{
	size_t bytes = CHUNK_BYTES - sizeof(struct slab_chunk);
	if (bytes < s->size * CHUNK_MIN_OBJS)
		bytes = s->size * CHUNK_MIN_OBJS;
	struct slab_chunk *c = malloc(sizeof(*c) + bytes);
	if (!c)
		return NULL;
	c->next = s->chunks;
	c->bytes = bytes;
	s->chunks = c;
	uint8_t *p = (uint8_t *)c->data;
	s->next = p + s->size;
	s->end = p + bytes / s->size * s->size;
	SLAB_POISON(s->next, (size_t)(s->end - s->next));
	return p;
}

void slab_destroy(struct slab *s)
{
	struct slab_chunk *c = s->chunks;
	while (c) {
		struct slab_chunk *n = c->next;
		/* ASan keeps its marks on memory that goes back to malloc */
		SLAB_UNPOISON(c->data, c->bytes);
		free(c);
		c = n;
	}
	slab_init(s, s->size);
}
