/*
 * Small files replaced whole: see atomicfile.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "atomicfile.h"

/* 0 or -errno */
static int replace(const char *path, const void *buf, size_t len, mode_t mode)
{
	char tmp[PATH_MAX], dir[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	ssize_t w = write(fd, buf, len);
	int rc = w < 0 ? -errno : (size_t)w != len ? -EIO : fsync(fd) != 0 ? -errno : 0;
	if (close(fd) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc != 0) {
		unlink(tmp);
		return rc;
	}
	strcpy(dir, path);
	if ((fd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	rc = fsync(fd) != 0 ? -errno : 0;
	close(fd);
	return rc;
}

int atomicfile_replace(const char *path, const void *buf, size_t len, mode_t mode, char *err, size_t err_len)
{
	int rc = replace(path, buf, len, mode);
	if (rc < 0) {
		snprintf(err, err_len, "%s: %s", path, strerror(-rc));
		return -1;
	}
	return 0;
}
