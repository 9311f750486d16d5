#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "name.h"

static struct name parse(const char *text)
{
	struct name n;
	int rc = name_from_text(&n, text, strlen(text));
	if (rc != NAME_OK)
		fail_msg("'%s' did not parse: %s", text, name_strerror(rc));
	return n;
}

static void assert_text(const struct name *n, const char *want)
{
	char buf[NAME_MAX_TEXT];
	assert_true(name_to_text(n, buf, sizeof(buf)) >= 0);
	assert_string_equal(buf, want);
}

static void text_is_lowercased_wire_form(void **state)
{
	struct name n = parse("WWW.Example.COM");
	static const uint8_t want[] = "\3www\7example\3com";
	assert_int_equal(n.len, sizeof(want));
	assert_memory_equal(n.wire, want, sizeof(want));
	assert_text(&n, "www.example.com.");
}

static void trailing_dot_is_optional(void **state)
{
	struct name a = parse("example.org"), b = parse("example.org.");
	assert_true(name_equal(&a, &b));
}

static void root_name(void **state)
{
	struct name n = parse(".");
	assert_int_equal(n.len, 1);
	assert_int_equal(n.wire[0], 0);
	assert_int_equal(name_label_count(&n), 0);
	assert_text(&n, ".");
}

static void escapes_round_trip(void **state)
{
	struct name n = parse("a\\.b.\\065\\032c.example");
	static const uint8_t want[] = "\3a.b\3a c\7example";
	assert_memory_equal(n.wire, want, sizeof(want));
	assert_text(&n, "a\\.b.a\\032c.example.");
	struct name back = parse("a\\.b.a\\032c.example.");
	assert_true(name_equal(&n, &back));
}

static void bad_text_is_rejected_with_a_reason(void **state)
{
	struct {
		const char *text;
		int err;
	} cases[] = {
		{ "", NAME_ERR_EMPTY },
		{ "a..b", NAME_ERR_EMPTY_LABEL },
		{ ".a", NAME_ERR_EMPTY_LABEL },
		{ "a.b..", NAME_ERR_EMPTY_LABEL },
		{ "a\\", NAME_ERR_BAD_ESCAPE },
		{ "a\\25", NAME_ERR_BAD_ESCAPE },
		{ "a\\256", NAME_ERR_BAD_ESCAPE },
		{ "a\\2x5", NAME_ERR_BAD_ESCAPE },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct name n;
		int rc = name_from_text(&n, cases[i].text, strlen(cases[i].text));
		if (rc != cases[i].err)
			fail_msg("'%s': got %d (%s), want %d", cases[i].text, rc, name_strerror(rc), cases[i].err);
		assert_string_not_equal(name_strerror(rc), "unknown name error");
	}
}

static void label_limit_is_63_bytes(void **state)
{
	char buf[80];
	struct name n;
	memset(buf, 'a', 63);
	strcpy(buf + 63, ".com");
	assert_int_equal(name_from_text(&n, buf, strlen(buf)), NAME_OK);
	memset(buf, 'a', 64);
	strcpy(buf + 64, ".com");
	assert_int_equal(name_from_text(&n, buf, strlen(buf)), NAME_ERR_LABEL_TOO_LONG);
}

static void name_limit_is_255_wire_bytes(void **state)
{
	/* 4 labels of 63 = 256 wire bytes with length bytes, +1 root: too long */
	char buf[300];
	size_t o = 0;
	for (int l = 0; l < 4; l++) {
		memset(buf + o, 'a', 63);
		o += 63;
		buf[o++] = '.';
	}
	buf[o] = 0;
	struct name n;
	assert_int_equal(name_from_text(&n, buf, o), NAME_ERR_NAME_TOO_LONG);
	/* 3 x 63 + one of 61: 3*64 + 62 + 1 = 255 exactly */
	o = 3 * 64 + 61;
	buf[o] = 0;
	assert_int_equal(name_from_text(&n, buf, o), NAME_OK);
	assert_int_equal(n.len, 255);
	/* and one byte more is rejected */
	buf[o] = 'a';
	buf[o + 1] = 0;
	assert_int_equal(name_from_text(&n, buf, o + 1), NAME_ERR_NAME_TOO_LONG);
}

static void packet_name_follows_backward_pointers(void **state)
{
	/* header-sized padding, then "example.com", then "www" + pointer to it */
	uint8_t pkt[64] = { 0 };
	size_t o = 12;
	memcpy(pkt + o, "\7Example\3COM\0", 13);
	o += 13;
	size_t www = o;
	memcpy(pkt + o, "\3WWW\xC0\x0C", 6);
	o += 6;
	struct name n;
	size_t pos = www;
	assert_int_equal(name_from_packet(&n, pkt, o, &pos), NAME_OK);
	assert_int_equal(pos, www + 6);
	assert_text(&n, "www.example.com.");
}

static void packet_pointer_loops_and_forward_pointers_fail(void **state)
{
	struct name n;
	size_t pos;
	/* pointer to itself */
	uint8_t self[14] = { [12] = 0xC0, [13] = 12 };
	pos = 12;
	assert_int_equal(name_from_packet(&n, self, sizeof(self), &pos), NAME_ERR_BAD_POINTER);
	/* forward pointer */
	uint8_t fwd[20] = { [12] = 0xC0, [13] = 16, [16] = 1, [17] = 'a', [18] = 0 };
	pos = 12;
	assert_int_equal(name_from_packet(&n, fwd, sizeof(fwd), &pos), NAME_ERR_BAD_POINTER);
	/* two labels pointing at each other: a -> b -> a */
	uint8_t loop[20] = { [12] = 1, [13] = 'a', [14] = 0xC0, [15] = 16, [16] = 1, [17] = 'b', [18] = 0xC0, [19] = 12 };
	pos = 16;
	assert_int_equal(name_from_packet(&n, loop, sizeof(loop), &pos), NAME_ERR_BAD_POINTER);
}

static void packet_truncation_and_label_types(void **state)
{
	struct name n;
	size_t pos = 0;
	const uint8_t trunc[] = { 5, 'a', 'b' };
	assert_int_equal(name_from_packet(&n, trunc, sizeof(trunc), &pos), NAME_ERR_TRUNCATED);
	pos = 0;
	const uint8_t noroot[] = { 1, 'a' };
	assert_int_equal(name_from_packet(&n, noroot, sizeof(noroot), &pos), NAME_ERR_TRUNCATED);
	pos = 0;
	const uint8_t halfptr[] = { 0xC0 };
	assert_int_equal(name_from_packet(&n, halfptr, sizeof(halfptr), &pos), NAME_ERR_TRUNCATED);
	pos = 0;
	const uint8_t ext[] = { 0x41, 0 };
	assert_int_equal(name_from_packet(&n, ext, sizeof(ext), &pos), NAME_ERR_BAD_LABEL_TYPE);
}

static void packet_name_over_255_bytes_fails(void **state)
{
	uint8_t pkt[400];
	size_t o = 0;
	for (int l = 0; l < 5; l++) {
		pkt[o++] = 60;
		memset(pkt + o, 'x', 60);
		o += 60;
	}
	pkt[o++] = 0;
	struct name n;
	size_t pos = 0;
	assert_int_equal(name_from_packet(&n, pkt, o, &pos), NAME_ERR_NAME_TOO_LONG);
}

static void wire_form_must_end_exactly_at_root(void **state)
{
	struct name n;
	assert_int_equal(name_from_wire(&n, (const uint8_t *)"\3ABC\0", 5), NAME_OK);
	assert_text(&n, "abc.");
	assert_int_equal(name_from_wire(&n, (const uint8_t *)"\3abc\0x", 6), NAME_ERR_TRUNCATED);
	assert_int_equal(name_from_wire(&n, (const uint8_t *)"\3ab", 3), NAME_ERR_TRUNCATED);
	assert_int_equal(name_from_wire(&n, (const uint8_t *)"\xC0\x01", 2), NAME_ERR_BAD_LABEL_TYPE);
}

/* The in-place check is name_from_wire accepting the bytes unchanged. */
static bool canonical_by_copy(const uint8_t *wire, size_t len)
{
	struct name n;
	return len > 0 && name_from_wire(&n, wire, len) == NAME_OK && n.len == len &&
	       memcmp(n.wire, wire, len) == 0;
}

static void canonical_wire_check_agrees_with_name_from_wire(void **state)
{
	assert_true(name_wire_canonical((const uint8_t *)"\3www\7example\3com", 17));
	assert_false(name_wire_canonical((const uint8_t *)"\3www\7exAmple\3com", 17));
	assert_true(name_wire_canonical((const uint8_t *)"\3w@[\7example\3com", 17));     /* beside 'A' and 'Z' */
	assert_true(name_wire_canonical((const uint8_t *)"\3\xc1\xda`\0", 5));               /* 'A', 'Z' | 0x80 */
	assert_false(name_wire_canonical((const uint8_t *)"", 0));
	assert_true(name_wire_canonical((const uint8_t *)"", 1));                          /* the root */

	uint32_t x = 42;
	uint8_t buf[300];
	unsigned accepted = 0;
	for (int iter = 0; iter < 200000; iter++) {
		/* mostly well-formed names, sometimes broken, letters of both cases */
		size_t len = 0;
		unsigned labels = (x = x * 1103515245u + 12345u) >> 16 & 7;
		for (unsigned l = 0; l < labels && len < 280; l++) {
			unsigned ll = ((x = x * 1103515245u + 12345u) >> 16) % 70;
			buf[len++] = (uint8_t)ll;
			for (unsigned k = 0; k < ll && len < sizeof(buf); k++) {
				x = x * 1103515245u + 12345u;
				uint8_t c = (uint8_t)(x >> 16);
				/* every other name has no uppercase letter unless by chance */
				buf[len++] = (x >> 28) % 3 == 0 && iter % 2 ? c
					   : (x >> 28) % 3 == 1 || iter % 2 == 0 ? (uint8_t)('a' + c % 26)
					   : (uint8_t)('A' + c % 26);
			}
		}
		if (len < sizeof(buf))
			buf[len++] = 0;
		x = x * 1103515245u + 12345u;
		if ((x >> 20) % 4 == 0)
			len = (x >> 8) % (len + 1);           /* cut anywhere */
		else if ((x >> 20) % 4 == 1 && len)
			buf[(x >> 8) % len] = (uint8_t)(x >> 12);  /* one byte changed */
		bool want = canonical_by_copy(buf, len);
		assert_int_equal(name_wire_canonical(buf, len), want);
		accepted += want;
	}
	assert_true(accepted > 20000);  /* both answers well exercised */
}

static void subdomain_is_label_wise(void **state)
{
	struct name a = parse("www.example.com"), b = parse("example.com"),
		    c = parse("ample.com"), root = parse(".");
	assert_true(name_is_subdomain(&a, &b));
	assert_true(name_is_subdomain(&b, &b));
	assert_false(name_is_subdomain(&b, &a));
	/* "ample.com" is a byte suffix of "example.com" but not a label suffix */
	struct name x = parse("xample.com");
	assert_false(name_is_subdomain(&x, &c));
	assert_false(name_is_subdomain(&b, &c));
	assert_true(name_is_subdomain(&a, &root));
}

static void canonical_order_compares_right_to_left(void **state)
{
	struct name a = parse("a.example"), z = parse("z.example"), ex = parse("example"),
		    za = parse("a.z.example"), ax = parse("yljkjljk.a.example");
	assert_true(name_compare(&ex, &a) < 0);
	assert_true(name_compare(&a, &z) < 0);
	assert_true(name_compare(&ax, &z) < 0);
	assert_true(name_compare(&z, &za) < 0);
	assert_int_equal(name_compare(&a, &a), 0);
}

static void label_offsets_list_labels_left_to_right(void **state)
{
	struct name n = parse("www.example.com");
	uint8_t off[NAME_MAX_LABELS];
	assert_int_equal(name_label_offsets(&n, off), 3);
	assert_int_equal(off[0], 0);
	assert_int_equal(off[1], 4);
	assert_int_equal(off[2], 12);
}

static void to_text_reports_a_small_buffer(void **state)
{
	struct name n = parse("www.example.com");
	char buf[8];
	assert_int_equal(name_to_text(&n, buf, sizeof(buf)), -1);
	char exact[17];
	assert_int_equal(name_to_text(&n, exact, sizeof(exact)), 16);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(text_is_lowercased_wire_form),
		cmocka_unit_test(trailing_dot_is_optional),
		cmocka_unit_test(root_name),
		cmocka_unit_test(escapes_round_trip),
		cmocka_unit_test(bad_text_is_rejected_with_a_reason),
		cmocka_unit_test(label_limit_is_63_bytes),
		cmocka_unit_test(name_limit_is_255_wire_bytes),
		cmocka_unit_test(packet_name_follows_backward_pointers),
		cmocka_unit_test(packet_pointer_loops_and_forward_pointers_fail),
		cmocka_unit_test(packet_truncation_and_label_types),
		cmocka_unit_test(packet_name_over_255_bytes_fails),
		cmocka_unit_test(wire_form_must_end_exactly_at_root),
		cmocka_unit_test(canonical_wire_check_agrees_with_name_from_wire),
		cmocka_unit_test(subdomain_is_label_wise),
		cmocka_unit_test(canonical_order_compares_right_to_left),
		cmocka_unit_test(label_offsets_list_labels_left_to_right),
		cmocka_unit_test(to_text_reports_a_small_buffer),
	};
	return cmocka_run_group_tests_name("name", tests, NULL, NULL);
}
