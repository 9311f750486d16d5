/*
 * The connections of a stream listener (TCP, DoT, DoH) on the main
 * thread's loop: listening, accepting under tcp-max-connections, the idle
 * timer, reading paused while a client does not read its answers, and
 * closing.  A transport embeds struct conn first in its connection and
 * says through struct conn_ops what it does with the bytes.
 */
#ifndef INRPD_CONN_H
#define INRPD_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "config.h"
#include "list.h"
#include "stream.h"

/* Over this many bytes queued, a connection is not read until half of them are written. */
#define CONN_WRITE_QUEUE_MAX    (256 * 1024)

struct conn;

struct conn_ops {
	uv_alloc_cb alloc;
	uv_read_cb read;
	/* Accepted and within the limit: the transport's own state; false closes it. */
	bool (*accepted)(struct conn *c);
	/* The idle timer fired. */
	void (*idle)(struct conn *c);
	/* Both handles closed: free what the transport holds (not c itself). */
	void (*release)(struct conn *c);
};

struct conn {
	uv_tcp_t handle;                /* first: handle.data is this */
	uv_timer_t timer;
	uv_shutdown_t shutdown;
	struct inrpd_stream st;         /* the forwarding engine's client; the transport sets deliver */
	struct conn_set *set;
	struct list_node lru;           /* on set->conns */
	struct sockaddr_storage client; /* the peer, or the client its PROXY header carried */
	unsigned open_handles;
	unsigned forwarded;             /* queries in the forwarding engine */
	bool started;                   /* that header, or its absence, settled */
	bool closing;
	bool paused;                    /* reading stopped for write backpressure */
	bool eof;                       /* the client is done */
};

struct conn_set {
	uv_loop_t *loop;
	const char *name;               /* in logs: "tcp", "tls", "https" */
	const struct conn_ops *ops;
	size_t conn_size;               /* the transport's connection, struct conn first */
	struct tcp_server *tcp;         /* the answer path: forgets a closed connection's queries */
	uint64_t *evicted, *full;       /* the transport's counters */
	uint64_t *open_gauge;           /* NULL, or a gauge of nopen */
	unsigned nlisten, open_listeners;
	uv_tcp_t listeners[INRPD_MAX_LISTEN];
	struct list conns;              /* most recently active first, closing ones too */
	unsigned nconns;                /* on the list, closing ones included */
	unsigned nopen;                 /* not closing: what max_conns bounds */
	unsigned max_conns;
	uint64_t idle_ms;
	bool closing;
};

void conn_set_init(struct conn_set *s, uv_loop_t *loop, const char *name, const struct conn_ops *ops,
		   size_t conn_size, struct tcp_server *tcp);
/*
 * Listens on ls[0..n): -1 with "KEYWORD ADDRESS: NAME: reason" in err;
 * close the set then, and run the loop to finish.
 */
int conn_set_listen(struct conn_set *s, const struct inrpd_listen *ls, unsigned n, const char *keyword,
		    char *err, size_t err_len);
/* New limits; open connections' idle timers take the new timeout. */
void conn_set_limits(struct conn_set *s, unsigned max_conns, uint64_t idle_ms);
/* Closes listeners and connections; run the loop afterwards to finish. */
void conn_set_close(struct conn_set *s);

void conn_close(struct conn *c);
/* A query or an answer: the connection is the most recently active. */
void conn_touch(struct conn *c);
/* After queuing answers: stop reading while more than CONN_WRITE_QUEUE_MAX wait. */
void conn_pause_if_full(struct conn *c);
/* A write done: closes on error, resumes a paused connection once half drained. */
void conn_written(struct conn *c, int status);
/* The client is done: the answers in flight still go, then the connection closes. */
void conn_eof(struct conn *c);
/* The client is done and every answer is queued: close once they are written. */
void conn_finish(struct conn *c);

#endif
