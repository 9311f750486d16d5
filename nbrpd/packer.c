/*
 * UPDATE packing (packer.h).
 *
 * Names whose routes look the same to the receiver (same path, same load)
 * share one Route in an UPDATE, as the protocol allows: consecutive names
 * in a flush usually came in one UPDATE and go out in one.  An aggregate
 * has a Route of its own, offering the version stored here, to be fetched
 * from our transfer server.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "packer.h"
#include "rde_internal.h"
#include "vec.h"
#include "wqueue.h"

#define BATCH_NAMES     1024    /* names per UPDATE */
#define BATCH_SIGNED    256     /* signed Routes per UPDATE: a name's, or a name set's */
#define BATCH_SET_NAMES ATTEST_SET_MAX_NAMES    /* signed names per UPDATE: a set's whole */
#define BATCH_SET_BYTES (512 * 1024)    /* a set's names and others, at most, per UPDATE */
#define MAX_ATTS        (NBRP_MAX_PATH + 1)

/*
 * One UPDATE under construction, its arrays kept from one UPDATE to the
 * next.  The scalars first, together: an UPDATE of a few names touches
 * their page and the first page of each array it uses, of a megabyte
 * (the simulator has 75,000 packers; sim/net.c).
 */
struct packer {
	struct rde *r;
	packer_emit_fn emit;
	void *arg;
	unsigned sent;
	size_t nnames;
	uint64_t last_sig;              /* of the last Route: sig ^ load */
	bool last_shared;               /* the last Route may take more names */
	bool source_made;               /* source formatted since packer_begin (only an aggregate needs it) */
	struct rde_peer *sign_for;      /* NULL: not signed */
	void *sign_peer;                /* the signer's context for it */
	const struct sig_set *last_set;
	size_t set_bytes, others_need, others_cap;
	ProtobufCBinaryData *others;
	uint8_t *marks;                 /* sig_set_others' */
	size_t marks_cap;
	Nbrp__Update u;
	char source[NBRP_SOURCE_TEXT_MAX];      /* our transfer server, as aggregate_source */
	ProtobufCBinaryData withdrawn[BATCH_NAMES];
	Nbrp__Route *route_ptrs[BATCH_NAMES];
	Nbrp__Route routes[BATCH_NAMES];
	ProtobufCBinaryData names[BATCH_SET_NAMES];
	char *paths[BATCH_NAMES][NBRP_MAX_PATH];
	Nbrp__OriginWithdrawal ows[BATCH_NAMES], *ow_ptrs[BATCH_NAMES];
	ProtobufCBinaryData withdrawn_aggs[BATCH_NAMES];
	char signed_source[BATCH_SIGNED][NBRP_SOURCE_TEXT_MAX];        /* a relayed signed aggregate's */
	Nbrp__Attestation *atts[BATCH_SIGNED][MAX_ATTS];
	/* name sets: each Route's set (NULL: not a set's), its others made when the UPDATE is */
	const struct sig_set *set_of[BATCH_SIGNED];
};

struct packer *packer_new(struct rde *r)
{
	struct packer *pk = calloc(1, sizeof(*pk));
	if (pk)
		pk->r = r;
	return pk;
}

void packer_free(struct packer *pk)
{
	if (!pk)
		return;
	free(pk->others);
	free(pk->marks);
	free(pk);
}

static void reset(struct packer *pk)
{
	nbrp__update__init(&pk->u);
	pk->u.withdrawn = pk->withdrawn;
	pk->u.withdrawn_aggregates = pk->withdrawn_aggs;
	pk->u.routes = pk->route_ptrs;
	pk->u.origin_withdrawals = pk->ow_ptrs;
	pk->nnames = 0;
	pk->last_sig = 0;
	pk->last_shared = false;
	pk->last_set = NULL;
	pk->set_bytes = pk->others_need = 0;
}

/* Each set Route's others: the set's names it does not carry. */
static void fill_others(struct packer *pk)
{
	size_t used = 0;
	for (size_t k = 0; k < pk->u.n_routes; k++) {
		const struct sig_set *set = pk->set_of[k];
		if (!set)
			continue;
		Nbrp__Route *rt = &pk->routes[k];
		rt->set_others = pk->others + used;
		rt->n_set_others = sig_set_others(set, rt->names, rt->n_names, rt->set_others, &pk->marks,
						   &pk->marks_cap);
		sig_set_digest(set, rt);
		used += rt->n_set_others;
		pk->set_of[k] = NULL;
	}
}

static void send_batch(struct packer *pk)
{
	if (pk->u.n_withdrawn == 0 && pk->u.n_routes == 0 && pk->u.n_withdrawn_aggregates == 0 &&
	    pk->u.n_origin_withdrawals == 0)
		return;
	if (pk->others_need)
		fill_others(pk);
	Nbrp__Message m = NBRP__MESSAGE__INIT;
	m.body_case = NBRP__MESSAGE__BODY_UPDATE;
	m.update = &pk->u;
	size_t len;
	uint8_t *frame = nbrp_encode(&m, &len);
	struct wq_buf *b = wq_buf_adopt(frame, len);
	unsigned names = (unsigned)pk->nnames;
	unsigned withdrawn = (unsigned)(pk->u.n_withdrawn + pk->u.n_withdrawn_aggregates);
	reset(pk);
	if (!b)
		return;                 /* out of memory: the session layer notices on its next write */
	pk->emit(pk->arg, b, names, withdrawn);
	wq_buf_put(b);
	pk->sent++;
}

void packer_begin(struct packer *pk, packer_emit_fn emit, void *arg)
{
	pk->emit = emit;
	pk->arg = arg;
	pk->sent = 0;
	pk->sign_for = NULL;
	pk->source_made = false;
	reset(pk);
}

void packer_withdraw(struct packer *pk, const struct rib_entry *e)
{
	Nbrp__Update *u = &pk->u;
	if (entry_is_aggregate(e)) {
		u->withdrawn_aggregates[u->n_withdrawn_aggregates].data = (uint8_t *)e->wire + 1;
		u->withdrawn_aggregates[u->n_withdrawn_aggregates].len = e->len - 1u;
		if (++u->n_withdrawn_aggregates == BATCH_NAMES)
			send_batch(pk);
		return;
	}
	u->withdrawn[u->n_withdrawn].data = (uint8_t *)e->wire;
	u->withdrawn[u->n_withdrawn].len = e->len;
	if (++u->n_withdrawn == BATCH_NAMES)
		send_batch(pk);
}

void packer_origin_withdrawals(struct packer *pk, const struct rib_entry *e)
{
	size_t n;
	const struct origin_wd_item *it = origin_wd_for(&pk->r->owd, e, &n);
	Nbrp__Update *u = &pk->u;
	for (size_t i = 0; i < n; i++) {
		if (pk->sign_for && !it[i].has_sig)
			continue;       /* a signed peer would not take it on our word */
		Nbrp__OriginWithdrawal *w = &pk->ows[u->n_origin_withdrawals];
		nbrp__origin_withdrawal__init(w);
		w->name.data = (uint8_t *)e->wire;
		w->name.len = e->len;
		w->origin = (char *)it[i].origin;
		w->origin_seq = it[i].seq;
		if (it[i].has_sig) {
			w->signer.data = (uint8_t *)it[i].sig.signer;
			w->signer.len = sizeof(it[i].sig.signer);
			w->signature.data = (uint8_t *)it[i].sig.sig;
			w->signature.len = sizeof(it[i].sig.sig);
			w->expiry = it[i].sig.expiry;
		}
		u->origin_withdrawals[u->n_origin_withdrawals++] = w;
		if (u->n_origin_withdrawals == BATCH_NAMES)
			send_batch(pk);
	}
}

void packer_sign_for(struct packer *pk, struct rde_peer *p)
{
	const struct rde_signer *sg = pk->r->signer;
	pk->sign_for = p;
	pk->sign_peer = sg->export_peer(sg->arg, p);
}

/* A new Route for name; out of line, so that a name of the same Route as the last costs no more
 * than a few stores (most names: consecutive names of a flush usually share their attributes).
 * g: an aggregate's, with the version stored here; atts: the attestations for a signed peer;
 * digest: the member digest our own aggregate's were signed over. */
static __attribute__((noinline)) void new_route(struct packer *pk, ProtobufCBinaryData *name,
						const struct rib_attrs *a, uint32_t load, uint64_t sig,
						const struct rde_agg *g, Nbrp__Attestation **atts, int natts,
						const uint8_t *digest)
{
	Nbrp__Update *u = &pk->u;
	const struct nbrpd_config *cfg = pk->r->cfg;
	size_t k = u->n_routes;
	Nbrp__Route *rt = &pk->routes[k];
	nbrp__route__init(rt);
	rt->n_names = 1;
	rt->names = name;
	pk->last_sig = sig;
	pk->last_shared = !g && !pk->sign_for;    /* an aggregate's or a signed name's Route has one name */
	pk->last_set = NULL;
	if (g) {
		if (!pk->source_made && cfg->has_transfer)
			nbrp_aggregate_source_format(&cfg->transfer, pk->source, sizeof(pk->source));
		pk->source_made = true;
		rt->aggregate = *name;
		rt->aggregate_version = g->version;
		rt->aggregate_source = pk->source;
	}
	const struct ip_endpoint *nh = &cfg->inrp;
	rt->next_hop.data = (uint8_t *)nh->addr;
	rt->next_hop.len = nh->family == AF_INET ? 4 : 16;
	rt->next_hop_port = nh->port;
	rt->load_ms = load;
	rt->origin_seq = a->k.origin_seq;
	char **path = pk->paths[k];
	path[0] = (char *)cfg->router_name;
	const char *s = a->path;
	for (unsigned i = 0; i < a->k.npath; i++) {
		path[i + 1] = (char *)s;
		s += strlen(s) + 1;
	}
	rt->n_path = a->k.npath + 1u;
	rt->path = path;
	if (natts > 0) {
		rt->attestations = atts;
		rt->n_attestations = (size_t)natts;
		if (g) {
			/* the member digest it was signed with: the received chain's, or ours (the export's) */
			if (a->chain && a->chain->digest.len) {
				rt->aggregate_digest = a->chain->digest;
			} else if (digest) {
				rt->aggregate_digest.data = (uint8_t *)digest;
				rt->aggregate_digest.len = ATTEST_DIGEST_LEN;
			}
			/* a signed aggregate names the source its origin signed, ours or the one received */
			if (a->k.peer)
				rt->aggregate_source = (char *)nbrp_aggregate_source_format(
					&a->k.agg_source, pk->signed_source[k], sizeof(pk->signed_source[k]));
			rt->aggregate_signed_source = rt->aggregate_source;
		}
	}
	u->routes[k] = rt;
	u->n_routes++;
}

/* A set's names and others, at most (the set's size), in bytes on the wire. */
static size_t set_wire(const struct sig_set *set, size_t *n)
{
	size_t bytes;
	*n = sig_set_size(set, &bytes);
	return bytes + 3 * *n;          /* a field's tag and length */
}

/* Room in this UPDATE for a Route of the set: the UPDATE is sent first if it has not. */
static void set_room(struct packer *pk, const struct sig_set *set)
{
	size_t n, bytes = set_wire(set, &n);
	if (pk->u.n_routes && (pk->set_bytes + bytes > BATCH_SET_BYTES || pk->nnames + n > BATCH_SET_NAMES))
		send_batch(pk);
}

/* Keeps the room made for a set Route's others; false if out of memory. */
static bool set_reserve(struct packer *pk, const struct sig_set *set)
{
	size_t n, bytes = set_wire(set, &n);
	if (VEC_RESERVE(pk->others, pk->others_cap, pk->others_need + n) < 0)
		return false;
	pk->set_bytes += bytes;
	pk->others_need += n;
	return true;
}

/* A Route of its own: an aggregate's (with the version stored here; none: not exported, export_now),
 * or a name told to a peer that wants signatures (not yet if its hop is being signed); a name
 * set's Route takes the set's names that follow it (packer_advertise). */
static __attribute__((noinline)) void own_route(struct packer *pk, const struct rib_entry *e, const struct rib_attrs *a,
						uint32_t load, const struct sig_set *set)
{
	Nbrp__Attestation **atts = NULL;
	int natts = 0;
	uint64_t seq = 0;
	const uint8_t *digest = NULL;
	if (pk->sign_for) {
		if (set)
			set_room(pk, set);
		atts = pk->atts[pk->u.n_routes];
		natts = pk->r->signer->export(pk->sign_peer, e, a, atts, MAX_ATTS, &seq, &digest);
		if (natts < 0)
			return;         /* sent when signed */
		if (set && natts > 0 && !set_reserve(pk, set))
			natts = 0;      /* out of memory for its others: sent unsigned */
	}
	const struct rde_agg *g = NULL;
	if (entry_is_aggregate(e) && !(g = agg_table_of(&pk->r->aggs, e)))
		return;
	ProtobufCBinaryData *name = &pk->names[pk->nnames];
	name->data = (uint8_t *)e->wire + (g != NULL);
	name->len = e->len - (g != NULL);
	new_route(pk, name, a, load, a->sig ^ ((uint64_t)load << 1), g, atts, natts, digest);
	if (natts > 0)
		pk->routes[pk->u.n_routes - 1].origin_seq = seq;  /* the one signed */
	if (set && natts > 0) {
		pk->set_of[pk->u.n_routes - 1] = set;
		pk->last_set = set;
	}
	if (++pk->nnames == (pk->sign_for ? BATCH_SET_NAMES : BATCH_NAMES))
		send_batch(pk);
}

void packer_advertise(struct packer *pk, const struct rib_entry *e, const struct rib_attrs *a, uint32_t load)
{
	Nbrp__Update *u = &pk->u;
	uint64_t sig = a->sig ^ ((uint64_t)load << 1);
	if (__builtin_expect(entry_is_aggregate(e) || pk->sign_for, 0)) {
		const struct sig_set *set = pk->sign_for ? pk->r->signer->set_of(pk->r->signer->arg, e, a) : NULL;
		if (set && pk->last_set == set && sig == pk->last_sig && pk->nnames < BATCH_SET_NAMES) {
			/* a name of the set the last Route is for: it joins it, under the same signatures */
			pk->names[pk->nnames].data = (uint8_t *)e->wire;
			pk->names[pk->nnames].len = e->len;
			u->routes[u->n_routes - 1]->n_names++;
			pk->nnames++;
			return;         /* its room was made for the whole set */
		}
		if (pk->sign_for && pk->u.n_routes == BATCH_SIGNED)
			send_batch(pk);
		own_route(pk, e, a, load, set);
		return;
	}
	ProtobufCBinaryData *name = &pk->names[pk->nnames];
	name->data = (uint8_t *)e->wire;
	name->len = e->len;
	if (pk->last_shared && sig == pk->last_sig)
		u->routes[u->n_routes - 1]->n_names++;  /* the same attributes as the Route before */
	else
		new_route(pk, name, a, load, sig, NULL, NULL, 0, NULL);
	if (++pk->nnames == BATCH_NAMES)
		send_batch(pk);
}

unsigned packer_end(struct packer *pk)
{
	send_batch(pk);
	return pk->sent;
}

struct wq_buf *packer_end_of_rib(void)
{
	Nbrp__Message m = NBRP__MESSAGE__INIT;
	Nbrp__EndOfRib eor = NBRP__END_OF_RIB__INIT;
	m.body_case = NBRP__MESSAGE__BODY_END_OF_RIB;
	m.end_of_rib = &eor;
	size_t len;
	uint8_t *frame = nbrp_encode(&m, &len);
	return wq_buf_adopt(frame, len);
}
