/*
 * The aggregate store; see aggstore.h and docs/AGGREGATES.md.
 *
 * A record is a 16-byte header and a payload:
 *
 *     u8 type, u8[3] zero, u32 payload length, u64 XXH3 of the payload
 *     seeded with (type << 32 | length), so the header is covered too
 *
 * (all integers big-endian).  A snapshot is SNAP_HEAD, any number of
 * SNAP_NAMES, SNAP_END; a journal is DIFF records.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#define XXH_STATIC_LINKING_ONLY        /* XXH3_state_t on the stack */
#include <xxhash.h>

#include "aggstore.h"
#include "log.h"
#include "vec.h"
#include "wire.h"

#define REC_HDR         16
#define REC_MAX         (1u << 30)      /* a payload larger than this is damage */
#define FORMAT_VERSION  1
#define CHUNK_PAYLOAD   (64u * 1024)    /* names per SNAP_NAMES record */

enum rec_type { SNAP_HEAD = 1, SNAP_NAMES = 2, SNAP_END = 3, DIFF = 4 };

/* DIFF payload: from, to, ndels, nadds, dels_len, then the two lists */
#define DIFF_FIXED 20

struct aggstore {
	struct name name;
	char *dir;
	char base[NAME_MAX_TEXT * 3 + 8];       /* file name without suffix */
	int dirfd;
	int jfd;
	bool has_version;
	uint32_t serial;
	struct nameset members;
	uint64_t snap_bytes, jnl_bytes;
	struct aggstore_jrec *recs;
	size_t nrecs, caprecs;
	uint64_t compactions;
	uint64_t errors;                /* failed writes and compactions */
	bool read_only;                 /* the state-dir refused writing at open */
	bool dir_unsynced;              /* a rename whose directory sync failed: synced before acknowledging */
	bool pending;                   /* a new history in NAME.snap.new, journal not yet reset */
	char err[512];
};

static inline uint64_t seed(uint8_t type, uint32_t len)
{
	return (uint64_t)type << 32 | len;
}

/* The header for a payload whose checksum is sum. */
static void rec_header(uint8_t *h, uint8_t type, uint32_t len, uint64_t sum)
{
	struct wire_writer w = wire_writer(h, REC_HDR);
	wire_put32(&w, (uint32_t)type << 24);  /* the type, three zero bytes */
	wire_put32(&w, len);
	wire_put64(&w, sum);
}

/*
 * The record at r: 1 with *type and *payload set (r moved past it) when
 * it is whole and its checksum verifies, 0 when the buffer ends inside
 * it, -1 when it is damaged.
 */
static int rec_read(struct wire_reader *r, uint8_t *type, struct wire_reader *payload)
{
	struct wire_reader h = *r;
	uint32_t t = wire_u32(&h);
	uint32_t l = wire_u32(&h);
	uint64_t sum = wire_u64(&h);
	if (h.bad)
		return 0;
	if ((t & 0xffffff) || t >> 24 < SNAP_HEAD || t >> 24 > DIFF || l > REC_MAX)
		return -1;
	const uint8_t *p = wire_take(&h, l);
	if (!p)
		return 0;
	if (XXH3_64bits_withSeed(p, l, seed((uint8_t)(t >> 24), l)) != sum)
		return -1;
	*type = (uint8_t)(t >> 24);
	*payload = wire_reader(p, l);
	*r = h;
	return 1;
}

int aggstore_snapshot_parse(const uint8_t *buf, size_t len, const struct name *agg,
			    struct nameset *members, uint32_t *serial, const char **why)
{
	nameset_clear(members);
	struct wire_reader r = wire_reader(buf, len);
	uint8_t type;
	uint32_t expect = 0, serial_head = 0;
	bool head = false;

	for (;;) {
		struct wire_reader p;
		int rc = rec_read(&r, &type, &p);
		if (rc == 0) {
			*why = wire_left(&r) == 0 ? "no end record" : "truncated record";
			return -1;
		}
		if (rc < 0) {
			*why = "bad record header or checksum";
			return -1;
		}
		if (!head) {
			uint32_t version = wire_u32(&p);
			serial_head = wire_u32(&p);
			expect = wire_u32(&p);
			uint8_t nlen = wire_u8(&p);
			const uint8_t *name = wire_take(&p, nlen);
			if (type != SNAP_HEAD || p.bad || wire_left(&p) != 0 || version != FORMAT_VERSION ||
			    nlen == 0 || !name_wire_canonical(name, nlen)) {
				*why = "bad snapshot header";
				return -1;
			}
			if (agg && (agg->len != nlen || memcmp(agg->wire, name, nlen) != 0)) {
				*why = "snapshot of another aggregate";
				return -1;
			}
			head = true;
			/* room for what the head announces, bounded by what the file can hold (a name
			 * is at least 2 bytes): one table, not a doubling after another */
			uint32_t room = expect < len / 3 ? expect : (uint32_t)(len / 3);
			if (nameset_reserve(members, room, len) < 0) {
				*why = "out of memory";
				return -1;
			}
			continue;
		}
		if (type == SNAP_NAMES) {
			uint32_t count = wire_u32(&p);
			if (p.bad || !namelist_check(p.p, wire_left(&p), count)) {
				*why = "bad names record";
				return -1;
			}
			int a = nameset_add_list(members, p.p, wire_left(&p));
			if (a < 0) {
				*why = "out of memory";
				return -1;
			}
			if ((uint32_t)a != count) {
				*why = "a name twice";
				return -1;
			}
			continue;
		}
		uint32_t count = wire_u32(&p), serial_end = wire_u32(&p);
		if (type != SNAP_END || p.bad || wire_left(&p) != 0 || count != members->count ||
		    members->count != expect || serial_end != serial_head) {
			*why = "bad end record or member count";
			return -1;
		}
		if (wire_left(&r) != 0) {
			*why = "bytes after the end record";
			return -1;
		}
		*serial = serial_head;
		return 0;
	}
}

/* A DIFF payload's fixed part and its two lists; false if they do not fill it. */
static bool diff_read(struct wire_reader p, struct aggstore_diff *d)
{
	d->from = wire_u32(&p);
	d->to = wire_u32(&p);
	d->ndels = wire_u32(&p);
	d->nadds = wire_u32(&p);
	d->dels_len = wire_u32(&p);
	d->dels = wire_take(&p, d->dels_len);
	d->adds_len = wire_left(&p);
	d->adds = wire_take(&p, d->adds_len);
	return !p.bad;
}

/* Reads and checks a DIFF payload: true when well formed. */
static bool diff_check(struct wire_reader p, struct aggstore_diff *d)
{
	return diff_read(p, d) && serial_gt(d->to, d->from) && namelist_check(d->dels, d->dels_len, d->ndels) &&
	       namelist_check(d->adds, d->adds_len, d->nadds);
}

void aggstore_diff_from_record(const uint8_t *rec, struct aggstore_diff *d)
{
	/* checked by the scan: the header says how long the whole record is */
	struct wire_reader h = wire_reader(rec, REC_HDR);
	wire_u32(&h);
	uint32_t plen = wire_u32(&h);
	diff_read(wire_reader(rec + REC_HDR, plen), d);
}

static int recs_push(struct aggstore_jrec **recs, size_t *n, size_t *cap, const struct aggstore_jrec *r)
{
	if (VEC_RESERVE(*recs, *cap, *n + 1) < 0)
		return -1;
	(*recs)[(*n)++] = *r;
	return 0;
}

size_t aggstore_journal_scan(const uint8_t *buf, size_t len, struct aggstore_jrec **recs,
			     size_t *n, const char **why)
{
	struct wire_reader r = wire_reader(buf, len);
	size_t cap = 0;
	*recs = NULL;
	*n = 0;
	*why = NULL;
	while (wire_left(&r) > 0) {
		struct wire_reader next = r;
		uint8_t type;
		struct wire_reader p;
		int rc = rec_read(&next, &type, &p);
		if (rc == 0) {
			*why = "torn record";
			break;
		}
		if (rc < 0 || type != DIFF) {
			*why = "bad record header or checksum";
			break;
		}
		struct aggstore_diff d;
		if (!diff_check(p, &d)) {
			*why = "malformed diff";
			break;
		}
		struct aggstore_jrec rec = { d.from, d.to, (size_t)(r.p - buf), (size_t)(next.p - r.p) };
		if (*n > 0 && (*recs)[*n - 1].to != rec.from) {
			*why = "diff does not continue the previous one";
			break;
		}
		if (recs_push(recs, n, &cap, &rec) < 0) {
			free(*recs);
			*recs = NULL;
			*n = 0;
			return (size_t)-1;
		}
		r = next;
	}
	return (size_t)(r.p - buf);
}

static int fail(struct aggstore *s, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct aggstore *s, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(s->err, sizeof(s->err), fmt, ap);
	va_end(ap);
	/* a diff that does not apply or an out-of-order version is no system error */
	bool system = err > 0 && err != ESTALE && err != EINVAL;
	if (n >= 0 && (size_t)n < sizeof(s->err) && system)
		snprintf(s->err + n, sizeof(s->err) - (size_t)n, ": %s", strerror(err));
	if (system)
		s->errors++;
	return -err;
}

/* The file name for an aggregate: its text form, other bytes as %xx. */
static void base_name(const struct name *n, char *out)
{
	char text[NAME_MAX_TEXT];
	int len = name_to_text(n, text, sizeof(text));
	if (len > 1)
		text[--len] = 0;        /* the trailing dot */
	size_t o = 0;
	for (int i = 0; i < len; i++) {
		unsigned char c = (unsigned char)text[i];
		if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		    (c == '.' && i > 0))
			out[o++] = (char)c;
		else
			o += (size_t)sprintf(out + o, "%%%02x", c);
	}
	out[o] = 0;
}

static int hex(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int aggstore_list(const char *state_dir, void (*fn)(void *ctx, const struct name *agg), void *ctx)
{
	DIR *d = opendir(state_dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		/* a new history not yet finished is a snapshot too (open finishes it), listed once */
		if (len > 9 && strcmp(e->d_name + len - 9, ".snap.new") == 0) {
			char snap[NAME_MAX + 1];
			struct stat st;
			snprintf(snap, sizeof(snap), "%.*s", (int)(len - 4), e->d_name);
			if (fstatat(dirfd(d), snap, &st, AT_SYMLINK_NOFOLLOW) == 0)
				continue;
			len -= 4;
		}
		if (len <= 5 || strncmp(e->d_name + len - 5, ".snap", 5) != 0)
			continue;
		/* the file name back to the name's text (base_name in reverse), then checked both ways */
		char text[NAME_MAX_TEXT + 1], back[NAME_MAX_TEXT * 3 + 8];
		size_t o = 0;
		bool ok = true;
		for (size_t i = 0; i < len - 5 && ok; i++) {
			if (o + 2 >= sizeof(text))
				ok = false;
			else if (e->d_name[i] != '%')
				text[o++] = e->d_name[i];
			else if (i + 2 < len - 5 && hex(e->d_name[i + 1]) >= 0 && hex(e->d_name[i + 2]) >= 0) {
				text[o++] = (char)(hex(e->d_name[i + 1]) << 4 | hex(e->d_name[i + 2]));
				i += 2;
			} else
				ok = false;
		}
		struct name n;
		if (!ok || o == 0)
			continue;
		text[o++] = '.';
		text[o] = 0;
		if (name_from_text(&n, text, o) != NAME_OK)
			continue;
		base_name(&n, back);
		if (strlen(back) == len - 5 && memcmp(back, e->d_name, len - 5) == 0)
			fn(ctx, &n);
	}
	closedir(d);
	return 0;
}

static int read_all(int fd, uint8_t **out, size_t *len)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	size_t size = (size_t)st.st_size, got = 0;
	uint8_t *buf = malloc(size ? size : 1);
	if (!buf)
		return -ENOMEM;
	while (got < size) {
		ssize_t r = pread(fd, buf + got, size - got, (off_t)got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			free(buf);
			return -e;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	*out = buf;
	*len = got;
	return 0;
}

static int write_all(int fd, const struct iovec *iov, int iovcnt, off_t off)
{
	struct iovec v[8];
	if (iovcnt > 8)
		return -EINVAL;
	memcpy(v, iov, (size_t)iovcnt * sizeof(*v));
	int i = 0;
	while (i < iovcnt) {
		ssize_t w = pwritev(fd, v + i, iovcnt - i, off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		off += w;
		while (i < iovcnt && (size_t)w >= v[i].iov_len) {
			w -= (ssize_t)v[i].iov_len;
			i++;
		}
		if (i < iovcnt) {
			v[i].iov_base = (uint8_t *)v[i].iov_base + w;
			v[i].iov_len -= (size_t)w;
		}
	}
	return 0;
}

static void path_of(const struct aggstore *s, char *out, size_t cap, const char *suffix)
{
	snprintf(out, cap, "%s%s", s->base, suffix);
}

/*
 * Syncs the directory after a rename.  A failure is remembered: nothing is
 * acknowledged until a later sync succeeds (the rename may not be on disk).
 */
static int dir_sync(struct aggstore *s)
{
	if (fsync(s->dirfd) < 0) {
		s->dir_unsynced = true;
		return -errno;
	}
	s->dir_unsynced = false;
	return 0;
}

/*
 * Writes and syncs a snapshot of the current set, then renames it to
 * NAME + suffix.  *renamed says whether the file is at its name, also when
 * the directory's sync then failed.
 */
static int snapshot_write(struct aggstore *s, const char *suffix, bool *renamed)
{
	char tmp[sizeof(s->base) + 16], dst[sizeof(s->base) + 16];
	*renamed = false;
	path_of(s, tmp, sizeof(tmp), ".snap.tmp");
	path_of(s, dst, sizeof(dst), suffix);
	int fd = openat(s->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return fail(s, errno, "%s: create", tmp);

	enum { BUF = 1u << 20 };
	uint8_t *buf = malloc(BUF);
	if (!buf) {
		close(fd);
		unlinkat(s->dirfd, tmp, 0);
		return fail(s, ENOMEM, "%s", tmp);
	}
	uint64_t off = 0;
	size_t used = 0;
	int rc = 0;

	/* head */
	uint8_t *p = buf + REC_HDR;
	struct wire_writer hw = wire_writer(p, BUF - REC_HDR);
	wire_put32(&hw, FORMAT_VERSION);
	wire_put32(&hw, s->serial);
	wire_put32(&hw, s->members.count);
	wire_put8(&hw, s->name.len);
	wire_put(&hw, s->name.wire, s->name.len);
	uint32_t plen = (uint32_t)wire_written(&hw);
	rec_header(buf, SNAP_HEAD, plen, XXH3_64bits_withSeed(p, plen, seed(SNAP_HEAD, plen)));
	used = REC_HDR + plen;

	/* names, in chunks; a chunk record is finished when the next name would not fit */
	size_t chunk_start = used, pos = 0;
	uint32_t chunk_count = 0;
	const uint8_t *w;
	uint8_t l;
	used += REC_HDR + 4;
	for (;;) {
		bool more = nameset_next(&s->members, &pos, &w, &l);
		size_t chunk_len = used - chunk_start - REC_HDR;
		if (!more || chunk_len + 1u + l > CHUNK_PAYLOAD) {
			if (chunk_count) {
				uint8_t *cp = buf + chunk_start + REC_HDR;
				wire_store32(cp, chunk_count);  /* its room was kept when the chunk began */
				rec_header(buf + chunk_start, SNAP_NAMES, (uint32_t)chunk_len,
					   XXH3_64bits_withSeed(cp, chunk_len, seed(SNAP_NAMES, (uint32_t)chunk_len)));
			} else {
				used = chunk_start;     /* an empty chunk is left out */
			}
			/* room for a whole chunk and the end record, else flush */
			if (BUF - used < REC_HDR + CHUNK_PAYLOAD + REC_HDR + 8 || !more) {
				if (!more) {
					uint8_t *e = buf + used + REC_HDR;
					struct wire_writer ew = wire_writer(e, 8);     /* room checked above */
					wire_put32(&ew, s->members.count);
					wire_put32(&ew, s->serial);
					rec_header(buf + used, SNAP_END, 8, XXH3_64bits_withSeed(e, 8, seed(SNAP_END, 8)));
					used += REC_HDR + 8;
				}
				struct iovec v = { buf, used };
				if ((rc = write_all(fd, &v, 1, (off_t)off)) < 0)
					break;
				off += used;
				used = 0;
			}
			if (!more)
				break;
			chunk_start = used;
			chunk_count = 0;
			used += REC_HDR + 4;
		}
		buf[used] = l;
		memcpy(buf + used + 1, w, l);
		used += 1u + l;
		chunk_count++;
	}
	free(buf);
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	close(fd);
	if (rc == 0 && renameat(s->dirfd, tmp, s->dirfd, dst) < 0)
		rc = -errno;
	else if (rc == 0) {
		*renamed = true;
		s->snap_bytes = off;
	}
	if (rc < 0)
		unlinkat(s->dirfd, tmp, 0);
	else
		rc = dir_sync(s);
	if (rc < 0)
		return fail(s, -rc, "%s: write snapshot", dst);
	return 0;
}

/* Replaces the journal with its records from index first on, as a new file. */
static int journal_rewrite(struct aggstore *s, size_t first)
{
	char tmp[sizeof(s->base) + 16], dst[sizeof(s->base) + 16];
	path_of(s, tmp, sizeof(tmp), ".jnl.tmp");
	path_of(s, dst, sizeof(dst), ".jnl");
	int fd = openat(s->dirfd, tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return fail(s, errno, "%s: create", tmp);
	uint64_t start = first < s->nrecs ? s->recs[first].off : s->jnl_bytes;
	uint64_t len = s->jnl_bytes - start, done = 0;
	int rc = 0;
	uint8_t *buf = malloc(1u << 20);
	if (!buf)
		rc = -ENOMEM;
	while (rc == 0 && done < len) {
		size_t n = len - done > (1u << 20) ? (1u << 20) : (size_t)(len - done);
		ssize_t r = pread(s->jfd, buf, n, (off_t)(start + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = r < 0 ? -errno : -EIO;
			break;
		}
		struct iovec v = { buf, (size_t)r };
		rc = write_all(fd, &v, 1, (off_t)done);
		done += (uint64_t)r;
	}
	free(buf);
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	if (rc == 0 && renameat(s->dirfd, tmp, s->dirfd, dst) < 0)
		rc = -errno;
	if (rc < 0) {
		close(fd);
		unlinkat(s->dirfd, tmp, 0);
		return fail(s, -rc, "%s: rewrite journal", dst);
	}
	/* the new file is the journal now: appending to the old, unlinked one would lose versions */
	rc = dir_sync(s);
	close(s->jfd);
	s->jfd = fd;
	memmove(s->recs, s->recs + first, (s->nrecs - first) * sizeof(*s->recs));
	s->nrecs -= first;
	for (size_t i = 0; i < s->nrecs; i++)
		s->recs[i].off -= start;
	s->jnl_bytes = len;
	return rc < 0 ? fail(s, -rc, "%s: rewrite journal", dst) : 0;
}

static uint64_t journal_limit(const struct aggstore *s)
{
	uint64_t lim = 2 * s->snap_bytes;
	return lim < AGGSTORE_JOURNAL_MIN ? AGGSTORE_JOURNAL_MIN : lim;
}

/*
 * A new snapshot, then a journal of the newest diffs that fit in the
 * snapshot's size.  A crash between the two leaves the old journal, whose
 * chain reaches the new snapshot's version: still consistent.  Either step
 * failing leaves files that open at the current version.
 */
static void compact(struct aggstore *s)
{
	bool renamed;
	if (snapshot_write(s, ".snap", &renamed) < 0) {
		log_warn("aggregate %s: compaction failed, the journal keeps growing: %s", s->base, s->err);
		return;
	}
	uint64_t keep = 0;
	size_t first = s->nrecs;
	while (first > 0 && keep + s->recs[first - 1].len <= s->snap_bytes) {
		keep += s->recs[first - 1].len;
		first--;
	}
	if (journal_rewrite(s, first) < 0) {
		log_warn("aggregate %s: journal compaction failed: %s", s->base, s->err);
		return;
	}
	s->compactions++;
}

/*
 * The second half of a new history (start_history): an empty journal, then
 * the snapshot in NAME.snap.new moved to NAME.snap.  Until both are done
 * the store takes no diff (it would go to the old journal); open finishes
 * what a crash interrupted.
 */
static int history_finish(struct aggstore *s)
{
	char src[sizeof(s->base) + 16], dst[sizeof(s->base) + 16];
	path_of(s, src, sizeof(src), ".snap.new");
	path_of(s, dst, sizeof(dst), ".snap");
	int rc = s->jnl_bytes > 0 ? journal_rewrite(s, s->nrecs) : 0;
	if (rc < 0 && s->jnl_bytes > 0)
		return rc;      /* not renamed: the old journal is still there */
	if (renameat(s->dirfd, src, s->dirfd, dst) < 0)
		return fail(s, errno, "%s: rename to %s", src, dst);
	s->pending = false;
	rc = dir_sync(s);
	return rc < 0 ? fail(s, -rc, "state-dir %s: fsync", s->dir) : 0;
}

/* Whether a version may be written now: the last ones' renames synced, a new history finished. */
static int writable(struct aggstore *s)
{
	if (s->read_only)
		return fail(s, EROFS, "aggregate %s: state-dir %s was read-only at open", s->base, s->dir);
	int rc = s->pending ? history_finish(s) : 0;
	if (rc < 0)
		return rc;
	if (s->dir_unsynced) {
		rc = dir_sync(s);
		if (rc < 0)
			return fail(s, -rc, "state-dir %s: fsync", s->dir);
	}
	return 0;
}

/* The diff is checked against the set without changing it. */
static int diff_applies(const struct aggstore *s, const struct namelist *dels, const struct namelist *adds)
{
	struct nameset seen_d, seen_a;
	nameset_init(&seen_d);
	nameset_init(&seen_a);
	int rc = 0;
	size_t pos = 0;
	const uint8_t *w;
	uint8_t l;
	while (rc == 0 && namelist_walk(dels->buf, dels->len, &pos, &w, &l)) {
		if (!nameset_contains(&s->members, w, l))
			rc = -ESTALE;
		else if ((rc = nameset_add(&seen_d, w, l)) >= 0)
			rc = rc == 0 ? -ESTALE : 0;
		else
			rc = -ENOMEM;
	}
	pos = 0;
	while (rc == 0 && namelist_walk(adds->buf, adds->len, &pos, &w, &l)) {
		if (nameset_contains(&s->members, w, l) && !nameset_contains(&seen_d, w, l))
			rc = -ESTALE;
		else if ((rc = nameset_add(&seen_a, w, l)) >= 0)
			rc = rc == 0 ? -ESTALE : 0;
		else
			rc = -ENOMEM;
	}
	nameset_free(&seen_d);
	nameset_free(&seen_a);
	return rc;
}

static void mem_apply(struct nameset *m, const uint8_t *dels, size_t dlen, const uint8_t *adds, size_t alen)
{
	size_t pos = 0;
	const uint8_t *w;
	uint8_t l;
	while (namelist_walk(dels, dlen, &pos, &w, &l))
		nameset_remove(m, w, l);
	pos = 0;
	while (namelist_walk(adds, alen, &pos, &w, &l))
		nameset_add(m, w, l);   /* room reserved by the caller */
}

int aggstore_apply(struct aggstore *s, uint32_t from, uint32_t to,
		   const struct namelist *dels, const struct namelist *adds)
{
	if (!s->has_version)
		return fail(s, EINVAL, "aggregate %s: no version to apply a diff to", s->base);
	if (from != s->serial)
		return fail(s, ESTALE, "aggregate %s: diff from version %u, we hold %u", s->base, from, s->serial);
	if (!serial_gt(to, from))
		return fail(s, EINVAL, "aggregate %s: version %u is not newer than %u", s->base, to, from);
	uint64_t plen = DIFF_FIXED + (uint64_t)dels->len + adds->len;
	if (plen > REC_MAX)
		return fail(s, EFBIG, "aggregate %s: diff of %llu bytes", s->base, (unsigned long long)plen);
	int rc = writable(s);
	if (rc < 0)
		return rc;
	rc = diff_applies(s, dels, adds);
	if (rc == -ESTALE)
		return fail(s, ESTALE, "aggregate %s: diff %u -> %u does not apply", s->base, from, to);
	if (rc < 0 || nameset_reserve(&s->members, adds->count, adds->len) < 0)
		return fail(s, ENOMEM, "aggregate %s", s->base);

	uint8_t hdr[REC_HDR + DIFF_FIXED];
	uint8_t *p = hdr + REC_HDR;
	struct wire_writer w = wire_writer(p, DIFF_FIXED);
	wire_put32(&w, from);
	wire_put32(&w, to);
	wire_put32(&w, dels->count);
	wire_put32(&w, adds->count);
	wire_put32(&w, (uint32_t)dels->len);
	XXH3_state_t st;
	XXH3_INITSTATE(&st);    /* else a stale seed on the stack skips the secret's setup */
	XXH3_64bits_reset_withSeed(&st, seed(DIFF, (uint32_t)plen));
	XXH3_64bits_update(&st, p, DIFF_FIXED);
	XXH3_64bits_update(&st, dels->buf, dels->len);
	XXH3_64bits_update(&st, adds->buf, adds->len);
	rec_header(hdr, DIFF, (uint32_t)plen, XXH3_64bits_digest(&st));
	struct iovec v[3] = {
		{ hdr, sizeof(hdr) },
		{ dels->buf, dels->len },
		{ adds->buf, adds->len },
	};
	rc = write_all(s->jfd, v, 3, (off_t)s->jnl_bytes);
	if (rc == 0 && fdatasync(s->jfd) < 0)
		rc = -errno;
	if (rc < 0) {
		/* no partial record left behind; open would cut it anyway */
		if (ftruncate(s->jfd, (off_t)s->jnl_bytes) == 0)
			(void)fdatasync(s->jfd);
		return fail(s, -rc, "aggregate %s: journal write", s->base);
	}
	struct aggstore_jrec rec = { from, to, s->jnl_bytes, (uint32_t)(REC_HDR + plen) };
	if (recs_push(&s->recs, &s->nrecs, &s->caprecs, &rec) < 0)
		s->nrecs = 0;   /* stored, not indexed: only IXFR from older versions is lost */
	s->jnl_bytes += REC_HDR + plen;
	mem_apply(&s->members, dels->buf, dels->len, adds->buf, adds->len);
	s->serial = to;
	if (s->jnl_bytes > journal_limit(s))
		compact(s);
	return 0;
}

/*
 * A new history.  Its snapshot is written as NAME.snap.new (temporary
 * file, fsync, rename, fsync of the directory): that rename is the commit.
 * Before it the files open at the old version, after it at the new one
 * (open prefers NAME.snap.new and empties the journal), so no crash or
 * failed write can go back to a version older than one acknowledged.
 */
static int start_history(struct aggstore *s, uint32_t serial, const struct nameset *members)
{
	if (s->read_only)
		return fail(s, EROFS, "aggregate %s: state-dir %s was read-only at open", s->base, s->dir);
	struct nameset old = s->members;
	uint32_t old_serial = s->serial;
	uint64_t old_snap = s->snap_bytes;
	nameset_init(&s->members);
	if (nameset_copy(&s->members, members) < 0) {
		nameset_free(&s->members);
		s->members = old;
		return fail(s, ENOMEM, "aggregate %s", s->base);
	}
	s->serial = serial;
	bool renamed;
	int rc = snapshot_write(s, ".snap.new", &renamed);
	if (rc < 0) {
		if (renamed) {
			/* not known to be on disk: not acknowledged, so not to be found at open either */
			char p[sizeof(s->base) + 16];
			path_of(s, p, sizeof(p), ".snap.new");
			unlinkat(s->dirfd, p, 0);
			(void)dir_sync(s);
		}
		nameset_free(&s->members);
		s->members = old;
		s->serial = old_serial;
		s->snap_bytes = old_snap;
		return rc;
	}
	nameset_free(&old);
	s->has_version = true;
	s->nrecs = 0;           /* the old diffs lead to the old history: not served */
	s->pending = true;
	if (history_finish(s) < 0)
		log_warn("aggregate %s: version %u stored, its journal not yet reset (retried before the next "
			 "version): %s", s->base, serial, s->err);
	return 0;
}

int aggstore_replace(struct aggstore *s, uint32_t serial, const struct nameset *members)
{
	if (!s->has_version || !serial_gt(serial, s->serial))
		return start_history(s, serial, members);
	struct namelist dels, adds;
	namelist_init(&dels);
	namelist_init(&adds);
	int rc = nameset_diff(&s->members, members, &dels, &adds);
	if (rc < 0)
		rc = fail(s, ENOMEM, "aggregate %s", s->base);
	else
		rc = aggstore_apply(s, s->serial, serial, &dels, &adds);
	namelist_free(&dels);
	namelist_free(&adds);
	return rc;
}

/* Cuts the journal at off (a torn or damaged tail): one log line. */
static void journal_cut(struct aggstore *s, uint64_t off, uint64_t size, const char *why)
{
	log_warn("aggregate %s: journal damaged at byte %llu (%s): cut %llu bytes, the versions before it kept",
		 s->base, (unsigned long long)off, why, (unsigned long long)(size - off));
	if (s->read_only)
		log_warn("aggregate %s: state-dir read-only: the journal is cut in memory only", s->base);
	else if (ftruncate(s->jfd, (off_t)off) < 0 || fdatasync(s->jfd) < 0)
		log_err("aggregate %s: journal cut: %s", s->base, strerror(errno));
}

static int load(struct aggstore *s)
{
	char path[sizeof(s->base) + 16];
	path_of(s, path, sizeof(path), ".snap");
	int fd = openat(s->dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno != ENOENT)
		return fail(s, errno, "%s/%s", s->dir, path);
	if (fd >= 0) {
		uint8_t *buf;
		size_t len;
		int rc = read_all(fd, &buf, &len);
		close(fd);
		if (rc < 0)
			return fail(s, -rc, "%s/%s: read", s->dir, path);
		const char *why;
		if (aggstore_snapshot_parse(buf, len, &s->name, &s->members, &s->serial, &why) == 0) {
			s->has_version = true;
			s->snap_bytes = len;
		} else {
			char bad[sizeof(path) + 8];
			path_of(s, bad, sizeof(bad), ".snap.bad");
			log_err("aggregate %s: snapshot %s/%s is damaged (%s): moved to %s, to be fetched whole",
				s->base, s->dir, path, why, bad);
			nameset_clear(&s->members);
			if (renameat(s->dirfd, path, s->dirfd, bad) < 0 || fsync(s->dirfd) < 0) {
				free(buf);
				return fail(s, errno, "%s/%s: move aside", s->dir, path);
			}
		}
		free(buf);
	}

	path_of(s, path, sizeof(path), ".jnl");
	if (s->read_only)
		s->jfd = openat(s->dirfd, path, O_RDONLY | O_CLOEXEC);
	else
		s->jfd = openat(s->dirfd, path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (s->jfd < 0 && !(s->read_only && errno == ENOENT))
		return fail(s, errno, "%s/%s", s->dir, path);
	uint8_t *buf = NULL;
	size_t len = 0;
	int rc = s->jfd >= 0 ? read_all(s->jfd, &buf, &len) : 0;
	if (rc < 0)
		return fail(s, -rc, "%s/%s: read", s->dir, path);
	const char *why;
	size_t good = aggstore_journal_scan(buf, len, &s->recs, &s->nrecs, &why);
	if (good == (size_t)-1) {
		free(buf);
		return fail(s, ENOMEM, "%s/%s", s->dir, path);
	}
	s->caprecs = s->nrecs;
	if (good < len)
		journal_cut(s, good, len, why);
	s->jnl_bytes = good;

	if (!s->has_version) {
		if (good > 0)
			journal_cut(s, 0, good, "no snapshot to continue");
		s->jnl_bytes = 0;
		s->nrecs = 0;
		free(buf);
		return 0;
	}
	/* where the snapshot's version is in the chain; what follows is replayed */
	size_t i = 0;
	while (i < s->nrecs && s->recs[i].from != s->serial)
		i++;
	if (i == s->nrecs && s->nrecs > 0 && s->recs[s->nrecs - 1].to != s->serial) {
		journal_cut(s, 0, good, "does not reach the snapshot's version");
		s->jnl_bytes = 0;
		s->nrecs = 0;
	}
	for (; i < s->nrecs; i++) {
		struct aggstore_diff d;
		aggstore_diff_from_record(buf + s->recs[i].off, &d);
		struct namelist dl = { (uint8_t *)d.dels, d.dels_len, d.dels_len, d.ndels };
		struct namelist al = { (uint8_t *)d.adds, d.adds_len, d.adds_len, d.nadds };
		rc = diff_applies(s, &dl, &al);
		if (rc == 0 && nameset_reserve(&s->members, d.nadds, d.adds_len) < 0)
			rc = -ENOMEM;
		if (rc == -ENOMEM) {
			free(buf);
			return fail(s, ENOMEM, "aggregate %s", s->base);
		}
		if (rc < 0) {
			journal_cut(s, s->recs[i].off, good, "a diff that does not apply");
			s->jnl_bytes = s->recs[i].off;
			s->nrecs = i;
			break;
		}
		mem_apply(&s->members, d.dels, d.dels_len, d.adds, d.adds_len);
		s->serial = d.to;
	}
	free(buf);
	return 0;
}

/*
 * A new history committed (NAME.snap.new) but not finished when the
 * process stopped: its journal emptied, its snapshot moved into place.
 */
static int history_roll_forward(struct aggstore *s)
{
	char src[sizeof(s->base) + 16], dst[sizeof(s->base) + 16];
	path_of(s, src, sizeof(src), ".snap.new");
	path_of(s, dst, sizeof(dst), ".jnl");
	struct stat st;
	if (fstatat(s->dirfd, src, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : fail(s, errno, "%s/%s", s->dir, src);
	if (s->read_only)
		return fail(s, EROFS, "%s/%s: a new version to finish, but the state-dir is read-only", s->dir, src);
	log_info("aggregate %s: finishing the new version in %s", s->base, src);
	int fd = openat(s->dirfd, dst, O_WRONLY | O_CLOEXEC);
	if (fd < 0 && errno != ENOENT)
		return fail(s, errno, "%s/%s", s->dir, dst);
	if (fd >= 0) {
		int rc = ftruncate(fd, 0) < 0 || fsync(fd) < 0 ? -errno : 0;
		close(fd);
		if (rc < 0)
			return fail(s, -rc, "%s/%s: truncate", s->dir, dst);
	}
	path_of(s, dst, sizeof(dst), ".snap");
	if (renameat(s->dirfd, src, s->dirfd, dst) < 0 || fsync(s->dirfd) < 0)
		return fail(s, errno, "%s/%s: rename to %s", s->dir, src, dst);
	return 0;
}

/* mkdir with mode 0700, and the parent synced so the new entry survives a crash. */
static int make_dir(const char *path)
{
	if (mkdir(path, 0700) < 0)
		return errno == EEXIST ? 0 : -errno;
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s", path);
	char *slash = strrchr(parent, '/');
	if (slash == parent)
		slash[1] = 0;
	else if (slash)
		*slash = 0;
	else
		snprintf(parent, sizeof(parent), ".");
	int fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = fsync(fd) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

int aggstore_lock_dir(const char *state_dir, char *err, size_t err_len)
{
	int rc = make_dir(state_dir);
	int fd = rc < 0 ? -1 : open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		rc = rc < 0 ? rc : -errno;
		snprintf(err, err_len, "state-dir %s: %s", state_dir, strerror(-rc));
		return rc;
	}
	/* the directory itself is locked, so a read-only one can be too; STATE-DIR/pid names the holder */
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/pid", state_dir);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		rc = -errno;
		char pid[32] = "";
		int pfd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		ssize_t n = pfd >= 0 ? read(pfd, pid, sizeof(pid) - 1) : 0;
		if (pfd >= 0)
			close(pfd);
		pid[n > 0 ? n : 0] = 0;
		pid[strcspn(pid, "\n")] = 0;
		if (rc == -EWOULDBLOCK)
			snprintf(err, err_len, "state-dir %s is in use by another process (pid %s)", state_dir,
				 pid[0] ? pid : "unknown");
		else
			snprintf(err, err_len, "state-dir %s: lock: %s", state_dir, strerror(-rc));
		close(fd);
		return rc;
	}
	int pfd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (pfd >= 0) {
		char pid[32];
		int n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
		if (write(pfd, pid, (size_t)n) != n)
			log_warn("state-dir %s: writing %s: %s", state_dir, path, strerror(errno));
		close(pfd);
	}
	return fd;
}

int aggstore_open(struct aggstore **out, const char *state_dir, const struct name *agg,
		  char *err, size_t err_len)
{
	struct aggstore *s = calloc(1, sizeof(*s));
	if (!s || !(s->dir = strdup(state_dir))) {
		free(s);
		snprintf(err, err_len, "out of memory");
		return -ENOMEM;
	}
	s->name = *agg;
	s->jfd = -1;
	nameset_init(&s->members);
	base_name(agg, s->base);

	int rc = make_dir(state_dir);
	if (rc < 0)
		rc = fail(s, -rc, "state-dir %s", state_dir);
	if (rc == 0) {
		s->dirfd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (s->dirfd < 0)
			rc = fail(s, errno, "state-dir %s", state_dir);
	} else {
		s->dirfd = -1;
	}
	if (rc == 0) {
		struct stat st;
		if (fstat(s->dirfd, &st) == 0 && (st.st_mode & 022))
			log_warn("state-dir %s is writable by others than its owner", state_dir);
		/* read-only (a mount, or a file system that went read-only on errors): versions
		 * held are served, new ones refused */
		s->read_only = faccessat(s->dirfd, ".", W_OK, AT_EACCESS) < 0;
		if (s->read_only)
			log_warn("aggregate %s: state-dir %s is read-only: versions held are kept, new ones refused",
				 s->base, state_dir);
		char tmp[sizeof(s->base) + 16];
		path_of(s, tmp, sizeof(tmp), ".snap.tmp");
		unlinkat(s->dirfd, tmp, 0);     /* an interrupted compaction's */
		path_of(s, tmp, sizeof(tmp), ".jnl.tmp");
		unlinkat(s->dirfd, tmp, 0);
		rc = history_roll_forward(s);
		if (rc == 0)
			rc = load(s);
		if (rc == 0 && !s->read_only && fsync(s->dirfd) < 0)   /* a journal just created */
			rc = fail(s, errno, "state-dir %s: fsync", state_dir);
	}
	if (rc < 0) {
		snprintf(err, err_len, "%s", s->err);
		aggstore_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

void aggstore_close(struct aggstore *s)
{
	if (!s)
		return;
	if (s->jfd >= 0)
		close(s->jfd);
	if (s->dirfd >= 0)
		close(s->dirfd);
	nameset_free(&s->members);
	free(s->recs);
	free(s->dir);
	free(s);
}

bool aggstore_version(const struct aggstore *s, uint32_t *serial)
{
	if (s->has_version)
		*serial = s->serial;
	return s->has_version;
}

const struct name *aggstore_name(const struct aggstore *s)
{
	return &s->name;
}

const struct nameset *aggstore_members(const struct aggstore *s)
{
	return &s->members;
}

const char *aggstore_error(const struct aggstore *s)
{
	return s->err;
}

void aggstore_stats(const struct aggstore *s, struct aggstore_stats *st)
{
	st->has_version = s->has_version;
	st->serial = s->serial;
	st->members = s->members.count;
	st->snapshot_bytes = s->snap_bytes;
	st->journal_bytes = s->jnl_bytes;
	st->journal_versions = (uint32_t)s->nrecs;
	st->oldest_serial = s->nrecs ? s->recs[0].from : s->serial;
	st->compactions = s->compactions;
	st->errors = s->errors;
	st->read_only = s->read_only;
}

int aggstore_diffs_open(struct aggstore *s, uint32_t from, struct aggstore_diffs *d)
{
	memset(d, 0, sizeof(*d));
	d->fd = -1;
	if (!s->has_version)
		return AGGSTORE_UNREACHABLE;
	if (from == s->serial || serial_gt(from, s->serial))
		return AGGSTORE_CURRENT;
	size_t i = 0;
	while (i < s->nrecs && s->recs[i].from != from)
		i++;
	if (i == s->nrecs)
		return AGGSTORE_UNREACHABLE;
	d->n = s->nrecs - i;
	d->recs = malloc(d->n * sizeof(*d->recs));
	if (!d->recs)
		return fail(s, ENOMEM, "aggregate %s", s->base);
	memcpy(d->recs, s->recs + i, d->n * sizeof(*d->recs));
	d->fd = fcntl(s->jfd, F_DUPFD_CLOEXEC, 0);
	if (d->fd < 0) {
		int e = errno;
		free(d->recs);
		d->recs = NULL;
		return fail(s, e, "aggregate %s: dup", s->base);
	}
	return AGGSTORE_DIFFS;
}

int aggstore_diffs_next(struct aggstore_diffs *d, struct aggstore_diff *out)
{
	if (d->next >= d->n)
		return 0;
	const struct aggstore_jrec *r = &d->recs[d->next];
	if (VEC_RESERVE(d->buf, d->cap, r->len) < 0)
		return -ENOMEM;
	size_t got = 0;
	while (got < r->len) {
		ssize_t n = pread(d->fd, d->buf + got, r->len - got, (off_t)(r->off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		got += (size_t)n;
	}
	/* checked again: the disk may have changed under us since open */
	struct wire_reader rr = wire_reader(d->buf, r->len);
	uint8_t type;
	struct wire_reader p;
	if (rec_read(&rr, &type, &p) != 1 || type != DIFF || wire_left(&rr) != 0 || !diff_check(p, out))
		return -EIO;
	d->next++;
	return 1;
}

void aggstore_diffs_close(struct aggstore_diffs *d)
{
	if (d->fd >= 0)
		close(d->fd);
	free(d->recs);
	free(d->buf);
	memset(d, 0, sizeof(*d));
	d->fd = -1;
}
