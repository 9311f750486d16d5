/*
 * What reload can change, in one struct published by RCU: readers see one
 * consistent version (inrpd.h says who reads it and when).
 */
#ifndef INRPD_RUNTIME_H
#define INRPD_RUNTIME_H

#include <stdbool.h>
#include <stdint.h>

#include "cache.h"
#include "cookie.h"
#include "prefix.h"
#include "route.h"

#define INRPD_MAX_UPSTREAMS     ROUTESET_MAX_ROUTES
#define INRPD_MAX_ACL           64
#define INRPD_ROUTER_NAME_MAX   255
#define INRPD_TXT_MAX           255     /* one TXT string */

struct fib;
struct inrpd_records;

struct inrpd_runtime {
	struct fib *fib;
	struct inrpd_records *records;  /* configured per route name; NULL: none */
	uint32_t answer_ttl;
	uint16_t edns_udp_size;         /* our UDP answer limit and advertised size */
	unsigned nroutes;               /* names with static routes, for the log */
	uint64_t router_id;             /* inrp_router_id(router_name) */
	char router_name[INRPD_ROUTER_NAME_MAX + 1];
	uint32_t query_timeout_ms;      /* a client's whole query, all attempts */
	uint32_t hop_probe_ms;          /* a next hop passed over is asked again after this */
	uint8_t hop_limit;
	bool nsid;                      /* answer NSID (RFC 5001) with router_name */
	bool upstream_0x20;             /* upstreams asked with the name's case randomised */
	bool minimal_any;               /* RFC 8482: ANY over UDP gets one RRset */
	char identity[INRPD_TXT_MAX + 1];       /* CHAOS id.server, hostname.bind; "": hidden */
	char version[INRPD_TXT_MAX + 1];        /* CHAOS version.bind, version.server; "": hidden */
	struct cache_limits cache;      /* how long the packet cache holds answers */
	uint32_t cache_stale_s;         /* serve-stale window (RFC 8767); 0: off */
	uint32_t rrl_rate;              /* answers a second per prefix (rrl.c); 0: off */
	uint32_t rrl_slip;              /* every slip-th limited query gets TC; 0: none */
	bool rrl_exempt_routers;        /* next-hop routers' addresses are not limited */
	unsigned nrrl_exempt;
	struct prefix rrl_exempt[INRPD_MAX_ACL];
	uint8_t cookie_secret[COOKIE_SECRET_LEN];
	unsigned nupstreams;            /* fallback resolvers, ranked */
	struct route upstreams[INRPD_MAX_UPSTREAMS];
	unsigned nacl;                  /* clients allowed recursion (fallback) */
	struct prefix acl[INRPD_MAX_ACL];
	unsigned nproxy_from;           /* proxies that must send a PROXY v2 header (proxy.h) */
	struct prefix proxy_from[INRPD_MAX_ACL];
};

/* The runtime in force (main.c's); readers use rcu_dereference(inrpd_rt). */
extern struct inrpd_runtime *inrpd_rt;

/* No reader may still use it (after synchronize_rcu); caller offline. */
void inrpd_runtime_free(struct inrpd_runtime *rt);

#endif
