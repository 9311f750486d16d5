/*
 * What DNS over an encrypted stream (TLS, HTTPS) adds to a message: EDNS
 * padding (RFC 7830) with RFC 8467's block-length policy, and the TTL an
 * HTTP cache may keep an answer for (RFC 8484 5.1).  The answers
 * themselves are the same whatever the transport; the transport pads them
 * and says how long they stay fresh.
 */
#ifndef CR_DNSPAD_H
#define CR_DNSPAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DNS_PAD_BLOCK_RESPONSE 468      /* RFC 8467 4.1: responses padded to a multiple */

/* Whether msg (a query) carries an EDNS Padding option. */
bool dns_msg_padded(const uint8_t *msg, size_t len);
/*
 * Pads msg (a response of len bytes in a buffer of cap) to a multiple of
 * block bytes with a Padding option in its OPT record.  Returns the new
 * length; len as it was when msg has no OPT record, already has padding,
 * or the padded message would not fit in cap.
 */
size_t dns_msg_pad(uint8_t *msg, size_t len, size_t cap, size_t block);
/*
 * The smallest TTL of the answer and authority records (the SOA's minimum
 * for a negative answer, RFC 2308 5), or def when there are none; -1 when
 * msg does not decode.
 */
int64_t dns_msg_min_ttl(const uint8_t *msg, size_t len, uint32_t def);

#endif
