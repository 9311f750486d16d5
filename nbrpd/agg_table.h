/*
 * Records by an aggregate's name: the RDE's of each aggregate's stored
 * version (struct rde_agg, aggregates.c stores them), and the signature
 * stage's own of what its routes signed (rdesig.c).  The aggregate's
 * routes are the table's (rib.h, under AGG_KEY_MARK).
 */
#ifndef NBRPD_AGG_TABLE_H
#define NBRPD_AGG_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chain.h"
#include "name.h"
#include "rib.h"

/* The first member of every record: its link and the aggregate's name. */
struct agg_node {
	struct chain_node hlink;
	uint8_t len;
	uint8_t wire[NAME_MAX_WIRE];
};

/* What the RDE knows of an aggregate's members: the version stored here (aggregates.c's). */
struct rde_agg {
	struct agg_node n;
	uint32_t version, members;
	uint32_t adv_version;                   /* the version peers were last told */
	bool held;                              /* a version is stored */
};

struct agg_table {
	struct chain_table c;
	size_t size;                            /* of a record */
};

/* size: of the owner's records, each beginning with a struct agg_node. */
int agg_table_init(struct agg_table *t, size_t size);
void agg_table_free(struct agg_table *t);
/* By the aggregate's name (wire form), or NULL. */
void *agg_table_find(const struct agg_table *t, const uint8_t *wire, size_t len);
/* The same, made zeroed if there is none (NULL: out of memory). */
void *agg_table_get(struct agg_table *t, const uint8_t *wire, size_t len);
/* An aggregate's entry's record, or NULL. */
static inline void *agg_table_of(const struct agg_table *t, const struct rib_entry *e)
{
	return entry_is_aggregate(e) ? agg_table_find(t, e->wire + 1, e->len - 1u) : NULL;
}
/* Every record, in no order: from agg_table_next(t, NULL) until NULL. */
static inline void *agg_table_next(const struct agg_table *t, const void *g)
{
	struct chain_node *c = chain_next(&t->c, g ? &((const struct agg_node *)g)->hlink : NULL);
	return c ? chain_entry(c, struct agg_node, hlink) : NULL;
}
/* The aggregate's name as text. */
const char *agg_node_text(const struct agg_node *n, char buf[NAME_MAX_TEXT]);

#endif
