/*
 * A hash table of intrusive chains, for tables a daemon grows as it
 * learns (peers, aggregates): embed a struct chain_node, which keeps its
 * key's hash, so the table doubles without asking its owner for keys.
 * The owner compares keys; the nodes are the owner's to free.  Not for
 * the hot tables (the RIB, attributes), which prefetch along their chains.
 */
#ifndef CR_CHAIN_H
#define CR_CHAIN_H

#include <stddef.h>
#include <stdint.h>

struct chain_node {
	struct chain_node *next;
	uint64_t hash;
};

struct chain_table {
	struct chain_node **b;
	size_t nb, n;                   /* buckets (a power of two, or 0), nodes */
};

#define chain_entry(node, type, field) ((type *)((char *)(node) - offsetof(type, field)))

/* The chain hash is in: walk ->next, comparing hash before the key. */
static inline struct chain_node *chain_first(const struct chain_table *t, uint64_t hash)
{
	return t->nb ? t->b[hash & (t->nb - 1)] : NULL;
}

/* 16 buckets, so that chain_add cannot fail; -1 (ENOMEM).  A zeroed table is empty too. */
int chain_init(struct chain_table *t);
/*
 * Links n under hash; the buckets double once there are as many nodes
 * (16 at first).  -1 (ENOMEM) only when the table has no buckets and none
 * could be had: a doubling that fails only makes the chains longer.
 */
int chain_add(struct chain_table *t, struct chain_node *n, uint64_t hash);
void chain_remove(struct chain_table *t, struct chain_node *n);
/* Every node, in no order: from chain_next(t, NULL) until NULL; n may be freed once past it. */
struct chain_node *chain_next(const struct chain_table *t, const struct chain_node *n);
/* The buckets; the table is empty again. */
void chain_free(struct chain_table *t);

#endif
