/*
 * The transfer client; see xfrcli.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "addr.h"
#include "attest.h"
#include "dns.h"
#include "log.h"
#include "xfr.h"
#include "xfrcli.h"

/* A connection with its requests, freed together once closed: a stale callback finds it. */
struct attempt {
	uv_tcp_t tcp;                   /* first: the handle's address is the attempt's */
	uv_connect_t creq;
	uv_write_t wreq;
	struct xfrcli *c;
};

struct xfrcli {
	uv_loop_t *loop;
	struct aggstore *store;         /* an aggregate's; NULL for a zone (xfrcli_fetch_zone) */
	struct xfrcli_zone zone;
	uint8_t req_mac[TSIG_MAC_LEN];
	struct tsig_stream ts;
	struct sockaddr_storage server;
	struct sockaddr_storage local;  /* family 0: the kernel's choice */
	char server_text[INET6_ADDRSTRLEN + 8];
	char agg[NAME_MAX_TEXT];
	const char *what;               /* "aggregate" or "zone", for the log */
	struct xfrcli_limits lim;
	uint64_t deadline;              /* uv_now when time_ms runs out; 0: none */
	bool has_want;                  /* a version asked for (xfrcli_want) */
	uint32_t want;
	bool check_digest;              /* and its members' digest */
	uint8_t digest[ATTEST_DIGEST_LEN];
	xfrcli_done_fn done;
	void *ctx;

	/* one attempt: a connection, a query, the reply read */
	struct attempt *cur;
	uv_timer_t timer;
	uint8_t query[1024];            /* the question, an IXFR's SOA and a TSIG, names at their longest */
	uint8_t rbuf[65536];
	uint16_t qtype;
	struct xfr_in in;
	bool in_ready;

	/* what the reply builds: a full set, or the current diff (applied to set when building) */
	struct nameset set;
	struct namelist dels, adds;
	bool building;                  /* diffs applied to a copy of the set held, stored at the end */
	unsigned diffs;                 /* ...how many */
	bool not_applied;               /* a diff did not apply to the store */
	bool store_failed;
	bool over_names;                /* a diff would take the set over max_names */
	enum xfrcli_cut refused;        /* VERSION or DIGEST: the version is not the one offered */
	char store_err[300];

	char fallback[300];             /* why this attempt is an AXFR after an IXFR */
	struct xfrcli_result res;
	uint64_t t0;
	bool finished;
	bool cancelled;
};

static int cb_begin(void *ctx, bool full)
{
	struct xfrcli *c = ctx;
	/* the first SOA is the version the reply ends at: not the one offered, nothing is taken */
	if (c->has_want && c->in.new_serial != c->want) {
		c->refused = XFRCLI_CUT_VERSION;
		snprintf(c->store_err, sizeof(c->store_err), "version %u is not the version offered (%u)",
			 c->in.new_serial, c->want);
		return -1;
	}
	if (full) {
		nameset_clear(&c->set);
	} else if (c->building) {
		c->diffs++;
	} else if (c->check_digest) {
		if (nameset_copy(&c->set, aggstore_members(c->store)) < 0) {
			c->store_failed = true;
			snprintf(c->store_err, sizeof(c->store_err), "out of memory");
			return -1;
		}
		c->building = true;
		c->diffs = 1;
	}
	namelist_clear(&c->dels);
	namelist_clear(&c->adds);
	return 0;
}

#define FULL_BATCH      (256 * 1024)    /* bytes of names gathered before they go into the set */

/* A whole set's names go in by the list: the set's slots fetched ahead (nameset_add_list). */
static int full_flush(struct xfrcli *c)
{
	int rc = nameset_add_list(&c->set, c->adds.buf, c->adds.len);       /* a repeat is one member */
	namelist_clear(&c->adds);
	return rc < 0 ? -1 : 0;
}

static int cb_name(void *ctx, bool add, const uint8_t *w, uint8_t l)
{
	struct xfrcli *c = ctx;
	if (c->in.form == XFR_IN_FULL) {
		if (namelist_add(&c->adds, w, l) < 0)
			return -1;
		return c->adds.len >= FULL_BATCH ? full_flush(c) : 0;
	}
	return namelist_add(add ? &c->adds : &c->dels, w, l);
}

/* A diff applied to the set being built: each removed member present, each added one absent. */
static int build_diff(struct xfrcli *c, uint32_t from, uint32_t to)
{
	size_t pos = 0;
	const uint8_t *w;
	uint8_t l;
	int rc = 1;
	while (rc == 1 && namelist_walk(c->dels.buf, c->dels.len, &pos, &w, &l))
		rc = nameset_remove(&c->set, w, l);
	pos = 0;
	while (rc == 1 && namelist_walk(c->adds.buf, c->adds.len, &pos, &w, &l))
		rc = nameset_add(&c->set, w, l);
	if (rc < 0) {
		c->store_failed = true;
		snprintf(c->store_err, sizeof(c->store_err), "out of memory");
		return -1;
	}
	if (rc == 0) {
		c->not_applied = true;
		snprintf(c->store_err, sizeof(c->store_err), "diff %u -> %u does not apply", from, to);
		return -1;
	}
	return 0;
}

static int cb_end(void *ctx, bool full, uint32_t from, uint32_t to)
{
	struct xfrcli *c = ctx;
	if (full && full_flush(c) < 0)
		return -1;
	if (!full && c->building) {
		if (build_diff(c, from, to) < 0)
			return -1;
		if (c->lim.max_names && c->set.count > c->lim.max_names) {
			c->over_names = true;
			snprintf(c->store_err, sizeof(c->store_err), "diff %u -> %u would leave more than %llu names",
				 from, to, (unsigned long long)c->lim.max_names);
			return -1;
		}
		if (to != c->in.new_serial)
			return 0;       /* stored with the last diff, once the whole set is known */
	}
	/* the reader caps the names a reply carries; this, the set a diff leaves */
	uint64_t held = aggstore_members(c->store)->count;
	if (!full && !c->building && c->lim.max_names &&
	    held + c->adds.count > c->lim.max_names + c->dels.count) {
		c->over_names = true;
		snprintf(c->store_err, sizeof(c->store_err), "diff %u -> %u would leave more than %llu names",
			 from, to, (unsigned long long)c->lim.max_names);
		return -1;
	}
	if (c->check_digest) {
		uint8_t d[ATTEST_DIGEST_LEN];
		if (attest_member_digest(&c->set, d) < 0) {
			c->store_failed = true;
			snprintf(c->store_err, sizeof(c->store_err), "out of memory");
			return -1;
		}
		if (memcmp(d, c->digest, sizeof(d)) != 0) {
			c->refused = XFRCLI_CUT_DIGEST;
			snprintf(c->store_err, sizeof(c->store_err),
				 "the members of version %u are not the ones signed (member digest mismatch)", to);
			return -1;
		}
	}
	/* built from several diffs: one version from the one held (aggstore_replace stores the
	 * difference, a walk of the set); from one, that diff, as it came */
	int rc = full || (c->building && c->diffs > 1) ? aggstore_replace(c->store, to, &c->set)
						       : aggstore_apply(c->store, from, to, &c->dels, &c->adds);
	if (rc == -ESTALE) {
		c->not_applied = true;
		snprintf(c->store_err, sizeof(c->store_err), "%s", aggstore_error(c->store));
		return -1;
	}
	if (rc < 0) {
		c->store_failed = true;
		snprintf(c->store_err, sizeof(c->store_err), "%s", aggstore_error(c->store));
		return -1;
	}
	c->res.versions++;
	return 0;
}

static const struct xfr_in_ops in_ops = { cb_begin, cb_name, cb_end, NULL };

/* A zone's records go to the caller; a diff it cannot apply sends the fetch on by AXFR. */
static int zone_rc(struct xfrcli *c, int rc)
{
	if (rc == XFRCLI_NOT_APPLIED) {
		c->not_applied = true;
		snprintf(c->store_err, sizeof(c->store_err), "a diff does not apply to the zone held");
	}
	return rc < 0 ? -1 : 0;
}

static int zcb_begin(void *ctx, bool full)
{
	struct xfrcli *c = ctx;
	return zone_rc(c, c->zone.ops->begin(c->zone.ctx, full));
}

static int zcb_end(void *ctx, bool full, uint32_t from, uint32_t to)
{
	struct xfrcli *c = ctx;
	int rc = zone_rc(c, c->zone.ops->end(c->zone.ctx, full, from, to));
	if (rc == 0)
		c->res.versions++;
	return rc;
}

static int zcb_rr(void *ctx, bool add, const uint8_t *msg, size_t len, const struct dns_rr *rr,
		  const struct name *owner)
{
	struct xfrcli *c = ctx;
	return zone_rc(c, c->zone.ops->rr(c->zone.ctx, add, msg, len, rr, owner));
}

static const struct xfr_in_ops zone_ops = { zcb_begin, NULL, zcb_end, zcb_rr };

static const struct name *zone_name(const struct xfrcli *c)
{
	return c->store ? aggstore_name(c->store) : &c->zone.zone;
}

/* The version held: the store's, or the zone's serial the caller gave. */
static bool held_version(const struct xfrcli *c, uint32_t *v)
{
	if (c->store)
		return aggstore_version(c->store, v);
	*v = c->zone.serial;
	return c->zone.has_serial;
}

static void free_client(uv_handle_t *h)
{
	struct xfrcli *c = h->data;
	nameset_free(&c->set);
	namelist_free(&c->dels);
	namelist_free(&c->adds);
	free(c);
}

static void tcp_closed(uv_handle_t *h)
{
	free(h);        /* the attempt */
}

static void close_attempt(struct xfrcli *c)
{
	uv_timer_stop(&c->timer);
	if (c->cur) {
		uv_close((uv_handle_t *)&c->cur->tcp, tcp_closed);
		c->cur = NULL;
	}
	if (c->in_ready) {
		c->res.bytes += c->in.bytes;
		xfr_in_free(&c->in);
		c->in_ready = false;
	}
}

static void finish(struct xfrcli *c, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void finish(struct xfrcli *c, int status, const char *fmt, ...)
{
	if (c->finished)
		return;
	close_attempt(c);
	c->finished = true;
	c->res.status = status;
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->res.why, sizeof(c->res.why), fmt, ap);
		va_end(ap);
	}
	uint32_t v = 0;
	bool has;
	if (c->store) {
		has = aggstore_version(c->store, &v);
		c->res.to = v;
	} else {
		has = status == 0 || c->res.had_version;
		v = status == 0 ? c->res.to : c->res.from;
		c->res.to = v;
	}
	c->res.seconds = (double)(uv_hrtime() - c->t0) / 1e9;
	char held[32] = "none", now[32] = "none";
	if (c->res.had_version)
		snprintf(held, sizeof(held), "%u", c->res.from);
	if (has)
		snprintf(now, sizeof(now), "%u", v);
	if (status == 0)
		log_info("%s %s from %s: %s, version %s -> %u (%u versions stored), %llu bytes in %.3f s",
			 c->what, c->agg, c->server_text, c->res.kind, held, v, c->res.versions,
			 (unsigned long long)c->res.bytes, c->res.seconds);
	else
		log_warn("%s %s from %s: %s failed after %llu bytes in %.3f s: %s; holding version %s",
			 c->what, c->agg, c->server_text, c->res.kind, (unsigned long long)c->res.bytes, c->res.seconds,
			 c->res.why, now);
	if (c->store && has && status != 0 && c->res.versions)
		log_info("aggregate %s: now at version %u", c->agg, v);
	if (!c->cancelled && c->done)
		c->done(c->ctx, &c->res);
	uv_close((uv_handle_t *)&c->timer, free_client);
}

static void start_attempt(struct xfrcli *c, uint16_t qtype);

static void on_timeout(uv_timer_t *t)
{
	struct xfrcli *c = t->data;
	if (c->deadline && uv_now(c->loop) >= c->deadline) {
		c->res.cut = XFRCLI_CUT_TIME;
		finish(c, -1, "over the time limit: not done in %u ms", c->lim.time_ms);
		return;
	}
	c->res.cut = XFRCLI_CUT_IDLE;
	finish(c, -1, "no data for %u ms", c->lim.idle_ms);
}

/* The idle timer again, or the time limit if it comes first: one timer for both. */
static void progress(struct xfrcli *c)
{
	uint64_t ms = c->lim.idle_ms;
	if (c->deadline) {
		uint64_t now = uv_now(c->loop);
		uint64_t left = c->deadline > now ? c->deadline - now : 0;
		if (left < ms)
			ms = left;
	}
	uv_timer_start(&c->timer, on_timeout, ms, 0);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct xfrcli *c = ((struct attempt *)h)->c;
	*buf = uv_buf_init((char *)c->rbuf, sizeof(c->rbuf));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	struct attempt *a = (struct attempt *)s;
	struct xfrcli *c = a->c;
	if (a != c->cur || nread == 0)
		return;
	if (nread < 0) {
		finish(c, -1, "%s before the transfer ended",
		       nread == UV_EOF ? "connection closed" : uv_strerror((int)nread));
		return;
	}
	progress(c);
	int rc = xfr_in_feed(&c->in, c->rbuf, (size_t)nread);
	if (rc == XFR_IN_MORE)
		return;
	if (rc == XFR_IN_DONE && c->in.form == XFR_IN_CURRENT && c->has_want && c->in.new_serial != c->want) {
		c->refused = XFRCLI_CUT_VERSION;
		snprintf(c->store_err, sizeof(c->store_err), "version %u is not the version offered (%u)",
			 c->in.new_serial, c->want);
		rc = XFR_IN_ERROR;
	}
	if (rc == XFR_IN_DONE) {
		if (!c->store) {
			c->res.to = c->in.new_serial;
			c->res.refresh = c->in.soa_refresh;
			c->res.retry = c->in.soa_retry;
		}
		if (c->in.form == XFR_IN_CURRENT)
			snprintf(c->res.kind, sizeof(c->res.kind), "IXFR: current");
		else if (c->qtype == DNS_TYPE_IXFR && c->in.form == XFR_IN_FULL)
			snprintf(c->res.kind, sizeof(c->res.kind), "IXFR answered as AXFR");
		finish(c, 0, NULL);
		return;
	}
	if (c->refused) {
		c->res.cut = c->refused;
		finish(c, -1, "%s; refused", c->store_err);
		return;
	}
	if (c->in.tsig_failed) {
		c->res.cut = XFRCLI_CUT_TSIG;
		finish(c, -1, "%s; refused", c->in.err);
		return;
	}
	if (c->in.over != XFR_IN_UNDER || c->over_names) {
		c->res.cut = c->in.over == XFR_IN_OVER_BYTES ? XFRCLI_CUT_BYTES : XFRCLI_CUT_NAMES;
		finish(c, -1, "over the cap: %s; refused", c->over_names ? c->store_err : c->in.err);
		return;
	}
	if (c->qtype == DNS_TYPE_IXFR && (c->not_applied || c->in.gap)) {
		snprintf(c->fallback, sizeof(c->fallback), "%s", c->not_applied ? c->store_err : c->in.err);
		close_attempt(c);
		start_attempt(c, DNS_TYPE_AXFR);
		return;
	}
	finish(c, -1, "%s", c->store_failed ? c->store_err : c->in.err);
}

static void on_write(uv_write_t *req, int status)
{
	struct attempt *a = req->data;
	struct xfrcli *c = a->c;
	if (a != c->cur || status == UV_ECANCELED)
		return;
	if (status < 0)
		finish(c, -1, "sending the query: %s", uv_strerror(status));
}

static void on_connect(uv_connect_t *req, int status)
{
	struct attempt *a = req->data;
	struct xfrcli *c = a->c;
	if (a != c->cur || status == UV_ECANCELED)
		return;
	if (status < 0) {
		finish(c, -1, "connect: %s", uv_strerror(status));
		return;
	}
	progress(c);
	uint32_t held = 0;
	held_version(c, &held);
	uint16_t id;
	randombytes_buf(&id, sizeof(id));
	size_t len = xfr_query_write(id, zone_name(c), c->qtype, held, c->query + 2, sizeof(c->query) - 2);
	if (len && c->zone.key)
		len = tsig_sign(c->zone.key, c->query + 2, len, sizeof(c->query) - 2, (uint64_t)time(NULL),
				c->req_mac);
	if (len == 0) {
		finish(c, -1, "the query does not fit");
		return;
	}
	c->query[0] = (uint8_t)(len >> 8);
	c->query[1] = (uint8_t)len;
	if (xfr_in_init(&c->in, id, zone_name(c), c->qtype, held, c->store ? &in_ops : &zone_ops, c) < 0) {
		finish(c, -1, "out of memory");
		return;
	}
	c->in_ready = true;
	if (c->zone.key) {
		tsig_stream_init(&c->ts, c->zone.key, c->req_mac);
		xfr_in_tsig(&c->in, &c->ts);
	}
	/* the byte cap spans the fetch: an AXFR after an IXFR gets what the IXFR left */
	uint64_t max_bytes = c->lim.max_bytes;
	if (max_bytes)
		max_bytes = c->res.bytes < max_bytes ? max_bytes - c->res.bytes : 1;
	xfr_in_limit(&c->in, c->lim.max_names, max_bytes);
	uv_buf_t b = uv_buf_init((char *)c->query, (unsigned)(len + 2));
	a->wreq.data = a;
	int rc = uv_write(&a->wreq, (uv_stream_t *)&a->tcp, &b, 1, on_write);
	if (rc == 0)
		rc = uv_read_start((uv_stream_t *)&a->tcp, on_alloc, on_read);
	if (rc < 0)
		finish(c, -1, "%s", uv_strerror(rc));
}

static void start_attempt(struct xfrcli *c, uint16_t qtype)
{
	c->qtype = qtype;
	c->not_applied = c->store_failed = c->over_names = c->building = false;
	if (qtype == DNS_TYPE_IXFR)
		snprintf(c->res.kind, sizeof(c->res.kind), "IXFR");
	else if (c->fallback[0])
		snprintf(c->res.kind, sizeof(c->res.kind), "AXFR (fallback: %s)", c->fallback);
	else
		snprintf(c->res.kind, sizeof(c->res.kind), "AXFR");
	struct attempt *a = calloc(1, sizeof(*a));
	if (!a) {
		finish(c, -1, "out of memory");
		return;
	}
	a->c = c;
	uv_tcp_init(c->loop, &a->tcp);
	c->cur = a;
	a->creq.data = a;
	progress(c);
	int rc = c->local.ss_family ? uv_tcp_bind(&a->tcp, (struct sockaddr *)&c->local, 0) : 0;
	if (rc < 0) {
		finish(c, -1, "bind to the transfer source: %s", uv_strerror(rc));
		return;
	}
	rc = uv_tcp_connect(&a->creq, &a->tcp, (struct sockaddr *)&c->server, on_connect);
	if (rc < 0)
		finish(c, -1, "connect: %s", uv_strerror(rc));
}

static struct xfrcli *client_new(uv_loop_t *loop, struct aggstore *store, const struct xfrcli_zone *z,
				 const struct sockaddr *server, const struct sockaddr *local,
				 const struct xfrcli_limits *lim, xfrcli_done_fn done, void *ctx)
{
	struct xfrcli *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->loop = loop;
	c->store = store;
	if (z)
		c->zone = *z;
	c->what = store ? "aggregate" : "zone";
	c->lim = *lim;
	if (!c->lim.idle_ms)
		c->lim.idle_ms = 10000;
	c->done = done;
	c->ctx = ctx;
	nameset_init(&c->set);
	namelist_init(&c->dels);
	namelist_init(&c->adds);
	size_t slen = server->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	memcpy(&c->server, server, slen);
	if (local && local->sa_family == server->sa_family)
		memcpy(&c->local, local, slen);
	sockaddr_format_port(server, c->server_text, sizeof(c->server_text));
	name_to_text(zone_name(c), c->agg, sizeof(c->agg));
	uv_timer_init(loop, &c->timer);
	c->timer.data = c;
	c->t0 = uv_hrtime();
	if (c->lim.time_ms)
		c->deadline = uv_now(loop) + c->lim.time_ms;
	c->res.had_version = held_version(c, &c->res.from);
	return c;
}

int xfrcli_fetch_zone(struct xfrcli **out, uv_loop_t *loop, const struct xfrcli_zone *z,
		      const struct sockaddr *server, const struct sockaddr *local, const struct xfrcli_limits *lim,
		      xfrcli_done_fn done, void *ctx)
{
	struct xfrcli *c = client_new(loop, NULL, z, server, local, lim, done, ctx);
	if (!c)
		return -1;
	*out = c;
	start_attempt(c, z->has_serial ? DNS_TYPE_IXFR : DNS_TYPE_AXFR);
	return 0;
}

int xfrcli_fetch(struct xfrcli **out, uv_loop_t *loop, struct aggstore *store, const struct sockaddr *server,
		 const struct sockaddr *local, const struct xfrcli_limits *lim, const struct xfrcli_want *want,
		 xfrcli_done_fn done, void *ctx)
{
	struct xfrcli *c = client_new(loop, store, NULL, server, local, lim, done, ctx);
	if (!c)
		return -1;
	bool whole = !c->res.had_version;
	if (want) {
		c->has_want = true;
		c->want = want->version;
		if ((c->check_digest = want->digest != NULL))
			memcpy(c->digest, want->digest, ATTEST_DIGEST_LEN);
		whole |= want->whole;
	}
	*out = c;
	start_attempt(c, whole ? DNS_TYPE_AXFR : DNS_TYPE_IXFR);
	return 0;
}

void xfrcli_cancel(struct xfrcli *c)
{
	if (c->finished)
		return;
	c->cancelled = true;
	finish(c, -1, "cancelled");
}
