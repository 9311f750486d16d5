/*
 * Query logs in dnstap (lib/dns/dnstap.h) over Frame Streams to a unix
 * socket (libfstrm's I/O thread): CLIENT_QUERY and CLIENT_RESPONSE for what
 * clients ask and are told, FORWARDER_QUERY and FORWARDER_RESPONSE for what
 * goes to the next router or an upstream resolver and comes back.
 *
 * Each thread that answers (the UDP workers, the main thread for TCP) has a
 * queue of its own: a byte ring the messages are packed into, and an fstrm
 * input queue (single producer) that hands them to the I/O thread, which
 * writes them and gives their bytes back.  Nothing blocks and nothing is
 * allocated per message: when the ring or the queue is full, or no reader
 * is connected, the message is dropped and counted (dnstap_dropped).  The
 * I/O thread connects again, every second, to a reader that went away.
 */
#ifndef INRPD_TAP_H
#define INRPD_TAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "conf.h"
#include "dnstap.h"
#include "route.h"

#define TAP_IDENTITY_MAX 255

/* The `dnstap { ... }` block. */
struct tap_conf {
	char *socket_path;              /* NULL: no dnstap */
	bool send_identity, send_version;
	char identity[TAP_IDENTITY_MAX + 1];    /* "": the server's identity */
	char version[TAP_IDENTITY_MAX + 1];     /* "": "inrpd VERSION" */
	bool log_cq, log_cr, log_fq, log_fr;    /* which messages */
	unsigned line;                  /* where it was configured */
};
int tap_conf_parse(const struct conf_stmt *s, struct tap_conf *c, char *err, size_t err_len);
void tap_conf_free(struct tap_conf *c);
bool tap_conf_equal(const struct tap_conf *a, const struct tap_conf *b);

struct inrpd_counters;
struct tap;
/* The process's, made by main before the threads that log (NULL: dnstap is off). */
extern struct tap *inrpd_tap;

/* One thread's queue; NULL where dnstap is off (every call below then returns at once). */
struct tap_queue {
	struct tap *tap;
	uint16_t want;                  /* 1 << enum dnstap_type of the messages logged */
	struct inrpd_counters *cnt;     /* the owner thread's: dnstap_sent, dnstap_dropped */
	struct fstrm_iothr_queue *ioq;  /* set by tap_start */
	uint8_t *ring;
	uint64_t head, tail;            /* bytes ever reserved, ever given back */
};

/* nqueues threads' queues; identity and version as the configuration resolves them. */
struct tap *tap_open(const struct tap_conf *c, const char *identity, const char *version, unsigned nqueues,
		     char *err, size_t err_len);
/* The next thread's queue (main thread, before tap_start), its counts in cnt; NULL if t is. */
struct tap_queue *tap_queue_next(struct tap *t, struct inrpd_counters *cnt);
/* Starts the I/O thread (after the privilege drop: it is a thread). */
int tap_start(struct tap *t, char *err, size_t err_len);
/* After every thread writing to it has stopped. */
void tap_close(struct tap *t);

static inline bool tap_wants(const struct tap_queue *q, enum dnstap_type type)
{
	return q && (q->want & (1u << type));
}

/* Logs one event through q (the caller's thread's); its own time defaults to now. */
void tap_log(struct tap_queue *q, struct dnstap_event *ev);

void tap_client_(struct tap_queue *q, enum dnstap_type type, enum dnstap_protocol proto,
		 const struct sockaddr *client, const struct sockaddr *self, const uint8_t *msg, size_t len);
void tap_forwarder_(struct tap_queue *q, enum dnstap_type type, enum dnstap_protocol proto,
		    const struct route *hop, const uint8_t *msg, size_t len, uint64_t sent_mono_us);

/* A client's query, or our response to it (self: the address it asked; NULL: not known). */
static inline void tap_client(struct tap_queue *q, enum dnstap_type type, enum dnstap_protocol proto,
			      const struct sockaddr *client, const struct sockaddr *self, const uint8_t *msg,
			      size_t len)
{
	if (tap_wants(q, type))
		tap_client_(q, type, proto, client, self, msg, len);
}

/* Our query to a next hop, or its response (sent_mono_us: when the query went, CLOCK_MONOTONIC). */
static inline void tap_forwarder(struct tap_queue *q, enum dnstap_type type, enum dnstap_protocol proto,
				 const struct route *hop, const uint8_t *msg, size_t len, uint64_t sent_mono_us)
{
	if (tap_wants(q, type))
		tap_forwarder_(q, type, proto, hop, msg, len, sent_mono_us);
}

#endif
