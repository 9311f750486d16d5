/*
 * upsock.c: the UDP sockets a forwarding engine asks hops from, one per
 * query slot, each attempt from a fresh random port (RFC 5452).
 */
#ifndef INRPD_UPSOCK_H
#define INRPD_UPSOCK_H

#include <stdint.h>
#include <sys/socket.h>

struct upsock;

/* Sockets for nslots slots, at most max_open of them open at once. */
struct upsock *upsock_create(unsigned nslots, unsigned max_open);
void upsock_free(struct upsock *u);
/* The epoll set of every slot's socket: poll it for reading. */
int upsock_fd(const struct upsock *u);
/*
 * Connects slot's socket to sa; the kernel binds it to a random free
 * port of the ephemeral range.  Returns the socket, or -1 with errno
 * (EMFILE: max_open reached or the process's limit; ENFILE, ENOBUFS:
 * no socket to be had; EAGAIN: no free port).
 */
int upsock_connect(struct upsock *u, uint32_t slot, const struct sockaddr *sa, socklen_t len);
/* Ends slot's attempt: its port goes back, and nothing more reaches it. */
void upsock_release(struct upsock *u, uint32_t slot);
/* Slot's socket, connected or not; -1: none yet. */
int upsock_slot_fd(const struct upsock *u, uint32_t slot);
/* Up to max slots whose sockets have something to read (or an error). */
unsigned upsock_ready(struct upsock *u, uint32_t *slots, unsigned max);
/*
 * The owner's own descriptors in the same set (level-triggered, for
 * reading), so one epoll_wait serves both; token < UPSOCK_TOKENS.
 */
#define UPSOCK_TOKENS   (1u << 31)
int upsock_watch(struct upsock *u, int fd, uint32_t token);
/*
 * Waits up to timeout ms (-1: no limit) for either: the ready slots go to
 * slots (*nslots, at most UPSOCK_WAIT_MAX), the owner's tokens to tokens
 * (*ntokens).  Returns -1 with errno on failure (EINTR included).
 */
#define UPSOCK_WAIT_MAX 128
int upsock_wait(struct upsock *u, int timeout, uint32_t *slots, unsigned *nslots,
		uint32_t *tokens, unsigned *ntokens);

#endif
