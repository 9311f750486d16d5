/*
 * Address prefix lists: who may do something (allow-transfer for
 * aggregate transfers).  IPv4 clients on dual-stack sockets (::ffff:a.b.c.d)
 * match IPv4 prefixes.
 */
#ifndef CR_ACL_H
#define CR_ACL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

struct acl_prefix {
	uint8_t family;                 /* AF_INET or AF_INET6 */
	uint8_t len;                    /* prefix length in bits */
	uint8_t addr[16];
};

/* "192.0.2.0/24", "::1", ...: false if not a prefix (host bits may be set). */
bool acl_prefix_parse(struct acl_prefix *p, const char *text);
bool acl_allows(const struct acl_prefix *acl, unsigned n, const struct sockaddr *client);

#endif
