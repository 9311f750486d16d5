/*
 * Import and export policies by name suffix (config.h): the longest
 * matching rule decides, names matching none get the default.
 */
#include "config.h"

bool nbrpd_policy_allows(const struct nbrpd_policy *pol, const struct name *n)
{
	const struct nbrpd_policy_rule *best = NULL;
	for (unsigned i = 0; i < pol->nrules; i++) {
		const struct nbrpd_policy_rule *r = &pol->rules[i];
		if (name_is_subdomain(n, &r->suffix) && (!best || r->suffix.len > best->suffix.len))
			best = r;
	}
	return best ? best->allow : !pol->default_deny;
}

bool nbrpd_policy_equal(const struct nbrpd_policy *a, const struct nbrpd_policy *b)
{
	if (a->nrules != b->nrules || a->default_deny != b->default_deny)
		return false;
	for (unsigned i = 0; i < a->nrules; i++)
		if (a->rules[i].allow != b->rules[i].allow || !name_equal(&a->rules[i].suffix, &b->rules[i].suffix))
			return false;
	return true;
}
