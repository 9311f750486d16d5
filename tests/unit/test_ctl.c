#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <cmocka.h>
#include <uv.h>

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

/* "big": more lines than a socket buffer holds */
#define BIG_LINES 20000

static void big_reply(void *ctx, int argc, char **argv, struct ctl_reply *r)
{
	(void)ctx;
	if (argc == 1 && strcmp(argv[0], "big") == 0)
		for (unsigned i = 0; i < BIG_LINES; i++)
			ctl_reply_line(r, CTL_DATA, "line %u of a reply longer than the socket's buffer", i);
}

/* Sends text on a new connection, half-closes, and reads until the server
 * closes: the number of reply lines after the greeting, the last one. */
static unsigned exchange(uv_loop_t *loop, const char *path, const char *text, char *last, size_t last_len)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	assert_int_equal(send(fd, text, strlen(text), 0), (ssize_t)strlen(text));
	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	unsigned lines = 0;
	size_t len = 0;
	char line[256];
	for (;;) {
		uv_run(loop, UV_RUN_NOWAIT);
		char buf[8192];
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n == 0)
			break;
		if (n < 0) {
			assert_int_equal(errno, EAGAIN);
			continue;
		}
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] != '\n') {
				if (len < sizeof(line) - 1)
					line[len++] = buf[i];
				continue;
			}
			line[len] = 0;
			snprintf(last, last_len, "%s", line);
			lines++;
			len = 0;
		}
	}
	close(fd);
	uv_run(loop, UV_RUN_NOWAIT);
	return lines - 1;
}

/* A client that half-closes after its commands, or ends with quit, gets
 * every reply whole before the server hangs up (found by fuzz_ctlserv). */
static void replies_outlive_the_clients_half_close(void **state)
{
	(void)state;
	char dir[] = "/tmp/test_ctl.XXXXXX", path[64], err[256], last[256];
	uv_loop_t loop;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/ctl", dir);
	assert_int_equal(uv_loop_init(&loop), 0);
	struct ctl_server *s = ctl_server_open(&loop, path, "test", big_reply, NULL, err, sizeof(err));
	assert_non_null(s);

	assert_int_equal(exchange(&loop, path, "big\n", last, sizeof(last)), BIG_LINES + 1);
	assert_string_equal(last, "0000 OK");
	assert_int_equal(exchange(&loop, path, "big\nquit\nbig\n", last, sizeof(last)), BIG_LINES + 1);
	assert_string_equal(last, "0000 OK");
	assert_int_equal(exchange(&loop, path, "big\nbig\n", last, sizeof(last)), 2 * (BIG_LINES + 1));

	ctl_server_close(s);
	assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&loop), 0);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reply_lines_parse_back),
		cmocka_unit_test(a_newline_in_data_cannot_forge_a_line),
		cmocka_unit_test(malformed_reply_lines_are_rejected),
		cmocka_unit_test(replies_outlive_the_clients_half_close),
	};
	return cmocka_run_group_tests_name("ctl", tests, NULL, NULL);
}
