/*
 * Aggregate definition files: the members of an aggregate, one name per
 * line in presentation form (lib/dns/name.h), e.g.
 *
 *     # customers of example hosting
 *     shop.example.com
 *     blog.example.org.    # trailing dot optional
 *
 * A '#' at the start of a line or after blanks starts a comment; blank
 * lines are skipped; CR before LF is allowed.  A line with more than one
 * name, a name that does not parse, the root, a NUL byte: a bad line,
 * reported as "file:line: reason".  A name listed twice is one member (the
 * repeats are counted, not errors).  The whole file becomes one new
 * version of the aggregate (aggstore_replace computes the diff).
 */
#ifndef CR_AGGFILE_H
#define CR_AGGFILE_H

#include <stddef.h>

#include "nameset.h"

struct aggfile_result {
	unsigned lines;
	unsigned names;                 /* members added */
	unsigned duplicates;
	unsigned bad;                   /* bad lines: the file should not be used */
};

/* Called for each bad line with "file:line: reason" (at most max_reports times). */
typedef void (*aggfile_report_fn)(void *ctx, const char *msg);

/*
 * Parses buf into members (emptied first).  Returns 0 when every line was
 * good, -1 when there were bad lines (reported) or memory ran out.
 */
int aggfile_parse(const char *buf, size_t len, const char *file, struct nameset *members,
		  struct aggfile_result *res, aggfile_report_fn report, void *ctx, unsigned max_reports);

/* The same from a file; one report "file: reason" if it cannot be read. */
int aggfile_read(const char *path, struct nameset *members, struct aggfile_result *res,
		 aggfile_report_fn report, void *ctx, unsigned max_reports);

#endif
