/*
 * lib/prom: the exposition text, byte for byte.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "prom.h"

static void test_counter_and_labels(void **state)
{
	(void)state;
	struct prom p;
	prom_init(&p);
	prom_family(&p, "x_total", PROM_COUNTER, "Lines\nwith a \\ backslash.");
	struct prom_label lb[2] = { { "peer", "a\"b\\c\nd" }, { "code", "cease" } };
	prom_u64(&p, "x_total", lb, 2, 18446744073709551615ull);
	prom_u64(&p, "x_total", NULL, 0, 0);
	assert_string_equal(strbuf_str(&p.b),
		"# HELP x_total Lines\\nwith a \\\\ backslash.\n"
		"# TYPE x_total counter\n"
		"x_total{peer=\"a\\\"b\\\\c\\nd\",code=\"cease\"} 18446744073709551615\n"
		"x_total 0\n");
	prom_free(&p);
}

static void test_doubles(void **state)
{
	(void)state;
	struct prom p;
	prom_init(&p);
	prom_double(&p, "g", NULL, 0, 0.1);
	prom_double(&p, "g", NULL, 0, 1.0 / 3);
	prom_double(&p, "g", NULL, 0, 12);
	prom_double(&p, "g", NULL, 0, INFINITY);
	prom_double(&p, "g", NULL, 0, NAN);
	assert_string_equal(strbuf_str(&p.b), "g 0.1\ng 0.3333333333333333\ng 12\ng +Inf\ng NaN\n");
	prom_reset(&p);
	assert_int_equal(p.b.len, 0);
	prom_one(&p, "up", PROM_GAUGE, "Up.", 1);
	assert_string_equal(strbuf_str(&p.b), "# HELP up Up.\n# TYPE up gauge\nup 1\n");
	prom_free(&p);
}

static void test_histogram(void **state)
{
	(void)state;
	struct prom p;
	prom_init(&p);
	static const double bounds[] = { 0.001, 0.01 };
	static const uint64_t counts[] = { 2, 0, 1 };
	struct prom_histogram h = { .nbounds = 2, .bounds = bounds, .counts = counts, .sum = 0.5 };
	prom_histogram(&p, "lat_seconds", &(struct prom_label){ "path", "local" }, 1, &h);
	assert_string_equal(strbuf_str(&p.b),
		"lat_seconds_bucket{path=\"local\",le=\"0.001\"} 2\n"
		"lat_seconds_bucket{path=\"local\",le=\"0.01\"} 2\n"
		"lat_seconds_bucket{path=\"local\",le=\"+Inf\"} 3\n"
		"lat_seconds_sum{path=\"local\"} 0.5\n"
		"lat_seconds_count{path=\"local\"} 3\n");
	prom_reset(&p);
	prom_histogram(&p, "h", NULL, 0, &h);
	assert_non_null(strstr(strbuf_str(&p.b), "h_bucket{le=\"+Inf\"} 3\nh_sum 0.5\nh_count 3\n"));
	prom_free(&p);
}

static void test_big_output_grows(void **state)
{
	(void)state;
	struct prom p;
	prom_init(&p);
	for (unsigned i = 0; i < 10000; i++)
		prom_u64(&p, "n", &(struct prom_label){ "i", "0123456789" }, 1, i);
	assert_false(p.b.nomem);
	assert_int_equal(strlen(strbuf_str(&p.b)), p.b.len);
	assert_non_null(strstr(strbuf_str(&p.b), "n{i=\"0123456789\"} 9999\n"));
	prom_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counter_and_labels),
		cmocka_unit_test(test_doubles),
		cmocka_unit_test(test_histogram),
		cmocka_unit_test(test_big_output_grows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
