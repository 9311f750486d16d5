/*
 * Aggregates as DNS zones, for zone transfers (docs/AGGREGATES.md):
 *
 *     agg.   0 IN SOA agg. . SERIAL 3600 600 604800 0   (SERIAL = version)
 *     agg.   0 IN PTR member1.
 *     agg.   0 IN PTR member2.
 *     ...
 *
 * Server side: parsing a transfer query (AXFR, IXFR with the client's SOA
 * in the authority section, or SOA) and writing the reply messages from an
 * aggregate store into the caller's buffer, one message at a time, with no
 * allocation per record: AXFR (RFC 5936: SOA, members, SOA), IXFR (RFC
 * 1995: SOA new, then per version SOA old, removed members, SOA new, added
 * members, and SOA new last; the AXFR form when the journal does not reach
 * back to the client's version; the lone SOA when the client is current).
 *
 * Client side: a strict, incremental reader of AXFR/IXFR replies from a
 * TCP stream cut anywhere (2-byte length framing, RFC 7766), handing the
 * full set or each diff to callbacks; every malformation is an error with
 * a reason.
 */
#ifndef CR_XFR_H
#define CR_XFR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aggstore.h"
#include "dnsrr.h"
#include "name.h"
#include "nameset.h"
#include "tsig.h"

#define DNS_RCODE_NOTAUTH 9
#define XFR_SOA_REFRESH 3600
#define XFR_SOA_RETRY   600
#define XFR_SOA_EXPIRE  604800
#define XFR_SOA_MINIMUM 0

struct xfr_query {
	uint16_t id;
	uint16_t qtype;                         /* DNS_TYPE_AXFR, _IXFR or _SOA */
	struct name qname;                      /* canonical */
	uint8_t qname_orig[NAME_MAX_WIRE];      /* as received */
	bool rd;
	bool has_serial;                        /* IXFR: the client's version */
	uint32_t serial;
	bool has_edns;
};

/*
 * Parses a query for a transfer or an aggregate's SOA: 0, -1 when it is no
 * query at all (drop it), or the rcode to answer with (FORMERR, NOTIMP for
 * another opcode or qtype; header fields and, if it parsed, the question
 * are then valid for xfr_error_reply).
 */
int xfr_query_parse(const uint8_t *pkt, size_t len, struct xfr_query *q, bool *has_question);

/* A reply carrying only rcode (REFUSED, NOTAUTH, FORMERR...); its length, 0 if cap is too small. */
size_t xfr_error_reply(const struct xfr_query *q, bool with_question, unsigned rcode, uint8_t *buf, size_t cap);

enum xfr_out_kind {
	XFR_OUT_AXFR,           /* asked for AXFR */
	XFR_OUT_IXFR,           /* diffs from the client's version */
	XFR_OUT_IXFR_FULL,      /* asked for IXFR, the journal does not reach back: AXFR form */
	XFR_OUT_CURRENT,        /* asked for IXFR, the client is current: one SOA */
	XFR_OUT_SOA,            /* an SOA query */
};

/* The reply being written: what the server keeps per transfer. */
struct xfr_out {
	enum xfr_out_kind kind;
	uint16_t id;
	uint16_t qtype;
	uint8_t qname[NAME_MAX_WIRE];
	uint8_t qname_len;
	bool rd, edns;
	uint32_t serial;
	int step;
	struct namelist members;        /* AXFR: the set when the transfer began */
	struct aggstore_diffs diffs;
	struct aggstore_diff diff;
	const uint8_t *list;            /* the names being written */
	size_t list_len, list_pos;
	int error;                      /* -errno when the journal could not be read */
	uint64_t bytes, messages, records;
};

/*
 * Starts the reply to q (an AXFR, IXFR or SOA query for the aggregate s
 * holds, which has a version).  The members or journal diffs are taken
 * now: later changes to s do not affect this reply.  0 or -errno.
 */
int xfr_out_start(struct xfr_out *x, struct aggstore *s, const struct xfr_query *q);
/*
 * Writes the next message into buf (cap at least 512; 65535 is best over
 * TCP): its length, or 0 when the reply is complete or failed (x->error).
 */
size_t xfr_out_next(struct xfr_out *x, uint8_t *buf, size_t cap);
void xfr_out_free(struct xfr_out *x);
const char *xfr_out_kind_name(enum xfr_out_kind k);


/* The client: what a reply delivers, through callbacks. */
struct xfr_in_ops {
	/* a full set (AXFR form) or one diff starts */
	int (*begin)(void *ctx, bool full);
	/* a member: added (full sets, a diff's additions) or removed */
	int (*name)(void *ctx, bool add, const uint8_t *wire, uint8_t len);
	/* the set at version to (full), or the diff from -> to, is complete */
	int (*end)(void *ctx, bool full, uint32_t from, uint32_t to);
	/*
	 * Set for a zone other than an aggregate (a policy zone): every
	 * record at or below the zone but its apex's SOA comes here, of any
	 * type, instead of to name(); msg is the message it is in.
	 */
	int (*rr)(void *ctx, bool add, const uint8_t *msg, size_t len, const struct dns_rr *rr,
		  const struct name *owner);
};

enum xfr_in_result {
	XFR_IN_MORE = 0,        /* feed more */
	XFR_IN_DONE = 1,        /* the reply is complete */
	XFR_IN_ERROR = -1,      /* x->err says why; nothing more is read */
};

enum xfr_in_form { XFR_IN_NONE, XFR_IN_FULL, XFR_IN_DIFFS, XFR_IN_CURRENT };

/* Which cap ended a reply (xfr_in_limit). */
enum xfr_in_over { XFR_IN_UNDER, XFR_IN_OVER_NAMES, XFR_IN_OVER_BYTES };

struct xfr_in {
	uint16_t id;
	uint16_t qtype;
	struct name agg;
	bool have_serial;
	uint32_t held;
	const struct xfr_in_ops *ops;
	void *ctx;

	uint8_t *msg;                   /* one message being reassembled */
	size_t need, have;              /* need: 0 while reading the length */
	uint8_t lenbuf[2];

	int state;
	uint32_t new_serial, from, to;
	uint32_t soa_refresh, soa_retry;        /* the new SOA's timers */
	enum xfr_in_form form;
	bool gap;                       /* the error: diffs that do not chain from what we hold */
	uint64_t bytes, messages, records;
	uint64_t names;                 /* member records: a full set's, a diff's removed and added */
	uint64_t max_names, max_bytes;  /* 0: no cap */
	enum xfr_in_over over;          /* the error: a cap reached */
	struct tsig_stream *tsig;       /* NULL: unsigned; else every message checked by it */
	bool tsig_failed;               /* the error: a TSIG that does not verify */
	char err[256];
};

/*
 * Prepares to read the reply to the query with id for agg: AXFR, or IXFR
 * from held.  0, or -1 out of memory.
 */
int xfr_in_init(struct xfr_in *x, uint16_t id, const struct name *agg, uint16_t qtype, uint32_t held,
		const struct xfr_in_ops *ops, void *ctx);
void xfr_in_free(struct xfr_in *x);
/*
 * Caps on the reply (0: none): more member records than max_names, or a
 * message that would take the bytes read (framing included) over
 * max_bytes, is an error before the names reach the callbacks or the
 * message is read.
 */
void xfr_in_limit(struct xfr_in *x, uint64_t max_names, uint64_t max_bytes);
/* The reply must be signed: each message verified by ts (tsig_stream_init with the query's MAC). */
void xfr_in_tsig(struct xfr_in *x, struct tsig_stream *ts);
/* Bytes from the TCP stream, as received. */
int xfr_in_feed(struct xfr_in *x, const uint8_t *data, size_t len);
/* One whole message (without the length prefix). */
int xfr_in_message(struct xfr_in *x, const uint8_t *msg, size_t len);

/* Writes the AXFR or IXFR query (with the SOA of held for IXFR); its length, 0 if cap is too small. */
size_t xfr_query_write(uint16_t id, const struct name *agg, uint16_t qtype, uint32_t held,
		       uint8_t *buf, size_t cap);

#endif
