/*
 * scripts/bench fib [--names N] [--seed S] [--queries Q] [--passes P] [--batch B] [--reserve]
 *                   [--aggregated [--agg-size A] [--changes C] [--big M] [--diffs D]]
 *
 * Builds the FIB from N distinct random second-level names (80% .com,
 * 10% .org, 10% .net, label length uniform 3-17), each with its own route
 * entry pointing at one of 256 shared next-hop sets, and a plain
 * open-addressing hash table (bench/baseline_table.c) over the same names.
 * Then measures, in the same run:
 *
 *   lookup_ns           median ns per fib_lookup_longest_suffix() of
 *                       "www.<name>" for random names of the table
 *   baseline_exact_ns   median ns per exact-match baseline_lookup() of "<name>"
 *   bytes_per_name      RSS growth from building the FIB (after fib_barrier()), / N
 *   load_s              fib_create(), the N fib_set_routes() calls and
 *                       fib_barrier() (with --reserve also fib_reserve(N),
 *                       and the baseline is sized for N up front too)
 *
 * Lookups are timed in batches (clock_gettime around each batch of B
 * lookups); the medians are over all batches of all passes.  FIB and
 * baseline passes alternate so that machine noise hits both alike.
 * Every lookup is checked (the right name matched, the right route set), in
 * a full verification pass and again, cheaply, inside the timed passes; any
 * mismatch makes the exit status 1.
 *
 * With --aggregated, name i is instead a member of aggregate i / A, and
 * aggregate a is routed by set a % 256 (the paper's setup, section 4.1:
 * 5M names in aggregates of 15,000); load_s then times the
 * fib_aggregate_add_member() calls.  After the lookups it also measures
 * (see the section "aggregates" below): C route changes of one aggregate
 * seen by a reader thread on another CPU, an aggregate of M new names
 * loaded one call a member and in batches, D diffs of 1% of it, and
 * fib_aggregate_delete().
 *
 * Human-readable lines first; the last line is always one JSON object.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <getopt.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <urcu-qsbr.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "fib.h"
#include "name.h"
#include "route.h"
#include "splitmix.h"

#include "baseline_table.h"

#define NSETS 256

struct opts {
	uint64_t names;
	uint64_t seed;
	uint64_t queries;
	unsigned passes;
	unsigned batch;
	bool reserve;
	bool aggregated;
	uint32_t agg_size;      /* members per aggregate */
	uint32_t big;           /* members of the aggregate the diffs change */
	unsigned diffs;
	unsigned changes;
};

/* ---- PRNG: xoshiro256** seeded by splitmix64 ---------------------------- */

struct rng {
	uint64_t s[4];
};

static void rng_seed(struct rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

/* Uniform in [0, n), n < 2^32 (multiply-shift; the bias is < 2^-32). */
static uint32_t rng_below(struct rng *r, uint32_t n)
{
	return (uint32_t)(((rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

/* ---- helpers -------------------------------------------------------------- */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t rss_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long size = 0, resident = 0;
	if (!f || fscanf(f, "%lu %lu", &size, &resident) != 2) {
		fprintf(stderr, "bench_fib: cannot read /proc/self/statm\n");
		exit(1);
	}
	fclose(f);
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Big harness arrays: anonymous memory with MADV_HUGEPAGE, so that the
 * query stream costs both tables as few TLB misses as possible. */
static void *harness_alloc(size_t size)
{
	size = (size + 4095) & ~(size_t)4095;
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		fprintf(stderr, "bench_fib: out of memory (%zu bytes)\n", size);
		exit(1);
	}
	madvise(p, size, MADV_HUGEPAGE);
	return p;
}

static void harness_free(void *p, size_t size)
{
	munmap(p, (size + 4095) & ~(size_t)4095);
}

/* "AnonHugePages" of /proc/self/smaps_rollup in bytes, 0 if unknown. */
static uint64_t thp_bytes(void)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	char line[256];
	unsigned long kb = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "AnonHugePages: %lu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb * 1024;
}

static void print_machine(void)
{
	char model[256] = "unknown", line[512];
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			char *colon = strchr(line, ':');
			if (strncmp(line, "model name", 10) == 0 && colon) {
				snprintf(model, sizeof(model), "%s", colon + 2);
				model[strcspn(model, "\n")] = 0;
				break;
			}
		}
		fclose(f);
	}
	char thp[128] = "unknown";
	f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	if (f) {
		if (fgets(thp, sizeof(thp), f))
			thp[strcspn(thp, "\n")] = 0;
		fclose(f);
	}
	printf("machine: %s, %ld CPUs online, THP %s\n", model, sysconf(_SC_NPROCESSORS_ONLN), thp);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Sorts v in place; q in [0, 1]. */
static double quantile(double *v, size_t n, double q)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	size_t i = (size_t)(q * (double)(n - 1) + 0.5);
	return v[i];
}

/* ---- the names ------------------------------------------------------------- */

/* N canonical wire names packed back to back; names[i] starts at off[i]. */
struct nameset {
	uint8_t *wire;
	uint32_t *off;
	uint8_t *len;
	uint64_t n;
	size_t wire_map, off_map, len_map;
};

/* A set of 64-bit name hashes, only to keep the generated names distinct
 * (equal names have equal hashes; a rare collision of distinct names just
 * makes the generator draw another). */
struct hashset {
	uint64_t *v;
	uint64_t mask;
	size_t map;
};

static bool hashset_add(struct hashset *hs, uint64_t h)
{
	if (h == 0)
		h = 1;
	uint64_t i = h & hs->mask;
	while (hs->v[i]) {
		if (hs->v[i] == h)
			return false;
		i = (i + 1) & hs->mask;
	}
	hs->v[i] = h;
	return true;
}

static const char ends[] = "abcdefghijklmnopqrstuvwxyz0123456789";
static const char inner[] = "abcdefghijklmnopqrstuvwxyz0123456789-";

static void gen_names(struct nameset *ns, uint64_t n, struct rng *r)
{
	static const uint8_t com[] = "\003com", org[] = "\003org", net[] = "\003net";

	ns->n = n;
	ns->wire_map = (size_t)n * 24;  /* 1 + 17 + 4 + 1 bytes at most */
	ns->off_map = (size_t)n * sizeof(uint32_t);
	ns->len_map = (size_t)n;
	ns->wire = harness_alloc(ns->wire_map);
	ns->off = harness_alloc(ns->off_map);
	ns->len = harness_alloc(ns->len_map);

	struct hashset hs;
	uint64_t cap = 16;
	while (cap < n * 2)
		cap <<= 1;
	hs.mask = cap - 1;
	hs.map = (size_t)cap * sizeof(uint64_t);
	hs.v = harness_alloc(hs.map);

	size_t used = 0;
	uint64_t dups = 0;
	for (uint64_t i = 0; i < n; ) {
		uint8_t *w = ns->wire + used;
		unsigned L = 3 + rng_below(r, 15);     /* 3..17 */
		w[0] = (uint8_t)L;
		w[1] = (uint8_t)ends[rng_below(r, 36)];
		for (unsigned k = 2; k < L; k++)
			w[k] = (uint8_t)inner[rng_below(r, 37)];
		w[L] = (uint8_t)ends[rng_below(r, 36)];
		unsigned t = rng_below(r, 10);
		const uint8_t *tld = t < 8 ? com : t == 8 ? org : net;
		memcpy(w + 1 + L, tld, 4);
		w[L + 5] = 0;
		unsigned wl = L + 6;
		if (!hashset_add(&hs, XXH3_64bits(w, wl))) {
			dups++;
			continue;
		}
		ns->off[i] = (uint32_t)used;
		ns->len[i] = (uint8_t)wl;
		used += wl;
		i++;
	}
	harness_free(hs.v, hs.map);
	printf("generated %" PRIu64 " distinct names (%" PRIu64 " duplicates redrawn), %.1f wire bytes/name\n",
	       n, dups, (double)used / (double)n);
}

static inline void name_get(const struct nameset *ns, uint64_t i, struct name *out)
{
	out->len = ns->len[i];
	memcpy(out->wire, ns->wire + ns->off[i], out->len);
}

/* The canonical form built by hand must be what lib/dns/name.c makes of the text. */
static int check_canonical(const struct nameset *ns)
{
	uint64_t n = ns->n < 1000 ? ns->n : 1000;
	for (uint64_t i = 0; i < n; i++) {
		struct name a, b;
		char text[NAME_MAX_TEXT];
		name_get(ns, i, &a);
		if (name_to_text(&a, text, sizeof(text)) < 0) {
			fprintf(stderr, "bench_fib: name_to_text failed on name %" PRIu64 "\n", i);
			return -1;
		}
		/* Uppercase it: the parser must fold case back. */
		for (char *c = text; *c; c++)
			if (*c >= 'a' && *c <= 'z' && (i & 1))
				*c = (char)(*c - 'a' + 'A');
		int rc = name_from_text(&b, text, strlen(text));
		if (rc != NAME_OK || !name_equal(&a, &b)) {
			fprintf(stderr, "bench_fib: name %" PRIu64 " (%s) is not canonical: %s\n",
				i, text, rc != NAME_OK ? name_strerror(rc) : "differs");
			return -1;
		}
	}
	return 0;
}

/* ---- the route sets ---------------------------------------------------------- */

struct set {
	unsigned count;
	struct route routes[2];
};

static void make_sets(struct set *sets)
{
	memset(sets, 0, sizeof(struct set) * NSETS);
	for (unsigned s = 0; s < NSETS; s++) {
		sets[s].count = 1 + (s & 1);
		for (unsigned k = 0; k < sets[s].count; k++) {
			struct route *rt = &sets[s].routes[k];
			rt->kind = ROUTE_SERVER;
			rt->family = AF_INET;
			rt->port = 0;
			rt->load_ms = 0;
			rt->addr[0] = 10;
			rt->addr[1] = (uint8_t)(s >> 8);
			rt->addr[2] = (uint8_t)s;
			rt->addr[3] = (uint8_t)(1 + k);
		}
	}
}

static bool route_same(const struct route *a, const struct route *b)
{
	return a->kind == b->kind && a->family == b->family &&
	       memcmp(a->addr, b->addr, a->family == AF_INET ? 4 : 16) == 0;
}

/* The routeset holds exactly the set's routes (in any order). */
static bool routeset_matches(const struct routeset *rs, const struct set *set)
{
	if (!rs || rs->has_redirect || rs->count != set->count)
		return false;
	for (unsigned k = 0; k < set->count; k++) {
		bool found = false;
		for (unsigned j = 0; j < rs->count; j++)
			if (route_same(&rs->routes[j], &set->routes[k]))
				found = true;
		if (!found)
			return false;
	}
	return true;
}

/* ---- timed passes ---------------------------------------------------------------- */

struct samples {
	double *v;
	size_t n;
};

static uint64_t fib_pass(const struct fib *fib, const struct name *q, const struct routeset **expect,
			 uint64_t nq, unsigned batch, struct samples *out, double *pass_median)
{
	uint64_t bad = 0;
	size_t first = out->n;
	for (uint64_t b = 0; b + batch <= nq; b += batch) {
		struct fib_result res;
		uint64_t t0 = now_ns();
		for (uint64_t k = b; k < b + batch; k++) {
			if (!fib_lookup_longest_suffix(fib, &q[k], &res) || res.sets[0] != expect[k])
				bad++;
		}
		uint64_t t1 = now_ns();
		out->v[out->n++] = (double)(t1 - t0) / batch;
		rcu_quiescent_state();
	}
	size_t cnt = out->n - first;
	double *tmp = malloc(cnt * sizeof(double));
	memcpy(tmp, out->v + first, cnt * sizeof(double));
	*pass_median = quantile(tmp, cnt, 0.5);
	free(tmp);
	return bad;
}

static uint64_t base_pass(const struct baseline_table *bt, const struct name *q, const uint32_t *expect,
			  uint64_t nq, unsigned batch, struct samples *out, double *pass_median)
{
	uint64_t bad = 0;
	size_t first = out->n;
	for (uint64_t b = 0; b + batch <= nq; b += batch) {
		uint32_t v;
		uint64_t t0 = now_ns();
		for (uint64_t k = b; k < b + batch; k++) {
			if (!baseline_lookup(bt, q[k].wire, q[k].len, &v) || v != expect[k])
				bad++;
		}
		uint64_t t1 = now_ns();
		out->v[out->n++] = (double)(t1 - t0) / batch;
		rcu_quiescent_state();
	}
	size_t cnt = out->n - first;
	double *tmp = malloc(cnt * sizeof(double));
	memcpy(tmp, out->v + first, cnt * sizeof(double));
	*pass_median = quantile(tmp, cnt, 0.5);
	free(tmp);
	return bad;
}

/* ---- aggregates (--aggregated) ------------------------------------------------ */

/*
 * The paper's setup (section 4.1, Figure 5): every name is a member of an
 * aggregate of agg_size names, aggregate a routed by set a % NSETS.  Beside
 * the lookups, the run measures what a router does to aggregates: one
 * aggregate's route change seen by a reader thread, a new aggregate of
 * `big` members loaded, 1% diffs applied to it, and aggregates deleted.
 */

static struct name agg_name(uint32_t a)
{
	char text[32];
	struct name n;
	snprintf(text, sizeof(text), "a%u.agg.bench", a);
	if (name_from_text(&n, text, strlen(text)) != NAME_OK) {
		fprintf(stderr, "bench_fib: bad aggregate name %s\n", text);
		exit(1);
	}
	return n;
}

static uint32_t agg_create(struct fib *fib, uint32_t a, const struct set *s)
{
	struct name an = agg_name(a);
	uint32_t id;
	int rc = fib_aggregate_create(fib, &an, &id);
	if (rc == FIB_OK && s)
		rc = fib_aggregate_set_routes(fib, id, s->routes, s->count);
	if (rc != FIB_OK) {
		fprintf(stderr, "bench_fib: aggregate %u: %s\n", a, fib_strerror(rc));
		exit(1);
	}
	return id;
}

static void member_add(struct fib *fib, uint32_t id, const struct nameset *ns, uint64_t i)
{
	struct name n;
	name_get(ns, i, &n);
	int rc = fib_aggregate_add_member(fib, id, &n);
	if (rc != FIB_OK) {
		fprintf(stderr, "bench_fib: add member %" PRIu64 ": %s\n", i, fib_strerror(rc));
		exit(1);
	}
}

static void member_remove(struct fib *fib, uint32_t id, const struct nameset *ns, uint64_t i)
{
	struct name n;
	name_get(ns, i, &n);
	int rc = fib_aggregate_remove_member(fib, id, &n);
	if (rc != FIB_OK) {
		fprintf(stderr, "bench_fib: remove member %" PRIu64 ": %s\n", i, fib_strerror(rc));
		exit(1);
	}
}

/* The routes of change number g: 11.<g, 24 bits>; 0 for any other set. */
static struct route change_route(uint32_t g)
{
	struct route r;
	memset(&r, 0, sizeof(r));
	r.kind = ROUTE_SERVER;
	r.family = AF_INET;
	r.addr[0] = 11;
	r.addr[1] = (uint8_t)(g >> 16);
	r.addr[2] = (uint8_t)(g >> 8);
	r.addr[3] = (uint8_t)g;
	return r;
}

static uint32_t change_of(const struct fib_result *res)
{
	if (res->nsets == 0 || res->sets[0]->count == 0)
		return UINT32_MAX;      /* no routes: never right */
	const uint8_t *a = res->sets[0]->routes[0].addr;
	return a[0] != 11 ? 0 : (uint32_t)a[1] << 16 | (uint32_t)a[2] << 8 | a[3];
}

/*
 * The reader cycles through all the aggregate's members.  It notes when a
 * lookup first shows change g, and when every member in turn has shown g
 * (or later) since; a member showing an older change after that is stale.
 */
/*
 * On a shared machine the reader is often not running when a change is
 * made, and what is measured is the scheduler.  Both threads ask for a
 * better nice value for the few seconds of the changes (root only; the
 * run says whether they got it).
 */
#define CHANGE_NICE (-10)

static bool raise_priority(void)
{
	return setpriority(PRIO_PROCESS, (id_t)gettid(), CHANGE_NICE) == 0;
}

struct change_reader {
	const struct fib *fib;
	const struct name *q;
	uint32_t nq;
	int cpu;
	bool raised;                    /* runs at CHANGE_NICE */
	uint64_t stale, lookups;        /* written when the reader stops */
	/* the writer polls these: a line of their own, written once a change */
	uint32_t gen_first __attribute__((aligned(64)));   /* atomic; published after the times */
	uint32_t gen_all;
	uint64_t t_first, t_all;
	uint32_t stop __attribute__((aligned(64)));        /* atomic */
};

static void *change_reader_run(void *arg)
{
	struct change_reader *r = arg;
	uint32_t cur = 0, run = 0, k = 0;
	uint64_t stale = 0, lookups = 0;

	rcu_register_thread();
	r->cpu = sched_getcpu();
	r->raised = raise_priority();
	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		struct fib_result res;
		fib_lookup_longest_suffix(r->fib, &r->q[k], &res);
		uint32_t g = change_of(&res);
		if (g != cur) {
			if (g > cur && g != UINT32_MAX) {
				cur = g;
				run = 0;
				r->t_first = now_ns();
				__atomic_store_n(&r->gen_first, cur, __ATOMIC_RELEASE);
			} else {
				stale++;
				run = 0;
			}
		}
		if (cur > __atomic_load_n(&r->gen_all, __ATOMIC_RELAXED) && ++run == r->nq) {
			r->t_all = now_ns();
			__atomic_store_n(&r->gen_all, cur, __ATOMIC_RELEASE);
		}
		lookups++;
		if (++k == r->nq)
			k = 0;
		if ((k & 63) == 0)
			rcu_quiescent_state();
	}
	r->stale = stale;
	r->lookups = lookups;
	rcu_unregister_thread();
	return NULL;
}

struct change_result {
	double visible_us_p50, visible_us_p99, visible_us_max;
	double all_us_p50, all_us_p99, all_us_max;
	double write_ns_p50, write_ns_max;
	double write_ns_alone;          /* mean of back-to-back changes, no reader */
	uint64_t stale, timeouts;
	int reader_cpu, writer_cpu;
	bool raised;
};

/* Aggregate id (members ns[first, first + count)) changes its routes `changes` times. */
static void measure_changes(struct fib *fib, uint32_t id, const struct nameset *ns, uint64_t first,
			    uint32_t count, unsigned changes, struct rng *rng, struct change_result *out)
{
	struct change_reader r;
	memset(&r, 0, sizeof(r));
	memset(out, 0, sizeof(*out));
	struct name *q = malloc((size_t)count * sizeof(*q));
	for (uint32_t k = 0; k < count; k++) {
		struct name n;
		name_get(ns, first + k, &n);
		q[k].len = (uint8_t)(n.len + 4);
		memcpy(q[k].wire, "\003www", 4);
		memcpy(q[k].wire + 4, n.wire, n.len);
	}
	for (uint32_t k = count; k > 1; k--) {     /* random order */
		uint32_t j = rng_below(rng, k);
		struct name t = q[k - 1];
		q[k - 1] = q[j];
		q[j] = t;
	}
	r.fib = fib;
	r.q = q;
	r.nq = count;

	/* reader and writer on different CPUs when there are two */
	int old_nice = getpriority(PRIO_PROCESS, (id_t)gettid());
	bool writer_raised = raise_priority();
	out->writer_cpu = sched_getcpu();
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	out->reader_cpu = ncpu > 1 ? (int)((out->writer_cpu + 1) % ncpu) : -1;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	if (out->reader_cpu >= 0) {
		cpu_set_t cs;
		CPU_ZERO(&cs);
		CPU_SET(out->reader_cpu, &cs);
		pthread_attr_setaffinity_np(&attr, sizeof(cs), &cs);
	}
	pthread_t th;
	if (pthread_create(&th, &attr, change_reader_run, &r) != 0) {
		fprintf(stderr, "bench_fib: cannot start the reader thread\n");
		exit(1);
	}
	pthread_attr_destroy(&attr);

	/* the reader settles first (measured: changes in its first ~100 ms took 5-10x longer to show) */
	rcu_thread_offline();
	usleep(200000);
	rcu_thread_online();
	double *vis = malloc(changes * sizeof(double)), *all = malloc(changes * sizeof(double));
	double *wr = malloc(changes * sizeof(double));
	unsigned done = 0;
	for (uint32_t g = 1; g <= changes; g++) {
		struct route rt = change_route(g);
		uint64_t t0 = now_ns();
		int rc = fib_aggregate_set_routes(fib, id, &rt, 1);
		uint64_t t1 = now_ns();
		if (rc != FIB_OK) {
			fprintf(stderr, "bench_fib: fib_aggregate_set_routes: %s\n", fib_strerror(rc));
			exit(1);
		}
		if (getenv("NOCOMMIT") == NULL) fib_commit(fib);
		/* wait for the reader to have seen every member change; keep RCU moving */
		uint64_t limit = t1 + 2000000000ull;
		while (__atomic_load_n(&r.gen_all, __ATOMIC_ACQUIRE) < g && now_ns() < limit)
			rcu_quiescent_state();
		if (__atomic_load_n(&r.gen_all, __ATOMIC_ACQUIRE) < g) {
			out->timeouts++;
			continue;
		}
		uint64_t tf = r.t_first, ta = r.t_all;
		vis[done] = (double)((int64_t)(tf - t0)) / 1e3;
		all[done] = (double)((int64_t)(ta - t0)) / 1e3;
		wr[done] = (double)(t1 - t0);
		done++;
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELAXED);
	rcu_thread_offline();
	pthread_join(th, NULL);
	rcu_thread_online();
	out->stale = r.stale;
	out->reader_cpu = r.cpu;
	out->raised = writer_raised && r.raised;

	/* the writer's own cost: changes back to back, one fib_commit() at the end */
	enum { ALONE = 10000 };
	uint64_t a0 = now_ns();
	for (uint32_t g = 0; g < ALONE; g++) {
		struct route rt = change_route(changes + 1 + (g & 1));
		if (fib_aggregate_set_routes(fib, id, &rt, 1) != FIB_OK)
			exit(1);
	}
	fib_commit(fib);
	out->write_ns_alone = (double)(now_ns() - a0) / ALONE;
	rcu_quiescent_state();
	setpriority(PRIO_PROCESS, (id_t)gettid(), old_nice);
	out->visible_us_p50 = quantile(vis, done, 0.5);
	out->visible_us_p99 = quantile(vis, done, 0.99);
	out->visible_us_max = quantile(vis, done, 1.0);
	out->all_us_p50 = quantile(all, done, 0.5);
	out->all_us_p99 = quantile(all, done, 0.99);
	out->all_us_max = quantile(all, done, 1.0);
	out->write_ns_p50 = quantile(wr, done, 0.5);
	out->write_ns_max = quantile(wr, done, 1.0);
	printf("aggregate route change, %u changes of one aggregate of %u members (writer CPU %d, reader CPU %d, "
	       "nice %s):\n"
	       "  writer fib_aggregate_set_routes median %.0f ns, max %.0f ns; back to back %.0f ns\n"
	       "  reader sees it: median %.2f us, p99 %.2f us, max %.2f us after the write began\n"
	       "  reader has seen it on every member: median %.1f us, p99 %.1f us, max %.1f us"
	       " (%" PRIu64 " lookups; stale answers %" PRIu64 ", timeouts %" PRIu64 ")\n",
	       done, count, out->writer_cpu, out->reader_cpu, out->raised ? "-10" : "unchanged", out->write_ns_p50, out->write_ns_max, out->write_ns_alone,
	       out->visible_us_p50, out->visible_us_p99, out->visible_us_max,
	       out->all_us_p50, out->all_us_p99, out->all_us_max, r.lookups, out->stale, out->timeouts);
	free(vis);
	free(all);
	free(wr);
	free(q);
}

/* A member's lookup: the aggregate's set (want != NULL) or no match at all. */
static bool member_check(const struct fib *fib, const struct nameset *ns, uint64_t i, const struct set *want)
{
	struct name n;
	struct fib_result res;
	name_get(ns, i, &n);
	bool found = fib_lookup_longest_suffix(fib, &n, &res);
	if (!want)
		return !found;
	return found && res.nsets == 1 && routeset_matches(res.sets[0], want);
}

struct churn_result {
	double load1_s, load_s, bytes_per_member, delete1_ms;
	double diff1_ms_p50, diff1_ms_max, diff_ms_p50, diff_ms_max;
	double diff_add_ns, diff_remove_ns, diff1_add_ns, diff1_remove_ns;
	double delete_ms, big_delete_ms;
	uint64_t mismatches;
};

#define CHUNK 10000     /* names handed to a batch call at once */

/* ns[first, first + count) with the batch calls, CHUNK at a time */
static void members_batch(struct fib *fib, uint32_t id, const struct nameset *ns, uint64_t first, uint64_t count,
			  bool add, struct name *buf)
{
	for (uint64_t i = 0; i < count; i += CHUNK) {
		size_t m = count - i < CHUNK ? (size_t)(count - i) : CHUNK;
		for (size_t k = 0; k < m; k++)
			name_get(ns, first + i + k, &buf[k]);
		int rc = add ? fib_aggregate_add_members(fib, id, buf, m, NULL)
			     : fib_aggregate_remove_members(fib, id, buf, m, NULL);
		if (rc != FIB_OK) {
			fprintf(stderr, "bench_fib: batch of members: %s\n", fib_strerror(rc));
			exit(1);
		}
		rcu_quiescent_state();
	}
}

/* ns[first, first + count) one call a member */
static void members_single(struct fib *fib, uint32_t id, const struct nameset *ns, uint64_t first, uint64_t count,
			   bool add)
{
	for (uint64_t i = first; i < first + count; i++) {
		if (add)
			member_add(fib, id, ns, i);
		else
			member_remove(fib, id, ns, i);
		if ((i & 1023) == 1023)
			rcu_quiescent_state();
	}
}

/*
 * Names ns[n, n + big) join a new aggregate one call a member, and the
 * aggregate is deleted; they join again with the batch calls, after
 * fib_reserve() for them (a router knows the size of a transfer it has
 * stored).  Then `diffs` times the oldest big/100 members leave and as
 * many new names join (removals first, as an IXFR lists them), alternately
 * one call a member and in batches; then one aggregate of the table and
 * the big one are deleted.  Timed around the calls, fib_commit() included.
 */
static void measure_churn(struct fib *fib, const struct nameset *ns, uint64_t n, uint32_t big,
			  unsigned diffs, uint32_t small_id, uint64_t small_first, uint32_t small_count,
			  const struct set *sets, struct churn_result *out)
{
	memset(out, 0, sizeof(*out));
	const struct set *bigset = &sets[7];
	uint32_t step = big / 100;
	struct name *buf = harness_alloc(CHUNK * sizeof(struct name));
	memset(buf, 0, CHUNK * sizeof(struct name));

	uint64_t rss0 = rss_bytes();
	uint64_t t0 = now_ns();
	uint32_t id = agg_create(fib, 1u << 20, bigset);
	members_single(fib, id, ns, n, big, true);
	fib_commit(fib);
	uint64_t t1 = now_ns();
	out->load1_s = (double)(t1 - t0) / 1e9;
	fib_barrier(fib);
	out->bytes_per_member = ((double)rss_bytes() - (double)rss0) / big;
	t1 = now_ns();
	if (fib_aggregate_delete(fib, id) != FIB_OK)
		exit(1);
	fib_commit(fib);
	out->delete1_ms = (double)(now_ns() - t1) / 1e6;
	fib_barrier(fib);

	t0 = now_ns();
	id = agg_create(fib, 1u << 20, bigset);
	struct fib_stats st;
	fib_get_stats(fib, &st);
	if (fib_reserve(fib, st.nodes + big) != FIB_OK)
		exit(1);
	members_batch(fib, id, ns, n, big, true, buf);
	fib_commit(fib);
	t1 = now_ns();
	out->load_s = (double)(t1 - t0) / 1e9;

	/* members are ns[lo, hi); even diffs one call a member, odd ones in batches */
	uint64_t lo = n, hi = n + big;
	double *dt[2] = { malloc((diffs + 1) * sizeof(double)), malloc((diffs + 1) * sizeof(double)) };
	uint64_t add_ns[2] = { 0, 0 }, remove_ns[2] = { 0, 0 };
	unsigned cnt[2] = { 0, 0 };
	for (unsigned d = 0; d < diffs; d++) {
		int b = d & 1;
		uint64_t a = now_ns();
		if (b)
			members_batch(fib, id, ns, lo, step, false, buf);
		else
			members_single(fib, id, ns, lo, step, false);
		uint64_t m = now_ns();
		if (b)
			members_batch(fib, id, ns, hi, step, true, buf);
		else
			members_single(fib, id, ns, hi, step, true);
		fib_commit(fib);
		uint64_t c = now_ns();
		rcu_quiescent_state();
		remove_ns[b] += m - a;
		add_ns[b] += c - m;
		dt[b][cnt[b]++] = (double)(c - a) / 1e6;
		lo += step;
		hi += step;
	}
	if (cnt[0]) {
		out->diff1_remove_ns = (double)remove_ns[0] / ((double)cnt[0] * step);
		out->diff1_add_ns = (double)add_ns[0] / ((double)cnt[0] * step);
		out->diff1_ms_p50 = quantile(dt[0], cnt[0], 0.5);
		out->diff1_ms_max = quantile(dt[0], cnt[0], 1.0);
	}
	if (cnt[1]) {
		out->diff_remove_ns = (double)remove_ns[1] / ((double)cnt[1] * step);
		out->diff_add_ns = (double)add_ns[1] / ((double)cnt[1] * step);
		out->diff_ms_p50 = quantile(dt[1], cnt[1], 0.5);
		out->diff_ms_max = quantile(dt[1], cnt[1], 1.0);
	}
	free(dt[0]);
	free(dt[1]);
	/* the members now, and those that left */
	for (uint64_t i = n; i < hi; i += 97)
		if (!member_check(fib, ns, i, i < lo ? NULL : bigset))
			out->mismatches++;
	rcu_quiescent_state();

	uint64_t d0 = now_ns();
	int rc = fib_aggregate_delete(fib, small_id);
	fib_commit(fib);
	uint64_t d1 = now_ns();
	rc |= fib_aggregate_delete(fib, id);
	fib_commit(fib);
	uint64_t d2 = now_ns();
	if (rc != FIB_OK) {
		fprintf(stderr, "bench_fib: fib_aggregate_delete failed\n");
		exit(1);
	}
	out->delete_ms = (double)(d1 - d0) / 1e6;
	out->big_delete_ms = (double)(d2 - d1) / 1e6;
	for (uint64_t i = small_first; i < small_first + small_count; i += 7)
		if (!member_check(fib, ns, i, NULL))
			out->mismatches++;
	for (uint64_t i = lo; i < hi; i += 97)
		if (!member_check(fib, ns, i, NULL))
			out->mismatches++;
	rcu_quiescent_state();
	harness_free(buf, CHUNK * sizeof(struct name));

	printf("aggregate of %u new members: one call a member %.3f s (%.0f ns/member), RSS %+.1f bytes/member, "
	       "deleted in %.1f ms;\n  fib_reserve + batches of %u: %.3f s (%.0f ns/member)\n",
	       big, out->load1_s, out->load1_s * 1e9 / big, out->bytes_per_member, out->delete1_ms, CHUNK,
	       out->load_s, out->load_s * 1e9 / big);
	printf("diffs of -%u +%u members, one call a member: median %.2f ms, max %.2f ms (%.0f ns/remove, %.0f ns/add)\n",
	       step, step, out->diff1_ms_p50, out->diff1_ms_max, out->diff1_remove_ns, out->diff1_add_ns);
	printf("diffs of -%u +%u members, batches:           median %.2f ms, max %.2f ms (%.0f ns/remove, %.0f ns/add)\n",
	       step, step, out->diff_ms_p50, out->diff_ms_max, out->diff_remove_ns, out->diff_add_ns);
	printf("fib_aggregate_delete: %u members %.2f ms, %u members %.2f ms; mismatches %" PRIu64 "\n",
	       small_count, out->delete_ms, big, out->big_delete_ms, out->mismatches);
}

/* ---- main ---------------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench_fib [--names N] [--seed S] [--queries Q] [--passes P] [--batch B] [--reserve]\n"
		"                 [--aggregated [--agg-size A] [--changes C] [--big M] [--diffs D]]\n"
		"  --names N    distinct names in the table (default 5000000)\n"
		"  --seed S     PRNG seed (default 1)\n"
		"  --queries Q  query names per pass, at most N (default 1000000)\n"
		"  --passes P   timed passes per table, alternating (default 6)\n"
		"  --batch B    lookups per timed batch (default 1000)\n"
		"  --reserve    size both tables for N names up front (fib_reserve,\n"
		"               baseline_create(N)) instead of letting them grow\n"
		"  --aggregated every name a member of an aggregate; then aggregate changes\n"
		"  --agg-size A members per aggregate (default 15000)\n"
		"  --changes C  route changes of one aggregate seen by a reader (default 1000)\n"
		"  --big M      new names loaded into one more aggregate (default 1000000)\n"
		"  --diffs D    diffs of M/100 removals and M/100 additions (default 20)\n");
}

static uint64_t parse_u64(const char *opt, const char *s)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s || *end) {
		fprintf(stderr, "bench_fib: bad number for %s: %s\n", opt, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	struct opts o = { .names = 5000000, .seed = 1, .queries = 1000000, .passes = 6, .batch = 1000,
			  .agg_size = 15000, .big = 1000000, .diffs = 20, .changes = 1000 };
	static const struct option longopts[] = {
		{ "names", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 's' },
		{ "queries", required_argument, NULL, 'q' },
		{ "passes", required_argument, NULL, 'p' },
		{ "batch", required_argument, NULL, 'b' },
		{ "reserve", no_argument, NULL, 'R' },
		{ "aggregated", no_argument, NULL, 'A' },
		{ "agg-size", required_argument, NULL, 'S' },
		{ "big", required_argument, NULL, 'B' },
		{ "diffs", required_argument, NULL, 'D' },
		{ "changes", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "n:s:q:p:b:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'n': o.names = parse_u64("--names", optarg); break;
		case 's': o.seed = parse_u64("--seed", optarg); break;
		case 'q': o.queries = parse_u64("--queries", optarg); break;
		case 'p': o.passes = (unsigned)parse_u64("--passes", optarg); break;
		case 'b': o.batch = (unsigned)parse_u64("--batch", optarg); break;
		case 'R': o.reserve = true; break;
		case 'A': o.aggregated = true; break;
		case 'S': o.agg_size = (uint32_t)parse_u64("--agg-size", optarg); break;
		case 'B': o.big = (uint32_t)parse_u64("--big", optarg); break;
		case 'D': o.diffs = (unsigned)parse_u64("--diffs", optarg); break;
		case 'C': o.changes = (unsigned)parse_u64("--changes", optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "bench_fib: unexpected argument: %s\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (o.names == 0 || o.names > 100000000 || o.passes == 0 || o.batch == 0) {
		fprintf(stderr, "bench_fib: need 1 <= --names <= 100000000, --passes >= 1, --batch >= 1\n");
		return 2;
	}
	if (o.aggregated && (o.agg_size == 0 || o.agg_size > o.names || o.big < 100 || o.big > 10000000 ||
			     o.changes == 0 || o.changes > 1000000)) {
		fprintf(stderr, "bench_fib: need 1 <= --agg-size <= --names, 100 <= --big <= 10000000, "
			"1 <= --changes <= 1000000\n");
		return 2;
	}
	if (o.queries == 0 || o.queries > o.names)
		o.queries = o.names;
	if (o.batch > o.queries)
		o.batch = (unsigned)o.queries;
	setvbuf(stdout, NULL, _IOLBF, 0);

	struct rng rng;
	rng_seed(&rng, o.seed);

	printf("bench fib: names=%" PRIu64 " seed=%" PRIu64 " queries=%" PRIu64 " passes=%u batch=%u%s\n",
	       o.names, o.seed, o.queries, o.passes, o.batch,
	       o.reserve ? " (tables sized for N up front)" : " (tables grow as loaded)");
	if (o.aggregated)
		printf("aggregated: members of aggregates of %u names; then %u route changes, "
		       "an aggregate of %u new names, %u diffs of 1%%\n", o.agg_size, o.changes, o.big, o.diffs);

	print_machine();

	/* Names and route sets. */
	/* with --aggregated, names past the table's n join the big aggregate later */
	struct nameset ns;
	uint64_t n = o.names;
	gen_names(&ns, n + (o.aggregated ? o.big + (uint64_t)o.diffs * (o.big / 100) : 0), &rng);
	if (check_canonical(&ns) < 0)
		return 1;
	struct set sets[NSETS];
	make_sets(sets);

	/* The FIB.  This thread is a QSBR thread from here on: writers hand
	 * freed memory to call_rcu(), which wants the caller online, and announce
	 * quiescent states between batches of updates.  fib_barrier() waits until
	 * everything freed during the build is reclaimed, before RSS is read. */
	rcu_register_thread();
	uint64_t rss0 = rss_bytes();
	uint64_t t0 = now_ns();
	struct fib *fib = fib_create();
	if (!fib) {
		fprintf(stderr, "bench_fib: fib_create failed\n");
		return 1;
	}
	if (o.reserve && fib_reserve(fib, n) != FIB_OK) {
		fprintf(stderr, "bench_fib: fib_reserve failed\n");
		return 1;
	}
	uint32_t naggs = o.aggregated ? (uint32_t)((n + o.agg_size - 1) / o.agg_size) : 0;
	uint32_t *agg_ids = o.aggregated ? malloc(naggs * sizeof(uint32_t)) : NULL;
	for (uint32_t a = 0; a < naggs; a++)
		agg_ids[a] = agg_create(fib, a, &sets[a % NSETS]);
	for (uint64_t i = 0; i < n; i++) {
		if (o.aggregated) {
			member_add(fib, agg_ids[i / o.agg_size], &ns, i);
		} else {
			struct name nm;
			name_get(&ns, i, &nm);
			const struct set *s = &sets[i % NSETS];
			int rc = fib_set_routes(fib, &nm, s->routes, s->count);
			if (rc != FIB_OK) {
				fprintf(stderr, "bench_fib: fib_set_routes(name %" PRIu64 "): %s\n", i,
					fib_strerror(rc));
				return 1;
			}
		}
		if ((i & 1023) == 1023)
			rcu_quiescent_state();
	}
	uint64_t t1 = now_ns();
	fib_barrier(fib);
	uint64_t t2 = now_ns();
	uint64_t rss1 = rss_bytes();
	double load_s = (double)(t2 - t0) / 1e9;
	double bytes_per_name = (double)(rss1 - rss0) / (double)n;

	struct fib_stats fst;
	memset(&fst, 0, sizeof(fst));
	fib_get_stats(fib, &fst);
	printf("fib: loaded in %.3f s (inserts %.3f s, fib_barrier %.3f s), %.0f ns/insert\n",
	       load_s, (double)(t1 - t0) / 1e9, (double)(t2 - t1) / 1e9, (double)(t1 - t0) / (double)n);
	printf("fib: RSS +%.1f MiB = %.1f bytes/name; nodes %" PRIu64 ", entries %" PRIu64
	       ", routesets %" PRIu64 ", table slots %" PRIu64 ", node bytes %" PRIu64 "\n",
	       (double)(rss1 - rss0) / 1048576.0, bytes_per_name, fst.nodes, fst.entries,
	       fst.routesets, fst.table_slots, fst.node_bytes);

	/* The baseline, over the same names; value = name index. */
	uint64_t t3 = now_ns();
	struct baseline_table *bt = baseline_create(o.reserve ? n : 0);
	if (!bt) {
		fprintf(stderr, "bench_fib: baseline_create failed\n");
		return 1;
	}
	for (uint64_t i = 0; i < n; i++) {
		if (baseline_insert(bt, ns.wire + ns.off[i], ns.len[i], (uint32_t)i) != 1) {
			fprintf(stderr, "bench_fib: baseline_insert(name %" PRIu64 ") failed\n", i);
			return 1;
		}
	}
	uint64_t t4 = now_ns();
	uint64_t rss2 = rss_bytes();
	double base_load_s = (double)(t4 - t3) / 1e9;
	double base_bytes_per_name = (double)(rss2 - rss1) / (double)n;
	struct baseline_stats bst;
	baseline_get_stats(bt, &bst);
	printf("baseline: loaded in %.3f s; RSS +%.1f MiB = %.1f bytes/name; %" PRIu64 " slots (load %.3f, %.1f MiB), "
	       "arena %.1f MiB\n",
	       base_load_s, (double)(rss2 - rss1) / 1048576.0, base_bytes_per_name, bst.capacity,
	       (double)bst.count / (double)bst.capacity, (double)bst.slot_bytes / 1048576.0,
	       (double)bst.arena_bytes / 1048576.0);

	printf("transparent huge pages: %.1f MiB of %.1f MiB RSS\n",
	       (double)thp_bytes() / 1048576.0, (double)rss2 / 1048576.0);

	/* Queries: random names of the table, in random order; the FIB gets
	 * www.<name>, the baseline <name>. */
	uint64_t nq = o.queries;
	size_t qmap = (size_t)nq * sizeof(struct name);
	struct name *qf = harness_alloc(qmap);
	struct name *qb = harness_alloc(qmap);
	uint32_t *pick = harness_alloc((size_t)nq * sizeof(uint32_t));
	const struct routeset **fexp = harness_alloc((size_t)nq * sizeof(*fexp));
	for (uint64_t k = 0; k < nq; k++) {
		uint32_t i = rng_below(&rng, (uint32_t)n);
		pick[k] = i;
		name_get(&ns, i, &qb[k]);
		qf[k].len = (uint8_t)(qb[k].len + 4);
		memcpy(qf[k].wire, "\003www", 4);
		memcpy(qf[k].wire + 4, qb[k].wire, qb[k].len);
	}

	/* Full verification pass (also warms up both tables). */
	uint64_t mismatches = 0;
	for (uint64_t k = 0; k < nq; k++) {
		struct fib_result res;
		const struct set *s = &sets[(o.aggregated ? pick[k] / o.agg_size : pick[k]) % NSETS];
		if (fib_lookup_longest_suffix(fib, &qf[k], &res) && res.suffix_offset == 4 &&
		    res.suffix_labels == 2 && res.nsets == 1 && routeset_matches(res.sets[0], s)) {
			fexp[k] = res.sets[0];
		} else {
			fexp[k] = NULL;         /* counts again in every timed pass */
			if (mismatches < 5) {
				char text[NAME_MAX_TEXT];
				name_to_text(&qf[k], text, sizeof(text));
				fprintf(stderr, "bench_fib: fib lookup of %s: wrong result\n", text);
			}
			mismatches++;
		}
		uint32_t v;
		if (!baseline_lookup(bt, qb[k].wire, qb[k].len, &v) || v != pick[k]) {
			if (mismatches < 5)
				fprintf(stderr, "bench_fib: baseline lookup of name %u: wrong result\n", pick[k]);
			mismatches++;
		}
		if ((k & 1023) == 0)
			rcu_quiescent_state();
	}
	/* Names not in the table must not match (spot check). */
	for (unsigned k = 0; k < 1000; k++) {
		struct name absent;
		struct fib_result res;
		uint32_t v;
		absent.len = 12;
		memcpy(absent.wire, "\006absent\003xyz\000", 12);   /* .xyz is never generated */
		absent.wire[1] = (uint8_t)ends[k % 36];
		absent.wire[2] = (uint8_t)ends[(k / 36) % 36];
		if (fib_lookup_longest_suffix(fib, &absent, &res) || baseline_lookup(bt, absent.wire, absent.len, &v))
			mismatches++;
	}
	rcu_quiescent_state();

	/* Timed passes, alternating: every pass of one table follows a pass of
	 * the other, so neither finds the caches warm with its own data (ABBA
	 * order would, at sizes that partly fit in cache). */
	size_t per_pass = nq / o.batch;
	struct samples sf = { malloc(sizeof(double) * per_pass * o.passes), 0 };
	struct samples sb = { malloc(sizeof(double) * per_pass * o.passes), 0 };
	for (unsigned p = 0; p < o.passes; p++) {
		double mf, mb;
		mismatches += fib_pass(fib, qf, fexp, nq, o.batch, &sf, &mf);
		mismatches += base_pass(bt, qb, pick, nq, o.batch, &sb, &mb);
		printf("pass %u: fib %.1f ns/lookup, baseline %.1f ns/lookup (medians of %zu batches of %u)\n",
		       p + 1, mf, mb, per_pass, o.batch);
	}
	double lookup_ns = quantile(sf.v, sf.n, 0.5);
	double lookup_p90 = quantile(sf.v, sf.n, 0.9);
	double base_ns = quantile(sb.v, sb.n, 0.5);
	double base_p90 = quantile(sb.v, sb.n, 0.9);

	printf("fib longest-suffix lookup of www.<name>: median %.1f ns, p90 %.1f ns\n", lookup_ns, lookup_p90);
	printf("baseline exact lookup of <name>:        median %.1f ns, p90 %.1f ns\n", base_ns, base_p90);
	printf("mismatches: %" PRIu64 "\n", mismatches);

	struct change_result ch;
	struct churn_result cr;
	if (o.aggregated) {
		/* aggregate 0 holds names [0, agg_size); aggregate 1 is deleted */
		measure_changes(fib, agg_ids[0], &ns, 0, o.agg_size, o.changes, &rng, &ch);
		measure_churn(fib, &ns, n, o.big, o.diffs, agg_ids[naggs > 1 ? 1 : 0],
			      naggs > 1 ? o.agg_size : 0, o.agg_size, sets, &cr);
		mismatches += ch.stale + ch.timeouts + cr.mismatches;
		printf("targets at 5000000 names in aggregates of 15000: lookup_ns <= baseline_exact_ns: %s; "
		       "bytes_per_name <= 40: %s; a change seen on every member within 1 ms: median %s, p99 %s, "
		       "max %s\n", lookup_ns <= base_ns ? "yes" : "NO", bytes_per_name <= 40 ? "yes" : "NO",
		       ch.all_us_p50 <= 1000 ? "yes" : "NO", ch.all_us_p99 <= 1000 ? "yes" : "NO",
		       ch.all_us_max <= 1000 ? "yes" : "NO");
	} else {
		printf("targets at 5000000 names: lookup_ns <= baseline_exact_ns: %s; bytes_per_name <= 48: %s; "
		       "load_s < 5: %s\n", lookup_ns <= base_ns ? "yes" : "NO", bytes_per_name <= 48 ? "yes" : "NO",
		       load_s < 5 ? "yes" : "NO");
	}

	free(sf.v);
	free(sb.v);
	harness_free(qf, qmap);
	harness_free(qb, qmap);
	harness_free(pick, (size_t)nq * sizeof(uint32_t));
	harness_free(fexp, (size_t)nq * sizeof(*fexp));
	baseline_destroy(bt);
	fib_destroy(fib);
	rcu_unregister_thread();
	harness_free(ns.wire, ns.wire_map);
	harness_free(ns.off, ns.off_map);
	harness_free(ns.len, ns.len_map);
	free(agg_ids);

	char extra[1024] = "";
	if (o.aggregated)
		snprintf(extra, sizeof(extra),
			 "\"agg_size\": %u, \"aggregates\": %u, "
			 "\"change_write_ns_p50\": %.0f, \"change_write_ns_max\": %.0f, \"change_write_ns_alone\": %.0f, "
			 "\"change_visible_us_p50\": %.2f, \"change_visible_us_p99\": %.2f, "
			 "\"change_visible_us_max\": %.2f, \"change_all_members_us_p50\": %.1f, "
			 "\"change_all_members_us_p99\": %.1f, \"change_all_members_us_max\": %.1f, "
			 "\"changes\": %u, \"big\": %u, \"big_load_single_s\": %.3f, \"big_delete_ms\": %.1f, "
			 "\"big_load_batch_s\": %.3f, \"big_bytes_per_member\": %.1f, "
			 "\"diff_1pct_single_ms_p50\": %.2f, \"diff_1pct_single_ms_max\": %.2f, "
			 "\"diff_1pct_batch_ms_p50\": %.2f, \"diff_1pct_batch_ms_max\": %.2f, "
			 "\"diff_single_add_ns\": %.0f, \"diff_single_remove_ns\": %.0f, "
			 "\"diff_batch_add_ns\": %.0f, \"diff_batch_remove_ns\": %.0f, \"diffs\": %u, "
			 "\"delete_agg_ms\": %.2f, \"delete_big_after_diffs_ms\": %.1f, ",
			 o.agg_size, naggs, ch.write_ns_p50, ch.write_ns_max, ch.write_ns_alone, ch.visible_us_p50,
			 ch.visible_us_p99, ch.visible_us_max, ch.all_us_p50, ch.all_us_p99, ch.all_us_max,
			 o.changes, o.big, cr.load1_s, cr.delete1_ms, cr.load_s, cr.bytes_per_member,
			 cr.diff1_ms_p50, cr.diff1_ms_max, cr.diff_ms_p50, cr.diff_ms_max,
			 cr.diff1_add_ns, cr.diff1_remove_ns, cr.diff_add_ns, cr.diff_remove_ns, o.diffs,
			 cr.delete_ms, cr.big_delete_ms);
	printf("{\"names\": %" PRIu64 ", %s\"lookup_ns\": %.1f, \"baseline_exact_ns\": %.1f, "
	       "\"bytes_per_name\": %.1f, \"load_s\": %.3f, "
	       "\"baseline_bytes_per_name\": %.1f, \"baseline_load_s\": %.3f, "
	       "\"lookup_ns_p90\": %.1f, \"baseline_exact_ns_p90\": %.1f, "
	       "\"queries\": %" PRIu64 ", \"passes\": %u, \"batch\": %u, \"seed\": %" PRIu64 ", \"reserve\": %s, "
	       "\"mismatches\": %" PRIu64 "}\n",
	       n, extra, lookup_ns, base_ns, bytes_per_name, load_s, base_bytes_per_name, base_load_s,
	       lookup_p90, base_p90, nq, o.passes, o.batch, o.seed, o.reserve ? "true" : "false", mismatches);
	return mismatches ? 1 : 0;
}
