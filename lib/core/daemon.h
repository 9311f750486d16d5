/*
 * Being a daemon, the same way for inrpd and nbrpd: fork into the
 * background with the parent waiting until the child reports that it is
 * ready (so a failure to bind still reaches the terminal and the exit
 * status), a pid file, and startup errors that go where they are seen.
 * Under systemd (Type=notify, NOTIFY_SOCKET set) the same moments are told
 * to systemd with sd_notify(3), when built with libsystemd.
 */
#ifndef CR_DAEMON_H
#define CR_DAEMON_H

#include <stdbool.h>
#include <stddef.h>

/* prog names messages ("inrpd: ..."). */
void daemon_init(const char *prog);

struct daemon_options {
	const char *config;             /* -c FILE, required */
	bool foreground;                /* -f: stay in the foreground, log to stderr */
	bool debug;                     /* -d: log at debug level */
	bool check;                     /* -t: check the configuration and exit */
};

/*
 * The command line both daemons take (-c FILE, -f, -d, -t, -h, -V).
 * Returns -1 with *o filled to go on, or the status to exit with: 0 after
 * --help or --version, usage_status after a usage error (said on stderr).
 */
int daemon_parse_options(int argc, char **argv, const char *version, int usage_status,
			 struct daemon_options *o);
/* Forks; returns in the daemon (cwd "/"), the parent exits with its status. */
void daemon_background(void);
/* Startup failed: tells the waiting parent, or stderr, and exits 1. */
void __attribute__((noreturn)) daemon_fail(const char *msg);
/* Startup is done (listeners bound, config loaded): the parent exits 0,
 * stdio goes to /dev/null; systemd is told READY=1. */
void daemon_ready(void);
/* Around a reload (RELOADING=1, then READY=1 whatever the outcome: the
 * daemon runs on, with the old or the new config) and at shutdown (STOPPING=1). */
void daemon_reloading(void);
void daemon_reloaded(void);
void daemon_stopping(void);
int daemon_write_pid_file(const char *path, char *err, size_t err_len);

#endif
