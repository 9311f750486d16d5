/*
 * Address prefixes for access lists ("10.0.0.0/8", "::1/128").  An
 * IPv4-mapped IPv6 address (a v4 client on a dual-stack socket) is matched
 * as the IPv4 address it is.
 */
#ifndef CR_PREFIX_H
#define CR_PREFIX_H

#include <stdbool.h>
#include <stdint.h>

struct sockaddr;

struct prefix {
	uint8_t family;                 /* AF_INET or AF_INET6 */
	uint8_t len;                    /* bits */
	uint8_t addr[16];
};

/* "ADDR/LEN" or a bare address; returns 0, -1 if it is not one. */
int prefix_parse(const char *text, struct prefix *out);
bool prefix_contains(const struct prefix *p, int family, const uint8_t *addr);
/* Whether an address lies in one of the n prefixes. */
bool prefix_list_has(const struct prefix *list, unsigned n, int family, const uint8_t *addr);
/* A socket address's family and bytes, an IPv4-mapped IPv6 one as IPv4; 0 if neither. */
int prefix_sockaddr_addr(const struct sockaddr *sa, uint8_t out[16]);
/* Whether a socket address lies in one of the n prefixes. */
bool prefix_list_contains(const struct prefix *list, unsigned n, const struct sockaddr *sa);

#endif
