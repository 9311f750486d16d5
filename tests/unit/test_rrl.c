/*
 * inrpd/rrl.c: response rate limiting per source prefix.  The attack: a
 * flood spoofing a victim's address is limited, and the flooder also
 * sends from a prefix in the victim's table entry, hoping to reset it
 * to a full bucket after each of its own queries, so the flood at the
 * victim is answered whole.  The test finds such a prefix (rrl_slot
 * tells which entry a prefix takes: with the real secret nobody outside
 * can) and mounts the attack: the victim's answers stay limited.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "rrl.h"

#define RATE    10              /* answers a second, and the burst */
#define T0      1000000         /* ms */

static struct inrpd_runtime rt = { .rrl_rate = RATE, .rrl_slip = 0 };

static const uint8_t victim[4] = { 192, 0, 2, 7 };

/* A /24 other than the victim's whose queries land in the victim's entry. */
static void colliding(uint8_t out[4])
{
	unsigned want = rrl_slot(AF_INET, victim);
	for (unsigned i = 0; i < 1u << 24; i++) {
		uint8_t a[4] = { (uint8_t)(i >> 16), (uint8_t)(i >> 8), (uint8_t)i, 1 };
		if (memcmp(a, victim, 3) != 0 && rrl_slot(AF_INET, a) == want) {
			memcpy(out, a, 4);
			return;
		}
	}
	fail_msg("no prefix shares the victim's entry");
}

/* Spends the victim's burst at T0: the next answer is limited. */
static void exhaust(struct rrl *r)
{
	for (unsigned i = 0; i < RATE; i++)
		assert_int_equal(rrl_check(r, &rt, AF_INET, victim, T0), RRL_PASS);
	assert_int_equal(rrl_check(r, &rt, AF_INET, victim, T0), RRL_DROP);
}

static void test_collision_cannot_reset_a_limited_bucket(void **state)
{
	(void)state;
	struct rrl *r = rrl_create(1);
	assert_non_null(r);
	uint8_t other[4];
	colliding(other);
	exhaust(r);
	/* a thousand rounds of one query from the colliding prefix, one at the victim */
	unsigned answered = 0;
	for (unsigned i = 0; i < 1000; i++) {
		answered += rrl_check(r, &rt, AF_INET, other, T0) == RRL_PASS;
		answered += rrl_check(r, &rt, AF_INET, victim, T0) == RRL_PASS;
	}
	assert_int_equal(answered, 0);
	/* time still refills the bucket: 100 ms is one answer, shared */
	assert_int_equal(rrl_check(r, &rt, AF_INET, victim, T0 + 100), RRL_PASS);
	assert_int_equal(rrl_check(r, &rt, AF_INET, other, T0 + 100), RRL_DROP);
	rrl_free(r);
}

/*
 * A full bucket limits no one, so a newcomer may take it; the owner
 * coming back then shares the newcomer's limit, it gets no fresh burst.
 */
static void test_full_bucket_changes_hands_without_a_fresh_burst(void **state)
{
	(void)state;
	struct rrl *r = rrl_create(1);
	uint8_t other[4];
	colliding(other);
	exhaust(r);
	uint64_t later = T0 + 1000;                     /* the victim's bucket is full again */
	for (unsigned i = 0; i < RATE; i++)
		assert_int_equal(rrl_check(r, &rt, AF_INET, other, later), RRL_PASS);
	assert_int_equal(rrl_check(r, &rt, AF_INET, victim, later), RRL_DROP);
	assert_int_equal(rrl_check(r, &rt, AF_INET, other, later), RRL_DROP);
	rrl_free(r);
}

/* A prefix in another entry keeps its own burst while the victim is limited. */
static void test_other_entries_unaffected(void **state)
{
	(void)state;
	struct rrl *r = rrl_create(1);
	exhaust(r);
	uint8_t apart[4] = { 198, 51, 100, 1 };
	for (unsigned i = 0; rrl_slot(AF_INET, apart) == rrl_slot(AF_INET, victim); i++)
		apart[2] = (uint8_t)i;
	for (unsigned i = 0; i < RATE; i++)
		assert_int_equal(rrl_check(r, &rt, AF_INET, apart, T0), RRL_PASS);
	assert_int_equal(rrl_check(r, &rt, AF_INET, victim, T0), RRL_DROP);
	rrl_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_collision_cannot_reset_a_limited_bucket),
		cmocka_unit_test(test_full_bucket_changes_hands_without_a_fresh_burst),
		cmocka_unit_test(test_other_entries_unaffected),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
