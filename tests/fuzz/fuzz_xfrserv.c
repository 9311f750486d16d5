/*
 * The transfer server (lib/agg/xfrserv.c) over TCP as a peer reaches it: the
 * input is the byte stream a client sends on one connection (2-byte
 * lengths and queries, cut and pipelined anyhow), served from a store of
 * agg.example at serials 100 to 102.  Whatever is sent, the server never
 * crashes or leaks, and what comes back is whole messages, each a DNS
 * response that ldns reads.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <ldns/ldns.h>

#include "aggstore.h"
#include "log.h"
#include "nameset.h"
#include "xfrserv.h"
#include "stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uv_loop_t loop;
static struct xfrserv *server;
static struct aggstore *store;
static struct name agg;
static struct sockaddr_in server_addr;
static char dir[] = "/tmp/fuzz_xfrserv.XXXXXX";

static struct aggstore *lookup(void *ctx, const struct name *n)
{
	(void)ctx;
	return name_equal(n, &agg) ? store : NULL;
}

static void cleanup(void)
{
	char cmd[64];
	xfrserv_stop(server);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	aggstore_close(store);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "fuzz_xfrserv: could not remove %s\n", dir);
}

/* serial 100 + v holds member-(2v)..member-(2v+9) */
static void setup(void)
{
	static struct prefix acl[2];
	char err[512];
	log_set_level(LOG_LVL_ERR);
	if (!mkdtemp(dir) || uv_loop_init(&loop) != 0 || name_from_text(&agg, "agg.example", 11) != NAME_OK)
		abort();
	if (aggstore_open(&store, dir, &agg, err, sizeof(err)) != 0) {
		fprintf(stderr, "fuzz_xfrserv: %s\n", err);
		abort();
	}
	for (unsigned v = 0; v <= 2; v++) {
		struct nameset m;
		nameset_init(&m);
		for (unsigned i = 2 * v; i < 2 * v + 10; i++) {
			char text[32];
			struct name n;
			snprintf(text, sizeof(text), "member-%u.example", i);
			if (name_from_text(&n, text, strlen(text)) != NAME_OK || nameset_add(&m, n.wire, n.len) < 0)
				abort();
		}
		if (aggstore_replace(store, 100 + v, &m) != 0)
			abort();
		nameset_free(&m);
	}
	struct xfrserv_config cfg = { .family = AF_INET, .acl = acl, .nacl = 2 };
	if (prefix_parse("127.0.0.0/8", &acl[0]) < 0 || prefix_parse("::1", &acl[1]) < 0)
		abort();
	inet_pton(AF_INET, "127.0.0.1", cfg.addr);
	if (xfrserv_start(&server, &loop, &cfg, lookup, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "fuzz_xfrserv: %s\n", err);
		abort();
	}
	server_addr.sin_family = AF_INET;
	server_addr.sin_port = htons(xfrserv_port(server));
	server_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	atexit(cleanup);
}

struct reader {
	uint8_t buf[2 + 65535];
	size_t len;
	unsigned messages;
};

static void on_reply(void *arg, const uint8_t *data, size_t len)
{
	struct reader *rd = arg;
	while (len > 0) {
		size_t want = rd->len < 2 ? 2 : 2 + ((size_t)rd->buf[0] << 8 | rd->buf[1]);
		size_t n = want - rd->len < len ? want - rd->len : len;
		memcpy(rd->buf + rd->len, data, n);
		rd->len += n;
		data += n;
		len -= n;
		if (rd->len < 2 || rd->len < 2 + ((size_t)rd->buf[0] << 8 | rd->buf[1]))
			continue;
		ldns_pkt *p = NULL;
		if (ldns_wire2pkt(&p, rd->buf + 2, rd->len - 2) != LDNS_STATUS_OK || !ldns_pkt_qr(p))
			abort();
		ldns_pkt_free(p);
		rd->messages++;
		rd->len = 0;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!server)
		setup();
	struct reader *rd = calloc(1, sizeof(*rd));
	if (!rd)
		abort();
	stream_exchange(&loop, (struct sockaddr *)&server_addr, sizeof(server_addr), data, size, on_reply, rd);
	if (rd->len != 0)       /* a message cut short */
		abort();
	free(rd);
	return 0;
}
