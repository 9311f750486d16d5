/*
 * A DNS over HTTPS request (RFC 8484) as its HTTP/2 headers and body come
 * in, without the HTTP/2 framing (inrpd/doh.c feeds it from nghttp2's
 * callbacks; fuzz_doh feeds it directly): the method, the path and its
 * ?dns= parameter (base64url, no padding), the content type, the body.
 * What it decides is the DNS message to answer, or the HTTP status that
 * refuses the request:
 *
 *     404  another path than the configured one
 *     405  a method other than GET and POST
 *     415  POST without Content-Type application/dns-message
 *     413  a message longer than 65535 bytes
 *     400  no message, a bad ?dns= value, a message shorter than a DNS header
 */
#ifndef CR_DOHREQ_H
#define CR_DOHREQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DOH_PATH_MAX 128                /* https-path's longest */
#define DOH_MSG_MAX 65535

enum dohreq_method { DOHREQ_NONE, DOHREQ_GET, DOHREQ_POST, DOHREQ_OTHER };

struct dohreq {
	const char *path;               /* the configured path, e.g. "/dns-query" */
	enum dohreq_method method;
	bool path_seen, path_ok, content_type_ok;
	bool from_query;                /* the message came in ?dns= */
	uint16_t status;                /* the first refusal seen; 0: none yet */
	uint8_t *msg;                   /* the GET parameter decoded, or the POST body */
	size_t len, cap;
};

void dohreq_init(struct dohreq *r, const char *path);
/* One request header (pseudo-headers included); names are lowercase in HTTP/2. */
void dohreq_header(struct dohreq *r, const uint8_t *name, size_t name_len, const uint8_t *value,
		   size_t value_len);
/* Part of the body. */
void dohreq_body(struct dohreq *r, const uint8_t *data, size_t len);
/* The request is complete: 0 with the DNS message in *msg, *len, else the HTTP status. */
uint16_t dohreq_finish(struct dohreq *r, const uint8_t **msg, size_t *len);
void dohreq_free(struct dohreq *r);

/* base64url without padding (RFC 4648 5): decoded bytes, or -1 when in is not that or
 * does not fit in cap. */
long base64url_decode(const char *in, size_t len, uint8_t *out, size_t cap);

#endif
