/*
 * Zone transfers of aggregates; see xfr.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dns.h"
#include "dnsrr.h"
#include "xfr.h"
#include "wire.h"

#define F1_QR   0x80
#define F1_AA   0x04
#define F1_TC   0x02
#define F1_RD   0x01
#define OPCODE(b) (((b) >> 3) & 0x0f)
#define SOA_FIXED 20            /* serial, refresh, retry, expire, minimum */
#define TYPE_PTR 12

/* Whether the record's owner is n (read with name_from_packet's rules). */
static bool owned_by(const uint8_t *pkt, size_t len, const struct dns_rr *rr, const struct name *n)
{
	struct wire_reader r = wire_reader_at(pkt, len, (size_t)(rr->owner - pkt));
	struct name owner;
	return dns_name_read(&r, pkt, &owner) == NAME_OK && name_equal(&owner, n);
}

/* An SOA's serial: its two names, then the five numbers filling the RDATA; refresh and retry too if asked. */
static bool soa_fields(const uint8_t *pkt, const struct dns_rr *rr, uint32_t *serial, uint32_t *refresh,
		       uint32_t *retry)
{
	struct wire_reader d = wire_reader(rr->rdata, rr->rdlen);
	struct name n;
	dns_name_read(&d, pkt, &n);
	dns_name_read(&d, pkt, &n);
	*serial = wire_u32(&d);
	uint32_t ref = wire_u32(&d), ret = wire_u32(&d);
	wire_take(&d, SOA_FIXED - 12);
	if (refresh) {
		*refresh = ref;
		*retry = ret;
	}
	return !d.bad && wire_left(&d) == 0;
}

static bool soa_serial(const uint8_t *pkt, const struct dns_rr *rr, uint32_t *serial)
{
	return soa_fields(pkt, rr, serial, NULL, NULL);
}

int xfr_query_parse(const uint8_t *pkt, size_t len, struct xfr_query *q, bool *has_question)
{
	memset(q, 0, sizeof(*q));
	*has_question = false;
	struct wire_reader r = wire_reader(pkt, len);
	struct dns_header h;
	if (len > DNS_TCP_MAX || !dns_header_read(&r, &h) || (h.flags1 & F1_QR))
		return -1;
	q->id = h.id;
	q->rd = (h.flags1 & F1_RD) != 0;
	if (OPCODE(h.flags1) != DNS_OPCODE_QUERY)
		return DNS_RCODE_NOTIMP;
	if (h.qdcount != 1 || h.ancount != 0)
		return DNS_RCODE_FORMERR;
	const uint8_t *start = r.p;
	uint16_t qtype, qclass;
	if (!dns_question_read(&r, pkt, &q->qname, &qtype, &qclass) ||
	    (size_t)(r.p - start) != q->qname.len + 4u)
		return DNS_RCODE_FORMERR;       /* a question name is never compressed */
	memcpy(q->qname_orig, start, q->qname.len);
	q->qtype = qtype;
	*has_question = true;

	struct dns_rr_iter it;
	struct dns_rr rr;
	int rc;
	dns_rr_iter_init(&it, pkt, len, (size_t)(r.p - pkt), 0, h.nscount, h.arcount);
	/* IXFR: the client's SOA, owned by the zone (RFC 1995 3) */
	if (q->qtype == DNS_TYPE_IXFR) {
		if (h.nscount != 1)
			return DNS_RCODE_FORMERR;
		if (dns_rr_next(&it, &rr) != 1 || rr.type != DNS_TYPE_SOA || !owned_by(pkt, len, &rr, &q->qname) ||
		    !soa_serial(pkt, &rr, &q->serial))
			return DNS_RCODE_FORMERR;
		q->has_serial = true;
	} else if (h.nscount != 0) {
		return DNS_RCODE_FORMERR;
	}
	/* additional: one OPT at most; a TSIG we cannot verify is refused by the caller's ACL anyway */
	while ((rc = dns_rr_next(&it, &rr)) == 1) {
		if (rr.type != DNS_TYPE_OPT || q->has_edns || rr.owner[0] != 0)
			return DNS_RCODE_FORMERR;
		q->has_edns = true;
	}
	if (rc < 0 || dns_rr_iter_offset(&it) != len)
		return DNS_RCODE_FORMERR;
	if (qclass != DNS_CLASS_IN)
		return DNS_RCODE_REFUSED;
	if (q->qtype != DNS_TYPE_AXFR && q->qtype != DNS_TYPE_IXFR && q->qtype != DNS_TYPE_SOA)
		return DNS_RCODE_NOTIMP;
	return 0;
}

/* Header and question; the counts of answers are filled in by the caller. */
static void put_head(struct wire_writer *w, uint16_t id, uint8_t flags1, unsigned rcode, const uint8_t *qname,
		     uint8_t qlen, uint16_t qtype, bool with_question, bool edns)
{
	wire_put16(w, id);
	wire_put8(w, flags1);
	wire_put8(w, (uint8_t)(rcode & 0x0f));
	wire_put16(w, with_question ? 1 : 0);
	wire_put16(w, 0);                       /* ANCOUNT */
	wire_put16(w, 0);                       /* NSCOUNT */
	wire_put16(w, edns ? 1 : 0);
	if (with_question) {
		wire_put(w, qname, qlen);
		wire_put16(w, qtype);
		wire_put16(w, DNS_CLASS_IN);
	}
}

static void put_opt(struct wire_writer *w)
{
	static const uint8_t zero[6];
	wire_put8(w, 0);
	wire_put16(w, DNS_TYPE_OPT);
	wire_put16(w, DNS_EDNS_MAX);
	wire_put(w, zero, sizeof(zero));        /* extended rcode, version, flags, RDLENGTH */
}

/* An SOA RR of the aggregate: owner and MNAME point at the question, RNAME is the root. */
static void put_soa(struct wire_writer *w, uint32_t serial, bool timers)
{
	wire_put16(w, 0xC000 | DNS_HEADER_LEN);
	wire_put16(w, DNS_TYPE_SOA);
	wire_put16(w, DNS_CLASS_IN);
	wire_put32(w, 0);
	wire_put16(w, 2 + 1 + SOA_FIXED);
	wire_put16(w, 0xC000 | DNS_HEADER_LEN);
	wire_put8(w, 0);
	wire_put32(w, serial);
	wire_put32(w, timers ? XFR_SOA_REFRESH : 0);
	wire_put32(w, timers ? XFR_SOA_RETRY : 0);
	wire_put32(w, timers ? XFR_SOA_EXPIRE : 0);
	wire_put32(w, timers ? XFR_SOA_MINIMUM : 0);
}

size_t xfr_error_reply(const struct xfr_query *q, bool with_question, unsigned rcode, uint8_t *buf, size_t cap)
{
	struct wire_writer w = wire_writer(buf, cap);
	put_head(&w, q->id, F1_QR | (q->rd ? F1_RD : 0), rcode, q->qname_orig, q->qname.len, q->qtype,
		 with_question, q->has_edns);
	if (q->has_edns)
		put_opt(&w);
	return w.bad ? 0 : wire_written(&w);
}

/*
 * The reply as a sequence of items (an SOA or a member's PTR), walked by
 * a small state machine: peek the next item, write it if it fits, advance.
 */
enum step { S_FIRST, S_LIST, S_DIFF_OLD, S_DIFF_DELS, S_DIFF_NEW, S_DIFF_ADDS, S_LAST, S_DONE };

const char *xfr_out_kind_name(enum xfr_out_kind k)
{
	switch (k) {
	case XFR_OUT_AXFR: return "AXFR";
	case XFR_OUT_IXFR: return "IXFR";
	case XFR_OUT_IXFR_FULL: return "IXFR as AXFR (journal does not reach back)";
	case XFR_OUT_CURRENT: return "IXFR, client current";
	case XFR_OUT_SOA: return "SOA";
	}
	return "?";
}

int xfr_out_start(struct xfr_out *x, struct aggstore *s, const struct xfr_query *q)
{
	memset(x, 0, sizeof(*x));
	x->diffs.fd = -1;
	namelist_init(&x->members);
	if (!aggstore_version(s, &x->serial))
		return -EAGAIN;
	x->id = q->id;
	x->qtype = q->qtype;
	x->qname_len = q->qname.len;
	memcpy(x->qname, q->qname_orig, q->qname.len);
	x->rd = q->rd;
	x->edns = q->has_edns;
	x->step = S_FIRST;
	if (q->qtype == DNS_TYPE_SOA) {
		x->kind = XFR_OUT_SOA;
		return 0;
	}
	x->kind = XFR_OUT_AXFR;
	if (q->qtype == DNS_TYPE_IXFR) {
		int rc = aggstore_diffs_open(s, q->serial, &x->diffs);
		if (rc < 0)
			return rc;
		if (rc == AGGSTORE_DIFFS) {
			x->kind = XFR_OUT_IXFR;
			return 0;
		}
		if (rc == AGGSTORE_CURRENT) {
			x->kind = XFR_OUT_CURRENT;
			return 0;
		}
		x->kind = XFR_OUT_IXFR_FULL;
	}
	if (nameset_to_list(aggstore_members(s), &x->members) < 0)
		return -ENOMEM;
	return 0;
}

void xfr_out_free(struct xfr_out *x)
{
	namelist_free(&x->members);
	if (x->diffs.fd >= 0 || x->diffs.recs)
		aggstore_diffs_close(&x->diffs);
	x->step = S_DONE;
}

static void set_list(struct xfr_out *x, const uint8_t *list, size_t len)
{
	x->list = list;
	x->list_len = len;
	x->list_pos = 0;
}

/* The next item: 1 (an SOA with *serial, or a member *w), 0 when done, -1 on error. */
static int peek(struct xfr_out *x, bool *soa, uint32_t *serial, const uint8_t **w, uint8_t *l)
{
	for (;;) {
		switch (x->step) {
		case S_FIRST:
		case S_LAST:
			*soa = true;
			*serial = x->serial;
			return 1;
		case S_LIST:
		case S_DIFF_DELS:
		case S_DIFF_ADDS:
			if (x->list_pos < x->list_len) {
				*soa = false;
				*l = x->list[x->list_pos];
				*w = x->list + x->list_pos + 1;
				return 1;
			}
			x->step = x->step == S_LIST ? S_LAST : x->step == S_DIFF_DELS ? S_DIFF_NEW : S_DIFF_OLD;
			if (x->step == S_DIFF_OLD)
				x->diff.from = x->diff.to = 0, x->list = NULL;
			continue;
		case S_DIFF_OLD:
			if (!x->list) {
				int rc = aggstore_diffs_next(&x->diffs, &x->diff);
				if (rc < 0) {
					x->error = rc;
					return -1;
				}
				if (rc == 0) {
					x->step = S_LAST;
					continue;
				}
				set_list(x, x->diff.dels, x->diff.dels_len);
			}
			*soa = true;
			*serial = x->diff.from;
			return 1;
		case S_DIFF_NEW:
			*soa = true;
			*serial = x->diff.to;
			return 1;
		default:
			return 0;
		}
	}
}

static void advance(struct xfr_out *x)
{
	switch (x->step) {
	case S_FIRST:
		if (x->kind == XFR_OUT_AXFR || x->kind == XFR_OUT_IXFR_FULL) {
			x->step = S_LIST;
			set_list(x, x->members.buf, x->members.len);
		} else if (x->kind == XFR_OUT_IXFR) {
			x->step = S_DIFF_OLD;
			x->list = NULL;
		} else {
			x->step = S_DONE;
		}
		break;
	case S_LIST:
	case S_DIFF_DELS:
	case S_DIFF_ADDS:
		x->list_pos += 1u + x->list[x->list_pos];
		break;
	case S_DIFF_OLD:
		x->step = S_DIFF_DELS;          /* the list was set by peek */
		break;
	case S_DIFF_NEW:
		x->step = S_DIFF_ADDS;
		set_list(x, x->diff.adds, x->diff.adds_len);
		break;
	case S_LAST:
		x->step = S_DONE;
		break;
	}
}

size_t xfr_out_next(struct xfr_out *x, uint8_t *buf, size_t cap)
{
	if (x->step == S_DONE || x->error)
		return 0;
	if (cap > DNS_TCP_MAX)
		cap = DNS_TCP_MAX;
	size_t reserve = x->edns ? DNS_OPT_RR_LEN : 0;
	/* the records leave room for the OPT RR */
	struct wire_writer w = wire_writer(buf, cap > reserve ? cap - reserve : 0);
	put_head(&w, x->id, F1_QR | F1_AA | (x->rd ? F1_RD : 0), 0, x->qname, x->qname_len, x->qtype, true,
		 x->edns);
	if (w.bad) {
		x->error = -EMSGSIZE;
		return 0;
	}
	unsigned an = 0;
	bool soa;
	uint32_t serial;
	const uint8_t *m;
	uint8_t l;
	int rc;
	/*
	 * A member's last label (its TLD, most often one of a few) points at
	 * where that label was first written in this message.
	 */
	uint16_t tld_off[8];
	unsigned ntld = 0;
	while (an < UINT16_MAX && (rc = peek(x, &soa, &serial, &m, &l)) == 1) {
		size_t last = 0, tld = SIZE_MAX;
		if (!soa) {
			/* our own member list: names checked when they were stored */
			for (size_t p = 0; m[p] != 0; p += 1u + m[p])
				last = p;
			for (unsigned i = 0; i < ntld && last > 0; i++)
				if (buf[tld_off[i]] == m[last] && memcmp(buf + tld_off[i], m + last, l - last) == 0) {
					tld = tld_off[i];
					break;
				}
		}
		/* the record goes into a copy of the writer, kept only if it fits */
		struct wire_writer t = w;
		size_t at = wire_written(&w);
		if (soa) {
			put_soa(&t, serial, true);
		} else {
			wire_put16(&t, 0xC000 | DNS_HEADER_LEN);
			wire_put16(&t, TYPE_PTR);
			wire_put16(&t, DNS_CLASS_IN);
			wire_put32(&t, 0);
			if (tld != SIZE_MAX) {
				wire_put16(&t, (uint16_t)(last + 2));
				wire_put(&t, m, last);
				wire_put16(&t, (uint16_t)(0xC000 | tld));
			} else {
				wire_put16(&t, l);
				wire_put(&t, m, l);
				if (last > 0 && ntld < 8 && at + 12 + last < 0x4000)
					tld_off[ntld++] = (uint16_t)(at + 12 + last);
			}
		}
		if (t.bad)
			break;
		w = t;
		an++;
		advance(x);
	}
	if (x->error)
		return 0;
	if (an == 0 && x->step != S_DONE) {
		x->error = -EMSGSIZE;   /* not even one record fits */
		return 0;
	}
	wire_store16(buf + 6, (uint16_t)an);    /* ANCOUNT, in the header written above */
	w.room = cap;                           /* the room kept for the OPT RR */
	if (x->edns)
		put_opt(&w);
	size_t o = wire_written(&w);
	x->bytes += o;
	x->messages++;
	x->records += an;
	return o;
}

size_t xfr_query_write(uint16_t id, const struct name *agg, uint16_t qtype, uint32_t held,
		       uint8_t *buf, size_t cap)
{
	struct wire_writer w = wire_writer(buf, cap);
	bool ixfr = qtype == DNS_TYPE_IXFR;
	wire_put16(&w, id);
	wire_put16(&w, 0);                      /* a query, opcode QUERY */
	wire_put16(&w, 1);
	wire_put16(&w, 0);
	wire_put16(&w, ixfr ? 1 : 0);           /* the SOA we hold, in the authority section */
	wire_put16(&w, 0);
	wire_put(&w, agg->wire, agg->len);
	wire_put16(&w, qtype);
	wire_put16(&w, DNS_CLASS_IN);
	if (ixfr)
		put_soa(&w, held, false);
	return w.bad ? 0 : wire_written(&w);
}

/* The client's reader. */
enum in_state { I_START, I_FIRST, I_AXFR, I_DELS, I_ADDS, I_DONE, I_FAILED };

int xfr_in_init(struct xfr_in *x, uint16_t id, const struct name *agg, uint16_t qtype, uint32_t held,
		const struct xfr_in_ops *ops, void *ctx)
{
	memset(x, 0, sizeof(*x));
	x->id = id;
	x->agg = *agg;
	x->qtype = qtype;
	x->have_serial = qtype == DNS_TYPE_IXFR;
	x->held = held;
	x->ops = ops;
	x->ctx = ctx;
	x->state = I_START;
	x->msg = malloc(DNS_TCP_MAX);
	return x->msg ? 0 : -1;
}

void xfr_in_limit(struct xfr_in *x, uint64_t max_names, uint64_t max_bytes)
{
	x->max_names = max_names;
	x->max_bytes = max_bytes;
}

void xfr_in_tsig(struct xfr_in *x, struct tsig_stream *ts)
{
	x->tsig = ts;
}

void xfr_in_free(struct xfr_in *x)
{
	free(x->msg);
	x->msg = NULL;
}

static int in_fail(struct xfr_in *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int in_fail(struct xfr_in *x, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(x->err, sizeof(x->err), fmt, ap);
	va_end(ap);
	x->state = I_FAILED;
	return XFR_IN_ERROR;
}

static const char *rcode_name(unsigned rcode)
{
	const char *name = dns_rcode_name(rcode);
	return name ? name : "an unknown rcode";
}

/* One answer record, already in bounds: the state machine of RFC 1995 and 5936. */
/* What a record that is not the zone's SOA carries: an aggregate's member, or a zone's record. */
struct in_item {
	const struct name *member;
	const uint8_t *pkt;
	size_t len;
	const struct dns_rr *rr;
	const struct name *owner;
};

static int emit(struct xfr_in *x, bool add, const struct in_item *it)
{
	if (x->ops->rr)
		return x->ops->rr(x->ctx, add, it->pkt, it->len, it->rr, it->owner);
	return x->ops->name(x->ctx, add, it->member->wire, it->member->len);
}

static int in_record(struct xfr_in *x, bool soa, uint32_t serial, const struct in_item *it,
		     bool last_in_first_message)
{
	int cb = 0;
	x->records++;
	if (!soa && x->max_names && ++x->names > x->max_names) {
		x->over = XFR_IN_OVER_NAMES;
		return in_fail(x, "more than %llu names", (unsigned long long)x->max_names);
	}
	switch (x->state) {
	case I_START:
		if (!soa)
			return in_fail(x, "the reply does not start with an SOA");
		x->new_serial = serial;
		x->state = I_FIRST;
		/* RFC 1995 4: a lone SOA no newer than ours says we are current */
		if (last_in_first_message && x->have_serial && !serial_gt(serial, x->held)) {
			x->form = XFR_IN_CURRENT;
			x->state = I_DONE;
		}
		return XFR_IN_MORE;
	case I_FIRST:
		if (!soa) {
			x->form = XFR_IN_FULL;
			x->state = I_AXFR;
			if (x->ops->begin(x->ctx, true) < 0 || emit(x, true, it) < 0)
				return in_fail(x, "the receiver refused the transfer's data");
			return XFR_IN_MORE;
		}
		if (serial == x->new_serial) {          /* an empty set */
			x->form = XFR_IN_FULL;
			x->state = I_DONE;
			if (x->ops->begin(x->ctx, true) < 0 || x->ops->end(x->ctx, true, 0, serial) < 0)
				return in_fail(x, "the receiver refused the transfer's data");
			return XFR_IN_MORE;
		}
		if (!x->have_serial || serial != x->held) {
			x->gap = true;
			return in_fail(x, "IXFR starts from version %u, we hold %s%u", serial,
				       x->have_serial ? "" : "none, asked AXFR ", x->held);
		}
		x->form = XFR_IN_DIFFS;
		x->from = serial;
		x->state = I_DELS;
		if (x->ops->begin(x->ctx, false) < 0)
			return in_fail(x, "the receiver refused the transfer's data");
		return XFR_IN_MORE;
	case I_AXFR:
		if (soa) {
			if (serial != x->new_serial)
				return in_fail(x, "SOA with version %u inside the AXFR of version %u", serial, x->new_serial);
			x->state = I_DONE;
			cb = x->ops->end(x->ctx, true, 0, serial);
		} else {
			cb = emit(x, true, it);
		}
		break;
	case I_DELS:
		if (soa) {
			if (!serial_gt(serial, x->from))
				return in_fail(x, "diff from version %u to %u, not newer", x->from, serial);
			x->to = serial;
			x->state = I_ADDS;
		} else {
			cb = emit(x, false, it);
		}
		break;
	case I_ADDS:
		if (!soa) {
			cb = emit(x, true, it);
			break;
		}
		if (x->ops->end(x->ctx, false, x->from, x->to) < 0)
			return in_fail(x, "the receiver refused the diff from %u to %u", x->from, x->to);
		if (serial == x->new_serial && x->to == x->new_serial) {
			x->state = I_DONE;
			return XFR_IN_MORE;
		}
		if (serial != x->to) {
			x->gap = true;
			return in_fail(x, "diff from version %u does not continue the one to %u", serial, x->to);
		}
		if (x->to == x->new_serial)
			return in_fail(x, "diffs go past the final version %u", x->new_serial);
		x->from = serial;
		x->state = I_DELS;
		cb = x->ops->begin(x->ctx, false);
		break;
	case I_DONE:
		return in_fail(x, "a record after the transfer's final SOA");
	default:
		return XFR_IN_ERROR;
	}
	if (cb < 0)
		return in_fail(x, "the receiver refused the transfer's data");
	return XFR_IN_MORE;
}

int xfr_in_message(struct xfr_in *x, const uint8_t *pkt, size_t len)
{
	if (x->state == I_FAILED)
		return XFR_IN_ERROR;
	if (x->state == I_DONE)
		return in_fail(x, "a message after the end of the transfer");
	x->messages++;
	x->bytes += len;
	struct wire_reader r = wire_reader(pkt, len);
	struct dns_header h;
	if (len > DNS_TCP_MAX || !dns_header_read(&r, &h))
		return in_fail(x, "message of %zu bytes", len);
	if (h.id != x->id)
		return in_fail(x, "message with id %u, expected %u", h.id, x->id);
	if (!(h.flags1 & F1_QR) || OPCODE(h.flags1) != DNS_OPCODE_QUERY)
		return in_fail(x, "not a response to a query");
	if (h.flags2 & 0x0f)
		return in_fail(x, "the server answered %s", rcode_name(h.flags2 & 0x0f));
	if (h.flags1 & F1_TC)
		return in_fail(x, "truncated message (TC) in a transfer");
	if (x->tsig) {
		const char *why;
		size_t body;
		int t = tsig_stream_verify(x->tsig, pkt, len, (uint64_t)time(NULL), &body, &why);
		if (t < 0) {
			x->tsig_failed = true;
			return in_fail(x, "TSIG: %s", why);
		}
		if (t == 0) {
			len = body;             /* the records before it */
			h.arcount--;
		}
	}
	if (h.qdcount > 1 || (h.qdcount == 0 && x->messages == 1))
		return in_fail(x, "%u questions", h.qdcount);
	if (h.nscount != 0)
		return in_fail(x, "records in the authority section");
	if (h.ancount == 0)
		return in_fail(x, "a message without answers");
	if (h.qdcount == 1) {
		struct name q;
		uint16_t qtype, qclass;
		if (!dns_question_read(&r, pkt, &q, &qtype, &qclass))
			return in_fail(x, "bad question");
		if (!name_equal(&q, &x->agg) || qtype != x->qtype || qclass != DNS_CLASS_IN)
			return in_fail(x, "the answer is to another question");
	}
	bool first = x->state == I_START;
	struct dns_rr_iter it;
	struct dns_rr rr;
	int rc;
	dns_rr_iter_init(&it, pkt, len, (size_t)(r.p - pkt), h.ancount, 0, h.arcount);
	while ((rc = dns_rr_next(&it, &rr)) == 1) {
		unsigned i = rr.index;
		if (rr.section == DNS_SECTION_ADDITIONAL) {
			if (rr.type != DNS_TYPE_OPT || rr.owner[0] != 0)
				return in_fail(x, "unexpected additional record");
			continue;
		}
		struct wire_reader o = wire_reader(rr.owner, (size_t)(pkt + len - rr.owner));
		struct name owner;
		if (dns_name_read(&o, pkt, &owner) != NAME_OK)
			return in_fail(x, "record %u: bad owner name", i);
		bool apex = name_equal(&owner, &x->agg);
		if (x->ops->rr ? !name_is_subdomain(&owner, &x->agg) : !apex)
			return in_fail(x, "record %u is not owned by the %s", i, x->ops->rr ? "zone" : "aggregate");
		if (rr.rclass != DNS_CLASS_IN)
			return in_fail(x, "record %u of class %u", i, rr.rclass);
		uint32_t serial = 0;
		struct name member;
		struct in_item item = { &member, pkt, len, &rr, &owner };
		if (rr.type == DNS_TYPE_SOA && apex) {
			bool first_soa = x->state == I_START;
			if (!soa_fields(pkt, &rr, &serial, first_soa ? &x->soa_refresh : NULL, &x->soa_retry))
				return in_fail(x, "record %u: bad SOA data", i);
		} else if (x->ops->rr) {
			/* a zone's record: the receiver reads it */
		} else if (rr.type == TYPE_PTR) {
			struct wire_reader d = wire_reader(rr.rdata, rr.rdlen);
			if (dns_name_read(&d, pkt, &member) != NAME_OK || wire_left(&d) != 0)
				return in_fail(x, "record %u: bad PTR data", i);
			if (member.len == 1)
				return in_fail(x, "record %u: the root as a member", i);
		} else {
			return in_fail(x, "record %u of type %u in an aggregate", i, rr.type);
		}
		int st = in_record(x, rr.type == DNS_TYPE_SOA && apex, serial, &item, first && h.ancount == 1);
		if (st < 0)
			return st;
	}
	if (rc < 0)
		return in_fail(x, "record %u runs past the message", it.next);
	if (dns_rr_iter_offset(&it) != len)
		return in_fail(x, "%zu bytes after the records", len - dns_rr_iter_offset(&it));
	if (x->state == I_DONE && x->tsig && !tsig_stream_complete(x->tsig)) {
		x->tsig_failed = true;
		return in_fail(x, "TSIG: the last message is not signed");
	}
	return x->state == I_DONE ? XFR_IN_DONE : XFR_IN_MORE;
}

int xfr_in_feed(struct xfr_in *x, const uint8_t *data, size_t len)
{
	int rc = x->state == I_DONE ? XFR_IN_DONE : XFR_IN_MORE;
	while (len > 0) {
		if (x->state == I_FAILED)
			return XFR_IN_ERROR;
		if (x->state == I_DONE)
			return in_fail(x, "bytes after the end of the transfer");
		if (x->need == 0) {
			x->lenbuf[x->have++] = *data++;
			len--;
			if (x->have == 2) {
				x->need = wire_load16(x->lenbuf);
				x->have = 0;
				if (x->need < DNS_HEADER_LEN)
					return in_fail(x, "message of %zu bytes", x->need);
				/* the cap holds before the message is read, not after */
				if (x->max_bytes && x->bytes + 2 + x->need > x->max_bytes) {
					x->over = XFR_IN_OVER_BYTES;
					return in_fail(x, "more than %llu bytes", (unsigned long long)x->max_bytes);
				}
			}
			continue;
		}
		size_t n = x->need - x->have < len ? x->need - x->have : len;
		memcpy(x->msg + x->have, data, n);
		x->have += n;
		data += n;
		len -= n;
		if (x->have == x->need) {
			size_t mlen = x->need;
			x->need = x->have = 0;
			rc = xfr_in_message(x, x->msg, mlen);
			x->bytes += 2;
			if (rc < 0)
				return rc;
		}
	}
	return x->state == I_FAILED ? XFR_IN_ERROR : rc;
}
