/*
 * The control protocol's reply parser (what inrpc reads from a daemon),
 * and the reply builder fed arbitrary text: whatever goes in, a built
 * reply is whole lines that parse back, one per call.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char line[CTL_MAX_LINE + 1];
	size_t n = size < CTL_MAX_LINE ? size : CTL_MAX_LINE;
	memcpy(line, data, n);
	line[n] = 0;

	int code;
	bool more;
	const char *text;
	if (ctl_parse_line(line, n, &code, &more, &text) == 0 &&
	    (code < 0 || code > 9999 || text != line + 5))
		abort();

	struct ctl_reply r = { 0 };
	ctl_reply_line(&r, CTL_DATA, "%s", line);
	ctl_reply_end(&r, CTL_OK, "%s", line);
	if (!r.out.nomem) {
		unsigned lines = 0;
		for (char *p = r.out.s, *nl; (nl = strchr(p, '\n')); p = nl + 1) {
			*nl = 0;
			if (ctl_parse_line(p, (size_t)(nl - p), &code, &more, &text) < 0)
				abort();
			if (more != (lines == 0))
				abort();
			lines++;
		}
		if (lines != 2)
			abort();
	}
	strbuf_free(&r.out);
	return 0;
}
