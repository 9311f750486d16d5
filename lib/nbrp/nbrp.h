/*
 * NBRP messages (lib/nbrp/nbrp.proto): framing, decoding with the checks a
 * receiver owes the network, and encoding.  The session state machine and
 * the routing decision are nbrpd's; this file only says whether bytes are
 * a well-formed message and what NOTIFICATION answers one that is not.
 *
 * Error handling follows BGP (RFC 4271 6, RFC 7606): a message that cannot
 * be decoded, a bad OPEN, or a bad frame length is a NOTIFICATION and the
 * end of the session; a malformed route inside an otherwise decodable
 * UPDATE only withdraws that route's names (treat-as-withdraw).
 */
#ifndef CR_NBRP_H
#define CR_NBRP_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "addr.h"
#include "frame.h"
#include "name.h"
#include "nbrp.pb-c.h"

#define NBRP_VERSION            1
#define NBRP_DEFAULT_PORT       1790
#define NBRP_HEADER_LEN         FRAME_HEADER_LEN
#define NBRP_MAX_MESSAGE        (1u << 20)      /* default bound on one message */
#define NBRP_ROUTER_NAME_MAX    255
#define NBRP_MAX_PATH           64              /* router names in one path */
#define NBRP_AGGREGATE_NAME_MAX 254             /* an aggregate's wire name, bytes */
#define NBRP_MIN_HOLD_TIME      3

/* NOTIFICATION codes and subcodes, BGP's where they mean the same. */
enum nbrp_error_code {
	NBRP_ERR_MESSAGE = 1,           /* 1: length out of range, 2: undecodable, 3: empty */
	NBRP_ERR_OPEN = 2,              /* see subcodes below */
	NBRP_ERR_UPDATE = 3,            /* 1: undecodable names list */
	NBRP_ERR_HOLD_TIMER = 4,
	NBRP_ERR_FSM = 5,               /* 1: message unexpected in this state */
	NBRP_ERR_CEASE = 6,             /* see subcodes below */
};

enum nbrp_open_subcode {
	NBRP_OPEN_BAD_VERSION = 1,
	NBRP_OPEN_BAD_ROUTER_NAME = 2,  /* empty, too long, not printable, or not the configured one */
	NBRP_OPEN_BAD_HOLD_TIME = 3,
	NBRP_OPEN_BAD_KEY = 4,
	NBRP_OPEN_BAD_ROLE = 5,         /* server_mode not what this side configured */
};

enum nbrp_cease_subcode {
	NBRP_CEASE_MAX_NAMES = 1,
	NBRP_CEASE_SHUTDOWN = 2,
	NBRP_CEASE_DECONFIGURED = 3,
	NBRP_CEASE_RESET = 4,
	NBRP_CEASE_COLLISION = 7,
};

struct nbrp_error {
	uint8_t code, subcode;
	char text[200];
};

/* Reassembles frames (4-byte big-endian length, then the message) from a
 * byte stream cut anywhere. */
struct nbrp_reader {
	struct frame_reader frames;     /* bounded at max_message */
};

/* max_message 0: NBRP_MAX_MESSAGE. */
void nbrp_reader_init(struct nbrp_reader *r, size_t max_message);
void nbrp_reader_free(struct nbrp_reader *r);
/* Appends bytes as received.  Returns 0, or -1 when out of memory. */
int nbrp_reader_feed(struct nbrp_reader *r, const uint8_t *data, size_t len);
/* The same, read straight into the reader's buffer (frame_reader_space). */
static inline uint8_t *nbrp_reader_space(struct nbrp_reader *r, size_t len)
{
	return frame_reader_space(&r->frames, len);
}

static inline void nbrp_reader_commit(struct nbrp_reader *r, size_t len)
{
	frame_reader_commit(&r->frames, len);
}
/*
 * The next message: 1 with *msg set (free it with nbrp_message_free), 0
 * when more bytes are needed, -1 with e set (the NOTIFICATION to send: a
 * length of 0 or over max_message, an undecodable or empty message).  The
 * stream cannot be resumed after -1.  The message may point into the
 * reader's buffer: free it before the reader is fed again (feed, space).
 */
int nbrp_reader_next(struct nbrp_reader *r, Nbrp__Message **msg, struct nbrp_error *e);
void nbrp_message_free(Nbrp__Message *msg);
/*
 * One frame's message (without its length header), as nbrp_reader_next
 * decodes it: 1 with *msg set, or -1 with e set.  fast: common UPDATEs
 * skip protobuf-c (the result is the same; false is for tests comparing).
 */
int nbrp_decode(const uint8_t *frame, size_t len, bool fast, Nbrp__Message **msg, struct nbrp_error *e);

/* One frame for msg in a malloc'd buffer of *len bytes; NULL if out of memory
 * (or msg has no body). */
uint8_t *nbrp_encode(const Nbrp__Message *msg, size_t *len);

/*
 * OPEN checks: version, router name (1..255 printable ASCII bytes, no
 * space), hold time (0 or at least NBRP_MIN_HOLD_TIME), key (empty or 32
 * bytes).  Returns 0, or -1 with e set.
 */
int nbrp_check_open(const Nbrp__Open *o, struct nbrp_error *e);
bool nbrp_router_name_valid(const char *name);

/*
 * One advertised route's attributes: next hop 4 or 16 bytes, port 1..65535
 * (0 only in server mode), 1..NBRP_MAX_PATH valid router names in the path
 * (0 allowed in server mode), aggregate empty or a valid name.  Returns 0,
 * or -1 with *why set: the caller withdraws the route's names instead.
 */
int nbrp_check_route(const Nbrp__Route *r, bool server_mode, const char **why);

/*
 * An aggregate route's aggregate_source, "ADDRESS PORT" (one space, port
 * 1..65535): 0 with *out set, or -1.  The format writes it into buf (at
 * least NBRP_SOURCE_TEXT_MAX bytes).
 */
#define NBRP_SOURCE_TEXT_MAX    (INET6_ADDRSTRLEN + 7)
int nbrp_aggregate_source_parse(const char *text, struct ip_endpoint *out);
const char *nbrp_aggregate_source_format(const struct ip_endpoint *e, char *buf, size_t len);

/* A name field: 0 with out set, or -1 (not a canonical wire name). */
int nbrp_name_of(const ProtobufCBinaryData *b, struct name *out);
/* The same check without the copy: the field's bytes are the name. */
static inline bool nbrp_name_valid(const ProtobufCBinaryData *b)
{
	return name_wire_canonical(b->data, b->len);
}

/* A NOTIFICATION message to send: n->text points into e (or is
 * nbrp_error_text when e->text is empty), so e must outlive m. */
void nbrp_notification(Nbrp__Message *m, Nbrp__Notification *n, const struct nbrp_error *e);
const char *nbrp_error_text(uint8_t code, uint8_t subcode);

#endif
