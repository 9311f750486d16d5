/*
 * inrpd's answer path alone (inrpd/answer.c as a UDP worker runs it, no
 * sockets), for callgrind: N routed names, as scripts/bench inrp makes
 * them (each a route to a local server), and Q A queries for them in
 * random order, answered in batches of 32, each batch's table entries
 * fetched before its first answer and each query answered with its hint,
 * as udp.c does.  Instructions per query:
 *
 *   valgrind --tool=callgrind --toggle-collect=answer_all \
 *       build/bench/bench_answer [--names N] [--queries Q] [--client ADDR]
 *       [--rrl RATE] [--edns] [--cache-size BYTES]
 *
 * and callgrind's total Ir over Q.  The client is 127.0.0.1 (inside the
 * default allow-recursion) unless --client says otherwise; --rrl sets
 * rrl-rate (the default config's otherwise).  It fails unless every query
 * was answered from its route (counted local) or limited by RRL.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <urcu-qsbr.h>

#include "answer.h"
#include "config.h"
#include "fib.h"
#include "fibsync.h"
#include "log.h"
#include "rrl.h"

/* main.c's and fibsync.c's, which this does not link */
struct inrpd_runtime *inrpd_rt;
struct fib *inrpd_chan_fib;

#define BATCH           32
#define QUERY_MAX       (DNS_HEADER_LEN + NAME_MAX_WIRE + 4 + DNS_OPT_RR_LEN)

static uint64_t rnd_state = 88172645463325252ull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* Names like bench_inrp.py's: a label of 3-17 letters and digits, 80% .com, 10% .org, 10% .net. */
static void gen_name(char *out)
{
	static const char alnum[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned len = 3 + (unsigned)(rnd() % 15);
	for (unsigned i = 0; i < len; i++)
		out[i] = alnum[rnd() % 36];
	unsigned r = (unsigned)(rnd() % 10);
	strcpy(out + len, r < 8 ? ".com" : r < 9 ? ".org" : ".net");
}

static int by_text(const void *a, const void *b)
{
	return strcmp(a, b);
}

struct queries {
	unsigned n;
	uint8_t (*pkt)[QUERY_MAX];
	size_t *len;
};

static struct inrpd_counters cnt;
static struct inrpd_worker w = { .cnt = &cnt, .udp = true };
static uint8_t out[BATCH][INRPD_ANSWER_MAX];

/* What callgrind counts: every query through the path. */
__attribute__((noinline)) static unsigned answer_all(const struct queries *q, const struct sockaddr *client)
{
	unsigned answered = 0;
	for (unsigned base = 0; base < q->n; base += BATCH) {
		unsigned n = q->n - base < BATCH ? q->n - base : BATCH;
		rcu_quiescent_state();
		inrpd_worker_begin(&w);
		struct inrpd_hint hint[BATCH];
		for (unsigned i = 0; i < n; i++)
			inrpd_buckets(&w, q->pkt[base + i], q->len[base + i], &hint[i]);
		inrpd_hints_fetch(hint, n);
		for (unsigned i = 0; i < n; i++) {
			w.hint = &hint[i];
			size_t len = inrpd_answer(&w, q->pkt[base + i], q->len[base + i], client, out[i]);
			if (len && len != INRPD_FORWARD)
				answered++;
		}
	}
	return answered;
}

int main(int argc, char **argv)
{
	unsigned names = 100000, nqueries = 200000;
	long rrl = -1;
	bool edns = false;
	const char *client_text = "127.0.0.1", *cache_size = NULL;
	static const struct option opts[] = {
		{ "names", required_argument, NULL, 'n' }, { "queries", required_argument, NULL, 'q' },
		{ "client", required_argument, NULL, 'c' }, { "rrl", required_argument, NULL, 'r' },
		{ "edns", no_argument, NULL, 'e' }, { "cache-size", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1; ) {
		switch (c) {
		case 'n': names = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'q': nqueries = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'c': client_text = optarg; break;
		case 'r': rrl = strtol(optarg, NULL, 10); break;
		case 'e': edns = true; break;
		case 's': cache_size = optarg; break;
		default:
			fprintf(stderr, "usage: bench_answer [--names N] [--queries Q] [--client ADDR] [--rrl RATE] "
				"[--edns] [--cache-size BYTES]\n");
			return 2;
		}
	}
	if (names == 0 || nqueries == 0)
		return 2;
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	if (inet_pton(AF_INET, client_text, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
	} else if (inet_pton(AF_INET6, client_text, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
	} else {
		fprintf(stderr, "bench_answer: bad client address %s\n", client_text);
		return 2;
	}

	char path[] = "/tmp/bench_answer.XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	char (*name)[32] = calloc(names, sizeof(*name));
	if (!f || !name)
		return 1;
	fprintf(f, "listen 127.0.0.1 port 5353;\nworkers 1;\nanswer-ttl 300;\n");
	if (rrl >= 0)
		fprintf(f, "rrl-rate %ld;\n", rrl);
	if (cache_size)
		fprintf(f, "cache-size %s;\n", cache_size);
	for (unsigned i = 0; i < names; i++)
		gen_name(name[i]);
	qsort(name, names, sizeof(*name), by_text);
	unsigned k = 0;
	for (unsigned i = 0; i < names; i++)
		if (k == 0 || strcmp(name[k - 1], name[i]) != 0)
			memcpy(name[k++], name[i], sizeof(*name));
	names = k;
	for (unsigned i = 0; i < names; i++)
		fprintf(f, "route \"%s\" { server 127.0.0.1; }\n", name[i]);
	fclose(f);

	char err[1024];
	log_set_level(LOG_LVL_ERR);
	rcu_register_thread();
	rcu_thread_offline();
	struct inrpd_config *cfg = inrpd_config_load(path, err, sizeof(err));
	unlink(path);
	if (!cfg) {
		fprintf(stderr, "bench_answer: %s\n", err);
		return 1;
	}
	inrpd_rt = inrpd_runtime_from_config(cfg);
	inrpd_cache_flush = cache_flush_new();
	if (cfg->cache_size)
		w.cache = cache_create(cfg->cache_size, inrpd_cache_flush);
	w.rrl = rrl_create(1);
	inrpd_config_free(cfg);

	struct queries q = { .n = nqueries };
	q.pkt = calloc(nqueries, sizeof(*q.pkt));
	q.len = calloc(nqueries, sizeof(*q.len));
	if (!inrpd_rt || !w.rrl || !q.pkt || !q.len)
		return 1;
	for (unsigned i = 0; i < nqueries; i++) {
		struct name n;
		const char *text = name[rnd() % names];
		if (name_from_text(&n, text, strlen(text)) != NAME_OK)
			return 1;
		struct dns_query_spec s = {
			.id = (uint16_t)i, .qname = n.wire, .qname_len = n.len, .qtype = DNS_TYPE_A,
			.qclass = DNS_CLASS_IN, .rd = true, .edns = edns, .udp_size = 1232,
		};
		q.len[i] = dns_query_write(&s, q.pkt[i], sizeof(q.pkt[i]));
	}

	rcu_thread_online();
	unsigned answered = answer_all(&q, (const struct sockaddr *)&ss);
	rcu_thread_offline();
	printf("bench_answer: %u names, %u queries, %u answered: %llu local, %llu slipped; %llu dropped by RRL\n",
	       names, nqueries, answered, (unsigned long long)cnt.local, (unsigned long long)cnt.rrl_slipped,
	       (unsigned long long)cnt.rrl_dropped);

	free(q.pkt);
	free(q.len);
	free(name);
	rrl_free(w.rrl);
	cache_destroy(w.cache);
	cache_flush_free(inrpd_cache_flush);
	inrpd_runtime_free(inrpd_rt);
	/* each query answered from its route, or limited */
	return cnt.local + cnt.rrl_slipped + cnt.rrl_dropped == nqueries ? 0 : 1;
}
