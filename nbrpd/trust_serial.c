/*
 * The trust serial kept across restarts: see trust_serial.h.  The file is
 * one line, the serial in decimal.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "atomicfile.h"
#include "trust_serial.h"

int trust_serial_load(const char *state_dir, uint64_t *serial, char *err, size_t err_len)
{
	char path[PATH_MAX], buf[32];
	*serial = 0;
	snprintf(path, sizeof(path), "%s/" TRUST_SERIAL_FILE, state_dir);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, err_len, "%s: %s", path, strerror(errno));
		return -1;
	}
	ssize_t n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0) {
		snprintf(err, err_len, "%s: %s", path, strerror(errno));
		return -1;
	}
	/* 1..2^64-1 without leading zeros, then a newline: as the trust file's own serial line */
	uint64_t v = 0;
	ssize_t i = 0;
	for (; i < n && buf[i] >= '0' && buf[i] <= '9' && i < 20; i++) {
		unsigned d = (unsigned)(buf[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			break;
		v = v * 10 + d;
	}
	if (i == 0 || buf[0] == '0' || i + 1 != n || buf[i] != '\n') {
		snprintf(err, err_len, "%s: not a serial", path);
		return -1;
	}
	*serial = v;
	return 0;
}

int trust_serial_save(const char *state_dir, uint64_t serial, char *err, size_t err_len)
{
	char path[PATH_MAX], buf[32];
	snprintf(path, sizeof(path), "%s/" TRUST_SERIAL_FILE, state_dir);
	int len = snprintf(buf, sizeof(buf), "%llu\n", (unsigned long long)serial);
	return atomicfile_replace(path, buf, (size_t)len, 0644, err, err_len);
}
