/*
 * DNS over HTTPS (RFC 8484): the HTTP/2 server of one connection
 * (libnghttp2, memory in and out: tls.c feeds it the plaintext and takes
 * what it sends).  Each stream is one request, read by lib/dns/dohreq.c
 * (method, path, ?dns=, content type, body); a DNS message goes to
 * tls.c's query path under the stream's id, and its answer comes back
 * here, now or when the forwarding engine has it, as a 200 with
 * Content-Type application/dns-message and Cache-Control max-age the
 * answer's smallest TTL.  A refused request gets its status and no body.
 *
 * At most DOH_MAX_STREAMS requests at once per connection (SETTINGS;
 * nghttp2 refuses streams past it).  What a client may send us is held
 * back by HTTP/2's flow control, not by trust: the request bytes kept
 * (bodies, until their stream closes) are credited back only then, so a
 * connection holds at most DOH_CONN_WINDOW of them however its streams
 * dawdle; bytes not kept (a body past 65535, one already refused) are
 * credited at once, so such a request still ends and gets its status.
 * A stream's window is one byte over the largest message, so an
 * oversized body shows itself and gets 413 instead of stalling.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <nghttp2/nghttp2.h>

#include "dnspad.h"
#include "dohreq.h"
#include "log.h"
#include "tls.h"
#include "tlslink.h"

#define DOH_MAX_STREAMS 128
#define DOH_STREAM_WINDOW (DOH_MSG_MAX + 1)
#define DOH_CONN_WINDOW (256 * 1024)

struct doh_stream {
	struct doh_stream *prev, *next;
	struct dohreq req;
	size_t held;                    /* request bytes kept, credited back at close */
	uint8_t *body;                  /* the response's */
	size_t body_len, sent;
	bool responded;
};

struct doh_session {
	nghttp2_session *h2;
	struct tls_conn *conn;
	const char *path;
	struct doh_stream *streams;     /* open: nghttp2_session_del calls no callback */
};

static void stream_free(struct doh_session *d, struct doh_stream *st)
{
	if (st->held)
		nghttp2_session_consume_connection(d->h2, st->held);
	if (st->prev)
		st->prev->next = st->next;
	else
		d->streams = st->next;
	if (st->next)
		st->next->prev = st->prev;
	dohreq_free(&st->req);
	free(st->body);
	free(st);
}

static ssize_t body_read(nghttp2_session *h2, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
			 nghttp2_data_source *src, void *user)
{
	struct doh_stream *st = src->ptr;
	(void)h2;
	(void)id;
	(void)user;
	size_t n = st->body_len - st->sent;
	if (n > len)
		n = len;
	memcpy(buf, st->body + st->sent, n);
	st->sent += n;
	if (st->sent == st->body_len)
		*flags |= NGHTTP2_DATA_FLAG_EOF;
	return (ssize_t)n;
}

/* Headers and, with a body, the data provider; a status without a body otherwise. */
static void respond(struct doh_session *d, int32_t id, struct doh_stream *st, unsigned status,
		    const uint8_t *msg, size_t len)
{
	char code[8], clen[8], cc[32];
	st->responded = true;
	snprintf(code, sizeof(code), "%u", status);
	nghttp2_nv nv[4];
	size_t n = 0;
#define NV(k, v) nv[n++] = (nghttp2_nv){ (uint8_t *)(k), (uint8_t *)(v), strlen(k), strlen(v), \
					  NGHTTP2_NV_FLAG_NO_COPY_NAME }
	NV(":status", code);
	if (msg) {
		int64_t ttl = dns_msg_min_ttl(msg, len, 0);
		snprintf(clen, sizeof(clen), "%zu", len);
		snprintf(cc, sizeof(cc), "max-age=%lld", (long long)(ttl > 0 ? ttl : 0));
		NV("content-type", "application/dns-message");
		NV("content-length", clen);
		NV("cache-control", cc);
	} else {
		NV("content-length", "0");
	}
#undef NV
	nghttp2_data_provider prd = { .source.ptr = st, .read_callback = body_read };
	if (msg) {
		st->body = malloc(len);
		if (!st->body) {
			respond(d, id, st, 500, NULL, 0);
			return;
		}
		memcpy(st->body, msg, len);
		st->body_len = len;
	}
	int rc = nghttp2_submit_response(d->h2, id, nv, n, msg ? &prd : NULL);
	if (rc < 0) {
		log_debug("https: response: %s", nghttp2_strerror(rc));
		return;
	}
	tls_conn_http_status(d->conn, status);
}

void doh_session_respond(struct doh_session *d, int32_t id, const uint8_t *msg, size_t len)
{
	struct doh_stream *st = nghttp2_session_get_stream_user_data(d->h2, id);
	if (!st || st->responded)
		return;                 /* the client reset the stream meanwhile */
	respond(d, id, st, msg ? 200 : 400, msg, len);
}

/* The request is all in: refused, or its message to the answer path. */
static void request_done(struct doh_session *d, int32_t id, struct doh_stream *st)
{
	const uint8_t *msg;
	size_t len;
	uint16_t status = dohreq_finish(&st->req, &msg, &len);
	if (status) {
		respond(d, id, st, status, NULL, 0);
		return;
	}
	tls_conn_request(d->conn, id, msg, len);
}

static int on_begin_headers(nghttp2_session *h2, const nghttp2_frame *f, void *user)
{
	struct doh_session *d = user;
	if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	struct doh_stream *st = calloc(1, sizeof(*st));
	if (!st)
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	dohreq_init(&st->req, d->path);
	st->next = d->streams;
	if (d->streams)
		d->streams->prev = st;
	d->streams = st;
	nghttp2_session_set_stream_user_data(h2, f->hd.stream_id, st);
	return 0;
}

static int on_header(nghttp2_session *h2, const nghttp2_frame *f, const uint8_t *name, size_t namelen,
		     const uint8_t *value, size_t valuelen, uint8_t flags, void *user)
{
	(void)flags;
	(void)user;
	if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	struct doh_stream *st = nghttp2_session_get_stream_user_data(h2, f->hd.stream_id);
	if (st)
		dohreq_header(&st->req, name, namelen, value, valuelen);
	return 0;
}

static int on_data(nghttp2_session *h2, uint8_t flags, int32_t id, const uint8_t *data, size_t len, void *user)
{
	(void)flags;
	(void)user;
	struct doh_stream *st = nghttp2_session_get_stream_user_data(h2, id);
	size_t kept = 0, credit = len;
	if (st) {
		size_t before = st->req.len;
		dohreq_body(&st->req, data, len);
		kept = st->req.len - before;
		credit -= kept;
		st->held += kept;
		if (st->req.status) {
			/* refused (413): what it kept is of no use; the rest may come for its status */
			credit += st->held;
			st->held = 0;
			dohreq_free(&st->req);
		}
	}
	if (credit)
		nghttp2_session_consume(h2, id, credit);
	return 0;
}

static int on_frame(nghttp2_session *h2, const nghttp2_frame *f, void *user)
{
	struct doh_session *d = user;
	if ((f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA) ||
	    !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
		return 0;
	struct doh_stream *st = nghttp2_session_get_stream_user_data(h2, f->hd.stream_id);
	if (st && !st->responded)
		request_done(d, f->hd.stream_id, st);
	return 0;
}

static int on_close(nghttp2_session *h2, int32_t id, uint32_t error, void *user)
{
	struct doh_session *d = user;
	(void)error;
	struct doh_stream *st = nghttp2_session_get_stream_user_data(h2, id);
	if (st) {
		nghttp2_session_set_stream_user_data(h2, id, NULL);
		stream_free(d, st);
	}
	return 0;
}

static nghttp2_session_callbacks *callbacks(void)
{
	static nghttp2_session_callbacks *cb;
	if (!cb) {
		if (nghttp2_session_callbacks_new(&cb) != 0)
			return NULL;
		nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
		nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
		nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
		nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame);
		nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
	}
	return cb;
}

struct doh_session *doh_session_new(struct tls_conn *c, const char *path)
{
	nghttp2_session_callbacks *cb = callbacks();
	struct doh_session *d = calloc(1, sizeof(*d));
	if (!cb || !d) {
		free(d);
		return NULL;
	}
	d->conn = c;
	d->path = path;
	nghttp2_option *opt;
	if (nghttp2_option_new(&opt) != 0) {
		free(d);
		return NULL;
	}
	nghttp2_option_set_no_auto_window_update(opt, 1);
	int rc = nghttp2_session_server_new2(&d->h2, cb, d, opt);
	nghttp2_option_del(opt);
	if (rc != 0) {
		free(d);
		return NULL;
	}
	nghttp2_settings_entry iv[] = {
		{ NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, DOH_MAX_STREAMS },
		{ NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, 2 * DOH_MSG_MAX },
		{ NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, DOH_STREAM_WINDOW },
	};
	if (nghttp2_submit_settings(d->h2, NGHTTP2_FLAG_NONE, iv, sizeof(iv) / sizeof(iv[0])) != 0 ||
	    nghttp2_session_set_local_window_size(d->h2, NGHTTP2_FLAG_NONE, 0, DOH_CONN_WINDOW) != 0) {
		doh_session_free(d);
		return NULL;
	}
	return d;
}

int doh_session_input(struct doh_session *d, const uint8_t *data, size_t len)
{
	ssize_t n = nghttp2_session_mem_recv(d->h2, data, len);
	if (n < 0) {
		log_debug("https: HTTP/2: %s", nghttp2_strerror((int)n));
		return -1;
	}
	return 0;
}

int doh_session_send(struct doh_session *d, struct tlslink *link)
{
	for (;;) {
		const uint8_t *p;
		ssize_t n = nghttp2_session_mem_send(d->h2, &p);
		if (n < 0) {
			log_debug("https: HTTP/2: %s", nghttp2_strerror((int)n));
			return -1;
		}
		if (n == 0)
			return 0;
		if (tlslink_write(link, p, (size_t)n) < 0)
			return -1;
	}
}

bool doh_session_done(const struct doh_session *d)
{
	return !nghttp2_session_want_read(d->h2) && !nghttp2_session_want_write(d->h2);
}

void doh_session_free(struct doh_session *d)
{
	if (!d)
		return;
	while (d->streams) {
		d->streams->held = 0;   /* no credit to give back: the session goes too */
		stream_free(d, d->streams);
	}
	nghttp2_session_del(d->h2);
	free(d);
}
