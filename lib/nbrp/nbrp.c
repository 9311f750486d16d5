#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "nbrp.h"
#include "pbframe.h"
#include "wire.h"

static int fail(struct nbrp_error *e, uint8_t code, uint8_t subcode, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(struct nbrp_error *e, uint8_t code, uint8_t subcode, const char *fmt, ...)
{
	va_list ap;
	e->code = code;
	e->subcode = subcode;
	va_start(ap, fmt);
	vsnprintf(e->text, sizeof(e->text), fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- frames --------------------------------------------------------- */

void nbrp_reader_init(struct nbrp_reader *r, size_t max_message)
{
	frame_reader_init(&r->frames, max_message ? max_message : NBRP_MAX_MESSAGE);
}

void nbrp_reader_free(struct nbrp_reader *r)
{
	frame_reader_free(&r->frames);
}

int nbrp_reader_feed(struct nbrp_reader *r, const uint8_t *data, size_t len)
{
	return frame_reader_feed(&r->frames, data, len);
}

/*
 * protobuf-c keeps an unknown field numbered 0 or above 2^29 - 1 (both
 * invalid; 0 is accepted when its key is not minimally encoded) and packs
 * it again as bytes it cannot read back: such a message is refused.
 */
#define FIELD_NUMBER_MAX ((1u << 29) - 1)

static bool field_numbers_valid(const ProtobufCMessage *m)
{
	for (unsigned i = 0; i < m->n_unknown_fields; i++)
		if (m->unknown_fields[i].tag == 0 || m->unknown_fields[i].tag > FIELD_NUMBER_MAX)
			return false;
	const ProtobufCMessageDescriptor *d = m->descriptor;
	const char *base = (const char *)m;
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		if (f->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)(base + f->quantifier_offset);
			ProtobufCMessage *const *sub = *(ProtobufCMessage *const *const *)(base + f->offset);
			for (size_t k = 0; k < n; k++)
				if (!field_numbers_valid(sub[k]))
					return false;
			continue;
		}
		/* a oneof's members share one pointer: only the set one is there */
		if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
		    *(const uint32_t *)(base + f->quantifier_offset) != f->id)
			continue;
		const ProtobufCMessage *sub = *(ProtobufCMessage *const *)(base + f->offset);
		if (sub && !field_numbers_valid(sub))
			return false;
	}
	return true;
}

/*
 * A decoded message lives in an arena: protobuf-c allocates every field of
 * an UPDATE separately (thousands of names), and malloc/free of those was
 * a quarter of nbrpd's time (callgrind).  The message itself is the first
 * allocation, preceded by a header that finds the arena again.
 */
struct arena_block {
	struct arena_block *next;
	size_t used, cap;
	max_align_t data[];
};

struct msg_arena {
	struct arena_block *blocks;
	size_t first_block;
	void *first;
};

struct arena_header {
	struct msg_arena *arena;
	max_align_t pad;
};

static void *arena_alloc(void *data, size_t size)
{
	struct msg_arena *a = data;
	size_t align = sizeof(max_align_t);
	bool first = a->first == NULL;
	size_t need = (size + (first ? sizeof(struct arena_header) : 0) + align - 1) / align * align;
	struct arena_block *b = a->blocks;
	if (!b || b->cap - b->used < need) {
		size_t cap = need > a->first_block ? need : a->first_block;
		b = malloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
		b->next = a->blocks;
		b->used = 0;
		b->cap = cap;
		a->blocks = b;
		a->first_block = cap * 2;
	}
	uint8_t *p = (uint8_t *)b->data + b->used;
	b->used += need;
	if (first) {
		((struct arena_header *)p)->arena = a;
		p += sizeof(struct arena_header);
		a->first = p;
	}
	return p;
}

static void arena_free(void *data, void *ptr)
{
	(void)data;
	(void)ptr;                      /* everything goes with the arena */
}

static void arena_destroy(struct msg_arena *a)
{
	struct arena_block *b = a->blocks;
	while (b) {
		struct arena_block *n = b->next;
		free(b);
		b = n;
	}
	free(a);
}

/*
 * UPDATEs are nearly all of a session's bytes, and protobuf-c gives each
 * of their thousands of names an allocation and a copy of its own (with
 * its two passes over the message, over a quarter of nbrpd's instructions
 * for a table; callgrind).  An UPDATE in the shape senders produce is
 * decoded here instead, every name pointing into the frame: into the
 * reader's buffer for nbrp_reader_next, into one copy of the frame in the
 * message's arena for nbrp_decode.  The shape: the Message is the
 * update field alone; Update and Route hold only the fields below, with
 * one-byte tags, the singular ones at most once, and varints protobuf-c
 * reads as the same number (32 bits; origin_seq's 64).  Anything else (attestations,
 * aggregates, unknown fields, repeats, truncation) goes to protobuf-c, so
 * what is accepted, and what it reads as, is protobuf-c's either way.
 */
#define TAG(field, wire) ((uint8_t)((field) << 3 | (wire)))
#define WIRE_VARINT     0
#define WIRE_LEN        2

struct fast_update {
	/* the first pass counts */
	size_t withdrawn, routes, names, paths, path_bytes;
	/* the second fills these, in order */
	Nbrp__Update *u;
	Nbrp__Route *route;
	ProtobufCBinaryData *name;
	char **path;
	char *chars;
};

/*
 * A varint of at most `bytes` bytes whose last may be at most `last_max`:
 * what protobuf-c reads as the same number of the field's width.
 */
static inline bool pb_varint(struct wire_reader *r, unsigned bytes, uint8_t last_max, uint64_t *v)
{
	uint64_t x = 0;
	for (unsigned i = 0; i < bytes; i++) {
		uint8_t c = wire_u8(r);
		if (r->bad || (i == bytes - 1 && c > last_max))
			return false;
		x |= (uint64_t)(c & 0x7f) << (7 * i);
		if (!(c & 0x80)) {
			*v = x;
			return true;
		}
	}
	return false;
}

/* A varint of at most 5 bytes with no bit above 32 (protobuf-c reads those as this number). */
static inline bool pb_u32(struct wire_reader *r, uint32_t *v)
{
	uint64_t x;
	if (!pb_varint(r, 5, 0x0f, &x))
		return false;
	*v = (uint32_t)x;
	return true;
}

/* A varint protobuf-c reads as this 64-bit number (at most 10 bytes, nothing above bit 63). */
static bool pb_u64(struct wire_reader *r, uint64_t *v)
{
	return pb_varint(r, 10, 0x01, v);
}

/* A length-delimited field's bytes. */
static inline bool pb_len(struct wire_reader *r, const uint8_t **data, uint32_t *len)
{
	return pb_u32(r, len) && (*data = wire_take(r, *len)) != NULL;
}

static ProtobufCBinaryData pb_bytes(const uint8_t *data, uint32_t len)
{
	/* protobuf-c leaves an empty field's data NULL */
	ProtobufCBinaryData b = { .len = len, .data = len ? (uint8_t *)data : NULL };
	return b;
}

/* One Route: counts it (f->u NULL) or fills the next one. */
static bool fast_route(struct fast_update *f, struct wire_reader p)
{
	Nbrp__Route *r = NULL;
	if (f->u) {
		r = f->route++;
		nbrp__route__init(r);
		r->names = f->name;
		r->path = f->path;
		f->u->routes[f->u->n_routes++] = r;
	} else {
		f->routes++;
	}
	unsigned seen = 0;
	while (wire_left(&p) > 0) {
		/* a name with a one-byte length, nearly all of an UPDATE: tag and
		 * length looked at once, the name taken in one more check */
		const uint8_t *h = wire_peek(&p, 2);
		if (h && h[0] == TAG(1, WIRE_LEN) && h[1] < 0x80) {
			const uint8_t *name = wire_take(&p, 2u + h[1]);
			if (!name)
				return false;
			if (r) {
				*f->name++ = pb_bytes(name + 2, name[1]);
				r->n_names++;
			} else {
				f->names++;
			}
			continue;
		}
		uint8_t tag = wire_u8(&p);
		unsigned field = tag >> 3;
		const uint8_t *data;
		uint32_t v;
		if ((field < 1 || field > 5) && field != 12)
			return false;           /* a high bit in the tag makes field > 15 */
		if (field != 1 && field != 4) {
			if (seen & (1u << field))
				return false;   /* protobuf-c's last-one-wins is not worth copying */
			seen |= 1u << field;
		}
		if (field == 12) {
			uint64_t s;
			if (tag != TAG(12, WIRE_VARINT) || !pb_u64(&p, &s))
				return false;
			if (r)
				r->origin_seq = s;
			continue;
		}
		if (field == 3 || field == 5) {
			if (tag != TAG(field, WIRE_VARINT) || !pb_u32(&p, &v))
				return false;
			if (r && field == 3)
				r->next_hop_port = v;
			else if (r)
				r->load_ms = v;
			continue;
		}
		if (tag != TAG(field, WIRE_LEN) || !pb_len(&p, &data, &v))
			return false;
		if (field == 1) {
			if (r) {
				*f->name++ = pb_bytes(data, v);
				r->n_names++;
			} else {
				f->names++;
			}
		} else if (field == 2) {
			if (r)
				r->next_hop = pb_bytes(data, v);
		} else if (r) {
			memcpy(f->chars, data, v);
			f->chars[v] = 0;
			*f->path++ = f->chars;
			f->chars += v + 1;
			r->n_path++;
		} else {
			f->paths++;
			f->path_bytes += v + 1;
		}
	}
	if (r && !r->n_names)
		r->names = NULL;
	if (r && !r->n_path)
		r->path = NULL;
	return true;
}

/* The Update inside a Message that is nothing else; false if the frame is not that. */
static bool fast_update_body(const uint8_t *frame, size_t len, const uint8_t **body, uint32_t *body_len)
{
	struct wire_reader r = wire_reader(frame, len);
	return wire_u8(&r) == TAG(NBRP__MESSAGE__BODY_UPDATE, WIRE_LEN) && pb_len(&r, body, body_len) &&
	       wire_left(&r) == 0;
}

static bool fast_walk(struct fast_update *f, struct wire_reader p)
{
	while (wire_left(&p) > 0) {
		uint8_t tag = wire_u8(&p);
		const uint8_t *data;
		uint32_t v;
		if ((tag != TAG(1, WIRE_LEN) && tag != TAG(2, WIRE_LEN)) || !pb_len(&p, &data, &v))
			return false;
		if (tag == TAG(2, WIRE_LEN)) {
			if (!fast_route(f, wire_reader(data, v)))
				return false;
		} else if (f->u) {
			f->u->withdrawn[f->u->n_withdrawn++] = pb_bytes(data, v);
		} else {
			f->withdrawn++;
		}
	}
	return true;
}

/* 1: decoded into the arena (the message first), 0: not the common shape, -1: out of memory.
 * in_place: names point into frame (which then has to outlive the message), not into a copy. */
static int fast_decode(struct msg_arena *a, const uint8_t *frame, size_t len, bool in_place, Nbrp__Message **out)
{
	const uint8_t *body;
	uint32_t body_len;
	struct fast_update f = { 0 };
	if (!fast_update_body(frame, len, &body, &body_len) || !fast_walk(&f, wire_reader(body, body_len)))
		return 0;
	Nbrp__Message *m = arena_alloc(a, sizeof(*m));
	Nbrp__Update *u = arena_alloc(a, sizeof(*u));
	uint8_t *copy = in_place ? (uint8_t *)body : arena_alloc(a, body_len ? body_len : 1);
	ProtobufCBinaryData *withdrawn = arena_alloc(a, (f.withdrawn + f.names) * sizeof(*withdrawn) + 1);
	Nbrp__Route *routes = arena_alloc(a, f.routes * sizeof(*routes) + 1);
	Nbrp__Route **route_ptrs = arena_alloc(a, f.routes * sizeof(*route_ptrs) + 1);
	char **paths = arena_alloc(a, f.paths * sizeof(*paths) + 1);
	char *chars = arena_alloc(a, f.path_bytes + 1);
	if (!m || !u || !copy || !withdrawn || !routes || !route_ptrs || !paths || !chars)
		return -1;
	nbrp__message__init(m);
	nbrp__update__init(u);
	m->body_case = NBRP__MESSAGE__BODY_UPDATE;
	m->update = u;
	u->withdrawn = f.withdrawn ? withdrawn : NULL;
	u->routes = f.routes ? route_ptrs : NULL;
	if (!in_place)
		memcpy(copy, body, body_len);
	f.u = u;
	f.route = routes;
	f.name = withdrawn + f.withdrawn;       /* the routes' names after the withdrawn ones */
	f.path = paths;
	f.chars = chars;
	fast_walk(&f, wire_reader(copy, body_len));     /* cannot fail: the same bytes passed */
	*out = m;
	return 1;
}

static int decode(const uint8_t *frame, size_t len, bool fast, bool in_place, Nbrp__Message **msg,
		  struct nbrp_error *e)
{
	struct msg_arena *a = calloc(1, sizeof(*a));
	if (!a)
		return fail(e, NBRP_ERR_CEASE, NBRP_CEASE_RESET, "out of memory decoding a message of %zu bytes", len);
	a->first_block = len * 2 + 4096;        /* most messages fit in one block */
	Nbrp__Message *m = NULL;
	int rc = fast ? fast_decode(a, frame, len, in_place, &m) : 0;
	if (rc == 1) {
		*msg = m;
		return 1;
	}
	if (rc < 0) {
		arena_destroy(a);
		return fail(e, NBRP_ERR_CEASE, NBRP_CEASE_RESET, "out of memory decoding a message of %zu bytes", len);
	}
	ProtobufCAllocator alloc = { .alloc = arena_alloc, .free = arena_free, .allocator_data = a };
	m = nbrp__message__unpack(&alloc, len, frame);
	if (!m) {
		arena_destroy(a);
		return fail(e, NBRP_ERR_MESSAGE, 2, "message of %zu bytes is not decodable", len);
	}
	if ((void *)m != a->first) {
		/* protobuf-c allocates the message first; anything else and we cannot find the arena */
		arena_destroy(a);
		return fail(e, NBRP_ERR_CEASE, NBRP_CEASE_RESET, "protobuf-c did not allocate the message first");
	}
	if (!field_numbers_valid(&m->base)) {
		nbrp_message_free(m);
		return fail(e, NBRP_ERR_MESSAGE, 2, "message of %zu bytes has an invalid field number", len);
	}
	if (m->body_case == NBRP__MESSAGE__BODY__NOT_SET) {
		nbrp_message_free(m);
		return fail(e, NBRP_ERR_MESSAGE, 3, "message of %zu bytes has no body", len);
	}
	*msg = m;
	return 1;
}

int nbrp_decode(const uint8_t *frame, size_t len, bool fast, Nbrp__Message **msg, struct nbrp_error *e)
{
	return decode(frame, len, fast, false, msg, e);
}

int nbrp_reader_next(struct nbrp_reader *r, Nbrp__Message **msg, struct nbrp_error *e)
{
	const uint8_t *frame;
	size_t len;
	int rc = frame_reader_next(&r->frames, &frame, &len);
	if (rc == 0)
		return 0;
	if (rc < 0 && len == 0)
		return fail(e, NBRP_ERR_MESSAGE, 1, "message length 0");
	if (rc < 0)
		return fail(e, NBRP_ERR_MESSAGE, 1, "message length %zu is over the limit of %zu",
			    len, r->frames.max);
	/* the frame stays in the reader's buffer until the next feed: no copy of it */
	return decode(frame, len, true, true, msg, e);
}

void nbrp_message_free(Nbrp__Message *msg)
{
	if (!msg)
		return;
	const struct arena_header *h = (const struct arena_header *)msg - 1;
	arena_destroy(h->arena);
}

/*
 * UPDATEs as nbrpd sends them (names, next hop, port, path, load) are
 * packed here, byte for byte what protobuf-c packs (fields in number
 * order, proto3 defaults left out, minimal varints), without its
 * per-field descriptor walk and its second pass for sizes; anything else
 * (aggregates, attestations, unknown fields) is protobuf-c's to pack.
 */
static size_t varint_size(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static uint8_t *put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static size_t len_field_size(size_t len)
{
	return 1 + varint_size(len) + len;
}

static uint8_t *put_len_field(uint8_t *p, uint8_t tag, const void *data, size_t len)
{
	*p++ = tag;
	p = put_varint(p, len);
	if (len)                        /* an empty field's data may be NULL */
		memcpy(p, data, len);
	return p + len;
}

static bool plain_update(const Nbrp__Message *m)
{
	if (m->body_case != NBRP__MESSAGE__BODY_UPDATE || !m->update || m->base.n_unknown_fields ||
	    m->update->base.n_unknown_fields || m->update->n_withdrawn_aggregates ||
	    m->update->n_origin_withdrawals)
		return false;
	for (size_t i = 0; i < m->update->n_routes; i++) {
		const Nbrp__Route *r = m->update->routes[i];
		if (r->base.n_unknown_fields || r->aggregate.len || r->aggregate_version ||
		    (r->aggregate_source && r->aggregate_source[0]) || r->n_attestations ||
		    (r->aggregate_signed_source && r->aggregate_signed_source[0]) ||
		    r->aggregate_digest.len || r->n_set_others)
			return false;
	}
	return true;
}

static size_t route_size(const Nbrp__Route *r)
{
	size_t n = 0;
	for (size_t i = 0; i < r->n_names; i++)
		n += len_field_size(r->names[i].len);
	if (r->next_hop.len)
		n += len_field_size(r->next_hop.len);
	if (r->next_hop_port)
		n += 1 + varint_size(r->next_hop_port);
	for (size_t i = 0; i < r->n_path; i++)
		n += len_field_size(strlen(r->path[i]));
	if (r->load_ms)
		n += 1 + varint_size(r->load_ms);
	if (r->origin_seq)
		n += 1 + varint_size(r->origin_seq);
	return n;
}

#define SIZES_KEPT      64      /* routes whose size is not counted twice */

static uint8_t *encode_update(const Nbrp__Update *u, size_t *len)
{
	size_t body = 0, sizes[SIZES_KEPT];
	for (size_t i = 0; i < u->n_withdrawn; i++)
		body += len_field_size(u->withdrawn[i].len);
	for (size_t i = 0; i < u->n_routes; i++) {
		size_t rs = route_size(u->routes[i]);
		if (i < SIZES_KEPT)
			sizes[i] = rs;
		body += len_field_size(rs);
	}
	size_t size = len_field_size(body);
	if (size > UINT32_MAX)
		return NULL;
	uint8_t *buf = malloc(NBRP_HEADER_LEN + size);
	if (!buf)
		return NULL;
	frame_put_header(buf, (uint32_t)size);
	uint8_t *p = buf + NBRP_HEADER_LEN;
	*p++ = TAG(NBRP__MESSAGE__BODY_UPDATE, WIRE_LEN);
	p = put_varint(p, body);
	for (size_t i = 0; i < u->n_withdrawn; i++)
		p = put_len_field(p, TAG(1, WIRE_LEN), u->withdrawn[i].data, u->withdrawn[i].len);
	for (size_t i = 0; i < u->n_routes; i++) {
		const Nbrp__Route *r = u->routes[i];
		*p++ = TAG(2, WIRE_LEN);
		p = put_varint(p, i < SIZES_KEPT ? sizes[i] : route_size(r));
		for (size_t k = 0; k < r->n_names; k++)
			p = put_len_field(p, TAG(1, WIRE_LEN), r->names[k].data, r->names[k].len);
		if (r->next_hop.len)
			p = put_len_field(p, TAG(2, WIRE_LEN), r->next_hop.data, r->next_hop.len);
		if (r->next_hop_port) {
			*p++ = TAG(3, WIRE_VARINT);
			p = put_varint(p, r->next_hop_port);
		}
		for (size_t k = 0; k < r->n_path; k++)
			p = put_len_field(p, TAG(4, WIRE_LEN), r->path[k], strlen(r->path[k]));
		if (r->load_ms) {
			*p++ = TAG(5, WIRE_VARINT);
			p = put_varint(p, r->load_ms);
		}
		if (r->origin_seq) {
			*p++ = TAG(12, WIRE_VARINT);
			p = put_varint(p, r->origin_seq);
		}
	}
	*len = (size_t)(p - buf);
	return buf;
}

uint8_t *nbrp_encode(const Nbrp__Message *msg, size_t *len)
{
	if (plain_update(msg))
		return encode_update(msg->update, len);
	return pbframe_pack(&msg->base, UINT32_MAX, len);
}

/* ---- checks --------------------------------------------------------- */

/* Why a router name is invalid, or NULL if it is valid. */
static const char *router_name_problem(const char *name)
{
	if (!name || !name[0])
		return "empty";
	size_t n = strlen(name);
	if (n > NBRP_ROUTER_NAME_MAX)
		return "longer than 255 bytes";
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)name[i] < 0x21 || (unsigned char)name[i] > 0x7e)
			return "not printable ASCII without spaces";
	return NULL;
}

bool nbrp_router_name_valid(const char *name)
{
	return router_name_problem(name) == NULL;
}

int nbrp_check_open(const Nbrp__Open *o, struct nbrp_error *e)
{
	if (o->version != NBRP_VERSION)
		return fail(e, NBRP_ERR_OPEN, NBRP_OPEN_BAD_VERSION, "version %u, only %d is supported",
			    o->version, NBRP_VERSION);
	const char *why = router_name_problem(o->router_name);
	if (why)
		return fail(e, NBRP_ERR_OPEN, NBRP_OPEN_BAD_ROUTER_NAME, "router name of %zu bytes: %s",
			    o->router_name ? strlen(o->router_name) : 0, why);
	if (o->hold_time > 0 && o->hold_time < NBRP_MIN_HOLD_TIME)
		return fail(e, NBRP_ERR_OPEN, NBRP_OPEN_BAD_HOLD_TIME, "hold time %u, neither 0 nor at least %d",
			    o->hold_time, NBRP_MIN_HOLD_TIME);
	if (o->key.len != 0 && o->key.len != 32)
		return fail(e, NBRP_ERR_OPEN, NBRP_OPEN_BAD_KEY, "key of %zu bytes, neither 0 nor 32",
			    o->key.len);
	return 0;
}

int nbrp_check_route(const Nbrp__Route *r, bool server_mode, const char **why)
{
	struct name agg;
	struct ip_endpoint src;

	if (r->n_names == 0)
		*why = "no names";
	else if (r->next_hop.len != 4 && r->next_hop.len != 16)
		*why = "next hop neither 4 nor 16 bytes";
	else if (r->next_hop_port > 65535)
		*why = "next hop port over 65535";
	else if (r->next_hop_port == 0 && !server_mode)
		*why = "next hop port 0";
	else if (r->n_path > NBRP_MAX_PATH)
		*why = "path longer than 64 router names";
	else if (r->n_path == 0 && !server_mode)
		*why = "empty path";
	else if (r->aggregate.len > 0 && nbrp_name_of(&r->aggregate, &agg) < 0)
		*why = "aggregate not a canonical wire name";
	else if (r->aggregate.len > NBRP_AGGREGATE_NAME_MAX || r->aggregate.len == 1)
		*why = "aggregate name the root or over 254 bytes";
	else if (r->aggregate.len > 0 && (r->n_names != 1 || r->names[0].len != r->aggregate.len ||
					  memcmp(r->names[0].data, r->aggregate.data, r->aggregate.len) != 0))
		*why = "an aggregate's route names other than the aggregate";
	else if (r->aggregate.len > 0 && r->aggregate_version > UINT32_MAX)
		*why = "aggregate version over 2^32-1";
	else if (r->aggregate.len > 0 && nbrp_aggregate_source_parse(r->aggregate_source, &src) < 0)
		*why = "aggregate source not \"ADDRESS PORT\"";
	else {
		for (size_t i = 0; i < r->n_path; i++)
			if (!nbrp_router_name_valid(r->path[i])) {
				*why = "invalid router name in the path";
				return -1;
			}
		return 0;
	}
	return -1;
}

int nbrp_aggregate_source_parse(const char *text, struct ip_endpoint *out)
{
	if (!text)
		return -1;
	const char *sp = strchr(text, ' ');
	char addr[INET6_ADDRSTRLEN];
	if (!sp || (size_t)(sp - text) >= sizeof(addr))
		return -1;
	memcpy(addr, text, (size_t)(sp - text));
	addr[sp - text] = 0;
	memset(out, 0, sizeof(*out));
	if (!ip_parse(addr, &out->family, out->addr))
		return -1;
	/* digits only, no sign, no leading zero, 1..65535 */
	const char *p = sp + 1;
	unsigned long port = 0;
	if (*p < '1' || *p > '9')
		return -1;
	for (; *p >= '0' && *p <= '9' && port <= 65535; p++)
		port = port * 10 + (unsigned long)(*p - '0');
	if (*p || port > 65535)
		return -1;
	out->port = (uint16_t)port;
	return 0;
}

const char *nbrp_aggregate_source_format(const struct ip_endpoint *e, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];
	snprintf(buf, len, "%s %u", ip_format(e->family, e->addr, a, sizeof(a)), e->port);
	return buf;
}

int nbrp_name_of(const ProtobufCBinaryData *b, struct name *out)
{
	/* a name sent in any other case than lowercase is refused, not folded */
	if (!name_wire_canonical(b->data, b->len))
		return -1;
	memcpy(out->wire, b->data, b->len);
	out->len = (uint8_t)b->len;
	return 0;
}

/* ---- notifications -------------------------------------------------- */

void nbrp_notification(Nbrp__Message *m, Nbrp__Notification *n, const struct nbrp_error *e)
{
	Nbrp__Message mi = NBRP__MESSAGE__INIT;
	Nbrp__Notification ni = NBRP__NOTIFICATION__INIT;
	*n = ni;
	n->code = e->code;
	n->subcode = e->subcode;
	/* packing only reads it */
	n->text = (char *)(e->text[0] ? e->text : nbrp_error_text(e->code, e->subcode));
	*m = mi;
	m->body_case = NBRP__MESSAGE__BODY_NOTIFICATION;
	m->notification = n;
}

const char *nbrp_error_text(uint8_t code, uint8_t subcode)
{
	switch (code) {
	case NBRP_ERR_MESSAGE:
		switch (subcode) {
		case 0: return "message error";
		case 1: return "message: bad length";
		case 2: return "message: not decodable";
		case 3: return "message: no body";
		}
		break;
	case NBRP_ERR_OPEN:
		switch (subcode) {
		case 0: return "OPEN error";
		case NBRP_OPEN_BAD_VERSION: return "OPEN: unsupported version";
		case NBRP_OPEN_BAD_ROUTER_NAME: return "OPEN: bad router name";
		case NBRP_OPEN_BAD_HOLD_TIME: return "OPEN: bad hold time";
		case NBRP_OPEN_BAD_KEY: return "OPEN: bad key";
		case NBRP_OPEN_BAD_ROLE: return "OPEN: server mode not as configured";
		}
		break;
	case NBRP_ERR_UPDATE:
		switch (subcode) {
		case 0: return "UPDATE error";
		case 1: return "UPDATE: undecodable names list";
		}
		break;
	case NBRP_ERR_HOLD_TIMER:
		if (subcode == 0)
			return "hold timer expired";
		break;
	case NBRP_ERR_FSM:
		switch (subcode) {
		case 0: return "finite state machine error";
		case 1: return "unexpected message in this state";
		}
		break;
	case NBRP_ERR_CEASE:
		switch (subcode) {
		case 0: return "cease";
		case NBRP_CEASE_MAX_NAMES: return "cease: maximum number of names reached";
		case NBRP_CEASE_SHUTDOWN: return "cease: administrative shutdown";
		case NBRP_CEASE_DECONFIGURED: return "cease: peer de-configured";
		case NBRP_CEASE_RESET: return "cease: administrative reset";
		case NBRP_CEASE_COLLISION: return "cease: connection collision resolution";
		}
		break;
	}
	return "unknown error";
}
