#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "readfile.h"
#include "vec.h"

static void too_large(size_t max, char *err, size_t err_len)
{
	if (max >= (1u << 20) && max % (1u << 20) == 0)
		snprintf(err, err_len, "file larger than %zu MiB", max >> 20);
	else
		snprintf(err, err_len, "file larger than %zu bytes", max);
}

char *readfile(const char *path, size_t max, bool regular_only, size_t *len, char *err, size_t err_len)
{
	struct stat st;
	char *buf = NULL;
	size_t n = 0, cap = 0;
	const char *why = NULL;
	int fd;

	if (!max)
		max = SIZE_MAX - 1;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		snprintf(err, err_len, "%s", strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) < 0)
		why = strerror(errno);
	else if (S_ISDIR(st.st_mode))
		why = "is a directory";
	else if (regular_only && !S_ISREG(st.st_mode))
		why = "not a regular file";
	else if (S_ISREG(st.st_mode) && (uintmax_t)st.st_size > max)
		goto large;
	if (why)
		goto fail;
	/* the size it has now, one byte more to see the end; sizes change, pipes have none */
	if (VEC_RESERVE(buf, cap, S_ISREG(st.st_mode) ? (size_t)st.st_size + 1 : 4096) < 0)
		goto nomem;
	for (;;) {
		if (n == cap && VEC_RESERVE(buf, cap, n + 1) < 0)
			goto nomem;
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			why = strerror(errno);
			goto fail;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max)
			goto large;
	}
	if (n == cap && VEC_RESERVE(buf, cap, n + 1) < 0)
		goto nomem;
	buf[n] = 0;
	close(fd);
	*len = n;
	return buf;
large:
	too_large(max, err, err_len);
	goto out;
nomem:
	why = "out of memory";
fail:
	snprintf(err, err_len, "%s", why);
out:
	close(fd);
	free(buf);
	return NULL;
}
