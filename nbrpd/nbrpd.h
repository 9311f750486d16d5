/*
 * nbrpd: the NBRP routing daemon of a content router (docs/NBRP.md).
 * One thread, one libuv loop.  The modules, and the one
 * direction their calls go (docs/ARCHITECTURE.md):
 *
 *   main.c, control.c   wiring, signals, reload; the control socket (nbrc)
 *      |
 *      +--> session.c    sessions with peers  ---> rdesig.h (signatures on) ---> rde.h
 *      +--> rdesig.c     signatures: a stage in front of the RDE, each UPDATE
 *      |                 handed on once with its checks
 *      +--> rde.c        the RDE: packer.c, adjout.c, attr.c, decide.c, rib.c, ...
 *      |                 reaches sessions, the FIB channel and the signature
 *      |                 stage only through the callbacks main.c gives it
 *      +--> fibpush.c    the FIB channel to inrpd
 *      +--> aggregates.c stores, fetches and serving of aggregates ---> fibpush.c;
 *      |                 hears from the RDE and tells it through callbacks
 *      +--> health.c     health checks of attached servers ---> rde.h
 *      +--> birdmon.c    BIRD ---> nexthop.c, whose change callback reaches the RDE
 *
 * This header is the daemon's own state, for main.c and control.c only.
 */
#ifndef NBRPD_H
#define NBRPD_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"

struct aggregates;
struct birdmon;
struct fibpush;
struct health;
struct nexthop_table;
struct rde;
struct rdesig;
struct sessions;

struct nbrpd {
	uv_loop_t *loop;
	struct nbrpd_config *cfg;
	const char *conf_path;
	struct nexthop_table *nexthops;
	struct rde *rde;
	struct rdesig *sig;             /* NULL: signatures off */
	struct sessions *sessions;
	struct fibpush *fib;
	struct aggregates *aggs;
	struct health *health;          /* frees itself once stopped */
	struct birdmon *bird;           /* NULL: no BIRD configured */
	uv_timer_t sync_wait;
	uv_prepare_t turn_timer;        /* measures loop turns */
	uint64_t turn_start_ns, turn_idle_ns, turn_cpu_ns;
	double turn_max_ms, turn_max_cpu_ms;
	uint64_t turns;
	bool rib_ready;
	bool stopping;
	uint64_t started;
};

/* SIGHUP and `nbrc reload`: 0, or -1 with msg saying why the running configuration stays. */
int nbrpd_reload(struct nbrpd *d, char *msg, size_t msg_len);

/* metrics.c: Prometheus metrics (lib/ops/metrics.h serves them), on the loop. */
struct prom;
struct metrics_server;
void nbrpd_metrics_write(struct prom *p, struct nbrpd *d, const char *version, const struct metrics_server *ms);

/* control.c: the control socket's commands. */
struct ctl_server *control_open(struct nbrpd *d, const char *path, const char *greeting, char *err, size_t err_len);

#endif
