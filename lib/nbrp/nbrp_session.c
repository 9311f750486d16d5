#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "nbrp_session.h"

#define READ_BUF                (64 * 1024)
#define OPEN_HOLD_MS            30000   /* waiting for OPEN with no hold time agreed */
#define QUEUE_HIGH              (1u << 20)
#define QUEUE_LOW               (256u << 10)
#define QUEUE_MAX               (64u << 20)

static const char *const state_names[] = { "Idle", "Connect", "OpenSent", "OpenConfirm", "Established" };

const char *nbrp_session_state_name(enum nbrp_session_state s)
{
	return s <= NBRP_SESSION_ESTABLISHED ? state_names[s] : "?";
}

static void event(struct nbrp_session *s, enum nbrp_session_event ev, uint8_t code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void event(struct nbrp_session *s, enum nbrp_session_event ev, uint8_t code, const char *fmt, ...)
{
	char text[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (s->ops->event)
		s->ops->event(s, ev, code, text);
}

static void handle_closed(uv_handle_t *h)
{
	struct nbrp_session *s = h->data;
	if (--s->open_handles == 0) {
		nbrp_reader_free(&s->reader);
		tlslink_free(s->tls);
		free(s);
	}
}

void nbrp_session_close(struct nbrp_session *s)
{
	if (s->closing)
		return;
	s->closing = true;
	uv_read_stop((uv_stream_t *)&s->tcp);
	uv_close((uv_handle_t *)&s->tcp, handle_closed);
	uv_close((uv_handle_t *)&s->hold_timer, handle_closed);
	uv_close((uv_handle_t *)&s->keepalive_timer, handle_closed);
	s->ops->closed(s);
}

static void on_write_failed(struct wqueue *q, int status)
{
	struct nbrp_session *s = q->data;
	if (s->closing)
		return;
	event(s, NBRP_EVENT_CLOSED, 0, "write: %s", uv_strerror(status));
	log_debug("%s: write: %s", s->label, uv_strerror(status));
	nbrp_session_close(s);
}

static void on_drained(struct wqueue *q)
{
	struct nbrp_session *s = q->data;
	if (s->closing)
		return;
	if (s->close_after_write) {
		/* below the low mark is not empty: writes ahead of the NOTIFICATION
		 * may complete first, so ask to be called again until the last */
		if (q->queued == 0)
			nbrp_session_close(s);
		else
			q->full = true;
		return;
	}
	if (s->ops->drained)
		s->ops->drained(s);
}

static void tls_failed(struct nbrp_session *s);

/* The ciphertext TLS has for the peer, queued. */
static int tls_flush(struct nbrp_session *s)
{
	size_t len;
	uint8_t *p = tlslink_take(s->tls, &len);
	if (!p)
		return 0;
	struct wq_buf *b = wq_buf_adopt(p, len);
	if (!b)
		return UV_ENOMEM;
	int rc = wqueue_send(&s->wq, b);
	wq_buf_put(b);
	return rc;
}

void nbrp_session_send_buf(struct nbrp_session *s, struct wq_buf *b)
{
	if (s->closing || s->close_after_write)
		return;
	int rc;
	if (s->tls) {
		if (tlslink_write(s->tls, b->data, b->len) < 0) {
			tls_failed(s);
			return;
		}
		rc = tls_flush(s);
	} else {
		rc = wqueue_send(&s->wq, b);
	}
	if (rc < 0) {
		event(s, NBRP_EVENT_CLOSED, 0, "write: %s", uv_strerror(rc));
		log_warn("%s: write: %s", s->label, uv_strerror(rc));
		nbrp_session_close(s);
		return;
	}
	if (s->wq.queued > s->cfg.queue_max) {
		/* only changes pass the high-water mark (tables wait for it): a peer this far behind
		 * reads too slowly to follow them */
		event(s, NBRP_EVENT_CLOSED, 0, "%zu bytes unsent: the peer reads too slowly", s->wq.queued);
		log_warn("%s: %zu bytes unsent, closing", s->label, s->wq.queued);
		nbrp_session_close(s);
	}
}

void nbrp_session_send(struct nbrp_session *s, const Nbrp__Message *m)
{
	if (s->closing || s->close_after_write)
		return;
	size_t len;
	uint8_t *frame = nbrp_encode(m, &len);
	struct wq_buf *b = wq_buf_adopt(frame, len);
	if (!b) {
		log_err("%s: out of memory for a message", s->label);
		event(s, NBRP_EVENT_CLOSED, 0, "out of memory for a message");
		nbrp_session_close(s);
		return;
	}
	nbrp_session_send_buf(s, b);
	wq_buf_put(b);
}

static void close_when_written(struct nbrp_session *s)
{
	if (s->closing)
		return;
	uv_read_stop((uv_stream_t *)&s->tcp);
	uv_timer_stop(&s->keepalive_timer);
	s->close_after_write = true;
	if (s->wq.queued == 0)
		nbrp_session_close(s);
	else
		s->wq.full = true;      /* so that draining calls back, and it closes */
}

void nbrp_session_notify(struct nbrp_session *s, uint8_t code, uint8_t subcode, const char *fmt, ...)
{
	if (s->closing || s->close_after_write)
		return;
	if (s->state <= NBRP_SESSION_CONNECT) {
		/* no one to tell yet: a NOTIFICATION would wait for the connect, across a network
		 * whose SYNs go unanswered up to the kernel's retries (minutes) */
		nbrp_session_close(s);
		return;
	}
	struct nbrp_error e = { .code = code, .subcode = subcode };
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e.text, sizeof(e.text), fmt, ap);
	va_end(ap);
	event(s, NBRP_EVENT_NOTIFICATION_SENT, code, "sent %s: %s", nbrp_error_text(code, subcode), e.text);
	log_warn("%s: sending NOTIFICATION %u/%u (%s): %s", s->label, code, subcode,
		 nbrp_error_text(code, subcode), e.text);
	Nbrp__Message m;
	Nbrp__Notification n;
	nbrp_notification(&m, &n, &e);
	nbrp_session_send(s, &m);
	s->notified = true;
	close_when_written(s);
}

/* The TLS link failed: its alert (if any) goes, then the connection. */
static void tls_failed(struct nbrp_session *s)
{
	event(s, NBRP_EVENT_TLS_FAILED, 0, "%s", tlslink_error(s->tls));
	log_warn("%s: %s", s->label, tlslink_error(s->tls));
	if (tls_flush(s) < 0)
		nbrp_session_close(s);
	else
		close_when_written(s);
}

static void on_hold_expired(uv_timer_t *t)
{
	struct nbrp_session *s = t->data;
	nbrp_session_notify(s, NBRP_ERR_HOLD_TIMER, 0, "no message for %u s",
			    s->hold_s ? s->hold_s : OPEN_HOLD_MS / 1000);
}

static void send_keepalive(struct nbrp_session *s)
{
	Nbrp__Message m = NBRP__MESSAGE__INIT;
	Nbrp__Keepalive k = NBRP__KEEPALIVE__INIT;
	m.body_case = NBRP__MESSAGE__BODY_KEEPALIVE;
	m.keepalive = &k;
	nbrp_session_send(s, &m);
}

static void on_keepalive_timer(uv_timer_t *t)
{
	struct nbrp_session *s = t->data;
	if (s->hold_s && wqueue_stalled(&s->wq, (uint64_t)s->hold_s * 1000)) {
		/* nothing it was sent was read for a hold time: no NOTIFICATION would reach it either */
		event(s, NBRP_EVENT_CLOSED, 0, "send hold timer expired: the peer read nothing for %u s", s->hold_s);
		log_warn("%s: nothing written for %u s (send hold timer), closing", s->label, s->hold_s);
		nbrp_session_close(s);
		return;
	}
	send_keepalive(s);
}

static void hold_restart(struct nbrp_session *s)
{
	uint64_t ms = s->state >= NBRP_SESSION_OPENCONFIRM ? (uint64_t)s->hold_s * 1000 : OPEN_HOLD_MS;
	if (ms)
		uv_timer_start(&s->hold_timer, on_hold_expired, ms, 0);
	else
		uv_timer_stop(&s->hold_timer);
}

static void send_open(struct nbrp_session *s)
{
	Nbrp__Message m = NBRP__MESSAGE__INIT;
	Nbrp__Open o = NBRP__OPEN__INIT;
	static char *caps[] = { "route-refresh" };
	o.version = NBRP_VERSION;
	o.router_name = (char *)s->cfg.router_name;
	o.hold_time = s->cfg.hold_time_s;
	o.restart_time = s->cfg.restart_time_s;
	o.server_mode = s->cfg.server_mode;
	o.n_capabilities = 1;
	o.capabilities = caps;
	m.body_case = NBRP__MESSAGE__BODY_OPEN;
	m.open = &o;
	s->state = NBRP_SESSION_OPENSENT;
	nbrp_session_send(s, &m);
	hold_restart(s);
}

static void on_open(struct nbrp_session *s, const Nbrp__Open *o)
{
	struct nbrp_error e;
	if (s->state != NBRP_SESSION_OPENSENT) {
		nbrp_session_notify(s, NBRP_ERR_FSM, 1, "OPEN in state %s", nbrp_session_state_name(s->state));
		return;
	}
	if (nbrp_check_open(o, &e) < 0) {
		nbrp_session_notify(s, e.code, e.subcode, "%s", e.text);
		return;
	}
	s->peer_hold_s = o->hold_time;
	s->peer_restart_s = o->restart_time;
	uint32_t ours = s->cfg.hold_time_s, theirs = o->hold_time;
	s->hold_s = ours == 0 || theirs == 0 ? 0 : ours < theirs ? ours : theirs;
	s->state = NBRP_SESSION_OPENCONFIRM;
	if (s->ops->open && s->ops->open(s, o, &e) < 0) {
		nbrp_session_notify(s, e.code, e.subcode, "%s", e.text);
		return;
	}
	send_keepalive(s);
	hold_restart(s);
}

static void on_message(struct nbrp_session *s, const Nbrp__Message *m)
{
	hold_restart(s);
	switch (m->body_case) {
	case NBRP__MESSAGE__BODY_OPEN:
		on_open(s, m->open);
		return;
	case NBRP__MESSAGE__BODY_KEEPALIVE:
		if (s->state == NBRP_SESSION_OPENCONFIRM) {
			s->state = NBRP_SESSION_ESTABLISHED;
			if (s->hold_s)
				uv_timer_start(&s->keepalive_timer, on_keepalive_timer, s->hold_s * 1000 / 3,
					       s->hold_s * 1000 / 3);
			s->ops->established(s);
		} else if (s->state != NBRP_SESSION_ESTABLISHED) {
			nbrp_session_notify(s, NBRP_ERR_FSM, 1, "KEEPALIVE in state %s", nbrp_session_state_name(s->state));
		}
		return;
	case NBRP__MESSAGE__BODY_NOTIFICATION: {
		const Nbrp__Notification *n = m->notification;
		s->notified = true;
		event(s, NBRP_EVENT_NOTIFICATION_RECEIVED, (uint8_t)n->code, "received %s: %.200s",
		      nbrp_error_text((uint8_t)n->code, (uint8_t)n->subcode), n->text ? n->text : "");
		log_warn("%s: NOTIFICATION %u/%u received (%s): %.200s", s->label, n->code, n->subcode,
			 nbrp_error_text((uint8_t)n->code, (uint8_t)n->subcode), n->text ? n->text : "");
		nbrp_session_close(s);
		return;
	}
	default:
		break;
	}
	if (s->state != NBRP_SESSION_ESTABLISHED) {
		nbrp_session_notify(s, NBRP_ERR_FSM, 1, "message %d before the session is established",
				    (int)m->body_case);
		return;
	}
	s->ops->message(s, m);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct nbrp_session *s = h->data;
	(void)suggested;
	/* no room (out of memory): libuv reports UV_ENOBUFS to on_read */
	uint8_t *room = s->tls ? tlslink_space(s->tls, READ_BUF) : nbrp_reader_space(&s->reader, READ_BUF);
	*buf = uv_buf_init((char *)room, room ? READ_BUF : 0);
}

/* Hands over the messages read, until the owner pauses. */
static void process(struct nbrp_session *s)
{
	while (!s->paused && !s->closing && !s->close_after_write) {
		Nbrp__Message *m;
		struct nbrp_error e;
		int rc = nbrp_reader_next(&s->reader, &m, &e);
		if (rc == 0)
			return;
		if (rc < 0) {
			nbrp_session_notify(s, e.code, e.subcode, "%s", e.text);
			return;
		}
		s->messages_in++;
		on_message(s, m);
		nbrp_message_free(m);
	}
}

/* A handshake gets no longer than an OPEN would: our hold time, at most TLS_HANDSHAKE_MS. */
static uint64_t handshake_ms(const struct nbrp_session *s)
{
	uint64_t hold = (uint64_t)s->cfg.hold_time_s * 1000;
	return hold && hold < TLS_HANDSHAKE_MS ? hold : TLS_HANDSHAKE_MS;
}

static void on_handshake_expired(uv_timer_t *t)
{
	struct nbrp_session *s = t->data;
	unsigned limit_s = (unsigned)(handshake_ms(s) / 1000);
	event(s, NBRP_EVENT_TLS_FAILED, 0, "TLS handshake: not done in %u s", limit_s);
	log_warn("%s: TLS handshake not done in %u s, closing", s->label, limit_s);
	nbrp_session_close(s);
}

/*
 * The ciphertext read: the handshake goes on, or what it carries is
 * decrypted into the reader (all of it: no more than was read).  0, or -1
 * when the link failed (the session is closing).
 */
static int tls_read(struct nbrp_session *s)
{
	if (!tlslink_peer_key(s->tls)) {
		int rc = tlslink_handshake(s->tls);
		if (rc < 0) {
			tls_failed(s);
			return -1;
		}
		if (tls_flush(s) < 0) {
			event(s, NBRP_EVENT_CLOSED, 0, "write: out of memory");
			nbrp_session_close(s);
			return -1;
		}
		if (rc == 0)
			return 0;
		send_open(s);
	}
	for (;;) {
		uint8_t *room = nbrp_reader_space(&s->reader, READ_BUF);
		if (!room) {
			nbrp_session_notify(s, NBRP_ERR_CEASE, NBRP_CEASE_RESET, "out of memory");
			return -1;
		}
		ssize_t n = tlslink_read(s->tls, room, READ_BUF);
		if (n == 0)
			return 0;
		if (n < 0) {
			tls_failed(s);
			return -1;
		}
		nbrp_reader_commit(&s->reader, (size_t)n);
	}
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
	struct nbrp_session *s = st->data;
	(void)buf;
	if (s->closing || s->close_after_write)
		return;
	if (n == UV_ENOBUFS) {
		nbrp_session_notify(s, NBRP_ERR_CEASE, NBRP_CEASE_RESET, "out of memory");
		return;
	}
	if (n < 0) {
		const char *why = n == UV_EOF ? "closed by the peer" : uv_strerror((int)n);
		event(s, NBRP_EVENT_CLOSED, 0, "connection %s", why);
		log_info("%s: connection %s", s->label, why);
		nbrp_session_close(s);
		return;
	}
	s->bytes_in += (uint64_t)n;
	if (s->tls) {
		tlslink_commit(s->tls, (size_t)n);
		if (tls_read(s) < 0)
			return;
	} else {
		nbrp_reader_commit(&s->reader, (size_t)n);
	}
	process(s);
}

void nbrp_session_pause(struct nbrp_session *s)
{
	if (s->paused || s->closing)
		return;
	s->paused = true;
	uv_read_stop((uv_stream_t *)&s->tcp);
}

void nbrp_session_resume(struct nbrp_session *s)
{
	if (!s->paused || s->closing)
		return;
	s->paused = false;
	process(s);
	if (!s->paused && !s->closing && !s->close_after_write)
		uv_read_start((uv_stream_t *)&s->tcp, on_alloc, on_read);
}

struct nbrp_session *nbrp_session_new(uv_loop_t *loop, const struct nbrp_session_config *cfg,
				      const struct nbrp_session_ops *ops, void *data, const char *label)
{
	struct nbrp_session *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->cfg = *cfg;
	snprintf(s->router_name, sizeof(s->router_name), "%s", cfg->router_name);
	s->cfg.router_name = s->router_name;
	if (!s->cfg.queue_high)
		s->cfg.queue_high = QUEUE_HIGH;
	if (!s->cfg.queue_low)
		s->cfg.queue_low = QUEUE_LOW;
	if (!s->cfg.queue_max)
		s->cfg.queue_max = QUEUE_MAX;
	s->ops = ops;
	s->data = data;
	s->state = NBRP_SESSION_IDLE;
	nbrp_session_set_label(s, label);
	nbrp_reader_init(&s->reader, cfg->max_message);
	uv_tcp_init(loop, &s->tcp);
	uv_timer_init(loop, &s->hold_timer);
	uv_timer_init(loop, &s->keepalive_timer);
	s->tcp.data = s->hold_timer.data = s->keepalive_timer.data = s;
	s->open_handles = 3;
	wqueue_init(&s->wq, (uv_stream_t *)&s->tcp, s->cfg.queue_high, s->cfg.queue_low);
	s->wq.data = s;
	s->wq.drained = on_drained;
	s->wq.failed = on_write_failed;
	return s;
}

void nbrp_session_set_label(struct nbrp_session *s, const char *label)
{
	snprintf(s->label, sizeof(s->label), "%s", label ? label : "nbrp");
}

const uint8_t *nbrp_session_peer_key(const struct nbrp_session *s)
{
	return s->tls ? tlslink_peer_key(s->tls) : NULL;
}

void nbrp_session_start(struct nbrp_session *s)
{
	bool accepted = s->state == NBRP_SESSION_IDLE;
	uv_tcp_nodelay(&s->tcp, 1);
	if (s->cfg.tls) {
		char err[160];
		s->tls = tlslink_new(s->cfg.tls, accepted, err, sizeof(err));
		if (!s->tls) {
			event(s, NBRP_EVENT_CLOSED, 0, "%s", err);
			log_err("%s: %s", s->label, err);
			nbrp_session_close(s);
			return;
		}
	}
	int rc = uv_read_start((uv_stream_t *)&s->tcp, on_alloc, on_read);
	if (rc < 0) {
		event(s, NBRP_EVENT_CLOSED, 0, "read: %s", uv_strerror(rc));
		nbrp_session_close(s);
		return;
	}
	if (!s->tls) {
		send_open(s);
		return;
	}
	s->state = NBRP_SESSION_CONNECT;
	uv_timer_start(&s->hold_timer, on_handshake_expired, handshake_ms(s), 0);
	if (!accepted)
		tls_read(s);            /* the ClientHello */
}

static void on_connect(uv_connect_t *req, int status)
{
	struct nbrp_session *s = req->data;
	if (s->closing)
		return;
	if (status < 0) {
		event(s, NBRP_EVENT_CLOSED, 0, "connect: %s", uv_strerror(status));
		log_debug("%s: connect: %s", s->label, uv_strerror(status));
		nbrp_session_close(s);
		return;
	}
	nbrp_session_start(s);
}

int nbrp_session_connect(struct nbrp_session *s, const struct sockaddr *remote, const struct sockaddr *local)
{
	s->state = NBRP_SESSION_CONNECT;
	if (local)
		uv_tcp_bind(&s->tcp, local, 0);
	s->connect_req.data = s;
	int rc = uv_tcp_connect(&s->connect_req, &s->tcp, remote, on_connect);
	if (rc < 0) {
		event(s, NBRP_EVENT_CLOSED, 0, "connect: %s", uv_strerror(rc));
		nbrp_session_close(s);
	}
	return rc;
}
