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

/*
 * A trie node lives in its edge's slot: the parent's id, its own id, its
 * entry and child count, and the label inline.  A lookup step is then one
 * slot read, usually one cache line, which yields both the match and the
 * route entry; a separate node record would add a second dependent cache
 * miss per label, the cost that dominates at millions of names.
 * Labels of 16 bytes and more keep their first bytes inline and the rest
 * in an arena.
 */
#define RUN_INLINE      16      /* length byte + up to 15 label bytes */

struct fib_slot {
	uint32_t parent;        /* parent's id; SLOT_EMPTY or SLOT_TOMB; stored last */
	uint32_t id;            /* what this node's children name as their parent */
	uint32_t entry;         /* tagged reference, see ENTRY_* */
	uint32_t nchildren;     /* lets a lookup stop without probing for a child */
	uint8_t run[RUN_INLINE];        /* zero padded; long labels: see RUN_LONG_* */
};
_Static_assert(sizeof(struct fib_slot) == 32, "two slots per cache line");

#define SLOT_EMPTY      0u
#define SLOT_TOMB       UINT32_MAX      /* deleted: probing goes on past it */
#define ROOT_ID         1u
/* a long run: length byte, first label bytes, then the arena id of the whole run */
#define RUN_LONG_ID_AT  12
#define RUN_UNIT        4u
#define RUN_CLASSES     ((1 + NAME_MAX_LABEL + RUN_UNIT - 1) / RUN_UNIT + 1)
#define RUN_SLACK       (1 + NAME_MAX_LABEL)
#define RUNS_MAX_BYTES  ((size_t)4 << 30)

/* Tables stay between these loads; a large one grows in small steps. */
#define LOAD_MAX        0.80
#define LOAD_TARGET_BIG 0.72
#define LOAD_TARGET     0.50
#define BIG_TABLE       (1u << 20)
#define MIN_SLOTS       64u

#define IDS_MAX         (1u << 28)
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
#define ENTRY_MAX_ID    ((1u << 30) - 1)

/* Immutable; replaced as a whole when a name's memberships change. */
struct fib_ext {
	uint32_t set;           /* 0: no own routes */
	uint32_t naggs;
	uint32_t aggs[FIB_MAX_AGGREGATES_PER_NAME];
};

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
	uint64_t cap;           /* any size: indexed by multiply-shift, not a mask */
	struct fib_slot slots[];
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

enum limbo_kind { LIMBO_ID, LIMBO_RUN, LIMBO_EXT, LIMBO_SET, LIMBO_AGG };
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

struct fib {
	pthread_mutex_t lock;   /* writers, and the reclamation callbacks */
	uint64_t seed[2];
	struct fib_table *table;
	uint64_t slots_live, slots_tomb;
	struct fib_slot root;   /* the root is in no table */

	struct region ids_free;         /* stack of reusable node ids */
	uint32_t id_next, ids_free_count;

	struct region runs;             /* long labels */
	size_t run_bytes;
	uint32_t run_free[RUN_CLASSES];

	struct region exts;
	uint32_t ext_count, ext_free;

	struct region sets;             /* struct routeset * by id; free ids chained */
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

static inline uint32_t load32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint16_t load16(const uint8_t *p)
{
	uint16_t v;
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
 * A query label, loaded once into registers: the words that hash it are
 * the words that compare it, so a probe reloads nothing from the query.
 * Loads overlap and stay inside the run (length byte + label).
 */
struct qlabel {
	const uint8_t *run;
	unsigned n;             /* run length, 2..64 */
	uint64_t a, b;          /* first and last word of the run */
};

static ALWAYS_INLINE void qlabel_load(struct qlabel *ql, const uint8_t *run)
{
	unsigned n = 1u + run[0];
	ql->run = run;
	ql->n = n;
	if (n >= 8) {
		ql->a = load64(run);
		ql->b = load64(run + n - 8);
	} else if (n >= 4) {
		ql->a = load32(run);
		ql->b = load32(run + n - 4);
	} else {
		ql->a = load16(run);
		ql->b = run[n - 1];
	}
}

/*
 * Hash of (parent id, label): one multiply for a label of up to 15 bytes.
 * Both multiplicands carry a secret per-table seed, since names come from
 * the network.  An out-of-line XXH3 call cost as much as the cache miss it
 * sits next to.
 */
static ALWAYS_INLINE uint64_t qlabel_hash(const struct fib *f, uint32_t parent, const struct qlabel *ql)
{
	uint64_t seed = f->seed[0] ^ parent, a = ql->a;
	if (__builtin_expect(ql->n > 16, 0)) {
		for (unsigned i = 0; i + 16 < ql->n; i += 16)
			seed = mum(load64(ql->run + i) ^ f->seed[1], load64(ql->run + i + 8) ^ seed);
		a = load64(ql->run + ql->n - 16);
	}
	return mum(a ^ seed, ql->b ^ f->seed[1]);
}

static inline uint64_t edge_hash(const struct fib *f, uint32_t parent, const uint8_t *run)
{
	struct qlabel ql;
	qlabel_load(&ql, run);
	return qlabel_hash(f, parent, &ql);
}

/* Compares a whole stored run with a query run of 8 bytes or more. */
static inline bool run_equal(const uint8_t *stored, const uint8_t *q)
{
	unsigned n = 1u + q[0];
	uint64_t d = load64(stored + n - 8) ^ load64(q + n - 8);
	for (unsigned i = 0; i + 8 < n; i += 8)
		d |= load64(stored + i) ^ load64(q + i);
	return d == 0;
}

static inline const uint8_t *long_run(const struct fib *f, const struct fib_slot *s)
{
	uint32_t id;
	memcpy(&id, s->run + RUN_LONG_ID_AT, sizeof(id));
	return f->runs.base + (size_t)id * RUN_UNIT;
}

/* The slot's whole label run, wherever it is kept. */
static inline const uint8_t *slot_run(const struct fib *f, const struct fib_slot *s)
{
	return 1u + s->run[0] <= RUN_INLINE ? s->run : long_run(f, s);
}

/*
 * Every branch depends on the query's length only, which is in cache: a
 * branch on the slot's bytes would resolve only when its cache miss does.
 * The length byte is in the first word, so a stored label of another
 * length differs there; long labels spill to the arena (with its slack).
 */
static ALWAYS_INLINE bool slot_label_equal(const struct fib *f, const struct fib_slot *s,
					  const struct qlabel *ql)
{
	unsigned n = ql->n;
	if (n >= 8) {
		if (__builtin_expect(n > RUN_INLINE, 0))
			return load64(s->run) == ql->a && run_equal(long_run(f, s), ql->run);
		return ((load64(s->run) ^ ql->a) | (load64(s->run + n - 8) ^ ql->b)) == 0;
	}
	if (n >= 4)
		return ((load32(s->run) ^ ql->a) | (load32(s->run + n - 4) ^ ql->b)) == 0;
	return ((load16(s->run) ^ ql->a) | (s->run[n - 1] ^ ql->b)) == 0;
}

static inline uint64_t slot_index(const struct fib_table *t, uint64_t h)
{
	return (uint64_t)(((__uint128_t)h * t->cap) >> 64);
}

/* label points at a length byte followed by the label. */
static ALWAYS_INLINE const struct fib_slot *table_find(const struct fib *f, const struct fib_table *t,
						       uint32_t parent, const uint8_t *label)
{
	struct qlabel ql;
	qlabel_load(&ql, label);
	uint64_t i = slot_index(t, qlabel_hash(f, parent, &ql));

	for (;;) {
		const struct fib_slot *s = &t->slots[i];
		uint32_t p = __atomic_load_n(&s->parent, __ATOMIC_ACQUIRE);
		if (p == SLOT_EMPTY)
			return NULL;
		if (p == parent && slot_label_equal(f, s, &ql))
			return s;
		if (++i == t->cap)
			i = 0;
	}
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
		uint32_t s = __atomic_load_n(&agg_at(f, ENTRY_ID(e))->set, __ATOMIC_ACQUIRE);
		if (s)
			res->sets[n++] = set_at(f, s);
		break;
	}
	case ENTRY_EXT: {
		const struct fib_ext *x = ext_at(f, ENTRY_ID(e));
		if (x->set)
			res->sets[n++] = set_at(f, x->set);
		for (uint32_t k = 0; k < x->naggs; k++) {
			uint32_t s = __atomic_load_n(&agg_at(f, x->aggs[k])->set, __ATOMIC_ACQUIRE);
			if (s)
				res->sets[n++] = set_at(f, s);
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


/*
 * The slow path: the deepest entry belongs to an aggregate that has no
 * routes right now, which must not hide a shorter suffix.  Walks again and
 * takes the deepest entry that resolves.
 */
static bool lookup_all_candidates(const struct fib *f, const struct name *q, const uint8_t *off,
				  int nlabels, struct fib_result *res)
{
	uint32_t cand_entry[NAME_MAX_LABELS + 1];
	int cand_depth[NAME_MAX_LABELS + 1];
	int ncand = 0;
	const struct fib_table *t = __atomic_load_n(&f->table, __ATOMIC_ACQUIRE);
	const struct fib_slot *s = &f->root;
	uint32_t e = __atomic_load_n(&s->entry, __ATOMIC_ACQUIRE);

	if (e) {
		cand_entry[ncand] = e;
		cand_depth[ncand++] = nlabels;
	}
	for (int i = nlabels - 1; i >= 0; i--) {
		if (__atomic_load_n(&s->nchildren, __ATOMIC_RELAXED) == 0)
			break;
		s = table_find(f, t, s->id, q->wire + off[i]);
		if (!s)
			break;
		e = __atomic_load_n(&s->entry, __ATOMIC_ACQUIRE);
		if (e) {
			cand_entry[ncand] = e;
			cand_depth[ncand++] = i;
		}
	}
	while (ncand > 0) {
		ncand--;
		if (resolve_entry(f, cand_entry[ncand], res)) {
			int d = cand_depth[ncand];
			res->suffix_offset = d == nlabels ? (uint8_t)(q->len - 1) : off[d];
			res->suffix_labels = (uint8_t)(nlabels - d);
			return true;
		}
	}
	res->nsets = 0;
	return false;
}

bool fib_lookup_longest_suffix(const struct fib *f, const struct name *q, struct fib_result *res)
{
	uint8_t off[NAME_MAX_LABELS];
	int nlabels = label_offsets(q, off);
	const struct fib_table *t = __atomic_load_n(&f->table, __ATOMIC_ACQUIRE);
	const struct fib_slot *s = &f->root;
	uint32_t best = __atomic_load_n(&s->entry, __ATOMIC_ACQUIRE);
	int best_depth = nlabels;

	for (int i = nlabels - 1; i >= 0; i--) {
		if (__atomic_load_n(&s->nchildren, __ATOMIC_RELAXED) == 0)
			break;
		s = table_find(f, t, s->id, q->wire + off[i]);
		if (!s)
			break;
		uint32_t e = __atomic_load_n(&s->entry, __ATOMIC_ACQUIRE);
		if (e) {
			best = e;
			best_depth = i;
		}
	}
	if (__builtin_expect(ENTRY_TYPE(best) == ENTRY_SET, 1)) {
		res->sets[0] = set_at(f, ENTRY_ID(best));
		res->nsets = 1;
	} else if (!best || !resolve_entry(f, best, res)) {
		return best && lookup_all_candidates(f, q, off, nlabels, res);
	}
	res->suffix_offset = best_depth == nlabels ? (uint8_t)(q->len - 1) : off[best_depth];
	res->suffix_labels = (uint8_t)(nlabels - best_depth);
	return true;
}

bool fib_lookup_exact(const struct fib *f, const struct name *q, struct fib_result *res)
{
	uint8_t off[NAME_MAX_LABELS];
	int nlabels = label_offsets(q, off);
	const struct fib_table *t = __atomic_load_n(&f->table, __ATOMIC_ACQUIRE);
	const struct fib_slot *s = &f->root;

	for (int i = nlabels - 1; i >= 0 && s; i--)
		s = table_find(f, t, s->id, q->wire + off[i]);
	res->nsets = 0;
	if (!s)
		return false;
	uint32_t e = __atomic_load_n(&s->entry, __ATOMIC_ACQUIRE);
	if (!e || !resolve_entry(f, e, res))
		return false;
	res->suffix_offset = 0;
	res->suffix_labels = (uint8_t)nlabels;
	return true;
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

static void id_release(struct fib *f, uint32_t id);
static void run_release(struct fib *f, uint32_t id);
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
		case LIMBO_ID: id_release(f, id); break;
		case LIMBO_RUN: run_release(f, id); break;
		case LIMBO_EXT: ext_release(f, id); break;
		case LIMBO_SET: set_release(f, id); break;
		case LIMBO_AGG: agg_release(f, id); break;
		}
	}
	pthread_mutex_unlock(&f->lock);
	free(l);
}

/* Called with the lock held.  QSBR wants call_rcu() from an online thread. */
static void limbo_flush(struct fib *f)
{
	if (!f->limbo || f->limbo->count == 0)
		return;
	bool online = rcu_read_ongoing();
	if (!online)
		rcu_thread_online();
	call_rcu(&f->limbo->rcu, limbo_reclaim);
	if (!online)
		rcu_thread_offline();
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

/* ---- node ids and long labels --------------------------------------- */

static uint32_t id_alloc(struct fib *f)
{
	if (f->ids_free_count > 0)
		return ((uint32_t *)f->ids_free.base)[--f->ids_free_count];
	if (f->id_next >= IDS_MAX)
		return 0;
	return f->id_next++;
}

static void id_release(struct fib *f, uint32_t id)
{
	/* the stack never holds more ids than were handed out */
	if (region_ensure(&f->ids_free, (size_t)(f->ids_free_count + 1) * sizeof(uint32_t)) == 0)
		((uint32_t *)f->ids_free.base)[f->ids_free_count++] = id;
}

static inline unsigned run_units(unsigned label_len)
{
	return (1u + label_len + RUN_UNIT - 1) / RUN_UNIT;
}

static uint32_t run_alloc(struct fib *f, const uint8_t *run)
{
	unsigned units = run_units(run[0]);
	uint32_t id = f->run_free[units];
	if (id) {
		memcpy(&f->run_free[units], f->runs.base + (size_t)id * RUN_UNIT, sizeof(uint32_t));
	} else {
		if (f->run_bytes == 0)
			f->run_bytes = RUN_UNIT;        /* id 0 means none */
		size_t need = f->run_bytes + (size_t)units * RUN_UNIT;
		if (region_ensure(&f->runs, need + RUN_SLACK) < 0)
			return 0;
		id = (uint32_t)(f->run_bytes / RUN_UNIT);
		f->run_bytes = need;
	}
	memcpy(f->runs.base + (size_t)id * RUN_UNIT, run, 1u + run[0]);
	return id;
}

static void run_release(struct fib *f, uint32_t id)
{
	uint8_t *p = f->runs.base + (size_t)id * RUN_UNIT;
	unsigned units = run_units(p[0]);
	memcpy(p, &f->run_free[units], sizeof(uint32_t));
	f->run_free[units] = id;
}

/* ---- the edge table ------------------------------------------------- */

static struct fib_table *table_alloc(uint64_t cap)
{
	size_t bytes = sizeof(struct fib_table) + cap * sizeof(struct fib_slot);
	struct fib_table *t = bigtable_alloc(bytes);
	if (!t)
		return NULL;
	t->bytes = bytes;
	t->cap = cap;
	return t;
}

static void table_free_rcu(struct rcu_head *head)
{
	struct fib_table *t = caa_container_of(head, struct fib_table, rcu);
	bigtable_free(t, t->bytes);
}

/* First empty slot on the probe path.  Tombstones are never reused within a
 * table: a reader may still be comparing the key a tombstone held. */
static struct fib_slot *table_free_slot(struct fib_table *t, uint64_t h)
{
	uint64_t i = slot_index(t, h);
	while (t->slots[i].parent != SLOT_EMPTY)
		if (++i == t->cap)
			i = 0;
	return &t->slots[i];
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
	double target = want >= BIG_TABLE ? LOAD_TARGET_BIG : LOAD_TARGET;
	uint64_t cap = (uint64_t)((double)want / target) + 1;
	if (cap < MIN_SLOTS)
		cap = MIN_SLOTS;
	struct fib_table *t = table_alloc(cap);
	if (!t)
		return -1;
	if (old) {
		for (uint64_t i = 0; i < old->cap; i++) {
			const struct fib_slot *s = &old->slots[i];
			if (s->parent == SLOT_EMPTY || s->parent == SLOT_TOMB)
				continue;
			*table_free_slot(t, edge_hash(f, s->parent, slot_run(f, s))) = *s;
		}
	}
	__atomic_store_n(&f->table, t, __ATOMIC_RELEASE);
	f->slots_tomb = 0;
	if (old) {
		bool online = rcu_read_ongoing();
		if (!online)
			rcu_thread_online();
		call_rcu(&old->rcu, table_free_rcu);
		if (!online)
			rcu_thread_offline();
	}
	return 0;
}

static int table_make_room(struct fib *f, uint64_t extra)
{
	uint64_t used = f->slots_live + f->slots_tomb + extra;
	if ((double)used <= (double)f->table->cap * LOAD_MAX)
		return 0;
	return table_rebuild(f, extra);
}

/* The slots from the root down to a name, root first. */
struct path {
	int depth;              /* labels matched: slot[depth] is the deepest */
	struct fib_slot *slot[NAME_MAX_LABELS + 1];
};

static struct fib_slot *child_add(struct fib *f, struct fib_slot *parent, const uint8_t *label)
{
	uint32_t id = id_alloc(f);
	if (!id)
		return NULL;
	struct fib_slot fresh;
	memset(&fresh, 0, sizeof(fresh));
	fresh.id = id;
	if (1u + label[0] <= RUN_INLINE) {
		memcpy(fresh.run, label, 1u + label[0]);
	} else {
		uint32_t rid = run_alloc(f, label);
		if (!rid) {
			id_release(f, id);
			return NULL;
		}
		memcpy(fresh.run, label, RUN_LONG_ID_AT);
		memcpy(fresh.run + RUN_LONG_ID_AT, &rid, sizeof(rid));
	}
	struct fib_slot *s = table_free_slot(f->table, edge_hash(f, parent->id, label));
	memcpy((uint8_t *)s + sizeof(s->parent), (uint8_t *)&fresh + sizeof(fresh.parent),
	       sizeof(fresh) - sizeof(fresh.parent));
	/* the key is complete before a reader can match it */
	__atomic_store_n(&s->parent, parent->id, __ATOMIC_RELEASE);
	__atomic_store_n(&parent->nchildren, parent->nchildren + 1, __ATOMIC_RELAXED);
	f->slots_live++;
	return s;
}

/*
 * Walks from the root towards nm, creating missing nodes when create is
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
	for (int i = nlabels - 1; i >= 0; i--) {
		struct fib_slot *parent = p->slot[p->depth];
		const uint8_t *label = nm->wire + off[i];
		struct fib_slot *s = (struct fib_slot *)table_find(f, f->table, parent->id, label);
		if (!s) {
			if (!create)
				return FIB_ERR_NOT_FOUND;
			s = child_add(f, parent, label);
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
		/* the id and long label stay readable until readers move on */
		limbo_add(f, LIMBO_ID, s->id);
		if (1u + s->run[0] > RUN_INLINE) {
			uint32_t rid;
			memcpy(&rid, s->run + RUN_LONG_ID_AT, sizeof(rid));
			limbo_add(f, LIMBO_RUN, rid);
		}
		__atomic_store_n(&s->parent, SLOT_TOMB, __ATOMIC_RELEASE);
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
	XXH3_state_t st;
	XXH3_64bits_reset(&st);
	XXH3_64bits_update(&st, k->routes, k->count * sizeof(struct route));
	if (k->redirect)
		XXH3_64bits_update(&st, k->redirect->wire, k->redirect->len);
	return XXH3_64bits_digest(&st);
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

static bool agg_eq(const struct fib *f, uint32_t id, const void *key)
{
	return name_equal(&agg_at(f, id)->name, key);
}

static uint64_t name_hash(const struct name *n)
{
	return XXH3_64bits(n->wire, n->len);
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
	struct fib *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	pthread_mutex_init(&f->lock, NULL);
	if (getrandom(f->seed, sizeof(f->seed), 0) != sizeof(f->seed)) {
		f->seed[0] = 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)f;
		f->seed[1] = 0xe7037ed1a0b428dbull ^ (uint64_t)time(NULL);
	}
	f->root.id = ROOT_ID;
	f->id_next = ROOT_ID + 1;
	/* id 0 of every kind means "none" */
	f->ext_count = f->set_count = f->agg_count = 1;
	if (region_init(&f->ids_free, (size_t)IDS_MAX * sizeof(uint32_t)) < 0 ||
	    region_init(&f->runs, RUNS_MAX_BYTES) < 0 ||
	    region_init(&f->exts, (size_t)EXTS_MAX * sizeof(struct fib_ext)) < 0 ||
	    region_init(&f->sets, (size_t)SETS_MAX * sizeof(void *)) < 0 ||
	    region_init(&f->aggs, (size_t)AGGS_MAX * sizeof(struct fib_aggregate)) < 0 ||
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
	region_free(&f->ids_free);
	region_free(&f->runs);
	region_free(&f->exts);
	region_free(&f->sets);
	region_free(&f->aggs);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

int fib_reserve(struct fib *f, uint64_t names)
{
	int rc = FIB_OK;
	pthread_mutex_lock(&f->lock);
	if ((double)names > (double)f->table->cap * LOAD_TARGET_BIG &&
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
		    region_ensure(&f->aggs, (size_t)(f->agg_count + 1) * sizeof(struct fib_aggregate)) < 0) {
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
	a->set = 0;
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
	struct fib_aggregate *a = agg_mut(f, id);
	uint32_t old = a->set;
	/* one store re-routes every member (paper, Figure 5) */
	__atomic_store_n(&a->set, set, __ATOMIC_RELEASE);
	if (old)
		set_unref(f, old);
out:
	pthread_mutex_unlock(&f->lock);
	return rc;
}

int fib_aggregate_add_member(struct fib *f, uint32_t agg, const struct name *member)
{
	struct path p;
	struct fib_ext x;
	int rc = FIB_OK;

	pthread_mutex_lock(&f->lock);
	if (!agg_valid(f, agg)) {
		rc = FIB_ERR_BAD_AGGREGATE;
		goto out;
	}
	rc = path_walk(f, member, &p, true);
	if (rc != FIB_OK) {
		path_prune(f, &p);
		goto out;
	}
	struct fib_slot *s = p.slot[p.depth];
	entry_unpack(f, s->entry, &x);
	for (uint32_t k = 0; k < x.naggs; k++)
		if (x.aggs[k] == agg)
			goto out;       /* already a member */
	if (x.naggs == FIB_MAX_AGGREGATES_PER_NAME) {
		rc = FIB_ERR_TOO_MANY_AGGREGATES;
		goto out;
	}
	x.aggs[x.naggs++] = agg;
	rc = entry_store(f, s, &x);
	if (rc == FIB_OK)
		agg_mut(f, agg)->members++;
	else
		path_prune(f, &p);
out:
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
 * Slots name their parent by id only; to rebuild names, map every id to
 * its slot once per walk.  Writer-side, so the lock is held.
 */
struct name_map {
	uint32_t *slot_of;      /* id -> slot index + 1 */
};

static int name_map_build(const struct fib *f, struct name_map *m)
{
	m->slot_of = calloc(f->id_next, sizeof(uint32_t));
	if (!m->slot_of)
		return -1;
	const struct fib_table *t = f->table;
	for (uint64_t i = 0; i < t->cap; i++) {
		const struct fib_slot *s = &t->slots[i];
		if (s->parent != SLOT_EMPTY && s->parent != SLOT_TOMB)
			m->slot_of[s->id] = (uint32_t)(i + 1);
	}
	return 0;
}

static void name_of_slot(const struct fib *f, const struct name_map *m, const struct fib_slot *s,
			 struct name *out)
{
	size_t len = 0;
	while (s != &f->root) {
		const uint8_t *run = slot_run(f, s);
		memcpy(out->wire + len, run, 1u + run[0]);
		len += 1u + run[0];
		s = s->parent == ROOT_ID ? &f->root : &f->table->slots[m->slot_of[s->parent] - 1];
	}
	out->wire[len++] = 0;
	out->len = (uint8_t)len;
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
	struct name_map m = { NULL };
	struct name *members = NULL;
	uint32_t n = 0;

	pthread_mutex_lock(&f->lock);
	if (!agg_valid(f, agg)) {
		rc = FIB_ERR_BAD_AGGREGATE;
		goto out;
	}
	struct fib_aggregate *a = agg_mut(f, agg);
	/* collect first: removing members prunes slots out from under a scan */
	if (a->members > 0) {
		members = malloc((size_t)a->members * sizeof(*members));
		if (!members || name_map_build(f, &m) < 0) {
			rc = FIB_ERR_NOMEM;
			goto out;
		}
		const struct fib_table *t = f->table;
		for (uint64_t i = 0; i < t->cap && n < a->members; i++) {
			const struct fib_slot *s = &t->slots[i];
			if (s->parent != SLOT_EMPTY && s->parent != SLOT_TOMB && entry_has_agg(f, s->entry, agg))
				name_of_slot(f, &m, s, &members[n++]);
		}
		if (f->root.entry && entry_has_agg(f, f->root.entry, agg) && n < a->members)
			name_of_slot(f, &m, &f->root, &members[n++]);
		for (uint32_t k = 0; k < n; k++) {
			rc = member_remove(f, agg, &members[k]);
			if (rc != FIB_OK)
				goto out;
		}
	}
	if (a->set)
		set_unref(f, a->set);
	__atomic_store_n(&a->set, 0, __ATOMIC_RELEASE);
	a->live = false;
	idmap_remove(&f->agg_index, name_hash(&a->name), agg);
	f->aggs_live--;
	limbo_add(f, LIMBO_AGG, agg);
out:
	free(m.slot_of);
	free(members);
	pthread_mutex_unlock(&f->lock);
	return rc;
}

int fib_walk(struct fib *f, fib_walk_fn fn, void *arg)
{
	struct name_map m;
	struct name nm;
	struct fib_result res;
	int rc = 0;

	pthread_mutex_lock(&f->lock);
	if (name_map_build(f, &m) < 0) {
		pthread_mutex_unlock(&f->lock);
		return FIB_ERR_NOMEM;
	}
	if (f->root.entry) {
		memset(&res, 0, sizeof(res));
		resolve_entry(f, f->root.entry, &res);
		name_of_slot(f, &m, &f->root, &nm);
		rc = fn(&nm, &res, arg);
	}
	const struct fib_table *t = f->table;
	for (uint64_t i = 0; i < t->cap && rc == 0; i++) {
		const struct fib_slot *s = &t->slots[i];
		if (s->parent == SLOT_EMPTY || s->parent == SLOT_TOMB || !s->entry)
			continue;
		memset(&res, 0, sizeof(res));
		resolve_entry(f, s->entry, &res);
		name_of_slot(f, &m, s, &nm);
		res.suffix_labels = (uint8_t)name_label_count(&nm);
		rc = fn(&nm, &res, arg);
	}
	free(m.slot_of);
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
	st->table_slots = f->table->cap;
	st->node_bytes = f->table->cap * sizeof(struct fib_slot) + f->run_bytes;
	pthread_mutex_unlock(&wf->lock);
}
