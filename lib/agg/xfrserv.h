/*
 * Serving aggregates as DNS zone transfers (lib/agg/xfr.c) on a libuv loop.
 *
 * TCP (RFC 7766 framing): AXFR, IXFR and SOA queries, several in turn on
 * one connection; a transfer's messages are written one at a time, the
 * next when the previous has gone out, so a slow reader holds one 64 KiB
 * message, not the aggregate.  UDP: SOA queries, and IXFR answered with the
 * current SOA alone (RFC 1995 2: the client then asks over TCP); AXFR over
 * UDP is NOTIMP.
 *
 * A TCP connection from outside allow-transfer is closed as soon as it is
 * accepted, before a byte is read, and never takes one of the
 * max_connections slots; a UDP query from outside gets REFUSED.  An
 * aggregate not served gets NOTAUTH; one with no version yet, SERVFAIL.
 * At most max_transfers run at once (REFUSED beyond).  A connection that
 * makes no progress (no query read, no message taken) for idle_timeout_ms
 * is closed, and so is one open for time_limit_ms, whatever it does: a
 * client trickling bytes holds a slot for a bounded time.  Each transfer
 * is logged once: kind, versions, records, bytes, time.
 */
#ifndef CR_XFRSERV_H
#define CR_XFRSERV_H

#include <stdint.h>
#include <uv.h>

#include "prefix.h"
#include "aggstore.h"
#include "name.h"

struct xfrserv_config {
	int family;                     /* AF_INET or AF_INET6 */
	uint8_t addr[16];
	uint16_t port;                  /* 0: any; see xfrserv_port */
	const struct prefix *acl;   /* copied */
	unsigned nacl;
	unsigned max_transfers;         /* 0: 8 */
	unsigned max_connections;       /* 0: 64 */
	unsigned idle_timeout_ms;       /* 0: 10000 */
	unsigned time_limit_ms;         /* a connection's whole life; 0: 600000 */
};

/* The store serving an aggregate, or NULL if it is not served here. */
typedef struct aggstore *(*xfrserv_lookup_fn)(void *ctx, const struct name *agg);

struct xfrserv_stats {
	uint64_t axfr, ixfr, ixfr_full, ixfr_current, soa;
	uint64_t refused_acl, refused_busy, notauth, servfail, formerr, notimp;
	uint64_t aborted;               /* transfers cut short */
	/* TCP connections closed: outside allow-transfer (at accept), over max_connections,
	 * idle for idle_timeout_ms, open for time_limit_ms */
	uint64_t closed_acl, closed_full, closed_idle, closed_time;
	uint64_t bytes;                 /* transfer messages sent */
	unsigned active;                /* transfers running now */
};

struct xfrserv;

/* Binds TCP and UDP and starts serving.  0, or -1 with err set. */
int xfrserv_start(struct xfrserv **out, uv_loop_t *loop, const struct xfrserv_config *cfg,
		  xfrserv_lookup_fn lookup, void *ctx, char *err, size_t err_len);
uint16_t xfrserv_port(const struct xfrserv *s);
void xfrserv_stats(const struct xfrserv *s, struct xfrserv_stats *st);
/* Closes everything; the memory goes once the loop has run the close callbacks. */
void xfrserv_stop(struct xfrserv *s);

#endif
