/*
 * The RDE's records of aggregates' stored versions (agg_table.h).
 */
#include <stdlib.h>
#include <string.h>

#include "agg_table.h"
#include "hashkey.h"

static size_t agg_slot(const uint8_t *wire, size_t len, size_t n)
{
	return (size_t)hashkey64(wire, len) & (n - 1);       /* the names are the peers' */
}

int agg_table_init(struct agg_table *t)
{
	t->n = 0;
	t->nb = 16;
	t->b = calloc(t->nb, sizeof(*t->b));
	return t->b ? 0 : -1;
}

void agg_table_free(struct agg_table *t)
{
	for (size_t i = 0; t->b && i < t->nb; i++)
		for (struct rde_agg *g = t->b[i], *n; g; g = n) {
			n = g->hnext;
			free(g);
		}
	free(t->b);
	t->b = NULL;
}

struct rde_agg *agg_table_find(const struct agg_table *t, const uint8_t *wire, size_t len)
{
	for (struct rde_agg *g = t->b[agg_slot(wire, len, t->nb)]; g; g = g->hnext)
		if (g->len == len && memcmp(g->wire, wire, len) == 0)
			return g;
	return NULL;
}

struct rde_agg *agg_table_get(struct agg_table *t, const uint8_t *wire, size_t len)
{
	struct rde_agg *g = agg_table_find(t, wire, len);
	if (g)
		return g;
	if (t->n >= t->nb) {
		size_t nb = t->nb * 2;
		struct rde_agg **b = calloc(nb, sizeof(*b));
		if (!b)
			return NULL;
		for (size_t i = 0; i < t->nb; i++)
			for (struct rde_agg *q = t->b[i], *n; q; q = n) {
				n = q->hnext;
				size_t k = agg_slot(q->wire, q->len, nb);
				q->hnext = b[k];
				b[k] = q;
			}
		free(t->b);
		t->b = b;
		t->nb = nb;
	}
	if (!(g = calloc(1, sizeof(*g))))
		return NULL;
	g->len = (uint8_t)len;
	memcpy(g->wire, wire, len);
	size_t k = agg_slot(wire, len, t->nb);
	g->hnext = t->b[k];
	t->b[k] = g;
	t->n++;
	return g;
}
