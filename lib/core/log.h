/*
 * Logging for the daemons and tools: to stderr with a timestamp, to
 * syslog when running as a service, or, when systemd reads our stderr
 * (JOURNAL_STREAM names it), to stderr with the sd-daemon(3) "<N>"
 * priority prefix and no timestamp, which journald adds itself.  Messages
 * below the level are dropped before any formatting.  The level may change
 * at run time (the control socket's `set log-level`) while other threads
 * log.
 */
#ifndef CR_LOG_H
#define CR_LOG_H

#include <stdbool.h>

enum log_level { LOG_LVL_ERR = 0, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

void log_init(const char *ident, enum log_level level, bool use_syslog);
void log_set_level(enum log_level level);
/* "err", "warn", "info", "debug"; returns -1 if unknown */
int log_level_parse(const char *s);
const char *log_level_name(enum log_level level);
extern enum log_level log_current_level;
#define log_level_now() __atomic_load_n(&log_current_level, __ATOMIC_RELAXED)
/* Whether stderr is the journal's stream (JOURNAL_STREAM matches it). */
bool log_stderr_is_journal(void);

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_err(...)   log_msg(LOG_LVL_ERR, __VA_ARGS__)
#define log_warn(...)  do { if (log_level_now() >= LOG_LVL_WARN) log_msg(LOG_LVL_WARN, __VA_ARGS__); } while (0)
#define log_info(...)  do { if (log_level_now() >= LOG_LVL_INFO) log_msg(LOG_LVL_INFO, __VA_ARGS__); } while (0)
#define log_debug(...) do { if (log_level_now() >= LOG_LVL_DEBUG) log_msg(LOG_LVL_DEBUG, __VA_ARGS__); } while (0)

#endif
