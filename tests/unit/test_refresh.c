/*
 * inrpd/refresh.c: which questions asked lately a route change fetches
 * again, and when: one pass at once, the next no sooner than
 * REFRESH_GAP_MS after it; popular questions keep their slots; an ask in
 * flight along the same route is not repeated.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "dns.h"
#include "refresh.h"

static void query(struct dns_query *q, const char *name, uint16_t type, bool edns_do)
{
	uint8_t pkt[512];
	struct name n;
	assert_int_equal(name_from_text(&n, name, strlen(name)), NAME_OK);
	struct dns_query_spec s = { .id = 7, .qname = n.wire, .qname_len = n.len, .qtype = type,
				    .qclass = DNS_CLASS_IN, .rd = true, .edns = true, .edns_do = edns_do,
				    .udp_size = 1232 };
	size_t len = dns_query_write(&s, pkt, sizeof(pkt));
	assert_true(len > 0);
	assert_int_equal(dns_query_parse(pkt, len, q), DNS_PARSE_OK);
}

/* The pass's questions, parsed, into out; returns how many. */
static unsigned pass(struct refresh *r, uint64_t now, struct dns_query *out, unsigned max, unsigned *slots)
{
	uint8_t buf[512];
	unsigned n = 0, slot;
	size_t len;
	while ((len = refresh_next(r, now, buf, sizeof(buf), &slot))) {
		assert_true(n < max);
		assert_int_equal(dns_query_parse(buf, len, &out[n]), DNS_PARSE_OK);
		if (slots)
			slots[n] = slot;
		n++;
	}
	return n;
}

static void a_route_change_asks_the_question_again(void **state)
{
	(void)state;
	struct refresh *r = refresh_create(64);
	struct dns_query q, got[4];
	query(&q, "www.Example.content", DNS_TYPE_AAAA, true);
	refresh_note(r, 11, &q, 1000);

	assert_int_equal(refresh_timeout(r, 1000), -1);         /* nothing changed: no pass */
	assert_false(refresh_begin(r, 1000));
	refresh_routes_changed(r, 1001);
	assert_int_equal(refresh_timeout(r, 1001), 0);
	assert_true(refresh_begin(r, 1001));
	assert_int_equal(pass(r, 1001, got, 4, NULL), 1);
	assert_true(name_equal(&got[0].qname, &q.qname));
	assert_int_equal(got[0].qtype, DNS_TYPE_AAAA);
	assert_true(got[0].rd);
	assert_true(got[0].has_edns);
	assert_true(got[0].edns_do);
	assert_int_equal(refresh_timeout(r, 1001), -1);         /* the pass is over */
	refresh_free(r);
}

static void changes_close_together_make_one_more_pass_after_the_gap(void **state)
{
	(void)state;
	struct refresh *r = refresh_create(64);
	struct dns_query q, got[4];
	query(&q, "a.content", DNS_TYPE_A, false);
	refresh_note(r, 5, &q, 100);
	refresh_routes_changed(r, 200);
	assert_true(refresh_begin(r, 200));
	assert_int_equal(pass(r, 200, got, 4, NULL), 1);

	refresh_routes_changed(r, 201);
	refresh_routes_changed(r, 202);
	assert_int_equal(refresh_timeout(r, 202), 200 + REFRESH_GAP_MS - 202);
	assert_false(refresh_begin(r, 202));
	assert_true(refresh_begin(r, 200 + REFRESH_GAP_MS));
	assert_int_equal(pass(r, 200 + REFRESH_GAP_MS, got, 4, NULL), 1);
	assert_int_equal(refresh_timeout(r, 200 + REFRESH_GAP_MS), -1);

	/* long after: at once again */
	refresh_routes_changed(r, 900);
	assert_int_equal(refresh_timeout(r, 900), 0);
	refresh_free(r);
}

static void a_question_not_asked_lately_is_left_alone(void **state)
{
	(void)state;
	struct refresh *r = refresh_create(64);
	struct dns_query q, got[4];
	query(&q, "old.content", DNS_TYPE_A, false);
	refresh_note(r, 9, &q, 1000);
	uint64_t later = 1000 + REFRESH_RECENT_MS + 1;
	refresh_routes_changed(r, later);
	assert_true(refresh_begin(r, later));
	assert_int_equal(pass(r, later, got, 4, NULL), 0);
	refresh_free(r);
}

static void a_question_still_asked_keeps_its_slot(void **state)
{
	(void)state;
	struct refresh *r = refresh_create(8);
	struct dns_query popular, other, got[4];
	query(&popular, "popular.content", DNS_TYPE_A, false);
	query(&other, "other.content", DNS_TYPE_A, false);
	refresh_note(r, 3, &popular, 1000);
	assert_int_equal(refresh_note(r, 3 + 8, &other, 1500), REFRESH_NO_SLOT);  /* its slot, held */
	refresh_routes_changed(r, 1600);
	assert_true(refresh_begin(r, 1600));
	assert_int_equal(pass(r, 1600, got, 4, NULL), 1);
	assert_true(name_equal(&got[0].qname, &popular.qname));

	/* not asked for REFRESH_KEEP_MS: the slot goes to the next question */
	uint64_t t = 1000 + REFRESH_KEEP_MS;
	refresh_note(r, 3 + 8, &other, t);
	refresh_routes_changed(r, t + 1);
	assert_true(refresh_begin(r, t + 1));
	assert_int_equal(pass(r, t + 1, got, 4, NULL), 1);
	assert_true(name_equal(&got[0].qname, &other.qname));
	refresh_free(r);
}

static void an_ask_in_flight_along_the_same_route_is_not_repeated(void **state)
{
	(void)state;
	struct refresh *r = refresh_create(64);
	struct dns_query q;
	query(&q, "busy.content", DNS_TYPE_A, false);
	unsigned slot = refresh_note(r, 21, &q, 100);
	assert_int_not_equal(slot, REFRESH_NO_SLOT);
	assert_true(refresh_wanted(r, slot, 0xaa, 100, 1000));
	refresh_started(r, slot, 0xaa, 100);            /* a client's ask along route aa */
	assert_false(refresh_wanted(r, slot, 0xaa, 200, 1000));
	assert_true(refresh_wanted(r, slot, 0xbb, 200, 1000));  /* the route changed since */
	assert_true(refresh_wanted(r, slot, 0xaa, 1100, 1000)); /* never heard of: out too long */
	refresh_started(r, slot, 0xbb, 300);            /* ours, ended */
	refresh_done(r, slot);
	assert_true(refresh_wanted(r, slot, 0xbb, 301, 1000));
	assert_false(refresh_wanted(r, REFRESH_NO_SLOT, 0xbb, 301, 1000));
	refresh_free(r);
}

/* A question noted by a clock a few ms ahead of the pass's (a precise
 * clock against a coarse one) was asked just now: it is fetched again,
 * and keeps its slot. */
static void a_question_noted_a_little_ahead_of_the_pass_is_recent(void **state)
{
	(void)state;
	struct refresh *r = refresh_create(1);
	struct dns_query q, other, got[2];
	query(&q, "www.mv.content", DNS_TYPE_A, false);
	query(&other, "other.content", DNS_TYPE_A, false);
	refresh_note(r, 11, &q, 1004);
	assert_int_equal(refresh_note(r, 12, &other, 1000), REFRESH_NO_SLOT);
	refresh_routes_changed(r, 1001);
	assert_true(refresh_begin(r, 1001));
	assert_int_equal(pass(r, 1001, got, 2, NULL), 1);
	assert_true(name_equal(&got[0].qname, &q.qname));
	refresh_free(r);
}

static void sizes_are_checked(void **state)
{
	(void)state;
	assert_null(refresh_create(0));
	assert_null(refresh_create(REFRESH_MAX_SLOTS + 1));
	struct refresh *r = refresh_create(1);
	assert_non_null(r);
	refresh_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_route_change_asks_the_question_again),
		cmocka_unit_test(changes_close_together_make_one_more_pass_after_the_gap),
		cmocka_unit_test(a_question_not_asked_lately_is_left_alone),
		cmocka_unit_test(a_question_still_asked_keeps_its_slot),
		cmocka_unit_test(an_ask_in_flight_along_the_same_route_is_not_repeated),
		cmocka_unit_test(a_question_noted_a_little_ahead_of_the_pass_is_recent),
		cmocka_unit_test(sizes_are_checked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
