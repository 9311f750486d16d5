/*
 * IP addresses as the daemons keep them: a family and 16 bytes (IPv4 in
 * the first 4), with a port for an endpoint; and the socket-path limit.
 * One place to format, compare and turn them into socket addresses.
 */
#ifndef CR_ADDR_H
#define CR_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>

/* The longest path a unix socket can have (sun_path, less its NUL). */
#define UNIX_PATH_MAX   (sizeof(((struct sockaddr_un *)0)->sun_path) - 1)
/* Room for an address as text, and for an endpoint ("ADDR port N"). */
#define IP_TEXT_MAX     INET6_ADDRSTRLEN
#define ENDPOINT_TEXT_MAX (INET6_ADDRSTRLEN + 12)

struct ip_endpoint {
	int family;                     /* AF_INET or AF_INET6 */
	uint8_t addr[16];               /* IPv4 in the first 4 bytes */
	uint16_t port;                  /* host order */
};

/* The address as text ("?" if the family is neither); buf of IP_TEXT_MAX. */
const char *ip_format(int family, const uint8_t *addr, char *buf, size_t len);
/* "ADDR port N". */
const char *ip_endpoint_format(const struct ip_endpoint *e, char *buf, size_t len);
bool ip_equal(int family_a, const uint8_t *a, int family_b, const uint8_t *b);
/* For connect()/sendto()/bind(); returns the length to pass. */
socklen_t sockaddr_from_bytes(int family, const uint8_t *addr, uint16_t port, struct sockaddr_storage *ss);
static inline socklen_t ip_endpoint_sockaddr(const struct ip_endpoint *e, struct sockaddr_storage *ss)
{
	return sockaddr_from_bytes(e->family, e->addr, e->port, ss);
}
/* A socket address's address as text ("?" if not IP). */
const char *sockaddr_format(const struct sockaddr *sa, char *buf, size_t len);

#endif
