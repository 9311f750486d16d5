#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "aggfile.h"
#include "name.h"

static char reports[8][512];
static unsigned nreports;

static void collect(void *ctx, const char *msg)
{
	if (nreports < 8)
		snprintf(reports[nreports], sizeof(reports[0]), "%s", msg);
	nreports++;
}

static bool has(const struct nameset *s, const char *text)
{
	struct name n;
	assert_int_equal(name_from_text(&n, text, strlen(text)), NAME_OK);
	return nameset_contains(s, n.wire, n.len);
}

static void names_comments_blanks_duplicates(void **state)
{
	const char *text =
		"# customers\n"
		"\n"
		"shop.Example.com\n"
		"  blog.example.org.   # trailing dot\r\n"
		"\t\n"
		"a\\#b.example  \n"
		"SHOP.example.COM.\n"
		"last.example";                 /* no final newline */
	struct nameset s;
	nameset_init(&s);
	struct aggfile_result r;
	nreports = 0;
	assert_int_equal(aggfile_parse(text, strlen(text), "m.txt", &s, &r, collect, NULL, 10), 0);
	assert_int_equal(nreports, 0);
	assert_int_equal(r.lines, 8);
	assert_int_equal(r.names, 4);
	assert_int_equal(r.duplicates, 1);
	assert_int_equal(s.count, 4);
	assert_true(has(&s, "shop.example.com"));
	assert_true(has(&s, "blog.example.org"));
	assert_true(has(&s, "a\\#b.example"));
	assert_true(has(&s, "last.example"));
	nameset_free(&s);
}

static void bad_lines_are_file_line_reason(void **state)
{
	const char *text =
		"good.example\n"
		"two names.example\n"
		"a..b\n"
		".\n"
		"x\\999.example\n"
		"also.good\n";
	struct nameset s;
	nameset_init(&s);
	struct aggfile_result r;
	nreports = 0;
	assert_int_equal(aggfile_parse(text, strlen(text), "m.txt", &s, &r, collect, NULL, 3), -1);
	assert_int_equal(r.bad, 4);
	assert_int_equal(nreports, 3);          /* at most max_reports */
	assert_string_equal(reports[0], "m.txt:2: more than one name on the line");
	assert_string_equal(reports[1], "m.txt:3: bad name: empty label");
	assert_string_equal(reports[2], "m.txt:4: the root cannot be a member");
	assert_int_equal(r.names, 2);

	const char nul[] = "a.example\nb\0c.example\n";
	nreports = 0;
	assert_int_equal(aggfile_parse(nul, sizeof(nul) - 1, "n.txt", &s, &r, collect, NULL, 3), -1);
	assert_string_equal(reports[0], "n.txt:2: NUL byte");
	nameset_free(&s);
}

static void reads_a_file_or_says_why_not(void **state)
{
	char path[] = "/tmp/test_aggfile.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const char *text = "one.example\ntwo.example\n";
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	struct nameset s;
	nameset_init(&s);
	struct aggfile_result r;
	nreports = 0;
	assert_int_equal(aggfile_read(path, &s, &r, collect, NULL, 10), 0);
	assert_int_equal(s.count, 2);
	unlink(path);
	assert_int_equal(aggfile_read(path, &s, &r, collect, NULL, 10), -1);
	assert_int_equal(nreports, 1);
	assert_non_null(strstr(reports[0], "No such file or directory"));
	nameset_free(&s);
}

/* Two definitions make one version: the diff between them. */
static void two_definitions_diff(void **state)
{
	const char *v1 = "a.example\nb.example\nc.example\n";
	const char *v2 = "b.example\nc.example\nd.example\ne.example\n";
	struct nameset s1, s2;
	struct namelist dels, adds;
	nameset_init(&s1);
	nameset_init(&s2);
	namelist_init(&dels);
	namelist_init(&adds);
	struct aggfile_result r;
	assert_int_equal(aggfile_parse(v1, strlen(v1), "v1", &s1, &r, NULL, NULL, 0), 0);
	assert_int_equal(aggfile_parse(v2, strlen(v2), "v2", &s2, &r, NULL, NULL, 0), 0);
	assert_int_equal(nameset_diff(&s1, &s2, &dels, &adds), 0);
	assert_int_equal(dels.count, 1);
	assert_int_equal(adds.count, 2);
	nameset_free(&s1);
	nameset_free(&s2);
	namelist_free(&dels);
	namelist_free(&adds);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(names_comments_blanks_duplicates),
		cmocka_unit_test(bad_lines_are_file_line_reason),
		cmocka_unit_test(reads_a_file_or_says_why_not),
		cmocka_unit_test(two_definitions_diff),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
