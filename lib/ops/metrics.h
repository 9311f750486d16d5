/*
 * The /metrics endpoint both daemons serve to Prometheus:
 *
 *     metrics 127.0.0.1 port 9153;     off unless given
 *     metrics-allow 192.0.2.0/24;      who may scrape (default: loopback)
 *
 * libmicrohttpd serves HTTP from a thread of its own, so a slow or
 * hostile scraper never holds up a query or an UPDATE.  The daemons' state
 * belongs to their libuv loop, so the HTTP thread does not read it: it
 * wakes the loop (uv_async), the loop writes the whole exposition text in
 * one callback between its other events (a consistent snapshot, read with
 * the loop's own accessors), and the HTTP thread waits for it at most
 * METRICS_WAIT_MS before answering 503.  The loop pays for a scrape only
 * when one comes; nothing is published on a timer.
 */
#ifndef CR_METRICS_H
#define CR_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prefix.h"

struct conf_stmt;
struct prom;
struct uv_loop_s;

#define METRICS_MAX_ALLOW 64
#define METRICS_WAIT_MS   2000          /* for the loop to write the text */

struct metrics_config {
	bool enabled;
	int family;
	uint8_t addr[16];
	uint16_t port;
	unsigned nallow;
	struct prefix allow[METRICS_MAX_ALLOW];
	bool seen_listen, seen_allow;
};

/* Config keywords: "metrics ADDRESS port N" and "metrics-allow PREFIX" (repeatable). */
int metrics_conf_listen(const struct conf_stmt *s, struct metrics_config *m, char *err, size_t err_len);
int metrics_conf_allow(const struct conf_stmt *s, struct metrics_config *m, char *err, size_t err_len);
/* After the file: loopback when no metrics-allow was given. */
void metrics_conf_finish(struct metrics_config *m);
bool metrics_config_equal(const struct metrics_config *a, const struct metrics_config *b);
/* "127.0.0.1 port 9153" */
const char *metrics_config_format(const struct metrics_config *m, char *buf, size_t len);

/* Writes the whole text; runs on the loop thread. */
typedef void (*metrics_collect_fn)(void *ctx, struct prom *out);

struct metrics_server;
/* Binds the listening socket; NULL with err set.  No thread yet, so that
 * one started after privdrop_apply() never knew root's capabilities. */
struct metrics_server *metrics_server_open(struct uv_loop_s *loop, const struct metrics_config *cfg,
					   metrics_collect_fn fn, void *ctx, char *err, size_t err_len);
/* Starts the HTTP thread; -1 with err set. */
int metrics_server_start(struct metrics_server *s, char *err, size_t err_len);
/* On the loop thread: stops the HTTP thread (a waiting scrape gets 503);
 * the memory goes once the loop has run the close callback. */
void metrics_server_close(struct metrics_server *s);

/* What the endpoint itself counts, for its own metrics (loop thread). */
struct metrics_server_stats {
	uint64_t scrapes, denied, timeouts;
};
void metrics_server_stats(const struct metrics_server *s, struct metrics_server_stats *st);

#endif
