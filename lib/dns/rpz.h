/*
 * Response Policy Zones (docs/RPZ.md): a policy zone's records as its
 * transfers leave them, and the rule table compiled from them.
 *
 * The zone (struct rpz_zone) is the writer's copy, one record per owner,
 * type and RDATA, normalised (owner in canonical case, a CNAME target
 * uncompressed), so an IXFR's removals find what its additions put in.
 * Every record is kept, good or bad: the classification happens when the
 * table is compiled, so a bad record counts once and a diff that removes
 * it still applies.
 *
 * QNAME triggers only (RFC draft-vixie-dnsop-dns-rpz, section 4.1):
 *
 *     bad.example.ZONE     CNAME .              NXDOMAIN
 *     *.bad.example.ZONE   CNAME *.             NODATA
 *     ok.bad.example.ZONE  CNAME rpz-passthru.  PASSTHRU
 *     x.example.ZONE       CNAME rpz-drop.      DROP (no answer)
 *     y.example.ZONE       CNAME rpz-tcp-only.  TC over UDP
 *     z.example.ZONE       CNAME garden.example.  local data: that CNAME
 *     w.example.ZONE       A 192.0.2.1          local data: A, AAAA, TXT
 *
 * The table (struct rpz_table) is immutable once built: readers share it
 * with no lock, the owner publishes a new one by RCU.  An IXFR's table is
 * made from the one before and the diff (rpz_table_apply), in proportion
 * to the diff; rpz_table_compact folds the diffs into one set again, off
 * the writer's loop.  An exact trigger
 * beats a wildcard, and a longer wildcard a shorter one.  A lookup hashes
 * the query name once for the exact triggers and once per suffix whose
 * label count some wildcard has (a mask says which).
 */
#ifndef CR_RPZ_H
#define CR_RPZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dnsrr.h"
#include "name.h"

enum rpz_action {
	RPZ_NXDOMAIN,
	RPZ_NODATA,
	RPZ_PASSTHRU,
	RPZ_DROP,
	RPZ_TCP_ONLY,
	RPZ_LOCAL,              /* the rule's records: a CNAME, or A/AAAA/TXT */
	RPZ_ACTIONS
};
const char *rpz_action_name(enum rpz_action a);

/* The writer's copy of one policy zone. */
struct rpz_zone;
struct rpz_zone *rpz_zone_new(const struct name *apex);
void rpz_zone_free(struct rpz_zone *z);
const struct name *rpz_zone_apex(const struct rpz_zone *z);
uint64_t rpz_zone_records(const struct rpz_zone *z);
/* Empties it (a full transfer starts). */
void rpz_zone_clear(struct rpz_zone *z);
/*
 * The changes one transfer makes to a zone held: undone if the transfer
 * fails, compiled into the next table (rpz_table_apply) and written to
 * the journal (rpz_diff_dump) if it ends well.
 */
struct rpz_diff;
struct rpz_diff *rpz_diff_new(void);
void rpz_diff_free(struct rpz_diff *d);
size_t rpz_diff_changes(const struct rpz_diff *d);
/* Puts z back as it was before d's changes, which are forgotten. */
void rpz_diff_undo(struct rpz_zone *z, struct rpz_diff *d);

/*
 * A record from a transfer, its owner already read (canonical) and at or
 * below the apex; msg is the message (a CNAME target may point into it).
 * add puts it in (a repeat is one record), else it is taken out; the
 * change is recorded in d unless d is NULL.  Returns 0, 1 when it was
 * absent (a removal that does not apply), -1 when its RDATA does not
 * decode (why says so), -2 out of memory.
 */
int rpz_zone_change(struct rpz_zone *z, bool add, const uint8_t *msg, size_t msg_len,
		    const struct dns_rr *rr, const struct name *owner, struct rpz_diff *d, const char **why);
/* A copy (NULL: out of memory). */
struct rpz_zone *rpz_zone_copy(const struct rpz_zone *z);

/* Every record, for a file: walk with *pos from 0; false at the end. */
bool rpz_zone_walk(const struct rpz_zone *z, size_t *pos, struct name *owner, uint16_t *type, uint32_t *ttl,
		   const uint8_t **rdata, uint16_t *rdlen);
/* Puts a record back as rpz_zone_walk gave it (a file read at start). 0, -1 out of memory. */
int rpz_zone_put(struct rpz_zone *z, const struct name *owner, uint16_t type, uint32_t ttl,
		 const uint8_t *rdata, uint16_t rdlen);

/*
 * The zone as a file's contents, for its last good copy: a magic, the
 * apex, the serial and SOA timers given, the copy's epoch, every record,
 * and an XXH3 of all that.  rpz_zone_dump: a malloc'd buffer (NULL out of
 * memory).  rpz_zone_undump: the zone read back into z (emptied first;
 * its apex must be the file's); 0, or -1 with why (nothing kept then).
 */
struct rpz_dump_head {
	uint32_t serial, refresh, retry;
	uint64_t epoch;                 /* random per copy: its journal names it */
};
uint8_t *rpz_zone_dump(const struct rpz_zone *z, const struct rpz_dump_head *h, size_t *len);
int rpz_zone_undump(struct rpz_zone *z, const uint8_t *buf, size_t len, struct rpz_dump_head *h, const char **why);

/*
 * The journal beside a copy: a head naming the copy's epoch, then one
 * entry per IXFR applied since (its length, serials from and to, the SOA
 * timers, each change, an XXH3), appended whole.  rpz_diff_dump: the
 * entry for d (from's serial, to's serial and timers), malloc'd.
 * rpz_journal_replay: the entries of buf applied to z in turn from h's
 * serial (h is the copy's and becomes the last entry's); 0 all applied,
 * 1 stopped at an entry that is torn, damaged or does not follow (why;
 * the ones before it applied, *good where they end: the file is to be cut
 * there), -1 not the journal of h's epoch (nothing applied).
 */
#define RPZ_JOURNAL_HEAD 24
void rpz_journal_head(uint8_t out[RPZ_JOURNAL_HEAD], uint64_t epoch);
uint8_t *rpz_diff_dump(const struct rpz_diff *d, const struct rpz_dump_head *from, const struct rpz_dump_head *to,
		       size_t *len);
int rpz_journal_replay(struct rpz_zone *z, const uint8_t *buf, size_t len, struct rpz_dump_head *h,
		       size_t *good, unsigned *entries, const char **why);

/* One record the table left out, for the log. */
typedef void (*rpz_bad_fn)(void *arg, const struct name *owner, uint16_t type, const char *why);

struct rpz_table;
struct rpz_table_stats {
	uint64_t rules;                 /* triggers in the table */
	uint64_t by_action[RPZ_ACTIONS];
	uint64_t wildcards;
	uint64_t bad;                   /* records left out */
	uint64_t ignored;               /* the apex's SOA and NS */
};
/*
 * Compiles the zone's rules; bad records are skipped, each told to bad
 * (may be NULL).  NULL out of memory.
 */
struct rpz_table *rpz_table_build(const struct rpz_zone *z, rpz_bad_fn bad, void *arg);
/*
 * The table after d: t's, with the owners d changed compiled again from z
 * (which d was applied to); t is left as it is.  NULL out of memory.
 */
struct rpz_table *rpz_table_apply(const struct rpz_table *t, const struct rpz_zone *z, const struct rpz_diff *d,
				  rpz_bad_fn bad, void *arg);
/* Rules the diffs since the last compaction hold (0: none). */
size_t rpz_table_delta(const struct rpz_table *t);
/*
 * The same rules as one set, from t alone (any thread, while t is held);
 * NULL out of memory.
 */
struct rpz_table *rpz_table_compact(const struct rpz_table *t);
/* Another holder of t; tables are taken and freed on the writer's thread only. */
struct rpz_table *rpz_table_ref(struct rpz_table *t);
void rpz_table_free(struct rpz_table *t);
const struct rpz_table_stats *rpz_table_stats(const struct rpz_table *t);

struct rpz_hit {
	enum rpz_action action;
	bool wildcard;
	uint32_t ttl;                   /* the rule's smallest TTL */
	const uint8_t *data;            /* RPZ_LOCAL: records, rpz_data_next() */
	uint32_t data_len;
};
/* The rule for qname (canonical); false when none.  A reader: no lock, no allocation. */
bool rpz_table_lookup(const struct rpz_table *t, const struct name *qname, struct rpz_hit *hit);
/* A local-data rule's records in turn: false at the end. */
bool rpz_data_next(const struct rpz_hit *hit, size_t *pos, uint16_t *type, uint32_t *ttl,
		   const uint8_t **rdata, uint16_t *rdlen);

#endif
