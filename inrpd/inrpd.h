/*
 * inrpd: the DNS-compatible resolver of the content router.
 *
 * Threads:
 *   - UDP workers (udp.c): one SO_REUSEPORT socket per listen address each,
 *     recvmmsg/sendmmsg in batches, preallocated buffers, liburcu QSBR
 *     readers of the runtime state.
 *   - the main thread (main.c, tcp.c): libuv loop with the TCP listeners
 *     (RFC 7766), the TCP connections to hops its forwarding engine asks
 *     again after a truncated answer, and signals (SIGHUP reload,
 *     SIGINT/SIGTERM stop, SIGUSR1 statistics).  It is a registered QSBR
 *     thread that stays offline except while it answers TCP queries and
 *     while it writes a new FIB (call_rcu wants an online caller), so it
 *     never holds up a grace period while it blocks, and can wait for one
 *     (synchronize_rcu, rcu_barrier).
 *
 * What a reload may change (routes, TTL, EDNS size) lives in one struct
 * inrpd_runtime (runtime.h) published with rcu_assign_pointer; readers
 * take it with rcu_dereference and use it until their next quiescent state.
 *
 * The modules, each with its header: config.h (the file), runtime.h (what
 * reload changes), answer.h (one query), forward.h (queries in flight),
 * rrl.h, records.h, counters.h, udp.h, tcp.h, fibsync.h, stats.h (what
 * the control socket and /metrics show), refresh.h, upsock.h.  This one
 * holds only the clocks they share.
 */
#ifndef INRPD_H
#define INRPD_H

#include <stdint.h>
#include <time.h>

/* The coarse clock: TTLs, rate limits and refresh passes are counted in
 * milliseconds and seconds, and a tick is plenty for them. */
static inline uint64_t inrpd_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The precise one: latencies and round-trip times. */
static inline uint64_t inrpd_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

#endif
