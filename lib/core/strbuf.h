/*
 * A growing string: control replies and `show` output are built in one,
 * so no line has a fixed limit to overflow.  Out of memory is sticky
 * (nomem) and leaves what was built so far.
 */
#ifndef CR_STRBUF_H
#define CR_STRBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

struct strbuf {
	char *s;                        /* NUL-terminated once anything was added */
	size_t len, cap;
	bool nomem;
};

/* Room for `more` bytes and a NUL after len; false (nomem set) if out of memory. */
bool strbuf_reserve(struct strbuf *b, size_t more);
void strbuf_addf(struct strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strbuf_vaddf(struct strbuf *b, const char *fmt, va_list ap);
/* s as the contents of a JSON string: quotes, backslashes and control bytes escaped. */
void strbuf_add_json(struct strbuf *b, const char *s);
/* Empties it, keeping the memory. */
void strbuf_reset(struct strbuf *b);
void strbuf_free(struct strbuf *b);

static inline const char *strbuf_str(const struct strbuf *b)
{
	return b->s ? b->s : "";
}

#endif
