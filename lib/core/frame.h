/*
 * Frames on a byte stream: a 4-byte big-endian length, then that many
 * bytes.  The FIB channel (fibchan.c) and NBRP (nbrp.c) both frame their
 * protobuf messages this way; this file reassembles frames from a stream
 * cut anywhere and leaves decoding them to its callers.
 */
#ifndef CR_FRAME_H
#define CR_FRAME_H

#include <stddef.h>
#include <stdint.h>
#include "wire.h"

#define FRAME_HEADER_LEN 4

struct frame_reader {
	uint8_t *buf;
	size_t start, end, cap;
	size_t max;                     /* longest frame accepted, header excluded */
};

void frame_reader_init(struct frame_reader *r, size_t max);
void frame_reader_free(struct frame_reader *r);
/*
 * Appends bytes as received.  Returns 0, or -1 when out of memory.  The
 * buffer holds at most one maximal frame plus what is being appended, so
 * take every complete frame (frame_reader_next until it returns 0) before
 * feeding more.
 */
int frame_reader_feed(struct frame_reader *r, const uint8_t *data, size_t len);
/*
 * The same without a copy, for reading from a socket straight into the
 * buffer: room for len more bytes (NULL when out of memory), then
 * frame_reader_commit with how many arrived (at most len).
 */
uint8_t *frame_reader_space(struct frame_reader *r, size_t len);
void frame_reader_commit(struct frame_reader *r, size_t len);
/*
 * The next frame: 1 with *frame and *len set to its bytes (header
 * excluded; they stay valid until the next feed or free), 0 when more
 * bytes are needed, or -1 with *len set to the length read when it is 0
 * or over max.  The stream cannot be resumed after -1.
 */
int frame_reader_next(struct frame_reader *r, const uint8_t **frame, size_t *len);

/* Writes the 4-byte header for a frame of len bytes. */
static inline void frame_put_header(uint8_t *out, uint32_t len)
{
	wire_store32(out, len);
}

#endif
