/*
 * What the RDE knows of each aggregate's stored version (aggregates.c
 * stores them), by the aggregate's name.  The aggregate's routes are the
 * table's (rib.h, under AGG_KEY_MARK); this is what the store told.
 */
#ifndef NBRPD_AGG_TABLE_H
#define NBRPD_AGG_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attest.h"
#include "chain.h"
#include "name.h"
#include "rib.h"

/* What the RDE knows of an aggregate's members: the version stored here (aggregates.c's). */
struct rde_agg {
	struct chain_node hlink;                /* by name */
	uint32_t version, members;
	uint32_t adv_version;                   /* the version peers were last told */
	bool held;                              /* a version is stored */
	bool has_digest;                        /* digest is of that version's members (signatures on) */
	bool verified;                          /* a valid route signed that digest for that version */
	bool distrust;                          /* one signed another and none this: fetched whole at the flush */
	uint8_t digest[ATTEST_DIGEST_LEN];      /* attest_member_digest: what its origin attestation covers */
	/* members of that version that auth_key may not originate, under trust file auth_gen (0: none counted) */
	uint64_t auth_gen;
	uint32_t auth_version, unauthorised;
	uint8_t auth_key[SIGKEY_PUBLIC_LEN];
	uint64_t unsigned_sources;              /* good chains whose peer named another source than the signed one */
	uint8_t unauth_len;                     /* the first of them */
	uint8_t unauth_wire[NAME_MAX_WIRE];
	uint8_t len;
	uint8_t wire[NAME_MAX_WIRE];
};

struct agg_table {
	struct chain_table c;
};

int agg_table_init(struct agg_table *t);
void agg_table_free(struct agg_table *t);
/* By the aggregate's name (wire form), or NULL. */
struct rde_agg *agg_table_find(const struct agg_table *t, const uint8_t *wire, size_t len);
/* The same, made if there is none (NULL: out of memory). */
struct rde_agg *agg_table_get(struct agg_table *t, const uint8_t *wire, size_t len);
/* An aggregate's entry's record, or NULL. */
static inline struct rde_agg *agg_table_of(const struct agg_table *t, const struct rib_entry *e)
{
	return entry_is_aggregate(e) ? agg_table_find(t, e->wire + 1, e->len - 1u) : NULL;
}

#endif
