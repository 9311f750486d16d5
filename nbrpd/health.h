/*
 * Health checks of the content servers attached to this router (health.c):
 * a failing server leaves its content's routes (rde_content_changed).
 */
#ifndef NBRPD_HEALTH_H
#define NBRPD_HEALTH_H

#include <uv.h>

struct health;
struct nbrpd_config;
struct rde;

struct health *health_start(uv_loop_t *loop, struct nbrpd_config *cfg, struct rde *rde);
/* Stops every probe; the struct frees itself once its timers are closed. */
void health_stop(struct health *h);

#endif
