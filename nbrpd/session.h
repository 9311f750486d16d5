/*
 * nbrpd's peers (session.c): connect and accept, collisions, graceful
 * restart, over the NBRP connection of lib/nbrp/nbrp_session.h (OPEN,
 * KEEPALIVE, hold timers, NOTIFICATION).
 * What peers say goes to the RDE (rde.h); the RDE's messages come back
 * through session_send and friends, which main.c registers as its ops.
 */
#ifndef NBRPD_SESSION_H
#define NBRPD_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"
#include "nbrp_session.h"


struct rde;
struct rde_peer;
struct rdesig;
struct rdesig_peer;
struct nexthop;
struct nexthop_table;
struct sessions;
struct wq_buf;

struct peer {
	struct sessions *s;
	struct nbrpd_peer_config cfg;
	struct rde_peer *rde;           /* NULL once removed */
	struct rdesig_peer *sig;        /* the signature stage's view of it; NULL: signatures off */
	bool configured;                /* false: removed, its connections closing */
	bool enabled;
	bool eor_received;
	bool restarting;                /* its routes are stale until END-OF-RIB or restart_timer */
	struct nbrp_session *conn[2];   /* [0] we connected, [1] they connected */
	struct nbrp_session *established;       /* one of the two, once Established */
	uv_timer_t retry_timer;
	uv_timer_t restart_timer;
	unsigned open_timers;
	uint64_t retry_ms;
	uint64_t established_at;        /* uv_now, ms */
	uint32_t hold_time_s;           /* negotiated */
	uint32_t restart_time_s;        /* the peer's, from its OPEN, capped by max-peer-restart-time */
	uint32_t restart_time_asked_s;  /* as its OPEN asked */
	uint64_t restart_capped;        /* OPENs that asked more than the cap */
	struct nexthop *transport;      /* its address, as IP routing sees it */
	uint64_t updates_in, notifications_in, notifications_out, flaps;
	uint64_t notif_in_code[8], notif_out_code[8];   /* NOTIFICATIONs by code (0: unknown) */
	uint64_t auth_refused;          /* sessions whose TLS key is not the trust file's for its name */
	uint64_t trust_refreshes;       /* ROUTE-REFRESHes asked for because a new trust file came */
	uint64_t tls_failures;          /* TLS handshakes or records that failed */
	char last_error[256];
};

/* on_eor: a peer sent END-OF-RIB, or one that had not was disabled (readiness, main.c). */
struct sessions *sessions_new(uv_loop_t *loop, const struct nbrpd_config *cfg, struct rde *rde,
			      struct nexthop_table *nexthops, bool follow_ip_routing,
			      void (*on_eor)(void *arg), void *arg);
/* Listens, and starts every peer. */
int sessions_start(struct sessions *s, char *err, size_t err_len);
void sessions_stop(struct sessions *s);
void sessions_free(struct sessions *s);
void sessions_set_config(struct sessions *s, const struct nbrpd_config *cfg);
/* A new trust file (or the one in force expired): a session whose TLS key is no longer the
 * trust file's for its peer is ended (CEASE, saying so; counted as a key refused). */
void sessions_check_keys(struct sessions *s);
/* Another trust file in force: peers under `signatures require` that had
 * routes refused are asked for their tables again (ROUTE-REFRESH), so
 * those routes are checked under the new file. */
void sessions_refresh_refused(struct sessions *s);
/* Sessions refused for their TLS key, and TLS failures, since start (removed peers' too). */
void sessions_auth_totals(const struct sessions *s, uint64_t *key_refused, uint64_t *tls_failures);
/* Our key for peers with `authentication tls` (once; copied).  0, or -1 with err set. */
/* Signatures started: every peer's UPDATEs go through the stage from now on, new peers' too. */
void sessions_set_signatures(struct sessions *s, struct rdesig *sig);
int sessions_set_key(struct sessions *s, const struct sigkey *k, char *err, size_t err_len);
/* Every enabled peer sent its table. */
bool sessions_all_eor(const struct sessions *s);
/* After each poll of IP routing: connect to peers reachable again, drop those unreachable too long. */
void sessions_check_transport(struct sessions *s);

unsigned sessions_count(const struct sessions *s);      /* configured peers */
struct peer *sessions_peer(const struct sessions *s, unsigned i);       /* i < sessions_count */
struct peer *sessions_peer_by_name(const struct sessions *s, const char *name);

/* Reload: a new peer starts, a removed one is told CEASE/deconfigured,
 * one whose address changed starts over. */
struct peer *peer_add(struct sessions *s, const struct nbrpd_peer_config *pc);
void peer_remove(struct peer *p);
void peer_reset(struct peer *p, const char *why);
void peer_route_refresh(struct peer *p);
void peer_enable(struct peer *p, bool enable);
/* The state of its most advanced connection. */
enum nbrp_session_state peer_state(const struct peer *p);
/* Bytes queued on its established session. */
size_t peer_queued(const struct peer *p);

/* The RDE's ops (rde.h): owner is the struct peer; sessions_resume's arg is the sessions. */
void sessions_resume(void *arg);
void session_send(void *arg, void *owner, struct wq_buf *frame);
bool session_full(void *arg, void *owner);
void session_notify(void *arg, void *owner, uint8_t code, uint8_t subcode, const char *text);

#endif
