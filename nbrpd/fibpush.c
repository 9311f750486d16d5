/*
 * The FIB channel's nbrpd end (lib/nbrp/fibchannel.proto, inrpd/fibsync.c):
 * connects to inrpd's socket, sends the whole Loc-RIB as one epoch
 * (SyncBegin, Updates, SyncEnd), then each flush's changes as Updates.
 * The epoch is sent a slice of names per loop turn; changes go out
 * meanwhile too (inrpd applies them to the FIB it is building, and a
 * name's slice sends what it is when the walk gets there).
 * An epoch begins as soon as inrpd is there, but it ends (SyncEnd) only
 * once the RIB is ready (every peer sent END-OF-RIB, or fib-sync-wait ran
 * out): until then inrpd keeps answering from the FIB the previous nbrpd
 * left it (graceful restart), and builds the new one from the changes as
 * nbrpd learns them.  (Beginning at ready instead meant walking a RIB of
 * 30M names in one go after the peers sent them: 25 s, most of the time
 * inrpd took to have them all.)
 * When inrpd is not there, changes are dropped: the next connection
 * starts with a full sync, which is also what inrpd expects after either
 * side restarts.
 * inrpd sets the pace: while more than SYNC_HIGH bytes wait for it, the
 * walk of a full sync waits, and nbrpd reads no more UPDATEs (fibpush_behind)
 * until the queue is below SYNC_LOW (the caught_up callback): a router
 * taking 30M names holds a few MiB for inrpd, not a backlog.  Only while
 * inrpd reads: one that read nothing for STALL_MS holds nobody back, and
 * one that read nothing for fib-send-hold-time (stopped, hung) is let go,
 * as a peer is by its send hold timer, with what was queued for it; the
 * next connection syncs it anew.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "addr.h"
#include "fibchan.h"
#include "log.h"
#include "fibpush.h"
#include "wqueue.h"

#define CHUNK_NAMES     1000
#define CHUNK_AGGS      64      /* aggregates' routes per Update */
#define CHUNK_MEMBERS   (1u << 20)      /* bytes of packed members per Update */
#define SYNC_SLICE      2048    /* names of a full sync per loop turn */
#define SYNC_HIGH       (4u << 20)      /* queued bytes: the walk waits above this */
#define SYNC_LOW        (1u << 20)      /* ... until the queue is below this */
#define RETRY_MS        1000
#define HOLD_CHECK_MS   1000
#define STALL_MS        1000    /* inrpd reading nothing this long holds no input back */

struct pending_name {
	uint8_t name_len;
	uint8_t name[NAME_MAX_WIRE];
	unsigned count;
	struct route routes[ROUTESET_MAX_ROUTES];
};

struct fibpush {
	uv_loop_t *loop;
	fibpush_table_fn table;         /* the whole table, for a full sync */
	fibpush_count_fn count;         /* its size */
	void *table_arg;
	struct wqueue wq;
	char path[UNIX_PATH_MAX + 1];
	uv_pipe_t *pipe;
	uv_connect_t connect_req;
	uv_timer_t retry;
	uv_timer_t hold;                /* while connected: is inrpd reading? */
	uint64_t hold_ms;
	uint64_t hold_closes;
	void (*caught_up)(void *arg);   /* fibpush_behind is over; called with table_arg */
	bool connected;
	bool syncing;                   /* this connection's full sync is still being sent */
	bool sync_open;                 /* ... or its SyncEnd was not */
	void *sync_state;               /* the table callback's */
	uv_idle_t sync_idle;            /* a slice each loop turn while syncing */
	bool ready;                     /* the RIB is worth sending */
	bool closing;
	uint64_t epoch;
	uint64_t syncs;
	unsigned npending, npending_aggs;
	struct pending_name pending[CHUNK_NAMES];
	struct pending_name pending_aggs[CHUNK_AGGS];
	/* members being sent (fibpush_members_begin .. end) */
	struct pending_name mem_agg;
	bool mem_replace, mem_add;
	size_t mem_len;                 /* packed: [len][wire]... */
	uint8_t members[CHUNK_MEMBERS];
};

static void connect_now(struct fibpush *f);

static void on_retry(uv_timer_t *t)
{
	connect_now(t->data);
}

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
	f->sync_open = false;
	uv_idle_stop(&f->sync_idle);
	uv_timer_stop(&f->hold);
	if (f->syncing) {
		f->syncing = false;
		f->table(f->table_arg, f, &f->sync_state, 0);
		f->sync_state = NULL;
	}
	f->npending = f->npending_aggs = 0;
	f->mem_len = 0;
	if (!f->closing) {
		uv_timer_start(&f->retry, on_retry, RETRY_MS, 0);
		f->caught_up(f->table_arg);
	}
}

static void on_write_failed(struct wqueue *q, int status)
{
	struct fibpush *f = q->data;
	if (f->pipe && q == &f->wq)
		disconnect(f, uv_strerror(status));
}

static void send_message(struct fibpush *f, const Crfib__FibMessage *m)
{
	if (!f->connected)
		return;
	size_t len;
	uint8_t *frame = fibchan_encode(m, &len);
	if (!frame) {
		disconnect(f, "out of memory encoding an update");
		return;
	}
	if (wqueue_send_frame(&f->wq, frame, len) < 0)
		disconnect(f, "write failed");
}

/* A name's (or an aggregate's) routes as the channel has them; rts and rtp have room for them. */
static void routes_of(const struct pending_name *pn, Crfib__Route *rts, Crfib__Route **rtp)
{
	for (unsigned k = 0; k < pn->count; k++) {
		const struct route *r = &pn->routes[k];
		crfib__route__init(&rts[k]);
		rts[k].kind = r->kind == ROUTE_SERVER ? CRFIB__ROUTE__KIND__SERVER : CRFIB__ROUTE__KIND__ROUTER;
		rts[k].addr.data = (uint8_t *)r->addr;
		rts[k].addr.len = r->family == AF_INET ? 4 : 16;
		rts[k].port = r->port;
		rts[k].load_ms = r->load_ms;
		rts[k].origin = r->origin;
		rtp[k] = &rts[k];
	}
}

void fibpush_flush(struct fibpush *f)
{
	if (f->npending == 0 && f->npending_aggs == 0)
		return;
	/* one thread, one flush at a time: the message is built in static storage */
	static Crfib__NamesRoutes nr[CHUNK_NAMES], *nrp[CHUNK_NAMES];
	static Crfib__AggregateRoutes ar[CHUNK_AGGS], *arp[CHUNK_AGGS];
	static Crfib__Route rts[CHUNK_NAMES + CHUNK_AGGS][ROUTESET_MAX_ROUTES];
	static Crfib__Route *rtp[CHUNK_NAMES + CHUNK_AGGS][ROUTESET_MAX_ROUTES];
	static uint8_t packed[CHUNK_NAMES * (1 + NAME_MAX_WIRE)];
	/* consecutive names with the same routes (names of one UPDATE, mostly) go as one group */
	unsigned ngroups = 0;
	size_t used = 0;
	for (unsigned i = 0; i < f->npending; i++) {
		struct pending_name *pn = &f->pending[i];
		const struct pending_name *prev = i ? &f->pending[i - 1] : NULL;
		if (!prev || prev->count != pn->count ||
		    memcmp(prev->routes, pn->routes, pn->count * sizeof(pn->routes[0])) != 0) {
			unsigned g = ngroups++;
			crfib__names_routes__init(&nr[g]);
			nr[g].names.data = packed + used;
			routes_of(pn, rts[g], rtp[g]);
			nr[g].n_routes = pn->count;
			nr[g].routes = rtp[g];
			nrp[g] = &nr[g];
		}
		packed[used] = pn->name_len;
		memcpy(packed + used + 1, pn->name, pn->name_len);
		used += 1u + pn->name_len;
		nr[ngroups - 1].names.len += 1u + pn->name_len;
	}
	for (unsigned i = 0; i < f->npending_aggs; i++) {
		struct pending_name *pn = &f->pending_aggs[i];
		crfib__aggregate_routes__init(&ar[i]);
		ar[i].name.data = pn->name;
		ar[i].name.len = pn->name_len;
		routes_of(pn, rts[CHUNK_NAMES + i], rtp[CHUNK_NAMES + i]);
		ar[i].n_routes = pn->count;
		ar[i].routes = rtp[CHUNK_NAMES + i];
		arp[i] = &ar[i];
	}
	Crfib__Update u = CRFIB__UPDATE__INIT;
	u.n_names_packed = ngroups;
	u.names_packed = nrp;
	u.n_aggregates = f->npending_aggs;
	u.aggregates = arp;
	Crfib__FibMessage m = CRFIB__FIB_MESSAGE__INIT;
	m.body_case = CRFIB__FIB_MESSAGE__BODY_UPDATE;
	m.update = &u;
	f->npending = f->npending_aggs = 0;
	send_message(f, &m);
}

static void pending_set(struct pending_name *pn, const struct name *n, const struct route *routes, unsigned count)
{
	pn->name_len = n->len;
	memcpy(pn->name, n->wire, n->len);
	pn->count = count;
	memcpy(pn->routes, routes, count * sizeof(routes[0]));
}

/* Queues a name's or an aggregate's routes in its chunk (q, *n of max), sent when full. */
static void pend(struct fibpush *f, struct pending_name *q, unsigned *n, unsigned max, const struct name *name,
		 const struct route *routes, unsigned count)
{
	if (!f->connected)
		return;
	pending_set(&q[(*n)++], name, routes, count);
	if (*n == max)
		fibpush_flush(f);
}

void fibpush_name(struct fibpush *f, const struct name *n, const struct route *routes, unsigned count)
{
	pend(f, f->pending, &f->npending, CHUNK_NAMES, n, routes, count);
}

void fibpush_aggregate(struct fibpush *f, const struct name *agg, const struct route *routes, unsigned count)
{
	pend(f, f->pending_aggs, &f->npending_aggs, CHUNK_AGGS, agg, routes, count);
}

/* ---- members ---- */

/* One Update: the aggregate's routes, and the members gathered (all joining, or all leaving). */
static void members_send(struct fibpush *f)
{
	static Crfib__Route rts[ROUTESET_MAX_ROUTES], *rtp[ROUTESET_MAX_ROUTES];
	Crfib__AggregateRoutes ar = CRFIB__AGGREGATE_ROUTES__INIT, *arp = &ar;
	ar.name.data = f->mem_agg.name;
	ar.name.len = f->mem_agg.name_len;
	routes_of(&f->mem_agg, rts, rtp);
	ar.n_routes = f->mem_agg.count;
	ar.routes = rtp;
	Crfib__Membership ms = CRFIB__MEMBERSHIP__INIT, *msp = &ms;
	ms.aggregate = ar.name;
	ProtobufCBinaryData packed = { .data = f->members, .len = f->mem_len };
	if (f->mem_add)
		ms.add_packed = packed;
	else
		ms.remove_packed = packed;
	ProtobufCBinaryData deleted = ar.name;
	Crfib__Update u = CRFIB__UPDATE__INIT;
	u.n_aggregates = 1;
	u.aggregates = &arp;
	u.n_memberships = f->mem_len ? 1 : 0;
	u.memberships = &msp;
	if (f->mem_replace) {
		/* applied first: the aggregate is made again, empty */
		u.n_aggregates_deleted = 1;
		u.aggregates_deleted = &deleted;
		f->mem_replace = false;
	}
	Crfib__FibMessage m = CRFIB__FIB_MESSAGE__INIT;
	m.body_case = CRFIB__FIB_MESSAGE__BODY_UPDATE;
	m.update = &u;
	f->mem_len = 0;
	send_message(f, &m);
}

void fibpush_members_begin(struct fibpush *f, const struct name *agg, const struct route *routes,
			   unsigned count, bool replace)
{
	fibpush_flush(f);
	pending_set(&f->mem_agg, agg, routes, count);
	f->mem_replace = replace;
	f->mem_len = 0;
}

void fibpush_member(struct fibpush *f, bool add, const uint8_t *wire, uint8_t len)
{
	if (!f->connected)
		return;
	/* inrpd adds a Membership's members before it removes any: one kind per Update */
	if (f->mem_len && (add != f->mem_add || f->mem_len + 1u + len > CHUNK_MEMBERS))
		members_send(f);
	f->mem_add = add;
	f->members[f->mem_len] = len;
	memcpy(f->members + f->mem_len + 1, wire, len);
	f->mem_len += 1u + len;
}

void fibpush_members_end(struct fibpush *f)
{
	if (f->connected && (f->mem_len || f->mem_replace))
		members_send(f);
	f->mem_len = 0;
	f->mem_replace = false;
}

static void sync_end(struct fibpush *f)
{
	f->sync_open = false;
	Crfib__FibMessage m = CRFIB__FIB_MESSAGE__INIT;
	Crfib__SyncEnd e = CRFIB__SYNC_END__INIT;
	e.epoch = f->epoch;
	m.body_case = CRFIB__FIB_MESSAGE__BODY_SYNC_END;
	m.sync_end = &e;
	send_message(f, &m);
	f->syncs++;
	log_info("fib-channel %s: epoch %llu sent", f->path, (unsigned long long)f->epoch);
}

static void sync_slice(uv_idle_t *h)
{
	struct fibpush *f = h->data;
	if (!f->syncing)
		return;
	if (f->wq.full) {
		uv_idle_stop(&f->sync_idle);    /* on_drained starts it again */
		return;
	}
	bool done = f->table(f->table_arg, f, &f->sync_state, SYNC_SLICE);
	fibpush_flush(f);
	if (!done || !f->syncing)
		return;
	f->syncing = false;
	f->sync_state = NULL;
	uv_idle_stop(&f->sync_idle);
	if (f->ready)
		sync_end(f);
}

static void end_slice(uv_idle_t *h)
{
	struct fibpush *f = h->data;
	uv_idle_stop(&f->sync_idle);
	if (f->sync_open && !f->syncing && f->ready) {
		fibpush_flush(f);
		sync_end(f);
	}
}

static void full_sync(struct fibpush *f)
{
	f->syncing = f->sync_open = true;      /* changes go out from now on, beside the slices */
	f->sync_state = NULL;
	Crfib__FibMessage m = CRFIB__FIB_MESSAGE__INIT;
	Crfib__SyncBegin b = CRFIB__SYNC_BEGIN__INIT;
	f->epoch++;
	b.epoch = f->epoch;
	b.names = f->count ? f->count(f->table_arg) : 0;
	m.body_case = CRFIB__FIB_MESSAGE__BODY_SYNC_BEGIN;
	m.sync_begin = &b;
	send_message(f, &m);
	uv_idle_start(&f->sync_idle, sync_slice);
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

static void on_drained(struct wqueue *q)
{
	struct fibpush *f = q->data;
	if (f->syncing)
		uv_idle_start(&f->sync_idle, sync_slice);
	f->caught_up(f->table_arg);
}

static void on_hold(uv_timer_t *t)
{
	struct fibpush *f = t->data;
	if (!f->connected || !wqueue_stalled(&f->wq, STALL_MS))
		return;
	if (f->wq.full)
		f->caught_up(f->table_arg);        /* fibpush_behind no longer holds the peers */
	if (!wqueue_stalled(&f->wq, f->hold_ms))
		return;
	char why[160];
	snprintf(why, sizeof(why), "inrpd read nothing for %llu ms (fib-send-hold-time), %zu bytes waiting; "
		 "closing, to sync it anew", (unsigned long long)f->hold_ms, f->wq.queued);
	f->hold_closes++;
	disconnect(f, why);
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
		uv_timer_start(&f->retry, on_retry, RETRY_MS, 0);
		return;
	}
	f->connected = true;
	wqueue_init(&f->wq, (uv_stream_t *)f->pipe, SYNC_HIGH, SYNC_LOW);
	f->wq.data = f;
	f->wq.failed = on_write_failed;
	f->wq.drained = on_drained;
	uv_timer_start(&f->hold, on_hold, HOLD_CHECK_MS, HOLD_CHECK_MS);
	log_info("fib-channel %s: connected to inrpd", f->path);
	uv_read_start((uv_stream_t *)f->pipe, on_alloc, on_read);
	full_sync(f);
}

static void connect_now(struct fibpush *f)
{
	if (f->closing || f->pipe)
		return;
	f->pipe = malloc(sizeof(*f->pipe));
	if (!f->pipe)
		return;
	uv_pipe_init(f->loop, f->pipe, 0);
	f->pipe->data = f;
	f->connect_req.data = f;
	uv_pipe_connect(&f->connect_req, f->pipe, f->path, on_connect);
}

struct fibpush *fibpush_open(uv_loop_t *loop, const char *path, uint64_t hold_ms, fibpush_table_fn table,
			     fibpush_count_fn count, void (*caught_up)(void *arg), void *arg)
{
	struct fibpush *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->loop = loop;
	f->table = table;
	f->count = count;
	f->caught_up = caught_up;
	f->table_arg = arg;
	snprintf(f->path, sizeof(f->path), "%s", path);
	/* epochs only need to differ across our restarts */
	f->epoch = (uint64_t)time(NULL) << 16;
	uv_timer_init(loop, &f->retry);
	f->retry.data = f;
	uv_timer_init(loop, &f->hold);
	f->hold.data = f;
	f->hold_ms = hold_ms;
	uv_idle_init(loop, &f->sync_idle);
	f->sync_idle.data = f;
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
	uv_close((uv_handle_t *)&f->hold, NULL);
	if (f->syncing) {
		f->syncing = false;
		f->table(f->table_arg, f, &f->sync_state, 0);
	}
	uv_close((uv_handle_t *)&f->sync_idle, NULL);
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
	/* the end at the next turn: after the flush of this one (the END-OF-RIB's UPDATEs) */
	if (f->sync_open && !f->syncing)
		uv_idle_start(&f->sync_idle, end_slice);
}

bool fibpush_connected(const struct fibpush *f)
{
	return f->connected;
}

uint64_t fibpush_syncs(const struct fibpush *f)
{
	return f->syncs;
}

void fibpush_set_hold(struct fibpush *f, uint64_t hold_ms)
{
	f->hold_ms = hold_ms;
}

uint64_t fibpush_hold_closes(const struct fibpush *f)
{
	return f->hold_closes;
}

size_t fibpush_queued(const struct fibpush *f)
{
	return f->connected ? f->wq.queued : 0;
}

bool fibpush_behind(const struct fibpush *f)
{
	return f->connected && f->wq.full && !wqueue_stalled(&f->wq, STALL_MS);
}

