/*
 * The RDE (nbrpd/rde.c and its modules) linked alone, with the session
 * layer and the FIB channel replaced by recorders: UPDATE packing, the
 * update group, split horizon, the next-hop index, jobs that span loop
 * turns, flow control, purges, and more peers than a bit mask holds; two
 * RDEs in one process, one feeding the other; and the table alone, across
 * doublings.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <sys/socket.h>

#include "nbrp.h"
#include "nexthop.h"
#include "rde.h"
#include "rib.h"
#include "wqueue.h"

/* ---- a recorder for each peer ---- */

struct world;

struct fake {
	char name[32];
	bool full;
	unsigned updates, eors, notifications;
	uint64_t advertised, withdrawn;
	uint64_t owd;                   /* origin withdrawals */
	unsigned both;                  /* UPDATEs with Routes and origin withdrawals */
	const struct wq_buf *last;      /* the last frame, to see sharing */
	char first_path[4][32];         /* of the last Route */
	unsigned first_npath;
	uint64_t agg_routes, agg_withdrawn;     /* aggregates' routes and withdrawals */
	uint64_t agg_version;                   /* of the last aggregate's route */
	char agg_source[64];
	struct rde_peer *rp;
	struct fake *relay_to;          /* another RDE's peer: its UPDATEs are given to it at once */
	struct world *relay_world;
};

struct world {
	uv_loop_t loop;
	struct nbrpd_config cfg;
	struct nexthop_table *nh;
	struct rde *rde;
	struct fake *peers;
	unsigned npeers;
	/* what it told the FIB channel and the aggregate store */
	uint64_t fib_calls, fib_agg_calls;
	unsigned fib_agg_count;
	unsigned offered_calls;
	uint32_t offered_version;
	struct ip_endpoint offered_source;
};

static void rec_send(void *arg, void *owner, struct wq_buf *frame)
{
	struct fake *f = owner;
	(void)arg;
	Nbrp__Message *m;
	struct nbrp_error e;
	assert_int_equal(nbrp_decode(frame->data + NBRP_HEADER_LEN, frame->len - NBRP_HEADER_LEN, false, &m, &e), 1);
	f->last = frame;
	if (m->body_case == NBRP__MESSAGE__BODY_END_OF_RIB) {
		f->eors++;
	} else {
		assert_int_equal(m->body_case, NBRP__MESSAGE__BODY_UPDATE);
		f->updates++;
		if (f->relay_to) {
			/* the other RDE reads it and takes its turn now, in the middle of this one's flush */
			rde_peer_update(f->relay_to->rp, m->update, NULL);
			uv_run(&f->relay_world->loop, UV_RUN_NOWAIT);
		}
		f->withdrawn += m->update->n_withdrawn;
		f->owd += m->update->n_origin_withdrawals;
		f->both += m->update->n_routes && m->update->n_origin_withdrawals;
		f->agg_withdrawn += m->update->n_withdrawn_aggregates;
		for (size_t i = 0; i < m->update->n_routes; i++) {
			const Nbrp__Route *r = m->update->routes[i];
			if (r->aggregate.len) {
				const char *why;
				assert_int_equal(nbrp_check_route(r, false, &why), 0);
				f->agg_routes++;
				f->agg_version = r->aggregate_version;
				snprintf(f->agg_source, sizeof(f->agg_source), "%s", r->aggregate_source);
				continue;
			}
			f->advertised += r->n_names;
			f->first_npath = (unsigned)r->n_path;
			for (size_t k = 0; k < r->n_path && k < 4; k++)
				snprintf(f->first_path[k], sizeof(f->first_path[k]), "%s", r->path[k]);
		}
	}
	nbrp_message_free(m);
}

static bool rec_full(void *arg, void *owner)
{
	(void)arg;
	return ((struct fake *)owner)->full;
}

static void rec_notify(void *arg, void *owner, uint8_t code, uint8_t subcode, const char *text)
{
	(void)arg;
	(void)code;
	(void)subcode;
	(void)text;
	((struct fake *)owner)->notifications++;
}

static void rec_fib(void *arg, const struct name *n, const struct route *routes, unsigned count)
{
	struct world *w = arg;
	(void)n;
	(void)routes;
	(void)count;
	w->fib_calls++;
}

static void rec_fib_aggregate(void *arg, const struct name *n, const struct route *routes, unsigned count)
{
	struct world *w = arg;
	(void)n;
	(void)routes;
	w->fib_agg_calls++;
	w->fib_agg_count = count;
}

static void rec_offered(void *arg, const struct name *agg, uint32_t version, const struct ip_endpoint *source,
			const uint8_t *digest, bool whole)
{
	struct world *w = arg;
	(void)agg;
	(void)digest;
	(void)whole;
	w->offered_calls++;
	w->offered_version = version;
	w->offered_source = *source;
}

static void rec_fib_flush(void *arg)
{
	(void)arg;
}

static void rec_input_ready(void *arg)
{
	(void)arg;
}

/* ---- the world ---- */

/* An RDE named router with peers p0.. (names NULL) or the names given, our roles towards them
 * (NULL: none), on a loop of its own. */
static struct world *world_roles(const char *router, unsigned npeers, const char *const *names,
				 const enum nbrpd_role *roles)
{
	struct world *w = calloc(1, sizeof(*w));
	uv_loop_init(&w->loop);
	snprintf(w->cfg.router_name, sizeof(w->cfg.router_name), "%s", router);
	w->cfg.inrp.family = AF_INET;
	memcpy(w->cfg.inrp.addr, (uint8_t[]){ 192, 0, 2, 1 }, 4);
	w->cfg.inrp.port = 53;
	w->cfg.load_ms_per_hop = 50;
	w->cfg.load_radius = 3;
	w->cfg.max_routes = 4;
	w->nh = nexthop_table_new(&w->loop);
	const struct rde_ops ops = { .send = rec_send, .full = rec_full, .notify = rec_notify,
				     .fib_name = rec_fib, .fib_flush = rec_fib_flush,
				     .fib_aggregate = rec_fib_aggregate, .aggregate_offered = rec_offered,
				     .input_ready = rec_input_ready, .arg = w };
	w->rde = rde_new(&w->loop, &w->cfg, w->nh, &ops);
	w->peers = calloc(npeers, sizeof(*w->peers));
	w->npeers = npeers;
	for (unsigned i = 0; i < npeers; i++) {
		struct nbrpd_peer_config pc = { .local_pref = 100, .role = roles ? roles[i] : ROLE_NONE };
		if (roles && (roles[i] == ROLE_PROVIDER || roles[i] == ROLE_RS_SERVER))
			pc.local_pref = 300;    /* customers' routes first, as Gao-Rexford */
		if (names)
			snprintf(pc.name, sizeof(pc.name), "%s", names[i]);
		else
			snprintf(pc.name, sizeof(pc.name), "p%u", i);
		snprintf(w->peers[i].name, sizeof(w->peers[i].name), "%.31s", pc.name);
		w->peers[i].rp = rde_peer_add(w->rde, &pc, &w->peers[i]);
	}
	return w;
}

static struct world *world_named(const char *router, unsigned npeers, const char *const *names)
{
	return world_roles(router, npeers, names, NULL);
}

static struct world *world_new(unsigned npeers)
{
	return world_named("r1", npeers, NULL);
}

/* Turns of the loop until no job is left (at most max); returns how many it took. */
static unsigned run(struct world *w, unsigned max)
{
	struct rde_stats st;
	unsigned turns = 0;
	do {
		uv_run(&w->loop, UV_RUN_NOWAIT);
		turns++;
		rde_stats(w->rde, &st);
	} while (st.jobs && turns < max);
	return turns;
}

static void world_free(struct world *w)
{
	rde_stop(w->rde);
	uv_run(&w->loop, UV_RUN_DEFAULT);
	rde_free(w->rde);
	nexthop_table_free(w->nh);
	uv_loop_close(&w->loop);
	free(w->peers);
	free(w);
}

/* count names "nI.example" from index first, from peer p with the given path and next hop */
static void announce(struct world *w, unsigned p, unsigned first, unsigned count, const char *hop_path,
		     uint8_t hop_last_octet, uint32_t load)
{
	uint8_t (*wire)[32] = calloc(count, 32);
	ProtobufCBinaryData *names = calloc(count, sizeof(*names));
	for (unsigned i = 0; i < count; i++) {
		char label[16];
		int l = snprintf(label, sizeof(label), "n%u", first + i);
		wire[i][0] = (uint8_t)l;
		memcpy(&wire[i][1], label, (size_t)l);
		memcpy(&wire[i][1 + l], "\7example\0", 9);
		names[i].data = wire[i];
		names[i].len = (size_t)l + 10;
	}
	uint8_t hop[4] = { 198, 51, 100, hop_last_octet };
	char *path[2] = { (char *)hop_path, NULL };
	Nbrp__Route r = NBRP__ROUTE__INIT;
	Nbrp__Route *rp = &r;
	r.n_names = count;
	r.names = names;
	r.next_hop.data = hop;
	r.next_hop.len = 4;
	r.next_hop_port = 53;
	r.load_ms = load;
	r.n_path = 1;
	r.path = path;
	Nbrp__Update u = NBRP__UPDATE__INIT;
	u.n_routes = 1;
	u.routes = &rp;
	rde_peer_update(w->peers[p].rp, &u, NULL);
	free(names);
	free(wire);
}

static void up_all(struct world *w)
{
	for (unsigned i = 0; i < w->npeers; i++)
		rde_peer_up(w->peers[i].rp);
	run(w, 1000);
	for (unsigned i = 0; i < w->npeers; i++) {
		assert_int_equal(w->peers[i].eors, 1);
		w->peers[i].updates = 0;
	}
}

static void names_share_routes_and_updates_are_full(void **state)
{
	struct world *w = world_new(2);
	up_all(w);
	announce(w, 0, 0, 3000, "p0", 9, 0);
	run(w, 10);
	struct fake *sink = &w->peers[1];
	assert_int_equal(sink->advertised, 3000);
	assert_int_equal(sink->updates, 3);             /* 1024 names an UPDATE */
	assert_int_equal(sink->first_npath, 2);         /* our name, then the path it came with */
	assert_string_equal(sink->first_path[0], "r1");
	assert_string_equal(sink->first_path[1], "p0");
	assert_int_equal(w->peers[0].advertised, 0);    /* not back to where it came from */
	assert_int_equal(w->fib_calls, 3000);
	world_free(w);
}

static void peers_alike_share_one_encoded_update_and_more_than_64_peers_work(void **state)
{
	struct world *w = world_new(200);
	up_all(w);
	announce(w, 0, 0, 10, "p0", 9, 0);
	run(w, 10);
	for (unsigned i = 1; i < 200; i++) {
		assert_int_equal(w->peers[i].advertised, 10);
		assert_ptr_equal(w->peers[i].last, w->peers[1].last);   /* the same buffer */
	}
	world_free(w);
}

static void a_peer_in_the_path_is_not_told_and_is_told_the_withdrawal_of_what_it_had(void **state)
{
	struct world *w = world_new(3);
	up_all(w);
	announce(w, 0, 0, 5, "p0", 9, 500);             /* far: 1 hop, load 500 */
	run(w, 10);
	assert_int_equal(w->peers[2].advertised, 5);
	/* p1 offers a better route whose path names p2: p2 must forget the old one */
	uint8_t wire[] = { 2, 'n', '0', 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 0 };
	ProtobufCBinaryData names[] = { { .data = wire, .len = sizeof(wire) } };
	uint8_t hop[4] = { 198, 51, 100, 10 };
	char *path[] = { "p1", "p2" };
	Nbrp__Route r = NBRP__ROUTE__INIT, *rp = &r;
	r.n_names = 1;
	r.names = names;
	r.next_hop.data = hop;
	r.next_hop.len = 4;
	r.next_hop_port = 53;
	r.n_path = 2;
	r.path = path;
	Nbrp__Update u = NBRP__UPDATE__INIT;
	u.n_routes = 1;
	u.routes = &rp;
	rde_peer_update(w->peers[1].rp, &u, NULL);
	run(w, 10);
	assert_int_equal(w->peers[2].withdrawn, 1);
	assert_int_equal(w->peers[0].advertised, 1);    /* p0 hears of the better one */
	world_free(w);
}

/* count names from `first` withdrawn by peer p */
static void withdraw(struct world *w, unsigned p, unsigned first, unsigned count)
{
	uint8_t (*wire)[32] = calloc(count, 32);
	ProtobufCBinaryData *names = calloc(count, sizeof(*names));
	for (unsigned i = 0; i < count; i++) {
		int l = snprintf((char *)&wire[i][1], 16, "n%u", first + i);
		wire[i][0] = (uint8_t)l;
		memcpy(&wire[i][1 + l], "\7example\0", 9);
		names[i].data = wire[i];
		names[i].len = (size_t)l + 10;
	}
	Nbrp__Update u = NBRP__UPDATE__INIT;
	u.n_withdrawn = count;
	u.withdrawn = names;
	rde_peer_update(w->peers[p].rp, &u, NULL);
	free(names);
	free(wire);
}

static void reset_counts(struct world *w)
{
	for (unsigned i = 0; i < w->npeers; i++) {
		w->peers[i].advertised = w->peers[i].withdrawn = 0;
		w->peers[i].updates = 0;
	}
}

/*
 * RFC 9234's roles: what providers, peers and route servers tell us goes
 * only to customers, route-server clients and peers without a role;
 * customers' routes go everywhere.  Each class is sent one encoding.
 */
enum { UP0, UP1, PEER, RS, DOWN0, DOWN1, DOWN2, RSC, NONE, NROLES };
static const enum nbrpd_role roles[NROLES] = {
	[UP0] = ROLE_CUSTOMER, [UP1] = ROLE_CUSTOMER, [PEER] = ROLE_PEER, [RS] = ROLE_RS_CLIENT,
	[DOWN0] = ROLE_PROVIDER, [DOWN1] = ROLE_PROVIDER, [DOWN2] = ROLE_PROVIDER, [RSC] = ROLE_RS_SERVER,
	[NONE] = ROLE_NONE,
};

static void assert_told(const struct world *w, const bool *told, uint64_t adv, uint64_t wd)
{
	for (unsigned i = 0; i < NROLES; i++) {
		assert_int_equal(w->peers[i].advertised, told[i] ? adv : 0);
		assert_int_equal(w->peers[i].withdrawn, told[i] ? wd : 0);
	}
}

static void routes_from_providers_and_peers_go_only_down_one_encoding_a_class(void **state)
{
	static const char *const names[NROLES] = { "up0", "up1", "peer", "rs", "down0", "down1", "down2", "rsc", "none" };
	struct world *w = world_roles("r1", NROLES, names, roles);
	up_all(w);
	/* from above and beside: not to the other providers, the peer, the route server */
	static const bool below[NROLES] = { [DOWN0] = 1, [DOWN1] = 1, [DOWN2] = 1, [RSC] = 1, [NONE] = 1 };
	for (unsigned from = UP0; from <= RS; from++) {
		reset_counts(w);
		announce(w, from, 100 * from, 10, names[from], 9, 0);
		run(w, 10);
		assert_told(w, below, 10, 0);
		assert_ptr_equal(w->peers[DOWN1].last, w->peers[DOWN0].last);   /* one encoding */
		assert_ptr_equal(w->peers[NONE].last, w->peers[DOWN0].last);
	}
	/* a customer's routes go everywhere but back, the providers' class one encoding too */
	reset_counts(w);
	announce(w, DOWN2, 1000, 10, "down2", 11, 0);
	run(w, 10);
	for (unsigned i = 0; i < NROLES; i++)
		assert_int_equal(w->peers[i].advertised, i == DOWN2 ? 0 : 10);
	assert_ptr_equal(w->peers[UP1].last, w->peers[UP0].last);
	assert_ptr_equal(w->peers[PEER].last, w->peers[UP0].last);
	assert_ptr_not_equal(w->peers[DOWN0].last, w->peers[UP0].last);
	/* a customer's route wins over the provider's for n0..n4: now providers and peers hear of it */
	reset_counts(w);
	announce(w, DOWN2, 0, 5, "down2", 11, 0);
	run(w, 10);
	static const bool above[NROLES] = { [UP0] = 1, [UP1] = 1, [PEER] = 1, [RS] = 1 };
	for (unsigned i = 0; i < NROLES; i++)
		assert_int_equal(w->peers[i].advertised, above[i] || (below[i] && i != DOWN2) ? 5 : 0);
	/* ... and it goes: the provider's is best again, taken back from providers and peers */
	reset_counts(w);
	withdraw(w, DOWN2, 0, 5);
	run(w, 10);
	for (unsigned i = 0; i < NROLES; i++) {
		assert_int_equal(w->peers[i].withdrawn, above[i] ? 5 : 0);     /* up0 too: its own again */
		assert_int_equal(w->peers[i].advertised, below[i] ? 5 : 0);    /* down2 too: not its own now */
	}
	/* a role changed while up applies from the next session: up1 becomes our customer */
	struct nbrpd_peer_config pc = { .local_pref = 300, .role = ROLE_PROVIDER };
	snprintf(pc.name, sizeof(pc.name), "up1");
	rde_peer_configure(w->peers[UP1].rp, &pc);
	reset_counts(w);
	announce(w, UP0, 0, 1, "up0", 9, 0);
	run(w, 10);
	assert_int_equal(w->peers[UP1].advertised, 0);
	rde_peer_down(w->peers[UP1].rp, false);
	rde_peer_up(w->peers[UP1].rp);
	run(w, 1000);
	assert_int_equal(w->peers[UP1].advertised, 40);  /* the whole table now, but for its own, gone with it */
	world_free(w);
}

static void a_next_hop_change_decides_only_the_names_behind_it(void **state)
{
	struct world *w = world_new(3);
	up_all(w);
	announce(w, 0, 0, 2000, "p0", 9, 0);            /* next hop .9 */
	announce(w, 1, 0, 1000, "p1", 10, 100);         /* the same names, worse, next hop .10 */
	announce(w, 1, 5000, 3000, "p1", 10, 0);        /* names only via .10 */
	run(w, 10);
	w->fib_calls = 0;
	struct nexthop *x = nexthop_lookup(w->nh, AF_INET, (uint8_t[]){ 198, 51, 100, 9 });
	assert_non_null(x);
	nexthop_update(w->nh, x, false, 0, 0, "ospf1");
	run(w, 100);
	assert_int_equal(w->fib_calls, 2000);              /* only the names behind .9 */
	/* those with an alternate moved to it; the others are withdrawn */
	assert_int_equal(w->peers[2].withdrawn, 1000);
	world_free(w);
}

static void a_table_dump_spans_many_turns_and_waits_while_the_session_is_full(void **state)
{
	struct world *w = world_new(2);
	rde_peer_up(w->peers[0].rp);
	run(w, 10);
	announce(w, 0, 0, 100000, "p0", 9, 0);
	run(w, 10);
	struct fake *sink = &w->peers[1];
	rde_peer_up(sink->rp);
	uv_run(&w->loop, UV_RUN_NOWAIT);
	assert_true(sink->advertised > 0 && sink->advertised < 100000);    /* bounded per turn */
	sink->full = true;
	uint64_t before = sink->advertised;
	for (int i = 0; i < 20; i++)
		uv_run(&w->loop, UV_RUN_NOWAIT);
	assert_int_equal(sink->advertised, before);     /* nothing while full */
	sink->full = false;
	rde_peer_drained(sink->rp);
	unsigned turns = run(w, 10000);
	assert_true(turns > 10);
	assert_int_equal(sink->advertised, 100000);
	assert_int_equal(sink->eors, 1);
	world_free(w);
}

static void a_peer_going_down_is_withdrawn_over_many_turns(void **state)
{
	struct world *w = world_new(2);
	up_all(w);
	announce(w, 0, 0, 50000, "p0", 9, 0);
	run(w, 10);
	rde_peer_down(w->peers[0].rp, false);
	unsigned turns = run(w, 10000);
	assert_true(turns > 5);
	assert_int_equal(w->peers[1].withdrawn, 50000);
	assert_int_equal(rde_names(w->rde), 0);
	world_free(w);
}

static void a_restarting_peer_keeps_its_routes_stale_until_swept(void **state)
{
	struct world *w = world_new(2);
	up_all(w);
	announce(w, 0, 0, 100, "p0", 9, 0);
	run(w, 10);
	rde_peer_down(w->peers[0].rp, true);
	run(w, 100);
	assert_int_equal(rde_names(w->rde), 100);
	assert_int_equal(w->peers[1].withdrawn, 0);
	rde_peer_up(w->peers[0].rp);
	announce(w, 0, 0, 60, "p0", 9, 0);              /* it says 60 of them again */
	rde_peer_sweep(w->peers[0].rp);
	run(w, 100);
	assert_int_equal(rde_names(w->rde), 60);
	assert_int_equal(w->peers[1].withdrawn, 40);
	assert_int_equal(w->peers[1].advertised, 100);  /* the 60 again were not news */
	world_free(w);
}

static void a_new_export_policy_is_applied_to_what_the_peer_was_told(void **state)
{
	struct world *w = world_new(2);
	up_all(w);
	announce(w, 0, 0, 10, "p0", 9, 0);
	run(w, 10);
	assert_int_equal(w->peers[1].advertised, 10);
	struct nbrpd_policy_rule deny = { .allow = false };
	name_from_text(&deny.suffix, "n3.example", 10);
	struct nbrpd_peer_config pc = { .local_pref = 100 };
	snprintf(pc.name, sizeof(pc.name), "p1");
	pc.export.nrules = 1;
	pc.export.rules = &deny;
	rde_peer_configure(w->peers[1].rp, &pc);
	run(w, 100);
	assert_int_equal(w->peers[1].withdrawn, 1);
	pc.export.nrules = 0;
	rde_peer_configure(w->peers[1].rp, &pc);
	run(w, 100);
	assert_int_equal(w->peers[1].advertised, 11);
	world_free(w);
}

struct seen_count {
	uint8_t *times;                 /* per name index */
	unsigned n;
};

static void count_seen(const struct rib_entry *e, void *arg)
{
	struct seen_count *c = arg;
	struct name n;
	rde_entry_name(e, &n);
	unsigned i = (unsigned)strtoul((const char *)n.wire + 2, NULL, 10);     /* "nI.example" */
	if (i < c->n)
		c->times[i]++;
}

/* The table doubles (over many turns) while a walk is under way: every name there all along
 * is seen exactly once. */
static void a_walk_sees_every_name_once_while_the_table_grows_under_it(void **state)
{
	struct world *w = world_new(1);
	rde_peer_up(w->peers[0].rp);
	run(w, 10);
	enum { FIRST = 3000, MORE = 60000 };
	announce(w, 0, 0, FIRST, "p0", 9, 0);
	run(w, 10);
	struct seen_count c = { .times = calloc(FIRST, 1), .n = FIRST };
	struct rde_walk *walk = rde_walk_begin(w->rde);
	unsigned steps = 0, added = 0;
	while (!rde_walk_step(w->rde, walk, 64, count_seen, &c)) {
		steps++;
		if (added < MORE) {     /* names past the first set: the table doubles several times */
			announce(w, 0, 100000 + added, 1500, "p0", 9, 0);
			added += 1500;
			uv_run(&w->loop, UV_RUN_NOWAIT);
		}
	}
	rde_walk_end(walk);
	assert_true(steps > 10);
	for (unsigned i = 0; i < FIRST; i++)
		assert_int_equal(c.times[i], 1);
	free(c.times);
	world_free(w);
}

/* peer p offers aggregate "agg.example" at this version from 192.0.2.<src> port 5300 */
/* aggregates.c storing a version of `count` members. */
static void store_aggregate(struct world *w, const struct name *agg, uint32_t version, unsigned count)
{
	struct nameset set;
	nameset_init(&set);
	for (unsigned i = 0; i < count; i++) {
		char text[32];
		struct name m;
		snprintf(text, sizeof(text), "m%u.example", i);
		assert_int_equal(name_from_text(&m, text, strlen(text)), NAME_OK);
		assert_true(nameset_add(&set, m.wire, m.len) >= 0);
	}
	rde_aggregate_stored(w->rde, agg, version, &set);
	nameset_free(&set);
}

static void offer_aggregate(struct world *w, unsigned p, uint32_t version, unsigned src)
{
	static uint8_t agg[] = { 3, 'a', 'g', 'g', 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 0 };
	ProtobufCBinaryData name = { .data = agg, .len = sizeof(agg) };
	uint8_t hop[4] = { 198, 51, 100, 9 };
	char *path[] = { w->peers[p].name };
	char source[32];
	snprintf(source, sizeof(source), "192.0.2.%u 5300", src);
	Nbrp__Route r = NBRP__ROUTE__INIT, *rp = &r;
	r.n_names = 1;
	r.names = &name;
	r.aggregate = name;
	r.aggregate_version = version;
	r.aggregate_source = source;
	r.next_hop.data = hop;
	r.next_hop.len = 4;
	r.next_hop_port = 53;
	r.n_path = 1;
	r.path = path;
	Nbrp__Update u = NBRP__UPDATE__INIT;
	u.n_routes = 1;
	u.routes = &rp;
	rde_peer_update(w->peers[p].rp, &u, NULL);
}

static void an_aggregate_is_passed_on_only_once_stored_with_our_version_and_source(void **state)
{
	struct world *w = world_new(3);
	w->cfg.has_transfer = true;
	w->cfg.transfer.family = AF_INET;
	memcpy(w->cfg.transfer.addr, (uint8_t[]){ 192, 0, 2, 1 }, 4);
	w->cfg.transfer.port = 5300;
	up_all(w);
	offer_aggregate(w, 0, 7, 10);
	run(w, 10);
	/* the RDE asks for version 7 from p0's source, inrpd gets the aggregate's routes, no member */
	assert_int_equal(w->offered_calls, 1);
	assert_int_equal(w->offered_version, 7);
	assert_int_equal(w->offered_source.port, 5300);
	assert_memory_equal(w->offered_source.addr, ((uint8_t[]){ 192, 0, 2, 10 }), 4);
	assert_int_equal(w->fib_agg_calls, 1);
	assert_int_equal(w->fib_agg_count, 1);
	assert_int_equal(w->fib_calls, 0);
	/* nobody is told before a version is stored here */
	assert_int_equal(w->peers[1].agg_routes + w->peers[2].agg_routes, 0);
	struct name agg;
	assert_int_equal(name_from_text(&agg, "agg.example", 11), NAME_OK);
	store_aggregate(w, &agg, 6, 1000);    /* an older one, say, while 7 is fetched */
	run(w, 10);
	assert_int_equal(w->peers[1].agg_routes, 1);
	assert_int_equal(w->peers[1].agg_version, 6);
	assert_string_equal(w->peers[1].agg_source, "192.0.2.1 5300");
	assert_int_equal(w->peers[0].agg_routes, 0);   /* not back to where it came from */
	store_aggregate(w, &agg, 7, 1001);
	run(w, 10);
	assert_int_equal(w->peers[2].agg_routes, 2);
	assert_int_equal(w->peers[2].agg_version, 7);
	/* p1 offers an older version: the newest is still asked for, from p0 */
	offer_aggregate(w, 1, 5, 11);
	run(w, 10);
	assert_int_equal(w->offered_version, 7);
	assert_memory_equal(w->offered_source.addr, ((uint8_t[]){ 192, 0, 2, 10 }), 4);
	/* a name of the same name is another route; withdrawing the name leaves the aggregate */
	assert_null(rde_find(w->rde, &agg));
	assert_non_null(rde_find_aggregate(w->rde, &agg));
	/* p0 and p1 withdraw it: peers are told once */
	ProtobufCBinaryData gone = { .data = agg.wire, .len = agg.len };
	Nbrp__Update u = NBRP__UPDATE__INIT;
	u.n_withdrawn = 1;
	u.withdrawn = &gone;                            /* the name: not the aggregate */
	rde_peer_update(w->peers[0].rp, &u, NULL);
	run(w, 10);
	assert_non_null(rde_find_aggregate(w->rde, &agg));
	memset(&u, 0, sizeof(u));
	nbrp__update__init(&u);
	u.n_withdrawn_aggregates = 1;
	u.withdrawn_aggregates = &gone;
	rde_peer_update(w->peers[0].rp, &u, NULL);
	rde_peer_update(w->peers[1].rp, &u, NULL);
	run(w, 10);
	assert_null(rde_find_aggregate(w->rde, &agg));
	assert_int_equal(w->peers[2].agg_withdrawn, 1);
	assert_int_equal(w->fib_agg_count, 0);
	world_free(w);
}

/* Two RDEs in one process, as a simulator runs routers: A's UPDATEs to its peer p1 are B's from
 * its peer r1, read and flushed by B in the middle of A's flush.  The same names come into both
 * from different peers; each RDE keeps its own table, packer, update group and policies. */
static void two_rdes_in_one_process_share_no_state(void **state)
{
	static const char *const b_peers[] = { "r1", "q1", "q2" };
	struct world *a = world_new(2);
	struct world *b = world_named("r2", 3, b_peers);
	a->peers[1].relay_to = &b->peers[0];
	a->peers[1].relay_world = b;
	struct nbrpd_policy_rule deny = { .allow = false };
	name_from_text(&deny.suffix, "n3.example", 10);
	struct nbrpd_peer_config pc = { .local_pref = 100, .export = { .nrules = 1, .rules = &deny } };
	snprintf(pc.name, sizeof(pc.name), "q1");
	rde_peer_configure(b->peers[1].rp, &pc);        /* B's q1 is not told n3.example */
	up_all(a);
	up_all(b);
	announce(b, 2, 0, 3000, "q2", 9, 0);
	run(b, 10);
	announce(a, 0, 0, 3000, "p0", 9, 0);
	run(a, 10);
	run(b, 10);

	struct fake *a_sink = &a->peers[1];
	assert_int_equal(a_sink->updates, 3);           /* A's UPDATEs full, whatever B did meanwhile */
	assert_int_equal(a_sink->advertised, 3000);
	assert_string_equal(a_sink->first_path[0], "r1");
	assert_string_equal(a_sink->first_path[1], "p0");
	assert_int_equal(a->peers[0].advertised, 0);
	assert_int_equal(a->fib_calls, 3000);

	/* B keeps its own shorter route: what A sent is a second route, news to nobody */
	struct rde_stats st;
	rde_stats(b->rde, &st);
	assert_int_equal(st.names, 3000);
	assert_int_equal(st.routes, 6000);
	rde_stats(a->rde, &st);
	assert_int_equal(st.routes, 3000);
	for (unsigned i = 0; i < 2; i++) {
		struct fake *f = &b->peers[i];
		assert_int_equal(f->advertised, i == 1 ? 2999 : 3000);
		assert_int_equal(f->updates, 3);
		assert_string_equal(f->first_path[0], "r2");
		assert_string_equal(f->first_path[1], "q2");
	}
	assert_int_equal(b->peers[2].advertised, 0);
	assert_int_equal(b->fib_calls, 6000);           /* its names, then their second routes */
	world_free(a);
	world_free(b);
}

static size_t name_of(unsigned i, uint8_t wire[32])
{
	int l = snprintf((char *)wire + 1, 31, "n%u", i);
	wire[0] = (uint8_t)l;
	memcpy(&wire[1 + l], "\7example\0", 9);
	return (size_t)l + 10;
}

static struct rib_entry *lookup(struct rib *t, unsigned i)
{
	uint8_t wire[32];
	size_t len = name_of(i, wire);
	return rib_lookup(t, wire, len, rib_hash(wire, len));
}

/* The table alone: names inserted while doublings are under way (moved a bucket an insert and
 * some more a turn, by the hash bits kept in the entry) are all found, during and after, once. */
static void every_name_is_found_while_and_after_the_table_doubles(void **state)
{
	struct rib t;
	assert_int_equal(rib_init(&t), 0);
	enum { N = 200000 };
	uint8_t wire[32];
	for (unsigned i = 0; i < N; i++) {
		size_t len = name_of(i, wire);
		struct rib_entry *e = rib_get(&t, wire, len, rib_hash(wire, len));
		assert_non_null(e);
		assert_int_equal(e->len, len);
		if (i % 2048 == 0)
			rib_grow_step(&t, 512);         /* a loop turn's share */
		if (i % 1000 == 999)
			assert_non_null(lookup(&t, i / 3));     /* an earlier name, mid-doubling */
	}
	assert_true(t.nbuckets >= N / 2);
	while (rib_grow_step(&t, 4096))
		;
	for (unsigned i = 0; i < N; i++) {
		struct rib_entry *e = lookup(&t, i);
		assert_non_null(e);
		size_t len = name_of(i, wire);
		assert_memory_equal(e->wire, wire, len);
		assert_ptr_equal(rib_get(&t, wire, len, rib_hash(wire, len)), e);      /* no second entry */
	}
	assert_int_equal(t.entries, N);
	assert_null(lookup(&t, N));
	rib_destroy(&t);
}

/* ---- update-delay: the loop's clock set by hand and turns taken directly, as sim/ does ---- */

static void at(struct world *w, uint64_t t0, uint64_t ms)
{
	w->loop.time = t0 + ms;
	for (unsigned k = 0; k < 100 && rde_turn(w->rde); k++)
		;
}

/* n0.example from peer p, its path [origin] with the origin's stamp seq; with an origin
 * withdrawal of owd_origin up to owd_seq instead when owd_origin is set. */
static void n0_update(struct world *w, unsigned p, const char *origin, uint64_t seq, const char *owd_origin,
		      uint64_t owd_seq)
{
	uint8_t wire[] = { 2, 'n', '0', 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 0 };
	ProtobufCBinaryData name = { .data = wire, .len = sizeof(wire) };
	uint8_t hop[4] = { 198, 51, 100, (uint8_t)(10 + p) };
	char *path[] = { w->peers[p].name, (char *)origin };
	Nbrp__Route r = NBRP__ROUTE__INIT, *rp = &r;
	r.n_names = 1;
	r.names = &name;
	r.next_hop.data = hop;
	r.next_hop.len = 4;
	r.next_hop_port = 53;
	r.n_path = 2;
	r.path = path;
	r.origin_seq = seq;
	Nbrp__OriginWithdrawal ow = NBRP__ORIGIN_WITHDRAWAL__INIT, *owp = &ow;
	ow.name = name;
	ow.origin = (char *)owd_origin;
	ow.origin_seq = owd_seq;
	Nbrp__Update u = NBRP__UPDATE__INIT;
	if (owd_origin) {
		u.n_origin_withdrawals = 1;
		u.origin_withdrawals = &owp;
	} else {
		u.n_routes = 1;
		u.routes = &rp;
	}
	rde_peer_update(w->peers[p].rp, &u, NULL);
}

/* A move seen by r1: n0's origin x withdrawn (through p0), then n0 from origin y (through p1)
 * 50 ms later; p2 listens.  Returns p2's recorder. */
static struct fake *move_within(struct world *w, uint64_t delay_ms)
{
	up_all(w);
	n0_update(w, 0, "x", 5, NULL, 0);
	run(w, 10);
	assert_int_equal(w->peers[2].advertised, 1);
	w->peers[2].updates = 0;
	w->cfg.update_delay_ms = delay_ms;
	uint64_t t0 = uv_now(&w->loop), fib = w->fib_calls;
	n0_update(w, 0, NULL, 0, "x", 5);
	at(w, t0, 0);
	assert_int_equal(w->fib_calls, fib + 1);        /* inrpd hears at once, whatever the delay */
	n0_update(w, 1, "y", 9, NULL, 0);
	at(w, t0, 50);
	return &w->peers[2];
}

static void a_move_within_the_update_delay_leaves_as_one_update_with_both(void **state)
{
	struct world *w = world_new(3);
	struct fake *f = move_within(w, 100);
	assert_int_equal(f->updates, 0);                /* held */
	assert_int_equal(rde_wakeup(w->rde), w->loop.time + 50);
	at(w, w->loop.time, 49);
	assert_int_equal(f->updates, 0);
	at(w, w->loop.time, 1);                         /* the delay after the first change: due */
	assert_int_equal(f->updates, 1);
	assert_int_equal(f->both, 1);                   /* the origin withdrawal and the new route */
	assert_int_equal(f->owd, 1);
	assert_int_equal(f->withdrawn, 0);
	assert_int_equal(f->advertised, 2);
	assert_string_equal(f->first_path[2], "y");
	assert_int_equal(rde_wakeup(w->rde), UINT64_MAX);
	/* the old route's peer hears the new route and the withdrawal as well, once */
	assert_int_equal(w->peers[0].updates, 1);
	assert_int_equal(w->peers[0].owd, 1);
	world_free(w);
}

static void without_an_update_delay_a_move_is_two_updates_at_once(void **state)
{
	struct world *w = world_new(3);
	struct fake *f = move_within(w, 0);
	assert_int_equal(f->updates, 2);                /* the withdrawal (its origin's), then the route */
	assert_int_equal(f->withdrawn, 1);
	assert_int_equal(f->owd, 1);
	assert_int_equal(f->both, 0);
	assert_int_equal(rde_wakeup(w->rde), UINT64_MAX);
	world_free(w);
}

/* Names changed later in the window leave with the first, no later than the delay after it;
 * a peer coming up meanwhile gets its table and END-OF-RIB at once, then the held changes. */
static void held_changes_leave_together_and_dumps_are_not_held(void **state)
{
	struct world *w = world_new(3);
	w->cfg.update_delay_ms = 100;
	uint64_t t0 = uv_now(&w->loop);
	rde_peer_up(w->peers[0].rp);
	rde_peer_up(w->peers[1].rp);
	at(w, t0, 0);
	assert_int_equal(w->peers[1].eors, 1);          /* not held */
	announce(w, 0, 0, 1, "p0", 9, 0);
	at(w, t0, 0);
	announce(w, 0, 1, 1, "p0", 9, 0);
	rde_peer_up(w->peers[2].rp);
	at(w, t0, 60);
	assert_int_equal(w->peers[2].eors, 1);          /* its table: nothing told yet, so empty */
	assert_int_equal(w->peers[2].advertised, 0);
	assert_int_equal(w->peers[1].updates, 0);
	assert_int_equal(rde_wakeup(w->rde), t0 + 100);
	at(w, t0, 100);
	for (unsigned i = 1; i < 3; i++) {
		assert_int_equal(w->peers[i].updates, 1);
		assert_int_equal(w->peers[i].advertised, 2);
	}
	/* the next change starts a window of its own */
	announce(w, 0, 2, 1, "p0", 9, 0);
	at(w, t0, 150);
	assert_int_equal(rde_wakeup(w->rde), t0 + 250);
	world_free(w);
}

/* A name left without a route waits for withdrawal-delay: a move whose new route comes after
 * update-delay but within it still leaves as one UPDATE; a name really withdrawn leaves then,
 * while another name's change in the same window leaves after update-delay. */
static void a_name_left_without_a_route_waits_for_the_withdrawal_delay(void **state)
{
	struct world *w = world_new(3);
	up_all(w);
	n0_update(w, 0, "x", 5, NULL, 0);
	run(w, 10);
	struct fake *f = &w->peers[2];
	f->updates = 0;
	w->cfg.update_delay_ms = 25;
	w->cfg.withdrawal_delay_ms = 100;
	uint64_t t0 = uv_now(&w->loop);
	n0_update(w, 0, NULL, 0, "x", 5);
	at(w, t0, 0);
	at(w, t0, 25);
	assert_int_equal(f->updates, 0);
	assert_int_equal(rde_wakeup(w->rde), t0 + 100);
	n0_update(w, 1, "y", 9, NULL, 0);
	at(w, t0, 60);
	assert_int_equal(f->updates, 0);
	at(w, t0, 100);
	assert_int_equal(f->updates, 1);
	assert_int_equal(f->both, 1);
	assert_int_equal(f->withdrawn, 0);
	assert_string_equal(f->first_path[2], "y");
	/* y withdraws it, and another name comes: that one leaves first */
	n0_update(w, 1, NULL, 0, "y", 9);
	announce(w, 0, 7, 1, "p0", 9, 0);
	at(w, t0, 200);
	at(w, t0, 225);
	assert_int_equal(f->updates, 2);
	assert_int_equal(f->withdrawn, 0);
	at(w, t0, 299);
	assert_int_equal(f->updates, 2);
	at(w, t0, 300);
	assert_int_equal(f->updates, 3);
	assert_int_equal(f->withdrawn, 1);
	assert_int_equal(f->owd, 2);
	assert_int_equal(rde_wakeup(w->rde), UINT64_MAX);
	/* a name lost without an origin withdrawal (its peer withdrew it) leaves after update-delay */
	uint8_t wire[32];
	ProtobufCBinaryData gone = { .data = wire };
	gone.len = name_of(7, wire);
	Nbrp__Update u = NBRP__UPDATE__INIT;
	u.n_withdrawn = 1;
	u.withdrawn = &gone;
	rde_peer_update(w->peers[0].rp, &u, NULL);
	at(w, t0, 400);
	assert_int_equal(rde_wakeup(w->rde), t0 + 425);
	at(w, t0, 425);
	assert_int_equal(f->updates, 4);
	assert_int_equal(f->withdrawn, 2);
	world_free(w);
}

/* nbrpd's loop, run for real: the RDE's timer wakes it when the delay is over. */
static void the_loop_wakes_for_held_changes(void **state)
{
	struct world *w = world_new(2);
	up_all(w);
	w->cfg.update_delay_ms = 20;
	announce(w, 0, 0, 1, "p0", 9, 0);
	uv_run(&w->loop, UV_RUN_NOWAIT);                /* the turn that holds it */
	uint64_t t0 = uv_now(&w->loop);
	assert_int_equal(w->peers[1].updates, 0);
	while (!w->peers[1].updates)
		uv_run(&w->loop, UV_RUN_ONCE);          /* blocks in poll until the timer */
	uv_update_time(&w->loop);
	assert_true(uv_now(&w->loop) >= t0 + 19);      /* the RDE's clock is whole ms */
	assert_int_equal(w->peers[1].advertised, 1);
	world_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(names_share_routes_and_updates_are_full),
		cmocka_unit_test(peers_alike_share_one_encoded_update_and_more_than_64_peers_work),
		cmocka_unit_test(a_peer_in_the_path_is_not_told_and_is_told_the_withdrawal_of_what_it_had),
		cmocka_unit_test(routes_from_providers_and_peers_go_only_down_one_encoding_a_class),
		cmocka_unit_test(a_next_hop_change_decides_only_the_names_behind_it),
		cmocka_unit_test(a_table_dump_spans_many_turns_and_waits_while_the_session_is_full),
		cmocka_unit_test(a_peer_going_down_is_withdrawn_over_many_turns),
		cmocka_unit_test(a_restarting_peer_keeps_its_routes_stale_until_swept),
		cmocka_unit_test(a_new_export_policy_is_applied_to_what_the_peer_was_told),
		cmocka_unit_test(a_walk_sees_every_name_once_while_the_table_grows_under_it),
		cmocka_unit_test(an_aggregate_is_passed_on_only_once_stored_with_our_version_and_source),
		cmocka_unit_test(two_rdes_in_one_process_share_no_state),
		cmocka_unit_test(every_name_is_found_while_and_after_the_table_doubles),
		cmocka_unit_test(a_move_within_the_update_delay_leaves_as_one_update_with_both),
		cmocka_unit_test(without_an_update_delay_a_move_is_two_updates_at_once),
		cmocka_unit_test(held_changes_leave_together_and_dumps_are_not_held),
		cmocka_unit_test(a_name_left_without_a_route_waits_for_the_withdrawal_delay),
		cmocka_unit_test(the_loop_wakes_for_held_changes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
