/*
 * The reference table for scripts/bench fib: a plain open-addressing hash
 * table keyed by a byte string, exact match only.  It is meant to be as good
 * as a plain table gets, because the FIB's longest-suffix lookup is measured
 * against it:
 *
 *   - linear probing over a power-of-two array of 16-byte slots
 *     {64-bit hash, 32-bit key offset, 32-bit value}, load factor <= 0.6
 *     (the array doubles before an insert would pass it);
 *   - a fast inline 64-bit hash of the whole key (the construction of the
 *     FIB's own label hash; -DBASELINE_XXH3 for XXH3_64bits), the full
 *     64-bit hash compared before the key bytes are touched, so a lookup
 *     reads one slot line and one key;
 *   - keys stored length-prefixed in one contiguous arena (offset 0 is
 *     reserved, so offset 0 marks an empty slot);
 *   - the slot array and the arena are large anonymous mappings with
 *     MADV_HUGEPAGE, as the FIB allocates its own.
 *
 * Keys are at most 255 bytes (a canonical DNS wire name is).  Single-threaded.
 */
#ifndef CR_BENCH_BASELINE_TABLE_H
#define CR_BENCH_BASELINE_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

struct baseline_table;

/* expected: number of keys to size for at once (0: start small and grow). */
struct baseline_table *baseline_create(size_t expected);
void baseline_destroy(struct baseline_table *t);

/*
 * Inserts key -> value, or replaces the value if the key is present.
 * Returns 1 if inserted, 0 if replaced, -1 if out of memory or len > 255.
 */
int baseline_insert(struct baseline_table *t, const uint8_t *key, size_t len, uint32_t value);

/* Exact match. */
bool baseline_lookup(const struct baseline_table *t, const uint8_t *key, size_t len, uint32_t *value);

struct baseline_stats {
	uint64_t count;
	uint64_t capacity;      /* slots */
	uint64_t slot_bytes;    /* capacity * sizeof(slot) */
	uint64_t arena_bytes;   /* key bytes used, length prefixes included */
};
void baseline_get_stats(const struct baseline_table *t, struct baseline_stats *st);

#endif
