/*
 * sim: NBRP at Internet scale (docs/SIMULATION.md).  nbrpd's own RDE in
 * every router of a graph, sessions simulated (sim/net.c); a scenario of
 * events at origins chosen by degree, each run in every mode (NBRP, plain
 * path vector, BGP-like MRAI), counted and timed in simulated time.  The
 * last line of output is one JSON object.
 */
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "hashkey.h"
#include "log.h"
#include "net.h"
#include "splitmix.h"
#include "strbuf.h"
#include "topo.h"

#define MAX_PER_CLASS   64
#define MAX_MODES       4

enum cls { STUB, MID, TIER1, CLASSES };
static const char *const CLASS_NAME[] = { "stub", "mid", "tier1" };

enum evkind { EV_ANNOUNCE, EV_WITHDRAW, EV_MOVE, EV_AGGREGATE, EV_SESSION_DOWN, EV_SESSION_UP, EV_FLAP, EVENTS };
static const char *const EVENT_NAME[] = { "announce", "withdraw", "move", "aggregate", "session_down",
					  "session_up", "flap" };

struct mode {
	const char *name;
	bool owd;
	uint64_t mrai_s;
	uint64_t update_delay_ms;       /* nbrpd's update-delay in every router */
	uint64_t withdrawal_delay_ms;   /* and withdrawal-delay */
};

struct args {
	const char *topology;
	uint64_t seed;
	unsigned origins;               /* per class */
	unsigned names;                 /* background names */
	double gap_s, flap_s;
	unsigned flaps;
	struct net_cost cost;
	struct mode modes[MAX_MODES];
	unsigned nmodes;
	bool dump, quiet;
	const char *move_from, *move_to;        /* marks or router numbers: the testbed's move */
	unsigned rounds;
	double move_lag_ms;                     /* > 0: the announcement after the withdrawal; < 0: before */
};

/* Sums over the events of one kind and class. */
struct tally {
	unsigned n;
	double conv_ms, conv_max_ms, quiet_ms, updates, bytes, best_changes, routers_changed;
	uint32_t peak_queue;
};

static struct tally tallies[MAX_MODES][EVENTS][CLASSES];

/* Each event on its own, for percentiles over origins (bench/bench_internet.py). */
struct sample {
	double conv_ms, updates;
	uint32_t max_sent;
};

static struct sample samples[MAX_MODES][EVENTS][CLASSES * MAX_PER_CLASS];
static unsigned nsamples[MAX_MODES][EVENTS];

static void usage(void)
{
	fprintf(stderr,
		"usage: sim --topology FILE [--seed S] [--modes nbrp,pv,bgp] [--mrai S] [--origins K]\n"
		"           [--update-delay MS] [--withdrawal-delay MS]   (nbrp: nbrpd's, in every router)\n"
		"           [--names B] [--gap S] [--flaps F] [--flap-interval S] [--dump]\n"
		"           [--cost-update-us U] [--cost-name-us N] [--cost-peer-name-us P] [--cost-fetch-ms F]\n"
		"           [--move FROM TO --rounds R [--move-lag-ms L]]   (the testbed's move; FROM/TO a mark or\n"
		"           a router; L > 0: TO announces L ms after FROM withdraws, L < 0: FROM withdraws -L ms after)\n");
	exit(2);
}

static uint64_t rng_state;
static uint64_t rnd(void)
{
	return splitmix64(&rng_state);
}

static int parse_modes(struct args *a, const char *text, uint64_t mrai_s, uint64_t update_delay_ms,
		       uint64_t withdrawal_delay_ms)
{
	char buf[128];
	snprintf(buf, sizeof(buf), "%s", text);
	a->nmodes = 0;
	for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (a->nmodes == MAX_MODES)
			return -1;
		struct mode *m = &a->modes[a->nmodes++];
		if (strcmp(tok, "nbrp") == 0)
			*m = (struct mode){ "nbrp", true, 0, update_delay_ms, withdrawal_delay_ms };
		else if (strcmp(tok, "pv") == 0)
			*m = (struct mode){ "pv", false, 0 };
		else if (strcmp(tok, "bgp") == 0)
			*m = (struct mode){ "bgp", false, mrai_s };
		else
			return -1;
	}
	return a->nmodes ? 0 : -1;
}

/* ---- origins by degree ---- */

static unsigned degree(const struct topo *t, uint32_t i)
{
	return t->first[i + 1] - t->first[i];
}

static bool has_customers(const struct topo *t, uint32_t i)
{
	for (uint32_t k = t->first[i]; k < t->first[i + 1]; k++)
		if (t->link[k].rel == REL_CUSTOMER)
			return true;
	return false;
}

static const struct topo *sort_topo;
static int by_degree_desc(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	unsigned da = degree(sort_topo, a), db = degree(sort_topo, b);
	return da != db ? (da > db ? -1 : 1) : (a < b ? -1 : a > b);
}

/*
 * Tier-1: the highest degrees (the top 0.5%, at least K); stubs: no
 * customers (in a graph without relationships, degree 1); mid: the rest.
 * K of each, drawn with the seed.
 */
static void pick_origins(const struct topo *t, unsigned k, uint32_t out[CLASSES][MAX_PER_CLASS], unsigned cnt[CLASSES],
			 uint32_t *order)
{
	bool rel = false;
	for (size_t i = 0; i < t->nlinks && !rel; i++)
		rel = t->link[i].rel != REL_FLAT;
	for (uint32_t i = 0; i < t->n; i++)
		order[i] = i;
	sort_topo = t;
	qsort(order, t->n, sizeof(*order), by_degree_desc);
	uint32_t top = t->n / 200 > k ? t->n / 200 : k;
	if (top > t->n)
		top = t->n;
	uint32_t *cand[CLASSES];
	uint32_t nc[CLASSES] = { 0 };
	for (int c = 0; c < CLASSES; c++)
		cand[c] = malloc((t->n + 1) * sizeof(uint32_t));
	for (uint32_t j = 0; j < t->n; j++) {
		uint32_t i = order[j];
		int c = j < top ? TIER1 : (rel ? !has_customers(t, i) : degree(t, i) == 1) ? STUB : MID;
		cand[c][nc[c]++] = i;
	}
	for (int c = 0; c < CLASSES; c++) {
		cnt[c] = 0;
		for (unsigned j = 0; j < k && nc[c]; j++) {
			uint32_t pick = (uint32_t)(rnd() % nc[c]);
			out[c][cnt[c]++] = cand[c][pick];
			cand[c][pick] = cand[c][--nc[c]];
		}
		free(cand[c]);
	}
}

/* ---- events ---- */

static void record(int mode, enum evkind ev, enum cls c, const struct net_window *w, const char *what, bool quiet)
{
	double conv = (double)(w->last_change_ns - w->start_ns) / 1e6;
	double q = (double)(w->last_busy_ns - w->start_ns) / 1e6;
	struct tally *t = &tallies[mode][ev][c];
	t->n++;
	t->conv_ms += conv;
	if (conv > t->conv_max_ms)
		t->conv_max_ms = conv;
	t->quiet_ms += q;
	t->updates += (double)w->updates;
	t->bytes += (double)w->bytes;
	t->best_changes += (double)w->best_changes;
	t->routers_changed += (double)w->routers_changed;
	if (w->peak_queue > t->peak_queue)
		t->peak_queue = w->peak_queue;
	if (nsamples[mode][ev] < CLASSES * MAX_PER_CLASS)
		samples[mode][ev][nsamples[mode][ev]++] = (struct sample){ conv, (double)w->updates, w->max_sent };
	if (!quiet)
		fprintf(stderr, "  %-12s %-5s %-14s converged %10.1f ms, quiet %10.1f ms, %8llu UPDATEs %10llu B, "
			"%7llu best changes at %6llu routers, peak queue %u%s\n",
			EVENT_NAME[ev], CLASS_NAME[c], what, conv, q, (unsigned long long)w->updates,
			(unsigned long long)w->bytes, (unsigned long long)w->best_changes,
			(unsigned long long)w->routers_changed, w->peak_queue,
			w->dropped ? " (frames lost with the session)" : "");
}

static void settle(struct net *n, double gap_s)
{
	net_run(n, UINT64_MAX);
	net_run(n, net_now(n) + (uint64_t)(gap_s * 1e9));
}

/* Two of the highest-degree routers that share a link: the big transit ASes' session. */
static bool big_session(const struct topo *t, const uint32_t *order, uint32_t *a, uint32_t *b)
{
	uint32_t top = t->n < 50 ? t->n : 50;
	for (uint32_t i = 0; i < top; i++)
		for (uint32_t j = i + 1; j < top; j++)
			if (topo_find(t, order[i], order[j]) >= 0) {
				*a = order[i];
				*b = order[j];
				return true;
			}
	return false;
}

static long router_arg(const struct topo *t, const char *s)
{
	long m = topo_mark(t, s);
	if (m >= 0)
		return m;
	char *end;
	unsigned long v = strtoul(s, &end, 10);
	return *s && !*end && v < t->n ? (long)v : -1;
}

/* The testbed's move (bench/bench_topology.py): a name between two routers, rounds times. */
static int run_moves(struct net *n, const struct topo *t, const struct args *a, int mode, struct strbuf *json)
{
	long x = router_arg(t, a->move_from), y = router_arg(t, a->move_to);
	if (x < 0 || y < 0) {
		fprintf(stderr, "sim: --move: %s or %s is neither a mark nor a router\n", a->move_from, a->move_to);
		return -1;
	}
	const char *name = "bench.content";
	net_announce(n, (uint32_t)x, name);
	settle(n, a->gap_s);
	strbuf_addf(json, "\"rounds\":[");
	for (unsigned i = 0; i < a->rounds; i++) {
		uint32_t from = (uint32_t)(i % 2 ? y : x), to = (uint32_t)(i % 2 ? x : y);
		net_window_start(n);
		/* the testbed's two reloads take effect one after the other, either way round */
		bool announce_first = a->move_lag_ms < 0;
		uint64_t lag = (uint64_t)((announce_first ? -a->move_lag_ms : a->move_lag_ms) * 1e6);
		if (announce_first)
			net_announce(n, to, name);
		else
			net_withdraw(n, from, name);
		if (lag)
			net_run(n, net_now(n) + lag);
		if (announce_first)
			net_withdraw(n, from, name);
		else
			net_announce(n, to, name);
		net_run(n, UINT64_MAX);
		const struct net_window *w = net_window(n);
		record(mode, EV_MOVE, MID, w, "testbed", a->quiet);
		strbuf_addf(json, "%s{\"updates\":%llu,\"bytes\":%llu,\"converge_ms\":%.3f,\"best_changes\":%llu,"
			    "\"settled_by_router\":{", i ? "," : "", (unsigned long long)w->updates,
			    (unsigned long long)w->bytes, (double)(w->last_change_ns - w->start_ns) / 1e6,
			    (unsigned long long)w->best_changes);
		/* the order the routers settled in, as the testbed reads it from each inrpd */
		bool first = true;
		for (uint32_t r = 0; r < t->n; r++) {
			uint64_t at;
			if (!net_router_changed(n, r, &at))
				continue;
			strbuf_addf(json, "%s\"r%u\":%.3f", first ? "" : ",", r, (double)(at - w->start_ns) / 1e6);
			first = false;
		}
		strbuf_addf(json, "}}");
		settle(n, a->gap_s);
	}
	strbuf_addf(json, "]");
	return 0;
}

static int run_scenario(struct net *n, const struct topo *t, const struct args *a, int mode,
			uint32_t origins[CLASSES][MAX_PER_CLASS], const unsigned cnt[CLASSES], const uint32_t *order)
{
	char name[64], what[32];
	for (int c = 0; c < CLASSES; c++)
		for (unsigned i = 0; i < cnt[c]; i++) {
			uint32_t o = origins[c][i];
			snprintf(what, sizeof(what), "r%u", o);
			snprintf(name, sizeof(name), "a%u.sim", o);
			net_window_start(n);
			net_announce(n, o, name);
			net_run(n, UINT64_MAX);
			record(mode, EV_ANNOUNCE, c, net_window(n), what, a->quiet);
			settle(n, a->gap_s);
			net_window_start(n);
			net_withdraw(n, o, name);
			net_run(n, UINT64_MAX);
			record(mode, EV_WITHDRAW, c, net_window(n), what, a->quiet);
			settle(n, a->gap_s);
			/* a move to the next origin of the class */
			uint32_t o2 = origins[c][(i + 1) % cnt[c]];
			if (o2 != o) {
				snprintf(name, sizeof(name), "m%u.sim", o);
				snprintf(what, sizeof(what), "r%u>r%u", o, o2);
				net_announce(n, o, name);
				settle(n, a->gap_s);
				net_window_start(n);
				net_withdraw(n, o, name);
				net_announce(n, o2, name);
				net_run(n, UINT64_MAX);
				record(mode, EV_MOVE, c, net_window(n), what, a->quiet);
				settle(n, a->gap_s);
			}
			/* a popular aggregate's next version */
			snprintf(name, sizeof(name), "g%u.sim", o);
			snprintf(what, sizeof(what), "r%u", o);
			if (net_aggregate(n, o, name) < 0)
				return -1;
			settle(n, a->gap_s);
			net_window_start(n);
			int v = net_aggregate(n, o, name);
			net_run(n, UINT64_MAX);
			record(mode, EV_AGGREGATE, c, net_window(n), what, a->quiet);
			uint32_t behind = net_agg_behind(n, name, (uint32_t)v);
			if (behind)
				fprintf(stderr, "sim: %u routers did not store version %d of %s\n", behind, v, name);
			settle(n, a->gap_s);
		}
	uint32_t x, y;
	if (big_session(t, order, &x, &y)) {
		snprintf(what, sizeof(what), "r%u-r%u", x, y);
		net_window_start(n);
		net_session(n, x, y, false);
		net_run(n, UINT64_MAX);
		record(mode, EV_SESSION_DOWN, TIER1, net_window(n), what, a->quiet);
		settle(n, a->gap_s);
		net_window_start(n);
		net_session(n, x, y, true);
		net_run(n, UINT64_MAX);
		record(mode, EV_SESSION_UP, TIER1, net_window(n), what, a->quiet);
		settle(n, a->gap_s);
	}
	/* a mid AS's first link flaps */
	if (cnt[MID] && degree(t, origins[MID][0])) {
		x = origins[MID][0];
		y = t->link[t->first[x]].to;
		snprintf(what, sizeof(what), "r%u-r%u", x, y);
		net_window_start(n);
		uint64_t last_up = 0;
		for (unsigned f = 0; f < a->flaps; f++) {
			net_session(n, x, y, false);
			net_run(n, net_now(n) + (uint64_t)(a->flap_s * 1e9));
			last_up = net_now(n);
			net_session(n, x, y, true);
			if (f + 1 < a->flaps)
				net_run(n, net_now(n) + (uint64_t)(a->flap_s * 1e9));
		}
		net_run(n, UINT64_MAX);
		/* counted over all the flaps; timed from the last time it came up */
		struct net_window w = *net_window(n);
		w.start_ns = last_up;
		if (w.last_change_ns < last_up)
			w.last_change_ns = last_up;
		if (w.last_busy_ns < last_up)
			w.last_busy_ns = last_up;
		record(mode, EV_FLAP, MID, &w, what, a->quiet);
		settle(n, a->gap_s);
	}
	return 0;
}

/* Every router's best route for each background name: for tests/integration/test_sim.py. */
static void dump_routes(const struct net *n, const struct topo *t, const uint32_t *bg, unsigned nbg)
{
	char name[64];
	for (unsigned k = 0; k < nbg; k++) {
		snprintf(name, sizeof(name), "b%u.sim", k);
		printf("origin %s %u\n", name, bg[k]);
		for (uint32_t r = 0; r < t->n; r++) {
			uint32_t from;
			unsigned npath;
			if (net_best(n, r, name, &from, &npath))
				printf("route %s %u %u %u\n", name, r, from, npath);
		}
	}
}

static struct nbrpd_config *template_config(void)
{
	char path[] = "/tmp/sim-nbrpd-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return NULL;
	FILE *f = fdopen(fd, "w");
	/* nbrpd's defaults, as config.c sets them, but for what a router's own address says */
	fprintf(f, "router-name \"sim\";\ninrp-address 10.0.0.1 port 53;\n");
	fclose(f);
	char err[256];
	struct nbrpd_config *cfg = nbrpd_config_load(path, err, sizeof(err));
	unlink(path);
	if (!cfg)
		fprintf(stderr, "sim: the template configuration: %s\n", err);
	return cfg;
}

static void tally_json(struct strbuf *j, const struct tally *t)
{
	double n = t->n ? t->n : 1;
	strbuf_addf(j, "{\"events\":%u,\"converge_ms\":%.1f,\"converge_max_ms\":%.1f,\"quiet_ms\":%.1f,"
		      "\"updates\":%.0f,\"bytes\":%.0f,\"best_changes\":%.0f,\"routers_changed\":%.0f,\"peak_queue\":%u}",
		      t->n, t->conv_ms / n, t->conv_max_ms, t->quiet_ms / n, t->updates / n, t->bytes / n,
		      t->best_changes / n, t->routers_changed / n, t->peak_queue);
}

int main(int argc, char **argv)
{
	struct args a = {
		.seed = 1, .origins = 3, .names = 16, .gap_s = 120, .flap_s = 10, .flaps = 3, .rounds = 5,
		/* scripts/bench nbrp, docs/SIMULATION.md "Cost model" */
		.cost = { .update_ns = 5000, .name_ns = 400, .peer_name_ns = 25, .fetch_ns = 20000 },
	};
	const char *modes = "nbrp,pv,bgp";
	uint64_t mrai_s = 30, update_delay_ms = 0, withdrawal_delay_ms = 0;
	static const struct option opts[] = {
		{ "topology", required_argument, NULL, 't' }, { "seed", required_argument, NULL, 's' },
		{ "modes", required_argument, NULL, 'm' }, { "mrai", required_argument, NULL, 'M' },
		{ "origins", required_argument, NULL, 'o' }, { "names", required_argument, NULL, 'n' },
		{ "gap", required_argument, NULL, 'g' }, { "flaps", required_argument, NULL, 'f' },
		{ "flap-interval", required_argument, NULL, 'F' }, { "dump", no_argument, NULL, 'd' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "cost-update-us", required_argument, NULL, 1 }, { "cost-name-us", required_argument, NULL, 2 },
		{ "cost-peer-name-us", required_argument, NULL, 3 }, { "cost-fetch-ms", required_argument, NULL, 4 },
		{ "move", required_argument, NULL, 5 }, { "rounds", required_argument, NULL, 6 },
		{ "move-lag-ms", required_argument, NULL, 7 },
		{ "update-delay", required_argument, NULL, 8 }, { "withdrawal-delay", required_argument, NULL, 9 },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 't': a.topology = optarg; break;
		case 's': a.seed = strtoull(optarg, NULL, 10); break;
		case 'm': modes = optarg; break;
		case 'M': mrai_s = strtoull(optarg, NULL, 10); break;
		case 'o': a.origins = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'n': a.names = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'g': a.gap_s = strtod(optarg, NULL); break;
		case 'f': a.flaps = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'F': a.flap_s = strtod(optarg, NULL); break;
		case 'd': a.dump = true; break;
		case 'q': a.quiet = true; break;
		case 1: a.cost.update_ns = (uint64_t)(strtod(optarg, NULL) * 1e3); break;
		case 2: a.cost.name_ns = (uint64_t)(strtod(optarg, NULL) * 1e3); break;
		case 3: a.cost.peer_name_ns = (uint64_t)(strtod(optarg, NULL) * 1e3); break;
		case 4: a.cost.fetch_ns = (uint64_t)(strtod(optarg, NULL) * 1e6); break;
		case 5:
			if (optind >= argc)
				usage();
			a.move_from = optarg;
			a.move_to = argv[optind++];
			break;
		case 6: a.rounds = (unsigned)strtoul(optarg, NULL, 10); break;
		case 7: a.move_lag_ms = strtod(optarg, NULL); break;
		case 8: update_delay_ms = strtoull(optarg, NULL, 10); break;
		case 9: withdrawal_delay_ms = strtoull(optarg, NULL, 10); break;
		default: usage();
		}
	}
	if (!a.topology || optind != argc || parse_modes(&a, modes, mrai_s, update_delay_ms, withdrawal_delay_ms) < 0 ||
	    a.origins > MAX_PER_CLASS || a.gap_s < 0 || a.flap_s <= 0)
		usage();
	log_init("sim", LOG_LVL_WARN, false);
	/* a fixed threshold: glibc's moving one would put the later modes' slab chunks (1 MiB,
	 * aligned) on the heap once the first mode's were freed, and their RSS would not compare */
	mallopt(M_MMAP_THRESHOLD, 256 * 1024);
	hashkey_set(&a.seed, sizeof(a.seed));   /* the RDE's tables walk alike for a seed */
	char err[512];
	struct topo t;
	if (topo_load(&t, a.topology, err, sizeof(err)) < 0) {
		fprintf(stderr, "sim: %s\n", err);
		return 1;
	}
	struct nbrpd_config *tmpl = template_config();
	if (!tmpl)
		return 1;
	bool gao_rexford = false;
	for (size_t i = 0; i < t.nlinks; i++)
		gao_rexford |= t.link[i].rel != REL_FLAT;
	uint32_t *order = malloc((t.n + 1) * sizeof(*order));
	static uint32_t origins[CLASSES][MAX_PER_CLASS];
	unsigned cnt[CLASSES];
	rng_state = a.seed;
	pick_origins(&t, a.origins, origins, cnt, order);
	uint32_t *bg = malloc((a.names + 1) * sizeof(*bg));
	for (unsigned k = 0; k < a.names; k++)
		bg[k] = (uint32_t)(rnd() % t.n);
	fprintf(stderr, "%u routers, %zu links, %s; origins: stub %u, mid %u, tier-1 %u; %u background names\n",
		t.n, t.nlinks / 2, gao_rexford ? "Gao-Rexford" : "no relationships", cnt[STUB], cnt[MID], cnt[TIER1],
		a.names);
	struct strbuf json = { 0 };
	strbuf_addf(&json, "{\"routers\":%u,\"links\":%zu,\"seed\":%llu,\"gao_rexford\":%s,\"background_names\":%u,"
		      "\"cost\":{\"update_us\":%.3f,\"name_us\":%.3f,\"peer_name_us\":%.3f,\"fetch_ms\":%.3f},\"modes\":{",
		      t.n, t.nlinks / 2, (unsigned long long)a.seed, gao_rexford ? "true" : "false", a.names,
		      a.cost.update_ns / 1e3, a.cost.name_ns / 1e3, a.cost.peer_name_ns / 1e3, a.cost.fetch_ns / 1e6);
	int rc = 0;
	for (unsigned m = 0; m < a.nmodes && rc == 0; m++) {
		const struct mode *md = &a.modes[m];
		struct net_opts o = {
			.gao_rexford = gao_rexford, .origin_withdrawals = md->owd, .mrai_ns = md->mrai_s * 1000000000ull,
			.seed = a.seed, .cost = a.cost,
		};
		tmpl->update_delay_ms = md->update_delay_ms;
		tmpl->withdrawal_delay_ms = md->withdrawal_delay_ms;
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		uint64_t rss0 = net_rss_bytes();
		struct net *n = net_new(&t, tmpl, &o, err, sizeof(err));
		if (!n) {
			fprintf(stderr, "sim: %s\n", err);
			rc = 1;
			break;
		}
		char name[64];
		for (unsigned k = 0; k < a.names; k++) {
			snprintf(name, sizeof(name), "b%u.sim", k);
			net_announce(n, bg[k], name);
		}
		net_window_start(n);
		settle(n, a.gap_s);
		uint64_t rss1 = net_rss_bytes();
		const struct net_window *w = net_window(n);
		fprintf(stderr, "mode %s (origin withdrawals %s, MRAI %llu s, update-delay %llu ms, withdrawal-delay %llu "
			"ms): start converged in %.1f ms, %llu UPDATEs; %.1f KiB a router\n", md->name,
			md->owd ? "on" : "off", (unsigned long long)md->mrai_s, (unsigned long long)md->update_delay_ms,
			(unsigned long long)md->withdrawal_delay_ms,
			(double)(w->last_change_ns - w->start_ns) / 1e6, (unsigned long long)w->updates,
			(double)(rss1 - rss0) / t.n / 1024);
		if (a.dump)
			dump_routes(n, &t, bg, a.names);
		/* bytes_per_router: what building it and the start took (the first mode's is the one to quote:
		 * later modes reuse what the earlier ones freed); rss_per_router: the whole process's */
		strbuf_addf(&json, "%s\"%s\":{\"origin_withdrawals\":%s,\"mrai_s\":%llu,\"update_delay_ms\":%llu,"
			    "\"withdrawal_delay_ms\":%llu,\"bytes_per_router\":%.0f,\"rss_per_router\":%.0f,", m ? "," : "",
			    md->name, md->owd ? "true" : "false", (unsigned long long)md->mrai_s,
			    (unsigned long long)md->update_delay_ms, (unsigned long long)md->withdrawal_delay_ms,
			    (double)(rss1 - rss0) / t.n, (double)rss1 / t.n);
		if (a.move_from)
			rc = run_moves(n, &t, &a, (int)m, &json);
		else
			rc = run_scenario(n, &t, &a, (int)m, origins, cnt, order);
		if (!a.move_from) {
			strbuf_addf(&json, "\"events\":{");
			bool first = true;
			for (int e = 0; e < EVENTS; e++)
				for (int k = 0; k < CLASSES; k++) {
					if (!tallies[m][e][k].n)
						continue;
					strbuf_addf(&json, "%s\"%s_%s\":", first ? "" : ",", EVENT_NAME[e], CLASS_NAME[k]);
					tally_json(&json, &tallies[m][e][k]);
					first = false;
				}
			strbuf_addf(&json, "},\"samples\":{");
			first = true;
			for (int e = 0; e < EVENTS; e++) {
				if (!nsamples[m][e])
					continue;
				strbuf_addf(&json, "%s\"%s\":[", first ? "" : ",", EVENT_NAME[e]);
				for (unsigned k = 0; k < nsamples[m][e]; k++) {
					const struct sample *sp = &samples[m][e][k];
					strbuf_addf(&json, "%s[%.3f,%.0f,%u]", k ? "," : "", sp->conv_ms, sp->updates,
						    sp->max_sent);
				}
				strbuf_addf(&json, "]");
				first = false;
			}
			strbuf_addf(&json, "}");
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		strbuf_addf(&json, ",\"simulated_s\":%.1f,\"wall_s\":%.1f}", (double)net_now(n) / 1e9,
			      (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
		net_free(n);
	}
	strbuf_addf(&json, "}}");
	if (rc == 0)
		printf("%s\n", strbuf_str(&json));
	strbuf_free(&json);
	free(bg);
	free(order);
	nbrpd_config_free(tmpl);
	topo_free(&t);
	return rc;
}
