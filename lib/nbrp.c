#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "nbrp.h"

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
	struct msg_arena *a = calloc(1, sizeof(*a));
	if (!a)
		return fail(e, NBRP_ERR_CEASE, NBRP_CEASE_RESET, "out of memory decoding a message of %zu bytes", len);
	a->first_block = len * 2 + 4096;        /* most messages fit in one block */
	ProtobufCAllocator alloc = { .alloc = arena_alloc, .free = arena_free, .allocator_data = a };
	Nbrp__Message *m = nbrp__message__unpack(&alloc, len, frame);
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

void nbrp_message_free(Nbrp__Message *msg)
{
	if (!msg)
		return;
	const struct arena_header *h = (const struct arena_header *)msg - 1;
	arena_destroy(h->arena);
}

uint8_t *nbrp_encode(const Nbrp__Message *msg, size_t *len)
{
	size_t size = nbrp__message__get_packed_size(msg);
	/* a message without a body packs to nothing, which no frame can carry */
	if (size == 0 || size > UINT32_MAX)
		return NULL;
	uint8_t *buf = malloc(NBRP_HEADER_LEN + size);
	if (!buf)
		return NULL;
	frame_put_header(buf, (uint32_t)size);
	nbrp__message__pack(msg, buf + NBRP_HEADER_LEN);
	*len = NBRP_HEADER_LEN + size;
	return buf;
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

int nbrp_name_of(const ProtobufCBinaryData *b, struct name *out)
{
	if (b->len == 0 || name_from_wire(out, b->data, b->len) != NAME_OK)
		return -1;
	/* name_from_wire lowercases: a name sent in any other case is refused */
	if (out->len != b->len || memcmp(out->wire, b->data, b->len) != 0)
		return -1;
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
