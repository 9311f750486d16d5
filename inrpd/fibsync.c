/*
 * The FIB channel's inrpd end (lib/nbrp/fibchannel.proto): nbrpd connects to a
 * unix socket and pushes its ranked routes.  Those routes live in a FIB of
 * their own, beside the static one from the config, so a reload never
 * touches them and a resync never touches the static routes.
 *
 *   SyncBegin(epoch)    a fresh FIB is built beside the one in service
 *   Update              applied to the FIB being built, or after SyncEnd
 *                       to the one in service
 *   SyncEnd(epoch)      the fresh FIB replaces the old one: whatever the
 *                       new epoch did not send is gone (the sweep)
 *
 * When nbrpd goes away (it restarted, or crashed) the FIB in service stays
 * for fib-grace-time, so inrpd keeps answering while nbrpd comes back and
 * resyncs; if it does not complete a sync in time, its routes are dropped.
 * One sender at a time: a new connection replaces the old one, with a
 * warning naming both (pid, uid) and a counter, so that a restarted nbrpd
 * is never locked out by a predecessor that hangs; who may connect at all
 * is the socket's permissions' business.  Any protocol error closes the
 * connection (nbrpd reconnects and resyncs).
 *
 * Runs on the main thread, a QSBR thread that is online only while it
 * writes a FIB and offline while it waits for readers or destroys a FIB.
 * What the updates free goes to RCU (fib_commit) FIBSYNC_COMMIT_MS after
 * the first of them, not after each: a grace period wakes urcu's call_rcu
 * thread, and routes converging send one name at a time, each costing a
 * wakeup of ours already.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>
#include <urcu-qsbr.h>

#include "addr.h"
#include "fibchan.h"
#include "log.h"
#include "fib.h"
#include "fibsync.h"
#include "rrl.h"
#include "sockpath.h"

#define FIBSYNC_READ_BUF (64 * 1024)
#define FIBSYNC_MAX_RESERVE (64u << 20)     /* names a SyncBegin may size the new FIB for */
#define FIBSYNC_COMMIT_MS   100             /* freed memory handed to RCU this long after a write */

struct fib *inrpd_chan_fib;

struct fibsync {
	uv_loop_t *loop;
	uv_pipe_t listener;
	uv_pipe_t *client;              /* NULL: nbrpd not connected */
	uv_timer_t grace_timer;
	uv_timer_t commit_timer;
	char path[UNIX_PATH_MAX + 1];
	uint64_t grace_ms;
	unsigned open_handles;
	bool closing;

	struct fibchan_reader reader;
	struct fib *building;           /* between SyncBegin and SyncEnd */
	uint64_t epoch;                 /* of the sync in progress or last completed */
	bool synced;                    /* this connection completed a sync */
	bool stale;                     /* the FIB in service outlived its sender */
	uint64_t stale_since;           /* uv_now, ms */
	uint64_t last_change_us;        /* wall clock of the last change to the routes in service; 0: none */

	uint64_t connections, messages, syncs, updates, errors;
	uint64_t replaced;              /* senders a new connection replaced */
	char last_error[320];
	void (*changed)(void *arg);
	void *changed_arg;
	uint8_t rbuf[FIBSYNC_READ_BUF];
};

static void handle_closed(uv_handle_t *h)
{
	struct fibsync *f = h->data;
	if (h != (uv_handle_t *)&f->listener && h != (uv_handle_t *)&f->grace_timer &&
	    h != (uv_handle_t *)&f->commit_timer)
		free(h);
	f->open_handles--;
}

static void destroy_fib(struct fib *fib)
{
	if (fib)
		fib_destroy(fib);       /* offline: it waits for call_rcu work */
}

/* Puts fib in service (NULL: none), and frees the one it replaces. */
static void publish(struct fib *fib)
{
	struct fib *old = rcu_xchg_pointer(&inrpd_chan_fib, fib);
	synchronize_rcu();
	destroy_fib(old);
}

/* Wall clock, taken when the change is made (not the loop's cached time), so that
 * it can be set beside other daemons' logs: how routes converged over routers. */
static void stamp_change(struct fibsync *f)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	f->last_change_us = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void on_grace_over(uv_timer_t *t);

static void client_close(struct fibsync *f, const char *why)
{
	if (!f->client)
		return;
	if (why)
		log_warn("fib-channel: %s; closing the connection", why);
	else
		log_info("fib-channel: sender disconnected");
	uv_close((uv_handle_t *)f->client, handle_closed);
	f->client = NULL;
	fibchan_reader_free(&f->reader);
	destroy_fib(f->building);
	f->building = NULL;
	if (rcu_dereference(inrpd_chan_fib) && !f->closing && !f->stale) {
		f->stale = true;
		f->stale_since = uv_now(f->loop);
		uv_timer_start(&f->grace_timer, on_grace_over, f->grace_ms, 0);
	}
}

static void on_grace_over(uv_timer_t *t)
{
	struct fibsync *f = t->data;
	if (!f->stale)
		return;
	struct fib_stats st;
	const struct fib *cur = rcu_dereference(inrpd_chan_fib);
	memset(&st, 0, sizeof(st));
	if (cur)
		fib_get_stats(cur, &st);
	log_warn("fib-channel: no sync within fib-grace-time (%llu ms): dropping %llu names from nbrpd",
		 (unsigned long long)f->grace_ms, (unsigned long long)st.entries);
	f->stale = false;
	publish(NULL);
	stamp_change(f);
}

static int protocol_error(struct fibsync *f, const char *fmt, const char *detail)
{
	f->errors++;
	snprintf(f->last_error, sizeof(f->last_error), fmt, detail);
	client_close(f, f->last_error);
	return -1;
}

/* nbrpd's next routers are exempt from rate limiting (rrl.c). */
static void note_routers(const Crfib__Route *const *routes, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const Crfib__Route *r = routes[i];
		if (r->kind != CRFIB__ROUTE__KIND__ROUTER)
			continue;
		if (r->addr.len == 4)
			inrpd_routers_add(AF_INET, r->addr.data);
		else if (r->addr.len == 16)
			inrpd_routers_add(AF_INET6, r->addr.data);
	}
}

static void on_commit(uv_timer_t *t)
{
	struct fibsync *f = t->data;
	if (f->building)
		fib_commit(f->building);
	struct fib *in_service = rcu_dereference(inrpd_chan_fib);
	if (in_service)
		fib_commit(in_service);
}

static void routes_changed(struct fibsync *f)
{
	stamp_change(f);
	if (f->changed)
		f->changed(f->changed_arg);
}

static int handle_message(struct fibsync *f, const Crfib__FibMessage *m)
{
	char err[256];
	f->messages++;
	switch (m->body_case) {
	case CRFIB__FIB_MESSAGE__BODY_SYNC_BEGIN:
		destroy_fib(f->building);       /* a sync restarted */
		f->building = fib_create();
		if (!f->building)
			return protocol_error(f, "%s", "out of memory for a new FIB");
		/* sized at once rather than grown by doublings (a hint: bounded, and no matter if refused) */
		if (m->sync_begin->names)
			(void)fib_reserve(f->building, m->sync_begin->names < FIBSYNC_MAX_RESERVE
						       ? m->sync_begin->names : FIBSYNC_MAX_RESERVE);
		f->epoch = m->sync_begin->epoch;
		log_info("fib-channel: sync of epoch %llu begins", (unsigned long long)f->epoch);
		return 0;
	case CRFIB__FIB_MESSAGE__BODY_UPDATE: {
		struct fib *target = f->building;
		if (!target) {
			if (!f->synced)
				return protocol_error(f, "%s", "Update before SyncBegin");
			target = rcu_dereference(inrpd_chan_fib);
		}
		rcu_thread_online();
		int rc = fibchan_apply_update(target, m->update, err, sizeof(err));
		rcu_thread_offline();
		if (!uv_is_active((uv_handle_t *)&f->commit_timer))
			uv_timer_start(&f->commit_timer, on_commit, FIBSYNC_COMMIT_MS, 0);
		if (rc < 0)
			return protocol_error(f, "bad Update: %s", err);
		for (size_t i = 0; i < m->update->n_names; i++)
			note_routers((const Crfib__Route *const *)m->update->names[i]->routes,
				     m->update->names[i]->n_routes);
		for (size_t i = 0; i < m->update->n_names_packed; i++)
			note_routers((const Crfib__Route *const *)m->update->names_packed[i]->routes,
				     m->update->names_packed[i]->n_routes);
		for (size_t i = 0; i < m->update->n_aggregates; i++)
			note_routers((const Crfib__Route *const *)m->update->aggregates[i]->routes,
				     m->update->aggregates[i]->n_routes);
		f->updates++;
		if (!f->building)
			routes_changed(f);
		return 0;
	}
	case CRFIB__FIB_MESSAGE__BODY_SYNC_END: {
		if (!f->building)
			return protocol_error(f, "%s", "SyncEnd without SyncBegin");
		if (m->sync_end->epoch != f->epoch) {
			snprintf(err, sizeof(err), "%llu, not %llu", (unsigned long long)m->sync_end->epoch,
				 (unsigned long long)f->epoch);
			return protocol_error(f, "SyncEnd for epoch %s", err);
		}
		struct fib_stats st;
		fib_get_stats(f->building, &st);
		struct fib *fresh = f->building;
		f->building = NULL;
		f->synced = true;
		f->stale = false;
		uv_timer_stop(&f->grace_timer);
		publish(fresh);
		routes_changed(f);
		f->syncs++;
		log_info("fib-channel: epoch %llu in service: %llu names, %llu aggregates",
			 (unsigned long long)f->epoch, (unsigned long long)st.entries,
			 (unsigned long long)st.aggregates);
		return 0;
	}
	default:
		return protocol_error(f, "%s", "message with no body");
	}
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct fibsync *f = h->data;
	(void)suggested;
	*buf = uv_buf_init((char *)f->rbuf, sizeof(f->rbuf));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct fibsync *f = s->data;
	(void)buf;
	if ((uv_pipe_t *)s != f->client)
		return;
	if (nread < 0) {
		if (nread == UV_EOF)
			client_close(f, NULL);
		else
			client_close(f, uv_strerror((int)nread));
		return;
	}
	if (nread == 0)
		return;
	if (fibchan_reader_feed(&f->reader, f->rbuf, (size_t)nread) < 0) {
		protocol_error(f, "%s", "out of memory buffering a frame");
		return;
	}
	for (;;) {
		Crfib__FibMessage *m;
		char err[256];
		int rc = fibchan_reader_next(&f->reader, &m, err, sizeof(err));
		if (rc == 0)
			return;
		if (rc < 0) {
			protocol_error(f, "%s", err);
			return;
		}
		rc = handle_message(f, m);
		fibchan_message_free(m);
		if (rc < 0)
			return;
	}
}

static void peer_of(uv_pipe_t *p, struct ucred *cr)
{
	uv_os_fd_t fd;
	socklen_t len = sizeof(*cr);
	if (uv_fileno((uv_handle_t *)p, &fd) < 0 || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cr, &len) < 0)
		memset(cr, 0, sizeof(*cr));
}

static void on_connection(uv_stream_t *server, int status)
{
	struct fibsync *f = server->data;
	if (status < 0) {
		log_warn("fib-channel: accept: %s", uv_strerror(status));
		return;
	}
	uv_pipe_t *c = malloc(sizeof(*c));
	if (!c) {
		log_err("fib-channel: out of memory for a connection");
		return;
	}
	uv_pipe_init(f->loop, c, 0);
	c->data = f;
	f->open_handles++;
	if (uv_accept(server, (uv_stream_t *)c) < 0) {
		uv_close((uv_handle_t *)c, handle_closed);
		return;
	}
	if (f->client) {
		struct ucred was = { 0 }, now = { 0 };
		peer_of(f->client, &was);
		peer_of(c, &now);
		char why[128];
		snprintf(why, sizeof(why), "a new sender (pid %d, uid %u) replaces the connected one (pid %d, uid %u)",
			 (int)now.pid, (unsigned)now.uid, (int)was.pid, (unsigned)was.uid);
		f->replaced++;
		client_close(f, why);
	}
	f->client = c;
	f->synced = false;
	f->connections++;
	fibchan_reader_init(&f->reader);
	log_info("fib-channel: sender connected");
	int rc = uv_read_start((uv_stream_t *)c, on_alloc, on_read);
	if (rc < 0)
		client_close(f, uv_strerror(rc));
}

struct fibsync *fibsync_open(uv_loop_t *loop, const char *path, uint64_t grace_ms,
			     char *err, size_t err_len)
{
	if (sockpath_clear(path, "fib-channel", err, err_len) < 0)
		return NULL;
	struct fibsync *f = calloc(1, sizeof(*f));
	if (!f) {
		snprintf(err, err_len, "out of memory");
		return NULL;
	}
	f->loop = loop;
	f->grace_ms = grace_ms;
	snprintf(f->path, sizeof(f->path), "%s", path);
	uv_timer_init(loop, &f->grace_timer);
	f->grace_timer.data = f;
	uv_timer_init(loop, &f->commit_timer);
	f->commit_timer.data = f;
	uv_pipe_init(loop, &f->listener, 0);
	f->listener.data = f;
	f->open_handles = 3;
	int rc = uv_pipe_bind(&f->listener, path);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)&f->listener, 4, on_connection);
	if (rc < 0) {
		snprintf(err, err_len, "fib-channel %s: %s", path, uv_strerror(rc));
		fibsync_close(f);
		uv_run(loop, UV_RUN_NOWAIT);
		fibsync_free(f);
		return NULL;
	}
	return f;
}

void fibsync_set_grace(struct fibsync *f, uint64_t grace_ms)
{
	f->grace_ms = grace_ms;
}

void fibsync_on_change(struct fibsync *f, void (*fn)(void *arg), void *arg)
{
	f->changed = fn;
	f->changed_arg = arg;
}


void fibsync_close(struct fibsync *f)
{
	if (!f || f->closing)
		return;
	f->closing = true;
	client_close(f, NULL);
	uv_close((uv_handle_t *)&f->listener, handle_closed);
	uv_close((uv_handle_t *)&f->grace_timer, handle_closed);
	uv_close((uv_handle_t *)&f->commit_timer, handle_closed);
	unlink(f->path);
}

void fibsync_free(struct fibsync *f)
{
	if (!f)
		return;
	if (f->open_handles)
		log_err("fib-channel: freed with %u handles open", f->open_handles);
	destroy_fib(f->building);
	free(f);
}

void fibsync_status(const struct fibsync *f, struct fibsync_status *st, uint64_t now_ms)
{
	memset(st, 0, sizeof(*st));
	const struct fib *cur = rcu_dereference(inrpd_chan_fib);
	if (cur) {
		struct fib_stats fs;
		fib_get_stats(cur, &fs);
		st->names = fs.entries;
		st->aggregates = fs.aggregates;
	}
	st->connected = f->client != NULL;
	st->syncing = f->building != NULL;
	st->in_service = cur != NULL;
	st->stale = f->stale;
	st->stale_ms = f->stale ? now_ms - f->stale_since : 0;
	st->epoch = f->epoch;
	st->connections = f->connections;
	st->messages = f->messages;
	st->syncs = f->syncs;
	st->updates = f->updates;
	st->errors = f->errors;
	st->replaced = f->replaced;
	st->last_change_us = f->last_change_us;
	snprintf(st->last_error, sizeof(st->last_error), "%s", f->last_error);
}
