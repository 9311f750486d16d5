/*
 * What peers are told (the Adj-RIB-Out, rde_internal.h).
 *
 * A peer is told a name's exported route unless the route came from that
 * peer or has the peer's name in its path, or the peer is a content
 * server, or the route goes only down and the peer is not below us
 * (roles, RFC 9234), or its export policy denies the name; the path it gets starts
 * with our name, and the next hop is our inrpd.  Load travels load-radius
 * hops, then is sent as 0 (unknown).
 */
#include "rde_internal.h"

bool adjout_to_peer(struct rde *r, struct rib_attrs *a, struct rde_peer *p)
{
	if (!a || p->server_mode || a->k.peer == p)
		return false;           /* a content server is not told routes; nor a peer its own */
	if (a->k.npath + 1u > NBRP_MAX_PATH)
		return false;
	if (role_down_only(a->k.role) && !role_told_all(p->role))
		return false;           /* a route leak */
	struct rde_peer **in_path;
	unsigned n = a->k.npath ? attrs_path_peers(r, a, &in_path) : 0;
	for (unsigned i = 0; i < n; i++)
		if (in_path[i] == p)
			return false;
	return true;
}

bool adjout_allows(struct rde *r, struct rib_attrs *a, const struct rib_entry *e, struct rde_peer *p,
		   const struct nbrpd_policy *export)
{
	if (!adjout_to_peer(r, a, p))
		return false;
	if (nbrpd_policy_open(export))
		return true;
	struct name n;
	rib_entry_name(e, &n);
	return nbrpd_policy_allows(export, &n);
}
