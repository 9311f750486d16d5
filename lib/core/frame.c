#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"

void frame_reader_init(struct frame_reader *r, size_t max)
{
	memset(r, 0, sizeof(*r));
	r->max = max;
}

void frame_reader_free(struct frame_reader *r)
{
	size_t max = r->max;
	free(r->buf);
	memset(r, 0, sizeof(*r));
	r->max = max;
}

uint8_t *frame_reader_space(struct frame_reader *r, size_t len)
{
	if (len > SIZE_MAX / 2 - r->end)
		return NULL;
	if (r->end + len > r->cap && r->start > 0) {
		memmove(r->buf, r->buf + r->start, r->end - r->start);
		r->end -= r->start;
		r->start = 0;
	}
	if (r->end + len > r->cap) {
		/* never more than one maximal frame plus what is being added */
		size_t cap = r->cap ? r->cap : 4096;
		while (cap < r->end + len)
			cap *= 2;
		size_t limit = r->max + FRAME_HEADER_LEN + len;
		if (limit > r->max && cap > limit)
			cap = limit;
		if (cap < r->end + len)
			return NULL;
		/* not vec: its doubling would pass the limit */
		uint8_t *nb = realloc(r->buf, cap);
		if (!nb)
			return NULL;
		r->buf = nb;
		r->cap = cap;
	}
	return r->buf + r->end;
}

void frame_reader_commit(struct frame_reader *r, size_t len)
{
	r->end += len;
}

int frame_reader_feed(struct frame_reader *r, const uint8_t *data, size_t len)
{
	if (len == 0)
		return 0;
	uint8_t *p = frame_reader_space(r, len);
	if (!p)
		return -1;
	memcpy(p, data, len);
	frame_reader_commit(r, len);
	return 0;
}

int frame_reader_next(struct frame_reader *r, const uint8_t **frame, size_t *len)
{
	size_t avail = r->end - r->start;
	if (avail < FRAME_HEADER_LEN)
		return 0;
	const uint8_t *h = r->buf + r->start;
	uint32_t flen = wire_load32(h);
	if (flen == 0 || flen > r->max) {
		*frame = NULL;
		*len = flen;
		return -1;
	}
	if (avail - FRAME_HEADER_LEN < flen)
		return 0;
	*frame = h + FRAME_HEADER_LEN;
	*len = flen;
	/* consumed; the bytes stay in place until the next feed moves them */
	r->start += FRAME_HEADER_LEN + (size_t)flen;
	if (r->start == r->end)
		r->start = r->end = 0;
	return 1;
}
