/*
 * Response Policy Zones: the zone's records and the rule table; see rpz.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "dns.h"
#include "hashkey.h"
#include "rpz.h"
#include "vec.h"
#include "wire.h"

const char *rpz_action_name(enum rpz_action a)
{
	static const char *const names[RPZ_ACTIONS] = {
		[RPZ_NXDOMAIN] = "nxdomain", [RPZ_NODATA] = "nodata", [RPZ_PASSTHRU] = "passthru",
		[RPZ_DROP] = "drop", [RPZ_TCP_ONLY] = "tcp-only", [RPZ_LOCAL] = "local-data",
	};
	return a < RPZ_ACTIONS ? names[a] : "?";
}

/* ---- the zone's records ---- */

/* key: [owner len][owner][type][rdlen][rdata]; the hash covers the owner, the TTL is not part of the key */
struct rrec {
	uint64_t h;
	uint32_t ttl;
	uint32_t klen;
	uint8_t key[];
};

struct rpz_zone {
	struct name apex;
	struct rrec **slots;
	size_t mask;                    /* slots - 1; 0: none yet */
	size_t count;
};

static const uint8_t *rec_owner(const struct rrec *r, uint8_t *len)
{
	*len = r->key[0];
	return r->key + 1;
}

static uint16_t rec_type(const struct rrec *r)
{
	return wire_load16(r->key + 1 + r->key[0]);
}

static const uint8_t *rec_rdata(const struct rrec *r, uint16_t *rdlen)
{
	const uint8_t *p = r->key + 1 + r->key[0] + 2;
	*rdlen = wire_load16(p);
	return p + 2;
}

static struct rrec *rec_make(const struct name *owner, uint16_t type, uint32_t ttl, const uint8_t *rdata,
			     uint16_t rdlen)
{
	uint32_t klen = 1u + owner->len + 4u + rdlen;
	struct rrec *r = malloc(sizeof(*r) + klen);
	if (!r)
		return NULL;
	r->ttl = ttl;
	r->klen = klen;
	r->key[0] = owner->len;
	memcpy(r->key + 1, owner->wire, owner->len);
	wire_store16(r->key + 1 + owner->len, type);
	wire_store16(r->key + 3 + owner->len, rdlen);
	if (rdlen)
		memcpy(r->key + 5 + owner->len, rdata, rdlen);
	/* an owner's records probe from one home, so they are found together; keyed: the primary chooses no slot */
	r->h = hashkey64(r->key, 1u + owner->len);
	return r;
}

struct rpz_zone *rpz_zone_new(const struct name *apex)
{
	struct rpz_zone *z = calloc(1, sizeof(*z));
	if (z)
		name_copy(&z->apex, apex);
	return z;
}

void rpz_zone_clear(struct rpz_zone *z)
{
	for (size_t i = 0; z->mask && i <= z->mask; i++) {
		free(z->slots[i]);
		z->slots[i] = NULL;
	}
	z->count = 0;
}

void rpz_zone_free(struct rpz_zone *z)
{
	if (!z)
		return;
	rpz_zone_clear(z);
	free(z->slots);
	free(z);
}

const struct name *rpz_zone_apex(const struct rpz_zone *z)
{
	return &z->apex;
}

uint64_t rpz_zone_records(const struct rpz_zone *z)
{
	return z->count;
}

/* The slot holding r's key, or the empty slot where it would go. */
static size_t find_slot(const struct rpz_zone *z, const struct rrec *r)
{
	size_t i = r->h & z->mask;
	while (z->slots[i]) {
		const struct rrec *s = z->slots[i];
		if (s->h == r->h && s->klen == r->klen && memcmp(s->key, r->key, r->klen) == 0)
			return i;
		i = (i + 1) & z->mask;
	}
	return i;
}

static int grow(struct rpz_zone *z)
{
	size_t cap = z->mask ? (z->mask + 1) * 2 : 64;
	struct rrec **slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -1;
	struct rpz_zone n = { .slots = slots, .mask = cap - 1 };
	for (size_t i = 0; z->mask && i <= z->mask; i++)
		if (z->slots[i])
			slots[find_slot(&n, z->slots[i])] = z->slots[i];
	free(z->slots);
	z->slots = slots;
	z->mask = cap - 1;
	return 0;
}

/* Takes the record out of slot i, shifting back the ones that probed past it. */
static void remove_slot(struct rpz_zone *z, size_t i)
{
	size_t j = i;
	for (;;) {
		j = (j + 1) & z->mask;
		if (!z->slots[j])
			break;
		size_t k = z->slots[j]->h & z->mask;
		/* move it back unless its home lies cyclically in (i, j] */
		bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
		if (!stays) {
			z->slots[i] = z->slots[j];
			i = j;
		}
	}
	z->slots[i] = NULL;
	z->count--;
}

/* Makes room for one more record: -1 out of memory. */
static int room(struct rpz_zone *z)
{
	return (z->count + 1) * 2 > z->mask + 1 ? grow(z) : 0;
}

static int put(struct rpz_zone *z, struct rrec *r)
{
	if (room(z) < 0) {
		free(r);
		return -2;
	}
	size_t i = find_slot(z, r);
	if (z->slots[i]) {
		z->slots[i]->ttl = r->ttl;      /* a repeat: one record */
		free(r);
		return 0;
	}
	z->slots[i] = r;
	z->count++;
	return 0;
}

int rpz_zone_put(struct rpz_zone *z, const struct name *owner, uint16_t type, uint32_t ttl,
		 const uint8_t *rdata, uint16_t rdlen)
{
	struct rrec *r = rec_make(owner, type, ttl, rdata, rdlen);
	if (!r)
		return -1;
	return put(z, r) < 0 ? -1 : 0;
}

/* ---- a diff: the changes one transfer made to the zone, to undo, journal and compile ---- */

enum { CH_ADD, CH_TTL, CH_DEL };

struct change {
	struct rrec *r;                 /* CH_ADD, CH_TTL: in the zone; CH_DEL: taken out, owned here */
	uint32_t old_ttl;               /* CH_TTL */
	uint8_t op;
};

/* What an owner's records amount to in a table: at most one rule, and what was left out. */
struct contrib {
	bool rule, wild;
	uint8_t action;
	uint32_t bad, ignored;
};

/* An owner the diff changed, and what it amounted to before. */
struct touched {
	uint64_t h;                     /* the owner's hash (its records') */
	struct contrib before;
	uint8_t len;
	uint8_t owner[NAME_MAX_WIRE];
};

struct rpz_diff {
	struct change *ch;
	size_t nch, ch_cap;
	struct touched *own;
	size_t nown, own_cap;
	uint32_t *index;                /* own's index + 1 by owner hash; 0: empty */
	size_t index_mask;
};

struct rpz_diff *rpz_diff_new(void)
{
	return calloc(1, sizeof(struct rpz_diff));
}

static void diff_clear(struct rpz_diff *d)
{
	for (size_t i = 0; i < d->nch; i++)
		if (d->ch[i].op == CH_DEL)
			free(d->ch[i].r);
	d->nch = 0;
	d->nown = 0;
	if (d->index)
		memset(d->index, 0, (d->index_mask + 1) * sizeof(*d->index));
}

void rpz_diff_free(struct rpz_diff *d)
{
	if (!d)
		return;
	diff_clear(d);
	free(d->ch);
	free(d->own);
	free(d->index);
	free(d);
}

size_t rpz_diff_changes(const struct rpz_diff *d)
{
	return d ? d->nch : 0;
}

static int contrib_of(const struct rpz_zone *z, const uint8_t *owner, uint8_t len, uint64_t h, struct contrib *c);

/* The owner in d->own, found or (what it amounts to taken now, before the change) added; -1 out of memory. */
static int touch(struct rpz_diff *d, const struct rpz_zone *z, const struct rrec *r)
{
	if ((d->nown + 1) * 2 > d->index_mask + 1) {
		size_t cap = d->index_mask ? (d->index_mask + 1) * 2 : 64;
		uint32_t *index = calloc(cap, sizeof(*index));
		if (!index)
			return -1;
		for (size_t k = 0; k < d->nown; k++) {
			size_t i = d->own[k].h & (cap - 1);
			while (index[i])
				i = (i + 1) & (cap - 1);
			index[i] = (uint32_t)k + 1;
		}
		free(d->index);
		d->index = index;
		d->index_mask = cap - 1;
	}
	size_t i = r->h & d->index_mask;
	for (; d->index[i]; i = (i + 1) & d->index_mask) {
		const struct touched *t = &d->own[d->index[i] - 1];
		if (t->h == r->h && t->len == r->key[0] && memcmp(t->owner, r->key + 1, t->len) == 0)
			return 0;
	}
	if (d->nown >= UINT32_MAX - 1 || VEC_RESERVE(d->own, d->own_cap, d->nown + 1) < 0)
		return -1;
	struct touched *t = &d->own[d->nown];
	t->h = r->h;
	t->len = r->key[0];
	memcpy(t->owner, r->key + 1, t->len);
	if (contrib_of(z, t->owner, t->len, t->h, &t->before) < 0)
		return -1;
	d->index[i] = (uint32_t)++d->nown;
	return 0;
}

/*
 * r (made by rec_make, taken) added or removed, recorded in d when one is
 * given.  0, 1 a removal of what is not there, -2 out of memory.
 */
static int change(struct rpz_zone *z, bool add, struct rrec *r, struct rpz_diff *d)
{
	if (!d) {
		if (add)
			return put(z, r);
		int rc = 1;
		if (z->mask) {
			size_t i = find_slot(z, r);
			if (z->slots[i]) {
				free(z->slots[i]);
				remove_slot(z, i);
				rc = 0;
			}
		}
		free(r);
		return rc;
	}
	if (VEC_RESERVE(d->ch, d->ch_cap, d->nch + 1) < 0 || (add && room(z) < 0) || touch(d, z, r) < 0) {
		free(r);
		return -2;
	}
	size_t i = z->mask ? find_slot(z, r) : 0;
	struct change *c = &d->ch[d->nch];
	if (add && z->slots[i]) {
		*c = (struct change){ .r = z->slots[i], .old_ttl = z->slots[i]->ttl, .op = CH_TTL };
		z->slots[i]->ttl = r->ttl;
		free(r);
	} else if (add) {
		*c = (struct change){ .r = r, .op = CH_ADD };
		z->slots[i] = r;
		z->count++;
	} else {
		free(r);
		if (!z->mask || !z->slots[i])
			return 1;
		*c = (struct change){ .r = z->slots[i], .op = CH_DEL };
		remove_slot(z, i);
	}
	d->nch++;
	return 0;
}

void rpz_diff_undo(struct rpz_zone *z, struct rpz_diff *d)
{
	if (!d)
		return;
	while (d->nch) {
		struct change *c = &d->ch[--d->nch];
		size_t i = find_slot(z, c->r);
		if (c->op == CH_TTL) {
			c->r->ttl = c->old_ttl;
		} else if (c->op == CH_ADD) {
			remove_slot(z, i);
			free(c->r);
		} else {
			/* an empty slot: the table is as it was just after the removal */
			z->slots[i] = c->r;
			z->count++;
		}
	}
	diff_clear(d);
}

int rpz_zone_change(struct rpz_zone *z, bool add, const uint8_t *msg, size_t msg_len,
		    const struct dns_rr *rr, const struct name *owner, struct rpz_diff *d, const char **why)
{
	const uint8_t *rdata = rr->rdata;
	uint16_t rdlen = rr->rdlen;
	struct name target;
	/* a CNAME's target may be compressed: kept whole, so a removal matches however it came */
	if (rr->type == DNS_TYPE_CNAME) {
		struct wire_reader r = wire_reader(rr->rdata, (size_t)(msg + msg_len - rr->rdata));
		if (dns_name_read(&r, msg, &target) != NAME_OK || r.p != rr->rdata + rr->rdlen) {
			*why = "bad CNAME data";
			return -1;
		}
		rdata = target.wire;
		rdlen = target.len;
	}
	struct rrec *r = rec_make(owner, rr->type, rr->ttl, rdata, rdlen);
	if (!r)
		return -2;
	return change(z, add, r, d);
}

struct rpz_zone *rpz_zone_copy(const struct rpz_zone *z)
{
	struct rpz_zone *c = rpz_zone_new(&z->apex);
	if (!c)
		return NULL;
	if (z->mask) {
		c->slots = calloc(z->mask + 1, sizeof(*c->slots));
		if (!c->slots) {
			free(c);
			return NULL;
		}
		c->mask = z->mask;
	}
	for (size_t i = 0; z->mask && i <= z->mask; i++) {
		if (!z->slots[i])
			continue;
		size_t sz = sizeof(struct rrec) + z->slots[i]->klen;
		if (!(c->slots[i] = malloc(sz))) {
			rpz_zone_free(c);
			return NULL;
		}
		memcpy(c->slots[i], z->slots[i], sz);
		c->count++;
	}
	return c;
}

bool rpz_zone_walk(const struct rpz_zone *z, size_t *pos, struct name *owner, uint16_t *type, uint32_t *ttl,
		   const uint8_t **rdata, uint16_t *rdlen)
{
	for (; z->mask && *pos <= z->mask; ++*pos) {
		const struct rrec *r = z->slots[*pos];
		if (!r)
			continue;
		uint8_t olen;
		const uint8_t *o = rec_owner(r, &olen);
		memcpy(owner->wire, o, olen);
		owner->len = olen;
		*type = rec_type(r);
		*ttl = r->ttl;
		*rdata = rec_rdata(r, rdlen);
		++*pos;
		return true;
	}
	return false;
}

/* ---- the zone's last good copy ---- */

static const uint8_t dump_magic[8] = { 'I', 'N', 'R', 'P', 'R', 'P', 'Z', '2' };

uint8_t *rpz_zone_dump(const struct rpz_zone *z, const struct rpz_dump_head *h, size_t *len)
{
	size_t size = sizeof(dump_magic) + 1 + z->apex.len + 12 + 8 + 8 + 8;
	for (size_t i = 0; z->mask && i <= z->mask; i++)
		if (z->slots[i])
			size += z->slots[i]->klen + 4;          /* the key, and the TTL */
	uint8_t *buf = malloc(size);
	if (!buf)
		return NULL;
	struct wire_writer w = wire_writer(buf, size);
	wire_put(&w, dump_magic, sizeof(dump_magic));
	wire_put8(&w, z->apex.len);
	wire_put(&w, z->apex.wire, z->apex.len);
	wire_put32(&w, h->serial);
	wire_put32(&w, h->refresh);
	wire_put32(&w, h->retry);
	wire_put64(&w, h->epoch);
	wire_put64(&w, z->count);
	for (size_t i = 0; z->mask && i <= z->mask; i++) {
		const struct rrec *r = z->slots[i];
		if (!r)
			continue;
		wire_put32(&w, r->ttl);
		wire_put(&w, r->key, r->klen);
	}
	wire_put64(&w, XXH3_64bits(buf, wire_written(&w)));
	if (w.bad) {
		free(buf);
		return NULL;
	}
	*len = wire_written(&w);
	return buf;
}

int rpz_zone_undump(struct rpz_zone *z, const uint8_t *buf, size_t len, struct rpz_dump_head *h, const char **why)
{
	rpz_zone_clear(z);
	struct wire_reader r = wire_reader(buf, len);
	const uint8_t *magic = wire_take(&r, sizeof(dump_magic));
	if (!magic || memcmp(magic, dump_magic, sizeof(dump_magic)) != 0) {
		*why = "not a policy zone file";
		return -1;
	}
	if (len < 8 || wire_load64(buf + len - 8) != XXH3_64bits(buf, len - 8)) {
		*why = "checksum mismatch (torn or damaged)";
		return -1;
	}
	r = wire_reader(buf + sizeof(dump_magic), len - sizeof(dump_magic) - 8);
	uint8_t alen = wire_u8(&r);
	const uint8_t *apex = wire_take(&r, alen);
	if (!apex || alen != z->apex.len || memcmp(apex, z->apex.wire, alen) != 0) {
		*why = "another zone's file";
		return -1;
	}
	h->serial = wire_u32(&r);
	h->refresh = wire_u32(&r);
	h->retry = wire_u32(&r);
	h->epoch = wire_u64(&r);
	uint64_t count = wire_u64(&r);
	for (uint64_t i = 0; i < count && !r.bad; i++) {
		uint32_t ttl = wire_u32(&r);
		uint8_t olen = wire_u8(&r);
		const uint8_t *o = wire_take(&r, olen);
		uint16_t type = wire_u16(&r), rdlen = wire_u16(&r);
		const uint8_t *rd = wire_take(&r, rdlen);
		struct name owner;
		if (r.bad || name_from_wire(&owner, o, olen) != NAME_OK || !name_is_subdomain(&owner, &z->apex)) {
			*why = "a bad record";
			rpz_zone_clear(z);
			return -1;
		}
		if (rpz_zone_put(z, &owner, type, ttl, rd, rdlen) < 0) {
			*why = "out of memory";
			rpz_zone_clear(z);
			return -1;
		}
	}
	if (r.bad || wire_left(&r) != 0) {
		*why = r.bad ? "cut short" : "bytes after the records";
		rpz_zone_clear(z);
		return -1;
	}
	return 0;
}

/* ---- the journal: the diffs since the last good copy ---- */

static const uint8_t journal_magic[8] = { 'I', 'N', 'R', 'P', 'J', 'N', 'L', '1' };

void rpz_journal_head(uint8_t out[RPZ_JOURNAL_HEAD], uint64_t epoch)
{
	memcpy(out, journal_magic, sizeof(journal_magic));
	wire_store64(out + 8, epoch);
	wire_store64(out + 16, XXH3_64bits(out, 16));
}

uint8_t *rpz_diff_dump(const struct rpz_diff *d, const struct rpz_dump_head *from, const struct rpz_dump_head *to,
		       size_t *len)
{
	size_t size = 4 + 16 + 8 + 8;
	for (size_t i = 0; i < d->nch; i++)
		size += 1 + 4 + d->ch[i].r->klen;
	if (size - 4 > UINT32_MAX)
		return NULL;
	uint8_t *buf = malloc(size);
	if (!buf)
		return NULL;
	struct wire_writer w = wire_writer(buf, size);
	wire_put32(&w, (uint32_t)(size - 4 - 8));
	wire_put32(&w, from->serial);
	wire_put32(&w, to->serial);
	wire_put32(&w, to->refresh);
	wire_put32(&w, to->retry);
	wire_put64(&w, d->nch);
	for (size_t i = 0; i < d->nch; i++) {
		const struct change *c = &d->ch[i];
		wire_put8(&w, c->op != CH_DEL);
		wire_put32(&w, c->r->ttl);      /* an add's TTL as it ended: the same zone when replayed */
		wire_put(&w, c->r->key, c->r->klen);
	}
	wire_put64(&w, XXH3_64bits(buf, wire_written(&w)));
	if (w.bad) {
		free(buf);
		return NULL;
	}
	*len = wire_written(&w);
	return buf;
}

/* One entry's changes, from after its serials to its end; 0, or -1 with why (d then holds what to undo). */
static int replay_changes(struct rpz_zone *z, struct wire_reader *r, struct rpz_diff *d, const char **why)
{
	uint64_t count = wire_u64(r);
	for (uint64_t i = 0; i < count && !r->bad; i++) {
		uint8_t op = wire_u8(r);
		uint32_t ttl = wire_u32(r);
		uint8_t olen = wire_u8(r);
		const uint8_t *o = wire_take(r, olen);
		uint16_t type = wire_u16(r), rdlen = wire_u16(r);
		const uint8_t *rd = wire_take(r, rdlen);
		struct name owner;
		if (r->bad || op > 1 || name_from_wire(&owner, o, olen) != NAME_OK ||
		    !name_is_subdomain(&owner, &z->apex)) {
			*why = "a bad record";
			return -1;
		}
		struct rrec *rec = rec_make(&owner, type, ttl, rd, rdlen);
		int rc = rec ? change(z, op == 1, rec, d) : -2;
		if (rc != 0) {
			*why = rc == 1 ? "a removal that does not apply" : "out of memory";
			return -1;
		}
	}
	if (r->bad || wire_left(r) != 0) {
		*why = r->bad ? "cut short" : "bytes after the records";
		return -1;
	}
	return 0;
}

int rpz_journal_replay(struct rpz_zone *z, const uint8_t *buf, size_t len, struct rpz_dump_head *h,
		       size_t *good, unsigned *entries, const char **why)
{
	*good = 0;
	*entries = 0;
	uint8_t want[RPZ_JOURNAL_HEAD];
	rpz_journal_head(want, h->epoch);
	if (len < RPZ_JOURNAL_HEAD || memcmp(buf, want, RPZ_JOURNAL_HEAD) != 0) {
		*why = "not the journal of this copy";
		return -1;
	}
	struct rpz_diff *d = rpz_diff_new();
	if (!d) {
		*why = "out of memory";
		return -1;
	}
	size_t pos = RPZ_JOURNAL_HEAD;
	*good = pos;
	int rc = 0;
	while (pos < len) {
		/* a crash leaves at most the last entry torn: everything before it is whole */
		uint32_t body = len - pos >= 4 ? wire_load32(buf + pos) : 0;
		if (len - pos < 4 || len - pos - 4 < 8 || body > len - pos - 4 - 8 || body < 24) {
			*why = "a torn entry at the end";
			rc = 1;
			break;
		}
		if (wire_load64(buf + pos + 4 + body) != XXH3_64bits(buf + pos, 4 + (size_t)body)) {
			*why = "checksum mismatch (torn or damaged)";
			rc = 1;
			break;
		}
		struct wire_reader r = wire_reader(buf + pos + 4, body);
		uint32_t from = wire_u32(&r), to = wire_u32(&r), refresh = wire_u32(&r), retry = wire_u32(&r);
		if (from != h->serial) {
			*why = "an entry that does not follow the serial held";
			rc = 1;
			break;
		}
		if (replay_changes(z, &r, d, why) < 0) {
			rpz_diff_undo(z, d);
			rc = 1;
			break;
		}
		diff_clear(d);
		h->serial = to;
		h->refresh = refresh;
		h->retry = retry;
		pos += 4 + (size_t)body + 8;
		*good = pos;
		++*entries;
	}
	rpz_diff_free(d);
	return rc;
}

/* ---- the rule table ---- */

#define WILD_SALT 0x9e3779b97f4a7c15ull
#define RULE_GONE RPZ_ACTIONS           /* a delta's: the key has no rule any more */

struct rule {
	uint64_t h;
	uint32_t key_off, data_off, data_len, ttl;
	uint8_t key_len;
	uint8_t wild;
	uint8_t action;
};

/* Rules under one open-addressing hash; never changed once indexed. */
struct ruleset {
	unsigned refs;                  /* tables sharing it: the writer's thread only */
	uint32_t mask;
	uint64_t *slots;                /* the hash's top 32 bits, then rule index + 1; 0: empty */
	struct rule *rules;
	uint32_t nrules;
	size_t rules_cap;
	uint8_t *blob;                  /* keys, then local data */
	size_t blob_len, blob_cap;
	uint64_t exact_labels;          /* bit n: an exact trigger of n labels (63: 63 or more) */
	uint64_t wild_labels;           /* bit n: a wildcard whose suffix has n labels */
};

/*
 * A table is a base and, after IXFRs, a delta: the rules of the owners
 * the diffs changed, each replacing base's rule for its key (RULE_GONE:
 * none now).  An IXFR makes a new table sharing the base, its delta the
 * old one's with the diff's owners recompiled: work in proportion to the
 * delta, published by one pointer swap, so a reader sees the whole IXFR or
 * none of it.  Changing the base in place would need a version in every
 * slot or a copy per bucket for the same guarantee, and a lookup that
 * checks them; the delta costs a lookup one probe of a small table, and
 * none once rpz_table_compact (off the loop) has folded it into a new base.
 */
struct rpz_table {
	unsigned refs;                  /* the writer's thread only */
	struct ruleset *base;
	struct ruleset *delta;          /* NULL: none */
	uint64_t exact_labels, wild_labels;     /* both sets' */
	struct rpz_table_stats st;
};

static inline uint64_t label_bit(unsigned n)
{
	return 1ull << (n < 63 ? n : 63);
}

static inline uint64_t key_hash(const uint8_t *key, size_t len, bool wild)
{
	return hashkey64(key, len) ^ (wild ? WILD_SALT : 0);
}

static unsigned key_labels(const uint8_t *key, size_t len)
{
	unsigned n = 0;
	for (size_t i = 0; i < len; i += 1u + key[i])
		n++;
	return n;
}

static struct ruleset *ruleset_new(void)
{
	struct ruleset *rs = calloc(1, sizeof(*rs));
	if (rs)
		rs->refs = 1;
	return rs;
}

static void ruleset_unref(struct ruleset *rs)
{
	if (!rs || --rs->refs)
		return;
	free(rs->slots);
	free(rs->rules);
	free(rs->blob);
	free(rs);
}

static int blob_put(struct ruleset *rs, const void *p, size_t n)
{
	/* at least a byte: a rule's empty key (the zone's own wildcard) still points into a blob */
	if (rs->blob_len + n > UINT32_MAX || VEC_RESERVE(rs->blob, rs->blob_cap, rs->blob_len + (n ? n : 1)) < 0)
		return -1;              /* offsets into it are 32 bits */
	if (n)
		memcpy(rs->blob + rs->blob_len, p, n);
	rs->blob_len += n;
	return 0;
}

static int rule_put(struct ruleset *rs, const struct rule *r)
{
	if (rs->nrules >= UINT32_MAX - 1 || VEC_RESERVE(rs->rules, rs->rules_cap, (size_t)rs->nrules + 1) < 0)
		return -1;
	rs->rules[rs->nrules++] = *r;
	if (r->action != RULE_GONE) {
		unsigned labels = key_labels(rs->blob + r->key_off, r->key_len);
		if (r->wild)
			rs->wild_labels |= label_bit(labels);
		else
			rs->exact_labels |= label_bit(labels);
	}
	return 0;
}

/* Another set's rule r, its key and data copied. */
static int rule_copy(struct ruleset *rs, const struct ruleset *from, const struct rule *r)
{
	struct rule c = *r;
	c.key_off = (uint32_t)rs->blob_len;
	if (blob_put(rs, from->blob + r->key_off, r->key_len) < 0)
		return -1;
	c.data_off = (uint32_t)rs->blob_len;
	if (blob_put(rs, from->blob + r->data_off, r->data_len) < 0)
		return -1;
	return rule_put(rs, &c);
}

/* The hash over the rules; a probe reads a rule only when its tag agrees. */
static int ruleset_index(struct ruleset *rs)
{
	uint32_t cap = 16;
	while (cap < 2u * rs->nrules)
		cap *= 2;
	uint64_t *slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -1;
	free(rs->slots);
	rs->slots = slots;
	rs->mask = cap - 1;
	for (uint32_t i = 0; i < rs->nrules; i++) {
		uint64_t h = rs->rules[i].h;
		uint32_t s = (uint32_t)h & rs->mask;
		while (slots[s])
			s = (s + 1) & rs->mask;
		slots[s] = (h & 0xffffffff00000000ull) | (i + 1u);
	}
	return 0;
}

static const struct rule *probe(const struct ruleset *rs, uint64_t h, const uint8_t *key, size_t len, bool wild)
{
	for (uint32_t s = (uint32_t)h & rs->mask; rs->slots[s]; s = (s + 1) & rs->mask) {
		if ((rs->slots[s] ^ h) >> 32)
			continue;
		const struct rule *r = &rs->rules[(uint32_t)rs->slots[s] - 1];
		if (r->h == h && r->key_len == len && r->wild == wild && memcmp(rs->blob + r->key_off, key, len) == 0)
			return r;
	}
	return NULL;
}

static int cmp_owner(const void *a, const void *b)
{
	const struct rrec *x = *(const struct rrec *const *)a, *y = *(const struct rrec *const *)b;
	if (x->key[0] != y->key[0])
		return x->key[0] < y->key[0] ? -1 : 1;
	int c = memcmp(x->key + 1, y->key + 1, x->key[0]);
	if (c)
		return c;
	/* CNAME first, then a total order: a diff's owner compiles as the whole zone's does */
	bool xc = rec_type(x) == DNS_TYPE_CNAME, yc = rec_type(y) == DNS_TYPE_CNAME;
	if (xc != yc)
		return xc ? -1 : 1;
	if (x->klen != y->klen)
		return x->klen < y->klen ? -1 : 1;
	return memcmp(x->key, y->key, x->klen);
}

/*
 * An owner's records side by side for compiling: sorted by the owner's
 * hash first, so the sort compares integers held in the array and reads
 * the records themselves only when two hashes agree.
 */
struct by_owner {
	uint64_t h;
	struct rrec *r;
};

static int cmp_by_owner(const void *a, const void *b)
{
	const struct by_owner *x = a, *y = b;
	if (x->h != y->h)
		return x->h < y->h ? -1 : 1;
	return cmp_owner(&x->r, &y->r);
}

static bool has_label(const uint8_t *w, size_t len, const char *label)
{
	size_t n = strlen(label);
	return len == n + 2 && w[0] == n && memcmp(w + 1, label, n) == 0 && w[n + 1] == 0;
}

/* The action a CNAME target names (RPZ section 4.2); RPZ_LOCAL for a walled garden. */
static int cname_action(const uint8_t *t, uint16_t len, const struct name *trigger, const char **why)
{
	if (len == 1)
		return RPZ_NXDOMAIN;
	if (has_label(t, len, "*"))
		return RPZ_NODATA;
	if (has_label(t, len, "rpz-passthru"))
		return RPZ_PASSTHRU;
	if (has_label(t, len, "rpz-drop"))
		return RPZ_DROP;
	if (has_label(t, len, "rpz-tcp-only"))
		return RPZ_TCP_ONLY;
	/* the old passthru: a CNAME to the name itself */
	if (len == trigger->len && memcmp(t, trigger->wire, len) == 0)
		return RPZ_PASSTHRU;
	if (t[0] == 1 && t[1] == '*') {
		*why = "a wildcard CNAME target other than *. is not supported";
		return -1;
	}
	return RPZ_LOCAL;
}

/* Whether local data of this type and RDATA can be answered. */
static bool local_ok(uint16_t type, const uint8_t *rd, uint16_t rdlen, const char **why)
{
	switch (type) {
	case DNS_TYPE_A:
		*why = "A data not 4 bytes";
		return rdlen == 4;
	case DNS_TYPE_AAAA:
		*why = "AAAA data not 16 bytes";
		return rdlen == 16;
	case DNS_TYPE_TXT: {
		size_t i = 0;
		while (i < rdlen)
			i += 1u + rd[i];
		*why = "bad TXT data";
		return rdlen > 0 && i == rdlen;
	}
	default:
		*why = "unsupported type for local data (A, AAAA, TXT, CNAME)";
		return false;
	}
}

/* Other triggers of the RPZ format, which this resolver does not apply. */
static bool other_trigger(const uint8_t *key, size_t len)
{
	static const char *const kinds[] = { "rpz-ip", "rpz-nsip", "rpz-nsdname", "rpz-client-ip" };
	if (len == 0)
		return false;
	size_t last = 0;
	for (size_t i = 0; i < len; i += 1u + key[i])
		last = i;
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		if (key[last] == strlen(kinds[k]) && memcmp(key + last + 1, kinds[k], key[last]) == 0)
			return true;
	return false;
}

struct builder {
	struct ruleset *rs;             /* NULL: what the owner amounts to, nothing written */
	rpz_bad_fn bad;
	void *arg;
};

static void bad(struct builder *b, struct contrib *c, const struct rrec *r, const char *why)
{
	c->bad++;
	if (b->bad) {
		struct name n;
		uint8_t len;
		const uint8_t *o = rec_owner(r, &len);
		memcpy(n.wire, o, len);
		n.len = len;
		b->bad(b->arg, &n, rec_type(r), why);
	}
}

static int put_data(struct builder *b, const void *p, size_t n)
{
	return b->rs ? blob_put(b->rs, p, n) : 0;
}

/* An owner (below apex) as a table's key: the name relative to the zone, without a wildcard's "*". */
static void owner_key(const uint8_t *owner, uint8_t olen, const struct name *apex, const uint8_t **key,
		      size_t *klen, bool *wild)
{
	*klen = (size_t)olen - apex->len;
	*key = owner;
	*wild = *klen > 0 && owner[0] == 1 && owner[1] == '*';
	if (*wild) {
		*key += 2;
		*klen -= 2;
	}
}

/* One owner's records (CNAME first) as at most one rule; c says what they amount to. */
static int compile_owner(struct builder *b, const struct name *apex, const struct by_owner *recs, size_t n,
			 struct contrib *c)
{
	uint8_t olen;
	const uint8_t *owner = rec_owner(recs[0].r, &olen);
	const uint8_t *key;
	size_t klen;
	bool wild;
	memset(c, 0, sizeof(*c));
	owner_key(owner, olen, apex, &key, &klen, &wild);
	if (olen == apex->len) {
		for (size_t i = 0; i < n; i++) {
			uint16_t type = rec_type(recs[i].r);
			if (type == DNS_TYPE_SOA || type == DNS_TYPE_NS)
				c->ignored++;
			else
				bad(b, c, recs[i].r, "data at the zone's apex");
		}
		return 0;
	}
	if (other_trigger(owner, (size_t)olen - apex->len)) {
		for (size_t i = 0; i < n; i++)
			bad(b, c, recs[i].r, "not a QNAME trigger (rpz-ip, rpz-nsip, rpz-nsdname, rpz-client-ip)");
		return 0;
	}
	struct name trigger;            /* the name the rule is for, for the old passthru */
	memcpy(trigger.wire, owner, klen + (wild ? 2 : 0));
	trigger.wire[klen + (wild ? 2 : 0)] = 0;
	trigger.len = (uint8_t)(klen + (wild ? 2 : 0) + 1);

	struct rule r = { .key_len = (uint8_t)klen, .wild = wild, .ttl = UINT32_MAX,
			  .h = key_hash(key, klen, wild) };
	const char *why = NULL;
	size_t first = 0;
	int action = -1;
	/* a CNAME says everything: any other record beside it is left out */
	for (; first < n && rec_type(recs[first].r) == DNS_TYPE_CNAME && action < 0; first++) {
		uint16_t rdlen;
		const uint8_t *rd = rec_rdata(recs[first].r, &rdlen);
		action = cname_action(rd, rdlen, &trigger, &why);
		if (action < 0)
			bad(b, c, recs[first].r, why);
		else
			r.ttl = recs[first].r->ttl;
	}
	if (action >= 0) {
		for (size_t i = first; i < n; i++)
			bad(b, c, recs[i].r, "beside a CNAME");
		n = first;
		first--;
	}
	size_t start = b->rs ? b->rs->blob_len : 0;
	r.key_off = (uint32_t)start;
	if (put_data(b, key, klen) < 0)
		return -1;
	r.data_off = (uint32_t)(b->rs ? b->rs->blob_len : 0);
	bool by_cname = action >= 0;
	for (size_t i = first; i < n; i++) {     /* a CNAME's rule, or the data after the bad CNAMEs */
		uint16_t type = rec_type(recs[i].r), rdlen;
		const uint8_t *rd = rec_rdata(recs[i].r, &rdlen);
		if (by_cname && action != RPZ_LOCAL)
			break;
		if (!by_cname && !local_ok(type, rd, rdlen, &why)) {
			bad(b, c, recs[i].r, why);
			continue;
		}
		uint8_t head[8];
		wire_store16(head, type);
		wire_store32(head + 2, recs[i].r->ttl);
		wire_store16(head + 6, rdlen);
		if (put_data(b, head, sizeof(head)) < 0 || put_data(b, rd, rdlen) < 0)
			return -1;
		if (recs[i].r->ttl < r.ttl)
			r.ttl = recs[i].r->ttl;
		if (action < 0)
			action = RPZ_LOCAL;
	}
	if (action < 0) {
		if (b->rs)
			b->rs->blob_len = start;        /* every record was bad */
		return 0;
	}
	r.action = (uint8_t)action;
	*c = (struct contrib){ .rule = true, .wild = wild, .action = (uint8_t)action, .bad = c->bad };
	if (!b->rs)
		return 0;
	r.data_len = (uint32_t)(b->rs->blob_len - r.data_off);
	return rule_put(b->rs, &r);
}

static void stats_add(struct rpz_table_stats *st, const struct contrib *c)
{
	st->bad += c->bad;
	st->ignored += c->ignored;
	if (c->rule) {
		st->rules++;
		st->by_action[c->action]++;
		st->wildcards += c->wild;
	}
}

static void stats_sub(struct rpz_table_stats *st, const struct contrib *c)
{
	st->bad -= c->bad;
	st->ignored -= c->ignored;
	if (c->rule) {
		st->rules--;
		st->by_action[c->action]--;
		st->wildcards -= c->wild;
	}
}

/* The owner's records, sorted for compile_owner, into *v; their count, or -1 out of memory. */
static ssize_t owner_records(const struct rpz_zone *z, const uint8_t *owner, uint8_t len, uint64_t h,
			     struct by_owner **v, size_t *cap)
{
	size_t n = 0;
	for (size_t i = h & z->mask; z->mask && z->slots[i]; i = (i + 1) & z->mask) {
		struct rrec *r = z->slots[i];
		if (r->h != h || r->key[0] != len || memcmp(r->key + 1, owner, len) != 0)
			continue;
		if (VEC_RESERVE(*v, *cap, n + 1) < 0)
			return -1;
		(*v)[n++] = (struct by_owner){ h, r };
	}
	if (n > 1)
		qsort(*v, n, sizeof(**v), cmp_by_owner);
	return (ssize_t)n;
}

static int contrib_of(const struct rpz_zone *z, const uint8_t *owner, uint8_t len, uint64_t h, struct contrib *c)
{
	struct by_owner *v = NULL;
	size_t cap = 0;
	ssize_t n = owner_records(z, owner, len, h, &v, &cap);
	struct builder b = { 0 };
	memset(c, 0, sizeof(*c));
	if (n > 0)
		compile_owner(&b, &z->apex, v, (size_t)n, c);     /* nothing written: it cannot fail */
	free(v);
	return n < 0 ? -1 : 0;
}

static struct rpz_table *table_new(struct ruleset *base)
{
	struct rpz_table *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->refs = 1;
	t->base = base;
	t->exact_labels = base->exact_labels;
	t->wild_labels = base->wild_labels;
	return t;
}

struct rpz_table *rpz_table_build(const struct rpz_zone *z, rpz_bad_fn badfn, void *arg)
{
	struct ruleset *rs = ruleset_new();
	struct by_owner *all = malloc((z->count ? z->count : 1) * sizeof(*all));
	struct rpz_table_stats st = { 0 };
	if (!rs || !all || VEC_RESERVE(rs->rules, rs->rules_cap, z->count ? z->count : 1) < 0)
		goto fail;
	size_t n = 0;
	for (size_t i = 0; z->mask && i <= z->mask; i++)
		if (z->slots[i]) {
			all[n].h = z->slots[i]->h;
			all[n++].r = z->slots[i];
		}
	qsort(all, n, sizeof(*all), cmp_by_owner);
	struct builder b = { .rs = rs, .bad = badfn, .arg = arg };
	for (size_t i = 0; i < n;) {
		const uint8_t *k = all[i].r->key;
		size_t j = i + 1;
		while (j < n && all[j].h == all[i].h && all[j].r->key[0] == k[0] &&
		       memcmp(all[j].r->key + 1, k + 1, k[0]) == 0)
			j++;
		struct contrib c;
		if (compile_owner(&b, &z->apex, all + i, j - i, &c) < 0)
			goto fail;
		stats_add(&st, &c);
		i = j;
	}
	free(all);
	all = NULL;
	struct rpz_table *t;
	if (ruleset_index(rs) < 0 || !(t = table_new(rs)))
		goto fail;
	t->st = st;
	return t;
fail:
	free(all);
	ruleset_unref(rs);
	return NULL;
}

struct rpz_table *rpz_table_apply(const struct rpz_table *t, const struct rpz_zone *z, const struct rpz_diff *d,
				  rpz_bad_fn badfn, void *arg)
{
	struct ruleset *rs = ruleset_new();
	struct rpz_table *n = NULL;
	struct by_owner *recs = NULL;
	size_t cap = 0;
	struct rpz_table_stats st = t->st;
	if (!rs)
		return NULL;
	struct builder b = { .rs = rs, .bad = badfn, .arg = arg };
	for (size_t i = 0; i < d->nown; i++) {
		const struct touched *o = &d->own[i];
		ssize_t k = owner_records(z, o->owner, o->len, o->h, &recs, &cap);
		struct contrib c = { 0 };
		uint32_t had = rs->nrules;
		if (k < 0 || (k > 0 && compile_owner(&b, &z->apex, recs, (size_t)k, &c) < 0))
			goto fail;
		stats_sub(&st, &o->before);
		stats_add(&st, &c);
		if (rs->nrules > had || o->len == z->apex.len)
			continue;
		/* no rule now: whatever the base or an earlier diff had for the key is gone */
		const uint8_t *key;
		size_t klen;
		bool wild;
		owner_key(o->owner, o->len, &z->apex, &key, &klen, &wild);
		struct rule gone = { .h = key_hash(key, klen, wild), .key_off = (uint32_t)rs->blob_len,
				     .data_off = (uint32_t)(rs->blob_len + klen), .key_len = (uint8_t)klen,
				     .wild = wild, .action = RULE_GONE };
		if (blob_put(rs, key, klen) < 0 || rule_put(rs, &gone) < 0)
			goto fail;
	}
	if (ruleset_index(rs) < 0)
		goto fail;
	/* the earlier diffs' rules for keys this one left alone */
	for (uint32_t i = 0; t->delta && i < t->delta->nrules; i++) {
		const struct rule *r = &t->delta->rules[i];
		if (!probe(rs, r->h, t->delta->blob + r->key_off, r->key_len, r->wild) &&
		    rule_copy(rs, t->delta, r) < 0)
			goto fail;
	}
	if (ruleset_index(rs) < 0 || !(n = table_new(t->base)))
		goto fail;
	free(recs);
	t->base->refs++;
	n->delta = rs;
	n->exact_labels |= rs->exact_labels;
	n->wild_labels |= rs->wild_labels;
	n->st = st;
	return n;
fail:
	free(recs);
	ruleset_unref(rs);
	return NULL;
}

struct rpz_table *rpz_table_compact(const struct rpz_table *t)
{
	const struct ruleset *base = t->base, *delta = t->delta;
	struct ruleset *rs = ruleset_new();
	size_t most = (size_t)base->nrules + (delta ? delta->nrules : 0);
	size_t bytes = base->blob_len + (delta ? delta->blob_len : 0);
	if (!rs || VEC_RESERVE(rs->rules, rs->rules_cap, most ? most : 1) < 0 ||
	    VEC_RESERVE(rs->blob, rs->blob_cap, bytes ? bytes : 1) < 0)
		goto fail;
	for (uint32_t i = 0; i < base->nrules; i++) {
		const struct rule *r = &base->rules[i];
		if (delta && probe(delta, r->h, base->blob + r->key_off, r->key_len, r->wild))
			continue;
		if (rule_copy(rs, base, r) < 0)
			goto fail;
	}
	for (uint32_t i = 0; delta && i < delta->nrules; i++)
		if (delta->rules[i].action != RULE_GONE && rule_copy(rs, delta, &delta->rules[i]) < 0)
			goto fail;
	struct rpz_table *n;
	if (ruleset_index(rs) < 0 || !(n = table_new(rs)))
		goto fail;
	n->st = t->st;
	return n;
fail:
	ruleset_unref(rs);
	return NULL;
}

size_t rpz_table_delta(const struct rpz_table *t)
{
	return t && t->delta ? t->delta->nrules : 0;
}

struct rpz_table *rpz_table_ref(struct rpz_table *t)
{
	t->refs++;
	return t;
}

void rpz_table_free(struct rpz_table *t)
{
	if (!t || --t->refs)
		return;
	ruleset_unref(t->base);
	ruleset_unref(t->delta);
	free(t);
}

const struct rpz_table_stats *rpz_table_stats(const struct rpz_table *t)
{
	return &t->st;
}

/* The rule for a key: the delta's, unless it has none, then the base's. */
static inline const struct rule *find(const struct rpz_table *t, const uint8_t *key, size_t len, bool wild,
				      const uint8_t **blob)
{
	uint64_t h = key_hash(key, len, wild);
	const struct rule *r;
	if (t->delta && (r = probe(t->delta, h, key, len, wild))) {
		*blob = t->delta->blob;
		return r->action == RULE_GONE ? NULL : r;
	}
	*blob = t->base->blob;
	return probe(t->base, h, key, len, wild);
}

bool rpz_table_lookup(const struct rpz_table *t, const struct name *qname, struct rpz_hit *hit)
{
	if (!t || t->st.rules == 0)
		return false;
	uint8_t off[NAME_MAX_LABELS];
	unsigned labels = (unsigned)name_label_offsets(qname, off);
	size_t klen = qname->len - 1u;          /* without the root */
	const struct rule *r = NULL;
	const uint8_t *blob = NULL;
	if (t->exact_labels & label_bit(labels))
		r = find(t, qname->wire, klen, false, &blob);
	/* wildcards from the longest suffix to the root's (*.ZONE) */
	for (unsigned i = 1; !r && i <= labels && t->wild_labels; i++) {
		if (!(t->wild_labels & label_bit(labels - i)))
			continue;
		size_t o = i < labels ? off[i] : klen;
		r = find(t, qname->wire + o, klen - o, true, &blob);
	}
	if (!r)
		return false;
	hit->action = (enum rpz_action)r->action;
	hit->wildcard = r->wild;
	hit->ttl = r->ttl;
	hit->data = blob + r->data_off;
	hit->data_len = r->data_len;
	return true;
}

bool rpz_data_next(const struct rpz_hit *hit, size_t *pos, uint16_t *type, uint32_t *ttl,
		   const uint8_t **rdata, uint16_t *rdlen)
{
	if (*pos + 8 > hit->data_len)
		return false;
	const uint8_t *p = hit->data + *pos;
	*type = wire_load16(p);
	*ttl = wire_load32(p + 2);
	*rdlen = wire_load16(p + 6);
	*rdata = p + 8;
	*pos += 8u + *rdlen;
	return true;
}
