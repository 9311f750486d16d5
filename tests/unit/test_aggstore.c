/*
 * The aggregate store: versions survive reopening, the journal reaches
 * back for IXFR, serials wrap, and a crash at any byte (truncation at every
 * offset, a flipped byte, kill -9 of a writer) opens at the last complete
 * version.
 *
 * The model: version k of the test aggregate holds members m(10k) ..
 * m(10k + 999); its serial is BASE + k, crossing 2^32.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "aggstore.h"
#include "log.h"

#define BASE 0xfffffff0u
#define SIZE 1000
#define STEP 10

static char dir[256];
static struct name agg;

static struct name nm(unsigned i)
{
	char text[64];
	struct name n;
	snprintf(text, sizeof(text), "m%07u.example", i);   /* one length: equal records */
	assert_int_equal(name_from_text(&n, text, strlen(text)), NAME_OK);
	return n;
}

static void model(unsigned k, struct nameset *s)
{
	nameset_clear(s);
	for (unsigned i = 10 * k; i < 10 * k + SIZE; i++) {
		struct name n = nm(i);
		nameset_add(s, n.wire, n.len);
	}
}

static void step_lists(unsigned k, struct namelist *dels, struct namelist *adds)
{
	namelist_clear(dels);
	namelist_clear(adds);
	for (unsigned i = 0; i < STEP; i++) {
		struct name n = nm(10 * (k - 1) + i);
		namelist_add(dels, n.wire, n.len);
		n = nm(10 * (k - 1) + SIZE + i);
		namelist_add(adds, n.wire, n.len);
	}
}

/* The store holds version k of the model. */
static void assert_at(struct aggstore *s, unsigned k)
{
	uint32_t serial;
	assert_true(aggstore_version(s, &serial));
	assert_int_equal(serial, BASE + k);
	const struct nameset *m = aggstore_members(s);
	assert_int_equal(m->count, SIZE);
	for (unsigned i = 10 * k; i < 10 * k + SIZE; i++) {
		struct name n = nm(i);
		assert_true(nameset_contains(m, n.wire, n.len));
	}
}

static struct aggstore *open_store(void)
{
	struct aggstore *s = NULL;
	char err[512];
	int rc = aggstore_open(&s, dir, &agg, err, sizeof(err));
	if (rc != 0)
		fail_msg("open: %s", err);
	return s;
}

/* A store at version k of the model, built from version 0 by k diffs. */
static struct aggstore *build(unsigned k)
{
	struct aggstore *s = open_store();
	struct nameset m;
	nameset_init(&m);
	model(0, &m);
	assert_int_equal(aggstore_replace(s, BASE, &m), 0);
	nameset_free(&m);
	struct namelist d, a;
	namelist_init(&d);
	namelist_init(&a);
	for (unsigned v = 1; v <= k; v++) {
		step_lists(v, &d, &a);
		assert_int_equal(aggstore_apply(s, BASE + v - 1, BASE + v, &d, &a), 0);
	}
	namelist_free(&d);
	namelist_free(&a);
	return s;
}

static char *path(const char *suffix)
{
	static char p[512];
	snprintf(p, sizeof(p), "%s/agg.example%s", dir, suffix);
	return p;
}

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/test_aggstore.%d/state", (int)getpid());
	char parent[256];
	snprintf(parent, sizeof(parent), "/tmp/test_aggstore.%d", (int)getpid());
	mkdir(parent, 0700);
	name_from_text(&agg, "agg.example", 11);
	return 0;
}

static int teardown(void **state)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf /tmp/test_aggstore.%d", (int)getpid());
	return system(cmd) == 0 ? 0 : -1;
}

static void wipe(void)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

static void creates_private_dir_and_reports_missing_parent(void **state)
{
	wipe();
	struct aggstore *s = open_store();
	struct stat st;
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	uint32_t serial;
	assert_false(aggstore_version(s, &serial));
	aggstore_close(s);

	char err[512];
	assert_int_equal(aggstore_open(&s, "/nonexistent-parent/x", &agg, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "state-dir /nonexistent-parent/x"));
	assert_non_null(strstr(err, "No such file or directory"));
}

static void versions_survive_reopen_and_serials_wrap(void **state)
{
	wipe();
	struct aggstore *s = build(30);         /* BASE + 30 wraps past 0 */
	assert_at(s, 30);
	aggstore_close(s);
	s = open_store();
	assert_at(s, 30);

	/* not newer (RFC 1982), and a diff from another version */
	struct namelist d, a;
	namelist_init(&d);
	namelist_init(&a);
	step_lists(31, &d, &a);
	assert_int_equal(aggstore_apply(s, BASE + 30, BASE + 30, &d, &a), -EINVAL);
	assert_int_equal(aggstore_apply(s, BASE + 30, BASE + 30 + 0x80000000u, &d, &a), -EINVAL);
	assert_int_equal(aggstore_apply(s, BASE + 29, BASE + 31, &d, &a), -ESTALE);
	/* a delete of a non-member, an add of a member, a duplicate: the diff does not apply */
	struct name n = nm(5);
	namelist_add(&d, n.wire, n.len);
	assert_int_equal(aggstore_apply(s, BASE + 30, BASE + 31, &d, &a), -ESTALE);
	step_lists(31, &d, &a);
	n = nm(10 * 30 + 50);
	namelist_add(&a, n.wire, n.len);
	assert_int_equal(aggstore_apply(s, BASE + 30, BASE + 31, &d, &a), -ESTALE);
	step_lists(31, &d, &a);
	namelist_add(&a, a.buf + 1, a.buf[0]);
	assert_int_equal(aggstore_apply(s, BASE + 30, BASE + 31, &d, &a), -ESTALE);
	assert_at(s, 30);
	/* a name removed and added back in one version is allowed */
	step_lists(31, &d, &a);
	n = nm(10 * 30 + 500);
	namelist_add(&d, n.wire, n.len);
	namelist_add(&a, n.wire, n.len);
	assert_int_equal(aggstore_apply(s, BASE + 30, BASE + 31, &d, &a), 0);
	assert_at(s, 31);
	namelist_free(&d);
	namelist_free(&a);
	aggstore_close(s);
}

static void diffs_reach_back_or_say_not(void **state)
{
	wipe();
	struct aggstore *s = build(5);
	struct aggstore_diffs c;
	struct aggstore_diff d;
	assert_int_equal(aggstore_diffs_open(s, BASE + 5, &c), AGGSTORE_CURRENT);
	assert_int_equal(aggstore_diffs_open(s, BASE + 9, &c), AGGSTORE_CURRENT);
	assert_int_equal(aggstore_diffs_open(s, BASE - 1, &c), AGGSTORE_UNREACHABLE);
	assert_int_equal(aggstore_diffs_open(s, BASE + 2, &c), AGGSTORE_DIFFS);
	for (unsigned v = 3; v <= 5; v++) {
		assert_int_equal(aggstore_diffs_next(&c, &d), 1);
		assert_int_equal(d.from, BASE + v - 1);
		assert_int_equal(d.to, BASE + v);
		assert_int_equal(d.ndels, STEP);
		assert_int_equal(d.nadds, STEP);
		struct name n = nm(10 * (v - 1));
		assert_memory_equal(d.dels + 1, n.wire, n.len);
		n = nm(10 * (v - 1) + SIZE);
		assert_memory_equal(d.adds + 1, n.wire, n.len);
	}
	assert_int_equal(aggstore_diffs_next(&c, &d), 0);
	aggstore_diffs_close(&c);

	/* a cursor outlives changes made after it was opened */
	assert_int_equal(aggstore_diffs_open(s, BASE + 4, &c), AGGSTORE_DIFFS);
	struct namelist dl, al;
	namelist_init(&dl);
	namelist_init(&al);
	step_lists(6, &dl, &al);
	assert_int_equal(aggstore_apply(s, BASE + 5, BASE + 6, &dl, &al), 0);
	assert_int_equal(aggstore_diffs_next(&c, &d), 1);
	assert_int_equal(d.to, BASE + 5);
	assert_int_equal(aggstore_diffs_next(&c, &d), 0);
	aggstore_diffs_close(&c);
	namelist_free(&dl);
	namelist_free(&al);
	aggstore_close(s);
}

/* The journal stays within twice the snapshot, keeps recent history, and reopens. */
static void journal_is_bounded(void **state)
{
	wipe();
	struct aggstore *s = build(0);
	struct namelist d, a;
	namelist_init(&d);
	namelist_init(&a);
	struct aggstore_stats st;
	for (unsigned v = 1; v <= 400; v++) {
		step_lists(v, &d, &a);
		assert_int_equal(aggstore_apply(s, BASE + v - 1, BASE + v, &d, &a), 0);
		aggstore_stats(s, &st);
		uint64_t lim = 2 * st.snapshot_bytes;
		assert_true(st.journal_bytes <= (lim > AGGSTORE_JOURNAL_MIN ? lim : AGGSTORE_JOURNAL_MIN));
	}
	assert_true(st.compactions > 0);
	assert_true(st.journal_versions > 10);
	struct aggstore_diffs c;
	assert_int_equal(aggstore_diffs_open(s, BASE + 395, &c), AGGSTORE_DIFFS);
	aggstore_diffs_close(&c);
	assert_int_equal(aggstore_diffs_open(s, BASE + 1, &c), AGGSTORE_UNREACHABLE);
	aggstore_close(s);
	s = open_store();
	assert_at(s, 400);
	namelist_free(&d);
	namelist_free(&a);
	aggstore_close(s);
}

static uint8_t *slurp(const char *p, size_t *len)
{
	FILE *f = fopen(p, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc(*len + 1);
	assert_int_equal(fread(b, 1, *len, f), *len);
	fclose(f);
	return b;
}

static void spit(const char *p, const uint8_t *b, size_t len)
{
	FILE *f = fopen(p, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, len, f), len);
	fclose(f);
}

static off_t file_size(const char *p)
{
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	return st.st_size;
}

/* Truncated at every byte: the last whole version, and the tail cut to it. */
static void truncation_at_every_offset(void **state)
{
	wipe();
	struct aggstore *s = build(4);
	aggstore_close(s);
	size_t len;
	uint8_t *jnl = slurp(path(".jnl"), &len);
	/* record boundaries: the journal holds versions 1..4, equal-sized records */
	size_t rec = len / 4;
	assert_int_equal(rec * 4, len);
	for (size_t t = 0; t <= len; t++) {
		spit(path(".jnl"), jnl, t);
		s = open_store();
		assert_at(s, (unsigned)(t / rec));
		aggstore_close(s);
		assert_int_equal(file_size(path(".jnl")), (off_t)(t / rec * rec));
	}
	/* a version written after the cut continues the chain */
	spit(path(".jnl"), jnl, len - 3);
	s = open_store();
	assert_at(s, 3);
	struct namelist d, a;
	namelist_init(&d);
	namelist_init(&a);
	step_lists(4, &d, &a);
	assert_int_equal(aggstore_apply(s, BASE + 3, BASE + 4, &d, &a), 0);
	aggstore_close(s);
	s = open_store();
	assert_at(s, 4);
	aggstore_close(s);
	namelist_free(&d);
	namelist_free(&a);
	free(jnl);
}

/* A flipped byte anywhere: the versions before its record, nothing after. */
static void corrupt_byte_is_cut(void **state)
{
	wipe();
	struct aggstore *s = build(4);
	aggstore_close(s);
	size_t len;
	uint8_t *jnl = slurp(path(".jnl"), &len);
	size_t rec = len / 4;
	srandom(7);
	for (int round = 0; round < 200; round++) {
		size_t at = (size_t)random() % len;
		uint8_t orig = jnl[at];
		jnl[at] ^= (uint8_t)(1u << (random() % 8));
		spit(path(".jnl"), jnl, len);
		s = open_store();
		assert_at(s, (unsigned)(at / rec));
		aggstore_close(s);
		assert_int_equal(file_size(path(".jnl")), (off_t)(at / rec * rec));
		jnl[at] = orig;
	}
	free(jnl);
}

/* A damaged snapshot is moved aside; the store opens empty, to be fetched whole. */
static void damaged_snapshot_is_moved_aside(void **state)
{
	wipe();
	struct aggstore *s = build(2);
	aggstore_close(s);
	size_t len;
	uint8_t *snap = slurp(path(".snap"), &len);
	snap[len / 2] ^= 0x40;
	spit(path(".snap"), snap, len);
	s = open_store();
	uint32_t serial;
	assert_false(aggstore_version(s, &serial));
	assert_int_equal(aggstore_members(s)->count, 0);
	assert_int_equal(file_size(path(".snap.bad")), (off_t)len);
	assert_int_equal(file_size(path(".jnl")), 0);
	struct nameset m;
	nameset_init(&m);
	model(7, &m);
	assert_int_equal(aggstore_replace(s, BASE + 7, &m), 0);
	aggstore_close(s);
	s = open_store();
	assert_at(s, 7);
	aggstore_close(s);
	nameset_free(&m);
	free(snap);
}

/* A write the file system refuses (as a full disk does) changes nothing. */
static void failed_write_leaves_store_usable(void **state)
{
	wipe();
	struct aggstore *s = build(1);
	struct aggstore_stats st;
	aggstore_stats(s, &st);
	struct rlimit old, lim;
	getrlimit(RLIMIT_FSIZE, &old);
	lim = old;
	lim.rlim_cur = (rlim_t)st.journal_bytes + 40;   /* the next record does not fit */
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	struct namelist d, a;
	namelist_init(&d);
	namelist_init(&a);
	step_lists(2, &d, &a);
	assert_int_equal(aggstore_apply(s, BASE + 1, BASE + 2, &d, &a), -EFBIG);
	assert_non_null(strstr(aggstore_error(s), "journal write"));
	assert_at(s, 1);
	assert_int_equal(file_size(path(".jnl")), (off_t)st.journal_bytes);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	assert_int_equal(aggstore_apply(s, BASE + 1, BASE + 2, &d, &a), 0);
	aggstore_close(s);
	s = open_store();
	assert_at(s, 2);
	aggstore_close(s);
	namelist_free(&d);
	namelist_free(&a);
}

/*
 * A writer killed with SIGKILL at random moments: the store opens at the
 * last version the writer reported stored, or the one it was writing.
 */
static void kill9_writer(void **state)
{
	srandom(11);
	for (int round = 0; round < 20; round++) {
		wipe();
		struct aggstore *s = build(0);
		aggstore_close(s);
		int fds[2];
		assert_int_equal(pipe(fds), 0);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			close(fds[0]);
			s = open_store();
			struct namelist d, a;
			namelist_init(&d);
			namelist_init(&a);
			for (unsigned v = 1;; v++) {
				step_lists(v, &d, &a);
				if (aggstore_apply(s, BASE + v - 1, BASE + v, &d, &a) != 0)
					_exit(1);
				if (write(fds[1], &v, sizeof(v)) != sizeof(v))
					_exit(1);
			}
		}
		close(fds[1]);
		unsigned want = 1 + (unsigned)random() % 60, got = 0, v;
		while (got < want && read(fds[0], &v, sizeof(v)) == sizeof(v))
			got = v;
		usleep((useconds_t)(random() % 3000));
		kill(pid, SIGKILL);
		while (read(fds[0], &v, sizeof(v)) == sizeof(v))
			got = v;
		close(fds[0]);
		int status;
		waitpid(pid, &status, 0);
		assert_true(WIFSIGNALED(status));
		s = open_store();
		uint32_t serial;
		assert_true(aggstore_version(s, &serial));
		unsigned at = serial - BASE;
		assert_true(at == got || at == got + 1);
		assert_at(s, at);
		aggstore_close(s);
	}
}

int main(void)
{
	log_init("test_aggstore", getenv("TEST_LOG") ? LOG_LVL_DEBUG : LOG_LVL_ERR, false);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(creates_private_dir_and_reports_missing_parent),
		cmocka_unit_test(versions_survive_reopen_and_serials_wrap),
		cmocka_unit_test(diffs_reach_back_or_say_not),
		cmocka_unit_test(journal_is_bounded),
		cmocka_unit_test(truncation_at_every_offset),
		cmocka_unit_test(corrupt_byte_is_cut),
		cmocka_unit_test(damaged_snapshot_is_moved_aside),
		cmocka_unit_test(failed_write_leaves_store_usable),
		cmocka_unit_test(kill9_writer),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
