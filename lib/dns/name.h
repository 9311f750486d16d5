/*
 * Domain names in one canonical form: uncompressed DNS wire format with
 * every ASCII letter lowercased, ending in the root label.  Comparison is
 * then memcmp, hashing needs no case folding, and conversion to and from
 * presentation or packet form happens only at the edges.
 */
#ifndef CR_NAME_H
#define CR_NAME_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <string.h>

#define NAME_MAX_WIRE   255     /* RFC 1035 2.3.4, including the root label */
#define NAME_MAX_LABEL  63
#define NAME_MAX_LABELS 127     /* 255 bytes hold at most 127 one-byte labels + root */
#define NAME_MAX_TEXT   1024    /* worst case: every byte escaped as \DDD, plus dots */
#define NAME_MIN_POINTER 12     /* a DNS header comes first: no name starts below it */

struct name {
	uint8_t len;                    /* bytes used in wire[], root label included */
	uint8_t wire[NAME_MAX_WIRE];
	/* lets the FIB load a suffix as whole words and mask off the rest */
	uint8_t pad[24];
};

enum name_error {
	NAME_OK = 0,
	NAME_ERR_EMPTY_LABEL = -1,      /* "a..b" or a leading dot */
	NAME_ERR_LABEL_TOO_LONG = -2,
	NAME_ERR_NAME_TOO_LONG = -3,
	NAME_ERR_BAD_ESCAPE = -4,
	NAME_ERR_TRUNCATED = -5,        /* packet ends inside the name */
	NAME_ERR_BAD_POINTER = -6,      /* compression pointer not strictly backwards */
	NAME_ERR_BAD_LABEL_TYPE = -7,   /* 0x40/0x80 label types (RFC 6891 6.2.1) */
	NAME_ERR_EMPTY = -8,            /* empty string */
};

const char *name_strerror(int err);

/* *dst = *src, the bytes in use only: a short name in two moves (pad has the room), not a string copy. */
static inline void name_copy(struct name *dst, const struct name *src)
{
	dst->len = src->len;
	if (src->len <= 32)
		memcpy(dst->wire, src->wire, 32);
	else
		memcpy(dst->wire, src->wire, src->len);
}

/* Eight wire bytes with their ASCII capitals lowercased at once; other bytes, length bytes included, kept. */
static inline uint64_t name_lower_word(uint64_t x)
{
	const uint64_t ones = 0x0101010101010101u;
	uint64_t seven = x & (0x7f * ones);
	uint64_t above_z = seven + (0x7f - 'Z') * ones;         /* top bit set: past 'Z' */
	uint64_t from_a = seven + (0x80 - 'A') * ones;          /* top bit set: 'A' or past */
	uint64_t upper = ~x & (from_a ^ above_z) & (0x80 * ones);
	return x | upper >> 2;
}

/*
 * Presentation format ("www.Example.COM", "a\.b.example.", "\065bc.org").
 * A trailing dot is optional: every name is taken as absolute.  "." is the root.
 */
int name_from_text(struct name *out, const char *text, size_t text_len);

/*
 * A name inside a DNS message at *pos, following compression pointers.
 * Pointers must point strictly backwards, which also rules out loops, and
 * not into the 12-byte header.
 * On success *pos is just past the name's bytes at its original position.
 */
int name_from_packet(struct name *out, const uint8_t *pkt, size_t pkt_len, size_t *pos);

/* An uncompressed wire name (no pointers), e.g. from a protobuf field. */
int name_from_wire(struct name *out, const uint8_t *wire, size_t wire_len);

/*
 * True if wire is exactly one name already in canonical form: what
 * name_from_wire accepts and leaves unchanged (no uppercase letter).
 * Checked in place, for callers that can use the bytes as they are.
 */
bool name_wire_canonical(const uint8_t *wire, size_t wire_len);

/*
 * Writes the presentation form with a trailing dot and escapes, NUL-terminated.
 * Returns the length written (without the NUL), or -1 if buf is too small.
 */
int name_to_text(const struct name *n, char *buf, size_t buf_len);

/*
 * Offsets of each label's length byte, left to right ("www", "example",
 * "com"); the root label is not counted.  Returns the number of labels.
 */
int name_label_offsets(const struct name *n, uint8_t offsets[NAME_MAX_LABELS]);
int name_label_count(const struct name *n);

static inline bool name_equal(const struct name *a, const struct name *b)
{
	return a->len == b->len && __builtin_memcmp(a->wire, b->wire, a->len) == 0;
}

/* True if n equals suffix or lies below it (label-wise, not byte-wise). */
bool name_is_subdomain(const struct name *n, const struct name *suffix);

/* Canonical DNS order (RFC 4034 6.1): compares labels right to left. */
int name_compare(const struct name *a, const struct name *b);

#endif
