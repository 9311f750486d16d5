/*
 * Worker threads for crypto: see sigpool.h.
 */
#include <signal.h>
#include <string.h>
#include <time.h>

#include "sigpool.h"

/* Items taken at once: a verification is ~50 us, so the lock is cold. */
#define CHUNK   8

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct sigpool_batch *batch_of(struct fifo_node *n)
{
	return n ? list_entry(n, struct sigpool_batch, link) : NULL;
}

static struct sigpool_flow *flow_of(struct fifo_node *n)
{
	return n ? list_entry(n, struct sigpool_flow, turn) : NULL;
}

static void deliver(struct sigpool *p)
{
	pthread_mutex_lock(&p->mu);
	struct fifo done = p->done;
	p->done.head = p->done.tail = NULL;
	pthread_mutex_unlock(&p->mu);
	struct sigpool_batch *b;
	while ((b = batch_of(fifo_pop(&done)))) {
		p->running--;
		b->done(b);             /* may free b or submit more */
	}
}

static void on_async(uv_async_t *h)
{
	deliver(h->data);
}

/* Under the lock: b is complete. */
static void completed(struct sigpool *p, struct sigpool_batch *b)
{
	fifo_push(&p->done, &b->link);
}

static long quantum(const struct sigpool_flow *f)
{
	return (long)(f->weight ? f->weight : 1) * CHUNK;
}

/*
 * Under the lock: the batch to take a chunk from (the urgent lane's first,
 * else the first of the flow whose turn it is), or NULL.  A flow that has
 * used its credit goes to the end of the round with its next turn's.
 */
static struct sigpool_batch *pick(struct sigpool *p)
{
	if (p->urgent.head)
		return batch_of(p->urgent.head);
	struct sigpool_flow *f;
	while ((f = flow_of(p->round.head)) && f->credit <= 0) {
		f->credit += quantum(f);
		if (f->turn.next)
			fifo_push(&p->round, fifo_pop(&p->round));
	}
	return f ? batch_of(f->batches.head) : NULL;
}

/* Under the lock: items [b->next, to) of b are handed out. */
static void take(struct sigpool *p, struct sigpool_batch *b, size_t to)
{
	struct sigpool_flow *f = b->urgent ? NULL : b->flow;
	if (f)
		f->credit -= (long)(to - b->next);
	b->next = to;
	if (to < b->n)
		return;
	/* b is its lane's head */
	if (!f) {
		fifo_pop(&p->urgent);
		return;
	}
	fifo_pop(&f->batches);
	if (f->batches.head)
		return;
	/* nothing left to hand out: out of the round (it is its head) */
	fifo_pop(&p->round);
	f->queued = false;
	f->credit = 0;
}

static void *worker(void *arg)
{
	struct sigpool *p = arg;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		struct sigpool_batch *b;
		while (!(b = pick(p)) && !p->stop)
			pthread_cond_wait(&p->cond, &p->mu);
		if (!b)
			break;
		size_t from = b->next, to = from + CHUNK < b->n ? from + CHUNK : b->n;
		take(p, b, to);
		pthread_mutex_unlock(&p->mu);
		uint64_t t0 = mono_ns();
		for (size_t i = from; i < to; i++)
			b->work(b->arg, i);
		uint64_t ns = mono_ns() - t0;
		pthread_mutex_lock(&p->mu);
		/* the flow lives until the batch's done callback, which comes after this */
		if (b->urgent) {
			p->urgent_items += to - from;
			p->urgent_ns += ns;
		} else {
			b->flow->items += to - from;
			b->flow->ns += ns;
		}
		b->finished += to - from;
		if (b->finished == b->n) {
			completed(p, b);
			uv_async_send(&p->async);
		}
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int sigpool_init(struct sigpool *p, uv_loop_t *loop, unsigned workers)
{
	memset(p, 0, sizeof(*p));
	if (workers == 0)
		workers = SIGPOOL_DEFAULT_WORKERS;
	if (workers > SIGPOOL_MAX_WORKERS)
		return -1;
	if (uv_async_init(loop, &p->async, on_async) != 0)
		return -1;
	p->async.data = p;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cond, NULL);
	/* signals belong to the loop thread */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (; p->workers < workers; p->workers++)
		if (pthread_create(&p->threads[p->workers], NULL, worker, p) != 0)
			break;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (p->workers == 0) {
		uv_close((uv_handle_t *)&p->async, NULL);
		return -1;
	}
	return 0;
}

void sigpool_submit(struct sigpool *p, struct sigpool_batch *b)
{
	b->next = b->finished = 0;
	if (!b->flow)
		b->flow = &p->own;
	pthread_mutex_lock(&p->mu);
	p->running++;
	if (b->n == 0) {
		completed(p, b);
		uv_async_send(&p->async);
	} else if (b->urgent) {
		fifo_push(&p->urgent, &b->link);
		pthread_cond_broadcast(&p->cond);
	} else {
		struct sigpool_flow *f = b->flow;
		fifo_push(&f->batches, &b->link);
		if (!f->queued) {
			/* joins the round at its end, with a turn's credit */
			f->queued = true;
			f->credit = quantum(f);
			fifo_push(&p->round, &f->turn);
		}
		pthread_cond_broadcast(&p->cond);
	}
	pthread_mutex_unlock(&p->mu);
}

void sigpool_flow_weight(struct sigpool *p, struct sigpool_flow *f, unsigned weight)
{
	pthread_mutex_lock(&p->mu);
	f->weight = weight;
	pthread_mutex_unlock(&p->mu);
}

void sigpool_flow_stats(struct sigpool *p, const struct sigpool_flow *f, uint64_t *items, uint64_t *ns)
{
	pthread_mutex_lock(&p->mu);
	*items = f->items;
	*ns = f->ns;
	pthread_mutex_unlock(&p->mu);
}

void sigpool_close(struct sigpool *p)
{
	/* workers drain the queue before they see stop */
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->mu);
	for (unsigned i = 0; i < p->workers; i++)
		pthread_join(p->threads[i], NULL);
	p->workers = 0;
	deliver(p);
	uv_close((uv_handle_t *)&p->async, NULL);
}
