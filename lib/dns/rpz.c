/*
 * Response Policy Zones: the zone's records and the rule table; see rpz.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dns.h"
#include "hashkey.h"
#include "rpz.h"
#include "vec.h"
#include "wire.h"

const char *rpz_action_name(enum rpz_action a)
{
	static const char *const names[RPZ_ACTIONS] = {
		[RPZ_NXDOMAIN] = "nxdomain", [RPZ_NODATA] = "nodata", [RPZ_PASSTHRU] = "passthru",
		[RPZ_DROP] = "drop", [RPZ_TCP_ONLY] = "tcp-only", [RPZ_LOCAL] = "local-data",
	};
	return a < RPZ_ACTIONS ? names[a] : "?";
}

/* ---- the zone's records ---- */

/* key: [owner len][owner][type][rdlen][rdata]; the hash covers it, the TTL is not part of it */
struct rrec {
	uint64_t h;
	uint32_t ttl;
	uint32_t klen;
	uint8_t key[];
};

struct rpz_zone {
	struct name apex;
	struct rrec **slots;
	size_t mask;                    /* slots - 1; 0: none yet */
	size_t count;
};

static const uint8_t *rec_owner(const struct rrec *r, uint8_t *len)
{
	*len = r->key[0];
	return r->key + 1;
}

static uint16_t rec_type(const struct rrec *r)
{
	return wire_load16(r->key + 1 + r->key[0]);
}

static const uint8_t *rec_rdata(const struct rrec *r, uint16_t *rdlen)
{
	const uint8_t *p = r->key + 1 + r->key[0] + 2;
	*rdlen = wire_load16(p);
	return p + 2;
}

static struct rrec *rec_make(const struct name *owner, uint16_t type, uint32_t ttl, const uint8_t *rdata,
			     uint16_t rdlen)
{
	uint32_t klen = 1u + owner->len + 4u + rdlen;
	struct rrec *r = malloc(sizeof(*r) + klen);
	if (!r)
		return NULL;
	r->ttl = ttl;
	r->klen = klen;
	r->key[0] = owner->len;
	memcpy(r->key + 1, owner->wire, owner->len);
	wire_store16(r->key + 1 + owner->len, type);
	wire_store16(r->key + 3 + owner->len, rdlen);
	if (rdlen)
		memcpy(r->key + 5 + owner->len, rdata, rdlen);
	r->h = hashkey64(r->key, klen);        /* keyed: the primary's records choose the slots */
	return r;
}

struct rpz_zone *rpz_zone_new(const struct name *apex)
{
	struct rpz_zone *z = calloc(1, sizeof(*z));
	if (z)
		name_copy(&z->apex, apex);
	return z;
}

void rpz_zone_clear(struct rpz_zone *z)
{
	for (size_t i = 0; z->mask && i <= z->mask; i++) {
		free(z->slots[i]);
		z->slots[i] = NULL;
	}
	z->count = 0;
}

void rpz_zone_free(struct rpz_zone *z)
{
	if (!z)
		return;
	rpz_zone_clear(z);
	free(z->slots);
	free(z);
}

const struct name *rpz_zone_apex(const struct rpz_zone *z)
{
	return &z->apex;
}

uint64_t rpz_zone_records(const struct rpz_zone *z)
{
	return z->count;
}

/* The slot holding r's key, or the empty slot where it would go. */
static size_t find_slot(const struct rpz_zone *z, const struct rrec *r)
{
	size_t i = r->h & z->mask;
	while (z->slots[i]) {
		const struct rrec *s = z->slots[i];
		if (s->h == r->h && s->klen == r->klen && memcmp(s->key, r->key, r->klen) == 0)
			return i;
		i = (i + 1) & z->mask;
	}
	return i;
}

static int grow(struct rpz_zone *z)
{
	size_t cap = z->mask ? (z->mask + 1) * 2 : 64;
	struct rrec **slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -1;
	struct rpz_zone n = { .slots = slots, .mask = cap - 1 };
	for (size_t i = 0; z->mask && i <= z->mask; i++)
		if (z->slots[i])
			slots[find_slot(&n, z->slots[i])] = z->slots[i];
	free(z->slots);
	z->slots = slots;
	z->mask = cap - 1;
	return 0;
}

/* Takes the record out of slot i, shifting back the ones that probed past it. */
static void remove_slot(struct rpz_zone *z, size_t i)
{
	size_t j = i;
	for (;;) {
		j = (j + 1) & z->mask;
		if (!z->slots[j])
			break;
		size_t k = z->slots[j]->h & z->mask;
		/* move it back unless its home lies cyclically in (i, j] */
		bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
		if (!stays) {
			z->slots[i] = z->slots[j];
			i = j;
		}
	}
	z->slots[i] = NULL;
	z->count--;
}

static int put(struct rpz_zone *z, struct rrec *r)
{
	if ((z->count + 1) * 2 > z->mask + 1 && grow(z) < 0) {
		free(r);
		return -2;
	}
	size_t i = find_slot(z, r);
	if (z->slots[i]) {
		z->slots[i]->ttl = r->ttl;      /* a repeat: one record */
		free(r);
		return 0;
	}
	z->slots[i] = r;
	z->count++;
	return 0;
}

int rpz_zone_put(struct rpz_zone *z, const struct name *owner, uint16_t type, uint32_t ttl,
		 const uint8_t *rdata, uint16_t rdlen)
{
	struct rrec *r = rec_make(owner, type, ttl, rdata, rdlen);
	if (!r)
		return -1;
	return put(z, r) < 0 ? -1 : 0;
}

int rpz_zone_change(struct rpz_zone *z, bool add, const uint8_t *msg, size_t msg_len,
		    const struct dns_rr *rr, const struct name *owner, const char **why)
{
	const uint8_t *rdata = rr->rdata;
	uint16_t rdlen = rr->rdlen;
	struct name target;
	/* a CNAME's target may be compressed: kept whole, so a removal matches however it came */
	if (rr->type == DNS_TYPE_CNAME) {
		struct wire_reader d = wire_reader(rr->rdata, (size_t)(msg + msg_len - rr->rdata));
		if (dns_name_read(&d, msg, &target) != NAME_OK || d.p != rr->rdata + rr->rdlen) {
			*why = "bad CNAME data";
			return -1;
		}
		rdata = target.wire;
		rdlen = target.len;
	}
	struct rrec *r = rec_make(owner, rr->type, rr->ttl, rdata, rdlen);
	if (!r)
		return -2;
	if (add)
		return put(z, r);
	int rc = 1;
	if (z->mask) {
		size_t i = find_slot(z, r);
		if (z->slots[i]) {
			free(z->slots[i]);
			remove_slot(z, i);
			rc = 0;
		}
	}
	free(r);
	return rc;
}

struct rpz_zone *rpz_zone_copy(const struct rpz_zone *z)
{
	struct rpz_zone *c = rpz_zone_new(&z->apex);
	if (!c)
		return NULL;
	if (z->mask) {
		c->slots = calloc(z->mask + 1, sizeof(*c->slots));
		if (!c->slots) {
			free(c);
			return NULL;
		}
		c->mask = z->mask;
	}
	for (size_t i = 0; z->mask && i <= z->mask; i++) {
		if (!z->slots[i])
			continue;
		size_t sz = sizeof(struct rrec) + z->slots[i]->klen;
		if (!(c->slots[i] = malloc(sz))) {
			rpz_zone_free(c);
			return NULL;
		}
		memcpy(c->slots[i], z->slots[i], sz);
		c->count++;
	}
	return c;
}

bool rpz_zone_walk(const struct rpz_zone *z, size_t *pos, struct name *owner, uint16_t *type, uint32_t *ttl,
		   const uint8_t **rdata, uint16_t *rdlen)
{
	for (; z->mask && *pos <= z->mask; ++*pos) {
		const struct rrec *r = z->slots[*pos];
		if (!r)
			continue;
		uint8_t olen;
		const uint8_t *o = rec_owner(r, &olen);
		memcpy(owner->wire, o, olen);
		owner->len = olen;
		*type = rec_type(r);
		*ttl = r->ttl;
		*rdata = rec_rdata(r, rdlen);
		++*pos;
		return true;
	}
	return false;
}

/* ---- the zone's last good copy ---- */

static const uint8_t dump_magic[8] = { 'I', 'N', 'R', 'P', 'R', 'P', 'Z', '1' };

uint8_t *rpz_zone_dump(const struct rpz_zone *z, const struct rpz_dump_head *h, size_t *len)
{
	size_t size = sizeof(dump_magic) + 1 + z->apex.len + 12 + 8 + 8;
	for (size_t i = 0; z->mask && i <= z->mask; i++)
		if (z->slots[i])
			size += z->slots[i]->klen + 4;          /* the key, and the TTL */
	uint8_t *buf = malloc(size);
	if (!buf)
		return NULL;
	struct wire_writer w = wire_writer(buf, size);
	wire_put(&w, dump_magic, sizeof(dump_magic));
	wire_put8(&w, z->apex.len);
	wire_put(&w, z->apex.wire, z->apex.len);
	wire_put32(&w, h->serial);
	wire_put32(&w, h->refresh);
	wire_put32(&w, h->retry);
	wire_put64(&w, z->count);
	for (size_t i = 0; z->mask && i <= z->mask; i++) {
		const struct rrec *r = z->slots[i];
		if (!r)
			continue;
		wire_put32(&w, r->ttl);
		wire_put(&w, r->key, r->klen);
	}
	wire_put64(&w, XXH3_64bits(buf, wire_written(&w)));
	if (w.bad) {
		free(buf);
		return NULL;
	}
	*len = wire_written(&w);
	return buf;
}

int rpz_zone_undump(struct rpz_zone *z, const uint8_t *buf, size_t len, struct rpz_dump_head *h, const char **why)
{
	rpz_zone_clear(z);
	struct wire_reader r = wire_reader(buf, len);
	const uint8_t *magic = wire_take(&r, sizeof(dump_magic));
	if (!magic || memcmp(magic, dump_magic, sizeof(dump_magic)) != 0) {
		*why = "not a policy zone file";
		return -1;
	}
	if (len < 8 || wire_load64(buf + len - 8) != XXH3_64bits(buf, len - 8)) {
		*why = "checksum mismatch (torn or damaged)";
		return -1;
	}
	r = wire_reader(buf + sizeof(dump_magic), len - sizeof(dump_magic) - 8);
	uint8_t alen = wire_u8(&r);
	const uint8_t *apex = wire_take(&r, alen);
	if (!apex || alen != z->apex.len || memcmp(apex, z->apex.wire, alen) != 0) {
		*why = "another zone's file";
		return -1;
	}
	h->serial = wire_u32(&r);
	h->refresh = wire_u32(&r);
	h->retry = wire_u32(&r);
	uint64_t count = wire_u64(&r);
	for (uint64_t i = 0; i < count && !r.bad; i++) {
		uint32_t ttl = wire_u32(&r);
		uint8_t olen = wire_u8(&r);
		const uint8_t *o = wire_take(&r, olen);
		uint16_t type = wire_u16(&r), rdlen = wire_u16(&r);
		const uint8_t *rd = wire_take(&r, rdlen);
		struct name owner;
		if (r.bad || name_from_wire(&owner, o, olen) != NAME_OK || !name_is_subdomain(&owner, &z->apex)) {
			*why = "a bad record";
			rpz_zone_clear(z);
			return -1;
		}
		if (rpz_zone_put(z, &owner, type, ttl, rd, rdlen) < 0) {
			*why = "out of memory";
			rpz_zone_clear(z);
			return -1;
		}
	}
	if (r.bad || wire_left(&r) != 0) {
		*why = r.bad ? "cut short" : "bytes after the records";
		rpz_zone_clear(z);
		return -1;
	}
	return 0;
}

/* ---- the rule table ---- */

#define WILD_SALT 0x9e3779b97f4a7c15ull

struct rule {
	uint64_t h;
	uint32_t key_off, data_off, data_len, ttl;
	uint8_t key_len;
	uint8_t wild;
	uint8_t action;
};

struct rpz_table {
	uint32_t mask;
	uint64_t *slots;                /* the hash's top 32 bits, then rule index + 1; 0: empty */
	struct rule *rules;
	uint32_t nrules;
	uint8_t *blob;                  /* keys, then local data */
	uint64_t exact_labels;          /* bit n: an exact trigger of n labels (63: 63 or more) */
	uint64_t wild_labels;           /* bit n: a wildcard whose suffix has n labels */
	struct rpz_table_stats st;
};

static inline uint64_t label_bit(unsigned n)
{
	return 1ull << (n < 63 ? n : 63);
}

static inline uint64_t key_hash(const uint8_t *key, size_t len, bool wild)
{
	return hashkey64(key, len) ^ (wild ? WILD_SALT : 0);
}

static unsigned key_labels(const uint8_t *key, size_t len)
{
	unsigned n = 0;
	for (size_t i = 0; i < len; i += 1u + key[i])
		n++;
	return n;
}

static int cmp_owner(const void *a, const void *b)
{
	const struct rrec *x = *(const struct rrec *const *)a, *y = *(const struct rrec *const *)b;
	if (x->key[0] != y->key[0])
		return x->key[0] < y->key[0] ? -1 : 1;
	int c = memcmp(x->key + 1, y->key + 1, x->key[0]);
	if (c)
		return c;
	return rec_type(x) == DNS_TYPE_CNAME ? -1 : rec_type(y) == DNS_TYPE_CNAME ? 1 : 0;
}

/*
 * An owner's records side by side for compiling: sorted by a hash of the
 * owner first, so the sort compares integers held in the array and reads
 * the records themselves only when two hashes agree.
 */
struct by_owner {
	uint64_t h;
	struct rrec *r;
};

static int cmp_by_owner(const void *a, const void *b)
{
	const struct by_owner *x = a, *y = b;
	if (x->h != y->h)
		return x->h < y->h ? -1 : 1;
	return cmp_owner(&x->r, &y->r);
}

static bool has_label(const uint8_t *w, size_t len, const char *label)
{
	size_t n = strlen(label);
	return len == n + 2 && w[0] == n && memcmp(w + 1, label, n) == 0 && w[n + 1] == 0;
}

/* The action a CNAME target names (RPZ section 4.2); RPZ_LOCAL for a walled garden. */
static int cname_action(const uint8_t *t, uint16_t len, const struct name *trigger, const char **why)
{
	if (len == 1)
		return RPZ_NXDOMAIN;
	if (has_label(t, len, "*"))
		return RPZ_NODATA;
	if (has_label(t, len, "rpz-passthru"))
		return RPZ_PASSTHRU;
	if (has_label(t, len, "rpz-drop"))
		return RPZ_DROP;
	if (has_label(t, len, "rpz-tcp-only"))
		return RPZ_TCP_ONLY;
	/* the old passthru: a CNAME to the name itself */
	if (len == trigger->len && memcmp(t, trigger->wire, len) == 0)
		return RPZ_PASSTHRU;
	if (t[0] == 1 && t[1] == '*') {
		*why = "a wildcard CNAME target other than *. is not supported";
		return -1;
	}
	return RPZ_LOCAL;
}

/* Whether local data of this type and RDATA can be answered. */
static bool local_ok(uint16_t type, const uint8_t *rd, uint16_t rdlen, const char **why)
{
	switch (type) {
	case DNS_TYPE_A:
		*why = "A data not 4 bytes";
		return rdlen == 4;
	case DNS_TYPE_AAAA:
		*why = "AAAA data not 16 bytes";
		return rdlen == 16;
	case DNS_TYPE_TXT: {
		size_t i = 0;
		while (i < rdlen)
			i += 1u + rd[i];
		*why = "bad TXT data";
		return rdlen > 0 && i == rdlen;
	}
	default:
		*why = "unsupported type for local data (A, AAAA, TXT, CNAME)";
		return false;
	}
}

/* Other triggers of the RPZ format, which this resolver does not apply. */
static bool other_trigger(const uint8_t *key, size_t len)
{
	static const char *const kinds[] = { "rpz-ip", "rpz-nsip", "rpz-nsdname", "rpz-client-ip" };
	if (len == 0)
		return false;
	size_t last = 0;
	for (size_t i = 0; i < len; i += 1u + key[i])
		last = i;
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		if (key[last] == strlen(kinds[k]) && memcmp(key + last + 1, kinds[k], key[last]) == 0)
			return true;
	return false;
}

struct builder {
	struct rpz_table *t;
	size_t blob_len, blob_cap;
	rpz_bad_fn bad;
	void *arg;
};

static int blob_put(struct builder *b, const void *p, size_t n)
{
	/* at least a byte: a rule's empty key (the zone's own wildcard) still points into a blob */
	if (b->blob_len + n > UINT32_MAX || VEC_RESERVE(b->t->blob, b->blob_cap, b->blob_len + (n ? n : 1)) < 0)
		return -1;              /* offsets into it are 32 bits */
	if (n)
		memcpy(b->t->blob + b->blob_len, p, n);
	b->blob_len += n;
	return 0;
}

static void bad(struct builder *b, const struct rrec *r, const char *why)
{
	b->t->st.bad++;
	if (b->bad) {
		struct name n;
		uint8_t len;
		const uint8_t *o = rec_owner(r, &len);
		memcpy(n.wire, o, len);
		n.len = len;
		b->bad(b->arg, &n, rec_type(r), why);
	}
}

/* One owner's records (CNAME first) as at most one rule. */
static int compile_owner(struct builder *b, const struct name *apex, const struct by_owner *recs, size_t n)
{
	struct rpz_table *t = b->t;
	uint8_t olen;
	const uint8_t *owner = rec_owner(recs[0].r, &olen);
	size_t klen = (size_t)olen - apex->len;
	const uint8_t *key = owner;
	bool wild = klen > 0 && owner[0] == 1 && owner[1] == '*';
	if (klen == 0) {
		for (size_t i = 0; i < n; i++) {
			uint16_t type = rec_type(recs[i].r);
			if (type == DNS_TYPE_SOA || type == DNS_TYPE_NS)
				t->st.ignored++;
			else
				bad(b, recs[i].r, "data at the zone's apex");
		}
		return 0;
	}
	if (other_trigger(owner, klen)) {
		for (size_t i = 0; i < n; i++)
			bad(b, recs[i].r, "not a QNAME trigger (rpz-ip, rpz-nsip, rpz-nsdname, rpz-client-ip)");
		return 0;
	}
	if (wild) {
		key += 2;
		klen -= 2;
	}
	struct name trigger;            /* the name the rule is for, for the old passthru */
	memcpy(trigger.wire, owner, klen + (wild ? 2 : 0));
	trigger.wire[klen + (wild ? 2 : 0)] = 0;
	trigger.len = (uint8_t)(klen + (wild ? 2 : 0) + 1);

	struct rule r = { .key_len = (uint8_t)klen, .wild = wild, .ttl = UINT32_MAX };
	const char *why = NULL;
	size_t first = 0;
	int action = -1;
	/* a CNAME says everything: any other record beside it is left out */
	for (; first < n && rec_type(recs[first].r) == DNS_TYPE_CNAME && action < 0; first++) {
		uint16_t rdlen;
		const uint8_t *rd = rec_rdata(recs[first].r, &rdlen);
		action = cname_action(rd, rdlen, &trigger, &why);
		if (action < 0)
			bad(b, recs[first].r, why);
		else
			r.ttl = recs[first].r->ttl;
	}
	if (action >= 0) {
		for (size_t i = first; i < n; i++)
			bad(b, recs[i].r, "beside a CNAME");
		n = first;
		first--;
	}
	r.key_off = (uint32_t)b->blob_len;
	if (blob_put(b, key, klen) < 0)
		return -1;
	r.data_off = (uint32_t)b->blob_len;
	bool by_cname = action >= 0;
	for (size_t i = first; i < n; i++) {     /* a CNAME's rule, or the data after the bad CNAMEs */
		uint16_t type = rec_type(recs[i].r), rdlen;
		const uint8_t *rd = rec_rdata(recs[i].r, &rdlen);
		if (by_cname && action != RPZ_LOCAL)
			break;
		if (!by_cname && !local_ok(type, rd, rdlen, &why)) {
			bad(b, recs[i].r, why);
			continue;
		}
		uint8_t head[8];
		wire_store16(head, type);
		wire_store32(head + 2, recs[i].r->ttl);
		wire_store16(head + 6, rdlen);
		if (blob_put(b, head, sizeof(head)) < 0 || blob_put(b, rd, rdlen) < 0)
			return -1;
		if (recs[i].r->ttl < r.ttl)
			r.ttl = recs[i].r->ttl;
		if (action < 0)
			action = RPZ_LOCAL;
	}
	if (action < 0)
		return 0;                       /* every record was bad */
	r.data_len = (uint32_t)(b->blob_len - r.data_off);
	r.action = (uint8_t)action;
	t->rules[t->nrules++] = r;
	t->st.rules++;
	t->st.by_action[action]++;
	if (wild) {
		t->st.wildcards++;
		t->wild_labels |= label_bit(key_labels(key, klen));
	} else {
		t->exact_labels |= label_bit(key_labels(key, klen));
	}
	return 0;
}

static struct rpz_table *build_fail(struct rpz_table *t, struct by_owner *all)
{
	free(all);
	rpz_table_free(t);
	return NULL;
}

struct rpz_table *rpz_table_build(const struct rpz_zone *z, rpz_bad_fn badfn, void *arg)
{
	struct rpz_table *t = calloc(1, sizeof(*t));
	struct by_owner *all = malloc((z->count ? z->count : 1) * sizeof(*all));
	if (!t || !all)
		return build_fail(t, all);
	t->rules = malloc((z->count ? z->count : 1) * sizeof(*t->rules));
	if (!t->rules)
		return build_fail(t, all);
	size_t n = 0;
	for (size_t i = 0; z->mask && i <= z->mask; i++)
		if (z->slots[i]) {
			all[n].h = hashkey64(z->slots[i]->key, 1u + z->slots[i]->key[0]);
			all[n++].r = z->slots[i];
		}
	qsort(all, n, sizeof(*all), cmp_by_owner);
	struct builder b = { .t = t, .bad = badfn, .arg = arg };
	for (size_t i = 0; i < n;) {
		const uint8_t *k = all[i].r->key;
		size_t j = i + 1;
		while (j < n && all[j].h == all[i].h && all[j].r->key[0] == k[0] &&
		       memcmp(all[j].r->key + 1, k + 1, k[0]) == 0)
			j++;
		if (compile_owner(&b, &z->apex, all + i, j - i) < 0)
			return build_fail(t, all);
		i = j;
	}
	free(all);
	uint32_t cap = 16;
	while (cap < 2u * t->nrules)
		cap *= 2;
	t->slots = calloc(cap, sizeof(*t->slots));     /* a probe reads a rule only when its tag agrees */
	if (!t->slots)
		return build_fail(t, NULL);
	t->mask = cap - 1;
	for (uint32_t i = 0; i < t->nrules; i++) {
		struct rule *r = &t->rules[i];
		r->h = key_hash(t->blob + r->key_off, r->key_len, r->wild);
		uint32_t s = (uint32_t)r->h & t->mask;
		while (t->slots[s])
			s = (s + 1) & t->mask;
		t->slots[s] = (r->h & 0xffffffff00000000ull) | (i + 1u);
	}
	return t;
}

void rpz_table_free(struct rpz_table *t)
{
	if (!t)
		return;
	free(t->slots);
	free(t->rules);
	free(t->blob);
	free(t);
}

const struct rpz_table_stats *rpz_table_stats(const struct rpz_table *t)
{
	return &t->st;
}

static const struct rule *probe(const struct rpz_table *t, const uint8_t *key, size_t len, bool wild)
{
	uint64_t h = key_hash(key, len, wild);
	for (uint32_t s = (uint32_t)h & t->mask; t->slots[s]; s = (s + 1) & t->mask) {
		if ((t->slots[s] ^ h) >> 32)
			continue;
		const struct rule *r = &t->rules[(uint32_t)t->slots[s] - 1];
		if (r->h == h && r->key_len == len && r->wild == wild && memcmp(t->blob + r->key_off, key, len) == 0)
			return r;
	}
	return NULL;
}

bool rpz_table_lookup(const struct rpz_table *t, const struct name *qname, struct rpz_hit *hit)
{
	if (!t || t->nrules == 0)
		return false;
	uint8_t off[NAME_MAX_LABELS];
	unsigned labels = (unsigned)name_label_offsets(qname, off);
	size_t klen = qname->len - 1u;          /* without the root */
	const struct rule *r = NULL;
	if (t->exact_labels & label_bit(labels))
		r = probe(t, qname->wire, klen, false);
	/* wildcards from the longest suffix to the root's (*.ZONE) */
	for (unsigned i = 1; !r && i <= labels && t->wild_labels; i++) {
		if (!(t->wild_labels & label_bit(labels - i)))
			continue;
		size_t o = i < labels ? off[i] : klen;
		r = probe(t, qname->wire + o, klen - o, true);
	}
	if (!r)
		return false;
	hit->action = (enum rpz_action)r->action;
	hit->wildcard = r->wild;
	hit->ttl = r->ttl;
	hit->data = t->blob + r->data_off;
	hit->data_len = r->data_len;
	return true;
}

bool rpz_data_next(const struct rpz_hit *hit, size_t *pos, uint16_t *type, uint32_t *ttl,
		   const uint8_t **rdata, uint16_t *rdlen)
{
	if (*pos + 8 > hit->data_len)
		return false;
	const uint8_t *p = hit->data + *pos;
	*type = wire_load16(p);
	*ttl = wire_load32(p + 2);
	*rdlen = wire_load16(p + 6);
	*rdata = p + 8;
	*pos += 8u + *rdlen;
	return true;
}
