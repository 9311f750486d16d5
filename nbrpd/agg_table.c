/*
 * The RDE's records of aggregates' stored versions (agg_table.h).
 */
#include <stdlib.h>
#include <string.h>

#include "agg_table.h"
#include "hashkey.h"

static uint64_t agg_hash(const uint8_t *wire, size_t len)
{
	return hashkey64(wire, len);    /* the names are the peers' */
}

int agg_table_init(struct agg_table *t)
{
	return chain_init(&t->c);
}

void agg_table_free(struct agg_table *t)
{
	for (struct chain_node *n = chain_next(&t->c, NULL), *next; n; n = next) {
		next = chain_next(&t->c, n);
		free(chain_entry(n, struct rde_agg, hlink));
	}
	chain_free(&t->c);
}

struct rde_agg *agg_table_find(const struct agg_table *t, const uint8_t *wire, size_t len)
{
	uint64_t h = agg_hash(wire, len);
	for (struct chain_node *n = chain_first(&t->c, h); n; n = n->next) {
		struct rde_agg *g = chain_entry(n, struct rde_agg, hlink);
		if (n->hash == h && g->len == len && memcmp(g->wire, wire, len) == 0)
			return g;
	}
	return NULL;
}

struct rde_agg *agg_table_get(struct agg_table *t, const uint8_t *wire, size_t len)
{
	struct rde_agg *g = agg_table_find(t, wire, len);
	if (g)
		return g;
	if (!(g = calloc(1, sizeof(*g))))
		return NULL;
	g->len = (uint8_t)len;
	memcpy(g->wire, wire, len);
	if (chain_add(&t->c, &g->hlink, agg_hash(wire, len)) < 0) {
		free(g);
		return NULL;
	}
	return g;
}
