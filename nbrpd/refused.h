/*
 * Routes refused for their signatures, kept so `nbrc show route NAME` can
 * say why a name has no route (as BIRD's `show route filtered` does):
 * under `signatures require` a refused route is not kept in the RIB.
 *
 * A fixed table of sets of four, indexed by the name's hash under the
 * process secret: a name's refusals by up to four peers, the oldest
 * replaced when a set is full.  Bounded whatever peers send; a refusal is
 * forgotten when the same peer's route for the name is taken.
 */
#ifndef NBRPD_REFUSED_H
#define NBRPD_REFUSED_H

#include <stddef.h>
#include <stdint.h>

#include "name.h"
#include "nbrp.h"

#define REFUSED_WAYS 4

struct refused_entry {
	uint64_t when_s;                /* Unix seconds; 0: free */
	uint8_t state, reason;          /* enum attest_state, enum attest_reason */
	uint8_t len;
	uint8_t wire[NAME_MAX_WIRE];
	char peer[NBRP_ROUTER_NAME_MAX + 1];
};

struct refused {
	struct refused_entry *sets;     /* nsets * REFUSED_WAYS */
	size_t nsets;                   /* a power of two */
	size_t used;
};

/* A table of about `entries` refusals (0: none kept); -1 when out of memory. */
int refused_init(struct refused *t, size_t entries);
void refused_free(struct refused *t);
void refused_note(struct refused *t, const struct name *n, const char *peer, uint8_t state, uint8_t reason,
		  uint64_t now_s);
void refused_forget(struct refused *t, const struct name *n, const char *peer);
/* The name's refusals, newest first, into out (at most REFUSED_WAYS); their number. */
unsigned refused_find(const struct refused *t, const struct name *n, struct refused_entry *out);

#endif
