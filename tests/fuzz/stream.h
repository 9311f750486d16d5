/*
 * The client side for fuzz targets of our stream servers (the control
 * socket, the transfer server): the server runs on a libuv loop in this
 * thread; the input is sent on a fresh connection, which is then
 * half-closed, and the replies are read until the server closes, with the
 * loop run in between.  Header-only, static: each target includes it once.
 */
#ifndef CR_FUZZ_STREAM_H
#define CR_FUZZ_STREAM_H

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/socket.h>
#include <uv.h>

typedef void (*stream_reply_fn)(void *arg, const uint8_t *data, size_t len);

static inline void stream_exchange(uv_loop_t *loop, const struct sockaddr *sa, socklen_t salen,
				   const uint8_t *data, size_t size, stream_reply_fn fn, void *arg)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		abort();
	while (connect(fd, sa, salen) < 0) {
		if (errno == EINPROGRESS)
			break;
		if (errno != EAGAIN && errno != EINTR)
			abort();
		uv_run(loop, UV_RUN_NOWAIT);    /* a full backlog: let the server accept */
	}
	size_t sent = 0;
	bool shut = false;
	for (;;) {
		uv_run(loop, UV_RUN_NOWAIT);
		if (sent < size) {
			ssize_t n = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
			if (n > 0)
				sent += (size_t)n;
			else if (errno != EAGAIN && errno != ENOTCONN && errno != EINTR)
				sent = size;    /* the server stopped reading and went */
		}
		if (sent == size && !shut)
			shut = shutdown(fd, SHUT_WR) == 0 || errno != ENOTCONN;
		uint8_t buf[65536];
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n > 0)
			fn(arg, buf, (size_t)n);
		else if (n == 0 || (errno != EAGAIN && errno != ENOTCONN && errno != EINTR))
			break;
	}
	close(fd);
	uv_run(loop, UV_RUN_NOWAIT);            /* the server sees the close */
}

#endif
