/*
 * The reference for scripts/bench inrp's hop latency: the least a hop can
 * do.  One process, one UDP socket, no parsing: a datagram from anyone
 * but the next node goes to the next node, and a datagram from the next
 * node goes back to whoever sent the last one.  The last node of a chain
 * (no next) echoes.  Same poll()-then-read loop as inrpd's workers.
 *
 *     udp_relay LISTEN_ADDR PORT [NEXT_ADDR NEXT_PORT]
 */
#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static int parse(const char *addr, const char *port, struct sockaddr_in *out)
{
	memset(out, 0, sizeof(*out));
	out->sin_family = AF_INET;
	out->sin_port = htons((unsigned short)atoi(port));
	return inet_pton(AF_INET, addr, &out->sin_addr) == 1 ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct sockaddr_in me, next, prev;
	int has_next = argc == 5;

	if ((argc != 3 && argc != 5) || parse(argv[1], argv[2], &me) < 0 ||
	    (has_next && parse(argv[3], argv[4], &next) < 0)) {
		fprintf(stderr, "usage: udp_relay LISTEN_ADDR PORT [NEXT_ADDR NEXT_PORT]\n");
		return 2;
	}
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&me, sizeof(me)) < 0) {
		perror("udp_relay");
		return 1;
	}
	memset(&prev, 0, sizeof(prev));
	for (;;) {
		unsigned char buf[4096];
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		struct pollfd p = { .fd = s, .events = POLLIN };
		if (poll(&p, 1, -1) < 0)
			continue;
		ssize_t n = recvfrom(s, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
		if (n <= 0)
			continue;
		if (!has_next) {
			buf[2] |= 0x80;         /* QR: a DNS client takes it as the answer */
			sendto(s, buf, (size_t)n, 0, (struct sockaddr *)&from, fl);
		} else if (from.sin_port == next.sin_port && from.sin_addr.s_addr == next.sin_addr.s_addr) {
			sendto(s, buf, (size_t)n, 0, (struct sockaddr *)&prev, sizeof(prev));
		} else {
			prev = from;
			sendto(s, buf, (size_t)n, 0, (struct sockaddr *)&next, sizeof(next));
		}
	}
}
