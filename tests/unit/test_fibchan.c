#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <cmocka.h>
#include <urcu-qsbr.h>

#include "fibchan.h"

/* Builders for messages, as nbrpd will send them. */

static ProtobufCBinaryData wire_of(const char *text, struct name *keep)
{
	if (name_from_text(keep, text, strlen(text)) != NAME_OK)
		fail_msg("bad name %s", text);
	ProtobufCBinaryData b = { keep->len, keep->wire };
	return b;
}

struct built_route {
	Crfib__Route r;
	uint8_t addr[16];
};

static Crfib__Route *server(struct built_route *b, const char *addr)
{
	Crfib__Route init = CRFIB__ROUTE__INIT;
	b->r = init;
	b->r.kind = CRFIB__ROUTE__KIND__SERVER;
	if (inet_pton(AF_INET, addr, b->addr) == 1)
		b->r.addr.len = 4;
	else if (inet_pton(AF_INET6, addr, b->addr) == 1)
		b->r.addr.len = 16;
	else
		fail_msg("bad address %s", addr);
	b->r.addr.data = b->addr;
	return &b->r;
}

static const char *lookup(struct fib *fib, const char *q, char *buf)
{
	struct name n;
	struct fib_result res;
	name_from_text(&n, q, strlen(q));
	if (!fib_lookup_longest_suffix(fib, &n, &res) || res.sets[0]->count == 0)
		return "";
	return route_addr_format(&res.sets[0]->routes[0], buf, INET6_ADDRSTRLEN);
}

static int setup(void **state)
{
	*state = fib_create();
	return *state ? 0 : -1;
}

static int teardown(void **state)
{
	fib_destroy(*state);
	return 0;
}

static void frames_reassemble_however_the_stream_is_cut(void **state)
{
	Crfib__SyncBegin begin = CRFIB__SYNC_BEGIN__INIT;
	Crfib__SyncEnd end = CRFIB__SYNC_END__INIT;
	Crfib__FibMessage m1 = CRFIB__FIB_MESSAGE__INIT, m2 = CRFIB__FIB_MESSAGE__INIT;
	begin.epoch = 7;
	end.epoch = 7;
	m1.body_case = CRFIB__FIB_MESSAGE__BODY_SYNC_BEGIN;
	m1.sync_begin = &begin;
	m2.body_case = CRFIB__FIB_MESSAGE__BODY_SYNC_END;
	m2.sync_end = &end;
	size_t l1, l2;
	uint8_t *f1 = fibchan_encode(&m1, &l1), *f2 = fibchan_encode(&m2, &l2);
	assert_non_null(f1);
	assert_non_null(f2);
	uint8_t stream[64];
	memcpy(stream, f1, l1);
	memcpy(stream + l1, f2, l2);
	/* every split point, fed in two pieces */
	for (size_t cut = 0; cut <= l1 + l2; cut++) {
		struct fibchan_reader r;
		char err[256];
		Crfib__FibMessage *m;
		int got = 0;
		fibchan_reader_init(&r);
		assert_int_equal(fibchan_reader_feed(&r, stream, cut), 0);
		while (fibchan_reader_next(&r, &m, err, sizeof(err)) == 1) {
			got++;
			fibchan_message_free(m);
		}
		assert_int_equal(fibchan_reader_feed(&r, stream + cut, l1 + l2 - cut), 0);
		while (fibchan_reader_next(&r, &m, err, sizeof(err)) == 1) {
			if (got == 0)
				assert_int_equal(m->sync_begin->epoch, 7);
			else
				assert_int_equal(m->body_case, CRFIB__FIB_MESSAGE__BODY_SYNC_END);
			got++;
			fibchan_message_free(m);
		}
		assert_int_equal(got, 2);
		fibchan_reader_free(&r);
	}
	free(f1);
	free(f2);
}

static void bad_frames_break_the_stream_with_a_reason(void **state)
{
	struct {
		const char *what;
		uint8_t bytes[8];
		size_t len;
		const char *err;
	} cases[] = {
		{ "empty", { 0, 0, 0, 0 }, 4, "empty frame" },
		{ "oversize", { 0x7F, 0xFF, 0xFF, 0xFF }, 4, "over the limit" },
		{ "garbage", { 0, 0, 0, 3, 0xFF, 0xFF, 0xFF }, 7, "not a FibMessage" },
		{ "no body", { 0, 0, 0, 2, 0x48, 0x01 }, 6, "without a body" },  /* an unknown field only */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fibchan_reader r;
		Crfib__FibMessage *m = NULL;
		char err[256] = "";
		fibchan_reader_init(&r);
		assert_int_equal(fibchan_reader_feed(&r, cases[i].bytes, cases[i].len), 0);
		assert_int_equal(fibchan_reader_next(&r, &m, err, sizeof(err)), -1);
		if (!strstr(err, cases[i].err))
			fail_msg("%s: error '%s' does not say '%s'", cases[i].what, err, cases[i].err);
		fibchan_reader_free(&r);
	}
	/* a partial header or frame just waits for more */
	struct fibchan_reader r;
	Crfib__FibMessage *m;
	char err[64];
	fibchan_reader_init(&r);
	const uint8_t partial[] = { 0, 0, 0, 9, 1, 2 };
	assert_int_equal(fibchan_reader_feed(&r, partial, 2), 0);
	assert_int_equal(fibchan_reader_next(&r, &m, err, sizeof(err)), 0);
	assert_int_equal(fibchan_reader_feed(&r, partial + 2, 4), 0);
	assert_int_equal(fibchan_reader_next(&r, &m, err, sizeof(err)), 0);
	fibchan_reader_free(&r);
}

static void update_routes_names_and_aggregates(void **state)
{
	struct fib *fib = *state;
	char buf[INET6_ADDRSTRLEN], err[256];
	struct name keep[8];
	struct built_route br[4];

	/* an aggregate with one server, two members, and a name of its own */
	Crfib__AggregateRoutes agg = CRFIB__AGGREGATE_ROUTES__INIT;
	Crfib__Route *agg_routes[] = { server(&br[0], "192.0.2.1") };
	agg.name = wire_of("customers.isp", &keep[0]);
	agg.version = 1;
	agg.n_routes = 1;
	agg.routes = agg_routes;
	Crfib__AggregateRoutes *aggs[] = { &agg };

	Crfib__Membership mem = CRFIB__MEMBERSHIP__INIT;
	ProtobufCBinaryData members[] = { wire_of("stanford.edu", &keep[1]), wire_of("berkeley.edu", &keep[2]) };
	mem.aggregate = wire_of("customers.isp", &keep[3]);
	mem.n_add = 2;
	mem.add = members;
	Crfib__Membership *mems[] = { &mem };

	Crfib__NameRoutes own = CRFIB__NAME_ROUTES__INIT;
	Crfib__Route *own_routes[] = { server(&br[1], "2001:db8::5"), server(&br[2], "192.0.2.5") };
	own.name = wire_of("shop.example", &keep[4]);
	own.n_routes = 2;
	own.routes = own_routes;
	Crfib__NameRoutes alias = CRFIB__NAME_ROUTES__INIT;
	alias.name = wire_of("old.example", &keep[5]);
	alias.redirect = wire_of("shop.example", &keep[6]);
	Crfib__NameRoutes *names[] = { &own, &alias };

	Crfib__Update u = CRFIB__UPDATE__INIT;
	u.n_aggregates = 1;
	u.aggregates = aggs;
	u.n_memberships = 1;
	u.memberships = mems;
	u.n_names = 2;
	u.names = names;
	assert_int_equal(fibchan_apply_update(fib, &u, err, sizeof(err)), 0);

	assert_string_equal(lookup(fib, "www.stanford.edu", buf), "192.0.2.1");
	assert_string_equal(lookup(fib, "berkeley.edu", buf), "192.0.2.1");
	assert_string_equal(lookup(fib, "cart.shop.example", buf), "2001:db8::5");
	struct name q;
	struct fib_result res;
	name_from_text(&q, "old.example", 11);
	assert_true(fib_lookup_longest_suffix(fib, &q, &res));
	assert_true(res.sets[0]->has_redirect);

	/* a second update: new aggregate routes move both members; a withdraw; a deletion */
	Crfib__Route *moved[] = { server(&br[3], "192.0.2.9") };
	agg.routes = moved;
	agg.version = 2;
	own.n_routes = 0;
	Crfib__Update u2 = CRFIB__UPDATE__INIT;
	u2.n_aggregates = 1;
	u2.aggregates = aggs;
	Crfib__NameRoutes *withdraw[] = { &own };
	u2.n_names = 1;
	u2.names = withdraw;
	assert_int_equal(fibchan_apply_update(fib, &u2, err, sizeof(err)), 0);
	assert_string_equal(lookup(fib, "www.stanford.edu", buf), "192.0.2.9");
	assert_string_equal(lookup(fib, "berkeley.edu", buf), "192.0.2.9");
	assert_string_equal(lookup(fib, "cart.shop.example", buf), "");

	Crfib__Update u3 = CRFIB__UPDATE__INIT;
	ProtobufCBinaryData gone[] = { wire_of("customers.isp", &keep[7]) };
	u3.n_aggregates_deleted = 1;
	u3.aggregates_deleted = gone;
	assert_int_equal(fibchan_apply_update(fib, &u3, err, sizeof(err)), 0);
	assert_string_equal(lookup(fib, "www.stanford.edu", buf), "");
	/* deleting it again is not an error */
	assert_int_equal(fibchan_apply_update(fib, &u3, err, sizeof(err)), 0);
}

/* n members "mK.example" for K from first, packed as [len][wire] */
static size_t pack(uint8_t *out, unsigned first, unsigned n)
{
	size_t o = 0;
	for (unsigned k = first; k < first + n; k++) {
		char text[32];
		struct name nm;
		snprintf(text, sizeof(text), "m%u.example", k);
		name_from_text(&nm, text, strlen(text));
		out[o++] = nm.len;
		memcpy(out + o, nm.wire, nm.len);
		o += nm.len;
	}
	return o;
}

static void packed_members_join_and_leave_and_bad_ones_change_nothing(void **state)
{
	struct fib *fib = *state;
	char buf[INET6_ADDRSTRLEN], err[256];
	struct name keep[2];
	struct built_route br[1];
	static uint8_t packed[1000 * 20];

	Crfib__AggregateRoutes agg = CRFIB__AGGREGATE_ROUTES__INIT;
	Crfib__Route *agg_routes[] = { server(&br[0], "192.0.2.7") };
	agg.name = wire_of("packed.isp", &keep[0]);
	agg.n_routes = 1;
	agg.routes = agg_routes;
	Crfib__AggregateRoutes *aggs[] = { &agg };
	Crfib__Membership mem = CRFIB__MEMBERSHIP__INIT;
	mem.aggregate = wire_of("packed.isp", &keep[1]);
	mem.add_packed.data = packed;
	mem.add_packed.len = pack(packed, 0, 1000);   /* several batches of the FIB's */
	Crfib__Membership *mems[] = { &mem };
	Crfib__Update u = CRFIB__UPDATE__INIT;
	u.n_aggregates = 1;
	u.aggregates = aggs;
	u.n_memberships = 1;
	u.memberships = mems;
	assert_int_equal(fibchan_apply_update(fib, &u, err, sizeof(err)), 0);
	assert_string_equal(lookup(fib, "m0.example", buf), "192.0.2.7");
	assert_string_equal(lookup(fib, "www.m999.example", buf), "192.0.2.7");

	/* the first 500 leave */
	mem.add_packed.len = 0;
	mem.remove_packed.data = packed;
	mem.remove_packed.len = pack(packed, 0, 500);
	assert_int_equal(fibchan_apply_update(fib, &u, err, sizeof(err)), 0);
	assert_string_equal(lookup(fib, "m499.example", buf), "");
	assert_string_equal(lookup(fib, "m500.example", buf), "192.0.2.7");

	/* broken lists: checked whole first, so nothing changes */
	static const struct {
		uint8_t bytes[16];
		size_t len;
	} bad[] = {
		{ { 3, 2, 'a', 'b' }, 3 },                      /* runs past the end */
		{ { 4, 1, 'A', 0, 0 }, 5 },                     /* not lowercase, bytes after the root */
		{ { 0 }, 1 },                                   /* an empty entry */
		{ { 4, 1, 'a', 0xc0, 0 }, 5 },                  /* a compression pointer */
	};
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		size_t good = pack(packed, 0, 3);
		memcpy(packed + good, bad[k].bytes, bad[k].len);
		mem.remove_packed.len = 0;
		mem.add_packed.data = packed;
		mem.add_packed.len = good + bad[k].len;
		assert_int_equal(fibchan_apply_update(fib, &u, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "memberships.add_packed[0]: name 3"));
		assert_string_equal(lookup(fib, "m0.example", buf), "");       /* not added back */
	}
}

/* Names packed in groups sharing their routes: set, withdrawn, and checked whole first. */
static void packed_names_share_their_routes(void **state)
{
	struct fib *fib = *state;
	char buf[INET6_ADDRSTRLEN], err[256];
	struct built_route br[1];
	static uint8_t packed[1000 * 20];
	Crfib__NamesRoutes group = CRFIB__NAMES_ROUTES__INIT, none = CRFIB__NAMES_ROUTES__INIT;
	Crfib__Route *routes[] = { server(&br[0], "192.0.2.8") };
	group.names.data = packed;
	group.names.len = pack(packed, 0, 1000);        /* more than one of the FIB's batches */
	group.n_routes = 1;
	group.routes = routes;
	Crfib__NamesRoutes *groups[] = { &group, &none };
	Crfib__Update u = CRFIB__UPDATE__INIT;
	u.n_names_packed = 1;
	u.names_packed = groups;
	assert_int_equal(fibchan_apply_update(fib, &u, err, sizeof(err)), 0);
	assert_string_equal(lookup(fib, "www.m999.example", buf), "192.0.2.8");
	/* a second group without routes withdraws its names, after the first */
	static uint8_t gone[64];
	none.names.data = gone;
	none.names.len = pack(gone, 5, 2);
	u.n_names_packed = 2;
	assert_int_equal(fibchan_apply_update(fib, &u, err, sizeof(err)), 0);
	assert_string_equal(lookup(fib, "m5.example", buf), "");
	assert_string_equal(lookup(fib, "m7.example", buf), "192.0.2.8");
	/* a broken list changes nothing */
	gone[1] = 'A';
	assert_int_equal(fibchan_apply_update(fib, &u, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "names_packed[1]: name 0"));
	assert_string_equal(lookup(fib, "m5.example", buf), "");
}

static void a_bad_update_changes_nothing(void **state)
{
	struct fib *fib = *state;
	char buf[INET6_ADDRSTRLEN], err[256];
	struct name keep[4];
	struct built_route br[2];

	Crfib__NameRoutes good = CRFIB__NAME_ROUTES__INIT, bad = CRFIB__NAME_ROUTES__INIT;
	Crfib__Route *r1[] = { server(&br[0], "192.0.2.1") };
	good.name = wire_of("good.example", &keep[0]);
	good.n_routes = 1;
	good.routes = r1;
	Crfib__Route *r2[] = { server(&br[1], "192.0.2.2") };
	bad.name = wire_of("bad.example", &keep[1]);
	bad.n_routes = 1;
	bad.routes = r2;
	Crfib__NameRoutes *names[] = { &good, &bad };
	Crfib__Update u = CRFIB__UPDATE__INIT;
	u.n_names = 2;
	u.names = names;

	/* an address of 5 bytes */
	br[1].r.addr.len = 5;
	assert_int_equal(fibchan_apply_update(fib, &u, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "names[1].routes[0]: address of 5 bytes"));
	assert_string_equal(lookup(fib, "good.example", buf), "");
	br[1].r.addr.len = 4;

	/* a router without a port, an unknown kind */
	br[1].r.kind = CRFIB__ROUTE__KIND__ROUTER;
	assert_int_equal(fibchan_apply_update(fib, &u, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "bad port 0"));
	br[1].r.kind = (Crfib__Route__Kind)9;
	assert_int_equal(fibchan_apply_update(fib, &u, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "unknown kind 9"));
	br[1].r.kind = CRFIB__ROUTE__KIND__SERVER;

	/* a name that is not a wire name */
	uint8_t broken[] = { 5, 'a', 'b', 0 };
	bad.name.data = broken;
	bad.name.len = sizeof(broken);
	assert_int_equal(fibchan_apply_update(fib, &u, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "names[1]: bad name"));
	bad.name = wire_of("bad.example", &keep[1]);

	/* routes and a redirect together */
	bad.redirect = wire_of("x.example", &keep[2]);
	assert_int_equal(fibchan_apply_update(fib, &u, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "both routes and a redirect"));
	bad.redirect.len = 0;

	/* a membership in an aggregate that does not exist */
	Crfib__Membership mem = CRFIB__MEMBERSHIP__INIT;
	mem.aggregate = wire_of("nowhere", &keep[3]);
	Crfib__Membership *mems[] = { &mem };
	u.n_memberships = 1;
	u.memberships = mems;
	assert_int_equal(fibchan_apply_update(fib, &u, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "memberships[0]: no aggregate 'nowhere.'"));
	assert_string_equal(lookup(fib, "good.example", buf), "");

	/* fixed, it goes through */
	u.n_memberships = 0;
	assert_int_equal(fibchan_apply_update(fib, &u, err, sizeof(err)), 0);
	assert_string_equal(lookup(fib, "good.example", buf), "192.0.2.1");
	assert_string_equal(lookup(fib, "bad.example", buf), "192.0.2.2");
}

int main(void)
{
	rcu_register_thread();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(frames_reassemble_however_the_stream_is_cut),
		cmocka_unit_test(bad_frames_break_the_stream_with_a_reason),
		cmocka_unit_test_setup_teardown(update_routes_names_and_aggregates, setup, teardown),
		cmocka_unit_test_setup_teardown(packed_members_join_and_leave_and_bad_ones_change_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(packed_names_share_their_routes, setup, teardown),
		cmocka_unit_test_setup_teardown(a_bad_update_changes_nothing, setup, teardown),
	};
	int rc = cmocka_run_group_tests_name("fibchan", tests, NULL, NULL);
	rcu_unregister_thread();
	return rc;
}
