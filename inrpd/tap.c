/*
 * dnstap query logs (tap.h): the `dnstap` block, the per-thread rings and
 * queues, and the socket libfstrm's I/O thread writes to.
 *
 * A thread packs a message into its ring and submits it to its fstrm
 * input queue; the I/O thread writes it (or throws it away while no reader
 * is connected) and then marks its bytes done, from its own thread.  The
 * owner takes done bytes back from the ring's tail in order, so the ring
 * is one producer and one consumer with no lock: a record's `done` is the
 * only word both touch.
 *
 * The socket is ours, not fstrm_unix_writer's, so that the threads know
 * whether a reader is connected (it has answered the handshake): without
 * one a message is counted as dropped before it is written, and costs
 * nothing more.  Its send and
 * receive timeouts bound how long a reader that stops reading holds the
 * I/O thread (never a worker): past them the connection is closed, the
 * messages meanwhile dropped, and the I/O thread connects again.
 *
 * A file is emptied when opened (one Frame Streams stream a file, as
 * fstrm_file_writer makes).  A reload asks the I/O thread to look at its
 * path before its next write: if the file there is no longer ours (logrotate
 * moved it), ours gets its STOP frame and is closed, and a new one is
 * started at the path.  One not moved is written on.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <fstrm.h>

#include "counters.h"
#include "inrpd.h"
#include "log.h"
#include "tap.h"

#ifndef INRPD_VERSION
#define INRPD_VERSION "unknown"
#endif

#define TAP_RING                (1u << 20)      /* bytes per thread */
#define TAP_RECORD_MAX          (TAP_RING / 4)
#define TAP_QUEUE_ENTRIES       1024            /* fstrm input queue, per thread (power of 2) */
#define TAP_REOPEN_S            1               /* a reader that went away: connect again after */
#define TAP_IO_TIMEOUT_S        2               /* a reader that stopped reading: closed after */

struct tap *inrpd_tap;

struct tap {
	struct fstrm_iothr *iothr;
	int fd;                         /* the I/O thread's */
	int connected;                  /* a reader is there (written by the I/O thread) */
	struct sockaddr_un sa;          /* the reader's socket, or */
	char file[PATH_MAX];            /* the file ("": a socket) */
	int reopen;                     /* a reload asked (set by the main thread) */
	dev_t file_dev;                 /* what the file's fd is */
	ino_t file_ino;
	char identity[TAP_IDENTITY_MAX + 1];    /* "": not sent */
	char version[TAP_IDENTITY_MAX + 1];
	uint16_t want;
	unsigned nqueues, given;
	struct tap_queue *queues;
};

/* A ring record: its length (8-byte aligned, header included), then the message. */
struct tap_record {
	uint32_t len;
	uint32_t done;                  /* set by the I/O thread (release), read by the owner */
	uint8_t data[];
};

/* ---- configuration ---- */

struct tap_conf_ctx {
	struct tap_conf *c;
	bool seen_path, seen_file, seen_sid, seen_sver, seen_id, seen_ver, seen_cq, seen_cr, seen_fq, seen_fr;
};

static int kw_socket_path(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct tap_conf_ctx *x = arg;
	if (x->c->file_path)
		return conf_error(err, err_len, s, "dnstap: '%s' and 'file' exclude each other", s->argv[0]);
	return conf_arg_path(s, 1, &x->seen_path, UNIX_PATH_MAX, &x->c->socket_path, err, err_len);
}

static int kw_file(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct tap_conf_ctx *x = arg;
	if (x->c->socket_path)
		return conf_error(err, err_len, s, "dnstap: 'file' and 'socket-path' exclude each other");
	return conf_arg_path(s, 1, &x->seen_file, PATH_MAX - 1, &x->c->file_path, err, err_len);
}

static int kw_identity(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct tap_conf_ctx *x = arg;
	return conf_once_text(s, &x->seen_id, x->c->identity, TAP_IDENTITY_MAX, err, err_len);
}

static int kw_version(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct tap_conf_ctx *x = arg;
	return conf_once_text(s, &x->seen_ver, x->c->version, TAP_IDENTITY_MAX, err, err_len);
}

#define TAP_BOOL(fn, seen, field) \
	static int fn(const struct conf_stmt *s, void *arg, char *err, size_t err_len) \
	{ \
		struct tap_conf_ctx *x = arg; \
		return conf_once_bool(s, &x->seen, &x->c->field, err, err_len); \
	}
TAP_BOOL(kw_send_identity, seen_sid, send_identity)
TAP_BOOL(kw_send_version, seen_sver, send_version)
TAP_BOOL(kw_log_cq, seen_cq, log_cq)
TAP_BOOL(kw_log_cr, seen_cr, log_cr)
TAP_BOOL(kw_log_fq, seen_fq, log_fq)
TAP_BOOL(kw_log_fr, seen_fr, log_fr)
#undef TAP_BOOL

/* Unbound's dnstap options, without their "dnstap-" (the block says it), and BIND's file. */
static const struct conf_keyword tap_keywords[] = {
	{ "socket-path", 2, 2, CONF_NO_BLOCK, kw_socket_path },
	{ "socket", 2, 2, CONF_NO_BLOCK, kw_socket_path },     /* as Knot and the dnstap docs say it */
	{ "file", 2, 2, CONF_NO_BLOCK, kw_file },
	{ "send-identity", 2, 2, CONF_NO_BLOCK, kw_send_identity },
	{ "identity", 2, 2, CONF_NO_BLOCK, kw_identity },
	{ "send-version", 2, 2, CONF_NO_BLOCK, kw_send_version },
	{ "version", 2, 2, CONF_NO_BLOCK, kw_version },
	{ "log-client-query-messages", 2, 2, CONF_NO_BLOCK, kw_log_cq },
	{ "log-client-response-messages", 2, 2, CONF_NO_BLOCK, kw_log_cr },
	{ "log-forwarder-query-messages", 2, 2, CONF_NO_BLOCK, kw_log_fq },
	{ "log-forwarder-response-messages", 2, 2, CONF_NO_BLOCK, kw_log_fr },
	{ NULL, 0, 0, CONF_NO_BLOCK, NULL },
};

int tap_conf_parse(const struct conf_stmt *s, struct tap_conf *c, char *err, size_t err_len)
{
	if (c->line)
		return conf_error(err, err_len, s, "'dnstap' given twice (first at line %u)", c->line);
	c->line = s->line;
	c->send_identity = c->send_version = true;
	c->log_cq = c->log_cr = c->log_fq = c->log_fr = true;
	struct tap_conf_ctx x = { .c = c };
	if (conf_dispatch(s->block, tap_keywords, &x, err, err_len) < 0)
		return -1;
	if (!c->socket_path && !c->file_path)
		return conf_error(err, err_len, s, "dnstap: no 'socket-path' or 'file'");
	return 0;
}

void tap_conf_free(struct tap_conf *c)
{
	free(c->socket_path);
	free(c->file_path);
	c->socket_path = c->file_path = NULL;
}

static bool same_path(const char *a, const char *b)
{
	return a && b ? strcmp(a, b) == 0 : a == b;
}

bool tap_conf_equal(const struct tap_conf *a, const struct tap_conf *b)
{
	return same_path(a->socket_path, b->socket_path) && same_path(a->file_path, b->file_path) &&
	       a->send_identity == b->send_identity && a->send_version == b->send_version &&
	       strcmp(a->identity, b->identity) == 0 && strcmp(a->version, b->version) == 0 &&
	       a->log_cq == b->log_cq && a->log_cr == b->log_cr && a->log_fq == b->log_fq &&
	       a->log_fr == b->log_fr;
}

/* ---- the socket, for fstrm's writer (I/O thread) ---- */

static fstrm_res sock_open(void *obj)
{
	struct tap *t = obj;
	struct timeval tv = { .tv_sec = TAP_IO_TIMEOUT_S };
	/* fstrm leaves a connection whose handshake failed open */
	if (t->fd >= 0) {
		close(t->fd);
		t->fd = -1;
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fstrm_res_failure;
	/* the handshake's read and every write: a stuck reader is let go */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    connect(fd, (struct sockaddr *)&t->sa, sizeof(t->sa)) < 0) {
		close(fd);
		return fstrm_res_failure;
	}
	t->fd = fd;
	return fstrm_res_success;
}

/* The socket's or the file's descriptor closed: messages are dropped until it opens again. */
static fstrm_res fd_close(struct tap *t)
{
	if (t->fd < 0)
		return fstrm_res_failure;
	__atomic_store_n(&t->connected, 0, __ATOMIC_RELAXED);
	close(t->fd);
	t->fd = -1;
	return fstrm_res_success;
}

static fstrm_res sock_close(void *obj)
{
	struct tap *t = obj;
	fstrm_res r = fd_close(t);
	if (r == fstrm_res_success)
		log_info("dnstap: %s closed; connecting again every %d s", t->sa.sun_path, TAP_REOPEN_S);
	return r;
}

static fstrm_res sock_read(void *obj, void *data, size_t count)
{
	struct tap *t = obj;
	uint8_t *p = data;
	while (count > 0) {
		ssize_t n = read(t->fd, p, count);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return fstrm_res_failure;
		p += n;
		count -= (size_t)n;
	}
	/* the reader's ACCEPT (the only read before STOP): messages are wanted */
	if (!__atomic_load_n(&t->connected, __ATOMIC_RELAXED)) {
		__atomic_store_n(&t->connected, 1, __ATOMIC_RELAXED);
		log_info("dnstap: connected to %s", t->sa.sun_path);
	}
	return fstrm_res_success;
}

/* Every byte of iov to fd (a socket, with no SIGPIPE, or a file). */
static fstrm_res write_all(int fd, bool sock, const struct iovec *iov, int iovcnt)
{
	struct iovec v[IOV_MAX];
	if (iovcnt <= 0 || iovcnt > IOV_MAX)
		return fstrm_res_failure;
	memcpy(v, iov, (size_t)iovcnt * sizeof(*v));
	struct msghdr m = { .msg_iov = v, .msg_iovlen = (size_t)iovcnt };
	while (m.msg_iovlen > 0) {
		ssize_t n = sock ? sendmsg(fd, &m, MSG_NOSIGNAL) : writev(fd, m.msg_iov, (int)m.msg_iovlen);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fstrm_res_failure;
		/* a short write: step over what went */
		size_t done = (size_t)n;
		while (m.msg_iovlen > 0 && done >= m.msg_iov[0].iov_len) {
			done -= m.msg_iov[0].iov_len;
			m.msg_iov++;
			m.msg_iovlen--;
		}
		if (m.msg_iovlen > 0) {
			m.msg_iov[0].iov_base = (uint8_t *)m.msg_iov[0].iov_base + done;
			m.msg_iov[0].iov_len -= done;
		}
	}
	return fstrm_res_success;
}

static fstrm_res sock_write(void *obj, const struct iovec *iov, int iovcnt)
{
	struct tap *t = obj;
	return write_all(t->fd, true, iov, iovcnt);
}

/* ---- the file ---- */

static int file_create(struct tap *t)
{
	struct stat st;
	int fd = open(t->file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd < 0 || fstat(fd, &st) < 0) {
		log_err("dnstap: %s: %s", t->file, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	t->file_dev = st.st_dev;
	t->file_ino = st.st_ino;
	return fd;
}

static fstrm_res file_open(void *obj)
{
	struct tap *t = obj;
	if ((t->fd = file_create(t)) < 0)
		return fstrm_res_failure;
	__atomic_store_n(&t->connected, 1, __ATOMIC_RELAXED);
	log_info("dnstap: writing to %s", t->file);
	return fstrm_res_success;
}

static fstrm_res file_close(void *obj)
{
	return fd_close(obj);
}

/* A control frame (START with our content type, or STOP) written to fd. */
static int file_control(int fd, fstrm_control_type type)
{
	uint8_t buf[64];
	size_t len = sizeof(buf);
	struct fstrm_control *c = fstrm_control_init();
	fstrm_res res = fstrm_control_set_type(c, type);
	if (res == fstrm_res_success && type == FSTRM_CONTROL_START)
		res = fstrm_control_add_field_content_type(c, (const uint8_t *)DNSTAP_CONTENT_TYPE,
							   strlen(DNSTAP_CONTENT_TYPE));
	if (res == fstrm_res_success)
		res = fstrm_control_encode(c, buf, &len, FSTRM_CONTROL_FLAG_WITH_HEADER);
	fstrm_control_destroy(&c);
	struct iovec v = { .iov_base = buf, .iov_len = len };
	return res == fstrm_res_success && write_all(fd, false, &v, 1) == fstrm_res_success ? 0 : -1;
}

/* Asked by a reload: the file at our path is not ours any more, so ours ends and a new one begins. */
static void file_follow(struct tap *t)
{
	struct stat st;
	if (stat(t->file, &st) == 0 && st.st_dev == t->file_dev && st.st_ino == t->file_ino)
		return;
	int fd = file_create(t);
	if (fd < 0)
		return;         /* the old one is written on */
	if (file_control(fd, FSTRM_CONTROL_START) < 0) {
		log_err("dnstap: %s: %s", t->file, strerror(errno));
		close(fd);
		return;
	}
	file_control(t->fd, FSTRM_CONTROL_STOP);
	close(t->fd);
	t->fd = fd;
	log_info("dnstap: %s reopened", t->file);
}

static fstrm_res file_write(void *obj, const struct iovec *iov, int iovcnt)
{
	struct tap *t = obj;
	if (__atomic_exchange_n(&t->reopen, 0, __ATOMIC_RELAXED))
		file_follow(t);
	return write_all(t->fd, false, iov, iovcnt);
}

static fstrm_res sock_destroy(void *obj)
{
	(void)obj;                      /* the socket is closed by then; struct tap is ours */
	return fstrm_res_success;
}

/* ---- the rings ---- */

static struct tap_record *record_at(const struct tap_queue *q, uint64_t off)
{
	return (struct tap_record *)(q->ring + (off & (TAP_RING - 1)));
}

/* The I/O thread is done with a message (written, or thrown away). */
static void give_back(void *data, void *arg)
{
	(void)arg;
	struct tap_record *r = (struct tap_record *)((uint8_t *)data - offsetof(struct tap_record, data));
	__atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);
}

/* Room for n bytes at the head, or NULL: the ring is full of messages not yet written. */
static uint8_t *ring_reserve(struct tap_queue *q, size_t n)
{
	uint32_t need = (uint32_t)((sizeof(struct tap_record) + n + 7) & ~(size_t)7);
	if (n > TAP_RECORD_MAX)
		return NULL;
	while (q->tail != q->head) {
		struct tap_record *r = record_at(q, q->tail);
		if (!__atomic_load_n(&r->done, __ATOMIC_ACQUIRE))
			break;
		q->tail += r->len;
	}
	uint32_t to_end = TAP_RING - (uint32_t)(q->head & (TAP_RING - 1));
	uint32_t pad = to_end < need ? to_end : 0;      /* a record never wraps */
	if (TAP_RING - (q->head - q->tail) < (uint64_t)pad + need)
		return NULL;
	if (pad) {
		struct tap_record *r = record_at(q, q->head);
		r->len = pad;
		r->done = 1;
		q->head += pad;
	}
	struct tap_record *r = record_at(q, q->head);
	r->len = need;
	r->done = 0;
	q->head += need;
	return r->data;
}

/* ---- the threads' side ---- */

void tap_log(struct tap_queue *q, struct dnstap_event *ev)
{
	struct tap *t = q->tap;
	if (!q->ioq || !__atomic_load_n(&t->connected, __ATOMIC_RELAXED)) {
		CNT_INC(q->cnt, dnstap_dropped);
		return;
	}
	struct timespec now;
	bool query = ev->type == DNSTAP_CLIENT_QUERY || ev->type == DNSTAP_FORWARDER_QUERY;
	const struct timespec **own = query ? &ev->query_time : &ev->response_time;
	if (!*own) {
		clock_gettime(CLOCK_REALTIME, &now);
		*own = &now;
	}
	ev->identity = t->identity[0] ? t->identity : NULL;
	ev->version = t->version[0] ? t->version : NULL;
	size_t n = dnstap_size(ev);
	uint8_t *buf = ring_reserve(q, n);
	if (!buf) {
		CNT_INC(q->cnt, dnstap_dropped);
		return;
	}
	dnstap_write(ev, buf);
	if (fstrm_iothr_submit(t->iothr, q->ioq, buf, n, give_back, NULL) != fstrm_res_success) {
		give_back(buf, NULL);   /* still ours: the queue is full */
		CNT_INC(q->cnt, dnstap_dropped);
		return;
	}
	CNT_INC(q->cnt, dnstap_sent);
}

void tap_client_(struct tap_queue *q, enum dnstap_type type, enum dnstap_protocol proto,
		 const struct sockaddr *client, const struct sockaddr *self, const uint8_t *msg, size_t len)
{
	bool query = type == DNSTAP_CLIENT_QUERY;
	struct dnstap_event ev = {
		.type = type, .protocol = proto, .query_addr = client, .response_addr = self,
		.query = query ? msg : NULL, .query_len = query ? len : 0,
		.response = query ? NULL : msg, .response_len = query ? 0 : len,
	};
	tap_log(q, &ev);
}

void tap_forwarder_(struct tap_queue *q, enum dnstap_type type, enum dnstap_protocol proto,
		    const struct route *hop, const uint8_t *msg, size_t len, uint64_t sent_mono_us)
{
	bool query = type == DNSTAP_FORWARDER_QUERY;
	struct sockaddr_storage ss;
	struct timespec sent;
	route_sockaddr(hop, &ss);
	struct dnstap_event ev = {
		.type = type, .protocol = proto, .response_addr = (struct sockaddr *)&ss,
		.query = query ? msg : NULL, .query_len = query ? len : 0,
		.response = query ? NULL : msg, .response_len = query ? 0 : len,
	};
	if (!query && sent_mono_us) {
		/* the monotonic stamp on the wall clock's scale */
		struct timespec real, mono;
		clock_gettime(CLOCK_REALTIME, &real);
		clock_gettime(CLOCK_MONOTONIC, &mono);
		uint64_t mono_us = (uint64_t)mono.tv_sec * 1000000u + (uint64_t)mono.tv_nsec / 1000u;
		uint64_t ago_us = mono_us > sent_mono_us ? mono_us - sent_mono_us : 0;
		uint64_t real_us = (uint64_t)real.tv_sec * 1000000u + (uint64_t)real.tv_nsec / 1000u - ago_us;
		sent.tv_sec = (time_t)(real_us / 1000000u);
		sent.tv_nsec = (long)(real_us % 1000000u) * 1000;
		ev.query_time = &sent;
	}
	tap_log(q, &ev);
}

/* ---- lifetime ---- */

struct tap *tap_open(const struct tap_conf *c, const char *identity, const char *version, unsigned nqueues,
		     char *err, size_t err_len)
{
	struct tap *t = calloc(1, sizeof(*t));
	if (!t || !(t->queues = calloc(nqueues, sizeof(*t->queues))))
		goto nomem;
	t->fd = -1;
	t->nqueues = nqueues;
	t->sa.sun_family = AF_UNIX;
	if (c->socket_path)
		snprintf(t->sa.sun_path, sizeof(t->sa.sun_path), "%s", c->socket_path);
	else
		snprintf(t->file, sizeof(t->file), "%s", c->file_path);
	if (c->send_identity)
		snprintf(t->identity, sizeof(t->identity), "%s", c->identity[0] ? c->identity : identity);
	if (c->send_version)
		snprintf(t->version, sizeof(t->version), "%s", c->version[0] ? c->version : version);
	t->want = (uint16_t)((c->log_cq ? 1u << DNSTAP_CLIENT_QUERY : 0) |
			     (c->log_cr ? 1u << DNSTAP_CLIENT_RESPONSE : 0) |
			     (c->log_fq ? 1u << DNSTAP_FORWARDER_QUERY : 0) |
			     (c->log_fr ? 1u << DNSTAP_FORWARDER_RESPONSE : 0));
	for (unsigned i = 0; i < nqueues; i++) {
		/* touched only as messages come: a quiet thread's ring stays unbacked */
		if (!(t->queues[i].ring = malloc(TAP_RING)))
			goto nomem;
		t->queues[i].tap = t;
		t->queues[i].want = t->want;
	}
	return t;
nomem:
	snprintf(err, err_len, "dnstap: out of memory");
	tap_close(t);
	return NULL;
}

struct tap_queue *tap_queue_next(struct tap *t, struct inrpd_counters *cnt)
{
	if (!t || t->given == t->nqueues)
		return NULL;
	struct tap_queue *q = &t->queues[t->given++];
	q->cnt = cnt;
	return q;
}

int tap_start(struct tap *t, char *err, size_t err_len)
{
	struct fstrm_writer_options *wopt = fstrm_writer_options_init();
	fstrm_writer_options_add_content_type(wopt, DNSTAP_CONTENT_TYPE, strlen(DNSTAP_CONTENT_TYPE));
	struct fstrm_rdwr *rdwr = fstrm_rdwr_init(t);
	if (t->file[0]) {
		/* no read: a file's stream goes one way, no handshake */
		fstrm_rdwr_set_open(rdwr, file_open);
		fstrm_rdwr_set_close(rdwr, file_close);
		fstrm_rdwr_set_write(rdwr, file_write);
	} else {
		fstrm_rdwr_set_open(rdwr, sock_open);
		fstrm_rdwr_set_close(rdwr, sock_close);
		fstrm_rdwr_set_read(rdwr, sock_read);
		fstrm_rdwr_set_write(rdwr, sock_write);
	}
	fstrm_rdwr_set_destroy(rdwr, sock_destroy);
	struct fstrm_writer *w = fstrm_writer_init(wopt, &rdwr);
	fstrm_writer_options_destroy(&wopt);
	if (!w) {
		snprintf(err, err_len, "dnstap: cannot make the Frame Streams writer");
		return -1;
	}
	struct fstrm_iothr_options *opt = fstrm_iothr_options_init();
	fstrm_iothr_options_set_num_input_queues(opt, t->nqueues);
	fstrm_iothr_options_set_input_queue_size(opt, TAP_QUEUE_ENTRIES);
	fstrm_iothr_options_set_queue_model(opt, FSTRM_IOTHR_QUEUE_MODEL_SPSC);
	fstrm_iothr_options_set_reopen_interval(opt, TAP_REOPEN_S);
	/* its thread takes no signals: the main thread's loop handles them */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	t->iothr = fstrm_iothr_init(opt, &w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	fstrm_iothr_options_destroy(&opt);
	if (!t->iothr) {
		fstrm_writer_destroy(&w);
		snprintf(err, err_len, "dnstap: cannot start the Frame Streams I/O thread");
		return -1;
	}
	for (unsigned i = 0; i < t->nqueues; i++)
		t->queues[i].ioq = fstrm_iothr_get_input_queue_idx(t->iothr, i);
	return 0;
}

void tap_reopen(struct tap *t)
{
	if (t && t->file[0])
		__atomic_store_n(&t->reopen, 1, __ATOMIC_RELAXED);
}

void tap_close(struct tap *t)
{
	if (!t)
		return;
	/* flushes to a reader, gives every message back, closes the socket */
	if (t->iothr)
		fstrm_iothr_destroy(&t->iothr);
	if (t->fd >= 0)
		close(t->fd);           /* a handshake that failed */
	if (t->queues)
		for (unsigned i = 0; i < t->nqueues; i++)
			free(t->queues[i].ring);
	free(t->queues);
	free(t);
}
