/*
 * The FIB channel's nbrpd end (lib/fibchannel.proto, inrpd/fibsync.c):
 * connects to inrpd's socket, sends the whole Loc-RIB as one epoch
 * (SyncBegin, Updates, SyncEnd), then each flush's changes as Updates.
 * After nbrpd starts, the first epoch waits until the RIB is ready (every
 * peer sent END-OF-RIB, or fib-sync-wait ran out): until then inrpd keeps
 * answering from the FIB the previous nbrpd left it (graceful restart).
 * When inrpd is not there, changes are dropped: the next connection
 * starts with a full sync, which is also what inrpd expects after either
 * side restarts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fibchan.h"
#include "log.h"
#include "nbrpd.h"

#define CHUNK_NAMES     1000
#define RETRY_MS        1000

struct pending_name {
	uint8_t name_len;
	uint8_t name[NAME_MAX_WIRE];
	unsigned count;
	struct route routes[ROUTESET_MAX_ROUTES];
};

struct fibpush {
	struct nbrpd *d;
	char path[108];
	uv_pipe_t *pipe;
	uv_connect_t connect_req;
	uv_timer_t retry;
	bool connected;
	bool synced;                    /* this connection had its full sync */
	bool ready;                     /* the RIB is worth sending */
	bool closing;
	uint64_t epoch;
	uint64_t syncs;
	unsigned npending;
	struct pending_name pending[CHUNK_NAMES];
};

struct write_req {
	uv_write_t req;
	uint8_t *data;
};

static void connect_now(struct fibpush *f);

static void pipe_closed(uv_handle_t *h)
{
	free(h);
}

static void disconnect(struct fibpush *f, const char *why)
{
	if (!f->pipe)
		return;
	if (why)
		log_warn("fib-channel %s: %s", f->path, why);
	uv_close((uv_handle_t *)f->pipe, pipe_closed);
	f->pipe = NULL;
	f->connected = false;
	f->synced = false;
	f->npending = 0;
	if (!f->closing)
		uv_timer_start(&f->retry, (uv_timer_cb)connect_now, RETRY_MS, 0);
}

static void on_write(uv_write_t *req, int status)
{
	struct write_req *w = req->data;
	uv_stream_t *handle = req->handle;     /* req lives in w */
	struct fibpush *f = handle->data;
	free(w->data);
	free(w);
	if (status < 0 && f && f->pipe == (uv_pipe_t *)handle)
		disconnect(f, uv_strerror(status));
}

static void send_message(struct fibpush *f, const Crfib__FibMessage *m)
{
	if (!f->connected)
		return;
	size_t len;
	uint8_t *frame = fibchan_encode(m, &len);
	struct write_req *w = frame ? malloc(sizeof(*w)) : NULL;
	if (!w) {
		free(frame);
		disconnect(f, "out of memory encoding an update");
		return;
	}
	w->data = frame;
	w->req.data = w;
	uv_buf_t b = uv_buf_init((char *)frame, (unsigned)len);
	if (uv_write(&w->req, (uv_stream_t *)f->pipe, &b, 1, on_write) < 0) {
		free(frame);
		free(w);
		disconnect(f, "write failed");
	}
}

void fibpush_flush(struct fibpush *f)
{
	if (f->npending == 0)
		return;
	/* one thread, one flush at a time: the message is built in static storage */
	static Crfib__NameRoutes nr[CHUNK_NAMES], *nrp[CHUNK_NAMES];
	static Crfib__Route rts[CHUNK_NAMES][ROUTESET_MAX_ROUTES];
	static Crfib__Route *rtp[CHUNK_NAMES][ROUTESET_MAX_ROUTES];
	for (unsigned i = 0; i < f->npending; i++) {
		struct pending_name *pn = &f->pending[i];
		crfib__name_routes__init(&nr[i]);
		nr[i].name.data = pn->name;
		nr[i].name.len = pn->name_len;
		for (unsigned k = 0; k < pn->count; k++) {
			const struct route *r = &pn->routes[k];
			crfib__route__init(&rts[i][k]);
			rts[i][k].kind = r->kind == ROUTE_SERVER ? CRFIB__ROUTE__KIND__SERVER : CRFIB__ROUTE__KIND__ROUTER;
			rts[i][k].addr.data = (uint8_t *)r->addr;
			rts[i][k].addr.len = r->family == AF_INET ? 4 : 16;
			rts[i][k].port = r->port;
			rts[i][k].load_ms = r->load_ms;
			rtp[i][k] = &rts[i][k];
		}
		nr[i].n_routes = pn->count;
		nr[i].routes = rtp[i];
		nrp[i] = &nr[i];
	}
	Crfib__Update u = CRFIB__UPDATE__INIT;
	u.n_names = f->npending;
	u.names = nrp;
	Crfib__FibMessage m = CRFIB__FIB_MESSAGE__INIT;
	m.body_case = CRFIB__FIB_MESSAGE__BODY_UPDATE;
	m.update = &u;
	f->npending = 0;
	send_message(f, &m);
}

void fibpush_name(struct fibpush *f, const struct name *n, const struct route *routes, unsigned count)
{
	if (!f->synced)
		return;
	struct pending_name *pn = &f->pending[f->npending++];
	pn->name_len = n->len;
	memcpy(pn->name, n->wire, n->len);
	pn->count = count;
	memcpy(pn->routes, routes, count * sizeof(routes[0]));
	if (f->npending == CHUNK_NAMES)
		fibpush_flush(f);
}

static void sync_entry(const struct rib_entry *e, void *arg)
{
	struct fibpush *f = arg;
	struct name n;
	struct route routes[ROUTESET_MAX_ROUTES];
	unsigned count = rib_fib_routes(f->d, e, routes);
	if (count == 0)
		return;
	rib_entry_name(e, &n);
	fibpush_name(f, &n, routes, count);
}

static void full_sync(struct fibpush *f)
{
	f->synced = true;
	Crfib__FibMessage m = CRFIB__FIB_MESSAGE__INIT;
	Crfib__SyncBegin b = CRFIB__SYNC_BEGIN__INIT;
	Crfib__SyncEnd e = CRFIB__SYNC_END__INIT;
	f->epoch++;
	b.epoch = e.epoch = f->epoch;
	m.body_case = CRFIB__FIB_MESSAGE__BODY_SYNC_BEGIN;
	m.sync_begin = &b;
	send_message(f, &m);
	rib_walk(f->d->rib, sync_entry, f);
	fibpush_flush(f);
	m.body_case = CRFIB__FIB_MESSAGE__BODY_SYNC_END;
	m.sync_end = &e;
	send_message(f, &m);
	f->syncs++;
	log_info("fib-channel %s: epoch %llu sent, %llu names", f->path, (unsigned long long)f->epoch,
		 (unsigned long long)rib_count(f->d->rib));
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	static char sink[256];
	(void)h;
	(void)suggested;
	*buf = uv_buf_init(sink, sizeof(sink));
}

/* inrpd sends nothing; a read only tells us it went away. */
static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	struct fibpush *f = s->data;
	(void)buf;
	if (n < 0 && f->pipe == (uv_pipe_t *)s)
		disconnect(f, n == UV_EOF ? "inrpd closed the channel" : uv_strerror((int)n));
}

static void on_connect(uv_connect_t *req, int status)
{
	struct fibpush *f = req->data;
	if (f->closing || !f->pipe)
		return;
	if (status < 0) {
		log_debug("fib-channel %s: connect: %s", f->path, uv_strerror(status));
		uv_close((uv_handle_t *)f->pipe, pipe_closed);
		f->pipe = NULL;
		uv_timer_start(&f->retry, (uv_timer_cb)connect_now, RETRY_MS, 0);
		return;
	}
	f->connected = true;
	log_info("fib-channel %s: connected to inrpd", f->path);
	uv_read_start((uv_stream_t *)f->pipe, on_alloc, on_read);
	if (f->ready)
		full_sync(f);
}

static void connect_now(struct fibpush *f)
{
	if (f->closing || f->pipe)
		return;
	f->pipe = malloc(sizeof(*f->pipe));
	if (!f->pipe)
		return;
	uv_pipe_init(f->d->loop, f->pipe, 0);
	f->pipe->data = f;
	f->connect_req.data = f;
	uv_pipe_connect(&f->connect_req, f->pipe, f->path, on_connect);
}

struct fibpush *fibpush_open(struct nbrpd *d, const char *path)
{
	struct fibpush *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->d = d;
	snprintf(f->path, sizeof(f->path), "%s", path);
	/* epochs only need to differ across our restarts */
	f->epoch = (uint64_t)time(NULL) << 16;
	uv_timer_init(d->loop, &f->retry);
	f->retry.data = f;
	connect_now(f);
	return f;
}

void fibpush_close(struct fibpush *f)
{
	if (!f)
		return;
	f->closing = true;
	uv_timer_stop(&f->retry);
	uv_close((uv_handle_t *)&f->retry, NULL);
	if (f->pipe) {
		uv_close((uv_handle_t *)f->pipe, pipe_closed);
		f->pipe = NULL;
	}
	f->connected = false;
}

void fibpush_free(struct fibpush *f)
{
	free(f);
}

void fibpush_ready(struct fibpush *f)
{
	if (f->ready)
		return;
	f->ready = true;
	if (f->connected && !f->synced)
		full_sync(f);
}

bool fibpush_connected(const struct fibpush *f)
{
	return f->connected;
}

uint64_t fibpush_syncs(const struct fibpush *f)
{
	return f->syncs;
}
