#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "slab.h"

/* Objects are distinct, aligned, writable in full, and outlive chunk boundaries. */
static void objects_are_distinct_and_whole(void **state)
{
	struct slab s;
	slab_init(&s, 37);
	assert_int_equal(s.size, 40);
	enum { N = 10000 };             /* several chunks */
	uint8_t **objs = calloc(N, sizeof(*objs));
	for (int i = 0; i < N; i++) {
		objs[i] = slab_alloc(&s);
		assert_non_null(objs[i]);
		assert_int_equal((uintptr_t)objs[i] % 8, 0);
		memset(objs[i], i & 0xff, 37);
	}
	assert_int_equal(s.live, N);
	for (int i = 0; i < N; i++)
		for (int k = 0; k < 37; k++)
			assert_int_equal(objs[i][k], i & 0xff);
	slab_destroy(&s);
	assert_int_equal(s.live, 0);
	free(objs);
}

/* A freed object is the next one handed out: memory does not grow with churn. */
static void freed_objects_are_reused(void **state)
{
	struct slab s;
	slab_init(&s, 24);
	void *a = slab_alloc(&s), *b = slab_alloc(&s);
	slab_free(&s, a);
	assert_int_equal(s.live, 1);
	assert_ptr_equal(slab_alloc(&s), a);
	slab_free(&s, b);
	slab_free(&s, a);
	slab_free(&s, NULL);
	assert_int_equal(s.live, 0);
	for (int round = 0; round < 1000; round++) {
		void *x = slab_alloc(&s);
		assert_true(x == a || x == b);
		slab_free(&s, x);
	}
	slab_destroy(&s);
}

/* Tiny sizes still hold the free list's link. */
static void tiny_objects_hold_a_pointer(void **state)
{
	struct slab s;
	slab_init(&s, 1);
	assert_int_equal(s.size, sizeof(void *));
	void *a = slab_alloc(&s);
	slab_free(&s, a);
	assert_ptr_equal(slab_alloc(&s), a);
	slab_destroy(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(objects_are_distinct_and_whole),
		cmocka_unit_test(freed_objects_are_reused),
		cmocka_unit_test(tiny_objects_hold_a_pointer),
	};
	return cmocka_run_group_tests_name("slab", tests, NULL, NULL);
}
