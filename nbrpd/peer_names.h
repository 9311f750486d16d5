/*
 * The RDE's configured peers by name: a path's router names are looked up
 * here (attr.c), as are peers by the signature stage.  Chained through
 * struct rde_peer's hlink; grows with the peers, so a lookup stays one probe.
 */
#ifndef NBRPD_PEER_NAMES_H
#define NBRPD_PEER_NAMES_H

#include "chain.h"

struct rde_peer;

struct peer_names {
	struct chain_table c;
};

int peer_names_init(struct peer_names *t);
void peer_names_free(struct peer_names *t);
void peer_names_add(struct peer_names *t, struct rde_peer *p);
void peer_names_remove(struct peer_names *t, struct rde_peer *p);
struct rde_peer *peer_names_find(const struct peer_names *t, const char *name);

#endif
