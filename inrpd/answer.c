/*
 * What inrpd does with one query (docs/INRP.md, "What inrpd does"; the paper, 3.1):
 *
 *   parse error                  FORMERR / NOTIMP / BADVERS, or no answer
 *   QCLASS other than IN         REFUSED
 *   our router id in its path    SERVFAIL, INRP status "loop"
 *   redirect entry               restart with the target (DNAME-like: the
 *                                matched suffix is replaced), at most
 *                                INRPD_MAX_REDIRECTS times; the answer
 *                                carries the CNAME chain
 *   servers attached here        A/AAAA: their addresses, ranked, minus the
 *                                ones the client excludes; other types: the
 *                                route's configured records, or NODATA with
 *                                an SOA (a routed name is ours: never sent
 *                                to the upstream, whose NXDOMAIN would deny
 *                                the whole name, RFC 8020)
 *   next content routers         forwarded (forward.c) with the INRP option:
 *                                our id added to the path, hop limit less one;
 *                                every type, so the router next to the
 *                                servers answers it
 *   routes, all excluded         SERVFAIL
 *   no route, a router asking    SERVFAIL, INRP status "no route": it routed
 *                                the name to us, so one of us is behind
 *                                (routes converging); it asks again
 *   no route                     upstream resolvers, for clients in
 *                                allow-recursion; REFUSED otherwise
 *
 * Errors carry an Extended DNS Error (RFC 8914) saying why, and any answer
 * our NSID (RFC 5001) when the client asks and `nsid` is on.  Nothing here
 * logs per query: the counters say what happened.
 */
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <netinet/in.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "answer.h"
#include "fibsync.h"
#include "hashkey.h"
#include "inrpd.h"
#include "policy.h"
#include "records.h"
#include "rrl.h"
#include "wire.h"

struct cache_flush *inrpd_cache_flush;

bool inrpd_acl_allows(const struct inrpd_runtime *rt, const struct sockaddr *client)
{
	return prefix_list_contains(rt->acl, rt->nacl, client);
}

/* Why an answer is an error, as an Extended DNS Error (RFC 8914). */
enum why {
	WHY_NONE,
	WHY_LOOP,
	WHY_HOP_LIMIT,
	WHY_NO_ROUTE,
	WHY_UPSTREAMS_FAILED,
	WHY_PROHIBITED,
	WHY_NO_UPSTREAM,
	WHY_NOT_SUPPORTED,
	WHY_RPZ_BLOCKED,
	WHY_RPZ_CENSORED,
	WHY_RPZ_FILTERED,
};

static const struct {
	uint16_t code;
	const char *text;
} why_ede[] = {
	[WHY_LOOP] = { 0, "INRP loop" },                        /* Other */
	[WHY_HOP_LIMIT] = { 0, "INRP hop limit" },
	[WHY_NO_ROUTE] = { 22, "no reachable route" },          /* No Reachable Authority */
	[WHY_UPSTREAMS_FAILED] = { 22, "every upstream failed" },
	[WHY_PROHIBITED] = { 18, "recursion not allowed" },     /* Prohibited */
	[WHY_NO_UPSTREAM] = { 20, "no upstream resolver" },     /* Not Authoritative */
	[WHY_NOT_SUPPORTED] = { 21, "class not supported" },    /* Not Supported */
	[WHY_RPZ_BLOCKED] = { 15, "blocked by response policy" },
	[WHY_RPZ_CENSORED] = { 16, "censored by response policy" },
	[WHY_RPZ_FILTERED] = { 17, "filtered by response policy" },
};

#define EDE_MAX 40                      /* 2-byte code and the longest text above */

/* Our EDNS options' data, kept until the answer is finished. */
struct opt_bufs {
	uint8_t cookie[COOKIE_CLIENT_LEN + COOKIE_SERVER_LEN];
	uint8_t inrp[INRP_RESPONSE_OPT_LEN];
	uint8_t ede[EDE_MAX];
};

/* Our EDNS options: INRP for a router client when inrp is given, NSID when asked for, the error's reason. */
static __attribute__((noinline)) void add_options(struct dns_builder *b, const struct fwd_request *req,
						  struct opt_bufs *ob, const struct inrp_response_opt *inrp,
						  enum why why)
{
	if (inrp && req->client_inrp) {
		size_t n = inrp_response_opt_write(inrp, ob->inrp);
		dns_response_add_option(b, INRP_OPTION_CODE, ob->inrp, (uint16_t)n);
	}
	if (req->nsid_len)
		dns_response_add_option(b, DNS_OPT_NSID, (const uint8_t *)req->nsid, req->nsid_len);
	if (req->cookie)
		dns_response_add_option(b, DNS_OPT_COOKIE, req->cookie_out, sizeof(req->cookie_out));
	if (why == WHY_NONE && req->policy_ede)        /* the answer to a policy's rewrite */
		why = req->policy_ede == 15 ? WHY_RPZ_BLOCKED : req->policy_ede == 16 ? WHY_RPZ_CENSORED
										: WHY_RPZ_FILTERED;
	if (why != WHY_NONE) {
		size_t n = strlen(why_ede[why].text);
		ob->ede[0] = (uint8_t)(why_ede[why].code >> 8);
		ob->ede[1] = (uint8_t)why_ede[why].code;
		memcpy(ob->ede + 2, why_ede[why].text, n);
		dns_response_add_option(b, DNS_OPT_EDE, ob->ede, (uint16_t)(2 + n));
	}
}

/*
 * Starts an answer: header, question, then our EDNS options (add_options).
 * Records come after.  Inlined: only a query with EDNS gets options, and
 * most answers have none to give.
 */
static inline void start(struct dns_builder *b, const struct fwd_request *req, unsigned rcode,
			 uint8_t *out, size_t limit, struct opt_bufs *ob,
			 const struct inrp_response_opt *inrp, enum why why)
{
	dns_response_init(b, &req->q, rcode, out, limit);
	if (req->q.has_edns && ((inrp && req->client_inrp) || req->nsid_len || req->cookie || why != WHY_NONE ||
				req->policy_ede))
		add_options(b, req, ob, inrp, why);
}

/* Length of the uncompressed wire name at p (the chain holds only names we built). */
static size_t wire_name_len(const uint8_t *p, size_t room)
{
	size_t n = 0;
	while (n < room && p[n] != 0)
		n += 1u + p[n];
	return n < room ? n + 1 : 0;
}

/* The CNAMEs of the redirects followed (none for most answers: the test is inlined). */
static void add_chain_names(struct dns_builder *b, const struct fwd_request *req)
{
	size_t off = 0;
	for (unsigned i = 0; i < req->nchain; i++) {
		struct name n;
		size_t len = wire_name_len(req->chain + off, req->chain_len - off);
		if (len == 0 || name_from_wire(&n, req->chain + off, len) != NAME_OK)
			return;
		off += n.len;
		if (!dns_response_add_cname(b, &n, req->answer_ttl))
			return;
	}
}

static inline void add_chain(struct dns_builder *b, const struct fwd_request *req)
{
	if (req->nchain)
		add_chain_names(b, req);
}

/* An unproven client's answers: never much more than its query, so a spoofed source gains little. */
static uint16_t amplification_cap(size_t qlen)
{
	size_t cap = qlen * INRPD_AMPLIFICATION;
	return (uint16_t)(cap < DNS_UDP_MIN ? cap : DNS_UDP_MIN);
}

static size_t response_limit(const struct fwd_request *req, size_t cap)
{
	size_t limit = req->limit_udp ? dns_query_udp_limit(&req->q, req->edns_udp_size) : DNS_TCP_MAX;
	if (req->udp_cap && req->udp_cap < limit)
		limit = req->udp_cap;
	return limit < cap ? limit : cap;
}

size_t inrpd_answer_servfail(const struct fwd_request *req, uint64_t router_id, uint8_t status,
			     uint8_t *out, size_t cap)
{
	struct dns_builder b;
	struct opt_bufs ob;
	struct inrp_response_opt o = { .status = status, .router_id = router_id };
	enum why why = status == INRP_STATUS_LOOP ? WHY_LOOP
		     : status == INRP_STATUS_HOP_LIMIT ? WHY_HOP_LIMIT
		     : req->fallback ? WHY_UPSTREAMS_FAILED : WHY_NO_ROUTE;

	start(&b, req, DNS_RCODE_SERVFAIL, out, response_limit(req, cap), &ob, &o, why);
	return dns_response_finish(&b, req->edns_udp_size);
}

size_t inrpd_answer_relay(const struct fwd_request *req, uint64_t router_id,
			  const uint8_t *pkt, size_t len, const struct dns_upstream_answer *a,
			  const struct inrp_response_opt *from_hop, uint8_t *out, size_t cap)
{
	struct dns_builder b;
	struct opt_bufs ob;
	/* a router passes on who answered; an upstream resolver's answer is ours */
	struct inrp_response_opt o = { .status = INRP_STATUS_OK, .router_id = router_id };
	if (from_hop)
		o = *from_hop;

	start(&b, req, DNS_RCODE_NOERROR, out, response_limit(req, cap), &ob, &o, WHY_NONE);
	add_chain(&b, req);
	if (!dns_response_relay(&b, pkt, len, a, &req->target))
		return 0;
	return dns_response_finish(&b, req->edns_udp_size);
}

/*
 * The routes of a lookup as candidates, in rank order, once each, at most
 * ROUTESET_MAX_ROUTES; servers the client excludes left out.  Returns how
 * many; *seen counts every route, *servers the candidates that are
 * servers.  Inlined, with what its loops read held in locals (out's bytes
 * could alias the sets' counts): every query that finds a route comes here.
 */
static inline __attribute__((always_inline)) unsigned candidates(const struct fib_result *res,
								 const struct inrp_query_opt *in,
								 struct route *out, unsigned *seen,
								 unsigned *servers)
{
	unsigned n = 0, all = 0, nserv = 0, nsets = res->nsets;
	bool excludes = in->nexclude > 0;
	for (unsigned s = 0; s < nsets; s++) {
		const struct route *r = res->sets[s]->routes, *end = r + res->sets[s]->count;
		all += (unsigned)(end - r);
		for (; r < end; r++) {
			bool dup = false;
			if (excludes && r->kind == ROUTE_SERVER && inrp_is_excluded(in, r->family, r->addr))
				continue;
			for (unsigned k = 0; k < n && !dup; k++)
				dup = route_equal(&out[k], r);
			if (!dup && n < ROUTESET_MAX_ROUTES) {
				nserv += r->kind == ROUTE_SERVER;
				out[n++] = *r;
			}
		}
	}
	*seen = all;
	*servers = nserv;
	return n;
}

/* A name with no hint: its tables are none, so its lookups take the long way. */
static const struct inrpd_hint no_hint;

/*
 * Longest-suffix match over the static routes and nbrpd's (fibsync.c):
 * the longer match wins, and on a tie the static route (the operator's
 * override).  The static table is skipped when the config has no routes.
 * hint: the name's, for both tables (or no_hint).
 */
static inline const struct fib *lookup_in(const struct inrpd_runtime *rt, const struct fib *chan,
					   const struct name *n, const struct inrpd_hint *hint,
					   struct fib_result *res)
{
	bool found_static = rt->nroutes > 0 && fib_lookup_hinted(rt->fib, n, &hint->fib[0], res) && res->nsets > 0;
	const struct fib *in = found_static ? rt->fib : NULL;
	if (!chan)
		return in;
	struct fib_result c;
	if (!fib_lookup_hinted(chan, n, &hint->fib[1], &c) || c.nsets == 0)
		return in;
	if (!found_static || c.suffix_labels > res->suffix_labels) {
		*res = c;
		return chan;
	}
	return in;
}

static bool lookup(const struct inrpd_runtime *rt, const struct fib *chan, const struct name *n,
		   const struct inrpd_hint *hint, struct fib_result *res)
{
	return lookup_in(rt, chan, n, hint, res) != NULL;
}

void inrpd_worker_begin(struct inrpd_worker *w)
{
	w->rt = rcu_dereference(inrpd_rt);
	w->chan = rcu_dereference(inrpd_chan_fib);
	w->policy = inrpd_rpz_policy();
	w->hint = NULL;
	/* what every request of the batch takes from the runtime */
	w->req.limit_udp = w->udp;
	w->req.answer_ttl = w->rt->answer_ttl;
	w->req.router_id = w->rt->router_id;
	w->req.edns_udp_size = w->rt->edns_udp_size;
	w->now_ms = inrpd_now_ms();
	w->exempt_from.family = 0;
}

/*
 * Follows redirects from the query name and collects the routes of the
 * name finally reached into req (target, chain, candidates); hint is the
 * query name's (or no_hint).  Returns 0, or -1 when the chain is too long
 * or a rewritten name too long.  *found is false when no suffix has
 * routes; *apex_off is where the matched suffix (the route's name) starts
 * in req->target; *servers counts the candidates that are servers (the
 * others are routers).  Inlined: its results stay in registers, not
 * stored and loaded again through the pointers.
 */
static inline __attribute__((always_inline)) int resolve_name(struct inrpd_worker *w, const struct name *start,
							      const struct inrpd_hint *hint, bool *found,
							      bool *all_excluded, unsigned *apex_off,
							      unsigned *servers)
{
	const struct inrpd_runtime *rt = w->rt;
	struct fwd_request *req = &w->req;
	struct name *cur = &req->target;
	const struct inrp_query_opt *in = &req->inrp;

	name_copy(cur, &req->q.qname);
	req->nchain = 0;
	req->chain_len = 0;
	req->ncand = 0;
	*found = false;
	*all_excluded = false;
	*servers = 0;
	if (start) {                    /* a policy's CNAME: the chain starts with it */
		memcpy(req->chain, start->wire, start->len);
		req->chain_len = start->len;
		req->nchain = 1;
		name_copy(cur, start);
		hint = &no_hint;
	}
	for (unsigned restarts = req->nchain;; restarts++) {
		struct fib_result res;
		if (!lookup(rt, w->chan, cur, hint, &res))
			return 0;
		hint = &no_hint;                /* a redirect's target is another name */
		if (res.sets[0]->has_redirect) {
			const struct name *to = &res.sets[0]->redirect;
			size_t prefix = res.suffix_offset;
			if (restarts == INRPD_MAX_REDIRECTS || prefix + to->len > NAME_MAX_WIRE)
				return -1;
			struct name next;
			memcpy(next.wire, cur->wire, prefix);
			memcpy(next.wire + prefix, to->wire, to->len);
			next.len = (uint8_t)(prefix + to->len);
			memcpy(req->chain + req->chain_len, next.wire, next.len);
			req->chain_len = (uint16_t)(req->chain_len + next.len);
			req->nchain++;
			*cur = next;
			continue;
		}
		*apex_off = res.suffix_offset;
		unsigned seen;
		req->ncand = (uint8_t)candidates(&res, in, req->cand, &seen, servers);
		*found = seen > 0;
		*all_excluded = seen > 0 && req->ncand == 0;
		return 0;
	}
}

void inrpd_route_view(const struct inrpd_runtime *rt, const struct name *n, struct inrpd_route_view *v)
{
	memset(v, 0, sizeof(*v));
	bool online = rcu_read_ongoing();
	if (!online)
		rcu_thread_online();
	struct fib_result res;
	const struct fib *in = lookup_in(rt, rcu_dereference(inrpd_chan_fib), n, &no_hint, &res);
	if (in) {
		v->found = true;
		v->from_nbrpd = in != rt->fib;
		v->suffix.len = (uint8_t)(n->len - res.suffix_offset);
		memcpy(v->suffix.wire, n->wire + res.suffix_offset, v->suffix.len);
		v->naggs = fib_memberships(in, &v->suffix, &v->own, v->aggs, FIB_MAX_AGGREGATES_PER_NAME);
		if (res.sets[0]->has_redirect) {
			v->has_redirect = true;
			v->redirect = res.sets[0]->redirect;
		} else {
			unsigned seen, servers;
			struct inrp_query_opt none = { 0 };
			v->nroutes = candidates(&res, &none, v->routes, &seen, &servers);
		}
	}
	if (!online)
		rcu_thread_offline();
}

static uint64_t route_fingerprint(const struct fwd_request *req);

bool inrpd_reroute(struct fwd_request *req)
{
	bool online = rcu_read_ongoing();
	if (!online)
		rcu_thread_online();
	const struct inrpd_runtime *rt = rcu_dereference(inrpd_rt);
	struct fib_result res;
	struct route now[ROUTESET_MAX_ROUTES];
	unsigned n = 0, seen, servers;
	if (rt && lookup(rt, rcu_dereference(inrpd_chan_fib), &req->target, &no_hint, &res) &&
	    !res.sets[0]->has_redirect)
		n = candidates(&res, &req->inrp, now, &seen, &servers);
	if (!online)
		rcu_thread_offline();
	bool routers_only = n > 0;
	for (unsigned i = 0; i < n; i++)
		routers_only = routers_only && now[i].kind == ROUTE_ROUTER;
	if (!routers_only)
		return false;
	bool same = n == req->ncand;
	for (unsigned i = 0; i < n && same; i++)
		same = route_equal(&now[i], &req->cand[i]);
	if (same)
		return false;
	memcpy(req->cand, now, n * sizeof(now[0]));
	req->ncand = (uint8_t)n;
	if (req->cacheable)
		req->cache_fp = route_fingerprint(req);     /* the answer is stored under the route it came by */
	return true;
}

/* An answer of n bytes (0: none could be made) counted. */
static inline size_t counted(struct inrpd_worker *w, size_t n, bool truncated)
{
	struct inrpd_counters *cnt = w->cnt;
	if (n == 0) {
		CNT_INC(cnt, dropped);
		return 0;
	}
	if (truncated) {
		CNT_INC(cnt, truncated);
		if (w->req.udp_cap)
			CNT_INC(cnt, amp_truncated);
	}
	return n;                               /* the transport counts it answered once sent */
}

static size_t finish(struct inrpd_worker *w, struct dns_builder *b)
{
	size_t n = dns_response_finish(b, w->req.edns_udp_size);
	return counted(w, n, b->truncated);
}

/*
 * The SOA of a routed name's negative answers (RFC 2308 3): owned by the
 * route's name, its TTL and MINIMUM the answer TTL, so a negative answer
 * is held no longer than an address would be.
 */
static size_t soa_rdata(const struct name *apex, uint32_t ttl, uint8_t *out)
{
	static const uint8_t hostmaster[] = { 10, 'h', 'o', 's', 't', 'm', 'a', 's', 't', 'e', 'r' };
	const uint32_t fields[5] = { 1, 3600, 600, 86400, ttl };   /* serial refresh retry expire minimum */
	size_t o = 0;
	memcpy(out, apex->wire, apex->len);
	o += apex->len;
	if (apex->len + sizeof(hostmaster) <= NAME_MAX_WIRE) {
		memcpy(out + o, hostmaster, sizeof(hostmaster));
		o += sizeof(hostmaster);
	}
	memcpy(out + o, apex->wire, apex->len);
	o += apex->len;
	for (unsigned i = 0; i < 5; i++, o += 4)
		wire_store32(out + o, fields[i]);
	return o;
}

#define SOA_RDATA_MAX (2 * NAME_MAX_WIRE + 20)

/* A local answer as made, not yet counted. */
struct here {
	size_t len;                     /* 0: none could be made */
	bool truncated;
	bool nodata;
};

static struct here made(const struct fwd_request *req, struct dns_builder *b, bool nodata)
{
	size_t n = dns_response_finish(b, req->edns_udp_size);
	return (struct here){ .len = n, .truncated = b->truncated, .nodata = nodata };
}

/*
 * The answer of the router next to the servers: their addresses for A and
 * AAAA, the route's configured records for other types (its SOA for an SOA
 * question at the route's name), NODATA with the SOA in authority when
 * there is nothing of the type.  Never NXDOMAIN: the name is routed.
 * Inlined into the query path (build_capped has its own copy, out of line).
 */
static inline __attribute__((always_inline)) struct here build_here(const struct inrpd_worker *w, unsigned apex_off,
								     uint8_t *out, size_t limit)
{
	const struct inrpd_runtime *rt = w->rt;
	const struct fwd_request *req = &w->req;
	const struct dns_query *q = &req->q;
	struct dns_builder b;
	struct opt_bufs ob;
	struct inrp_response_opt resp = { .status = INRP_STATUS_OK, .router_id = rt->router_id };
	uint8_t soa[SOA_RDATA_MAX];
	uint32_t ttl = rt->answer_ttl;

	for (unsigned i = 0; i < req->ncand && req->client_inrp; i++)       /* only a router reads it */
		if (req->cand[i].kind == ROUTE_SERVER) {
			resp.load_ms = req->cand[i].load_ms;
			resp.origin = req->cand[i].origin;
			break;
		}
	start(&b, req, DNS_RCODE_NOERROR, out, limit, &ob, &resp, WHY_NONE);
	add_chain(&b, req);
	uint16_t chain = b.ancount;
	bool any = q->qtype == DNS_TYPE_ANY;
	/* RFC 8482: ANY over UDP gets one RRset, the servers' addresses of one family */
	int only = 0;
	if (any && rt->minimal_any && req->limit_udp) {
		only = AF_INET6;
		for (unsigned i = 0; i < req->ncand; i++)
			if (req->cand[i].kind == ROUTE_SERVER && req->cand[i].family == AF_INET)
				only = AF_INET;
	}
	if (q->qtype == DNS_TYPE_A || q->qtype == DNS_TYPE_AAAA || any) {
		for (unsigned i = 0; i < req->ncand && !b.truncated; i++) {
			const struct route *r = &req->cand[i];
			if (r->kind != ROUTE_SERVER)
				continue;
			if (!any && r->family != (q->qtype == DNS_TYPE_A ? AF_INET : AF_INET6))
				continue;
			if (only && r->family != only)
				continue;
			dns_response_add_addr(&b, r->family, r->addr, ttl);
		}
	}
	if (only)
		return made(req, &b, false);
	bool addr_type = q->qtype == DNS_TYPE_A || q->qtype == DNS_TYPE_AAAA;
	if (addr_type && b.ancount > chain)
		return made(req, &b, false);
	/* records or NODATA: they need the route's name */
	struct name apex;
	apex.len = (uint8_t)(req->target.len - apex_off);
	memcpy(apex.wire, req->target.wire + apex_off, apex.len);
	if (q->qtype == DNS_TYPE_SOA && name_equal(&req->target, &apex))
		dns_response_add_rr(&b, DNS_TYPE_SOA, soa, (uint16_t)soa_rdata(&apex, ttl, soa), ttl);
	else if (!addr_type)
		inrpd_records_answer(rt->records, &apex, q->qtype, &b, ttl);
	bool nodata = b.ancount == chain && !b.truncated && !b.failed;
	if (nodata)
		dns_response_add_authority(&b, &apex, DNS_TYPE_SOA, soa,
					   (uint16_t)soa_rdata(&apex, ttl, soa), ttl);
	return made(req, &b, nodata);
}

static size_t settle_cap(struct inrpd_worker *w, const struct ip_addr *from, size_t qlen);

/* Rare: out of line, so the common answer's code stays as it was. */
__attribute__((cold, noinline))
static struct here build_capped(struct inrpd_worker *w, unsigned apex_off, uint8_t *out,
				const struct ip_addr *from, size_t qlen)
{
	return build_here(w, apex_off, out, settle_cap(w, from, qlen));
}

/*
 * The local answer, counted.  unsettled: RRL is off, the client has not
 * proven its address, and whether it is exempt from the amplification
 * cap has not been looked up.  An answer within the cap is the same
 * either way (the builder's limit matters only where something would not
 * fit), so that is looked up only for one that is not, which is made
 * again if the cap applies.
 */
static size_t answer_here(struct inrpd_worker *w, unsigned apex_off, uint8_t *out, size_t limit,
			  const struct ip_addr *unsettled, size_t qlen)
{
	struct here h = build_here(w, apex_off, out, limit);
	if (__builtin_expect(unsettled != NULL, 0) && (!h.len || h.truncated || h.len > amplification_cap(qlen)))
		h = build_capped(w, apex_off, out, unsettled, qlen);
	CNT_INC(w->cnt, local);
	if (h.nodata)
		CNT_INC(w->cnt, nodata);
	return counted(w, h.len, h.truncated);
}

/*
 * A response policy's answer (policy.h): true with *n (0: dropped), or
 * false when the query goes on: passthru, tcp-only over TCP, and a local
 * CNAME, whose target *rewrite is then resolved as a redirect's is.
 */
static bool answer_policy(struct inrpd_worker *w, const struct inrpd_rpz_match *m, uint8_t *out, size_t limit,
			  size_t *n, struct name *rewrite)
{
	struct fwd_request *req = &w->req;
	const struct rpz_hit *hit = &m->hit;
	enum why why = m->ede == 15 ? WHY_RPZ_BLOCKED : m->ede == 16 ? WHY_RPZ_CENSORED
		     : m->ede == 17 ? WHY_RPZ_FILTERED : WHY_NONE;
	struct dns_builder b;
	struct opt_bufs ob;
	uint8_t soa[SOA_RDATA_MAX];
	bool nodata = hit->action == RPZ_NODATA;
	switch (hit->action) {
	case RPZ_PASSTHRU:
		return false;
	case RPZ_TCP_ONLY:
		if (!req->limit_udp)
			return false;
		dns_response_init(&b, &req->q, DNS_RCODE_NOERROR, out, limit);
		dns_response_truncate(&b);
		*n = finish(w, &b);
		return true;
	case RPZ_DROP:
		CNT_INC(w->cnt, dropped);
		*n = 0;
		return true;
	case RPZ_LOCAL: {
		size_t pos = 0;
		uint16_t type, rdlen;
		uint32_t ttl;
		const uint8_t *rd;
		while (rpz_data_next(hit, &pos, &type, &ttl, &rd, &rdlen))
			if (type == DNS_TYPE_CNAME && name_from_wire(rewrite, rd, rdlen) == NAME_OK)
				return false;
		start(&b, req, DNS_RCODE_NOERROR, out, limit, &ob, NULL, why);
		pos = 0;
		while (rpz_data_next(hit, &pos, &type, &ttl, &rd, &rdlen))
			if (type == req->q.qtype || req->q.qtype == DNS_TYPE_ANY)
				dns_response_add_rr(&b, type, rd, rdlen, ttl);
		nodata = b.ancount == 0;
		break;
	}
	default:
		start(&b, req, hit->action == RPZ_NXDOMAIN ? DNS_RCODE_NXDOMAIN : DNS_RCODE_NOERROR, out, limit, &ob,
		      NULL, why);
		break;
	}
	if (hit->action == RPZ_NXDOMAIN || nodata)
		dns_response_add_authority(&b, m->zone, DNS_TYPE_SOA, soa,
					   (uint16_t)soa_rdata(m->zone, hit->ttl, soa), hit->ttl);
	*n = finish(w, &b);
	return true;
}

/* ---- the packet cache ---- */

/*
 * How the name was routed, for the cache: an answer kept under another
 * route (a route change, a reload, nbrpd's updates) is not served, nor one
 * from another origin router behind the same next hop (the name moved far
 * away: every router on the way learns it from nbrpd and stops serving
 * the old answer at once, instead of after its TTL).  Loads are left out:
 * they change often and do not change where the query goes.
 */
static uint64_t route_fingerprint(const struct fwd_request *req)
{
	uint8_t buf[1 + NAME_MAX_WIRE + ROUTESET_MAX_ROUTES * 24];
	size_t n = 0;
	buf[n++] = req->fallback;
	memcpy(buf + n, req->target.wire, req->target.len);
	n += req->target.len;
	for (unsigned i = 0; i < req->ncand; i++) {
		const struct route *r = &req->cand[i];
		buf[n++] = r->kind;
		buf[n++] = r->family;
		buf[n++] = (uint8_t)(r->port >> 8);
		buf[n++] = (uint8_t)r->port;
		memcpy(buf + n, r->addr, 16);
		n += 16;
		wire_store32(buf + n, r->origin);
		n += 4;
	}
	return hashkey64(buf, n);      /* keyed: peers choose the routes, and could aim at a collision */
}

size_t inrpd_answer_cached(const struct fwd_request *req, const struct cache_hit *hit,
			   uint8_t *out, size_t cap)
{
	struct dns_builder b;
	struct opt_bufs ob;
	struct inrp_response_opt o = { .status = INRP_STATUS_OK, .router_id = req->router_id };
	const char *why_not;
	if (hit->meta_len)
		(void)inrp_response_opt_parse(hit->meta, hit->meta_len, &o, &why_not);
	enum why why = WHY_NONE;
	if (hit->rcode == DNS_RCODE_SERVFAIL)
		why = o.status == INRP_STATUS_LOOP ? WHY_LOOP
		    : o.status == INRP_STATUS_HOP_LIMIT ? WHY_HOP_LIMIT
		    : req->fallback ? WHY_UPSTREAMS_FAILED : WHY_NO_ROUTE;
	start(&b, req, DNS_RCODE_NOERROR, out, response_limit(req, cap), &ob, &o, why);
	size_t copied;
	size_t at = dns_response_replay(&b, hit->body, hit->body_len, hit->an_ns_len, hit->ancount,
					hit->nscount, hit->arcount, hit->rcode, hit->ad, &copied);
	if (copied)
		cache_hit_ttls(hit, out + at, copied, 30);     /* RFC 8767 4: 30 s for stale data */
	return dns_response_finish(&b, req->edns_udp_size);
}

void inrpd_cache_store(struct cache *cache, const struct fwd_request *req, const uint8_t *msg,
		       size_t len, const struct inrp_response_opt *from_hop)
{
	if (!cache || !req->cacheable)
		return;
	uint8_t meta[INRP_RESPONSE_OPT_LEN];
	size_t mlen = 0;
	if (from_hop)
		mlen = inrp_response_opt_write(from_hop, meta);
	cache_store(cache, &req->cache_key, req->cache_fp, msg, len, &req->cache_limits, meta,
		    (uint8_t)mlen, inrpd_now_ms());
}

/*
 * Looks the request up in the cache (after its route is known); returns
 * the answer's length, 0 on a miss.  A query with INRP exclusions asks
 * for answers without some servers: it bypasses the cache both ways.
 */
static size_t from_cache(struct inrpd_worker *w, uint8_t *out)
{
	struct fwd_request *req = &w->req;
	struct cache *cache = w->cache;
	req->cacheable = false;
	if (!cache || (req->client_inrp && req->inrp.nexclude > 0))
		return 0;
	const struct dns_query *q = &req->q;
	uint8_t flags = (q->rd ? CACHE_F_RD : 0) | (q->cd ? CACHE_F_CD : 0) | (q->edns_do ? CACHE_F_DO : 0);
	cache_key_make(&req->cache_key, &q->qname, q->qtype, q->qclass, flags);
	req->cache_fp = route_fingerprint(req);
	req->cache_limits = w->rt->cache;
	req->cache_stale_s = w->rt->cache_stale_s;
	req->cacheable = true;
	struct cache_hit hit;
	if (!cache_lookup(cache, &req->cache_key, req->cache_fp, w->now_ms, 0, &hit))
		return 0;
	/* A held SERVFAIL damps a burst for a failing name, but must not outlast
	 * the failure: a router client (it holds its own) and a query once the
	 * entry is INRPD_SERVFAIL_RETRY_MS old go out again, so a path that heals
	 * while routes converge is used at once, not cache-servfail-ttl later,
	 * and a chain of routers does not add up their holds. */
	if (hit.rcode == DNS_RCODE_SERVFAIL && (req->client_inrp || hit.age_ms >= INRPD_SERVFAIL_RETRY_MS))
		return 0;
	/* too big for our answer buffer: a TCP client gets it through the engine */
	if (!req->limit_udp && hit.body_len + 2048u > INRPD_ANSWER_MAX)
		return 0;
	size_t n = inrpd_answer_cached(req, &hit, out, INRPD_ANSWER_MAX);
	if (n)
		CNT_INC(w->cnt, cached);
	return n;
}

/* A REFUSED answer, with its reason. */
static size_t refuse(struct inrpd_worker *w, enum why why, uint8_t *out, size_t limit)
{
	struct dns_builder b;
	struct opt_bufs ob;
	CNT_INC(w->cnt, refused);
	start(&b, &w->req, DNS_RCODE_REFUSED, out, limit, &ob, NULL, why);
	return finish(w, &b);
}

/*
 * CHAOS TXT: id.server and hostname.bind give the identity, version.bind
 * and version.server the version, as BIND and Unbound answer them
 * (hide-identity, hide-version: REFUSED); other CHAOS questions REFUSED.
 */
static size_t answer_chaos(struct inrpd_worker *w, uint8_t *out, size_t limit)
{
	const struct inrpd_runtime *rt = w->rt;
	const struct fwd_request *req = &w->req;
	static const struct { const char *wire; uint8_t len; bool version; } known[] = {
		{ "\2id\6server", 11, false },
		{ "\10hostname\4bind", 15, false },
		{ "\7version\4bind", 14, true },
		{ "\7version\6server", 16, true },
	};
	const struct dns_query *q = &req->q;
	const char *text = NULL;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]) && !text; i++)
		if (q->qname.len == known[i].len && memcmp(q->qname.wire, known[i].wire, known[i].len) == 0)
			text = known[i].version ? rt->version : rt->identity;
	if (!text || !text[0])
		return refuse(w, WHY_NOT_SUPPORTED, out, limit);
	struct dns_builder b;
	struct opt_bufs ob;
	CNT_INC(w->cnt, chaos);
	start(&b, req, DNS_RCODE_NOERROR, out, limit, &ob, NULL, WHY_NONE);
	if (q->qtype == DNS_TYPE_TXT || q->qtype == DNS_TYPE_ANY) {
		uint8_t rdata[1 + INRPD_TXT_MAX];
		size_t n = strlen(text);
		rdata[0] = (uint8_t)n;
		memcpy(rdata + 1, text, n);
		dns_response_add_rr(&b, DNS_TYPE_TXT, rdata, (uint16_t)(1 + n), 0);
	}
	return finish(w, &b);
}

/*
 * The EDNS options a query may carry for us: INRP (a router client), NSID,
 * COOKIE (RFC 7873: a client cookie gets ours back, a server cookie is
 * checked).  Returns DNS_PARSE_OK or FORMERR for a malformed INRP or
 * COOKIE option.
 */
static int read_options(struct inrpd_worker *w, const uint8_t *pkt, const struct ip_addr *from,
			bool *cookie_valid, bool *cookie_bad)
{
	const struct inrpd_runtime *rt = w->rt;
	struct fwd_request *req = &w->req;
	const struct dns_query *q = &req->q;
	const uint8_t *opts = pkt + q->edns_opts_off, *data, *cc, *sc;
	size_t dlen, sc_len;
	const char *why;
	if (inrp_find_option(opts, q->edns_opts_len, INRP_OPTION_CODE, &data, &dlen)) {
		if (inrp_query_opt_parse(data, dlen, &req->inrp, &why) < 0)
			return DNS_RCODE_FORMERR;
		req->client_inrp = true;
	}
	/* RFC 5001 2.3: an empty NSID option asks for ours */
	if (rt->nsid && inrp_find_option(opts, q->edns_opts_len, DNS_OPT_NSID, &data, &dlen)) {
		size_t n = strlen(rt->router_name);
		req->nsid_len = (uint8_t)(n < sizeof(req->nsid) ? n : sizeof(req->nsid));
		memcpy(req->nsid, rt->router_name, req->nsid_len);
	}
	if (!from->family || !inrp_find_option(opts, q->edns_opts_len, DNS_OPT_COOKIE, &data, &dlen))
		return DNS_PARSE_OK;
	if (cookie_parse(data, dlen, &cc, &sc, &sc_len) < 0)
		return DNS_RCODE_FORMERR;
	uint32_t now = (uint32_t)time(NULL);
	size_t alen = from->family == AF_INET ? 4 : 16;
	req->cookie = true;
	memcpy(req->cookie_out, cc, COOKIE_CLIENT_LEN);
	cookie_make(rt->cookie_secret, cc, now, from->addr, alen, req->cookie_out + COOKIE_CLIENT_LEN);
	if (sc_len) {
		*cookie_valid = cookie_check(rt->cookie_secret, cc, sc, sc_len, now, from->addr, alen);
		*cookie_bad = !*cookie_valid;
	}
	return DNS_PARSE_OK;
}

/*
 * A UDP client that has not proven its address: outside allow-recursion,
 * not exempt, not a router of ours, is rate-limited (rrl.c), and what
 * passes gets answers of at most INRPD_AMPLIFICATION times its query.
 */
static bool exempt_lookup(const struct inrpd_runtime *rt, const struct ip_addr *from)
{
	return prefix_list_has(rt->acl, rt->nacl, from->family, from->addr) ||
	       prefix_list_has(rt->rrl_exempt, rt->nrrl_exempt, from->family, from->addr) ||
	       (rt->rrl_exempt_routers && inrpd_routers_has(from->family, from->addr));
}

/* A batch's queries mostly come from few clients: the last one's verdict is kept for the batch. */
static inline bool exempt(struct inrpd_worker *w, const struct ip_addr *from)
{
	const uint8_t *a = from->addr, *b = w->exempt_from.addr;
	bool same = from->family == w->exempt_from.family &&
		    (from->family == AF_INET ? memcmp(a, b, 4) == 0 : memcmp(a, b, 16) == 0);
	if (!same) {
		w->exempt_from = *from;
		w->exempt_was = exempt_lookup(w->rt, from);
	}
	return w->exempt_was;
}

/* RRL off: the client's exemption looked up for its amplification cap; the limit of its answers. */
static size_t settle_cap(struct inrpd_worker *w, const struct ip_addr *from, size_t qlen)
{
	if (!exempt(w, from))
		w->req.udp_cap = amplification_cap(qlen);
	return response_limit(&w->req, INRPD_ANSWER_MAX);
}

static enum rrl_verdict rate_limit(struct inrpd_worker *w, size_t len, const struct ip_addr *from,
				   bool client_cookie)
{
	const struct inrpd_runtime *rt = w->rt;
	struct inrpd_counters *cnt = w->cnt;
	if (exempt(w, from))
		return RRL_PASS;
	enum rrl_verdict v = rrl_check(w->rrl, rt, from->family, from->addr, w->now_ms);
	/* A client cookie is never dropped: its slip (BADCOOKIE with ours) is
	 * hardly larger than the query, and the client asks again proven.
	 * Dropped, it waits out its whole timeout: a router asking a next hop
	 * it has no cookie of yet, in a burst of route changes, from the /24
	 * all the ISP's routers share. */
	if (v == RRL_DROP && client_cookie)
		v = RRL_SLIP;
	if (v == RRL_DROP) {
		CNT_INC(cnt, rrl_dropped);
		CNT_INC(cnt, dropped);
	} else if (v == RRL_SLIP) {
		CNT_INC(cnt, rrl_slipped);
	} else {
		w->req.udp_cap = amplification_cap(len);
	}
	return v;
}

/* No route: ordinary DNS, the upstream resolvers the candidates. */
static void to_upstreams(struct fwd_request *req, const struct inrpd_runtime *rt)
{
	req->fallback = true;
	req->upstream_0x20 = rt->upstream_0x20;
	req->ncand = (uint8_t)rt->nupstreams;
	memcpy(req->cand, rt->upstreams, rt->nupstreams * sizeof(rt->upstreams[0]));
}

bool inrpd_cache_route_fp(const struct inrpd_runtime *rt, const struct name *n, uint64_t *fp)
{
	struct inrpd_worker w = { .rt = rt };
	struct fwd_request *req = &w.req;
	name_copy(&req->q.qname, n);
	bool online = rcu_read_ongoing();
	if (!online)
		rcu_thread_online();
	w.chan = rcu_dereference(inrpd_chan_fib);
	bool found, all_excluded;
	unsigned apex_off, servers;
	bool cached = resolve_name(&w, NULL, &no_hint, &found, &all_excluded, &apex_off, &servers) == 0 && !all_excluded;
	if (!online)
		rcu_thread_offline();
	for (unsigned i = 0; i < req->ncand && cached; i++)
		cached = req->cand[i].kind == ROUTE_ROUTER;     /* a server: answered here */
	if (cached && req->ncand == 0) {
		cached = rt->nupstreams > 0;
		if (cached)
			to_upstreams(req, rt);
	}
	if (cached)
		*fp = route_fingerprint(req);
	return cached;
}

size_t inrpd_answer(struct inrpd_worker *w, const uint8_t *pkt, size_t len,
		    const struct sockaddr *client, uint8_t *out)
{
	const struct inrpd_runtime *rt = w->rt;
	struct fwd_request *req = &w->req;
	struct inrpd_counters *cnt = w->cnt;
	struct dns_query *q = &req->q;
	struct inrp_query_opt *in = &req->inrp;
	struct dns_builder b;

	CNT_INC(cnt, queries);
	req->client_inrp = false;
	req->fallback = false;
	req->nchain = 0;
	req->chain_len = 0;
	req->nsid_len = 0;
	req->cookie = false;
	req->policy_ede = 0;
	req->udp_cap = 0;
	req->cacheable = false;
	in->npath = 0;
	in->nexclude = 0;
	in->hop_limit = rt->hop_limit;
	in->budget_ms = 0;

	int rc = dns_query_parse(pkt, len, q);
	if (rc == DNS_PARSE_DROP) {
		CNT_INC(cnt, dropped);
		return 0;
	}
	size_t limit = response_limit(req, INRPD_ANSWER_MAX);
	struct ip_addr from;
	from.family = prefix_sockaddr_addr(client, from.addr);
	bool cookie_valid = false, cookie_bad = false, unsettled = false;
	if (rc == DNS_PARSE_OK && q->has_edns)
		rc = read_options(w, pkt, &from, &cookie_valid, &cookie_bad);
	bool unproven = rc == DNS_PARSE_OK && w->udp && from.family && !cookie_valid;
	if (unproven && !rt->rrl_rate) {
		/* RRL off: the exemption decides only the amplification cap; an
		 * ordinary question settles it once its route is known (below),
		 * any other now */
		if (cookie_bad || q->qclass != DNS_CLASS_IN || req->client_inrp)
			limit = settle_cap(w, &from, len);
		else
			unsettled = true;
	} else if (unproven) {
		bool client_cookie = req->cookie && !cookie_bad;
		int v = rate_limit(w, len, &from, client_cookie);
		if (v == RRL_DROP)
			return 0;
		if (v == RRL_SLIP && client_cookie) {
			/* RFC 7873 5.2.3: a client cookie alone, over the limit: our
			 * cookie, so it asks again as a proven client */
			struct opt_bufs ob;
			CNT_INC(cnt, badcookie);
			start(&b, req, DNS_RCODE_BADCOOKIE, out, limit, &ob, NULL, WHY_NONE);
			return finish(w, &b);
		}
		if (v == RRL_SLIP) {
			dns_response_init(&b, q, DNS_RCODE_NOERROR, out, limit);
			dns_response_truncate(&b);
			return finish(w, &b);
		}
		if (req->udp_cap)                /* the limit changes only with a cap */
			limit = response_limit(req, INRPD_ANSWER_MAX);
	}
	if (rc == DNS_PARSE_OK && cookie_valid)
		CNT_INC(cnt, cookies);
	if (rc == DNS_PARSE_OK && cookie_bad) {
		/* RFC 7873 5.2.3: BADCOOKIE with a fresh cookie, so it asks again with it */
		struct opt_bufs ob;
		CNT_INC(cnt, badcookie);
		start(&b, req, DNS_RCODE_BADCOOKIE, out, limit, &ob, NULL, WHY_NONE);
		return finish(w, &b);
	}
	if (rc == DNS_RCODE_NOTIMP) {
		size_t n = inrpd_rpz_notify(pkt, len, client, out, limit);
		if (n)
			return n;
	}
	if (rc != DNS_PARSE_OK) {
		if (rc == DNS_RCODE_FORMERR)
			CNT_INC(cnt, formerr);
		if (rc == DNS_RCODE_NOTIMP)
			CNT_INC(cnt, notimp);
		dns_response_init(&b, q, (unsigned)rc, out, limit);
		return finish(w, &b);
	}
	if (q->qclass == DNS_CLASS_CH)
		return answer_chaos(w, out, limit);
	if (q->qclass != DNS_CLASS_IN)
		return refuse(w, WHY_NOT_SUPPORTED, out, limit);
	if (req->client_inrp && inrp_path_contains(in, rt->router_id)) {
		CNT_INC(cnt, loops);
		CNT_INC(cnt, servfail);
		return inrpd_answer_servfail(req, rt->router_id, INRP_STATUS_LOOP, out, limit);
	}

	/* response policy: before the routes and the cache, for every name */
	struct inrpd_rpz_match pm;
	struct name rewrite;            /* only its length is read unless set: zeroed whole, 40 Ir a query */
	rewrite.len = 0;
	if (w->policy && inrpd_rpz_match(w->policy, &q->qname, client, &pm)) {
		size_t n;
		if (unsettled) {                /* a policy's answer is not a local one */
			limit = settle_cap(w, &from, len);
			unsettled = false;
		}
		if (answer_policy(w, &pm, out, limit, &n, &rewrite))
			return n;
		if (rewrite.len)
			req->policy_ede = pm.ede;
	}

	bool found, all_excluded;
	unsigned apex_off = 0;
	unsigned nservers;
	const struct inrpd_hint *hint = w->hint && w->hint->pkt == pkt ? w->hint : &no_hint;
	int resolved = resolve_name(w, rewrite.len ? &rewrite : NULL, hint, &found, &all_excluded, &apex_off,
				    &nservers);
	unsigned nrouters = req->ncand - nservers;
	if (unsettled && nservers == 0) {       /* every answer but a local one (none on a failure) */
		limit = settle_cap(w, &from, len);
		unsettled = false;
	}
	if (resolved < 0 || all_excluded) {
		CNT_INC(cnt, servfail);
		return inrpd_answer_servfail(req, rt->router_id, INRP_STATUS_UNREACHABLE, out, limit);
	}
	if (nservers > 0)
		return answer_here(w, apex_off, out, limit, unsettled ? &from : NULL, len);

	uint32_t budget = rt->query_timeout_ms;
	if (req->client_inrp && in->budget_ms && in->budget_ms < budget)
		budget = in->budget_ms;
	req->budget_ms = budget;
	req->probe_ms = rt->hop_probe_ms;

	if (nrouters > 0) {
		uint8_t hop_limit = req->client_inrp ? in->hop_limit : rt->hop_limit;
		if (hop_limit == 0 || in->npath == INRP_MAX_PATH) {
			CNT_INC(cnt, servfail);
			return inrpd_answer_servfail(req, rt->router_id, INRP_STATUS_HOP_LIMIT, out, limit);
		}
		in->hop_limit = (uint8_t)(hop_limit - 1);
		in->path[in->npath++] = rt->router_id;
		unsigned k = 0;
		for (unsigned i = 0; i < req->ncand; i++)
			if (req->cand[i].kind == ROUTE_ROUTER)
				req->cand[k++] = req->cand[i];
		req->ncand = (uint8_t)k;
		size_t n = from_cache(w, out);
		if (n)
			return n;
		CNT_INC(cnt, forwarded);
		return INRPD_FORWARD;
	}

	if (req->client_inrp) {
		CNT_INC(cnt, servfail);
		CNT_INC(cnt, no_route);
		return inrpd_answer_servfail(req, rt->router_id, INRP_STATUS_NO_ROUTE, out, limit);
	}
	/* no route: ordinary DNS */
	if (rt->nupstreams == 0)
		return refuse(w, WHY_NO_UPSTREAM, out, limit);
	if (!inrpd_acl_allows(rt, client)) {
		CNT_INC(cnt, acl_refused);
		return refuse(w, WHY_PROHIBITED, out, limit);
	}
	to_upstreams(req, rt);
	size_t n = from_cache(w, out);
	if (n)
		return n;
	CNT_INC(cnt, fallback);
	return INRPD_FORWARD;
}
