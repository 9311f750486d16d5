/*
 * Small files replaced whole: a crash leaves the old contents or the new,
 * never a mix, and a new one survives a power cut once this returns.
 */
#ifndef CR_ATOMICFILE_H
#define CR_ATOMICFILE_H

#include <stddef.h>
#include <sys/types.h>

/*
 * path replaced by buf: PATH.tmp written (mode), fsync'ed and renamed over
 * path, then its directory fsync'ed.  Returns 0, or -1 with "PATH: reason"
 * in err (nothing of the temporary file left).
 */
int atomicfile_replace(const char *path, const void *buf, size_t len, mode_t mode, char *err, size_t err_len);

#endif
