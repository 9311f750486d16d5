#include <string.h>

#include "decide.h"

void decide_distance(struct decide_cand *c, uint32_t path_len, uint32_t load_ms, uint32_t load_ms_per_hop,
		     bool signed_valid)
{
	c->distance = (uint64_t)path_len * load_ms_per_hop + (signed_valid ? 0 : load_ms);
	c->load_tie = signed_valid ? load_ms : 0;
}

int decide_cmp(const struct decide_cand *a, const struct decide_cand *b)
{
	if (a->local_pref != b->local_pref)
		return a->local_pref > b->local_pref ? -1 : 1;
	if (a->distance != b->distance)
		return a->distance < b->distance ? -1 : 1;
	if (a->load_tie != b->load_tie)
		return a->load_tie < b->load_tie ? -1 : 1;
	/* IP routing decides between routes that are equal at the content level */
	if (a->igp_metric != b->igp_metric)
		return a->igp_metric < b->igp_metric ? -1 : 1;
	if (a->as_path_len != b->as_path_len)
		return a->as_path_len < b->as_path_len ? -1 : 1;
	if (a->seq != b->seq)
		return a->seq < b->seq ? -1 : 1;
	return strcmp(a->from, b->from);
}

unsigned decide_rank(const struct decide_cand *c, unsigned n, unsigned keep, unsigned *order)
{
	unsigned ranked = 0;
	for (unsigned k = 0; k < n; k++) {
		if (!c[k].usable)
			continue;
		/* insertion into the top `keep`, best first */
		unsigned i = ranked < keep ? ranked++ : keep;
		while (i > 0 && decide_cmp(&c[k], &c[order[i - 1]]) < 0) {
			if (i < keep)
				order[i] = order[i - 1];
			i--;
		}
		if (i < keep)
			order[i] = k;
	}
	return ranked;
}

enum decide_import decide_import(const Nbrp__Route *r, bool server_mode, const char *self, const char **why)
{
	if (nbrp_check_route(r, server_mode, why) < 0)
		return IMPORT_MALFORMED;
	for (size_t k = 0; k < r->n_path; k++)
		if (strcmp(r->path[k], self) == 0) {
			*why = "our own name is in the path";
			return IMPORT_LOOP;
		}
	return IMPORT_OK;
}
