/*
 * lib/dns/dnstap.c: messages written by hand, byte for byte what
 * protobuf-c's generated packer makes of the same fields, and read back by
 * its unpacker field by field; a field not given is absent, not zero.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <cmocka.h>

#include "dnstap.h"
#include "dnstap.pb-c.h"

static const uint8_t query[] = { 0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0,
				  3, 'w', 'w', 'w', 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 0, 0, 1, 0, 1 };
static const uint8_t response[] = { 0x12, 0x34, 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0,
				     3, 'w', 'w', 'w', 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 0, 0, 1, 0, 1 };

/* The same event through protobuf-c's structures and packer. */
static size_t reference(const struct dnstap_event *ev, uint8_t *out)
{
	Dnstap__Dnstap d = DNSTAP__DNSTAP__INIT;
	Dnstap__Message m = DNSTAP__MESSAGE__INIT;
	const struct sockaddr *first = ev->query_addr ? ev->query_addr : ev->response_addr;
	int family = first ? first->sa_family : AF_UNSPEC;
	const struct sockaddr *sa[2] = { ev->query_addr, ev->response_addr };
	ProtobufCBinaryData *addr[2] = { &m.query_address, &m.response_address };
	protobuf_c_boolean *has_addr[2] = { &m.has_query_address, &m.has_response_address };
	uint32_t *port[2] = { &m.query_port, &m.response_port };
	protobuf_c_boolean *has_port[2] = { &m.has_query_port, &m.has_response_port };

	m.type = (Dnstap__Message__Type)ev->type;
	m.has_socket_protocol = 1;
	m.socket_protocol = (Dnstap__SocketProtocol)ev->protocol;
	if (family == AF_INET || family == AF_INET6) {
		m.has_socket_family = 1;
		m.socket_family = family == AF_INET ? DNSTAP__SOCKET_FAMILY__INET : DNSTAP__SOCKET_FAMILY__INET6;
		for (int i = 0; i < 2; i++) {
			if (!sa[i] || sa[i]->sa_family != family)
				continue;
			*has_addr[i] = *has_port[i] = 1;
			if (family == AF_INET) {
				const struct sockaddr_in *sin = (const struct sockaddr_in *)sa[i];
				addr[i]->data = (uint8_t *)&sin->sin_addr;
				addr[i]->len = 4;
				*port[i] = ntohs(sin->sin_port);
			} else {
				const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa[i];
				addr[i]->data = (uint8_t *)&sin6->sin6_addr;
				addr[i]->len = 16;
				*port[i] = ntohs(sin6->sin6_port);
			}
		}
	}
	if (ev->query) {
		m.has_query_message = 1;
		m.query_message.data = (uint8_t *)ev->query;
		m.query_message.len = ev->query_len;
	}
	if (ev->response) {
		m.has_response_message = 1;
		m.response_message.data = (uint8_t *)ev->response;
		m.response_message.len = ev->response_len;
	}
	if (ev->query_time) {
		m.has_query_time_sec = m.has_query_time_nsec = 1;
		m.query_time_sec = (uint64_t)ev->query_time->tv_sec;
		m.query_time_nsec = (uint32_t)ev->query_time->tv_nsec;
	}
	if (ev->response_time) {
		m.has_response_time_sec = m.has_response_time_nsec = 1;
		m.response_time_sec = (uint64_t)ev->response_time->tv_sec;
		m.response_time_nsec = (uint32_t)ev->response_time->tv_nsec;
	}
	d.type = DNSTAP__DNSTAP__TYPE__MESSAGE;
	d.message = &m;
	if (ev->identity) {
		d.has_identity = 1;
		d.identity.data = (uint8_t *)ev->identity;
		d.identity.len = strlen(ev->identity);
	}
	if (ev->version) {
		d.has_version = 1;
		d.version.data = (uint8_t *)ev->version;
		d.version.len = strlen(ev->version);
	}
	return dnstap__dnstap__pack(&d, out);
}

/* Written, compared with protobuf-c's bytes, and read back. */
static Dnstap__Dnstap *round_trip(struct dnstap_event *ev)
{
	uint8_t buf[1024], ref[1024];
	size_t n = dnstap_size(ev);
	assert_true(n > 0 && n <= sizeof(buf));
	memset(buf, 0xAA, sizeof(buf));
	assert_int_equal(dnstap_write(ev, buf), n);
	assert_int_equal(buf[n], 0xAA);                 /* not a byte more */
	assert_int_equal(reference(ev, ref), n);
	assert_memory_equal(buf, ref, n);
	Dnstap__Dnstap *d = dnstap__dnstap__unpack(NULL, n, buf);
	assert_non_null(d);
	assert_int_equal(d->type, DNSTAP__DNSTAP__TYPE__MESSAGE);
	assert_non_null(d->message);
	return d;
}

static void test_client_query_v4(void **state)
{
	(void)state;
	struct sockaddr_in client = { .sin_family = AF_INET, .sin_port = htons(40000) };
	struct sockaddr_in self = { .sin_family = AF_INET, .sin_port = htons(53) };
	inet_pton(AF_INET, "192.0.2.7", &client.sin_addr);
	inet_pton(AF_INET, "198.51.100.1", &self.sin_addr);
	struct timespec t = { .tv_sec = 1700000000, .tv_nsec = 123456789 };
	struct dnstap_event ev = {
		.type = DNSTAP_CLIENT_QUERY, .protocol = DNSTAP_UDP,
		.query_addr = (struct sockaddr *)&client, .response_addr = (struct sockaddr *)&self,
		.query = query, .query_len = sizeof(query), .query_time = &t,
		.identity = "cr1.example", .version = "inrpd 0.1.0",
	};
	Dnstap__Dnstap *d = round_trip(&ev);
	Dnstap__Message *m = d->message;
	assert_true(d->has_identity && d->has_version);
	assert_int_equal(d->identity.len, strlen("cr1.example"));
	assert_memory_equal(d->identity.data, "cr1.example", d->identity.len);
	assert_memory_equal(d->version.data, "inrpd 0.1.0", d->version.len);
	assert_int_equal(m->type, DNSTAP__MESSAGE__TYPE__CLIENT_QUERY);
	assert_true(m->has_socket_family && m->socket_family == DNSTAP__SOCKET_FAMILY__INET);
	assert_true(m->has_socket_protocol && m->socket_protocol == DNSTAP__SOCKET_PROTOCOL__UDP);
	assert_true(m->has_query_address && m->query_address.len == 4);
	assert_memory_equal(m->query_address.data, &client.sin_addr, 4);
	assert_true(m->has_query_port && m->query_port == 40000);
	assert_true(m->has_response_address && m->response_address.len == 4);
	assert_memory_equal(m->response_address.data, &self.sin_addr, 4);
	assert_true(m->has_response_port && m->response_port == 53);
	assert_true(m->has_query_time_sec && m->query_time_sec == 1700000000);
	assert_true(m->has_query_time_nsec && m->query_time_nsec == 123456789);
	assert_true(m->has_query_message && m->query_message.len == sizeof(query));
	assert_memory_equal(m->query_message.data, query, sizeof(query));
	assert_false(m->has_response_message);
	assert_false(m->has_response_time_sec);
	dnstap__dnstap__free_unpacked(d, NULL);
}

static void test_forwarder_response_v6_tcp(void **state)
{
	(void)state;
	struct sockaddr_in6 hop = { .sin6_family = AF_INET6, .sin6_port = htons(5353) };
	inet_pton(AF_INET6, "2001:db8::53", &hop.sin6_addr);
	struct timespec qt = { .tv_sec = 1700000000, .tv_nsec = 1 }, rt = { .tv_sec = 1700000001, .tv_nsec = 2 };
	struct dnstap_event ev = {
		.type = DNSTAP_FORWARDER_RESPONSE, .protocol = DNSTAP_TCP,
		.response_addr = (struct sockaddr *)&hop,
		.response = response, .response_len = sizeof(response),
		.query_time = &qt, .response_time = &rt,
	};
	Dnstap__Dnstap *d = round_trip(&ev);
	Dnstap__Message *m = d->message;
	assert_false(d->has_identity);
	assert_false(d->has_version);
	assert_int_equal(m->type, DNSTAP__MESSAGE__TYPE__FORWARDER_RESPONSE);
	assert_true(m->has_socket_family && m->socket_family == DNSTAP__SOCKET_FAMILY__INET6);
	assert_true(m->socket_protocol == DNSTAP__SOCKET_PROTOCOL__TCP);
	assert_false(m->has_query_address);
	assert_false(m->has_query_port);
	assert_true(m->has_response_address && m->response_address.len == 16);
	assert_memory_equal(m->response_address.data, &hop.sin6_addr, 16);
	assert_int_equal(m->response_port, 5353);
	assert_true(m->has_response_message && m->response_message.len == sizeof(response));
	assert_memory_equal(m->response_message.data, response, sizeof(response));
	assert_false(m->has_query_message);
	assert_int_equal(m->query_time_sec, 1700000000);
	assert_int_equal(m->response_time_sec, 1700000001);
	assert_int_equal(m->response_time_nsec, 2);
	dnstap__dnstap__free_unpacked(d, NULL);
}

/* An address of another family than the first one's, or none at all, is left out. */
static void test_addresses_left_out(void **state)
{
	(void)state;
	struct sockaddr_in v4 = { .sin_family = AF_INET, .sin_port = htons(1) };
	struct sockaddr_in6 v6 = { .sin6_family = AF_INET6, .sin6_port = htons(2) };
	struct dnstap_event ev = {
		.type = DNSTAP_CLIENT_RESPONSE, .protocol = DNSTAP_UDP,
		.query_addr = (struct sockaddr *)&v4, .response_addr = (struct sockaddr *)&v6,
		.response = response, .response_len = sizeof(response),
	};
	Dnstap__Dnstap *d = round_trip(&ev);
	assert_true(d->message->has_query_address);
	assert_false(d->message->has_response_address);
	assert_false(d->message->has_response_port);
	dnstap__dnstap__free_unpacked(d, NULL);

	struct sockaddr unspec = { .sa_family = AF_UNSPEC };
	ev.query_addr = &unspec;
	ev.response_addr = NULL;
	d = round_trip(&ev);
	assert_false(d->message->has_socket_family);
	assert_false(d->message->has_query_address);
	assert_true(d->message->has_socket_protocol);
	dnstap__dnstap__free_unpacked(d, NULL);
}

/* Each transport as the schema names it: DoT and DoH too, not only UDP and TCP. */
static void test_protocols(void **state)
{
	(void)state;
	static const struct {
		enum dnstap_protocol ours;
		Dnstap__SocketProtocol schema;
	} map[] = {
		{ DNSTAP_UDP, DNSTAP__SOCKET_PROTOCOL__UDP }, { DNSTAP_TCP, DNSTAP__SOCKET_PROTOCOL__TCP },
		{ DNSTAP_DOT, DNSTAP__SOCKET_PROTOCOL__DOT }, { DNSTAP_DOH, DNSTAP__SOCKET_PROTOCOL__DOH },
	};
	struct sockaddr_in client = { .sin_family = AF_INET, .sin_port = htons(853) };
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		struct dnstap_event ev = {
			.type = DNSTAP_CLIENT_QUERY, .protocol = map[i].ours,
			.query_addr = (struct sockaddr *)&client, .query = query, .query_len = sizeof(query),
		};
		Dnstap__Dnstap *d = round_trip(&ev);
		assert_true(d->message->has_socket_protocol);
		assert_int_equal(d->message->socket_protocol, map[i].schema);
		dnstap__dnstap__free_unpacked(d, NULL);
	}
}

/* Varints of every length the fields take: a 64 KiB message, far times. */
static void test_long_fields(void **state)
{
	(void)state;
	static uint8_t big[65535];
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)i;
	struct sockaddr_in6 c = { .sin6_family = AF_INET6, .sin6_port = htons(65535) };
	struct timespec t = { .tv_sec = (time_t)1 << 40, .tv_nsec = 999999999 };
	struct dnstap_event ev = {
		.type = DNSTAP_CLIENT_RESPONSE, .protocol = DNSTAP_DOH, .query_addr = (struct sockaddr *)&c,
		.response = big, .response_len = sizeof(big), .query_time = &t, .response_time = &t,
		.identity = "i", .version = "",
	};
	static uint8_t buf[70000], ref[70000];
	size_t n = dnstap_size(&ev);
	assert_true(n > sizeof(big) && n < sizeof(buf));
	assert_int_equal(dnstap_write(&ev, buf), n);
	assert_int_equal(reference(&ev, ref), n);
	assert_memory_equal(buf, ref, n);
	Dnstap__Dnstap *d = dnstap__dnstap__unpack(NULL, n, buf);
	assert_non_null(d);
	assert_int_equal(d->message->response_message.len, sizeof(big));
	assert_memory_equal(d->message->response_message.data, big, sizeof(big));
	assert_int_equal(d->message->query_port, 65535);
	assert_int_equal(d->message->response_time_sec, (uint64_t)1 << 40);
	assert_true(d->has_version && d->version.len == 0);
	dnstap__dnstap__free_unpacked(d, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_client_query_v4),
		cmocka_unit_test(test_forwarder_response_v6_tcp),
		cmocka_unit_test(test_addresses_left_out),
		cmocka_unit_test(test_protocols),
		cmocka_unit_test(test_long_fields),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
