/*
 * The newest signed stamps: see fresh.h.  Linear probing, at most 3/4
 * full, deletion by backward shift (no tombstones).
 */
#include <stdlib.h>
#include <string.h>

#include "fresh.h"
#include "hashkey.h"

/* keyed: the names come from peers, and pick the slot */
static uint64_t name_hash(const uint8_t *wire, size_t len)
{
	return hashkey64(wire, len) | 1;
}

static uint64_t key_of(const uint8_t *key)
{
	uint64_t k;
	memcpy(&k, key, sizeof(k));
	return k;
}

static size_t home(const struct fresh_table *t, uint64_t name, uint64_t key)
{
	return (size_t)((name ^ (key * 0x9e3779b97f4a7c15ull)) & (t->cap - 1));
}

static struct fresh_slot *probe(const struct fresh_table *t, uint64_t name, uint64_t key)
{
	for (size_t i = home(t, name, key);; i = (i + 1) & (t->cap - 1)) {
		struct fresh_slot *s = &t->v[i];
		if (!s->name || (s->name == name && s->key == key))
			return s;
	}
}

struct fresh_slot *fresh_find(const struct fresh_table *t, const uint8_t *wire, size_t len, const uint8_t *key)
{
	if (!t->cap)
		return NULL;
	struct fresh_slot *s = probe(t, name_hash(wire, len), key_of(key));
	return s->name ? s : NULL;
}

void fresh_prefetch(const struct fresh_table *t, const uint8_t *wire, size_t len, const uint8_t *key)
{
	if (t->cap)
		__builtin_prefetch(&t->v[home(t, name_hash(wire, len), key_of(key))]);
}

static bool grow(struct fresh_table *t)
{
	size_t cap = t->cap ? t->cap * 2 : 1024;
	struct fresh_slot *v = calloc(cap, sizeof(*v)), *old = t->v;
	if (!v)
		return false;
	size_t old_cap = t->cap;
	t->v = v;
	t->cap = cap;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].name)
			*probe(t, old[i].name, old[i].key) = old[i];
	free(old);
	t->sweep = 0;
	return true;
}

struct fresh_slot *fresh_add(struct fresh_table *t, const uint8_t *wire, size_t len, const uint8_t *key)
{
	if ((t->n + 1) * 4 > t->cap * 3 && !grow(t))
		return NULL;
	struct fresh_slot *s = probe(t, name_hash(wire, len), key_of(key));
	s->name = name_hash(wire, len);
	s->key = key_of(key);
	s->seq = 0;
	s->until = 0;
	s->withdrawn = 0;
	t->n++;
	return s;
}

/* Empties slot i, moving back the entries after it that it was in the way of. */
static void remove_at(struct fresh_table *t, size_t i)
{
	size_t mask = t->cap - 1;
	for (size_t j = (i + 1) & mask; t->v[j].name; j = (j + 1) & mask) {
		size_t k = home(t, t->v[j].name, t->v[j].key);
		/* j may move to i if its home is not cyclically in (i, j] */
		if (((j - k) & mask) >= ((j - i) & mask)) {
			t->v[i] = t->v[j];
			i = j;
		}
	}
	memset(&t->v[i], 0, sizeof(t->v[i]));
	t->n--;
}

void fresh_sweep(struct fresh_table *t, uint64_t now, size_t budget)
{
	for (size_t b = 0; b < budget && t->cap; b++) {
		size_t i = t->sweep & (t->cap - 1);
		if (t->v[i].name && t->v[i].until < now)
			remove_at(t, i);        /* another may have moved into i: looked at again */
		else
			t->sweep++;
	}
}

void fresh_free(struct fresh_table *t)
{
	free(t->v);
	memset(t, 0, sizeof(*t));
}
