/*
 * Origin withdrawals (docs/NBRP.md, "Origin withdrawals"): an origin that
 * withdraws a name says so, with the stamp (origin_seq) of the announcement
 * it withdraws, and a router that hears it drops at once every route for
 * the name that ends at that origin with that stamp or an older one,
 * whoever sent it, instead of trying those stale paths one after another
 * (BGP's path exploration; the remedy is root-cause notification).  A
 * router passes on what it applied with its next UPDATE about the name; a
 * router that had nothing to drop passes nothing on, so it dies out where
 * it has no more effect.
 *
 * This file keeps the ones to pass on until the flush sends them.
 */
#ifndef NBRPD_ORIGIN_WD_H
#define NBRPD_ORIGIN_WD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nbrp.h"

struct rib_entry;

/* The origin's signature over a withdrawal (docs/NBRP.md, Origin withdrawals). */
struct origin_wd_sig {
	uint8_t signer[32];
	uint8_t sig[64];
	uint64_t expiry;
};

struct origin_wd_item {
	struct rib_entry *e;
	uint64_t seq;
	bool has_sig;
	struct origin_wd_sig sig;
	char origin[NBRP_ROUTER_NAME_MAX + 1];
};

struct origin_wd {
	struct origin_wd_item *v;
	size_t n, cap;
	bool sorted;
};

/* Remembers that e's routes from origin up to seq were dropped (ENTRY_ORIGIN_WD set), with the
 * origin's signature if sig is not NULL (passed on with it); false: no memory. */
bool origin_wd_note(struct origin_wd *w, struct rib_entry *e, const char *origin, uint64_t seq,
		    const struct origin_wd_sig *sig);
/* The ones noted for e, one per origin with its newest stamp; *n of them. */
const struct origin_wd_item *origin_wd_for(struct origin_wd *w, const struct rib_entry *e, size_t *n);
/* Forgets them (after the flush), clearing the entries' flags, but those of entries with a flag of keep. */
void origin_wd_clear(struct origin_wd *w, uint8_t keep);
void origin_wd_free(struct origin_wd *w);

#endif
