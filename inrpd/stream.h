/*
 * Connections on the main thread that carry DNS messages in a stream of
 * their own (tls.c: DNS over TLS and over HTTPS) answered by tcp.c's
 * answer path: the same packet cache shard and forwarding engine as TCP,
 * so an answer is the same whatever the transport.
 */
#ifndef INRPD_STREAM_H
#define INRPD_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "dnstap.h"

struct inrpd_runtime;
struct inrpd_counters;
struct tcp_server;
struct uv_tcp_s;

/* Where a forwarded query's answer goes; tag is the one it was asked with. */
struct inrpd_stream {
	void (*deliver)(struct inrpd_stream *st, uint64_t tag, const uint8_t *msg, size_t len);
};

/*
 * Answers one query (the caller an online RCU reader) into out
 * (INRPD_ANSWER_MAX bytes) under TCP's size limit and no rate limit,
 * counted in cnt: the answer's length, 0 for none, or INRPD_FORWARD when
 * it went to the forwarding engine, whose answer st->deliver gets with tag
 * (perhaps before this returns).
 */
size_t tcp_server_answer(struct tcp_server *s, struct inrpd_stream *st, uint64_t tag, const uint8_t *pkt,
			 size_t len, const struct sockaddr *peer, uint8_t *out, struct inrpd_counters *cnt);

/* A client's query or our answer to it, to dnstap (if it logs them), as client; h: the connection. */
void tcp_server_tap(struct tcp_server *s, enum dnstap_type type, enum dnstap_protocol proto,
		    const struct uv_tcp_s *h, const struct sockaddr *client, const uint8_t *msg, size_t len);

/* st is closing: its queries in the forwarding engine are dropped. */
void tcp_server_forget(struct tcp_server *s, struct inrpd_stream *st);

#endif
