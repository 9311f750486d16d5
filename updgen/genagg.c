#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "genagg.h"
#include "nbrp.h"

#define LABEL_PREFIX    "agg"

size_t genagg_wire(const struct genagg *g, unsigned i, uint8_t *out)
{
	char label[16];
	int n = snprintf(label, sizeof(label), LABEL_PREFIX "%u", i + 1);
	out[0] = (uint8_t)n;
	memcpy(out + 1, label, (size_t)n);
	memcpy(out + 1 + n, g->suffix.wire, g->suffix.len);
	return 1u + (size_t)n + g->suffix.len;
}

uint32_t genagg_version(const struct genagg *g, unsigned i)
{
	uint32_t v = 0;
	aggstore_version(g->stores[i], &v);
	return v;
}

/* agg<N>.SUFFIX, N in 1..count without leading zeros: its store. */
static struct aggstore *lookup(void *ctx, const struct name *agg)
{
	struct genagg *g = ctx;
	uint8_t l = agg->wire[0];
	const size_t pl = sizeof(LABEL_PREFIX) - 1;
	if (l <= pl || l > pl + 10 || 1u + l + g->suffix.len != agg->len ||
	    memcmp(agg->wire + 1, LABEL_PREFIX, pl) != 0 || agg->wire[1 + pl] == '0' ||
	    memcmp(agg->wire + 1 + l, g->suffix.wire, g->suffix.len) != 0)
		return NULL;
	uint64_t n = 0;
	for (size_t k = 1 + pl; k <= l; k++) {
		uint8_t c = agg->wire[k];
		if (c < '0' || c > '9')
			return NULL;
		n = n * 10 + (c - '0');
	}
	return n >= 1 && n <= g->count ? g->stores[n - 1] : NULL;
}

int genagg_open(struct genagg *g, unsigned count, const struct name *suffix, char *err, size_t err_len)
{
	memset(g, 0, sizeof(*g));
	g->count = count;
	g->suffix = *suffix;
	namelist_init(&g->empty);
	if (1u + sizeof(LABEL_PREFIX) + 10 + suffix->len > NAME_MAX_WIRE) {
		snprintf(err, err_len, "aggregate suffix too long for agg%u.SUFFIX", count);
		return -1;
	}
	const char *tmp = getenv("TMPDIR");
	snprintf(g->dir, sizeof(g->dir), "%s/nbrp-updgen.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(g->dir)) {
		snprintf(err, err_len, "state directory %s: %s", g->dir, strerror(errno));
		g->dir[0] = 0;
		return -1;
	}
	g->stores = calloc(count, sizeof(*g->stores));
	g->added = calloc(count, sizeof(*g->added));
	if (!g->stores || !g->added) {
		snprintf(err, err_len, "out of memory for %u aggregates", count);
		return -1;
	}
	for (unsigned i = 0; i < count; i++) {
		struct name agg;
		agg.len = (uint8_t)genagg_wire(g, i, agg.wire);
		namelist_init(&g->added[i]);
		if (aggstore_open(&g->stores[i], g->dir, &agg, err, err_len) < 0)
			return -1;
	}
	return 0;
}

void genagg_close(struct genagg *g)
{
	for (unsigned i = 0; i < g->count; i++) {
		if (g->stores && g->stores[i])
			aggstore_close(g->stores[i]);
		if (g->added)
			namelist_free(&g->added[i]);
	}
	free(g->stores);
	free(g->added);
	g->stores = NULL;
	g->added = NULL;
	if (!g->dir[0])
		return;
	/* only the stores' own files are in it: no subdirectories */
	DIR *d = opendir(g->dir);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				unlinkat(dirfd(d), e->d_name, 0);
		closedir(d);
	}
	if (rmdir(g->dir) < 0)
		fprintf(stderr, "nbrp-updgen: removing %s: %s\n", g->dir, strerror(errno));
	g->dir[0] = 0;
}

int genagg_define(struct genagg *g, unsigned i, const struct nameset *members, char *err, size_t err_len)
{
	if (aggstore_replace(g->stores[i], 1, members) < 0) {
		snprintf(err, err_len, "%s", aggstore_error(g->stores[i]));
		return -1;
	}
	return 0;
}

int genagg_serve(struct genagg *g, uv_loop_t *loop, const struct xfrserv_config *cfg, char *err, size_t err_len)
{
	if (xfrserv_start(&g->srv, loop, cfg, lookup, g, err, err_len) < 0) {
		g->srv = NULL;
		return -1;
	}
	/* NBRP's aggregate_source, with the port bound */
	struct ip_endpoint at = { .family = cfg->family, .port = xfrserv_port(g->srv) };
	memcpy(at.addr, cfg->addr, sizeof(at.addr));
	nbrp_aggregate_source_format(&at, g->source, sizeof(g->source));
	return 0;
}

void genagg_stop(struct genagg *g)
{
	xfrserv_stop(g->srv);
	g->srv = NULL;
}

int genagg_change(struct genagg *g, unsigned i, unsigned n, genagg_draw_fn draw, void *ctx,
		  char *err, size_t err_len)
{
	struct aggstore *s = g->stores[i];
	struct namelist *added = &g->added[i];
	uint32_t v = genagg_version(g, i);
	int rc;
	if (added->count) {
		rc = aggstore_apply(s, v, v + 1, added, &g->empty);
		if (rc == 0)
			namelist_clear(added);
	} else {
		for (unsigned k = 0; k < n; k++) {
			uint8_t wire[NAME_MAX_WIRE];
			size_t len = draw(ctx, wire);
			if (namelist_add(added, wire, (uint8_t)len) < 0) {
				namelist_clear(added);
				snprintf(err, err_len, "out of memory");
				return -1;
			}
		}
		rc = aggstore_apply(s, v, v + 1, &g->empty, added);
		if (rc < 0)
			namelist_clear(added);
	}
	if (rc < 0) {
		snprintf(err, err_len, "%s", aggstore_error(s));
		return -1;
	}
	g->changes++;
	g->names_changed += n;
	return 0;
}
