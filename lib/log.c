#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "log.h"

enum log_level log_current_level = LOG_LVL_INFO;
static const char *log_ident = "cr";
static bool log_syslog;

void log_init(const char *ident, enum log_level level, bool use_syslog)
{
	log_ident = ident;
	log_current_level = level;
	log_syslog = use_syslog;
	if (use_syslog)
		openlog(ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void log_set_level(enum log_level level)
{
	log_current_level = level;
}

int log_level_parse(const char *s)
{
	static const char *const names[] = { "err", "warn", "info", "debug" };
	for (int i = 0; i < 4; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	static const char *const tags[] = { "error", "warning", "info", "debug" };
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	char msg[1024];
	va_list ap;

	if (level > log_current_level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);

	if (log_syslog) {
		syslog(prio[level], "%s", msg);
		return;
	}
	struct timespec ts;
	struct tm tm;
	char when[32];
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	/* one write per line so lines from several threads do not interleave */
	fprintf(stderr, "%s.%03ldZ %s %s: %s\n", when, ts.tv_nsec / 1000000, log_ident, tags[level], msg);
}
