/*
 * dnstap (dnstap.proto, the schema every dnstap reader speaks): one DNS
 * message and what surrounds it, packed as a Dnstap protobuf into the
 * caller's buffer by protobuf-c, with no allocation.  The Frame Streams
 * transport around it is the daemon's.
 */
#ifndef DNSTAP_H
#define DNSTAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <sys/socket.h>

#include "dnstap.pb-c.h"

/* The content type Frame Streams announces for these messages. */
#define DNSTAP_CONTENT_TYPE "protobuf:dnstap.Dnstap"

/* The message types a forwarder writes (dnstap.proto's Message.Type). */
enum dnstap_type {
	DNSTAP_CLIENT_QUERY = DNSTAP__MESSAGE__TYPE__CLIENT_QUERY,
	DNSTAP_CLIENT_RESPONSE = DNSTAP__MESSAGE__TYPE__CLIENT_RESPONSE,
	DNSTAP_FORWARDER_QUERY = DNSTAP__MESSAGE__TYPE__FORWARDER_QUERY,
	DNSTAP_FORWARDER_RESPONSE = DNSTAP__MESSAGE__TYPE__FORWARDER_RESPONSE,
};

struct dnstap_event {
	enum dnstap_type type;
	bool tcp;                       /* else UDP */
	/* the initiator's and the responder's sockets (IPv4 or IPv6; NULL, or
	 * another family: not sent); the family is the first one's */
	const struct sockaddr *query_addr, *response_addr;
	const uint8_t *query;           /* NULL: not sent */
	size_t query_len;
	const uint8_t *response;
	size_t response_len;
	const struct timespec *query_time, *response_time;     /* wall clock; NULL: not sent */
	const char *identity, *version; /* NULL: not sent */
};

/* The packing of one event: its protobuf-c messages point into the event's bytes. */
struct dnstap_frame {
	Dnstap__Dnstap d;
	Dnstap__Message m;
};

/* Fills f from ev (which must outlive f); returns the packed size. */
size_t dnstap_frame_init(struct dnstap_frame *f, const struct dnstap_event *ev);
/* Packs f into out, which holds the size dnstap_frame_init returned. */
size_t dnstap_frame_pack(const struct dnstap_frame *f, uint8_t *out);

#endif
