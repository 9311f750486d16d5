/*
 * The PROXY protocol v2 in front of inrpd (lib/core/proxyv2.h), as
 * PowerDNS's proxy-protocol-from has it: from an address in
 * `proxy-protocol-from` every datagram, and every connection once at its
 * start, must begin with a header, and the address the header carries is
 * the client's for the whole answer path (allow-recursion, RRL, cookies,
 * the amplification limit); a LOCAL header (the proxy's health checks)
 * keeps the proxy's own.  From any other address a header is refused:
 * those bytes are not DNS.  A datagram refused is dropped, a connection
 * closed; each outcome counted in the transport's counters (proxy_*).
 */
#ifndef INRPD_PROXY_H
#define INRPD_PROXY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct inrpd_runtime;
struct inrpd_counters;

/* A whole header, TLVs included (PowerDNS's proxy-protocol-maximum-size default). */
#define INRPD_PROXY_MAX         512

enum inrpd_proxy_verdict { INRPD_PROXY_PASS, INRPD_PROXY_WAIT, INRPD_PROXY_DROP };

/*
 * A datagram from peer: the address to answer its query as (peer, or the
 * one its header carried, written to *carried), with *pkt and *len moved
 * past the header; NULL to drop it (counted, as a query and dropped too).
 */
const struct sockaddr *inrpd_proxy_datagram(const struct inrpd_runtime *rt, const struct sockaddr *peer,
					    const uint8_t **pkt, size_t *len,
					    struct sockaddr_storage *carried, struct inrpd_counters *cnt);

/*
 * The first len bytes of a stream from peer, before anything else is read
 * from them (TCP's first message, TLS's handshake): WAIT for more bytes;
 * DROP, close it (counted); or PASS with *used the header's length (0:
 * none), and *client set to the address the header carried (PROXY; left
 * as it is for LOCAL and for no header): whom the connection speaks for.
 */
enum inrpd_proxy_verdict inrpd_proxy_stream(const struct inrpd_runtime *rt, const struct sockaddr *peer,
					    const uint8_t *buf, size_t len, size_t *used,
					    struct sockaddr_storage *client, struct inrpd_counters *cnt);

/* A stream closed, or idle too long, while inrpd_proxy_stream waited: a header cut short. */
void inrpd_proxy_stream_cut(struct inrpd_counters *cnt);

#endif
