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
 * printed, one line per kind, as JSON.  Then an IXFR of 1% of the rules
 * (half removed, half new) applied to the records (zone_apply_ms) and
 * the table (table_apply_ms: rpz_table_apply, what inrpd does between
 * the transfer's end and the publication), the RPZ lookups again with
 * the diff's delta (delta_*_ns), and the fold (compact_ms, done off the
 * loop in inrpd): one more JSON line.
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

/* An IXFR's record: "OWNER CNAME ." added or removed. */
static void change(struct rpz_zone *z, struct rpz_diff *d, bool add, uint64_t i)
{
	static const uint8_t root = 0;
	struct name owner;
	name_of(&owner, i, "", ".rpz.bench");
	struct dns_rr rr = { .type = DNS_TYPE_CNAME, .rclass = DNS_CLASS_IN, .ttl = 60, .rdlen = 1, .rdata = &root };
	const char *why;
	if (rpz_zone_change(z, add, &root, 1, &rr, &owner, d, &why) != 0)
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
	double base_ns[KINDS];
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
		base_ns[k] = median(rs, rounds);
		printf("{\"kind\": \"%s\", \"names\": %llu, \"fib_ns\": %.1f, \"rpz_ns\": %.1f, "
		       "\"fib_found\": %.3f, \"rpz_found\": %.3f, \"rpz_build_ms\": %.0f}\n", kind[k],
		       (unsigned long long)names, median(fs, rounds), base_ns[k],
		       (double)found_fib / rounds / LOOKUPS, (double)found_rpz / rounds / LOOKUPS, build_ms);
	}
	/* an IXFR of 1%: exact rules removed, new ones (named past every name asked) added */
	uint64_t changes = names / 100;
	struct rpz_diff *d = rpz_diff_new();
	if (!d)
		return 1;
	t0 = now_ns();
	for (uint64_t i = 0; i < changes / 2; i++)
		change(z, d, false, i * 100 + 1);
	for (uint64_t i = 0; i < changes - changes / 2; i++)
		change(z, d, true, 2 * names + i);
	uint64_t t1 = now_ns();
	struct rpz_table *t2 = rpz_table_apply(t, z, d, NULL, NULL);
	uint64_t t2_ns = now_ns();
	if (!t2)
		return 1;
	double delta_ns[KINDS];
	for (int k = 0; k < KINDS; k++) {
		for (unsigned round = 0; round < rounds; round++) {
			struct rpz_hit hit;
			uint64_t a = now_ns();
			for (unsigned i = 0; i < LOOKUPS; i++)
				rpz_table_lookup(t2, &q[k][i], &hit);
			rs[round] = (double)(now_ns() - a) / LOOKUPS;
		}
		delta_ns[k] = median(rs, rounds);
	}
	uint64_t t3 = now_ns();
	struct rpz_table *t4 = rpz_table_compact(t2);
	uint64_t t4_ns = now_ns();
	if (!t4)
		return 1;
	printf("{\"kind\": \"ixfr\", \"names\": %llu, \"changes\": %llu, \"zone_apply_ms\": %.1f, "
	       "\"table_apply_ms\": %.1f, \"compact_ms\": %.0f, \"delta_hit_ns\": %.1f, \"delta_wildcard_ns\": %.1f, "
	       "\"delta_miss_ns\": %.1f}\n", (unsigned long long)names, (unsigned long long)changes,
	       (double)(t1 - t0) / 1e6, (double)(t2_ns - t1) / 1e6, (double)(t4_ns - t3) / 1e6,
	       delta_ns[HIT], delta_ns[WILD], delta_ns[MISS]);
	rpz_table_free(t4);
	rpz_table_free(t2);
	rpz_diff_free(d);
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
