/*
 * The input as a configuration file, for targets of loaders that take a
 * path: written to a private directory made once (removed at exit).
 * Header-only, static: each target includes it once.
 */
#ifndef CR_FUZZ_CONFFILE_H
#define CR_FUZZ_CONFFILE_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char conffile_path[64];

static void conffile_cleanup(void)
{
	unlink(conffile_path);
	*strrchr(conffile_path, '/') = 0;
	rmdir(conffile_path);
}

/* The file's path, holding data. */
static inline const char *conffile_write(const char *name, const uint8_t *data, size_t size)
{
	if (!conffile_path[0]) {
		char dir[] = "/tmp/fuzz_conf.XXXXXX";
		if (!mkdtemp(dir))
			abort();
		snprintf(conffile_path, sizeof(conffile_path), "%s/%s", dir, name);
		atexit(conffile_cleanup);
	}
	int fd = open(conffile_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size || close(fd) != 0)
		abort();
	return conffile_path;
}

/* A loader's error: "file:line: reason" or "file: reason", never empty. */
static inline void conffile_check_error(const char *err)
{
	if (!err[0] || !strstr(err, ": ")) {
		fprintf(stderr, "fuzz: bad error message '%s'\n", err);
		abort();
	}
}

#endif
