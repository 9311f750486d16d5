#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>
#include <uv.h>

#include "ctl.h"
#include "list.h"
#include "sockpath.h"
#include "log.h"

/* ---- replies ---------------------------------------------------------- */

static void reply_add(struct ctl_reply *r, int code, char sep, const char *fmt, va_list ap)
{
	va_list measure;
	va_copy(measure, ap);
	int n = vsnprintf(NULL, 0, fmt, measure);
	va_end(measure);
	if (n < 0)
		return;
	size_t len = (size_t)n > CTL_MAX_REPLY_LINE - 7 ? CTL_MAX_REPLY_LINE - 7 : (size_t)n;
	struct strbuf *b = &r->out;
	if (!strbuf_reserve(b, len + 7))
		return;
	char *line = b->s + b->len;
	int h = snprintf(line, b->cap - b->len, "%04d%c", code % 10000, sep);
	char *text = line + h;
	vsnprintf(text, len + 1, fmt, ap);
	/* one reply line is one line: a newline in the text would forge another */
	for (size_t i = 0; i < len; i++)
		if (text[i] == '\n' || text[i] == '\r')
			text[i] = ' ';
	text[len] = '\n';
	b->len += (size_t)h + len + 1;
	b->s[b->len] = 0;
}

void ctl_reply_line(struct ctl_reply *r, int code, const char *fmt, ...)
{
	va_list ap;
	if (r->ended)
		return;
	va_start(ap, fmt);
	reply_add(r, code, '-', fmt, ap);
	va_end(ap);
}

void ctl_reply_end(struct ctl_reply *r, int code, const char *fmt, ...)
{
	va_list ap;
	if (r->ended)
		return;
	va_start(ap, fmt);
	reply_add(r, code, ' ', fmt, ap);
	va_end(ap);
	r->ended = true;
}

/* ---- command tables --------------------------------------------------- */

/* How many of the entry's words argv starts with; -1 if it does not. */
static int match_words(const char *words, int argc, char **argv)
{
	int n = 0;
	const char *w = words;
	while (*w) {
		size_t len = strcspn(w, " ");
		if (n >= argc || strlen(argv[n]) != len || strncmp(argv[n], w, len) != 0)
			return -1;
		n++;
		w += len;
		w += strspn(w, " ");
	}
	return n;
}

void ctl_cmd_set_log_level(void *ctx, char **args, unsigned nargs, bool json, struct ctl_reply *r)
{
	(void)ctx;
	(void)nargs;
	(void)json;
	int level = log_level_parse(args[0]);
	if (level < 0) {
		ctl_reply_end(r, CTL_ERR_SYNTAX, "unknown log level '%s' (err, warn, info, debug)", args[0]);
		return;
	}
	enum log_level was = log_level_now();
	log_set_level((enum log_level)level);
	log_info("log level %s (was %s), set on the control socket", args[0], log_level_name(was));
	ctl_reply_end(r, CTL_OK, "log level %s", args[0]);
}

void ctl_dispatch(const struct ctl_command *table, void *ctx, int argc, char **argv, struct ctl_reply *r)
{
	if (argc == 1 && strcmp(argv[0], "help") == 0) {
		for (const struct ctl_command *c = table; c->words; c++)
			ctl_reply_line(r, CTL_DATA, "%-28s %s", c->usage, c->help);
		ctl_reply_line(r, CTL_DATA, "%-28s %s", "quit", "close this connection");
		return;
	}
	bool json = argc >= 2 && strcmp(argv[argc - 1], "json") == 0;
	for (const struct ctl_command *c = table; c->words; c++) {
		int words = c->json && json ? argc - 1 : argc;
		int n = match_words(c->words, words, argv);
		if (n < 0)
			continue;
		unsigned nargs = (unsigned)(words - n);
		if (nargs < c->min_args || nargs > c->max_args)
			continue;
		c->fn(ctx, argv + n, nargs, c->json && json, r);
		return;
	}
	ctl_reply_end(r, CTL_ERR_SYNTAX, "unknown command '%s' (try 'help')", argc ? argv[0] : "");
}

/* ---- server ----------------------------------------------------------- */

struct ctl_client {
	uv_pipe_t pipe;                 /* first: the handle's address is the client's */
	struct ctl_server *server;
	struct list_node link;          /* on server->clients */
	uv_shutdown_t shutdown;
	char in[CTL_MAX_LINE + 1];
	size_t inlen;
	bool discarding;                /* said goodbye: drop input until the client hangs up */
	bool shutting, shut;            /* our side: shutdown asked, done (replies out) */
	bool eof;                       /* the client's side */
	bool closing;
};

struct ctl_server {
	uv_pipe_t listener;
	uv_loop_t *loop;
	char *path;
	char *name;
	ctl_handler_fn fn;
	void *ctx;
	struct list clients;
	unsigned nclients;
	unsigned open_handles;          /* listener + clients: freed at zero */
	bool closing;
};

struct ctl_write {
	uv_write_t req;
	char data[];
};

static void server_release(struct ctl_server *s)
{
	if (--s->open_handles > 0)
		return;
	free(s->path);
	free(s->name);
	free(s);
}

static void client_closed(uv_handle_t *h)
{
	struct ctl_client *c = (struct ctl_client *)h;
	struct ctl_server *s = c->server;
	list_remove(&s->clients, &c->link);
	s->nclients--;
	free(c);
	server_release(s);
}

static void client_close(struct ctl_client *c)
{
	if (c->closing)
		return;
	c->closing = true;
	uv_close((uv_handle_t *)&c->pipe, client_closed);
}

static void write_done(uv_write_t *req, int status)
{
	struct ctl_write *w = (struct ctl_write *)req;
	(void)status;   /* a client gone away: its read side closes it */
	free(w);
}

static void client_send(struct ctl_client *c, const char *data, size_t len)
{
	if (c->closing || len == 0)
		return;
	struct ctl_write *w = malloc(sizeof(*w) + len);
	if (!w) {
		client_close(c);
		return;
	}
	memcpy(w->data, data, len);
	uv_buf_t buf = uv_buf_init(w->data, (unsigned)len);
	if (uv_write(&w->req, (uv_stream_t *)&c->pipe, &buf, 1, write_done) < 0) {
		free(w);
		client_close(c);
	}
}

static void client_sendf(struct ctl_client *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void client_sendf(struct ctl_client *c, int code, const char *fmt, ...)
{
	struct ctl_reply r = { 0 };
	va_list ap;
	va_start(ap, fmt);
	reply_add(&r, code, ' ', fmt, ap);
	va_end(ap);
	if (!r.out.nomem)
		client_send(c, r.out.s, r.out.len);
	strbuf_free(&r.out);
}

static void client_goodbye(struct ctl_client *c);

static void run_command(struct ctl_client *c, char *line)
{
	char *argv[CTL_MAX_WORDS + 1];
	int argc = 0;
	for (char *save = NULL, *w = strtok_r(line, " \t\r", &save); w; w = strtok_r(NULL, " \t\r", &save)) {
		if (argc == CTL_MAX_WORDS) {
			client_sendf(c, CTL_ERR_SYNTAX, "more than %d words", CTL_MAX_WORDS);
			return;
		}
		argv[argc++] = w;
	}
	argv[argc] = NULL;
	if (argc == 0)
		return;
	if (strcmp(argv[0], "quit") == 0 || strcmp(argv[0], "exit") == 0) {
		client_goodbye(c);      /* after the replies to the commands before */
		return;
	}
	struct ctl_reply r = { 0 };
	c->server->fn(c->server->ctx, argc, argv, &r);
	if (!r.ended)
		ctl_reply_end(&r, CTL_OK, "OK");
	if (r.out.nomem) {
		strbuf_free(&r.out);
		client_sendf(c, CTL_ERR_FAILED, "out of memory");
		return;
	}
	client_send(c, r.out.s, r.out.len);
	strbuf_free(&r.out);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct ctl_client *c = (struct ctl_client *)h;
	(void)suggested;
	*buf = uv_buf_init(c->in + c->inlen, (unsigned)(CTL_MAX_LINE - c->inlen));
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	struct ctl_client *c = req->data;
	(void)status;   /* a client gone away: its read side closes it */
	c->shut = true;
	if (c->eof)     /* it hung up first: closed once its replies are out */
		client_close(c);
}

/* Ends our side once the replies queued are written (uv_close would drop them). */
static void client_shutdown(struct ctl_client *c)
{
	if (c->shutting)
		return;
	c->shutting = true;
	c->shutdown.data = c;
	if (uv_shutdown(&c->shutdown, (uv_stream_t *)&c->pipe, on_shutdown) < 0)
		client_close(c);
}

/*
 * Stops talking.  Closing at once with the client's bytes still unread
 * would send a reset, which can destroy the reply in flight; so the write
 * side is shut down and input dropped until the client goes.
 */
static void client_goodbye(struct ctl_client *c)
{
	c->discarding = true;
	c->inlen = 0;
	client_shutdown(c);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	struct ctl_client *c = (struct ctl_client *)stream;
	(void)buf;
	if (nread == UV_EOF) {
		/* a client may send its commands and half-close: it still gets every reply */
		c->eof = true;
		uv_read_stop(stream);
		if (c->shut)
			client_close(c);
		else
			client_shutdown(c);
		return;
	}
	if (nread < 0) {
		client_close(c);
		return;
	}
	if (c->discarding)
		return;
	c->inlen += (size_t)nread;
	for (;;) {
		char *nl = memchr(c->in, '\n', c->inlen);
		if (!nl)
			break;
		*nl = 0;
		size_t used = (size_t)(nl - c->in) + 1;
		if (memchr(c->in, 0, used - 1))
			client_sendf(c, CTL_ERR_SYNTAX, "NUL byte in command");
		else
			run_command(c, c->in);
		if (c->closing || c->discarding)
			return;
		memmove(c->in, c->in + used, c->inlen - used);
		c->inlen -= used;
	}
	if (c->inlen == CTL_MAX_LINE) {
		client_sendf(c, CTL_ERR_TOO_LONG, "command longer than %d bytes", CTL_MAX_LINE);
		client_goodbye(c);
	}
}

static void on_connection(uv_stream_t *listener, int status)
{
	struct ctl_server *s = (struct ctl_server *)listener;
	if (status < 0 || s->closing)
		return;
	struct ctl_client *c = calloc(1, sizeof(*c));
	if (!c)
		return;
	c->server = s;
	uv_pipe_init(s->loop, &c->pipe, 0);
	s->open_handles++;
	list_push(&s->clients, &c->link);
	s->nclients++;
	if (uv_accept(listener, (uv_stream_t *)&c->pipe) < 0) {
		client_close(c);
		return;
	}
	if (s->nclients > CTL_MAX_CLIENTS) {
		client_sendf(c, CTL_ERR_BUSY, "too many control clients");
		client_close(c);
		return;
	}
	client_sendf(c, CTL_GREETING, "%s ready.", s->name);
	uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read);
}

static void listener_closed(uv_handle_t *h)
{
	server_release((struct ctl_server *)h);
}

struct ctl_server *ctl_server_open(uv_loop_t *loop, const char *path, const char *name,
				   ctl_handler_fn fn, void *ctx, char *err, size_t err_len)
{
	struct sockaddr_un sun;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		snprintf(err, err_len, "control socket path too long: %s", path);
		return NULL;
	}
	/* a socket file left by a daemon that died is replaced; anything else is not */
	if (sockpath_clear(path, "control socket", err, err_len) < 0)
		return NULL;
	struct ctl_server *s = calloc(1, sizeof(*s));
	if (!s || !(s->path = strdup(path)) || !(s->name = strdup(name))) {
		if (s)
			free(s->path);
		free(s);
		snprintf(err, err_len, "out of memory");
		return NULL;
	}
	s->loop = loop;
	s->fn = fn;
	s->ctx = ctx;
	uv_pipe_init(loop, &s->listener, 0);
	s->open_handles = 1;
	mode_t old = umask(0117);
	int rc = uv_pipe_bind(&s->listener, path);
	umask(old);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)&s->listener, 8, on_connection);
	if (rc < 0) {
		snprintf(err, err_len, "control socket %s: %s", path, uv_strerror(rc));
		s->closing = true;
		uv_close((uv_handle_t *)&s->listener, listener_closed);
		return NULL;
	}
	return s;
}

void ctl_server_close(struct ctl_server *s)
{
	if (!s || s->closing)
		return;
	s->closing = true;
	unlink(s->path);
	for (struct list_node *n = s->clients.head; n; n = n->next)
		client_close(list_entry(n, struct ctl_client, link));
	uv_close((uv_handle_t *)&s->listener, listener_closed);
}

/* ---- client ----------------------------------------------------------- */

int ctl_parse_line(const char *line, size_t len, int *code, bool *more, const char **text)
{
	if (len < 5)
		return -1;
	int v = 0;
	for (int i = 0; i < 4; i++) {
		if (line[i] < '0' || line[i] > '9')
			return -1;
		v = v * 10 + (line[i] - '0');
	}
	if (line[4] != '-' && line[4] != ' ')
		return -1;
	*code = v;
	*more = line[4] == '-';
	*text = line + 5;
	return 0;
}

struct line_reader {
	int fd;
	char buf[CTL_MAX_REPLY_LINE + 1];
	size_t len;
};

/* Reads one line into out (NUL-terminated, no newline); -1 on EOF or error. */
static int read_line(struct line_reader *lr, char *out, size_t out_len, char *err, size_t err_len)
{
	for (;;) {
		char *nl = memchr(lr->buf, '\n', lr->len);
		if (nl) {
			size_t n = (size_t)(nl - lr->buf);
			if (n >= out_len)
				n = out_len - 1;
			memcpy(out, lr->buf, n);
			out[n] = 0;
			size_t used = (size_t)(nl - lr->buf) + 1;
			memmove(lr->buf, lr->buf + used, lr->len - used);
			lr->len -= used;
			return 0;
		}
		if (lr->len == sizeof(lr->buf) - 1) {
			snprintf(err, err_len, "reply line longer than %d bytes", CTL_MAX_REPLY_LINE);
			return -1;
		}
		ssize_t r = read(lr->fd, lr->buf + lr->len, sizeof(lr->buf) - 1 - lr->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			snprintf(err, err_len, "%s", r == 0 ? "connection closed in the middle of a reply"
							   : strerror(errno));
			return -1;
		}
		lr->len += (size_t)r;
	}
}

int ctl_command(const char *path, const char *command, ctl_line_fn fn, void *arg,
		bool *connected, char *err, size_t err_len)
{
	*connected = false;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sun.sun_path)) {
		snprintf(err, err_len, "socket path too long: %s", path);
		return -1;
	}
	if (strchr(command, '\n') || strlen(command) >= CTL_MAX_LINE) {
		snprintf(err, err_len, "a command is one line of less than %d bytes", CTL_MAX_LINE);
		return -1;
	}
	strcpy(sun.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, err_len, "socket: %s", strerror(errno));
		return -1;
	}
	/* a daemon that stops answering must not hang the CLI */
	struct timeval tv = { .tv_sec = 30 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		snprintf(err, err_len, "%s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	*connected = true;
	struct line_reader *lr = calloc(1, sizeof(*lr));
	char *line = malloc(CTL_MAX_REPLY_LINE + 1);
	size_t line_size = CTL_MAX_REPLY_LINE + 1;
	int code = -1;
	bool more;
	const char *text;
	if (!lr || !line) {
		snprintf(err, err_len, "out of memory");
		goto out;
	}
	lr->fd = fd;
	if (read_line(lr, line, line_size, err, err_len) < 0)
		goto out;
	if (ctl_parse_line(line, strlen(line), &code, &more, &text) < 0 || more ||
	    (code != CTL_GREETING && code < 8000)) {
		snprintf(err, err_len, "%s does not greet like a control socket: %.80s", path, line);
		code = -1;
		goto out;
	}
	if (code != CTL_GREETING) {     /* refused, e.g. too many clients */
		snprintf(err, err_len, "%s", text);
		if (fn)
			fn(arg, code, text);
		goto out;
	}
	size_t clen = strlen(command);
	char *msg = malloc(clen + 2);
	if (!msg) {
		snprintf(err, err_len, "out of memory");
		code = -1;
		goto out;
	}
	memcpy(msg, command, clen);
	msg[clen] = '\n';
	ssize_t w = write(fd, msg, clen + 1);
	free(msg);
	if (w != (ssize_t)(clen + 1)) {
		snprintf(err, err_len, "sending the command: %s", w < 0 ? strerror(errno) : "short write");
		code = -1;
		goto out;
	}
	for (;;) {
		if (read_line(lr, line, line_size, err, err_len) < 0) {
			code = -1;
			break;
		}
		if (ctl_parse_line(line, strlen(line), &code, &more, &text) < 0) {
			snprintf(err, err_len, "not a reply line: %.80s", line);
			code = -1;
			break;
		}
		if (fn)
			fn(arg, code, text);
		if (!more)
			break;
	}
out:
	free(lr);
	free(line);
	close(fd);
	return code;
}
