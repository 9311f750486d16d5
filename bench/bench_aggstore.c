/*
 * scripts/bench aggstore [--names N] [--versions V] [--dir DIR] [--seed S]
 *
 * The aggregate store (lib/agg/aggstore.c: a checksummed snapshot and an
 * append-only journal) beside the same job done with LMDB, in one run, on
 * the same names in the same directory's file system:
 *
 *   snapshot_s          the first version of N members written and synced
 *   diff_ms_p50/_max    one version of a 1% diff (N/100 removed, N/100
 *                       added) written and synced, over V versions
 *   open_s              reopening after V versions until the member set is
 *                       in memory (what a restart needs to route)
 *   snapshot_bytes_per_name, journal_bytes_per_name
 *                       on disk after V versions, per member
 *
 * LMDB keeps the members as keys of one database and the journal as a
 * second database of diff records keyed by version, trimmed to twice the
 * members' size like ours; each version is one write transaction, synced
 * at commit (LMDB's default).  Its byte counts are pages in use times the
 * page size.
 *
 * Names: random second-level names (label of 3-17 base-36 characters under
 * com, net or org).  Human-readable lines first; the last line is one JSON
 * object.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "aggstore.h"
#include "log.h"
#include "name.h"
#include "nameset.h"
#include "splitmix.h"

static uint64_t rng;

static uint64_t next_rand(void)
{
	return splitmix64(&rng);
}

static void random_name(struct name *n)
{
	static const char *const tlds[] = { "com", "com", "com", "com", "com", "com", "com", "com", "net", "org" };
	char text[64];
	uint64_t r = next_rand();
	unsigned len = 3 + (unsigned)(r % 15);
	for (unsigned i = 0; i < len; i++) {
		r = i % 8 == 7 ? next_rand() : r / 36;
		text[i] = "0123456789abcdefghijklmnopqrstuvwxyz"[r % 36];
	}
	int l = snprintf(text + len, sizeof(text) - len, ".%s", tlds[next_rand() % 10]);
	name_from_text(n, text, len + (unsigned)l);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The V diffs, drawn once: version v removes N/100 current members and adds N/100 new names. */
struct plan {
	struct nameset initial;
	struct namelist *dels, *adds;
};

static void make_plan(struct plan *p, uint64_t n, unsigned versions)
{
	nameset_init(&p->initial);
	while (p->initial.count < n) {
		struct name nm;
		random_name(&nm);
		nameset_add(&p->initial, nm.wire, nm.len);
	}
	struct nameset cur;
	nameset_init(&cur);
	nameset_copy(&cur, &p->initial);
	p->dels = calloc(versions, sizeof(*p->dels));
	p->adds = calloc(versions, sizeof(*p->adds));
	uint64_t k = n / 100 ? n / 100 : 1;
	for (unsigned v = 0; v < versions; v++) {
		namelist_init(&p->dels[v]);
		namelist_init(&p->adds[v]);
		/* removes: the members at k random positions of the current iteration order */
		struct namelist all;
		namelist_init(&all);
		nameset_to_list(&cur, &all);
		struct nameset chosen;
		nameset_init(&chosen);
		size_t *offs = malloc(all.count * sizeof(*offs));
		size_t pos = 0, i = 0;
		const uint8_t *w;
		uint8_t l;
		while (namelist_walk(all.buf, all.len, &pos, &w, &l))
			offs[i++] = (size_t)(w - 1 - all.buf);
		while (p->dels[v].count < k) {
			size_t o = offs[next_rand() % all.count];
			if (nameset_add(&chosen, all.buf + o + 1, all.buf[o]) == 1)
				namelist_add(&p->dels[v], all.buf + o + 1, all.buf[o]);
		}
		while (p->adds[v].count < k) {
			struct name nm;
			random_name(&nm);
			if (!nameset_contains(&cur, nm.wire, nm.len) && nameset_add(&chosen, nm.wire, nm.len) == 1)
				namelist_add(&p->adds[v], nm.wire, nm.len);
		}
		pos = 0;
		while (namelist_walk(p->dels[v].buf, p->dels[v].len, &pos, &w, &l))
			nameset_remove(&cur, w, l);
		pos = 0;
		while (namelist_walk(p->adds[v].buf, p->adds[v].len, &pos, &w, &l))
			nameset_add(&cur, w, l);
		free(offs);
		nameset_free(&chosen);
		namelist_free(&all);
	}
	nameset_free(&cur);
}

struct result {
	double snapshot_s, diff_p50_ms, diff_max_ms, open_s;
	double snap_bpn, jnl_bpn;
	uint32_t members;
};

static void die(const char *what, int rc)
{
	fprintf(stderr, "bench_aggstore: %s: %s\n", what, rc < 0 ? strerror(-rc) : mdb_strerror(rc));
	exit(1);
}

static void run_ours(const char *dir, struct plan *p, uint64_t n, unsigned versions, struct result *r)
{
	struct name agg;
	name_from_text(&agg, "bench.agg", 9);
	char err[512];
	struct aggstore *s;
	int rc = aggstore_open(&s, dir, &agg, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "bench_aggstore: %s\n", err);
		exit(1);
	}
	double t0 = now();
	if ((rc = aggstore_replace(s, 1, &p->initial)) < 0)
		die("aggstore_replace", rc);
	r->snapshot_s = now() - t0;
	double *ms = calloc(versions, sizeof(double));
	for (unsigned v = 0; v < versions; v++) {
		t0 = now();
		if ((rc = aggstore_apply(s, v + 1, v + 2, &p->dels[v], &p->adds[v])) < 0)
			die(aggstore_error(s), rc);
		ms[v] = (now() - t0) * 1e3;
	}
	struct aggstore_stats st;
	aggstore_stats(s, &st);
	aggstore_close(s);
	qsort(ms, versions, sizeof(double), cmp_double);
	r->diff_p50_ms = ms[versions / 2];
	r->diff_max_ms = ms[versions - 1];
	free(ms);
	r->snap_bpn = (double)st.snapshot_bytes / (double)n;
	r->jnl_bpn = (double)st.journal_bytes / (double)n;

	t0 = now();
	if ((rc = aggstore_open(&s, dir, &agg, err, sizeof(err))) < 0) {
		fprintf(stderr, "bench_aggstore: %s\n", err);
		exit(1);
	}
	r->open_s = now() - t0;
	r->members = aggstore_members(s)->count;
	aggstore_close(s);
}

static uint64_t db_bytes(MDB_txn *txn, MDB_dbi dbi, unsigned psize)
{
	MDB_stat st;
	mdb_stat(txn, dbi, &st);
	return (st.ms_branch_pages + st.ms_leaf_pages + st.ms_overflow_pages) * (uint64_t)psize;
}

static void run_lmdb(const char *dir, struct plan *p, uint64_t n, unsigned versions, struct result *r)
{
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi members, journal;
	int rc;
	if ((rc = mdb_env_create(&env)) || (rc = mdb_env_set_maxdbs(env, 2)) ||
	    (rc = mdb_env_set_mapsize(env, (size_t)64 << 30)) || (rc = mdb_env_open(env, dir, 0, 0600)))
		die("mdb_env_open", rc);
	double t0 = now();
	if ((rc = mdb_txn_begin(env, NULL, 0, &txn)) || (rc = mdb_dbi_open(txn, "members", MDB_CREATE, &members)) ||
	    (rc = mdb_dbi_open(txn, "journal", MDB_CREATE | MDB_INTEGERKEY, &journal)))
		die("mdb_dbi_open", rc);
	size_t pos = 0;
	const uint8_t *w;
	uint8_t l;
	while (nameset_next(&p->initial, &pos, &w, &l)) {
		MDB_val k = { l, (void *)w }, v = { 0, NULL };
		if ((rc = mdb_put(txn, members, &k, &v, 0)))
			die("mdb_put", rc);
	}
	if ((rc = mdb_txn_commit(txn)))
		die("mdb_txn_commit", rc);
	r->snapshot_s = now() - t0;

	double *ms = calloc(versions, sizeof(double));
	unsigned oldest = 0;
	uint64_t jbytes = 0, *rec_bytes = calloc(versions, sizeof(uint64_t));
	MDB_stat est;
	mdb_env_stat(env, &est);
	for (unsigned ver = 0; ver < versions; ver++) {
		t0 = now();
		if ((rc = mdb_txn_begin(env, NULL, 0, &txn)))
			die("mdb_txn_begin", rc);
		pos = 0;
		while (namelist_walk(p->dels[ver].buf, p->dels[ver].len, &pos, &w, &l)) {
			MDB_val k = { l, (void *)w };
			if ((rc = mdb_del(txn, members, &k, NULL)))
				die("mdb_del", rc);
		}
		pos = 0;
		while (namelist_walk(p->adds[ver].buf, p->adds[ver].len, &pos, &w, &l)) {
			MDB_val k = { l, (void *)w }, v = { 0, NULL };
			if ((rc = mdb_put(txn, members, &k, &v, MDB_NOOVERWRITE)))
				die("mdb_put", rc);
		}
		/* the diff record: the same bytes our journal holds */
		size_t len = 20 + p->dels[ver].len + p->adds[ver].len;
		unsigned key = ver + 2;
		MDB_val k = { sizeof(key), &key }, v = { len, NULL };
		if ((rc = mdb_put(txn, journal, &k, &v, MDB_RESERVE)))
			die("mdb_put journal", rc);
		memset(v.mv_data, 0, 20);
		memcpy((uint8_t *)v.mv_data + 20, p->dels[ver].buf, p->dels[ver].len);
		memcpy((uint8_t *)v.mv_data + 20 + p->dels[ver].len, p->adds[ver].buf, p->adds[ver].len);
		rec_bytes[ver] = len;
		jbytes += len;
		/* bounded like ours: the journal at most twice the members */
		uint64_t mbytes = db_bytes(txn, members, est.ms_psize);
		while (jbytes > 2 * mbytes && oldest < ver) {
			unsigned okey = oldest + 2;
			MDB_val ok = { sizeof(okey), &okey };
			if ((rc = mdb_del(txn, journal, &ok, NULL)))
				die("mdb_del journal", rc);
			jbytes -= rec_bytes[oldest++];
		}
		if ((rc = mdb_txn_commit(txn)))
			die("mdb_txn_commit", rc);
		ms[ver] = (now() - t0) * 1e3;
	}
	if ((rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn)))
		die("mdb_txn_begin", rc);
	r->snap_bpn = (double)db_bytes(txn, members, est.ms_psize) / (double)n;
	r->jnl_bpn = (double)db_bytes(txn, journal, est.ms_psize) / (double)n;
	mdb_txn_abort(txn);
	mdb_env_close(env);
	qsort(ms, versions, sizeof(double), cmp_double);
	r->diff_p50_ms = ms[versions / 2];
	r->diff_max_ms = ms[versions - 1];
	free(ms);
	free(rec_bytes);

	/* reopen: the members into memory, as a restart needs them */
	t0 = now();
	if ((rc = mdb_env_create(&env)) || (rc = mdb_env_set_maxdbs(env, 2)) ||
	    (rc = mdb_env_set_mapsize(env, (size_t)64 << 30)) || (rc = mdb_env_open(env, dir, 0, 0600)))
		die("mdb_env_open", rc);
	if ((rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn)) || (rc = mdb_dbi_open(txn, "members", 0, &members)))
		die("mdb reopen", rc);
	struct nameset set;
	nameset_init(&set);
	MDB_cursor *c;
	mdb_cursor_open(txn, members, &c);
	MDB_val k, v;
	while (mdb_cursor_get(c, &k, &v, MDB_NEXT) == 0)
		nameset_add(&set, k.mv_data, (uint8_t)k.mv_size);
	mdb_cursor_close(c);
	mdb_txn_abort(txn);
	r->open_s = now() - t0;
	r->members = set.count;
	nameset_free(&set);
	mdb_env_close(env);
}

int main(int argc, char **argv)
{
	uint64_t n = 1000000;
	unsigned versions = 100;
	const char *base = "build/bench/aggstore";
	rng = 1;
	static const struct option longopts[] = {
		{ "names", required_argument, NULL, 'n' },
		{ "versions", required_argument, NULL, 'v' },
		{ "dir", required_argument, NULL, 'd' },
		{ "seed", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'n': n = strtoull(optarg, NULL, 10); break;
		case 'v': versions = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'd': base = optarg; break;
		case 's': rng = strtoull(optarg, NULL, 10); break;
		default:
			fprintf(stderr, "usage: bench_aggstore [--names N] [--versions V] [--dir DIR] [--seed S]\n");
			return 2;
		}
	}
	if (n < 100 || versions < 1) {
		fprintf(stderr, "bench_aggstore: --names at least 100, --versions at least 1\n");
		return 2;
	}
	log_init("bench_aggstore", LOG_LVL_WARN, false);
	char ours[512], lmdb[512], cmd[2200];
	snprintf(ours, sizeof(ours), "%s/ours", base);
	snprintf(lmdb, sizeof(lmdb), "%s/lmdb", base);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s' && mkdir -p '%s' '%s'", ours, lmdb, ours, lmdb);
	if (system(cmd) != 0)
		return 1;

	struct plan p;
	printf("drawing %" PRIu64 " names and %u diffs of 1%%...\n", n, versions);
	fflush(stdout);
	make_plan(&p, n, versions);
	struct result o, m;
	run_ours(ours, &p, n, versions, &o);
	printf("ours: snapshot %.3f s, diff p50 %.2f ms max %.2f ms, open %.3f s, snapshot %.1f B/name, journal %.1f B/name\n",
	       o.snapshot_s, o.diff_p50_ms, o.diff_max_ms, o.open_s, o.snap_bpn, o.jnl_bpn);
	fflush(stdout);
	run_lmdb(lmdb, &p, n, versions, &m);
	printf("lmdb: snapshot %.3f s, diff p50 %.2f ms max %.2f ms, open %.3f s, members %.1f B/name, journal %.1f B/name\n",
	       m.snapshot_s, m.diff_p50_ms, m.diff_max_ms, m.open_s, m.snap_bpn, m.jnl_bpn);
	bool ok = o.members == m.members && o.members == p.initial.count;
	if (!ok)
		printf("member counts differ: ours %u, lmdb %u, expected %u\n", o.members, m.members, p.initial.count);
	printf("{\"names\": %" PRIu64 ", \"versions\": %u, "
	       "\"snapshot_s\": %.3f, \"diff_ms_p50\": %.2f, \"diff_ms_max\": %.2f, \"open_s\": %.3f, "
	       "\"snapshot_bytes_per_name\": %.1f, \"journal_bytes_per_name\": %.1f, "
	       "\"lmdb_snapshot_s\": %.3f, \"lmdb_diff_ms_p50\": %.2f, \"lmdb_diff_ms_max\": %.2f, \"lmdb_open_s\": %.3f, "
	       "\"lmdb_snapshot_bytes_per_name\": %.1f, \"lmdb_journal_bytes_per_name\": %.1f}\n",
	       n, versions, o.snapshot_s, o.diff_p50_ms, o.diff_max_ms, o.open_s, o.snap_bpn, o.jnl_bpn,
	       m.snapshot_s, m.diff_p50_ms, m.diff_max_ms, m.open_s, m.snap_bpn, m.jnl_bpn);
	return ok ? 0 : 1;
}
