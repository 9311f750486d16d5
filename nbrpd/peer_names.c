/*
 * The RDE's configured peers by name (peer_names.h).
 */
#include <string.h>

#include "hashkey.h"
#include "peer_names.h"
#include "rde_internal.h"

static uint64_t name_hash(const char *name)
{
	return hashkey64(name, strlen(name));
}

int peer_names_init(struct peer_names *t)
{
	return chain_init(&t->c);
}

void peer_names_free(struct peer_names *t)
{
	chain_free(&t->c);
}

struct rde_peer *peer_names_find(const struct peer_names *t, const char *name)
{
	uint64_t h = name_hash(name);
	for (struct chain_node *n = chain_first(&t->c, h); n; n = n->next) {
		struct rde_peer *p = chain_entry(n, struct rde_peer, hlink);
		if (n->hash == h && strcmp(p->name, name) == 0)
			return p;
	}
	return NULL;
}

void peer_names_add(struct peer_names *t, struct rde_peer *p)
{
	(void)chain_add(&t->c, &p->hlink, name_hash(p->name));   /* has buckets: peer_names_init */
}

void peer_names_remove(struct peer_names *t, struct rde_peer *p)
{
	chain_remove(&t->c, &p->hlink);
}
