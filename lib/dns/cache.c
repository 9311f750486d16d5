/*
 * The packet cache: see cache.h.
 *
 * Ring: live entries lie in the logical byte range [tail, head), each at
 * an 8-byte aligned offset, none across the end of the buffer (a pad
 * record fills the end instead).  An index of 32-bit slot pairs (entry
 * position + 1, low 32 bits of the key hash) in a power-of-two table with
 * linear probing and backward-shift deletion finds them; a slot points to
 * the newest copy of a key, and older copies are garbage the tail passes
 * over.
 */
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL

#include "arena.h"
#include "cache.h"
#include "dnsrr.h"
#include "hashkey.h"
#include "wire.h"

#define ALIGN8(n)               (((n) + 7u) & ~(size_t)7u)
#define ENTRY_MAX               (sizeof(struct entry) + CACHE_KEY_MAX + CACHE_META_MAX + \
				 2 * CACHE_MAX_RECORDS + 65535 + 8)
#define CACHE_MAX_RECORDS       512
#define BYTES_PER_SLOT          64      /* index slots: one per 64 bytes of ring, rounded to 2^k */
#define FLUSH_NAMES             16

#define RELAXED_ADD(p, n) __atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + (n), __ATOMIC_RELAXED)

enum { K_PAD = 0, K_ENTRY = 1 };

struct entry {
	uint32_t len;                   /* in the ring, this header included, multiple of 8 */
	uint8_t kind;
	uint8_t key_len;
	uint8_t meta_len;
	uint8_t ad;
	uint16_t rcode;
	uint16_t ancount, nscount, arcount;
	uint16_t nttl;
	uint16_t body_len, an_ns_len;
	uint32_t hash_lo;
	uint32_t gen;                   /* flush generation when stored */
	uint32_t lifetime_s;
	uint64_t fp;
	uint64_t stored_ms;
	/* key[key_len] meta[meta_len] ttl_off[2 * nttl] body[body_len] */
};

struct cache_flush {
	uint32_t gen;                   /* every flush takes the next one */
	uint32_t all_gen;               /* entries stored before it are gone */
	uint32_t name_gen;              /* the newest name flush */
	struct {
		uint32_t gen;
		struct name name;
	} names[FLUSH_NAMES];           /* ring of recent name flushes, by gen */
	uint32_t seq;                   /* odd while names[] is written */
};

struct cache {
	struct cache_flush *flush;
	uint8_t *ring;
	size_t cap;
	uint64_t head, tail;
	uint64_t *idx;                  /* (hash_lo << 32) | (position / 8 + 1); 0: empty */
	size_t idx_mask;
	size_t idx_used;
	size_t map_len;
	uint8_t scratch[ENTRY_MAX];
	/* statistics, read by other threads */
	uint64_t used, entries, hits, misses, stores, evictions, stale_hits;
};

void cache_key_make(struct cache_key *k, const struct name *qname, uint16_t qtype, uint16_t qclass,
		    uint8_t flags)
{
	memcpy(k->data, qname->wire, qname->len);
	size_t n = qname->len;
	k->data[n++] = (uint8_t)(qtype >> 8);
	k->data[n++] = (uint8_t)qtype;
	k->data[n++] = (uint8_t)(qclass >> 8);
	k->data[n++] = (uint8_t)qclass;
	k->data[n++] = flags;
	k->len = (uint8_t)n;
	k->hash = hashkey64(k->data, n);     /* the names are the clients' */
}

/* ---- flushes ---- */

struct cache_flush *cache_flush_new(void)
{
	struct cache_flush *f = calloc(1, sizeof(*f));
	if (f)
		f->gen = 1;
	return f;
}

void cache_flush_free(struct cache_flush *f)
{
	free(f);
}

void cache_flush_all(struct cache_flush *f)
{
	uint32_t g = __atomic_add_fetch(&f->gen, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&f->all_gen, g, __ATOMIC_RELEASE);
}

void cache_flush_name(struct cache_flush *f, const struct name *n)
{
	uint32_t g = __atomic_add_fetch(&f->gen, 1, __ATOMIC_RELAXED);
	unsigned slot = g % FLUSH_NAMES;
	/* a seqlock: readers retry or give up (and count the entry flushed) */
	__atomic_store_n(&f->seq, f->seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	f->names[slot].name = *n;
	__atomic_store_n(&f->names[slot].gen, g, __ATOMIC_RELAXED);
	__atomic_store_n(&f->seq, f->seq + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&f->name_gen, g, __ATOMIC_RELEASE);
}

/* Was an entry of this name, stored at gen, flushed since? */
static bool flushed(const struct cache_flush *f, uint32_t gen, const uint8_t *key, size_t name_len)
{
	if (!f)
		return false;
	if ((int32_t)(__atomic_load_n(&f->all_gen, __ATOMIC_ACQUIRE) - gen) >= 0)
		return true;
	uint32_t latest = __atomic_load_n(&f->name_gen, __ATOMIC_ACQUIRE);
	if ((int32_t)(latest - gen) < 0)
		return false;                   /* the common case: nothing since */
	/* name flushes since: a ring of the last few; older ones count as all */
	if (latest - gen >= FLUSH_NAMES)
		return true;
	uint32_t s1 = __atomic_load_n(&f->seq, __ATOMIC_ACQUIRE);
	if (s1 & 1)
		return true;
	struct name n;
	if (name_from_wire(&n, key, name_len) != NAME_OK)
		return true;
	bool hit = false;
	for (unsigned i = 0; i < FLUSH_NAMES && !hit; i++) {
		uint32_t g = __atomic_load_n(&f->names[i].gen, __ATOMIC_RELAXED);
		if (g && (int32_t)(g - gen) >= 0 && name_is_subdomain(&n, &f->names[i].name))
			hit = true;
	}
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&f->seq, __ATOMIC_RELAXED) != s1)
		return true;
	return hit;
}

static uint32_t current_gen(const struct cache_flush *f)
{
	return f ? __atomic_load_n(&f->gen, __ATOMIC_ACQUIRE) + 1 : 0;
}

/* ---- ring and index ---- */

static struct entry *at(const struct cache *c, uint64_t logical)
{
	return (struct entry *)(c->ring + logical % c->cap);
}

static uint8_t *entry_key(struct entry *e)
{
	return (uint8_t *)(e + 1);
}

static size_t idx_find_pos(const struct cache *c, uint32_t hash_lo, uint32_t pos1)
{
	for (size_t i = hash_lo & c->idx_mask;; i = (i + 1) & c->idx_mask) {
		uint64_t s = c->idx[i];
		if (s == 0)
			return SIZE_MAX;
		if ((uint32_t)s == pos1)
			return i;
	}
}

static void idx_delete(struct cache *c, size_t i)
{
	/* backward shift: later slots of the same run move up so no probe breaks */
	size_t j = i;
	for (;;) {
		j = (j + 1) & c->idx_mask;
		uint64_t s = c->idx[j];
		if (s == 0)
			break;
		size_t home = (size_t)(s >> 32) & c->idx_mask;
		/* j's entry may fill the hole at i only if its home is not in (i, j] */
		bool between = i <= j ? (home > i && home <= j) : (home > i || home <= j);
		if (!between) {
			c->idx[i] = s;
			i = j;
		}
	}
	c->idx[i] = 0;
	c->idx_used--;
}

static uint32_t pos1_of(const struct cache *c, uint64_t logical)
{
	return (uint32_t)((logical % c->cap) / 8 + 1);
}

/* Drops the entry at the tail (or steps over a pad or a stale copy). */
static void evict_tail(struct cache *c)
{
	struct entry *e = at(c, c->tail);
	if (e->kind == K_ENTRY) {
		size_t i = idx_find_pos(c, e->hash_lo, pos1_of(c, c->tail));
		if (i != SIZE_MAX) {
			idx_delete(c, i);
			RELAXED_ADD(&c->entries, (uint64_t)-1);
			RELAXED_ADD(&c->used, -(uint64_t)e->len);
			RELAXED_ADD(&c->evictions, 1);
		}
	}
	c->tail += e->len;
}

/* Room for len bytes at the head, contiguous; returns where they go. */
static struct entry *make_room(struct cache *c, size_t len)
{
	size_t phys = c->head % c->cap;
	if (phys + len > c->cap) {
		size_t pad = c->cap - phys;
		while (c->head + pad - c->tail > c->cap)
			evict_tail(c);
		struct entry *p = at(c, c->head);
		p->len = (uint32_t)pad;
		p->kind = K_PAD;
		c->head += pad;
	}
	while (c->head + len - c->tail > c->cap || c->idx_used + 1 > (c->idx_mask + 1) / 4 * 3)
		evict_tail(c);
	return at(c, c->head);
}

/* Appends the entry built in scratch (len bytes) and points the index at it. */
static struct entry *append(struct cache *c, const struct cache_key *k, size_t len)
{
	struct entry *dst = make_room(c, len);
	memcpy(dst, c->scratch, len);
	uint32_t pos1 = pos1_of(c, c->head);
	c->head += len;
	uint32_t hash_lo = (uint32_t)k->hash;
	for (size_t i = hash_lo & c->idx_mask;; i = (i + 1) & c->idx_mask) {
		uint64_t s = c->idx[i];
		if (s == 0) {
			c->idx[i] = (uint64_t)hash_lo << 32 | pos1;
			c->idx_used++;
			RELAXED_ADD(&c->entries, 1);
			break;
		}
		if ((uint32_t)(s >> 32) != hash_lo)
			continue;
		struct entry *old = (struct entry *)(c->ring + ((uint32_t)s - 1) * (size_t)8);
		if (old->key_len == k->len && memcmp(entry_key(old), k->data, k->len) == 0) {
			RELAXED_ADD(&c->used, -(uint64_t)old->len);
			c->idx[i] = (uint64_t)hash_lo << 32 | pos1;     /* the old copy is garbage */
			break;
		}
	}
	RELAXED_ADD(&c->used, len);
	return dst;
}

/* ---- lookup ---- */

static void fill_hit(const struct entry *e, struct cache_hit *h)
{
	const uint8_t *p = (const uint8_t *)(e + 1) + e->key_len;
	h->rcode = e->rcode;
	h->ad = e->ad;
	h->ancount = e->ancount;
	h->nscount = e->nscount;
	h->arcount = e->arcount;
	h->meta = p;
	h->meta_len = e->meta_len;
	p += e->meta_len;
	h->nttl = e->nttl;
	h->ttl_off = p;
	p += 2u * e->nttl;
	h->body = p;
	h->body_len = e->body_len;
	h->an_ns_len = e->an_ns_len;
	h->lifetime_s = e->lifetime_s;
}

/* k's newest copy and its logical offset; NULL if none. */
static struct entry *find(const struct cache *c, const struct cache_key *k, uint64_t *logical)
{
	uint32_t hash_lo = (uint32_t)k->hash;
	for (size_t i = hash_lo & c->idx_mask;; i = (i + 1) & c->idx_mask) {
		uint64_t s = c->idx[i];
		if (s == 0)
			return NULL;
		if ((uint32_t)(s >> 32) != hash_lo)
			continue;
		struct entry *x = (struct entry *)(c->ring + ((uint32_t)s - 1) * (size_t)8);
		if (x->key_len == k->len && memcmp(entry_key(x), k->data, k->len) == 0) {
			/* its logical offset: the live range holds each position once */
			size_t phys = ((uint32_t)s - 1) * (size_t)8;
			size_t tail_phys = c->tail % c->cap;
			*logical = c->tail + (phys >= tail_phys ? phys - tail_phys : c->cap - tail_phys + phys);
			return x;
		}
	}
}

bool cache_lookup(struct cache *c, const struct cache_key *k, uint64_t fp, uint64_t now_ms,
		  uint32_t stale_s, struct cache_hit *hit)
{
	uint64_t logical = 0;
	struct entry *e = find(c, k, &logical);
	if (!e || e->fp != fp || flushed(c->flush, e->gen, entry_key(e), k->len - 5u)) {
		RELAXED_ADD(&c->misses, 1);
		return false;
	}
	uint64_t age_ms = now_ms > e->stored_ms ? now_ms - e->stored_ms : 0;
	uint64_t life_ms = (uint64_t)e->lifetime_s * 1000;
	hit->stale = age_ms >= life_ms;
	if (hit->stale && (stale_s == 0 || age_ms - life_ms >= (uint64_t)stale_s * 1000)) {
		RELAXED_ADD(&c->misses, 1);
		return false;
	}
	/* in the oldest quarter: promote, so what is used is not what falls out */
	if (!hit->stale && (logical - c->tail) < (c->head - c->tail) / 4 && e->len <= sizeof(c->scratch)) {
		uint32_t len = e->len;
		memcpy(c->scratch, e, len);
		e = append(c, k, len);
	}
	fill_hit(e, hit);
	hit->age_s = (uint32_t)(age_ms / 1000);
	hit->age_ms = age_ms > UINT32_MAX ? UINT32_MAX : (uint32_t)age_ms;
	RELAXED_ADD(hit->stale ? &c->stale_hits : &c->hits, 1);
	return true;
}

bool cache_peek(const struct cache *c, const struct cache_key *k, uint64_t now_ms, struct cache_peek *p)
{
	uint64_t logical;
	struct entry *e = find(c, k, &logical);
	if (!e || flushed(c->flush, e->gen, entry_key(e), k->len - 5u))
		return false;
	uint64_t age_ms = now_ms > e->stored_ms ? now_ms - e->stored_ms : 0;
	p->fp = e->fp;
	p->rcode = e->rcode;
	p->age_ms = age_ms > UINT32_MAX ? UINT32_MAX : (uint32_t)age_ms;
	p->lifetime_s = e->lifetime_s;
	return true;
}

/*
 * The hit path: the offsets are the cache's own, made by cache_store's
 * walk over a checked message, so one check per TTL against what was
 * copied is all the unchecked loads and store need.
 */
void cache_hit_ttls(const struct cache_hit *h, uint8_t *out, size_t copied_len, uint32_t stale_ttl)
{
	for (unsigned i = 0; i < h->nttl; i++) {
		size_t off = wire_load16(h->ttl_off + 2 * i);
		if (off + 4 > copied_len)
			break;                  /* left out (additional that did not fit) */
		uint32_t ttl = wire_load32(h->body + off);
		if (h->stale) {
			ttl = stale_ttl;
		} else {
			if (ttl > h->lifetime_s)
				ttl = h->lifetime_s;
			ttl = ttl > h->age_s ? ttl - h->age_s : 0;
		}
		wire_store32(out + off, ttl);
	}
}

/* ---- store ---- */

bool cache_store(struct cache *c, const struct cache_key *k, uint64_t fp, const uint8_t *msg,
		 size_t len, const struct cache_limits *lim, const uint8_t *meta, uint8_t meta_len,
		 uint64_t now_ms)
{
	struct wire_reader r = wire_reader(msg, len);
	struct dns_header h;
	if (!dns_header_read(&r, &h) || (h.flags1 & 0x02) || h.qdcount != 1 || meta_len > CACHE_META_MAX)
		return false;                   /* TC, or not one question */
	uint16_t rcode = h.flags2 & 0x0f;
	uint16_t an = h.ancount, ns = h.nscount, ar = h.arcount;
	if ((unsigned)an + ns + ar > CACHE_MAX_RECORDS)
		return false;
	dns_name_skip(&r);
	wire_take(&r, 4);                       /* QTYPE, QCLASS */
	if (r.bad)
		return false;
	size_t body_start = (size_t)(r.p - msg), an_ns_end = body_start, body_end = body_start;

	struct entry *e = (struct entry *)c->scratch;
	uint8_t offs[2 * CACHE_MAX_RECORDS];
	unsigned nttl = 0, nar = 0;
	uint32_t min_ttl = UINT32_MAX, soa_ttl = UINT32_MAX;
	bool soa = false;
	struct dns_rr_iter it;
	struct dns_rr rr;
	int rc;
	dns_rr_iter_init(&it, msg, len, body_start, an, ns, ar);
	while ((rc = dns_rr_next(&it, &rr)) == 1) {
		if (rr.type == 41) {            /* our OPT RR: the client's, made again per answer */
			if (rr.section != DNS_SECTION_ADDITIONAL || !rr.last)
				return false;
			break;
		}
		size_t off = (size_t)(rr.fixed - msg) + 4 - body_start;
		offs[2 * nttl] = (uint8_t)(off >> 8);
		offs[2 * nttl + 1] = (uint8_t)off;
		nttl++;
		if (rr.section != DNS_SECTION_ADDITIONAL) {
			if (rr.ttl < min_ttl)
				min_ttl = rr.ttl;
			if (rr.type == 6 && rr.section == DNS_SECTION_AUTHORITY && !soa && rr.rdlen >= 22) {
				/* RFC 2308 5: the lesser of the SOA's TTL and its MINIMUM */
				uint32_t minimum = wire_load32(rr.rdata + rr.rdlen - 4);  /* rdlen >= 22 */
				soa_ttl = rr.ttl < minimum ? rr.ttl : minimum;
				soa = true;
			}
		} else {
			nar++;
		}
		body_end = dns_rr_iter_offset(&it);
		if (rr.index + 1 == (unsigned)an + ns)
			an_ns_end = body_end;
	}
	if (rc < 0)
		return false;

	uint32_t life;
	if (rcode == 2) {
		life = lim->servfail_ttl;
	} else if (rcode == 3 || (rcode == 0 && an == 0)) {
		if (!soa)
			return false;           /* RFC 2308 5: not cached without an SOA */
		life = soa_ttl < lim->max_negative_ttl ? soa_ttl : lim->max_negative_ttl;
	} else if (rcode == 0) {
		life = min_ttl < lim->max_ttl ? min_ttl : lim->max_ttl;
	} else {
		return false;
	}
	if (life == 0)
		return false;

	size_t body_len = body_end - body_start;
	size_t total = ALIGN8(sizeof(*e) + k->len + meta_len + 2 * nttl + body_len);
	if (body_len > UINT16_MAX || total > sizeof(c->scratch) || total > c->cap / 16)
		return false;
	memset(e, 0, sizeof(*e));
	e->len = (uint32_t)total;
	e->kind = K_ENTRY;
	e->key_len = k->len;
	e->meta_len = meta_len;
	e->ad = (h.flags2 & 0x20) != 0;
	e->rcode = rcode;
	e->ancount = an;
	e->nscount = ns;
	e->arcount = (uint16_t)nar;
	e->nttl = (uint16_t)nttl;
	e->body_len = (uint16_t)body_len;
	e->an_ns_len = (uint16_t)(an_ns_end - body_start);
	e->hash_lo = (uint32_t)k->hash;
	e->gen = current_gen(c->flush);
	e->lifetime_s = life;
	e->fp = fp;
	e->stored_ms = now_ms;
	uint8_t *p = (uint8_t *)(e + 1);
	memcpy(p, k->data, k->len);
	p += k->len;
	if (meta_len)
		memcpy(p, meta, meta_len);
	p += meta_len;
	memcpy(p, offs, 2 * nttl);
	p += 2 * nttl;
	memcpy(p, msg + body_start, body_len);
	append(c, k, total);
	RELAXED_ADD(&c->stores, 1);
	return true;
}

/* ---- life ---- */

struct cache *cache_create(size_t bytes, struct cache_flush *flush)
{
	if (bytes < CACHE_MIN_BYTES)
		bytes = CACHE_MIN_BYTES;
	/* the index takes its share of the bound: 8 bytes per BYTES_PER_SLOT of ring */
	size_t slots = 1024;
	while (slots * 2 * (BYTES_PER_SLOT + 8) <= bytes)
		slots *= 2;
	size_t idx_bytes = slots * sizeof(uint64_t);
	size_t cap = (bytes - idx_bytes) & ~(size_t)7;
	/* fresh pages: the scratch area counts only once something is stored */
	struct cache *c = bigtable_alloc(sizeof(*c), BIGTABLE_SMALL_PAGES);
	if (!c)
		return NULL;
	c->map_len = cap + idx_bytes;
	/* untouched pages cost nothing until entries reach them; small pages,
	 * because a query's store writes them: a huge page would stall it while
	 * 2 MiB are zeroed (a TLB miss on a hit costs far less than its system calls) */
	void *m = bigtable_alloc(c->map_len, BIGTABLE_SMALL_PAGES);
	if (!m) {
		bigtable_free(c, sizeof(*c));
		return NULL;
	}
	c->idx = m;
	c->ring = (uint8_t *)m + idx_bytes;
	c->cap = cap;
	c->idx_mask = slots - 1;
	c->flush = flush;
	return c;
}

void cache_destroy(struct cache *c)
{
	if (!c)
		return;
	bigtable_free(c->idx, c->map_len);
	bigtable_free(c, sizeof(*c));
}

void cache_stats_add(const struct cache *c, struct cache_stats *st)
{
	st->capacity += c->map_len;
	st->used += __atomic_load_n(&c->used, __ATOMIC_RELAXED);
	st->entries += __atomic_load_n(&c->entries, __ATOMIC_RELAXED);
	st->hits += __atomic_load_n(&c->hits, __ATOMIC_RELAXED);
	st->misses += __atomic_load_n(&c->misses, __ATOMIC_RELAXED);
	st->stores += __atomic_load_n(&c->stores, __ATOMIC_RELAXED);
	st->evictions += __atomic_load_n(&c->evictions, __ATOMIC_RELAXED);
	st->stale_hits += __atomic_load_n(&c->stale_hits, __ATOMIC_RELAXED);
}
