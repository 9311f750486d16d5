/*
 * A fixed world for the signature tests, fuzz targets and bench_sign: keys
 * from constant seeds, a trust-anchor file signed by the anchor, routes
 * signed along a path.  Header-only, static: each program includes it
 * once.  A program that builds many routes of few hops defines
 * FIX_MAX_HOPS first.
 */
#ifndef CR_SIGFIX_H
#define CR_SIGFIX_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "attest.h"
#include "name.h"
#include "nbrp.h"
#include "trust.h"

enum { F_ANCHOR, F_ORIGIN, F_R1, F_R2, F_R3, F_R4, F_R5, F_X, F_GHOST, F_N };
static struct sigkey fix_keys[F_N];
static const char *const fix_name[F_N] = { NULL, NULL, "cr1", "cr2", "cr3", "cr4", "cr5", "rx", "ghost" };
static struct trust fix_trust;
#define FIX_NOW         1795000000ull   /* 2026-11-18 */
#define FIX_EXPIRY      (FIX_NOW + 86400)
#ifndef FIX_MAX_HOPS
#define FIX_MAX_HOPS    NBRP_MAX_PATH
#endif
#define FIX_AGG_SOURCE  "192.0.2.9 5300"

/* The trust file's text (signed), malloc'd. */
static inline char *fix_trust_text(size_t *len)
{
	char body[2048], t[SIGKEY_TEXT_LEN + 1], err[256];
	int n = snprintf(body, sizeof(body), "serial 1\nvalid-from 2026-11-01T00:00:00Z\nvalid-until 2026-12-01T00:00:00Z\n");
	for (int i = F_R1; i <= F_X; i++) {
		sigkey_public_text(fix_keys[i].pk, t);
		n += snprintf(body + n, sizeof(body) - (size_t)n, "router %s %s\n", fix_name[i], t);
	}
	sigkey_public_text(fix_keys[F_ORIGIN].pk, t);
	n += snprintf(body + n, sizeof(body) - (size_t)n, "origin example.com %s\norigin cdn.example %s\n", t, t);
	sigkey_public_text(fix_keys[F_X].pk, t);
	n += snprintf(body + n, sizeof(body) - (size_t)n, "origin evil.net %s\n", t);
	char *text = trust_sign(body, (size_t)n, "fix", &fix_keys[F_ANCHOR], len, err, sizeof(err));
	if (!text)
		abort();
	return text;
}

/* Key i from the seed of bytes i + 1: i below 255. */
static inline void fix_key(struct sigkey *k, unsigned i)
{
	uint8_t seed[32];
	memset(seed, (int)i + 1, sizeof(seed));
	crypto_sign_seed_keypair(k->pk, k->sk, seed);
}

static inline void fix_keys_make(void)
{
	for (int i = 0; i < F_N; i++)
		fix_key(&fix_keys[i], (unsigned)i);
}

static inline void fix_init(void)
{
	char err[256];
	size_t len;
	if (!sigkey_init())
		abort();
	fix_keys_make();
	char *text = fix_trust_text(&len);
	if (trust_parse(text, len, "fix", fix_keys[F_ANCHOR].pk, &fix_trust, err, sizeof(err)) != 0)
		abort();
	free(text);
}

/* A route as routers would build it: the origin's attestation for the
 * first router, then each router's hop for the next.  hops: key indexes,
 * origin side first; to: the receiver's key.  With a digest, an
 * aggregate's route from FIX_AGG_SOURCE. */
struct fix_route {
	Nbrp__Route r;
	Nbrp__Attestation pb[FIX_MAX_HOPS + 1];
	Nbrp__Attestation *pp[FIX_MAX_HOPS + 1];
	struct attest_wire w[FIX_MAX_HOPS + 1];
	char *path[FIX_MAX_HOPS];
	ProtobufCBinaryData names[1];
	struct name name;
	uint8_t digest[ATTEST_DIGEST_LEN];
	uint8_t nh[4];
};

static inline void fix_build(struct fix_route *b, const char *name, int origin, const int *hops, int nhops, int to,
		      uint64_t expiry, const uint8_t *digest, uint32_t version)
{
	if (nhops > FIX_MAX_HOPS)
		abort();
	memset(b, 0, sizeof(*b));
	nbrp__route__init(&b->r);
	if (name_from_text(&b->name, name, strlen(name)) != NAME_OK)
		abort();
	b->names[0].data = b->name.wire;
	b->names[0].len = b->name.len;
	b->r.names = b->names;
	b->r.n_names = 1;
	struct attest_subject s = { .name = b->name.wire, .name_len = b->name.len };
	if (digest) {
		s.aggregate = true;
		s.version = version;
		memcpy(s.digest, digest, ATTEST_DIGEST_LEN);
		memcpy(b->digest, digest, ATTEST_DIGEST_LEN);
		b->r.aggregate = b->names[0];
		b->r.aggregate_version = version;
		b->r.aggregate_source = b->r.aggregate_signed_source = (char *)FIX_AGG_SOURCE;
		s.source = b->r.aggregate_source;
		s.source_len = strlen(FIX_AGG_SOURCE);
		b->r.aggregate_digest.data = b->digest;
		b->r.aggregate_digest.len = ATTEST_DIGEST_LEN;
	}
	const uint8_t *first = nhops ? fix_keys[hops[0]].pk : fix_keys[to].pk;
	/* w[nhops] the origin, w[i] path[i] (the newest first) */
	attest_sign_origin(&b->w[nhops], &fix_keys[origin], first, FIX_NOW - 60, expiry, &s);
	const uint8_t *prev = b->w[nhops].link;
	for (int h = 0; h < nhops; h++) {
		int i = nhops - 1 - h;
		int target = h + 1 < nhops ? hops[h + 1] : to;
		attest_sign_hop(&b->w[i], &fix_keys[hops[h]], prev, fix_keys[target].pk, expiry);
		b->path[i] = (char *)fix_name[hops[h]];
		prev = b->w[i].link;
	}
	for (int i = 0; i <= nhops; i++) {
		attest_to_pb(&b->pb[i], &b->w[i]);
		b->pp[i] = &b->pb[i];
	}
	b->r.path = b->path;
	b->r.n_path = (size_t)nhops;
	b->r.attestations = b->pp;
	b->r.n_attestations = (size_t)nhops + 1;
	b->nh[0] = 127;
	b->nh[3] = 1;
	b->r.next_hop.data = b->nh;
	b->r.next_hop.len = 4;
	b->r.next_hop_port = 53;
}

#endif
