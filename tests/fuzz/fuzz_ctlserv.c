/*
 * The control server (lib/core/ctl.c) as a daemon runs it: the input is what a
 * local client writes on the control socket, in one connection, with a
 * command table like a daemon's behind ctl_dispatch.  Whatever is sent,
 * the server never crashes or leaks, and what comes back is the greeting
 * and then whole reply lines that parse, each reply ended by a final
 * line.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "ctl.h"
#include "log.h"
#include "stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void show_words(void *ctx, char **args, unsigned nargs, bool json, struct ctl_reply *r)
{
	(void)ctx;
	for (unsigned i = 0; i < nargs; i++)
		ctl_reply_line(r, CTL_DATA, json ? "{\"arg\":\"%s\"}" : "%s", args[i]);
}

/* a reply larger than the socket's buffer: 5 lines of 60 KB, the argument over and over */
static void show_many(void *ctx, char **args, unsigned nargs, bool json, struct ctl_reply *r)
{
	static char line[60001];
	(void)ctx;
	(void)nargs;
	(void)json;
	size_t len = strlen(args[0]);
	for (size_t i = 0; i < sizeof(line) - 1; i++)
		line[i] = args[0][i % len];
	for (unsigned i = 0; i < 5; i++)
		ctl_reply_line(r, CTL_DATA, "%s", line);
}

static void fail(void *ctx, char **args, unsigned nargs, bool json, struct ctl_reply *r)
{
	(void)ctx;
	(void)json;
	ctl_reply_end(r, CTL_ERR_FAILED, "failed: %s", nargs ? args[0] : "");
}

static const struct ctl_command commands[] = {
	{ "show route", 0, 3, true, show_words, "show route [NAME] [json]", "words back" },
	{ "show many", 1, 1, false, show_many, "show many WORD", "many lines" },
	{ "reload", 0, 1, false, fail, "reload", "fails" },
	CTL_CMD_SET_LOG_LEVEL,
	{ NULL, 0, 0, false, NULL, NULL, NULL },
};

static void on_command(void *ctx, int argc, char **argv, struct ctl_reply *r)
{
	ctl_dispatch(commands, ctx, argc, argv, r);
}

static uv_loop_t loop;
static struct ctl_server *server;
static struct sockaddr_un sun;
static char dir[] = "/tmp/fuzz_ctlserv.XXXXXX";

static void cleanup(void)
{
	ctl_server_close(server);
	uv_run(&loop, UV_RUN_DEFAULT);
	uv_loop_close(&loop);
	rmdir(dir);
}

static void setup(void)
{
	char err[256];
	if (!mkdtemp(dir) || uv_loop_init(&loop) != 0)
		abort();
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/ctl", dir);
	server = ctl_server_open(&loop, sun.sun_path, "fuzz", on_command, NULL, err, sizeof(err));
	if (!server) {
		fprintf(stderr, "fuzz_ctlserv: %s\n", err);
		abort();
	}
	atexit(cleanup);
}

struct reader {
	char line[CTL_MAX_REPLY_LINE + 8];
	size_t len;
	unsigned lines;
	bool more;              /* inside a reply */
};

static void on_reply(void *arg, const uint8_t *data, size_t len)
{
	struct reader *rd = arg;
	for (size_t i = 0; i < len; i++) {
		if (data[i] != '\n') {
			if (rd->len == CTL_MAX_REPLY_LINE)
				abort();
			rd->line[rd->len++] = (char)data[i];
			continue;
		}
		rd->line[rd->len] = 0;
		int code;
		bool more;
		const char *text;
		if (ctl_parse_line(rd->line, rd->len, &code, &more, &text) < 0)
			abort();
		if (rd->lines == 0 && (code != CTL_GREETING || more || strcmp(text, "fuzz ready.") != 0))
			abort();
		rd->more = more;
		rd->lines++;
		rd->len = 0;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!server)
		setup();
	log_set_level(LOG_LVL_ERR);
	struct reader *rd = calloc(1, sizeof(*rd));
	if (!rd)
		abort();
	stream_exchange(&loop, (struct sockaddr *)&sun, sizeof(sun), data, size, on_reply, rd);
	/* the greeting at least, and no reply cut short */
	if (rd->lines == 0 || rd->len != 0 || rd->more) {
		fprintf(stderr, "fuzz_ctlserv: reply cut short after %u lines\n", rd->lines);
		abort();
	}
	free(rd);
	return 0;
}
