/*
 * nbrpd beside BIRD (docs/BIRD.md): keeps the next-hop table (nexthop.h)
 * filled with what BIRD says about every address in it.
 */
#ifndef NBRPD_BIRDMON_H
#define NBRPD_BIRDMON_H

#include <uv.h>

struct birdmon;
struct nbrpd_config;
struct nexthop_table;

/* NULL when not configured (or out of memory: cfg->bird_socket says which).
 * polled runs after every poll of every address. */
struct birdmon *birdmon_start(uv_loop_t *loop, const struct nbrpd_config *cfg, struct nexthop_table *t,
			      void (*polled)(void *arg), void *arg);
void birdmon_stop(struct birdmon *m);
const char *birdmon_state(const struct birdmon *m);    /* "up", "down", "not configured" */

#endif
