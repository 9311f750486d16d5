/*
 * A client of BIRD 2's control socket (what birdc speaks), for nbrpd to
 * ask BIRD about IP reachability and metrics.  docs/BIRD.md describes the
 * protocol with real recordings; in short, after connecting BIRD greets
 *
 *     0001 BIRD 2.0.12 ready.
 *
 * and answers each command line with a reply: lines "CODE-text" (more
 * follows), lines " text" (more follows, same code as the line before:
 * BIRD writes the code only when it changes), ending with the first line
 * "CODE text" (four digits and a space).  Lines "+text" are asynchronous
 * messages (log lines after "echo") and may come between replies or
 * between the lines of one; they are not part of any reply.
 *
 *   0xxx  done (0000 after data)     1xxx  data lines
 *   8xxx  runtime error (8001 "Network not found", 8007 "Access denied")
 *   9xxx  parse error (9001 "syntax error, ...", 9001 "Invalid IPv4 ...")
 *
 * Three layers, each usable alone:
 *  - struct bird_reader turns bytes (split anywhere) into replies and
 *    asynchronous lines, with bounds; no I/O.
 *  - bird_parse_route reads the reply to "show route for ADDR all".
 *  - struct bird_client runs on a libuv loop: connects, sends queued
 *    commands one at a time, times out, reconnects with backoff.
 */
#ifndef CR_BIRD_H
#define CR_BIRD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- replies ------------------------------------------------------------ */

#define BIRD_MAX_LINE        4096               /* bytes in one line, newline excluded */
#define BIRD_MAX_REPLY_LINES 100000
#define BIRD_MAX_REPLY_BYTES (4u * 1024 * 1024) /* text of one reply's lines */

struct bird_line {
	int code;               /* 0..9999; a " text" line has the code of the line before */
	size_t len;
	const char *text;       /* NUL-terminated; without "CODE-", "CODE " or " ", nor newline */
};

struct bird_reply {
	int code;               /* the final line's code */
	const char *text;       /* the final line's text (lines[nlines - 1].text) */
	size_t nlines;          /* the final line included: at least 1 */
	struct bird_line *lines;
	char *buf;              /* every line's text, NUL-separated */
};

void bird_reply_free(struct bird_reply *r);
/* 8xxx and 9xxx: BIRD refused or failed the command. */
static inline bool bird_reply_is_error(const struct bird_reply *r) { return r->code >= 8000; }

/* ---- the reader ----------------------------------------------------------- */

enum bird_event {
	BIRD_EV_ERROR = -1,     /* malformed or over a bound: the connection is broken */
	BIRD_EV_MORE = 0,       /* every byte consumed, no event yet */
	BIRD_EV_REPLY = 1,      /* a reply is complete: bird_reader_take_reply */
	BIRD_EV_ASYNC = 2,      /* a "+text" line: bird_reader_async */
};

struct bird_reader {
	/* bounds, set by bird_reader_init; may be lowered (max_line too) before feeding */
	size_t max_line, max_lines, max_bytes;
	/* private */
	char line[BIRD_MAX_LINE + 1];
	size_t linelen;
	int last_code;          /* -1: no line of this reply yet */
	struct bird_line *lines;
	size_t nlines, lines_cap;
	char *buf;
	size_t buflen, bufcap;
	struct bird_reply *done;
	size_t asynclen;         /* the async text is in line[] */
	bool failed;
	char err[128];
};

void bird_reader_init(struct bird_reader *rd);
/* Drops a partial reply and any error: a new connection starts. */
void bird_reader_reset(struct bird_reader *rd);
void bird_reader_free(struct bird_reader *rd);

/*
 * Consumes bytes up to the next event (at most one per call) and sets
 * *used to the bytes consumed; feed the rest again.  BIRD_EV_MORE means
 * all of them were consumed (a partial line is kept).  Once it has
 * returned BIRD_EV_ERROR it keeps doing so until reset.  A reply ends at
 * its final line even when the next reply follows in the same bytes.
 */
enum bird_event bird_reader_feed(struct bird_reader *rd, const char *data, size_t len, size_t *used);
/* After BIRD_EV_REPLY: the reply, now the caller's (bird_reply_free). */
struct bird_reply *bird_reader_take_reply(struct bird_reader *rd);
/* After BIRD_EV_ASYNC: the text after '+', valid until the next feed. */
const char *bird_reader_async(const struct bird_reader *rd, size_t *len);
/* After BIRD_EV_ERROR: why. */
const char *bird_reader_error(const struct bird_reader *rd);

/* ---- "show route for ADDR all" ---------------------------------------------- */

/*
 * What BIRD 2.0.x prints, and what is read from it (docs/BIRD.md has
 * whole recordings):
 *
 *   1007-Table master4:                           a table: the first one showing a route is used
 *    10.1.2.0/24          unicast [st2 03:25:40.493] * (50/5)
 *                                                 route: net (absent on a second route of the same
 *                                                 net), destination (unicast, unreachable, blackhole,
 *                                                 prohibited), "[" protocol ...  "]", " *" on the
 *                                                 best route (" !" best with a kernel sync error),
 *                                                 "(preference[/metric...])"
 *    \tvia 192.0.2.253 on eth0[ mpls L][ onlink][ weight N]  next hops (1007); the first counts
 *    \tdev lo                                     a device next hop (no address)
 *   1008-\tType: static univ                      the route's source
 *   1012-\tigp_metric: 5                          attributes; read: igp_metric, OSPF.metric1,
 *    \tBGP.as_path: 65003 65002 65001             BGP.as_path ("{..}" a set, "(..)" confederation,
 *   0000                                          "..." at the end when BIRD cut a long line)
 *                                                 the end: "0000 " (any other code: an error)
 *
 * or "8001 Network not found" when no route covers the address.
 *
 * The route used is the first one marked best ("*" or "!"), else the first
 * one.  Reachable: its destination is "unicast" and it has a next hop
 * ("via" or "dev").  IGP metric: the igp_metric attribute if shown, else
 * OSPF.metric1, else the metric in the route line's "(pref/metric)" (BGP's
 * IGP cost to its next hop, RIP's and Babel's metric), else 0.  AS path
 * length as BGP counts it: one per AS in a sequence, one per set, none for
 * confederation segments; 0 without BGP.as_path.
 */
enum bird_metric_source {
	BIRD_METRIC_NONE = 0,
	BIRD_METRIC_IGP,        /* igp_metric: N */
	BIRD_METRIC_OSPF,       /* OSPF.metric1: N */
	BIRD_METRIC_ROUTE_LINE, /* (pref/N) */
};

struct bird_route_info {
	bool found;             /* a route covers the address */
	bool reachable;
	bool best;              /* the route was marked best (else: the first shown) */
	unsigned nroutes;       /* routes shown for the net in the table used */
	char net[64];           /* "10.1.2.0/24" */
	char dest[16];          /* "unicast", "unreachable", "blackhole", "prohibited" */
	char protocol[64];      /* BIRD's protocol name: "st2", "ospf1", "bgp_peer" */
	char source[32];        /* from "Type:": "static", "BGP", "OSPF-E2", "device" */
	uint32_t igp_metric;
	enum bird_metric_source metric_source;
	uint32_t as_path_len;
	bool as_path_truncated; /* BIRD cut the line: as_path_len counts what was shown */
	int nh_family;          /* AF_INET, AF_INET6, or 0 without a next hop address */
	uint8_t nh_addr[16];    /* IPv4 in the first 4 bytes */
	char nh_iface[32];      /* "eth0"; also for "dev" next hops */
};

/*
 * Returns 0 with *out filled (found false for "Network not found"), or -1
 * if the reply is another error (out->... zeroed) or cannot be read.
 */
int bird_parse_route(const struct bird_reply *r, struct bird_route_info *out);

/*
 * The reply to "show status": how long BIRD has been running, its
 * "Current server time is T" minus its "Last reboot on T", both in BIRD's
 * default format YYYY-MM-DD HH:MM:SS[.fraction].  Returns 0 with *ms, or
 * -1 if either line is missing, in another format (timeformat base), or
 * the reboot is later than the time.
 */
int bird_parse_uptime(const struct bird_reply *r, uint64_t *ms);

/* ---- the client ----------------------------------------------------------- */

#define BIRD_DEFAULT_TIMEOUT_MS   5000
#define BIRD_DEFAULT_BACKOFF_MS   100          /* first retry; doubles on each failure */
#define BIRD_DEFAULT_BACKOFF_MAX_MS 10000
#define BIRD_DEFAULT_MAX_QUEUE    4096
#define BIRD_MAX_COMMAND          1000

/* Why a query got no reply (negative; bird_strerror names them). */
enum bird_error {
	BIRD_ERR_TIMEOUT = -1,          /* no whole reply within the timeout: reconnecting */
	BIRD_ERR_DISCONNECTED = -2,     /* the connection broke while it was in flight */
	BIRD_ERR_PROTOCOL = -3,         /* BIRD sent something unreadable: reconnecting */
	BIRD_ERR_CLOSED = -4,           /* bird_client_close */
	BIRD_ERR_QUEUE_FULL = -5,       /* returned by bird_client_query only */
	BIRD_ERR_INVALID = -6,          /* returned by bird_client_query only: bad command */
};
const char *bird_strerror(int err);

struct uv_loop_s;
struct bird_client;

struct bird_client_ops {
	/* connected and greeted; greeting is "BIRD 2.0.12 ready." */
	void (*up)(void *arg, const char *greeting);
	/* the first failure after open or after up: not called again until up */
	void (*down)(void *arg, const char *why);
	/* optional: a "+text" line */
	void (*async)(void *arg, const char *text);
};

/*
 * status 0: r is BIRD's reply, possibly an error reply (bird_reply_is_error);
 * valid during the call only.  status < 0: enum bird_error, r is NULL.
 */
typedef void (*bird_query_fn)(void *arg, int status, const struct bird_reply *r);

/*
 * Starts connecting at once (callbacks come from the loop, never from
 * inside this call).  NULL on bad arguments (a path too long for a unix
 * socket) or no memory.  ops is copied.
 */
struct bird_client *bird_client_open(struct uv_loop_s *loop, const char *socket_path,
				     const struct bird_client_ops *ops, void *arg);
/* Per-command timeout (also for connecting and the greeting); 0: default. */
void bird_client_set_timeout(struct bird_client *c, uint64_t ms);
/* Reconnect delays: first, doubling up to max; 0: defaults. */
void bird_client_set_backoff(struct bird_client *c, uint64_t first_ms, uint64_t max_ms);
void bird_client_set_max_queue(struct bird_client *c, size_t n);

/*
 * Queues a command (one line, no newline).  Commands are sent one at a
 * time, in order, once the client is up.  When the connection is lost the
 * command in flight fails (BIRD_ERR_TIMEOUT, _DISCONNECTED, _PROTOCOL)
 * and the queued ones stay queued for the next connection.  Returns 0, or
 * BIRD_ERR_INVALID (empty, longer than BIRD_MAX_COMMAND, or a control
 * character), BIRD_ERR_QUEUE_FULL, BIRD_ERR_CLOSED; cb is then not called.
 * cb may queue more commands or close the client.
 */
int bird_client_query(struct bird_client *c, const char *cmd, bird_query_fn cb, void *arg);

bool bird_client_is_up(const struct bird_client *c);
size_t bird_client_queued(const struct bird_client *c);    /* in flight included */
/* The greeting while up, else the last failure ("" before any). */
const char *bird_client_status(const struct bird_client *c);

/*
 * Fails every query with BIRD_ERR_CLOSED (their callbacks run inside this
 * call; ops->down does not), closes the connection and the timers; the
 * memory goes when the loop has run the close callbacks.  Safe from any
 * callback of this client.
 */
void bird_client_close(struct bird_client *c);

#endif
