/*
 * A keyed hash for the tables whose buckets are picked by what others
 * send: query names, client addresses, names, paths and addresses from
 * peers.  Unkeyed, anyone can compute which inputs share a bucket and
 * send only those (hash flooding), or make a victim's RRL bucket their
 * own.  So every such table hashes with XXH3 under one secret the process
 * draws from the kernel at start: as fast as plain XXH3 (the secret only
 * replaces its built-in one), and, unlike a 64-bit seed, what the xxhash
 * authors advise against flooding.
 *
 * The secret is drawn before main runs, while the process has one thread,
 * so every thread of either daemon and every test hashes with it and none
 * pays a check.  Values differ from one process to the next: nothing
 * hashed with it may be stored or sent (those hashes stay unkeyed).
 */
#ifndef CR_HASHKEY_H
#define CR_HASHKEY_H

#include <stddef.h>
#include <stdint.h>
#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL                  /* a call into libxxhash costs more than a short key's hash */
#endif
#include <xxhash.h>

#define HASHKEY_SECRET_LEN      192     /* XXH3's own secret's size */

extern unsigned char hashkey_secret[HASHKEY_SECRET_LEN];

static inline uint64_t hashkey64(const void *p, size_t len)
{
	return XXH3_64bits_withSecret(p, len, hashkey_secret, sizeof(hashkey_secret));
}

/*
 * Replaces the secret with one derived from seed: for tests, which need a
 * known key.  Tables filled before keep their old hashes: call it first.
 */
void hashkey_set(const void *seed, size_t len);

#endif
