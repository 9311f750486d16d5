/*
 * The configuration parser: tree shape, lexical rules, includes, every
 * error with its exact file:line, dispatch and the argument helpers.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <cmocka.h>

#include "conf.h"

/* Helpers */

static struct conf *parse(const char *text)
{
	char err[CONF_ERR_LEN];
	struct conf *c = conf_parse_text(text, strlen(text), "t.conf", err, sizeof(err));

	if (!c)
		fail_msg("unexpected parse error: %s", err);
	return c;
}

static void expect_error_len(const char *text, size_t len, const char *want)
{
	char err[CONF_ERR_LEN];
	struct conf *c = conf_parse_text(text, len, "t.conf", err, sizeof(err));

	if (c) {
		conf_free(c);
		fail_msg("parsed, expected error: %s", want);
	}
	assert_string_equal(err, want);
}

static void expect_error(const char *text, const char *want)
{
	expect_error_len(text, strlen(text), want);
}

static unsigned count(const struct conf_stmt *s)
{
	unsigned n = 0;

	for (; s; s = s->next)
		n++;
	return n;
}

/* A repeated string, malloc'd. */
static char *repeat(const char *unit, unsigned times, const char *tail)
{
	size_t ul = strlen(unit), tl = strlen(tail);
	char *s = malloc(ul * times + tl + 1);

	assert_non_null(s);
	for (unsigned i = 0; i < times; i++)
		memcpy(s + i * ul, unit, ul);
	memcpy(s + ul * times, tail, tl + 1);
	return s;
}

/* Temporary directory for include tests, removed after each test. */
struct tmp {
	char dir[64];
	char paths[64][PATH_MAX];
	bool is_dir[64];
	unsigned n;
};

static int tmp_setup(void **state)
{
	static struct tmp t;

	memset(&t, 0, sizeof(t));
	strcpy(t.dir, "/tmp/test_conf.XXXXXX");
	if (!mkdtemp(t.dir))
		return -1;
	*state = &t;
	return 0;
}

static int tmp_teardown(void **state)
{
	struct tmp *t = *state;

	while (t->n--) {
		if (t->is_dir[t->n])
			rmdir(t->paths[t->n]);
		else
			unlink(t->paths[t->n]);
	}
	return rmdir(t->dir);
}

static const char *tmp_path(struct tmp *t, const char *name, bool is_dir)
{
	char path[PATH_MAX];

	assert_true(t->n < 64);
	snprintf(path, sizeof(path), "%s/%s", t->dir, name);
	strcpy(t->paths[t->n], path);
	t->is_dir[t->n] = is_dir;
	return t->paths[t->n++];
}

static const char *tmp_mkdir(struct tmp *t, const char *name)
{
	const char *p = tmp_path(t, name, true);

	assert_int_equal(mkdir(p, 0700), 0);
	return p;
}

static const char *tmp_write(struct tmp *t, const char *name, const char *fmt, ...)
{
	const char *p = tmp_path(t, name, false);
	FILE *f = fopen(p, "w");
	va_list ap;

	assert_non_null(f);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	assert_int_equal(fclose(f), 0);
	return p;
}

static struct conf *parse_file_ok(const char *path)
{
	char err[CONF_ERR_LEN];
	struct conf *c = conf_parse_file(path, err, sizeof(err));

	if (!c)
		fail_msg("unexpected parse error: %s", err);
	return c;
}

static void expect_file_error(const char *path, const char *fmt, ...)
{
	char err[CONF_ERR_LEN], want[CONF_ERR_LEN];
	struct conf *c = conf_parse_file(path, err, sizeof(err));
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(want, sizeof(want), fmt, ap);
	va_end(ap);
	if (c) {
		conf_free(c);
		fail_msg("parsed, expected error: %s", want);
	}
	assert_string_equal(err, want);
}

/* Tree shape */

static void test_statements_keep_words_lines_and_file(void **state)
{
	struct conf *c = parse("router-name cr1;\n\nlisten 127.0.0.1 port 5353;\n");
	struct conf_stmt *s = c->first;

	assert_int_equal(count(s), 2);
	assert_string_equal(s->file, "t.conf");
	assert_int_equal(s->line, 1);
	assert_int_equal(s->argc, 2);
	assert_string_equal(s->argv[0], "router-name");
	assert_string_equal(s->argv[1], "cr1");
	assert_null(s->argv[2]);
	assert_false(s->has_block);
	assert_null(s->block);
	s = s->next;
	assert_int_equal(s->line, 3);
	assert_int_equal(s->argc, 4);
	assert_string_equal(s->argv[3], "5353");
	conf_free(c);
}

static void test_statement_line_is_that_of_its_first_word(void **state)
{
	struct conf *c = parse("\n\nserver\n192.0.2.1\nload 20\n;\n");

	assert_int_equal(c->first->line, 3);
	assert_int_equal(c->first->argc, 4);
	conf_free(c);
}

static void test_nested_blocks_build_a_tree(void **state)
{
	struct conf *c = parse(
		"route \"shop.example\" {\n"
		"\tserver 192.0.2.10 load 20;\n"
		"\tserver 2001:db8::10 {\n"
		"\t\tweight 3;\n"
		"\t}\n"
		"}\n"
		"after;\n");
	struct conf_stmt *r = c->first, *s;

	assert_int_equal(count(r), 2);
	assert_true(r->has_block);
	assert_int_equal(r->argc, 2);
	assert_string_equal(r->argv[1], "shop.example");
	assert_int_equal(count(r->block), 2);
	s = r->block;
	assert_int_equal(s->line, 2);
	assert_false(s->has_block);
	s = s->next;
	assert_true(s->has_block);
	assert_string_equal(s->argv[1], "2001:db8::10");
	assert_int_equal(count(s->block), 1);
	assert_string_equal(s->block->argv[0], "weight");
	assert_int_equal(s->block->line, 4);
	assert_string_equal(r->next->argv[0], "after");
	assert_int_equal(r->next->line, 7);
	conf_free(c);
}

static void test_empty_block_is_a_block(void **state)
{
	struct conf *c = parse("a {}\nb { }");

	assert_true(c->first->has_block);
	assert_null(c->first->block);
	assert_true(c->first->next->has_block);
	conf_free(c);
}

static void test_block_may_be_followed_by_a_semicolon(void **state)
{
	struct conf *c = parse("a { x; };\nb { y; }\nc;");

	assert_int_equal(count(c->first), 3);
	assert_string_equal(c->first->next->next->argv[0], "c");
	conf_free(c);
}

static void test_empty_statements_are_ignored(void **state)
{
	struct conf *c = parse(";;\na;;;\nb { ; };;\n;");

	assert_int_equal(count(c->first), 2);
	assert_null(c->first->next->block);
	conf_free(c);
}

static void test_empty_input_gives_empty_tree(void **state)
{
	struct conf *c = parse("");

	assert_null(c->first);
	conf_free(c);
	c = parse("  \n\t# only a comment\n/* and another */\n");
	assert_null(c->first);
	conf_free(c);
	c = conf_parse_text(NULL, 0, NULL, NULL, 0);
	assert_non_null(c);
	assert_null(c->first);
	conf_free(c);
}

static void test_words_stop_at_punctuation(void **state)
{
	struct conf *c = parse("a{b;c;}d\"e f\"g;");
	struct conf_stmt *s = c->first;

	assert_string_equal(s->argv[0], "a");
	assert_string_equal(s->block->argv[0], "b");
	assert_string_equal(s->block->next->argv[0], "c");
	s = s->next;
	assert_int_equal(s->argc, 3);
	assert_string_equal(s->argv[0], "d");
	assert_string_equal(s->argv[1], "e f");
	assert_string_equal(s->argv[2], "g");
	conf_free(c);
}

static void test_crlf_and_tabs_are_blanks(void **state)
{
	struct conf *c = parse("a\t1;\r\nb\r\n{\r\n c;\r\n}\r\n");

	assert_int_equal(count(c->first), 2);
	assert_string_equal(c->first->argv[1], "1");
	assert_int_equal(c->first->next->block->line, 4);
	conf_free(c);
}

static void test_max_words_and_max_word_length_are_accepted(void **state)
{
	char *words = repeat("w ", CONF_MAX_ARGS, ";");
	char *longw = repeat("x", CONF_MAX_WORD, ";");
	char *longs = repeat("y", CONF_MAX_WORD + 1, "\";");
	struct conf *c;

	c = parse(words);
	assert_int_equal(c->first->argc, CONF_MAX_ARGS);
	conf_free(c);
	c = parse(longw);
	assert_int_equal(strlen(c->first->argv[0]), CONF_MAX_WORD);
	conf_free(c);
	longs[0] = '"';
	c = parse(longs);
	assert_int_equal(strlen(c->first->argv[0]), CONF_MAX_WORD);
	conf_free(c);
	free(words);
	free(longw);
	free(longs);
}

static void test_nesting_to_max_depth_is_accepted(void **state)
{
	char *open = repeat("b {\n", CONF_MAX_DEPTH, "leaf;\n");
	char *text = malloc(strlen(open) + CONF_MAX_DEPTH + 1);
	struct conf_stmt *s;
	struct conf *c;
	unsigned depth = 0;

	strcpy(text, open);
	memset(text + strlen(open), '}', CONF_MAX_DEPTH);
	text[strlen(open) + CONF_MAX_DEPTH] = '\0';
	c = parse(text);
	for (s = c->first; s->has_block; s = s->block)
		depth++;
	assert_int_equal(depth, CONF_MAX_DEPTH);
	assert_string_equal(s->argv[0], "leaf");
	assert_int_equal(s->line, CONF_MAX_DEPTH + 1);
	conf_free(c);
	free(open);
	free(text);
}

/* Strings */

static void test_quoted_strings_keep_blanks_and_are_marked_quoted(void **state)
{
	struct conf *c = parse("name \"a b;{}#//\" bare \"\";");
	struct conf_stmt *s = c->first;

	assert_int_equal(s->argc, 4);
	assert_string_equal(s->argv[1], "a b;{}#//");
	assert_true(s->quoted[1]);
	assert_false(s->quoted[0]);
	assert_false(s->quoted[2]);
	assert_string_equal(s->argv[3], "");
	assert_true(s->quoted[3]);
	conf_free(c);
}

static void test_string_escapes_quote_and_backslash(void **state)
{
	struct conf *c = parse("a \"say \\\"hi\\\" C:\\\\dir\\\\\";");

	assert_string_equal(c->first->argv[1], "say \"hi\" C:\\dir\\");
	conf_free(c);
}

static void test_comment_marks_inside_strings_are_text(void **state)
{
	struct conf *c = parse("a \"/* not */ # a // comment\";");

	assert_string_equal(c->first->argv[1], "/* not */ # a // comment");
	conf_free(c);
}

static void test_other_escapes_are_errors(void **state)
{
	expect_error("a;\nb \"x\\n\";", "t.conf:2: invalid escape '\\n' in string (only \\\" and \\\\)");
	expect_error("b \"\\t\";", "t.conf:1: invalid escape '\\t' in string (only \\\" and \\\\)");
	expect_error("b \"\\\x01\";", "t.conf:1: invalid escape in string (only \\\" and \\\\)");
	expect_error("b \"x\\\ny\";", "t.conf:1: invalid escape in string (only \\\" and \\\\)");
}

static void test_newline_inside_string_is_an_error(void **state)
{
	expect_error("a;\nb \"x\ny\";", "t.conf:2: newline in string");
}

static void test_unterminated_string_names_its_first_line(void **state)
{
	expect_error("a;\nb \"xyz", "t.conf:2: unterminated string");
	expect_error("b \"xyz\\\"", "t.conf:1: unterminated string");
	expect_error("b \"xyz\\", "t.conf:1: unterminated string");
	expect_error("\"", "t.conf:1: unterminated string");
}

/* Comments */

static void test_hash_comment_runs_to_end_of_line(void **state)
{
	struct conf *c = parse("# top\na 1; # trailing { } \" ;\nb;#\n#");

	assert_int_equal(count(c->first), 2);
	assert_int_equal(c->first->argc, 2);
	assert_int_equal(c->first->next->line, 3);
	conf_free(c);
}

static void test_hash_ends_a_bare_word(void **state)
{
	struct conf *c = parse("a b#c\n;");

	assert_int_equal(c->first->argc, 2);
	assert_string_equal(c->first->argv[1], "b");
	conf_free(c);
}

static void test_slash_slash_comment_runs_to_end_of_line(void **state)
{
	struct conf *c = parse("// top\na 1; // trailing {\nb;//");

	assert_int_equal(count(c->first), 2);
	assert_int_equal(c->first->next->line, 3);
	conf_free(c);
}

static void test_block_comment_may_span_lines(void **state)
{
	struct conf *c = parse("a /* one\ntwo { ; */ b;\n/**/c /* x */;\n/***/ d; /* * / */ e;");
	struct conf_stmt *s = c->first;

	assert_int_equal(count(s), 4);
	assert_int_equal(s->argc, 2);
	assert_string_equal(s->argv[1], "b");
	assert_int_equal(s->next->line, 3);
	assert_string_equal(s->next->argv[0], "c");
	assert_string_equal(s->next->next->argv[0], "d");
	assert_int_equal(s->next->next->next->line, 4);
	conf_free(c);
}

static void test_slashes_inside_words_are_not_comments(void **state)
{
	struct conf *c = parse("allow 10.0.0.0/8 /etc/x.conf http://a/*b;");
	struct conf_stmt *s = c->first;

	assert_int_equal(s->argc, 4);
	assert_string_equal(s->argv[1], "10.0.0.0/8");
	assert_string_equal(s->argv[2], "/etc/x.conf");
	assert_string_equal(s->argv[3], "http://a/*b");
	conf_free(c);
}

static void test_unterminated_comment_names_its_first_line(void **state)
{
	expect_error("a;\n/* one\ntwo\n", "t.conf:2: unterminated comment");
	expect_error("a; /*/", "t.conf:1: unterminated comment");
	expect_error("/*", "t.conf:1: unterminated comment");
	expect_error("a;\n\n/* x *", "t.conf:3: unterminated comment");
}

/* Structural errors */

static void test_missing_semicolon_at_end_of_file(void **state)
{
	expect_error("a;\nb c", "t.conf:2: missing ';' at end of file");
	expect_error("a\nb\n\n", "t.conf:2: missing ';' at end of file");
	expect_error("r {\n x", "t.conf:2: missing ';' at end of file");
}

static void test_missing_semicolon_before_closing_brace(void **state)
{
	expect_error("r {\n a b\n}", "t.conf:2: missing ';' before '}'");
	expect_error("a }", "t.conf:1: missing ';' before '}'");
}

static void test_unmatched_closing_brace(void **state)
{
	expect_error("a;\n}\n", "t.conf:2: unmatched '}'");
	expect_error("r { a; }\n}", "t.conf:2: unmatched '}'");
}

static void test_unmatched_opening_brace_names_its_line(void **state)
{
	expect_error("a;\nr\n{\n b;\n", "t.conf:3: unmatched '{'");
	expect_error("r {\n s {\n }\n", "t.conf:1: unmatched '{'");
}

static void test_block_without_a_statement_is_an_error(void **state)
{
	expect_error("a;\n{ b; }", "t.conf:2: block without a statement");
	expect_error("a { { } }", "t.conf:1: block without a statement");
}

static void test_nesting_deeper_than_max_depth_is_an_error(void **state)
{
	char *text = repeat("b {\n", CONF_MAX_DEPTH + 1, "leaf;\n");
	char want[64];

	snprintf(want, sizeof(want), "t.conf:%d: blocks nested deeper than %d",
		 CONF_MAX_DEPTH + 1, CONF_MAX_DEPTH);
	expect_error(text, want);
	free(text);
}

static void test_too_many_words_is_an_error(void **state)
{
	char *words = repeat("w\n", CONF_MAX_ARGS + 1, ";");
	size_t len = strlen(words) + 4;
	char *text = malloc(len);

	assert_non_null(text);
	snprintf(text, len, "a;\n%s", words);
	expect_error(text, "t.conf:2: more than 64 words in one statement");
	free(words);
	free(text);
}

static void test_overlong_words_are_errors(void **state)
{
	char *word = repeat("x", CONF_MAX_WORD + 1, ";");
	char *str = repeat("y", CONF_MAX_WORD + 2, "\";");
	char *text = malloc(strlen(str) + 8);

	str[0] = '"';
	expect_error(word, "t.conf:1: word longer than 4096 bytes");
	snprintf(text, strlen(str) + 8, "a;\nb %s", str);
	expect_error(text, "t.conf:2: string longer than 4096 bytes");
	free(word);
	free(str);
	free(text);
}

static void test_nul_byte_is_an_error_naming_its_line(void **state)
{
	static const char t1[] = "a;\nb\0c;";
	static const char t2[] = "a;\n\n# comment \0\n";
	static const char t3[] = "\0";

	expect_error_len(t1, sizeof(t1) - 1, "t.conf:2: NUL byte");
	expect_error_len(t2, sizeof(t2) - 1, "t.conf:3: NUL byte");
	expect_error_len(t3, sizeof(t3) - 1, "t.conf:1: NUL byte");
}

static void test_text_larger_than_max_file_is_an_error(void **state)
{
	char *big = malloc(CONF_MAX_FILE + 1);

	assert_non_null(big);
	memset(big, ' ', CONF_MAX_FILE + 1);
	expect_error_len(big, CONF_MAX_FILE + 1, "t.conf: file larger than 16 MiB");
	free(big);
}

static void test_errors_with_null_or_tiny_buffers_are_safe(void **state)
{
	char err[8];

	assert_null(conf_parse_text("}", 1, "t.conf", NULL, 0));
	assert_null(conf_parse_text("}", 1, "t.conf", err, sizeof(err)));
	assert_string_equal(err, "t.conf:");
	assert_null(conf_parse_text("}", 1, NULL, err, sizeof(err)));
	assert_string_equal(err, "<text>:");
}

/* Files and includes */

static void test_file_is_parsed_with_its_name(void **state)
{
	struct tmp *t = *state;
	const char *p = tmp_write(t, "main.conf", "a;\nb 1;\n");
	struct conf *c = parse_file_ok(p);

	assert_int_equal(count(c->first), 2);
	assert_string_equal(c->first->next->file, p);
	assert_int_equal(c->first->next->line, 2);
	conf_free(c);
}

static void test_missing_file_is_an_error(void **state)
{
	struct tmp *t = *state;
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/none.conf", t->dir);
	expect_file_error(p, "%s: No such file or directory", p);
	expect_file_error(t->dir, "%s: is a directory", t->dir);
}

static void test_file_larger_than_max_file_is_an_error(void **state)
{
	struct tmp *t = *state;
	const char *big = tmp_write(t, "big.conf", "");
	const char *top = tmp_write(t, "main.conf", "include \"big.conf\";\n");

	assert_int_equal(truncate(big, (off_t)CONF_MAX_FILE + 1), 0);
	expect_file_error(big, "%s: file larger than 16 MiB", big);
	expect_file_error(top, "%s:1: cannot include '%s': file larger than 16 MiB", top, big);
}

static void test_include_splices_statements_in_place(void **state)
{
	struct tmp *t = *state;
	const char *inc = tmp_write(t, "peers.conf", "p1;\n\np2 { x; }\n");
	const char *top = tmp_write(t, "main.conf", "a;\ninclude \"peers.conf\";\nb;\n");
	struct conf *c = parse_file_ok(top);
	struct conf_stmt *s = c->first;

	assert_int_equal(count(s), 4);
	assert_string_equal(s->argv[0], "a");
	assert_string_equal(s->file, top);
	s = s->next;
	assert_string_equal(s->argv[0], "p1");
	assert_string_equal(s->file, inc);
	assert_int_equal(s->line, 1);
	s = s->next;
	assert_string_equal(s->argv[0], "p2");
	assert_int_equal(s->line, 3);
	assert_string_equal(s->block->file, inc);
	s = s->next;
	assert_string_equal(s->argv[0], "b");
	assert_string_equal(s->file, top);
	assert_int_equal(s->line, 3);
	conf_free(c);
}

static void test_include_inside_block_splices_into_block(void **state)
{
	struct tmp *t = *state;
	const char *top;
	struct conf *c;

	tmp_write(t, "servers.conf", "server 192.0.2.1;\nserver 192.0.2.2;\n");
	tmp_write(t, "empty.conf", "# nothing\n");
	top = tmp_write(t, "main.conf",
			 "route x {\n include servers.conf;\n include \"empty.conf\";\n server 192.0.2.3;\n}\n");
	c = parse_file_ok(top);
	assert_int_equal(count(c->first), 1);
	assert_int_equal(count(c->first->block), 3);
	assert_string_equal(c->first->block->next->argv[1], "192.0.2.2");
	assert_string_equal(c->first->block->next->next->argv[1], "192.0.2.3");
	conf_free(c);
}

static void test_include_is_relative_to_the_including_file(void **state)
{
	struct tmp *t = *state;
	char inner[PATH_MAX];
	const char *top;
	struct conf *c;

	tmp_mkdir(t, "sub");
	tmp_write(t, "sub/a.conf", "a;\ninclude \"b.conf\";\n");
	tmp_write(t, "sub/b.conf", "b;\n");
	top = tmp_write(t, "main.conf", "include \"sub/a.conf\";\n");
	c = parse_file_ok(top);
	assert_int_equal(count(c->first), 2);
	snprintf(inner, sizeof(inner), "%s/sub/b.conf", t->dir);
	assert_string_equal(c->first->next->file, inner);
	conf_free(c);
}

static void test_include_accepts_absolute_paths(void **state)
{
	struct tmp *t = *state;
	const char *abs = tmp_write(t, "abs.conf", "abs;\n");
	const char *top;
	struct conf *c;

	tmp_mkdir(t, "d");
	top = tmp_write(t, "d/main.conf", "include \"%s\";\n", abs);
	c = parse_file_ok(top);
	assert_string_equal(c->first->argv[0], "abs");
	assert_string_equal(c->first->file, abs);
	conf_free(c);
}

static void test_include_in_text_resolves_against_cwd(void **state)
{
	struct tmp *t = *state;
	char cwd[PATH_MAX], err[CONF_ERR_LEN];
	struct conf *c;

	tmp_write(t, "inc.conf", "x 1;\n");
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(t->dir), 0);
	c = conf_parse_text("include \"inc.conf\";", 19, "t.conf", err, sizeof(err));
	assert_int_equal(chdir(cwd), 0);
	if (!c)
		fail_msg("%s", err);
	assert_string_equal(c->first->argv[0], "x");
	assert_string_equal(c->first->file, "inc.conf");
	conf_free(c);
}

static void test_errors_in_included_file_name_that_file(void **state)
{
	struct tmp *t = *state;
	char inc[PATH_MAX];
	const char *top;

	tmp_mkdir(t, "sub");
	tmp_write(t, "sub/bad.conf", "ok;\nbad \"x\\q\";\n");
	top = tmp_write(t, "main.conf", "a;\ninclude \"sub/bad.conf\";\n");
	snprintf(inc, sizeof(inc), "%s/sub/bad.conf", t->dir);
	expect_file_error(top, "%s:2: invalid escape '\\q' in string (only \\\" and \\\\)", inc);
}

static void test_included_file_must_balance_its_own_braces(void **state)
{
	struct tmp *t = *state;
	const char *inc = tmp_write(t, "close.conf", "x;\n}\n");
	const char *open = tmp_write(t, "open.conf", "r {\n");
	const char *m1 = tmp_write(t, "m1.conf", "r {\ninclude \"close.conf\";\n");
	const char *m2 = tmp_write(t, "m2.conf", "include \"open.conf\";\n}\n");

	expect_file_error(m1, "%s:2: unmatched '}'", inc);
	expect_file_error(m2, "%s:1: unmatched '{'", open);
}

static void test_include_of_missing_file_names_the_include(void **state)
{
	struct tmp *t = *state;
	const char *top = tmp_write(t, "main.conf", "a;\ninclude \"nope.conf\";\n");
	const char *dir = tmp_write(t, "dir.conf", "include \"/\";\n");
	const char *dev = tmp_write(t, "dev.conf", "include \"/dev/null\";\n");

	expect_file_error(top, "%s:2: cannot include '%s/nope.conf': No such file or directory",
			  top, t->dir);
	expect_file_error(dir, "%s:1: cannot include '/': is a directory", dir);
	expect_file_error(dev, "%s:1: cannot include '/dev/null': not a regular file", dev);
}

static void test_include_needs_exactly_one_name_and_no_block(void **state)
{
	expect_error("include;", "t.conf:1: 'include' takes 2 words, got 1");
	expect_error("a;\ninclude a b;", "t.conf:2: 'include' takes 2 words, got 3");
	expect_error("include \"x\" { }", "t.conf:1: 'include' takes no block");
	expect_error("include \"\";", "t.conf:1: empty file name in 'include'");
}

/* A chain top -> f1 -> ... -> fN, the last holding "leaf;". */
static const char *write_chain(struct tmp *t, unsigned n)
{
	char name[32];

	snprintf(name, sizeof(name), "f%u.conf", n);
	tmp_write(t, name, "leaf;\n");
	for (unsigned i = n; i-- > 1;) {
		snprintf(name, sizeof(name), "f%u.conf", i);
		tmp_write(t, name, "# level %u\ninclude \"f%u.conf\";\n", i, i + 1);
	}
	return tmp_write(t, "main.conf", "include \"f1.conf\";\n");
}

static void test_includes_nest_to_max_include(void **state)
{
	struct tmp *t = *state;
	struct conf *c = parse_file_ok(write_chain(t, CONF_MAX_INCLUDE));

	assert_string_equal(c->first->argv[0], "leaf");
	conf_free(c);
}

static void test_includes_deeper_than_max_include_are_an_error(void **state)
{
	struct tmp *t = *state;
	const char *top = write_chain(t, CONF_MAX_INCLUDE + 1);

	expect_file_error(top, "%s/f%d.conf:2: includes nested deeper than %d (include loop?)",
			  t->dir, CONF_MAX_INCLUDE, CONF_MAX_INCLUDE);
}

static void test_include_cycle_is_caught(void **state)
{
	struct tmp *t = *state;
	const char *a = tmp_write(t, "a.conf", "x;\ninclude \"b.conf\";\n");

	tmp_write(t, "b.conf", "include \"a.conf\";\n");

	/* a b a b a b a b a, and the a at nesting 8 may include no more */
	expect_file_error(a, "%s:2: includes nested deeper than 8 (include loop?)", a);
}

/* conf_error and dispatch */

static void test_conf_error_prefixes_file_and_line(void **state)
{
	struct conf *c = parse("\n\nfoo bar;");
	char err[CONF_ERR_LEN];

	assert_int_equal(conf_error(err, sizeof(err), c->first, "bad %s %d", "thing", 7), -1);
	assert_string_equal(err, "t.conf:3: bad thing 7");
	conf_free(c);
}

struct record {
	unsigned calls;
	char seen[8][32];
	unsigned lines[8];
};

static int h_record(const struct conf_stmt *s, void *ctx, char *err, size_t err_len)
{
	struct record *r = ctx;

	if (r->calls < 8) {
		snprintf(r->seen[r->calls], sizeof(r->seen[0]), "%s/%u", s->argv[0], s->argc);
		r->lines[r->calls] = s->line;
	}
	r->calls++;
	return 0;
}

static int h_workers(const struct conf_stmt *s, void *ctx, char *err, size_t err_len)
{
	uint64_t v;

	return conf_arg_uint(s, 1, 1, 64, &v, err, err_len);
}

static int h_quiet_fail(const struct conf_stmt *s, void *ctx, char *err, size_t err_len)
{
	return -1;
}

static const struct conf_keyword inner_table[] = {
	{ "server", 2, 4, CONF_NO_BLOCK, h_record },
	{ NULL, 0, 0, 0, NULL },
};

static int h_route(const struct conf_stmt *s, void *ctx, char *err, size_t err_len)
{
	h_record(s, ctx, err, err_len);
	return conf_dispatch(s->block, inner_table, ctx, err, err_len);
}

static const struct conf_keyword table[] = {
	{ "listen", 2, 4, CONF_NO_BLOCK, h_record },
	{ "workers", 2, 2, CONF_NO_BLOCK, h_workers },
	{ "flag", 1, 1, CONF_NO_BLOCK, h_record },
	{ "peer", 2, CONF_MAX_ARGS, CONF_NO_BLOCK, h_record },
	{ "route", 2, 2, CONF_BLOCK, h_route },
	{ "options", 1, 1, CONF_BLOCK_OPTIONAL, h_record },
	{ "ignored", 1, 3, CONF_BLOCK_OPTIONAL, NULL },
	{ "quiet", 1, 1, CONF_NO_BLOCK, h_quiet_fail },
	{ NULL, 0, 0, 0, NULL },
};

static int dispatch_text(const char *text, struct record *r, char *err)
{
	struct conf *c = parse(text);
	int rc;

	memset(r, 0, sizeof(*r));
	rc = conf_dispatch(c->first, table, r, err, CONF_ERR_LEN);
	conf_free(c);
	return rc;
}

static void expect_dispatch_error(const char *text, const char *want)
{
	char err[CONF_ERR_LEN];
	struct record r;

	assert_int_equal(dispatch_text(text, &r, err), -1);
	assert_string_equal(err, want);
}

static void test_dispatch_calls_handlers_in_order_with_ctx(void **state)
{
	char err[CONF_ERR_LEN];
	struct record r;

	assert_int_equal(dispatch_text("listen ::1;\nflag;\nroute x {\n server a;\n server b c;\n}\n"
				       "options;\noptions { }\nignored 1 { x; }\nworkers 4;\n",
				       &r, err), 0);
	assert_int_equal(r.calls, 7);
	assert_string_equal(r.seen[0], "listen/2");
	assert_string_equal(r.seen[1], "flag/1");
	assert_string_equal(r.seen[2], "route/2");
	assert_string_equal(r.seen[3], "server/2");
	assert_int_equal(r.lines[3], 4);
	assert_string_equal(r.seen[4], "server/3");
	assert_string_equal(r.seen[5], "options/1");
	assert_string_equal(r.seen[6], "options/1");
}

static void test_dispatch_of_empty_list_succeeds(void **state)
{
	char err[CONF_ERR_LEN];

	assert_int_equal(conf_dispatch(NULL, table, NULL, err, sizeof(err)), 0);
}

static void test_dispatch_unknown_statement(void **state)
{
	expect_dispatch_error("flag;\n\nfrobnicate 1;", "t.conf:3: unknown statement 'frobnicate'");
	expect_dispatch_error("l;", "t.conf:1: unknown statement 'l'");
}

static void test_dispatch_unknown_statement_suggests_close_keyword(void **state)
{
	expect_dispatch_error("listne ::1;", "t.conf:1: unknown statement 'listne' (did you mean 'listen'?)");
	expect_dispatch_error("worker 4;", "t.conf:1: unknown statement 'worker' (did you mean 'workers'?)");
	expect_dispatch_error("lstn ::1;", "t.conf:1: unknown statement 'lstn' (did you mean 'listen'?)");
	expect_dispatch_error("rout x { }", "t.conf:1: unknown statement 'rout' (did you mean 'route'?)");
	expect_dispatch_error("Flag;", "t.conf:1: unknown statement 'Flag' (did you mean 'flag'?)");
	/* three edits away */
	expect_dispatch_error("lis ::1;", "t.conf:1: unknown statement 'lis'");
}

static void test_dispatch_unknown_in_nested_block_names_its_line(void **state)
{
	expect_dispatch_error("route x {\n server a;\n sever b;\n}",
			      "t.conf:3: unknown statement 'sever' (did you mean 'server'?)");
}

static void test_dispatch_checks_word_counts(void **state)
{
	expect_dispatch_error("listen a b c d;", "t.conf:1: 'listen' takes 2 to 4 words, got 5");
	expect_dispatch_error("listen;", "t.conf:1: 'listen' takes 2 to 4 words, got 1");
	expect_dispatch_error("workers;", "t.conf:1: 'workers' takes 2 words, got 1");
	expect_dispatch_error("flag x;", "t.conf:1: 'flag' takes 1 word, got 2");
	expect_dispatch_error("peer;", "t.conf:1: 'peer' takes at least 2 words, got 1");
}

static void test_dispatch_checks_block_rules(void **state)
{
	expect_dispatch_error("route x;", "t.conf:1: 'route' needs a { block }");
	expect_dispatch_error("\nlisten ::1 { }", "t.conf:2: 'listen' takes no { block }");
}

static void test_dispatch_passes_on_handler_errors(void **state)
{
	char err[CONF_ERR_LEN];
	struct record r;

	assert_int_equal(dispatch_text("flag;\nworkers 100;\nflag;", &r, err), -1);
	assert_string_equal(err, "t.conf:2: 'workers' must be between 1 and 64");
	/* stops at the first error */
	assert_int_equal(r.calls, 1);
}

static void test_dispatch_gives_quiet_handler_failures_a_location(void **state)
{
	expect_dispatch_error("\nquiet;", "t.conf:2: invalid 'quiet' statement");
}

/* Argument helpers */

/* The single statement of text; freed with the conf by done(). */
static struct conf *arg_conf;

static const struct conf_stmt *stmt(const char *text)
{
	conf_free(arg_conf);
	arg_conf = parse(text);
	return arg_conf->first;
}

static int arg_teardown(void **state)
{
	conf_free(arg_conf);
	arg_conf = NULL;
	return 0;
}

static void test_uint_accepts_decimal_in_range(void **state)
{
	char err[CONF_ERR_LEN];
	uint64_t v = 99;

	assert_int_equal(conf_arg_uint(stmt("workers 1;"), 1, 1, 64, &v, err, sizeof(err)), 0);
	assert_int_equal(v, 1);
	assert_int_equal(conf_arg_uint(stmt("workers 64;"), 1, 1, 64, &v, err, sizeof(err)), 0);
	assert_int_equal(v, 64);
	assert_int_equal(conf_arg_uint(stmt("workers 007;"), 1, 1, 64, &v, err, sizeof(err)), 0);
	assert_int_equal(v, 7);
	assert_int_equal(conf_arg_uint(stmt("n \"0\";"), 1, 0, 0, &v, err, sizeof(err)), 0);
	assert_int_equal(v, 0);
	assert_int_equal(conf_arg_uint(stmt("n 18446744073709551615;"), 1, 0, UINT64_MAX, &v,
				       err, sizeof(err)), 0);
	assert_true(v == UINT64_MAX);
}

static void expect_uint_error(const char *text, unsigned idx, uint64_t min, uint64_t max,
			      const char *want)
{
	char err[CONF_ERR_LEN];
	uint64_t v = 12345;

	assert_int_equal(conf_arg_uint(stmt(text), idx, min, max, &v, err, sizeof(err)), -1);
	assert_string_equal(err, want);
	assert_int_equal(v, 12345);
}

static void test_uint_rejects_signs_empty_and_non_digits(void **state)
{
	expect_uint_error("workers -1;", 1, 0, 64, "t.conf:1: 'workers' must be a number, got '-1'");
	expect_uint_error("workers +1;", 1, 0, 64, "t.conf:1: 'workers' must be a number, got '+1'");
	expect_uint_error("workers \"\";", 1, 0, 64, "t.conf:1: 'workers' must be a number, got ''");
	expect_uint_error("workers 4x;", 1, 0, 64, "t.conf:1: 'workers' must be a number, got '4x'");
	expect_uint_error("workers 0x10;", 1, 0, 64, "t.conf:1: 'workers' must be a number, got '0x10'");
	expect_uint_error("workers \" 4\";", 1, 0, 64, "t.conf:1: 'workers' must be a number, got ' 4'");
	expect_uint_error("workers 1.5;", 1, 0, 64, "t.conf:1: 'workers' must be a number, got '1.5'");
}

static void test_uint_rejects_out_of_range_and_overflow(void **state)
{
	expect_uint_error("\nworkers 0;", 1, 1, 64, "t.conf:2: 'workers' must be between 1 and 64");
	expect_uint_error("workers 65;", 1, 1, 64, "t.conf:1: 'workers' must be between 1 and 64");
	expect_uint_error("n 18446744073709551616;", 1, 0, UINT64_MAX,
			  "t.conf:1: 'n' must be between 0 and 18446744073709551615");
	expect_uint_error("n 99999999999999999999999999;", 1, 1, 64,
			  "t.conf:1: 'n' must be between 1 and 64");
}

static void test_arg_errors_name_the_option_word_before_the_value(void **state)
{
	expect_uint_error("listen ::1 port 70000;", 3, 1, 65535,
			  "t.conf:1: 'port' must be between 1 and 65535");
	/* a value before it is no name: fall back to the keyword */
	expect_uint_error("server 192.0.2.1 70000;", 2, 1, 100,
			  "t.conf:1: 'server' must be between 1 and 100");
	expect_uint_error("server \"port\" x;", 2, 1, 100,
			  "t.conf:1: 'server' must be a number, got 'x'");
}

static void test_missing_argument_is_an_error(void **state)
{
	expect_uint_error("workers;", 1, 1, 64, "t.conf:1: 'workers' needs a value");
	expect_uint_error("listen ::1 port;", 3, 1, 65535,
			  "t.conf:1: 'listen' needs a value after 'port'");
}

static void test_bool_accepts_on_off_yes_no_true_false(void **state)
{
	static const char *const words[] = { "on", "off", "yes", "no", "true", "false" };
	char err[CONF_ERR_LEN], text[32];

	for (unsigned i = 0; i < 6; i++) {
		bool b = i % 2;

		snprintf(text, sizeof(text), "ipv6 %s;", words[i]);
		assert_int_equal(conf_arg_bool(stmt(text), 1, &b, err, sizeof(err)), 0);
		assert_int_equal(b, i % 2 == 0);
	}
}

static void test_bool_rejects_other_words(void **state)
{
	static const char *const bad[] = { "maybe", "ON", "1", "", "of" };
	char err[CONF_ERR_LEN], text[32], want[128];

	for (unsigned i = 0; i < 5; i++) {
		bool b = true;

		snprintf(text, sizeof(text), "ipv6 \"%s\";", bad[i]);
		snprintf(want, sizeof(want),
			 "t.conf:1: 'ipv6' must be on/off, yes/no or true/false, got '%s'", bad[i]);
		assert_int_equal(conf_arg_bool(stmt(text), 1, &b, err, sizeof(err)), -1);
		assert_string_equal(err, want);
		assert_true(b);
	}
}

static void expect_duration(const char *word, uint64_t want)
{
	char err[CONF_ERR_LEN], text[64];
	uint64_t v;

	snprintf(text, sizeof(text), "timeout %s;", word);
	if (conf_arg_duration_ms(stmt(text), 1, 0, UINT64_MAX, &v, err, sizeof(err)) < 0)
		fail_msg("%s: %s", word, err);
	assert_true(v == want);
}

static void expect_duration_error(const char *word, uint64_t min, uint64_t max, const char *want)
{
	char err[CONF_ERR_LEN], text[64];
	uint64_t v = 777;

	snprintf(text, sizeof(text), "timeout \"%s\";", word);
	assert_int_equal(conf_arg_duration_ms(stmt(text), 1, min, max, &v, err, sizeof(err)), -1);
	assert_string_equal(err, want);
	assert_int_equal(v, 777);
}

static void test_duration_units_and_bare_seconds(void **state)
{
	expect_duration("250ms", 250);
	expect_duration("5s", 5000);
	expect_duration("2m", 120000);
	expect_duration("1h", 3600000);
	expect_duration("7", 7000);
	expect_duration("0", 0);
	expect_duration("0ms", 0);
	expect_duration("18446744073709551615ms", UINT64_MAX);
	expect_duration("5124095576030h", 5124095576030ull * 3600000);
}

static void test_duration_rejects_bad_units_and_numbers(void **state)
{
	static const char *const bad[] = {
		"5x", "ms", "", "-5s", "+5s", "1.5s", "5 s", "5S", "5sec", "5hh", " 5s", "h1",
	};
	char want[128];

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(want, sizeof(want),
			 "t.conf:1: 'timeout' must be a duration such as 250ms, 5s, 2m or 1h, got '%s'",
			 bad[i]);
		expect_duration_error(bad[i], 0, UINT64_MAX, want);
	}
}

static void test_duration_rejects_out_of_range_and_overflow(void **state)
{
	expect_duration_error("99ms", 100, 3600000, "t.conf:1: 'timeout' must be between 100ms and 1h");
	expect_duration_error("61m", 100, 3600000, "t.conf:1: 'timeout' must be between 100ms and 1h");
	expect_duration_error("2", 1000, 1500, "t.conf:1: 'timeout' must be between 1s and 1500ms");
	expect_duration_error("0", 60000, 7200000, "t.conf:1: 'timeout' must be between 1m and 2h");
	expect_duration_error("5124095576031h", 0, UINT64_MAX,
			      "t.conf:1: 'timeout' must be between 0s and 18446744073709551615ms");
	expect_duration_error("18446744073709551616ms", 0, UINT64_MAX,
			      "t.conf:1: 'timeout' must be between 0s and 18446744073709551615ms");
	expect_duration_error("18446744073709551615", 0, UINT64_MAX,
			      "t.conf:1: 'timeout' must be between 0s and 18446744073709551615ms");
}

static void test_addr_accepts_ipv4_and_ipv6(void **state)
{
	static const uint8_t v4[16] = { 192, 0, 2, 1 };
	static const uint8_t v6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
	char err[CONF_ERR_LEN];
	uint8_t a[16];
	int fam;

	memset(a, 0xee, sizeof(a));
	assert_int_equal(conf_arg_addr(stmt("listen 192.0.2.1;"), 1, &fam, a, err, sizeof(err)), 0);
	assert_int_equal(fam, AF_INET);
	assert_memory_equal(a, v4, 16);
	assert_int_equal(conf_arg_addr(stmt("listen \"2001:db8::1\";"), 1, &fam, a, err, sizeof(err)), 0);
	assert_int_equal(fam, AF_INET6);
	assert_memory_equal(a, v6, 16);
}

static void test_addr_rejects_non_addresses(void **state)
{
	static const char *const bad[] = {
		"1.2.3", "256.1.1.1", "1.2.3.4.5", "fe80::1%eth0", "foo", "", "::g", "10.0.0.0/8",
		"1.2.3.4 ",
	};
	char err[CONF_ERR_LEN], text[64], want[128];
	uint8_t a[16] = { 0 };
	int fam = 42;

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "listen \"%s\";", bad[i]);
		snprintf(want, sizeof(want),
			 "t.conf:1: 'listen' must be an IPv4 or IPv6 address, got '%s'", bad[i]);
		assert_int_equal(conf_arg_addr(stmt(text), 1, &fam, a, err, sizeof(err)), -1);
		assert_string_equal(err, want);
		assert_int_equal(fam, 42);
	}
}

static void expect_prefix(const char *word, int want_fam, unsigned want_len, const char *want_addr)
{
	char err[CONF_ERR_LEN], text[80];
	uint8_t a[16], want[16] = { 0 };
	unsigned len;
	int fam;

	snprintf(text, sizeof(text), "allow %s;", word);
	if (conf_arg_prefix(stmt(text), 1, &fam, a, &len, err, sizeof(err)) < 0)
		fail_msg("%s: %s", word, err);
	assert_int_equal(fam, want_fam);
	assert_int_equal(len, want_len);
	assert_int_equal(inet_pton(want_fam, want_addr, want), 1);
	assert_memory_equal(a, want, 16);
}

static void test_prefix_accepts_prefixes_and_bare_addresses(void **state)
{
	expect_prefix("10.0.0.0/8", AF_INET, 8, "10.0.0.0");
	expect_prefix("10.128.0.0/9", AF_INET, 9, "10.128.0.0");
	expect_prefix("0.0.0.0/0", AF_INET, 0, "0.0.0.0");
	expect_prefix("192.0.2.1/32", AF_INET, 32, "192.0.2.1");
	expect_prefix("192.0.2.1", AF_INET, 32, "192.0.2.1");
	expect_prefix("::/0", AF_INET6, 0, "::");
	expect_prefix("::1", AF_INET6, 128, "::1");
	expect_prefix("2001:db8::/32", AF_INET6, 32, "2001:db8::");
	expect_prefix("2001:db8:8000::/33", AF_INET6, 33, "2001:db8:8000::");
	expect_prefix("2001:db8::1/128", AF_INET6, 128, "2001:db8::1");
}

static void expect_prefix_error(const char *word, const char *want)
{
	char err[CONF_ERR_LEN], text[80];
	uint8_t a[16];
	unsigned len = 99;
	int fam = 42;

	snprintf(text, sizeof(text), "allow \"%s\";", word);
	assert_int_equal(conf_arg_prefix(stmt(text), 1, &fam, a, &len, err, sizeof(err)), -1);
	assert_string_equal(err, want);
	assert_int_equal(fam, 42);
	assert_int_equal(len, 99);
}

static void test_prefix_rejects_host_bits(void **state)
{
	expect_prefix_error("10.0.0.1/8", "t.conf:1: 10.0.0.1/8 has host bits set");
	expect_prefix_error("10.192.0.0/9", "t.conf:1: 10.192.0.0/9 has host bits set");
	expect_prefix_error("0.0.0.1/0", "t.conf:1: 0.0.0.1/0 has host bits set");
	expect_prefix_error("2001:db8::1/64", "t.conf:1: 2001:db8::1/64 has host bits set");
	expect_prefix_error("2001:db8:c000::/33", "t.conf:1: 2001:db8:c000::/33 has host bits set");
}

static void test_prefix_rejects_lengths_beyond_the_family(void **state)
{
	expect_prefix_error("10.0.0.0/33", "t.conf:1: 10.0.0.0/33: IPv4 prefix length must be at most 32");
	expect_prefix_error("::/129", "t.conf:1: ::/129: IPv6 prefix length must be at most 128");
}

static void test_prefix_rejects_malformed_prefixes(void **state)
{
	static const char *const bad[] = {
		"10.0.0.0/", "10.0.0.0/-1", "10.0.0.0/+8", "10.0.0.0/8/8", "/8", "10.0.0.0/8x",
		"10.0.0/8", "foo/8", "", "10.0.0.0/ 8", "10.0.0.0/99999999999999999999999",
		"0000:0000:0000:0000:0000:0000:0000:0000:0000/8",
		"00000000000000000000000000000000000000000000000000/8",
	};
	char want[160];

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(want, sizeof(want),
			 "t.conf:1: 'allow' must be a prefix such as 10.0.0.0/8 or 2001:db8::/32, got '%s'",
			 bad[i]);
		expect_prefix_error(bad[i], want);
	}
}

static void test_choice_returns_the_index(void **state)
{
	static const char *const modes[] = { "fast", "slow", "auto", NULL };
	char err[CONF_ERR_LEN];
	unsigned i = 99;

	assert_int_equal(conf_arg_choice(stmt("mode auto;"), 1, modes, &i, err, sizeof(err)), 0);
	assert_int_equal(i, 2);
	assert_int_equal(conf_arg_choice(stmt("mode fast;"), 1, modes, &i, err, sizeof(err)), 0);
	assert_int_equal(i, 0);
}

static void test_choice_error_lists_the_choices(void **state)
{
	static const char *const modes[] = { "fast", "slow", "auto", NULL };
	static const char *const two[] = { "a", "b", NULL };
	static const char *const one[] = { "only", NULL };
	char err[CONF_ERR_LEN];
	unsigned i = 99;

	assert_int_equal(conf_arg_choice(stmt("mode turbo;"), 1, modes, &i, err, sizeof(err)), -1);
	assert_string_equal(err, "t.conf:1: 'mode' must be fast, slow or auto, got 'turbo'");
	assert_int_equal(i, 99);
	assert_int_equal(conf_arg_choice(stmt("mode Fast;"), 1, two, &i, err, sizeof(err)), -1);
	assert_string_equal(err, "t.conf:1: 'mode' must be a or b, got 'Fast'");
	assert_int_equal(conf_arg_choice(stmt("x y;"), 1, one, &i, err, sizeof(err)), -1);
	assert_string_equal(err, "t.conf:1: 'x' must be only, got 'y'");
}

#define T(name) cmocka_unit_test(name)
#define TF(name) cmocka_unit_test_setup_teardown(name, tmp_setup, tmp_teardown)
#define TA(name) cmocka_unit_test_teardown(name, arg_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_statements_keep_words_lines_and_file),
		T(test_statement_line_is_that_of_its_first_word),
		T(test_nested_blocks_build_a_tree),
		T(test_empty_block_is_a_block),
		T(test_block_may_be_followed_by_a_semicolon),
		T(test_empty_statements_are_ignored),
		T(test_empty_input_gives_empty_tree),
		T(test_words_stop_at_punctuation),
		T(test_crlf_and_tabs_are_blanks),
		T(test_max_words_and_max_word_length_are_accepted),
		T(test_nesting_to_max_depth_is_accepted),

		T(test_quoted_strings_keep_blanks_and_are_marked_quoted),
		T(test_string_escapes_quote_and_backslash),
		T(test_comment_marks_inside_strings_are_text),
		T(test_other_escapes_are_errors),
		T(test_newline_inside_string_is_an_error),
		T(test_unterminated_string_names_its_first_line),

		T(test_hash_comment_runs_to_end_of_line),
		T(test_hash_ends_a_bare_word),
		T(test_slash_slash_comment_runs_to_end_of_line),
		T(test_block_comment_may_span_lines),
		T(test_slashes_inside_words_are_not_comments),
		T(test_unterminated_comment_names_its_first_line),

		T(test_missing_semicolon_at_end_of_file),
		T(test_missing_semicolon_before_closing_brace),
		T(test_unmatched_closing_brace),
		T(test_unmatched_opening_brace_names_its_line),
		T(test_block_without_a_statement_is_an_error),
		T(test_nesting_deeper_than_max_depth_is_an_error),
		T(test_too_many_words_is_an_error),
		T(test_overlong_words_are_errors),
		T(test_nul_byte_is_an_error_naming_its_line),
		T(test_text_larger_than_max_file_is_an_error),
		T(test_errors_with_null_or_tiny_buffers_are_safe),

		TF(test_file_is_parsed_with_its_name),
		TF(test_missing_file_is_an_error),
		TF(test_file_larger_than_max_file_is_an_error),
		TF(test_include_splices_statements_in_place),
		TF(test_include_inside_block_splices_into_block),
		TF(test_include_is_relative_to_the_including_file),
		TF(test_include_accepts_absolute_paths),
		TF(test_include_in_text_resolves_against_cwd),
		TF(test_errors_in_included_file_name_that_file),
		TF(test_included_file_must_balance_its_own_braces),
		TF(test_include_of_missing_file_names_the_include),
		T(test_include_needs_exactly_one_name_and_no_block),
		TF(test_includes_nest_to_max_include),
		TF(test_includes_deeper_than_max_include_are_an_error),
		TF(test_include_cycle_is_caught),

		T(test_conf_error_prefixes_file_and_line),
		T(test_dispatch_calls_handlers_in_order_with_ctx),
		T(test_dispatch_of_empty_list_succeeds),
		T(test_dispatch_unknown_statement),
		T(test_dispatch_unknown_statement_suggests_close_keyword),
		T(test_dispatch_unknown_in_nested_block_names_its_line),
		T(test_dispatch_checks_word_counts),
		T(test_dispatch_checks_block_rules),
		T(test_dispatch_passes_on_handler_errors),
		T(test_dispatch_gives_quiet_handler_failures_a_location),

		TA(test_uint_accepts_decimal_in_range),
		TA(test_uint_rejects_signs_empty_and_non_digits),
		TA(test_uint_rejects_out_of_range_and_overflow),
		TA(test_arg_errors_name_the_option_word_before_the_value),
		TA(test_missing_argument_is_an_error),
		TA(test_bool_accepts_on_off_yes_no_true_false),
		TA(test_bool_rejects_other_words),
		TA(test_duration_units_and_bare_seconds),
		TA(test_duration_rejects_bad_units_and_numbers),
		TA(test_duration_rejects_out_of_range_and_overflow),
		TA(test_addr_accepts_ipv4_and_ipv6),
		TA(test_addr_rejects_non_addresses),
		TA(test_prefix_accepts_prefixes_and_bare_addresses),
		TA(test_prefix_rejects_host_bits),
		TA(test_prefix_rejects_lengths_beyond_the_family),
		TA(test_prefix_rejects_malformed_prefixes),
		TA(test_choice_returns_the_index),
		TA(test_choice_error_lists_the_choices),
	};

	return cmocka_run_group_tests_name("conf", tests, NULL, NULL);
}
