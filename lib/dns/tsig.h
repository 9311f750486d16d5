/*
 * TSIG (RFC 8945) with HMAC-SHA256, for zone transfers: a request signed,
 * and the messages of its reply verified as a stream (5.3.1: the first
 * message's MAC covers the request's, each later signed one the MAC
 * before it and every message since; at most 99 unsigned messages in a
 * row, and the last one signed).  MACs are compared in constant time and
 * the time signed must lie within the fudge of ours.  A lone request (a
 * NOTIFY) is verified, and its answer signed, the same way.
 *
 * Keys come from files in BIND's format:
 *
 *     key "xfr.example" {
 *         algorithm hmac-sha256;
 *         secret "base64...";
 *     };
 */
#ifndef CR_TSIG_H
#define CR_TSIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sodium.h>

#include "dns.h"
#include "name.h"

#define TSIG_MAC_LEN    32
#define TSIG_SECRET_MAX 128
#define TSIG_FUDGE      300
#define TSIG_MAX_UNSIGNED 99            /* messages in a row without a TSIG (RFC 8945 5.3.1) */
#define TSIG_RR_MAX     (NAME_MAX_WIRE + 10 + 13 + 16 + 6 + TSIG_MAC_LEN + 6)

struct tsig_key {
	struct name name;
	uint8_t secret[TSIG_SECRET_MAX];
	size_t secret_len;
};

/* A key from text in BIND's format; file names it in errors (file:line: reason). 0 or -1. */
int tsig_key_parse(const char *text, size_t len, const char *file, struct tsig_key *k, char *err, size_t err_len);
/* The same from a file, which others may not read. */
int tsig_key_read(const char *path, struct tsig_key *k, char *err, size_t err_len);

/*
 * Signs the message (len bytes in a buffer of cap) at time now: appends
 * the TSIG record and counts it.  Returns the new length, 0 if it does
 * not fit.  mac receives the request's MAC, which its reply's covers.
 */
size_t tsig_sign(const struct tsig_key *k, uint8_t *msg, size_t len, size_t cap, uint64_t now,
		 uint8_t mac[TSIG_MAC_LEN]);

/*
 * A request signed with k (a NOTIFY from a primary) at time now: 0 when
 * its last record is a TSIG of k whose MAC and time hold (mac receives the
 * MAC, which the answer's covers), -1 when it is unsigned, signed with
 * another key or fails (why says which).
 */
int tsig_verify_request(const struct tsig_key *k, const uint8_t *msg, size_t len, uint64_t now,
			uint8_t mac[TSIG_MAC_LEN], const char **why);
/* Signs the answer to such a request: as tsig_sign, its MAC covering the request's first. */
size_t tsig_sign_reply(const struct tsig_key *k, uint8_t *msg, size_t len, size_t cap, uint64_t now,
		       const uint8_t req_mac[TSIG_MAC_LEN]);

/* The reply to a signed request, message by message. */
struct tsig_stream {
	const struct tsig_key *key;
	crypto_auth_hmacsha256_state st;
	uint8_t prev[TSIG_MAC_LEN];     /* the request's MAC, then the last verified one */
	bool first;                     /* no message signed yet */
	unsigned unsigned_run;          /* messages folded in since the last signed one */
	uint64_t verified;
};

void tsig_stream_init(struct tsig_stream *s, const struct tsig_key *k, const uint8_t req_mac[TSIG_MAC_LEN]);
/*
 * One message of the reply at time now: 0 when it is signed and the MAC
 * holds (*body_len is then its length without the TSIG record, which is
 * the last additional record), 1 when it is unsigned and may be (it is
 * covered by the next signed one), -1 when it fails (why says so).
 */
int tsig_stream_verify(struct tsig_stream *s, const uint8_t *msg, size_t len, uint64_t now, size_t *body_len,
		       const char **why);
/* Whether the last message was signed: a reply may end only then. */
bool tsig_stream_complete(const struct tsig_stream *s);

#endif
