/*
 * tapdump FILE: every dnstap message in a Frame Streams file (as
 * fstrm_capture writes it), one JSON object a line, read with protobuf-c's
 * unpacker and named by the schema (lib/dns/dnstap.proto): a reader that
 * knows every SocketProtocol, where dnstap-ldns 0.2 stops at DoT.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <fstrm.h>

#include "dnstap.pb-c.h"

static const char *enum_name(const ProtobufCEnumDescriptor *d, int v)
{
	const ProtobufCEnumValue *e = protobuf_c_enum_descriptor_get_value(d, v);
	return e ? e->name : "?";
}

static void address(const char *key, protobuf_c_boolean has, const ProtobufCBinaryData *a,
		    protobuf_c_boolean has_port, uint32_t port)
{
	char text[INET6_ADDRSTRLEN];
	if (has && (a->len == 4 || a->len == 16) &&
	    inet_ntop(a->len == 4 ? AF_INET : AF_INET6, a->data, text, sizeof(text)))
		printf(", \"%s_address\": \"%s\"", key, text);
	if (has_port)
		printf(", \"%s_port\": %u", key, port);
}

static void hex(const char *key, protobuf_c_boolean has, const ProtobufCBinaryData *b)
{
	if (!has)
		return;
	printf(", \"%s\": \"", key);
	for (size_t i = 0; i < b->len; i++)
		printf("%02x", b->data[i]);
	printf("\"");
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: tapdump FILE\n");
		return 2;
	}
	struct fstrm_file_options *fopt = fstrm_file_options_init();
	fstrm_file_options_set_file_path(fopt, argv[1]);
	struct fstrm_reader *r = fstrm_file_reader_init(fopt, NULL);
	fstrm_file_options_destroy(&fopt);
	if (!r || fstrm_reader_open(r) != fstrm_res_success) {
		fprintf(stderr, "tapdump: %s: cannot open it as Frame Streams\n", argv[1]);
		return 1;
	}
	const uint8_t *data;
	size_t len;
	fstrm_res res;
	int status = 0;
	while ((res = fstrm_reader_read(r, &data, &len)) == fstrm_res_success) {
		Dnstap__Dnstap *d = dnstap__dnstap__unpack(NULL, len, data);
		if (!d || !d->message) {
			fprintf(stderr, "tapdump: a frame that is not a dnstap message\n");
			status = 1;
			dnstap__dnstap__free_unpacked(d, NULL);
			continue;
		}
		const Dnstap__Message *m = d->message;
		printf("{\"type\": \"%s\"", enum_name(&dnstap__message__type__descriptor, m->type));
		if (m->has_socket_family)
			printf(", \"socket_family\": \"%s\"",
			       enum_name(&dnstap__socket_family__descriptor, m->socket_family));
		if (m->has_socket_protocol)
			printf(", \"socket_protocol\": \"%s\"",
			       enum_name(&dnstap__socket_protocol__descriptor, m->socket_protocol));
		address("query", m->has_query_address, &m->query_address, m->has_query_port, m->query_port);
		address("response", m->has_response_address, &m->response_address, m->has_response_port,
			m->response_port);
		hex("query_message", m->has_query_message, &m->query_message);
		hex("response_message", m->has_response_message, &m->response_message);
		printf("}\n");
		dnstap__dnstap__free_unpacked(d, NULL);
	}
	fstrm_reader_destroy(&r);
	if (res != fstrm_res_stop) {
		fprintf(stderr, "tapdump: %s: a frame that does not read\n", argv[1]);
		status = 1;
	}
	return status;
}
