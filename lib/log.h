/*
 * Logging for the daemons and tools: to stderr with a timestamp, or to
 * syslog when running as a service.  Messages below the level are dropped
 * before any formatting.
 */
#ifndef CR_LOG_H
#define CR_LOG_H

#include <stdbool.h>

enum log_level { LOG_LVL_ERR = 0, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

void log_init(const char *ident, enum log_level level, bool use_syslog);
void log_set_level(enum log_level level);
/* "err", "warn", "info", "debug"; returns -1 if unknown */
int log_level_parse(const char *s);
extern enum log_level log_current_level;

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_err(...)   log_msg(LOG_LVL_ERR, __VA_ARGS__)
#define log_warn(...)  do { if (log_current_level >= LOG_LVL_WARN) log_msg(LOG_LVL_WARN, __VA_ARGS__); } while (0)
#define log_info(...)  do { if (log_current_level >= LOG_LVL_INFO) log_msg(LOG_LVL_INFO, __VA_ARGS__); } while (0)
#define log_debug(...) do { if (log_current_level >= LOG_LVL_DEBUG) log_msg(LOG_LVL_DEBUG, __VA_ARGS__); } while (0)

#endif
