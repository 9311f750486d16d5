/*
 * The trust-anchor file: see trust.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "name.h"
#include "readfile.h"
#include "trust.h"
#include "vec.h"

#define SIG_KEYWORD     "signature"
#define TRUST_FILE_MAX  (64u << 20)

struct parser {
	const char *file;
	unsigned line;
	char *err;
	size_t errlen;
	size_t cap_routers, cap_origins;
};

static int fail(struct parser *p, const char *fmt, ...)
{
	int n = snprintf(p->err, p->errlen, "%s:%u: ", p->file, p->line);
	if (n < 0 || (size_t)n >= p->errlen)
		return -1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

static int wire_cmp(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
	int c = memcmp(a, b, al < bl ? al : bl);
	return c ? c : (al > bl) - (al < bl);
}

static int router_cmp(const void *a, const void *b)
{
	return strcmp(((const struct trust_router *)a)->name, ((const struct trust_router *)b)->name);
}

static int router_key_cmp(const void *a, const void *b)
{
	return memcmp(((const struct trust_router *)a)->pk, ((const struct trust_router *)b)->pk, SIGKEY_PUBLIC_LEN);
}

static int origin_cmp(const void *a, const void *b)
{
	const struct trust_origin *x = a, *y = b;
	int c = wire_cmp(x->wire, x->len, y->wire, y->len);
	return c ? c : memcmp(x->pk, y->pk, SIGKEY_PUBLIC_LEN);
}

/* "YYYY-MM-DDTHH:MM:SSZ", a real UTC time. */
static int parse_time(const char *s, size_t len, uint64_t *out)
{
	char buf[21];
	struct tm tm = {0}, back;
	int y, mo, d, h, mi, se;
	char z;
	if (len != 20)
		return -1;
	memcpy(buf, s, 20);
	buf[20] = 0;
	if (sscanf(buf, "%4d-%2d-%2dT%2d:%2d:%2d%c", &y, &mo, &d, &h, &mi, &se, &z) != 7 || z != 'Z' ||
	    buf[4] != '-' || buf[7] != '-' || buf[10] != 'T' || buf[13] != ':' || buf[16] != ':')
		return -1;
	for (int i = 0; i < 20; i++)
		if (i != 4 && i != 7 && i != 10 && i != 13 && i != 16 && i != 19 && (buf[i] < '0' || buf[i] > '9'))
			return -1;
	if (y < 1970)
		return -1;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = se;
	time_t t = timegm(&tm);       /* normalises tm: compare with the fields read */
	if (t < 0 || !gmtime_r(&t, &back) || back.tm_year != y - 1900 || back.tm_mon != mo - 1 ||
	    back.tm_mday != d || back.tm_hour != h || back.tm_min != mi || back.tm_sec != se)
		return -1;
	*out = (uint64_t)t;
	return 0;
}

/* Splits a line into at most 4 words (blanks between them). */
static int words(const char *s, size_t len, const char *w[4], size_t wl[4])
{
	int n = 0;
	size_t i = 0;
	while (i < len) {
		while (i < len && (s[i] == ' ' || s[i] == '\t'))
			i++;
		if (i == len || s[i] == '#')
			break;
		if (n == 4)
			return 5;
		w[n] = s + i;
		while (i < len && s[i] != ' ' && s[i] != '\t')
			i++;
		wl[n] = (size_t)(s + i - w[n]);
		n++;
	}
	return n;
}

static bool word_is(const char *w, size_t wl, const char *kw)
{
	return wl == strlen(kw) && memcmp(w, kw, wl) == 0;
}

size_t trust_body_len(const char *buf, size_t len)
{
	/* the last line that starts with the keyword */
	size_t kl = strlen(SIG_KEYWORD);
	size_t start = 0, body = len;
	while (start < len) {
		const char *nl = memchr(buf + start, '\n', len - start);
		size_t end = nl ? (size_t)(nl - buf) + 1 : len;
		if (end - start > kl && memcmp(buf + start, SIG_KEYWORD, kl) == 0 &&
		    (buf[start + kl] == ' ' || buf[start + kl] == '\t'))
			body = start;
		start = end;
	}
	return body;
}

static int line_router(struct parser *p, struct trust *t, const char *w[4], size_t wl[4], int n)
{
	if (n != 3)
		return fail(p, "router: expected \"router NAME KEY\"");
	char name[256];
	if (wl[1] > 255)
		return fail(p, "router name longer than 255 bytes");
	memcpy(name, w[1], wl[1]);
	name[wl[1]] = 0;
	for (size_t i = 0; i < wl[1]; i++)
		if ((unsigned char)name[i] < 0x21 || (unsigned char)name[i] > 0x7e)
			return fail(p, "router name: not printable ASCII");
	struct trust_router r;
	if (sigkey_public_parse(w[2], wl[2], r.pk) != 0)
		return fail(p, "router %s: the key is not 44 characters of base64 for 32 bytes", name);
	if (VEC_RESERVE(t->routers, p->cap_routers, t->n_routers + 1) < 0)
		return fail(p, "out of memory");
	r.name = strdup(name);
	if (!r.name)
		return fail(p, "out of memory");
	t->routers[t->n_routers++] = r;
	return 0;
}

static int line_origin(struct parser *p, struct trust *t, const char *w[4], size_t wl[4], int n)
{
	if (n != 3)
		return fail(p, "origin: expected \"origin SUFFIX KEY\"");
	struct name nm;
	int rc = name_from_text(&nm, w[1], wl[1]);
	if (rc != NAME_OK)
		return fail(p, "origin: %.*s: %s", (int)wl[1], w[1], name_strerror(rc));
	struct trust_origin o = { .len = nm.len };
	memcpy(o.wire, nm.wire, nm.len);
	if (sigkey_public_parse(w[2], wl[2], o.pk) != 0)
		return fail(p, "origin: the key is not 44 characters of base64 for 32 bytes");
	if (VEC_RESERVE(t->origins, p->cap_origins, t->n_origins + 1) < 0)
		return fail(p, "out of memory");
	t->origins[t->n_origins++] = o;
	return 0;
}

void trust_free(struct trust *t)
{
	for (size_t i = 0; i < t->n_routers; i++)
		free(t->routers[i].name);
	free(t->routers);
	free(t->origins);
	memset(t, 0, sizeof(*t));
}

/* A decimal number 1..2^64-1 without leading zeros. */
static int parse_serial(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	if (len == 0 || len > 20 || s[0] == '0')
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int trust_parse(const char *buf, size_t len, const char *file, const uint8_t *anchor,
		struct trust *out, char *err, size_t errlen)
{
	struct parser p = { .file = file, .err = err, .errlen = errlen };
	struct trust t = {0};
	bool have_from = false, have_until = false, have_sig = false, have_serial = false;
	unsigned sig_line = 0;
	uint8_t sig[SIGKEY_SIG_LEN];
	size_t body = trust_body_len(buf, len);
	size_t start = 0;

	memset(out, 0, sizeof(*out));
	while (start < len) {
		const char *s = buf + start;
		const char *nl = memchr(s, '\n', len - start);
		size_t ll = nl ? (size_t)(nl - s) : len - start;
		size_t next = start + ll + (nl ? 1 : 0);
		p.line++;
		if (ll && s[ll - 1] == '\r')
			ll--;
		if (memchr(s, 0, ll)) {
			fail(&p, "NUL byte");
			goto bad;
		}
		const char *w[4];
		size_t wl[4];
		int n = words(s, ll, w, wl);
		if (n == 0) {
			if (start >= body) {
				fail(&p, "nothing may follow the signature line");
				goto bad;
			}
			start = next;
			continue;
		}
		if (start >= body) {
			/* the signature line, or what follows it */
			if (start != body || n != 2 || !word_is(w[0], wl[0], SIG_KEYWORD)) {
				fail(&p, "nothing may follow the signature line");
				goto bad;
			}
			size_t got;
			if (sodium_base642bin(sig, sizeof(sig), w[1], wl[1], NULL, &got, NULL,
					      sodium_base64_VARIANT_ORIGINAL) != 0 || got != sizeof(sig)) {
				fail(&p, "signature: not base64 for 64 bytes");
				goto bad;
			}
			have_sig = true;
			sig_line = p.line;
		} else if (word_is(w[0], wl[0], "valid-from") || word_is(w[0], wl[0], "valid-until")) {
			bool from = wl[0] == 10;
			uint64_t v;
			if (n != 2 || parse_time(w[1], wl[1], &v) != 0) {
				fail(&p, "%s: expected a UTC time as 2026-11-23T00:00:00Z", from ? "valid-from" : "valid-until");
				goto bad;
			}
			if (from ? have_from : have_until) {
				fail(&p, "%s given twice", from ? "valid-from" : "valid-until");
				goto bad;
			}
			if (from) {
				t.valid_from = v;
				have_from = true;
			} else {
				t.valid_until = v;
				have_until = true;
			}
		} else if (word_is(w[0], wl[0], "serial")) {
			if (have_serial) {
				fail(&p, "serial given twice");
				goto bad;
			}
			if (n != 2 || parse_serial(w[1], wl[1], &t.serial) != 0) {
				fail(&p, "serial: expected a number 1..18446744073709551615 without leading zeros");
				goto bad;
			}
			have_serial = true;
		} else if (word_is(w[0], wl[0], "router")) {
			if (line_router(&p, &t, w, wl, n) != 0)
				goto bad;
		} else if (word_is(w[0], wl[0], "origin")) {
			if (line_origin(&p, &t, w, wl, n) != 0)
				goto bad;
		} else {
			fail(&p, "unknown keyword %.*s", (int)(wl[0] > 40 ? 40 : wl[0]), w[0]);
			goto bad;
		}
		start = next;
	}
	p.line++;
	if (!have_from || !have_until) {
		fail(&p, "valid-from and valid-until are required");
		goto bad;
	}
	if (t.valid_until < t.valid_from) {
		fail(&p, "valid-until is before valid-from");
		goto bad;
	}
	if (t.n_routers > 1)
		qsort(t.routers, t.n_routers, sizeof(*t.routers), router_cmp);
	for (size_t i = 1; i < t.n_routers; i++)
		if (strcmp(t.routers[i - 1].name, t.routers[i].name) == 0) {
			snprintf(err, errlen, "%s: router %s listed twice", file, t.routers[i].name);
			goto bad;
		}
	/* a path names routers by key: one key, one router */
	if (t.n_routers > 1) {
		struct trust_router *byk = malloc(t.n_routers * sizeof(*byk));
		if (!byk) {
			snprintf(err, errlen, "%s: out of memory", file);
			goto bad;
		}
		memcpy(byk, t.routers, t.n_routers * sizeof(*byk));
		qsort(byk, t.n_routers, sizeof(*byk), router_key_cmp);
		for (size_t i = 1; i < t.n_routers; i++)
			if (memcmp(byk[i - 1].pk, byk[i].pk, SIGKEY_PUBLIC_LEN) == 0) {
				snprintf(err, errlen, "%s: routers %s and %s have the same key", file,
					 byk[i - 1].name, byk[i].name);
				free(byk);
				goto bad;
			}
		free(byk);
	}
	if (!have_serial) {
		fail(&p, "serial is required (larger than the serial of the file it replaces)");
		goto bad;
	}
	if (anchor) {
		if (!have_sig) {
			fail(&p, "no signature line (sign the file with nbrp-key sign-trust)");
			goto bad;
		}
		/* one buffer: tag then body, as signed */
		uint8_t *m = malloc(TRUST_TAG_LEN + body);
		if (!m) {
			fail(&p, "out of memory");
			goto bad;
		}
		memcpy(m, TRUST_TAG, TRUST_TAG_LEN);
		memcpy(m + TRUST_TAG_LEN, buf, body);
		bool ok = sigkey_verify(anchor, m, TRUST_TAG_LEN + body, sig);
		free(m);
		if (!ok) {
			p.line = sig_line;
			fail(&p, "the signature does not verify under the trust anchor key");
			goto bad;
		}
	}
	if (t.n_origins > 1)
		qsort(t.origins, t.n_origins, sizeof(*t.origins), origin_cmp);
	*out = t;
	return 0;
bad:
	trust_free(&t);
	return -1;
}

int trust_read(const char *path, const uint8_t *anchor, struct trust *out, char *err, size_t errlen)
{
	char why[128];
	size_t len;
	char *buf = readfile(path, TRUST_FILE_MAX, false, &len, why, sizeof(why));
	if (!buf) {
		snprintf(err, errlen, "%s: %s", path, why);
		return -1;
	}
	int rc = trust_parse(buf, len, path, anchor, out, err, errlen);
	free(buf);
	return rc;
}

char *trust_sign(const char *buf, size_t len, const char *file, const struct sigkey *k,
		 size_t *outlen, char *err, size_t errlen)
{
	struct trust t;
	size_t body = trust_body_len(buf, len);
	if (trust_parse(buf, body, file, NULL, &t, err, errlen) != 0)
		return NULL;
	trust_free(&t);
	/* a body without a final newline gets one, which is then signed */
	bool nl = body == 0 || buf[body - 1] == '\n';
	size_t blen = body + (nl ? 0 : 1);
	uint8_t *m = malloc(TRUST_TAG_LEN + blen);
	char *out = malloc(blen + sizeof(SIG_KEYWORD) + 2 + 88 + 1);
	if (!m || !out) {
		free(m);
		free(out);
		snprintf(err, errlen, "%s: out of memory", file);
		return NULL;
	}
	memcpy(out, buf, body);
	if (!nl)
		out[body] = '\n';
	memcpy(m, TRUST_TAG, TRUST_TAG_LEN);
	memcpy(m + TRUST_TAG_LEN, out, blen);
	uint8_t sig[SIGKEY_SIG_LEN];
	sigkey_sign(k, m, TRUST_TAG_LEN + blen, sig);
	free(m);
	char b64[89];
	sodium_bin2base64(b64, sizeof(b64), sig, sizeof(sig), sodium_base64_VARIANT_ORIGINAL);
	int n = sprintf(out + blen, SIG_KEYWORD " %s\n", b64);
	*outlen = blen + (size_t)n;
	return out;
}

bool trust_equal(const struct trust *a, const struct trust *b)
{
	if (a->serial != b->serial || a->valid_from != b->valid_from || a->valid_until != b->valid_until ||
	    a->n_routers != b->n_routers || a->n_origins != b->n_origins)
		return false;
	for (size_t i = 0; i < a->n_routers; i++)      /* both sorted */
		if (strcmp(a->routers[i].name, b->routers[i].name) != 0 ||
		    memcmp(a->routers[i].pk, b->routers[i].pk, SIGKEY_PUBLIC_LEN) != 0)
			return false;
	return a->n_origins == 0 || memcmp(a->origins, b->origins, a->n_origins * sizeof(*a->origins)) == 0;
}

bool trust_current(const struct trust *t, uint64_t now)
{
	return now >= t->valid_from && now <= t->valid_until;
}

const uint8_t *trust_router_key(const struct trust *t, const char *name, size_t len)
{
	size_t lo = 0, hi = t->n_routers;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const char *m = t->routers[mid].name;
		size_t ml = strlen(m);
		int c = memcmp(m, name, ml < len ? ml : len);
		if (c == 0)
			c = (ml > len) - (ml < len);
		if (c == 0)
			return t->routers[mid].pk;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The first origin entry for exactly this suffix, or n_origins. */
static size_t origin_first(const struct trust *t, const uint8_t *wire, size_t len)
{
	size_t lo = 0, hi = t->n_origins;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (wire_cmp(t->origins[mid].wire, t->origins[mid].len, wire, len) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < t->n_origins && wire_cmp(t->origins[lo].wire, t->origins[lo].len, wire, len) == 0)
		return lo;
	return t->n_origins;
}

/* Calls fn for each entry covering the name, longest suffix first; stops at true. */
static bool origin_walk(const struct trust *t, const uint8_t *wire, size_t len,
			bool (*fn)(const struct trust_origin *, void *), void *arg)
{
	size_t off = 0;
	while (off < len) {
		for (size_t i = origin_first(t, wire + off, len - off);
		     i < t->n_origins && wire_cmp(t->origins[i].wire, t->origins[i].len, wire + off, len - off) == 0; i++)
			if (fn(&t->origins[i], arg))
				return true;
		if (wire[off] == 0)
			break;
		off += (size_t)wire[off] + 1;
	}
	return false;
}

struct check_arg {
	const uint8_t *pk;
	bool covered;
};

static bool check_one(const struct trust_origin *o, void *arg)
{
	struct check_arg *a = arg;
	a->covered = true;
	return memcmp(o->pk, a->pk, SIGKEY_PUBLIC_LEN) == 0;
}

enum trust_origin_result trust_origin_check(const struct trust *t, const uint8_t *wire, size_t len,
					    const uint8_t pk[SIGKEY_PUBLIC_LEN])
{
	struct check_arg a = { .pk = pk };
	if (origin_walk(t, wire, len, check_one, &a))
		return TRUST_AUTHORISED;
	return a.covered ? TRUST_UNAUTHORISED : TRUST_NOT_FOUND;
}

struct keys_arg {
	const uint8_t **keys;
	size_t max, n;
};

static bool keys_one(const struct trust_origin *o, void *arg)
{
	struct keys_arg *a = arg;
	if (a->n < a->max)
		a->keys[a->n] = o->pk;
	a->n++;
	return false;
}

size_t trust_origin_keys(const struct trust *t, const uint8_t *wire, size_t len,
			 const uint8_t **keys, size_t max)
{
	struct keys_arg a = { .keys = keys, .max = max };
	origin_walk(t, wire, len, keys_one, &a);
	return a.n;
}
