/* lib/dns/dnsrr.c: the header, names and resource records of a DNS message on a wire_reader. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "dnsrr.h"

/* example.com. A, answered: one A for it (owner compressed), one NS in authority, an OPT. */
static const uint8_t answer[] = {
	0x12, 0x34, 0x81, 0x80, 0, 1, 0, 1, 0, 1, 0, 1,
	7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0, 0, 1, 0, 1,
	/* answer: example.com. 300 IN A 192.0.2.1 */
	0xc0, 12, 0, 1, 0, 1, 0, 0, 1, 44, 0, 4, 192, 0, 2, 1,
	/* authority: example.com. 60 IN NS ns.example.com. */
	0xc0, 12, 0, 2, 0, 1, 0, 0, 0, 60, 0, 5, 2, 'n', 's', 0xc0, 12,
	/* additional: OPT, 1232 bytes, extended rcode 1 */
	0, 0, 41, 4, 208, 1, 0, 0, 0, 0, 0,
};
#define RECORDS_OFF 29

static void a_message_walks_record_by_record_with_sections(void **state)
{
	(void)state;
	struct wire_reader r = wire_reader(answer, sizeof(answer));
	struct dns_header h;
	assert_true(dns_header_read(&r, &h));
	assert_int_equal(h.id, 0x1234);
	assert_int_equal(h.flags1, 0x81);
	assert_int_equal(h.qdcount, 1);
	assert_int_equal(h.arcount, 1);
	struct name qname;
	uint16_t qtype, qclass;
	assert_true(dns_question_read(&r, answer, &qname, &qtype, &qclass));
	assert_int_equal(qtype, 1);
	assert_int_equal(qclass, 1);
	assert_int_equal(r.p - answer, RECORDS_OFF);

	struct dns_rr_iter it;
	struct dns_rr rr;
	dns_rr_iter_init(&it, answer, sizeof(answer), RECORDS_OFF, h.ancount, h.nscount, h.arcount);
	assert_int_equal(dns_rr_next(&it, &rr), 1);
	assert_int_equal(rr.section, DNS_SECTION_ANSWER);
	assert_int_equal(rr.type, 1);
	assert_int_equal(rr.ttl, 300);
	assert_int_equal(rr.rdlen, 4);
	assert_memory_equal(rr.rdata, "\xc0\x00\x02\x01", 4);
	assert_false(rr.last);
	assert_int_equal(dns_rr_next(&it, &rr), 1);
	assert_int_equal(rr.section, DNS_SECTION_AUTHORITY);
	assert_int_equal(rr.type, 2);
	/* a name in the RDATA, its pointer read against the whole message */
	struct wire_reader d = wire_reader(rr.rdata, rr.rdlen);
	struct name ns;
	assert_int_equal(dns_name_read(&d, answer, &ns), NAME_OK);
	assert_int_equal(wire_left(&d), 0);
	assert_int_equal(ns.len, 16);
	assert_int_equal(dns_rr_next(&it, &rr), 1);
	assert_int_equal(rr.section, DNS_SECTION_ADDITIONAL);
	assert_int_equal(rr.type, 41);
	assert_int_equal(rr.owner[0], 0);
	assert_int_equal(rr.ttl >> 24, 1);
	assert_true(rr.last);
	assert_int_equal(dns_rr_next(&it, &rr), 0);
	assert_int_equal(dns_rr_iter_offset(&it), sizeof(answer));
}

static void a_record_past_the_end_stops_the_walk(void **state)
{
	(void)state;
	struct dns_rr_iter it;
	struct dns_rr rr;
	/* every cut inside the records: the record it falls in is refused */
	for (size_t len = RECORDS_OFF; len < sizeof(answer); len++) {
		dns_rr_iter_init(&it, answer, len, RECORDS_OFF, 1, 1, 1);
		int rc, n = 0;
		while ((rc = dns_rr_next(&it, &rr)) == 1)
			n++;
		assert_int_equal(rc, -1);
		assert_true(n < 3);
		assert_int_equal(dns_rr_next(&it, &rr), -1);    /* and stays so */
	}
	/* more records counted than there are */
	dns_rr_iter_init(&it, answer, sizeof(answer), RECORDS_OFF, 1, 1, 2);
	for (int i = 0; i < 3; i++)
		assert_int_equal(dns_rr_next(&it, &rr), 1);
	assert_int_equal(dns_rr_next(&it, &rr), -1);
	/* a start past the message */
	dns_rr_iter_init(&it, answer, 10, RECORDS_OFF, 1, 0, 0);
	assert_int_equal(dns_rr_next(&it, &rr), -1);
}

static void a_name_that_cannot_be_stepped_over_is_bad(void **state)
{
	(void)state;
	/* 0x40 and 0x80 label types, a label running past the end, a pointer cut in half */
	static const uint8_t bad[][4] = { { 0x41, 'a', 0, 0 }, { 0x80, 0, 0, 0 }, { 5, 'a', 'b', 'c' }, { 1, 'a', 0xc0, 0 } };
	static const size_t lens[] = { 4, 4, 4, 3 };
	for (size_t i = 0; i < 4; i++) {
		struct wire_reader r = wire_reader(bad[i], lens[i]);
		assert_false(dns_name_skip(&r));
		assert_true(r.bad);
	}
	/* 128 one-byte labels (256 bytes before the root) cannot be a name */
	uint8_t longname[300];
	for (size_t i = 0; i < 128; i++) {
		longname[2 * i] = 1;
		longname[2 * i + 1] = 'a';
	}
	longname[256] = 0;
	struct wire_reader r = wire_reader(longname, 257);
	assert_false(dns_name_skip(&r));
	/* 127 of them can be stepped over (decoding says it is too long) */
	r = wire_reader(longname + 2, 255);
	assert_true(dns_name_skip(&r));
	assert_int_equal(wire_left(&r), 0);
	/* a pointer ends a name */
	static const uint8_t ptr[] = { 1, 'a', 0xc0, 12, 0xff };
	r = wire_reader(ptr, sizeof(ptr));
	assert_true(dns_name_skip(&r));
	assert_int_equal(wire_left(&r), 1);
}

static void a_name_read_past_its_reader_is_refused(void **state)
{
	(void)state;
	/* the question name, read with a reader ending inside it */
	struct wire_reader r = wire_reader(answer, 20);
	wire_take(&r, 12);
	struct name n;
	assert_int_not_equal(dns_name_read(&r, answer, &n), NAME_OK);
	assert_true(r.bad);
	/* a pointer forward (to the answer's own owner) is refused */
	static const uint8_t fwd[] = { 0xc0, RECORDS_OFF };
	uint8_t msg[sizeof(answer)];
	memcpy(msg, answer, sizeof(answer));
	memcpy(msg + 12, fwd, 2);
	r = wire_reader(msg, sizeof(msg));
	wire_take(&r, 12);
	assert_int_not_equal(dns_name_read(&r, msg, &n), NAME_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_message_walks_record_by_record_with_sections),
		cmocka_unit_test(a_record_past_the_end_stops_the_walk),
		cmocka_unit_test(a_name_that_cannot_be_stepped_over_is_bad),
		cmocka_unit_test(a_name_read_past_its_reader_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
