/*
 * The packet cache (in the spirit of dnsdist's): answers inrpd relayed
 * from an upstream resolver or a next content router, kept as the bytes
 * of their records and served again, with the client's id, question case
 * and EDNS options, and TTLs counted down.
 *
 * One cache has one owner thread and no lock (inrpd gives each worker
 * thread a shard of cache-size).  Memory is one preallocated ring of
 * cache-size bytes plus an index: entries are appended at the head and
 * the oldest dropped at the tail (FIFO), and an entry hit while in the
 * oldest quarter is copied to the head again, so what is used stays and
 * what is not falls out (lazy promotion, an LRU approximation without a
 * list to update on every hit).  Nothing is allocated after creation.
 *
 * Key: the question (canonical name, type, class) and the query flags
 * that change an answer (RD, CD, DO), never the id, cookies, padding or
 * the INRP option.  Each entry also holds the caller's fingerprint of how
 * the name was routed when it was stored; a lookup with another
 * fingerprint misses, so a route change never serves an answer of the
 * old route.  Flushes (all, or a name and everything below it) are
 * generations shared by every shard (struct cache_flush), checked on a
 * hit with relaxed loads.
 */
#ifndef CR_CACHE_H
#define CR_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "name.h"

#define CACHE_KEY_MAX (NAME_MAX_WIRE + 5)
#define CACHE_META_MAX 32               /* caller's bytes kept with an entry */
#define CACHE_MIN_BYTES 65536

enum {
	CACHE_F_RD = 1,
	CACHE_F_CD = 2,
	CACHE_F_DO = 4,
};

struct cache_key {
	uint8_t len;
	uint8_t data[CACHE_KEY_MAX];
	uint64_t hash;
};

void cache_key_make(struct cache_key *k, const struct name *qname, uint16_t qtype, uint16_t qclass,
		    uint8_t flags);

/* Flush generations, shared by the shards (written by one control thread). */
struct cache_flush;
struct cache_flush *cache_flush_new(void);
void cache_flush_free(struct cache_flush *f);
void cache_flush_all(struct cache_flush *f);
/* Drops name and every name below it. */
void cache_flush_name(struct cache_flush *f, const struct name *n);

struct cache_limits {
	uint32_t max_ttl;               /* positive answers held at most this long */
	uint32_t max_negative_ttl;      /* NXDOMAIN and NODATA (RFC 2308, with an SOA) */
	uint32_t servfail_ttl;          /* SERVFAIL */
};

struct cache;
/* bytes: the ring and its index together stay within it (at least CACHE_MIN_BYTES). */
struct cache *cache_create(size_t bytes, struct cache_flush *flush);
void cache_destroy(struct cache *c);

struct cache_hit {
	uint16_t rcode;
	bool ad;
	bool stale;                     /* past its lifetime (serve-stale) */
	uint16_t ancount, nscount, arcount;
	const uint8_t *body;            /* the records, as they followed the question */
	uint16_t body_len;
	uint16_t an_ns_len;             /* answer and authority; additional after */
	uint16_t nttl;
	const uint8_t *ttl_off;         /* nttl big-endian offsets of TTL fields in body */
	uint32_t age_s;
	uint32_t age_ms;                /* the same, finer (saturates at ~49 days) */
	uint32_t lifetime_s;
	const uint8_t *meta;
	uint8_t meta_len;
};

/*
 * Finds a live entry for k stored with fingerprint fp.  stale_s > 0 also
 * returns an entry that expired less than stale_s ago (hit->stale).
 * The hit's pointers are valid until the next call on c.
 */
bool cache_lookup(struct cache *c, const struct cache_key *k, uint64_t fp, uint64_t now_ms,
		  uint32_t stale_s, struct cache_hit *hit);

/* What a lookup would find for a key, whatever its fingerprint or age. */
struct cache_peek {
	uint64_t fp;                    /* the route it was stored under */
	uint16_t rcode;
	uint32_t age_ms;                /* saturates at ~49 days */
	uint32_t lifetime_s;
};
/*
 * Finds k's entry, unless flushed, without changing c: no promotion, no
 * counters (inrpc's `show route`).  Owner thread only, as every call on c.
 */
bool cache_peek(const struct cache *c, const struct cache_key *k, uint64_t now_ms, struct cache_peek *p);

/*
 * Writes body's TTLs for a hit into out (a copy of hit->body, copied_len
 * bytes of it): each min(TTL, lifetime) less the age, or stale_ttl for a
 * stale hit.
 */
void cache_hit_ttls(const struct cache_hit *hit, uint8_t *out, size_t copied_len, uint32_t stale_ttl);

/*
 * Stores a response we built (header, the question, records, our OPT RR
 * last if any) for k.  How long: NOERROR with answers, the smallest TTL
 * of the answer and authority records (at most max_ttl); NXDOMAIN or
 * NODATA, the SOA's TTL and MINIMUM (at most max_negative_ttl; none
 * without an SOA); SERVFAIL, servfail_ttl.  Nothing is stored for TC,
 * other rcodes, a lifetime of 0, or a message that does not walk.
 * Returns true when stored.
 */
bool cache_store(struct cache *c, const struct cache_key *k, uint64_t fp, const uint8_t *msg,
		 size_t len, const struct cache_limits *lim, const uint8_t *meta, uint8_t meta_len,
		 uint64_t now_ms);

struct cache_stats {
	uint64_t capacity;              /* bytes */
	uint64_t used;                  /* bytes of live entries in the ring */
	uint64_t entries;
	uint64_t hits, misses, stores, evictions, stale_hits;
};
/* Any thread; adds c's figures to st (relaxed loads). */
void cache_stats_add(const struct cache *c, struct cache_stats *st);

#endif
