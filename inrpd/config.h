/*
 * config.c: inrpd's configuration file (docs/guide/resolver.md), and the
 * runtime made from it.
 */
#ifndef INRPD_CONFIG_H
#define INRPD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr.h"
#include "metrics.h"
#include "privdrop.h"
#include "policy.h"
#include "runtime.h"
#include "tap.h"

#define INRPD_MAX_LISTEN        64
#define INRPD_MAX_WORKERS       256
#define INRPD_DEFAULT_PORT      53

struct inrpd_listen {
	struct ip_endpoint ep;
	unsigned line;                  /* where it was configured, for messages */
};

/* DNS over TLS and HTTPS (tls.h): their listeners, the certificate, the DoH path. */
#define INRPD_DOT_PORT          853
#define INRPD_DOH_PORT          443
#define INRPD_HTTPS_PATH_MAX    128
struct tlslink_cred;
struct inrpd_tls_config {
	struct inrpd_listen dot[INRPD_MAX_LISTEN];
	unsigned ndot;
	struct inrpd_listen doh[INRPD_MAX_LISTEN];
	unsigned ndoh;
	char *cert_file, *key_file;     /* PEM */
	char https_path[INRPD_HTTPS_PATH_MAX + 1];
	struct tlslink_cred *cred;      /* read with the configuration; NULL without a certificate */
};

struct inrpd_config {
	struct inrpd_listen listen[INRPD_MAX_LISTEN];
	unsigned nlisten;
	unsigned workers;               /* 0: one per CPU */
	uint32_t answer_ttl;
	uint16_t edns_udp_size;
	unsigned tcp_max_conns;
	uint64_t tcp_idle_ms;
	int log_level;                  /* -1: not configured */
	char *pid_file;                 /* NULL: none */
	char *control_path;             /* control socket for inrpc; NULL: none */
	char *fib_channel_path;         /* unix socket nbrpd connects to; NULL: none */
	uint64_t fib_grace_ms;
	struct fib *fib;                /* owned until handed to a runtime */
	struct inrpd_records *records;  /* likewise */
	unsigned nroutes;
	char router_name[INRPD_ROUTER_NAME_MAX + 1];
	uint32_t query_timeout_ms;
	uint32_t hop_probe_ms;
	uint8_t hop_limit;
	bool nsid;
	bool upstream_0x20;
	bool minimal_any;
	bool hide_identity, hide_version;
	char identity[INRPD_TXT_MAX + 1];       /* "": the router-id, else the host name */
	char version[INRPD_TXT_MAX + 1];        /* "": "inrpd VERSION" */
	uint32_t rrl_rate, rrl_slip;
	bool rrl_exempt_routers;
	unsigned nrrl_exempt;
	struct prefix rrl_exempt[INRPD_MAX_ACL];
	bool has_cookie_secret;
	uint8_t cookie_secret[COOKIE_SECRET_LEN];
	uint64_t cache_size;            /* bytes over all threads; 0: no cache */
	unsigned cache_shards;          /* set by main: the UDP workers and the TCP thread */
	struct cache_limits cache;
	uint32_t cache_stale_s;
	unsigned max_pending;           /* forwarded queries in flight per worker */
	unsigned max_sockets;           /* set by main: each engine's share of the open-files limit */
	unsigned refresh_slots;         /* questions per worker fetched again on a route change (refresh.h) */
	unsigned nupstreams;
	struct route upstreams[INRPD_MAX_UPSTREAMS];
	unsigned nacl;
	struct prefix acl[INRPD_MAX_ACL];
	unsigned nproxy_from;
	struct prefix proxy_from[INRPD_MAX_ACL];
	struct metrics_config metrics;  /* metrics, metrics-allow */
	struct privdrop_config run_as;  /* user, group */
	struct inrpd_rpz_conf rpz;      /* response policy zones (policy.h) */
	struct inrpd_tls_config tls;
	struct tap_conf dnstap;         /* dnstap { ... } (tap.h); socket_path NULL: off */
};

/*
 * config.c: parse and build the FIB.  Called by a registered QSBR thread
 * that is offline: it goes online while it writes the FIB (call_rcu wants
 * that) and is offline again when freeing (fib_destroy waits in
 * rcu_barrier, which must not run online).
 */
struct inrpd_config *inrpd_config_load(const char *path, char *err, size_t err_len);
void inrpd_config_free(struct inrpd_config *cfg);
/* Moves the reloadable part (FIB included) into a new runtime. */
struct inrpd_runtime *inrpd_runtime_from_config(struct inrpd_config *cfg);
/* No reader may still use it (after synchronize_rcu); caller offline. */

#endif
