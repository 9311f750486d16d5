/*
 * DNS messages on a TCP stream (RFC 1035 4.2.2, RFC 7766 8): each is a
 * 2-byte length, then the message.  A reader keeps what arrived in one
 * buffer, grown as needed, and takes whole messages from its start; this
 * is that reading, without the sockets (inrpd/tcp.c, tests/fuzz).
 */
#ifndef CR_DNSFRAME_H
#define CR_DNSFRAME_H

#include <stddef.h>
#include <stdint.h>

#include "dns.h"

#define DNS_FRAME_BUF_MAX       (2 + DNS_TCP_MAX)       /* prefix + largest message */

enum dns_frame { DNS_FRAME_MORE, DNS_FRAME_MSG, DNS_FRAME_BAD };

/*
 * The message at buf, of the len bytes buffered: DNS_FRAME_MSG with its
 * length in *msg_len (it starts at buf + 2), DNS_FRAME_MORE until all of
 * it has arrived, DNS_FRAME_BAD for a zero length (no DNS message is empty).
 */
enum dns_frame dns_frame_next(const uint8_t *buf, size_t len, size_t *msg_len);

/*
 * The size a read buffer of cap bytes, len of them used, should have for
 * the next read: doubled while less than 1 KiB is free, up to
 * DNS_FRAME_BUF_MAX; cap when it need not grow.  What is buffered is
 * always less than one whole message, so a maximal one always fits.
 */
size_t dns_frame_grow(size_t cap, size_t len);

#endif
