/*
 * A valid route's attestations as received (struct sig_chain), kept with
 * its attributes to be passed on, and a signed name set's names (struct
 * sig_set), shared by the chains that carry it and the signatures being
 * made for it.  Plain objects: the RDE keeps chains, the signature stage
 * (rdesig.h) makes sets of our own names; neither is called from here.
 * Each object charges its bytes to a counter given when it is made.
 */
#ifndef NBRPD_SIGCHAIN_H
#define NBRPD_SIGCHAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attest.h"
#include "nbrp.h"

struct sig_chain {
	size_t size;                    /* bytes of this allocation */
	uint64_t *charged;              /* the counter its bytes are in */
	uint8_t head[ATTEST_DIGEST_LEN];
	uint64_t expiry;
	size_t n;
	ProtobufCBinaryData digest;
	uint8_t digest_buf[ATTEST_DIGEST_LEN];
	struct sig_set *set;            /* a name set's names (a reference), or NULL */
	Nbrp__Attestation **ptrs;
	Nbrp__Attestation pb[];
};

/* A signed name set's names in byte order, each [len][wire] at names + off[i]; freed with the last reference. */
struct sig_set {
	uint32_t refs, n, bytes;        /* bytes: of names */
	uint32_t holders;               /* of the references, the chains' and our own sets': the set is used */
	size_t size;                    /* of this allocation */
	uint64_t *charged;
	uint8_t digest[ATTEST_DIGEST_LEN];
	uint32_t *off;
	uint8_t *names;
};

/* The chain of Route rt that checked valid (j), its bytes charged to *charged; NULL: out of memory. */
struct sig_chain *sig_chain_new(const Nbrp__Route *rt, const struct attest_job *j, uint64_t *charged);
/* A copy (its pointers into its own bytes), or NULL. */
struct sig_chain *sig_chain_copy(const struct sig_chain *c);
void sig_chain_free(struct sig_chain *c);
/* The key of the chain's origin attestation, or NULL. */
const uint8_t *sig_chain_origin(const struct sig_chain *c);

/* A set of n names sorted (attest_set_digest's) with their digest, one reference (a holder). */
struct sig_set *sig_set_new(const struct attest_name *v, size_t n, const uint8_t digest[ATTEST_DIGEST_LEN],
			    uint64_t *charged);
/* A holder (a chain, one of our sets) lets go. */
void sig_set_release(struct sig_set *set);
/* Any other reference lets go. */
void sig_set_put(struct sig_set *set);
/* The index of a name in set, or -1. */
long sig_set_find(const struct sig_set *set, const uint8_t *wire, size_t len);
/* Its names, and their bytes. */
size_t sig_set_size(const struct sig_set *set, size_t *bytes);
/*
 * The set's names not among names[0..n), into others (room for the set's
 * size); returns their count.  marks: a buffer of the caller's, grown
 * here.  A Route of the set carries them with the set's digest.
 */
size_t sig_set_others(const struct sig_set *set, const ProtobufCBinaryData *names, size_t n,
		      ProtobufCBinaryData *others, uint8_t **marks, size_t *marks_cap);
void sig_set_digest(const struct sig_set *set, Nbrp__Route *rt);

#endif
