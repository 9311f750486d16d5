/*
 * The reference table: see baseline_table.h.
 */
#include "baseline_table.h"

#include <stdlib.h>
#include <string.h>

#ifdef BASELINE_XXH3
#define XXH_INLINE_ALL
#include <xxhash.h>
#endif

#include "arena.h"

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define MIN_CAPACITY    1024u
/* 32-bit offsets: the arena is one reservation of 4 GiB of address space. */
#define ARENA_RESERVE   (1ull << 32)

struct slot {
	uint64_t hash;
	uint32_t off;           /* into the arena; 0 = empty */
	uint32_t value;
};

/*
 * Memory comes from lib/core/arena.h, as the FIB's does: the slot array from
 * bigtable_alloc() (its own mapping, MADV_HUGEPAGE), the keys from a region
 * (address space reserved up front, committed in 2 MiB steps with
 * MADV_HUGEPAGE); only touched pages count in RSS.
 */
struct baseline_table {
	struct slot *slots;
	uint64_t mask;          /* capacity - 1 */
	uint64_t count;
	uint64_t grow_at;       /* largest count allowed at this capacity (load <= 0.6) */
	struct region arena;    /* entries: [len][len key bytes] */
	uint64_t arena_used;
};

static inline uint64_t load64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static inline uint32_t load32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static uint64_t grow_limit(uint64_t capacity)
{
	return capacity * 3 / 5;        /* load factor 0.6 */
}

/*
 * The hash of the whole key.  By default the same construction as the
 * FIB's per-label hash (lib/fib/fib.c, edge_hash: overlapping word loads and
 * 64x64->128 multiply-folds, wyhash style), which measured about 15% faster
 * lookups here than XXH3_64bits (inlined, XXH_INLINE_ALL); -DBASELINE_XXH3
 * switches back to XXH3 for comparison.
 */
#ifdef BASELINE_XXH3
static inline uint64_t hash_key(const uint8_t *key, size_t len)
{
	return XXH3_64bits(key, len);
}
#else
static inline uint64_t mum(uint64_t a, uint64_t b)
{
	__uint128_t r = (__uint128_t)a * b;
	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

#define HASH_SEED0 0xa0761d6478bd642full
#define HASH_SEED1 0xe7037ed1a0b428dbull

static inline uint64_t hash_key(const uint8_t *k, size_t n)
{
	uint64_t a, b, seed = HASH_SEED0 ^ n;

	if (likely(n >= 8)) {
		if (unlikely(n > 16)) {
			for (size_t i = 0; i + 16 < n; i += 16)
				seed = mum(load64(k + i) ^ HASH_SEED1, load64(k + i + 8) ^ seed);
			a = load64(k + n - 16);
		} else {
			a = load64(k);
		}
		b = load64(k + n - 8);
	} else if (n >= 4) {
		a = load32(k);
		b = load32(k + n - 4);
	} else if (n > 0) {
		a = k[0];
		b = (uint64_t)k[n / 2] << 8 | k[n - 1];
	} else {
		a = b = 0;
	}
	return mum(a ^ seed, b ^ HASH_SEED1);
}
#endif

/*
 * Key comparison for short keys without a call: overlapping unaligned word
 * loads that stay inside [0, len).  DNS names here are 9-23 bytes.
 */
static inline bool key_equal(const uint8_t *a, const uint8_t *b, size_t len)
{
	if (likely(len >= 8)) {
		if (len <= 16)
			return ((load64(a) ^ load64(b)) |
				(load64(a + len - 8) ^ load64(b + len - 8))) == 0;
		if (len <= 32)
			return ((load64(a) ^ load64(b)) |
				(load64(a + 8) ^ load64(b + 8)) |
				(load64(a + len - 16) ^ load64(b + len - 16)) |
				(load64(a + len - 8) ^ load64(b + len - 8))) == 0;
		return memcmp(a, b, len) == 0;
	}
	if (len >= 4)
		return ((load32(a) ^ load32(b)) | (load32(a + len - 4) ^ load32(b + len - 4))) == 0;
	return memcmp(a, b, len) == 0;
}

static uint64_t capacity_for(size_t expected)
{
	uint64_t cap = MIN_CAPACITY;
	while (grow_limit(cap) < expected)
		cap <<= 1;
	return cap;
}

static int alloc_slots(struct baseline_table *t, uint64_t capacity)
{
	struct slot *s = bigtable_alloc((size_t)capacity * sizeof(struct slot), BIGTABLE_HUGE_PAGES);
	if (!s)
		return -1;
	t->slots = s;
	t->mask = capacity - 1;
	t->grow_at = grow_limit(capacity);
	return 0;
}

struct baseline_table *baseline_create(size_t expected)
{
	struct baseline_table *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	if (alloc_slots(t, capacity_for(expected)) < 0) {
		free(t);
		return NULL;
	}
	if (region_init(&t->arena, ARENA_RESERVE) < 0 || region_ensure(&t->arena, 1) < 0) {
		region_free(&t->arena);
		bigtable_free(t->slots, (t->mask + 1) * sizeof(struct slot));
		free(t);
		return NULL;
	}
	t->arena_used = 1;      /* offset 0 means "empty slot" */
	return t;
}

void baseline_destroy(struct baseline_table *t)
{
	if (!t)
		return;
	bigtable_free(t->slots, (t->mask + 1) * sizeof(struct slot));
	region_free(&t->arena);
	free(t);
}

/* Doubles the slot array; slots keep the full hash, so keys are not reread. */
static int grow(struct baseline_table *t)
{
	struct slot *old = t->slots;
	uint64_t old_cap = t->mask + 1;

	if (alloc_slots(t, old_cap * 2) < 0)
		return -1;
	struct slot *slots = t->slots;
	uint64_t mask = t->mask;
	for (uint64_t i = 0; i < old_cap; i++) {
		if (!old[i].off)
			continue;
		uint64_t j = old[i].hash & mask;
		while (slots[j].off)
			j = (j + 1) & mask;
		slots[j] = old[i];
	}
	bigtable_free(old, old_cap * sizeof(struct slot));
	return 0;
}

int baseline_insert(struct baseline_table *t, const uint8_t *key, size_t len, uint32_t value)
{
	if (len > 255)
		return -1;
	uint64_t h = hash_key(key, len);
	uint64_t i = h & t->mask;
	for (;;) {
		struct slot *s = &t->slots[i];
		if (!s->off)
			break;
		if (s->hash == h) {
			const uint8_t *e = t->arena.base + s->off;
			if (e[0] == len && key_equal(e + 1, key, len)) {
				s->value = value;
				return 0;
			}
		}
		i = (i + 1) & t->mask;
	}

	/* Absent: append the key, then take the first free slot. */
	if (region_ensure(&t->arena, t->arena_used + 1 + len) < 0)
		return -1;
	if (t->count + 1 > t->grow_at) {
		if (grow(t) < 0)
			return -1;
		i = h & t->mask;
		while (t->slots[i].off)
			i = (i + 1) & t->mask;
	}
	uint32_t off = (uint32_t)t->arena_used;
	t->arena.base[off] = (uint8_t)len;
	memcpy(t->arena.base + off + 1, key, len);
	t->arena_used += 1 + len;

	struct slot *s = &t->slots[i];
	s->hash = h;
	s->value = value;
	s->off = off;
	t->count++;
	return 1;
}

bool baseline_lookup(const struct baseline_table *t, const uint8_t *key, size_t len, uint32_t *value)
{
	const uint64_t h = hash_key(key, len);
	const struct slot *slots = t->slots;
	const uint8_t *arena = t->arena.base;
	const uint64_t mask = t->mask;
	uint64_t i = h & mask;
	for (;;) {
		const struct slot *s = &slots[i];
		const uint32_t off = s->off;
		if (s->hash == h && likely(off != 0)) {
			const uint8_t *e = arena + off;
			if (likely(e[0] == len && key_equal(e + 1, key, len))) {
				*value = s->value;
				return true;
			}
		} else if (off == 0) {
			return false;
		}
		i = (i + 1) & mask;
	}
}

void baseline_get_stats(const struct baseline_table *t, struct baseline_stats *st)
{
	st->count = t->count;
	st->capacity = t->mask + 1;
	st->slot_bytes = (t->mask + 1) * sizeof(struct slot);
	st->arena_bytes = t->arena_used;
}
