/*
 * The process's hash secret; see hashkey.h.
 */
#define XXH_STATIC_LINKING_ONLY         /* XXH3_generateSecret */
#include <xxhash.h>
#include <sodium.h>

#include "hashkey.h"

_Static_assert(HASHKEY_SECRET_LEN >= XXH3_SECRET_SIZE_MIN, "XXH3 needs a longer secret");

unsigned char hashkey_secret[HASHKEY_SECRET_LEN];

void hashkey_set(const void *seed, size_t len)
{
	/* spreads a seed of any size over a secret of the quality XXH3 needs */
	XXH3_generateSecret(hashkey_secret, sizeof(hashkey_secret), seed, len);
}

/*
 * Before main, so before any thread.  libsodium's generator is the
 * kernel's (getrandom, else /dev/urandom) and aborts if it has none: a
 * predictable secret would be no secret.
 */
__attribute__((constructor)) static void hashkey_draw(void)
{
	unsigned char seed[32];
	randombytes_buf(seed, sizeof(seed));
	hashkey_set(seed, sizeof(seed));
	sodium_memzero(seed, sizeof(seed));
}
