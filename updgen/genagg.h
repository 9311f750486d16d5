/*
 * nbrp-updgen's aggregates: generated names grouped into aggregates
 * agg1.SUFFIX .. aggA.SUFFIX, each a store (lib/agg/aggstore.c) in a private
 * temporary directory, served over IXFR/AXFR (lib/agg/xfrserv.c) so the router
 * under test fetches them as it would from a neighbouring router.
 *
 * Every aggregate starts at version 1.  A membership change makes the next
 * version of one aggregate: n new names added, or, when its last change
 * added names, those same names removed, so that it keeps its size and
 * every version differs from the one before by n names.
 */
#ifndef CR_GENAGG_H
#define CR_GENAGG_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "addr.h"
#include "aggstore.h"
#include "name.h"
#include "nameset.h"
#include "xfrserv.h"

/* Writes a new canonical wire name into out (NAME_MAX_WIRE bytes); returns its length. */
typedef size_t (*genagg_draw_fn)(void *ctx, uint8_t *out);

struct genagg {
	unsigned count;
	struct name suffix;
	char dir[4096];                 /* the private state directory; "" when none */
	struct aggstore **stores;
	struct namelist *added;         /* per aggregate: what its last change added */
	struct namelist empty;
	struct xfrserv *srv;
	char source[ENDPOINT_TEXT_MAX]; /* "ADDRESS PORT", as advertised */
	uint64_t changes, names_changed;
};

/*
 * Makes the private directory (mkdtemp under $TMPDIR, or /tmp) and opens
 * count empty stores in it.  0, or -1 with err set.
 */
int genagg_open(struct genagg *g, unsigned count, const struct name *suffix, char *err, size_t err_len);
/* Closes the stores and removes the directory; the server must be stopped and its handles closed. */
void genagg_close(struct genagg *g);

/* Stores members as version 1 of aggregate i.  0, or -1 with err set. */
int genagg_define(struct genagg *g, unsigned i, const struct nameset *members, char *err, size_t err_len);

/*
 * Starts serving every aggregate with cfg (the address, the port, 0 for
 * any, the access list); g->source is then where.  0, or -1 with err set.
 */
int genagg_serve(struct genagg *g, uv_loop_t *loop, const struct xfrserv_config *cfg, char *err, size_t err_len);
void genagg_stop(struct genagg *g);

/* The next version of aggregate i, n names apart from the current one (see above).  0, or -1 with err. */
int genagg_change(struct genagg *g, unsigned i, unsigned n, genagg_draw_fn draw, void *ctx,
		  char *err, size_t err_len);

/* Aggregate i's name in canonical wire form into out (NAME_MAX_WIRE bytes); returns its length. */
size_t genagg_wire(const struct genagg *g, unsigned i, uint8_t *out);
uint32_t genagg_version(const struct genagg *g, unsigned i);

#endif
