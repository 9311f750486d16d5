/*
 * The UDP sockets a forwarding engine asks hops from (RFC 5452: an
 * off-path spoofer must guess the port as well as the id).
 *
 * Every query slot has its own socket, made when the slot is first used
 * and kept.  Each attempt connects it to the hop asked; the socket has no
 * port then, so the kernel binds a random free one of the ephemeral range
 * (ip_local_port_range: 28,232 ports by default, 14.8 bits beside the id's
 * 16).  The attempt's end disconnects it, which gives the port back: a
 * late or forged answer then finds no socket.  While connected, the kernel
 * hands it only datagrams from the hop's address and port.
 *
 * Kept sockets rather than one per attempt: disconnecting and connecting
 * again costs a quarter of socket, connect, epoll_ctl and close (1.8 us of
 * CPU against 7.1 us here), and gives the same fresh port.  A shared pool
 * would need as many sockets as ports to give the same entropy.
 *
 * The sockets are in one epoll set, each with its slot, so the engine's
 * owner polls one descriptor whatever the number in flight.  Kept sockets
 * hold descriptors (not ports) up to the most queries ever in flight at
 * once, so their number is capped by the engine's share of the open-files
 * limit, leaving the rest to listeners, clients and the control socket.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "upsock.h"

struct upsock {
	int epfd;
	unsigned nslots;
	unsigned nopen, max_open;
	int *fd;                        /* per slot; -1: none yet */
	sa_family_t *family;
	bool *connected;
};

struct upsock *upsock_create(unsigned nslots, unsigned max_open)
{
	struct upsock *u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->nslots = nslots;
	u->max_open = max_open;
	u->epfd = epoll_create1(EPOLL_CLOEXEC);
	u->fd = malloc(nslots * sizeof(*u->fd));
	u->family = calloc(nslots, sizeof(*u->family));
	u->connected = calloc(nslots, sizeof(*u->connected));
	if (u->epfd < 0 || !u->fd || !u->family || !u->connected) {
		int saved = errno;
		upsock_free(u);
		errno = saved;
		return NULL;
	}
	for (unsigned i = 0; i < nslots; i++)
		u->fd[i] = -1;
	return u;
}

void upsock_free(struct upsock *u)
{
	if (!u)
		return;
	for (unsigned i = 0; u->fd && i < u->nslots; i++)
		if (u->fd[i] >= 0)
			close(u->fd[i]);
	if (u->epfd >= 0)
		close(u->epfd);
	free(u->fd);
	free(u->family);
	free(u->connected);
	free(u);
}

int upsock_fd(const struct upsock *u)
{
	return u->epfd;
}

int upsock_slot_fd(const struct upsock *u, uint32_t slot)
{
	return u->fd[slot];
}

static int open_socket(struct upsock *u, uint32_t slot, sa_family_t family)
{
	if (u->nopen >= u->max_open) {
		errno = EMFILE;                 /* the rest of the process needs its descriptors */
		return -1;
	}
	int fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (family == AF_INET6) {
		const int on = 1;
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = slot };
	if (epoll_ctl(u->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	u->fd[slot] = fd;
	u->family[slot] = family;
	u->nopen++;
	return fd;
}

int upsock_connect(struct upsock *u, uint32_t slot, const struct sockaddr *sa, socklen_t len)
{
	upsock_release(u, slot);
	if (u->fd[slot] >= 0 && u->family[slot] != sa->sa_family) {
		close(u->fd[slot]);             /* leaves the epoll set with it */
		u->fd[slot] = -1;
		u->nopen--;
	}
	int fd = u->fd[slot];
	if (fd < 0 && (fd = open_socket(u, slot, sa->sa_family)) < 0)
		return -1;
	if (connect(fd, sa, len) < 0)
		return -1;
	u->connected[slot] = true;
	return fd;
}

void upsock_release(struct upsock *u, uint32_t slot)
{
	if (!u->connected[slot])
		return;
	/* unbound again (the kernel keeps no port it picked itself) */
	const struct sockaddr unspec = { .sa_family = AF_UNSPEC };
	(void)connect(u->fd[slot], &unspec, sizeof(unspec));
	u->connected[slot] = false;
}

int upsock_watch(struct upsock *u, int fd, uint32_t token)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = UPSOCK_TOKENS | token };
	return epoll_ctl(u->epfd, EPOLL_CTL_ADD, fd, &ev);
}

int upsock_wait(struct upsock *u, int timeout, uint32_t *slots, unsigned *nslots,
		uint32_t *tokens, unsigned *ntokens)
{
	struct epoll_event ev[UPSOCK_WAIT_MAX];
	*nslots = *ntokens = 0;
	int n = epoll_wait(u->epfd, ev, UPSOCK_WAIT_MAX, timeout);
	for (int i = 0; i < n; i++) {
		uint32_t d = ev[i].data.u32;
		if (d & UPSOCK_TOKENS)
			tokens[(*ntokens)++] = d & ~UPSOCK_TOKENS;
		else
			slots[(*nslots)++] = d;
	}
	return n < 0 ? -1 : 0;
}

unsigned upsock_ready(struct upsock *u, uint32_t *slots, unsigned max)
{
	struct epoll_event ev[64];
	if (max > 64)
		max = 64;
	int n;
	do
		n = epoll_wait(u->epfd, ev, (int)max, 0);
	while (n < 0 && errno == EINTR);
	for (int i = 0; i < n; i++)
		slots[i] = ev[i].data.u32;
	return n < 0 ? 0 : (unsigned)n;
}
