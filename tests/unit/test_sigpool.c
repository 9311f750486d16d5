/*
 * lib/sig/sigpool.c: the urgent lane goes first, and flows share the workers
 * by their weights (deficit round-robin), each counted.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sigpool.h"

enum { BLOCKER, URGENT, A, B, KINDS };

/* The order items ran in (one worker), and a gate holding the worker at the first. */
struct order {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool open, held;
	int kind[256];
	size_t n;
	int done;
};

struct item_batch {
	struct sigpool_batch b;
	struct order *o;
	int kind;
};

static void work(void *arg, size_t i)
{
	struct item_batch *ib = arg;
	struct order *o = ib->o;
	pthread_mutex_lock(&o->mu);
	if (ib->kind == BLOCKER) {
		o->held = true;
		pthread_cond_broadcast(&o->cond);
		while (!o->open)
			pthread_cond_wait(&o->cond, &o->mu);
	}
	if (o->n < sizeof(o->kind) / sizeof(o->kind[0]))
		o->kind[o->n++] = ib->kind;
	pthread_mutex_unlock(&o->mu);
	(void)i;
}

static void done(struct sigpool_batch *b)
{
	struct item_batch *ib = b->arg;
	ib->o->done++;
}

static void batch(struct item_batch *ib, struct order *o, int kind, size_t n, struct sigpool_flow *f)
{
	*ib = (struct item_batch){ .o = o, .kind = kind };
	ib->b = (struct sigpool_batch){ .work = work, .done = done, .arg = ib, .n = n, .flow = f,
					.urgent = kind == URGENT };
}

/* One worker held at a blocker while an urgent batch and two flows' wait: then the urgent
 * batch runs whole first, and the flow of weight 8 gets 8 chunks a round to the other's 1. */
static void urgent_first_then_flows_by_weight(void **state)
{
	(void)state;
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct sigpool pool;
	assert_int_equal(sigpool_init(&pool, &loop, 1), 0);
	static struct order o = { .mu = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	struct sigpool_flow fa = { 0 }, fb = { 0 };
	sigpool_flow_weight(&pool, &fa, 1);
	sigpool_flow_weight(&pool, &fb, 8);
	struct item_batch blocker, urgent, a, b;
	batch(&blocker, &o, BLOCKER, 1, NULL);
	batch(&a, &o, A, 64, &fa);
	batch(&b, &o, B, 64, &fb);
	batch(&urgent, &o, URGENT, 16, NULL);
	sigpool_submit(&pool, &blocker.b);
	pthread_mutex_lock(&o.mu);
	while (!o.held)
		pthread_cond_wait(&o.cond, &o.mu);
	pthread_mutex_unlock(&o.mu);
	/* the flows first, the urgent batch last: it still goes first */
	sigpool_submit(&pool, &a.b);
	sigpool_submit(&pool, &b.b);
	sigpool_submit(&pool, &urgent.b);
	pthread_mutex_lock(&o.mu);
	o.open = true;
	pthread_cond_broadcast(&o.cond);
	pthread_mutex_unlock(&o.mu);
	while (o.done < 4)
		uv_run(&loop, UV_RUN_ONCE);

	assert_int_equal(o.n, 1 + 16 + 64 + 64);
	assert_int_equal(o.kind[0], BLOCKER);
	for (size_t i = 1; i <= 16; i++)
		assert_int_equal(o.kind[i], URGENT);
	/* a, submitted first, has its turn first (a chunk of 8); then b's 64 in 8 chunks */
	size_t a_before_b_ends = 0, last_b = 0;
	for (size_t i = 17; i < o.n; i++)
		if (o.kind[i] == B)
			last_b = i;
	for (size_t i = 17; i < last_b; i++)
		a_before_b_ends += o.kind[i] == A;
	assert_true(a_before_b_ends <= 16);
	uint64_t items, ns;
	sigpool_flow_stats(&pool, &fa, &items, &ns);
	assert_int_equal(items, 64);
	sigpool_flow_stats(&pool, &fb, &items, &ns);
	assert_int_equal(items, 64);
	assert_int_equal(pool.urgent_items, 16);
	sigpool_close(&pool);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

/* A flow alone takes every worker, whatever its weight; an empty batch still completes. */
static void a_flow_alone_is_not_held_back(void **state)
{
	(void)state;
	uv_loop_t loop;
	uv_loop_init(&loop);
	struct sigpool pool;
	assert_int_equal(sigpool_init(&pool, &loop, 2), 0);
	static struct order o = { .mu = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER, .open = true };
	struct sigpool_flow f = { 0 };
	sigpool_flow_weight(&pool, &f, 1);
	struct item_batch x, y, empty;
	batch(&x, &o, A, 100, &f);
	batch(&y, &o, A, 100, &f);
	batch(&empty, &o, A, 0, &f);
	sigpool_submit(&pool, &x.b);
	sigpool_submit(&pool, &y.b);
	sigpool_submit(&pool, &empty.b);
	while (o.done < 3)
		uv_run(&loop, UV_RUN_ONCE);
	uint64_t items, ns;
	sigpool_flow_stats(&pool, &f, &items, &ns);
	assert_int_equal(items, 200);
	sigpool_close(&pool);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(urgent_first_then_flows_by_weight),
		cmocka_unit_test(a_flow_alone_is_not_held_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
