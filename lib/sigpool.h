/*
 * Worker threads for signing and verifying, so a daemon's libuv loop never
 * waits on crypto.  A batch is n independent items: workers run
 * work(arg, i) for every i (in chunks, any order, on any worker), and
 * when the last is done the batch's done callback runs on the loop
 * (uv_async).  Batches run in the order submitted; several may be in
 * flight.  Workers touch only what work() touches: everything else (the
 * verification cache, the RIB) stays on the loop.
 */
#ifndef CR_SIGPOOL_H
#define CR_SIGPOOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#define SIGPOOL_DEFAULT_WORKERS 2
#define SIGPOOL_MAX_WORKERS     64

struct sigpool_batch {
	void (*work)(void *arg, size_t i);              /* on a worker */
	void (*done)(struct sigpool_batch *b);          /* on the loop */
	void *arg;
	size_t n;
	/* the pool's */
	size_t next, finished;
	struct sigpool_batch *link;
};

struct sigpool {
	uv_async_t async;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	pthread_t threads[SIGPOOL_MAX_WORKERS];
	unsigned workers;
	bool stop;
	struct sigpool_batch *head, *tail;      /* items left to hand out */
	struct sigpool_batch *done_head, *done_tail;    /* for the loop */
	unsigned running;                       /* batches submitted, done not yet called */
};

/* workers: 1..SIGPOOL_MAX_WORKERS (0: the default).  0, or -1. */
int sigpool_init(struct sigpool *p, uv_loop_t *loop, unsigned workers);
/* b->work, done, arg, n set; n may be 0 (done still comes on the loop). */
void sigpool_submit(struct sigpool *p, struct sigpool_batch *b);
/*
 * Finishes what was submitted (the loop thread, not from a done callback),
 * calls the done callbacks still owed, stops the workers and closes the
 * async handle (the loop must run once more to finish closing it).
 */
void sigpool_close(struct sigpool *p);

#endif
