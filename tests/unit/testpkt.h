/*
 * Building DNS messages byte by byte for the unit tests (test_dns.c,
 * test_relay.c): what a parser must accept or refuse, written without the
 * code under test.  Include after cmocka.
 */
#ifndef TESTPKT_H
#define TESTPKT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

struct pkt {
	uint8_t b[8192];
	size_t len;
};

static inline void put8(struct pkt *p, uint8_t v)
{
	assert_true(p->len < sizeof(p->b));
	p->b[p->len++] = v;
}

static inline void put16(struct pkt *p, uint16_t v)
{
	put8(p, (uint8_t)(v >> 8));
	put8(p, (uint8_t)v);
}

static inline void put32(struct pkt *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p, (uint16_t)v);
}

static inline void put_bytes(struct pkt *p, const void *d, size_t n)
{
	assert_true(p->len + n <= sizeof(p->b));
	memcpy(p->b + p->len, d, n);
	p->len += n;
}

static inline void header(struct pkt *p, uint16_t id, uint8_t f1, uint8_t f2,
		   uint16_t qd, uint16_t an, uint16_t ns, uint16_t ar)
{
	p->len = 0;
	put16(p, id);
	put8(p, f1);
	put8(p, f2);
	put16(p, qd);
	put16(p, an);
	put16(p, ns);
	put16(p, ar);
}

static inline void put_name(struct pkt *p, const char *text)
{
	const char *s = text;
	while (*s) {
		const char *dot = strchr(s, '.');
		size_t n = dot ? (size_t)(dot - s) : strlen(s);
		put8(p, (uint8_t)n);
		put_bytes(p, s, n);
		s += n;
		if (*s == '.')
			s++;
	}
	put8(p, 0);
}

static inline void question(struct pkt *p, const char *name, uint16_t type, uint16_t cls)
{
	put_name(p, name);
	put16(p, type);
	put16(p, cls);
}

#endif
