/* lib/dns/rpz.c: a policy zone's records and its rule table; lib/dns/tsig.c's key files. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "dns.h"
#include "rpz.h"
#include "tsig.h"

#define ZONE "rpz.test"

static struct name nm(const char *text)
{
	struct name n;
	assert_int_equal(name_from_text(&n, text, strlen(text)), NAME_OK);
	return n;
}

/* A record as a transfer hands it over: its RDATA alone is the message; recorded in d if given. */
static int dchange(struct rpz_zone *z, struct rpz_diff *d, bool add, const char *owner, uint16_t type,
		   const void *rdata, size_t len, uint32_t ttl)
{
	struct name o = nm(owner);
	struct dns_rr rr = { .type = type, .rclass = DNS_CLASS_IN, .ttl = ttl, .rdlen = (uint16_t)len,
			     .rdata = rdata };
	const char *why;
	return rpz_zone_change(z, add, rdata, len, &rr, &o, d, &why);
}

static int change(struct rpz_zone *z, bool add, const char *owner, uint16_t type, const void *rdata, size_t len)
{
	return dchange(z, NULL, add, owner, type, rdata, len, 60);
}

static void cname(struct rpz_zone *z, const char *owner, const char *target)
{
	struct name t = nm(target);
	assert_int_equal(change(z, true, owner, DNS_TYPE_CNAME, t.wire, t.len), 0);
}

static int action_of(const struct rpz_table *t, const char *qname)
{
	struct name q = nm(qname);
	struct rpz_hit hit;
	return rpz_table_lookup(t, &q, &hit) ? (int)hit.action : -1;
}

static void every_action_from_its_record(void **state)
{
	(void)state;
	struct name apex = nm(ZONE);
	struct rpz_zone *z = rpz_zone_new(&apex);
	cname(z, "nx.example." ZONE, ".");
	cname(z, "nodata.example." ZONE, "*.");
	cname(z, "pass.example." ZONE, "rpz-passthru.");
	cname(z, "self.example." ZONE, "self.example.");
	cname(z, "drop.example." ZONE, "rpz-drop.");
	cname(z, "tcp.example." ZONE, "rpz-tcp-only.");
	cname(z, "garden.example." ZONE, "walled.garden.");
	const uint8_t a[4] = { 192, 0, 2, 7 }, txt[] = { 3, 'o', 'n', 'e', 3, 't', 'w', 'o' };
	assert_int_equal(change(z, true, "local.example." ZONE, DNS_TYPE_A, a, 4), 0);
	assert_int_equal(change(z, true, "local.example." ZONE, DNS_TYPE_TXT, txt, sizeof(txt)), 0);
	struct rpz_table *t = rpz_table_build(z, NULL, NULL);
	assert_non_null(t);
	assert_int_equal(action_of(t, "nx.example"), RPZ_NXDOMAIN);
	assert_int_equal(action_of(t, "nodata.example"), RPZ_NODATA);
	assert_int_equal(action_of(t, "pass.example"), RPZ_PASSTHRU);
	assert_int_equal(action_of(t, "self.example"), RPZ_PASSTHRU);
	assert_int_equal(action_of(t, "drop.example"), RPZ_DROP);
	assert_int_equal(action_of(t, "tcp.example"), RPZ_TCP_ONLY);
	assert_int_equal(action_of(t, "garden.example"), RPZ_LOCAL);
	assert_int_equal(action_of(t, "other.example"), -1);
	assert_int_equal(action_of(t, "example"), -1);
	assert_int_equal(action_of(t, "a.nx.example"), -1);      /* an exact rule is not a wildcard */

	struct name q = nm("local.example");
	struct rpz_hit hit;
	assert_true(rpz_table_lookup(t, &q, &hit));
	size_t pos = 0;
	uint16_t type, rdlen;
	uint32_t ttl;
	const uint8_t *rd;
	unsigned seen = 0;
	while (rpz_data_next(&hit, &pos, &type, &ttl, &rd, &rdlen)) {
		assert_true(type == DNS_TYPE_A || type == DNS_TYPE_TXT);
		assert_int_equal(rdlen, type == DNS_TYPE_A ? 4 : sizeof(txt));
		assert_memory_equal(rd, type == DNS_TYPE_A ? a : txt, rdlen);
		assert_int_equal(ttl, 60);
		seen++;
	}
	assert_int_equal(seen, 2);
	q = nm("garden.example");
	assert_true(rpz_table_lookup(t, &q, &hit));
	pos = 0;
	assert_true(rpz_data_next(&hit, &pos, &type, &ttl, &rd, &rdlen));
	struct name garden = nm("walled.garden");
	assert_int_equal(type, DNS_TYPE_CNAME);
	assert_int_equal(rdlen, garden.len);
	assert_memory_equal(rd, garden.wire, garden.len);
	const struct rpz_table_stats *st = rpz_table_stats(t);
	assert_int_equal(st->rules, 8);
	assert_int_equal(st->bad, 0);
	rpz_table_free(t);
	rpz_zone_free(z);
}

static void exact_beats_wildcards_and_the_longest_wildcard_wins(void **state)
{
	(void)state;
	struct name apex = nm(ZONE);
	struct rpz_zone *z = rpz_zone_new(&apex);
	cname(z, "*.example." ZONE, ".");
	cname(z, "*.a.example." ZONE, "*.");
	cname(z, "b.a.example." ZONE, "rpz-passthru.");
	struct rpz_table *t = rpz_table_build(z, NULL, NULL);
	assert_int_equal(action_of(t, "x.example"), RPZ_NXDOMAIN);
	assert_int_equal(action_of(t, "a.example"), RPZ_NXDOMAIN);
	assert_int_equal(action_of(t, "y.a.example"), RPZ_NODATA);
	assert_int_equal(action_of(t, "z.y.a.example"), RPZ_NODATA);
	assert_int_equal(action_of(t, "b.a.example"), RPZ_PASSTHRU);
	assert_int_equal(action_of(t, "c.b.a.example"), RPZ_NODATA);
	assert_int_equal(action_of(t, "example"), -1);
	assert_int_equal(action_of(t, "example.org"), -1);
	rpz_table_free(t);
	/* the zone's own wildcard: every name */
	cname(z, "*." ZONE, "rpz-drop.");
	t = rpz_table_build(z, NULL, NULL);
	assert_int_equal(action_of(t, "example.org"), RPZ_DROP);
	assert_int_equal(action_of(t, "x.example"), RPZ_NXDOMAIN);
	rpz_table_free(t);
	rpz_zone_free(z);
}

struct bad_seen {
	unsigned n;
	char owners[8][NAME_MAX_TEXT];
};

static void note_bad(void *arg, const struct name *owner, uint16_t type, const char *why)
{
	struct bad_seen *b = arg;
	(void)type;
	assert_non_null(why);
	if (b->n < 8)
		name_to_text(owner, b->owners[b->n], NAME_MAX_TEXT);
	b->n++;
}

static void bad_records_are_left_out_and_told(void **state)
{
	(void)state;
	struct name apex = nm(ZONE);
	struct rpz_zone *z = rpz_zone_new(&apex);
	const uint8_t mx[] = { 0, 10, 4, 'm', 'a', 'i', 'l', 0 }, a[4] = { 192, 0, 2, 1 }, a3[3] = { 1, 2, 3 };
	const uint8_t badtxt[] = { 5, 'a' };
	const uint8_t soa[22] = { 0 };
	assert_int_equal(change(z, true, ZONE, DNS_TYPE_SOA, soa, sizeof(soa)), 0);     /* the apex: ignored */
	assert_int_equal(change(z, true, "mx.example." ZONE, 15, mx, sizeof(mx)), 0);
	assert_int_equal(change(z, true, "32.1.2.0.192.rpz-ip." ZONE, DNS_TYPE_A, a, 4), 0);
	assert_int_equal(change(z, true, "short.example." ZONE, DNS_TYPE_A, a3, 3), 0);
	assert_int_equal(change(z, true, "txt.example." ZONE, DNS_TYPE_TXT, badtxt, sizeof(badtxt)), 0);
	assert_int_equal(change(z, true, "x." ZONE, DNS_TYPE_A, a, 4), 0);
	cname(z, "both.example." ZONE, ".");
	assert_int_equal(change(z, true, "both.example." ZONE, DNS_TYPE_A, a, 4), 0);   /* beside a CNAME */
	cname(z, "wild.example." ZONE, "*.garden.");
	cname(z, "ok.example." ZONE, ".");
	/* a CNAME whose target does not decode is refused at once */
	const uint8_t broken[] = { 9, 'a' };
	assert_int_equal(change(z, true, "broken.example." ZONE, DNS_TYPE_CNAME, broken, sizeof(broken)), -1);
	struct bad_seen seen = { 0 };
	struct rpz_table *t = rpz_table_build(z, note_bad, &seen);
	const struct rpz_table_stats *st = rpz_table_stats(t);
	assert_int_equal(st->bad, 6);
	assert_int_equal(seen.n, 6);
	assert_int_equal(st->ignored, 1);
	assert_int_equal(st->rules, 3);                 /* x, both (its CNAME), ok */
	assert_int_equal(action_of(t, "both.example"), RPZ_NXDOMAIN);
	assert_int_equal(action_of(t, "ok.example"), RPZ_NXDOMAIN);
	assert_int_equal(action_of(t, "mx.example"), -1);
	bool told = false;
	for (unsigned i = 0; i < seen.n && i < 8; i++)
		told |= strcmp(seen.owners[i], "mx.example." ZONE ".") == 0;
	assert_true(told);
	rpz_table_free(t);
	rpz_zone_free(z);
}

static void ixfr_removals_find_their_records(void **state)
{
	(void)state;
	struct name apex = nm(ZONE);
	struct rpz_zone *z = rpz_zone_new(&apex);
	cname(z, "a.example." ZONE, ".");
	cname(z, "a.example." ZONE, ".");               /* a repeat is one record */
	assert_int_equal(rpz_zone_records(z), 1);
	struct rpz_zone *c = rpz_zone_copy(z);
	struct name dot = nm(".");
	assert_int_equal(change(c, false, "a.example." ZONE, DNS_TYPE_CNAME, dot.wire, dot.len), 0);
	assert_int_equal(change(c, false, "a.example." ZONE, DNS_TYPE_CNAME, dot.wire, dot.len), 1);
	assert_int_equal(rpz_zone_records(c), 0);
	assert_int_equal(rpz_zone_records(z), 1);       /* the copy is its own */
	/* many records in and out: the table stays whole through its growth and shifts */
	char owner[64];
	for (unsigned i = 0; i < 5000; i++) {
		snprintf(owner, sizeof(owner), "n%u.example." ZONE, i);
		cname(c, owner, ".");
	}
	for (unsigned i = 0; i < 5000; i += 2) {
		snprintf(owner, sizeof(owner), "n%u.example." ZONE, i);
		assert_int_equal(change(c, false, owner, DNS_TYPE_CNAME, dot.wire, dot.len), 0);
	}
	assert_int_equal(rpz_zone_records(c), 2500);
	struct rpz_table *t = rpz_table_build(c, NULL, NULL);
	for (unsigned i = 0; i < 5000; i++) {
		snprintf(owner, sizeof(owner), "n%u.example", i);
		assert_int_equal(action_of(t, owner), i % 2 ? RPZ_NXDOMAIN : -1);
	}
	/* what a walk gives back builds the same zone */
	struct rpz_zone *again = rpz_zone_new(&apex);
	size_t pos = 0;
	struct name o;
	uint16_t type, rdlen;
	uint32_t ttl;
	const uint8_t *rd;
	while (rpz_zone_walk(c, &pos, &o, &type, &ttl, &rd, &rdlen))
		assert_int_equal(rpz_zone_put(again, &o, type, ttl, rd, rdlen), 0);
	assert_int_equal(rpz_zone_records(again), 2500);
	rpz_table_free(t);
	rpz_zone_free(again);
	rpz_zone_free(c);
	rpz_zone_free(z);
}

/* Random rules over a small alphabet of labels, against the rule written out longhand. */
static void lookups_agree_with_a_model(void **state)
{
	(void)state;
	static const char *const labels[] = { "a", "b", "c", "dd", "eee" };
	enum { RULES = 400, NAMES = 4000 };
	char rules[RULES][64];
	bool wild[RULES];
	int act[RULES];
	struct name apex = nm(ZONE);
	struct rpz_zone *z = rpz_zone_new(&apex);
	srand(7);
	unsigned n = 0;
	for (unsigned i = 0; i < RULES; i++) {
		char name[64] = "";
		unsigned depth = 1 + (unsigned)rand() % 4;
		for (unsigned d = 0; d < depth; d++)
			snprintf(name + strlen(name), sizeof(name) - strlen(name), "%s%s", d ? "." : "",
				 labels[rand() % 5]);
		bool w = rand() % 3 == 0;
		bool dup = false;
		for (unsigned k = 0; k < n; k++)
			dup |= wild[k] == w && strcmp(rules[k], name) == 0;
		if (dup)
			continue;
		snprintf(rules[n], sizeof(rules[n]), "%s", name);
		wild[n] = w;
		act[n] = rand() % 2 ? RPZ_NXDOMAIN : RPZ_NODATA;
		char owner[128];
		snprintf(owner, sizeof(owner), "%s%s." ZONE, w ? "*." : "", name);
		cname(z, owner, act[n] == RPZ_NXDOMAIN ? "." : "*.");
		n++;
	}
	struct rpz_table *t = rpz_table_build(z, NULL, NULL);
	for (unsigned i = 0; i < NAMES; i++) {
		char q[64] = "";
		unsigned depth = 1 + (unsigned)rand() % 5;
		for (unsigned d = 0; d < depth; d++)
			snprintf(q + strlen(q), sizeof(q) - strlen(q), "%s%s", d ? "." : "", labels[rand() % 5]);
		int want = -1;
		size_t best = 0;
		for (unsigned k = 0; k < n; k++) {
			size_t ql = strlen(q), rl = strlen(rules[k]);
			if (!wild[k] && strcmp(q, rules[k]) == 0) {
				want = act[k];
				best = SIZE_MAX;
			} else if (wild[k] && best != SIZE_MAX && ql > rl + 1 && q[ql - rl - 1] == '.' &&
				   strcmp(q + ql - rl, rules[k]) == 0 && rl + 1 > best) {
				want = act[k];
				best = rl + 1;
			}
		}
		assert_int_equal(action_of(t, q), want);
	}
	rpz_table_free(t);
	rpz_zone_free(z);
}

static void the_last_good_copy_reads_back_and_damage_is_refused(void **state)
{
	(void)state;
	struct name apex = nm(ZONE), other = nm("other.test");
	struct rpz_zone *z = rpz_zone_new(&apex);
	cname(z, "a.example." ZONE, ".");
	cname(z, "*.b.example." ZONE, "rpz-drop.");
	const uint8_t a[4] = { 192, 0, 2, 1 };
	assert_int_equal(change(z, true, "c.example." ZONE, DNS_TYPE_A, a, 4), 0);
	struct rpz_dump_head h = { 7, 3600, 600, 42 }, back;
	size_t len;
	uint8_t *buf = rpz_zone_dump(z, &h, &len);
	assert_non_null(buf);
	struct rpz_zone *again = rpz_zone_new(&apex);
	const char *why = NULL;
	assert_int_equal(rpz_zone_undump(again, buf, len, &back, &why), 0);
	assert_int_equal(back.serial, 7);
	assert_int_equal(back.refresh, 3600);
	assert_int_equal(back.retry, 600);
	assert_int_equal(back.epoch, 42);
	struct rpz_table *t = rpz_table_build(again, NULL, NULL);
	assert_int_equal(action_of(t, "a.example"), RPZ_NXDOMAIN);
	assert_int_equal(action_of(t, "x.b.example"), RPZ_DROP);
	assert_int_equal(action_of(t, "c.example"), RPZ_LOCAL);
	rpz_table_free(t);
	/* every cut and every flipped byte is refused, and leaves nothing */
	for (size_t cut = 0; cut < len; cut++) {
		assert_int_equal(rpz_zone_undump(again, buf, cut, &back, &why), -1);
		assert_int_equal(rpz_zone_records(again), 0);
	}
	for (size_t i = 0; i < len; i++) {
		buf[i] ^= 0x10;
		assert_int_equal(rpz_zone_undump(again, buf, len, &back, &why), -1);
		buf[i] ^= 0x10;
	}
	/* another zone's copy */
	struct rpz_zone *o = rpz_zone_new(&other);
	assert_int_equal(rpz_zone_undump(o, buf, len, &back, &why), -1);
	assert_string_equal(why, "another zone's file");
	free(buf);
	rpz_zone_free(o);
	rpz_zone_free(again);
	rpz_zone_free(z);
}

/* ---- IXFR diffs: the table they give is the table a rebuild gives ---- */

static const char *const dl[] = { "a", "b", "c", "dd" };

/* A random owner below the zone: 1 to 3 labels, a wildcard one time in four. */
static void random_owner(char *out, size_t len)
{
	char name[64] = "";
	unsigned depth = 1 + (unsigned)rand() % 3;
	for (unsigned d = 0; d < depth; d++)
		snprintf(name + strlen(name), sizeof(name) - strlen(name), "%s%s", d ? "." : "", dl[rand() % 4]);
	snprintf(out, len, "%s%s." ZONE, rand() % 4 == 0 ? "*." : "", name);
}

/* A random record of a feed: every action, local data, and bad ones (an MX, data beside a CNAME). */
static int random_change(struct rpz_zone *z, struct rpz_diff *d, bool add)
{
	static const char *const targets[] = { ".", "*.", "rpz-passthru.", "rpz-drop.", "rpz-tcp-only.", "garden.x." };
	char owner[128];
	random_owner(owner, sizeof(owner));
	uint32_t ttl = 30 + (unsigned)rand() % 3;
	int k = rand() % 9;
	if (k < 6) {
		struct name t = nm(targets[k]);
		return dchange(z, d, add, owner, DNS_TYPE_CNAME, t.wire, t.len, ttl);
	}
	if (k < 8) {
		const uint8_t a[4] = { 192, 0, 2, (uint8_t)(rand() % 3) };
		return dchange(z, d, add, owner, DNS_TYPE_A, a, 4, ttl);
	}
	const uint8_t mx[] = { 0, 10, 1, 'm', 0 };
	return dchange(z, d, add, owner, 15, mx, sizeof(mx), ttl);
}

/* Every name the alphabet makes, 1 to 4 labels deep: each table answers each alike. */
static void assert_same_answers(const struct rpz_table *a, const struct rpz_table *b)
{
	const struct rpz_table_stats *sa = rpz_table_stats(a), *sb = rpz_table_stats(b);
	assert_int_equal(sa->rules, sb->rules);
	assert_int_equal(sa->wildcards, sb->wildcards);
	assert_int_equal(sa->bad, sb->bad);
	assert_int_equal(sa->ignored, sb->ignored);
	for (unsigned i = 0; i < RPZ_ACTIONS; i++)
		assert_int_equal(sa->by_action[i], sb->by_action[i]);
	for (unsigned n = 0; n < 4 + 16 + 64 + 256; n++) {
		char q[64] = "";
		unsigned v = n, depth = n < 4 ? 1 : n < 20 ? 2 : n < 84 ? 3 : 4;
		for (unsigned d = 0; d < depth; d++, v /= 4)
			snprintf(q + strlen(q), sizeof(q) - strlen(q), "%s%s", d ? "." : "", dl[v % 4]);
		struct name qn = nm(q);
		struct rpz_hit ha, hb;
		bool fa = rpz_table_lookup(a, &qn, &ha), fb = rpz_table_lookup(b, &qn, &hb);
		assert_int_equal(fa, fb);
		if (!fa)
			continue;
		assert_int_equal(ha.action, hb.action);
		assert_int_equal(ha.wildcard, hb.wildcard);
		assert_int_equal(ha.ttl, hb.ttl);
		assert_int_equal(ha.data_len, hb.data_len);
		assert_memory_equal(ha.data, hb.data, ha.data_len);
	}
}

static void ixfr_diffs_give_the_table_a_rebuild_gives(void **state)
{
	(void)state;
	struct name apex = nm(ZONE);
	struct rpz_zone *z = rpz_zone_new(&apex);
	srand(11);
	for (unsigned i = 0; i < 300; i++)
		assert_true(random_change(z, NULL, true) >= 0);
	struct rpz_table *t = rpz_table_build(z, NULL, NULL);
	struct rpz_diff *d = rpz_diff_new();
	for (unsigned round = 0; round < 40; round++) {
		/* adds, removals of what may or may not be there, a rule changed (removed, then another added) */
		for (unsigned i = 0; i < 20; i++) {
			bool add = rand() % 2;
			int rc = random_change(z, d, add);
			assert_true(rc == 0 || (!add && rc == 1));
		}
		struct rpz_table *next = rpz_table_apply(t, z, d, NULL, NULL);
		assert_non_null(next);
		rpz_diff_free(d);
		d = rpz_diff_new();
		struct rpz_table *whole = rpz_table_build(z, NULL, NULL);
		assert_same_answers(next, whole);
		assert_same_answers(t, t);
		rpz_table_free(t);
		t = next;
		if (round % 10 == 9) {                  /* compacted now and then: the same again */
			struct rpz_table *c = rpz_table_compact(t);
			assert_non_null(c);
			assert_int_equal(rpz_table_delta(c), 0);
			assert_same_answers(c, whole);
			rpz_table_free(t);
			t = c;
		}
		rpz_table_free(whole);
	}
	rpz_diff_free(d);
	rpz_table_free(t);
	rpz_zone_free(z);
}

static void a_diff_changes_precedence_as_a_rebuild_would(void **state)
{
	(void)state;
	struct name apex = nm(ZONE), dot = nm("."), star = nm("*.");
	struct rpz_zone *z = rpz_zone_new(&apex);
	cname(z, "*.example." ZONE, ".");
	cname(z, "*.a.example." ZONE, "*.");
	cname(z, "b.a.example." ZONE, "rpz-passthru.");
	struct rpz_table *t = rpz_table_build(z, NULL, NULL);
	assert_int_equal(action_of(t, "b.a.example"), RPZ_PASSTHRU);
	/* the exact rule goes: the longer wildcard decides; then that goes too: the shorter */
	struct rpz_diff *d = rpz_diff_new();
	struct name pass = nm("rpz-passthru.");
	assert_int_equal(dchange(z, d, false, "b.a.example." ZONE, DNS_TYPE_CNAME, pass.wire, pass.len, 60), 0);
	struct rpz_table *t2 = rpz_table_apply(t, z, d, NULL, NULL);
	assert_int_equal(action_of(t2, "b.a.example"), RPZ_NODATA);
	assert_int_equal(action_of(t, "b.a.example"), RPZ_PASSTHRU);   /* the table before is untouched */
	rpz_diff_free(d);
	d = rpz_diff_new();
	assert_int_equal(dchange(z, d, false, "*.a.example." ZONE, DNS_TYPE_CNAME, star.wire, star.len, 60), 0);
	struct rpz_table *t3 = rpz_table_apply(t2, z, d, NULL, NULL);
	assert_int_equal(action_of(t3, "b.a.example"), RPZ_NXDOMAIN);
	assert_int_equal(action_of(t3, "x.a.example"), RPZ_NXDOMAIN);
	rpz_diff_free(d);
	/* a rule changed in one diff: NXDOMAIN to local data */
	d = rpz_diff_new();
	const uint8_t a[4] = { 192, 0, 2, 9 };
	assert_int_equal(dchange(z, d, false, "*.example." ZONE, DNS_TYPE_CNAME, dot.wire, dot.len, 60), 0);
	assert_int_equal(dchange(z, d, true, "*.example." ZONE, DNS_TYPE_A, a, 4, 60), 0);
	struct rpz_table *t4 = rpz_table_apply(t3, z, d, NULL, NULL);
	assert_int_equal(action_of(t4, "x.a.example"), RPZ_LOCAL);
	assert_int_equal(rpz_table_stats(t4)->rules, 1);
	assert_int_equal(rpz_table_stats(t4)->by_action[RPZ_LOCAL], 1);
	assert_int_equal(rpz_table_stats(t4)->by_action[RPZ_NXDOMAIN], 0);
	rpz_diff_free(d);
	rpz_table_free(t);
	rpz_table_free(t2);
	rpz_table_free(t3);
	rpz_table_free(t4);
	rpz_zone_free(z);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The zone's records as sorted text: two zones hold the same records when these agree. */
static char **records_of(const struct rpz_zone *z, size_t *n)
{
	char **v = calloc(rpz_zone_records(z) + 1, sizeof(*v));
	size_t pos = 0, i = 0;
	struct name o;
	uint16_t type, rdlen;
	uint32_t ttl;
	const uint8_t *rd;
	while (rpz_zone_walk(z, &pos, &o, &type, &ttl, &rd, &rdlen)) {
		char text[NAME_MAX_TEXT], *line = malloc(NAME_MAX_TEXT + 32 + 2 * rdlen);
		name_to_text(&o, text, sizeof(text));
		int k = sprintf(line, "%s %u %u ", text, type, ttl);
		for (uint16_t j = 0; j < rdlen; j++)
			k += sprintf(line + k, "%02x", rd[j]);
		v[i++] = line;
	}
	qsort(v, i, sizeof(*v), cmp_str);
	*n = i;
	return v;
}

static void assert_same_records(const struct rpz_zone *a, const struct rpz_zone *b)
{
	size_t na, nb;
	char **va = records_of(a, &na), **vb = records_of(b, &nb);
	assert_int_equal(na, nb);
	for (size_t i = 0; i < na; i++) {
		assert_string_equal(va[i], vb[i]);
		free(va[i]);
		free(vb[i]);
	}
	free(va);
	free(vb);
}

static void a_failed_transfer_is_undone(void **state)
{
	(void)state;
	struct name apex = nm(ZONE);
	struct rpz_zone *z = rpz_zone_new(&apex);
	srand(5);
	for (unsigned i = 0; i < 2000; i++)
		assert_true(random_change(z, NULL, true) >= 0);
	struct rpz_zone *before = rpz_zone_copy(z);
	struct rpz_diff *d = rpz_diff_new();
	/* enough to make the table grow, a TTL changed by a repeat, records added then removed */
	for (unsigned i = 0; i < 3000; i++)
		random_change(z, d, rand() % 3 != 0);
	assert_true(rpz_diff_changes(d) > 0);
	rpz_diff_undo(z, d);
	assert_int_equal(rpz_diff_changes(d), 0);
	assert_same_records(z, before);
	rpz_diff_free(d);
	rpz_zone_free(before);
	rpz_zone_free(z);
}

static void the_journal_replays_and_stops_at_a_tear(void **state)
{
	(void)state;
	struct name apex = nm(ZONE);
	struct rpz_zone *z = rpz_zone_new(&apex);
	srand(3);
	for (unsigned i = 0; i < 200; i++)
		assert_true(random_change(z, NULL, true) >= 0);
	struct rpz_dump_head h1 = { 1, 3600, 600, 0x1234567890abcdefull };
	size_t clen;
	uint8_t *copy = rpz_zone_dump(z, &h1, &clen);
	/* two IXFRs after the copy, each journaled; the zones at 1, 2 and 3 kept to compare */
	struct rpz_zone *at[4] = { NULL, rpz_zone_copy(z), NULL, NULL };
	uint8_t *jnl = malloc(RPZ_JOURNAL_HEAD);
	rpz_journal_head(jnl, h1.epoch);
	size_t jlen = RPZ_JOURNAL_HEAD, ends[4] = { 0, RPZ_JOURNAL_HEAD, 0, 0 };
	for (uint32_t s = 2; s <= 3; s++) {
		struct rpz_diff *d = rpz_diff_new();
		for (unsigned i = 0; i < 100; i++)
			random_change(z, d, rand() % 2);
		struct rpz_dump_head from = { s - 1, 0, 0, 0 }, to = { s, 60 + s, 30 + s, 0 };
		size_t len;
		uint8_t *e = rpz_diff_dump(d, &from, &to, &len);
		assert_non_null(e);
		jnl = realloc(jnl, jlen + len);
		memcpy(jnl + jlen, e, len);
		jlen += len;
		ends[s] = jlen;
		free(e);
		rpz_diff_free(d);
		at[s] = rpz_zone_copy(z);
	}
	/* cut anywhere: the entries whole before the cut apply, none half */
	for (size_t cut = RPZ_JOURNAL_HEAD; cut <= jlen; cut++) {
		struct rpz_zone *r = rpz_zone_new(&apex);
		struct rpz_dump_head h;
		const char *why = NULL;
		assert_int_equal(rpz_zone_undump(r, copy, clen, &h, &why), 0);
		size_t good;
		unsigned entries;
		int rc = rpz_journal_replay(r, jnl, cut, &h, &good, &entries, &why);
		uint32_t want = cut >= ends[3] ? 3 : cut >= ends[2] ? 2 : 1;
		assert_int_equal(rc, cut == ends[want] ? 0 : 1);
		assert_int_equal(h.serial, want);
		assert_int_equal(good, ends[want]);
		assert_int_equal(entries, want - 1);
		if (want > 1)
			assert_int_equal(h.refresh, 60 + want);
		if (cut == ends[want] || cut == ends[want] + 1 || cut + 1 == jlen)
			assert_same_records(r, at[want]);
		rpz_zone_free(r);
	}
	/* a flipped byte in the second entry: the first applies, the second does not */
	jnl[ends[2] + 30] ^= 1;
	struct rpz_zone *r = rpz_zone_new(&apex);
	struct rpz_dump_head h;
	const char *why = NULL;
	size_t good;
	unsigned entries;
	assert_int_equal(rpz_zone_undump(r, copy, clen, &h, &why), 0);
	assert_int_equal(rpz_journal_replay(r, jnl, jlen, &h, &good, &entries, &why), 1);
	assert_int_equal(h.serial, 2);
	assert_string_equal(why, "checksum mismatch (torn or damaged)");
	assert_same_records(r, at[2]);
	/* another copy's journal */
	assert_int_equal(rpz_zone_undump(r, copy, clen, &h, &why), 0);
	h.epoch++;
	assert_int_equal(rpz_journal_replay(r, jnl, jlen, &h, &good, &entries, &why), -1);
	assert_same_records(r, at[1]);
	rpz_zone_free(r);
	for (unsigned i = 1; i <= 3; i++)
		rpz_zone_free(at[i]);
	free(jnl);
	free(copy);
	rpz_zone_free(z);
}

static void key_files_in_binds_format(void **state)
{
	(void)state;
	struct tsig_key k;
	char err[512];
	const char *good = "# a comment\nkey \"xfr.Key\" {\n\talgorithm hmac-sha256;\n\tsecret \"c2VjcmV0\";\n};\n";
	assert_int_equal(tsig_key_parse(good, strlen(good), "k", &k, err, sizeof(err)), 0);
	struct name want = nm("xfr.key");
	assert_true(name_equal(&k.name, &want));
	assert_int_equal(k.secret_len, 6);
	assert_memory_equal(k.secret, "secret", 6);
	static const struct { const char *text, *error; } bad[] = {
		{ "key \"k\" { algorithm hmac-md5; secret \"c2VjcmV0\"; };", "k:1: algorithm hmac-md5" },
		{ "key \"k\" { algorithm hmac-sha256; secret \"!!\"; };", "k:1: secret: not base64" },
		{ "key \"k\" { algorithm hmac-sha256; };", "needs an algorithm and a secret" },
		{ "", "k: no key" },
		{ "key \"k\" { algorithm hmac-sha256; secret \"c2VjcmV0\"; };\nkey \"l\" { };", "k:2: one key a file" },
		{ "server 1.2.3.4 { };", "k:1:" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(tsig_key_parse(bad[i].text, strlen(bad[i].text), "k", &k, err, sizeof(err)), -1);
		if (!strstr(err, bad[i].error))
			fail_msg("%s: %s", bad[i].text, err);
	}
}

/* A signed request verifies as the first message of a stream signed the same way (the MAC chain). */
static void a_reply_with_another_mac_is_refused(void **state)
{
	(void)state;
	struct tsig_key k = { .secret = "0123456789abcdef", .secret_len = 16 };
	k.name = nm("xfr.key");
	uint8_t q[512] = { 0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 3, 'r', 'p', 'z', 0, 0, 252, 0, 1 };
	uint8_t mac[TSIG_MAC_LEN];
	size_t len = tsig_sign(&k, q, 21, sizeof(q), 1000000, mac);
	assert_true(len > 21);
	assert_int_equal(q[11], 1);                     /* counted */
	/* a reply signed as a request is not one: the MAC covers the request's MAC first */
	struct tsig_stream s;
	tsig_stream_init(&s, &k, mac);
	size_t body;
	const char *why;
	assert_int_equal(tsig_stream_verify(&s, q, len, 1000000, &body, &why), -1);
	assert_string_equal(why, "the MAC does not verify (BADSIG)");
	/* an unsigned first message */
	tsig_stream_init(&s, &k, mac);
	q[11] = 0;
	assert_int_equal(tsig_stream_verify(&s, q, 21, 1000000, &body, &why), -1);
	q[11] = 1;
	assert_string_equal(why, "the first message is not signed");
	assert_false(tsig_stream_complete(&s));
	/* another key's name */
	struct tsig_key other = k;
	other.name = nm("other.key");
	tsig_stream_init(&s, &other, mac);
	assert_int_equal(tsig_stream_verify(&s, q, len, 1000000, &body, &why), -1);
	assert_string_equal(why, "signed with another key");
}

/* The TSIG record an error answer ends with (written uncompressed, at off). */
struct error_rr {
	struct name key, alg;
	uint64_t signed_at;
	uint16_t fudge, mac_len, error, other_len;
	const uint8_t *mac, *other;
};

static struct error_rr error_rr(const uint8_t *a, size_t len, size_t off)
{
	struct error_rr e = { 0 };
	struct wire_reader r = wire_reader_at(a, len, off);
	assert_int_equal(dns_name_read(&r, a, &e.key), NAME_OK);
	assert_int_equal(wire_u16(&r), DNS_TYPE_TSIG);
	assert_int_equal(wire_u16(&r), 255);
	assert_int_equal(wire_u32(&r), 0);
	uint16_t rdlen = wire_u16(&r);
	assert_int_equal(rdlen, wire_left(&r));
	assert_int_equal(dns_name_read(&r, a, &e.alg), NAME_OK);
	e.signed_at = (uint64_t)wire_u16(&r) << 32;
	e.signed_at |= wire_u32(&r);
	e.fudge = wire_u16(&r);
	e.mac_len = wire_u16(&r);
	e.mac = wire_take(&r, e.mac_len);
	assert_int_equal(wire_u16(&r), 0x1234);         /* the original id */
	e.error = wire_u16(&r);
	e.other_len = wire_u16(&r);
	e.other = wire_take(&r, e.other_len);
	assert_false(r.bad);
	assert_int_equal(wire_left(&r), 0);
	return e;
}

/* A NOTIFY's answer after verifying it with k at now: its length, the TSIG error record at *off. */
static size_t answer(const struct tsig_key *k, const uint8_t *q, size_t len, uint64_t now,
		     struct tsig_request *req, uint8_t *a, size_t cap, size_t *off)
{
	const char *why;
	assert_int_equal(tsig_verify_request(k, q, len, now, req, &why), -1);
	memcpy(a, q, 21);
	a[2] |= 0x80;
	a[3] = 9;                                       /* NOTAUTH */
	wire_store16(a + 10, 0);
	struct wire_writer w = wire_writer(a, cap);
	w.len = *off = 21;
	if (!tsig_write_error(&w, k, req, now))
		return 0;
	assert_int_equal(wire_load16(a + 10), 1);      /* counted */
	return wire_written(&w);
}

/* RFC 8945 5.3.2: BADKEY and BADSIG unsigned, BADTIME signed with our time; no TSIG, no error. */
static void a_refused_notify_gets_its_tsig_error(void **state)
{
	(void)state;
	struct tsig_key k = { .secret = "0123456789abcdef", .secret_len = 16 };
	k.name = nm("xfr.key");
	const uint64_t t = 1000000;
	uint8_t q[512] = { 0x12, 0x34, 0x20, 0, 0, 1, 0, 0, 0, 0, 0, 0, 3, 'r', 'p', 'z', 0, 0, 6, 0, 1 };
	uint8_t mac[TSIG_MAC_LEN], a[512];
	size_t len = tsig_sign(&k, q, 21, sizeof(q), t, mac), off, n;
	struct tsig_request req;
	const char *why;
	assert_int_equal(tsig_verify_request(&k, q, len, t + TSIG_FUDGE, &req, &why), 0);
	assert_int_equal(req.error, 0);
	assert_memory_equal(req.mac, mac, TSIG_MAC_LEN);

	/* unsigned: no error to carry */
	wire_store16(q + 10, 0);
	assert_int_equal(tsig_verify_request(&k, q, 21, t, &req, &why), -1);
	assert_string_equal(why, "not signed");
	assert_int_equal(req.error, 0);
	wire_store16(q + 10, 1);

	/* a key of another name: BADKEY, its name echoed, no MAC */
	struct tsig_key other = k;
	other.name = nm("other.key");
	n = answer(&other, q, len, t, &req, a, sizeof(a), &off);
	struct error_rr e = error_rr(a, n, off);
	assert_int_equal(e.error, TSIG_BADKEY);
	assert_true(name_equal(&e.key, &k.name));
	assert_int_equal(e.mac_len, 0);
	assert_int_equal(e.other_len, 0);
	assert_int_equal(e.signed_at, t);

	/* another algorithm (its name, same length, echoed): BADKEY */
	uint8_t *alg = memmem(q + 21, len - 21, "hmac-sha256", 11);
	alg[10] = '7';
	n = answer(&k, q, len, t, &req, a, sizeof(a), &off);
	e = error_rr(a, n, off);
	assert_int_equal(e.error, TSIG_BADKEY);
	assert_true(name_equal(&e.alg, &req.alg) && e.alg.wire[11] == '7');
	alg[10] = '6';

	/* our key's name, another secret: BADSIG, no MAC */
	other = k;
	other.secret[0] ^= 1;
	n = answer(&other, q, len, t, &req, a, sizeof(a), &off);
	e = error_rr(a, n, off);
	assert_int_equal(e.error, TSIG_BADSIG);
	assert_int_equal(e.mac_len, 0);
	assert_int_equal(e.other_len, 0);

	/* an hour off: BADTIME, at the request's time signed, our time in Other Data, signed over its MAC */
	n = answer(&k, q, len, t + 3600, &req, a, sizeof(a), &off);
	e = error_rr(a, n, off);
	assert_int_equal(e.error, TSIG_BADTIME);
	assert_int_equal(e.signed_at, t);
	assert_int_equal(e.fudge, TSIG_FUDGE);
	assert_int_equal(e.other_len, 6);
	assert_int_equal((uint64_t)wire_load16(e.other) << 32 | wire_load32(e.other + 2), t + 3600);
	assert_int_equal(e.mac_len, TSIG_MAC_LEN);
	/* the MAC as RFC 8945 4.3.1 and 4.3.3 have the requester compute it */
	uint8_t v[512], want[TSIG_MAC_LEN];
	size_t vl = 0;
	v[vl++] = 0;
	v[vl++] = TSIG_MAC_LEN;
	memcpy(v + vl, mac, TSIG_MAC_LEN);
	vl += TSIG_MAC_LEN;
	memcpy(v + vl, a, off);
	wire_store16(v + vl + 10, 0);
	vl += off;
	memcpy(v + vl, k.name.wire, k.name.len);
	vl += k.name.len;
	const uint8_t vars[] = { 0, 255, 0, 0, 0, 0 };
	memcpy(v + vl, vars, sizeof(vars));
	vl += sizeof(vars);
	memcpy(v + vl, e.alg.wire, e.alg.len);
	vl += e.alg.len;
	const uint8_t *rd = e.mac - 10;                 /* time signed, fudge, then the error and other data */
	memcpy(v + vl, rd, 8);
	vl += 8;
	memcpy(v + vl, e.mac + TSIG_MAC_LEN + 2, 2 + 2 + 6);
	vl += 10;
	crypto_auth_hmacsha256_state st;
	crypto_auth_hmacsha256_init(&st, k.secret, k.secret_len);
	crypto_auth_hmacsha256_update(&st, v, vl);
	crypto_auth_hmacsha256_final(&st, want);
	assert_memory_equal(e.mac, want, TSIG_MAC_LEN);

	/* no room: refused whole */
	assert_int_equal(answer(&k, q, len, t + 3600, &req, a, off + 20, &off), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_action_from_its_record),
		cmocka_unit_test(exact_beats_wildcards_and_the_longest_wildcard_wins),
		cmocka_unit_test(bad_records_are_left_out_and_told),
		cmocka_unit_test(ixfr_removals_find_their_records),
		cmocka_unit_test(lookups_agree_with_a_model),
		cmocka_unit_test(the_last_good_copy_reads_back_and_damage_is_refused),
		cmocka_unit_test(ixfr_diffs_give_the_table_a_rebuild_gives),
		cmocka_unit_test(a_diff_changes_precedence_as_a_rebuild_would),
		cmocka_unit_test(a_failed_transfer_is_undone),
		cmocka_unit_test(the_journal_replays_and_stops_at_a_tear),
		cmocka_unit_test(key_files_in_binds_format),
		cmocka_unit_test(a_refused_notify_gets_its_tsig_error),
		cmocka_unit_test(a_reply_with_another_mac_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
