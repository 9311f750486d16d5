/*
 * What IP routing says about the addresses nbrpd depends on: the next hop
 * of every route learned from a peer, every attached content server, and
 * every peer's transport address.  One shared, reference-counted entry
 * per address.
 *
 * The table knows nothing of who uses it: the BIRD monitor registers to
 * hear of new addresses (and asks BIRD at once), the RDE to hear of
 * changes (and decides again the names behind the address).
 */
#ifndef NBRPD_NEXTHOP_H
#define NBRPD_NEXTHOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

struct nexthop {
	struct nexthop *hnext;
	uint32_t refs;
	uint8_t family;
	uint8_t addr[16];
	bool known;                     /* IP routing (BIRD) answered about it */
	bool reachable;                 /* true until IP routing says otherwise */
	uint32_t igp_metric;
	uint32_t as_path_len;
	char protocol[64];              /* the BIRD protocol of the best route */
	uint64_t unreachable_since;     /* uv_now, ms; 0: reachable */
	bool query_pending;             /* asked BIRD, no answer yet */
	void *users;                    /* the RDE's list of route attributes through it */
};

struct nexthop_table;
typedef void (*nexthop_fn)(void *arg, struct nexthop *nh);

struct nexthop_table *nexthop_table_new(uv_loop_t *loop);
void nexthop_table_free(struct nexthop_table *t);
/* New addresses are told to `added` (the BIRD monitor); changes to `changed` (the RDE). */
void nexthop_on_added(struct nexthop_table *t, nexthop_fn added, void *arg);
void nexthop_on_changed(struct nexthop_table *t, nexthop_fn changed, void *arg);

/* Takes a reference on the entry for an address (created if new); NULL when out of memory. */
struct nexthop *nexthop_get(struct nexthop_table *t, int family, const uint8_t *addr);
/* The entry for an address if there is one (no reference taken). */
struct nexthop *nexthop_lookup(struct nexthop_table *t, int family, const uint8_t *addr);
void nexthop_put(struct nexthop_table *t, struct nexthop *nh);
void nexthop_walk(struct nexthop_table *t, nexthop_fn fn, void *arg);
unsigned nexthop_count(const struct nexthop_table *t);
/* What IP routing now says; `changed` hears of it if anything the decision uses changed. */
void nexthop_update(struct nexthop_table *t, struct nexthop *nh, bool reachable, uint32_t igp_metric,
		    uint32_t as_path_len, const char *protocol);
const char *nexthop_format(const struct nexthop *nh, char *buf, size_t len);

#endif
