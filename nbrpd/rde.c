/*
 * The RDE (rde.h): peers as the RDE sees them, UPDATEs in, the decision
 * applied, whole-table jobs with a budget per loop turn, and the flush
 * that tells peers and inrpd what changed.
 *
 * Once per loop turn (a libuv check handle): the jobs run until their
 * budget is spent, then the flush.  An idle handle keeps the loop from
 * blocking in poll while a job can run; a job for a peer whose session is
 * full waits for rde_peer_drained.
 *
 * The flush sends each changed name once per update group: every
 * established peer with no export policy, no dump or re-export under way,
 * and not excluded from any of this flush's names (their source, or named
 * in their path) gets the very same encoded UPDATEs as the others of its
 * export class, one buffer shared by all their write queues: peers told
 * every route, and peers told only our own and our customers' (roles,
 * adjout.c).  Other peers get UPDATEs of their own.
 *
 * With an update-delay, peers are told of the changed names only once it
 * is over after the first (inrpd at once): what changed meanwhile leaves
 * in one flush, each name as it is then.  A timer wakes the loop for it;
 * rde_wakeup says when, for sim/, whose loop is never run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aggstore.h"
#include "decide.h"
#include "log.h"
#include "nexthop.h"
#include "packer.h"
#include "rde_internal.h"
#include "vec.h"
#include "wqueue.h"

#define JOB_BUDGET_ENTRIES      2048    /* entries visited by jobs in one loop turn */
#define JOB_BUDGET_NS           (4 * 1000 * 1000)
#define INPUT_BUDGET            2048    /* names changed by UPDATEs in one loop turn, about */
#define GROW_BUDGET_BUCKETS     2048    /* buckets of a table doubling moved in one loop turn */

enum job_kind { JOB_DUMP, JOB_REEXPORT, JOB_PURGE, JOB_REDECIDE, JOB_NEXTHOP, JOB_UNINDEX };

struct rde_job {
	struct rde_job *next;
	enum job_kind kind;
	struct rde_peer *peer;          /* DUMP, REEXPORT; PURGE holds a reference */
	uint32_t below;                 /* PURGE: routes of sessions before this one */
	uint64_t done;
	struct rib_cursor cur;          /* PURGE, REDECIDE (DUMP, REEXPORT: the peer's) */
	struct nexthop *nh;             /* NEXTHOP: the attributes through it, each held */
	struct rib_attrs **attrs;
	uint32_t nattrs, ai, ei;
	struct rib_entry **ents;        /* UNINDEX: index slots to let go of */
	uint32_t nents;
};

static void schedule(struct rde *r);

static uint32_t now_ms(const struct rde *r)
{
	return (uint32_t)(uv_now(r->loop) - r->start_ms);
}

/* ---- aggregates' entries ---- */

/* The table key of an aggregate's entry (rib.h); len at most NBRP_AGGREGATE_NAME_MAX. */
static size_t agg_key(uint8_t key[NAME_MAX_WIRE], const uint8_t *wire, size_t len)
{
	key[0] = AGG_KEY_MARK;
	memcpy(key + 1, wire, len);
	return len + 1;
}

/* ---- the decision applied to an entry ---- */

static bool route_usable(const struct rib_route *rt)
{
	return !rt->a->nh || rt->a->nh->reachable;
}

static void cand_of(const struct rde *r, const struct rib_route *rt, struct decide_cand *c)
{
	const struct rib_attrs *a = rt->a;
	c->local_pref = a->k.local_pref;
	decide_distance(c, a->k.npath, a->k.load_ms, r->cfg->load_ms_per_hop, a->k.sig_state == ATTEST_VALID + 1);
	c->igp_metric = a->nh ? a->nh->igp_metric : 0;
	c->as_path_len = a->nh ? a->nh->as_path_len : 0;
	c->seq = rt->seq;
	c->from = a->k.peer ? a->k.peer->name : "";
	c->usable = route_usable(rt);
}

/* Ranks two routes or more (out of line: decide's usual case is one). */
static __attribute__((noinline)) void rank_routes(struct rde *r, struct rib_entry *e)
{
	struct rank_scratch *sc = &r->rank;
	unsigned order[ROUTESET_MAX_ROUTES], n = 0;
	for (struct rib_route *rt = e->routes; rt; rt = rt->next) {
		rt->rank = 0;
		if (VEC_RESERVE(sc->cands, sc->cands_cap, n + 1) < 0 ||
		    VEC_RESERVE(sc->routes, sc->routes_cap, n + 1) < 0)
			break;  /* out of memory: ranked among those seen */
		sc->routes[n] = rt;
		cand_of(r, rt, &sc->cands[n++]);
	}
	unsigned keep = r->cfg->max_routes < ROUTESET_MAX_ROUTES ? r->cfg->max_routes : ROUTESET_MAX_ROUTES;
	unsigned ranked = decide_rank(sc->cands, n, keep, order);
	for (unsigned i = 0; i < ranked; i++)
		sc->routes[order[i]]->rank = i + 1;
}

/* Ranks the usable routes, best first, and marks the entry for the next flush. */
static inline void decide(struct rde *r, struct rib_entry *e)
{
	struct rib_route *only = e->routes;
	if (only && only->next)
		rank_routes(r, e);
	else if (only)
		only->rank = route_usable(only);        /* none or one, the usual cases: nothing to compare */
	rde_mark_dirty(r, e);
}

static const struct rib_route *best_route(const struct rib_entry *e)
{
	for (const struct rib_route *rt = e->routes; rt; rt = rt->next)
		if (rt->rank == 1)
			return rt;
	return NULL;
}

static void route_free(struct rde *r, struct rib_route *rt)
{
	if (!rt)
		return;
	rt->a->nroutes--;
	attrs_put(r, rt->a);
	slab_free(&r->routes, rt);
}

/* Installs rt (its attributes referenced for it) in e. */
static void route_install(struct rde *r, struct rib_entry *e, struct rib_route *rt)
{
	if (!e->routes)
		r->rib.names++;
	rt->next = e->routes;
	e->routes = rt;
	rt->a->nroutes++;
	attrs_index(r, rt->a, e);
}

static struct rib_route *route_remove(struct rde *r, struct rib_entry *e, const struct rde_peer *p)
{
	struct rib_route *rt = route_take(e, p);
	if (rt && !e->routes)
		r->rib.names--;
	return rt;
}

/* ---- jobs ---- */

static struct rde_job *job_new(struct rde *r, enum job_kind kind, struct rde_peer *p)
{
	struct rde_job *j = calloc(1, sizeof(*j));
	if (!j) {
		log_err("out of memory for a table job");
		return NULL;
	}
	j->kind = kind;
	j->peer = p;
	struct rde_job **pp = &r->jobs;
	while (*pp)
		pp = &(*pp)->next;
	*pp = j;
	r->njobs++;
	schedule(r);
	return j;
}

static void job_free(struct rde *r, struct rde_job *j)
{
	for (struct rde_job **pp = &r->jobs; *pp; pp = &(*pp)->next)
		if (*pp == j) {
			*pp = j->next;
			break;
		}
	r->njobs--;
	for (uint32_t i = 0; i < j->nattrs; i++) {
		j->attrs[i]->walkers--;
		attrs_put(r, j->attrs[i]);
	}
	free(j->attrs);
	if (j->ents)
		attrs_unindex(r, j->ents + j->ei, j->nents - j->ei);   /* at shutdown: the rest at once */
	free(j->ents);
	if (j->nh)
		nexthop_put(r->nexthops, j->nh);
	if (j->kind == JOB_PURGE && --j->peer->refs == 0)
		free(j->peer);
	free(j);
}

static void unindex_later(struct rde *r, struct rib_entry **ents, uint32_t n)
{
	struct rde_job *j = job_new(r, JOB_UNINDEX, NULL);
	if (!j) {
		attrs_unindex(r, ents, n);
		free(ents);
		return;
	}
	j->ents = ents;
	j->nents = n;
}

static void cancel_peer_jobs(struct rde *r, struct rde_peer *p)
{
	struct rde_job *j = r->jobs, *n;
	for (; j; j = n) {
		n = j->next;
		if ((j->kind == JOB_DUMP || j->kind == JOB_REEXPORT) && j->peer == p)
			job_free(r, j);
	}
	p->dumping = p->reexporting = false;
	if (p->export_next_set) {
		free(p->export.rules);
		p->export = p->export_next;
		p->export_next_set = false;
	}
	free(p->export_old.rules);
	memset(&p->export_old, 0, sizeof(p->export_old));
}

/* ---- peers ---- */

static int policy_copy(struct nbrpd_policy *dst, const struct nbrpd_policy *src)
{
	*dst = *src;
	dst->rules = NULL;
	if (src->nrules) {
		dst->rules = malloc(src->nrules * sizeof(*src->rules));
		if (!dst->rules) {
			dst->nrules = 0;
			return -1;
		}
		memcpy(dst->rules, src->rules, src->nrules * sizeof(*src->rules));
	}
	return 0;
}

static void peer_set_config(struct rde_peer *p, const struct nbrpd_peer_config *pc)
{
	p->local_pref = pc->local_pref;
	p->max_names = pc->max_names;
	p->max_action = pc->max_action;
	p->server_mode = pc->server_mode;
	p->role_conf = pc->role;
	if (!p->up)
		p->role = p->role_conf;
	free(p->import.rules);
	if (policy_copy(&p->import, &pc->import) < 0)
		log_err("peer %s: out of memory for its import policy", p->name);
}

struct rde_peer *rde_peer_add(struct rde *r, const struct nbrpd_peer_config *pc, void *owner)
{
	size_t len = strnlen(pc->name, NBRP_ROUTER_NAME_MAX);
	struct rde_peer *p = calloc(1, sizeof(*p) + len + 1);
	if (!p)
		return NULL;
	if (VEC_RESERVE(r->peers, r->peers_cap, r->npeers + 1) < 0) {
		free(p);
		return NULL;
	}
	p->rde = r;
	p->owner = owner;
	memcpy(p->name, pc->name, len);
	p->refs = 1;
	p->gen = 1;
	p->configured = true;
	peer_set_config(p, pc);
	if (policy_copy(&p->export, &pc->export) < 0)
		log_err("peer %s: out of memory for its export policy", p->name);
	r->peers[r->npeers++] = p;
	peer_names_add(&r->by_name, p);
	r->peers_gen++;
	return p;
}

void rde_peer_configure(struct rde_peer *p, const struct nbrpd_peer_config *pc)
{
	struct rde *r = p->rde;
	bool server_changed = p->server_mode != pc->server_mode;
	peer_set_config(p, pc);
	const struct nbrpd_policy *current = p->export_next_set ? &p->export_next : &p->export;
	if (nbrpd_policy_equal(current, &pc->export) && !server_changed)
		return;
	if (p->export_next_set)
		free(p->export_next.rules);
	policy_copy(&p->export_next, &pc->export);
	p->export_next_set = true;
	if (!p->up) {
		cancel_peer_jobs(r, p);         /* takes the new policy now */
		return;
	}
	for (struct rde_job *j = r->jobs; j; j = j->next)
		if (j->kind == JOB_REEXPORT && j->peer == p)
			return;                 /* the running job takes it up when it is done */
	job_new(r, JOB_REEXPORT, p);
}

static void purge(struct rde *r, struct rde_peer *p, uint32_t below)
{
	struct rde_job *j = job_new(r, JOB_PURGE, p);
	if (!j)
		return;
	j->below = below;
	p->refs++;
	rib_cursor_start(&r->rib, &j->cur);
}

void rde_peer_remove(struct rde_peer *p)
{
	struct rde *r = p->rde;
	cancel_peer_jobs(r, p);
	p->up = false;
	p->configured = false;
	p->owner = NULL;
	peer_names_remove(&r->by_name, p);
	for (unsigned i = 0; i < r->npeers; i++)
		if (r->peers[i] == p) {
			r->peers[i] = r->peers[--r->npeers];
			break;
		}
	r->peers_gen++;
	p->gen++;
	purge(r, p, p->gen + 1);
	free(p->import.rules);
	free(p->export.rules);
	memset(&p->import, 0, sizeof(p->import));
	memset(&p->export, 0, sizeof(p->export));
	if (--p->refs == 0)
		free(p);
}

void rde_peer_eor(struct rde_peer *p)
{
	const struct rde_signer *sg = p->rde->signer;
	if (!p->eor_owed || !p->up || (sg && sg->export_pending(sg->arg, p)))
		return;
	p->eor_owed = false;
	struct wq_buf *eor = packer_end_of_rib();
	if (eor) {
		p->rde->ops.send(p->rde->ops.arg, p->owner, eor);
		wq_buf_put(eor);
	}
}

void rde_peer_up(struct rde_peer *p)
{
	struct rde *r = p->rde;
	cancel_peer_jobs(r, p);
	if (!p->up)
		p->role = p->role_conf;         /* a session's role is the one it started with */
	p->up = true;
	p->max_warned = false;
	p->eor_owed = false;
	p->dumping = true;
	rib_cursor_start(&r->rib, &p->dump);
	job_new(r, JOB_DUMP, p);
}

void rde_peer_refresh(struct rde_peer *p)
{
	if (p->up)
		rde_peer_up(p);
}

void rde_peer_down(struct rde_peer *p, bool keep_stale)
{
	struct rde *r = p->rde;
	cancel_peer_jobs(r, p);
	p->up = false;
	p->gen++;                       /* what it said so far is stale */
	if (!keep_stale)
		purge(r, p, p->gen);
}

void rde_peer_sweep(struct rde_peer *p)
{
	purge(p->rde, p, p->gen);
}

void rde_peer_drained(struct rde_peer *p)
{
	if (p->dumping || p->reexporting)
		schedule(p->rde);
}

bool rde_busy(struct rde *r)
{
	if (r->ops.fib_behind && r->ops.fib_behind(r->ops.arg))
		return true;            /* until inrpd catches up: rde_input_resume */
	if (r->dirty.n < INPUT_BUDGET)
		return false;
	r->input_paused = true;
	schedule(r);
	return true;
}

void rde_peer_stats(const struct rde_peer *p, struct rde_peer_stats *out)
{
	out->names = p->names;
	out->updates_out = p->updates_out;
	out->withdrawn_in = p->withdrawn_in;
	out->bad_routes = p->bad_routes;
	out->names_in = p->names_in;
	out->names_out = p->names_out;
	out->withdrawn_out = p->withdrawn_out;
	out->owd_refused = p->owd_refused;
	out->dumping = p->dumping;
}

/* ---- UPDATEs in ---- */

static void withdraw_name(struct rde *r, struct rde_peer *p, const uint8_t *wire, size_t len)
{
	struct rib_entry *e = rib_lookup(&r->rib, wire, len, rib_hash(wire, len));
	struct rib_route *old = e ? route_remove(r, e, p) : NULL;
	if (!old)
		return;
	route_free(r, old);
	p->names--;
	decide(r, e);
}

/*
 * origin withdrew its announcement of the name up to stamp seq, says peer
 * from.  Signed by the origin's key and checked (key): every route whose
 * valid chain that key signed with that stamp or an older one goes,
 * whoever sent it, and older announcements of that key are refused from
 * now on (the signer's `withdrawn`).  Unsigned (or as well, from a peer with
 * signatures off: by_name): every route of a peer with signatures off that
 * ends at origin with that stamp or an older one goes; routes of peers with
 * signatures on that it would have dropped stay (counted for an unsigned
 * one).  Passed on with the name's next UPDATE (origin_wd.h), with its
 * signature (sig) if it has one.
 */
static void origin_withdrawn(struct rde *r, struct rde_peer *from, const uint8_t *wire, size_t len,
			     const char *origin, uint64_t seq, const struct origin_wd_sig *sig, bool key,
			     bool by_name)
{
	struct rib_entry *e = rib_lookup(&r->rib, wire, len, rib_hash(wire, len));
	bool dropped = false;
	unsigned kept = 0;
	for (struct rib_route *rt = e ? e->routes : NULL, *next; rt; rt = next) {
		next = rt->next;
		struct rde_peer *q = rt->a->k.peer;
		if (!q || !rt->a->k.origin_seq || rt->a->k.origin_seq > seq)
			continue;
		const uint8_t *ok = key && rt->a->k.sig_state == ATTEST_VALID + 1 ? attrs_chain_origin(e, rt->a) : NULL;
		if (!ok || memcmp(ok, sig->signer, sizeof(sig->signer)) != 0) {
			const char *o = attrs_origin(rt->a);
			if (!by_name || !o || strcmp(o, origin) != 0)
				continue;
			if (q->sig != SIG_OFF) {
				kept += !key;
				continue;
			}
		}
		route_free(r, route_remove(r, e, q));
		q->names--;
		dropped = true;
	}
	if (key)
		r->signer->withdrawn(r->signer->arg, wire, len, sig->signer, seq, sig->expiry);
	if (kept) {
		from->owd_refused += kept;
		uint64_t now = uv_now(r->loop);
		if (now - from->owd_log_ms >= 1000) {   /* a line a second: the counter has the rest */
			char name[NAME_MAX_TEXT];
			struct name n = { .len = (uint8_t)len };
			memcpy(n.wire, wire, len);
			name_to_text(&n, name, sizeof(name));
			log_warn("peer %s: origin withdrawal of %s by %s (stamp %llu) not applied to %u routes of "
				 "peers with signatures on: it is unsigned (%llu so far)", from->name, name, origin,
				 (unsigned long long)seq, kept, (unsigned long long)from->owd_refused);
			from->owd_log_ms = now;
		}
	}
	if (!dropped)
		return;
	decide(r, e);
	if (!origin_wd_note(&r->owd, e, origin, seq, sig))
		log_err("out of memory keeping an origin withdrawal to pass on");
}

/*
 * Our own announcement of e, stamped seq, is withdrawn: peers hear it as
 * an origin withdrawal.  With a key, signed, and for every stamp we have
 * given so far (a set of our names is signed with a stamp of its own,
 * newer than its names'): the next announcement gets a newer one.
 */
static void own_withdrawn(struct rde *r, struct rib_entry *e, uint64_t seq)
{
	struct origin_wd_sig sig;
	bool signed_ = seq && !entry_is_aggregate(e) && r->signer &&
		       r->signer->sign_withdrawal(r->signer->arg, e->wire, e->len, r->last_stamp, &sig);
	if (signed_)
		seq = r->last_stamp;
	if (seq && !entry_is_aggregate(e) && !origin_wd_note(&r->owd, e, r->cfg->router_name, seq,
							      signed_ ? &sig : NULL))
		log_err("out of memory keeping an origin withdrawal to pass on");
	if (seq == r->last_stamp)
		r->stamp_flush = r->flush_no - 1;      /* announced again: a newer stamp */
}

/*
 * The stamp of an announcement of ours: milliseconds of the wall clock,
 * so a restarted router's announcements are newer than what it withdrew
 * before.  Announcements of one flush share it (their names share a
 * Route); a later flush's are newer.
 */
static uint64_t next_stamp(struct rde *r)
{
	if (r->last_stamp && r->stamp_flush == r->flush_no)
		return r->last_stamp;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
	r->last_stamp = ms > r->last_stamp ? ms : r->last_stamp + 1;
	r->stamp_flush = r->flush_no;
	return r->last_stamp;
}

uint64_t rde_stamp(struct rde *r)
{
	return next_stamp(r);
}

/* A check's part of the attributes: its state, and for `prefer` a local preference. */
static void attrs_check(const struct rde_peer *p, const struct attest_job *j, struct rib_attrs_key *k)
{
	k->sig_state = (uint8_t)(j->state + 1);
	k->sig_reason = j->state == ATTEST_INVALID ? (uint8_t)j->reason : 0;
	/* a valid chain is its route's own: what it says is passed on */
	if (j->state == ATTEST_VALID)
		memcpy(k->sig_head, j->head, sizeof(k->sig_head));
	if (p->sig == SIG_PREFER && j->state != ATTEST_VALID)
		k->local_pref = 0;      /* below every valid route of a peer with a preference above 0 */
}

/* The attributes of an UPDATE's Route, interned, with a reference for the UPDATE. */
static struct rib_attrs *attrs_from_update(struct rde *r, struct rde_peer *p, const Nbrp__Route *rt,
					   const struct attest_job *check)
{
	char path[NBRP_MAX_PATH * (NBRP_ROUTER_NAME_MAX + 1)];
	size_t bytes = 0;
	for (size_t i = 0; i < rt->n_path; i++) {
		size_t l = strlen(rt->path[i]) + 1;
		memcpy(path + bytes, rt->path[i], l);
		bytes += l;
	}
	struct rib_attrs_key k;
	memset(&k, 0, sizeof(k));
	k.peer = p;
	k.gen = p->gen;
	k.server = p->server_mode;
	k.role = (uint8_t)p->role;
	k.local_pref = p->local_pref;
	k.load_ms = rt->load_ms;
	k.next_hop.family = rt->next_hop.len == 4 ? AF_INET : AF_INET6;
	memcpy(k.next_hop.addr, rt->next_hop.data, rt->next_hop.len);
	k.next_hop.port = (uint16_t)rt->next_hop_port;
	k.npath = (uint8_t)rt->n_path;
	k.path_bytes = (uint16_t)bytes;
	k.origin_seq = rt->origin_seq;
	if (rt->aggregate.len) {
		k.agg_version = (uint32_t)rt->aggregate_version;
		nbrp_aggregate_source_parse(rt->aggregate_source, &k.agg_source);   /* checked */
	}
	if (check)
		attrs_check(p, check, &k);
	if (check && check->reason == ATTEST_UNSIGNED_SOURCE)
		nbrp_aggregate_source_parse(rt->aggregate_signed_source, &k.agg_source);   /* the one signed, checked */
	return attrs_get(r, &k, path);
}

/* Names an aggregate's members count for max-names: the members of the aggregates it offers. */
static uint64_t peer_aggregate_members(const struct rde *r, const struct rde_peer *p)
{
	uint64_t n = 0;
	uint8_t key[NAME_MAX_WIRE];
	for (const struct rde_agg *g = agg_table_next(&r->aggs, NULL); g; g = agg_table_next(&r->aggs, g)) {
		size_t len = agg_key(key, g->n.wire, g->n.len);
		const struct rib_entry *e = rib_lookup(&r->rib, key, len, rib_hash(key, len));
		for (const struct rib_route *rt = e ? e->routes : NULL; rt; rt = rt->next)
			if (rt->a->k.peer == p)
				n += g->members;
	}
	return n;
}

/*
 * The hash of a Route's name k (hashed three names ago), with the memory
 * asked for the chains of the names after it, each stage once the one
 * before has come: k + 3's bucket, k + 2's first entry, k + 1's second.  A
 * name takes a few hundred nanoseconds, so a name or two ahead is enough to
 * hide a miss in a table far larger than the caches.
 */
static inline uint32_t hash_ahead(const struct rib *t, const Nbrp__Route *rt, size_t k, uint32_t ring[4])
{
	const ProtobufCBinaryData *names = rt->names;
	if (k == 0) {
		for (size_t j = 0; j < 3 && j < rt->n_names; j++) {
			ring[j] = rib_hash(names[j].data, names[j].len);
			rib_prefetch_bucket(t, ring[j]);
		}
	}
	if (k + 3 < rt->n_names) {
		ring[(k + 3) & 3] = rib_hash(names[k + 3].data, names[k + 3].len);
		rib_prefetch_bucket(t, ring[(k + 3) & 3]);
	}
	if (k + 2 < rt->n_names)
		rib_prefetch_chain(t, ring[(k + 2) & 3]);
	if (k + 1 < rt->n_names) {
		struct rib_entry *e = *rib_chain(t, ring[(k + 1) & 3]);
		if (e)
			__builtin_prefetch(e->hnext);
	}
	return ring[k & 3];
}

static bool import_allows(const struct rde_peer *p, const ProtobufCBinaryData *b)
{
	struct name n;
	n.len = (uint8_t)b->len;
	memcpy(n.wire, b->data, b->len);
	return nbrpd_policy_allows(&p->import, &n);
}

static void notify(struct rde *r, struct rde_peer *p, uint8_t code, uint8_t sub, const char *text)
{
	if (p->owner)
		r->ops.notify(r->ops.arg, p->owner, code, sub, text);
}

void rde_peer_update(struct rde_peer *p, const Nbrp__Update *u, const struct rde_checks *checks)
{
	struct rde *r = p->rde;
	/*
	 * A name that does not parse cannot be withdrawn either, so what the
	 * peer meant is lost: RFC 7606 resets the session for bad NLRI.
	 *
	 * Origin withdrawals first: the sender's own route to the origin goes
	 * by them, not by its withdrawal, so a router it was the only route
	 * of passes them on too.
	 */
	for (size_t i = 0; i < u->n_origin_withdrawals; i++) {
		const Nbrp__OriginWithdrawal *w = u->origin_withdrawals[i];
		if (!nbrp_name_valid(&w->name) || !nbrp_router_name_valid(w->origin)) {
			notify(r, p, NBRP_ERR_UPDATE, 1, "an origin withdrawal's name or origin is not valid");
			return;
		}
		/*
		 * Signed: checked as an origin attestation, from any peer.  Unsigned: a signed peer's
		 * would be unsigned word against signed routes; a server originates.
		 */
		bool by_name = p->sig == SIG_OFF && !p->server_mode;
		struct origin_wd_sig sig;
		bool key = false, has_sig = attest_withdrawal_signed(w);
		if (has_sig && checks && !checks->withdrawal_ok[i])
			continue;       /* refused, counted, logged by the stage: a forgery is no withdrawal at all */
		if (has_sig && w->signer.len == sizeof(sig.signer) && w->signature.len == sizeof(sig.sig)) {
			/* checked (by the origin's key); without a stage, as an unsigned one, passed on signed */
			key = checks != NULL;
			memcpy(sig.signer, w->signer.data, sizeof(sig.signer));
			memcpy(sig.sig, w->signature.data, sizeof(sig.sig));
			sig.expiry = w->expiry;
		} else {
			has_sig = false;
		}
		if (w->origin_seq && (key || by_name))
			origin_withdrawn(r, p, w->name.data, w->name.len, w->origin, w->origin_seq,
					 has_sig ? &sig : NULL, key, by_name);
	}
	for (size_t i = 0; i < u->n_withdrawn; i++) {
		const ProtobufCBinaryData *b = &u->withdrawn[i];
		if (!nbrp_name_valid(b)) {
			notify(r, p, NBRP_ERR_UPDATE, 1, "a withdrawn name is not a canonical wire name");
			return;
		}
		p->withdrawn_in++;
		withdraw_name(r, p, b->data, b->len);
	}
	uint8_t key[NAME_MAX_WIRE];
	for (size_t i = 0; i < u->n_withdrawn_aggregates; i++) {
		const ProtobufCBinaryData *b = &u->withdrawn_aggregates[i];
		if (!nbrp_name_valid(b) || b->len > NBRP_AGGREGATE_NAME_MAX) {
			notify(r, p, NBRP_ERR_UPDATE, 1, "a withdrawn aggregate is not a canonical wire name");
			return;
		}
		p->withdrawn_in++;
		withdraw_name(r, p, key, agg_key(key, b->data, b->len));
	}
	bool import_all = nbrpd_policy_open(&p->import);
	bool import_none = p->import.nrules == 0 && p->import.default_deny;
	for (size_t i = 0; i < u->n_routes; i++) {
		const Nbrp__Route *rt = u->routes[i];
		const char *why = NULL;
		p->names_in += rt->n_names;
		enum decide_import verdict = decide_import(rt, p->server_mode, r->cfg->router_name, &why);
		if (verdict == IMPORT_MALFORMED) {
			p->bad_routes++;
			log_warn("peer %s: malformed route (%s): its names are withdrawn", p->name, why);
		}
		const struct attest_job *check = checks && checks->routes ? &checks->routes[i] : NULL;
		if (verdict == IMPORT_OK && check && checks->refused[i])
			verdict = IMPORT_MALFORMED;     /* require: not valid, treated as withdrawn */
		/* every name of the Route shares its attributes and its arrival */
		struct rib_attrs *a = verdict == IMPORT_OK ? attrs_from_update(r, p, rt, check) : NULL;
		if (a && check && !a->chain && check->state == ATTEST_VALID)
			a->chain = sig_chain_new(rt, check, r->signer->chain_bytes);   /* NULL: passed on unsigned */
		uint64_t seq = a ? r->seq++ : 0;
		bool over = false;
		uint32_t ring[4];
		for (size_t k = 0; k < rt->n_names; k++) {
			const ProtobufCBinaryData *b = &rt->names[k];
			uint32_t hash = hash_ahead(&r->rib, rt, k, ring);
			if (!nbrp_name_valid(b)) {
				attrs_put(r, a);
				notify(r, p, NBRP_ERR_UPDATE, 1, "a route's name is not a canonical wire name");
				return;
			}
			/* an aggregate's route names the aggregate alone (nbrp_check_route) */
			bool agg = rt->aggregate.len > 0;
			const uint8_t *wire = agg ? key : b->data;
			size_t len = agg ? agg_key(key, b->data, b->len) : b->len;
			if (!a || import_none || (!import_all && !import_allows(p, b))) {
				withdraw_name(r, p, wire, len);
				continue;
			}
			struct rib_entry *e = rib_get(&r->rib, wire, len, agg ? rib_hash(wire, len) : hash);
			if (!e)
				continue;
			struct rib_route *old = route_remove(r, e, p);
			if (!old && p->max_names && agg) {
				/* an aggregate counts its members, as stored here */
				const struct rde_agg *g = agg_table_find(&r->aggs, b->data, b->len);
				if (p->names + peer_aggregate_members(r, p) + (g ? g->members : 0) >= p->max_names)
					over = true;
			}
			if (!old && p->max_names && (over || p->names >= p->max_names)) {
				over = false;
				if (p->max_action == MAX_NAMES_SHUT) {
					decide(r, e);
					attrs_put(r, a);
					notify(r, p, NBRP_ERR_CEASE, NBRP_CEASE_MAX_NAMES, "more names than max-names allows");
					return;
				}
				if (!p->max_warned)
					log_warn("peer %s: over max-names (%llu)%s", p->name,
						 (unsigned long long)p->max_names,
						 p->max_action == MAX_NAMES_REFUSE ? ": refusing new names" : "");
				p->max_warned = true;
				if (p->max_action == MAX_NAMES_REFUSE) {
					decide(r, e);
					continue;
				}
			}
			/* an unchanged route keeps its age */
			struct rib_route *nrt = route_new(r, a, old && attrs_same_advertisement(old->a, a)
							      ? old->seq : seq);
			if (!nrt) {
				if (old) {
					route_free(r, old);
					p->names--;
				}
				decide(r, e);
				continue;
			}
			a->refs++;
			if (old)
				route_free(r, old);
			else
				p->names++;
			route_install(r, e, nrt);
			decide(r, e);
		}
		attrs_put(r, a);
	}
}

/* The attributes of a stored signed route with check j. */
static void recheck_key(const struct rib_route *rt, const struct attest_job *j, struct rib_attrs_key *k)
{
	*k = rt->a->k;
	k->local_pref = rt->a->k.peer->local_pref;
	attrs_check(rt->a->k.peer, j, k);
	memcpy(k->sig_head, rt->a->k.sig_head, sizeof(k->sig_head));   /* the chain it names */
}

bool rde_route_recheck_changes(const struct rib_route *rt, const struct attest_job *j)
{
	struct rib_attrs_key k;
	recheck_key(rt, j, &k);
	return memcmp(&k, &rt->a->k, sizeof(k)) != 0;
}

/* A signed route checked again (a new trust file): kept with its new state, or withdrawn. */
void rde_route_recheck(struct rde *r, struct rib_entry *e, struct rib_route *rt, const struct attest_job *j,
		       bool keep)
{
	struct rde_peer *p = rt->a->k.peer;
	struct rib_attrs_key k;
	recheck_key(rt, j, &k);
	struct rib_attrs *a = keep ? attrs_get(r, &k, rt->a->path) : NULL;
	struct rib_route *nrt = a ? route_new(r, a, rt->seq) : NULL;
	struct rib_route *old = route_remove(r, e, p);
	if (nrt) {
		if (!a->chain && old->a->chain)
			a->chain = sig_chain_copy(old->a->chain);
		route_install(r, e, nrt);       /* with attrs_get's reference */
	} else {
		attrs_put(r, a);
		p->names--;
	}
	route_free(r, old);
	decide(r, e);
}

/* ---- local content ---- */

/* Servers that pass their health check and that IP routing reaches. */
static uint32_t content_usable(const struct nbrpd_content *c)
{
	uint32_t m = c->up_mask;
	for (unsigned s = 0; s < c->nservers; s++)
		if (c->server_nh[s] && !c->server_nh[s]->reachable)
			m &= ~(1u << s);
	return m;
}

static const struct route *first_up_server(const struct nbrpd_content *c)
{
	uint32_t m = content_usable(c);
	for (unsigned s = 0; s < c->nservers; s++)
		if (m & (1u << s))
			return &c->servers[s];
	return NULL;
}

void rde_content_changed(struct rde *r, struct nbrpd_content *c)
{
	for (unsigned s = 0; s < c->nservers; s++)
		if (!c->server_nh[s])
			c->server_nh[s] = nexthop_get(r->nexthops, c->servers[s].family, c->servers[s].addr);
	uint8_t key[NAME_MAX_WIRE];
	const uint8_t *wire = c->aggregate ? key : c->name.wire;
	size_t len = c->aggregate ? agg_key(key, c->name.wire, c->name.len) : c->name.len;
	struct rib_entry *e = rib_get(&r->rib, wire, len, rib_hash(wire, len));
	if (!e) {
		log_err("out of memory for content routes");
		return;
	}
	struct rib_route *old = route_remove(r, e, NULL);
	const struct route *first = first_up_server(c);
	if (!first) {
		/* no server answers: the name is withdrawn here */
		if (old)
			own_withdrawn(r, e, old->a->k.origin_seq);
		route_free(r, old);
		decide(r, e);
		return;
	}
	struct rib_attrs_key k;
	memset(&k, 0, sizeof(k));
	k.content = c;
	k.local_pref = LOCAL_PREF_LOCAL;
	k.load_ms = first->load_ms;
	k.origin_seq = old ? old->a->k.origin_seq : next_stamp(r);     /* the same announcement */
	struct rib_attrs *a = attrs_get(r, &k, "");
	/* a content's route keeps its age */
	struct rib_route *rt = a ? route_new(r, a, old ? old->seq : r->seq++) : NULL;
	if (!rt) {
		attrs_put(r, a);
		if (old)
			route_install(r, e, old);
		else
			decide(r, e);
		log_err("out of memory for content routes");
		return;
	}
	route_free(r, old);
	route_install(r, e, rt);
	decide(r, e);
}

void rde_reload_content(struct rde *r, struct nbrpd_config *old_cfg, struct nbrpd_config *new_cfg)
{
	for (unsigned i = 0; i < old_cfg->ncontent; i++) {
		const struct nbrpd_content *c = &old_cfg->content[i];
		bool kept = false;
		for (unsigned k = 0; k < new_cfg->ncontent && !kept; k++)
			kept = new_cfg->content[k].aggregate == c->aggregate && name_equal(&new_cfg->content[k].name, &c->name);
		uint8_t key[NAME_MAX_WIRE];
		const uint8_t *wire = c->aggregate ? key : c->name.wire;
		size_t len = c->aggregate ? agg_key(key, c->name.wire, c->name.len) : c->name.len;
		struct rib_entry *e = kept ? NULL : rib_lookup(&r->rib, wire, len, rib_hash(wire, len));
		struct rib_route *rt = e ? route_remove(r, e, NULL) : NULL;
		if (rt) {
			own_withdrawn(r, e, rt->a->k.origin_seq);
			route_free(r, rt);
			decide(r, e);
		}
	}
	/* the new content's routes replace the old ones (whose attributes name the old content) */
	for (unsigned i = 0; i < new_cfg->ncontent; i++)
		rde_content_changed(r, &new_cfg->content[i]);
	for (unsigned i = 0; i < old_cfg->ncontent; i++)
		for (unsigned s = 0; s < old_cfg->content[i].nservers; s++)
			nexthop_put(r->nexthops, old_cfg->content[i].server_nh[s]);
}

void rde_redecide_all(struct rde *r)
{
	struct rde_job *j = job_new(r, JOB_REDECIDE, NULL);
	if (j)
		rib_cursor_start(&r->rib, &j->cur);
}

/* IP routing changed its mind about an address: the names behind it are decided again. */
static void on_nexthop_changed(void *arg, struct nexthop *nh)
{
	struct rde *r = arg;
	for (unsigned i = 0; i < r->cfg->ncontent; i++) {
		struct nbrpd_content *c = &r->cfg->content[i];
		for (unsigned s = 0; s < c->nservers; s++)
			if (c->server_nh[s] == nh) {
				rde_content_changed(r, c);
				break;
			}
	}
	/* a job already walking this next hop starts over: it may have passed names */
	for (struct rde_job *j = r->jobs, *n; j; j = n) {
		n = j->next;
		if (j->kind == JOB_NEXTHOP && j->nh == nh)
			job_free(r, j);
	}
	unsigned count = 0;
	for (struct rib_attrs *a = nh->users; a; a = a->nh_next)
		count++;
	if (!count)
		return;
	struct rde_job *j = job_new(r, JOB_NEXTHOP, NULL);
	if (!j)
		return;
	j->attrs = malloc(count * sizeof(*j->attrs));
	if (!j->attrs) {
		job_free(r, j);
		log_err("out of memory: names behind a changed next hop are not decided again");
		return;
	}
	for (struct rib_attrs *a = nh->users; a; a = a->nh_next) {
		a->refs++;
		a->walkers++;           /* no compaction while the job walks it */
		j->attrs[j->nattrs++] = a;
	}
	j->nh = nh;
	nh->refs++;
}

/* ---- running the jobs ---- */

struct job_ctx {
	struct rde *r;
	struct rde_job *j;
};

void rde_emit_to_peer(void *arg, struct wq_buf *frame, unsigned names, unsigned withdrawn)
{
	struct rde_peer *p = arg;
	struct rde *r = p->rde;
	p->updates_out++;
	p->names_out += names;
	p->withdrawn_out += withdrawn;
	r->ops.send(r->ops.arg, p->owner, frame);
}

static void dump_one(struct rib_entry *e, void *arg)
{
	struct job_ctx *x = arg;
	struct rde_peer *p = x->j->peer;
	if (e->adv && adjout_allows(x->r, e->adv, e, p, &p->export))
		packer_advertise(x->r->packer, e, e->adv, e->adv_load);
}

static void reexport_one(struct rib_entry *e, void *arg)
{
	struct job_ctx *x = arg;
	struct rde_peer *p = x->j->peer;
	if (!e->adv)
		return;
	bool was = adjout_allows(x->r, e->adv, e, p, &p->export_old);
	bool now = adjout_allows(x->r, e->adv, e, p, &p->export);
	if (now && !was)
		packer_advertise(x->r->packer, e, e->adv, e->adv_load);
	else if (was && !now)
		packer_withdraw(x->r->packer, e);
}

static void purge_one(struct rib_entry *e, void *arg)
{
	struct job_ctx *x = arg;
	struct rde_peer *p = x->j->peer;
	for (struct rib_route **pp = &e->routes; *pp; pp = &(*pp)->next) {
		struct rib_route *rt = *pp;
		if (rt->a->k.peer == p && (int32_t)(rt->a->k.gen - x->j->below) < 0) {
			*pp = rt->next;
			if (!e->routes)
				x->r->rib.names--;
			route_free(x->r, rt);
			p->names--;
			x->j->done++;
			decide(x->r, e);
			return;
		}
	}
}

static void redecide_one(struct rib_entry *e, void *arg)
{
	struct job_ctx *x = arg;
	if (e->routes)
		decide(x->r, e);
}

/* One slice of a job, at most `budget` entries; returns entries visited, *finished when done. */
static unsigned job_step(struct rde *r, struct rde_job *j, unsigned budget, bool *finished)
{
	struct job_ctx x = { .r = r, .j = j };
	unsigned seen = 0;
	*finished = false;
	switch (j->kind) {
	case JOB_DUMP:
	case JOB_REEXPORT: {
		struct rde_peer *p = j->peer;
		if (j->kind == JOB_REEXPORT && !p->reexporting) {
			if (p->dumping)
				return 0;       /* after the dump: it is sent under the policy it began with */
			/* starts now: names ahead of the cursor keep the old policy */
			p->reexporting = true;
			p->export_old = p->export;
			p->export = p->export_next;
			p->export_next_set = false;
			rib_cursor_start(&r->rib, &p->reexport);
		}
		struct rib_cursor *c = j->kind == JOB_DUMP ? &p->dump : &p->reexport;
		packer_begin(r->packer, rde_emit_to_peer, p);
		if (p->sig != SIG_OFF)
			packer_sign_for(r->packer, p);
		while (seen < budget && !rib_cursor_done(&r->rib, c) && !r->ops.full(r->ops.arg, p->owner))
			seen += rib_cursor_step(&r->rib, c, j->kind == JOB_DUMP ? dump_one : reexport_one, &x);
		packer_end(r->packer);
		if (!rib_cursor_done(&r->rib, c))
			return seen;
		if (j->kind == JOB_DUMP) {
			p->dumping = false;
			/* names waiting for our signature are part of the table: they go first */
			p->eor_owed = true;
			rde_peer_eor(p);
		} else {
			p->reexporting = false;
			free(p->export_old.rules);
			memset(&p->export_old, 0, sizeof(p->export_old));
			if (p->export_next_set)
				return seen;    /* changed again meanwhile: once more, from the start */
		}
		*finished = true;
		return seen;
	}
	case JOB_PURGE:
	case JOB_REDECIDE:
		while (seen < budget && !rib_cursor_done(&r->rib, &j->cur))
			seen += rib_cursor_step(&r->rib, &j->cur, j->kind == JOB_PURGE ? purge_one : redecide_one, &x);
		if (!rib_cursor_done(&r->rib, &j->cur))
			return seen;
		if (j->kind == JOB_PURGE && j->done)
			log_info("peer %s: %llu routes %s", j->peer->name, (unsigned long long)j->done,
				 j->peer->configured && j->peer->up ? "of its earlier session swept" : "withdrawn");
		*finished = true;
		return seen;
	case JOB_NEXTHOP:
		while (seen < budget && j->ai < j->nattrs) {
			struct rib_attrs *a = j->attrs[j->ai];
			if (j->ei >= a->nents) {
				j->ai++;
				j->ei = 0;
				continue;
			}
			struct rib_entry *e = a->ents[j->ei++];
			for (struct rib_route *rt = e->routes; rt; rt = rt->next)
				if (rt->a == a) {
					decide(r, e);
					break;
				}
			seen++;
		}
		*finished = j->ai >= j->nattrs;
		return seen;
	case JOB_UNINDEX: {
		uint32_t n = j->nents - j->ei < budget ? j->nents - j->ei : budget;
		attrs_unindex(r, j->ents + j->ei, n);
		j->ei += n;
		*finished = j->ei >= j->nents;
		return n;
	}
	}
	*finished = true;
	return seen;
}

static bool job_blocked(struct rde *r, const struct rde_job *j)
{
	if (j->kind == JOB_DUMP || j->kind == JOB_REEXPORT)
		return r->ops.full(r->ops.arg, j->peer->owner) || (j->kind == JOB_REEXPORT && j->peer->dumping);
	return false;
}

static void run_jobs(struct rde *r)
{
	uint64_t start = uv_hrtime();
	unsigned budget = JOB_BUDGET_ENTRIES;
	bool progress = true;
	/* round robin, a slice each, until the budget is spent or nothing can move */
	while (r->jobs && budget > 0 && progress && uv_hrtime() - start < JOB_BUDGET_NS) {
		progress = false;
		unsigned runnable = 0;
		for (struct rde_job *j = r->jobs; j; j = j->next)
			runnable += !job_blocked(r, j);
		if (!runnable)
			break;
		unsigned slice = budget / runnable ? budget / runnable : 1;
		for (struct rde_job *j = r->jobs, *n; j && budget > 0; j = n) {
			n = j->next;
			if (job_blocked(r, j))
				continue;
			bool finished;
			unsigned seen = job_step(r, j, slice, &finished);
			budget -= seen < budget ? seen : budget;
			progress |= seen > 0 || finished;
			if (finished)
				job_free(r, j);
		}
	}
}

/* ---- the flush ---- */

struct flush_item {
	struct rib_entry *e;
	struct rib_attrs *old;          /* what was exported before (a reference) */
	bool changed;                   /* peers told before hear again */
};

static void on_deferred(uv_timer_t *t)
{
	struct rde *r = t->data;
	struct entry_list l = r->deferred;
	memset(&r->deferred, 0, sizeof(r->deferred));
	for (size_t i = 0; i < l.n; i++) {
		l.v[i]->flags &= (uint8_t)~ENTRY_DEFERRED;
		rde_mark_dirty(r, l.v[i]);
	}
	free(l.v);
	schedule(r);
}

/* Holds a load change back until the name's load-interval is over. */
static void defer(struct rde *r, struct rib_entry *e)
{
	if (e->flags & ENTRY_DEFERRED)
		return;
	if (!entry_list_push(&r->deferred, e))
		return;
	e->flags |= ENTRY_DEFERRED;
	if (!uv_is_active((uv_handle_t *)&r->deferred_timer)) {
		uint64_t waited = now_ms(r) - e->adv_time;
		uint64_t wait = r->cfg->load_interval_ms > waited ? r->cfg->load_interval_ms - waited : 1;
		uv_timer_start(&r->deferred_timer, on_deferred, wait, 0);
	}
}

/* The best route went to another peer or origin, or came or went (what rde_stats stamps). */
static bool best_moved(const struct rib_attrs *old, const struct rib_attrs *now)
{
	if (!old || !now)
		return old != now;
	return old->k.peer != now->k.peer || old->origin != now->origin;
}

/* What valid routes said of g's version stored: the signer's to know. */
static enum agg_signed signed_as(const struct rde *r, const struct rde_agg *g)
{
	return r->signer ? r->signer->aggregate_signed(r->signer->arg, g->n.wire, g->n.len) : AGG_UNSIGNED;
}

/* What the entry now exports, and whether peers told before must hear again. */
static bool export_now(struct rde *r, struct rib_entry *e, uint32_t now)
{
	const struct rib_route *best = best_route(e);
	struct rib_attrs *a = best && best->a->k.npath + 1u <= NBRP_MAX_PATH ? best->a : NULL;
	/* an aggregate is passed on once a version is stored here, to be fetched from us */
	struct rde_agg *g = entry_is_aggregate(e) ? agg_table_of(&r->aggs, e) : NULL;
	if (entry_is_aggregate(e) && (!g || !g->held || !r->cfg->has_transfer || signed_as(r, g) == AGG_DISTRUSTED))
		a = NULL;
	uint32_t load = a ? adjout_load(r, a) : 0;
	uint64_t sig = a ? a->sig : 0, old_sig = e->adv ? e->adv->sig : 0;
	uint32_t diff = load > e->adv_load ? load - e->adv_load : e->adv_load - load;
	bool load_news = diff > 0 && diff >= r->cfg->load_threshold_ms;
	if (sig == old_sig && load_news && now - e->adv_time < r->cfg->load_interval_ms) {
		defer(r, e);            /* only the load changed, and too soon */
		load_news = false;
	}
	bool changed = sig != old_sig || load_news;
	if (a && g && g->adv_version != g->version) {
		changed = true;         /* a new version stored: the same route offers it */
		g->adv_version = g->version;
	}
	if (a && e->adv && a->k.agg_version != e->adv->k.agg_version)
		changed = true;         /* signed, the route names its version: passed on when it is stored */
	if (a != e->adv) {
		/* the same route under other attributes (a new session, a preference) is not news */
		if (a)
			a->refs++;
		attrs_put(r, e->adv);
		e->adv = a;
	}
	if (changed) {
		e->adv_load = load;
		e->adv_time = now;
	}
	return changed;
}

/* The export policy p was told e under (a re-export job's cursor not past it yet: the old one). */
static const struct nbrpd_policy *export_policy_at(const struct rde_peer *p, const struct rib_entry *e)
{
	return p->reexporting && !rib_cursor_passed(&p->reexport, e) ? &p->export_old : &p->export;
}

void rde_resend_begin(struct rde_peer *p)
{
	struct rde *r = p->rde;
	packer_begin(r->packer, rde_emit_to_peer, p);
	if (p->sig != SIG_OFF)
		packer_sign_for(r->packer, p);
}

void rde_resend(struct rde_peer *p, const uint8_t *wire, size_t len)
{
	struct rde *r = p->rde;
	struct rib_entry *e = rib_lookup(&r->rib, wire, len, rib_hash(wire, len));
	if (!e || !e->adv)
		return;
	if (p->dumping && !rib_cursor_passed(&p->dump, e))
		return;                 /* the dump sends it */
	if (adjout_allows(r, e->adv, e, p, export_policy_at(p, e)))
		packer_advertise(r->packer, e, e->adv, e->adv_load);
}

void rde_resend_end(struct rde_peer *p)
{
	packer_end(p->rde->packer);
}

static void flush_to_peer(struct rde *r, struct rde_peer *p, const struct flush_item *items, size_t n)
{
	packer_begin(r->packer, rde_emit_to_peer, p);
	if (p->sig != SIG_OFF)
		packer_sign_for(r->packer, p);
	for (size_t i = 0; i < n; i++) {
		const struct flush_item *it = &items[i];
		struct rib_entry *e = it->e;
		if ((!it->old || it->old->k.peer == p) && (!e->adv || e->adv->k.peer == p))
			continue;       /* its own routes, before and after: it hears nothing of them */
		if (p->dumping && !rib_cursor_passed(&p->dump, e))
			continue;       /* the dump sends it when it gets there */
		const struct nbrpd_policy *pol = export_policy_at(p, e);
		bool was = it->old && adjout_allows(r, it->old, e, p, pol);
		bool now = e->adv && adjout_allows(r, e->adv, e, p, pol);
		if (now && (it->changed || !was))
			packer_advertise(r->packer, e, e->adv, e->adv_load);
		else if (!now && was)
			packer_withdraw(r->packer, e);
		else
			continue;
		if (e->flags & ENTRY_ORIGIN_WD)
			packer_origin_withdrawals(r->packer, e);
	}
	packer_end(r->packer);
}

static void emit_to_group(void *arg, struct wq_buf *frame, unsigned names, unsigned withdrawn)
{
	struct update_group *g = arg;
	for (unsigned i = 0; i < g->n; i++) {
		g->members[i]->updates_out++;
		g->members[i]->names_out += names;
		g->members[i]->withdrawn_out += withdrawn;
		g->r->ops.send(g->r->ops.arg, g->members[i]->owner, frame);
	}
}

/* Whether a group is told about attributes a (its members are not excluded: neither their source nor in their path). */
static inline bool group_told(const struct update_group *g, const struct rib_attrs *a)
{
	return a && !(g->own_and_customers && role_down_only(a->k.role));
}

static void flush_to_group(struct rde *r, struct update_group *g, const struct flush_item *items, size_t n)
{
	packer_begin(r->packer, emit_to_group, g);
	for (size_t i = 0; i < n; i++) {
		const struct flush_item *it = &items[i];
		bool was = group_told(g, it->old), now = group_told(g, it->e->adv);
		if (now && (it->changed || !was))
			packer_advertise(r->packer, it->e, it->e->adv, it->e->adv_load);
		else if (!now && was)
			packer_withdraw(r->packer, it->e);
		else
			continue;
		if (it->e->flags & ENTRY_ORIGIN_WD)
			packer_origin_withdrawals(r->packer, it->e);
	}
	packer_end(r->packer);
}

/* The peer every changed name of a flush had its routes from, before and after, if one did:
 * it hears nothing of the flush (flush_to_peer would pass over every name). */
struct flush_source {
	struct rde_peer *peer;
	bool several;
};

static void mark_excluded_set(struct rde *r, struct rib_attrs *a, struct flush_source *src)
{
	a->excluded_mark = r->flush_no;
	if (a->k.peer)
		a->k.peer->flush_mark = r->flush_no;
	struct rde_peer **in_path;
	unsigned n = a->k.npath ? attrs_path_peers(r, a, &in_path) : 0;
	for (unsigned i = 0; i < n; i++)
		in_path[i]->flush_mark = r->flush_no;
	if (!a->k.peer || (src->peer && src->peer != a->k.peer))
		src->several = true;
	src->peer = a->k.peer;
}

static inline void mark_excluded(struct rde *r, struct rib_attrs *a, struct flush_source *src)
{
	/* names of one UPDATE share their attributes: mark each set once a flush */
	if (a && a->excluded_mark != r->flush_no)
		mark_excluded_set(r, a, src);
}

/*
 * An aggregate's routes changed: the store hears of the version they offer
 * (before export: what is thrown away is not passed on).  The version is the newest valid routes name (with
 * the digest they signed), else the newest any usable route offers; among
 * those, the best ranked route's source.  What is held and no valid route
 * signs (another digest; a version they do not name, not older than
 * theirs) is thrown away and fetched whole: never built on, never routed.
 */
static void aggregate_offer(struct rde *r, struct rib_entry *e)
{
	struct name n;
	rde_entry_name(e, &n);
	const struct rib_route *from = NULL;
	const uint8_t *digest = NULL;
	for (const struct rib_route *rt = e->routes; rt; rt = rt->next) {
		if (!rt->a->k.peer || !route_usable(rt))
			continue;
		const uint8_t *d = r->signer ? attrs_valid_digest(rt->a) : NULL;
		if (digest && !d)
			continue;
		if (!from || (d && !digest) || serial_gt(rt->a->k.agg_version, from->a->k.agg_version) ||
		    (rt->a->k.agg_version == from->a->k.agg_version && rt->rank &&
		     (!from->rank || rt->rank < from->rank))) {
			from = rt;
			digest = d;
		}
	}
	for (const struct rib_route *rt = e->routes; rt; rt = rt->next)
		if (!rt->a->k.peer)
			from = NULL;    /* defined here: never fetched */
	struct rde_agg *g = agg_table_of(&r->aggs, e);
	bool whole = false;
	if (from && digest && g && g->held) {
		uint32_t w = from->a->k.agg_version;
		enum agg_signed said = signed_as(r, g);
		whole = said == AGG_DISTRUSTED || (g->version != w && !serial_gt(w, g->version) && said != AGG_SIGNED);
	}
	if (whole) {
		g->held = false;
		r->signer->aggregate_dropped(r->signer->arg, g->n.wire, g->n.len);
	}
	/* a version thrown away leaves inrpd before the routes change */
	if (from && r->ops.aggregate_offered)
		r->ops.aggregate_offered(r->ops.arg, &n, from->a->k.agg_version, &from->a->k.agg_source, digest, whole);
}

/* Tells peers what the names of v export now against what they were told, as one batch;
 * false: out of memory (nothing was told). */
static bool export_names(struct rde *r, struct rib_entry *const *v, size_t n)
{
	struct flush_item *items = malloc(n * sizeof(*items));
	if (!items) {
		log_err("out of memory flushing %zu changed names; trying again", n);
		return false;
	}
	r->flush_no++;
	struct flush_source src = { 0 };
	bool moved = false;
	uint32_t now = now_ms(r);
	for (size_t i = 0; i < n; i++) {
		struct rib_entry *e = v[i];
		if (i + 4 < n)
			__builtin_prefetch(v[i + 4]->routes);   /* best_route's, a miss when memory is old */
		items[i].e = e;
		items[i].old = e->adv;
		if (e->adv)
			e->adv->refs++;
		items[i].changed = export_now(r, e, now);
		if (items[i].changed || items[i].old != e->adv) {
			mark_excluded(r, items[i].old, &src);
			mark_excluded(r, e->adv, &src);
			moved |= best_moved(items[i].old, e->adv);
		}
	}
	if (moved) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		r->best_changed_us = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
	}
	/* the update groups: peers for which every name here is decided alike */
	r->group[0].n = r->group[1].n = 0;
	for (unsigned i = 0; i < r->npeers; i++) {
		struct rde_peer *p = r->peers[i];
		if (!p->up || p->server_mode)
			continue;
		if (p->flush_mark == r->flush_no || p->dumping || p->reexporting || !nbrpd_policy_open(&p->export) ||
		    p->sig != SIG_OFF) {        /* signed: for it alone */
			if (p != src.peer || src.several)
				flush_to_peer(r, p, items, n);
			continue;
		}
		struct update_group *g = &r->group[!role_told_all(p->role)];
		if (VEC_RESERVE(g->members, g->cap, g->n + 1) < 0) {
			flush_to_peer(r, p, items, n);
			continue;
		}
		g->members[g->n++] = p;
	}
	for (unsigned c = 0; c < 2; c++)
		if (r->group[c].n)
			flush_to_group(r, &r->group[c], items, n);
	/* the origin withdrawals noted for names still held go with them */
	for (size_t i = 0; i < n; i++)
		v[i]->flags &= (uint8_t)~ENTRY_HELD;
	origin_wd_clear(&r->owd, ENTRY_HELD);
	for (size_t i = 0; i < n; i++) {
		attrs_put(r, items[i].old);
		rib_maybe_release(&r->rib, v[i]);
	}
	free(items);
	return true;
}

/* How long a name left without a route is held: withdrawal-delay, at least update-delay. */
static uint64_t withdrawal_delay(const struct rde *r)
{
	uint64_t w = r->cfg->withdrawal_delay_ms, d = r->cfg->update_delay_ms;
	return w > d ? w : d;
}

/* When held names are next due, on the loop's clock; UINT64_MAX: none held. */
static uint64_t held_due(const struct rde *r)
{
	uint64_t a = r->held.n ? r->held_since + r->cfg->update_delay_ms : UINT64_MAX;
	uint64_t b = r->lost.n ? r->lost_since + withdrawal_delay(r) : UINT64_MAX;
	return a < b ? a : b;
}

static void on_held(uv_timer_t *t)
{
	schedule(t->data);              /* the next turn's flush tells them */
}

/* Holds the changed names for peers: a name changing again meanwhile is told once, its last state
 * against what peers were told (an origin withdrawal and the new route in one UPDATE).
 * false: out of memory (some not held). */
static bool hold(struct rde *r, struct rib_entry *const *v, size_t n)
{
	bool ok = true;
	if (!r->held.n)
		r->held_since = uv_now(r->loop);
	for (size_t i = 0; i < n; i++) {
		if (v[i]->flags & ENTRY_HELD)
			continue;       /* held already, maybe as lost */
		if (entry_list_push(&r->held, v[i]))
			v[i]->flags |= ENTRY_HELD;
		else
			ok = false;
	}
	return ok;
}

/* The held names whose window is over: told, but for those an origin withdrawal left without a
 * route, which wait for withdrawal-delay (a move's new route may come meanwhile).  A name lost
 * otherwise (a session failing) is not held longer: a dead path advertised longer is only tried
 * by more routers. */
static void release_held(struct rde *r)
{
	size_t k = 0;
	bool longer = withdrawal_delay(r) > r->cfg->update_delay_ms;
	for (size_t i = 0; i < r->held.n; i++) {
		struct rib_entry *e = r->held.v[i];
		if (longer && e->adv && !best_route(e) && (e->flags & ENTRY_ORIGIN_WD)) {
			if (!r->lost.n)
				r->lost_since = r->held_since;
			if (entry_list_push(&r->lost, e))
				continue;
		}
		r->held.v[k++] = e;
	}
	r->held.n = k;
	if (!k || export_names(r, r->held.v, k))
		r->held.n = 0;
}

/* inrpd's routes for the names of v. */
static void push_fib(struct rde *r, struct rib_entry *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct rib_entry *e = v[i];
		struct name nm;
		struct route routes[ROUTESET_MAX_ROUTES];
		if (entry_is_aggregate(e) ? !r->ops.fib_aggregate : !r->ops.fib_name)
			continue;
		rde_entry_name(e, &nm);
		if (entry_is_aggregate(e))
			r->ops.fib_aggregate(r->ops.arg, &nm, routes, rde_fib_routes(e, routes));
		else
			r->ops.fib_name(r->ops.arg, &nm, routes, rde_fib_routes(e, routes));
	}
	if (n && r->ops.fib_flush)
		r->ops.fib_flush(r->ops.arg);
}

/*
 * The names changed since the last flush: aggregates' versions offered,
 * peers told, then inrpd.  With an update-delay, peers are told what
 * changed once it is over (held, above), inrpd at once.
 */
static void flush(struct rde *r)
{
	struct entry_list dirty = r->dirty;
	memset(&r->dirty, 0, sizeof(r->dirty));
	for (size_t i = 0; i < dirty.n; i++)
		if (entry_is_aggregate(dirty.v[i]))
			aggregate_offer(r, dirty.v[i]);
	bool told = true;
	if (!r->cfg->update_delay_ms && !r->cfg->withdrawal_delay_ms && !r->held.n && !r->lost.n)
		told = !dirty.n || export_names(r, dirty.v, dirty.n);
	else if (dirty.n)
		told = hold(r, dirty.v, dirty.n);
	uint64_t now = uv_now(r->loop);
	if (r->held.n && r->held_since + r->cfg->update_delay_ms <= now)
		release_held(r);
	if (r->lost.n && r->lost_since + withdrawal_delay(r) <= now && export_names(r, r->lost.v, r->lost.n))
		r->lost.n = 0;
	uint64_t due = held_due(r);
	if (due == UINT64_MAX)
		uv_timer_stop(&r->held_timer);
	else if (due > now && (!uv_is_active((uv_handle_t *)&r->held_timer) ||
			       uv_timer_get_due_in(&r->held_timer) != due - now))
		uv_timer_start(&r->held_timer, on_held, due - now, 0);  /* not every turn: a restart re-sorts the loop's timers */
	if (!told) {
		r->dirty = dirty;       /* out of memory: again next turn */
		return;
	}
	/* our inrpd after the peers: writing to it wakes it, and it would run
	 * first, on the path of the change through the network.  A peer that
	 * asks us before our inrpd has the route hears "no route" or another
	 * origin, and asks again (docs/INRP.md, Routes converging). */
	push_fib(r, dirty.v, dirty.n);
	for (size_t i = 0; i < dirty.n; i++) {
		dirty.v[i]->flags &= (uint8_t)~ENTRY_DIRTY;
		rib_maybe_release(&r->rib, dirty.v[i]);
	}
	if (!r->dirty.v && dirty.cap <= 65536) {
		dirty.n = 0;            /* the next turn's list: not grown from nothing every turn */
		r->dirty = dirty;
	} else {
		free(dirty.v);
	}
	rib_release_pending(&r->rib);
}

uint64_t rde_wakeup(const struct rde *r)
{
	return held_due(r);
}

bool rde_turn(struct rde *r)
{
	bool growing = rib_grow_step(&r->rib, GROW_BUDGET_BUCKETS);
	run_jobs(r);
	flush(r);
	if (r->signer)
		r->signer->turn(r->signer->arg);        /* a new turn: peers at their budget read again */
	if (r->input_paused) {
		/* the sessions read again: what they had read waits no longer, and may pause them again */
		r->input_paused = false;
		r->ops.input_ready(r->ops.arg);
	}
	/* names the resumed sessions changed are flushed next turn: do not block before it */
	bool runnable = growing || r->input_paused || r->dirty.n || held_due(r) <= uv_now(r->loop);
	for (struct rde_job *j = r->jobs; j && !runnable; j = j->next)
		runnable = !job_blocked(r, j);
	return runnable;
}

static void on_check(uv_check_t *h)
{
	struct rde *r = h->data;
	if (r->stopping)
		return;
	if (!rde_turn(r))
		uv_idle_stop(&r->idle);
}

static void on_idle(uv_idle_t *h)
{
	(void)h;                        /* only here so that poll does not block */
}

static void schedule(struct rde *r)
{
	if (!r->stopping)
		uv_idle_start(&r->idle, on_idle);
}

/* ---- reading it ---- */

uint64_t rde_names(const struct rde *r)
{
	return r->rib.names;
}

const struct rib_entry *rde_find(const struct rde *r, const struct name *n)
{
	const struct rib_entry *e = rib_lookup(&r->rib, n->wire, n->len, rib_hash(n->wire, n->len));
	return e && e->routes ? e : NULL;
}

void rde_walk(const struct rde *r, rde_walk_fn fn, void *arg)
{
	for (size_t i = 0; i < r->rib.nbuckets; i++)
		for (const struct rib_entry *e = r->rib.buckets[i]; e; e = e->hnext)
			if (e->routes)
				fn(e, arg);
}

struct rde_walk {
	struct rib_cursor cur;
	rde_walk_fn fn;
	void *arg;
};

struct rde_walk *rde_walk_begin(const struct rde *r)
{
	struct rde_walk *w = calloc(1, sizeof(*w));
	if (w)
		rib_cursor_start(&r->rib, &w->cur);
	return w;
}

static void walk_one(struct rib_entry *e, void *arg)
{
	struct rde_walk *w = arg;
	if (e->routes)
		w->fn(e, w->arg);
}

bool rde_walk_step(const struct rde *r, struct rde_walk *w, unsigned budget, rde_walk_fn fn, void *arg)
{
	struct rib *t = (struct rib *)&r->rib;  /* the walk changes nothing */
	w->fn = fn;
	w->arg = arg;
	unsigned seen = 0;
	while (seen < budget && !rib_cursor_done(t, &w->cur))
		seen += rib_cursor_step(t, &w->cur, walk_one, w);
	return rib_cursor_done(t, &w->cur);
}

void rde_walk_end(struct rde_walk *w)
{
	free(w);
}

void rde_entry_name(const struct rib_entry *e, struct name *out)
{
	rib_entry_name(e, out);
}

bool rde_entry_is_aggregate(const struct rib_entry *e)
{
	return entry_is_aggregate(e);
}

const struct rib_entry *rde_find_aggregate(const struct rde *r, const struct name *agg)
{
	uint8_t key[NAME_MAX_WIRE];
	if (agg->len > NBRP_AGGREGATE_NAME_MAX)
		return NULL;
	size_t len = agg_key(key, agg->wire, agg->len);
	const struct rib_entry *e = rib_lookup(&r->rib, key, len, rib_hash(key, len));
	return e && e->routes ? e : NULL;
}

unsigned rde_aggregate_fib_routes(const struct rde *r, const struct name *agg, struct route *out)
{
	const struct rib_entry *e = rde_find_aggregate(r, agg);
	return e ? rde_fib_routes(e, out) : 0;
}

/* A version with more members may put the peers offering it over max-names. */
static void check_aggregate_limits(struct rde *r, struct rib_entry *e)
{
	struct rde_peer *shut[16];
	unsigned nshut = 0;
	for (struct rib_route **pp = &e->routes; *pp;) {
		struct rib_route *rt = *pp;
		struct rde_peer *p = rt->a->k.peer;
		if (!p || !p->max_names || p->names + peer_aggregate_members(r, p) <= p->max_names) {
			pp = &rt->next;
			continue;
		}
		if (!p->max_warned)
			log_warn("peer %s: over max-names (%llu) with the members of its aggregates%s", p->name,
				 (unsigned long long)p->max_names,
				 p->max_action == MAX_NAMES_REFUSE ? ": refusing the aggregate" : "");
		p->max_warned = true;
		if (p->max_action == MAX_NAMES_SHUT && nshut < sizeof(shut) / sizeof(shut[0]))
			shut[nshut++] = p;
		if (p->max_action != MAX_NAMES_REFUSE) {
			pp = &rt->next;
			continue;
		}
		*pp = rt->next;
		if (!e->routes)
			r->rib.names--;
		route_free(r, rt);
		p->names--;
		decide(r, e);
	}
	for (unsigned i = 0; i < nshut; i++)
		notify(r, shut[i], NBRP_ERR_CEASE, NBRP_CEASE_MAX_NAMES, "more names than max-names allows");
}

void rde_aggregate_stored(struct rde *r, const struct name *agg, uint32_t version, const struct nameset *members)
{
	if (agg->len > NBRP_AGGREGATE_NAME_MAX)
		return;
	struct rde_agg *g = agg_table_get(&r->aggs, agg->wire, agg->len);
	if (!g) {
		log_err("out of memory for aggregates: the version stored is not passed on");
		return;
	}
	/* a version is one set of members for the life of the store: told again, nothing is new
	 * (but to a signer that could not make its digest) */
	if (g->held && g->version == version && !r->signer)
		return;
	g->held = true;
	g->version = version;
	g->members = members->count;
	uint8_t key[NAME_MAX_WIRE];
	size_t len = agg_key(key, agg->wire, agg->len);
	struct rib_entry *e = rib_lookup(&r->rib, key, len, rib_hash(key, len));
	if (r->signer && !r->signer->aggregate_stored(r->signer->arg, agg->wire, agg->len, version, members, e))
		return;
	if (e) {
		rde_mark_dirty(r, e);   /* peers hear of the version at the next flush */
		schedule(r);
		check_aggregate_limits(r, e);
	}
}

/*
 * An aggregate's route whose members are not all its origin's (prefer
 * keeps it, at local preference 0) routes none of them: each is then
 * answered by a shorter suffix's route, our own content first, as under
 * require.  Otherwise a member longer than our content name would win
 * the longest match with it.
 */
static bool member_hijack(const struct rib_entry *e, const struct rib_attrs *a)
{
	return entry_is_aggregate(e) && a->k.sig_state == ATTEST_INVALID + 1 &&
	       a->k.sig_reason == ATTEST_UNAUTHORISED_MEMBER;
}

unsigned rde_fib_routes(const struct rib_entry *e, struct route *out)
{
	const struct rib_route *ranked[ROUTESET_MAX_ROUTES] = { 0 };
	for (const struct rib_route *rt = e->routes; rt; rt = rt->next)
		if (rt->rank && rt->rank <= ROUTESET_MAX_ROUTES)
			ranked[rt->rank - 1] = rt;
	unsigned n = 0;
	for (unsigned b = 0; b < ROUTESET_MAX_ROUTES && ranked[b] && n < ROUTESET_MAX_ROUTES; b++) {
		const struct rib_attrs *a = ranked[b]->a;
		if (!a || member_hijack(e, a))
			continue;
		if (!a->k.peer) {
			const struct nbrpd_content *c = a->k.content;
			uint32_t usable = content_usable(c);
			for (unsigned s = 0; s < c->nservers && n < ROUTESET_MAX_ROUTES; s++)
				if (usable & (1u << s)) {
					out[n] = c->servers[s];
					out[n++].origin = a->origin;    /* us: our servers' answers say so (INRP) */
				}
			continue;
		}
		struct route *r = &out[n++];
		memset(r, 0, sizeof(*r));
		r->kind = a->k.server ? ROUTE_SERVER : ROUTE_ROUTER;
		r->family = (uint8_t)a->k.next_hop.family;
		r->port = a->k.next_hop.port;
		r->load_ms = a->k.load_ms;
		r->origin = a->origin;
		memcpy(r->addr, a->k.next_hop.addr, 16);
	}
	return n;
}

static void view_of(const struct rib_route *rt, struct rde_route_view *v)
{
	const struct rib_attrs *a = rt->a;
	v->rank = rt->rank;
	v->from = a->k.peer ? a->k.peer->name : "";
	v->next_hop = a->k.peer ? &a->k.next_hop : NULL;
	v->content = a->k.peer ? NULL : a->k.content;
	v->path = a->path;
	v->npath = a->k.npath;
	v->load_ms = a->k.load_ms;
	v->local_pref = a->k.local_pref;
	v->stale = route_stale(rt);
	v->usable = route_usable(rt);
	v->nh = a->nh;
	v->agg_version = a->k.agg_version;
	v->agg_source = a->k.peer && a->k.agg_source.family ? &a->k.agg_source : NULL;
	v->sig_state = a->k.sig_state ? attest_state_name((enum attest_state)(a->k.sig_state - 1)) : NULL;
	v->sig_reason = a->k.sig_state == ATTEST_INVALID + 1
			? attest_reason_name((enum attest_reason)a->k.sig_reason) : NULL;
}

unsigned rde_entry_routes(const struct rib_entry *e, struct rde_route_view *out, unsigned max)
{
	unsigned n = 0, nbest = 0;
	for (const struct rib_route *rt = e->routes; rt; rt = rt->next)
		nbest += rt->rank != 0;
	for (unsigned rank = 1; rank <= nbest; rank++)
		for (const struct rib_route *rt = e->routes; rt && n < max; rt = rt->next)
			if (rt->rank == rank)
				view_of(rt, &out[n++]);
	for (const struct rib_route *rt = e->routes; rt && n < max; rt = rt->next)
		if (!rt->rank)
			view_of(rt, &out[n++]);
	return n;
}

void rde_stats(const struct rde *r, struct rde_stats *out)
{
	out->names = r->rib.names;
	out->entries = r->rib.entries;
	out->routes = r->routes.live;
	out->attrs = r->nattrs;
	out->jobs = r->njobs;
	out->best_changed_us = r->best_changed_us;
}

/* ---- life ---- */

struct rde *rde_new(uv_loop_t *loop, const struct nbrpd_config *cfg, struct nexthop_table *nexthops,
		    const struct rde_ops *ops)
{
	struct rde *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->loop = loop;
	r->cfg = cfg;
	r->nexthops = nexthops;
	r->ops = *ops;
	r->start_ms = uv_now(loop);
	r->peers_gen = 1;
	r->nattrs_buckets = 64;
	r->attrs = calloc(r->nattrs_buckets, sizeof(*r->attrs));
	r->unindex_later = unindex_later;
	r->group[0].r = r->group[1].r = r;
	r->group[1].own_and_customers = true;
	r->packer = packer_new(r);
	slab_init(&r->routes, sizeof(struct rib_route));
	int names_ok = peer_names_init(&r->by_name), aggs_ok = agg_table_init(&r->aggs, sizeof(struct rde_agg));
	if (!r->attrs || names_ok < 0 || aggs_ok < 0 || !r->packer || rib_init(&r->rib) < 0) {
		packer_free(r->packer);
		free(r->attrs);
		peer_names_free(&r->by_name);
		agg_table_free(&r->aggs);
		free(r);
		return NULL;
	}
	uv_check_init(loop, &r->check);
	r->check.data = r;
	uv_check_start(&r->check, on_check);
	uv_idle_init(loop, &r->idle);
	r->idle.data = r;
	uv_timer_init(loop, &r->deferred_timer);
	r->deferred_timer.data = r;
	uv_timer_init(loop, &r->held_timer);
	r->held_timer.data = r;
	nexthop_on_changed(nexthops, on_nexthop_changed, r);
	return r;
}

void rde_set_config(struct rde *r, const struct nbrpd_config *cfg)
{
	r->cfg = cfg;
}

void rde_set_signer(struct rde *r, const struct rde_signer *signer)
{
	r->signer = signer;
}

void rde_peer_set_signatures(struct rde_peer *p, enum sig_policy sig)
{
	p->sig = p->rde->signer ? sig : SIG_OFF;
}

void rde_input_resume(struct rde *r)
{
	r->input_paused = true;
	schedule(r);
}

void rde_stop(struct rde *r)
{
	r->stopping = true;
	nexthop_on_changed(r->nexthops, NULL, NULL);
	uv_close((uv_handle_t *)&r->check, NULL);
	uv_close((uv_handle_t *)&r->idle, NULL);
	uv_close((uv_handle_t *)&r->deferred_timer, NULL);
	uv_close((uv_handle_t *)&r->held_timer, NULL);
}

void rde_free(struct rde *r)
{
	if (!r)
		return;
	/* what is left goes whole: routes and entries with their slabs, attributes and peers here */
	for (struct rde_job *j = r->jobs, *n; j; j = n) {
		n = j->next;
		free(j->attrs);         /* the attributes go below, whole; entries with their slabs */
		free(j->ents);
		if (j->kind == JOB_PURGE && --j->peer->refs == 0)
			free(j->peer);  /* no attributes name it any more */
		free(j);
	}
	attrs_free_all(r);
	origin_wd_free(&r->owd);
	for (unsigned i = 0; i < r->npeers; i++) {
		free(r->peers[i]->import.rules);
		free(r->peers[i]->export.rules);
		free(r->peers[i]->export_old.rules);
		if (r->peers[i]->export_next_set)
			free(r->peers[i]->export_next.rules);
		free(r->peers[i]);
	}
	rib_destroy(&r->rib);
	slab_destroy(&r->routes);
	agg_table_free(&r->aggs);
	free(r->peers);
	peer_names_free(&r->by_name);
	free(r->dirty.v);
	free(r->held.v);
	free(r->lost.v);
	free(r->deferred.v);
	free(r->group[0].members);
	free(r->group[1].members);
	free(r->rank.cands);
	free(r->rank.routes);
	packer_free(r->packer);
	free(r);
}
