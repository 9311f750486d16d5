/*
 * The aggregate store: versions survive reopening, the journal reaches
 * back for IXFR, serials wrap, and a crash at any byte (truncation at every
 * offset, a flipped byte, kill -9 of a writer) opens at the last complete
 * version.
 *
 * The model: version k of the test aggregate holds members m(10k) ..
 * m(10k + 999); its serial is BASE + k, crossing 2^32.
 *
 * Faults are injected below the store: this test is linked with
 * -Wl,--wrap for pwritev64, fsync, fdatasync and renameat, so any one call
 * can be made to fail as a full disk or a failing device would.
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
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/uio.h>
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

enum op { OP_WRITE, OP_FSYNC, OP_FDATASYNC, OP_RENAME, OP_N };
static struct {
	unsigned calls[OP_N];           /* since fault_reset */
	unsigned fail_at[OP_N];         /* this call (1-based) fails; 0: none */
	bool fail_on[OP_N];             /* every call from fail_at on */
	int err;
	ino_t synced[64];               /* inodes fsync'ed, newest last */
	unsigned nsynced;
} F;

static void fault_reset(void)
{
	memset(&F, 0, sizeof(F));
}

static void fault_arm(enum op o, unsigned at, bool on, int err)
{
	fault_reset();
	F.fail_at[o] = at;
	F.fail_on[o] = on;
	F.err = err;
}

static bool faulted(enum op o)
{
	unsigned n = ++F.calls[o];
	if (F.fail_at[o] && (n == F.fail_at[o] || (F.fail_on[o] && n > F.fail_at[o]))) {
		errno = F.err;
		return true;
	}
	return false;
}

ssize_t __real_pwritev64(int fd, const struct iovec *iov, int n, off_t off);
int __real_fsync(int fd);
int __real_fdatasync(int fd);
int __real_renameat(int a, const char *b, int c, const char *d);
ssize_t __wrap_pwritev64(int fd, const struct iovec *iov, int n, off_t off);
int __wrap_fsync(int fd);
int __wrap_fdatasync(int fd);
int __wrap_renameat(int a, const char *b, int c, const char *d);

ssize_t __wrap_pwritev64(int fd, const struct iovec *iov, int n, off_t off)
{
	return faulted(OP_WRITE) ? -1 : __real_pwritev64(fd, iov, n, off);
}

int __wrap_fsync(int fd)
{
	struct stat st;
	if (fstat(fd, &st) == 0 && F.nsynced < 64)
		F.synced[F.nsynced++] = st.st_ino;
	return faulted(OP_FSYNC) ? -1 : __real_fsync(fd);
}

int __wrap_fdatasync(int fd)
{
	return faulted(OP_FDATASYNC) ? -1 : __real_fdatasync(fd);
}

int __wrap_renameat(int a, const char *b, int c, const char *d)
{
	return faulted(OP_RENAME) ? -1 : __real_renameat(a, b, c, d);
}

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

/* The store holds version k, and so do its files. */
static struct aggstore *assert_kept(struct aggstore *s, unsigned k)
{
	assert_at(s, k);
	aggstore_close(s);
	s = open_store();
	assert_at(s, k);
	return s;
}

/* Stores version k + 1 of the model on top of version k. */
static void next_version(struct aggstore *s, unsigned k)
{
	struct namelist d, a;
	namelist_init(&d);
	namelist_init(&a);
	step_lists(k + 1, &d, &a);
	assert_int_equal(aggstore_apply(s, BASE + k, BASE + k + 1, &d, &a), 0);
	namelist_free(&d);
	namelist_free(&a);
}

static void count_listed(void *ctx, const struct name *n)
{
	assert_true(name_equal(n, &agg));
	(*(unsigned *)ctx)++;
}

/*
 * A new history (a full transfer of a version not newer than the one
 * held) with each write, sync and rename failing in turn: refused with the
 * old version kept, in memory and on disk, or accepted and found on disk;
 * never an older version, never the old diffs replayed on the new
 * snapshot.  The store goes on from there, reopened or not.
 */
static void new_history_all_or_nothing(void **state)
{
	struct nameset m;
	nameset_init(&m);
	model(1, &m);
	unsigned refused = 0, accepted_late = 0;
	for (int reopen = 0; reopen < 2; reopen++)
		for (enum op o = 0; o < OP_N; o++)
			for (unsigned at = 1; at <= 4; at++) {
				fault_reset();
				wipe();
				struct aggstore *s = build(3);
				struct aggstore_stats st0, st;
				aggstore_stats(s, &st0);
				fault_arm(o, at, false, o == OP_WRITE ? ENOSPC : EIO);
				int rc = aggstore_replace(s, BASE + 1, &m);
				bool reached = F.calls[o] >= at;
				fault_reset();
				aggstore_stats(s, &st);
				if (!reached) {
					assert_int_equal(rc, 0);
					assert_int_equal(st.errors, st0.errors);
				} else {
					assert_int_equal(st.errors, st0.errors + 1);
					assert_non_null(strstr(aggstore_error(s), strerror(o == OP_WRITE ? ENOSPC : EIO)));
				}
				if (rc < 0)
					refused++;
				else if (reached)
					accepted_late++;        /* committed; finished later */
				/* listed once, whether its snapshot is NAME.snap, NAME.snap.new or both */
				unsigned listed = 0;
				assert_int_equal(aggstore_list(dir, count_listed, &listed), 0);
				assert_int_equal(listed, 1);
				unsigned k = rc == 0 ? 1 : 3;
				if (reopen)
					s = assert_kept(s, k);
				next_version(s, k);
				s = assert_kept(s, k + 1);
				aggstore_close(s);
			}
	/* both outcomes were met: before the commit and after it */
	assert_true(refused >= 8);
	assert_true(accepted_late >= 4);
	nameset_free(&m);
}

/* A version whose journal write or sync fails is refused and leaves no trace. */
static void failed_write_or_sync_changes_nothing(void **state)
{
	for (enum op o = OP_WRITE; o <= OP_FDATASYNC; o += OP_FDATASYNC - OP_WRITE) {
		int err = o == OP_WRITE ? ENOSPC : EIO;
		wipe();
		struct aggstore *s = build(2);
		off_t size = file_size(path(".jnl"));
		struct namelist d, a;
		namelist_init(&d);
		namelist_init(&a);
		step_lists(3, &d, &a);
		fault_arm(o, 1, false, err);
		assert_int_equal(aggstore_apply(s, BASE + 2, BASE + 3, &d, &a), -err);
		fault_reset();
		struct aggstore_stats st;
		aggstore_stats(s, &st);
		assert_int_equal(st.errors, 1);
		assert_non_null(strstr(aggstore_error(s), "journal write"));
		assert_int_equal(file_size(path(".jnl")), size);
		s = assert_kept(s, 2);
		next_version(s, 2);
		s = assert_kept(s, 3);
		aggstore_close(s);
		namelist_free(&d);
		namelist_free(&a);
	}
}

/*
 * A compaction with each of its writes, syncs and renames failing in turn
 * (once, then for good): the version that started it is kept, and later
 * versions are either refused while the directory cannot be synced or
 * land in the journal that is on disk, never in an unlinked one.
 */
static void compaction_faults_lose_nothing(void **state)
{
	/* the version whose storing compacts */
	wipe();
	struct aggstore *s = build(0);
	unsigned n = 0;
	struct aggstore_stats st;
	do {
		next_version(s, n++);
		aggstore_stats(s, &st);
	} while (st.compactions == 0);
	aggstore_close(s);
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "rm -rf %s.keep && mkdir %s.keep", dir, dir);
	assert_int_equal(system(cmd), 0);
	wipe();
	s = build(0);
	for (unsigned k = 0; k < n - 1; k++)
		next_version(s, k);
	aggstore_close(s);
	snprintf(cmd, sizeof(cmd), "cp -a %s/. %s.keep/", dir, dir);
	assert_int_equal(system(cmd), 0);

	unsigned compaction_failed = 0;
	for (int persist = 0; persist < 2; persist++)
		for (enum op o = 0; o < OP_N; o++)
			for (unsigned at = 1; at <= 4; at++) {
				wipe();
				snprintf(cmd, sizeof(cmd), "cp -a %s.keep %s", dir, dir);
				assert_int_equal(system(cmd), 0);
				s = open_store();
				assert_at(s, n - 1);
				int err = o == OP_WRITE ? ENOSPC : EIO;
				fault_arm(o, at, persist, err);
				struct namelist d, a;
				namelist_init(&d);
				namelist_init(&a);
				step_lists(n, &d, &a);
				int rc = aggstore_apply(s, BASE + n - 1, BASE + n, &d, &a);
				unsigned k = rc == 0 ? n : n - 1;
				aggstore_stats(s, &st);
				if (rc == 0 && st.errors > 0)
					compaction_failed++;
				assert_at(s, k);
				/* while the fault lasts: refused, or stored for good */
				step_lists(k + 1, &d, &a);
				rc = aggstore_apply(s, BASE + k, BASE + k + 1, &d, &a);
				if (rc == 0)
					k++;
				fault_reset();
				s = assert_kept(s, k);
				next_version(s, k);
				s = assert_kept(s, k + 1);
				aggstore_close(s);
				namelist_free(&d);
				namelist_free(&a);
			}
	assert_true(compaction_failed >= 8);
	snprintf(cmd, sizeof(cmd), "rm -rf %s.keep", dir);
	assert_int_equal(system(cmd), 0);
}

/* One process per state-dir: a second lock is refused, naming the holder. */
static void state_dir_is_locked_and_its_parent_synced(void **state)
{
	wipe();
	char parent[256], err[512];
	snprintf(parent, sizeof(parent), "%s", dir);
	*strrchr(parent, '/') = 0;
	struct stat pst;
	assert_int_equal(stat(parent, &pst), 0);
	fault_reset();
	int fd = aggstore_lock_dir(dir, err, sizeof(err));
	assert_true(fd >= 0);
	bool parent_synced = false;
	for (unsigned i = 0; i < F.nsynced; i++)
		parent_synced |= F.synced[i] == pst.st_ino;
	assert_true(parent_synced);
	struct stat st;
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);

	assert_int_equal(aggstore_lock_dir(dir, err, sizeof(err)), -EWOULDBLOCK);
	char want[600];
	snprintf(want, sizeof(want), "state-dir %s is in use by another process (pid %d)", dir, (int)getpid());
	assert_string_equal(err, want);
	close(fd);
	fd = aggstore_lock_dir(dir, err, sizeof(err));
	assert_true(fd >= 0);
	close(fd);
}

/* The kill9 writer's steps: diffs (a compaction near 170), then a new history every 5th. */
static bool history_step(unsigned i)
{
	return i > 180 && i % 5 == 0;
}

/* The serial the writer of the kill9 test stores at step i; its members are model(i). */
static uint32_t history_serial(unsigned i)
{
	uint32_t x = BASE;
	for (unsigned j = 1; j <= i; j++)
		x = history_step(j) ? x - 1000 : x + 1;
	return x;
}

/*
 * A writer killed with SIGKILL at random moments while it stores diffs,
 * compacts, and starts new histories (a version not newer): the store
 * opens at the step it last reported or the one it was writing, never an
 * older one.
 */
static void kill9_writer_histories(void **state)
{
	srandom(13);
	unsigned histories = 0;
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
			struct nameset m;
			namelist_init(&d);
			namelist_init(&a);
			nameset_init(&m);
			for (unsigned v = 1;; v++) {
				int rc;
				if (history_step(v)) {
					model(v, &m);
					rc = aggstore_replace(s, history_serial(v), &m);
				} else {
					step_lists(v, &d, &a);
					rc = aggstore_apply(s, history_serial(v - 1), history_serial(v), &d, &a);
				}
				if (rc != 0 || write(fds[1], &v, sizeof(v)) != sizeof(v))
					_exit(1);
			}
		}
		close(fds[1]);
		unsigned want = 150 + (unsigned)random() % 120, got = 0, v;
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
		histories += got > 180;
		s = open_store();
		uint32_t serial;
		assert_true(aggstore_version(s, &serial));
		unsigned at = serial == history_serial(got) ? got : got + 1;
		assert_int_equal(serial, history_serial(at));
		const struct nameset *mem = aggstore_members(s);
		assert_int_equal(mem->count, SIZE);
		for (unsigned i = 10 * at; i < 10 * at + SIZE; i++) {
			struct name nn = nm(i);
			assert_true(nameset_contains(mem, nn.wire, nn.len));
		}
		aggstore_close(s);
	}
	assert_true(histories > 0);
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
		cmocka_unit_test(new_history_all_or_nothing),
		cmocka_unit_test(failed_write_or_sync_changes_nothing),
		cmocka_unit_test(compaction_faults_lose_nothing),
		cmocka_unit_test(state_dir_is_locked_and_its_parent_synced),
		cmocka_unit_test(kill9_writer_histories),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
