/*
 * A test-only driver of the aggregate libraries (not installed), for the
 * integration tests and benchmarks:
 *
 *   aggtool define DIR AGG FILE SERIAL      store FILE's members as version SERIAL
 *   aggtool serve DIR AGG ADDR PORT [--allow PREFIX]... [--file FILE]
 *                 [--max-transfers N] [--idle-timeout-ms N]
 *                                           serve AGG over TCP/UDP; SIGHUP
 *                                           re-reads FILE as the next version
 *   aggtool fetch DIR AGG ADDR PORT [--timeout-ms N] [--time-limit-ms N] [--max-names N] [--max-bytes N]
 *                 [--version N [--digest HEX] [--whole]]
 *                                           fetch AGG into DIR (exactly version N, with
 *                                           the member digest HEX); one JSON line
 *   aggtool show DIR AGG [--members|--digest]   version, members, sizes (JSON); or the
 *                                           members, or their digest in hex
 */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "prefix.h"
#include "aggfile.h"
#include "aggstore.h"
#include "attest.h"
#include "log.h"
#include "route.h"
#include "xfrcli.h"
#include "xfrserv.h"

static void usage(void)
{
	fprintf(stderr, "usage: aggtool define DIR AGG FILE SERIAL\n"
			"       aggtool serve DIR AGG ADDR PORT [--allow PREFIX]... [--file FILE] [--max-transfers N] [--idle-timeout-ms N]\n"
			"       aggtool fetch DIR AGG ADDR PORT [--timeout-ms N] [--time-limit-ms N]\n"
			"                 [--max-names N] [--max-bytes N] [--version N [--digest HEX] [--whole]]\n"
			"       aggtool show DIR AGG [--members|--digest]\n");
	exit(2);
}

static void report(void *ctx, const char *msg)
{
	fprintf(stderr, "%s\n", msg);
}

static struct aggstore *open_store(const char *dir, const char *agg_text)
{
	struct name agg;
	if (name_from_text(&agg, agg_text, strlen(agg_text)) != NAME_OK) {
		fprintf(stderr, "aggtool: bad aggregate name %s\n", agg_text);
		exit(2);
	}
	struct aggstore *s;
	char err[512];
	if (aggstore_open(&s, dir, &agg, err, sizeof(err)) < 0) {
		fprintf(stderr, "aggtool: %s\n", err);
		exit(1);
	}
	return s;
}

static int define_version(struct aggstore *s, const char *file, uint32_t serial)
{
	struct nameset m;
	nameset_init(&m);
	struct aggfile_result r;
	if (aggfile_read(file, &m, &r, report, NULL, 20) < 0) {
		nameset_free(&m);
		return -1;
	}
	int rc = aggstore_replace(s, serial, &m);
	nameset_free(&m);
	if (rc < 0) {
		fprintf(stderr, "aggtool: %s\n", aggstore_error(s));
		return -1;
	}
	log_info("aggregate: version %u, %u members (%u duplicates)", serial, r.names, r.duplicates);
	return 0;
}

static int addr_parse(const char *text, const char *port, struct sockaddr_storage *ss, int *family, uint8_t addr[16])
{
	*family = strchr(text, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(*family, text, addr) != 1)
		return -1;
	sockaddr_from_bytes(*family, addr, (uint16_t)atoi(port), ss);
	return 0;
}

/* serve */
static struct aggstore *served;
static struct xfrserv *server;
static const char *serve_file;
static uv_signal_t sig_hup, sig_term, sig_int;

static struct aggstore *lookup(void *ctx, const struct name *agg)
{
	return name_equal(agg, aggstore_name(served)) ? served : NULL;
}

static void on_hup(uv_signal_t *h, int sig)
{
	uint32_t v = 0;
	aggstore_version(served, &v);
	if (serve_file && define_version(served, serve_file, v + 1) == 0)
		log_info("reloaded %s as version %u", serve_file, v + 1);
}

static void on_term(uv_signal_t *h, int sig)
{
	xfrserv_stop(server);
	uv_close((uv_handle_t *)&sig_hup, NULL);
	uv_close((uv_handle_t *)&sig_term, NULL);
	uv_close((uv_handle_t *)&sig_int, NULL);
}

static int serve(int argc, char **argv)
{
	if (argc < 6)
		usage();
	struct prefix acl[16];
	struct xfrserv_config cfg = { 0 };
	cfg.acl = acl;
	for (int i = 6; i < argc; i++) {
		if (!strcmp(argv[i], "--allow") && i + 1 < argc && cfg.nacl < 16) {
			if (prefix_parse(argv[++i], &acl[cfg.nacl++]) < 0) {
				fprintf(stderr, "aggtool: bad prefix %s\n", argv[i]);
				return 2;
			}
		} else if (!strcmp(argv[i], "--file") && i + 1 < argc) {
			serve_file = argv[++i];
		} else if (!strcmp(argv[i], "--max-transfers") && i + 1 < argc) {
			cfg.max_transfers = (unsigned)atoi(argv[++i]);
		} else if (!strcmp(argv[i], "--idle-timeout-ms") && i + 1 < argc) {
			cfg.idle_timeout_ms = (unsigned)atoi(argv[++i]);
		} else {
			usage();
		}
	}
	if (cfg.nacl == 0) {                    /* loopback by default */
		prefix_parse("127.0.0.0/8", &acl[0]);
		prefix_parse("::1", &acl[1]);
		cfg.nacl = 2;
	}
	struct sockaddr_storage ss;
	if (addr_parse(argv[4], argv[5], &ss, &cfg.family, cfg.addr) < 0)
		usage();
	cfg.port = (uint16_t)atoi(argv[5]);
	served = open_store(argv[2], argv[3]);
	uv_loop_t *loop = uv_default_loop();
	char err[512];
	if (xfrserv_start(&server, loop, &cfg, lookup, NULL, err, sizeof(err)) < 0) {
		fprintf(stderr, "aggtool: %s\n", err);
		return 1;
	}
	uv_signal_init(loop, &sig_hup);
	uv_signal_init(loop, &sig_term);
	uv_signal_init(loop, &sig_int);
	uv_signal_start(&sig_hup, on_hup, SIGHUP);
	uv_signal_start(&sig_term, on_term, SIGTERM);
	uv_signal_start(&sig_int, on_term, SIGINT);
	printf("ready port %u\n", xfrserv_port(server));
	fflush(stdout);
	uv_run(loop, UV_RUN_DEFAULT);
	aggstore_close(served);
	uv_loop_close(loop);
	return 0;
}

/* fetch */
static int fetch_status = 1;

static void fetched(void *ctx, const struct xfrcli_result *r)
{
	static const char *const cuts[XFRCLI_CUTS] = { "", "names", "bytes", "idle", "time", "version", "digest", "tsig" };
	printf("{\"status\": %d, \"kind\": \"%s\", \"why\": \"%s\", \"cut\": \"%s\", \"had_version\": %s, "
	       "\"from\": %u, \"to\": %u, \"versions\": %u, \"bytes\": %llu, \"seconds\": %.6f}\n",
	       r->status, r->kind, r->why, cuts[r->cut], r->had_version ? "true" : "false", r->from, r->to,
	       r->versions, (unsigned long long)r->bytes, r->seconds);
	fetch_status = r->status == 0 ? 0 : 1;
}

static int fetch(int argc, char **argv)
{
	if (argc < 6)
		usage();
	struct xfrcli_limits lim = { .idle_ms = 10000 };
	struct xfrcli_want want = { 0 };
	bool has_want = false;
	uint8_t digest[ATTEST_DIGEST_LEN];
	for (int i = 6; i < argc; i++) {
		if (!strcmp(argv[i], "--timeout-ms") && i + 1 < argc)
			lim.idle_ms = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--time-limit-ms") && i + 1 < argc)
			lim.time_ms = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--max-names") && i + 1 < argc)
			lim.max_names = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc)
			lim.max_bytes = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--version") && i + 1 < argc) {
			want.version = (uint32_t)strtoul(argv[++i], NULL, 10);
			has_want = true;
		} else if (!strcmp(argv[i], "--digest") && i + 1 < argc) {
			const char *h = argv[++i];
			if (strlen(h) != 2 * ATTEST_DIGEST_LEN)
				usage();
			for (size_t k = 0; k < ATTEST_DIGEST_LEN; k++)
				if (sscanf(h + 2 * k, "%2hhx", &digest[k]) != 1)
					usage();
			want.digest = digest;
		} else if (!strcmp(argv[i], "--whole"))
			want.whole = true;
		else
			usage();
	}
	struct sockaddr_storage ss;
	int family;
	uint8_t addr[16];
	if (addr_parse(argv[4], argv[5], &ss, &family, addr) < 0)
		usage();
	struct aggstore *s = open_store(argv[2], argv[3]);
	uv_loop_t *loop = uv_default_loop();
	struct xfrcli *c;
	if (xfrcli_fetch(&c, loop, s, (struct sockaddr *)&ss, NULL, &lim, has_want ? &want : NULL, fetched, NULL) < 0)
		return 1;
	uv_run(loop, UV_RUN_DEFAULT);
	aggstore_close(s);
	uv_loop_close(loop);
	return fetch_status;
}

static int show(int argc, char **argv)
{
	if (argc < 4)
		usage();
	struct aggstore *s = open_store(argv[2], argv[3]);
	struct aggstore_stats st;
	aggstore_stats(s, &st);
	if (argc > 4 && !strcmp(argv[4], "--members")) {
		size_t pos = 0;
		const uint8_t *w;
		uint8_t l;
		while (nameset_next(aggstore_members(s), &pos, &w, &l)) {
			struct name n;
			char text[NAME_MAX_TEXT];
			name_from_wire(&n, w, l);
			name_to_text(&n, text, sizeof(text));
			printf("%s\n", text);
		}
	} else if (argc > 4 && !strcmp(argv[4], "--digest")) {
		uint8_t d[ATTEST_DIGEST_LEN];
		if (attest_member_digest(aggstore_members(s), d) < 0)
			return 1;
		for (size_t k = 0; k < ATTEST_DIGEST_LEN; k++)
			printf("%02x", d[k]);
		printf("\n");
	} else {
		printf("{\"has_version\": %s, \"version\": %u, \"members\": %u, \"snapshot_bytes\": %llu, "
		       "\"journal_bytes\": %llu, \"journal_versions\": %u, \"oldest_version\": %u}\n",
		       st.has_version ? "true" : "false", st.serial, st.members,
		       (unsigned long long)st.snapshot_bytes, (unsigned long long)st.journal_bytes,
		       st.journal_versions, st.oldest_serial);
	}
	aggstore_close(s);
	return 0;
}

int main(int argc, char **argv)
{
	log_init("aggtool", LOG_LVL_INFO, false);
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2)
		usage();
	if (!strcmp(argv[1], "define")) {
		if (argc != 6)
			usage();
		struct aggstore *s = open_store(argv[2], argv[3]);
		int rc = define_version(s, argv[4], (uint32_t)strtoul(argv[5], NULL, 10));
		aggstore_close(s);
		return rc < 0 ? 1 : 0;
	}
	if (!strcmp(argv[1], "serve"))
		return serve(argc, argv);
	if (!strcmp(argv[1], "fetch"))
		return fetch(argc, argv);
	if (!strcmp(argv[1], "show"))
		return show(argc, argv);
	usage();
}
