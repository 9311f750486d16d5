#include <stdlib.h>

#include "evq.h"
#include "vec.h"

static bool before(const struct event *x, const struct event *y)
{
	return x->at_ns < y->at_ns || (x->at_ns == y->at_ns && x->seq < y->seq);
}

void evq_init(struct evq *q)
{
	q->v = NULL;
	q->n = q->cap = q->peak = 0;
	q->seq = 0;
}

void evq_free(struct evq *q)
{
	free(q->v);
	evq_init(q);
}

int evq_push(struct evq *q, uint64_t at_ns, uint32_t kind, uint32_t a, void *p)
{
	if (VEC_RESERVE(q->v, q->cap, q->n + 1) < 0)
		return -1;
	struct event e = { at_ns, q->seq++, kind, a, p };
	size_t i = q->n++;
	while (i > 0 && before(&e, &q->v[(i - 1) / 2])) {
		q->v[i] = q->v[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	q->v[i] = e;
	if (q->n > q->peak)
		q->peak = q->n;
	return 0;
}

bool evq_pop(struct evq *q, struct event *out)
{
	if (!q->n)
		return false;
	*out = q->v[0];
	struct event last = q->v[--q->n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= q->n)
			break;
		if (c + 1 < q->n && before(&q->v[c + 1], &q->v[c]))
			c++;
		if (!before(&q->v[c], &last))
			break;
		q->v[i] = q->v[c];
		i = c;
	}
	if (q->n)
		q->v[i] = last;
	return true;
}
