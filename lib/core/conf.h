/*
 * Configuration files in BIRD's style:
 *
 *     # comment            // comment            / * comment * /
 *     router-name "cr1.example";
 *     listen 127.0.0.1 port 5353;
 *     route "shop.example" {
 *         server 192.0.2.10 load 20;
 *         server 2001:db8::10;
 *     }
 *     include "peers.conf";
 *
 * A statement is a list of words ended by ';' or by a { block } of further
 * statements.  A word is a bare token or a "quoted string" (with \" and \\
 * escapes).  The parser knows no keywords: it builds the tree, and each
 * daemon walks it with conf_dispatch() and the conf_arg_*() helpers, so
 * every error names file:line the same way.
 *
 * Comments start only where a token could, so 10.0.0.0/8 and /etc/x.conf
 * are single words.  Errors about a whole file (cannot open, too large)
 * read "path: reason", or name the include statement's file:line for an
 * included file.  Included files must be regular files.
 */
#ifndef CR_CONF_H
#define CR_CONF_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define CONF_MAX_DEPTH    16          /* nested blocks */
#define CONF_MAX_INCLUDE  8           /* nested includes */
#define CONF_MAX_ARGS     64          /* words in one statement */
#define CONF_MAX_WORD     4096        /* bytes in one word */
#define CONF_MAX_FILE     (16u << 20) /* bytes in one file; a statement costs ~100 B of tree */
#define CONF_ERR_LEN      512

struct conf_stmt {
	const char *file;               /* file the statement came from */
	unsigned line;                  /* line of its first word */
	unsigned argc;                  /* argv[0] is the keyword */
	char **argv;
	bool *quoted;                   /* quoted[i]: argv[i] was a "string" */
	bool has_block;                 /* ended by { ... } rather than ';' */
	struct conf_stmt *block;        /* first statement inside the block */
	struct conf_stmt *next;         /* next statement at the same level */
};

struct conf {
	struct conf_stmt *first;        /* top-level statements */
	/* private: arena and file names */
	void *priv;
};

/*
 * Parse a file (resolving include relative to the including file) or an
 * in-memory text.  On failure returns NULL and writes "file:line: reason"
 * to err.
 */
struct conf *conf_parse_file(const char *path, char *err, size_t err_len);
struct conf *conf_parse_text(const char *text, size_t len, const char *file_name,
			     char *err, size_t err_len);
void conf_free(struct conf *c);     /* NULL is fine */

/* Writes "file:line: <message>" to err; always returns -1. */
int conf_error(char *err, size_t err_len, const struct conf_stmt *s, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * Table-driven walk of one level of statements.  For each statement the
 * keyword is looked up in table (terminated by a NULL keyword); its word
 * count (keyword included) must lie in [min_args, max_args] and it must or
 * must not have a block.  Unknown keywords, wrong counts and a missing or
 * unexpected block are errors naming file:line.  Returns 0, or -1 with err
 * set (by dispatch or by the handler).  A handler fails by returning
 * non-zero; a NULL handler accepts and ignores the statement.  max_args of
 * CONF_MAX_ARGS or more means "at least min_args".
 */
enum conf_block_rule { CONF_NO_BLOCK, CONF_BLOCK, CONF_BLOCK_OPTIONAL };

struct conf_keyword {
	const char *keyword;
	unsigned min_args, max_args;
	enum conf_block_rule block;
	int (*handler)(const struct conf_stmt *s, void *ctx, char *err, size_t err_len);
};

int conf_dispatch(const struct conf_stmt *first, const struct conf_keyword *table,
		  void *ctx, char *err, size_t err_len);
/* The same with a second table, for statements the first does not have (keywords every
 * daemon shares, lib/ops/service_conf.h), whose handlers get also_ctx. */
int conf_dispatch_also(const struct conf_stmt *first, const struct conf_keyword *table, void *ctx,
		       const struct conf_keyword *also, void *also_ctx, char *err, size_t err_len);

/*
 * Argument helpers: each checks argv[idx] and reports "file:line: ..." on
 * error, returning -1.  On success they return 0.
 */
int conf_arg_uint(const struct conf_stmt *s, unsigned idx, uint64_t min, uint64_t max,
		  uint64_t *out, char *err, size_t err_len);
/* "on"/"off", "yes"/"no", "true"/"false" */
int conf_arg_bool(const struct conf_stmt *s, unsigned idx, bool *out, char *err, size_t err_len);
/* "250ms", "5s", "2m", "1h", or a bare number of seconds; result in milliseconds */
int conf_arg_duration_ms(const struct conf_stmt *s, unsigned idx, uint64_t min_ms, uint64_t max_ms,
			 uint64_t *out, char *err, size_t err_len);
/* An IPv4 or IPv6 address; family is AF_INET or AF_INET6, addr holds 4 or 16 bytes. */
int conf_arg_addr(const struct conf_stmt *s, unsigned idx, int *family, uint8_t addr[16],
		  char *err, size_t err_len);
/* "10.0.0.0/8", "::1/128", or a bare address (full length prefix). */
int conf_arg_prefix(const struct conf_stmt *s, unsigned idx, int *family, uint8_t addr[16],
		    unsigned *prefix_len, char *err, size_t err_len);
/* A statement that may appear once: an error naming the keyword the second time. */
int conf_once(bool *seen, const struct conf_stmt *s, char *err, size_t err_len);
/* The usual statement "KEYWORD VALUE;" given once: a number or a duration. */
int conf_once_uint(const struct conf_stmt *s, bool *seen, uint64_t min, uint64_t max, uint64_t *out,
		   char *err, size_t err_len);
int conf_once_duration_ms(const struct conf_stmt *s, bool *seen, uint64_t min_ms, uint64_t max_ms,
			  uint64_t *out, char *err, size_t err_len);
/* "log-level err|warn|info|debug" given once; *out is the enum log_level value. */
int conf_once_log_level(const struct conf_stmt *s, bool *seen, int *out, char *err, size_t err_len);
/* "yes"/"no" (conf_arg_bool's words) at argv[1], given once. */
int conf_once_bool(const struct conf_stmt *s, bool *seen, bool *out, char *err, size_t err_len);
/* A string of 1 to max characters at argv[1], given once, into out (max + 1 bytes). */
int conf_once_text(const struct conf_stmt *s, bool *seen, char *out, size_t max, char *err, size_t err_len);
/* An absolute path of at most max_len bytes, given once; strdup'd into *out. */
int conf_arg_path(const struct conf_stmt *s, unsigned idx, bool *seen, size_t max_len, char **out,
		  char *err, size_t err_len);
/* The same, but a relative path is taken relative to the directory of the file it is written in. */
int conf_arg_path_near(const struct conf_stmt *s, unsigned idx, bool *seen, size_t max_len, char **out,
		       char *err, size_t err_len);
/* "ADDRESS" or "ADDRESS port N" ending the statement at argv[idx]; *port kept if not given. */
int conf_arg_endpoint(const struct conf_stmt *s, unsigned idx, int *family, uint8_t addr[16],
		      uint16_t *port, char *err, size_t err_len);
/* One of a list of words (NULL-terminated); *out is the index in choices. */
int conf_arg_choice(const struct conf_stmt *s, unsigned idx, const char *const *choices,
		    unsigned *out, char *err, size_t err_len);

#endif
