/*
 * Configuration parser: any input must parse or fail with a file:line
 * message, and a parsed tree must hold the documented limits.  Every
 * argument helper then runs on every word, and dispatch on every level.
 *
 * Relative includes resolve against the working directory and will almost
 * always fail to open; that error path is part of what is fuzzed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "conf.h"
#include "metrics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_error(const char *err)
{
	/* "file:line: reason" or "file: reason", never empty */
	if (!err[0] || !strstr(err, ": "))
		abort();
}

static void check_args(const struct conf_stmt *s)
{
	static const char *const choices[] = { "on", "off", "auto", "fast", NULL };
	char err[CONF_ERR_LEN];
	uint8_t addr[16];
	unsigned len, ch;
	uint64_t u;
	bool b;
	int fam;

	/* one past the end exercises the missing-value path */
	for (unsigned i = 0; i <= s->argc; i++) {
		if (conf_arg_uint(s, i, 0, UINT64_MAX, &u, err, sizeof(err)) < 0)
			check_error(err);
		if (conf_arg_uint(s, i, 1, 64, &u, err, sizeof(err)) == 0 && (u < 1 || u > 64))
			abort();
		if (conf_arg_bool(s, i, &b, err, sizeof(err)) < 0)
			check_error(err);
		if (conf_arg_duration_ms(s, i, 0, UINT64_MAX, &u, err, sizeof(err)) < 0)
			check_error(err);
		if (conf_arg_duration_ms(s, i, 100, 3600000, &u, err, sizeof(err)) == 0 &&
		    (u < 100 || u > 3600000))
			abort();
		if (conf_arg_addr(s, i, &fam, addr, err, sizeof(err)) < 0)
			check_error(err);
		else if (fam != AF_INET && fam != AF_INET6)
			abort();
		if (conf_arg_prefix(s, i, &fam, addr, &len, err, sizeof(err)) < 0)
			check_error(err);
		else if (!((fam == AF_INET && len <= 32) || (fam == AF_INET6 && len <= 128)))
			abort();
		if (conf_arg_choice(s, i, choices, &ch, err, sizeof(err)) < 0)
			check_error(err);
		else if (ch > 3)
			abort();
	}
	/* the handlers of the keywords both daemons share (lib/ops/metrics.h) */
	struct metrics_config m = { 0 };
	if (metrics_conf_listen(s, &m, err, sizeof(err)) < 0)
		check_error(err);
	else if (!m.enabled || m.port == 0 || (m.family != AF_INET && m.family != AF_INET6))
		abort();
	if (metrics_conf_allow(s, &m, err, sizeof(err)) < 0)
		check_error(err);
	else if (m.nallow != 1 || m.allow[0].len > (m.allow[0].family == AF_INET ? 32 : 128))
		abort();
}

static void walk(const struct conf_stmt *s, unsigned depth)
{
	for (; s; s = s->next) {
		if (depth > CONF_MAX_DEPTH || s->argc == 0 || s->argc > CONF_MAX_ARGS || s->argv[s->argc] || !s->file ||
		    s->line == 0 || (!s->has_block && s->block) || strcmp(s->argv[0], "include") == 0)
			abort();
		for (unsigned i = 0; i < s->argc; i++)
			if (strlen(s->argv[i]) > CONF_MAX_WORD)
				abort();
		check_args(s);
		walk(s->block, depth + 1);
	}
}

static int descend(const struct conf_stmt *s, void *ctx, char *err, size_t err_len);

static const struct conf_keyword table[] = {
	{ "listen", 2, 4, CONF_NO_BLOCK, NULL },
	{ "workers", 2, 2, CONF_NO_BLOCK, NULL },
	{ "router-name", 2, 2, CONF_NO_BLOCK, NULL },
	{ "route", 2, 2, CONF_BLOCK, descend },
	{ "server", 2, CONF_MAX_ARGS, CONF_BLOCK_OPTIONAL, descend },
	{ "options", 1, 1, CONF_BLOCK_OPTIONAL, descend },
	{ NULL, 0, 0, 0, NULL },
};

static int descend(const struct conf_stmt *s, void *ctx, char *err, size_t err_len)
{
	return conf_dispatch(s->block, table, ctx, err, err_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[CONF_ERR_LEN];
	struct conf *c;

	c = conf_parse_text((const char *)data, size, "fuzz.conf", err, sizeof(err));
	if (!c) {
		check_error(err);
		return 0;
	}
	walk(c->first, 0);
	if (conf_dispatch(c->first, table, NULL, err, sizeof(err)) < 0)
		check_error(err);
	conf_free(c);
	return 0;
}
