/*
 * Records by an aggregate's name (agg_table.h).
 */
#include <stdlib.h>
#include <string.h>

#include "agg_table.h"
#include "hashkey.h"

static uint64_t agg_hash(const uint8_t *wire, size_t len)
{
	return hashkey64(wire, len);    /* the names are the peers' */
}

int agg_table_init(struct agg_table *t, size_t size)
{
	t->size = size;
	return chain_init(&t->c);
}

void agg_table_free(struct agg_table *t)
{
	for (struct chain_node *n = chain_next(&t->c, NULL), *next; n; n = next) {
		next = chain_next(&t->c, n);
		free(chain_entry(n, struct agg_node, hlink));
	}
	chain_free(&t->c);
}

void *agg_table_find(const struct agg_table *t, const uint8_t *wire, size_t len)
{
	uint64_t h = agg_hash(wire, len);
	for (struct chain_node *n = chain_first(&t->c, h); n; n = n->next) {
		struct agg_node *g = chain_entry(n, struct agg_node, hlink);
		if (n->hash == h && g->len == len && memcmp(g->wire, wire, len) == 0)
			return g;
	}
	return NULL;
}

void *agg_table_get(struct agg_table *t, const uint8_t *wire, size_t len)
{
	struct agg_node *g = agg_table_find(t, wire, len);
	if (g)
		return g;
	if (len > sizeof(g->wire) || !(g = calloc(1, t->size)))
		return NULL;
	g->len = (uint8_t)len;
	memcpy(g->wire, wire, len);
	if (chain_add(&t->c, &g->hlink, agg_hash(wire, len)) < 0) {
		free(g);
		return NULL;
	}
	return g;
}

const char *agg_node_text(const struct agg_node *g, char buf[NAME_MAX_TEXT])
{
	struct name n = { .len = g->len };
	memcpy(n.wire, g->wire, g->len);
	name_to_text(&n, buf, NAME_MAX_TEXT);
	return buf;
}
