#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <urcu-qsbr.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "arena.h"
#include "fib.h"

/*
 * Node records are packed at 4-byte granularity; a node id is its offset
 * divided by 4, which addresses 16 GiB of nodes with 32 bits.  Id 0 is
 * never a node, so an all-zero slot is empty.
 */
struct fib_node {
	uint32_t parent;
	uint32_t entry;         /* tagged reference, see ENTRY_* */
	uint32_t nchildren;     /* lets a lookup stop without probing for a child */
	uint8_t len;            /* label length; label follows, so len+label compare as one run */
	uint8_t label[];
};

#define NODE_UNIT       4u
#define NODE_HDR        offsetof(struct fib_node, len)
#define NODE_CLASSES    ((NODE_HDR + 1 + NAME_MAX_LABEL + NODE_UNIT - 1) / NODE_UNIT + 1)
#define NODE_MAX_BYTES  ((size_t)16 << 30)

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

#define SLOT_TOMB_ID    UINT32_MAX      /* deleted: probing goes on past it */

struct fib_table {
	struct rcu_head rcu;
	size_t bytes;
	uint64_t mask;
	uint64_t slots[];       /* tag << 32 | node id */
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

enum limbo_kind { LIMBO_NODE, LIMBO_EXT, LIMBO_SET, LIMBO_AGG };
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
	uint64_t seed;
	struct fib_table *table;
	uint64_t slots_live, slots_tomb;
	uint32_t root;

	struct region nodes;
	size_t node_bytes;
	uint32_t node_free[NODE_CLASSES];
	uint64_t nodes_live, entries;

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

	struct limbo *limbo;
	unsigned pending_callbacks;     /* limbo batches not yet reclaimed */
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

static inline const struct fib_node *node_at(const struct fib *f, uint32_t id)
{
	return (const struct fib_node *)(f->nodes.base + (size_t)id * NODE_UNIT);
}

static inline uint64_t edge_hash(const struct fib *f, uint32_t parent, const uint8_t *label)
{
	return XXH3_64bits_withSeed(label + 1, label[0], f->seed ^ parent);
}

/* label points at a length byte followed by the label. */
static inline uint32_t table_find(const struct fib *f, const struct fib_table *t,
				  uint32_t parent, const uint8_t *label)
{
	uint64_t h = edge_hash(f, parent, label);
	uint32_t tag = (uint32_t)(h >> 32);
	uint64_t i = h & t->mask;

	for (;;) {
		uint64_t s = __atomic_load_n(&t->slots[i], __ATOMIC_ACQUIRE);
		if (s == 0)
			return 0;
		uint32_t id = (uint32_t)s;
		if ((uint32_t)(s >> 32) == tag && id != SLOT_TOMB_ID) {
			const struct fib_node *n = node_at(f, id);
			if (n->parent == parent && memcmp(&n->len, label, 1u + label[0]) == 0)
				return id;
		}
		i = (i + 1) & t->mask;
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

static bool resolve_entry(const struct fib *f, uint32_t e, struct fib_result *res)
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

static inline int label_offsets(const struct name *q, uint8_t off[NAME_MAX_LABELS])
{
	int n = 0;
	unsigned p = 0;
	while (q->wire[p] != 0) {
		off[n++] = (uint8_t)p;
		p += 1u + q->wire[p];
	}
	return n;
}

bool fib_lookup_longest_suffix(const struct fib *f, const struct name *q, struct fib_result *res)
{
	uint8_t off[NAME_MAX_LABELS];
	int nlabels = label_offsets(q, off);
	/* entries met on the way down; usually just one */
	uint32_t cand_entry[NAME_MAX_LABELS + 1];
	int cand_depth[NAME_MAX_LABELS + 1];
	int ncand = 0;

	const struct fib_table *t = rcu_dereference(f->table);
	uint32_t id = f->root;
	const struct fib_node *n = node_at(f, id);
	uint32_t e = __atomic_load_n(&n->entry, __ATOMIC_ACQUIRE);
	if (e) {
		cand_entry[ncand] = e;
		cand_depth[ncand++] = nlabels;
	}
	for (int i = nlabels - 1; i >= 0; i--) {
		if (__atomic_load_n(&n->nchildren, __ATOMIC_RELAXED) == 0)
			break;
		id = table_find(f, t, id, q->wire + off[i]);
		if (!id)
			break;
		n = node_at(f, id);
		e = __atomic_load_n(&n->entry, __ATOMIC_ACQUIRE);
		if (e) {
			cand_entry[ncand] = e;
			cand_depth[ncand++] = i;
		}
	}
	/* an aggregate with no routes right now does not hide a shorter suffix */
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

bool fib_lookup_exact(const struct fib *f, const struct name *q, struct fib_result *res)
{
	uint8_t off[NAME_MAX_LABELS];
	int nlabels = label_offsets(q, off);
	const struct fib_table *t = rcu_dereference(f->table);
	uint32_t id = f->root;

	for (int i = nlabels - 1; i >= 0 && id; i--)
		id = table_find(f, t, id, q->wire + off[i]);
	res->nsets = 0;
	if (!id)
		return false;
	uint32_t e = __atomic_load_n(&node_at(f, id)->entry, __ATOMIC_ACQUIRE);
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

static void node_release(struct fib *f, uint32_t id);
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
		case LIMBO_NODE: node_release(f, id); break;
		case LIMBO_EXT: ext_release(f, id); break;
		case LIMBO_SET: set_release(f, id); break;
		case LIMBO_AGG: agg_release(f, id); break;
		}
	}
	f->pending_callbacks--;
	pthread_mutex_unlock(&f->lock);
	free(l);
}

/* Called with the lock held. */
static void limbo_flush(struct fib *f)
{
	if (!f->limbo || f->limbo->count == 0)
		return;
	f->pending_callbacks++;
	call_rcu(&f->limbo->rcu, limbo_reclaim);
	f->limbo = NULL;
}

static int limbo_add(struct fib *f, enum limbo_kind kind, uint32_t id)
{
	if (!f->limbo) {
		f->limbo = malloc(sizeof(*f->limbo));
		if (!f->limbo)
			return -1;      /* the id is leaked until destroy; no reader is harmed */
		f->limbo->fib = f;
		f->limbo->count = 0;
	}
	f->limbo->items[f->limbo->count].kind = kind;
	f->limbo->items[f->limbo->count].id = id;
	if (++f->limbo->count == LIMBO_BATCH)
		limbo_flush(f);
	return 0;
}

/* ---- nodes and the edge table --------------------------------------- */

static inline struct fib_node *node_mut(struct fib *f, uint32_t id)
{
	return (struct fib_node *)(f->nodes.base + (size_t)id * NODE_UNIT);
}

static inline unsigned node_units(unsigned label_len)
{
	return (unsigned)((NODE_HDR + 1 + label_len + NODE_UNIT - 1) / NODE_UNIT);
}

static uint32_t node_alloc(struct fib *f, uint32_t parent, const uint8_t *label)
{
	unsigned units = node_units(label[0]);
	uint32_t id = f->node_free[units];

	if (id) {
		f->node_free[units] = node_mut(f, id)->parent;
	} else {
		size_t need = f->node_bytes + (size_t)units * NODE_UNIT;
		if (need / NODE_UNIT > UINT32_MAX - 1 || region_ensure(&f->nodes, need) < 0)
			return 0;
		id = (uint32_t)(f->node_bytes / NODE_UNIT);
		f->node_bytes = need;
	}
	struct fib_node *n = node_mut(f, id);
	n->parent = parent;
	n->entry = ENTRY_NONE;
	n->nchildren = 0;
	memcpy(&n->len, label, 1u + label[0]);
	f->nodes_live++;
	return id;
}

static void node_release(struct fib *f, uint32_t id)
{
	struct fib_node *n = node_mut(f, id);
	unsigned units = node_units(n->len);
	n->parent = f->node_free[units];
	f->node_free[units] = id;
}

static struct fib_table *table_alloc(size_t cap)
{
	size_t bytes = sizeof(struct fib_table) + cap * sizeof(uint64_t);
	struct fib_table *t = bigtable_alloc(bytes);
	if (!t)
		return NULL;
	t->bytes = bytes;
	t->mask = cap - 1;
	return t;
}

static void table_free_rcu(struct rcu_head *head)
{
	struct fib_table *t = caa_container_of(head, struct fib_table, rcu);
	bigtable_free(t, t->bytes);
}

static void table_place(struct fib_table *t, uint64_t h, uint32_t id)
{
	uint64_t i = h & t->mask;
	for (;;) {
		uint64_t s = t->slots[i];
		if (s == 0 || (uint32_t)s == SLOT_TOMB_ID)
			break;
		i = (i + 1) & t->mask;
	}
	__atomic_store_n(&t->slots[i], (h >> 32) << 32 | id, __ATOMIC_RELEASE);
}

/*
 * Rebuilds the table at a size where it is at most half full, dropping
 * tombstones.  Readers keep using the old table until the new one is
 * published; the writer lock keeps the two from diverging meanwhile.
 */
static int table_rebuild(struct fib *f)
{
	struct fib_table *old = f->table;
	size_t cap = 1024;
	while (cap < (f->slots_live + 1) * 2)
		cap *= 2;
	struct fib_table *t = table_alloc(cap);
	if (!t)
		return -1;
	for (size_t i = 0; i <= old->mask; i++) {
		uint64_t s = old->slots[i];
		uint32_t id = (uint32_t)s;
		if (s == 0 || id == SLOT_TOMB_ID)
			continue;
		const struct fib_node *n = node_at(f, id);
		table_place(t, edge_hash(f, n->parent, &n->len), id);
	}
	rcu_assign_pointer(f->table, t);
	f->slots_tomb = 0;
	call_rcu(&old->rcu, table_free_rcu);
	return 0;
}

static uint32_t child_get_or_add(struct fib *f, uint32_t parent, const uint8_t *label)
{
	uint32_t id = table_find(f, f->table, parent, label);
	if (id)
		return id;
	/* grow (or sweep tombstones) past three quarters full */
	if ((f->slots_live + f->slots_tomb + 1) * 4 > (f->table->mask + 1) * 3 && table_rebuild(f) < 0)
		return 0;
	id = node_alloc(f, parent, label);
	if (!id)
		return 0;
	uint64_t h = edge_hash(f, parent, label);
	/* a reused tombstone counts as live again */
	uint64_t i = h & f->table->mask;
	for (;;) {
		uint64_t s = f->table->slots[i];
		if (s == 0)
			break;
		if ((uint32_t)s == SLOT_TOMB_ID) {
			f->slots_tomb--;
			break;
		}
		i = (i + 1) & f->table->mask;
	}
	__atomic_store_n(&f->table->slots[i], (h >> 32) << 32 | id, __ATOMIC_RELEASE);
	f->slots_live++;
	struct fib_node *p = node_mut(f, parent);
	__atomic_store_n(&p->nchildren, p->nchildren + 1, __ATOMIC_RELAXED);
	return id;
}

/* Finds or creates the node for a name; 0 when out of memory. */
static uint32_t node_for_name(struct fib *f, const struct name *nm)
{
	uint8_t off[NAME_MAX_LABELS];
	int nlabels = label_offsets(nm, off);
	uint32_t id = f->root;
	for (int i = nlabels - 1; i >= 0 && id; i--)
		id = child_get_or_add(f, id, nm->wire + off[i]);
	return id;
}

static uint32_t node_find(struct fib *f, const struct name *nm)
{
	uint8_t off[NAME_MAX_LABELS];
	int nlabels = label_offsets(nm, off);
	uint32_t id = f->root;
	for (int i = nlabels - 1; i >= 0 && id; i--)
		id = table_find(f, f->table, id, nm->wire + off[i]);
	return id;
}

static void slot_remove(struct fib *f, uint32_t id)
{
	const struct fib_node *n = node_at(f, id);
	uint64_t h = edge_hash(f, n->parent, &n->len);
	for (uint64_t i = h & f->table->mask;; i = (i + 1) & f->table->mask) {
		if ((uint32_t)f->table->slots[i] == id) {
			__atomic_store_n(&f->table->slots[i], (uint64_t)SLOT_TOMB_ID, __ATOMIC_RELEASE);
			break;
		}
	}
	f->slots_live--;
	f->slots_tomb++;
}

/* Removes nodes that carry nothing, from id up towards the root. */
static void node_prune(struct fib *f, uint32_t id)
{
	while (id != f->root) {
		struct fib_node *n = node_mut(f, id);
		if (n->entry != ENTRY_NONE || n->nchildren != 0)
			return;
		uint32_t parent = n->parent;
		slot_remove(f, id);
		struct fib_node *p = node_mut(f, parent);
		__atomic_store_n(&p->nchildren, p->nchildren - 1, __ATOMIC_RELAXED);
		f->nodes_live--;
		limbo_add(f, LIMBO_NODE, id);
		id = parent;
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
		if (f->set_count == ENTRY_MAX_ID ||
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
		if (f->ext_count == ENTRY_MAX_ID ||
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
 * Publishes the smallest encoding of x as node id's entry.  The caller has
 * already taken the references x holds; the old entry's extension record,
 * if any, goes to limbo.  Returns 0 or FIB_ERR_NOMEM (nothing changed).
 */
static int entry_store(struct fib *f, uint32_t id, const struct fib_ext *x)
{
	struct fib_node *n = node_mut(f, id);
	uint32_t old = n->entry, e;

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
	__atomic_store_n(&n->entry, e, __ATOMIC_RELEASE);
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
	if (getrandom(&f->seed, sizeof(f->seed), 0) != sizeof(f->seed))
		f->seed = 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)f;
	if (region_init(&f->nodes, NODE_MAX_BYTES) < 0 ||
	    region_init(&f->exts, (size_t)(ENTRY_MAX_ID + 1) * sizeof(struct fib_ext)) < 0 ||
	    region_init(&f->sets, (size_t)(ENTRY_MAX_ID + 1) * sizeof(void *)) < 0 ||
	    region_init(&f->aggs, (size_t)(ENTRY_MAX_ID + 1) * sizeof(struct fib_aggregate)) < 0 ||
	    idmap_init(&f->set_index, 64) < 0 || idmap_init(&f->agg_index, 64) < 0 ||
	    !(f->table = table_alloc(1024)))
		goto fail;
	/* id 0 of every kind means "none" */
	f->node_bytes = NODE_UNIT;
	f->ext_count = f->set_count = f->agg_count = 1;
	if (region_ensure(&f->nodes, NODE_UNIT) < 0)
		goto fail;
	static const uint8_t root_label[1] = { 0 };
	f->root = node_alloc(f, 0, root_label);
	if (!f->root)
		goto fail;
	return f;
fail:
	fib_destroy(f);
	return NULL;
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
	region_free(&f->nodes);
	region_free(&f->exts);
	region_free(&f->sets);
	region_free(&f->aggs);
	pthread_mutex_destroy(&f->lock);
	free(f);
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
	rcu_barrier();
}

static int routes_check(unsigned count)
{
	return count > ROUTESET_MAX_ROUTES ? FIB_ERR_TOO_MANY_ROUTES : FIB_OK;
}

static int set_own(struct fib *f, const struct name *nm, const struct route *routes,
		   unsigned count, const struct name *redirect)
{
	uint32_t id, set = 0;
	struct fib_ext x;
	int rc;

	if (count == 0 && !redirect) {
		id = node_find(f, nm);
		if (!id)
			return FIB_OK;
	} else {
		id = node_for_name(f, nm);
		if (!id)
			return FIB_ERR_NOMEM;
		set = set_intern(f, routes, count, redirect);
		if (!set) {
			node_prune(f, id);
			return FIB_ERR_NOMEM;
		}
	}
	entry_unpack(f, node_at(f, id)->entry, &x);
	uint32_t old_set = x.set;
	x.set = set;
	rc = entry_store(f, id, &x);
	if (rc != FIB_OK) {
		if (set)
			set_unref(f, set);
		node_prune(f, id);
		return rc;
	}
	if (old_set)
		set_unref(f, old_set);
	node_prune(f, id);
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
	struct fib_ext x, none;

	pthread_mutex_lock(&f->lock);
	uint32_t id = node_find(f, nm);
	if (!id || node_at(f, id)->entry == ENTRY_NONE) {
		pthread_mutex_unlock(&f->lock);
		return FIB_ERR_NOT_FOUND;
	}
	entry_unpack(f, node_at(f, id)->entry, &x);
	memset(&none, 0, sizeof(none));
	entry_store(f, id, &none);      /* storing "none" needs no memory */
	if (x.set)
		set_unref(f, x.set);
	for (uint32_t k = 0; k < x.naggs; k++)
		agg_mut(f, x.aggs[k])->members--;
	node_prune(f, id);
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
		if (f->agg_count == ENTRY_MAX_ID ||
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
	struct fib_ext x;
	int rc = FIB_OK;

	pthread_mutex_lock(&f->lock);
	if (!agg_valid(f, agg)) {
		rc = FIB_ERR_BAD_AGGREGATE;
		goto out;
	}
	uint32_t id = node_for_name(f, member);
	if (!id) {
		rc = FIB_ERR_NOMEM;
		goto out;
	}
	entry_unpack(f, node_at(f, id)->entry, &x);
	for (uint32_t k = 0; k < x.naggs; k++)
		if (x.aggs[k] == agg)
			goto out;       /* already a member */
	if (x.naggs == FIB_MAX_AGGREGATES_PER_NAME) {
		rc = FIB_ERR_TOO_MANY_AGGREGATES;
		goto out;
	}
	x.aggs[x.naggs++] = agg;
	rc = entry_store(f, id, &x);
	if (rc == FIB_OK)
		agg_mut(f, agg)->members++;
	else
		node_prune(f, id);
out:
	pthread_mutex_unlock(&f->lock);
	return rc;
}

/* Called with the lock held. */
static int member_remove(struct fib *f, uint32_t agg, uint32_t id)
{
	struct fib_ext x;
	entry_unpack(f, node_at(f, id)->entry, &x);
	uint32_t k;
	for (k = 0; k < x.naggs && x.aggs[k] != agg; k++)
		;
	if (k == x.naggs)
		return FIB_ERR_NOT_FOUND;
	memmove(&x.aggs[k], &x.aggs[k + 1], (x.naggs - k - 1) * sizeof(x.aggs[0]));
	x.naggs--;
	int rc = entry_store(f, id, &x);
	if (rc != FIB_OK)
		return rc;
	agg_mut(f, agg)->members--;
	node_prune(f, id);
	return FIB_OK;
}

int fib_aggregate_remove_member(struct fib *f, uint32_t agg, const struct name *member)
{
	int rc;

	pthread_mutex_lock(&f->lock);
	if (!agg_valid(f, agg)) {
		rc = FIB_ERR_BAD_AGGREGATE;
	} else {
		uint32_t id = node_find(f, member);
		rc = id ? member_remove(f, agg, id) : FIB_ERR_NOT_FOUND;
	}
	pthread_mutex_unlock(&f->lock);
	return rc;
}

int fib_aggregate_delete(struct fib *f, uint32_t agg)
{
	int rc = FIB_OK;

	pthread_mutex_lock(&f->lock);
	if (!agg_valid(f, agg)) {
		rc = FIB_ERR_BAD_AGGREGATE;
		goto out;
	}
	struct fib_aggregate *a = agg_mut(f, agg);
	/*
	 * Pruning only writes tombstones, never moves slots, so walking the
	 * table while removing members is safe; a rebuild cannot happen here.
	 */
	const struct fib_table *t = f->table;
	for (size_t i = 0; i <= t->mask && a->members > 0; i++) {
		uint32_t id = (uint32_t)t->slots[i];
		if (t->slots[i] == 0 || id == SLOT_TOMB_ID)
			continue;
		uint32_t e = node_at(f, id)->entry;
		if (ENTRY_TYPE(e) == ENTRY_AGG || ENTRY_TYPE(e) == ENTRY_EXT) {
			rc = member_remove(f, agg, id);
			if (rc != FIB_OK && rc != FIB_ERR_NOT_FOUND)
				goto out;
			rc = FIB_OK;
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
	pthread_mutex_unlock(&f->lock);
	return rc;
}

/* Rebuilds a node's name by walking up to the root. */
static void node_name(const struct fib *f, uint32_t id, struct name *out)
{
	size_t len = 0;
	while (id != f->root) {
		const struct fib_node *n = node_at(f, id);
		memcpy(out->wire + len, &n->len, 1u + n->len);
		len += 1u + n->len;
		id = n->parent;
	}
	out->wire[len++] = 0;
	out->len = (uint8_t)len;
}

int fib_walk(struct fib *f, fib_walk_fn fn, void *arg)
{
	struct name nm;
	struct fib_result res;
	int rc = 0;

	pthread_mutex_lock(&f->lock);
	const struct fib_node *root = node_at(f, f->root);
	if (root->entry) {
		memset(&res, 0, sizeof(res));
		resolve_entry(f, root->entry, &res);
		nm.wire[0] = 0;
		nm.len = 1;
		rc = fn(&nm, &res, arg);
	}
	const struct fib_table *t = f->table;
	for (size_t i = 0; i <= t->mask && rc == 0; i++) {
		uint32_t id = (uint32_t)t->slots[i];
		if (t->slots[i] == 0 || id == SLOT_TOMB_ID)
			continue;
		const struct fib_node *n = node_at(f, id);
		if (!n->entry)
			continue;
		memset(&res, 0, sizeof(res));
		resolve_entry(f, n->entry, &res);
		node_name(f, id, &nm);
		res.suffix_labels = (uint8_t)name_label_count(&nm);
		rc = fn(&nm, &res, arg);
	}
	pthread_mutex_unlock(&f->lock);
	return rc;
}

void fib_get_stats(const struct fib *f, struct fib_stats *st)
{
	struct fib *wf = (struct fib *)f;
	pthread_mutex_lock(&wf->lock);
	st->nodes = f->nodes_live;
	st->entries = f->entries;
	st->routesets = f->sets_live;
	st->aggregates = f->aggs_live;
	st->table_slots = f->table->mask + 1;
	st->node_bytes = f->node_bytes;
	pthread_mutex_unlock(&wf->lock);
}
