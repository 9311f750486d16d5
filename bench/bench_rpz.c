/*
 * bench_rpz: a Response Policy Zone lookup (lib/dns/rpz.c) beside a FIB
 * lookup (lib/fib/fib.c) of the same names, as inrpd makes both for every
 * question.
 *
 *     bench_rpz [NAMES] [ROUNDS]
 *
 * NAMES rules (one in 100 a wildcard, the rest exact) and as many routed
 * names, three labels each (the FIB gets them as routes, the RPZ zone as
 * "NAME.rpz.bench CNAME ."); then ROUNDS passes of 1,000,000 lookups each,
 * in random order, of names in the tables (hits), names below a wildcard,
 * and absent names (misses; an RPZ miss is what almost every question
 * costs).  Each pass is timed whole; the median pass in ns per lookup is
 * printed, one line per kind, as JSON.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <urcu-qsbr.h>

#include "dns.h"
#include "fib.h"
#include "rpz.h"

#define LOOKUPS 1000000u

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void name_of(struct name *n, uint64_t i, const char *prefix, const char *suffix)
{
	char text[128];
	snprintf(text, sizeof(text), "%sh%llx.site%llu.com%s", prefix, (unsigned long long)i,
		 (unsigned long long)(i % 997), suffix);
	if (name_from_text(n, text, strlen(text)) != NAME_OK)
		abort();
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[n / 2];
}

int main(int argc, char **argv)
{
	uint64_t names = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
	unsigned rounds = argc > 2 ? (unsigned)atoi(argv[2]) : 5;
	if (names < 100 || rounds < 1 || rounds > 100) {
		fprintf(stderr, "usage: bench_rpz [NAMES >= 100] [ROUNDS 1-100]\n");
		return 2;
	}
	rcu_register_thread();
	struct fib *fib = fib_create();
	struct name apex;
	name_from_text(&apex, "rpz.bench", 9);
	struct rpz_zone *z = rpz_zone_new(&apex);
	if (!fib || !z || fib_reserve(fib, names) < 0)
		return 1;
	struct route r = { .kind = ROUTE_SERVER, .family = 2, .addr = { 192, 0, 2, 1 } };
	const uint8_t root = 0;
	for (uint64_t i = 0; i < names; i++) {
		struct name n, owner;
		name_of(&n, i, "", "");
		name_of(&owner, i, i % 100 ? "" : "*.", ".rpz.bench");
		if (fib_set_routes(fib, &n, &r, 1) < 0 || rpz_zone_put(z, &owner, DNS_TYPE_CNAME, 60, &root, 1) < 0)
			return 1;
	}
	fib_commit(fib);
	uint64_t t0 = now_ns();
	struct rpz_table *t = rpz_table_build(z, NULL, NULL);
	double build_ms = (double)(now_ns() - t0) / 1e6;
	if (!t)
		return 1;

	enum { HIT, WILD, MISS, KINDS };
	static const char *const kind[KINDS] = { "hit", "wildcard", "miss" };
	struct name *q[KINDS];
	for (int k = 0; k < KINDS; k++) {
		if (!(q[k] = malloc(LOOKUPS * sizeof(struct name))))
			return 1;
		for (unsigned i = 0; i < LOOKUPS; i++) {
			uint64_t j = next() % names;
			if (k == HIT)
				name_of(&q[k][i], j / 100 * 100 + 1 + j % 99, "", "");   /* an exact rule */
			else if (k == WILD)
				name_of(&q[k][i], j / 100 * 100, "www.", "");            /* below a wildcard */
			else
				name_of(&q[k][i], names + j, "", "");                    /* neither table has it */
		}
	}
	double *fs = malloc(rounds * sizeof(double)), *rs = malloc(rounds * sizeof(double));
	for (int k = 0; k < KINDS; k++) {
		uint64_t found_fib = 0, found_rpz = 0;
		for (unsigned round = 0; round < rounds; round++) {
			struct fib_result res;
			struct rpz_hit hit;
			uint64_t a = now_ns();
			for (unsigned i = 0; i < LOOKUPS; i++)
				found_fib += fib_lookup_longest_suffix(fib, &q[k][i], &res) && res.suffix_labels == 3;
			uint64_t b = now_ns();
			for (unsigned i = 0; i < LOOKUPS; i++)
				found_rpz += rpz_table_lookup(t, &q[k][i], &hit);
			uint64_t c = now_ns();
			rcu_quiescent_state();
			fs[round] = (double)(b - a) / LOOKUPS;
			rs[round] = (double)(c - b) / LOOKUPS;
		}
		printf("{\"kind\": \"%s\", \"names\": %llu, \"fib_ns\": %.1f, \"rpz_ns\": %.1f, "
		       "\"fib_found\": %.3f, \"rpz_found\": %.3f, \"rpz_build_ms\": %.0f}\n", kind[k],
		       (unsigned long long)names, median(fs, rounds), median(rs, rounds),
		       (double)found_fib / rounds / LOOKUPS, (double)found_rpz / rounds / LOOKUPS, build_ms);
	}
	for (int k = 0; k < KINDS; k++)
		free(q[k]);
	free(fs);
	free(rs);
	rpz_table_free(t);
	rpz_zone_free(z);
	rcu_thread_offline();
	fib_destroy(fib);
	rcu_unregister_thread();
	return 0;
}
