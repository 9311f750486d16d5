/* tcp.c: DNS over TCP (RFC 7766) on the main thread's loop, with its own engine and cache shard. */
#ifndef INRPD_TCP_H
#define INRPD_TCP_H

#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "config.h"
#include "counters.h"
#include "forward.h"

struct uv_loop_s;
struct tcp_server;
struct tcp_server *tcp_server_open(struct uv_loop_s *loop, const struct inrpd_config *cfg,
				   char *err, size_t err_len);
void tcp_server_set_limits(struct tcp_server *s, unsigned max_conns, uint64_t idle_ms);
/* Closes listeners and connections; run the loop afterwards to finish. */
void tcp_server_close(struct tcp_server *s);
void tcp_server_counters(const struct tcp_server *s, struct inrpd_counters *sum);
void tcp_server_hops(const struct tcp_server *s, fwd_hop_fn fn, void *arg);
void tcp_server_cache_stats(const struct tcp_server *s, struct cache_stats *st);
/* cache_peek on the shard of the stream transports: on the main thread, its owner. */
bool tcp_server_cache_peek(const struct tcp_server *s, const struct cache_key *k, uint64_t now_ms,
			   struct cache_peek *p);
void tcp_server_free(struct tcp_server *s);

#endif
