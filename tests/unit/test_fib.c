#include <ctype.h>
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

#include "fib.h"

static struct name N(const char *text)
{
	struct name n;
	if (name_from_text(&n, text, strlen(text)) != NAME_OK)
		fail_msg("bad name %s", text);
	return n;
}

static struct route server(const char *addr)
{
	struct route r;
	memset(&r, 0, sizeof(r));
	r.kind = ROUTE_SERVER;
	if (!route_addr_parse(&r, addr))
		fail_msg("bad address %s", addr);
	return r;
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

/* The first address of the best set for a longest-suffix lookup, or "" */
static const char *lookup_addr(struct fib *f, const char *q, char *buf)
{
	struct name n = N(q);
	struct fib_result res;
	if (!fib_lookup_longest_suffix(f, &n, &res))
		return "";
	return route_addr_format(&res.sets[0]->routes[0], buf, INET6_ADDRSTRLEN);
}

static void set_routes(struct fib *f, const char *name, const char *addr)
{
	struct name n = N(name);
	struct route r = server(addr);
	assert_int_equal(fib_set_routes(f, &n, &r, 1), FIB_OK);
}

static void longest_suffix_wins(void **state)
{
	struct fib *f = *state;
	char buf[INET6_ADDRSTRLEN];
	set_routes(f, "example.com", "192.0.2.1");
	set_routes(f, "shop.example.com", "192.0.2.2");
	assert_string_equal(lookup_addr(f, "example.com", buf), "192.0.2.1");
	assert_string_equal(lookup_addr(f, "www.example.com", buf), "192.0.2.1");
	assert_string_equal(lookup_addr(f, "a.b.c.example.com", buf), "192.0.2.1");
	assert_string_equal(lookup_addr(f, "shop.example.com", buf), "192.0.2.2");
	assert_string_equal(lookup_addr(f, "x.shop.example.com", buf), "192.0.2.2");
	assert_string_equal(lookup_addr(f, "com", buf), "");
	assert_string_equal(lookup_addr(f, "other.com", buf), "");
	assert_string_equal(lookup_addr(f, "example.org", buf), "");
	/* byte suffixes are not label suffixes */
	assert_string_equal(lookup_addr(f, "anexample.com", buf), "");
}

/* Lookups start at the last two labels: every way up and down from there. */
static void longest_suffix_from_any_depth(void **state)
{
	struct fib *f = *state;
	char buf[INET6_ADDRSTRLEN];
	set_routes(f, "org", "192.0.2.1");                      /* top-level route */
	set_routes(f, "deep.x.y.z.example", "192.0.2.2");       /* five labels, bare ancestors */
	set_routes(f, "com", "192.0.2.3");
	set_routes(f, "a.b.com", "192.0.2.4");                  /* b.com exists, carries nothing */
	/* the two-label suffix does not exist: walk up to the top label */
	assert_string_equal(lookup_addr(f, "a.b.org", buf), "192.0.2.1");
	assert_string_equal(lookup_addr(f, "org", buf), "192.0.2.1");
	/* down through nodes without entries */
	assert_string_equal(lookup_addr(f, "www.deep.x.y.z.example", buf), "192.0.2.2");
	assert_string_equal(lookup_addr(f, "deep.x.y.z.example", buf), "192.0.2.2");
	assert_string_equal(lookup_addr(f, "x.y.z.example", buf), "");
	assert_string_equal(lookup_addr(f, "other.x.y.z.example", buf), "");
	/* b.com exists without an entry and c.b.com does not: com answers */
	assert_string_equal(lookup_addr(f, "c.b.com", buf), "192.0.2.3");
	assert_string_equal(lookup_addr(f, "b.com", buf), "192.0.2.3");
	assert_string_equal(lookup_addr(f, "x.a.b.com", buf), "192.0.2.4");
	struct name q = N("c.b.com");
	struct fib_result res;
	assert_true(fib_lookup_longest_suffix(f, &q, &res));
	assert_int_equal(res.suffix_labels, 1);
	assert_int_equal(res.suffix_offset, 4);        /* "\1c\1b" precede "com" */
	/* one label, and the root */
	assert_string_equal(lookup_addr(f, "example", buf), "");
	struct name root = N(".");
	assert_false(fib_lookup_longest_suffix(f, &root, &res));
	set_routes(f, ".", "192.0.2.9");
	assert_true(fib_lookup_longest_suffix(f, &root, &res));
	assert_int_equal(res.suffix_labels, 0);
	assert_string_equal(lookup_addr(f, "x.y.z.example", buf), "192.0.2.9");
}

static void result_says_which_suffix_matched(void **state)
{
	struct fib *f = *state;
	set_routes(f, "example.com", "192.0.2.1");
	struct name q = N("a.www.example.com");
	struct fib_result res;
	assert_true(fib_lookup_longest_suffix(f, &q, &res));
	assert_int_equal(res.suffix_labels, 2);
	assert_int_equal(res.suffix_offset, 6);        /* "\1a\3www" */
	assert_int_equal(q.wire[res.suffix_offset], 7);
	assert_int_equal(res.nsets, 1);
}

static void exact_lookup_needs_the_whole_name(void **state)
{
	struct fib *f = *state;
	set_routes(f, "example.com", "192.0.2.1");
	struct fib_result res;
	struct name a = N("example.com"), b = N("www.example.com"), c = N("com");
	assert_true(fib_lookup_exact(f, &a, &res));
	assert_false(fib_lookup_exact(f, &b, &res));
	assert_false(fib_lookup_exact(f, &c, &res));
}

static void root_route_is_the_default(void **state)
{
	struct fib *f = *state;
	char buf[INET6_ADDRSTRLEN];
	set_routes(f, ".", "198.51.100.1");
	set_routes(f, "example.net", "192.0.2.9");
	assert_string_equal(lookup_addr(f, "anything.org", buf), "198.51.100.1");
	assert_string_equal(lookup_addr(f, "www.example.net", buf), "192.0.2.9");
	struct name q = N("x.org");
	struct fib_result res;
	assert_true(fib_lookup_longest_suffix(f, &q, &res));
	assert_int_equal(res.suffix_labels, 0);
	assert_int_equal(q.wire[res.suffix_offset], 0);
}

static void ranked_routes_keep_their_order(void **state)
{
	struct fib *f = *state;
	struct route rs[3] = { server("192.0.2.3"), server("2001:db8::1"), server("192.0.2.1") };
	struct name n = N("cdn.example");
	assert_int_equal(fib_set_routes(f, &n, rs, 3), FIB_OK);
	struct fib_result res;
	assert_true(fib_lookup_exact(f, &n, &res));
	assert_int_equal(res.sets[0]->count, 3);
	for (int i = 0; i < 3; i++)
		assert_true(route_equal(&res.sets[0]->routes[i], &rs[i]));
	struct route many[ROUTESET_MAX_ROUTES + 1];
	for (int i = 0; i <= ROUTESET_MAX_ROUTES; i++)
		many[i] = server("192.0.2.1");
	assert_int_equal(fib_set_routes(f, &n, many, ROUTESET_MAX_ROUTES + 1), FIB_ERR_TOO_MANY_ROUTES);
}

static void delete_prunes_empty_nodes(void **state)
{
	struct fib *f = *state;
	struct fib_stats st;
	set_routes(f, "a.b.c.example", "192.0.2.1");
	set_routes(f, "c.example", "192.0.2.2");
	fib_get_stats(f, &st);
	assert_int_equal(st.nodes, 5);  /* root, example, c, b, a */
	assert_int_equal(st.entries, 2);
	struct name n = N("a.b.c.example");
	assert_int_equal(fib_delete(f, &n), FIB_OK);
	assert_int_equal(fib_delete(f, &n), FIB_ERR_NOT_FOUND);
	fib_get_stats(f, &st);
	assert_int_equal(st.nodes, 3);  /* b and a went; c carries a route */
	struct name c = N("c.example");
	assert_int_equal(fib_delete(f, &c), FIB_OK);
	fib_get_stats(f, &st);
	assert_int_equal(st.nodes, 1);
	assert_int_equal(st.entries, 0);
	/* and a deleted name can come back */
	char buf[INET6_ADDRSTRLEN];
	set_routes(f, "a.b.c.example", "192.0.2.7");
	fib_barrier(f);
	assert_string_equal(lookup_addr(f, "a.b.c.example", buf), "192.0.2.7");
}

static void equal_route_sets_are_shared(void **state)
{
	struct fib *f = *state;
	struct fib_stats st;
	set_routes(f, "one.example", "192.0.2.1");
	set_routes(f, "two.example", "192.0.2.1");
	set_routes(f, "three.example", "192.0.2.1");
	fib_get_stats(f, &st);
	assert_int_equal(st.routesets, 1);
	struct fib_result a, b;
	struct name n1 = N("one.example"), n2 = N("two.example");
	assert_true(fib_lookup_exact(f, &n1, &a));
	assert_true(fib_lookup_exact(f, &n2, &b));
	assert_ptr_equal(a.sets[0], b.sets[0]);
	set_routes(f, "two.example", "192.0.2.2");
	fib_get_stats(f, &st);
	assert_int_equal(st.routesets, 2);
	struct name n3 = N("three.example");
	assert_int_equal(fib_delete(f, &n1), FIB_OK);
	assert_int_equal(fib_delete(f, &n3), FIB_OK);
	fib_get_stats(f, &st);
	assert_int_equal(st.routesets, 1);
	/* setting zero routes removes the name's own routes */
	assert_int_equal(fib_set_routes(f, &n2, NULL, 0), FIB_OK);
	fib_get_stats(f, &st);
	assert_int_equal(st.routesets, 0);
	assert_int_equal(st.entries, 0);
	assert_int_equal(st.nodes, 1);
}

static void aggregate_routes_change_every_member_at_once(void **state)
{
	struct fib *f = *state;
	char buf[INET6_ADDRSTRLEN];
	uint32_t agg;
	struct name an = N("calren.net");
	assert_int_equal(fib_aggregate_create(f, &an, &agg), FIB_OK);
	uint32_t again;
	assert_int_equal(fib_aggregate_create(f, &an, &again), FIB_ERR_EXISTS);
	assert_int_equal(again, agg);
	struct name s = N("stanford.edu"), b = N("berkeley.edu");
	assert_int_equal(fib_aggregate_add_member(f, agg, &s), FIB_OK);
	assert_int_equal(fib_aggregate_add_member(f, agg, &b), FIB_OK);
	/* no routes yet: members do not match */
	assert_string_equal(lookup_addr(f, "www.stanford.edu", buf), "");
	struct route r1 = server("192.0.2.1");
	assert_int_equal(fib_aggregate_set_routes(f, agg, &r1, 1), FIB_OK);
	assert_string_equal(lookup_addr(f, "www.stanford.edu", buf), "192.0.2.1");
	assert_string_equal(lookup_addr(f, "berkeley.edu", buf), "192.0.2.1");
	struct route r2 = server("192.0.2.2");
	assert_int_equal(fib_aggregate_set_routes(f, agg, &r2, 1), FIB_OK);
	assert_string_equal(lookup_addr(f, "www.stanford.edu", buf), "192.0.2.2");
	assert_string_equal(lookup_addr(f, "berkeley.edu", buf), "192.0.2.2");
	uint32_t found;
	assert_int_equal(fib_aggregate_find(f, &an, &found), FIB_OK);
	assert_int_equal(found, agg);
}

static void own_routes_come_before_aggregates(void **state)
{
	struct fib *f = *state;
	uint32_t a1, a2;
	struct name n1 = N("agg1"), n2 = N("agg2"), m = N("member.example");
	assert_int_equal(fib_aggregate_create(f, &n1, &a1), FIB_OK);
	assert_int_equal(fib_aggregate_create(f, &n2, &a2), FIB_OK);
	struct route r1 = server("192.0.2.1"), r2 = server("192.0.2.2"), own = server("192.0.2.9");
	fib_aggregate_set_routes(f, a1, &r1, 1);
	fib_aggregate_set_routes(f, a2, &r2, 1);
	assert_int_equal(fib_aggregate_add_member(f, a1, &m), FIB_OK);
	assert_int_equal(fib_aggregate_add_member(f, a2, &m), FIB_OK);
	assert_int_equal(fib_aggregate_add_member(f, a2, &m), FIB_OK);    /* idempotent */
	assert_int_equal(fib_set_routes(f, &m, &own, 1), FIB_OK);
	struct fib_result res;
	assert_true(fib_lookup_exact(f, &m, &res));
	assert_int_equal(res.nsets, 3);
	assert_true(route_equal(&res.sets[0]->routes[0], &own));
	assert_true(route_equal(&res.sets[1]->routes[0], &r1));
	assert_true(route_equal(&res.sets[2]->routes[0], &r2));
	/* dropping own routes and one aggregate leaves the other */
	assert_int_equal(fib_set_routes(f, &m, NULL, 0), FIB_OK);
	assert_int_equal(fib_aggregate_remove_member(f, a1, &m), FIB_OK);
	assert_int_equal(fib_aggregate_remove_member(f, a1, &m), FIB_ERR_NOT_FOUND);
	assert_true(fib_lookup_exact(f, &m, &res));
	assert_int_equal(res.nsets, 1);
	assert_true(route_equal(&res.sets[0]->routes[0], &r2));
	assert_int_equal(fib_aggregate_remove_member(f, a2, &m), FIB_OK);
	assert_false(fib_lookup_exact(f, &m, &res));
	struct fib_stats st;
	fib_get_stats(f, &st);
	assert_int_equal(st.nodes, 1);
}

static void a_name_joins_a_bounded_number_of_aggregates(void **state)
{
	struct fib *f = *state;
	struct name m = N("busy.example");
	uint32_t id;
	for (int i = 0; i <= FIB_MAX_AGGREGATES_PER_NAME; i++) {
		char an[32];
		snprintf(an, sizeof(an), "agg%d", i);
		struct name n = N(an);
		assert_int_equal(fib_aggregate_create(f, &n, &id), FIB_OK);
		int want = i < FIB_MAX_AGGREGATES_PER_NAME ? FIB_OK : FIB_ERR_TOO_MANY_AGGREGATES;
		assert_int_equal(fib_aggregate_add_member(f, id, &m), want);
	}
	assert_int_equal(fib_aggregate_add_member(f, 12345, &m), FIB_ERR_BAD_AGGREGATE);
}

static void empty_aggregate_does_not_hide_a_shorter_suffix(void **state)
{
	struct fib *f = *state;
	char buf[INET6_ADDRSTRLEN];
	uint32_t agg;
	set_routes(f, "example.com", "192.0.2.1");
	struct name an = N("quiet"), m = N("www.example.com");
	assert_int_equal(fib_aggregate_create(f, &an, &agg), FIB_OK);
	assert_int_equal(fib_aggregate_add_member(f, agg, &m), FIB_OK);
	assert_string_equal(lookup_addr(f, "www.example.com", buf), "192.0.2.1");
	struct route r = server("192.0.2.5");
	fib_aggregate_set_routes(f, agg, &r, 1);
	assert_string_equal(lookup_addr(f, "www.example.com", buf), "192.0.2.5");
}

static void deleting_an_aggregate_drops_its_memberships(void **state)
{
	struct fib *f = *state;
	char buf[INET6_ADDRSTRLEN];
	uint32_t agg;
	struct name an = N("big");
	assert_int_equal(fib_aggregate_create(f, &an, &agg), FIB_OK);
	struct route r = server("192.0.2.5");
	fib_aggregate_set_routes(f, agg, &r, 1);
	for (int i = 0; i < 1000; i++) {
		char nm[32];
		snprintf(nm, sizeof(nm), "m%d.example", i);
		struct name n = N(nm);
		assert_int_equal(fib_aggregate_add_member(f, agg, &n), FIB_OK);
	}
	set_routes(f, "m7.example", "192.0.2.7");
	assert_string_equal(lookup_addr(f, "m3.example", buf), "192.0.2.5");
	assert_int_equal(fib_aggregate_delete(f, agg), FIB_OK);
	assert_string_equal(lookup_addr(f, "m3.example", buf), "");
	assert_string_equal(lookup_addr(f, "m7.example", buf), "192.0.2.7");
	struct fib_stats st;
	fib_get_stats(f, &st);
	assert_int_equal(st.aggregates, 0);
	assert_int_equal(st.entries, 1);
	assert_int_equal(st.nodes, 3);
	uint32_t found;
	assert_int_equal(fib_aggregate_find(f, &an, &found), FIB_ERR_NOT_FOUND);
	/* the name can be reused for a new aggregate */
	assert_int_equal(fib_aggregate_create(f, &an, &agg), FIB_OK);
}

/*
 * A member that is a two-label leaf is answered by the lookup's fast path
 * through its aggregate; everything else about it goes the full way.
 */
static void member_leaves_answer_through_their_aggregate(void **state)
{
	struct fib *f = *state;
	char buf[INET6_ADDRSTRLEN];
	uint32_t a, b;
	struct name an = N("a.aggregates"), bn = N("b.aggregates"), m = N("m.com");
	set_routes(f, "com", "192.0.2.1");
	assert_int_equal(fib_aggregate_create(f, &an, &a), FIB_OK);
	assert_int_equal(fib_aggregate_create(f, &bn, &b), FIB_OK);
	struct route ra = server("192.0.2.2"), rb = server("192.0.2.5"), own = server("192.0.2.9");
	assert_int_equal(fib_aggregate_set_routes(f, a, &ra, 1), FIB_OK);
	assert_int_equal(fib_aggregate_add_member(f, a, &m), FIB_OK);

	struct name q = N("www.m.com");
	struct fib_result res;
	assert_true(fib_lookup_longest_suffix(f, &q, &res));
	assert_int_equal(res.nsets, 1);
	assert_int_equal(res.suffix_offset, 4);
	assert_int_equal(res.suffix_labels, 2);
	assert_true(route_equal(&res.sets[0]->routes[0], &ra));
	assert_string_equal(lookup_addr(f, "m.com", buf), "192.0.2.2");
	/* an aggregate without routes leaves its members to the shorter suffix */
	assert_int_equal(fib_aggregate_set_routes(f, a, NULL, 0), FIB_OK);
	assert_string_equal(lookup_addr(f, "www.m.com", buf), "192.0.2.1");
	struct route r3 = server("192.0.2.3");
	assert_int_equal(fib_aggregate_set_routes(f, a, &r3, 1), FIB_OK);
	assert_string_equal(lookup_addr(f, "www.m.com", buf), "192.0.2.3");

	/* own routes first, then the aggregates in join order */
	assert_int_equal(fib_aggregate_set_routes(f, b, &rb, 1), FIB_OK);
	assert_int_equal(fib_aggregate_add_member(f, b, &m), FIB_OK);
	assert_int_equal(fib_set_routes(f, &m, &own, 1), FIB_OK);
	assert_true(fib_lookup_longest_suffix(f, &q, &res));
	assert_int_equal(res.nsets, 3);
	assert_true(route_equal(&res.sets[0]->routes[0], &own));
	assert_true(route_equal(&res.sets[1]->routes[0], &r3));
	assert_true(route_equal(&res.sets[2]->routes[0], &rb));
	assert_int_equal(fib_set_routes(f, &m, NULL, 0), FIB_OK);
	assert_int_equal(fib_aggregate_remove_member(f, b, &m), FIB_OK);
	assert_string_equal(lookup_addr(f, "www.m.com", buf), "192.0.2.3");

	/* a member with a deeper name under it is no leaf */
	set_routes(f, "x.m.com", "192.0.2.4");
	assert_string_equal(lookup_addr(f, "www.m.com", buf), "192.0.2.3");
	assert_string_equal(lookup_addr(f, "m.com", buf), "192.0.2.3");
	assert_string_equal(lookup_addr(f, "a.x.m.com", buf), "192.0.2.4");
	struct name x = N("x.m.com");
	assert_int_equal(fib_delete(f, &x), FIB_OK);
	assert_string_equal(lookup_addr(f, "www.m.com", buf), "192.0.2.3");

	/* deleting the aggregate leaves the member to the shorter suffix again */
	assert_int_equal(fib_aggregate_delete(f, a), FIB_OK);
	assert_string_equal(lookup_addr(f, "www.m.com", buf), "192.0.2.1");
	struct fib_stats st;
	fib_get_stats(f, &st);
	assert_int_equal(st.nodes, 2);
}

/* The delete's scan removes members as it finds them, whatever else they carry. */
static void deleting_an_aggregate_keeps_other_memberships(void **state)
{
	struct fib *f = *state;
	char buf[INET6_ADDRSTRLEN], text[64];
	uint32_t a, b;
	struct name an = N("a.aggregates"), bn = N("b.aggregates"), root = N(".");
	assert_int_equal(fib_aggregate_create(f, &an, &a), FIB_OK);
	assert_int_equal(fib_aggregate_create(f, &bn, &b), FIB_OK);
	struct route ra = server("192.0.2.1"), rb = server("192.0.2.2");
	fib_aggregate_set_routes(f, a, &ra, 1);
	fib_aggregate_set_routes(f, b, &rb, 1);
	assert_int_equal(fib_aggregate_add_member(f, a, &root), FIB_OK);
	for (int i = 0; i < 2000; i++) {
		snprintf(text, sizeof(text), i % 3 ? "d%d.example" : "x.d%d.deep.example", i);
		struct name n = N(text);
		assert_int_equal(fib_aggregate_add_member(f, a, &n), FIB_OK);
		if (i % 2 == 0)
			assert_int_equal(fib_aggregate_add_member(f, b, &n), FIB_OK);
	}
	assert_int_equal(fib_aggregate_delete(f, a), FIB_OK);
	for (int i = 0; i < 2000; i++) {
		snprintf(text, sizeof(text), i % 3 ? "www.d%d.example" : "x.d%d.deep.example", i);
		assert_string_equal(lookup_addr(f, text, buf), i % 2 == 0 ? "192.0.2.2" : "");
	}
	assert_string_equal(lookup_addr(f, "elsewhere", buf), "");
	struct fib_stats st;
	fib_get_stats(f, &st);
	assert_int_equal(st.entries, 1000);
	assert_int_equal(fib_aggregate_delete(f, b), FIB_OK);
	fib_get_stats(f, &st);
	assert_int_equal(st.entries, 0);
	assert_int_equal(st.nodes, 1);
}

/* A batch of names sets what one call a name would: routes, withdrawals among them, shared sets. */
static void names_set_in_a_batch_as_one_by_one(void **state)
{
	struct fib *f = *state;
	char buf[INET6_ADDRSTRLEN], text[64];
	enum { COUNT = 2000 };
	static struct name names[COUNT];
	static struct route routes[COUNT];
	static const struct route *ptrs[COUNT];
	static unsigned counts[COUNT];
	set_routes(f, "n7.batch.example", "192.0.2.99");        /* withdrawn by the batch */
	for (unsigned i = 0; i < COUNT; i++) {
		snprintf(text, sizeof(text), "n%u.batch.example", i);
		names[i] = N(text);
		snprintf(text, sizeof(text), "192.0.2.%u", 1 + i % 3);
		routes[i] = server(text);
		ptrs[i] = &routes[i];
		counts[i] = i == 7 ? 0 : 1;
	}
	size_t done;
	assert_int_equal(fib_set_routes_batch(f, names, ptrs, counts, COUNT, &done), FIB_OK);
	assert_int_equal(done, COUNT);
	assert_string_equal(lookup_addr(f, "www.n1999.batch.example", buf), "192.0.2.2");
	assert_string_equal(lookup_addr(f, "n0.batch.example", buf), "192.0.2.1");
	assert_string_equal(lookup_addr(f, "n7.batch.example", buf), "");
	struct fib_stats st;
	fib_get_stats(f, &st);
	assert_int_equal(st.entries, COUNT - 1);
	assert_int_equal(st.routesets, 3);                      /* equal sets shared */
	/* too many routes for one name: nothing from there on */
	counts[5] = ROUTESET_MAX_ROUTES + 1;
	assert_int_equal(fib_set_routes_batch(f, names, ptrs, counts, COUNT, &done), FIB_ERR_TOO_MANY_ROUTES);
	assert_int_equal(done, 0);
}

static void members_join_and_leave_in_batches(void **state)
{
	struct fib *f = *state;
	char buf[INET6_ADDRSTRLEN], text[64];
	enum { COUNT = 3000 };
	static struct name names[COUNT];
	uint32_t a, b;
	size_t done;
	struct name an = N("a.aggregates"), bn = N("b.aggregates");
	assert_int_equal(fib_aggregate_create(f, &an, &a), FIB_OK);
	assert_int_equal(fib_aggregate_create(f, &bn, &b), FIB_OK);
	struct route ra = server("192.0.2.1"), rb = server("192.0.2.2");
	fib_aggregate_set_routes(f, a, &ra, 1);
	fib_aggregate_set_routes(f, b, &rb, 1);
	for (int i = 0; i < COUNT; i++) {
		snprintf(text, sizeof(text), "b%d.example", i);
		names[i] = N(text);
	}

	assert_int_equal(fib_aggregate_add_members(f, a, names, COUNT, &done), FIB_OK);
	assert_int_equal(done, COUNT);
	assert_int_equal(fib_aggregate_add_members(f, a, names, COUNT / 2, NULL), FIB_OK);  /* idempotent */
	assert_int_equal(fib_aggregate_add_members(f, b, names, COUNT / 3, &done), FIB_OK);
	assert_int_equal(done, COUNT / 3);
	struct fib_result res;
	assert_true(fib_lookup_exact(f, &names[0], &res));
	assert_int_equal(res.nsets, 2);
	assert_string_equal(lookup_addr(f, "www.b2999.example", buf), "192.0.2.1");

	/* leaving: names that are not members are no error */
	assert_int_equal(fib_aggregate_remove_members(f, a, names, COUNT / 2, &done), FIB_OK);
	assert_int_equal(fib_aggregate_remove_members(f, a, names, COUNT, &done), FIB_OK);
	assert_int_equal(done, COUNT);
	for (int i = 0; i < COUNT; i += 7) {
		snprintf(text, sizeof(text), "www.b%d.example", i);
		assert_string_equal(lookup_addr(f, text, buf), i < COUNT / 3 ? "192.0.2.2" : "");
	}
	struct fib_stats st;
	fib_get_stats(f, &st);
	assert_int_equal(st.nodes, 2 + COUNT / 3);
	assert_int_equal(st.entries, COUNT / 3);

	/* errors stop the batch and say where */
	assert_int_equal(fib_aggregate_add_members(f, 12345, names, 10, &done), FIB_ERR_BAD_AGGREGATE);
	assert_int_equal(done, 0);
	struct name busy = N("busy.example");
	for (int i = 0; i < FIB_MAX_AGGREGATES_PER_NAME; i++) {
		uint32_t id;
		snprintf(text, sizeof(text), "full%d", i);
		struct name n = N(text);
		assert_int_equal(fib_aggregate_create(f, &n, &id), FIB_OK);
		assert_int_equal(fib_aggregate_add_member(f, id, &busy), FIB_OK);
	}
	uint32_t c;
	struct name cn = N("c.aggregates");
	assert_int_equal(fib_aggregate_create(f, &cn, &c), FIB_OK);
	struct name three[3] = { N("first.example"), busy, N("third.example") };
	assert_int_equal(fib_aggregate_add_members(f, c, three, 3, &done), FIB_ERR_TOO_MANY_AGGREGATES);
	assert_int_equal(done, 1);
	assert_int_equal(fib_aggregate_remove_members(f, c, three, 3, &done), FIB_OK);
	assert_false(fib_lookup_exact(f, &three[0], &res));
	fib_get_stats(f, &st);
	assert_int_equal(st.nodes, 2 + COUNT / 3 + 1);
}

static void redirect_carries_its_target(void **state)
{
	struct fib *f = *state;
	struct name alias = N("old.example"), target = N("new.example.org");
	assert_int_equal(fib_set_redirect(f, &alias, &target), FIB_OK);
	struct name q = N("www.old.example");
	struct fib_result res;
	assert_true(fib_lookup_longest_suffix(f, &q, &res));
	assert_true(res.sets[0]->has_redirect);
	assert_true(name_equal(&res.sets[0]->redirect, &target));
	assert_int_equal(res.sets[0]->count, 0);
}

struct walk_ctx {
	int count;
	bool saw_deep;
};

static int count_names(const struct name *n, const struct fib_result *e, void *arg)
{
	struct walk_ctx *w = arg;
	struct name deep = N("a.b.example");
	w->count++;
	if (name_equal(n, &deep)) {
		w->saw_deep = true;
		assert_int_equal(e->suffix_labels, 3);
	}
	return 0;
}

static void walk_visits_every_name(void **state)
{
	struct fib *f = *state;
	set_routes(f, "a.b.example", "192.0.2.1");
	set_routes(f, "example", "192.0.2.1");
	set_routes(f, "other", "192.0.2.2");
	struct walk_ctx w = { 0, false };
	assert_int_equal(fib_walk(f, count_names, &w), 0);
	assert_int_equal(w.count, 3);
	assert_true(w.saw_deep);
}

/* Labels of 16 bytes and more keep only a prefix in their slot. */
static void long_labels_are_told_apart(void **state)
{
	struct fib *f = *state;
	char buf[INET6_ADDRSTRLEN];
	/* same length, same 15-byte prefix, different tails */
	set_routes(f, "abcdefghijklmnopqrstuvwxyz0123456789.example", "192.0.2.1");
	set_routes(f, "abcdefghijklmnopqrstuvwxyz0123456788.example", "192.0.2.2");
	set_routes(f, "abcdefghijklmnop.example", "192.0.2.3");     /* exactly 16 */
	set_routes(f, "abcdefghijklmno.example", "192.0.2.4");      /* 15: inline */
	char max[80];
	memset(max, 'z', 63);
	strcpy(max + 63, ".example");
	set_routes(f, max, "192.0.2.5");
	assert_string_equal(lookup_addr(f, "www.abcdefghijklmnopqrstuvwxyz0123456789.example", buf), "192.0.2.1");
	assert_string_equal(lookup_addr(f, "abcdefghijklmnopqrstuvwxyz0123456788.example", buf), "192.0.2.2");
	assert_string_equal(lookup_addr(f, "abcdefghijklmnop.example", buf), "192.0.2.3");
	assert_string_equal(lookup_addr(f, "abcdefghijklmno.example", buf), "192.0.2.4");
	assert_string_equal(lookup_addr(f, max, buf), "192.0.2.5");
	assert_string_equal(lookup_addr(f, "abcdefghijklmnopqrstuvwxyz0123456787.example", buf), "");
	assert_string_equal(lookup_addr(f, "abcdefghijklmnopq.example", buf), "");
	struct name n = N("abcdefghijklmnopqrstuvwxyz0123456789.example");
	assert_int_equal(fib_delete(f, &n), FIB_OK);
	fib_barrier(f);
	assert_string_equal(lookup_addr(f, "abcdefghijklmnopqrstuvwxyz0123456789.example", buf), "");
	assert_string_equal(lookup_addr(f, "abcdefghijklmnopqrstuvwxyz0123456788.example", buf), "192.0.2.2");
	/* freed long labels are reused, and survive a table rebuild */
	for (int i = 0; i < 5000; i++) {
		char t[96];
		snprintf(t, sizeof(t), "a-rather-long-label-number-%d.example", i);
		set_routes(f, t, "192.0.2.6");
	}
	assert_string_equal(lookup_addr(f, "x.a-rather-long-label-number-4321.example", buf), "192.0.2.6");
	assert_string_equal(lookup_addr(f, "abcdefghijklmnopqrstuvwxyz0123456788.example", buf), "192.0.2.2");
	struct walk_ctx w = { 0, false };
	assert_int_equal(fib_walk(f, count_names, &w), 0);
	assert_int_equal(w.count, 5004);
}

/*
 * The fast path picks one of its two buckets' four slots by its first key
 * word (length and first seven bytes) and leaves ties and keys past both
 * buckets to the full probe.  Thousands of names alike in that word make
 * both happen.
 */
static void names_alike_in_their_first_word_are_told_apart(void **state)
{
	struct fib *f = *state;
	char buf[INET6_ADDRSTRLEN], name[64], query[80], addr[INET_ADDRSTRLEN];
	enum { COUNT = 20000 };

	for (int i = 0; i < COUNT; i++) {
		snprintf(name, sizeof(name), "sharedp%05d.com", i);
		snprintf(addr, sizeof(addr), "10.%d.%d.1", i / 256 % 256, i % 256);
		set_routes(f, name, addr);
	}
	for (int i = 0; i < COUNT; i++) {
		snprintf(query, sizeof(query), "www.sharedp%05d.com", i);
		snprintf(addr, sizeof(addr), "10.%d.%d.1", i / 256 % 256, i % 256);
		assert_string_equal(lookup_addr(f, query, buf), addr);
		assert_string_equal(lookup_addr(f, query + 4, buf), addr);
	}
	assert_string_equal(lookup_addr(f, "www.sharedp99999.com", buf), "");
}

/*
 * A table past a million names runs at its full load (0.82-0.90): rebuilds
 * move keys between their two buckets, a few keys sit past both, and an
 * absent name's probe goes on past full buckets.  Every name must still be
 * found with its own route, through tombstones and growth, short keys and
 * long ones (kept outside the slot) alike.
 */
static void name_of(char *text, size_t size, const char *prefix, unsigned i)
{
	if (i % 997 == 0)       /* a key longer than a slot holds */
		snprintf(text, size, "%sa-label-longer-than-a-slot-holds-%u.com", prefix, i);
	else
		snprintf(text, size, "%sn%u.com", prefix, i);
}

/* names below `deleted` that are multiples of 3 were deleted */
static void check_full_table(struct fib *f, unsigned count, unsigned deleted)
{
	char text[96];
	for (unsigned i = 0; i < count; i++) {
		name_of(text, sizeof(text), "www.", i);
		struct name q = N(text);
		struct fib_result res;
		bool found = fib_lookup_longest_suffix(f, &q, &res);
		bool want = i >= deleted || i % 3 != 0;
		uint16_t v = (uint16_t)(i % 4099);
		if (found != want)
			fail_msg("%s: found %d, want %d", text, found, want);
		if (found && (res.nsets != 1 || res.suffix_offset != 4 ||
			      memcmp(&res.sets[0]->routes[0].addr[1], &v, 2) != 0))
			fail_msg("%s: wrong route", text);
		name_of(text, sizeof(text), "absent.", i);
		q = N(text);
		if (i % 16 == 0 && fib_lookup_exact(f, &q, &res))
			fail_msg("%s: found", text);
	}
}

/*
 * A prefetch hint takes the client's bytes unchecked: whatever they are,
 * it reads none past room (each input an exact heap copy, for the
 * sanitizer build), names no bucket for a name it cannot take, and
 * changes no lookup.
 */
static void prefetch_reads_only_its_room(void **state)
{
	struct fib *f = *state;
	struct route r = server("10.0.0.1");
	struct name n = N("example.com");
	assert_int_equal(fib_set_routes(f, &n, &r, 1), FIB_OK);
	static const uint8_t cases[][16] = {
		"\007example\003com",         /* no root label: runs into room's end */
		"\007EXAMPLE\003COM",
		"\077ab",                      /* a label longer than the bytes left */
		"\300\014",                   /* a pointer */
		"\001a\001b\001c\001d\001e",
	};
	srandom(7);
	for (unsigned i = 0; i < 2000; i++) {
		size_t room;
		uint8_t *buf;
		if (i < sizeof(cases) / sizeof(cases[0])) {
			room = strlen((const char *)cases[i]);
			buf = malloc(room);
			memcpy(buf, cases[i], room);
		} else {
			room = (size_t)random() % 40;
			buf = malloc(room ? room : 1);
			for (size_t k = 0; k < room; k++)
				buf[k] = (uint8_t)(random() % 4 == 0 ? random() % 8 : random());
		}
		struct fib_hint hint;
		unsigned nb = fib_buckets_wire(f, buf, room, &hint);
		assert_true(nb == 0 ? hint.table == NULL : hint.table != NULL);
		if (i < sizeof(cases) / sizeof(cases[0]))
			assert_int_equal(nb, 0);
		else
			assert_true(nb == 0 || nb == 2);
		free(buf);
	}
	static const uint8_t whole[] = "\007ExAmple\003com";
	struct fib_hint hint;
	assert_int_equal(fib_buckets_wire(f, whole, sizeof(whole), &hint), 2);
	struct fib_result res;
	assert_true(fib_lookup_longest_suffix(f, &n, &res));
	assert_int_equal(res.nsets, 1);
}

/*
 * A lookup with the hint fib_buckets_wire made of the question (any case)
 * finds what the plain lookup finds, for every kind of name: a leaf in
 * its buckets, a name with children, deeper and shallower matches, a key
 * too long for a slot, no match; and after the table was rebuilt, the old
 * hint is not trusted.
 */
static void a_hinted_lookup_finds_what_a_plain_one_does(void **state)
{
	struct fib *f = *state;
	static const char *routed[] = { "example.com", "sub.example.com", "a.b", "org",
					"averyveryverylonglabelname.com" };
	static const char *asked[] = { "www.example.com", "example.com", "x.sub.example.com", "sub.example.com",
				       "a.b", "q.a.b", "zzz.org", "org", "nothere.net", "com",
				       "averyveryverylonglabelname.com", "w.averyveryverylonglabelname.com" };
	for (unsigned i = 0; i < sizeof(routed) / sizeof(routed[0]); i++) {
		char addr[32];
		snprintf(addr, sizeof(addr), "10.0.0.%u", i + 1);
		struct route r = server(addr);
		struct name n = N(routed[i]);
		assert_int_equal(fib_set_routes(f, &n, &r, 1), FIB_OK);
	}
	struct fib_hint hints[sizeof(asked) / sizeof(asked[0])];
	for (unsigned round = 0; round < 2; round++) {
		for (unsigned i = 0; i < sizeof(asked) / sizeof(asked[0]); i++) {
			struct name n = N(asked[i]);
			uint8_t wire[NAME_MAX_WIRE + 4];
			memcpy(wire, n.wire, n.len);
			memset(wire + n.len, 0, 4);             /* QTYPE and QCLASS follow a question's name */
			for (unsigned k = 0; k < n.len; k += 2) /* any case the client sent */
				wire[k] = (uint8_t)toupper(wire[k]);
			if (round == 0)
				fib_buckets_wire(f, wire, n.len + 4, &hints[i]);
			struct fib_result plain, hinted;
			bool found = fib_lookup_longest_suffix(f, &n, &plain);
			assert_int_equal(fib_lookup_hinted(f, &n, &hints[i], &hinted), found);
			if (!found)
				continue;
			assert_int_equal(hinted.suffix_offset, plain.suffix_offset);
			assert_int_equal(hinted.suffix_labels, plain.suffix_labels);
			assert_int_equal(hinted.nsets, plain.nsets);
			assert_ptr_equal(hinted.sets[0], plain.sets[0]);
		}
		/* a rebuilt table: the hints name the old one */
		assert_int_equal(fib_reserve(f, 1000000), FIB_OK);
	}
}

static void a_full_table_finds_every_name(void **state)
{
	struct fib *f = *state;
	enum { COUNT = 1780000, MORE = 150000 };      /* COUNT: just before a rebuild */
	char text[96];
	struct route r = server("10.0.0.0");

	for (unsigned i = 0; i < COUNT; i++) {
		name_of(text, sizeof(text), "", i);
		struct name n = N(text);
		uint16_t v = (uint16_t)(i % 4099);
		memcpy(&r.addr[1], &v, 2);
		assert_int_equal(fib_set_routes(f, &n, &r, 1), FIB_OK);
		if (i % 4096 == 0)
			rcu_quiescent_state();
	}
	struct fib_stats st;
	fib_get_stats(f, &st);
	assert_true((double)st.nodes / (double)st.table_slots > 0.86);
	check_full_table(f, COUNT, 0);
	/* tombstones, then growth past them: rebuilds drop them and move keys again */
	for (unsigned i = 0; i < COUNT; i += 3) {
		name_of(text, sizeof(text), "", i);
		struct name n = N(text);
		assert_int_equal(fib_delete(f, &n), FIB_OK);
	}
	check_full_table(f, COUNT, COUNT);
	for (unsigned i = COUNT; i < COUNT + MORE; i++) {
		name_of(text, sizeof(text), "", i);
		struct name n = N(text);
		uint16_t v = (uint16_t)(i % 4099);
		memcpy(&r.addr[1], &v, 2);
		assert_int_equal(fib_set_routes(f, &n, &r, 1), FIB_OK);
	}
	check_full_table(f, COUNT + MORE, COUNT);
	fib_barrier(f);
}

/* Random inserts, deletes and overwrites against a plain array model. */
static void random_operations_match_a_model(void **state)
{
	struct fib *f = *state;
	enum { NAMES = 20000, OPS = 200000 };
	static int model[NAMES];        /* 0: absent, else the route's last octet */
	uint64_t x = 88172645463325252ull;
	char text[64];

	memset(model, 0, sizeof(model));
	for (int op = 0; op < OPS; op++) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		int i = (int)(x % NAMES);
		snprintf(text, sizeof(text), "n%d.%s", i, (i % 3) == 0 ? "com" : "org");
		struct name n = N(text);
		if ((x >> 32) % 3 == 0) {
			int rc = fib_delete(f, &n);
			assert_int_equal(rc, model[i] ? FIB_OK : FIB_ERR_NOT_FOUND);
			model[i] = 0;
		} else {
			int v = 1 + (int)((x >> 40) % 200);
			struct route r = server("192.0.2.0");
			r.addr[3] = (uint8_t)v;
			assert_int_equal(fib_set_routes(f, &n, &r, 1), FIB_OK);
			model[i] = v;
		}
		if (op % 50000 == 0)
			fib_barrier(f);  /* let freed nodes be reused mid-run */
	}
	struct fib_stats st;
	fib_get_stats(f, &st);
	int live = 0;
	for (int i = 0; i < NAMES; i++) {
		snprintf(text, sizeof(text), "www.n%d.%s", i, (i % 3) == 0 ? "com" : "org");
		struct name q = N(text);
		struct fib_result res;
		bool found = fib_lookup_longest_suffix(f, &q, &res);
		if (found != (model[i] != 0))
			fail_msg("%s: found=%d model=%d", text, found, model[i]);
		if (found) {
			assert_int_equal(res.sets[0]->routes[0].addr[3], model[i]);
			live++;
		}
	}
	assert_int_equal(st.entries, (uint64_t)live);
	assert_true(st.routesets <= 200);
}

int main(void)
{
	rcu_register_thread();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(longest_suffix_wins, setup, teardown),
		cmocka_unit_test_setup_teardown(longest_suffix_from_any_depth, setup, teardown),
		cmocka_unit_test_setup_teardown(result_says_which_suffix_matched, setup, teardown),
		cmocka_unit_test_setup_teardown(exact_lookup_needs_the_whole_name, setup, teardown),
		cmocka_unit_test_setup_teardown(root_route_is_the_default, setup, teardown),
		cmocka_unit_test_setup_teardown(ranked_routes_keep_their_order, setup, teardown),
		cmocka_unit_test_setup_teardown(delete_prunes_empty_nodes, setup, teardown),
		cmocka_unit_test_setup_teardown(equal_route_sets_are_shared, setup, teardown),
		cmocka_unit_test_setup_teardown(aggregate_routes_change_every_member_at_once, setup, teardown),
		cmocka_unit_test_setup_teardown(own_routes_come_before_aggregates, setup, teardown),
		cmocka_unit_test_setup_teardown(a_name_joins_a_bounded_number_of_aggregates, setup, teardown),
		cmocka_unit_test_setup_teardown(empty_aggregate_does_not_hide_a_shorter_suffix, setup, teardown),
		cmocka_unit_test_setup_teardown(deleting_an_aggregate_drops_its_memberships, setup, teardown),
		cmocka_unit_test_setup_teardown(member_leaves_answer_through_their_aggregate, setup, teardown),
		cmocka_unit_test_setup_teardown(names_set_in_a_batch_as_one_by_one, setup, teardown),
		cmocka_unit_test_setup_teardown(members_join_and_leave_in_batches, setup, teardown),
		cmocka_unit_test_setup_teardown(deleting_an_aggregate_keeps_other_memberships, setup, teardown),
		cmocka_unit_test_setup_teardown(redirect_carries_its_target, setup, teardown),
		cmocka_unit_test_setup_teardown(walk_visits_every_name, setup, teardown),
		cmocka_unit_test_setup_teardown(long_labels_are_told_apart, setup, teardown),
		cmocka_unit_test_setup_teardown(names_alike_in_their_first_word_are_told_apart, setup, teardown),
		cmocka_unit_test_setup_teardown(random_operations_match_a_model, setup, teardown),
		cmocka_unit_test_setup_teardown(prefetch_reads_only_its_room, setup, teardown),
		cmocka_unit_test_setup_teardown(a_hinted_lookup_finds_what_a_plain_one_does, setup, teardown),
		cmocka_unit_test_setup_teardown(a_full_table_finds_every_name, setup, teardown),
	};
	int rc = cmocka_run_group_tests_name("fib", tests, NULL, NULL);
	rcu_unregister_thread();
	return rc;
}
