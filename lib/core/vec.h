/*
 * Growable arrays: the one grow step of every array that is appended to
 * (BIRD's BUFFER_PUSH idea).  The array stays where its owner keeps it, a
 * pointer and a size_t capacity beside the count its readers already use
 * (cfg->peers, cfg->npeers), so readers never see this header.  The
 * capacity doubles, from 16 elements (256 bytes of small ones) or what is
 * asked for; a count or a byte size that would overflow is refused as an
 * allocation that failed.  One failure convention: -1 with errno ENOMEM,
 * the array and its capacity as they were.
 *
 *     if (VEC_RESERVE(cfg->peers, x->peers_cap, cfg->npeers + 1) < 0)
 *             return conf_error(err, err_len, s, "out of memory");
 *     cfg->peers[cfg->npeers++] = p;
 */
#ifndef CR_VEC_H
#define CR_VEC_H

#include <stddef.h>

/* Room for `need` elements of `size` bytes in *(T **)vp, of *cap elements now. */
int vec_grow(void *vp, size_t *cap, size_t need, size_t size);

static inline int vec_reserve(void *vp, size_t *cap, size_t need, size_t size)
{
	return need <= *cap ? 0 : vec_grow(vp, cap, need, size);
}

/* v is the array (a T *), cap its capacity (a size_t), need the count wanted. */
#define VEC_RESERVE(v, cap, need) vec_reserve(&(v), &(cap), (need), sizeof(*(v)))

#endif
