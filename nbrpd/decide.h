/*
 * The decision (docs/NBRP.md, "Decision"): a pure function over one
 * name's candidate routes, so it is tested alone (tests/unit/test_decide.c).
 * Best first, among usable routes (IP routing reaches the next hop):
 *
 *   higher local preference (local content above everything learned)
 *   shorter effective distance: path length * load-ms-per-hop + load; a
 *     route whose signatures are valid counts its path length alone, its
 *     load (signed by nobody) only breaking a tie (decide_distance)
 *   lower IGP metric to the next hop, then shorter BGP AS path (BIRD)
 *   older route (arrival order)
 *   lower peer name
 *
 * And what a received route is worth before it gets there: a malformed
 * one is treated as a withdrawal of its names (RFC 7606), one with our
 * own name in its path would loop and is dropped the same way.
 */
#ifndef NBRPD_DECIDE_H
#define NBRPD_DECIDE_H

#include <stdbool.h>
#include <stdint.h>

#include "nbrp.h"

struct decide_cand {
	uint32_t local_pref;
	uint64_t distance;              /* decide_distance */
	uint64_t load_tie;              /* a valid signed route's load: after distance */
	uint32_t igp_metric;
	uint32_t as_path_len;
	uint64_t seq;                   /* arrival order: lower is older */
	const char *from;               /* the peer's name; "" for local content */
	bool usable;
};

/*
 * A candidate's distance: path length * load-ms-per-hop + load, or for a
 * route whose signatures are valid, path length * load-ms-per-hop with the
 * load after it.  Its path length is proven, its load is anyone's word: a
 * load of 0 must not make a longer signed path shorter.
 */
void decide_distance(struct decide_cand *c, uint32_t path_len, uint32_t load_ms, uint32_t load_ms_per_hop,
		     bool signed_valid);
/* <0: a is better, >0: b is better; 0 only for the same route. */
int decide_cmp(const struct decide_cand *a, const struct decide_cand *b);
/* The usable candidates, best first, at most keep: indexes into c in order[]; returns how many. */
unsigned decide_rank(const struct decide_cand *c, unsigned n, unsigned keep, unsigned *order);

enum decide_import {
	IMPORT_OK,
	IMPORT_MALFORMED,               /* treat as withdraw; *why says what */
	IMPORT_LOOP,                    /* our name is in the path */
};

enum decide_import decide_import(const Nbrp__Route *r, bool server_mode, const char *self, const char **why);

#endif
