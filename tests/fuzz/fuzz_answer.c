/*
 * inrpd's answer path (inrpd/answer.c) as a worker runs it: a packet in,
 * the answer out, with the runtime built from a configuration by
 * inrpd/config.c, a FIB from nbrpd (the channel's), a packet cache and
 * response rate limiting.  A query that goes on to a next router or an
 * upstream is answered by a fake one (an A record for the name asked,
 * relayed and cached as the forwarding engine would), then asked again.
 *
 * Byte 0 picks the transport and the client; the rest is the message:
 *   bit 0      UDP (the client's size limit and RRL) rather than TCP
 *   bits 1-2   127.0.0.1 (recursion allowed), 192.0.2.99 (not), ::1,
 *              or no address (TCP whose peer name failed)
 *   bit 3      RRL off (rrl-rate 0), else 50 a second
 * Every answer is one ldns reads: a response, with the query's id.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <urcu-qsbr.h>
/* before ldns: without it, ldns/common.h defines bool as signed char */
#include <stdbool.h>
#include <ldns/ldns.h>

#include "answer.h"
#include "config.h"
#include "fibsync.h"
#include "rrl.h"
#include "log.h"
#include "conffile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* main.c's and fibsync.c's, which the target does not link */
struct inrpd_runtime *inrpd_rt;
struct fib *inrpd_chan_fib;

static const char config[] =
	"listen 127.0.0.1 port 5353;\n"
	"router-id \"fuzz.example.net\";\n"
	"upstream 127.0.0.53;\n"
	"upstream ::1 port 5300;\n"
	"allow-recursion 127.0.0.0/8;\n"
	"allow-recursion ::1/128;\n"
	"nsid yes;\n"
	"rrl-rate 50;\n"
	"rrl-exempt 10.0.0.0/8;\n"
	"cache-serve-stale 1h;\n"
	"cookie-secret \"000102030405060708090a0b0c0d0e0f\";\n"
	"route \"www.example.content\" {\n"
	"	server 127.0.0.10 load 5;\n"
	"	server ::1;\n"
	"	record HTTPS \"1 . alpn=h2\";\n"
	"	record TXT \"\\\"hello\\\"\";\n"
	"}\n"
	"route \"shop.example.content\" { router 127.0.0.2 port 5353 load 10; router 127.0.0.3; }\n"
	"route \"mixed.example.content\" { server 127.0.0.11; router 127.0.0.4; }\n"
	"route \"old.content\" { redirect \"www.example.content\"; }\n"
	"route \"away.content\" { redirect \"elsewhere.example\"; }\n"
	"route \"loop1.content\" { redirect \"loop2.content\"; }\n"
	"route \"loop2.content\" { redirect \"loop1.content\"; }\n";

static struct inrpd_counters cnt;
static struct inrpd_worker w = { .cnt = &cnt };        /* a worker's, with a cache shard and RRL */

static void teardown(void)
{
	rrl_free(w.rrl);
	cache_destroy(w.cache);
	cache_flush_free(inrpd_cache_flush);
	fib_destroy(inrpd_chan_fib);
	inrpd_runtime_free(inrpd_rt);
}

static void setup(void)
{
	char err[1024];
	rcu_register_thread();
	rcu_thread_offline();
	log_set_level(LOG_LVL_ERR);
	struct inrpd_config *cfg = inrpd_config_load(conffile_write("inrpd.conf", (const uint8_t *)config,
								   sizeof(config) - 1), err, sizeof(err));
	if (!cfg) {
		fprintf(stderr, "fuzz_answer: %s\n", err);
		abort();
	}
	inrpd_rt = inrpd_runtime_from_config(cfg);
	inrpd_config_free(cfg);

	/* nbrpd's routes: one of its own, one more specific than a static one */
	static const char *const chan_names[] = { "cdn.example", "eu.shop.example.content" };
	struct route r = { .kind = ROUTE_ROUTER, .family = AF_INET, .port = 53, .addr = { 127, 0, 0, 5 } };
	struct fib *chan = fib_create();
	rcu_thread_online();
	for (unsigned i = 0; i < 2; i++) {
		struct name n;
		if (name_from_text(&n, chan_names[i], strlen(chan_names[i])) != NAME_OK ||
		    fib_set_routes(chan, &n, &r, 1) != 0)
			abort();
	}
	fib_commit(chan);
	rcu_thread_offline();
	inrpd_chan_fib = chan;

	inrpd_cache_flush = cache_flush_new();
	w.cache = cache_create(1 << 20, inrpd_cache_flush);
	w.rrl = rrl_create(1);
	if (!inrpd_rt || !inrpd_cache_flush || !w.cache || !w.rrl)
		abort();
	atexit(teardown);
}

static void check(const uint8_t *query, size_t qlen, const uint8_t *ans, size_t alen)
{
	ldns_pkt *p = NULL;
	if (alen > INRPD_ANSWER_MAX || ldns_wire2pkt(&p, ans, alen) != LDNS_STATUS_OK || !ldns_pkt_qr(p) ||
	    qlen < 2 || ldns_pkt_id(p) != (query[0] << 8 | query[1])) {
		fprintf(stderr, "fuzz_answer: a bad answer of %zu bytes\n", alen);
		abort();
	}
	ldns_pkt_free(p);
}

/* The fake next hop or upstream: an A record for the name asked. */
static void answer_forwarded(const struct inrpd_runtime *rt, struct fwd_request *req, const uint8_t *query,
			     size_t qlen, uint8_t *out)
{
	static const uint8_t addr[4] = { 192, 0, 2, 7 };
	uint8_t up[512];
	struct dns_builder b;
	struct dns_query uq = req->q;
	uq.id = 0x4242;
	uq.qname = req->target;
	memcpy(uq.qname_orig, req->target.wire, req->target.len);
	uq.has_edns = false;
	dns_response_init(&b, &uq, DNS_RCODE_NOERROR, up, sizeof(up));
	if (uq.qtype == DNS_TYPE_A)
		dns_response_add_addr(&b, AF_INET, addr, 300);
	size_t ulen = dns_response_finish(&b, 0);
	struct dns_upstream_answer a;
	const char *why;
	if (ulen == 0 || dns_upstream_answer_parse(up, ulen, 0x4242, &req->target, req->q.qtype, req->q.qclass,
						   &a, &why) < 0) {
		fprintf(stderr, "fuzz_answer: our fake answer did not parse back\n");
		abort();
	}
	size_t alen = inrpd_answer_relay(req, rt->router_id, up, ulen, &a, NULL, out, INRPD_ANSWER_MAX);
	if (alen == 0)
		return;
	check(query, qlen, out, alen);
	inrpd_cache_store(w.cache, req, out, alen, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[INRPD_ANSWER_MAX];
	if (!inrpd_rt)
		setup();
	if (size < 1)
		return 0;
	w.udp = data[0] & 1;
	inrpd_rt->rrl_rate = data[0] & 8 ? 0 : 50;
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	switch ((data[0] >> 1) & 3) {
	case 0: sin->sin_family = AF_INET; inet_pton(AF_INET, "127.0.0.1", &sin->sin_addr); break;
	case 1: sin->sin_family = AF_INET; inet_pton(AF_INET, "192.0.2.99", &sin->sin_addr); break;
	case 2: sin6->sin6_family = AF_INET6; sin6->sin6_addr = in6addr_loopback; break;
	default: ss.ss_family = AF_UNSPEC; break;
	}
	const uint8_t *query = data + 1;
	size_t qlen = size - 1;
	/* an exact copy, so that ASan sees a read past the message */
	uint8_t *pkt = malloc(qlen ? qlen : 1);
	memcpy(pkt, query, qlen);

	rcu_thread_online();
	inrpd_worker_begin(&w);
	for (int round = 0; round < 2; round++) {
		size_t alen = inrpd_answer(&w, pkt, qlen, (struct sockaddr *)&ss, out);
		if (alen == 0)
			break;
		if (alen != INRPD_FORWARD) {
			check(query, qlen, out, alen);
			break;
		}
		if (w.req.ncand == 0 || w.req.ncand > ROUTESET_MAX_ROUTES) {
			fprintf(stderr, "fuzz_answer: forwarded with %u candidates\n", w.req.ncand);
			abort();
		}
		answer_forwarded(w.rt, &w.req, query, qlen, out);
	}
	rcu_thread_offline();
	free(pkt);
	return 0;
}
