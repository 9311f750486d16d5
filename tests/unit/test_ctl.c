#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ctl.h"

static void reply_lines_parse_back(void **state)
{
	struct ctl_reply r = { 0 };
	ctl_reply_line(&r, CTL_DATA, "udp queries %d", 3);
	ctl_reply_end(&r, CTL_OK, "OK");
	ctl_reply_line(&r, CTL_DATA, "ignored after the end");
	assert_string_equal(strbuf_str(&r.out), "1000-udp queries 3\n0000 OK\n");
	int code;
	bool more;
	const char *text;
	assert_int_equal(ctl_parse_line("1000-udp queries 3", 18, &code, &more, &text), 0);
	assert_int_equal(code, 1000);
	assert_true(more);
	assert_string_equal(text, "udp queries 3");
	assert_int_equal(ctl_parse_line("9001 reload failed", 18, &code, &more, &text), 0);
	assert_int_equal(code, 9001);
	assert_false(more);
	strbuf_free(&r.out);
}

static void a_newline_in_data_cannot_forge_a_line(void **state)
{
	struct ctl_reply r = { 0 };
	ctl_reply_line(&r, CTL_DATA, "name %s", "evil\n0000 done\rx");
	assert_string_equal(strbuf_str(&r.out), "1000-name evil 0000 done x\n");
	strbuf_free(&r.out);
}

static void malformed_reply_lines_are_rejected(void **state)
{
	static const char *const bad[] = { "", "000", "0000", "00a0 x", "0000:x", "+0000 x", "-100 x" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int code;
		bool more;
		const char *text;
		if (ctl_parse_line(bad[i], strlen(bad[i]), &code, &more, &text) != -1)
			fail_msg("'%s' parsed", bad[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reply_lines_parse_back),
		cmocka_unit_test(a_newline_in_data_cannot_forge_a_line),
		cmocka_unit_test(malformed_reply_lines_are_rejected),
	};
	return cmocka_run_group_tests_name("ctl", tests, NULL, NULL);
}
