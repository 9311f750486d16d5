/* udp.c: the UDP workers, each with its sockets, engine, cache shard and rate limits. */
#ifndef INRPD_UDP_H
#define INRPD_UDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "config.h"
#include "counters.h"
#include "forward.h"

struct udp_workers;
/* Opens the sockets (nworkers per listen address); errors go to err. */
struct udp_workers *udp_workers_open(const struct inrpd_config *cfg, unsigned nworkers,
				     char *err, size_t err_len);
int udp_workers_start(struct udp_workers *w, char *err, size_t err_len);
/* Stops and joins the threads, adds their counters to final (if not NULL),
 * closes the sockets, frees. */
void udp_workers_stop(struct udp_workers *w, struct inrpd_counters *final);
void udp_workers_counters(const struct udp_workers *w, struct inrpd_counters *sum);
/* Any route changed (main thread): each worker's questions asked lately are looked up again. */
void udp_workers_routes_changed(struct udp_workers *w);
void udp_workers_hops(const struct udp_workers *w, fwd_hop_fn fn, void *arg);
void udp_workers_cache_stats(const struct udp_workers *w, struct cache_stats *st);
unsigned udp_workers_count(const struct udp_workers *w);

/* One key in one worker's shard. */
struct udp_peek_result {
	bool busy;                      /* the worker did not answer in time */
	bool found;
	struct cache_peek peek;
};
/*
 * Looks keys up in every worker's shard (cache_peek, by each worker at its
 * next batch boundary), waiting at most half a second: res holds
 * count * nkeys results, worker by worker.  Control thread only.
 */
void udp_workers_cache_peek(struct udp_workers *w, const struct cache_key *keys, unsigned nkeys,
			    uint64_t now_ms, struct udp_peek_result *res);

#endif
