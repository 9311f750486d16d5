/*
 * Zone transfers of aggregates.  The first byte picks the parser:
 *
 *   bit 0 clear: the client's reply reader.  Byte 1 picks AXFR or IXFR,
 *     bytes 2-5 the version held, byte 6 the size of the pieces the rest
 *     (a TCP stream: 2-byte lengths and messages, id 0x1234, aggregate
 *     agg.example) is fed in.  Diffs are applied to a set as the
 *     receiver would; a finished transfer must be consistent.
 *   bit 0 set: the server's query parser; what it accepts, ldns accepts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <ldns/ldns.h>

#include "dns.h"
#include "xfr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct rx {
	struct nameset set;
	int open;               /* 1 inside a full set or diff */
};

static int rx_begin(void *ctx, bool full)
{
	struct rx *r = ctx;
	if (r->open)
		abort();
	r->open = 1;
	if (full)
		nameset_clear(&r->set);
	return 0;
}

static int rx_name(void *ctx, bool add, const uint8_t *w, uint8_t l)
{
	struct rx *r = ctx;
	if (!r->open || !name_wire_canonical(w, l))
		abort();
	int rc = add ? nameset_add(&r->set, w, l) : nameset_remove(&r->set, w, l);
	return rc == 1 ? 0 : -1;
}

static int rx_end(void *ctx, bool full, uint32_t from, uint32_t to)
{
	struct rx *r = ctx;
	if (!r->open || (!full && !serial_gt(to, from)))
		abort();
	r->open = 0;
	return 0;
}

static const struct xfr_in_ops ops = { rx_begin, rx_name, rx_end };

static void reader(const uint8_t *data, size_t size)
{
	if (size < 6)
		return;
	struct name agg;
	name_from_text(&agg, "agg.example", 11);
	uint16_t qtype = data[0] & 1 ? DNS_TYPE_IXFR : DNS_TYPE_AXFR;
	uint32_t held = (uint32_t)data[1] << 24 | (uint32_t)data[2] << 16 | (uint32_t)data[3] << 8 | data[4];
	size_t piece = 1 + data[5] * 16u;
	/* the other bits of the first byte: small caps on names and bytes */
	uint64_t max_names = data[0] & 2 ? (data[0] >> 2) & 7 : 0;
	uint64_t max_bytes = data[0] & 32 ? 12 + (uint64_t)data[4] * 64 : 0;
	data += 6;
	size -= 6;
	struct rx r = { .open = 0 };
	nameset_init(&r.set);
	struct xfr_in in;
	if (xfr_in_init(&in, 0x1234, &agg, qtype, held, &ops, &r) < 0)
		return;
	xfr_in_limit(&in, max_names, max_bytes);
	int rc = XFR_IN_MORE;
	for (size_t off = 0; off < size && rc == XFR_IN_MORE; off += piece) {
		size_t n = size - off < piece ? size - off : piece;
		rc = xfr_in_feed(&in, data + off, n);
	}
	if (rc == XFR_IN_ERROR && !in.err[0])
		abort();
	/* a cap is never passed: the names delivered, the bytes read */
	if (max_names && in.names > max_names && in.over != XFR_IN_OVER_NAMES)
		abort();
	if (max_bytes && in.bytes > max_bytes)
		abort();
	if (rc == XFR_IN_DONE && (r.open || in.form == XFR_IN_NONE))
		abort();
	xfr_in_free(&in);
	nameset_free(&r.set);
}

static void query(const uint8_t *data, size_t size)
{
	struct xfr_query q;
	bool hq;
	int rc = xfr_query_parse(data, size, &q, &hq);
	if (rc == 0) {
		ldns_pkt *p = NULL;
		if (ldns_wire2pkt(&p, data, size) != LDNS_STATUS_OK)
			abort();
		ldns_pkt_free(p);
		if (q.qtype == DNS_TYPE_IXFR && !q.has_serial)
			abort();
	}
	if (rc >= 0) {
		uint8_t buf[DNS_HEADER_LEN + NAME_MAX_WIRE + 4 + DNS_OPT_RR_LEN];
		size_t len = xfr_error_reply(&q, hq, rc ? (unsigned)rc : DNS_RCODE_REFUSED, buf, sizeof(buf));
		ldns_pkt *p = NULL;
		if (len == 0 || ldns_wire2pkt(&p, buf, len) != LDNS_STATUS_OK)
			abort();
		ldns_pkt_free(p);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		query(data + 1, size - 1);
	else
		reader(data + 1, size - 1);
	return 0;
}
