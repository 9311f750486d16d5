/*
 * The FIB channel between nbrpd and inrpd (lib/nbrp/fibchannel.proto): frames
 * of a 4-byte big-endian length and one FibMessage, over a unix stream
 * socket.  This file reads and writes frames and applies an Update to a
 * FIB; the session rules (epochs, grace time, sweeping) belong to the
 * daemons.
 *
 * Everything read here is untrusted: frames are bounded, every name and
 * route is checked, and an Update that fails a check changes nothing.
 */
#ifndef CR_FIBCHAN_H
#define CR_FIBCHAN_H

#include <stddef.h>
#include <stdint.h>

#include "fib.h"
#include "fibchannel.pb-c.h"
#include "frame.h"

#define FIBCHAN_HEADER_LEN  FRAME_HEADER_LEN
#define FIBCHAN_MAX_FRAME   (16u << 20)     /* a full sync is sent as many frames */

/* Reassembles frames from a byte stream split anywhere. */
struct fibchan_reader {
	struct frame_reader frames;     /* bounded at FIBCHAN_MAX_FRAME */
};

void fibchan_reader_init(struct fibchan_reader *r);
void fibchan_reader_free(struct fibchan_reader *r);
/* Appends bytes as received.  Returns 0, or -1 when out of memory. */
int fibchan_reader_feed(struct fibchan_reader *r, const uint8_t *data, size_t len);
/*
 * The next complete message: returns 1 with *msg set (free it with
 * fibchan_message_free), 0 when more bytes are needed, or -1 with err set
 * when the stream is broken (oversize frame, undecodable or empty
 * message); the stream cannot be resumed after -1.
 */
int fibchan_reader_next(struct fibchan_reader *r, Crfib__FibMessage **msg, char *err, size_t err_len);
void fibchan_message_free(Crfib__FibMessage *msg);

/* One frame for msg in a malloc'd buffer of *len bytes; NULL if out of memory or too big. */
uint8_t *fibchan_encode(const Crfib__FibMessage *msg, size_t *len);

/*
 * Applies an Update in this order: aggregates deleted, aggregates (created
 * if new, routes replaced), memberships, names.  The whole Update is
 * checked first; on a check failure nothing changes and err says which
 * field is wrong (-1).  Out of memory part-way returns -1 with the Update
 * partly applied: the caller must resynchronise.  Returns 0 on success.
 * The caller is a registered QSBR thread (fib.h), and hands what the
 * Update freed to RCU with fib_commit() when it sees fit.
 */
int fibchan_apply_update(struct fib *fib, const Crfib__Update *u, char *err, size_t err_len);

#endif
