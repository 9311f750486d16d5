/*
 * One NBRP connection (docs/NBRP.md), BGP's finite state machine simplified,
 * shared by nbrpd and nbrp-updgen:
 *
 *   Idle --connect/accept--> OpenSent --their OPEN--> OpenConfirm
 *        --their KEEPALIVE--> Established
 *
 * Both sides send OPEN as soon as the TCP connection is up; a valid OPEN
 * (checked here, then by the owner's open callback: who the peer is,
 * collisions) is answered with KEEPALIVE.  The hold time agreed is the
 * smaller of the two (0: none); KEEPALIVEs go every third of it.  Any
 * error is a NOTIFICATION that says what was wrong, then the close.
 *
 * Writes go through a bounded queue (wqueue.h): the owner stops producing
 * while it is full and hears when it drains.  A peer that reads nothing
 * for the hold time is ended (the send hold timer of RFC 9687), and one
 * this far behind (queue_max) too, so what is queued stays bounded.
 *
 * With a TLS credential (tlslink.h) the connection is TLS 1.3 first, each
 * side presenting its router key: the handshake runs in Connect, bounded
 * by our hold time, at most TLS_HANDSHAKE_MS, and OPEN goes once it is done.  The key the peer
 * presented is nbrp_session_peer_key, for the owner's open callback to
 * compare with the key it expects.  Any TLS failure is an
 * NBRP_EVENT_TLS_FAILED, then the close: no NOTIFICATION can be trusted
 * over a channel that failed.
 */
#ifndef CR_NBRP_SESSION_H
#define CR_NBRP_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "nbrp.h"
#include "tlslink.h"
#include "wqueue.h"

#define TLS_HANDSHAKE_MS        10000

enum nbrp_session_state {
	NBRP_SESSION_IDLE,
	NBRP_SESSION_CONNECT,           /* TCP connect, then the TLS handshake, in progress */
	NBRP_SESSION_OPENSENT,          /* connected, our OPEN sent */
	NBRP_SESSION_OPENCONFIRM,       /* their OPEN received, KEEPALIVE awaited */
	NBRP_SESSION_ESTABLISHED,
};
const char *nbrp_session_state_name(enum nbrp_session_state s);

enum nbrp_session_event {
	NBRP_EVENT_NOTIFICATION_SENT,
	NBRP_EVENT_NOTIFICATION_RECEIVED,
	NBRP_EVENT_CLOSED,              /* the connection ended otherwise (read error, send hold timer, ...) */
	NBRP_EVENT_TLS_FAILED,          /* the handshake or a record failed: the connection ends */
};

struct nbrp_session;

struct nbrp_session_ops {
	/* Their OPEN passed the protocol's checks: 0 to go on, or -1 with e set (a NOTIFICATION). */
	int (*open)(struct nbrp_session *s, const Nbrp__Open *o, struct nbrp_error *e);
	void (*established)(struct nbrp_session *s);
	/* UPDATE, END-OF-RIB or ROUTE-REFRESH, once established. */
	void (*message)(struct nbrp_session *s, const Nbrp__Message *m);
	/* The write queue fell below its low-water mark. */
	void (*drained)(struct nbrp_session *s);
	/* Something worth an operator's attention: text says what (for last_error); code is a
	 * NOTIFICATION's (0 for NBRP_EVENT_CLOSED). */
	void (*event)(struct nbrp_session *s, enum nbrp_session_event ev, uint8_t code, const char *text);
	/* Gone (once, from any state); the session frees itself once its handles are closed. */
	void (*closed)(struct nbrp_session *s);
};

struct nbrp_session_config {
	const char *router_name;        /* ours, in our OPEN (copied) */
	uint32_t hold_time_s;           /* 0: none */
	uint32_t restart_time_s;
	bool server_mode;
	size_t max_message;             /* 0: NBRP_MAX_MESSAGE */
	size_t queue_high, queue_low, queue_max;        /* 0: defaults */
	struct tlslink_cred *tls;       /* our key, for TLS first; NULL: plain TCP.  Outlives the session. */
};

struct nbrp_session {
	uv_tcp_t tcp;
	uv_connect_t connect_req;
	uv_timer_t hold_timer;
	uv_timer_t keepalive_timer;
	struct wqueue wq;
	struct nbrp_reader reader;
	struct tlslink *tls;            /* once started with cfg.tls */
	const struct nbrp_session_ops *ops;
	struct nbrp_session_config cfg;
	char label[64];                 /* for logs: "peer NAME" */
	char router_name[NBRP_ROUTER_NAME_MAX + 1];
	enum nbrp_session_state state;
	uint32_t hold_s;                /* agreed, 0: none */
	uint32_t peer_hold_s, peer_restart_s;   /* from their OPEN */
	bool notified;                  /* a NOTIFICATION went either way */
	bool paused;                    /* the owner takes no more messages for now */
	bool closing;
	bool close_after_write;
	unsigned open_handles;
	uint64_t bytes_in, messages_in;
	void *data;                     /* the owner's */
};

struct nbrp_session *nbrp_session_new(uv_loop_t *loop, const struct nbrp_session_config *cfg,
				      const struct nbrp_session_ops *ops, void *data, const char *label);
/* Connects (from local, if not NULL); OPEN goes once connected.  Returns 0 or a libuv error
 * (the session is then closed: closed runs). */
int nbrp_session_connect(struct nbrp_session *s, const struct sockaddr *remote, const struct sockaddr *local);
/* An accepted connection: reading starts and OPEN goes. */
void nbrp_session_start(struct nbrp_session *s);
void nbrp_session_send(struct nbrp_session *s, const Nbrp__Message *m);
void nbrp_session_send_buf(struct nbrp_session *s, struct wq_buf *b);
/* Sends a NOTIFICATION, then closes once it is written. */
void nbrp_session_notify(struct nbrp_session *s, uint8_t code, uint8_t subcode, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* The owner has enough to do: no more messages until nbrp_session_resume (the ones
 * already read wait in the reader; the kernel's buffer fills and TCP slows the peer). */
void nbrp_session_pause(struct nbrp_session *s);
void nbrp_session_resume(struct nbrp_session *s);
/* Closes now (no NOTIFICATION). */
void nbrp_session_close(struct nbrp_session *s);
void nbrp_session_set_label(struct nbrp_session *s, const char *label);
/* The Ed25519 key the peer proved it holds in the TLS handshake; NULL without TLS. */
const uint8_t *nbrp_session_peer_key(const struct nbrp_session *s);

#endif
