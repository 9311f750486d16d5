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
 *   sink mode: K sessions to the router as further peers; counts per
 *   session the names the router propagates, with the time of the first
 *   and the last, until every sink has --expect names, or --timeout.
 *
 * The router must know these peers: the source as `peer NAME { address
 * ADDR; passive; }`, sink i (1..K) as `peer SINK-NAMEi` at ADDR+i (see
 * --help).  The same NBRP code as nbrpd: the codec (lib/nbrp.c) and the
 * connection, OPEN to NOTIFICATION (lib/nbrp_session.c).  The JSON output has the
 * CLOCK_MONOTONIC times (ns) of the source's session and of each sink's
 * first and last name, so a benchmark can time source to last sink.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <uv.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "log.h"
#include "nbrp.h"
#include "nbrp_session.h"

#define MAX_SINKS               10000

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
	bool json;
};

struct session {
	struct nbrp_session *ns;                /* NULL once closed */
	struct app *app;
	unsigned idx;
	bool established;
	bool done;
	uint64_t names, withdrawn, updates, bytes_in;
	uint64_t first_ns, last_ns;
};

struct app {
	struct opts o;
	uv_loop_t *loop;
	uv_timer_t timer;
	uv_signal_t sigint;
	struct session *s;
	unsigned nsessions;
	/* source */
	uint64_t sent, bytes_out, start_ns, end_ns;
	uint64_t rng;
	struct seen seen;
	bool finished;
	int rc;
	bool tty;
};

static uint64_t now_ns(void)
{
	return uv_hrtime();
}

static uint64_t rng_next(uint64_t *s)
{
	/* splitmix64: a repeatable stream from --seed */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
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
 * The next name of the set, in canonical wire form: one label of 3..17
 * characters from [a-z0-9], then com (80%), org or net, as in the paper's
 * measurements; drawn again until it is one not seen before.
 */
static size_t make_name(struct app *a, uint8_t *out)
{
	static const char alnum[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	for (;;) {
		uint64_t r = rng_next(&a->rng);
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
				frac = rng_next(&a->rng);
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

static void send_msg(struct session *s, const Nbrp__Message *m)
{
	if (!s->ns)
		return;
	nbrp_session_send(s->ns, m);
	if (s->ns)
		s->app->bytes_out = s->ns->wq.bytes_out;
}

/* Sends up to `budget` more names; returns how many went. */
static uint64_t send_batch(struct app *a, struct session *s, uint64_t budget)
{
	unsigned n = a->o.batch;
	if (n > budget)
		n = (unsigned)budget;
	if (a->o.names && n > a->o.names - a->sent)
		n = (unsigned)(a->o.names - a->sent);
	if (n == 0)
		return 0;
	ProtobufCBinaryData *names = calloc(n, sizeof(*names));
	uint8_t *wire = malloc((size_t)n * 32);
	if (!names || !wire) {
		free(names);
		free(wire);
		finish(a, 1);
		return 0;
	}
	for (unsigned i = 0; i < n; i++) {
		names[i].data = wire + (size_t)i * 32;
		names[i].len = make_name(a, names[i].data);
	}
	Nbrp__Route r = NBRP__ROUTE__INIT;
	char *path[1] = { a->o.name };
	r.n_names = n;
	r.names = names;
	r.next_hop.data = a->o.next_hop;
	r.next_hop.len = 4;
	r.next_hop_port = a->o.next_hop_port;
	r.n_path = 1;
	r.path = path;
	r.load_ms = a->o.load_ms;
	Nbrp__Route *rp = &r;
	Nbrp__Update u = NBRP__UPDATE__INIT;
	u.n_routes = 1;
	u.routes = &rp;
	Nbrp__Message m = NBRP__MESSAGE__INIT;
	m.body_case = NBRP__MESSAGE__BODY_UPDATE;
	m.update = &u;
	send_msg(s, &m);
	free(names);
	free(wire);
	a->sent += n;
	return n;
}

static void progress(struct app *a, bool last)
{
	if (!a->tty || a->o.json)
		return;
	if (a->o.source && a->o.names)
		fprintf(stderr, "\rsent %llu of %llu names", (unsigned long long)a->sent,
			(unsigned long long)a->o.names);
	else if (a->o.source)
		fprintf(stderr, "\rsent %llu names", (unsigned long long)a->sent);
	else {
		uint64_t got = 0;
		for (unsigned i = 0; i < a->nsessions; i++)
			got += a->s[i].names;
		fprintf(stderr, "\rreceived %llu names over %u sinks", (unsigned long long)got, a->nsessions);
	}
	if (last)
		fputc('\n', stderr);
}

/* Whether the source has sent all it was asked to: --names reached, or --duration over. */
static bool source_done(struct app *a)
{
	if (a->o.names && a->sent >= a->o.names)
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
		budget = allowed > a->sent ? allowed - a->sent : 0;
	}
	while (budget > 0 && !source_done(a) && s->ns && !s->ns->wq.full) {
		uint64_t n = send_batch(a, s, budget);
		if (n == 0)
			break;
		budget -= n;
	}
	if (!a->finished && source_done(a)) {
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
		if (!a->o.expect) {
			finish(a, 0);           /* counting for a while was the whole job */
			return;
		}
		fprintf(stderr, "nbrp-updgen: timeout: not every sink got %llu names\n",
			(unsigned long long)a->o.expect);
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
	uint64_t n = 0;
	for (size_t i = 0; i < m->update->n_routes; i++)
		n += m->update->routes[i]->n_names;
	if (n && !s->first_ns)
		s->first_ns = now_ns();
	if (n)
		s->last_ns = now_ns();
	s->names += n;
	s->withdrawn += m->update->n_withdrawn;
	s->updates++;
	if (!a->o.source && a->o.expect && s->names >= a->o.expect && !s->done) {
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

static void report(struct app *a)
{
	if (a->o.source) {
		uint64_t ns = (a->end_ns ? a->end_ns : now_ns()) - a->start_ns;
		double rate = ns ? (double)a->sent / secs(ns) : 0;
		if (a->o.json)
			printf("{\"mode\": \"source\", \"names\": %llu, \"write_seconds\": %.6f, "
			       "\"write_names_per_s\": %.0f, \"bytes\": %llu, \"established_ns\": %llu}\n",
			       (unsigned long long)a->sent, secs(ns), rate, (unsigned long long)a->bytes_out,
			       (unsigned long long)a->start_ns);
		else
			printf("sent %llu names, %llu bytes; written to the socket in %.3f s (%.0f names/s: the "
			       "router's pace is what sinks measure)\n", (unsigned long long)a->sent,
			       (unsigned long long)a->bytes_out, secs(ns), rate);
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
		if (a->o.json)
			printf("%s{\"sink\": %u, \"names\": %llu, \"withdrawn\": %llu, \"updates\": %llu, "
			       "\"first_to_last_s\": %.6f, \"start_to_last_s\": %.6f, \"names_per_s\": %.0f, "
			       "\"bytes\": %llu, \"first_ns\": %llu, \"last_ns\": %llu}", i ? ", " : "", i + 1,
			       (unsigned long long)s->names, (unsigned long long)s->withdrawn,
			       (unsigned long long)s->updates, secs(ns), secs(since), rate,
			       (unsigned long long)s->bytes_in, (unsigned long long)s->first_ns,
			       (unsigned long long)s->last_ns);
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
	for (unsigned i = 0; i < a->nsessions; i++)
		if (a->s[i].ns)
			nbrp_session_close(a->s[i].ns);
}

static void on_sigint(uv_signal_t *h, int sig)
{
	struct app *a = h->data;
	(void)sig;
	/* a lingering source that has sent everything, or a sink with no --expect, ends normally */
	finish(a, (a->o.source && a->end_ns) || (!a->o.source && !a->o.expect) ? 0 : 130);
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: nbrp-updgen source --router ADDR[:PORT] --name NAME --local ADDR\n"
"                          {--names N | --duration SECONDS | both}\n"
"                          [--seed S] [--rate NAMES_PER_S] [--batch B]\n"
"                          [--next-hop ADDR:PORT] [--load MS] [--linger SECONDS]\n"
"                          [--hold-time SECONDS] [--json]\n"
"       nbrp-updgen sink   --router ADDR[:PORT] --name PREFIX --local ADDR --sinks K\n"
"                          [--expect N] [--timeout SECONDS] [--hold-time SECONDS] [--json]\n"
"\n"
"source: one NBRP session to the router as peer NAME, from ADDR; sends N names\n"
"  (80%% .com, 10%% .org, 10%% .net, one label of 3..17 characters; --seed for\n"
"  the same set again), B names per UPDATE (default 1000), at --rate names/s or\n"
"  as fast as the router reads, until N are sent or SECONDS have passed since\n"
"  the session came up (whichever is first); then END-OF-RIB, and stays\n"
"  connected --linger seconds (closing the session withdraws the names).\n"
"  The router needs\n"
"      peer \"NAME\" { address ADDR; passive; }\n"
"sink: K sessions (at most 10000) as peers PREFIX1..PREFIXK, from ADDR+1..ADDR+K\n"
"  (the address counting up); counts the names the router sends each one, until every\n"
"  sink has N or --timeout (default 600 s; without --expect, the timeout or\n"
"  Ctrl-C ends a normal run).  The router needs, for each i,\n"
"      peer \"PREFIXi\" { address ADDR+i; passive; }\n"
"--hold-time: offered in OPEN (default 0: no hold timer, no KEEPALIVEs); with\n"
"  one, the sessions keep time as a router does.\n"
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
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	memset(ss, 0, sizeof(*ss));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	if (inet_pton(AF_INET, buf, &sin->sin_addr) != 1)
		return -1;
	*len = sizeof(*sin);
	return 0;
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
	bool has_router = false;
	socklen_t ll = 0;
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
			memcpy(o->next_hop, &((struct sockaddr_in *)&ss)->sin_addr, 4);
			o->next_hop_port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
			break;
		}
		case 'L': o->load_ms = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'k': o->sinks = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'e': o->expect = strtoull(optarg, NULL, 10); break;
		case 't': o->timeout_ms = strtoull(optarg, NULL, 10) * 1000; break;
		case 'g': o->linger_ms = strtoull(optarg, NULL, 10) * 1000; break;
		case 'T': o->hold_time_s = (uint32_t)strtoul(optarg, NULL, 10); break;
		case 'j': o->json = true; break;
		case 'H': usage(stdout); return 0;
		default: goto bad;
		}
	}
	if (!has_router || !o->name[0] || !o->has_local || optind != argc || o->batch == 0 || o->batch > 100000 ||
	    (o->source && o->names == 0 && o->duration_ms == 0) || (!o->source && (o->sinks == 0 || o->sinks > MAX_SINKS)))
		goto bad;

	if (o->hold_time_s && o->hold_time_s < NBRP_MIN_HOLD_TIME)
		goto bad;
	/* what goes wrong is said once, by on_event: the shared session code stays quiet */
	log_init("nbrp-updgen", LOG_LVL_ERR, false);
	a->tty = isatty(STDERR_FILENO);
	a->rng = o->seed;
	if (o->source) {
		if (seen_init(&a->seen, o->names ? o->names : 1u << 20) < 0) {
			fprintf(stderr, "nbrp-updgen: out of memory for %llu names\n", (unsigned long long)o->names);
			return 1;
		}
	}
	a->loop = uv_default_loop();
	a->nsessions = o->source ? 1 : o->sinks;
	a->start_ns = now_ns();
	uv_timer_init(a->loop, &a->timer);
	a->timer.data = a;
	uv_timer_start(&a->timer, on_timer, 10, o->source ? 10 : 200);
	uv_signal_init(a->loop, &a->sigint);
	a->sigint.data = a;
	uv_signal_start(&a->sigint, on_sigint, SIGINT);
	a->s = calloc(a->nsessions, sizeof(*a->s));
	if (!a->s) {
		fprintf(stderr, "nbrp-updgen: out of memory\n");
		return 1;
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
		const struct nbrp_session_config sc = { .router_name = name, .hold_time_s = o->hold_time_s };
		s->ns = nbrp_session_new(a->loop, &sc, &session_ops, s, label);
		if (!s->ns) {
			fprintf(stderr, "nbrp-updgen: out of memory\n");
			return 1;
		}
		struct sockaddr_storage local = o->local;
		if (!o->source) {
			struct sockaddr_in *sin = (struct sockaddr_in *)&local;
			uint32_t addr = ntohl(sin->sin_addr.s_addr) + i + 1;
			sin->sin_addr.s_addr = htonl(addr);
		}
		int rc = nbrp_session_connect(s->ns, (struct sockaddr *)&o->router, (struct sockaddr *)&local);
		if (rc < 0) {
			fprintf(stderr, "nbrp-updgen: session %u: %s\n", i, uv_strerror(rc));
			return 1;
		}
	}
	uv_run(a->loop, UV_RUN_DEFAULT);
	uv_loop_close(a->loop);
	free(a->s);
	free(a->seen.slot);
	return a->rc;
bad:
	usage(stderr);
	return 2;
}
