/*
 * Freshness of signed routes (docs/SIGNATURES.md, Freshness): the newest
 * origin_seq an origin key has signed for a name, and whether that stamp
 * was withdrawn.  Consulted for every name of every valid signed Route,
 * so an open-addressed table of 32-byte slots: one cache line a lookup,
 * no allocation a name.  A slot names the name and the key by 64-bit
 * hashes: two names collide only where one origin key signs both, which
 * only that origin could arrange, against itself.
 */
#ifndef NBRPD_FRESH_H
#define NBRPD_FRESH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fresh_slot {
	uint64_t name;                  /* the name's hash, never 0; 0: an empty slot */
	uint64_t key;                   /* the origin key's first 8 bytes */
	uint64_t seq;                   /* the newest stamp it signed */
	uint32_t until;                 /* unix seconds: forgotten after (every chain it refuses has expired) */
	uint32_t withdrawn;             /* seq itself was withdrawn (a signed origin withdrawal) */
};

struct fresh_table {
	struct fresh_slot *v;
	size_t cap, n;                  /* cap a power of two, or 0 */
	size_t sweep;
};

struct fresh_slot *fresh_find(const struct fresh_table *t, const uint8_t *wire, size_t len, const uint8_t *key);
/* Asks for the memory of that name's slot: a table of millions misses the caches on every name. */
void fresh_prefetch(const struct fresh_table *t, const uint8_t *wire, size_t len, const uint8_t *key);
/* A new slot (seq 0) for a name and key not in t, or NULL if out of memory. */
struct fresh_slot *fresh_add(struct fresh_table *t, const uint8_t *wire, size_t len, const uint8_t *key);
/* Forgets the entries whose until has passed, among `budget` slots from where the last call stopped. */
void fresh_sweep(struct fresh_table *t, uint64_t now, size_t budget);
void fresh_free(struct fresh_table *t);

#endif
