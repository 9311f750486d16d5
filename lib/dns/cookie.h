/*
 * DNS cookies (RFC 7873) with server cookies as RFC 9018 makes them, so
 * routers sharing a secret (anycast) accept each other's:
 *
 *   server cookie = version (1) | reserved (3) | timestamp (4) |
 *                   SipHash-2-4(secret; client cookie | version | reserved |
 *                               timestamp | client address) (8)
 *
 * A server cookie is good for an hour after its timestamp and up to five
 * minutes before it (clocks of routers sharing the secret differ).
 */
#ifndef CR_COOKIE_H
#define CR_COOKIE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define COOKIE_CLIENT_LEN       8
#define COOKIE_SERVER_LEN       16      /* the RFC 9018 form we make */
#define COOKIE_SECRET_LEN       16      /* SipHash-2-4's key */
#define COOKIE_OPT_MAX          40      /* client 8 + server 8..32 (RFC 7873 4) */

/*
 * Splits a COOKIE option's data: the client cookie, then the server
 * cookie if any (*server_len 0: none).  Returns -1 for a length RFC 7873
 * 5.2.2 makes FORMERR: not 8, and not 16 to 40.
 */
int cookie_parse(const uint8_t *data, size_t len, const uint8_t **client, const uint8_t **server,
		 size_t *server_len);

/*
 * Our client cookie for one server (RFC 7873 4.1): SipHash-2-4(secret;
 * server address | port).  Our own address is left out (RFC 9018 allows
 * it): an unconnected socket does not know which one the kernel picks.
 */
void cookie_client_make(const uint8_t secret[COOKIE_SECRET_LEN], const uint8_t *addr, size_t addr_len,
			uint16_t port, uint8_t out[COOKIE_CLIENT_LEN]);

/* Our server cookie for this client at time now (seconds). addr: 4 or 16 bytes. */
void cookie_make(const uint8_t secret[COOKIE_SECRET_LEN], const uint8_t client[COOKIE_CLIENT_LEN],
		 uint32_t now, const uint8_t *addr, size_t addr_len, uint8_t out[COOKIE_SERVER_LEN]);

/* Is server (server_len bytes) a cookie we (or a router with our secret) made for this client, in time? */
bool cookie_check(const uint8_t secret[COOKIE_SECRET_LEN], const uint8_t client[COOKIE_CLIENT_LEN],
		  const uint8_t *server, size_t server_len, uint32_t now, const uint8_t *addr,
		  size_t addr_len);

#endif
