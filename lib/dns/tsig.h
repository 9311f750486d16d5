/*
 * TSIG (RFC 8945) with HMAC-SHA256, for zone transfers: a request signed,
 * and the messages of its reply verified as a stream (5.3.1: the first
 * message's MAC covers the request's, each later signed one the MAC
 * before it and every message since; at most 99 unsigned messages in a
 * row, and the last one signed).  MACs are compared in constant time and
 * the time signed must lie within the fudge of ours.  A lone request (a
 * NOTIFY) is verified, and its answer signed, the same way; one that fails
 * is answered with the TSIG error of 5.3.2.
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
#include "wire.h"

#define TSIG_MAC_LEN    32
#define TSIG_SECRET_MAX 128
#define TSIG_FUDGE      300
#define TSIG_MAX_UNSIGNED 99            /* messages in a row without a TSIG (RFC 8945 5.3.1) */
#define TSIG_RR_MAX     (NAME_MAX_WIRE + 10 + 13 + 16 + 6 + TSIG_MAC_LEN + 6)

/* TSIG errors (RFC 8945 3) */
#define TSIG_BADSIG     16
#define TSIG_BADKEY     17
#define TSIG_BADTIME    18

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

/* A request's TSIG as its answer needs it. */
struct tsig_request {
	uint16_t error;                 /* 0, or the TSIG error its answer carries */
	struct name key, alg;           /* as the request named them */
	uint64_t signed_at;
	uint16_t orig_id;
	uint8_t mac[TSIG_MAC_LEN];      /* which a signed answer's covers */
};

/*
 * A request signed with k (a NOTIFY from a primary) at time now: 0 when
 * its last record is a TSIG of k whose MAC and time hold, -1 when it is
 * unsigned, signed with another key or fails (why says which).  req
 * receives the TSIG; its error is BADKEY, BADSIG or BADTIME when the
 * answer is to carry one, 0 on success and when it may not (no TSIG, or
 * one that does not parse).
 */
int tsig_verify_request(const struct tsig_key *k, const uint8_t *msg, size_t len, uint64_t now,
			struct tsig_request *req, const char **why);
/* Signs the answer to such a request: as tsig_sign, its MAC covering the request's first. */
size_t tsig_sign_reply(const struct tsig_key *k, uint8_t *msg, size_t len, size_t cap, uint64_t now,
		       const uint8_t req_mac[TSIG_MAC_LEN]);
/*
 * Appends to the answer in w (from its header on, ARCOUNT then counts
 * it) the TSIG of a request that failed with req->error (RFC 8945 5.3.2):
 * BADKEY and BADSIG with an empty MAC, unsigned, since the key is unknown
 * or the request not the key holder's; BADTIME signed with k over the
 * request's MAC, at the request's time signed (which its sender accepts)
 * and with our time now in Other Data.  False when it does not fit.
 */
bool tsig_write_error(struct wire_writer *w, const struct tsig_key *k, const struct tsig_request *req,
		      uint64_t now);

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
