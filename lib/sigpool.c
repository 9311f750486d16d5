/*
 * Worker threads for crypto: see sigpool.h.
 */
#include <signal.h>
#include <string.h>

#include "sigpool.h"

/* Items taken at once: a verification is ~50 us, so the lock is cold. */
#define CHUNK   8

static void deliver(struct sigpool *p)
{
	pthread_mutex_lock(&p->mu);
	struct sigpool_batch *b = p->done_head;
	p->done_head = p->done_tail = NULL;
	pthread_mutex_unlock(&p->mu);
	while (b) {
		struct sigpool_batch *next = b->link;
		p->running--;
		b->done(b);             /* may free b or submit more */
		b = next;
	}
}

static void on_async(uv_async_t *h)
{
	deliver(h->data);
}

/* Under the lock: b is complete. */
static void completed(struct sigpool *p, struct sigpool_batch *b)
{
	b->link = NULL;
	if (p->done_tail)
		p->done_tail->link = b;
	else
		p->done_head = b;
	p->done_tail = b;
}

static void *worker(void *arg)
{
	struct sigpool *p = arg;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->head && !p->stop)
			pthread_cond_wait(&p->cond, &p->mu);
		if (!p->head)
			break;
		struct sigpool_batch *b = p->head;
		size_t from = b->next, to = from + CHUNK < b->n ? from + CHUNK : b->n;
		b->next = to;
		if (to == b->n) {
			p->head = b->link;
			if (!p->head)
				p->tail = NULL;
		}
		pthread_mutex_unlock(&p->mu);
		for (size_t i = from; i < to; i++)
			b->work(b->arg, i);
		pthread_mutex_lock(&p->mu);
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
	b->link = NULL;
	pthread_mutex_lock(&p->mu);
	p->running++;
	if (b->n == 0) {
		completed(p, b);
		uv_async_send(&p->async);
	} else {
		if (p->tail)
			p->tail->link = b;
		else
			p->head = b;
		p->tail = b;
		pthread_cond_broadcast(&p->cond);
	}
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
