#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>
#include <xxhash.h>

#include "config.h"
#include "log.h"
#include "nameset.h"
#include "nbrp.h"
#include "net.h"
#include "nexthop.h"
#include "rde.h"
#include "splitmix.h"
#include "vec.h"
#include "wqueue.h"

/* Gao-Rexford in NBRP's own terms: preference by each session's local-pref, customers' routes
 * first; export by our role on it (RFC 9234, adjout.c), what the neighbour is to us reversed. */
static const uint32_t PREF[] = { [REL_CUSTOMER] = 300, [REL_PEER] = 200, [REL_PROVIDER] = 100, [REL_FLAT] = 100 };
static const enum nbrpd_role ROLE[] = {
	[REL_CUSTOMER] = ROLE_PROVIDER, [REL_PEER] = ROLE_PEER, [REL_PROVIDER] = ROLE_CUSTOMER, [REL_FLAT] = ROLE_NONE,
};

#define MAX_CONTENT     16              /* names and aggregates a router originates */
#define INRP_PORT       53
#define TRANSFER_PORT   5353

enum ev_kind { EV_ARRIVE, EV_TURN, EV_MRAI, EV_FETCHED, EV_WAKE };

struct outgoing;

/* A frame on its way over a session, then in the receiver's queue. */
struct msg {
	struct msg *next;
	struct wq_buf *frame;
	struct outgoing *o;             /* frame decoded where it left (a reference); NULL: decoded on arrival */
	uint32_t half;                  /* the sender's end of the session */
	uint32_t gen;                   /* the session's generation when sent */
};

/* One end of a session: router `from`'s, towards the link's `to` (topo->link[i]). */
struct half {
	uint32_t from, rev;             /* rev: the other end's index */
	struct rde_peer *peer;          /* `to` in from's RDE */
	uint64_t last_arrival;          /* frames arrive in order */
	uint64_t mrai_until;
	uint32_t gen;
	bool up, mrai_pending;
	struct wq_buf *held;            /* the MRAI's: one UPDATE, the newest Route of each name */
};

#define MAX_AGGS        64              /* aggregates a run */

struct aggv {
	uint32_t version;               /* stored */
	uint32_t fetching;              /* being fetched */
};

struct best {
	uint64_t key;                   /* the name's (or aggregate's) hash */
	uint32_t from;                  /* routes[0]'s router + 1; 0: none */
	uint32_t origin;                /* and its origin (inrp_origin_tag) */
};

struct router {
	struct net *net;
	uint32_t id;
	struct rde *rde;
	struct nbrpd_config cfg;
	struct msg *inbox, **inbox_tail;
	uint32_t inbox_n;
	bool turn_queued;
	uint64_t busy_until;
	uint64_t wake_at;               /* the turn its RDE asked for (rde_wakeup); 0: none */
	uint64_t changed_window;        /* the window its best routes last changed in */
	uint64_t changed_ns;            /* and when, last */
	uint64_t sent_window;           /* the window `sent` counts in */
	uint32_t sent;                  /* UPDATEs it sent in it */
	struct best *best;
	uint32_t nbest;
	size_t best_cap;
	struct aggv *aggv;              /* by aggregate, once one reached it */
};

struct out {
	uint32_t half;
	struct wq_buf *frame;
};

struct net {
	const struct topo *t;
	struct net_opts o;
	uv_loop_t loop;                 /* never run: its clock is the simulation's */
	struct nexthop_table *nexthops; /* shared: every address reachable */
	struct evq q;
	uint64_t now;
	uint64_t rng;
	struct router *r;
	struct half *h;
	struct out *out;                /* the running router's frames */
	size_t nout, out_cap;
	struct nameset members;         /* every aggregate's members */
	struct name agg[MAX_AGGS];
	unsigned naggs;
	uint64_t window_no;
	struct net_window w;
};

static uint64_t rnd(struct net *n)
{
	return splitmix64(&n->rng);
}

static void addr_of(uint32_t id, uint8_t addr[16])
{
	memset(addr, 0, 16);
	addr[0] = 10;
	addr[1] = (uint8_t)(id >> 16);
	addr[2] = (uint8_t)(id >> 8);
	addr[3] = (uint8_t)id;
}

/* The router whose inrpd or transfer address this is; UINT32_MAX: none (a content server). */
static uint32_t id_of(const uint8_t *addr)
{
	return addr[0] == 10 ? (uint32_t)addr[1] << 16 | (uint32_t)addr[2] << 8 | addr[3] : UINT32_MAX;
}

static uint32_t id_of_name(const char *name)
{
	return name[0] == 'r' ? (uint32_t)strtoul(name + 1, NULL, 10) : UINT32_MAX;
}

static uint64_t name_key(const struct name *nm, bool aggregate)
{
	return XXH3_64bits(nm->wire, nm->len) ^ (aggregate ? 0x5a5a5a5a5a5a5a5aull : 0);
}

static void set_clock(struct net *n)
{
	n->loop.time = n->now / 1000000u;       /* uv_now: the RDE's clock */
}

static void queue_turn(struct net *n, struct router *r)
{
	if (r->turn_queued)
		return;
	r->turn_queued = true;
	uint64_t at = r->busy_until > n->now ? r->busy_until : n->now;
	if (evq_push(&n->q, at, EV_TURN, r->id, NULL) < 0) {
		log_err("sim: out of memory for events");
		abort();
	}
}

static void push(struct net *n, uint64_t at, enum ev_kind kind, uint32_t a, void *p)
{
	if (evq_push(&n->q, at, kind, a, p) < 0) {
		log_err("sim: out of memory for events");
		abort();
	}
}

/* A turn when the RDE asks for one (names held by update-delay), its loop never being run. */
static void queue_wake(struct net *n, struct router *r)
{
	uint64_t due = rde_wakeup(r->rde);
	if (due == UINT64_MAX)
		return;
	uint64_t at = due * 1000000u;   /* later than now: due is after the RDE's clock */
	if (r->wake_at && r->wake_at <= at)
		return;
	r->wake_at = at;
	push(n, at, EV_WAKE, r->id, NULL);
}

static void wake(struct net *n, struct router *r)
{
	if (r->wake_at != n->now)
		return;                 /* an earlier request's, replaced */
	r->wake_at = 0;
	queue_turn(n, r);
}

/* ---- the RDE's callbacks ---- */

static void ops_send(void *arg, void *owner, struct wq_buf *frame)
{
	struct router *r = arg;
	struct net *n = r->net;
	if (VEC_RESERVE(n->out, n->out_cap, n->nout + 1) < 0) {
		log_err("sim: out of memory queueing a frame");
		abort();
	}
	frame->refs++;
	n->out[n->nout++] = (struct out){ (uint32_t)((struct half *)owner - n->h), frame };
}

static bool ops_full(void *arg, void *owner)
{
	(void)arg;
	(void)owner;
	return false;
}

static void ops_notify(void *arg, void *owner, uint8_t code, uint8_t subcode, const char *text)
{
	struct router *r = arg;
	(void)owner;
	log_warn("sim: r%u sends a NOTIFICATION %u/%u (%s)", r->id, code, subcode, text ? text : "");
}

static void best_changed(struct router *r, uint64_t key, const struct route *routes, unsigned count)
{
	struct net *n = r->net;
	uint32_t from = 0, origin = 0;
	if (count) {
		from = routes[0].kind == ROUTE_SERVER ? r->id + 1 : id_of(routes[0].addr) + 1;
		origin = routes[0].origin;
	}
	struct best *b = NULL;
	for (uint32_t i = 0; i < r->nbest && !b; i++)
		if (r->best[i].key == key)
			b = &r->best[i];
	if (!b) {
		if (!from)
			return;
		if (VEC_RESERVE(r->best, r->best_cap, r->nbest + 1) < 0) {
			log_err("sim: out of memory");
			abort();
		}
		b = &r->best[r->nbest++];
		b->key = key;
		b->from = b->origin = 0;
	}
	if (b->from == from && b->origin == origin)
		return;
	b->from = from;
	b->origin = origin;
	n->w.best_changes++;
	n->w.last_change_ns = n->now;
	r->changed_ns = n->now;
	if (r->changed_window != n->window_no) {
		r->changed_window = n->window_no;
		n->w.routers_changed++;
	}
}

static void ops_fib_name(void *arg, const struct name *nm, const struct route *routes, unsigned count)
{
	best_changed(arg, name_key(nm, false), routes, count);
}

static void ops_fib_aggregate(void *arg, const struct name *agg, const struct route *routes, unsigned count)
{
	best_changed(arg, name_key(agg, true), routes, count);
}

static void ops_fib_flush(void *arg)
{
	(void)arg;
}

/* A version offered: fetched from its source after a round trip and the transfer. */
static long agg_index(const struct net *n, const struct name *agg)
{
	for (unsigned i = 0; i < n->naggs; i++)
		if (name_equal(&n->agg[i], agg))
			return i;
	return -1;
}

static struct aggv *aggv_of(struct router *r, unsigned i)
{
	if (!r->aggv && !(r->aggv = calloc(MAX_AGGS, sizeof(*r->aggv)))) {
		log_err("sim: out of memory");
		abort();
	}
	return &r->aggv[i];
}

/* A version offered: fetched from its source after a round trip and the transfer. */
static void ops_aggregate_offered(void *arg, const struct name *agg, uint32_t version,
				  const struct ip_endpoint *source, const uint8_t *digest, bool whole)
{
	struct router *r = arg;
	struct net *n = r->net;
	(void)digest;
	(void)whole;
	long i = agg_index(n, agg);
	if (i < 0)
		return;
	struct aggv *v = aggv_of(r, (unsigned)i);
	if (version <= v->version || version <= v->fetching)
		return;
	uint32_t src = source ? id_of(source->addr) : UINT32_MAX;
	long l = src < n->t->n ? topo_find(n->t, r->id, src) : -1;
	uint64_t rtt = l >= 0 ? 2000ull * n->t->link[l].delay_us : 100000000ull;
	v->fetching = version;
	push(n, n->now + rtt + n->o.cost.fetch_ns, EV_FETCHED, r->id, (void *)(uintptr_t)((uint64_t)i << 32 | version));
}

static const struct nameset *ops_aggregate_members(void *arg, const struct name *agg)
{
	struct router *r = arg;
	long i = agg_index(r->net, agg);
	return i >= 0 && r->aggv && r->aggv[i].version ? &r->net->members : NULL;
}

static bool ops_fib_behind(void *arg)
{
	(void)arg;
	return false;
}

static void ops_nothing(void *arg)
{
	(void)arg;
}

/* ---- the session layer ---- */

static struct wq_buf *encode(const Nbrp__Update *u)
{
	Nbrp__Message m = NBRP__MESSAGE__INIT;
	m.body_case = NBRP__MESSAGE__BODY_UPDATE;
	m.update = (Nbrp__Update *)u;
	size_t len;
	uint8_t *buf = nbrp_encode(&m, &len);
	struct wq_buf *b = buf ? wq_buf_adopt(buf, len) : NULL;
	if (!b) {
		log_err("sim: out of memory encoding an UPDATE");
		abort();
	}
	return b;
}

/* o: frame's decoded form, if it has one (outgoing); NULL: the receiver decodes it */
static void deliver(struct net *n, struct half *h, struct wq_buf *frame, struct outgoing *o, uint64_t at,
		    bool update)
{
	if (update) {
		struct router *r = &n->r[h->from];
		if (r->sent_window != n->window_no) {
			r->sent_window = n->window_no;
			r->sent = 0;
		}
		if (++r->sent > n->w.max_sent)
			n->w.max_sent = r->sent;
		n->w.updates++;
		n->w.bytes += frame->len;
	}
	const struct topo_link *l = &n->t->link[h - n->h];
	uint64_t arrive = at + 1000ull * l->delay_us;
	if (arrive < h->last_arrival)
		arrive = h->last_arrival;
	h->last_arrival = arrive;
	struct msg *m = malloc(sizeof(*m));
	if (!m) {
		log_err("sim: out of memory");
		abort();
	}
	m->next = NULL;
	m->frame = frame;
	m->o = o;
	m->half = (uint32_t)(h - n->h);
	m->gen = h->gen;
	push(n, arrive, EV_ARRIVE, l->to, m);
}

static bool same_name(const ProtobufCBinaryData *a, const ProtobufCBinaryData *b)
{
	return a->len == b->len && memcmp(a->data, b->data, a->len) == 0;
}

static bool in_routes(const ProtobufCBinaryData *nm, Nbrp__Route *const *routes, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < routes[i]->n_names; k++)
			if (same_name(nm, &routes[i]->names[k]))
				return true;
	return false;
}

/*
 * The MRAI's UPDATE held for a session, again: the names in drop[] and in
 * add's Routes out of it, then (keep_add) add's Routes in.  Kept encoded (a decoded
 * message costs a page or more): NULL when nothing is left.  *replaced:
 * names that were held and are no more.
 */
static struct wq_buf *held_merge(struct wq_buf *held, const ProtobufCBinaryData *drop, size_t ndrop,
				 Nbrp__Route *const *add, size_t nadd, bool keep_add, uint64_t *replaced)
{
	Nbrp__Message *old = NULL;
	size_t nold = 0, names = 0;
	if (held) {
		struct nbrp_error e;
		if (nbrp_decode(held->data + NBRP_HEADER_LEN, held->len - NBRP_HEADER_LEN, true, &old, &e) < 0)
			abort();        /* our own encoding */
		nold = old->update->n_routes;
		for (size_t i = 0; i < nold; i++)
			names += old->update->routes[i]->n_names;
	}
	Nbrp__Route **routes = malloc((nold + nadd + 1) * sizeof(*routes));
	Nbrp__Route *copies = malloc((nold + 1) * sizeof(*copies));
	ProtobufCBinaryData *kept = malloc((names + 1) * sizeof(*kept));
	if (!routes || !copies || !kept) {
		log_err("sim: out of memory");
		abort();
	}
	size_t nr = 0, used = 0;
	for (size_t i = 0; i < nold; i++) {
		const Nbrp__Route *rt = old->update->routes[i];
		copies[i] = *rt;
		copies[i].names = &kept[used];
		copies[i].n_names = 0;
		for (size_t k = 0; k < rt->n_names; k++) {
			bool gone = in_routes(&rt->names[k], add, nadd);
			for (size_t d = 0; d < ndrop && !gone; d++)
				gone = same_name(&rt->names[k], &drop[d]);
			if (gone) {
				++*replaced;
				continue;
			}
			kept[used++] = rt->names[k];
			copies[i].n_names++;
		}
		if (copies[i].n_names)
			routes[nr++] = &copies[i];
	}
	for (size_t i = 0; keep_add && i < nadd; i++)
		routes[nr++] = add[i];
	struct wq_buf *b = NULL;
	if (nr) {
		Nbrp__Update u = NBRP__UPDATE__INIT;
		u.routes = routes;
		u.n_routes = nr;
		b = encode(&u);
	}
	free(routes);
	free(copies);
	free(kept);
	nbrp_message_free(old);
	if (held)
		wq_buf_put(held);
	return b;
}

static uint64_t mrai_next(struct net *n, uint64_t from)
{
	/* RFC 4271 9.2.1.1: jittered to 0.75-1 of the interval */
	return from + n->o.mrai_ns * (75 + rnd(n) % 26) / 100;
}

static void mrai_expired(struct net *n, struct half *h)
{
	h->mrai_pending = false;
	struct wq_buf *b = h->held;
	h->held = NULL;
	if (!b)
		return;
	if (!h->up) {
		wq_buf_put(b);
		return;
	}
	h->mrai_until = mrai_next(n, n->now);
	deliver(n, h, b, NULL, n->now, true);
}

/* Names in an UPDATE: what the cost model charges. */
static uint64_t update_names(const Nbrp__Update *u)
{
	uint64_t k = u->n_withdrawn;
	for (size_t i = 0; i < u->n_routes; i++)
		k += u->routes[i]->n_names;
	return k;
}

/*
 * A frame the RDE queued, as it leaves its router: decoded once (an update
 * group's peers are queued one buffer, one after another), and made once
 * what the reference modes send instead (origin withdrawals taken out),
 * the same for every session it goes on.  An update group's UPDATE is
 * read by its receivers as decoded here, and lives until the last has
 * (decoding is a function of the bytes: each decoding it again gave the
 * same message, at 8% of the run's time).  A frame for one session is
 * decoded where it arrives, as before: kept decoded while in flight, a
 * start's frames on 1.6 million sessions at once took 4 KiB each.
 */
struct outgoing {
	uint32_t refs;                  /* the sender's turn, and each msg of frame */
	uint32_t sessions;              /* it is queued for */
	Nbrp__Message *dec;             /* the RDE's frame, decoded */
	Nbrp__Update f;                 /* an UPDATE: what leaves (pointing into dec) */
	struct wq_buf *frame;           /* f encoded (a reference); NULL: nothing is left */
	struct wq_buf *rest;            /* f without its routes, for a session whose MRAI holds them; made once */
	bool rest_made;
};

static bool update_empty(const Nbrp__Update *u)
{
	return !u->n_routes && !u->n_withdrawn && !u->n_withdrawn_aggregates && !u->n_origin_withdrawals;
}

static struct outgoing *outgoing_new(struct net *n, struct wq_buf *frame, Nbrp__Message *m)
{
	struct outgoing *o = calloc(1, sizeof(*o));
	if (!o) {
		log_err("sim: out of memory");
		abort();
	}
	o->refs = 1;
	o->dec = m;
	o->frame = frame;
	frame->refs++;
	if (m->body_case != NBRP__MESSAGE__BODY_UPDATE)
		return o;
	o->f = *m->update;
	if (n->o.origin_withdrawals || !o->f.n_origin_withdrawals)
		return o;
	o->f.n_origin_withdrawals = 0;
	wq_buf_put(o->frame);
	o->frame = update_empty(&o->f) ? NULL : encode(&o->f);
	return o;
}

static void outgoing_put(struct outgoing *o)
{
	if (!o || --o->refs)
		return;
	if (o->frame)
		wq_buf_put(o->frame);
	if (o->rest)
		wq_buf_put(o->rest);
	nbrp_message_free(o->dec);
	free(o);
}

static void msg_free(struct msg *m)
{
	wq_buf_put(m->frame);
	outgoing_put(m->o);
	free(m);
}

/* An outgoing frame on session h at the end of its router's turn: the MRAI, then the link. */
static void transmit(struct net *n, struct half *h, struct outgoing *o, uint64_t at)
{
	if (!h->up || !o->frame)
		return;
	if (o->dec->body_case != NBRP__MESSAGE__BODY_UPDATE) {
		o->frame->refs++;
		deliver(n, h, o->frame, NULL, at, false);
		return;
	}
	const Nbrp__Update *f = &o->f;
	bool hold_routes = n->o.mrai_ns && f->n_routes && at < h->mrai_until;
	if (n->o.mrai_ns && f->n_routes && !hold_routes)
		h->mrai_until = mrai_next(n, at);
	if (h->held || hold_routes) {
		/* what goes now (withdrawals, routes once the MRAI ran out) replaces what was held */
		uint64_t replaced = 0;
		h->held = held_merge(h->held, f->withdrawn, f->n_withdrawn, f->routes, f->n_routes, hold_routes, &replaced);
		n->w.held += replaced;
	}
	struct wq_buf *out = o->frame;
	if (hold_routes) {
		if (!h->mrai_pending) {
			h->mrai_pending = true;
			push(n, h->mrai_until, EV_MRAI, (uint32_t)(h - n->h), NULL);
		}
		if (!o->rest_made) {
			Nbrp__Update g = *f;
			g.n_routes = 0;
			o->rest = update_empty(&g) ? NULL : encode(&g);
			o->rest_made = true;
		}
		out = o->rest;
	}
	if (out) {
		bool shared = out == o->frame && o->sessions > 1;
		out->refs++;
		o->refs += shared;
		deliver(n, h, out, shared ? o : NULL, at, true);
	}
}

/* ---- a router's turn ---- */

static Nbrp__Message *decode_or_die(const struct wq_buf *b, uint32_t router)
{
	Nbrp__Message *d;
	struct nbrp_error e;
	if (nbrp_decode(b->data + NBRP_HEADER_LEN, b->len - NBRP_HEADER_LEN, true, &d, &e) < 0) {
		/* the frames are nbrpd's own: one that does not decode is a bug, not input */
		log_err("sim: r%u: a frame does not decode: %s", router, e.text);
		abort();
	}
	return d;
}

static void turn(struct net *n, struct router *r)
{
	r->turn_queued = false;
	set_clock(n);
	uint64_t updates = 0, names = 0;
	struct msg *m = r->inbox;
	r->inbox = NULL;
	r->inbox_tail = &r->inbox;
	r->inbox_n = 0;
	while (m) {
		struct msg *next = m->next;
		const struct half *h = &n->h[m->half];
		struct half *mine = &n->h[h->rev];
		if (h->gen != m->gen || !mine->up) {
			n->w.dropped++;         /* the session failed meanwhile */
		} else {
			Nbrp__Message *d = m->o ? NULL : decode_or_die(m->frame, r->id);
			bool update = (m->o ? m->o->dec : d)->body_case == NBRP__MESSAGE__BODY_UPDATE;
			if (update) {
				const Nbrp__Update *u = m->o ? &m->o->f : d->update;
				updates++;
				names += update_names(u);
				n->w.withdrawn_in += u->n_withdrawn;
				n->w.names_in += update_names(u) - u->n_withdrawn;
				n->w.owd_in += u->n_origin_withdrawals;
				rde_peer_update(mine->peer, u, NULL);
			}
			nbrp_message_free(d);
		}
		msg_free(m);
		m = next;
	}
	n->nout = 0;
	/* a loop turn and the ones the RDE asks for at once (a dump's slices) */
	for (unsigned k = 0; k < 1024 && rde_turn(r->rde); k++)
		;
	queue_wake(n, r);
	size_t nout = n->nout;
	n->nout = 0;
	struct outgoing **og = malloc((nout + 1) * sizeof(*og));
	struct out *out = malloc((nout + 1) * sizeof(*out));
	if (!og || !out) {
		log_err("sim: out of memory");
		abort();
	}
	memcpy(out, n->out, nout * sizeof(*out));
	uint64_t queued = 0;
	size_t nog = 0;
	for (size_t i = 0; i < nout; i++) {
		/* an update group's peers are queued one buffer, one after another: decoded and made once */
		if (i == 0 || out[i].frame != out[i - 1].frame) {
			og[nog] = outgoing_new(n, out[i].frame, decode_or_die(out[i].frame, r->id));
			nog++;
		}
		og[nog - 1]->sessions++;
		if (og[nog - 1]->dec->body_case == NBRP__MESSAGE__BODY_UPDATE)
			queued += update_names(og[nog - 1]->dec->update);
	}
	const struct net_cost *c = &n->o.cost;
	uint64_t done = n->now + c->update_ns * (updates ? updates : 1) + c->name_ns * names +
			c->peer_name_ns * queued;
	r->busy_until = done;
	n->w.turns++;
	if (done > n->w.last_busy_ns)
		n->w.last_busy_ns = done;
	for (size_t i = 0, k = 0; i < nout; i++) {
		if (i > 0 && out[i].frame != out[i - 1].frame)
			k++;
		transmit(n, &n->h[out[i].half], og[k], done);
		wq_buf_put(out[i].frame);
	}
	for (size_t k = 0; k < nog; k++)
		outgoing_put(og[k]);
	free(og);
	free(out);
}

static void arrive(struct net *n, struct router *r, struct msg *m)
{
	if (n->h[m->half].gen != m->gen) {
		n->w.dropped++;
		msg_free(m);
		return;
	}
	*r->inbox_tail = m;
	r->inbox_tail = &m->next;
	r->inbox_n++;
	if (r->inbox_n > n->w.peak_queue)
		n->w.peak_queue = r->inbox_n;
	queue_turn(n, r);
}

static void fetched(struct net *n, struct router *r, uint64_t what)
{
	unsigned i = (unsigned)(what >> 32);
	uint32_t version = (uint32_t)what;
	struct aggv *v = aggv_of(r, i);
	if (version <= v->version)
		return;
	set_clock(n);
	v->version = version;
	n->w.agg_stored++;
	n->w.last_change_ns = n->now;
	rde_aggregate_stored(r->rde, &n->agg[i], version, &n->members);
	queue_turn(n, r);
}

void net_run(struct net *n, uint64_t until_ns)
{
	struct event ev;
	while (n->q.n && n->q.v[0].at_ns <= until_ns && evq_pop(&n->q, &ev)) {
		n->now = ev.at_ns;
		switch (ev.kind) {
		case EV_ARRIVE:
			arrive(n, &n->r[ev.a], ev.p);
			break;
		case EV_TURN:
			turn(n, &n->r[ev.a]);
			break;
		case EV_MRAI:
			mrai_expired(n, &n->h[ev.a]);
			break;
		case EV_FETCHED:
			fetched(n, &n->r[ev.a], (uint64_t)(uintptr_t)ev.p);
			break;
		case EV_WAKE:
			wake(n, &n->r[ev.a]);
			break;
		}
	}
	if (until_ns != UINT64_MAX && until_ns > n->now)
		n->now = until_ns;
}

uint64_t net_now(const struct net *n)
{
	return n->now;
}

void net_window_start(struct net *n)
{
	memset(&n->w, 0, sizeof(n->w));
	n->w.start_ns = n->w.last_change_ns = n->w.last_busy_ns = n->now;
	n->window_no++;
}

const struct net_window *net_window(const struct net *n)
{
	return &n->w;
}

/* ---- building it ---- */

static int router_init(struct net *n, struct router *r, const struct nbrpd_config *tmpl)
{
	r->net = n;
	r->inbox_tail = &r->inbox;
	r->cfg = *tmpl;
	r->cfg.npeers = r->cfg.peers_cap = 0;
	r->cfg.peers = NULL;
	r->cfg.ncontent = 0;
	r->cfg.content = NULL;
	snprintf(r->cfg.router_name, sizeof(r->cfg.router_name), "r%u", r->id);
	r->cfg.inrp.family = AF_INET;
	addr_of(r->id, r->cfg.inrp.addr);
	r->cfg.inrp.port = INRP_PORT;
	r->cfg.transfer = r->cfg.inrp;
	r->cfg.transfer.port = TRANSFER_PORT;
	r->cfg.has_transfer = true;     /* aggregates are passed on */
	const struct rde_ops ops = {
		.send = ops_send, .full = ops_full, .notify = ops_notify,
		.fib_name = ops_fib_name, .fib_aggregate = ops_fib_aggregate, .fib_flush = ops_fib_flush,
		.aggregate_offered = ops_aggregate_offered, .aggregate_members = ops_aggregate_members,
		.fib_behind = ops_fib_behind, .input_ready = ops_nothing, .trust_changed = ops_nothing,
		.arg = r,
	};
	r->rde = rde_new(&n->loop, &r->cfg, n->nexthops, &ops);
	return r->rde ? 0 : -1;
}

struct net *net_new(const struct topo *t, const struct nbrpd_config *tmpl, const struct net_opts *o,
		    char *err, size_t err_len)
{
	struct net *n = calloc(1, sizeof(*n));
	if (!n || uv_loop_init(&n->loop) != 0) {
		free(n);
		snprintf(err, err_len, "out of memory");
		return NULL;
	}
	n->t = t;
	n->o = *o;
	n->rng = o->seed;
	evq_init(&n->q);
	nameset_init(&n->members);
	n->nexthops = nexthop_table_new(&n->loop);
	n->r = calloc(t->n, sizeof(*n->r));
	n->h = calloc(t->nlinks + 1, sizeof(*n->h));
	if (!n->nexthops || !n->r || !n->h)
		goto oom;
	set_clock(n);
	for (uint32_t i = 0; i < t->n; i++) {
		n->r[i].id = i;
		if (router_init(n, &n->r[i], tmpl) < 0)
			goto oom;
	}
	for (uint32_t i = 0; i < t->n; i++)
		for (uint32_t k = t->first[i]; k < t->first[i + 1]; k++) {
			const struct topo_link *l = &t->link[k];
			struct half *h = &n->h[k];
			h->from = i;
			h->rev = (uint32_t)topo_find(t, l->to, i);
			h->up = true;
			struct nbrpd_peer_config pc;
			memset(&pc, 0, sizeof(pc));
			snprintf(pc.name, sizeof(pc.name), "r%u", l->to);
			pc.remote.family = AF_INET;
			addr_of(l->to, pc.remote.addr);
			pc.remote.port = NBRP_DEFAULT_PORT;
			pc.local_pref = o->gao_rexford ? PREF[l->rel] : PREF[REL_FLAT];
			pc.role = o->gao_rexford ? ROLE[l->rel] : ROLE_NONE;
			pc.signatures = SIG_OFF;
			if (!(h->peer = rde_peer_add(n->r[i].rde, &pc, h)))
				goto oom;
		}
	/* every session up at once, at 0 */
	for (size_t k = 0; k < t->nlinks; k++)
		rde_peer_up(n->h[k].peer);
	for (uint32_t i = 0; i < t->n; i++)
		queue_turn(n, &n->r[i]);
	return n;
oom:
	snprintf(err, err_len, "out of memory for %u routers", t->n);
	net_free(n);
	return NULL;
}

void net_free(struct net *n)
{
	if (!n)
		return;
	struct event ev;
	while (evq_pop(&n->q, &ev))
		if (ev.kind == EV_ARRIVE)
			msg_free(ev.p);
	for (uint32_t i = 0; n->r && i < n->t->n; i++)
		if (n->r[i].rde)
			rde_stop(n->r[i].rde);
	uv_run(&n->loop, UV_RUN_NOWAIT);        /* the handles' closes */
	for (uint32_t i = 0; n->r && i < n->t->n; i++) {
		struct router *r = &n->r[i];
		for (struct msg *m = r->inbox, *next; m; m = next) {
			next = m->next;
			msg_free(m);
		}
		rde_free(r->rde);
		for (unsigned c = 0; c < r->cfg.ncontent; c++)
			nexthop_put(n->nexthops, r->cfg.content[c].server_nh[0]);
		free(r->cfg.content);
		free(r->best);
		free(r->aggv);
	}
	for (size_t k = 0; n->h && k < n->t->nlinks; k++) {
		if (n->h[k].held)
			wq_buf_put(n->h[k].held);
	}
	nexthop_table_free(n->nexthops);
	uv_loop_close(&n->loop);
	nameset_free(&n->members);
	evq_free(&n->q);
	free(n->out);
	free(n->r);
	free(n->h);
	free(n);
}

/* ---- local events ---- */

static struct nbrpd_content *content_of(struct router *r, const struct name *nm, bool aggregate)
{
	for (unsigned i = 0; i < r->cfg.ncontent; i++)
		if (r->cfg.content[i].aggregate == aggregate && name_equal(&r->cfg.content[i].name, nm))
			return &r->cfg.content[i];
	if (!r->cfg.content && !(r->cfg.content = calloc(MAX_CONTENT, sizeof(*r->cfg.content))))
		return NULL;
	if (r->cfg.ncontent == MAX_CONTENT)
		return NULL;            /* the RDE keeps pointers to them: the array never moves */
	struct nbrpd_content *c = &r->cfg.content[r->cfg.ncontent++];
	name_copy(&c->name, nm);
	c->aggregate = aggregate;
	c->nservers = 1;
	c->servers[0].kind = ROUTE_SERVER;
	c->servers[0].family = AF_INET;
	c->servers[0].addr[0] = 192;
	c->servers[0].addr[1] = 0;
	c->servers[0].addr[2] = 2;
	c->servers[0].addr[3] = 1;
	return c;
}

static int local_change(struct net *n, uint32_t router, const char *text, bool aggregate, bool up)
{
	struct name nm;
	if (router >= n->t->n || name_from_text(&nm, text, strlen(text)) < 0)
		return -1;
	struct router *r = &n->r[router];
	struct nbrpd_content *c = content_of(r, &nm, aggregate);
	if (!c)
		return -1;
	set_clock(n);
	c->up_mask = up ? 1 : 0;
	rde_content_changed(r->rde, c);
	queue_turn(n, r);
	return 0;
}

int net_announce(struct net *n, uint32_t router, const char *name)
{
	return local_change(n, router, name, false, true);
}

int net_withdraw(struct net *n, uint32_t router, const char *name)
{
	return local_change(n, router, name, false, false);
}

int net_aggregate(struct net *n, uint32_t router, const char *agg)
{
	struct name nm;
	if (router >= n->t->n || name_from_text(&nm, agg, strlen(agg)) < 0)
		return -1;
	if (!n->members.count) {
		const char *members[] = { "www.example", "mail.example", "cdn.example", "api.example" };
		for (unsigned k = 0; k < 4; k++) {
			struct name m;
			if (name_from_text(&m, members[k], strlen(members[k])) < 0 ||
			    nameset_add(&n->members, m.wire, m.len) < 0)
				return -1;
		}
	}
	long i = agg_index(n, &nm);
	if (i < 0) {
		if (n->naggs == MAX_AGGS)
			return -1;
		i = n->naggs++;
		name_copy(&n->agg[i], &nm);
	}
	struct router *r = &n->r[router];
	struct aggv *v = aggv_of(r, (unsigned)i);
	if (!v->version && local_change(n, router, agg, true, true) < 0)
		return -1;
	v->version++;
	n->w.agg_stored++;
	rde_aggregate_stored(r->rde, &n->agg[i], v->version, &n->members);
	queue_turn(n, r);
	return (int)v->version;
}

static void half_down(struct net *n, struct half *h)
{
	h->up = false;
	h->gen++;
	if (h->held)
		wq_buf_put(h->held);
	h->held = NULL;
	h->mrai_until = 0;
	rde_peer_down(h->peer, false);
	queue_turn(n, &n->r[h->from]);
}

int net_session(struct net *n, uint32_t a, uint32_t b, bool up)
{
	long k = a < n->t->n && b < n->t->n ? topo_find(n->t, a, b) : -1;
	if (k < 0)
		return -1;
	struct half *h = &n->h[k], *g = &n->h[h->rev];
	if (h->up == up)
		return 0;
	set_clock(n);
	if (!up) {
		half_down(n, h);
		half_down(n, g);
		return 0;
	}
	h->up = g->up = true;
	h->last_arrival = g->last_arrival = n->now;
	rde_peer_up(h->peer);
	rde_peer_up(g->peer);
	queue_turn(n, &n->r[a]);
	queue_turn(n, &n->r[b]);
	return 0;
}

bool net_best(const struct net *n, uint32_t r, const char *text, uint32_t *from, unsigned *npath)
{
	struct name nm;
	if (r >= n->t->n || name_from_text(&nm, text, strlen(text)) < 0)
		return false;
	const struct rib_entry *e = rde_find(n->r[r].rde, &nm);
	struct rde_route_view v[ROUTESET_MAX_ROUTES];
	unsigned k = e ? rde_entry_routes(e, v, ROUTESET_MAX_ROUTES) : 0;
	if (!k || !v[0].rank || !v[0].usable)
		return false;
	*from = v[0].content ? r : id_of_name(v[0].from);
	*npath = v[0].content ? 0 : v[0].npath;
	return true;
}

bool net_router_changed(const struct net *n, uint32_t r, uint64_t *at_ns)
{
	if (r >= n->t->n || n->r[r].changed_window != n->window_no)
		return false;
	*at_ns = n->r[r].changed_ns;
	return true;
}

uint32_t net_agg_behind(const struct net *n, const char *agg, uint32_t v)
{
	struct name nm;
	long i = name_from_text(&nm, agg, strlen(agg)) < 0 ? -1 : agg_index(n, &nm);
	uint32_t k = 0;
	for (uint32_t r = 0; r < n->t->n; r++)
		k += i < 0 || !n->r[r].aggv || n->r[r].aggv[i].version < v;
	return k;
}

uint64_t net_rss_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long size, rss = 0;
	if (f) {
		if (fscanf(f, "%lu %lu", &size, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return (uint64_t)rss * 4096u;
}
