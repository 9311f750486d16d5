/*
 * nbrpd's configuration (config.c has the keywords).  Loaded whole,
 * checked, then handed to the modules; a reload loads a new one and
 * main.c moves the running state over.
 */
#ifndef NBRPD_CONFIG_H
#define NBRPD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr.h"
#include "metrics.h"
#include "name.h"
#include "nameset.h"
#include "nbrp.h"
#include "prefix.h"
#include "privdrop.h"
#include "route.h"
#include "sigkey.h"

enum max_names_action { MAX_NAMES_WARN, MAX_NAMES_REFUSE, MAX_NAMES_SHUT };

/* A peer's routes' signatures (docs/SIGNATURES.md): not checked, valid ones first, only valid ones. */
enum sig_policy { SIG_OFF, SIG_PREFER, SIG_REQUIRE };

/* Our role on a session (`local-role`, RFC 9234's roles as BIRD's `local role` names them). */
enum nbrpd_role { ROLE_NONE, ROLE_PROVIDER, ROLE_CUSTOMER, ROLE_PEER, ROLE_RS_SERVER, ROLE_RS_CLIENT };
/* "provider", ..., "none" */
const char *nbrpd_role_name(enum nbrpd_role role);

/* allow/deny by name suffix: the longest matching rule decides */
struct nbrpd_policy_rule {
	struct name suffix;
	bool allow;
};

struct nbrpd_policy {
	unsigned nrules;
	struct nbrpd_policy_rule *rules;
	bool default_deny;
};

bool nbrpd_policy_allows(const struct nbrpd_policy *pol, const struct name *n);
bool nbrpd_policy_equal(const struct nbrpd_policy *a, const struct nbrpd_policy *b);
/* No rules and no default deny: every name passes without being looked at. */
static inline bool nbrpd_policy_open(const struct nbrpd_policy *pol)
{
	return pol->nrules == 0 && !pol->default_deny;
}

struct nbrpd_peer_config {
	char name[NBRP_ROUTER_NAME_MAX + 1];
	struct ip_endpoint remote;
	uint32_t local_pref;
	uint64_t max_names;             /* 0: no limit */
	enum max_names_action max_action;
	bool passive;                   /* wait for the peer to connect */
	bool server_mode;               /* a content server announcing its own names */
	enum sig_policy signatures;
	enum nbrpd_role role;           /* ours on the session; a change restarts it */
	bool tls;                       /* authentication tls: TLS 1.3, its key the trust file's for name */
	struct nbrpd_policy import, export;
	unsigned line;
};

struct nexthop;

struct nbrpd_content {
	struct name name;
	unsigned nservers;
	struct route servers[ROUTESET_MAX_ROUTES];
	struct nexthop *server_nh[ROUTESET_MAX_ROUTES];  /* IP routing's view, once started */
	uint32_t up_mask;               /* servers passing their health check (all without one) */
	uint16_t hc_port;               /* 0: no health check */
	uint64_t hc_interval_ms, hc_timeout_ms;
	/* an aggregate (docs/AGGREGATES.md): name is the aggregate's, the members share its routes */
	bool aggregate;
	char *members_file;             /* absolute, or NULL */
	struct namelist members;        /* given inline */
	const char *file;               /* valid while loading: for error messages */
	unsigned line;
	unsigned order;                 /* position in the file, while loading */
};

struct nbrpd_config {
	char router_name[NBRP_ROUTER_NAME_MAX + 1];
	struct ip_endpoint listen;
	bool has_listen;
	struct ip_endpoint inrp;     /* our inrpd, the next hop we advertise */
	uint32_t hold_time_s;
	uint64_t connect_retry_ms;      /* first retry; doubles up to 32x */
	uint64_t fib_sync_wait_ms;      /* at most this long for END-OF-RIBs before the first FIB sync */
	uint64_t fib_send_hold_ms;      /* the FIB channel is closed when inrpd reads nothing this long */
	uint32_t restart_time_s;        /* peers keep our routes this long if we vanish (0: not) */
	uint32_t max_peer_restart_s;    /* we keep a vanished peer's routes at most this long */
	uint32_t load_ms_per_hop;
	uint32_t load_radius;           /* hops a load figure travels */
	uint32_t load_threshold_ms;     /* smaller load changes are not re-advertised */
	uint64_t load_interval_ms;      /* a name's load is re-advertised at most this often */
	uint64_t update_delay_ms;       /* a change waits at most this long for others to leave with it */
	uint64_t withdrawal_delay_ms;   /* ... a name an origin withdrawal took (at least update_delay_ms) */
	unsigned max_routes;            /* ranked routes per name pushed to inrpd */
	size_t max_message;
	char *fib_channel;              /* inrpd's socket; NULL: none */
	char *bird_socket;              /* BIRD's control socket; NULL: no BIRD */
	uint64_t bird_poll_ms;          /* how often every address is asked about again */
	uint64_t bird_timeout_ms;       /* a BIRD that does not answer this long is hung */
	uint64_t bird_unreachable_delay_ms;     /* a peer BIRD cannot reach this long is dropped */
	uint64_t bird_settle_ms;        /* a BIRD younger than this is not believed "cannot reach" */
	struct metrics_config metrics;  /* metrics, metrics-allow */
	struct privdrop_config run_as;  /* user, group */
	char *control_path;
	char *pid_file;
	int log_level;
	unsigned npeers;
	size_t peers_cap;
	struct nbrpd_peer_config *peers;
	unsigned ncontent;
	struct nbrpd_content *content;  /* content names and aggregates defined here */
	char *state_dir;                /* aggregates' stores; NULL: aggregates neither kept nor passed on */
	struct ip_endpoint transfer;    /* where aggregates are served (AXFR, IXFR) */
	bool has_transfer;
	struct ip_endpoint transfer_source;     /* fetches come from this address (port 0) */
	bool has_transfer_source;
	struct prefix *allow_transfer;  /* who may transfer; NULL: the peers and loopback */
	unsigned nallow_transfer;
	uint64_t transfer_idle_ms;      /* a transfer connection without progress this long is closed */
	uint64_t transfer_time_ms;      /* and one open this long */
	/* each fetch of an aggregate (docs/AGGREGATES.md "Limits") */
	uint64_t fetch_max_names;       /* member records in a reply, and members a diff may leave */
	uint64_t fetch_max_bytes;       /* bytes of the replies */
	uint64_t fetch_idle_ms;         /* no byte this long ends a fetch */
	uint64_t fetch_time_ms;         /* nor may it last longer */
	/* signatures (docs/SIGNATURES.md) */
	char *key_file;                 /* this router's key pair */
	uint8_t trust_anchor[SIGKEY_PUBLIC_LEN];
	bool has_trust_anchor;
	char *trust_file;               /* polled; reload and SIGHUP read it too */
	uint64_t trust_poll_ms;
	uint64_t signature_min_lifetime_s;      /* a chain received must be valid this much longer */
	unsigned signature_workers;
	uint64_t signature_cache;       /* verified links kept */
	bool signatures;                /* some peer's signatures are not off */
};

struct nbrpd_config *nbrpd_config_load(const char *path, char *err, size_t err_len);
void nbrpd_config_free(struct nbrpd_config *cfg);

#endif
