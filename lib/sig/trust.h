/*
 * The trust-anchor file (docs/SIGNATURES.md): which keys may originate
 * which name suffixes, which key belongs to which router name, for how
 * long, signed by the anchor key.  Like RPKI ROAs without the certificate
 * tree: one signed file, distributed by whatever means the operators like.
 *
 *     serial 2026110101
 *     valid-from 2026-11-01T00:00:00Z
 *     valid-until 2026-12-01T00:00:00Z
 *     router cr1.example BASE64KEY
 *     origin example.com BASE64KEY
 *     signature BASE64SIG
 *
 * The signature is the anchor key's Ed25519 signature over
 * "NBRPv1 trust" and four NUL bytes (16 bytes), then every byte of the
 * file before the signature line.  Errors are "file:line: reason".
 */
#ifndef CR_TRUST_H
#define CR_TRUST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sigkey.h"

#define TRUST_TAG       "NBRPv1 trust\0\0\0"     /* 16 bytes with the final NUL */
#define TRUST_TAG_LEN   16

struct trust_router {
	char *name;
	uint8_t pk[SIGKEY_PUBLIC_LEN];
};

struct trust_origin {
	uint8_t len;                    /* suffix, canonical wire form */
	uint8_t wire[255];
	uint8_t pk[SIGKEY_PUBLIC_LEN];
};

struct trust {
	uint64_t serial;                        /* a newer file has a larger one */
	uint64_t valid_from, valid_until;       /* unix seconds, inclusive */
	struct trust_router *routers;           /* sorted by name */
	size_t n_routers;
	struct trust_origin *origins;           /* sorted by suffix, then key */
	size_t n_origins;
};

enum trust_origin_result {
	TRUST_NOT_FOUND,                /* no entry covers the name */
	TRUST_AUTHORISED,               /* an entry for a covering suffix names this key */
	TRUST_UNAUTHORISED,             /* covered, but not for this key */
};

/*
 * Parses buf (the whole file).  anchor: the signature line must be last
 * and verify under it; NULL: no signature line is required and one that
 * is there is not checked (for the signing tool).  0, or -1 with err set to
 * the first error ("file:line: reason").  *out is freed with trust_free.
 */
int trust_parse(const char *buf, size_t len, const char *file, const uint8_t *anchor,
		struct trust *out, char *err, size_t errlen);
int trust_read(const char *path, const uint8_t *anchor, struct trust *out, char *err, size_t errlen);
void trust_free(struct trust *t);

/* The bytes before the signature line (all of buf without one). */
size_t trust_body_len(const char *buf, size_t len);
/*
 * The file signed by k: the body checked (as trust_parse without an
 * anchor), then "signature BASE64\n" in place of any earlier one.  A
 * malloc'd buffer of *outlen bytes, or NULL with err set.
 */
char *trust_sign(const char *buf, size_t len, const char *file, const struct sigkey *k,
		 size_t *outlen, char *err, size_t errlen);

bool trust_current(const struct trust *t, uint64_t now);
/* The same serial, window, routers and origins. */
bool trust_equal(const struct trust *a, const struct trust *b);
/* The key of router name (len bytes), or NULL. */
const uint8_t *trust_router_key(const struct trust *t, const char *name, size_t len);
/* May pk originate the name (canonical wire)?  Any covering suffix counts. */
enum trust_origin_result trust_origin_check(const struct trust *t, const uint8_t *wire, size_t len,
					    const uint8_t pk[SIGKEY_PUBLIC_LEN]);
/*
 * The keys that may originate the name, longest covering suffix first:
 * up to max of them into keys[], the count of all of them returned.
 */
size_t trust_origin_keys(const struct trust *t, const uint8_t *wire, size_t len,
			 const uint8_t **keys, size_t max);

#endif
