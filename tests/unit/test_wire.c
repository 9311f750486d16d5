/* lib/core/wire.h: big-endian fields through one bounded reader and writer. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "wire.h"

static void fields_round_trip_in_network_order(void **state)
{
	uint8_t buf[15];
	struct wire_writer w = wire_writer(buf, sizeof(buf));
	wire_put8(&w, 0xab);
	wire_put16(&w, 0x0102);
	wire_put32(&w, 0x03040506);
	wire_put64(&w, 0x0708090a0b0c0d0eull);
	assert_false(w.bad);
	assert_int_equal(wire_written(&w), 15);
	assert_int_equal(buf[1], 0x01);
	assert_int_equal(buf[14], 0x0e);
	struct wire_reader r = wire_reader(buf, sizeof(buf));
	assert_int_equal(wire_u8(&r), 0xab);
	assert_int_equal(wire_u16(&r), 0x0102);
	assert_int_equal(wire_u32(&r), 0x03040506);
	assert_true(wire_u64(&r) == 0x0708090a0b0c0d0eull);
	assert_false(r.bad);
	assert_int_equal(wire_left(&r), 0);
}

static void a_read_past_the_end_is_bad_and_yields_zeros_from_then_on(void **state)
{
	uint8_t buf[3] = { 1, 2, 3 };
	struct wire_reader r = wire_reader(buf, sizeof(buf));
	assert_int_equal(wire_u16(&r), 0x0102);
	assert_int_equal(wire_u32(&r), 0);     /* 1 byte left */
	assert_true(r.bad);
	assert_int_equal(wire_u8(&r), 0);      /* sticky, though a byte is left */
	assert_null(wire_take(&r, 0));
}

static void a_write_that_does_not_fit_is_bad_and_writes_nothing(void **state)
{
	uint8_t buf[4] = { 0 };
	struct wire_writer w = wire_writer(buf, 3);
	wire_put16(&w, 0xffff);
	wire_put16(&w, 0xeeee);
	assert_true(w.bad);
	assert_int_equal(wire_written(&w), 2);
	assert_int_equal(buf[2], 0);
	wire_put8(&w, 0x11);                    /* sticky too */
	assert_int_equal(buf[2], 0);
}

static void a_peek_looks_ahead_without_taking_or_going_bad(void **state)
{
	(void)state;
	const uint8_t buf[3] = { 1, 2, 3 };
	struct wire_reader r = wire_reader(buf, sizeof(buf));
	const uint8_t *p = wire_peek(&r, 2);
	assert_ptr_equal(p, buf);
	assert_int_equal(wire_left(&r), 3);
	assert_null(wire_peek(&r, 4));
	assert_false(r.bad);
	assert_int_equal(wire_u8(&r), 1);
	assert_ptr_equal(wire_peek(&r, 2), buf + 1);
	wire_take(&r, 5);
	assert_null(wire_peek(&r, 0));          /* a bad reader has nothing to show */
}

static void a_reader_at_an_offset_starts_there_and_past_the_end_is_bad(void **state)
{
	(void)state;
	const uint8_t buf[4] = { 1, 2, 3, 4 };
	struct wire_reader r = wire_reader_at(buf, sizeof(buf), 2);
	assert_false(r.bad);
	assert_int_equal(wire_u16(&r), 0x0304);
	r = wire_reader_at(buf, sizeof(buf), 4);
	assert_false(r.bad);
	assert_int_equal(wire_left(&r), 0);
	r = wire_reader_at(buf, sizeof(buf), 5);
	assert_true(r.bad);
	assert_int_equal(wire_u8(&r), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fields_round_trip_in_network_order),
		cmocka_unit_test(a_read_past_the_end_is_bad_and_yields_zeros_from_then_on),
		cmocka_unit_test(a_write_that_does_not_fit_is_bad_and_writes_nothing),
		cmocka_unit_test(a_peek_looks_ahead_without_taking_or_going_bad),
		cmocka_unit_test(a_reader_at_an_offset_starts_there_and_past_the_end_is_bad),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
