/*
 * Aggregate zone transfers: every reply message is well formed for ldns,
 * and the client's reader turns the replies, cut anywhere, back into the
 * store's set or its diffs; malformed replies are errors with reasons.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <ldns/ldns.h>

#include "dns.h"
#include "log.h"
#include "xfr.h"

#define SIZE 3000
#define STEP 100

static char dir[256];
static struct name agg;

static struct name nm(unsigned i)
{
	char text[64];
	struct name n;
	snprintf(text, sizeof(text), "member-%u.example", i);
	name_from_text(&n, text, strlen(text));
	return n;
}

/* A store whose version v (serial 100 + v) holds members STEP*v .. STEP*v + SIZE - 1. */
static struct aggstore *build(unsigned versions)
{
	char cmd[600], err[512];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	struct aggstore *s;
	assert_int_equal(aggstore_open(&s, dir, &agg, err, sizeof(err)), 0);
	struct nameset m;
	nameset_init(&m);
	for (unsigned i = 0; i < SIZE; i++) {
		struct name n = nm(i);
		nameset_add(&m, n.wire, n.len);
	}
	assert_int_equal(aggstore_replace(s, 100, &m), 0);
	for (unsigned v = 1; v <= versions; v++) {
		for (unsigned i = 0; i < STEP; i++) {
			struct name n = nm(STEP * (v - 1) + i);
			nameset_remove(&m, n.wire, n.len);
			n = nm(STEP * (v - 1) + SIZE + i);
			nameset_add(&m, n.wire, n.len);
		}
		assert_int_equal(aggstore_replace(s, 100 + v, &m), 0);
	}
	nameset_free(&m);
	return s;
}

static struct xfr_query query(uint16_t qtype, uint32_t serial, bool edns)
{
	uint8_t buf[512];
	size_t len = xfr_query_write(0x1234, &agg, qtype, serial, buf, sizeof(buf));
	assert_true(len > 0);
	if (edns) {     /* an OPT RR appended, as dig sends */
		uint8_t opt[] = { 0, 0, 41, 0x10, 0, 0, 0, 0, 0, 0, 0 };
		memcpy(buf + len, opt, sizeof(opt));
		len += sizeof(opt);
		buf[11] = 1;
	}
	ldns_pkt *p = NULL;
	assert_int_equal(ldns_wire2pkt(&p, buf, len), LDNS_STATUS_OK);
	ldns_pkt_free(p);
	struct xfr_query q;
	bool hq;
	assert_int_equal(xfr_query_parse(buf, len, &q, &hq), 0);
	assert_int_equal(q.qtype, qtype);
	assert_int_equal(q.has_serial, qtype == DNS_TYPE_IXFR);
	if (q.has_serial)
		assert_int_equal(q.serial, serial);
	return q;
}

/* What the client's callbacks saw. */
struct seen {
	struct nameset set;             /* the set, diffs applied to it */
	bool full_begun;
	unsigned fulls, diffs;
	uint32_t last_to;
};

static int cb_begin(void *ctx, bool full)
{
	struct seen *s = ctx;
	if (full)
		nameset_clear(&s->set);
	return 0;
}

static int cb_name(void *ctx, bool add, const uint8_t *w, uint8_t l)
{
	struct seen *s = ctx;
	int rc = add ? nameset_add(&s->set, w, l) : nameset_remove(&s->set, w, l);
	return rc == 1 ? 0 : -1;        /* a diff that does not apply */
}

static int cb_end(void *ctx, bool full, uint32_t from, uint32_t to)
{
	struct seen *s = ctx;
	if (full)
		s->fulls++;
	else
		s->diffs++;
	s->last_to = to;
	return 0;
}

static const struct xfr_in_ops ops = { cb_begin, cb_name, cb_end };

/*
 * Writes the whole reply with messages of at most cap bytes, checks each
 * with ldns, and feeds the framed stream to a reader in pieces of random
 * size.  Returns the reader's result.
 */
static int transfer(struct aggstore *s, const struct xfr_query *q, size_t cap, struct seen *seen,
		    struct xfr_in *in, enum xfr_out_kind want_kind, unsigned *records)
{
	struct xfr_out x;
	assert_int_equal(xfr_out_start(&x, s, q), 0);
	assert_int_equal(x.kind, want_kind);
	assert_int_equal(xfr_in_init(in, q->id, &agg, q->qtype, q->has_serial ? q->serial : 0, &ops, seen), 0);
	uint8_t *buf = malloc(2 + DNS_TCP_MAX);
	size_t len;
	int rc = XFR_IN_MORE;
	*records = 0;
	while ((len = xfr_out_next(&x, buf + 2, cap)) > 0) {
		assert_true(len <= cap);
		ldns_pkt *p = NULL;
		assert_int_equal(ldns_wire2pkt(&p, buf + 2, len), LDNS_STATUS_OK);
		assert_true(ldns_pkt_qr(p) && ldns_pkt_aa(p));
		assert_int_equal(ldns_pkt_get_rcode(p), LDNS_RCODE_NOERROR);
		assert_int_equal(ldns_pkt_edns(p), q->has_edns);
		ldns_rr_list *an = ldns_pkt_answer(p);
		for (size_t i = 0; i < ldns_rr_list_rr_count(an); i++) {
			ldns_rr *rr = ldns_rr_list_rr(an, i);
			ldns_rr_type t = ldns_rr_get_type(rr);
			assert_true(t == LDNS_RR_TYPE_SOA || t == LDNS_RR_TYPE_PTR);
			assert_int_equal(ldns_dname_compare(ldns_rr_owner(rr), ldns_rr_owner(ldns_rr_list_rr(an, 0))), 0);
		}
		*records += (unsigned)ldns_rr_list_rr_count(an);
		ldns_pkt_free(p);
		buf[0] = (uint8_t)(len >> 8);
		buf[1] = (uint8_t)len;
		size_t off = 0;
		while (off < len + 2) {
			size_t piece = 1 + (size_t)random() % 700;
			if (piece > len + 2 - off)
				piece = len + 2 - off;
			rc = xfr_in_feed(in, buf + off, piece);
			if (rc < 0)
				fail_msg("reader: %s", in->err);
			off += piece;
		}
	}
	assert_int_equal(x.error, 0);
	assert_int_equal(x.records, *records);
	free(buf);
	xfr_out_free(&x);
	return rc;
}

static void assert_same_set(const struct nameset *a, const struct nameset *b)
{
	assert_int_equal(a->count, b->count);
	size_t pos = 0;
	const uint8_t *w;
	uint8_t l;
	while (nameset_next(a, &pos, &w, &l))
		assert_true(nameset_contains(b, w, l));
}

static void axfr_in_one_or_many_messages(void **state)
{
	struct aggstore *s = build(3);
	size_t caps[] = { DNS_TCP_MAX, 1000, 512 };
	for (int e = 0; e < 2; e++) {
		for (size_t c = 0; c < 3; c++) {
			struct xfr_query q = query(DNS_TYPE_AXFR, 0, e);
			struct seen seen = { 0 };
			nameset_init(&seen.set);
			struct xfr_in in;
			unsigned records;
			assert_int_equal(transfer(s, &q, caps[c], &seen, &in, XFR_OUT_AXFR, &records), XFR_IN_DONE);
			assert_int_equal(records, SIZE + 2);
			assert_int_equal(in.form, XFR_IN_FULL);
			assert_int_equal(seen.fulls, 1);
			assert_int_equal(seen.last_to, 103);
			assert_same_set(&seen.set, aggstore_members(s));
			xfr_in_free(&in);
			nameset_free(&seen.set);
		}
	}
	aggstore_close(s);
}

static void ixfr_chain_fallback_and_current(void **state)
{
	struct aggstore *s = build(5);
	struct xfr_in in;
	unsigned records;

	/* from version 2: three diffs, applied to version 2's set */
	struct seen seen = { 0 };
	nameset_init(&seen.set);
	for (unsigned i = 2 * STEP; i < 2 * STEP + SIZE; i++) {
		struct name n = nm(i);
		nameset_add(&seen.set, n.wire, n.len);
	}
	struct xfr_query q = query(DNS_TYPE_IXFR, 102, true);
	assert_int_equal(transfer(s, &q, 2000, &seen, &in, XFR_OUT_IXFR, &records), XFR_IN_DONE);
	assert_int_equal(records, 2 + 3 * (2 + 2 * STEP));
	assert_int_equal(in.form, XFR_IN_DIFFS);
	assert_int_equal(seen.diffs, 3);
	assert_int_equal(seen.last_to, 105);
	assert_same_set(&seen.set, aggstore_members(s));
	xfr_in_free(&in);

	/* from a version the journal never held: the whole set */
	struct seen full = { 0 };
	nameset_init(&full.set);
	q = query(DNS_TYPE_IXFR, 50, false);
	assert_int_equal(transfer(s, &q, DNS_TCP_MAX, &full, &in, XFR_OUT_IXFR_FULL, &records), XFR_IN_DONE);
	assert_int_equal(in.form, XFR_IN_FULL);
	assert_same_set(&full.set, aggstore_members(s));
	xfr_in_free(&in);

	/* current, and newer than ours: the lone SOA */
	uint32_t held[] = { 105, 200 };
	for (int i = 0; i < 2; i++) {
		struct seen cur = { 0 };
		nameset_init(&cur.set);
		q = query(DNS_TYPE_IXFR, held[i], false);
		assert_int_equal(transfer(s, &q, DNS_TCP_MAX, &cur, &in, XFR_OUT_CURRENT, &records), XFR_IN_DONE);
		assert_int_equal(records, 1);
		assert_int_equal(in.form, XFR_IN_CURRENT);
		assert_int_equal(in.new_serial, 105);
		xfr_in_free(&in);
		nameset_free(&cur.set);
	}

	/* an SOA query */
	q = query(DNS_TYPE_SOA, 0, false);
	struct xfr_out x;
	assert_int_equal(xfr_out_start(&x, s, &q), 0);
	uint8_t buf[512];
	size_t len = xfr_out_next(&x, buf, sizeof(buf));
	ldns_pkt *p = NULL;
	assert_int_equal(ldns_wire2pkt(&p, buf, len), LDNS_STATUS_OK);
	assert_int_equal(ldns_pkt_ancount(p), 1);
	ldns_rr *soa = ldns_rr_list_rr(ldns_pkt_answer(p), 0);
	assert_int_equal(ldns_rdf2native_int32(ldns_rr_rdf(soa, 2)), 105);
	ldns_pkt_free(p);
	assert_int_equal(xfr_out_next(&x, buf, sizeof(buf)), 0);
	xfr_out_free(&x);
	nameset_free(&seen.set);
	nameset_free(&full.set);
	aggstore_close(s);
}

static void query_checks(void **state)
{
	struct xfr_query q;
	bool hq;
	/* an IXFR without its SOA, a second question, trailing bytes, NOTIMP types */
	ldns_rdf *owner = ldns_dname_new_frm_str("agg.example.");
	ldns_pkt *p = ldns_pkt_query_new(ldns_rdf_clone(owner), LDNS_RR_TYPE_IXFR, LDNS_RR_CLASS_IN, 0);
	uint8_t *wire;
	size_t len;
	assert_int_equal(ldns_pkt2wire(&wire, p, &len), LDNS_STATUS_OK);
	assert_int_equal(xfr_query_parse(wire, len, &q, &hq), DNS_RCODE_FORMERR);
	assert_true(hq);
	uint8_t reply[512];
	size_t rlen = xfr_error_reply(&q, hq, DNS_RCODE_FORMERR, reply, sizeof(reply));
	ldns_pkt *r = NULL;
	assert_int_equal(ldns_wire2pkt(&r, reply, rlen), LDNS_STATUS_OK);
	assert_int_equal(ldns_pkt_get_rcode(r), LDNS_RCODE_FORMERR);
	ldns_pkt_free(r);
	free(wire);
	ldns_pkt_free(p);

	/* an IXFR as ldns builds it: the serial is read */
	ldns_rr *soa = NULL;
	assert_int_equal(ldns_rr_new_frm_str(&soa, "agg.example. 0 IN SOA a. b. 777 1 2 3 4", 0, NULL, NULL),
			 LDNS_STATUS_OK);
	p = ldns_pkt_ixfr_request_new(ldns_rdf_clone(owner), LDNS_RR_CLASS_IN, 0, soa);
	assert_int_equal(ldns_pkt2wire(&wire, p, &len), LDNS_STATUS_OK);
	assert_int_equal(xfr_query_parse(wire, len, &q, &hq), 0);
	assert_true(q.has_serial);
	assert_int_equal(q.serial, 777);
	wire[len - 1] ^= 0;
	uint8_t *longer = malloc(len + 1);
	memcpy(longer, wire, len);
	longer[len] = 0;
	assert_int_equal(xfr_query_parse(longer, len + 1, &q, &hq), DNS_RCODE_FORMERR);
	free(longer);
	free(wire);
	ldns_pkt_free(p);

	p = ldns_pkt_query_new(ldns_rdf_clone(owner), LDNS_RR_TYPE_A, LDNS_RR_CLASS_IN, 0);
	assert_int_equal(ldns_pkt2wire(&wire, p, &len), LDNS_STATUS_OK);
	assert_int_equal(xfr_query_parse(wire, len, &q, &hq), DNS_RCODE_NOTIMP);
	rlen = xfr_error_reply(&q, hq, DNS_RCODE_REFUSED, reply, sizeof(reply));
	assert_int_equal(ldns_wire2pkt(&r, reply, rlen), LDNS_STATUS_OK);
	assert_int_equal(ldns_pkt_get_rcode(r), LDNS_RCODE_REFUSED);
	assert_int_equal(ldns_pkt_id(r), ldns_pkt_id(p));
	ldns_pkt_free(r);
	free(wire);
	ldns_pkt_free(p);
	ldns_rdf_deep_free(owner);
	/* a response is no query */
	uint8_t resp[12] = { 0, 1, 0x80 };
	assert_int_equal(xfr_query_parse(resp, sizeof(resp), &q, &hq), -1);
}

/* Feeds one hand-made message (ldns from text) and returns the reader's error. */
static const char *reader_error(uint16_t qtype, uint32_t held, const char *const *rrs, int n, unsigned rcode,
				uint16_t id)
{
	static char err[256];
	ldns_pkt *p = ldns_pkt_new();
	ldns_pkt_set_id(p, id);
	ldns_pkt_set_qr(p, true);
	ldns_pkt_set_rcode(p, (uint8_t)rcode);
	ldns_rr *q = ldns_rr_new();
	ldns_rr_set_owner(q, ldns_dname_new_frm_str("agg.example."));
	ldns_rr_set_type(q, qtype);
	ldns_rr_set_class(q, LDNS_RR_CLASS_IN);
	ldns_rr_set_question(q, true);
	ldns_pkt_push_rr(p, LDNS_SECTION_QUESTION, q);
	for (int i = 0; i < n; i++) {
		ldns_rr *rr = NULL;
		assert_int_equal(ldns_rr_new_frm_str(&rr, rrs[i], 0, NULL, NULL), LDNS_STATUS_OK);
		ldns_pkt_push_rr(p, LDNS_SECTION_ANSWER, rr);
	}
	uint8_t *wire;
	size_t len;
	assert_int_equal(ldns_pkt2wire(&wire, p, &len), LDNS_STATUS_OK);
	struct seen seen = { 0 };
	nameset_init(&seen.set);
	struct name a = nm(1);
	nameset_add(&seen.set, a.wire, a.len);
	struct xfr_in in;
	xfr_in_init(&in, 7, &agg, qtype, held, &ops, &seen);
	int rc = xfr_in_message(&in, wire, len);
	snprintf(err, sizeof(err), "%s", rc < 0 ? in.err : rc == XFR_IN_DONE ? "done" : "more");
	xfr_in_free(&in);
	nameset_free(&seen.set);
	free(wire);
	ldns_pkt_free(p);
	return err;
}

static void reader_rejects_malformed_replies(void **state)
{
	const char *soa5 = "agg.example. 0 IN SOA agg.example. . 5 1 2 3 4";
	const char *soa4 = "agg.example. 0 IN SOA agg.example. . 4 1 2 3 4";
	const char *soa3 = "agg.example. 0 IN SOA agg.example. . 3 1 2 3 4";
	const char *ptr1 = "agg.example. 0 IN PTR member-1.example.";
	const char *ptr2 = "agg.example. 0 IN PTR member-2.example.";
	{
		const char *rrs[] = { soa5, ptr2, soa5 };
		assert_string_equal(reader_error(DNS_TYPE_AXFR, 0, rrs, 3, 0, 7), "done");
		assert_string_equal(reader_error(DNS_TYPE_AXFR, 0, rrs, 3, 0, 8), "message with id 8, expected 7");
		assert_string_equal(reader_error(DNS_TYPE_AXFR, 0, rrs, 0, 5, 7), "the server answered REFUSED");
		assert_string_equal(reader_error(DNS_TYPE_AXFR, 0, rrs, 0, 9, 7), "the server answered NOTAUTH");
		assert_string_equal(reader_error(DNS_TYPE_AXFR, 0, rrs, 2, 0, 7), "more");
	}
	{
		const char *rrs[] = { ptr1, soa5 };
		assert_string_equal(reader_error(DNS_TYPE_AXFR, 0, rrs, 2, 0, 7), "the reply does not start with an SOA");
	}
	{
		const char *rrs[] = { soa5, ptr2, soa5, ptr1 };
		assert_string_equal(reader_error(DNS_TYPE_AXFR, 0, rrs, 4, 0, 7), "a record after the transfer's final SOA");
	}
	{
		const char *rrs[] = { soa5, ptr2, soa4 };
		assert_string_equal(reader_error(DNS_TYPE_AXFR, 0, rrs, 3, 0, 7), "SOA with version 4 inside the AXFR of version 5");
	}
	{
		const char *rrs[] = { soa5, "agg.example. 0 IN A 192.0.2.1", soa5 };
		assert_string_equal(reader_error(DNS_TYPE_AXFR, 0, rrs, 3, 0, 7), "record 1 of type 1 in an aggregate");
	}
	{
		const char *rrs[] = { soa5, "other.example. 0 IN PTR member-2.example.", soa5 };
		assert_string_equal(reader_error(DNS_TYPE_AXFR, 0, rrs, 3, 0, 7), "record 1 is not owned by the aggregate");
	}
	{
		/* IXFR: a diff from a version we do not hold, one that does not apply, a gap */
		const char *rrs[] = { soa5, soa3, ptr1, soa4, ptr2, soa4, soa5, soa5 };
		assert_string_equal(reader_error(DNS_TYPE_IXFR, 3, rrs, 8, 0, 7), "done");
		assert_string_equal(reader_error(DNS_TYPE_IXFR, 2, rrs, 8, 0, 7), "IXFR starts from version 3, we hold 2");
		const char *absent[] = { soa5, soa3, ptr2, soa5, ptr1, soa5 };
		assert_string_equal(reader_error(DNS_TYPE_IXFR, 3, absent, 6, 0, 7), "the receiver refused the transfer's data");
		const char *gap[] = { soa5, soa3, soa4, soa3, soa5, soa5 };
		assert_string_equal(reader_error(DNS_TYPE_IXFR, 3, gap, 6, 0, 7), "diff from version 3 does not continue the one to 4");
		const char *cur[] = { soa3 };
		assert_string_equal(reader_error(DNS_TYPE_IXFR, 3, cur, 1, 0, 7), "done");
	}
}

static unsigned names_seen;

static int count_name(void *ctx, bool add, const uint8_t *w, uint8_t l)
{
	names_seen++;
	return cb_name(ctx, add, w, l);
}

static const struct xfr_in_ops counting = { cb_begin, count_name, cb_end };

/* Feeds the whole reply to q to a reader with the caps, until it ends; the reader's last result. */
static int capped(struct aggstore *s, const struct xfr_query *q, uint64_t max_names, uint64_t max_bytes,
		  struct seen *seen, struct xfr_in *in, uint64_t *total)
{
	struct xfr_out x;
	assert_int_equal(xfr_out_start(&x, s, q), 0);
	assert_int_equal(xfr_in_init(in, q->id, &agg, q->qtype, q->has_serial ? q->serial : 0, &counting, seen), 0);
	xfr_in_limit(in, max_names, max_bytes);
	uint8_t *buf = malloc(2 + DNS_TCP_MAX);
	size_t len;
	int rc = XFR_IN_MORE;
	*total = 0;
	names_seen = 0;
	while (rc == XFR_IN_MORE && (len = xfr_out_next(&x, buf + 2, 1000)) > 0) {
		buf[0] = (uint8_t)(len >> 8);
		buf[1] = (uint8_t)len;
		*total += len + 2;
		rc = xfr_in_feed(in, buf, len + 2);
	}
	free(buf);
	xfr_out_free(&x);
	return rc;
}

/* The caps end a reply while it streams: no name past max_names reaches the receiver, no version ends. */
static void caps_cut_the_reply(void **state)
{
	struct aggstore *s = build(2);
	struct xfr_query q = query(DNS_TYPE_AXFR, 0, false);
	struct seen seen = { 0 };
	nameset_init(&seen.set);
	struct xfr_in in;
	uint64_t total, whole;

	/* exactly at the caps: whole */
	assert_int_equal(capped(s, &q, SIZE, 0, &seen, &in, &whole), XFR_IN_DONE);
	assert_int_equal(names_seen, SIZE);
	xfr_in_free(&in);
	assert_int_equal(capped(s, &q, 0, whole, &seen, &in, &total), XFR_IN_DONE);
	assert_int_equal(in.bytes, whole);
	assert_int_equal(in.over, XFR_IN_UNDER);
	xfr_in_free(&in);
	assert_int_equal(seen.fulls, 2);

	/* one name over: refused at that name, the set never ends */
	seen.fulls = 0;
	assert_int_equal(capped(s, &q, SIZE - 1, 0, &seen, &in, &total), XFR_IN_ERROR);
	assert_int_equal(in.over, XFR_IN_OVER_NAMES);
	assert_string_equal(in.err, "more than 2999 names");
	assert_int_equal(names_seen, SIZE - 1);
	assert_int_equal(seen.fulls, 0);
	xfr_in_free(&in);

	/* one byte short of the reply: its last message is not read */
	assert_int_equal(capped(s, &q, 0, whole - 1, &seen, &in, &total), XFR_IN_ERROR);
	assert_int_equal(in.over, XFR_IN_OVER_BYTES);
	assert_true(in.bytes < whole - 1);
	assert_int_equal(seen.fulls, 0);
	xfr_in_free(&in);

	/* a small byte cap: the first message over it is not read */
	assert_int_equal(capped(s, &q, 0, 1500, &seen, &in, &total), XFR_IN_ERROR);
	assert_int_equal(in.over, XFR_IN_OVER_BYTES);
	assert_string_equal(in.err, "more than 1500 bytes");
	assert_true(in.bytes <= 1500);
	assert_int_equal(seen.fulls, 0);
	xfr_in_free(&in);

	/* IXFR: removed and added members both count (2 versions, STEP each way) */
	struct xfr_query iq = query(DNS_TYPE_IXFR, 100, false);
	struct seen d = { 0 };
	nameset_init(&d.set);
	for (unsigned i = 0; i < SIZE; i++) {   /* version 100 */
		struct name n = nm(i);
		nameset_add(&d.set, n.wire, n.len);
	}
	assert_int_equal(capped(s, &iq, 4 * STEP, 0, &d, &in, &total), XFR_IN_DONE);
	assert_int_equal(d.diffs, 2);
	xfr_in_free(&in);
	nameset_clear(&d.set);
	for (unsigned i = 0; i < SIZE; i++) {
		struct name n = nm(i);
		nameset_add(&d.set, n.wire, n.len);
	}
	assert_int_equal(capped(s, &iq, 4 * STEP - 1, 0, &d, &in, &total), XFR_IN_ERROR);
	assert_int_equal(in.over, XFR_IN_OVER_NAMES);
	assert_int_equal(d.diffs, 3);   /* the first version ended whole; the second did not */
	xfr_in_free(&in);

	nameset_free(&seen.set);
	nameset_free(&d.set);
	aggstore_close(s);
}

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/test_xfr.%d", (int)getpid());
	name_from_text(&agg, "agg.example", 11);
	srandom(3);
	return 0;
}

static int teardown(void **state)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	log_init("test_xfr", LOG_LVL_ERR, false);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(axfr_in_one_or_many_messages),
		cmocka_unit_test(ixfr_chain_fallback_and_current),
		cmocka_unit_test(query_checks),
		cmocka_unit_test(reader_rejects_malformed_replies),
		cmocka_unit_test(caps_cut_the_reply),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
