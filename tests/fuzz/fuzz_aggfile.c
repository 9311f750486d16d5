/*
 * Aggregate definition files: any input parses or reports file:line
 * reasons, one per bad line; every member read prints and parses back to
 * itself.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggfile.h"
#include "name.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned reports;

static void report(void *ctx, const char *msg)
{
	/* "f:LINE: reason" */
	if (strncmp(msg, "f:", 2) != 0 || msg[2] < '1' || msg[2] > '9' || !strstr(msg + 2, ": "))
		abort();
	reports++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nameset m;
	nameset_init(&m);
	struct aggfile_result r;
	reports = 0;
	int rc = aggfile_parse((const char *)data, size, "f", &m, &r, report, NULL, 1000000);
	if ((rc == 0) != (r.bad == 0) || reports != r.bad || m.count != r.names || r.names + r.duplicates + r.bad > r.lines)
		abort();
	size_t pos = 0;
	const uint8_t *w;
	uint8_t l;
	while (nameset_next(&m, &pos, &w, &l)) {
		struct name n, back;
		char text[NAME_MAX_TEXT];
		if (name_from_wire(&n, w, l) != NAME_OK || n.len == 1)
			abort();
		int tl = name_to_text(&n, text, sizeof(text));
		if (tl < 0 || name_from_text(&back, text, (size_t)tl) != NAME_OK || !name_equal(&n, &back))
			abort();
	}
	nameset_free(&m);
	return 0;
}
