/*
 * The simulator's clock: events in order of time, ties in the order they
 * were queued (so that a run is the same for a seed).  A binary heap.
 */
#ifndef SIM_EVQ_H
#define SIM_EVQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event {
	uint64_t at_ns;
	uint64_t seq;
	uint32_t kind, a;               /* the caller's */
	void *p;
};

struct evq {
	struct event *v;
	size_t n, cap, peak;
	uint64_t seq;
};

void evq_init(struct evq *q);
void evq_free(struct evq *q);
/* 0, or -1 when out of memory. */
int evq_push(struct evq *q, uint64_t at_ns, uint32_t kind, uint32_t a, void *p);
/* The earliest event; false when none is left. */
bool evq_pop(struct evq *q, struct event *out);

#endif
