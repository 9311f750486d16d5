/*
 * The connections of a stream listener, as conn.h says.  At
 * tcp-max-connections a newcomer closes the connection idle the longest
 * (RFC 7766 6.2.3: slow or idle clients must not lock others out); one
 * with a query in the forwarding engine is not idle.  When every
 * connection has one, the newcomer is accepted and closed at once, so it
 * does not linger in the backlog.
 */
#include <stdio.h>
#include <stdlib.h>

#include "conn.h"
#include "log.h"
#include "lru.h"

#define CONN_BACKLOG            256

static void count(uint64_t *v)
{
	__atomic_store_n(v, __atomic_load_n(v, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

static void set_gauge(struct conn_set *s)
{
	if (s->open_gauge)
		__atomic_store_n(s->open_gauge, s->nopen, __ATOMIC_RELAXED);
}

static void handle_closed(uv_handle_t *h)
{
	struct conn *c = h->data;
	if (--c->open_handles > 0)
		return;
	struct conn_set *s = c->set;
	list_remove(&s->conns, &c->lru);
	s->nconns--;
	s->ops->release(c);
	free(c);
}

void conn_close(struct conn *c)
{
	if (c->closing)
		return;
	struct conn_set *s = c->set;
	c->closing = true;
	s->nopen--;
	set_gauge(s);
	if (c->forwarded) {
		tcp_server_forget(s->tcp, &c->st);
		c->forwarded = 0;
	}
	uv_read_stop((uv_stream_t *)&c->handle);
	uv_timer_stop(&c->timer);
	uv_close((uv_handle_t *)&c->timer, handle_closed);
	uv_close((uv_handle_t *)&c->handle, handle_closed);
}

void conn_touch(struct conn *c)
{
	lru_touch(&c->set->conns, &c->lru);
}

void conn_pause_if_full(struct conn *c)
{
	if (uv_stream_get_write_queue_size((uv_stream_t *)&c->handle) > CONN_WRITE_QUEUE_MAX) {
		c->paused = true;
		uv_read_stop((uv_stream_t *)&c->handle);
	}
}

void conn_written(struct conn *c, int status)
{
	struct conn_set *s = c->set;
	if (c->closing)
		return;
	if (status < 0) {
		log_debug("%s: write: %s", s->name, uv_strerror(status));
		conn_close(c);
		return;
	}
	if (c->paused && !c->eof &&
	    uv_stream_get_write_queue_size((uv_stream_t *)&c->handle) < CONN_WRITE_QUEUE_MAX / 2) {
		c->paused = false;
		uv_read_start((uv_stream_t *)&c->handle, s->ops->alloc, s->ops->read);
	}
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	struct conn *c = req->data;
	(void)status;
	conn_close(c);
}

void conn_finish(struct conn *c)
{
	c->shutdown.data = c;
	if (uv_shutdown(&c->shutdown, (uv_stream_t *)&c->handle, on_shutdown) < 0)
		conn_close(c);
}

void conn_eof(struct conn *c)
{
	c->eof = true;
	uv_read_stop((uv_stream_t *)&c->handle);
	if (c->forwarded == 0)
		conn_finish(c);
}

static void on_idle(uv_timer_t *t)
{
	struct conn *c = t->data;
	c->set->ops->idle(c);
}

/* Closes the connection idle the longest to make room; false if every one has a query in flight. */
static bool evict_idle(struct conn_set *s)
{
	for (struct list_node *n = s->conns.tail; n; n = n->prev) {
		struct conn *c = list_entry(n, struct conn, lru);
		if (c->closing || c->forwarded)
			continue;
		log_debug("%s: %u connections, closing the one idle the longest", s->name, s->nopen);
		count(s->evicted);
		conn_close(c);
		return true;
	}
	return false;
}

static void on_connection(uv_stream_t *server, int status)
{
	struct conn_set *s = server->data;
	if (status < 0) {
		log_warn("%s: accept: %s", s->name, uv_strerror(status));
		return;
	}
	struct conn *c = calloc(1, s->conn_size);
	if (!c) {
		log_err("%s: out of memory for a connection", s->name);
		return;
	}
	c->set = s;
	uv_tcp_init(s->loop, &c->handle);
	c->handle.data = c;
	c->open_handles = 1;
	bool ok = uv_accept(server, (uv_stream_t *)&c->handle) == 0 && !s->closing;
	if (ok && s->nopen >= s->max_conns && !evict_idle(s)) {
		log_debug("%s: %u connections, each with a query in flight: refusing another", s->name, s->nopen);
		count(s->full);
		ok = false;
	}
	int plen = sizeof(c->client);
	if (ok && uv_tcp_getpeername(&c->handle, (struct sockaddr *)&c->client, &plen) < 0)
		c->client.ss_family = AF_UNSPEC;        /* not allowed recursion */
	if (!ok || !s->ops->accepted(c)) {
		/* close alone: on the list (for the owner's count at free) but not open */
		c->closing = true;
		s->nconns++;
		list_push(&s->conns, &c->lru);
		uv_close((uv_handle_t *)&c->handle, handle_closed);
		return;
	}
	uv_timer_init(s->loop, &c->timer);
	c->timer.data = c;
	c->open_handles = 2;
	list_push(&s->conns, &c->lru);
	s->nconns++;
	s->nopen++;
	set_gauge(s);
	uv_tcp_nodelay(&c->handle, 1);
	uv_timer_start(&c->timer, on_idle, s->idle_ms, s->idle_ms);
	int rc = uv_read_start((uv_stream_t *)&c->handle, s->ops->alloc, s->ops->read);
	if (rc < 0) {
		log_debug("%s: read start: %s", s->name, uv_strerror(rc));
		conn_close(c);
	}
}

void conn_set_init(struct conn_set *s, uv_loop_t *loop, const char *name, const struct conn_ops *ops,
		   size_t conn_size, struct tcp_server *tcp)
{
	s->loop = loop;
	s->name = name;
	s->ops = ops;
	s->conn_size = conn_size;
	s->tcp = tcp;
}

int conn_set_listen(struct conn_set *s, const struct inrpd_listen *ls, unsigned n, const char *keyword,
		    char *err, size_t err_len)
{
	for (unsigned i = 0; i < n; i++) {
		struct sockaddr_storage ss;
		unsigned flags = ls[i].ep.family == AF_INET6 ? UV_TCP_IPV6ONLY : 0;
		ip_endpoint_sockaddr(&ls[i].ep, &ss);
		uv_tcp_t *t = &s->listeners[i];
		uv_tcp_init(s->loop, t);
		t->data = s;
		s->nlisten = i + 1;
		s->open_listeners++;
		int rc = uv_tcp_bind(t, (struct sockaddr *)&ss, flags);
		if (rc == 0)
			rc = uv_listen((uv_stream_t *)t, CONN_BACKLOG, on_connection);
		if (rc < 0) {
			char what[80];
			ip_endpoint_format(&ls[i].ep, what, sizeof(what));
			snprintf(err, err_len, "%s %s: %s: %s", keyword, what, s->name, uv_strerror(rc));
			return -1;
		}
	}
	return 0;
}

void conn_set_limits(struct conn_set *s, unsigned max_conns, uint64_t idle_ms)
{
	s->max_conns = max_conns;
	s->idle_ms = idle_ms;
	for (struct list_node *n = s->conns.head; n; n = n->next) {
		struct conn *c = list_entry(n, struct conn, lru);
		if (!c->closing)
			uv_timer_set_repeat(&c->timer, idle_ms);
	}
}

static void listener_closed(uv_handle_t *h)
{
	struct conn_set *s = h->data;
	s->open_listeners--;
}

void conn_set_close(struct conn_set *s)
{
	if (s->closing)
		return;
	s->closing = true;
	for (unsigned i = 0; i < s->nlisten; i++)
		uv_close((uv_handle_t *)&s->listeners[i], listener_closed);
	for (struct list_node *n = s->conns.head; n; n = n->next)
		conn_close(list_entry(n, struct conn, lru));
}
