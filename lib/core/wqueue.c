#include <stdlib.h>

#include "wqueue.h"

struct wq_req {
	uv_write_t req;
	struct wqueue *q;
	struct wq_buf *b;
};

struct wq_buf *wq_buf_adopt(uint8_t *data, size_t len)
{
	struct wq_buf *b = data && len <= UINT32_MAX ? malloc(sizeof(*b)) : NULL;
	if (!b) {
		free(data);
		return NULL;
	}
	b->refs = 1;
	b->len = (uint32_t)len;
	b->data = data;
	return b;
}

void wq_buf_put(struct wq_buf *b)
{
	if (b && --b->refs == 0) {
		free(b->data);
		free(b);
	}
}

void wqueue_init(struct wqueue *q, uv_stream_t *stream, size_t high, size_t low)
{
	*q = (struct wqueue){ .stream = stream, .loop = stream->loop, .high = high, .low = low };
	q->progress = uv_now(q->loop);
}

/* libuv runs every pending callback (UV_ECANCELED) before the stream's close callback */
static void on_write(uv_write_t *req, int status)
{
	struct wq_req *w = req->data;
	struct wqueue *q = w->q;
	q->queued -= w->b->len;
	wq_buf_put(w->b);
	free(w);
	if (status == UV_ECANCELED)
		return;
	if (status < 0) {
		if (q->failed)
			q->failed(q, status);
		return;
	}
	q->progress = uv_now(q->loop);
	if (q->full && q->queued < q->low) {
		q->full = false;
		if (q->drained)
			q->drained(q);
	}
}

int wqueue_send(struct wqueue *q, struct wq_buf *b)
{
	struct wq_req *w = malloc(sizeof(*w));
	if (!w)
		return UV_ENOMEM;
	w->q = q;
	w->b = b;
	w->req.data = w;
	b->refs++;
	uv_buf_t ub = uv_buf_init((char *)b->data, b->len);
	int rc = uv_write(&w->req, q->stream, &ub, 1, on_write);
	if (rc < 0) {
		b->refs--;
		free(w);
		return rc;
	}
	if (q->queued == 0)
		q->progress = uv_now(q->loop);
	q->queued += b->len;
	q->bytes_out += b->len;
	if (q->queued > q->high)
		q->full = true;
	return 0;
}

int wqueue_send_frame(struct wqueue *q, uint8_t *data, size_t len)
{
	struct wq_buf *b = wq_buf_adopt(data, len);
	if (!b)
		return UV_ENOMEM;
	int rc = wqueue_send(q, b);
	wq_buf_put(b);
	return rc;
}

bool wqueue_stalled(const struct wqueue *q, uint64_t ms)
{
	return q->queued > 0 && uv_now(q->loop) - q->progress >= ms;
}
