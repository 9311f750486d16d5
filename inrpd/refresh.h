/*
 * Questions asked lately, fetched again when their route changes.
 *
 * A route change makes every cached answer of the names it covers miss
 * (the cache keys answers by how the name was routed), so without this
 * the first clients after the change each pay the whole path to the
 * content server, all at once for a popular name.  A UDP worker notes
 * each question it sent to next content routers or answered from the
 * cache for them; when nbrpd changes routes, the worker asks its own
 * query path each noted question again (refresh_next), and those that
 * now miss go out along the new route, their answers to the cache only.
 *
 * A fixed table with one slot per hash: a question takes its slot unless
 * the slot's question was asked within REFRESH_KEEP_MS, so the slots
 * hold what clients keep asking.  A question not asked for
 * REFRESH_RECENT_MS is not fetched again.  A route change runs at most
 * one pass per REFRESH_GAP_MS (the next change within it runs one pass at
 * its end), and a question is not fetched while an ask of it along the
 * same route is in flight, a client's or ours.  One owner thread, no lock.
 */
#ifndef INRPD_REFRESH_H
#define INRPD_REFRESH_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "dns.h"

#define REFRESH_KEEP_MS         1000
#define REFRESH_RECENT_MS       10000
#define REFRESH_GAP_MS          5
#define REFRESH_MAX_SLOTS       65536

struct refresh;

/* slots: 1..REFRESH_MAX_SLOTS. */
struct refresh *refresh_create(unsigned slots);
void refresh_free(struct refresh *r);

/* A question the worker sent to next content routers, or answered from the
 * cache for them; key_hash: its cache key's hash.  Returns its slot, or
 * REFRESH_NO_SLOT when another question asked lately holds it. */
#define REFRESH_NO_SLOT UINT32_MAX
unsigned refresh_note(struct refresh *r, uint64_t key_hash, const struct dns_query *q, uint64_t now_ms);

/* Routes changed: a pass is due now, or at the end of REFRESH_GAP_MS after the last. */
void refresh_routes_changed(struct refresh *r, uint64_t now_ms);
/* ms until a pass is due (0: now), -1 if none. */
int refresh_timeout(const struct refresh *r, uint64_t now_ms);
/* Whether a pass is due; if so it begins, from the first slot. */
bool refresh_begin(struct refresh *r, uint64_t now_ms);
/* The pass's next question asked lately: a query for it written into buf
 * (its slot in *slot), or 0 when the pass is over. */
size_t refresh_next(struct refresh *r, uint64_t now_ms, uint8_t *buf, size_t cap, unsigned *slot);

/*
 * Whether slot's question, routed now as fingerprint fp (cache.h), is to
 * be fetched: not if an ask along that same route went out less than
 * inflight_ms (its budget) ago and has not ended.
 */
bool refresh_wanted(const struct refresh *r, unsigned slot, uint64_t fp, uint64_t now_ms, uint32_t inflight_ms);
/* An ask of slot's question went out along fp (a client's, or ours), and ours ended. */
void refresh_started(struct refresh *r, unsigned slot, uint64_t fp, uint64_t now_ms);
void refresh_done(struct refresh *r, unsigned slot);

#endif
