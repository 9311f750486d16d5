/*
 * DNS over TLS (RFC 7858) and DNS over HTTPS (RFC 8484) on the main
 * thread's loop: tls.c holds the listeners and the TLS connections (one
 * tls_server per transport), doh.c the HTTP/2 of a DoH connection.
 */
#ifndef INRPD_TLS_H
#define INRPD_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "counters.h"
#include "inrpd.h"

enum tls_kind { TLS_DOT, TLS_DOH };

/* Counters of one transport beside its struct inrpd_counters (main thread only). */
enum tls_counter {
	TLS_CNT_HANDSHAKES,             /* completed */
	TLS_CNT_RESUMED,                /* ... of which resumed a session (a ticket) */
	TLS_CNT_FAIL_NOT_TLS,           /* handshakes failed: the client spoke no TLS */
	TLS_CNT_FAIL_VERSION,           /* ... offered only versions below TLS 1.2 */
	TLS_CNT_FAIL_CIPHER,            /* ... no cipher suite, group or signature in common */
	TLS_CNT_FAIL_ALERT,             /* ... the client sent an alert (say, it refused our certificate) */
	TLS_CNT_FAIL_TIMEOUT,           /* ... not done within tcp-idle-timeout */
	TLS_CNT_FAIL_OTHER,
	TLS_CNT_FAIL_ALPN,              /* DoH: the client did not agree to h2 */
	TLS_CNT_EVICTED,                /* closed, idle the longest, to make room for a new one */
	TLS_CNT_FULL,                   /* refused: every connection had a query in flight */
	TLS_CNT_CONNECTIONS,            /* a gauge: open now */
	TLS_CNT_HTTP_200,               /* DoH responses by status */
	TLS_CNT_HTTP_400,
	TLS_CNT_HTTP_404,
	TLS_CNT_HTTP_405,
	TLS_CNT_HTTP_413,
	TLS_CNT_HTTP_415,
	TLS_CNT_HTTP_500,
	TLS_CNT_HTTP_503,
	TLS_COUNTERS
};
#define TLS_CNT_HTTP_FIRST TLS_CNT_HTTP_200

struct tls_counters {
	uint64_t v[TLS_COUNTERS];
};
/* The name in `show counters` ("handshakes", "http_404", ...). */
const char *tls_counter_name(enum tls_counter i);
/* "tls" or "https": the transport's name in counters and metrics. */
const char *tls_kind_name(enum tls_kind k);

struct uv_loop_s;
struct tcp_server;
struct tls_server;
/* Listens on the transport's addresses with cfg->tls.cred; queries go through tcp's answer path. */
struct tls_server *tls_server_open(struct uv_loop_s *loop, enum tls_kind kind, const struct inrpd_config *cfg,
				   struct tcp_server *tcp, char *err, size_t err_len);
/* A reload: new connections get the new certificate; open ones keep theirs. */
void tls_server_reload(struct tls_server *s, const struct inrpd_config *cfg);
/* Closes listeners and connections; run the loop afterwards to finish. */
void tls_server_close(struct tls_server *s);
void tls_server_free(struct tls_server *s);
void tls_server_counters(const struct tls_server *s, struct inrpd_counters *sum, struct tls_counters *t);
/* The certificate in use: its notAfter, unix seconds. */
int64_t tls_server_not_after(const struct tls_server *s);

/* doh.c: the HTTP/2 server of one connection, fed plaintext by tls.c. */
struct tls_conn;
struct tlslink;
struct doh_session;
struct doh_session *doh_session_new(struct tls_conn *c, const char *path);
/* Plaintext from the client; -1: an HTTP/2 error, close the connection. */
int doh_session_input(struct doh_session *d, const uint8_t *data, size_t len);
/* The answer to stream id's query (msg NULL: the query gave none, 400). */
void doh_session_respond(struct doh_session *d, int32_t id, const uint8_t *msg, size_t len);
/* What HTTP/2 has to send, into the link; -1 on error. */
int doh_session_send(struct doh_session *d, struct tlslink *link);
/* Neither side has anything more to say: close. */
bool doh_session_done(const struct doh_session *d);
void doh_session_free(struct doh_session *d);

/* tls.c, for doh.c: a complete request's DNS message on stream id, and each status sent. */
void tls_conn_request(struct tls_conn *c, int32_t id, const uint8_t *msg, size_t len);
void tls_conn_http_status(struct tls_conn *c, unsigned status);

#endif
