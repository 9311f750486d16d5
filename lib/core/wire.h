/*
 * Big-endian wire fields, read and written through one bounded type so a
 * codec never checks lengths by hand (NSD's buffer idea): a read past the
 * end or a write past the room sets `bad` and yields zeros, and the codec
 * checks `bad` once, where it decides.  wire_load and wire_store are for
 * the places that already know the bytes are there (a header whose length
 * was checked).
 */
#ifndef CR_WIRE_H
#define CR_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* One move and a byte swap each, which the compiler does not always make of a shift per byte. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define WIRE_BE16(v) __builtin_bswap16(v)
#define WIRE_BE32(v) __builtin_bswap32(v)
#else
#define WIRE_BE16(v) (v)
#define WIRE_BE32(v) (v)
#endif

static inline uint16_t wire_load16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, sizeof(v));
	return WIRE_BE16(v);
}

static inline uint32_t wire_load32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return WIRE_BE32(v);
}

static inline uint64_t wire_load64(const uint8_t *p)
{
	return (uint64_t)wire_load32(p) << 32 | wire_load32(p + 4);
}

static inline void wire_store16(uint8_t *p, uint16_t v)
{
	v = WIRE_BE16(v);
	memcpy(p, &v, sizeof(v));
}

static inline void wire_store32(uint8_t *p, uint32_t v)
{
	v = WIRE_BE32(v);
	memcpy(p, &v, sizeof(v));
}

static inline void wire_store64(uint8_t *p, uint64_t v)
{
	wire_store32(p, (uint32_t)(v >> 32));
	wire_store32(p + 4, (uint32_t)v);
}

/*
 * Copies n bytes (a name: at most 255) with fixed-size moves, the last one
 * overlapping, which the compiler inlines: on every query's path a name of
 * 10-30 bytes costs a third of a call to memcpy.  dst and src do not overlap.
 */
static inline void wire_copy_short(uint8_t *dst, const uint8_t *src, size_t n)
{
	if (n >= 16) {
		size_t i = 0;
		for (; i + 32 < n; i += 16)
			memcpy(dst + i, src + i, 16);
		memcpy(dst + i, src + i, 16);
		memcpy(dst + n - 16, src + n - 16, 16);
	} else if (n >= 8) {
		memcpy(dst, src, 8);
		memcpy(dst + n - 8, src + n - 8, 8);
	} else if (n >= 4) {
		memcpy(dst, src, 4);
		memcpy(dst + n - 4, src + n - 4, 4);
	} else if (n) {
		dst[0] = src[0];
		dst[n / 2] = src[n / 2];
		dst[n - 1] = src[n - 1];
	}
}

struct wire_reader {
	const uint8_t *p, *end;
	bool bad;                       /* a read went past the end */
};

static inline struct wire_reader wire_reader(const uint8_t *data, size_t len)
{
	/* len 0 may come with no data at all (NULL + 0 is undefined) */
	return (struct wire_reader){ .p = data, .end = len ? data + len : data };
}

static inline size_t wire_left(const struct wire_reader *r)
{
	return (size_t)(r->end - r->p);
}

/* n bytes in place, or NULL (and bad) when fewer are left. */
static inline const uint8_t *wire_take(struct wire_reader *r, size_t n)
{
	if (r->bad || wire_left(r) < n) {
		r->bad = true;
		return NULL;
	}
	const uint8_t *p = r->p;
	r->p += n;
	return p;
}

/* data[0..len) read from off on (where a compression pointer leads); bad when off is past len. */
static inline struct wire_reader wire_reader_at(const uint8_t *data, size_t len, size_t off)
{
	struct wire_reader r = wire_reader(data, len);
	wire_take(&r, off);
	return r;
}

/* The next n bytes without taking them, or NULL when fewer are left (not bad: a look ahead). */
static inline const uint8_t *wire_peek(const struct wire_reader *r, size_t n)
{
	return !r->bad && wire_left(r) >= n ? r->p : NULL;
}

static inline uint8_t wire_u8(struct wire_reader *r)
{
	const uint8_t *p = wire_take(r, 1);
	return p ? p[0] : 0;
}

static inline uint16_t wire_u16(struct wire_reader *r)
{
	const uint8_t *p = wire_take(r, 2);
	return p ? wire_load16(p) : 0;
}

static inline uint32_t wire_u32(struct wire_reader *r)
{
	const uint8_t *p = wire_take(r, 4);
	return p ? wire_load32(p) : 0;
}

static inline uint64_t wire_u64(struct wire_reader *r)
{
	const uint8_t *p = wire_take(r, 8);
	return p ? wire_load64(p) : 0;
}

struct wire_writer {
	uint8_t *buf;
	size_t len, room;
	bool bad;                       /* a write did not fit */
};

static inline struct wire_writer wire_writer(uint8_t *buf, size_t room)
{
	return (struct wire_writer){ .buf = buf, .room = room };
}

static inline size_t wire_written(const struct wire_writer *w)
{
	return w->len;
}

/* Room for n bytes, or NULL (and bad). */
static inline uint8_t *wire_room(struct wire_writer *w, size_t n)
{
	if (w->bad || w->room - w->len < n) {
		w->bad = true;
		return NULL;
	}
	w->len += n;
	return w->buf + w->len - n;
}

static inline void wire_put(struct wire_writer *w, const void *data, size_t n)
{
	uint8_t *p = wire_room(w, n);
	if (p)
		memcpy(p, data, n);
}

static inline void wire_put8(struct wire_writer *w, uint8_t v)
{
	uint8_t *p = wire_room(w, 1);
	if (p)
		*p = v;
}

static inline void wire_put16(struct wire_writer *w, uint16_t v)
{
	uint8_t *p = wire_room(w, 2);
	if (p)
		wire_store16(p, v);
}

static inline void wire_put32(struct wire_writer *w, uint32_t v)
{
	uint8_t *p = wire_room(w, 4);
	if (p)
		wire_store32(p, v);
}

static inline void wire_put64(struct wire_writer *w, uint64_t v)
{
	uint8_t *p = wire_room(w, 8);
	if (p)
		wire_store64(p, v);
}

#endif
