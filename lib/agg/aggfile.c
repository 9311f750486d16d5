/*
 * Aggregate definition files; see aggfile.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggfile.h"
#include "name.h"
#include "readfile.h"

static inline bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

struct ctx {
	const char *file;
	struct aggfile_result *res;
	aggfile_report_fn report;
	void *rctx;
	unsigned max_reports;
};

static void bad(struct ctx *c, unsigned line, const char *why, const char *detail)
{
	c->res->bad++;
	if (!c->report || c->res->bad > c->max_reports)
		return;
	char msg[512];
	snprintf(msg, sizeof(msg), "%s:%u: %s%s%s", c->file, line, why, detail ? ": " : "", detail ? detail : "");
	c->report(c->rctx, msg);
}

/* One line without its LF: returns -1 only when out of memory. */
static int parse_line(struct ctx *c, unsigned line, const char *p, size_t len, struct nameset *members)
{
	if (memchr(p, 0, len)) {
		bad(c, line, "NUL byte", NULL);
		return 0;
	}
	size_t i = 0;
	while (i < len && blank(p[i]))
		i++;
	if (i == len || p[i] == '#')
		return 0;
	size_t start = i;
	while (i < len && !blank(p[i]))
		i++;
	size_t end = i;
	while (i < len && blank(p[i]))
		i++;
	if (i < len && p[i] != '#') {
		bad(c, line, "more than one name on the line", NULL);
		return 0;
	}
	struct name n;
	int rc = name_from_text(&n, p + start, end - start);
	if (rc != NAME_OK) {
		bad(c, line, "bad name", name_strerror(rc));
		return 0;
	}
	if (n.len == 1) {
		bad(c, line, "the root cannot be a member", NULL);
		return 0;
	}
	int a = nameset_add(members, n.wire, n.len);
	if (a < 0)
		return -1;
	if (a == 0)
		c->res->duplicates++;
	else
		c->res->names++;
	return 0;
}

int aggfile_parse(const char *buf, size_t len, const char *file, struct nameset *members,
		  struct aggfile_result *res, aggfile_report_fn report, void *rctx, unsigned max_reports)
{
	memset(res, 0, sizeof(*res));
	nameset_clear(members);
	struct ctx c = { file, res, report, rctx, max_reports };
	size_t pos = 0;
	while (pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - buf) : len;
		res->lines++;
		if (parse_line(&c, res->lines, buf + pos, end - pos, members) < 0) {
			if (report)
				report(rctx, "out of memory");
			return -1;
		}
		pos = end + 1;
	}
	return res->bad ? -1 : 0;
}

int aggfile_read(const char *path, struct nameset *members, struct aggfile_result *res,
		 aggfile_report_fn report, void *rctx, unsigned max_reports)
{
	memset(res, 0, sizeof(*res));
	char why[128], msg[512];
	size_t len;
	char *buf = readfile(path, 0, false, &len, why, sizeof(why));
	if (!buf) {
		snprintf(msg, sizeof(msg), "%s: %s", path, why);
		goto fail;
	}
	int rc = aggfile_parse(buf, len, path, members, res, report, rctx, max_reports);
	free(buf);
	return rc;
fail:
	res->bad = 1;
	if (report)
		report(rctx, msg);
	return -1;
}
