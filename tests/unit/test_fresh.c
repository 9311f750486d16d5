/*
 * The freshness table (nbrpd/fresh.c): entries found by name and key,
 * growth, and the sweep's deletions by backward shift, which must leave
 * every other entry findable whatever the order of the probes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "fresh.h"

static void name_of(unsigned i, uint8_t wire[16], size_t *len)
{
	int n = snprintf((char *)wire + 1, 12, "n%u", i);
	wire[0] = (uint8_t)n;
	wire[n + 1] = 0;
	*len = (size_t)n + 2;
}

static void found_grown_and_swept(void **state)
{
	(void)state;
	struct fresh_table t = { 0 };
	uint8_t key_a[32], key_b[32], wire[16];
	size_t len;
	memset(key_a, 0xaa, sizeof(key_a));
	memset(key_b, 0xbb, sizeof(key_b));
	enum { N = 20000 };
	for (unsigned i = 0; i < N; i++) {
		name_of(i, wire, &len);
		assert_null(fresh_find(&t, wire, len, key_a));
		struct fresh_slot *s = fresh_add(&t, wire, len, key_a);
		assert_non_null(s);
		s->seq = i + 1;
		s->until = i % 2 ? 100 : 200;   /* odd ones go first */
	}
	assert_int_equal(t.n, N);
	assert_true(t.n * 4 <= t.cap * 3);
	name_of(7, wire, &len);
	assert_null(fresh_find(&t, wire, len, key_b));  /* another key: another entry */
	for (unsigned i = 0; i < N; i++) {
		name_of(i, wire, &len);
		struct fresh_slot *s = fresh_find(&t, wire, len, key_a);
		assert_non_null(s);
		assert_int_equal(s->seq, i + 1);
	}
	/* a sweep in slices, once round (and the slots it emptied) */
	for (size_t done = 0; done < t.cap + N; done += 1000)
		fresh_sweep(&t, 150, 1000);
	assert_int_equal(t.n, N / 2);
	for (unsigned i = 0; i < N; i++) {
		name_of(i, wire, &len);
		struct fresh_slot *s = fresh_find(&t, wire, len, key_a);
		if (i % 2) {
			assert_null(s);
		} else {
			assert_non_null(s);
			assert_int_equal(s->seq, i + 1);
		}
	}
	fresh_sweep(&t, 300, t.cap + N);
	assert_int_equal(t.n, 0);
	fresh_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(found_grown_and_swept),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
