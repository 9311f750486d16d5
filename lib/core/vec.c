#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vec.h"

int vec_grow(void *vp, size_t *cap, size_t need, size_t size)
{
	size_t c = *cap ? *cap : size < 16 ? 256 / size : 16;
	while (c < need) {
		if (c > SIZE_MAX / 2)
			goto nomem;
		c *= 2;
	}
	if (c > SIZE_MAX / size)
		goto nomem;
	void *old, *p;
	/* vp is a T **: the pointer is copied, not read through a void ** */
	memcpy(&old, vp, sizeof(old));
	if (!(p = realloc(old, c * size)))
		goto nomem;
	memcpy(vp, &p, sizeof(p));
	*cap = c;
	return 0;
nomem:
	errno = ENOMEM;
	return -1;
}
