/*
 * A whole file read into memory, for the files read at start and reload
 * (configs and their includes, the trust file, aggregate member files,
 * nbrp-key's inputs): one reader, bounded, that refuses a directory and,
 * when asked, anything but a regular file (a device or FIFO named in an
 * include would hang or fill memory).
 */
#ifndef CR_READFILE_H
#define CR_READFILE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The contents of path (NUL after them, for text), malloc'd, *len bytes
 * long; at most max bytes (0: no limit).  NULL with the reason in err
 * ("is a directory", "file larger than 16 MiB", strerror's text), not
 * naming the file: each caller names it its own way (file:line of an
 * include, or "PATH: reason").
 */
char *readfile(const char *path, size_t max, bool regular_only, size_t *len, char *err, size_t err_len);

#endif
