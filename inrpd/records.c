/*
 * Records an operator configures for a content (`record TYPE "RDATA";` in
 * a route block): what the router next to the servers answers for the
 * types other than A and AAAA, say an HTTPS or TXT record (docs/INRP.md,
 * "Routed names are ours").  They hold for every name the route covers,
 * as its addresses do.
 *
 * The presentation format is read by ldns once, at config load; the table
 * keeps wire RDATA sorted by route name, and a lookup is a binary search.
 * ldns (and the OpenSSL it brings, 2 MiB resident) is loaded with dlopen
 * by the first `record`: a router without records never maps it.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ldns/ldns.h>

#include "dns.h"
#include "records.h"
#include "vec.h"

struct inrpd_record {
	struct name owner;              /* the route's name */
	uint16_t type;
	uint16_t rdlen;
	unsigned seq;                   /* config order among equal owners */
	uint8_t *rdata;
};

struct inrpd_records {
	unsigned n;
	size_t cap;
	struct inrpd_record *r;
};

/* Types a content route cannot carry: the route makes them, or they are not data. */
static bool type_allowed(uint16_t t)
{
	switch (t) {
	case DNS_TYPE_A: case DNS_TYPE_AAAA: case DNS_TYPE_CNAME: case DNS_TYPE_SOA:
	case DNS_TYPE_NS: case DNS_TYPE_OPT: case 39 /* DNAME */: case DNS_TYPE_SIG:
	case 46 /* RRSIG */: case 0:
		return false;
	default:
		return t < 128 || t > 255;      /* 128-255: meta types (RFC 6895) */
	}
}

#define LDNS_SONAME "libldns.so.3"     /* Debian 12's libldns3 */

static struct {
	void *handle;
	ldns_status (*rr_new_frm_str)(ldns_rr **, const char *, uint32_t, const ldns_rdf *, ldns_rdf **);
	const char *(*errorstr)(ldns_status);
	ldns_rr_type (*rr_get_type)(const ldns_rr *);
	ldns_status (*rr2wire)(uint8_t **, const ldns_rr *, int, size_t *);
	void (*rr_free)(ldns_rr *);
} ld;

/* Loads ldns once, for the life of the process (reloads use it again). */
static int ldns_load(char *err, size_t err_len)
{
	if (ld.handle)
		return 0;
	void *h = dlopen(LDNS_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(err, err_len, "record needs %s: %s", LDNS_SONAME, dlerror());
		return -1;
	}
	*(void **)&ld.rr_new_frm_str = dlsym(h, "ldns_rr_new_frm_str");
	*(void **)&ld.errorstr = dlsym(h, "ldns_get_errorstr_by_id");
	*(void **)&ld.rr_get_type = dlsym(h, "ldns_rr_get_type");
	*(void **)&ld.rr2wire = dlsym(h, "ldns_rr2wire");
	*(void **)&ld.rr_free = dlsym(h, "ldns_rr_free");
	if (!ld.rr_new_frm_str || !ld.errorstr || !ld.rr_get_type || !ld.rr2wire || !ld.rr_free) {
		snprintf(err, err_len, "record: %s lacks a function inrpd uses", LDNS_SONAME);
		dlclose(h);
		return -1;
	}
	ld.handle = h;
	return 0;
}

struct inrpd_records *inrpd_records_new(void)
{
	return calloc(1, sizeof(struct inrpd_records));
}

int inrpd_records_add(struct inrpd_records *rs, const struct name *owner, const char *type,
		      const char *rdata, char *err, size_t err_len)
{
	char owner_text[NAME_MAX_TEXT];
	err[0] = 0;
	if (name_to_text(owner, owner_text, sizeof(owner_text)) < 0) {
		snprintf(err, err_len, "route name too long");
		return -1;
	}
	if (ldns_load(err, err_len) < 0)
		return -1;
	size_t tlen = strlen(owner_text) + strlen(type) + strlen(rdata) + 16;
	char *text = malloc(tlen);
	if (!text) {
		snprintf(err, err_len, "out of memory");
		return -1;
	}
	/* the route's name, made absolute; the TTL is answer-ttl's, given at answer time */
	snprintf(text, tlen, "%s%s 0 IN %s %s", owner_text,
		 owner_text[strlen(owner_text) - 1] == '.' ? "" : ".", type, rdata);
	ldns_rr *rr = NULL;
	ldns_status st = ld.rr_new_frm_str(&rr, text, 0, NULL, NULL);
	free(text);
	if (st != LDNS_STATUS_OK) {
		snprintf(err, err_len, "record %s \"%s\": %s", type, rdata, ld.errorstr(st));
		return -1;
	}
	uint16_t t = (uint16_t)ld.rr_get_type(rr);
	if (!type_allowed(t)) {
		ld.rr_free(rr);
		snprintf(err, err_len, "record type %s cannot be configured: %s", type,
			 t == DNS_TYPE_A || t == DNS_TYPE_AAAA ? "addresses come from the servers"
							       : "the route makes it, or it is not data");
		return -1;
	}
	/* the whole record in wire form: owner (uncompressed), type, class, TTL, RDLENGTH, RDATA */
	uint8_t *wire = NULL;
	size_t wlen = 0;
	st = ld.rr2wire(&wire, rr, LDNS_SECTION_ANSWER, &wlen);
	ld.rr_free(rr);
	if (st != LDNS_STATUS_OK || wlen < owner->len + 10u) {
		free(wire);
		snprintf(err, err_len, "record %s \"%s\": cannot encode", type, rdata);
		return -1;
	}
	const uint8_t *rd = wire + owner->len + 10;
	size_t len = wlen - owner->len - 10;
	if (VEC_RESERVE(rs->r, rs->cap, rs->n + 1) < 0)
		goto nomem;
	struct inrpd_record *r = &rs->r[rs->n];
	r->rdata = malloc(len ? len : 1);
	if (!r->rdata)
		goto nomem;
	memcpy(r->rdata, rd, len);
	free(wire);
	r->owner = *owner;
	r->type = t;
	r->rdlen = (uint16_t)len;
	r->seq = rs->n++;
	return 0;
nomem:
	free(wire);
	snprintf(err, err_len, "out of memory");
	return -1;
}

static int record_cmp(const void *a, const void *b)
{
	const struct inrpd_record *x = a, *y = b;
	int c = name_compare(&x->owner, &y->owner);
	if (c)
		return c;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void inrpd_records_finish(struct inrpd_records *rs)
{
	if (rs->n > 1)
		qsort(rs->r, rs->n, sizeof(*rs->r), record_cmp);
}

unsigned inrpd_records_count(const struct inrpd_records *rs)
{
	return rs ? rs->n : 0;
}

void inrpd_records_free(struct inrpd_records *rs)
{
	if (!rs)
		return;
	for (unsigned i = 0; i < rs->n; i++)
		free(rs->r[i].rdata);
	free(rs->r);
	free(rs);
}

unsigned inrpd_records_answer(const struct inrpd_records *rs, const struct name *owner,
			      uint16_t qtype, struct dns_builder *b, uint32_t ttl)
{
	if (!rs || rs->n == 0)
		return 0;
	unsigned lo = 0, hi = rs->n;
	while (lo < hi) {                       /* the first record of owner, if any */
		unsigned mid = lo + (hi - lo) / 2;
		if (name_compare(&rs->r[mid].owner, owner) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	unsigned added = 0;
	for (unsigned i = lo; i < rs->n && name_equal(&rs->r[i].owner, owner); i++) {
		const struct inrpd_record *r = &rs->r[i];
		if (qtype != DNS_TYPE_ANY && r->type != qtype)
			continue;
		if (!dns_response_add_rr(b, r->type, r->rdata, r->rdlen, ttl))
			break;                  /* truncated */
		added++;
	}
	return added;
}
