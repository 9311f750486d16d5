/*
 * forward.c: the forwarding engine.  Each UDP worker owns one, and the main
 * thread one for TCP; an engine is used by its owner thread only (stats
 * are read by others with relaxed loads).  It keeps the queries in flight,
 * sends them to the next content router or upstream resolver, matches
 * answers, retries alternates on timeout, and hands the client's answer to
 * the transport through deliver().
 */
#ifndef INRPD_FORWARD_H
#define INRPD_FORWARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "addr.h"
#include "answer.h"

struct fwd_client {
	/* UDP: where the answer goes */
	struct sockaddr_storage peer;
	socklen_t peer_len;
	uint8_t listen_idx;
	uint8_t ctl_len;                /* 0: no pktinfo */
	union {
		struct cmsghdr align;
		uint8_t buf[CMSG_SPACE(sizeof(struct in6_pktinfo))];
	} ctl;
	/* TCP: the connection and its serial (a closed connection's is stale) */
	void *conn;
	uint64_t serial;
	/* >0: no client, a question fetched again after a route change
	 * (refresh.h), its slot + 1: the answer is for the cache only */
	uint32_t refresh;
};

struct fwd_engine;
typedef void (*fwd_deliver_fn)(void *ctx, const struct fwd_client *client,
			       const uint8_t *msg, size_t len);

/*
 * The engine of w's thread: it counts into w->cnt and stores answers in
 * w->cache.  max_sockets: at most that many queries in flight have a
 * socket (0: all).
 */
struct fwd_engine *fwd_engine_create(struct inrpd_worker *w, unsigned max_pending, unsigned max_sockets,
				     fwd_deliver_fn deliver, void *ctx, char *err, size_t err_len);
void fwd_engine_free(struct fwd_engine *e);
/* The descriptor to poll for reading: its sockets' epoll set. */
int fwd_engine_fd(const struct fwd_engine *e);
/* Takes over a request; the client gets its answer through deliver(). */
void fwd_start(struct fwd_engine *e, const struct fwd_request *req, const struct fwd_client *client);
/*
 * With every max-pending slot taken: the request's SERVFAIL in out (len 0 if
 * it did not fit), counted pending_full, and true.  fwd_start sheds the same
 * way; asking first lets a UDP worker send it in its batch, so that shedding
 * costs no more than a local answer.
 */
bool fwd_shed(struct fwd_engine *e, const struct fwd_request *req, uint8_t *out, size_t cap, size_t *len);
/* Reads answers; call when fwd_engine_fd() polls readable. */
void fwd_on_readable(struct fwd_engine *e);
/*
 * Or the owner waits in the engine's own set: its descriptors added with
 * a token each (below 2^31), fwd_engine_wait() waits up to timeout ms for
 * them and the engine's sockets together (one syscall, no nested epoll),
 * gives the owner's ready tokens (at most 128), and fwd_on_ready() then
 * reads the sockets it found.  Returns -1 with errno (EINTR included).
 */
int fwd_engine_watch(struct fwd_engine *e, int fd, uint32_t token);
int fwd_engine_wait(struct fwd_engine *e, int timeout, uint32_t *tokens, unsigned *ntokens);
void fwd_on_ready(struct fwd_engine *e);
/* Retries or fails what timed out; returns ms until the next deadline, -1 if none. */
int fwd_expire(struct fwd_engine *e);
/* Forgets the queries of a TCP connection that closed (and closes their upstream TCP). */
void fwd_cancel_conn(struct fwd_engine *e, const void *conn);

/*
 * Asking a hop again over TCP when its answer came truncated and the
 * client asked over TCP (tcp.c gives its engine these; UDP workers' engines
 * have none, and relay TC).  open() starts one exchange with `to`: connect,
 * send the query with its 2-byte length, read one answer; it returns the
 * exchange, or NULL when it cannot (connection limit, no memory), and
 * never calls back from inside.  The outcome comes back exactly once
 * through fwd_on_tcp_answer(), unless the engine abandons the exchange
 * first with abort() (its deadline passed, the client went away): after
 * abort() the transport closes it and reports nothing.
 */
struct fwd_tcp_conn;
struct fwd_tcp_ops {
	struct fwd_tcp_conn *(*open)(void *ctx, const struct route *to, const uint8_t *query,
				     size_t len, uint32_t token);
	void (*abort)(void *ctx, struct fwd_tcp_conn *c);
};
void fwd_engine_set_tcp(struct fwd_engine *e, const struct fwd_tcp_ops *ops);
/* The answer of exchange c (open()'s token with it); pkt NULL: none came (the transport
 * then closes c).  Call fwd_expire() afterwards: deadlines may have changed. */
void fwd_on_tcp_answer(struct fwd_engine *e, uint32_t token, struct fwd_tcp_conn *c,
		       const uint8_t *pkt, size_t len);
unsigned fwd_pending_count(const struct fwd_engine *e);

/* Per next hop statistics, summed over engines by the control socket. */
struct fwd_hop_stats {
	struct ip_endpoint hop;
	uint64_t queries, answers, timeouts;
	uint64_t failures;              /* answered SERVFAIL or REFUSED */
	uint64_t probes;                /* queries sent to learn its RTT again */
	uint32_t srtt_us;               /* 0: no sample yet */
	uint32_t load_ms;               /* last reported by the hop */
};
typedef void (*fwd_hop_fn)(const struct fwd_hop_stats *h, void *arg);
void fwd_engine_hops(const struct fwd_engine *e, fwd_hop_fn fn, void *arg);

#endif
