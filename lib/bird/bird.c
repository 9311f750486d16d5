/*
 * BIRD 2 control-socket client: the reply reader, the reader of
 * "show route for ADDR all", and the libuv client (bird.h, docs/BIRD.md).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <uv.h>

#include "addr.h"
#include "bird.h"
#include "log.h"
#include "vec.h"

/* ---- replies ------------------------------------------------------------ */

void bird_reply_free(struct bird_reply *r)
{
	if (!r)
		return;
	free(r->lines);
	free(r->buf);
	free(r);
}

/* ---- the reader ----------------------------------------------------------- */

void bird_reader_init(struct bird_reader *rd)
{
	memset(rd, 0, sizeof(*rd));
	rd->max_line = BIRD_MAX_LINE;
	rd->max_lines = BIRD_MAX_REPLY_LINES;
	rd->max_bytes = BIRD_MAX_REPLY_BYTES;
	rd->last_code = -1;
}

static void reader_drop_reply(struct bird_reader *rd)
{
	free(rd->lines);
	free(rd->buf);
	rd->lines = NULL;
	rd->buf = NULL;
	rd->nlines = rd->lines_cap = 0;
	rd->buflen = rd->bufcap = 0;
	rd->last_code = -1;
}

void bird_reader_reset(struct bird_reader *rd)
{
	reader_drop_reply(rd);
	bird_reply_free(rd->done);
	rd->done = NULL;
	rd->linelen = 0;
	rd->asynclen = 0;
	rd->failed = false;
	rd->err[0] = 0;
}

void bird_reader_free(struct bird_reader *rd)
{
	bird_reader_reset(rd);
}

static enum bird_event reader_fail(struct bird_reader *rd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static enum bird_event reader_fail(struct bird_reader *rd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rd->err, sizeof(rd->err), fmt, ap);
	va_end(ap);
	rd->failed = true;
	reader_drop_reply(rd);
	return BIRD_EV_ERROR;
}

static int reader_add_line(struct bird_reader *rd, int code, const char *text, size_t len)
{
	if (rd->nlines >= rd->max_lines) {
		reader_fail(rd, "reply longer than %zu lines", rd->max_lines);
		return -1;
	}
	if (len + 1 > rd->max_bytes || rd->buflen > rd->max_bytes - len - 1) {
		reader_fail(rd, "reply longer than %zu bytes", rd->max_bytes);
		return -1;
	}
	if (VEC_RESERVE(rd->lines, rd->lines_cap, rd->nlines + 1) < 0 ||
	    VEC_RESERVE(rd->buf, rd->bufcap, rd->buflen + len + 1) < 0) {
		reader_fail(rd, "out of memory");
		return -1;
	}
	memcpy(rd->buf + rd->buflen, text, len);
	rd->buf[rd->buflen + len] = 0;
	rd->buflen += len + 1;
	rd->lines[rd->nlines].code = code;
	rd->lines[rd->nlines].len = len;
	rd->lines[rd->nlines].text = NULL;      /* set when the reply is complete */
	rd->nlines++;
	rd->last_code = code;
	return 0;
}

static enum bird_event reader_finish_reply(struct bird_reader *rd)
{
	struct bird_reply *r = calloc(1, sizeof(*r));
	if (!r)
		return reader_fail(rd, "out of memory");
	r->lines = rd->lines;
	r->buf = rd->buf;
	r->nlines = rd->nlines;
	size_t off = 0;
	for (size_t i = 0; i < r->nlines; i++) {
		r->lines[i].text = r->buf + off;
		off += r->lines[i].len + 1;
	}
	r->code = r->lines[r->nlines - 1].code;
	r->text = r->lines[r->nlines - 1].text;
	rd->lines = NULL;
	rd->buf = NULL;
	reader_drop_reply(rd);
	rd->done = r;
	return BIRD_EV_REPLY;
}

static bool is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

/* One whole line, in rd->line without its newline. */
static enum bird_event reader_line(struct bird_reader *rd)
{
	const char *l = rd->line;
	size_t n = rd->linelen;
	rd->linelen = 0;
	rd->line[n] = 0;
	if (memchr(l, 0, n))
		return reader_fail(rd, "NUL byte in a line");
	if (n >= 1 && l[0] == '+') {
		rd->asynclen = n - 1;
		return BIRD_EV_ASYNC;
	}
	int code;
	bool final;
	const char *text;
	if (n >= 5 && is_digit(l[0]) && is_digit(l[1]) && is_digit(l[2]) && is_digit(l[3]) &&
	    (l[4] == '-' || l[4] == ' ')) {
		code = (l[0] - '0') * 1000 + (l[1] - '0') * 100 + (l[2] - '0') * 10 + (l[3] - '0');
		final = l[4] == ' ';
		text = l + 5;
	} else if (n >= 1 && l[0] == ' ') {
		if (rd->last_code < 0)
			return reader_fail(rd, "a continuation line begins a reply");
		code = rd->last_code;
		final = false;
		text = l + 1;
	} else {
		char shown[24];
		size_t k = 0;
		for (size_t i = 0; i < n && k + 4 < sizeof(shown); i++)
			shown[k++] = l[i] >= 0x20 && l[i] < 0x7f ? l[i] : '?';
		shown[k] = 0;
		return reader_fail(rd, "malformed line \"%s%s\"", shown, k < n ? "..." : "");
	}
	if (reader_add_line(rd, code, text, n - (size_t)(text - l)) < 0)
		return BIRD_EV_ERROR;
	return final ? reader_finish_reply(rd) : BIRD_EV_MORE;
}

enum bird_event bird_reader_feed(struct bird_reader *rd, const char *data, size_t len, size_t *used)
{
	*used = 0;
	if (rd->failed)
		return BIRD_EV_ERROR;
	/* a reply not taken is dropped */
	bird_reply_free(rd->done);
	rd->done = NULL;
	rd->asynclen = 0;
	size_t max = rd->max_line < BIRD_MAX_LINE ? rd->max_line : BIRD_MAX_LINE;
	size_t i = 0;
	while (i < len) {
		const char *nl = memchr(data + i, '\n', len - i);
		size_t take = nl ? (size_t)(nl - (data + i)) : len - i;
		if (take > max - rd->linelen) {
			*used = len;
			return reader_fail(rd, "line longer than %zu bytes", max);
		}
		memcpy(rd->line + rd->linelen, data + i, take);
		rd->linelen += take;
		i += take;
		if (!nl)
			break;
		i++;
		enum bird_event ev = reader_line(rd);
		if (ev != BIRD_EV_MORE) {
			*used = i;
			return ev;
		}
	}
	*used = i;
	return BIRD_EV_MORE;
}

struct bird_reply *bird_reader_take_reply(struct bird_reader *rd)
{
	struct bird_reply *r = rd->done;
	rd->done = NULL;
	return r;
}

const char *bird_reader_async(const struct bird_reader *rd, size_t *len)
{
	*len = rd->asynclen;
	return rd->line + 1;
}

const char *bird_reader_error(const struct bird_reader *rd)
{
	return rd->failed ? rd->err : "";
}

/* ---- "show route for ADDR all" ---------------------------------------------- */

struct route_tmp {
	bool best;
	char net[64];
	char dest[16];
	char protocol[64];
	char source[32];
	bool has_nh;
	int nh_family;
	uint8_t nh_addr[16];
	char nh_iface[32];
	bool has_igp, has_ospf, has_line_metric, has_as_path;
	uint32_t igp, ospf, line_metric;
	uint32_t as_path_len;
	bool as_path_truncated;
};

/* Copies the word at s (up to a space, a tab, or stop) into out; returns its end. */
static const char *copy_word(const char *s, char stop, char *out, size_t out_len)
{
	size_t n = 0;
	while (s[n] && s[n] != ' ' && s[n] != '\t' && s[n] != stop)
		n++;
	size_t k = n < out_len - 1 ? n : out_len - 1;
	memcpy(out, s, k);
	out[k] = 0;
	return s + n;
}

/* strlcpy */
static void copy_str(char *out, size_t out_len, const char *s)
{
	size_t n = strnlen(s, out_len - 1);
	memcpy(out, s, n);
	out[n] = 0;
}

static const char *skip_spaces(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* Decimal digits up to end (or NUL when end is NULL) that fit in 32 bits. */
static bool parse_u32(const char *s, const char *end, uint32_t *out, const char **stop)
{
	uint64_t v = 0;
	const char *p = s;
	while ((end ? p < end : true) && is_digit(*p)) {
		v = v * 10 + (uint64_t)(*p - '0');
		if (v > UINT32_MAX)
			return false;
		p++;
	}
	if (p == s)
		return false;
	*out = (uint32_t)v;
	if (stop)
		*stop = p;
	return true;
}

static bool parse_u32_all(const char *s, uint32_t *out)
{
	const char *stop;
	s = skip_spaces(s);
	if (!parse_u32(s, NULL, out, &stop))
		return false;
	return *skip_spaces(stop) == 0;
}

/* "10.1.2.0/24   unicast [st2 03:25:40.493 from 192.0.2.1] * (50/5) ..." */
static int parse_route_line(const char *t, struct route_tmp *rt)
{
	memset(rt, 0, sizeof(*rt));
	const char *lb = strchr(t, '[');
	if (!lb)
		return -1;
	const char *rb = strchr(lb, ']');
	if (!rb)
		return -1;
	/* the net (only on the first route of a net), then the destination */
	const char *p = t;
	char words[2][64];
	unsigned nwords = 0;
	bool has_net = *p != ' ' && *p != '\t';
	while (p < lb) {
		p = skip_spaces(p);
		if (p >= lb)
			break;
		char w[64];
		const char *e = copy_word(p, '[', w, sizeof(w));
		if (e == p)
			return -1;
		if (nwords < 2)
			memcpy(words[nwords], w, sizeof(w));
		nwords++;
		p = e;
	}
	if (nwords > 2 || (has_net && nwords == 0))
		return -1;
	if (has_net) {
		copy_str(rt->net, sizeof(rt->net), words[0]);
		if (nwords == 2)
			copy_str(rt->dest, sizeof(rt->dest), words[1]);
	} else if (nwords == 1) {
		copy_str(rt->dest, sizeof(rt->dest), words[0]);
	}
	copy_word(lb + 1, ']', rt->protocol, sizeof(rt->protocol));
	if (!rt->protocol[0])
		return -1;
	p = skip_spaces(rb + 1);
	if (*p == '*' || *p == '!')
		rt->best = true;
	/* "(pref)", "(pref/metric)", "(pref/metric1/metric2)", "(pref/-)" */
	const char *par = strchr(rb, '(');
	if (par) {
		uint32_t pref, metric;
		const char *stop;
		if (parse_u32(par + 1, NULL, &pref, &stop) && *stop == '/' &&
		    parse_u32(stop + 1, NULL, &metric, &stop) && (*stop == ')' || *stop == '/')) {
			rt->has_line_metric = true;
			rt->line_metric = metric;
		}
	}
	return 0;
}

/* "\tvia 192.0.2.253 on eth0 weight 2" or "\tdev lo" */
static void parse_nexthop_line(const char *t, struct route_tmp *rt)
{
	if (rt->has_nh)
		return;
	t = skip_spaces(t);
	if (strncmp(t, "via ", 4) == 0) {
		char addr[64];
		const char *p = copy_word(t + 4, 0, addr, sizeof(addr));
		if (!ip_parse(addr, &rt->nh_family, rt->nh_addr))
			return;
		p = skip_spaces(p);
		if (strncmp(p, "on ", 3) == 0)
			copy_word(skip_spaces(p + 3), 0, rt->nh_iface, sizeof(rt->nh_iface));
		rt->has_nh = true;
	} else if (strncmp(t, "dev ", 4) == 0) {
		copy_word(skip_spaces(t + 4), 0, rt->nh_iface, sizeof(rt->nh_iface));
		rt->has_nh = rt->nh_iface[0] != 0;
	}
}

/*
 * BIRD's as_path_format: "65001 65002" a sequence, "{65003 65004}" a set,
 * "(65010 65011)" a confederation sequence, "({...})" a confederation set,
 * and "..." at the end, possibly in the middle of a number, when cut.
 */
static void count_as_path(const char *v, uint32_t *len, bool *truncated)
{
	size_t n = strlen(v);
	while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	*truncated = false;
	if (n >= 3 && memcmp(v + n - 3, "...", 3) == 0) {
		*truncated = true;
		n -= 3;
		/* the token cut short is not counted */
		while (n > 0 && v[n - 1] != ' ')
			n--;
	}
	uint32_t count = 0;
	bool in_set = false, in_confed = false, in_number = false;
	for (size_t i = 0; i < n; i++) {
		char ch = v[i];
		if (is_digit(ch)) {
			if (!in_number && !in_set && !in_confed && count < UINT32_MAX)
				count++;
			in_number = true;
			continue;
		}
		in_number = false;
		if (ch == '{') {
			if (!in_set && !in_confed && count < UINT32_MAX)
				count++;
			in_set = true;
		} else if (ch == '}') {
			in_set = false;
		} else if (ch == '(') {
			in_confed = true;
		} else if (ch == ')') {
			in_confed = false;
		}
	}
	*len = count;
}

/* "\tigp_metric: 5", "\tOSPF.metric1: 20", "\tBGP.as_path: 65001 65002" */
static void parse_attr_line(const char *t, struct route_tmp *rt)
{
	t = skip_spaces(t);
	const char *colon = strstr(t, ": ");
	const char *value;
	size_t nlen;
	if (colon) {
		nlen = (size_t)(colon - t);
		value = colon + 2;
	} else {
		/* "BGP.as_path:" with an empty path */
		nlen = strlen(t);
		if (nlen == 0 || t[nlen - 1] != ':')
			return;
		nlen--;
		value = t + nlen + 1;
	}
#define IS(name) (nlen == sizeof(name) - 1 && memcmp(t, name, nlen) == 0)
	if (IS("igp_metric") && !rt->has_igp) {
		rt->has_igp = parse_u32_all(value, &rt->igp);
	} else if (IS("OSPF.metric1") && !rt->has_ospf) {
		rt->has_ospf = parse_u32_all(value, &rt->ospf);
	} else if (IS("BGP.as_path") && !rt->has_as_path) {
		rt->has_as_path = true;
		count_as_path(value, &rt->as_path_len, &rt->as_path_truncated);
	}
#undef IS
}

static void route_to_info(const struct route_tmp *rt, struct bird_route_info *out)
{
	out->found = true;
	out->best = rt->best;
	copy_str(out->net, sizeof(out->net), rt->net);
	copy_str(out->dest, sizeof(out->dest), rt->dest);
	copy_str(out->protocol, sizeof(out->protocol), rt->protocol);
	copy_str(out->source, sizeof(out->source), rt->source);
	out->reachable = strcmp(rt->dest, "unicast") == 0 && rt->has_nh;
	if (rt->has_igp) {
		out->igp_metric = rt->igp;
		out->metric_source = BIRD_METRIC_IGP;
	} else if (rt->has_ospf) {
		out->igp_metric = rt->ospf;
		out->metric_source = BIRD_METRIC_OSPF;
	} else if (rt->has_line_metric) {
		out->igp_metric = rt->line_metric;
		out->metric_source = BIRD_METRIC_ROUTE_LINE;
	}
	out->as_path_len = rt->as_path_len;
	out->as_path_truncated = rt->as_path_truncated;
	if (rt->has_nh) {
		out->nh_family = rt->nh_family;
		memcpy(out->nh_addr, rt->nh_addr, sizeof(out->nh_addr));
		copy_str(out->nh_iface, sizeof(out->nh_iface), rt->nh_iface);
	}
}

int bird_parse_route(const struct bird_reply *r, struct bird_route_info *out)
{
	memset(out, 0, sizeof(*out));
	if (!r || r->nlines == 0)
		return -1;
	if (r->code == 8001 && strcmp(r->text, "Network not found") == 0)
		return 0;
	if (r->code != 0)
		return -1;

	struct route_tmp cur, chosen;
	bool have_cur = false, have_chosen = false;
	unsigned nroutes = 0;
	for (size_t i = 0; i + 1 < r->nlines; i++) {
		const struct bird_line *l = &r->lines[i];
		const char *t = l->text;
		if (l->code == 1007) {
			if (t[0] == '\t') {
				if (!have_cur)
					return -1;
				parse_nexthop_line(t, &cur);
				continue;
			}
			if (strncmp(t, "Table ", 6) == 0 && l->len > 6 && t[l->len - 1] == ':') {
				if (have_cur || have_chosen)
					break;  /* the first table with routes is the one used */
				continue;
			}
			if (have_cur && (!have_chosen || (!chosen.best && cur.best))) {
				chosen = cur;
				have_chosen = true;
			}
			if (parse_route_line(t, &cur) < 0)
				return -1;
			have_cur = true;
			nroutes++;
		} else if (l->code == 1008 && have_cur) {
			const char *p = skip_spaces(t);
			if (strncmp(p, "Type:", 5) == 0)
				copy_word(skip_spaces(p + 5), 0, cur.source, sizeof(cur.source));
		} else if (l->code == 1012 && have_cur) {
			parse_attr_line(t, &cur);
		}
	}
	if (have_cur && (!have_chosen || (!chosen.best && cur.best))) {
		chosen = cur;
		have_chosen = true;
	}
	if (have_chosen) {
		route_to_info(&chosen, out);
		out->nroutes = nroutes;
	}
	return 0;
}

/* ---- the client ----------------------------------------------------------- */

const char *bird_strerror(int err)
{
	switch (err) {
	case 0: return "ok";
	case BIRD_ERR_TIMEOUT: return "BIRD did not answer in time";
	case BIRD_ERR_DISCONNECTED: return "connection to BIRD lost";
	case BIRD_ERR_PROTOCOL: return "BIRD sent an unreadable reply";
	case BIRD_ERR_CLOSED: return "BIRD client closed";
	case BIRD_ERR_QUEUE_FULL: return "too many BIRD queries queued";
	case BIRD_ERR_INVALID: return "invalid BIRD command";
	default: return "unknown BIRD client error";
	}
}

enum client_state {
	CS_WAIT,                /* the retry timer runs */
	CS_CONNECTING,
	CS_GREETING,            /* connected, the greeting awaited */
	CS_UP,
	CS_CLOSED,
};

struct bird_query {
	struct bird_query *next;
	bird_query_fn cb;
	void *arg;
	size_t len;             /* with the newline */
	char cmd[];
};

struct bird_conn {
	uv_pipe_t pipe;         /* first: the handle's address is the connection's */
	uv_connect_t connect;
	struct bird_client *c;
	bool dropped;           /* no longer the client's connection: ignore its events */
	char rbuf[16384];
};

struct bird_write {
	uv_write_t req;
	struct bird_conn *conn;
	char data[];
};

struct bird_client {
	uv_loop_t *loop;
	char *path;
	struct bird_client_ops ops;
	void *arg;
	uint64_t timeout_ms, backoff_first_ms, backoff_max_ms, backoff_ms;
	size_t max_queue;
	enum client_state state;
	struct bird_conn *conn;
	uv_timer_t timer;       /* connecting, the greeting, the command in flight */
	uv_timer_t retry;
	struct bird_reader rd;
	struct bird_query *inflight;
	struct bird_query *head, **tail;
	size_t nqueued;         /* in flight included */
	bool down_told;         /* the failure was reported: quiet until up */
	char status[256];
	unsigned open_handles;  /* timers + connections: freed at zero */
	bool closing;
};

static void client_release(struct bird_client *c)
{
	if (--c->open_handles > 0)
		return;
	bird_reader_free(&c->rd);
	free(c->path);
	free(c);
}

static void handle_closed(uv_handle_t *h)
{
	client_release(h->data);
}

static void conn_closed(uv_handle_t *h)
{
	struct bird_conn *conn = (struct bird_conn *)h;
	struct bird_client *c = conn->c;
	free(conn);
	client_release(c);
}

/* Lets the connection go; its pending callbacks find it dropped. */
static void conn_drop(struct bird_client *c)
{
	struct bird_conn *conn = c->conn;
	if (!conn)
		return;
	c->conn = NULL;
	conn->dropped = true;
	uv_close((uv_handle_t *)&conn->pipe, conn_closed);
	uv_timer_stop(&c->timer);
	bird_reader_reset(&c->rd);
}

static void start_connect(struct bird_client *c);

static void on_retry(uv_timer_t *t)
{
	struct bird_client *c = t->data;
	if (c->state == CS_WAIT && !c->closing)
		start_connect(c);
}

/* The connection failed or broke: the query in flight fails, the rest wait. */
static void conn_fail(struct bird_client *c, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void conn_fail(struct bird_client *c, int err, const char *fmt, ...)
{
	char why[sizeof(c->status)];
	va_list ap;
	if (c->closing)
		return;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);

	conn_drop(c);
	c->state = CS_WAIT;
	snprintf(c->status, sizeof(c->status), "%s", why);
	uint64_t delay = c->backoff_ms;
	c->backoff_ms = c->backoff_ms * 2 > c->backoff_max_ms ? c->backoff_max_ms : c->backoff_ms * 2;
	uv_timer_start(&c->retry, on_retry, delay, 0);

	struct bird_query *q = c->inflight;
	if (q) {
		c->inflight = NULL;
		c->nqueued--;
		q->cb(q->arg, err, NULL);
		free(q);
		if (c->closing)
			return;
	}
	if (!c->down_told) {
		c->down_told = true;
		log_warn("BIRD %s: %s; retrying with backoff", c->path, why);
		if (c->ops.down)
			c->ops.down(c->arg, why);
	} else {
		log_debug("BIRD %s: %s; retrying in %" PRIu64 " ms", c->path, why, delay);
	}
}

static void on_timeout(uv_timer_t *t)
{
	struct bird_client *c = t->data;
	if (c->state == CS_CONNECTING || c->state == CS_GREETING)
		conn_fail(c, BIRD_ERR_TIMEOUT, "no greeting within %" PRIu64 " ms", c->timeout_ms);
	else if (c->state == CS_UP && c->inflight)
		conn_fail(c, BIRD_ERR_TIMEOUT, "no reply to \"%.*s\" within %" PRIu64 " ms",
			  (int)c->inflight->len - 1, c->inflight->cmd, c->timeout_ms);
}

static void on_write(uv_write_t *req, int status)
{
	struct bird_write *w = (struct bird_write *)req;
	struct bird_conn *conn = w->conn;
	free(w);
	if (status < 0 && !conn->dropped)
		conn_fail(conn->c, BIRD_ERR_DISCONNECTED, "write: %s", uv_strerror(status));
}

static void send_next(struct bird_client *c)
{
	if (c->state != CS_UP || c->inflight || !c->head || c->closing)
		return;
	struct bird_query *q = c->head;
	c->head = q->next;
	if (!c->head)
		c->tail = &c->head;
	q->next = NULL;
	c->inflight = q;
	struct bird_write *w = malloc(sizeof(*w) + q->len);
	int rc = UV_ENOMEM;
	if (w) {
		w->conn = c->conn;
		memcpy(w->data, q->cmd, q->len);
		uv_buf_t buf = uv_buf_init(w->data, (unsigned)q->len);
		rc = uv_write(&w->req, (uv_stream_t *)&c->conn->pipe, &buf, 1, on_write);
		if (rc < 0)
			free(w);
	}
	if (rc < 0) {
		conn_fail(c, BIRD_ERR_DISCONNECTED, "write: %s", uv_strerror(rc));
		return;
	}
	uv_timer_start(&c->timer, on_timeout, c->timeout_ms, 0);
}

static void got_reply(struct bird_client *c, struct bird_reply *r)
{
	if (c->state == CS_GREETING) {
		if (r->code != 1) {
			conn_fail(c, BIRD_ERR_PROTOCOL, "not a BIRD greeting: %04d %.80s", r->code, r->text);
			return;
		}
		uv_timer_stop(&c->timer);
		c->state = CS_UP;
		c->backoff_ms = c->backoff_first_ms;
		c->down_told = false;
		snprintf(c->status, sizeof(c->status), "%s", r->text);
		log_info("BIRD %s: connected (%s)", c->path, r->text);
		if (c->ops.up)
			c->ops.up(c->arg, r->text);
		send_next(c);
		return;
	}
	struct bird_query *q = c->inflight;
	if (!q) {
		conn_fail(c, BIRD_ERR_PROTOCOL, "a reply to no command: %04d %.80s", r->code, r->text);
		return;
	}
	uv_timer_stop(&c->timer);
	c->inflight = NULL;
	c->nqueued--;
	q->cb(q->arg, 0, r);
	free(q);
	send_next(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct bird_conn *conn = (struct bird_conn *)h;
	(void)suggested;
	*buf = uv_buf_init(conn->rbuf, sizeof(conn->rbuf));
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct bird_conn *conn = (struct bird_conn *)stream;
	struct bird_client *c = conn->c;
	if (conn->dropped || nread == 0)
		return;
	if (nread < 0) {
		if (nread == UV_EOF)
			conn_fail(c, BIRD_ERR_DISCONNECTED, "BIRD closed the connection");
		else
			conn_fail(c, BIRD_ERR_DISCONNECTED, "read: %s", uv_strerror((int)nread));
		return;
	}
	const char *data = buf->base;
	size_t len = (size_t)nread;
	/* every callback may drop the connection or close the client */
	while (len > 0 && c->conn == conn) {
		size_t used;
		enum bird_event ev = bird_reader_feed(&c->rd, data, len, &used);
		data += used;
		len -= used;
		if (ev == BIRD_EV_ERROR) {
			conn_fail(c, BIRD_ERR_PROTOCOL, "%s", bird_reader_error(&c->rd));
			return;
		}
		if (ev == BIRD_EV_ASYNC) {
			size_t alen;
			const char *text = bird_reader_async(&c->rd, &alen);
			if (c->ops.async)
				c->ops.async(c->arg, text);
		} else if (ev == BIRD_EV_REPLY) {
			struct bird_reply *r = bird_reader_take_reply(&c->rd);
			got_reply(c, r);
			bird_reply_free(r);
		}
	}
}

static void on_connect(uv_connect_t *req, int status)
{
	struct bird_conn *conn = req->data;
	struct bird_client *c = conn->c;
	if (conn->dropped)
		return;
	if (status < 0) {
		conn_fail(c, BIRD_ERR_DISCONNECTED, "connect: %s", uv_strerror(status));
		return;
	}
	int rc = uv_read_start((uv_stream_t *)&conn->pipe, on_alloc, on_read);
	if (rc < 0) {
		conn_fail(c, BIRD_ERR_DISCONNECTED, "read: %s", uv_strerror(rc));
		return;
	}
	c->state = CS_GREETING;
}

static void start_connect(struct bird_client *c)
{
	struct bird_conn *conn = calloc(1, sizeof(*conn));
	if (!conn) {
		conn_fail(c, BIRD_ERR_DISCONNECTED, "out of memory");
		return;
	}
	conn->c = c;
	conn->connect.data = conn;
	uv_pipe_init(c->loop, &conn->pipe, 0);
	c->open_handles++;
	c->conn = conn;
	c->state = CS_CONNECTING;
	bird_reader_reset(&c->rd);
	uv_pipe_connect(&conn->connect, &conn->pipe, c->path, on_connect);
	uv_timer_start(&c->timer, on_timeout, c->timeout_ms, 0);
}

struct bird_client *bird_client_open(uv_loop_t *loop, const char *socket_path,
				     const struct bird_client_ops *ops, void *arg)
{
	struct sockaddr_un sun;
	if (!loop || !socket_path || !socket_path[0] || strlen(socket_path) >= sizeof(sun.sun_path))
		return NULL;
	struct bird_client *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->path = strdup(socket_path);
	if (!c->path) {
		free(c);
		return NULL;
	}
	c->loop = loop;
	if (ops)
		c->ops = *ops;
	c->arg = arg;
	c->timeout_ms = BIRD_DEFAULT_TIMEOUT_MS;
	c->backoff_first_ms = c->backoff_ms = BIRD_DEFAULT_BACKOFF_MS;
	c->backoff_max_ms = BIRD_DEFAULT_BACKOFF_MAX_MS;
	c->max_queue = BIRD_DEFAULT_MAX_QUEUE;
	c->tail = &c->head;
	c->state = CS_WAIT;
	bird_reader_init(&c->rd);
	uv_timer_init(loop, &c->timer);
	uv_timer_init(loop, &c->retry);
	c->timer.data = c->retry.data = c;
	c->open_handles = 2;
	uv_timer_start(&c->retry, on_retry, 0, 0);
	return c;
}

void bird_client_set_timeout(struct bird_client *c, uint64_t ms)
{
	c->timeout_ms = ms ? ms : BIRD_DEFAULT_TIMEOUT_MS;
}

void bird_client_set_backoff(struct bird_client *c, uint64_t first_ms, uint64_t max_ms)
{
	c->backoff_first_ms = first_ms ? first_ms : BIRD_DEFAULT_BACKOFF_MS;
	c->backoff_max_ms = max_ms ? max_ms : BIRD_DEFAULT_BACKOFF_MAX_MS;
	if (c->backoff_max_ms < c->backoff_first_ms)
		c->backoff_max_ms = c->backoff_first_ms;
	c->backoff_ms = c->backoff_first_ms;
}

void bird_client_set_max_queue(struct bird_client *c, size_t n)
{
	c->max_queue = n ? n : BIRD_DEFAULT_MAX_QUEUE;
}

int bird_client_query(struct bird_client *c, const char *cmd, bird_query_fn cb, void *arg)
{
	if (c->closing)
		return BIRD_ERR_CLOSED;
	size_t n = strlen(cmd);
	if (n == 0 || n > BIRD_MAX_COMMAND || !cb)
		return BIRD_ERR_INVALID;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)cmd[i] < 0x20 || cmd[i] == 0x7f)
			return BIRD_ERR_INVALID;
	if (c->nqueued >= c->max_queue)
		return BIRD_ERR_QUEUE_FULL;
	struct bird_query *q = malloc(sizeof(*q) + n + 1);
	if (!q)
		return BIRD_ERR_QUEUE_FULL;
	q->next = NULL;
	q->cb = cb;
	q->arg = arg;
	q->len = n + 1;
	memcpy(q->cmd, cmd, n);
	q->cmd[n] = '\n';
	*c->tail = q;
	c->tail = &q->next;
	c->nqueued++;
	send_next(c);
	return 0;
}

bool bird_client_is_up(const struct bird_client *c)
{
	return c->state == CS_UP;
}

size_t bird_client_queued(const struct bird_client *c)
{
	return c->nqueued;
}

const char *bird_client_status(const struct bird_client *c)
{
	return c->status;
}

void bird_client_close(struct bird_client *c)
{
	if (!c || c->closing)
		return;
	c->closing = true;
	c->state = CS_CLOSED;
	conn_drop(c);
	uv_timer_stop(&c->timer);
	uv_timer_stop(&c->retry);
	/* the callbacks may query (refused) or close again (nothing) */
	struct bird_query *q = c->inflight;
	c->inflight = NULL;
	if (q) {
		c->nqueued--;
		q->cb(q->arg, BIRD_ERR_CLOSED, NULL);
		free(q);
	}
	while ((q = c->head)) {
		c->head = q->next;
		c->nqueued--;
		q->cb(q->arg, BIRD_ERR_CLOSED, NULL);
		free(q);
	}
	c->tail = &c->head;
	uv_close((uv_handle_t *)&c->timer, handle_closed);
	uv_close((uv_handle_t *)&c->retry, handle_closed);
}

/* ---- show status ---------------------------------------------------------- */

static bool two_digits(const char *p, unsigned lo, unsigned hi, unsigned *v)
{
	if (p[0] < '0' || p[0] > '9' || p[1] < '0' || p[1] > '9')
		return false;
	*v = (unsigned)(p[0] - '0') * 10 + (unsigned)(p[1] - '0');
	return *v >= lo && *v <= hi;
}

/* "YYYY-MM-DD HH:MM:SS[.f...]" to milliseconds since 1970 (days by the
 * civil-from-days inverse, no time zone: only differences are used). */
static bool parse_time_ms(const char *t, int64_t *ms)
{
	unsigned y1, y2, mo, d, h, mi, s;
	if (!two_digits(t, 0, 99, &y1) || !two_digits(t + 2, 0, 99, &y2) || t[4] != '-' ||
	    !two_digits(t + 5, 1, 12, &mo) || t[7] != '-' || !two_digits(t + 8, 1, 31, &d) ||
	    t[10] != ' ' || !two_digits(t + 11, 0, 23, &h) || t[13] != ':' ||
	    !two_digits(t + 14, 0, 59, &mi) || t[16] != ':' || !two_digits(t + 17, 0, 60, &s))
		return false;
	const char *p = t + 19;
	unsigned frac = 0, digits = 0;
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, digits++)
			if (digits < 3)
				frac = frac * 10 + (unsigned)(*p - '0');
		if (digits == 0)
			return false;
		for (unsigned i = digits; i < 3; i++)
			frac *= 10;
	}
	if (*p)
		return false;
	int64_t yy = (int64_t)(y1 * 100 + y2) - (mo <= 2);
	int64_t era = yy / 400;
	int64_t yoe = yy - era * 400;
	int64_t doy = (153 * (mo > 2 ? mo - 3 : mo + 9) + 2) / 5 + d - 1;
	int64_t days = era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
	*ms = ((days * 24 + h) * 60 + mi) * 60000 + (int64_t)s * 1000 + frac;
	return true;
}

int bird_parse_uptime(const struct bird_reply *r, uint64_t *ms)
{
	static const char now_p[] = "Current server time is ", boot_p[] = "Last reboot on ";
	int64_t now = 0, boot = 0;
	bool have_now = false, have_boot = false;
	if (!r || bird_reply_is_error(r))
		return -1;
	for (size_t i = 0; i < r->nlines; i++) {
		const char *t = r->lines[i].text;
		if (strncmp(t, now_p, sizeof(now_p) - 1) == 0)
			have_now = parse_time_ms(t + sizeof(now_p) - 1, &now);
		else if (strncmp(t, boot_p, sizeof(boot_p) - 1) == 0)
			have_boot = parse_time_ms(t + sizeof(boot_p) - 1, &boot);
	}
	if (!have_now || !have_boot || now < boot)
		return -1;
	*ms = (uint64_t)(now - boot);
	return 0;
}
