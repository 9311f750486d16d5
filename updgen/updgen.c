/*
 * nbrp-updgen: the NBRP update generator, for load-testing content routers.
 *
 *   source mode: one session to the router as a peer; sends N names in
 *   the paper's distribution (80% .com, 10% .org, 10% .net, one label of
 *   3 to 17 characters; --seed repeats a set), many names per UPDATE,
 *   at --rate names/s or as fast as the router takes them, for --names
 *   names or --duration seconds, then END-OF-RIB, and reports names/s,
 *   time and bytes.
 *
 *   With --aggregate-size, names go in aggregates instead (genagg.c): one
 *   route per aggregate, its members fetched by the router from the
 *   generator's own transfer server; --agg-change-fraction of the updates
 *   then make new versions of them (membership changes).
 *
 *   sink mode: K sessions to the router as further peers; counts per
 *   session the names the router propagates, with the time of the first
 *   and the last, until every sink has --expect names, or --timeout; and
 *   the aggregates, by the newest version each has seen.
 *
 * The router must know these peers: the source as `peer NAME { address
 * ADDR; passive; }`, sink i (1..K) as `peer SINK-NAMEi` at ADDR+i (see
 * --help).  The same NBRP code as nbrpd: the codec (lib/nbrp/nbrp.c) and the
 * connection, OPEN to NOTIFICATION (lib/nbrp/nbrp_session.c).  The JSON output has the
 * CLOCK_MONOTONIC times (ns) of the source's session and of each sink's
 * first and last name, so a benchmark can time source to last sink.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <uv.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "addr.h"
#include "genagg.h"
#include "log.h"
#include "nbrp.h"
#include "nbrp_session.h"
#include "prefix.h"
#include "sigkey.h"
#include "splitmix.h"
#include "tlslink.h"
#include "wire.h"

#define MAX_SINKS               10000
#define MAX_AGGREGATES          100000
#define MAX_XFR_ALLOW           16
/* aggregate routes in one UPDATE: each is at most about 600 bytes (a path name of 255) */
#define MAX_AGG_ROUTES          (NBRP_MAX_MESSAGE / 1024)
#define UNBOUNDED               UINT64_MAX

/* The names already drawn, by 64-bit hash, so that every name is new. */
struct seen {
	uint64_t *slot;
	size_t mask, used;
};

struct session;

struct opts {
	bool source;
	struct sockaddr_storage router;
	socklen_t router_len;
	char name[NBRP_ROUTER_NAME_MAX + 1];
	struct sockaddr_storage local;          /* the source's, or the first sink's minus one */
	bool has_local;
	uint64_t names;                         /* 0: no limit (--duration ends it) */
	uint64_t duration_ms;                   /* 0: no limit (--names ends it) */
	uint64_t seed;
	uint64_t rate;                          /* names/s, 0: as fast as possible */
	unsigned batch;
	uint8_t next_hop[4];
	uint16_t next_hop_port;
	uint32_t load_ms;
	unsigned sinks;
	uint64_t expect;
	uint64_t timeout_ms;
	uint64_t linger_ms;                     /* source: stay connected after sending */
	uint32_t hold_time_s;                   /* 0: none (a load generator need not keep time) */
	const char *key_file;                   /* TLS with this key (authentication tls); NULL: plain */
	bool json;
	/* source: aggregates */
	uint32_t agg_size;                      /* 0: no aggregates */
	unsigned aggregates;                    /* 0: as many as --names fills */
	struct name agg_suffix;
	double agg_fraction;                    /* of the updates after the aggregates' first routes */
	unsigned agg_change_names;
	uint64_t agg_changes;
	bool has_agg_changes;
	struct xfrserv_config xfr;
	bool has_xfr_listen;
	struct prefix xfr_allow[MAX_XFR_ALLOW];
	/* sink: aggregates */
	unsigned expect_aggregates;
	uint64_t expect_agg_changes;
};

/* What one UPDATE is built in, for --batch updates: names, their wire forms, aggregate routes. */
struct batch_bufs {
	ProtobufCBinaryData *names;             /* batch names, then MAX_AGG_ROUTES aggregates' */
	uint8_t *wire;                          /* 32 bytes a name, then AGG_WIRE_MAX an aggregate */
	Nbrp__Route *routes;
	Nbrp__Route **rp;
};
/* [len]agg<10 digits> and the suffix */
#define AGG_WIRE_MAX(a)         (14u + (a)->o.agg_suffix.len)

/* A sink's aggregates: the newest version seen of each, by the hash of its name. */
struct aggseen {
	uint64_t *key;
	uint32_t *version;
	size_t mask, used;
	uint64_t changes;                       /* versions beyond 1, summed over the newest */
};

struct session {
	struct nbrp_session *ns;                /* NULL once closed */
	struct tlslink_cred *tls;               /* its key, with --key */
	struct app *app;
	unsigned idx;
	bool established;
	bool done;
	uint64_t names, withdrawn, updates, bytes_in;
	uint64_t agg_routes;
	struct aggseen aggs;
	uint64_t first_ns, last_ns;
};

struct app {
	struct opts o;
	uv_loop_t *loop;
	uv_timer_t timer;
	uv_signal_t sigint, sigterm;
	struct session *s;
	unsigned nsessions;
	/* source */
	uint64_t sent, bytes_out, start_ns, end_ns;
	uint64_t updates;                       /* names, aggregate routes and changes: what --rate paces */
	uint64_t plain_total, changes_total;    /* UNBOUNDED: until --duration */
	uint64_t rng;                           /* splitmix64 from --seed: a repeatable stream */
	struct seen seen;
	struct genagg agg;
	unsigned nagg, announced;               /* aggregates, and those whose first route went */
	uint64_t agg_members;                   /* in the first versions */
	uint64_t *agg_msg;                      /* per aggregate: the last UPDATE that carried it */
	uint64_t msgs;
	bool agg_error;
	struct batch_bufs bufs;
	bool finished;
	int rc;
	bool tty;
};

static uint64_t now_ns(void)
{
	return uv_hrtime();
}


static int seen_init(struct seen *t, uint64_t expected)
{
	size_t cap = 1024;
	while (cap < expected * 2)
		cap *= 2;
	t->slot = calloc(cap, sizeof(*t->slot));
	t->mask = cap - 1;
	t->used = 0;
	return t->slot ? 0 : -1;
}

static void seen_place(struct seen *t, uint64_t h)
{
	size_t i = h & t->mask;
	while (t->slot[i])
		i = (i + 1) & t->mask;
	t->slot[i] = h;
	t->used++;
}

/* With --duration the set has no size known up front: double at half full. */
static int seen_grow(struct seen *t)
{
	struct seen bigger;
	if (seen_init(&bigger, t->mask + 1) < 0)
		return -1;
	for (size_t i = 0; i <= t->mask; i++)
		if (t->slot[i])
			seen_place(&bigger, t->slot[i]);
	free(t->slot);
	*t = bigger;
	return 0;
}

/* false if h is there already (or, rarely, no memory to grow: the name is not used) */
static bool seen_add(struct seen *t, uint64_t h)
{
	h |= 1;                         /* 0 marks an empty slot */
	if (t->used * 2 >= t->mask + 1 && seen_grow(t) < 0)
		return false;
	for (size_t i = h & t->mask;; i = (i + 1) & t->mask) {
		if (t->slot[i] == h)
			return false;
		if (t->slot[i] == 0) {
			t->slot[i] = h;
			t->used++;
			return true;
		}
	}
}

/*
 * A sink's aggregates: records that version v of the aggregate with
 * this hash was advertised; counts it when it is newer (RFC 1982) than
 * the newest seen.  -1 out of memory.
 */
static int aggseen_add(struct aggseen *t, uint64_t h, uint32_t v)
{
	h |= 1;                         /* 0 marks an empty slot */
	if (!t->key || t->used * 2 >= t->mask + 1) {
		struct aggseen bigger = { .changes = t->changes };
		size_t cap = t->mask ? (t->mask + 1) * 2 : 64;
		bigger.key = calloc(cap, sizeof(*bigger.key));
		bigger.version = calloc(cap, sizeof(*bigger.version));
		if (!bigger.key || !bigger.version) {
			free(bigger.key);
			free(bigger.version);
			return -1;
		}
		bigger.mask = cap - 1;
		for (size_t i = 0; t->key && i <= t->mask; i++) {
			if (!t->key[i])
				continue;
			size_t j = t->key[i] & bigger.mask;
			while (bigger.key[j])
				j = (j + 1) & bigger.mask;
			bigger.key[j] = t->key[i];
			bigger.version[j] = t->version[i];
		}
		bigger.used = t->used;
		free(t->key);
		free(t->version);
		*t = bigger;
	}
	size_t i = h & t->mask;
	while (t->key[i] && t->key[i] != h)
		i = (i + 1) & t->mask;
	if (!t->key[i]) {
		t->key[i] = h;
		t->version[i] = v;
		t->used++;
		t->changes += v > 1 ? v - 1 : 0;        /* the generator starts at version 1 */
	} else if (serial_gt(v, t->version[i])) {
		t->changes += (uint32_t)(v - t->version[i]);
		t->version[i] = v;
	}
	return 0;
}

/*
 * The next name of the set, in canonical wire form: one label of 3..17
 * characters from [a-z0-9], then com (80%), org or net, as in the paper's
 * measurements; drawn again until it is one not seen before.
 */
static size_t make_name(struct app *a, uint8_t *out)
{
	static const char alnum[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	for (;;) {
		uint64_t r = splitmix64(&a->rng);
		unsigned len = 3 + (unsigned)(r % 15);
		unsigned tldpick = (unsigned)((r >> 8) % 10);
		const char *tld = tldpick < 8 ? "com" : tldpick == 8 ? "org" : "net";
		size_t p = 0;
		out[p++] = (uint8_t)len;
		/*
		 * Characters as base-36 digits of a 64-bit fraction: each multiply
		 * by 36 yields the next digit in the high word.  Six digits use 31
		 * bits, so a fresh draw every six keeps each digit uniform to well
		 * under one part in a million; a draw and a division per
		 * character made this generator cost more than the router's
		 * reading of the name.
		 */
		__uint128_t frac = 0;
		for (unsigned k = 0; k < len; k++) {
			if (k % 6 == 0)
				frac = splitmix64(&a->rng);
			frac *= 36;
			out[p++] = (uint8_t)alnum[(unsigned)(frac >> 64)];
			frac = (uint64_t)frac;
		}
		out[p++] = 3;
		memcpy(out + p, tld, 3);
		p += 3;
		out[p++] = 0;
		if (seen_add(&a->seen, XXH3_64bits(out, p)))
			return p;
	}
}

static void finish(struct app *a, int rc);

/* Whether sinks wait for anything (--expect, --expect-aggregates, --expect-agg-changes). */
static bool expects(const struct app *a)
{
	return a->o.expect || a->o.expect_aggregates || a->o.expect_agg_changes;
}

static bool sink_has_all(const struct app *a, const struct session *s)
{
	return s->names >= a->o.expect && s->aggs.used >= a->o.expect_aggregates &&
	       s->aggs.changes >= a->o.expect_agg_changes;
}

static void send_msg(struct session *s, const Nbrp__Message *m)
{
	if (!s->ns)
		return;
	nbrp_session_send(s->ns, m);
	if (s->ns)
		s->app->bytes_out = s->ns->wq.bytes_out;
}

static size_t draw_name(void *ctx, uint8_t *out)
{
	return make_name(ctx, out);
}

enum update_kind { UPD_NONE, UPD_NAME, UPD_CHANGE };

/*
 * What the next update is, after the aggregates' first routes: a new
 * name, a membership change, or nothing left.  Changes are spread evenly,
 * the fraction --agg-change-fraction of the updates so far.
 */
static enum update_kind next_kind(const struct app *a)
{
	bool names_left = a->sent < a->plain_total;
	bool changes_left = a->agg.changes < a->changes_total;
	if (!changes_left)
		return names_left ? UPD_NAME : UPD_NONE;
	if (!names_left)
		return UPD_CHANGE;
	double due = a->o.agg_fraction * (double)(a->sent + a->agg.changes + 1);
	return (double)(a->agg.changes + 1) <= due + 1e-9 ? UPD_CHANGE : UPD_NAME;
}

/* Aggregate i's route at its current version; its name goes at wire. */
static void agg_route(struct app *a, unsigned i, Nbrp__Route *r, ProtobufCBinaryData *name, uint8_t *wire,
		      char **path)
{
	name->data = wire;
	name->len = genagg_wire(&a->agg, i, wire);
	r->n_names = 1;
	r->names = name;
	r->aggregate = *name;
	r->aggregate_version = genagg_version(&a->agg, i);
	r->aggregate_source = a->agg.source;
	r->next_hop.data = a->o.next_hop;
	r->next_hop.len = 4;
	r->next_hop_port = a->o.next_hop_port;
	r->n_path = 1;
	r->path = path;
	r->load_ms = a->o.load_ms;
}

/*
 * Sends one UPDATE of up to `budget` updates (at most --batch): the
 * aggregates' first routes, then new names in one route and the changed
 * aggregates in one route each.  An aggregate changed twice waits for the
 * next UPDATE, so every version is advertised.  Returns how many went.
 */
static uint64_t send_batch(struct app *a, struct session *s, uint64_t budget)
{
	unsigned n = a->o.batch;
	if (n > budget)
		n = (unsigned)budget;
	unsigned max_aggs = n < MAX_AGG_ROUTES ? n : MAX_AGG_ROUTES;
	struct batch_bufs *b = &a->bufs;
	ProtobufCBinaryData *names = b->names, *agg_names = b->names + a->o.batch;
	uint8_t *wire = b->wire, *agg_wires = b->wire + (size_t)a->o.batch * 32;
	Nbrp__Route *routes = b->routes, **rp = b->rp;
	Nbrp__Route plain = NBRP__ROUTE__INIT;
	char *path[1] = { a->o.name };
	unsigned nn = 0, na = 0, k;
	uint64_t msg = ++a->msgs;
	for (k = 0; k < n && na < max_aggs; k++) {
		unsigned i;
		if (a->announced < a->nagg) {
			i = a->announced++;
		} else {
			enum update_kind kind = next_kind(a);
			if (kind == UPD_NONE)
				break;
			if (kind == UPD_NAME) {
				names[nn].data = wire + (size_t)nn * 32;
				names[nn].len = make_name(a, names[nn].data);
				nn++;
				a->sent++;
				continue;
			}
			i = (unsigned)(splitmix64(&a->rng) % a->nagg);
			if (a->agg_msg[i] == msg)
				break;
			char err[512];
			if (genagg_change(&a->agg, i, a->o.agg_change_names, draw_name, a, err, sizeof(err)) < 0) {
				fprintf(stderr, "nbrp-updgen: aggregate change: %s\n", err);
				a->agg_error = true;
				break;
			}
		}
		a->agg_msg[i] = msg;
		nbrp__route__init(&routes[na]);
		agg_route(a, i, &routes[na], &agg_names[na], agg_wires + (size_t)na * AGG_WIRE_MAX(a), path);
		na++;
	}
	unsigned nr = 0;
	if (nn) {
		plain.n_names = nn;
		plain.names = names;
		plain.next_hop.data = a->o.next_hop;
		plain.next_hop.len = 4;
		plain.next_hop_port = a->o.next_hop_port;
		plain.n_path = 1;
		plain.path = path;
		plain.load_ms = a->o.load_ms;
		rp[nr++] = &plain;
	}
	for (unsigned i = 0; i < na; i++)
		rp[nr++] = &routes[i];
	if (nr) {
		Nbrp__Update u = NBRP__UPDATE__INIT;
		u.n_routes = nr;
		u.routes = rp;
		Nbrp__Message m = NBRP__MESSAGE__INIT;
		m.body_case = NBRP__MESSAGE__BODY_UPDATE;
		m.update = &u;
		send_msg(s, &m);
	}
	if (a->agg_error)
		finish(a, 1);
	a->updates += k;
	return k;
}

static void progress(struct app *a, bool last)
{
	if (!a->tty || a->o.json)
		return;
	if (a->o.source && a->plain_total != UNBOUNDED)
		fprintf(stderr, "\rsent %llu of %llu names", (unsigned long long)a->sent,
			(unsigned long long)a->plain_total);
	else if (a->o.source)
		fprintf(stderr, "\rsent %llu names", (unsigned long long)a->sent);
	if (a->o.source && a->nagg)
		fprintf(stderr, ", %llu aggregate changes", (unsigned long long)a->agg.changes);
	if (!a->o.source) {
		uint64_t got = 0;
		for (unsigned i = 0; i < a->nsessions; i++)
			got += a->s[i].names;
		fprintf(stderr, "\rreceived %llu names over %u sinks", (unsigned long long)got, a->nsessions);
	}
	if (last)
		fputc('\n', stderr);
}

/* Whether the source has sent all it was asked to (names, aggregates, changes), or --duration is over. */
static bool source_done(struct app *a)
{
	if (a->agg_error)
		return true;
	if (a->announced == a->nagg && next_kind(a) == UPD_NONE)
		return true;
	return a->o.duration_ms && (now_ns() - a->start_ns) / 1000000 >= a->o.duration_ms;
}

/* Source: keeps the router busy without queueing more than WRITE_HIGH_WATER. */
static void pump(struct app *a)
{
	struct session *s = &a->s[0];
	if (a->finished || !s->established || a->end_ns)
		return;
	uint64_t budget = UINT64_MAX;
	if (a->o.rate) {
		uint64_t elapsed_ns = now_ns() - a->start_ns;
		uint64_t allowed = elapsed_ns / 1000 * a->o.rate / 1000000 + a->o.batch;
		budget = allowed > a->updates ? allowed - a->updates : 0;
	}
	while (budget > 0 && !source_done(a) && s->ns && !s->ns->wq.full) {
		uint64_t n = send_batch(a, s, budget);
		if (n == 0)
			break;
		budget -= n;
	}
	if (!a->finished && !a->agg_error && source_done(a)) {
		Nbrp__Message m = NBRP__MESSAGE__INIT;
		Nbrp__EndOfRib eor = NBRP__END_OF_RIB__INIT;
		m.body_case = NBRP__MESSAGE__BODY_END_OF_RIB;
		m.end_of_rib = &eor;
		send_msg(s, &m);
		a->end_ns = now_ns();
	}
}

static void on_timer(uv_timer_t *t)
{
	struct app *a = t->data;
	if (a->o.source) {
		pump(a);
		progress(a, false);
		/* done once everything is written out (and lingered: closing withdraws it all) */
		if (a->end_ns && a->s[0].ns && a->s[0].ns->wq.queued == 0 &&
		    (now_ns() - a->end_ns) / 1000000 >= a->o.linger_ms)
			finish(a, 0);
		return;
	}
	progress(a, false);
	if (a->o.timeout_ms && (now_ns() - a->start_ns) / 1000000 > a->o.timeout_ms) {
		if (!expects(a)) {
			finish(a, 0);           /* counting for a while was the whole job */
			return;
		}
		fprintf(stderr, "nbrp-updgen: timeout: not every sink got %llu names, %u aggregates and %llu "
			"aggregate changes\n", (unsigned long long)a->o.expect, a->o.expect_aggregates,
			(unsigned long long)a->o.expect_agg_changes);
		finish(a, 1);
	}
}

static void check_sinks_done(struct app *a)
{
	for (unsigned i = 0; i < a->nsessions; i++)
		if (!a->s[i].done)
			return;
	finish(a, 0);
}

static int on_open(struct nbrp_session *ns, const Nbrp__Open *o, struct nbrp_error *e)
{
	(void)ns;
	(void)o;
	(void)e;
	return 0;                       /* whoever the router says it is */
}

static void on_established(struct nbrp_session *ns)
{
	struct session *s = ns->data;
	struct app *a = s->app;
	s->established = true;
	if (a->o.source) {
		a->start_ns = now_ns();
		pump(a);
	}
}

static void on_message(struct nbrp_session *ns, const Nbrp__Message *m)
{
	struct session *s = ns->data;
	struct app *a = s->app;
	if (m->body_case != NBRP__MESSAGE__BODY_UPDATE)
		return;
	uint64_t n = 0, na = 0;
	for (size_t i = 0; i < m->update->n_routes; i++) {
		const Nbrp__Route *r = m->update->routes[i];
		if (!r->aggregate.len) {
			n += r->n_names;
			continue;
		}
		na++;
		if (aggseen_add(&s->aggs, XXH3_64bits(r->aggregate.data, r->aggregate.len),
				(uint32_t)r->aggregate_version) < 0) {
			fprintf(stderr, "nbrp-updgen: out of memory\n");
			finish(a, 1);
			return;
		}
	}
	if ((n || na) && !s->first_ns)
		s->first_ns = now_ns();
	if (n || na)
		s->last_ns = now_ns();
	s->names += n;
	s->agg_routes += na;
	s->withdrawn += m->update->n_withdrawn;
	s->updates++;
	if (!a->o.source && expects(a) && sink_has_all(a, s) && !s->done) {
		s->done = true;
		check_sinks_done(a);
	}
}

static void on_drained(struct nbrp_session *ns)
{
	struct session *s = ns->data;
	if (s->app->o.source)
		pump(s->app);
}

static void on_event(struct nbrp_session *ns, enum nbrp_session_event ev, uint8_t code, const char *text)
{
	(void)code;
	struct session *s = ns->data;
	if (!s->app->finished)
		fprintf(stderr, "nbrp-updgen: session %u: %s%s\n", s->idx,
			ev == NBRP_EVENT_NOTIFICATION_RECEIVED ? "the router " : "", text);
}

static void on_session_closed(struct nbrp_session *ns)
{
	struct session *s = ns->data;
	s->bytes_in = ns->bytes_in;
	s->ns = NULL;
	if (!s->app->finished)
		finish(s->app, 1);
}

static const struct nbrp_session_ops session_ops = {
	.open = on_open, .established = on_established, .message = on_message,
	.drained = on_drained, .event = on_event, .closed = on_session_closed,
};

static void on_closed(uv_handle_t *h)
{
	(void)h;
}

static double secs(uint64_t ns)
{
	return (double)ns / 1e9;
}

/* The aggregates a source made and changed, and the transfers it served. */
static void report_aggregates(struct app *a, double seconds)
{
	struct xfrserv_stats x = { 0 };
	if (a->agg.srv)
		xfrserv_stats(a->agg.srv, &x);
	double cps = seconds > 0 ? (double)a->agg.changes / seconds : 0;
	double nps = seconds > 0 ? (double)a->agg.names_changed / seconds : 0;
	if (a->o.json)
		printf(", \"aggregates\": %u, \"aggregate_members\": %llu, \"agg_changes\": %llu, "
		       "\"agg_names_changed\": %llu, \"agg_changes_per_s\": %.0f, \"agg_names_changed_per_s\": %.0f, "
		       "\"xfr_source\": \"%s\", \"xfr\": {\"axfr\": %llu, \"ixfr\": %llu, \"ixfr_full\": %llu, "
		       "\"ixfr_current\": %llu, \"soa\": %llu, \"refused\": %llu, \"aborted\": %llu, \"bytes\": %llu}",
		       a->nagg, (unsigned long long)a->agg_members, (unsigned long long)a->agg.changes,
		       (unsigned long long)a->agg.names_changed, cps, nps, a->agg.source,
		       (unsigned long long)x.axfr, (unsigned long long)x.ixfr, (unsigned long long)x.ixfr_full,
		       (unsigned long long)x.ixfr_current, (unsigned long long)x.soa,
		       (unsigned long long)(x.closed_acl + x.refused_acl + x.refused_busy), (unsigned long long)x.aborted,
		       (unsigned long long)x.bytes);
	else
		printf("%u aggregates of %llu names in all; %llu changes (%.0f/s), %llu member names changed "
		       "(%.0f/s); served from %s: %llu AXFR, %llu IXFR (%llu answered whole, %llu current), "
		       "%llu refused, %llu cut short, %llu bytes\n", a->nagg, (unsigned long long)a->agg_members,
		       (unsigned long long)a->agg.changes, cps, (unsigned long long)a->agg.names_changed, nps,
		       a->agg.source, (unsigned long long)x.axfr, (unsigned long long)x.ixfr,
		       (unsigned long long)x.ixfr_full, (unsigned long long)x.ixfr_current,
		       (unsigned long long)(x.closed_acl + x.refused_acl + x.refused_busy), (unsigned long long)x.aborted,
		       (unsigned long long)x.bytes);
}

static void report(struct app *a)
{
	if (a->o.source) {
		uint64_t ns = (a->end_ns ? a->end_ns : now_ns()) - a->start_ns;
		double rate = ns ? (double)a->sent / secs(ns) : 0;
		if (a->o.json) {
			printf("{\"mode\": \"source\", \"names\": %llu, \"write_seconds\": %.6f, "
			       "\"write_names_per_s\": %.0f, \"bytes\": %llu, \"established_ns\": %llu",
			       (unsigned long long)a->sent, secs(ns), rate, (unsigned long long)a->bytes_out,
			       (unsigned long long)a->start_ns);
			if (a->nagg)
				report_aggregates(a, secs(ns));
			printf("}\n");
		} else {
			printf("sent %llu names, %llu bytes; written to the socket in %.3f s (%.0f names/s: the "
			       "router's pace is what sinks measure)\n", (unsigned long long)a->sent,
			       (unsigned long long)a->bytes_out, secs(ns), rate);
			if (a->nagg)
				report_aggregates(a, secs(ns));
		}
		return;
	}
	if (a->o.json)
		printf("{\"mode\": \"sink\", \"sinks\": [");
	for (unsigned i = 0; i < a->nsessions; i++) {
		struct session *s = &a->s[i];
		uint64_t ns = s->last_ns > s->first_ns ? s->last_ns - s->first_ns : 0;
		uint64_t since = s->last_ns ? s->last_ns - a->start_ns : 0;
		if (s->ns)
			s->bytes_in = s->ns->bytes_in;
		double rate = ns ? (double)s->names / secs(ns) : 0;
		double crate = ns ? (double)s->aggs.changes / secs(ns) : 0;
		if (a->o.json)
			printf("%s{\"sink\": %u, \"names\": %llu, \"withdrawn\": %llu, \"updates\": %llu, "
			       "\"first_to_last_s\": %.6f, \"start_to_last_s\": %.6f, \"names_per_s\": %.0f, "
			       "\"aggregates\": %zu, \"aggregate_routes\": %llu, \"agg_changes\": %llu, "
			       "\"agg_changes_per_s\": %.0f, \"bytes\": %llu, \"first_ns\": %llu, \"last_ns\": %llu}",
			       i ? ", " : "", i + 1, (unsigned long long)s->names, (unsigned long long)s->withdrawn,
			       (unsigned long long)s->updates, secs(ns), secs(since), rate, s->aggs.used,
			       (unsigned long long)s->agg_routes, (unsigned long long)s->aggs.changes, crate,
			       (unsigned long long)s->bytes_in, (unsigned long long)s->first_ns,
			       (unsigned long long)s->last_ns);
		else if (s->agg_routes)
			printf("sink %u: %llu names (%llu withdrawn) and %llu aggregate routes (%zu aggregates, "
			       "%llu changes) in %llu updates, first to last %.3f s (%.0f names/s, %.0f changes/s), "
			       "%llu bytes\n", i + 1, (unsigned long long)s->names, (unsigned long long)s->withdrawn,
			       (unsigned long long)s->agg_routes, s->aggs.used, (unsigned long long)s->aggs.changes,
			       (unsigned long long)s->updates, secs(ns), rate, crate, (unsigned long long)s->bytes_in);
		else
			printf("sink %u: %llu names (%llu withdrawn) in %llu updates, first to last %.3f s "
			       "(%.0f names/s), %llu bytes\n", i + 1, (unsigned long long)s->names,
			       (unsigned long long)s->withdrawn, (unsigned long long)s->updates, secs(ns), rate,
			       (unsigned long long)s->bytes_in);
	}
	if (a->o.json)
		printf("]}\n");
}

static void finish(struct app *a, int rc)
{
	if (a->finished)
		return;
	a->finished = true;
	a->rc = rc;
	progress(a, true);
	report(a);
	uv_timer_stop(&a->timer);
	uv_close((uv_handle_t *)&a->timer, on_closed);
	uv_close((uv_handle_t *)&a->sigint, on_closed);
	uv_close((uv_handle_t *)&a->sigterm, on_closed);
	genagg_stop(&a->agg);
	for (unsigned i = 0; i < a->nsessions; i++)
		if (a->s[i].ns)
			nbrp_session_close(a->s[i].ns);
}

static void on_sigint(uv_signal_t *h, int sig)
{
	struct app *a = h->data;
	(void)sig;
	/* a lingering source that has sent everything, or a sink with no --expect, ends normally */
	finish(a, (a->o.source && a->end_ns) || (!a->o.source && !expects(a)) ? 0 : 130);
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: nbrp-updgen source --router ADDR[:PORT] --name NAME --local ADDR\n"
"                          {--names N | --duration SECONDS | both}\n"
"                          [--seed S] [--rate NAMES_PER_S] [--batch B]\n"
"                          [--next-hop ADDR:PORT] [--load MS] [--linger SECONDS]\n"
"                          [--hold-time SECONDS] [--key FILE] [--json]\n"
"                          [--aggregate-size S [--aggregates A] [--agg-suffix NAME]\n"
"                           [--agg-change-fraction F | --agg-all] [--agg-change-names C]\n"
"                           [--agg-changes M] [--xfr-listen ADDR[:PORT]] [--xfr-allow PREFIX]...]\n"
"       nbrp-updgen sink   --router ADDR[:PORT] --name PREFIX --local ADDR --sinks K\n"
"                          [--expect N] [--expect-aggregates A] [--expect-agg-changes M]\n"
"                          [--timeout SECONDS] [--hold-time SECONDS] [--key FILE] [--json]\n"
"\n"
"source: one NBRP session to the router as peer NAME, from ADDR; sends N names\n"
"  (80%% .com, 10%% .org, 10%% .net, one label of 3..17 characters; --seed for\n"
"  the same set again), B names per UPDATE (default 1000), at --rate names/s or\n"
"  as fast as the router reads, until N are sent or SECONDS have passed since\n"
"  the session came up (whichever is first); then END-OF-RIB, and stays\n"
"  connected --linger seconds (closing the session withdraws the names).\n"
"  The router needs\n"
"      peer \"NAME\" { address ADDR; passive; }\n"
"aggregates (source): --aggregate-size S puts the names in aggregates of S\n"
"  members, agg1.NAME..aggA.NAME (--agg-suffix, default updgen.test), one route\n"
"  each at version 1, sent first; A is --aggregates, or as many as N names fill\n"
"  (then every name is a member; with --aggregates the rest go on their own).\n"
"  The generator serves them over IXFR/AXFR on --xfr-listen (default: ADDR,\n"
"  any port) to --xfr-allow prefixes (default: loopback and the router), from\n"
"  a private directory under $TMPDIR removed at exit.  --agg-change-fraction F\n"
"  (0..1; --agg-all is 1) of the updates that follow are membership changes:\n"
"  the next version of a random aggregate, C names apart (--agg-change-names,\n"
"  default 1: C new members, or those of its last change removed), advertised\n"
"  at once.  --agg-changes M changes in all (default: F of the updates the\n"
"  names make; --agg-all needs M or --duration).  --rate counts every update.\n"
"  Stay (--linger) while the router fetches.\n"
"sink: K sessions (at most 10000) as peers PREFIX1..PREFIXK, from ADDR+1..ADDR+K\n"
"  (the address counting up); counts the names the router sends each one, and\n"
"  the aggregates by the newest version seen, until every sink has N names, A\n"
"  aggregates and M changes (versions beyond 1, summed), or --timeout (default\n"
"  600 s; with none expected, the timeout or Ctrl-C ends a normal run).\n"
"  The router needs, for each i,\n"
"      peer \"PREFIXi\" { address ADDR+i; passive; }\n"
"--hold-time: offered in OPEN (default 0: no hold timer, no KEEPALIVEs); with\n"
"  one, the sessions keep time as a router does.\n"
"--key: TLS 1.3 with this Ed25519 key file (nbrp-key generate), for a router\n"
"  with `authentication tls`: its trust file must give the key to NAME.  A\n"
"  directory: each session presents DIR/NAME.key (sinks: DIR/PREFIXi.key).\n"
"Output: one line per session, or one JSON object with --json.  A progress\n"
"line goes to stderr on a terminal.  Exit status 0, or 1 on an error or timeout.\n");
}

static int parse_endpoint(const char *text, struct sockaddr_storage *ss, socklen_t *len, uint16_t dflt)
{
	char buf[64];
	snprintf(buf, sizeof(buf), "%s", text);
	char *colon = strrchr(buf, ':');
	uint16_t port = dflt;
	if (colon && strchr(buf, '.')) {
		*colon = 0;
		port = (uint16_t)atoi(colon + 1);
		if (!port)
			return -1;
	}
	int family;
	uint8_t addr[16];
	if (!ip_parse(buf, &family, addr) || family != AF_INET)
		return -1;
	*len = sockaddr_from_bytes(family, addr, port, ss);
	return 0;
}

/* A whole decimal number in 1..max, or -1. */
static int parse_count(const char *text, uint64_t max, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (text[0] < '0' || text[0] > '9' || *end || errno || v == 0 || v > max)
		return -1;
	*out = v;
	return 0;
}

/* --xfr-listen: "ADDR", "ADDR:PORT" (IPv4), "[ADDR]:PORT" or a bare IPv6 address. */
static int parse_listen(const char *text, struct xfrserv_config *c)
{
	char buf[INET6_ADDRSTRLEN + 16];
	if (strlen(text) >= sizeof(buf))
		return -1;
	snprintf(buf, sizeof(buf), "%s", text);
	char *host = buf, *port = NULL;
	if (buf[0] == '[') {
		char *end = strchr(buf, ']');
		if (!end || (end[1] && end[1] != ':'))
			return -1;
		*end = 0;
		host = buf + 1;
		port = end[1] ? end + 2 : NULL;
	} else if (strchr(buf, '.') && (port = strchr(buf, ':'))) {
		*port++ = 0;
	}
	if (!ip_parse(host, &c->family, c->addr))
		return -1;
	c->port = 0;
	if (port) {
		char *end;
		unsigned long v = strtoul(port, &end, 10);
		if (!*port || *end || v > 65535)
			return -1;
		c->port = (uint16_t)v;
	}
	return 0;
}

/*
 * The source's aggregates: the stores, their first versions, the
 * transfer server; and how many names and changes the updates hold.
 * 0, or 2 (options that do not fit) or 1 (anything else) with what went
 * wrong said.
 */
static int setup_aggregates(struct app *a)
{
	struct opts *o = &a->o;
	uint64_t members = 0;
	if (o->agg_size) {
		uint64_t n = o->aggregates ? o->aggregates : (o->names + o->agg_size - 1) / o->agg_size;
		members = o->aggregates ? n * o->agg_size : o->names;
		if (n == 0 || n > MAX_AGGREGATES || (o->names && members > o->names)) {
			fprintf(stderr, "nbrp-updgen: %llu aggregates of %u names: between 1 and %u aggregates, "
				"no more names than --names\n", (unsigned long long)n, o->agg_size, MAX_AGGREGATES);
			return 2;
		}
		a->nagg = (unsigned)n;
	}
	a->plain_total = o->names ? o->names - members : UNBOUNDED;
	if (o->has_agg_changes)
		a->changes_total = o->agg_changes;
	else if (o->agg_fraction == 0)
		a->changes_total = 0;
	else if (o->agg_fraction < 1 && a->plain_total != UNBOUNDED)
		a->changes_total = (uint64_t)((double)a->plain_total * o->agg_fraction / (1 - o->agg_fraction) + 0.5);
	else if (o->duration_ms)
		a->changes_total = UNBOUNDED;
	else {
		fprintf(stderr, "nbrp-updgen: --agg-all needs --agg-changes or --duration\n");
		return 2;
	}
	if (!a->nagg)
		return 0;

	/* two descriptors per store */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	char err[512];
	a->agg_msg = calloc(a->nagg, sizeof(*a->agg_msg));
	if (!a->agg_msg || genagg_open(&a->agg, a->nagg, &o->agg_suffix, err, sizeof(err)) < 0) {
		fprintf(stderr, "nbrp-updgen: %s\n", a->agg_msg ? err : "out of memory");
		return 1;
	}
	struct nameset set;
	nameset_init(&set);
	for (unsigned i = 0; i < a->nagg; i++) {
		uint64_t want = members - a->agg_members < o->agg_size ? members - a->agg_members : o->agg_size;
		nameset_clear(&set);
		for (uint64_t k = 0; k < want; k++) {
			uint8_t wire[NAME_MAX_WIRE];
			size_t len = make_name(a, wire);
			if (nameset_add(&set, wire, (uint8_t)len) < 0) {
				nameset_free(&set);
				fprintf(stderr, "nbrp-updgen: out of memory for aggregate members\n");
				return 1;
			}
		}
		a->agg_members += want;
		if (genagg_define(&a->agg, i, &set, err, sizeof(err)) < 0) {
			nameset_free(&set);
			fprintf(stderr, "nbrp-updgen: %s\n", err);
			return 1;
		}
	}
	nameset_free(&set);

	struct xfrserv_config *x = &o->xfr;
	if (!o->has_xfr_listen) {
		struct ip_addr local;
		sockaddr_ip((const struct sockaddr *)&o->local, &local);
		x->family = local.family;
		memcpy(x->addr, local.addr, sizeof(x->addr));
	}
	x->acl = o->xfr_allow;
	/* a router under test may fetch every aggregate at once: REFUSED would measure this limit */
	x->max_transfers = 256;
	x->max_connections = 1024;
	if (x->nacl == 0) {                     /* loopback and the router */
		char r[IP_TEXT_MAX];
		sockaddr_format((const struct sockaddr *)&o->router, r, sizeof(r));
		prefix_parse("127.0.0.0/8", &o->xfr_allow[0]);
		prefix_parse("::1", &o->xfr_allow[1]);
		prefix_parse(r, &o->xfr_allow[2]);
		x->nacl = 3;
	}
	if (genagg_serve(&a->agg, a->loop, x, err, sizeof(err)) < 0) {
		fprintf(stderr, "nbrp-updgen: %s\n", err);
		return 1;
	}
	return 0;
}

/* Removes the aggregates' directory and frees what main made. */
/* --key: a key file, or a directory with NAME.key for each session's router name. */
static struct tlslink_cred *session_cred(const char *path, const char *name)
{
	char file[PATH_MAX], err[PATH_MAX + 128];
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		snprintf(file, sizeof(file), "%s/%s.key", path, name);
	else
		snprintf(file, sizeof(file), "%s", path);
	struct sigkey k;
	struct tlslink_cred *c = NULL;
	if (sigkey_load(file, &k, err, sizeof(err)) == 0)
		c = tlslink_cred_new(&k, err, sizeof(err));
	sigkey_wipe(&k);
	if (!c)
		fprintf(stderr, "nbrp-updgen: %s\n", err);
	return c;
}

static void app_free(struct app *a)
{
	genagg_close(&a->agg);
	for (unsigned i = 0; a->s && i < a->nsessions; i++) {
		free(a->s[i].aggs.key);
		free(a->s[i].aggs.version);
	}
	free(a->s);
	free(a->seen.slot);
	free(a->agg_msg);
	free(a->bufs.names);
	free(a->bufs.wire);
	free(a->bufs.routes);
	free(a->bufs.rp);
}

int main(int argc, char **argv)
{
	static struct app app;
	struct app *a = &app;
	struct opts *o = &a->o;
	static const struct option longopts[] = {
		{ "router", required_argument, NULL, 'r' },
		{ "name", required_argument, NULL, 'n' },
		{ "local", required_argument, NULL, 'l' },
		{ "names", required_argument, NULL, 'N' },
		{ "duration", required_argument, NULL, 'D' },
		{ "seed", required_argument, NULL, 's' },
		{ "rate", required_argument, NULL, 'R' },
		{ "batch", required_argument, NULL, 'b' },
		{ "next-hop", required_argument, NULL, 'h' },
		{ "load", required_argument, NULL, 'L' },
		{ "sinks", required_argument, NULL, 'k' },
		{ "expect", required_argument, NULL, 'e' },
		{ "timeout", required_argument, NULL, 't' },
		{ "linger", required_argument, NULL, 'g' },
		{ "hold-time", required_argument, NULL, 'T' },
		{ "json", no_argument, NULL, 'j' },
		{ "key", required_argument, NULL, 267 },
		{ "aggregate-size", required_argument, NULL, 256 },
		{ "aggregates", required_argument, NULL, 257 },
		{ "agg-suffix", required_argument, NULL, 258 },
		{ "agg-change-fraction", required_argument, NULL, 259 },
		{ "agg-all", no_argument, NULL, 260 },
		{ "agg-change-names", required_argument, NULL, 261 },
		{ "agg-changes", required_argument, NULL, 262 },
		{ "xfr-listen", required_argument, NULL, 263 },
		{ "xfr-allow", required_argument, NULL, 264 },
		{ "expect-aggregates", required_argument, NULL, 265 },
		{ "expect-agg-changes", required_argument, NULL, 266 },
		{ "help", no_argument, NULL, 'H' },
		{ NULL, 0, NULL, 0 },
	};
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (strcmp(argv[1], "source") == 0)
		o->source = true;
	else if (strcmp(argv[1], "sink") != 0) {
		usage(stderr);
		return 2;
	}
	o->seed = 1;
	o->batch = 1000;
	o->timeout_ms = 600000;
	o->next_hop[0] = 127;
	o->next_hop[3] = 1;
	o->next_hop_port = 53;
	o->agg_change_names = 1;
	name_from_text(&o->agg_suffix, "updgen.test", strlen("updgen.test"));
	bool has_router = false;
	socklen_t ll = 0;
	uint64_t v;
	int opt;
	optind = 2;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case 'r':
			if (parse_endpoint(optarg, &o->router, &o->router_len, NBRP_DEFAULT_PORT) < 0)
				goto bad;
			has_router = true;
			break;
		case 'n':
			if (!nbrp_router_name_valid(optarg) || strlen(optarg) > NBRP_ROUTER_NAME_MAX - 3)
				goto bad;
			snprintf(o->name, sizeof(o->name), "%s", optarg);
			break;
		case 'l':
			if (parse_endpoint(optarg, &o->local, &ll, 0) < 0)
				goto bad;
			o->has_local = true;
			break;
		case 'N': o->names = strtoull(optarg, NULL, 10); break;
		case 'D': o->duration_ms = strtoull(optarg, NULL, 10) * 1000; break;
		case 's': o->seed = strtoull(optarg, NULL, 10); break;
		case 'R': o->rate = strtoull(optarg, NULL, 10); break;
		case 'b': o->batch = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'h': {
			struct sockaddr_storage ss;
			socklen_t l;
			if (parse_endpoint(optarg, &ss, &l, 53) < 0)
				goto bad;
			struct ip_addr hop;
			sockaddr_ip((const struct sockaddr *)&ss, &hop);
			memcpy(o->next_hop, hop.addr, 4);
			o->next_hop_port = sockaddr_port((const struct sockaddr *)&ss);
			break;
		}
		case 'L': o->load_ms = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'k': o->sinks = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'e': o->expect = strtoull(optarg, NULL, 10); break;
		case 't': o->timeout_ms = strtoull(optarg, NULL, 10) * 1000; break;
		case 'g': o->linger_ms = strtoull(optarg, NULL, 10) * 1000; break;
		case 'T': o->hold_time_s = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'j': o->json = true; break;
		case 256:
			if (parse_count(optarg, UINT32_MAX, &v) < 0)
				goto bad;
			o->agg_size = (uint32_t)v;
			break;
		case 257:
			if (parse_count(optarg, MAX_AGGREGATES, &v) < 0)
				goto bad;
			o->aggregates = (unsigned)v;
			break;
		case 258:
			if (name_from_text(&o->agg_suffix, optarg, strlen(optarg)) != NAME_OK)
				goto bad;
			break;
		case 259: {
			char *end;
			o->agg_fraction = strtod(optarg, &end);
			if (*end || !(o->agg_fraction >= 0 && o->agg_fraction <= 1))
				goto bad;
			break;
		}
		case 260: o->agg_fraction = 1; break;
		case 261:
			if (parse_count(optarg, 100000, &v) < 0)
				goto bad;
			o->agg_change_names = (unsigned)v;
			break;
		case 262:
			if (strcmp(optarg, "0") != 0 && parse_count(optarg, UINT64_MAX - 1, &o->agg_changes) < 0)
				goto bad;
			o->has_agg_changes = true;
			break;
		case 263:
			if (parse_listen(optarg, &o->xfr) < 0)
				goto bad;
			o->has_xfr_listen = true;
			break;
		case 264:
			if (o->xfr.nacl == MAX_XFR_ALLOW || prefix_parse(optarg, &o->xfr_allow[o->xfr.nacl++]) < 0)
				goto bad;
			break;
		case 265:
			if (parse_count(optarg, UINT32_MAX, &v) < 0)
				goto bad;
			o->expect_aggregates = (unsigned)v;
			break;
		case 266:
			if (parse_count(optarg, UINT64_MAX, &o->expect_agg_changes) < 0)
				goto bad;
			break;
		case 267: o->key_file = optarg; break;
		case 'H': usage(stdout); return 0;
		default: goto bad;
		}
	}
	if (!has_router || !o->name[0] || !o->has_local || optind != argc || o->batch == 0 || o->batch > 100000 ||
	    (o->source && o->names == 0 && o->duration_ms == 0) || (!o->source && (o->sinks == 0 || o->sinks > MAX_SINKS)))
		goto bad;

	if (o->hold_time_s && o->hold_time_s < NBRP_MIN_HOLD_TIME)
		goto bad;
	bool agg_opts = o->agg_size || o->aggregates || o->agg_fraction > 0 || o->has_agg_changes ||
			o->has_xfr_listen || o->xfr.nacl;
	if ((agg_opts && !o->source) || ((o->expect_aggregates || o->expect_agg_changes) && o->source) ||
	    (agg_opts && !o->agg_size) || (o->agg_size && !o->names && !o->aggregates) ||
	    (o->has_agg_changes && o->agg_fraction == 0))
		goto bad;
	/* what goes wrong is said once, by on_event: the shared session code stays quiet */
	log_init("nbrp-updgen", LOG_LVL_ERR, false);
	a->tty = isatty(STDERR_FILENO);
	a->rng = o->seed;
	if (o->source) {
		struct batch_bufs *b = &a->bufs;
		b->names = calloc((size_t)o->batch + MAX_AGG_ROUTES, sizeof(*b->names));
		b->wire = malloc((size_t)o->batch * 32 + (size_t)MAX_AGG_ROUTES * AGG_WIRE_MAX(a));
		b->routes = calloc(MAX_AGG_ROUTES, sizeof(*b->routes));
		b->rp = calloc(MAX_AGG_ROUTES + 1, sizeof(*b->rp));
		if (!b->names || !b->wire || !b->routes || !b->rp ||
		    seen_init(&a->seen, o->names ? o->names : 1u << 20) < 0) {
			fprintf(stderr, "nbrp-updgen: out of memory for %llu names\n", (unsigned long long)o->names);
			return 1;
		}
	}
	a->loop = uv_default_loop();
	int rc = o->source ? setup_aggregates(a) : 0;
	if (rc != 0) {
		genagg_stop(&a->agg);
		uv_run(a->loop, UV_RUN_DEFAULT);        /* the server's handles close */
		app_free(a);
		return rc;
	}
	if (o->key_file && !sigkey_init()) {
		fprintf(stderr, "nbrp-updgen: libsodium cannot start\n");
		return 1;
	}
	a->nsessions = o->source ? 1 : o->sinks;
	a->start_ns = now_ns();
	uv_timer_init(a->loop, &a->timer);
	a->timer.data = a;
	uv_timer_start(&a->timer, on_timer, 10, o->source ? 10 : 200);
	uv_signal_init(a->loop, &a->sigint);
	a->sigint.data = a;
	uv_signal_start(&a->sigint, on_sigint, SIGINT);
	uv_signal_init(a->loop, &a->sigterm);
	a->sigterm.data = a;
	uv_signal_start(&a->sigterm, on_sigint, SIGTERM);
	a->s = calloc(a->nsessions, sizeof(*a->s));
	if (!a->s) {
		fprintf(stderr, "nbrp-updgen: out of memory\n");
		goto fail;
	}
	for (unsigned i = 0; i < a->nsessions; i++) {
		struct session *s = &a->s[i];
		s->app = a;
		s->idx = i;
		char name[NBRP_ROUTER_NAME_MAX + 12], label[NBRP_ROUTER_NAME_MAX + 24];
		if (o->source)
			snprintf(name, sizeof(name), "%s", o->name);
		else
			snprintf(name, sizeof(name), "%s%u", o->name, i + 1);
		snprintf(label, sizeof(label), "session %s", name);
		if (o->key_file && !(s->tls = session_cred(o->key_file, name)))
			goto fail;
		const struct nbrp_session_config sc = { .router_name = name, .hold_time_s = o->hold_time_s, .tls = s->tls };
		s->ns = nbrp_session_new(a->loop, &sc, &session_ops, s, label);
		if (!s->ns) {
			fprintf(stderr, "nbrp-updgen: out of memory\n");
			goto fail;
		}
		struct sockaddr_storage local = o->local;
		if (!o->source) {
			/* the next addresses after --local's, one a session */
			struct ip_addr src;
			sockaddr_ip((const struct sockaddr *)&local, &src);
			wire_store32(src.addr, wire_load32(src.addr) + i + 1);
			sockaddr_from_bytes(AF_INET, src.addr, sockaddr_port((const struct sockaddr *)&local), &local);
		}
		rc = nbrp_session_connect(s->ns, (struct sockaddr *)&o->router, (struct sockaddr *)&local);
		if (rc < 0) {
			fprintf(stderr, "nbrp-updgen: session %u: %s\n", i, uv_strerror(rc));
			goto fail;
		}
	}
	uv_run(a->loop, UV_RUN_DEFAULT);
	uv_loop_close(a->loop);
	for (unsigned i = 0; i < a->nsessions; i++)
		tlslink_cred_free(a->s[i].tls);
	app_free(a);
	tlslink_global_deinit();
	return a->rc;
fail:
	genagg_close(&a->agg);          /* the process ends: only the directory matters */
	return 1;
bad:
	usage(stderr);
	return 2;
}
