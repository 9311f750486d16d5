/*
 * The /metrics endpoint (metrics.h): libmicrohttpd's thread asks the
 * daemon's loop for the text and waits for it, bounded.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <microhttpd.h>
#include <uv.h>

#include "addr.h"
#include "conf.h"
#include "log.h"
#include "metrics.h"
#include "prom.h"
#include "route.h"

/* ---- configuration ---- */

int metrics_conf_listen(const struct conf_stmt *s, struct metrics_config *m, char *err, size_t err_len)
{
	uint16_t port = 0;
	if (conf_once(&m->seen_listen, s, err, err_len) < 0 ||
	    conf_arg_endpoint(s, 1, &m->family, m->addr, &port, err, err_len) < 0)
		return -1;
	if (port == 0)
		return conf_error(err, err_len, s, "expected 'metrics ADDRESS port NUMBER'");
	m->port = port;
	m->enabled = true;
	return 0;
}

int metrics_conf_allow(const struct conf_stmt *s, struct metrics_config *m, char *err, size_t err_len)
{
	int family;
	unsigned len;
	struct prefix p = { 0 };
	if (conf_arg_prefix(s, 1, &family, p.addr, &len, err, err_len) < 0)
		return -1;
	if (m->nallow == METRICS_MAX_ALLOW)
		return conf_error(err, err_len, s, "too many metrics-allow prefixes (at most %d)", METRICS_MAX_ALLOW);
	p.family = (uint8_t)family;
	p.len = (uint8_t)len;
	m->allow[m->nallow++] = p;
	m->seen_allow = true;
	return 0;
}

void metrics_conf_finish(struct metrics_config *m)
{
	if (m->seen_allow)
		return;
	prefix_parse("127.0.0.0/8", &m->allow[0]);
	prefix_parse("::1/128", &m->allow[1]);
	m->nallow = 2;
}

bool metrics_config_equal(const struct metrics_config *a, const struct metrics_config *b)
{
	return a->enabled == b->enabled && (!a->enabled ||
		(a->family == b->family && a->port == b->port && memcmp(a->addr, b->addr, 16) == 0 &&
		 a->nallow == b->nallow && memcmp(a->allow, b->allow, a->nallow * sizeof(a->allow[0])) == 0));
}

const char *metrics_config_format(const struct metrics_config *m, char *buf, size_t len)
{
	struct ip_endpoint e = { .family = m->family, .port = m->port };
	memcpy(e.addr, m->addr, sizeof(e.addr));
	return ip_endpoint_format(&e, buf, len);
}

/* ---- the server ---- */

enum scrape_state {
	SCRAPE_IDLE,
	SCRAPE_ASKED,                   /* the HTTP thread waits, the loop has not started */
	SCRAPE_WRITING,                 /* the loop owns out */
	SCRAPE_DONE,                    /* out holds the text */
	SCRAPE_CLOSED,
};

struct metrics_server {
	struct MHD_Daemon *mhd;
	uv_async_t async;
	metrics_collect_fn fn;
	void *ctx;
	unsigned nallow;
	struct prefix allow[METRICS_MAX_ALLOW];
	pthread_mutex_t mu;
	pthread_cond_t cv;              /* CLOCK_MONOTONIC */
	enum scrape_state state;
	struct prom out;
	uint64_t scrapes, denied, timeouts;
	char start_error[256];          /* MHD's message while starting */
	char where[80];                 /* "ADDR port N", for messages */
	int family;
	int fd;                         /* listening, MHD's once started */
};

static void on_async(uv_async_t *h)
{
	struct metrics_server *s = h->data;
	pthread_mutex_lock(&s->mu);
	if (s->state != SCRAPE_ASKED) {         /* the scraper gave up */
		pthread_mutex_unlock(&s->mu);
		return;
	}
	s->state = SCRAPE_WRITING;
	pthread_mutex_unlock(&s->mu);

	prom_reset(&s->out);
	s->fn(s->ctx, &s->out);

	pthread_mutex_lock(&s->mu);
	s->state = SCRAPE_DONE;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type,
			     const char *body, size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	enum MHD_Result rc = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned status, const char *text)
{
	return reply(c, status, "text/plain; charset=utf-8", text, strlen(text));
}

/* Asks the loop for the text and answers with it (HTTP thread). */
static enum MHD_Result scrape(struct metrics_server *s, struct MHD_Connection *c)
{
	struct timespec deadline;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += METRICS_WAIT_MS / 1000;
	deadline.tv_nsec += (METRICS_WAIT_MS % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&s->mu);
	if (s->state == SCRAPE_CLOSED) {
		pthread_mutex_unlock(&s->mu);
		return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "shutting down\n");
	}
	s->state = SCRAPE_ASKED;
	uv_async_send(&s->async);
	while (s->state == SCRAPE_ASKED || s->state == SCRAPE_WRITING) {
		/* once the loop writes, wait for it: it is not blocked, only busy */
		if (s->state == SCRAPE_WRITING) {
			pthread_cond_wait(&s->cv, &s->mu);
			continue;
		}
		if (pthread_cond_timedwait(&s->cv, &s->mu, &deadline) == ETIMEDOUT &&
		    s->state == SCRAPE_ASKED) {
			s->state = SCRAPE_IDLE;
			__atomic_add_fetch(&s->timeouts, 1, __ATOMIC_RELAXED);
			pthread_mutex_unlock(&s->mu);
			return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "the daemon did not answer in time\n");
		}
	}
	if (s->state == SCRAPE_CLOSED) {
		pthread_mutex_unlock(&s->mu);
		return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "shutting down\n");
	}
	enum MHD_Result rc;
	if (s->out.b.nomem)
		rc = reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	else
		rc = reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", strbuf_str(&s->out.b),
			   s->out.b.len);
	s->state = SCRAPE_IDLE;
	pthread_mutex_unlock(&s->mu);
	__atomic_add_fetch(&s->scrapes, 1, __ATOMIC_RELAXED);
	return rc;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_len, void **con_cls)
{
	struct metrics_server *s = cls;
	(void)version;
	(void)upload;
	if (*upload_len)                /* no body expected: drop it */
		*upload_len = 0;
	(void)con_cls;
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET\n");
	if (strcmp(url, "/metrics") != 0)
		return reply_text(c, MHD_HTTP_NOT_FOUND, "not found: try /metrics\n");
	return scrape(s, c);
}

static enum MHD_Result on_accept(void *cls, const struct sockaddr *sa, socklen_t len)
{
	struct metrics_server *s = cls;
	(void)len;
	if (prefix_list_contains(s->allow, s->nallow, sa))
		return MHD_YES;
	__atomic_add_fetch(&s->denied, 1, __ATOMIC_RELAXED);
	return MHD_NO;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct metrics_server *s = cls;
	char msg[256];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	size_t n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '.'))
		msg[--n] = 0;
	if (!s->mhd)
		snprintf(s->start_error, sizeof(s->start_error), "%s", msg);
	log_debug("metrics: %s", msg);
}

struct metrics_server *metrics_server_open(struct uv_loop_s *loop, const struct metrics_config *cfg,
					   metrics_collect_fn fn, void *ctx, char *err, size_t err_len)
{
	struct metrics_server *s = calloc(1, sizeof(*s));
	metrics_config_format(cfg, s ? s->where : err, s ? sizeof(s->where) : err_len);
	if (!s) {
		snprintf(err + strlen(err), err_len - strlen(err), ": out of memory");
		return NULL;
	}
	s->fn = fn;
	s->ctx = ctx;
	s->family = cfg->family;
	s->nallow = cfg->nallow;
	memcpy(s->allow, cfg->allow, sizeof(s->allow));
	prom_init(&s->out);

	struct sockaddr_storage ss;
	socklen_t sl = sockaddr_from_bytes(cfg->family, cfg->addr, cfg->port, &ss);
	int one = 1;
	s->fd = socket(cfg->family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->fd < 0 || setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    (cfg->family == AF_INET6 && setsockopt(s->fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0) ||
	    bind(s->fd, (struct sockaddr *)&ss, sl) < 0 || listen(s->fd, 16) < 0) {
		snprintf(err, err_len, "metrics %s: %s", s->where, strerror(errno));
		goto fail;
	}
	if (uv_async_init(loop, &s->async, on_async) < 0) {
		snprintf(err, err_len, "metrics %s: uv_async_init failed", s->where);
		goto fail;
	}
	s->async.data = s;
	pthread_mutex_init(&s->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cv, &ca);
	pthread_condattr_destroy(&ca);
	return s;
fail:
	if (s->fd >= 0)
		close(s->fd);
	free(s);
	return NULL;
}

int metrics_server_start(struct metrics_server *s, char *err, size_t err_len)
{
	unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
	if (s->family == AF_INET6)
		flags |= MHD_USE_IPv6;
	s->mhd = MHD_start_daemon(flags, 0, on_accept, s, on_request, s,
				  MHD_OPTION_LISTEN_SOCKET, s->fd,
				  MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, s,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)8,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
				  MHD_OPTION_END);
	if (!s->mhd) {
		snprintf(err, err_len, "metrics %s: %s", s->where,
			 s->start_error[0] ? s->start_error : "cannot start the HTTP server");
		return -1;
	}
	return 0;
}

static void on_closed(uv_handle_t *h)
{
	struct metrics_server *s = h->data;
	prom_free(&s->out);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

void metrics_server_close(struct metrics_server *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->state = SCRAPE_CLOSED;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	if (s->mhd)
		MHD_stop_daemon(s->mhd);        /* joins the HTTP thread, closes the socket */
	else
		close(s->fd);
	uv_close((uv_handle_t *)&s->async, on_closed);
}

void metrics_server_stats(const struct metrics_server *s, struct metrics_server_stats *st)
{
	st->scrapes = __atomic_load_n(&s->scrapes, __ATOMIC_RELAXED);
	st->denied = __atomic_load_n(&s->denied, __ATOMIC_RELAXED);
	st->timeouts = __atomic_load_n(&s->timeouts, __ATOMIC_RELAXED);
}
