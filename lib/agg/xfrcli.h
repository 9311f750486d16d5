/*
 * Fetching an aggregate into its store (lib/agg/aggstore.c) from a transfer
 * server, on a libuv loop: IXFR from the version held, AXFR when none is
 * held, and AXFR again when a diff does not apply (a gap in the versions,
 * a member to remove that is absent).  Each complete version received is
 * stored (fsync'ed) as it ends, so a broken connection keeps what came
 * whole.  Limits (struct xfrcli_limits): a fetch ends when no byte came
 * for idle_ms, or when it has run for time_ms; a reply with more member
 * records than max_names, or more bytes than max_bytes (all attempts
 * together), is cut off while it streams, before its version is stored,
 * and so is a diff that would take the set over max_names.  Each fetch
 * is logged once: kind, why, versions, bytes, time.
 *
 * A fetch for a version a route offers (struct xfrcli_want) takes that
 * version and no other: a reply whose final serial is another is refused
 * at its first SOA, before anything is stored.  With the member digest
 * the version was signed with, the set is built in memory (an IXFR's diffs
 * applied to a copy of the set held) and stored, as one version, only if
 * its digest is the signed one.
 */
#ifndef CR_XFRCLI_H
#define CR_XFRCLI_H

#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "aggstore.h"
#include "xfr.h"

struct xfrcli_limits {
	uint64_t max_names;             /* 0: no cap */
	uint64_t max_bytes;             /* 0: no cap */
	unsigned idle_ms;               /* 0: 10000 */
	unsigned time_ms;               /* 0: no limit */
};

/* Which limit ended a fetch, or which check refused its version. */
enum xfrcli_cut {
	XFRCLI_CUT_NONE, XFRCLI_CUT_NAMES, XFRCLI_CUT_BYTES, XFRCLI_CUT_IDLE, XFRCLI_CUT_TIME,
	XFRCLI_CUT_VERSION,             /* not the version asked for */
	XFRCLI_CUT_DIGEST,              /* not the members signed: member digest mismatch */
	XFRCLI_CUT_TSIG,                /* a reply whose TSIG does not verify */
};
#define XFRCLI_CUTS (XFRCLI_CUT_TSIG + 1)

/* What a route offers: exactly this version, with these members if digest is set. */
struct xfrcli_want {
	uint32_t version;
	const uint8_t *digest;          /* NULL, or attest_member_digest's 32 bytes */
	bool whole;                     /* AXFR whatever is held (what is held is not to be built on) */
};

struct xfrcli_result {
	int status;                     /* 0, or -1 (why says it) */
	enum xfrcli_cut cut;            /* with -1: the limit that ended it, if one did */
	char why[300];
	char kind[340];                 /* "IXFR", "AXFR", "AXFR (fallback: ...)", "IXFR answered as AXFR", "current" */
	bool had_version;
	uint32_t from, to;              /* held before, and after */
	uint32_t refresh, retry;        /* a zone's: its SOA's timers (seconds) */
	unsigned versions;              /* stored by this fetch */
	uint64_t bytes;                 /* received, framing included, all attempts */
	double seconds;
};

typedef void (*xfrcli_done_fn)(void *ctx, const struct xfrcli_result *r);

struct xfrcli;

/*
 * Starts a fetch (want NULL: whatever version the server has) from local
 * (NULL: the kernel's choice of address; a port of 0: any); done is
 * called once, from the loop, unless cancelled.  The store must stay open
 * until then.  0, or -1 out of memory.
 */
int xfrcli_fetch(struct xfrcli **out, uv_loop_t *loop, struct aggstore *store, const struct sockaddr *server,
		 const struct sockaddr *local, const struct xfrcli_limits *lim, const struct xfrcli_want *want,
		 xfrcli_done_fn done, void *ctx);
/*
 * A zone other than an aggregate (a policy zone), fetched for the caller:
 * IXFR from serial when has_serial, else AXFR; the records go to ops (the
 * reader's rr() callback, begin() and end()); an ops callback returning
 * XFRCLI_NOT_APPLIED says a diff does not apply, and the fetch goes on by
 * AXFR.  With a key, the query is signed and every reply verified (TSIG);
 * nothing is taken from a reply that does not verify.  The result's to
 * is the serial the reply ended at (when it succeeded).
 */
#define XFRCLI_NOT_APPLIED (-2)
struct xfrcli_zone {
	struct name zone;
	bool has_serial;
	uint32_t serial;
	const struct xfr_in_ops *ops;
	void *ctx;
	const struct tsig_key *key;     /* NULL: unsigned */
};
int xfrcli_fetch_zone(struct xfrcli **out, uv_loop_t *loop, const struct xfrcli_zone *z,
		      const struct sockaddr *server, const struct sockaddr *local, const struct xfrcli_limits *lim,
		      xfrcli_done_fn done, void *ctx);
/* Stops a fetch in progress without calling done (what was stored stays). */
void xfrcli_cancel(struct xfrcli *c);

#endif
