/*
 * Route attestations: see attest.h and docs/NBRP.md, Attestations.
 */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "attest.h"
#include "name.h"
#include "nbrp.h"

static const uint8_t origin_tag[16] = "NBRPv1 origin";      /* NUL-padded to 16 */
static const uint8_t hop_tag[16] = "NBRPv1 hop";
static const uint8_t members_tag[16] = "NBRPv1 members";
static const uint8_t withdraw_tag[16] = "NBRPv1 withdraw";

/* 2 was an aggregate without its source: never made nor taken, so such a signature cannot be replayed */
enum { SUBJECT_NAME = 1, SUBJECT_SET = 3, SUBJECT_AGGREGATE = 4 };

const char *attest_state_name(enum attest_state s)
{
	switch (s) {
	case ATTEST_VALID: return "valid";
	case ATTEST_INVALID: return "invalid";
	case ATTEST_NOT_FOUND: return "not-found";
	case ATTEST_UNVERIFIED: return "unverified";
	case ATTEST_PENDING: return "pending";
	}
	return "?";
}

const char *attest_reason_name(enum attest_reason r)
{
	switch (r) {
	case ATTEST_OK: return "ok";
	case ATTEST_UNAUTHORISED_ORIGIN: return "unauthorised origin";
	case ATTEST_BAD_SIGNATURE: return "bad signature";
	case ATTEST_PATH_MISMATCH: return "path mismatch";
	case ATTEST_EXPIRED: return "expired";
	case ATTEST_REPLAYED: return "replayed to another peer";
	case ATTEST_UNKNOWN_KEY: return "unknown key";
	case ATTEST_MALFORMED: return "malformed attestation";
	case ATTEST_DIGEST_MISMATCH: return "member digest mismatch";
	case ATTEST_UNAUTHORISED_MEMBER: return "unauthorised member";
	case ATTEST_STALE: return "stale origin_seq";
	case ATTEST_UNSIGNED_SOURCE: return "unsigned aggregate source";
	case ATTEST_REASONS: break;
	}
	return "?";
}

static uint8_t *be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--)
		*p++ = (uint8_t)(v >> (i * 8));
	return p;
}

static uint8_t *put(uint8_t *p, const void *src, size_t len)
{
	memcpy(p, src, len);
	return p + len;
}

/* Names in byte order; wire names end at their root label, so no name is
 * a prefix of another and memcmp over the shorter length orders them. */
static int name_cmp(const struct attest_name *x, const struct attest_name *y)
{
	int c = memcmp(x->wire, y->wire, x->len < y->len ? x->len : y->len);
	return c ? c : (x->len > y->len) - (x->len < y->len);
}

static int name_qcmp(const void *a, const void *b)
{
	return name_cmp(a, b);
}

/* Sorts v (unless it already is) and digests it (out NULL: not): the member digest. false: a name twice. */
static bool sorted_digest(struct attest_name *v, size_t n, uint8_t out[ATTEST_DIGEST_LEN])
{
	size_t i = 1;
	while (i < n && name_cmp(&v[i - 1], &v[i]) < 0)
		i++;
	if (i < n) {
		qsort(v, n, sizeof(*v), name_qcmp);     /* senders usually send them in order */
		for (i = 1; i < n; i++)
			if (name_cmp(&v[i - 1], &v[i]) == 0)
				return false;
	}
	if (!out)
		return true;
	crypto_generichash_state st;
	crypto_generichash_init(&st, NULL, 0, ATTEST_DIGEST_LEN);
	crypto_generichash_update(&st, members_tag, sizeof(members_tag));
	for (i = 0; i < n; i++)
		crypto_generichash_update(&st, v[i].wire, v[i].len);
	crypto_generichash_final(&st, out, ATTEST_DIGEST_LEN);
	return true;
}

int attest_member_digest(const struct nameset *members, uint8_t out[ATTEST_DIGEST_LEN])
{
	struct attest_name *v = malloc((members->count ? members->count : 1) * sizeof(*v));
	if (!v)
		return -1;
	size_t pos = 0, n = 0;
	const uint8_t *w;
	uint8_t l;
	while (nameset_next(members, &pos, &w, &l))
		v[n++] = (struct attest_name){ w, l };
	sorted_digest(v, n, out);       /* a nameset holds no name twice */
	free(v);
	return 0;
}

bool attest_route_is_set(const Nbrp__Route *r)
{
	return r->aggregate_digest.len && !r->aggregate.len;
}

int attest_set_digest(const Nbrp__Route *r, uint8_t out[ATTEST_DIGEST_LEN], struct attest_name **sorted)
{
	size_t n = r->n_names + r->n_set_others, bytes = 0;
	if (n == 0 || n > ATTEST_SET_MAX_NAMES)
		return -1;
	struct attest_name *v = malloc(n * sizeof(*v));
	if (!v)
		return -2;
	for (size_t i = 0; i < n; i++) {
		const ProtobufCBinaryData *b = i < r->n_names ? &r->names[i] : &r->set_others[i - r->n_names];
		bytes += b->len;
		if (!nbrp_name_valid(b) || bytes > ATTEST_SET_MAX_BYTES) {
			free(v);
			return -1;
		}
		v[i] = (struct attest_name){ b->data, b->len };
	}
	if (!sorted_digest(v, n, out)) {
		free(v);
		return -1;
	}
	if (sorted)
		*sorted = v;
	else
		free(v);
	return 0;
}

size_t attest_origin_message(uint8_t *msg, const uint8_t signer[SIGKEY_PUBLIC_LEN],
			     const uint8_t first[SIGKEY_PUBLIC_LEN], uint64_t timestamp, uint64_t expiry,
			     const struct attest_subject *s)
{
	uint8_t *p = put(msg, origin_tag, sizeof(origin_tag));
	p = put(p, signer, SIGKEY_PUBLIC_LEN);
	p = put(p, first, SIGKEY_PUBLIC_LEN);
	p = be64(p, timestamp);
	p = be64(p, expiry);
	p = be64(p, s->seq);
	if (s->set) {
		*p++ = SUBJECT_SET;
		return (size_t)(put(p, s->digest, ATTEST_DIGEST_LEN) - msg);
	}
	*p++ = s->aggregate ? SUBJECT_AGGREGATE : SUBJECT_NAME;
	p = put(p, s->name, s->name_len);
	if (s->aggregate) {
		for (int i = 3; i >= 0; i--)
			*p++ = (uint8_t)(s->version >> (i * 8));
		p = put(p, s->digest, ATTEST_DIGEST_LEN);
		*p++ = s->source_len;
		if (s->source_len)
			p = put(p, s->source, s->source_len);
	}
	return (size_t)(p - msg);
}

void attest_hop_message(uint8_t msg[ATTEST_HOP_MSG_LEN], const uint8_t prev[ATTEST_DIGEST_LEN], uint64_t expiry,
			const uint8_t signer[SIGKEY_PUBLIC_LEN], const uint8_t target[SIGKEY_PUBLIC_LEN])
{
	uint8_t *p = put(msg, hop_tag, sizeof(hop_tag));
	p = put(p, prev, ATTEST_DIGEST_LEN);
	p = be64(p, expiry);
	p = put(p, signer, SIGKEY_PUBLIC_LEN);
	put(p, target, SIGKEY_PUBLIC_LEN);
}

void attest_link(uint8_t out[ATTEST_DIGEST_LEN], const uint8_t *msg, size_t len, const uint8_t sig[SIGKEY_SIG_LEN])
{
	crypto_generichash_state st;
	crypto_generichash_init(&st, NULL, 0, ATTEST_DIGEST_LEN);
	crypto_generichash_update(&st, msg, len);
	crypto_generichash_update(&st, sig, SIGKEY_SIG_LEN);
	crypto_generichash_final(&st, out, ATTEST_DIGEST_LEN);
}

void attest_sign_origin(struct attest_wire *out, const struct sigkey *k, const uint8_t first[SIGKEY_PUBLIC_LEN],
			uint64_t timestamp, uint64_t expiry, const struct attest_subject *s)
{
	uint8_t msg[ATTEST_ORIGIN_MSG_MAX];
	size_t len = attest_origin_message(msg, k->pk, first, timestamp, expiry, s);
	memset(out, 0, sizeof(*out));
	memcpy(out->signer, k->pk, SIGKEY_PUBLIC_LEN);
	out->origin = true;
	out->timestamp = timestamp;
	out->expiry = expiry;
	sigkey_sign(k, msg, len, out->sig);
	attest_link(out->link, msg, len, out->sig);
}

void attest_sign_hop(struct attest_wire *out, const struct sigkey *k, const uint8_t prev[ATTEST_DIGEST_LEN],
		     const uint8_t target[SIGKEY_PUBLIC_LEN], uint64_t expiry)
{
	uint8_t msg[ATTEST_HOP_MSG_LEN];
	attest_hop_message(msg, prev, expiry, k->pk, target);
	memset(out, 0, sizeof(*out));
	out->expiry = expiry;
	memcpy(out->for_key, target, ATTEST_HINT_LEN);
	sigkey_sign(k, msg, sizeof(msg), out->sig);
	attest_link(out->link, msg, sizeof(msg), out->sig);
}

void attest_to_pb(Nbrp__Attestation *pb, struct attest_wire *w)
{
	nbrp__attestation__init(pb);
	pb->signature.data = w->sig;
	pb->signature.len = SIGKEY_SIG_LEN;
	pb->expiry = w->expiry;
	if (w->origin) {
		pb->signer.data = w->signer;
		pb->signer.len = SIGKEY_PUBLIC_LEN;
		pb->timestamp = w->timestamp;
	} else {
		pb->for_key.data = w->for_key;
		pb->for_key.len = ATTEST_HINT_LEN;
	}
}

struct attest_chain *attest_chain_copy(const Nbrp__Route *r)
{
	size_t n = r->n_path;
	if (r->n_attestations != n + 1 || n > NBRP_MAX_PATH)
		return NULL;
	const Nbrp__Attestation *o = r->attestations[n];
	if (o->signer.len != SIGKEY_PUBLIC_LEN || o->signature.len != SIGKEY_SIG_LEN)
		return NULL;
	struct attest_chain *c = malloc(sizeof(*c) + n * sizeof(c->hop[0]));
	if (!c)
		return NULL;
	memset(&c->origin, 0, sizeof(c->origin));
	c->origin.origin = true;
	memcpy(c->origin.signer, o->signer.data, SIGKEY_PUBLIC_LEN);
	memcpy(c->origin.sig, o->signature.data, SIGKEY_SIG_LEN);
	c->origin.timestamp = o->timestamp;
	c->origin.expiry = o->expiry;
	c->n_hops = (uint32_t)n;
	for (size_t i = 0; i < n; i++) {
		const Nbrp__Attestation *a = r->attestations[i];
		if (a->signature.len != SIGKEY_SIG_LEN || a->for_key.len != ATTEST_HINT_LEN) {
			free(c);
			return NULL;
		}
		memcpy(c->hop[i].sig, a->signature.data, SIGKEY_SIG_LEN);
		c->hop[i].expiry = a->expiry;
		memcpy(c->hop[i].for_key, a->for_key.data, ATTEST_HINT_LEN);
	}
	return c;
}

struct attest_chain *attest_chain_origin(const struct attest_wire *origin)
{
	struct attest_chain *c = malloc(sizeof(*c));
	if (!c)
		return NULL;
	c->origin = *origin;
	c->n_hops = 0;
	return c;
}

size_t attest_chain_pb(struct attest_chain *c, struct attest_wire *first, Nbrp__Attestation *pb,
		       Nbrp__Attestation **pp)
{
	size_t k = 0;
	if (first)
		attest_to_pb(&pb[k++], first);
	for (uint32_t i = 0; i < c->n_hops; i++, k++) {
		nbrp__attestation__init(&pb[k]);
		pb[k].signature.data = c->hop[i].sig;
		pb[k].signature.len = SIGKEY_SIG_LEN;
		pb[k].expiry = c->hop[i].expiry;
		pb[k].for_key.data = c->hop[i].for_key;
		pb[k].for_key.len = ATTEST_HINT_LEN;
	}
	attest_to_pb(&pb[k++], &c->origin);
	for (size_t i = 0; i < k; i++)
		pp[i] = &pb[i];
	return k;
}

/* The cache. */

int attest_cache_init(struct attest_cache *c, size_t entries)
{
	size_t sets = 1;
	while (sets * ATTEST_CACHE_WAYS < entries && sets < (1u << 28))
		sets <<= 1;
	memset(c, 0, sizeof(*c));
	c->e = calloc(sets * ATTEST_CACHE_WAYS, sizeof(*c->e));
	if (!c->e)
		return -1;
	c->sets_mask = (uint32_t)(sets - 1);
	return 0;
}

void attest_cache_free(struct attest_cache *c)
{
	free(c->e);
	c->e = NULL;
}

void attest_cache_clear(struct attest_cache *c)
{
	memset(c->e, 0, ((size_t)c->sets_mask + 1) * ATTEST_CACHE_WAYS * sizeof(*c->e));
}

static struct attest_cache_entry *cache_set(struct attest_cache *c, const uint8_t link[ATTEST_DIGEST_LEN])
{
	uint32_t h;
	memcpy(&h, link, sizeof(h));    /* a BLAKE2b digest: any 4 bytes are uniform */
	return c->e + (size_t)(h & c->sets_mask) * ATTEST_CACHE_WAYS;
}

bool attest_cache_find(struct attest_cache *c, const uint8_t link[ATTEST_DIGEST_LEN], uint64_t now)
{
	struct attest_cache_entry *s = cache_set(c, link);
	for (int i = 0; i < ATTEST_CACHE_WAYS; i++)
		if (s[i].expiry >= now && s[i].used && memcmp(s[i].link, link, ATTEST_DIGEST_LEN) == 0) {
			s[i].used = ++c->clock ? c->clock : (c->clock = 1);
			c->hits++;
			return true;
		}
	c->misses++;
	return false;
}

void attest_cache_add(struct attest_cache *c, const uint8_t link[ATTEST_DIGEST_LEN], uint64_t expiry, uint64_t now)
{
	struct attest_cache_entry *s = cache_set(c, link), *victim = NULL;
	for (int i = 0; i < ATTEST_CACHE_WAYS; i++) {
		if (s[i].used && memcmp(s[i].link, link, ATTEST_DIGEST_LEN) == 0) {
			victim = &s[i];
			break;
		}
		if (!s[i].used || s[i].expiry < now) {
			if (!victim || victim->used)
				victim = &s[i];
		} else if (!victim || (victim->used && victim->expiry >= now && s[i].used < victim->used)) {
			victim = &s[i];
		}
	}
	if (victim->used && victim->expiry >= now && memcmp(victim->link, link, ATTEST_DIGEST_LEN) != 0)
		c->evictions++;
	memcpy(victim->link, link, ATTEST_DIGEST_LEN);
	victim->expiry = expiry;
	victim->used = ++c->clock ? c->clock : (c->clock = 1);
	c->inserts++;
}

/* The verifier. */

int attest_verifier_init(struct attest_verifier *v, const uint8_t me[SIGKEY_PUBLIC_LEN], size_t cache_entries)
{
	memset(v, 0, sizeof(*v));
	memcpy(v->me, me, SIGKEY_PUBLIC_LEN);
	if (attest_cache_init(&v->cache, cache_entries) < 0)
		return -1;
	if (attest_cache_init(&v->bad, ATTEST_BAD_CACHE) < 0) {
		attest_cache_free(&v->cache);
		return -1;
	}
	return 0;
}

void attest_verifier_free(struct attest_verifier *v)
{
	attest_cache_free(&v->cache);
	attest_cache_free(&v->bad);
}

void attest_verifier_set_trust(struct attest_verifier *v, const struct trust *t)
{
	attest_cache_clear(&v->bad);    /* verdicts of the trust file they were reached under */
	v->trust = t;
}

static enum attest_state done(struct attest_verifier *v, struct attest_job *job, enum attest_state st,
			      enum attest_reason why, int where)
{
	job->state = st;
	job->reason = why;
	job->where = where;
	if (st == ATTEST_INVALID)
		v->by_reason[why]++;
	return st;
}

static bool bytes_len(const ProtobufCBinaryData *b, size_t len)
{
	return b->len == len;
}

/*
 * The names a Route routes against the origin's key (NULL: not usable):
 * TRUST_NOT_FOUND if no origin line covers any of them, TRUST_AUTHORISED
 * if the key may originate every one, else TRUST_UNAUTHORISED.
 */
static enum trust_origin_result names_check(const struct trust *t, const Nbrp__Route *r, const uint8_t *signer)
{
	bool covered = false, all = true;
	for (size_t i = 0; i < r->n_names; i++) {
		const ProtobufCBinaryData *b = &r->names[i];
		enum trust_origin_result o = signer ? trust_origin_check(t, b->data, b->len, signer)
						    : trust_origin_keys(t, b->data, b->len, NULL, 0) ? TRUST_UNAUTHORISED
						    : TRUST_NOT_FOUND;
		covered |= o != TRUST_NOT_FOUND;
		all &= o == TRUST_AUTHORISED;
	}
	return !covered ? TRUST_NOT_FOUND : all ? TRUST_AUTHORISED : TRUST_UNAUTHORISED;
}

static enum attest_state prepare(struct attest_verifier *v, const Nbrp__Route *r, const char *peer,
				 unsigned flags, uint64_t now, struct attest_job *job)
{
	bool stored_set = flags & ATTEST_STORED_SET;
	const struct trust *t = v->trust;
	struct attest_subject s = {0};
	size_t n = r->n_path;

	s.seq = r->origin_seq;
	memset(job, 0, sizeof(*job));
	job->where = -1;
	job->expiry = UINT64_MAX;
	if (!t || !trust_current(t, now))
		return done(v, job, ATTEST_UNVERIFIED, ATTEST_OK, -1);
	/* the subject: one name, the aggregate, or a set of names */
	if (r->n_names == 0 || n > NBRP_MAX_PATH)
		return done(v, job, ATTEST_INVALID, ATTEST_MALFORMED, -1);
	if (stored_set || attest_route_is_set(r)) {
		if (!bytes_len(&r->aggregate_digest, ATTEST_DIGEST_LEN) || r->aggregate.len)
			return done(v, job, ATTEST_INVALID, ATTEST_MALFORMED, -1);
		s.set = true;
		memcpy(s.digest, r->aggregate_digest.data, ATTEST_DIGEST_LEN);
		if (!stored_set) {
			/* the names the origin signed: the routed ones and the others */
			uint8_t d[ATTEST_DIGEST_LEN];
			int rc = attest_set_digest(r, d, NULL);
			if (rc == -2)
				return done(v, job, ATTEST_UNVERIFIED, ATTEST_OK, -1);
			if (rc < 0)
				return done(v, job, ATTEST_INVALID, ATTEST_MALFORMED, -1);
			if (memcmp(d, s.digest, ATTEST_DIGEST_LEN) != 0)
				return done(v, job, ATTEST_INVALID, ATTEST_DIGEST_MISMATCH, -1);
		}
	} else {
		if (r->n_names != 1 || r->n_set_others || !nbrp_name_valid(&r->names[0]))
			return done(v, job, ATTEST_INVALID, ATTEST_MALFORMED, -1);
		s.name = r->names[0].data;
		s.name_len = (uint8_t)r->names[0].len;
		if (r->aggregate.len) {
			if (r->aggregate.len != r->names[0].len || memcmp(r->aggregate.data, s.name, s.name_len) != 0 ||
			    r->aggregate_version > UINT32_MAX || !bytes_len(&r->aggregate_digest, ATTEST_DIGEST_LEN))
				return done(v, job, ATTEST_INVALID, ATTEST_MALFORMED, -1);
			s.aggregate = true;
			s.version = (uint32_t)r->aggregate_version;
			memcpy(s.digest, r->aggregate_digest.data, ATTEST_DIGEST_LEN);
			/* the source signed, in its one spelling; the one announced must be it */
			struct ip_endpoint src;
			char canon[NBRP_SOURCE_TEXT_MAX];
			const char *ss = r->aggregate_signed_source ? r->aggregate_signed_source : "";
			size_t sl = strlen(ss);
			if (sl > ATTEST_SOURCE_MAX || nbrp_aggregate_source_parse(ss, &src) < 0 ||
			    strcmp(nbrp_aggregate_source_format(&src, canon, sizeof(canon)), ss) != 0)
				return done(v, job, ATTEST_INVALID, ATTEST_MALFORMED, -1);
			s.source = ss;
			s.source_len = (uint8_t)sl;
			job->other_source = !r->aggregate_source || strcmp(r->aggregate_source, ss) != 0;
		}
	}
	/* RFC 6811's order: names nothing covers are not-found, signed or not */
	const Nbrp__Attestation *o = r->n_attestations == n + 1 ? r->attestations[n] : NULL;
	const uint8_t *signer = o && bytes_len(&o->signer, SIGKEY_PUBLIC_LEN) ? o->signer.data : NULL;
	enum trust_origin_result auth = names_check(t, r, signer);
	if (auth == TRUST_NOT_FOUND)
		return done(v, job, ATTEST_NOT_FOUND, ATTEST_OK, -1);
	if (!o)
		return done(v, job, ATTEST_INVALID, ATTEST_PATH_MISMATCH, -1);
	if (flags & ATTEST_SERVER) {
		/* a content server originates its own names: nobody else's chain comes through it */
		const uint8_t *own = trust_router_key(t, peer, strlen(peer));
		if (n != 0)
			return done(v, job, ATTEST_INVALID, ATTEST_PATH_MISMATCH, 0);
		if (!own)
			return done(v, job, ATTEST_INVALID, ATTEST_UNKNOWN_KEY, 0);
		if (signer && memcmp(signer, own, SIGKEY_PUBLIC_LEN) != 0)
			return done(v, job, ATTEST_INVALID, ATTEST_PATH_MISMATCH, 0);
	} else if (peer && (n == 0 || strcmp(r->path[0], peer) != 0)) {
		return done(v, job, ATTEST_INVALID, ATTEST_PATH_MISMATCH, 0);
	}

	/* the origin; for_key is not signed in it, so it must be empty (it would travel unchecked) */
	if (!signer || !bytes_len(&o->signature, SIGKEY_SIG_LEN) || o->for_key.len)
		return done(v, job, ATTEST_INVALID, ATTEST_MALFORMED, (int)n);
	if (auth != TRUST_AUTHORISED)
		return done(v, job, ATTEST_INVALID, ATTEST_UNAUTHORISED_ORIGIN, (int)n);
	if (o->expiry < now || o->timestamp > now + ATTEST_MAX_SKEW || o->timestamp > o->expiry)
		return done(v, job, ATTEST_INVALID, ATTEST_EXPIRED, (int)n);

	/* the keys of the path, oldest first; keys[n] is ours */
	const uint8_t *keys[NBRP_MAX_PATH + 1];
	keys[n] = NULL;
	for (size_t i = 0; i < n; i++) {
		keys[i] = trust_router_key(t, r->path[i], strlen(r->path[i]));
		if (!keys[i])
			return done(v, job, ATTEST_INVALID, ATTEST_UNKNOWN_KEY, (int)i);
	}
	const uint8_t *first = n ? keys[n - 1] : v->me;

	struct attest_sigcheck *c = malloc((n + 1) * sizeof(*c));
	if (!c)
		return done(v, job, ATTEST_UNVERIFIED, ATTEST_OK, -1);
	/* c[0] the origin, c[k] the hop of path[n - k] */
	memcpy(c[0].pk, o->signer.data, SIGKEY_PUBLIC_LEN);
	memcpy(c[0].sig, o->signature.data, SIGKEY_SIG_LEN);
	c[0].len = attest_origin_message(c[0].msg, o->signer.data, first, o->timestamp, o->expiry, &s);
	c[0].expiry = o->expiry;
	attest_link(c[0].link, c[0].msg, c[0].len, c[0].sig);
	for (size_t k = 1; k <= n; k++) {
		size_t i = n - k;
		const Nbrp__Attestation *a = r->attestations[i];
		const uint8_t *target = i ? keys[i - 1] : v->me;
		enum attest_reason why = ATTEST_OK;
		if (!bytes_len(&a->signature, SIGKEY_SIG_LEN) || !bytes_len(&a->for_key, ATTEST_HINT_LEN) || a->signer.len)
			why = ATTEST_MALFORMED;
		else if (memcmp(a->for_key.data, target, ATTEST_HINT_LEN) != 0)
			why = i ? ATTEST_PATH_MISMATCH : ATTEST_REPLAYED;
		else if (a->expiry < now)
			why = ATTEST_EXPIRED;
		if (why != ATTEST_OK) {
			free(c);
			return done(v, job, ATTEST_INVALID, why, (int)i);
		}
		memcpy(c[k].pk, keys[i], SIGKEY_PUBLIC_LEN);
		memcpy(c[k].sig, a->signature.data, SIGKEY_SIG_LEN);
		attest_hop_message(c[k].msg, c[k - 1].link, a->expiry, keys[i], target);
		c[k].len = ATTEST_HOP_MSG_LEN;
		c[k].expiry = a->expiry < c[k - 1].expiry ? a->expiry : c[k - 1].expiry;
		attest_link(c[k].link, c[k].msg, c[k].len, c[k].sig);
	}
	job->expiry = c[n].expiry;
	memcpy(job->head, c[n].link, ATTEST_DIGEST_LEN);
	/* a chain about to expire would cost a check now and a walk of the table at its expiry */
	if (!(flags & ATTEST_STORED) && job->expiry < now + v->min_lifetime) {
		free(c);
		return done(v, job, ATTEST_INVALID, ATTEST_EXPIRED, -1);
	}

	/* the longest verified prefix: only the links after it need crypto */
	size_t from = 0;
	for (size_t k = n + 1; k-- > 0;)
		if (attest_cache_find(&v->cache, c[k].link, now)) {
			from = k + 1;
			break;
		}
	if (from == n + 1) {
		free(c);
		return job->other_source ? done(v, job, ATTEST_INVALID, ATTEST_UNSIGNED_SOURCE, -1)
					 : done(v, job, ATTEST_VALID, ATTEST_OK, -1);
	}
	/* a link that failed before fails again: no crypto for a forgery sent twice */
	for (size_t k = from; k <= n; k++)
		if (attest_cache_find(&v->bad, c[k].link, now)) {
			free(c);
			v->bad_hits++;
			return done(v, job, ATTEST_INVALID, ATTEST_BAD_SIGNATURE, (int)(n - k));
		}
	if (from)
		memmove(c, c + from, (n + 1 - from) * sizeof(*c));
	job->checks = c;
	job->n_checks = (unsigned)(n + 1 - from);
	/* where counts path indexes: checks[j] is path[n - from - j], the origin n */
	job->where = (int)(n - from);
	job->state = ATTEST_PENDING;
	return ATTEST_PENDING;
}

enum attest_state attest_prepare(struct attest_verifier *v, const Nbrp__Route *r, const char *peer,
				 uint64_t now, struct attest_job *job)
{
	return prepare(v, r, peer, 0, now, job);
}

enum attest_state attest_prepare_stored(struct attest_verifier *v, const Nbrp__Route *r, const char *peer,
					bool set, uint64_t now, struct attest_job *job)
{
	return prepare(v, r, peer, ATTEST_STORED | (set ? ATTEST_STORED_SET : 0), now, job);
}

enum attest_state attest_prepare_flags(struct attest_verifier *v, const Nbrp__Route *r, const char *peer,
				       unsigned flags, uint64_t now, struct attest_job *job)
{
	return prepare(v, r, peer, flags, now, job);
}

enum attest_state attest_finish(struct attest_verifier *v, struct attest_job *job, uint64_t now)
{
	int top = job->where;
	enum attest_state st = ATTEST_VALID;
	enum attest_reason why = ATTEST_OK;
	int where = -1;
	for (unsigned j = 0; j < job->n_checks; j++) {
		v->verified++;
		if (!job->checks[j].ok) {
			st = ATTEST_INVALID;
			why = ATTEST_BAD_SIGNATURE;
			where = top - (int)j;
			attest_cache_add(&v->bad, job->checks[j].link, now + ATTEST_BAD_TTL, now);
			break;
		}
		attest_cache_add(&v->cache, job->checks[j].link, job->checks[j].expiry, now);
	}
	attest_job_drop(job);
	if (st == ATTEST_VALID && job->other_source) {
		st = ATTEST_INVALID;
		why = ATTEST_UNSIGNED_SOURCE;
	}
	return done(v, job, st, why, where);
}

void attest_job_drop(struct attest_job *job)
{
	free(job->checks);
	job->checks = NULL;
	job->n_checks = 0;
}

enum attest_state attest_verify(struct attest_verifier *v, const Nbrp__Route *r, const char *peer,
				uint64_t now, struct attest_job *job)
{
	enum attest_state st = attest_prepare(v, r, peer, now, job);
	if (st != ATTEST_PENDING)
		return st;
	/* finish stops at the first failure: so can we */
	for (unsigned j = 0; j < job->n_checks; j++) {
		struct attest_sigcheck *c = &job->checks[j];
		if (!(c->ok = sigkey_verify(c->pk, c->msg, c->len, c->sig)))
			break;
	}
	return attest_finish(v, job, now);
}

static void batch_work(void *arg, size_t i)
{
	struct attest_batch *b = arg;
	struct attest_job *job = &b->jobs[i];
	if (job->state != ATTEST_PENDING)
		return;
	for (unsigned j = 0; j < job->n_checks; j++) {
		struct attest_sigcheck *c = &job->checks[j];
		if (!(c->ok = sigkey_verify(c->pk, c->msg, c->len, c->sig)))
			break;
	}
}

static void batch_done(struct sigpool_batch *pb)
{
	struct attest_batch *b = pb->arg;
	for (size_t i = 0; i < b->n; i++)
		if (b->jobs[i].state == ATTEST_PENDING)
			attest_finish(b->v, &b->jobs[i], b->now);
	b->done(b);
}

/* pb handed to the pool for n items of arg (its flow and lane as the caller set them). */
static void submit(struct sigpool *p, struct sigpool_batch *pb, void (*work)(void *, size_t),
		   void (*on_done)(struct sigpool_batch *), void *arg, size_t n)
{
	pb->work = work;
	pb->done = on_done;
	pb->arg = arg;
	pb->n = n;
	sigpool_submit(p, pb);
}

void attest_batch_submit(struct sigpool *p, struct attest_batch *b)
{
	submit(p, &b->pool, batch_work, batch_done, b, b->n);
}

static void sign_work(void *arg, size_t i)
{
	struct attest_sign_batch *b = arg;
	struct attest_hop_request *r = &b->req[i];
	attest_sign_hop(&r->out, b->key, r->prev, r->target, r->expiry);
}

static void sign_done(struct sigpool_batch *pb)
{
	struct attest_sign_batch *b = pb->arg;
	b->done(b);
}

void attest_sign_batch_submit(struct sigpool *p, struct attest_sign_batch *b)
{
	submit(p, &b->pool, sign_work, sign_done, b, b->n);
}

size_t attest_withdrawal_message(uint8_t *msg, const uint8_t signer[SIGKEY_PUBLIC_LEN], uint64_t seq,
				 uint64_t expiry, const uint8_t *name, size_t name_len)
{
	uint8_t *p = put(msg, withdraw_tag, sizeof(withdraw_tag));
	p = put(p, signer, SIGKEY_PUBLIC_LEN);
	p = be64(p, seq);
	p = be64(p, expiry);
	return (size_t)(put(p, name, name_len) - msg);
}

void attest_sign_withdrawal(uint8_t sig[SIGKEY_SIG_LEN], const struct sigkey *k, uint64_t seq, uint64_t expiry,
			    const uint8_t *name, size_t name_len)
{
	uint8_t msg[ATTEST_WITHDRAW_MSG_MAX];
	size_t len = attest_withdrawal_message(msg, k->pk, seq, expiry, name, name_len);
	sigkey_sign(k, msg, len, sig);
}

bool attest_withdrawal_signed(const Nbrp__OriginWithdrawal *w)
{
	return w->signer.len || w->signature.len || w->expiry;
}

enum attest_reason attest_withdrawal_check(struct attest_verifier *v, const Nbrp__OriginWithdrawal *w,
					   uint64_t now)
{
	const struct trust *t = v->trust;
	if (!bytes_len(&w->signer, SIGKEY_PUBLIC_LEN) || !bytes_len(&w->signature, SIGKEY_SIG_LEN) ||
	    !nbrp_name_valid(&w->name) || !w->origin_seq)
		return ATTEST_MALFORMED;
	if (!t || !trust_current(t, now))
		return ATTEST_UNKNOWN_KEY;
	if (trust_origin_check(t, w->name.data, w->name.len, w->signer.data) != TRUST_AUTHORISED)
		return ATTEST_UNAUTHORISED_ORIGIN;
	if (w->expiry < now)
		return ATTEST_EXPIRED;
	uint8_t msg[ATTEST_WITHDRAW_MSG_MAX], link[ATTEST_DIGEST_LEN];
	size_t len = attest_withdrawal_message(msg, w->signer.data, w->origin_seq, w->expiry, w->name.data,
					       w->name.len);
	attest_link(link, msg, len, w->signature.data);
	if (attest_cache_find(&v->bad, link, now)) {
		v->bad_hits++;
		return ATTEST_BAD_SIGNATURE;
	}
	v->verified++;
	if (!sigkey_verify(w->signer.data, msg, len, w->signature.data)) {
		attest_cache_add(&v->bad, link, now + ATTEST_BAD_TTL, now);
		return ATTEST_BAD_SIGNATURE;
	}
	return ATTEST_OK;
}

enum attest_reason attest_members_check(const Nbrp__Route *r, const struct nameset *members)
{
	uint8_t d[ATTEST_DIGEST_LEN];
	if (!bytes_len(&r->aggregate_digest, ATTEST_DIGEST_LEN) || attest_member_digest(members, d) != 0 ||
	    sodium_memcmp(d, r->aggregate_digest.data, ATTEST_DIGEST_LEN) != 0)
		return ATTEST_DIGEST_MISMATCH;
	return ATTEST_OK;
}
