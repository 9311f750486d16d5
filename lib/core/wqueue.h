/*
 * A bounded write queue under a libuv stream: every stream that encodes
 * and writes (NBRP sessions, the FIB channel, the load generator) sends
 * through one.  Buffers are reference-counted, so one encoded UPDATE can
 * be queued on many sessions at once (nbrpd's update groups).
 *
 * Flow control is OpenBGPD's XON/XOFF: `full` turns on when the bytes
 * handed to the kernel and not yet written pass the high-water mark, and
 * off, with the drained callback, when they fall below the low-water
 * mark.  The owner decides what to stop producing while full.  `progress`
 * is when the queue last moved, for a send hold timer (RFC 9687): a peer
 * that reads nothing for its hold time is ended, not buffered forever.
 */
#ifndef CR_WQUEUE_H
#define CR_WQUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

struct wq_buf {
	uint32_t refs;
	uint32_t len;
	uint8_t *data;                  /* malloc'd, freed with the last reference */
};

/* Takes ownership of data (malloc'd); NULL when out of memory (data is freed). */
struct wq_buf *wq_buf_adopt(uint8_t *data, size_t len);
void wq_buf_put(struct wq_buf *b);

struct wqueue;
typedef void (*wqueue_fn)(struct wqueue *q);

struct wqueue {
	uv_stream_t *stream;
	uv_loop_t *loop;
	size_t queued;                  /* bytes queued and not yet written */
	size_t high, low;               /* flow-control marks */
	bool full;                      /* above high, until below low */
	uint64_t progress;              /* uv_now when a write last completed, or the queue went non-empty */
	uint64_t bytes_out;             /* queued, in all */
	wqueue_fn drained;              /* full turned off; may be NULL */
	void (*failed)(struct wqueue *q, int status);   /* a write failed (not cancelled); may be NULL */
	void *data;                     /* the owner's */
};

void wqueue_init(struct wqueue *q, uv_stream_t *stream, size_t high, size_t low);
/* Queues b (a reference of its own).  Returns 0, or a negative libuv error. */
int wqueue_send(struct wqueue *q, struct wq_buf *b);
/* Queues a malloc'd frame, adopting it.  Returns 0, or a negative error. */
int wqueue_send_frame(struct wqueue *q, uint8_t *data, size_t len);
/* Something is queued and nothing was written for ms. */
bool wqueue_stalled(const struct wqueue *q, uint64_t ms);

#endif
