/* The decision (nbrpd/decide.c), linked alone: one case per rule of the
 * order in docs/NBRP.md and per tie-break, and the import rules. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "decide.h"

static struct decide_cand base(const char *from)
{
	return (struct decide_cand){ .local_pref = 100, .distance = 100, .igp_metric = 10, .as_path_len = 2,
				     .seq = 5, .from = from, .usable = true };
}

/* b is better than a in exactly the field each case changes: b wins both ways round */
static void assert_better(struct decide_cand a, struct decide_cand b)
{
	assert_true(decide_cmp(&b, &a) < 0);
	assert_true(decide_cmp(&a, &b) > 0);
	struct decide_cand c[2] = { a, b };
	unsigned order[2];
	assert_int_equal(decide_rank(c, 2, 2, order), 2);
	assert_int_equal(order[0], 1);
	c[0] = b;
	c[1] = a;
	assert_int_equal(decide_rank(c, 2, 2, order), 2);
	assert_int_equal(order[0], 0);
}

static void higher_local_preference_wins_over_everything_after_it(void **state)
{
	struct decide_cand a = base("a"), b = base("b");
	b.local_pref = 200;
	b.distance = 1000;              /* worse in every later rule */
	b.igp_metric = 99;
	b.as_path_len = 9;
	b.seq = 99;
	assert_better(a, b);
}

static void shorter_effective_distance_wins(void **state)
{
	struct decide_cand a = base("a"), b = base("b");
	b.distance = 99;
	b.igp_metric = 99;
	b.seq = 99;
	assert_better(a, b);
}

/* A signed route's path length is proven and its load is not: load 0 does not buy distance. */
static void a_valid_signed_route_ranks_by_path_length_then_load(void **state)
{
	struct decide_cand longer = base("attacker"), shorter = base("honest");
	decide_distance(&longer, 3, 0, 50, true);
	decide_distance(&shorter, 2, 200, 50, true);
	assert_better(longer, shorter);
	/* the same unsigned: load counts in the distance, as configured */
	decide_distance(&longer, 3, 0, 50, false);
	decide_distance(&shorter, 2, 200, 50, false);
	assert_better(shorter, longer);
	/* equal signed paths: the lower load wins, before the IGP metric */
	struct decide_cand a = base("a"), b = base("b");
	decide_distance(&a, 2, 30, 50, true);
	decide_distance(&b, 2, 10, 50, true);
	b.igp_metric = 99;
	assert_better(a, b);
	/* and a load the size of many hops still only breaks that tie */
	decide_distance(&a, 1, 100000, 50, true);
	decide_distance(&b, 2, 0, 50, true);
	assert_better(b, a);
}

static void lower_igp_metric_breaks_a_distance_tie(void **state)
{
	struct decide_cand a = base("a"), b = base("b");
	b.igp_metric = 9;
	b.as_path_len = 9;
	b.seq = 99;
	assert_better(a, b);
}

static void shorter_as_path_breaks_an_igp_tie(void **state)
{
	struct decide_cand a = base("a"), b = base("b");
	b.as_path_len = 1;
	b.seq = 99;
	assert_better(a, b);
}

static void the_older_route_breaks_an_as_path_tie(void **state)
{
	struct decide_cand a = base("a"), b = base("b");
	b.seq = 4;
	assert_better(a, b);
}

static void the_lower_peer_name_breaks_the_last_tie(void **state)
{
	struct decide_cand a = base("r2"), b = base("r10");    /* byte order, not numeric */
	assert_better(a, b);
	struct decide_cand local = base("");
	assert_better(a, local);
}

static void unusable_routes_are_not_ranked_and_keep_bounds_the_rank(void **state)
{
	struct decide_cand c[5];
	for (unsigned i = 0; i < 5; i++) {
		c[i] = base("x");
		c[i].distance = 100 - i;        /* later ones better */
	}
	c[4].usable = false;                    /* the best on paper, but IP routing cannot reach it */
	unsigned order[3];
	assert_int_equal(decide_rank(c, 5, 3, order), 3);
	assert_int_equal(order[0], 3);
	assert_int_equal(order[1], 2);
	assert_int_equal(order[2], 1);
	for (unsigned i = 0; i < 5; i++)
		c[i].usable = false;
	assert_int_equal(decide_rank(c, 5, 3, order), 0);
}

static void malformed_routes_are_withdrawals_and_our_name_in_the_path_a_loop(void **state)
{
	uint8_t nh[4] = { 192, 0, 2, 1 };
	char *path[] = { "r2", "r1", "r3" };
	uint8_t wire[] = { 1, 'x', 0 };
	ProtobufCBinaryData names[] = { { .data = wire, .len = sizeof(wire) } };
	Nbrp__Route r = NBRP__ROUTE__INIT;
	r.n_names = 1;
	r.names = names;
	r.next_hop.data = nh;
	r.next_hop.len = 4;
	r.next_hop_port = 53;
	r.n_path = 3;
	r.path = path;
	const char *why = NULL;
	assert_int_equal(decide_import(&r, false, "r9", &why), IMPORT_OK);
	assert_int_equal(decide_import(&r, false, "r1", &why), IMPORT_LOOP);
	assert_non_null(why);
	r.next_hop.len = 3;                     /* neither IPv4 nor IPv6 */
	assert_int_equal(decide_import(&r, false, "r9", &why), IMPORT_MALFORMED);
	r.next_hop.len = 4;
	r.n_path = 0;                           /* a router's route has a path */
	assert_int_equal(decide_import(&r, false, "r9", &why), IMPORT_MALFORMED);
	r.next_hop_port = 0;                    /* a content server's may have neither */
	assert_int_equal(decide_import(&r, true, "r9", &why), IMPORT_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(higher_local_preference_wins_over_everything_after_it),
		cmocka_unit_test(shorter_effective_distance_wins),
		cmocka_unit_test(a_valid_signed_route_ranks_by_path_length_then_load),
		cmocka_unit_test(lower_igp_metric_breaks_a_distance_tie),
		cmocka_unit_test(shorter_as_path_breaks_an_igp_tie),
		cmocka_unit_test(the_older_route_breaks_an_as_path_tie),
		cmocka_unit_test(the_lower_peer_name_breaks_the_last_tie),
		cmocka_unit_test(unusable_routes_are_not_ranked_and_keep_bounds_the_rank),
		cmocka_unit_test(malformed_routes_are_withdrawals_and_our_name_in_the_path_a_loop),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
