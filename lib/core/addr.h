/*
 * IP addresses as the daemons keep them: a family and 16 bytes (IPv4 in
 * the first 4), with a port for an endpoint; and the socket-path limit.
 * One place to format, compare, hash and turn them into socket addresses.
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

struct ip_addr {
	int family;                     /* AF_INET or AF_INET6 */
	uint8_t addr[16];               /* IPv4 in the first 4 bytes */
};

struct ip_endpoint {
	int family;                     /* AF_INET or AF_INET6 */
	uint8_t addr[16];               /* IPv4 in the first 4 bytes */
	uint16_t port;                  /* host order */
};

/* Text (dotted quad or IPv6) to a family and 16 bytes (IPv4 in the first 4, the rest 0); false if neither. */
bool ip_parse(const char *text, int *family, uint8_t addr[16]);
/* The address as text ("?" if the family is neither); buf of IP_TEXT_MAX. */
const char *ip_format(int family, const uint8_t *addr, char *buf, size_t len);
/* "ADDR port N". */
const char *ip_endpoint_format(const struct ip_endpoint *e, char *buf, size_t len);
bool ip_equal(int family_a, const uint8_t *a, int family_b, const uint8_t *b);
/* Bytes past an IPv4 address's 4 do not count, in these as in ip_equal. */
static inline bool ip_addr_equal(const struct ip_addr *a, const struct ip_addr *b)
{
	return ip_equal(a->family, a->addr, b->family, b->addr);
}
static inline bool ip_endpoint_equal(const struct ip_endpoint *a, const struct ip_endpoint *b)
{
	return a->port == b->port && ip_equal(a->family, a->addr, b->family, b->addr);
}
/* Keyed (hashkey.h): the addresses come from peers and clients. */
/* 0.0.0.0 or ::, the wildcard a listener binds to. */
bool ip_is_any(int family, const uint8_t *addr);
uint64_t ip_hash(int family, const uint8_t *addr);
uint64_t ip_endpoint_hash(const struct ip_endpoint *e);
/* For connect()/sendto()/bind(); returns the length to pass. */
socklen_t sockaddr_from_bytes(int family, const uint8_t *addr, uint16_t port, struct sockaddr_storage *ss);
static inline socklen_t ip_endpoint_sockaddr(const struct ip_endpoint *e, struct sockaddr_storage *ss)
{
	return sockaddr_from_bytes(e->family, e->addr, e->port, ss);
}
/* A socket address's address as it is (a v4-mapped one stays IPv6); false if not IP. */
bool sockaddr_ip(const struct sockaddr *sa, struct ip_addr *out);
/* A socket address's address as text ("?" if not IP). */
const char *sockaddr_format(const struct sockaddr *sa, char *buf, size_t len);
/* Its port (host order), 0 if not IP. */
uint16_t sockaddr_port(const struct sockaddr *sa);
/* "ADDR#PORT", as dig and kdig write a server. */
const char *sockaddr_format_port(const struct sockaddr *sa, char *buf, size_t len);

#endif
