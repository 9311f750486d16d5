/*
 * The BIRD reply reader fed arbitrary bytes, whole and in two pieces (the
 * first byte places the cut), with the default bounds and with low ones:
 * both feedings give the same replies, async lines and errors; every reply
 * keeps the bounds and goes through bird_parse_route and
 * bird_parse_uptime.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "bird.h"
#include "vec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct event {
	int type;
	struct bird_reply *reply;
	char *async;
};

struct run {
	struct event *ev;
	size_t n, cap;
	bool error;
};

static void check_reply(const struct bird_reader *rd, const struct bird_reply *r)
{
	if (r->nlines == 0 || r->nlines > rd->max_lines)
		abort();
	size_t bytes = 0;
	for (size_t i = 0; i < r->nlines; i++) {
		const struct bird_line *l = &r->lines[i];
		if (l->code < 0 || l->code > 9999 || l->len > rd->max_line || l->len > BIRD_MAX_LINE)
			abort();
		if (l->text[l->len] != 0 || memchr(l->text, '\n', l->len) || memchr(l->text, 0, l->len))
			abort();
		bytes += l->len + 1;
	}
	if (bytes > rd->max_bytes)
		abort();
	if (r->code != r->lines[r->nlines - 1].code || r->text != r->lines[r->nlines - 1].text)
		abort();

	uint64_t up;
	if (bird_parse_uptime(r, &up) == 0 && up > 10000ull * 366 * 86400 * 1000)
		abort();

	struct bird_route_info ri;
	int rv = bird_parse_route(r, &ri);
	if (rv != 0 && rv != -1)
		abort();
	if (rv == -1 && ri.found)
		abort();
	if (ri.reachable && (!ri.found || strcmp(ri.dest, "unicast") != 0))
		abort();
	if (ri.found && !ri.protocol[0])
		abort();
	if (ri.nh_family != 0 && ri.nh_family != AF_INET && ri.nh_family != AF_INET6)
		abort();
	if (strnlen(ri.net, sizeof(ri.net)) == sizeof(ri.net) ||
	    strnlen(ri.dest, sizeof(ri.dest)) == sizeof(ri.dest) ||
	    strnlen(ri.protocol, sizeof(ri.protocol)) == sizeof(ri.protocol) ||
	    strnlen(ri.source, sizeof(ri.source)) == sizeof(ri.source) ||
	    strnlen(ri.nh_iface, sizeof(ri.nh_iface)) == sizeof(ri.nh_iface))
		abort();
	if (ri.metric_source == BIRD_METRIC_NONE && ri.igp_metric != 0)
		abort();
}

static void add(struct run *run, int type, struct bird_reply *reply, const char *async, size_t alen)
{
	if (VEC_RESERVE(run->ev, run->cap, run->n + 1) < 0)
		abort();
	struct event *e = &run->ev[run->n++];
	e->type = type;
	e->reply = reply;
	e->async = NULL;
	if (async) {
		e->async = malloc(alen + 1);
		if (!e->async)
			abort();
		memcpy(e->async, async, alen + 1);
	}
}

static void feed(struct bird_reader *rd, struct run *run, const char *data, size_t len)
{
	while (!run->error) {
		size_t used;
		enum bird_event ev = bird_reader_feed(rd, data, len, &used);
		if (used > len)
			abort();
		data += used;
		len -= used;
		if (ev == BIRD_EV_ERROR) {
			if (!bird_reader_error(rd)[0])
				abort();
			run->error = true;
			return;
		}
		if (ev == BIRD_EV_MORE) {
			if (len != 0)
				abort();
			return;
		}
		if (ev == BIRD_EV_REPLY) {
			struct bird_reply *r = bird_reader_take_reply(rd);
			if (!r || bird_reader_take_reply(rd))
				abort();
			check_reply(rd, r);
			add(run, ev, r, NULL, 0);
		} else if (ev == BIRD_EV_ASYNC) {
			size_t alen;
			const char *a = bird_reader_async(rd, &alen);
			if (alen > rd->max_line || a[alen] != 0)
				abort();
			add(run, ev, NULL, a, alen);
		} else {
			abort();
		}
		if (len == 0)
			return;
	}
}

static void run_free(struct run *run)
{
	for (size_t i = 0; i < run->n; i++) {
		bird_reply_free(run->ev[i].reply);
		free(run->ev[i].async);
	}
	free(run->ev);
}

static void same(const struct run *a, const struct run *b)
{
	if (a->error != b->error || a->n != b->n)
		abort();
	for (size_t i = 0; i < a->n; i++) {
		const struct event *x = &a->ev[i], *y = &b->ev[i];
		if (x->type != y->type)
			abort();
		if (x->async && strcmp(x->async, y->async) != 0)
			abort();
		if (x->reply) {
			if (x->reply->nlines != y->reply->nlines)
				abort();
			for (size_t k = 0; k < x->reply->nlines; k++) {
				const struct bird_line *l = &x->reply->lines[k], *m = &y->reply->lines[k];
				if (l->code != m->code || l->len != m->len || memcmp(l->text, m->text, l->len) != 0)
					abort();
			}
		}
	}
}

static void limits(struct bird_reader *rd, bool low)
{
	if (low) {
		rd->max_line = 300;
		rd->max_lines = 8;
		rd->max_bytes = 600;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	size_t cut = size ? (size_t)data[0] * size / 256 : 0;
	for (int low = 0; low < 2; low++) {
		struct bird_reader whole, split;
		struct run a = { 0 }, b = { 0 };
		bird_reader_init(&whole);
		bird_reader_init(&split);
		limits(&whole, low);
		limits(&split, low);
		feed(&whole, &a, in, size);
		feed(&split, &b, in, cut);
		feed(&split, &b, in + cut, size - cut);
		same(&a, &b);
		run_free(&a);
		run_free(&b);
		bird_reader_free(&whole);
		bird_reader_free(&split);
	}
	return 0;
}
