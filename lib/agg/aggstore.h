/*
 * The aggregate store: one aggregate's versioned member set, crash-safe on
 * disk (docs/AGGREGATES.md, "On disk").
 *
 * Each aggregate is two files in the state directory: a snapshot (the whole
 * set at one version) and a journal (one record per version: the names it
 * removed and added).  Every record carries an XXH3 checksum of its header
 * and payload.  A version is in the journal and fdatasync'ed before
 * aggstore_apply returns, so a version reported stored survives a crash at
 * any moment.  Opening after a crash gives the last complete version: a
 * torn or corrupt journal tail is found by its checksum and cut off with
 * one log line.  The snapshot is only ever replaced whole (a temporary
 * file, fsync, rename, fsync of the directory).
 *
 * The journal is bounded: once it outgrows twice the snapshot (and 64 KiB)
 * the set is written as a new snapshot and the journal keeps only the
 * newest versions that fit in the snapshot's size, for IXFR.  A failed
 * compaction leaves a longer but valid journal, so changes are never
 * refused for its sake.
 *
 * Versions are SOA serials compared with RFC 1982 arithmetic: a new version
 * must be greater than the current one, across wraparound.
 *
 * One thread at a time; one process per state directory (aggstore_lock_dir).
 */
#ifndef CR_AGGSTORE_H
#define CR_AGGSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "name.h"
#include "nameset.h"

/* RFC 1982: a > b; false for equal serials and for those 2^31 apart. */
static inline bool serial_gt(uint32_t a, uint32_t b)
{
	return a != b && (uint32_t)(a - b) < 0x80000000u;
}

#define AGGSTORE_JOURNAL_MIN (64u * 1024)      /* no compaction below this */

struct aggstore;

/*
 * Opens (creating what is missing) the aggregate agg in state_dir.  The
 * directory is created with mode 0700 if absent; its parent must exist.
 * A read-only state_dir opens with the versions it holds and refuses new
 * ones (-EROFS).
 * A snapshot that fails its checksums is moved aside (NAME.snap.bad) with
 * a log line, and the store opens holding no version (to be fetched
 * whole).  Returns 0, or -errno with a message in err (e.g. "state-dir
 * /x: No such file or directory").
 */
int aggstore_open(struct aggstore **out, const char *state_dir, const struct name *agg,
		  char *err, size_t err_len);
void aggstore_close(struct aggstore *s);
/*
 * Creates state_dir (0700, its parent synced) if missing and locks it for
 * this process (flock on the directory; state_dir/pid records our pid):
 * one process per state directory.  Returns the lock's descriptor, to be
 * kept open for the process's life, or -errno with err set ("state-dir /x
 * is in use by another process (pid 123)").
 */
int aggstore_lock_dir(const char *state_dir, char *err, size_t err_len);
/* The aggregates state_dir holds (a snapshot each): fn for each name.  0 (also when the
 * directory does not exist yet), or -errno. */
int aggstore_list(const char *state_dir, void (*fn)(void *ctx, const struct name *agg), void *ctx);

/* The current version: false when the store holds none yet. */
bool aggstore_version(const struct aggstore *s, uint32_t *serial);
const struct name *aggstore_name(const struct aggstore *s);
const struct nameset *aggstore_members(const struct aggstore *s);
/* The last error, as text, for the caller's log and control replies. */
const char *aggstore_error(const struct aggstore *s);

struct aggstore_stats {
	bool has_version;
	uint32_t serial;
	uint32_t members;
	uint64_t snapshot_bytes;
	uint64_t journal_bytes;
	uint32_t journal_versions;      /* diffs held for IXFR */
	uint32_t oldest_serial;         /* the oldest version a diff starts from */
	uint64_t compactions;           /* since open */
	uint64_t errors;                /* writes, compactions that failed since open */
	bool read_only;                 /* the state-dir was read-only at open: no new version */
};
void aggstore_stats(const struct aggstore *s, struct aggstore_stats *st);

/*
 * Stores one new version: from must be the current version and to greater
 * (RFC 1982).  Every name in dels must be a member, every name in adds
 * must not be one once dels are removed, neither list with duplicates
 * (the diff does not apply otherwise: -ESTALE, for an IXFR client a reason
 * to fetch AXFR).  Returns 0 once the version is on disk (fdatasync), or
 * -errno (-ENOSPC for a full disk) with the store unchanged, in memory and
 * on disk, and still usable.
 */
int aggstore_apply(struct aggstore *s, uint32_t from, uint32_t to,
		   const struct namelist *dels, const struct namelist *adds);

/*
 * Makes members the set at version serial (an AXFR, or a definition read
 * from a file).  With a current version older than serial this is the
 * diff between the two, stored as one version (so it can be served as an
 * IXFR); otherwise (no version, or one not older) a new history starts
 * with a snapshot, which replaces the journal only once it is on disk.
 * 0 or -errno as for aggstore_apply.
 */
int aggstore_replace(struct aggstore *s, uint32_t serial, const struct nameset *members);

/*
 * The versions between from and the current one, for IXFR: a cursor over
 * the journal's diffs, valid across later changes and compactions (it
 * holds its own descriptor of the journal).
 */
enum aggstore_diffs_result {
	AGGSTORE_DIFFS = 0,             /* the cursor has at least one diff */
	AGGSTORE_CURRENT = 1,           /* from is the current version (or newer) */
	AGGSTORE_UNREACHABLE = 2,       /* the journal does not reach back to from */
};

struct aggstore_diff {
	uint32_t from, to;
	const uint8_t *dels, *adds;     /* namelist entries, [len][wire] */
	size_t dels_len, adds_len;
	uint32_t ndels, nadds;
};

struct aggstore_jrec;
struct aggstore_diffs {
	int fd;
	struct aggstore_jrec *recs;
	size_t n, next;
	uint8_t *buf;
	size_t cap;
};

/* Returns an aggstore_diffs_result, or -errno; only AGGSTORE_DIFFS needs a close. */
int aggstore_diffs_open(struct aggstore *s, uint32_t from, struct aggstore_diffs *d);
/* 1 with *out filled (valid until the next call), 0 after the last, -EIO on a bad read. */
int aggstore_diffs_next(struct aggstore_diffs *d, struct aggstore_diff *out);
void aggstore_diffs_close(struct aggstore_diffs *d);

/*
 * The file formats, for aggstore.c and its fuzz target: whole buffers as
 * read from disk.
 */
struct aggstore_jrec {
	uint32_t from, to;
	uint64_t off;                   /* of the record's header in the journal */
	uint32_t len;                   /* header included */
};

/*
 * A snapshot: fills members (emptied first) and *serial.  0, or -1 with
 * *why set (any damage: the file is replaced whole, so it is all or none).
 * agg, when not NULL, must be the aggregate named in the file.
 */
int aggstore_snapshot_parse(const uint8_t *buf, size_t len, const struct name *agg,
			    struct nameset *members, uint32_t *serial, const char **why);

/*
 * A journal: the longest prefix of whole, checksummed, well-formed records
 * each starting where the previous ended (from = previous to, to greater).
 * Returns that prefix's length; *recs (malloc'd, caller frees) and *n
 * describe its records; *why says what stopped the scan when the prefix
 * is shorter than len.  Returns (size_t)-1 when out of memory.
 */
size_t aggstore_journal_scan(const uint8_t *buf, size_t len, struct aggstore_jrec **recs,
			     size_t *n, const char **why);

/* A diff record's payload, checked by the scan, as a diff. */
void aggstore_diff_from_record(const uint8_t *rec, struct aggstore_diff *d);

#endif
