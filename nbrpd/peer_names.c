/*
 * The RDE's configured peers by name (peer_names.h).
 */
#include <stdlib.h>
#include <string.h>

#include "peer_names.h"
#include "rde_internal.h"

static size_t name_slot(const char *name, size_t n)
{
	return (size_t)hashkey64(name, strlen(name)) & (n - 1);
}

int peer_names_init(struct peer_names *t)
{
	t->n = 0;
	t->nb = 16;
	t->b = calloc(t->nb, sizeof(*t->b));
	return t->b ? 0 : -1;
}

void peer_names_free(struct peer_names *t)
{
	free(t->b);
	t->b = NULL;
}

struct rde_peer *peer_names_find(const struct peer_names *t, const char *name)
{
	for (struct rde_peer *p = t->b[name_slot(name, t->nb)]; p; p = p->hnext)
		if (strcmp(p->name, name) == 0)
			return p;
	return NULL;
}

void peer_names_add(struct peer_names *t, struct rde_peer *p)
{
	if (++t->n * 2 > t->nb) {
		size_t nb = t->nb * 4;
		struct rde_peer **b = calloc(nb, sizeof(*b));
		if (b) {
			for (size_t i = 0; i < t->nb; i++)
				for (struct rde_peer *q = t->b[i], *n; q; q = n) {
					n = q->hnext;
					size_t k = name_slot(q->name, nb);
					q->hnext = b[k];
					b[k] = q;
				}
			free(t->b);
			t->b = b;
			t->nb = nb;
		}
	}
	size_t k = name_slot(p->name, t->nb);
	p->hnext = t->b[k];
	t->b[k] = p;
}

void peer_names_remove(struct peer_names *t, struct rde_peer *p)
{
	for (struct rde_peer **pp = &t->b[name_slot(p->name, t->nb)]; *pp; pp = &(*pp)->hnext)
		if (*pp == p) {
			*pp = p->hnext;
			t->n--;
			return;
		}
}
