/*
 * Ed25519 keys (libsodium) for NBRP signatures (docs/SIGNATURES.md).
 *
 * A key file is two lines of text, the 32-byte seed and the public key in
 * standard base64 with padding (44 characters each):
 *
 *     ed25519-seed BASE64
 *     ed25519-public BASE64
 *
 * It is created 0600 with O_EXCL (never over an existing file) and fsync'ed
 * with its directory; it is loaded only when neither group nor others have
 * any permission on it (ssh's rule), and the public line must be the one
 * the seed gives.  Public keys alone are written the same way: 44 base64
 * characters.
 *
 * The one acceptance rule for every signature is libsodium's
 * crypto_sign_verify_detached (1.0.18, Debian 12), RFC 8032 5.1.7 made
 * strict: reject S >= L (non-canonical), R of small order, A of small order
 * or not canonically encoded or not on the curve; then accept iff the
 * encoding of [S]B - [k]A equals R's 32 bytes (cofactorless), with
 * k = SHA-512(R || A || M) mod L.
 */
#ifndef CR_SIGKEY_H
#define CR_SIGKEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SIGKEY_PUBLIC_LEN       32
#define SIGKEY_SECRET_LEN       64      /* libsodium's: seed then public key */
#define SIGKEY_SIG_LEN          64
#define SIGKEY_TEXT_LEN         44      /* base64 of 32 bytes, no NUL */

struct sigkey {
	uint8_t pk[SIGKEY_PUBLIC_LEN];
	uint8_t sk[SIGKEY_SECRET_LEN];
};

/* sodium_init once; false if libsodium cannot run (no entropy source). */
bool sigkey_init(void);

/* A new key pair into path (which must not exist).  0, or -1 with err set
 * ("path: reason"). */
int sigkey_generate(const char *path, struct sigkey *out, char *err, size_t errlen);
/* Loads path: 0, or -1 with err set (mode, format, mismatch). */
int sigkey_load(const char *path, struct sigkey *out, char *err, size_t errlen);
void sigkey_wipe(struct sigkey *k);

/* Base64 text of a public key (SIGKEY_TEXT_LEN + 1 bytes with the NUL). */
void sigkey_public_text(const uint8_t pk[SIGKEY_PUBLIC_LEN], char out[SIGKEY_TEXT_LEN + 1]);
/* Parses 44 base64 characters (len exactly) into pk: 0 or -1. */
int sigkey_public_parse(const char *text, size_t len, uint8_t pk[SIGKEY_PUBLIC_LEN]);

void sigkey_sign(const struct sigkey *k, const uint8_t *msg, size_t len, uint8_t sig[SIGKEY_SIG_LEN]);
/* crypto_sign_verify_detached: the one acceptance rule. */
bool sigkey_verify(const uint8_t pk[SIGKEY_PUBLIC_LEN], const uint8_t *msg, size_t len,
		   const uint8_t sig[SIGKEY_SIG_LEN]);

#endif
