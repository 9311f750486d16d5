/*
 * The path of a unix socket a daemon listens on, cleared before bind.
 */
#ifndef CR_SOCKPATH_H
#define CR_SOCKPATH_H

#include <stddef.h>

/*
 * Makes path free to bind: absent, or a socket no one listens on (left by
 * a daemon that was killed), which is removed.  Anything else is refused
 * with err set, naming what ("fib-channel /run/x exists and is not a
 * socket: not removed"): a file that is not a socket is not ours to
 * delete, and a socket someone listens on is another process's.  0 or -1.
 */
int sockpath_clear(const char *path, const char *what, char *err, size_t err_len);

#endif
