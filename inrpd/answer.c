/*
 * The answer logic of this first cut: a static FIB, local server routes.
 *
 *   parse error                  FORMERR / NOTIMP / BADVERS, or no answer
 *   QCLASS other than IN         REFUSED
 *   no route for any suffix      REFUSED (no upstream fallback yet)
 *   best route set with servers  A: its IPv4 servers, AAAA: its IPv6 ones,
 *                                ranked; other types and a family without
 *                                servers: NOERROR with no records (NODATA)
 *   best route set, no servers   SERVFAIL (forwarding to the next content
 *                                router is not done by this cut)
 *
 * Nothing here logs per query: the counters say what happened.
 */
#include <sys/socket.h>

#include "inrpd.h"

void inrpd_counters_add(struct inrpd_counters *sum, const struct inrpd_counters *c)
{
	sum->queries += __atomic_load_n(&c->queries, __ATOMIC_RELAXED);
	sum->answered += __atomic_load_n(&c->answered, __ATOMIC_RELAXED);
	sum->formerr += __atomic_load_n(&c->formerr, __ATOMIC_RELAXED);
	sum->refused += __atomic_load_n(&c->refused, __ATOMIC_RELAXED);
	sum->truncated += __atomic_load_n(&c->truncated, __ATOMIC_RELAXED);
	sum->dropped += __atomic_load_n(&c->dropped, __ATOMIC_RELAXED);
}

static unsigned route_answer(const struct inrpd_runtime *rt, const struct dns_query *q,
			     struct dns_builder *b, const struct routeset *set)
{
	int family;
	if (q->qtype == DNS_TYPE_A)
		family = AF_INET;
	else if (q->qtype == DNS_TYPE_AAAA)
		family = AF_INET6;
	else
		return 0;                       /* NODATA */
	unsigned n = 0;
	for (unsigned i = 0; i < set->count; i++) {
		const struct route *r = &set->routes[i];
		if (r->kind != ROUTE_SERVER || r->family != family)
			continue;
		if (!dns_response_add_addr(b, family, r->addr, rt->answer_ttl))
			break;                  /* truncated */
		n++;
	}
	return n;
}

static bool has_servers(const struct routeset *set)
{
	for (unsigned i = 0; i < set->count; i++)
		if (set->routes[i].kind == ROUTE_SERVER)
			return true;
	return false;
}

size_t inrpd_answer(const struct inrpd_runtime *rt, const uint8_t *pkt, size_t len,
		    uint8_t *out, bool limit_udp, struct inrpd_counters *cnt)
{
	struct dns_query q;
	struct dns_builder b;

	CNT_INC(cnt, queries);
	int rc = dns_query_parse(pkt, len, &q);
	if (rc == DNS_PARSE_DROP) {
		CNT_INC(cnt, dropped);
		return 0;
	}
	size_t limit = limit_udp ? dns_query_udp_limit(&q, rt->edns_udp_size) : DNS_TCP_MAX;
	if (limit > INRPD_ANSWER_MAX)
		limit = INRPD_ANSWER_MAX;

	if (rc != DNS_PARSE_OK) {
		if (rc == DNS_RCODE_FORMERR)
			CNT_INC(cnt, formerr);
		dns_response_init(&b, &q, (unsigned)rc, out, limit);
	} else if (q.qclass != DNS_CLASS_IN) {
		CNT_INC(cnt, refused);
		dns_response_init(&b, &q, DNS_RCODE_REFUSED, out, limit);
	} else {
		struct fib_result res;
		if (!fib_lookup_longest_suffix(rt->fib, &q.qname, &res) || res.nsets == 0) {
			CNT_INC(cnt, refused);
			dns_response_init(&b, &q, DNS_RCODE_REFUSED, out, limit);
		} else if (!has_servers(res.sets[0])) {
			dns_response_init(&b, &q, DNS_RCODE_SERVFAIL, out, limit);
		} else {
			dns_response_init(&b, &q, DNS_RCODE_NOERROR, out, limit);
			route_answer(rt, &q, &b, res.sets[0]);
		}
	}
	size_t n = dns_response_finish(&b, rt->edns_udp_size);
	if (n == 0) {
		CNT_INC(cnt, dropped);
		return 0;
	}
	if (b.truncated)
		CNT_INC(cnt, truncated);
	return n;                               /* the transport counts it answered once sent */
}
