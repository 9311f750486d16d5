/*
 * dnstap (dnstap.proto, the schema every dnstap reader speaks): one DNS
 * message and what surrounds it, as a Dnstap protobuf, written by hand
 * into the caller's buffer: no allocation, and a few hundred instructions
 * where protobuf-c's reflective packer takes thousands on a hot path.
 * The schema is compiled by protoc-c too: test_dnstap checks the bytes
 * against protobuf-c's packer and reads them back with its unpacker.  The
 * Frame Streams transport around them is the daemon's.
 */
#ifndef DNSTAP_H
#define DNSTAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <sys/socket.h>

/* The content type Frame Streams announces for these messages. */
#define DNSTAP_CONTENT_TYPE "protobuf:dnstap.Dnstap"

/* The message types a forwarder writes (dnstap.proto's Message.Type). */
enum dnstap_type {
	DNSTAP_CLIENT_QUERY = 5,
	DNSTAP_CLIENT_RESPONSE = 6,
	DNSTAP_FORWARDER_QUERY = 7,
	DNSTAP_FORWARDER_RESPONSE = 8,
};

/* The transport a message came or went by (dnstap.proto's SocketProtocol). */
enum dnstap_protocol {
	DNSTAP_UDP = 1,
	DNSTAP_TCP = 2,
	DNSTAP_DOT = 3,
	DNSTAP_DOH = 4,
};

struct dnstap_event {
	enum dnstap_type type;
	enum dnstap_protocol protocol;
	/* the initiator's and the responder's sockets (IPv4 or IPv6; NULL, or
	 * another family: not sent); the family is the first one's */
	const struct sockaddr *query_addr, *response_addr;
	const uint8_t *query;           /* NULL: not sent */
	size_t query_len;
	const uint8_t *response;
	size_t response_len;
	const struct timespec *query_time, *response_time;     /* wall clock; NULL: not sent */
	const char *identity, *version; /* NULL: not sent */
	/* set by dnstap_size for dnstap_write */
	size_t message_len, identity_len, version_len;
};

/* The length of ev's Dnstap message (ev keeps what dnstap_write needs of it). */
size_t dnstap_size(struct dnstap_event *ev);
/* Writes it into out, which holds dnstap_size(ev) bytes; returns that size. */
size_t dnstap_write(const struct dnstap_event *ev, uint8_t *out);

#endif
