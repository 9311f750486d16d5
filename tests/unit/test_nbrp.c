#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "nbrp.h"

/* Builders for messages, as nbrpd sends them. */

static ProtobufCBinaryData wire_of(const char *text, struct name *keep)
{
	if (name_from_text(keep, text, strlen(text)) != NAME_OK)
		fail_msg("bad name %s", text);
	ProtobufCBinaryData b = { keep->len, keep->wire };
	return b;
}

static uint8_t key32[32] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
			     17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32 };
static uint8_t v4[4] = { 192, 0, 2, 1 };
static uint8_t v6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };

static void open_init(Nbrp__Open *o)
{
	Nbrp__Open init = NBRP__OPEN__INIT;
	*o = init;
	o->version = 1;
	o->router_name = "cr1.example";
	o->hold_time = 90;
}

/* A router route for www.example.com and example.org, via cr1 then cr2. */
struct built_route {
	Nbrp__Route r;
	struct name keep[3];
	ProtobufCBinaryData names[3];
	char *path[NBRP_MAX_PATH + 1];
};

static Nbrp__Route *router_route(struct built_route *b)
{
	Nbrp__Route init = NBRP__ROUTE__INIT;
	b->r = init;
	b->names[0] = wire_of("www.example.com", &b->keep[0]);
	b->names[1] = wire_of("example.org", &b->keep[1]);
	b->r.n_names = 2;
	b->r.names = b->names;
	b->r.next_hop.len = 4;
	b->r.next_hop.data = v4;
	b->r.next_hop_port = 53;
	b->path[0] = "cr1.example";
	b->path[1] = "cr2.example";
	b->r.n_path = 2;
	b->r.path = b->path;
	b->r.load_ms = 12;
	return &b->r;
}

/* A content server's own route: its address, no port, no path. */
static Nbrp__Route *server_route(struct built_route *b)
{
	Nbrp__Route init = NBRP__ROUTE__INIT;
	b->r = init;
	b->names[0] = wire_of("cdn.example", &b->keep[0]);
	b->r.n_names = 1;
	b->r.names = b->names;
	b->r.next_hop.len = 16;
	b->r.next_hop.data = v6;
	return &b->r;
}

/* Every kind of message, with every field set somewhere. */
struct all_kinds {
	Nbrp__Message m[6];
	Nbrp__Open open;
	Nbrp__Keepalive keepalive;
	Nbrp__Update update;
	Nbrp__Notification notification;
	Nbrp__EndOfRib eor;
	Nbrp__RouteRefresh refresh;
	struct built_route routes[2];
	Nbrp__Route *route_ptrs[2];
	Nbrp__Attestation att;
	Nbrp__Attestation *att_ptrs[1];
	struct name keep[2];
	ProtobufCBinaryData withdrawn[1];
	char *caps[2];
};

static void build_all_kinds(struct all_kinds *a)
{
	Nbrp__Message mi = NBRP__MESSAGE__INIT;
	for (int i = 0; i < 6; i++)
		a->m[i] = mi;

	open_init(&a->open);
	a->caps[0] = "route-refresh";
	a->caps[1] = "graceful-restart";
	a->open.n_capabilities = 2;
	a->open.capabilities = a->caps;
	a->open.key.len = 32;
	a->open.key.data = key32;
	a->open.server_mode = 1;
	a->open.restart_time = 120;
	a->m[0].body_case = NBRP__MESSAGE__BODY_OPEN;
	a->m[0].open = &a->open;

	Nbrp__Keepalive ki = NBRP__KEEPALIVE__INIT;
	a->keepalive = ki;
	a->m[1].body_case = NBRP__MESSAGE__BODY_KEEPALIVE;
	a->m[1].keepalive = &a->keepalive;

	Nbrp__Update ui = NBRP__UPDATE__INIT;
	Nbrp__Attestation ai = NBRP__ATTESTATION__INIT;
	a->update = ui;
	a->att = ai;
	a->att.signer.len = 32;
	a->att.signer.data = key32;
	a->att.timestamp = 1700000000;
	a->att.expiry = 1700086400;
	a->att.for_peer = "cr3.example";
	a->att_ptrs[0] = &a->att;
	a->route_ptrs[0] = router_route(&a->routes[0]);
	a->routes[0].r.aggregate = wire_of("agg.example", &a->keep[0]);
	a->routes[0].r.aggregate_version = 3;
	a->routes[0].r.aggregate_source = "192.0.2.9 5300";
	a->routes[0].r.n_attestations = 1;
	a->routes[0].r.attestations = a->att_ptrs;
	a->route_ptrs[1] = server_route(&a->routes[1]);
	a->withdrawn[0] = wire_of("old.example", &a->keep[1]);
	a->update.n_withdrawn = 1;
	a->update.withdrawn = a->withdrawn;
	a->update.n_routes = 2;
	a->update.routes = a->route_ptrs;
	a->m[2].body_case = NBRP__MESSAGE__BODY_UPDATE;
	a->m[2].update = &a->update;

	Nbrp__Notification ni = NBRP__NOTIFICATION__INIT;
	a->notification = ni;
	a->notification.code = NBRP_ERR_CEASE;
	a->notification.subcode = NBRP_CEASE_SHUTDOWN;
	a->notification.text = "going down";
	a->m[3].body_case = NBRP__MESSAGE__BODY_NOTIFICATION;
	a->m[3].notification = &a->notification;

	Nbrp__EndOfRib ei = NBRP__END_OF_RIB__INIT;
	a->eor = ei;
	a->m[4].body_case = NBRP__MESSAGE__BODY_END_OF_RIB;
	a->m[4].end_of_rib = &a->eor;

	Nbrp__RouteRefresh ri = NBRP__ROUTE_REFRESH__INIT;
	a->refresh = ri;
	a->m[5].body_case = NBRP__MESSAGE__BODY_ROUTE_REFRESH;
	a->m[5].route_refresh = &a->refresh;
}

static void assert_same_encoding(const Nbrp__Message *m, const uint8_t *frame, size_t len)
{
	size_t l2;
	uint8_t *again = nbrp_encode(m, &l2);
	assert_non_null(again);
	assert_int_equal(l2, len);
	assert_memory_equal(again, frame, len);
	free(again);
}

static void check_fields(const Nbrp__Message *m)
{
	switch (m->body_case) {
	case NBRP__MESSAGE__BODY_OPEN:
		assert_int_equal(m->open->version, 1);
		assert_string_equal(m->open->router_name, "cr1.example");
		assert_int_equal(m->open->hold_time, 90);
		assert_int_equal(m->open->n_capabilities, 2);
		assert_string_equal(m->open->capabilities[1], "graceful-restart");
		assert_int_equal(m->open->key.len, 32);
		assert_memory_equal(m->open->key.data, key32, 32);
		assert_true(m->open->server_mode);
		assert_int_equal(m->open->restart_time, 120);
		break;
	case NBRP__MESSAGE__BODY_UPDATE: {
		const Nbrp__Update *u = m->update;
		struct name n;
		char text[NAME_MAX_TEXT];
		assert_int_equal(u->n_withdrawn, 1);
		assert_int_equal(nbrp_name_of(&u->withdrawn[0], &n), 0);
		name_to_text(&n, text, sizeof(text));
		assert_string_equal(text, "old.example.");
		assert_int_equal(u->n_routes, 2);
		const Nbrp__Route *r = u->routes[0];
		assert_int_equal(r->n_names, 2);
		assert_int_equal(nbrp_name_of(&r->names[1], &n), 0);
		name_to_text(&n, text, sizeof(text));
		assert_string_equal(text, "example.org.");
		assert_int_equal(r->next_hop.len, 4);
		assert_memory_equal(r->next_hop.data, v4, 4);
		assert_int_equal(r->next_hop_port, 53);
		assert_int_equal(r->n_path, 2);
		assert_string_equal(r->path[0], "cr1.example");
		assert_int_equal(r->load_ms, 12);
		assert_int_equal(r->aggregate_version, 3);
		assert_string_equal(r->aggregate_source, "192.0.2.9 5300");
		assert_int_equal(r->n_attestations, 1);
		assert_string_equal(r->attestations[0]->for_peer, "cr3.example");
		assert_int_equal(r->attestations[0]->expiry, 1700086400);
		const char *why = NULL;
		/* carried as it is, though an aggregate's route must name the aggregate alone */
		assert_int_equal(nbrp_check_route(r, false, &why), -1);
		assert_non_null(strstr(why, "names other than the aggregate"));
		r = u->routes[1];
		assert_int_equal(r->next_hop.len, 16);
		assert_int_equal(r->n_path, 0);
		assert_int_equal(r->next_hop_port, 0);
		assert_int_equal(nbrp_check_route(r, true, &why), 0);
		break;
	}
	case NBRP__MESSAGE__BODY_NOTIFICATION:
		assert_int_equal(m->notification->code, NBRP_ERR_CEASE);
		assert_int_equal(m->notification->subcode, NBRP_CEASE_SHUTDOWN);
		assert_string_equal(m->notification->text, "going down");
		break;
	default:
		break;
	}
}

static void every_kind_round_trips_however_it_is_fed(void **state)
{
	struct all_kinds a;
	build_all_kinds(&a);
	uint8_t *frames[6];
	size_t lens[6], total = 0;
	for (int i = 0; i < 6; i++) {
		frames[i] = nbrp_encode(&a.m[i], &lens[i]);
		assert_non_null(frames[i]);
		size_t body = lens[i] - NBRP_HEADER_LEN;
		assert_int_equal(frames[i][0] << 24 | frames[i][1] << 16 | frames[i][2] << 8 | frames[i][3], body);
		total += lens[i];
	}

	for (int i = 0; i < 6; i++) {
		struct nbrp_reader r;
		struct nbrp_error e;
		Nbrp__Message *m;

		/* in one piece */
		nbrp_reader_init(&r, NBRP_MAX_MESSAGE);
		assert_int_equal(nbrp_reader_feed(&r, frames[i], lens[i]), 0);
		assert_int_equal(nbrp_reader_next(&r, &m, &e), 1);
		assert_int_equal(m->body_case, a.m[i].body_case);
		check_fields(m);
		assert_same_encoding(m, frames[i], lens[i]);
		nbrp_message_free(m);
		assert_int_equal(nbrp_reader_next(&r, &m, &e), 0);

		/* a byte at a time: nothing until the last one */
		for (size_t k = 0; k < lens[i]; k++) {
			assert_int_equal(nbrp_reader_feed(&r, frames[i] + k, 1), 0);
			int rc = nbrp_reader_next(&r, &m, &e);
			assert_int_equal(rc, k + 1 == lens[i] ? 1 : 0);
		}
		assert_int_equal(m->body_case, a.m[i].body_case);
		check_fields(m);
		assert_same_encoding(m, frames[i], lens[i]);
		nbrp_message_free(m);
		nbrp_reader_free(&r);
	}

	/* all six in one feed, then the stream cut at every point */
	uint8_t *stream = malloc(total);
	size_t off = 0;
	for (int i = 0; i < 6; i++) {
		memcpy(stream + off, frames[i], lens[i]);
		off += lens[i];
	}
	for (size_t cut = 0; cut <= total; cut++) {
		struct nbrp_reader r;
		struct nbrp_error e;
		Nbrp__Message *m;
		int got = 0;
		nbrp_reader_init(&r, NBRP_MAX_MESSAGE);
		assert_int_equal(nbrp_reader_feed(&r, stream, cut), 0);
		while (nbrp_reader_next(&r, &m, &e) == 1) {
			assert_int_equal(m->body_case, a.m[got].body_case);
			check_fields(m);
			got++;
			nbrp_message_free(m);
		}
		assert_int_equal(nbrp_reader_feed(&r, stream + cut, total - cut), 0);
		int rc;
		while ((rc = nbrp_reader_next(&r, &m, &e)) == 1) {
			assert_int_equal(m->body_case, a.m[got].body_case);
			check_fields(m);
			got++;
			nbrp_message_free(m);
		}
		assert_int_equal(rc, 0);
		assert_int_equal(got, 6);
		nbrp_reader_free(&r);
	}
	free(stream);
	for (int i = 0; i < 6; i++)
		free(frames[i]);

	/* a message without a body cannot be framed */
	Nbrp__Message empty = NBRP__MESSAGE__INIT;
	size_t len;
	assert_null(nbrp_encode(&empty, &len));
}

static void bad_frames_are_message_errors_with_a_reason(void **state)
{
	struct {
		const char *what;
		size_t max;
		uint8_t bytes[24];
		size_t len;
		uint8_t subcode;
		const char *text;
	} cases[] = {
		{ "length 0", NBRP_MAX_MESSAGE, { 0, 0, 0, 0 }, 4, 1, "length 0" },
		{ "over the default", 0, { 0, 0x10, 0, 1 }, 4, 1, "length 1048577 is over the limit of 1048576" },
		{ "over a set limit", 100, { 0, 0, 0, 101 }, 4, 1, "length 101 is over the limit of 100" },
		{ "huge", NBRP_MAX_MESSAGE, { 0xFF, 0xFF, 0xFF, 0xFF }, 4, 1, "length 4294967295" },
		{ "garbage", NBRP_MAX_MESSAGE, { 0, 0, 0, 3, 0xFF, 0xFF, 0xFF }, 7, 2, "3 bytes is not decodable" },
		{ "truncated open", NBRP_MAX_MESSAGE, { 0, 0, 0, 3, 0x0A, 0x05, 0x08 }, 7, 2, "3 bytes" },
		{ "unknown field only", NBRP_MAX_MESSAGE, { 0, 0, 0, 2, 0x48, 0x01 }, 6, 3, "2 bytes has no body" },
		/* field numbers protobuf-c reads but cannot write back */
		{ "field 0 in a KEEPALIVE", NBRP_MAX_MESSAGE,
		  { 0, 0, 0, 12, 0x12, 10, 0x81, 0x00, 0, 0, 0, 0, 0, 0, 0, 0 }, 16, 2, "invalid field number" },
		{ "field 2^29", NBRP_MAX_MESSAGE,
		  { 0, 0, 0, 8, 0x80, 0x80, 0x80, 0x80, 0x10, 0x00, 0x12, 0x00 }, 12, 2, "8 bytes has an invalid field number" },
		{ "field 0 in an attestation", NBRP_MAX_MESSAGE,
		  { 0, 0, 0, 16, 0x1a, 14, 0x12, 12, 0x4a, 10, 0x81, 0x00, 0, 0, 0, 0, 0, 0, 0, 0 }, 20, 2,
		  "invalid field number" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct nbrp_reader r;
		struct nbrp_error e;
		Nbrp__Message *m = NULL;
		memset(&e, 0, sizeof(e));
		nbrp_reader_init(&r, cases[i].max);
		assert_int_equal(nbrp_reader_feed(&r, cases[i].bytes, cases[i].len), 0);
		assert_int_equal(nbrp_reader_next(&r, &m, &e), -1);
		assert_null(m);
		assert_int_equal(e.code, NBRP_ERR_MESSAGE);
		if (e.subcode != cases[i].subcode)
			fail_msg("%s: subcode %u, not %u", cases[i].what, e.subcode, cases[i].subcode);
		if (!strstr(e.text, cases[i].text))
			fail_msg("%s: error '%s' does not say '%s'", cases[i].what, e.text, cases[i].text);
		nbrp_reader_free(&r);
	}

	/* a length over the limit is refused before the message arrives */
	struct nbrp_reader r;
	struct nbrp_error e;
	Nbrp__Message *m;
	nbrp_reader_init(&r, 100);
	const uint8_t big[] = { 0, 0, 0x10, 0 };
	assert_int_equal(nbrp_reader_feed(&r, big, sizeof(big)), 0);
	assert_int_equal(nbrp_reader_next(&r, &m, &e), -1);
	nbrp_reader_free(&r);

	/* exactly the limit is fine: a KEEPALIVE is 2 bytes */
	const uint8_t keepalive[] = { 0, 0, 0, 2, 0x12, 0x00 };
	nbrp_reader_init(&r, 2);
	assert_int_equal(nbrp_reader_feed(&r, keepalive, sizeof(keepalive)), 0);
	assert_int_equal(nbrp_reader_next(&r, &m, &e), 1);
	assert_int_equal(m->body_case, NBRP__MESSAGE__BODY_KEEPALIVE);
	nbrp_message_free(m);
	nbrp_reader_free(&r);

	/* an unknown field with a valid number is kept, and packed again */
	const uint8_t unknown[] = { 0, 0, 0, 11, 0x1a, 9, 0x12, 7, 0x4a, 5, 0x20, 0x05, 0xa0, 0x06, 0x01 };
	nbrp_reader_init(&r, 0);
	assert_int_equal(nbrp_reader_feed(&r, unknown, sizeof(unknown)), 0);
	assert_int_equal(nbrp_reader_next(&r, &m, &e), 1);
	assert_int_equal(m->update->routes[0]->attestations[0]->expiry, 5);
	assert_same_encoding(m, unknown, sizeof(unknown));
	nbrp_message_free(m);
	nbrp_reader_free(&r);

	/* a good message, then a bad one: the good one comes out first */
	const uint8_t two[] = { 0, 0, 0, 2, 0x12, 0x00, 0, 0, 0, 0 };
	nbrp_reader_init(&r, 0);
	assert_int_equal(nbrp_reader_feed(&r, two, sizeof(two)), 0);
	assert_int_equal(nbrp_reader_next(&r, &m, &e), 1);
	nbrp_message_free(m);
	assert_int_equal(nbrp_reader_next(&r, &m, &e), -1);
	assert_int_equal(e.subcode, 1);
	nbrp_reader_free(&r);

	/* a partial header or message just waits */
	const uint8_t partial[] = { 0, 0, 0, 9, 1, 2 };
	nbrp_reader_init(&r, NBRP_MAX_MESSAGE);
	assert_int_equal(nbrp_reader_feed(&r, partial, 2), 0);
	assert_int_equal(nbrp_reader_next(&r, &m, &e), 0);
	assert_int_equal(nbrp_reader_feed(&r, partial + 2, 4), 0);
	assert_int_equal(nbrp_reader_next(&r, &m, &e), 0);
	nbrp_reader_free(&r);
}

static void expect_open_error(const Nbrp__Open *o, uint8_t subcode, const char *text)
{
	struct nbrp_error e;
	memset(&e, 0, sizeof(e));
	assert_int_equal(nbrp_check_open(o, &e), -1);
	assert_int_equal(e.code, NBRP_ERR_OPEN);
	assert_int_equal(e.subcode, subcode);
	if (!strstr(e.text, text))
		fail_msg("error '%s' does not say '%s'", e.text, text);
}

static void open_checks(void **state)
{
	Nbrp__Open o;
	struct nbrp_error e;
	open_init(&o);
	assert_int_equal(nbrp_check_open(&o, &e), 0);

	/* version */
	o.version = 0;
	expect_open_error(&o, NBRP_OPEN_BAD_VERSION, "version 0");
	o.version = 2;
	expect_open_error(&o, NBRP_OPEN_BAD_VERSION, "version 2");
	o.version = 1;

	/* router name */
	char long_name[NBRP_ROUTER_NAME_MAX + 2];
	memset(long_name, 'r', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = 0;
	const char *bad_names[] = { "", "cr 1", "cr\t1", "cr1\x7f", "cr\xc3\xa9", long_name };
	for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
		o.router_name = (char *)bad_names[i];
		expect_open_error(&o, NBRP_OPEN_BAD_ROUTER_NAME, "router name");
	}
	o.router_name = NULL;
	expect_open_error(&o, NBRP_OPEN_BAD_ROUTER_NAME, "router name of 0 bytes");
	long_name[NBRP_ROUTER_NAME_MAX] = 0;    /* 255 bytes */
	o.router_name = long_name;
	assert_int_equal(nbrp_check_open(&o, &e), 0);
	o.router_name = "!~";
	assert_int_equal(nbrp_check_open(&o, &e), 0);
	o.router_name = "cr1.example";

	/* hold time */
	o.hold_time = 1;
	expect_open_error(&o, NBRP_OPEN_BAD_HOLD_TIME, "hold time 1");
	o.hold_time = 2;
	expect_open_error(&o, NBRP_OPEN_BAD_HOLD_TIME, "hold time 2");
	const uint32_t good_holds[] = { 0, 3, 65535, UINT32_MAX };
	for (size_t i = 0; i < 4; i++) {
		o.hold_time = good_holds[i];
		assert_int_equal(nbrp_check_open(&o, &e), 0);
	}
	o.hold_time = 90;

	/* key */
	o.key.data = key32;
	o.key.len = 31;
	expect_open_error(&o, NBRP_OPEN_BAD_KEY, "key of 31 bytes");
	o.key.len = 33;
	expect_open_error(&o, NBRP_OPEN_BAD_KEY, "key of 33 bytes");
	o.key.len = 1;
	expect_open_error(&o, NBRP_OPEN_BAD_KEY, "key of 1 bytes");
	o.key.len = 32;
	assert_int_equal(nbrp_check_open(&o, &e), 0);

	/* the first problem is the one reported */
	o.version = 9;
	o.hold_time = 1;
	expect_open_error(&o, NBRP_OPEN_BAD_VERSION, "version 9");
}

static void router_names(void **state)
{
	assert_true(nbrp_router_name_valid("cr1.example"));
	assert_true(nbrp_router_name_valid("a"));
	assert_true(nbrp_router_name_valid("!\"#$%&'()*+,-./0123456789:;<=>?@AZ[\\]^_`az{|}~"));
	assert_false(nbrp_router_name_valid(NULL));
	assert_false(nbrp_router_name_valid(""));
	assert_false(nbrp_router_name_valid(" "));
	assert_false(nbrp_router_name_valid("a b"));
	assert_false(nbrp_router_name_valid("a\nb"));
	assert_false(nbrp_router_name_valid("\x7f"));
	assert_false(nbrp_router_name_valid("\x80"));
	char n[300];
	memset(n, 'x', sizeof(n));
	n[255] = 0;
	assert_true(nbrp_router_name_valid(n));
	n[255] = 'x';
	n[256] = 0;
	assert_false(nbrp_router_name_valid(n));
}

static void expect_route_error(const Nbrp__Route *r, bool server_mode, const char *text)
{
	const char *why = NULL;
	assert_int_equal(nbrp_check_route(r, server_mode, &why), -1);
	assert_non_null(why);
	if (!strstr(why, text))
		fail_msg("reason '%s' does not say '%s'", why, text);
}

static void route_checks(void **state)
{
	struct built_route b;
	const char *why;
	Nbrp__Route *r = router_route(&b);

	/* a router's route, in both modes */
	assert_int_equal(nbrp_check_route(r, false, &why), 0);
	assert_int_equal(nbrp_check_route(r, true, &why), 0);
	r->next_hop.len = 16;
	r->next_hop.data = v6;
	r->next_hop_port = 65535;
	assert_int_equal(nbrp_check_route(r, false, &why), 0);

	/* attestations are not looked at */
	Nbrp__Attestation att = NBRP__ATTESTATION__INIT;
	Nbrp__Attestation *atts[] = { &att };
	att.signer.len = 3;
	att.signer.data = v4;
	r->n_attestations = 1;
	r->attestations = atts;
	assert_int_equal(nbrp_check_route(r, false, &why), 0);

	/* names are the caller's: one bad name among good ones passes here */
	uint8_t upper[] = { 3, 'W', 'W', 'W', 0 };
	b.names[1].data = upper;
	b.names[1].len = sizeof(upper);
	assert_int_equal(nbrp_check_route(r, false, &why), 0);
	struct name n;
	assert_int_equal(nbrp_name_of(&b.names[0], &n), 0);
	assert_int_equal(nbrp_name_of(&b.names[1], &n), -1);

	/* no names */
	r->n_names = 0;
	expect_route_error(r, false, "no names");
	expect_route_error(r, true, "no names");
	r->n_names = 2;

	/* next hop */
	const size_t bad_lens[] = { 0, 3, 5, 15, 17 };
	for (size_t i = 0; i < 5; i++) {
		r->next_hop.len = bad_lens[i];
		expect_route_error(r, false, "next hop");
		expect_route_error(r, true, "next hop");
	}
	r->next_hop.len = 16;

	/* port: 0 only in server mode, never over 65535 */
	r->next_hop_port = 0;
	expect_route_error(r, false, "port 0");
	assert_int_equal(nbrp_check_route(r, true, &why), 0);
	r->next_hop_port = 65536;
	expect_route_error(r, false, "port over 65535");
	expect_route_error(r, true, "port over 65535");
	r->next_hop_port = 53;

	/* path: 1..64 router names, 0 only in server mode */
	r->n_path = 0;
	expect_route_error(r, false, "empty path");
	assert_int_equal(nbrp_check_route(r, true, &why), 0);
	for (int i = 0; i <= NBRP_MAX_PATH; i++)
		b.path[i] = "hop.example";
	r->n_path = NBRP_MAX_PATH;
	assert_int_equal(nbrp_check_route(r, false, &why), 0);
	r->n_path = NBRP_MAX_PATH + 1;
	expect_route_error(r, false, "path longer than 64");
	expect_route_error(r, true, "path longer than 64");
	r->n_path = 3;
	b.path[2] = "bad name";
	expect_route_error(r, false, "invalid router name in the path");
	expect_route_error(r, true, "invalid router name in the path");
	b.path[2] = "";
	expect_route_error(r, false, "invalid router name in the path");
	b.path[2] = NULL;
	expect_route_error(r, false, "invalid router name in the path");
	b.path[2] = "hop.example";
	assert_int_equal(nbrp_check_route(r, false, &why), 0);

	/* aggregate: empty, or a canonical wire name of 2..254 bytes that is the route's one
	 * name, a version of 32 bits and a source "ADDRESS PORT" */
	struct name agg;
	ProtobufCBinaryData saved_names = r->names[0];
	size_t saved_n = r->n_names;
	r->aggregate = wire_of("agg.example", &agg);
	expect_route_error(r, false, "names other than the aggregate");
	r->names[0] = r->aggregate;
	r->n_names = 1;
	expect_route_error(r, false, "aggregate source");
	static const char *good_sources[] = { "192.0.2.1 5300", "2001:db8::1 1", "127.0.0.1 65535" };
	for (size_t i = 0; i < sizeof(good_sources) / sizeof(good_sources[0]); i++) {
		r->aggregate_source = (char *)good_sources[i];
		assert_int_equal(nbrp_check_route(r, false, &why), 0);
	}
	static const char *bad_sources[] = { "", "192.0.2.1", "192.0.2.1 0", "192.0.2.1 65536", "192.0.2.1  53",
					     "192.0.2.1 053", "192.0.2.1 53 ", "host 53", "192.0.2.1 +53",
					     "[2001:db8::1] 53" };
	for (size_t i = 0; i < sizeof(bad_sources) / sizeof(bad_sources[0]); i++) {
		r->aggregate_source = (char *)bad_sources[i];
		expect_route_error(r, false, "aggregate source");
	}
	r->aggregate_source = (char *)good_sources[0];
	r->aggregate_version = 0xffffffffull;
	assert_int_equal(nbrp_check_route(r, false, &why), 0);
	r->aggregate_version = 0x100000000ull;
	expect_route_error(r, false, "aggregate version");
	r->aggregate_version = 7;
	struct ip_endpoint src;
	assert_int_equal(nbrp_aggregate_source_parse("2001:db8::1 1", &src), 0);
	char text[NBRP_SOURCE_TEXT_MAX];
	assert_string_equal(nbrp_aggregate_source_format(&src, text, sizeof(text)), "2001:db8::1 1");
	r->names[0] = saved_names;
	r->n_names = saved_n;
	r->aggregate_source = NULL;
	uint8_t agg_upper[] = { 3, 'A', 'g', 'g', 0 };
	r->aggregate.data = agg_upper;
	r->aggregate.len = sizeof(agg_upper);
	expect_route_error(r, false, "aggregate");
	uint8_t agg_broken[] = { 5, 'a', 'g', 'g', 0 };
	r->aggregate.data = agg_broken;
	r->aggregate.len = sizeof(agg_broken);
	expect_route_error(r, false, "aggregate");
	uint8_t agg_root[] = { 0 };
	r->aggregate.data = agg_root;
	r->aggregate.len = sizeof(agg_root);
	expect_route_error(r, false, "aggregate name the root");
	r->aggregate.len = 0;

	/* a content server's own route */
	r = server_route(&b);
	assert_int_equal(nbrp_check_route(r, true, &why), 0);
	expect_route_error(r, false, "port 0");
	r->next_hop_port = 8053;
	expect_route_error(r, false, "empty path");
	assert_int_equal(nbrp_check_route(r, true, &why), 0);
}

static void names_must_be_canonical(void **state)
{
	struct name keep, out;
	char text[NAME_MAX_TEXT];
	ProtobufCBinaryData b = wire_of("www.example.com", &keep);
	assert_int_equal(nbrp_name_of(&b, &out), 0);
	assert_true(name_equal(&out, &keep));
	name_to_text(&out, text, sizeof(text));
	assert_string_equal(text, "www.example.com.");

	/* the root, and bytes that are not letters, are canonical as they are */
	uint8_t root[] = { 0 };
	b.data = root;
	b.len = 1;
	assert_int_equal(nbrp_name_of(&b, &out), 0);
	assert_int_equal(out.len, 1);
	uint8_t odd[] = { 3, '_', 0xC9, '-', 0 };
	b.data = odd;
	b.len = sizeof(odd);
	assert_int_equal(nbrp_name_of(&b, &out), 0);

	struct {
		const char *what;
		uint8_t bytes[16];
		size_t len;
	} bad[] = {
		{ "uppercase", { 3, 'w', 'W', 'w', 0 }, 5 },
		{ "all uppercase", { 3, 'C', 'O', 'M', 0 }, 5 },
		{ "empty", { 0 }, 0 },
		{ "no root label", { 3, 'c', 'o', 'm' }, 4 },
		{ "label past the end", { 5, 'c', 'o', 'm', 0 }, 5 },
		{ "bytes after the root", { 3, 'c', 'o', 'm', 0, 0 }, 6 },
		{ "compression pointer", { 0xC0, 12 }, 2 },
		{ "extended label type", { 0x41, 'a', 0 }, 3 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		b.data = bad[i].bytes;
		b.len = bad[i].len;
		if (nbrp_name_of(&b, &out) != -1)
			fail_msg("%s accepted", bad[i].what);
	}

	/* too long: 256 bytes */
	uint8_t big[256];
	for (size_t off = 0; off + 64 <= 256; off += 64) {
		big[off] = 63;
		memset(big + off + 1, 'a', 63);
	}
	big[255] = 0;
	b.data = big;
	b.len = sizeof(big);
	assert_int_equal(nbrp_name_of(&b, &out), -1);
}

/* ---- the fast UPDATE decoder and encoder against protobuf-c ---- */

static uint32_t rnd_state = 12345;

static uint32_t rnd(uint32_t n)
{
	rnd_state = rnd_state * 1103515245u + 12345u;
	return n ? (rnd_state >> 8) % n : 0;
}

static void rnd_bytes(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = rnd(4) ? (uint8_t)('a' + rnd(26)) : (uint8_t)rnd(256);
}

/* nbrp_encode's frame holds what protobuf-c packs for m. */
static void assert_packed_as_protobuf_c(const Nbrp__Message *m, const uint8_t *frame, size_t len)
{
	size_t size = nbrp__message__get_packed_size(m);
	assert_int_equal(len, NBRP_HEADER_LEN + size);
	uint8_t *want = malloc(size + 1);
	nbrp__message__pack(m, want);
	assert_memory_equal(frame + NBRP_HEADER_LEN, want, size);
	free(want);
}

/* An UPDATE with random contents, packed: sometimes with fields the fast path leaves to protobuf-c. */
static uint8_t *random_update(size_t *len)
{
	static uint8_t pool[64][200];
	static bool filled;
	char strs[16][12];
	ProtobufCBinaryData names[64], withdrawn[4];
	char *paths[4][4];
	Nbrp__Route routes[4], *route_ptrs[4];
	Nbrp__Attestation att = NBRP__ATTESTATION__INIT;
	Nbrp__Attestation *att_ptr = &att;
	Nbrp__OriginWithdrawal ow = NBRP__ORIGIN_WITHDRAWAL__INIT, *ow_ptr = &ow;
	Nbrp__Update u = NBRP__UPDATE__INIT;
	Nbrp__Message m = NBRP__MESSAGE__INIT;
	size_t used = 0, nstr = 0;
	if (!filled)
		rnd_bytes(pool[0], sizeof(pool));
	filled = true;
	for (size_t i = 0; i < 64; i++)         /* a few bytes new each time */
		pool[rnd(64)][rnd(200)] = (uint8_t)rnd(256);
	for (size_t i = 0; i < 16; i++) {
		size_t l = rnd(11);
		rnd_bytes((uint8_t *)strs[i], l);
		strs[i][l] = 0;
		for (size_t k = 0; k < l; k++)
			if (!strs[i][k])
				strs[i][k] = 'x';
	}
	u.n_withdrawn = rnd(4);
	u.withdrawn = withdrawn;
	for (size_t i = 0; i < u.n_withdrawn; i++)
		withdrawn[i] = (ProtobufCBinaryData){ rnd(8) ? rnd(24) : rnd(200), pool[used++] };
	u.n_routes = rnd(5);
	u.routes = route_ptrs;
	for (size_t i = 0; i < u.n_routes; i++) {
		Nbrp__Route *r = &routes[i];
		nbrp__route__init(r);
		route_ptrs[i] = r;
		r->n_names = rnd(8);
		r->names = names + used;
		for (size_t k = 0; k < r->n_names; k++)
			names[used] = (ProtobufCBinaryData){ rnd(8) ? rnd(24) : rnd(200), pool[used] }, used++;
		static const size_t hop_lens[] = { 0, 4, 16, 3 };
		r->next_hop = (ProtobufCBinaryData){ hop_lens[rnd(4)], pool[used++] };
		static const uint32_t nums[] = { 0, 1, 53, 127, 128, 16383, 16384, 65535, 65536, 0x0fffffff,
						 0x10000000, 0xffffffffu };
		r->next_hop_port = nums[rnd(12)];
		r->load_ms = nums[rnd(12)];
		r->n_path = rnd(4);
		r->path = paths[i];
		for (size_t k = 0; k < r->n_path; k++)
			paths[i][k] = strs[nstr++ % 16];
		switch (rnd(32)) {      /* fields only protobuf-c reads */
		case 0:
			r->aggregate = (ProtobufCBinaryData){ 5, pool[0] };
			break;
		case 1:
			r->aggregate_version = 7;
			break;
		case 2:
			r->aggregate_source = strs[0];
			break;
		case 3:
			att.for_peer = strs[1];
			r->n_attestations = 1;
			r->attestations = &att_ptr;
			break;
		}
	}
	if (rnd(8) == 0) {
		/* an origin withdrawal, signed or not: protobuf-c's too */
		ow.name = (ProtobufCBinaryData){ rnd(24), pool[used++] };
		ow.origin = strs[2];
		ow.origin_seq = rnd(2) ? 1794999940123u : rnd(3);
		if (rnd(2)) {
			ow.signer = (ProtobufCBinaryData){ rnd(4) ? 32 : rnd(40), pool[used++] };
			ow.signature = (ProtobufCBinaryData){ rnd(4) ? 64 : rnd(80), pool[used++] };
			ow.expiry = rnd(2) ? 1795086400u : 0;
		}
		u.n_origin_withdrawals = 1;
		u.origin_withdrawals = &ow_ptr;
	}
	m.body_case = NBRP__MESSAGE__BODY_UPDATE;
	m.update = &u;
	uint8_t *frame = nbrp_encode(&m, len);
	assert_non_null(frame);
	assert_packed_as_protobuf_c(&m, frame, *len);
	return frame;
}

/* The same bytes decoded both ways: the same outcome, and the same message. */
static void assert_decoders_agree(const uint8_t *body, size_t len)
{
	Nbrp__Message *fast = NULL, *slow = NULL;
	struct nbrp_error ef, es;
	int rf = nbrp_decode(body, len, true, &fast, &ef);
	int rs = nbrp_decode(body, len, false, &slow, &es);
	assert_int_equal(rf, rs);
	if (rs < 0) {
		assert_int_equal(ef.code, es.code);
		assert_int_equal(ef.subcode, es.subcode);
		return;
	}
	size_t lf, ls;
	uint8_t *pf = nbrp_encode(fast, &lf), *ps = nbrp_encode(slow, &ls);
	assert_non_null(pf);
	assert_non_null(ps);
	assert_packed_as_protobuf_c(slow, ps, ls);
	assert_int_equal(lf, ls);
	assert_memory_equal(pf, ps, lf);
	free(pf);
	free(ps);
	nbrp_message_free(fast);
	nbrp_message_free(slow);
}

static void fast_update_decoding_is_protobuf_cs(void **state)
{
	uint8_t buf[16384];
	for (int iter = 0; iter < 100000; iter++) {
		size_t len;
		uint8_t *frame = random_update(&len);
		size_t blen = len - NBRP_HEADER_LEN;
		assert_true(blen + 16 <= sizeof(buf));
		memcpy(buf, frame + NBRP_HEADER_LEN, blen);
		free(frame);
		switch (rnd(6)) {
		case 0:         /* as it is */
			break;
		case 1:         /* a byte changed */
			if (blen)
				buf[rnd((uint32_t)blen)] = (uint8_t)rnd(256);
			break;
		case 2:         /* cut short */
			blen = rnd((uint32_t)blen + 1);
			break;
		case 3: {       /* some bytes appended: a repeated or unknown field, or junk */
			size_t extra = 1 + rnd(8);
			rnd_bytes(buf + blen, extra);
			buf[blen] = (uint8_t)rnd(256);
			blen += extra;
			break;
		}
		case 4:         /* a bit flipped in a varint-sized spot */
			if (blen)
				buf[rnd((uint32_t)blen)] ^= (uint8_t)(1u << rnd(8));
			break;
		case 5:         /* a region duplicated: repeats of singular fields */
			if (blen > 4) {
				size_t from = rnd((uint32_t)blen - 2), n = 1 + rnd(6);
				if (from + n > blen)
					n = blen - from;
				memmove(buf + from + n, buf + from, blen - from);
				blen += n;
			}
			break;
		}
		assert_decoders_agree(buf, blen);
	}
}

/* A common UPDATE is decoded without a copy per name: its names lie in one copy of the frame. */
static void common_updates_share_one_copy(void **state)
{
	struct built_route b;
	Nbrp__Route *rp = router_route(&b);
	Nbrp__Update u = NBRP__UPDATE__INIT;
	Nbrp__Message m = NBRP__MESSAGE__INIT;
	u.n_routes = 1;
	u.routes = &rp;
	m.body_case = NBRP__MESSAGE__BODY_UPDATE;
	m.update = &u;
	size_t len;
	uint8_t *frame = nbrp_encode(&m, &len);
	Nbrp__Message *got;
	struct nbrp_error e;
	assert_int_equal(nbrp_decode(frame + NBRP_HEADER_LEN, len - NBRP_HEADER_LEN, true, &got, &e), 1);
	const Nbrp__Route *r = got->update->routes[0];
	assert_int_equal(r->n_names, 2);
	/* a tag byte and a length byte apart, as on the wire */
	assert_ptr_equal(r->names[1].data, r->names[0].data + r->names[0].len + 2);
	assert_memory_equal(r->names[0].data, b.names[0].data, b.names[0].len);
	assert_string_equal(r->path[1], "cr2.example");
	assert_int_equal(r->load_ms, 12);
	nbrp_message_free(got);
	free(frame);
}

static void notifications(void **state)
{
	struct nbrp_error e = { NBRP_ERR_OPEN, NBRP_OPEN_BAD_HOLD_TIME, "hold time 1, neither 0 nor at least 3" };
	Nbrp__Message m;
	Nbrp__Notification n;
	nbrp_notification(&m, &n, &e);
	assert_int_equal(m.body_case, NBRP__MESSAGE__BODY_NOTIFICATION);
	assert_ptr_equal(m.notification, &n);
	size_t len;
	uint8_t *frame = nbrp_encode(&m, &len);
	assert_non_null(frame);

	struct nbrp_reader r;
	struct nbrp_error e2;
	Nbrp__Message *got;
	nbrp_reader_init(&r, NBRP_MAX_MESSAGE);
	assert_int_equal(nbrp_reader_feed(&r, frame, len), 0);
	assert_int_equal(nbrp_reader_next(&r, &got, &e2), 1);
	assert_int_equal(got->body_case, NBRP__MESSAGE__BODY_NOTIFICATION);
	assert_int_equal(got->notification->code, NBRP_ERR_OPEN);
	assert_int_equal(got->notification->subcode, NBRP_OPEN_BAD_HOLD_TIME);
	assert_string_equal(got->notification->text, e.text);
	nbrp_message_free(got);
	nbrp_reader_free(&r);
	free(frame);

	/* without a text, the standard one */
	struct nbrp_error plain = { NBRP_ERR_HOLD_TIMER, 0, "" };
	nbrp_notification(&m, &n, &plain);
	assert_int_equal(n.code, NBRP_ERR_HOLD_TIMER);
	assert_int_equal(n.subcode, 0);
	assert_string_equal(n.text, "hold timer expired");

	/* a reader error is a notification as it is */
	const uint8_t zero[] = { 0, 0, 0, 0 };
	nbrp_reader_init(&r, NBRP_MAX_MESSAGE);
	assert_int_equal(nbrp_reader_feed(&r, zero, 4), 0);
	assert_int_equal(nbrp_reader_next(&r, &got, &e2), -1);
	nbrp_notification(&m, &n, &e2);
	assert_int_equal(n.code, NBRP_ERR_MESSAGE);
	assert_int_equal(n.subcode, 1);
	assert_string_equal(n.text, e2.text);
	nbrp_reader_free(&r);

	nbrp_message_free(NULL);
}

static void error_texts(void **state)
{
	struct {
		uint8_t code, subcode;
		const char *text;
	} known[] = {
		{ 1, 1, "message: bad length" },
		{ 1, 2, "message: not decodable" },
		{ 1, 3, "message: no body" },
		{ 2, 1, "OPEN: unsupported version" },
		{ 2, 2, "OPEN: bad router name" },
		{ 2, 3, "OPEN: bad hold time" },
		{ 2, 4, "OPEN: bad key" },
		{ 3, 1, "UPDATE: undecodable names list" },
		{ 4, 0, "hold timer expired" },
		{ 5, 1, "unexpected message in this state" },
		{ 6, 1, "cease: maximum number of names reached" },
		{ 6, 2, "cease: administrative shutdown" },
		{ 6, 3, "cease: peer de-configured" },
		{ 6, 4, "cease: administrative reset" },
		{ 6, 7, "cease: connection collision resolution" },
		{ 6, 0, "cease" },
		{ 2, 5, "OPEN: server mode not as configured" },
	};
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		assert_string_equal(nbrp_error_text(known[i].code, known[i].subcode), known[i].text);
	const uint8_t unknown[][2] = { { 0, 0 }, { 1, 4 }, { 2, 6 }, { 3, 2 }, { 4, 1 }, { 5, 2 },
				       { 6, 5 }, { 6, 6 }, { 6, 8 }, { 7, 0 }, { 255, 255 } };
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
		assert_string_equal(nbrp_error_text(unknown[i][0], unknown[i][1]), "unknown error");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_kind_round_trips_however_it_is_fed),
		cmocka_unit_test(bad_frames_are_message_errors_with_a_reason),
		cmocka_unit_test(open_checks),
		cmocka_unit_test(router_names),
		cmocka_unit_test(route_checks),
		cmocka_unit_test(names_must_be_canonical),
		cmocka_unit_test(fast_update_decoding_is_protobuf_cs),
		cmocka_unit_test(common_updates_share_one_copy),
		cmocka_unit_test(notifications),
		cmocka_unit_test(error_texts),
	};
	return cmocka_run_group_tests_name("nbrp", tests, NULL, NULL);
}
