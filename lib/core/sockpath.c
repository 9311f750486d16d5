/*
 * Clearing a unix socket's path before bind (sockpath.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "sockpath.h"

#define SO_ACCEPTCON 0x10000       /* /proc/net/unix's flag of a listening socket */

/*
 * Whether a socket listens on path: 1, 0, or -1 when the kernel's table
 * cannot be read.  Read from /proc/net/unix rather than by connecting,
 * which a FIB channel would take for a new sender.
 */
static int listening(const char *path)
{
	FILE *f = fopen("/proc/net/unix", "re");
	if (!f)
		return -1;
	char line[PATH_MAX + 128];
	int found = 0;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned flags;
		int at = 0;
		if (sscanf(line, "%*s %*x %*x %x %*x %*x %*u %n", &flags, &at) != 1 || at == 0)
			continue;
		line[strcspn(line, "\n")] = 0;
		found = (flags & SO_ACCEPTCON) && strcmp(line + at, path) == 0;
	}
	fclose(f);
	return found;
}

int sockpath_clear(const char *path, const char *what, char *err, size_t err_len)
{
	struct stat st;
	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, err_len, "%s %s: %s", what, path, strerror(errno));
		return -1;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, err_len, "%s %s exists and is not a socket: not removed", what, path);
		return -1;
	}
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, err_len, "%s %s: path too long for a unix socket", what, path);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int live = listening(path);
	if (live < 0) {
		/* no table to read: a connection, closed at once, is the test */
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		live = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		if (fd >= 0)
			close(fd);
	}
	if (live) {
		snprintf(err, err_len, "%s %s is in use by another process", what, path);
		return -1;
	}
	if (unlink(path) < 0 && errno != ENOENT) {
		snprintf(err, err_len, "%s %s: removing the old socket: %s", what, path, strerror(errno));
		return -1;
	}
	return 0;
}
