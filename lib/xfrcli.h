/*
 * Fetching an aggregate into its store (lib/aggstore.c) from a transfer
 * server, on a libuv loop: IXFR from the version held, AXFR when none is
 * held, and AXFR again when a diff does not apply (a gap in the versions,
 * a member to remove that is absent).  Each complete version received is
 * stored (fsync'ed) as it ends, so a broken connection keeps what came
 * whole.  The timeout is on progress (no byte for timeout_ms), never on
 * the whole transfer.  Each fetch is logged once: kind, why, versions,
 * bytes, time.
 */
#ifndef CR_XFRCLI_H
#define CR_XFRCLI_H

#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "aggstore.h"

struct xfrcli_result {
	int status;                     /* 0, or -1 (why says it) */
	char why[300];
	char kind[340];                 /* "IXFR", "AXFR", "AXFR (fallback: ...)", "IXFR answered as AXFR", "current" */
	bool had_version;
	uint32_t from, to;              /* held before, and after */
	unsigned versions;              /* stored by this fetch */
	uint64_t bytes;                 /* received, framing included, all attempts */
	double seconds;
};

typedef void (*xfrcli_done_fn)(void *ctx, const struct xfrcli_result *r);

struct xfrcli;

/*
 * Starts a fetch; done is called once, from the loop, unless cancelled.
 * The store must stay open until then.  0, or -1 out of memory.
 */
int xfrcli_fetch(struct xfrcli **out, uv_loop_t *loop, struct aggstore *store,
		 const struct sockaddr *server, unsigned timeout_ms, xfrcli_done_fn done, void *ctx);
/* Stops a fetch in progress without calling done (what was stored stays). */
void xfrcli_cancel(struct xfrcli *c);

#endif
