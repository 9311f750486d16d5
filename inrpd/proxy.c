/*
 * The PROXY protocol v2 in front of inrpd's listeners (proxy.h): who must
 * send a header, who may not, and which address the query is answered as.
 */
#include "addr.h"
#include "counters.h"
#include "log.h"
#include "prefix.h"
#include "proxy.h"
#include "proxyv2.h"
#include "runtime.h"

static bool expects_header(const struct inrpd_runtime *rt, const struct sockaddr *peer)
{
	return rt->nproxy_from && prefix_list_contains(rt->proxy_from, rt->nproxy_from, peer);
}

static void note(const struct sockaddr *peer, const char *what, const char *why)
{
	if (log_level_now() < LOG_LVL_DEBUG)
		return;
	char from[IP_TEXT_MAX + 8];
	log_debug("PROXY header from %s %s%s%s", sockaddr_format_port(peer, from, sizeof(from)), what,
		  why ? ": " : "", why ? why : "");
}

/* Either transport; stream: more bytes may come. */
static enum inrpd_proxy_verdict take(const struct inrpd_runtime *rt, const struct sockaddr *peer,
				     const uint8_t *buf, size_t len, bool stream, size_t *used,
				     struct sockaddr_storage *client, struct inrpd_counters *cnt)
{
	struct proxyv2_header h;
	enum proxyv2_status st = proxyv2_parse(buf, len, INRPD_PROXY_MAX, &h);

	if (!expects_header(rt, peer)) {
		/* a header is its whole signature; a stream with less of it waits */
		if (st == PROXYV2_NOT_PROXY || (!stream && len < PROXYV2_SIG_LEN))
			return INRPD_PROXY_PASS;
		if (len < PROXYV2_SIG_LEN)
			return INRPD_PROXY_WAIT;
		CNT_INC(cnt, proxy_refused);
		note(peer, "refused", "not in proxy-protocol-from");
		return INRPD_PROXY_DROP;
	}
	if (st == PROXYV2_SHORT && stream)
		return INRPD_PROXY_WAIT;
	if (st == PROXYV2_NOT_PROXY) {
		CNT_INC(cnt, proxy_missing);
		note(peer, "missing", NULL);
		return INRPD_PROXY_DROP;
	}
	if (st != PROXYV2_OK) {
		CNT_INC(cnt, proxy_bad[st]);
		note(peer, "malformed", proxyv2_strerror(st));
		return INRPD_PROXY_DROP;
	}
	CNT_INC(cnt, proxy_accepted);
	*used = h.len;
	if (h.command == PROXYV2_PROXY)
		sockaddr_from_bytes(h.src.family, h.src.addr, h.src.port, client);
	return INRPD_PROXY_PASS;
}

const struct sockaddr *inrpd_proxy_datagram(const struct inrpd_runtime *rt, const struct sockaddr *peer,
					    const uint8_t **pkt, size_t *len,
					    struct sockaddr_storage *carried, struct inrpd_counters *cnt)
{
	/* the common case, no proxy and no signature, at the cost of a byte's look */
	if (!rt->nproxy_from && (*len == 0 || (*pkt)[0] != proxyv2_signature[0]))
		return peer;
	size_t used = 0;
	carried->ss_family = AF_UNSPEC;
	if (take(rt, peer, *pkt, *len, false, &used, carried, cnt) == INRPD_PROXY_DROP) {
		CNT_INC(cnt, queries);
		CNT_INC(cnt, dropped);
		return NULL;
	}
	*pkt += used;
	*len -= used;
	return carried->ss_family != AF_UNSPEC ? (const struct sockaddr *)carried : peer;
}

enum inrpd_proxy_verdict inrpd_proxy_stream(const struct inrpd_runtime *rt, const struct sockaddr *peer,
					    const uint8_t *buf, size_t len, size_t *used,
					    struct sockaddr_storage *client, struct inrpd_counters *cnt)
{
	struct sockaddr_storage carried = { .ss_family = AF_UNSPEC };
	*used = 0;
	enum inrpd_proxy_verdict v = take(rt, peer, buf, len, true, used, &carried, cnt);
	if (v == INRPD_PROXY_PASS && carried.ss_family != AF_UNSPEC)
		*client = carried;
	return v;
}

void inrpd_proxy_stream_cut(struct inrpd_counters *cnt)
{
	CNT_INC(cnt, proxy_bad[PROXYV2_SHORT]);
}
