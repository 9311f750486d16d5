/*
 * Clearing a unix socket's path before bind (sockpath.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "sockpath.h"

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
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, err_len, "%s %s: socket: %s", what, path, strerror(errno));
		return -1;
	}
	bool live = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
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
