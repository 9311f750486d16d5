#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo.h"
#include "vec.h"

#define MAX_ROUTERS     (1u << 24)

struct edge {
	uint32_t a, b, delay_us;
	uint8_t rel_ab;                 /* what b is to a */
};

/* Nothing but blanks after a statement's fields. */
static bool blank(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return *p == '\0';
}

static int by_from_to(const void *x, const void *y)
{
	const struct topo_link *p = x, *q = y;
	return p->to < q->to ? -1 : p->to > q->to;
}

static uint8_t reverse(uint8_t rel)
{
	return rel == REL_CUSTOMER ? REL_PROVIDER : rel == REL_PROVIDER ? REL_CUSTOMER : rel;
}

int topo_load(struct topo *t, const char *path, char *err, size_t err_len)
{
	memset(t, 0, sizeof(*t));
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, err_len, "%s: %s", path, strerror(errno));
		return -1;
	}
	struct edge *e = NULL;
	size_t ne = 0, cap = 0;
	char line[512];
	unsigned lineno = 0;
	bool have_n = false;
	int rc = -1;
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			snprintf(err, err_len, "%s:%u: line too long", path, lineno);
			goto out;
		}
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		char kw[16], rel[16], label[32];
		unsigned long a, b, us;
		int used = 0, end = 0;
		if (sscanf(line, " %15s%n", kw, &used) != 1)
			continue;
		if (strcmp(kw, "routers") == 0) {
			if (have_n || sscanf(line + used, "%lu%n", &a, &end) != 1 || !blank(line + used + end) || a == 0 ||
			    a > MAX_ROUTERS) {
				snprintf(err, err_len, "%s:%u: routers: one count 1..%u, once", path, lineno, MAX_ROUTERS);
				goto out;
			}
			t->n = (uint32_t)a;
			have_n = true;
		} else if (strcmp(kw, "link") == 0) {
			char *rest = line + used;
			if (!have_n || sscanf(rest, "%lu %lu %15s %lu%n", &a, &b, rel, &us, &end) != 4 || !blank(rest + end) ||
			    a >= t->n || b >= t->n || a == b || us > 10000000) {
				snprintf(err, err_len, "%s:%u: link: A B p2c|p2p|flat DELAY_US, A and B distinct "
					 "routers below %u (after `routers`), delay at most 10 s", path, lineno, t->n);
				goto out;
			}
			uint8_t r;
			if (strcmp(rel, "p2c") == 0)
				r = REL_CUSTOMER;       /* a provides to b: b is a's customer */
			else if (strcmp(rel, "p2p") == 0)
				r = REL_PEER;
			else if (strcmp(rel, "flat") == 0)
				r = REL_FLAT;
			else {
				snprintf(err, err_len, "%s:%u: link: relationship %s, not p2c, p2p or flat", path,
					 lineno, rel);
				goto out;
			}
			if (VEC_RESERVE(e, cap, ne + 1) < 0) {
				snprintf(err, err_len, "%s:%u: out of memory", path, lineno);
				goto out;
			}
			e[ne++] = (struct edge){ (uint32_t)a, (uint32_t)b, (uint32_t)us, r };
		} else if (strcmp(kw, "mark") == 0) {
			if (!have_n || sscanf(line + used, "%31s %lu%n", label, &a, &end) != 2 || !blank(line + used + end) ||
			    a >= t->n ||
			    strlen(label) >= sizeof(t->mark[0].label) || t->nmarks == TOPO_MARKS) {
				snprintf(err, err_len, "%s:%u: mark: LABEL (under 16 bytes) ROUTER, at most %u marks",
					 path, lineno, TOPO_MARKS);
				goto out;
			}
			snprintf(t->mark[t->nmarks].label, sizeof(t->mark[0].label), "%s", label);
			t->mark[t->nmarks++].router = (uint32_t)a;
		} else {
			snprintf(err, err_len, "%s:%u: unknown keyword %s", path, lineno, kw);
			goto out;
		}
	}
	if (ferror(f)) {
		snprintf(err, err_len, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (!have_n) {
		snprintf(err, err_len, "%s: no `routers` line", path);
		goto out;
	}
	t->first = calloc((size_t)t->n + 1, sizeof(*t->first));
	t->link = malloc((2 * ne + 1) * sizeof(*t->link));
	if (!t->first || !t->link) {
		snprintf(err, err_len, "%s: out of memory for %zu links", path, ne);
		goto out;
	}
	for (size_t k = 0; k < ne; k++) {
		t->first[e[k].a + 1]++;
		t->first[e[k].b + 1]++;
	}
	for (uint32_t i = 0; i < t->n; i++)
		t->first[i + 1] += t->first[i];
	uint32_t *fill = malloc((size_t)t->n * sizeof(*fill));
	if (!fill) {
		snprintf(err, err_len, "%s: out of memory", path);
		goto out;
	}
	memcpy(fill, t->first, (size_t)t->n * sizeof(*fill));
	for (size_t k = 0; k < ne; k++) {
		t->link[fill[e[k].a]++] = (struct topo_link){ e[k].b, e[k].delay_us, e[k].rel_ab };
		t->link[fill[e[k].b]++] = (struct topo_link){ e[k].a, e[k].delay_us, reverse(e[k].rel_ab) };
	}
	free(fill);
	t->nlinks = 2 * ne;
	for (uint32_t i = 0; i < t->n; i++) {
		struct topo_link *l = &t->link[t->first[i]];
		size_t n = t->first[i + 1] - t->first[i];
		qsort(l, n, sizeof(*l), by_from_to);
		for (size_t k = 1; k < n; k++)
			if (l[k].to == l[k - 1].to) {
				snprintf(err, err_len, "%s: routers %u and %u are linked twice", path, i, l[k].to);
				goto out;
			}
	}
	rc = 0;
out:
	free(e);
	fclose(f);
	if (rc < 0)
		topo_free(t);
	return rc;
}

void topo_free(struct topo *t)
{
	free(t->first);
	free(t->link);
	t->first = NULL;
	t->link = NULL;
}

long topo_find(const struct topo *t, uint32_t i, uint32_t j)
{
	size_t lo = t->first[i], hi = t->first[i + 1];
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->link[mid].to < j)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < t->first[i + 1] && t->link[lo].to == j ? (long)lo : -1;
}

long topo_mark(const struct topo *t, const char *label)
{
	for (unsigned k = 0; k < t->nmarks; k++)
		if (strcmp(t->mark[k].label, label) == 0)
			return t->mark[k].router;
	return -1;
}
