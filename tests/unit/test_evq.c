/*
 * sim/evq.c, the simulator's clock: events come out in order of time,
 * events at one time in the order they were queued, however many there
 * are and however they were pushed among pops.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "evq.h"
#include "splitmix.h"

static void ties_in_insertion_order(void **state)
{
	(void)state;
	struct evq q;
	evq_init(&q);
	/* times 30, 10, 20, 10, 30, 10 ...: the a's at one time must come out rising */
	for (uint32_t i = 0; i < 300; i++)
		assert_int_equal(evq_push(&q, 10 * (3 - i % 3), 0, i, NULL), 0);
	struct event e;
	uint64_t last_at = 0;
	uint32_t last_a = 0, popped = 0;
	while (evq_pop(&q, &e)) {
		assert_true(e.at_ns >= last_at);
		if (e.at_ns == last_at && popped)
			assert_true(e.a > last_a);
		last_at = e.at_ns;
		last_a = e.a;
		popped++;
	}
	assert_int_equal(popped, 300);
	evq_free(&q);
}

static void interleaved_pushes_and_pops(void **state)
{
	(void)state;
	struct evq q;
	evq_init(&q);
	uint64_t rng = 42, now = 0, seen = 0;
	uint32_t next = 0, last_a = 0;
	struct event e;
	/* as the simulator uses it: what runs now queues more, never in the past */
	for (int round = 0; round < 2000; round++) {
		for (int k = 0; k < 3; k++)
			assert_int_equal(evq_push(&q, now + splitmix64(&rng) % 4, 0, next++, NULL), 0);
		assert_true(evq_pop(&q, &e));
		assert_true(e.at_ns >= now);
		if (e.at_ns == now && seen)
			assert_true(e.a > last_a);
		now = e.at_ns;
		last_a = e.a;
		seen++;
	}
	while (evq_pop(&q, &e)) {
		assert_true(e.at_ns > now || (e.at_ns == now && e.a > last_a));
		now = e.at_ns;
		last_a = e.a;
		seen++;
	}
	assert_int_equal(seen, next);
	evq_free(&q);
}

static void empty_queue_pops_nothing(void **state)
{
	(void)state;
	struct evq q;
	struct event e;
	evq_init(&q);
	assert_false(evq_pop(&q, &e));
	assert_int_equal(evq_push(&q, 5, 1, 2, &q), 0);
	assert_true(evq_pop(&q, &e));
	assert_true(e.at_ns == 5 && e.kind == 1 && e.a == 2 && e.p == &q);
	assert_false(evq_pop(&q, &e));
	evq_free(&q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(ties_in_insertion_order),
		cmocka_unit_test(interleaved_pushes_and_pops),
		cmocka_unit_test(empty_queue_pops_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
