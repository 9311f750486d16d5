#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <urcu-qsbr.h>

#define XXH_INLINE_ALL
#include <xxhash.h>     /* writer-side hashes of whole route sets and names */

#include "arena.h"
#include "fib.h"
#include "hashkey.h"
#include "wire.h"

/*
 * Every trie node is one 32-byte slot keyed by its whole suffix: the wire
 * form of the name from that node up to (not including) the root label,
 * inline when it fits in 23 bytes.  A lookup does not walk from the top
 * label down: it hashes the query's two-label suffix, whose slot holds
 * the key and the entry, and moves one level deeper only when that slot
 * has children (or shallower only when it does not exist).  For the
 * common name, that is one probe and one cache line.  Walking label by
 * label cost a probe per level, and the instructions of the cached top
 * level kept fewer lookups in flight (docs/BENCHMARKS.md).
 *
 * Slots are paired in 64-byte buckets, and a key has two buckets it may
 * be in (two-choice hashing: a rebuild places keys by cuckoo moves, so
 * nearly every key is in one of its two; bucket_other, rebuild_place).  A
 * lookup fetches both at once and tests all four slots before its one
 * branch that waits for them.  The few keys that found both full go on,
 * bucket by bucket, from the first, as in linear probing.
 */
#define KEY_INLINE      23
#define KEY_LONG_PREFIX 19      /* a long key: its first bytes, then its arena id */

struct fib_slot {
	uint32_t entry;         /* tagged reference, see ENTRY_*; atomic */
	uint32_t nchildren;     /* nodes one label longer; atomic */
	union {
		struct {
			uint8_t klen;   /* KEY_EMPTY, KEY_TOMB, or the key's length */
			uint8_t key[KEY_INLINE];
		};
		uint64_t words[3];      /* words[0] is stored last: it publishes the slot */
	};
};
_Static_assert(sizeof(struct fib_slot) == 32, "two slots per cache line");

struct fib_bucket {
	struct fib_slot s[2];
} __attribute__((aligned(64)));

#define KEY_EMPTY       0u
#define KEY_TOMB        0xFFu   /* deleted: probing goes on past it; no key is 255 bytes */
#define DEPTH_START     2       /* most routed names are second-level names */
#define KEY_UNIT        4u
#define KEY_CLASSES     ((NAME_MAX_WIRE + KEY_UNIT - 1) / KEY_UNIT + 1)
#define KEY_SLACK       32
#define KEYS_MAX_BYTES  ((size_t)4 << 30)

/*
 * Tables stay between these loads; a large one grows in small steps.  A
 * large table is kept full enough for 40 bytes a name (32 / 0.82 plus the
 * route sets and aggregates); with two buckets a key, 95-99% of keys are
 * still in one of the two a lookup fetches at these loads (the fewest
 * just before a rebuild).  The upper bound is as high as that allows:
 * each step up is a rebuild of the whole table, which was most of the
 * cost of loading one (docs/BENCHMARKS.md).
 */
#define LOAD_MAX        0.90
#define LOAD_TARGET_BIG 0.82
#define LOAD_TARGET     0.50
#define BIG_TABLE       (1u << 20)
#define MIN_BUCKETS     256u    /* at least OTHER_WINDOW */

#define SETS_MAX        (1u << 24)
#define AGGS_MAX        (1u << 22)
#define EXTS_MAX        (1u << 27)

/* entry: top two bits say what the low 30 bits index */
#define ENTRY_NONE      0u
#define ENTRY_SET       (1u << 30)      /* the name's own route set */
#define ENTRY_AGG       (2u << 30)      /* member of one aggregate, no own routes */
#define ENTRY_EXT       (3u << 30)      /* own routes and/or several aggregates */
#define ENTRY_TYPE(e)   ((e) & (3u << 30))
#define ENTRY_ID(e)     ((e) & ((1u << 30) - 1))

/* Immutable; replaced as a whole when a name's memberships change. */
struct fib_ext {
	uint32_t set;           /* 0: no own routes */
	uint32_t naggs;
	uint32_t aggs[FIB_MAX_AGGREGATES_PER_NAME];
};

/* Writer-side; readers find the route set members share in fib->agg_routes. */
struct fib_aggregate {
	uint32_t set;           /* route set shared by all members; 0: none */
	uint32_t members;
	uint32_t next_free;
	bool live;
	struct name name;
};

struct fib_table {
	struct rcu_head rcu;
	size_t bytes;
	uint64_t nbuckets;      /* any number: indexed by multiply-shift, not a mask */
	uint8_t pad[64 - sizeof(struct rcu_head) - 2 * sizeof(uint64_t)];
	struct fib_bucket buckets[];
};

/* Writer-side index from a 64-bit hash to an id; the caller checks equality. */
struct idmap_slot {
	uint64_t hash;
	uint32_t id;
};
struct idmap {
	struct idmap_slot *slots;
	size_t mask, used;
};

enum limbo_kind { LIMBO_KEY, LIMBO_EXT, LIMBO_SET, LIMBO_AGG };
#define LIMBO_BATCH 512
struct limbo {
	struct rcu_head rcu;
	struct fib *fib;
	unsigned count;
	struct {
		uint32_t kind;
		uint32_t id;
	} items[LIMBO_BATCH];
};

/*
 * What readers use comes first, in lines apart from what writers change,
 * so that a writer's stores (the mutex, counters, free lists) do not take
 * lines every lookup needs out of the readers' caches.
 */
struct fib {
	/* read by lookups; written only when the table is rebuilt or a region grows */
	uint64_t seed[3];
	struct fib_table *table;
	struct fib_slot root;   /* the root is in no table */
	struct region keys;             /* long keys */
	struct region exts;
	struct region sets;             /* struct routeset * by id; free ids chained */
	struct region agg_routes;       /* struct routeset * by aggregate id; NULL: none */

	/* writers only */
	pthread_mutex_t lock __attribute__((aligned(64)));   /* writers, and the reclamation callbacks */
	uint64_t slots_live, slots_tomb;

	size_t key_bytes;
	uint32_t key_free[KEY_CLASSES];

	uint32_t ext_count, ext_free;

	uint32_t set_count, set_free;
	uint64_t sets_live;
	struct idmap set_index;

	struct region aggs;
	uint32_t agg_count, agg_free;
	uint64_t aggs_live;
	struct idmap agg_index;

	uint64_t entries;
	struct limbo *limbo;
};

static const char *const fib_errors[] = {
	[0] = "ok",
	[-FIB_ERR_NOMEM] = "out of memory",
	[-FIB_ERR_NOT_FOUND] = "not found",
	[-FIB_ERR_TOO_MANY_ROUTES] = "too many routes in one set",
	[-FIB_ERR_TOO_MANY_AGGREGATES] = "name is in too many aggregates",
	[-FIB_ERR_BAD_AGGREGATE] = "no such aggregate",
	[-FIB_ERR_EXISTS] = "already exists",
};

const char *fib_strerror(int err)
{
	if (err > 0 || -err >= (int)(sizeof(fib_errors) / sizeof(fib_errors[0])))
		return "unknown FIB error";
	return fib_errors[-err];
}

/* ---- reader side ---------------------------------------------------- */

#define ALWAYS_INLINE inline __attribute__((always_inline))

static inline uint64_t load64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

/* 64x64->128 multiply folded to 64 bits: wyhash's mixing step. */
static inline uint64_t mum(uint64_t a, uint64_t b)
{
	__uint128_t r = (__uint128_t)a * b;
	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

/*
 * A key as the three words a slot holds after its two counters: the
 * length byte and key bytes 0-6, bytes 7-14, bytes 15-22, zero past the
 * key.  Built from 8-byte loads and masks, with no branch on the length;
 * struct name is padded so the loads may run past the name.
 */
struct key_words {
	uint64_t w[3];
};

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "key_words assumes a little-endian host"
#endif
/* the shift's n is clamped too: the arms not taken must still be valid shifts (clang) */
#define CLAMP_1_7(n) ((n) < 1 ? 1 : (n) > 7 ? 7 : (n))
#define KEEP(n) ((n) <= 0 ? 0ull : (n) >= 8 ? ~0ull : ~0ull >> (64 - 8 * CLAMP_1_7(n)))
#define M0(n)   (0xFFull | (KEEP((n) < 7 ? (n) : 7) << 8))
#define MASKS(n) { M0(n), KEEP((n) - 7), KEEP((n) - 15) }
static const uint64_t key_masks[KEY_INLINE + 1][3] = {
	MASKS(0), MASKS(1), MASKS(2), MASKS(3), MASKS(4), MASKS(5), MASKS(6), MASKS(7),
	MASKS(8), MASKS(9), MASKS(10), MASKS(11), MASKS(12), MASKS(13), MASKS(14), MASKS(15),
	MASKS(16), MASKS(17), MASKS(18), MASKS(19), MASKS(20), MASKS(21), MASKS(22), MASKS(23),
};

/* key readable for KEY_INLINE + 8 bytes; klen <= KEY_INLINE */
static ALWAYS_INLINE struct key_words short_key_words(const uint8_t *key, unsigned klen)
{
	struct key_words k = { {
		((uint64_t)klen | load64(key) << 8) & key_masks[klen][0],
		load64(key + 7) & key_masks[klen][1],
		load64(key + 15) & key_masks[klen][2],
	} };
	return k;
}

/* Seeded per table, since names come from the network. */
static ALWAYS_INLINE uint64_t short_key_hash(const struct fib *f, const struct key_words *k)
{
	return mum(mum(k->w[0] ^ f->seed[0], k->w[1] ^ f->seed[1]) ^ k->w[2], f->seed[2]);
}

/* klen > KEY_INLINE; key readable for klen bytes */
static uint64_t long_key_hash(const struct fib *f, const uint8_t *key, unsigned klen)
{
	uint64_t h = f->seed[0] ^ klen;
	unsigned i = 0;
	for (; i + 16 <= klen; i += 16)
		h = mum(load64(key + i) ^ f->seed[1], load64(key + i + 8) ^ h);
	return mum(load64(key + klen - 16) ^ h, load64(key + klen - 8) ^ f->seed[2]);
}

static inline uint64_t bucket_index(const struct fib_table *t, uint64_t h)
{
	return (uint64_t)(((__uint128_t)h * t->nbuckets) >> 64);
}

/*
 * A key's second bucket: one of the OTHER_WINDOW after its first, chosen
 * by the hash's low bits (the first comes from its high bits).  Being
 * near, it is cheap for a writer, which mostly fills the table in bucket
 * order (a rebuild), and no worse for a reader, which fetches both at once.
 */
#define OTHER_WINDOW    256u
static inline uint64_t bucket_second(const struct fib_table *t, uint64_t first, unsigned d)
{
	uint64_t b = first + 1 + d;
	return b < t->nbuckets ? b : b - t->nbuckets;
}

static inline uint64_t bucket_other(const struct fib_table *t, uint64_t h)
{
	return bucket_second(t, bucket_index(t, h), (unsigned)(h & (OTHER_WINDOW - 1)));
}

static inline bool bucket_full(const struct fib_bucket *bk)
{
	return __atomic_load_n(&bk->s[1].klen, __ATOMIC_RELAXED) != KEY_EMPTY;
}

static ALWAYS_INLINE uint64_t slot_diff(const struct fib_slot *s, const struct key_words *k)
{
	/* words[0] carries the length: acquire, so the other words are the ones it published */
	return (__atomic_load_n(&s->words[0], __ATOMIC_ACQUIRE) ^ k->w[0]) |
	       (s->words[1] ^ k->w[1]) | (s->words[2] ^ k->w[2]);
}

/*
 * The probe for a key of up to KEY_INLINE bytes.  Both slots of both of
 * the key's buckets are tested before the one branch that waits for the
 * cache misses, which says "found" nearly always.  If neither has it and
 * either is not full, the key is absent; else the probe goes on from the
 * first bucket, and a bucket whose second slot is empty ends it (slots
 * fill in order and never become empty again; see table_free_slot).
 */
static ALWAYS_INLINE const struct fib_slot *find_short(const struct fib *f, const struct fib_table *t,
						       const struct key_words *k)
{
	uint64_t h = short_key_hash(f, k), b = bucket_index(t, h);
	const struct fib_bucket *bk = &t->buckets[b], *bk2 = &t->buckets[bucket_other(t, h)];
	uint64_t d0 = slot_diff(&bk->s[0], k), d1 = slot_diff(&bk->s[1], k);
	uint64_t d2 = slot_diff(&bk2->s[0], k), d3 = slot_diff(&bk2->s[1], k);

	if (__builtin_expect(!d0 | !d1 | !d2 | !d3, 1))
		return !d0 ? &bk->s[0] : !d1 ? &bk->s[1] : !d2 ? &bk2->s[0] : &bk2->s[1];
	if (!bucket_full(bk) || !bucket_full(bk2))
		return NULL;
	for (;;) {
		if (++b == t->nbuckets)
			b = 0;
		bk = &t->buckets[b];
		d0 = slot_diff(&bk->s[0], k);
		d1 = slot_diff(&bk->s[1], k);
		if (!d0 | !d1)
			return d0 == 0 ? &bk->s[0] : &bk->s[1];
		if (!bucket_full(bk))
			return NULL;
	}
}

static inline const uint8_t *long_key(const struct fib *f, const struct fib_slot *s)
{
	uint32_t id;
	memcpy(&id, s->key + KEY_LONG_PREFIX, sizeof(id));
	return f->keys.base + (size_t)id * KEY_UNIT + 1;
}

/* The slot's whole key, wherever it is kept. */
static inline const uint8_t *slot_key(const struct fib *f, const struct fib_slot *s)
{
	return s->klen <= KEY_INLINE ? s->key : long_key(f, s);
}

static const struct fib_slot *bucket_find_long(const struct fib *f, const struct fib_bucket *bk,
					       const uint8_t *key, unsigned klen)
{
	for (int j = 0; j < 2; j++) {
		const struct fib_slot *s = &bk->s[j];
		uint8_t l = __atomic_load_n(&s->klen, __ATOMIC_ACQUIRE);
		if (l == klen && memcmp(s->key, key, KEY_LONG_PREFIX) == 0 && memcmp(long_key(f, s), key, klen) == 0)
			return s;
	}
	return NULL;
}

/* As find_short, for a key kept in the arena. */
static __attribute__((noinline)) const struct fib_slot *find_long(const struct fib *f, const struct fib_table *t,
								  const uint8_t *key, unsigned klen)
{
	uint64_t h = long_key_hash(f, key, klen), b = bucket_index(t, h);
	const struct fib_bucket *bk = &t->buckets[b], *bk2 = &t->buckets[bucket_other(t, h)];
	const struct fib_slot *s;

	if ((s = bucket_find_long(f, bk, key, klen)) || (s = bucket_find_long(f, bk2, key, klen)))
		return s;
	if (!bucket_full(bk) || !bucket_full(bk2))
		return NULL;
	for (;;) {
		if (++b == t->nbuckets)
			b = 0;
		bk = &t->buckets[b];
		if ((s = bucket_find_long(f, bk, key, klen)))
			return s;
		if (!bucket_full(bk))
			return NULL;
	}
}

/* key points into a struct name (padded) or a slot; klen >= 1 */
static ALWAYS_INLINE const struct fib_slot *table_find(const struct fib *f, const struct fib_table *t,
						       const uint8_t *key, unsigned klen)
{
	if (__builtin_expect(klen > KEY_INLINE, 0))
		return find_long(f, t, key, klen);
	struct key_words k = short_key_words(key, klen);
	return find_short(f, t, &k);
}

static inline const struct routeset *set_at(const struct fib *f, uint32_t id)
{
	struct routeset *const *slot = (struct routeset *const *)f->sets.base + id;
	return __atomic_load_n(slot, __ATOMIC_ACQUIRE);
}

static inline const struct fib_aggregate *agg_at(const struct fib *f, uint32_t id)
{
	return (const struct fib_aggregate *)f->aggs.base + id;
}

/*
 * The aggregate's route set: one store re-routes every member (paper,
 * Figure 5).  A dense array of the sets themselves, so a member's lookup
 * goes from its slot to its routes through one load that stays in cache.
 */
static inline const struct routeset *agg_routes(const struct fib *f, uint32_t id)
{
	return __atomic_load_n((struct routeset *const *)f->agg_routes.base + id, __ATOMIC_ACQUIRE);
}

static inline const struct fib_ext *ext_at(const struct fib *f, uint32_t id)
{
	return (const struct fib_ext *)f->exts.base + id;
}

static inline bool resolve_entry(const struct fib *f, uint32_t e, struct fib_result *res)
{
	unsigned n = 0;

	switch (ENTRY_TYPE(e)) {
	case ENTRY_SET:
		res->sets[n++] = set_at(f, ENTRY_ID(e));
		break;
	case ENTRY_AGG: {
		const struct routeset *rs = agg_routes(f, ENTRY_ID(e));
		if (rs)
			res->sets[n++] = rs;
		break;
	}
	case ENTRY_EXT: {
		const struct fib_ext *x = ext_at(f, ENTRY_ID(e));
		if (x->set)
			res->sets[n++] = set_at(f, x->set);
		for (uint32_t k = 0; k < x->naggs; k++) {
			const struct routeset *rs = agg_routes(f, x->aggs[k]);
			if (rs)
				res->sets[n++] = rs;
		}
		break;
	}
	default:
		break;
	}
	res->nsets = (uint8_t)n;
	return n > 0;
}

static ALWAYS_INLINE int label_offsets(const struct name *q, uint8_t off[NAME_MAX_LABELS])
{
	int n = 0;
	unsigned p = 0, len;
	while ((len = q->wire[p]) != 0) {
		off[n++] = (uint8_t)p;
		p += 1u + len;
	}
	return n;
}

/* The key of the suffix of q that starts at byte off: up to the root label. */
static ALWAYS_INLINE const struct fib_slot *find_suffix(const struct fib *f, const struct fib_table *t,
							const struct name *q, unsigned off)
{
	return table_find(f, t, q->wire + off, q->len - 1u - off);
}

/*
 * The deepest suffix of q with an entry that resolves.  off[] holds the
 * label offsets, nlabels of them; depth d means the last d labels.
 * Starts at DEPTH_START and moves deeper while the slot has children; if
 * that suffix does not exist, tries shallower ones.  Every ancestor of an
 * existing node exists, so an entry above the start is found by walking up.
 */
static bool lookup_suffix(const struct fib *f, const struct name *q, const uint8_t *off, int nlabels,
			  struct fib_result *res)
{
	const struct fib_table *t = __atomic_load_n(&f->table, __ATOMIC_ACQUIRE);
	/* entries found, deepest last; the walk up fills it on the rare paths */
	uint32_t cand_entry[NAME_MAX_LABELS + 1];
	int cand_depth[NAME_MAX_LABELS + 1];
	int ncand = 0;
	int start = nlabels < DEPTH_START ? nlabels : DEPTH_START;
	int d = start;
	const struct fib_slot *s = NULL;

	/* down from the start, or up until a suffix exists */
	while (d > 0 && !(s = find_suffix(f, t, q, off[nlabels - d])))
		d--;
	int found_depth = d;
	/* everything above the first existing node, root first */
	uint32_t e = __atomic_load_n(&f->root.entry, __ATOMIC_ACQUIRE);
	if (e) {
		cand_entry[ncand] = e;
		cand_depth[ncand++] = 0;
	}
	for (int a = 1; a < found_depth; a++) {
		const struct fib_slot *up = find_suffix(f, t, q, off[nlabels - a]);
		if (up && (e = __atomic_load_n(&up->entry, __ATOMIC_ACQUIRE))) {
			cand_entry[ncand] = e;
			cand_depth[ncand++] = a;
		}
	}
	if (s) {
		for (;;) {
			e = __atomic_load_n(&s->entry, __ATOMIC_ACQUIRE);
			if (e) {
				cand_entry[ncand] = e;
				cand_depth[ncand++] = d;
			}
			if (d == nlabels || __atomic_load_n(&s->nchildren, __ATOMIC_RELAXED) == 0)
				break;
			const struct fib_slot *c = find_suffix(f, t, q, off[nlabels - d - 1]);
			if (!c)
				break;
			s = c;
			d++;
		}
	}
	/* an aggregate with no routes right now does not hide a shorter suffix */
	while (ncand > 0) {
		ncand--;
		if (resolve_entry(f, cand_entry[ncand], res)) {
			int cd = cand_depth[ncand];
			res->suffix_offset = cd == 0 ? (uint8_t)(q->len - 1) : off[nlabels - cd];
			res->suffix_labels = (uint8_t)cd;
			return true;
		}
	}
	res->nsets = 0;
	return false;
}

static __attribute__((noinline)) bool lookup_slow(const struct fib *f, const struct name *q,
						  struct fib_result *res)
{
	uint8_t off[NAME_MAX_LABELS];
	int nlabels = label_offsets(q, off);
	return lookup_suffix(f, q, off, nlabels, res);
}

/*
 * The fast path found the two-label suffix's slot.  It answers only for a
 * leaf with one route set: the name's own, or the one aggregate's it is a
 * member of while that has routes (a query of exactly two labels whose
 * name has children is answered by the slow path, which also gets it right).
 */
static ALWAYS_INLINE bool fast_result(const struct fib *f, const struct fib_slot *s, struct fib_result *res)
{
	uint32_t e = __atomic_load_n(&s->entry, __ATOMIC_ACQUIRE);
	const struct routeset *rs;
	if (__atomic_load_n(&s->nchildren, __ATOMIC_RELAXED) != 0)
		return false;
	if (ENTRY_TYPE(e) == ENTRY_SET)
		rs = set_at(f, ENTRY_ID(e));
	else if (ENTRY_TYPE(e) != ENTRY_AGG || !(rs = agg_routes(f, ENTRY_ID(e))))
		return false;
	res->sets[0] = rs;
	res->nsets = 1;
	return true;
}

/* The fast path did not answer (a key past its two buckets, a tie, not a leaf): the full probe. */
static __attribute__((noinline)) bool lookup_probe_on(const struct fib *f, const struct name *q,
						      struct fib_result *res)
{
	const struct fib_table *t = __atomic_load_n(&f->table, __ATOMIC_ACQUIRE);
	const struct fib_slot *s = find_suffix(f, t, q, res->suffix_offset);
	if (s && fast_result(f, s, res))
		return true;
	return lookup_slow(f, q, res);
}

/* Where q's next-to-last label starts (NO_LABEL with fewer than two labels). */
enum { NO_LABEL = 0x100 };
static ALWAYS_INLINE unsigned second_label(const struct name *q)
{
	unsigned p = 0, last = NO_LABEL, second = NO_LABEL, len;
	while ((len = q->wire[p]) != 0) {
		second = last;
		last = p;
		p += 1u + len;
	}
	return second;
}

unsigned fib_buckets_wire(const struct fib *f, const uint8_t *wire, size_t room, struct fib_hint *hint)
{
	/* the client's bytes: only kept inside room; a name the lookup will
	 * refuse costs a useless fetch, no more */
	size_t p = 0, last = NO_LABEL, second = NO_LABEL;
	hint->table = NULL;
	while (p < room && wire[p] != 0) {
		if (wire[p] > NAME_MAX_LABEL)
			return 0;
		second = last;
		last = p;
		p += 1u + wire[p];
	}
	if (p >= room || second == NO_LABEL || p - second > KEY_INLINE || p >= NAME_MAX_WIRE)
		return 0;
	unsigned klen = (unsigned)(p - second);
	uint64_t buf[4] = { 0, 0, 0, 0 };       /* the key, lowercased, readable as short_key_words reads */
	size_t have = room - second;
	wire_copy_short((uint8_t *)buf, wire + second, have < sizeof(buf) ? have : sizeof(buf));
	for (unsigned i = 0; i < 4; i++)
		buf[i] = name_lower_word(buf[i]);
	const struct fib_table *t = __atomic_load_n(&f->table, __ATOMIC_ACQUIRE);
	struct key_words k = short_key_words((const uint8_t *)buf, klen);
	uint64_t h = short_key_hash(f, &k);
	hint->table = t;
	hint->bucket[0] = &t->buckets[bucket_index(t, h)];
	hint->bucket[1] = &t->buckets[bucket_other(t, h)];
	hint->second = (uint8_t)second;
	return 2;
}

/*
 * The common case, www.<name>.<tld> with <name>.<tld> a routed leaf in
 * one of its two buckets: the key of the last two labels (from second)
 * looked for in its buckets bk and bk2.  97-99% of keys are in one of
 * them, fetched at once.  The slot is picked by its first word without a
 * branch, then checked whole (a rare tie, or a key past both buckets,
 * goes the long way).  It holds few values (the suffix's place goes into
 * res at once; every other path overwrites it): fewer instructions per
 * lookup let more lookups wait on their cache misses at once.
 */
static ALWAYS_INLINE bool lookup_two_labels(const struct fib *f, const struct name *q, unsigned second,
					    const struct fib_bucket *bk, const struct fib_bucket *bk2,
					    const struct key_words *k, struct fib_result *res)
{
	res->suffix_offset = (uint8_t)second;
	res->suffix_labels = DEPTH_START;
	const struct fib_slot *s = &bk->s[0];
	if (__atomic_load_n(&bk->s[1].words[0], __ATOMIC_ACQUIRE) == k->w[0])
		s = &bk->s[1];
	if (__atomic_load_n(&bk2->s[0].words[0], __ATOMIC_ACQUIRE) == k->w[0])
		s = &bk2->s[0];
	if (__atomic_load_n(&bk2->s[1].words[0], __ATOMIC_ACQUIRE) == k->w[0])
		s = &bk2->s[1];
	if (__builtin_expect(slot_diff(s, k) == 0, 1) && fast_result(f, s, res))
		return true;
	return lookup_probe_on(f, q, res);
}

bool fib_lookup_longest_suffix(const struct fib *f, const struct name *q, struct fib_result *res)
{
	/*
	 * Needs only where the next-to-last label starts (no offset array, no
	 * label count: second stays NO_LABEL with fewer than two labels, and
	 * is 0 with exactly two) and the two buckets; a leaf that tail-calls
	 * everything else.
	 */
	unsigned second = second_label(q);
	unsigned klen = q->len - 1u - second;
	if (__builtin_expect(second == NO_LABEL || klen > KEY_INLINE, 0))
		return lookup_slow(f, q, res);
	const struct fib_table *t = __atomic_load_n(&f->table, __ATOMIC_ACQUIRE);
	struct key_words k = short_key_words(q->wire + second, klen);
	uint64_t h = short_key_hash(f, &k);
	return lookup_two_labels(f, q, second, &t->buckets[bucket_index(t, h)], &t->buckets[bucket_other(t, h)],
				 &k, res);
}

bool fib_lookup_hinted(const struct fib *f, const struct name *q, const struct fib_hint *hint,
		       struct fib_result *res)
{
	const struct fib_table *t = __atomic_load_n(&f->table, __ATOMIC_ACQUIRE);
	unsigned second = hint->second, klen = q->len - 1u - second;
	/* another table's buckets (rebuilt since) are not this one's; klen
	 * wraps past KEY_INLINE for a hint that could not be this name's */
	if (__builtin_expect(hint->table != t || klen > KEY_INLINE, 0))
		return fib_lookup_longest_suffix(f, q, res);
	struct key_words k = short_key_words(q->wire + second, klen);
	return lookup_two_labels(f, q, second, hint->bucket[0], hint->bucket[1], &k, res);
}

bool fib_lookup_exact(const struct fib *f, const struct name *q, struct fib_result *res)
{
	const struct fib_table *t = __atomic_load_n(&f->table, __ATOMIC_ACQUIRE);
	const struct fib_slot *s = q->len <= 1 ? &f->root : table_find(f, t, q->wire, q->len - 1u);

	res->nsets = 0;
	if (!s)
		return false;
	uint32_t e = __atomic_load_n(&s->entry, __ATOMIC_ACQUIRE);
	if (!e || !resolve_entry(f, e, res))
		return false;
	res->suffix_offset = 0;
	res->suffix_labels = (uint8_t)name_label_count(q);
	return true;
}

unsigned fib_memberships(const struct fib *f, const struct name *q, bool *own, struct name *aggs, unsigned max)
{
	const struct fib_table *t = __atomic_load_n(&f->table, __ATOMIC_ACQUIRE);
	const struct fib_slot *s = q->len <= 1 ? &f->root : table_find(f, t, q->wire, q->len - 1u);
	*own = false;
	uint32_t e = s ? __atomic_load_n(&s->entry, __ATOMIC_ACQUIRE) : 0;
	unsigned n = 0;
	switch (e ? ENTRY_TYPE(e) : 0) {
	case ENTRY_SET:
		*own = true;
		break;
	case ENTRY_AGG:
		if (max)
			aggs[n++] = agg_at(f, ENTRY_ID(e))->name;
		break;
	case ENTRY_EXT: {
		const struct fib_ext *x = ext_at(f, ENTRY_ID(e));
		*own = x->set != 0;
		for (uint32_t k = 0; k < x->naggs && n < max; k++)
			aggs[n++] = agg_at(f, x->aggs[k])->name;
		break;
	}
	default:
		break;
	}
	return n;
}

/* ---- writer-side index ---------------------------------------------- */

static int idmap_init(struct idmap *m, size_t cap)
{
	m->slots = calloc(cap, sizeof(*m->slots));
	if (!m->slots)
		return -1;
	m->mask = cap - 1;
	m->used = 0;
	return 0;
}

typedef bool (*idmap_eq_fn)(const struct fib *f, uint32_t id, const void *key);

static uint32_t idmap_find(const struct fib *f, const struct idmap *m, uint64_t hash,
			   idmap_eq_fn eq, const void *key)
{
	for (size_t i = hash & m->mask;; i = (i + 1) & m->mask) {
		if (m->slots[i].id == 0)
			return 0;
		if (m->slots[i].hash == hash && eq(f, m->slots[i].id, key))
			return m->slots[i].id;
	}
}

static void idmap_place(struct idmap *m, uint64_t hash, uint32_t id)
{
	size_t i = hash & m->mask;
	while (m->slots[i].id != 0)
		i = (i + 1) & m->mask;
	m->slots[i].hash = hash;
	m->slots[i].id = id;
}

static int idmap_insert(struct idmap *m, uint64_t hash, uint32_t id)
{
	if ((m->used + 1) * 2 > m->mask + 1) {
		struct idmap bigger;
		if (idmap_init(&bigger, (m->mask + 1) * 2) < 0)
			return -1;
		for (size_t i = 0; i <= m->mask; i++)
			if (m->slots[i].id)
				idmap_place(&bigger, m->slots[i].hash, m->slots[i].id);
		bigger.used = m->used;
		free(m->slots);
		*m = bigger;
	}
	idmap_place(m, hash, id);
	m->used++;
	return 0;
}

/* Backward-shift deletion: writer-only, so no tombstones are needed. */
static void idmap_remove(struct idmap *m, uint64_t hash, uint32_t id)
{
	size_t i = hash & m->mask;
	while (m->slots[i].id != id) {
		if (m->slots[i].id == 0)
			return;
		i = (i + 1) & m->mask;
	}
	size_t hole = i;
	for (size_t j = (i + 1) & m->mask; m->slots[j].id != 0; j = (j + 1) & m->mask) {
		size_t home = m->slots[j].hash & m->mask;
		/* move j into the hole unless its home lies cyclically in (hole, j] */
		bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
		if (!stays) {
			m->slots[hole] = m->slots[j];
			hole = j;
		}
	}
	m->slots[hole].id = 0;
	m->slots[hole].hash = 0;
	m->used--;
}

/* ---- deferred reclamation ------------------------------------------- */

static void key_release(struct fib *f, uint32_t id);
static void ext_release(struct fib *f, uint32_t id);
static void set_release(struct fib *f, uint32_t id);
static void agg_release(struct fib *f, uint32_t id);

static void limbo_reclaim(struct rcu_head *head)
{
	struct limbo *l = caa_container_of(head, struct limbo, rcu);
	struct fib *f = l->fib;

	pthread_mutex_lock(&f->lock);
	for (unsigned i = 0; i < l->count; i++) {
		uint32_t id = l->items[i].id;
		switch (l->items[i].kind) {
		case LIMBO_KEY: key_release(f, id); break;
		case LIMBO_EXT: ext_release(f, id); break;
		case LIMBO_SET: set_release(f, id); break;
		case LIMBO_AGG: agg_release(f, id); break;
		}
	}
	pthread_mutex_unlock(&f->lock);
	free(l);
}

/* QSBR wants call_rcu() from an online thread. */
static void call_rcu_online(struct rcu_head *head, void (*fn)(struct rcu_head *))
{
	bool online = rcu_read_ongoing();
	if (!online)
		rcu_thread_online();
	call_rcu(head, fn);
	if (!online)
		rcu_thread_offline();
}

/* Called with the lock held. */
static void limbo_flush(struct fib *f)
{
	if (!f->limbo || f->limbo->count == 0)
		return;
	call_rcu_online(&f->limbo->rcu, limbo_reclaim);
	f->limbo = NULL;
}

static void limbo_add(struct fib *f, enum limbo_kind kind, uint32_t id)
{
	if (!f->limbo) {
		f->limbo = malloc(sizeof(*f->limbo));
		if (!f->limbo)
			return;         /* the id is never reused; no reader is harmed */
		f->limbo->fib = f;
		f->limbo->count = 0;
	}
	f->limbo->items[f->limbo->count].kind = kind;
	f->limbo->items[f->limbo->count].id = id;
	if (++f->limbo->count == LIMBO_BATCH)
		limbo_flush(f);
}

/* ---- long keys ------------------------------------------------------ */

static inline unsigned key_units(unsigned klen)
{
	return (klen + KEY_UNIT - 1) / KEY_UNIT;
}

/* Arena records: a length byte, then the key. */
static uint32_t key_alloc(struct fib *f, const uint8_t *key, unsigned klen)
{
	unsigned units = key_units(1 + klen);
	uint32_t id = f->key_free[units];
	if (id) {
		memcpy(&f->key_free[units], f->keys.base + (size_t)id * KEY_UNIT, sizeof(uint32_t));
	} else {
		if (f->key_bytes == 0)
			f->key_bytes = KEY_UNIT;        /* id 0 means none */
		size_t need = f->key_bytes + (size_t)units * KEY_UNIT;
		if (need / KEY_UNIT > UINT32_MAX || region_ensure(&f->keys, need + KEY_SLACK) < 0)
			return 0;
		id = (uint32_t)(f->key_bytes / KEY_UNIT);
		f->key_bytes = need;
	}
	uint8_t *p = f->keys.base + (size_t)id * KEY_UNIT;
	p[0] = (uint8_t)klen;
	memcpy(p + 1, key, klen);
	return id;
}

static void key_release(struct fib *f, uint32_t id)
{
	uint8_t *p = f->keys.base + (size_t)id * KEY_UNIT;
	unsigned units = key_units(1u + p[0]);
	memcpy(p, &f->key_free[units], sizeof(uint32_t));
	f->key_free[units] = id;
}

/* ---- the table ------------------------------------------------------ */

static struct fib_table *table_alloc(uint64_t nbuckets)
{
	size_t bytes = sizeof(struct fib_table) + nbuckets * sizeof(struct fib_bucket);
	struct fib_table *t = bigtable_alloc(bytes, BIGTABLE_HUGE_PAGES);
	if (!t)
		return NULL;
	t->bytes = bytes;
	t->nbuckets = nbuckets;
	return t;
}

static void table_free_rcu(struct rcu_head *head)
{
	struct fib_table *t = caa_container_of(head, struct fib_table, rcu);
	bigtable_free(t, t->bytes);
}

static uint64_t key_hash(const struct fib *f, const uint8_t *key, unsigned klen)
{
	if (klen > KEY_INLINE)
		return long_key_hash(f, key, klen);
	struct key_words k = short_key_words(key, klen);
	return short_key_hash(f, &k);
}

static unsigned bucket_free(const struct fib_bucket *bk)
{
	return (bk->s[0].klen == KEY_EMPTY) + (bk->s[1].klen == KEY_EMPTY);
}

/* A bucket's slots fill in order and never turn empty again: it has room while its second is empty. */
static inline bool bucket_room(const struct fib_bucket *bk)
{
	return bk->s[1].klen == KEY_EMPTY;
}

/* The first empty slot from bucket b on (both of a key's buckets were full). */
static struct fib_slot *probe_free_slot(struct fib_table *t, uint64_t b)
{
	struct fib_bucket *bk = &t->buckets[b];
	while (!bucket_room(bk)) {
		if (++b == t->nbuckets)
			b = 0;
		bk = &t->buckets[b];
	}
	return bk->s[0].klen == KEY_EMPTY ? &bk->s[0] : &bk->s[1];
}

/*
 * Where a new key goes in the live table: the emptier of its two buckets
 * (the first on a tie), or when both are full, the first empty slot on from
 * the first bucket.  Keys never move in a table readers see.  Tombstones
 * are never reused within a table: a reader may still be comparing the key
 * a tombstone held, and slots that never turn empty again keep true what
 * find_short concludes from a bucket not being full.
 */
static struct fib_slot *table_free_slot(struct fib_table *t, uint64_t h)
{
	uint64_t b = bucket_index(t, h);
	struct fib_bucket *bk = &t->buckets[b], *bk2 = &t->buckets[bucket_other(t, h)];
	unsigned free1 = bucket_free(bk), free2 = bucket_free(bk2);

	if (free1 | free2) {
		if (free1 < free2)
			bk = bk2;
		return bk->s[0].klen == KEY_EMPTY ? &bk->s[0] : &bk->s[1];
	}
	return probe_free_slot(t, b);
}

/*
 * Where a key goes in a table being rebuilt, which no reader sees yet, so
 * keys may still move: when both of its buckets are full, one of the four
 * keys there moves to its own other bucket if that has room, else one of
 * them is pushed out at random and takes the same road (cuckoo hashing).
 * Below a load of about 0.9 that puts nearly every key in one of its two
 * buckets; a walk that does not end soon leaves its last key to
 * probe_free_slot, and a key placed that way is never moved again (its
 * buckets are full, as lookups assume when they probe on).
 *
 * Each slot of the new table notes meanwhile where its key's other bucket
 * is (struct rebuild's alt: the distance d of bucket_second, and which of
 * the two the key is in), so looking at a key in the way, or moving it,
 * needs no hash: the hashes of the keys in the way were most of the cost
 * of a rebuild.
 */
#define REBUILD_WALK 32
#define ALT_SECOND   0x100u     /* the key is in its second bucket */
#define ALT_NONE     0xffffu    /* in neither of its own: it stays */

struct rebuild {
	struct fib_table *t;
	uint16_t *alt;          /* per slot of t */
};

/* Into bucket b, which has room; alt says where the key's other bucket is. */
static void rebuild_put(struct rebuild *r, uint64_t b, const struct fib_slot *src, unsigned alt)
{
	struct fib_bucket *bk = &r->t->buckets[b];
	unsigned j = bk->s[0].klen != KEY_EMPTY;
	bk->s[j] = *src;
	r->alt[2 * b + j] = (uint16_t)alt;
}

/* The other bucket of the key whose alt is a, in bucket b. */
static inline uint64_t alt_bucket(const struct fib_table *t, uint64_t b, unsigned a)
{
	unsigned d = a & (OTHER_WINDOW - 1);
	if (!(a & ALT_SECOND))
		return bucket_second(t, b, d);
	return b >= 1 + d ? b - 1 - d : b + t->nbuckets - 1 - d;
}

/* Places a key whose buckets are first and bucket_second(first, d); seed drives the walk's choices. */
static void rebuild_place(struct rebuild *r, const struct fib_slot *src, uint64_t first, unsigned d, uint64_t seed)
{
	struct fib_table *t = r->t;
	struct fib_slot cur = *src;
	uint64_t b[2] = { first, bucket_second(t, first, d) };

	for (int step = 0;; step++) {
		unsigned free0 = bucket_free(&t->buckets[b[0]]), free1 = bucket_free(&t->buckets[b[1]]);
		if (free0 | free1) {
			unsigned side = free0 < free1;
			rebuild_put(r, b[side], &cur, d | (side ? ALT_SECOND : 0));
			return;
		}
		if (step == REBUILD_WALK)
			break;
		uint64_t ob[4];
		for (int i = 0; i < 4; i++) {
			uint64_t vb = b[i >> 1];
			unsigned a = r->alt[2 * vb + (i & 1)];
			if (a == ALT_NONE) {
				ob[i] = UINT64_MAX;
				continue;
			}
			ob[i] = alt_bucket(t, vb, a);
			if (bucket_room(&t->buckets[ob[i]])) {
				struct fib_slot *vs = &t->buckets[vb].s[i & 1];
				rebuild_put(r, ob[i], vs, a ^ ALT_SECOND);
				*vs = cur;
				r->alt[2 * vb + (i & 1)] = (uint16_t)(d | (i >> 1 ? ALT_SECOND : 0));
				return;
			}
		}
		/* none has room: push one out at random */
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		int i = (int)(seed >> 62);
		if (ob[i] == UINT64_MAX && ob[i ^= 1] == UINT64_MAX && ob[i ^= 3] == UINT64_MAX &&
		    ob[i ^= 1] == UINT64_MAX)
			break;
		uint64_t vb = b[i >> 1];
		struct fib_slot *vs = &t->buckets[vb].s[i & 1];
		unsigned a = r->alt[2 * vb + (i & 1)];
		struct fib_slot victim = *vs;
		*vs = cur;
		r->alt[2 * vb + (i & 1)] = (uint16_t)(d | (i >> 1 ? ALT_SECOND : 0));
		cur = victim;
		d = a & (OTHER_WINDOW - 1);
		b[0] = a & ALT_SECOND ? ob[i] : vb;
		b[1] = a & ALT_SECOND ? vb : ob[i];
	}
	struct fib_slot *s = probe_free_slot(t, b[0]);
	*s = cur;
	r->alt[s - &t->buckets[0].s[0]] = ALT_NONE;
}

/* Copies a slot in, publishing it last. */
static void slot_publish(struct fib_slot *dst, const struct fib_slot *src)
{
	dst->entry = src->entry;
	dst->nchildren = src->nchildren;
	dst->words[1] = src->words[1];
	dst->words[2] = src->words[2];
	__atomic_store_n(&dst->words[0], src->words[0], __ATOMIC_RELEASE);
}

/*
 * Rebuilds the table with room for `extra` more slots, dropping tombstones.
 * Readers keep using the old table until the new one is published; the
 * writer lock keeps the two from diverging meanwhile.
 */
static int table_rebuild(struct fib *f, uint64_t extra)
{
	struct fib_table *old = f->table;
	uint64_t want = f->slots_live + extra;
	/* by the size it would have: a million names land at 0.82, not 0.5 */
	double target = (double)want / LOAD_TARGET >= BIG_TABLE ? LOAD_TARGET_BIG : LOAD_TARGET;
	uint64_t nbuckets = (uint64_t)((double)want / target / 2) + 1;
	if (nbuckets < MIN_BUCKETS)
		nbuckets = MIN_BUCKETS;
	struct fib_table *t = table_alloc(nbuckets);
	if (!t)
		return -1;
	if (old) {
		struct rebuild r = { t, malloc(nbuckets * 2 * sizeof(uint16_t)) };
		if (!r.alt) {
			bigtable_free(t, t->bytes);
			return -1;
		}
		/* a group of slots at a time: hashed and their new buckets fetched, then placed */
		enum { GROUP = 16 };
		const struct fib_slot *g[GROUP];
		uint64_t h[GROUP], first[GROUP];
		const struct fib_slot *s = &old->buckets[0].s[0], *end = s + 2 * old->nbuckets;
		while (s < end) {
			unsigned n = 0;
			for (; n < GROUP && s < end; s++) {
				if (s->klen == KEY_EMPTY || s->klen == KEY_TOMB)
					continue;
				g[n] = s;
				h[n] = key_hash(f, slot_key(f, s), s->klen);
				first[n] = bucket_index(t, h[n]);
				__builtin_prefetch(&t->buckets[first[n]], 1);
				n++;
			}
			/*
			 * A key goes to its first bucket if that has room: the
			 * old table's order is nearly the new one's, so those
			 * fetches stream.  The others' second buckets are
			 * fetched for all of them, then they are placed.
			 */
			unsigned nrest = 0;
			for (unsigned k = 0; k < n; k++) {
				unsigned d = (unsigned)(h[k] & (OTHER_WINDOW - 1));
				if (bucket_room(&t->buckets[first[k]])) {
					rebuild_put(&r, first[k], g[k], d);
					continue;
				}
				__builtin_prefetch(&t->buckets[bucket_second(t, first[k], d)], 1);
				g[nrest] = g[k];
				h[nrest] = h[k];
				first[nrest++] = first[k];
			}
			for (unsigned k = 0; k < nrest; k++)
				rebuild_place(&r, g[k], first[k], (unsigned)(h[k] & (OTHER_WINDOW - 1)), h[k]);
		}
		free(r.alt);
	}
	__atomic_store_n(&f->table, t, __ATOMIC_RELEASE);
	f->slots_tomb = 0;
	if (old)
		call_rcu_online(&old->rcu, table_free_rcu);
	return 0;
}

static int table_make_room(struct fib *f, uint64_t extra)
{
	uint64_t used = f->slots_live + f->slots_tomb + extra;
	if ((double)used <= (double)f->table->nbuckets * 2 * LOAD_MAX)
		return 0;
	return table_rebuild(f, extra);
}

/* The slots from the root down to a name, root first. */
struct path {
	int depth;              /* labels matched: slot[depth] is the deepest */
	struct fib_slot *slot[NAME_MAX_LABELS + 1];
};

static struct fib_slot *node_add(struct fib *f, struct fib_slot *parent, const uint8_t *key, unsigned klen)
{
	struct fib_slot fresh;
	memset(&fresh, 0, sizeof(fresh));
	fresh.klen = (uint8_t)klen;
	if (klen <= KEY_INLINE) {
		memcpy(fresh.key, key, klen);
	} else {
		uint32_t kid = key_alloc(f, key, klen);
		if (!kid)
			return NULL;
		memcpy(fresh.key, key, KEY_LONG_PREFIX);
		memcpy(fresh.key + KEY_LONG_PREFIX, &kid, sizeof(kid));
	}
	struct fib_slot *s = table_free_slot(f->table, key_hash(f, key, klen));
	slot_publish(s, &fresh);
	__atomic_store_n(&parent->nchildren, parent->nchildren + 1, __ATOMIC_RELAXED);
	f->slots_live++;
	return s;
}

/*
 * Walks from the root down to nm, creating missing nodes when create is
 * set.  Returns FIB_OK with the full path, FIB_ERR_NOT_FOUND, or
 * FIB_ERR_NOMEM (nodes created so far stay, childless and entry-less, and
 * are pruned by the caller).
 */
static int path_walk(struct fib *f, const struct name *nm, struct path *p, bool create)
{
	uint8_t off[NAME_MAX_LABELS];
	int nlabels = label_offsets(nm, off);

	/* room first: a rebuild would move the slots the path points at */
	if (create && table_make_room(f, (uint64_t)nlabels) < 0)
		return FIB_ERR_NOMEM;
	p->depth = 0;
	p->slot[0] = &f->root;
	for (int d = 1; d <= nlabels; d++) {
		unsigned o = off[nlabels - d], klen = nm->len - 1u - o;
		struct fib_slot *s = (struct fib_slot *)table_find(f, f->table, nm->wire + o, klen);
		if (!s) {
			if (!create)
				return FIB_ERR_NOT_FOUND;
			s = node_add(f, p->slot[d - 1], nm->wire + o, klen);
			if (!s)
				return FIB_ERR_NOMEM;
		}
		p->slot[++p->depth] = s;
	}
	return FIB_OK;
}

/* Removes nodes that carry nothing, from the deepest up towards the root. */
static void path_prune(struct fib *f, struct path *p)
{
	for (int d = p->depth; d > 0; d--) {
		struct fib_slot *s = p->slot[d], *parent = p->slot[d - 1];
		if (s->entry != ENTRY_NONE || s->nchildren != 0)
			return;
		/* a long key stays readable until readers move on */
		if (s->klen > KEY_INLINE) {
			uint32_t kid;
			memcpy(&kid, s->key + KEY_LONG_PREFIX, sizeof(kid));
			limbo_add(f, LIMBO_KEY, kid);
		}
		__atomic_store_n(&s->words[0], (uint64_t)KEY_TOMB, __ATOMIC_RELEASE);
		__atomic_store_n(&parent->nchildren, parent->nchildren - 1, __ATOMIC_RELAXED);
		f->slots_live--;
		f->slots_tomb++;
		p->depth = d - 1;
	}
}

/* ---- route sets ----------------------------------------------------- */

struct set_key {
	const struct route *routes;
	unsigned count;
	const struct name *redirect;
};

static uint64_t set_hash(const struct set_key *k)
{
	/* keyed (hashkey.h): peers send the routes; two one-shot hashes are cheaper than a stream */
	uint64_t h = hashkey64(k->routes, k->count * sizeof(struct route));
	if (k->redirect)
		h ^= hashkey64(k->redirect->wire, k->redirect->len) * 0x9E3779B97F4A7C15ull;
	return h;
}

static bool set_eq(const struct fib *f, uint32_t id, const void *key)
{
	const struct set_key *k = key;
	const struct routeset *s = set_at(f, id);
	if (s->count != k->count || s->has_redirect != (k->redirect != NULL))
		return false;
	if (k->redirect && !name_equal(&s->redirect, k->redirect))
		return false;
	return memcmp(s->routes, k->routes, k->count * sizeof(struct route)) == 0;
}

static struct routeset **set_slot(struct fib *f, uint32_t id)
{
	return (struct routeset **)f->sets.base + id;
}

/* Returns the id of an interned set holding one more reference, 0 when out of memory. */
static uint32_t set_intern(struct fib *f, const struct route *in, unsigned count, const struct name *redirect)
{
	struct route routes[ROUTESET_MAX_ROUTES];
	/* equal routes must hash equal: clear what the family does not use */
	for (unsigned i = 0; i < count; i++) {
		routes[i] = in[i];
		if (routes[i].family == AF_INET)
			memset(routes[i].addr + 4, 0, 12);
	}
	struct set_key key = { routes, count, redirect };
	uint64_t h = set_hash(&key);
	uint32_t id = idmap_find(f, &f->set_index, h, set_eq, &key);
	if (id) {
		(*set_slot(f, id))->refs++;
		return id;
	}

	struct routeset *s = calloc(1, sizeof(*s) + count * sizeof(struct route));
	if (!s)
		return 0;
	s->refs = 1;
	s->hash = h;
	s->count = (uint8_t)count;
	memcpy(s->routes, routes, count * sizeof(struct route));
	if (redirect) {
		s->has_redirect = true;
		s->redirect = *redirect;
	}
	if (f->set_free) {
		id = f->set_free;
		f->set_free = (uint32_t)((uintptr_t)*set_slot(f, id) >> 1);
	} else {
		if (f->set_count >= SETS_MAX ||
		    region_ensure(&f->sets, (size_t)(f->set_count + 1) * sizeof(void *)) < 0) {
			free(s);
			return 0;
		}
		id = f->set_count++;
	}
	if (idmap_insert(&f->set_index, h, id) < 0) {
		*set_slot(f, id) = (struct routeset *)(((uintptr_t)f->set_free << 1) | 1);
		f->set_free = id;
		free(s);
		return 0;
	}
	s->id = id;
	__atomic_store_n(set_slot(f, id), s, __ATOMIC_RELEASE);
	f->sets_live++;
	return id;
}

static void set_unref(struct fib *f, uint32_t id)
{
	struct routeset *s = *set_slot(f, id);
	if (--s->refs > 0)
		return;
	/* unfindable for writers now, readable for readers until the grace period ends */
	idmap_remove(&f->set_index, s->hash, id);
	f->sets_live--;
	limbo_add(f, LIMBO_SET, id);
}

static void set_release(struct fib *f, uint32_t id)
{
	free(*set_slot(f, id));
	*set_slot(f, id) = (struct routeset *)(((uintptr_t)f->set_free << 1) | 1);
	f->set_free = id;
}

/* ---- extended entries ----------------------------------------------- */

static struct fib_ext *ext_mut(struct fib *f, uint32_t id)
{
	return (struct fib_ext *)f->exts.base + id;
}

static uint32_t ext_alloc(struct fib *f, const struct fib_ext *x)
{
	uint32_t id = f->ext_free;
	if (id) {
		f->ext_free = ext_mut(f, id)->set;
	} else {
		if (f->ext_count >= EXTS_MAX ||
		    region_ensure(&f->exts, (size_t)(f->ext_count + 1) * sizeof(struct fib_ext)) < 0)
			return 0;
		id = f->ext_count++;
	}
	*ext_mut(f, id) = *x;
	return id;
}

static void ext_release(struct fib *f, uint32_t id)
{
	ext_mut(f, id)->set = f->ext_free;
	f->ext_free = id;
}

/* The parts an entry is made of, whatever its encoding. */
static void entry_unpack(const struct fib *f, uint32_t e, struct fib_ext *x)
{
	memset(x, 0, sizeof(*x));
	switch (ENTRY_TYPE(e)) {
	case ENTRY_SET:
		x->set = ENTRY_ID(e);
		break;
	case ENTRY_AGG:
		x->naggs = 1;
		x->aggs[0] = ENTRY_ID(e);
		break;
	case ENTRY_EXT:
		*x = *ext_at(f, ENTRY_ID(e));
		break;
	}
}

/*
 * Publishes the smallest encoding of x as the slot's entry.  The caller has
 * already taken the references x holds; the old entry's extension record,
 * if any, goes to limbo.  Returns 0 or FIB_ERR_NOMEM (nothing changed).
 */
static int entry_store(struct fib *f, struct fib_slot *s, const struct fib_ext *x)
{
	uint32_t old = s->entry, e;

	if (x->set == 0 && x->naggs == 0)
		e = ENTRY_NONE;
	else if (x->naggs == 0)
		e = ENTRY_SET | x->set;
	else if (x->set == 0 && x->naggs == 1)
		e = ENTRY_AGG | x->aggs[0];
	else {
		uint32_t xid = ext_alloc(f, x);
		if (!xid)
			return FIB_ERR_NOMEM;
		e = ENTRY_EXT | xid;
	}
	__atomic_store_n(&s->entry, e, __ATOMIC_RELEASE);
	if (ENTRY_TYPE(old) == ENTRY_EXT)
		limbo_add(f, LIMBO_EXT, ENTRY_ID(old));
	if (old == ENTRY_NONE && e != ENTRY_NONE)
		f->entries++;
	else if (old != ENTRY_NONE && e == ENTRY_NONE)
		f->entries--;
	return FIB_OK;
}

/* ---- aggregates ----------------------------------------------------- */

static struct fib_aggregate *agg_mut(struct fib *f, uint32_t id)
{
	return (struct fib_aggregate *)f->aggs.base + id;
}

/* Called with the lock held; the set (0: none) holds a reference the caller took. */
static void agg_set_store(struct fib *f, uint32_t id, uint32_t set)
{
	agg_mut(f, id)->set = set;
	__atomic_store_n((struct routeset **)f->agg_routes.base + id, set ? *set_slot(f, set) : NULL,
			 __ATOMIC_RELEASE);
}

static bool agg_eq(const struct fib *f, uint32_t id, const void *key)
{
	return name_equal(&agg_at(f, id)->name, key);
}

static uint64_t name_hash(const struct name *n)
{
	return hashkey64(n->wire, n->len);
}

static void agg_release(struct fib *f, uint32_t id)
{
	struct fib_aggregate *a = agg_mut(f, id);
	a->next_free = f->agg_free;
	f->agg_free = id;
}

static bool agg_valid(const struct fib *f, uint32_t id)
{
	return id > 0 && id < f->agg_count && agg_at(f, id)->live;
}

/* ---- public writer API ---------------------------------------------- */

struct fib *fib_create(void)
{
	struct fib *f = aligned_alloc(64, (sizeof(*f) + 63) & ~(size_t)63);
	if (!f)
		return NULL;
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->lock, NULL);
	if (getrandom(f->seed, sizeof(f->seed), 0) != sizeof(f->seed)) {
		f->seed[0] = 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)f;
		f->seed[1] = 0xe7037ed1a0b428dbull ^ (uint64_t)time(NULL);
		f->seed[2] = 0x8ebc6af09c88c6e3ull ^ (uint64_t)clock();
	}
	/* id 0 of every kind means "none" */
	f->ext_count = f->set_count = f->agg_count = 1;
	if (region_init(&f->keys, KEYS_MAX_BYTES) < 0 ||
	    region_init(&f->exts, (size_t)EXTS_MAX * sizeof(struct fib_ext)) < 0 ||
	    region_init(&f->sets, (size_t)SETS_MAX * sizeof(void *)) < 0 ||
	    region_init(&f->aggs, (size_t)AGGS_MAX * sizeof(struct fib_aggregate)) < 0 ||
	    region_init(&f->agg_routes, (size_t)AGGS_MAX * sizeof(void *)) < 0 ||
	    idmap_init(&f->set_index, 64) < 0 || idmap_init(&f->agg_index, 64) < 0 ||
	    table_rebuild(f, 0) < 0) {
		fib_destroy(f);
		return NULL;
	}
	return f;
}

void fib_destroy(struct fib *f)
{
	if (!f)
		return;
	fib_barrier(f);
	for (uint32_t id = 1; id < f->set_count && f->sets.base; id++) {
		uintptr_t p = (uintptr_t)*set_slot(f, id);
		if (p && !(p & 1))
			free((void *)p);
	}
	if (f->table)
		bigtable_free(f->table, f->table->bytes);
	free(f->set_index.slots);
	free(f->agg_index.slots);
	region_free(&f->keys);
	region_free(&f->exts);
	region_free(&f->sets);
	region_free(&f->aggs);
	region_free(&f->agg_routes);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

int fib_reserve(struct fib *f, uint64_t names)
{
	int rc = FIB_OK;
	pthread_mutex_lock(&f->lock);
	if ((double)names > (double)f->table->nbuckets * 2 * LOAD_TARGET_BIG &&
	    table_rebuild(f, names > f->slots_live ? names - f->slots_live : 0) < 0)
		rc = FIB_ERR_NOMEM;
	pthread_mutex_unlock(&f->lock);
	return rc;
}

void fib_commit(struct fib *f)
{
	pthread_mutex_lock(&f->lock);
	limbo_flush(f);
	pthread_mutex_unlock(&f->lock);
}

void fib_barrier(struct fib *f)
{
	fib_commit(f);
	/* rcu_barrier() refuses to run from an online QSBR thread */
	bool online = rcu_read_ongoing();
	if (online)
		rcu_thread_offline();
	rcu_barrier();
	if (online)
		rcu_thread_online();
}

static int routes_check(unsigned count)
{
	return count > ROUTESET_MAX_ROUTES ? FIB_ERR_TOO_MANY_ROUTES : FIB_OK;
}

/* Called with the lock held. */
static int set_own(struct fib *f, const struct name *nm, const struct route *routes,
		   unsigned count, const struct name *redirect)
{
	struct path p;
	struct fib_ext x;
	uint32_t set = 0;
	int rc;

	if (count == 0 && !redirect) {
		if (path_walk(f, nm, &p, false) != FIB_OK)
			return FIB_OK;
	} else {
		rc = path_walk(f, nm, &p, true);
		if (rc != FIB_OK) {
			path_prune(f, &p);
			return rc;
		}
		set = set_intern(f, routes, count, redirect);
		if (!set) {
			path_prune(f, &p);
			return FIB_ERR_NOMEM;
		}
	}
	struct fib_slot *s = p.slot[p.depth];
	entry_unpack(f, s->entry, &x);
	uint32_t old_set = x.set;
	x.set = set;
	rc = entry_store(f, s, &x);
	if (rc != FIB_OK) {
		if (set)
			set_unref(f, set);
		path_prune(f, &p);
		return rc;
	}
	if (old_set)
		set_unref(f, old_set);
	path_prune(f, &p);
	return FIB_OK;
}

int fib_set_routes(struct fib *f, const struct name *nm, const struct route *routes, unsigned count)
{
	int rc = routes_check(count);
	if (rc != FIB_OK)
		return rc;
	pthread_mutex_lock(&f->lock);
	rc = set_own(f, nm, routes, count, NULL);
	pthread_mutex_unlock(&f->lock);
	return rc;
}

int fib_set_redirect(struct fib *f, const struct name *nm, const struct name *target)
{
	pthread_mutex_lock(&f->lock);
	int rc = set_own(f, nm, NULL, 0, target);
	pthread_mutex_unlock(&f->lock);
	return rc;
}

int fib_delete(struct fib *f, const struct name *nm)
{
	struct path p;
	struct fib_ext x, none;

	pthread_mutex_lock(&f->lock);
	if (path_walk(f, nm, &p, false) != FIB_OK || p.slot[p.depth]->entry == ENTRY_NONE) {
		pthread_mutex_unlock(&f->lock);
		return FIB_ERR_NOT_FOUND;
	}
	struct fib_slot *s = p.slot[p.depth];
	entry_unpack(f, s->entry, &x);
	memset(&none, 0, sizeof(none));
	entry_store(f, s, &none);       /* storing "none" needs no memory */
	if (x.set)
		set_unref(f, x.set);
	for (uint32_t k = 0; k < x.naggs; k++)
		agg_mut(f, x.aggs[k])->members--;
	path_prune(f, &p);
	pthread_mutex_unlock(&f->lock);
	return FIB_OK;
}

int fib_aggregate_create(struct fib *f, const struct name *agg_name, uint32_t *id_out)
{
	int rc = FIB_OK;
	uint64_t h = name_hash(agg_name);

	pthread_mutex_lock(&f->lock);
	uint32_t id = idmap_find(f, &f->agg_index, h, agg_eq, agg_name);
	if (id) {
		*id_out = id;
		rc = FIB_ERR_EXISTS;
		goto out;
	}
	if (f->agg_free) {
		id = f->agg_free;
		f->agg_free = agg_mut(f, id)->next_free;
	} else {
		if (f->agg_count >= AGGS_MAX ||
		    region_ensure(&f->aggs, (size_t)(f->agg_count + 1) * sizeof(struct fib_aggregate)) < 0 ||
		    region_ensure(&f->agg_routes, (size_t)(f->agg_count + 1) * sizeof(void *)) < 0) {
			rc = FIB_ERR_NOMEM;
			goto out;
		}
		id = f->agg_count++;
	}
	if (idmap_insert(&f->agg_index, h, id) < 0) {
		agg_mut(f, id)->next_free = f->agg_free;
		f->agg_free = id;
		rc = FIB_ERR_NOMEM;
		goto out;
	}
	struct fib_aggregate *a = agg_mut(f, id);
	agg_set_store(f, id, 0);
	a->members = 0;
	a->name = *agg_name;
	a->live = true;
	f->aggs_live++;
	*id_out = id;
out:
	pthread_mutex_unlock(&f->lock);
	return rc;
}

int fib_aggregate_find(const struct fib *f, const struct name *agg_name, uint32_t *id_out)
{
	struct fib *wf = (struct fib *)f;       /* the index is writer-side: take the lock */
	pthread_mutex_lock(&wf->lock);
	uint32_t id = idmap_find(f, &f->agg_index, name_hash(agg_name), agg_eq, agg_name);
	pthread_mutex_unlock(&wf->lock);
	if (!id)
		return FIB_ERR_NOT_FOUND;
	*id_out = id;
	return FIB_OK;
}

int fib_aggregate_set_routes(struct fib *f, uint32_t id, const struct route *routes, unsigned count)
{
	int rc = routes_check(count);
	if (rc != FIB_OK)
		return rc;
	pthread_mutex_lock(&f->lock);
	if (!agg_valid(f, id)) {
		rc = FIB_ERR_BAD_AGGREGATE;
		goto out;
	}
	uint32_t set = 0;
	if (count > 0 && !(set = set_intern(f, routes, count, NULL))) {
		rc = FIB_ERR_NOMEM;
		goto out;
	}
	uint32_t old = agg_mut(f, id)->set;
	agg_set_store(f, id, set);
	if (old)
		set_unref(f, old);
out:
	pthread_mutex_unlock(&f->lock);
	return rc;
}

/* Called with the lock held. */
static int member_add(struct fib *f, uint32_t agg, const struct name *member)
{
	struct path p;
	struct fib_ext x;

	int rc = path_walk(f, member, &p, true);
	if (rc != FIB_OK) {
		path_prune(f, &p);
		return rc;
	}
	struct fib_slot *s = p.slot[p.depth];
	entry_unpack(f, s->entry, &x);
	for (uint32_t k = 0; k < x.naggs; k++)
		if (x.aggs[k] == agg)
			return FIB_OK;  /* already a member */
	if (x.naggs == FIB_MAX_AGGREGATES_PER_NAME)
		return FIB_ERR_TOO_MANY_AGGREGATES;
	x.aggs[x.naggs++] = agg;
	rc = entry_store(f, s, &x);
	if (rc == FIB_OK)
		agg_mut(f, agg)->members++;
	else
		path_prune(f, &p);
	return rc;
}

int fib_aggregate_add_member(struct fib *f, uint32_t agg, const struct name *member)
{
	pthread_mutex_lock(&f->lock);
	int rc = agg_valid(f, agg) ? member_add(f, agg, member) : FIB_ERR_BAD_AGGREGATE;
	pthread_mutex_unlock(&f->lock);
	return rc;
}

/* Called with the lock held. */
static int member_remove(struct fib *f, uint32_t agg, const struct name *member)
{
	struct path p;
	struct fib_ext x;

	if (path_walk(f, member, &p, false) != FIB_OK)
		return FIB_ERR_NOT_FOUND;
	struct fib_slot *s = p.slot[p.depth];
	entry_unpack(f, s->entry, &x);
	uint32_t k;
	for (k = 0; k < x.naggs && x.aggs[k] != agg; k++)
		;
	if (k == x.naggs)
		return FIB_ERR_NOT_FOUND;
	memmove(&x.aggs[k], &x.aggs[k + 1], (x.naggs - k - 1) * sizeof(x.aggs[0]));
	x.naggs--;
	int rc = entry_store(f, s, &x);
	if (rc != FIB_OK)
		return rc;
	agg_mut(f, agg)->members--;
	path_prune(f, &p);
	return FIB_OK;
}

int fib_aggregate_remove_member(struct fib *f, uint32_t agg, const struct name *member)
{
	int rc;

	pthread_mutex_lock(&f->lock);
	rc = agg_valid(f, agg) ? member_remove(f, agg, member) : FIB_ERR_BAD_AGGREGATE;
	pthread_mutex_unlock(&f->lock);
	return rc;
}

/*
 * A diff's members one after another: each costs a cache miss on its own
 * slot, so the slot of the member a few places ahead is fetched while this
 * one is changed.  Only the deepest node is prefetched; the ones above it
 * are shared by many names and mostly cached.
 */
#define BATCH_AHEAD 8

static void prefetch_node(const struct fib *f, const struct name *nm)
{
	if (nm->len <= 1)
		return;
	const struct fib_table *t = f->table;
	uint64_t h = key_hash(f, nm->wire, nm->len - 1u);
	__builtin_prefetch(&t->buckets[bucket_index(t, h)], 1);
	__builtin_prefetch(&t->buckets[bucket_other(t, h)], 1);
}

static int members_apply(struct fib *f, uint32_t agg, const struct name *members, size_t count,
			 size_t *done, bool add)
{
	int rc = FIB_OK;
	size_t i = 0;

	pthread_mutex_lock(&f->lock);
	if (!agg_valid(f, agg)) {
		rc = FIB_ERR_BAD_AGGREGATE;
		goto out;
	}
	/* one resize for the batch: a member mostly adds one node, its leaf */
	if (add && table_make_room(f, count) < 0) {
		rc = FIB_ERR_NOMEM;
		goto out;
	}
	for (size_t k = 0; k < count && k < BATCH_AHEAD; k++)
		prefetch_node(f, &members[k]);
	for (; i < count; i++) {
		if (i + BATCH_AHEAD < count)
			prefetch_node(f, &members[i + BATCH_AHEAD]);
		rc = add ? member_add(f, agg, &members[i]) : member_remove(f, agg, &members[i]);
		if (rc == FIB_ERR_NOT_FOUND && !add)
			rc = FIB_OK;    /* not a member: already as the diff wants it */
		if (rc != FIB_OK)
			break;
	}
out:
	pthread_mutex_unlock(&f->lock);
	if (done)
		*done = i;
	return rc;
}

int fib_aggregate_add_members(struct fib *f, uint32_t agg, const struct name *members, size_t count,
			      size_t *done)
{
	return members_apply(f, agg, members, count, done, true);
}

int fib_aggregate_remove_members(struct fib *f, uint32_t agg, const struct name *members, size_t count,
				 size_t *done)
{
	return members_apply(f, agg, members, count, done, false);
}

int fib_set_routes_batch(struct fib *f, const struct name *names, const struct route *const *routes,
			 const unsigned *counts, size_t n, size_t *done)
{
	int rc = FIB_OK;
	size_t i = 0;
	for (size_t k = 0; k < n; k++)
		if ((rc = routes_check(counts[k])) != FIB_OK) {
			if (done)
				*done = 0;
			return rc;
		}
	pthread_mutex_lock(&f->lock);
	/* one resize for the batch: a new name mostly adds one node, its leaf */
	if (table_make_room(f, n) < 0) {
		rc = FIB_ERR_NOMEM;
		goto out;
	}
	for (size_t k = 0; k < n && k < BATCH_AHEAD; k++)
		prefetch_node(f, &names[k]);
	for (; i < n; i++) {
		if (i + BATCH_AHEAD < n)
			prefetch_node(f, &names[i + BATCH_AHEAD]);
		if ((rc = set_own(f, &names[i], routes[i], counts[i], NULL)) != FIB_OK)
			break;
	}
out:
	pthread_mutex_unlock(&f->lock);
	if (done)
		*done = i;
	return rc;
}

/* A node's name is its key plus the root label. */
static void name_of_slot(const struct fib *f, const struct fib_slot *s, struct name *out)
{
	unsigned klen = s == &f->root ? 0 : s->klen;
	if (klen)
		memcpy(out->wire, slot_key(f, s), klen);
	out->wire[klen] = 0;
	out->len = (uint8_t)(klen + 1);
}

/* Calls fn on every live slot of the table until it returns non-zero. */
static int table_each(const struct fib *f, int (*fn)(const struct fib *f, const struct fib_slot *s, void *arg),
		      void *arg)
{
	const struct fib_table *t = f->table;
	int rc = 0;
	for (uint64_t b = 0; b < t->nbuckets && rc == 0; b++)
		for (int j = 0; j < 2 && rc == 0; j++) {
			const struct fib_slot *s = &t->buckets[b].s[j];
			if (s->klen != KEY_EMPTY && s->klen != KEY_TOMB)
				rc = fn(f, s, arg);
		}
	return rc;
}

static bool entry_has_agg(const struct fib *f, uint32_t e, uint32_t agg)
{
	struct fib_ext x;
	entry_unpack(f, e, &x);
	for (uint32_t k = 0; k < x.naggs; k++)
		if (x.aggs[k] == agg)
			return true;
	return false;
}

int fib_aggregate_delete(struct fib *f, uint32_t agg)
{
	int rc = FIB_OK;
	struct name nm;

	pthread_mutex_lock(&f->lock);
	if (!agg_valid(f, agg)) {
		rc = FIB_ERR_BAD_AGGREGATE;
		goto out;
	}
	struct fib_aggregate *a = agg_mut(f, agg);
	if (a->members > 0 && f->root.entry && entry_has_agg(f, f->root.entry, agg)) {
		name_of_slot(f, &f->root, &nm);
		if ((rc = member_remove(f, agg, &nm)) != FIB_OK)
			goto out;
	}
	/*
	 * Members are removed as the scan finds them, while their slot is in
	 * cache: removing one tombstones slots but moves none, so the scan
	 * goes on over them.  It stops at the last member.
	 */
	const struct fib_table *t = f->table;
	for (uint64_t b = 0; b < t->nbuckets && a->members > 0; b++) {
		for (int j = 0; j < 2; j++) {
			const struct fib_slot *s = &t->buckets[b].s[j];
			uint32_t e = s->entry;
			if (s->klen == KEY_EMPTY || s->klen == KEY_TOMB || e == ENTRY_NONE)
				continue;
			if (e == (ENTRY_AGG | agg) || (ENTRY_TYPE(e) == ENTRY_EXT && entry_has_agg(f, e, agg))) {
				name_of_slot(f, s, &nm);
				if ((rc = member_remove(f, agg, &nm)) != FIB_OK)
					goto out;
			}
		}
	}
	uint32_t set = a->set;
	agg_set_store(f, agg, 0);
	if (set)
		set_unref(f, set);
	a->live = false;
	idmap_remove(&f->agg_index, name_hash(&a->name), agg);
	f->aggs_live--;
	limbo_add(f, LIMBO_AGG, agg);
out:
	pthread_mutex_unlock(&f->lock);
	return rc;
}

struct walk_ctx {
	fib_walk_fn fn;
	void *arg;
};

static int walk_slot(const struct fib *f, const struct fib_slot *s, void *arg)
{
	struct walk_ctx *w = arg;
	struct fib_result res;
	struct name nm;

	if (!s->entry)
		return 0;
	memset(&res, 0, sizeof(res));
	resolve_entry(f, s->entry, &res);
	name_of_slot(f, s, &nm);
	res.suffix_labels = (uint8_t)name_label_count(&nm);
	return w->fn(&nm, &res, w->arg);
}

int fib_walk(struct fib *f, fib_walk_fn fn, void *arg)
{
	struct walk_ctx w = { fn, arg };
	int rc = 0;

	pthread_mutex_lock(&f->lock);
	if (f->root.entry)
		rc = walk_slot(f, &f->root, &w);
	if (rc == 0)
		rc = table_each(f, walk_slot, &w);
	pthread_mutex_unlock(&f->lock);
	return rc;
}

void fib_get_stats(const struct fib *f, struct fib_stats *st)
{
	struct fib *wf = (struct fib *)f;
	pthread_mutex_lock(&wf->lock);
	st->nodes = f->slots_live + 1;
	st->entries = f->entries;
	st->routesets = f->sets_live;
	st->aggregates = f->aggs_live;
	st->table_slots = f->table->nbuckets * 2;
	st->node_bytes = f->table->nbuckets * sizeof(struct fib_bucket) + f->key_bytes;
	pthread_mutex_unlock(&wf->lock);
}
