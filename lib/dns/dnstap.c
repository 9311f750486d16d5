/*
 * dnstap messages written by hand: the protobuf wire format (varints,
 * length-delimited bytes, one fixed32) for the fields of dnstap.proto that
 * a forwarder fills, in field-number order as protobuf-c writes them.
 * One walk counts (out NULL), the same walk writes: the two cannot
 * disagree.
 */
#include <string.h>
#include <netinet/in.h>

#include "addr.h"
#include "dnstap.h"

/* Field tags: (number << 3) | wire type (0 varint, 2 bytes, 5 fixed32). */
enum {
	DNSTAP_IDENTITY = 1 << 3 | 2,
	DNSTAP_VERSION = 2 << 3 | 2,
	DNSTAP_MESSAGE = 14 << 3 | 2,
	DNSTAP_TYPE = 15 << 3 | 0,
	MSG_TYPE = 1 << 3 | 0,
	MSG_SOCKET_FAMILY = 2 << 3 | 0,
	MSG_SOCKET_PROTOCOL = 3 << 3 | 0,
	MSG_QUERY_ADDRESS = 4 << 3 | 2,
	MSG_RESPONSE_ADDRESS = 5 << 3 | 2,
	MSG_QUERY_PORT = 6 << 3 | 0,
	MSG_RESPONSE_PORT = 7 << 3 | 0,
	MSG_QUERY_TIME_SEC = 8 << 3 | 0,
	MSG_QUERY_TIME_NSEC = 9 << 3 | 5,
	MSG_QUERY_MESSAGE = 10 << 3 | 2,
	MSG_RESPONSE_TIME_SEC = 12 << 3 | 0,
	MSG_RESPONSE_TIME_NSEC = 13 << 3 | 5,
	MSG_RESPONSE_MESSAGE = 14 << 3 | 2,
};
enum { TYPE_MESSAGE = 1, FAMILY_INET = 1, FAMILY_INET6 = 2 };

/* Where the bytes go; p NULL: only counted. */
struct out {
	uint8_t *p;
	size_t n;
};

static size_t varint_len(uint64_t v)
{
	return v ? (size_t)(64 - __builtin_clzll(v) + 6) / 7 : 1;
}

static inline void put_varint(struct out *o, uint64_t v)
{
	if (v < 0x80) {                 /* tags, types, lengths of addresses: most of them */
		if (o->p)
			o->p[o->n] = (uint8_t)v;
		o->n++;
		return;
	}
	if (!o->p) {
		o->n += varint_len(v);
		return;
	}
	do {
		uint8_t b = (uint8_t)(v & 0x7F);
		v >>= 7;
		o->p[o->n++] = b | (v ? 0x80 : 0);
	} while (v);
}

static inline void put_field_varint(struct out *o, unsigned tag, uint64_t v)
{
	put_varint(o, tag);
	put_varint(o, v);
}

static inline void put_field_bytes(struct out *o, unsigned tag, const void *data, size_t len)
{
	put_varint(o, tag);
	put_varint(o, len);
	if (o->p)
		memcpy(o->p + o->n, data, len);
	o->n += len;
}

static inline void put_field_fixed32(struct out *o, unsigned tag, uint32_t v)
{
	put_varint(o, tag);
	if (o->p)
		for (unsigned i = 0; i < 4; i++)
			o->p[o->n + i] = (uint8_t)(v >> (8 * i));      /* little-endian */
	o->n += 4;
}

/* sa's address and port, if it is of family; false if not. */
static bool endpoint(const struct sockaddr *sa, int family, struct ip_addr *ip, uint16_t *port)
{
	if (!sa || sa->sa_family != family || !sockaddr_ip(sa, ip))
		return false;
	*port = sockaddr_port(sa);
	return true;
}

/* The Message, fields in number order. */
static void put_message(struct out *o, const struct dnstap_event *ev)
{
	const struct sockaddr *first = ev->query_addr ? ev->query_addr : ev->response_addr;
	int family = first ? first->sa_family : AF_UNSPEC;
	struct ip_addr qa, ra;
	size_t alen = family == AF_INET ? 4 : 16;
	uint16_t qp = 0, rp = 0;
	bool has_qa = false, has_ra = false;
	if (family == AF_INET || family == AF_INET6) {
		has_qa = endpoint(ev->query_addr, family, &qa, &qp);
		has_ra = endpoint(ev->response_addr, family, &ra, &rp);
	}

	put_field_varint(o, MSG_TYPE, ev->type);
	if (family == AF_INET || family == AF_INET6)
		put_field_varint(o, MSG_SOCKET_FAMILY, family == AF_INET ? FAMILY_INET : FAMILY_INET6);
	put_field_varint(o, MSG_SOCKET_PROTOCOL, ev->protocol);
	if (has_qa)
		put_field_bytes(o, MSG_QUERY_ADDRESS, qa.addr, alen);
	if (has_ra)
		put_field_bytes(o, MSG_RESPONSE_ADDRESS, ra.addr, alen);
	if (has_qa)
		put_field_varint(o, MSG_QUERY_PORT, qp);
	if (has_ra)
		put_field_varint(o, MSG_RESPONSE_PORT, rp);
	if (ev->query_time) {
		put_field_varint(o, MSG_QUERY_TIME_SEC, (uint64_t)ev->query_time->tv_sec);
		put_field_fixed32(o, MSG_QUERY_TIME_NSEC, (uint32_t)ev->query_time->tv_nsec);
	}
	if (ev->query)
		put_field_bytes(o, MSG_QUERY_MESSAGE, ev->query, ev->query_len);
	if (ev->response_time) {
		put_field_varint(o, MSG_RESPONSE_TIME_SEC, (uint64_t)ev->response_time->tv_sec);
		put_field_fixed32(o, MSG_RESPONSE_TIME_NSEC, (uint32_t)ev->response_time->tv_nsec);
	}
	if (ev->response)
		put_field_bytes(o, MSG_RESPONSE_MESSAGE, ev->response, ev->response_len);
}

/* The Dnstap around it; the message's length counted before. */
static void put_dnstap(struct out *o, const struct dnstap_event *ev)
{
	if (ev->identity)
		put_field_bytes(o, DNSTAP_IDENTITY, ev->identity, ev->identity_len);
	if (ev->version)
		put_field_bytes(o, DNSTAP_VERSION, ev->version, ev->version_len);
	put_varint(o, DNSTAP_MESSAGE);
	put_varint(o, ev->message_len);
	if (o->p)
		put_message(o, ev);
	else
		o->n += ev->message_len;
	put_field_varint(o, DNSTAP_TYPE, TYPE_MESSAGE);
}

size_t dnstap_size(struct dnstap_event *ev)
{
	struct out o = { .p = NULL };
	ev->identity_len = ev->identity ? strlen(ev->identity) : 0;
	ev->version_len = ev->version ? strlen(ev->version) : 0;
	put_message(&o, ev);
	ev->message_len = o.n;
	o.n = 0;
	put_dnstap(&o, ev);
	return o.n;
}

size_t dnstap_write(const struct dnstap_event *ev, uint8_t *out)
{
	struct out o = { .p = out };
	put_dnstap(&o, ev);
	return o.n;
}
