/*
 * Configuration parser: a hand-written tokenizer feeding a recursive descent
 * over statements and blocks.  Everything one parse keeps comes from a chunk
 * arena hanging off conf->priv, so an error anywhere just drops the arena.
 * Only the raw file buffers are malloc'd on their own, and each is freed by
 * the function that read it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "addr.h"
#include "conf.h"
#include "readfile.h"

_Static_assert(CONF_MAX_FILE == 16u << 20, "update the 'larger than' messages");
#define TOO_LARGE "file larger than 16 MiB"

/* Arena */

#define CHUNK_SIZE	8192
#define ALIGN		_Alignof(max_align_t)

struct chunk {
	struct chunk *next;
	size_t used, size;
	max_align_t data[];
};

struct arena {
	struct chunk *head;
};

static void *arena_alloc(struct arena *a, size_t n)
{
	struct chunk *c = a->head;
	void *p;

	n = (n + ALIGN - 1) & ~(ALIGN - 1);
	if (!c || c->size - c->used < n) {
		size_t size = n > CHUNK_SIZE ? n : CHUNK_SIZE;

		if (!(c = malloc(sizeof(*c) + size)))
			return NULL;
		c->used = 0;
		c->size = size;
		c->next = a->head;
		a->head = c;
	}
	p = (char *)c->data + c->used;
	c->used += n;
	return p;
}

static void arena_release(struct chunk *c)
{
	while (c) {
		struct chunk *next = c->next;

		free(c);
		c = next;
	}
}

static char *arena_strndup(struct arena *a, const char *s, size_t n)
{
	char *p = arena_alloc(a, n + 1);

	if (p) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

/* Errors */

/* "file:line: message", or "file: message" for line 0 (the file as a whole). */
static void verror(char *err, size_t err_len, const char *file, unsigned line,
		   const char *fmt, va_list ap)
{
	int n;

	if (!err || err_len == 0)
		return;
	if (line)
		n = snprintf(err, err_len, "%s:%u: ", file, line);
	else
		n = snprintf(err, err_len, "%s: ", file);
	if (n < 0) {
		err[0] = '\0';
		n = 0;
	}
	if ((size_t)n < err_len)
		vsnprintf(err + n, err_len - n, fmt, ap);
}

int conf_error(char *err, size_t err_len, const struct conf_stmt *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verror(err, err_len, s ? s->file : "?", s ? s->line : 0, fmt, ap);
	va_end(ap);
	return -1;
}

/* Tokenizer */

struct parser {
	struct arena *arena;
	char *err;
	size_t err_len;
	unsigned includes;	/* current include nesting */
};

enum tok { T_EOF, T_WORD, T_SEMI, T_LBRACE, T_RBRACE };

struct token {
	enum tok type;
	unsigned line;
	char *word;
	bool quoted;
};

struct lexer {
	struct parser *ps;
	const char *file;	/* name in messages */
	const char *dir;	/* prefix for relative includes; "" is the cwd */
	const char *p, *end;
	unsigned line;
	bool peeked;
	struct token next;
};

static int perr(struct parser *ps, const char *file, unsigned line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int perr(struct parser *ps, const char *file, unsigned line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verror(ps->err, ps->err_len, file, line, fmt, ap);
	va_end(ap);
	return -1;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/*
 * Comments start only where a token could: "10.0.0.0/8" and "/etc/x.conf"
 * are words, and so is "a//b".
 */
static bool ends_word(char c)
{
	return is_space(c) || c == ';' || c == '{' || c == '}' || c == '"' || c == '#';
}

static int skip_blanks(struct lexer *lx)
{
	while (lx->p < lx->end) {
		const char *p = lx->p;
		bool two = p + 1 < lx->end;

		if (*p == '\n') {
			lx->line++;
			lx->p++;
		} else if (is_space(*p)) {
			lx->p++;
		} else if (*p == '#' || (two && p[0] == '/' && p[1] == '/')) {
			const char *nl = memchr(p, '\n', lx->end - p);

			lx->p = nl ? nl : lx->end;
		} else if (two && p[0] == '/' && p[1] == '*') {
			unsigned start = lx->line;

			for (p += 2; !(p + 1 < lx->end && p[0] == '*' && p[1] == '/'); p++) {
				if (p + 1 >= lx->end)
					return perr(lx->ps, lx->file, start, "unterminated comment");
				if (*p == '\n')
					lx->line++;
			}
			lx->p = p + 2;
		} else {
			break;
		}
	}
	return 0;
}

static int lex_string(struct lexer *lx, struct token *t)
{
	const char *s = lx->p + 1, *p;
	size_t n = 0;
	char *w;

	for (p = s; p < lx->end && *p != '"'; p++, n++) {
		if (*p == '\n')
			return perr(lx->ps, lx->file, t->line, "newline in string");
		if (*p != '\\')
			continue;
		if (p + 1 == lx->end)
			return perr(lx->ps, lx->file, t->line, "unterminated string");
		if (p[1] != '"' && p[1] != '\\') {
			unsigned char c = p[1];

			if (c > ' ' && c < 0x7f)
				return perr(lx->ps, lx->file, t->line,
					    "invalid escape '\\%c' in string (only \\\" and \\\\)", c);
			return perr(lx->ps, lx->file, t->line,
				    "invalid escape in string (only \\\" and \\\\)");
		}
		p++;
	}
	if (p >= lx->end)
		return perr(lx->ps, lx->file, t->line, "unterminated string");
	if (n > CONF_MAX_WORD)
		return perr(lx->ps, lx->file, t->line, "string longer than %d bytes", CONF_MAX_WORD);
	if (!(w = arena_alloc(lx->ps->arena, n + 1)))
		return perr(lx->ps, lx->file, t->line, "out of memory");
	for (n = 0; s < p; s++) {
		if (*s == '\\')
			s++;
		w[n++] = *s;
	}
	w[n] = '\0';
	lx->p = p + 1;
	t->type = T_WORD;
	t->word = w;
	t->quoted = true;
	return 0;
}

static int lex_bare(struct lexer *lx, struct token *t)
{
	const char *s = lx->p;

	while (lx->p < lx->end && !ends_word(*lx->p))
		lx->p++;
	if ((size_t)(lx->p - s) > CONF_MAX_WORD)
		return perr(lx->ps, lx->file, t->line, "word longer than %d bytes", CONF_MAX_WORD);
	if (!(t->word = arena_strndup(lx->ps->arena, s, lx->p - s)))
		return perr(lx->ps, lx->file, t->line, "out of memory");
	t->type = T_WORD;
	return 0;
}

static int lex(struct lexer *lx, struct token *t)
{
	if (lx->peeked) {
		*t = lx->next;
		lx->peeked = false;
		return 0;
	}
	if (skip_blanks(lx) < 0)
		return -1;
	t->line = lx->line;
	t->word = NULL;
	t->quoted = false;
	if (lx->p == lx->end) {
		t->type = T_EOF;
		return 0;
	}
	switch (*lx->p) {
	case ';':
		t->type = T_SEMI;
		break;
	case '{':
		t->type = T_LBRACE;
		break;
	case '}':
		t->type = T_RBRACE;
		break;
	case '"':
		return lex_string(lx, t);
	default:
		return lex_bare(lx, t);
	}
	lx->p++;
	return 0;
}

static void unlex(struct lexer *lx, const struct token *t)
{
	lx->next = *t;
	lx->peeked = true;
}

/* Files */

/* "dir/" of "dir/name.conf", or "" for a bare name. */
static char *dir_prefix(struct arena *a, const char *path)
{
	const char *slash = strrchr(path, '/');

	return arena_strndup(a, path, slash ? (size_t)(slash - path) + 1 : 0);
}

/* Statements */

static int parse_list(struct lexer *lx, unsigned depth, unsigned open_line,
		      struct conf_stmt ***tail);

static int parse_buffer(struct parser *ps, const char *file, const char *dir,
			const char *buf, size_t len, unsigned depth, struct conf_stmt ***tail)
{
	const char *nul = len ? memchr(buf, '\0', len) : NULL;
	struct lexer lx = {
		.ps = ps, .file = file, .dir = dir,
		.p = buf, .end = buf + len, .line = 1,
	};

	/* refused up front: C strings could not hold the rest of such a word */
	if (nul) {
		unsigned line = 1;

		for (const char *p = buf; (p = memchr(p, '\n', nul - p)); p++)
			line++;
		return perr(ps, file, line, "NUL byte");
	}
	return parse_list(&lx, depth, 0, tail);
}

/* include "path"; the included statements go where the include stood */
static int include(struct lexer *lx, const char *path, unsigned line, unsigned depth,
		   struct conf_stmt ***tail)
{
	struct parser *ps = lx->ps;
	size_t dl = path[0] == '/' ? 0 : strlen(lx->dir), pl = strlen(path);
	char why[128];
	char *file, *dir, *buf;
	size_t len;
	int rc;

	if (ps->includes == CONF_MAX_INCLUDE)
		return perr(ps, lx->file, line, "includes nested deeper than %d (include loop?)",
			    CONF_MAX_INCLUDE);
	if (pl == 0)
		return perr(ps, lx->file, line, "empty file name in 'include'");
	if (!(file = arena_alloc(ps->arena, dl + pl + 1)))
		return perr(ps, lx->file, line, "out of memory");
	memcpy(file, lx->dir, dl);
	memcpy(file + dl, path, pl + 1);
	if (!(dir = dir_prefix(ps->arena, file)))
		return perr(ps, lx->file, line, "out of memory");
	if (!(buf = readfile(file, CONF_MAX_FILE, true, &len, why, sizeof(why))))
		return perr(ps, lx->file, line, "cannot include '%s': %s", file, why);
	ps->includes++;
	rc = parse_buffer(ps, file, dir, buf, len, depth, tail);
	ps->includes--;
	free(buf);
	return rc;
}

static int parse_stmt(struct lexer *lx, const struct token *first, unsigned depth,
		      struct conf_stmt ***tail)
{
	struct parser *ps = lx->ps;
	char *words[CONF_MAX_ARGS];
	bool quoted[CONF_MAX_ARGS];
	unsigned n = 0, last = first->line;
	struct token t = *first;
	struct conf_stmt *s, **inner;

	for (;;) {
		if (t.type == T_SEMI || t.type == T_LBRACE)
			break;
		if (t.type == T_RBRACE)
			return perr(ps, lx->file, last, "missing ';' before '}'");
		if (t.type == T_EOF)
			return perr(ps, lx->file, last, "missing ';' at end of file");
		if (n == CONF_MAX_ARGS)
			return perr(ps, lx->file, first->line, "more than %d words in one statement",
				    CONF_MAX_ARGS);
		words[n] = t.word;
		quoted[n++] = t.quoted;
		last = t.line;
		if (lex(lx, &t) < 0)
			return -1;
	}

	if (strcmp(words[0], "include") == 0) {
		if (t.type == T_LBRACE)
			return perr(ps, lx->file, first->line, "'include' takes no block");
		if (n != 2)
			return perr(ps, lx->file, first->line, "'include' takes 2 words, got %u", n);
		return include(lx, words[1], first->line, depth, tail);
	}

	s = arena_alloc(ps->arena, sizeof(*s));
	if (s) {
		s->argv = arena_alloc(ps->arena, (n + 1) * sizeof(*s->argv));
		s->quoted = arena_alloc(ps->arena, n * sizeof(*s->quoted));
	}
	if (!s || !s->argv || !s->quoted)
		return perr(ps, lx->file, first->line, "out of memory");
	s->file = lx->file;
	s->line = first->line;
	s->argc = n;
	memcpy(s->argv, words, n * sizeof(*words));
	s->argv[n] = NULL;
	memcpy(s->quoted, quoted, n * sizeof(*quoted));
	s->has_block = t.type == T_LBRACE;
	s->block = NULL;
	s->next = NULL;
	**tail = s;
	*tail = &s->next;
	if (!s->has_block)
		return 0;

	if (depth == CONF_MAX_DEPTH)
		return perr(ps, lx->file, t.line, "blocks nested deeper than %d", CONF_MAX_DEPTH);
	inner = &s->block;
	if (parse_list(lx, depth + 1, t.line, &inner) < 0)
		return -1;
	/* "route x { ... };" is accepted too */
	if (lex(lx, &t) < 0)
		return -1;
	if (t.type != T_SEMI)
		unlex(lx, &t);
	return 0;
}

/* Statements up to the end of the file, or up to '}' if open_line is set. */
static int parse_list(struct lexer *lx, unsigned depth, unsigned open_line,
		      struct conf_stmt ***tail)
{
	struct token t;

	for (;;) {
		if (lex(lx, &t) < 0)
			return -1;
		switch (t.type) {
		case T_WORD:
			if (parse_stmt(lx, &t, depth, tail) < 0)
				return -1;
			break;
		case T_SEMI:
			break;
		case T_LBRACE:
			return perr(lx->ps, lx->file, t.line, "block without a statement");
		case T_RBRACE:
			if (open_line)
				return 0;
			return perr(lx->ps, lx->file, t.line, "unmatched '}'");
		case T_EOF:
			if (!open_line)
				return 0;
			return perr(lx->ps, lx->file, open_line, "unmatched '{'");
		}
	}
}

static struct conf *conf_new(void)
{
	struct arena tmp = { NULL }, *a;
	struct conf *c;

	/* the arena's own handle lives in its first chunk */
	c = arena_alloc(&tmp, sizeof(*c));
	a = arena_alloc(&tmp, sizeof(*a));
	if (!c || !a) {
		arena_release(tmp.head);
		return NULL;
	}
	*a = tmp;
	c->first = NULL;
	c->priv = a;
	return c;
}

void conf_free(struct conf *c)
{
	if (c)
		arena_release(((struct arena *)c->priv)->head);
}

struct conf *conf_parse_file(const char *path, char *err, size_t err_len)
{
	struct parser ps = { .err = err, .err_len = err_len };
	struct conf_stmt **tail;
	struct conf *c;
	const char *file, *dir;
	char why[128];
	char *buf;
	size_t len;
	int rc;

	if (err && err_len)
		err[0] = '\0';
	if (!(c = conf_new())) {
		perr(&ps, path, 0, "out of memory");
		return NULL;
	}
	ps.arena = c->priv;
	if (!(buf = readfile(path, CONF_MAX_FILE, false, &len, why, sizeof(why)))) {
		perr(&ps, path, 0, "%s", why);
		conf_free(c);
		return NULL;
	}
	file = arena_strndup(ps.arena, path, strlen(path));
	dir = dir_prefix(ps.arena, path);
	tail = &c->first;
	if (file && dir)
		rc = parse_buffer(&ps, file, dir, buf, len, 0, &tail);
	else
		rc = perr(&ps, path, 0, "out of memory");
	free(buf);
	if (rc < 0) {
		conf_free(c);
		return NULL;
	}
	return c;
}

struct conf *conf_parse_text(const char *text, size_t len, const char *file_name,
			     char *err, size_t err_len)
{
	struct parser ps = { .err = err, .err_len = err_len };
	struct conf_stmt **tail;
	struct conf *c;
	const char *file;
	int rc;

	if (!file_name)
		file_name = "<text>";
	if (err && err_len)
		err[0] = '\0';
	if (len > CONF_MAX_FILE) {
		perr(&ps, file_name, 0, TOO_LARGE);
		return NULL;
	}
	if (!(c = conf_new())) {
		perr(&ps, file_name, 0, "out of memory");
		return NULL;
	}
	ps.arena = c->priv;
	tail = &c->first;
	/* relative includes resolve against the working directory */
	if ((file = arena_strndup(ps.arena, file_name, strlen(file_name))))
		rc = parse_buffer(&ps, file, "", text, len, 0, &tail);
	else
		rc = perr(&ps, file_name, 0, "out of memory");
	if (rc < 0) {
		conf_free(c);
		return NULL;
	}
	return c;
}

/* Dispatch */

/* Levenshtein distance, or UINT_MAX when it is clearly above 2. */
static unsigned edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned row[64];

	if (lb >= 64 || la > lb + 2 || lb > la + 2)
		return UINT_MAX;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		unsigned diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned up = row[j];
			unsigned v = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < v)
				v = up + 1;
			if (row[j - 1] + 1 < v)
				v = row[j - 1] + 1;
			row[j] = v;
			diag = up;
		}
	}
	return row[lb];
}

static int unknown(const struct conf_stmt *s, const struct conf_keyword *table,
		   char *err, size_t err_len)
{
	const char *best = NULL;
	unsigned best_d = 3;

	for (const struct conf_keyword *k = table; k && k->keyword; k++) {
		unsigned d = edit_distance(s->argv[0], k->keyword);

		if (d < best_d) {
			best = k->keyword;
			best_d = d;
		}
	}
	if (best)
		return conf_error(err, err_len, s, "unknown statement '%s' (did you mean '%s'?)",
				  s->argv[0], best);
	return conf_error(err, err_len, s, "unknown statement '%s'", s->argv[0]);
}

static int count_error(const struct conf_stmt *s, const struct conf_keyword *k,
		       char *err, size_t err_len)
{
	const char *kw = s->argv[0];

	if (k->min_args == k->max_args)
		return conf_error(err, err_len, s, "'%s' takes %u word%s, got %u", kw,
				  k->min_args, k->min_args == 1 ? "" : "s", s->argc);
	if (k->max_args >= CONF_MAX_ARGS)
		return conf_error(err, err_len, s, "'%s' takes at least %u word%s, got %u", kw,
				  k->min_args, k->min_args == 1 ? "" : "s", s->argc);
	return conf_error(err, err_len, s, "'%s' takes %u to %u words, got %u", kw,
			  k->min_args, k->max_args, s->argc);
}

static const struct conf_keyword *find(const struct conf_keyword *table, const char *kw)
{
	const struct conf_keyword *k = table;
	while (k && k->keyword && strcmp(k->keyword, kw) != 0)
		k++;
	return k && k->keyword ? k : NULL;
}

int conf_dispatch_also(const struct conf_stmt *first, const struct conf_keyword *table, void *ctx,
		       const struct conf_keyword *also, void *also_ctx, char *err, size_t err_len)
{
	for (const struct conf_stmt *s = first; s; s = s->next) {
		const char *kw = s->argv[0];
		const struct conf_keyword *k = find(table, kw);
		void *c = ctx;
		if (!k && also) {
			k = find(also, kw);
			c = also_ctx;
		}
		if (!k)
			return unknown(s, table, err, err_len);
		if (s->argc < k->min_args || s->argc > k->max_args)
			return count_error(s, k, err, err_len);
		if (k->block == CONF_BLOCK && !s->has_block)
			return conf_error(err, err_len, s, "'%s' needs a { block }", kw);
		if (k->block == CONF_NO_BLOCK && s->has_block)
			return conf_error(err, err_len, s, "'%s' takes no { block }", kw);
		/* a keyword without a handler is accepted and ignored */
		if (!k->handler)
			continue;
		if (err && err_len)
			err[0] = '\0';
		if (k->handler(s, c, err, err_len) != 0) {
			/* a handler that failed quietly still gets a file:line */
			if (err && err_len && !err[0])
				conf_error(err, err_len, s, "invalid '%s' statement", kw);
			return -1;
		}
	}
	return 0;
}

int conf_dispatch(const struct conf_stmt *first, const struct conf_keyword *table,
		  void *ctx, char *err, size_t err_len)
{
	return conf_dispatch_also(first, table, ctx, NULL, NULL, err, err_len);
}

/* Argument helpers */

static bool is_option_word(const char *w)
{
	if (!((*w >= 'a' && *w <= 'z') || (*w >= 'A' && *w <= 'Z')))
		return false;
	for (; *w; w++)
		if (!((*w >= 'a' && *w <= 'z') || (*w >= 'A' && *w <= 'Z') ||
		      (*w >= '0' && *w <= '9') || *w == '-' || *w == '_'))
			return false;
	return true;
}

/*
 * What argv[idx] is called in errors: the option word in front of it
 * ("port" in "listen ::1 port 53"), else the statement's keyword.
 */
static const char *arg_name(const struct conf_stmt *s, unsigned idx)
{
	if (idx >= 2 && idx <= s->argc && !s->quoted[idx - 1] && is_option_word(s->argv[idx - 1]))
		return s->argv[idx - 1];
	return s->argv[0];
}

static const char *arg_word(const struct conf_stmt *s, unsigned idx, char *err, size_t err_len)
{
	if (idx < s->argc)
		return s->argv[idx];
	if (s->argc <= 1)
		conf_error(err, err_len, s, "'%s' needs a value", s->argv[0]);
	else
		conf_error(err, err_len, s, "'%s' needs a value after '%s'", s->argv[0],
			   s->argv[s->argc - 1]);
	return NULL;
}

/* Decimal digits: 0, -1 if there are none, -2 on overflow.  *end is past them. */
static int parse_digits(const char *w, uint64_t *out, const char **end)
{
	uint64_t v = 0;
	bool overflow = false;
	const char *p;

	for (p = w; *p >= '0' && *p <= '9'; p++) {
		unsigned d = *p - '0';

		if (v > (UINT64_MAX - d) / 10)
			overflow = true;
		else
			v = v * 10 + d;
	}
	*end = p;
	if (p == w)
		return -1;
	*out = v;
	return overflow ? -2 : 0;
}

int conf_arg_uint(const struct conf_stmt *s, unsigned idx, uint64_t min, uint64_t max,
		  uint64_t *out, char *err, size_t err_len)
{
	const char *w = arg_word(s, idx, err, err_len), *end;
	uint64_t v = 0;
	int rc;

	if (!w)
		return -1;
	rc = parse_digits(w, &v, &end);
	if (rc == -1 || *end)
		return conf_error(err, err_len, s, "'%s' must be a number, got '%s'",
				  arg_name(s, idx), w);
	if (rc < 0 || v < min || v > max)
		return conf_error(err, err_len, s, "'%s' must be between %" PRIu64 " and %" PRIu64,
				  arg_name(s, idx), min, max);
	*out = v;
	return 0;
}

int conf_arg_bool(const struct conf_stmt *s, unsigned idx, bool *out, char *err, size_t err_len)
{
	static const char *const yes[] = { "on", "yes", "true" }, *const no[] = { "off", "no", "false" };
	const char *w = arg_word(s, idx, err, err_len);

	if (!w)
		return -1;
	for (unsigned i = 0; i < 3; i++) {
		if (strcmp(w, yes[i]) == 0 || strcmp(w, no[i]) == 0) {
			*out = strcmp(w, yes[i]) == 0;
			return 0;
		}
	}
	return conf_error(err, err_len, s, "'%s' must be on/off, yes/no or true/false, got '%s'",
			  arg_name(s, idx), w);
}

/* In the largest unit that is exact, so limits read the way people write them. */
static void fmt_duration(char *buf, size_t len, uint64_t ms)
{
	if (ms && ms % 3600000 == 0)
		snprintf(buf, len, "%" PRIu64 "h", ms / 3600000);
	else if (ms && ms % 60000 == 0)
		snprintf(buf, len, "%" PRIu64 "m", ms / 60000);
	else if (ms % 1000 == 0)
		snprintf(buf, len, "%" PRIu64 "s", ms / 1000);
	else
		snprintf(buf, len, "%" PRIu64 "ms", ms);
}

int conf_arg_duration_ms(const struct conf_stmt *s, unsigned idx, uint64_t min_ms, uint64_t max_ms,
			 uint64_t *out, char *err, size_t err_len)
{
	static const struct { const char *name; uint64_t ms; } units[] = {
		{ "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 }, { "", 1000 },
	};
	const char *w = arg_word(s, idx, err, err_len), *end;
	char lo[32], hi[32];
	uint64_t v = 0;
	unsigned i;
	int rc;

	if (!w)
		return -1;
	rc = parse_digits(w, &v, &end);
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(end, units[i].name) == 0)
			break;
	if (rc == -1 || i == sizeof(units) / sizeof(units[0]))
		return conf_error(err, err_len, s,
				  "'%s' must be a duration such as 250ms, 5s, 2m or 1h, got '%s'",
				  arg_name(s, idx), w);
	if (rc < 0 || v > UINT64_MAX / units[i].ms || v * units[i].ms < min_ms ||
	    v * units[i].ms > max_ms) {
		fmt_duration(lo, sizeof(lo), min_ms);
		fmt_duration(hi, sizeof(hi), max_ms);
		return conf_error(err, err_len, s, "'%s' must be between %s and %s",
				  arg_name(s, idx), lo, hi);
	}
	*out = v * units[i].ms;
	return 0;
}

int conf_arg_addr(const struct conf_stmt *s, unsigned idx, int *family, uint8_t addr[16],
		  char *err, size_t err_len)
{
	const char *w = arg_word(s, idx, err, err_len);
	uint8_t a[16];
	int fam;

	if (!w)
		return -1;
	if (!ip_parse(w, &fam, a))
		return conf_error(err, err_len, s, "'%s' must be an IPv4 or IPv6 address, got '%s'",
				  arg_name(s, idx), w);
	*family = fam;
	memcpy(addr, a, 16);
	return 0;
}

int conf_arg_prefix(const struct conf_stmt *s, unsigned idx, int *family, uint8_t addr[16],
		    unsigned *prefix_len, char *err, size_t err_len)
{
	const char *w = arg_word(s, idx, err, err_len), *slash, *end;
	char buf[INET6_ADDRSTRLEN];
	uint8_t a[16];
	uint64_t len;
	unsigned max;
	size_t n;
	int fam;

	if (!w)
		return -1;
	slash = strchr(w, '/');
	n = slash ? (size_t)(slash - w) : strlen(w);
	if (n >= sizeof(buf))
		goto bad;
	memcpy(buf, w, n);
	buf[n] = '\0';
	if (!ip_parse(buf, &fam, a))
		goto bad;
	max = fam == AF_INET ? 32 : 128;
	len = max;
	if (slash && (parse_digits(slash + 1, &len, &end) != 0 || *end))
		goto bad;
	if (len > max)
		return conf_error(err, err_len, s, "%s: %s prefix length must be at most %u",
				  w, fam == AF_INET ? "IPv4" : "IPv6", max);
	for (unsigned i = 0; i < max / 8; i++) {
		unsigned bit = i * 8;
		uint8_t keep = len >= bit + 8 ? 0xff : len <= bit ? 0 : (uint8_t)(0xff << (bit + 8 - len));

		if (a[i] & ~keep)
			return conf_error(err, err_len, s, "%s has host bits set", w);
	}
	*family = fam;
	memcpy(addr, a, 16);
	*prefix_len = len;
	return 0;
bad:
	return conf_error(err, err_len, s,
			  "'%s' must be a prefix such as 10.0.0.0/8 or 2001:db8::/32, got '%s'",
			  arg_name(s, idx), w);
}

int conf_arg_choice(const struct conf_stmt *s, unsigned idx, const char *const *choices,
		    unsigned *out, char *err, size_t err_len)
{
	const char *w = arg_word(s, idx, err, err_len);
	char list[CONF_ERR_LEN];
	size_t n = 0;

	if (!w)
		return -1;
	for (unsigned i = 0; choices && choices[i]; i++) {
		if (strcmp(w, choices[i]) == 0) {
			*out = i;
			return 0;
		}
	}
	list[0] = '\0';
	for (unsigned i = 0; choices && choices[i]; i++) {
		const char *sep = i == 0 ? "" : choices[i + 1] ? ", " : " or ";
		int r = snprintf(list + n, sizeof(list) - n, "%s%s", sep, choices[i]);

		if (r < 0 || (size_t)r >= sizeof(list) - n)
			break;
		n += r;
	}
	return conf_error(err, err_len, s, "'%s' must be %s, got '%s'", arg_name(s, idx), list, w);
}

int conf_once(bool *seen, const struct conf_stmt *s, char *err, size_t err_len)
{
	if (*seen)
		return conf_error(err, err_len, s, "'%s' given twice", s->argv[0]);
	*seen = true;
	return 0;
}

int conf_once_bool(const struct conf_stmt *s, bool *seen, bool *out, char *err, size_t err_len)
{
	if (conf_once(seen, s, err, err_len) < 0)
		return -1;
	return conf_arg_bool(s, 1, out, err, err_len);
}

int conf_arg_path(const struct conf_stmt *s, unsigned idx, bool *seen, size_t max_len, char **out,
		  char *err, size_t err_len)
{
	if (conf_once(seen, s, err, err_len) < 0)
		return -1;
	if (s->argv[idx][0] != '/')
		return conf_error(err, err_len, s, "%s must be an absolute path", s->argv[0]);
	if (strlen(s->argv[idx]) > max_len)
		return conf_error(err, err_len, s, "%s path longer than %zu bytes", s->argv[0], max_len);
	*out = strdup(s->argv[idx]);
	if (!*out)
		return conf_error(err, err_len, s, "out of memory");
	return 0;
}

int conf_arg_path_near(const struct conf_stmt *s, unsigned idx, bool *seen, size_t max_len, char **out,
		       char *err, size_t err_len)
{
	const char *path = s->argv[idx];
	if (path[0] == '/')
		return conf_arg_path(s, idx, seen, max_len, out, err, err_len);
	if (conf_once(seen, s, err, err_len) < 0)
		return -1;
	const char *slash = strrchr(s->file, '/');
	int dir_len = slash ? (int)(slash - s->file) : 1;
	const char *dir = slash ? s->file : ".";
	char full[PATH_MAX];
	int n = snprintf(full, sizeof(full), "%.*s/%s", dir_len, dir, path);
	if (n < 0 || (size_t)n >= sizeof(full) || (size_t)n > max_len)
		return conf_error(err, err_len, s, "%s path longer than %zu bytes", s->argv[0], max_len);
	*out = strdup(full);
	if (!*out)
		return conf_error(err, err_len, s, "out of memory");
	return 0;
}

int conf_arg_endpoint(const struct conf_stmt *s, unsigned idx, int *family, uint8_t addr[16],
		      uint16_t *port, char *err, size_t err_len)
{
	if (conf_arg_addr(s, idx, family, addr, err, err_len) < 0)
		return -1;
	if (s->argc == idx + 1)
		return 0;
	if (s->argc != idx + 3 || strcmp(s->argv[idx + 1], "port") != 0)
		return conf_error(err, err_len, s, "expected '%s ADDRESS [port NUMBER]'", s->argv[0]);
	uint64_t p;
	if (conf_arg_uint(s, idx + 2, 1, 65535, &p, err, err_len) < 0)
		return -1;
	*port = (uint16_t)p;
	return 0;
}

int conf_once_uint(const struct conf_stmt *s, bool *seen, uint64_t min, uint64_t max, uint64_t *out,
		   char *err, size_t err_len)
{
	if (conf_once(seen, s, err, err_len) < 0)
		return -1;
	return conf_arg_uint(s, 1, min, max, out, err, err_len);
}

int conf_once_duration_ms(const struct conf_stmt *s, bool *seen, uint64_t min_ms, uint64_t max_ms,
			  uint64_t *out, char *err, size_t err_len)
{
	if (conf_once(seen, s, err, err_len) < 0)
		return -1;
	return conf_arg_duration_ms(s, 1, min_ms, max_ms, out, err, err_len);
}

int conf_once_log_level(const struct conf_stmt *s, bool *seen, int *out, char *err, size_t err_len)
{
	static const char *const levels[] = { "err", "warn", "info", "debug", NULL };     /* enum log_level */
	unsigned lvl;
	if (conf_once(seen, s, err, err_len) < 0 || conf_arg_choice(s, 1, levels, &lvl, err, err_len) < 0)
		return -1;
	*out = (int)lvl;
	return 0;
}
