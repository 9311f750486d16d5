/*
 * The PROXY protocol's binary header, version 2 (HAProxy's
 * proxy-protocol.txt, 2.2): a proxy in front of a server (dnsdist, a load
 * balancer) puts it before the client's bytes, once at the start of a
 * stream or in front of each datagram, to say whom it speaks for.  Only
 * version 2 is read; version 1's text line is not.
 *
 *   12 bytes  signature \r \n \r \n \0 \r \n Q U I T \n
 *    1 byte   version (high nibble: 2), command (low: 0 LOCAL, 1 PROXY)
 *    1 byte   family (high: 0 UNSPEC, 1 INET, 2 INET6, 3 UNIX),
 *             transport (low: 0 UNSPEC, 1 STREAM, 2 DGRAM)
 *    2 bytes  length of the rest: the addresses, then TLVs
 *   INET: source, destination (4 bytes each), source port, destination port;
 *   INET6: the same with 16-byte addresses.
 *
 * LOCAL (the proxy's own health checks) carries no client: its address
 * block is skipped whatever it says.  PROXY must carry TCP or UDP over
 * IPv4 or IPv6.  TLVs (type, 2-byte length, value) are walked to check
 * that they fill the header exactly, and their values are not used.
 */
#ifndef CR_PROXYV2_H
#define CR_PROXYV2_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "addr.h"

#define PROXYV2_SIG_LEN         12
#define PROXYV2_FIXED_LEN       16      /* signature, version/command, family/transport, length */
#define PROXYV2_MAX_LEN         (PROXYV2_FIXED_LEN + 65535)

extern const uint8_t proxyv2_signature[PROXYV2_SIG_LEN];

enum proxyv2_command { PROXYV2_LOCAL = 0, PROXYV2_PROXY = 1 };
enum proxyv2_transport { PROXYV2_UNSPEC = 0, PROXYV2_STREAM = 1, PROXYV2_DGRAM = 2 };

/*
 * A reading's outcome.  SHORT: the bytes so far begin a header (a stream
 * waits for more; in a datagram the header is truncated).  NOT_PROXY:
 * they do not begin with the signature.  Every other one is a header
 * that can never become valid, whatever follows.
 */
enum proxyv2_status {
	PROXYV2_OK,
	PROXYV2_SHORT,
	PROXYV2_NOT_PROXY,
	PROXYV2_BAD_VERSION,            /* not 2 */
	PROXYV2_BAD_COMMAND,            /* neither LOCAL nor PROXY */
	PROXYV2_BAD_FAMILY,             /* PROXY: not INET or INET6 */
	PROXYV2_BAD_TRANSPORT,          /* PROXY: not STREAM or DGRAM */
	PROXYV2_TOO_LONG,               /* longer than the reader takes */
	PROXYV2_SHORT_ADDRESS,          /* PROXY: its length leaves no room for the addresses */
	PROXYV2_BAD_TLV,                /* a TLV runs past the header's end */
	PROXYV2_STATUSES
};

struct proxyv2_header {
	size_t len;                     /* the whole header: the client's bytes start here */
	uint8_t command;                /* enum proxyv2_command */
	uint8_t transport;              /* PROXY: STREAM or DGRAM; LOCAL: UNSPEC */
	struct ip_endpoint src, dst;    /* PROXY: the client, and what it reached; LOCAL: family 0 */
};

/*
 * Reads the header at the start of buf (len bytes, more may follow it),
 * taking at most max_len bytes for the whole header (16 to PROXYV2_MAX_LEN).
 * h is filled only on PROXYV2_OK.
 */
enum proxyv2_status proxyv2_parse(const uint8_t *buf, size_t len, size_t max_len,
				  struct proxyv2_header *h);

/* "truncated", "bad version", ...: for logs and counters. */
const char *proxyv2_strerror(enum proxyv2_status s);

/*
 * Where the bytes after a header would start, from its signature and
 * length field alone (0: none there), for a look ahead that must not
 * cost a parse; proxyv2_parse decides.
 */
static inline size_t proxyv2_skip(const uint8_t *buf, size_t len)
{
	if (len < PROXYV2_FIXED_LEN || memcmp(buf, proxyv2_signature, PROXYV2_SIG_LEN) != 0)
		return 0;
	size_t n = PROXYV2_FIXED_LEN + ((size_t)buf[14] << 8 | buf[15]);
	return n <= len ? n : 0;
}

#endif
