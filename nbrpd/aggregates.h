/*
 * Aggregates in nbrpd (docs/AGGREGATES.md, docs/NBRP.md "Aggregates"):
 * one store per aggregate in state-dir, the definitions this router
 * originates, fetching the versions peers offer, serving transfers, and
 * the members in inrpd's FIB.
 *
 * The RDE keeps an aggregate's routes like a name's; it tells this module
 * which version the routes offer (aggregates_offered), and hears back
 * through ops.stored when a version is stored and its members are in the
 * FIB, from which moment it advertises that version.  A router keeps
 * routing with the version it has while a newer one is fetched, and a
 * version offered while a fetch runs is fetched next (only the newest).
 */
#ifndef NBRPD_AGGREGATES_H
#define NBRPD_AGGREGATES_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "addr.h"
#include "config.h"
#include "name.h"
#include "nameset.h"
#include "route.h"
#include "xfrcli.h"

struct fibpush;
struct aggregates;

struct aggregates_ops {
	/* A version is stored, its members pushed to inrpd: peers may be told it.  members are
	 * the version's, for the call only (with signatures on, the RDE takes their digest). */
	void (*stored)(void *arg, const struct name *agg, uint32_t version, const struct nameset *members);
	/* The aggregate's ranked FIB routes (0: none), for the Updates carrying its members. */
	unsigned (*routes)(void *arg, const struct name *agg, struct route *out);
	void *arg;
};

/* Starts the transfer server if transfer-listen is set.  NULL with err set on failure. */
struct aggregates *aggregates_new(uv_loop_t *loop, const struct nbrpd_config *cfg,
				  const struct aggregates_ops *ops, char *err, size_t err_len);
/* The FIB channel, once open (NULL: none). */
void aggregates_set_fib(struct aggregates *a, struct fibpush *fib);
/*
 * The configuration in force (start, reload): the aggregates defined here
 * are read again (a changed definition becomes one new version), and the
 * transfer server follows transfer-listen and allow-transfer.  Returns the
 * number of definitions that could not be read (logged; they keep the
 * version they had).
 */
unsigned aggregates_configure(struct aggregates *a, const struct nbrpd_config *cfg);
/*
 * The RDE: an aggregate's routes offer this version from this source, and
 * only it is fetched (a reply ending at another is refused).  digest (not
 * NULL): the member digest valid routes signed for it, checked before the
 * version is stored.  whole: the version held is not what valid routes
 * sign (another digest, or a version they do not name): it is taken out of
 * service (inrpd, peers, transfers) and the version offered fetched AXFR.
 */
void aggregates_offered(struct aggregates *a, const struct name *agg, uint32_t version,
			const struct ip_endpoint *source, const uint8_t *digest, bool whole);
/* The members of the version stored (NULL: none). */
const struct nameset *aggregates_members(struct aggregates *a, const struct name *agg);
void aggregates_stop(struct aggregates *a);
void aggregates_free(struct aggregates *a);

/* The FIB channel's full sync: every aggregate's members, a slice at a time. */
struct aggregates_sync;
struct aggregates_sync *aggregates_sync_begin(struct aggregates *a);
/* Up to about budget members more; true when every aggregate was sent. */
bool aggregates_sync_step(struct aggregates *a, struct aggregates_sync *s, struct fibpush *fib, unsigned budget);
void aggregates_sync_end(struct aggregates_sync *s);

/* What `show aggregates` prints. */
struct aggregate_view {
	struct name name;
	bool local;                     /* defined here */
	bool has_version;
	uint32_t version, members;
	uint64_t snapshot_bytes, journal_bytes;
	uint32_t journal_versions;
	uint64_t compactions;           /* since the store was opened */
	uint64_t store_errors;          /* writes and compactions that failed */
	bool read_only;                 /* the state-dir was read-only at open */
	bool offered;                   /* learned: what the routes offer */
	uint32_t offered_version;
	struct ip_endpoint offered_source;
	bool fetching;
	uint64_t fetches, failures;
	/* failures ended by a limit: fetch-max-names, fetch-max-bytes, fetch-idle-timeout, fetch-time-limit */
	uint64_t over_names, over_bytes, idle_cuts, time_cuts;
	/* refused before storing: not the version offered, not the members signed */
	uint64_t wrong_version, digest_mismatch;
	bool discarded;                 /* the version held is out of service, fetched whole */
	uint64_t discards;
	bool has_last;                  /* the last fetch */
	struct xfrcli_result last;
	uint64_t last_unix;
	const char *error;              /* the store's last error, "" if none */
};
typedef void (*aggregates_walk_fn)(const struct aggregate_view *v, void *arg);
/* In name order. */
void aggregates_walk(struct aggregates *a, aggregates_walk_fn fn, void *arg);
bool aggregates_view(struct aggregates *a, const struct name *agg, struct aggregate_view *out);

struct aggregates_stats {
	uint64_t aggregates, members;
	uint64_t fetches, fetch_failures, fetch_bytes;
	uint64_t fetch_over_names, fetch_over_bytes, fetch_idle, fetch_time;   /* failures by limit */
	uint64_t fetch_wrong_version, fetch_digest_mismatch, discards;         /* versions refused, thrown away */
	uint64_t store_errors;
	bool serving;
	uint16_t transfer_port;
	uint64_t served_axfr, served_ixfr, served_bytes, refused;
	/* transfer connections closed: outside allow-transfer, over the bound, idle, open too long */
	uint64_t closed_acl, closed_full, closed_idle, closed_time;
};
void aggregates_stats(struct aggregates *a, struct aggregates_stats *out);

#endif
