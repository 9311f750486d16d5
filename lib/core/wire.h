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

static inline uint16_t wire_load16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t wire_load32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t wire_load64(const uint8_t *p)
{
	return (uint64_t)wire_load32(p) << 32 | wire_load32(p + 4);
}

static inline void wire_store16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void wire_store32(uint8_t *p, uint32_t v)
{
	wire_store16(p, (uint16_t)(v >> 16));
	wire_store16(p + 2, (uint16_t)v);
}

static inline void wire_store64(uint8_t *p, uint64_t v)
{
	wire_store32(p, (uint32_t)(v >> 32));
	wire_store32(p + 4, (uint32_t)v);
}

struct wire_reader {
	const uint8_t *p, *end;
	bool bad;                       /* a read went past the end */
};

static inline struct wire_reader wire_reader(const uint8_t *data, size_t len)
{
	return (struct wire_reader){ .p = data, .end = data + len };
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
