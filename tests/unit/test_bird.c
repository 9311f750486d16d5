/*
 * The BIRD client: the reply reader over real BIRD 2.0.12 recordings
 * (bird_replies/), bird_parse_route on each, and the libuv client against
 * a fake BIRD served from the same loop.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <signal.h>
#include <unistd.h>
#include <cmocka.h>
#include <uv.h>

#include "bird.h"
#include "bird_replies/replies.h"

static const struct bird_recording *rec(const char *name)
{
	for (size_t i = 0; i < sizeof(bird_recordings) / sizeof(bird_recordings[0]); i++)
		if (strcmp(bird_recordings[i].name, name) == 0)
			return &bird_recordings[i];
	fail_msg("no recording %s", name);
	return NULL;
}

/* ---- reader helpers ------------------------------------------------------------ */

#define MAX_EVENTS 64

struct events {
	unsigned n;
	int type[MAX_EVENTS];
	struct bird_reply *reply[MAX_EVENTS];
	char async[MAX_EVENTS][256];
	bool error;
	char err[128];
};

static void events_free(struct events *ev)
{
	for (unsigned i = 0; i < ev->n; i++)
		bird_reply_free(ev->reply[i]);
	memset(ev, 0, sizeof(*ev));
}

/* Feeds one piece, collecting every event. */
static void feed_piece(struct bird_reader *rd, const char *data, size_t len, struct events *ev)
{
	for (;;) {
		size_t used;
		enum bird_event e = bird_reader_feed(rd, data, len, &used);
		assert_true(used <= len);
		data += used;
		len -= used;
		if (e == BIRD_EV_MORE) {
			assert_int_equal(len, 0);
			return;
		}
		if (e == BIRD_EV_ERROR) {
			ev->error = true;
			snprintf(ev->err, sizeof(ev->err), "%s", bird_reader_error(rd));
			return;
		}
		assert_true(ev->n < MAX_EVENTS);
		ev->type[ev->n] = e;
		if (e == BIRD_EV_REPLY) {
			ev->reply[ev->n] = bird_reader_take_reply(rd);
			assert_non_null(ev->reply[ev->n]);
		} else {
			size_t alen;
			const char *a = bird_reader_async(rd, &alen);
			assert_int_equal(strlen(a), alen);
			snprintf(ev->async[ev->n], sizeof(ev->async[0]), "%s", a);
		}
		ev->n++;
		if (len == 0)
			return;
	}
}

static void feed_split(const char *data, size_t len, size_t at, struct events *ev)
{
	struct bird_reader rd;
	bird_reader_init(&rd);
	feed_piece(&rd, data, at, ev);
	if (!ev->error)
		feed_piece(&rd, data + at, len - at, ev);
	bird_reader_free(&rd);
}

static void feed_bytewise(const char *data, size_t len, struct events *ev)
{
	struct bird_reader rd;
	bird_reader_init(&rd);
	for (size_t i = 0; i < len && !ev->error; i++)
		feed_piece(&rd, data + i, 1, ev);
	bird_reader_free(&rd);
}

static void assert_same_replies(const struct bird_reply *a, const struct bird_reply *b)
{
	assert_int_equal(a->code, b->code);
	assert_string_equal(a->text, b->text);
	assert_int_equal(a->nlines, b->nlines);
	for (size_t i = 0; i < a->nlines; i++) {
		assert_int_equal(a->lines[i].code, b->lines[i].code);
		assert_int_equal(a->lines[i].len, b->lines[i].len);
		assert_memory_equal(a->lines[i].text, b->lines[i].text, a->lines[i].len + 1);
	}
}

static void assert_same_events(const struct events *a, const struct events *b)
{
	assert_int_equal(a->error, b->error);
	assert_int_equal(a->n, b->n);
	for (unsigned i = 0; i < a->n; i++) {
		assert_int_equal(a->type[i], b->type[i]);
		if (a->type[i] == BIRD_EV_REPLY)
			assert_same_replies(a->reply[i], b->reply[i]);
		else
			assert_string_equal(a->async[i], b->async[i]);
	}
}

/* The reply as BIRD wrote it: the lines and codes checked against the bytes. */
static void check_against_bytes(const struct bird_reply *r, const char *data, size_t len)
{
	size_t i = 0, line = 0;
	int last = -1;
	while (i < len) {
		const char *nl = memchr(data + i, '\n', len - i);
		assert_non_null(nl);
		size_t n = (size_t)(nl - (data + i));
		const char *l = data + i;
		i += n + 1;
		if (l[0] == '+')
			continue;
		assert_true(line < r->nlines);
		const struct bird_line *bl = &r->lines[line++];
		if (l[0] == ' ') {
			assert_int_equal(bl->code, last);
			assert_int_equal(bl->len, n - 1);
			assert_memory_equal(bl->text, l + 1, n - 1);
		} else {
			assert_int_equal(bl->code, atoi((char[5]){ l[0], l[1], l[2], l[3], 0 }));
			assert_int_equal(bl->len, n - 5);
			assert_memory_equal(bl->text, l + 5, n - 5);
		}
		assert_int_equal(bl->text[bl->len], 0);
		last = bl->code;
	}
	assert_int_equal(line, r->nlines);
}

/* ---- the reader ------------------------------------------------------------------ */

static void recordings_match_their_files(void **state)
{
	(void)state;
	/* tests/unit/meson.build names the source directory */
	const char *dir = getenv("CR_UNIT_DIR");
	if (!dir)
		fail_msg("CR_UNIT_DIR not set: run the test with meson test");
	for (size_t i = 0; i < sizeof(bird_recordings) / sizeof(bird_recordings[0]); i++) {
		char path[700];
		snprintf(path, sizeof(path), "%s/bird_replies/%s.txt", dir, bird_recordings[i].name);
		FILE *f = fopen(path, "rb");
		if (!f)
			fail_msg("%s: %s", path, strerror(errno));
		char buf[8192];
		size_t n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		if (n != bird_recordings[i].len || memcmp(buf, bird_recordings[i].data, n) != 0)
			fail_msg("%s differs from replies.h: run bird_replies/gen.py", path);
	}
}

static void every_recording_whole_bytewise_and_split(void **state)
{
	for (size_t k = 0; k < sizeof(bird_recordings) / sizeof(bird_recordings[0]); k++) {
		const struct bird_recording *r = &bird_recordings[k];
		struct events whole = { 0 };
		feed_split(r->data, r->len, r->len, &whole);
		assert_false(whole.error);
		if (strcmp(r->name, "session_echo") != 0) {
			assert_int_equal(whole.n, 1);
			assert_int_equal(whole.type[0], BIRD_EV_REPLY);
			check_against_bytes(whole.reply[0], r->data, r->len);
		}
		struct events bytes = { 0 };
		feed_bytewise(r->data, r->len, &bytes);
		assert_same_events(&whole, &bytes);
		events_free(&bytes);
		for (size_t at = 0; at <= r->len; at++) {
			struct events split = { 0 };
			feed_split(r->data, r->len, at, &split);
			assert_same_events(&whole, &split);
			events_free(&split);
		}
		events_free(&whole);
	}
}

static void continuation_lines_take_the_code_before(void **state)
{
	const struct bird_recording *r = rec("route_two");
	struct events ev = { 0 };
	feed_split(r->data, r->len, r->len, &ev);
	const struct bird_reply *rp = ev.reply[0];
	static const struct { int code; const char *text; } want[] = {
		{ 1007, "Table master4:" },
		{ 1007, "10.21.0.0/16         unicast [st1 03:25:40.493] * (200)" },
		{ 1007, "\tvia 192.0.2.253 on eth0" },
		{ 1008, "\tType: static univ" },
		{ 1012, "\tOSPF.metric1: 20" },
		{ 1012, "\tOSPF.metric2: 3" },
		{ 1012, "\tOSPF.tag: 0x00000007" },
		{ 1007, "                     unicast [peera 03:25:44.505 from 127.0.0.1] (100) [AS65001i]" },
		{ 1007, "\tvia 192.0.2.254 on eth0" },
		{ 1008, "\tType: BGP univ" },
		{ 1012, "\tBGP.origin: IGP" },
		{ 1012, "\tBGP.as_path: 65001" },
		{ 1012, "\tBGP.next_hop: 192.0.2.254" },
		{ 1012, "\tBGP.local_pref: 100" },
		{ 0, "" },
	};
	assert_int_equal(rp->nlines, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < rp->nlines; i++) {
		assert_int_equal(rp->lines[i].code, want[i].code);
		assert_string_equal(rp->lines[i].text, want[i].text);
	}
	assert_int_equal(rp->code, 0);
	assert_false(bird_reply_is_error(rp));
	events_free(&ev);
}

static void a_reply_ends_at_its_final_line_not_at_the_read(void **state)
{
	const struct bird_recording *a = rec("greeting"), *b = rec("route_bgp"), *c = rec("route_none");
	char buf[4096];
	size_t len = 0;
	memcpy(buf + len, a->data, a->len);
	len += a->len;
	memcpy(buf + len, b->data, b->len);
	len += b->len;
	memcpy(buf + len, c->data, c->len);
	len += c->len;

	struct bird_reader rd;
	bird_reader_init(&rd);
	size_t used;
	assert_int_equal(bird_reader_feed(&rd, buf, len, &used), BIRD_EV_REPLY);
	assert_int_equal(used, a->len);
	struct bird_reply *r = bird_reader_take_reply(&rd);
	assert_int_equal(r->code, 1);
	assert_string_equal(r->text, "BIRD 2.0.12 ready.");
	assert_int_equal(r->nlines, 1);
	bird_reply_free(r);
	assert_null(bird_reader_take_reply(&rd));

	size_t off = used;
	assert_int_equal(bird_reader_feed(&rd, buf + off, len - off, &used), BIRD_EV_REPLY);
	assert_int_equal(used, b->len);
	r = bird_reader_take_reply(&rd);
	assert_int_equal(r->code, 0);
	assert_int_equal(r->nlines, 9);
	bird_reply_free(r);

	off += used;
	assert_int_equal(bird_reader_feed(&rd, buf + off, len - off, &used), BIRD_EV_REPLY);
	assert_int_equal(used, c->len);
	r = bird_reader_take_reply(&rd);
	assert_int_equal(r->code, 8001);
	assert_string_equal(r->text, "Network not found");
	bird_reply_free(r);
	off += used;
	assert_int_equal(off, len);

	/* a reply not taken is dropped at the next feed, not leaked */
	assert_int_equal(bird_reader_feed(&rd, a->data, a->len, &used), BIRD_EV_REPLY);
	assert_int_equal(bird_reader_feed(&rd, a->data, a->len, &used), BIRD_EV_REPLY);
	bird_reader_free(&rd);
}

static void async_lines_before_between_and_inside_replies(void **state)
{
	static const char in[] =
		"+Reconfiguring\n"
		"1007-Table master4:\n"
		"+kernel1: Received route 10.9.0.0/16 with strange next-hop\n"
		" 10.1.2.0/24          unicast [st2 03:25:40.493] * (50/5)\n"
		"+\n"
		" \tvia 192.0.2.253 on eth0\n"
		"1008-\tType: static univ\n"
		"0000 \n"
		"+after\n"
		"0001 BIRD 2.0.12 ready.\n";
	size_t len = sizeof(in) - 1;
	struct events whole = { 0 };
	feed_split(in, len, len, &whole);
	assert_false(whole.error);
	assert_int_equal(whole.n, 6);
	assert_int_equal(whole.type[0], BIRD_EV_ASYNC);
	assert_string_equal(whole.async[0], "Reconfiguring");
	assert_int_equal(whole.type[1], BIRD_EV_ASYNC);
	assert_string_equal(whole.async[1], "kernel1: Received route 10.9.0.0/16 with strange next-hop");
	assert_int_equal(whole.type[2], BIRD_EV_ASYNC);
	assert_string_equal(whole.async[2], "");
	assert_int_equal(whole.type[3], BIRD_EV_REPLY);
	const struct bird_reply *r = whole.reply[3];
	assert_int_equal(r->nlines, 5);
	/* the continuation after an async line still has the reply's code */
	assert_int_equal(r->lines[1].code, 1007);
	assert_int_equal(r->lines[2].code, 1007);
	assert_string_equal(r->lines[2].text, "\tvia 192.0.2.253 on eth0");
	assert_int_equal(r->lines[3].code, 1008);
	assert_int_equal(whole.type[4], BIRD_EV_ASYNC);
	assert_string_equal(whole.async[4], "after");
	assert_int_equal(whole.type[5], BIRD_EV_REPLY);
	assert_int_equal(whole.reply[5]->code, 1);
	for (size_t at = 0; at <= len; at++) {
		struct events split = { 0 };
		feed_split(in, len, at, &split);
		assert_same_events(&whole, &split);
		events_free(&split);
	}
	struct events bytes = { 0 };
	feed_bytewise(in, len, &bytes);
	assert_same_events(&whole, &bytes);
	events_free(&bytes);
	events_free(&whole);
}

static void the_recorded_echo_session(void **state)
{
	const struct bird_recording *s = rec("session_echo");
	struct events ev = { 0 };
	feed_split(s->data, s->len, s->len, &ev);
	assert_false(ev.error);
	static const int types[] = { BIRD_EV_REPLY, BIRD_EV_REPLY, BIRD_EV_REPLY, BIRD_EV_ASYNC,
				     BIRD_EV_REPLY, BIRD_EV_ASYNC, BIRD_EV_REPLY };
	assert_int_equal(ev.n, sizeof(types) / sizeof(types[0]));
	for (unsigned i = 0; i < ev.n; i++)
		assert_int_equal(ev.type[i], types[i]);
	assert_int_equal(ev.reply[0]->code, 1);
	assert_int_equal(ev.reply[1]->code, 0);               /* echo all */
	assert_int_equal(ev.reply[2]->lines[0].code, 9);      /* 0009-st1: disabled */
	assert_string_equal(ev.reply[2]->lines[0].text, "st1: disabled");
	assert_string_equal(ev.async[3], "Disabling protocol st1");
	assert_string_equal(ev.async[5], "Enabling protocol st1");
	struct bird_route_info ri;
	assert_int_equal(bird_parse_route(ev.reply[6], &ri), 0);
	assert_true(ri.found);
	assert_true(ri.reachable);
	events_free(&ev);
}

static void error_replies_are_replies(void **state)
{
	static const struct { const char *name; int code; const char *text; } want[] = {
		{ "err_syntax", 9001, "syntax error, unexpected END, expecting IP4 or IP6 or VPN_RD or CF_SYM_KNOWN" },
		{ "err_badaddr", 9001, "Invalid IPv4 address 300.1.1.1" },
		{ "err_noospf", 9001, "There is no OSPF protocol running" },
		{ "err_denied", 8007, "Access denied" },
		{ "route_none", 8001, "Network not found" },
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct bird_recording *r = rec(want[i].name);
		struct events ev = { 0 };
		feed_split(r->data, r->len, r->len, &ev);
		assert_int_equal(ev.n, 1);
		assert_int_equal(ev.reply[0]->code, want[i].code);
		assert_string_equal(ev.reply[0]->text, want[i].text);
		assert_int_equal(ev.reply[0]->nlines, 1);
		assert_true(bird_reply_is_error(ev.reply[0]));
		events_free(&ev);
	}
}

static void feed_one(const char *data, size_t len, struct events *ev)
{
	feed_split(data, len, len, ev);
}

static void long_lines_are_errors(void **state)
{
	char *big = malloc(BIRD_MAX_LINE + 16);
	/* exactly the limit: fine */
	memcpy(big, "1007-", 5);
	memset(big + 5, 'x', BIRD_MAX_LINE - 5);
	memcpy(big + BIRD_MAX_LINE, "\n0000 \n", 7);
	struct events ev = { 0 };
	feed_one(big, BIRD_MAX_LINE + 7, &ev);
	assert_false(ev.error);
	assert_int_equal(ev.n, 1);
	assert_int_equal(ev.reply[0]->lines[0].len, BIRD_MAX_LINE - 5);
	events_free(&ev);
	/* one more, whole, byte by byte, or without its newline yet */
	memset(big + 5, 'x', BIRD_MAX_LINE - 4);
	memcpy(big + BIRD_MAX_LINE + 1, "\n0000 \n", 7);
	feed_one(big, BIRD_MAX_LINE + 8, &ev);
	assert_true(ev.error);
	assert_non_null(strstr(ev.err, "longer"));
	events_free(&ev);
	feed_bytewise(big, BIRD_MAX_LINE + 8, &ev);
	assert_true(ev.error);
	events_free(&ev);
	feed_one(big, BIRD_MAX_LINE + 1, &ev);
	assert_true(ev.error);
	events_free(&ev);
	/* an async line too */
	big[0] = '+';
	feed_one(big, BIRD_MAX_LINE + 8, &ev);
	assert_true(ev.error);
	events_free(&ev);
	/* a lower bound */
	struct bird_reader rd;
	bird_reader_init(&rd);
	rd.max_line = 10;
	size_t used;
	assert_int_equal(bird_reader_feed(&rd, "0000 12345\n", 11, &used), BIRD_EV_REPLY);
	assert_int_equal(bird_reader_feed(&rd, "0000 123456\n", 12, &used), BIRD_EV_ERROR);
	/* broken until reset */
	assert_int_equal(bird_reader_feed(&rd, "0000 \n", 6, &used), BIRD_EV_ERROR);
	assert_int_equal(used, 0);
	bird_reader_reset(&rd);
	assert_int_equal(bird_reader_feed(&rd, "0000 \n", 6, &used), BIRD_EV_REPLY);
	assert_string_equal(bird_reader_error(&rd), "");
	bird_reader_free(&rd);
	free(big);
}

static void too_many_lines_or_bytes_are_errors(void **state)
{
	struct bird_reader rd;
	size_t used;
	static const char four[] = "1000-a\n b\n c\n0000 d\n";
	bird_reader_init(&rd);
	rd.max_lines = 4;
	assert_int_equal(bird_reader_feed(&rd, four, sizeof(four) - 1, &used), BIRD_EV_REPLY);
	rd.max_lines = 3;
	assert_int_equal(bird_reader_feed(&rd, four, sizeof(four) - 1, &used), BIRD_EV_ERROR);
	assert_non_null(strstr(bird_reader_error(&rd), "lines"));
	bird_reader_reset(&rd);
	/* text plus a NUL per line: 2 + 2 + 2 + 2 = 8 bytes */
	rd.max_lines = 100;
	rd.max_bytes = 8;
	assert_int_equal(bird_reader_feed(&rd, four, sizeof(four) - 1, &used), BIRD_EV_REPLY);
	rd.max_bytes = 7;
	assert_int_equal(bird_reader_feed(&rd, four, sizeof(four) - 1, &used), BIRD_EV_ERROR);
	assert_non_null(strstr(bird_reader_error(&rd), "bytes"));
	bird_reader_free(&rd);

	/* the default bound on lines, line by line */
	bird_reader_init(&rd);
	enum bird_event e = BIRD_EV_MORE;
	size_t i;
	for (i = 0; i <= BIRD_MAX_REPLY_LINES && e == BIRD_EV_MORE; i++)
		e = bird_reader_feed(&rd, i ? " x\n" : "1007-x\n", i ? 3 : 7, &used);
	assert_int_equal(e, BIRD_EV_ERROR);
	assert_int_equal(i, BIRD_MAX_REPLY_LINES + 1);
	bird_reader_free(&rd);
}

static void garbage_is_an_error(void **state)
{
	static const char *const bad[] = {
		"hello\n", "\n", "0000\n", "123 x\n", "12345 x\n", "abcd-x\n", "0000:x\n",
		"-100 x\n", " leading continuation\n", "\t1000-x\n", "1000_x\n",
		"1007-Table\n\n0000 \n", "1007-x\n0000\n", "0001 BIRD\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct events ev = { 0 };
		feed_one(bad[i], strlen(bad[i]), &ev);
		if (!ev.error)
			fail_msg("'%s' accepted", bad[i]);
		events_free(&ev);
	}
	static const char nul[] = "1000-a\0b\n0000 \n";
	struct events ev = { 0 };
	feed_one(nul, sizeof(nul) - 1, &ev);
	assert_true(ev.error);
	assert_non_null(strstr(ev.err, "NUL"));
	events_free(&ev);
	/* a partial reply is freed by reset and free */
	struct bird_reader rd;
	size_t used;
	bird_reader_init(&rd);
	assert_int_equal(bird_reader_feed(&rd, "1000-a\n b\n", 10, &used), BIRD_EV_MORE);
	bird_reader_reset(&rd);
	assert_int_equal(bird_reader_feed(&rd, " b\n", 3, &used), BIRD_EV_ERROR);
	bird_reader_reset(&rd);
	assert_int_equal(bird_reader_feed(&rd, "1000-a\n b\n", 10, &used), BIRD_EV_MORE);
	bird_reader_free(&rd);
}

/* ---- bird_parse_route -------------------------------------------------------------- */

static struct bird_reply *reply_of(const char *data, size_t len)
{
	struct bird_reader rd;
	bird_reader_init(&rd);
	size_t used;
	enum bird_event e = bird_reader_feed(&rd, data, len, &used);
	assert_int_equal(e, BIRD_EV_REPLY);
	assert_int_equal(used, len);
	struct bird_reply *r = bird_reader_take_reply(&rd);
	bird_reader_free(&rd);
	return r;
}

/* show status: BIRD's uptime, from the recording and from edited copies */
static void parse_uptime(void **state)
{
	(void)state;
	const struct bird_recording *rc = rec("status");
	struct bird_reply *r = reply_of(rc->data, rc->len);
	uint64_t ms = 0;
	assert_int_equal(bird_parse_uptime(r, &ms), 0);
	assert_int_equal(ms, 20486);            /* 03:26:00.979 - 03:25:40.493 */
	bird_reply_free(r);

	static const struct { const char *text; int rv; uint64_t ms; } cases[] = {
		{ "1011-Current server time is 2026-03-01 00:00:01\n Last reboot on 2026-02-28 23:59:59.5\n"
		  "0013 Daemon is up and running\n", 0, 1500 },
		{ "1011-Current server time is 2024-03-01 00:00:00.000\n Last reboot on 2024-02-29 00:00:00.000\n"
		  "0013 Daemon is up and running\n", 0, 86400000 },          /* a leap day */
		{ "1011-Current server time is 2026-01-01 00:00:00.123456\n Last reboot on 2025-12-31 23:00:00\n"
		  "0025 Graceful restart recovery in progress\n", 0, 3600123 },
		{ "1011-Current server time is 2026-01-01 00:00:00\n"
		  "0013 Daemon is up and running\n", -1, 0 },                 /* no reboot line */
		{ "1011-Current server time is 01.01.2026 00:00:00\n Last reboot on 2025-12-31 23:00:00\n"
		  "0013 Daemon is up and running\n", -1, 0 },                 /* another timeformat */
		{ "1011-Current server time is 2026-01-01 00:00:00\n Last reboot on 2026-01-01 00:00:01\n"
		  "0013 Daemon is up and running\n", -1, 0 },                 /* rebooted later */
		{ "1011-Current server time is 2026-13-01 00:00:00\n Last reboot on 2026-01-01 00:00:00\n"
		  "0013 Daemon is up and running\n", -1, 0 },
		{ "1011-Current server time is 2026-01-01 00:00:00.\n Last reboot on 2026-01-01 00:00:00\n"
		  "0013 Daemon is up and running\n", -1, 0 },
		{ "1011-Current server time is 2026-01-01 00:00:00 \n Last reboot on 2026-01-01 00:00:00\n"
		  "0013 Daemon is up and running\n", -1, 0 },
		{ "9001 syntax error, unexpected CF_SYM_UNDEFINED\n", -1, 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		r = reply_of(cases[i].text, strlen(cases[i].text));
		ms = 0;
		assert_int_equal(bird_parse_uptime(r, &ms), cases[i].rv);
		if (cases[i].rv == 0)
			assert_int_equal(ms, cases[i].ms);
		bird_reply_free(r);
	}
}

static int parse_rec(const char *name, struct bird_route_info *ri)
{
	const struct bird_recording *rc = rec(name);
	struct bird_reply *r = reply_of(rc->data, rc->len);
	int rv = bird_parse_route(r, ri);
	bird_reply_free(r);
	return rv;
}

static int parse_text(const char *text, struct bird_route_info *ri)
{
	struct bird_reply *r = reply_of(text, strlen(text));
	int rv = bird_parse_route(r, ri);
	bird_reply_free(r);
	return rv;
}

static void assert_nh(const struct bird_route_info *ri, const char *addr, const char *iface)
{
	if (!addr) {
		assert_int_equal(ri->nh_family, 0);
	} else {
		char buf[INET6_ADDRSTRLEN];
		assert_non_null(inet_ntop(ri->nh_family, ri->nh_addr, buf, sizeof(buf)));
		assert_string_equal(buf, addr);
	}
	assert_string_equal(ri->nh_iface, iface);
}

static void parse_reachable_recordings(void **state)
{
	struct bird_route_info ri;

	assert_int_equal(parse_rec("route_static_bgppath", &ri), 0);
	assert_true(ri.found && ri.reachable && ri.best);
	assert_string_equal(ri.net, "10.1.2.0/24");
	assert_string_equal(ri.dest, "unicast");
	assert_string_equal(ri.protocol, "st2");
	assert_string_equal(ri.source, "static");
	assert_int_equal(ri.igp_metric, 5);
	assert_int_equal(ri.metric_source, BIRD_METRIC_IGP);
	assert_int_equal(ri.as_path_len, 3);
	assert_false(ri.as_path_truncated);
	assert_int_equal(ri.nroutes, 1);
	assert_nh(&ri, "192.0.2.253", "eth0");

	/* without "all": the metric from the route line only */
	assert_int_equal(parse_rec("route_plain", &ri), 0);
	assert_true(ri.found && ri.reachable);
	assert_int_equal(ri.igp_metric, 5);
	assert_int_equal(ri.metric_source, BIRD_METRIC_ROUTE_LINE);
	assert_int_equal(ri.as_path_len, 0);
	assert_string_equal(ri.source, "");
	assert_nh(&ri, "192.0.2.253", "eth0");

	/* the best of two: static with OSPF attributes, before a BGP alternative */
	assert_int_equal(parse_rec("route_two", &ri), 0);
	assert_true(ri.found && ri.reachable && ri.best);
	assert_string_equal(ri.protocol, "st1");
	assert_string_equal(ri.net, "10.21.0.0/16");
	assert_int_equal(ri.nroutes, 2);
	assert_int_equal(ri.igp_metric, 20);
	assert_int_equal(ri.metric_source, BIRD_METRIC_OSPF);
	assert_int_equal(ri.as_path_len, 0);
	assert_nh(&ri, "192.0.2.253", "eth0");

	assert_int_equal(parse_rec("route_bgp", &ri), 0);
	assert_true(ri.found && ri.reachable);
	assert_string_equal(ri.protocol, "peera");
	assert_string_equal(ri.source, "BGP");
	assert_int_equal(ri.as_path_len, 3);
	assert_int_equal(ri.igp_metric, 0);
	assert_int_equal(ri.metric_source, BIRD_METRIC_NONE);
	assert_nh(&ri, "192.0.2.254", "eth0");

	/* the first next hop as BIRD lists them (heaviest first) */
	assert_int_equal(parse_rec("route_multipath", &ri), 0);
	assert_true(ri.reachable);
	assert_nh(&ri, "192.0.2.254", "eth0");

	assert_int_equal(parse_rec("route_dev", &ri), 0);
	assert_true(ri.found && ri.reachable);
	assert_nh(&ri, NULL, "lo");

	assert_int_equal(parse_rec("route_direct", &ri), 0);
	assert_true(ri.found && ri.reachable);
	assert_string_equal(ri.protocol, "direct1");
	assert_string_equal(ri.source, "device");
	assert_string_equal(ri.net, "192.0.2.0/24");
	assert_nh(&ri, NULL, "eth0");

	assert_int_equal(parse_rec("route_v6", &ri), 0);
	assert_true(ri.found && ri.reachable);
	assert_string_equal(ri.net, "2001:db8:1::/48");
	assert_int_equal(ri.nh_family, AF_INET6);
	assert_nh(&ri, "fd00::1", "eth0");

	/* BIRD cut the 300-AS path: 43 whole numbers shown, then "42..." */
	assert_int_equal(parse_rec("route_longpath", &ri), 0);
	assert_true(ri.reachable);
	assert_int_equal(ri.as_path_len, 43);
	assert_true(ri.as_path_truncated);
}

static void parse_unreachable_and_missing_recordings(void **state)
{
	struct bird_route_info ri;
	static const struct { const char *name, *dest, *proto; } unreach[] = {
		{ "route_unreachable", "unreachable", "st1" },
		{ "route_blackhole", "blackhole", "st1" },
		{ "route_prohibited", "prohibited", "st1" },
		{ "route_v6_unreach", "unreachable", "st6" },
		{ "route_bgp_unresolved", "unreachable", "peera" },
	};
	for (size_t i = 0; i < sizeof(unreach) / sizeof(unreach[0]); i++) {
		assert_int_equal(parse_rec(unreach[i].name, &ri), 0);
		assert_true(ri.found);
		assert_false(ri.reachable);
		assert_true(ri.best);
		assert_string_equal(ri.dest, unreach[i].dest);
		assert_string_equal(ri.protocol, unreach[i].proto);
		assert_nh(&ri, NULL, "");
	}
	assert_int_equal(parse_rec("route_bgp_unresolved", &ri), 0);
	assert_int_equal(ri.as_path_len, 1);

	assert_int_equal(parse_rec("route_none", &ri), 0);
	assert_false(ri.found);
	assert_false(ri.reachable);
	assert_int_equal(parse_rec("route_none6", &ri), 0);
	assert_false(ri.found);

	static const char *const errors[] = { "err_syntax", "err_badaddr", "err_noospf", "err_denied",
					      "greeting", "status" };
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++) {
		ri.found = true;
		if (parse_rec(errors[i], &ri) != -1)
			fail_msg("%s parsed as a route", errors[i]);
		assert_false(ri.found);
	}
	assert_int_equal(bird_parse_route(NULL, &ri), -1);
}

/* Not recordings: the forms of BIRD 2.0's route lines the test BIRD could not make. */
static void parse_other_forms(void **state)
{
	struct bird_route_info ri;
	/* an OSPF route (rt_show_rte + ospf_get_route_info) */
	assert_int_equal(parse_text(
		"1007-Table master4:\n"
		" 10.0.0.0/24          unicast [ospf1 2024-01-02 03:04:05] * E2 (150/10/10000) [10.0.0.9]\n"
		" \tvia 10.1.1.1 on ens3\n"
		"1008-\tType: OSPF-E2 univ\n"
		"1012-\tOSPF.metric1: 10\n"
		" \tOSPF.metric2: 10000\n"
		" \tOSPF.tag: 0x00000000\n"
		" \tOSPF.router_id: 10.0.0.9\n"
		"0000 \n", &ri), 0);
	assert_true(ri.found && ri.reachable);
	assert_string_equal(ri.protocol, "ospf1");
	assert_string_equal(ri.source, "OSPF-E2");
	assert_int_equal(ri.igp_metric, 10);
	assert_int_equal(ri.metric_source, BIRD_METRIC_OSPF);
	assert_nh(&ri, "10.1.1.1", "ens3");

	/* the best route not first, "!" as the mark, sets and confederations */
	assert_int_equal(parse_text(
		"1007-Table master4:\n"
		" 10.7.0.0/16          unicast [bgp1 10:00:00.000 from 192.0.2.9] (100/20) [AS65009i]\n"
		" \tvia 192.0.2.9 on eth0\n"
		"1012-\tBGP.as_path: 65009\n"
		"1007-                     unicast [bgp2 10:00:00.000 from 192.0.2.8] ! (100/30) [AS65004?]\n"
		" \tvia 192.0.2.8 on eth0 mpls 100/200 onlink\n"
		"1012-\tBGP.as_path: 65001 {65002 65003} (65010 65011) ({65012}) 65004\n"
		"0000 \n", &ri), 0);
	assert_true(ri.best && ri.reachable);
	assert_string_equal(ri.protocol, "bgp2");
	assert_string_equal(ri.net, "");        /* the net is on the first route's line */
	assert_int_equal(ri.nroutes, 2);
	assert_int_equal(ri.as_path_len, 3);
	assert_int_equal(ri.igp_metric, 30);
	assert_int_equal(ri.metric_source, BIRD_METRIC_ROUTE_LINE);
	assert_nh(&ri, "192.0.2.8", "eth0");

	/* no best mark: the first route; an empty AS path; "/-" and "/?" are no metric */
	assert_int_equal(parse_text(
		"1007-Table master4:\n"
		" 10.8.0.0/16          unreachable [bgp1 10:00:00.000 from 192.0.2.9] (100/-) [i]\n"
		"1012-\tBGP.as_path: \n"
		"1007-                     unicast [bgp2 10:00:00.000] (100/?) [i]\n"
		" \tdev eth1\n"
		"0000 \n", &ri), 0);
	assert_true(ri.found);
	assert_false(ri.best);
	assert_false(ri.reachable);
	assert_string_equal(ri.protocol, "bgp1");
	assert_int_equal(ri.as_path_len, 0);
	assert_int_equal(ri.metric_source, BIRD_METRIC_NONE);

	/* two tables: the first with a route is used */
	assert_int_equal(parse_text(
		"1007-Table t1:\n"
		" Table t2:\n"
		" 10.9.0.0/16          unicast [s1 10:00:00.000] * (200)\n"
		" \tvia 192.0.2.1 on eth0\n"
		" Table t3:\n"
		" 10.9.0.0/16          unicast [s2 10:00:00.000] * (200)\n"
		" \tvia 192.0.2.2 on eth0\n"
		"0000 \n", &ri), 0);
	assert_string_equal(ri.protocol, "s1");
	assert_int_equal(ri.nroutes, 1);

	/* igp_metric wins over OSPF.metric1; unicast without a next hop is not reachable */
	assert_int_equal(parse_text(
		"1007-Table master4:\n"
		" 10.10.0.0/16         unicast [s 10:00:00.000] * (200/7)\n"
		"1012-\tOSPF.metric1: 30\n"
		" \tigp_metric: 40\n"
		"0000 \n", &ri), 0);
	assert_false(ri.reachable);
	assert_int_equal(ri.igp_metric, 40);
	assert_int_equal(ri.metric_source, BIRD_METRIC_IGP);
	/* a metric too big for 32 bits is not a metric */
	assert_int_equal(parse_text(
		"1007-Table master4:\n"
		" 10.10.0.0/16         unicast [s 10:00:00.000] * (200)\n"
		" \tvia 192.0.2.1 on eth0\n"
		"1012-\tigp_metric: 4294967296\n"
		" \tOSPF.metric1: 4294967295\n"
		"0000 \n", &ri), 0);
	assert_int_equal(ri.igp_metric, 4294967295u);
	assert_int_equal(ri.metric_source, BIRD_METRIC_OSPF);

	/* lines that are not BIRD's route lines */
	static const char *const broken[] = {
		"1007-Table master4:\n \tvia 192.0.2.1 on eth0\n0000 \n",          /* a next hop first */
		"1007-Table master4:\n 10.0.0.0/8 unicast st1 10:00\n0000 \n",       /* no brackets */
		"1007-Table master4:\n 10.0.0.0/8 unicast [st1 10:00\n0000 \n",      /* no ']' */
		"1007-Table master4:\n 10.0.0.0/8 a b [st1 10:00] *\n0000 \n",       /* three words */
		"1007-Table master4:\n 10.0.0.0/8 unicast [] *\n0000 \n",            /* no protocol */
		"1007-Table master4:\n 10.0.0.0/8 unicast [ st1] *\n0000 \n",
		"0013 Daemon is up and running\n",
	};
	for (size_t i = 0; i < sizeof(broken) / sizeof(broken[0]); i++)
		if (parse_text(broken[i], &ri) != -1)
			fail_msg("parsed: %s", broken[i]);
	/* nothing but "0000": no route */
	assert_int_equal(parse_text("0000 \n", &ri), 0);
	assert_false(ri.found);
}

/* ---- a fake BIRD ---------------------------------------------------------------------- */

enum fake_mode {
	FAKE_NORMAL,
	FAKE_SLAM,              /* accept and close at once */
	FAKE_SILENT,            /* accept, never greet */
	FAKE_BAD_GREETING,
};

struct fake_conn;

struct fake {
	uv_loop_t *loop;
	uv_pipe_t listener;
	bool listening;
	char path[108];
	enum fake_mode mode;
	unsigned accepts, commands;
	struct fake_conn *conns;
};

struct fake_conn {
	uv_pipe_t pipe;
	struct fake *f;
	struct fake_conn *next, **prevp;
	char in[2048];
	size_t inlen;
	bool closing;
};

struct fake_write {
	uv_write_t req;
	struct fake_conn *fc;
	bool close_after;
	char data[];
};

static void fake_conn_closed(uv_handle_t *h)
{
	struct fake_conn *fc = (struct fake_conn *)h;
	*fc->prevp = fc->next;
	if (fc->next)
		fc->next->prevp = fc->prevp;
	free(fc);
}

static void fake_conn_close(struct fake_conn *fc)
{
	if (fc->closing)
		return;
	fc->closing = true;
	uv_close((uv_handle_t *)&fc->pipe, fake_conn_closed);
}

static void fake_written(uv_write_t *req, int status)
{
	struct fake_write *w = (struct fake_write *)req;
	if (w->close_after)
		fake_conn_close(w->fc);
	free(w);
}

static void fake_send(struct fake_conn *fc, const char *data, size_t len, bool close_after)
{
	if (fc->closing)
		return;
	struct fake_write *w = malloc(sizeof(*w) + len);
	assert_non_null(w);
	w->fc = fc;
	w->close_after = close_after;
	memcpy(w->data, data, len);
	uv_buf_t buf = uv_buf_init(w->data, (unsigned)len);
	assert_int_equal(uv_write(&w->req, (uv_stream_t *)&fc->pipe, &buf, 1, fake_written), 0);
}

static void fake_sends(struct fake_conn *fc, const char *s)
{
	fake_send(fc, s, strlen(s), false);
}

static void fake_command(struct fake_conn *fc, const char *cmd)
{
	fc->f->commands++;
	if (strcmp(cmd, "hang") == 0)
		return;
	if (strcmp(cmd, "drop") == 0) {
		fake_send(fc, "1007-Table master4:\n 10.1.2.0/24  unic", 38, true);
		return;
	}
	if (strcmp(cmd, "garbage") == 0) {
		fake_sends(fc, "1007-Table master4:\nhello world\n0000 \n");
		return;
	}
	if (strcmp(cmd, "async") == 0) {
		const struct bird_recording *r = rec("route_static_bgppath");
		const char *nl = memchr(r->data, '\n', r->len);
		size_t first = (size_t)(nl - r->data) + 1;
		fake_sends(fc, "+one\n");
		fake_send(fc, r->data, first, false);
		fake_sends(fc, "+two\n");
		fake_send(fc, r->data + first, r->len - first, false);
		fake_sends(fc, "+three\n");
		return;
	}
	if (strncmp(cmd, "seq ", 4) == 0) {
		char buf[64];
		snprintf(buf, sizeof(buf), "1000-%s\n0000 \n", cmd + 4);
		fake_sends(fc, buf);
		return;
	}
	static const struct { const char *cmd, *rec; } answers[] = {
		{ "show route for 10.1.2.3 all", "route_static_bgppath" },
		{ "show route for 10.2.1.1 all", "route_unreachable" },
		{ "show route for 10.99.1.1 all", "route_none" },
		{ "show route for", "err_syntax" },
	};
	for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); i++)
		if (strcmp(cmd, answers[i].cmd) == 0) {
			const struct bird_recording *r = rec(answers[i].rec);
			fake_send(fc, r->data, r->len, false);
			return;
		}
	fake_sends(fc, "9001 syntax error, unexpected CF_SYM_UNDEFINED\n");
}

static void fake_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct fake_conn *fc = (struct fake_conn *)h;
	*buf = uv_buf_init(fc->in + fc->inlen, (unsigned)(sizeof(fc->in) - 1 - fc->inlen));
}

static void fake_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct fake_conn *fc = (struct fake_conn *)s;
	if (nread < 0) {
		fake_conn_close(fc);
		return;
	}
	fc->inlen += (size_t)nread;
	char *nl;
	while (!fc->closing && (nl = memchr(fc->in, '\n', fc->inlen))) {
		*nl = 0;
		fake_command(fc, fc->in);
		size_t used = (size_t)(nl - fc->in) + 1;
		memmove(fc->in, fc->in + used, fc->inlen - used);
		fc->inlen -= used;
	}
	assert_true(fc->inlen < sizeof(fc->in) - 1);
}

static void fake_connection(uv_stream_t *l, int status)
{
	struct fake *f = l->data;
	assert_int_equal(status, 0);
	struct fake_conn *fc = calloc(1, sizeof(*fc));
	assert_non_null(fc);
	fc->f = f;
	uv_pipe_init(f->loop, &fc->pipe, 0);
	fc->next = f->conns;
	if (f->conns)
		f->conns->prevp = &fc->next;
	fc->prevp = &f->conns;
	f->conns = fc;
	assert_int_equal(uv_accept(l, (uv_stream_t *)&fc->pipe), 0);
	f->accepts++;
	switch (f->mode) {
	case FAKE_SLAM:
		fake_conn_close(fc);
		return;
	case FAKE_SILENT:
		break;
	case FAKE_BAD_GREETING:
		fake_sends(fc, "9999 go away\n");
		break;
	case FAKE_NORMAL: {
		const struct bird_recording *g = rec("greeting");
		fake_send(fc, g->data, g->len, false);
		break;
	}
	}
	uv_read_start((uv_stream_t *)&fc->pipe, fake_alloc, fake_read);
}

static unsigned sock_seq;

static void fake_path(struct fake *f)
{
	snprintf(f->path, sizeof(f->path), "/tmp/test_bird.%d.%u.sock", (int)getpid(), sock_seq++);
	unlink(f->path);
}

static void fake_start(struct fake *f)
{
	uv_pipe_init(f->loop, &f->listener, 0);
	f->listener.data = f;
	assert_int_equal(uv_pipe_bind(&f->listener, f->path), 0);
	assert_int_equal(uv_listen((uv_stream_t *)&f->listener, 16, fake_connection), 0);
	f->listening = true;
}

static void fake_stop(struct fake *f)
{
	if (f->listening) {
		uv_close((uv_handle_t *)&f->listener, NULL);
		f->listening = false;
	}
	for (struct fake_conn *fc = f->conns; fc; fc = fc->next)
		fake_conn_close(fc);
	unlink(f->path);
}

/* ---- the client against it --------------------------------------------------------------- */

struct answer {
	bool done;
	int status;
	int code;
	unsigned order;
	bool found, reachable;
	char first_text[128];
};

struct harness {
	uv_loop_t loop;
	struct fake f;
	struct bird_client *c;
	unsigned ups, downs, order;
	char greeting[64], why[256];
	char async[8][32];
	unsigned nasync;
	bool close_in_callback;
	uv_timer_t tick;
};

static struct harness *H;

static void on_up(void *arg, const char *greeting)
{
	struct harness *h = arg;
	h->ups++;
	snprintf(h->greeting, sizeof(h->greeting), "%s", greeting);
}

static void on_down(void *arg, const char *why)
{
	struct harness *h = arg;
	h->downs++;
	snprintf(h->why, sizeof(h->why), "%s", why);
}

static void on_async(void *arg, const char *text)
{
	struct harness *h = arg;
	if (h->nasync < 8)
		snprintf(h->async[h->nasync++], sizeof(h->async[0]), "%s", text);
}

static const struct bird_client_ops ops = { on_up, on_down, on_async };

static void on_answer(void *arg, int status, const struct bird_reply *r)
{
	struct answer *a = arg;
	assert_false(a->done);
	a->done = true;
	a->status = status;
	a->order = ++H->order;
	if (status == 0) {
		assert_non_null(r);
		a->code = r->code;
		snprintf(a->first_text, sizeof(a->first_text), "%s", r->lines[0].text);
		struct bird_route_info ri;
		if (bird_parse_route(r, &ri) == 0) {
			a->found = ri.found;
			a->reachable = ri.reachable;
		}
	} else {
		assert_null(r);
	}
	if (H->close_in_callback) {
		bird_client_close(H->c);
		/* closing again, and asking after closing, are harmless */
		bird_client_close(H->c);
		assert_int_equal(bird_client_query(H->c, "seq 9", on_answer, a), BIRD_ERR_CLOSED);
	}
}

static void tick(uv_timer_t *t)
{
	(void)t;
}

static void harness_init(struct harness *h, enum fake_mode mode, bool start)
{
	memset(h, 0, sizeof(*h));
	H = h;
	assert_int_equal(uv_loop_init(&h->loop), 0);
	h->f.loop = &h->loop;
	h->f.mode = mode;
	fake_path(&h->f);
	if (start)
		fake_start(&h->f);
	uv_timer_init(&h->loop, &h->tick);
	h->c = bird_client_open(&h->loop, h->f.path, &ops, h);
	assert_non_null(h->c);
	/* generous: a loaded test machine must not time out a healthy fake */
	bird_client_set_timeout(h->c, 2000);
	bird_client_set_backoff(h->c, 10, 160);
}

static bool run_until(struct harness *h, bool *flag, uint64_t ms)
{
	uv_update_time(&h->loop);
	uint64_t end = uv_now(&h->loop) + ms;
	uv_timer_start(&h->tick, tick, 5, 5);
	while (!(flag && *flag) && uv_now(&h->loop) < end)
		uv_run(&h->loop, UV_RUN_ONCE);
	uv_timer_stop(&h->tick);
	return flag ? *flag : true;
}

static void harness_done(struct harness *h)
{
	if (h->c)
		bird_client_close(h->c);
	fake_stop(&h->f);
	uv_close((uv_handle_t *)&h->tick, NULL);
	uv_run(&h->loop, UV_RUN_DEFAULT);
	/* every handle closed: the client freed what it had */
	assert_int_equal(uv_loop_close(&h->loop), 0);
	H = NULL;
}

static void client_asks_and_gets_replies(void **state)
{
	struct harness h;
	harness_init(&h, FAKE_NORMAL, true);
	/* queued before the connection is up */
	struct answer a[5] = { 0 };
	assert_int_equal(bird_client_query(h.c, "show route for 10.1.2.3 all", on_answer, &a[0]), 0);
	assert_int_equal(bird_client_query(h.c, "show route for 10.2.1.1 all", on_answer, &a[1]), 0);
	assert_int_equal(bird_client_query(h.c, "show route for 10.99.1.1 all", on_answer, &a[2]), 0);
	assert_int_equal(bird_client_query(h.c, "show route for", on_answer, &a[3]), 0);
	assert_int_equal(bird_client_query(h.c, "seq 4", on_answer, &a[4]), 0);
	assert_false(bird_client_is_up(h.c));
	assert_int_equal(bird_client_queued(h.c), 5);
	assert_true(run_until(&h, &a[4].done, 3000));
	for (unsigned i = 0; i < 5; i++) {
		assert_true(a[i].done);
		assert_int_equal(a[i].status, 0);
		assert_int_equal(a[i].order, i + 1);
	}
	assert_true(a[0].found && a[0].reachable);
	assert_true(a[1].found && !a[1].reachable);
	assert_int_equal(a[2].code, 8001);
	assert_false(a[2].found);
	assert_int_equal(a[3].code, 9001);
	assert_string_equal(a[4].first_text, "4");
	assert_true(bird_client_is_up(h.c));
	assert_string_equal(bird_client_status(h.c), "BIRD 2.0.12 ready.");
	assert_int_equal(h.ups, 1);
	assert_int_equal(h.downs, 0);
	assert_string_equal(h.greeting, "BIRD 2.0.12 ready.");
	assert_int_equal(h.f.accepts, 1);
	assert_int_equal(bird_client_queued(h.c), 0);

	/* when up and idle, a query goes at once */
	struct answer b = { 0 };
	assert_int_equal(bird_client_query(h.c, "seq 5", on_answer, &b), 0);
	assert_true(run_until(&h, &b.done, 3000));
	assert_string_equal(b.first_text, "5");
	harness_done(&h);
}

static void client_refuses_bad_commands_and_a_full_queue(void **state)
{
	struct harness h;
	harness_init(&h, FAKE_NORMAL, true);
	struct answer a = { 0 };
	char big[BIRD_MAX_COMMAND + 2];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	assert_int_equal(bird_client_query(h.c, "", on_answer, &a), BIRD_ERR_INVALID);
	assert_int_equal(bird_client_query(h.c, "show route\nfor", on_answer, &a), BIRD_ERR_INVALID);
	assert_int_equal(bird_client_query(h.c, "show\troute", on_answer, &a), BIRD_ERR_INVALID);
	assert_int_equal(bird_client_query(h.c, big, on_answer, &a), BIRD_ERR_INVALID);
	big[BIRD_MAX_COMMAND] = 0;
	struct answer ok[2] = { 0 };
	assert_int_equal(bird_client_query(h.c, "show route for", NULL, &a), BIRD_ERR_INVALID);
	bird_client_set_max_queue(h.c, 2);
	assert_int_equal(bird_client_query(h.c, big, on_answer, &ok[0]), 0);
	assert_int_equal(bird_client_query(h.c, "seq 1", on_answer, &ok[1]), 0);
	assert_int_equal(bird_client_query(h.c, "seq 2", on_answer, &a), BIRD_ERR_QUEUE_FULL);
	assert_true(run_until(&h, &ok[1].done, 3000));
	assert_int_equal(ok[0].code, 9001);
	assert_false(a.done);
	assert_string_equal(bird_strerror(BIRD_ERR_QUEUE_FULL), "too many BIRD queries queued");
	harness_done(&h);
}

static void client_times_out_a_hung_bird_and_reconnects(void **state)
{
	struct harness h;
	harness_init(&h, FAKE_NORMAL, true);
	bird_client_set_timeout(h.c, 300);
	struct answer hung = { 0 }, next = { 0 };
	assert_int_equal(bird_client_query(h.c, "hang", on_answer, &hung), 0);
	assert_int_equal(bird_client_query(h.c, "show route for 10.1.2.3 all", on_answer, &next), 0);
	uv_update_time(&h.loop);
	uint64_t t0 = uv_now(&h.loop);
	assert_true(run_until(&h, &hung.done, 3000));
	uint64_t waited = uv_now(&h.loop) - t0;
	assert_int_equal(hung.status, BIRD_ERR_TIMEOUT);
	assert_true(waited >= 290);
	assert_int_equal(h.downs, 1);
	assert_non_null(strstr(h.why, "no reply to \"hang\""));
	assert_false(bird_client_is_up(h.c));
	/* the queued query survives and is answered on the next connection */
	assert_false(next.done);
	assert_int_equal(bird_client_queued(h.c), 1);
	assert_true(run_until(&h, &next.done, 3000));
	assert_int_equal(next.status, 0);
	assert_true(next.found && next.reachable);
	assert_int_equal(h.f.accepts, 2);
	assert_int_equal(h.ups, 2);
	assert_int_equal(h.downs, 1);
	harness_done(&h);
}

static void client_survives_a_connection_closed_mid_reply(void **state)
{
	struct harness h;
	harness_init(&h, FAKE_NORMAL, true);
	struct answer dropped = { 0 }, next = { 0 }, again = { 0 };
	assert_int_equal(bird_client_query(h.c, "drop", on_answer, &dropped), 0);
	assert_int_equal(bird_client_query(h.c, "seq 1", on_answer, &next), 0);
	assert_true(run_until(&h, &dropped.done, 3000));
	assert_int_equal(dropped.status, BIRD_ERR_DISCONNECTED);
	assert_int_equal(h.downs, 1);
	assert_string_equal(bird_client_status(h.c), "BIRD closed the connection");
	assert_true(run_until(&h, &next.done, 3000));
	assert_int_equal(next.status, 0);
	assert_string_equal(next.first_text, "1");
	assert_int_equal(h.f.accepts, 2);
	assert_int_equal(h.ups, 2);
	/* and again: down is told once per loss */
	assert_int_equal(bird_client_query(h.c, "drop", on_answer, &again), 0);
	assert_true(run_until(&h, &again.done, 3000));
	assert_int_equal(again.status, BIRD_ERR_DISCONNECTED);
	assert_int_equal(h.downs, 2);
	harness_done(&h);
}

static void client_passes_async_lines_aside(void **state)
{
	struct harness h;
	harness_init(&h, FAKE_NORMAL, true);
	struct answer a = { 0 }, b = { 0 };
	assert_int_equal(bird_client_query(h.c, "async", on_answer, &a), 0);
	assert_int_equal(bird_client_query(h.c, "seq 2", on_answer, &b), 0);
	assert_true(run_until(&h, &b.done, 3000));
	assert_int_equal(a.status, 0);
	assert_true(a.found && a.reachable);
	assert_int_equal(b.status, 0);
	assert_int_equal(h.nasync, 3);
	assert_string_equal(h.async[0], "one");
	assert_string_equal(h.async[1], "two");
	assert_string_equal(h.async[2], "three");
	assert_int_equal(h.f.accepts, 1);
	harness_done(&h);
}

static void client_drops_a_bird_talking_garbage(void **state)
{
	struct harness h;
	harness_init(&h, FAKE_NORMAL, true);
	struct answer a = { 0 }, b = { 0 };
	assert_int_equal(bird_client_query(h.c, "garbage", on_answer, &a), 0);
	assert_int_equal(bird_client_query(h.c, "seq 2", on_answer, &b), 0);
	assert_true(run_until(&h, &b.done, 3000));
	assert_int_equal(a.status, BIRD_ERR_PROTOCOL);
	assert_int_equal(b.status, 0);
	assert_non_null(strstr(h.why, "malformed line \"hello world\""));
	assert_int_equal(h.f.accepts, 2);
	harness_done(&h);
}

static void client_backs_off_while_bird_hangs_up(void **state)
{
	struct harness h;
	harness_init(&h, FAKE_SLAM, true);
	struct answer a = { 0 };
	assert_int_equal(bird_client_query(h.c, "seq 1", on_answer, &a), 0);
	run_until(&h, NULL, 1000);
	/* 10, 20, 40, 80, 160, 160... ms apart: about 10 tries in a second, not hundreds */
	if (h.f.accepts < 3 || h.f.accepts > 16)
		fail_msg("%u connections in 1 s", h.f.accepts);
	assert_int_equal(h.downs, 1);
	assert_int_equal(h.ups, 0);
	assert_false(a.done);
	assert_int_equal(bird_client_queued(h.c), 1);
	/* BIRD recovers: the waiting query is answered */
	h.f.mode = FAKE_NORMAL;
	assert_true(run_until(&h, &a.done, 3000));
	assert_int_equal(a.status, 0);
	assert_int_equal(h.ups, 1);
	harness_done(&h);
}

static void client_waits_for_bird_to_start(void **state)
{
	struct harness h;
	harness_init(&h, FAKE_NORMAL, false);
	struct answer a = { 0 };
	assert_int_equal(bird_client_query(h.c, "seq 1", on_answer, &a), 0);
	run_until(&h, NULL, 150);
	assert_int_equal(h.downs, 1);
	assert_non_null(strstr(h.why, "connect"));
	assert_non_null(strstr(bird_client_status(h.c), "connect"));
	assert_false(a.done);
	fake_start(&h.f);
	assert_true(run_until(&h, &a.done, 3000));
	assert_int_equal(a.status, 0);
	assert_int_equal(h.ups, 1);
	assert_int_equal(h.downs, 1);
	harness_done(&h);
}

static void client_times_out_a_bird_that_does_not_greet(void **state)
{
	struct harness h;
	harness_init(&h, FAKE_SILENT, true);
	bird_client_set_timeout(h.c, 300);
	struct answer a = { 0 };
	assert_int_equal(bird_client_query(h.c, "seq 1", on_answer, &a), 0);
	run_until(&h, NULL, 500);
	assert_int_equal(h.downs, 1);
	assert_non_null(strstr(h.why, "no greeting within 300 ms"));
	assert_false(a.done);
	assert_true(h.f.accepts >= 1);
	assert_int_equal(h.f.commands, 0);
	harness_done(&h);
	assert_true(a.done);
	assert_int_equal(a.status, BIRD_ERR_CLOSED);

	harness_init(&h, FAKE_BAD_GREETING, true);
	run_until(&h, NULL, 200);
	assert_int_equal(h.downs, 1);
	assert_int_equal(h.ups, 0);
	assert_non_null(strstr(h.why, "not a BIRD greeting: 9999 go away"));
	harness_done(&h);
}

static void close_fails_every_query(void **state)
{
	struct harness h;
	harness_init(&h, FAKE_NORMAL, true);
	struct answer a[3] = { 0 }, ok = { 0 };
	assert_int_equal(bird_client_query(h.c, "seq 0", on_answer, &ok), 0);
	assert_true(run_until(&h, &ok.done, 3000));
	assert_int_equal(bird_client_query(h.c, "hang", on_answer, &a[0]), 0);
	assert_int_equal(bird_client_query(h.c, "seq 1", on_answer, &a[1]), 0);
	assert_int_equal(bird_client_query(h.c, "seq 2", on_answer, &a[2]), 0);
	run_until(&h, NULL, 50);
	assert_int_equal(h.f.commands, 2);      /* one at a time */
	bird_client_close(h.c);
	for (unsigned i = 0; i < 3; i++) {
		assert_true(a[i].done);
		assert_int_equal(a[i].status, BIRD_ERR_CLOSED);
		assert_int_equal(a[i].order, ok.order + 1 + i);
	}
	assert_int_equal(bird_client_query(h.c, "seq 3", on_answer, &ok), BIRD_ERR_CLOSED);
	assert_int_equal(h.downs, 0);
	harness_done(&h);
}

static void close_from_a_callback(void **state)
{
	struct harness h;
	harness_init(&h, FAKE_NORMAL, true);
	struct answer a[3] = { 0 };
	assert_int_equal(bird_client_query(h.c, "seq 0", on_answer, &a[0]), 0);
	assert_int_equal(bird_client_query(h.c, "seq 1", on_answer, &a[1]), 0);
	assert_int_equal(bird_client_query(h.c, "seq 2", on_answer, &a[2]), 0);
	h.close_in_callback = true;
	assert_true(run_until(&h, &a[2].done, 3000));
	assert_int_equal(a[0].status, 0);
	assert_int_equal(a[1].status, BIRD_ERR_CLOSED);
	assert_int_equal(a[2].status, BIRD_ERR_CLOSED);
	h.c = NULL;     /* closed already */
	harness_done(&h);

	/* closed while connecting, and in a failure's callback */
	harness_init(&h, FAKE_NORMAL, false);
	struct answer b = { 0 };
	assert_int_equal(bird_client_query(h.c, "seq 0", on_answer, &b), 0);
	bird_client_close(h.c);
	assert_int_equal(b.status, BIRD_ERR_CLOSED);
	h.c = NULL;
	harness_done(&h);

	harness_init(&h, FAKE_NORMAL, true);
	struct answer c = { 0 }, d = { 0 };
	assert_int_equal(bird_client_query(h.c, "drop", on_answer, &c), 0);
	assert_int_equal(bird_client_query(h.c, "seq 1", on_answer, &d), 0);
	h.close_in_callback = true;
	assert_true(run_until(&h, &d.done, 3000));
	assert_int_equal(c.status, BIRD_ERR_DISCONNECTED);
	assert_int_equal(d.status, BIRD_ERR_CLOSED);
	assert_int_equal(h.downs, 0);   /* closed before down was told */
	h.c = NULL;
	harness_done(&h);
}

static void open_refuses_bad_paths(void **state)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	char path[200];
	memset(path, 'x', sizeof(path) - 1);
	path[sizeof(path) - 1] = 0;
	assert_null(bird_client_open(&loop, path, &ops, NULL));
	assert_null(bird_client_open(&loop, "", &ops, NULL));
	/* defaults, and a client closed before the loop ever ran */
	struct bird_client *c = bird_client_open(&loop, "/nonexistent/bird.ctl", NULL, NULL);
	assert_non_null(c);
	bird_client_set_timeout(c, 0);
	bird_client_set_backoff(c, 0, 0);
	bird_client_close(c);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(recordings_match_their_files),
		cmocka_unit_test(every_recording_whole_bytewise_and_split),
		cmocka_unit_test(continuation_lines_take_the_code_before),
		cmocka_unit_test(a_reply_ends_at_its_final_line_not_at_the_read),
		cmocka_unit_test(async_lines_before_between_and_inside_replies),
		cmocka_unit_test(the_recorded_echo_session),
		cmocka_unit_test(error_replies_are_replies),
		cmocka_unit_test(long_lines_are_errors),
		cmocka_unit_test(too_many_lines_or_bytes_are_errors),
		cmocka_unit_test(garbage_is_an_error),
		cmocka_unit_test(parse_reachable_recordings),
		cmocka_unit_test(parse_unreachable_and_missing_recordings),
		cmocka_unit_test(parse_other_forms),
		cmocka_unit_test(client_asks_and_gets_replies),
		cmocka_unit_test(client_refuses_bad_commands_and_a_full_queue),
		cmocka_unit_test(client_times_out_a_hung_bird_and_reconnects),
		cmocka_unit_test(client_survives_a_connection_closed_mid_reply),
		cmocka_unit_test(client_passes_async_lines_aside),
		cmocka_unit_test(client_drops_a_bird_talking_garbage),
		cmocka_unit_test(client_backs_off_while_bird_hangs_up),
		cmocka_unit_test(client_waits_for_bird_to_start),
		cmocka_unit_test(client_times_out_a_bird_that_does_not_greet),
		cmocka_unit_test(close_fails_every_query),
		cmocka_unit_test(close_from_a_callback),
		cmocka_unit_test(open_refuses_bad_paths),
		cmocka_unit_test(parse_uptime),
	};
	return cmocka_run_group_tests_name("bird", tests, NULL, NULL);
}
