#include <stdlib.h>
#include <string.h>

#include "refresh.h"

struct refresh_slot {
	uint64_t hash;                  /* the cache key's; 0 with asked_ms 0: empty */
	uint64_t asked_ms;
	uint64_t ask_ms;                /* an ask along ask_fp out since; 0: none */
	uint64_t ask_fp;
	uint16_t qtype, qclass;
	uint16_t udp_size;
	bool rd, cd, edns, edns_do;
	uint8_t qname_len;
	uint8_t qname[NAME_MAX_WIRE];
};

struct refresh {
	unsigned nslots;
	unsigned cursor;                /* the pass's next slot; nslots: no pass */
	uint64_t due_ms;                /* a pass is due at; 0: none */
	uint64_t last_pass_ms;
	struct refresh_slot slots[];
};

struct refresh *refresh_create(unsigned slots)
{
	if (slots == 0 || slots > REFRESH_MAX_SLOTS)
		return NULL;
	struct refresh *r = calloc(1, sizeof(*r) + slots * sizeof(r->slots[0]));
	if (!r)
		return NULL;
	r->nslots = slots;
	r->cursor = slots;
	return r;
}

void refresh_free(struct refresh *r)
{
	free(r);
}

/* How long ago then was; a then a little ahead of now (taken from another
 * clock, or a coarse one behind a precise one) is just now, not 584 million
 * years ago. */
static inline uint64_t age_ms(uint64_t now_ms, uint64_t then_ms)
{
	return now_ms > then_ms ? now_ms - then_ms : 0;
}

unsigned refresh_note(struct refresh *r, uint64_t key_hash, const struct dns_query *q, uint64_t now_ms)
{
	unsigned i = (unsigned)(key_hash % r->nslots);
	struct refresh_slot *s = &r->slots[i];
	if (s->hash == key_hash && s->asked_ms) {
		s->asked_ms = now_ms ? now_ms : 1;
		return i;
	}
	if (s->asked_ms && age_ms(now_ms, s->asked_ms) < REFRESH_KEEP_MS)
		return REFRESH_NO_SLOT;         /* another question, still asked: it stays */
	*s = (struct refresh_slot){
		.hash = key_hash, .asked_ms = now_ms ? now_ms : 1,
		.qtype = q->qtype, .qclass = q->qclass, .udp_size = q->edns_udp_raw,
		.rd = q->rd, .cd = q->cd, .edns = q->has_edns, .edns_do = q->edns_do,
		.qname_len = q->qname.len,
	};
	memcpy(s->qname, q->qname.wire, q->qname.len);
	return i;
}

void refresh_routes_changed(struct refresh *r, uint64_t now_ms)
{
	if (r->due_ms)
		return;
	uint64_t next = r->last_pass_ms + REFRESH_GAP_MS;
	r->due_ms = r->last_pass_ms && next > now_ms ? next : (now_ms ? now_ms : 1);
}

int refresh_timeout(const struct refresh *r, uint64_t now_ms)
{
	if (!r->due_ms)
		return -1;
	return r->due_ms > now_ms ? (int)(r->due_ms - now_ms) : 0;
}

bool refresh_begin(struct refresh *r, uint64_t now_ms)
{
	if (!r->due_ms || r->due_ms > now_ms)
		return false;
	r->due_ms = 0;
	r->last_pass_ms = now_ms;
	r->cursor = 0;
	return true;
}

size_t refresh_next(struct refresh *r, uint64_t now_ms, uint8_t *buf, size_t cap, unsigned *slot)
{
	for (; r->cursor < r->nslots; r->cursor++) {
		struct refresh_slot *s = &r->slots[r->cursor];
		if (!s->asked_ms || age_ms(now_ms, s->asked_ms) > REFRESH_RECENT_MS)
			continue;
		struct dns_query_spec spec = {
			.qname = s->qname, .qname_len = s->qname_len, .qtype = s->qtype, .qclass = s->qclass,
			.rd = s->rd, .cd = s->cd, .edns = s->edns, .edns_do = s->edns_do, .udp_size = s->udp_size,
		};
		size_t n = dns_query_write(&spec, buf, cap);
		if (n == 0)
			continue;
		*slot = r->cursor++;
		return n;
	}
	return 0;
}

bool refresh_wanted(const struct refresh *r, unsigned slot, uint64_t fp, uint64_t now_ms, uint32_t inflight_ms)
{
	if (slot >= r->nslots)
		return false;
	const struct refresh_slot *s = &r->slots[slot];
	return !(s->ask_ms && s->ask_fp == fp && age_ms(now_ms, s->ask_ms) < inflight_ms);
}

void refresh_started(struct refresh *r, unsigned slot, uint64_t fp, uint64_t now_ms)
{
	if (slot >= r->nslots)
		return;
	r->slots[slot].ask_ms = now_ms ? now_ms : 1;
	r->slots[slot].ask_fp = fp;
}

void refresh_done(struct refresh *r, unsigned slot)
{
	if (slot < r->nslots)
		r->slots[slot].ask_ms = 0;
}
