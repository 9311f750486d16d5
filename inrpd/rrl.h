/*
 * rrl.c: response rate limiting, a table per UDP worker (share: the
 * workers), and the next-hop routers' addresses exempt from it.
 */
#ifndef INRPD_RRL_H
#define INRPD_RRL_H

#include <stdbool.h>
#include <stdint.h>

#include "route.h"
#include "runtime.h"

struct rrl;
enum rrl_verdict { RRL_PASS, RRL_DROP, RRL_SLIP };
struct rrl *rrl_create(unsigned share);
void rrl_free(struct rrl *r);
enum rrl_verdict rrl_check(struct rrl *r, const struct inrpd_runtime *rt, int family,
			   const uint8_t *addr, uint64_t now_ms);
/* The table entry of addr's prefix (tests: prefixes that share one). */
unsigned rrl_slot(int family, const uint8_t *addr);
/* Next-hop routers' addresses, exempt from the limit (main thread writes). */
void inrpd_routers_add(int family, const uint8_t *addr);
void inrpd_routers_add_set(const struct route *routes, unsigned n);
bool inrpd_routers_has(int family, const uint8_t *addr);

#endif
