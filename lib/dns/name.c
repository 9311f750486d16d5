#include <string.h>

#include "name.h"
#include "wire.h"

static const char *const name_errors[] = {
	[0] = "ok",
	[-NAME_ERR_EMPTY_LABEL] = "empty label",
	[-NAME_ERR_LABEL_TOO_LONG] = "label longer than 63 bytes",
	[-NAME_ERR_NAME_TOO_LONG] = "name longer than 255 bytes",
	[-NAME_ERR_BAD_ESCAPE] = "bad escape sequence",
	[-NAME_ERR_TRUNCATED] = "name runs past the end of the message",
	[-NAME_ERR_BAD_POINTER] = "compression pointer does not point backwards",
	[-NAME_ERR_BAD_LABEL_TYPE] = "unsupported label type",
	[-NAME_ERR_EMPTY] = "empty name",
};

const char *name_strerror(int err)
{
	if (err > 0 || -err >= (int)(sizeof(name_errors) / sizeof(name_errors[0])))
		return "unknown name error";
	return name_errors[-err];
}

static inline uint8_t lower(uint8_t c)
{
	return (c >= 'A' && c <= 'Z') ? (uint8_t)(c + ('a' - 'A')) : c;
}

int name_from_text(struct name *out, const char *text, size_t text_len)
{
	size_t i = 0, len = 0, label_start;

	if (text_len == 0)
		return NAME_ERR_EMPTY;
	if (text_len == 1 && text[0] == '.') {
		out->wire[0] = 0;
		out->len = 1;
		return NAME_OK;
	}
	while (i < text_len) {
		label_start = len++;    /* room for the length byte */
		if (len >= NAME_MAX_WIRE)
			return NAME_ERR_NAME_TOO_LONG;
		while (i < text_len && text[i] != '.') {
			uint8_t c = (uint8_t)text[i++];
			if (c == '\\') {
				if (i >= text_len)
					return NAME_ERR_BAD_ESCAPE;
				if (text[i] >= '0' && text[i] <= '9') {
					if (i + 3 > text_len)
						return NAME_ERR_BAD_ESCAPE;
					unsigned v = 0;
					for (int k = 0; k < 3; k++, i++) {
						if (text[i] < '0' || text[i] > '9')
							return NAME_ERR_BAD_ESCAPE;
						v = v * 10 + (unsigned)(text[i] - '0');
					}
					if (v > 255)
						return NAME_ERR_BAD_ESCAPE;
					c = (uint8_t)v;
				} else {
					c = (uint8_t)text[i++];
				}
			}
			if (len - label_start > NAME_MAX_LABEL)
				return NAME_ERR_LABEL_TOO_LONG;
			/* keep one byte for the root label */
			if (len + 1 >= NAME_MAX_WIRE)
				return NAME_ERR_NAME_TOO_LONG;
			out->wire[len++] = lower(c);
		}
		size_t label_len = len - label_start - 1;
		if (label_len == 0)
			return NAME_ERR_EMPTY_LABEL;
		out->wire[label_start] = (uint8_t)label_len;
		if (i < text_len) {
			i++;    /* the dot */
			if (i == text_len)
				break;  /* trailing dot: absolute name */
		}
	}
	out->wire[len++] = 0;
	out->len = (uint8_t)len;
	return NAME_OK;
}

int name_from_packet(struct name *out, const uint8_t *pkt, size_t pkt_len, size_t *pos)
{
	struct wire_reader r = wire_reader_at(pkt, pkt_len, *pos);
	size_t len = 0, end = 0;
	size_t limit = *pos;    /* a pointer must point below this */
	bool jumped = false;

	for (;;) {
		uint8_t b = wire_u8(&r);
		if (r.bad)
			return NAME_ERR_TRUNCATED;
		if ((b & 0xC0) == 0xC0) {
			uint8_t low = wire_u8(&r);
			if (r.bad)
				return NAME_ERR_TRUNCATED;
			size_t target = ((size_t)(b & 0x3F) << 8) | low;
			/*
			 * Strictly backwards from the start of the label sequence
			 * being read: every jump lowers the limit, so a loop
			 * cannot form and the walk is bounded by the packet size.
			 */
			if (target >= limit || target < NAME_MIN_POINTER)
				return NAME_ERR_BAD_POINTER;
			if (!jumped) {
				end = (size_t)(r.p - pkt);
				jumped = true;
			}
			limit = target;
			r = wire_reader_at(pkt, pkt_len, target);
			continue;
		}
		if (b & 0xC0)
			return NAME_ERR_BAD_LABEL_TYPE;
		if (b == 0) {
			if (len + 1 > NAME_MAX_WIRE)
				return NAME_ERR_NAME_TOO_LONG;
			out->wire[len++] = 0;
			out->len = (uint8_t)len;
			*pos = jumped ? end : (size_t)(r.p - pkt);
			return NAME_OK;
		}
		const uint8_t *label = wire_take(&r, b);
		if (!label)
			return NAME_ERR_TRUNCATED;
		if (len + 1 + b + 1 > NAME_MAX_WIRE)
			return NAME_ERR_NAME_TOO_LONG;
		out->wire[len++] = b;
		for (unsigned k = 0; k < b; k++)
			out->wire[len++] = lower(label[k]);
	}
}

int name_from_wire(struct name *out, const uint8_t *wire, size_t wire_len)
{
	struct wire_reader r = wire_reader(wire, wire_len);
	size_t p = 0;

	for (;;) {
		uint8_t b = wire_u8(&r);
		if (r.bad)
			return NAME_ERR_TRUNCATED;
		if (b & 0xC0)
			return NAME_ERR_BAD_LABEL_TYPE;
		if (p + 1 + b > NAME_MAX_WIRE)
			return NAME_ERR_NAME_TOO_LONG;
		if (b == 0)
			break;
		const uint8_t *label = wire_take(&r, b);
		if (!label)
			return NAME_ERR_TRUNCATED;
		out->wire[p] = b;
		for (unsigned k = 0; k < b; k++)
			out->wire[p + 1 + k] = lower(label[k]);
		p += 1 + (size_t)b;
	}
	if (wire_left(&r) != 0)
		return NAME_ERR_TRUNCATED;      /* bytes after the root label */
	out->wire[p] = 0;
	out->len = (uint8_t)(p + 1);
	return NAME_OK;
}

/* 0x80 in every byte of x that is 'A'..'Z', with no carry from one byte to the next. */
static inline uint64_t upper_bytes(uint64_t x)
{
	const uint64_t ones = 0x0101010101010101ull, high = ones * 0x80;
	uint64_t low7 = x & ~high;
	uint64_t ge_a = low7 + ones * (0x80 - 'A');     /* high bit: low7 >= 'A' */
	uint64_t gt_z = low7 + ones * (0x80 - 'Z' - 1); /* high bit: low7 > 'Z' */
	return ge_a & ~gt_z & ~x & high;
}

/* Whether any of the n bytes is 'A'..'Z', eight bytes at a time. */
static bool has_upper(const uint8_t *p, size_t n)
{
	uint64_t found = 0, x;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		memcpy(&x, p + i, 8);
		found |= upper_bytes(x);
	}
	if (i < n && n >= 8) {
		memcpy(&x, p + n - 8, 8);       /* the last 8: bytes seen twice do no harm */
		found |= upper_bytes(x);
	} else {
		for (; i < n; i++)
			found |= (uint8_t)(p[i] - 'A') < 26;
	}
	return found != 0;
}

bool name_wire_canonical(const uint8_t *wire, size_t wire_len)
{
	if (wire_len == 0 || wire_len > NAME_MAX_WIRE)
		return false;
	size_t p = 0;
	for (;;) {
		uint8_t b = wire[p];
		if (b & 0xC0)
			return false;
		if (b == 0)
			break;
		p += 1 + (size_t)b;
		if (p >= wire_len)
			return false;   /* the label runs past the end, or no root label */
	}
	if (p + 1 != wire_len)
		return false;           /* bytes after the root label */
	/* length bytes are at most 63, below 'A': only label bytes can match */
	return !has_upper(wire, wire_len);
}

static bool needs_escape(uint8_t c)
{
	return c == '.' || c == '\\' || c == '"' || c == '(' || c == ')' ||
	       c == ';' || c == '@' || c == '$';
}

int name_to_text(const struct name *n, char *buf, size_t buf_len)
{
	size_t o = 0, p = 0;

	if (n->len <= 1) {
		if (buf_len < 2)
			return -1;
		buf[0] = '.';
		buf[1] = 0;
		return 1;
	}
	while (p < n->len && n->wire[p] != 0) {
		uint8_t l = n->wire[p++];
		for (unsigned k = 0; k < l; k++) {
			uint8_t c = n->wire[p++];
			if (c <= ' ' || c >= 0x7F) {
				if (o + 4 >= buf_len)
					return -1;
				buf[o++] = '\\';
				buf[o++] = (char)('0' + c / 100);
				buf[o++] = (char)('0' + (c / 10) % 10);
				buf[o++] = (char)('0' + c % 10);
			} else if (needs_escape(c)) {
				if (o + 2 >= buf_len)
					return -1;
				buf[o++] = '\\';
				buf[o++] = (char)c;
			} else {
				if (o + 1 >= buf_len)
					return -1;
				buf[o++] = (char)c;
			}
		}
		if (o + 1 >= buf_len)
			return -1;
		buf[o++] = '.';
	}
	buf[o] = 0;
	return (int)o;
}

int name_label_offsets(const struct name *n, uint8_t offsets[NAME_MAX_LABELS])
{
	int count = 0;
	unsigned p = 0;

	while (p < n->len && n->wire[p] != 0) {
		offsets[count++] = (uint8_t)p;
		p += 1u + n->wire[p];
	}
	return count;
}

int name_label_count(const struct name *n)
{
	uint8_t offsets[NAME_MAX_LABELS];
	return name_label_offsets(n, offsets);
}

bool name_is_subdomain(const struct name *n, const struct name *suffix)
{
	if (suffix->len > n->len)
		return false;
	size_t start = (size_t)(n->len - suffix->len);
	if (memcmp(n->wire + start, suffix->wire, suffix->len) != 0)
		return false;
	/* the match must begin at a label boundary, not inside a label */
	unsigned p = 0;
	while (p < start)
		p += 1u + n->wire[p];
	return p == start;
}

int name_compare(const struct name *a, const struct name *b)
{
	uint8_t oa[NAME_MAX_LABELS], ob[NAME_MAX_LABELS];
	int na = name_label_offsets(a, oa), nb = name_label_offsets(b, ob);

	while (na > 0 && nb > 0) {
		const uint8_t *la = a->wire + oa[--na], *lb = b->wire + ob[--nb];
		unsigned min = la[0] < lb[0] ? la[0] : lb[0];
		int c = memcmp(la + 1, lb + 1, min);
		if (c != 0)
			return c < 0 ? -1 : 1;
		if (la[0] != lb[0])
			return la[0] < lb[0] ? -1 : 1;
	}
	return na == nb ? 0 : (na < nb ? -1 : 1);
}
