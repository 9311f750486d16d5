/*
 * inrpd's forwarding engine (inrpd/forward.c, inrpd/upsock.c) against a
 * hop that answers with the input.  The requests are real: client queries
 * answered by inrpd/answer.c with a runtime from a configuration whose
 * next routers and upstreams are two UDP sockets of this target on
 * 127.0.0.1 (the fake hops).  The engine asks them from its own sockets;
 * each datagram the input describes goes back to one of the queries they
 * read, over UDP or over a TCP exchange the engine opened (fake, no
 * connection), until the input runs out; then what is left in flight
 * times out (a budget of a few ms: no input waits longer).
 *
 * Byte 0: bits 0-1  requests: 1, 2 or 3 (3 counts as 3)
 *         bit 2     the clients asked over TCP (the engine may ask again
 *                   over TCP), else UDP with a 1232-byte limit
 *         bit 3     upstream-0x20
 *         bits 4-6  the budget, 4..10 ms, or 60 (7)
 * Byte 1: bits 0-5  each request's name, 2 bits a request: an upstream's,
 *                   one next router's, two next routers', an upstream's
 *                   in mixed case
 *         bits 6-7  qtype: A, AAAA, TXT, MX
 * Then datagrams: a control byte, a 2-byte length, the bytes (cut short
 * where the input ends).  Control:
 *   bits 0-1  0: as is; 1: the query's id put in; 2: and QR, and the
 *             question as asked put in after the input's header; 3: and
 *             an OPT RR with our client cookie (and from the second hop
 *             a server cookie: it speaks cookies, the first does not)
 *   bit 2     the id off by one; bit 3  the first letter's case flipped
 *   bit 4     over the open TCP exchange, if there is one
 *   bits 5-6  which query: the latest the hops read, or one before
 *   bit 7     mode 3: BADCOOKIE's upper rcode bits set in the OPT RR
 * A control byte 0 with length 0 sends nothing: the engine's next
 * deadline passes instead (an attempt times out, a pause ends).
 *
 * Asserted: every client gets exactly one answer, a response to its id
 * and question (as the client wrote it) with every record inside it, that
 * ldns reads too unless it relays the hop's records (fuzz_relay compares
 * those), within a UDP client's limit; afterwards nothing is in flight
 * (in_flight 0, no TCP exchange left open), and once the engine is freed
 * none of its sockets is left open.
 * What the engine learns of the two hops (RTT, that the second speaks
 * cookies) is process-wide and outlives an input, as it outlives a query
 * in inrpd: once the second hop gave a server cookie, its answers without
 * one are dropped as spoofed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <urcu-qsbr.h>
/* before ldns: without it, ldns/common.h defines bool as signed char */
#include <stdbool.h>
#include <ldns/ldns.h>

#include "config.h"
#include "fibsync.h"
#include "forward.h"
#include "rrl.h"
#include "log.h"
#include "upsock.h"
#include "wire.h"
#include "conffile.h"

#define CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "fuzz_forward: check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
		abort(); \
	} \
} while (0)

#define MAX_REQ         3
#define MAX_SEEN        4               /* queries the hops remember */
#define CLIENT_UDP      1232
#define CLIENT_ID(i)    (0x1000 + (i))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* main.c's and fibsync.c's, which the target does not link */
struct inrpd_runtime *inrpd_rt;
struct fib *inrpd_chan_fib;

static int hop_fd[2] = { -1, -1 };
static uint16_t hop_port[2];
static struct inrpd_counters cnt;
static struct inrpd_worker w = { .cnt = &cnt };        /* no cache shard */

static const char *const names[4] = { "www.example.com", "a.one.content", "www.two.content", "MiXeD.ExAmple.ORG" };
static const uint16_t qtypes[4] = { DNS_TYPE_A, DNS_TYPE_AAAA, 16, 15 };

static void teardown(void)
{
	rrl_free(w.rrl);
	fib_destroy(inrpd_chan_fib);
	inrpd_runtime_free(inrpd_rt);
	for (int i = 0; i < 2; i++)
		close(hop_fd[i]);
}

static uint16_t hop_open(int i)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sin);
	hop_fd[i] = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	CHECK(hop_fd[i] >= 0);
	CHECK(bind(hop_fd[i], (struct sockaddr *)&sin, sizeof(sin)) == 0);
	CHECK(getsockname(hop_fd[i], (struct sockaddr *)&sin, &sl) == 0);
	hop_port[i] = ntohs(sin.sin_port);
	return hop_port[i];
}

static int lowest_free_fd(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	close(fd);
	return fd;
}

static void setup(void)
{
	char conf[1024], err[1024];
	rcu_register_thread();
	rcu_thread_offline();
	log_set_level(LOG_LVL_ERR);
	uint16_t a = hop_open(0), b = hop_open(1);
	int n = snprintf(conf, sizeof(conf),
			 "listen 127.0.0.1 port 5353;\n"
			 "router-id \"fuzz.example.net\";\n"
			 "upstream 127.0.0.1 port %u;\n"
			 "upstream 127.0.0.1 port %u;\n"
			 "allow-recursion 127.0.0.0/8;\n"
			 "upstream-0x20 yes;\n"
			 "route \"one.content\" { router 127.0.0.1 port %u; }\n"
			 "route \"two.content\" { router 127.0.0.1 port %u load 5; router 127.0.0.1 port %u; }\n",
			 a, b, a, a, b);
	struct inrpd_config *cfg = inrpd_config_load(conffile_write("inrpd.conf", (const uint8_t *)conf,
								   (size_t)n), err, sizeof(err));
	if (!cfg) {
		fprintf(stderr, "fuzz_forward: %s\n", err);
		abort();
	}
	inrpd_rt = inrpd_runtime_from_config(cfg);
	inrpd_config_free(cfg);
	inrpd_chan_fib = fib_create();
	w.rrl = rrl_create(1);
	CHECK(inrpd_rt && inrpd_chan_fib && w.rrl);
	atexit(teardown);
}

/* One input's clients, and the hops' view of the engine. */
struct run {
	unsigned nreq;
	bool tcp;
	uint8_t query[MAX_REQ][512];
	struct name qname[MAX_REQ];
	size_t qlen[MAX_REQ], qend[MAX_REQ];    /* question ends at qend */
	unsigned delivered[MAX_REQ];
	/* queries the hops read, latest first */
	unsigned nseen;
	struct seen {
		int hop;
		struct sockaddr_in from;
		uint8_t msg[512];
		size_t len, qend;
	} seen[MAX_SEEN];
	/* TCP exchanges the engine opened */
	struct fwd_tcp_conn {
		bool open;
		int hop;
		uint32_t token;
		uint8_t msg[512];
		size_t len, qend;
	} conn[MAX_REQ + 1];
};

/* The end of a message's question, 0 if it has none that fits. */
static size_t question_end(const uint8_t *m, size_t len)
{
	size_t pos = DNS_HEADER_LEN;
	while (pos < len && m[pos] != 0) {
		if (m[pos] > 63)
			return 0;
		pos += m[pos] + 1u;
	}
	return pos + 5 <= len ? pos + 5 : 0;
}

/* The COOKIE option's client cookie in a query of ours (its OPT RR right after the question). */
static const uint8_t *query_cookie(const uint8_t *m, size_t len, size_t qend)
{
	size_t pos = qend + 11;                 /* root name, type, class, TTL, rdlen */
	if (qend == 0 || pos > len || m[qend] != 0 || wire_load16(m + qend + 1) != 41)
		return NULL;
	while (pos + 4 <= len) {
		uint16_t code = wire_load16(m + pos), olen = wire_load16(m + pos + 2);
		if (pos + 4 + olen > len)
			return NULL;
		if (code == DNS_OPT_COOKIE && olen >= 8)
			return m + pos + 4;
		pos += 4u + olen;
	}
	return NULL;
}

static void deliver(void *ctx, const struct fwd_client *client, const uint8_t *msg, size_t len)
{
	struct run *r = ctx;
	uint64_t i = client->serial;
	CHECK(i < r->nreq && r->delivered[i]++ == 0);
	CHECK(r->tcp ? client->conn == &r->conn : client->conn == NULL);
	CHECK(!r->tcp ? len <= CLIENT_UDP : len <= 65535);
	/* a response to the client's question, every record inside it */
	struct dns_upstream_answer a;
	const char *why;
	CHECK(dns_upstream_answer_parse(msg, len, CLIENT_ID(i), &r->qname[i], wire_load16(r->query[i] + r->qend[i] - 4),
					DNS_CLASS_IN, &a, &why) == 0);
	/* records are relayed as the hop gave them (fuzz_relay compares those
	 * with ldns); our own answers ldns must read */
	if (a.ancount == 0 && a.nscount == 0 && a.arcount == (a.has_opt ? 1 : 0)) {
		ldns_pkt *p = NULL;
		CHECK(ldns_wire2pkt(&p, msg, len) == LDNS_STATUS_OK);
		CHECK(ldns_pkt_qr(p) && ldns_pkt_id(p) == CLIENT_ID(i));
		ldns_pkt_free(p);
	}
	size_t qe = r->qend[i];
	CHECK(len >= qe && memcmp(msg + DNS_HEADER_LEN, r->query[i] + DNS_HEADER_LEN, qe - DNS_HEADER_LEN) == 0);
}

static struct fwd_tcp_conn *tcp_open(void *ctx, const struct route *to, const uint8_t *query, size_t len,
				     uint32_t token)
{
	struct run *r = ctx;
	for (unsigned k = 0; k < MAX_REQ + 1; k++) {
		struct fwd_tcp_conn *c = &r->conn[k];
		if (c->open)
			continue;
		CHECK(len <= sizeof(c->msg));
		c->open = true;
		c->hop = to->port == hop_port[1];
		c->token = token;
		memcpy(c->msg, query, len);
		c->len = len;
		c->qend = question_end(query, len);
		return c;
	}
	return NULL;                            /* as a transport at its limit */
}

static void tcp_abort(void *ctx, struct fwd_tcp_conn *c)
{
	(void)ctx;
	CHECK(c->open);
	c->open = false;
}

static struct fwd_tcp_conn *tcp_any(struct run *r)
{
	for (unsigned k = 0; k < MAX_REQ + 1; k++)
		if (r->conn[k].open)
			return &r->conn[k];
	return NULL;
}

/* What the hops were sent since: the latest first. */
static void hops_read(struct run *r)
{
	for (int h = 0; h < 2; h++) {
		for (;;) {
			struct seen s = { .hop = h };
			socklen_t fl = sizeof(s.from);
			ssize_t n = recvfrom(hop_fd[h], s.msg, sizeof(s.msg), 0, (struct sockaddr *)&s.from, &fl);
			if (n < 0)
				break;
			s.len = (size_t)n;
			s.qend = question_end(s.msg, s.len);
			memmove(&r->seen[1], &r->seen[0], (MAX_SEEN - 1) * sizeof(r->seen[0]));
			r->seen[0] = s;
			if (r->nseen < MAX_SEEN)
				r->nseen++;
		}
	}
}

/* Hop h's answer to query q (msg, len, qend) made of the input's bytes d[0..n) as ctl says. */
static size_t make_answer(int h, uint8_t ctl, const uint8_t *q, size_t qlen, size_t qend, const uint8_t *cookie,
			  const uint8_t *d, size_t n, uint8_t *out, size_t cap)
{
	unsigned mode = ctl & 3;
	size_t len = 0;
	if (mode < 2) {
		len = n < cap ? n : cap;
		memcpy(out, d, len);
	} else if (qend) {
		uint8_t hdr[DNS_HEADER_LEN] = { 0 };
		memcpy(hdr, d, n < DNS_HEADER_LEN ? n : DNS_HEADER_LEN);
		memcpy(out, hdr, DNS_HEADER_LEN);
		out[2] |= 0x80;
		wire_store16(out + 4, 1);
		memcpy(out + DNS_HEADER_LEN, q + DNS_HEADER_LEN, qend - DNS_HEADER_LEN);
		len = qend;
		if (n > DNS_HEADER_LEN) {
			size_t body = n - DNS_HEADER_LEN;
			if (body > cap - 64 - len)
				body = cap - 64 - len;
			memcpy(out + len, d + DNS_HEADER_LEN, body);
			len += body;
		}
		if (ctl & 8) {
			for (size_t k = DNS_HEADER_LEN + 1; k < qend - 5; k++)
				if ((out[k] | 0x20) >= 'a' && (out[k] | 0x20) <= 'z') {
					out[k] ^= 0x20;
					break;
				}
		}
		if (mode == 3 && cookie) {
			/* hop 1 speaks cookies, hop 0 only echoes ours */
			static const uint8_t server[16] = "fake hop cookie";
			uint16_t clen = h == 1 ? 24 : 8;
			uint8_t opt[11 + 4 + 24] = { 0, 0, 41, 0x10, 0, (ctl & 0x80) ? 1 : 0, 0, 0, 0 };
			wire_store16(opt + 9, 4 + clen);
			wire_store16(opt + 11, DNS_OPT_COOKIE);
			wire_store16(opt + 13, clen);
			memcpy(opt + 15, cookie, 8);
			memcpy(opt + 23, server, 16);
			memcpy(out + len, opt, 15u + clen);
			len += 15u + clen;
			wire_store16(out + 10, (uint16_t)(wire_load16(out + 10) + 1));
		}
	}
	if (mode >= 1 && len >= 2 && qlen >= 2) {
		memcpy(out, q, 2);
		if (ctl & 4)
			out[1] ^= 1;
	}
	return len;
}

/* The engine reads what came and fails what timed out; returns ms to its next deadline. */
static int engine_turn(struct fwd_engine *e, int wait_ms)
{
	uint32_t tokens[UPSOCK_WAIT_MAX];
	unsigned nt = 0;
	if (fwd_engine_wait(e, wait_ms, tokens, &nt) == 0)
		fwd_on_ready(e);
	return fwd_expire(e);
}

static bool all_delivered(const struct run *r)
{
	for (unsigned i = 0; i < r->nreq; i++)
		if (!r->delivered[i])
			return false;
	return true;
}

static void drain_hops(void)
{
	uint8_t buf[512];
	for (int h = 0; h < 2; h++)
		while (recv(hop_fd[h], buf, sizeof(buf), 0) >= 0)
			;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct run run;
	static uint8_t out[INRPD_ANSWER_MAX], ans[65535];
	struct run *r = &run;
	char err[256];
	if (!inrpd_rt)
		setup();
	if (size < 2)
		return 0;
	memset(r, 0, sizeof(*r));
	r->nreq = (data[0] & 3) == 0 ? 1 : (data[0] & 3) > 2 ? 3 : (data[0] & 3);
	r->tcp = data[0] & 4;
	/* room for an attempt after a timeout takes the longest budget: an attempt has at least 20 ms */
	uint32_t budget = ((data[0] >> 4) & 7) == 7 ? 60 : 4 + ((data[0] >> 4) & 7);
	drain_hops();
	/* per input: libFuzzer's symbolizer may hold pipes opened since */
	int fd_floor = lowest_free_fd();

	struct fwd_engine *e = fwd_engine_create(&w, 8, 0, deliver, r, err, sizeof(err));
	CHECK(e);
	static const struct fwd_tcp_ops ops = { tcp_open, tcp_abort };
	if (r->tcp)
		fwd_engine_set_tcp(e, &ops);

	struct sockaddr_in client = { .sin_family = AF_INET, .sin_port = htons(40000),
				      .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	rcu_thread_online();
	inrpd_worker_begin(&w);
	w.udp = !r->tcp;
	for (unsigned i = 0; i < r->nreq; i++) {
		struct name *qn = &r->qname[i];
		const char *text = names[(data[1] >> (2 * i)) & 3];
		CHECK(name_from_text(qn, text, strlen(text)) == NAME_OK);
		/* the client's case, which name_from_text keeps */
		struct dns_query_spec s = {
			.id = CLIENT_ID(i), .qname = qn->wire, .qname_len = qn->len,
			.qtype = qtypes[data[1] >> 6], .qclass = DNS_CLASS_IN, .rd = true,
			.edns = true, .udp_size = CLIENT_UDP,
		};
		r->qlen[i] = dns_query_write(&s, r->query[i], sizeof(r->query[i]));
		r->qend[i] = question_end(r->query[i], r->qlen[i]);
		CHECK(r->qlen[i] && r->qend[i]);
		size_t n = inrpd_answer(&w, r->query[i], r->qlen[i], (struct sockaddr *)&client, out);
		CHECK(n == INRPD_FORWARD);
		w.req.budget_ms = budget;
		w.req.upstream_0x20 = data[0] & 8;
		struct fwd_client c = { .serial = i, .conn = r->tcp ? &r->conn : NULL };
		memcpy(&c.peer, &client, sizeof(client));
		c.peer_len = sizeof(client);
		fwd_start(e, &w.req, &c);
	}
	rcu_thread_offline();

	/* the hops answer with the input */
	size_t pos = 2;
	while (pos + 3 <= size && !all_delivered(r)) {
		uint8_t ctl = data[pos];
		size_t n = wire_load16(data + pos + 1);
		pos += 3;
		if (n > size - pos)
			n = size - pos;
		const uint8_t *d = data + pos;
		pos += n;
		hops_read(r);
		struct fwd_tcp_conn *c = tcp_any(r);
		if ((ctl & 0x10) && c) {
			size_t len = make_answer(c->hop, ctl, c->msg, c->len, c->qend, query_cookie(c->msg, c->len, c->qend),
						 d, n, ans, sizeof(ans));
			c->open = false;
			rcu_thread_online();
			fwd_on_tcp_answer(e, c->token, c, ans, len);
			rcu_thread_offline();
		} else if (r->nseen > 0 && (ctl != 0 || n != 0)) {
			struct seen *s = &r->seen[((ctl >> 5) & 3) % r->nseen];
			size_t len = make_answer(s->hop, ctl, s->msg, s->len, s->qend,
						 query_cookie(s->msg, s->len, s->qend), d, n, ans, sizeof(ans));
			sendto(hop_fd[s->hop], ans, len, 0, (struct sockaddr *)&s->from, sizeof(s->from));
		}
		rcu_thread_online();
		int next = engine_turn(e, 0);
		if (ctl == 0 && n == 0 && next > 0)
			engine_turn(e, next);   /* time passes: a deadline */
		rcu_thread_offline();
	}
	/* then nothing more comes: the rest fails as its deadlines pass */
	rcu_thread_online();
	for (int wait = 0; !all_delivered(r); ) {
		struct fwd_tcp_conn *c = tcp_any(r);
		if (c) {
			c->open = false;
			fwd_on_tcp_answer(e, c->token, c, NULL, 0);
		}
		hops_read(r);
		wait = engine_turn(e, wait);
		CHECK(wait >= 0 || all_delivered(r));
	}
	rcu_thread_offline();
	CHECK(fwd_pending_count(e) == 0 && cnt.in_flight == 0 && !tcp_any(r));
	fwd_engine_free(e);
	CHECK(lowest_free_fd() <= fd_floor);   /* every socket of the engine closed */
	return 0;
}
