/*
 * Response Policy Zones in inrpd (docs/RPZ.md): the `rpz` blocks, each
 * zone fetched from its primary by AXFR and kept current by IXFR (SOA
 * refresh and retry, NOTIFY from the primary), TSIG-signed when a key is
 * given; the zones' rule tables (lib/dns/rpz.c) published together by RCU,
 * in the order configured: the first zone with a rule for a name decides.
 *
 * The main thread owns the zones and their fetches; readers (every thread
 * that answers) call inrpd_rpz_match while online.  An IXFR's table is
 * made from the one in force and the diff, and published whole.  With a
 * state-dir, each zone's last good copy and the journal of the IXFRs
 * since are kept there (written by the thread pool) and its rules apply
 * from them at start, before the first fetch (an IXFR from its serial);
 * without one, a restart applies no rule until each zone is fetched again.
 */
#ifndef INRPD_POLICY_H
#define INRPD_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "addr.h"
#include "conf.h"
#include "name.h"
#include "rpz.h"
#include "tsig.h"

#define INRPD_RPZ_MAX_ZONES 32

struct inrpd_rpz_zone_conf {
	struct name zone;
	struct ip_endpoint primary;
	bool has_key;
	struct tsig_key key;
	uint16_t ede;                   /* 15 Blocked, 16 Censored, 17 Filtered; 0: none */
	unsigned line;
};

struct inrpd_rpz_conf {
	unsigned nzones;
	struct inrpd_rpz_zone_conf zones[INRPD_RPZ_MAX_ZONES];
	int log_level;                  /* per hit; -1: not logged */
	bool seen_log_level;
	char state_dir[512];            /* the zones' last good copies; "": none kept */
	bool seen_state_dir;
};

/* config.c's keywords: `rpz "ZONE" { ... }` and `rpz-log-level`. */
int inrpd_rpz_conf_zone(struct inrpd_rpz_conf *c, const struct conf_stmt *s, char *err, size_t err_len);
int inrpd_rpz_conf_log_level(struct inrpd_rpz_conf *c, const struct conf_stmt *s, char *err, size_t err_len);
int inrpd_rpz_conf_state_dir(struct inrpd_rpz_conf *c, const struct conf_stmt *s, char *err, size_t err_len);

/* What a name's policy is: the zone that decided and its rule. */
struct inrpd_rpz_match {
	struct rpz_hit hit;
	const struct name *zone;
	uint16_t ede;
};
/*
 * The policy in force, NULL when there is none: an online RCU reader's
 * until its next quiescent state, so a batch of queries asks once and a
 * query no policy concerns pays only for a test of the pointer.
 */
struct inrpd_policy;
const struct inrpd_policy *inrpd_rpz_policy(void);
/* The policy p's rule for qname (p not NULL), counted and logged; false: none. */
bool inrpd_rpz_match(const struct inrpd_policy *p, const struct name *qname, const struct sockaddr *client,
		     struct inrpd_rpz_match *m);
/*
 * A NOTIFY (opcode 4) for a policy zone: from its primary (and signed by
 * the zone's key, when it has one), a fetch is started and the answer is
 * NOERROR (signed likewise); from anyone else REFUSED, without a TSIG
 * that verifies NOTAUTH (with the TSIG error, RFC 8945 5.3.2), counted.
 * The answer's length in out, or 0 when the message is no NOTIFY of ours.
 */
size_t inrpd_rpz_notify(const uint8_t *pkt, size_t len, const struct sockaddr *client, uint8_t *out,
			size_t cap);

struct uv_loop_s;
struct ctl_reply;
/* On the main thread: starts (or, on reload, reconciles) the zones; 0 or -1 (out of memory). */
int inrpd_rpz_apply(struct uv_loop_s *loop, const struct inrpd_rpz_conf *c);
/* Stops the fetches and closes the timers; run the loop afterwards.  Then free (offline). */
void inrpd_rpz_close(void);
void inrpd_rpz_free(void);
struct prom;
/* The zones' metrics (inrpd_rpz_hits_total and the rest), on the main thread. */
void inrpd_rpz_metrics(struct prom *p);
/* `inrpc show rpz`. */
void inrpd_rpz_show(struct ctl_reply *r, bool json);

#endif
