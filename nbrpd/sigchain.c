/*
 * Chains kept to be passed on, and signed name sets (sigchain.h).
 */
#include <stdlib.h>
#include <string.h>

#include "sigchain.h"
#include "vec.h"

struct sig_set *sig_set_new(const struct attest_name *v, size_t n, const uint8_t digest[ATTEST_DIGEST_LEN],
			    uint64_t *charged)
{
	size_t bytes = 0;
	for (size_t i = 0; i < n; i++)
		bytes += 1 + v[i].len;
	size_t size = sizeof(struct sig_set) + n * sizeof(uint32_t) + bytes;
	struct sig_set *set = malloc(size);
	if (!set)
		return NULL;
	set->refs = set->holders = 1;
	set->n = (uint32_t)n;
	set->bytes = (uint32_t)bytes;
	set->size = size;
	set->charged = charged;
	memcpy(set->digest, digest, ATTEST_DIGEST_LEN);
	set->off = (uint32_t *)(set + 1);
	set->names = (uint8_t *)(set->off + n);
	for (size_t i = 0, off = 0; i < n; i++) {
		set->off[i] = (uint32_t)off;
		set->names[off] = (uint8_t)v[i].len;
		memcpy(set->names + off + 1, v[i].wire, v[i].len);
		off += 1 + v[i].len;
	}
	*charged += size;
	return set;
}

void sig_set_release(struct sig_set *set)
{
	if (set)
		set->holders--;
	sig_set_put(set);
}

void sig_set_put(struct sig_set *set)
{
	if (!set || --set->refs)
		return;
	*set->charged -= set->size;
	free(set);
}

/* The set of a Route that checked valid (its names and others), or NULL if out of memory. */
static struct sig_set *set_of_route(const Nbrp__Route *rt, uint64_t *charged)
{
	struct attest_name *v;
	if (attest_set_digest(rt, NULL, &v) != 0)
		return NULL;
	/* the digest was checked against the Route's (attest_prepare) */
	struct sig_set *set = sig_set_new(v, rt->n_names + rt->n_set_others, rt->aggregate_digest.data, charged);
	free(v);
	return set;
}

static ProtobufCBinaryData copy_bytes(uint8_t **at, ProtobufCBinaryData b)
{
	ProtobufCBinaryData o = { b.len, b.len ? *at : NULL };
	if (b.len)
		memcpy(*at, b.data, b.len);
	*at += b.len;
	return o;
}

struct sig_chain *sig_chain_new(const Nbrp__Route *rt, const struct attest_job *j, uint64_t *charged)
{
	size_t n = rt->n_attestations, bytes = 0;
	for (size_t i = 0; i < n; i++) {
		const Nbrp__Attestation *x = rt->attestations[i];
		bytes += x->signer.len + x->signature.len + x->for_key.len;
	}
	/* a set's names, sorted: for the others of each Route we pass its names on in */
	struct sig_set *set = NULL;
	if (attest_route_is_set(rt) && !(set = set_of_route(rt, charged)))
		return NULL;
	size_t size = sizeof(struct sig_chain) + n * (sizeof(Nbrp__Attestation) + sizeof(Nbrp__Attestation *)) + bytes;
	struct sig_chain *c = malloc(size);
	if (!c) {
		sig_set_release(set);
		return NULL;
	}
	c->size = size;
	c->charged = charged;
	memcpy(c->head, j->head, sizeof(c->head));
	c->expiry = j->expiry;
	c->n = n;
	c->ptrs = (Nbrp__Attestation **)(c->pb + n);
	uint8_t *at = (uint8_t *)(c->ptrs + n);
	for (size_t i = 0; i < n; i++) {
		const Nbrp__Attestation *x = rt->attestations[i];
		Nbrp__Attestation *y = &c->pb[i];
		nbrp__attestation__init(y);
		y->signer = copy_bytes(&at, x->signer);
		y->signature = copy_bytes(&at, x->signature);
		y->for_key = copy_bytes(&at, x->for_key);
		y->timestamp = x->timestamp;
		y->expiry = x->expiry;
		c->ptrs[i] = y;
	}
	c->digest.len = 0;
	c->digest.data = NULL;
	if (rt->aggregate_digest.len == ATTEST_DIGEST_LEN) {
		memcpy(c->digest_buf, rt->aggregate_digest.data, ATTEST_DIGEST_LEN);
		c->digest.data = c->digest_buf;
		c->digest.len = ATTEST_DIGEST_LEN;
	}
	c->set = set;
	*charged += size;
	return c;
}

struct sig_chain *sig_chain_copy(const struct sig_chain *c)
{
	struct sig_chain *d = malloc(c->size);
	if (!d)
		return NULL;
	memcpy(d, c, c->size);
	ptrdiff_t shift = (const uint8_t *)d - (const uint8_t *)c;
	d->ptrs = (Nbrp__Attestation **)((uint8_t *)c->ptrs + shift);
	for (size_t i = 0; i < d->n; i++) {
		Nbrp__Attestation *y = &d->pb[i];
		d->ptrs[i] = y;
		if (y->signer.data)
			y->signer.data += shift;
		if (y->signature.data)
			y->signature.data += shift;
		if (y->for_key.data)
			y->for_key.data += shift;
	}
	if (d->digest.data)
		d->digest.data = d->digest_buf;
	if (d->set) {
		d->set->refs++;
		d->set->holders++;
	}
	*d->charged += d->size;
	return d;
}

void sig_chain_free(struct sig_chain *c)
{
	if (!c)
		return;
	*c->charged -= c->size;
	sig_set_release(c->set);
	free(c);
}

const uint8_t *sig_chain_origin(const struct sig_chain *c)
{
	if (!c->n)
		return NULL;
	const Nbrp__Attestation *o = c->ptrs[c->n - 1];
	return o->signer.len == SIGKEY_PUBLIC_LEN ? o->signer.data : NULL;
}

size_t sig_set_size(const struct sig_set *set, size_t *bytes)
{
	*bytes = set->bytes;
	return set->n;
}

void sig_set_digest(const struct sig_set *set, Nbrp__Route *rt)
{
	rt->aggregate_digest.data = (uint8_t *)set->digest;
	rt->aggregate_digest.len = ATTEST_DIGEST_LEN;
}

long sig_set_find(const struct sig_set *set, const uint8_t *wire, size_t len)
{
	size_t lo = 0, hi = set->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const uint8_t *m = set->names + set->off[mid];
		int cmp = memcmp(m + 1, wire, m[0] < len ? m[0] : len);
		if (!cmp)
			cmp = (m[0] > len) - (m[0] < len);
		if (!cmp)
			return (long)mid;
		if (cmp < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

size_t sig_set_others(const struct sig_set *set, const ProtobufCBinaryData *names, size_t n,
		      ProtobufCBinaryData *others, uint8_t **marks, size_t *marks_cap)
{
	if (n >= set->n)
		return 0;               /* the set whole (a Route holds no name twice) */
	if (VEC_RESERVE(*marks, *marks_cap, set->n) < 0)
		return 0;               /* the receiver finds the digest wrong: as if sent unsigned */
	uint8_t *in = *marks;
	memset(in, 0, set->n);
	long k = -1;
	for (size_t i = 0; i < n; i++) {
		/* names usually come in the set's order: the one after the last found, else a search */
		const uint8_t *w = k + 1 < (long)set->n ? set->names + set->off[k + 1] : NULL;
		if (w && w[0] == names[i].len && memcmp(w + 1, names[i].data, w[0]) == 0)
			k++;
		else
			k = sig_set_find(set, names[i].data, names[i].len);
		if (k >= 0)
			in[k] = 1;
	}
	size_t m = 0;
	for (uint32_t i = 0; i < set->n; i++)
		if (!in[i]) {
			const uint8_t *w = set->names + set->off[i];
			others[m].data = (uint8_t *)w + 1;
			others[m++].len = w[0];
		}
	return m;
}
