/*
 * dnstap messages, packed by protobuf-c from structures on the stack that
 * point into the caller's bytes: nothing is copied but into the output.
 */
#include <string.h>
#include <netinet/in.h>

#include "dnstap.h"

/* The address and port of sa into the message's fields; false if not IP. */
static bool set_addr(const struct sockaddr *sa, int family, ProtobufCBinaryData *addr, uint32_t *port)
{
	if (!sa || sa->sa_family != family)
		return false;
	if (family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;
		addr->data = (uint8_t *)&sin->sin_addr;
		addr->len = 4;
		*port = ntohs(sin->sin_port);
	} else {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;
		addr->data = (uint8_t *)&sin6->sin6_addr;
		addr->len = 16;
		*port = ntohs(sin6->sin6_port);
	}
	return true;
}

static void set_bytes(const void *p, size_t len, protobuf_c_boolean *has, ProtobufCBinaryData *out)
{
	if (!p)
		return;
	*has = 1;
	out->data = (uint8_t *)p;
	out->len = len;
}

static void set_time(const struct timespec *t, protobuf_c_boolean *has_sec, uint64_t *sec,
		     protobuf_c_boolean *has_nsec, uint32_t *nsec)
{
	if (!t)
		return;
	*has_sec = *has_nsec = 1;
	*sec = (uint64_t)t->tv_sec;
	*nsec = (uint32_t)t->tv_nsec;
}

size_t dnstap_frame_init(struct dnstap_frame *f, const struct dnstap_event *ev)
{
	Dnstap__Dnstap d = DNSTAP__DNSTAP__INIT;
	Dnstap__Message m = DNSTAP__MESSAGE__INIT;

	m.type = (Dnstap__Message__Type)ev->type;
	m.has_socket_protocol = 1;
	m.socket_protocol = ev->tcp ? DNSTAP__SOCKET_PROTOCOL__TCP : DNSTAP__SOCKET_PROTOCOL__UDP;
	const struct sockaddr *first = ev->query_addr ? ev->query_addr : ev->response_addr;
	int family = first ? first->sa_family : AF_UNSPEC;
	if (family == AF_INET || family == AF_INET6) {
		m.has_socket_family = 1;
		m.socket_family = family == AF_INET ? DNSTAP__SOCKET_FAMILY__INET : DNSTAP__SOCKET_FAMILY__INET6;
		m.has_query_address = m.has_query_port =
			set_addr(ev->query_addr, family, &m.query_address, &m.query_port);
		m.has_response_address = m.has_response_port =
			set_addr(ev->response_addr, family, &m.response_address, &m.response_port);
	}
	set_bytes(ev->query, ev->query_len, &m.has_query_message, &m.query_message);
	set_bytes(ev->response, ev->response_len, &m.has_response_message, &m.response_message);
	set_time(ev->query_time, &m.has_query_time_sec, &m.query_time_sec,
		 &m.has_query_time_nsec, &m.query_time_nsec);
	set_time(ev->response_time, &m.has_response_time_sec, &m.response_time_sec,
		 &m.has_response_time_nsec, &m.response_time_nsec);

	d.type = DNSTAP__DNSTAP__TYPE__MESSAGE;
	if (ev->identity)
		set_bytes(ev->identity, strlen(ev->identity), &d.has_identity, &d.identity);
	if (ev->version)
		set_bytes(ev->version, strlen(ev->version), &d.has_version, &d.version);
	f->m = m;
	f->d = d;
	f->d.message = &f->m;
	return dnstap__dnstap__get_packed_size(&f->d);
}

size_t dnstap_frame_pack(const struct dnstap_frame *f, uint8_t *out)
{
	return dnstap__dnstap__pack(&f->d, out);
}
