/*
 * dnstap messages written by hand (lib/dns/dnstap.c) from whatever a
 * caller may give: addresses of any family or none, ports, times (any
 * seconds, any nanoseconds), DNS messages of 0 to 65535 bytes, identity
 * and version strings of any length.  Checks: the size counted is the
 * size written, not a byte is written past it, and protobuf-c's generated
 * unpacker reads back the same fields, a field not given absent.
 *
 * Input: a header of fixed length (header_len below), then the bytes the
 * messages and strings are drawn from, repeated to their lengths so a
 * short input still makes a 64 KiB message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/un.h>

#include "dnstap.h"
#include "dnstap.pb-c.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "fuzz_dnstap: check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
		abort(); \
	} \
} while (0)

static const enum dnstap_type types[] = {
	DNSTAP_CLIENT_QUERY, DNSTAP_CLIENT_RESPONSE, DNSTAP_FORWARDER_QUERY, DNSTAP_FORWARDER_RESPONSE,
};
static const enum dnstap_protocol protocols[] = { DNSTAP_UDP, DNSTAP_TCP, DNSTAP_DOT, DNSTAP_DOH };

/* flags (header byte 2) */
enum {
	F_QUERY = 1, F_RESPONSE = 2, F_QTIME = 4, F_RTIME = 8, F_IDENTITY = 16, F_VERSION = 32,
};

struct reader {
	const uint8_t *p;
	size_t n, off;
};

static uint64_t take(struct reader *r, unsigned bytes)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < bytes; i++)
		v = v << 8 | (r->off < r->n ? r->p[r->off++] : 0);
	return v;
}

/* An address of family byte % 4 (none, IPv4, IPv6, unix), its bytes from r. */
static const struct sockaddr *address(struct reader *r, struct sockaddr_storage *ss)
{
	unsigned kind = (unsigned)take(r, 1) % 4;
	uint8_t addr[16];
	for (unsigned i = 0; i < sizeof(addr); i++)
		addr[i] = (uint8_t)take(r, 1);
	uint16_t port = (uint16_t)take(r, 2);
	memset(ss, 0, sizeof(*ss));
	switch (kind) {
	case 1: {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		memcpy(&sin->sin_addr, addr, 4);
		return (struct sockaddr *)ss;
	}
	case 2: {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		memcpy(&sin6->sin6_addr, addr, 16);
		return (struct sockaddr *)ss;
	}
	case 3:
		ss->ss_family = AF_UNIX;
		return (struct sockaddr *)ss;
	default:
		return NULL;
	}
}

/* len bytes drawn from the tail, over and over (zeros if there is none). */
static uint8_t *fill(const uint8_t *tail, size_t tail_len, size_t len, size_t *pos)
{
	uint8_t *b = malloc(len + 1);
	CHECK(b);
	for (size_t i = 0; i < len; i++)
		b[i] = tail_len ? tail[(*pos)++ % tail_len] : 0;
	b[len] = 0;
	return b;
}

/* sa as dnstap carries it, if its family is the message's. */
static void check_endpoint(const struct sockaddr *sa, int family, protobuf_c_boolean has_addr,
			   const ProtobufCBinaryData *addr, protobuf_c_boolean has_port, uint32_t port)
{
	if (!sa || sa->sa_family != family || (family != AF_INET && family != AF_INET6)) {
		CHECK(!has_addr && !has_port);
		return;
	}
	CHECK(has_addr && has_port);
	if (family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;
		CHECK(addr->len == 4 && memcmp(addr->data, &sin->sin_addr, 4) == 0);
		CHECK(port == ntohs(sin->sin_port));
	} else {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;
		CHECK(addr->len == 16 && memcmp(addr->data, &sin6->sin6_addr, 16) == 0);
		CHECK(port == ntohs(sin6->sin6_port));
	}
}

static void check_bytes(protobuf_c_boolean has, const ProtobufCBinaryData *got, const void *want, size_t len)
{
	if (!want) {
		CHECK(!has);
		return;
	}
	CHECK(has && got->len == len && (len == 0 || memcmp(got->data, want, len) == 0));
}

static void check_time(protobuf_c_boolean has_sec, uint64_t sec, protobuf_c_boolean has_nsec, uint32_t nsec,
		       const struct timespec *want)
{
	if (!want) {
		CHECK(!has_sec && !has_nsec);
		return;
	}
	CHECK(has_sec && sec == (uint64_t)want->tv_sec);
	CHECK(has_nsec && nsec == (uint32_t)want->tv_nsec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reader r = { .p = data, .n = size };
	struct sockaddr_storage qss, rss;
	struct timespec qt, rt;
	struct dnstap_event ev = { .type = types[take(&r, 1) % 4], .protocol = protocols[take(&r, 1) % 4] };
	unsigned flags = (unsigned)take(&r, 1);
	ev.query_addr = address(&r, &qss);
	ev.response_addr = address(&r, &rss);
	qt.tv_sec = (time_t)take(&r, 8);
	qt.tv_nsec = (long)(take(&r, 4) % 1000000000u);
	rt.tv_sec = (time_t)take(&r, 8);
	rt.tv_nsec = (long)(take(&r, 4) % 1000000000u);
	size_t qlen = (size_t)take(&r, 2), rlen = (size_t)take(&r, 2);
	size_t idlen = (size_t)take(&r, 1), verlen = (size_t)take(&r, 1);
	const uint8_t *tail = r.off < size ? data + r.off : NULL;
	size_t tail_len = size - (r.off < size ? r.off : size), pos = 0;

	uint8_t *q = fill(tail, tail_len, qlen, &pos), *resp = fill(tail, tail_len, rlen, &pos);
	char *id = (char *)fill(tail, tail_len, idlen, &pos), *ver = (char *)fill(tail, tail_len, verlen, &pos);
	if (flags & F_QUERY) {
		ev.query = q;
		ev.query_len = qlen;
	}
	if (flags & F_RESPONSE) {
		ev.response = resp;
		ev.response_len = rlen;
	}
	ev.query_time = flags & F_QTIME ? &qt : NULL;
	ev.response_time = flags & F_RTIME ? &rt : NULL;
	ev.identity = flags & F_IDENTITY ? id : NULL;     /* cut at a NUL, as a C string is */
	ev.version = flags & F_VERSION ? ver : NULL;

	size_t n = dnstap_size(&ev);
	uint8_t *out = malloc(n);               /* exactly: ASan sees a byte written past it */
	CHECK(out);
	CHECK(dnstap_write(&ev, out) == n);

	Dnstap__Dnstap *d = dnstap__dnstap__unpack(NULL, n, out);
	CHECK(d);
	CHECK(d->type == DNSTAP__DNSTAP__TYPE__MESSAGE && d->message);
	check_bytes(d->has_identity, &d->identity, ev.identity, ev.identity ? strlen(ev.identity) : 0);
	check_bytes(d->has_version, &d->version, ev.version, ev.version ? strlen(ev.version) : 0);
	const Dnstap__Message *m = d->message;
	const struct sockaddr *first = ev.query_addr ? ev.query_addr : ev.response_addr;
	int family = first ? first->sa_family : AF_UNSPEC;
	CHECK((int)m->type == (int)ev.type);
	CHECK(m->has_socket_protocol && (int)m->socket_protocol == (int)ev.protocol);
	if (family == AF_INET || family == AF_INET6)
		CHECK(m->has_socket_family &&
		      m->socket_family == (family == AF_INET ? DNSTAP__SOCKET_FAMILY__INET : DNSTAP__SOCKET_FAMILY__INET6));
	else
		CHECK(!m->has_socket_family);
	check_endpoint(ev.query_addr, family, m->has_query_address, &m->query_address, m->has_query_port,
		       m->query_port);
	check_endpoint(ev.response_addr, family, m->has_response_address, &m->response_address,
		       m->has_response_port, m->response_port);
	check_bytes(m->has_query_message, &m->query_message, ev.query, ev.query_len);
	check_bytes(m->has_response_message, &m->response_message, ev.response, ev.response_len);
	check_time(m->has_query_time_sec, m->query_time_sec, m->has_query_time_nsec, m->query_time_nsec,
		   ev.query_time);
	check_time(m->has_response_time_sec, m->response_time_sec, m->has_response_time_nsec,
		   m->response_time_nsec, ev.response_time);

	dnstap__dnstap__free_unpacked(d, NULL);
	free(out);
	free(q);
	free(resp);
	free(id);
	free(ver);
	return 0;
}
