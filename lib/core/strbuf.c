#include <stdio.h>
#include <stdlib.h>

#include "strbuf.h"
#include "vec.h"

bool strbuf_reserve(struct strbuf *b, size_t more)
{
	if (VEC_RESERVE(b->s, b->cap, b->len + more + 1) < 0) {
		b->nomem = true;
		return false;
	}
	return true;
}

void strbuf_vaddf(struct strbuf *b, const char *fmt, va_list ap)
{
	va_list measure;
	va_copy(measure, ap);
	int n = vsnprintf(NULL, 0, fmt, measure);
	va_end(measure);
	if (n < 0 || !strbuf_reserve(b, (size_t)n))
		return;
	vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
	b->len += (size_t)n;
}

void strbuf_addf(struct strbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	strbuf_vaddf(b, fmt, ap);
	va_end(ap);
}

void strbuf_add_json(struct strbuf *b, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (!strbuf_reserve(b, 6))
			return;
		if (c == '"' || c == '\\')
			b->len += (size_t)sprintf(b->s + b->len, "\\%c", c);
		else if (c < 0x20)
			b->len += (size_t)sprintf(b->s + b->len, "\\u%04x", c);
		else
			b->s[b->len++] = (char)c;
		b->s[b->len] = 0;
	}
}

void strbuf_reset(struct strbuf *b)
{
	b->len = 0;
	if (b->s)
		b->s[0] = 0;
}

void strbuf_free(struct strbuf *b)
{
	free(b->s);
	*b = (struct strbuf){ 0 };
}
