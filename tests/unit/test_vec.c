/* lib/core/vec.h: the one grow step of appended arrays. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "vec.h"

struct pair {
	uint64_t a, b;
};

static void appends_keep_every_element_and_capacity_doubles(void **state)
{
	(void)state;
	struct pair *v = NULL;
	size_t n = 0, cap = 0;
	for (uint64_t i = 0; i < 1000; i++) {
		assert_int_equal(VEC_RESERVE(v, cap, n + 1), 0);
		v[n++] = (struct pair){ i, ~i };
	}
	assert_int_equal(cap, 1024);            /* 16 doubled six times */
	for (uint64_t i = 0; i < 1000; i++)
		assert_true(v[i].a == i && v[i].b == ~i);
	free(v);
}

static void small_elements_start_at_256_bytes_and_a_big_ask_is_met_at_once(void **state)
{
	(void)state;
	uint8_t *b = NULL;
	size_t cap = 0;
	assert_int_equal(VEC_RESERVE(b, cap, 1), 0);
	assert_int_equal(cap, 256);
	assert_int_equal(VEC_RESERVE(b, cap, 100000), 0);
	assert_int_equal(cap, 131072);
	b[99999] = 1;
	free(b);
}

static void an_overflowing_ask_fails_with_enomem_and_leaves_the_array(void **state)
{
	(void)state;
	struct pair *v = NULL;
	size_t cap = 0;
	assert_int_equal(VEC_RESERVE(v, cap, 4), 0);
	v[3].a = 7;
	struct pair *before = v;
	errno = 0;
	assert_int_equal(VEC_RESERVE(v, cap, SIZE_MAX / 8), -1);     /* bytes overflow */
	assert_int_equal(errno, ENOMEM);
	errno = 0;
	assert_int_equal(VEC_RESERVE(v, cap, SIZE_MAX), -1);         /* the count overflows */
	assert_int_equal(errno, ENOMEM);
	assert_ptr_equal(v, before);
	assert_int_equal(cap, 16);
	assert_true(v[3].a == 7);
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(appends_keep_every_element_and_capacity_doubles),
		cmocka_unit_test(small_elements_start_at_256_bytes_and_a_big_ask_is_met_at_once),
		cmocka_unit_test(an_overflowing_ask_fails_with_enomem_and_leaves_the_array),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
