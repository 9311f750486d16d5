#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dns.h"
#include "dohreq.h"

#define CONTENT_TYPE "application/dns-message"

static bool is(const uint8_t *s, size_t len, const char *lit)
{
	return len == strlen(lit) && memcmp(s, lit, len) == 0;
}

static void refuse(struct dohreq *r, uint16_t status)
{
	if (!r->status)
		r->status = status;
}

/* Room for len more bytes of message; false (and the status) past DOH_MSG_MAX. */
static bool reserve(struct dohreq *r, size_t len)
{
	if (len > DOH_MSG_MAX - r->len) {
		refuse(r, 413);
		return false;
	}
	if (r->cap - r->len >= len)
		return true;
	/* not vec: the doubling stops at DOH_MSG_MAX */
	size_t cap = r->cap ? r->cap : 512;
	while (cap - r->len < len)
		cap *= 2;
	if (cap > DOH_MSG_MAX)
		cap = DOH_MSG_MAX;
	uint8_t *p = realloc(r->msg, cap);
	if (!p) {
		refuse(r, 500);
		return false;
	}
	r->msg = p;
	r->cap = cap;
	return true;
}

static int b64url_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '-')
		return 62;
	if (c == '_')
		return 63;
	return -1;
}

long base64url_decode(const char *in, size_t len, uint8_t *out, size_t cap)
{
	if (len % 4 == 1)
		return -1;              /* six bits cannot end a byte */
	size_t n = len / 4 * 3 + (len % 4 ? len % 4 - 1 : 0);
	if (n > cap)
		return -1;
	uint32_t acc = 0;
	unsigned bits = 0;
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		int v = b64url_value((unsigned char)in[i]);
		if (v < 0)
			return -1;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (uint8_t)(acc >> bits);
		}
	}
	if (acc & ((1u << bits) - 1))
		return -1;              /* the leftover bits must be zero (canonical) */
	return (long)o;
}

/* ":path": the configured path exactly, then for GET the dns= parameter. */
static void take_path(struct dohreq *r, const uint8_t *v, size_t len)
{
	if (r->path_seen) {
		refuse(r, 400);
		return;
	}
	r->path_seen = true;
	const uint8_t *q = memchr(v, '?', len);
	size_t plen = q ? (size_t)(q - v) : len;
	if (!is(v, plen, r->path)) {
		refuse(r, 404);
		return;
	}
	r->path_ok = true;
	if (!q)
		return;
	const char *p = (const char *)q + 1, *end = (const char *)v + len;
	while (p < end) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *stop = amp ? amp : end;
		if (stop - p >= 4 && memcmp(p, "dns=", 4) == 0) {
			size_t vlen = (size_t)(stop - p - 4);
			if (r->from_query) {
				refuse(r, 400);         /* two of them */
				return;
			}
			if (vlen / 4 * 3 > DOH_MSG_MAX) {
				refuse(r, 413);
				return;
			}
			if (!reserve(r, vlen / 4 * 3 + 3))
				return;
			r->from_query = true;
			long n = base64url_decode(p + 4, vlen, r->msg, r->cap);
			if (n <= 0) {
				refuse(r, 400);
				return;
			}
			r->len = (size_t)n;
		}
		p = stop + 1;
	}
}

void dohreq_init(struct dohreq *r, const char *path)
{
	memset(r, 0, sizeof(*r));
	r->path = path;
}

void dohreq_header(struct dohreq *r, const uint8_t *name, size_t name_len, const uint8_t *value,
		   size_t value_len)
{
	if (is(name, name_len, ":method")) {
		if (r->method != DOHREQ_NONE)
			refuse(r, 400);
		r->method = is(value, value_len, "GET") ? DOHREQ_GET :
			    is(value, value_len, "POST") ? DOHREQ_POST : DOHREQ_OTHER;
	} else if (is(name, name_len, ":path")) {
		take_path(r, value, value_len);
	} else if (is(name, name_len, "content-type")) {
		/* the type, without case, before any parameter */
		const uint8_t *semi = memchr(value, ';', value_len);
		size_t tlen = semi ? (size_t)(semi - value) : value_len;
		while (tlen && (value[tlen - 1] == ' ' || value[tlen - 1] == '\t'))
			tlen--;
		r->content_type_ok = tlen == strlen(CONTENT_TYPE) &&
				     strncasecmp((const char *)value, CONTENT_TYPE, tlen) == 0;
	}
}

void dohreq_body(struct dohreq *r, const uint8_t *data, size_t len)
{
	if (r->method != DOHREQ_POST || r->status || !len)
		return;                 /* a GET's body means nothing to us */
	if (r->from_query) {
		refuse(r, 400);         /* a message in the URL and one in the body */
		return;
	}
	if (!reserve(r, len))
		return;
	memcpy(r->msg + r->len, data, len);
	r->len += len;
}

uint16_t dohreq_finish(struct dohreq *r, const uint8_t **msg, size_t *len)
{
	/* the path first: a client that has the wrong URL learns that, whatever it sent */
	if (!r->path_seen)
		return 400;
	if (!r->path_ok)
		return 404;
	if (r->method != DOHREQ_GET && r->method != DOHREQ_POST)
		return r->method == DOHREQ_NONE ? 400 : 405;
	if (r->method == DOHREQ_POST && !r->content_type_ok)
		return 415;
	if (r->status)
		return r->status;
	if (r->method == DOHREQ_POST && r->from_query)
		return 400;
	if (r->len < DNS_HEADER_LEN)
		return 400;
	*msg = r->msg;
	*len = r->len;
	return 0;
}

void dohreq_free(struct dohreq *r)
{
	free(r->msg);
	r->msg = NULL;
	r->len = r->cap = 0;
}
