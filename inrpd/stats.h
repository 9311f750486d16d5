/*
 * What the control socket and the Prometheus metrics show, summed over
 * threads: metrics.c writes the families (lib/ops/metrics.h serves them),
 * and sums next hops over every engine, also for `show hops`; main.c
 * names the counters.
 */
#ifndef INRPD_STATS_H
#define INRPD_STATS_H

#include <stdint.h>

#include "counters.h"
#include "forward.h"

struct fibsync;
struct metrics_server;
struct tcp_server;
struct tls_server;
struct udp_workers;

struct inrpd_hops {
	unsigned n;
	size_t cap, rtt_weight_cap;
	struct fwd_hop_stats *h;
	uint64_t *rtt_weight;
};
void inrpd_hops_collect(const struct udp_workers *udp, const struct tcp_server *tcp, struct inrpd_hops *l);
void inrpd_hops_free(struct inrpd_hops *l);
struct prom;
struct inrpd_metrics_source {
	const char *version;
	uint64_t uptime_ms, now_ms;
	const struct udp_workers *udp;
	const struct tcp_server *tcp;
	const struct tls_server *tls[2];        /* DoT, DoH (tls.h); NULL: not listening */
	const struct fibsync *fibsync;
	const struct metrics_server *metrics;
};
/* On the main thread. */
void inrpd_metrics_write(struct prom *p, const struct inrpd_metrics_source *src);
/* main.c: the counters of `show counters`, by index. */
unsigned inrpd_counter_count(void);
const char *inrpd_counter_name(unsigned i);
uint64_t inrpd_counter_value(const struct inrpd_counters *c, unsigned i);

#endif
