/*
 * Origin withdrawals to pass on: see origin_wd.h.  Rare (an origin
 * withdrawing names), so a plain array, sorted once per flush.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "origin_wd.h"
#include "rib.h"
#include "vec.h"

bool origin_wd_note(struct origin_wd *w, struct rib_entry *e, const char *origin, uint64_t seq,
		    const struct origin_wd_sig *sig)
{
	if (VEC_RESERVE(w->v, w->cap, w->n + 1) < 0)
		return false;
	struct origin_wd_item *it = &w->v[w->n++];
	it->e = e;
	it->seq = seq;
	it->has_sig = sig != NULL;
	if (sig)
		it->sig = *sig;
	snprintf(it->origin, sizeof(it->origin), "%s", origin);
	w->sorted = false;
	e->flags |= ENTRY_ORIGIN_WD;
	return true;
}

/* By entry, then origin, the newest stamp first. */
static int cmp(const void *x, const void *y)
{
	const struct origin_wd_item *a = x, *b = y;
	if (a->e != b->e)
		return (uintptr_t)a->e < (uintptr_t)b->e ? -1 : 1;
	int c = strcmp(a->origin, b->origin);
	if (c)
		return c;
	if (a->seq != b->seq)
		return a->seq > b->seq ? -1 : 1;
	return (int)b->has_sig - (int)a->has_sig;      /* of one stamp, a signed one first */
}

static void sort_unique(struct origin_wd *w)
{
	qsort(w->v, w->n, sizeof(*w->v), cmp);
	size_t k = 0;
	for (size_t i = 0; i < w->n; i++)
		if (k == 0 || w->v[k - 1].e != w->v[i].e || strcmp(w->v[k - 1].origin, w->v[i].origin) != 0)
			w->v[k++] = w->v[i];
	w->n = k;
	w->sorted = true;
}

const struct origin_wd_item *origin_wd_for(struct origin_wd *w, const struct rib_entry *e, size_t *n)
{
	*n = 0;
	if (!(e->flags & ENTRY_ORIGIN_WD) || w->n == 0)
		return NULL;
	if (!w->sorted)
		sort_unique(w);
	size_t lo = 0, hi = w->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if ((uintptr_t)w->v[mid].e < (uintptr_t)e)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t end = lo;
	while (end < w->n && w->v[end].e == e)
		end++;
	*n = end - lo;
	return *n ? &w->v[lo] : NULL;
}

void origin_wd_clear(struct origin_wd *w, uint8_t keep)
{
	size_t k = 0;
	for (size_t i = 0; i < w->n; i++) {
		if (w->v[i].e->flags & keep)
			w->v[k++] = w->v[i];    /* in order: still sorted if it was */
		else
			w->v[i].e->flags &= (uint8_t)~ENTRY_ORIGIN_WD;
	}
	w->n = k;
	w->sorted = w->sorted || !k;
}

void origin_wd_free(struct origin_wd *w)
{
	free(w->v);
	memset(w, 0, sizeof(*w));
}
