/*
 * inrpd's Prometheus metrics (lib/ops/metrics.h serves them): the counters of
 * `inrpc show counters` by transport, next hops and upstreams, the FIBs,
 * the FIB channel.  Runs on the main thread's loop, which owns everything
 * read here; the UDP workers' counters are per thread and read with
 * relaxed loads, as `show counters` does, so a scrape costs them nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "addr.h"
#include "fibsync.h"
#include "stats.h"
#include "tcp.h"
#include "udp.h"
#include "metrics.h"
#include "prom.h"
#include "vec.h"
#include "tls.h"

/* ---- next hops, summed over every engine (each thread keeps its own) ---- */

void inrpd_hops_free(struct inrpd_hops *l)
{
	free(l->h);
	free(l->rtt_weight);
	memset(l, 0, sizeof(*l));
}

static void hop_collect(const struct fwd_hop_stats *st, void *arg)
{
	struct inrpd_hops *l = arg;
	for (unsigned i = 0; i < l->n; i++) {
		struct fwd_hop_stats *h = &l->h[i];
		if (ip_endpoint_equal(&h->hop, &st->hop)) {
			/* smoothed RTTs averaged, weighted by the answers behind them */
			if (st->srtt_us && st->answers) {
				uint64_t w = l->rtt_weight[i];
				h->srtt_us = (uint32_t)(((uint64_t)h->srtt_us * w + (uint64_t)st->srtt_us * st->answers) /
							(w + st->answers));
				l->rtt_weight[i] = w + st->answers;
			}
			h->queries += st->queries;
			h->answers += st->answers;
			h->timeouts += st->timeouts;
			h->failures += st->failures;
			h->probes += st->probes;
			if (st->load_ms > h->load_ms)
				h->load_ms = st->load_ms;
			return;
		}
	}
	if (VEC_RESERVE(l->h, l->cap, l->n + 1) < 0 || VEC_RESERVE(l->rtt_weight, l->rtt_weight_cap, l->n + 1) < 0)
		return;
	l->h[l->n] = *st;
	l->rtt_weight[l->n] = st->srtt_us ? st->answers : 0;
	l->n++;
}

void inrpd_hops_collect(const struct udp_workers *udp, const struct tcp_server *tcp, struct inrpd_hops *l)
{
	memset(l, 0, sizeof(*l));
	udp_workers_hops(udp, hop_collect, l);
	tcp_server_hops(tcp, hop_collect, l);
}

/* ---- the exposition ---- */

/* Help for the counters main.c lists; one added there without help here still gets a family. */
static const struct {
	const char *counter, *help;
} counter_help[] = {
	{ "queries", "DNS messages received." },
	{ "answered", "Responses sent, any rcode." },
	{ "local", "Queries answered from this router's own servers." },
	{ "forwarded", "Queries sent on to the next content router." },
	{ "fallback", "Queries sent to the upstream resolvers." },
	{ "servfail", "SERVFAIL answers: alternates exhausted, loops, hop limit." },
	{ "formerr", "FORMERR answers to malformed queries." },
	{ "refused", "REFUSED answers." },
	{ "acl_refused", "Fallback refused: client outside allow-recursion." },
	{ "truncated", "Answers truncated to the client's limit." },
	{ "dropped", "Messages not answered: not a query, or could not send." },
	{ "loops", "Queries that came back to this router." },
	{ "pending_full", "Queries refused for lack of room in flight." },
	{ "bad_upstream", "Responses from hops that were not ours or did not decode." },
	{ "fwd_wrong_source", "Responses dropped: not from the address and port asked." },
	{ "fwd_bad_id", "Responses dropped: not the id of the query in flight." },
	{ "fwd_bad_cookie", "Responses dropped: not our client cookie, or none from a hop that speaks cookies." },
	{ "fwd_0x20_mismatch", "Responses dropped: question not in the case asked (upstream-0x20)." },
	{ "fwd_no_socket", "Queries failed: no socket to ask from (file descriptor limit)." },
	{ "upstream_tcp", "Truncated answers asked again over TCP." },
	{ "upstream_tcp_full", "Truncated answers relayed as they were: no TCP connection to be had." },
	{ "no_route", "Routers' queries for names without a route here: SERVFAIL, INRP status no-route." },
	{ "hop_behind", "Next hops asked again after a pause: no route, or an answer from another origin." },
	{ "other_origin", "Answers relayed from another origin than the route's: not cached." },
	{ "rerouted", "Queries paused for a next hop behind us that went on by the name's new routes." },
	{ "refreshed", "Questions asked lately fetched again, for the cache, after their route changed." },
	{ "tcp_evicted", "TCP connections closed, idle the longest, to make room for a new one." },
	{ "tcp_full", "TCP connections refused: every open one had a query in flight." },
	{ "proxy_accepted", "PROXY v2 headers taken from proxy-protocol-from (datagrams or connections)." },
	{ "proxy_refused", "PROXY v2 headers refused: not from proxy-protocol-from (dropped or closed)." },
	{ "proxy_missing", "Datagrams or connections from proxy-protocol-from without a PROXY v2 header." },
	{ "proxy_truncated", "PROXY v2 headers cut short (a datagram, or a connection closed or idle in it)." },
	{ "proxy_bad_version", "PROXY v2 headers refused: version not 2." },
	{ "proxy_bad_command", "PROXY v2 headers refused: command neither LOCAL nor PROXY." },
	{ "proxy_bad_family", "PROXY v2 headers refused: PROXY for a family other than IPv4 or IPv6." },
	{ "proxy_bad_transport", "PROXY v2 headers refused: PROXY for a transport other than TCP or UDP." },
	{ "proxy_too_long", "PROXY v2 headers refused: longer than 512 bytes." },
	{ "proxy_short_address", "PROXY v2 headers refused: length too short for the addresses." },
	{ "proxy_bad_tlv", "PROXY v2 headers refused: a TLV past the header's end." },
	{ "dnstap_sent", "dnstap messages handed to the writer thread." },
	{ "dnstap_dropped", "dnstap messages dropped: no reader connected, or the thread's queue full." },
};

/* One transport's counters and its label. */
struct transport {
	const char *name;
	struct inrpd_counters c;
};

static void write_counters(struct prom *p, const struct transport *t, unsigned nt)
{
	for (unsigned i = 0; i < inrpd_counter_count(); i++) {
		const char *c = inrpd_counter_name(i);
		char name[96], help[128];
		if (strcmp(c, "in_flight") == 0)        /* a gauge: write_in_flight */
			continue;
		snprintf(name, sizeof(name), "inrpd_%s_total", c);
		snprintf(help, sizeof(help), "The '%s' counter of inrpc show counters.", c);
		for (size_t k = 0; k < sizeof(counter_help) / sizeof(counter_help[0]); k++)
			if (strcmp(counter_help[k].counter, c) == 0)
				snprintf(help, sizeof(help), "%s", counter_help[k].help);
		prom_family(p, name, PROM_COUNTER, help);
		for (unsigned k = 0; k < nt; k++)
			prom_u64(p, name, &(struct prom_label){ "transport", t[k].name }, 1, inrpd_counter_value(&t[k].c, i));
	}
}

static void write_in_flight(struct prom *p, const struct transport *t, unsigned nt)
{
	const char *name = "inrpd_queries_in_flight";
	prom_family(p, name, PROM_GAUGE, "Queries waiting for a next hop or an upstream now (at most max-pending per worker).");
	for (unsigned k = 0; k < nt; k++)
		prom_u64(p, name, &(struct prom_label){ "transport", t[k].name }, 1, t[k].c.in_flight);
}

static void write_latency(struct prom *p, const struct transport *t, unsigned nt)
{
	static const uint32_t bounds_us[INRPD_LAT_BUCKETS] = INRPD_LAT_BOUNDS_US;
	static const char *const paths[INRPD_PATHS] = { "local", "forwarded", "fallback" };
	double bounds[INRPD_LAT_BUCKETS];
	for (unsigned i = 0; i < INRPD_LAT_BUCKETS; i++)
		bounds[i] = bounds_us[i] / 1e6;
	const char *name = "inrpd_answer_duration_seconds";
	prom_family(p, name, PROM_HISTOGRAM, "From a query's arrival to its answer sent: answered here, "
		    "through the next content router, or through an upstream.");
	for (unsigned i = 0; i < nt; i++) {
		const struct inrpd_latency *l = &t[i].c.lat;
		for (unsigned k = 0; k < INRPD_PATHS; k++) {
			struct prom_histogram h = { .nbounds = INRPD_LAT_BUCKETS, .bounds = bounds,
						    .counts = l->count[k], .sum = l->sum_us[k] / 1e6 };
			struct prom_label lb[2] = { { "transport", t[i].name }, { "path", paths[k] } };
			prom_histogram(p, name, lb, 2, &h);
		}
	}
}

/* DNS over TLS and HTTPS: handshakes, their failures, connections, HTTP statuses, the certificate. */
static void write_tls(struct prom *p, const struct inrpd_metrics_source *src)
{
	static const struct {
		const char *name, *help;
		enum prom_type type;
		enum tls_counter c;
	} fams[] = {
		{ "inrpd_tls_handshakes_total", "TLS handshakes completed.", PROM_COUNTER, TLS_CNT_HANDSHAKES },
		{ "inrpd_tls_resumptions_total", "TLS handshakes that resumed a session (a ticket).", PROM_COUNTER,
		  TLS_CNT_RESUMED },
		{ "inrpd_tls_connections", "TLS connections open now.", PROM_GAUGE, TLS_CNT_CONNECTIONS },
		{ "inrpd_tls_connections_evicted_total", "TLS connections closed, idle the longest, to make room.",
		  PROM_COUNTER, TLS_CNT_EVICTED },
		{ "inrpd_tls_connections_refused_total", "TLS connections refused: every open one had a query in flight.",
		  PROM_COUNTER, TLS_CNT_FULL },
	};
	static const struct {
		const char *reason;
		enum tls_counter c;
	} fails[] = {
		{ "not_tls", TLS_CNT_FAIL_NOT_TLS }, { "version", TLS_CNT_FAIL_VERSION },
		{ "cipher", TLS_CNT_FAIL_CIPHER }, { "alert", TLS_CNT_FAIL_ALERT },
		{ "timeout", TLS_CNT_FAIL_TIMEOUT }, { "other", TLS_CNT_FAIL_OTHER }, { "alpn", TLS_CNT_FAIL_ALPN },
	};
	struct tls_counters tc[2] = { 0 };
	int64_t not_after = 0;
	for (unsigned k = 0; k < 2; k++) {
		struct inrpd_counters unused = { 0 };
		if (src->tls[k]) {
			tls_server_counters(src->tls[k], &unused, &tc[k]);
			not_after = tls_server_not_after(src->tls[k]);
		}
	}
	for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++) {
		prom_family(p, fams[f].name, fams[f].type, fams[f].help);
		for (unsigned k = 0; k < 2; k++)
			if (src->tls[k])
				prom_u64(p, fams[f].name, &(struct prom_label){ "transport", tls_kind_name(k) }, 1,
					 tc[k].v[fams[f].c]);
	}
	const char *name = "inrpd_tls_handshake_failures_total";
	prom_family(p, name, PROM_COUNTER, "TLS handshakes failed, by reason.");
	for (unsigned k = 0; k < 2; k++)
		for (size_t i = 0; src->tls[k] && i < sizeof(fails) / sizeof(fails[0]); i++) {
			struct prom_label lb[2] = { { "transport", tls_kind_name(k) }, { "reason", fails[i].reason } };
			prom_u64(p, name, lb, 2, tc[k].v[fails[i].c]);
		}
	name = "inrpd_https_responses_total";
	prom_family(p, name, PROM_COUNTER, "DNS over HTTPS responses, by HTTP status.");
	for (unsigned i = TLS_CNT_HTTP_FIRST; src->tls[TLS_DOH] && i < TLS_COUNTERS; i++)
		prom_u64(p, name, &(struct prom_label){ "code", tls_counter_name(i) + 5 }, 1, tc[TLS_DOH].v[i]);
	if (not_after)
		prom_one(p, "inrpd_tls_certificate_expiry_seconds", PROM_GAUGE,
			 "Seconds until the TLS certificate's notAfter (negative: expired).",
			 (double)(not_after - (int64_t)time(NULL)));
}

static bool is_upstream(const struct inrpd_runtime *rt, const struct fwd_hop_stats *h)
{
	for (unsigned i = 0; i < rt->nupstreams; i++) {
		struct ip_endpoint up = route_endpoint(&rt->upstreams[i]);
		if (ip_endpoint_equal(&up, &h->hop))
			return true;
	}
	return false;
}

static void write_hops(struct prom *p, const struct inrpd_runtime *rt, const struct inrpd_hops *l)
{
	static const struct {
		const char *name, *help;
		enum prom_type type;
	} fams[] = {
		{ "inrpd_hop_queries_total", "Queries sent to the next hop.", PROM_COUNTER },
		{ "inrpd_hop_answers_total", "Answers from the next hop.", PROM_COUNTER },
		{ "inrpd_hop_timeouts_total", "Queries to the next hop that timed out.", PROM_COUNTER },
		{ "inrpd_hop_probes_total", "Queries sent to a next hop passed over, to learn its RTT again.",
		  PROM_COUNTER },
		{ "inrpd_hop_srtt_seconds", "Smoothed round-trip time to the next hop (0: no sample).", PROM_GAUGE },
		{ "inrpd_hop_load_seconds", "Load the next hop last reported.", PROM_GAUGE },
	};
	for (unsigned f = 0; f < sizeof(fams) / sizeof(fams[0]); f++) {
		prom_family(p, fams[f].name, fams[f].type, fams[f].help);
		for (unsigned i = 0; i < l->n; i++) {
			const struct fwd_hop_stats *h = &l->h[i];
			char a[IP_TEXT_MAX], hop[IP_TEXT_MAX + 10];
			snprintf(hop, sizeof(hop), h->hop.family == AF_INET6 ? "[%s]:%u" : "%s:%u",
				 ip_format(h->hop.family, h->hop.addr, a, sizeof(a)), h->hop.port);
			struct prom_label lb[2] = { { "hop", hop }, { "kind", is_upstream(rt, h) ? "upstream" : "router" } };
			switch (f) {
			case 0: prom_u64(p, fams[f].name, lb, 2, h->queries); break;
			case 1: prom_u64(p, fams[f].name, lb, 2, h->answers); break;
			case 2: prom_u64(p, fams[f].name, lb, 2, h->timeouts); break;
			case 3: prom_u64(p, fams[f].name, lb, 2, h->probes); break;
			case 4: prom_double(p, fams[f].name, lb, 2, h->srtt_us / 1e6); break;
			default: prom_double(p, fams[f].name, lb, 2, h->load_ms / 1e3); break;
			}
		}
	}
}

static void write_fibs(struct prom *p, const struct inrpd_runtime *rt, const struct fib *chan)
{
	struct fib_stats st, ct = { 0 };
	fib_get_stats(rt->fib, &st);
	if (chan)
		fib_get_stats(chan, &ct);
	struct prom_label stat = { "table", "static" }, ch = { "table", "channel" };
	prom_family(p, "inrpd_fib_names", PROM_GAUGE, "Names with routes in the FIB.");
	prom_u64(p, "inrpd_fib_names", &stat, 1, st.entries);
	prom_u64(p, "inrpd_fib_names", &ch, 1, ct.entries);
	prom_family(p, "inrpd_fib_route_sets", PROM_GAUGE, "Distinct route sets in the FIB.");
	prom_u64(p, "inrpd_fib_route_sets", &stat, 1, st.routesets);
	prom_u64(p, "inrpd_fib_route_sets", &ch, 1, ct.routesets);
	prom_family(p, "inrpd_fib_aggregates", PROM_GAUGE, "Aggregates in the FIB.");
	prom_u64(p, "inrpd_fib_aggregates", &stat, 1, st.aggregates);
	prom_u64(p, "inrpd_fib_aggregates", &ch, 1, ct.aggregates);
	prom_one(p, "inrpd_config_routes", PROM_GAUGE, "Routes in the configuration file.", rt->nroutes);
}

static void write_fibsync(struct prom *p, const struct fibsync *f, uint64_t now_ms)
{
	struct fibsync_status fs = { 0 };
	if (f)
		fibsync_status(f, &fs, now_ms);
	prom_one(p, "inrpd_fib_channel_configured", PROM_GAUGE, "1 if a fib-channel socket is configured.", f != NULL);
	prom_one(p, "inrpd_fib_channel_connected", PROM_GAUGE, "1 while nbrpd is connected.", fs.connected);
	prom_one(p, "inrpd_fib_channel_syncing", PROM_GAUGE, "1 during a full sync from nbrpd.", fs.syncing);
	prom_one(p, "inrpd_fib_channel_in_service", PROM_GAUGE, "1 while nbrpd's routes are used.", fs.in_service);
	prom_one(p, "inrpd_fib_channel_stale", PROM_GAUGE, "1 while nbrpd's routes are kept after it left.", fs.stale);
	prom_one(p, "inrpd_fib_channel_epoch", PROM_GAUGE, "Epoch of the last full sync.", (double)fs.epoch);
	prom_one(p, "inrpd_fib_channel_connections_total", PROM_COUNTER, "Connections from nbrpd.", (double)fs.connections);
	prom_one(p, "inrpd_fib_channel_senders_replaced_total", PROM_COUNTER,
		 "Connected senders replaced by a new connection.", (double)fs.replaced);
	prom_one(p, "inrpd_fib_channel_messages_total", PROM_COUNTER, "FIB channel messages received.", (double)fs.messages);
	prom_one(p, "inrpd_fib_channel_syncs_total", PROM_COUNTER, "Full syncs completed.", (double)fs.syncs);
	prom_one(p, "inrpd_fib_channel_updates_total", PROM_COUNTER, "Incremental updates applied.", (double)fs.updates);
	prom_one(p, "inrpd_fib_channel_errors_total", PROM_COUNTER, "Protocol errors (connection closed).", (double)fs.errors);
	prom_one(p, "inrpd_fib_channel_last_change_timestamp_seconds", PROM_GAUGE,
		 "Unix time of the last change to nbrpd's routes in service (0: none yet).", fs.last_change_us / 1e6);
}

void inrpd_metrics_write(struct prom *p, const struct inrpd_metrics_source *src)
{
	prom_family(p, "inrpd_build_info", PROM_GAUGE, "The running inrpd's version.");
	prom_u64(p, "inrpd_build_info", &(struct prom_label){ "version", src->version }, 1, 1);
	prom_one(p, "inrpd_uptime_seconds", PROM_GAUGE, "Seconds since inrpd started.", src->uptime_ms / 1e3);

	struct transport t[4] = { { .name = "udp" }, { .name = "tcp" } };
	unsigned nt = 2;
	udp_workers_counters(src->udp, &t[0].c);
	tcp_server_counters(src->tcp, &t[1].c);
	for (unsigned k = 0; k < 2; k++)
		if (src->tls[k]) {
			struct tls_counters unused = { 0 };
			t[nt].name = tls_kind_name(k);
			tls_server_counters(src->tls[k], &t[nt++].c, &unused);
		}
	write_counters(p, t, nt);
	write_in_flight(p, t, nt);
	write_latency(p, t, nt);
	write_tls(p, src);

	const struct inrpd_runtime *rt = inrpd_rt;      /* the main thread is the only writer */
	struct inrpd_hops l;
	inrpd_hops_collect(src->udp, src->tcp, &l);
	write_hops(p, rt, &l);
	inrpd_hops_free(&l);
	write_fibs(p, rt, inrpd_chan_fib);
	write_fibsync(p, src->fibsync, src->now_ms);
	inrpd_rpz_metrics(p);

	struct metrics_server_stats ms = { 0 };
	if (src->metrics)
		metrics_server_stats(src->metrics, &ms);
	prom_one(p, "inrpd_metrics_scrapes_total", PROM_COUNTER, "Scrapes of this endpoint answered.", (double)ms.scrapes);
	prom_one(p, "inrpd_metrics_denied_total", PROM_COUNTER, "Connections to this endpoint refused by metrics-allow.",
		 (double)ms.denied);
}
