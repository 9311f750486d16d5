/*
 * Response Policy Zones: the records of a policy zone's transfer and the
 * TSIG on its messages.  The first byte picks:
 *
 *   bit 0 clear: the rest is an AXFR reply (a TCP stream: 2-byte lengths
 *     and messages, id 0x1234, zone rpz.test) read into a zone as inrpd
 *     reads it; its rule table is compiled and every owner in the input,
 *     and names made from it, are looked up.
 *     The zone is dumped as its last good copy and read back: the same
 *     records.
 *   bits 0-1 = 2: the rest is an IXFR reply from serial 1 applied, as a
 *     diff, to a zone of a few rules held: the table made from the one
 *     before and the diff answers as a table compiled whole, and the diff
 *     undone leaves the records held.
 *   bits 0-1 = 3: the rest is a zone's last good copy, read back; with
 *     bit 2, a journal (after its head) replayed onto a zone of a few
 *     rules: it stops where a replay of what it took whole stops.
 *   bits 0-1 = 1: bytes 1-6 are our clock, the rest messages (2-byte
 *     lengths) verified as the reply to a request whose MAC is 32 zero
 *     bytes, under the key xfr.key, and each one alone as a request.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dns.h"
#include "rpz.h"
#include "tsig.h"
#include "wire.h"
#include "xfr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int rx_begin(void *ctx, bool full)
{
	if (full)
		rpz_zone_clear(ctx);
	return 0;
}

static int rx_end(void *ctx, bool full, uint32_t from, uint32_t to)
{
	(void)ctx, (void)full, (void)from, (void)to;
	return 0;
}

static int rx_rr(void *ctx, bool add, const uint8_t *msg, size_t len, const struct dns_rr *rr,
		 const struct name *owner)
{
	const char *why;
	int rc = rpz_zone_change(ctx, add, msg, len, rr, owner, NULL, &why);
	if (rc == -1 && !why)
		abort();
	return rc == -2 ? -1 : 0;
}

static const struct xfr_in_ops ops = { rx_begin, NULL, rx_end, rx_rr };

static void bad(void *arg, const struct name *owner, uint16_t type, const char *why)
{
	(void)arg, (void)type;
	if (!why || owner->len == 0)
		abort();
}

/* An IXFR's records into the zone held, recorded in the diff. */
struct held {
	struct rpz_zone *z;
	struct rpz_diff *d;
};

static int dx_begin(void *ctx, bool full)
{
	(void)ctx;
	return full ? -1 : 0;                   /* the AXFR form: not a diff */
}

static int dx_rr(void *ctx, bool add, const uint8_t *msg, size_t len, const struct dns_rr *rr,
		 const struct name *owner)
{
	struct held *h = ctx;
	const char *why;
	int rc = rpz_zone_change(h->z, add, msg, len, rr, owner, h->d, &why);
	if (rc == -1 && !why)
		abort();
	return rc == -2 || rc == 1 ? -1 : 0;
}

static const struct xfr_in_ops diff_ops = { dx_begin, NULL, rx_end, dx_rr };

/* A zone of a few rules, as held before a diff or a journal. */
static struct rpz_zone *few_rules(const struct name *apex)
{
	static const char *const owners[] = { "a.rpz.test", "*.b.rpz.test", "c.b.rpz.test", "d.rpz.test" };
	struct rpz_zone *z = rpz_zone_new(apex);
	const uint8_t dot[1] = { 0 }, a[4] = { 192, 0, 2, 1 };
	for (unsigned i = 0; z && i < sizeof(owners) / sizeof(owners[0]); i++) {
		struct name o;
		name_from_text(&o, owners[i], strlen(owners[i]));
		if (rpz_zone_put(z, &o, i == 3 ? DNS_TYPE_A : DNS_TYPE_CNAME, 60, i == 3 ? a : dot, i == 3 ? 4 : 1) < 0)
			abort();
	}
	if (!z)
		abort();
	return z;
}

static bool same_hit(const struct rpz_table *x, const struct rpz_table *y, const struct name *q)
{
	struct rpz_hit a, b;
	bool fa = rpz_table_lookup(x, q, &a), fb = rpz_table_lookup(y, q, &b);
	return fa == fb && (!fa || (a.action == b.action && a.ttl == b.ttl && a.data_len == b.data_len &&
				     memcmp(a.data, b.data, a.data_len) == 0));
}

static void diff(const uint8_t *data, size_t size)
{
	struct name apex;
	name_from_text(&apex, "rpz.test", 8);
	struct held h = { few_rules(&apex), rpz_diff_new() };
	uint64_t before = rpz_zone_records(h.z);
	struct rpz_table *t0 = rpz_table_build(h.z, NULL, NULL);
	struct xfr_in in;
	if (!h.d || !t0 || xfr_in_init(&in, 0x1234, &apex, DNS_TYPE_IXFR, 1, &diff_ops, &h) < 0)
		abort();
	int rc = xfr_in_feed(&in, data, size);
	xfr_in_free(&in);
	(void)rc;
	struct rpz_table *t1 = rpz_table_apply(t0, h.z, h.d, bad, NULL);
	struct rpz_table *whole = rpz_table_build(h.z, NULL, NULL);
	if (!t1 || !whole)
		abort();
	const struct rpz_table_stats *s1 = rpz_table_stats(t1), *sw = rpz_table_stats(whole);
	if (memcmp(s1, sw, sizeof(*s1)) != 0)
		abort();
	size_t pos = 0;
	struct name o;
	uint16_t type, rdlen;
	uint32_t ttl;
	const uint8_t *rd;
	while (rpz_zone_walk(h.z, &pos, &o, &type, &ttl, &rd, &rdlen)) {
		struct name q;
		q.len = (uint8_t)(o.len - apex.len + 1);
		memcpy(q.wire, o.wire, q.len - 1u);
		q.wire[q.len - 1] = 0;
		if (!same_hit(t1, whole, &q))
			abort();
		if (q.len + 2 <= NAME_MAX_WIRE) {
			struct name below = { .len = (uint8_t)(q.len + 2) };
			below.wire[0] = 1;
			below.wire[1] = 'x';
			memcpy(below.wire + 2, q.wire, q.len);
			if (!same_hit(t1, whole, &below))
				abort();
		}
	}
	rpz_diff_undo(h.z, h.d);
	if (rpz_zone_records(h.z) != before)
		abort();
	rpz_table_free(whole);
	rpz_table_free(t1);
	rpz_table_free(t0);
	rpz_diff_free(h.d);
	rpz_zone_free(h.z);
}

static void journal(const uint8_t *data, size_t size)
{
	struct name apex;
	name_from_text(&apex, "rpz.test", 8);
	uint8_t *buf = malloc(RPZ_JOURNAL_HEAD + size + 1);
	if (!buf)
		abort();
	rpz_journal_head(buf, 7);
	memcpy(buf + RPZ_JOURNAL_HEAD, data, size);
	size_t len = RPZ_JOURNAL_HEAD + size, good, good2;
	unsigned n, n2;
	const char *why = NULL;
	struct rpz_zone *z = few_rules(&apex), *again = few_rules(&apex);
	struct rpz_dump_head h = { .serial = 1, .epoch = 7 }, h2 = h;
	int rc = rpz_journal_replay(z, buf, len, &h, &good, &n, &why);
	if (rc < 0 || good > len || (rc == 1 && !why) || (rc == 0 && good != len))
		abort();
	/* the whole entries it took, alone, replay to the same serial and records */
	if (rpz_journal_replay(again, buf, good, &h2, &good2, &n2, &why) != 0 || good2 != good || n2 != n ||
	    h2.serial != h.serial || rpz_zone_records(again) != rpz_zone_records(z))
		abort();
	rpz_zone_free(again);
	rpz_zone_free(z);
	free(buf);
}

static void check_hit(const struct rpz_table *t, const struct name *q)
{
	struct rpz_hit hit;
	if (!rpz_table_lookup(t, q, &hit))
		return;
	if (hit.action >= RPZ_ACTIONS)
		abort();
	size_t pos = 0;
	uint16_t type, rdlen;
	uint32_t ttl;
	const uint8_t *rd;
	while (rpz_data_next(&hit, &pos, &type, &ttl, &rd, &rdlen))
		if (pos > hit.data_len)
			abort();
	if (pos != hit.data_len && hit.action == RPZ_LOCAL)
		abort();
}

static void zone(const uint8_t *data, size_t size)
{
	struct name apex;
	name_from_text(&apex, "rpz.test", 8);
	struct rpz_zone *z = rpz_zone_new(&apex);
	struct xfr_in in;
	if (!z || xfr_in_init(&in, 0x1234, &apex, DNS_TYPE_AXFR, 0, &ops, z) < 0)
		abort();
	int rc = xfr_in_feed(&in, data, size);
	xfr_in_free(&in);
	struct rpz_table *t = rpz_table_build(z, bad, NULL);
	if (!t)
		abort();
	const struct rpz_table_stats *st = rpz_table_stats(t);
	if (st->rules + st->bad + st->ignored < st->rules)
		abort();
	/* every owner the zone holds, less the zone, is a name a client could ask */
	size_t pos = 0;
	struct name o;
	uint16_t type, rdlen;
	uint32_t ttl;
	const uint8_t *rd;
	while (rpz_zone_walk(z, &pos, &o, &type, &ttl, &rd, &rdlen)) {
		if (o.len < apex.len)
			abort();
		struct name q;
		q.len = (uint8_t)(o.len - apex.len + 1);
		memcpy(q.wire, o.wire, q.len - 1u);
		q.wire[q.len - 1] = 0;
		check_hit(t, &q);
		struct name below;                      /* one label more: a wildcard's */
		if (q.len + 2 <= NAME_MAX_WIRE) {
			below.wire[0] = 1;
			below.wire[1] = 'x';
			memcpy(below.wire + 2, q.wire, q.len);
			below.len = (uint8_t)(q.len + 2);
			check_hit(t, &below);
		}
	}
	(void)rc;
	struct rpz_dump_head h = { 1, 2, 3 }, back;
	size_t len;
	uint8_t *buf = rpz_zone_dump(z, &h, &len);
	struct rpz_zone *again = rpz_zone_new(&apex);
	const char *why;
	if (!buf || !again || rpz_zone_undump(again, buf, len, &back, &why) < 0 ||
	    rpz_zone_records(again) != rpz_zone_records(z) || back.serial != 1 || back.retry != 3)
		abort();
	free(buf);
	rpz_zone_free(again);
	rpz_table_free(t);
	rpz_zone_free(z);
}

static void copy(const uint8_t *data, size_t size)
{
	struct name apex;
	name_from_text(&apex, "rpz.test", 8);
	struct rpz_zone *z = rpz_zone_new(&apex);
	struct rpz_dump_head h;
	const char *why = NULL;
	if (!z)
		abort();
	if (rpz_zone_undump(z, data, size, &h, &why) < 0 && (!why || rpz_zone_records(z) != 0))
		abort();
	rpz_zone_free(z);
}

static void request(const struct tsig_key *k, const uint8_t *msg, size_t len, uint64_t now)
{
	struct tsig_request req;
	uint8_t out[512];
	const char *why = NULL;
	size_t n = len < DNS_HEADER_LEN ? 0 : DNS_HEADER_LEN;
	memcpy(out, msg, n);
	if (tsig_verify_request(k, msg, len, now, &req, &why) < 0) {
		if (!why || (req.error && req.error != TSIG_BADKEY && req.error != TSIG_BADSIG &&
			     req.error != TSIG_BADTIME))
			abort();
		if (!n || !req.error)
			return;
		/* its error answer: always fits (two names and fixed fields), and never passes for a signed request */
		struct wire_writer w = wire_writer(out, sizeof(out));
		w.len = n;
		wire_store16(out + 4, 0);
		wire_store16(out + 6, 0);
		wire_store16(out + 8, 0);
		wire_store16(out + 10, 0);
		if (!tsig_write_error(&w, k, &req, now))
			abort();
		struct tsig_request back;
		if (tsig_verify_request(k, out, wire_written(&w), now, &back, &why) == 0)
			abort();
		return;
	}
	/* a verified request: its answer signs */
	if (n && tsig_sign_reply(k, out, n, sizeof(out), now, req.mac) == 0)
		abort();
}

static void tsig(const uint8_t *data, size_t size)
{
	if (size < 6)
		return;
	struct tsig_key k = { .secret = "rpz fuzz key", .secret_len = 12 };
	name_from_text(&k.name, "xfr.key", 7);
	uint8_t mac[TSIG_MAC_LEN] = { 0 };
	uint64_t now = (uint64_t)wire_load16(data) << 32 | wire_load32(data + 2);
	struct tsig_stream s;
	tsig_stream_init(&s, &k, mac);
	data += 6;
	size -= 6;
	while (size >= 2) {
		size_t len = wire_load16(data);
		if (len > size - 2)
			break;
		size_t body;
		const char *why;
		request(&k, data + 2, len, now);
		int rc = tsig_stream_verify(&s, data + 2, len, now, &body, &why);
		if (rc < 0 && !why)
			abort();
		if (rc == 0 && (body < DNS_HEADER_LEN || body >= len))
			abort();
		if (rc < 0)
			break;
		data += 2 + len;
		size -= 2 + len;
	}
	(void)tsig_stream_complete(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if ((data[0] & 7) == 7)
		journal(data + 1, size - 1);
	else if ((data[0] & 3) == 3)
		copy(data + 1, size - 1);
	else if (data[0] & 1)
		tsig(data + 1, size - 1);
	else if (data[0] & 2)
		diff(data + 1, size - 1);
	else
		zone(data + 1, size - 1);
	return 0;
}
