/*
 * lib/core/hashkey.c: the keyed hash the tables fed from the network use.
 * Within one secret a key always hashes the same (else no table finds
 * what it stored); under another secret it hashes differently (else the
 * secret keys nothing); and the secret a process draws at start is
 * neither XXH3's built-in one nor one a known seed gives.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "hashkey.h"

static const char *const keys[] = {
	"", "a", "\7example\3com", "\3www\7example\3com\0\0\1\0\1\1",
	/* past XXH3's 240-byte short path */
	"0123456789012345678901234567890123456789012345678901234567890123456789"
	"0123456789012345678901234567890123456789012345678901234567890123456789"
	"0123456789012345678901234567890123456789012345678901234567890123456789"
	"0123456789012345678901234567890123456789",
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static void hash_all(uint64_t out[NKEYS])
{
	for (size_t i = 0; i < NKEYS; i++)
		out[i] = hashkey64(keys[i], strlen(keys[i]));
}

static void test_drawn_secret_keys_the_hash(void **state)
{
	(void)state;
	uint64_t drawn[NKEYS], again[NKEYS];
	hash_all(drawn);
	hash_all(again);
	for (size_t i = 0; i < NKEYS; i++) {
		assert_true(drawn[i] == again[i]);
		assert_true(drawn[i] != XXH3_64bits(keys[i], strlen(keys[i])));
	}
	/* a known seed gives a known secret, not the drawn one */
	static const uint8_t zero[32];
	hashkey_set(zero, sizeof(zero));
	uint64_t known[NKEYS];
	hash_all(known);
	for (size_t i = 0; i < NKEYS; i++)
		assert_true(known[i] != drawn[i]);
}

static void test_stable_within_a_secret_and_not_across(void **state)
{
	(void)state;
	uint64_t a[NKEYS], a2[NKEYS], b[NKEYS], a3[NKEYS];
	hashkey_set("secret one", 10);
	hash_all(a);
	hash_all(a2);
	hashkey_set("secret two", 10);
	hash_all(b);
	hashkey_set("secret one", 10);
	hash_all(a3);
	for (size_t i = 0; i < NKEYS; i++) {
		assert_true(a[i] == a2[i]);
		assert_true(a[i] == a3[i]);             /* the secret alone decides */
		assert_true(a[i] != b[i]);
	}
}

/*
 * What a flooder wants: many keys in one bucket of a 4096-bucket table.
 * Keys that share a bucket under one secret spread under another.
 */
static void test_colliding_keys_spread_under_another_secret(void **state)
{
	(void)state;
	enum { BUCKETS = 4096, WANT = 64 };
	uint32_t shared[WANT];
	unsigned n = 0;
	hashkey_set("attacker's guess", 16);
	for (uint32_t k = 0; n < WANT; k++)
		if (hashkey64(&k, sizeof(k)) % BUCKETS == 0)
			shared[n++] = k;
	hashkey_set("the real secret", 15);
	unsigned still = 0;
	for (unsigned i = 0; i < WANT; i++)
		still += hashkey64(&shared[i], sizeof(shared[i])) % BUCKETS == 0;
	assert_true(still <= 1);        /* 64/4096 expected: 2 or more has p ~ 1e-4 */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drawn_secret_keys_the_hash),
		cmocka_unit_test(test_stable_within_a_secret_and_not_across),
		cmocka_unit_test(test_colliding_keys_spread_under_another_secret),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
