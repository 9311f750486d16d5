/* udp.c: the UDP workers, each with its sockets, engine, cache shard and rate limits. */
#ifndef INRPD_UDP_H
#define INRPD_UDP_H

#include <stddef.h>

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

#endif
