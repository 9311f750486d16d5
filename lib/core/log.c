#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

enum log_level log_current_level = LOG_LVL_INFO;
static const char *log_ident = "cr";
static bool log_syslog;
static bool log_journal;                /* stderr is journald's stream */

static const char *const level_names[] = { "err", "warn", "info", "debug" };

bool log_stderr_is_journal(void)
{
	/* "DEVICE:INODE" of the stream systemd connected; a child's redirected stderr is not it */
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void log_init(const char *ident, enum log_level level, bool use_syslog)
{
	log_ident = ident;
	log_set_level(level);
	/* a daemon in the background has no stderr once ready: syslog, even under systemd */
	log_journal = !use_syslog && log_stderr_is_journal();
	log_syslog = use_syslog;
	if (log_syslog)
		openlog(ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void log_set_level(enum log_level level)
{
	__atomic_store_n(&log_current_level, level, __ATOMIC_RELAXED);
}

int log_level_parse(const char *s)
{
	for (int i = 0; i < 4; i++)
		if (strcmp(s, level_names[i]) == 0)
			return i;
	return -1;
}

const char *log_level_name(enum log_level level)
{
	return (unsigned)level < 4 ? level_names[level] : "?";
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	static const char *const tags[] = { "error", "warning", "info", "debug" };
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	char msg[4096];                 /* a transport's counters on one line */
	va_list ap;

	if (level > log_level_now())
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);

	if (log_syslog) {
		syslog(prio[level], "%s", msg);
		return;
	}
	/* one write per line so lines from several threads do not interleave */
	if (log_journal) {
		fprintf(stderr, "<%d>%s\n", prio[level], msg);
		return;
	}
	struct timespec ts;
	struct tm tm;
	char when[32];
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(stderr, "%s.%03ldZ %s %s: %s\n", when, ts.tv_nsec / 1000000, log_ident, tags[level], msg);
}
