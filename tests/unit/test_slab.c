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

/* Tiny sizes are rounded up to a word. */
static void tiny_objects_are_a_word(void **state)
{
	struct slab s;
	slab_init(&s, 1);
	assert_int_equal(s.size, sizeof(void *));
	void *a = slab_alloc(&s);
	slab_free(&s, a);
	assert_ptr_equal(slab_alloc(&s), a);
	slab_destroy(&s);
}

static int by_address(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
	return x < y ? -1 : x > y;
}

/*
 * Objects freed in any order, across chunks, come back lowest address first
 * within a chunk, each exactly once, before the slab takes new memory: a
 * peer's routes that replace the ones withdrawn are written in order.
 */
static void freed_objects_come_back_in_address_order(void **state)
{
	struct slab s;
	slab_init(&s, 24);
	enum { N = 200000 };            /* several chunks */
	void **objs = calloc(N, sizeof(*objs));
	for (int i = 0; i < N; i++)
		objs[i] = slab_alloc(&s);
	void *fresh = slab_alloc(&s);   /* the next never handed out */
	slab_free(&s, fresh);
	fresh = slab_alloc(&s);
	/* free every third object, in a scrambled order */
	enum { F = N / 3 };
	void **freed = calloc(F, sizeof(*freed));
	for (int k = 0; k < F; k++) {
		freed[k] = objs[(size_t)k * 7919 % F * 3];
		slab_free(&s, freed[k]);
	}
	assert_int_equal(s.live, N + 1 - F);
	qsort(freed, F, sizeof(*freed), by_address);
	void **again = calloc(F, sizeof(*again));
	for (int k = 0; k < F; k++) {
		again[k] = slab_alloc(&s);
		if (k > 0 && (uintptr_t)again[k] / SLAB_CHUNK_BYTES == (uintptr_t)again[k - 1] / SLAB_CHUNK_BYTES)
			assert_true(again[k] > again[k - 1]);
	}
	qsort(again, F, sizeof(*again), by_address);
	for (int k = 0; k < F; k++)
		assert_ptr_equal(again[k], freed[k]);
	assert_int_equal(s.live, N + 1);
	assert_ptr_not_equal(slab_alloc(&s), fresh);   /* then new memory again */
	slab_destroy(&s);
	free(objs);
	free(freed);
	free(again);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(objects_are_distinct_and_whole),
		cmocka_unit_test(freed_objects_are_reused),
		cmocka_unit_test(tiny_objects_are_a_word),
		cmocka_unit_test(freed_objects_come_back_in_address_order),
	};
	return cmocka_run_group_tests_name("slab", tests, NULL, NULL);
}
