/*
 * inrpd: the DNS-compatible resolver of the content router.
 *
 * Threads:
 *   - UDP workers (udp.c): one SO_REUSEPORT socket per listen address each,
 *     recvmmsg/sendmmsg in batches, preallocated buffers, liburcu QSBR
 *     readers of the runtime state.
 *   - the main thread (main.c, tcp.c): libuv loop with the TCP listeners
 *     (RFC 7766), the TCP connections to hops its forwarding engine asks
 *     again after a truncated answer, and signals (SIGHUP reload,
 *     SIGINT/SIGTERM stop, SIGUSR1 statistics).  It is a registered QSBR
 *     thread that stays offline except while it answers TCP queries and
 *     while it writes a new FIB (call_rcu wants an online caller), so it
 *     never holds up a grace period while it blocks, and can wait for one
 *     (synchronize_rcu, rcu_barrier).
 *
 * What a reload may change (routes, TTL, EDNS size) lives in one struct
 * inrpd_runtime published with rcu_assign_pointer; readers take it with
 * rcu_dereference and use it until their next quiescent state.
 */
#ifndef INRPD_H
#define INRPD_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <time.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "addr.h"
#include "cache.h"
#include "cookie.h"
#include "dns.h"
#include "fib.h"
#include "inrp.h"
#include "metrics.h"
#include "prefix.h"
#include "privdrop.h"

#define INRPD_MAX_LISTEN        64
#define INRPD_MAX_WORKERS       256
#define INRPD_DEFAULT_PORT      53
#define INRPD_MAX_UPSTREAMS     ROUTESET_MAX_ROUTES
#define INRPD_MAX_ACL           64
#define INRPD_MAX_REDIRECTS     8       /* CNAMEs in one answer */
#define INRPD_ROUTER_NAME_MAX   255
#define INRPD_TXT_MAX           255     /* one TXT string */
#define INRPD_AMPLIFICATION     3       /* an unproven client's answer: at most 3x its query */
#define INRPD_SERVFAIL_RETRY_MS 100     /* a held SERVFAIL this old: the next query goes out again */

struct inrpd_listen {
	struct ip_endpoint ep;
	unsigned line;                  /* where it was configured, for messages */
};

/* records.c: records configured for contents (`record` in a route block). */
struct inrpd_records;
struct dns_builder;
struct inrpd_records *inrpd_records_new(void);
/* Parses one record of a route (presentation format); errors go to err. */
int inrpd_records_add(struct inrpd_records *rs, const struct name *owner, const char *type,
		      const char *rdata, char *err, size_t err_len);
/* Sorts the table; call once after the last add. */
void inrpd_records_finish(struct inrpd_records *rs);
unsigned inrpd_records_count(const struct inrpd_records *rs);
void inrpd_records_free(struct inrpd_records *rs);
/* Adds owner's records of qtype (ANY: all) to the answer; returns how many. */
unsigned inrpd_records_answer(const struct inrpd_records *rs, const struct name *owner,
			      uint16_t qtype, struct dns_builder *b, uint32_t ttl);

/* What reload can change; readers see one consistent version. */
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
	struct metrics_config metrics;  /* metrics, metrics-allow */
	struct privdrop_config run_as;  /* user, group */
	struct inrpd_tls_config tls;
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
void inrpd_runtime_free(struct inrpd_runtime *rt);

/*
 * How long answers take, from the query's arrival to the answer handed to
 * the kernel, by how they were made: here (local routes, and every error
 * answered at once), through the next content router, through an
 * upstream.  A histogram per thread, in the counters below.
 */
enum inrpd_path { INRPD_PATH_LOCAL, INRPD_PATH_FORWARDED, INRPD_PATH_FALLBACK, INRPD_PATHS };
#define INRPD_LAT_BOUNDS_US { 50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, \
			      100000, 250000, 500000, 1000000, 2500000 }
#define INRPD_LAT_BUCKETS 15
struct inrpd_latency {
	uint64_t count[INRPD_PATHS][INRPD_LAT_BUCKETS + 1];     /* the last: above every bound */
	uint64_t sum_us[INRPD_PATHS];
};

/*
 * Counters, one block per thread.  Only the owning thread writes (plain
 * relaxed stores, no read-modify-write shared between CPUs); others read
 * them with relaxed loads when summing.
 */
struct inrpd_counters {
	uint64_t queries;               /* messages received */
	uint64_t answered;              /* responses sent, any rcode */
	uint64_t formerr;
	uint64_t refused;
	uint64_t truncated;
	uint64_t dropped;               /* no response: not a query, or could not send */
	uint64_t local;                 /* answered from this router's own servers */
	uint64_t forwarded;             /* sent on to the next content router */
	uint64_t fallback;              /* sent to the upstream resolvers */
	uint64_t servfail;              /* all alternates failed, loops, hop limit */
	uint64_t loops;                 /* queries that came back to us */
	uint64_t acl_refused;           /* fallback refused: client outside allow-recursion */
	uint64_t pending_full;          /* no room for one more query in flight */
	uint64_t bad_upstream;          /* responses that were not ours or did not decode */
	/* ... of which, why (forward.c): possible spoofing */
	uint64_t fwd_wrong_source;      /* not from the address and port asked */
	uint64_t fwd_bad_id;            /* not the id of the query in flight */
	uint64_t fwd_bad_cookie;        /* not our client cookie, or none from a hop that speaks cookies */
	uint64_t fwd_0x20_mismatch;     /* upstream-0x20: the question not in the case asked */
	uint64_t fwd_no_socket;         /* queries failed: no socket to ask from (fd limit) */
	uint64_t upstream_tcp;          /* truncated answers asked again over TCP (TCP clients) */
	uint64_t upstream_tcp_full;     /* ... relayed truncated instead: no connection to be had */
	struct inrpd_latency lat;       /* not in "show counters": metrics.c's histogram */
	uint64_t nodata;                /* routed names: NOERROR, no record of the type, SOA */
	uint64_t chaos;                 /* CHAOS TXT id.server, version.bind, ... answered */
	uint64_t notimp;                /* opcodes other than QUERY */
	uint64_t hop_failed;            /* SERVFAIL/REFUSED from a hop: next alternate tried */
	uint64_t rrl_dropped;           /* over the rate limit: no answer */
	uint64_t rrl_slipped;           /* over the rate limit: a truncated answer (BADCOOKIE for a client cookie) */
	uint64_t amp_truncated;         /* TC: too big for an unproven client's query */
	uint64_t cookies;               /* queries with a valid server cookie */
	uint64_t badcookie;             /* BADCOOKIE: a server cookie not ours or too old, or a client cookie alone over the rate limit */
	uint64_t cached;                /* answered from the packet cache */
	uint64_t stale;                 /* ... with an expired answer, every hop failing */
	uint64_t no_route;              /* a router asked for a name we have no route for */
	uint64_t hop_behind;            /* a hop said no route, or answered from another origin: asked again */
	uint64_t other_origin;          /* relayed from another origin than our route's: not cached */
	uint64_t rerouted;              /* paused for a hop behind us, gone on by the name's new routes */
	uint64_t refreshed;             /* questions asked lately fetched again after their route changed */
	uint64_t tcp_evicted;           /* TCP connections closed, idle the longest, to make room for a new one */
	uint64_t tcp_full;              /* TCP connections refused: every one had a query in flight */
	uint64_t in_flight;             /* a gauge: queries in the forwarding engine now (max-pending bounds it) */
} __attribute__((aligned(64)));

#define CNT_INC(c, field) \
	__atomic_store_n(&(c)->field, __atomic_load_n(&(c)->field, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED)
#define CNT_ADD(c, field, n) \
	__atomic_store_n(&(c)->field, __atomic_load_n(&(c)->field, __ATOMIC_RELAXED) + (n), __ATOMIC_RELAXED)
#define CNT_SET(c, field, v) __atomic_store_n(&(c)->field, (v), __ATOMIC_RELAXED)

void inrpd_counters_add(struct inrpd_counters *sum, const struct inrpd_counters *c);

static inline uint64_t inrpd_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* n answers that took us microseconds each, into the owner thread's counters. */
static inline void inrpd_latency_observe(struct inrpd_counters *c, enum inrpd_path path, uint64_t us,
					 uint64_t n)
{
	static const uint32_t bounds[INRPD_LAT_BUCKETS] = INRPD_LAT_BOUNDS_US;
	unsigned b = 0;
	while (b < INRPD_LAT_BUCKETS && us > bounds[b])
		b++;
	CNT_ADD(c, lat.count[path][b], n);
	CNT_ADD(c, lat.sum_us[path], us * n);
}

/*
 * What a query needs when it cannot be answered at once: the next content
 * routers (or upstream resolvers) to try, ranked, and what to tell them.
 */
struct fwd_request {
	struct dns_query q;             /* the client's query */
	bool limit_udp;                 /* answer within the client's UDP limit */
	bool client_inrp;               /* the client is a router: answer with an INRP option */
	bool fallback;                  /* upstream resolvers, not content routers */
	bool upstream_0x20;             /* ... asked with the name's case randomised */
	struct inrp_query_opt inrp;     /* to send on: our path, hop limit, exclusions */
	struct name target;             /* the name to ask about (after redirects) */
	uint8_t nchain;                 /* CNAME targets, in order, for the answer */
	uint16_t chain_len;
	uint8_t chain[INRPD_MAX_REDIRECTS * NAME_MAX_WIRE];
	uint32_t answer_ttl;            /* for the CNAMEs */
	uint8_t nsid_len;               /* >0: the client asked for our NSID, and it is on */
	bool cookie;                    /* the client sent a cookie: ours goes back */
	uint16_t udp_cap;               /* an unproven client's answer limit; 0: none */
	uint8_t cookie_out[COOKIE_CLIENT_LEN + COOKIE_SERVER_LEN];
	char nsid[INRPD_ROUTER_NAME_MAX];
	uint16_t edns_udp_size;
	uint32_t budget_ms;             /* the whole query, all attempts */
	uint32_t probe_ms;              /* hop-probe-interval */
	uint64_t router_id;             /* ours, when the request was made */
	uint8_t ncand;
	struct route cand[ROUTESET_MAX_ROUTES];
	/* the packet cache: where the answer goes once it comes */
	bool cacheable;
	uint64_t cache_fp;              /* how the name was routed (cache.h) */
	struct cache_limits cache_limits;
	uint32_t cache_stale_s;
	struct cache_key cache_key;
};

/*
 * answer.c: answers one message.  Called by an online RCU reader with the
 * runtime it dereferenced.  limit_udp: true applies the client's UDP limit,
 * false the TCP one.  Returns the response length, 0 for no response, or
 * INRPD_FORWARD when req was filled for the forwarding engine.  out must
 * hold INRPD_ANSWER_MAX bytes.
 */
#define INRPD_ANSWER_MAX (DNS_RESPONSE_MAX(ROUTESET_MAX_ROUTES) + \
			  INRPD_MAX_REDIRECTS * (12 + NAME_MAX_WIRE) + 4 + INRP_RESPONSE_OPT_LEN + \
			  INRPD_RECORDS_MAX + 4 + INRPD_ROUTER_NAME_MAX + 64)
#define INRPD_FORWARD ((size_t)-1)
/* Room for configured records, or the SOA of a negative answer, in a local answer. */
#define INRPD_RECORDS_MAX 4096
struct rrl;
size_t inrpd_answer(const struct inrpd_runtime *rt, const uint8_t *pkt, size_t len,
		    const struct sockaddr *client, uint8_t *out, bool limit_udp,
		    struct fwd_request *req, struct cache *cache, struct rrl *rrl,
		    struct inrpd_counters *cnt);
/*
 * Starts fetching the table entries the query's lookup will read: a UDP
 * worker asks a few queries ahead, so at a million names their cache
 * misses overlap instead of stalling one query at a time.
 */
void inrpd_prefetch(const struct inrpd_runtime *rt, const uint8_t *pkt, size_t len);
/* The client's answer from a cache hit (TTLs counted down). */
size_t inrpd_answer_cached(const struct fwd_request *req, const struct cache_hit *hit,
			   uint8_t *out, size_t cap);
/* Keeps a client's answer in the cache if its request may be (the INRP option of
 * the hop that answered, if any, kept with it). */
void inrpd_cache_store(struct cache *cache, const struct fwd_request *req, const uint8_t *msg,
		       size_t len, const struct inrp_response_opt *from_hop);
/* Flushes, shared by every thread's cache; created by main before the workers. */
extern struct cache_flush *inrpd_cache_flush;
uint64_t inrpd_now_ms(void);
/*
 * A query paused for a next router out of step (forward.c): its
 * candidates replaced by the name's routes as they are now, if those
 * changed and still go to next routers only.  Returns whether they did.
 */
bool inrpd_reroute(struct fwd_request *req);

/* What `inrpc show route NAME` says: the route a name takes now. */
struct inrpd_route_view {
	bool found;
	bool from_nbrpd;                /* nbrpd's table (else the configuration's) */
	struct name suffix;             /* the route's name: the longest suffix with routes */
	bool has_redirect;
	struct name redirect;           /* the route rewrites the suffix to this */
	bool own;                       /* the suffix has routes of its own */
	unsigned naggs;                 /* aggregates the suffix is a member of */
	struct name aggs[FIB_MAX_AGGREGATES_PER_NAME];
	unsigned nroutes;               /* the candidates, ranked, as a query would get them */
	struct route routes[ROUTESET_MAX_ROUTES];
};
/* Fills v for n; call on a registered RCU thread (it goes online for the lookup). */
void inrpd_route_view(const struct inrpd_runtime *rt, const struct name *n, struct inrpd_route_view *v);
/* A SERVFAIL (with INRP status if the client is a router, and an extended
 * DNS error saying why) for a request. */
size_t inrpd_answer_servfail(const struct fwd_request *req, uint64_t router_id, uint8_t status,
			     uint8_t *out, size_t cap);
/* The client's answer built from a checked upstream answer; 0 if it does not decode. */
size_t inrpd_answer_relay(const struct fwd_request *req, uint64_t router_id,
			  const uint8_t *pkt, size_t len, const struct dns_upstream_answer *a,
			  const struct inrp_response_opt *from_hop, uint8_t *out, size_t cap);
bool inrpd_acl_allows(const struct inrpd_runtime *rt, const struct sockaddr *client);

/*
 * forward.c: the forwarding engine.  Each UDP worker owns one, and the main
 * thread one for TCP; an engine is used by its owner thread only (stats
 * are read by others with relaxed loads).  It keeps the queries in flight,
 * sends them to the next content router or upstream resolver, matches
 * answers, retries alternates on timeout, and hands the client's answer to
 * the transport through deliver().
 */
struct fwd_client {
	/* UDP: where the answer goes */
	struct sockaddr_storage peer;
	socklen_t peer_len;
	uint8_t listen_idx;
	uint8_t ctl_len;                /* 0: no pktinfo */
	union {
		struct cmsghdr align;
		uint8_t buf[CMSG_SPACE(sizeof(struct in6_pktinfo))];
	} ctl;
	/* TCP: the connection and its serial (a closed connection's is stale) */
	void *conn;
	uint64_t serial;
	/* >0: no client, a question fetched again after a route change
	 * (refresh.h), its slot + 1: the answer is for the cache only */
	uint32_t refresh;
};

struct fwd_engine;
typedef void (*fwd_deliver_fn)(void *ctx, const struct fwd_client *client,
			       const uint8_t *msg, size_t len);

/* max_sockets: at most that many queries in flight have a socket (0: all). */
struct fwd_engine *fwd_engine_create(unsigned max_pending, unsigned max_sockets, fwd_deliver_fn deliver,
				     void *ctx, struct inrpd_counters *cnt, char *err, size_t err_len);
void fwd_engine_free(struct fwd_engine *e);
/* The descriptor to poll for reading: its sockets' epoll set. */
int fwd_engine_fd(const struct fwd_engine *e);
/* Takes over a request; the client gets its answer through deliver(). */
void fwd_start(struct fwd_engine *e, const struct fwd_request *req, const struct fwd_client *client);
/*
 * With every max-pending slot taken: the request's SERVFAIL in out (len 0 if
 * it did not fit), counted pending_full, and true.  fwd_start sheds the same
 * way; asking first lets a UDP worker send it in its batch, so that shedding
 * costs no more than a local answer.
 */
bool fwd_shed(struct fwd_engine *e, const struct fwd_request *req, uint8_t *out, size_t cap, size_t *len);
/* Reads answers; call when fwd_engine_fd() polls readable. */
void fwd_on_readable(struct fwd_engine *e);
/*
 * Or the owner waits in the engine's own set: its descriptors added with
 * a token each (below 2^31), fwd_engine_wait() waits up to timeout ms for
 * them and the engine's sockets together (one syscall, no nested epoll),
 * gives the owner's ready tokens (at most 128), and fwd_on_ready() then
 * reads the sockets it found.  Returns -1 with errno (EINTR included).
 */
int fwd_engine_watch(struct fwd_engine *e, int fd, uint32_t token);
int fwd_engine_wait(struct fwd_engine *e, int timeout, uint32_t *tokens, unsigned *ntokens);
void fwd_on_ready(struct fwd_engine *e);
/* Retries or fails what timed out; returns ms until the next deadline, -1 if none. */
int fwd_expire(struct fwd_engine *e);
/* Forgets the queries of a TCP connection that closed (and closes their upstream TCP). */
void fwd_cancel_conn(struct fwd_engine *e, const void *conn);

/*
 * Asking a hop again over TCP when its answer came truncated and the
 * client asked over TCP (tcp.c gives its engine these; UDP workers' engines
 * have none, and relay TC).  open() starts one exchange with `to`: connect,
 * send the query with its 2-byte length, read one answer; it returns the
 * exchange, or NULL when it cannot (connection limit, no memory), and
 * never calls back from inside.  The outcome comes back exactly once
 * through fwd_on_tcp_answer(), unless the engine abandons the exchange
 * first with abort() (its deadline passed, the client went away): after
 * abort() the transport closes it and reports nothing.
 */
struct fwd_tcp_conn;
struct fwd_tcp_ops {
	struct fwd_tcp_conn *(*open)(void *ctx, const struct route *to, const uint8_t *query,
				     size_t len, uint32_t token);
	void (*abort)(void *ctx, struct fwd_tcp_conn *c);
};
void fwd_engine_set_tcp(struct fwd_engine *e, const struct fwd_tcp_ops *ops);
/* The owner thread's packet cache: answers are stored there (NULL: none). */
void fwd_engine_set_cache(struct fwd_engine *e, struct cache *cache);
/* The answer of exchange c (open()'s token with it); pkt NULL: none came (the transport
 * then closes c).  Call fwd_expire() afterwards: deadlines may have changed. */
void fwd_on_tcp_answer(struct fwd_engine *e, uint32_t token, struct fwd_tcp_conn *c,
		       const uint8_t *pkt, size_t len);
unsigned fwd_pending_count(const struct fwd_engine *e);

/* Per next hop statistics, summed over engines by the control socket. */
struct fwd_hop_stats {
	struct ip_endpoint hop;
	uint64_t queries, answers, timeouts;
	uint64_t failures;              /* answered SERVFAIL or REFUSED */
	uint64_t probes;                /* queries sent to learn its RTT again */
	uint32_t srtt_us;               /* 0: no sample yet */
	uint32_t load_ms;               /* last reported by the hop */
};
typedef void (*fwd_hop_fn)(const struct fwd_hop_stats *h, void *arg);
void fwd_engine_hops(const struct fwd_engine *e, fwd_hop_fn fn, void *arg);

struct tls_server;

/* The runtime in force; readers use rcu_dereference(inrpd_rt). */
extern struct inrpd_runtime *inrpd_rt;

/* rrl.c: response rate limiting, a table per UDP worker (share: the workers). */
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

/* udp.c */
struct udp_workers;
/* Opens the sockets (nworkers per listen address); errors go to err. */
struct udp_workers *udp_workers_open(const struct inrpd_config *cfg, unsigned nworkers,
				     char *err, size_t err_len);
int udp_workers_start(struct udp_workers *w, char *err, size_t err_len);
/* Stops and joins the threads, adds their counters to final (if not NULL),
 * closes the sockets, frees. */
void udp_workers_stop(struct udp_workers *w, struct inrpd_counters *final);
void udp_workers_counters(const struct udp_workers *w, struct inrpd_counters *sum);
/* Any route changed (main thread): each worker's questions asked lately are looked up again. */
void udp_workers_routes_changed(struct udp_workers *w);
void udp_workers_hops(const struct udp_workers *w, fwd_hop_fn fn, void *arg);
void udp_workers_cache_stats(const struct udp_workers *w, struct cache_stats *st);

/* tcp.c */
struct uv_loop_s;
struct tcp_server;
struct tcp_server *tcp_server_open(struct uv_loop_s *loop, const struct inrpd_config *cfg,
				   char *err, size_t err_len);
void tcp_server_set_limits(struct tcp_server *s, unsigned max_conns, uint64_t idle_ms);
/* Closes listeners and connections; run the loop afterwards to finish. */
void tcp_server_close(struct tcp_server *s);
void tcp_server_counters(const struct tcp_server *s, struct inrpd_counters *sum);
void tcp_server_hops(const struct tcp_server *s, fwd_hop_fn fn, void *arg);
void tcp_server_cache_stats(const struct tcp_server *s, struct cache_stats *st);
void tcp_server_free(struct tcp_server *s);

/* fibsync.c: the FIB channel from nbrpd, on the main thread's loop. */
struct fibsync;
struct fibsync_status {
	bool connected, syncing, in_service, stale;
	uint64_t stale_ms;
	uint64_t epoch;
	uint64_t names, aggregates;
	uint64_t connections, messages, syncs, updates, errors;
	uint64_t replaced;              /* connected senders a new one replaced */
	uint64_t last_change_us;        /* unix time of the last change to the routes in service; 0: none */
	char last_error[320];
};
/* The routes from nbrpd (NULL: none); readers use rcu_dereference. */
extern struct fib *inrpd_chan_fib;
struct fibsync *fibsync_open(struct uv_loop_s *loop, const char *path, uint64_t grace_ms,
			     char *err, size_t err_len);
void fibsync_set_grace(struct fibsync *f, uint64_t grace_ms);
/* changed(arg) after the routes in service changed (an Update applied, a sync ended). */
void fibsync_on_change(struct fibsync *f, void (*changed)(void *arg), void *arg);
/* Closes the socket and connection; run the loop afterwards to finish. */
void fibsync_close(struct fibsync *f);
/* After the loop ended; the caller is offline. */
void fibsync_free(struct fibsync *f);
void fibsync_status(const struct fibsync *f, struct fibsync_status *st, uint64_t now_ms);


/* metrics.c: Prometheus metrics (lib/ops/metrics.h serves them); next hops
 * summed over every engine, also for `show hops`. */
struct inrpd_hops {
	unsigned n, cap;
	struct fwd_hop_stats *h;
	uint64_t *rtt_weight;
};
void inrpd_hops_collect(const struct udp_workers *udp, const struct tcp_server *tcp, struct inrpd_hops *l);
void inrpd_hops_free(struct inrpd_hops *l);
struct prom;
struct inrpd_metrics_source {
	const char *version;
	uint64_t uptime_ms, now_ms;
	const struct udp_workers *udp;
	const struct tcp_server *tcp;
	const struct tls_server *tls[2];        /* DoT, DoH (tls.h); NULL: not listening */
	const struct fibsync *fibsync;
	const struct metrics_server *metrics;
};
/* On the main thread. */
void inrpd_metrics_write(struct prom *p, const struct inrpd_metrics_source *src);
/* main.c: the counters of `show counters`, by index. */
unsigned inrpd_counter_count(void);
const char *inrpd_counter_name(unsigned i);
uint64_t inrpd_counter_value(const struct inrpd_counters *c, unsigned i);

#endif
