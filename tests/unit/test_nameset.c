#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "name.h"
#include "nameset.h"

static struct name nm(unsigned i)
{
	char text[64];
	struct name n;
	snprintf(text, sizeof(text), "m%u.example", i);
	assert_int_equal(name_from_text(&n, text, strlen(text)), NAME_OK);
	return n;
}

/* Random adds and removes against a plain bitmap: membership, counts, iteration. */
static void set_matches_a_model(void **state)
{
	enum { N = 20000, OPS = 200000 };
	bool *in = calloc(N, 1);
	struct nameset s;
	nameset_init(&s);
	uint32_t count = 0;
	srandom(1);
	for (int op = 0; op < OPS; op++) {
		unsigned i = (unsigned)random() % N;
		struct name n = nm(i);
		/* more removes in the second half, so dead space is reclaimed */
		if ((random() % 100) < (op < OPS / 2 ? 30 : 70)) {
			assert_int_equal(nameset_remove(&s, n.wire, n.len), in[i] ? 1 : 0);
			count -= in[i];
			in[i] = false;
		} else {
			assert_int_equal(nameset_add(&s, n.wire, n.len), in[i] ? 0 : 1);
			count += !in[i];
			in[i] = true;
		}
	}
	assert_int_equal(s.count, count);
	for (unsigned i = 0; i < N; i++) {
		struct name n = nm(i);
		assert_int_equal(nameset_contains(&s, n.wire, n.len), in[i]);
	}
	size_t pos = 0;
	const uint8_t *w;
	uint8_t l;
	uint32_t seen = 0;
	while (nameset_next(&s, &pos, &w, &l)) {
		struct name n;
		assert_int_equal(name_from_wire(&n, w, l), NAME_OK);
		assert_true(nameset_contains(&s, w, l));
		seen++;
	}
	assert_int_equal(seen, count);
	assert_true(s.dead_bytes <= s.used);
	nameset_free(&s);
	free(in);
}

static void diff_and_list(void **state)
{
	struct nameset a, b;
	struct namelist dels, adds, all;
	nameset_init(&a);
	nameset_init(&b);
	namelist_init(&dels);
	namelist_init(&adds);
	namelist_init(&all);
	for (unsigned i = 0; i < 100; i++) {
		struct name n = nm(i);
		nameset_add(&a, n.wire, n.len);
		n = nm(i + 30);
		nameset_add(&b, n.wire, n.len);
	}
	assert_int_equal(nameset_diff(&a, &b, &dels, &adds), 0);
	assert_int_equal(dels.count, 30);
	assert_int_equal(adds.count, 30);
	assert_true(namelist_check(dels.buf, dels.len, dels.count));
	size_t pos = 0;
	const uint8_t *w;
	uint8_t l;
	while (namelist_walk(dels.buf, dels.len, &pos, &w, &l)) {
		assert_true(nameset_contains(&a, w, l));
		assert_false(nameset_contains(&b, w, l));
	}
	assert_int_equal(nameset_to_list(&b, &all), 0);
	assert_int_equal(all.count, 100);
	assert_true(namelist_check(all.buf, all.len, all.count));
	/* a wrong count, a non-canonical name, a length past the end */
	assert_false(namelist_check(all.buf, all.len, 99));
	uint8_t bad[] = { 3, 1, 'A', 0 };
	assert_false(namelist_check(bad, sizeof(bad), 1));
	uint8_t past[] = { 9, 1, 'a', 0 };
	assert_false(namelist_check(past, sizeof(past), 1));
	nameset_free(&a);
	nameset_free(&b);
	namelist_free(&dels);
	namelist_free(&adds);
	namelist_free(&all);
}

/* After a reserve, adds need no memory: the table and buffer do not move. */
static void reserve_makes_room(void **state)
{
	struct nameset s;
	nameset_init(&s);
	assert_int_equal(nameset_reserve(&s, 1000, 1000 * 20), 0);
	uint32_t *slots = s.slots;
	uint8_t *buf = s.buf;
	for (unsigned i = 0; i < 1000; i++) {
		struct name n = nm(i);
		assert_int_equal(nameset_add(&s, n.wire, n.len), 1);
	}
	assert_ptr_equal(s.slots, slots);
	assert_ptr_equal(s.buf, buf);
	nameset_free(&s);
}

/* A list added at once is the same set as its names added one by one, in the same order. */
static void a_list_adds_as_one_by_one_does(void **state)
{
	(void)state;
	struct nameset a, b;
	struct namelist l;
	nameset_init(&a);
	nameset_init(&b);
	namelist_init(&l);
	for (unsigned i = 0; i < 50000; i++) {
		char text[32];
		struct name n;
		snprintf(text, sizeof(text), "n%u.example", i % 40000);      /* 10,000 repeats */
		assert_int_equal(name_from_text(&n, text, strlen(text)), NAME_OK);
		assert_int_equal(namelist_add(&l, n.wire, n.len), 0);
		assert_true(nameset_add(&b, n.wire, n.len) >= 0);
	}
	/* some there already, some removed (tombstones to reuse) */
	size_t pos = 0, half = 0;
	const uint8_t *w;
	uint8_t len;
	for (unsigned k = 0; k < 25000 && namelist_walk(l.buf, l.len, &half, &w, &len); k++)
		;
	assert_int_equal(nameset_add_list(&a, l.buf, half), 25000);
	for (unsigned k = 0; k < 1000 && nameset_next(&b, &pos, &w, &len); k++)
		assert_int_equal(nameset_remove(&a, w, len), 1);
	assert_int_equal(nameset_add_list(&a, l.buf, l.len), 40000 - 25000 + 1000);
	assert_int_equal(a.count, b.count);
	pos = 0;
	while (nameset_next(&b, &pos, &w, &len))
		assert_true(nameset_contains(&a, w, len));
	assert_int_equal(nameset_add_list(&a, l.buf, 0), 0);
	nameset_free(&a);
	nameset_free(&b);
	namelist_free(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(set_matches_a_model),
		cmocka_unit_test(diff_and_list),
		cmocka_unit_test(reserve_makes_room),
		cmocka_unit_test(a_list_adds_as_one_by_one_does),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
