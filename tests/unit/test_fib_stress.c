/*
 * Readers look names up while one writer churns the table: inserts,
 * deletes, route changes, aggregate flips and table rebuilds.  Every
 * answer is checked, not just the absence of a crash:
 *  - stable names are always found with their own route;
 *  - a churned name, when found, carries a route made for that very name
 *    (so a reader never sees a recycled node or route set of another name);
 *  - aggregate members always resolve to one of the aggregate's two sets;
 *  - names joining and leaving an aggregate in batches (two-label leaves,
 *    answered by the lookup's fast path), when found, carry its route.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#include <cmocka.h>
#include <urcu-qsbr.h>

#include "fib.h"

enum {
	READERS = 3,
	STABLE = 5000,
	CHURN = 20000,
	MEMBERS = 2000,
	JOINERS = 4000,
	JOIN_BATCH = 32,
	WRITER_OPS = 400000,
};

static struct fib *fib;
static volatile int writer_done;
static struct name stable_names[STABLE], churn_names[CHURN], member_names[MEMBERS];
static struct name joiner_names[JOINERS], joiner_queries[JOINERS];

struct reader_stats {
	uint64_t lookups, stable_bad, churn_bad, member_bad, churn_found, joiner_bad, joiner_found;
};

static struct name make_name(const char *fmt, int i)
{
	char text[64];
	struct name n;
	snprintf(text, sizeof(text), fmt, i);
	name_from_text(&n, text, strlen(text));
	return n;
}

/* route address: 10.<kind>.<index hi>.<index lo>, load = version */
static struct route tagged_route(uint8_t kind, uint32_t index, uint32_t version)
{
	struct route r;
	memset(&r, 0, sizeof(r));
	r.kind = ROUTE_SERVER;
	r.family = AF_INET;
	r.addr[0] = 10;
	r.addr[1] = kind;
	r.addr[2] = (uint8_t)(index >> 8);
	r.addr[3] = (uint8_t)index;
	r.load_ms = version;
	return r;
}

static bool route_is(const struct route *r, uint8_t kind, uint32_t index)
{
	return r->addr[0] == 10 && r->addr[1] == kind &&
	       r->addr[2] == (uint8_t)(index >> 8) && r->addr[3] == (uint8_t)index;
}

static void *reader(void *arg)
{
	struct reader_stats *st = arg;
	uint64_t x = (uint64_t)(uintptr_t)arg * 0x9E3779B97F4A7C15ull | 1;
	struct fib_result res;

	rcu_register_thread();
	while (!__atomic_load_n(&writer_done, __ATOMIC_ACQUIRE)) {
		for (int k = 0; k < 256; k++) {
			x ^= x << 13; x ^= x >> 7; x ^= x << 17;
			uint32_t i;
			switch (x % 4) {
			case 0:
				i = (uint32_t)((x >> 8) % STABLE);
				if (!fib_lookup_longest_suffix(fib, &stable_names[i], &res) ||
				    !route_is(&res.sets[0]->routes[0], 1, i))
					st->stable_bad++;
				break;
			case 1:
				i = (uint32_t)((x >> 8) % CHURN);
				if (fib_lookup_exact(fib, &churn_names[i], &res)) {
					st->churn_found++;
					if (!route_is(&res.sets[0]->routes[0], 2, i % 256))
						st->churn_bad++;
				}
				break;
			case 2:
				i = (uint32_t)((x >> 8) % JOINERS);
				if (fib_lookup_longest_suffix(fib, &joiner_queries[i], &res)) {
					st->joiner_found++;
					if (res.nsets != 1 || res.suffix_offset != 4 ||
					    !route_is(&res.sets[0]->routes[0], 5, 0))
						st->joiner_bad++;
				}
				break;
			default:
				i = (uint32_t)((x >> 8) % MEMBERS);
				if (!fib_lookup_longest_suffix(fib, &member_names[i], &res) ||
				    !(route_is(&res.sets[0]->routes[0], 3, 0) ||
				      route_is(&res.sets[0]->routes[0], 3, 1)))
					st->member_bad++;
				break;
			}
			st->lookups++;
		}
		rcu_quiescent_state();
	}
	rcu_unregister_thread();
	return NULL;
}

static void readers_always_see_a_consistent_table(void **state)
{
	pthread_t threads[READERS];
	struct reader_stats stats[READERS];
	uint32_t agg;

	rcu_register_thread();
	fib = fib_create();
	assert_non_null(fib);
	for (int i = 0; i < STABLE; i++) {
		stable_names[i] = make_name("s%d.stable.example", i);
		struct route r = tagged_route(1, (uint32_t)i, 0);
		assert_int_equal(fib_set_routes(fib, &stable_names[i], &r, 1), FIB_OK);
	}
	for (int i = 0; i < CHURN; i++)
		churn_names[i] = make_name("c%d.churn.example", i);
	struct name an = make_name("agg%d", 0);
	assert_int_equal(fib_aggregate_create(fib, &an, &agg), FIB_OK);
	struct route flip[2] = { tagged_route(3, 0, 0), tagged_route(3, 1, 0) };
	assert_int_equal(fib_aggregate_set_routes(fib, agg, &flip[0], 1), FIB_OK);
	for (int i = 0; i < MEMBERS; i++) {
		struct name m = make_name("m%d.members.example", i);
		assert_int_equal(fib_aggregate_add_member(fib, agg, &m), FIB_OK);
		member_names[i] = make_name("www.m%d.members.example", i);
	}

	uint32_t jagg;
	struct name jn = make_name("joiners%d", 0);
	assert_int_equal(fib_aggregate_create(fib, &jn, &jagg), FIB_OK);
	struct route jr = tagged_route(5, 0, 0);
	assert_int_equal(fib_aggregate_set_routes(fib, jagg, &jr, 1), FIB_OK);
	for (int i = 0; i < JOINERS; i++) {
		joiner_names[i] = make_name("j%d.joined", i);
		joiner_queries[i] = make_name("www.j%d.joined", i);
	}

	memset(stats, 0, sizeof(stats));
	for (int t = 0; t < READERS; t++)
		assert_int_equal(pthread_create(&threads[t], NULL, reader, &stats[t]), 0);

	uint64_t x = 0x2545F4914F6CDD1Dull;
	for (int op = 0; op < WRITER_OPS; op++) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		uint32_t i = (uint32_t)(x % CHURN);
		switch ((x >> 32) % 8) {
		case 0: case 1: case 2:
			fib_delete(fib, &churn_names[i]);
			break;
		case 3:
			assert_int_equal(fib_aggregate_set_routes(fib, agg, &flip[op & 1], 1), FIB_OK);
			break;
		case 4: {
			/* a run of names joins or leaves, as a diff would */
			uint32_t first = (uint32_t)(x >> 40) % (JOINERS - JOIN_BATCH);
			size_t done;
			if ((x >> 20) & 1)
				assert_int_equal(fib_aggregate_add_members(fib, jagg, &joiner_names[first], JOIN_BATCH,
									   &done), FIB_OK);
			else
				assert_int_equal(fib_aggregate_remove_members(fib, jagg, &joiner_names[first],
									      JOIN_BATCH, &done), FIB_OK);
			assert_int_equal(done, JOIN_BATCH);
			break;
		}
		default: {
			/* a set of two: the first route names the name, the second varies */
			struct route r[2] = { tagged_route(2, i % 256, (uint32_t)op), tagged_route(4, (uint32_t)(x >> 40) % 64, 0) };
			assert_int_equal(fib_set_routes(fib, &churn_names[i], r, 2), FIB_OK);
			break;
		}
		}
		if (op % 1000 == 0) {
			fib_commit(fib);
			rcu_quiescent_state();
		}
	}
	__atomic_store_n(&writer_done, 1, __ATOMIC_RELEASE);
	rcu_thread_offline();
	for (int t = 0; t < READERS; t++)
		pthread_join(threads[t], NULL);
	rcu_thread_online();

	uint64_t lookups = 0, found = 0;
	for (int t = 0; t < READERS; t++) {
		assert_int_equal(stats[t].stable_bad, 0);
		assert_int_equal(stats[t].churn_bad, 0);
		assert_int_equal(stats[t].member_bad, 0);
		assert_int_equal(stats[t].joiner_bad, 0);
		lookups += stats[t].lookups;
		found += stats[t].churn_found + stats[t].joiner_found;
	}
	/* the readers really ran alongside the writer and saw churned names come and go */
	print_message("%llu lookups checked, %llu churned names found\n",
		      (unsigned long long)lookups, (unsigned long long)found);
	assert_true(lookups > 0);
	fib_destroy(fib);
	rcu_unregister_thread();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(readers_always_see_a_consistent_table),
	};
	return cmocka_run_group_tests_name("fib_stress", tests, NULL, NULL);
}
