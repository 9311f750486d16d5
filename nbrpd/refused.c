/*
 * Routes refused for their signatures (refused.h).
 */
#include <stdlib.h>
#include <string.h>

#include "hashkey.h"
#include "refused.h"

int refused_init(struct refused *t, size_t entries)
{
	memset(t, 0, sizeof(*t));
	if (!entries)
		return 0;
	size_t n = 1;
	while (n * REFUSED_WAYS < entries)
		n <<= 1;
	t->sets = calloc(n * REFUSED_WAYS, sizeof(*t->sets));
	if (!t->sets)
		return -1;
	t->nsets = n;
	return 0;
}

void refused_free(struct refused *t)
{
	free(t->sets);
	memset(t, 0, sizeof(*t));
}

static struct refused_entry *set_of(const struct refused *t, const struct name *n)
{
	return &t->sets[(hashkey64(n->wire, n->len) & (t->nsets - 1)) * REFUSED_WAYS];
}

static bool same(const struct refused_entry *e, const struct name *n)
{
	return e->when_s && e->len == n->len && memcmp(e->wire, n->wire, n->len) == 0;
}

void refused_note(struct refused *t, const struct name *n, const char *peer, uint8_t state, uint8_t reason,
		  uint64_t now_s)
{
	if (!t->nsets)
		return;
	struct refused_entry *set = set_of(t, n), *e = NULL;
	for (unsigned i = 0; i < REFUSED_WAYS && !e; i++)
		if (same(&set[i], n) && strcmp(set[i].peer, peer) == 0)
			e = &set[i];
	for (unsigned i = 0; i < REFUSED_WAYS && !e; i++)
		if (!set[i].when_s)
			e = &set[i];
	if (!e) {                       /* full: the oldest goes */
		e = &set[0];
		for (unsigned i = 1; i < REFUSED_WAYS; i++)
			if (set[i].when_s < e->when_s)
				e = &set[i];
		t->used--;
	}
	if (!e->when_s)
		t->used++;
	e->when_s = now_s ? now_s : 1;
	e->state = state;
	e->reason = reason;
	e->len = n->len;
	memcpy(e->wire, n->wire, n->len);
	strncpy(e->peer, peer, sizeof(e->peer) - 1);
	e->peer[sizeof(e->peer) - 1] = '\0';
}

void refused_forget(struct refused *t, const struct name *n, const char *peer)
{
	if (!t->used)
		return;
	struct refused_entry *set = set_of(t, n);
	for (unsigned i = 0; i < REFUSED_WAYS; i++)
		if (same(&set[i], n) && strcmp(set[i].peer, peer) == 0) {
			set[i].when_s = 0;
			t->used--;
		}
}

unsigned refused_find(const struct refused *t, const struct name *n, struct refused_entry *out)
{
	if (!t->used)
		return 0;
	const struct refused_entry *set = set_of(t, n);
	unsigned k = 0;
	for (unsigned i = 0; i < REFUSED_WAYS; i++)
		if (same(&set[i], n)) {
			unsigned j = k++;
			while (j > 0 && out[j - 1].when_s < set[i].when_s) {
				out[j] = out[j - 1];
				j--;
			}
			out[j] = set[i];
		}
	return k;
}
