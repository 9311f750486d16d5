#include <errno.h>
#include <stdlib.h>

#include "chain.h"

#define CHAIN_FIRST_BUCKETS     16

static int grow(struct chain_table *t, size_t nb)
{
	struct chain_node **b = calloc(nb, sizeof(*b));
	if (!b)
		return -1;
	for (size_t i = 0; i < t->nb; i++)
		for (struct chain_node *q = t->b[i], *next; q; q = next) {
			next = q->next;
			size_t k = q->hash & (nb - 1);
			q->next = b[k];
			b[k] = q;
		}
	free(t->b);
	t->b = b;
	t->nb = nb;
	return 0;
}

int chain_init(struct chain_table *t)
{
	t->b = NULL;
	t->nb = t->n = 0;
	if (grow(t, CHAIN_FIRST_BUCKETS) < 0) {
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

int chain_add(struct chain_table *t, struct chain_node *n, uint64_t hash)
{
	if (!t->nb && grow(t, CHAIN_FIRST_BUCKETS) < 0) {
		errno = ENOMEM;
		return -1;
	}
	if (t->n >= t->nb && t->nb <= SIZE_MAX / 2 / sizeof(*t->b))
		(void)grow(t, t->nb * 2);
	size_t k = hash & (t->nb - 1);
	n->hash = hash;
	n->next = t->b[k];
	t->b[k] = n;
	t->n++;
	return 0;
}

void chain_remove(struct chain_table *t, struct chain_node *n)
{
	for (struct chain_node **pp = &t->b[n->hash & (t->nb - 1)]; *pp; pp = &(*pp)->next)
		if (*pp == n) {
			*pp = n->next;
			t->n--;
			return;
		}
}

struct chain_node *chain_next(const struct chain_table *t, const struct chain_node *n)
{
	if (n && n->next)
		return n->next;
	for (size_t i = n ? (n->hash & (t->nb - 1)) + 1 : 0; i < t->nb; i++)
		if (t->b[i])
			return t->b[i];
	return NULL;
}

void chain_free(struct chain_table *t)
{
	free(t->b);
	t->b = NULL;
	t->nb = t->n = 0;
}
