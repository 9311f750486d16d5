/*
 * The name table: a trie of labels whose nodes live in one open-addressing
 * hash table keyed by the node's whole suffix (docs/ARCHITECTURE.md, lib/fib/,
 * with the measurements behind this layout in docs/BENCHMARKS.md).
 *
 * A node is a 32-byte slot holding its key (wire bytes up to the root,
 * inline up to 23 bytes), its entry and its child count.  A lookup hashes
 * the query's last two labels and probes once (the key's two buckets,
 * fetched together); it goes one label deeper only when that node has
 * children, and shallower only when that suffix does not exist, so the
 * common name costs one probe and two cache lines read at once.
 *
 * A node's entry is a tagged 32-bit reference: the name's own route set,
 * the aggregate it belongs to (paper, Figure 5: the member points at the
 * aggregate's entry, so changing the aggregate's routes changes every
 * member at once), or a small list when it has both or several aggregates.
 *
 * Concurrency: one writer at a time (the FIB serialises writers itself),
 * any number of readers with no lock at all.  Every thread that reads or
 * writes is a registered liburcu QSBR thread, online while it uses the
 * table, announcing quiescent states between batches and going offline
 * while it blocks.  Whatever a lookup returns stays valid until the
 * reader's next quiescent state.  Writers never wait for a grace period:
 * freed memory goes to call_rcu() (which QSBR wants called online).
 */
#ifndef CR_FIB_H
#define CR_FIB_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "name.h"
#include "route.h"

#define FIB_MAX_AGGREGATES_PER_NAME 8
#define FIB_MAX_SETS (1 + FIB_MAX_AGGREGATES_PER_NAME)

struct fib;

struct fib_result {
	uint8_t suffix_offset;  /* where the matched suffix starts in the query's wire form */
	uint8_t suffix_labels;  /* labels in the matched suffix; 0 for a route at the root */
	uint8_t nsets;
	/* the name's own routes first (if any), then its aggregates' in join order */
	const struct routeset *sets[FIB_MAX_SETS];
};

struct fib_stats {
	uint64_t nodes;         /* trie nodes, root and interior ones included */
	uint64_t entries;       /* names that carry routes or memberships */
	uint64_t routesets;     /* distinct interned route sets */
	uint64_t aggregates;
	uint64_t table_slots;
	uint64_t node_bytes;
};

enum fib_error {
	FIB_OK = 0,
	FIB_ERR_NOMEM = -1,
	FIB_ERR_NOT_FOUND = -2,
	FIB_ERR_TOO_MANY_ROUTES = -3,
	FIB_ERR_TOO_MANY_AGGREGATES = -4,       /* name already in FIB_MAX_AGGREGATES_PER_NAME */
	FIB_ERR_BAD_AGGREGATE = -5,
	FIB_ERR_EXISTS = -6,
};
const char *fib_strerror(int err);

struct fib *fib_create(void);
/* Sizes the table for this many names at once, as a full load would. */
int fib_reserve(struct fib *fib, uint64_t names);
/* No reader may still use the table. */
void fib_destroy(struct fib *fib);

/* Readers. */
bool fib_lookup_longest_suffix(const struct fib *fib, const struct name *qname, struct fib_result *res);
bool fib_lookup_exact(const struct fib *fib, const struct name *qname, struct fib_result *res);
/* For show commands: whether the name has routes of its own, and the aggregates it is a member of
 * (up to max names into aggs; their number).  A reader, as the lookups. */
unsigned fib_memberships(const struct fib *fib, const struct name *qname, bool *own, struct name *aggs,
			 unsigned max);
/*
 * Where fib_lookup_longest_suffix() of a name reads first, found from its
 * wire form: for a reader with a batch of names, which fetches every
 * name's buckets back to back before its first lookup (their TLB walks and
 * cache misses overlap, which fetches spread between the lookups, a few
 * names ahead, do not), and then looks each up with its hint, not hashing
 * the name again.  Valid for the table it names, within one read-side
 * critical section.
 */
struct fib_hint {
	const void *table;              /* NULL: none (a name the lookup takes the long way, or refuses) */
	const void *bucket[2];          /* the two buckets of the name's last two labels */
	uint8_t second;                 /* where its next-to-last label starts */
};
/*
 * The hint of the name in wire form at wire (room bytes readable, any
 * case, not yet checked); returns how many buckets it names (0 or 2).
 */
unsigned fib_buckets_wire(const struct fib *fib, const uint8_t *wire, size_t room, struct fib_hint *hint);
/*
 * fib_lookup_longest_suffix() of qname with the hint fib_buckets_wire()
 * made of its very wire form (the same labels, in any case): the same
 * result, with the name neither walked nor hashed when the table is the
 * hint's.
 */
bool fib_lookup_hinted(const struct fib *fib, const struct name *qname, const struct fib_hint *hint,
		       struct fib_result *res);

/* Writers.  count == 0 removes the name's own routes. */
int fib_set_routes(struct fib *fib, const struct name *n, const struct route *routes, unsigned count);
/*
 * Many names' own routes at once (routes[i], counts[i] are names[i]'s), as
 * fib_set_routes one by one but under one lock, with one resize, and the
 * next names' slots fetched while one is changed.  Stops at the first
 * error; *done (if not NULL) says how many were set.
 */
int fib_set_routes_batch(struct fib *fib, const struct name *names, const struct route *const *routes,
			 const unsigned *counts, size_t n, size_t *done);
int fib_set_redirect(struct fib *fib, const struct name *n, const struct name *target);
/* Removes the name's own routes and all its memberships. */
int fib_delete(struct fib *fib, const struct name *n);

/* Aggregates are identified by name; ids are stable while the aggregate exists. */
int fib_aggregate_create(struct fib *fib, const struct name *agg_name, uint32_t *id_out);
int fib_aggregate_find(const struct fib *fib, const struct name *agg_name, uint32_t *id_out);
int fib_aggregate_set_routes(struct fib *fib, uint32_t id, const struct route *routes, unsigned count);
int fib_aggregate_add_member(struct fib *fib, uint32_t id, const struct name *member);
int fib_aggregate_remove_member(struct fib *fib, uint32_t id, const struct name *member);
/*
 * A diff's additions or removals at once: one lock, one resize, and the
 * next members' slots fetched while one is changed (with fib_reserve()
 * first, a million new members load 2.6-3.6x faster than one call a
 * member; a 1% diff applies 1.2-1.4x faster; docs/BENCHMARKS.md).  Adding a member is
 * idempotent; removing a name that is not a member is not an error here.
 * Stops at the first error; *done (if not NULL) says how many were handled.
 */
int fib_aggregate_add_members(struct fib *fib, uint32_t id, const struct name *members, size_t count,
			      size_t *done);
int fib_aggregate_remove_members(struct fib *fib, uint32_t id, const struct name *members, size_t count,
				 size_t *done);
/* Drops the aggregate and every membership in it (walks the table). */
int fib_aggregate_delete(struct fib *fib, uint32_t id);

/*
 * Calls fn for every name that carries an entry, in no particular order.
 * Writer-side: do not modify the table from fn.  Stops when fn returns non-zero.
 */
typedef int (*fib_walk_fn)(const struct name *n, const struct fib_result *entry, void *arg);
int fib_walk(struct fib *fib, fib_walk_fn fn, void *arg);

void fib_get_stats(const struct fib *fib, struct fib_stats *st);

/*
 * Memory a write frees is reused only after an RCU grace period.  Writers
 * hand it over in batches; fib_commit() hands over what is pending (call it
 * after a burst of updates), fib_barrier() also waits until it is reclaimed.
 */
void fib_commit(struct fib *fib);
void fib_barrier(struct fib *fib);

#endif
