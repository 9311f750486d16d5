/*
 * Daemon plumbing shared by inrpd and nbrpd (daemon.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <time.h>
#ifdef HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#endif

#include "daemon.h"
#include "log.h"

static const char *prog_name = "daemon";
static int ready_fd = -1;               /* daemon: pipe to the waiting parent, else -1 */

void daemon_init(const char *prog)
{
	prog_name = prog;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s -c FILE [-f] [-d] [-t]\n"
		"  -c, --config FILE  configuration file\n"
		"  -f, --foreground   stay in the foreground, log to stderr\n"
		"  -d, --debug        log at debug level\n"
		"  -t, --check        check the configuration and exit (0: valid, 1: errors)\n"
		"  -h, --help         this text\n"
		"  -V, --version      print the version\n", prog_name);
}

int daemon_parse_options(int argc, char **argv, const char *version, int usage_status,
			 struct daemon_options *o)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "debug", no_argument, NULL, 'd' },
		{ "check", no_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	*o = (struct daemon_options){ 0 };
	while ((opt = getopt_long(argc, argv, "c:fdthV", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c': o->config = optarg; break;
		case 'f': o->foreground = true; break;
		case 'd': o->debug = true; break;
		case 't': o->check = true; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("%s %s\n", prog_name, version); return 0;
		default: usage(stderr); return usage_status;
		}
	}
	if (optind != argc || !o->config) {
		if (optind != argc)
			fprintf(stderr, "%s: unexpected argument '%s'\n", prog_name, argv[optind]);
		else
			fprintf(stderr, "%s: no configuration file (-c FILE)\n", prog_name);
		usage(stderr);
		return usage_status;
	}
	return -1;
}

void daemon_fail(const char *msg)
{
	if (ready_fd >= 0) {
		size_t len = strlen(msg);
		if (write(ready_fd, msg, len) != (ssize_t)len)
			_exit(1);
	} else {
		/* under systemd, an error for the journal: "<3>" is LOG_ERR */
		fprintf(stderr, "%s%s: %s\n", log_stderr_is_journal() ? "<3>" : "", prog_name, msg);
	}
	exit(1);
}

void daemon_background(void)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		fprintf(stderr, "%s: pipe: %s\n", prog_name, strerror(errno));
		exit(1);
	}
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "%s: fork: %s\n", prog_name, strerror(errno));
		exit(1);
	}
	if (pid > 0) {
		char msg[1024];
		size_t len = 0;
		ssize_t n;
		close(p[1]);
		while (len < sizeof(msg) - 1 && (n = read(p[0], msg + len, sizeof(msg) - 1 - len)) != 0) {
			if (n < 0) {
				if (errno == EINTR)
					continue;
				break;
			}
			len += (size_t)n;
		}
		msg[len] = 0;
		/* reap the intermediate child */
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		if (len == 1 && msg[0] == '\n')
			exit(0);
		fprintf(stderr, "%s: %s\n", prog_name, len ? msg : "exited during startup");
		exit(1);
	}
	close(p[0]);
	if (setsid() < 0)
		_exit(1);
	/* a second fork: the daemon is not a session leader, so it never gets a terminal */
	pid = fork();
	if (pid < 0)
		_exit(1);
	if (pid > 0)
		_exit(0);
	ready_fd = p[1];
	if (chdir("/") < 0)
		daemon_fail("chdir /: failed");
}

/* Without libsystemd there is no service manager to tell. */
static void notify(const char *state)
{
#ifdef HAVE_LIBSYSTEMD
	int rc = sd_notify(0, state);
	if (rc < 0)
		log_warn("sd_notify: %s", strerror(-rc));
#else
	(void)state;
#endif
}

void daemon_reloading(void)
{
	struct timespec ts;
	char msg[64];
	clock_gettime(CLOCK_MONOTONIC, &ts);
	/* systemd 253's Type=notify-reload wants the time the reload began */
	snprintf(msg, sizeof(msg), "RELOADING=1\nMONOTONIC_USEC=%llu",
		 (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000);
	notify(msg);
}

void daemon_reloaded(void)
{
	notify("READY=1");
}

void daemon_stopping(void)
{
	notify("STOPPING=1");
}

void daemon_ready(void)
{
	notify("READY=1");
	if (ready_fd < 0)
		return;
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		dup2(fd, STDIN_FILENO);
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		if (fd > STDERR_FILENO)
			close(fd);
	}
	if (write(ready_fd, "\n", 1) != 1)
		log_warn("could not notify the parent process: %s", strerror(errno));
	close(ready_fd);
	ready_fd = -1;
}

int daemon_write_pid_file(const char *path, char *err, size_t err_len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(err, err_len, "pid-file %s: %s", path, strerror(errno));
		return -1;
	}
	char buf[32];
	int len = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	if (write(fd, buf, (size_t)len) != len) {
		snprintf(err, err_len, "pid-file %s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}
