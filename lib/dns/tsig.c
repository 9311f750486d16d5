/*
 * TSIG with HMAC-SHA256; see tsig.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"
#include "dns.h"
#include "dnsrr.h"
#include "tsig.h"
#include "wire.h"

#define CLASS_ANY 255

/* "hmac-sha256." in wire form, the one algorithm spoken */
static const uint8_t alg_wire[] = { 11, 'h', 'm', 'a', 'c', '-', 's', 'h', 'a', '2', '5', '6', 0 };

struct key_ctx {
	struct tsig_key *k;
	bool alg, secret;
};

static int kw_algorithm(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct key_ctx *x = arg;
	if (strcasecmp(s->argv[1], "hmac-sha256") != 0)
		return conf_error(err, err_len, s, "algorithm %s: only hmac-sha256 is supported", s->argv[1]);
	x->alg = true;
	return 0;
}

static int kw_secret(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct key_ctx *x = arg;
	size_t got = 0;
	if (sodium_base642bin(x->k->secret, sizeof(x->k->secret), s->argv[1], strlen(s->argv[1]), " \t", &got, NULL,
			      sodium_base64_VARIANT_ORIGINAL) != 0 || got == 0)
		return conf_error(err, err_len, s, "secret: not base64 of 1 to %d bytes", TSIG_SECRET_MAX);
	x->k->secret_len = got;
	x->secret = true;
	return 0;
}

static const struct conf_keyword key_keywords[] = {
	{ "algorithm", 2, 2, CONF_NO_BLOCK, kw_algorithm },
	{ "secret", 2, 2, CONF_NO_BLOCK, kw_secret },
	{ NULL, 0, 0, 0, NULL },
};

static int kw_key(const struct conf_stmt *s, void *arg, char *err, size_t err_len)
{
	struct key_ctx *x = arg;
	if (x->k->name.len)
		return conf_error(err, err_len, s, "one key a file");
	int rc = name_from_text(&x->k->name, s->argv[1], strlen(s->argv[1]));
	if (rc != NAME_OK || x->k->name.len == 1)
		return conf_error(err, err_len, s, "bad key name \"%s\"", s->argv[1]);
	if (conf_dispatch(s->block, key_keywords, x, err, err_len) < 0)
		return -1;
	if (!x->alg || !x->secret)
		return conf_error(err, err_len, s, "key \"%s\" needs an algorithm and a secret", s->argv[1]);
	return 0;
}

static const struct conf_keyword file_keywords[] = {
	{ "key", 2, 2, CONF_BLOCK, kw_key },
	{ NULL, 0, 0, 0, NULL },
};

int tsig_key_parse(const char *text, size_t len, const char *file, struct tsig_key *k, char *err, size_t err_len)
{
	memset(k, 0, sizeof(*k));
	struct conf *c = conf_parse_text(text, len, file, err, err_len);
	if (!c)
		return -1;
	struct key_ctx x = { .k = k };
	int rc = conf_dispatch(c->first, file_keywords, &x, err, err_len);
	conf_free(c);
	if (rc == 0 && k->name.len == 0) {
		snprintf(err, err_len, "%s: no key", file);
		rc = -1;
	}
	if (rc < 0)
		sodium_memzero(k, sizeof(*k));
	return rc;
}

int tsig_key_read(const char *path, struct tsig_key *k, char *err, size_t err_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, err_len, "%s: %s", path, strerror(errno));
		return -1;
	}
	struct stat st;
	char buf[4096];
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, err_len, "%s: not a regular file", path);
		close(fd);
		return -1;
	}
	if (st.st_mode & S_IROTH) {
		snprintf(err, err_len, "%s: others may read it (mode %03o): a key file must be private", path,
			 (unsigned)(st.st_mode & 0777));
		close(fd);
		return -1;
	}
	ssize_t n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0 || (size_t)n == sizeof(buf)) {
		snprintf(err, err_len, "%s: %s", path, n < 0 ? strerror(errno) : "too large for a key file");
		return -1;
	}
	int rc = tsig_key_parse(buf, (size_t)n, path, k, err, err_len);
	sodium_memzero(buf, sizeof(buf));
	return rc;
}

/* The TSIG variables after the key name (RFC 8945 4.3.3); timers_only for a later message of a stream. */
static void mac_variables(crypto_auth_hmacsha256_state *st, const struct tsig_key *k, uint64_t signed_at,
			  uint16_t fudge, uint16_t error, const uint8_t *other, uint16_t other_len, bool timers_only)
{
	uint8_t b[16];
	if (!timers_only) {
		crypto_auth_hmacsha256_update(st, k->name.wire, k->name.len);
		wire_store16(b, CLASS_ANY);
		wire_store32(b + 2, 0);                 /* TTL */
		crypto_auth_hmacsha256_update(st, b, 6);
		crypto_auth_hmacsha256_update(st, alg_wire, sizeof(alg_wire));
	}
	wire_store16(b, (uint16_t)(signed_at >> 32));
	wire_store32(b + 2, (uint32_t)signed_at);
	wire_store16(b + 6, fudge);
	if (timers_only) {
		crypto_auth_hmacsha256_update(st, b, 8);
		return;
	}
	wire_store16(b + 8, error);
	wire_store16(b + 10, other_len);
	crypto_auth_hmacsha256_update(st, b, 12);
	if (other_len)
		crypto_auth_hmacsha256_update(st, other, other_len);
}

/* A message as the MAC covers it: the original id, the additional count without the TSIG. */
static void mac_message(crypto_auth_hmacsha256_state *st, const uint8_t *msg, size_t len, uint16_t orig_id,
			uint16_t arcount)
{
	uint8_t h[DNS_HEADER_LEN];
	memcpy(h, msg, sizeof(h));
	wire_store16(h, orig_id);
	wire_store16(h + 10, arcount);
	crypto_auth_hmacsha256_update(st, h, sizeof(h));
	crypto_auth_hmacsha256_update(st, msg + DNS_HEADER_LEN, len - DNS_HEADER_LEN);
}

/* The prior MAC a reply's covers first (RFC 8945 4.3.1, 5.3). */
static void mac_prior(crypto_auth_hmacsha256_state *st, const uint8_t prior[TSIG_MAC_LEN])
{
	uint8_t l[2];
	wire_store16(l, TSIG_MAC_LEN);
	crypto_auth_hmacsha256_update(st, l, 2);
	crypto_auth_hmacsha256_update(st, prior, TSIG_MAC_LEN);
}

static size_t sign(const struct tsig_key *k, uint8_t *msg, size_t len, size_t cap, uint64_t now,
		   const uint8_t *prior, uint8_t mac[TSIG_MAC_LEN])
{
	if (len < DNS_HEADER_LEN)
		return 0;
	uint16_t id = wire_load16(msg), arcount = wire_load16(msg + 10);
	crypto_auth_hmacsha256_state st;
	crypto_auth_hmacsha256_init(&st, k->secret, k->secret_len);
	if (prior)
		mac_prior(&st, prior);
	mac_message(&st, msg, len, id, arcount);
	mac_variables(&st, k, now, TSIG_FUDGE, 0, NULL, 0, false);
	crypto_auth_hmacsha256_final(&st, mac);

	struct wire_writer w = wire_writer(msg + len, cap - len);
	wire_put(&w, k->name.wire, k->name.len);
	wire_put16(&w, DNS_TYPE_TSIG);
	wire_put16(&w, CLASS_ANY);
	wire_put32(&w, 0);
	wire_put16(&w, (uint16_t)(sizeof(alg_wire) + 16 + TSIG_MAC_LEN));
	wire_put(&w, alg_wire, sizeof(alg_wire));
	wire_put16(&w, (uint16_t)(now >> 32));
	wire_put32(&w, (uint32_t)now);
	wire_put16(&w, TSIG_FUDGE);
	wire_put16(&w, TSIG_MAC_LEN);
	wire_put(&w, mac, TSIG_MAC_LEN);
	wire_put16(&w, id);
	wire_put16(&w, 0);                      /* error */
	wire_put16(&w, 0);                      /* other len */
	if (w.bad)
		return 0;
	wire_store16(msg + 10, (uint16_t)(arcount + 1));
	return len + wire_written(&w);
}

size_t tsig_sign(const struct tsig_key *k, uint8_t *msg, size_t len, size_t cap, uint64_t now,
		 uint8_t mac[TSIG_MAC_LEN])
{
	return sign(k, msg, len, cap, now, NULL, mac);
}

size_t tsig_sign_reply(const struct tsig_key *k, uint8_t *msg, size_t len, size_t cap, uint64_t now,
		       const uint8_t req_mac[TSIG_MAC_LEN])
{
	uint8_t mac[TSIG_MAC_LEN];
	return sign(k, msg, len, cap, now, req_mac, mac);
}

void tsig_stream_init(struct tsig_stream *s, const struct tsig_key *k, const uint8_t req_mac[TSIG_MAC_LEN])
{
	memset(s, 0, sizeof(*s));
	s->key = k;
	s->first = true;
	memcpy(s->prev, req_mac, TSIG_MAC_LEN);
	crypto_auth_hmacsha256_init(&s->st, k->secret, k->secret_len);
	mac_prior(&s->st, s->prev);
}

static int fail(const char **why, const char *text)
{
	*why = text;
	return -1;
}

/* A message's TSIG record, read. */
struct tsig_rr {
	struct dns_header h;
	struct name owner, alg;
	uint64_t signed_at;
	uint16_t fudge, mac_len, orig_id, error, other_len;
	const uint8_t *mac, *other;
	size_t body;                    /* the message without it */
};

/* 0 and t when the message's last record is a TSIG, 1 when it has none, -1 (why) otherwise. */
static int read_tsig(const uint8_t *msg, size_t len, struct tsig_rr *t, const char **why)
{
	struct wire_reader r = wire_reader(msg, len);
	if (!dns_header_read(&r, &t->h))
		return fail(why, "message shorter than a header");
	for (unsigned i = 0; i < t->h.qdcount; i++) {
		dns_name_skip(&r);
		wire_take(&r, 4);
	}
	if (r.bad)
		return fail(why, "bad question");
	struct dns_rr_iter it;
	struct dns_rr rr, last = { 0 };
	int rc;
	unsigned total = (unsigned)t->h.ancount + t->h.nscount + t->h.arcount, tsigs = 0;
	dns_rr_iter_init(&it, msg, len, (size_t)(r.p - msg), t->h.ancount, t->h.nscount, t->h.arcount);
	while ((rc = dns_rr_next(&it, &rr)) == 1) {
		if (rr.type == DNS_TYPE_TSIG)
			tsigs++;
		last = rr;
	}
	if (rc < 0)
		return fail(why, "a record runs past the message");
	if (tsigs == 0)
		return 1;
	if (tsigs > 1 || last.index + 1 != total || last.section != DNS_SECTION_ADDITIONAL)
		return fail(why, "a TSIG that is not the last record");
	struct wire_reader o = wire_reader(last.owner, (size_t)(msg + len - last.owner));
	if (dns_name_read(&o, msg, &t->owner) != NAME_OK)
		return fail(why, "bad TSIG owner");
	if (last.rclass != CLASS_ANY || last.ttl != 0)
		return fail(why, "bad TSIG class or TTL");
	struct wire_reader d = wire_reader(last.rdata, last.rdlen);
	if (dns_name_read(&d, msg, &t->alg) != NAME_OK)
		return fail(why, "bad TSIG algorithm name");
	t->signed_at = (uint64_t)wire_u16(&d) << 32;
	t->signed_at |= wire_u32(&d);
	t->fudge = wire_u16(&d);
	t->mac_len = wire_u16(&d);
	t->mac = wire_take(&d, t->mac_len);
	t->orig_id = wire_u16(&d);
	t->error = wire_u16(&d);
	t->other_len = wire_u16(&d);
	t->other = wire_take(&d, t->other_len);
	if (d.bad || wire_left(&d) != 0)
		return fail(why, "bad TSIG data");
	t->body = (size_t)(last.owner - msg);
	return 0;
}

/* Whether t is of key k and its algorithm, hmac-sha256, the one spoken. */
static int of_key(const struct tsig_rr *t, const struct tsig_key *k, const char **why)
{
	if (t->alg.len != sizeof(alg_wire) || memcmp(t->alg.wire, alg_wire, sizeof(alg_wire)) != 0)
		return fail(why, "another algorithm than hmac-sha256");
	if (!name_equal(&t->owner, &k->name))
		return fail(why, "signed with another key");
	if (t->mac_len != TSIG_MAC_LEN)
		return fail(why, "a MAC that is not 32 bytes");
	return 0;
}

int tsig_stream_verify(struct tsig_stream *s, const uint8_t *msg, size_t len, uint64_t now, size_t *body_len,
		       const char **why)
{
	struct tsig_rr t;
	int rc = read_tsig(msg, len, &t, why);
	if (rc < 0)
		return -1;
	if (rc == 1) {
		/* 5.3.1: unsigned messages between signed ones, covered by the next signature */
		if (s->first)
			return fail(why, "the first message is not signed");
		if (++s->unsigned_run > TSIG_MAX_UNSIGNED)
			return fail(why, "more than 99 messages in a row without a TSIG");
		mac_message(&s->st, msg, len, t.h.id, t.h.arcount);
		return 1;
	}
	if (of_key(&t, s->key, why) < 0)
		return -1;
	if (t.error != 0)
		return fail(why, t.error == 16 ? "the server says BADSIG" : t.error == 17 ? "the server says BADKEY"
				 : t.error == 18 ? "the server says BADTIME" : "the server reports a TSIG error");
	crypto_auth_hmacsha256_state st = s->st;
	mac_message(&st, msg, t.body, t.orig_id, (uint16_t)(t.h.arcount - 1));
	mac_variables(&st, s->key, t.signed_at, t.fudge, t.error, t.other, t.other_len, !s->first);
	uint8_t want[TSIG_MAC_LEN];
	crypto_auth_hmacsha256_final(&st, want);
	if (crypto_verify_32(want, t.mac) != 0)
		return fail(why, "the MAC does not verify (BADSIG)");
	if (t.signed_at + t.fudge < now || now + t.fudge < t.signed_at)
		return fail(why, "signed outside the fudge of our clock (BADTIME)");
	/* the next signed message covers this MAC, then what follows */
	memcpy(s->prev, t.mac, TSIG_MAC_LEN);
	crypto_auth_hmacsha256_init(&s->st, s->key->secret, s->key->secret_len);
	mac_prior(&s->st, s->prev);
	s->first = false;
	s->unsigned_run = 0;
	s->verified++;
	*body_len = t.body;
	return 0;
}

int tsig_verify_request(const struct tsig_key *k, const uint8_t *msg, size_t len, uint64_t now,
			struct tsig_request *req, const char **why)
{
	struct tsig_rr t;
	memset(req, 0, sizeof(*req));
	int rc = read_tsig(msg, len, &t, why);
	if (rc != 0)
		return rc > 0 ? fail(why, "not signed") : -1;
	req->key = t.owner;
	req->alg = t.alg;
	req->signed_at = t.signed_at;
	req->orig_id = t.orig_id;
	if (of_key(&t, k, why) < 0) {
		/* 5.2.1: a key or algorithm not ours is BADKEY; our key with a MAC of another length, BADSIG */
		bool ours = name_equal(&t.owner, &k->name) && t.alg.len == sizeof(alg_wire) &&
			    memcmp(t.alg.wire, alg_wire, sizeof(alg_wire)) == 0;
		req->error = ours ? TSIG_BADSIG : TSIG_BADKEY;
		return -1;
	}
	crypto_auth_hmacsha256_state st;
	crypto_auth_hmacsha256_init(&st, k->secret, k->secret_len);
	mac_message(&st, msg, t.body, t.orig_id, (uint16_t)(t.h.arcount - 1));
	mac_variables(&st, k, t.signed_at, t.fudge, t.error, t.other, t.other_len, false);
	uint8_t want[TSIG_MAC_LEN];
	crypto_auth_hmacsha256_final(&st, want);
	if (crypto_verify_32(want, t.mac) != 0) {
		req->error = TSIG_BADSIG;
		return fail(why, "the MAC does not verify (BADSIG)");
	}
	memcpy(req->mac, t.mac, TSIG_MAC_LEN);
	if (t.signed_at + t.fudge < now || now + t.fudge < t.signed_at) {
		req->error = TSIG_BADTIME;
		return fail(why, "signed outside the fudge of our clock (BADTIME)");
	}
	return 0;
}

bool tsig_write_error(struct wire_writer *w, const struct tsig_key *k, const struct tsig_request *req,
		      uint64_t now)
{
	bool sign = req->error == TSIG_BADTIME;
	uint64_t at = sign ? req->signed_at : now;
	uint8_t other[6], mac[TSIG_MAC_LEN];
	wire_store16(other, (uint16_t)(now >> 32));
	wire_store32(other + 2, (uint32_t)now);
	uint16_t other_len = sign ? sizeof(other) : 0, mac_len = sign ? TSIG_MAC_LEN : 0;
	if (w->bad || w->len < DNS_HEADER_LEN)
		return false;
	uint16_t arcount = wire_load16(w->buf + 10);
	if (sign) {
		/* 5.3.2: signed as any answer to the request, the error and our time covered */
		crypto_auth_hmacsha256_state st;
		crypto_auth_hmacsha256_init(&st, k->secret, k->secret_len);
		mac_prior(&st, req->mac);
		mac_message(&st, w->buf, w->len, req->orig_id, arcount);        /* as the record says */
		mac_variables(&st, k, at, TSIG_FUDGE, req->error, other, other_len, false);
		crypto_auth_hmacsha256_final(&st, mac);
	}
	wire_put(w, req->key.wire, req->key.len);
	wire_put16(w, DNS_TYPE_TSIG);
	wire_put16(w, CLASS_ANY);
	wire_put32(w, 0);
	wire_put16(w, (uint16_t)(req->alg.len + 16 + mac_len + other_len));
	wire_put(w, req->alg.wire, req->alg.len);
	wire_put16(w, (uint16_t)(at >> 32));
	wire_put32(w, (uint32_t)at);
	wire_put16(w, TSIG_FUDGE);
	wire_put16(w, mac_len);
	wire_put(w, mac, mac_len);
	wire_put16(w, req->orig_id);
	wire_put16(w, req->error);
	wire_put16(w, other_len);
	wire_put(w, other, other_len);
	if (w->bad)
		return false;
	wire_store16(w->buf + 10, (uint16_t)(arcount + 1));
	return true;
}

bool tsig_stream_complete(const struct tsig_stream *s)
{
	return !s->first && s->unsigned_run == 0;
}
