/*
 * inrpd: the DNS-compatible resolver of the content router.
 *
 * Threads:
 *   - UDP workers (udp.c): one SO_REUSEPORT socket per listen address each,
 *     recvmmsg/sendmmsg in batches, preallocated buffers, liburcu QSBR
 *     readers of the runtime state.
 *   - the main thread (main.c, tcp.c): libuv loop with the TCP listeners
 *     (RFC 7766), signals (SIGHUP reload, SIGINT/SIGTERM stop, SIGUSR1
 *     statistics).  It is a registered QSBR thread that stays offline except
 *     while it answers TCP queries and while it writes a new FIB (call_rcu
 *     wants an online caller), so it never holds up a grace period while
 *     it blocks, and can wait for one (synchronize_rcu, rcu_barrier).
 *
 * What a reload may change (routes, TTL, EDNS size) lives in one struct
 * inrpd_runtime published with rcu_assign_pointer; readers take it with
 * rcu_dereference and use it until their next quiescent state.
 */
#ifndef INRPD_H
#define INRPD_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "dns.h"
#include "fib.h"

#define INRPD_MAX_LISTEN        64
#define INRPD_MAX_WORKERS       256
#define INRPD_DEFAULT_PORT      53

struct inrpd_listen {
	int family;                     /* AF_INET or AF_INET6 */
	uint8_t addr[16];
	uint16_t port;
	unsigned line;                  /* where it was configured, for messages */
};

/* What reload can change; readers see one consistent version. */
struct inrpd_runtime {
	struct fib *fib;
	uint32_t answer_ttl;
	uint16_t edns_udp_size;         /* our UDP answer limit and advertised size */
	unsigned nroutes;               /* names with static routes, for the log */
};

struct inrpd_config {
	struct inrpd_listen listen[INRPD_MAX_LISTEN];
	unsigned nlisten;
	unsigned workers;               /* 0: one per CPU */
	uint32_t answer_ttl;
	uint16_t edns_udp_size;
	unsigned tcp_max_conns;
	uint64_t tcp_idle_ms;
	int log_level;                  /* -1: not configured */
	char *pid_file;                 /* NULL: none */
	char *control_path;             /* control socket for inrpc; NULL: none */
	struct fib *fib;                /* owned until handed to a runtime */
	unsigned nroutes;
};

/*
 * config.c: parse and build the FIB.  Called by a registered QSBR thread
 * that is offline: it goes online while it writes the FIB (call_rcu wants
 * that) and is offline again when freeing (fib_destroy waits in
 * rcu_barrier, which must not run online).
 */
struct inrpd_config *inrpd_config_load(const char *path, char *err, size_t err_len);
void inrpd_config_free(struct inrpd_config *cfg);
/* Moves the reloadable part (FIB included) into a new runtime. */
struct inrpd_runtime *inrpd_runtime_from_config(struct inrpd_config *cfg);
/* No reader may still use it (after synchronize_rcu); caller offline. */
void inrpd_runtime_free(struct inrpd_runtime *rt);

/*
 * Counters, one block per thread.  Only the owning thread writes (plain
 * relaxed stores, no read-modify-write shared between CPUs); others read
 * them with relaxed loads when summing.
 */
struct inrpd_counters {
	uint64_t queries;               /* messages received */
	uint64_t answered;              /* responses sent, any rcode */
	uint64_t formerr;
	uint64_t refused;
	uint64_t truncated;
	uint64_t dropped;               /* no response: not a query, or could not send */
} __attribute__((aligned(64)));

#define CNT_INC(c, field) \
	__atomic_store_n(&(c)->field, __atomic_load_n(&(c)->field, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED)
#define CNT_ADD(c, field, n) \
	__atomic_store_n(&(c)->field, __atomic_load_n(&(c)->field, __ATOMIC_RELAXED) + (n), __ATOMIC_RELAXED)

void inrpd_counters_add(struct inrpd_counters *sum, const struct inrpd_counters *c);

/*
 * answer.c: answers one message.  Called by an online RCU reader with the
 * runtime it dereferenced.  limit_udp: true applies the client's UDP limit,
 * false the TCP one.  Returns the response length, or 0 for no response.
 * out must hold INRPD_ANSWER_MAX bytes.
 */
#define INRPD_ANSWER_MAX DNS_RESPONSE_MAX(ROUTESET_MAX_ROUTES)
size_t inrpd_answer(const struct inrpd_runtime *rt, const uint8_t *pkt, size_t len,
		    uint8_t *out, bool limit_udp, struct inrpd_counters *cnt);

/* The runtime in force; readers use rcu_dereference(inrpd_rt). */
extern struct inrpd_runtime *inrpd_rt;

/* udp.c */
struct udp_workers;
/* Opens the sockets (nworkers per listen address); errors go to err. */
struct udp_workers *udp_workers_open(const struct inrpd_config *cfg, unsigned nworkers,
				     char *err, size_t err_len);
int udp_workers_start(struct udp_workers *w, char *err, size_t err_len);
/* Stops and joins the threads, adds their counters to final (if not NULL),
 * closes the sockets, frees. */
void udp_workers_stop(struct udp_workers *w, struct inrpd_counters *final);
void udp_workers_counters(const struct udp_workers *w, struct inrpd_counters *sum);

/* tcp.c */
struct uv_loop_s;
struct tcp_server;
struct tcp_server *tcp_server_open(struct uv_loop_s *loop, const struct inrpd_config *cfg,
				   char *err, size_t err_len);
void tcp_server_set_limits(struct tcp_server *s, unsigned max_conns, uint64_t idle_ms);
/* Closes listeners and connections; run the loop afterwards to finish. */
void tcp_server_close(struct tcp_server *s);
void tcp_server_counters(const struct tcp_server *s, struct inrpd_counters *sum);
void tcp_server_free(struct tcp_server *s);

/* Formats "127.0.0.1 port 53" / "::1 port 53". */
const char *inrpd_listen_format(const struct inrpd_listen *l, char *buf, size_t len);
/* Fills ss for bind(); returns its length. */
struct sockaddr_storage;
socklen_t inrpd_listen_sockaddr(const struct inrpd_listen *l, struct sockaddr_storage *ss);

#endif
