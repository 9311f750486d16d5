/*
 * The Prometheus text exposition format (prom.h).
 */
#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prom.h"

void prom_init(struct prom *p)
{
	memset(p, 0, sizeof(*p));
}

void prom_reset(struct prom *p)
{
	strbuf_reset(&p->b);
	p->b.nomem = false;
}

void prom_free(struct prom *p)
{
	strbuf_free(&p->b);
}

/* Nothing after a failed append: the output has no holes. */
static void put(struct prom *p, const char *s, size_t n)
{
	if (p->b.nomem || !strbuf_reserve(&p->b, n))
		return;
	memcpy(p->b.s + p->b.len, s, n);
	p->b.len += n;
	p->b.s[p->b.len] = 0;
}

static void puts_(struct prom *p, const char *s)
{
	put(p, s, strlen(s));
}

static void putf(struct prom *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct prom *p, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		put(p, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* Label values escape \ " and newline; help text \ and newline. */
static void put_escaped(struct prom *p, const char *s, bool quote)
{
	for (; *s; s++) {
		if (*s == '\\')
			puts_(p, "\\\\");
		else if (*s == '\n')
			puts_(p, "\\n");
		else if (*s == '"' && quote)
			puts_(p, "\\\"");
		else
			put(p, s, 1);
	}
}

#ifndef NDEBUG
/* [a-zA-Z_:][a-zA-Z0-9_:]*; labels without ':' */
static bool valid_name(const char *s, bool label)
{
	if (!*s || (*s >= '0' && *s <= '9'))
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '_' || (*s == ':' && !label)))
			return false;
	return true;
}
#endif

void prom_family(struct prom *p, const char *name, enum prom_type type, const char *help)
{
	static const char *const types[] = { "counter", "gauge", "histogram" };
	assert(valid_name(name, false));
	puts_(p, "# HELP ");
	puts_(p, name);
	puts_(p, " ");
	put_escaped(p, help, false);
	puts_(p, "\n# TYPE ");
	puts_(p, name);
	puts_(p, " ");
	puts_(p, types[type]);
	puts_(p, "\n");
}

static void put_series(struct prom *p, const char *name, const char *suffix,
		       const struct prom_label *labels, unsigned nlabels, const char *le)
{
	assert(valid_name(name, false));
	puts_(p, name);
	puts_(p, suffix);
	if (nlabels == 0 && !le)
		return;
	puts_(p, "{");
	for (unsigned i = 0; i < nlabels; i++) {
		assert(valid_name(labels[i].name, true));
		if (i)
			puts_(p, ",");
		puts_(p, labels[i].name);
		puts_(p, "=\"");
		put_escaped(p, labels[i].value ? labels[i].value : "", true);
		puts_(p, "\"");
	}
	if (le) {
		puts_(p, nlabels ? ",le=\"" : "le=\"");
		puts_(p, le);
		puts_(p, "\"");
	}
	puts_(p, "}");
}

/* The shortest text that reads back as the same double. */
static void format_double(double v, char *buf, size_t len)
{
	if (isnan(v)) {
		snprintf(buf, len, "NaN");
		return;
	}
	if (isinf(v)) {
		snprintf(buf, len, v > 0 ? "+Inf" : "-Inf");
		return;
	}
	for (int prec = 6; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

void prom_u64(struct prom *p, const char *name, const struct prom_label *labels, unsigned nlabels,
	      uint64_t value)
{
	put_series(p, name, "", labels, nlabels, NULL);
	putf(p, " %llu\n", (unsigned long long)value);
}

void prom_double(struct prom *p, const char *name, const struct prom_label *labels, unsigned nlabels,
		 double value)
{
	char v[32];
	format_double(value, v, sizeof(v));
	put_series(p, name, "", labels, nlabels, NULL);
	putf(p, " %s\n", v);
}

void prom_one(struct prom *p, const char *name, enum prom_type type, const char *help, double value)
{
	prom_family(p, name, type, help);
	prom_double(p, name, NULL, 0, value);
}

void prom_histogram(struct prom *p, const char *name, const struct prom_label *labels, unsigned nlabels,
		    const struct prom_histogram *h)
{
	uint64_t cum = 0;
	char le[32];
	for (unsigned i = 0; i <= h->nbounds; i++) {
		cum += h->counts[i];
		if (i < h->nbounds)
			format_double(h->bounds[i], le, sizeof(le));
		else
			snprintf(le, sizeof(le), "+Inf");
		put_series(p, name, "_bucket", labels, nlabels, le);
		putf(p, " %llu\n", (unsigned long long)cum);
	}
	char v[32];
	format_double(h->sum, v, sizeof(v));
	put_series(p, name, "_sum", labels, nlabels, NULL);
	putf(p, " %s\n", v);
	put_series(p, name, "_count", labels, nlabels, NULL);
	putf(p, " %llu\n", (unsigned long long)cum);
}
