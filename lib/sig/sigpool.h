/*
 * Worker threads for signing and verifying, so a daemon's libuv loop never
 * waits on crypto.  A batch is n independent items: workers run
 * work(arg, i) for every i (in chunks, any order, on any worker), and
 * when the last is done the batch's done callback runs on the loop
 * (uv_async).  Workers touch only what work() touches: everything else
 * (the verification cache, the RIB) stays on the loop.
 *
 * Work comes in two lanes.  Urgent batches (our own signing) are handed
 * out first, in the order submitted, so no amount of other work delays
 * them.  The others belong to flows (one a peer, and the pool's own for
 * batches that name none), served by deficit round-robin: each turn a
 * flow with work may take its weight in chunks, so a flow with weight w
 * gets w / (sum of the busy flows' weights) of the workers while others
 * wait, and all of them when none does.  Within a flow batches run in
 * the order submitted; several may be in flight.
 */
#ifndef CR_SIGPOOL_H
#define CR_SIGPOOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "list.h"

#define SIGPOOL_DEFAULT_WORKERS 2
#define SIGPOOL_MAX_WORKERS     64

/* A stream of batches served fairly against the others; the caller's, zeroed before first use. */
struct sigpool_flow {
	/* the pool's, under its lock */
	unsigned weight;                /* chunks a turn (0: 1) */
	long credit;                    /* items it may still take this turn */
	struct fifo batches;            /* with items left to hand out */
	struct fifo_node turn;          /* in the round of flows with work */
	bool queued;
	uint64_t items, ns;             /* items done for it, and the workers' time they took */
};

struct sigpool_batch {
	void (*work)(void *arg, size_t i);              /* on a worker */
	void (*done)(struct sigpool_batch *b);          /* on the loop */
	void *arg;
	size_t n;
	struct sigpool_flow *flow;      /* NULL: the pool's own */
	bool urgent;                    /* handed out before every flow's */
	/* the pool's */
	size_t next, finished;
	struct fifo_node link;          /* on the urgent lane, its flow's batches or the done queue */
};

struct sigpool {
	uv_async_t async;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	pthread_t threads[SIGPOOL_MAX_WORKERS];
	unsigned workers;
	bool stop;
	struct fifo urgent;             /* batches with items left to hand out, urgent lane */
	struct fifo round;              /* flows with items left to hand out */
	struct sigpool_flow own;        /* batches with no flow */
	struct fifo done;               /* batches for the loop */
	unsigned running;                       /* batches submitted, done not yet called */
	uint64_t urgent_items, urgent_ns;       /* the urgent lane's items done and time */
};

/* workers: 1..SIGPOOL_MAX_WORKERS (0: the default).  0, or -1. */
int sigpool_init(struct sigpool *p, uv_loop_t *loop, unsigned workers);
/* b->work, done, arg, n, flow, urgent set; n may be 0 (done still comes on the loop). */
void sigpool_submit(struct sigpool *p, struct sigpool_batch *b);
/* The flow's weight from its next turn on (1..; 0: 1). */
void sigpool_flow_weight(struct sigpool *p, struct sigpool_flow *f, unsigned weight);
/* Items done for the flow and the workers' nanoseconds they took. */
void sigpool_flow_stats(struct sigpool *p, const struct sigpool_flow *f, uint64_t *items, uint64_t *ns);
/*
 * Finishes what was submitted (the loop thread, not from a done callback),
 * calls the done callbacks still owed, stops the workers and closes the
 * async handle (the loop must run once more to finish closing it).
 */
void sigpool_close(struct sigpool *p);

#endif
