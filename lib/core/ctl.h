/*
 * The control protocol of our daemons, in the style of BIRD's (birdc):
 * a unix stream socket, one command per line from the client, and replies
 * of lines "CODE-text" (more follows) ending with one line "CODE text".
 * The server greets each connection with "0001 <name> ready.".
 *
 *   0xxx  done (0000 OK)            1xxx  data lines
 *   8xxx  the client's mistake      9xxx  the server could not do it
 *
 * The server runs on the daemon's libuv loop and hands each command, split
 * into words, to one handler; the client is blocking, for CLIs.
 */
#ifndef CR_CTL_H
#define CR_CTL_H

#include <stdbool.h>
#include <stddef.h>

#include "strbuf.h"

#define CTL_MAX_LINE     1024   /* a command */
#define CTL_MAX_REPLY_LINE (64 * 1024)  /* one reply line (a route with a long path) */
#define CTL_MAX_WORDS    16
#define CTL_MAX_CLIENTS  16

enum {
	CTL_OK = 0,
	CTL_GREETING = 1,
	CTL_DATA = 1000,
	CTL_ERR_SYNTAX = 8001,          /* unknown command, wrong arguments */
	CTL_ERR_TOO_LONG = 8002,
	CTL_ERR_FAILED = 9001,          /* the command ran and failed */
	CTL_ERR_BUSY = 9002,            /* too many control clients */
};

/* A reply under construction. */
struct ctl_reply {
	struct strbuf out;
	bool ended;
};

/* Adds "CODE-text" (more follows). */
void ctl_reply_line(struct ctl_reply *r, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Adds the final "CODE text"; without it the server ends with "0000 OK". */
void ctl_reply_end(struct ctl_reply *r, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- server ---------------------------------------------------------- */

struct uv_loop_s;
struct ctl_server;
typedef void (*ctl_handler_fn)(void *ctx, int argc, char **argv, struct ctl_reply *reply);

/* Listens on path (replacing a stale socket file), mode 0660. */
struct ctl_server *ctl_server_open(struct uv_loop_s *loop, const char *path, const char *name,
				   ctl_handler_fn fn, void *ctx, char *err, size_t err_len);
/* Closes the listener and every connection and removes the socket file;
 * the memory goes once the loop has run the close callbacks. */
void ctl_server_close(struct ctl_server *s);

/*
 * The commands of a daemon as a table, so that matching, the "json"
 * suffix, `help` and unknown commands are handled once for every daemon:
 *
 *     { "show route", 0, 1, true, show_route, "show route [NAME] [json]", "routes ..." }
 *
 * A command line matches an entry when it starts with the entry's words
 * and has between min_args and max_args more (after a trailing "json",
 * when the entry takes it); the first match in table order wins.
 */
struct ctl_command {
	const char *words;
	unsigned min_args, max_args;
	bool json;
	void (*fn)(void *ctx, char **args, unsigned nargs, bool json, struct ctl_reply *r);
	const char *usage;              /* for help: "show route [NAME] [json]" */
	const char *help;               /* for help: what it does */
};

/* Every daemon's "set log-level LEVEL": the level from now until a reload
 * applies the file's log-level again. */
void ctl_cmd_set_log_level(void *ctx, char **args, unsigned nargs, bool json, struct ctl_reply *r);
#define CTL_CMD_SET_LOG_LEVEL { "set log-level", 1, 1, false, ctl_cmd_set_log_level, \
	"set log-level LEVEL", "log at err, warn, info or debug until the next reload" }

/* Runs the matching entry (table ends with a NULL words), `help`, or
 * answers an unknown command with CTL_ERR_SYNTAX. */
void ctl_dispatch(const struct ctl_command *table, void *ctx, int argc, char **argv, struct ctl_reply *r);

/* ---- client ---------------------------------------------------------- */

/*
 * Parses one reply line (without the newline): returns 0 and the code,
 * whether more lines follow, and the text; -1 if it is not a reply line.
 */
int ctl_parse_line(const char *line, size_t len, int *code, bool *more, const char **text);

typedef void (*ctl_line_fn)(void *arg, int code, const char *text);
/*
 * Connects, reads the greeting, sends command, and calls fn for every
 * line of the reply, the final one included.  Returns the final code, or
 * -1 with err set when the socket or the reply is broken (*connected
 * says whether the daemon was reached at all).
 */
int ctl_command(const char *path, const char *command, ctl_line_fn fn, void *arg,
		bool *connected, char *err, size_t err_len);

#endif
