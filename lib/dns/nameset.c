/*
 * Name sets and lists; see nameset.h.
 */
#include <stdlib.h>
#include <string.h>
#include "hashkey.h"
#include "name.h"
#include "nameset.h"
#include "wire.h"
#include "vec.h"

#define DEAD_BIT        0x80u   /* in the entry's first wire byte */
#define SLOT_EMPTY      0u
#define SLOT_REMOVED    UINT32_MAX
#define MIN_SLOTS       64u
#define MAX_USED        ((size_t)UINT32_MAX - 1 - 256)  /* offsets + 1 fit a slot */

void nameset_init(struct nameset *s)
{
	memset(s, 0, sizeof(*s));
}

void nameset_free(struct nameset *s)
{
	free(s->buf);
	free(s->slots);
	nameset_init(s);
}

void nameset_clear(struct nameset *s)
{
	s->used = 0;
	s->dead_bytes = 0;
	s->count = 0;
	s->tombstones = 0;
	if (s->slots)
		memset(s->slots, 0, ((size_t)s->mask + 1) * sizeof(*s->slots));
}

static inline uint32_t hash(const uint8_t *wire, uint8_t len)
{
	return (uint32_t)hashkey64(wire, len);     /* names from peers and transfers */
}

static inline bool entry_is(const struct nameset *s, uint32_t slot, const uint8_t *wire, uint8_t len)
{
	const uint8_t *e = s->buf + slot - 1;
	return e[0] == len && memcmp(e + 1, wire, len) == 0;
}

/* Fills a zeroed table of nslots slots from the live entries. */
static void fill(struct nameset *s, uint32_t *slots, uint32_t nslots)
{
	uint32_t mask = nslots - 1;
	for (size_t p = 0; p < s->used; p += 1u + s->buf[p]) {
		if (s->buf[p + 1] & DEAD_BIT)
			continue;
		uint32_t i = hash(s->buf + p + 1, s->buf[p]) & mask;
		while (slots[i] != SLOT_EMPTY)
			i = (i + 1) & mask;
		slots[i] = (uint32_t)p + 1;
	}
	free(s->slots);
	s->slots = slots;
	s->mask = mask;
	s->tombstones = 0;
}

static int rehash(struct nameset *s, uint32_t nslots)
{
	uint32_t *slots = calloc(nslots, sizeof(*slots));
	if (!slots)
		return -1;
	fill(s, slots, nslots);
	return 0;
}

/* Moves live entries down over dead ones, then rebuilds the table. */
static int compact(struct nameset *s)
{
	uint32_t *slots = calloc((size_t)s->mask + 1, sizeof(*slots));
	if (!slots)
		return -1;      /* before anything moved: the set stays as it was */
	size_t o = 0;
	for (size_t p = 0; p < s->used;) {
		size_t n = 1u + s->buf[p];
		if (!(s->buf[p + 1] & DEAD_BIT)) {
			memmove(s->buf + o, s->buf + p, n);
			o += n;
		}
		p += n;
	}
	s->used = o;
	s->dead_bytes = 0;
	fill(s, slots, s->mask + 1);
	return 0;
}

/* The slot holding the name, or the mask + 1 when absent. */
static uint32_t find(const struct nameset *s, const uint8_t *wire, uint8_t len)
{
	if (!s->slots)
		return 0xffffffffu;
	uint32_t i = hash(wire, len) & s->mask;
	for (;;) {
		uint32_t v = s->slots[i];
		if (v == SLOT_EMPTY)
			return 0xffffffffu;
		if (v != SLOT_REMOVED && entry_is(s, v, wire, len))
			return i;
		i = (i + 1) & s->mask;
	}
}

bool nameset_contains(const struct nameset *s, const uint8_t *wire, uint8_t len)
{
	return find(s, wire, len) != 0xffffffffu;
}

static int grow_buf(struct nameset *s, size_t more)
{
	if (s->used + more > MAX_USED && s->used + more > s->cap)
		return -1;
	return VEC_RESERVE(s->buf, s->cap, s->used + more);
}

/* The table stays at most half full, tombstones counted. */
static int grow_slots(struct nameset *s, size_t more)
{
	size_t nslots = s->slots ? (size_t)s->mask + 1 : 0;
	if (((size_t)s->count + s->tombstones + more) * 2 <= nslots)
		return 0;
	size_t want = MIN_SLOTS;
	while (want < ((size_t)s->count + more) * 4)
		want *= 2;
	if (want > (1u << 31))
		return -1;
	return rehash(s, (uint32_t)want);
}

int nameset_reserve(struct nameset *s, uint32_t n, size_t bytes)
{
	return grow_slots(s, n) < 0 || grow_buf(s, bytes) < 0 ? -1 : 0;
}

/* Adds a name whose hash is h, with room for it already made: one probe finds it or its place. */
static int add_hashed(struct nameset *s, const uint8_t *wire, uint8_t len, uint32_t h)
{
	uint32_t i = h & s->mask, place = 0xffffffffu;
	for (;; i = (i + 1) & s->mask) {
		uint32_t v = s->slots[i];
		if (v == SLOT_EMPTY)
			break;
		if (v == SLOT_REMOVED) {
			if (place == 0xffffffffu)
				place = i;
		} else if (entry_is(s, v, wire, len)) {
			return 0;
		}
	}
	if (place == 0xffffffffu)
		place = i;
	else
		s->tombstones--;
	uint32_t off = (uint32_t)s->used;
	s->buf[off] = len;
	memcpy(s->buf + off + 1, wire, len);
	s->used += 1u + len;
	s->slots[place] = off + 1;
	s->count++;
	return 1;
}

int nameset_add(struct nameset *s, const uint8_t *wire, uint8_t len)
{
	if (len == 0)
		return -1;
	/* room first (perhaps for a name already there): then one probe */
	if (grow_slots(s, 1) < 0 || grow_buf(s, 1u + len) < 0)
		return -1;
	return add_hashed(s, wire, len, hash(wire, len));
}

#define ADD_AHEAD 16    /* names whose slots are fetched before the first of them is added */

int nameset_add_list(struct nameset *s, const uint8_t *buf, size_t len)
{
	uint32_t n = 0;
	size_t pos = 0;
	const uint8_t *w;
	uint8_t l;
	while (namelist_walk(buf, len, &pos, &w, &l))
		n++;
	if (nameset_reserve(s, n, len) < 0)
		return -1;
	/* a table miss each is what adding costs: ask for a block's slots, then add them */
	int added = 0;
	uint32_t h[ADD_AHEAD];
	const uint8_t *wires[ADD_AHEAD];
	uint8_t lens[ADD_AHEAD];
	pos = 0;
	for (;;) {
		unsigned k = 0;
		for (; k < ADD_AHEAD && namelist_walk(buf, len, &pos, &wires[k], &lens[k]); k++) {
			h[k] = hash(wires[k], lens[k]);
			__builtin_prefetch(&s->slots[h[k] & s->mask]);
		}
		for (unsigned i = 0; i < k; i++)
			added += add_hashed(s, wires[i], lens[i], h[i]);
		if (k < ADD_AHEAD)
			return added;
	}
}

int nameset_remove(struct nameset *s, const uint8_t *wire, uint8_t len)
{
	uint32_t i = find(s, wire, len);
	if (i == 0xffffffffu)
		return 0;
	uint8_t *e = s->buf + s->slots[i] - 1;
	e[1] |= DEAD_BIT;
	s->slots[i] = SLOT_REMOVED;
	s->tombstones++;
	s->count--;
	s->dead_bytes += 1u + len;
	/* reclaiming is an optimisation: out of memory, the set stays valid */
	if (s->dead_bytes > 65536 && s->dead_bytes * 2 > s->used)
		(void)compact(s);
	return 1;
}

bool nameset_next(const struct nameset *s, size_t *pos, const uint8_t **wire, uint8_t *len)
{
	while (*pos < s->used) {
		size_t p = *pos;
		*pos += 1u + s->buf[p];
		if (!(s->buf[p + 1] & DEAD_BIT)) {
			*len = s->buf[p];
			*wire = s->buf + p + 1;
			return true;
		}
	}
	return false;
}

int nameset_to_list(const struct nameset *s, struct namelist *l)
{
	namelist_clear(l);
	if (VEC_RESERVE(l->buf, l->cap, s->used) < 0)
		return -1;
	size_t pos = 0;
	const uint8_t *w;
	uint8_t len;
	while (nameset_next(s, &pos, &w, &len)) {
		l->buf[l->len] = len;
		memcpy(l->buf + l->len + 1, w, len);
		l->len += 1u + len;
	}
	l->count = s->count;
	return 0;
}

int nameset_copy(struct nameset *dst, const struct nameset *src)
{
	/* byte for byte: the offsets stay valid, and nothing is hashed again (a million names
	 * re-added cost two cache misses each) */
	uint8_t *buf = src->cap ? malloc(src->cap) : NULL;
	size_t nslots = src->slots ? (size_t)src->mask + 1 : 0;
	uint32_t *slots = nslots ? malloc(nslots * sizeof(*slots)) : NULL;
	if ((src->cap && !buf) || (nslots && !slots)) {
		free(buf);
		free(slots);
		return -1;
	}
	if (src->used)
		memcpy(buf, src->buf, src->used);
	if (nslots)
		memcpy(slots, src->slots, nslots * sizeof(*slots));
	free(dst->buf);
	free(dst->slots);
	*dst = *src;
	dst->buf = buf;
	dst->slots = slots;
	return 0;
}

void namelist_init(struct namelist *l)
{
	memset(l, 0, sizeof(*l));
}

void namelist_free(struct namelist *l)
{
	free(l->buf);
	namelist_init(l);
}

void namelist_clear(struct namelist *l)
{
	l->len = 0;
	l->count = 0;
}

int namelist_add(struct namelist *l, const uint8_t *wire, uint8_t len)
{
	if (l->count == UINT32_MAX)
		return -1;
	if (VEC_RESERVE(l->buf, l->cap, l->len + 1u + len) < 0)
		return -1;
	l->buf[l->len] = len;
	memcpy(l->buf + l->len + 1, wire, len);
	l->len += 1u + len;
	l->count++;
	return 0;
}

size_t namelist_scan(const uint8_t *buf, size_t buf_len, size_t *count)
{
	struct wire_reader r = wire_reader(buf, buf_len);
	size_t n = 0;
	while (wire_left(&r)) {
		const uint8_t *at = r.p;
		uint8_t len = wire_u8(&r);
		const uint8_t *w = wire_take(&r, len);
		if (!w || !name_wire_canonical(w, len)) {
			*count = n;
			return (size_t)(at - buf);
		}
		n++;
	}
	*count = n;
	return buf_len;
}

bool namelist_check(const uint8_t *buf, size_t buf_len, uint32_t count)
{
	size_t n;
	return namelist_scan(buf, buf_len, &n) == buf_len && n == count;
}

int nameset_diff(const struct nameset *old, const struct nameset *new_set,
		 struct namelist *dels, struct namelist *adds)
{
	namelist_clear(dels);
	namelist_clear(adds);
	size_t pos = 0;
	const uint8_t *w;
	uint8_t l;
	while (nameset_next(old, &pos, &w, &l))
		if (!nameset_contains(new_set, w, l) && namelist_add(dels, w, l) < 0)
			return -1;
	pos = 0;
	while (nameset_next(new_set, &pos, &w, &l))
		if (!nameset_contains(old, w, l) && namelist_add(adds, w, l) < 0)
			return -1;
	return 0;
}
